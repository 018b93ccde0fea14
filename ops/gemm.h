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

/* ---- library-private: tests and benchmarks force a kernel or a path ---- */
typedef enum tg__gemm_kernel {
    TG__GEMM_KERNEL_C,        /* portable C microkernel */
    TG__GEMM_KERNEL_AVX2,     /* x86-64 AVX2 + FMA */
    TG__GEMM_KERNEL_AVX512,   /* x86-64 AVX-512F */
    TG__GEMM_KERNEL_COUNT
} tg__gemm_kernel;
typedef enum tg__gemm_path {
    TG__GEMM_PATH_AUTO,       /* chosen by shape */
    TG__GEMM_PATH_SMALL,      /* unpacked A, B direct or packed whole (falls back to PACKED if too big) */
    TG__GEMM_PATH_PACKED,     /* BLIS-style packed and cache-blocked */
    TG__GEMM_PATH_REF,        /* plain C loops, no buffers (the allocation-failure fallback) */
    TG__GEMM_PATH_COUNT
} tg__gemm_path;
/* The kernel in use: the best the CPU supports unless forced, by the call
 * below or the environment variable TG_GEMM_KERNEL=c|avx2|avx512 (read once). */
tg__gemm_kernel tg__gemm_kernel_get(void);
/* Force kernel k; returns false (and changes nothing) if the CPU lacks it.
 * k == TG__GEMM_KERNEL_COUNT goes back to the automatic choice. Not thread-safe
 * against GEMMs running at the same time. */
bool tg__gemm_kernel_set(tg__gemm_kernel k);
const char *tg__gemm_kernel_name(tg__gemm_kernel k);
/* Force a path for every later call (AUTO = by shape). */
void tg__gemm_path_set(tg__gemm_path p);

#ifdef __cplusplus
}
#endif
#endif
