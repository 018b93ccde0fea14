/*
 * threads.c - a small pthread pool for tg_parallel_for.
 *
 * One job at a time: the caller publishes (fn, ctx, n, grain), wakes the
 * workers, takes part itself, and waits until every chunk is done. Chunks are
 * handed out with an atomic counter, so uneven chunks balance. A call from
 * inside a job (nested) runs inline on the calling thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <unistd.h>

#include "internal.h"
#include "threads.h"

typedef struct pool {
    pthread_mutex_t lock;
    pthread_cond_t  wake, done;
    pthread_t       tid[TG_MAX_THREADS];
    int             n_threads;     /* including the caller */
    int             started;       /* workers running */
    uint64_t        generation;    /* bumped per job */
    int             active;        /* workers still in the current job */
    bool            quit;
    /* the job */
    tg_range_fn     fn;
    void           *ctx;
    int64_t         n, chunk;
    atomic_llong    next;          /* next chunk index */
    int64_t         n_chunks;
} pool;

static pool P = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
};
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int in_job;   /* set on pool threads and on the caller during a job */
static _Thread_local int my_tid;

int tg_threads_default(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > TG_MAX_THREADS) n = TG_MAX_THREADS;
    return (int)n;
}

static void run_chunks(void)
{
    for (;;) {
        int64_t c = atomic_fetch_add(&P.next, 1);
        if (c >= P.n_chunks) break;
        int64_t b = c * P.chunk, e = b + P.chunk < P.n ? b + P.chunk : P.n;
        P.fn(P.ctx, b, e, my_tid);
    }
}

static void *worker(void *arg)
{
    my_tid = (int)(intptr_t)arg;
    in_job = 1;
    uint64_t seen = 0;
    pthread_mutex_lock(&P.lock);
    for (;;) {
        while (!P.quit && P.generation == seen) pthread_cond_wait(&P.wake, &P.lock);
        if (P.quit) break;
        seen = P.generation;
        pthread_mutex_unlock(&P.lock);
        run_chunks();
        pthread_mutex_lock(&P.lock);
        if (--P.active == 0) pthread_cond_signal(&P.done);
    }
    pthread_mutex_unlock(&P.lock);
    return NULL;
}

static void stop_workers(void)
{
    pthread_mutex_lock(&P.lock);
    P.quit = true;
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.lock);
    for (int i = 1; i < P.started; i++) pthread_join(P.tid[i], NULL);
    P.started = 0;
    P.quit = false;
}

static void start_workers(int n)
{
    P.n_threads = n;
    P.started = 1;
    for (int i = 1; i < n; i++) {
        if (pthread_create(&P.tid[i], NULL, worker, (void *)(intptr_t)i) != 0) break;
        P.started++;
    }
    P.n_threads = P.started;   /* fewer if pthread_create failed: still correct */
}

static void at_exit_stop(void) { stop_workers(); }

static void ensure_started(void)
{
    static int registered;
    if (P.started) return;
    if (!registered) {
        registered = 1;
        atexit(at_exit_stop);
    }
    start_workers(P.n_threads ? P.n_threads : tg_threads_default());
}

int tg_threads_get(void)
{
    return P.started ? P.n_threads : (P.n_threads ? P.n_threads : tg_threads_default());
}

tg_status tg_threads_set(int n)
{
    if (n < 0 || n > TG_MAX_THREADS)
        return tg_set_error(TG_ERR_INVALID, "threads: %d is outside [0, %d]", n, TG_MAX_THREADS);
    if (in_job) return tg_set_error(TG_ERR_STATE, "threads: cannot resize from inside a job");
    pthread_mutex_lock(&job_lock);
    if (P.started) stop_workers();
    P.n_threads = n ? n : tg_threads_default();
    pthread_mutex_unlock(&job_lock);
    return TG_OK;
}

void tg_parallel_for(int64_t n, int64_t grain, tg_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int threads = tg_threads_get();
    if (in_job || threads == 1 || n <= grain) {
        fn(ctx, 0, n, in_job ? my_tid : 0);
        return;
    }
    pthread_mutex_lock(&job_lock);
    ensure_started();
    int64_t chunks = (n + grain - 1) / grain;
    int64_t want = 4 * (int64_t)P.n_threads;   /* a few chunks per thread balances load */
    if (chunks > want) chunks = want;
    P.fn = fn;
    P.ctx = ctx;
    P.n = n;
    P.chunk = (n + chunks - 1) / chunks;
    P.n_chunks = (n + P.chunk - 1) / P.chunk;
    atomic_store(&P.next, 0);
    pthread_mutex_lock(&P.lock);
    P.active = P.started - 1;
    P.generation++;
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.lock);

    in_job = 1;
    my_tid = 0;
    run_chunks();
    in_job = 0;

    pthread_mutex_lock(&P.lock);
    while (P.active > 0) pthread_cond_wait(&P.done, &P.lock);
    pthread_mutex_unlock(&P.lock);
    pthread_mutex_unlock(&job_lock);
}
