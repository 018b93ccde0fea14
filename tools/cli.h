/*
 * cli.h - what every subcommand of the `tgraph` tool provides, and helpers
 * they share. Exit status: 0 success, 1 a check failed (gradcheck), 2 bad
 * input (one line on stderr naming the argument, file or key at fault).
 */
#ifndef TG_CLI_H
#define TG_CLI_H

#include <stdio.h>

#include "args.h"

#define TG_VERSION_STRING "0.1.0"

typedef struct tg_cli_cmd {
    const char *name;
    const char *summary;                   /* one line for `tgraph --help` */
    const char *help;                      /* usage line(s) and prose */
    const tg_opt *opts;                    /* the options (args.h), printed after
                                            * help under "options:", or NULL */
    int n_opts;
    const char *help_more;                 /* after the options: more prose and the
                                            * examples, or NULL */
    int (*run)(int argc, char **argv);     /* argv[0] is the command name */
    /* Prints the help instead of help/help_more when set, given the command's
     * arguments (argv[0] is the command name; `tgraph op NAME --help`). */
    void (*print_help)(FILE *f, int argc, char **argv);
} tg_cli_cmd;

extern const tg_cli_cmd tg_cmd_train;
extern const tg_cli_cmd tg_cmd_eval;
extern const tg_cli_cmd tg_cmd_predict;
extern const tg_cli_cmd tg_cmd_sample;
extern const tg_cli_cmd tg_cmd_demo;
extern const tg_cli_cmd tg_cmd_layers;
extern const tg_cli_cmd tg_cmd_run;
extern const tg_cli_cmd tg_cmd_gradcheck;
extern const tg_cli_cmd tg_cmd_dot;
extern const tg_cli_cmd tg_cmd_export;
extern const tg_cli_cmd tg_cmd_summary;
extern const tg_cli_cmd tg_cmd_compare;
extern const tg_cli_cmd tg_cmd_op;
extern const tg_cli_cmd tg_cmd_bench;

#endif
