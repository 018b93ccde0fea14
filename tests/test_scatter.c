/*
 * test_scatter.c - gather, scatter (tensor and scalar value) and scatter_add
 * against PyTorch fixtures (forward and every float gradient, float32), F64
 * gradcheck, index values checked at run time (an error, never a crash),
 * empty index, duplicates, and the bad inputs of OPS.md 19.
 * Fixtures: tests/fixtures/gen_select.py.
 */
#include "testutil.h"

#include <criterion/parameterized.h>
#include <math.h>

#include "select_case.h"

#define OP2(fn, call)                                                           \
    static tg_node *fn(tg_graph *g, tg_node **in, tg_node **o)                  \
    {                                                                           \
        (void)o;                                                                \
        return call;                                                            \
    }
OP2(g_dim1, tg_gather(g, in[0], 1, in[1]))
OP2(g_dim0, tg_gather(g, in[0], 0, in[1]))
OP2(g_dimm1, tg_gather(g, in[0], -1, in[1]))
OP2(s_dim0, tg_scatter(g, in[0], 0, in[1], in[2]))
OP2(s_dim1, tg_scatter(g, in[0], 1, in[1], in[2]))
OP2(s_dim2, tg_scatter(g, in[0], 2, in[1], in[2]))
OP2(sv_dim1, tg_scatter_value(g, in[0], 1, in[1], 1.5))
OP2(sa_dim0, tg_scatter_add(g, in[0], 0, in[1], in[2]))
OP2(sa_dim1, tg_scatter_add(g, in[0], -1, in[1], in[2]))

