/*
 * internal.h - library-private helpers shared across engine/, ops/ and layers/.
 * Names carry a second underscore (tg__) and are not part of the public API;
 * the shared library does not export them.
 *
 * Every allocation in tgraph goes through tg__malloc/tg__calloc/tg__free so
 * that tests can count allocations (no allocation inside a planned run) and
 * fail the Nth one (fault injection).
 */
#ifndef TG_INTERNAL_H
#define TG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>

#include "tensor.h"

#if defined(__GNUC__)
#  define TG__PRINTF(a, b) __attribute__((format(printf, a, b)))
#  define TG__UNUSED __attribute__((unused))
#else
#  define TG__PRINTF(a, b)
#  define TG__UNUSED
#endif


/* ---- allocation (engine/alloc.c) ---- */
void *tg__malloc(size_t n);
void *tg__calloc(size_t count, size_t size);
void *tg__realloc(void *p, size_t n);
void  tg__free(void *p);
/* 64-byte aligned block for tensor data; free with tg__free_aligned. */
void *tg__malloc_aligned(size_t n);
void  tg__free_aligned(void *p);
/* The same for workspace a thread keeps for its life whatever the model (the
 * GEMM packing buffers): not in tg_alloc_live_bytes / tg_alloc_peak_bytes;
 * free with tg__free_workspace. */
void *tg__malloc_workspace(size_t n);
void  tg__free_workspace(void *p);
char *tg__strdup(const char *s);

/* Test hooks: number of successful allocations so far, and make allocation
 * number n (1-based, counted from this call) and every later one fail; n = 0
 * turns failure off. Library-private; used by the tests only. */
uint64_t tg__alloc_count(void);
void     tg__alloc_fail_after(uint64_t n);

/* ---- errors (engine/error.c) ---- */
tg_status tg__vset_error(tg_status st, const char *fmt, va_list ap);

/* ---- parameter stores (engine/params.c) ----
 * A store is freed when its owner has called tg_params_free and no graph holds
 * it: a graph retains the store of each parameter it makes a node of, and
 * releases them in tg_graph_free. */
typedef struct tg_params tg_params;
typedef struct tg_param tg_param;
void       tg__params_retain(tg_params *ps);
void       tg__params_release(tg_params *ps);
tg_params *tg__param_owner(const tg_param *p);   /* the store p belongs to */

/* Offset of the first byte of s[0..len) that is not valid UTF-8 (overlong
 * forms, UTF-16 surrogates and code points above U+10FFFF are invalid), or len. */
size_t tg__utf8_check(const void *s, size_t len);
/* s[0..len) printable for a message (tg_str_escape), cut with "..." to fit
 * buf[n]; returns buf. */
char *tg__escape(const char *s, size_t len, char *buf, size_t n);

/* ---- argument checks, first lines of public functions ----
 * A NULL pointer argument records "tg_fn: arg is NULL" (TG_ERR_INVALID) and
 * returns `ret`: TG_ERR_INVALID for status functions, NULL for pointers, NAN
 * for doubles, 0 / -1 / false for counts and flags. */
#define TG__NONNULL(arg, ret)                                                           \
    do {                                                                                \
        if (!(arg)) {                                                                   \
            tg_set_error(TG_ERR_INVALID, "%s: %s is NULL", __func__, #arg);             \
            return ret;                                                                 \
        }                                                                               \
    } while (0)
#define TG__NONNULL_VOID(arg)                                                           \
    do {                                                                                \
        if (!(arg)) {                                                                   \
            tg_set_error(TG_ERR_INVALID, "%s: %s is NULL", __func__, #arg);             \
            return;                                                                     \
        }                                                                               \
    } while (0)
/* In a graph builder: a NULL graph records the error and returns NULL; another
 * NULL argument fails the graph (the sticky error) and returns NULL. */
#define TG__BUILDER_NONNULL(g, arg)                                                     \
    do {                                                                                \
        if (!(g)) {                                                                     \
            tg_set_error(TG_ERR_INVALID, "%s: g is NULL", __func__);                    \
            return NULL;                                                                \
        }                                                                               \
        if (!(arg)) return tg_graph_fail((g), "%s: %s is NULL", __func__, #arg);        \
    } while (0)

/* ---- small helpers ---- */
/* Checked a*b for sizes; returns 0 on overflow. */
int tg__mul_overflow_i64(int64_t a, int64_t b, int64_t *out);
int tg__mul_overflow_size(size_t a, size_t b, size_t *out);

/* Contiguous strides of a shape (elements). */
void tg__strides(int rank, const int64_t *shape, int64_t *strides);

/* snprintf into buf that never fails silently (truncates, always NUL-terminates). */
void tg__fmt(char *buf, size_t len, const char *fmt, ...) TG__PRINTF(3, 4);

/* ---- arena (engine/arena.c): bump allocation, freed all at once ---- */
typedef struct tg__arena_chunk tg__arena_chunk;
typedef struct tg__arena {
    tg__arena_chunk *head;
    size_t           bytes;     /* total handed out, for reports */
} tg__arena;
/* Zeroed, `align`-aligned (a power of two <= 64) memory; NULL on OOM. */
void *tg__arena_alloc(tg__arena *a, size_t size, size_t align);
char *tg__arena_strdup(tg__arena *a, const char *s);
void  tg__arena_free(tg__arena *a);

#endif
