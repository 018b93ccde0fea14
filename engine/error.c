/*
 * error.c - status strings and the per-thread last error message.
 */
#include <stdio.h>
#include <stdarg.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[1024];

static const char *const status_names[TG_STATUS_COUNT] = {
    [TG_OK] = "ok",
    [TG_ERR_INVALID] = "invalid argument",
    [TG_ERR_SHAPE] = "shape mismatch",
    [TG_ERR_DTYPE] = "wrong dtype",
    [TG_ERR_LIMIT] = "limit exceeded",
    [TG_ERR_NOMEM] = "out of memory",
    [TG_ERR_IO] = "i/o error",
    [TG_ERR_FORMAT] = "malformed input",
    [TG_ERR_NOT_FOUND] = "not found",
    [TG_ERR_NUMERIC] = "non-finite value",
    [TG_ERR_STATE] = "bad state",
};

const char *tg_status_str(tg_status st)
{
    if ((unsigned)st >= TG_STATUS_COUNT) return "unknown status";
    return status_names[st];
}

const char *tg_last_error(void) { return last_error; }

void tg_clear_error(void) { last_error[0] = '\0'; }

tg_status tg__vset_error(tg_status st, const char *fmt, va_list ap)
{
    /* format aside first, so a message may quote the previous one
     * (tg_set_error(st, "%s: %s", file, tg_last_error())) */
    char msg[sizeof last_error];
    if (fmt) vsnprintf(msg, sizeof msg, fmt, ap);
    else snprintf(msg, sizeof msg, "tg_set_error: fmt is NULL (status %d)", (int)st);
    memcpy(last_error, msg, sizeof msg);
    return st;
}

tg_status tg_set_error(tg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tg__vset_error(st, fmt, ap);
    va_end(ap);
    return st;
}

void tg__fmt(char *buf, size_t len, const char *fmt, ...)
{
    if (!len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* ---- printable text for messages ---- */

size_t tg__utf8_check(const void *vs, size_t len)
{
    const unsigned char *s = vs;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        unsigned lo = 0x80, hi = 0xbf;   /* allowed range of the second byte */
        if (c >= 0xc2 && c <= 0xdf) need = 1;
        else if (c == 0xe0) need = 2, lo = 0xa0;
        else if (c >= 0xe1 && c <= 0xec) need = 2;
        else if (c == 0xed) need = 2, hi = 0x9f;          /* no UTF-16 surrogates */
        else if (c >= 0xee && c <= 0xef) need = 2;
        else if (c == 0xf0) need = 3, lo = 0x90;          /* no overlong forms */
        else if (c >= 0xf1 && c <= 0xf3) need = 3;
        else if (c == 0xf4) need = 3, hi = 0x8f;          /* <= U+10FFFF */
        else return i;
        if (len - i <= need) return i;
        if (s[i + 1] < lo || s[i + 1] > hi) return i;
        for (size_t k = 2; k <= need; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf) return i;
        i += need + 1;
    }
    return len;
}

/* The bytes of s[i..len) kept as they are: a printable ASCII character, or a
 * whole valid UTF-8 sequence that is not a C1 control (U+0080..U+009F, which
 * some terminals take as ESC [); 0: escape s[i]. */
static size_t kept_len(const unsigned char *s, size_t i, size_t len)
{
    if (s[i] >= 0x20 && s[i] < 0x7f) return s[i] != '\\';
    if (s[i] < 0xc2) return 0;
    size_t need = s[i] < 0xe0 ? 2 : s[i] < 0xf0 ? 3 : 4;
    if (need > len - i || tg__utf8_check(s + i, need) != need) return 0;
    return s[i] == 0xc2 && s[i + 1] < 0xa0 ? 0 : need;
}

char *tg__escape(const char *s, size_t len, char *buf, size_t n)
{
    if (!buf || !n) return buf;
    const unsigned char *u = (const unsigned char *)s;
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < len;) {
        char piece[8];
        size_t take = kept_len(u, i, len), pl = take;
        if (take) memcpy(piece, s + i, take);
        else if (u[i] == '\\') memcpy(piece, "\\\\", 2), pl = 2;
        else pl = (size_t)snprintf(piece, sizeof piece, "\\x%02x", u[i]);
        if (k + pl + 4 >= n) {   /* room for "..." and the NUL */
            if (n >= 4) memcpy(buf + (k < n - 4 ? k : n - 4), "...", 4);
            return buf;
        }
        memcpy(buf + k, piece, pl);
        buf[k += pl] = '\0';
        i += take ? take : 1;
    }
    return buf;
}

char *tg_str_escape(const char *s, char *buf, size_t n)
{
    TG__NONNULL(s, NULL);
    TG__NONNULL(buf, NULL);
    return tg__escape(s, strlen(s), buf, n);
}
