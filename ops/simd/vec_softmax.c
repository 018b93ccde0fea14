/*
 * vec_softmax.c - AVX2 (+ AVX-512 for short rows) float32 softmax and
 * log_softmax rows, forward and backward, and the fused attention's tiny
 * heads (at most 16 keys, AVX-512: tg__vec_attn_rows16, tg__vec_attn_pv16).
 * The portable reference is ops/softmax.c's generic kernel; the arithmetic
 * order is the same, so the bits are. See vec.h for the contracts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "vec.h"

#if TG_VEC
#include <immintrin.h>

#include "vec_lanes.h"
#include "vec_math_inst.h"

/* ---- softmax ---- */

/* forward: z = scale x, m = max z (NaN entries skipped, as the portable
 * `if (z > m)`), e = exp(z - m), y = e / sum e. An all -inf row has m = -inf
 * and z - m = NaN: a NaN row; a NaN or +inf entry makes the sum NaN: a NaN row. */
/* A row of at most 16 held in two registers: the arithmetic of the loops
 * below, in their order (so the same bits), without the three passes. The
 * lanes past the end go into exp as 0 - max, never as -inf: exp of -inf
 * would go through subnormal products, which cost microcode assists. */
AVX2 static void softmax_row_short(const float *x, float *y, int64_t n, float scale,
                                   float *max, double *rsum, bool given)
{
    const int64_t n1 = n - 8;   /* lanes in the second register (<= 0: none) */
    const __m256i m0 = tail_mask(n < 8 ? n : 8), m1 = tail_mask(n1 > 0 ? n1 : 1);
    const v8f k0 = _mm256_castsi256_ps(m0), k1 = _mm256_castsi256_ps(m1);
    v8f vs = K(scale);
    v8f z0 = _mm256_mul_ps(ld(x, n, m0), vs);
    v8f z1 = n1 > 0 ? _mm256_mul_ps(ld(x + 8, n1, m1), vs) : K(0.0f);
    float mxs = given ? *max : -INFINITY;
    if (!given) {
        v8f vm = _mm256_max_ps(n < 8 ? _mm256_blendv_ps(K(-INFINITY), z0, k0) : z0, K(-INFINITY));
        if (n1 > 0) vm = _mm256_max_ps(n1 < 8 ? _mm256_blendv_ps(K(-INFINITY), z1, k1) : z1, vm);
        mxs = hmax(vm);
    }
    v8f mx = K(mxs);
    v8f e0 = vexp(_mm256_sub_ps(z0, mx));
    if (n < 8) e0 = _mm256_and_ps(e0, k0);
    v4d s0 = _mm256_add_pd(_mm256_setzero_pd(), lo_d(e0));
    v4d s1 = _mm256_add_pd(_mm256_setzero_pd(), hi_d(e0));
    v8f e1 = K(0.0f);
    if (n1 > 0) {
        e1 = vexp(_mm256_sub_ps(z1, mx));
        if (n1 < 8) e1 = _mm256_and_ps(e1, k1);
        s0 = _mm256_add_pd(s0, lo_d(e1));
        s1 = _mm256_add_pd(s1, hi_d(e1));
    }
    double rs = given ? *rsum : 1.0 / hsum_d(_mm256_add_pd(s0, s1));
    v4d r = _mm256_set1_pd(rs);
    st(y, from_d(_mm256_mul_pd(lo_d(e0), r), _mm256_mul_pd(hi_d(e0), r)), n, m0);
    if (n1 > 0) st(y + 8, from_d(_mm256_mul_pd(lo_d(e1), r), _mm256_mul_pd(hi_d(e1), r)), n1, m1);
    if (!given) *max = mxs, *rsum = rs;
}

/* The same softmax 16 lanes wide (AVX-512 on): the same steps, each sum in
 * double over two 8-wide accumulators (lanes 0-7 and 8-15 of each vector),
 * so its bits may differ from the AVX2 path's in the last place. */
