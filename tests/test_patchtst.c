/*
 * test_patchtst.c - TSL's PatchTST: the patching (replication pad + unfold)
 * against a direct computation, its patch count against upstream's formula,
 * and bad patching arguments.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_case.h"
#include "layers.h"

/* patch p, tap j = x[clamp(p * stride + j, T - 1)], computed here directly;
 * and the gradient: every step gets the sum of dy over the taps reading it. */
static void check_unfold(int64_t T, int64_t patch_len, int64_t stride, int64_t padding)
{
    const int64_t N = 2, C = 3;
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){N, C, T});
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_patch_unfold(g, x, patch_len, stride, padding);
    cr_assert(y, "%s", tg_graph_error(g));
    const int64_t n = tg_patch_count(T, patch_len, stride, padding);
    const tg_tensor *yt = tg_node_value(y);
    cr_assert(yt->rank == 3 && yt->shape[0] == N * C && yt->shape[1] == n &&
              yt->shape[2] == patch_len);
    double *xv = tg_node_value(x)->data;
    for (int64_t i = 0; i < N * C * T; i++) xv[i] = (double)((i * 7919) % 31) - 15.0;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_graph_error(g));
    tg_tensor *dy = tg_tensor_new(TG_F64, 3, yt->shape);
    tt_randn(dy, 5);
    cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_graph_error(g));
    const double *yv = yt->data, *d = dy->data, *dx = tg_node_grad(x)->data;
    double *want = calloc((size_t)(N * C * T), sizeof *want);
    for (int64_t r = 0; r < N * C; r++)
        for (int64_t p = 0; p < n; p++)
            for (int64_t j = 0; j < patch_len; j++) {
                int64_t s = p * stride + j;
                s = s < T ? s : T - 1;
                const int64_t at = (r * n + p) * patch_len + j;
                cr_assert_eq(yv[at], xv[r * T + s], "T %lld patch %lld tap %lld", (long long)T,
                             (long long)p, (long long)j);
                want[r * T + s] += d[at];
            }
    for (int64_t i = 0; i < N * C * T; i++) cr_assert_float_eq(dx[i], want[i], 1e-12);
    free(want);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

Test(patchtst, unfold_is_pad_then_unfold)
{
    check_unfold(20, 4, 2, 2);    /* the oracle's toy: 10 patches */
    check_unfold(96, 16, 8, 8);   /* TSL's ETTh1 run: 12 patches */
    check_unfold(13, 8, 4, 4);    /* 13 + 4 = 17 steps: 3 patches, the last one step short */
    check_unfold(5, 7, 3, 3);     /* patch_len > seq_len, < seq_len + stride: one patch */
    check_unfold(9, 3, 5, 0);     /* stride > patch_len: steps skipped */
}

/* (seq_len - patch_len) // stride + 2, upstream's patch_num, for padding = stride. */
Test(patchtst, patch_count_is_upstreams)
{
    for (int64_t T = 1; T <= 40; T++)
        for (int64_t P = 1; P <= 20; P++)
            for (int64_t S = 1; S <= 10; S++) {
                int64_t want = 0;
                if (P <= T + S) {
                    const int64_t a = T - P;   /* Python's floor division */
                    want = (a >= 0 ? a / S : -((-a + S - 1) / S)) + 2;
                }
                cr_assert_eq(tg_patch_count(T, P, S, S), want, "T %lld P %lld S %lld",
                             (long long)T, (long long)P, (long long)S);
            }
    cr_assert_eq(tg_patch_count(10, 4, 0, 0), 0);
    cr_assert_eq(tg_patch_count(10, 0, 1, 0), 0);
    cr_assert_eq(tg_patch_count(10, 4, 1, -1), 0);
}

Test(patchtst, unfold_rejects_bad_arguments)
{
    struct {
        int rank;
        int64_t P, S, pad;
        const char *needle;
    } rows[] = {
        {2, 4, 2, 2, "patch_unfold: expected x [B, n_vars, T], got [2, 3]"},
        {3, 0, 2, 2, "patch_len and stride must be at least 1 and padding at least 0, got 0, "
                     "2 and 2"},
        {3, 4, 0, 2, "got 4, 0 and 2"},
        {3, 4, 2, -1, "got 4, 2 and -1"},
        {3, 12, 2, 2, "patch_len 12 is longer than the padded series (9 steps + padding 2)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, rows[i].rank, (int64_t[]){2, 3, 9});
        cr_assert_null(tg_patch_unfold(g, x, rows[i].P, rows[i].S, rows[i].pad));
        tt_assert_graph_error(g, rows[i].needle);
        tg_graph_free(g);
    }
}

#define ATOL 1e-5
#define RTOL 1e-5

Test(patchtst, oracle_toy) { tt_run_oracle_case("patchtst", ATOL, RTOL); }
Test(patchtst, oracle_train) { tt_run_oracle_case("patchtst_train", ATOL, RTOL); }
Test(patchtst, oracle_p8s4_3l_relu) { tt_run_oracle_case("x_patchtst_p8s4_3l_relu", ATOL, RTOL); }
Test(patchtst, oracle_train_odd) { tt_run_oracle_case("x_patchtst_train_odd", ATOL, RTOL); }
Test(patchtst, oracle_stride_gt_patch)
{
    tt_run_oracle_case("x_patchtst_stride_gt_patch", ATOL, RTOL);
}
