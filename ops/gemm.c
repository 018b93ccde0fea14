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
 *                 a portable C 4x8, chosen at run time (tg__gemm_kernel_get,
 *                 from the instruction set every vector kernel uses:
 *                 tg__isa_auto, ops/simd/vec.h). The x86 ones are in
 *                 ops/simd/vec_gemm_ukr.h.
 *   packed path   for each NC-wide block of columns and KC-deep slice of K:
 *                 pack op(B)[KC, NC] once into NR-wide panels (shared by all
 *                 threads), then every thread takes MC-row blocks of op(A),
 *                 packs them into MR-high panels in its own buffer, and runs
 *                 the microkernel over the block (jr outer, ir inner: the
 *                 B panel stays in L1, the A block in L2).
 *   small path    for one-thread items whose op(B) fits L2 (attention heads,
 *                 batched items): no packing of A (the microkernel broadcasts
 *                 straight from A through its strides); B read in place when
 *                 its rows are short and contiguous, else packed whole per K
 *                 slice. Same K slices as the packed path, so the same bits.
 *
 * Batched calls run items in parallel when they are small or many, and each
 * item in parallel (over row blocks, or column panels when M is small) when
 * they are big. A tall item whose op(B) fits L2 (the linear layers of small
 * models: M = batch x tokens, N and K of 64..256) is cut by rows between the
 * threads, each part on the small path: no A packing, 1.2-1.6x the packed
 * path's GFLOPS at 7168 x 64 x 64 .. 10752 x 256 x 256 on 2 threads. Per-thread packing buffers are allocated once, lazily, with
 * tg__malloc_workspace; if that fails the call falls back to a path that needs
 * none (an MR x KC stack panel, or the plain C loops of gemm_ref).
 *
 * Numbers: beta == 0 never reads C; the K sum is blocked by KC only (chosen
 * from K, not from the thread count), so results are bitwise the same for
 * any number of threads. No -ffast-math; FMA only in the x86 microkernels.
 *
 * Not: a BLAS (no complex, no column-major interface), nor tuned for CPUs
 * other than x86-64; other machines get the portable C microkernel.
 *
 * Reading order (engine/generic.h): the public entry (tg_gemm_batched, by
 * dtype), the run-time choice of microkernel and the per-thread buffers,
 * then the kernels: the x86 microkernel template and the float32 AVX2
 * packers (written once), and the engine, compiled once per type at the end
 * of the file: the typed entry points and the batch loop, the planner (which
 * path for one problem), the paths (K split, split, small, packed,
 * reference), packing and tiles, and last the microkernels and their table.
 */
#ifndef TG_KERNELS /* ====================== the op proper: type-independent, compiled once */
#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#  include <immintrin.h>
#  include "simd/vec_tr8x8.h"
#  define TG_GEMM_X86 1
#else
#  define TG_GEMM_X86 0
#endif

#include "gemm.h"
#include "gemm_internal.h"
#include "internal.h"
#include "simd/vec.h"
#include "threads.h"

/* ---- the public entry ----
 * By dtype to tg_gemm_batched_f32 / _f64 (gemm.h): the engine, defined once
 * per type at the end of this file. */
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

/* ---- kernel choice ---- */
static atomic_int gemm_kernel = -1;            /* -1: not chosen yet */
static atomic_int gemm_path = TG__GEMM_PATH_AUTO;

/* The kernel for each instruction set (ops/simd/vec.h: tg__isa). */
static const tg__isa kernel_isa[TG__GEMM_KERNEL_COUNT] = {
    [TG__GEMM_KERNEL_C] = TG__ISA_PORTABLE,
    [TG__GEMM_KERNEL_AVX2] = TG__ISA_AVX2,
    [TG__GEMM_KERNEL_AVX512] = TG__ISA_AVX512,
};

static bool kernel_supported(tg__gemm_kernel k)
{
    if (k == TG__GEMM_KERNEL_C) return true;
    return TG_GEMM_X86 && tg__isa_supported(kernel_isa[k]);
}

/* TG_GEMM_KERNEL names one (if the CPU has it); else the instruction set of
 * every vector kernel (tg__isa_auto: the CPU's best, less TG_NO_SIMD /
 * TG_NO_AVX512). */
