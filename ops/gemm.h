/*
 * gemm.h - the matrix multiply every contraction in tgraph goes through
 * (linear, einsum and their backward).
 *
 *   C = alpha * op(A) * op(B) + beta * C        row-major
 *
 * op(A) is M x K: A itself (lda >= K) or, with trans_a, the transpose of a
 * K x M matrix (lda >= M). Likewise op(B) is K x N. C is M x N (ldc >= N).
 * beta == 0 means C is written without being read (NaN in C is ignored).
 * The batched form repeats this for `batch` triples spaced by the strides
 * (in elements); a stride of 0 reuses the same matrix (broadcast).
 * The C matrices of different items must not overlap, except that
 * stride_c == 0 is allowed: the items then update that one C in batch order.
 * K == 0 or alpha == 0 leave C = beta * C without reading A or B.
 *
 * Threads: the calls use the tg_parallel_for pool (engine/threads.h); called
 * from inside a pool job they run on the calling thread only. The result is
 * bitwise the same for any thread count (the blocking of the K sum does not
 * depend on it). Per-thread packing buffers are allocated on first use and
 * kept for the life of the thread; if that allocation fails the call falls
 * back to a slower path that needs none.
 */
#ifndef TG_GEMM_H
#define TG_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

void tg_gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                 float *C, int64_t ldc);
void tg_gemm_f64(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
                 const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                 double *C, int64_t ldc);

void tg_gemm_batched_f32(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                         int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                         const float *B, int64_t ldb, int64_t stride_b, float beta, float *C,
                         int64_t ldc, int64_t stride_c);
void tg_gemm_batched_f64(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                         int64_t K, double alpha, const double *A, int64_t lda,
                         int64_t stride_a, const double *B, int64_t ldb, int64_t stride_b,
                         double beta, double *C, int64_t ldc, int64_t stride_c);

/* Dtype-dispatched form for code written once for both float types. */
void tg_gemm_batched(tg_dtype dt, bool trans_a, bool trans_b, int64_t batch, int64_t M,
                     int64_t N, int64_t K, double alpha, const void *A, int64_t lda,
                     int64_t stride_a, const void *B, int64_t ldb, int64_t stride_b,
                     double beta, void *C, int64_t ldc, int64_t stride_c);

#ifdef __cplusplus
}
#endif
#endif
