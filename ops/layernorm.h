/*
 * layernorm.h - F.layer_norm / nn.LayerNorm over the trailing dims.
 */
#ifndef TG_LAYERNORM_H
#define TG_LAYERNORM_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* nn.LayerNorm's default eps. */
#define TG_LAYER_NORM_EPS 1e-5

/* F.layer_norm(x, normalized_shape, weight, bias, eps).
 *
 * x (*, normalized_shape) float; normalized_shape has n_norm >= 1 dims that
 * must equal x's trailing dims; weight (gamma) and bias (beta) have shape
 * normalized_shape or are NULL (no affine / no shift). Each row of the
 * N = prod(normalized_shape) trailing elements is normalised with its mean and
 * biased variance: y = (x - mean) / sqrt(var + eps) * gamma + beta, statistics
 * accumulated in double (two passes). A constant row gives y = beta.
 * Returns y with x's shape. Gradients for x, weight and bias.
 *
 * Errors (PyTorch's words): "Given normalized_shape=[10], expected input with
 * shape [*, 10], but got input of size[3, 5]"; "Expected normalized_shape to
 * be at least 1-dimensional, ..."; "Expected weight to be of same shape as
 * normalized_shape, but got weight of shape [4] and normalized_shape = [5]"
 * (bias alike); tgraph also rejects eps <= 0 or NaN. */
tg_node *tg_layer_norm(tg_graph *g, tg_node *x, int n_norm, const int64_t *normalized_shape,
                       tg_node *weight, tg_node *bias, double eps);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__layernorm_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(layernorm)
#endif
