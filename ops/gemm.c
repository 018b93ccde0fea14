/*
 * gemm.c - C = alpha * op(A) op(B) + beta * C, row-major, f32 and f64: the
 * kernel every contraction in tgraph (linear, einsum and their backward)
 * goes through.
 *
 * What it is: a BLIS-style GEMM in three layers.
 *
 *   microkernel   an MR x NR tile of C held in registers, updated by a rank-1
 *                 product per k: MR broadcasts of A times NR/VL vectors of B.
 *                 AVX2+FMA 6x16 (f32) / 6x8 (f64), AVX-512 12x32 / 12x16, and
 *                 a portable C 4x8, chosen at run time (tg__gemm_kernel_get).
 *   packed path   for each NC-wide block of columns and KC-deep slice of K:
 *                 pack op(B)[KC, NC] once into NR-wide panels (shared by all
 *                 threads), then every thread takes MC-row blocks of op(A),
 *                 packs them into MR-high panels in its own buffer, and runs
 *                 the microkernel over the block (jr outer, ir inner: the
 *                 B panel stays in L1, the A block in L2).
 *   small path    for small or skinny problems (attention heads): no packing
 *                 of A (the microkernel broadcasts straight from A with its
 *                 strides), B read in place when its rows are contiguous.
 *
 * Batched calls run items in parallel when they are small or many, and each
 * item in parallel (over row blocks, or column panels when M is small) when
 * they are big. Per-thread packing buffers are allocated once, lazily, with
 * tg__malloc_aligned; if that fails the call falls back to a path that needs
 * none (an MR x KC stack panel, or the plain C loops of gemm_ref).
 *
 * Numbers: beta == 0 never reads C; the K sum is blocked by KC only (chosen
 * from K, not from the thread count), so results are bitwise the same for
 * any number of threads. No -ffast-math; FMA only in the x86 microkernels.
 *
 * Not: a BLAS (no complex, no column-major interface), nor tuned for CPUs
 * other than x86-64; other machines get the portable C microkernel.
 */
#ifndef TG_KERNELS
/* =================== part 1: type-independent, compiled once =================== */
#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#  include <immintrin.h>
#  define TG_GEMM_X86 1
#else
#  define TG_GEMM_X86 0
#endif

#include "gemm.h"
#include "internal.h"
#include "threads.h"

/* ---- kernel choice ---- */
static atomic_int gemm_kernel = -1;            /* -1: not chosen yet */
static atomic_int gemm_path = TG__GEMM_PATH_AUTO;

static bool kernel_supported(tg__gemm_kernel k)
{
    switch (k) {
    case TG__GEMM_KERNEL_C: return true;
#if TG_GEMM_X86
    case TG__GEMM_KERNEL_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case TG__GEMM_KERNEL_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
               __builtin_cpu_supports("fma");
#endif
    default: return false;
    }
}

static tg__gemm_kernel kernel_auto(void)
{
    const char *env = getenv("TG_GEMM_KERNEL");
    if (env && *env)
        for (int k = 0; k < TG__GEMM_KERNEL_COUNT; k++)
            if (strcmp(env, tg__gemm_kernel_name((tg__gemm_kernel)k)) == 0 &&
                kernel_supported((tg__gemm_kernel)k))
                return (tg__gemm_kernel)k;
    if (kernel_supported(TG__GEMM_KERNEL_AVX512)) return TG__GEMM_KERNEL_AVX512;
    if (kernel_supported(TG__GEMM_KERNEL_AVX2)) return TG__GEMM_KERNEL_AVX2;
    return TG__GEMM_KERNEL_C;
}

tg__gemm_kernel tg__gemm_kernel_get(void)
{
    int k = atomic_load_explicit(&gemm_kernel, memory_order_relaxed);
    if (k < 0) {
        k = (int)kernel_auto();
        atomic_store(&gemm_kernel, k);
    }
    return (tg__gemm_kernel)k;
}