static const sel_case cases[] = {
    {"gather_dim1", 2, g_dim1, true},
    {"gather_dim0", 2, g_dim0, true},          /* repeated indices: the gradient accumulates */
    {"gather_bigger", 2, g_dimm1, true},       /* (2,2) input, (2,4) index along dim 1 */
    {"gather_3d", 2, g_dim1, true},            /* index smaller than input in the other dims */
    {"gather_0d", 2, g_dim0, true},            /* 0-d input counts as [1] */
    {"scatter_doc", 3, s_dim0, true},          /* the doc example; src (2,5) read by coordinates */
    {"scatter_coords_dim1", 3, s_dim1, true},  /* index (2,3) inside src (3,5) */
    {"scatter_grad", 3, s_dim0, true},         /* src.shape == index.shape: dsrc too */
    {"scatter_last_3d", 3, s_dim2, true},
    {"scatter_value", 2, sv_dim1, true},
    {"scatter_add_dup", 3, sa_dim0, true},     /* [0,0,2] adding [1,2,3] into zeros(3) = [3,0,3] */
    {"scatter_add_2d", 3, sa_dim0, true},
    {"scatter_add_last", 3, sa_dim1, true},    /* index.size(dim) 7 > self.size(dim) 5 */
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_idx[N_CASES];

ParameterizedTestParameters(scatter, fixture)
{
    return sel_params(cases, N_CASES, false, case_idx);
}
ParameterizedTest(int *i, scatter, fixture) { sel_fixture(&cases[*i]); }

ParameterizedTestParameters(scatter, gradcheck)
{
    return sel_params(cases, N_CASES, true, case_idx);
}
ParameterizedTest(int *i, scatter, gradcheck) { sel_gradcheck(&cases[*i]); }

/* ---- helpers ---- */

static tg_node *index_node(tg_graph *g, int rank, const int64_t *shape, const int64_t *vals)
{
    tg_node *n = tg_input(g, "index", TG_I64, rank, shape);
    if (n && vals) memcpy(tg_node_value(n)->data, vals, (size_t)tg_node_value(n)->numel * 8);
    return n;
}

static tg_node *float_node(tg_graph *g, int rank, const int64_t *shape, double start)
{
    tg_node *n = sel_in(g, rank, shape);
    tg_tensor *t = (tg_tensor *)tg_node_value(n);
    for (int64_t i = 0; i < t->numel; i++) tg_tensor_set(t, i, start + (double)i);
    return n;
}

/* ---- forward details ---- */

/* Duplicate targets in scatter: the last in index's row-major order wins
 * (documented; PyTorch leaves it unspecified), for the serial (dim 0) and the
 * row-parallel (last dim) walks. The gradient gives every duplicate dout. */
Test(scatter, duplicates_last_wins)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = float_node(g, 2, (int64_t[]){2, 3}, 100);
    tg_node *src = float_node(g, 2, (int64_t[]){3, 3}, 1);
    tg_node_set_requires_grad(src, true);
    tg_node *i0 = index_node(g, 2, (int64_t[]){3, 3}, (int64_t[]){1, 0, 1, 1, 0, 0, 1, 1, 0});
    tg_node *i1 = index_node(g, 2, (int64_t[]){2, 3}, (int64_t[]){2, 2, 0, 1, 1, 1});
    tg_node *y0 = tg_scatter(g, x, 0, i0, src);
    tg_node *src1 = float_node(g, 2, (int64_t[]){2, 3}, 1);
    tg_node *y1 = tg_scatter(g, x, 1, i1, src1);
    cr_assert(y0 && y1, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    const double *a = tg_node_value(y0)->data, *b = tg_node_value(y1)->data;
    /* column j of row t receives src[i][j] for the last i with index[i][j] == t */
    const double want0[6] = {100, 5, 9, 7, 8, 3};
    const double want1[6] = {3, 101, 2, 103, 6, 105};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(a[i], want0[i], "dim 0: element %d is %g", i, a[i]);
        cr_assert_eq(b[i], want1[i], "dim 1: element %d is %g", i, b[i]);
    }
    tg_tensor *dy = tg_tensor_new(TG_F64, 2, (int64_t[]){2, 3});
    for (int i = 0; i < 6; i++) tg_tensor_set(dy, i, 10 + i);
    cr_assert(tg_graph_backward(g, y0, dy) == TG_OK);
    const double *ds = tg_node_grad(src)->data;
    for (int i = 0; i < 9; i++) {          /* dsrc[i][j] = dy[index[i][j]][j] */
        int64_t t = ((const int64_t *)tg_node_value(i0)->data)[i];
        cr_assert_eq(ds[i], 10 + 3 * t + i % 3, "dsrc %d", i);
    }
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* An empty index: scatter returns self, gather an empty result, without the
 * rank and size checks (PyTorch). */
Test(scatter, empty_index)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = float_node(g, 2, (int64_t[]){3, 5}, 1);
    tg_node_set_requires_grad(x, true);
    tg_node *src = float_node(g, 1, (int64_t[]){7}, 0);
    tg_node *e1 = index_node(g, 1, (int64_t[]){0}, NULL);            /* wrong rank, empty */
    tg_node *e2 = index_node(g, 2, (int64_t[]){9, 0}, NULL);         /* too large, empty */
    tg_node *y = tg_scatter(g, x, 0, e1, src);
    tg_node *z = tg_gather(g, x, 1, e2);
    tg_node *w = tg_scatter_add(g, y, 1, e2, src);
    cr_assert(y && z && w, "%s", tg_graph_error(g));
    cr_assert_eq(tg_node_value(z)->shape[0], 9);
    cr_assert_eq(tg_node_value(z)->numel, 0);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    const float *yd = tg_node_value(w)->data;
    for (int i = 0; i < 15; i++) cr_assert_eq(yd[i], 1 + i);
    tg_tensor *dy = tg_tensor_new(TG_F32, 2, (int64_t[]){3, 5});
    for (int i = 0; i < 15; i++) tg_tensor_set(dy, i, 0.5 * i - 2);
    cr_assert(tg_graph_backward(g, w, dy) == TG_OK, "%s", tg_last_error());
    tt_assert_close(tg_node_grad(x), dy, 0, 0, "dx = dy");
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* Bigger shapes through the thread pool (gather along the last dim runs rows
 * in parallel) against a direct loop. */
Test(scatter, gather_many_rows)
{
    enum { R = 512, C = 64, K = 48 };
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = float_node(g, 2, (int64_t[]){R, C}, 0);
    tg_node *ix = index_node(g, 2, (int64_t[]){R, K}, NULL);
    int64_t *id = tg_node_value(ix)->data;
    for (int i = 0; i < R * K; i++) id[i] = (i * 7919) % C;
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_gather(g, x, 1, ix);
    cr_assert(tg_graph_forward(g) == TG_OK);
    tg_tensor *dy = tg_tensor_new(TG_F64, 2, (int64_t[]){R, K});
    tt_randn(dy, 3);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK);
    static double want_dx[R * C];
    const double *Y = tg_node_value(y)->data, *DX = tg_node_grad(x)->data, *DY = dy->data;
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) {
            cr_assert_eq(Y[r * K + k], (double)(r * C + id[r * K + k]));
            want_dx[r * C + id[r * K + k]] += DY[r * K + k];
        }
    for (int i = 0; i < R * C; i++) cr_assert(fabs(DX[i] - want_dx[i]) < 1e-12, "dx %d", i);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* ---- index values are data: forward (and backward) fail, never crash ---- */

