/*
 * test_batchnorm.c - batch_norm and buffers: nn.BatchNorm1d against PyTorch
 * (training and eval, (N, C) and (N, C, L), float32 and float64: y, dx,
 * dweight, dbias and the running statistics after the step), gradcheck in
 * float64 in both modes, the running update once per forward (momentum 0
 * and 1 too), an eval graph reading what a training graph left, thread-count
 * invariance, every bad input, and the buffers in the store: not counted as
 * parameters, untouched by optimizers, saved and loaded with
 * tg_params_save/load and checkpoints bit-exact (num_batches_tracked as I64),
 * a tg_trainer run stopped and resumed ending with the uninterrupted run's
 * bits, PyTorch's own state_dict file loaded strictly, a file without them
 * refused naming the key, the oracle's weights + buffers files
 * (TG_LOAD_PARAMS_ONLY / TG_LOAD_BUFFERS_ONLY), buffers marked in diagrams.
 * Fixtures: tests/fixtures/gen_batchnorm.py.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/parameterized.h>

#include "checkpoint.h"
#include "modules.h"
#include "trainer.h"

#define PREFIX "encoder.norm"

/* ---- a BatchNorm1d module on a store, built on an input x ---- */

typedef struct {
    tg_params       *ps;
    tg_batchnorm_mod m;
    tg_graph        *g;
    tg_node         *x, *y;
} bn_model;

static void model_init(bn_model *b, tg_dtype dt, int64_t C)
{
    memset(b, 0, sizeof *b);
    b->ps = tg_params_new(dt);
    cr_assert(b->ps);
    cr_assert_eq(tg_batchnorm_mod_init(&b->m, b->ps, PREFIX, "1", C), TG_OK, "%s",
                 tg_last_error());
}

/* the graph: x (rank, shape) requiring grad, y = BatchNorm1d(x) */
static void model_build(bn_model *b, bool training, int rank, const int64_t *shape)
{
    tg_dtype dt = tg_params_dtype(b->ps);
    b->g = tg_graph_new(dt);
    tg_graph_set_training(b->g, training);
    b->x = tg_input(b->g, "x", dt, rank, shape);
    cr_assert_eq(tg_node_set_requires_grad(b->x, true), TG_OK);
    b->y = tg_batchnorm_mod_build(b->g, &b->m, b->x);
    cr_assert(b->y, "%s", tg_graph_error(b->g));
}

static void model_free(bn_model *b)
{
    tg_graph_free(b->g);
    tg_params_free(b->ps);
}

static void set_from(tg_tensor *dst, const char *dir, const char *file)
{
    tg_tensor *t = tt_load(dir, file);
    cr_assert_eq(tg_tensor_copy(dst, t), TG_OK, "%s/%s: %s", dir, file, tg_last_error());
    tg_tensor_free(t);
}

static void expect_close(const tg_tensor *got, const char *dir, const char *file, double tol)
{
    tg_tensor *want = tt_load(dir, file);
    char what[96];
    snprintf(what, sizeof what, "%s/%s", dir, file);
    tt_assert_close(got, want, tol, tol, what);
    tg_tensor_free(want);
}

static int64_t nbt(const bn_model *b)
{
    return ((const int64_t *)b->m.num_batches_tracked->value.data)[0];
}

/* ---- against PyTorch ---- */

typedef struct {
    const char *name;
    tg_dtype    dt;
} fx_case;

static const fx_case fx_cases[] = {
    {"train_ncl", TG_F32},     {"train_nc", TG_F32},      {"eval_ncl", TG_F32},
    {"eval_nc", TG_F32},       {"train_ncl_m03", TG_F32}, {"train_nc_twice", TG_F32},
    {"train_pairs", TG_F32},   {"train_ncl", TG_F64},     {"eval_ncl", TG_F64},
    {"train_nc_twice", TG_F64},
};
#define N_FX (int)(sizeof fx_cases / sizeof *fx_cases)
static int fx_index[N_FX];   /* the parameters are indices: a test process may be a fresh exec */

ParameterizedTestParameters(batchnorm, fixture)
{
    for (int i = 0; i < N_FX; i++) fx_index[i] = i;
    return cr_make_param_array(int, fx_index, N_FX);
}

/* case.txt: "training=true momentum=0.1 eps=1e-05 steps=1" */
static void read_case(const char *dir, bool *training, double *momentum, double *eps, int *steps)
{
    char path[160], tr[8];
    snprintf(path, sizeof path, "%s/%s/case.txt", TT_FIXTURES, dir);
    char *text = tt_slurp(path, NULL);
    cr_assert(sscanf(text, "training=%5s momentum=%lf eps=%lf steps=%d", tr, momentum, eps,
                     steps) == 4, "%s: %s", path, text);
    *training = !strcmp(tr, "true");
    free(text);
}

/* forward and backward `steps` times on the fixture's x and dout, as the
 * generator ran the module; then y, the gradients of the last pass and the
 * buffers after all of them */
