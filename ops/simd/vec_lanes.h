/*
 * vec_lanes.h - the AVX2 lane helpers of the kernels in ops/simd/ (vec.c, vec_softmax.c, vec_layernorm.c, vec_gemm.c and vec_dropout.c): the
 * target attributes, vector types, row tails (masked loads and stores),
 * constants, double halves, horizontal sums, row loops. Library-private; include
 * only inside `#if TG_VEC` after <immintrin.h>.
 */
#ifndef TG_VEC_LANES_H
#define TG_VEC_LANES_H

#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f,avx2,fma")))   /* (16-lane code, when on) */
typedef __m256 v8f;
typedef __m256d v4d;

/* ---- lanes: tails, constants, double halves ---- */

static const int32_t tail_tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

/* lanes 0 .. rem-1 set, 1 <= rem <= 8 */
AVX2 static inline __m256i tail_mask(int64_t rem)
{
    return _mm256_loadu_si256((const __m256i *)(tail_tab + 8 - rem));
}

AVX2 static inline v8f ld(const float *p, int64_t rem, __m256i m)
{
    return rem >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

/* a load with `fill` in the lanes past the end */
AVX2 static inline v8f ld_fill(const float *p, int64_t rem, __m256i m, float fill)
{
    if (rem >= 8) return _mm256_loadu_ps(p);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m),
                            _mm256_castsi256_ps(m));
}

AVX2 static inline void st(float *p, v8f v, int64_t rem, __m256i m)
{
    if (rem >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, m, v);
}

AVX2 static inline v8f K(float c) { return _mm256_set1_ps(c); }

AVX2 static inline v4d lo_d(v8f v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
AVX2 static inline v4d hi_d(v8f v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }
AVX2 static inline v8f from_d(v4d lo, v4d hi)
{
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
}

AVX2 static inline double hsum_d(v4d a)
{
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

AVX2 static inline float hmax(v8f a)
{
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

/* a row of n in steps of 8 lanes; inside, REM is the number of valid lanes
 * from i (>= 8 means all) */
#define FOR_LANES(i, n)                                                         \
    for (int64_t i = 0, rem_ = (n); rem_ > 0; i += 8, rem_ -= 8)
#define REM rem_

#endif
