/*
 * io_internal.h - what engine/io's readers share, library-private: the
 * input limit and reading a file or stream in blocks (fileio.c), and the
 * value language's character classes (value.c, config.c). The core
 * (engine/) never includes it.
 */
#ifndef TG_IO_INTERNAL_H
#define TG_IO_INTERNAL_H

#include <stdbool.h>
#include <stdio.h>

#include "internal.h"

/* The input limit (tensor_io.h): dflt, or TG_MAX_INPUT_BYTES when it is set
 * (an error when that is not a byte count). */
tg_status tg__input_cap(size_t dflt, size_t *cap);
/* "<path>: the <kind> needs N bytes, more than the input limit of CAP bytes
 * (set TG_MAX_INPUT_BYTES ...)", TG_ERR_LIMIT. */
tg_status tg__over_cap(const char *path, const char *kind, uint64_t need, size_t cap);
/* Sees each block of a file as it is read (offset: where the block starts
 * in the file); an error stops the read. */
typedef tg_status (*tg__block_check)(const unsigned char *block, size_t n, size_t offset,
                                     const char *path, void *ctx);
/* Read a whole file or stream (capped at the input limit for default_cap)
 * into a new buffer (tg__free), showing every block to check (may be NULL). */
tg_status tg__read_input(const char *path, size_t default_cap, tg__block_check check, void *ctx,
                         void **data, size_t *len);
/* For loaders that read a file piece by piece (.npy, safetensors): open
 * path into *f. A regular file: *size is its length, *stream false. A pipe
 * or a device: *stream true, *size 0, and the loader reads in order without
 * seeking, checking sizes against the input limit as it learns them. A
 * directory is an error. */
tg_status tg__open_for_load(const char *path, FILE **f, uint64_t *size, bool *stream);

/* ---- the value language's characters (value.c, config.c) ---- */
static inline bool tg__value_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline bool tg__value_is_digit(char c) { return c >= '0' && c <= '9'; }

#endif
