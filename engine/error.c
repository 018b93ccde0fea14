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
