/*
 * test_patchtst.c - TSL's PatchTST against the PyTorch oracle (eval and
 * training-mode cases, the running statistics after the forward, other
 * patch geometries, relu, more layers), F64 gradcheck in eval and training
 * mode, the patching (replication pad + unfold) against a direct
 * computation and upstream's patch count, the eval path's use of the
 * running statistics, bad configs and inputs, the buffers through
 * tg_params_save/load, checkpoints and a resumed `tgraph train`, and the
 * command line: run with --buffers, summary, dot, bench, train and eval.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_case.h"
#include "layers.h"

/* patch p, tap j = x[clamp(p * stride + j, T - 1)], computed here directly;
 * and the gradient: every step gets the sum of dy over the taps reading it. */
static void check_unfold(int64_t T, int64_t patch_len, int64_t stride, int64_t padding)
{
    const int64_t N = 2, C = 3;
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = tg_input(g, "x", TG_F64, 3, (int64_t[]){N, C, T});
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_patch_unfold(g, x, patch_len, stride, padding);
    cr_assert(y, "%s", tg_graph_error(g));
    const int64_t n = tg_patch_count(T, patch_len, stride, padding);
    const tg_tensor *yt = tg_node_value(y);
    cr_assert(yt->rank == 3 && yt->shape[0] == N * C && yt->shape[1] == n &&
              yt->shape[2] == patch_len);
    double *xv = tg_node_value(x)->data;
    for (int64_t i = 0; i < N * C * T; i++) xv[i] = (double)((i * 7919) % 31) - 15.0;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_graph_error(g));
    tg_tensor *dy = tg_tensor_new(TG_F64, 3, yt->shape);
    tt_randn(dy, 5);
    cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_graph_error(g));
    const double *yv = yt->data, *d = dy->data, *dx = tg_node_grad(x)->data;
    double *want = calloc((size_t)(N * C * T), sizeof *want);
    for (int64_t r = 0; r < N * C; r++)
        for (int64_t p = 0; p < n; p++)
            for (int64_t j = 0; j < patch_len; j++) {
                int64_t s = p * stride + j;
                s = s < T ? s : T - 1;
                const int64_t at = (r * n + p) * patch_len + j;
                cr_assert_eq(yv[at], xv[r * T + s], "T %lld patch %lld tap %lld", (long long)T,
                             (long long)p, (long long)j);
                want[r * T + s] += d[at];
            }
    for (int64_t i = 0; i < N * C * T; i++) cr_assert_float_eq(dx[i], want[i], 1e-12);
    free(want);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

Test(patchtst, unfold_is_pad_then_unfold)
{
    check_unfold(20, 4, 2, 2);    /* the oracle's toy: 10 patches */
    check_unfold(96, 16, 8, 8);   /* TSL's ETTh1 run: 12 patches */
    check_unfold(13, 8, 4, 4);    /* 13 + 4 = 17 steps: 3 patches, the last one step short */
    check_unfold(5, 7, 3, 3);     /* patch_len > seq_len, < seq_len + stride: one patch */
    check_unfold(9, 3, 5, 0);     /* stride > patch_len: steps skipped */
}

/* (seq_len - patch_len) // stride + 2, upstream's patch_num, for padding = stride. */
Test(patchtst, patch_count_is_upstreams)
{
    for (int64_t T = 1; T <= 40; T++)
        for (int64_t P = 1; P <= 20; P++)
            for (int64_t S = 1; S <= 10; S++) {
                int64_t want = 0;
                if (P <= T + S) {
                    const int64_t a = T - P;   /* Python's floor division */
                    want = (a >= 0 ? a / S : -((-a + S - 1) / S)) + 2;
                }
                cr_assert_eq(tg_patch_count(T, P, S, S), want, "T %lld P %lld S %lld",
                             (long long)T, (long long)P, (long long)S);
            }
    cr_assert_eq(tg_patch_count(10, 4, 0, 0), 0);
    cr_assert_eq(tg_patch_count(10, 0, 1, 0), 0);
    cr_assert_eq(tg_patch_count(10, 4, 1, -1), 0);
}

