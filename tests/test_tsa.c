/*
 * test_tsa.c - TwoStageAttentionLayer and SegMerging against the PyTorch
 * oracle (tests/fixtures/gen_oracle.sh), F64 gradchecks (eval and training
 * mode), the seed example, the seven dropouts in their places, SegMerging's
 * padding, parameter keys in state_dict order, and bad configs / inputs.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "layer_case.h"
#include "op.h"

#define ATOL 1e-5
#define RTOL 1e-4

/* The parameter store lists exactly the case's state_dict keys minus its
 * buffers, in the same order. */
static void assert_state_dict_order(const char *name, tg_params *ps)
{
    char path[512];
    void *text;
    size_t len;
    tg__json_doc doc = {0};
    snprintf(path, sizeof path, "%s/oracle/%s/case.json", TT_FIXTURES, name);
    cr_assert_eq(tg_read_file(path, 0, &text, &len), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg__json_parse(text, len, path, NULL, &doc), TG_OK, "%s", tg_last_error());
    const tg__json *order = tg__json_get(doc.root, "state_dict_order");
    const tg__json *buffers = tg__json_get(doc.root, "buffers");
    cr_assert(order && order->kind == TG__JSON_ARRAY && buffers);
    int at = 0;
    for (int i = 0; i < order->n; i++) {
        const char *key = tg__json_at(order, i)->str;
        bool is_buffer = false;
        for (int k = 0; k < buffers->n; k++)
            is_buffer |= !strcmp(tg__json_at(tg__json_at(buffers, k), 0)->str, key);
        if (is_buffer) {
            cr_assert_null(tg_params_find(ps, key), "%s: buffer %s is a parameter", name, key);
            continue;
        }
        cr_assert_lt(at, tg_params_count(ps), "%s: store has %d parameters, case has more (%s)",
                     name, tg_params_count(ps), key);
        cr_assert_str_eq(tg_params_at(ps, at)->name, key, "%s: parameter %d", name, at);
        at++;
    }
    cr_assert_eq(at, tg_params_count(ps), "%s: %d keys in the case, %d parameters", name, at,
                 tg_params_count(ps));
    tg__json_free(&doc);
    tg_free(text);
}

static void assert_keys_of_case(const char *name)
{
    char dir[128];
    snprintf(dir, sizeof dir, "oracle/%s", name);
    tt_layer t = tt_case_layer(dir, &(tt_layer_opts){.no_graph = true});
    assert_state_dict_order(name, t.ps);
    tt_layer_free(&t);
}

/* The registry layer, parameters from seed, its input x ~ N(0, 1) from seed + 100. */
static tt_layer build(const char *layer, const char *const *sets, int n, tg_dtype dt,
                      uint64_t seed, bool training)
{
    return tt_layer_new(layer, sets, n, &(tt_layer_opts){.dtype = dt, .init = true, .seed = seed,
                                                         .randn_seed = seed + 100,
                                                         .training = training});
}

/* ------------------------------------------------------------------- TSA */

Test(tsa, oracle_seed_toy) { tt_run_oracle_case("tsa", ATOL, RTOL); }
Test(tsa, oracle_perturbed) { tt_run_oracle_case("tsa_perturbed", ATOL, RTOL); }
Test(tsa, oracle_odd) { tt_run_oracle_case("x_tsa_odd", ATOL, RTOL); }

Test(tsa, keys_in_state_dict_order)
{
    assert_keys_of_case("tsa");
    assert_keys_of_case("x_tsa_odd");
}

Test(tsa, gradcheck)
{
    tt_layer_gradcheck("tsa", NULL, 0, 1, 0);
    tt_layer_gradcheck("tsa", (const char *[]){"b=1", "ts_d=4", "seg_num=3", "d_model=6",
                                               "factor=3", "n_heads=3", "d_ff=10"}, 7, 2, 0);
}

/* Training mode: gradcheck resets the graph RNG before every evaluation, so
 * the seven dropout masks are fixed and their backward is checked in place. */