bool tg__gemm_kernel_set(tg__gemm_kernel k)
{
    if (k == TG__GEMM_KERNEL_COUNT) {
        atomic_store(&gemm_kernel, (int)kernel_auto());
        return true;
    }
    if ((int)k < 0 || k > TG__GEMM_KERNEL_COUNT || !kernel_supported(k)) return false;
    atomic_store(&gemm_kernel, (int)k);
    return true;
}

const char *tg__gemm_kernel_name(tg__gemm_kernel k)
{
    static const char *names[TG__GEMM_KERNEL_COUNT] = {"c", "avx2", "avx512"};
    return (int)k >= 0 && k < TG__GEMM_KERNEL_COUNT ? names[k] : "?";
}

void tg__gemm_path_set(tg__gemm_path p)
{
    atomic_store(&gemm_path, (int)p < 0 || p >= TG__GEMM_PATH_COUNT ? TG__GEMM_PATH_AUTO : (int)p);
}

/* ---- per-thread packing buffers ----
 * A: one packed MC x KC block of op(A) (the thread's own);
 * B: one packed KC x NC block of op(B) (the calling thread's, read by all).
 * Allocated on first use, kept until the thread exits (a pthread key frees
 * them then; the main thread's stay reachable through its TLS until exit). */
#define GEMM_A_BYTES ((size_t)160 * 1024)
#define GEMM_B_BYTES ((size_t)4 * 1024 * 1024 + (size_t)64 * 1024)
#define GEMM_MAX_MR 12
#define GEMM_MAX_NR 32

typedef struct gemm_bufs { void *a, *b; } gemm_bufs;
static _Thread_local gemm_bufs tls_bufs;
static pthread_key_t bufs_key;
static pthread_once_t bufs_once = PTHREAD_ONCE_INIT;
static int bufs_key_ok;

static void bufs_free(void *p)
{
    gemm_bufs *b = p;
    tg__free_aligned(b->a);
    tg__free_aligned(b->b);
    b->a = b->b = NULL;
}

static void bufs_key_init(void) { bufs_key_ok = pthread_key_create(&bufs_key, bufs_free) == 0; }

/* This thread's buffer (which = 0: A, 1: B), or NULL if it cannot be had. */
static void *gemm_buf(int which)
{
    gemm_bufs *t = &tls_bufs;
    void **slot = which ? &t->b : &t->a;
    if (*slot) return *slot;
    pthread_once(&bufs_once, bufs_key_init);
    *slot = tg__malloc_aligned(which ? GEMM_B_BYTES : GEMM_A_BYTES);
    if (*slot && bufs_key_ok) pthread_setspecific(bufs_key, t);
    return *slot;
}