Test(patchtst, unfold_rejects_bad_arguments)
{
    struct {
        int rank;
        int64_t P, S, pad;
        const char *needle;
    } rows[] = {
        {2, 4, 2, 2, "patch_unfold: expected x [B, n_vars, T], got [2, 3]"},
        {3, 0, 2, 2, "patch_len and stride must be at least 1 and padding at least 0, got 0, "
                     "2 and 2"},
        {3, 4, 0, 2, "got 4, 0 and 2"},
        {3, 4, 2, -1, "got 4, 2 and -1"},
        {3, 12, 2, 2, "patch_len 12 is longer than the padded series (9 steps + padding 2)"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, rows[i].rank, (int64_t[]){2, 3, 9});
        cr_assert_null(tg_patch_unfold(g, x, rows[i].P, rows[i].S, rows[i].pad));
        tt_assert_graph_error(g, rows[i].needle);
        tg_graph_free(g);
    }
}

#define ATOL 1e-5
#define RTOL 1e-5

Test(patchtst, oracle_toy) { tt_run_oracle_case("patchtst", ATOL, RTOL); }
Test(patchtst, oracle_train) { tt_run_oracle_case("patchtst_train", ATOL, RTOL); }
Test(patchtst, oracle_p8s4_3l_relu) { tt_run_oracle_case("x_patchtst_p8s4_3l_relu", ATOL, RTOL); }
Test(patchtst, oracle_train_odd) { tt_run_oracle_case("x_patchtst_train_odd", ATOL, RTOL); }
Test(patchtst, oracle_tsl_patches_dff_none)   /* 96 steps, patches 16 every 8: 12 */
{
    tt_run_oracle_case("x_patchtst_tsl_patches_dff_none", ATOL, RTOL);
}
Test(patchtst, oracle_stride_gt_patch)
{
    tt_run_oracle_case("x_patchtst_stride_gt_patch", ATOL, RTOL);
}

/* The key table's defaults are the oracle's (the suite case has no overrides). */
Test(patchtst, defaults_are_the_oracles)
{
    char layer[64];
    tg_config *cfg = tt_case_config("oracle/patchtst", layer, sizeof layer);
    tg_patchtst_config c, d = tg_patchtst_defaults();
    memset(&c, 0, sizeof c);
    cr_assert_eq(tg_layer_read_config(tg_layer_class_find("patchtst"), cfg, &c), TG_OK, "%s",
                 tg_last_error());
    cr_assert(c.B == d.B && c.enc_in == d.enc_in && c.seq_len == d.seq_len &&
              c.pred_len == d.pred_len && c.d_model == d.d_model && c.n_heads == d.n_heads &&
              c.e_layers == d.e_layers && c.d_ff == d.d_ff && c.dropout == d.dropout &&
              c.factor == d.factor && !strcmp(c.activation.s, d.activation.s) &&
              c.patch_len == d.patch_len && c.stride == d.stride);
    tg_config_free(cfg);
}

/* The store holds the case's state_dict keys in order: parameters, then
 * the buffers of encoder.norm.1; the pe table is recomputed, not stored. */
