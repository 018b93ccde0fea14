/*
 * fuzz.h - a tiny byte reader shared by the libFuzzer targets in tests/fuzz/.
 *
 * Each target takes its structured parameters (operand counts, shapes, axis
 * lengths) from the first bytes of the fuzz input and the text to parse from
 * the rest, so one input is one complete call. Targets are built and run by
 * `make fuzz`, never by the Criterion suite. Not here: any checking of
 * results beyond "no crash, no leak, no UB, bounded time and memory".
 */
#ifndef TG_FUZZ_H
#define TG_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fz_reader {
    const uint8_t *p;
    size_t         n;
} fz_reader;

/* Next byte, or 0 once the input is used up. */
static inline uint8_t fz_byte(fz_reader *r)
{
    if (!r->n) return 0;
    r->n--;
    return *r->p++;
}

/* The rest of the input as a new NUL-terminated string (free()); embedded
 * NULs cut the string short, as they would for a C caller. */
static inline char *fz_rest_str(fz_reader *r)
{
    char *s = malloc(r->n + 1);
    if (!s) abort();
    if (r->n) memcpy(s, r->p, r->n);
    s[r->n] = '\0';
    r->p += r->n;
    r->n = 0;
    return s;
}

/* Split s at the first '\n' (replaced by NUL); returns the text after it, or NULL. */
static inline char *fz_next_line(char *s)
{
    char *nl = s ? strchr(s, '\n') : NULL;
    if (!nl) return NULL;
    *nl = '\0';
    return nl + 1;
}

#endif
