/*
 * test_ops_basic.c - the first ops against PyTorch fixtures (forward and every
 * input gradient, float32) and gradcheck in float64; then their bad inputs.
 * Fixtures: tests/fixtures/gen_basic.py.
 */
#include <math.h>

#include "testutil.h"
#include "graph_impl.h"

#include <criterion/parameterized.h>

typedef tg_node *(*build_fn)(tg_graph *g, tg_node **in);

typedef struct {
    const char *name;   /* fixture folder under basic/ */
    int         n_in;
    build_fn    build;
} op_case;

static tg_node *b_add(tg_graph *g, tg_node **in) { return tg_add(g, in[0], in[1]); }
static tg_node *b_sub(tg_graph *g, tg_node **in) { return tg_sub(g, in[0], in[1]); }
static tg_node *b_mul(tg_graph *g, tg_node **in) { return tg_mul(g, in[0], in[1]); }
static tg_node *b_div(tg_graph *g, tg_node **in) { return tg_div(g, in[0], in[1]); }
static tg_node *b_scale(tg_graph *g, tg_node **in) { return tg_scale(g, in[0], 2.5); }
static tg_node *b_neg(tg_graph *g, tg_node **in) { return tg_neg(g, in[0]); }
static tg_node *b_exp(tg_graph *g, tg_node **in) { return tg_exp(g, in[0]); }
static tg_node *b_log(tg_graph *g, tg_node **in) { return tg_log(g, in[0]); }
static tg_node *b_sqrt(tg_graph *g, tg_node **in) { return tg_sqrt(g, in[0]); }
static tg_node *b_square(tg_graph *g, tg_node **in) { return tg_square(g, in[0]); }
static tg_node *b_relu(tg_graph *g, tg_node **in) { return tg_relu(g, in[0]); }
static tg_node *b_sum_dims(tg_graph *g, tg_node **in)
{
    return tg_sum(g, in[0], (int64_t[]){0, 2}, 2, false);
}
static tg_node *b_sum_keepdim(tg_graph *g, tg_node **in)
{
    return tg_sum(g, in[0], (int64_t[]){-1}, 1, true);
}
static tg_node *b_sum_all(tg_graph *g, tg_node **in) { return tg_sum(g, in[0], NULL, 0, false); }
static tg_node *b_mean_dims(tg_graph *g, tg_node **in)
{
    return tg_mean(g, in[0], (int64_t[]){1}, 1, false);
}
static tg_node *b_mean_all(tg_graph *g, tg_node **in) { return tg_mean(g, in[0], NULL, 0, false); }
static tg_node *b_linear(tg_graph *g, tg_node **in) { return tg_linear(g, in[0], in[1], in[2]); }
static tg_node *b_linear_nb(tg_graph *g, tg_node **in) { return tg_linear(g, in[0], in[1], NULL); }
static tg_node *b_mse_mean(tg_graph *g, tg_node **in)
{
    return tg_mse_loss(g, in[0], in[1], TG_REDUCTION_MEAN);
}
static tg_node *b_mse_sum(tg_graph *g, tg_node **in)
{
    return tg_mse_loss(g, in[0], in[1], TG_REDUCTION_SUM);
}
static tg_node *b_mse_none(tg_graph *g, tg_node **in)
{
    return tg_mse_loss(g, in[0], in[1], TG_REDUCTION_NONE);
}
static tg_node *b_permute(tg_graph *g, tg_node **in)
{
    return tg_permute(g, in[0], (int[]){2, 0, 1});
}
static tg_node *b_transpose(tg_graph *g, tg_node **in) { return tg_transpose(g, in[0], 0, 1); }