static tg__gemm_kernel kernel_auto(void)
{
    const char *env = getenv("TG_GEMM_KERNEL");
    if (env && *env)
        for (int k = 0; k < TG__GEMM_KERNEL_COUNT; k++)
            if (strcmp(env, tg__gemm_kernel_name((tg__gemm_kernel)k)) == 0 &&
                kernel_supported((tg__gemm_kernel)k))
                return (tg__gemm_kernel)k;
    tg__isa isa = tg__isa_auto();
    for (int k = TG__GEMM_KERNEL_COUNT - 1; k > 0; k--)
        if (kernel_isa[k] == isa && kernel_supported((tg__gemm_kernel)k)) return (tg__gemm_kernel)k;
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
    if ((int)k < 0 || k >= TG__GEMM_KERNEL_COUNT || !kernel_supported(k)) return false;
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
 * B: one packed KC x NC block of op(B) (the calling thread's, read by all);
 * K: the K split's partial products (the calling thread's, written by all).
 * Allocated on first use, kept until the thread exits (a pthread key frees
 * them then; the main thread's stay reachable through its TLS until exit). */
#define GEMM_A_BYTES ((size_t)160 * 1024)
#define GEMM_B_BYTES ((size_t)4 * 1024 * 1024 + (size_t)64 * 1024)
#define GEMM_MAX_MR 12
#define GEMM_MAX_NR 32
#define GEMM_KC 256       /* K slice depth of every kernel (the stack fallback relies on it) */
#define GEMM_KSPLIT_MAX_C (256 * 256)     /* K split: C at most this many elements ... */
#define GEMM_KSPLIT_MAX_PARTS 8           /* ... in at most this many parts */
#define GEMM_K_BYTES ((size_t)GEMM_KSPLIT_MAX_PARTS * GEMM_KSPLIT_MAX_C * sizeof(double))

typedef struct gemm_bufs { void *a, *b, *k; } gemm_bufs;
static _Thread_local gemm_bufs tls_bufs;
static pthread_key_t bufs_key;
static pthread_once_t bufs_once = PTHREAD_ONCE_INIT;
static int bufs_key_ok;

static void bufs_free(void *p)
{
    gemm_bufs *b = p;
    tg__free_workspace(b->a);
    tg__free_workspace(b->b);
    tg__free_workspace(b->k);
    b->a = b->b = b->k = NULL;
}

static void bufs_key_init(void) { bufs_key_ok = pthread_key_create(&bufs_key, bufs_free) == 0; }

/* This thread's buffer (which = 0: A, 1: B, 2: K), or NULL if it cannot be had. */
static void *gemm_buf(int which)
{
    gemm_bufs *t = &tls_bufs;
    void **slot = which == 2 ? &t->k : which ? &t->b : &t->a;
    if (*slot) return *slot;
    pthread_once(&bufs_once, bufs_key_init);
    *slot = tg__malloc_workspace(which == 2 ? GEMM_K_BYTES : which ? GEMM_B_BYTES : GEMM_A_BYTES);
    if (*slot && bufs_key_ok) pthread_setspecific(bufs_key, t);
    return *slot;
}

/* ---- the x86 microkernels and float32 AVX2 packers (ops/simd/vec_gemm_ukr.h) ---- */
#if TG_GEMM_X86
#include "simd/vec_gemm_ukr.h"
#endif

/* ---- the engine, once per type ---- */

#define TG_SELF "gemm.c"
#include "instantiate.h"

#else /* ======================= the engine, compiled once per type (TG_T = float, double) */
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
    /* pack one full panel, mr (pack_a) or nr (pack_b) lanes by kc deep (see pack_a) */
    void (*pack_a)(const TG_T *src, int64_t ls, int64_t ps, int64_t kc, TG_T *dst);
    void (*pack_b)(const TG_T *src, int64_t ls, int64_t ps, int64_t kc, TG_T *dst);
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

/* The split path's cut of C (see split below). */
typedef struct TG_F(gemm_split) {
    const TG_F(gemm_prob) *pr;
    const TG_F(gemm_kernel) *kd;
    bool by_rows;
    int64_t parts;
    bool small;               /* each part on the small path (A unpacked) */
} TG_F(gemm_split);

/* the engine's parts, after the entry points and the planner that call them:
 * the paths, packing and tiles, the microkernels and their table */
static void TG_F(gemm_one)(const TG_F(gemm_prob) *pr, int nthr);
static bool TG_F(gemm_ksplit_run)(const TG_F(gemm_prob) *pr, int nthr);
static void TG_F(split_range)(void *ctx, int64_t begin, int64_t end, int tid);
static bool TG_F(gemm_small)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd);
static bool TG_F(gemm_packed)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd, int nthr);
static void TG_F(gemm_ref)(const TG_F(gemm_prob) *pr, int nthr);
static void TG_F(gemm_scale)(const TG_F(gemm_prob) *pr);
static void TG_F(pack_a)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd, int64_t i0,
                         int64_t m, int64_t p0, int64_t kc, TG_T *dst);
