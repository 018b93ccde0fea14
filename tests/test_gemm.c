/*
 * test_gemm.c - the GEMM kernel (ops/gemm.c) and the thread pool it runs on
 * (engine/threads.c).
 *
 * Every case is compared with a long-double reference, element by element,
 * within (K + 4) * eps of the sum of the absolute terms (the bound for a
 * length-K dot product, whatever the summation order), and run on every
 * microkernel this CPU supports (the portable C one included), every path
 * (auto, small, packed, reference) and 1 and 2 threads. Matrix padding (the
 * part of a row past its width) holds NaN in A and B, so reading it shows up,
 * and a sentinel in C, so writing it shows up; beta = 0 gets a NaN-filled C.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gemm.h"
#include "gemm_internal.h"
#include "simd/vec.h"
#include "internal.h"
#include "threads.h"

#define SENTINEL 12345.0

/* deterministic values in [-1, 1) */
static double val(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / (double)(1ULL << 52) - 1.0;
}

typedef struct gemm_case {
    int ta, tb;
    long batch, M, N, K;
    long pad;          /* lda, ldb, ldc exceed the width by this much */
    double alpha, beta;
    int sa0, sb0;      /* stride_a / stride_b = 0 (broadcast) */
} gemm_case;

/* One problem's data, both dtypes, plus the long-double reference. */
typedef struct gemm_data {
    gemm_case c;
    long lda, ldb, ldc, sa, sb, sc, na, nb, nc;
    double *A, *B, *C0;          /* as stored, padding included */
    long double *ref, *bound;    /* [batch, M, N] */
} gemm_data;

static double opA(const gemm_data *d, long b, long i, long k)
{
    const double *A = d->A + b * d->sa;
    return d->c.ta ? A[k * d->lda + i] : A[i * d->lda + k];
}

static double opB(const gemm_data *d, long b, long k, long j)
{
    const double *B = d->B + b * d->sb;
    return d->c.tb ? B[j * d->ldb + k] : B[k * d->ldb + j];
}

static void data_init(gemm_data *d, const gemm_case *c)
{
    memset(d, 0, sizeof *d);
    d->c = *c;
    long ar = c->ta ? c->K : c->M, ac = c->ta ? c->M : c->K;   /* A as stored: ar x ac */
    long br = c->tb ? c->N : c->K, bc = c->tb ? c->K : c->N;
    d->lda = ac + c->pad;
    d->ldb = bc + c->pad;
    d->ldc = c->N + c->pad;
    d->na = ar * d->lda;
    d->nb = br * d->ldb;
    d->nc = c->M * d->ldc;
    d->sa = c->sa0 ? 0 : d->na;
    d->sb = c->sb0 ? 0 : d->nb;
    d->sc = d->nc;
    long nA = d->na * (c->sa0 ? 1 : c->batch), nB = d->nb * (c->sb0 ? 1 : c->batch);
    long nC = d->nc * c->batch, nR = c->batch * c->M * c->N;
    d->A = malloc(sizeof(double) * (size_t)(nA ? nA : 1));
    d->B = malloc(sizeof(double) * (size_t)(nB ? nB : 1));
    d->C0 = malloc(sizeof(double) * (size_t)(nC ? nC : 1));
    d->ref = malloc(sizeof(long double) * (size_t)(nR ? nR : 1));
    d->bound = malloc(sizeof(long double) * (size_t)(nR ? nR : 1));
    cr_assert(d->A && d->B && d->C0 && d->ref && d->bound);
    uint64_t s = (uint64_t)(c->M * 1000003 + c->N * 1009 + c->K * 7 + c->ta * 2 + c->tb);
    for (long x = 0; x < nA; x++) d->A[x] = (x % d->lda) < ac ? val(&s) : NAN;
    for (long x = 0; x < nB; x++) d->B[x] = (x % d->ldb) < bc ? val(&s) : NAN;
    for (long x = 0; x < nC; x++)
        d->C0[x] = (x % d->ldc) >= c->N ? SENTINEL : c->beta == 0 ? NAN : val(&s);
    for (long b = 0; b < c->batch; b++)
        for (long i = 0; i < c->M; i++)
            for (long j = 0; j < c->N; j++) {
                long double sum = 0, abs_sum = 0;
                for (long k = 0; k < c->K; k++) {
                    long double t = (long double)opA(d, b, i, k) * opB(d, b, k, j);
                    sum += t;
                    abs_sum += fabsl(t);
                }
                long double c0 = c->beta == 0 ? 0 : (long double)c->beta * d->C0[b * d->sc + i * d->ldc + j];
                long r = (b * c->M + i) * c->N + j;
                d->ref[r] = (long double)c->alpha * sum + c0;
                d->bound[r] = fabsl((long double)c->alpha) * abs_sum + fabsl(c0);
            }
}

