/*
 * args.c - small argument helpers for the tgraph subcommands (see args.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

static const char *pending;   /* the value part of "--flag=value" */
static char flagbuf[128];

void tg_args_init(tg_args *a, const char *cmd, int argc, char **argv)
{
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    a->i = 1;
    a->flag = "";
    pending = NULL;
}

const char *tg_args_next(tg_args *a)
{
    pending = NULL;
    if (a->i >= a->argc) return NULL;
    const char *arg = a->argv[a->i++];
    const char *eq = strchr(arg, '=');
    if (arg[0] == '-' && arg[1] == '-' && eq && (size_t)(eq - arg) < sizeof flagbuf) {
        memcpy(flagbuf, arg, (size_t)(eq - arg));
        flagbuf[eq - arg] = '\0';
        pending = eq + 1;
        a->flag = flagbuf;
        return flagbuf;
    }
    a->flag = arg;
    return arg;
}

bool tg_args_value(tg_args *a, const char **out)
{
    if (pending) {
        *out = pending;
        pending = NULL;
        return true;
    }
    if (a->i >= a->argc) {
        tg_cli_fail(a->cmd, "missing value for %s (see tgraph %s --help)", a->flag, a->cmd);
        return false;
    }
    *out = a->argv[a->i++];
    return true;
}

bool tg_args_int(tg_args *a, int64_t lo, int64_t hi, int64_t *out)
{
    const char *s;
    if (!tg_args_value(a, &s)) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        tg_cli_fail(a->cmd, "%s wants an integer in [%lld, %lld], got '%s'", a->flag,
                    (long long)lo, (long long)hi, s);
        return false;
    }
    *out = v;
    return true;
}

bool tg_args_double(tg_args *a, double lo, double hi, double *out)
{
    const char *s;
    if (!tg_args_value(a, &s)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || v < lo || v > hi) {
        tg_cli_fail(a->cmd, "%s wants a number in [%g, %g], got '%s'", a->flag, lo, hi, s);
        return false;
    }
    *out = v;
    return true;
}

int tg_cli_fail(const char *cmd, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)   /* one line, whatever the message held */
        if (*p == '\n') *p = ' ';
    fprintf(stderr, "tgraph %s: %s\n", cmd, msg);
    return 2;
}

int tg_cli_unknown(const tg_args *a, const char *arg)
{
    if (arg[0] == '-')
        return tg_cli_fail(a->cmd, "unknown option '%s' (see tgraph %s --help)", arg, a->cmd);
    return tg_cli_fail(a->cmd, "unexpected argument '%s' (see tgraph %s --help)", arg, a->cmd);
}
