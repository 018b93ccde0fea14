/*
 * test_einops.c - rearrange / repeat / reduce against PyTorch fixtures
 * (forward and gradient, float32), gradcheck in float64, exact small cases,
 * integer and bool tensors, empty tensors; prod (exact at zeros) and reduce
 * over int64. Bad input: test_einops_errors.c.
 * Fixtures: tests/fixtures/gen_einops.py.
 */
#include "testutil.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"

#include "einops_case.h"

static const ein_case cases[] = {
    {"tsa_merge", R, "b ts_d seg_num d_model -> (b ts_d) seg_num d_model", SUM, 0, {{0}}, true},
    {"tsa_dim_send", R, "(b ts_d) seg_num d_model -> (b seg_num) ts_d d_model", SUM, 1, {{"b", 2}}, false},
    {"tsa_final", R, "(b seg_num) ts_d d_model -> b ts_d seg_num d_model", SUM, 1, {{"b", 2}}, false},
    {"out_merge", R, "b out_d seg seg_len -> b (out_d seg) seg_len", SUM, 0, {{0}}, true},
    {"out_split", R, "b (out_d seg) seg_len -> b (seg seg_len) out_d", SUM, 1, {{"out_d", 3}}, false},
    {"ellipsis_group", R, "a ... -> (...) a", SUM, 0, {{0}}, false},
    {"split_hw", R, "b (h1 h) (w1 w) c -> (b h1 w1) h w c", SUM, 2, {{"h1", 2}, {"w1", 2}}, false},
    {"transpose_flat", R, "a b -> (b a)", SUM, 0, {{0}}, false},
    {"units", R, "1 a () b -> b (a 1) 1", SUM, 0, {{0}}, false},
    {"scalar", R, " -> ", SUM, 0, {{0}}, true},
    {"scalar_ellipsis", R, "... -> ...", SUM, 0, {{0}}, true},
    {"scalar_units", R, " -> 1 1", SUM, 0, {{0}}, true},
    {"router", P, "seg_num factor d_model -> (repeat seg_num) factor d_model", SUM, 1, {{"repeat", 2}}, false},
    {"pos_batch", P, "b ts_d l d -> (repeat b) ts_d l d", SUM, 1, {{"repeat", 3}}, false},
    {"interleave", P, "a -> (a r)", SUM, 1, {{"r", 2}}, false},
    {"tile", P, "a -> (r a)", SUM, 1, {{"r", 2}}, false},
    {"copies", P, "() ... d -> 1 (copy1 d copy2) ...", SUM, 2, {{"copy1", 2}, {"copy2", 3}}, false},
    {"anon_units", P, "1 b c d -> (1 1) (1 b) 2 c 3 d (1 1)", SUM, 0, {{0}}, false},
    {"scalar_repeat", P, " -> a", SUM, 1, {{"a", 3}}, false},
    {"anon_new", P, "h w -> h w 3", SUM, 0, {{0}}, false},
    {"repeat_group", P, "h w -> (h2 h) w c", SUM, 2, {{"h2", 2}, {"c", 4}}, false},
    {"pool_sum", D, "b (h 2) w -> b h", SUM, 0, {{0}}, false},
    {"pool_mean", D, "b (h 2) w -> b h", MEAN, 0, {{0}}, false},
    {"pool_max", D, "b (h 2) w -> b h", MAX, 0, {{0}}, false},
    {"pool_min", D, "b (h 2) w -> b h", MIN, 0, {{0}}, false},
    {"bt_sum", D, "(b t) s d -> b d", SUM, 1, {{"b", 2}}, false},
    {"bt_mean", D, "(b t) s d -> b d", MEAN, 1, {{"b", 2}}, false},
    {"bt_max", D, "(b t) s d -> b d", MAX, 1, {{"b", 2}}, false},
    {"bt_min", D, "(b t) s d -> b d", MIN, 1, {{"b", 2}}, false},
    {"regroup_sum", D, "a b c -> (c a) 1", SUM, 0, {{0}}, false},
    {"ellipsis_max", D, "... c -> c", MAX, 0, {{0}}, false},
    /* gen_einops.py; pool_prod has a slice with one zero and one with two */
    {"pool_prod", D, "b (h 2) w -> b h", PROD, 0, {{0}}, false},
    {"bt_prod", D, "(b t) s d -> b d", PROD, 1, {{"b", 2}}, false},
};

