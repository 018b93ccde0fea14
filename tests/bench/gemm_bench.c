/*
 * gemm_bench.c - GFLOPS of tg_gemm for given shapes and thread counts, and the
 * dispatch latency of tg_parallel_for. Built and run by `make bench-gemm`.
 *
 *   gemm-bench [options] M N K     one shape
 *   gemm-bench --suite             512^3 and the linear / attention layer shapes
 *   gemm-bench --pool              tg_parallel_for round trip: an empty job, and two
 *                                  chunks of 2 us and 20 us of work
 *
 * options: -t THREADS (default: 1 and 2)  -b BATCH  --ta  --tb  --beta1  --f64
 *          --kernel c|avx2|avx512  --path auto|small|packed|ref  --time SECONDS
 *          --cpu (time with this thread's CPU clock: with -t 1 on a shared
 *                 machine it leaves out the time other processes had the core)
 * Each number is the median over repeated runs after a warm-up (3 calls, then
 * enough calls for --time seconds, 0.3 by default, at least 5); "best" is the
 * fastest call, a steadier number when the machine is shared.
 *
 * Not a test: it checks nothing but prints the numbers (tests/test_gemm.c checks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "gemm.h"
#include "gemm_internal.h"
#include "threads.h"

static clockid_t clock_id = CLOCK_MONOTONIC;

static double now_wall(void) { return tg_bench_now(CLOCK_MONOTONIC); }
static double now_s(void) { return tg_bench_now(clock_id); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct shape {
    long batch, M, N, K;
    int ta, tb;
    const char *what;
} shape;

static double seconds = 0.3;
static int beta1, use_f64;

static tg_bench_gemm gemm_of(const shape *s)
{
    return (tg_bench_gemm){.batch = s->batch, .M = s->M, .N = s->N, .K = s->K,
                           .trans_a = s->ta, .trans_b = s->tb, .beta1 = beta1,
                           .dtype = use_f64 ? TG_F64 : TG_F32};
}

/* Median seconds of one call; *best gets the fastest call (the host may be shared). */
static double time_gemm(const shape *s, double *best)
{
    tg_bench_gemm g = gemm_of(s);
    tg_bench_opts o = {.warmup = 3, .min_time = seconds, .min_runs = 5, .max_runs = 2000,
                       .clock = clock_id};
    tg_bench_result r;
    if (tg_bench_gemm_time(&g, &o, &r)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    *best = r.best;
    return r.median;
}

static void run(const shape *s, int threads)
{
    tg_threads_set(threads);
    double best, t = time_gemm(s, &best);
    tg_bench_gemm g = gemm_of(s);
    double flop = tg_bench_gemm_flop(&g);
    printf("tgraph %-6s t=%d batch=%-5ld M=%-6ld N=%-5ld K=%-6ld ta=%d tb=%d %7.1f GFLOPS (best %6.1f) %9.1f us  %s\n",
           tg__gemm_kernel_name(tg__gemm_kernel_get()), threads, s->batch, s->M, s->N, s->K,
           s->ta, s->tb, flop / t * 1e-9, flop / best * 1e-9, t * 1e6, s->what ? s->what : "");
    fflush(stdout);
}

static void nop(void *ctx, long long b, long long e, int tid) { (void)ctx, (void)b, (void)e, (void)tid; }
static void nop_fn(void *ctx, int64_t b, int64_t e, int tid) { nop(ctx, b, e, tid); }

/* a chunk that computes for about `us` microseconds (wall clock) */
static void busy_fn(void *ctx, int64_t b, int64_t e, int tid)
{
    double us = *(const double *)ctx, t0 = now_wall();
    (void)tid;
    for (int64_t i = b; i < e; i++)
        while (now_wall() - t0 < (double)(i - b + 1) * us * 1e-6) {}
}

static void bench_pool_work(int threads, double us)
{
    tg_threads_set(threads);
    enum { REPS = 4000 };
    static double ts[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_wall();
        tg_parallel_for(2, 1, busy_fn, &us);
        ts[r] = now_wall() - t0;
    }
    qsort(ts, REPS, sizeof(double), cmp_double);
    printf("pool t=%d two chunks of %.0f us: median %.2f us, p90 %.2f us (ideal %.0f us)\n", threads, us,
           ts[REPS / 2] * 1e6, ts[REPS * 9 / 10] * 1e6, threads > 1 ? us : 2 * us);
}

static void bench_pool(int threads)
{
    tg_threads_set(threads);
    for (int i = 0; i < 1000; i++) tg_parallel_for(2, 1, nop_fn, NULL);
    enum { REPS = 20000 };
    static double ts[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        tg_parallel_for(2, 1, nop_fn, NULL);
        ts[r] = now_s() - t0;
    }
    qsort(ts, REPS, sizeof(double), cmp_double);
    printf("pool t=%d tg_parallel_for(n=2, empty): median %.2f us, p90 %.2f us, p99 %.2f us\n",
           threads, ts[REPS / 2] * 1e6, ts[REPS * 9 / 10] * 1e6, ts[REPS * 99 / 100] * 1e6);
}

static const shape suite[] = {
    {1, 512, 512, 512, 0, 0, "square"},
    {1, 10752, 256, 256, 0, 1, "linear fwd y=xW^T"},
    {1, 10752, 512, 256, 0, 1, "linear fwd y=xW^T"},
    {1, 10752, 256, 512, 0, 1, "linear fwd y=xW^T"},
    {1, 10752, 256, 256, 0, 0, "linear bwd dX=dY W"},
    {1, 256, 256, 10752, 1, 0, "linear bwd dW=dY^T X"},
    {5376, 16, 16, 32, 0, 1, "attn QK^T"},
    {64, 512, 512, 32, 0, 1, "attn QK^T"},
    {64, 512, 32, 512, 0, 0, "attn AV"},
};

int main(int argc, char **argv)
{
    shape s = {1, 0, 0, 0, 0, 0, NULL};
    int threads = 0, do_suite = 0, do_pool = 0, npos = 0;
    long pos[3] = {0, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(a, "-b") && i + 1 < argc) s.batch = atol(argv[++i]);
        else if (!strcmp(a, "--ta")) s.ta = 1;
        else if (!strcmp(a, "--tb")) s.tb = 1;
        else if (!strcmp(a, "--beta1")) beta1 = 1;
        else if (!strcmp(a, "--f64")) use_f64 = 1;
        else if (!strcmp(a, "--suite")) do_suite = 1;
        else if (!strcmp(a, "--cpu")) clock_id = CLOCK_THREAD_CPUTIME_ID;
        else if (!strcmp(a, "--pool")) do_pool = 1;
        else if (!strcmp(a, "--time") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(a, "--kernel") && i + 1 < argc) {
            const char *k = argv[++i];
            int ok = 0;
            for (int j = 0; j < TG__GEMM_KERNEL_COUNT; j++)
                if (!strcmp(k, tg__gemm_kernel_name((tg__gemm_kernel)j)))
                    ok = tg__gemm_kernel_set((tg__gemm_kernel)j);
            if (!ok) {
                fprintf(stderr, "kernel %s: unknown or not supported by this CPU\n", k);
                return 2;
            }
        } else if (!strcmp(a, "--path") && i + 1 < argc) {
            const char *p = argv[++i];
            static const char *names[] = {"auto", "small", "packed", "ref"};
            int found = 0;
            for (int j = 0; j < 4; j++)
                if (!strcmp(p, names[j])) tg__gemm_path_set((tg__gemm_path)j), found = 1;
            if (!found) {
                fprintf(stderr, "path %s: expected auto, small, packed or ref\n", p);
                return 2;
            }
        } else if (a[0] != '-' && npos < 3) pos[npos++] = atol(a);
        else {
            fprintf(stderr, "usage: %s [-t T] [-b BATCH] [--ta] [--tb] [--beta1] [--f64] "
                            "[--kernel K] [--path P] [--time S] [--cpu] M N K | --suite | --pool\n",
                    argv[0]);
            return 2;
        }
    }
    int tlist[2] = {threads ? threads : 1, 2}, nt = threads ? 1 : 2;
    if (do_pool) {
        for (int i = 0; i < nt; i++) bench_pool(tlist[i]);
        for (int i = 0; i < nt; i++) {
            bench_pool_work(tlist[i], 2);
            bench_pool_work(tlist[i], 20);
        }
        return 0;
    }
    if (do_suite) {
        for (int i = 0; i < nt; i++)
            for (size_t j = 0; j < sizeof suite / sizeof suite[0]; j++) run(&suite[j], tlist[i]);
        return 0;
    }
    if (npos != 3 || pos[0] <= 0 || pos[1] <= 0 || pos[2] <= 0) {
        fprintf(stderr, "give M N K (positive), or --suite, or --pool\n");
        return 2;
    }
    s.M = pos[0], s.N = pos[1], s.K = pos[2];
    for (int i = 0; i < nt; i++) run(&s, tlist[i]);
    return 0;
}
