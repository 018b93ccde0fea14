/*
 * test_concat.c - cat, split, narrow, stepped slice and index_select against
 * PyTorch (forward and gradient), F64 gradcheck, int64/bool data passing
 * through, and the bad inputs (shape errors name the dim and the sizes).
 * Fixtures: tests/fixtures/gen_nn.py.
 */
#include "nn_fixture.h"

#include <criterion/parameterized.h>

static int b_cat0(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_concat(g, 3, in, 0));
}
static int b_cat_last(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_concat(g, 3, in, -1));
}
static int b_cat_mid(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_concat(g, 2, in, 1));
}
static int b_split(tg_graph *g, tg_node **in, tg_node **out)
{
    return tg_split(g, in[0], 3, (int64_t[]){2, 4, 1}, -1, out) == TG_OK ? 3 : 0;
}
static int b_split0(tg_graph *g, tg_node **in, tg_node **out)
{
    return tg_split(g, in[0], 2, (int64_t[]){1, 3}, 0, out) == TG_OK ? 2 : 0;
}
static int b_narrow(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_narrow(g, in[0], 1, 1, 3));
}
static int b_narrow_neg(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_narrow(g, in[0], 0, -2, 2));
}
static int b_slice_step(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_slice(g, in[0], 1, 1, 8, 3));
}
static int b_slice_neg(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_slice(g, in[0], -1, -7, -1, 2));
}
static int b_slice_clamp(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_slice(g, in[0], 0, -100, 100, 2));
}
static int b_isel0(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_index_select(g, in[0], 0, in[1]));
}
static int b_isel1(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_index_select(g, in[0], 1, in[1]));
}

static const nn_case cases[] = {
    {"cat_dim0", 3, b_cat0, false},
    {"cat_last", 3, b_cat_last, false},
    {"cat_mid", 2, b_cat_mid, false},
    {"split", 1, b_split, false},
    {"split_dim0", 1, b_split0, false},
    {"narrow", 1, b_narrow, false},
    {"narrow_neg", 1, b_narrow_neg, false},
    {"slice_step", 1, b_slice_step, false},
    {"slice_neg", 1, b_slice_neg, false},
    {"slice_clamp", 1, b_slice_clamp, false},
    {"index_select_rep", 2, b_isel0, false},
    {"index_select_mid", 2, b_isel1, false},
    {"index_select_pad", 2, b_isel1, false},
    {"index_select_rpb", 2, b_isel0, false},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

ParameterizedTestParameters(concat, fixture) { return params(); }
ParameterizedTest(int *i, concat, fixture) { nn_fixture_run(&cases[*i]); }

ParameterizedTestParameters(concat, gradcheck) { return params(); }
ParameterizedTest(int *i, concat, gradcheck) { nn_gradcheck_run(&cases[*i]); }

/* int64 and bool data go through cat / slice / index_select, without gradients. */
Test(concat, integer_and_bool_data)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = tg_input(g, "a", TG_I64, 2, (int64_t[]){2, 2});
    tg_node *b = tg_input(g, "b", TG_I64, 2, (int64_t[]){2, 1});
    tg_node *m = tg_input(g, "m", TG_BOOL, 1, (int64_t[]){5});
    tg_node *idx = tg_input(g, "i", TG_I64, 1, (int64_t[]){3});
    int64_t *av = tg_node_value(a)->data, *bv = tg_node_value(b)->data;
    int64_t *iv = tg_node_value(idx)->data;
    uint8_t *mv = tg_node_value(m)->data;
    av[0] = 1, av[1] = 2, av[2] = 3, av[3] = 4, bv[0] = -5, bv[1] = 1LL << 40;
    for (int i = 0; i < 5; i++) mv[i] = (uint8_t)(i & 1);
    iv[0] = 2, iv[1] = 0, iv[2] = 2;
    tg_node *c = tg_concat(g, 2, (tg_node *[]){a, b}, 1);           /* [[1,2,-5],[3,4,2^40]] */
    tg_node *s = tg_slice(g, m, 0, 1, TG_SLICE_END, 2);             /* m[1::2] = [1, 1] */
    tg_node *t = tg_index_select(g, c, 1, idx);                     /* cols 2,0,2 */
    tg_node *mm = tg_concat(g, 2, (tg_node *[]){s, m}, 0);
    cr_assert(c && s && t && mm, "%s", tg_graph_error(g));
    cr_assert_eq(tg_node_value(t)->dtype, TG_I64);
    cr_assert_eq(tg_node_value(mm)->dtype, TG_BOOL);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    const int64_t want_c[6] = {1, 2, -5, 3, 4, 1LL << 40};
    const int64_t want_t[6] = {-5, 1, -5, 1LL << 40, 3, 1LL << 40};
    const uint8_t want_mm[7] = {1, 1, 0, 1, 0, 1, 0};
    cr_expect(memcmp(tg_node_value(c)->data, want_c, sizeof want_c) == 0);
    cr_expect(memcmp(tg_node_value(t)->data, want_t, sizeof want_t) == 0);
    cr_expect(memcmp(tg_node_value(mm)->data, want_mm, sizeof want_mm) == 0);
    cr_expect_null(tg_node_grad(t));
    tg_graph_free(g);
}