static void assert_state_dict_order(const char *name)
{
    char dir[128];
    tg__json_doc doc = {0};
    snprintf(dir, sizeof dir, "oracle/%s", name);
    tt_layer t = tt_case_layer(dir, &(tt_layer_opts){.no_graph = true});
    void *text = tt_case_json(dir, &doc);
    const tg__json *order = tg__json_get(doc.root, "state_dict_order");
    cr_assert(order && order->kind == TG__JSON_ARRAY);
    int at = 0, buf = 0;
    for (int i = 0; i < order->n; i++) {
        const char *key = tg__json_at(order, i)->str;
        const tg_param *p = tg_params_find(t.ps, key);
        if (!strcmp(key, "patch_embedding.position_embedding.pe")) {
            cr_assert_null(p, "the pe buffer is stored");
        } else if (p && p->buffer) {
            cr_assert_lt(buf, tg_params_buffer_count(t.ps));
            cr_assert_str_eq(tg_params_buffer_at(t.ps, buf++)->name, key);
        } else {
            cr_assert_lt(at, tg_params_count(t.ps), "%s: more keys in the case (%s)", name, key);
            cr_assert_str_eq(tg_params_at(t.ps, at++)->name, key, "%s: parameter %d", name, at);
        }
    }
    cr_assert_eq(at, tg_params_count(t.ps));
    cr_assert_eq(buf, 3);
    cr_assert_eq(tg_params_buffer_count(t.ps), 3);
    cr_assert_eq(tg_params_find(t.ps, "encoder.norm.1.num_batches_tracked")->value.dtype, TG_I64);
    tg__json_free(&doc);
    tg_free(text);
    tt_layer_free(&t);
}

Test(patchtst, keys_in_state_dict_order)
{
    assert_state_dict_order("patchtst");
    assert_state_dict_order("x_patchtst_p8s4_3l_relu");
}

/* The parameters in float64 against central differences (x's gradient goes
 * through the detached mean: the oracle cases check it). Eval mode: the
 * BatchNorm on its running statistics. */
Test(patchtst, gradcheck_eval)
{
    const char *sets[] = {"B=2", "enc_in=2", "seq_len=9", "pred_len=3", "d_model=4",
                          "n_heads=2", "e_layers=1", "d_ff=6", "patch_len=3", "stride=2"};
    cr_assert_eq(tt_layer_gradcheck("patchtst", sets, 10, 1, 0), 21);   /* 1 + 16 + 2 + 2 */
    const char *more[] = {"B=1", "enc_in=3", "seq_len=7", "pred_len=2", "d_model=6",
                          "n_heads=3", "e_layers=2", "d_ff=5", "patch_len=4", "stride=3",
                          "activation=relu"};
    cr_assert_eq(tt_layer_gradcheck("patchtst", more, 11, 2, 0), 37);
}

/* Training mode (dropout 0): the gradient through the BatchNorm's batch
 * statistics, every parameter element. */
Test(patchtst, gradcheck_training_batch_statistics)
{
    const char *sets[] = {"B=2", "enc_in=2", "seq_len=10", "pred_len=3", "d_model=4",
                          "n_heads=1", "e_layers=1", "d_ff=6", "patch_len=4", "stride=3",
                          "dropout=0"};
    tt_layer t = tt_layer_new("patchtst", sets, 11,
                              &(tt_layer_opts){.dtype = TG_F64, .init = true, .seed = 4,
                                               .randn_seed = 9, .training = true,
                                               .no_grad = true});
    tg_rng rng;
    tg_rng_seed(&rng, 5);
    for (int i = 0; i < tg_params_count(t.ps); i++) {   /* no gain exactly 1 */
        tg_tensor *p = &tg_params_at(t.ps, i)->value;
        for (int64_t k = 0; k < p->numel; k++)
            tg_tensor_set(p, k, tg_tensor_get(p, k) + 0.1 * tg_rng_normal(&rng));
    }
    tg_gradcheck_result res[64];
    int n = 0;
    bool ok = false;
    cr_assert_eq(tg_gradcheck(t.g, t.out.y, &(tg_gradcheck_opts){.seed = 3}, res, 64, &n, &ok),
                 TG_OK, "%s", tg_last_error());
    cr_assert_eq(n, 21);
    for (int i = 0; i < n; i++)
        cr_expect(res[i].pass && res[i].checked > 0, "%s: worst rel %.3g", res[i].name,
                  res[i].max_rel_err);
    cr_assert(ok);
    tt_layer_free(&t);
}

