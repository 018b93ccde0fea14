/*
 * test_cli_compare.c - `tgraph compare`, and the three-command check of a
 * PyTorch layer: an oracle case run through `tgraph run`, then compared.
 */
#include <math.h>
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

/* Write [1, v] as F64 .npy at tt_path(name). */
static const char *npy_pair(const char *name, double v)
{
    int64_t shape[1] = {2};
    tg_tensor *t = tg_tensor_new(TG_F64, 1, shape);
    tg_tensor_set(t, 0, 1.0);
    tg_tensor_set(t, 1, v);
    const char *p = tt_path(name);
    cr_assert_eq(tg_npy_save(p, t), TG_OK, "%s", tg_last_error());
    tg_tensor_free(t);
    return p;
}

/* Equal infinities agree; an infinity against anything else, and a NaN against
 * anything (a NaN too, unless --equal-nan), is a mismatch, whatever the
 * tolerance. */
Test(cli_compare, infinities_and_nans)
{
    const char *pinf = npy_pair("pinf.npy", INFINITY), *pinf2 = npy_pair("pinf2.npy", INFINITY);
    const char *ninf = npy_pair("ninf.npy", -INFINITY), *big = npy_pair("big.npy", 1e300);
    const char *nan1 = npy_pair("nan1.npy", NAN), *nan2 = npy_pair("nan2.npy", NAN);
    cr_assert_eq(tool(TT_ARGS("compare", pinf, pinf2)), 0, "inf vs inf agree");
    cr_assert_eq(tool(TT_ARGS("compare", ninf, ninf)), 0, "-inf vs -inf agree");
    cr_assert_eq(tool(TT_ARGS("compare", pinf, ninf)), 1, "inf vs -inf");
    cr_assert_eq(tool(TT_ARGS("compare", ninf, pinf, "--atol", "1e300")), 1, "-inf vs inf");
    cr_assert_eq(tool(TT_ARGS("compare", pinf, big, "--atol", "1e300", "--rtol", "1e300")), 1,
                 "inf vs finite");
    cr_assert_eq(tool(TT_ARGS("compare", big, pinf, "--atol", "1e300")), 1, "finite vs inf");
    cr_assert_eq(tool(TT_ARGS("compare", nan1, nan2)), 1, "NaN vs NaN without --equal-nan");
    cr_assert_eq(tool(TT_ARGS("compare", nan1, nan2, "--equal-nan")), 0, "NaN vs NaN, --equal-nan");
    cr_assert_eq(tool(TT_ARGS("compare", nan1, pinf, "--equal-nan")), 1, "NaN vs inf");
    cr_assert_eq(tool(TT_ARGS("compare", pinf, nan1, "--equal-nan")), 1, "inf vs NaN");
    cr_assert_eq(tool(TT_ARGS("compare", nan1, big, "--equal-nan", "--atol", "1e300")), 1,
                 "NaN vs finite");
}
