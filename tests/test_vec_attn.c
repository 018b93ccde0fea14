/*
 * test_vec_attn.c - the AVX-512 kernels of the fused attention's tiny heads
 * (at most 16 keys; ops/simd/vec_softmax.c, vec_gemm.c), called directly:
 *
 *   tg__vec_transpose16   against the element-wise transpose, with NaN past
 *                         the columns read and a guard after the rows written
 *   tg__vec_attn_rows16   against a double-precision softmax(scale Q K^T),
 *                         causal or not; rebuilt from its statistics (given)
 *                         it must give the same bits
 *   tg__vec_attn_pv16     against tg__vec_gemm_small on the same P: the same
 *                         chains, so the same bits
 *   tg__vec_gemm_nt16     against a double-precision A B^T
 *
 * The op-level tests (test_sdpa.c) run the whole attention on these kernels
 * against the unfused chain. Skipped on a CPU without AVX-512.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "simd/vec.h"

#define GUARD 19
#define SENTINEL -12345.0f

static uint64_t rng_state;
static float uniform(void)   /* in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng_state >> 11) / (double)(1ULL << 52) - 1.0);
}

static float *floats(int64_t n, float fill)
{
    float *p = malloc(sizeof(float) * (size_t)n);
    cr_assert(p);
    for (int64_t i = 0; i < n; i++) p[i] = fill;
    return p;
}

#define NEED_AVX512()                                                               \
    do {                                                                            \
        if (!TG_VEC || !tg__vec_avx512_on()) {                                      \
            cr_skip_test("AVX-512 is off or missing: the tiny-head kernels are not used"); \
        }                                                                           \
    } while (0)

#if TG_VEC
Test(vec_attn, transpose16)
{
    NEED_AVX512();
    const int64_t ldb = 45;
    for (int64_t N = 1; N <= 16; N++)
        for (int64_t K = 1; K <= 40; K++)
            for (int wide = 0; wide < 2; wide++) {
                const int64_t ldbt = wide ? 16 : N;   /* N < 16: only N lanes a row written */
                float *B = floats(N * ldb, NAN), *bt = floats(K * ldbt + GUARD, SENTINEL);
                for (int64_t j = 0; j < N; j++)
                    for (int64_t q = 0; q < K; q++) B[j * ldb + q] = (float)(j * 100 + q);
                tg__vec_transpose16(B, ldb, N, K, bt, ldbt);
                for (int64_t q = 0; q < K; q++)
                    for (int64_t j = 0; j < ldbt; j++) {
                        const float want = j < N ? (float)(j * 100 + q) : 0.0f;
                        cr_assert_eq(bt[q * ldbt + j], want, "N %lld K %lld ldbt %lld: [%lld, %lld]",
                                     (long long)N, (long long)K, (long long)ldbt, (long long)q,
                                     (long long)j);
                    }
                for (int64_t i = K * ldbt; i < K * ldbt + GUARD; i++)
                    cr_assert_eq(bt[i], SENTINEL, "N %lld K %lld: guard", (long long)N, (long long)K);
                free(B);
                free(bt);
            }
}

/* one head: rows x n scores of depth E, row strides with room (NaN) after */
static void check_rows(int64_t rows, int64_t n, int64_t E, int64_t i0, bool causal, float scale)
{
    const int64_t ldq = E + 3, ldk = E + 5;
    float *q = floats(rows * ldq, NAN), *k = floats(n * ldk, NAN);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t e = 0; e < E; e++) q[r * ldq + e] = 2 * uniform();
    for (int64_t j = 0; j < n; j++)
        for (int64_t e = 0; e < E; e++) k[j * ldk + e] = 2 * uniform();
    float *pt = floats(16 * n, NAN), *pt2 = floats(16 * n, NAN), *qt = floats(16 * E, NAN);
    double st[32];
    tg__vec_attn_rows16(q, ldq, E, k, ldk, rows, n, i0, causal, scale, st, false, pt, qt);
    for (int64_t r = 0; r < rows; r++) {
        const int64_t nv = causal ? (i0 + r + 1 < n ? i0 + r + 1 : n) : n;
        double z[16], m = -INFINITY, sum = 0, mag = 0;   /* mag: the largest sum |scale q k| */
        for (int64_t j = 0; j < nv; j++) {
            double s = 0, a = 0;
            for (int64_t e = 0; e < E; e++) {
                s += (double)q[r * ldq + e] * k[j * ldk + e];
                a += fabs((double)q[r * ldq + e] * k[j * ldk + e]);
            }
            z[j] = scale * s;
            m = z[j] > m ? z[j] : m;
            mag = fabs(scale) * a > mag ? fabs(scale) * a : mag;
        }
        /* float rounding of the scores (a few ulps of mag each) moves P relatively */
        const double rel = 1e-6 + 4 * 0x1p-24 * mag;
        for (int64_t j = 0; j < nv; j++) sum += exp(z[j] - m);
        for (int64_t j = 0; j < n; j++) {
            const double want = j < nv ? exp(z[j] - m) / sum : 0.0;
            const float got = pt[16 * j + r];
            cr_assert(fabs(got - want) <= rel * want + 1e-7 && (j < nv || got == 0.0f),
                      "rows %lld n %lld E %lld i0 %lld causal %d: P(%lld, %lld) = %.9g, want %.9g",
                      (long long)rows, (long long)n, (long long)E, (long long)i0, causal,
                      (long long)r, (long long)j, got, want);
        }
    }
    /* from the statistics: the same bits */
    tg__vec_attn_rows16(q, ldq, E, k, ldk, rows, n, i0, causal, scale, st, true, pt2, qt);
    for (int64_t j = 0; j < n; j++)
        for (int64_t r = 0; r < rows; r++)
            cr_assert_eq(pt2[16 * j + r], pt[16 * j + r], "given stats: P(%lld, %lld)",
                         (long long)r, (long long)j);
    /* P V as tg__vec_gemm_small on the same P (A(r, j) = pt[16 j + r]) */
    for (int64_t D = 1; D <= 40; D += 13) {
        const int64_t ldv = D + 2, ldy = D + 1;
        float *v = floats(n * ldv, NAN), *y = floats(rows * ldy + GUARD, SENTINEL);
        float *y0 = floats(rows * ldy + GUARD, SENTINEL);
        for (int64_t j = 0; j < n; j++)
            for (int64_t d = 0; d < D; d++) v[j * ldv + d] = uniform();
        tg__vec_attn_pv16(pt, rows, n, v, ldv, D, y, ldy);
        tg__vec_gemm_small(rows, D, n, 1, pt, 1, 16, v, ldv, 0, y0, ldy);
        for (int64_t i = 0; i < rows * ldy + GUARD; i++)
            cr_assert(y[i] == y0[i] || (isnan(y[i]) && isnan(y0[i])),
                      "pv16 rows %lld n %lld D %lld: [%lld] %.9g, gemm_small %.9g",
                      (long long)rows, (long long)n, (long long)D, (long long)i, y[i], y0[i]);
        free(v);
        free(y);
        free(y0);
    }
    free(q), free(k), free(pt), free(pt2), free(qt);
}