static void data_free(gemm_data *d)
{
    free(d->A);
    free(d->B);
    free(d->C0);
    free(d->ref);
    free(d->bound);
}

/* Run the case in dtype dt and check it; `what` names the configuration. */
static void data_check(const gemm_data *d, tg_dtype dt, const char *what)
{
    const gemm_case *c = &d->c;
    long nA = d->na * (c->sa0 ? 1 : c->batch), nB = d->nb * (c->sb0 ? 1 : c->batch);
    long nC = d->nc * c->batch;
    size_t es = dt == TG_F64 ? sizeof(double) : sizeof(float);
    void *A = malloc(es * (size_t)(nA ? nA : 1)), *B = malloc(es * (size_t)(nB ? nB : 1));
    void *C = malloc(es * (size_t)(nC ? nC : 1));
    cr_assert(A && B && C);
#define COPY(dst, src, n)                                                        \
    for (long x = 0; x < (n); x++) {                                             \
        if (dt == TG_F64) ((double *)(dst))[x] = (src)[x];                       \
        else ((float *)(dst))[x] = (float)(src)[x];                              \
    }
    COPY(A, d->A, nA)
    COPY(B, d->B, nB)
    COPY(C, d->C0, nC)
#undef COPY
    tg_gemm_batched(dt, c->ta, c->tb, c->batch, c->M, c->N, c->K, c->alpha, A, d->lda, d->sa, B,
                    d->ldb, d->sb, c->beta, C, d->ldc, d->sc);
    double eps = dt == TG_F64 ? DBL_EPSILON : FLT_EPSILON;
    long double tol = (long double)(c->K + 4) * eps;
    for (long b = 0; b < c->batch; b++)
        for (long i = 0; i < c->M; i++)
            for (long j = 0; j < d->ldc; j++) {
                long x = b * d->sc + i * d->ldc + j;
                long double got = dt == TG_F64 ? ((double *)C)[x] : ((float *)C)[x];
                if (j >= c->N) {
                    cr_assert(got == SENTINEL, "%s: wrote C padding at [%ld,%ld,%ld]", what, b, i, j);
                    continue;
                }
                long r = (b * c->M + i) * c->N + j;
                long double err = fabsl(got - d->ref[r]);
                cr_assert(err <= tol * d->bound[r] + 1e-30L,
                          "%s: C[%ld,%ld,%ld] = %.9Lg, expected %.9Lg (error %.3Lg > bound %.3Lg)",
                          what, b, i, j, got, d->ref[r], err, tol * d->bound[r]);
            }
    free(A);
    free(B);
    free(C);
}

static const char *path_name(tg__gemm_path p)
{
    static const char *n[] = {"auto", "small", "packed", "ref"};
    return n[p];
}

/* The case on every kernel, path and thread count, in f32 (and f64 if asked). */
static void check_all(const gemm_case *c, bool f64)
{
    gemm_data d;
    data_init(&d, c);
    for (int k = 0; k < TG__GEMM_KERNEL_COUNT; k++) {
        if (!tg__gemm_kernel_set((tg__gemm_kernel)k)) continue;   /* not on this CPU */
        for (int p = 0; p < TG__GEMM_PATH_COUNT; p++) {
            /* the reference path is the plain triple loop: big cases once is enough */
            if (p == TG__GEMM_PATH_REF && k != 0 && c->M * c->N * c->K * c->batch > 100000) continue;
            tg__gemm_path_set((tg__gemm_path)p);
            for (int t = 1; t <= 2; t++) {
                cr_assert(tg_threads_set(t) == TG_OK);
                char what[256];
                snprintf(what, sizeof what,
                         "kernel %s path %s threads %d: ta=%d tb=%d batch=%ld M=%ld N=%ld K=%ld "
                         "pad=%ld alpha=%g beta=%g sa0=%d sb0=%d",
                         tg__gemm_kernel_name((tg__gemm_kernel)k), path_name((tg__gemm_path)p), t,
                         c->ta, c->tb, c->batch, c->M, c->N, c->K, c->pad, c->alpha, c->beta,
                         c->sa0, c->sb0);
                data_check(&d, TG_F32, what);
                if (f64) data_check(&d, TG_F64, what);
            }
        }
    }
    tg__gemm_path_set(TG__GEMM_PATH_AUTO);
    tg__gemm_kernel_set(TG__GEMM_KERNEL_COUNT);
    data_free(&d);
}

