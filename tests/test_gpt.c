/*
 * test_gpt.c - nanoGPT's GPT against the PyTorch oracle (make_case.py gpt:
 * the suite's gpt and gpt_nobias, 3 layers x 4 heads, T < block_size with
 * bias off and one head; every gradient, the tied wte's the sum of its two
 * uses), F64 gradchecks (eval and training mode), the tied weight (one
 * parameter, lm_head.weight an alias that loads with or without the file's
 * copy, refused when it differs, saved too), the parameter keys in
 * state_dict order, the init, dropout, and bad configs and inputs.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "layer_case.h"

#define ATOL 1e-5
#define RTOL 1e-5

Test(gpt, oracle_suite) { tt_run_oracle_case("gpt", ATOL, RTOL); }
Test(gpt, oracle_nobias_perturbed) { tt_run_oracle_case("gpt_nobias", ATOL, RTOL); }
Test(gpt, oracle_3_layers_4_heads) { tt_run_oracle_case("x_gpt_3l4h", ATOL, RTOL); }
Test(gpt, oracle_short_T_nobias_one_head) { tt_run_oracle_case("x_gpt_nobias_short", ATOL, RTOL); }

/* A gpt in the registry: its store and the model (no graph), for config sets;
 * parameters from seed, or left at zero for seed 0. */
static tt_layer make(const char *const *sets, int n, tg_dtype dt, uint64_t seed)
{
    return tt_layer_new("gpt", sets, n, &(tt_layer_opts){.dtype = dt, .init = seed != 0,
                                                         .seed = seed, .no_graph = true});
}

/* The case's parameters ("params": named_parameters, no lm_head) in order,
 * and lm_head.weight only as an alias of transformer.wte.weight. */
static void assert_keys_of_case(const char *name)
{
    char dir[128];
    snprintf(dir, sizeof dir, "oracle/%s", name);
    tt_layer t = tt_case_layer(dir, &(tt_layer_opts){.no_graph = true});
    tg_params *ps = t.ps;
    tg__json_doc doc = {0};
    void *text = tt_case_json(dir, &doc);
    const tg__json *params = tg__json_get(doc.root, "params");
    cr_assert(params && params->kind == TG__JSON_ARRAY);
    cr_assert_eq(params->n, tg_params_count(ps), "%s: %d parameters in the case, %d here", name,
                 params->n, tg_params_count(ps));
    for (int i = 0; i < params->n; i++)
        cr_assert_str_eq(tg_params_at(ps, i)->name, tg__json_at(tg__json_at(params, i), 0)->str,
                         "%s: parameter %d", name, i);
    cr_assert_eq(tg_params_alias_count(ps), 1);
    cr_assert_str_eq(tg_params_alias_name(ps, 0), "lm_head.weight");
    cr_assert_eq(tg_params_alias_target(ps, 0), tg_params_find(ps, "transformer.wte.weight"));
    cr_assert_eq(tg_params_find(ps, "lm_head.weight"), tg_params_alias_target(ps, 0));
    tg__json_free(&doc);
    tg_free(text);
    tt_layer_free(&t);
}

Test(gpt, keys_in_state_dict_order_lm_head_tied)
{
    assert_keys_of_case("gpt");
    assert_keys_of_case("gpt_nobias");
    assert_keys_of_case("x_gpt_3l4h");
}

Test(gpt, gradcheck)
{
    tt_deadline(20);
    tt_layer_gradcheck("gpt", NULL, 0, 1, 0);
    tt_layer_gradcheck("gpt", (const char *[]){"bias=false", "n_layer=1", "n_head=4", "n_embd=8",
                                               "T=3", "block_size=5", "B=3", "vocab_size=6"},
                       8, 2, 0);
}

/* Training mode with dropout: gradcheck resets the graph RNG before every
 * evaluation, so the masks (embedding, attention weights, both residual
 * branches) are fixed and their backward is checked in place. */
Test(gpt, gradcheck_training_mode_dropout)
{
    tt_deadline(20);
    tt_layer r = tt_layer_new("gpt", (const char *[]){"dropout=0.2", "n_layer=1"}, 2,
                              &(tt_layer_opts){.dtype = TG_F64, .init = true, .seed = 3,
                                               .training = true});
    int64_t *ids = tg_node_value(r.in[0])->data;   /* idx */
    for (int k = 0; k < 16; k++) ids[k] = (k * 7) % 11;
    tt_gradcheck(r.g, r.out.y, 3);
    tt_layer_free(&r);
}

