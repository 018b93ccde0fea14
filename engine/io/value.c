/*
 * value.c - the KEY=VALUE value language (value.h), read and written: text to
 * a tg_value (tg_value_parse) and back (tg_value_format, which writes what
 * the parser reads as the same value), with free and copy. Typed reads and
 * configs are in config.c.
 *
 * The language, as the parser reads it:
 *   - the text is trimmed of blanks (space, \t, \n, \r) at both ends;
 *   - integer: [+-]?[0-9]+ that fits int64 (an integer out of range is an
 *     error, not a float);
 *   - float: [+-]? (digits [. digits] | . digits) [e [+-] digits], or
 *     inf / infinity / nan with an optional sign, in any letter case;
 *     over/underflow behaves like Python's float() (1e999 is inf);
 *   - true/True, false/False, null/None;
 *   - a list: '[' values separated by ',' ']', nested up to VALUE_MAX_DEPTH
 *     levels; no trailing comma; [] is the empty list;
 *   - a string: quoted with ' or " (escapes \\ \' \" \n \t \r), or bare text.
 *     At the top level bare text is the whole trimmed text when it is none of
 *     the above (so `b l h e` is a string); inside a list a bare item ends at
 *     a blank, ',', '[', ']' or a quote.
 * Offsets in messages are 0-based bytes into the text as given.
 *
 * It is not a general expression language: no arithmetic, no tuples, no
 * dicts. Every parse is bounded: recursion is limited by VALUE_MAX_DEPTH.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"
#include "value.h"

#define VALUE_MAX_DEPTH 32
#define QUOTE_MAX 48   /* how much of the text an error message quotes */

/* ---- parsing ---- */

typedef struct {
    const char *text;   /* the whole text, for messages */
    const char *s;      /* cursor */
    const char *end;    /* end of the trimmed text */
} vparser;

static void skip_blanks(vparser *p)
{
    while (p->s < p->end && tg__value_is_blank(*p->s)) p->s++;
}

static size_t offset_of(const vparser *p, const char *at) { return (size_t)(at - p->text); }

static tg_status verr(const vparser *p, const char *at, const char *msg)
{
    size_t n = strlen(p->text);
    return tg_set_error(TG_ERR_FORMAT, "bad value '%.*s%s': %s at offset %zu",
                        (int)(n > QUOTE_MAX ? QUOTE_MAX : n), p->text, n > QUOTE_MAX ? "..." : "",
                        msg, offset_of(p, at));
}

static bool ieq(const char *s, size_t n, const char *w)
{
    size_t m = strlen(w);
    if (n != m) return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != w[i]) return false;
    return true;
}

/* Does s[0..n) have the syntax of a decimal float (integers included)? */
static bool float_syntax(const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    while (i < n && tg__value_is_digit(s[i])) i++, digits++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && tg__value_is_digit(s[i])) i++, digits++;
    }
    if (!digits) return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || !tg__value_is_digit(s[i])) return false;
        while (i < n && tg__value_is_digit(s[i])) i++;
    }
    return i == n;
}

/* Classify a token s[0..n) as integer, float or keyword. Returns 1 when it is
 * one (filled into *out), 0 when it is plain text, -1 on an error (set). */
static int scalar(vparser *p, const char *s, size_t n, tg_value *out)
{
    static const struct { const char *w; tg_value_kind k; bool b; } words[] = {
        {"true", TG_VALUE_BOOL, true},  {"True", TG_VALUE_BOOL, true},
        {"false", TG_VALUE_BOOL, false}, {"False", TG_VALUE_BOOL, false},
        {"null", TG_VALUE_NULL, false},  {"None", TG_VALUE_NULL, false},
    };
    memset(out, 0, sizeof *out);
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (strlen(words[k].w) == n && !memcmp(s, words[k].w, n)) {
            out->kind = words[k].k;
            out->b = words[k].b;
            return 1;
        }
    size_t i = 0;
    bool neg = false;
    if (n && (s[0] == '+' || s[0] == '-')) neg = s[0] == '-', i = 1;
    if (ieq(s + i, n - i, "inf") || ieq(s + i, n - i, "infinity")) {
        out->kind = TG_VALUE_FLOAT;
        out->f = neg ? -INFINITY : INFINITY;
        return 1;
    }
    if (ieq(s + i, n - i, "nan")) {
        out->kind = TG_VALUE_FLOAT;
        out->f = NAN;
        return 1;
    }
    size_t j = i;
    while (j < n && tg__value_is_digit(s[j])) j++;
    if (j == n && j > i) {
        /* integer: accumulate as a negative number so INT64_MIN fits */
        int64_t v = 0;
        for (size_t k = i; k < n; k++) {
            int d = s[k] - '0';
            if (v < (INT64_MIN + d) / 10) {
                verr(p, s, "integer out of range (int64)");
                return -1;
            }
            v = v * 10 - d;
        }
        if (!neg && v == INT64_MIN) {
            verr(p, s, "integer out of range (int64)");
            return -1;
        }
        out->kind = TG_VALUE_INT;
        out->i = neg ? v : -v;
        out->f = (double)out->i;
        return 1;
    }
    if (float_syntax(s, n)) {
        /* s is followed by a blank, ',', ']' or the end of the text, none of
         * which can continue a number, so strtod stops exactly at s + n. */
        char *e;
        double f = strtod(s, &e);
        if (e != s + n) {
            verr(p, s, "cannot convert the number (is the locale's decimal point '.'?)");
            return -1;
        }
        out->kind = TG_VALUE_FLOAT;
        out->f = f;
        return 1;
    }
    return 0;
}

