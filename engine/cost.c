/*
 * cost.c - per-node and per-scope cost (see cost.h): FLOPs from each op's
 * descriptor, bytes from the node's tensors, times from the profile that
 * forward.c keeps per node.
 */
#include <math.h>

#include "cost.h"
#include "graph_impl.h"

double tg_node_flops(const tg_node *n)
{
    TG__NONNULL(n, NAN);
    if (n->kind != TG_NODE_OP || tg__is_view(n)) return 0;
    return n->op->flops ? n->op->flops(n) : (double)n->value.numel;
}

static double tensor_bytes(const tg_tensor *t)
{
    return (double)t->numel * (double)tg_dtype_size(t->dtype);
}

tg_status tg_node_cost(const tg_node *n, tg_cost *out)
{
    TG__NONNULL(n, TG_ERR_INVALID);
    TG__NONNULL(out, TG_ERR_INVALID);
    *out = (tg_cost){0};
    if (n->kind != TG_NODE_OP) return TG_OK;
    const tg_graph *g = n->graph;
    out->ops = 1;
    out->flops = tg_node_flops(n);
    if (!tg__is_view(n)) out->bytes = tensor_bytes(&n->value);
    for (int b = 0; b < n->n_buf; b++) out->bytes += tensor_bytes(&n->buf[b]);
    if (g->prof && n->id < g->prof_cap) {
        out->forward_s = g->prof[2 * n->id];
        out->backward_s = g->prof[2 * n->id + 1];
    }
    return TG_OK;
}

/* Is scope s at or below scope top? */
static bool within(const tg_graph *g, int s, int top)
{
    while (s > top) s = g->scopes[s].parent;
    return s == top;
}

tg_status tg_graph_scope_cost(const tg_graph *g, int scope, tg_cost *out)
{
    TG__NONNULL(g, TG_ERR_INVALID);
    TG__NONNULL(out, TG_ERR_INVALID);
    *out = (tg_cost){0};
    if (scope < 0 || scope >= g->n_scopes)
        return tg_set_error(TG_ERR_INVALID, "tg_graph_scope_cost: scope %d out of range [0, %d)",
                            scope, g->n_scopes);
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        tg_cost c;
        if (n->kind != TG_NODE_OP || !within(g, n->scope, scope)) continue;
        tg_node_cost(n, &c);
        out->forward_s += c.forward_s;
        out->backward_s += c.backward_s;
        out->flops += c.flops;
        out->bytes += c.bytes;
        out->ops += c.ops;
    }
    return TG_OK;
}
