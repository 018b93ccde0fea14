/*
 * vec_gemm.c - small AVX2 + FMA matrix products for the fused attention's
 * short heads (ops/sdpa.c; see vec.h): C = alpha op(A) B + beta C as FMA rows,
 * and C = alpha A B^T + beta C as dot products, without packing.
 */
#include "vec.h"

#if TG_VEC
#include <immintrin.h>

#include "vec_lanes.h"
#include "vec_tr8x8.h"

/* ---- small matrix products (fused attention on short heads) ----
 * Two rows of C at a time, up to 32 columns (four vectors) per pass: each
 * step p broadcasts A(i, p) and A(i+1, p) and loads row p of B once. Every
 * C element is a chain of FMAs in p order, then alpha * acc (+ beta * C).
 * The pass is written out per vector count (nv) so the accumulators stay in
 * registers; only the last vector of the last pass may be partial (mask). */
#define GS_DECL(v) v8f c0##v = _mm256_setzero_ps(), c1##v = c0##v;
#define GS_STEP(v)                                                                    \
    if (nv > v) {                                                                     \
        v8f bv = (v == nv - 1 && tail) ? _mm256_maskload_ps(b + 8 * v, m)             \
                                       : _mm256_loadu_ps(b + 8 * v);                  \
        c0##v = _mm256_fmadd_ps(a0, bv, c0##v);                                       \
        c1##v = _mm256_fmadd_ps(a1, bv, c1##v);                                       \
    }
#define GS_STORE(v, r)                                                                \
    if (nv > v) {                                                                     \
        float *cp = C + (r) * ldc + 8 * v;                                            \
        bool part = v == nv - 1 && tail;                                              \
        v8f x = _mm256_mul_ps(K(alpha), c##r##v);                                     \
        if (beta != 0)                                                                \
            x = _mm256_fmadd_ps(K(beta), part ? _mm256_maskload_ps(cp, m)             \
                                              : _mm256_loadu_ps(cp), x);              \
        if (part) _mm256_maskstore_ps(cp, m, x);                                      \
        else _mm256_storeu_ps(cp, x);                                                 \
    }

__attribute__((always_inline)) AVX2 static inline void gemm_small_pass(
    int64_t rows, int64_t depth, float alpha, const float *A, int64_t rs_a, int64_t cs_a,
    const float *B, int64_t ldb, float beta, float *C, int64_t ldc, __m256i m, const int nv,
    const bool tail)
{
    GS_DECL(0) GS_DECL(1) GS_DECL(2) GS_DECL(3)
    const float *a1p = rows > 1 ? A + rs_a : A;
    for (int64_t p = 0; p < depth; p++) {
        const float *b = B + p * ldb;
        v8f a0 = _mm256_set1_ps(A[p * cs_a]), a1 = _mm256_set1_ps(a1p[p * cs_a]);
        GS_STEP(0) GS_STEP(1) GS_STEP(2) GS_STEP(3)
    }
    GS_STORE(0, 0) GS_STORE(1, 0) GS_STORE(2, 0) GS_STORE(3, 0)
    if (rows > 1) {
        GS_STORE(0, 1) GS_STORE(1, 1) GS_STORE(2, 1) GS_STORE(3, 1)
    }
}
#undef GS_DECL
#undef GS_STEP
#undef GS_STORE

AVX2 void tg__vec_gemm_small(int64_t M, int64_t N, int64_t depth, float alpha, const float *A,
                             int64_t rs_a, int64_t cs_a, const float *B, int64_t ldb, float beta,
                             float *C, int64_t ldc)
{
    for (int64_t j = 0; j < N; j += 32) {
        const int64_t cols = N - j < 32 ? N - j : 32;
        const int nv = (int)((cols + 7) / 8);
        const bool tail = cols % 8 != 0;
        const __m256i m = tail_mask(tail ? cols % 8 : 8);
        for (int64_t i = 0; i < M; i += 2) {
            const int64_t rows = M - i < 2 ? M - i : 2;
            const float *a = A + i * rs_a;
            float *c = C + i * ldc + j;
#define GS_CALL(NV, T) gemm_small_pass(rows, depth, alpha, a, rs_a, cs_a, B + j, ldb, beta, c, \
                                       ldc, m, NV, T)
            switch (nv * 2 + tail) {
            case 2: GS_CALL(1, false); break;
            case 3: GS_CALL(1, true); break;
            case 4: GS_CALL(2, false); break;
            case 5: GS_CALL(2, true); break;
            case 6: GS_CALL(3, false); break;
            case 7: GS_CALL(3, true); break;
            case 8: GS_CALL(4, false); break;
            default: GS_CALL(4, true); break;
            }
#undef GS_CALL
        }
    }
}