/* The weights file of a case without its lm_head.weight, into path. */
static void save_without(const tg_st_file *f, const char *drop, const char *path)
{
    const char *names[64];
    const tg_tensor *ts[64];
    int n = 0;
    for (int i = 0; i < tg_st_count(f); i++) {
        if (!strcmp(tg_st_name(f, i), drop)) continue;
        cr_assert_lt(n, 64);
        names[n] = tg_st_name(f, i);
        ts[n++] = tg_st_tensor(f, i);
    }
    cr_assert_eq(tg_st_save(path, n, names, ts, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
}

/* torch.save(state_dict) writes lm_head.weight too; a file without it (or
 * with only it) loads the same wte; a differing copy is refused; saving
 * writes both names. */
Test(gpt, tied_weight_loads_with_or_without_alias)
{
    char path[512];
    snprintf(path, sizeof path, "%s/oracle/gpt/weights.safetensors", TT_FIXTURES);
    tg_st_file *f;
    cr_assert_eq(tg_st_load(path, &f), TG_OK, "%s", tg_last_error());
    const tg_tensor *wte = tg_st_find(f, "transformer.wte.weight");
    cr_assert(wte && tg_st_find(f, "lm_head.weight"), "the oracle writes both names");

    const char *cases[2] = {"lm_head.weight", "transformer.wte.weight"};
    for (int c = 0; c < 2; c++) {
        tt_layer r = make(NULL, 0, TG_F32, 0);
        save_without(f, cases[c], tt_path("w.safetensors"));
        cr_assert_eq(tg_params_load(r.ps, tt_path("w.safetensors"), 0), TG_OK, "without %s: %s",
                     cases[c], tg_last_error());
        tt_assert_close(&tg_params_find(r.ps, "transformer.wte.weight")->value, wte, 0, 0,
                        cases[c]);
        tt_layer_free(&r);
    }
    /* a copy that is not the same tensor */
    tg_tensor *bad = tg_tensor_clone(wte);
    tg_tensor_set(bad, 5, tg_tensor_get(bad, 5) + 1.0);
    const char *names[64];
    const tg_tensor *ts[64];
    int n = 0;
    for (int i = 0; i < tg_st_count(f); i++) {
        names[n] = tg_st_name(f, i);
        ts[n] = strcmp(names[n], "lm_head.weight") ? tg_st_tensor(f, i) : bad;
        n++;
    }
    cr_assert_eq(tg_st_save(tt_path("bad.safetensors"), n, names, ts, 0, NULL, NULL), TG_OK);
    tt_layer r = make(NULL, 0, TG_F32, 0);
    cr_assert_neq(tg_params_load(r.ps, tt_path("bad.safetensors"), 0), TG_OK);
    tt_assert_last_error("'lm_head.weight' is tied to 'transformer.wte.weight'");
    tt_assert_last_error("element 5");
    /* save: both names, the same values */
    cr_assert_eq(tg_params_load(r.ps, path, 0), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_params_save(r.ps, tt_path("saved.safetensors"), 0, NULL, NULL), TG_OK);
    tg_st_file *s;
    cr_assert_eq(tg_st_load(tt_path("saved.safetensors"), &s), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_count(s), tg_st_count(f));
    tt_assert_close(tg_st_find(s, "lm_head.weight"), wte, 0, 0, "saved alias");
    tg_st_free(s);
    tt_layer_free(&r);
    tg_tensor_free(bad);
    tg_st_free(f);
}

/* Build on an idx of the given shape and dtype; returns the graph (free it)
 * and the ids (int64 idx) through *ids. */
static tg_graph *build_on(tt_layer *r, tg_dtype dt, int rank, const int64_t *shape, tg_node **y,
                          int64_t **ids)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *idx = tg_input(g, "idx", dt, rank, shape);
    tg_layer_outputs out = {0};
    tg_layer_build(r->l, g, &idx, &out);
    *y = out.y;
    if (ids) *ids = tg_node_value(idx)->data;
    return g;
}

Test(gpt, bad_config_and_input)
{
    tt_assert_layer_rejects("gpt", (const char *[]){"n_embd=30", "n_head=4"}, 2,
                            "gpt: n_embd (30) must be divisible by n_head (4)");
    tt_assert_layer_rejects("gpt", (const char *[]){"T=9"}, 1,
                            "gpt: T (9) exceeds block_size (8)");
    tt_assert_layer_rejects("gpt", (const char *[]){"n_layer=65"}, 1, "n_layer");
    tt_assert_layer_rejects("gpt", (const char *[]){"dropout=1.5"}, 1, "dropout");

    tt_layer r = make(NULL, 0, TG_F32, 1);
    tg_node *y;
    int64_t *ids;
    /* T beyond block_size at build time (nanoGPT's assert, as a graph error) */
    tg_graph *g = build_on(&r, TG_I64, 2, (const int64_t[]){2, 9}, &y, NULL);
    cr_assert_null(y);
    tt_assert_graph_error(g, "gpt: Cannot forward sequence of length 9, block size is only 8");
    tg_graph_free(g);
    g = build_on(&r, TG_F32, 2, (const int64_t[]){2, 8}, &y, NULL);
    tt_assert_graph_error(g, "gpt: idx must be 2-d int64 token ids [B, T], got 2-d float32");
    tg_graph_free(g);
    g = build_on(&r, TG_I64, 1, (const int64_t[]){8}, &y, NULL);
    tt_assert_graph_error(g, "idx must be 2-d");
    tg_graph_free(g);
    /* an id out of range: the forward's error names it */
    g = build_on(&r, TG_I64, 2, (const int64_t[]){2, 8}, &y, &ids);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    for (int k = 0; k < 16; k++) ids[k] = k % 11;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    ids[3] = 11;
    cr_assert_neq(tg_graph_forward(g), TG_OK);
    tt_assert_last_error("index 11 is out of range for a weight of 11 rows (input[3])");
    ids[3] = -1;
    cr_assert_neq(tg_graph_forward(g), TG_OK);
    tt_assert_last_error("index -1 is out of range");
    tg_graph_free(g);
    tt_layer_free(&r);
}

/* T < block_size: the logits of a prefix are the full sequence's first T
 * positions (causal attention; wpe rows 0..T-1). */
Test(gpt, shorter_sequence_is_a_causal_prefix)
{
    tt_layer r = make((const char *[]){"B=1"}, 1, TG_F32, 5);
    tg_node *y8, *y3;
    int64_t *i8, *i3;
    tg_graph *g8 = build_on(&r, TG_I64, 2, (const int64_t[]){1, 8}, &y8, &i8);
    tg_graph *g3 = build_on(&r, TG_I64, 2, (const int64_t[]){1, 3}, &y3, &i3);
    cr_assert(y8 && y3);
    for (int k = 0; k < 8; k++) i8[k] = (3 * k + 1) % 11;
    for (int k = 0; k < 3; k++) i3[k] = i8[k];
    cr_assert_eq(tg_graph_forward(g8), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_graph_forward(g3), TG_OK, "%s", tg_last_error());
    const float *a = tg_node_value(y8)->data, *b = tg_node_value(y3)->data;
    for (int k = 0; k < 3 * 11; k++)
        cr_assert_float_eq(a[k], b[k], 1e-5f * (1 + fabsf(b[k])), "logit %d", k);
    tg_graph_free(g8);
    tg_graph_free(g3);
    tt_layer_free(&r);
}

/* nanoGPT's init: N(0, 0.02) weights, c_proj N(0, 0.02/sqrt(2 n_layer)),
 * zero biases, LayerNorm weights 1. */
Test(gpt, nanogpt_init)
{
    tt_layer r = make((const char *[]){"n_layer=4", "n_embd=64", "vocab_size=200"}, 3, TG_F32, 9);
    for (int i = 0; i < tg_params_count(r.ps); i++) {
        const tg_param *p = tg_params_at(r.ps, i);
        const tg_tensor *t = &p->value;
        double s = 0, s2 = 0;
        for (int64_t k = 0; k < t->numel; k++) {
            double v = tg_tensor_get(t, k);
            s += v, s2 += v * v;
        }
        double mean = s / (double)t->numel, sd = sqrt(s2 / (double)t->numel - mean * mean);
        const char *n = p->name;
        size_t len = strlen(n);
        if (strstr(n, "ln_")) {
            bool w = !strcmp(n + len - 6, "weight");
            cr_assert(mean == (w ? 1.0 : 0.0) && sd == 0, "%s: %g %g", n, mean, sd);
        } else if (!strcmp(n + len - 4, "bias")) {
            cr_assert(mean == 0 && sd == 0, "%s", n);
        } else {
            double want = strstr(n, "c_proj") ? 0.02 / sqrt(8.0) : 0.02;
            cr_assert(fabs(sd - want) < 0.1 * want && fabs(mean) < 0.1 * want, "%s: sd %g, want %g",
                      n, sd, want);
        }
    }
    tt_layer_free(&r);
}

/* dropout: eval mode (and dropout=0 in training) is the identity; training
 * with dropout changes the logits, the same for the same graph seed. */
Test(gpt, dropout_follows_training_flag)
{
    tt_layer r = make((const char *[]){"dropout=0.3"}, 1, TG_F32, 4);
    float got[3][176];
    for (int run = 0; run < 3; run++) {
        tg_node *y;
        int64_t *ids;
        tg_graph *g = build_on(&r, TG_I64, 2, (const int64_t[]){2, 8}, &y, &ids);
        tg_graph_set_training(g, run > 0);
        for (int k = 0; k < 16; k++) ids[k] = (5 * k + 2) % 11;
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        memcpy(got[run], tg_node_value(y)->data, sizeof got[run]);
        tg_graph_free(g);
    }
    cr_assert(memcmp(got[0], got[1], sizeof got[0]), "training with dropout changed nothing");
    cr_assert(!memcmp(got[1], got[2], sizeof got[1]), "same seed, different masks");
    tt_layer_free(&r);
}

/* The command line: `tgraph run gpt --input idx=idx.npy` (int64 ids; B and T
 * read off the file) gives the oracle's logits and gradients, wte's under its
 * own key; a float idx is refused naming the dtype; gradcheck and bench run. */
#define GPT_CASE "tests/fixtures/oracle/x_gpt_nobias_short"
Test(gpt, cli_run_gradcheck_bench)
{
    tt_deadline(30);
    char err[2048], out[4096];
    char y[256], g[256];
    snprintf(y, sizeof y, "%s", tt_path("y.npy"));
    snprintf(g, sizeof g, "%s", tt_path("g.safetensors"));
    int rc = tt_run_tool(TT_ARGS("run", "gpt", "--set", "bias=false", "--set", "n_head=1", "--set",
                                 "n_embd=12", "--set", "vocab_size=7", "--weights",
                                 GPT_CASE "/weights.safetensors", "--input",
                                 "idx=" GPT_CASE "/idx.npy", "--out", y, "--grad-output",
                                 GPT_CASE "/dy.npy", "--grads", g),
                         err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(tt_run_tool(TT_ARGS("compare", y, GPT_CASE "/y.npy", "--rtol", "1e-5"), err,
                             sizeof err), 0, "%s", err);
    cr_assert_eq(tt_run_tool(TT_ARGS("compare", g, GPT_CASE "/grads.safetensors", "--rtol", "1e-5"),
                             err, sizeof err), 0, "%s", err);
    char fidx[300];
    snprintf(fidx, sizeof fidx, "idx=%s", tt_path("fidx.npy"));
    tg_tensor *f = tg_tensor_new(TG_F32, 2, (const int64_t[]){2, 8});
    cr_assert_eq(tg_npy_save(tt_path("fidx.npy"), f), TG_OK, "%s", tg_last_error());
    tg_tensor_free(f);
    tt_expect_cli_error(TT_ARGS("run", "gpt", "--input", fidx, "--out", y), "--input idx: dtype "
                        "float32", "expected int64 token ids in [0, 11)");
    rc = tt_run_tool_out(TT_ARGS("gradcheck", "gpt", "--set", "n_layer=1"), out, sizeof out, err,
                         sizeof err);
    cr_assert_eq(rc, 0, "%s%s", out, err);
    cr_assert(strstr(out, "transformer.wte.weight") && strstr(out, "all pass"), "%s", out);
    rc = tt_run_tool_out(TT_ARGS("bench", "gpt", "--min-time", "0.01", "--warmup", "1", "--quiet"),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "\"layer\":\"gpt\"") && strstr(out, "\"train_step_ms\""), "%s", out);
}
