/*
 * arena.c - bump allocator for graph metadata (nodes, attributes, strings)
 * and leaf data. Chunks are 64 KiB or, for a larger request, exactly its size.
 */
#include <string.h>

#include "internal.h"

struct tg__arena_chunk {
    tg__arena_chunk *next;
    size_t           size, used;
    unsigned char   *mem;      /* 64-byte aligned */
};

#define ARENA_CHUNK (64u * 1024u)

void *tg__arena_alloc(tg__arena *a, size_t size, size_t align)
{
    tg__arena_chunk *c = a->head;
    if (align < 1) align = 1;
    if (c) {
        size_t at = (c->used + align - 1) & ~(align - 1);
        if (at <= c->size && size <= c->size - at) {
            c->used = at + size;
            a->bytes += size;
            memset(c->mem + at, 0, size);
            return c->mem + at;
        }
    }
    size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
    c = tg__malloc(sizeof *c);
    if (!c) return NULL;
    c->mem = tg__malloc_aligned(cap);
    if (!c->mem) {
        tg__free(c);
        return NULL;
    }
    c->size = cap;
    c->used = size;
    if (size > ARENA_CHUNK && a->head) {
        /* keep filling the current small chunk: put the big one behind it */
        c->next = a->head->next;
        a->head->next = c;
    } else {
        c->next = a->head;
        a->head = c;
    }
    a->bytes += size;
    memset(c->mem, 0, size);
    return c->mem;
}

char *tg__arena_strdup(tg__arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tg__arena_alloc(a, n, 1);
    if (d) memcpy(d, s, n);
    return d;
}

void tg__arena_free(tg__arena *a)
{
    tg__arena_chunk *c = a->head;
    while (c) {
        tg__arena_chunk *next = c->next;
        tg__free_aligned(c->mem);
        tg__free(c);
        c = next;
    }
    a->head = NULL;
    a->bytes = 0;
}