Test(tsa, gradcheck_training_mode)
{
    tt_layer b = build("tsa", (const char *[]){"dropout=0.3", "attn_dropout=0.2"}, 2, TG_F64, 3,
                       true);
    tt_gradcheck(b.g, b.out.y, 3);
    tt_layer_free(&b);
}

/* The seed example: x (2, 3, 5, 8), factor 2 -> y (2, 3, 5, 8); with the
 * default norm4 (gain 1, bias 0) every token of y is layer-normed: mean 0,
 * biased variance v / (v + eps) ~ 1. In training mode too (norm4 is last). */
Test(tsa, seed_example_output_is_layer_normed)
{
    for (int training = 0; training < 2; training++) {
        tt_layer b = build("tsa", NULL, 0, TG_F32, 7, training);
        cr_assert_eq(tg_graph_forward(b.g), TG_OK, "%s", tg_last_error());
        const tg_tensor *y = tg_node_value(b.out.y);
        cr_assert(y->rank == 4 && y->shape[0] == 2 && y->shape[1] == 3 && y->shape[2] == 5 &&
                  y->shape[3] == 8);
        for (int64_t t = 0; t < y->numel / 8; t++) {
            double mean = 0, var = 0;
            for (int k = 0; k < 8; k++) mean += tg_tensor_get(y, t * 8 + k) / 8;
            for (int k = 0; k < 8; k++) var += pow(tg_tensor_get(y, t * 8 + k) - mean, 2) / 8;
            cr_assert(fabs(mean) < 1e-6, "token %lld: mean %g", (long long)t, mean);
            cr_assert(fabs(var - 1) < 1e-3, "token %lld: variance %g", (long long)t, var);
        }
        tt_layer_free(&b);
    }
}

static const char *scope_of(const tg_node *n)
{
    return tg_graph_scope_path(n->graph, n->scope);
}

/* Seven dropouts: p=attn_dropout on A inside the three FullAttentions, and
 * p=dropout on time_enc, MLP1's output, dim_receive and MLP2's output. */
Test(tsa, seven_dropouts_in_their_places)
{
    tt_layer b = build("tsa", (const char *[]){"dropout=0.25", "attn_dropout=0.125"}, 2, TG_F32,
                       1, false);
    const char *attn_scopes[3] = {"tsa.time_attention.inner_attention",
                                  "tsa.dim_sender.inner_attention",
                                  "tsa.dim_receiver.inner_attention"};
    const char *residual_inputs[4] = {"tsa.time_attention.out_projection", "tsa.MLP1.2",
                                      "tsa.dim_receiver.out_projection", "tsa.MLP2.2"};
    int n_attn = 0, n_res = 0;
    for (int i = 0; i < tg_graph_node_count(b.g); i++) {
        const tg_node *n = tg_graph_node(b.g, i);
        if (!n->op || (strcmp(n->op->name, "dropout") && strcmp(n->op->name, "sdpa"))) continue;
        char p[64];
        n->op->describe(n, p, sizeof p);
        if (!strcmp(n->op->name, "dropout")) {
            cr_assert_str_eq(scope_of(n), "tsa");
            cr_assert_lt(n_res, 4);
            cr_assert_str_eq(scope_of(n->in[0]), residual_inputs[n_res]);
            cr_assert_str_eq(p, "p=0.25");
            n_res++;
        } else {
            cr_assert_lt(n_attn, 3);
            /* the attention weights' dropout is inside the fused attention op */
            cr_assert_str_eq(scope_of(n), attn_scopes[n_attn]);
            cr_assert(strstr(p, " p=0.125"), "%s", p);
            n_attn++;
        }
    }
    cr_assert_eq(n_attn, 3);
    cr_assert_eq(n_res, 4);
    tt_layer_free(&b);
}

/* attn_dropout defaults to dropout (TSL passes configs.dropout to FullAttention). */
Test(tsa, attn_dropout_defaults_to_dropout)
{
    tt_layer b = build("tsa", (const char *[]){"dropout=0.375"}, 1, TG_F32, 1, false);
    int n = 0;
    for (int i = 0; i < tg_graph_node_count(b.g); i++) {
        const tg_node *nd = tg_graph_node(b.g, i);
        if (!nd->op || (strcmp(nd->op->name, "dropout") && strcmp(nd->op->name, "sdpa")))
            continue;
        char p[64];
        nd->op->describe(nd, p, sizeof p);
        cr_assert(strstr(p, "p=0.375"), "%s", p);   /* dropout: "p=..."; sdpa: "scale=... p=..." */
        n++;
    }
    cr_assert_eq(n, 7);
    tt_layer_free(&b);
}