Test(vec_attn, rows16_softmax_and_pv)
{
    NEED_AVX512();
    rng_state = 3;
    static const int64_t depths[] = {1, 3, 16, 17, 40};
    for (int64_t rows = 1; rows <= 16; rows++)
        for (int64_t n = 1; n <= 16; n += (n < 4 ? 1 : 3))
            for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
                check_rows(rows, n, depths[d], 0, false, 0.37f);
                if (rows <= n) check_rows(rows, n, depths[d], n - rows, true, -0.5f);
                check_rows(rows, n, depths[d], 0, true, 1.0f);
            }
}

/* a row whose scores overflow the scale: -inf and NaN entries follow the
 * row kernel's rules (NaN skipped by the max, then a NaN row) */
Test(vec_attn, rows16_special_values)
{
    NEED_AVX512();
    const int64_t E = 2, n = 3;
    float q[2 * 2] = {1, 0, INFINITY, 0}, k[3 * 2] = {1, 0, -1, 0, NAN, 0};
    float pt[16 * 3], qt[16 * 2];
    double st[4];
    tg__vec_attn_rows16(q, E, E, k, E, 2, n, 0, false, 1.0f, st, false, pt, qt);
    for (int64_t j = 0; j < n; j++)
        cr_assert(isnan(pt[16 * j]), "a NaN score makes its row NaN (entry %lld: %g)",
                  (long long)j, pt[16 * j]);
    tg__vec_attn_rows16(q, E, E, k, E, 2, 2, 0, false, 1.0f, st, false, pt, qt);
    cr_assert_float_eq(pt[0], 1.0f / (1.0f + expf(-2.0f)), 1e-6f);
    cr_assert(isnan(pt[1]) && isnan(pt[17]), "+inf - +inf: a NaN row (%g %g)", pt[1], pt[17]);
}

Test(vec_attn, gemm_nt16)
{
    NEED_AVX512();
    rng_state = 11;
    for (int64_t M = 1; M <= 9; M += 2)
        for (int64_t N = 1; N <= 16; N++)
            for (int64_t K = 1; K <= 35; K += 17) {
                const int64_t lda = K + 1, ldb = K + 4, ldc = N + 2;
                float *A = floats(M * lda, NAN), *B = floats(N * ldb, NAN);
                float *C = floats(M * ldc + GUARD, SENTINEL), *bt = floats(16 * K, NAN);
                for (int64_t i = 0; i < M; i++)
                    for (int64_t p = 0; p < K; p++) A[i * lda + p] = uniform();
                for (int64_t j = 0; j < N; j++)
                    for (int64_t p = 0; p < K; p++) B[j * ldb + p] = uniform();
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) C[i * ldc + j] = 1.0f;
                tg__vec_gemm_nt16(M, N, K, 0.5f, A, lda, B, ldb, 2.0f, C, ldc, bt);
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < ldc; j++) {
                        double want = 0;
                        for (int64_t p = 0; p < K; p++) want += (double)A[i * lda + p] * B[j % N * ldb + p];
                        want = j < N ? 0.5 * want + 2.0 : SENTINEL;
                        cr_assert(fabs(C[i * ldc + j] - want) <= 1e-5,
                                  "M %lld N %lld K %lld: C(%lld, %lld) = %.9g, want %.9g",
                                  (long long)M, (long long)N, (long long)K, (long long)i,
                                  (long long)j, C[i * ldc + j], want);
                    }
                for (int64_t i = M * ldc; i < M * ldc + GUARD; i++) cr_assert_eq(C[i], SENTINEL);
                free(A), free(B), free(C), free(bt);
            }
}
#endif