#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params case_params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

static tg_node *build_case(const ein_case *c, tg_graph *g, tg_node **in, tg_tensor **x)
{
    char dir[96];
    snprintf(dir, sizeof dir, "einops/%s", c->name);
    *x = tt_load(dir, "in0.npy");
    *in = tg_input(g, "x", tg_graph_dtype(g), (*x)->rank, (*x)->shape);
    cr_assert(tg_node_set(*in, *x) == TG_OK);
    cr_assert(tg_node_set_requires_grad(*in, true) == TG_OK);
    tg_node *y = tt_ein_build(c, g, *in);
    cr_assert(y, "%s: %s", c->name, tg_graph_error(g));
    return y;
}

ParameterizedTestParameters(einops, fixture) { return case_params(); }

ParameterizedTest(int *idx, einops, fixture)
{
    const ein_case *c = &cases[*idx];
    char dir[96];
    snprintf(dir, sizeof dir, "einops/%s", c->name);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in;
    tg_tensor *x;
    tg_node *y = build_case(c, g, &in, &x);
    cr_assert_eq((y->op->flags & TG_OP_VIEW) != 0, c->view, "%s: view is %d, expected %d",
                 c->name, (y->op->flags & TG_OP_VIEW) != 0, c->view);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    tg_tensor *want = tt_load(dir, "out0.npy"), *dy = tt_load(dir, "dout0.npy");
    tt_assert_close(tg_node_value(y), want, 1e-6, 1e-5, c->name);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK, "%s", tg_last_error());
    tg_tensor *gw = tt_load(dir, "grad0.npy");
    tt_assert_close(tg_node_grad(in), gw, 1e-6, 1e-5, "grad0");
    /* a second run gives the same (no state leaks between runs) */
    cr_assert(tg_graph_forward(g) == TG_OK && tg_graph_backward(g, y, dy) == TG_OK);
    tt_assert_close(tg_node_value(y), want, 1e-6, 1e-5, c->name);
    tt_assert_close(tg_node_grad(in), gw, 1e-6, 1e-5, "grad0 (second run)");
    tg_tensor_free(gw);
    tg_tensor_free(want);
    tg_tensor_free(dy);
    tg_tensor_free(x);
    tg_graph_free(g);
}

ParameterizedTestParameters(einops, gradcheck) { return case_params(); }

ParameterizedTest(int *idx, einops, gradcheck)
{
    const ein_case *c = &cases[*idx];
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *in;
    tg_tensor *x;
    tg_node *y = build_case(c, g, &in, &x);
    tt_gradcheck(g, y, 7);
    tg_tensor_free(x);
    tg_graph_free(g);
}

/* A chain of all three (view, copy, repeat, reduce) and fan-out into an add. */
Test(einops, gradcheck_chain)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){2, 3, 4});
    tt_randn((tg_tensor *)tg_node_value(x), 3);
    cr_assert(tg_node_set_requires_grad(x, true) == TG_OK);
    tg_node *v = tg_rearrange(g, x, "a b c -> (a b) c", 0, NULL);
    tg_node *p = tg_rearrange(g, v, "(a b) c -> c b a", 1, (tg_axis_len[]){{"a", 2}});
    tg_node *r = tg_repeat(g, p, "c b a -> c (b k) a", 1, (tg_axis_len[]){{"k", 2}});
    tg_node *m = tg_reduce(g, r, "c (b k) a -> (a c) b", TG_EINOPS_MEAN, 1, (tg_axis_len[]){{"k", 2}});
    tg_node *t = tg_rearrange(g, x, "a b c -> (a c) b", 0, NULL);
    tg_node *y = tg_add(g, m, t);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert(v->op->flags & TG_OP_VIEW);
    tt_gradcheck(g, y, 11);
    tg_graph_free(g);
}