/* Training mode with p = 0 equals eval; with p > 0 it differs, and the same
 * graph seed gives the same output. */
Test(tsa, training_mode_dropout)
{
    tt_layer e = build("tsa", (const char *[]){"dropout=0.5"}, 1, TG_F32, 4, false);
    tt_layer t = build("tsa", (const char *[]){"dropout=0.5"}, 1, TG_F32, 4, true);
    tt_layer z = build("tsa", (const char *[]){"dropout=0"}, 1, TG_F32, 4, true);
    cr_assert_eq(tg_graph_forward(e.g), TG_OK);
    cr_assert_eq(tg_graph_forward(z.g), TG_OK);
    tt_assert_close(tg_node_value(z.out.y), tg_node_value(e.out.y), 0, 0, "train p=0 vs eval");
    tg_graph_seed(t.g, 11);
    cr_assert_eq(tg_graph_forward(t.g), TG_OK);
    tg_tensor *first = tg_tensor_clone(tg_node_value(t.out.y));
    double diff = 0;
    for (int64_t i = 0; i < first->numel; i++)
        diff = fmax(diff,
                    fabs(tg_tensor_get(first, i) - tg_tensor_get(tg_node_value(e.out.y), i)));
    cr_assert_gt(diff, 1e-3, "dropout 0.5 in training changed nothing");
    tg_graph_seed(t.g, 11);
    cr_assert_eq(tg_graph_forward(t.g), TG_OK);
    tt_assert_close(tg_node_value(t.out.y), first, 0, 0, "same seed, same masks");
    tg_tensor_free(first);
    tt_layer_free(&e);
    tt_layer_free(&t);
    tt_layer_free(&z);
}

/* The router is repeated over the batch: its gradient is the sum over the b
 * copies, so doubling the batch with the same sample doubles it. */
Test(tsa, router_gradient_sums_over_the_batch)
{
    double g1[2 * 5 * 8];
    for (int twice = 0; twice < 2; twice++) {
        tt_layer b = build("tsa", (const char *[]){twice ? "b=2" : "b=1", "ts_d=3"}, 2, TG_F64,
                           5, false);
        tg_tensor *x = (tg_tensor *)tg_node_value(b.in[0]);
        tt_randn(x, 42);
        if (twice) memcpy((double *)x->data + x->numel / 2, x->data, sizeof(double) * (size_t)(x->numel / 2));
        cr_assert_eq(tg_graph_forward(b.g), TG_OK);
        const tg_tensor *y = tg_node_value(b.out.y);
        tg_tensor *dy = tg_tensor_new(TG_F64, y->rank, y->shape);
        tt_randn(dy, 43);
        if (twice) memcpy((double *)dy->data + dy->numel / 2, dy->data, sizeof(double) * (size_t)(dy->numel / 2));
        cr_assert_eq(tg_graph_backward(b.g, b.out.y, dy), TG_OK);
        const tg_tensor *gr = &tg_params_find(b.ps, "router")->grad;
        cr_assert_eq(gr->numel, 5 * 2 * 8);
        for (int64_t i = 0; i < gr->numel; i++) {
            if (!twice) g1[i] = tg_tensor_get(gr, i);
            else cr_assert(fabs(tg_tensor_get(gr, i) - 2 * g1[i]) <= 1e-12 + 1e-9 * fabs(g1[i]),
                           "router grad %lld: %g vs 2 * %g", (long long)i, tg_tensor_get(gr, i), g1[i]);
        }
        tg_tensor_free(dy);
        tt_layer_free(&b);
    }
}

