/*
 * cli_op_run.h - running the tgraph program for the cli_op suites
 * (test_cli_op.c, test_cli_op_errors.c, test_cli_op_gradcheck.c): one run
 * with its exit status, stdout and stderr; arguments spelt as one
 * '|'-separated spec; a fresh directory per test. Not the general runner:
 * the other CLI suites use tt_run_tool (testutil.h).
 *
 * The tgraph binary is the one next to this test binary (build/ or
 * build-asan/: `make test` builds it first).
 */
#ifndef TG_CLI_OP_RUN_H
#define TG_CLI_OP_RUN_H

#include <stddef.h>

#include "testutil.h"

/* About 74 kB: the tests malloc it. */
typedef struct {
    int  status;        /* exit status; -1 when it did not exit normally (a crash) */
    char out[65536];    /* stdout */
    char err[8192];     /* stderr */
    int  err_lines;
} tt_op_result;

/* A fresh directory for one test's files. */
void tt_op_temp_dir(char *buf, size_t len);
/* Run tgraph with args[0..n) (stdout and stderr into files under dir). */
void tt_op_run(const char *dir, int n, char **args, tt_op_result *r);
/* Split "a|b|c" into args, replacing $F by the fixtures root and $T by dir.
 * The strings live in store. */
int tt_op_split_args(const char *spec, const char *dir, char *store, size_t len, char **args);
/* tt_op_run on the arguments of tt_op_split_args(spec). */
void tt_op_run_spec(const char *spec, const char *dir, tt_op_result *r);
/* The .npy file at path (the caller frees it); fails the test if it cannot load. */
tg_tensor *tt_op_load(const char *path);
/* Remove a test's directory and every file in it. */
void tt_op_remove_dir(const char *dir);

#endif