/* Big enough for several threads and for runs longer than one summing block:
 * reduce and repeat's backward against plain loops. */
Test(einops, large_folds)
{
    const int K = 3, A = 4, B = 5000;
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 2, (int64_t[]){K * A, B});
    tg_tensor *xv = (tg_tensor *)tg_node_value(x);
    tt_randn(xv, 5);
    cr_assert(tg_node_set_requires_grad(x, true) == TG_OK);
    tg_axis_len k = {"k", K};
    tg_node *s = tg_reduce(g, x, "(k a) b -> a b", TG_EINOPS_SUM, 1, &k);
    tg_node *mx = tg_reduce(g, x, "(k a) b -> a b", TG_EINOPS_MAX, 1, &k);
    tg_node *r = tg_repeat(g, x, "ka b -> k ka b", 1, &k);
    cr_assert(s && mx && r, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    const double *X = xv->data, *S = tg_node_value(s)->data, *M = tg_node_value(mx)->data;
    for (int a = 0; a < A; a++)
        for (int b = 0; b < B; b++) {
            double sum = 0, best = -INFINITY;
            for (int i = 0; i < K; i++) {
                double v = X[(i * A + a) * B + b];
                sum += v;
                best = v > best ? v : best;
            }
            cr_assert_float_eq(S[a * B + b], sum, 1e-12, "sum at %d,%d", a, b);
            cr_assert_eq(M[a * B + b], best, "max at %d,%d", a, b);
        }
    tg_tensor *dy = tg_tensor_new(TG_F64, 3, (int64_t[]){K, K * A, B});
    tt_randn(dy, 6);
    cr_assert(tg_graph_backward(g, r, dy) == TG_OK);
    const double *DY = dy->data, *GX = tg_node_grad(x)->data;
    for (int64_t i = 0; i < (int64_t)K * A * B; i++) {
        double want = 0;
        for (int c = 0; c < K; c++) want += DY[c * K * A * B + i];
        cr_assert_float_eq(GX[i], want, 1e-12, "repeat grad at %lld", (long long)i);
    }
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* ---- exact small cases (OPS.md 8.2, run with einops) ---- */

static void set_f32(tg_node *n, const float *v)
{
    memcpy(((tg_tensor *)tg_node_value(n))->data, v, (size_t)tg_node_value(n)->numel * sizeof *v);
}

static void assert_f32(const tg_node *n, int64_t numel, const float *want, const char *what)
{
    const tg_tensor *t = tg_node_value(n);
    cr_assert_eq(t->numel, numel, "%s: %lld elements", what, (long long)t->numel);
    const float *p = t->data;
    for (int64_t i = 0; i < numel; i++)
        cr_assert_eq(p[i], want[i], "%s: element %lld is %g, expected %g", what, (long long)i,
                     p[i], want[i]);
}

Test(einops, interleave_vs_tile)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    set_f32(x, (float[]){1, 2});
    tg_axis_len r = {"r", 2};
    tg_node *a = tg_repeat(g, x, "a -> (a r)", 1, &r), *b = tg_repeat(g, x, "a -> (r a)", 1, &r);
    cr_assert(a && b, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    assert_f32(a, 4, (float[]){1, 1, 2, 2}, "(a r)");
    assert_f32(b, 4, (float[]){1, 2, 1, 2}, "(r a)");
    tg_graph_free(g);
}

Test(einops, group_is_c_order)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){2, 3});
    set_f32(x, (float[]){0, 1, 2, 3, 4, 5});
    tg_node *y = tg_rearrange(g, x, "a b -> (b a)", 0, NULL);
    cr_assert(y && tg_graph_forward(g) == TG_OK);
    assert_f32(y, 6, (float[]){0, 3, 1, 4, 2, 5}, "(b a)");
    tg_graph_free(g);
}

