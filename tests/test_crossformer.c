/*
 * test_crossformer.c - the Crossformer forecaster against the PyTorch oracle
 * (tests/fixtures/gen_oracle.sh), an F64 gradcheck of the whole model, the
 * sinusoidal position table against PyTorch's buffer, the paper's config in
 * training mode, train vs eval, and bad configs / inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "layer_case.h"
#include "op.h"

#define ATOL 1e-5
#define RTOL 1e-4

Test(crossformer, oracle_toy) { tt_run_oracle_case("crossformer", ATOL, RTOL); }
Test(crossformer, oracle_odd) { tt_run_oracle_case("x_crossformer_odd", ATOL, RTOL); }

/* The parameter store lists exactly the case's state_dict keys minus the pe
 * buffer, in the same order. */
static void assert_state_dict_order(const char *name)
{
    char path[512], dir[128];
    void *text;
    size_t len;
    tg__json_doc doc = {0};
    snprintf(dir, sizeof dir, "oracle/%s", name);
    tt_layer t = tt_case_layer(dir, &(tt_layer_opts){.no_graph = true});
    tg_params *ps = t.ps;
    snprintf(path, sizeof path, "%s/%s/case.json", TT_FIXTURES, dir);
    cr_assert_eq(tg_read_file(path, 0, &text, &len), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg__json_parse(text, len, path, NULL, &doc), TG_OK, "%s", tg_last_error());
    const tg__json *order = tg__json_get(doc.root, "state_dict_order");
    cr_assert(order && order->kind == TG__JSON_ARRAY);
    int at = 0;
    for (int i = 0; i < order->n; i++) {
        const char *key = tg__json_at(order, i)->str;
        if (!strcmp(key, "enc_value_embedding.position_embedding.pe")) {
            cr_assert_null(tg_params_find(ps, key), "the pe buffer is a parameter");
            continue;
        }
        cr_assert_lt(at, tg_params_count(ps), "%s: more keys in the case (%s)", name, key);
        cr_assert_str_eq(tg_params_at(ps, at)->name, key, "%s: parameter %d", name, at);
        at++;
    }
    cr_assert_eq(at, tg_params_count(ps));
    tg__json_free(&doc);
    tg_free(text);
    tt_layer_free(&t);
}

Test(crossformer, keys_in_state_dict_order)
{
    assert_state_dict_order("crossformer");
    assert_state_dict_order("x_crossformer_odd");
}

/* PyTorch computes the table in float32. With its scalar kernels
 * (ATEN_CPU_CAPABILITY=default: exp/sin/cos from libm) the C table is the
 * same bits (tests/fixtures/gen_pe.py), at every position up to 5000. */
Test(crossformer, position_embedding_bit_equal_to_pytorch_scalar_path)
{
    tg_tensor *rows = tt_load("pe", "rows.npy");
    const int64_t ds[] = {12, 100, 256};
    for (int k = 0; k < 3; k++) {
        const int64_t d = ds[k];
        char file[32];
        snprintf(file, sizeof file, "pe_d%lld.npy", (long long)d);
        tg_tensor *want = tt_load("pe", file);
        cr_assert(want->rank == 2 && want->shape[0] == rows->numel && want->shape[1] == d);
        float *got = malloc(sizeof(float) * 5000 * (size_t)d);
        cr_assert_not_null(got);
        tg_positional_embedding_fill(got, 5000, d);
        for (int64_t r = 0; r < rows->numel; r++) {
            const int64_t p = ((const int64_t *)rows->data)[r];
            for (int64_t j = 0; j < d; j++) {
                float w = ((const float *)want->data)[r * d + j], g = got[p * d + j];
                cr_assert(memcmp(&g, &w, sizeof g) == 0, "d_model %lld: pe[%lld, %lld] = %.9g, "
                          "PyTorch %.9g", (long long)d, (long long)p, (long long)j, g, w);
            }
        }
        free(got);
        tg_tensor_free(want);
    }
    tg_tensor_free(rows);
}

