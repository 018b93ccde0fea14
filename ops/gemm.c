/*
 * gemm.c - C = alpha * op(A) op(B) + beta * C, plain C reference version.
 *
 * Correct for every transpose/stride combination; loops ordered so the inner
 * loop streams along rows. The packed, register-tiled kernels replace the f32
 * path (see issue: speed); the f64 path stays this simple.
 */
#include <string.h>
#include <float.h>

#include "gemm.h"
#include "threads.h"

#ifdef TG_KERNELS
#include "generic.h"

typedef struct TG_F(gemm_job) {
    bool ta, tb;
    int64_t M, N, K;
    TG_T alpha, beta;
    const TG_T *A, *B;
    TG_T *C;
    int64_t lda, ldb, ldc, sa, sb, sc;
} TG_F(gemm_job);

/* One row i of one batch item: C[i,:] = alpha * sum_k op(A)[i,k] op(B)[k,:] + beta C[i,:] */
static void TG_F(gemm_row)(const TG_F(gemm_job) *j, const TG_T *A, const TG_T *B, TG_T *C,
                           int64_t i)
{
    TG_T *c = C + i * j->ldc;
    if (j->beta == 0)
        memset(c, 0, (size_t)j->N * sizeof *c);
    else if (j->beta != 1)
        for (int64_t n = 0; n < j->N; n++) c[n] *= j->beta;
    for (int64_t k = 0; k < j->K; k++) {
        TG_T a = j->alpha * (j->ta ? A[k * j->lda + i] : A[i * j->lda + k]);
        if (j->tb) {
            for (int64_t n = 0; n < j->N; n++) c[n] += a * B[n * j->ldb + k];
        } else {
            const TG_T *b = B + k * j->ldb;
            for (int64_t n = 0; n < j->N; n++) c[n] += a * b[n];
        }
    }
}

static void TG_F(gemm_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gemm_job) *j = ctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t b = r / j->M, i = r % j->M;
        TG_F(gemm_row)(j, j->A + b * j->sa, j->B + b * j->sb, j->C + b * j->sc, i);
    }
}

void TG_F(tg_gemm_batched)(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                           int64_t K, TG_T alpha, const TG_T *A, int64_t lda, int64_t stride_a,
                           const TG_T *B, int64_t ldb, int64_t stride_b, TG_T beta, TG_T *C,
                           int64_t ldc, int64_t stride_c)
{
    if (batch <= 0 || M <= 0 || N <= 0) return;
    TG_F(gemm_job) j = {trans_a, trans_b, M, N, K, alpha, beta, A, B, C,
                        lda, ldb, ldc, stride_a, stride_b, stride_c};
    int64_t work = N * (K > 0 ? K : 1);
    int64_t grain = work >= 4096 ? 1 : 4096 / work;
    tg_parallel_for(batch * M, grain, TG_F(gemm_range), &j);
}

void TG_F(tg_gemm)(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, TG_T alpha,
                   const TG_T *A, int64_t lda, const TG_T *B, int64_t ldb, TG_T beta, TG_T *C,
                   int64_t ldc)
{
    TG_F(tg_gemm_batched)(trans_a, trans_b, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C,
                          ldc, 0);
}

#else

#define TG_KERNELS 32
#include "gemm.c"
#undef TG_KERNELS
#define TG_KERNELS 64
#include "gemm.c"
#undef TG_KERNELS

void tg_gemm_batched(tg_dtype dt, bool trans_a, bool trans_b, int64_t batch, int64_t M,
                     int64_t N, int64_t K, double alpha, const void *A, int64_t lda,
                     int64_t stride_a, const void *B, int64_t ldb, int64_t stride_b,
                     double beta, void *C, int64_t ldc, int64_t stride_c)
{
    if (dt == TG_F64)
        tg_gemm_batched_f64(trans_a, trans_b, batch, M, N, K, alpha, A, lda, stride_a, B, ldb,
                            stride_b, beta, C, ldc, stride_c);
    else
        tg_gemm_batched_f32(trans_a, trans_b, batch, M, N, K, (float)alpha, A, lda, stride_a,
                            B, ldb, stride_b, (float)beta, C, ldc, stride_c);
}

#endif
