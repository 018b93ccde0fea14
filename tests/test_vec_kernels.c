/*
 * test_vec_kernels.c - the fused attention's vector kernels, called directly:
 * the small GEMMs, the small transpose, dot and softmax_row_stats against
 * double-precision loops, and tg__vec_dropout against the scalar mask of
 * tg__drop_bits, bit for bit (suite vec_kernels; skipped on a CPU without
 * AVX2 + FMA). The row kernels against the portable path, and the vector
 * maths against libm: test_vec.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "testutil.h"
#include "simd/vec.h"
#include "vec_rows.h"

/* ---- the fused attention's kernels, called directly, against double loops ----
 * tg__vec_gemm_small (A strided either way, B row-major), tg__vec_gemm_nt_small
 * (A B^T, depth contiguous), tg__vec_dot and tg__vec_softmax_row_stats, which
 * tg_sdpa reaches only for some shapes. Every storage cell a kernel must not
 * read holds NaN (A's and B's padding, C when beta == 0, the floats past a
 * row's end), and every cell it must not write holds a sentinel that has to
 * come back bit for bit (C's padding columns when ldc > N, a guard after C). */
#if TG_VEC
#define NEED_VEC()                                                                      \
    do {                                                                                \
        if (!tg__vec_supported())                                                       \
            cr_skip_test("this CPU lacks AVX2 + FMA: the vector kernels cannot run");   \
    } while (0)

#define C_GUARD 11                  /* floats after C's last row that must stay untouched */
static const float SENTINEL = -31415.9f;