/* Empty pieces are legal: a size-0 split and slice. */
Test(concat, empty_pieces)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){2, 3}), *out[3];
    cr_assert(tg_split(g, x, 3, (int64_t[]){0, 3, 0}, 1, out) == TG_OK, "%s", tg_graph_error(g));
    tg_node *e = tg_slice(g, x, 1, 2, 1, 1);
    tg_node *c = tg_concat(g, 3, out, 1);
    cr_assert(e && c);
    cr_assert_eq(tg_node_value(out[0])->shape[1], 0);
    cr_assert_eq(tg_node_value(e)->shape[1], 0);
    cr_assert_eq(tg_node_value(c)->shape[1], 3);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    tg_graph_free(g);
}

/* ---- bad input ---- */

static tg_node *in_f32(tg_graph *g, int rank, const int64_t *shape)
{
    return tg_input(g, "x", TG_F32, rank, shape);
}

Test(concat_errors, cat)
{
    tg_graph *g = tg_graph_new(TG_F32);
    cr_assert_null(tg_concat(g, 0, NULL, 0));
    tt_assert_graph_error(g, "torch.cat(): expected a non-empty list of Tensors");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    tg_node *s = in_f32(g, 0, NULL);
    cr_assert_null(tg_concat(g, 2, (tg_node *[]){s, s}, 0));
    tt_assert_graph_error(g, "zero-dimensional tensor (at position 0) cannot be concatenated");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    tg_node *a = in_f32(g, 2, (int64_t[]){2, 3}), *b = in_f32(g, 3, (int64_t[]){2, 3, 1});
    cr_assert_null(tg_concat(g, 2, (tg_node *[]){a, b}, 0));
    tt_assert_graph_error(g, "Tensors must have same number of dimensions: got 2 and 3");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    a = in_f32(g, 2, (int64_t[]){2, 3});
    b = in_f32(g, 2, (int64_t[]){3, 4});
    cr_assert_null(tg_concat(g, 2, (tg_node *[]){a, b}, -1));
    tt_assert_graph_error(g, "Sizes of tensors must match except in dimension 1. Expected size 2 "
                             "but got size 3 for tensor number 1 in the list.");
    tt_assert_graph_error(g, "shapes [2, 3] and [3, 4] differ at dim 0");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    a = in_f32(g, 2, (int64_t[]){2, 3});
    b = tg_input(g, "i", TG_I64, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_concat(g, 2, (tg_node *[]){a, b}, 0));
    tt_assert_graph_error(g, "expected all tensors to have the same dtype, but tensor 0 is float32 "
                             "and tensor 1 is int64");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    a = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_concat(g, 2, (tg_node *[]){a, a}, 2));
    tt_assert_graph_error(g, "cat: Dimension out of range (expected to be in range of [-2, 1], but "
                             "got 2)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    a = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_concat(g, 2, (tg_node *[]){a, NULL}, 0));
    tt_assert_graph_error(g, "cat: input 1 is NULL");
    tg_graph_free(g);
}

