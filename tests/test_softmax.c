/*
 * test_softmax.c - softmax, log_softmax and softmax_scaled against PyTorch
 * fixtures (forward and gradient, float32, -inf entries, fully masked rows,
 * +inf/NaN rows), F64 gradcheck, large multi-threaded shapes against a plain
 * double reference, and the bad inputs of OPS.md 19.
 * Fixtures: tests/fixtures/gen_select.py.
 */
#include "testutil.h"

#include <criterion/parameterized.h>
#include <limits.h>
#include <math.h>

#include "select_case.h"

#define OP1(fn, call)                                                           \
    static tg_node *fn(tg_graph *g, tg_node **in, tg_node **o)                  \
    {                                                                           \
        (void)o;                                                                \
        return call;                                                            \
    }
OP1(sm_last, tg_softmax(g, in[0], -1))
OP1(sm_d1, tg_softmax(g, in[0], 1))
OP1(sm_d0, tg_softmax(g, in[0], 0))
OP1(ls_last, tg_log_softmax(g, in[0], -1))
OP1(ls_d1, tg_log_softmax(g, in[0], 1))
OP1(ls_d0, tg_log_softmax(g, in[0], 0))
OP1(sm_scaled, tg_softmax_scaled(g, in[0], -1, 0.35355339059327373))
OP1(sm_scaled_d1, tg_softmax_scaled(g, in[0], 1, 2.0))

static const sel_case cases[] = {
    {"softmax_last", 1, sm_last, true},
    {"softmax_dim1", 1, sm_d1, true},
    {"softmax_dim0", 1, sm_d0, true},
    {"softmax_row_all_ninf", 1, sm_last, false},      /* NaN row and NaN gradient */
    {"softmax_col_all_ninf", 1, sm_d0, false},
    {"softmax_inf_nan", 1, sm_d1, false},
    {"softmax_0d", 1, sm_d0, true},
    {"softmax_scaled", 1, sm_scaled, true},
    {"softmax_scaled_dim1", 1, sm_scaled_d1, true},
    /* log_softmax(-inf) = -inf: no finite differences there; the finite cases below */
    {"log_softmax_last", 1, ls_last, false},
    {"log_softmax_dim1", 1, ls_d1, false},
    {"log_softmax_dim0", 1, ls_d0, false},
    {"log_softmax_finite_last", 1, ls_last, true},
    {"log_softmax_finite_dim1", 1, ls_d1, true},
    {"log_softmax_row_all_ninf", 1, ls_last, false},
    {"log_softmax_col_all_ninf", 1, ls_d0, false},
    {"log_softmax_inf_nan", 1, ls_d1, false},
    {"log_softmax_0d", 1, ls_d0, true},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_idx[N_CASES];

ParameterizedTestParameters(softmax, fixture)
{
    return sel_params(cases, N_CASES, false, case_idx);
}
ParameterizedTest(int *i, softmax, fixture) { sel_fixture(&cases[*i]); }

ParameterizedTestParameters(softmax, gradcheck)
{
    return sel_params(cases, N_CASES, true, case_idx);
}
ParameterizedTest(int *i, softmax, gradcheck) { sel_gradcheck(&cases[*i]); }

/* The fixture must really hold a NaN row (so the NaN cases above test something). */
Test(softmax, fully_masked_row_is_nan)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3});
    tg_node *y = tg_softmax(g, x, -1);
    float *xd = tg_node_value(x)->data;
    for (int i = 0; i < 3; i++) xd[i] = -INFINITY;        /* row 0 masked, row 1 zeros */
    cr_assert(tg_graph_forward(g) == TG_OK);
    const float *yd = tg_node_value(y)->data;
    for (int i = 0; i < 3; i++) {
        cr_assert(isnan(yd[i]), "masked row element %d = %g", i, yd[i]);
        cr_assert_float_eq(yd[3 + i], 1.0f / 3, 1e-7);
    }
    tg_graph_free(g);
}

/* Stable form: the max is subtracted, so huge logits do not overflow exp. */
Test(softmax, large_logits_stable)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 1, (int64_t[]){3});
    float *xd = tg_node_value(x)->data;
    xd[0] = 1000;
    xd[1] = 1001;
    xd[2] = 999;
    tg_node *y = tg_softmax(g, x, 0), *z = tg_log_softmax(g, x, 0);
    cr_assert(tg_graph_forward(g) == TG_OK);
    const float *yd = tg_node_value(y)->data, *zd = tg_node_value(z)->data;
    double s = 1 + exp(1.0) + exp(-1.0);
    cr_assert(fabs(yd[1] - exp(1.0) / s) < 1e-6 && fabs(yd[2] - exp(-1.0) / s) < 1e-6);
    cr_assert(fabs(zd[0] + log(s)) < 1e-5, "log_softmax %g, want %g", zd[0], -log(s));
    tg_graph_free(g);
}

