/*
 * threads.c - a small pthread pool for tg_parallel_for.
 *
 * One job at a time (job_lock). The caller publishes the job and takes part
 * itself; chunks are claimed from one atomic word that holds
 *
 *     [ generation : 32 | number of chunks : 16 | next chunk : 16 ]
 *
 * so a worker that wakes up late can never claim a chunk of a newer job with
 * an older job's parameters: its compare-and-swap names the generation it saw.
 * The caller returns once every chunk is *done* (a counter), not once every
 * worker has checked in, so a job the caller finishes alone never waits for
 * a sleeping worker to wake.
 *
 * Latency: it is called thousands of times per training step on small
 * problems. Idle workers spin (with a pause instruction) for a short while
 * before sleeping on a condition variable, and the caller spins on the done
 * counter before sleeping, so back-to-back jobs cost a few hundred ns instead
 * of a futex wake-up each. The spin time is TG_SPIN_US below, or the
 * TG_THREADS_SPIN_US environment variable (microseconds, read at start-up).
 *
 * Not: a work-stealing scheduler, nor reentrant across jobs. A call from
 * inside a job (nested) runs inline on the calling thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "threads.h"

#define TG_SPIN_US 100   /* default spin before sleeping, workers and caller */

typedef struct pool {
    pthread_mutex_t lock;          /* guards the sleeps below */
    pthread_cond_t  wake;          /* workers sleep here between jobs */
    pthread_cond_t  done_cv;       /* the caller sleeps here for the last chunk */
    pthread_t       tid[TG_MAX_THREADS];
    atomic_int      n_threads;     /* including the caller; 0 = not chosen yet */
    int             started;       /* threads running, caller included (0 = none) */
    atomic_bool     quit;
    atomic_int      sleepers;      /* workers blocked (or about to block) on wake */
    atomic_bool     caller_waiting;
    uint32_t        generation;    /* of the last job published (job_lock) */
    /* the job: written by the caller before the word is published, read by a
     * worker only after it claimed a chunk of that generation */
    tg_range_fn     fn;
    void           *ctx;
    int64_t         n, chunk;
    _Atomic uint64_t word;         /* generation | n_chunks | next */
    atomic_llong    done;          /* chunks finished in the current job */
} pool;

static pool P = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done_cv = PTHREAD_COND_INITIALIZER,
};
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int in_job;   /* set on pool threads and on the caller during a job */
static _Thread_local int my_tid;
static int64_t spin_ns = (int64_t)TG_SPIN_US * 1000;

#define WORD(gen, nch, next) (((uint64_t)(gen) << 32) | ((uint64_t)(nch) << 16) | (uint64_t)(next))
#define WORD_GEN(w)  ((uint32_t)((w) >> 32))
#define WORD_NCH(w)  ((int64_t)(((w) >> 16) & 0xffff))
#define WORD_NEXT(w) ((int64_t)((w) & 0xffff))
#define MAX_CHUNKS   (16 * TG_MAX_THREADS)  /* fits the 16-bit fields */

static inline void cpu_relax(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int tg_threads_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > TG_MAX_THREADS) n = TG_MAX_THREADS;
    return (int)n;
}