/* The oracle cases' buffers come from PyTorch's AVX2 kernels (SLEEF's 1-ulp
 * exp/sin/cos): a last-bit difference in exp grows with the position, so the
 * tables agree to 1e-6 over the first 64 positions and 1e-4 over all 5000. */
static void check_oracle_pe(const char *name, int64_t d_model)
{
    char path[512];
    tg_st_file *f;
    snprintf(path, sizeof path, "%s/oracle/%s/buffers.safetensors", TT_FIXTURES, name);
    cr_assert_eq(tg_st_load(path, &f), TG_OK, "%s", tg_last_error());
    const tg_tensor *want = tg_st_find(f, "enc_value_embedding.position_embedding.pe");
    cr_assert(want && want->dtype == TG_F32 && want->rank == 3 && want->shape[1] == 5000 &&
              want->shape[2] == d_model);
    float *got = malloc(sizeof(float) * 5000 * (size_t)d_model);
    cr_assert_not_null(got);
    tg_positional_embedding_fill(got, 5000, d_model);
    const float *w = want->data;
    for (int64_t i = 0; i < want->numel; i++) {
        const double tol = i < 64 * d_model ? 1e-6 : 1e-4;
        cr_assert(fabs(got[i] - w[i]) <= tol, "%s: pe[%lld, %lld] = %.9g, PyTorch %.9g", name,
                  (long long)(i / d_model), (long long)(i % d_model), got[i], w[i]);
    }
    cr_assert(got[0] == 0.0f && got[1] == 1.0f);
    free(got);
    tg_st_free(f);
}

Test(crossformer, position_embedding_close_to_the_oracle_buffer)
{
    check_oracle_pe("crossformer", 8);
    check_oracle_pe("x_crossformer_odd", 12);
}

/* The whole model in float64 against central differences, every element of
 * every parameter and of x. in_seg 3 makes
 * encode_blocks.1's SegMerging pad, seq_len 10 -> 12 makes the embedding
 * replicate-pad, pred_len 7 of 8 cuts the first step off. */
static void gradcheck_model(const char *const *sets, int n, uint64_t seed, bool training)
{
    /* thousands of forwards of a tiny graph: waking pool threads for each op
     * costs more than the ops (each Criterion test is its own process) */
    tg_threads_set(1);
    tg_config *cfg = tg_config_new();
    for (int i = 0; i < n; i++) cr_assert_eq(tg_config_set(cfg, sets[i]), TG_OK);
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    tg_params *ps = tg_params_new(TG_F64);
    tg_layer *l = tg_layer_new("crossformer", cfg, ps, "", &rng);
    cr_assert_not_null(l, "%s", tg_last_error());
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_tensor *p = &tg_params_at(ps, i)->value;
        for (int64_t k = 0; k < p->numel; k++)
            tg_tensor_set(p, k, tg_tensor_get(p, k) + 0.1 * tg_rng_normal(&rng));
    }
    tg_graph *g = tg_graph_new(TG_F64);
    tg_graph_set_training(g, training);
    const tg_layer_input *spec = tg_layer_input_at(l, 0);
    tg_node *x = tg_input(g, "x", TG_F64, spec->rank, spec->shape);
    tt_randn((tg_tensor *)tg_node_value(x), seed + 1);
    tg_node_set_requires_grad(x, true);
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(l, g, &x, &out), TG_OK, "%s", tg_last_error());
    int cap = tg_params_count(ps) + 1, nres = 0;
    tg_gradcheck_result *res = calloc((size_t)cap, sizeof *res);
    bool ok = false;
    tg_gradcheck_opts o = {.seed = seed, .max_per_tensor = 0};
    cr_assert_eq(tg_gradcheck(g, out.y, &o, res, cap, &nres, &ok), TG_OK, "%s", tg_last_error());
    cr_assert_eq(nres, cap, "%d of %d tensors checked", nres, cap);
    for (int i = 0; i < nres; i++) {
        cr_expect(res[i].pass, "%s: worst rel %.3g (a=%.9g n=%.9g at %lld)", res[i].name,
                  res[i].max_rel_err, res[i].worst_analytical, res[i].worst_numerical,
                  (long long)res[i].worst_index);
        cr_expect(res[i].checked > 0, "%s: nothing checked", res[i].name);
    }
    cr_assert(ok);
    free(res);
    tg_graph_free(g);
    tg_layer_free(l);
    tg_params_free(ps);
    tg_config_free(cfg);
}

