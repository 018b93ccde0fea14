/*
 * vec_tr8x8.h - an 8 x 8 float transpose in eight AVX registers, shared by
 * the GEMM's packers (ops/gemm.c) and the attention's shallow products
 * (ops/simd/vec_gemm.c). Library-private; include after <immintrin.h>, use inside
 * functions compiled for AVX.
 */
#ifndef TG_VEC_TR8X8_H
#define TG_VEC_TR8X8_H

/* r0..r7 (rows) become the columns: lane l of rk <- lane k of rl */
#define TR8X8(r0, r1, r2, r3, r4, r5, r6, r7)                                               \
    do {                                                                                    \
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);            \
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);            \
        __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);            \
        __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);            \
        __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);  \
        __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);  \
        __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);  \
        __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);  \
        r0 = _mm256_permute2f128_ps(u0, u4, 0x20);                                          \
        r1 = _mm256_permute2f128_ps(u1, u5, 0x20);                                          \
        r2 = _mm256_permute2f128_ps(u2, u6, 0x20);                                          \
        r3 = _mm256_permute2f128_ps(u3, u7, 0x20);                                          \
        r4 = _mm256_permute2f128_ps(u0, u4, 0x31);                                          \
        r5 = _mm256_permute2f128_ps(u1, u5, 0x31);                                          \
        r6 = _mm256_permute2f128_ps(u2, u6, 0x31);                                          \
        r7 = _mm256_permute2f128_ps(u3, u7, 0x31);                                          \
    } while (0)

#endif