ParameterizedTest(int *i, batchnorm, fixture)
{
    const fx_case *c = &fx_cases[*i];
    char dir[64];
    snprintf(dir, sizeof dir, "batchnorm/%s", c->name);
    bool training;
    double momentum, eps;
    int steps;
    read_case(dir, &training, &momentum, &eps, &steps);
    tg_tensor *x = tt_load(dir, "in0.npy"), *dy = tt_load(dir, "dout0.npy");
    bn_model b;
    model_init(&b, c->dt, x->shape[1]);
    b.m.momentum = momentum;
    b.m.eps = eps;
    set_from(&b.m.running_mean->value, dir, "in1.npy");
    set_from(&b.m.running_var->value, dir, "in2.npy");
    set_from(&b.m.weight->value, dir, "in3.npy");
    set_from(&b.m.bias->value, dir, "in4.npy");
    model_build(&b, training, x->rank, x->shape);
    cr_assert_eq(tg_node_set(b.x, x), TG_OK);
    for (int s = 0; s < steps; s++) {
        tg_params_zero_grad(b.ps);
        cr_assert_eq(tg_graph_forward(b.g), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_graph_backward(b.g, b.y, dy), TG_OK, "%s", tg_last_error());
    }
    expect_close(tg_node_value(b.y), dir, "out0.npy", 1e-5);
    expect_close(tg_node_grad(b.x), dir, "grad0.npy", 1e-5);
    expect_close(&b.m.weight->grad, dir, "grad3.npy", 1e-5);
    expect_close(&b.m.bias->grad, dir, "grad4.npy", 1e-5);
    expect_close(&b.m.running_mean->value, dir, training ? "rm_after.npy" : "in1.npy", 1e-6);
    expect_close(&b.m.running_var->value, dir, training ? "rv_after.npy" : "in2.npy", 1e-6);
    tg_tensor *n = tt_load(dir, "nbt_after.npy");
    cr_assert_eq(n->dtype, TG_I64);
    cr_expect_eq(nbt(&b), ((const int64_t *)n->data)[0], "num_batches_tracked %lld",
                 (long long)nbt(&b));
    tg_tensor_free(n);
    tg_tensor_free(x);
    tg_tensor_free(dy);
    model_free(&b);
}

/* ---- gradcheck in float64: x, weight and bias, in both modes ---- */

typedef struct {
    bool    training;
    int     rank;
    int64_t shape[3];
} gc_case;

static const gc_case gc_cases[] = {
    {true, 3, {4, 3, 5}}, {true, 2, {6, 4}}, {false, 3, {3, 4, 2}}, {false, 2, {5, 3}},
    {true, 3, {1, 2, 3}},   /* N = 1, L = 3: batch statistics over L alone */
};

ParameterizedTestParameters(batchnorm, gradcheck)
{
    return cr_make_param_array(gc_case, gc_cases, sizeof gc_cases / sizeof *gc_cases);
}

ParameterizedTest(gc_case *c, batchnorm, gradcheck)
{
    bn_model b;
    int64_t C = c->shape[1];
    model_init(&b, TG_F64, C);
    tt_randn(&b.m.weight->value, 1);
    tt_randn(&b.m.bias->value, 2);
    tt_randn(&b.m.running_mean->value, 3);
    for (int64_t i = 0; i < C; i++) ((double *)b.m.running_var->value.data)[i] = 0.5 + 0.3 * i;
    model_build(&b, c->training, c->rank, c->shape);
    tt_randn((tg_tensor *)tg_node_value(b.x), 4);
    int64_t before = nbt(&b);
    /* x, weight, bias: the buffers take no gradient, so three tensors */
    cr_expect_eq(tt_gradcheck(b.g, b.y, 5), 3);
    /* training: every forward of the check moved the statistics */
    if (c->training) cr_expect_gt(nbt(&b), before + 2);
    else cr_expect_eq(nbt(&b), before);
    model_free(&b);
}

/* ---- the running update: once per forward, exactly PyTorch's formula ---- */

Test(batchnorm, update_once_per_forward)
{
    bn_model b;
    model_init(&b, TG_F64, 2);
    model_build(&b, true, 2, (int64_t[]){4, 2});
    double *xv = ((tg_tensor *)tg_node_value(b.x))->data;
    const double col0[4] = {1, 2, 3, 6};   /* mean 3, sum of squares 14 */
    for (int i = 0; i < 4; i++) xv[2 * i] = col0[i], xv[2 * i + 1] = 0.5;
    double rm = 0, rv = 1;
    for (int s = 1; s <= 3; s++) {
        cr_assert_eq(tg_graph_forward(b.g), TG_OK, "%s", tg_last_error());
        rm = 0.9 * rm + 0.1 * 3.0;
        rv = 0.9 * rv + 0.1 * (14.0 / 3.0);   /* the unbiased variance */
        cr_expect_eq(nbt(&b), s);
        cr_expect_float_eq(((double *)b.m.running_mean->value.data)[0], rm, 1e-15);
        cr_expect_float_eq(((double *)b.m.running_var->value.data)[0], rv, 1e-15);
    }
    /* a constant channel: y = bias exactly, its running_var decays towards 0 */
    cr_expect_eq(((const double *)tg_node_value(b.y)->data)[1], 0.0);
    cr_expect_float_eq(((double *)b.m.running_var->value.data)[1], 0.729, 1e-15);
    /* backward runs no forward: nothing moves */
    tg_tensor *dy = tg_tensor_new(TG_F64, 2, (int64_t[]){4, 2});
    cr_assert_eq(tg_graph_backward(b.g, b.y, dy), TG_OK, "%s", tg_last_error());
    cr_expect_eq(nbt(&b), 3);
    tg_tensor_free(dy);
    model_free(&b);
}