static op_case cases[] = {
    {"add_bcast", 2, b_add},         {"sub_bcast", 2, b_sub},
    {"mul_bcast", 2, b_mul},         {"div", 2, b_div},
    {"mul_scalar", 2, b_mul},        {"scale", 1, b_scale},
    {"neg", 1, b_neg},               {"exp", 1, b_exp},
    {"log", 1, b_log},               {"sqrt", 1, b_sqrt},
    {"square", 1, b_square},         {"relu", 1, b_relu},
    {"sum_dims", 1, b_sum_dims},     {"sum_keepdim", 1, b_sum_keepdim},
    {"sum_all", 1, b_sum_all},       {"mean_dims", 1, b_mean_dims},
    {"mean_all", 1, b_mean_all},     {"linear", 3, b_linear},
    {"linear_nobias", 2, b_linear_nb}, {"linear_1d", 3, b_linear},
    {"mse_mean", 2, b_mse_mean},     {"mse_sum", 2, b_mse_sum},
    {"mse_none", 2, b_mse_none},     {"permute", 1, b_permute},
    {"transpose", 1, b_transpose},
};

/* Criterion re-executes the test binary, so parameters must not hold pointers:
 * each parameter is an index into cases[]. */
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params case_params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

ParameterizedTestParameters(ops_basic, fixture) { return case_params(); }

/* Build the case on float inputs of dtype dt holding the fixture's inputs. */
static tg_node *build_case(const op_case *c, tg_graph *g, tg_node **in, tg_tensor **x)
{
    char file[32];
    for (int i = 0; i < c->n_in; i++) {
        snprintf(file, sizeof file, "in%d.npy", i);
        char dir[96];
        snprintf(dir, sizeof dir, "basic/%s", c->name);
        x[i] = tt_load(dir, file);
        in[i] = tg_input(g, file, tg_graph_dtype(g), x[i]->rank, x[i]->shape);
        cr_assert(tg_node_set(in[i], x[i]) == TG_OK);
        cr_assert(tg_node_set_requires_grad(in[i], true) == TG_OK);
    }
    return c->build(g, in);
}

ParameterizedTest(int *idx, ops_basic, fixture)
{
    const op_case *c = &cases[*idx];
    char dir[96], file[32];
    snprintf(dir, sizeof dir, "basic/%s", c->name);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in[4];
    tg_tensor *x[4];
    tg_node *y = build_case(c, g, in, x);
    cr_assert(y, "%s: %s", c->name, tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    tg_tensor *want = tt_load(dir, "out0.npy"), *dy = tt_load(dir, "dout0.npy");
    tt_assert_close(tg_node_value(y), want, 1e-6, 1e-5, c->name);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK, "%s", tg_last_error());
    for (int i = 0; i < c->n_in; i++) {
        snprintf(file, sizeof file, "grad%d.npy", i);
        tg_tensor *gw = tt_load(dir, file);
        tt_assert_close(tg_node_grad(in[i]), gw, 1e-6, 1e-5, file);
        tg_tensor_free(gw);
        tg_tensor_free(x[i]);
    }
    tg_tensor_free(want);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

ParameterizedTestParameters(ops_basic, gradcheck) { return case_params(); }

ParameterizedTest(int *idx, ops_basic, gradcheck)
{
    const op_case *c = &cases[*idx];
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *in[4];
    tg_tensor *x[4];
    tg_node *y = build_case(c, g, in, x);
    cr_assert(y, "%s: %s", c->name, tg_graph_error(g));
    tt_gradcheck(g, y, 1);
    for (int i = 0; i < c->n_in; i++) tg_tensor_free(x[i]);
    tg_graph_free(g);
}

/* ---- bad input: each gets its specific message, never a crash ---- */

static tg_node *in_f32(tg_graph *g, int rank, const int64_t *shape)
{
    return tg_input(g, "x", TG_F32, rank, shape);
}

Test(ops_basic_errors, broadcast_mismatch)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = in_f32(g, 2, (int64_t[]){2, 3}), *b = in_f32(g, 2, (int64_t[]){2, 4});
    cr_assert_null(tg_add(g, a, b));
    tt_assert_graph_error(g, "The size of tensor a (3) must match the size of tensor b (4) at "
                             "non-singleton dimension 1");
    tg_graph_free(g);
}

