/*
 * test_badinput.c - the rows of the bad-input checklist (OPS.md 19) that the
 * op suites did not cover yet, the layer registry's config errors, and the
 * command line on bad input: `tgraph run|gradcheck|dot|layers` with bad
 * files, bad --set values, unknown flags and missing arguments must exit 2
 * with exactly one line on stderr that names the file, key or argument.
 *
 * Not here: the rows the op suites already test (test_<op>.c), the file
 * format rows of OPS.md 16.3 and 17.3 (test_npy.c, test_safetensors_errors.c).
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "layer_case.h"

/* ---- OPS.md 19: shapes not broadcastable in mul/sub/div (add is in
 * test_ops_basic.c), mse_loss ---- */

Test(badinput, elementwise_not_broadcastable)
{
    tg_node *(*const fns[])(tg_graph *, tg_node *, tg_node *) = {tg_mul, tg_sub, tg_div};
    const char *names[] = {"mul", "sub", "div"};
    for (int i = 0; i < 3; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *a = tg_input(g, "a", TG_F32, 3, (int64_t[]){4, 2, 3});
        tg_node *b = tg_input(g, "b", TG_F32, 2, (int64_t[]){5, 3});
        cr_assert_null(fns[i](g, a, b), "%s accepted [4, 2, 3] and [5, 3]", names[i]);
        char want[160];
        snprintf(want, sizeof want, "%s: The size of tensor a (2) must match the size of tensor "
                 "b (5) at non-singleton dimension 1", names[i]);
        tt_assert_graph_error(g, want);
        tg_graph_free(g);
    }
}

Test(badinput, mse_loss_not_broadcastable_and_bad_reduction)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = tg_input(g, "a", TG_F32, 2, (int64_t[]){2, 3});
    tg_node *b = tg_input(g, "b", TG_F32, 2, (int64_t[]){2, 4});
    cr_assert_null(tg_mse_loss(g, a, b, TG_REDUCTION_MEAN));
    tt_assert_graph_error(g, "mse_loss: input shape [2, 3] and target shape [2, 4] differ");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    a = tg_input(g, "a", TG_F32, 1, (int64_t[]){3});
    b = tg_input(g, "b", TG_F32, 1, (int64_t[]){3});
    cr_assert_null(tg_mse_loss(g, a, b, (tg_reduction)7));
    tt_assert_graph_error(g, "mse_loss: 7 is not a valid value for reduction");
    tg_graph_free(g);
}

/* ---- layer config errors: every key type, through the registry ---- */

