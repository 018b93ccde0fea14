/*
 * test_activation.c - gelu (exact and tanh) against PyTorch, including x = 0
 * and large |x|; F64 gradcheck; the approximate argument's errors.
 * Fixtures: tests/fixtures/gen_nn.py.
 */
#include "nn_fixture.h"

#include <math.h>
#include <criterion/parameterized.h>

static int b_none(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_gelu(g, in[0], TG_GELU_NONE));
}
static int b_tanh(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_gelu(g, in[0], TG_GELU_TANH));
}

static const nn_case cases[] = {
    {"gelu_none", 1, b_none, false},
    {"gelu_tanh", 1, b_tanh, false},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

ParameterizedTestParameters(activation, fixture) { return params(); }
ParameterizedTest(int *i, activation, fixture) { nn_fixture_run(&cases[*i]); }

ParameterizedTestParameters(activation, gradcheck) { return params(); }
ParameterizedTest(int *i, activation, gradcheck) { nn_gradcheck_run(&cases[*i]); }

/* OPS.md 10: gelu'(0) = 0.5, gelu'(1) = 1.0833 (exact form), in F64. */
Test(activation, known_derivatives)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 1, (int64_t[]){2});
    double *xv = tg_node_value(x)->data;
    xv[0] = 0, xv[1] = 1;
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_gelu(g, x, TG_GELU_NONE);
    tg_tensor *dy = tg_tensor_new(TG_F64, 1, (int64_t[]){2});
    ((double *)dy->data)[0] = ((double *)dy->data)[1] = 1;
    cr_assert(tg_graph_forward(g) == TG_OK && tg_graph_backward(g, y, dy) == TG_OK);
    const double *d = tg_node_grad(x)->data, *yv = tg_node_value(y)->data;
    cr_expect_eq(yv[0], 0);
    cr_expect(fabs(yv[1] - 0.8413447460685429) < 1e-15, "gelu(1) = %.17g", yv[1]);
    cr_expect(fabs(d[0] - 0.5) < 1e-15, "gelu'(0) = %.17g", d[0]);
    cr_expect(fabs(d[1] - 1.0833154705876864) < 1e-15, "gelu'(1) = %.17g", d[1]);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

Test(activation, parse)
{
    tg_gelu_approx a = TG_GELU_APPROX_COUNT;
    cr_assert_eq(tg_gelu_approx_parse("none", &a), TG_OK);
    cr_assert_eq(a, TG_GELU_NONE);
    cr_assert_eq(tg_gelu_approx_parse("tanh", &a), TG_OK);
    cr_assert_eq(a, TG_GELU_TANH);
    cr_assert_str_eq(tg_gelu_approx_name(TG_GELU_TANH), "tanh");
}

/* ---- bad input (OPS.md 19: gelu) ---- */

Test(activation_errors, approximate_not_none_or_tanh)
{
    tg_gelu_approx a = TG_GELU_TANH;
    cr_assert_eq(tg_gelu_approx_parse("Tanh", &a), TG_ERR_INVALID);
    tt_assert_last_error("approximate argument must be either none or tanh.");
    cr_assert_eq(a, TG_GELU_TANH);
    cr_assert_eq(tg_gelu_approx_parse(NULL, &a), TG_ERR_INVALID);
    tt_assert_last_error("approximate argument must be either none or tanh.");

    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){3});
    cr_assert_null(tg_gelu(g, x, (tg_gelu_approx)7));
    tt_assert_graph_error(g, "gelu: approximate argument must be either none or tanh.");
    tg_graph_free(g);
}

Test(activation_errors, integer_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "i", TG_I64, 1, (int64_t[]){3});
    cr_assert_null(tg_gelu(g, x, TG_GELU_NONE));
    tt_assert_graph_error(g, "gelu: input must be float32, got int64");
    tg_graph_free(g);
}
