/*
 * sdpa.h - scaled dot-product attention as one op (the memory-light form of
 * FullAttention's einsum / mask / softmax / dropout / einsum chain).
 *
 *   A = dropout(softmax(scale * einsum("blhe,bshe->bhls", q, k) [causal: -inf for s > l]))
 *   y = einsum("bhls,bshd->blhd", A, v)
 *
 * q [B, L, H, E], k [B, S, H, E], v [B, S, H, D] -> y [B, L, H, D] (the
 * Time-Series-Library layout; PyTorch's F.scaled_dot_product_attention is the
 * same maths on [B, H, L, E]).
 *
 * The [B, H, L, S] weights are never stored: the forward keeps two numbers per
 * query row (the row's max and 1 / sum of exponentials, so the backward
 * rebuilds A bit for bit), and the backward recomputes the scores a block of
 * rows at a time, as FlashAttention does. Memory: the output plus 16 bytes per
 * (b, h, l). Dropout (training graphs, p > 0) draws its keep mask from one
 * 64-bit key of the graph RNG per forward, with the same counter-based stream
 * as tg_dropout over the [B, H, L, S] weights, so the fused and the unfused
 * chain give the same mask for the same RNG state; the backward regenerates it.
 *
 * causal needs L == S (TSL's TriangularCausalMask). scale must be finite;
 * dropout in [0, 1]. Work is spread over (b, h) pairs (and row blocks in the
 * forward) on the thread pool; results do not depend on the thread count.
 */
#ifndef TG_SDPA_H
#define TG_SDPA_H

#include <stdbool.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

tg_node *tg_sdpa(tg_graph *g, tg_node *q, tg_node *k, tg_node *v, bool causal, double scale,
                 double dropout);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__sdpa_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(sdpa)
#endif
