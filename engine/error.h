/*
 * error.h - status codes and the thread's last error message.
 *
 * Functions that can fail at run time (loaders, forward/backward, parsers)
 * return a tg_status and leave a message naming the file, key, position or
 * shape at fault in tg_last_error(). Graph builders instead record the message
 * on the graph (see graph.h: the sticky error) and return NULL.
 * Nothing in tgraph reachable from user input calls abort(), assert() or exit().
 *
 * NULL arguments: every public function checks its pointer arguments. A
 * NULL where an object is needed records "tg_fn: arg is NULL" and returns
 * the function's error result: TG_ERR_INVALID (status functions), NULL
 * (pointers), NaN (doubles), 0 / -1 / false (counts, ids, flags); a graph
 * builder records it as the graph's sticky error (a NULL graph: NULL and the
 * message here); a void function does nothing; free functions take NULL as
 * free() does. Nothing is written through a NULL out-pointer. Arguments
 * documented as optional (a bias, a mask, opts) may be NULL.
 */
#ifndef TG_ERROR_H
#define TG_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_status {
    TG_OK = 0,
    TG_ERR_INVALID,   /* a bad argument or attribute value */
    TG_ERR_SHAPE,     /* shapes do not fit */
    TG_ERR_DTYPE,     /* wrong element type */
    TG_ERR_LIMIT,     /* a size, rank or count over a limit, or an overflow */
    TG_ERR_NOMEM,     /* an allocation failed */
    TG_ERR_IO,        /* a file could not be opened, read or written */
    TG_ERR_FORMAT,    /* a malformed file or string */
    TG_ERR_NOT_FOUND, /* a name that does not exist */
    TG_ERR_NUMERIC,   /* NaN or Inf where the finite check forbids it */
    TG_ERR_STATE,     /* a call out of order (e.g. a graph already in error) */
    TG_STATUS_COUNT
} tg_status;

/* A short, constant description of a status ("shape mismatch"). */
const char *tg_status_str(tg_status st);

/* The message of the most recent failure in this thread, or "" if none.
 * The string is owned by tgraph and valid until the next failing call. */
const char *tg_last_error(void);

/* Record a message as this thread's last error and return st (printf-style).
 * The arguments may include tg_last_error() itself, to add context to a
 * message. Public so that code built on tgraph (custom ops, loaders) reports
 * the same way. */
tg_status tg_set_error(tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* s made printable for a message, into buf[n] (NUL-terminated, cut with
 * "..." when it does not fit); returns buf. Control characters (bytes below
 * 0x20 such as ESC and CR, DEL, U+0080..U+009F), bytes that are not valid
 * UTF-8 and backslashes are written \xNN (a backslash \\); other text, UTF-8
 * included, is kept. For names and values read from files (tensor names,
 * checkpoint metadata): a terminal never sees an escape sequence from them. */
char *tg_str_escape(const char *s, char *buf, size_t n);

/* Forget this thread's last error. */
void tg_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
