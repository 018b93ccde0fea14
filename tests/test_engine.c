/*
 * test_engine.c - the graph engine itself: re-running with new inputs,
 * fan-out accumulation, skipped nodes, sticky errors, scopes, no allocation
 * inside a planned run, the finite check, gradcheck catching a wrong
 * backward, parameters and initialisers.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "op.h"

static tg_tensor *vec(const double *v, int64_t n, tg_dtype dt)
{
    tg_tensor *t = tg_tensor_new(dt, 1, &n);
    for (int64_t i = 0; i < n; i++) tg_tensor_set(t, i, v[i]);
    return t;
}

Test(engine, rerun_with_new_inputs)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){3});
    tg_node *y = tg_sum(g, tg_square(g, x), NULL, 0, false);
    cr_assert_not_null(y);
    float *xd = tg_node_value(x)->data;
    xd[0] = 1, xd[1] = 2, xd[2] = 3;
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_float_eq(((float *)tg_node_value(y)->data)[0], 14.0f, 1e-6);
    xd[0] = -1, xd[1] = 0.5f, xd[2] = 4;
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_float_eq(((float *)tg_node_value(y)->data)[0], 17.25f, 1e-6);
    tg_graph_free(g);
}

Test(engine, fan_out_accumulates)
{
    /* y = sum(x*x + x + 2x): dy/dx = 2x + 3, x feeds four uses */
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 1, (int64_t[]){4});
    tg_node_set_requires_grad(x, true);
    tg_node *t = tg_add(g, tg_add(g, tg_mul(g, x, x), x), tg_scale(g, x, 2));
    tg_node *y = tg_sum(g, t, NULL, 0, false);
    double xv[4] = {1, -2, 0.5, 3};
    tg_tensor *xt = vec(xv, 4, TG_F64);
    tg_node_set(x, xt);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    const double *gx = tg_node_grad(x)->data;
    for (int i = 0; i < 4; i++) cr_assert_float_eq(gx[i], 2 * xv[i] + 3, 1e-12);
    /* a second backward gives the same, not double (graph grads reset) */
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    for (int i = 0; i < 4; i++) cr_assert_float_eq(gx[i], 2 * xv[i] + 3, 1e-12);
    tg_tensor_free(xt);
    tg_graph_free(g);
}

/* A test op: y = x, counting how often its backward runs. */
static int ident_backward_calls;
static tg_status ident_forward(tg_node *n)
{
    memcpy(n->value.data, n->in[0]->value.data, (size_t)n->value.numel * sizeof(double));
    return TG_OK;
}
static tg_status ident_backward(tg_node *n)
{
    ident_backward_calls++;
    double *dx = n->in[0]->grad.data;
    const double *dy = n->grad.data;
    for (int64_t i = 0; i < n->value.numel; i++) dx[i] += dy[i];
    return TG_OK;
}
static const tg_op op_ident = {.name = "ident", .forward = ident_forward,
                               .backward = ident_backward};
static tg_node *ident(tg_graph *g, tg_node *x)
{
    return tg_node_new(g, &op_ident, 1, &x, x->value.dtype, x->value.rank, x->value.shape);
}

Test(engine, nodes_without_grad_are_skipped)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 1, (int64_t[]){3});     /* requires grad */
    tg_node *c = tg_input(g, "c", TG_F64, 1, (int64_t[]){3});     /* does not */
    tg_node_set_requires_grad(x, true);
    tg_node *a = ident(g, c);                  /* no path from x: no grad, never run */
    tg_node *b = ident(g, x);                  /* on the path: runs */
    tg_node *unused = ident(g, x);             /* requires grad but not on the way to y */
    tg_node *y = tg_sum(g, tg_mul(g, a, b), NULL, 0, false);
    cr_assert_not_null(y);
    cr_assert_not_null(unused);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    ident_backward_calls = 0;
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    cr_assert_eq(ident_backward_calls, 1, "backward ran %d ident nodes, expected 1",
                 ident_backward_calls);
    cr_assert_null(tg_node_grad(a));
    cr_assert_null(tg_node_grad(c));
    cr_assert_not_null(tg_node_grad(x));
    tg_graph_free(g);
}

Test(engine, sticky_error)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = tg_input(g, "a", TG_F32, 1, (int64_t[]){3});
    tg_node *b = tg_input(g, "b", TG_F32, 1, (int64_t[]){4});
    cr_assert_null(tg_graph_error(g));
    tg_node *bad = tg_add(g, a, b);
    cr_assert_null(bad);
    tt_assert_graph_error(g, "The size of tensor a (3) must match the size of tensor b (4)");
    /* later builders return NULL too, even with good input, and keep the first message */
    cr_assert_null(tg_relu(g, a));
    cr_assert_null(tg_add(g, bad, a));
    cr_assert_null(tg_input(g, "c", TG_F32, 1, (int64_t[]){2}));
    tt_assert_graph_error(g, "size of tensor a (3)");
    cr_assert_eq(tg_graph_forward(g), TG_ERR_STATE);
    tt_assert_last_error("graph is in error");
    tg_graph_free(g);
}

