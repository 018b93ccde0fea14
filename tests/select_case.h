/*
 * select_case.h - the fixture runner shared by test_softmax.c, test_topk.c,
 * test_scatter.c and test_mask.c (fixtures: tests/fixtures/gen_select.py).
 *
 * A case names a folder under select/ and a build function. Its inputs are
 * in<i>.npy: float ones become graph-dtype inputs (requires-grad exactly when
 * grad<i>.npy exists), int64/bool ones inputs of that dtype. The fixture test
 * runs a float32 graph and compares out0 (and out1, e.g. topk indices,
 * exactly) and every grad<i> at atol 1e-6 / rtol 1e-5; the gradcheck test runs
 * the same graph in float64 through tt_gradcheck.
 * Include after testutil.h; every function is static.
 */
#ifndef TG_SELECT_CASE_H
#define TG_SELECT_CASE_H

#include <stdio.h>

#include "testutil.h"

#define SEL_MAX_IN 4

/* Build the op on in[]; return output 0 and set *out1 to a second output (or leave NULL). */
typedef tg_node *(*sel_build_fn)(tg_graph *g, tg_node **in, tg_node **out1);

typedef struct {
    const char  *name;        /* folder under select/ */
    int          n_in;
    sel_build_fn build;
    bool         gradcheck;   /* F64 gradcheck applies (no NaN/inf output, no ties,
                                 unique scatter targets) */
} sel_case;

static tg_node *sel_build(const sel_case *c, tg_graph *g, tg_node **in, tg_node **out1)
{
    char dir[96], file[32];
    snprintf(dir, sizeof dir, "select/%s", c->name);
    for (int i = 0; i < c->n_in; i++) {
        snprintf(file, sizeof file, "in%d.npy", i);
        tg_tensor *x = tt_load(dir, file);
        bool fl = tg_dtype_is_float(x->dtype);
        in[i] = tg_input(g, file, fl ? tg_graph_dtype(g) : x->dtype, x->rank, x->shape);
        cr_assert(in[i], "%s: %s", c->name, tg_graph_error(g));
        cr_assert(tg_node_set(in[i], x) == TG_OK, "%s", tg_last_error());
        snprintf(file, sizeof file, "grad%d.npy", i);
        if (fl && tt_exists(dir, file)) cr_assert(tg_node_set_requires_grad(in[i], true) == TG_OK);
        tg_tensor_free(x);
    }
    *out1 = NULL;
    tg_node *y = c->build(g, in, out1);
    cr_assert(y, "%s: %s", c->name, tg_graph_error(g) ? tg_graph_error(g) : "NULL");
    return y;
}

/* Exact comparison (int64 indices). */
static void sel_assert_equal(const tg_tensor *got, const tg_tensor *want, const char *what)
{
    char a[128], b[128];
    cr_assert(tg_tensor_same_shape(got, want), "%s: shape %s, expected %s", what,
              tg_shape_str(got->rank, got->shape, a, sizeof a),
              tg_shape_str(want->rank, want->shape, b, sizeof b));
    cr_assert_eq(got->dtype, want->dtype, "%s: dtype %s, expected %s", what,
                 tg_dtype_name(got->dtype), tg_dtype_name(want->dtype));
    for (int64_t i = 0; i < want->numel; i++)
        cr_assert_eq(tg_tensor_get(got, i), tg_tensor_get(want, i),
                     "%s: element %lld is %g, expected %g", what, (long long)i,
                     tg_tensor_get(got, i), tg_tensor_get(want, i));
}

static void sel_fixture(const sel_case *c)
{
    char dir[96], file[32];
    snprintf(dir, sizeof dir, "select/%s", c->name);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in[SEL_MAX_IN], *y1;
    tg_node *y = sel_build(c, g, in, &y1);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s: %s", c->name, tg_last_error());
    tg_tensor *want = tt_load(dir, "out0.npy");
    tt_assert_close(tg_node_value(y), want, 1e-6, 1e-5, "out0");
    tg_tensor_free(want);
    if (tt_exists(dir, "out1.npy")) {
        cr_assert(y1, "%s: the case has a second output", c->name);
        want = tt_load(dir, "out1.npy");
        if (tg_dtype_is_float(want->dtype))
            tt_assert_close(tg_node_value(y1), want, 1e-6, 1e-5, "out1");
        else
            sel_assert_equal(tg_node_value(y1), want, "out1");
        tg_tensor_free(want);
    }
    tg_tensor *dy = tt_load(dir, "dout0.npy");
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK, "%s: %s", c->name, tg_last_error());
    int checked = 0;
    for (int i = 0; i < c->n_in; i++) {
        snprintf(file, sizeof file, "grad%d.npy", i);
        if (!tt_exists(dir, file)) continue;
        tg_tensor *gw = tt_load(dir, file);
        tt_assert_close(tg_node_grad(in[i]), gw, 1e-6, 1e-5, file);
        tg_tensor_free(gw);
        checked++;
    }
    cr_assert(checked > 0, "%s: no gradient compared", c->name);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

static void sel_gradcheck(const sel_case *c)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *in[SEL_MAX_IN], *y1;
    tg_node *y = sel_build(c, g, in, &y1);
    tt_gradcheck(g, y, 7);
    tg_graph_free(g);
}

/* Criterion parameters must hold no pointers: indices into a case table.
 * SEL_PARAMS(cases, n, only_gradcheck) fills a static index array. */
static struct criterion_test_params sel_params(const sel_case *cases, int n, bool only_gc, int *idx)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!only_gc || cases[i].gradcheck) idx[m++] = i;
    return cr_make_param_array(int, idx, (size_t)m);
}

/* An input leaf of the graph's float dtype. */
static inline tg_node *sel_in(tg_graph *g, int rank, const int64_t *shape)
{
    return tg_input(g, "x", tg_graph_dtype(g), rank, shape);
}

#endif
