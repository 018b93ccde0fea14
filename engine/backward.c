/*
 * backward.c - the reverse pass: gradients zeroed (or set by their first
 * writer, TG_OP_BWD_FRESH), values the plan recomputes made again before the
 * backward that reads them (TG_OP_RECOMPUTE), then every op's backward in
 * reverse creation order.
 */
#include <string.h>

#include "graph_impl.h"

bool tg_grad_fresh(const tg_node *n, int k)
{
    TG__NONNULL(n, false);
    const tg_graph *g = n->graph;
    return g->fresh && k >= 0 && k < n->n_in && g->fresh[tg__root_of(n->in[k])->id];
}

/* Point r's value and its views' (which alias it) at data. */
static void set_group_data(tg_graph *g, tg_node *r, void *data)
{
    r->value.data = data;
    for (int j = r->id + 1; j < g->n_nodes; j++)
        if (tg__is_view(g->nodes[j]) && tg__root_of(g->nodes[j]) == r)
            g->nodes[j]->value.data = data;
}

/* Make n's inputs that the plan recomputes (TG_OP_RECOMPUTE) again, once per
 * pass, in their backward buffers, each after the recomputed values it reads
 * in turn (a chain; the depth is bounded by the graph's). */
static tg_status recompute_into(tg_graph *g, tg_node *n)
{
    for (int k = 0; k < n->n_in; k++) {
        tg_node *r = tg__root_of(n->in[k]);
        if (!g->remat[r->id] || g->remat_done[r->id]) continue;
        tg_status st = recompute_into(g, r);
        if (st) return st;
        g->remat_fwd[r->id] = r->value.data;
        set_group_data(g, r, g->remat[r->id]);
        g->remat_done[r->id] = 1;
        if ((st = r->op->forward(r))) return tg__run_failed(r, "forward (recomputed for backward)", st);
    }
    return TG_OK;
}

/* Before n's backward: the values it reads that the plan recomputes. */
static tg_status recompute_inputs(tg_node *n)
{
    return n->op->flags & TG_OP_BWD_NO_INPUTS ? TG_OK : recompute_into(n->graph, n);
}

/* After a backward pass: recomputed values point at the forward's buffers again. */
static void recompute_restore(tg_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        if (!g->remat_done[i]) continue;
        set_group_data(g, g->nodes[i], g->remat_fwd[i]);
        g->remat_done[i] = 0;
    }
}