/* eval mode reads the statistics the training graph left: a second graph on
 * the same store, as `tgraph train` builds its evaluation graph */
Test(batchnorm, eval_graph_sees_training_update)
{
    bn_model b;
    model_init(&b, TG_F32, 3);
    model_build(&b, true, 3, (int64_t[]){2, 3, 4});
    tt_randn((tg_tensor *)tg_node_value(b.x), 9);
    cr_assert_eq(tg_graph_forward(b.g), TG_OK);
    tg_graph *ge = tg_graph_new(TG_F32);
    tg_node *xe = tg_input(ge, "x", TG_F32, 3, (int64_t[]){2, 3, 4});
    tg_node *ye = tg_batchnorm_mod_build(ge, &b.m, xe);
    cr_assert_eq(tg_node_set(xe, tg_node_value(b.x)), TG_OK);
    cr_assert_eq(tg_graph_forward(ge), TG_OK, "%s", tg_last_error());
    const float *x = tg_node_value(xe)->data, *y = tg_node_value(ye)->data;
    const float *rm = b.m.running_mean->value.data, *rv = b.m.running_var->value.data;
    cr_assert_neq(rm[1], 0.0f);
    for (int i = 0; i < 24; i++) {
        int c = (i / 4) % 3;
        double want = (x[i] - rm[c]) / sqrt(rv[c] + 1e-5);
        cr_expect_float_eq(y[i], want, 1e-5, "y[%d] = %g, want %g", i, y[i], want);
    }
    cr_expect_eq(nbt(&b), 1);   /* the eval forward did not count */
    tg_graph_free(ge);
    model_free(&b);
}

/* The channel split across threads does not change a bit. */
Test(batchnorm, threads_do_not_change_results)
{
    float out[2][64 * 40];
    for (int t = 0; t < 2; t++) {
        tg_threads_set(t ? 2 : 1);
        bn_model b;
        model_init(&b, TG_F32, 64);
        model_build(&b, true, 3, (int64_t[]){5, 64, 8});
        tt_randn((tg_tensor *)tg_node_value(b.x), 11);
        cr_assert_eq(tg_graph_forward(b.g), TG_OK);
        memcpy(out[t], tg_node_value(b.y)->data, sizeof out[t]);
        model_free(&b);
    }
    tg_threads_set(0);
    cr_expect_eq(memcmp(out[0], out[1], sizeof out[0]), 0);
}

/* ---- bad input ---- */

static tg_graph *bad_graph(tg_node **x, int rank, const int64_t *shape, tg_node **rm,
                           tg_node **rv)
{
    tg_graph *g = tg_graph_new(TG_F32);
    *x = tg_input(g, "x", TG_F32, rank, shape);
    *rm = tg_input(g, "rm", TG_F32, 1, (int64_t[]){3});
    *rv = tg_input(g, "rv", TG_F32, 1, (int64_t[]){3});
    return g;
}

static void expect_build_error(int rank, const int64_t *shape, int64_t wlen, int64_t rvlen,
                               double momentum, double eps, const char *needle)
{
    tg_node *x, *rm, *rv;
    tg_graph *g = bad_graph(&x, rank, shape, &rm, &rv);
    if (rvlen != 3) rv = tg_input(g, "rv2", TG_F32, 1, &rvlen);
    tg_node *w = tg_input(g, "w", TG_F32, 1, &wlen);
    cr_expect_null(tg_batch_norm(g, x, rm, rv, w, NULL, NULL, momentum, eps));
    tt_assert_graph_error(g, needle);
    tg_graph_free(g);
}

Test(batchnorm, bad_inputs)
{
    const int64_t ok[3] = {4, 3, 5};
    expect_build_error(4, (int64_t[]){2, 3, 4, 5}, 3, 3, 0.1, 1e-5,
                       "expected 2D or 3D input (got 4D input");
    expect_build_error(1, (int64_t[]){3}, 3, 3, 0.1, 1e-5, "expected 2D or 3D input (got 1D");
    expect_build_error(3, ok, 4, 3, 0.1, 1e-5, "weight should contain 3 elements not 4");
    expect_build_error(3, ok, 3, 2, 0.1, 1e-5, "running_var should contain 3 elements not 2");
    expect_build_error(3, (int64_t[]){4, 5, 3}, 5, 3, 0.1, 1e-5,
                       "running_mean should contain 5 elements not 3");
    expect_build_error(3, ok, 3, 3, 1.5, 1e-5, "momentum must be in [0, 1], got 1.5");
    expect_build_error(3, ok, 3, 3, -0.1, 1e-5, "momentum must be in [0, 1], got -0.1");
    expect_build_error(3, ok, 3, 3, NAN, 1e-5, "momentum must be in [0, 1], got nan");
    expect_build_error(3, ok, 3, 3, INFINITY, 1e-5, "momentum must be in [0, 1], got inf");
    expect_build_error(3, ok, 3, 3, 0.1, NAN, "eps must be positive and finite, got nan");
    expect_build_error(3, ok, 3, 3, 0.1, INFINITY, "eps must be positive and finite, got inf");
    expect_build_error(3, ok, 3, 3, 0.1, 0.0, "eps must be positive and finite, got 0");
    expect_build_error(3, ok, 3, 3, 0.1, -1e-5, "eps must be positive and finite");
}

