/*
 * test_assa.c - the two ASSA layers (layers/assa.h): the seed's top-k sparse
 * attention (assa_topk) and the paper's WindowAttention_sparse (assa_paper)
 * against the PyTorch oracle, F64 gradchecks, their defining properties
 * (k = N is dense attention, k = 1 is one-hot, k non-zeros per row, the
 * softmax-only / ReLU^2-only limits of the w mix), an independent C reference
 * of the paper layer, and every bad config.
 */
#include <math.h>
#include <string.h>

#include "layer_case.h"

#define ATOL 1e-5
#define RTOL 1e-4

Test(assa_topk, oracle) { tt_run_oracle_case("assa_topk", ATOL, RTOL); }
Test(assa_topk, oracle_2heads) { tt_run_oracle_case("assa_topk_2heads", ATOL, RTOL); }
Test(assa_topk, oracle_odd) { tt_run_oracle_case("x_assa_topk_odd", ATOL, RTOL); }
Test(assa_paper, oracle) { tt_run_oracle_case("assa_paper", ATOL, RTOL); }
Test(assa_paper, oracle_perturbed_mask)
{
    tt_run_oracle_case("assa_paper_perturbed_mask", ATOL, RTOL);
}
Test(assa_paper, oracle_odd) { tt_run_oracle_case("x_assa_paper_odd", ATOL, RTOL); }

Test(assa_topk, gradcheck)
{
    tt_layer_gradcheck("assa_topk", NULL, 0, 1, 0);
    tt_layer_gradcheck("assa_topk",
                       (const char *[]){"B=2", "N=7", "embed_dim=6", "num_heads=3", "k=4"}, 5,
                       2, 0);
    tt_layer_gradcheck("assa_topk", (const char *[]){"N=5", "k=5", "bias=false"}, 3, 3, 0);
}

Test(assa_paper, gradcheck)
{
    tt_layer_gradcheck("assa_paper", NULL, 0, 1, 0);
    tt_layer_gradcheck("assa_paper",
                       (const char *[]){"B_=4", "win_size=[3, 2]", "dim=6", "num_heads=3",
                                        "mask_windows=2"},
                       5, 2, 0);
    tt_layer_gradcheck("assa_paper",
                       (const char *[]){"B_=2", "win_size=2", "dim=4", "num_heads=1",
                                        "qkv_bias=false", "qk_scale=0.7", "mask_windows=1"},
                       7, 3, 0);
}

/* ------------------------------------------------------------ assa_topk */

/* A registry-free top-k layer in F64 with PyTorch init (+0.1 randn) from seed. */
static void topk_layer(tg_assa_topk *l, tg_params *ps, int64_t C, int64_t h, int64_t k,
                       uint64_t seed)
{
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    tg_assa_topk_config c = tg_assa_topk_defaults(C, h);
    c.k = k;
    cr_assert_eq(tg_assa_topk_init(l, &c, ps, "", "assa", &rng), TG_OK, "%s", tg_last_error());
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_tensor *p = &tg_params_at(ps, i)->value;
        for (int64_t j = 0; j < p->numel; j++)
            tg_tensor_set(p, j, tg_tensor_get(p, j) + 0.1 * tg_rng_normal(&rng));
    }
}

/* k = N keeps every score: ASSA is then dense softmax attention. Compared with
 * FullAttention (no mask, scale 1/sqrt(dh)) on the same q/k/v projections,
 * followed by the same out_proj: y, A and dx agree. */
