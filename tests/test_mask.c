/*
 * test_mask.c - masked_fill (scalar and 0-d tensor value) and the causal
 * mask against PyTorch fixtures (forward and every float gradient, float32),
 * F64 gradcheck, large broadcast shapes against a direct loop, and the bad
 * inputs of OPS.md 19. Fixtures: tests/fixtures/gen_select.py.
 */
#include "testutil.h"

#include <criterion/parameterized.h>
#include <math.h>

#include "select_case.h"

static tg_node *mf_m15(tg_graph *g, tg_node **in, tg_node **o)
{
    (void)o;
    return tg_masked_fill(g, in[0], in[1], -1.5);
}
static tg_node *mf_q(tg_graph *g, tg_node **in, tg_node **o)
{
    (void)o;
    return tg_masked_fill(g, in[0], in[1], 0.25);
}
static tg_node *mf_ninf(tg_graph *g, tg_node **in, tg_node **o)
{
    (void)o;
    return tg_masked_fill(g, in[0], in[1], -INFINITY);
}
/* scores [2, 2, 4, 4] masked with the causal helper (the fixture's in1 is the
 * same mask, checked in causal_mask_matches_pytorch), then softmax */
static tg_node *mf_causal_softmax(tg_graph *g, tg_node **in, tg_node **o)
{
    (void)o;
    return tg_softmax(g, tg_masked_fill(g, in[0], tg_causal_mask(g, 2, 4), -INFINITY), -1);
}
static tg_node *mf_tensor(tg_graph *g, tg_node **in, tg_node **o)
{
    (void)o;
    return tg_masked_fill_tensor(g, in[0], in[1], in[2]);
}

static const sel_case cases[] = {
    {"mf_bcast", 2, mf_m15, true},                /* (2,3) with a (4,2,3) mask -> (4,2,3) */
    {"mf_mask_bcast", 2, mf_q, true},             /* (2,3,4) with a (3,1) mask */
    {"mf_ninf", 2, mf_ninf, false},               /* -inf output: no finite differences */
    {"mf_ninf_softmax", 2, mf_causal_softmax, true},
    {"mf_tensor_doc", 3, mf_tensor, true},        /* OPS.md 13: dself [[3,5,2]], dvalue 5 */
    {"mf_tensor", 3, mf_tensor, true},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_idx[N_CASES];

ParameterizedTestParameters(mask, fixture)
{
    return sel_params(cases, N_CASES, false, case_idx);
}
ParameterizedTest(int *i, mask, fixture) { sel_fixture(&cases[*i]); }

ParameterizedTestParameters(mask, gradcheck)
{
    return sel_params(cases, N_CASES, true, case_idx);
}
ParameterizedTest(int *i, mask, gradcheck) { sel_gradcheck(&cases[*i]); }

static tg_node *bool_node(tg_graph *g, int rank, const int64_t *shape)
{
    return tg_input(g, "mask", TG_BOOL, rank, shape);
}

/* The OPS.md 13 numbers, spelled out (the fixture holds the same). */
Test(mask, tensor_value_doc_numbers)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){1, 3}), *m = bool_node(g, 2, (int64_t[]){2, 3});
    tg_node *v = sel_in(g, 0, NULL);
    memcpy(tg_node_value(m)->data, (unsigned char[]){1, 0, 0, 0, 0, 1}, 6);
    *(float *)tg_node_value(v)->data = 9;
    tg_node_set_requires_grad(x, true);
    tg_node_set_requires_grad(v, true);
    tg_node *y = tg_masked_fill_tensor(g, x, m, v);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    const float *yd = tg_node_value(y)->data;
    cr_assert(yd[0] == 9 && yd[1] == 0 && yd[5] == 9 && yd[4] == 0);
    tg_tensor *dy = tg_tensor_new(TG_F32, 2, (int64_t[]){2, 3});
    for (int i = 0; i < 6; i++) tg_tensor_set(dy, i, i);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK);
    const float *dx = tg_node_grad(x)->data;
    cr_assert(dx[0] == 3 && dx[1] == 5 && dx[2] == 2, "dself %g %g %g", dx[0], dx[1], dx[2]);
    cr_assert_eq(*(const float *)tg_node_grad(v)->data, 5);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

