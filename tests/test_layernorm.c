/*
 * test_layernorm.c - layer_norm against PyTorch (forward, dx, dweight, dbias;
 * 1 and 2 normalised dims, with and without affine, constant rows), F64
 * gradcheck, thread-count invariance, and every bad input of OPS.md 19.
 * Fixtures: tests/fixtures/gen_nn.py.
 */
#include "nn_fixture.h"

#include <math.h>
#include <criterion/parameterized.h>

static int b_last_affine(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_layer_norm(g, in[0], 1, (int64_t[]){5}, in[1], in[2], 1e-5));
}
static int b_two_affine(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_layer_norm(g, in[0], 2, (int64_t[]){4, 5}, in[1], in[2], 1e-5));
}
static int b_last_plain(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_layer_norm(g, in[0], 1, (int64_t[]){6}, NULL, NULL, 1e-5));
}
static int b_two_plain(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_layer_norm(g, in[0], 2, (int64_t[]){3, 4}, NULL, NULL, 1e-5));
}
static int b_weight_only(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_layer_norm(g, in[0], 1, (int64_t[]){7}, in[1], NULL, 1e-5));
}
static int b_bias_only(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_layer_norm(g, in[0], 1, (int64_t[]){7}, NULL, in[1], 1e-3));
}
static int b_all_dims(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_layer_norm(g, in[0], 2, (int64_t[]){2, 3}, in[1], in[2], 1e-5));
}

static const nn_case cases[] = {
    {"ln_last_affine", 3, b_last_affine, false}, {"ln_two_affine", 3, b_two_affine, false},
    {"ln_last_plain", 1, b_last_plain, false},   {"ln_two_plain", 1, b_two_plain, false},
    {"ln_weight_only", 2, b_weight_only, false}, {"ln_bias_only", 2, b_bias_only, false},
    {"ln_all_dims", 3, b_all_dims, false},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

ParameterizedTestParameters(layernorm, fixture) { return params(); }
ParameterizedTest(int *i, layernorm, fixture) { nn_fixture_run(&cases[*i]); }

ParameterizedTestParameters(layernorm, gradcheck) { return params(); }
ParameterizedTest(int *i, layernorm, gradcheck) { nn_gradcheck_run(&cases[*i]); }

/* A constant row normalises to exactly beta (x - mean is exactly 0). */
Test(layernorm, constant_row_gives_beta)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){2, 3});
    tg_node *b = tg_input(g, "b", TG_F32, 1, (int64_t[]){3});
    tg_node *w = tg_full(g, 1, (int64_t[]){3}, 2.0);
    float *xv = tg_node_value(x)->data, *bv = tg_node_value(b)->data;
    for (int i = 0; i < 6; i++) xv[i] = i < 3 ? 0.3f : (float)i;
    bv[0] = 1.5f, bv[1] = -2.0f, bv[2] = 0.25f;
    tg_node *y = tg_layer_norm(g, x, 1, (int64_t[]){3}, w, b, 1e-5);
    cr_assert(y && tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    const float *yv = tg_node_value(y)->data;
    for (int i = 0; i < 3; i++) cr_expect_eq(yv[i], bv[i], "y[%d] = %g", i, yv[i]);
    cr_expect(fabsf(yv[3] - bv[0]) > 1);   /* the other row is normalised: -2 sqrt(1.5) + 1.5 */
    tg_graph_free(g);
}

/* Rows and columns are split across threads: the result must not depend on
 * how many there are (bitwise). */
