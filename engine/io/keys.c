/*
 * keys.c - the one key schema (value.h): resolving a table of typed keys
 * from a KEY=VALUE config with defaults, ranges and errors that name the
 * key; writing resolved values into a config struct; printing the table for
 * help. Layers (layers/layer.c) and ops (ops/op_call.c) both use it. It is
 * not a general validator: checks across keys (d_model % n_heads) stay with
 * each layer.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "value.h"

int tg_keys_count(const tg_key *keys, int max)
{
    int n = 0;
    TG__NONNULL(keys, 0);
    while (n < max && keys[n].name) n++;
    return n;
}

const char *tg_key_type_name(tg_key_type t)
{
    switch ((int)t) {
    case TG_KEY_INT: return "INT";
    case TG_KEY_FLOAT: return "FLOAT";
    case TG_KEY_BOOL: return "BOOL";
    case TG_KEY_STRING: return "STR";
    case TG_KEY_INT_LIST: return "[INT,...]";
    default: return "VALUE";
    }
}

static const char *type_noun(tg_key_type t)
{
    switch ((int)t) {
    case TG_KEY_INT: return "an integer";
    case TG_KEY_FLOAT: return "a number";
    case TG_KEY_BOOL: return "true or false";
    case TG_KEY_STRING: return "a string";
    case TG_KEY_INT_LIST: return "a list of integers";
    default: return "a value";
    }
}

void tg_keys_names(const tg_key *keys, int n, char *buf, size_t len)
{
    size_t at = 0;
    TG__NONNULL_VOID(buf);
    if (!len) return;
    buf[0] = '\0';
    TG__NONNULL_VOID(keys);
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", keys[i].name);
}

/* ---- ranges: "[lo, hi)" with [ ] closed, ( ) open, inf allowed ---- */

typedef struct range {
    double lo, hi;
    bool   lo_open, hi_open;
} range;

static bool parse_range(const char *text, range *r)
{
    char *end;
    const char *p = text;
    if (*p != '[' && *p != '(') return false;
    r->lo_open = *p++ == '(';
    r->lo = strtod(p, &end);
    if (end == p) return false;
    for (p = end; *p == ' '; p++) {}
    if (*p++ != ',') return false;
    r->hi = strtod(p, &end);
    if (end == p || (*end != ']' && *end != ')') || end[1]) return false;
    r->hi_open = *end == ')';
    return true;
}

static bool in_range(const range *r, double x)
{
    if (isnan(x)) return false;
    if (r->lo_open ? !(x > r->lo) : !(x >= r->lo)) return false;
    return r->hi_open ? x < r->hi : x <= r->hi;
}

static tg_status check_range(const tg_key *k, double x, const char *item)
{
    range r;
    if (!k->range) return TG_OK;
    if (!parse_range(k->range, &r))
        return tg_set_error(TG_ERR_INVALID, "%s: bad range '%s' in the key table", k->name,
                            k->range);
    if (in_range(&r, x)) return TG_OK;
    char num[32];
    for (int prec = 1; prec <= 17; prec++) {   /* the shortest text that reads back as x */
        snprintf(num, sizeof num, "%.*g", prec, x);
        if (isnan(x) || strtod(num, NULL) == x) break;
    }
    return tg_set_error(TG_ERR_INVALID, "%s%s: %s is out of range %s", k->name, item, num,
                        k->range);
}

tg_status tg_key_check(const tg_key *k, const tg_value *v)
{
    TG__NONNULL(k, TG_ERR_INVALID);
    TG__NONNULL(v, TG_ERR_INVALID);
    if (v->kind == TG_VALUE_NULL)
        return k->nullable ? TG_OK : tg_set_error(TG_ERR_INVALID, "%s: expected %s, got null "
                                                  "(None)", k->name, type_noun(k->type));
    int64_t list[64];
    int n = 0;
    double f;
    bool b;
    const char *s;
    tg_status st;
    switch ((int)k->type) {
    case TG_KEY_INT:
        if ((st = tg_value_as_int(v, k->name, list))) return st;
        return check_range(k, (double)list[0], "");
    case TG_KEY_FLOAT:
        if ((st = tg_value_as_double(v, k->name, &f))) return st;
        return check_range(k, f, "");
    case TG_KEY_BOOL: return tg_value_as_bool(v, k->name, &b);
    case TG_KEY_STRING: return tg_value_as_string(v, k->name, &s);
    case TG_KEY_INT_LIST:
        if ((st = tg_value_as_int_list(v, k->name, list, 64, &n))) return st;
        for (int i = 0; i < n; i++) {
            char item[32];
            snprintf(item, sizeof item, "[%d]", i);
            if ((st = check_range(k, (double)list[i], item))) return st;
        }
        return TG_OK;
    default: return tg_set_error(TG_ERR_INVALID, "%s: bad key type", k->name);
    }
}

/* ---- resolving a table from a config ---- */

static void free_values(tg_value *out, int n)
{
    for (int i = 0; i < n; i++) tg_value_free(&out[i]);
    memset(out, 0, (size_t)n * sizeof *out);
}