Test(crossformer, gradcheck)
{
    tt_deadline(120);
    gradcheck_model((const char *[]){"B=2", "enc_in=2", "seq_len=10", "pred_len=7", "d_model=4",
                                     "n_heads=2", "d_ff=6", "e_layers=2", "factor=2",
                                     "seg_len=4", "win_size=2"}, 11, 1, false);
}

/* win_size 3 over 5 -> 2 -> 1 segments (pads of 1 twice), 3 heads. */
Test(crossformer, gradcheck_win3_training)
{
    tt_deadline(120);
    gradcheck_model((const char *[]){"B=1", "enc_in=2", "seq_len=17", "pred_len=4", "d_model=6",
                                     "n_heads=3", "d_ff=null", "e_layers=3", "factor=1",
                                     "seg_len=4", "win_size=3", "dropout=0.2"}, 12, 2, true);
}

/* A registry crossformer, parameters from seed 5, on x ~ N(0, 1) (seed 6). */
static tt_layer model_new(const char *const *sets, int n, bool training)
{
    return tt_layer_new("crossformer", sets, n,
                        &(tt_layer_opts){.init = true, .seed = 5, .randn_seed = 6,
                                         .training = training, .no_grad = true});
}

static void assert_all_finite(const tg_tensor *t, const char *what)
{
    for (int64_t i = 0; i < t->numel; i++)
        cr_assert(isfinite(tg_tensor_get(t, i)), "%s[%lld] = %g", what, (long long)i,
                  tg_tensor_get(t, i));
}

/* The original Crossformer paper's setup (main_crossformer.py: seq 168, pred
 * 24, seg_len 6, d_model 256, 4 heads, 3 layers, 10 routers, d_ff 512,
 * dropout 0.2, win 2) builds and trains: one forward + backward in training
 * mode at batch 2. */
Test(crossformer, paper_config_trains)
{
    tt_deadline(120);
    tt_layer m = model_new((const char *[]){"B=2", "enc_in=7", "seq_len=168", "pred_len=24",
                                            "seg_len=6", "d_model=256", "n_heads=4",
                                            "e_layers=3", "factor=10", "d_ff=512", "dropout=0.2",
                                            "win_size=2"},
                           12, true);
    const tg_tensor *y = tg_node_value(m.out.y);
    cr_assert(y->rank == 3 && y->shape[0] == 2 && y->shape[1] == 24 && y->shape[2] == 7);
    /* 28 segments in, 14 and 7 after merging; 4 decoder segments */
    cr_assert_not_null(tg_params_find(m.ps, "encoder.encode_blocks.2.encode_layers.0.router"));
    cr_assert_eq(tg_params_find(m.ps, "encoder.encode_blocks.0.encode_layers.0.router")->value.shape[0], 28);
    cr_assert_eq(tg_params_find(m.ps, "encoder.encode_blocks.2.encode_layers.0.router")->value.shape[0], 7);
    cr_assert_eq(tg_params_find(m.ps, "encoder.encode_blocks.2.encode_layers.0.router")->value.shape[1], 10);
    cr_assert_eq(tg_params_find(m.ps, "decoder.decode_layers.3.self_attention.router")->value.shape[0], 4);
    cr_assert_null(tg_params_find(m.ps, "decoder.decode_layers.4.linear_pred.weight"));
    cr_assert_eq(tg_graph_forward(m.g), TG_OK, "%s", tg_last_error());
    assert_all_finite(y, "y");
    tg_tensor *dy = tg_tensor_new(TG_F32, 3, y->shape);
    tt_randn(dy, 7);
    cr_assert_eq(tg_graph_backward(m.g, m.out.y, dy), TG_OK, "%s", tg_last_error());
    for (int i = 0; i < tg_params_count(m.ps); i++) {
        const tg_param *p = tg_params_at(m.ps, i);
        assert_all_finite(&p->grad, p->name);
        if (strstr(p->name, "key_projection.bias")) continue;   /* softmax-invariant: ~0 */
        double s = 0;
        for (int64_t k = 0; k < p->grad.numel; k++) s += fabs(tg_tensor_get(&p->grad, k));
        cr_assert_gt(s, 0, "%s has no gradient", p->name);
    }
    tg_tensor_free(dy);
    tt_layer_free(&m);
}

