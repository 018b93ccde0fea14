/*
 * vec.c - AVX2 + FMA float32 row kernels and vector maths (see vec.h).
 *
 * Each routine walks its row 8 floats at a time; the last 1..7 go through
 * the same code with masked loads and stores, so every element sees the same
 * arithmetic whatever its position. Sums are kept in double (two 4-wide
 * accumulators), as in the portable kernels. The maths and the GELU rows are
 * written once in vec_math.h and instantiated here for AVX2 and for AVX-512
 * (16 lanes, the same bits; GELU takes it when tg__vec_avx512_on(): 1.9x the
 * AVX2 rate here, 0.63 against 1.17 ns per element on one thread).
 *
 * The maths (coefficients fitted for this file by weighted least squares,
 * iterated to near-minimax, on Chebyshev nodes):
 *   exp(x):  n = round(x / ln2), r = x - n ln2 (Cody-Waite, ln2 in two
 *            parts), e^r = 1 + r + r^2 Q(r) with Q of degree 5 (relative
 *            error 6e-11 on |r| <= ln2/2), times 2^n built in two halves so
 *            subnormal results round once. x is clamped to [-104, 89] first:
 *            below, the result is 0 (those lanes computed as exp(0), then
 *            zeroed); above, it overflows to +inf; NaN is passed through.
 *   erf(x):  |x| <= 0.93: x + x P(x^2), P of degree 5 (relative 2e-8);
 *            above: sign(x) (1 - exp(F(|x|))), F of degree 7 fitting
 *            log(erfc) on [0.92, 4] (erfc absolute 4e-11); |x| >= 4 gives 1.
 *   tanh(x): |x| < 0.625: x + x^3 P(x^2), P of degree 4 (relative 4e-9);
 *            above: sign(x) (1 - 2 / (exp(2|x|) + 1)), |x| clamped at 10.
 *
 * The fused attention's tiny heads (at most 16 keys, AVX-512) have their
 * rows here too, sharing vexp16: tg__vec_attn_rows16, tg__vec_attn_pv16.
 *
 * Not here: -ffast-math style shortcuts (NaN and inf follow IEEE, as the
 * portable path), F64, the strided rows.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "vec.h"

#if TG_VEC
#include <immintrin.h>
#endif

/* ---- the switches ----
 * Each is decided on first use, from what the CPU has and an environment
 * variable that turns it off (non-empty, not "0"), unless set before. */

typedef struct vec_switch {
    atomic_int  mode;               /* -1: not decided yet; 0: off; 1: on */
    const char *env;                /* turns it off */
    bool      (*supported)(void);   /* the CPU can */
} vec_switch;

static int switch_auto(const vec_switch *w)
{
    const char *env = getenv(w->env);
    if (env && *env && strcmp(env, "0") != 0) return 0;
    return w->supported();
}

static bool switch_on(vec_switch *w)
{
    int m = atomic_load_explicit(&w->mode, memory_order_relaxed);
    if (m < 0) {
        m = switch_auto(w);
        atomic_store(&w->mode, m);
    }
    return m == 1;
}

static bool switch_set(vec_switch *w, int mode)
{
    if (mode == 1 && !w->supported()) return false;
    atomic_store(&w->mode, mode == 0 ? 0 : mode == 1 ? 1 : switch_auto(w));
    return true;
}

bool tg__vec_supported(void)
{
#if TG_VEC
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("popcnt");
#else
    return false;
#endif
}