/* ---- x86 microkernel template ----
 * One body for every ISA and type: UV is the vector type, U_VL its length in
 * elements, U_* the intrinsics (defined per instance in part 2). The tile is
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

#define UKR_DEFINE(NAME, T, MR, ROWS, TARGET)                                                  \
    __attribute__((target(TARGET), always_inline)) static inline void TG_F(NAME##_body)(             \
        int64_t k, const T *a, int64_t rs_a, int64_t cs_a, const T *b, int64_t rs_b, T *c,     \
        int64_t ldc, T alpha, T beta)                                                          \
    {                                                                                          \
        ROWS(UKR_DECL)                                                                         \
        if (beta != 0) { ROWS(UKR_PF) }                                                        \
        for (int64_t p = 0; p < k; p++) {                                                      \
            UV b_lo = U_LOAD(b), b_hi = U_LOAD(b + U_VL);                                      \
            ROWS(UKR_STEP)                                                                     \
            a += cs_a;                                                                         \
            b += rs_b;                                                                         \
        }                                                                                      \
        UV va = U_SET1(alpha);                                                                 \
        if (beta == 0) {                                                                       \
            ROWS(UKR_ST0)                                                                      \
        } else {                                                                               \
            UV vb = U_SET1(beta);                                                              \
            ROWS(UKR_STB)                                                                      \
        }                                                                                      \
    }                                                                                          \
    __attribute__((target(TARGET))) static void TG_F(NAME##_packed)(                                 \
        int64_t k, const T *a, int64_t rs_a, int64_t cs_a, const T *b, int64_t rs_b, T *c,     \
        int64_t ldc, T alpha, T beta)                                                          \
    {                                                                                          \
        (void)rs_a, (void)cs_a, (void)rs_b;                                                    \
        TG_F(NAME##_body)(k, a, 1, MR, b, 2 * U_VL, c, ldc, alpha, beta);                            \
    }                                                                                          \
    __attribute__((target(TARGET))) static void TG_F(NAME##_strided)(                                \
        int64_t k, const T *a, int64_t rs_a, int64_t cs_a, const T *b, int64_t rs_b, T *c,     \
        int64_t ldc, T alpha, T beta)                                                          \
    {                                                                                          \
        TG_F(NAME##_body)(k, a, rs_a, cs_a, b, rs_b, c, ldc, alpha, beta);                           \
    }
#endif

#define TG_KERNELS 32
#include "gemm.c"
#undef TG_KERNELS
#define TG_KERNELS 64
#include "gemm.c"
#undef TG_KERNELS

void tg_gemm_batched(tg_dtype dt, bool trans_a, bool trans_b, int64_t batch, int64_t M,
                     int64_t N, int64_t K, double alpha, const void *A, int64_t lda,
                     int64_t stride_a, const void *B, int64_t ldb, int64_t stride_b,
                     double beta, void *C, int64_t ldc, int64_t stride_c)
{
    if (dt == TG_F64)
        tg_gemm_batched_f64(trans_a, trans_b, batch, M, N, K, alpha, A, lda, stride_a, B, ldb,
                            stride_b, beta, C, ldc, stride_c);
    else
        tg_gemm_batched_f32(trans_a, trans_b, batch, M, N, K, (float)alpha, A, lda, stride_a,
                            B, ldb, stride_b, (float)beta, C, ldc, stride_c);
}

#else
/* =================== part 2: per element type (TG_T = float, double) =================== */
#include "generic.h"

typedef void (*TG_F(ukr_fn))(int64_t k, const TG_T *a, int64_t rs_a, int64_t cs_a,
                             const TG_T *b, int64_t rs_b, TG_T *c, int64_t ldc, TG_T alpha,
                             TG_T beta);

/* A microkernel and the blocking that suits it. mc, nc are multiples of mr, nr. */
typedef struct TG_F(gemm_kernel) {
    int mr, nr;
    int64_t mc, kc, nc;
    TG_F(ukr_fn) packed;    /* a packed (rs_a 1, cs_a mr), b packed (rs_b nr) */
    TG_F(ukr_fn) strided;   /* any strides */
} TG_F(gemm_kernel);

/* One GEMM (a single batch item). */
typedef struct TG_F(gemm_prob) {
    bool ta, tb;
    int64_t M, N, K;
    TG_T alpha, beta;
    const TG_T *A, *B;
    TG_T *C;
    int64_t lda, ldb, ldc;
} TG_F(gemm_prob);

/* ---- portable C microkernel, 4 x 8 ---- */
#define C_MR 4
#define C_NR 8
static void TG_F(ukr_c)(int64_t k, const TG_T *a, int64_t rs_a, int64_t cs_a, const TG_T *b,
                        int64_t rs_b, TG_T *c, int64_t ldc, TG_T alpha, TG_T beta)
{
    TG_T acc[C_MR][C_NR] = {{0}};
    for (int64_t p = 0; p < k; p++, a += cs_a, b += rs_b)
        for (int i = 0; i < C_MR; i++) {
            TG_T ai = a[i * rs_a];
            for (int j = 0; j < C_NR; j++) acc[i][j] += ai * b[j];
        }
    for (int i = 0; i < C_MR; i++)
        for (int j = 0; j < C_NR; j++)
            c[i * ldc + j] = beta == 0 ? alpha * acc[i][j] : alpha * acc[i][j] + beta * c[i * ldc + j];
}