Test(assa_topk, k_equal_to_N_is_dense_softmax_attention)
{
    const int64_t B = 2, N = 9, C = 12, h = 3;
    tg_params *ps = tg_params_new(TG_F64);
    tg_assa_topk l;
    topk_layer(&l, ps, C, h, N, 4);
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){B, N, C});
    tt_randn((tg_tensor *)tg_node_value(x), 5);
    tg_node_set_requires_grad(x, true);
    tg_node *A, *Afull;
    tg_node *y = tg_assa_topk_build(g, &l, x, &A);

    tg_full_attention_config fc = tg_full_attention_defaults();
    fc.mask_flag = false;
    fc.output_attention = true;
    int64_t heads[4] = {B, N, h, C / h};
    tg_node *Q = tg_reshape(g, tg_linear_mod_build(g, &l.q_proj, x), 4, heads);
    tg_node *K = tg_reshape(g, tg_linear_mod_build(g, &l.k_proj, x), 4, heads);
    tg_node *V = tg_reshape(g, tg_linear_mod_build(g, &l.v_proj, x), 4, heads);
    tg_node *o = tg_full_attention(g, &fc, "full", Q, K, V, NULL, &Afull);   /* [B, N, h, dh] */
    tg_node *yfull = tg_linear_mod_build(g, &l.out_proj, tg_reshape(g, o, 3,
                                                                     (int64_t[]){B, N, C}));
    cr_assert_not_null(yfull, "%s", tg_graph_error(g));
    tg_node_keep(A);
    tg_node_keep(Afull);
    tg_node_keep(y);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    tt_assert_close(tg_node_value(A), tg_node_value(Afull), 1e-14, 1e-12, "A");
    tt_assert_close(tg_node_value(y), tg_node_value(yfull), 1e-14, 1e-12, "y");

    tg_tensor *dy = tg_tensor_new(TG_F64, 3, (int64_t[]){B, N, C});
    tt_randn(dy, 6);
    cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
    tg_tensor *dx = tg_tensor_clone(tg_node_grad(x));
    cr_assert_eq(tg_graph_backward(g, yfull, dy), TG_OK, "%s", tg_last_error());
    tt_assert_close(dx, tg_node_grad(x), 1e-13, 1e-11, "dx");
    tg_tensor_free(dx);
    tg_tensor_free(dy);
    tg_graph_free(g);
    tg_params_free(ps);
}

/* One graph, one set of weights, three k's: every row of A(k) has exactly k
 * non-zeros, at the k largest entries of the dense A(N) (softmax is
 * monotonic), equal to those entries renormalised, summing to 1; k = 1 gives
 * one-hot rows (a 1 at the row's argmax). */
Test(assa_topk, rows_keep_exactly_k_largest_and_sum_to_one)
{
    const int64_t B = 2, N = 40, C = 16, h = 4, ks[3] = {1, 7, N};
    tg_params *ps = tg_params_new(TG_F64);
    tg_assa_topk l[3];
    topk_layer(&l[2], ps, C, h, N, 8);
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){B, N, C});
    tt_randn((tg_tensor *)tg_node_value(x), 9);
    tg_node *A[3];
    for (int i = 0; i < 3; i++) {
        l[i] = l[2];                  /* same parameters, another k */
        l[i].c.k = ks[i];
        snprintf(l[i].name, sizeof l[i].name, "k%lld", (long long)ks[i]);
        cr_assert_not_null(tg_assa_topk_build(g, &l[i], x, &A[i]), "%s", tg_graph_error(g));
        tg_node_keep(A[i]);
    }
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    const tg_tensor *dense = tg_node_value(A[2]);
    for (int i = 0; i < 2; i++) {
        const tg_tensor *a = tg_node_value(A[i]);
        for (int64_t r = 0; r < B * h * N; r++) {
            const double *row = (const double *)a->data + r * N;
            const double *d = (const double *)dense->data + r * N;
            int64_t nz = 0;
            double sum = 0, kept = 0, kth = INFINITY, best_dropped = -INFINITY;
            for (int64_t j = 0; j < N; j++) {
                if (row[j] != 0) {
                    nz++;
                    sum += row[j];
                    kept += d[j];
                    kth = fmin(kth, d[j]);
                } else {
                    best_dropped = fmax(best_dropped, d[j]);
                }
            }
            cr_assert_eq(nz, ks[i], "k=%lld row %lld: %lld non-zeros", (long long)ks[i],
                         (long long)r, (long long)nz);
            cr_assert_float_eq(sum, 1.0, 1e-12, "k=%lld row %lld sums to %.17g",
                               (long long)ks[i], (long long)r, sum);
            cr_assert(kth > best_dropped, "k=%lld row %lld keeps a smaller score", (long long)ks[i],
                      (long long)r);
            for (int64_t j = 0; j < N; j++)
                if (row[j] != 0)
                    cr_assert_float_eq(row[j], d[j] / kept, 1e-12, "k=%lld row %lld col %lld",
                                       (long long)ks[i], (long long)r, (long long)j);
            if (ks[i] == 1)
                for (int64_t j = 0; j < N; j++)
                    cr_assert(row[j] == 0.0 || (row[j] == 1.0 && d[j] == kth));
        }
    }
    tg_graph_free(g);
    tg_params_free(ps);
}