Test(engine, null_inputs_are_errors_not_crashes)
{
    tg_graph *g = tg_graph_new(TG_F32);
    cr_assert_null(tg_relu(g, NULL));
    tt_assert_graph_error(g, "relu: input 0 is NULL");
    tg_graph_free(g);
    cr_assert_null(tg_relu(NULL, NULL));
    cr_assert_null(tg_graph_new(TG_I64));
    tt_assert_last_error("float dtype must be float32 or float64");
}

Test(engine, inputs_from_another_graph)
{
    tg_graph *g1 = tg_graph_new(TG_F32), *g2 = tg_graph_new(TG_F32);
    tg_node *a = tg_input(g1, "a", TG_F32, 1, (int64_t[]){3});
    cr_assert_null(tg_relu(g2, a));
    tt_assert_graph_error(g2, "belongs to another graph");
    tg_graph_free(g1);
    tg_graph_free(g2);
}

Test(engine, scopes_prefix_errors_and_nest)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = tg_input(g, "a", TG_F32, 1, (int64_t[]){3});
    cr_assert_eq(tg_scope_push(g, "encoder"), TG_OK);
    cr_assert_eq(tg_scope_pushf(g, "layers.%d", 1), TG_OK);
    tg_node *r = tg_relu(g, a);
    cr_assert_str_eq(tg_graph_scope_path(g, tg_node_scope(r)), "encoder.layers.1");
    cr_assert_eq(tg_graph_scope_depth(g, tg_node_scope(r)), 2);
    cr_assert_str_eq(tg_graph_scope_name(g, tg_node_scope(r)), "layers.1");
    tg_scope_pop(g);
    tg_node *r2 = tg_relu(g, a);
    cr_assert_str_eq(tg_graph_scope_path(g, tg_node_scope(r2)), "encoder");
    cr_assert_null(tg_sum(g, a, (int64_t[]){5}, 1, false));
    tt_assert_graph_error(g, "encoder: sum: Dimension out of range");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    cr_assert_neq(tg_scope_push(g, "bad name"), TG_OK);
    tt_assert_graph_error(g, "invalid scope name 'bad name'");
    tg_graph_free(g);
}

Test(engine, rank_limits)
{
    tg_graph *g = tg_graph_new(TG_F32);
    int64_t s8[8] = {1, 2, 1, 2, 1, 2, 1, 2}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    tg_node *x = tg_input(g, "x", TG_F32, 8, s8);
    cr_assert_not_null(x);
    tg_node *y = tg_sum(g, tg_relu(g, tg_permute(g, x, (int[]){7, 6, 5, 4, 3, 2, 1, 0})),
                        (int64_t[]){1, 7}, 2, true);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    cr_assert_eq(tg_node_value(y)->rank, 8);
    cr_assert_null(tg_input(g, "z", TG_F32, 9, s9));
    tt_assert_graph_error(g, "rank 9 is above the maximum rank 8");
    tg_graph_free(g);

    int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 4};
    cr_assert_null(tg_tensor_new(TG_F32, 3, huge));
    tt_assert_last_error("overflows");
}

Test(engine, no_allocation_inside_a_planned_run)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 2, (int64_t[]){4, 3});
    tg_param *b = tg_params_add(ps, "b", 1, (int64_t[]){4});
    tg_rng r;
    tg_rng_seed(&r, 1);
    tg_init_kaiming_uniform(&w->value, sqrt(5.0), &r);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){5, 3});
    tg_node *t = tg_input(g, "t", TG_F32, 2, (int64_t[]){5, 4});
    tg_node *y = tg_relu(g, tg_linear(g, x, tg_param_node(g, w), tg_param_node(g, b)));
    tg_node *loss = tg_mse_loss(g, tg_sum(g, y, (int64_t[]){0}, 1, true),
                                tg_sum(g, t, (int64_t[]){0}, 1, true), TG_REDUCTION_MEAN);
    cr_assert_not_null(loss, "%s", tg_graph_error(g));
    tt_randn((tg_tensor *)tg_node_value(x), 2);
    cr_assert_eq(tg_graph_forward(g), TG_OK);     /* the first run plans */
    cr_assert_eq(tg_graph_backward(g, loss, NULL), TG_OK);
    uint64_t before = tg__alloc_count();
    for (int i = 0; i < 3; i++) {
        tt_randn((tg_tensor *)tg_node_value(x), 10 + (uint64_t)i);
        tg_params_zero_grad(ps);
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        cr_assert_eq(tg_graph_backward(g, loss, NULL), TG_OK);
    }
    cr_assert_eq(tg__alloc_count(), before, "%llu allocations inside planned runs",
                 (unsigned long long)(tg__alloc_count() - before));
    cr_assert_gt(tg_graph_planned_bytes(g), 0);
    tg_graph_free(g);
    tg_params_free(ps);
}

Test(engine, allocation_failures_surface_as_errors)
{
    /* fail the n-th allocation for n = 1, 2, ...: every failure is an error, never a crash */
    for (uint64_t n = 1; n < 200; n++) {
        tg__alloc_fail_after(n);
        tg_graph *g = tg_graph_new(TG_F32);
        tg_params *ps = tg_params_new(TG_F32);
        tg_param *w = ps ? tg_params_add(ps, "w", 2, (int64_t[]){4, 3}) : NULL;
        tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){5, 3});
        tg_node *y = tg_sum(g, tg_linear(g, x, w ? tg_param_node(g, w) : NULL, NULL), NULL, 0,
                            false);
        tg_status st = y ? tg_graph_forward(g) : TG_ERR_NOMEM;
        if (!st) st = tg_graph_backward(g, y, NULL);
        tg__alloc_fail_after(0);
        bool ok = g && ps && w && y && st == TG_OK;
        tg_graph_free(g);
        tg_params_free(ps);
        if (ok) return;   /* got far enough: every earlier failure point was survived */
    }
    cr_assert_fail("never completed");
}