/* ---- x86 instances of the template (part 1) ---- */
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

/* The kernel table. Blocking for Zen 3 / Skylake-class caches (L1d 32 KiB,
 * L2 >= 512 KiB): the kc x nr B panel fits L1, the mc x kc A block L2, the
 * kc x nc B block L3; mc * kc and kc * nc fit GEMM_A_BYTES and GEMM_B_BYTES. */
static const TG_F(gemm_kernel) *TG_F(kernel)(void)
{
    static const TG_F(gemm_kernel) table[TG__GEMM_KERNEL_COUNT] = {
#if TG_KERNELS == 32
        [TG__GEMM_KERNEL_C] = {C_MR, C_NR, 128, 256, 4096, TG_F(ukr_c), TG_F(ukr_c)},
#  if TG_GEMM_X86
        [TG__GEMM_KERNEL_AVX2] = {6, 16, 144, 256, 4080, TG_F(ukr_avx2_packed), TG_F(ukr_avx2_strided)},
        [TG__GEMM_KERNEL_AVX512] = {12, 32, 144, 256, 4064, TG_F(ukr_avx512_packed), TG_F(ukr_avx512_strided)},
#  endif
#else
        [TG__GEMM_KERNEL_C] = {C_MR, C_NR, 64, 256, 2048, TG_F(ukr_c), TG_F(ukr_c)},
#  if TG_GEMM_X86
        [TG__GEMM_KERNEL_AVX2] = {6, 8, 72, 256, 2040, TG_F(ukr_avx2_packed), TG_F(ukr_avx2_strided)},
        [TG__GEMM_KERNEL_AVX512] = {12, 16, 72, 256, 2032, TG_F(ukr_avx512_packed), TG_F(ukr_avx512_strided)},
#  endif
#endif
    };
    const TG_F(gemm_kernel) *kd = &table[tg__gemm_kernel_get()];
    return kd->packed ? kd : &table[TG__GEMM_KERNEL_C];
}

/* ---- packing ---- */
/* op(A)[i0 : i0+m, p0 : p0+kc] into mr-high panels: panel r holds, for each p,
 * the mr values of column p (zeros below row m). */
static void TG_F(pack_a)(const TG_F(gemm_prob) *pr, int mr, int64_t i0, int64_t m, int64_t p0,
                         int64_t kc, TG_T *dst)
{
    for (int64_t r = 0; r < m; r += mr, dst += mr * kc) {
        int64_t h = m - r < mr ? m - r : mr;
        if (!pr->ta) {   /* A [M, K]: row i contiguous in k */
            for (int64_t i = 0; i < h; i++) {
                const TG_T *src = pr->A + (i0 + r + i) * pr->lda + p0;
                for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = src[p];
            }
        } else {         /* A [K, M]: column p of op(A) contiguous in i */
            for (int64_t p = 0; p < kc; p++) {
                const TG_T *src = pr->A + (p0 + p) * pr->lda + i0 + r;
                for (int64_t i = 0; i < h; i++) dst[p * mr + i] = src[i];
            }
        }
        for (int64_t i = h; i < mr; i++)
            for (int64_t p = 0; p < kc; p++) dst[p * mr + i] = 0;
    }
}

/* op(B)[p0 : p0+kc, j0 : j0+n] into nr-wide panels: panel s holds, for each p,
 * the nr values of row p (zeros right of column n). */