Test(patchtst, bad_configs)
{
    tt_assert_layer_rejects("patchtst", (const char *[]){"seq_len=5", "patch_len=8"}, 2,
                            "patchtst: patch_len 8 is longer than seq_len + stride = 7 (the "
                            "padded series holds no patch)");
    tt_assert_layer_rejects("patchtst", (const char *[]){"stride=0"}, 1,
                            "stride: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("patchtst", (const char *[]){"patch_len=0"}, 1,
                            "patch_len: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("patchtst", (const char *[]){"d_model=7", "n_heads=1"}, 2,
                            "patchtst: d_model must be even for the sinusoidal position "
                            "embedding");
    tt_assert_layer_rejects("patchtst", (const char *[]){"d_model=12", "n_heads=5"}, 2,
                            "patchtst: d_model (12) must be divisible by n_heads (5)");
    tt_assert_layer_rejects("patchtst", (const char *[]){"activation=tanh"}, 1,
                            "activation must be relu or gelu, got 'tanh'");
    tt_assert_layer_rejects("patchtst", (const char *[]){"e_layers=0"}, 1,
                            "e_layers: 0 is out of range [1, 64]");
    tt_assert_layer_rejects("patchtst", (const char *[]){"dropout=1.5"}, 1,
                            "dropout: 1.5 is out of range [0, 1]");
    tt_assert_layer_rejects("patchtst", (const char *[]){"seq_len=20000", "patch_len=1",
                                                         "stride=1"}, 3,
                            "patchtst: 20001 patches are more than the position embedding's "
                            "max_len 5000");
    tt_assert_layer_rejects("patchtst", (const char *[]){"d_model=1152921504606846976"}, 1,
                            "head.linear would have d_model 1152921504606846976 x 10 patches x "
                            "pred_len 6 weights, more than int64 holds");
    tt_assert_layer_rejects("patchtst", (const char *[]){"moving_avg=25"}, 1,
                            "unknown key 'moving_avg'");
}

/* Any batch and channel count; x's seq_len and rank are checked. */
Test(patchtst, builder_checks_the_input)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_patchtst_config c = tg_patchtst_defaults();
    tg_patchtst *m = calloc(1, sizeof *m);
    cr_assert_eq(tg_patchtst_init(m, &c, ps, "", NULL), TG_OK, "%s", tg_last_error());
    cr_assert_eq(m->patch_num, 10);
    cr_assert_eq(m->head_nf, 80);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){5, 20, 4});
    tg_node *y = tg_patchtst_build(g, m, x);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    const tg_tensor *yv = tg_node_value(y);
    cr_assert(yv->rank == 3 && yv->shape[0] == 5 && yv->shape[1] == 6 && yv->shape[2] == 4);
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 21, 3});
    cr_assert_null(tg_patchtst_build(g, m, x));
    tt_assert_graph_error(g, "patchtst: expected x_enc [B, seq_len=20, enc_in] (B and enc_in at "
                             "least 1), got [2, 21, 3]");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 20, 0});   /* no channel: no division by 0 */
    cr_assert_null(tg_patchtst_build(g, m, x));
    tt_assert_graph_error(g, "got [2, 20, 0]");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 2, (int64_t[]){20, 3});
    cr_assert_null(tg_patchtst_build(g, m, x));
    tt_assert_graph_error(g, "got [20, 3]");
    tg_graph_free(g);
    c.patch_len = 30;
    cr_assert_eq(tg_patchtst_init(m, &c, ps, "", NULL), TG_ERR_INVALID);
    tt_assert_last_error("patch_len 30 is longer than seq_len + stride = 22");
    free(m);
    tg_params_free(ps);
}

/* The running statistics after a training forward, saved with tg_params_save
 * and loaded into a fresh model, come back bit for bit (num_batches_tracked
 * as int64); a checkpoint likewise. */