Test(mask, causal_mask_matches_pytorch)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *m = tg_causal_mask(g, 2, 4);
    cr_assert(m, "%s", tg_graph_error(g));
    const tg_tensor *t = tg_node_value(m);
    cr_assert_eq(t->dtype, TG_BOOL);
    cr_assert(t->rank == 4 && t->shape[0] == 2 && t->shape[1] == 1 && t->shape[2] == 4 &&
              t->shape[3] == 4);
    tg_tensor *want = tt_load("select/mf_ninf_softmax", "in1.npy");
    sel_assert_equal(t, want, "causal mask");
    const unsigned char *d = t->data;
    cr_assert(d[1] == 1 && d[4] == 0 && d[5] == 0 && d[6] == 1, "row 0: s > 0 masked");
    tg_tensor_free(want);
    cr_assert(tg_causal_mask(g, 0, 5) && tg_causal_mask(g, 3, 0), "empty masks are fine");
    tg_graph_free(g);
}

/* With the causal mask, row l = 0 attends only to s = 0 and every masked
 * weight is exactly 0. */
Test(mask, causal_softmax_rows)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *s = sel_in(g, 4, (int64_t[]){2, 3, 5, 5});
    tt_randn((tg_tensor *)tg_node_value(s), 4);
    tg_node *a = tg_softmax_scaled(g, tg_masked_fill(g, s, tg_causal_mask(g, 2, 5), -INFINITY),
                                   -1, 0.5);
    cr_assert(a, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    const float *A = tg_node_value(a)->data;
    for (int r = 0; r < 2 * 3 * 5; r++) {
        int l = r % 5;
        double sum = 0;
        for (int c = 0; c < 5; c++) {
            if (c > l) cr_assert_eq(A[r * 5 + c], 0.0f, "row %d col %d", r, c);
            sum += A[r * 5 + c];
        }
        cr_assert(fabs(sum - 1) < 1e-6);
        if (l == 0) cr_assert_eq(A[r * 5], 1.0f);
    }
    tg_graph_free(g);
}

/* Large shapes (thread-pool rows) for both backward paths: x of the result's
 * shape (parallel) and a broadcast x (serial sum_to), against a direct loop. */
static void big_case(bool x_broadcast)
{
    enum { B = 4, H = 8, L = 48 };
    int64_t full[4] = {B, H, L, L}, xs[4] = {B, 1, L, L}, ms[4] = {B, 1, 1, L};
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = sel_in(g, 4, x_broadcast ? xs : full);
    tt_randn((tg_tensor *)tg_node_value(x), 8);
    tg_node *m = bool_node(g, 4, x_broadcast ? full : ms);
    unsigned char *md = tg_node_value(m)->data;
    for (int64_t i = 0; i < tg_node_value(m)->numel; i++) md[i] = (i * 2654435761u >> 7) % 3 == 0;
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_masked_fill(g, x, m, -7.0);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    tg_tensor *dy = tg_tensor_new(TG_F64, 4, full);
    tt_randn(dy, 9);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK);
    const double *X = tg_node_value(x)->data, *Y = tg_node_value(y)->data, *DY = dy->data;
    const double *DX = tg_node_grad(x)->data;
    static double want_dx[B * H * L * L];
    memset(want_dx, 0, sizeof want_dx);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++)
                for (int s = 0; s < L; s++) {
                    int64_t o = ((b * H + h) * L + l) * L + s;
                    int64_t xo = x_broadcast ? (b * L + l) * L + s : o;
                    int64_t mo = x_broadcast ? o : b * L + s;
                    double want = md[mo] ? -7.0 : X[xo];
                    cr_assert_eq(Y[o], want, "y %ld", (long)o);
                    if (!md[mo]) want_dx[xo] += DY[o];
                }
    for (int64_t i = 0; i < tg_node_value(x)->numel; i++)
        cr_assert(fabs(DX[i] - want_dx[i]) < 1e-12, "dx %ld: %g vs %g", (long)i, DX[i], want_dx[i]);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

