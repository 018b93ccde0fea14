/*
 * test_cli_aliases.c - one command line (issue 19): the spellings op and run
 * share (--set KEY=VALUE and bare KEY=VALUE, --input/--in, --grads/--grad)
 * give byte-identical files; `tgraph run` without --weights initialises the
 * parameters from --seed (deterministic, seed-dependent, one line on stderr)
 * and --save-weights round-trips them; `tgraph dot --svg` needs no -o, -o -
 * prints the .dot, --depth counts from the layer's own modules and no box of
 * "0 ops" is drawn; bad input exits 2 naming the argument.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define FIX TT_FIXTURES
#define LIN FIX "/basic/linear/"
#define ATT FIX "/oracle/attention_layer_self/"

static void setup(void) { tt_deadline(60); }

TestSuite(cli_aliases, .init = setup);

/* The whole file, NUL-terminated (the .dot and .svg checks use strstr), in a
 * new buffer (free with free); its length in *n. */
static char *slurp(const char *path, size_t *n) { return tt_slurp(path, n); }

static bool same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    bool same = na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

static void run_ok(const char *const *args)
{
    char err[4096];
    int rc = tt_run_tool(args, err, sizeof err);
    cr_assert_eq(rc, 0, "tgraph %s %s: exit %d: %s", args[0], args[1], rc, err);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* ---- op ---- */

Test(cli_aliases, op_set_and_bare_attribute_agree)
{
    char a[80], b[80];
    snprintf(a, sizeof a, "%s", tt_path("set.npy"));
    snprintf(b, sizeof b, "%s", tt_path("bare.npy"));
    run_ok(TT_ARGS("op", "softmax", "--set", "dim=0", "--in", LIN "in0.npy", "--out", a));
    run_ok(TT_ARGS("op", "softmax", "dim=0", "--in", LIN "in0.npy", "--out", b));
    cr_assert(same_bytes(a, b), "--set dim=0 and dim=0 differ");
    /* and the attribute is read: dim=1 gives another result */
    run_ok(TT_ARGS("op", "softmax", "--set=dim=1", "--in", LIN "in0.npy", "--out", b));
    cr_assert(!same_bytes(a, b), "--set=dim=1 was ignored");
    tt_expect_cli_error(TT_ARGS("op", "softmax", "--set", "dim", "--in", LIN "in0.npy", "--out", a),
                        "dim", NULL);
}

Test(cli_aliases, op_input_and_grads_aliases_agree)
{
    char y1[80], y2[80], g1[3][80], g2[3][80];
    snprintf(y1, sizeof y1, "%s", tt_path("y1.npy"));
    snprintf(y2, sizeof y2, "%s", tt_path("y2.npy"));
    for (int i = 0; i < 3; i++) {
        char n[32];
        snprintf(n, sizeof n, "g1_%d.npy", i);
        snprintf(g1[i], sizeof g1[i], "%s", tt_path(n));
        snprintf(n, sizeof n, "g2_%d.npy", i);
        snprintf(g2[i], sizeof g2[i], "%s", tt_path(n));
    }
    run_ok(TT_ARGS("op", "linear", "--in", LIN "in0.npy", "--in", LIN "in1.npy", "--in",
                   LIN "in2.npy", "--out", y1, "--grad-output", LIN "dout0.npy", "--grad", g1[0],
                   "--grad", g1[1], "--grad", g1[2]));
    /* --input FILE and --input NAME=FILE (the op's own input names) */
    run_ok(TT_ARGS("op", "linear", "--input", "input=" LIN "in0.npy", "--input",
                   "weight=" LIN "in1.npy", "--input", LIN "in2.npy", "--out", y2,
                   "--grad-output", LIN "dout0.npy", "--grads", g2[0], "--grads", g2[1],
                   "--grads", g2[2]));
    cr_assert(same_bytes(y1, y2), "outputs differ");
    for (int i = 0; i < 3; i++) cr_assert(same_bytes(g1[i], g2[i]), "gradient %d differs", i);
    /* and right, not just equal: against the PyTorch fixture */
    tg_tensor *got = NULL, *want = NULL;
    cr_assert_eq(tg_npy_load(g2[1], &got), TG_OK);
    cr_assert_eq(tg_npy_load(LIN "grad1.npy", &want), TG_OK);
    tt_assert_close(got, want, 1e-6, 1e-5, "linear weight grad");
    tg_tensor_free(got);
    tg_tensor_free(want);
    /* a name out of PyTorch's order is refused, naming it */
    tt_expect_cli_error(TT_ARGS("op", "linear", "--input", "weight=" LIN "in1.npy", "--input",
                                LIN "in0.npy", "--out", y2),
                        "--input weight=", "input #1 is input");
}

Test(cli_aliases, gradcheck_takes_input)
{
    char out[8192], err[2048];
    int rc = tt_run_tool_out(TT_ARGS("gradcheck", "relu", "--input", LIN "in0.npy"), out,
                             sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_not_null(strstr(out, "all pass"), "%s", out);
}

/* ---- run ---- */

Test(cli_aliases, run_input_and_grads_aliases_agree)
{
    char y1[80], y2[80], g1[80], g2[80];
    snprintf(y1, sizeof y1, "%s", tt_path("y1.npy"));
    snprintf(y2, sizeof y2, "%s", tt_path("y2.npy"));
    snprintf(g1, sizeof g1, "%s", tt_path("g1.safetensors"));
    snprintf(g2, sizeof g2, "%s", tt_path("g2.safetensors"));
    run_ok(TT_ARGS("run", "attention_layer", "--weights", ATT "weights.safetensors", "--input",
                   "x=" ATT "x.npy", "--out", y1, "--grad-output", ATT "dy.npy", "--grads", g1));
    run_ok(TT_ARGS("run", "attention_layer", "--weights", ATT "weights.safetensors", "--in",
                   "x=" ATT "x.npy", "-o", y2, "--grad-output", ATT "dy.npy", "--grad", g2));
    cr_assert(same_bytes(y1, y2), "outputs differ");
    cr_assert(same_bytes(g1, g2), "gradients differ");
    tg_tensor *got = NULL, *want = NULL;
    cr_assert_eq(tg_npy_load(y1, &got), TG_OK);
    cr_assert_eq(tg_npy_load(ATT "y.npy", &want), TG_OK);
    tt_assert_close(got, want, 1e-5, 1e-4, "attention_layer y");
    tg_tensor_free(got);
    tg_tensor_free(want);
}

/* `tgraph run attention_layer` without --weights; the stderr line in err. */
static void run_seeded(const char *seed, const char *out, const char *save, char *err, size_t n)
{
    const char *const *args =
        save ? TT_ARGS("run", "attention_layer", "--seed", seed, "--input", "x=" ATT "x.npy",
                       "--out", out, "--save-weights", save)
             : TT_ARGS("run", "attention_layer", "--seed", seed, "--input", "x=" ATT "x.npy",
                       "--out", out);
    int rc = tt_run_tool(args, err, n);
    cr_assert_eq(rc, 0, "run --seed %s: exit %d: %s", seed, rc, err);
}

Test(cli_aliases, run_without_weights)
{
    char a[80], b[80], c[80], d[80], w[80], err[2048];
    snprintf(a, sizeof a, "%s", tt_path("a.npy"));
    snprintf(b, sizeof b, "%s", tt_path("b.npy"));
    snprintf(c, sizeof c, "%s", tt_path("c.npy"));
    snprintf(d, sizeof d, "%s", tt_path("d.npy"));
    snprintf(w, sizeof w, "%s", tt_path("w.safetensors"));
    run_seeded("3", a, w, err, sizeof err);
    /* one line on stderr saying what happened */
    size_t len = strlen(err);
    cr_assert(len > 0 && err[len - 1] == '\n' && !memchr(err, '\n', len - 1), "'%s'", err);
    cr_assert_not_null(strstr(err, "no --weights"), "%s", err);
    cr_assert_not_null(strstr(err, "initialised like PyTorch"), "%s", err);
    cr_assert_not_null(strstr(err, "--seed 3"), "%s", err);
    run_seeded("3", b, NULL, err, sizeof err);
    cr_assert(same_bytes(a, b), "the same seed gave different outputs");
    run_seeded("4", c, NULL, err, sizeof err);
    cr_assert(!same_bytes(a, c), "seeds 3 and 4 gave the same output");
    /* the saved weights: the layer's state_dict names and shapes, loadable back */
    tg_st_file *got = NULL, *ref = NULL;
    cr_assert_eq(tg_st_load(w, &got), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_load(ATT "weights.safetensors", &ref), TG_OK);
    cr_assert_eq(tg_st_count(got), tg_st_count(ref));
    for (int i = 0; i < tg_st_count(ref); i++) {
        const tg_tensor *t = tg_st_find(got, tg_st_name(ref, i));
        cr_assert_not_null(t, "%s not saved", tg_st_name(ref, i));
        cr_assert(tg_tensor_same_shape(t, tg_st_tensor(ref, i)), "%s", tg_st_name(ref, i));
    }
    tg_st_free(got);
    tg_st_free(ref);
    run_ok(TT_ARGS("run", "attention_layer", "--weights", w, "--input", "x=" ATT "x.npy", "--out",
                   d));
    cr_assert(same_bytes(a, d), "--save-weights then --weights gave another output");
}

Test(cli_aliases, run_layer_without_parameters)
{
    char y[80], err[2048];
    snprintf(y, sizeof y, "%s", tt_path("y.npy"));
    const char *fa = FIX "/oracle/full_attention/";
    char q[256], k[256], v[256];
    snprintf(q, sizeof q, "q=%sq.npy", fa);
    snprintf(k, sizeof k, "k=%sk.npy", fa);
    snprintf(v, sizeof v, "v=%sv.npy", fa);
    int rc = tt_run_tool(TT_ARGS("run", "full_attention", "--input", q, "--input", k, "--input",
                                 v, "--out", y),
                         err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(err, "", "nothing to initialise, nothing to say");
    tg_tensor *got = NULL, *want = NULL;
    cr_assert_eq(tg_npy_load(y, &got), TG_OK);
    char ref[256];
    snprintf(ref, sizeof ref, "%sy.npy", fa);
    cr_assert_eq(tg_npy_load(ref, &want), TG_OK);
    tt_assert_close(got, want, 1e-5, 1e-4, "full_attention y");
    tg_tensor_free(got);
    tg_tensor_free(want);
}

Test(cli_aliases, bad_input_names_the_argument)
{
    char y[80], x[80];
    snprintf(y, sizeof y, "%s", tt_path("y.npy"));
    snprintf(x, sizeof x, "%s", tt_path("x.npy"));
    size_t n;
    char *data = slurp(ATT "x.npy", &n);
    FILE *f = fopen(x, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
    free(data);
    char xin[100];
    snprintf(xin, sizeof xin, "x=%s", x);
    tt_expect_cli_error(TT_ARGS("run", "attention_layer", "--input", xin, "--out", y,
                                "--save-weights", x),
                        "--save-weights", "is the same file as input");
    cr_assert(same_bytes(x, ATT "x.npy"), "the input was overwritten");
    cr_assert_neq(access(y, F_OK), 0, "an output was written");
    tt_expect_cli_error(TT_ARGS("run", "attention_layer", "--input", xin, "--out", y, "--bogus"),
                        "'--bogus'", NULL);
    tt_expect_cli_error(TT_ARGS("run", "attention_layer", "--input", xin, "--out", y, "--seed",
                                "-1"),
                        "--seed", NULL);
    tt_expect_cli_error(TT_ARGS("op", "relu", "--in", x, "--out", y, "--bogus"), "'--bogus'",
                        NULL);
    tt_expect_cli_error(TT_ARGS("dot", "tsa", "--svg", y, "--bogus"), "'--bogus'", NULL);
    tt_expect_cli_error(TT_ARGS("dot", "tsa"), "missing -o", "--svg");
}

/* ---- dot ---- */

static bool have_graphviz(void)
{
    return system("command -v dot >/dev/null 2>&1") == 0;
}

Test(cli_aliases, dot_svg_alone)
{
    if (!have_graphviz()) cr_skip_test("Graphviz is not installed");
    char svg[80];
    snprintf(svg, sizeof svg, "%s", tt_path("g.svg"));
    run_ok(TT_ARGS("dot", "tsa", "--svg", svg));
    size_t n;
    char *t = slurp(svg, &n);
    cr_assert(n > 100 && !memcmp(t, "<?xml", 5), "%.100s", t);
    cr_assert_not_null(strstr(t, "<svg"));
    cr_assert(n >= 7 && !memcmp(t + n - 7, "</svg>\n", 7), "%s", t + (n > 40 ? n - 40 : 0));
    cr_assert_eq(count(t, "<g "), count(t, "</g>"), "unbalanced groups");
    cr_assert_not_null(strstr(t, "time_attention"), "the diagram is of tsa");
    free(t);
    /* nothing else in the directory: no .dot, no temporary file */
    DIR *dd = opendir(tt_tmpdir());
    cr_assert_not_null(dd);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(dd)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            files++;
            cr_assert_str_eq(e->d_name, "g.svg", "unexpected file %s", e->d_name);
        }
    closedir(dd);
    cr_assert_eq(files, 1);
}

Test(cli_aliases, dot_to_stdout)
{
    static char out[1 << 16];
    char err[2048];
    int rc = tt_run_tool_out(TT_ARGS("dot", "attention_layer", "-o", "-"), out, sizeof out, err,
                             sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    size_t n = strlen(out);
    cr_assert(!strncmp(out, "digraph tgraph {", 16), "%.100s", out);
    cr_assert(n > 2 && !strcmp(out + n - 2, "}\n"), "the .dot text is cut short");
    cr_assert_not_null(strstr(out, "query_projection"));
    /* -o - with --svg: the .dot on stdout and the rendering in its file */
    if (!have_graphviz()) return;
    char svg[80];
    snprintf(svg, sizeof svg, "%s", tt_path("g.svg"));
    static char out2[1 << 16];
    rc = tt_run_tool_out(TT_ARGS("dot", "attention_layer", "--out", "-", "--svg", svg), out2,
                         sizeof out2, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(out2, out, "-o - printed another graph beside --svg");
    size_t sn;
    char *t = slurp(svg, &sn);
    cr_assert(sn > 7 && !memcmp(t + sn - 7, "</svg>\n", 7));
    free(t);
}

/* The .dot text of `tgraph dot LAYER --depth D` (free with free). */
static char *dot_of(const char *layer, const char *depth)
{
    char path[80];
    snprintf(path, sizeof path, "%s", tt_path("g.dot"));
    run_ok(TT_ARGS("dot", layer, "--depth", depth, "-o", path));
    size_t n;
    return slurp(path, &n);
}

Test(cli_aliases, dot_depth_counts_from_the_layer_modules)
{
    char *t = dot_of("tsa", "1");
    /* tsa's own modules as boxes inside the layer's frame, not one box */
    cr_assert_eq(count(t, "subgraph cluster_"), 1, "%s", t);
    cr_assert_not_null(strstr(t, "label=\"tsa\""));
    const char *mods[] = {"time_attention\\n(", "MLP1\\n(", "norm1\\n(", "router\\n(",
                          "dim_sender\\n(", "dim_receiver\\n("};
    for (size_t i = 0; i < sizeof mods / sizeof *mods; i++)
        cr_assert_not_null(strstr(t, mods[i]), "no box %s", mods[i]);
    cr_assert_geq(count(t, "shape=box3d"), 6);
    free(t);
    t = dot_of("attention_layer", "1");
    cr_assert_not_null(strstr(t, "label=\"inner_attention\\n(1 op)\""), "%s", t);
    cr_assert_eq(count(t, "shape=box3d"), 5);
    free(t);
}

Test(cli_aliases, dot_draws_no_empty_box)
{
    const char *depths[] = {"0", "1", "2", "3"};
    for (int i = 0; i < 4; i++) {
        char *t = dot_of("crossformer", depths[i]);
        cr_assert_null(strstr(t, "(0 ops)"), "an empty box at depth %s", depths[i]);
        cr_assert_null(strstr(t, "position_embedding\\n("), "depth %s", depths[i]);
        /* position_embedding's constant is still drawn (at depth 1 it is
         * folded into enc_value_embedding's box) */
        if (i != 1)
            cr_assert_not_null(strstr(t, "const pe"), "depth %s lost the pe constant", depths[i]);
        /* every edge's ends are nodes that were declared (an edge line is
         * "  SRC -> DST [label=..."; " -> " also occurs inside labels) */
        for (const char *line = t; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
            char src[32], dst[32], decl[48];
            if (sscanf(line, " %31[a-z0-9] -> %31[a-z0-9] [", src, dst) != 2) continue;
            snprintf(decl, sizeof decl, " %s [label=", src);
            cr_assert_not_null(strstr(t, decl), "edge from undeclared %s (depth %s)", src,
                               depths[i]);
            snprintf(decl, sizeof decl, " %s [label=", dst);
            cr_assert_not_null(strstr(t, decl), "edge to undeclared %s (depth %s)", dst,
                               depths[i]);
        }
        free(t);
    }
}

/* A flag takes no value: --backward=no used to draw the backward (the value
 * was dropped), which is the opposite of what it says. */
Test(cli_aliases, a_flag_with_a_value_is_refused)
{
    char err[1024];
    int rc = tt_run_tool(TT_ARGS("dot", "tsa", "--backward=no", "-o", "-"), err, sizeof err);
    cr_assert_eq(rc, 2, "rc %d: %s", rc, err);
    cr_assert(strstr(err, "--backward takes no value, got '--backward=no'"), "%s", err);
    rc = tt_run_tool(TT_ARGS("train", "--quiet=yes", "--max-steps", "1"), err, sizeof err);
    cr_assert_eq(rc, 2, "rc %d: %s", rc, err);
    cr_assert(strstr(err, "--quiet takes no value"), "%s", err);
    /* an option with a value still takes KEY=VALUE's form */
    char out[256];
    rc = tt_run_tool_out(TT_ARGS("dot", "tsa", "--depth=1", "-o", "-"), out, sizeof out, err,
                         sizeof err);
    cr_assert_eq(rc, 0, "rc %d: %s", rc, err);
    cr_assert(!strncmp(out, "digraph", 7), "%s", out);
}

/* One --set takes the KEY=VALUE words after it in every layer command (as
 * train --text does, nanoGPT's habit), up to the next option. */
Test(cli_aliases, one_set_takes_several_words)
{
    char a[4096], b[4096], err[1024];
    int rc = tt_run_tool_out(TT_ARGS("summary", "tsa", "--set", "d_model=8", "n_heads=2",
                                     "d_ff=16", "--csv"),
                             a, sizeof a, err, sizeof err);
    cr_assert_eq(rc, 0, "rc %d: %s", rc, err);
    rc = tt_run_tool_out(TT_ARGS("summary", "tsa", "--set", "d_model=8", "--set", "n_heads=2",
                                 "--set", "d_ff=16", "--csv"),
                         b, sizeof b, err, sizeof err);
    cr_assert_eq(rc, 0, "rc %d: %s", rc, err);
    cr_assert_str_eq(a, b);
    rc = tt_run_tool(TT_ARGS("dot", "tsa", "--set", "d_model=8", "nope=1", "-o", "-"), err,
                     sizeof err);
    cr_assert_eq(rc, 2, "rc %d: %s", rc, err);
    cr_assert(strstr(err, "unknown key 'nope'"), "%s", err);
}
