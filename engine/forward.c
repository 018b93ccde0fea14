/*
 * forward.c - the forward pass: every op's forward in creation order, with
 * the optional finiteness check after each; what both passes share (is the
 * graph ready, where a node sits, the message when a pass fails); and the
 * per-op profile both passes add to. The reverse pass is in backward.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "graph_impl.h"

/* ------------------------------------------------------------- profiling */

void tg_graph_set_profile(tg_graph *g, bool on)
{
    if (!g) return;
    tg__free(g->prof);
    g->prof = NULL;
    g->prof_cap = 0;
    if (!on) return;
    g->prof = tg__calloc(2 * (size_t)g->n_nodes + 2, sizeof *g->prof);
    if (g->prof) g->prof_cap = g->n_nodes;   /* out of memory: profiling stays off */
}

double tg__prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tg__prof_add(tg_node *n, int pass, double t0)
{
    if (n->id < n->graph->prof_cap) n->graph->prof[2 * n->id + pass] += tg__prof_now() - t0;
}

/* Does an op node before i have this op's name? */
static bool name_seen(const tg_graph *g, int i)
{
    for (int j = 0; j < i; j++) {
        const tg_node *m = g->nodes[j];
        if (m->kind == TG_NODE_OP && !tg__is_view(m) && !strcmp(m->op->name, g->nodes[i]->op->name))
            return true;
    }
    return false;
}

int tg_graph_profile(const tg_graph *g, tg_op_time *out, int max)
{
    int count = 0;
    TG__NONNULL(g, 0);
    if (!out && max > 0) {
        tg_set_error(TG_ERR_INVALID, "tg_graph_profile: out is NULL with max %d", max);
        return 0;
    }
    if (max < 0) max = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        if (n->kind != TG_NODE_OP || tg__is_view(n)) continue;
        int stored = count < max ? count : max, k = 0;
        while (k < stored && strcmp(out[k].op, n->op->name)) k++;
        if (k == stored) {   /* not among the stored names */
            if (count < max) {
                out[count] = (tg_op_time){n->op->name, 0, 0, 0};
            } else {
                if (!name_seen(g, i)) count++;   /* a name beyond max: counted only */
                continue;
            }
            count++;
        }
        out[k].nodes++;
        if (i < g->prof_cap) {
            out[k].forward_s += g->prof[2 * i];
            out[k].backward_s += g->prof[2 * i + 1];
        }
    }
    return count;
}

/* ------------------------------------------------------------------- run */

/* Where node n sits, for messages: "node 12 (softmax dim=-1) in time_attention". */
void tg__node_where(const tg_node *n, char *buf, size_t len)
{
    char attr[160] = "";
    const tg_graph *g = n->graph;
    if (n->op && n->op->describe) n->op->describe(n, attr, sizeof attr);
    const char *path = g->scopes[n->scope].path;
    snprintf(buf, len, "node %d (%s%s%s)%s%s", n->id, n->name, *attr ? " " : "", attr,
             *path ? " in " : "", path);
}

/* Index of the first non-finite element of a float tensor, or -1. */
static int64_t first_non_finite(const tg_tensor *t)
{
    if (t->dtype == TG_F32) {
        const float *x = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            if (!isfinite(x[i])) return i;
    } else if (t->dtype == TG_F64) {
        const double *x = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            if (!isfinite(x[i])) return i;
    }
    return -1;
}

static tg_status check_finite(const tg_node *n)
{
    int64_t at = first_non_finite(&n->value);
    if (at < 0) return TG_OK;
    char where[400], sh[160];
    tg__node_where(n, where, sizeof where);
    double v = tg_tensor_get(&n->value, at);
    return tg_set_error(TG_ERR_NUMERIC, "%s produced %s at element %lld of shape %s", where,
                        isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), (long long)at,
                        tg_shape_str(n->value.rank, n->value.shape, sh, sizeof sh));
}

tg_status tg__run_failed(const tg_node *n, const char *pass, tg_status st)
{
    char where[400], msg[1024];
    tg__node_where(n, where, sizeof where);
    snprintf(msg, sizeof msg, "%s", tg_last_error());
    return tg_set_error(st, "%s of %s: %s", pass, where, msg);
}

tg_status tg__graph_ready(tg_graph *g)
{
    if (!g) return tg_set_error(TG_ERR_INVALID, "graph is NULL");
    if (g->has_error) return tg_set_error(TG_ERR_STATE, "graph is in error: %s", g->error);
    return g->planned ? TG_OK : tg_graph_plan(g);
}

tg_status tg_graph_forward(tg_graph *g)
{
    tg_status st = tg__graph_ready(g);
    if (st) return st;
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        if (n->kind != TG_NODE_OP || (n->op->flags & TG_OP_VIEW)) continue;
        double t0 = g->prof ? tg__prof_now() : 0;
        st = n->op->forward(n);
        if (g->prof) tg__prof_add(n, 0, t0);
        if (st) return tg__run_failed(n, "forward", st);
        if (g->check_finite && (st = check_finite(n))) return st;
    }
    g->ran_forward = true;
    return TG_OK;
}