Test(engine, finite_check_names_the_node)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){3});
    tg_scope_push(g, "block");
    tg_node *l = tg_log(g, x);               /* log(-1) = NaN */
    tg_scope_pop(g);
    tg_node *y = tg_sum(g, l, NULL, 0, false);
    cr_assert_not_null(y);
    float *xd = tg_node_value(x)->data;
    xd[0] = 1, xd[1] = -1, xd[2] = 2;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "the check is off by default");
    tg_graph_set_check_finite(g, true);
    cr_assert_eq(tg_graph_forward(g), TG_ERR_NUMERIC);
    tt_assert_last_error("(log) in block produced NaN at element 1 of shape [3]");
    xd[1] = 0;                                /* log(0) = -inf */
    cr_assert_eq(tg_graph_forward(g), TG_ERR_NUMERIC);
    tt_assert_last_error("produced -Inf at element 1");
    xd[1] = 1;
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    tg_graph_free(g);
}

Test(engine, backward_preconditions)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){3});
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_relu(g, x);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_ERR_STATE);
    tt_assert_last_error("run forward first");
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_ERR_SHAPE);
    tt_assert_last_error("can be implied only for an output with one element");
    tg_tensor *dy = tg_tensor_new(TG_F32, 1, (int64_t[]){4});
    cr_assert_eq(tg_graph_backward(g, y, dy), TG_ERR_SHAPE);
    tt_assert_last_error("dy has shape [4] but the output has [3]");
    tg_tensor_free(dy);
    tg_node *c = tg_input(g, "c", TG_F32, 1, (int64_t[]){3});
    tg_node *z = tg_sum(g, c, NULL, 0, false);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_backward(g, z, NULL), TG_ERR_INVALID);
    tt_assert_last_error("does not depend on any parameter");
    cr_assert_neq(tg_node_set_requires_grad(tg_input(g, "i", TG_I64, 0, NULL), true), TG_OK);
    tt_assert_last_error("not float");
    tg_graph_free(g);
}

/* ---- gradcheck must catch a backward that is wrong by 1% in one element ---- */

static tg_status sq_forward(tg_node *n)
{
    const double *x = n->in[0]->value.data;
    double *y = n->value.data;
    for (int64_t i = 0; i < n->value.numel; i++) y[i] = x[i] * x[i];
    return TG_OK;
}
static tg_status sq_backward_wrong(tg_node *n)
{
    const double *x = n->in[0]->value.data, *dy = n->grad.data;
    double *dx = n->in[0]->grad.data;
    for (int64_t i = 0; i < n->value.numel; i++)
        dx[i] += 2 * x[i] * dy[i] * (i == 3 ? 1.01 : 1.0);   /* element 3 is 1% off */
    return TG_OK;
}
static const tg_op op_bad_square = {.name = "bad_square", .forward = sq_forward,
                                    .backward = sq_backward_wrong};

Test(engine, gradcheck_catches_a_one_percent_error)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 1, (int64_t[]){6});
    tg_node_set_requires_grad(x, true);
    tt_randn((tg_tensor *)tg_node_value(x), 3);
    ((double *)tg_node_value(x)->data)[3] = 1.5;   /* a gradient well away from 0 */
    tg_node *y = tg_node_new(g, &op_bad_square, 1, &x, TG_F64, 1, (int64_t[]){6});
    tg_gradcheck_result res[2];
    int n;
    bool ok;
    cr_assert_eq(tg_gradcheck(g, y, NULL, res, 2, &n, &ok), TG_OK, "%s", tg_last_error());
    cr_assert_eq(n, 1);
    cr_assert_not(ok, "gradcheck accepted a backward that is 1%% wrong");
    cr_assert_not(res[0].pass);
    cr_assert_eq(res[0].worst_index, 3);
    cr_assert_str_eq(res[0].name, "input.x");
    tg_graph_free(g);
}

Test(engine, gradcheck_skips_kinks)
{
    /* relu on values within eps of 0: those elements are left out and counted */
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 1, (int64_t[]){4});
    tg_node_set_requires_grad(x, true);
    double *xd = tg_node_value(x)->data;
    xd[0] = 1, xd[1] = -1, xd[2] = 1e-7, xd[3] = 2;
    tg_node *y = tg_relu(g, x);
    tg_gradcheck_result res[1];
    int n;
    bool ok;
    cr_assert_eq(tg_gradcheck(g, y, NULL, res, 1, &n, &ok), TG_OK);
    cr_assert(ok);
    cr_assert_eq(res[0].skipped, 1);
    cr_assert_eq(res[0].checked, 3);
    tg_graph_free(g);
}

/* ---- parameters ---- */