static bool avx512_supported(void)
{
#if TG_VEC
    return tg__vec_supported() && __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

static vec_switch vec_sw = {-1, "TG_NO_SIMD", tg__vec_supported};      /* the vector path */
static vec_switch avx512_sw = {-1, "TG_NO_AVX512", avx512_supported};  /* AVX-512 on top */

bool tg__vec_on(void) { return switch_on(&vec_sw); }
bool tg__vec_set(int mode) { return switch_set(&vec_sw, mode); }
bool tg__vec_avx512_on(void) { return tg__vec_on() && switch_on(&avx512_sw); }
bool tg__vec_set_avx512(int mode) { return switch_set(&avx512_sw, mode); }

#if TG_VEC

#include "vec_lanes.h"

/* ---- the maths ---- */

/* AVX2 instances: vexp, verf, vtanh, gelu_row, gelu_backward_row */
#define GELU_SQRT1_2 0.70710678118654752440f        /* 1/sqrt(2) */
#define GELU_INV_SQRT_2PI 0.39894228040143267794f   /* 1/sqrt(2 pi) */
#define GELU_K_TANH 0.79788456080286535588f         /* sqrt(2/pi) */
#define GELU_C 0.044715f

#define VM_ATTR AVX2
#define VM_SUF(name) name
#define VM_F v8f
#define VM_I __m256i
#define VM_MASK v8f
#define VM_TAILM __m256i
#define VM_LANES 8
#define VM_SET1(c) _mm256_set1_ps(c)
#define VM_ADD _mm256_add_ps
#define VM_SUB _mm256_sub_ps
#define VM_MUL _mm256_mul_ps
#define VM_DIV _mm256_div_ps
#define VM_MIN _mm256_min_ps
#define VM_MAX _mm256_max_ps
#define VM_FMA _mm256_fmadd_ps
#define VM_FNMA _mm256_fnmadd_ps
#define VM_ROUND(x) _mm256_round_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VM_CVT _mm256_cvtps_epi32
#define VM_ABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (x))
#define VM_COPYSIGN(a, b) _mm256_or_ps(VM_ABS(a), _mm256_and_ps(_mm256_set1_ps(-0.0f), (b)))
#define VM_ISET1 _mm256_set1_epi32
#define VM_IADD _mm256_add_epi32
#define VM_ISUB _mm256_sub_epi32
#define VM_ISRA1(i) _mm256_srai_epi32((i), 1)
#define VM_BITS_F(i) _mm256_castsi256_ps(_mm256_slli_epi32((i), 23))
#define VM_LT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define VM_GT(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define VM_GE(a, b) _mm256_cmp_ps((a), (b), _CMP_GE_OQ)
#define VM_NAN(x) _mm256_cmp_ps((x), (x), _CMP_UNORD_Q)
#define VM_BLEND(m, a, b) _mm256_blendv_ps((a), (b), (m))
#define VM_ZERO_IF(m, a) _mm256_andnot_ps((m), (a))
#define VM_TAIL(rem) tail_mask((rem) < 8 ? (rem) : 8)
#define VM_LOAD(p, rem, m) ld((p), (rem), (m))
#define VM_STORE(p, v, rem, m) st((p), (v), (rem), (m))
#include "vec_math.h"   /* (it #undefs the VM_ macros) */

/* AVX-512 instances, the same code 16 lanes wide: vexp16, ..., gelu_row16 */
#define VM_ATTR AVX512
#define VM_SUF(name) name##16
#define VM_F __m512
#define VM_I __m512i
#define VM_MASK __mmask16
#define VM_TAILM __mmask16
#define VM_LANES 16
#define VM_SET1(c) _mm512_set1_ps(c)
#define VM_ADD _mm512_add_ps
#define VM_SUB _mm512_sub_ps
#define VM_MUL _mm512_mul_ps
#define VM_DIV _mm512_div_ps
#define VM_MIN _mm512_min_ps
#define VM_MAX _mm512_max_ps
#define VM_FMA _mm512_fmadd_ps
#define VM_FNMA _mm512_fnmadd_ps
#define VM_ROUND(x) _mm512_roundscale_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VM_CVT _mm512_cvtps_epi32
#define VM_ABS(x) _mm512_abs_ps(x)
#define VM_COPYSIGN(a, b)                                                                 \
    _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(_mm512_abs_ps(a)),             \
                                        _mm512_and_epi32(_mm512_set1_epi32(INT32_MIN),     \
                                                         _mm512_castps_si512(b))))
#define VM_ISET1 _mm512_set1_epi32
#define VM_IADD _mm512_add_epi32
#define VM_ISUB _mm512_sub_epi32
#define VM_ISRA1(i) _mm512_srai_epi32((i), 1)
#define VM_BITS_F(i) _mm512_castsi512_ps(_mm512_slli_epi32((i), 23))
#define VM_LT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define VM_GT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define VM_GE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GE_OQ)
#define VM_NAN(x) _mm512_cmp_ps_mask((x), (x), _CMP_UNORD_Q)
#define VM_BLEND(m, a, b) _mm512_mask_blend_ps((m), (a), (b))
#define VM_ZERO_IF(m, a) _mm512_maskz_mov_ps((__mmask16)~(m), (a))
#define VM_TAIL(rem) ((rem) >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (rem)) - 1))
#define VM_LOAD(p, rem, m) _mm512_maskz_loadu_ps((m), (p))
#define VM_STORE(p, v, rem, m) _mm512_mask_storeu_ps((p), (m), (v))
#include "vec_math.h"   /* (it #undefs the VM_ macros) */

#define MAP(name, fn)                                                           \
    AVX2 void name(const float *x, float *y, int64_t n)                         \
    {                                                                           \
        FOR_LANES(i, n) {                                                       \
            __m256i m = tail_mask(REM < 8 ? REM : 8);                           \
            st(y + i, fn(ld(x + i, REM, m)), REM, m);                           \
        }                                                                       \
    }
MAP(tg__vec_exp, vexp)
MAP(tg__vec_erf, verf)
MAP(tg__vec_tanh, vtanh)

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

/* ---- GELU ---- */

/* GELU (vec_math.h), 16 lanes wide when tg__vec_avx512_on() */
AVX2 void tg__vec_gelu(const float *x, float *y, int64_t n, bool tanh_form)
{
    if (tg__vec_avx512_on()) gelu_row16(x, y, n, tanh_form);
    else gelu_row(x, y, n, tanh_form);
}

AVX2 void tg__vec_gelu_backward(const float *x, const float *dy, float *dx, int64_t n,
                                bool tanh_form, bool fresh)
{
    if (tg__vec_avx512_on()) gelu_backward_row16(x, dy, dx, n, tanh_form, fresh);
    else gelu_backward_row(x, dy, dx, n, tanh_form, fresh);
}

#endif /* TG_VEC */
