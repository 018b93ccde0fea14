/*
 * activation.h - GELU (nn.GELU / F.gelu), exact and tanh-approximated.
 */
#ifndef TG_ACTIVATION_H
#define TG_ACTIVATION_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* F.gelu's `approximate` argument. */
typedef enum tg_gelu_approx {
    TG_GELU_NONE,   /* exact: x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 */
    TG_GELU_TANH,   /* x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) */
    TG_GELU_APPROX_COUNT
} tg_gelu_approx;

/* Parse "none" / "tanh" (PyTorch's spelling). Anything else (NULL too) gives
 * TG_ERR_INVALID with "approximate argument must be either none or tanh." in
 * tg_last_error(); *out is untouched then. */
tg_status   tg_gelu_approx_parse(const char *s, tg_gelu_approx *out);
const char *tg_gelu_approx_name(tg_gelu_approx a);   /* "none", "tanh" */

/* y = gelu(x) elementwise; x float (the graph's dtype), any shape; y has x's
 * shape. Differentiable everywhere. Errors: a non-float x, an approx value
 * outside the enum ("approximate argument must be either none or tanh."). */
tg_node *tg_gelu(tg_graph *g, tg_node *x, tg_gelu_approx approx);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__activation_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(activation)
#endif
