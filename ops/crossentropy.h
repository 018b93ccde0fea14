/*
 * crossentropy.h - F.cross_entropy / nn.CrossEntropyLoss on logits.
 */
#ifndef TG_CROSSENTROPY_H
#define TG_CROSSENTROPY_H

#include "graph.h"
#include "loss.h"   /* tg_reduction */

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's default ignore_index. */
#define TG_CROSS_ENTROPY_IGNORE_INDEX (-100)

/* F.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing).
 *
 * input: logits, float, (C), (N, C) or (N, C, d1, ..., dK); the class dim is
 * 1 (0 for a 1-d input). A "sample" is one position of N x d1 x ... x dK.
 * target, decided as PyTorch does by "same shape as input":
 *   - class indices, int64: () for input (C), (N) or (N, d1, ..., dK); values
 *     in [0, C) or ignore_index. A value outside both is found by the forward,
 *     which fails with TG_ERR_INVALID and "Target 3 is out of bounds.".
 *   - class probabilities, float, input's shape; ignore_index must be < 0.
 *     Differentiable: the target receives a gradient when it requires one.
 * weight: (C) float per-class weights, or NULL (all ones). Not differentiable:
 *   a weight that requires grad is an error.
 * reduction: 'none' gives one loss per sample (the target's shape for
 *   indices, the input's shape without the class dim for probabilities);
 *   'sum' and 'mean' a 0-d result. 'mean' divides by the summed weights of
 *   the non-ignored samples (indices) or by the number of samples
 *   (probabilities); when every sample is ignored it is 0/0 = NaN.
 * label_smoothing in [0, 1] (tgraph also rejects negatives and NaN, which
 *   PyTorch 1.13 lets through).
 * Computed through a max-subtracted log_softmax in double. Gradient for input.
 *
 * Errors (PyTorch's words): "Expected input batch_size (2) to match target
 * batch_size (3).", "Expected target size [2, 4], got [2, 5]", "expected
 * scalar type Long but found Float", "Expected floating point type for target
 * with class probabilities, got Long", "label_smoothing must be between 0.0
 * and 1.0. Got: 1.5", "weight tensor should be defined either for all 3
 * classes or no classes but got weight tensor of shape: [2]", "3 is not a
 * valid value for reduction", "ignore_index is not supported for floating
 * point target", "0D or 1D target tensor expected, multi-target not
 * supported", a 0-d input. */
tg_node *tg_cross_entropy(tg_graph *g, tg_node *input, tg_node *target, tg_node *weight,
                          int64_t ignore_index, tg_reduction reduction, double label_smoothing);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__crossentropy_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(crossentropy)
#endif