static void TG_F(pack_b)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd, int64_t p0,
                         int64_t kc, int64_t j0, int64_t n, TG_T *dst);
static void TG_F(store_edge)(const TG_T *t, int64_t tn, TG_T *c, int64_t ldc, int64_t m,
                             int64_t n, TG_T alpha, TG_T beta);
static inline void TG_F(tile)(const TG_F(gemm_kernel) *kd, TG_F(ukr_fn) f, int64_t k,
                              const TG_T *a, int64_t rs_a, int64_t cs_a, const TG_T *b,
                              int64_t rs_b, TG_T *c, int64_t ldc, int64_t m, int64_t n,
                              TG_T alpha, TG_T beta);
static const TG_F(gemm_kernel) *TG_F(kernel)(void);

/* ---- the entry points, per type: batched ---- */
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
    if (!C || (K > 0 && (!A || !B))) {
        tg_set_error(TG_ERR_INVALID, "%s: %s is NULL", __func__, !C ? "C" : !A ? "A" : "B");
        return;
    }
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
    /* one item at a time, split over the threads if big enough to pay for
     * the hand-offs (measured: 2 threads lose below ~100^3, win from 128^3) */
    for (int64_t b = 0; b < batch; b++) {
        TG_F(gemm_prob) p = bt.p;
        p.A += b * stride_a;
        p.B += b * stride_b;
        p.C += b * stride_c;
        TG_F(gemm_one)(&p, work >= 1.5e6 ? nthr : 1);
    }
}

void TG_F(tg_gemm)(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, TG_T alpha,
                   const TG_T *A, int64_t lda, const TG_T *B, int64_t ldb, TG_T beta, TG_T *C,
                   int64_t ldc)
{
    TG_F(tg_gemm_batched)(trans_a, trans_b, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C,
                          ldc, 0);
}

/* ---- planning: one problem, with nthr threads ---- */

/* Depth of the K slices: as few as kd->kc allows, of equal depth. From K
 * alone (never the thread count or the path), so results do not depend on them. */
static inline int64_t TG_F(k_slice)(const TG_F(gemm_kernel) *kd, int64_t K)
{
    int64_t n_pc = (K + kd->kc - 1) / kd->kc;
    return (K + n_pc - 1) / n_pc;
}

/* when the K split (below) is taken */
#define GEMM_KSPLIT_MIN_K 1024            /* at least this deep (C up to MAX_C) */
#define GEMM_KSPLIT_TINY_C (64 * 128)     /* a C this small: */
#define GEMM_KSPLIT_TINY_K 384            /* from this deep */
#define GEMM_KSPLIT_CHUNK 1024            /* about this deep per chunk */

/* Split? By shape alone. Measured on 2 threads (GFLOPS, one GEMM over C ->
 * K split): 64x64x448 115 -> 255, 128x64x448 169 -> 292, 64x64x1792 143 ->
 * 308, 256x256x1792 256 -> 346; but 256x256x512 390 -> 320 (C has tiles
 * enough to share). On 1 thread a split costs 0-12% (two packings of B). */
#define GEMM_KSPLIT_WANTED(M, N, K)                                  \
    (((K) >= GEMM_KSPLIT_MIN_K && (M) * (N) <= GEMM_KSPLIT_MAX_C) ||  \
     ((K) >= GEMM_KSPLIT_TINY_K && (M) * (N) <= GEMM_KSPLIT_TINY_C))