Test(patchtst, buffers_round_trip_bit_exact)
{
    const char *sets[] = {"dropout=0"};
    tt_layer a = tt_layer_new("patchtst", sets, 1,
                              &(tt_layer_opts){.init = true, .seed = 7, .randn_seed = 8,
                                               .training = true});
    for (int s = 0; s < 2; s++) cr_assert_eq(tg_graph_forward(a.g), TG_OK, "%s", tg_last_error());
    const tg_param *nbt = tg_params_find(a.ps, "encoder.norm.1.num_batches_tracked");
    cr_assert_eq(((const int64_t *)nbt->value.data)[0], 2);
    const char *path = tt_path("patchtst.safetensors"), *ckp = tt_path("ck.safetensors");
    cr_assert_eq(tg_params_save(a.ps, path, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
    tg_checkpoint ck, back;
    tg_checkpoint_init(&ck);
    tg_checkpoint_init(&back);
    cr_assert_eq(tg_checkpoint_save(ckp, a.ps, NULL, &ck), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_checkpoint_read(ckp, &back), TG_OK, "%s", tg_last_error());
    for (int k = 0; k < 2; k++) {
        tt_layer b = tt_layer_new("patchtst", sets, 1, &(tt_layer_opts){.no_graph = true});
        if (k) cr_assert_eq(tg_checkpoint_restore_params(&back, b.ps), TG_OK, "%s",
                            tg_last_error());
        else cr_assert_eq(tg_params_load(b.ps, path, 0), TG_OK, "%s", tg_last_error());
        const int n = tg_params_count(a.ps), nb = tg_params_buffer_count(a.ps);
        cr_assert_eq(nb, 3);
        for (int i = 0; i < n + nb; i++) {
            const tg_param *p = i < n ? tg_params_at(a.ps, i) : tg_params_buffer_at(a.ps, i - n);
            const tg_param *q = tg_params_find(b.ps, p->name);
            cr_assert(q && q->value.dtype == p->value.dtype && q->value.numel == p->value.numel,
                      "%s", p->name);
            size_t bytes = (size_t)p->value.numel * tg_dtype_size(p->value.dtype);
            cr_assert_eq(memcmp(p->value.data, q->value.data, bytes), 0, "%s differs (%s)",
                         p->name, k ? "checkpoint" : "params file");
        }
        tt_layer_free(&b);
    }
    const float *rv = tg_params_find(a.ps, "encoder.norm.1.running_var")->value.data;
    cr_assert(rv[0] != 1.0f, "the training forwards moved the running variance");
    tg_checkpoint_clear(&ck);
    tg_checkpoint_clear(&back);
    tt_layer_free(&a);
}

/* ---- the command line: run with --buffers, summary, dot, bench, train ---- */

#define CASE "tests/fixtures/oracle/patchtst"

/* Run tgraph with args; stderr into the test log when it says anything. */
static int tool(const char *const *args)
{
    static char err[8192];
    int rc = tt_run_tool(args, err, sizeof err);
    if (err[0]) cr_log_info("tgraph %s ...: exit %d, stderr: %s", args[0], rc, err);
    return rc;
}

/* The oracle case in three commands: the running statistics from --buffers. */
Test(patchtst, run_with_buffers_then_compare)
{
    const char *y = tt_path("y.npy"), *g = tt_path("g.safetensors");
    cr_assert_eq(tool(TT_ARGS("run", "patchtst", "--weights", CASE "/weights.safetensors",
                              "--buffers", CASE "/buffers.safetensors", "--input",
                              "x=" CASE "/x.npy", "--out", y, "--grad-output", CASE "/dy.npy",
                              "--grads", g)), 0);
    cr_assert_eq(tool(TT_ARGS("compare", y, CASE "/y.npy")), 0);
    cr_assert_eq(tool(TT_ARGS("compare", g, CASE "/grads.safetensors")), 0);
    /* a layer without buffers only reads the file (Crossformer's pe is recomputed) */
#define CF "tests/fixtures/oracle/crossformer"
    cr_assert_eq(tool(TT_ARGS("run", "crossformer", "--weights", CF "/weights.safetensors",
                              "--buffers", CF "/buffers.safetensors", "--input", "x=" CF "/x.npy",
                              "--out", y)), 0);
    cr_assert_eq(tool(TT_ARGS("compare", y, CF "/y.npy")), 0);
#undef CF
    tt_expect_cli_error(TT_ARGS("run", "patchtst", "--weights", CASE "/weights.safetensors",
                                "--input", "x=" CASE "/x.npy", "--out", y),
                        "Missing key(s) in state_dict", "encoder.norm.1.running_mean");
    tt_expect_cli_error(TT_ARGS("run", "patchtst", "--weights", CASE "/weights.safetensors",
                                "--buffers", CASE "/weights.safetensors", "--input",
                                "x=" CASE "/x.npy", "--out", y),
                        "--buffers " CASE "/weights.safetensors: Missing key(s)",
                        "encoder.norm.1.running_mean");
    tt_expect_cli_error(TT_ARGS("run", "patchtst", "--weights", CASE "/buffers.safetensors",
                                "--buffers", CASE "/buffers.safetensors", "--input",
                                "x=" CASE "/x.npy", "--out", y),
                        "--weights " CASE "/buffers.safetensors: Missing key(s)",
                        "patch_embedding.value_embedding.weight");
}

/* The Params column of the summary row whose line starts with name and a
 * space (-1: no such row). */
static long row_params(const char *out, const char *name)
{
    char key[64], shape[64];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *r = strstr(out, key);
    if (!r) return -1;
    long a = 0, b = 0;
    r += strlen(key);
    /* "   [2, 6, 3]   1,734 ..." */
    if (sscanf(r, " %63[^]]] %ld,%ld", shape, &a, &b) == 3) return a * 1000 + b;
    if (sscanf(r, " %63[^]]] %ld", shape, &a) == 2) return a;
    return -1;
}

/* The parameter count is PyTorch's (case.json n_params), the buffers apart;
 * the top-level modules in build order. */
Test(patchtst, summary_counts_pytorchs_parameters)
{
    static char out[1 << 16], err[4096];
    int rc = tt_run_tool_out(TT_ARGS("summary", "patchtst", "--depth", "1"), out, sizeof out, err,
                             sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "Parameters: 1,734 (trainable 1,734)"), "%s", out);
    cr_assert_eq(row_params(out, "patchtst"), 1734, "%s", out);
    const char *mods[] = {"\n  instance_norm ", "\n  patch_embedding ", "\n  encoder ",
                          "\n  head ", "\n  instance_denorm "};
    const char *at = out;
    for (int i = 0; i < 5; i++) {
        const char *m = strstr(at, mods[i]);
        cr_assert_not_null(m, "row%s missing or out of order:\n%s", mods[i], out);
        at = m + 1;
    }
    rc = tt_run_tool_out(TT_ARGS("summary", "patchtst", "--depth", "2"), out, sizeof out, err,
                         sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    /* BatchNorm1d(8): 16 parameters; its 17 buffer elements are not counted */
    cr_assert_eq(row_params(out, "    norm"), 16, "%s", out);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Modules as clusters: patchtst > patch_embedding > padding_patch_layer,
 * value_embedding, position_embedding; encoder > attn_layers.i, norm > 1; head > linear. */
Test(patchtst, dot_draws_modules_as_clusters)
{
    static char out[1 << 20], err[4096];
    int rc = tt_run_tool_out(TT_ARGS("dot", "patchtst", "-o", "-"), out, sizeof out, err,
                             sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    const char *labels[] = {"label=\"patchtst\"", "label=\"instance_norm\"",
                            "label=\"patch_embedding\"", "label=\"padding_patch_layer\"",
                            "label=\"value_embedding\"", "label=\"position_embedding\"",
                            "label=\"encoder\"", "label=\"attn_layers.0\"",
                            "label=\"attn_layers.1\"", "label=\"norm\"", "label=\"1\"",
                            "label=\"head\"", "label=\"linear\"", "label=\"instance_denorm\""};
    for (size_t i = 0; i < sizeof labels / sizeof *labels; i++)
        cr_assert(strstr(out, labels[i]), "missing %s", labels[i]);
    cr_assert_geq(count(out, "subgraph cluster_"), 14 + 2 * 8, "%d clusters",
                  count(out, "subgraph cluster_"));
    cr_assert(strstr(out, "patch_embedding.value_embedding.weight\\n[8, 4]"), "%s", out);
    cr_assert(strstr(out, "head.linear.weight\\n[6, 80]"));
    cr_assert(strstr(out, "encoder.norm.1.running_mean"));
}

Test(patchtst, bench_prints_one_json_line)
{
    char out[8192], err[8192];
    int rc = tt_run_tool_out(TT_ARGS("bench", "patchtst", "--set", "e_layers=1", "--threads",
                                     "1", "--min-time", "0", "--warmup", "1"),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d, stderr: %s", rc, err);
    cr_assert(strstr(out, "{\"layer\":\"patchtst\",\"config\":{\"B\":2,\"enc_in\":3,"), "%s", out);
    cr_assert(strstr(out, "\"e_layers\":1,") && strstr(out, "\"activation\":\"gelu\""), "%s",
              out);
    /* 32 + one layer's 600 + BatchNorm's 16 + head 486 */
    cr_assert(strstr(out, "\"params\":1134,"), "%s", out);
    cr_assert(strstr(out, "\"train_step_ms\":"), "%s", out);
}

/* Trained from the command line; eval of its checkpoint restores the
 * running statistics and gives the training run's test line again. */
Test(patchtst, trains_and_eval_repeats_the_test_line)
{
    char out[8192], err[8192], dir[4200], ck[4300];
    snprintf(dir, sizeof dir, "%s/run", tt_tmpdir());
    int rc = tt_run_tool_out(TT_ARGS("train", "--model", "patchtst", "--set", "seq_len=24",
                                     "--set", "pred_len=8", "--set", "patch_len=8", "--set",
                                     "stride=4", "--epochs", "2", "--threads", "1", "--out-dir",
                                     dir),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    const char *line = strstr(out, "test mse=");
    cr_assert(line, "%s", out);
    char want[256];
    snprintf(want, sizeof want, "%.*s", (int)strcspn(line, "\n"), line);
    snprintf(ck, sizeof ck, "%s/best.safetensors", dir);
    rc = tt_run_tool_out(TT_ARGS("eval", "--checkpoint", ck, "--threads", "1"), out, sizeof out,
                         err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, want), "eval: %s\ntrain: %s", out, want);
    rc = tt_run_tool_out(TT_ARGS("train", "--model", "patchtst", "--set", "patch_len=30",
                                 "--out-dir", tt_path("other")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2);
    cr_assert(strstr(err, "patch_len 30 is longer than seq_len + stride = 22"), "%s", err);
}

/* Eval mode normalises with the running statistics and leaves them alone:
 * a model with running_mean m, running_var v and gains w, b gives what one
 * with the defaults (0, 1) and w' = w sqrt(1 + eps) / sqrt(v + eps),
 * b' = b - m w / sqrt(v + eps) gives. */
Test(patchtst, eval_uses_the_running_statistics)
{
    const char *sets[] = {"e_layers=1"};
    const tt_layer_opts o = {.dtype = TG_F64, .init = true, .seed = 3, .randn_seed = 4,
                             .no_grad = true};
    tt_layer a = tt_layer_new("patchtst", sets, 1, &o), b = tt_layer_new("patchtst", sets, 1, &o);
    const char *pre = "encoder.norm.1.";
    char k[4][64];
    const char *names[4] = {"running_mean", "running_var", "weight", "bias"};
    tg_tensor *ta[4], *tb[4];
    for (int i = 0; i < 4; i++) {
        snprintf(k[i], sizeof k[i], "%s%s", pre, names[i]);
        ta[i] = &tg_params_find(a.ps, k[i])->value;
        tb[i] = &tg_params_find(b.ps, k[i])->value;
    }
    const double eps = 1e-5;
    for (int64_t c = 0; c < ta[0]->numel; c++) {
        const double m = 0.3 * (double)c - 1.0, v = 0.5 + 0.25 * (double)c;
        const double w = tg_tensor_get(ta[2], c), bb = tg_tensor_get(ta[3], c);
        tg_tensor_set(ta[0], c, m);
        tg_tensor_set(ta[1], c, v);
        tg_tensor_set(tb[2], c, w * sqrt(1 + eps) / sqrt(v + eps));
        tg_tensor_set(tb[3], c, bb - m * w / sqrt(v + eps));
    }
    cr_assert_eq(tg_graph_forward(a.g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_graph_forward(b.g), TG_OK, "%s", tg_last_error());
    tt_assert_close(tg_node_value(a.out.y), tg_node_value(b.out.y), 1e-10, 1e-10, "eval y");
    cr_assert_eq(tg_tensor_get(ta[0], 2), 0.3 * 2 - 1.0, "eval moved running_mean");
    const tg_param *nbt = tg_params_find(a.ps, "encoder.norm.1.num_batches_tracked");
    cr_assert_eq(((const int64_t *)nbt->value.data)[0], 0, "eval counted a batch");
    tt_layer_free(&a);
    tt_layer_free(&b);
}

/* Every tensor of two checkpoints, bit for bit (same names), but the
 * history (its seconds column is wall time). */
static void assert_same_tensors(const char *a, const char *b)
{
    tg_st_file *fa, *fb;
    cr_assert_eq(tg_st_load(a, &fa), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_load(b, &fb), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_count(fa), tg_st_count(fb));
    for (int i = 0; i < tg_st_count(fa); i++) {
        const char *name = tg_st_name(fa, i);
        const tg_tensor *x = tg_st_find(fa, name), *y = tg_st_find(fb, name);
        if (!strcmp(name, "tgraph.history")) continue;
        cr_assert(y && x->dtype == y->dtype && x->numel == y->numel, "%s", name);
        cr_assert_eq(memcmp(x->data, y->data, (size_t)x->numel * tg_dtype_size(x->dtype)), 0,
                     "%s differs", name);
    }
    tg_st_free(fa);
    tg_st_free(fb);
}

/* With dropout and BatchNorm: two epochs straight, or one then a resume,
 * end with the same test line and the same checkpoint (running statistics
 * and num_batches_tracked included). */
Test(patchtst, train_resumes_exactly_with_its_buffers)
{
    char out[8192], err[8192], a[4200], b[4200], ca[4300], cb[4300];
    char line[256];
    snprintf(a, sizeof a, "%s/straight", tt_tmpdir());
    snprintf(b, sizeof b, "%s/part", tt_tmpdir());
#define PT_TRAIN "train", "--model", "patchtst", "--set", "seq_len=24", "--set", "pred_len=8", \
                 "--set", "patch_len=8", "--set", "stride=4", "--set", "dropout=0.3",         \
                 "--split", "600,200,200", "--batch-size", "16", "--threads", "1"
    int rc = tt_run_tool_out(TT_ARGS(PT_TRAIN, "--epochs", "2", "--out-dir", a), out, sizeof out,
                             err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "test mse="), "%s", out);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(strstr(out, "test mse="), "\n"),
             strstr(out, "test mse="));
    rc = tt_run_tool_out(TT_ARGS(PT_TRAIN, "--epochs", "1", "--out-dir", b), out, sizeof out, err,
                         sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    snprintf(cb, sizeof cb, "%s/checkpoint.safetensors", b);
    rc = tt_run_tool_out(TT_ARGS("train", "--resume", cb, "--epochs", "2"), out, sizeof out, err,
                         sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, line), "resumed: %s\nstraight: %s", out, line);
#undef PT_TRAIN
    snprintf(ca, sizeof ca, "%s/checkpoint.safetensors", a);
    assert_same_tensors(ca, cb);
    tg_st_file *f;
    cr_assert_eq(tg_st_load(ca, &f), TG_OK, "%s", tg_last_error());
    const tg_tensor *nbt = tg_st_find(f, "encoder.norm.1.num_batches_tracked");
    cr_assert(nbt && nbt->dtype == TG_I64, "the checkpoint holds the counter");
    cr_assert_gt(((const int64_t *)nbt->data)[0], 2, "every training step counts a batch");
    tg_st_free(f);
}
