/*
 * test_einops.c - rearrange / repeat / reduce against PyTorch fixtures
 * (forward and gradient, float32), gradcheck in float64, exact small cases,
 * integer and bool tensors, empty tensors, and every bad-input row of OPS.md
 * 8.4 / 19 with einops' message; prod (exact at zeros) and reduce over int64.
 * Fixtures: tests/fixtures/gen_einops.py.
 */
#include "testutil.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op.h"

enum { R, P, D };   /* rearrange, repeat, reduce */

typedef struct {
    const char         *name;   /* fixture folder under einops/ */
    int                 kind;
    const char         *pattern;
    tg_einops_reduction red;
    int                 n_axes;
    tg_axis_len         axes[2];
    bool                view;   /* the node must be a view (no copy) */
} ein_case;

#define SUM TG_EINOPS_SUM
#define MEAN TG_EINOPS_MEAN
#define MAX TG_EINOPS_MAX
#define MIN TG_EINOPS_MIN
#define PROD TG_EINOPS_PROD

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

static tg_node *build(const ein_case *c, tg_graph *g, tg_node *x)
{
    const tg_axis_len *ax = c->n_axes ? c->axes : NULL;
    if (c->kind == R) return tg_rearrange(g, x, c->pattern, c->n_axes, ax);
    if (c->kind == P) return tg_repeat(g, x, c->pattern, c->n_axes, ax);
    return tg_reduce(g, x, c->pattern, c->red, c->n_axes, ax);
}

