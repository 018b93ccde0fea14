/*
 * test_sdpa.c - the fused attention op: against PyTorch (fixtures from
 * tests/fixtures/gen_nn.py, eval mode), against the unfused chain it replaces
 * (einsum, causal mask, softmax, dropout, einsum) with dropout on in
 * training, F64 gradcheck with dropout, thread independence, bad input.
 */
#include "nn_fixture.h"
#include "graph_impl.h"
#include "simd/vec.h"

#include <math.h>
#include <criterion/parameterized.h>

static int b_causal(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_sdpa(g, in[0], in[1], in[2], true, 0.5, 0.1));
}
static int b_cross(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_sdpa(g, in[0], in[1], in[2], false, 1 / sqrt(3.0), 0.1));
}
static int b_long(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_sdpa(g, in[0], in[1], in[2], true, 1 / sqrt(8.0), 0));
}
static int b_wide(tg_graph *g, tg_node **in, tg_node **out)
{
    return !!(out[0] = tg_sdpa(g, in[0], in[1], in[2], false, 0.25, 0));
}

static const nn_case cases[] = {
    {"sdpa_causal", 3, b_causal, false},
    {"sdpa_cross", 3, b_cross, false},
    {"sdpa_long_causal", 3, b_long, false},
    {"sdpa_wide", 3, b_wide, false},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

/* graphs are not in training mode here: dropout is off, as in PyTorch's eval */
ParameterizedTestParameters(sdpa, fixture) { return params(); }
ParameterizedTest(int *i, sdpa, fixture) { nn_fixture_run(&cases[*i]); }

ParameterizedTestParameters(sdpa, gradcheck) { return params(); }
ParameterizedTest(int *i, sdpa, gradcheck) { nn_gradcheck_run(&cases[*i]); }

/* ---- fused against unfused ---- */

typedef struct {
    tg_graph *g;
    tg_node  *q, *k, *v, *y;
} att;

static tg_node *input(tg_graph *g, tg_dtype dt, const char *name, int64_t b, int64_t t,
                      int64_t h, int64_t w, uint64_t seed)
{
    tg_node *x = tg_input(g, name, dt, 4, (int64_t[]){b, t, h, w});
    tt_randn((tg_tensor *)tg_node_value(x), seed);
    tg_node_set_requires_grad(x, true);
    return x;
}

/* y = attention(q, k, v), fused (tg_sdpa) or as FullAttention's four steps */
static att att_build(bool fused, tg_dtype dt, int64_t B, int64_t L, int64_t S, int64_t H,
                     int64_t E, int64_t D, bool causal, double scale, double p, bool training)
{
    att a;
    a.g = tg_graph_new(dt);
    tg_graph_set_training(a.g, training);
    tg_graph_seed(a.g, 77);
    a.q = input(a.g, dt, "q", B, L, H, E, 1);
    a.k = input(a.g, dt, "k", B, S, H, E, 2);
    a.v = input(a.g, dt, "v", B, S, H, D, 3);
    if (fused) {
        a.y = tg_sdpa(a.g, a.q, a.k, a.v, causal, scale, p);
    } else {
        tg_node *s = tg_einsum(a.g, "blhe,bshe->bhls", 2, (tg_node *[]){a.q, a.k});
        if (causal) s = tg_masked_fill(a.g, s, tg_causal_mask(a.g, B, L), -INFINITY);
        tg_node *A = tg_dropout(a.g, tg_softmax_scaled(a.g, s, -1, scale), p);
        a.y = tg_einsum(a.g, "bhls,bshd->blhd", 2, (tg_node *[]){A, a.v});
    }
    cr_assert_not_null(a.y, "%s", tg_graph_error(a.g));
    return a;
}

static void att_run(att *a)
{
    const tg_tensor *yv = tg_node_value(a->y);
    tg_tensor *dy = tg_tensor_new(yv->dtype, yv->rank, yv->shape);
    tt_randn(dy, 9);
    cr_assert_eq(tg_graph_forward(a->g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_graph_backward(a->g, a->y, dy), TG_OK, "%s", tg_last_error());
    tg_tensor_free(dy);
}

static void compare_mode(int64_t B, int64_t L, int64_t S, int64_t H, int64_t E, int64_t D,
                         bool causal, double p, bool training)
{
    for (int d = 0; d < 2; d++) {
        tg_dtype dt = d ? TG_F64 : TG_F32;
        double tol = d ? 1e-12 : 2e-6;
        att f = att_build(true, dt, B, L, S, H, E, D, causal, 0.3, p, training);
        att u = att_build(false, dt, B, L, S, H, E, D, causal, 0.3, p, training);
        att_run(&f);
        att_run(&u);
        tt_assert_close(tg_node_value(f.y), tg_node_value(u.y), tol, tol, "y");
        tt_assert_close(tg_node_grad(f.q), tg_node_grad(u.q), tol, tol, "dq");
        tt_assert_close(tg_node_grad(f.k), tg_node_grad(u.k), tol, tol, "dk");
        tt_assert_close(tg_node_grad(f.v), tg_node_grad(u.v), tol, tol, "dv");
        tg_graph_free(f.g);
        tg_graph_free(u.g);
    }
}

static void compare(int64_t B, int64_t L, int64_t S, int64_t H, int64_t E, int64_t D,
                    bool causal, double p)
{
    compare_mode(B, L, S, H, E, D, causal, p, true);
}

/* Dropout in training: the same key from the same graph seed, the same
 * counter-based mask over [B, H, L, S], so the two agree to rounding. */
Test(sdpa, matches_the_unfused_chain_with_dropout)
{
    compare(2, 5, 5, 3, 4, 6, true, 0.3);
    compare(2, 4, 9, 2, 3, 5, false, 0.5);
    compare(1, 130, 130, 2, 8, 4, true, 0.2);    /* three row blocks of up to 64 */
    compare(1, 50, 700, 1, 4, 3, false, 0.1);    /* rows per block cut to 32768 / S = 46 */
    compare(3, 6, 6, 1, 5, 2, true, 0);
    compare(2, 3, 3, 2, 4, 4, true, 1);          /* p = 1: y = 0 and no gradient to q, k */
    /* key lengths of whole vectors with shallow heads: K and V transposed first */
    compare(2, 16, 16, 2, 8, 8, true, 0.2);
    compare(2, 10, 32, 3, 16, 5, false, 0.3);
}

/* Heads of at most 16 keys (F32 with AVX-512: ops/simd/vec_softmax.c's tiny-head kernels,
 * 16 query rows at a time, P V straight from P^T without dropout), and the
 * same shapes with AVX-512 off (the small AVX2 kernels): query lengths over
 * 16 and over a 64-row block, depths over 16, eval and training. */
Test(sdpa, tiny_heads_match_the_unfused_chain)
{
    for (int w = 0; w < 2; w++) {
        tg__vec_set_avx512(w ? 0 : -1);
        compare_mode(2, 40, 16, 2, 20, 33, false, 0, false);
        compare_mode(2, 40, 7, 3, 40, 17, false, 0.3, true);
        compare_mode(1, 16, 16, 1, 1, 1, true, 0.2, true);
        compare_mode(2, 13, 13, 2, 17, 16, true, 0, false);
        compare_mode(3, 1, 1, 2, 16, 16, false, 0, true);
        compare_mode(2, 70, 12, 4, 16, 16, false, 0, true);
        compare_mode(2, 12, 12, 4, 16, 16, false, 0.1, false);
    }
    tg__vec_set_avx512(-1);
}

/* The mask did drop entries: training differs from eval, and dropping changes
 * with each forward (a new key), as tg_dropout's. */
Test(sdpa, dropout_draws_a_new_mask_each_forward)
{
    att a = att_build(true, TG_F32, 2, 8, 8, 2, 4, 4, false, 0.5, 0.5, true);
    cr_assert_eq(tg_graph_forward(a.g), TG_OK);
    tg_tensor *first = tg_tensor_clone(tg_node_value(a.y));
    cr_assert_eq(tg_graph_forward(a.g), TG_OK);
    cr_assert(memcmp(first->data, tg_node_value(a.y)->data, (size_t)first->numel * 4) != 0);
    tg_graph_set_training(a.g, false);
    att e = att_build(true, TG_F32, 2, 8, 8, 2, 4, 4, false, 0.5, 0.5, false);
    cr_assert_eq(tg_graph_forward(a.g), TG_OK);
    cr_assert_eq(tg_graph_forward(e.g), TG_OK);
    tt_assert_close(tg_node_value(a.y), tg_node_value(e.y), 0, 0, "eval is deterministic");
    cr_assert(memcmp(first->data, tg_node_value(e.y)->data, (size_t)first->numel * 4) != 0);
    tg_tensor_free(first);
    tg_graph_free(a.g);
    tg_graph_free(e.g);
}

/* F64 gradcheck with dropout on (tg_gradcheck reseeds the graph before each
 * evaluation, so every probe sees the same mask). */
Test(sdpa, gradcheck_with_dropout)
{
    for (int c = 0; c < 2; c++) {
        att a = att_build(true, TG_F64, 2, 4, c ? 6 : 4, 2, 3, 2, !c, 0.7, 0.3, true);
        cr_assert_eq(tt_gradcheck(a.g, a.y, 5), 3);
        tg_graph_free(a.g);
    }
}

/* Bitwise the same result on 1 and 2 threads (the work split differs). */
Test(sdpa, same_bits_on_any_thread_count)
{
    tg_tensor *y1 = NULL, *dq1 = NULL, *dk1 = NULL, *dv1 = NULL;
    for (int t = 1; t <= 2; t++) {
        cr_assert_eq(tg_threads_set(t), TG_OK);
        att a = att_build(true, TG_F32, 3, 70, 70, 3, 8, 8, true, 0.3, 0.2, true);
        att_run(&a);
        if (t == 1) {
            y1 = tg_tensor_clone(tg_node_value(a.y));
            dq1 = tg_tensor_clone(tg_node_grad(a.q));
            dk1 = tg_tensor_clone(tg_node_grad(a.k));
            dv1 = tg_tensor_clone(tg_node_grad(a.v));
        } else {
            tt_assert_close(tg_node_value(a.y), y1, 0, 0, "y");
            tt_assert_close(tg_node_grad(a.q), dq1, 0, 0, "dq");
            tt_assert_close(tg_node_grad(a.k), dk1, 0, 0, "dk");
            tt_assert_close(tg_node_grad(a.v), dv1, 0, 0, "dv");
        }
        tg_graph_free(a.g);
    }
    tg_threads_set(0);
    tg_tensor_free(y1), tg_tensor_free(dq1), tg_tensor_free(dk1), tg_tensor_free(dv1);
}

/* Only the inputs that require grad get one; the others' grads stay NULL. */
Test(sdpa, gradient_to_some_inputs_only)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *q = tg_input(g, "q", TG_F64, 4, (int64_t[]){1, 3, 1, 2});
    tg_node *k = tg_input(g, "k", TG_F64, 4, (int64_t[]){1, 3, 1, 2});
    tg_node *v = tg_input(g, "v", TG_F64, 4, (int64_t[]){1, 3, 1, 2});
    tt_randn((tg_tensor *)tg_node_value(q), 1);
    tt_randn((tg_tensor *)tg_node_value(k), 2);
    tt_randn((tg_tensor *)tg_node_value(v), 3);
    tg_node_set_requires_grad(k, true);
    tg_node *y = tg_sdpa(g, q, k, v, false, 1, 0);
    cr_assert_eq(tt_gradcheck(g, y, 2), 1);
    cr_assert_null(tg_node_grad(q));
    cr_assert_null(tg_node_grad(v));
    tg_graph_free(g);
}

/* Empty key length: softmax over nothing, y = 0 (torch gives zeros too). */
Test(sdpa, empty_key_length_gives_zeros)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *q = tg_input(g, "q", TG_F32, 4, (int64_t[]){2, 3, 2, 4});
    tg_node *k = tg_input(g, "k", TG_F32, 4, (int64_t[]){2, 0, 2, 4});
    tg_node *v = tg_input(g, "v", TG_F32, 4, (int64_t[]){2, 0, 2, 5});
    tt_randn((tg_tensor *)tg_node_value(q), 1);
    tg_node *y = tg_sdpa(g, q, k, v, false, 1, 0);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    const tg_tensor *yv = tg_node_value(y);
    cr_assert_eq(yv->numel, 2 * 3 * 2 * 5);
    for (int64_t i = 0; i < yv->numel; i++) cr_assert_eq(((const float *)yv->data)[i], 0.0f);
    tg_graph_free(g);
}