/* n floats of NaN (a valid pointer for n == 0 too) */
static float *nan_floats(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    cr_assert(p);
    for (int64_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* One product C = alpha A B + beta C as the kernels see it: A(i, p) =
 * A[i * ars + p * acs], B(p, j) = B[p * brs + j * bcs], C [M, N] with row
 * stride ldc. */
typedef struct {
    const char *kernel;
    int64_t     M, N, K, ars, acs, brs, bcs, ldc;
    float       alpha, beta;
} mm_case;

/* C (after the call) against the double product from A, B and C0 (C before
 * it): each entry within 1e-5 of the sum of its terms' magnitudes (the float
 * FMA chain's error), exactly 0 when there are none; the padding and the
 * guard bit for bit as in C0. */
static void mm_check(const mm_case *s, const float *A, const float *B, const float *C0,
                     const float *C)
{
    for (int64_t i = 0; i < s->M; i++) {
        for (int64_t j = 0; j < s->N; j++) {
            double acc = 0, mag = 0;
            for (int64_t p = 0; p < s->K; p++) {
                double t = (double)A[i * s->ars + p * s->acs] * B[p * s->brs + j * s->bcs];
                acc += t;
                mag += fabs(t);
            }
            double want = s->alpha * acc, bound = fabs((double)s->alpha) * mag;
            const double c0 = C0[i * s->ldc + j];
            if (s->beta != 0) want += s->beta * c0, bound += fabs(s->beta * c0);
            const float got = C[i * s->ldc + j];
            if (!(isfinite(got) && fabs(got - want) <= 1e-5 * bound))
                cr_assert_fail("%s M=%ld N=%ld K=%ld alpha=%g beta=%g ldc=%ld: C[%ld][%ld] = "
                               "%.9g, want %.9g (bound %.3g)", s->kernel, (long)s->M,
                               (long)s->N, (long)s->K, s->alpha, s->beta, (long)s->ldc,
                               (long)i, (long)j, got, want, 1e-5 * bound);
        }
        for (int64_t j = s->N; j < s->ldc; j++)
            if (memcmp(&C[i * s->ldc + j], &C0[i * s->ldc + j], sizeof(float)))
                cr_assert_fail("%s M=%ld N=%ld K=%ld ldc=%ld: padding C[%ld][%ld] written "
                               "(%.9g)", s->kernel, (long)s->M, (long)s->N, (long)s->K,
                               (long)s->ldc, (long)i, (long)j, C[i * s->ldc + j]);
    }
    for (int64_t g = 0; g < C_GUARD; g++)
        if (memcmp(&C[s->M * s->ldc + g], &C0[s->M * s->ldc + g], sizeof(float)))
            cr_assert_fail("%s M=%ld N=%ld K=%ld ldc=%ld: wrote %ld floats past C's last row",
                           s->kernel, (long)s->M, (long)s->N, (long)s->K, (long)s->ldc,
                           (long)g + 1);
}

/* C storage [M, ldc] plus the guard: the sentinel everywhere, then the M x N
 * entries NaN (beta == 0: they must not be read) or random; C0 a copy. */
static void mm_fill_c(const mm_case *s, float **C, float **C0)
{
    const int64_t total = s->M * s->ldc + C_GUARD;
    *C = nan_floats(total);
    *C0 = nan_floats(total);
    for (int64_t k = 0; k < total; k++) (*C)[k] = SENTINEL;
    for (int64_t i = 0; i < s->M; i++)
        for (int64_t j = 0; j < s->N; j++) (*C)[i * s->ldc + j] = s->beta == 0 ? NAN : tt_vec_randn();
    memcpy(*C0, *C, sizeof(float) * (size_t)total);
}

/* tg__vec_gemm_small: A row-major [M, K] (lda = K + pad: rs = lda, cs = 1) or
 * stored transposed [K, M] (lda = M + pad: rs = 1, cs = lda); B [K, N] with
 * ldb = N + pad; C with ldc = N + pad. */
static void gemm_small_case(int64_t M, int64_t N, int64_t K, float alpha, float beta, bool ta,
                            int64_t pad)
{
    const int64_t lda = (ta ? M : K) + pad, ldb = N + pad;
    mm_case s = {"gemm_small", M, N, K, ta ? 1 : lda, ta ? lda : 1, ldb, 1, N + pad, alpha, beta};
    float *A = nan_floats((ta ? K : M) * lda), *B = nan_floats(K * ldb), *C, *C0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t p = 0; p < K; p++) A[i * s.ars + p * s.acs] = tt_vec_randn();
    for (int64_t p = 0; p < K; p++)
        for (int64_t j = 0; j < N; j++) B[p * ldb + j] = tt_vec_randn();
    mm_fill_c(&s, &C, &C0);
    tg__vec_gemm_small(M, N, K, alpha, A, s.ars, s.acs, B, ldb, beta, C, s.ldc);
    mm_check(&s, A, B, C0, C);
    free(A), free(B), free(C), free(C0);
}

/* tg__vec_gemm_nt_small: A [M, K] (lda = K + pad), B [N, K] (ldb = K + pad + 1),
 * C with ldc = N + pad. */
static void gemm_nt_case(int64_t M, int64_t N, int64_t K, float alpha, float beta, int64_t pad)
{
    const int64_t lda = K + pad, ldb = K + pad + 1;
    mm_case s = {"gemm_nt_small", M, N, K, lda, 1, 1, ldb, N + pad, alpha, beta};
    float *A = nan_floats(M * lda), *B = nan_floats(N * ldb), *C, *C0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t p = 0; p < K; p++) A[i * lda + p] = tt_vec_randn();
    for (int64_t j = 0; j < N; j++)
        for (int64_t p = 0; p < K; p++) B[j * ldb + p] = tt_vec_randn();
    mm_fill_c(&s, &C, &C0);
    tg__vec_gemm_nt_small(M, N, K, alpha, A, lda, B, ldb, beta, C, s.ldc);
    mm_check(&s, A, B, C0, C);
    free(A), free(B), free(C), free(C0);
}

/* M 1..9 (odd: a lone last row), N 1..70 (every tail 1..7 of the 8-wide
 * vectors, one and three passes of 32 columns), depths around the 8-lane
 * steps; each with beta 0 (C NaN) and beta != 0, A in both layouts, padded
 * and unpadded. */
Test(vec_kernels, gemm_small_shapes)
{
    NEED_VEC();
    tt_vec_rng_state = 11;
    static const int64_t depths[] = {0, 1, 3, 8, 13, 40};
    for (int64_t M = 1; M <= 9; M++)
        for (int64_t N = 1; N <= 70; N++)
            for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
                const int64_t K = depths[d];
                const float alpha = (M + N) % 2 ? 1.5f : -0.625f;
                for (int ta = 0; ta < 2; ta++) {
                    const int64_t pad = (N + K + ta) % 3 * 2;   /* 0, 2 or 4 */
                    gemm_small_case(M, N, K, alpha, 0, ta, pad);
                    gemm_small_case(M, N, K, alpha, ta ? 0.5f : -2.0f, ta, pad);
                }
            }
}

