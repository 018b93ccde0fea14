/*
 * test_crossentropy.c - cross_entropy against PyTorch: class indices (each
 * reduction, weights, ignore_index, label smoothing 0.1, K-dim targets, a 1-d
 * input, all samples ignored), class probabilities (with weights, smoothing,
 * K dims, and their gradient w.r.t. the target); F64 gradcheck; thread-count
 * invariance; every bad input of OPS.md 15 and 19.
 * Fixtures: tests/fixtures/gen_nn.py.
 */
#include "nn_fixture.h"

#include <math.h>
#include <criterion/parameterized.h>

#define IGN TG_CROSS_ENTROPY_IGNORE_INDEX
#define MEAN TG_REDUCTION_MEAN
#define SUM TG_REDUCTION_SUM
#define NONE TG_REDUCTION_NONE

#define CE_BUILD(fname, W, IGNORE, RED, LS)                                   \
    static int fname(tg_graph *g, tg_node **in, tg_node **out)                \
    {                                                                         \
        return !!(out[0] = tg_cross_entropy(g, in[0], in[1], W, IGNORE, RED, LS)); \
    }

CE_BUILD(b_mean, NULL, IGN, MEAN, 0)
CE_BUILD(b_sum, NULL, IGN, SUM, 0)
CE_BUILD(b_none, NULL, IGN, NONE, 0)
CE_BUILD(b_w_mean, in[2], IGN, MEAN, 0)
CE_BUILD(b_w_sum, in[2], IGN, SUM, 0)
CE_BUILD(b_w_none, in[2], IGN, NONE, 0)
CE_BUILD(b_ign2, NULL, 2, MEAN, 0)
CE_BUILD(b_ls_w_mean, in[2], IGN, MEAN, 0.1)
CE_BUILD(b_ls_sum, NULL, IGN, SUM, 0.1)
CE_BUILD(b_ls_w_none, in[2], IGN, NONE, 0.1)
CE_BUILD(b_ls_mean, NULL, IGN, MEAN, 0.1)
CE_BUILD(b_ls_none, NULL, IGN, NONE, 0.1)
CE_BUILD(b_ls2_w_mean, in[2], IGN, MEAN, 0.2)

static const nn_case cases[] = {
    {"ce_mean", 2, b_mean, false},
    {"ce_sum", 2, b_sum, false},
    {"ce_none", 2, b_none, false},
    {"ce_weight_mean", 3, b_w_mean, false},
    {"ce_weight_none", 3, b_w_none, false},
    {"ce_ignore_mean", 3, b_w_mean, false},
    {"ce_ignore_none", 2, b_none, false},
    {"ce_ignore_custom", 2, b_ign2, false},
    {"ce_ls_mean", 3, b_ls_w_mean, false},
    {"ce_ls_sum", 2, b_ls_sum, false},
    {"ce_ls_none", 3, b_ls_w_none, false},
    {"ce_ls_plain", 2, b_ls_mean, false},
    {"ce_kdim_mean", 2, b_mean, false},
    {"ce_kdim_none", 3, b_ls_w_none, false},
    {"ce_k2_sum", 2, b_sum, false},
    {"ce_1d", 2, b_mean, false},
    {"ce_all_ignored", 2, b_mean, true},   /* NaN: nothing to gradcheck */
    {"ce_all_ignored_sum", 2, b_sum, false},
    {"ce_prob_mean", 2, b_mean, false},
    {"ce_prob_sum_w", 3, b_w_sum, false},
    {"ce_prob_none_ls", 2, b_ls_none, false},
    {"ce_prob_kdim", 3, b_ls2_w_mean, false},
    {"ce_prob_1d", 2, b_mean, false},
    {"ce_prob_unnormalised", 2, b_mean, false},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

ParameterizedTestParameters(crossentropy, fixture) { return params(); }
ParameterizedTest(int *i, crossentropy, fixture) { nn_fixture_run(&cases[*i]); }

/* the gradcheck runs over the cases with a finite output */
static int gc_index[N_CASES];

ParameterizedTestParameters(crossentropy, gradcheck)
{
    int n = 0;
    for (int i = 0; i < N_CASES; i++)
        if (!cases[i].no_gradcheck) gc_index[n++] = i;
    return cr_make_param_array(int, gc_index, (size_t)n);
}
ParameterizedTest(int *i, crossentropy, gradcheck) { nn_gradcheck_run(&cases[*i]); }

/* 'mean' over only ignored samples is 0/0 = NaN (PyTorch), and the gradient is 0. */
Test(crossentropy, all_ignored_mean_is_nan)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){2, 3});
    tg_node *t = tg_input(g, "t", TG_I64, 1, (int64_t[]){2});
    tt_randn((tg_tensor *)tg_node_value(x), 1);
    ((int64_t *)tg_node_value(t)->data)[0] = ((int64_t *)tg_node_value(t)->data)[1] = 7;
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_cross_entropy(g, x, t, NULL, 7, MEAN, 0.1);
    cr_assert(y && tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    cr_expect(isnan(((const float *)tg_node_value(y)->data)[0]));
    cr_assert(tg_graph_backward(g, y, NULL) == TG_OK);
    for (int i = 0; i < 6; i++) cr_expect_eq(((const float *)tg_node_grad(x)->data)[i], 0.0f);
    tg_graph_free(g);
}