/* Claim and run chunks of job `gen` until none is left. */
static void run_chunks(uint32_t gen)
{
    uint64_t w = atomic_load_explicit(&P.word, memory_order_acquire);
    for (;;) {
        if (WORD_GEN(w) != gen || WORD_NEXT(w) >= WORD_NCH(w)) return;
        if (!atomic_compare_exchange_weak_explicit(&P.word, &w, w + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;   /* w now holds the current word */
        int64_t nch = WORD_NCH(w), c = WORD_NEXT(w);
        int64_t b = c * P.chunk, e = b + P.chunk < P.n ? b + P.chunk : P.n;
        P.fn(P.ctx, b, e, my_tid);
        /* the last chunk done: wake the caller if it went to sleep (Dekker
         * pair with caller_waiting/done in tg_parallel_for) */
        if (atomic_fetch_add(&P.done, 1) + 1 == nch && atomic_load(&P.caller_waiting)) {
            pthread_mutex_lock(&P.lock);
            pthread_cond_signal(&P.done_cv);
            pthread_mutex_unlock(&P.lock);
        }
        w = atomic_load_explicit(&P.word, memory_order_acquire);
    }
}

/* Wait until a job newer than `seen` is published or the pool quits. */
static void wait_for_job(uint32_t seen)
{
    int64_t until = 0;
    for (unsigned i = 0;; i++) {
        if (WORD_GEN(atomic_load_explicit(&P.word, memory_order_acquire)) != seen ||
            atomic_load_explicit(&P.quit, memory_order_acquire))
            return;
        cpu_relax();
        if ((i & 255) == 0) {   /* look at the clock now and then only */
            int64_t t = now_ns();
            if (!until) until = t + spin_ns;
            else if (t >= until) break;
        }
    }
    pthread_mutex_lock(&P.lock);
    atomic_fetch_add(&P.sleepers, 1);   /* seq_cst: pairs with the publish in tg_parallel_for */
    while (WORD_GEN(atomic_load(&P.word)) == seen && !atomic_load(&P.quit))
        pthread_cond_wait(&P.wake, &P.lock);
    atomic_fetch_sub(&P.sleepers, 1);
    pthread_mutex_unlock(&P.lock);
}

static void *worker(void *arg)
{
    my_tid = (int)(intptr_t)arg;
    in_job = 1;
    uint32_t seen = WORD_GEN(atomic_load(&P.word));
    for (;;) {
        wait_for_job(seen);
        if (atomic_load(&P.quit)) break;
        seen = WORD_GEN(atomic_load_explicit(&P.word, memory_order_acquire));
        run_chunks(seen);
    }
    return NULL;
}

static void stop_workers(void)
{
    pthread_mutex_lock(&P.lock);
    atomic_store(&P.quit, true);
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.lock);
    for (int i = 1; i < P.started; i++) pthread_join(P.tid[i], NULL);
    P.started = 0;
    atomic_store(&P.quit, false);
}

static void start_workers(int n)
{
    P.started = 1;
    for (int i = 1; i < n; i++) {
        if (pthread_create(&P.tid[i], NULL, worker, (void *)(intptr_t)i) != 0) break;
        P.started++;
    }
    atomic_store(&P.n_threads, P.started);   /* fewer if pthread_create failed: still correct */
}

/* At exit, unless a job is running on another thread (then the process is
 * going down under it anyway and waiting could deadlock). */
static void at_exit_stop(void)
{
    if (pthread_mutex_trylock(&job_lock) != 0) return;
    if (P.started) stop_workers();
    pthread_mutex_unlock(&job_lock);
}

/* In the child of a fork: the workers were not copied. Forget them and reset
 * the locks (only the forking thread exists); the pool restarts on the next
 * job, which also resets the job state. Nothing is locked around the fork, so
 * forking from inside a job callback cannot deadlock. */
static void at_fork_child(void)
{
    pthread_mutex_init(&P.lock, NULL);
    pthread_cond_init(&P.wake, NULL);
    pthread_cond_init(&P.done_cv, NULL);
    P.started = 0;
    atomic_store(&P.sleepers, 0);
    atomic_store(&P.caller_waiting, false);
    atomic_store(&P.quit, false);
    pthread_mutex_init(&job_lock, NULL);
}

/* With job_lock held. */
static void ensure_started(void)
{
    static int registered;
    if (P.started) return;
    if (!registered) {
        registered = 1;
        atexit(at_exit_stop);
        pthread_atfork(NULL, NULL, at_fork_child);
        const char *s = getenv("TG_THREADS_SPIN_US");
        if (s && *s) {
            long us = strtol(s, NULL, 10);
            if (us >= 0 && us <= 1000000) spin_ns = (int64_t)us * 1000;
        }
    }
    int n = atomic_load(&P.n_threads);
    start_workers(n ? n : tg_threads_default());
}

int tg_threads_get(void)
{
    int n = atomic_load_explicit(&P.n_threads, memory_order_relaxed);
    return n ? n : tg_threads_default();
}

int tg_threads_available(void) { return in_job ? 1 : tg_threads_get(); }

tg_status tg_threads_set(int n)
{
    if (n < 0 || n > TG_MAX_THREADS)
        return tg_set_error(TG_ERR_INVALID, "threads: %d is outside [0, %d]", n, TG_MAX_THREADS);
    if (in_job) return tg_set_error(TG_ERR_STATE, "threads: cannot resize from inside a job");
    pthread_mutex_lock(&job_lock);
    if (P.started) stop_workers();
    atomic_store(&P.n_threads, n ? n : tg_threads_default());
    pthread_mutex_unlock(&job_lock);
    return TG_OK;
}

void tg_parallel_for(int64_t n, int64_t grain, tg_range_fn fn, void *ctx)
{
    TG__NONNULL_VOID(fn);
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (in_job || n <= grain || tg_threads_get() == 1) {
        fn(ctx, 0, n, in_job ? my_tid : 0);
        return;
    }
    pthread_mutex_lock(&job_lock);
    ensure_started();
    if (P.started < 2) {   /* no worker could be started */
        pthread_mutex_unlock(&job_lock);
        fn(ctx, 0, n, 0);
        return;
    }
    int64_t chunks = (n + grain - 1) / grain;
    /* several chunks per thread balance the load, also when a worker is
     * preempted (a shared machine): the others take its share meanwhile */
    int64_t want = 16 * (int64_t)P.started;
    if (chunks > want) chunks = want;
    if (chunks > MAX_CHUNKS) chunks = MAX_CHUNKS;
    P.fn = fn;
    P.ctx = ctx;
    P.n = n;
    P.chunk = (n + chunks - 1) / chunks;
    int64_t n_chunks = (n + P.chunk - 1) / P.chunk;
    atomic_store_explicit(&P.done, 0, memory_order_relaxed);
    uint32_t gen = ++P.generation;
    if (gen == 0) gen = ++P.generation;   /* never reuse the start-up generation */
    /* publish (seq_cst), then wake sleepers: a worker that is about to sleep
     * re-checks the word after announcing itself in `sleepers` */
    atomic_store(&P.word, WORD(gen, n_chunks, 0));
    if (atomic_load(&P.sleepers) > 0) {
        pthread_mutex_lock(&P.lock);
        pthread_cond_broadcast(&P.wake);
        pthread_mutex_unlock(&P.lock);
    }

    in_job = 1;
    my_tid = 0;
    run_chunks(gen);
    in_job = 0;

    /* wait for chunks still running on workers: spin, then sleep */
    int64_t until = 0;
    for (unsigned i = 0; atomic_load_explicit(&P.done, memory_order_acquire) < n_chunks; i++) {
        cpu_relax();
        if ((i & 255) == 0) {
            int64_t t = now_ns();
            if (!until) until = t + spin_ns;
            else if (t >= until) {
                pthread_mutex_lock(&P.lock);
                atomic_store(&P.caller_waiting, true);
                while (atomic_load(&P.done) < n_chunks) pthread_cond_wait(&P.done_cv, &P.lock);
                atomic_store(&P.caller_waiting, false);
                pthread_mutex_unlock(&P.lock);
                break;
            }
        }
    }
    pthread_mutex_unlock(&job_lock);
}