/* No query (L = 0) or no key (S = 0): nothing flows back, so q, k and v get
 * zero gradients, also when sdpa is the first to write them (they come from
 * ops here, and the plan starts as NaN so a gradient left unset shows). */
Test(sdpa, empty_lengths_give_zero_gradients)
{
    for (int c = 0; c < 2; c++) {
        const int64_t L = c ? 3 : 0, S = c ? 0 : 4;
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *leaf[3], *op[3];
        const int64_t T[3] = {L, S, S}, W[3] = {4, 4, 5};
        for (int i = 0; i < 3; i++) {
            leaf[i] = tg_input(g, "x", TG_F32, 4, (int64_t[]){2, T[i], 2, W[i]});
            tt_randn((tg_tensor *)tg_node_value(leaf[i]), (uint64_t)i + 1);
            tg_node_set_requires_grad(leaf[i], true);
            op[i] = tg_scale(g, leaf[i], 2.0);
        }
        tg_node *y = tg_sdpa(g, op[0], op[1], op[2], false, 0.5, 0);
        cr_assert_not_null(y, "%s", tg_graph_error(g));
        cr_assert_eq(tg_graph_plan(g), TG_OK);
        memset(g->block, 0xff, g->block_bytes);
        tg_tensor *dy = tg_tensor_new(TG_F32, 4, tg_node_value(y)->shape);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
        for (int i = 0; i < 3; i++) {
            const tg_tensor *gr = tg_node_grad(leaf[i]);
            for (int64_t k = 0; k < gr->numel; k++)
                cr_assert_eq(((const float *)gr->data)[k], 0.0f, "case %d input %d", c, i);
        }
        const tg_tensor *yv = tg_node_value(y);
        for (int64_t k = 0; k < yv->numel; k++) cr_assert_eq(((const float *)yv->data)[k], 0.0f);
        tg_tensor_free(dy);
        tg_graph_free(g);
    }
}

