/*
 * test_itransformer.c - TSL's iTransformer and the shared TSL encoder
 * (layers/tsl_encoder.h) against the PyTorch oracle (the suite's toy case
 * with time features, relu without them, 3 layers of 4 heads with d_ff None,
 * one variate and one time feature), an F64 gradcheck of every parameter
 * (the input's gradient goes through the detached mean and is checked
 * against the fixtures instead), the instance normalisation against a direct
 * computation, bad configs and inputs, and the command line: run, gradcheck,
 * dot, summary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_case.h"
#include "layers.h"

#define ATOL 1e-5
#define RTOL 1e-5
#define CASE TT_FIXTURES "/oracle/itransformer/"

Test(itransformer, oracle_toy) { tt_run_oracle_case("itransformer", ATOL, RTOL); }
Test(itransformer, oracle_nomark_relu) { tt_run_oracle_case("itransformer_nomark", ATOL, RTOL); }
Test(itransformer, oracle_3_layers_4_heads_relu_dff_none)
{
    tt_run_oracle_case("x_itransformer_3l4h", ATOL, RTOL);
}
Test(itransformer, oracle_odd_one_variate_one_mark)
{
    tt_run_oracle_case("x_itransformer_odd", ATOL, RTOL);
}

/* every parameter; x is left out (its gradient is autograd's through the
 * detached mean, which finite differences do not see) */
Test(itransformer, gradcheck_parameters)
{
    const char *sets[] = {"B=2", "N=3", "n_mark=2", "seq_len=7", "pred_len=3", "d_model=6",
                          "n_heads=2", "e_layers=1", "d_ff=5", "activation=gelu"};
    /* value_embedding 2, one layer 4 x 2 + 2 x 2 + 2 x 2, encoder.norm 2, projection 2 */
    cr_assert_eq(tt_layer_gradcheck("itransformer", sets, 10, 1, 0), 22);
    sets[2] = "n_mark=0";
    sets[7] = "e_layers=2";
    sets[9] = "activation=relu";
    cr_assert_eq(tt_layer_gradcheck("itransformer", sets, 10, 2, 0), 38);
}

/* the input's gradient really is the detached-mean one: it differs from the
 * derivative, so gradcheck on x would fail */
Test(itransformer, input_gradient_is_not_the_derivative)
{
    const char *sets[] = {"B=1", "N=2", "n_mark=0", "seq_len=5", "pred_len=2", "d_model=4",
                          "n_heads=1", "e_layers=1", "d_ff=4"};
    tt_layer t = tt_layer_new("itransformer", sets, 9,
                              &(tt_layer_opts){.dtype = TG_F64, .init = true, .seed = 4,
                                               .randn_seed = 9});
    tg_gradcheck_result res[64];
    int n = 0;
    bool ok = true;
    tg_gradcheck_opts o = {.seed = 1};
    cr_assert_eq(tg_gradcheck(t.g, t.out.y, &o, res, 64, &n, &ok), TG_OK, "%s", tg_last_error());
    bool x_failed = false;
    for (int i = 0; i < n; i++)
        if (!strcmp(res[i].name, "input.x")) x_failed = !res[i].pass;
    cr_assert(x_failed, "a detached mean should make x's gradient differ from the derivative");
    tt_layer_free(&t);
}

