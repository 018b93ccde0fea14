/*
 * dropout.h - nn.Dropout / F.dropout, driven by the graph's training flag.
 */
#ifndef TG_DROPOUT_H
#define TG_DROPOUT_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = x * keep / (1 - p), keep ~ Bernoulli(1 - p) per element, when the graph
 * is in training mode (tg_graph_set_training) at the time of each forward;
 * the identity in eval mode, so one graph serves training and evaluation
 * (nn.Dropout's behaviour: it follows module.training).
 *
 * Training: every forward draws a new mask from the graph's RNG
 * (tg_graph_rng; same seed, same masks) into a buffer the node keeps; the
 * backward uses that mask: dx = dy * keep / (1 - p). p = 1 gives zeros
 * (scale 0, as PyTorch: an inf input gives NaN); p = 0 and eval copy x and do
 * not touch the RNG. x float, any shape; y has x's shape.
 *
 * Errors: p outside [0, 1] or NaN: "dropout probability has to be between 0
 * and 1, but got 1.5". */
tg_node *tg_dropout(tg_graph *g, tg_node *x, double p);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__dropout_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(dropout)
#endif
