/*
 * gradcheck.c - central differences against the graph's backward
 * (OPS.md section 18). See gradcheck.h for the method.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gradcheck.h"
#include "graph_impl.h"
#include "params.h"

/* Hash of every discrete decision in the graph: op kink hooks and the values
 * of integer/bool op results (e.g. topk indices). */
static uint64_t decisions(const tg_graph *g)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        if (n->kind != TG_NODE_OP) continue;
        if (n->op->kinks) h = (h ^ n->op->kinks(n)) * 1099511628211ull;
        if (!tg_dtype_is_float(n->value.dtype)) {
            const unsigned char *p = n->value.data;
            size_t bytes = (size_t)n->value.numel * tg_dtype_size(n->value.dtype);
            for (size_t k = 0; k < bytes; k++) h = (h ^ p[k]) * 1099511628211ull;
        }
    }
    return h;
}

/* L = sum(out * r) in double, after a forward with the RNG reset. */
static tg_status eval_loss(tg_graph *g, const tg_node *out, const tg_tensor *r,
                           const tg_rng *rng0, double *L, uint64_t *sig)
{
    g->rng = *rng0;
    tg_status st = tg_graph_forward(g);
    if (st) return st;
    double s = 0;
    for (int64_t i = 0; i < r->numel; i++)
        s += tg_tensor_get(&out->value, i) * tg_tensor_get(r, i);
    *L = s;
    *sig = decisions(g);
    return TG_OK;
}

static bool checked_node(const tg_node *n)
{
    return n->requires_grad && (n->kind == TG_NODE_PARAM || n->kind == TG_NODE_INPUT);
}

/* What each step of one gradcheck reads: the graph, its output, the options,
 * the random dy r, the RNG to reset before every forward and the unperturbed
 * forward's discrete decisions. */
typedef struct {
    tg_graph                *g;
    tg_node                 *out;
    const tg_gradcheck_opts *o;
    tg_tensor               *r;
    tg_rng                   rng0;
    uint64_t                 sig0;
    int                      tensor, tensors;   /* for the progress callback */
} gc_run;

/* analytical: one backward with dy = r; parameter grads are saved and restored */
static tg_status analytic_grads(const gc_run *G, tg_tensor **analytic, tg_tensor **saved)
{
    tg_graph *g = G->g;
    tg_status st;
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        if (!checked_node(n)) continue;
        analytic[i] = tg_tensor_new(g->dtype, n->value.rank, n->value.shape);
        if (!analytic[i]) return TG_ERR_NOMEM;
        if (n->kind == TG_NODE_PARAM) {
            saved[i] = tg_tensor_clone(&n->grad);
            if (!saved[i]) return TG_ERR_NOMEM;
            memset(n->grad.data, 0, (size_t)n->grad.numel * tg_dtype_size(n->grad.dtype));
        }
    }
    g->rng = G->rng0;
    if ((st = tg_graph_forward(g)) || (st = tg_graph_backward(g, G->out, G->r))) return st;
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        if (!analytic[i]) continue;
        tg_tensor_copy(analytic[i], &n->grad);
        if (saved[i]) tg_tensor_copy(&n->grad, saved[i]);
    }
    return TG_OK;
}

/* numerical, element by element: node i's central differences against
 * analytic[i] (every step-th element past max_per_tensor), summed up in *result */