static tg_node *build_case(const ein_case *c, tg_graph *g, tg_node **in, tg_tensor **x)
{
    char dir[96];
    snprintf(dir, sizeof dir, "einops/%s", c->name);
    *x = tt_load(dir, "in0.npy");
    *in = tg_input(g, "x", tg_graph_dtype(g), (*x)->rank, (*x)->shape);
    cr_assert(tg_node_set(*in, *x) == TG_OK);
    cr_assert(tg_node_set_requires_grad(*in, true) == TG_OK);
    tg_node *y = build(c, g, *in);
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

/* ---- bad input: einops' inner message, behind einops' wrapper ---- */

typedef struct {
    const char         *name;
    int                 kind;
    const char         *pattern;
    tg_einops_reduction red;
    int                 rank;
    int64_t             shape[4];
    int                 n_axes;
    tg_axis_len         axes[2];
    const char         *needle;
} bad_case;

static const bad_case bad[] = {
    {"no_arrow", R, "a b", SUM, 2, {2, 3}, 0, {{0}}, "exactly one \"->\" between its left and right side, found 0"},
    {"two_arrows", R, "a -> b -> a", SUM, 1, {2}, 0, {{0}}, "exactly one \"->\" between its left and right side, found 2"},
    {"spaced_arrow", R, "a - > a", SUM, 1, {2}, 0, {{0}}, "found 0"},
    {"tab", R, "a\tb -> a b", SUM, 2, {2, 3}, 0, {{0}}, "Unknown character '\\t'"},
    {"unknown_char", R, "a+b -> a b", SUM, 2, {2, 3}, 0, {{0}}, "Unknown character '+'"},
    {"non_ascii", R, "a\xc3\x9f -> a\xc3\x9f", SUM, 1, {2}, 0, {{0}}, "Unknown character: byte 0xc3 is not ASCII"},
    {"stray_dot", R, "a. -> a", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...)"},
    {"two_dots", R, "a .. -> a", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...)"},
    {"two_ellipses", R, "... ... -> ...", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...); only one ellipsis for tensor"},
    {"four_dots", R, ".... -> ....", SUM, 1, {2}, 0, {{0}}, "only one ellipsis for tensor"},
    {"right_dots", R, "a -> a .", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...)"},
    {"dots_glued", R, "...pre -> ...pre", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: ...pre (not a valid python identifier)"},
    {"ellipsis_right_only", R, "a -> a ...", SUM, 1, {2}, 0, {{0}}, "Ellipsis found in right side, but not left side of a pattern a -> a ..."},
    {"ellipsis_left_group", R, "(a ...) -> a ...", SUM, 1, {2}, 0, {{0}}, "Ellipsis inside parenthesis in the left side is not allowed: (a ...) -> a ..."},
    {"nested", R, "((a b)) -> a b", SUM, 1, {6}, 0, {{0}}, "Axis composition is one-level (brackets inside brackets not allowed)"},
    {"nested_unit", R, "(a () b) -> a b", SUM, 1, {6}, 0, {{0}}, "Axis composition is one-level (brackets inside brackets not allowed)"},
    {"close_unopened", R, "a b) -> a b", SUM, 2, {2, 3}, 0, {{0}}, "Brackets are not balanced"},
    {"unclosed", R, "(a b -> a b", SUM, 1, {6}, 0, {{0}}, "Imbalanced parentheses in expression: \"(a b \""},
    {"name_digit", R, "2c -> 2c", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: 2c (not a valid python identifier)"},
    {"name_lead_underscore", R, "_c -> _c", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: _c (axis name should should not start or end with underscore)"},
    {"name_trail_underscore", R, "c_ -> c_", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: c_ (axis name should should not start or end with underscore)"},
    {"duplicate_left", R, "a a -> a", SUM, 2, {2, 2}, 0, {{0}}, "Indexing expression contains duplicate dimension \"a\""},
    {"duplicate_right", R, "a b c -> a (b c) b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Indexing expression contains duplicate dimension \"b\""},
    {"anon_zero", R, "a 0 -> a", SUM, 2, {2, 1}, 0, {{0}}, "Anonymous axis should have positive length, not 0"},
    {"anon_too_long", R, "a 99999999999999999999 -> a", SUM, 2, {2, 1}, 0, {{0}}, "Anonymous axis 99999999999999999999 is too long"},
    {"anon_rearrange_left", R, "a 2 -> a 2", SUM, 2, {3, 2}, 0, {{0}}, "Non-unitary anonymous axes are not supported in rearrange (exception is length 1)"},
    {"anon_rearrange_right", R, "a -> a 2", SUM, 1, {3}, 0, {{0}}, "Non-unitary anonymous axes are not supported in rearrange (exception is length 1)"},
    {"one_side", R, "a b c -> a b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Identifiers only on one side of expression (should be on both): {'c'}"},
    {"one_side_both", R, "a b -> a c", SUM, 2, {2, 3}, 0, {{0}}, "Identifiers only on one side of expression (should be on both): {'b', 'c'}"},
    {"one_side_ellipsis", R, "a ... -> a", SUM, 2, {2, 3}, 0, {{0}}, "Identifiers only on one side of expression (should be on both): {'\xe2\x80\xa6'}"},
    {"repeat_left_missing", P, "a b c -> a b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Unexpected identifiers on the left side of repeat: {'c'}"},
    {"repeat_left_number", P, "a 2 -> a", SUM, 2, {3, 2}, 0, {{0}}, "Unexpected identifiers on the left side of repeat: {2-axis}"},
    {"repeat_left_ellipsis", P, "a ... -> a", SUM, 2, {3, 2}, 0, {{0}}, "Unexpected identifiers on the left side of repeat: {'\xe2\x80\xa6'}"},
    {"repeat_no_size", P, "a -> a d", SUM, 1, {2}, 0, {{0}}, "Specify sizes for new axes in repeat: {'d'}"},
    {"repeat_no_sizes", P, "a -> (e a) d", SUM, 1, {2}, 1, {{"d", 2}}, "Specify sizes for new axes in repeat: {'e'}"},
    {"reduce_new_axis", D, "a b -> a c", SUM, 2, {2, 3}, 0, {{0}}, "Unexpected identifiers on the right side of reduce sum: {'c'}"},
    {"reduce_anon_right", D, "a b -> a 2", MEAN, 2, {2, 3}, 0, {{0}}, "Unexpected identifiers on the right side of reduce mean: {2-axis}"},
    {"wrong_rank", R, "a b -> a b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Wrong shape: expected 2 dims. Received 3-dim tensor."},
    {"wrong_rank_ellipsis", R, "a b c ... -> a b c ...", SUM, 2, {2, 3}, 0, {{0}}, "Wrong shape: expected >=3 dims. Received 2-dim tensor."},
    {"kw_unused", R, "a b -> b a", SUM, 2, {2, 3}, 1, {{"z", 2}}, "Axis z is not used in transform"},
    {"kw_invalid", R, "a b -> b a", SUM, 2, {2, 3}, 1, {{"_", 2}}, "('Invalid name for an axis', '_')"},
    {"kw_invalid_digit", R, "a b -> b a", SUM, 2, {2, 3}, 1, {{"2a", 2}}, "('Invalid name for an axis', '2a')"},
    {"kw_twice", R, "(a b) -> a b", SUM, 1, {6}, 2, {{"a", 2}, {"a", 2}}, "Axis a is given twice in the axis lengths"},
    {"kw_no_name", R, "(a b) -> a b", SUM, 1, {6}, 1, {{NULL, 2}}, "axis length 0 has no name"},
    {"could_not_infer", R, "(b c) -> b c", SUM, 1, {6}, 0, {{0}}, "Could not infer sizes for {'b', 'c'}"},
    {"not_dividing", R, "(b c) -> b c", SUM, 1, {6}, 1, {{"c", 4}}, "Shape mismatch, can't divide axis of length 6 in chunks of 4"},
    {"anon_not_dividing", D, "(b 4) -> b", SUM, 1, {6}, 0, {{0}}, "Shape mismatch, can't divide axis of length 6 in chunks of 4"},
    {"product_mismatch", R, "(b c) -> b c", SUM, 1, {6}, 2, {{"b", 2}, {"c", 2}}, "Shape mismatch, 6 != 4"},
    {"given_mismatch", R, "a b c -> a b c", SUM, 3, {2, 3, 4}, 1, {{"b", 4}}, "Shape mismatch, 3 != 4"},
    {"unit_not_one", R, "1 b c -> b c", SUM, 3, {2, 3, 4}, 0, {{0}}, "Shape mismatch, 2 != 1"},
    {"empty_group_not_one", R, "() b c -> b c", SUM, 3, {2, 3, 4}, 0, {{0}}, "Shape mismatch, 2 != 1"},
    {"kw_negative", P, "a -> a r", SUM, 1, {3}, 1, {{"r", -1}}, "Axis r has negative length -1"},
    {"kw_zero_divisor", R, "(h w) -> h w", SUM, 1, {6}, 1, {{"h", 0}}, "Shape mismatch, can't divide axis of length 6 in chunks of 0"},
    {"kw_zero_plain", R, "a b -> a b", SUM, 2, {2, 3}, 1, {{"a", 0}}, "Shape mismatch, 2 != 0"},
    {"max_of_nothing", D, "a b -> a", MAX, 2, {2, 0}, 0, {{0}}, "cannot take the max/min over zero elements"},
    {"min_of_nothing", D, "a b -> a", MIN, 2, {2, 0}, 0, {{0}}, "cannot take the max/min over zero elements"},
    {"rank_above_max", P, "a -> a 2 2 2 2 2 2 2 2", SUM, 1, {2}, 0, {{0}}, "the result would have 9 dims; tgraph supports at most 8"},
    {"dim_overflow", P, "a -> a (r s)", SUM, 1, {2}, 2, {{"r", 1ll << 40}, {"s", 1ll << 40}}, "the result's dim 1 overflows int64"},
    {"numel_overflow", P, "a -> a r s", SUM, 1, {2}, 2, {{"r", 1ll << 30}, {"s", 1ll << 30}}, "the result has too many elements"},
};

#define N_BAD (int)(sizeof bad / sizeof *bad)
static int bad_index[N_BAD];

ParameterizedTestParameters(einops_errors, pattern)
{
    for (int i = 0; i < N_BAD; i++) bad_index[i] = i;
    return cr_make_param_array(int, bad_index, N_BAD);
}

ParameterizedTest(int *idx, einops_errors, pattern)
{
    const bad_case *c = &bad[*idx];
    const ein_case e = {c->name, c->kind, c->pattern, c->red, c->n_axes,
                        {c->axes[0], c->axes[1]}, false};
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, c->rank, c->shape);
    cr_assert_null(build(&e, g, x), "%s: no error", c->name);
    tt_assert_graph_error(g, c->needle);
    /* behind einops' wrapper, which names the op, the pattern and the shape */
    char head[512];
    const char *op = c->kind == R ? "rearrange" : c->kind == P ? "repeat" : "reduce";
    const char *what = c->kind == D ? tg_einops_reduction_name(c->red) : op;
    snprintf(head, sizeof head, "%s: Error while processing %s-reduction pattern \"%s\". Input "
             "tensor shape: (", op, what, c->pattern);
    cr_assert(strncmp(tg_graph_error(g), head, strlen(head)) == 0, "%s: message \"%s\"",
              c->name, tg_graph_error(g));
    cr_assert_eq(tg_graph_node_count(g), 1, "%s: a node was added", c->name);
    /* sticky: the graph stays in error */
    cr_assert_null(tg_rearrange(g, x, "a -> a", 0, NULL));
    tt_assert_graph_error(g, c->needle);
    tg_graph_free(g);
}

Test(einops_errors, wrapper_in_full)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 3, 4});
    cr_assert_null(tg_rearrange(g, x, "a b -> a b", 0, NULL));
    cr_assert_str_eq(tg_graph_error(g),
                     "rearrange: Error while processing rearrange-reduction pattern \"a b -> a b\". "
                     "Input tensor shape: (2, 3, 4). Additional info: {}. Wrong shape: expected 2 "
                     "dims. Received 3-dim tensor.");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){5});
    cr_assert_null(tg_repeat(g, x, "a -> a r", 2, (tg_axis_len[]){{"r", -1}, {"a", 5}}));
    cr_assert_str_eq(tg_graph_error(g),
                     "repeat: Error while processing repeat-reduction pattern \"a -> a r\". Input "
                     "tensor shape: (5,). Additional info: {'r': -1, 'a': 5}. Axis r has negative "
                     "length -1");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 0, NULL);
    cr_assert_null(tg_reduce(g, x, "a -> ", TG_EINOPS_MIN, 0, NULL));
    cr_assert_str_eq(tg_graph_error(g),
                     "reduce: Error while processing min-reduction pattern \"a -> \". Input tensor "
                     "shape: (). Additional info: {}. Wrong shape: expected 1 dims. Received "
                     "0-dim tensor.");
    tg_graph_free(g);
}

