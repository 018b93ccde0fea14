/*
 * loss.h - loss functions: mse_loss (and cross_entropy).
 */
#ifndef TG_LOSS_H
#define TG_LOSS_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_reduction {
    TG_REDUCTION_MEAN,
    TG_REDUCTION_SUM,
    TG_REDUCTION_NONE,
    TG_REDUCTION_COUNT
} tg_reduction;

/* Parse "mean" / "sum" / "none"; TG_ERR_INVALID with "<s> is not a valid
 * value for reduction" otherwise. */
tg_status   tg_reduction_parse(const char *s, tg_reduction *out);
const char *tg_reduction_name(tg_reduction r);

/* F.mse_loss(input, target, reduction). Unlike PyTorch, which broadcasts
 * different shapes with a warning, tgraph requires equal shapes (an error
 * names both). 'mean' and 'sum' give a 0-d result, 'none' the input's shape.
 * Both inputs receive gradients. */
tg_node *tg_mse_loss(tg_graph *g, tg_node *input, tg_node *target, tg_reduction reduction);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__loss_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(loss)
#endif
