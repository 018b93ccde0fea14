/*
 * cost.h - what each node of a graph costs: forward FLOPs counted from the
 * shapes, bytes it keeps alive, and (with tg_graph_set_profile) the seconds
 * its forward and backward took; summed over a module scope too. For model
 * summaries and annotated diagrams (tgraph summary, tgraph dot --profile).
 *
 * How FLOPs are counted (the convention of torchinfo and fvcore: 2 per
 * multiply-add), per forward call, from the shapes alone:
 * - matrix products (linear, einsum, the two products inside sdpa): 2 per
 *   multiply-add, so a linear of N rows is 2*N*in*out, plus N*out for its
 *   bias; an einsum's sums that are no product count 1 per element added;
 * - elementwise ops (add, mul, scale, exp, gelu, relu, dropout,
 *   masked_fill, ...): 1 per output element;
 * - reductions (sum, mean, einops reduce, scatter_add): 1 per element read;
 * - softmax and log_softmax: 5 per element (max, subtract, exp, sum,
 *   divide); layer_norm: 5 per element for the statistics and the
 *   normalisation, plus 2 per element with an affine weight and bias;
 *   mse_loss 3 and cross_entropy 5 per input element;
 * - ops that only move or select data (views, reshape, permute, rearrange,
 *   repeat, cat, slice, index_select, gather, scatter, embedding, topk): 0;
 * - sdpa: what its unfused chain counts by the same rules (einsum
 *   blhe,bshe->bhls, masked_fill when causal, softmax, dropout, einsum
 *   bhls,bshd->blhd): 2*B*H*L*S*(E + D) + B*H*L*S*(6 + causal).
 * The backward is not counted op by op: the usual estimate is twice the
 * forward (a product's backward is two products), so a training step is
 * about three times the forward.
 */
#ifndef TG_COST_H
#define TG_COST_H

#include <stddef.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_cost {
    double forward_s;    /* seconds in forward calls since profiling went on (0 without) */
    double backward_s;   /* seconds in backward calls, recomputation included */
    double flops;        /* forward FLOPs of one call (the rule above) */
    double bytes;        /* bytes kept alive: the value (0 for views and leaves,
                          * whose memory is another's) plus the saved buffers */
    long   ops;          /* op nodes counted (views included) */
} tg_cost;

/* Forward FLOPs of one call of n's op (0 for leaves and views); NAN with a
 * NULL n. */
double tg_node_flops(const tg_node *n);

/* n's cost into *out. TG_ERR_INVALID for NULL arguments. */
tg_status tg_node_cost(const tg_node *n, tg_cost *out);

/* The summed cost of the op nodes in scope and every scope below it (scope 0,
 * the root: the whole graph). TG_ERR_INVALID for NULL arguments or a scope
 * out of range. */
tg_status tg_graph_scope_cost(const tg_graph *g, int scope, tg_cost *out);

#ifdef __cplusplus
}
#endif
#endif