Test(batchnorm, bad_stat_and_counter_tensors)
{
    tg_node *x, *rm, *rv;
    tg_graph *g = bad_graph(&x, 2, (int64_t[]){4, 3}, &rm, &rv);
    tg_node *rm2 = tg_input(g, "rm2", TG_F32, 2, (int64_t[]){1, 3});
    cr_expect_null(tg_batch_norm(g, x, rm2, rv, NULL, NULL, NULL, 0.1, 1e-5));
    tt_assert_graph_error(g, "running_mean should be 1-d with 3 elements");
    tg_graph_free(g);

    g = bad_graph(&x, 2, (int64_t[]){4, 3}, &rm, &rv);
    tg_node *cnt = tg_input(g, "nbt", TG_F32, 0, NULL);
    cr_expect_null(tg_batch_norm(g, x, rm, rv, NULL, NULL, cnt, 0.1, 1e-5));
    tt_assert_graph_error(g, "num_batches_tracked must be an int64 leaf of one element");
    tg_graph_free(g);

    g = bad_graph(&x, 2, (int64_t[]){4, 3}, &rm, &rv);
    cr_expect_null(tg_batch_norm(g, x, rm, tg_scale(g, rv, 2.0), NULL, NULL, NULL, 0.1, 1e-5));
    tt_assert_graph_error(g, "running_var must be a leaf (a buffer, an input or a constant), got "
                          "the result of scale");
    tg_graph_free(g);

    g = bad_graph(&x, 2, (int64_t[]){4, 3}, &rm, &rv);
    cr_expect_null(tg_batch_norm(g, x, NULL, rv, NULL, NULL, NULL, 0.1, 1e-5));
    tt_assert_graph_error(g, "batch_norm: input 1 is NULL");
    tg_graph_free(g);

    g = bad_graph(&x, 2, (int64_t[]){4, 3}, &rm, &rv);
    tg_node *ri = tg_input(g, "ri", TG_I64, 1, (int64_t[]){3});
    cr_expect_null(tg_batch_norm(g, x, rm, ri, NULL, NULL, NULL, 0.1, 1e-5));
    tt_assert_graph_error(g, "running_var");
    tg_graph_free(g);
}

/* N * L == 1 is PyTorch's ValueError in training (at the call, so at the
 * forward here: the mode may change after the build), fine in eval. */
Test(batchnorm, one_value_per_channel_in_training)
{
    const int64_t shapes[2][3] = {{1, 3, 1}, {1, 3}};
    for (int k = 0; k < 2; k++) {
        bn_model b;
        model_init(&b, TG_F32, 3);
        model_build(&b, true, 3 - k, shapes[k]);
        cr_expect_neq(tg_graph_forward(b.g), TG_OK);
        tt_assert_last_error("Expected more than 1 value per channel when training, got input "
                             "size [1, 3");
        cr_expect_eq(nbt(&b), 0);
        tg_graph_set_training(b.g, false);
        cr_expect_eq(tg_graph_forward(b.g), TG_OK, "%s", tg_last_error());
        model_free(&b);
    }
}

Test(batchnorm, module_errors)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_batchnorm_mod m;
    cr_expect_neq(tg_batchnorm_mod_init(&m, ps, PREFIX, "1", 0), TG_OK);
    tt_assert_last_error("BatchNorm1d(0) needs a positive number of channels");
    cr_assert_eq(tg_batchnorm_mod_init(&m, ps, PREFIX, "1", 4), TG_OK);
    cr_expect_neq(tg_batchnorm_mod_init(&m, ps, PREFIX, "1", 4), TG_OK);
    tt_assert_last_error("'encoder.norm.1.weight' already exists");
    tg_params_add(ps, "x.running_mean", 1, (int64_t[]){2});
    cr_expect_neq(tg_batchnorm_mod_init(&m, ps, "", "x", 2), TG_OK);
    tt_assert_last_error("'x.running_mean' already exists");
    cr_expect_null(tg_params_add_buffer(ps, "b", TG_F64, 1, (int64_t[]){2}));
    tt_assert_last_error("buffer 'b' has dtype float64");
    tg_params_free(ps);
}

/* ---- buffers in the store ---- */