Test(params, store_and_graph)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "MLP1.0.weight", 2, (int64_t[]){3, 2});
    cr_assert_not_null(w);
    cr_assert_null(tg_params_add(ps, "MLP1.0.weight", 1, (int64_t[]){3}));
    tt_assert_last_error("a parameter named 'MLP1.0.weight' already exists");
    cr_assert_eq(tg_params_find(ps, "MLP1.0.weight"), w);
    cr_assert_null(tg_params_find(ps, "MLP1.0.bias"));
    for (int i = 0; i < 100; i++) cr_assert_not_null(tg_params_addf(ps, 1, (int64_t[]){2}, "p.%d", i));
    cr_assert_eq(tg_params_count(ps), 101);
    cr_assert_eq(tg_params_numel(ps), 6 + 200);
    cr_assert_str_eq(tg_params_find(ps, "p.57")->name, "p.57");

    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = tg_param_node(g, w), *b = tg_param_node(g, w);
    cr_assert_eq(a, b, "a parameter gets one node per graph");
    cr_assert_str_eq(tg_node_name(a), "MLP1.0.weight");
    tg_graph_free(g);

    g = tg_graph_new(TG_F64);
    cr_assert_null(tg_param_node(g, w));
    tt_assert_graph_error(g, "dtype float32 differs from the graph's float64");
    tg_graph_free(g);
    tg_params_free(ps);
}

Test(params, grads_accumulate_until_zeroed)
{
    tg_params *ps = tg_params_new(TG_F64);
    tg_param *w = tg_params_add(ps, "w", 1, (int64_t[]){2});
    ((double *)w->value.data)[0] = 3;
    ((double *)w->value.data)[1] = -1;
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *y = tg_sum(g, tg_square(g, tg_param_node(g, w)), NULL, 0, false);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    cr_assert_float_eq(((double *)w->grad.data)[0], 12.0, 1e-12);   /* 2 * 2x */
    tg_params_zero_grad(ps);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    cr_assert_float_eq(((double *)w->grad.data)[0], 6.0, 1e-12);
    cr_assert_float_eq(((double *)w->grad.data)[1], -2.0, 1e-12);
    tg_graph_free(g);
    tg_params_free(ps);
}

Test(params, initialisers_match_pytorch_bounds)
{
    tg_rng r;
    tg_rng_seed(&r, 42);
    tg_tensor *w = tg_tensor_new(TG_F64, 2, (int64_t[]){256, 64});
    tg_init_kaiming_uniform(w, sqrt(5.0), &r);          /* nn.Linear: U(+-1/sqrt(64)) */
    double lo = 1, hi = -1, mean = 0;
    for (int64_t i = 0; i < w->numel; i++) {
        double v = tg_tensor_get(w, i);
        lo = fmin(lo, v), hi = fmax(hi, v), mean += v / (double)w->numel;
    }
    cr_assert(lo >= -0.125 && hi <= 0.125, "kaiming bound: [%g, %g]", lo, hi);
    cr_assert(lo < -0.12 && hi > 0.12, "kaiming range not covered: [%g, %g]", lo, hi);
    cr_assert(fabs(mean) < 0.005);
    tg_init_normal(w, 0, 1, &r);
    double var = 0;
    mean = 0;
    for (int64_t i = 0; i < w->numel; i++) mean += tg_tensor_get(w, i) / (double)w->numel;
    for (int64_t i = 0; i < w->numel; i++) var += pow(tg_tensor_get(w, i) - mean, 2) / (double)w->numel;
    cr_assert(fabs(mean) < 0.03 && fabs(var - 1) < 0.05, "randn: mean %g var %g", mean, var);
    tg_init_trunc_normal(w, 0, 0.02, -0.04, 0.04, &r);
    for (int64_t i = 0; i < w->numel; i++) cr_assert(fabs(tg_tensor_get(w, i)) <= 0.04);
    tg_tensor_free(w);
}

Test(params, same_seed_same_bits)
{
    tg_rng a, b;
    tg_rng_seed(&a, 7);
    tg_rng_seed(&b, 7);
    for (int i = 0; i < 100; i++) cr_assert_eq(tg_rng_next(&a), tg_rng_next(&b));
    tg_rng_seed(&b, 8);
    cr_assert_neq(tg_rng_next(&a), tg_rng_next(&b));
}

/* ---- threads ---- */

static void count_range(void *ctx, int64_t b, int64_t e, int tid)
{
    int *hits = ctx;
    (void)tid;
    for (int64_t i = b; i < e; i++) __atomic_add_fetch(&hits[i], 1, __ATOMIC_RELAXED);
}

Test(threads, every_index_once)
{
    static int hits[10007];
    for (int t = 1; t <= 3; t++) {
        cr_assert_eq(tg_threads_set(t), TG_OK);
        memset(hits, 0, sizeof hits);
        tg_parallel_for(10007, 7, count_range, hits);
        for (int i = 0; i < 10007; i++) cr_assert_eq(hits[i], 1, "threads %d index %d", t, i);
    }
    cr_assert_neq(tg_threads_set(-1), TG_OK);
    cr_assert_eq(tg_threads_set(0), TG_OK);
}

/* ---- the planner shares memory between buffers whose lifetimes do not overlap ---- */

static tg_node *chain(tg_graph *g, tg_node *x, int depth, tg_node **mid)
{
    tg_node *h = x;
    for (int i = 0; i < depth; i++) {
        h = tg_add(g, tg_scale(g, h, 0.9), tg_square(g, tg_scale(g, h, 0.1)));
        if (i == depth / 2 && mid) *mid = h;
    }
    return tg_sum(g, h, NULL, 0, false);
}

