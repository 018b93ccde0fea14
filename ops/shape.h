/*
 * shape.h - reshape (a view, no copy), permute/transpose, and detach.
 */
#ifndef TG_SHAPE_H
#define TG_SHAPE_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same elements with a new shape (torch.reshape on a contiguous tensor).
 * One dim may be -1 (inferred). A view: no copy forward or backward. Any dtype. */
tg_node *tg_reshape(tg_graph *g, tg_node *x, int rank, const int64_t *shape);

/* Dims reordered: result dim i is input dim perm[i] (torch.permute); negative
 * entries count from the end. Copies. Any dtype; gradient for floats. */
tg_node *tg_permute(tg_graph *g, tg_node *x, const int *perm);

/* Swap two dims (torch.transpose). */
tg_node *tg_transpose(tg_graph *g, tg_node *x, int dim0, int dim1);
/* x's values with no gradient flowing back (torch's x.detach()): a copy whose
 * node requires no gradient, so the backward pass stops there (TSL's
 * instance normalisation subtracts a detached mean). Any dtype. */
tg_node *tg_detach(tg_graph *g, tg_node *x);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__shape_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(shape)
#endif
