/*
 * args.h - argument handling shared by the subcommands: one flag at a time,
 * values checked and errors reported as one line naming the argument.
 */
#ifndef TG_ARGS_H
#define TG_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

/* One option of a command: the row of its table that --help, the man page
 * (tgraph help --man CMD) and the parser all read, so they cannot drift. */
typedef struct tg_opt {
    const char *name;    /* "--out-dir" */
    const char *alias;   /* other spellings, space-separated ("--out -o"), or NULL */
    const char *arg;     /* the value's placeholder ("DIR"), or NULL for a flag */
    const char *doc;     /* one or more sentences; wrapped when printed; '\n' breaks */
} tg_opt;

#define TG_OPTS_N(table) ((int)(sizeof(table) / sizeof *(table)))

typedef struct tg_args {
    const char *cmd;     /* "run": for messages */
    int         argc;
    char      **argv;
    int         i;       /* next index */
    const char *flag;    /* the current flag, for messages */
    const tg_opt *opts;  /* the command's table (tg_args_table), or NULL */
    int         n_opts;
    int         opt;     /* the row the current argument matched, or -1 */
} tg_args;

/* Start after argv[0] (the command name). */
void tg_args_init(tg_args *a, const char *cmd, int argc, char **argv);
/* Match every argument against the command's option table from now on: after
 * tg_args_next, a->opt is the index of the row whose name or alias the argument
 * is (so a parser keys on rows, aliases resolved), or -1. */
void tg_args_table(tg_args *a, const tg_opt *opts, int n);
/* The row of opts that arg names (its name or one of its aliases), or -1. */
int tg_opt_find(const tg_opt *opts, int n, const char *arg);
/* The options as --help shows them: "  --name ARG, --alias" then the doc from
 * column 19, wrapped before column 80. */
void tg_opts_print_help(FILE *f, const tg_opt *opts, int n);
/* The same as roff (.TP paragraphs inside .RS/.RE) for the man page. */
void tg_opts_print_man(FILE *f, const tg_opt *opts, int n);

/* The next argument, or NULL at the end. "--flag=value" is split: the flag is
 * returned and the value is handed out by the next tg_args_value. */
const char *tg_args_next(tg_args *a);
/* The value of the current flag; false (after printing "missing value for
 * --flag") when there is none. */
bool tg_args_value(tg_args *a, const char **out);
/* Integer / float values in a range; false after printing the error. */
bool tg_args_int(tg_args *a, int64_t lo, int64_t hi, int64_t *out);
bool tg_args_double(tg_args *a, double lo, double hi, double *out);

/* Print "tgraph CMD: message" (one line) to stderr and return 2. Text from
 * files in the message (checkpoint metadata, CSV cells) reaches the terminal
 * escaped: control characters and bytes that are not UTF-8 as \xNN
 * (tg_str_escape). */
int tg_cli_fail(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* fprintf for report lines that show such text: each line escaped the same
 * way, the newlines kept. */
void tg_cli_print(FILE *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The same for an unknown flag, pointing at the help. */
int tg_cli_unknown(const tg_args *a, const char *arg);

#endif