Test(planner, forward_only_graphs_reuse_values)
{
    const int64_t n = 4096, depth = 20;
    size_t one = (size_t)n * sizeof(float);
    double want = 0;
    for (int pass = 0; pass < 2; pass++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
        tg_node *y = chain(g, x, (int)depth, NULL);
        if (pass == 1) tg_graph_set_grad_enabled(g, false);
        tt_randn((tg_tensor *)tg_node_value(x), 5);
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        double got = tg_tensor_get(tg_node_value(y), 0);
        if (pass == 0) {
            want = got;
            /* with gradients on, every value is kept: 4 per step */
            cr_assert_geq(tg_graph_planned_bytes(g), (size_t)(4 * depth) * one);
            tg_graph_free(g);
            continue;
        }
        cr_assert_float_eq(got, want, 1e-9 * fabs(want) + 1e-9, "same result with reuse");
        cr_assert_leq(tg_graph_planned_bytes(g), (size_t)8 * one,
                      "forward-only plan holds %zu bytes, expected a few buffers",
                      tg_graph_planned_bytes(g));
        cr_assert_eq(tg_graph_backward(g, y, NULL), TG_ERR_STATE);
        tt_assert_last_error("gradients are disabled");
        tg_graph_free(g);
    }
}

/* tg_graph_set_share_values: a training graph whose values go once the
 * backward that reads them has run. Same loss and gradient as the default
 * plan, in less memory: add and scale read no values in their backward, so
 * of the 4 values per step only square's input stays to the backward. */
Test(planner, shared_values_same_gradients_less_memory)
{
    const int64_t n = 4096, depth = 20;
    size_t bytes[2];
    double loss[2];
    float *dx[2];
    for (int share = 0; share < 2; share++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_graph_set_share_values(g, share);
        tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
        cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
        tg_node *y = chain(g, x, (int)depth, NULL);
        tt_randn((tg_tensor *)tg_node_value(x), 5);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK, "%s", tg_last_error());
        bytes[share] = tg_graph_planned_bytes(g);
        loss[share] = tg_tensor_get(tg_node_value(y), 0);
        dx[share] = malloc((size_t)n * sizeof(float));
        memcpy(dx[share], tg_node_grad(x)->data, (size_t)n * sizeof(float));
        tg_graph_free(g);
    }
    cr_expect_eq(loss[0], loss[1]);
    cr_expect(memcmp(dx[0], dx[1], (size_t)n * sizeof(float)) == 0, "gradients differ");
    size_t one = (size_t)n * sizeof(float);
    cr_expect_leq(bytes[1] + (size_t)(2 * depth) * one, bytes[0],
                  "shared plan %zu bytes, default %zu", bytes[1], bytes[0]);
    free(dx[0]);
    free(dx[1]);
}

/* Attention then an MLP stack, [T, d]: a = sdpa of three linear projections
 * of x seen as [1, T, 2, d/2]; then per block h = ln(h + fc2(gelu(fc1(h)))).
 * The backward's peak is in the blocks, while Q, K, V wait for sdpa's. */
static tg_node *remat_net(tg_graph *g, tg_params *ps, tg_node *x, int64_t d, int blocks)
{
    const int64_t T = tg_node_value(x)->shape[0];
    tg_node *qkv[3];
    for (int k = 0; k < 3; k++) {
        tg_node *w = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, d}, "attn.w%d", k));
        qkv[k] = tg_reshape(g, tg_linear(g, x, w, NULL), 4, (int64_t[]){1, T, 2, d / 2});
    }
    tg_node *h = tg_reshape(g, tg_sdpa(g, qkv[0], qkv[1], qkv[2], true, 0.5, 0), 2,
                            (int64_t[]){T, d});
    for (int b = 0; b < blocks; b++) {
        tg_node *w1 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){2 * d, d}, "b%d.w1", b));
        tg_node *w2 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, 2 * d}, "b%d.w2", b));
        tg_node *gm = tg_param_node(g, tg_params_addf(ps, 1, &d, "b%d.gamma", b));
        tg_node *f = tg_linear(g, tg_gelu(g, tg_linear(g, h, w1, NULL), TG_GELU_NONE), w2, NULL);
        h = tg_layer_norm(g, tg_add(g, h, f), 1, &d, gm, NULL, 1e-5);
    }
    return h;
}

/* Recomputed values (TG_OP_RECOMPUTE: GELU and layer_norm always with shared
 * values; linear outputs with tg_graph_set_recompute): the same bits as the
 * default plan, in less memory each step. Reading a recomputed value that
 * was not recomputed would read reused memory and change the gradients. */
