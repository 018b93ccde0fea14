/*
 * cost_cli.c - profiled training steps, module scopes and cost formatting for
 * `tgraph summary` and `tgraph dot --profile` (see cost_cli.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cost_cli.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One forward and backward; the seconds of each added to f and b. */
static tg_status step(tg_cli_layer *c, const tg_tensor *dy, double *f, double *b)
{
    double t0 = now_s();
    tg_status st = tg_graph_forward(c->g);
    double t1 = now_s();
    if (!st) st = tg_graph_backward(c->g, c->out.y, dy);
    *f += t1 - t0;
    *b += now_s() - t1;
    tg_params_zero_grad(c->ps);
    return st;
}

int tg_cli_train_graph(tg_cli_layer *c, const char *cmd, tg_rng *rng)
{
    tg_graph_set_training(c->g, true);
    tg_graph_set_share_values(c->g, true);   /* as tgraph train: one backward per forward */
    bool no_params = tg_params_count(c->ps) == 0;
    for (int i = 0; i < c->n_in; i++) {
        const tg_layer_input *spec = tg_layer_input_at(c->layer, i);
        if (tg_cli_random_input(c->layer, i, c->in[i], rng) ||
            (no_params && spec->differentiable && tg_node_set_requires_grad(c->in[i], true)))
            return tg_cli_fail(cmd, "input %s: %s", spec->name, tg_last_error());
    }
    return 0;
}

int tg_cli_profile(tg_cli_layer *c, const char *cmd, int steps, tg_cli_steps *out)
{
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    if (tg_cli_train_graph(c, cmd, &rng)) return 2;
    const tg_tensor *y = tg_node_value(c->out.y);
    tg_tensor *dy = tg_tensor_new(TG_F32, y->rank, y->shape);
    if (!dy) return tg_cli_fail(cmd, "%s", tg_last_error());
    for (int64_t k = 0; k < dy->numel; k++) tg_tensor_set(dy, k, tg_rng_normal(&rng));
    double f = 0, b = 0;
    tg_status st = step(c, dy, &f, &b);   /* warm-up: plans the memory */
    tg_graph_set_profile(c->g, true);
    f = b = 0;
    for (int s = 0; s < steps && !st; s++) st = step(c, dy, &f, &b);
    tg_tensor_free(dy);
    if (st) return tg_cli_fail(cmd, "profiling: %s", tg_last_error());
    *out = (tg_cli_steps){.steps = steps, .forward_s = f / steps, .backward_s = b / steps,
                          .step_s = (f + b) / steps};
    return 0;
}

int tg_cli_base_scope(const tg_graph *g)
{
    int base = 0, n = tg_graph_scope_count(g);
    for (;;) {
        int child = -1, n_children = 0, own_ops = 0;
        for (int k = base + 1; k < n; k++)
            if (tg_graph_scope_parent(g, k) == base) child = k, n_children++;
        for (int i = 0; i < tg_graph_node_count(g); i++) {
            const tg_node *nd = tg_graph_node(g, i);
            own_ops += nd->scope == base && nd->kind == TG_NODE_OP;
        }
        if (own_ops || n_children != 1) return base;
        base = child;
    }
}

bool tg_cli_scope_within(const tg_graph *g, int s, int top)
{
    while (s > top) s = tg_graph_scope_parent(g, s);
    return s == top;
}

int64_t tg_cli_scope_params(const tg_graph *g, int scope)
{
    int64_t n = 0;
    for (int i = 0; i < tg_graph_node_count(g); i++) {
        const tg_node *nd = tg_graph_node(g, i);
        if (nd->kind == TG_NODE_PARAM && !(nd->param && nd->param->buffer) &&
            tg_cli_scope_within(g, nd->scope, scope))   /* buffers are no parameters */
            n += nd->value.numel;
    }
    return n;
}

static void fmt_unit(double v, double base, const char *const *units, char *buf, size_t len)
{
    int u = 0;
    while (fabs(v) >= base && units[u + 1]) v /= base, u++;
    if (u == 0) snprintf(buf, len, "%.0f %s", v, units[0]);
    else snprintf(buf, len, "%.3g %s", v, units[u]);
}

void tg_cli_fmt_flops(double flops, char *buf, size_t len)
{
    static const char *const units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", NULL};
    fmt_unit(flops, 1000, units, buf, len);
}

void tg_cli_fmt_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB", NULL};
    fmt_unit(bytes, 1024, units, buf, len);
}