static void TG_F(gemm_one)(const TG_F(gemm_prob) *pr, int nthr)
{
    if (pr->K == 0 || pr->alpha == 0) {
        TG_F(gemm_scale)(pr);
        return;
    }
    /* chosen by shape alone (not nthr), so every thread count gives the same bits */
    if (GEMM_KSPLIT_WANTED(pr->M, pr->N, pr->K) &&
        atomic_load_explicit(&gemm_path, memory_order_relaxed) == TG__GEMM_PATH_AUTO &&
        TG_F(gemm_ksplit_run)(pr, nthr))
        return;
    const TG_F(gemm_kernel) *kd = TG_F(kernel)();
    tg__gemm_path path = (tg__gemm_path)atomic_load_explicit(&gemm_path, memory_order_relaxed);
    if (path == TG__GEMM_PATH_AUTO) {
        /* small (A unpacked, B packed whole): as fast as the packed path while
         * op(B) fits L2, and faster for small M or N, where packing A costs as
         * much as the product. It runs on one thread: big items go packed. */
        int64_t n_pad = (pr->N + kd->nr - 1) / kd->nr * kd->nr;
        bool b_fits = (double)pr->K * (double)n_pad * sizeof(TG_T) <= 512.0 * 1024;
        /* several threads, op(B) small, M tall (a linear layer of a small
         * model): the rows cut between the threads, each on the small path */
        if (b_fits && nthr > 1 && pr->M >= (int64_t)nthr * 8 * kd->mr) {
            TG_F(gemm_split) sp = {pr, kd, true, nthr, true};
            tg_parallel_for(sp.parts, 1, TG_F(split_range), &sp);
            return;
        }
        path = nthr == 1 && b_fits ? TG__GEMM_PATH_SMALL : TG__GEMM_PATH_PACKED;
    }
    if (path == TG__GEMM_PATH_SMALL && TG_F(gemm_small)(pr, kd)) return;
    if (path == TG__GEMM_PATH_PACKED && nthr > 1) {
        /* many K slices (>= 8): one part of C per thread (measured ~10% faster
         * for dW-like shapes, 256 x 256 x 10752; slower with 2 slices) */
        bool by_rows = pr->M >= pr->N;
        int64_t extent = by_rows ? pr->M : pr->N, unit = by_rows ? kd->mr : kd->nr;
        if (pr->K > 7 * kd->kc && extent >= (int64_t)nthr * 4 * unit) {
            TG_F(gemm_split) sp = {pr, kd, by_rows, nthr, false};
            tg_parallel_for(sp.parts, 1, TG_F(split_range), &sp);
            return;
        }
    }
    if (path != TG__GEMM_PATH_REF && TG_F(gemm_packed)(pr, kd, nthr)) return;
    TG_F(gemm_ref)(pr, nthr);
}

/* ---- K split: a small C over a long K (a weight gradient, dW = dY^T X) ----
 * The depth is cut into `parts` chunks, fixed by K alone; each chunk's product
 * goes to its own buffer (one serial GEMM each, in parallel), and C = beta C +
 * alpha (sum of the chunks, in chunk order). The same bits on any number of
 * threads; on 2 threads 64 x 64 x 2688 runs about 3x faster than one GEMM
 * split over C, which has too few tiles to share. */
typedef struct TG_F(gemm_ksplit) {
    const TG_F(gemm_prob) *pr;
    int64_t parts;
    TG_T *t;                  /* [parts, M, N] */
} TG_F(gemm_ksplit);

static void TG_F(ksplit_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gemm_ksplit) *ks = ctx;
    const TG_F(gemm_prob) *pr = ks->pr;
    const TG_F(gemm_kernel) *kd = TG_F(kernel)();
    (void)tid;
    for (int64_t part = begin; part < end; part++) {
        const int64_t k0 = part * pr->K / ks->parts, k1 = (part + 1) * pr->K / ks->parts;
        TG_F(gemm_prob) sub = *pr;
        sub.K = k1 - k0;
        sub.alpha = 1;
        sub.beta = 0;
        sub.A += pr->ta ? k0 * pr->lda : k0;
        sub.B += pr->tb ? k0 : k0 * pr->ldb;
        sub.C = ks->t + part * pr->M * pr->N;
        sub.ldc = pr->N;
        if (!TG_F(gemm_small)(&sub, kd) && !TG_F(gemm_packed)(&sub, kd, 1))
            TG_F(gemm_ref)(&sub, 1);
    }
}