/* Counted as PyTorch counts model.parameters(): weight and bias only. */
Test(batchnorm, buffers_are_not_parameters)
{
    bn_model b;
    model_init(&b, TG_F32, 5);
    cr_expect_eq(tg_params_count(b.ps), 2);
    cr_expect_eq(tg_params_numel(b.ps), 10);
    cr_expect_eq(tg_params_bytes(b.ps), 40);
    cr_expect_eq(tg_params_buffer_count(b.ps), 3);
    const char *names[3] = {PREFIX ".1.running_mean", PREFIX ".1.running_var",
                            PREFIX ".1.num_batches_tracked"};
    for (int i = 0; i < 3; i++) {
        tg_param *p = tg_params_buffer_at(b.ps, i);
        cr_expect_str_eq(p->name, names[i]);
        cr_expect_eq(tg_params_find(b.ps, names[i]), p);
        cr_expect(p->buffer && p->frozen && !p->grad.data);
    }
    cr_expect_null(tg_params_buffer_at(b.ps, 3));
    cr_expect_eq(b.m.num_batches_tracked->value.dtype, TG_I64);
    cr_expect_eq(b.m.num_batches_tracked->value.rank, 0);
    cr_expect_eq(((float *)b.m.running_var->value.data)[4], 1.0f);
    cr_expect_eq(((float *)b.m.running_mean->value.data)[4], 0.0f);
    /* a buffer never takes a gradient, even unfrozen by mistake */
    b.m.running_mean->frozen = false;
    model_build(&b, true, 2, (int64_t[]){3, 5});
    cr_expect_null(tg_node_grad(tg_param_node(b.g, b.m.running_mean)));
    tg_params_zero_grad(b.ps);
    model_free(&b);
}

/* One training step with Adam: the buffers move only through the forward. */
Test(batchnorm, optimizer_leaves_buffers_alone)
{
    bn_model b;
    model_init(&b, TG_F32, 3);
    model_build(&b, true, 3, (int64_t[]){2, 3, 4});
    tg_optim *o = tg_optim_new(b.ps, &(tg_optim_config){.kind = TG_OPTIM_ADAMW, .lr = 0.1,
                                                        .weight_decay = 0.5});
    cr_assert(o, "%s", tg_last_error());
    tt_randn((tg_tensor *)tg_node_value(b.x), 3);
    tg_tensor *dy = tg_tensor_new(TG_F32, 3, (int64_t[]){2, 3, 4});
    tt_randn(dy, 4);
    cr_assert_eq(tg_graph_forward(b.g), TG_OK);
    cr_assert_eq(tg_graph_backward(b.g, b.y, dy), TG_OK);
    float rm[3], rv[3], w[3];
    memcpy(rm, b.m.running_mean->value.data, sizeof rm);
    memcpy(rv, b.m.running_var->value.data, sizeof rv);
    memcpy(w, b.m.weight->value.data, sizeof w);
    cr_assert_eq(tg_optim_step(o), TG_OK);
    cr_expect_eq(memcmp(rm, b.m.running_mean->value.data, sizeof rm), 0);
    cr_expect_eq(memcmp(rv, b.m.running_var->value.data, sizeof rv), 0);
    cr_expect_neq(memcmp(w, b.m.weight->value.data, sizeof w), 0);   /* the step did run */
    cr_expect_eq(nbt(&b), 1);
    for (int i = 0; i < 3; i++)
        for (int s = 0; s < TG_PARAM_STATE; s++)
            cr_expect_null(tg_params_buffer_at(b.ps, i)->state[s].data);
    tg_tensor_free(dy);
    tg_optim_free(o);
    model_free(&b);
}

/* A store after a few training forwards: every entry non-trivial. */
static void trained_model(bn_model *b, tg_dtype dt, uint64_t seed)
{
    model_init(b, dt, 4);
    tt_randn(&b->m.weight->value, seed);
    tt_randn(&b->m.bias->value, seed + 1);
    model_build(b, true, 3, (int64_t[]){3, 4, 2});
    for (int s = 0; s < 3; s++) {
        tt_randn((tg_tensor *)tg_node_value(b->x), seed + 2 + s);
        cr_assert_eq(tg_graph_forward(b->g), TG_OK);
    }
}

static void expect_same_entries(const tg_params *a, const tg_params *b)
{
    int n = tg_params_count(a) + tg_params_buffer_count(a);
    cr_assert_eq(tg_params_count(b) + tg_params_buffer_count(b), n);
    for (int i = 0; i < n; i++) {
        const tg_param *p = i < 2 ? tg_params_at(a, i) : tg_params_buffer_at(a, i - 2);
        const tg_param *q = tg_params_find(b, p->name);
        cr_assert(q && q->value.dtype == p->value.dtype, "%s", p->name);
        size_t bytes = (size_t)p->value.numel * tg_dtype_size(p->value.dtype);
        cr_expect_eq(memcmp(p->value.data, q->value.data, bytes), 0, "%s differs", p->name);
    }
}