static tg_status make_string(vparser *p, const char *at, const char *s, size_t n, tg_value *out)
{
    memset(out, 0, sizeof *out);
    char *c = tg__malloc(n + 1);
    if (!c) return tg_set_error(TG_ERR_NOMEM, "bad value at offset %zu: out of memory",
                                offset_of(p, at));
    memcpy(c, s, n);
    c[n] = '\0';
    out->kind = TG_VALUE_STRING;
    out->s = c;
    return TG_OK;
}

/* A quoted string starting at p->s (on the quote). */
static tg_status parse_quoted(vparser *p, tg_value *out)
{
    const char *start = p->s;
    char q = *p->s++;
    size_t n = 0;
    /* first pass: validate and measure */
    const char *c = p->s;
    for (;;) {
        if (c >= p->end) return verr(p, c, q == '\'' ? "unterminated string (missing ')"
                                                     : "unterminated string (missing \")");
        if (*c == q) break;
        if (*c == '\\') {
            if (c + 1 >= p->end) return verr(p, c, "unterminated string (missing quote after \\)");
            if (!strchr("\\'\"ntr", c[1]) || c[1] == '\0')
                return verr(p, c, "unknown escape (use \\\\ \\' \\\" \\n \\t \\r)");
            c++;
        }
        c++;
        n++;
    }
    char *s = tg__malloc(n + 1);
    if (!s) return tg_set_error(TG_ERR_NOMEM, "bad value at offset %zu: out of memory",
                                offset_of(p, start));
    size_t k = 0;
    for (c = p->s; *c != q; c++) {
        if (*c == '\\') {
            c++;
            s[k++] = *c == 'n' ? '\n' : *c == 't' ? '\t' : *c == 'r' ? '\r' : *c;
        } else {
            s[k++] = *c;
        }
    }
    s[k] = '\0';
    p->s = c + 1;
    memset(out, 0, sizeof *out);
    out->kind = TG_VALUE_STRING;
    out->s = s;
    return TG_OK;
}

static tg_status parse_in_list(vparser *p, tg_value *out, int depth);

/* A list starting at p->s (on the '['). */
static tg_status parse_list(vparser *p, tg_value *out, int depth)
{
    const char *open = p->s;
    memset(out, 0, sizeof *out);
    out->kind = TG_VALUE_LIST;
    if (depth >= VALUE_MAX_DEPTH)
        return verr(p, open, "lists nested too deeply (limit 32)");
    p->s++;
    skip_blanks(p);
    if (p->s < p->end && *p->s == ']') {
        p->s++;
        return TG_OK;
    }
    int cap = 0;
    for (;;) {
        if (p->s >= p->end) return verr(p, p->s, "unterminated list");
        if (out->n == cap) {
            int ncap = cap ? cap * 2 : 4;
            tg_value *ni = cap < (1 << 28) ? tg__realloc(out->items, (size_t)ncap * sizeof *ni)
                                           : NULL;
            if (!ni) return tg_set_error(TG_ERR_NOMEM, "bad value at offset %zu: out of memory",
                                         offset_of(p, p->s));
            out->items = ni;
            cap = ncap;
        }
        tg_status st = parse_in_list(p, &out->items[out->n], depth + 1);
        if (st) {
            tg_value_free(&out->items[out->n]);   /* the item half built */
            return st;
        }
        out->n++;
        skip_blanks(p);
        if (p->s >= p->end) return verr(p, p->s, "unterminated list");
        if (*p->s == ']') {
            p->s++;
            return TG_OK;
        }
        if (*p->s != ',') return verr(p, p->s, "expected ',' or ']'");
        p->s++;
        skip_blanks(p);
        if (p->s < p->end && *p->s == ']') return verr(p, p->s, "expected a value after ','");
    }
}