/* every depth 0..40 on a few shapes */
Test(vec_kernels, gemm_small_depths)
{
    NEED_VEC();
    tt_vec_rng_state = 12;
    static const int64_t shapes[][2] = {{1, 1}, {2, 7}, {3, 32}, {5, 33}, {4, 64}, {7, 39},
                                        {9, 70}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int64_t K = 0; K <= 40; K++)
            for (int ta = 0; ta < 2; ta++) {
                gemm_small_case(shapes[s][0], shapes[s][1], K, 0.75f, 0, ta, 3);
                gemm_small_case(shapes[s][0], shapes[s][1], K, -1.25f, 1.5f, ta, 0);
            }
}

/* M 1..9, N 1..70 (blocks of 4 columns and their 1..3 remainders), depth 0,
 * 1..9, and around 16, 24, 32, 40 (the masked last depth step and none) */
Test(vec_kernels, gemm_nt_small_shapes)
{
    NEED_VEC();
    tt_vec_rng_state = 13;
    static const int64_t depths[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 24, 31, 33, 40};
    for (int64_t M = 1; M <= 9; M++)
        for (int64_t N = 1; N <= 70; N++)
            for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
                const int64_t K = depths[d], pad = (M + N + K) % 3 * 3;   /* 0, 3 or 6 */
                const float alpha = (M + K) % 2 ? 0.375f : -1.75f;
                gemm_nt_case(M, N, K, alpha, 0, pad);
                gemm_nt_case(M, N, K, alpha, N % 2 ? 0.25f : -3.0f, pad);
            }
}

/* every depth 0..40 on a few shapes */
Test(vec_kernels, gemm_nt_small_depths)
{
    NEED_VEC();
    tt_vec_rng_state = 14;
    static const int64_t shapes[][2] = {{1, 1}, {2, 4}, {3, 5}, {8, 7}, {9, 64}, {5, 70}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int64_t K = 0; K <= 40; K++) {
            gemm_nt_case(shapes[s][0], shapes[s][1], K, 2.5f, 0, 1);
            gemm_nt_case(shapes[s][0], shapes[s][1], K, -0.5f, 0.75f, 0);
        }
}

/* sum x y in double: within 1e-12 of the double loop relative to sum |x y|
 * (the products are exact in double; only the order of the additions
 * differs); NaN past the end is not read; a NaN inside gives NaN. */
/* tg__vec_transpose_small: bt [K, N] = B's first K columns transposed, for
 * N a multiple of 8 and depths on both sides of a vector band; B's columns
 * past K hold NaN (not to be read into bt), and bt's guard must stay. */
Test(vec_kernels, transpose_small)
{
    NEED_VEC();
    const int64_t Ns[] = {8, 16, 32, 64}, ldb = 24;
    for (size_t a = 0; a < sizeof Ns / sizeof Ns[0]; a++)
        for (int64_t K = 1; K <= 20; K++) {
            const int64_t N = Ns[a];
            float *B = nan_floats(N * ldb), *bt = malloc(sizeof(float) * (size_t)(K * N + C_GUARD));
            cr_assert(bt);
            for (int64_t j = 0; j < N; j++)
                for (int64_t q = 0; q < K; q++) B[j * ldb + q] = (float)(j * 100 + q);
            for (int64_t i = 0; i < K * N + C_GUARD; i++) bt[i] = SENTINEL;
            tg__vec_transpose_small(B, ldb, N, K, bt);
            for (int64_t q = 0; q < K; q++)
                for (int64_t j = 0; j < N; j++)
                    cr_assert_eq(bt[q * N + j], (float)(j * 100 + q), "N %lld K %lld: [%lld, %lld]",
                                 (long long)N, (long long)K, (long long)q, (long long)j);
            for (int64_t i = K * N; i < K * N + C_GUARD; i++)
                cr_assert_eq(bt[i], SENTINEL, "N %lld K %lld: guard overwritten", (long long)N,
                             (long long)K);
            free(B);
            free(bt);
        }
}

