/*
 * threads.h - the process-wide thread pool shared by GEMM, row-wise and
 * elementwise kernels. pthreads only.
 *
 * tg_parallel_for splits [0, n) into contiguous chunks of at least `grain`
 * items and runs fn on the pool's threads (the calling thread takes part).
 * Calls made from inside a worker run inline, so kernels can nest freely.
 * The pool starts lazily with tg_threads_default() threads (online cores).
 *
 * Idle workers spin briefly (TG_THREADS_SPIN_US microseconds, default 100)
 * before they sleep, so back-to-back small jobs do not pay a wake-up each.
 */
#ifndef TG_THREADS_H
#define TG_THREADS_H

#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fn processes items [begin, end) as thread number tid (0 .. tg_threads_get()-1). */
typedef void (*tg_range_fn)(void *ctx, int64_t begin, int64_t end, int tid);

void tg_parallel_for(int64_t n, int64_t grain, tg_range_fn fn, void *ctx);

/* Number of threads the pool uses (>= 1). */
int tg_threads_get(void);
/* Use n threads (1 .. TG_MAX_THREADS); 0 = the default. Not from inside a worker. */
tg_status tg_threads_set(int n);
/* Online cores (sysconf), at least 1, at most TG_MAX_THREADS. */
int tg_threads_default(void);
/* Threads a tg_parallel_for issued from here would use: 1 inside a job (nested
 * calls run inline), tg_threads_get() elsewhere. Lets a kernel pick a serial
 * or a parallel blocking before it splits its work. */
int tg_threads_available(void);

#define TG_MAX_THREADS 64

#ifdef __cplusplus
}
#endif
#endif