static void expect_run_error(int which, int64_t bad, const char *msg)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = float_node(g, 2, (int64_t[]){3, 2}, 0);
    tg_node *src = float_node(g, 2, (int64_t[]){2, 2}, 0);
    tg_node *ix = index_node(g, 2, (int64_t[]){2, 2}, (int64_t[]){0, 1, 1, 0});
    tg_node *y = which == 0 ? tg_gather(g, x, 0, ix)
               : which == 1 ? tg_scatter(g, x, 1, ix, src)
               : which == 2 ? tg_scatter_value(g, x, 0, ix, 2.0)
               : tg_scatter_add(g, x, 1, ix, src);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    ((int64_t *)tg_node_value(ix)->data)[3] = bad;
    cr_assert_eq(tg_graph_forward(g), TG_ERR_INVALID);
    tt_assert_last_error(msg);
    tg_graph_free(g);
}

Test(scatter_errors, gather_index_too_large)
{
    expect_run_error(0, 3, "gather: index 3 is out of bounds for dimension 0 with size 3");
}
Test(scatter_errors, gather_index_negative)
{
    expect_run_error(0, -1, "gather: index -1 is out of bounds for dimension 0 with size 3");
}
Test(scatter_errors, scatter_index_too_large)
{
    expect_run_error(1, 2, "scatter: index 2 is out of bounds for dimension 1 with size 2");
}
Test(scatter_errors, scatter_index_negative)
{
    expect_run_error(1, -1, "scatter: index -1 is out of bounds for dimension 1 with size 2");
}
Test(scatter_errors, scatter_value_index_too_large)
{
    expect_run_error(2, 3, "scatter: index 3 is out of bounds for dimension 0 with size 3");
}
Test(scatter_errors, scatter_add_index_negative)
{
    expect_run_error(3, -5, "scatter_add: index -5 is out of bounds for dimension 1 with size 2");
}

/* The forward error names the node, and a backward after a changed index fails too. */
Test(scatter_errors, error_names_node_and_backward_checks)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = float_node(g, 1, (int64_t[]){3}, 0);
    tg_node_set_requires_grad(x, true);
    tg_node *ix = index_node(g, 1, (int64_t[]){2}, (int64_t[]){2, 0});
    tg_node *y = tg_gather(g, x, 0, ix);
    cr_assert(tg_graph_forward(g) == TG_OK);
    ((int64_t *)tg_node_value(ix)->data)[0] = 7;
    tg_tensor *dy = tg_tensor_new(TG_F32, 1, (int64_t[]){2});
    cr_assert_eq(tg_graph_backward(g, y, dy), TG_ERR_INVALID);
    tt_assert_last_error("index 7 is out of bounds for dimension 0 with size 3");
    cr_assert_eq(tg_graph_forward(g), TG_ERR_INVALID);
    tt_assert_last_error("forward of");
    tt_assert_last_error("gather");
    tg_tensor_free(dy);
    tg_graph_free(g);
}

/* ---- bad input at build time (OPS.md 19) ---- */

#define BUILD_ERROR(name, build, msg)                                           \
    Test(scatter_errors, name)                                                  \
    {                                                                           \
        tg_graph *g = tg_graph_new(TG_F32);                                     \
        cr_assert_null(build);                                                  \
        tt_assert_graph_error(g, msg);                                          \
        tg_graph_free(g);                                                       \
    }

/* F(2, 5): a float input of shape [2, 5]; I(1, 4): an int64 index input */
#define SHAPE(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__}
#define F(...) float_node(g, SHAPE(__VA_ARGS__), 0)
#define I(...) index_node(g, SHAPE(__VA_ARGS__), NULL)

BUILD_ERROR(gather_rank_mismatch, tg_gather(g, F(2, 2), 0, I(3)),
            "gather: Index tensor must have the same number of dimensions as input tensor")
BUILD_ERROR(scatter_rank_mismatch_self, tg_scatter(g, F(3, 5), 0, I(1, 4, 3), F(2, 5)),
            "scatter: Index tensor must have the same number of dimensions as self tensor")
BUILD_ERROR(scatter_rank_mismatch_src, tg_scatter(g, F(3, 5), 0, I(1, 4), F(2, 5, 3)),
            "scatter: Index tensor must have the same number of dimensions as src tensor")
BUILD_ERROR(scatter_add_rank_mismatch, tg_scatter_add(g, F(3, 5), 1, I(2), F(2)),
            "scatter_add: Index tensor must have the same number of dimensions as self tensor")
BUILD_ERROR(gather_index_too_large_other_dim, tg_gather(g, F(2, 2), 1, I(3, 1)),
            "gather: Size does not match at dimension 0 expected index [3, 1] to be smaller than "
            "self [2, 2] apart from dimension 1")
BUILD_ERROR(scatter_index_larger_than_self, tg_scatter(g, F(3, 5), 0, I(3, 6), F(4, 6)),
            "Expected index [3, 6] to be smaller than self [3, 5] apart from dimension 0 and to "
            "be smaller size than src [4, 6]")