/* Zero weights make every score 0: all N scores tie, and topk's rule (the
 * lower index first) keeps keys 0..k-1 with weight 1/k each. */
Test(assa_topk, ties_keep_the_lowest_indices)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_assa_topk l;
    tg_assa_topk_config c = tg_assa_topk_defaults(8, 2);
    c.k = 3;
    cr_assert_eq(tg_assa_topk_init(&l, &c, ps, "blk", "assa", NULL), TG_OK);
    cr_assert_not_null(tg_params_find(ps, "blk.out_proj.bias"));
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 5, 8});
    tt_randn((tg_tensor *)tg_node_value(x), 1);
    tg_node *A;
    cr_assert_not_null(tg_assa_topk_build(g, &l, x, &A));
    tg_node_keep(A);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    const tg_tensor *a = tg_node_value(A);
    for (int64_t i = 0; i < a->numel; i++)
        cr_assert_float_eq(tg_tensor_get(a, i), i % 5 < 3 ? 1.0 / 3 : 0.0, 1e-7, "at %lld",
                           (long long)i);
    tg_graph_free(g);
    tg_params_free(ps);
}

/* Gradcheck at exact ties: q_proj = 0 makes every score 0, so probing
 * q_proj changes which keys topk keeps. Those probes are left out through
 * topk's kinks hook (counted as skipped); x, k/v/out_proj still check. */
Test(assa_topk, gradcheck_at_exact_ties_is_tie_safe)
{
    tg_params *ps = tg_params_new(TG_F64);
    tg_assa_topk l;
    topk_layer(&l, ps, 6, 2, 3, 12);
    tg_init_constant(&l.q_proj.weight->value, 0);
    tg_init_constant(&l.q_proj.bias->value, 0);
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){2, 5, 6});
    tt_randn((tg_tensor *)tg_node_value(x), 13);
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_assa_topk_build(g, &l, x, NULL);
    tg_gradcheck_result res[16];
    int n = 0;
    bool ok = false;
    cr_assert_eq(tg_gradcheck(g, y, &(tg_gradcheck_opts){.seed = 1}, res, 16, &n, &ok), TG_OK,
                 "%s", tg_last_error());
    cr_assert(ok, "gradcheck failed at ties");
    int64_t skipped_q = 0;
    for (int i = 0; i < n; i++) {
        bool q = !strncmp(res[i].name, "q_proj.", 7);
        cr_expect(res[i].pass, "%s", res[i].name);
        cr_expect(q || res[i].checked > 0, "%s: nothing checked", res[i].name);
        if (q) skipped_q += res[i].skipped;
    }
    /* every q_proj probe breaks the ties, so all of them are skipped */
    cr_assert_eq(skipped_q, 6 * 6 + 6, "%lld q_proj probes skipped", (long long)skipped_q);
    tg_graph_free(g);
    tg_params_free(ps);
}