/* false (nothing done) when the buffer cannot be had */
static bool TG_F(gemm_ksplit_run)(const TG_F(gemm_prob) *pr, int nthr)
{
    int64_t parts = pr->K / GEMM_KSPLIT_CHUNK;
    parts = parts < 2 ? 2 : parts > GEMM_KSPLIT_MAX_PARTS ? GEMM_KSPLIT_MAX_PARTS : parts;
    TG_T *t = gemm_buf(2);   /* [parts, M, N]: this thread's, kept */
    if (!t) return false;
    TG_F(gemm_ksplit) ks = {pr, parts, t};
    if (nthr > 1) tg_parallel_for(parts, 1, TG_F(ksplit_range), &ks);
    else TG_F(ksplit_range)(&ks, 0, parts, 0);
    const int64_t MN = pr->M * pr->N;
    for (int64_t i = 0; i < pr->M; i++) {
        TG_T *c = pr->C + i * pr->ldc;
        for (int64_t j = 0; j < pr->N; j++) {
            TG_T s = t[i * pr->N + j];
            for (int64_t p = 1; p < parts; p++) s += t[p * MN + i * pr->N + j];
            c[j] = pr->beta == 0 ? pr->alpha * s : pr->alpha * s + pr->beta * c[j];
        }
    }
    return true;
}

/* ---- split: C cut into independent parts, one serial packed GEMM each ----
 * For problems with many K slices, where the packed path's two hand-offs per
 * slice (every thread waits for the slowest) cost more than each thread
 * packing the operand the parts share.
 * Cuts fall on tile boundaries, so the tiles (and the bits) are unchanged. */
static void TG_F(split_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gemm_split) *sp = ctx;
    const TG_F(gemm_prob) *pr = sp->pr;
    const int64_t unit = sp->by_rows ? sp->kd->mr : sp->kd->nr;
    const int64_t extent = sp->by_rows ? pr->M : pr->N, units = (extent + unit - 1) / unit;
    (void)tid;
    for (int64_t part = begin; part < end; part++) {
        int64_t lo = part * units / sp->parts * unit;
        int64_t hi = (part + 1) * units / sp->parts * unit;
        if (hi > extent) hi = extent;
        if (lo >= hi) continue;
        TG_F(gemm_prob) sub = *pr;
        if (sp->by_rows) {
            sub.M = hi - lo;
            sub.A += pr->ta ? lo : lo * pr->lda;
            sub.C += lo * pr->ldc;
        } else {
            sub.N = hi - lo;
            sub.B += pr->tb ? lo * pr->ldb : lo;
            sub.C += lo;
        }
        if (sp->small && TG_F(gemm_small)(&sub, sp->kd)) continue;
        if (!TG_F(gemm_packed)(&sub, sp->kd, 1)) TG_F(gemm_ref)(&sub, 1);
    }
}

/* ---- small path: A unpacked, B in place or packed whole ----
 * Returns false if it cannot run (too big for the buffers, no buffers). */
