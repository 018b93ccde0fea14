/*
 * vec_layernorm.c - AVX2 float32 layer-norm rows: forward, the input's
 * gradient and the parameters' gradient sums (the portable reference is
 * ops/layernorm.c's generic kernel, in the same order). See vec.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "vec.h"

#if TG_VEC
#include <immintrin.h>

#include "vec_lanes.h"

/* ---- layer norm ---- */

/* forward: mean and var in double (two passes), then in float, in the
 * portable kernel's order: xh = (x - m) * r; xh *= gamma; y = xh + beta */
AVX2 void tg__vec_ln_row(const float *x, float *y, const float *gamma, const float *beta, int64_t N,
                         double eps, double *mean_out, double *rstd_out)
{
    v4d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    FOR_LANES(i, N) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f a = ld(x + i, REM, m);   /* zeros past the end */
        s0 = _mm256_add_pd(s0, lo_d(a));
        s1 = _mm256_add_pd(s1, hi_d(a));
    }
    double mean = hsum_d(_mm256_add_pd(s0, s1)) / (double)N;
    v4d vmean = _mm256_set1_pd(mean);
    s0 = s1 = _mm256_setzero_pd();
    FOR_LANES(i, N) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f a = ld(x + i, REM, m);
        v4d d0 = _mm256_sub_pd(lo_d(a), vmean), d1 = _mm256_sub_pd(hi_d(a), vmean);
        if (REM < 8) {   /* the lanes past the end would add mean^2: zero them */
            __m256i m0 = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(m));
            __m256i m1 = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(m, 1));
            d0 = _mm256_and_pd(d0, _mm256_castsi256_pd(m0));
            d1 = _mm256_and_pd(d1, _mm256_castsi256_pd(m1));
        }
        s0 = _mm256_fmadd_pd(d0, d0, s0);
        s1 = _mm256_fmadd_pd(d1, d1, s1);
    }
    double rstd = 1.0 / sqrt(hsum_d(_mm256_add_pd(s0, s1)) / (double)N + eps);
    *mean_out = mean;
    *rstd_out = rstd;
    v8f vm = K((float)mean), vr = K((float)rstd);
    FOR_LANES(i, N) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f xh = _mm256_mul_ps(_mm256_sub_ps(ld(x + i, REM, m), vm), vr);
        if (gamma) xh = _mm256_mul_ps(xh, ld(gamma + i, REM, m));
        if (beta) xh = _mm256_add_ps(xh, ld(beta + i, REM, m));
        st(y + i, xh, REM, m);
    }
}

/* backward: g = dy * gamma, xh = (x - m) * r;
 *   dx += r * (g - mean(g) - xh * mean(g xh))   (the means in double) */
AVX2 void tg__vec_ln_row_backward(const float *x, const float *dy, float *dx, const float *gamma,
                                  int64_t N, double mean, double rstd, bool fresh)
{
    v8f vm = K((float)mean), vr = K((float)rstd);
    v4d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    v4d t0 = _mm256_setzero_pd(), t1 = _mm256_setzero_pd();
    FOR_LANES(i, N) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f g = ld(dy + i, REM, m);   /* zeros past the end: add nothing */
        if (gamma) g = _mm256_mul_ps(g, ld(gamma + i, REM, m));
        v8f xh = _mm256_mul_ps(_mm256_sub_ps(ld(x + i, REM, m), vm), vr);
        s0 = _mm256_add_pd(s0, lo_d(g));
        s1 = _mm256_add_pd(s1, hi_d(g));
        t0 = _mm256_fmadd_pd(lo_d(g), lo_d(xh), t0);
        t1 = _mm256_fmadd_pd(hi_d(g), hi_d(xh), t1);
    }
    v8f mg = K((float)(hsum_d(_mm256_add_pd(s0, s1)) / (double)N));
    v8f mgx = K((float)(hsum_d(_mm256_add_pd(t0, t1)) / (double)N));
    FOR_LANES(i, N) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f g = ld(dy + i, REM, m);
        if (gamma) g = _mm256_mul_ps(g, ld(gamma + i, REM, m));
        v8f xh = _mm256_mul_ps(_mm256_sub_ps(ld(x + i, REM, m), vm), vr);
        v8f d = _mm256_mul_ps(vr, _mm256_sub_ps(_mm256_sub_ps(g, mg), _mm256_mul_ps(xh, mgx)));
        v8f base = fresh ? _mm256_setzero_ps() : ld(dx + i, REM, m);
        st(dx + i, _mm256_add_ps(base, d), REM, m);
    }
}

/* dgamma / dbeta accumulation, one row: the portable arithmetic, 4 columns at a time */
AVX2 void tg__vec_ln_param_row(const float *x, const float *dy, double mean, double rstd,
                               double *acc_g, double *acc_b, int64_t n)
{
    v4d vm = _mm256_set1_pd(mean), vr = _mm256_set1_pd(rstd);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        v4d d = _mm256_cvtps_pd(_mm_loadu_ps(dy + j)), a = _mm256_cvtps_pd(_mm_loadu_ps(x + j));
        v4d xh = _mm256_mul_pd(_mm256_sub_pd(a, vm), vr);
        _mm256_storeu_pd(acc_g + j, _mm256_add_pd(_mm256_loadu_pd(acc_g + j), _mm256_mul_pd(d, xh)));
        _mm256_storeu_pd(acc_b + j, _mm256_add_pd(_mm256_loadu_pd(acc_b + j), d));
    }
    for (; j < n; j++) {
        acc_g[j] += (double)dy[j] * (((double)x[j] - mean) * rstd);
        acc_b[j] += dy[j];
    }
}

/* acc[j] += x[j] for j < n, in double (a column sum's row: linear's bias gradient) */
AVX2 void tg__vec_acc_row(const float *x, double *acc, int64_t n)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        v8f a = _mm256_loadu_ps(x + j);
        _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), lo_d(a)));
        _mm256_storeu_pd(acc + j + 4, _mm256_add_pd(_mm256_loadu_pd(acc + j + 4), hi_d(a)));
    }
    for (; j < n; j++) acc[j] += x[j];
}

#endif /* TG_VEC */