static void TG_F(pack_b)(const TG_F(gemm_prob) *pr, int nr, int64_t p0, int64_t kc, int64_t j0,
                         int64_t n, TG_T *dst)
{
    for (int64_t s = 0; s < n; s += nr, dst += nr * kc) {
        int64_t w = n - s < nr ? n - s : nr;
        if (!pr->tb) {   /* B [K, N]: row p contiguous in j */
            for (int64_t p = 0; p < kc; p++) {
                const TG_T *src = pr->B + (p0 + p) * pr->ldb + j0 + s;
                TG_T *d = dst + p * nr;
                for (int64_t j = 0; j < w; j++) d[j] = src[j];
                for (int64_t j = w; j < nr; j++) d[j] = 0;
            }
        } else {         /* B [N, K]: column j of op(B) contiguous in p */
            for (int64_t j = 0; j < w; j++) {
                const TG_T *src = pr->B + (j0 + s + j) * pr->ldb + p0;
                for (int64_t p = 0; p < kc; p++) dst[p * nr + j] = src[p];
            }
            for (int64_t j = w; j < nr; j++)
                for (int64_t p = 0; p < kc; p++) dst[p * nr + j] = 0;
        }
    }
}

/* C[m, n] = alpha * t[m, n] + beta * C (t has row stride tn); C not read when beta == 0. */
static void TG_F(store_edge)(const TG_T *t, int64_t tn, TG_T *c, int64_t ldc, int64_t m,
                             int64_t n, TG_T alpha, TG_T beta)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * ldc + j] = beta == 0 ? alpha * t[i * tn + j]
                                       : alpha * t[i * tn + j] + beta * c[i * ldc + j];
}

/* One tile: the microkernel on a full mr x nr tile of C, or into a scratch
 * tile that is then copied for a partial one at the bottom or right edge. */
static inline void TG_F(tile)(const TG_F(gemm_kernel) *kd, TG_F(ukr_fn) f, int64_t k,
                              const TG_T *a, int64_t rs_a, int64_t cs_a, const TG_T *b,
                              int64_t rs_b, TG_T *c, int64_t ldc, int64_t m, int64_t n,
                              TG_T alpha, TG_T beta)
{
    if (m == kd->mr && n == kd->nr) {
        f(k, a, rs_a, cs_a, b, rs_b, c, ldc, alpha, beta);
    } else {
        TG_T t[GEMM_MAX_MR * GEMM_MAX_NR];
        f(k, a, rs_a, cs_a, b, rs_b, t, kd->nr, 1, 0);
        TG_F(store_edge)(t, kd->nr, c, ldc, m, n, alpha, beta);
    }
}

/* ---- reference path: plain loops, no buffers (the fallback) ---- */
static void TG_F(ref_rows)(const TG_F(gemm_prob) *j, int64_t i_begin, int64_t i_end)
{
    for (int64_t i = i_begin; i < i_end; i++) {
        TG_T *c = j->C + i * j->ldc;
        if (j->beta == 0)
            for (int64_t n = 0; n < j->N; n++) c[n] = 0;
        else if (j->beta != 1)
            for (int64_t n = 0; n < j->N; n++) c[n] *= j->beta;
        for (int64_t k = 0; k < j->K; k++) {
            TG_T a = j->alpha * (j->ta ? j->A[k * j->lda + i] : j->A[i * j->lda + k]);
            if (j->tb) {
                for (int64_t n = 0; n < j->N; n++) c[n] += a * j->B[n * j->ldb + k];
            } else {
                const TG_T *b = j->B + k * j->ldb;
                for (int64_t n = 0; n < j->N; n++) c[n] += a * b[n];
            }
        }
    }
}

static void TG_F(ref_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    TG_F(ref_rows)(ctx, begin, end);
}

static void TG_F(gemm_ref)(const TG_F(gemm_prob) *pr, int nthr)
{
    int64_t work = pr->N * (pr->K > 0 ? pr->K : 1);
    if (nthr > 1)
        tg_parallel_for(pr->M, work >= 4096 ? 1 : 4096 / work, TG_F(ref_range), (void *)pr);
    else
        TG_F(ref_rows)(pr, 0, pr->M);
}

/* C = beta * C (K == 0 or alpha == 0): A and B are not read. */
static void TG_F(gemm_scale)(const TG_F(gemm_prob) *pr)
{
    for (int64_t i = 0; i < pr->M; i++) {
        TG_T *c = pr->C + i * pr->ldc;
        for (int64_t j = 0; j < pr->N; j++) c[j] = pr->beta == 0 ? 0 : pr->beta * c[j];
    }
}