Test(einops, max_tie_goes_to_first)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){2, 4});
    set_f32(x, (float[]){1, 3, 3, 2, 5, -1, 5, -1});
    cr_assert(tg_node_set_requires_grad(x, true) == TG_OK);
    tg_node *mx = tg_reduce(g, x, "a b -> a", TG_EINOPS_MAX, 0, NULL);
    tg_node *mn = tg_reduce(g, x, "a b -> a", TG_EINOPS_MIN, 0, NULL);
    tg_node *y = tg_add(g, mx, tg_scale(g, mn, 10));
    cr_assert(y && tg_graph_forward(g) == TG_OK, "%s", tg_graph_error(g));
    assert_f32(mx, 2, (float[]){3, 5}, "max");
    assert_f32(mn, 2, (float[]){1, -1}, "min");
    tg_tensor *dy = tg_tensor_new(TG_F32, 1, (int64_t[]){2});
    ((float *)dy->data)[0] = 1;
    ((float *)dy->data)[1] = 2;
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK);
    const float *gx = tg_node_grad(x)->data;
    float want[8] = {10, 1, 0, 0, 2, 20, 0, 0};
    for (int i = 0; i < 8; i++) cr_assert_eq(gx[i], want[i], "grad[%d] = %g", i, gx[i]);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* Exact ties: a probe moves the pick, which the kinks hook reports, so gradcheck
 * leaves those elements out instead of failing on them. */
Test(einops, gradcheck_ties)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 2, (int64_t[]){2, 3});
    double v[6] = {1, 1, 0.5, 2, 3, 3};
    memcpy(((tg_tensor *)tg_node_value(x))->data, v, sizeof v);
    cr_assert(tg_node_set_requires_grad(x, true) == TG_OK);
    tg_node *y = tg_add(g, tg_reduce(g, x, "a b -> a 1", TG_EINOPS_MAX, 0, NULL),
                        tg_reduce(g, x, "a b -> b", TG_EINOPS_MIN, 0, NULL));
    cr_assert(y, "%s", tg_graph_error(g));
    tg_gradcheck_result res[4];
    int n = 0;
    bool ok = false;
    cr_assert(tg_gradcheck(g, y, &(tg_gradcheck_opts){.seed = 3}, res, 4, &n, &ok) == TG_OK);
    cr_assert(ok && n == 1, "gradcheck failed (worst rel %g)", res[0].max_rel_err);
    cr_assert_gt(res[0].skipped, 0);
    cr_assert_gt(res[0].checked, 0);
    tg_graph_free(g);
}

Test(einops, max_propagates_nan)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){3});
    set_f32(x, (float[]){1, NAN, 2});
    tg_node *y = tg_reduce(g, x, "a -> ", TG_EINOPS_MAX, 0, NULL);
    cr_assert(y && tg_graph_forward(g) == TG_OK);
    cr_assert(isnan(((float *)tg_node_value(y)->data)[0]));
    tg_graph_free(g);
}

/* Grammar corners einops accepts: "01" is a unit axis, keywords and "axis" are
 * names (einops only warns), '(' and ')' separate like spaces, extra spaces,
 * case-sensitive multi-letter names. */
