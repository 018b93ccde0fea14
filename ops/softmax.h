/*
 * softmax.h - softmax, log_softmax and the fused softmax(scale * x) that
 * attention uses, along one dim (OPS.md section 5).
 *
 * All take a float tensor of the graph's dtype and return one of the same
 * shape. `dim` is required (there is no implicit-dim form; PyTorch's
 * F.softmax(x) without dim is deprecated) and may be negative; a 0-d input
 * accepts dim 0 or -1 and gives 1 (log_softmax: 0).
 *
 * Numerics, exactly as PyTorch: the row max is subtracted before exp; a -inf
 * entry gives exactly 0 (log_softmax: -inf); a row that is entirely -inf, or
 * holds +inf or NaN, gives NaN for the whole row and NaN gradients. Row sums
 * are accumulated in double. An empty dim gives an empty result.
 *
 * Errors (graph error, NULL): input not of the graph's float dtype; dim out of
 * range: "softmax: Dimension out of range (expected to be in range of
 * [-2, 1], but got 2)".
 */
#ifndef TG_SOFTMAX_H
#define TG_SOFTMAX_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = exp(x - max) / sum exp(x - max) along dim. */
tg_node *tg_softmax(tg_graph *g, tg_node *x, int dim);

/* y = x - max - log sum exp(x - max) along dim. */
tg_node *tg_log_softmax(tg_graph *g, tg_node *x, int dim);

/* softmax(scale * x) along dim in one op (attention: scale = 1/sqrt(E)); the
 * gradient with respect to x includes the factor scale. Same as
 * tg_softmax(g, tg_scale(g, x, scale), dim), bit for bit in the forward. */
tg_node *tg_softmax_scaled(tg_graph *g, tg_node *x, int dim, double scale);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__softmax_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(softmax)
#endif
