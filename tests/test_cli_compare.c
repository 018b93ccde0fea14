/*
 * test_cli_compare.c - `tgraph compare`, and the three-command check of a
 * PyTorch layer: an oracle case run through `tgraph run`, then compared.
 */
#include <stdio.h>

#include "testutil.h"

/* Run the tgraph of this build (beside the test binary) with args; its
 * stderr is printed when the exit status is not the expected one. */
static int tool(const char *const *args)
{
    static char err[8192];
    int rc = tt_run_tool(args, err, sizeof err);
    if (err[0]) cr_log_info("tgraph %s ...: exit %d, stderr: %s", args[0], rc, err);
    return rc;
}

#define CASE "tests/fixtures/oracle/tsa_perturbed"

Test(cli_compare, pytorch_layer_in_three_commands)
{
    const char *y = tt_path("y.npy"), *g = tt_path("g.safetensors");
    cr_assert_eq(tool(TT_ARGS("run", "tsa", "--set", "d_ff=16", "--weights",
                              CASE "/weights.safetensors", "--input", "x=" CASE "/x.npy", "--out",
                              y, "--grad-output", CASE "/dy.npy", "--grads", g)), 0);
    cr_assert_eq(tool(TT_ARGS("compare", y, CASE "/y.npy")), 0);
    cr_assert_eq(tool(TT_ARGS("compare", g, CASE "/grads.safetensors")), 0);
}

Test(cli_compare, mismatches_exit_1)
{
    cr_assert_eq(tool(TT_ARGS("compare", CASE "/x.npy", CASE "/y.npy")), 1, "different values");
    cr_assert_eq(tool(TT_ARGS("compare", CASE "/dy.npy", CASE "/dx.npy", "--atol", "1e9")), 0,
                 "within atol");
    cr_assert_eq(tool(TT_ARGS("compare", CASE "/weights.safetensors", CASE "/grads.safetensors",
                              "--atol", "1e9")), 1, "keys only in one file");
}

Test(cli_compare, bad_input_exits_2)
{
    cr_assert_eq(tool(TT_ARGS("compare", CASE "/x.npy")), 2);
    cr_assert_eq(tool(TT_ARGS("compare", CASE "/x.npy", CASE "/grads.safetensors")), 2);
    cr_assert_eq(tool(TT_ARGS("compare", CASE "/x.npy", tt_path("missing/x.npy"))), 2);
    cr_assert_eq(tool(TT_ARGS("compare", CASE "/x.npy", CASE "/y.npy", "--atol")), 2);
}
