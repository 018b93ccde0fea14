/*
 * alloc.c - the one place tgraph allocates memory.
 *
 * Counting and fault injection exist for the tests: a planned graph must not
 * allocate inside forward/backward, and every allocation failure must surface
 * as TG_ERR_NOMEM rather than a crash. Both counters are atomic so the thread
 * pool may allocate too (it does not, after start-up).
 */
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>

#include "internal.h"

static atomic_uint_fast64_t alloc_count;
static atomic_uint_fast64_t fail_at;      /* 0 = never fail */

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
    return malloc(n ? n : 1);
}

void *tg__calloc(size_t count, size_t size)
{
    if (should_fail()) return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *tg__realloc(void *p, size_t n)
{
    if (should_fail()) return NULL;
    return realloc(p, n ? n : 1);
}

void tg__free(void *p) { free(p); }

void *tg__malloc_aligned(size_t n)
{
    if (should_fail()) return NULL;
    size_t rounded = (n + 63) & ~(size_t)63;
    if (rounded < n) return NULL;
    return aligned_alloc(64, rounded ? rounded : 64);
}

void tg__free_aligned(void *p) { free(p); }

char *tg__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tg__malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