Test(assa_topk, bad_configs)
{
    tt_assert_layer_rejects("assa_topk", (const char *[]){"k=32"}, 1,
                            "assa_topk: k (32) is larger than the sequence length N (6)");
    tt_assert_layer_rejects("assa_topk", (const char *[]){"N=4", "k=5"}, 2,
                            "assa_topk: k (5) is larger than the sequence length N (4)");
    tt_assert_layer_rejects("assa_topk", (const char *[]){"k=0"}, 1,
                            "assa_topk: k: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("assa_topk", (const char *[]){"k=-2"}, 1,
                            "k: -2 is out of range [1, inf)");
    tt_assert_layer_rejects("assa_topk", (const char *[]){"embed_dim=10", "num_heads=3"}, 2,
                            "assa_topk: embed_dim (10) must be divisible by num_heads (3)");
    tt_assert_layer_rejects("assa_topk", (const char *[]){"num_heads=0"}, 1,
                            "num_heads: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("assa_topk", (const char *[]){"N=0"}, 1,
                            "N: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("assa_topk", (const char *[]){"top_k=3"}, 1, "unknown key 'top_k'");
}

/* The typed API takes N from x: ASSA(embed_dim=8, num_heads=2) has k = 32 by
 * default, which a 6-token input cannot give. */
Test(assa_topk, builder_rejects_k_above_the_input_length)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_assa_topk l;
    tg_assa_topk_config c = tg_assa_topk_defaults(8, 2);
    cr_assert_eq(c.k, 32);
    cr_assert_eq(tg_assa_topk_init(&l, &c, ps, "", "assa", NULL), TG_OK, "%s", tg_last_error());
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 6, 8});
    tg_node *A = x;
    cr_assert_null(tg_assa_topk_build(g, &l, x, &A));
    cr_assert_null(A);
    tt_assert_graph_error(g, "assa_topk: k (32) is larger than the sequence length N (6)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 40, 7});
    cr_assert_null(tg_assa_topk_build(g, &l, x, NULL));
    tt_assert_graph_error(g, "assa: x must be [B, N, embed_dim=8], got [2, 40, 7]");
    tg_graph_free(g);

    c.embed_dim = 9;
    cr_assert_eq(tg_assa_topk_init(&l, &c, ps, "", "assa", NULL), TG_ERR_INVALID);
    tt_assert_last_error("embed_dim (9) must be divisible by num_heads (2)");
    tg_params_free(ps);
}

/* ----------------------------------------------------------- assa_paper */

/* The paper layer written out in plain loops (double), straight from
 * LAYERS.md 6.2; wh x ww window, params looked up by state_dict key. Fills
 * A [B_, H, N, N] and y [B_, N, C]. */
static void paper_reference(const tg_params *ps, const tg_tensor *x, const tg_tensor *mask,
                            int64_t wh, int64_t ww, int64_t H, double scale, double *A,
                            double *y)
{
    const int64_t B_ = x->shape[0], N = x->shape[1], C = x->shape[2], dh = C / H;
    const tg_tensor *Wq = &tg_params_find(ps, "qkv.to_q.weight")->value;
    const tg_tensor *Wkv = &tg_params_find(ps, "qkv.to_kv.weight")->value;
    const tg_param *bq = tg_params_find(ps, "qkv.to_q.bias"), *bkv = tg_params_find(ps,
                                                                             "qkv.to_kv.bias");
    const tg_tensor *T = &tg_params_find(ps, "relative_position_bias_table")->value;
    const tg_tensor *w = &tg_params_find(ps, "w")->value;
    const tg_tensor *Wp = &tg_params_find(ps, "proj.weight")->value;
    const tg_tensor *bp = &tg_params_find(ps, "proj.bias")->value;
    double e0 = exp(tg_tensor_get(w, 0)), e1 = exp(tg_tensor_get(w, 1));
    double w1 = e0 / (e0 + e1), w2 = e1 / (e0 + e1);
    double q[64 * 64], k[64 * 64], v[64 * 64], o[64 * 64], S[64];
    cr_assert(N * C <= 64 * 64 && N <= 64);
    for (int64_t b = 0; b < B_; b++) {
        for (int64_t n = 0; n < N; n++)
            for (int64_t f = 0; f < C; f++) {
                double sq = bq ? tg_tensor_get(&bq->value, f) : 0;
                double sk = bkv ? tg_tensor_get(&bkv->value, f) : 0;
                double sv = bkv ? tg_tensor_get(&bkv->value, C + f) : 0;
                for (int64_t c = 0; c < C; c++) {
                    double xv = tg_tensor_get(x, (b * N + n) * C + c);
                    sq += xv * tg_tensor_get(Wq, f * C + c);
                    sk += xv * tg_tensor_get(Wkv, f * C + c);
                    sv += xv * tg_tensor_get(Wkv, (C + f) * C + c);
                }
                q[n * C + f] = sq, k[n * C + f] = sk, v[n * C + f] = sv;
            }
        memset(o, 0, sizeof o);
        for (int64_t hh = 0; hh < H; hh++)
            for (int64_t i = 0; i < N; i++) {
                double mx = -INFINITY, den = 0;
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t d = 0; d < dh; d++)
                        s += q[i * C + hh * dh + d] * scale * k[j * C + hh * dh + d];
                    int64_t idx = (i / ww - j / ww + wh - 1) * (2 * ww - 1) + (i % ww - j % ww +
                                                                              ww - 1);
                    s += tg_tensor_get(T, idx * H + hh);
                    if (mask) s += tg_tensor_get(mask, ((b % mask->shape[0]) * N + i) * N + j);
                    S[j] = s;
                    mx = fmax(mx, s);
                }
                for (int64_t j = 0; j < N; j++) den += exp(S[j] - mx);
                for (int64_t j = 0; j < N; j++) {
                    double r = S[j] > 0 ? S[j] : 0;
                    double a = w1 * exp(S[j] - mx) / den + w2 * r * r;
                    A[((b * H + hh) * N + i) * N + j] = a;
                    for (int64_t d = 0; d < dh; d++) o[i * C + hh * dh + d] += a * v[j * C + hh * dh + d];
                }
            }
        for (int64_t n = 0; n < N; n++)
            for (int64_t f = 0; f < C; f++) {
                double s = tg_tensor_get(bp, f);
                for (int64_t c = 0; c < C; c++) s += o[n * C + c] * tg_tensor_get(Wp, f * C + c);
                y[(b * N + n) * C + f] = s;
            }
    }
}