Test(einops, grammar_corners)
{
    static const struct {
        const char *pattern;
        int         rank;
        int64_t     shape[4];
        int         out_rank;
        int64_t     out[4];
    } ok[] = {
        {"a 01 -> a", 2, {2, 1}, 1, {2}},
        {"for axis -> axis for", 2, {2, 3}, 2, {3, 2}},
        {"a(b)c -> c(a b)", 3, {2, 3, 4}, 2, {4, 6}},
        {"  Alex   alex  ->  (alex Alex)  ", 2, {2, 3}, 1, {6}},
        {"(a 1) (1) b -> b 1 a", 3, {2, 1, 3}, 3, {3, 1, 2}},
        {"->", 0, {0}, 0, {0}},
        {"a ... b -> b ... a", 2, {2, 3}, 2, {3, 2}},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, ok[i].rank, ok[i].shape);
        tg_node *y = tg_rearrange(g, x, ok[i].pattern, 0, NULL);
        cr_assert(y, "\"%s\": %s", ok[i].pattern, tg_graph_error(g));
        const tg_tensor *v = tg_node_value(y);
        cr_assert_eq(v->rank, ok[i].out_rank, "\"%s\": rank %d", ok[i].pattern, v->rank);
        for (int d = 0; d < v->rank; d++)
            cr_assert_eq(v->shape[d], ok[i].out[d], "\"%s\": dim %d is %lld", ok[i].pattern, d,
                         (long long)v->shape[d]);
        tg_graph_free(g);
    }
}

/* ---- integer and bool tensors: rearrange and repeat move them, no gradient ---- */

Test(einops, int64_and_bool)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *i = tg_input(g, "i", TG_I64, 2, (int64_t[]){2, 3});
    int64_t *iv = ((tg_tensor *)tg_node_value(i))->data;
    for (int k = 0; k < 6; k++) iv[k] = 10 * k - 7;
    tg_node *m = tg_input(g, "m", TG_BOOL, 1, (int64_t[]){3});
    uint8_t *mv = ((tg_tensor *)tg_node_value(m))->data;
    mv[0] = 1, mv[1] = 0, mv[2] = 1;
    tg_node *it = tg_rearrange(g, i, "a b -> b a", 0, NULL);
    tg_node *iv2 = tg_rearrange(g, i, "a b -> (a b)", 0, NULL);
    tg_node *mr = tg_repeat(g, m, "a -> (a r) k", 2, (tg_axis_len[]){{"r", 2}, {"k", 2}});
    cr_assert(it && iv2 && mr, "%s", tg_graph_error(g));
    cr_assert_eq(tg_node_value(it)->dtype, TG_I64);
    cr_assert_eq(tg_node_value(mr)->dtype, TG_BOOL);
    cr_assert(iv2->op->flags & TG_OP_VIEW);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    const int64_t *t = tg_node_value(it)->data, want_t[6] = {-7, 23, 3, 33, 13, 43};
    for (int k = 0; k < 6; k++) cr_assert_eq(t[k], want_t[k], "int64 [%d] = %lld", k, (long long)t[k]);
    const int64_t *f = tg_node_value(iv2)->data;
    for (int k = 0; k < 6; k++) cr_assert_eq(f[k], 10 * k - 7);
    const uint8_t *b = tg_node_value(mr)->data, want_b[12] = {1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    cr_assert_eq(tg_node_value(mr)->shape[0], 6);
    for (int k = 0; k < 12; k++) cr_assert_eq(b[k], want_b[k], "bool [%d] = %d", k, b[k]);
    cr_assert_null(tg_node_grad(it));
    tg_graph_free(g);
}

/* prod's gradient at zeros, exactly: one zero in a slice gets the product of
 * the others, everything else there 0; two zeros: all 0 (never 0/0). */
