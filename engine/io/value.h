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

#include <stdio.h>

#include "error.h"
#include "tensor.h"   /* TG_MAX_RANK */

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

/* ---- the key schema: one table for layer configs and op attributes ----
 *
 * A table of tg_key rows (ended by a row with name NULL) says, per key, its
 * type, its default in the value language, whether it takes null, one line
 * of doc and an optional range. Layers read their config struct from it
 * (layers/layer.h: tg_layer_key is this type; `offset` is where the key
 * lives in the struct); ops read their attributes from it (ops/registry.h:
 * tg_op_attr is this type; `offset` unused). One parser, tg_keys_resolve,
 * and one printer, tg_keys_print, serve both.
 *
 *     static const tg_key keys[] = {
 *         {"d_model", TG_KEY_INT, "8", false, "model width", "[1, inf)", offsetof(cfg, d_model)},
 *         {"dropout", TG_KEY_FLOAT, "0.1", false, "dropout", "[0, 1)", offsetof(cfg, dropout)},
 *         {NULL},
 *     };
 *
 * Moving from the old layer rows (before issue 18): a tg_layer_key row was
 * {name, type, def, nullable, offset, doc}; it is now {name, type, def,
 * nullable, doc, range, offset} - doc before offset, and a range (or NULL)
 * between them. tg_op_attr rows ({name, type, def, nullable, doc}) are
 * unchanged. */

typedef enum tg_key_type {
    TG_KEY_INT,        /* an integer; in a struct: int64_t */
    TG_KEY_FLOAT,      /* a number (an integer too; inf, -inf, nan); in a struct: double */
    TG_KEY_BOOL,       /* true / false; in a struct: bool */
    TG_KEY_INT_LIST    /* [2, 3]; a single integer counts as a list of one; in a struct: tg_int_list */
} tg_key_type;
/* Text (the shell strips quotes); in a struct: tg_key_str (a layer's
 * activation="gelu"). A value of tg_key_type but not one of its enumerators,
 * so that code switching over the four above (as before issue 18) stays
 * complete under -Wswitch; switch on (int)type to name it. */
#define TG_KEY_STRING     ((tg_key_type)4)
#define TG_KEY_TYPE_COUNT 5

/* The longest string a config struct holds, with its NUL. */
#define TG_KEY_STR_MAX 32

/* A TG_KEY_STRING key's field in a config struct: the text, NUL-terminated
 * ("" for null). */
typedef struct tg_key_str {
    char s[TG_KEY_STR_MAX];
} tg_key_str;

typedef struct tg_int_list {
    int     n;
    int64_t v[TG_MAX_RANK];
} tg_int_list;

typedef struct tg_key {
    const char *name;      /* NULL ends a table */
    tg_key_type type;
    const char *def;       /* default in the value language ("8", "null", "[2, 3]", "'mean'");
                              NULL: required */
    bool        nullable;  /* accepts null (PyTorch's None); in a struct stored as 0, which
                              every such layer argument treats like None (`d_ff or 4*d_model`) */
    const char *doc;       /* one line for help */
    const char *range;     /* NULL, or an interval the value (each item of a list) must lie
                              in: "[1, inf)", "[0, 1)", "(0, 1]", "[-1, 1)" (inf allowed) */
    size_t      offset;    /* where the key lives in a config struct (layers; unused by ops) */
} tg_key;

/* Options of tg_keys_resolve. */
enum {
    TG_KEYS_ALLOW_EXTRA = 1,   /* keys not in the table are the caller's (einops axis lengths) */
};

/* Number of rows before the NULL name, looking at most at max rows (a
 * fixed-size array without terminator: its size). */
int tg_keys_count(const tg_key *keys, int max);
/* "INT", "FLOAT", "BOOL", "STR", "[INT,...]" for help texts. */
const char *tg_key_type_name(tg_key_type t);
/* "a, b, c": the names of keys[0..n) into buf (cut short if it does not fit). */
void tg_keys_names(const tg_key *keys, int n, char *buf, size_t len);

/* Resolve keys[0..n) from cfg (may be NULL: every default) into out[0..n)
 * (each a value the caller frees with tg_value_free; zeroed on error, with
 * nothing to free). `noun` is "key" or "attribute" and names things in the
 * errors, which go to tg_last_error() prefixed with `context`:
 *   "<context>: unknown <noun> 'x' (<noun>s: a, b)"     (unless TG_KEYS_ALLOW_EXTRA)
 *   "<context>: missing required <noun> 'k' (<noun>s: k, dim)"
 *   "<context>: k: expected an integer, got 'abc'"      (also "got null (None)")
 *   "<context>: d_model: 0 is out of range [1, inf)"
 * A bad default in the table is an error naming it, too. */
tg_status tg_keys_resolve(const tg_key *keys, int n, tg_config *cfg, const char *context,
                          const char *noun, unsigned flags, tg_value *out);
/* Check one value against key k (type, null, range); the error names k. */
tg_status tg_key_check(const tg_key *k, const tg_value *v);
/* Write values[0..n) (resolved and checked) into the struct at each key's
 * offset: INT int64_t, FLOAT double, BOOL bool, INT_LIST tg_int_list, STRING
 * tg_key_str (a text of TG_KEY_STR_MAX bytes or more is an error naming the
 * key); null as 0. */
tg_status tg_keys_fill_struct(const tg_key *keys, int n, const tg_value *values, void *config);
/* The struct from the table's defaults alone (config: zeroed first). The
 * one source of each layer's tg_X_defaults(). */
tg_status tg_keys_defaults(const tg_key *keys, void *config, size_t size);

/* Print keys[0..n), one line each, indented by `indent` spaces:
 *   NAME=DEFAULT              TYPE[ or null][, required][ in RANGE]; doc
 * (NAME=TYPE for a required key). `tgraph layers NAME` and `tgraph op NAME
 * --help` both print with it. */
void tg_keys_print(FILE *f, const tg_key *keys, int n, int indent);

#ifdef __cplusplus
}
#endif
#endif