/* Run the registry layer in F64 with w set to (w0, w1) and compare A and y with
 * the loop reference. */
static void paper_vs_reference(const char *const *sets, int n_sets, double w0, double w1,
                               int64_t wh, int64_t ww, int64_t H, double scale)
{
    tg_config *cfg = tg_config_new();
    for (int i = 0; i < n_sets; i++) cr_assert_eq(tg_config_set(cfg, sets[i]), TG_OK);
    tg_rng rng;
    tg_rng_seed(&rng, 11);
    tg_params *ps = tg_params_new(TG_F64);
    tg_layer *l = tg_layer_new("assa_paper", cfg, ps, "", &rng);
    cr_assert_not_null(l, "%s", tg_last_error());
    for (int i = 0; i < tg_params_count(ps); i++) {      /* bigger scores: relu matters */
        tg_tensor *p = &tg_params_at(ps, i)->value;
        for (int64_t j = 0; j < p->numel; j++)
            tg_tensor_set(p, j, tg_tensor_get(p, j) + 0.3 * tg_rng_normal(&rng));
    }
    tg_tensor *w = &tg_params_find(ps, "w")->value;
    tg_tensor_set(w, 0, w0);
    tg_tensor_set(w, 1, w1);
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *in[2] = {NULL, NULL};
    for (int i = 0; i < tg_layer_input_count(l); i++) {
        const tg_layer_input *s = tg_layer_input_at(l, i);
        in[i] = tg_input(g, s->name, TG_F64, s->rank, s->shape);
        tg_tensor *t = (tg_tensor *)tg_node_value(in[i]);
        for (int64_t j = 0; j < t->numel; j++)
            tg_tensor_set(t, j, i ? (tg_rng_uniform(&rng) < 0.3 ? -100 : 0) : tg_rng_normal(&rng));
    }
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(l, g, in, &out), TG_OK, "%s", tg_last_error());
    tg_node_keep(out.attn);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    const tg_tensor *A = tg_node_value(out.attn), *y = tg_node_value(out.y);
    tg_tensor *Ar = tg_tensor_new(TG_F64, A->rank, A->shape);
    tg_tensor *yr = tg_tensor_new(TG_F64, y->rank, y->shape);
    paper_reference(ps, tg_node_value(in[0]), in[1] ? tg_node_value(in[1]) : NULL, wh, ww, H,
                    scale, Ar->data, yr->data);
    tt_assert_close(A, Ar, 1e-12, 1e-10, "A");
    tt_assert_close(y, yr, 1e-12, 1e-10, "y");
    tg_tensor_free(Ar);
    tg_tensor_free(yr);
    tg_graph_free(g);
    tg_layer_free(l);
    tg_params_free(ps);
    tg_config_free(cfg);
}