/* ---- small path: A unpacked, B in place or packed whole ----
 * Returns false if it cannot run (too big for the buffers, no buffers). */
static bool TG_F(gemm_small)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd)
{
    const int mr = kd->mr, nr = kd->nr;
    const int64_t M = pr->M, N = pr->N, K = pr->K;
    const int64_t n_full = pr->tb ? 0 : N / nr * nr;   /* columns read in place */
    const int64_t n_pack = N - n_full;                  /* columns packed */
    const int64_t n_pack_pad = (n_pack + nr - 1) / nr * nr;
    TG_T *bp = NULL, *ap = NULL;
    if (n_pack) {
        if ((size_t)K * (size_t)n_pack_pad * sizeof(TG_T) > GEMM_B_BYTES) return false;
        if (!(bp = gemm_buf(1))) return false;
        TG_F(pack_b)(pr, nr, 0, K, n_full, n_pack, bp);
    }
    if (M % mr) {
        if ((size_t)K * (size_t)mr * sizeof(TG_T) > GEMM_A_BYTES) return false;
        if (!(ap = gemm_buf(0))) return false;
    }
    const int64_t rs_a = pr->ta ? 1 : pr->lda, cs_a = pr->ta ? pr->lda : 1;
    for (int64_t i = 0; i < M; i += mr) {
        int64_t m = M - i < mr ? M - i : mr;
        const TG_T *a = pr->A + i * rs_a;
        int64_t rs = rs_a, cs = cs_a;
        if (m < mr) {   /* the last rows: pack them, zero-padded, instead of reading past A */
            TG_F(pack_a)(pr, mr, i, m, 0, K, ap);
            a = ap, rs = 1, cs = mr;
        }
        for (int64_t j = 0; j < N; j += nr) {
            int64_t n = N - j < nr ? N - j : nr;
            if (j < n_full)
                TG_F(tile)(kd, kd->strided, K, a, rs, cs, pr->B + j, pr->ldb,
                           pr->C + i * pr->ldc + j, pr->ldc, m, n, pr->alpha, pr->beta);
            else
                TG_F(tile)(kd, kd->strided, K, a, rs, cs, bp + (j - n_full) * K, nr,
                           pr->C + i * pr->ldc + j, pr->ldc, m, n, pr->alpha, pr->beta);
        }
    }
    return true;
}

/* ---- packed path ---- */
typedef struct TG_F(gemm_block) {
    const TG_F(gemm_prob) *pr;
    const TG_F(gemm_kernel) *kd;
    int64_t jc, nc, pc, kc;   /* the current B block: columns [jc, jc+nc), k [pc, pc+kc) */
    TG_T beta;                /* pr->beta for the first k slice, 1 after */
    TG_T *bp;                 /* the packed B block */
    int64_t mc, n_ic;         /* row blocks of op(A) */
    int64_t n_js;             /* column splits of the B block (when M is small) */
} TG_F(gemm_block);

static void TG_F(pack_b_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gemm_block) *g = ctx;
    const int64_t nr = g->kd->nr;
    (void)tid;
    int64_t j0 = begin * nr, j1 = end * nr < g->nc ? end * nr : g->nc;
    TG_F(pack_b)(g->pr, (int)nr, g->pc, g->kc, g->jc + j0, j1 - j0, g->bp + j0 * g->kc);
}