/* tg_softmax_scaled(x, s) == tg_softmax(tg_scale(x, s)) bit for bit; gradient includes s. */
Test(softmax, scaled_equals_scale_then_softmax)
{
    tg_graph *g = tg_graph_new(TG_F32);
    int64_t shape[2] = {5, 37};
    tg_node *x = sel_in(g, 2, shape);
    tt_randn((tg_tensor *)tg_node_value(x), 3);
    tg_node_set_requires_grad(x, true);
    tg_node *a = tg_softmax_scaled(g, x, -1, 0.125);
    tg_node *b = tg_softmax(g, tg_scale(g, x, 0.125), -1);
    tg_node *d = tg_sub(g, a, b);
    cr_assert(d, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    const float *ya = tg_node_value(a)->data, *yb = tg_node_value(b)->data;
    for (int i = 0; i < 5 * 37; i++) cr_assert_eq(ya[i], yb[i], "element %d", i);
    tg_graph_free(g);
}

/* Many rows (several thread-pool chunks), last dim and a strided dim,
 * against a plain double reference of forward and backward. */
static void big_case(int dim, bool logsm)
{
    int64_t shape[3] = {7, 300, 40};
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = sel_in(g, 3, shape);
    tt_randn((tg_tensor *)tg_node_value(x), 11);
    tg_node_set_requires_grad(x, true);
    tg_node *y = logsm ? tg_log_softmax(g, x, dim) : tg_softmax(g, x, dim);
    cr_assert(tg_graph_forward(g) == TG_OK);
    tg_tensor *dy = tg_tensor_new(TG_F64, 3, shape);
    tt_randn(dy, 12);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK);
    const double *X = tg_node_value(x)->data, *Y = tg_node_value(y)->data, *DY = dy->data;
    const double *DX = tg_node_grad(x)->data;
    int64_t n = shape[dim], inner = 1, outer = 1;
    for (int d = dim + 1; d < 3; d++) inner *= shape[d];
    for (int d = 0; d < dim; d++) outer *= shape[d];
    double worst = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const int64_t b = o * n * inner + i;
            double m = -INFINITY, s = 0, sdy = 0, dot = 0;
            for (int64_t j = 0; j < n; j++) m = fmax(m, X[b + j * inner]);
            for (int64_t j = 0; j < n; j++) s += exp(X[b + j * inner] - m);
            for (int64_t j = 0; j < n; j++) {
                double p = exp(X[b + j * inner] - m) / s;
                sdy += DY[b + j * inner];
                dot += DY[b + j * inner] * p;
            }
            for (int64_t j = 0; j < n; j++) {
                int64_t k = b + j * inner;
                double p = exp(X[k] - m) / s;
                double want_y = logsm ? X[k] - m - log(s) : p;
                double want_dx = logsm ? DY[k] - p * sdy : p * (DY[k] - dot);
                worst = fmax(worst, fabs(Y[k] - want_y) + fabs(DX[k] - want_dx));
            }
        }
    cr_assert(worst < 1e-12, "dim %d log %d: worst difference %g", dim, logsm, worst);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

Test(softmax, big_last_dim) { big_case(2, false); }
Test(softmax, big_strided_dim) { big_case(1, false); }
Test(softmax, big_log_last_dim) { big_case(2, true); }
Test(softmax, big_log_dim0) { big_case(0, true); }

Test(softmax, empty_dim)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){3, 0});
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_softmax(g, x, 1), *z = tg_log_softmax(g, x, 0);
    cr_assert(y && z, "%s", tg_graph_error(g));
    cr_assert_eq(tg_node_value(y)->numel, 0);
    cr_assert_eq(tg_node_value(y)->shape[0], 3);
    cr_assert(tg_graph_forward(g) == TG_OK);
    tg_tensor *dy = tg_tensor_new(TG_F32, 2, (int64_t[]){3, 0});
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK, "%s", tg_last_error());
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* ---- bad input (OPS.md 19: softmax missing dim, bad dim) ---- */

Test(softmax_errors, bad_dim)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_softmax(g, x, 2));
    tt_assert_graph_error(g, "softmax: Dimension out of range (expected to be in range of [-2, 1], "
                             "but got 2)");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = sel_in(g, 0, NULL);
    cr_assert_null(tg_log_softmax(g, x, -2));
    tt_assert_graph_error(g, "log_softmax: Dimension out of range (expected to be in range of "
                             "[-1, 0], but got -2)");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = sel_in(g, 3, (int64_t[]){2, 3, 4});
    cr_assert_null(tg_softmax_scaled(g, x, -4, 0.5));
    tt_assert_graph_error(g, "but got -4");
    tg_graph_free(g);
}

/* C has no optional arguments, so dim cannot be left out; a caller's "no dim"
 * sentinel (INT_MIN, INT_MAX) must be rejected, never wrapped into range. */
Test(softmax_errors, missing_dim_sentinel)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_softmax(g, x, INT_MIN));
    tt_assert_graph_error(g, "Dimension out of range");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = sel_in(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_log_softmax(g, x, INT_MAX));
    tt_assert_graph_error(g, "Dimension out of range");
    tg_graph_free(g);
}

Test(softmax_errors, integer_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "i", TG_I64, 1, (int64_t[]){3});
    cr_assert_null(tg_softmax(g, x, 0));
    tt_assert_graph_error(g, "softmax: input must be float32, got int64");
    tg_graph_free(g);
}
