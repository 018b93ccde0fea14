/*
 * planner.c - turn a built graph into memory: one block for every op result,
 * gradient and saved buffer, plus one scratch block. Runs once (at the first
 * forward or tg_graph_plan) and again only if nodes were added since.
 *
 * Views (TG_OP_VIEW) get no memory: their value and grad alias input 0's.
 */
#include <string.h>

#include "graph_impl.h"

#define ALIGN 64

static size_t aligned_bytes(const tg_tensor *t)
{
    size_t b = (size_t)t->numel * tg_dtype_size(t->dtype);
    return (b + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

void tg__plan_release(tg_graph *g)
{
    tg__free_aligned(g->block);
    tg__free_aligned(g->scratch);
    tg__free(g->reach);
    g->block = g->scratch = NULL;
    g->reach = NULL;
    g->block_bytes = g->scratch_bytes = 0;
    g->planned = g->ran_forward = false;
}

/* requires_grad flows forward from parameters and marked inputs. */
static void propagate_requires_grad(tg_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        if (n->kind != TG_NODE_OP) continue;
        bool any = false;
        for (int k = 0; k < n->n_in; k++) any |= n->in[k]->requires_grad;
        n->requires_grad = any && n->op->backward && tg_dtype_is_float(n->value.dtype);
        if (n->op->flags & TG_OP_VIEW) n->requires_grad = n->in[0]->requires_grad;
    }
}

/* Walk the nodes; with base == NULL only count bytes, else hand out memory. */
static size_t layout(tg_graph *g, unsigned char *base)
{
    size_t at = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        bool view = n->op && (n->op->flags & TG_OP_VIEW);
        if (n->kind == TG_NODE_OP) {
            if (view) {
                if (base) n->value.data = n->in[0]->value.data;
            } else {
                if (base) n->value.data = base + at;
                at += aligned_bytes(&n->value);
            }
        }
        if (n->requires_grad) {
            if (view) {
                if (base) n->grad.data = n->in[0]->grad.data;
            } else if (n->kind != TG_NODE_PARAM) {
                if (base) n->grad.data = base + at;
                at += aligned_bytes(&n->grad);
            }
        } else if (n->kind != TG_NODE_PARAM && base) {
            n->grad.data = NULL;
        }
        for (int b = 0; b < n->n_buf; b++) {
            if (base) n->buf[b].data = base + at;
            at += aligned_bytes(&n->buf[b]);
        }
    }
    return at;
}

tg_status tg_graph_plan(tg_graph *g)
{
    if (!g) return tg_set_error(TG_ERR_INVALID, "plan: graph is NULL");
    if (g->has_error) return tg_set_error(TG_ERR_STATE, "graph is in error: %s", g->error);
    tg__plan_release(g);
    propagate_requires_grad(g);
    size_t bytes = layout(g, NULL), scratch = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->scratch > scratch) scratch = g->nodes[i]->scratch;
    g->block = tg__malloc_aligned(bytes ? bytes : ALIGN);
    g->scratch = tg__malloc_aligned(scratch ? scratch : ALIGN);
    g->reach = tg__malloc(g->n_nodes ? (size_t)g->n_nodes : 1);
    if (!g->block || !g->scratch || !g->reach) {
        tg__plan_release(g);
        return tg_set_error(TG_ERR_NOMEM, "plan: out of memory (%zu bytes of buffers, %zu of "
                            "scratch)", bytes, scratch);
    }
    memset(g->block, 0, bytes);
    layout(g, g->block);
    g->block_bytes = bytes;
    g->scratch_bytes = scratch;
    g->planned = true;
    return TG_OK;
}

size_t tg_graph_planned_bytes(const tg_graph *g)
{
    return g && g->planned ? g->block_bytes + g->scratch_bytes : 0;
}