AVX512 static inline __m512d lo16_d(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
AVX512 static inline __m512d hi16_d(__m512 v)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
AVX512 static inline __m512 from16_d(__m512d lo, __m512d hi)
{
    __m512d l = _mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)));
    return _mm512_castpd_ps(_mm512_insertf64x4(l, _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
}
#define TAIL16(rem) ((rem) >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (rem)) - 1))

AVX512 static void softmax_row_stats16(const float *x, float *y, int64_t n, float scale,
                                       float *max, double *rsum, bool given)
{
    const __m512 vs = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(-INFINITY);
    float mxs = given ? *max : -INFINITY;
    if (!given) {
        __m512 vm = ninf;
        for (int64_t i = 0; i < n; i += 16) {
            const __mmask16 m = TAIL16(n - i);
            __m512 z = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs);
            vm = _mm512_max_ps(_mm512_mask_blend_ps(m, ninf, z), vm);   /* NaN z: vm back */
        }
        mxs = _mm512_reduce_max_ps(vm);
    }
    const __m512 mx = _mm512_set1_ps(mxs);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = TAIL16(n - i);
        /* lanes past the end: exp(0 - max), zeroed after (never exp(-inf)) */
        __m512 e = vexp16(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs), mx));
        e = _mm512_maskz_mov_ps(m, e);
        _mm512_mask_storeu_ps(y + i, m, e);
        if (!given) {
            s0 = _mm512_add_pd(s0, lo16_d(e));
            s1 = _mm512_add_pd(s1, hi16_d(e));
        }
    }
    double rs = given ? *rsum : 1.0 / _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    const __m512d r = _mm512_set1_pd(rs);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = TAIL16(n - i);
        __m512 e = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(y + i, m, from16_d(_mm512_mul_pd(lo16_d(e), r), _mm512_mul_pd(hi16_d(e), r)));
    }
    if (!given) *max = mxs, *rsum = rs;
}

/* A tiny head's rows (vec.h), transposed: lanes are query rows. Q^T comes
 * from tg__vec_transpose16, then key j's scores for all the rows are one
 * register (FMAs over the depth in order), and the softmax runs down the
 * keys: a max, then exp and the sums in double (lanes 0-7 and 8-15 of each
 * key in turn), one division for all the rows, then P^T (into pt [n, 16]).
 * Nothing is reduced across lanes. P V takes P's entries as broadcasts. */
AVX512 void tg__vec_attn_rows16(const float *q, int64_t ldq, int64_t E, const float *k,
                                int64_t ldk, int64_t rows, int64_t n, int64_t i0, bool causal,
                                float scale, double *st, bool given, float *pt, float *qt)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY), vs = _mm512_set1_ps(scale);
    const __mmask16 rm = TAIL16(rows);
    /* lanes r valid for key j: r < rows, and with the causal mask i0 + r >= j */
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i row_of = _mm512_add_epi32(lane, _mm512_set1_epi32((int32_t)i0));
#define VALID(j) (causal ? (__mmask16)(rm & _mm512_cmpge_epi32_mask(row_of, _mm512_set1_epi32((int32_t)(j)))) : rm)
    tg__vec_transpose16(q, ldq, rows, E, qt, 16);
    for (int64_t j0 = 0; j0 < n; j0 += 4) {   /* four keys at a time, a chain each */
        const int64_t nk = n - j0 < 4 ? n - j0 : 4;
        const float *k0 = k + j0 * ldk, *k1 = nk > 1 ? k0 + ldk : k0;
        const float *k2 = nk > 2 ? k0 + 2 * ldk : k0, *k3 = nk > 3 ? k0 + 3 * ldk : k0;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t e = 0; e < E; e++) {
            const __m512 x = _mm512_loadu_ps(qt + 16 * e);
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(k0[e]), x, a0);
            a1 = _mm512_fmadd_ps(_mm512_set1_ps(k1[e]), x, a1);
            a2 = _mm512_fmadd_ps(_mm512_set1_ps(k2[e]), x, a2);
            a3 = _mm512_fmadd_ps(_mm512_set1_ps(k3[e]), x, a3);
        }
        float *z = pt + 16 * j0;   /* z = scale s */
        _mm512_storeu_ps(z, _mm512_mul_ps(a0, vs));
        if (nk > 1) _mm512_storeu_ps(z + 16, _mm512_mul_ps(a1, vs));
        if (nk > 2) _mm512_storeu_ps(z + 32, _mm512_mul_ps(a2, vs));
        if (nk > 3) _mm512_storeu_ps(z + 48, _mm512_mul_ps(a3, vs));
    }
    float mf[16];
    double rf[16];
    __m512 mx;
    __m512d r0, r1;
    if (given) {
        for (int64_t r = 0; r < 16; r++) {
            mf[r] = r < rows ? (float)st[2 * r] : 0.0f;
            rf[r] = r < rows ? st[2 * r + 1] : 0.0;
        }
        mx = _mm512_loadu_ps(mf);
        r0 = _mm512_loadu_pd(rf), r1 = _mm512_loadu_pd(rf + 8);
    } else {
        mx = ninf;   /* (a NaN z leaves the max as it was) */
        for (int64_t j = 0; j < n; j++)
            mx = _mm512_max_ps(_mm512_mask_blend_ps(VALID(j), ninf, _mm512_loadu_ps(pt + 16 * j)),
                               mx);
    }
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t j = 0; j < n; j++) {
        const __mmask16 m = VALID(j);
        /* (invalid lanes: exp(z - max) or exp(0 - max), then 0; never exp(-inf)) */
        const __m512 z = _mm512_maskz_loadu_ps(m, pt + 16 * j);
        const __m512 e = _mm512_maskz_mov_ps(m, vexp16(_mm512_sub_ps(z, mx)));
        _mm512_storeu_ps(pt + 16 * j, e);
        if (!given) s0 = _mm512_add_pd(s0, lo16_d(e)), s1 = _mm512_add_pd(s1, hi16_d(e));
    }
    if (!given) {
        const __m512d one = _mm512_set1_pd(1.0);   /* (rows past the block: 0) */
        r0 = _mm512_maskz_div_pd((__mmask8)rm, one, s0);
        r1 = _mm512_maskz_div_pd((__mmask8)(rm >> 8), one, s1);
        _mm512_storeu_ps(mf, mx);
        _mm512_storeu_pd(rf, r0);
        _mm512_storeu_pd(rf + 8, r1);
        for (int64_t r = 0; r < rows; r++) st[2 * r] = mf[r], st[2 * r + 1] = rf[r];
    }
    for (int64_t j = 0; j < n; j++) {
        const __m512 e = _mm512_loadu_ps(pt + 16 * j);
        _mm512_storeu_ps(pt + 16 * j, from16_d(_mm512_mul_pd(lo16_d(e), r0),
                                               _mm512_mul_pd(hi16_d(e), r1)));
    }