Test(tsa, input_seg_num_must_match_the_router)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_tsa_config c = tg_tsa_defaults();
    tg_tsa l;
    cr_assert_eq(tg_tsa_init(&l, &c, ps, "", "tsa", NULL), TG_OK, "%s", tg_last_error());
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 4, (int64_t[]){2, 3, 4, 8});
    cr_assert_null(tg_tsa_build(g, &l, x));
    tt_assert_graph_error(g, "x has seg_num 4, but the router was built for seg_num 5");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 4, (int64_t[]){2, 3, 5, 6});
    cr_assert_null(tg_tsa_build(g, &l, x));
    tt_assert_graph_error(g, "with d_model 6, but the layer has d_model 8");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 3, (int64_t[]){6, 5, 8});
    cr_assert_null(tg_tsa_build(g, &l, x));
    tt_assert_graph_error(g, "x must be 4-d [b, ts_d, seg_num, d_model], got 3-d");
    tg_graph_free(g);

    /* ts_d and b are free */
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 4, (int64_t[]){3, 7, 5, 8});
    cr_assert_not_null(tg_tsa_build(g, &l, x), "%s", tg_graph_error(g));
    tg_graph_free(g);
    tg_params_free(ps);
}

Test(tsa, bad_configs)
{
    tt_assert_layer_rejects("tsa", (const char *[]){"n_heads=0"}, 1,
                            "n_heads: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("tsa", (const char *[]){"d_model=2", "n_heads=4"}, 2,
                            "d_model // n_heads is 0 (d_model 2, n_heads 4)");
    tt_assert_layer_rejects("tsa", (const char *[]){"d_model=0"}, 1,
                            "d_model: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("tsa", (const char *[]){"seg_num=0"}, 1,
                            "seg_num: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("tsa", (const char *[]){"factor=0"}, 1,
                            "factor: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("tsa", (const char *[]){"d_ff=-2"}, 1,
                            "d_ff: -2 is out of range [1, inf)");
    tt_assert_layer_rejects("tsa", (const char *[]){"dropout=1.5"}, 1,
                            "dropout: 1.5 is out of range [0, 1]");
    tt_assert_layer_rejects("tsa", (const char *[]){"attn_dropout=2"}, 1,
                            "attn_dropout: 2 is out of range [-inf, 1]");
    tt_assert_layer_rejects("tsa", (const char *[]){"b=0"}, 1, "b: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("tsa", (const char *[]){"heads=2"}, 1, "unknown key 'heads'");
}

/* ------------------------------------------------------------ SegMerging */

Test(seg_merging, oracle_w2) { tt_run_oracle_case("seg_merging", ATOL, RTOL); }
Test(seg_merging, oracle_w3) { tt_run_oracle_case("x_seg_merging_w3", ATOL, RTOL); }

Test(seg_merging, keys_in_state_dict_order) { assert_keys_of_case("seg_merging"); }

Test(seg_merging, gradcheck)
{
    tt_layer_gradcheck("seg_merging", NULL, 0, 1, 0);
    tt_layer_gradcheck("seg_merging", (const char *[]){"seg_num=5", "win_size=4", "d_model=3"}, 3,
                       2, 0);
    tt_layer_gradcheck("seg_merging", (const char *[]){"seg_num=6", "win_size=3", "d_model=4"}, 3,
                       3, 0);
    tt_layer_gradcheck("seg_merging", (const char *[]){"win_size=1"}, 1, 4, 0);
}

/* seg 5, win 4: pad 3 repeats segments 2, 3, 4. The same layer on the padded
 * input (seg 8, no padding) gives the same y, and dx is the padded input's
 * gradient with segments 5..7 added back into 2..4. */
Test(seg_merging, padding_repeats_the_last_segments_and_their_gradient_flows_back)
{
    const int64_t B = 2, T = 3, S = 5, W = 4, D = 3, SP = 8;
    tg_params *ps = tg_params_new(TG_F64);
    tg_rng rng;
    tg_rng_seed(&rng, 9);
    tg_seg_merging l;
    cr_assert_eq(tg_seg_merging_init(&l, D, W, ps, "", "merge_layer", &rng), TG_OK);
    cr_assert_eq(tg_seg_merging_pad(S, W), 3);
    for (int i = 0; i < tg_params_count(ps); i++) {   /* gains not exactly 1 */
        tg_tensor *p = &tg_params_at(ps, i)->value;
        for (int64_t k = 0; k < p->numel; k++)
            tg_tensor_set(p, k, tg_tensor_get(p, k) + 0.1 * tg_rng_normal(&rng));
    }
    tg_graph *g = tg_graph_new(TG_F64), *gp = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 4, (int64_t[]){B, T, S, D});
    tg_node *xp = tg_input(gp, "x", TG_F64, 4, (int64_t[]){B, T, SP, D});
    tg_node_set_requires_grad(x, true);
    tg_node_set_requires_grad(xp, true);
    tg_tensor *xv = (tg_tensor *)tg_node_value(x), *xpv = (tg_tensor *)tg_node_value(xp);
    tt_randn(xv, 1);
    for (int64_t bt = 0; bt < B * T; bt++)
        for (int64_t s = 0; s < SP; s++)
            for (int64_t k = 0; k < D; k++) {
                int64_t src = s < S ? s : s - W + 1;   /* 5, 6, 7 <- 2, 3, 4 */
                tg_tensor_set(xpv, (bt * SP + s) * D + k, tg_tensor_get(xv, (bt * S + src) * D + k));
            }
    tg_node *y = tg_seg_merging_build(g, &l, x), *yp = tg_seg_merging_build(gp, &l, xp);
    cr_assert(y && yp, "%s %s", tg_graph_error(g), tg_graph_error(gp));
    const tg_tensor *yv = tg_node_value(y);
    cr_assert(yv->rank == 4 && yv->shape[2] == 2 && yv->shape[3] == D);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_forward(gp), TG_OK);
    tt_assert_close(tg_node_value(y), tg_node_value(yp), 1e-15, 0, "y vs y of the padded input");
    tg_tensor *dy = tg_tensor_new(TG_F64, 4, yv->shape);
    tt_randn(dy, 2);
    cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK);
    cr_assert_eq(tg_graph_backward(gp, yp, dy), TG_OK);
    const tg_tensor *dx = tg_node_grad(x), *dxp = tg_node_grad(xp);
    for (int64_t bt = 0; bt < B * T; bt++)
        for (int64_t s = 0; s < S; s++)
            for (int64_t k = 0; k < D; k++) {
                double want = tg_tensor_get(dxp, (bt * SP + s) * D + k);
                if (s >= 2) want += tg_tensor_get(dxp, (bt * SP + s + W - 1) * D + k);
                double got = tg_tensor_get(dx, (bt * S + s) * D + k);
                cr_assert(fabs(got - want) <= 1e-12, "dx[%lld, %lld, %lld] = %g, expected %g",
                          (long long)bt, (long long)s, (long long)k, got, want);
            }
    tg_tensor_free(dy);
    tg_graph_free(g);
    tg_graph_free(gp);
    tg_params_free(ps);
}

