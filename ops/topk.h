/*
 * topk.h - the k largest (or smallest) elements along a dim, with their
 * positions (torch.topk; OPS.md section 6).
 */
#ifndef TG_TOPK_H
#define TG_TOPK_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* values, indices = torch.topk(x, k, dim, largest, sorted).
 *
 * x: a float tensor of the graph's dtype. Returns the values node: x's shape
 * with size(dim) replaced by k, same dtype. When `indices` is not NULL,
 * *indices receives a second node, int64, same shape: the positions along dim
 * in x (it copies a buffer the values node saves; it takes no gradient).
 * On error both are NULL.
 *
 * Order: largest = true takes the k largest, false the k smallest. NaN ranks
 * above every number (as PyTorch/numpy): largest = true puts NaNs first,
 * largest = false last (topk([2, nan, 0, -1], 2) = [nan, 2], indices [1, 0]).
 * Ties (equal values, -0.0 == 0.0, NaN with NaN): the lower index ranks
 * first, so which of the tied elements is picked and their order are
 * deterministic (PyTorch does not promise either; do not compare tie order
 * with it). sorted = true: best first (descending for largest, ascending
 * otherwise). sorted = false: the order is unspecified (for k > 64 it is a
 * heap order, which saves the final sort).
 *
 * k in [0, size(dim)]; k = 0 gives empty outputs. A 0-d x accepts dim 0 or -1
 * and k in {0, 1}, and returns x itself and index 0 (0-d, as PyTorch 1.13,
 * even for k = 0).
 *
 * Gradient: dx = 0 except dx[indices] = dvalues (along dim).
 * Cost: a partial selection per row, no full sort (see topk.c); rows run on
 * the thread pool.
 *
 * Errors (graph error): x not of the graph's float dtype; dim out of range
 * ("Dimension out of range (expected to be in range of [-2, 1], but got 2)");
 * k < 0, k > size(dim), k > 1 on a 0-d x: "selected index k out of range".
 */
tg_node *tg_topk(tg_graph *g, tg_node *x, int64_t k, int dim, bool largest, bool sorted,
                 tg_node **indices);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__topk_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(topk)
#endif