Test(vec_kernels, dot)
{
    NEED_VEC();
    tt_vec_rng_state = 15;
    static const int64_t lengths[] = {127, 128, 129, 515};
    for (int64_t t = 1; t <= 70 + 4; t++) {
        const int64_t n = t <= 70 ? t : lengths[t - 71];
        float *x = nan_floats(n + 8), *y = nan_floats(n + 8);
        for (int64_t i = 0; i < n; i++) {
            x[i] = tt_vec_randn() * (t % 3 ? 1.0f : 1e4f);
            y[i] = tt_vec_randn() * (t % 5 ? 1.0f : 1e-3f);
        }
        double want = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            want += (double)x[i] * y[i];
            mag += fabs((double)x[i] * y[i]);
        }
        const double got = tg__vec_dot(x, y, n);
        cr_assert(fabs(got - want) <= 1e-12 * mag, "dot n=%ld: %.17g, want %.17g", (long)n, got,
                  want);
        x[n - 1] = NAN;
        cr_assert(isnan(tg__vec_dot(x, y, n)), "dot n=%ld: NaN in the last entry", (long)n);
        free(x), free(y);
    }
}

/* softmax_row_stats over the special-value rows, n 1..70, four scales:
 *  - given=false writes the stats; its y is tg__vec_softmax_row's, bit for bit;
 *  - given=true with those stats rebuilds y bit for bit and leaves them alone;
 *  - max equals the reference max(scale * x) (NaN skipped) exactly, 1 / sum
 *    agrees with the double reference within 1e-6 relative (NaN when the
 *    reference is: a NaN or +inf entry, a fully masked row);
 *  - y agrees with exp(z - max) / sum in double (all NaN on a NaN row). */
static void softmax_row_stats_check(void);

/* on the AVX2 path and, where the CPU has it, the AVX-512 one (rows over 8) */
Test(vec_kernels, softmax_row_stats)
{
    NEED_VEC();
    for (int wide = 0; wide < 2; wide++) {
        if (!tg__vec_set_avx512(wide)) continue;   /* no AVX-512: the AVX2 pass only */
        softmax_row_stats_check();
    }
    tg__vec_set_avx512(-1);
}

