/*
 * ops_internal.h - helpers shared by the op files: broadcasting, dims, strided
 * iteration. Library-private.
 */
#ifndef TG_OPS_INTERNAL_H
#define TG_OPS_INTERNAL_H

#include <float.h>
#include <math.h>
#include <string.h>

#include "internal.h"
#include "onnx.h"
#include "op.h"
#include "threads.h"

/* ---- broadcasting (PyTorch rules, OPS.md 0.2) ---- */

/* Broadcast the shapes of a and b into (rank, shape). On failure records
 * "<op>: The size of tensor a (3) must match the size of tensor b (4) at
 * non-singleton dimension 1" on the graph and returns false. */
bool tg__broadcast(tg_graph *g, const char *op, const tg_tensor *a, const tg_tensor *b,
                   int *rank, int64_t *shape);

/* Strides of a tensor of (rank, shape) seen through the broadcast result
 * (out_rank, out_shape): 0 where it is broadcast, contiguous otherwise. */
void tg__bcast_strides(int rank, const int64_t *shape, int out_rank, const int64_t *out_shape,
                       int64_t *strides);

/* Odometer over a shape with up to three strided operands. */
typedef struct tg__iter {
    int     rank;
    int64_t shape[TG_MAX_RANK];
    int64_t stride[3][TG_MAX_RANK];
    int64_t idx[TG_MAX_RANK];
    int64_t off[3];
} tg__iter;

/* Start at index 0 of (rank, shape); strides[k] may be NULL for unused operands. */
void tg__iter_init(tg__iter *it, int rank, const int64_t *shape, const int64_t *s0,
                   const int64_t *s1, const int64_t *s2);
/* Put a fresh odometer (offsets at 0) at the start of row `row`: every dim but
 * the last, row-major. */
static inline void tg__iter_seek(tg__iter *it, int64_t row)
{
    for (int d = it->rank - 2; d >= 0; d--) {
        it->idx[d] = row % it->shape[d];
        row /= it->shape[d];
        for (int k = 0; k < 3; k++) it->off[k] += it->idx[d] * it->stride[k][d];
    }
}

/* Advance over every dim except the last (the caller loops the last dim itself). */
static inline void tg__iter_next_row(tg__iter *it)
{
    for (int d = it->rank - 2; d >= 0; d--) {
        it->idx[d]++;
        for (int k = 0; k < 3; k++) it->off[k] += it->stride[k][d];
        if (it->idx[d] < it->shape[d]) return;
        for (int k = 0; k < 3; k++) it->off[k] -= it->stride[k][d] * it->shape[d];
        it->idx[d] = 0;
    }
}

/* Set up an odometer over out (operand 0, contiguous) with a and b (operands
 * 1 and 2, broadcast to out; b may be NULL). Rank 0 counts as shape [1].
 * Returns the length of the last dim; *rows = numel / that (0 when empty). */
int64_t tg__iter_bcast(tg__iter *it, const tg_tensor *out, const tg_tensor *a,
                       const tg_tensor *b, int64_t *rows);

/* ---- dims (OPS.md 0.1) ---- */

/* Wrap dim for a tensor of `rank`; on error records PyTorch's message
 * "<op>: Dimension out of range (expected to be in range of [-2, 1], but got 2)". */
bool tg__dim(tg_graph *g, const char *op, int64_t dim, int rank, int *out);

/* Same for a list; also rejects duplicates ("dim 1 appears multiple times in
 * the list of dims"). mask[d] is set for every listed dim. */
bool tg__dims(tg_graph *g, const char *op, const int64_t *dims, int n, int rank, bool *mask);

/* The float dtype check shared by builders: input i must have the graph's float dtype. */
bool tg__want_float(tg_graph *g, const char *op, const tg_node *x, const char *what);

/* "[2, 3]" formatting into a caller buffer, shorter to type at call sites. */
#define TG__SHAPE(t, buf) tg_shape_str((t)->rank, (t)->shape, (buf), sizeof(buf))

/* Sum dy (shape out) into dx (a shape that broadcasts to out): dx += sum_to(dy). */
void tg__sum_to_acc(tg_dtype dt, const tg_tensor *dy, tg_tensor *dx, double scale);


/* ---- dropout's random stream (tg_dropout, tg_sdpa) ---- */

/* Chris Wellons' lowbias32 integer hash: a bijection of 32-bit words with
 * near-ideal avalanche, in 32-bit arithmetic so AVX2 runs it 8 lanes wide. */
static inline uint32_t tg__lowbias32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}

/* 32 uniform bits for element i of a dropout mask with this key: the low word
 * of i mixed with the key's, then the high words: a bijection of the counter
 * for a fixed key. Element i is kept when the bits are at least
 * ceil(p * 2^32). tg__vec_dropout (ops/simd/vec_dropout.c) computes the same bits. */
static inline uint64_t tg__drop_bits(uint64_t key, int64_t i)
{
    uint32_t x = tg__lowbias32((uint32_t)(uint64_t)i ^ (uint32_t)key);
    return tg__lowbias32(x ^ (uint32_t)((uint64_t)i >> 32) ^ (uint32_t)(key >> 32));
}

/* ---- FLOPs rules for the descriptors' flops member (engine/cost.h) ---- */

/* An op that only moves or selects data: 0. */
static inline double tg__flops_none(const tg_node *n)
{
    (void)n;
    return 0;
}

/* k FLOPs per element of input 0 (reductions: 1; softmax: 5; mse_loss: 3). */
static inline double tg__flops_per_in0(const tg_node *n, double k)
{
    return k * (double)n->in[0]->value.numel;
}

/* 1 per element read: a reduction. */
static inline double tg__flops_reduce(const tg_node *n)
{
    return tg__flops_per_in0(n, 1);
}

#endif