/* Work items [begin, end): item = (row block ic, column split js). */
static void TG_F(compute_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gemm_block) *g = ctx;
    const TG_F(gemm_prob) *pr = g->pr;
    const TG_F(gemm_kernel) *kd = g->kd;
    const int mr = kd->mr, nr = kd->nr;
    const int64_t kc = g->kc, n_panels = (g->nc + nr - 1) / nr;
    TG_T *ap = gemm_buf(0);
    int64_t packed_ic = -1;
    (void)tid;
    for (int64_t item = begin; item < end; item++) {
        int64_t ic = item / g->n_js, js = item % g->n_js;
        int64_t i0 = ic * g->mc, m = pr->M - i0 < g->mc ? pr->M - i0 : g->mc;
        int64_t s0 = js * n_panels / g->n_js, s1 = (js + 1) * n_panels / g->n_js;
        TG_T *c0 = pr->C + i0 * pr->ldc + g->jc;
        if (ap) {   /* pack the A block once, run the B panels over it */
            if (packed_ic != ic) TG_F(pack_a)(pr, mr, i0, m, g->pc, kc, ap);
            packed_ic = ic;
            for (int64_t s = s0; s < s1; s++) {
                int64_t j = s * nr, n = g->nc - j < nr ? g->nc - j : nr;
                for (int64_t i = 0; i < m; i += mr)
                    TG_F(tile)(kd, kd->packed, kc, ap + i * kc, 1, mr, g->bp + j * kc, nr,
                               c0 + i * pr->ldc + j, pr->ldc, m - i < mr ? m - i : mr, n,
                               pr->alpha, g->beta);
            }
        } else {    /* no buffer for A on this thread: one mr x kc panel at a time on the stack */
            TG_T panel[GEMM_MAX_MR * 256];
            for (int64_t i = 0; i < m; i += mr) {
                int64_t h = m - i < mr ? m - i : mr;
                TG_F(pack_a)(pr, mr, i0 + i, h, g->pc, kc, panel);
                for (int64_t s = s0; s < s1; s++) {
                    int64_t j = s * nr, n = g->nc - j < nr ? g->nc - j : nr;
                    TG_F(tile)(kd, kd->packed, kc, panel, 1, mr, g->bp + j * kc, nr,
                               c0 + i * pr->ldc + j, pr->ldc, h, n, pr->alpha, g->beta);
                }
            }
        }
    }
}

static bool TG_F(gemm_packed)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd, int nthr)
{
    TG_T *bp = gemm_buf(1);
    if (!bp) return false;
    const int mr = kd->mr, nr = kd->nr;
    const int64_t M = pr->M, N = pr->N, K = pr->K;
    TG_F(gemm_block) g = {.pr = pr, .kd = kd, .bp = bp};
    /* K slices: as few as kd->kc allows, of equal depth (from K alone) */
    int64_t n_pc = (K + kd->kc - 1) / kd->kc;
    int64_t kc = (K + n_pc - 1) / n_pc;
    /* row blocks: as few as kd->mc allows, a multiple of the thread count when
     * that keeps them at least 4 tiles high, of equal height (whole tiles) */
    int64_t n_ic = (M + kd->mc - 1) / kd->mc;
    if (nthr > 1 && n_ic % nthr && M >= (int64_t)nthr * 4 * mr) n_ic = (n_ic + nthr - 1) / nthr * nthr;
    int64_t mc = ((M + n_ic - 1) / n_ic + mr - 1) / mr * mr;
    g.mc = mc;
    g.n_ic = (M + mc - 1) / mc;
    for (int64_t jc = 0; jc < N; jc += kd->nc) {
        g.jc = jc;
        g.nc = N - jc < kd->nc ? N - jc : kd->nc;
        int64_t n_panels = (g.nc + nr - 1) / nr;
        /* too few row blocks for the threads: split the columns too */
        g.n_js = g.n_ic >= nthr ? 1 : (nthr + g.n_ic - 1) / g.n_ic;
        if (g.n_js > n_panels) g.n_js = n_panels;
        for (int64_t pc = 0; pc < K; pc += kc) {
            g.pc = pc;
            g.kc = K - pc < kc ? K - pc : kc;
            g.beta = pc == 0 ? pr->beta : 1;
            if (nthr > 1 && n_panels > 1 && g.kc * g.nc >= 16384)
                tg_parallel_for(n_panels, 1, TG_F(pack_b_range), &g);
            else
                TG_F(pack_b_range)(&g, 0, n_panels, 0);
            int64_t items = g.n_ic * g.n_js;
            if (nthr > 1 && items > 1)
                tg_parallel_for(items, 1, TG_F(compute_range), &g);
            else
                TG_F(compute_range)(&g, 0, items, 0);
        }
    }
    return true;
}