/* Samples are split across threads; the reduction is serial: the same bits
 * with 1 and 4 threads. */
Test(crossentropy, thread_count_invariant)
{
    float loss[2], *dx[2];
    const int64_t N = 3000, C = 7;
    for (int pass = 0; pass < 2; pass++) {
        cr_assert(tg_threads_set(pass ? 4 : 1) == TG_OK);
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){N, C});
        tg_node *t = tg_input(g, "t", TG_I64, 1, (int64_t[]){N});
        tt_randn((tg_tensor *)tg_node_value(x), 1);
        for (int64_t i = 0; i < N; i++)
            ((int64_t *)tg_node_value(t)->data)[i] = i % 11 == 0 ? IGN : (i * 5) % C;
        tg_node_set_requires_grad(x, true);
        tg_node *y = tg_cross_entropy(g, x, t, NULL, IGN, MEAN, 0.05);
        cr_assert(y && tg_graph_forward(g) == TG_OK && tg_graph_backward(g, y, NULL) == TG_OK);
        loss[pass] = ((const float *)tg_node_value(y)->data)[0];
        dx[pass] = malloc((size_t)(N * C) * sizeof(float));
        memcpy(dx[pass], tg_node_grad(x)->data, (size_t)(N * C) * sizeof(float));
        tg_graph_free(g);
    }
    tg_threads_set(0);
    cr_expect_eq(loss[0], loss[1]);
    cr_expect(memcmp(dx[0], dx[1], (size_t)(N * C) * sizeof(float)) == 0);
    free(dx[0]);
    free(dx[1]);
}

/* ---- bad input (OPS.md 15 table and 19: cross_entropy) ---- */

typedef struct {
    tg_graph *g;
    tg_node  *x, *t;
} ce_in;

static ce_in make(int xr, const int64_t *xs, tg_dtype tdt, int tr, const int64_t *ts)
{
    ce_in c;
    c.g = tg_graph_new(TG_F32);
    c.x = tg_input(c.g, "x", TG_F32, xr, xs);
    c.t = tg_input(c.g, "t", tdt, tr, ts);
    return c;
}

static void expect_build_error(ce_in c, tg_node *w, int64_t ignore, tg_reduction red, double ls,
                               const char *msg)
{
    cr_assert_null(tg_cross_entropy(c.g, c.x, c.t, w, ignore, red, ls));
    tt_assert_graph_error(c.g, msg);
    tg_graph_free(c.g);
}

Test(crossentropy_errors, target_out_of_bounds)
{
    const int64_t bad[3] = {3, -1, 100};
    for (int k = 0; k < 3; k++) {
        ce_in c = make(2, (int64_t[]){2, 3}, TG_I64, 1, (int64_t[]){2});
        ((int64_t *)tg_node_value(c.t)->data)[1] = bad[k];
        tg_node *y = tg_cross_entropy(c.g, c.x, c.t, NULL, IGN, MEAN, k == 2 ? 0.1 : 0);
        cr_assert(y);
        cr_assert_eq(tg_graph_forward(c.g), TG_ERR_INVALID);
        char want[64];
        snprintf(want, sizeof want, "Target %lld is out of bounds.", (long long)bad[k]);
        tt_assert_last_error(want);
        tg_graph_free(c.g);
    }
}

Test(crossentropy_errors, batch_mismatch)
{
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_I64, 1, (int64_t[]){3}), NULL, IGN, MEAN, 0,
                       "Expected input batch_size (2) to match target batch_size (3).");
    expect_build_error(make(3, (int64_t[]){2, 3, 4}, TG_I64, 2, (int64_t[]){3, 4}), NULL, IGN,
                       MEAN, 0, "Expected input batch_size (2) to match target batch_size (3).");
}

Test(crossentropy_errors, kdim_mismatch)
{
    expect_build_error(make(3, (int64_t[]){2, 3, 4}, TG_I64, 2, (int64_t[]){2, 5}), NULL, IGN,
                       MEAN, 0, "Expected target size [2, 4], got [2, 5]");
    expect_build_error(make(3, (int64_t[]){2, 3, 4}, TG_I64, 1, (int64_t[]){2}), NULL, IGN, MEAN,
                       0, "Expected target size [2, 4], got [2]");
    expect_build_error(make(3, (int64_t[]){2, 3, 4}, TG_I64, 3, (int64_t[]){2, 4, 1}), NULL, IGN,
                       MEAN, 0, "Expected target size [2, 4], got [2, 4, 1]");
}