Test(concat_errors, split)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, 2, (int64_t[]){2, 3}), *out[2] = {x, x};
    cr_assert_neq(tg_split(g, x, 2, (int64_t[]){1, 1}, 1, out), TG_OK);
    tt_assert_graph_error(g, "split_with_sizes expects split_sizes to sum exactly to 3 (input "
                             "tensor's size at dimension 1), but got split_sizes=[1, 1]");
    cr_assert(out[0] == NULL && out[1] == NULL);
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_neq(tg_split(g, x, 2, (int64_t[]){4, -1}, 1, out), TG_OK);
    tt_assert_graph_error(g, "split_with_sizes expects split_sizes have only non-negative entries, "
                          "but got split_sizes=[4, -1]");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_neq(tg_split(g, x, 2, (int64_t[]){1, 1}, -3, out), TG_OK);
    tt_assert_graph_error(g, "split: Dimension out of range (expected to be in range of [-2, 1], "
                             "but got -3)");
    tg_graph_free(g);
}

Test(concat_errors, narrow)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_narrow(g, x, 1, 2, 2));
    tt_assert_graph_error(g, "start (2) + length (2) exceeds dimension size (3). (dim 1)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_narrow(g, x, 1, 4, 0));
    tt_assert_graph_error(g, "start out of range (expected to be in range of [-3, 3], but got 4) "
                             "for dim 1 of size 3");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_narrow(g, x, 1, 0, -1));
    tt_assert_graph_error(g, "length must be non-negative");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 0, NULL);
    cr_assert_null(tg_narrow(g, x, 0, 0, 1));
    tt_assert_graph_error(g, "narrow() cannot be applied to a 0-dim tensor.");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_narrow(g, x, 2, 0, 1));
    tt_assert_graph_error(g, "narrow: Dimension out of range (expected to be in range of [-2, 1], "
                             "but got 2)");
    tg_graph_free(g);
}

Test(concat_errors, slice)
{
    for (int64_t step = 0; step > -2; step--) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = in_f32(g, 2, (int64_t[]){2, 3});
        cr_assert_null(tg_slice(g, x, 1, 0, 3, step));
        tt_assert_graph_error(g, "slice step must be positive");
        tg_graph_free(g);
    }
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_slice(g, x, -3, 0, 3, 1));
    tt_assert_graph_error(g, "slice: Dimension out of range (expected to be in range of [-2, 1], "
                             "but got -3)");
    tg_graph_free(g);
}

Test(concat_errors, index_select_build)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = in_f32(g, 2, (int64_t[]){2, 3});
    tg_node *fi = tg_input(g, "f", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_index_select(g, x, 1, fi));
    tt_assert_graph_error(g, "index_select(): Expected dtype int64 for index, got float32");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    tg_node *i2 = tg_input(g, "i", TG_I64, 2, (int64_t[]){1, 1});
    cr_assert_null(tg_index_select(g, x, 1, i2));
    tt_assert_graph_error(g, "index_select(): Index is supposed to be a vector");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 0, NULL);
    tg_node *i1 = tg_input(g, "i", TG_I64, 1, (int64_t[]){1});
    cr_assert_null(tg_index_select(g, x, 0, i1));
    tt_assert_graph_error(g, "index_select: cannot be applied to a 0-dim tensor");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = in_f32(g, 2, (int64_t[]){2, 3});
    i1 = tg_input(g, "i", TG_I64, 1, (int64_t[]){1});
    cr_assert_null(tg_index_select(g, x, 2, i1));
    tt_assert_graph_error(g, "index_select: Dimension out of range (expected to be in range of "
                             "[-2, 1], but got 2)");
    tg_graph_free(g);
}

/* Index values are data: the forward finds them and fails, never reading out of bounds. */
Test(concat_errors, index_select_out_of_range)
{
    const int64_t bad[2] = {3, -1};
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = in_f32(g, 2, (int64_t[]){2, 3});
        tg_node *i = tg_input(g, "i", TG_I64, 1, (int64_t[]){2});
        ((int64_t *)tg_node_value(i)->data)[1] = bad[k];
        tg_node *y = tg_index_select(g, x, 1, i);
        cr_assert(y);
        cr_assert_eq(tg_graph_forward(g), TG_ERR_INVALID);
        tt_assert_last_error("index out of range in self");
        char want[96];
        snprintf(want, sizeof want, "index[1] = %lld is not in [0, 3) (dim 1 of size 3)",
                 (long long)bad[k]);
        tt_assert_last_error(want);
        tg_graph_free(g);
    }
}