tg_status tg_keys_resolve(const tg_key *keys, int n, tg_config *cfg, const char *context,
                          const char *noun, unsigned flags, tg_value *out)
{
    char names[1024], msg[1024];
    TG__NONNULL(keys, TG_ERR_INVALID);
    TG__NONNULL(out, TG_ERR_INVALID);
    if (!context) context = "config";
    if (!noun) noun = "key";
    memset(out, 0, (size_t)(n > 0 ? n : 0) * sizeof *out);
    tg_keys_names(keys, n, names, sizeof names);
    if (!names[0]) snprintf(names, sizeof names, "none");
    for (int c = 0; cfg && !(flags & TG_KEYS_ALLOW_EXTRA) && c < tg_config_count(cfg); c++) {
        const char *key = tg_config_key(cfg, c);
        bool known = false;
        for (int i = 0; i < n && !known; i++) known = !strcmp(keys[i].name, key);
        if (!known)
            return tg_set_error(TG_ERR_NOT_FOUND, "%s: unknown %s '%s' (%ss: %s)", context, noun,
                                key, noun, names);
    }
    for (int i = 0; i < n; i++) {
        const tg_key *k = &keys[i];
        const tg_value *v = cfg ? tg_config_get(cfg, k->name) : NULL;
        tg_status st;
        if (!v && !k->def) {
            free_values(out, i);
            return tg_set_error(TG_ERR_NOT_FOUND, "%s: missing required %s '%s' (%ss: %s)",
                                context, noun, k->name, noun, names);
        }
        if (v) {
            st = tg_value_copy(&out[i], v);
        } else if ((st = tg_value_parse(k->def, &out[i]))) {
            snprintf(msg, sizeof msg, "%s", tg_last_error());
            free_values(out, i + 1);
            return tg_set_error(st, "%s: bad default for %s: %s", context, k->name, msg);
        }
        if (!st) st = tg_key_check(k, &out[i]);
        if (st) {
            snprintf(msg, sizeof msg, "%s", tg_last_error());
            free_values(out, i + 1);
            return tg_set_error(st, "%s: %s", context, msg);
        }
    }
    return TG_OK;
}

/* ---- config structs ---- */

/* A string key's value into its tg_key_str field at `at` ("" for null). */
static tg_status fill_string(const tg_key *k, const tg_value *v, char *at)
{
    tg_key_str x;
    const char *text = "";
    memset(&x, 0, sizeof x);
    if (v->kind != TG_VALUE_NULL) {
        tg_status st = tg_value_as_string(v, k->name, &text);
        if (st) return st;
    }
    if (strlen(text) >= sizeof x.s)
        return tg_set_error(TG_ERR_INVALID, "%s: '%.40s%s' is longer than %d characters",
                            k->name, text, strlen(text) > 40 ? "..." : "", TG_KEY_STR_MAX - 1);
    memcpy(x.s, text, strlen(text));
    memcpy(at, &x, sizeof x);
    return TG_OK;
}

tg_status tg_keys_fill_struct(const tg_key *keys, int n, const tg_value *values, void *config)
{
    TG__NONNULL(keys, TG_ERR_INVALID);
    TG__NONNULL(values, TG_ERR_INVALID);
    TG__NONNULL(config, TG_ERR_INVALID);
    for (int i = 0; i < n; i++) {
        const tg_key *k = &keys[i];
        const tg_value *v = &values[i];
        char *at = (char *)config + k->offset;
        bool null = v->kind == TG_VALUE_NULL;
        tg_status st = TG_OK;
        switch ((int)k->type) {
        case TG_KEY_INT: {
            int64_t x = 0;
            if (!null) st = tg_value_as_int(v, k->name, &x);
            memcpy(at, &x, sizeof x);
            break;
        }
        case TG_KEY_FLOAT: {
            double x = 0;
            if (!null) st = tg_value_as_double(v, k->name, &x);
            memcpy(at, &x, sizeof x);
            break;
        }
        case TG_KEY_BOOL: {
            bool x = false;
            if (!null) st = tg_value_as_bool(v, k->name, &x);
            memcpy(at, &x, sizeof x);
            break;
        }
        case TG_KEY_INT_LIST: {
            tg_int_list x;
            memset(&x, 0, sizeof x);
            if (!null) st = tg_value_as_int_list(v, k->name, x.v, TG_MAX_RANK, &x.n);
            memcpy(at, &x, sizeof x);
            break;
        }
        case TG_KEY_STRING: st = fill_string(k, v, at); break;
        default:
            return tg_set_error(TG_ERR_INVALID, "%s: a %s key has no config struct field",
                                k->name, tg_key_type_name(k->type));
        }
        if (st) return st;
    }
    return TG_OK;
}

tg_status tg_keys_defaults(const tg_key *keys, void *config, size_t size)
{
    TG__NONNULL(keys, TG_ERR_INVALID);
    TG__NONNULL(config, TG_ERR_INVALID);
    memset(config, 0, size);
    int n = tg_keys_count(keys, 1 << 20);
    tg_value *v = tg__calloc((size_t)n + 1, sizeof *v);
    if (!v) return tg_set_error(TG_ERR_NOMEM, "out of memory");
    tg_status st = tg_keys_resolve(keys, n, NULL, "defaults", "key", 0, v);
    if (!st) st = tg_keys_fill_struct(keys, n, v, config);
    for (int i = 0; i < n; i++) tg_value_free(&v[i]);
    tg__free(v);
    return st;
}

/* ---- help ---- */

void tg_keys_print(FILE *f, const tg_key *keys, int n, int indent)
{
    TG__NONNULL_VOID(f);
    TG__NONNULL_VOID(keys);
    for (int i = 0; i < n; i++) {
        const tg_key *k = &keys[i];
        const char *type = tg_key_type_name(k->type);
        int w = fprintf(f, "%*s%s=%s", indent, "", k->name, k->def ? k->def : type);
        fprintf(f, "%*s %s%s%s%s%s; %s\n", w < indent + 24 ? indent + 24 - w : 0, "", type,
                k->nullable ? " or null" : "", k->def ? "" : ", required",
                k->range ? " in " : "", k->range ? k->range : "", k->doc ? k->doc : "");
    }
}