/* normalised series: mean 0, population variance v / (v + 1e-5); denorm undoes it */
Test(itransformer, instance_norm_and_denorm)
{
    const int64_t B = 2, T = 9, N = 3;
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){B, T, N});
    tg_node *means, *stdev;
    tg_node *z = tg_instance_norm(g, x, &means, &stdev);
    tg_node *back = tg_instance_denorm(g, z, means, stdev);
    cr_assert(back, "%s", tg_graph_error(g));
    tg_node_keep(z);
    double *xv = tg_node_value(x)->data;
    for (int64_t i = 0; i < B * T * N; i++) xv[i] = 3.0 * sin(0.7 * (double)i) + (double)(i % 4);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_graph_error(g));
    const double *zv = tg_node_value(z)->data, *bv = tg_node_value(back)->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < N; c++) {
            double m = 0, v = 0, mz = 0, vz = 0;
            for (int64_t t = 0; t < T; t++) m += xv[(b * T + t) * N + c] / (double)T;
            for (int64_t t = 0; t < T; t++) {
                double d = xv[(b * T + t) * N + c] - m;
                v += d * d / (double)T;
                mz += zv[(b * T + t) * N + c] / (double)T;
            }
            for (int64_t t = 0; t < T; t++) vz += zv[(b * T + t) * N + c] * zv[(b * T + t) * N + c];
            cr_assert_float_eq(mz, 0.0, 1e-12);
            cr_assert_float_eq(vz / (double)T, v / (v + 1e-5), 1e-12);
            cr_assert_float_eq(tg_node_value(stdev)->data ? ((double *)tg_node_value(stdev)->data)
                                                                [b * N + c]
                                                          : 0,
                               sqrt(v + 1e-5), 1e-12);
        }
    for (int64_t i = 0; i < B * T * N; i++) cr_assert_float_eq(bv[i], xv[i], 1e-12);
    tg_graph_free(g);
}

Test(itransformer, bad_configs)
{
    tt_assert_layer_rejects("itransformer", (const char *[]){"d_model=8", "n_heads=3"}, 2,
                            "itransformer: d_model (8) must be divisible by n_heads (3)");
    tt_assert_layer_rejects("itransformer", (const char *[]){"activation=tanh"}, 1,
                            "itransformer: activation must be relu or gelu, got 'tanh'");
    tt_assert_layer_rejects("itransformer", (const char *[]){"activation=2"}, 1,
                            "activation: expected a string");
    tt_assert_layer_rejects("itransformer",
                            (const char *[]){"activation=gelu_gelu_gelu_gelu_gelu_gelu_gelu"}, 1,
                            "activation: 'gelu_gelu_gelu_gelu_gelu_gelu_gelu' is longer than 31");
    tt_assert_layer_rejects("itransformer", (const char *[]){"n_mark=-1"}, 1,
                            "n_mark: -1 is out of range [0, inf)");
    tt_assert_layer_rejects("itransformer", (const char *[]){"e_layers=0"}, 1,
                            "e_layers: 0 is out of range [1, 64]");
    tt_assert_layer_rejects("itransformer", (const char *[]){"dropout=1.5"}, 1,
                            "dropout: 1.5 is out of range [0, 1]");
    tt_assert_layer_rejects("itransformer", (const char *[]){"d_ff=0"}, 1,
                            "d_ff: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("itransformer", (const char *[]){"enc_in=7"}, 1,
                            "unknown key 'enc_in'");
}

static tg_itransformer *model(tg_params *ps, int64_t n_mark)
{
    tg_itransformer_config c = tg_itransformer_defaults();
    c.n_mark = n_mark;
    tg_itransformer *m = calloc(1, sizeof *m);
    cr_assert_eq(tg_itransformer_init(m, &c, ps, "", NULL), TG_OK, "%s", tg_last_error());
    return m;
}

/* build on x [shape] (and x_mark [mshape] when mrank > 0); NULL expected with needle */
static void expect_build_error(tg_itransformer *m, const int64_t *xs, int mrank,
                               const int64_t *ms, const char *needle)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, xs);
    tg_node *xm = mrank ? tg_input(g, "x_mark", TG_F32, mrank, ms) : NULL;
    cr_assert_null(tg_itransformer_build(g, m, x, xm), "expected: %s", needle);
    tt_assert_graph_error(g, needle);
    tg_graph_free(g);
}

