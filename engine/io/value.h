/*
 * value.h - the small value language of `--set KEY=VALUE` and op attributes,
 * and a config: a set of KEY=VALUE entries that builders and commands read by
 * name, so unknown keys can be reported.
 *
 * VALUE is an integer (-3), a float (1e-5, 0.5, inf, -inf, nan), true/false,
 * null (PyTorch's None), a list [2, 3] (nested lists allowed), or otherwise a
 * string ('b l h e' and "x" quoted, or bare text like mean or bhls).
 */
#ifndef TG_VALUE_H
#define TG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_value_kind {
    TG_VALUE_NULL,
    TG_VALUE_BOOL,
    TG_VALUE_INT,
    TG_VALUE_FLOAT,
    TG_VALUE_STRING,
    TG_VALUE_LIST,
    TG_VALUE_KIND_COUNT
} tg_value_kind;

typedef struct tg_value {
    tg_value_kind    kind;
    bool             b;
    int64_t          i;
    double           f;        /* also set for INT */
    char            *s;        /* STRING; owned */
    int              n;        /* LIST length */
    struct tg_value *items;    /* LIST items; owned */
} tg_value;

/* Parse VALUE text into *out (free with tg_value_free). Errors name the
 * position: "bad value '[2,': unterminated list at offset 3". */
tg_status tg_value_parse(const char *text, tg_value *out);
void      tg_value_free(tg_value *v);
/* Write the value back as text ("[2, 3]", "1e-05", "true", "null") that
 * tg_value_parse reads as the same value. Like snprintf: returns the length
 * of the whole text (without the NUL) even when it did not fit in buf
 * (then truncated, still NUL-terminated); buf may be NULL with len 0 to
 * measure. A list is never cut to fit a fixed buffer unless the caller's is
 * too small: check the return value, or use tg_value_text. */
size_t    tg_value_format(const tg_value *v, char *buf, size_t len);
/* The whole text in a new string (free with tg_value_text_free); NULL on
 * OOM. No length limit. */
char     *tg_value_text(const tg_value *v);
void      tg_value_text_free(char *s);
/* Deep copy *src into *dst (free with tg_value_free): to move a value from
 * one config to another without a trip through text
 * (tg_config_put(dst_cfg, key, &copy)). */
tg_status tg_value_copy(tg_value *dst, const tg_value *src);

/* Typed reads; the error names `key` and what was expected, e.g.
 * "k: expected an integer, got 'abc'". as_double accepts INT too. */
tg_status tg_value_as_int(const tg_value *v, const char *key, int64_t *out);
tg_status tg_value_as_double(const tg_value *v, const char *key, double *out);
tg_status tg_value_as_bool(const tg_value *v, const char *key, bool *out);
tg_status tg_value_as_string(const tg_value *v, const char *key, const char **out);
/* A list of integers (a single integer counts as a list of one). */
tg_status tg_value_as_int_list(const tg_value *v, const char *key, int64_t *out, int max,
                               int *n);

/* ---- configs ---- */

typedef struct tg_config tg_config;

tg_config *tg_config_new(void);            /* NULL on OOM */
void       tg_config_free(tg_config *c);
/* Add "KEY=VALUE" (KEY: letters, digits, '_', '.'); a repeated key replaces
 * the earlier value. Errors name the item. */
tg_status  tg_config_set(tg_config *c, const char *item);
/* Add a parsed value under key (the config takes ownership of *v). */
tg_status  tg_config_put(tg_config *c, const char *key, tg_value *v);
/* The value of key, or NULL; marks the key as used. */
const tg_value *tg_config_get(tg_config *c, const char *key);
int         tg_config_count(const tg_config *c);
const char *tg_config_key(const tg_config *c, int i);
/* TG_ERR_NOT_FOUND naming the first key never read by tg_config_get:
 * "<context>: unknown key 'foo' (known: a, b, c)" - `known` lists the valid keys. */
tg_status tg_config_check_unused(const tg_config *c, const char *context, const char *known);

#ifdef __cplusplus
}
#endif
#endif