static bool ends_token(char c) { return tg__value_is_blank(c) || strchr(",[]'\"", c) != NULL; }

static tg_status parse_in_list(vparser *p, tg_value *out, int depth)
{
    memset(out, 0, sizeof *out);
    skip_blanks(p);
    if (p->s >= p->end) return verr(p, p->s, "unterminated list");
    char c = *p->s;
    if (c == '[') return parse_list(p, out, depth);
    if (c == '\'' || c == '"') return parse_quoted(p, out);
    if (c == ',' || c == ']') return verr(p, p->s, "expected a value");
    const char *t = p->s;
    while (p->s < p->end && !ends_token(*p->s)) p->s++;
    int k = scalar(p, t, (size_t)(p->s - t), out);
    if (k < 0) return TG_ERR_FORMAT;
    if (k > 0) return TG_OK;
    return make_string(p, t, t, (size_t)(p->s - t), out);
}

tg_status tg_value_parse(const char *text, tg_value *out)
{
    if (!out) return tg_set_error(TG_ERR_INVALID, "tg_value_parse: out is NULL");
    memset(out, 0, sizeof *out);
    if (!text) return tg_set_error(TG_ERR_INVALID, "bad value: text is NULL");
    vparser p = {text, text, text + strlen(text)};
    while (p.end > p.s && tg__value_is_blank(p.end[-1])) p.end--;
    skip_blanks(&p);
    if (p.s == p.end) return verr(&p, p.s, "empty value (write '' for an empty string)");
    tg_status st;
    char c = *p.s;
    if (c == '[' || c == '\'' || c == '"') {
        st = c == '[' ? parse_list(&p, out, 0) : parse_quoted(&p, out);
        if (!st) {
            skip_blanks(&p);
            if (p.s != p.end)
                st = verr(&p, p.s, c == '[' ? "unexpected text after the list"
                                            : "unexpected text after the string");
        }
    } else {
        int k = scalar(&p, p.s, (size_t)(p.end - p.s), out);
        st = k < 0 ? TG_ERR_FORMAT : k > 0 ? TG_OK : make_string(&p, p.s, p.s,
                                                                 (size_t)(p.end - p.s), out);
    }
    if (st) tg_value_free(out);
    return st;
}

void tg_value_free(tg_value *v)
{
    if (!v) return;
    if (v->kind == TG_VALUE_LIST)
        for (int i = 0; i < v->n; i++) tg_value_free(&v->items[i]);
    tg__free(v->items);
    tg__free(v->s);
    memset(v, 0, sizeof *v);
}

/* ---- formatting ---- */

typedef struct {
    char  *buf;
    size_t len, at;   /* at may pass len: the output is then truncated */
} vout;

static void put(vout *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, o->at++)
        if (o->at + 1 < o->len) o->buf[o->at] = s[i];
}
static void puts_(vout *o, const char *s) { put(o, s, strlen(s)); }

/* Python's repr(float): the shortest digits that read back to the same
 * double, fixed notation for exponents in [-4, 16), scientific otherwise. */
static void put_double(vout *o, double f)
{
    if (isnan(f) || isinf(f)) {
        puts_(o, isnan(f) ? "nan" : f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40], digits[24], out[64];
    int exp10 = 0;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    /* e is "-d.ddde+XX" */
    const char *c = e;
    bool neg = *c == '-';
    if (neg) c++;
    size_t nd = 0;
    for (; *c && *c != 'e'; c++)
        if (tg__value_is_digit(*c)) digits[nd++] = *c;
    if (*c == 'e') exp10 = atoi(c + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    size_t k = 0;
    if (neg) out[k++] = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            out[k++] = '0', out[k++] = '.';
            for (int z = 0; z < -exp10 - 1; z++) out[k++] = '0';
            for (size_t i = 0; i < nd; i++) out[k++] = digits[i];
        } else {
            for (int i = 0; i <= exp10; i++) out[k++] = (size_t)i < nd ? digits[i] : '0';
            out[k++] = '.';
            if ((size_t)exp10 + 1 < nd)
                for (size_t i = (size_t)exp10 + 1; i < nd; i++) out[k++] = digits[i];
            else
                out[k++] = '0';
        }
        out[k] = '\0';
    } else {
        out[k++] = digits[0];
        if (nd > 1) {
            out[k++] = '.';
            for (size_t i = 1; i < nd; i++) out[k++] = digits[i];
        }
        snprintf(out + k, sizeof out - k, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    puts_(o, out);
}

/* Can s be written without quotes and read back as the same string (also
 * inside a list)? */
static bool bare_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n) return false;
    for (size_t i = 0; i < n; i++)
        if (ends_token(s[i]) || (unsigned char)s[i] < 0x20 || s[i] == '\\') return false;
    size_t i = s[0] == '+' || s[0] == '-';
    while (i < n && tg__value_is_digit(s[i])) i++;
    if (i == n) return false;   /* an integer (perhaps out of range) */
    vparser p = {s, s, s + n};
    tg_value tmp;
    int k = scalar(&p, s, n, &tmp);
    return k == 0;
}

