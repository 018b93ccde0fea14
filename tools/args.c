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
    a->opts = NULL;
    a->n_opts = 0;
    a->opt = -1;
    pending = NULL;
}

static bool in_list(const char *list, const char *word, size_t n);

const char *tg_args_next(tg_args *a)
{
    pending = NULL;
    a->opt = -1;
    if (a->i >= a->argc) return NULL;
    const char *arg = a->argv[a->i++];
    const char *eq = strchr(arg, '=');
    if (arg[0] == '-' && arg[1] == '-' && eq && (size_t)(eq - arg) < sizeof flagbuf) {
        memcpy(flagbuf, arg, (size_t)(eq - arg));
        flagbuf[eq - arg] = '\0';
        pending = eq + 1;
        a->flag = flagbuf;
        a->opt = a->opts ? tg_opt_find(a->opts, a->n_opts, flagbuf) : -1;
        if (a->opt < 0 || a->opts[a->opt].arg) return flagbuf;
        pending = NULL;   /* a flag takes no value: --backward=no is refused */
        a->opt = -1;
    }
    a->flag = arg;
    a->opt = a->opts && arg[0] == '-' ? tg_opt_find(a->opts, a->n_opts, arg) : -1;
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

enum { MSG_MAX = 8192, SHOWN_MAX = 4 * MSG_MAX + 4 };   /* paths are up to PATH_MAX */

/* msg[0..len) (len < MSG_MAX) as it may reach a terminal, into out[SHOWN_MAX]:
 * escaped (tg_str_escape) when it holds a control character or a byte
 * outside ASCII, else as it is. Returns out. */
static const char *shown(const char *msg, size_t len, char *out)
{
    char one[MSG_MAX];
    bool raw = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)msg[i];
        raw |= c < 0x20 || c >= 0x7f;
    }
    snprintf(one, sizeof one, "%.*s", (int)len, msg);
    if (!raw) return memcpy(out, one, strlen(one) + 1);
    return tg_str_escape(one, out, SHOWN_MAX);
}

int tg_cli_fail(const char *cmd, const char *fmt, ...)
{
    char msg[MSG_MAX], out[SHOWN_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)   /* one line, whatever the message held */
        if (*p == '\n') *p = ' ';
    /* no escape sequence from a file's text reaches the terminal */
    fprintf(stderr, "tgraph %s: %s\n", cmd, shown(msg, strlen(msg), out));
    return 2;
}

void tg_cli_print(FILE *f, const char *fmt, ...)
{
    char msg[MSG_MAX], out[SHOWN_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (const char *p = msg; *p;) {
        size_t n = strcspn(p, "\n");
        fputs(shown(p, n, out), f);
        if (!p[n]) break;
        fputc('\n', f);
        p += n + 1;
    }
}

int tg_cli_unknown(const tg_args *a, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (eq && a->opts && arg[0] == '-') {
        for (int i = 0; i < a->n_opts; i++) {
            const tg_opt *o = &a->opts[i];
            size_t n = (size_t)(eq - arg);
            if (!o->arg && ((strlen(o->name) == n && !memcmp(o->name, arg, n)) ||
                            in_list(o->alias, arg, n)))
                return tg_cli_fail(a->cmd, "%s takes no value, got '%s' (see tgraph %s --help)",
                                   o->name, arg, a->cmd);
        }
    }
    if (arg[0] == '-')
        return tg_cli_fail(a->cmd, "unknown option '%s' (see tgraph %s --help)", arg, a->cmd);
    return tg_cli_fail(a->cmd, "unexpected argument '%s' (see tgraph %s --help)", arg, a->cmd);
}

/* ---- option tables ---- */

/* Whether word (length n) is one of the space-separated names in list. */
static bool in_list(const char *list, const char *word, size_t n)
{
    for (const char *p = list; p && *p;) {
        while (*p == ' ') p++;
        size_t k = strcspn(p, " ");
        if (k && k == n && !memcmp(p, word, n)) return true;
        p += k;
    }
    return false;
}

int tg_opt_find(const tg_opt *opts, int n, const char *arg)
{
    size_t len = strlen(arg);
    for (int i = 0; i < n; i++)
        if (!strcmp(opts[i].name, arg) || in_list(opts[i].alias, arg, len)) return i;
    return -1;
}

void tg_args_table(tg_args *a, const tg_opt *opts, int n)
{
    a->opts = opts;
    a->n_opts = n;
    a->opt = -1;
}

#define HELP_COL 19
#define HELP_WIDTH 80

/* The option's head: "--name ARG, --alias, -a"; its length. */
static int print_head(FILE *f, const tg_opt *o)
{
    int w = fprintf(f, "  %s", o->name);
    for (const char *p = o->alias; p && *p;) {
        while (*p == ' ') p++;
        int k = (int)strcspn(p, " ");
        if (k) w += fprintf(f, ", %.*s", k, p);
        p += k;
    }
    return w + (o->arg ? fprintf(f, " %s", o->arg) : 0);
}

void tg_opts_print_help(FILE *f, const tg_opt *opts, int n)
{
    for (int i = 0; i < n; i++) {
        int col = print_head(f, &opts[i]);
        int pad = col + 2 <= HELP_COL ? HELP_COL - col : 2;
        fprintf(f, "%*s", pad, "");
        col += pad;
        bool first = true;   /* the first word of a line */
        for (const char *p = opts[i].doc; *p;) {
            if (*p == '\n' || *p == ' ') {
                if (*p++ == '\n') {
                    fprintf(f, "\n%*s", HELP_COL, "");
                    col = HELP_COL, first = true;
                }
                continue;
            }
            int k = (int)strcspn(p, " \n");
            if (!first && col + 1 + k > HELP_WIDTH) {
                fprintf(f, "\n%*s", HELP_COL, "");
                col = HELP_COL, first = true;
            }
            col += fprintf(f, "%s%.*s", first ? "" : " ", k, p);
            first = false;
            p += k;
        }
        fputc('\n', f);
    }
}

/* Text for roff: '-' and '\' escaped, a line never starting with '.' or '\''. */
static void roff_text(FILE *f, const char *s, size_t n)
{
    bool bol = true;
    for (size_t i = 0; i < n && s[i]; i++) {
        char c = s[i];
        if (bol && (c == '.' || c == '\'')) fputs("\\&", f);
        bol = false;
        if (c == '-') fputs("\\-", f);
        else if (c == '\\') fputs("\\e", f);
        else if (c == '\n') fputs("\n.br\n", f), bol = true;
        else fputc(c, f);
    }
}

void tg_opts_print_man(FILE *f, const tg_opt *opts, int n)
{
    fputs(".RS\n", f);
    for (int i = 0; i < n; i++) {
        const tg_opt *o = &opts[i];
        fputs(".TP\n\\fB", f);
        roff_text(f, o->name, strlen(o->name));
        fputs("\\fR", f);
        for (const char *p = o->alias; p && *p;) {
            while (*p == ' ') p++;
            size_t k = strcspn(p, " ");
            if (k) {
                fputs(", \\fB", f);
                roff_text(f, p, k);
                fputs("\\fR", f);
            }
            p += k;
        }
        if (o->arg) {
            fputs(" \\fI", f);
            roff_text(f, o->arg, strlen(o->arg));
            fputs("\\fR", f);
        }
        fputc('\n', f);
        roff_text(f, o->doc, strlen(o->doc));
        fputc('\n', f);
    }
    fputs(".RE\n", f);
}
