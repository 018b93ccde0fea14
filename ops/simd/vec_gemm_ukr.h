/*
 * vec_gemm_ukr.h - the x86 GEMM microkernels of ops/gemm.c (AVX2 + FMA and
 * AVX-512, float and double) and the AVX2 panel packers of its float32
 * kernel: the instruction-set-specific part of the packed GEMM, beside the
 * other vector kernels. Not a header to include anywhere but ops/gemm.c,
 * which includes it twice:
 *   - in its op proper (TG_KERNELS undefined): the microkernel template
 *     (UKR_DEFINE) and the float32 AVX2 packers, written once;
 *   - in each per-type pass (TG_KERNELS 32 / 64): the template's instances for
 *     that type, ukr_avx2 (6 rows) and ukr_avx512 (12 rows).
 * Which kernel runs is chosen at run time by ops/gemm.c's kernel table, from
 * tg__isa_auto() (ops/simd/vec.h) or TG_GEMM_KERNEL.
 */
#ifndef TG_KERNELS /* ------------------------------------ written once */

/* ---- x86 microkernel template ----
 * One body for every ISA and type: UV is the vector type, U_VL its length in
 * elements, U_* the intrinsics (defined per instance at the end). The tile is
 * MR rows (the ROWS list) by 2 vectors. a: element (i, p) at a[i*rs_a + p*cs_a];
 * b: row p at b + p*rs_b (2*U_VL contiguous elements). c: alpha * tile + beta * c,
 * c not read when beta == 0. The `_packed` instance fixes the strides to the
 * packed layout (rs_a = 1, cs_a = MR, rs_b = NR) so the compiler folds them. */
#if TG_GEMM_X86
#define UKR_DECL(i) UV c##i##_lo = U_ZERO(), c##i##_hi = U_ZERO();
#define UKR_STEP(i)                                   \
    {                                                 \
        UV a_ = U_BCAST(a + (i) * rs_a);              \
        c##i##_lo = U_FMA(a_, b_lo, c##i##_lo);       \
        c##i##_hi = U_FMA(a_, b_hi, c##i##_hi);       \
    }