void tg_cli_heat_colour(double t, char buf[16])
{
    /* YlOrRd stops (the last one's blue lowered from 38 to 30): no channel
     * rises from one stop to the next, so none rises with t after rounding */
    static const int stop[6][3] = {{255, 255, 204}, {254, 217, 118}, {254, 178, 76},
                                   {253, 141, 60},  {240, 59, 32},   {189, 0, 30}};
    if (!(t > 0)) t = 0;
    if (t > 1) t = 1;
    double x = t * 5;
    int k = x >= 5 ? 4 : (int)x;
    double w = x - k;
    int rgb[3];
    for (int i = 0; i < 3; i++)
        rgb[i] = (int)lround((1 - w) * stop[k][i] + w * stop[k + 1][i]);
    snprintf(buf, 16, "#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

/* ---- tgraph dot --profile ---- */

/* The hook tg_graph_dot calls for each op node and module. */
static void dot_decorate(void *ctx, int node, int scope, tg_dot_decor *d)
{
    const tg_cli_dot_cost *dc = ctx;
    const tg_cost *c = node >= 0 ? &dc->node[node] : &dc->scope[scope];
    double t = c->forward_s + c->backward_s, share = dc->st.step_s > 0 ? t / dc->st.step_s : 0;
    char fl[32], by[32], pct[48] = "";
    tg_cli_fmt_flops(c->flops, fl, sizeof fl);
    tg_cli_fmt_bytes(c->bytes, by, sizeof by);
    if (node < 0) snprintf(pct, sizeof pct, " = %.1f%%", 100 * share);
    snprintf(d->lines, sizeof d->lines, "%.3g ms%s (fwd %.3g + bwd %.3g)\n%s, %s kept", 1e3 * t,
             pct, 1e3 * c->forward_s, 1e3 * c->backward_s, fl, by);
    /* the layer's own frame (and any above it) holds the whole step: left unfilled,
     * so its modules and ops stand out */
    if (node < 0 && tg_cli_scope_within(dc->g, dc->base, scope)) return;
    tg_cli_heat_colour(sqrt(share), d->fill);
}

/* The title: `title`, then the three modules (below the base scope) that
 * took the most time, with their shares of the step. */
static int dot_title(tg_cli_dot_cost *dc, const char *title)
{
    const tg_graph *g = dc->g;
    int base = dc->base, top[3] = {-1, -1, -1};
    for (int s = base + 1; s < tg_graph_scope_count(g); s++) {
        if (tg_graph_scope_parent(g, s) != base || dc->scope[s].ops == 0) continue;
        double t = dc->scope[s].forward_s + dc->scope[s].backward_s;
        for (int k = 0; k < 3; k++) {
            const tg_cost *o = top[k] >= 0 ? &dc->scope[top[k]] : NULL;
            if (o && o->forward_s + o->backward_s >= t) continue;
            memmove(top + k + 1, top + k, (size_t)(2 - k) * sizeof *top);
            top[k] = s;
            break;
        }
    }
    size_t len = strlen(title) + 400;
    if (!(dc->title = malloc(len))) return tg_cli_fail("dot", "out of memory");
    int at = snprintf(dc->title, len, "%s\nprofiled: %.3g ms a training step", title,
                      1e3 * dc->st.step_s);
    for (int k = 0; k < 3 && top[k] >= 0 && at < (int)len; k++) {
        const tg_cost *c = &dc->scope[top[k]];
        at += snprintf(dc->title + at, len - (size_t)at, "%s %.40s %.1f%%", k ? "," : "; top:",
                       tg_graph_scope_name(g, top[k]),
                       100 * (c->forward_s + c->backward_s) / dc->st.step_s);
    }
    return 0;
}

int tg_cli_dot_cost_init(tg_cli_dot_cost *dc, tg_cli_layer *c, const char *cmd, int steps,
                         tg_dot_opts *o, const char *title)
{
    memset(dc, 0, sizeof *dc);
    dc->g = c->g;
    int rc = tg_cli_profile(c, cmd, steps, &dc->st);
    if (rc) return rc;
    int nn = tg_graph_node_count(c->g), ns = tg_graph_scope_count(c->g);
    dc->node = calloc((size_t)nn + 1, sizeof *dc->node);
    dc->scope = calloc((size_t)ns + 1, sizeof *dc->scope);
    if (!dc->node || !dc->scope) return tg_cli_fail(cmd, "out of memory");
    dc->base = tg_cli_base_scope(c->g);
    for (int i = 0; i < nn; i++) tg_node_cost(tg_graph_node(c->g, i), &dc->node[i]);
    for (int s = 0; s < ns; s++) tg_graph_scope_cost(c->g, s, &dc->scope[s]);
    for (int i = 0; i < nn + ns; i++) {   /* per step */
        tg_cost *x = i < nn ? &dc->node[i] : &dc->scope[i - nn];
        x->forward_s /= steps;
        x->backward_s /= steps;
    }
    if (dot_title(dc, title)) return 2;
    snprintf(dc->legend, sizeof dc->legend,
             "colour: share of the training step's time (forward + backward)\n"
             "pale yellow 0%% to dark red 100%%, square-root scale\n"
             "step: %.3g ms = forward %.3g + backward %.3g ms (mean of %d after a warm-up)\n"
             "per node and module: ms per step (fwd + bwd), forward FLOPs\n"
             "(2 per multiply-add), bytes kept (value + saved buffers)",
             1e3 * dc->st.step_s, 1e3 * dc->st.forward_s, 1e3 * dc->st.backward_s, steps);
    o->decorate = dot_decorate;
    o->decorate_ctx = dc;
    o->legend = dc->legend;
    o->title = dc->title;
    return 0;
}

void tg_cli_dot_cost_free(tg_cli_dot_cost *dc)
{
    free(dc->node);
    free(dc->scope);
    free(dc->title);
    memset(dc, 0, sizeof *dc);
}