Test(badinput, layer_config_values)
{
    static const struct {
        const char *set, *msg;
    } rows[] = {
        {"d_model=1.5", "attention_layer: d_model: expected an integer, got a float 1.5"},
        {"B=[2]", "attention_layer: B: expected an integer, got a list [2]"},
        {"d_model=null", "attention_layer: d_model: expected an integer, got null (None)"},
        {"mask_flag=3", "attention_layer: mask_flag: expected true or false, got an integer 3"},
        {"output_attention=maybe", "output_attention: expected true or false, got 'maybe'"},
        {"attention_dropout=abc", "attention_layer: attention_dropout: expected a number, got 'abc'"},
        {"attention_dropout=-0.5", "attention_dropout: -0.5 is out of range [0, 1]"},
        {"L=0", "attention_layer: L: 0 is out of range [1, inf)"},
        {"d_keys=-1", "attention_layer: d_keys: -1 is out of range [1, inf)"},
        {"dmodel=4", "attention_layer: unknown key 'dmodel' (keys: B, L, S, d_model"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        tt_assert_layer_rejects("attention_layer", (const char *[]){rows[i].set}, 1, rows[i].msg);
    /* a value the value language itself refuses, before any layer sees it */
    tg_config *c = tg_config_new();
    cr_assert_eq(tg_config_set(c, "n_heads=99999999999999999999"), TG_ERR_FORMAT);
    tt_assert_last_error("integer out of range (int64)");
    tt_assert_last_error("n_heads");
    cr_assert_eq(tg_config_set(c, "n heads=2"), TG_ERR_FORMAT);
    tt_assert_last_error("n heads");
    tg_config_free(c);
}

/* ---- the command line ---- */

#define ORACLE "tests/fixtures/oracle/attention_layer_self/"

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static char tmpdir[256];

/* A scratch directory with a garbage file, an empty file, and a truncated
 * copy of the oracle weights. */
static void make_bad_files(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s", tt_tmpdir());
    char p[400];
    snprintf(p, sizeof p, "%s/garbage", tmpdir);
    FILE *f = fopen(p, "wb");
    fputs("this is not a tensor file\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/empty", tmpdir);
    fclose(fopen(p, "wb"));
    void *w;
    size_t n;
    cr_assert_eq(tg_read_file(ORACLE "weights.safetensors", 0, &w, &n), TG_OK);
    snprintf(p, sizeof p, "%s/truncated.safetensors", tmpdir);
    f = fopen(p, "wb");
    fwrite(w, 1, n - 100, f);
    fclose(f);
    tg_free(w);
}

static void remove_bad_files(void)
{
    const char *names[] = {"garbage", "empty", "truncated.safetensors", "y.npy"};
    char p[400];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", tmpdir, names[i]);
        remove(p);
    }
    rmdir(tmpdir);
}

static const char *tmp(const char *name)
{
    static char bufs[4][400];
    static int k;
    char *b = bufs[k++ % 4];
    snprintf(b, 400, "%s/%s", tmpdir, name);
    return b;
}

static const char *in_arg(const char *file)
{
    static char bufs[2][400];
    static int k;
    char *b = bufs[k++ % 2];
    snprintf(b, 400, "x=%s", file);
    return b;
}

#define W "--weights", ORACLE "weights.safetensors"
#define X "--input", "x=" ORACLE "x.npy"
#define OUT "--out", tmp("y.npy")

Test(cli, run_sanity_the_good_command_succeeds)
{
    make_bad_files();
    char err[4096];
    cr_assert_eq(tt_run_tool(ARGS("run", "attention_layer", W, X, OUT), err, sizeof err), 0,
                    "stderr: %s", err);
    cr_assert_eq(err[0], '\0', "a successful run printed: %s", err);
    remove_bad_files();
}

Test(cli, run_bad_files)
{
    make_bad_files();
    const char *g = tmp("garbage"), *e = tmp("empty"), *t = tmp("truncated.safetensors");
    tt_expect_cli_error(ARGS("run", "attention_layer", "--weights", g, X, OUT), "--weights", g);
    tt_expect_cli_error(ARGS("run", "attention_layer", "--weights", e, X, OUT), "--weights", e);
    tt_expect_cli_error(ARGS("run", "attention_layer", "--weights", t, X, OUT), t, NULL);
    const char *mw = tt_path("missing/w.safetensors");
    tt_expect_cli_error(ARGS("run", "attention_layer", "--weights", mw, X, OUT), mw, "cannot open");
    /* weights with a tensor the layer does not have */
    tt_expect_cli_error(ARGS("run", "attention_layer", "--weights", ORACLE "grads.safetensors", X,
                             OUT),
                        "input.x", NULL);
    /* inputs */
    tt_expect_cli_error(ARGS("run", "attention_layer", W, "--input", in_arg(g), OUT), "--input", g);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, "--input", in_arg(e), OUT), e, NULL);
    const char *mx = tt_path("missing/x.npy");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, "--input", in_arg(mx), OUT), mx, NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, "--input", "q=" ORACLE "x.npy", OUT),
                        "--input q", "no input of that name");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, "--input", ORACLE "x.npy", OUT), "--input",
                        "NAME=FILE.npy");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, X, OUT), "--input x given twice", NULL);
    /* an input of the wrong shape for the configured layer */
    tt_expect_cli_error(ARGS("run", "attention_layer", "--set", "d_model=8", W, X, OUT), "--input x",
                        "[2, 6, 8]");
    /* outputs */
    const char *my = tt_path("missing/y.npy");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, "--out", my), my, NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--grad-output", g, "--grads",
                             tmp("g.safetensors")),
                        "--grad-output", g);
    remove_bad_files();
}

