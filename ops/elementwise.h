/*
 * elementwise.h - arithmetic with broadcasting, and unary maths.
 *
 * Binary ops broadcast like PyTorch (align at the right, size 1 stretches);
 * the gradient of a broadcast operand is summed back to its shape. All take
 * and return float tensors of the graph's dtype. NULL on error (graph error).
 */
#ifndef TG_ELEMENTWISE_H
#define TG_ELEMENTWISE_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

tg_node *tg_add(tg_graph *g, tg_node *a, tg_node *b);   /* a + b */
tg_node *tg_sub(tg_graph *g, tg_node *a, tg_node *b);   /* a - b */
tg_node *tg_mul(tg_graph *g, tg_node *a, tg_node *b);   /* a * b */
tg_node *tg_div(tg_graph *g, tg_node *a, tg_node *b);   /* a / b */

tg_node *tg_scale(tg_graph *g, tg_node *x, double s);   /* s * x */
tg_node *tg_neg(tg_graph *g, tg_node *x);               /* -x */
tg_node *tg_exp(tg_graph *g, tg_node *x);
tg_node *tg_log(tg_graph *g, tg_node *x);               /* log(0) = -inf, log(<0) = NaN */
tg_node *tg_sqrt(tg_graph *g, tg_node *x);
tg_node *tg_square(tg_graph *g, tg_node *x);            /* x * x */
/* max(x, 0); NaN stays NaN, relu(-0.0) = -0.0; the derivative at 0 is 0. */
tg_node *tg_relu(tg_graph *g, tg_node *x);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__elementwise_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(elementwise)
#endif
