/*
 * config.c - reading values by key: the typed reads (tg_value_as_*, whose
 * errors name the key and what was expected) and configs, sets of KEY=VALUE
 * entries that builders and commands look up by name, each marked when read
 * so that unknown keys can be reported. The value language itself is in
 * value.c.
 *
 * What it is not: a schema. Which keys exist, with their types, defaults and
 * ranges, is keys.c's.
 */
#include <stdio.h>
#include <string.h>

#include "io_internal.h"
#include "value.h"

/* ---- typed reads ---- */

static const char *kind_noun(tg_value_kind k)
{
    switch (k) {
    case TG_VALUE_NULL: return "null";
    case TG_VALUE_BOOL: return "a bool";
    case TG_VALUE_INT: return "an integer";
    case TG_VALUE_FLOAT: return "a float";
    case TG_VALUE_STRING: return "a string";
    case TG_VALUE_LIST: return "a list";
    default: return "a value";
    }
}

static tg_status expected(const tg_value *v, const char *key, const char *what)
{
    char got[96];
    if (!key) key = "value";
    if (!v) return tg_set_error(TG_ERR_INVALID, "%s: expected %s, got nothing", key, what);
    tg_value_format(v, got, sizeof got);
    if (v->kind == TG_VALUE_STRING && got[0] != '\'')
        return tg_set_error(TG_ERR_INVALID, "%s: expected %s, got '%s'", key, what, got);
    return tg_set_error(TG_ERR_INVALID, "%s: expected %s, got %s %s", key, what,
                        kind_noun(v->kind), got);
}

tg_status tg_value_as_int(const tg_value *v, const char *key, int64_t *out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    if (!v || v->kind != TG_VALUE_INT) return expected(v, key, "an integer");
    *out = v->i;
    return TG_OK;
}

tg_status tg_value_as_double(const tg_value *v, const char *key, double *out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    if (!v || (v->kind != TG_VALUE_INT && v->kind != TG_VALUE_FLOAT))
        return expected(v, key, "a number");
    *out = v->kind == TG_VALUE_INT ? (double)v->i : v->f;
    return TG_OK;
}

tg_status tg_value_as_bool(const tg_value *v, const char *key, bool *out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    if (!v || v->kind != TG_VALUE_BOOL) return expected(v, key, "true or false");
    *out = v->b;
    return TG_OK;
}

tg_status tg_value_as_string(const tg_value *v, const char *key, const char **out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    if (!v || v->kind != TG_VALUE_STRING || !v->s) return expected(v, key, "a string");
    *out = v->s;
    return TG_OK;
}

tg_status tg_value_as_int_list(const tg_value *v, const char *key, int64_t *out, int max,
                               int *n)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    TG__NONNULL(n, TG_ERR_INVALID);
    if (!key) key = "value";
    if (v && v->kind == TG_VALUE_INT) {
        if (max < 1)
            return tg_set_error(TG_ERR_LIMIT, "%s: expected at most %d integers, got 1", key, max);
        out[0] = v->i;
        *n = 1;
        return TG_OK;
    }
    if (!v || v->kind != TG_VALUE_LIST) return expected(v, key, "a list of integers");
    if (v->n > max)
        return tg_set_error(TG_ERR_LIMIT, "%s: expected at most %d integers, got %d", key, max,
                            v->n);
    for (int i = 0; i < v->n; i++) {
        if (v->items[i].kind != TG_VALUE_INT) {
            char item[128];
            snprintf(item, sizeof item, "%s[%d]", key, i);
            return expected(&v->items[i], item, "an integer");
        }
        out[i] = v->items[i].i;
    }
    *n = v->n;
    return TG_OK;
}

/* ---- configs ---- */

typedef struct {
    char    *key;
    tg_value value;
    bool     used;
} centry;

struct tg_config {
    centry *e;
    int     n, cap;
};

tg_config *tg_config_new(void)
{
    tg_config *c = tg__calloc(1, sizeof *c);
    if (!c) tg_set_error(TG_ERR_NOMEM, "config: out of memory");
    return c;
}

void tg_config_free(tg_config *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        tg__free(c->e[i].key);
        tg_value_free(&c->e[i].value);
    }
    tg__free(c->e);
    tg__free(c);
}

static bool key_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || tg__value_is_digit(ch) ||
           ch == '_' || ch == '.';
}