static void softmax_row_stats_check(void)
{
    tt_vec_rng_state = 16;
    static const float scales[] = {1.0f, 0.125f, -0.7f, 3.0f};
    for (int64_t n = 1; n <= 70; n++) {
        float *x = nan_floats(n + 8), *y0 = nan_floats(n + 8), *y1 = nan_floats(n + 8);
        float *y2 = nan_floats(n + 8);
        for (int r = 0; r < ROWS; r++) {
            tt_vec_fill_row(x, r, n);   /* x[n..n+8) stay NaN: must not be read */
            for (size_t k = 0; k < sizeof scales / sizeof *scales; k++) {
                const float sc = scales[k];
                float m = 12345.0f;
                double rs = 12345.0;
                tg__vec_softmax_row_stats(x, y1, n, sc, &m, &rs, false);
                tg__vec_softmax_row(x, y0, n, sc);
                cr_assert(!memcmp(y0, y1, sizeof(float) * (size_t)n),
                          "n=%ld row %d scale %g: stats(given=false) differs from softmax_row",
                          (long)n, r, sc);
                float m2 = m;
                double rs2 = rs;
                tg__vec_softmax_row_stats(x, y2, n, sc, &m2, &rs2, true);
                cr_assert(!memcmp(y1, y2, sizeof(float) * (size_t)n),
                          "n=%ld row %d scale %g: given=true does not rebuild y", (long)n, r, sc);
                cr_assert(!memcmp(&m, &m2, sizeof m) && !memcmp(&rs, &rs2, sizeof rs),
                          "n=%ld row %d scale %g: given=true changed the stats", (long)n, r, sc);
                for (int64_t j = n; j < n + 8; j++)
                    cr_assert(isnan(y1[j]) && isnan(y2[j]), "n=%ld: wrote y[%ld]", (long)n,
                              (long)j);
                /* the reference */
                float want_m = -INFINITY;
                for (int64_t j = 0; j < n; j++) {
                    const float z = sc * x[j];
                    if (z > want_m) want_m = z;
                }
                cr_assert(m == want_m, "n=%ld row %d scale %g: max %.9g, want %.9g", (long)n,
                          r, sc, m, want_m);
                double sum = 0;
                for (int64_t j = 0; j < n; j++) sum += exp((double)(sc * x[j]) - want_m);
                const double want_rs = 1.0 / sum;
                if (isnan(want_rs)) {
                    cr_assert(isnan(rs), "n=%ld row %d scale %g: 1/sum %.17g, want NaN",
                              (long)n, r, sc, rs);
                    for (int64_t j = 0; j < n; j++)
                        cr_assert(isnan(y1[j]), "n=%ld row %d: y[%ld] = %g on a NaN row",
                                  (long)n, r, (long)j, y1[j]);
                    continue;
                }
                cr_assert(fabs(rs - want_rs) <= 1e-6 * want_rs,
                          "n=%ld row %d scale %g: 1/sum %.17g, want %.17g", (long)n, r, sc, rs,
                          want_rs);
                for (int64_t j = 0; j < n; j++) {
                    const double want_y = exp((double)(sc * x[j]) - want_m) * want_rs;
                    cr_assert(fabs(y1[j] - want_y) <= 1e-9 + 4e-6 * want_y,
                              "n=%ld row %d scale %g: y[%ld] = %.9g, want %.9g", (long)n, r, sc,
                              (long)j, y1[j], want_y);
                }
            }
        }
        free(x), free(y0), free(y1), free(y2);
    }
}
#endif

/* tg__vec_dropout against the scalar mask of tg__drop_bits, bit for bit, in
 * its three modes: lengths 0..40 (every tail), element offsets that put the
 * 2^32 boundary of the counter's low word inside a vector, thresholds from
 * keep-all to keep-nearly-none, and NaN kept through a dropped element. */
Test(vec_kernels, dropout_matches_the_scalar_mask)
{
    NEED_VEC();
    tt_vec_rng_state = 17;
    const int64_t offsets[] = {0, 5, 1000003, ((int64_t)1 << 32) - 13, ((int64_t)1 << 32) - 3,
                               ((int64_t)3 << 32) + 7};
    const uint64_t thresholds[] = {0, 1, 429496730, 2147483648u, 4294967295u};
    const uint64_t keys[] = {0x0123456789abcdefu, 0xfedcba9876543210u};
    float src[40], dst[40], want[40], base[40];
    for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++)
        for (size_t t = 0; t < sizeof thresholds / sizeof *thresholds; t++)
            for (size_t k = 0; k < 2; k++)
                for (int64_t n = 0; n <= 40; n++)
                    for (int mode = 0; mode < 3; mode++) {
                        for (int64_t i = 0; i < 40; i++) src[i] = tt_vec_randn(), base[i] = tt_vec_randn();
                        src[n / 2] = NAN;
                        const float scale = 1.25f;
                        for (int64_t i = 0; i < 40; i++) {
                            bool keep = tg__drop_bits(keys[k], offsets[o] + i) >= thresholds[t];
                            float v = src[i] * (keep ? scale : 0.0f);
                            want[i] = i >= n ? base[i] : mode == 0 ? v
                                                      : mode == 1 ? base[i] + v : 0.0f + v;
                        }
                        memcpy(dst, base, sizeof dst);
                        tg__vec_dropout(src, dst, n, offsets[o], keys[k], thresholds[t], scale,
                                        mode);
                        for (int64_t i = 0; i < 40; i++)
                            cr_assert(memcmp(&dst[i], &want[i], sizeof(float)) == 0 ||
                                          (isnan(dst[i]) && isnan(want[i])),
                                      "offset %lld threshold %llu n %lld mode %d at %lld: %g vs %g",
                                      (long long)offsets[o], (unsigned long long)thresholds[t],
                                      (long long)n, mode, (long long)i, dst[i], want[i]);
                    }
}