#define UKR_ST0(i)                                             \
    U_STORE(c + (i) * ldc, U_MUL(va, c##i##_lo));              \
    U_STORE(c + (i) * ldc + U_VL, U_MUL(va, c##i##_hi));
#define UKR_STB(i)                                                                       \
    U_STORE(c + (i) * ldc, U_FMA(vb, U_LOAD(c + (i) * ldc), U_MUL(va, c##i##_lo)));      \
    U_STORE(c + (i) * ldc + U_VL, U_FMA(vb, U_LOAD(c + (i) * ldc + U_VL), U_MUL(va, c##i##_hi)));
#define UKR_PF(i) _mm_prefetch((const char *)(c + (i) * ldc), _MM_HINT_T0);
#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS12(X) ROWS6(X) X(6) X(7) X(8) X(9) X(10) X(11)

#define UKR_DEFINE(NAME, T, MR, ROWS, TARGET)                                                   \
    __attribute__((target(TARGET), always_inline)) static inline void TG_F(NAME##_body)(        \
        int64_t k, const T *a, int64_t rs_a, int64_t cs_a, const T *b, int64_t rs_b, T *c,      \
        int64_t ldc, T alpha, T beta)                                                           \
    {                                                                                           \
        ROWS(UKR_DECL)                                                                          \
        if (beta != 0) { ROWS(UKR_PF) }                                                         \
        for (int64_t p = 0; p < k; p++) {                                                       \
            UV b_lo = U_LOAD(b), b_hi = U_LOAD(b + U_VL);                                       \
            ROWS(UKR_STEP)                                                                      \
            a += cs_a;                                                                          \
            b += rs_b;                                                                          \
        }                                                                                       \
        UV va = U_SET1(alpha);                                                                  \
        if (beta == 0) {                                                                        \
            ROWS(UKR_ST0)                                                                       \
        } else {                                                                                \
            UV vb = U_SET1(beta);                                                               \
            ROWS(UKR_STB)                                                                       \
        }                                                                                       \
    }                                                                                           \
    __attribute__((target(TARGET))) static void TG_F(NAME##_packed)(                            \
        int64_t k, const T *a, int64_t rs_a, int64_t cs_a, const T *b, int64_t rs_b, T *c,      \
        int64_t ldc, T alpha, T beta)                                                           \
    {                                                                                           \
        (void)rs_a, (void)cs_a, (void)rs_b;                                                     \
        TG_F(NAME##_body)(k, a, 1, MR, b, 2 * U_VL, c, ldc, alpha, beta);                       \
    }                                                                                           \
    __attribute__((target(TARGET))) static void TG_F(NAME##_strided)(                           \
        int64_t k, const T *a, int64_t rs_a, int64_t cs_a, const T *b, int64_t rs_b, T *c,      \
        int64_t ldc, T alpha, T beta)                                                           \
    {                                                                                           \
        TG_F(NAME##_body)(k, a, rs_a, cs_a, b, rs_b, c, ldc, alpha, beta);                      \
    }
#endif

#if TG_GEMM_X86
/* AVX2 packers for the 6 x 16 f32 kernel: 8 x 8 transposes (TR8X8,
 * ops/simd/vec_tr8x8.h) where the depth is contiguous, vector copies where the
 * lanes are. Float32 only, so written here once, not in the per-type part; the
 * kernel table (the end of the file) gives them to the f32 AVX2 kernel. They
 * fall back on the portable packers of that part: */
static void panel_6_f32(const float *src, int64_t ls, int64_t ps, int64_t kc, float *dst);
static void panel_16_f32(const float *src, int64_t ls, int64_t ps, int64_t kc, float *dst);

__attribute__((target("avx2,fma"))) static void panel_6_avx2_f32(const float *src, int64_t ls,
                                                                 int64_t ps, int64_t kc,
                                                                 float *dst)
{
    if (ls == 1) {   /* A transposed: 6 contiguous values per k, rows of A far apart */
        for (int64_t p = 0; p < kc; p++) {
            const float *s = src + p * ps;
            _mm_prefetch((const char *)(s + 8 * ps), _MM_HINT_T0);
            _mm_storeu_ps(dst + p * 6, _mm_loadu_ps(s));
            dst[p * 6 + 4] = s[4];
            dst[p * 6 + 5] = s[5];
        }
        return;
    }
    if (ps != 1) {
        panel_6_f32(src, ls, ps, kc, dst);
        return;
    }
    /* rows of A contiguous in k: 8 k at a time, 6 rows (+2 dummies) transposed.
     * Each 8-wide store spills 2 dummy lanes that the next store overwrites. */
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        __m256 r0 = _mm256_loadu_ps(src + p), r1 = _mm256_loadu_ps(src + ls + p);
        __m256 r2 = _mm256_loadu_ps(src + 2 * ls + p), r3 = _mm256_loadu_ps(src + 3 * ls + p);
        __m256 r4 = _mm256_loadu_ps(src + 4 * ls + p), r5 = _mm256_loadu_ps(src + 5 * ls + p);
        __m256 r6 = _mm256_setzero_ps(), r7 = _mm256_setzero_ps();
        TR8X8(r0, r1, r2, r3, r4, r5, r6, r7);
        float *d = dst + p * 6;
        _mm256_storeu_ps(d, r0);
        _mm256_storeu_ps(d + 6, r1);
        _mm256_storeu_ps(d + 12, r2);
        _mm256_storeu_ps(d + 18, r3);
        _mm256_storeu_ps(d + 24, r4);
        _mm256_storeu_ps(d + 30, r5);
        _mm256_storeu_ps(d + 36, r6);
        _mm_storeu_ps(d + 42, _mm256_castps256_ps128(r7));
        _mm_storeu_si64(d + 46, _mm_castps_si128(_mm256_extractf128_ps(r7, 1)));
    }
    for (; p < kc; p++)
        for (int l = 0; l < 6; l++) dst[p * 6 + l] = src[l * ls + p];
}

__attribute__((target("avx2,fma"))) static void panel_16_avx2_f32(const float *src, int64_t ls,
                                                                  int64_t ps, int64_t kc,
                                                                  float *dst)
{
    if (ls == 1) {   /* rows of B contiguous in j: two vector copies per k */
        for (int64_t p = 0; p < kc; p++) {
            _mm_prefetch((const char *)(src + (p + 8) * ps), _MM_HINT_T0);
            _mm256_storeu_ps(dst + p * 16, _mm256_loadu_ps(src + p * ps));
            _mm256_storeu_ps(dst + p * 16 + 8, _mm256_loadu_ps(src + p * ps + 8));
        }
        return;
    }
    if (ps != 1) {
        panel_16_f32(src, ls, ps, kc, dst);
        return;
    }
    /* B^T: 16 rows contiguous in k, two 8 x 8 transposes per 8 k */
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        for (int h = 0; h < 2; h++) {
            const float *s = src + 8 * h * ls + p;
            __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ls);
            __m256 r2 = _mm256_loadu_ps(s + 2 * ls), r3 = _mm256_loadu_ps(s + 3 * ls);
            __m256 r4 = _mm256_loadu_ps(s + 4 * ls), r5 = _mm256_loadu_ps(s + 5 * ls);
            __m256 r6 = _mm256_loadu_ps(s + 6 * ls), r7 = _mm256_loadu_ps(s + 7 * ls);
            TR8X8(r0, r1, r2, r3, r4, r5, r6, r7);
            float *d = dst + p * 16 + 8 * h;
            _mm256_storeu_ps(d, r0);
            _mm256_storeu_ps(d + 16, r1);
            _mm256_storeu_ps(d + 32, r2);
            _mm256_storeu_ps(d + 48, r3);
            _mm256_storeu_ps(d + 64, r4);
            _mm256_storeu_ps(d + 80, r5);
            _mm256_storeu_ps(d + 96, r6);
            _mm256_storeu_ps(d + 112, r7);
        }
    }
    for (; p < kc; p++)
        for (int l = 0; l < 16; l++) dst[p * 16 + l] = src[l * ls + p];
}

/* The AVX-512 kernel's (12 x 32) packers where the depth is contiguous (A as
 * stored: X of a linear layer; B transposed: its weight W [out, in]): 8 x 8
 * transposes, as above (the portable loops wrote 32 or 12 scattered lanes a
 * value at a time: a third of a linear layer's forward on GPT-2's sizes).
 * Lanes contiguous, or neither: the portable packers. The same values in the
 * same places either way, so the products keep their bits. */
static void panel_12_f32(const float *src, int64_t ls, int64_t ps, int64_t kc, float *dst);
static void panel_32_f32(const float *src, int64_t ls, int64_t ps, int64_t kc, float *dst);

/* w lanes (a multiple of 4; the last group of 4 padded with zero rows) of a
 * depth-contiguous source into dst[p * w + l], 8 k at a time */
__attribute__((target("avx2,fma"), always_inline)) static inline void
panel_tr_avx2_f32(const float *src, int64_t ls, int64_t kc, float *dst, const int w)
{
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        for (int h = 0; h < w; h += 8) {
            const float *s = src + h * ls + p;
            const bool half = w - h < 8;   /* 4 real rows */
            __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ls);
            __m256 r2 = _mm256_loadu_ps(s + 2 * ls), r3 = _mm256_loadu_ps(s + 3 * ls);
            __m256 r4 = half ? _mm256_setzero_ps() : _mm256_loadu_ps(s + 4 * ls);
            __m256 r5 = half ? _mm256_setzero_ps() : _mm256_loadu_ps(s + 5 * ls);
            __m256 r6 = half ? _mm256_setzero_ps() : _mm256_loadu_ps(s + 6 * ls);
            __m256 r7 = half ? _mm256_setzero_ps() : _mm256_loadu_ps(s + 7 * ls);
            TR8X8(r0, r1, r2, r3, r4, r5, r6, r7);
            float *d = dst + p * w + h;
            if (half) {
                _mm_storeu_ps(d, _mm256_castps256_ps128(r0));
                _mm_storeu_ps(d + w, _mm256_castps256_ps128(r1));
                _mm_storeu_ps(d + 2 * w, _mm256_castps256_ps128(r2));
                _mm_storeu_ps(d + 3 * w, _mm256_castps256_ps128(r3));
                _mm_storeu_ps(d + 4 * w, _mm256_castps256_ps128(r4));
                _mm_storeu_ps(d + 5 * w, _mm256_castps256_ps128(r5));
                _mm_storeu_ps(d + 6 * w, _mm256_castps256_ps128(r6));
                _mm_storeu_ps(d + 7 * w, _mm256_castps256_ps128(r7));
                continue;
            }
            _mm256_storeu_ps(d, r0);
            _mm256_storeu_ps(d + w, r1);
            _mm256_storeu_ps(d + 2 * w, r2);
            _mm256_storeu_ps(d + 3 * w, r3);
            _mm256_storeu_ps(d + 4 * w, r4);
            _mm256_storeu_ps(d + 5 * w, r5);
            _mm256_storeu_ps(d + 6 * w, r6);
            _mm256_storeu_ps(d + 7 * w, r7);
        }
    }
    for (; p < kc; p++)
        for (int l = 0; l < w; l++) dst[p * w + l] = src[l * ls + p];
}

__attribute__((target("avx2,fma"))) static void panel_12_avx2_f32(const float *src, int64_t ls,
                                                                  int64_t ps, int64_t kc,
                                                                  float *dst)
{
    if (ps != 1 || ls == 1) panel_12_f32(src, ls, ps, kc, dst);
    else panel_tr_avx2_f32(src, ls, kc, dst, 12);
}

__attribute__((target("avx2,fma"))) static void panel_32_avx2_f32(const float *src, int64_t ls,
                                                                  int64_t ps, int64_t kc,
                                                                  float *dst)
{
    if (ps != 1 || ls == 1) panel_32_f32(src, ls, ps, kc, dst);
    else panel_tr_avx2_f32(src, ls, kc, dst, 32);
}
#undef TR8X8
#endif


#else /* ---------------------------------- instances, once per type */

/* ---- the template's instances for TG_T ---- */
#if TG_GEMM_X86
#  if TG_KERNELS == 32
#    define UV             __m256
#    define U_VL           8
#    define U_ZERO()       _mm256_setzero_ps()
#    define U_LOAD(p)      _mm256_loadu_ps(p)
#    define U_STORE(p, v)  _mm256_storeu_ps(p, v)
#    define U_BCAST(p)     _mm256_broadcast_ss(p)
#    define U_FMA(x, y, z) _mm256_fmadd_ps(x, y, z)
#    define U_MUL(x, y)    _mm256_mul_ps(x, y)
#    define U_SET1(x)      _mm256_set1_ps(x)
#  else
#    define UV             __m256d
#    define U_VL           4
#    define U_ZERO()       _mm256_setzero_pd()
#    define U_LOAD(p)      _mm256_loadu_pd(p)
#    define U_STORE(p, v)  _mm256_storeu_pd(p, v)
#    define U_BCAST(p)     _mm256_broadcast_sd(p)
#    define U_FMA(x, y, z) _mm256_fmadd_pd(x, y, z)
#    define U_MUL(x, y)    _mm256_mul_pd(x, y)
#    define U_SET1(x)      _mm256_set1_pd(x)
#  endif
UKR_DEFINE(ukr_avx2, TG_T, 6, ROWS6, "avx2,fma")
#  undef UV
#  undef U_VL
#  undef U_ZERO
#  undef U_LOAD
#  undef U_STORE
#  undef U_BCAST
#  undef U_FMA
#  undef U_MUL
#  undef U_SET1
#  if TG_KERNELS == 32
#    define UV             __m512
#    define U_VL           16
#    define U_ZERO()       _mm512_setzero_ps()
#    define U_LOAD(p)      _mm512_loadu_ps(p)
#    define U_STORE(p, v)  _mm512_storeu_ps(p, v)
#    define U_BCAST(p)     _mm512_set1_ps(*(p))
#    define U_FMA(x, y, z) _mm512_fmadd_ps(x, y, z)
#    define U_MUL(x, y)    _mm512_mul_ps(x, y)
#    define U_SET1(x)      _mm512_set1_ps(x)
#  else
#    define UV             __m512d
#    define U_VL           8
#    define U_ZERO()       _mm512_setzero_pd()
#    define U_LOAD(p)      _mm512_loadu_pd(p)
#    define U_STORE(p, v)  _mm512_storeu_pd(p, v)
#    define U_BCAST(p)     _mm512_set1_pd(*(p))
#    define U_FMA(x, y, z) _mm512_fmadd_pd(x, y, z)
#    define U_MUL(x, y)    _mm512_mul_pd(x, y)
#    define U_SET1(x)      _mm512_set1_pd(x)
#  endif
UKR_DEFINE(ukr_avx512, TG_T, 12, ROWS12, "avx512f,avx2,fma")
#  undef UV
#  undef U_VL
#  undef U_ZERO
#  undef U_LOAD
#  undef U_STORE
#  undef U_BCAST
#  undef U_FMA
#  undef U_MUL
#  undef U_SET1
#endif

#endif
