/*
 * test_dlinear.c - TSL's DLinear against the PyTorch oracle (shared and
 * individual Linears, odd sizes, the ETTh1 window of 25), an F64 gradcheck,
 * the moving average against a direct computation, bad configs and inputs,
 * and training it with `tgraph train --model dlinear`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_case.h"
#include "layers.h"

#define ATOL 1e-5
#define RTOL 1e-5

Test(dlinear, oracle_toy) { tt_run_oracle_case("dlinear", ATOL, RTOL); }
Test(dlinear, oracle_individual) { tt_run_oracle_case("dlinear_individual", ATOL, RTOL); }
Test(dlinear, oracle_odd) { tt_run_oracle_case("x_dlinear_odd", ATOL, RTOL); }
Test(dlinear, oracle_window25_individual)
{
    tt_run_oracle_case("x_dlinear_k25_individual", ATOL, RTOL);
}

Test(dlinear, gradcheck)
{
    const char *sets[] = {"B=2", "seq_len=9", "pred_len=4", "enc_in=3", "moving_avg=5",
                          "individual=false"};
    cr_assert_eq(tt_layer_gradcheck("dlinear", sets, 6, 1, 0), 5);   /* x, 4 parameters */
    sets[5] = "individual=true";
    cr_assert_eq(tt_layer_gradcheck("dlinear", sets, 6, 2, 0), 13);  /* x, 3 x 4 */
    sets[4] = "moving_avg=11";   /* a window wider than the series: edges replicated */
    cr_assert_eq(tt_layer_gradcheck("dlinear", sets, 6, 3, 0), 13);
}

/* trend[t] = mean_j x[clamp(t + j - p)], computed here directly. */
Test(dlinear, moving_avg_is_the_replicated_edge_average)
{
    const int64_t B = 2, T = 7, C = 3, k = 5, p = 2;
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){B, T, C});
    tg_node *y = tg_moving_avg(g, x, k);
    cr_assert(y, "%s", tg_graph_error(g));
    double *xv = tg_node_value(x)->data;
    for (int64_t i = 0; i < B * T * C; i++) xv[i] = (double)((i * 7919) % 23) - 11.0;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_graph_error(g));
    const double *yv = tg_node_value(y)->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t c = 0; c < C; c++) {
                double s = 0;
                for (int64_t j = 0; j < k; j++) {
                    int64_t u = t + j - p;
                    u = u < 0 ? 0 : u >= T ? T - 1 : u;
                    s += xv[(b * T + u) * C + c];
                }
                cr_assert_float_eq(yv[(b * T + t) * C + c], s / (double)k, 1e-12);
            }
    tg_graph_free(g);
}

Test(dlinear, bad_configs)
{
    tt_assert_layer_rejects("dlinear", (const char *[]){"moving_avg=4"}, 1,
                            "dlinear: moving_avg must be odd, got 4");
    tt_assert_layer_rejects("dlinear", (const char *[]){"moving_avg=0"}, 1,
                            "moving_avg: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("dlinear", (const char *[]){"seq_len=0"}, 1,
                            "seq_len: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("dlinear", (const char *[]){"individual=true", "enc_in=1025"}, 2,
                            "individual takes at most 1024 channels, enc_in is 1025");
    tt_assert_layer_rejects("dlinear", (const char *[]){"dropout=0.1"}, 1,
                            "unknown key 'dropout'");
}

Test(dlinear, builder_checks_the_input)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_dlinear_config c = {.B = 2, .enc_in = 2, .seq_len = 8, .pred_len = 3, .moving_avg = 3,
                           .individual = true};
    tg_dlinear *m = calloc(1, sizeof *m);
    cr_assert_eq(tg_dlinear_init(m, &c, ps, "", NULL), TG_OK, "%s", tg_last_error());
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){5, 8, 2});
    tg_node *y = tg_dlinear_build(g, m, x);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    cr_assert(tg_node_value(y)->shape[0] == 5 && tg_node_value(y)->shape[1] == 3 &&
              tg_node_value(y)->shape[2] == 2);
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 9, 2});
    cr_assert_null(tg_dlinear_build(g, m, x));
    tt_assert_graph_error(g, "dlinear: expected x [B, seq_len=8, enc_in (individual: the "
                             "configured one)], got [2, 9, 2]");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 8, 3});   /* 3 channels, 2 Linear pairs */
    cr_assert_null(tg_dlinear_build(g, m, x));
    tt_assert_graph_error(g, "got [2, 8, 3]");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 2, (int64_t[]){8, 2});
    cr_assert_null(tg_moving_avg(g, x, 3));
    tt_assert_graph_error(g, "moving_avg: expected x [B, T, C], got rank 2");
    tg_graph_free(g);
    c.moving_avg = 6;
    cr_assert_eq(tg_dlinear_init(m, &c, ps, "", NULL), TG_ERR_INVALID);
    cr_assert(strstr(tg_last_error(), "moving_avg must be a positive odd number, got 6"), "%s",
              tg_last_error());
    free(m);
    tg_params_free(ps);
}

/* Initialised as upstream: every weight 1/seq_len. */
Test(dlinear, weights_start_at_one_over_seq_len)
{
    const char *sets[] = {"seq_len=8", "pred_len=3", "enc_in=2", "individual=true"};
    tt_layer t = tt_layer_new("dlinear", sets, 4,
                              &(tt_layer_opts){.no_graph = true, .init = true, .seed = 3});
    const char *names[] = {"Linear_Seasonal.0.weight", "Linear_Seasonal.1.weight",
                           "Linear_Trend.0.weight", "Linear_Trend.1.weight"};
    for (int i = 0; i < 4; i++) {
        tg_param *p = tg_params_find(t.ps, names[i]);
        cr_assert(p, "%s", names[i]);
        const float *w = p->value.data;
        for (int64_t j = 0; j < 24; j++) cr_assert_eq(w[j], 0.125f);
    }
    cr_assert(tg_params_find(t.ps, "Linear_Trend.1.bias"));
    cr_assert_null(tg_params_find(t.ps, "Linear_Trend.2.bias"));
    tt_layer_free(&t);
}

Test(dlinear, trains_from_the_command_line)
{
    char out[8192], err[8192], dir[4200];
    snprintf(dir, sizeof dir, "%s/run", tt_tmpdir());
    int rc = tt_run_tool_out(TT_ARGS("train", "--model", "dlinear", "--set", "seq_len=24",
                                     "--set", "pred_len=8", "--set", "moving_avg=7", "--set",
                                     "individual=true", "--epochs", "2", "--threads", "1",
                                     "--out-dir", dir),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "test mse="), "%s", out);
    rc = tt_run_tool_out(TT_ARGS("train", "--model", "dlinear", "--set", "moving_avg=8",
                                 "--out-dir", tt_path("other")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2);
    cr_assert(strstr(err, "moving_avg must be odd, got 8"), "%s", err);
}