/* ---- bad input ---- */

static void rejects(const int64_t *qs, const int64_t *ks, const int64_t *vs, bool causal,
                    double scale, double p, const char *needle)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *q = tg_input(g, "q", TG_F32, 4, qs);
    tg_node *k = tg_input(g, "k", TG_F32, 4, ks);
    tg_node *v = tg_input(g, "v", TG_F32, 4, vs);
    cr_assert_null(tg_sdpa(g, q, k, v, causal, scale, p));
    tt_assert_graph_error(g, needle);
    tg_graph_free(g);
}

Test(sdpa_errors, shapes_mask_scale_and_p)
{
    const int64_t q[4] = {2, 5, 3, 4}, k[4] = {2, 5, 3, 4}, v[4] = {2, 5, 3, 6};
    rejects(q, (int64_t[]){2, 5, 3, 5}, v, false, 1, 0,
            "sdpa: key [2, 5, 3, 5] must be [B, S, H, E] with B, H and E of query [2, 5, 3, 4]");
    rejects(q, (int64_t[]){1, 5, 3, 4}, v, false, 1, 0, "B, H and E of query");
    rejects(q, (int64_t[]){2, 5, 2, 4}, v, false, 1, 0, "B, H and E of query");
    rejects(q, k, (int64_t[]){2, 6, 3, 6}, false, 1, 0,
            "sdpa: value [2, 6, 3, 6] must be [B, S, H, D] with B, S and H of key [2, 5, 3, 4]");
    rejects(q, (int64_t[]){2, 7, 3, 4}, (int64_t[]){2, 7, 3, 6}, true, 1, 0,
            "sdpa: the causal mask needs L == S (query length 5, key length 7)");
    rejects(q, k, v, false, INFINITY, 0, "sdpa: scale must be finite, got inf");
    rejects(q, k, v, false, NAN, 0, "sdpa: scale must be finite, got nan");
    rejects(q, k, v, false, 1, 1.5,
            "sdpa: dropout probability has to be between 0 and 1, but got 1.5");
    rejects(q, k, v, false, 1, -0.1, "but got -0.1");
    rejects(q, k, v, false, 1, NAN, "but got nan");
}

