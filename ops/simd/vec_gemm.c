/*
 * vec_gemm.c - small AVX2 + FMA matrix products for the fused attention's
 * short heads (ops/sdpa.c; see vec.h): C = alpha op(A) B + beta C as FMA rows,
 * and C = alpha A B^T + beta C as dot products, without packing; with AVX-512,
 * A B^T for at most 16 columns from B^T transposed first.
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

/* ---- heads of at most 16 keys (AVX-512) ----
 * B^T first, 16 x 16 tiles transposed in registers: rows paired by unpack,
 * quads by shuffle, then 128-bit lanes gathered by two rounds of
 * shuffle_f32x4 (64 shuffles a tile). Then four rows of C at a time, each
 * one register: step p loads row p of B^T once and broadcasts A(i, p). */
#define TR_UNPACK(a, b) t##a = _mm512_unpacklo_ps(r##a, r##b), t##b = _mm512_unpackhi_ps(r##a, r##b)
#define TR_QUAD(a, b, c, d)                                                                 \
    r##a = _mm512_shuffle_ps(t##a, t##c, 0x44), r##b = _mm512_shuffle_ps(t##a, t##c, 0xEE),  \
    r##c = _mm512_shuffle_ps(t##b, t##d, 0x44), r##d = _mm512_shuffle_ps(t##b, t##d, 0xEE)
#define TR_LANES(m, a, b, c, d)                                                              \
    do {                                                                                    \
        const __m512 v0 = _mm512_shuffle_f32x4(a, b, 0x88);                                 \
        const __m512 v1 = _mm512_shuffle_f32x4(a, b, 0xDD);                                 \
        const __m512 w0 = _mm512_shuffle_f32x4(c, d, 0x88);                                 \
        const __m512 w1 = _mm512_shuffle_f32x4(c, d, 0xDD);                                 \
        col[m] = _mm512_shuffle_f32x4(v0, w0, 0x88), col[m + 8] = _mm512_shuffle_f32x4(v0, w0, 0xDD); \
        col[m + 4] = _mm512_shuffle_f32x4(v1, w1, 0x88);                                    \
        col[m + 12] = _mm512_shuffle_f32x4(v1, w1, 0xDD);                                   \
    } while (0)

/* bt [K, 16] (row stride ldbt) = B [N, K] (row stride ldb) transposed: lanes
 * past N zero, or, when ldbt < 16, not written */
AVX512 void tg__vec_transpose16(const float *B, int64_t ldb, int64_t N, int64_t K, float *bt,
                                int64_t ldbt)
{
    const __mmask16 out = ldbt >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << N) - 1);
    for (int64_t q0 = 0; q0 < K; q0 += 16) {
        const int64_t kq = K - q0 < 16 ? K - q0 : 16;
        const __mmask16 m = (__mmask16)((1u << kq) - 1);
        const float *b = B + q0;
#define TR_LD(j) __m512 r##j = (j) < N ? _mm512_maskz_loadu_ps(m, b + (j) * ldb) : _mm512_setzero_ps()
        TR_LD(0); TR_LD(1); TR_LD(2); TR_LD(3); TR_LD(4); TR_LD(5); TR_LD(6); TR_LD(7);
        TR_LD(8); TR_LD(9); TR_LD(10); TR_LD(11); TR_LD(12); TR_LD(13); TR_LD(14); TR_LD(15);
#undef TR_LD
        __m512 t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15;
        TR_UNPACK(0, 1); TR_UNPACK(2, 3); TR_UNPACK(4, 5); TR_UNPACK(6, 7);
        TR_UNPACK(8, 9); TR_UNPACK(10, 11); TR_UNPACK(12, 13); TR_UNPACK(14, 15);
        /* r(4k + m): column m of each 128-bit lane, rows 4k .. 4k + 3 */
        TR_QUAD(0, 1, 2, 3); TR_QUAD(4, 5, 6, 7); TR_QUAD(8, 9, 10, 11); TR_QUAD(12, 13, 14, 15);
        __m512 col[16];
        TR_LANES(0, r0, r4, r8, r12);
        TR_LANES(1, r1, r5, r9, r13);
        TR_LANES(2, r2, r6, r10, r14);
        TR_LANES(3, r3, r7, r11, r15);
        for (int64_t q = 0; q < kq; q++) _mm512_mask_storeu_ps(bt + ldbt * (q0 + q), out, col[q]);
    }
}
#undef TR_UNPACK
#undef TR_QUAD
#undef TR_LANES

AVX512 void tg__vec_gemm_nt16(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                              int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                              int64_t ldc, float *bt)
{
    const __mmask16 nm = (__mmask16)((1u << N) - 1);
    tg__vec_transpose16(B, ldb, N, K, bt, 16);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#define NT16_STORE(r)                                                                   \
    do {                                                                                \
        float *c_ = C + (i + (r)) * ldc;                                                \
        __m512 x_ = _mm512_mul_ps(va, s##r);                                            \
        if (beta != 0) x_ = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(nm, c_), x_);     \
        _mm512_mask_storeu_ps(c_, nm, x_);                                              \
    } while (0)
    int64_t i = 0;
    for (; i + 4 <= M; i += 4) {
        const float *a = A + i * lda;
        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (int64_t p = 0; p < K; p++) {
            const __m512 b = _mm512_loadu_ps(bt + 16 * p);
            s0 = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), b, s0);
            s1 = _mm512_fmadd_ps(_mm512_set1_ps(a[lda + p]), b, s1);
            s2 = _mm512_fmadd_ps(_mm512_set1_ps(a[2 * lda + p]), b, s2);
            s3 = _mm512_fmadd_ps(_mm512_set1_ps(a[3 * lda + p]), b, s3);
        }
        NT16_STORE(0);
        NT16_STORE(1);
        NT16_STORE(2);
        NT16_STORE(3);
    }
    for (; i < M; i++) {
        const float *a = A + i * lda;
        __m512 s0 = _mm512_setzero_ps();
        for (int64_t p = 0; p < K; p++)
            s0 = _mm512_fmadd_ps(_mm512_set1_ps(a[p]), _mm512_loadu_ps(bt + 16 * p), s0);
        NT16_STORE(0);
    }
#undef NT16_STORE
}

#else
typedef int tg__vec_gemm_none;   /* (ISO C wants something in a translation unit) */
#endif /* TG_VEC */