tg_status tg_graph_backward(tg_graph *g, tg_node *out, const tg_tensor *dy)
{
    tg_status st = tg__graph_ready(g);
    if (st) return st;
    if (!out || out->graph != g)
        return tg_set_error(TG_ERR_INVALID, "backward: output node is NULL or from another graph");
    if (!g->grad_enabled)
        return tg_set_error(TG_ERR_STATE, "backward: gradients are disabled on this graph");
    if (!g->ran_forward) return tg_set_error(TG_ERR_STATE, "backward: run forward first");
    if (!out->requires_grad)
        return tg_set_error(TG_ERR_INVALID,
                            "backward: node %d (%s) does not depend on any parameter or "
                            "requires-grad input", out->id, out->name);
    if (!dy && out->value.numel != 1)
        return tg_set_error(TG_ERR_SHAPE,
                            "backward: a gradient can be implied only for an output with one "
                            "element; node %d has %lld (pass dy)", out->id,
                            (long long)out->value.numel);
    if (dy && (st = tg_tensor_check(dy, "backward: dy"))) return st;
    if (dy && !tg_tensor_same_shape(dy, &out->value)) {
        char a[160], b[160];
        return tg_set_error(TG_ERR_SHAPE, "backward: dy has shape %s but the output has %s",
                            tg_shape_str(dy->rank, dy->shape, a, sizeof a),
                            tg_shape_str(out->value.rank, out->value.shape, b, sizeof b));
    }
    if (dy && !tg_dtype_is_float(dy->dtype))
        return tg_set_error(TG_ERR_DTYPE, "backward: dy must be float, got %s",
                            tg_dtype_name(dy->dtype));

    /* mark what out depends on */
    memset(g->reach, 0, (size_t)g->n_nodes);
    g->reach[out->id] = 1;
    for (int i = out->id; i >= 0; i--) {
        tg_node *n = g->nodes[i];
        if (!g->reach[i]) continue;
        for (int k = 0; k < n->n_in; k++) g->reach[n->in[k]->id] = 1;
    }
    /* Gradient buffers of op nodes share memory by lifetime, so each is zeroed
     * just before its first writer (the consumer whose backward runs first);
     * input leaves' own buffers are zeroed now; parameters accumulate. */
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        g->first_writer[i] = -1;
        if (n->kind == TG_NODE_INPUT && n->requires_grad)
            memset(n->grad.data, 0, (size_t)n->grad.numel * tg_dtype_size(n->grad.dtype));
    }
    /* A node whose every consumer has no backward (detach) or no gradient of its
     * own gets none: its first_writer stays -1 and its backward is skipped (the
     * consumers come first in this reverse walk, so that is known at n). */
    const tg_node *oroot = tg__root_of(out);
    for (int i = out->id; i >= 0; i--) {
        tg_node *n = g->nodes[i];
        if (!g->reach[i] || !n->requires_grad || n->kind != TG_NODE_OP || tg__is_view(n)) continue;
        if (n != oroot && g->first_writer[n->id] == -1) continue;
        for (int k = 0; k < n->n_in; k++) {
            const tg_node *r = tg__root_of(n->in[k]);
            if (r->requires_grad && r->kind == TG_NODE_OP && g->first_writer[r->id] == -1)
                g->first_writer[r->id] = i;
        }
    }
    /* seed: grad(out) = 0 + dy (or 1) for an op's gradient (whose buffer holds
     * stale data); a leaf's, zeroed above, gets += (the same bits). Same-dtype
     * dy in a plain loop (a float sum rounded through double is the float sum). */
    const bool set = oroot->kind == TG_NODE_OP;
    if (dy && dy->dtype == out->grad.dtype && dy->dtype == TG_F32) {
        float *gd = out->grad.data;
        const float *dd = dy->data;
        for (int64_t i = 0; i < out->grad.numel; i++) gd[i] = (set ? 0 : gd[i]) + dd[i];
    } else if (dy && dy->dtype == out->grad.dtype && dy->dtype == TG_F64) {
        double *gd = out->grad.data;
        const double *dd = dy->data;
        for (int64_t i = 0; i < out->grad.numel; i++) gd[i] = (set ? 0 : gd[i]) + dd[i];
    } else for (int64_t i = 0; i < out->grad.numel; i++) {
        double add = dy ? tg_tensor_get(dy, i) : 1.0;
        tg_tensor_set(&out->grad, i, (set ? 0 : tg_tensor_get(&out->grad, i)) + add);
    }
    for (int i = out->id; i >= 0; i--) {
        tg_node *n = g->nodes[i];
        if (!g->reach[i] || !n->requires_grad || n->kind != TG_NODE_OP || tg__is_view(n)) continue;
        /* no consumer writes n's gradient (see above): it is zero, and its buffer
         * holds stale data, so n adds nothing */
        if (n != oroot && g->first_writer[n->id] == -1) continue;
        for (int k = 0; k < n->n_in; k++) {
            tg_node *r = tg__root_of(n->in[k]);
            if (r->requires_grad && r->kind == TG_NODE_OP && g->first_writer[r->id] == i &&
                r != oroot) {
                /* an op that can set the gradient does so when only this input is r */
                bool once = n->op->flags & TG_OP_BWD_FRESH;
                for (int k2 = 0; once && k2 < n->n_in; k2++)
                    once = k2 == k || tg__root_of(n->in[k2]) != r;
                if (once)
                    g->fresh[r->id] = 1;
                else
                    memset(r->grad.data, 0, (size_t)r->grad.numel * tg_dtype_size(r->grad.dtype));
                g->first_writer[r->id] = -2;   /* zeroed once, even if n uses it twice */
            }
        }
        double t0 = g->prof ? tg__prof_now() : 0;
        if ((st = recompute_inputs(n))) break;
        st = n->op->backward(n);
        if (g->prof) tg__prof_add(n, 1, t0);
        for (int k = 0; k < n->n_in; k++) g->fresh[tg__root_of(n->in[k])->id] = 0;
        if (st) {
            st = tg__run_failed(n, "backward", st);
            break;
        }
    }
    recompute_restore(g);
    return st;
}
