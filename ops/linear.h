/*
 * linear.h - F.linear: y = x W^T + b.
 */
#ifndef TG_LINEAR_H
#define TG_LINEAR_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x (*, in), weight (out, in) - PyTorch's layout, not transposed -, bias
 * (out) or NULL. Returns (*, out); a 1-d x (in) gives (out). Errors use
 * PyTorch's words: "mat1 and mat2 shapes cannot be multiplied (14x4 and 3x5)". */
tg_node *tg_linear(tg_graph *g, tg_node *x, tg_node *weight, tg_node *bias);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__linear_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(linear)
#endif
