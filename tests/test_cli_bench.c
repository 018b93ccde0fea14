/*
 * test_cli_bench.c - `tgraph bench`, run as a program: bad input exits 2 with
 * one line on stderr naming the argument; a tiny run of a layer and of the
 * GEMM prints one line of strict JSON with the documented keys.
 *
 * Only the format is checked, never a time: benchmarks are not tests.
 */
#include <string.h>

#include "json.h"
#include "testutil.h"

Test(cli_bench, bad_input_exits_2)
{
    tt_expect_cli_error(TT_ARGS("bench"), "LAYER", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "nosuch"), "'nosuch'", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--set", "foo=1"), "'foo'", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--set", "d_model"), "--set", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--set", "b=-1"), "b", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--set"), "--set", "missing value");
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--threads", "0"), "--threads", "'0'");
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--threads", "-1"), "--threads", "'-1'");
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--threads", "99999999999999999999"), "--threads",
                        NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--threads", "two"), "--threads", "'two'");
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--min-time", "-0.5"), "--min-time", "'-0.5'");
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--min-time", "nan"), "--min-time", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--warmup", "-3"), "--warmup", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--frobnicate"), "'--frobnicate'", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "extra"), "'extra'", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--m", "4"), "--m", "gemm");
    tt_expect_cli_error(TT_ARGS("bench", "gemm", "--n", "4", "--k", "4"), "--m", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "gemm", "--m", "4", "--k", "4"), "--n", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "gemm", "--m", "4", "--n", "4"), "--k", NULL);
    tt_expect_cli_error(TT_ARGS("bench", "gemm", "--m", "0", "--n", "4", "--k", "4"), "--m", "'0'");
    tt_expect_cli_error(TT_ARGS("bench", "gemm", "--m", "4", "--n", "4", "--k", "4", "--set",
                                "b=2"), "--set", NULL);
}

/* Parse the one line of stdout as a JSON object (the test owns doc). */
static const tg__json *parse_line(const char *out, tg__json_doc *doc)
{
    size_t len = strlen(out);
    cr_assert(len > 0 && out[len - 1] == '\n', "stdout is not one line: '%s'", out);
    cr_assert_null(memchr(out, '\n', len - 1), "more than one line on stdout:\n%s", out);
    cr_assert_eq(tg__json_parse(out, len, "bench output", NULL, doc), TG_OK, "%s: %s",
                 tg_last_error(), out);
    cr_assert_eq(doc->root->kind, TG__JSON_OBJECT, "not an object: %s", out);
    return doc->root;
}

static const tg__json *member(const tg__json *obj, const char *key, tg__json_kind kind)
{
    const tg__json *v = tg__json_get(obj, key);
    cr_assert_not_null(v, "no \"%s\"", key);
    cr_assert_eq(v->kind, kind, "\"%s\" has the wrong kind", key);
    return v;
}

