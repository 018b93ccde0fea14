/*
 * concat.h - joining and cutting along one dim: torch.cat, torch.split,
 * narrow, stepped slices x[..., start:stop:step], index_select.
 *
 * All of them take any dtype (float, int64, bool); float results carry
 * gradients, int64/bool results never do. Dims count from the end when
 * negative. Every result is a new tensor (a copy); the backward adds the
 * upstream gradient back at the positions the forward read.
 */
#ifndef TG_CONCAT_H
#define TG_CONCAT_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.cat(xs[0..n), dim): every x has the same rank (>= 1) and dtype and
 * equal sizes except at dim; the result's size at dim is their sum. Errors:
 * "expected a non-empty list of Tensors", "zero-dimensional tensor (at
 * position 0) cannot be concatenated", "Tensors must have same number of
 * dimensions: got 2 and 3", "Sizes of tensors must match except in dimension
 * 0. Expected size 3 but got size 4 for tensor number 1 in the list.",
 * different dtypes (PyTorch would promote; tgraph refuses), a bad dim.
 * Unlike PyTorch 1.13, a 1-d empty tensor [0] is not skipped when ranks differ. */
tg_node *tg_concat(tg_graph *g, int n, tg_node *const *xs, int64_t dim);

/* torch.split(x, sizes, dim) with a list of sizes: out[i] = x.narrow(dim,
 * sum(sizes[0..i)), sizes[i]) for i < n; the caller provides out[0..n). Sizes
 * must be >= 0 and sum to x.size(dim) ("split_with_sizes expects split_sizes to
 * sum exactly to 3 (input tensor's size at dimension 1), but got split_sizes=[1,
 * 1]"). Returns TG_OK, or an error status with the graph in error and every
 * out[i] NULL. */
tg_status tg_split(tg_graph *g, tg_node *x, int n, const int64_t *sizes, int64_t dim,
                   tg_node **out);

/* x.narrow(dim, start, length): `length` entries from `start` along dim;
 * start may be negative (counts from the end, start in [-size, size]).
 * Errors: a 0-d x, "start out of range (expected to be in range of [-3, 3],
 * but got 4)", "start (2) + length (2) exceeds dimension size (3)", length < 0. */
tg_node *tg_narrow(tg_graph *g, tg_node *x, int64_t dim, int64_t start, int64_t length);

/* "To the end" for tg_slice's stop. */
#define TG_SLICE_END INT64_MAX

/* x[..., start:stop:step] along dim, Python's rules: negative start/stop count
 * from the end, out-of-range values are clamped to [0, size], an empty range
 * gives size 0. step >= 1 ("slice step must be positive"). */
tg_node *tg_slice(tg_graph *g, tg_node *x, int64_t dim, int64_t start, int64_t stop,
                  int64_t step);

/* torch.index_select(x, dim, index): index is an int64 node, 1-d (or 0-d,
 * taken as one entry); the result is x with dim's size replaced by the number
 * of indices, result[.., i, ..] = x[.., index[i], ..]. Repeated indices are
 * fine; the backward is a scatter-add (their gradients sum). x must have rank
 * >= 1 (tgraph refuses 0-d x). An index value outside [0, size) is found by
 * the forward, which then fails with TG_ERR_INVALID ("index out of range in
 * self"). Build errors: non-int64 index ("Expected dtype int64 for index"),
 * index of rank > 1 ("Index is supposed to be a vector"), a bad dim. */
tg_node *tg_index_select(tg_graph *g, tg_node *x, int64_t dim, tg_node *index);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__concat_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(concat)
#endif
