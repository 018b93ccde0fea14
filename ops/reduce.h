/*
 * reduce.h - sum and mean over dims (torch.sum / torch.mean).
 */
#ifndef TG_REDUCE_H
#define TG_REDUCE_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sum over the listed dims (negative dims count from the end; duplicates are
 * an error). n_dims == 0 reduces every dim, as PyTorch 1.13 does for dim=None
 * and dim=[]. keepdim keeps reduced dims as size 1. Accumulates in double.
 * A sum over zero elements is 0. */
tg_node *tg_sum(tg_graph *g, tg_node *x, const int64_t *dims, int n_dims, bool keepdim);
/* Mean: the sum divided by the number of reduced elements; NaN over none. */
tg_node *tg_mean(tg_graph *g, tg_node *x, const int64_t *dims, int n_dims, bool keepdim);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__reduce_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(reduce)
#endif