Test(seg_merging, bad_configs_and_inputs)
{
    tt_assert_layer_rejects("seg_merging", (const char *[]){"win_size=0"}, 1,
                            "win_size: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("seg_merging", (const char *[]){"seg_num=1", "win_size=3"}, 2,
                            "seg_num 1 needs 2 padding segments to reach a multiple of win_size 3");
    tt_assert_layer_rejects("seg_merging", (const char *[]){"d_model=0"}, 1,
                            "d_model: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("seg_merging", (const char *[]){"seg_num=0"}, 1,
                            "seg_num: 0 is out of range [1, inf)");

    tg_params *ps = tg_params_new(TG_F32);
    tg_seg_merging l;
    cr_assert_eq(tg_seg_merging_init(&l, 8, 3, ps, "", "merge_layer", NULL), TG_OK);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 4, (int64_t[]){2, 3, 1, 8});
    cr_assert_null(tg_seg_merging_build(g, &l, x));
    tt_assert_graph_error(g, "merge_layer: seg_num 1 needs 2 padding segments");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 4, (int64_t[]){2, 3, 4, 7});
    cr_assert_null(tg_seg_merging_build(g, &l, x));
    tt_assert_graph_error(g, "with d_model 7, but the layer has d_model 8");
    tg_graph_free(g);
    tg_params_free(ps);
}