/* Dropout is active in training mode only: p = 0 training equals eval, p > 0
 * differs, the same graph seed repeats the masks. */
Test(crossformer, training_mode_dropout)
{
    tt_layer e = model_new((const char *[]){"dropout=0.3"}, 1, false);
    tt_layer t = model_new((const char *[]){"dropout=0.3"}, 1, true);
    tt_layer z = model_new((const char *[]){"dropout=0"}, 1, true);
    tt_layer ez = model_new((const char *[]){"dropout=0"}, 1, false);
    cr_assert_eq(tg_graph_forward(e.g), TG_OK);
    cr_assert_eq(tg_graph_forward(z.g), TG_OK);
    cr_assert_eq(tg_graph_forward(ez.g), TG_OK);
    tt_assert_close(tg_node_value(z.out.y), tg_node_value(ez.out.y), 0, 0, "train p=0 vs eval");
    tg_graph_seed(t.g, 3);
    cr_assert_eq(tg_graph_forward(t.g), TG_OK);
    tg_tensor *first = tg_tensor_clone(tg_node_value(t.out.y));
    double diff = 0;
    for (int64_t i = 0; i < first->numel; i++)
        diff = fmax(diff,
                    fabs(tg_tensor_get(first, i) - tg_tensor_get(tg_node_value(e.out.y), i)));
    cr_assert_gt(diff, 1e-3, "dropout 0.3 in training changed nothing");
    tg_graph_seed(t.g, 3);
    cr_assert_eq(tg_graph_forward(t.g), TG_OK);
    tt_assert_close(tg_node_value(t.out.y), first, 0, 0, "same seed, same masks");
    /* eval mode on the same graph is deterministic and equals the eval model */
    tg_graph_set_training(t.g, false);
    cr_assert_eq(tg_graph_forward(t.g), TG_OK);
    tt_assert_close(tg_node_value(t.out.y), tg_node_value(e.out.y), 0, 0, "eval after training");
    tg_tensor_free(first);
    tt_layer_free(&e);
    tt_layer_free(&t);
    tt_layer_free(&z);
    tt_layer_free(&ez);
}

/* Every dropout of TSL's model, with p = dropout: 7 per TSA (e_layers encoder
 * + e_layers + 1 decoder TSAs), and per DecoderLayer one on the cross
 * attention weights and one on its output. The PatchEmbedding's is p = 0
 * (the identity) and left out. */
Test(crossformer, dropouts)
{
    tt_layer m = model_new((const char *[]){"dropout=0.375", "e_layers=3", "seq_len=60"}, 3,
                           true);
    int n = 0;
    for (int i = 0; i < tg_graph_node_count(m.g); i++) {
        const tg_node *nd = tg_graph_node(m.g, i);
        if (!nd->op || (strcmp(nd->op->name, "dropout") && strcmp(nd->op->name, "sdpa")))
            continue;   /* the attention weights' dropout is inside sdpa */
        char p[64];
        nd->op->describe(nd, p, sizeof p);
        cr_assert(strstr(p, "p=0.375"), "%s", p);
        n++;
    }
    cr_assert_eq(n, 7 * (3 + 4) + 2 * 4);
    tt_layer_free(&m);
}

/* Configs PyTorch can run build too: no merging (win_size 1), one layer,
 * seq_len a multiple of seg_len, seq_len <= seg_len (one segment). */