Test(assa_paper, matches_a_loop_reference)
{
    paper_vs_reference((const char *[]){"B_=4", "dim=6", "win_size=[3, 2]", "num_heads=3",
                                        "mask_windows=2"},
                       5, 0.4, -0.3, 3, 2, 3, 1 / sqrt(2.0));
    /* qk_scale given, qkv_bias off, an int window (3, 3), no mask */
    paper_vs_reference((const char *[]){"B_=2", "dim=4", "win_size=3", "num_heads=2",
                                        "qkv_bias=false", "qk_scale=0.9"},
                       6, -0.2, 0.5, 3, 3, 2, 0.9);
}

/* w = [+30, -30] leaves only the dense softmax branch (w2 = e^-60), rows sum
 * to 1; w = [-30, +30] only the ReLU^2 branch: A = relu(S)^2, so S <= 0
 * gives (almost: e^-60 softmax) 0. Both checked against softmax(S) and
 * relu(S)^2 from the loop reference with the exact limit weights 1/0. */
Test(assa_paper, softmax_only_and_relu2_only_limits)
{
    const char *sets[] = {"B_=4", "dim=6", "win_size=[2, 3]", "num_heads=2", "mask_windows=2"};
    tg_config *cfg = tg_config_new();
    for (int i = 0; i < 5; i++) tg_config_set(cfg, sets[i]);
    for (int lim = 0; lim < 2; lim++) {
        tg_rng rng;
        tg_rng_seed(&rng, 21);
        tg_params *ps = tg_params_new(TG_F64), *ref = tg_params_new(TG_F64);
        tg_layer *l = tg_layer_new("assa_paper", cfg, ps, "", &rng);
        tg_layer *lr = tg_layer_new("assa_paper", cfg, ref, "", NULL);
        cr_assert(l && lr, "%s", tg_last_error());
        for (int i = 0; i < tg_params_count(ps); i++) {
            tg_tensor *p = &tg_params_at(ps, i)->value;
            for (int64_t j = 0; j < p->numel; j++)
                tg_tensor_set(p, j, tg_tensor_get(p, j) + 0.3 * tg_rng_normal(&rng));
            tg_tensor_copy(&tg_params_at(ref, i)->value, p);
        }
        /* the layer gets w = +-30; the reference the exact limit (w1, w2) = (1, 0) / (0, 1) */
        tg_tensor *w = &tg_params_find(ps, "w")->value, *wr = &tg_params_find(ref, "w")->value;
        tg_tensor_set(w, 0, lim ? -30 : 30);
        tg_tensor_set(w, 1, lim ? 30 : -30);
        tg_tensor_set(wr, 0, lim ? -INFINITY : 0);
        tg_tensor_set(wr, 1, lim ? 0 : -INFINITY);
        tg_graph *g = tg_graph_new(TG_F64);
        tg_node *in[2];
        in[0] = tg_input(g, "x", TG_F64, 3, (int64_t[]){4, 6, 6});
        in[1] = tg_input(g, "mask", TG_F64, 3, (int64_t[]){2, 6, 6});
        tt_randn((tg_tensor *)tg_node_value(in[0]), 22);
        tg_tensor *m = (tg_tensor *)tg_node_value(in[1]);
        for (int64_t j = 0; j < m->numel; j++) tg_tensor_set(m, j, j % 7 == 3 ? -100 : 0);
        tg_layer_outputs out;
        cr_assert_eq(tg_layer_build(l, g, in, &out), TG_OK, "%s", tg_last_error());
        tg_node_keep(out.attn);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        const tg_tensor *A = tg_node_value(out.attn);
        tg_tensor *Ar = tg_tensor_new(TG_F64, 4, A->shape), *yr = tg_tensor_new(TG_F64, 3,
                                                                           (int64_t[]){4, 6, 6});
        paper_reference(ref, tg_node_value(in[0]), m, 2, 3, 2, 1 / sqrt(3.0), Ar->data, yr->data);
        tt_assert_close(A, Ar, 1e-15, 1e-12, lim ? "relu^2 limit" : "softmax limit");
        int64_t zeros = 0, tiny = 0;
        for (int64_t r = 0; r < A->numel / 6; r++) {
            double sum = 0;
            for (int64_t j = 0; j < 6; j++) {
                sum += tg_tensor_get(A, r * 6 + j);
                zeros += tg_tensor_get(A, r * 6 + j) == 0;
                tiny += tg_tensor_get(A, r * 6 + j) < 1e-20;
            }
            if (!lim) cr_assert_float_eq(sum, 1.0, 1e-12, "row %lld sums to %.17g",
                                         (long long)r, sum);
        }
        /* ReLU^2 limit: masked (-100) and negative scores leave only e^-60 * softmax */
        if (lim) cr_assert_gt(tiny, A->numel / 5, "%lld near-zeros", (long long)tiny);
        cr_assert_eq(zeros, 0, "the other branch's weight is e^-60, not 0");
        tg_tensor_free(Ar);
        tg_tensor_free(yr);
        tg_graph_free(g);
        tg_layer_free(l);
        tg_layer_free(lr);
        tg_params_free(ps);
        tg_params_free(ref);
    }
    tg_config_free(cfg);
}