Test(planner, recomputed_values_same_bits_less_memory)
{
    const int64_t T = 64, d = 32;
    size_t bytes[3];
    float *grads[3];
    int64_t total = 0;
    for (int mode = 0; mode < 3; mode++) {
        tg_rng r;
        tg_rng_seed(&r, 4);
        tg_params *ps = tg_params_new(TG_F32);
        tg_graph *g = tg_graph_new(TG_F32);
        tg_graph_set_share_values(g, mode > 0);
        tg_graph_set_recompute(g, mode == 2);
        tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){T, d});
        cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
        tg_node *y = remat_net(g, ps, x, d, 3);
        cr_assert_not_null(y, "%s", tg_graph_error(g));
        for (int i = 0; i < tg_params_count(ps); i++) {
            tg_tensor *p = &tg_params_at(ps, i)->value;
            for (int64_t k = 0; k < p->numel; k++)
                tg_tensor_set(p, k, (p->rank == 1 ? 1 : 0.2) + 0.2 * tg_rng_normal(&r));
        }
        tt_randn((tg_tensor *)tg_node_value(x), 5);
        tg_tensor *dy = tg_tensor_new(TG_F32, 2, tg_node_value(y)->shape);
        tt_randn(dy, 6);
        for (int rep = 0; rep < 2; rep++) {   /* a second step sees the forward's buffers back */
            tg_params_zero_grad(ps);
            cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
            cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
        }
        bytes[mode] = tg_graph_planned_bytes(g);
        total = tg_node_value(x)->numel;
        for (int i = 0; i < tg_params_count(ps); i++) total += tg_params_at(ps, i)->grad.numel;
        grads[mode] = malloc((size_t)total * sizeof(float));
        memcpy(grads[mode], tg_node_grad(x)->data, (size_t)(T * d) * sizeof(float));
        int64_t at = T * d;
        for (int i = 0; i < tg_params_count(ps); i++) {
            const tg_tensor *gr = &tg_params_at(ps, i)->grad;
            memcpy(grads[mode] + at, gr->data, (size_t)gr->numel * sizeof(float));
            at += gr->numel;
        }
        tg_tensor_free(dy);
        tg_graph_free(g);
        tg_params_free(ps);
    }
    for (int mode = 1; mode < 3; mode++)
        cr_expect(memcmp(grads[0], grads[mode], (size_t)total * sizeof(float)) == 0,
                  "plan %d: gradients differ from the default plan", mode);
    /* share: GELU outputs [T, 2d] and LN outputs [T, d] go after the forward;
     * recompute: so do the Q, K, V projections [T, d] */
    const size_t td = (size_t)(T * d) * sizeof(float);
    cr_expect_lt(bytes[1], bytes[0], "shared %zu, default %zu", bytes[1], bytes[0]);
    cr_expect_leq(bytes[2] + 2 * td, bytes[1], "recompute %zu, shared %zu", bytes[2], bytes[1]);
    for (int mode = 0; mode < 3; mode++) free(grads[mode]);
}

/* y = fc2(gelu(fc1(x))), x [T, d], hidden [T, H]; parameters from ps */
static tg_node *mlp_net(tg_graph *g, tg_params *ps, tg_node *x, int64_t d, int64_t H)
{
    tg_node *w1 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){H, d}, "w1"));
    tg_node *w2 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, H}, "w2"));
    return tg_linear(g, tg_gelu(g, tg_linear(g, x, w1, NULL), TG_GELU_NONE), w2, NULL);
}

/* TG_OP_BWD_DX_OVER_X (linear) and _OVER_DY (GELU): in an MLP's backward the
 * recomputed GELU output, its gradient and the pre-activation's gradient
 * are one [T, H] buffer, so with the pre-activation that is two, not four;
 * and the gradients are the bits of the default plan (where the value
 * stays): a linear that wrote dX before reading X for dW would differ. */
Test(planner, mlp_backward_gradients_take_dead_memory)
{
    const int64_t T = 64, d = 8, H = 256;
    size_t bytes[2];
    float *grads[2];
    int64_t total = 0;
    for (int share = 0; share < 2; share++) {
        tg_rng r;
        tg_rng_seed(&r, 7);
        tg_params *ps = tg_params_new(TG_F32);
        tg_graph *g = tg_graph_new(TG_F32);
        tg_graph_set_share_values(g, share);
        tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){T, d});
        cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
        tg_node *y = mlp_net(g, ps, x, d, H);
        cr_assert_not_null(y, "%s", tg_graph_error(g));
        for (int i = 0; i < tg_params_count(ps); i++)
            tt_randn(&tg_params_at(ps, i)->value, 10 + (uint64_t)i);
        tt_randn((tg_tensor *)tg_node_value(x), 5);
        tg_tensor *dy = tg_tensor_new(TG_F32, 2, tg_node_value(y)->shape);
        tt_randn(dy, 6);
        for (int rep = 0; rep < 2; rep++) {
            tg_params_zero_grad(ps);
            cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
            cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
        }
        bytes[share] = tg_graph_planned_bytes(g);
        total = T * d;
        for (int i = 0; i < tg_params_count(ps); i++) total += tg_params_at(ps, i)->grad.numel;
        grads[share] = malloc((size_t)total * sizeof(float));
        memcpy(grads[share], tg_node_grad(x)->data, (size_t)(T * d) * sizeof(float));
        int64_t at = T * d;
        for (int i = 0; i < tg_params_count(ps); i++) {
            const tg_tensor *gr = &tg_params_at(ps, i)->grad;
            memcpy(grads[share] + at, gr->data, (size_t)gr->numel * sizeof(float));
            at += gr->numel;
        }
        tg_tensor_free(dy);
        tg_graph_free(g);
        tg_params_free(ps);
    }
    cr_expect(memcmp(grads[0], grads[1], (size_t)total * sizeof(float)) == 0,
              "shared plan: gradients differ from the default plan");
    /* the peak: pre-activation + one shared hidden buffer + y and its
     * gradient, the fc2 scratch aside; three hidden buffers would be 192 KiB */
    const size_t th = (size_t)(T * H) * sizeof(float), td = (size_t)(T * d) * sizeof(float);
    cr_expect_leq(bytes[1], 2 * th + 4 * td + 4096, "shared plan %zu bytes (a [T, H] is %zu)",
                  bytes[1], th);
    for (int share = 0; share < 2; share++) free(grads[share]);
}