BUILD_ERROR(scatter_index_larger_than_src, tg_scatter(g, F(3, 5), 0, I(1, 6), F(2, 5)),
            "scatter: Expected index [1, 6] to be smaller than self [3, 5] apart from dimension 0 "
            "and to be smaller size than src [2, 5]")
BUILD_ERROR(scatter_index_larger_than_src_at_dim, tg_scatter(g, F(3, 5), 0, I(3, 4), F(2, 5)),
            "Expected index [3, 4] to be smaller than self [3, 5] apart from dimension 0")
BUILD_ERROR(scatter_add_index_larger_than_src, tg_scatter_add(g, F(3, 5), 1, I(2, 3), F(2, 2)),
            "scatter_add: Expected index [2, 3] to be smaller than self [3, 5] apart from "
            "dimension 1 and to be smaller size than src [2, 2]")
BUILD_ERROR(scatter_value_index_larger_than_self, tg_scatter_value(g, F(3, 5), 0, I(1, 6), 1.0),
            "scatter: Expected index [1, 6] to be smaller than self [3, 5] apart from dimension 0")
BUILD_ERROR(gather_bad_dim, tg_gather(g, F(2, 2), 2, I(2, 2)),
            "gather: Dimension out of range (expected to be in range of [-2, 1], but got 2)")
BUILD_ERROR(scatter_bad_dim, tg_scatter_add(g, F(2, 2), -3, I(2, 2), F(2, 2)),
            "scatter_add: Dimension out of range (expected to be in range of [-2, 1], but got -3)")
BUILD_ERROR(gather_float_index, tg_gather(g, F(2, 2), 0, F(2, 2)),
            "gather: Expected dtype int64 for index, got float32")
BUILD_ERROR(scatter_bool_index,
            tg_scatter(g, F(2, 2), 0, tg_input(g, "b", TG_BOOL, 2, (int64_t[]){2, 2}), F(2, 2)),
            "scatter: Expected dtype int64 for index, got bool")
BUILD_ERROR(scatter_dtype_mismatch, tg_scatter(g, F(2, 2), 0, I(2, 2), I(2, 2)),
            "scatter: Expected self.dtype to be equal to src.dtype (self float32, src int64)")
BUILD_ERROR(scatter_add_dtype_mismatch, tg_scatter_add(g, I(2, 2), 0, I(2, 2), F(2, 2)),
            "Expected self.dtype to be equal to src.dtype")
BUILD_ERROR(gather_integer_input, tg_gather(g, I(2, 2), 0, I(2, 2)),
            "gather: input must be float32, got int64")

/* src.shape != index.shape is accepted without a gradient for src (the
 * doc example) and rejected when src requires grad (PyTorch would fail in
 * backward with "ScatterBackward0 returned an invalid gradient"). */
Test(scatter_errors, src_shape_differs_with_grad)
{
    for (int add = 0; add < 2; add++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = F(3, 5), *src = F(2, 5), *ix = I(1, 4);
        cr_assert(add ? tg_scatter_add(g, x, 0, ix, src) : tg_scatter(g, x, 0, ix, src));
        tg_node_set_requires_grad(src, true);
        cr_assert_null(add ? tg_scatter_add(g, x, 0, ix, src) : tg_scatter(g, x, 0, ix, src));
        tt_assert_graph_error(g, add ? "scatter_add: src requires grad, so its shape [2, 5] must "
                                       "equal index's shape [1, 4]"
                                     : "scatter: src requires grad, so its shape [2, 5] must "
                                       "equal index's shape [1, 4]");
        tg_graph_free(g);
    }
}

/* Marked after the build, src gets the true gradient: dout at the elements
 * read, 0 elsewhere (no crash, no stray writes). */
Test(scatter, src_marked_after_build_gets_padded_gradient)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = F(3, 5), *src = F(2, 5), *ix = index_node(g, 2, (int64_t[]){1, 4},
                                                           (int64_t[]){0, 1, 2, 0});
    tg_node *y = tg_scatter(g, x, 0, ix, src);
    cr_assert(y);
    tg_node_set_requires_grad(src, true);
    cr_assert(tg_graph_forward(g) == TG_OK);
    tg_tensor *dy = tg_tensor_new(TG_F64, 2, (int64_t[]){3, 5});
    for (int i = 0; i < 15; i++) tg_tensor_set(dy, i, i + 1);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK, "%s", tg_last_error());
    const double want[10] = {1, 7, 13, 4, 0, 0, 0, 0, 0, 0};
    const double *ds = tg_node_grad(src)->data;
    for (int i = 0; i < 10; i++) cr_assert_eq(ds[i], want[i], "dsrc %d = %g", i, ds[i]);
    tg_tensor_free(dy);
    tg_graph_free(g);
}
