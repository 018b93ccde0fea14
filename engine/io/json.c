/*
 * json.c - the strict JSON parser of json.h.
 *
 * Recursive descent with an explicit depth limit. Children of an open array
 * or object are collected on one growable scratch stack (indices only, so a
 * realloc never leaves a dangling pointer) and copied into the document's
 * arena when the container closes. Strings are scanned twice with the same
 * code: once to validate and measure, once to decode into the arena.
 * Numbers are copied into a NUL-terminated buffer before strtod, which would
 * otherwise be free to read past the end of a text that is not terminated.
 *
 * Not here: a writer (tgraph writes its little JSON by hand), streaming,
 * comments or any other extension.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define JSON_DEFAULT_DEPTH 64
#define JSON_HARD_DEPTH 1000
#define JSON_DEFAULT_VALUES ((size_t)1 << 21)

typedef struct {
    const unsigned char *s;
    size_t        len, at;
    const char   *what;
    tg__json_opts o;
    tg__arena    *arena;
    tg__json     *stack;   /* children of the open containers */
    size_t        top, cap;
    size_t        values;
} jparser;

/* ---- helpers ---- */

void tg__json_line_col(const char *text, size_t len, size_t pos, int *line, int *col)
{
    int l = 1;
    size_t start = 0;
    if (pos > len) pos = len;
    for (size_t i = 0; i < pos; i++)
        if (text[i] == '\n') l++, start = i + 1;
    *line = l;
    *col = (int)(pos - start + 1 > (size_t)INT32_MAX ? INT32_MAX : pos - start + 1);
}

static tg_status jerr_at(jparser *p, tg_status st, size_t pos, const char *fmt, ...)
    TG__PRINTF(4, 5);
static tg_status jerr_at(jparser *p, tg_status st, size_t pos, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    tg__json_line_col((const char *)p->s, p->len, pos, &line, &col);
    return tg_set_error(st, "%s: %s at line %d, column %d (offset %zu)", p->what, msg, line, col,
                        pos);
}
#define jerr(p, pos, ...) jerr_at(p, TG_ERR_FORMAT, pos, __VA_ARGS__)

static void skip_ws(jparser *p)
{
    while (p->at < p->len) {
        unsigned char c = p->s[p->at];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->at++;
    }
}

static tg_status push(jparser *p, const tg__json *v)
{
    if (++p->values > p->o.max_values)
        return jerr_at(p, TG_ERR_LIMIT, v->pos, "too many values (limit %zu)", p->o.max_values);
    if (p->top == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : 64;
        tg__json *ns = ncap < SIZE_MAX / sizeof *ns ? tg__realloc(p->stack, ncap * sizeof *ns)
                                                    : NULL;
        if (!ns) return jerr_at(p, TG_ERR_NOMEM, v->pos, "out of memory");
        p->stack = ns;
        p->cap = ncap;
    }
    p->stack[p->top++] = *v;
    return TG_OK;
}