/* TG_OP_BWD_DX_OVER_DY on a chain of dropouts, neg and scale: each backward
 * writes its input's gradient over its own, so the backward holds one [n]
 * gradient for the chain beside x's, and x's gradient is the product of the
 * factors (x = 1: three masks of 0 or 2, two -1, one 0.5: each element 0 or
 * 4, summing to the loss). */
Test(planner, elementwise_chain_shares_one_gradient)
{
    const int64_t n = 4096;
    const int depth = 6;
    tg_graph *g = tg_graph_new(TG_F32);
    tg_graph_set_training(g, true);
    tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
    cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
    tg_node *h = x;
    for (int i = 0; i < depth; i++)
        h = i % 2 == 0 ? tg_dropout(g, h, 0.5) : i == 3 ? tg_scale(g, h, 0.5) : tg_neg(g, h);
    tg_node *y = tg_sum(g, h, NULL, 0, false);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    tg_tensor *xv = (tg_tensor *)tg_node_value(x);
    for (int64_t i = 0; i < n; i++) ((float *)xv->data)[i] = 1;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK, "%s", tg_last_error());
    const float *dx = tg_node_grad(x)->data;
    double sum = 0;
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(dx[i] == 0 || dx[i] == 4, "dx[%lld] = %g", (long long)i, dx[i]);
        sum += dx[i];
        kept += dx[i] != 0;
    }
    cr_expect_eq(sum, tg_tensor_get(tg_node_value(y), 0));
    cr_expect(kept > 400 && kept < 630, "%lld of %lld kept (expected about 512)", (long long)kept,
              (long long)n);
    /* default plan: the values stay (n each); gradients: x's and one shared */
    const size_t one = (size_t)n * sizeof(float);
    cr_expect_leq(tg_graph_planned_bytes(g), (size_t)(depth + 2) * one + 4096,
                  "planned %zu bytes, one [n] is %zu", tg_graph_planned_bytes(g), one);
    tg_graph_free(g);
}

/* TG_OP_FWD_INPLACE: without gradients, an elementwise chain on a linear's
 * output (GELU, an eval-mode dropout, scale, relu, a residual add) runs in
 * that output's memory, one [T, H] buffer instead of two; the result is the
 * bits of the default training plan, where every value has its own. */
Test(planner, forward_only_elementwise_chain_in_place)
{
    const int64_t T = 64, d = 16, H = 256;
    size_t bytes[2];
    float *out[2];
    for (int lean = 0; lean < 2; lean++) {
        tg_params *ps = tg_params_new(TG_F32);
        tg_graph *g = tg_graph_new(TG_F32);
        tg_graph_set_grad_enabled(g, !lean);
        tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){T, d});
        tg_node *w = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){H, d}, "w"));
        tg_node *h = tg_linear(g, x, w, NULL);
        tg_node *f = tg_relu(g, tg_scale(g, tg_dropout(g, tg_gelu(g, h, TG_GELU_TANH), 0.3), -2));
        tg_node *y = tg_add(g, f, tg_linear(g, x, w, NULL));
        cr_assert_not_null(y, "%s", tg_graph_error(g));
        tt_randn(&tg_params_at(ps, 0)->value, 3);
        tt_randn((tg_tensor *)tg_node_value(x), 4);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        bytes[lean] = tg_graph_planned_bytes(g);
        out[lean] = malloc((size_t)(T * H) * sizeof(float));
        memcpy(out[lean], tg_node_value(y)->data, (size_t)(T * H) * sizeof(float));
        tg_graph_free(g);
        tg_params_free(ps);
    }
    cr_expect(memcmp(out[0], out[1], (size_t)(T * H) * sizeof(float)) == 0,
              "in-place forward differs from the default plan");
    /* the chain's buffer and the second linear's output, which the add reads */
    const size_t th = (size_t)(T * H) * sizeof(float);
    cr_expect_leq(bytes[1], 2 * th + 4096, "forward-only plan %zu bytes, a [T, H] is %zu",
                  bytes[1], th);
    for (int lean = 0; lean < 2; lean++) free(out[lean]);
}

/* A recomputed chain (TG_OP_RECOMPUTE): rearrange(layer_norm(x)) feeding a
 * linear is made again, from x, for the linear's backward rather than kept
 * through the MLP's backward after it: the plan is that of the same net
 * without the rearrange (layer_norm alone is recomputed), and the gradients
 * are the default plan's bits. */
