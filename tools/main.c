/*
 * main.c - the `tgraph` command line: dispatch to subcommands.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const tg_cli_cmd *const commands[] = {
    &tg_cmd_train,
    &tg_cmd_eval,
    &tg_cmd_predict,
    &tg_cmd_run,
    &tg_cmd_op,
    &tg_cmd_gradcheck,
    &tg_cmd_dot,
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
    if (c->help_more) fputs(c->help_more, stdout);
}

static const tg_cli_cmd *find(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
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
