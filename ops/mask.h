/*
 * mask.h - masked_fill (Tensor.masked_fill, out of place; OPS.md section 13)
 * and the causal mask attention uses (TriangularCausalMask; LAYERS.md 1).
 */
#ifndef TG_MASK_H
#define TG_MASK_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = where(mask, value, x).
 *
 * x: float, the graph's dtype. mask: TG_BOOL only (PyTorch 1.13 silently
 * accepted a float mask and filled nothing; tgraph rejects it). x and mask
 * broadcast together and the result takes the broadcast shape, which can be
 * larger than x ((2,3) with a (4,2,3) mask gives (4,2,3)). value may be any
 * double, -inf included (masked_fill(mask, -inf) before softmax; a fully
 * masked row then gives NaN there, as in PyTorch).
 * Gradient: dx = sum_to(dy with the masked positions 0, x.shape); the mask
 * takes none.
 * Errors (graph error, NULL): x not of the graph's float dtype; mask not bool
 * ("masked_fill only supports boolean masks, but got mask with dtype
 * float32"); shapes not broadcastable ("The size of tensor a (3) must match
 * the size of tensor b (4) at non-singleton dimension 1"). */
tg_node *tg_masked_fill(tg_graph *g, tg_node *x, tg_node *mask, double value);

/* The same with the value taken from a 0-d float node (the graph's dtype),
 * which receives the gradient sum(dy over the masked positions of the result).
 * Errors as above, and value of rank > 0: "masked_fill only supports a
 * 0-dimensional value tensor, but got tensor with 1 dimension(s)". */
tg_node *tg_masked_fill_tensor(tg_graph *g, tg_node *x, tg_node *mask, tg_node *value);

/* TriangularCausalMask: a bool constant [B, 1, L, L], true where s > l
 * (torch.triu(ones(L, L), diagonal=1)), i.e. key positions after the query.
 * Use with masked_fill(scores [B, H, L, S=L], mask, -inf): it broadcasts over
 * heads. Errors: B or L negative. */
tg_node *tg_causal_mask(tg_graph *g, int64_t B, int64_t L);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__mask_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(mask)
#endif
