/*
 * bench_time.h - timing for `tgraph bench` and tests/bench/gemm_bench.c: the
 * median of repeated calls after a warm-up, and a timed F32/F64 GEMM.
 *
 * Not a test helper: nothing here checks a result; it only measures.
 */
#ifndef TG_BENCH_TIME_H
#define TG_BENCH_TIME_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "tensor.h"

/* One timed call; returns 0, or nonzero to stop the measurement. */
typedef int (*tg_bench_fn)(void *ctx);

typedef struct tg_bench_opts {
    int       warmup;     /* untimed calls first */
    double    min_time;   /* keep calling until this many seconds were timed ... */
    int       min_runs;   /* ... and at least this many calls */
    int       max_runs;   /* at most this many timed calls (0: 1000000) */
    clockid_t clock;      /* CLOCK_MONOTONIC (wall) or CLOCK_THREAD_CPUTIME_ID */
} tg_bench_opts;

typedef struct tg_bench_result {
    double median;        /* seconds per call */
    double best;          /* the fastest call, steadier on a shared machine */
    int    runs;          /* timed calls */
} tg_bench_result;

/* Seconds on the given clock. */
double tg_bench_now(clockid_t clock);

/* Time fn(ctx) as o says. Returns 0, the first nonzero value fn returned, or
 * -1 when out of memory (the result is then unset). */
int tg_bench_time(tg_bench_fn fn, void *ctx, const tg_bench_opts *o, tg_bench_result *out);

/* C = A op B on fixed pseudo-random operands, `batch` strided items (see gemm.h). */
typedef struct tg_bench_gemm {
    int64_t  batch, M, N, K;
    bool     trans_a, trans_b;
    bool     beta1;       /* C += A B instead of C = A B */
    tg_dtype dtype;       /* TG_F32 or TG_F64 */
} tg_bench_gemm;

/* Time one GEMM call. Returns 0, or -1 when the operands cannot be allocated. */
int tg_bench_gemm_time(const tg_bench_gemm *s, const tg_bench_opts *o, tg_bench_result *out);

/* 2 * batch * M * N * K. */
double tg_bench_gemm_flop(const tg_bench_gemm *s);

/* Peak resident set size of this process in MiB (getrusage ru_maxrss). */
double tg_bench_peak_rss_mb(void);

#endif