Test(einops_errors, too_many_axes)
{
    char pat[512], side[240];
    size_t k = 0;
    k += (size_t)snprintf(side + k, sizeof side - k, "(");
    for (int i = 0; i < 33; i++) k += (size_t)snprintf(side + k, sizeof side - k, i ? " a%d" : "a%d", i);
    snprintf(side + k, sizeof side - k, ")");
    snprintf(pat, sizeof pat, "%s -> %s", side, side);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){1});
    cr_assert_null(tg_rearrange(g, x, pat, 0, NULL));
    tt_assert_graph_error(g, "more than 32 axes in one pattern (tgraph's limit)");
    tg_graph_free(g);

    /* 65 top-level unit items on one side */
    k = 0;
    for (int i = 0; i < 65; i++) k += (size_t)snprintf(pat + k, sizeof pat - k, "1 ");
    snprintf(pat + k, sizeof pat - k, "-> ");
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){1});
    cr_assert_null(tg_rearrange(g, x, pat, 0, NULL));
    tt_assert_graph_error(g, "more than 64 items on one side (tgraph's limit)");
    tg_graph_free(g);

    /* a pattern longer than 64 KiB */
    char *big = malloc(70001);
    cr_assert(big);
    memset(big, ' ', 70000);
    memcpy(big + 100, "->", 2);
    big[70000] = 0;
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 0, NULL);
    cr_assert_null(tg_rearrange(g, x, big, 0, NULL));
    tt_assert_graph_error(g, "the pattern is 70000 bytes long (tgraph's limit: 65536)");
    tg_graph_free(g);
    free(big);
}

Test(einops_errors, api_misuse)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_rearrange(g, x, NULL, 0, NULL));
    tt_assert_graph_error(g, "rearrange: pattern is NULL");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_repeat(g, x, "a -> a r", 1, NULL));
    tt_assert_graph_error(g, "repeat: bad axis length list (n_axes 1, axes NULL)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_reduce(g, x, "a -> ", (tg_einops_reduction)7, 0, NULL));
    tt_assert_graph_error(g, "reduce: unknown reduction 7 (expected sum, mean, max, min or prod)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "m", TG_BOOL, 1, (int64_t[]){2});   /* int64 is fine (reduce_int64) */
    cr_assert_null(tg_reduce(g, x, "a -> ", TG_EINOPS_SUM, 0, NULL));
    tt_assert_graph_error(g, "reduce: input must be float32, got bool");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    cr_assert_null(tg_rearrange(g, NULL, "a -> a", 0, NULL));
    cr_assert_not_null(tg_graph_error(g));
    tg_graph_free(g);
}