Test(einops, prod_backward_at_zeros)
{
    const double x[3][3] = {{2, -1.5, 4}, {2, 0, 3}, {0, 5, 0}};
    const double want_y[3] = {-12, 0, 0};
    const double want_dx[3][3] = {{-6, 8, -3}, {0, 6, 0}, {0, 0, 0}};
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *in = tg_input(g, "x", TG_F64, 2, (int64_t[]){3, 3});
    memcpy(((tg_tensor *)tg_node_value(in))->data, x, sizeof x);
    cr_assert(tg_node_set_requires_grad(in, true) == TG_OK);
    tg_node *y = tg_reduce(g, in, "r c -> r", PROD, 0, NULL);
    cr_assert(y, "%s", tg_graph_error(g));
    tg_node_keep(y);
    tg_tensor *dy = tg_tensor_new(TG_F64, 1, (int64_t[]){3});
    for (int k = 0; k < 3; k++) tg_tensor_set(dy, k, 1.0);
    cr_assert(tg_graph_forward(g) == TG_OK && tg_graph_backward(g, y, dy) == TG_OK, "%s",
              tg_last_error());
    const double *yv = tg_node_value(y)->data, *dx = tg_node_grad(in)->data;
    for (int r = 0; r < 3; r++) {
        cr_assert_eq(yv[r], want_y[r], "y[%d] = %g", r, yv[r]);
        for (int c = 0; c < 3; c++)
            cr_assert_eq(dx[3 * r + c], want_dx[r][c], "dx[%d][%d] = %g", r, c, dx[3 * r + c]);
    }
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* reduce on int64: sum, max, min and prod in int64 (einops on a LongTensor),
 * no gradient; mean is an error as in torch. */
Test(einops, reduce_int64)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *i = tg_input(g, "i", TG_I64, 2, (int64_t[]){2, 3});
    int64_t *iv = ((tg_tensor *)tg_node_value(i))->data;
    const int64_t data[6] = {3, -2, 5, 4, 0, -7};
    memcpy(iv, data, sizeof data);
    const tg_einops_reduction reds[4] = {SUM, MAX, MIN, PROD};
    const int64_t want[4][2] = {{6, -3}, {5, 4}, {-2, -7}, {-30, 0}};
    const int64_t want_cols[3] = {12, 0, -35};   /* 'a b -> b', prod */
    tg_node *y[4];
    for (int k = 0; k < 4; k++) {
        y[k] = tg_reduce(g, i, "a b -> a", reds[k], 0, NULL);
        cr_assert(y[k], "%s: %s", tg_einops_reduction_name(reds[k]), tg_graph_error(g));
        cr_assert_eq(tg_node_value(y[k])->dtype, TG_I64);
        cr_assert_null(y[k]->op->backward, "an int64 reduce has no backward");
        tg_node_keep(y[k]);
    }
    tg_node *cols = tg_reduce(g, i, "a b -> b", PROD, 0, NULL);
    cr_assert(cols, "%s", tg_graph_error(g));
    tg_node_keep(cols);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    for (int k = 0; k < 4; k++) {
        const int64_t *v = tg_node_value(y[k])->data;
        for (int r = 0; r < 2; r++)
            cr_assert_eq(v[r], want[k][r], "%s row %d: %lld, expected %lld",
                         tg_einops_reduction_name(reds[k]), r, (long long)v[r],
                         (long long)want[k][r]);
    }
    for (int c = 0; c < 3; c++)
        cr_assert_eq(((const int64_t *)tg_node_value(cols)->data)[c], want_cols[c]);
    cr_assert_null(tg_reduce(g, i, "a b -> a", MEAN, 0, NULL));
    tt_assert_graph_error(g, "reduce: mean needs a float input, got int64");
    tg_graph_free(g);
}

/* ---- empty tensors and length-0 axes (decided: accepted where einops is) ---- */

Test(einops, zero_length_new_axis)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){3});
    set_f32(x, (float[]){1, 2, 3});
    cr_assert(tg_node_set_requires_grad(x, true) == TG_OK);
    tg_node *y = tg_repeat(g, x, "a -> a r", 1, (tg_axis_len[]){{"r", 0}});
    tg_node *s = tg_sum(g, y, NULL, 0, false);
    cr_assert(y && s, "%s", tg_graph_error(g));
    cr_assert_eq(tg_node_value(y)->rank, 2);
    cr_assert_eq(tg_node_value(y)->shape[0], 3);
    cr_assert_eq(tg_node_value(y)->shape[1], 0);
    cr_assert(tg_graph_forward(g) == TG_OK);
    cr_assert(tg_graph_backward(g, s, NULL) == TG_OK, "%s", tg_last_error());
    const float *gx = tg_node_grad(x)->data;
    for (int i = 0; i < 3; i++) cr_assert_eq(gx[i], 0.0f);
    tg_graph_free(g);
}