Test(batchnorm, buffers_round_trip_params_file)
{
    for (int k = 0; k < 2; k++) {
        tg_dtype dt = k ? TG_F64 : TG_F32;
        bn_model a, b;
        trained_model(&a, dt, 20);
        cr_assert_eq(nbt(&a), 3);
        const char *path = tt_path(k ? "bn64.safetensors" : "bn32.safetensors");
        cr_assert_eq(tg_params_save(a.ps, path, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
        /* in the file: num_batches_tracked I64 of shape [], the statistics in the store dtype */
        tg_st_file *f;
        cr_assert_eq(tg_st_load(path, &f), TG_OK);
        cr_expect_eq(tg_st_count(f), 5);
        const tg_tensor *t = tg_st_find(f, PREFIX ".1.num_batches_tracked");
        cr_assert(t);
        cr_expect(t->dtype == TG_I64 && t->rank == 0 && ((int64_t *)t->data)[0] == 3);
        cr_expect_eq(tg_st_find(f, PREFIX ".1.running_var")->dtype, dt);
        tg_st_free(f);
        model_init(&b, dt, 4);
        cr_assert_eq(tg_params_load(b.ps, path, 0), TG_OK, "%s", tg_last_error());
        expect_same_entries(a.ps, b.ps);
        model_free(&a);
        model_free(&b);
    }
}

Test(batchnorm, buffers_round_trip_checkpoint)
{
    bn_model a, b;
    trained_model(&a, TG_F32, 30);
    tg_checkpoint ck, back;
    tg_checkpoint_init(&ck);
    tg_checkpoint_init(&back);
    const char *path = tt_path("ck.safetensors");
    cr_assert_eq(tg_checkpoint_save(path, a.ps, NULL, &ck), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_checkpoint_read(path, &back), TG_OK, "%s", tg_last_error());
    const tg_tensor *t = tg_st_find(back.file, PREFIX ".1.num_batches_tracked");
    cr_assert(t && t->dtype == TG_I64);
    model_init(&b, TG_F32, 4);
    cr_assert_eq(tg_checkpoint_restore_params(&back, b.ps), TG_OK, "%s", tg_last_error());
    expect_same_entries(a.ps, b.ps);
    /* resumed, the next training forward moves both stores alike */
    model_build(&b, true, 3, (int64_t[]){3, 4, 2});
    cr_assert_eq(tg_node_set(b.x, tg_node_value(a.x)), TG_OK);
    cr_assert_eq(tg_graph_forward(a.g), TG_OK);
    cr_assert_eq(tg_graph_forward(b.g), TG_OK);
    expect_same_entries(a.ps, b.ps);
    cr_expect_eq(nbt(&b), 4);
    tg_checkpoint_clear(&ck);
    tg_checkpoint_clear(&back);
    model_free(&a);
    model_free(&b);
}

/* A state_dict without the buffers (an affine-only save) is refused naming them. */
Test(batchnorm, missing_buffers_named)
{
    tg_params *w = tg_params_new(TG_F32);
    tg_params_add(w, PREFIX ".1.weight", 1, (int64_t[]){4});
    tg_params_add(w, PREFIX ".1.bias", 1, (int64_t[]){4});
    const char *path = tt_path("affine.safetensors");
    cr_assert_eq(tg_params_save(w, path, 0, NULL, NULL), TG_OK);
    bn_model b;
    model_init(&b, TG_F32, 4);
    cr_expect_neq(tg_params_load(b.ps, path, 0), TG_OK);
    tt_assert_last_error("Missing key(s) in state_dict: \"" PREFIX ".1.running_mean\", \""
                         PREFIX ".1.running_var\", \"" PREFIX ".1.num_batches_tracked\" (3 of 5 "
                         "parameters and buffers;");
    cr_expect_eq(tg_params_load(b.ps, path, TG_LOAD_ALLOW_MISSING), TG_OK);

    tg_checkpoint ck, back;
    tg_checkpoint_init(&ck);
    tg_checkpoint_init(&back);
    cr_assert_eq(tg_checkpoint_save(path, w, NULL, &ck), TG_OK);
    cr_assert_eq(tg_checkpoint_read(path, &back), TG_OK);
    cr_expect_neq(tg_checkpoint_restore_params(&back, b.ps), TG_OK);
    tt_assert_last_error("missing buffer '" PREFIX ".1.running_mean' [4]");
    tg_checkpoint_clear(&back);
    tg_params_free(w);
    model_free(&b);
}

/* num_batches_tracked saved as a float (not PyTorch's) is refused naming it. */
Test(batchnorm, counter_dtype_checked)
{
    tg_params *w = tg_params_new(TG_F32);
    tg_params_add(w, PREFIX ".1.weight", 1, (int64_t[]){4});
    tg_params_add(w, PREFIX ".1.bias", 1, (int64_t[]){4});
    tg_params_add(w, PREFIX ".1.running_mean", 1, (int64_t[]){4});
    tg_params_add(w, PREFIX ".1.running_var", 1, (int64_t[]){4});
    tg_params_add(w, PREFIX ".1.num_batches_tracked", 0, NULL);
    const char *path = tt_path("f.safetensors");
    cr_assert_eq(tg_params_save(w, path, 0, NULL, NULL), TG_OK);
    bn_model b;
    model_init(&b, TG_F32, 4);
    cr_expect_neq(tg_params_load(b.ps, path, 0), TG_OK);
    tt_assert_last_error("tensor '" PREFIX ".1.num_batches_tracked' has dtype F32, expected an "
                         "integer tensor (I64)");
    tg_params_free(w);
    model_free(&b);
}

/* PyTorch's own state_dict (tests/fixtures/batchnorm/state_dict.safetensors:
 * BatchNorm1d(3) after train_ncl's step) loads strictly; saved again by
 * tgraph it gives tgraph_saved.safetensors byte for byte, the file
 * tests/fixtures/check_batchnorm_pytorch.py loads into PyTorch with
 * load_state_dict(strict=True). */
Test(batchnorm, pytorch_state_dict)
{
    bn_model b;
    model_init(&b, TG_F32, 3);
    cr_assert_eq(tg_params_load(b.ps, TT_FIXTURES "/batchnorm/state_dict.safetensors", 0), TG_OK,
                 "%s", tg_last_error());
    cr_expect_eq(nbt(&b), 1);
    expect_close(&b.m.running_mean->value, "batchnorm/train_ncl", "rm_after.npy", 1e-6);
    expect_close(&b.m.running_var->value, "batchnorm/train_ncl", "rv_after.npy", 1e-6);
    expect_close(&b.m.weight->value, "batchnorm/train_ncl", "in3.npy", 0);
    const char *path = tt_path("again.safetensors");
    cr_assert_eq(tg_params_save(b.ps, path, 0, NULL, NULL), TG_OK);
    size_t n1, n2;
    char *got = tt_slurp(path, &n1);
    char *want = tt_slurp(TT_FIXTURES "/batchnorm/tgraph_saved.safetensors", &n2);
    cr_expect(n1 == n2 && !memcmp(got, want, n1), "tgraph's save differs from "
              "tgraph_saved.safetensors (%zu vs %zu bytes)", n1, n2);
    free(got);
    free(want);
    model_free(&b);
}

/* Diagrams mark buffers as such, in the module's box, with no gradient edge. */
Test(batchnorm, dot_marks_buffers)
{
    bn_model b;
    model_init(&b, TG_F32, 4);
    model_build(&b, true, 3, (int64_t[]){2, 4, 3});
    const char *path = tt_path("bn.dot");
    cr_assert_eq(tg_graph_dot_save(b.g, &(tg_dot_opts){.backward = true}, path), TG_OK, "%s",
                 tg_last_error());
    char *dot = tt_slurp(path, NULL);
    cr_expect_not_null(strstr(dot, "buffer " PREFIX ".1.running_mean"), "%s", dot);
    cr_expect_not_null(strstr(dot, "buffer " PREFIX ".1.num_batches_tracked"), "%s", dot);
    cr_expect_null(strstr(dot, "buffer " PREFIX ".1.weight"), "%s", dot);
    cr_expect_not_null(strstr(dot, "batch_norm"), "%s", dot);
    free(dot);
    model_free(&b);
}

/* ---- resume through the trainer: the buffers come back bit for bit ---- */

/* y = BatchNorm1d(x) fitted to a fixed target by MSE; batch k of each epoch
 * drawn from the trainer's data RNG */
typedef struct {
    bn_model b;
    tg_node *target, *loss;
    tg_optim *opt;
    volatile sig_atomic_t stop;
    int64_t stop_epoch;
} bn_run;

static void run_init(bn_run *r)
{
    memset(r, 0, sizeof *r);
    r->stop_epoch = -1;
    model_init(&r->b, TG_F32, 3);
    model_build(&r->b, true, 3, (int64_t[]){4, 3, 2});
    r->target = tg_input(r->b.g, "t", TG_F32, 3, (int64_t[]){4, 3, 2});
    tt_randn((tg_tensor *)tg_node_value(r->target), 77);
    r->loss = tg_mse_loss(r->b.g, r->b.y, r->target, TG_REDUCTION_MEAN);
    r->opt = tg_optim_new(r->b.ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 0.05});
    cr_assert(r->loss && r->opt);
}

static tg_status run_fill(void *user, int64_t epoch, int64_t k, tg_rng *rng)
{
    bn_run *r = user;
    (void)k;
    if (epoch == r->stop_epoch) r->stop = 1;
    float *x = ((tg_tensor *)tg_node_value(r->b.x))->data;
    for (int i = 0; i < 24; i++) x[i] = (float)(2 * tg_rng_normal(rng) + 1);
    return TG_OK;
}

static tg_status run_validate(void *user, int64_t epoch, double *metric)
{
    const bn_run *r = user;
    (void)epoch;
    *metric = fabs(((const float *)r->b.m.weight->value.data)[0] - 0.5);
    return TG_OK;
}

static void run_trainer(tg_trainer *t, bn_run *r, const char *last)
{
    tg_trainer_init(t);
    t->graph = r->b.g;
    t->loss = r->loss;
    t->ps = r->b.ps;
    t->optim = r->opt;
    t->lr = 0.05;
    t->epochs = 4;
    t->steps_per_epoch = 3;
    t->batch = run_fill;
    t->validate = run_validate;
    t->user = r;
    t->stop = &r->stop;
    t->last_path = last;
    tg_trainer_seed(t, 5);
}

static void run_free(bn_run *r, tg_trainer *t)
{
    tg_trainer_clear(t);
    tg_optim_free(r->opt);
    model_free(&r->b);
}

Test(batchnorm, trainer_resume_restores_buffers)
{
    bn_run a, b, c;
    tg_trainer ta, tb, tc;
    char *last = strdup(tt_path("last.safetensors"));
    run_init(&a);
    run_trainer(&ta, &a, NULL);
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_expect_eq(nbt(&a.b), 12);   /* one count per step: 4 epochs of 3 */
    run_init(&b);
    b.stop_epoch = 3;              /* 0-based: stops in the 4th epoch's first step, `last`
                                    * holds the end of the 3rd */
    run_trainer(&tb, &b, last);
    cr_assert_eq(tg_trainer_run(&tb), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tb.end, TG_TRAINER_STOPPED);
    run_init(&c);
    run_trainer(&tc, &c, last);
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_checkpoint_read(last, &ck), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_trainer_resume(&tc, &ck), TG_OK, "%s", tg_last_error());
    cr_expect_eq(ck.epoch, 3);
    cr_expect_eq(nbt(&b.b), 10, "the stopped run finished the step it was in");
    cr_expect_eq(nbt(&c.b), 9, "restored after 3 epochs of 3 steps: %lld", (long long)nbt(&c.b));
    tg_checkpoint_clear(&ck);
    cr_assert_eq(tg_trainer_run(&tc), TG_OK, "%s", tg_last_error());
    expect_same_entries(a.b.ps, c.b.ps);   /* parameters and buffers, bit for bit */
    free(last);
    run_free(&a, &ta);
    run_free(&b, &tb);
    run_free(&c, &tc);
}