Test(ops_basic_errors, reduce_bad_dims)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_sum(g, x, (int64_t[]){2}, 1, false));
    tt_assert_graph_error(g, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_mean(g, x, (int64_t[]){1, -1}, 2, false));
    tt_assert_graph_error(g, "dim 1 appears multiple times in the list of dims");
    tg_graph_free(g);
}

Test(ops_basic_errors, mean_of_integers)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "i", TG_I64, 1, (int64_t[]){3});
    cr_assert_null(tg_mean(g, x, NULL, 0, false));
    tt_assert_graph_error(g, "mean: input must be float32, got int64");
    tg_graph_free(g);
}

Test(ops_basic_errors, linear_shapes)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, 3, (int64_t[]){2, 7, 4}), *w = in_f32(g, 2, (int64_t[]){5, 3});
    cr_assert_null(tg_linear(g, x, w, NULL));
    tt_assert_graph_error(g, "mat1 and mat2 shapes cannot be multiplied (14x4 and 3x5)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 4});
    w = in_f32(g, 2, (int64_t[]){5, 4});
    tg_node *b = in_f32(g, 1, (int64_t[]){4});
    cr_assert_null(tg_linear(g, x, w, b));
    tt_assert_graph_error(g, "bias must have shape [5]");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 4});
    w = in_f32(g, 3, (int64_t[]){5, 4, 1});
    cr_assert_null(tg_linear(g, x, w, NULL));
    tt_assert_graph_error(g, "weight must be 2-d");
    tg_graph_free(g);
}

Test(ops_basic_errors, mse)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = in_f32(g, 2, (int64_t[]){3, 1}), *b = in_f32(g, 1, (int64_t[]){3});
    cr_assert_null(tg_mse_loss(g, a, b, TG_REDUCTION_MEAN));
    tt_assert_graph_error(g, "input shape [3, 1] and target shape [3] differ");
    tg_graph_free(g);
    tg_reduction r;
    cr_assert_eq(tg_reduction_parse("avg", &r), TG_ERR_INVALID);
    tt_assert_last_error("avg is not a valid value for reduction");
}

Test(ops_basic_errors, reshape_and_permute)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_reshape(g, x, 2, (int64_t[]){4, -1}));
    tt_assert_graph_error(g, "shape '[4, -1]' is invalid for input of size 6");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_permute(g, x, (int[]){1, 1}));
    tt_assert_graph_error(g, "repeated dim 1");
    tg_graph_free(g);
}

/* One op node on both sides of a binary op (h + h, h * h, h - h, h / h), the
 * plan starting as NaN: the gradient both sides add into is zeroed once and
 * gets both contributions. h = 3x, so d/dx is 6, 18x, 0 and 0. */
Test(ops_basic, same_operand_twice_through_an_op)
{
    const int64_t n = 40000;   /* several chunks of the thread pool */
    tg_node *(*op[4])(tg_graph *, tg_node *, tg_node *) = {tg_add, tg_mul, tg_sub, tg_div};
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
        tg_node_set_requires_grad(x, true);
        float *xv = (float *)tg_node_value(x)->data;
        for (int64_t i = 0; i < n; i++) xv[i] = 0.5f + (float)(i % 7);
        tg_node *h = tg_scale(g, x, 3.0);
        tg_node *y = op[k](g, h, h);
        cr_assert_eq(tg_graph_plan(g), TG_OK);
        memset(g->block, 0xff, g->block_bytes);
        tg_tensor *dy = tg_tensor_new(TG_F32, 1, &n);
        for (int64_t i = 0; i < n; i++) ((float *)dy->data)[i] = 1;
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
        const float *dx = tg_node_grad(x)->data;
        for (int64_t i = 0; i < n; i++) {
            float want = k == 0 ? 6.0f : k == 1 ? 18.0f * xv[i] : 0.0f;
            cr_assert_float_eq(dx[i], want, 1e-4f * (1 + fabsf(want)), "op %d at %lld: %g", k,
                               (long long)i, dx[i]);
        }
        tg_tensor_free(dy);
        tg_graph_free(g);
    }
}
