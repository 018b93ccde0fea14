/*
 * batchnorm.h - F.batch_norm / nn.BatchNorm1d over the channel axis, driven
 * by the graph's training flag.
 */
#ifndef TG_BATCHNORM_H
#define TG_BATCHNORM_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* nn.BatchNorm1d's defaults. */
#define TG_BATCH_NORM_EPS      1e-5
#define TG_BATCH_NORM_MOMENTUM 0.1

/* nn.BatchNorm1d(C)(x): y = (x - mean) / sqrt(var + eps) * weight + bias per
 * channel c, over the N (and L) elements of that channel.
 *
 * x (N, C) or (N, C, L) float; running_mean, running_var [C] (buffers of a
 * store, params.h, or any float leaf, never an op's result: a training
 * forward writes them; read as constants, no gradient); weight, bias [C] or
 * NULL (affine=False); num_batches_tracked an int64 leaf of one element or
 * NULL. Returns y with x's shape. Gradients for x,
 * weight and bias.
 *
 * The mode is the graph's (tg_graph_set_training) at each forward, as
 * nn.BatchNorm1d follows module.training (dropout follows the same flag):
 * - training: mean and the biased variance of the batch, per channel (in
 *   double, two passes). The same forward then updates the running
 *   statistics in place, exactly as PyTorch:
 *       running_mean = (1 - momentum) * running_mean + momentum * mean
 *       running_var  = (1 - momentum) * running_var + momentum * var * M / (M - 1)
 *       num_batches_tracked += 1
 *   with M = N * L, once per tg_graph_forward (a training step runs forward
 *   once; a gradcheck, which runs many, moves them once per forward, but the
 *   output in training mode does not depend on them). M == 1 is an error of
 *   that forward: "Expected more than 1 value per channel when training".
 *   Backward: the full gradient through the batch statistics.
 * - eval: the running statistics; nothing is updated. Backward: the affine
 *   map only (dx = dy * weight / sqrt(running_var + eps)).
 * The backward follows the mode of the forward that ran before it.
 *
 * Not here: momentum=None (the cumulative average), track_running_stats=False,
 * BatchNorm2d/3d (the same op on a reshaped x: channel axis 1).
 *
 * Errors (PyTorch's words where it has them): "expected 2D or 3D input (got
 * 4D input)", "running_mean should contain 4 elements not 5" (running_var,
 * weight, bias alike; each must be 1-d), a running statistic computed by an
 * op, num_batches_tracked not a one-element int64 leaf, eps not positive and finite, momentum outside [0, 1] or NaN. */
tg_node *tg_batch_norm(tg_graph *g, tg_node *x, tg_node *running_mean, tg_node *running_var,
                       tg_node *weight, tg_node *bias, tg_node *num_batches_tracked,
                       double momentum, double eps);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__batchnorm_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(batchnorm)
#endif