#undef VALID
}

/* y[r] = sum_j P(r, j) V[j] for r < rows from pt (P^T, [n, 16]): eight rows
 * at a time, a chain over the keys in order for each 16 columns of a row */
AVX512 void tg__vec_attn_pv16(const float *pt, int64_t rows, int64_t n, const float *v,
                              int64_t ldv, int64_t D, float *y, int64_t ldy)
{
    for (int64_t r0 = 0; r0 < rows; r0 += 8) {
        const int64_t nr = rows - r0 < 8 ? rows - r0 : 8;
        for (int64_t d0 = 0; d0 < D; d0 += 16) {
            const __mmask16 dm = TAIL16(D - d0);
            /* (named accumulators: an array of them was kept on the stack by gcc,
             * every FMA a load and a store, 30% slower on some stack offsets) */
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
                   a6 = a0, a7 = a0;
            for (int64_t j = 0; j < n; j++) {
                const __m512 vj = _mm512_maskz_loadu_ps(dm, v + j * ldv + d0);
                const float *pj = pt + 16 * j + r0;
                a0 = _mm512_fmadd_ps(_mm512_set1_ps(pj[0]), vj, a0);
                a1 = _mm512_fmadd_ps(_mm512_set1_ps(pj[1]), vj, a1);
                a2 = _mm512_fmadd_ps(_mm512_set1_ps(pj[2]), vj, a2);
                a3 = _mm512_fmadd_ps(_mm512_set1_ps(pj[3]), vj, a3);
                a4 = _mm512_fmadd_ps(_mm512_set1_ps(pj[4]), vj, a4);
                a5 = _mm512_fmadd_ps(_mm512_set1_ps(pj[5]), vj, a5);
                a6 = _mm512_fmadd_ps(_mm512_set1_ps(pj[6]), vj, a6);
                a7 = _mm512_fmadd_ps(_mm512_set1_ps(pj[7]), vj, a7);
            }
            const __m512 acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
            for (int64_t u = 0; u < nr; u++) _mm512_mask_storeu_ps(y + (r0 + u) * ldy + d0, dm, acc[u]);
        }
    }
}
#undef TAIL16

AVX2 void tg__vec_softmax_row_stats(const float *x, float *y, int64_t n, float scale,
                                    float *max, double *rsum, bool given)
{
    if (n > 8 && tg__vec_avx512_on()) {   /* (up to 8 the short AVX2 path is faster) */
        softmax_row_stats16(x, y, n, scale, max, rsum, given);
        return;
    }
    if (n > 0 && n <= 16) {
        softmax_row_short(x, y, n, scale, max, rsum, given);
        return;
    }
    v8f vs = K(scale);
    float mxs = given ? *max : -INFINITY;
    if (!given) {
        v8f vm = K(-INFINITY);
        FOR_LANES(i, n) {
            __m256i m = tail_mask(REM < 8 ? REM : 8);
            /* -inf in the lanes past the end after the scaling: a negative
             * scale would make a -inf fill +inf */
            v8f z = _mm256_mul_ps(ld(x + i, REM, m), vs);
            if (REM < 8) z = _mm256_blendv_ps(K(-INFINITY), z, _mm256_castsi256_ps(m));
            vm = _mm256_max_ps(z, vm);   /* a NaN z gives vm back */
        }
        mxs = hmax(vm);
    }
    v8f mx = K(mxs);
    v4d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f e = vexp(_mm256_sub_ps(_mm256_mul_ps(ld(x + i, REM, m), vs), mx));
        if (REM < 8) e = _mm256_and_ps(e, _mm256_castsi256_ps(m));
        st(y + i, e, REM, m);
        if (!given) {
            s0 = _mm256_add_pd(s0, lo_d(e));
            s1 = _mm256_add_pd(s1, hi_d(e));
        }
    }
    double rs = given ? *rsum : 1.0 / hsum_d(_mm256_add_pd(s0, s1));
    v4d r = _mm256_set1_pd(rs);
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f e = ld(y + i, REM, m);
        st(y + i, from_d(_mm256_mul_pd(lo_d(e), r), _mm256_mul_pd(hi_d(e), r)), REM, m);
    }
    if (!given) *max = mxs, *rsum = rs;
}

