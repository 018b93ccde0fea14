/*
 * einops.h - rearrange, repeat and reduce with the einops pattern language
 * (einops.rearrange / einops.repeat / einops.reduce; OPS.md section 8).
 *
 *     // x: [2*3, 5, 8]  ->  y: [2*5, 3, 8]
 *     tg_axis_len b = {"b", 2};
 *     tg_node *y = tg_rearrange(g, x, "(b ts_d) seg d -> (b seg) ts_d d", 1, &b);
 *
 * Pattern: "left -> right"; each side is a space-separated list of axis names
 * (letters, digits, '_'; not starting with a digit or '_', not ending with
 * '_'), parenthesised groups one level deep ("(b ts_d)", C order: the first
 * name is the outer index), unit axes "1" and "()", anonymous axes (numbers
 * >= 2, each a distinct axis) and one "..." per side (on the left never inside
 * a group). Only ' ' separates; only ASCII is accepted (einops also accepts
 * Unicode letters). Axis lengths are given like einops' keyword arguments:
 * an array of {name, len}; a length given for a plain left axis is checked
 * against the tensor.
 *
 * Results:
 * - tg_rearrange: a reshape + permutation (+ unit dims). When no element moves
 *   (e.g. "b ts_d seg d -> (b ts_d) seg d") the node is a view of x: no copy
 *   forward or backward. Any dtype; gradient for floats.
 * - tg_repeat: like rearrange, plus new axes on the right (named ones need a
 *   length; numbers >= 2 are anonymous new axes) whose copies broadcast the
 *   data; where a new axis sits in a group decides the layout ("a -> (a r)"
 *   repeat-interleaves, "a -> (r a)" tiles). A new axis may have length 0
 *   (empty result, as einops). The backward sums the copies. Any dtype;
 *   gradient for floats.
 * - tg_reduce: sum/mean/max/min over the left axes missing on the right;
 *   floats only (the graph's dtype). Sums accumulate in double; a mean over
 *   zero elements is NaN; max/min over zero elements is an error. The max/min
 *   gradient goes to the first (lowest flat index) extreme element of each
 *   reduced slice (torch.amax would split it evenly among exact ties).
 *
 * Errors (sticky graph error, NULL returned) carry einops' wrapper and inner
 * message on one line, e.g.
 *   rearrange: Error while processing rearrange-reduction pattern "a b -> a b".
 *   Input tensor shape: (2, 3, 4). Additional info: {}. Wrong shape: expected
 *   2 dims. Received 3-dim tensor.
 * On top of einops' checks tgraph rejects: a pattern without exactly one
 * "->", non-ASCII bytes, negative axis lengths, a length 0 that would divide a
 * group (einops: ZeroDivisionError), keyword axes given twice, results of rank
 * above TG_MAX_RANK, more than 32 axes in one pattern (or 64 items on one
 * side, or 64 KiB of text), max/min over nothing. API misuse (NULL pattern,
 * n_axes > 0 with axes NULL, an unknown reduction, a non-float reduce input)
 * gets a plain "<op>: ..." message.
 */
#ifndef TG_EINOPS_H
#define TG_EINOPS_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One keyword argument: the axis `name` has length `len`. */
typedef struct tg_axis_len {
    const char *name;
    int64_t     len;
} tg_axis_len;

typedef enum tg_einops_reduction {
    TG_EINOPS_SUM,
    TG_EINOPS_MEAN,
    TG_EINOPS_MAX,
    TG_EINOPS_MIN,
    TG_EINOPS_PROD,
    TG_EINOPS_REDUCTION_COUNT
} tg_einops_reduction;

/* einops.rearrange(x, pattern, **axes). axes may be NULL when n_axes is 0.
 * The pattern is copied; the caller keeps ownership of its arguments. */
tg_node *tg_rearrange(tg_graph *g, tg_node *x, const char *pattern, int n_axes,
                      const tg_axis_len *axes);

/* einops.repeat(x, pattern, **axes). */
tg_node *tg_repeat(tg_graph *g, tg_node *x, const char *pattern, int n_axes,
                   const tg_axis_len *axes);

/* einops.reduce(x, pattern, reduction, **axes). x float (every reduction,
 * with gradients; prod's stays exact where x has zeros) or int64 (sum, max,
 * min, prod in int64, wrapping on overflow as torch does; no gradient). */
tg_node *tg_reduce(tg_graph *g, tg_node *x, const char *pattern, tg_einops_reduction r,
                   int n_axes, const tg_axis_len *axes);

/* "sum", "mean", "max", "min", "prod" (NULL when out of range). */
const char *tg_einops_reduction_name(tg_einops_reduction r);

/* The length of the named axis as inferred when node n was built by
 * tg_rearrange/tg_repeat/tg_reduce ("seg" in "(b seg) d -> b seg d"); -1 when
 * n is NULL, not such a node, or its pattern has no axis of that name. */
int64_t tg_einops_axis_len(const tg_node *n, const char *name);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__einops_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(einops)
#endif