Test(itransformer, builder_checks_the_inputs)
{
    tg_params *ps = tg_params_new(TG_F32), *ps0 = tg_params_new(TG_F32);
    tg_itransformer *m = model(ps, 4), *m0 = model(ps0, 0);
    tg_graph *g = tg_graph_new(TG_F32);   /* B and N from x */
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){5, 16, 7});
    tg_node *y = tg_itransformer_build(g, m, x, tg_input(g, "m", TG_F32, 3, (int64_t[]){5, 16, 4}));
    cr_assert(y, "%s", tg_graph_error(g));
    const tg_tensor *yv = tg_node_value(y);
    cr_assert(yv->shape[0] == 5 && yv->shape[1] == 6 && yv->shape[2] == 7);
    tg_graph_free(g);
    expect_build_error(m, (int64_t[]){2, 15, 3}, 3, (int64_t[]){2, 15, 4},
                       "itransformer: expected x [B, seq_len=16, N], got [2, 15, 3]");
    expect_build_error(m, (int64_t[]){2, 16, 3}, 3, (int64_t[]){2, 16, 5},
                       "expected x_mark [B=2, seq_len=16, n_mark=4], got [2, 16, 5]");
    expect_build_error(m, (int64_t[]){2, 16, 3}, 3, (int64_t[]){3, 16, 4},
                       "expected x_mark [B=2, seq_len=16, n_mark=4], got [3, 16, 4]");
    expect_build_error(m, (int64_t[]){2, 16, 3}, 2, (int64_t[]){16, 4}, "got [16, 4]");
    expect_build_error(m, (int64_t[]){2, 16, 3}, 0, NULL,
                       "itransformer: n_mark is 4 but x_mark was not given");
    expect_build_error(m0, (int64_t[]){2, 16, 3}, 3, (int64_t[]){2, 16, 4},
                       "itransformer: n_mark is 0 but x_mark was given");
    free(m);
    free(m0);
    tg_params_free(ps);
    tg_params_free(ps0);
}

/* the encoder on its own, as PatchTST uses it: no final norm, keys by state_dict name */
Test(itransformer, encoder_alone_names_and_shapes)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_tsl_encoder_config c = {.e_layers = 2, .d_model = 8, .n_heads = 2, .dropout = 0.1,
                               .activation = TG_TSL_ACT_GELU};
    tg_tsl_encoder *e = calloc(1, sizeof *e);
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    cr_assert_eq(tg_tsl_encoder_init(e, &c, ps, "", "encoder", &rng), TG_OK, "%s", tg_last_error());
    cr_assert_eq(e->d_ff, 32, "d_ff None is 4 * d_model");
    tg_param *w = tg_params_find(ps, "encoder.attn_layers.1.conv1.weight");
    cr_assert(w && w->value.rank == 3 && w->value.shape[0] == 32 && w->value.shape[1] == 8 &&
              w->value.shape[2] == 1);
    const float *wv = w->value.data;   /* kaiming_uniform(a=sqrt(5)): U(+-1/sqrt(8)) */
    for (int64_t i = 0; i < w->value.numel; i++) cr_assert(fabsf(wv[i]) <= 1 / sqrtf(8.f));
    cr_assert(tg_params_find(ps, "encoder.attn_layers.0.attention.query_projection.weight"));
    cr_assert(tg_params_find(ps, "encoder.attn_layers.1.conv2.bias"));
    cr_assert(tg_params_find(ps, "encoder.attn_layers.0.norm2.weight"));
    cr_assert_null(tg_params_find(ps, "encoder.norm.weight"), "no norm asked for");
    cr_assert_eq(tg_params_count(ps), 2 * 16);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){6, 5, 8});
    tg_node *y = tg_tsl_encoder_layers_build(g, e, x);
    cr_assert(y && tg_node_value(y)->shape[1] == 5, "%s", tg_graph_error(g));
    cr_assert_null(tg_tsl_encoder_build(g, e, tg_input(g, "z", TG_F32, 3, (int64_t[]){6, 5, 7})));
    tt_assert_graph_error(g, "attn_layers.0: expected x [B, L, d_model=8], got [6, 5, 7]");
    tg_graph_free(g);
    c.n_heads = 3;
    cr_assert_neq(tg_tsl_encoder_init(e, &c, ps, "", "encoder", NULL), TG_OK);
    tt_assert_last_error("encoder: d_model (8) must be divisible by n_heads (3)");
    c.n_heads = 2;
    c.e_layers = 0;
    cr_assert_neq(tg_tsl_encoder_init(e, &c, ps, "", "encoder", NULL), TG_OK);
    tt_assert_last_error("encoder: e_layers must be in [1, 64], got 0");
    tg_tsl_activation a;
    cr_assert_neq(tg_tsl_activation_parse("swish", "patchtst", &a), TG_OK);
    tt_assert_last_error("patchtst: activation must be relu or gelu, got 'swish'");
    cr_assert(!tg_tsl_activation_parse("relu", NULL, &a) && a == TG_TSL_ACT_RELU);
    free(e);
    tg_params_free(ps);
}