/* Describe the byte at p->at for "unexpected ..." messages. */
static const char *what_is_here(jparser *p, char *buf, size_t n)
{
    if (p->at >= p->len) return "end of input";
    unsigned char c = p->s[p->at];
    if (c >= 0x20 && c < 0x7f) snprintf(buf, n, "character '%c'", c);
    else snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

/* ---- strings ---- */

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at s[i..i+4) (i + 4 <= len checked by the caller); -1 if not hex. */
static long hex4(const unsigned char *s)
{
    long v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(s[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t put_utf8(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        if (out) out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        if (out) out[0] = (char)(0xc0 | (cp >> 6)), out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        if (out) {
            out[0] = (char)(0xe0 | (cp >> 12));
            out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
            out[2] = (char)(0x80 | (cp & 0x3f));
        }
        return 3;
    }
    if (out) {
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
    }
    return 4;
}

/* Scan the string whose opening quote is at p->at. With out == NULL: validate
 * and set *outlen and *end (offset after the closing quote). With out: decode
 * (the text is known to be valid). */
static tg_status scan_string(jparser *p, char *out, size_t *outlen, size_t *end)
{
    const unsigned char *s = p->s;
    size_t i = p->at + 1, k = 0, open = p->at;
    for (;;) {
        if (i >= p->len) return jerr(p, open, "unterminated string");
        unsigned char c = s[i];
        if (c == '"') break;
        if (c < 0x20)
            return jerr(p, i, "control character 0x%02x in a string (escape it)", c);
        if (c == '\\') {
            if (i + 1 >= p->len) return jerr(p, open, "unterminated string");
            unsigned char e = s[i + 1];
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e && simple) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                if (out) out[k] = map[simple - "\"\\/bfnrt"];
                k++;
                i += 2;
                continue;
            }
            if (e != 'u') return jerr(p, i, "invalid escape '\\%c'", e >= 0x20 && e < 0x7f ? e : '?');
            if (p->len - i < 6 || hex4(s + i + 2) < 0)
                return jerr(p, i, "invalid \\u escape (expected 4 hex digits)");
            unsigned long cp = (unsigned long)hex4(s + i + 2);
            size_t esc = i;
            i += 6;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return jerr(p, esc, "lone trailing surrogate \\u%04lx", cp);
            if (cp >= 0xd800 && cp <= 0xdbff) {
                long lo = -1;
                if (p->len - i >= 6 && s[i] == '\\' && s[i + 1] == 'u') lo = hex4(s + i + 2);
                if (lo < 0xdc00 || lo > 0xdfff)
                    return jerr(p, esc, "lone leading surrogate \\u%04lx (expected a \\udc00-"
                                "\\udfff escape after it)", cp);
                cp = 0x10000 + ((cp - 0xd800) << 10) + ((unsigned long)lo - 0xdc00);
                i += 6;
            }
            k += put_utf8(cp, out ? out + k : NULL);
            continue;
        }
        if (c < 0x80) {
            if (out) out[k] = (char)c;
            k++;
            i++;
            continue;
        }
        /* a multi-byte UTF-8 sequence: validate just this one */
        size_t seq = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        if (seq > p->len - i || tg__utf8_check(s + i, seq) != seq)
            return jerr(p, i, "invalid UTF-8 byte 0x%02x in a string", c);
        if (out) memcpy(out + k, s + i, seq);
        k += seq;
        i += seq;
    }
    *outlen = k;
    *end = i + 1;
    return TG_OK;
}

static tg_status parse_string(jparser *p, tg__json *v)
{
    size_t n, end;
    memset(v, 0, sizeof *v);
    v->kind = TG__JSON_STRING;
    v->pos = p->at;
    tg_status st = scan_string(p, NULL, &n, &end);
    if (st) return st;
    char *str = tg__arena_alloc(p->arena, n + 1, 1);
    if (!str) return jerr_at(p, TG_ERR_NOMEM, p->at, "out of memory");
    scan_string(p, str, &n, &end);
    str[n] = '\0';
    v->str = str;
    v->len = n;
    p->at = end;
    return TG_OK;
}

/* ---- numbers ---- */

static bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static tg_status parse_number(jparser *p, tg__json *v)
{
    const unsigned char *s = p->s;
    size_t start = p->at, i = p->at;
    bool neg = false, frac = false;
    memset(v, 0, sizeof *v);
    v->kind = TG__JSON_NUMBER;
    v->pos = start;
    if (s[i] == '-') neg = true, i++;
    if (i >= p->len || !is_digit(s[i])) {
        if (i < p->len && s[i] == 'I') return jerr(p, start, "Infinity is not valid JSON");
        return jerr(p, start, "invalid number (expected a digit after '-')");
    }
    if (s[i] == '0') {
        i++;
        if (i < p->len && is_digit(s[i]))
            return jerr(p, start, "invalid number: leading zeros are not allowed");
    } else {
        while (i < p->len && is_digit(s[i])) i++;
    }
    size_t int_end = i;
    if (i < p->len && s[i] == '.') {
        frac = true;
        i++;
        if (i >= p->len || !is_digit(s[i]))
            return jerr(p, start, "invalid number: expected a digit after '.'");
        while (i < p->len && is_digit(s[i])) i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        frac = true;
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= p->len || !is_digit(s[i]))
            return jerr(p, start, "invalid number: expected a digit in the exponent");
        while (i < p->len && is_digit(s[i])) i++;
    }
    p->at = i;
    if (!frac) {
        /* exact int64, accumulated negatively so INT64_MIN fits */
        int64_t acc = 0;
        bool fits = true;
        for (size_t k = start + neg; k < int_end && fits; k++) {
            int d = s[k] - '0';
            if (acc < (INT64_MIN + d) / 10) fits = false;
            else acc = acc * 10 - d;
        }
        if (fits && (neg || acc != INT64_MIN)) {
            v->is_int = true;
            v->i = neg ? acc : -acc;
            v->num = (double)v->i;
            return TG_OK;
        }
    }
    size_t n = i - start;
    char small[128], *buf = n < sizeof small ? small : tg__malloc(n + 1);
    if (!buf) return jerr_at(p, TG_ERR_NOMEM, start, "out of memory");
    memcpy(buf, s + start, n);
    buf[n] = '\0';
    char *e;
    double d = strtod(buf, &e);
    bool whole = e == buf + n;
    if (buf != small) tg__free(buf);
    if (!whole) return jerr(p, start, "cannot convert the number (locale decimal point?)");
    if (isinf(d)) return jerr(p, start, "number out of range (overflows a double)");
    v->num = d;
    return TG_OK;
}