/* ---- one problem, with nthr threads ---- */
static void TG_F(gemm_one)(const TG_F(gemm_prob) *pr, int nthr)
{
    if (pr->K == 0 || pr->alpha == 0) {
        TG_F(gemm_scale)(pr);
        return;
    }
    const TG_F(gemm_kernel) *kd = TG_F(kernel)();
    tg__gemm_path path = (tg__gemm_path)atomic_load_explicit(&gemm_path, memory_order_relaxed);
    if (path == TG__GEMM_PATH_AUTO) {
        /* small: packing would cost about as much as the product */
        int64_t mn = pr->M * pr->N;
        path = (mn <= 64 * 64 || pr->M <= 2 * kd->mr) && pr->K <= 4096 ? TG__GEMM_PATH_SMALL
                                                                       : TG__GEMM_PATH_PACKED;
    }
    if (path == TG__GEMM_PATH_SMALL && TG_F(gemm_small)(pr, kd)) return;
    if (path != TG__GEMM_PATH_REF && TG_F(gemm_packed)(pr, kd, nthr)) return;
    TG_F(gemm_ref)(pr, nthr);
}

/* ---- batched ---- */
typedef struct TG_F(gemm_batch) {
    TG_F(gemm_prob) p;        /* item 0 */
    int64_t sa, sb, sc;
} TG_F(gemm_batch);

static void TG_F(batch_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gemm_batch) *bt = ctx;
    (void)tid;
    for (int64_t b = begin; b < end; b++) {
        TG_F(gemm_prob) p = bt->p;
        p.A += b * bt->sa;
        p.B += b * bt->sb;
        p.C += b * bt->sc;
        TG_F(gemm_one)(&p, 1);
    }
}

void TG_F(tg_gemm_batched)(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N,
                           int64_t K, TG_T alpha, const TG_T *A, int64_t lda, int64_t stride_a,
                           const TG_T *B, int64_t ldb, int64_t stride_b, TG_T beta, TG_T *C,
                           int64_t ldc, int64_t stride_c)
{
    if (batch <= 0 || M <= 0 || N <= 0) return;
    TG_F(gemm_batch) bt = {{trans_a, trans_b, M, N, K < 0 ? 0 : K, alpha, beta, A, B, C,
                            lda, ldb, ldc},
                           stride_a, stride_b, stride_c};
    int nthr = tg_threads_available();
    double work = (double)M * (double)N * (double)(K > 0 ? K : 1);
    /* items in parallel when there are enough of them and each is not huge;
     * a shared C (stride_c == 0) keeps the items in order */
    if (batch > 1 && nthr > 1 && stride_c != 0 &&
        (batch >= 4 * (int64_t)nthr || (batch >= nthr && work <= 4e6))) {
        int64_t grain = work >= 65536 ? 1 : (int64_t)(65536 / work);
        tg_parallel_for(batch, grain, TG_F(batch_range), &bt);
        return;
    }
    for (int64_t b = 0; b < batch; b++) {
        TG_F(gemm_prob) p = bt.p;
        p.A += b * stride_a;
        p.B += b * stride_b;
        p.C += b * stride_c;
        TG_F(gemm_one)(&p, work >= 65536 ? nthr : 1);
    }
}

void TG_F(tg_gemm)(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, TG_T alpha,
                   const TG_T *A, int64_t lda, const TG_T *B, int64_t ldb, TG_T beta, TG_T *C,
                   int64_t ldc)
{
    TG_F(tg_gemm_batched)(trans_a, trans_b, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C,
                          ldc, 0);
}

#undef C_MR
#undef C_NR
#endif