Test(crossentropy_errors, float_target_of_wrong_shape)
{
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_F32, 1, (int64_t[]){2}), NULL, IGN, MEAN, 0,
                       "expected scalar type Long but found Float");
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_BOOL, 1, (int64_t[]){2}), NULL, IGN, MEAN, 0,
                       "expected scalar type Long but found Bool");
}

Test(crossentropy_errors, integer_probability_target)
{
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_I64, 2, (int64_t[]){2, 3}), NULL, IGN, MEAN,
                       0, "Expected floating point type for target with class probabilities, got "
                          "Long");
}

Test(crossentropy_errors, label_smoothing_outside_0_1)
{
    const double bad[3] = {1.5, -0.5, NAN};
    const char *msg[3] = {"label_smoothing must be between 0.0 and 1.0. Got: 1.5",
                          "label_smoothing must be between 0.0 and 1.0. Got: -0.5",
                          "label_smoothing must be between 0.0 and 1.0. Got: nan"};
    for (int k = 0; k < 3; k++)
        expect_build_error(make(2, (int64_t[]){2, 3}, TG_I64, 1, (int64_t[]){2}), NULL, IGN, MEAN,
                           bad[k], msg[k]);
}

Test(crossentropy_errors, weight_not_of_size_c)
{
    ce_in c = make(2, (int64_t[]){2, 3}, TG_I64, 1, (int64_t[]){2});
    expect_build_error(c, tg_input(c.g, "w", TG_F32, 1, (int64_t[]){2}), IGN, MEAN, 0,
                       "weight tensor should be defined either for all 3 classes or no classes "
                       "but got weight tensor of shape: [2]");
    c = make(2, (int64_t[]){2, 3}, TG_F32, 2, (int64_t[]){2, 3});
    expect_build_error(c, tg_input(c.g, "w", TG_F32, 2, (int64_t[]){1, 3}), -100, MEAN, 0,
                       "weight tensor should be defined either for all 3 classes or no classes "
                       "but got weight tensor of shape: [1, 3]");
}

Test(crossentropy_errors, weight_requires_grad)
{
    ce_in c = make(2, (int64_t[]){2, 3}, TG_I64, 1, (int64_t[]){2});
    tg_node *w = tg_input(c.g, "w", TG_F32, 1, (int64_t[]){3});
    tg_node_set_requires_grad(w, true);
    expect_build_error(c, w, IGN, MEAN, 0, "not differentiable with respect to argument 'weight'");
    /* marked after the build: the forward refuses */
    c = make(2, (int64_t[]){2, 3}, TG_I64, 1, (int64_t[]){2});
    w = tg_input(c.g, "w", TG_F32, 1, (int64_t[]){3});
    cr_assert(tg_cross_entropy(c.g, c.x, c.t, w, IGN, MEAN, 0));
    tg_node_set_requires_grad(w, true);
    cr_assert_eq(tg_graph_forward(c.g), TG_ERR_INVALID);
    tt_assert_last_error("not differentiable with respect to argument 'weight'");
    tg_graph_free(c.g);
}

Test(crossentropy_errors, bad_reduction)
{
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_I64, 1, (int64_t[]){2}), NULL, IGN,
                       (tg_reduction)3, 0, "3 is not a valid value for reduction");
    tg_reduction r;
    cr_assert_eq(tg_reduction_parse("avg", &r), TG_ERR_INVALID);
    tt_assert_last_error("avg is not a valid value for reduction");
}

Test(crossentropy_errors, ignore_index_with_probabilities)
{
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_F32, 2, (int64_t[]){2, 3}), NULL, 1, MEAN,
                       0, "ignore_index is not supported for floating point target");
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_F32, 2, (int64_t[]){2, 3}), NULL, 0, MEAN,
                       0, "ignore_index is not supported for floating point target");
}

Test(crossentropy_errors, target_rank)
{
    expect_build_error(make(2, (int64_t[]){2, 3}, TG_I64, 2, (int64_t[]){2, 1}), NULL, IGN, MEAN,
                       0, "0D or 1D target tensor expected, multi-target not supported");
    expect_build_error(make(1, (int64_t[]){3}, TG_I64, 1, (int64_t[]){1}), NULL, IGN, MEAN, 0,
                       "size mismatch (got input: [3], target: [1])");
    expect_build_error(make(0, NULL, TG_I64, 0, NULL), NULL, IGN, MEAN, 0,
                       "input must have at least 1 dimension");
    expect_build_error(make(3, (int64_t[]){2, 3, 4}, TG_I64, 0, NULL), NULL, IGN, MEAN, 0,
                       "Expected target size [2, 4], got []");
}