/* ---- values ---- */

static tg_status parse_value(jparser *p, tg__json *v, int depth);

/* Sort helper for duplicate detection. */
typedef struct { const char *s; size_t len; int32_t idx; } keyref;

static int keyref_cmp(const void *a, const void *b)
{
    const keyref *x = a, *y = b;
    size_t m = x->len < y->len ? x->len : y->len;
    int c = m ? memcmp(x->s, y->s, m) : 0;
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Index of the first member (in document order) whose key repeats an earlier
 * one, or -1; -2 on OOM. O(n log n). */
static int32_t first_duplicate(const tg__json *obj)
{
    int32_t n = obj->n;
    if (n < 2) return -1;
    if (n <= 8) {
        for (int32_t j = 1; j < n; j++)
            for (int32_t i = 0; i < j; i++) {
                const tg__json *a = &obj->items[2 * i], *b = &obj->items[2 * j];
                if (a->len == b->len && !memcmp(a->str, b->str, a->len)) return j;
            }
        return -1;
    }
    keyref *r = tg__malloc((size_t)n * sizeof *r);
    if (!r) return -2;
    for (int32_t i = 0; i < n; i++)
        r[i] = (keyref){obj->items[2 * i].str, obj->items[2 * i].len, i};
    qsort(r, (size_t)n, sizeof *r, keyref_cmp);
    int32_t best = -1;
    for (int32_t i = 1; i < n; i++)
        if (r[i].len == r[i - 1].len && !memcmp(r[i].s, r[i - 1].s, r[i].len) &&
            (i < 2 || r[i - 1].len != r[i - 2].len || memcmp(r[i - 1].s, r[i - 2].s, r[i].len)) &&
            (best < 0 || r[i].idx < best))
            best = r[i].idx;   /* the second occurrence of each group */
    tg__free(r);
    return best;
}

/* Close the container whose children are stack[base..top): copy them into the arena. */
static tg_status close_container(jparser *p, tg__json *v, size_t base)
{
    size_t count = p->top - base;
    if (count) {
        tg__json *items = tg__arena_alloc(p->arena, count * sizeof *items, _Alignof(tg__json));
        if (!items) return jerr_at(p, TG_ERR_NOMEM, v->pos, "out of memory");
        memcpy(items, p->stack + base, count * sizeof *items);
        v->items = items;
    }
    p->top = base;
    v->n = (int32_t)(v->kind == TG__JSON_OBJECT ? count / 2 : count);
    if (v->kind == TG__JSON_OBJECT) {
        v->dup = first_duplicate(v);
        if (v->dup == -2) return jerr_at(p, TG_ERR_NOMEM, v->pos, "out of memory");
        if (v->dup >= 0 && p->o.reject_duplicates) {
            const tg__json *k = &v->items[2 * v->dup];
            char ex[96];
            return jerr(p, k->pos, "duplicate key \"%s\"",
                        tg__escape(k->str, k->len, ex, sizeof ex));
        }
    }
    return TG_OK;
}

static tg_status parse_container(jparser *p, tg__json *v, int depth)
{
    bool obj = p->s[p->at] == '{';
    char close = obj ? '}' : ']';
    memset(v, 0, sizeof *v);
    v->kind = obj ? TG__JSON_OBJECT : TG__JSON_ARRAY;
    v->pos = p->at;
    v->dup = -1;
    if (depth >= p->o.max_depth)
        return jerr_at(p, TG_ERR_LIMIT, p->at, "nesting deeper than %d levels", p->o.max_depth);
    size_t base = p->top;
    p->at++;
    skip_ws(p);
    if (p->at < p->len && p->s[p->at] == close) {
        p->at++;
        return close_container(p, v, base);
    }
    for (;;) {
        tg__json item;
        tg_status st;
        skip_ws(p);
        if (obj) {
            char here[32];
            if (p->at >= p->len) return jerr(p, p->at, "unterminated object");
            if (p->s[p->at] == '}') return jerr(p, p->at, "trailing comma before '}'");
            if (p->s[p->at] != '"') {
                if (p->s[p->at] == '/') return jerr(p, p->at, "comments are not allowed in JSON");
                return jerr(p, p->at, "expected a string key, got %s",
                            what_is_here(p, here, sizeof here));
            }
            if ((st = parse_string(p, &item)) || (st = push(p, &item))) return st;
            skip_ws(p);
            if (p->at >= p->len || p->s[p->at] != ':') {
                if (p->at < p->len && p->s[p->at] == '/')
                    return jerr(p, p->at, "comments are not allowed in JSON");
                return jerr(p, p->at, "expected ':' after the key, got %s",
                            what_is_here(p, here, sizeof here));
            }
            p->at++;
        } else {
            if (p->at < p->len && p->s[p->at] == ']')
                return jerr(p, p->at, "trailing comma before ']'");
        }
        if ((st = parse_value(p, &item, depth + 1)) || (st = push(p, &item))) return st;
        skip_ws(p);
        if (p->at >= p->len) return jerr(p, p->at, obj ? "unterminated object"
                                                      : "unterminated array");
        unsigned char c = p->s[p->at];
        if (c == (unsigned char)close) {
            p->at++;
            return close_container(p, v, base);
        }
        if (c != ',') {
            char here[32];
            if (c == '/') return jerr(p, p->at, "comments are not allowed in JSON");
            return jerr(p, p->at, obj ? "expected ',' or '}', got %s" : "expected ',' or ']', got %s",
                        what_is_here(p, here, sizeof here));
        }
        p->at++;
    }
}

static bool literal(jparser *p, const char *w)
{
    size_t n = strlen(w);
    if (p->len - p->at < n || memcmp(p->s + p->at, w, n) != 0) return false;
    p->at += n;
    return true;
}

static tg_status parse_value(jparser *p, tg__json *v, int depth)
{
    char here[32];
    memset(v, 0, sizeof *v);
    skip_ws(p);
    if (p->at >= p->len) return jerr(p, p->at, "unexpected end of input (expected a value)");
    v->pos = p->at;
    unsigned char c = p->s[p->at];
    switch (c) {
    case '{':
    case '[': return parse_container(p, v, depth);
    case '"': return parse_string(p, v);
    case 't':
    case 'f':
    case 'n':
        if (literal(p, "true")) v->kind = TG__JSON_BOOL, v->b = true;
        else if (literal(p, "false")) v->kind = TG__JSON_BOOL;
        else if (literal(p, "null")) v->kind = TG__JSON_NULL;
        else if (literal(p, "nan")) return jerr(p, v->pos, "NaN is not valid JSON");
        else return jerr(p, v->pos, "invalid literal (expected true, false or null)");
        return TG_OK;
    case 'N':
        return jerr(p, v->pos, "NaN is not valid JSON");
    case 'I':
        return jerr(p, v->pos, "Infinity is not valid JSON");
    case '/':
        return jerr(p, v->pos, "comments are not allowed in JSON");
    case '\'':
        return jerr(p, v->pos, "single-quoted strings are not valid JSON");
    default:
        if (c == '-' || is_digit(c)) return parse_number(p, v);
        if (c == '+') return jerr(p, v->pos, "invalid number: a leading '+' is not allowed");
        if (c == '.') return jerr(p, v->pos, "invalid number: expected a digit before '.'");
        return jerr(p, v->pos, "unexpected %s (expected a value)",
                    what_is_here(p, here, sizeof here));
    }
}

tg_status tg__json_parse(const char *text, size_t len, const char *what,
                         const tg__json_opts *opts, tg__json_doc *doc)
{
    memset(doc, 0, sizeof *doc);
    jparser p = {(const unsigned char *)text, len, 0, what ? what : "json", {0}, &doc->arena,
                 NULL, 0, 0, 1 /* the root */};
    if (opts) p.o = *opts;
    if (p.o.max_depth <= 0) p.o.max_depth = JSON_DEFAULT_DEPTH;
    if (p.o.max_depth > JSON_HARD_DEPTH) p.o.max_depth = JSON_HARD_DEPTH;
    if (!p.o.max_values) p.o.max_values = JSON_DEFAULT_VALUES;
    if (p.o.max_values > INT32_MAX / 2) p.o.max_values = INT32_MAX / 2;
    if (!text && len) return tg_set_error(TG_ERR_INVALID, "%s: text is NULL", p.what);
    /* a UTF-8 byte order mark is not JSON (RFC 8259 8.1: must not be added) */
    if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
        return jerr(&p, 0, "a byte order mark is not allowed");
    tg__json root;
    tg_status st = parse_value(&p, &root, 0);
    if (!st) {
        skip_ws(&p);
        if (p.at != p.len) {
            char here[32];
            st = p.s[p.at] == '/' ? jerr(&p, p.at, "comments are not allowed in JSON")
               : jerr(&p, p.at, "unexpected %s after the JSON value",
                      what_is_here(&p, here, sizeof here));
        }
    }
    if (!st) {
        doc->root = tg__arena_alloc(&doc->arena, sizeof *doc->root, _Alignof(tg__json));
        if (!doc->root) st = jerr_at(&p, TG_ERR_NOMEM, 0, "out of memory");
        else *doc->root = root;
    }
    tg__free(p.stack);
    if (st) tg__json_free(doc);
    return st;
}

void tg__json_free(tg__json_doc *doc)
{
    if (!doc) return;
    tg__arena_free(&doc->arena);
    doc->root = NULL;
}

/* ---- access ---- */

const tg__json *tg__json_key(const tg__json *obj, int k)
{
    if (!obj || obj->kind != TG__JSON_OBJECT || k < 0 || k >= obj->n) return NULL;
    return &obj->items[2 * k];
}

const tg__json *tg__json_value(const tg__json *obj, int k)
{
    if (!obj || obj->kind != TG__JSON_OBJECT || k < 0 || k >= obj->n) return NULL;
    return &obj->items[2 * k + 1];
}

const tg__json *tg__json_get(const tg__json *obj, const char *key)
{
    if (!obj || obj->kind != TG__JSON_OBJECT || !key) return NULL;
    for (int k = 0; k < obj->n; k++)
        if (tg__json_streq(&obj->items[2 * k], key)) return &obj->items[2 * k + 1];
    return NULL;
}

const tg__json *tg__json_at(const tg__json *arr, int i)
{
    if (!arr || arr->kind != TG__JSON_ARRAY || i < 0 || i >= arr->n) return NULL;
    return &arr->items[i];
}

bool tg__json_streq(const tg__json *v, const char *lit)
{
    if (!v || v->kind != TG__JSON_STRING || !lit) return false;
    size_t n = strlen(lit);
    return v->len == n && !memcmp(v->str, lit, n);
}

bool tg__json_get_i64(const tg__json *v, int64_t *out)
{
    if (!v || v->kind != TG__JSON_NUMBER || !v->is_int) return false;
    *out = v->i;
    return true;
}

const char *tg__json_kind_name(tg__json_kind k)
{
    switch (k) {
    case TG__JSON_NULL: return "null";
    case TG__JSON_BOOL: return "a bool";
    case TG__JSON_NUMBER: return "a number";
    case TG__JSON_STRING: return "a string";
    case TG__JSON_ARRAY: return "an array";
    case TG__JSON_OBJECT: return "an object";
    default: return "a value";
    }
}
