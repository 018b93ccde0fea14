/*
 * main.c - the `tgraph` command line: dispatch to subcommands.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "run_dir.h"

static const tg_cli_cmd *const commands[] = {
    &tg_cmd_train,
    &tg_cmd_eval,
    &tg_cmd_predict,
    &tg_cmd_sample,
    &tg_cmd_run,
    &tg_cmd_op,
    &tg_cmd_gradcheck,
    &tg_cmd_dot,
    &tg_cmd_export,
    &tg_cmd_summary,
    &tg_cmd_compare,
    &tg_cmd_bench,
    &tg_cmd_layers,
    &tg_cmd_demo,
};
#define N_COMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    fprintf(f, "usage: tgraph COMMAND [ARGS]...\n"
               "       tgraph help COMMAND | tgraph COMMAND --help\n"
               "       tgraph help --man COMMAND   (its options as roff, for the man page)\n"
               "       tgraph --version\n\n"
               "tgraph is a tensor graph engine with reverse-mode autograd.\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
}

static void help(const tg_cli_cmd *c, int argc, char **argv)
{
    if (c->print_help) {
        c->print_help(stdout, argc, argv);
        return;
    }
    fputs(c->help, stdout);
    if (c->opts) {
        fputs("\noptions:\n", stdout);
        tg_opts_print_help(stdout, c->opts, c->n_opts);
    }
    if (c->help_more) fputs(c->help_more, stdout);
}

static const tg_cli_cmd *find(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

/* `tgraph help --man CMD`: CMD's options as roff, for make's man page (the
 * Makefile puts it at tools/tgraph.1's `.\" @OPTS CMD@` line);
 * `tgraph help --options CMD`: one line per option, its name, aliases and
 * placeholder separated by tabs (for tests/test_cli_options.c). */
static int help_table(const char *what, int argc, char **argv)
{
    const tg_cli_cmd *c = argc > 3 ? find(argv[3]) : NULL;
    if (!c || argc > 4) {
        fprintf(stderr, "tgraph: help %s wants one COMMAND (see tgraph --help)\n", what);
        return 2;
    }
    if (!strcmp(what, "--man")) {
        tg_opts_print_man(stdout, c->opts, c->n_opts);
        return 0;
    }
    for (int i = 0; i < c->n_opts; i++)
        printf("%s\t%s\t%s\n", c->opts[i].name, c->opts[i].alias ? c->opts[i].alias : "",
               c->opts[i].arg ? c->opts[i].arg : "");
    return 0;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "tgraph: missing COMMAND (see tgraph --help)\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("tgraph %s\n", TG_VERSION_STRING);
        return 0;
    }
    if (!strcmp(cmd, "help")) {
        if (argc < 3) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[2], "--man") || !strcmp(argv[2], "--options"))
            return help_table(argv[2], argc, argv);
        const tg_cli_cmd *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "tgraph: unknown command '%s' (see tgraph --help)\n", argv[2]);
            return 2;
        }
        help(c, argc - 2, argv + 2);
        return 0;
    }
    const tg_cli_cmd *c = find(cmd);
    if (!c) {
        fprintf(stderr, "tgraph: unknown command '%s' (see tgraph --help)\n", cmd);
        return 2;
    }
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help(c, argc - 1, argv + 1);
            return 0;
        }
    tg_rd_output_signals_install();   /* a signal leaves no NAME.tmp.PID */
    return c->run(argc - 1, argv + 1);
}

/* coreutils' close_stdout: output that never reached stdout (a full disk, a
 * closed file) makes the exit status 1 with one line on stderr, instead of a
 * silent 0. A command that failed with 2 has printed its one line already;
 * its exit status says enough. */
static int close_stdout(int rc)
{
    errno = 0;
    bool bad = fflush(stdout) != 0;
    int err = errno;
    bad |= ferror(stdout) != 0;
    if (fclose(stdout) != 0 && !bad) {
        bad = true;
        err = errno;
    }
    if (!bad || rc == 2) return rc;
    fprintf(stderr, "tgraph: write error%s%s\n", err ? ": " : "", err ? strerror(err) : "");
    return 1;
}

int main(int argc, char **argv)
{
    return close_stdout(dispatch(argc, argv));
}