Test(einops, empty_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){0, 3});
    tg_node *t = tg_rearrange(g, x, "a b -> b a", 0, NULL);
    tg_node *s = tg_reduce(g, x, "a b -> b", TG_EINOPS_SUM, 0, NULL);
    tg_node *m = tg_reduce(g, x, "a b -> b", TG_EINOPS_MEAN, 0, NULL);
    tg_node *r = tg_repeat(g, x, "a b -> (k a) b", 1, (tg_axis_len[]){{"k", 4}});
    tg_node *mx = tg_reduce(g, x, "a b -> a", TG_EINOPS_MAX, 0, NULL);   /* nothing to pick */
    cr_assert(t && s && m && r && mx, "%s", tg_graph_error(g));
    cr_assert_eq(tg_node_value(t)->shape[0], 3);
    cr_assert_eq(tg_node_value(r)->shape[0], 0);
    cr_assert(tg_graph_forward(g) == TG_OK);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(((float *)tg_node_value(s)->data)[i], 0.0f);
        cr_assert(isnan(((float *)tg_node_value(m)->data)[i]));
    }
    tg_graph_free(g);
}

/* ---- diagrams and the inferred lengths ---- */

Test(einops, describe_and_axis_len)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){6, 5, 8});
    tg_node *y = tg_rearrange(g, x, "(b ts_d) seg d -> (b seg) ts_d d", 1, (tg_axis_len[]){{"b", 2}});
    tg_node *m = tg_reduce(g, x, "(b t) s d -> b d", TG_EINOPS_MAX, 1, (tg_axis_len[]){{"b", 3}});
    cr_assert(y && m, "%s", tg_graph_error(g));
    char buf[160];
    y->op->describe(y, buf, sizeof buf);
    cr_assert_str_eq(buf, "(b ts_d) seg d -> (b seg) ts_d d");
    cr_assert_str_eq(tg_node_name(y), "rearrange");
    m->op->describe(m, buf, sizeof buf);
    cr_assert_str_eq(buf, "(b t) s d -> b d, max");
    cr_assert_eq(tg_einops_axis_len(y, "b"), 2);
    cr_assert_eq(tg_einops_axis_len(y, "ts_d"), 3);
    cr_assert_eq(tg_einops_axis_len(y, "seg"), 5);
    cr_assert_eq(tg_einops_axis_len(y, "d"), 8);
    cr_assert_eq(tg_einops_axis_len(m, "t"), 2);
    cr_assert_eq(tg_einops_axis_len(y, "t"), -1);
    cr_assert_eq(tg_einops_axis_len(y, "ts"), -1);
    cr_assert_eq(tg_einops_axis_len(x, "b"), -1);
    cr_assert_eq(tg_einops_axis_len(NULL, "b"), -1);
    /* the diagram labels the node with the op and its pattern */
    char *dot = NULL;
    size_t dot_len = 0;
    FILE *f = open_memstream(&dot, &dot_len);
    cr_assert(f && tg_graph_dot(g, NULL, f) == TG_OK);
    fclose(f);
    cr_assert(strstr(dot, "rearrange\\n(b ts_d) seg d -> (b seg) ts_d d"), "%s", dot);
    free(dot);
    cr_assert_str_eq(tg_einops_reduction_name(TG_EINOPS_MEAN), "mean");
    cr_assert_null(tg_einops_reduction_name(TG_EINOPS_REDUCTION_COUNT));
    tg_graph_free(g);
}