static void put_value(vout *o, const tg_value *v, int depth)
{
    char num[32];
    switch (v->kind) {
    case TG_VALUE_NULL: puts_(o, "null"); break;
    case TG_VALUE_BOOL: puts_(o, v->b ? "true" : "false"); break;
    case TG_VALUE_INT:
        snprintf(num, sizeof num, "%lld", (long long)v->i);
        puts_(o, num);
        break;
    case TG_VALUE_FLOAT: put_double(o, v->f); break;
    case TG_VALUE_STRING:
        if (!v->s) {
            puts_(o, "''");
        } else if (bare_ok(v->s)) {
            puts_(o, v->s);
        } else {
            put(o, "'", 1);
            for (const char *c = v->s; *c; c++) {
                const char *esc = *c == '\'' ? "\\'" : *c == '\\' ? "\\\\" : *c == '\n' ? "\\n"
                                : *c == '\t' ? "\\t" : *c == '\r' ? "\\r" : NULL;
                if (esc) puts_(o, esc);
                else put(o, c, 1);
            }
            put(o, "'", 1);
        }
        break;
    case TG_VALUE_LIST:
        put(o, "[", 1);
        if (depth >= VALUE_MAX_DEPTH) {
            puts_(o, "...");
        } else {
            for (int i = 0; i < v->n; i++) {
                if (i) puts_(o, ", ");
                put_value(o, &v->items[i], depth + 1);
            }
        }
        put(o, "]", 1);
        break;
    default: puts_(o, "<bad value>"); break;
    }
}

size_t tg_value_format(const tg_value *v, char *buf, size_t len)
{
    if (!buf) len = 0;
    vout o = {buf, len, 0};
    if (!v) puts_(&o, "<none>");
    else put_value(&o, v, 0);
    if (len) buf[o.at < len ? o.at : len - 1] = '\0';
    return o.at;
}

char *tg_value_text(const tg_value *v)
{
    TG__NONNULL(v, NULL);
    size_t n = tg_value_format(v, NULL, 0);
    char *s = n < SIZE_MAX ? tg__malloc(n + 1) : NULL;
    if (!s) {
        tg_set_error(TG_ERR_NOMEM, "value: out of memory for %zu bytes of text", n);
        return NULL;
    }
    tg_value_format(v, s, n + 1);
    return s;
}

void tg_value_text_free(char *s) { tg__free(s); }

tg_status tg_value_copy(tg_value *dst, const tg_value *src)
{
    if (!dst) return tg_set_error(TG_ERR_INVALID, "tg_value_copy: dst is NULL");
    memset(dst, 0, sizeof *dst);
    if (!src) return tg_set_error(TG_ERR_INVALID, "tg_value_copy: src is NULL");
    *dst = *src;
    dst->s = NULL;
    dst->items = NULL;
    dst->n = 0;
    if (src->kind == TG_VALUE_STRING && src->s && !(dst->s = tg__strdup(src->s))) goto oom;
    if (src->kind == TG_VALUE_LIST && src->n > 0) {
        if (!(dst->items = tg__calloc((size_t)src->n, sizeof *dst->items))) goto oom;
        for (; dst->n < src->n; dst->n++)
            if (tg_value_copy(&dst->items[dst->n], &src->items[dst->n])) {
                dst->n++;   /* the half-copied item is freed too */
                tg_value_free(dst);
                return TG_ERR_NOMEM;
            }
    }
    return TG_OK;
oom:
    tg_value_free(dst);
    return tg_set_error(TG_ERR_NOMEM, "value: out of memory copying a value");
}