/* The oracle's layout: weights.safetensors (parameters) beside
 * buffers.safetensors (the buffers, and a recomputed pe tgraph does not store). */
Test(batchnorm, weights_and_buffers_files)
{
    bn_model a, b;
    trained_model(&a, TG_F32, 40);
    tg_params *w = tg_params_new(TG_F32), *bf = tg_params_new(TG_F32);
    for (int i = 0; i < 2; i++) {
        tg_param *p = tg_params_at(a.ps, i);
        tg_tensor_copy(&tg_params_add(w, p->name, 1, p->value.shape)->value, &p->value);
    }
    for (int i = 0; i < 3; i++) {
        tg_param *p = tg_params_buffer_at(a.ps, i);
        tg_tensor_copy(&tg_params_add_buffer(bf, p->name, p->value.dtype, p->value.rank,
                                             p->value.shape)->value, &p->value);
    }
    tg_params_add(bf, "patch_embedding.position_embedding.pe", 1, (int64_t[]){6});
    const char *wpath = tt_path("weights.safetensors"), *bpath = tt_path("buffers.safetensors");
    cr_assert_eq(tg_params_save(w, wpath, 0, NULL, NULL), TG_OK);
    cr_assert_eq(tg_params_save(bf, bpath, 0, NULL, NULL), TG_OK);
    model_init(&b, TG_F32, 4);
    cr_expect_neq(tg_params_load(b.ps, wpath, 0), TG_OK);   /* strict: the buffers are missing */
    cr_assert_eq(tg_params_load(b.ps, wpath, TG_LOAD_PARAMS_ONLY), TG_OK, "%s", tg_last_error());
    cr_expect_eq(nbt(&b), 0, "a parameters-only load sets no buffer");
    cr_expect_neq(tg_params_load(b.ps, bpath, TG_LOAD_BUFFERS_ONLY), TG_OK);
    tt_assert_last_error("Unexpected key(s) in state_dict: "
                         "\"patch_embedding.position_embedding.pe\"");
    cr_assert_eq(tg_params_load(b.ps, bpath, TG_LOAD_BUFFERS_ONLY | TG_LOAD_ALLOW_EXTRA), TG_OK,
                 "%s", tg_last_error());
    expect_same_entries(a.ps, b.ps);
    /* a weights file given as the buffers: they are missing, named */
    cr_expect_neq(tg_params_load(b.ps, wpath, TG_LOAD_BUFFERS_ONLY), TG_OK);
    tt_assert_last_error("Missing key(s) in state_dict: \"" PREFIX ".1.running_mean\", \""
                         PREFIX ".1.running_var\", \"" PREFIX ".1.num_batches_tracked\" (3 of 3 "
                         "buffers");
    cr_expect_neq(tg_params_load(b.ps, wpath, TG_LOAD_PARAMS_ONLY | TG_LOAD_BUFFERS_ONLY), TG_OK);
    tt_assert_last_error("exclude each other");
    tg_params_free(w);
    tg_params_free(bf);
    model_free(&a);
    model_free(&b);
}

/* The ends of momentum's range: 0 keeps the statistics (the counter still
 * counts), 1 takes the batch's. */
Test(batchnorm, momentum_zero_and_one)
{
    for (int k = 0; k < 2; k++) {
        bn_model b;
        model_init(&b, TG_F64, 1);
        b.m.momentum = k;
        model_build(&b, true, 2, (int64_t[]){3, 1});
        double *x = ((tg_tensor *)tg_node_value(b.x))->data;
        x[0] = 1, x[1] = 2, x[2] = 6;   /* mean 3, unbiased variance 7 */
        cr_assert_eq(tg_graph_forward(b.g), TG_OK, "%s", tg_last_error());
        cr_expect_eq(((double *)b.m.running_mean->value.data)[0], k ? 3.0 : 0.0);
        cr_expect_eq(((double *)b.m.running_var->value.data)[0], k ? 7.0 : 1.0);
        cr_expect_eq(nbt(&b), 1);
        model_free(&b);
    }
}
