/*
 * test_cli_compare.c - `tgraph compare`, and the three-command check of a
 * PyTorch layer: an oracle case run through `tgraph run`, then compared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "testutil.h"

static int tool(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "build/tgraph %s >/dev/null 2>/tmp/tgraph-compare-err.txt", args);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define CASE "tests/fixtures/oracle/tsa_perturbed"

Test(cli_compare, pytorch_layer_in_three_commands)
{
    cr_assert_eq(tool("run tsa --set d_ff=16 --weights " CASE "/weights.safetensors --input x=" CASE
                      "/x.npy --out /tmp/tgraph-cmp-y.npy --grad-output " CASE
                      "/dy.npy --grads /tmp/tgraph-cmp-g.safetensors"), 0);
    cr_assert_eq(tool("compare /tmp/tgraph-cmp-y.npy " CASE "/y.npy"), 0);
    cr_assert_eq(tool("compare /tmp/tgraph-cmp-g.safetensors " CASE "/grads.safetensors"), 0);
}

Test(cli_compare, mismatches_exit_1)
{
    cr_assert_eq(tool("compare " CASE "/x.npy " CASE "/y.npy"), 1, "different values");
    cr_assert_eq(tool("compare " CASE "/dy.npy " CASE "/dx.npy --atol 1e9"), 0, "within atol");
    cr_assert_eq(tool("compare " CASE "/weights.safetensors " CASE "/grads.safetensors "
                      "--atol 1e9"), 1, "keys only in one file");
}

Test(cli_compare, bad_input_exits_2)
{
    cr_assert_eq(tool("compare " CASE "/x.npy"), 2);
    cr_assert_eq(tool("compare " CASE "/x.npy " CASE "/grads.safetensors"), 2);
    cr_assert_eq(tool("compare " CASE "/x.npy /nonexistent.npy"), 2);
    cr_assert_eq(tool("compare " CASE "/x.npy " CASE "/y.npy --atol"), 2);
}