Test(crossformer, builds_for_valid_configs)
{
    const char *const cfgs[][6] = {
        {"win_size=1", "e_layers=3", NULL},
        {"e_layers=1", "seq_len=24", "pred_len=12", NULL},
        {"seq_len=5", "seg_len=6", "pred_len=1", "e_layers=3", NULL},
        {"d_model=10", "n_heads=3", "d_ff=null", "factor=1", NULL},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        int n = 0;
        while (cfgs[i][n]) n++;
        tt_layer m = model_new(cfgs[i], n, false);
        cr_assert_eq(tg_graph_forward(m.g), TG_OK, "%s", tg_last_error());
        assert_all_finite(tg_node_value(m.out.y), cfgs[i][0]);
        tt_layer_free(&m);
    }
}

Test(crossformer, builder_takes_any_batch_and_checks_the_input)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_crossformer_config c = tg_crossformer_defaults();
    tg_crossformer *m = calloc(1, sizeof *m);
    cr_assert_eq(tg_crossformer_init(m, &c, ps, "", NULL), TG_OK, "%s", tg_last_error());
    cr_assert_eq(m->in_seg_num, 3);
    cr_assert_eq(m->dec_seg_num, 2);
    cr_assert_eq(m->out_seg_num, 2);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){5, 30, 3});
    tg_node *y = tg_crossformer_build(g, m, x);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    cr_assert(tg_node_value(y)->shape[0] == 5 && tg_node_value(y)->shape[1] == 20 &&
              tg_node_value(y)->shape[2] == 3);
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 31, 3});
    cr_assert_null(tg_crossformer_build(g, m, x));
    tt_assert_graph_error(g, "x_enc must be [B, seq_len=30, enc_in=3], got [2, 31, 3]");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 2, (int64_t[]){30, 3});
    cr_assert_null(tg_crossformer_build(g, m, x));
    tt_assert_graph_error(g, "x_enc must be [B, seq_len=30, enc_in=3]");
    tg_graph_free(g);
    free(m);
    tg_params_free(ps);
}

Test(crossformer, bad_configs)
{
    tt_assert_layer_rejects("crossformer", (const char *[]){"d_model=7"}, 1,
                            "d_model must be even for the sinusoidal position embedding");
    tt_assert_layer_rejects("crossformer", (const char *[]){"e_layers=0"}, 1,
                            "e_layers: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"e_layers=17"}, 1,
                            "e_layers 17 is above tgraph's limit 16");
    tt_assert_layer_rejects("crossformer", (const char *[]){"seq_len=0"}, 1,
                            "seq_len: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"pred_len=0"}, 1,
                            "pred_len: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"seg_len=0"}, 1,
                            "seg_len: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"win_size=0"}, 1,
                            "win_size: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"n_heads=0"}, 1,
                            "n_heads: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"d_model=2", "n_heads=4"}, 2,
                            "d_model // n_heads is 0 (d_model 2, n_heads 4)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"factor=0"}, 1,
                            "factor: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"dropout=-0.5"}, 1,
                            "dropout: -0.5 is out of range [0, 1]");
    tt_assert_layer_rejects("crossformer", (const char *[]){"enc_in=0"}, 1,
                            "enc_in: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("crossformer", (const char *[]){"B=0"}, 1,
                            "B: 0 is out of range [1, inf)");
    /* one segment in, win 3: encode_blocks.1 would repeat 2 of 1 segments */
    tt_assert_layer_rejects("crossformer",
                            (const char *[]){"seq_len=12", "win_size=3", "e_layers=2"}, 3,
                            "encode_blocks.1 merges 1 segments with win_size 3 and would repeat "
                            "the last 2");
    tt_assert_layer_rejects("crossformer", (const char *[]){"seq_len=60012", "seg_len=12"}, 2,
                            "gives 5001 segments of 12, more than the position embedding's "
                            "max_len 5000");
    tt_assert_layer_rejects("crossformer", (const char *[]){"activation=relu"}, 1,
                            "unknown key 'activation'");
}