Test(itransformer, command_line_run_matches_the_oracle)
{
    char out[4096], err[4096];
    int rc = tt_run_tool_out(TT_ARGS("run", "itransformer", "--weights", CASE "weights.safetensors",
                                     "--input", "x=" CASE "x.npy", "--input",
                                     "x_mark=" CASE "x_mark.npy", "--out", tt_path("y.npy"),
                                     "--grad-output", CASE "dy.npy", "--grads",
                                     tt_path("grads.safetensors")),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    rc = tt_run_tool_out(TT_ARGS("compare", tt_path("y.npy"), CASE "y.npy", "--atol", "1e-5"),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s%s", out, err);
    rc = tt_run_tool_out(TT_ARGS("compare", tt_path("grads.safetensors"),
                                 CASE "grads.safetensors", "--atol", "1e-5"),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s%s", out, err);
    /* the shapes come from the files; a mismatching x_mark is named */
    tt_expect_cli_error(TT_ARGS("run", "itransformer", "--set", "n_mark=3", "--input",
                                "x=" CASE "x.npy", "--input", "x_mark=" CASE "x_mark.npy", "--out",
                                tt_path("z.npy")),
                        "--input x_mark: shape [2, 16, 4] does not match the config's [2, 16, 3]",
                        NULL);
}

Test(itransformer, command_line_gradcheck_dot_summary)
{
    char out[65536], err[4096];
    int rc = tt_run_tool_out(TT_ARGS("gradcheck", "itransformer", "--set", "e_layers=1"), out,
                             sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s%s", out, err);
    cr_assert(strstr(out, "itransformer: 22 tensors, all pass"), "%s", out);
    cr_assert_null(strstr(out, "input.x "), "x is left out: %s", out);
    rc = tt_run_tool_out(TT_ARGS("dot", "itransformer", "-o", "-"), out, sizeof out, err,
                         sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    const char *clusters[] = {"label=\"itransformer\"", "label=\"instance_norm\"",
                              "label=\"enc_embedding\"", "label=\"encoder\"",
                              "label=\"attn_layers.1\"", "label=\"conv1\"",
                              "label=\"instance_denorm\""};
    for (int i = 0; i < 7; i++) cr_assert(strstr(out, clusters[i]), "dot: no %s", clusters[i]);
    rc = tt_run_tool_out(TT_ARGS("summary", "itransformer", "--set", "d_ff=null"), out,
                         sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "conv1") && strstr(out, "[2, 7, 32]"), "%s", out);   /* 3 + 4 tokens */
}

/* tgraph train --model itransformer: the data's dates give x_mark (timeF, 4 hourly
 * columns; none without a date column); eval and predict feed them too */
Test(itransformer, trains_with_time_features_from_the_command_line)
{
    char out[8192], err[8192];
    const char *data = tt_path("hourly.csv");   /* 340 hours from 2016-07-01, two columns */
    FILE *f = fopen(data, "w");
    cr_assert(f);
    fprintf(f, "date,a,OT\n");
    int64_t t0;
    cr_assert_eq(tg_date_parse("2016-07-01 00:00:00", &t0, NULL), TG_OK);
    for (int r = 0; r < 340; r++) {
        char date[32];
        tg_date_format(t0 + 3600 * r, TG_DATE_YMD_HMS, date, sizeof date);
        fprintf(f, "%s,%.4f,%.4f\n", date, sin(r * 0.26) + 0.01 * r, cos(r * 0.26 + 1) * 2);
    }
    fclose(f);
    int rc = tt_run_tool_out(TT_ARGS("train", "--model", "itransformer", "--data", data,
                                     "--split", "200,60,69", "--set", "seq_len=24", "--set",
                                     "pred_len=8", "--set", "d_model=8", "--set", "d_ff=8",
                                     "--set", "n_heads=2", "--epochs", "2", "--threads", "1",
                                     "--out-dir", tt_path("run")),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "N=2 n_mark=4 seq_len=24"), "%s", out);
    cr_assert(strstr(out, "test mse="), "%s", out);
    rc = tt_run_tool_out(TT_ARGS("eval", "--checkpoint", tt_path("run/best.safetensors")), out,
                         sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "test mse="), "%s", out);
    rc = tt_run_tool_out(TT_ARGS("predict", "--checkpoint", tt_path("run/best.safetensors"),
                                 "--data", data, "--out", tt_path("fc.csv")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "8 steps of 2 columns after 2016-07-15 03:00:00"), "%s", out);
    /* the built-in series has no dates: no time features */
    rc = tt_run_tool_out(TT_ARGS("train", "--model", "itransformer", "--set", "seq_len=24",
                                 "--set", "pred_len=8", "--set", "activation=relu", "--epochs",
                                 "1", "--max-steps", "3", "--threads", "1", "--out-dir",
                                 tt_path("builtin")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "N=7 n_mark=0"), "%s", out);
    /* the string key goes through the checkpoint's config and back */
    rc = tt_run_tool_out(TT_ARGS("train", "--resume", tt_path("builtin/checkpoint.safetensors"),
                                 "--max-steps", "5", "--threads", "1"),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "factor=1 activation=relu"), "%s", out);
    tt_expect_cli_error(TT_ARGS("train", "--model", "itransformer", "--data", data, "--set",
                                "n_mark=3", "--out-dir", tt_path("bad")),
                        "--set n_mark=3 conflicts with the data's time features", "(4)");
    /* a step of 15 minutes: TSL's default --freq h still gives the hourly 4 (as its ETTm
     * scripts); --freq 15min the minutely 5 (MinuteOfHour first), kept by eval */
    const char *quarter = tt_path("quarter.csv");
    cr_assert(f = fopen(quarter, "w"));
    fprintf(f, "date,OT\n");
    for (int r = 0; r < 200; r++) {
        char date[32];
        tg_date_format(t0 + 900 * r, TG_DATE_YMD_HMS, date, sizeof date);
        fprintf(f, "%s,%.4f\n", date, sin(r * 0.3));
    }
    fclose(f);
    rc = tt_run_tool_out(TT_ARGS("train", "--model", "itransformer", "--data", quarter, "--set",
                                 "seq_len=16", "--set", "pred_len=4", "--epochs", "1",
                                 "--max-steps", "1", "--threads", "1", "--out-dir",
                                 tt_path("quarter_h")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "N=1 n_mark=4"), "%s", out);
    rc = tt_run_tool_out(TT_ARGS("train", "--model", "itransformer", "--data", quarter, "--freq",
                                 "15min", "--set", "seq_len=16", "--set", "pred_len=4",
                                 "--epochs", "1", "--threads", "1", "--out-dir",
                                 tt_path("quarter")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "N=1 n_mark=5"), "%s", out);
    rc = tt_run_tool_out(TT_ARGS("eval", "--checkpoint", tt_path("quarter/best.safetensors")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "the checkpoint's --freq: %s", err);
    tt_expect_cli_error(TT_ARGS("train", "--model", "itransformer", "--data", quarter, "--freq",
                                "fortnightly", "--out-dir", tt_path("bad2")),
                        "--freq: time features: unsupported frequency 'fortnightly'", NULL);
    tt_expect_cli_error(TT_ARGS("train", "--resume", tt_path("quarter/checkpoint.safetensors"),
                                "--freq", "h"),
                        "--freq cannot be changed when resuming", NULL);
}