Test(planner, recomputed_chain_is_not_kept)
{
    const int64_t T = 64, d = 32, H = 128;
    size_t bytes[2][2];
    float *gx[2][2];
    for (int perm = 0; perm < 2; perm++)
        for (int share = 0; share < 2; share++) {
            tg_params *ps = tg_params_new(TG_F32);
            tg_graph *g = tg_graph_new(TG_F32);
            tg_graph_set_share_values(g, share);
            tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){T, d});
            cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
            tg_node *h = tg_layer_norm(g, x, 1, &d, NULL, NULL, 1e-5);
            if (perm)
                h = tg_rearrange(g, h, "(a b) d -> (b a) d", 1, (tg_axis_len[]){{"a", 8}});
            tg_node *w0 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, d}, "w0"));
            tg_node *y = mlp_net(g, ps, tg_linear(g, h, w0, NULL), d, H);
            cr_assert_not_null(y, "%s", tg_graph_error(g));
            for (int i = 0; i < tg_params_count(ps); i++)
                tt_randn(&tg_params_at(ps, i)->value, 20 + (uint64_t)i);
            tt_randn((tg_tensor *)tg_node_value(x), 5);
            tg_tensor *dy = tg_tensor_new(TG_F32, 2, tg_node_value(y)->shape);
            tt_randn(dy, 6);
            cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
            cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
            bytes[perm][share] = tg_graph_planned_bytes(g);
            gx[perm][share] = malloc((size_t)(T * d) * sizeof(float));
            memcpy(gx[perm][share], tg_node_grad(x)->data, (size_t)(T * d) * sizeof(float));
            tg_tensor_free(dy);
            tg_graph_free(g);
            tg_params_free(ps);
        }
    for (int perm = 0; perm < 2; perm++) {
        cr_expect(memcmp(gx[perm][0], gx[perm][1], (size_t)(T * d) * sizeof(float)) == 0,
                  "perm %d: shared plan's gradient differs", perm);
        for (int share = 0; share < 2; share++) free(gx[perm][share]);
    }
    cr_expect_eq(bytes[1][1], bytes[0][1], "with the rearrange %zu bytes, without %zu",
                 bytes[1][1], bytes[0][1]);
}

/* tg_graph_set_profile: per op name, in order of first appearance, with its
 * node count; every op's forward and backward took some time; off means
 * zeros; a short output array still gets the full count back. */
Test(profile, times_per_op_name)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){64, 64});
    tg_node_set_requires_grad(x, true);
    tt_randn((tg_tensor *)tg_node_value(x), 1);
    tg_node *h = tg_gelu(g, tg_scale(g, x, 0.5), TG_GELU_NONE);
    tg_node *y = tg_sum(g, tg_gelu(g, tg_add(g, h, x), TG_GELU_TANH), NULL, 0, false);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    tg_op_time t[8];
    for (int on = 0; on < 2; on++) {
        tg_graph_set_profile(g, on);
        for (int rep = 0; rep < 3; rep++) {
            cr_assert_eq(tg_graph_forward(g), TG_OK);
            cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
        }
        cr_assert_eq(tg_graph_profile(g, t, 8), 4);
        const char *names[4] = {"scale", "gelu", "add", "sum"};
        const long nodes[4] = {1, 2, 1, 1};
        for (int k = 0; k < 4; k++) {
            cr_assert_str_eq(t[k].op, names[k]);
            cr_assert_eq(t[k].nodes, nodes[k], "%s", names[k]);
            if (on) {
                cr_assert_gt(t[k].forward_s, 0, "%s", names[k]);
                cr_assert_gt(t[k].backward_s, 0, "%s", names[k]);
            } else {
                cr_assert_eq(t[k].forward_s + t[k].backward_s, 0, "%s", names[k]);
            }
        }
    }
    cr_assert_eq(tg_graph_profile(g, t, 2), 4);   /* only two written, all four counted */
    cr_assert_str_eq(t[1].op, "gelu");
    tg_graph_free(g);
}

Test(planner, kept_values_survive_reuse)
{
    const int64_t n = 256;
    double want = 0, got = 0;
    for (int pass = 0; pass < 2; pass++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
        tg_node *mid = NULL;
        chain(g, x, 10, &mid);
        tg_node_keep(mid);
        tg_graph_set_grad_enabled(g, pass == 0);
        tt_randn((tg_tensor *)tg_node_value(x), 9);
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += tg_tensor_get(tg_node_value(mid), i);
        if (pass == 0) want = s;
        else got = s;
        tg_graph_free(g);
    }
    cr_assert_float_eq(got, want, 1e-9);
}

Test(planner, training_graphs_share_gradient_memory)
{
    const int64_t n = 4096, depth = 20;
    size_t one = (size_t)n * sizeof(float);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
    tg_node_set_requires_grad(x, true);
    tg_node *y = chain(g, x, (int)depth, NULL);
    tt_randn((tg_tensor *)tg_node_value(x), 5);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    /* values: 4 per step kept; gradients: a few live at once, not 4 per step */
    size_t planned = tg_graph_planned_bytes(g);
    cr_assert_leq(planned, (size_t)(4 * depth + 10) * one, "planned %zu bytes", planned);
    /* and they are right: compare with a float64 gradcheck of a shorter chain */
    tg_graph_free(g);
    g = tg_graph_new(TG_F64);
    const int64_t m = 5;
    x = tg_input(g, "x", TG_F64, 1, &m);
    tg_node_set_requires_grad(x, true);
    tt_randn((tg_tensor *)tg_node_value(x), 6);
    tt_gradcheck(g, chain(g, x, 6, NULL), 3);
    tg_graph_free(g);
}