Test(mask, big_same_shape) { big_case(false); }
Test(mask, big_broadcast_x) { big_case(true); }

/* ---- bad input (OPS.md 19: non-bool mask, value not 0-d, not broadcastable) ---- */

Test(mask_errors, float_mask)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3}), *m = sel_in(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_masked_fill(g, x, m, 0));
    tt_assert_graph_error(g, "masked_fill: masked_fill only supports boolean masks, but got mask "
                             "with dtype float32");
    tg_graph_free(g);
}

Test(mask_errors, int_mask)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3});
    tg_node *m = tg_input(g, "m", TG_I64, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_masked_fill(g, x, m, 0));
    tt_assert_graph_error(g, "only supports boolean masks, but got mask with dtype int64");
    tg_graph_free(g);
}

Test(mask_errors, value_not_0d)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3}), *m = bool_node(g, 2, (int64_t[]){2, 3});
    tg_node *v = sel_in(g, 1, (int64_t[]){1});
    cr_assert_null(tg_masked_fill_tensor(g, x, m, v));
    tt_assert_graph_error(g, "masked_fill only supports a 0-dimensional value tensor, but got "
                             "tensor with 1 dimension(s).");
    tg_graph_free(g);
}

Test(mask_errors, value_not_float)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3}), *m = bool_node(g, 2, (int64_t[]){2, 3});
    tg_node *v = tg_input(g, "v", TG_I64, 0, NULL);
    cr_assert_null(tg_masked_fill_tensor(g, x, m, v));
    tt_assert_graph_error(g, "masked_fill: value must be float32, got int64");
    tg_graph_free(g);
}

Test(mask_errors, value_null)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3}), *m = bool_node(g, 2, (int64_t[]){2, 3});
    cr_assert_null(tg_masked_fill_tensor(g, x, m, NULL));
    tt_assert_graph_error(g, "masked_fill: input 2 is NULL");
    tg_graph_free(g);
}

Test(mask_errors, not_broadcastable)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 3}), *m = bool_node(g, 2, (int64_t[]){2, 4});
    cr_assert_null(tg_masked_fill(g, x, m, 1));
    tt_assert_graph_error(g, "masked_fill: The size of tensor a (3) must match the size of tensor "
                             "b (4) at non-singleton dimension 1");
    tg_graph_free(g);
}

/* The causal mask needs S == L: [B,1,L,L] against scores [B,H,L,S] with S != L. */
Test(mask_errors, causal_mask_needs_square_scores)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *s = sel_in(g, 4, (int64_t[]){2, 4, 6, 7});
    cr_assert_null(tg_masked_fill(g, s, tg_causal_mask(g, 2, 6), -INFINITY));
    tt_assert_graph_error(g, "The size of tensor a (7) must match the size of tensor b (6) at "
                             "non-singleton dimension 3");
    tg_graph_free(g);
}

Test(mask_errors, integer_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "i", TG_I64, 1, (int64_t[]){3}), *m = bool_node(g, 1, (int64_t[]){3});
    cr_assert_null(tg_masked_fill(g, x, m, 1));
    tt_assert_graph_error(g, "masked_fill: input must be float32, got int64");
    tg_graph_free(g);
}

Test(mask_errors, causal_negative)
{
    tg_graph *g = tg_graph_new(TG_F32);
    cr_assert_null(tg_causal_mask(g, 2, -1));
    tt_assert_graph_error(g, "causal_mask: B and L must be >= 0, got B = 2, L = -1");
    tg_graph_free(g);
}