/* NULL when the key is valid, otherwise what is wrong with it. */
static const char *key_problem(const char *k, size_t n)
{
    if (!n) return "the key is empty";
    for (size_t i = 0; i < n; i++)
        if (!key_char(k[i])) return "a key may only contain letters, digits, '_' and '.'";
    return NULL;
}

static int find_key(const tg_config *c, const char *k, size_t n)
{
    for (int i = 0; i < c->n; i++)
        if (strlen(c->e[i].key) == n && !memcmp(c->e[i].key, k, n)) return i;
    return -1;
}

/* Store (key, *v), taking *v; frees *v on failure. */
static tg_status store(tg_config *c, const char *key, size_t klen, tg_value *v)
{
    int i = find_key(c, key, klen);
    if (i >= 0) {
        tg_value_free(&c->e[i].value);
        c->e[i].value = *v;
        c->e[i].used = false;
        memset(v, 0, sizeof *v);
        return TG_OK;
    }
    if (c->n == c->cap) {
        int ncap = c->cap ? c->cap * 2 : 8;
        centry *ne = c->cap < (1 << 24) ? tg__realloc(c->e, (size_t)ncap * sizeof *ne) : NULL;
        if (!ne) {
            tg_value_free(v);
            return tg_set_error(TG_ERR_NOMEM, "config: out of memory");
        }
        c->e = ne;
        c->cap = ncap;
    }
    char *k = tg__malloc(klen + 1);
    if (!k) {
        tg_value_free(v);
        return tg_set_error(TG_ERR_NOMEM, "config: out of memory");
    }
    memcpy(k, key, klen);
    k[klen] = '\0';
    c->e[c->n].key = k;
    c->e[c->n].value = *v;
    c->e[c->n].used = false;
    c->n++;
    memset(v, 0, sizeof *v);
    return TG_OK;
}

tg_status tg_config_set(tg_config *c, const char *item)
{
    if (!c || !item) return tg_set_error(TG_ERR_INVALID, "config: NULL argument");
    const char *eq = strchr(item, '=');
    if (!eq) return tg_set_error(TG_ERR_FORMAT, "item '%s': expected KEY=VALUE", item);
    /* blanks around the key are allowed: "k = 3" */
    const char *k0 = item, *k1 = eq;
    while (k0 < k1 && tg__value_is_blank(*k0)) k0++;
    while (k1 > k0 && tg__value_is_blank(k1[-1])) k1--;
    const char *why = key_problem(k0, (size_t)(k1 - k0));
    if (why)
        return tg_set_error(TG_ERR_FORMAT, "item '%s': bad key '%.*s': %s", item,
                            (int)(k1 - k0), k0, why);
    tg_value v;
    if (tg_value_parse(eq + 1, &v)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tg_last_error());
        return tg_set_error(TG_ERR_FORMAT, "item '%s': %s (the value starts at offset %zu of the "
                            "item)", item, msg, (size_t)(eq + 1 - item));
    }
    return store(c, k0, (size_t)(k1 - k0), &v);
}

tg_status tg_config_put(tg_config *c, const char *key, tg_value *v)
{
    if (!c || !key || !v) {
        if (v) tg_value_free(v);
        return tg_set_error(TG_ERR_INVALID, "config: NULL argument");
    }
    const char *why = key_problem(key, strlen(key));
    if (why) {
        tg_value_free(v);
        return tg_set_error(TG_ERR_FORMAT, "config: bad key '%s': %s", key, why);
    }
    return store(c, key, strlen(key), v);
}

const tg_value *tg_config_get(tg_config *c, const char *key)
{
    TG__NONNULL(c, NULL);
    TG__NONNULL(key, NULL);
    if (!c || !key) return NULL;
    int i = find_key(c, key, strlen(key));
    if (i < 0) return NULL;
    c->e[i].used = true;
    return &c->e[i].value;
}

int tg_config_count(const tg_config *c) { return c ? c->n : 0; }

const char *tg_config_key(const tg_config *c, int i)
{
    return c && i >= 0 && i < c->n ? c->e[i].key : NULL;
}

tg_status tg_config_check_unused(const tg_config *c, const char *context, const char *known)
{
    if (!c) return TG_OK;
    if (!context) context = "config";
    for (int i = 0; i < c->n; i++)
        if (!c->e[i].used) {
            if (known && *known)
                return tg_set_error(TG_ERR_NOT_FOUND, "%s: unknown key '%s' (known: %s)", context,
                                    c->e[i].key, known);
            return tg_set_error(TG_ERR_NOT_FOUND, "%s: unknown key '%s'", context, c->e[i].key);
        }
    return TG_OK;
}