AVX2 void tg__vec_softmax_row(const float *x, float *y, int64_t n, float scale)
{
    float m;
    double r;
    tg__vec_softmax_row_stats(x, y, n, scale, &m, &r, false);
}

AVX2 double tg__vec_dot(const float *x, const float *y, int64_t n)
{
    v4d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f a = ld(x + i, REM, m), b = ld(y + i, REM, m);
        s0 = _mm256_fmadd_pd(lo_d(a), lo_d(b), s0);
        s1 = _mm256_fmadd_pd(hi_d(a), hi_d(b), s1);
    }
    return hsum_d(_mm256_add_pd(s0, s1));
}

/* backward: dx += scale * y * (dy - sum(dy y)), in double as the portable one */
AVX2 void tg__vec_softmax_row_backward(const float *y, const float *dy, float *dx, int64_t n,
                                       float scale)
{
    v4d dot = _mm256_set1_pd(tg__vec_dot(y, dy, n)), sc = _mm256_set1_pd(scale);
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f a = ld(y + i, REM, m), b = ld(dy + i, REM, m);
        v4d lo = _mm256_mul_pd(sc, _mm256_mul_pd(lo_d(a), _mm256_sub_pd(lo_d(b), dot)));
        v4d hi = _mm256_mul_pd(sc, _mm256_mul_pd(hi_d(a), _mm256_sub_pd(hi_d(b), dot)));
        st(dx + i, _mm256_add_ps(ld(dx + i, REM, m), from_d(lo, hi)), REM, m);
    }
}

/* forward: y = (x - m) - log(sum exp(x - m)), the subtraction of the log in double */
AVX2 void tg__vec_log_softmax_row(const float *x, float *y, int64_t n)
{
    v8f vm = K(-INFINITY);
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        vm = _mm256_max_ps(ld_fill(x + i, REM, m, -INFINITY), vm);
    }
    v8f mx = K(hmax(vm));
    v4d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f e = vexp(_mm256_sub_ps(ld(x + i, REM, m), mx));
        if (REM < 8) e = _mm256_and_ps(e, _mm256_castsi256_ps(m));
        s0 = _mm256_add_pd(s0, lo_d(e));
        s1 = _mm256_add_pd(s1, hi_d(e));
    }
    v4d lse = _mm256_set1_pd(log(hsum_d(_mm256_add_pd(s0, s1))));
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f d = _mm256_sub_ps(ld(x + i, REM, m), mx);
        st(y + i, from_d(_mm256_sub_pd(lo_d(d), lse), _mm256_sub_pd(hi_d(d), lse)), REM, m);
    }
}

/* backward: dx += dy - exp(y) * sum(dy) */
AVX2 void tg__vec_log_softmax_row_backward(const float *y, const float *dy, float *dx, int64_t n)
{
    v4d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f b = ld(dy + i, REM, m);
        s0 = _mm256_add_pd(s0, lo_d(b));
        s1 = _mm256_add_pd(s1, hi_d(b));
    }
    v4d sdy = _mm256_set1_pd(hsum_d(_mm256_add_pd(s0, s1)));
    FOR_LANES(i, n) {
        __m256i m = tail_mask(REM < 8 ? REM : 8);
        v8f e = vexp(ld(y + i, REM, m)), b = ld(dy + i, REM, m);
        v4d lo = _mm256_sub_pd(lo_d(b), _mm256_mul_pd(lo_d(e), sdy));
        v4d hi = _mm256_sub_pd(hi_d(b), _mm256_mul_pd(hi_d(e), sdy));
        st(dx + i, _mm256_add_ps(ld(dx + i, REM, m), from_d(lo, hi)), REM, m);
    }
}

#endif /* TG_VEC */