Test(sdpa_errors, rank_dtype_and_null)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *q3 = tg_input(g, "q", TG_F32, 3, (int64_t[]){2, 5, 4});
    tg_node *k = tg_input(g, "k", TG_F32, 4, (int64_t[]){2, 5, 1, 4});
    cr_assert_null(tg_sdpa(g, q3, k, k, false, 1, 0));
    tt_assert_graph_error(g, "sdpa: query, key and value must be 4-d [B, L, H, E], [B, S, H, E] "
                             "and [B, S, H, D]; got [2, 5, 4], [2, 5, 1, 4] and [2, 5, 1, 4]");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    tg_node *qi = tg_input(g, "q", TG_I64, 4, (int64_t[]){2, 5, 1, 4});
    k = tg_input(g, "k", TG_F32, 4, (int64_t[]){2, 5, 1, 4});
    cr_assert_null(tg_sdpa(g, qi, k, k, false, 1, 0));
    tt_assert_graph_error(g, "sdpa");
    tt_assert_graph_error(g, "query");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    k = tg_input(g, "k", TG_F32, 4, (int64_t[]){2, 5, 1, 4});
    cr_assert_null(tg_sdpa(g, NULL, k, k, false, 1, 0));
    cr_assert_not_null(tg_graph_error(g));
    tg_graph_free(g);
}
