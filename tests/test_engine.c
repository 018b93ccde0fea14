/*
 * test_engine.c - the graph engine itself: re-running with new inputs,
 * fan-out accumulation, skipped nodes, sticky errors, scopes, no allocation
 * inside a planned run, the finite check, gradcheck catching a wrong
 * backward, parameters and initialisers, threads, profiling. The memory plan
 * has its own suite (test_planner.c).
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

Test(engine, negative_input_rank_is_named_negative)
{
    tg_graph *g = tg_graph_new(TG_F32);
    cr_assert_null(tg_input(g, "x", TG_F32, -1, (int64_t[]){3}));
    tt_assert_graph_error(g, "rank -1 is negative");
    cr_assert_null(strstr(tg_graph_error(g), "above the maximum"), "%s", tg_graph_error(g));
    tg_graph_free(g);
}