static tg_status check_tensor(const gc_run *G, int i, tg_tensor *const *analytic,
                              tg_gradcheck_result *result)
{
    tg_graph *g = G->g;
    tg_node *out = G->out;
    const tg_tensor *r = G->r;
    const tg_gradcheck_opts o = *G->o;
    const tg_rng rng0 = G->rng0;
    const uint64_t sig0 = G->sig0;
    uint64_t sig_p, sig_m;
    tg_status st;
    tg_node *n = g->nodes[i];
    tg_gradcheck_result res = {.pass = true, .worst_index = -1};
    if (n->kind == TG_NODE_PARAM)
        snprintf(res.name, sizeof res.name, "%s", n->name);
    else
        snprintf(res.name, sizeof res.name, "input.%s", n->name);
    res.rank = n->value.rank;
    memcpy(res.shape, n->value.shape, sizeof res.shape);
    int64_t numel = n->value.numel, step = 1;
    if (o.max_per_tensor > 0 && numel > o.max_per_tensor)
        step = (numel + o.max_per_tensor - 1) / o.max_per_tensor;
    for (int64_t k = 0; k < numel; k += step) {
        if (o.progress)
            o.progress(o.progress_user, &(tg_gradcheck_progress){res.name, G->tensor, G->tensors,
                                                                 k / step, (numel + step - 1) / step});
        double v = tg_tensor_get(&n->value, k), Lp, Lm;
        tg_tensor_set(&n->value, k, v + o.eps);
        st = eval_loss(g, out, r, &rng0, &Lp, &sig_p);
        tg_tensor_set(&n->value, k, v - o.eps);
        if (!st) st = eval_loss(g, out, r, &rng0, &Lm, &sig_m);
        tg_tensor_set(&n->value, k, v);
        if (st) return st;
        if (sig_p != sig0 || sig_m != sig0) {
            res.skipped++;
            continue;
        }
        /* the perturbed value as stored (float32 rounding of x +- eps) */
        double num = (Lp - Lm) / (2 * o.eps), ana = tg_tensor_get(analytic[i], k);
        double err = fabs(ana - num);
        double ratio = err / (o.atol + o.rtol * fabs(num));
        double denom = fmax(fmax(fabs(ana), fabs(num)), o.atol / o.rtol);
        res.checked++;
        if (isnan(err)) ratio = INFINITY;
        if (err / denom > res.max_rel_err || isnan(err)) res.max_rel_err = isnan(err) ? INFINITY : err / denom;
        if (err > res.max_abs_err || isnan(err)) res.max_abs_err = isnan(err) ? INFINITY : err;
        if (ratio > res.worst_ratio || res.worst_index < 0) {
            res.worst_ratio = ratio;
            res.worst_index = k;
            res.worst_analytical = ana;
            res.worst_numerical = num;
        }
    }
    res.pass = res.worst_ratio <= 1.0;
    *result = res;
    return TG_OK;
}

tg_status tg_gradcheck(tg_graph *g, tg_node *out, const tg_gradcheck_opts *opts,
                       tg_gradcheck_result *results, int max_results, int *n_results,
                       bool *all_pass)
{
    TG__NONNULL(n_results, TG_ERR_INVALID);
    TG__NONNULL(all_pass, TG_ERR_INVALID);
    if (!results && max_results > 0)
        return tg_set_error(TG_ERR_INVALID, "tg_gradcheck: results is NULL with max_results %d",
                            max_results);
    tg_gradcheck_opts o = opts ? *opts : (tg_gradcheck_opts){0};
    bool f64 = g && g->dtype == TG_F64;
    if (o.eps <= 0) o.eps = f64 ? 1e-6 : 3e-3;
    if (o.atol <= 0) o.atol = f64 ? 1e-5 : 1e-3;
    if (o.rtol <= 0) o.rtol = f64 ? 1e-3 : 1e-2;
    *n_results = 0;
    *all_pass = true;
    if (!g || !out || out->graph != g)
        return tg_set_error(TG_ERR_INVALID, "gradcheck: graph or output is NULL");

    tg_rng rng0 = g->rng;
    tg_status st = tg_graph_plan(g);
    if (st) return st;
    tg_tensor *r = tg_tensor_new(g->dtype, out->value.rank, out->value.shape);
    tg_tensor **analytic = tg__calloc((size_t)g->n_nodes, sizeof *analytic);
    tg_tensor **saved = tg__calloc((size_t)g->n_nodes, sizeof *saved);
    if (!r || !analytic || !saved) {
        st = tg_set_error(TG_ERR_NOMEM, "gradcheck: out of memory");
        goto done;
    }
    tg_rng rr;
    tg_rng_seed(&rr, o.seed ^ 0x6772616463686bull);
    tg_init_normal(r, 0, 1, &rr);

    gc_run G = {g, out, &o, r, rng0, 0, 0, 0};
    if ((st = analytic_grads(&G, analytic, saved))) goto done;
    for (int i = 0; i < g->n_nodes; i++) G.tensors += analytic[i] != NULL;
    double L0;
    if ((st = eval_loss(g, out, r, &rng0, &L0, &G.sig0))) goto done;

    for (int i = 0; i < g->n_nodes; i++) {
        if (!analytic[i]) continue;
        tg_gradcheck_result res;
        if ((st = check_tensor(&G, i, analytic, &res))) goto done;
        G.tensor++;
        *all_pass &= res.pass;
        if (*n_results < max_results) results[*n_results] = res;
        (*n_results)++;
    }
    /* leave the graph holding the unperturbed forward */
    g->rng = rng0;
    st = tg_graph_forward(g);
    g->rng = rng0;
done:
    if (st == TG_ERR_NOMEM && !*tg_last_error()) tg_set_error(st, "gradcheck: out of memory");
    if (analytic)
        for (int i = 0; i < g->n_nodes; i++) tg_tensor_free(analytic[i]);
    if (saved)
        for (int i = 0; i < g->n_nodes; i++) tg_tensor_free(saved[i]);
    tg__free(analytic);
    tg__free(saved);
    tg_tensor_free(r);
    if (*n_results > max_results) *n_results = max_results;
    return st;
}