/* ---- every transpose combination at odd sizes, padded leading dims ---- */
#define T4(M, N, K, pad, alpha, beta)                                                         \
    {0, 0, 1, M, N, K, pad, alpha, beta, 0, 0}, {0, 1, 1, M, N, K, pad, alpha, beta, 0, 0},   \
    {1, 0, 1, M, N, K, pad, alpha, beta, 0, 0}, {1, 1, 1, M, N, K, pad, alpha, beta, 0, 0}

ParameterizedTestParameters(gemm, shapes)
{
    static gemm_case cases[] = {
        T4(1, 1, 1, 0, 1.0, 0.0),
        T4(3, 17, 63, 3, 1.0, 0.0),
        T4(17, 3, 1, 1, -0.75, 1.0),
        T4(63, 65, 129, 5, 2.0, 0.5),
        T4(65, 63, 3, 0, 1.0, 1.0),
        T4(129, 1, 65, 2, 1.0, 0.0),
        T4(1, 129, 65, 7, 0.5, 1.0),
        T4(257, 17, 63, 1, 1.0, 0.0),
        T4(17, 257, 129, 0, -1.0, 0.5),
        T4(65, 129, 257, 3, 1.0, 1.0),
        T4(257, 65, 17, 0, 1.5, 0.0),
        T4(129, 257, 65, 1, 1.0, 1.0),
        T4(7, 6, 5, 0, 1.0, 0.0),
        T4(6, 16, 8, 0, 1.0, 1.0),       /* exactly one AVX2 tile */
        T4(12, 32, 8, 0, 1.0, 0.0),      /* exactly one AVX-512 tile */
        T4(300, 40, 517, 2, 1.0, 0.0),   /* K over KC: three K slices; M over MC */
        T4(5, 4100, 3, 1, 1.0, 0.5),     /* N over NC */
        T4(20, 2000, 70, 1, 1.0, 0.5),   /* few rows, big: the columns are split over threads */
        T4(300, 240, 2000, 2, 1.0, 0.5), /* many K slices: C split by rows over threads */
        T4(100, 700, 1900, 0, -1.0, 1.0), /* many K slices: C split by columns */
        T4(64, 64, 2688, 1, 1.5, 0.5),   /* small C, long K: K split (auto path) */
        T4(64, 128, 384, 1, 1.0, 0.5),   /* a tiny C from 384 deep: K split in 2 */
        T4(256, 256, 1024, 1, 1.0, 0.0), /* a C up to 256 x 256 from 1024 deep */
        T4(5, 7, 4099, 0, -1.0, 0.0),    /* K split into 4 uneven parts */
        T4(256, 256, 2048, 0, 1.0, 1.0), /* the largest C the K split takes */
    };
    return cr_make_param_array(gemm_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(gemm_case *c, gemm, shapes) { check_all(c, false); }

/* ---- f64: the same machinery, fewer cases ---- */
ParameterizedTestParameters(gemm, shapes_f64)
{
    static gemm_case cases[] = {
        T4(3, 17, 63, 3, 1.0, 0.0),
        T4(65, 63, 129, 1, -0.5, 1.0),
        T4(129, 65, 17, 0, 1.0, 0.5),
        T4(100, 30, 300, 2, 1.0, 0.0),
        T4(33, 17, 9000, 1, 0.5, 1.0),   /* K split into 8 parts */
    };
    return cr_make_param_array(gemm_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(gemm_case *c, gemm, shapes_f64) { check_all(c, true); }

/* ---- batched: strides, broadcast (stride 0), many small items, few big ones ---- */
ParameterizedTestParameters(gemm, batched)
{
    static gemm_case cases[] = {
        {0, 1, 37, 16, 16, 32, 0, 1.0, 0.0, 0, 0},   /* attention Q K^T, items in parallel */
        {0, 0, 37, 16, 32, 16, 1, 1.0, 1.0, 0, 0},   /* attention A V */
        {1, 0, 9, 17, 33, 16, 0, 0.5, 0.0, 0, 0},
        {0, 1, 5, 33, 17, 9, 2, 1.0, 1.0, 1, 0},     /* A broadcast */
        {1, 1, 5, 33, 17, 9, 0, 1.0, 0.0, 0, 1},     /* B broadcast */
        {0, 0, 3, 130, 70, 40, 0, 1.0, 0.0, 0, 1},   /* few items, each big enough to split */
        {1, 0, 2, 200, 150, 80, 1, 1.0, 0.5, 1, 1},  /* both broadcast */
    };
    return cr_make_param_array(gemm_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(gemm_case *c, gemm, batched) { check_all(c, true); }

/* stride_c == 0: the items update one C in order, C = alpha * sum_b A_b B_b + C */
Test(gemm, shared_c_accumulates_in_order)
{
    enum { BATCH = 6, M = 9, N = 20, K = 7 };
    float A[BATCH * M * K], B[BATCH * K * N], C[M * N], C0[M * N];
    uint64_t s = 1;
    for (int x = 0; x < BATCH * M * K; x++) A[x] = (float)val(&s);
    for (int x = 0; x < BATCH * K * N; x++) B[x] = (float)val(&s);
    for (int x = 0; x < M * N; x++) C[x] = C0[x] = (float)val(&s);
    tg_threads_set(2);
    tg_gemm_batched_f32(false, false, BATCH, M, N, K, 1.0f, A, K, M * K, B, N, K * N, 1.0f, C, N, 0);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double r = C0[i * N + j];
            for (int b = 0; b < BATCH; b++)
                for (int k = 0; k < K; k++) r += (double)A[b * M * K + i * K + k] * B[b * K * N + k * N + j];
            cr_assert(fabs(C[i * N + j] - r) <= 1e-5 * (1 + fabs(r)), "C[%d,%d] = %g, expected %g", i, j,
                      C[i * N + j], r);
        }
}

/* ---- degenerate sizes ---- */
Test(gemm, k_zero_scales_c_by_beta)
{
    float A[1] = {NAN}, B[1] = {NAN};
    float C[6] = {1, 2, 3, 4, 5, 6};
    tg_gemm_f32(false, false, 2, 3, 0, 1.0f, A, 1, B, 3, 0.5f, C, 3);
    for (int x = 0; x < 6; x++) cr_assert_float_eq(C[x], 0.5f * (float)(x + 1), 0);
    float D[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    tg_gemm_f32(true, true, 2, 3, 0, 1.0f, A, 2, B, 1, 0.0f, D, 3);
    for (int x = 0; x < 6; x++) cr_assert(D[x] == 0, "beta = 0 must not read C (NaN): got %g", D[x]);
}

Test(gemm, alpha_zero_does_not_read_a_or_b)
{
    float A[4] = {NAN, NAN, NAN, NAN}, B[4] = {NAN, NAN, NAN, NAN}, C[4] = {1, 2, 3, 4};
    tg_gemm_f32(false, false, 2, 2, 2, 0.0f, A, 2, B, 2, 2.0f, C, 2);
    for (int x = 0; x < 4; x++) cr_assert_float_eq(C[x], 2.0f * (float)(x + 1), 0);
}

Test(gemm, m_or_n_zero_is_a_no_op)
{
    double A[4] = {1, 2, 3, 4}, B[4] = {1, 2, 3, 4}, C[4] = {7, 7, 7, 7};
    tg_gemm_f64(false, false, 0, 2, 2, 1.0, A, 2, B, 2, 0.0, C, 2);
    tg_gemm_f64(false, false, 2, 0, 2, 1.0, A, 2, B, 2, 0.0, C, 2);
    tg_gemm_batched_f64(false, false, 0, 2, 2, 2, 1.0, A, 2, 4, B, 2, 4, 0.0, C, 2, 4);
    for (int x = 0; x < 4; x++) cr_assert(C[x] == 7);
}

Test(gemm, dtype_dispatch)
{
    float Af[4] = {1, 2, 3, 4}, Bf[4] = {5, 6, 7, 8}, Cf[4];
    double Ad[4] = {1, 2, 3, 4}, Bd[4] = {5, 6, 7, 8}, Cd[4];
    tg_gemm_batched(TG_F32, false, false, 1, 2, 2, 2, 1.0, Af, 2, 0, Bf, 2, 0, 0.0, Cf, 2, 0);
    tg_gemm_batched(TG_F64, false, false, 1, 2, 2, 2, 1.0, Ad, 2, 0, Bd, 2, 0, 0.0, Cd, 2, 0);
    const double want[4] = {19, 22, 43, 50};
    for (int x = 0; x < 4; x++) {
        cr_assert(Cf[x] == (float)want[x]);
        cr_assert(Cd[x] == want[x]);
    }
}

/* ---- same bits for any thread count (and so for whichever path the shape
 * and thread count pick: small on one thread, packed on two) ---- */
static void same_bits(int M, int N, int K)
{
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C0 = malloc(sizeof(float) * M * N), *C1 = malloc(sizeof(float) * M * N);
    float *C2 = malloc(sizeof(float) * M * N);
    uint64_t s = 3;
    for (int x = 0; x < M * K; x++) A[x] = (float)val(&s);
    for (int x = 0; x < K * N; x++) B[x] = (float)val(&s);
    for (int x = 0; x < M * N; x++) C0[x] = (float)val(&s);
    for (int k = 0; k < TG__GEMM_KERNEL_COUNT; k++) {
        if (!tg__gemm_kernel_set((tg__gemm_kernel)k)) continue;
        for (int v = 0; v < 8; v++) {
            bool ta = v & 1, tb = v & 2;
            float beta = v & 4 ? 0.5f : 0.0f;
            int lda = ta ? M : K, ldb = tb ? K : N;
            /* by thread count, on the automatic path */
            memcpy(C1, C0, sizeof(float) * M * N);
            memcpy(C2, C0, sizeof(float) * M * N);
            tg_threads_set(1);
            tg_gemm_f32(ta, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C1, N);
            tg_threads_set(2);
            tg_gemm_f32(ta, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C2, N);
            cr_assert(memcmp(C1, C2, sizeof(float) * M * N) == 0,
                      "%s M=%d N=%d K=%d ta=%d tb=%d beta=%g: 1 and 2 threads differ",
                      tg__gemm_kernel_name((tg__gemm_kernel)k), M, N, K, ta, tb, beta);
            /* by path */
            memcpy(C2, C0, sizeof(float) * M * N);
            tg__gemm_path_set(TG__GEMM_PATH_SMALL);
            tg_gemm_f32(ta, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C2, N);
            tg__gemm_path_set(TG__GEMM_PATH_PACKED);
            memcpy(C1, C0, sizeof(float) * M * N);
            tg_gemm_f32(ta, tb, M, N, K, 1.5f, A, lda, B, ldb, beta, C1, N);
            tg__gemm_path_set(TG__GEMM_PATH_AUTO);
            cr_assert(memcmp(C1, C2, sizeof(float) * M * N) == 0,
                      "%s M=%d N=%d K=%d ta=%d tb=%d beta=%g: small and packed paths differ",
                      tg__gemm_kernel_name((tg__gemm_kernel)k), M, N, K, ta, tb, beta);
        }
    }
    tg__gemm_kernel_set(TG__GEMM_KERNEL_COUNT);
    free(A);
    free(B);
    free(C0);
    free(C1);
    free(C2);
}

Test(gemm, same_bits_for_1_and_2_threads)
{
    same_bits(301, 203, 700);   /* packed on both */
    same_bits(1000, 64, 700);   /* small on one thread, packed on two */
    same_bits(37, 16, 300);
    same_bits(5, 33, 520);      /* fewer rows than a tile */
    same_bits(300, 240, 2000);  /* split by rows on two */
    same_bits(100, 700, 1900);  /* split by columns on two */
    same_bits(64, 64, 2688);    /* K split: 2 parts, in parallel on two */
    same_bits(64, 64, 448);     /* K split of a tiny C */
}

/* ---- no allocation in steady state: buffers are per thread, made once ---- */
Test(gemm, no_allocation_after_the_first_call)
{
    enum { M = 200, N = 96, K = 300 };
    static float A[M * K], B[K * N], C[M * N];
    uint64_t s = 9;
    for (int x = 0; x < M * K; x++) A[x] = (float)val(&s);
    for (int x = 0; x < K * N; x++) B[x] = (float)val(&s);
    /* one thread: nothing after the first call of each path */
    tg_threads_set(1);
    for (int p = TG__GEMM_PATH_SMALL; p <= TG__GEMM_PATH_PACKED; p++) {
        tg__gemm_path_set((tg__gemm_path)p);
        tg_gemm_f32(false, true, M, N, K, 1.0f, A, K, B, K, 0.0f, C, N);
        uint64_t before = tg__alloc_count();
        for (int r = 0; r < 20; r++) tg_gemm_f32(r & 1, r & 2, M, N, K, 1.0f, A, r & 1 ? M : K, B, r & 2 ? K : N, 0.0f, C, N);
        cr_assert(tg__alloc_count() == before, "%s path allocated %llu times in steady state",
                  p == TG__GEMM_PATH_SMALL ? "small" : "packed",
                  (unsigned long long)(tg__alloc_count() - before));
    }
    /* two threads: at most the two buffers of each pool thread, however many calls */
    tg_threads_set(2);
    tg__gemm_path_set(TG__GEMM_PATH_PACKED);
    uint64_t before = tg__alloc_count();
    for (int r = 0; r < 200; r++) tg_gemm_f32(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    for (int r = 0; r < 50; r++) tg_gemm_batched_f32(false, true, 40, 16, 16, 32, 1.0f, A, 32, 512, B, 32, 512, 0.0f, C, 16, 256);
    cr_assert(tg__alloc_count() - before <= 2, "%llu allocations over 250 calls",
              (unsigned long long)(tg__alloc_count() - before));
    tg__gemm_path_set(TG__GEMM_PATH_AUTO);
}

/* ---- allocation failure: the packing buffers cannot be had, results stay right ---- */
typedef struct fail_arg { bool warm; int threads; } fail_arg;

static void *gemm_with_failing_alloc(void *p)
{
    const fail_arg *fa = p;
    enum { M = 70, N = 50, K = 300 };
    static float A[M * K], B[K * N], C[M * N];
    uint64_t s = 5;
    for (int x = 0; x < M * K; x++) A[x] = (float)val(&s);
    for (int x = 0; x < K * N; x++) B[x] = (float)val(&s);
    tg_threads_set(fa->threads);
    tg__gemm_path_set(TG__GEMM_PATH_PACKED);
    if (fa->warm) tg_gemm_f32(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);   /* this thread's buffers */
    tg_threads_set(fa->threads);      /* restart the pool: new workers, no buffers yet */
    tg__alloc_fail_after(1);
    for (int x = 0; x < M * N; x++) C[x] = NAN;
    tg_gemm_f32(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    tg__alloc_fail_after(0);
    tg__gemm_path_set(TG__GEMM_PATH_AUTO);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double r = 0, a = 0;
            for (int k = 0; k < K; k++) {
                r += (double)A[i * K + k] * B[k * N + j];
                a += fabs((double)A[i * K + k] * B[k * N + j]);
            }
            if (!(fabs(C[i * N + j] - r) <= (K + 4) * FLT_EPSILON * a)) return (void *)1;
        }
    return NULL;
}

Test(gemm, allocation_failure_falls_back)
{
    /* a fresh thread has no buffers: with every allocation failing, the call
     * must still be right (cold: no buffers at all; warm: the caller has its
     * B block, the restarted workers have no A block) */
    fail_arg args[] = {{false, 1}, {false, 2}, {true, 2}};
    for (size_t i = 0; i < sizeof args / sizeof args[0]; i++) {
        pthread_t t;
        void *ret = (void *)1;
        cr_assert(pthread_create(&t, NULL, gemm_with_failing_alloc, &args[i]) == 0);
        pthread_join(t, &ret);
        cr_assert(ret == NULL, "wrong result with failing allocation (warm=%d threads=%d)",
                  args[i].warm, args[i].threads);
    }
}

/* ---- thread pool ---- */
typedef struct visit { atomic_int *hits; atomic_int max_tid; atomic_int calls; } visit;

static void visit_fn(void *ctx, int64_t b, int64_t e, int tid)
{
    visit *v = ctx;
    atomic_fetch_add(&v->calls, 1);
    int m = atomic_load(&v->max_tid);
    while (tid > m && !atomic_compare_exchange_weak(&v->max_tid, &m, tid)) {}
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&v->hits[i], 1);
}

Test(threads, every_index_exactly_once)
{
    static const int64_t ns[] = {1, 2, 3, 7, 64, 255, 1000, 10007};
    static const int64_t grains[] = {1, 3, 100, 5000};
    for (int t = 1; t <= 4; t++) {
        cr_assert(tg_threads_set(t) == TG_OK);
        cr_assert(tg_threads_get() == t);
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++)
                for (int rep = 0; rep < 20; rep++) {
                    int64_t n = ns[a];
                    visit v = {calloc((size_t)n, sizeof(atomic_int)), 0, 0};
                    tg_parallel_for(n, grains[g], visit_fn, &v);
                    for (int64_t i = 0; i < n; i++)
                        cr_assert(atomic_load(&v.hits[i]) == 1,
                                  "threads %d n %lld grain %lld: index %lld visited %d times", t,
                                  (long long)n, (long long)grains[g], (long long)i,
                                  atomic_load(&v.hits[i]));
                    cr_assert(atomic_load(&v.max_tid) < t, "tid %d with %d threads",
                              atomic_load(&v.max_tid), t);
                    free(v.hits);
                }
    }
    cr_assert(tg_threads_set(0) == TG_OK);
    cr_assert(tg_threads_get() == tg_threads_default());
    cr_assert(tg_threads_set(-1) == TG_ERR_INVALID);
    cr_assert(tg_threads_set(TG_MAX_THREADS + 1) == TG_ERR_INVALID);
}

typedef struct nest { atomic_int bad; atomic_int inner_sum; atomic_int set_status; } nest;

static void inner_fn(void *ctx, int64_t b, int64_t e, int tid)
{
    nest *n = ctx;
    (void)tid;
    atomic_fetch_add(&n->inner_sum, (int)(e - b));
}

typedef struct nest_ctx { nest *n; int64_t inner_n; } nest_ctx;

static void outer_fn(void *ctx, int64_t b, int64_t e, int tid)
{
    nest_ctx *c = ctx;
    (void)tid;
    for (int64_t i = b; i < e; i++) {
        /* a nested call runs inline: one call, whole range, same thread */
        if (tg_threads_available() != 1) atomic_fetch_add(&c->n->bad, 1);
        tg_parallel_for(c->inner_n, 1, inner_fn, c->n);
        atomic_store(&c->n->set_status, (int)tg_threads_set(1));
    }
}

Test(threads, nested_calls_run_inline)
{
    tg_threads_set(2);
    nest n = {0, 0, 0};
    nest_ctx c = {&n, 100};
    tg_parallel_for(64, 1, outer_fn, &c);
    cr_assert(atomic_load(&n.bad) == 0);
    cr_assert(atomic_load(&n.inner_sum) == 64 * 100);
    cr_assert(atomic_load(&n.set_status) == TG_ERR_STATE, "resizing from inside a job must fail");
    cr_assert(tg_threads_get() == 2);
    cr_assert(tg_threads_available() == 2);
}

/* many tiny jobs back to back, with resizes in between: nothing lost, no hang */
Test(threads, back_to_back_jobs_and_resizes)
{
    atomic_int hits[8];
    for (int round = 0; round < 6; round++) {
        tg_threads_set(round % 3 + 1);
        for (int j = 0; j < 20000; j++) {
            for (int i = 0; i < 8; i++) atomic_store(&hits[i], 0);
            visit v = {hits, 0, 0};
            tg_parallel_for(8, 1, visit_fn, &v);
            for (int i = 0; i < 8; i++) cr_assert(atomic_load(&hits[i]) == 1);
        }
    }
}

/* two user threads issuing jobs at once share the pool one job at a time */
static void *issue_jobs(void *p)
{
    (void)p;
    for (int j = 0; j < 2000; j++) {
        atomic_int hits[16];
        for (int i = 0; i < 16; i++) atomic_store(&hits[i], 0);
        visit v = {hits, 0, 0};
        tg_parallel_for(16, 1, visit_fn, &v);
        for (int i = 0; i < 16; i++)
            if (atomic_load(&hits[i]) != 1) return (void *)1;
    }
    return NULL;
}

Test(threads, concurrent_callers)
{
    tg_threads_set(2);
    pthread_t t[3];
    for (int i = 0; i < 3; i++) cr_assert(pthread_create(&t[i], NULL, issue_jobs, NULL) == 0);
    for (int i = 0; i < 3; i++) {
        void *ret = (void *)1;
        pthread_join(t[i], &ret);
        cr_assert(ret == NULL);
    }
}

/* AddressSanitizer's allocator (gcc 12's libsanitizer) has no fork handlers:
 * a size-class lock that another thread of the test process (Criterion's
 * nanomsg poller) holds at fork() stays locked in the child, and the child's
 * first allocation from that class (a worker's exit freeing its TLS) hangs.
 * Seen once in the asan suite. glibc's malloc locks around fork(), so the
 * plain suite (make test, also in CI) runs this. */

/* a child of fork() gets a working pool (it restarts; the parent's keeps going) */
Test(threads, works_after_fork)
{
#ifdef TT_ASAN
    cr_skip_test("fork() with other threads is not safe under AddressSanitizer's allocator");
#endif
    tg_threads_set(2);
    atomic_int hits[64];
    for (int i = 0; i < 64; i++) atomic_store(&hits[i], 0);
    visit v = {hits, 0, 0};
    tg_parallel_for(64, 1, visit_fn, &v);
    pid_t pid = fork();   /* fork-safe: skipped under ASan, whose allocator cannot fork */
    cr_assert(pid >= 0);
    if (pid == 0) {
        int ok = 1;
        for (int r = 0; r < 100 && ok; r++) {
            for (int i = 0; i < 64; i++) atomic_store(&hits[i], 0);
            tg_parallel_for(64, 1, visit_fn, &v);
            for (int i = 0; i < 64; i++) ok &= atomic_load(&hits[i]) == 1;
        }
        ok &= tg_threads_set(3) == TG_OK && tg_threads_get() == 3;
        for (int i = 0; i < 64; i++) atomic_store(&hits[i], 0);
        tg_parallel_for(64, 1, visit_fn, &v);
        for (int i = 0; i < 64; i++) ok &= atomic_load(&hits[i]) == 1;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert(waitpid(pid, &status, 0) == pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's pool failed");
    for (int i = 0; i < 64; i++) atomic_store(&hits[i], 0);
    tg_parallel_for(64, 1, visit_fn, &v);
    for (int i = 0; i < 64; i++) cr_assert(atomic_load(&hits[i]) == 1);
}

/* One choice of instruction set for every vector kernel (ops/simd/vec.h):
 * the GEMM's automatic microkernel follows TG_NO_SIMD and TG_NO_AVX512 as
 * the row kernels do; TG_GEMM_KERNEL still names one. */
Test(gemm, kernel_follows_the_isa_switches)
{
    unsetenv("TG_GEMM_KERNEL");
    unsetenv("TG_NO_AVX512");
    setenv("TG_NO_SIMD", "1", 1);
    cr_assert_eq(tg__isa_auto(), TG__ISA_PORTABLE);
    tg__gemm_kernel_set(TG__GEMM_KERNEL_COUNT);
    cr_assert_str_eq(tg__gemm_kernel_name(tg__gemm_kernel_get()), "c");
    unsetenv("TG_NO_SIMD");
    if (tg__isa_supported(TG__ISA_AVX2)) {
        setenv("TG_NO_AVX512", "1", 1);
        tg__gemm_kernel_set(TG__GEMM_KERNEL_COUNT);
        cr_assert_str_eq(tg__gemm_kernel_name(tg__gemm_kernel_get()), "avx2");
        unsetenv("TG_NO_AVX512");
    }
    tg__gemm_kernel_set(TG__GEMM_KERNEL_COUNT);
    const char *best = tg__isa_supported(TG__ISA_AVX512) ? "avx512"
                       : tg__isa_supported(TG__ISA_AVX2) ? "avx2" : "c";
    cr_assert_str_eq(tg__gemm_kernel_name(tg__gemm_kernel_get()), best);
    setenv("TG_NO_SIMD", "1", 1);
    setenv("TG_GEMM_KERNEL", best, 1);
    tg__gemm_kernel_set(TG__GEMM_KERNEL_COUNT);
    cr_assert_str_eq(tg__gemm_kernel_name(tg__gemm_kernel_get()), best,
                     "TG_GEMM_KERNEL names the kernel whatever TG_NO_SIMD says");
    unsetenv("TG_NO_SIMD");
    unsetenv("TG_GEMM_KERNEL");
    tg__gemm_kernel_set(TG__GEMM_KERNEL_COUNT);
}