Test(assa_paper, relative_position_index_and_keys)
{
    tg_tensor *t = tg_relative_position_index(2, 3);
    cr_assert(t && t->dtype == TG_I64 && t->shape[0] == 6 && t->shape[1] == 6);
    const int64_t *idx = t->data;
    cr_assert_eq(idx[0], 7);                 /* LAYERS.md: idx(0,0) = 7, max 14 */
    int64_t mx = 0;
    for (int i = 0; i < 36; i++) mx = idx[i] > mx ? idx[i] : mx;
    cr_assert_eq(mx, 14);
    cr_assert_eq(idx[0 * 6 + 5], (0 - 1 + 1) * 5 + (0 - 2 + 2));   /* (0,0) vs (1,2) */
    tg_tensor_free(t);
    cr_assert_null(tg_relative_position_index(0, 3));

    /* state_dict keys and shapes under a prefix; w starts at ones */
    tg_params *ps = tg_params_new(TG_F32);
    tg_assa_paper l;
    tg_assa_paper_config c = tg_assa_paper_defaults(8, 2, 3, 2);
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    cr_assert_eq(tg_assa_paper_init(&l, &c, ps, "dec.attn", "attn", &rng), TG_OK, "%s",
                 tg_last_error());
    const char *keys[] = {"dec.attn.relative_position_bias_table", "dec.attn.w",
                          "dec.attn.qkv.to_q.weight", "dec.attn.qkv.to_q.bias",
                          "dec.attn.qkv.to_kv.weight", "dec.attn.qkv.to_kv.bias",
                          "dec.attn.proj.weight", "dec.attn.proj.bias"};
    const int64_t numel[] = {15 * 2, 2, 64, 8, 128, 16, 64, 8};
    cr_assert_eq(tg_params_count(ps), 8);
    for (int i = 0; i < 8; i++) {
        cr_assert_str_eq(tg_params_at(ps, i)->name, keys[i]);
        cr_assert_eq(tg_params_at(ps, i)->value.numel, numel[i], "%s", keys[i]);
    }
    cr_assert_eq(tg_params_numel(ps), 320);  /* LAYERS.md: 320 params */
    const tg_tensor *w = &tg_params_at(ps, 1)->value, *tb = &tg_params_at(ps, 0)->value;
    cr_assert(tg_tensor_get(w, 0) == 1.0 && tg_tensor_get(w, 1) == 1.0);
    double ss = 0;
    for (int64_t i = 0; i < tb->numel; i++) ss += tg_tensor_get(tb, i) * tg_tensor_get(tb, i);
    cr_assert(ss > 0 && sqrt(ss / (double)tb->numel) < 0.05, "table std %g",
              sqrt(ss / (double)tb->numel));
    tg_params_free(ps);
}

