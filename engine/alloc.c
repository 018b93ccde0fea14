/*
 * alloc.c - the one place tgraph allocates memory.
 *
 * Counting and fault injection exist for the tests: a planned graph must not
 * allocate inside forward/backward, and every allocation failure must surface
 * as TG_ERR_NOMEM rather than a crash. Both counters are atomic so the thread
 * pool may allocate too (it does not, after start-up).
 *
 * The bytes live and their peak (tg_alloc_live_bytes, tg_alloc_peak_bytes)
 * count what the C library says each block holds (malloc_usable_size, glibc):
 * what tgraph's own memory costs, as `tgraph bench` reports it. Elsewhere
 * both stay 0. Workspace (tg__malloc_workspace: the per-thread GEMM packing
 * buffers, kept for the thread's life whatever the model) is not counted.
 */
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#ifdef __GLIBC__
#include <malloc.h>
#define BLOCK_BYTES(p) malloc_usable_size(p)
#else
#define BLOCK_BYTES(p) ((void)(p), (size_t)0)
#endif

#include "graph.h"
#include "internal.h"

static atomic_uint_fast64_t alloc_count;
static atomic_uint_fast64_t fail_at;      /* 0 = never fail */
static atomic_size_t live_bytes, peak_bytes;

size_t tg_alloc_live_bytes(void) { return atomic_load(&live_bytes); }
size_t tg_alloc_peak_bytes(void) { return atomic_load(&peak_bytes); }
void tg_alloc_reset_peak(void) { atomic_store(&peak_bytes, atomic_load(&live_bytes)); }

/* p (may be NULL) was just allocated: its bytes count, the peak follows. */
static void *counted(void *p)
{
    if (!p) return NULL;
    size_t n = BLOCK_BYTES(p);
    size_t now = atomic_fetch_add(&live_bytes, n) + n;
    size_t peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
    }
    return p;
}

/* p (may be NULL) is about to be freed. */
static void uncounted(void *p)
{
    if (p) atomic_fetch_sub(&live_bytes, BLOCK_BYTES(p));
}

uint64_t tg__alloc_count(void) { return (uint64_t)atomic_load(&alloc_count); }

void tg__alloc_fail_after(uint64_t n)
{
    atomic_store(&fail_at, n ? (uint64_t)atomic_load(&alloc_count) + n : 0);
}

/* True when this allocation must fail; counts it otherwise. */
static int should_fail(void)
{
    uint64_t f = (uint64_t)atomic_load(&fail_at);
    uint64_t c = (uint64_t)atomic_fetch_add(&alloc_count, 1) + 1;
    if (f && c >= f) {
        atomic_fetch_sub(&alloc_count, 1);
        return 1;
    }
    return 0;
}

void *tg__malloc(size_t n)
{
    if (should_fail()) return NULL;
    return counted(malloc(n ? n : 1));
}

void *tg__calloc(size_t count, size_t size)
{
    if (should_fail()) return NULL;
    return counted(calloc(count ? count : 1, size ? size : 1));
}

void *tg__realloc(void *p, size_t n)
{
    if (should_fail()) return NULL;
    size_t was = p ? BLOCK_BYTES(p) : 0;
    void *q = realloc(p, n ? n : 1);
    if (q) atomic_fetch_sub(&live_bytes, was);
    return counted(q);
}

void tg__free(void *p)
{
    uncounted(p);
    free(p);
}

void *tg__malloc_aligned(size_t n)
{
    if (should_fail()) return NULL;
    size_t rounded = (n + 63) & ~(size_t)63;
    if (rounded < n) return NULL;
    return counted(aligned_alloc(64, rounded ? rounded : 64));
}

void tg__free_aligned(void *p)
{
    uncounted(p);
    free(p);
}

void *tg__malloc_workspace(size_t n)
{
    if (should_fail()) return NULL;
    size_t rounded = (n + 63) & ~(size_t)63;
    if (rounded < n) return NULL;
    return aligned_alloc(64, rounded ? rounded : 64);
}

void tg__free_workspace(void *p) { free(p); }

char *tg__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tg__malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
