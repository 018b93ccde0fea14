/*
 * vec_dropout.c - the dropout mask of tg__drop_bits (ops/ops_internal.h), 8
 * lanes at a time with AVX2 (see vec.h): tg_dropout's rows and the fused
 * attention's (ops/sdpa.c), the same bits as the portable loop.
 */
#include "ops_internal.h"
#include "vec.h"

#if TG_VEC
#include <immintrin.h>

#include "vec_lanes.h"

/* ---- dropout ---- */

/* tg__lowbias32 (ops_internal.h), 8 lanes */
AVX2 static inline __m256i lowbias32_v(__m256i x)
{
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x7feb352du));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x846ca68bu));
    return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

/* The bits of tg__drop_bits for 8 consecutive elements from i (the lanes'
 * low words do not wrap: the caller checks), compared with the threshold:
 * all-ones lanes where kept. */
AVX2 static inline __m256i drop_keep(int64_t i, uint64_t key, __m256i thr_biased)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i x = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)(uint64_t)i), lane);
    x = lowbias32_v(_mm256_xor_si256(x, _mm256_set1_epi32((int)(uint32_t)key)));
    x = _mm256_xor_si256(x, _mm256_set1_epi32((int)((uint32_t)((uint64_t)i >> 32) ^
                                                    (uint32_t)(key >> 32))));
    x = lowbias32_v(x);
    /* unsigned x >= t  <=>  !(t > x), compared signed with the top bits flipped */
    __m256i xb = _mm256_xor_si256(x, _mm256_set1_epi32((int)0x80000000u));
    return _mm256_xor_si256(_mm256_cmpgt_epi32(thr_biased, xb), _mm256_set1_epi32(-1));
}

AVX2 void tg__vec_dropout(const float *src, float *dst, int64_t n, int64_t i0, uint64_t key,
                          uint64_t threshold, float scale, int mode)
{
    const __m256i tb = _mm256_set1_epi32((int)((uint32_t)threshold ^ 0x80000000u));
    const v8f vs = K(scale);
    FOR_LANES(j, n) {
        const int64_t i = i0 + j, cnt = REM < 8 ? REM : 8;
        __m256i m = tail_mask(cnt);
        v8f keep;
        if ((uint32_t)(uint64_t)i <= 0xfffffff8u) {
            keep = _mm256_and_ps(vs, _mm256_castsi256_ps(drop_keep(i, key, tb)));
        } else {   /* the low word wraps inside these 8: element by element */
            float f[8] = {0};
            for (int64_t l = 0; l < cnt; l++)
                f[l] = tg__drop_bits(key, i + l) >= threshold ? scale : 0.0f;
            keep = _mm256_loadu_ps(f);
        }
        v8f v = _mm256_mul_ps(ld(src + j, REM, m), keep);
        if (mode == 1) v = _mm256_add_ps(ld(dst + j, REM, m), v);
        else if (mode == 2) v = _mm256_add_ps(_mm256_setzero_ps(), v);
        st(dst + j, v, REM, m);
    }
}

#else
typedef int tg__vec_dropout_none;   /* (ISO C wants something in a translation unit) */
#endif /* TG_VEC */
