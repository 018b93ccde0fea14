/*
 * scatter.h - gather, scatter (tensor or scalar source) and scatter_add
 * along one dim (torch.gather, Tensor.scatter, Tensor.scatter_add; OPS.md
 * section 7). All out of place: the result is a new node.
 *
 * Shapes (PyTorch's rules, no broadcasting). x (self), index and src have the
 * same rank (a 0-d tensor counts as shape [1]); index is int64.
 * - gather:  index.size(d) <= x.size(d) for d != dim (index.size(dim) is
 *   free); result shape = index.shape;
 *   out[p] = x[p with p[dim] := index[p]].
 * - scatter / scatter_add: index.size(d) <= src.size(d) for every d and
 *   index.size(d) <= x.size(d) for d != dim; result shape = x.shape;
 *   out = x, then for every position p of index
 *   out[p with p[dim] := index[p]] = src[p]   (scatter_add: += src[p]).
 *   src is read by coordinates in index's box, not as a flat prefix (index
 *   [1, 4] with src [2, 5] reads src[0, 0..3]).
 * - An empty index skips the rank and size checks (as PyTorch): gather gives
 *   an empty result of index's shape, scatter returns x unchanged.
 * Index values must lie in [0, x.size(dim)); negative values are errors (no
 * wrap-around). They are data, so they are checked by every forward and
 * backward, which fail with TG_ERR_INVALID and "gather: index 3 is out of
 * bounds for dimension 0 with size 3" (the engine prefixes the node).
 *
 * Duplicate targets in scatter: PyTorch leaves unspecified which src value
 * wins; here the last one in index's row-major order wins (deterministic).
 * Its gradient is PyTorch's (documented there as incorrect for duplicates):
 * every duplicate src element receives dout of the target. scatter_add
 * accumulates duplicates ([0,0,2] adding [1,2,3] into zeros(3) gives [3,0,3]).
 *
 * Gradients (index takes none):
 * - gather: dx += scatter_add of dout at index.
 * - scatter: dx += dout with every written position zeroed;
 *   dsrc += gather(dout, index).
 * - scatter_add: dx += dout; dsrc += gather(dout, index).
 * dsrc is defined only when src.shape == index.shape (PyTorch fails at
 * backward otherwise): the builder rejects other shapes when src requires a
 * gradient. (Should src be marked later, the backward writes the gradient of
 * the elements read and leaves the rest 0, which is the true gradient.)
 *
 * Errors (graph error, NULL): dim out of range; index not int64 ("Expected
 * dtype int64 for index"); src dtype != x dtype ("Expected self.dtype to be
 * equal to src.dtype"); x not of the graph's float dtype; rank mismatch
 * ("Index tensor must have the same number of dimensions as input tensor" /
 * "... as self tensor" / "... as src tensor"); index too large ("Size does not
 * match at dimension 0 expected index [3, 1] to be smaller than self [2, 2]
 * apart from dimension 1" / "Expected index [1, 6] to be smaller than self
 * [3, 5] apart from dimension 0 and to be smaller size than src [2, 5]");
 * src requiring a gradient with src.shape != index.shape.
 */
#ifndef TG_SCATTER_H
#define TG_SCATTER_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.gather(x, dim, index). */
tg_node *tg_gather(tg_graph *g, tg_node *x, int dim, tg_node *index);

/* torch.scatter(x, dim, index, src): x with src written at index. */
tg_node *tg_scatter(tg_graph *g, tg_node *x, int dim, tg_node *index, tg_node *src);

/* torch.scatter(x, dim, index, value): x with `value` written at index. */
tg_node *tg_scatter_value(tg_graph *g, tg_node *x, int dim, tg_node *index, double value);

/* torch.scatter_add(x, dim, index, src): x with src added at index. */
tg_node *tg_scatter_add(tg_graph *g, tg_node *x, int dim, tg_node *index, tg_node *src);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__scatter_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(scatter)
#endif