static bool TG_F(gemm_small)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd)
{
    const int mr = kd->mr, nr = kd->nr;
    const int64_t M = pr->M, N = pr->N, K = pr->K, kc_max = TG_F(k_slice)(kd, K);
    /* columns read in place: B rows contiguous and close together (a wide B
     * read in place thrashes L1 sets; packing it costs 1/M of the product) */
    const int64_t n_full = !pr->tb && pr->ldb * (int64_t)sizeof(TG_T) <= 512 ? N / nr * nr : 0;
    const int64_t n_pack = N - n_full;                  /* columns packed */
    const int64_t n_pack_pad = (n_pack + nr - 1) / nr * nr;
    TG_T *bp = NULL, *ap = NULL;
    if (n_pack) {
        if ((size_t)kc_max * (size_t)n_pack_pad * sizeof(TG_T) > GEMM_B_BYTES) return false;
        if (!(bp = gemm_buf(1))) return false;
    }
    if (M < mr && !(ap = gemm_buf(0))) return false;   /* fewer rows than a tile: packed */
    const int64_t rs_a = pr->ta ? 1 : pr->lda, cs_a = pr->ta ? pr->lda : 1;
    TG_T t[GEMM_MAX_MR * GEMM_MAX_NR];
    /* the K slices of the packed path, so that both give the same bits */
    for (int64_t pc = 0; pc < K; pc += kc_max) {
        const int64_t kc = K - pc < kc_max ? K - pc : kc_max;
        const TG_T beta = pc == 0 ? pr->beta : 1;
        if (n_pack) TG_F(pack_b)(pr, kd, pc, kc, n_full, n_pack, bp);
        for (int64_t i = 0; i < M; i += mr) {
            int64_t m = M - i < mr ? M - i : mr;
            int64_t skip = 0;   /* rows of the tile already done by the previous one */
            const TG_T *a = pr->A + i * rs_a + pc * cs_a;
            int64_t rs = rs_a, cs = cs_a;
            if (ap) {
                TG_F(pack_a)(pr, kd, i, m, pc, kc, ap);
                a = ap, rs = 1, cs = mr;
            } else if (m < mr) {
                /* the last rows: run the tile over rows M-mr .. M-1 (overlapping the
                 * previous tile, so nothing is read past A) and keep the new rows */
                skip = mr - m;
                a = pr->A + (M - mr) * rs_a + pc * cs_a;
            }
            for (int64_t j = 0; j < N; j += nr) {
                int64_t n = N - j < nr ? N - j : nr;
                const TG_T *b = j < n_full ? pr->B + pc * pr->ldb + j : bp + (j - n_full) * kc;
                int64_t rs_b = j < n_full ? pr->ldb : nr;
                TG_T *c = pr->C + i * pr->ldc + j;
                if (skip && beta == 0 && n == nr) {
                    /* beta == 0: rewriting the overlapped rows gives the same bits */
                    kd->strided(kc, a, rs, cs, b, rs_b, c - skip * pr->ldc, pr->ldc, pr->alpha, 0);
                } else if (skip) {
                    kd->strided(kc, a, rs, cs, b, rs_b, t, nr, 1, 0);
                    TG_F(store_edge)(t + skip * nr, nr, c, pr->ldc, m, n, pr->alpha, beta);
                } else {
                    TG_F(tile)(kd, kd->strided, kc, a, rs, cs, b, rs_b, c, pr->ldc, m, n,
                               pr->alpha, beta);
                }
            }
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
    TG_F(pack_b)(g->pr, g->kd, g->pc, g->kc, g->jc + j0, j1 - j0, g->bp + j0 * g->kc);
}

/* The A block of rows [i0, i0+m) against B panels [s0, s1) when this thread
 * has no A buffer (its allocation failed): one mr x kc panel at a time on the
 * stack. Kept out of line so the usual path does not carry the big frame. */
__attribute__((noinline)) static void TG_F(block_no_buffer)(const TG_F(gemm_block) *g, int64_t i0,
                                                            int64_t m, int64_t s0, int64_t s1)
{
    const TG_F(gemm_prob) *pr = g->pr;
    const TG_F(gemm_kernel) *kd = g->kd;
    const int mr = kd->mr, nr = kd->nr;
    TG_T panel[GEMM_MAX_MR * GEMM_KC];   /* kc <= kd->kc == GEMM_KC */
    TG_T *c0 = pr->C + i0 * pr->ldc + g->jc;
    for (int64_t i = 0; i < m; i += mr) {
        int64_t h = m - i < mr ? m - i : mr;
        TG_F(pack_a)(pr, kd, i0 + i, h, g->pc, g->kc, panel);
        for (int64_t s = s0; s < s1; s++) {
            int64_t j = s * nr, n = g->nc - j < nr ? g->nc - j : nr;
            TG_F(tile)(kd, kd->packed, g->kc, panel, 1, mr, g->bp + j * g->kc, nr,
                       c0 + i * pr->ldc + j, pr->ldc, h, n, pr->alpha, g->beta);
        }
    }
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
            if (packed_ic != ic) TG_F(pack_a)(pr, kd, i0, m, g->pc, kc, ap);
            packed_ic = ic;
            for (int64_t s = s0; s < s1; s++) {
                int64_t j = s * nr, n = g->nc - j < nr ? g->nc - j : nr;
                for (int64_t i = 0; i < m; i += mr)
                    TG_F(tile)(kd, kd->packed, kc, ap + i * kc, 1, mr, g->bp + j * kc, nr,
                               c0 + i * pr->ldc + j, pr->ldc, m - i < mr ? m - i : mr, n,
                               pr->alpha, g->beta);
            }
        } else {
            TG_F(block_no_buffer)(g, i0, m, s0, s1);
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
    int64_t kc = TG_F(k_slice)(kd, K);
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

/* ---- packing ----
 * A panel is w lanes (rows of op(A), or columns of op(B)) by kc deep, stored
 * depth-major: dst[p*w + l] = src[l*ls + p*ps]. ls == 1 (lanes contiguous) is
 * a copy; ps == 1 (depth contiguous) a transpose. Full panels go through the
 * kernel's pack functions (kd->pack_a, kd->pack_b), partial ones through
 * pack_edge, which zero-fills the missing lanes. */
static void TG_F(pack_edge)(const TG_T *src, int64_t ls, int64_t ps, int64_t kc, int64_t h,
                            int w, TG_T *dst)
{
    for (int64_t p = 0; p < kc; p++) {
        for (int64_t l = 0; l < h; l++) dst[p * w + l] = src[l * ls + p * ps];
        for (int64_t l = h; l < w; l++) dst[p * w + l] = 0;
    }
}

/* Lanes contiguous (ls == 1): walk the source a depth row at a time, dealing
 * each row out to the full panels, so memory is read in order (the source
 * slice is often one contiguous block) rather than a few bytes of every row
 * per panel. w is a compile-time constant at each call below. */
__attribute__((always_inline)) static inline void TG_F(pack_rows_body)(const TG_T *src,
                                                                       int64_t ps, int64_t kc,
                                                                       int64_t panels,
                                                                       TG_T *dst, const int w)
{
    for (int64_t p = 0; p < kc; p++) {
        const TG_T *s = src + p * ps;
        TG_T *d = dst + p * w;
        for (int64_t r = 0; r < panels; r++, s += w, d += w * kc) memcpy(d, s, sizeof(TG_T) * w);
    }
}

static void TG_F(pack_rows)(const TG_T *src, int64_t ps, int64_t kc, int64_t panels, TG_T *dst,
                            int w)
{
    switch (w) {
    case 4: TG_F(pack_rows_body)(src, ps, kc, panels, dst, 4); break;
    case 6: TG_F(pack_rows_body)(src, ps, kc, panels, dst, 6); break;
    case 8: TG_F(pack_rows_body)(src, ps, kc, panels, dst, 8); break;
    case 12: TG_F(pack_rows_body)(src, ps, kc, panels, dst, 12); break;
    case 16: TG_F(pack_rows_body)(src, ps, kc, panels, dst, 16); break;
    case 32: TG_F(pack_rows_body)(src, ps, kc, panels, dst, 32); break;
    default: TG_F(pack_rows_body)(src, ps, kc, panels, dst, w); break;
    }
}

/* m lanes of a source with strides (ls, ps) into w-lane panels: full panels by
 * rows (ls == 1 and a few panels: measured better up to ~20 panels, worse at
 * 85, where the writes scatter over too many streams) or by the kernel's
 * packer, the rest zero-padded. */
static void TG_F(pack_lanes)(const TG_T *src, int64_t ls, int64_t ps, int64_t m, int64_t kc,
                             int w, void (*pack)(const TG_T *, int64_t, int64_t, int64_t, TG_T *),
                             TG_T *dst)
{
    int64_t panels = m / w;
    if (ls == 1 && panels > 1 && panels <= 24) {
        TG_F(pack_rows)(src, ps, kc, panels, dst, w);
    } else {
        for (int64_t r = 0; r < panels; r++) pack(src + r * w * ls, ls, ps, kc, dst + r * w * kc);
    }
    if (m > panels * w) TG_F(pack_edge)(src + panels * w * ls, ls, ps, kc, m - panels * w, w,
                                        dst + panels * w * kc);
}

/* op(A)[i0 : i0+m, p0 : p0+kc] into mr-high panels (zeros below row m). */
static void TG_F(pack_a)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd, int64_t i0,
                         int64_t m, int64_t p0, int64_t kc, TG_T *dst)
{
    const int64_t ls = pr->ta ? 1 : pr->lda, ps = pr->ta ? pr->lda : 1;
    TG_F(pack_lanes)(pr->A + i0 * ls + p0 * ps, ls, ps, m, kc, kd->mr, kd->pack_a, dst);
}

/* op(B)[p0 : p0+kc, j0 : j0+n] into nr-wide panels (zeros right of column n). */
static void TG_F(pack_b)(const TG_F(gemm_prob) *pr, const TG_F(gemm_kernel) *kd, int64_t p0,
                         int64_t kc, int64_t j0, int64_t n, TG_T *dst)
{
    const int64_t ls = pr->tb ? pr->ldb : 1, ps = pr->tb ? 1 : pr->ldb;
    TG_F(pack_lanes)(pr->B + j0 * ls + p0 * ps, ls, ps, n, kc, kd->nr, kd->pack_b, dst);
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

/* ---- the x86 microkernels for TG_T (ops/simd/vec_gemm_ukr.h) ---- */
#if TG_GEMM_X86
#include "simd/vec_gemm_ukr.h"
#endif

/* ---- full-panel packers (see pack_a above): portable, width fixed at compile time ---- */
__attribute__((always_inline)) static inline void TG_F(panel_body)(const TG_T *src, int64_t ls,
                                                                   int64_t ps, int64_t kc,
                                                                   TG_T *dst, const int w)
{
    if (ls == 1) {
        for (int64_t p = 0; p < kc; p++)
            for (int l = 0; l < w; l++) dst[p * w + l] = src[p * ps + l];
    } else {
        for (int l = 0; l < w; l++)
            for (int64_t p = 0; p < kc; p++) dst[p * w + l] = src[l * ls + p * ps];
    }
}
#define PANEL_FN(W)                                                                           \
    static void TG_F(panel_##W)(const TG_T *src, int64_t ls, int64_t ps, int64_t kc, TG_T *dst) \
    {                                                                                         \
        TG_F(panel_body)(src, ls, ps, kc, dst, W);                                            \
    }
PANEL_FN(4)
PANEL_FN(8)
#if TG_GEMM_X86
PANEL_FN(6)
PANEL_FN(12)
PANEL_FN(16)
#  if TG_KERNELS == 32
PANEL_FN(32)
#  endif
#endif
#undef PANEL_FN

/* The kernel table. Blocking for Zen 3 / Skylake-class caches (L1d 32 KiB,
 * L2 >= 512 KiB per core): the kc x nr B panel fits L1 (16 KiB), the mc x kc
 * A block L2 (144 KiB), the kc x nc B block L3; mc * kc and kc * nc fit
 * GEMM_A_BYTES and GEMM_B_BYTES. On the Zen 3 this was tuned on, mc from 72 to
 * 240 and kc from 192 to 384 measured within noise of 144 x 256 (BLIS's
 * values for Zen 3), which was among the best at 512^3 and 10752x256x256. */
static const TG_F(gemm_kernel) *TG_F(kernel)(void)
{
    static const TG_F(gemm_kernel) table[TG__GEMM_KERNEL_COUNT] = {
#if TG_KERNELS == 32
        [TG__GEMM_KERNEL_C] = {C_MR, C_NR, 128, GEMM_KC, 4096, TG_F(ukr_c), TG_F(ukr_c),
                               TG_F(panel_4), TG_F(panel_8)},
#  if TG_GEMM_X86
        [TG__GEMM_KERNEL_AVX2] = {6, 16, 144, GEMM_KC, 4080, TG_F(ukr_avx2_packed),
                                  TG_F(ukr_avx2_strided), panel_6_avx2_f32, panel_16_avx2_f32},
        [TG__GEMM_KERNEL_AVX512] = {12, 32, 144, GEMM_KC, 4064, TG_F(ukr_avx512_packed),
                                    TG_F(ukr_avx512_strided), panel_12_avx2_f32,
                                    panel_32_avx2_f32},
#  endif
#else
        [TG__GEMM_KERNEL_C] = {C_MR, C_NR, 64, GEMM_KC, 2048, TG_F(ukr_c), TG_F(ukr_c),
                               TG_F(panel_4), TG_F(panel_8)},
#  if TG_GEMM_X86
        [TG__GEMM_KERNEL_AVX2] = {6, 8, 72, GEMM_KC, 2040, TG_F(ukr_avx2_packed),
                                  TG_F(ukr_avx2_strided), TG_F(panel_6), TG_F(panel_8)},
        [TG__GEMM_KERNEL_AVX512] = {12, 16, 72, GEMM_KC, 2032, TG_F(ukr_avx512_packed),
                                    TG_F(ukr_avx512_strided), TG_F(panel_12), TG_F(panel_16)},
#  endif
#endif
    };
    const TG_F(gemm_kernel) *kd = &table[tg__gemm_kernel_get()];
    return kd->packed ? kd : &table[TG__GEMM_KERNEL_C];
}

#undef C_MR
#undef C_NR
#endif