Test(cli, run_bad_set_values)
{
    make_bad_files();
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set", "d_model=abc"), "d_model",
                        "expected an integer");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set", "nokey=1"), "'nokey'",
                        "unknown key");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set", "n_heads=[2"), "n_heads",
                        "offset");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set", "d_model"), "d_model",
                        "KEY=VALUE");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set", "=3"), "=3", NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set", "n_heads=0"), "n_heads",
                        NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set", "mask_flag=2"), "mask_flag",
                        NULL);
    remove_bad_files();
}

Test(cli, run_flags_and_arguments)
{
    make_bad_files();
    tt_expect_cli_error(ARGS("run"), "LAYER", NULL);
    tt_expect_cli_error(ARGS("run", "nosuch", W, X, OUT), "'nosuch'", NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--bogus"), "'--bogus'", NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "extra"), "'extra'", NULL);
    /* no --weights is fine (PyTorch's init from --seed: tests/test_cli_aliases.c) */
    tt_expect_cli_error(ARGS("run", "attention_layer", X, OUT, "--weights"), "--weights",
                        "missing value");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X), "--out", NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, "--out"), "--out", "missing value");
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--grad-output", ORACLE "dy.npy"),
                        "--grads", NULL);
    tt_expect_cli_error(ARGS("run", "attention_layer", W, X, OUT, "--set"), "--set", NULL);
    remove_bad_files();
}

Test(cli, gradcheck_bad_input)
{
    tt_expect_cli_error(ARGS("gradcheck"), "LAYER", NULL);
    tt_expect_cli_error(ARGS("gradcheck", "nosuch"), "'nosuch'", NULL);
    tt_expect_cli_error(ARGS("gradcheck", "attention_layer", "--seed", "abc"), "--seed", "'abc'");
    tt_expect_cli_error(ARGS("gradcheck", "attention_layer", "--max-per-tensor", "-1"),
                        "--max-per-tensor", "'-1'");
    tt_expect_cli_error(ARGS("gradcheck", "attention_layer", "--set", "foo=1"), "'foo'", NULL);
    tt_expect_cli_error(ARGS("gradcheck", "attention_layer", "--set", "d_model=1e400"), "d_model",
                        NULL);
    tt_expect_cli_error(ARGS("gradcheck", "attention_layer", "--frobnicate"), "'--frobnicate'", NULL);
    tt_expect_cli_error(ARGS("gradcheck", "attention_layer", "--seed"), "--seed", NULL);
}

Test(cli, dot_bad_input)
{
    tt_expect_cli_error(ARGS("dot", "attention_layer"), "-o", NULL);
    tt_expect_cli_error(ARGS("dot", "attention_layer", "-o"), "-o", "missing value");
    const char *dot = tt_path("x.dot");
    tt_expect_cli_error(ARGS("dot", "nosuch", "-o", dot), "'nosuch'", NULL);
    const char *md = tt_path("missing/x.dot");
    tt_expect_cli_error(ARGS("dot", "attention_layer", "-o", md), md, NULL);
    tt_expect_cli_error(ARGS("dot", "attention_layer", "-o", dot, "--depth", "x"), "--depth",
                        "'x'");
    tt_expect_cli_error(ARGS("dot", "attention_layer", "-o", dot, "--rankdir", "XY"),
                        "--rankdir", "'XY'");
    tt_expect_cli_error(ARGS("dot", "attention_layer", "-o", dot, "--set", "L"), "L",
                        "KEY=VALUE");
    tt_expect_cli_error(ARGS("dot", "attention_layer", "-o", dot, "--set", "L=-1"), "L",
                        NULL);
    tt_expect_cli_error(ARGS("dot", "attention_layer", "-o", dot, "--what"), "'--what'", NULL);
}

Test(cli, layers_and_commands)
{
    tt_expect_cli_error(ARGS("layers", "nosuch"), "'nosuch'", NULL);
    tt_expect_cli_error(ARGS("layers", "attention_layer", "more"), "'more'", NULL);
    tt_expect_cli_error(ARGS("layers", "--bogus"), "'--bogus'", NULL);
    tt_expect_cli_error(ARGS("nosuch"), "'nosuch'", NULL);
    tt_expect_cli_error(ARGS("help", "nosuch"), "'nosuch'", NULL);
    tt_expect_cli_error(ARGS("--bogus"), "'--bogus'", NULL);
    const char *none[] = {NULL};
    tt_expect_cli_error(none, "COMMAND", NULL);
}
