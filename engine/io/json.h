/*
 * json.h - a strict, small JSON parser (RFC 8259), library-private.
 *
 * Used for safetensors headers, oracle case.json files and configs. It reads
 * a whole document into a tree owned by one arena (one free call). Strict:
 * no trailing commas, no comments, no NaN/Infinity, no leading zeros, no
 * control characters or invalid UTF-8 in strings, no single quotes, nothing
 * after the value but whitespace (space, \t, \n, \r). \u escapes (surrogate
 * pairs included) are decoded to UTF-8; a lone surrogate is an error.
 *
 * Safe on arbitrary bytes: the text need not be NUL-terminated, nesting is
 * limited (max_depth), the number of values is limited (max_values), and all
 * memory is proportional to what was actually parsed.
 *
 * Every error is TG_ERR_FORMAT (TG_ERR_LIMIT for the limits, TG_ERR_NOMEM)
 * with "<what>: <problem> at line L, column C (offset N)" in tg_last_error().
 */
#ifndef TG_JSON_H
#define TG_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

typedef enum tg__json_kind {
    TG__JSON_NULL,
    TG__JSON_BOOL,
    TG__JSON_NUMBER,
    TG__JSON_STRING,
    TG__JSON_ARRAY,
    TG__JSON_OBJECT,
    TG__JSON_KIND_COUNT
} tg__json_kind;

typedef struct tg__json tg__json;
struct tg__json {
    tg__json_kind kind;
    bool      b;        /* BOOL */
    bool      is_int;   /* NUMBER written as an integer (no '.', no exponent) that fits int64 */
    int32_t   n;        /* ARRAY: number of items; OBJECT: number of members */
    int32_t   dup;      /* OBJECT: index of the first member whose key repeats an
                           earlier key, or -1 (see opts.reject_duplicates) */
    size_t    pos;      /* byte offset of the value's first character in the text */
    size_t    len;      /* STRING: bytes in str (a \u0000 escape puts a NUL inside) */
    double    num;      /* NUMBER: the value (rounded to nearest; exact for |i| <= 2^53) */
    int64_t   i;        /* NUMBER with is_int: the exact value */
    const char *str;    /* STRING: UTF-8, NUL-terminated; owned by the document */
    tg__json *items;    /* ARRAY: n items. OBJECT: 2n nodes, key (a STRING) then value */
};

typedef struct tg__json_opts {
    int    max_depth;          /* nesting of arrays/objects; 0 = 64 (hard cap 1000) */
    size_t max_values;         /* values and keys in the document; 0 = 2^21 */
    bool   reject_duplicates;  /* a key repeated in one object is an error naming it */
} tg__json_opts;

typedef struct tg__json_doc {
    tg__arena arena;   /* owns every node and string */
    tg__json *root;
} tg__json_doc;

/* Parse text[0..len) (need not be NUL-terminated). `what` names the source in
 * messages (NULL: "json"); opts may be NULL (defaults). On success *doc holds
 * the tree; free it with tg__json_free. On failure *doc is empty (and may be
 * passed to tg__json_free). */
tg_status tg__json_parse(const char *text, size_t len, const char *what,
                         const tg__json_opts *opts, tg__json_doc *doc);
void      tg__json_free(tg__json_doc *doc);

/* Members of an object: key k (a STRING node) and its value; NULL when out of range. */
const tg__json *tg__json_key(const tg__json *obj, int k);
const tg__json *tg__json_value(const tg__json *obj, int k);
/* The value of the first member named key (NUL-terminated), or NULL. */
const tg__json *tg__json_get(const tg__json *obj, const char *key);
/* Item i of an array, or NULL. */
const tg__json *tg__json_at(const tg__json *arr, int i);
/* True when v is a STRING equal to lit (length included: "a\0b" != "a"). */
bool tg__json_streq(const tg__json *v, const char *lit);
/* True (and *out set) when v is a NUMBER written as an integer that fits int64. */
bool tg__json_get_i64(const tg__json *v, int64_t *out);
/* "null", "a bool", "a number", "a string", "an array", "an object". */
const char *tg__json_kind_name(tg__json_kind k);

/* tg__utf8_check and tg__escape (for excerpts in messages): internal.h. */
/* Line and column (1-based, in bytes) of offset pos in text[0..len). */
void tg__json_line_col(const char *text, size_t len, size_t pos, int *line, int *col);

#endif