AVX2 void tg__vec_transpose_small(const float *B, int64_t ldb, int64_t N, int64_t K, float *bt)
{
    for (int64_t q0 = 0; q0 < K; q0 += 8) {
        const int64_t kq = K - q0 < 8 ? K - q0 : 8;   /* columns in this band */
        const __m256i m = tail_mask(kq);
        for (int64_t j = 0; j < N; j += 8) {
            const float *b = B + j * ldb + q0;
            v8f r0 = ld(b, kq, m), r1 = ld(b + ldb, kq, m), r2 = ld(b + 2 * ldb, kq, m);
            v8f r3 = ld(b + 3 * ldb, kq, m), r4 = ld(b + 4 * ldb, kq, m);
            v8f r5 = ld(b + 5 * ldb, kq, m), r6 = ld(b + 6 * ldb, kq, m);
            v8f r7 = ld(b + 7 * ldb, kq, m);
            TR8X8(r0, r1, r2, r3, r4, r5, r6, r7);
            float *d = bt + q0 * N + j;
            const v8f col[8] = {r0, r1, r2, r3, r4, r5, r6, r7};
            for (int64_t q = 0; q < kq; q++) _mm256_storeu_ps(d + q * N, col[q]);
        }
    }
}

/* lanes 0..3: the sums of s0, s1, s2, s3 */
AVX2 static inline __m128 hsum4(v8f s0, v8f s1, v8f s2, v8f s3)
{
    v8f h = _mm256_hadd_ps(_mm256_hadd_ps(s0, s1), _mm256_hadd_ps(s2, s3));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

/* c[0 .. nb) = alpha * t + beta * c  (beta == 0: c not read) */
AVX2 static inline void store4(float *c, __m128 t, int64_t nb, float alpha, float beta)
{
    if (nb == 4) {
        __m128 x = _mm_mul_ps(_mm_set1_ps(alpha), t);
        if (beta != 0) x = _mm_add_ps(x, _mm_mul_ps(_mm_set1_ps(beta), _mm_loadu_ps(c)));
        _mm_storeu_ps(c, x);
        return;
    }
    float o[4];
    _mm_storeu_ps(o, t);
    for (int64_t u = 0; u < nb; u++) c[u] = beta == 0 ? alpha * o[u] : alpha * o[u] + beta * c[u];
}

/* C[M, N] = alpha * A B^T + beta * C for short rows: both operands row-major
 * with the depth contiguous (A [M, K], B [N, K]), so no transpose is needed.
 * A 2 x 4 block of dot products at a time, 8 lanes of depth per step (the
 * last step masked), then one horizontal sum per dot product. */
AVX2 void tg__vec_gemm_nt_small(int64_t M, int64_t N, int64_t depth, float alpha,
                                const float *A, int64_t lda, const float *B, int64_t ldb,
                                float beta, float *C, int64_t ldc)
{
    const int64_t full = depth / 8 * 8, rem = depth - full;
    const __m256i m = tail_mask(rem ? rem : 8);
#define NT_STEP(LOAD, p)                                                                    \
    do {                                                                                    \
        v8f x0 = LOAD(a0 + (p)), x1 = LOAD(a1 + (p));                                       \
        v8f y0 = LOAD(b0 + (p)), y1 = LOAD(b1 + (p)), y2 = LOAD(b2 + (p)), y3 = LOAD(b3 + (p)); \
        s00 = _mm256_fmadd_ps(x0, y0, s00), s01 = _mm256_fmadd_ps(x0, y1, s01);             \
        s02 = _mm256_fmadd_ps(x0, y2, s02), s03 = _mm256_fmadd_ps(x0, y3, s03);             \
        s10 = _mm256_fmadd_ps(x1, y0, s10), s11 = _mm256_fmadd_ps(x1, y1, s11);             \
        s12 = _mm256_fmadd_ps(x1, y2, s12), s13 = _mm256_fmadd_ps(x1, y3, s13);             \
    } while (0)
#define NT_FULL(q) _mm256_loadu_ps(q)
#define NT_TAIL(q) _mm256_maskload_ps((q), m)
    for (int64_t i = 0; i < M; i += 2) {
        const int64_t rows = M - i < 2 ? M - i : 2;
        const float *a0 = A + i * lda, *a1 = rows > 1 ? a0 + lda : a0;
        for (int64_t j = 0; j < N; j += 4) {
            const int64_t nb = N - j < 4 ? N - j : 4;
            const float *b0 = B + j * ldb, *b1 = nb > 1 ? b0 + ldb : b0;
            const float *b2 = nb > 2 ? b0 + 2 * ldb : b0, *b3 = nb > 3 ? b0 + 3 * ldb : b0;
            v8f s00 = _mm256_setzero_ps(), s01 = s00, s02 = s00, s03 = s00;
            v8f s10 = s00, s11 = s00, s12 = s00, s13 = s00;
            for (int64_t p = 0; p < full; p += 8) NT_STEP(NT_FULL, p);
            if (rem) NT_STEP(NT_TAIL, full);
            store4(C + i * ldc + j, hsum4(s00, s01, s02, s03), nb, alpha, beta);
            if (rows > 1) store4(C + (i + 1) * ldc + j, hsum4(s10, s11, s12, s13), nb, alpha, beta);
        }
    }
#undef NT_STEP
#undef NT_FULL
#undef NT_TAIL
}

#else
typedef int tg__vec_gemm_none;   /* (ISO C wants something in a translation unit) */
#endif /* TG_VEC */