Test(cli_bench, layer_prints_one_json_line)
{
    /* attention_layer with q, k, v inputs: the several-input case */
    char out[8192], err[8192];
    int rc = tt_run_tool_out(TT_ARGS("bench", "attention_layer", "--set", "self_attention=false",
                                     "--set", "S=7", "--set", "d_model=8", "--threads", "1",
                                     "--min-time", "0", "--warmup", "1"),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
    cr_assert_eq(err[0], '\0', "stderr: %s", err);
    tg__json_doc doc;
    const tg__json *o = parse_line(out, &doc);
    cr_assert(tg__json_streq(member(o, "layer", TG__JSON_STRING), "attention_layer"));
    const tg__json *cfg = member(o, "config", TG__JSON_OBJECT);
    cr_assert_eq(member(cfg, "S", TG__JSON_NUMBER)->i, 7);
    cr_assert_eq(member(cfg, "d_model", TG__JSON_NUMBER)->i, 8);
    cr_assert_eq(member(cfg, "L", TG__JSON_NUMBER)->i, 6, "defaults are printed too");
    cr_assert_eq(member(cfg, "self_attention", TG__JSON_BOOL)->b, false);
    member(cfg, "d_keys", TG__JSON_NULL);
    cr_assert_geq(member(o, "train_step_ms", TG__JSON_NUMBER)->num, 0);
    cr_assert_geq(member(o, "infer_ms", TG__JSON_NUMBER)->num, 0);
    /* four Linear(8, 8) with bias */
    cr_assert_eq(member(o, "params", TG__JSON_NUMBER)->i, 4 * (8 * 8 + 8));
    cr_assert_gt(member(o, "peak_rss_mb", TG__JSON_NUMBER)->num, 0);
    cr_assert_gt(member(o, "train_plan_mb", TG__JSON_NUMBER)->num, 0);
#ifdef __GLIBC__   /* the allocator's bytes are counted with glibc only */
    cr_assert_gt(member(o, "train_peak_alloc_mb", TG__JSON_NUMBER)->num,
                 member(o, "train_plan_mb", TG__JSON_NUMBER)->num);
#endif
    cr_assert_eq(member(o, "threads", TG__JSON_NUMBER)->i, 1);
    cr_assert_eq(member(o, "recompute", TG__JSON_BOOL)->b, false);
    cr_assert_eq(o->n, 10, "unexpected keys: %s", out);
    tg__json_free(&doc);
}

/* --profile: the per-op table on stderr, stdout still the one JSON line. */
Test(cli_bench, profile_prints_per_op_times)
{
    char out[8192], err[8192];
    int rc = tt_run_tool_out(TT_ARGS("bench", "attention_layer", "--set", "d_model=8",
                                     "--min-time", "0", "--warmup", "1", "--profile"),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
    tg__json_doc doc;
    const tg__json *o = parse_line(out, &doc);
    cr_assert_eq(member(o, "recompute", TG__JSON_BOOL)->b, false);
    tg__json_free(&doc);
    cr_assert(strstr(err, "train fwd"), "%s", err);
    /* four linears (nodes), one fused attention, and the sum row */
    const char *lin = strstr(err, "\n  linear ");
    cr_assert(lin, "%s", err);
    long nodes = 0;
    cr_assert_eq(sscanf(lin, "\n  linear %ld", &nodes), 1);
    cr_assert_eq(nodes, 4);
    cr_assert(strstr(err, "\n  sdpa "), "%s", err);
    cr_assert(strstr(err, "\n  sum "), "%s", err);
}

/* --recompute: the Q, K, V projections are recomputed for attention's
 * backward, so the training graph plans less memory. */
Test(cli_bench, recompute_plans_less_memory)
{
    double plan[2];
    for (int r = 0; r < 2; r++) {
        char out[8192], err[8192];
        const char *const *args = r ? TT_ARGS("bench", "tsa", "--set", "b=4", "--set", "d_model=32",
                                              "--min-time", "0", "--warmup", "0", "--recompute")
                                    : TT_ARGS("bench", "tsa", "--set", "b=4", "--set", "d_model=32",
                                              "--min-time", "0", "--warmup", "0");
        int rc = tt_run_tool_out(args, out, sizeof out, err, sizeof err);
        cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
        tg__json_doc doc;
        const tg__json *o = parse_line(out, &doc);
        cr_assert_eq(member(o, "recompute", TG__JSON_BOOL)->b, r == 1);
        plan[r] = member(o, "train_plan_mb", TG__JSON_NUMBER)->num;
        tg__json_free(&doc);
    }
    cr_assert_lt(plan[1], plan[0], "recompute %g MB, default %g MB", plan[1], plan[0]);
}

Test(cli_bench, parameterless_layer_and_gemm)
{
    char out[8192], err[8192];
    int rc = tt_run_tool_out(TT_ARGS("bench", "full_attention", "--min-time", "0", "--warmup",
                                     "0"), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
    tg__json_doc doc;
    const tg__json *o = parse_line(out, &doc);
    cr_assert_eq(member(o, "params", TG__JSON_NUMBER)->i, 0);
    cr_assert_eq(member(member(o, "config", TG__JSON_OBJECT), "scale", TG__JSON_NULL)->kind,
                 TG__JSON_NULL);
    tg__json_free(&doc);

    rc = tt_run_tool_out(TT_ARGS("bench", "gemm", "--m", "16", "--n", "8", "--k", "4",
                                 "--threads=2", "--min-time=0"), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
    o = parse_line(out, &doc);
    const tg__json *mnk = member(o, "gemm", TG__JSON_ARRAY);
    cr_assert_eq(mnk->n, 3);
    cr_assert_eq(tg__json_at(mnk, 0)->i, 16);
    cr_assert_eq(tg__json_at(mnk, 1)->i, 8);
    cr_assert_eq(tg__json_at(mnk, 2)->i, 4);
    cr_assert_gt(member(o, "gflops", TG__JSON_NUMBER)->num, 0);
    cr_assert_eq(member(o, "threads", TG__JSON_NUMBER)->i, 2);
    cr_assert_eq(o->n, 3, "unexpected keys: %s", out);
    tg__json_free(&doc);
}

Test(cli_bench, help)
{
    char out[8192], err[8192];
    cr_assert_eq(tt_run_tool_out(TT_ARGS("help", "bench"), out, sizeof out, err, sizeof err), 0);
    cr_assert_not_null(strstr(out, "usage: tgraph bench LAYER"));
    cr_assert_not_null(strstr(out, "tgraph bench gemm --m"));
    cr_assert_not_null(strstr(out, "examples:"));
    char out2[8192];
    cr_assert_eq(tt_run_tool_out(TT_ARGS("bench", "--help"), out2, sizeof out2, err, sizeof err),
                 0);
    cr_assert_str_eq(out, out2);
    cr_assert_eq(tt_run_tool_out(TT_ARGS("--help"), out, sizeof out, err, sizeof err), 0);
    cr_assert_not_null(strstr(out, "  bench "), "bench is not in tgraph --help");
}
