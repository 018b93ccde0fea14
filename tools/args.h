/*
 * args.h - argument handling shared by the subcommands: one flag at a time,
 * values checked and errors reported as one line naming the argument.
 */
#ifndef TG_ARGS_H
#define TG_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

typedef struct tg_args {
    const char *cmd;     /* "run": for messages */
    int         argc;
    char      **argv;
    int         i;       /* next index */
    const char *flag;    /* the current flag, for messages */
} tg_args;

/* Start after argv[0] (the command name). */
void tg_args_init(tg_args *a, const char *cmd, int argc, char **argv);
/* The next argument, or NULL at the end. "--flag=value" is split: the flag is
 * returned and the value is handed out by the next tg_args_value. */
const char *tg_args_next(tg_args *a);
/* The value of the current flag; false (after printing "missing value for
 * --flag") when there is none. */
bool tg_args_value(tg_args *a, const char **out);
/* Integer / float values in a range; false after printing the error. */
bool tg_args_int(tg_args *a, int64_t lo, int64_t hi, int64_t *out);
bool tg_args_double(tg_args *a, double lo, double hi, double *out);

/* Print "tgraph CMD: message" (one line) to stderr and return 2. */
int tg_cli_fail(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The same for an unknown flag, pointing at the help. */
int tg_cli_unknown(const tg_args *a, const char *arg);

#endif