Test(layernorm, thread_count_invariant)
{
    float *res[2][4];
    int64_t R = 300, N = 160;
    for (int pass = 0; pass < 2; pass++) {
        cr_assert(tg_threads_set(pass ? 4 : 1) == TG_OK);
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){3, R / 3, N});
        tg_node *w = tg_input(g, "w", TG_F32, 1, (int64_t[]){N});
        tg_node *b = tg_input(g, "b", TG_F32, 1, (int64_t[]){N});
        tt_randn((tg_tensor *)tg_node_value(x), 1);
        tt_randn((tg_tensor *)tg_node_value(w), 2);
        tt_randn((tg_tensor *)tg_node_value(b), 3);
        for (int k = 0; k < 3; k++) tg_node_set_requires_grad((tg_node *[]){x, w, b}[k], true);
        tg_node *y = tg_layer_norm(g, x, 1, (int64_t[]){N}, w, b, 1e-5);
        tg_tensor *dy = tg_tensor_new(TG_F32, 3, (int64_t[]){3, R / 3, N});
        tt_randn(dy, 4);
        cr_assert(y && tg_graph_forward(g) == TG_OK && tg_graph_backward(g, y, dy) == TG_OK,
                  "%s", tg_last_error());
        const tg_tensor *t[4] = {tg_node_value(y), tg_node_grad(x), tg_node_grad(w),
                                 tg_node_grad(b)};
        /* dgamma and dbeta over R = 300 rows (two blocks of partial sums)
         * against sums in double: xhat = (y - beta) / gamma */
        const float *yv = t[0]->data, *dyv = dy->data, *wv = tg_node_value(w)->data,
                    *bv = tg_node_value(b)->data;
        for (int64_t j = 0; j < N; j++) {
            double sg = 0, sb = 0;
            for (int64_t r = 0; r < R; r++) {
                double xh = ((double)yv[r * N + j] - bv[j]) / wv[j];
                sg += (double)dyv[r * N + j] * xh;
                sb += dyv[r * N + j];
            }
            const float gw = ((const float *)t[2]->data)[j], gb = ((const float *)t[3]->data)[j];
            cr_assert(fabs(gw - sg) <= 1e-3 * (1 + fabs(sg)), "dgamma[%lld] %g vs %g",
                      (long long)j, gw, sg);
            cr_assert(fabs(gb - sb) <= 1e-4 * (1 + fabs(sb)), "dbeta[%lld] %g vs %g",
                      (long long)j, gb, sb);
        }
        for (int k = 0; k < 4; k++) {
            res[pass][k] = malloc((size_t)t[k]->numel * sizeof(float));
            memcpy(res[pass][k], t[k]->data, (size_t)t[k]->numel * sizeof(float));
        }
        tg_tensor_free(dy);
        tg_graph_free(g);
    }
    tg_threads_set(0);
    int64_t len[4] = {R * N, R * N, N, N};
    for (int k = 0; k < 4; k++) {
        cr_expect(memcmp(res[0][k], res[1][k], (size_t)len[k] * sizeof(float)) == 0,
                  "tensor %d differs between 1 and 4 threads", k);
        free(res[0][k]);
        free(res[1][k]);
    }
}

/* ---- bad input (OPS.md 19: layernorm) ---- */

static tg_node *in_f32(tg_graph *g, const char *name, int rank, const int64_t *shape)
{
    return tg_input(g, name, TG_F32, rank, shape);
}

Test(layernorm_errors, trailing_dims_mismatch)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, "x", 2, (int64_t[]){3, 5});
    cr_assert_null(tg_layer_norm(g, x, 1, (int64_t[]){10}, NULL, NULL, 1e-5));
    tt_assert_graph_error(g, "Given normalized_shape=[10], expected input with shape [*, 10], "
                             "but got input of size[3, 5]");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = in_f32(g, "x", 1, (int64_t[]){5});
    cr_assert_null(tg_layer_norm(g, x, 2, (int64_t[]){3, 5}, NULL, NULL, 1e-5));
    tt_assert_graph_error(g, "Given normalized_shape=[3, 5], expected input with shape [*, 3, 5], "
                             "but got input of size[5]");
    tg_graph_free(g);
}

Test(layernorm_errors, empty_normalized_shape)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, "x", 2, (int64_t[]){3, 5});
    cr_assert_null(tg_layer_norm(g, x, 0, NULL, NULL, NULL, 1e-5));
    tt_assert_graph_error(g, "Expected normalized_shape to be at least 1-dimensional, i.e., "
                             "containing at least one element, but got normalized_shape = []");
    tg_graph_free(g);
}

Test(layernorm_errors, weight_and_bias_shape)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, "x", 2, (int64_t[]){3, 5}), *w = in_f32(g, "w", 1, (int64_t[]){4});
    cr_assert_null(tg_layer_norm(g, x, 1, (int64_t[]){5}, w, NULL, 1e-5));
    tt_assert_graph_error(g, "Expected weight to be of same shape as normalized_shape, but got "
                             "weight of shape [4] and normalized_shape = [5]");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = in_f32(g, "x", 2, (int64_t[]){3, 5});
    w = in_f32(g, "w", 1, (int64_t[]){5});
    tg_node *b = in_f32(g, "b", 2, (int64_t[]){1, 5});
    cr_assert_null(tg_layer_norm(g, x, 1, (int64_t[]){5}, w, b, 1e-5));
    tt_assert_graph_error(g, "Expected bias to be of same shape as normalized_shape, but got "
                             "bias of shape [1, 5] and normalized_shape = [5]");
    tg_graph_free(g);
}

Test(layernorm_errors, eps_not_positive)
{
    double bad[3] = {0.0, -1e-5, NAN};
    for (int k = 0; k < 3; k++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = in_f32(g, "x", 2, (int64_t[]){3, 5});
        cr_assert_null(tg_layer_norm(g, x, 1, (int64_t[]){5}, NULL, NULL, bad[k]));
        tt_assert_graph_error(g, "layer_norm: eps must be positive");
        tg_graph_free(g);
    }
}

Test(layernorm_errors, integer_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "i", TG_I64, 2, (int64_t[]){3, 5});
    cr_assert_null(tg_layer_norm(g, x, 1, (int64_t[]){5}, NULL, NULL, 1e-5));
    tt_assert_graph_error(g, "layer_norm: input must be float32, got int64");
    tg_graph_free(g);
}