/* attn_drop = 1 in training mode zeroes A, so y is proj's bias on every token
 * (and in eval mode the same graph is the identity dropout again). */
Test(assa_paper, attn_drop_follows_training_mode)
{
    tg_config *cfg = tg_config_new();
    tg_config_set(cfg, "attn_drop=1");
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    tg_params *ps = tg_params_new(TG_F32);
    tg_layer *l = tg_layer_new("assa_paper", cfg, ps, "", &rng);
    cr_assert_not_null(l, "%s", tg_last_error());
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){3, 6, 8});
    tt_randn((tg_tensor *)tg_node_value(x), 4);
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(l, g, &x, &out), TG_OK, "%s", tg_last_error());
    tg_node_keep(out.attn);
    tg_graph_set_training(g, true);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    const tg_tensor *y = tg_node_value(out.y), *b = &tg_params_find(ps, "proj.bias")->value;
    for (int64_t i = 0; i < y->numel; i++)
        cr_assert_eq(tg_tensor_get(y, i), tg_tensor_get(b, i % 8));
    tg_graph_set_training(g, false);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    double s = 0;
    for (int64_t i = 0; i < tg_node_value(out.attn)->numel; i++)
        s += tg_tensor_get(tg_node_value(out.attn), i);
    cr_assert_gt(s, 0.5 * 3 * 2 * 6);     /* the softmax half alone sums to 0.5 per row */
    tg_graph_free(g);
    tg_layer_free(l);
    tg_params_free(ps);
    tg_config_free(cfg);
}

Test(assa_paper, bad_configs)
{
    tt_assert_layer_rejects("assa_paper", (const char *[]){"B_=5", "mask_windows=2"}, 2,
                            "assa_paper: B_ (5) must be a multiple of mask_windows (2)");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"dim=10", "num_heads=3"}, 2,
                            "assa_paper: dim (10) must be divisible by num_heads (3)");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"win_size=[2, 0]"}, 1,
                            "assa_paper: win_size must be two positive sizes (Wh, Ww) of at most "
                            "4096, got [2, 0]");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"win_size=[2, 3, 4]"}, 1,
                            "got [2, 3, 4]");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"win_size=[]"}, 1, "got []");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"win_size=-3"}, 1, "got [-3]");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"mask_windows=-1"}, 1,
                            "mask_windows: -1 is out of range [0, inf)");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"num_heads=0"}, 1,
                            "num_heads: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"B_=0"}, 1,
                            "B_: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"proj_drop=2"}, 1,
                            "proj_drop: 2 is out of range [0, 1]");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"qk_scale=x"}, 1, "qk_scale");
}

/* The typed builder checks its inputs' shapes: N against the window, the
 * width, the mask's shape and B_ against the mask's windows. */
Test(assa_paper, builder_rejects_bad_inputs)
{
    struct { int64_t x[3], m[3]; const char *needle; } rows[] = {
        {{3, 5, 8}, {0}, "attn: x has N = 5 tokens, but a (2, 3) window holds Wh*Ww = 6"},
        {{3, 6, 7}, {0}, "attn: x must be [B_, N, dim=8], got [3, 6, 7]"},
        {{6, 6, 8}, {4, 6, 6}, "attn: B_ (6) must be a multiple of the mask's windows nW (4)"},
        {{6, 6, 8}, {2, 6, 5}, "attn: mask must be [nW, N=6, N=6], got [2, 6, 5]"},
    };
    tg_params *ps = tg_params_new(TG_F32);
    tg_assa_paper l;
    tg_assa_paper_config c = tg_assa_paper_defaults(8, 2, 3, 2);
    cr_assert_eq(tg_assa_paper_init(&l, &c, ps, "", "attn", NULL), TG_OK);
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 3, rows[i].x);
        tg_node *m = rows[i].m[0] ? tg_input(g, "mask", TG_F32, 3, rows[i].m) : NULL;
        cr_assert_null(tg_assa_paper_build(g, &l, x, m, NULL));
        tt_assert_graph_error(g, rows[i].needle);
        tg_graph_free(g);
    }
    tg_params_free(ps);
}
