/*
 * test_summary.c - cost on the model: `tgraph summary` (the parameter total
 * of crossformer at the ETTh1 paper config is the PyTorch model's; forward
 * FLOPs of attention_layer and tsa within 1% of a count written out here),
 * the fused sdpa counting what its unfused chain counts, and `tgraph dot
 * --profile` (every op node annotated, a legend, a title with the three
 * largest shares, colours that order like the times), and summary's memory
 * per module (issue 35 section 2: worked out by hand on linear_forecast; the
 * layer's peaks the plan's; the total within 10% of what bench measures).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "layer_case.h"

#define OUT_MAX (1 << 16)
/* The CSV header of `tgraph summary --csv` (",forward_ms,backward_ms" follow with --profile). */
#define MEM_CSV_HEAD                                                                       \
    "module,depth,output_shape,params,flops,bytes_kept,param_bytes,grad_bytes,adam_bytes," \
    "peak_forward_bytes,peak_backward_bytes"

/* The top row of `tgraph summary LAYER --csv ...` (the layer's totals):
 * "layer,0,\"[shape]\",params,flops,bytes". */
static void summary_top(const char *const *args, double *params, double *flops)
{
    static char out[OUT_MAX], err[4096];
    int rc = tt_run_tool_out(args, out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "summary failed (%d): %s", rc, err);
    cr_assert(!strncmp(out, "module,depth,output_shape,params,flops,bytes_kept", 49), "%s", out);
    const char *row = strchr(out, '\n');
    cr_assert_not_null(row);
    const char *q = strchr(row + 1, '"');
    cr_assert_not_null(q, "%s", row);
    q = strchr(q + 1, '"');   /* the closing quote of the shape */
    cr_assert_not_null(q, "%s", row);
    cr_assert_eq(sscanf(q + 1, ",%lf,%lf", params, flops), 2, "%s", row);
}

/* Forward FLOPs of an AttentionLayer (engine/cost.h rules): the four
 * projections' 2*N*in*out plus N*out for the bias, the two attention einsums'
 * 2*B*H*L*S*E and 2*B*H*L*S*D, and per score 5 (softmax) + 1 (dropout)
 * + 1 (the causal masked_fill). */
static double attention_flops(double B, double L, double S, double dm, double H, double E,
                              double D, bool causal)
{
    double q = 2 * B * L * dm * H * E + B * L * H * E;
    double k = 2 * B * S * dm * H * E + B * S * H * E;
    double v = 2 * B * S * dm * H * D + B * S * H * D;
    double scores = 2 * B * H * L * S * E, mix = 2 * B * H * L * S * D;
    double soft = B * H * L * S * (5 + 1 + (causal ? 1 : 0));
    double o = 2 * B * L * H * D * dm + B * L * dm;
    return q + k + v + scores + mix + soft + o;
}

static void assert_within_1pct(double got, double want, const char *what)
{
    cr_assert(fabs(got - want) <= 0.01 * want, "%s: summary says %.0f FLOPs, analytical %.0f",
              what, got, want);
}

Test(summary, attention_layer_flops_match_analytical_count)
{
    tt_deadline(30);
    double p, f;
    summary_top(TT_ARGS("summary", "attention_layer", "--csv", "--set", "B=2", "--set", "L=24",
                        "--set", "S=24", "--set", "d_model=64", "--set", "n_heads=4"), &p, &f);
    assert_within_1pct(f, attention_flops(2, 24, 24, 64, 4, 16, 16, false), "self, 4 heads");
    cr_assert_eq(p, 4 * (64 * 64 + 64), "params %.0f", p);
    summary_top(TT_ARGS("summary", "attention_layer", "--csv", "--set", "B=3", "--set", "L=10",
                        "--set", "S=40", "--set", "d_model=48", "--set", "n_heads=3", "--set",
                        "d_keys=8", "--set", "d_values=24", "--set", "self_attention=false"),
                &p, &f);
    assert_within_1pct(f, attention_flops(3, 10, 40, 48, 3, 8, 24, false), "cross, d_keys 8");
    summary_top(TT_ARGS("summary", "attention_layer", "--csv", "--set", "L=20", "--set",
                        "S=20", "--set", "d_model=32", "--set", "mask_flag=true"), &p, &f);
    assert_within_1pct(f, attention_flops(2, 20, 20, 32, 2, 16, 16, true), "causal");
}

/* TwoStageAttentionLayer on x [b, ts_d, seg, d]: attention across time
 * (b*ts_d sequences of seg), the router's two attentions across series
 * (b*seg sequences: factor queries on ts_d keys, then ts_d on factor), and
 * per stage dropout + add (2 per element), layer_norm with weight and bias
 * (7 per element) twice, an MLP (two linears and a GELU) between them. */
static double tsa_flops(double b, double ts_d, double seg, double d, double factor, double H,
                        double ff)
{
    double N = b * ts_d * seg, E = d / H;
    double mlp = 2 * N * d * ff + N * ff + N * ff + 2 * N * ff * d + N * d;
    double stage = 2 * N * d + 7 * N * d + mlp + 2 * N * d + 7 * N * d;
    return attention_flops(b * ts_d, seg, seg, d, H, E, E, false) +
           attention_flops(b * seg, factor, ts_d, d, H, E, E, false) +
           attention_flops(b * seg, ts_d, factor, d, H, E, E, false) + 2 * stage;
}

Test(summary, tsa_flops_match_analytical_count)
{
    tt_deadline(30);
    double p, f;
    summary_top(TT_ARGS("summary", "tsa", "--csv", "--set", "d_model=64", "--set", "n_heads=4",
                        "--set", "seg_num=10", "--set", "ts_d=7"), &p, &f);
    assert_within_1pct(f, tsa_flops(2, 7, 10, 64, 2, 4, 256), "tsa d_model 64");
    summary_top(TT_ARGS("summary", "tsa", "--csv", "--set", "d_model=32", "--set", "d_ff=48",
                        "--set", "factor=3", "--set", "b=3", "--set", "seg_num=6"), &p, &f);
    assert_within_1pct(f, tsa_flops(3, 3, 6, 32, 3, 2, 48), "tsa d_ff 48, factor 3");
}

/* PyTorch's count for the same model: /work/shared/oracle/layers.py's
 * Crossformer(enc_in=7, seq_len=168, pred_len=24, seg_len=6, win_size=2,
 * factor=10, d_model=256, d_ff=512, n_heads=4, e_layers=3, dropout=0.2),
 * sum(p.numel() for p in m.parameters()) (all of them trainable). */
#define CROSSFORMER_ETTH1_TORCH_PARAMS 11301400

Test(summary, crossformer_etth1_params_equal_pytorch)
{
    tt_deadline(60);
    static char out[OUT_MAX], err[4096];
    const char *const *args =
        TT_ARGS("summary", "crossformer", "--set", "enc_in=7", "--set", "seq_len=168", "--set",
                "pred_len=24", "--set", "seg_len=6", "--set", "win_size=2", "--set", "factor=10",
                "--set", "d_model=256", "--set", "d_ff=512", "--set", "n_heads=4", "--set",
                "e_layers=3", "--set", "dropout=0.2", "--depth", "1");
    int rc = tt_run_tool_out(args, out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char want[128];
    snprintf(want, sizeof want, "Parameters: %d,%03d,%03d (trainable %d,%03d,%03d)",
             CROSSFORMER_ETTH1_TORCH_PARAMS / 1000000, CROSSFORMER_ETTH1_TORCH_PARAMS / 1000 % 1000,
             CROSSFORMER_ETTH1_TORCH_PARAMS % 1000, CROSSFORMER_ETTH1_TORCH_PARAMS / 1000000,
             CROSSFORMER_ETTH1_TORCH_PARAMS / 1000 % 1000, CROSSFORMER_ETTH1_TORCH_PARAMS % 1000);
    cr_assert(strstr(out, want), "want '%s' in:\n%s", want, out);
    /* depth 1: the four modules, in build order, and the totals */
    const char *mods[] = {"\n  enc_value_embedding ", "\n  pre_norm ", "\n  encoder ",
                          "\n  decoder "};
    const char *at = out;
    for (int i = 0; i < 4; i++) {
        const char *m = strstr(at, mods[i]);
        cr_assert_not_null(m, "row%s missing or out of order:\n%s", mods[i], out);
        at = m + 1;
    }
    cr_assert_null(strstr(out, "encode_blocks"), "depth 1 shows no deeper row:\n%s", out);
    cr_assert(strstr(out, "Training step's planned memory: "), "%s", out);
    cr_assert(strstr(out, "FLOPs per step: forward "), "%s", out);
}

/* The fused sdpa counts what the unfused chain it replaces counts. */
static double layer_flops(const char *layer, const char *const *sets, int n)
{
    tt_layer b = tt_layer_new(layer, sets, n, &(tt_layer_opts){.no_grad = true});
    tg_graph *g = b.g;
    bool fused = false;
    for (int i = 0; i < tg_graph_node_count(g); i++)
        fused |= !strcmp(tg_node_name(tg_graph_node(g, i)), "sdpa");
    cr_assert_eq(fused, strcmp(sets[n - 1], "output_attention=true") != 0);
    tg_cost c;
    cr_assert_eq(tg_graph_scope_cost(g, 0, &c), TG_OK);
    double sum = 0;   /* the root scope's cost is every node's */
    for (int i = 0; i < tg_graph_node_count(g); i++) sum += tg_node_flops(tg_graph_node(g, i));
    cr_assert_eq(c.flops, sum);
    tt_layer_free(&b);
    return c.flops;
}

Test(summary, fused_sdpa_counts_its_unfused_chain)
{
    for (int causal = 0; causal < 2; causal++) {
        const char *m = causal ? "mask_flag=true" : "mask_flag=false";
        double fused = layer_flops("attention_layer",
                                   (const char *[]){"L=12", "S=12", m,
                                                     "output_attention=false"}, 4);
        double unfused = layer_flops("attention_layer",
                                     (const char *[]){"L=12", "S=12", m,
                                                       "output_attention=true"}, 4);
        cr_assert_eq(fused, unfused, "%s: fused %.0f, unfused %.0f", m, fused, unfused);
        cr_assert_eq(fused, attention_flops(2, 12, 12, 16, 2, 8, 8, causal), "%s: %.0f", m, fused);
    }
}

Test(summary, markdown_and_profile)
{
    tt_deadline(30);
    static char out[OUT_MAX], err[4096];
    int rc = tt_run_tool_out(TT_ARGS("summary", "tsa", "--markdown", "--profile", "--steps", "1",
                                     "--depth", "1"),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(!strncmp(out, "| Module | Output shape | Params | FLOPs fwd | Params B | Grads B | "
                            "Adam B | Kept | Peak fwd | Peak bwd | Forward ms | Backward ms |\n"
                            "|---|---:|", 130), "%s", out);
    cr_assert(strstr(out, "\n| **tsa** | [2, 3, 5, 8] | 2,112 | "), "%s", out);
    cr_assert(strstr(out, "\n| time_attention | [6, 5, 8] | 288 | "), "%s", out);
    cr_assert_null(strstr(out, "query_projection"), "depth 1:\n%s", out);
    cr_assert(strstr(out, "\n- Parameters: 2,112 (trainable 2,112)"), "%s", out);
    cr_assert(strstr(out, "\n- Training step: "), "%s", out);
}

Test(summary, bad_input)
{
    tt_expect_cli_error(TT_ARGS("summary"), "missing LAYER", NULL);
    tt_expect_cli_error(TT_ARGS("summary", "no_such_layer"), "no_such_layer", NULL);
    tt_expect_cli_error(TT_ARGS("summary", "tsa", "--csv", "--markdown"), "--csv and --markdown",
                        NULL);
    tt_expect_cli_error(TT_ARGS("summary", "tsa", "--depth", "-1"), "--depth", NULL);
    tt_expect_cli_error(TT_ARGS("summary", "tsa", "--steps", "0"), "--steps", NULL);
    tt_expect_cli_error(TT_ARGS("summary", "tsa", "--set", "d_model=0"), "d_model", NULL);
    tt_expect_cli_error(TT_ARGS("dot", "tsa", "--profile", "--steps", "0", "-o", "-"), "--steps",
                        NULL);
}

/* ---- tgraph dot --profile ---- */

/* A node statement's label and fill colour ("n12 [label=\"...\", ..."). */
typedef struct { char label[1024]; unsigned fill; bool has_fill; } dot_item;

static bool parse_item(const char *line, dot_item *it)
{
    const char *l = strstr(line, "[label=\"");
    if (!l) return false;
    l += 8;
    size_t k = 0;
    while (*l && *l != '"' && k + 1 < sizeof it->label) {
        if (*l == '\\' && l[1]) l++;
        it->label[k++] = *l++;
    }
    it->label[k] = '\0';
    const char *f = NULL;
    for (const char *p = line; (p = strstr(p, "fillcolor=\"#")); p++) f = p;   /* the last wins */
    it->has_fill = f && sscanf(f, "fillcolor=\"#%6x\"", &it->fill) == 1;
    return true;
}

static unsigned rgb_sum(unsigned c) { return (c >> 16) + ((c >> 8) & 0xff) + (c & 0xff); }

Test(dot_profile, annotations_legend_title_and_colours)
{
    tt_deadline(30);
    const char *path = tt_path("tsa-profile.dot");
    char err[4096];
    int rc = tt_run_tool(TT_ARGS("dot", "tsa", "--profile", "--steps", "2", "-o", path), err,
                         sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char *t = tt_slurp(path, NULL);
    /* the legend, and the title: three modules with shares summing to <= 100% */
    cr_assert(strstr(t, "legend [label=\"colour: share of the training step's time"), "%s", t);
    const char *title = strstr(t, "label=\"tsa\\nprofiled: ");
    cr_assert_not_null(title, "%s", t);
    const char *top = strstr(title, "; top: ");
    cr_assert_not_null(top);
    char m[3][64];
    double share[3];
    cr_assert_eq(sscanf(top, "; top: %63s %lf%%, %63s %lf%%, %63s %lf%%", m[0], &share[0], m[1],
                        &share[1], m[2], &share[2]), 6, "%.200s", top);
    cr_assert(share[0] >= share[1] && share[1] >= share[2] && share[2] > 0);
    cr_assert_leq(share[0] + share[1] + share[2], 100.0);
    /* every op node: time, FLOPs, bytes kept and a heat colour; colours order like times */
    double times[512];
    unsigned sums[512];
    int n = 0;
    for (char *line = strtok(t, "\n"); line; line = strtok(NULL, "\n")) {
        dot_item it;
        int id, end = 0;   /* a node statement, not an edge "n0 -> n1 [label=" */
        if (sscanf(line, " n%d [label=%n", &id, &end) != 1 || !end || !parse_item(line, &it))
            continue;
        if (!strncmp(it.label, "input ", 6) || strstr(line, "rounded,filled") ||
            strstr(line, "shape=note"))
            continue;   /* inputs, parameters, constants */
        const char *ms = strstr(it.label, " ms (fwd ");
        cr_assert_not_null(ms, "node n%d has no time: %s", id, it.label);
        const char *ln = ms;
        while (ln > it.label && ln[-1] != '\n') ln--;
        cr_assert(strstr(ms, "FLOP, ") && strstr(ms, " kept"), "n%d: %s", id, it.label);
        cr_assert(it.has_fill, "n%d has no colour", id);
        cr_assert_lt(n, 512);
        times[n] = strtod(ln, NULL);
        sums[n++] = rgb_sum(it.fill);
    }
    cr_assert_gt(n, 40, "%d op nodes", n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (times[i] < times[j])
                cr_assert_geq(sums[i], sums[j], "node %.4g ms is darker than %.4g ms", times[i],
                              times[j]);
    free(t);
}

Test(dot_profile, collapsed_modules_annotated)
{
    tt_deadline(30);
    static char out[OUT_MAX], err[4096];
    int rc = tt_run_tool_out(TT_ARGS("dot", "tsa", "--profile", "--steps", "1", "--depth", "1",
                                     "-o", "-"),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    int boxes = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        if (!strstr(line, "shape=box3d")) continue;
        dot_item it;
        cr_assert(parse_item(line, &it));
        cr_assert(strstr(it.label, "% (fwd ") && strstr(it.label, "FLOP, "), "%s", it.label);
        cr_assert(it.has_fill, "%s", line);
        boxes++;
    }
    cr_assert_geq(boxes, 8, "%d module boxes", boxes);   /* time_attention, norm1..4, MLP1, ... */
}

/* ---- the library: tg_node_cost, tg_graph_scope_cost ---- */

Test(cost, node_and_scope_costs)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "fc.weight", 2, (int64_t[]){5, 3});
    tg_param *b = tg_params_add(ps, "fc.bias", 1, (int64_t[]){5});
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 4, 3});   /* 8 rows of 3 */
    cr_assert_eq(tg_scope_push(g, "fc"), TG_OK);
    tg_node *y = tg_linear(g, x, tg_param_node(g, w), tg_param_node(g, b));   /* [2, 4, 5] */
    tg_scope_pop(g);
    tg_node *d = tg_dropout(g, y, 0.5);
    tg_node *r = tg_reshape(g, d, 2, (int64_t[]){8, 5});
    tg_node *s = tg_sum(g, r, NULL, 0, false);
    tg_node *ln = tg_layer_norm(g, x, 1, (int64_t[]){3}, NULL, NULL, 1e-5);   /* [2, 4, 3] */
    cr_assert_null(tg_graph_error(g), "%s", tg_graph_error(g));
    /* FLOPs: 2 per multiply-add + the bias; 1 per element; views 0; 1 per element summed */
    cr_assert_eq(tg_node_flops(y), 2.0 * 8 * 3 * 5 + 8 * 5);
    cr_assert_eq(tg_node_flops(d), 40);
    cr_assert_eq(tg_node_flops(r), 0);
    cr_assert_eq(tg_node_flops(s), 40);
    cr_assert_eq(tg_node_flops(x), 0);
    /* bytes kept: the value, plus saved buffers (n->buf); a view keeps none */
    tg_cost c;
    cr_assert_eq(tg_node_cost(y, &c), TG_OK);
    cr_assert_eq(c.bytes, 40 * 4);
    cr_assert_eq(tg_node_cost(d, &c), TG_OK);
    double bufs = 0;
    for (int i = 0; i < d->n_buf; i++) bufs += (double)d->buf[i].numel * 4;
    cr_assert_eq(c.bytes, 40 * 4 + bufs, "%.0f", c.bytes);
    cr_assert_eq(tg_node_cost(r, &c), TG_OK);
    cr_assert_eq(c.bytes, 0);
    cr_assert_eq(tg_node_flops(ln), 5 * 24, "layer_norm without affine: 5 per element");
    cr_assert_eq(tg_node_cost(ln, &c), TG_OK);
    cr_assert_gt(ln->n_buf, 0);
    cr_assert_gt(c.bytes, 24 * 4, "layer_norm keeps its statistics too: %.0f", c.bytes);
    /* times: none before profiling; after a profiled step, some for the linear */
    cr_assert_eq(tg_node_cost(y, &c), TG_OK);
    cr_assert_eq(c.forward_s + c.backward_s, 0);
    tg_graph_set_training(g, true);
    tg_graph_set_profile(g, true);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tg_graph_forward(g) || tg_graph_backward(g, s, NULL), TG_OK, "%s",
                     tg_last_error());
    cr_assert_eq(tg_node_cost(y, &c), TG_OK);
    cr_assert_gt(c.forward_s, 0);
    cr_assert_gt(c.backward_s, 0);
    /* a scope sums its nodes; the root sums them all */
    tg_cost fc, all;
    cr_assert_eq(tg_graph_scope_cost(g, 1, &fc), TG_OK);
    cr_assert_eq(fc.flops, tg_node_flops(y));
    cr_assert_eq(fc.ops, 1);
    cr_assert_eq(tg_graph_scope_cost(g, 0, &all), TG_OK);
    cr_assert_eq(all.flops, 2.0 * 8 * 3 * 5 + 8 * 5 + 40 + 40 + 5 * 24);
    cr_assert_eq(all.ops, 5);
    /* bad arguments */
    cr_assert_eq(tg_graph_scope_cost(g, 7, &c), TG_ERR_INVALID);
    cr_assert(strstr(tg_last_error(), "scope 7 out of range"), "%s", tg_last_error());
    cr_assert_eq(tg_node_cost(NULL, &c), TG_ERR_INVALID);
    cr_assert(isnan(tg_node_flops(NULL)));
    tg_graph_free(g);
    tg_params_free(ps);
}

/* Every registered layer: a profiled summary with FLOPs and times, and a
 * profiled diagram with its legend (one step each, default configs). */
Test(summary, every_layer_profiles)
{
    tt_deadline(60);
    static char out[OUT_MAX], err[4096];
    for (int i = 0; i < tg_layer_class_count(); i++) {
        const char *name = tg_layer_class_at(i)->name;
        int rc = tt_run_tool_out(TT_ARGS("summary", name, "--profile", "--steps", "1", "--csv"),
                                 out, sizeof out, err, sizeof err);
        cr_assert_eq(rc, 0, "summary %s: %s", name, err);
        cr_assert(!strncmp(out, MEM_CSV_HEAD ",forward_ms,backward_ms\n",
                           strlen(MEM_CSV_HEAD) + 24), "%s: %s", name, out);
        const char *q = strchr(strchr(strchr(out, '\n') + 1, '"') + 1, '"');
        double params, flops, bytes, mem[5], fwd, bwd;
        cr_assert_eq(sscanf(q, "\",%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &params, &flops,
                            &bytes, &mem[0], &mem[1], &mem[2], &mem[3], &mem[4], &fwd, &bwd), 10,
                     "%s: %s", name, out);
        cr_assert(flops > 0 && bytes > 0 && fwd > 0 && bwd > 0, "%s: %s", name, out);
        cr_assert(mem[0] == 4 * params && mem[3] > 0 && mem[4] > 0, "%s: %s", name, out);
        rc = tt_run_tool_out(TT_ARGS("dot", name, "--profile", "--steps", "1", "--depth", "1",
                                     "-o", "-"),
                             out, sizeof out, err, sizeof err);
        cr_assert_eq(rc, 0, "dot %s: %s", name, err);
        cr_assert(strstr(out, "legend [label=") && strstr(out, "\\nprofiled: "), "%s", name);
    }
}

Test(summary, a_gpt_size_too_large_is_named_with_its_bound)
{
    tt_expect_cli_error(TT_ARGS("summary", "gpt", "--set", "block_size=9223372036854775807"),
                        "gpt: block_size 9223372036854775807 is too large",
                        "(at most 576460752303423487 with this n_embd)");
    tt_expect_cli_error(TT_ARGS("summary", "gpt", "--set", "vocab_size=9223372036854775807"),
                        "gpt: vocab_size 9223372036854775807 is too large", NULL);
}

/* ---- issue 31, item 7: a model too large for memory is counted, never allocated ---- */

/* The tool's address space capped well below what allocating would take, so
 * a regression fails (out of memory) instead of taking the machine down.
 * Not under AddressSanitizer: its shadow memory needs terabytes of address
 * space, and its allocator returns NULL for such a request (make asan sets
 * allocator_may_return_null=1) instead of touching memory. */
static void cap_address_space(void)
{
    unsetenv("TGRAPH_MEM_LIMIT");
#ifndef TT_ASAN
    struct rlimit rl = {.rlim_cur = (rlim_t)4 << 30, .rlim_max = (rlim_t)4 << 30};
    struct rlimit old;
    cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
    if (old.rlim_max != RLIM_INFINITY && old.rlim_max < rl.rlim_max) rl = old;
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
#endif
}

/* crossformer at d_model=100000: 800 billion parameters, 6.4 TB of values
 * and gradients. summary prints the counts from the shapes, exit 0. */
Test(summary, huge_model_counts_without_allocating)
{
    static char out[8192], err[4096];
    cap_address_space();
    int rc = tt_run_tool_out(TT_ARGS("summary", "crossformer", "--set", "d_model=100000"), out,
                             sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "Parameters: 800,055,200,196 (trainable 800,055,200,196)"), "%s", out);
    cr_assert(strstr(out, "would not fit"), "%s", out);
    /* d_model=1e9: a weight of 1e18 elements cannot even be counted in bytes */
    rc = tt_run_tool_out(TT_ARGS("summary", "crossformer", "--set", "d_model=1000000000"), out,
                         sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "query_projection.weight': element count 1000000000000000000 is too "
                          "large"), "%s", err);
}

/* The commands that allocate a model refuse it first: exit 2 with the bytes. */
Test(summary, huge_model_refused_before_allocating)
{
    static char out[8192], err[4096];
    cap_address_space();
    const char *dir = tt_path("run");
    int rc = tt_run_tool_out(TT_ARGS("train", "--model", "crossformer", "--set", "d_model=100000",
                                     "--out-dir", dir), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "parameters need "), "%s", err);
    cr_assert(strstr(err, " bytes (6.4e+03 GB: values and gradients), more than the "), "%s", err);
    cr_assert_neq(access(dir, F_OK), 0, "train made %s", dir);
    rc = tt_run_tool_out(TT_ARGS("bench", "crossformer", "--set", "d_model=100000"), out,
                         sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "crossformer: its 800055200196 parameters need 6400441601568 bytes"),
              "%s", err);
}

/* TGRAPH_MEM_LIMIT caps it: a small model over a 1 KiB cap is refused by
 * gradcheck, counted by summary; a bad value is an error. */
Test(summary, mem_limit_env)
{
    static char out[8192], err[4096];
    cr_assert_eq(setenv("TGRAPH_MEM_LIMIT", "1K", 1), 0);
    int rc = tt_run_tool_out(TT_ARGS("gradcheck", "linear_forecast"), out, sizeof out, err,
                             sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "more than the 1024 bytes (1.02e-06 GB) available (TGRAPH_MEM_LIMIT)"),
              "%s", err);
    rc = tt_run_tool_out(TT_ARGS("summary", "linear_forecast"), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "No module table"), "%s", out);
    cr_assert_eq(setenv("TGRAPH_MEM_LIMIT", "lots", 1), 0);
    rc = tt_run_tool_out(TT_ARGS("summary", "linear_forecast"), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "TGRAPH_MEM_LIMIT=lots: expected a byte count"), "%s", err);
    unsetenv("TGRAPH_MEM_LIMIT");
}

/* The memory the parameters leave caps the step's plan: bench and train
 * refuse a plan above it (exit 2, the bytes named) before allocating it;
 * summary still prints its table and says the plan does not fit. */
Test(summary, a_plan_over_the_memory_left_is_refused)
{
    static char out[16384], err[4096];
    cr_assert_eq(setenv("TGRAPH_MEM_LIMIT", "200M", 1), 0);
    int rc = tt_run_tool_out(TT_ARGS("bench", "gpt", "--set", "B=20000"), out, sizeof out, err,
                             sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    /* the figure holds kernel scratch, which depends on the instruction set */
    cr_assert(strstr(err, "plan: 68 nodes need ") && strstr(err, "more than the limit of"), "%s",
              err);
    rc = tt_run_tool_out(TT_ARGS("summary", "gpt", "--set", "B=20000"), out, sizeof out, err,
                         sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "Training step's planned memory: not planned: plan: 68 nodes need ") &&
              strstr(out, "lm_head"), "%s", out);
    cr_assert_eq(setenv("TGRAPH_MEM_LIMIT", "30M", 1), 0);
    rc = tt_run_tool_out(TT_ARGS("train", "--model", "crossformer", "--set", "d_model=128",
                                 "--epochs", "1", "--out-dir", tt_path("run")),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert(strstr(err, "nodes need ") && strstr(err, "lower the sizes or --batch-size"), "%s",
              err);
    unsetenv("TGRAPH_MEM_LIMIT");
}

/* ---- issue 35, section 2: memory per module ---- */

/* One CSV row of `tgraph summary --csv`, by module path. */
typedef struct {
    double params, flops, kept, param_b, grad_b, adam_b, peak_f, peak_b;
    int    depth;
} mem_row;


/* The row of module `name` in CSV text `out`; fails the test if there is none. */
static mem_row csv_row(const char *out, const char *name)
{
    char want[128];
    snprintf(want, sizeof want, "\n%s,", name);
    const char *at = strstr(out, want);
    cr_assert_not_null(at, "no row %s in:\n%s", name, out);
    mem_row r;
    cr_assert_eq(sscanf(at + strlen(want), "%d,", &r.depth), 1, "%s", at);
    const char *q = strchr(strchr(at + 1, '"') + 1, '"');
    cr_assert_eq(sscanf(q, "\",%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf", &r.params, &r.flops, &r.kept,
                        &r.param_b, &r.grad_b, &r.adam_b, &r.peak_f, &r.peak_b), 8, "%s", at);
    return r;
}

static void run_ok(const char *const *args, char *out, size_t outlen)
{
    static char err[8192];
    int rc = tt_run_tool_out(args, out, outlen, err, sizeof err);
    cr_assert_eq(rc, 0, "%s failed (%d): %s", args[0], rc, err);
}

/* The text, CSV and Markdown forms carry the memory columns and the total. */
Test(summary, memory_columns_in_every_format)
{
    tt_deadline(60);
    static char out[OUT_MAX];
    run_ok(TT_ARGS("summary", "tsa", "--depth", "1"), out, sizeof out);
    const char *hdr = strstr(out, "\nModule ");
    cr_assert_not_null(hdr, "%s", out);
    const char *cols[] = {"Params B", "Grads B", "Adam B", "Kept", "Peak fwd", "Peak bwd"};
    const char *at = hdr;
    for (int i = 0; i < 6; i++) {   /* in this order, in the header line */
        const char *c = strstr(at, cols[i]);
        cr_assert(c && c < strchr(hdr + 1, '\n'), "no %s in header:\n%s", cols[i], out);
        at = c;
    }
    cr_assert(strstr(out, "\nTraining step's memory: ") && strstr(out, " + Adam state ") &&
              strstr(out, "(2 moments a parameter, tgraph train's default optimizer)") &&
              strstr(out, " + the plan "), "%s", out);
    run_ok(TT_ARGS("summary", "tsa", "--depth", "1", "--markdown"), out, sizeof out);
    cr_assert(!strncmp(out, "| Module | Output shape | Params | FLOPs fwd | Params B | Grads B | "
                            "Adam B | Kept | Peak fwd | Peak bwd |\n|---|---:|", 104), "%s", out);
    cr_assert(strstr(out, "\n- Training step's memory: "), "%s", out);
    run_ok(TT_ARGS("summary", "tsa", "--depth", "1", "--csv"), out, sizeof out);
    cr_assert(!strncmp(out, MEM_CSV_HEAD "\n", strlen(MEM_CSV_HEAD) + 1), "%s", out);
    mem_row r = csv_row(out, "time_attention");
    cr_assert(r.peak_f > 0 && r.peak_b > 0 && r.param_b == 4 * 288, "%s", out);
}

/* linear_forecast B=2 enc_in=3 seq_len=4 pred_len=5, worked out by hand.
 * Nodes: 0 x [2,4,3] (input, no grad), 1 permute [2,3,4], 2 bias [5],
 * 3 weight [5,4], 4 linear [2,3,5], 5 permute [2,5,3] (the output); N = 6,
 * node i's forward at t = i, backward at 12 - i. Every buffer takes 128
 * bytes (24 or 30 floats, 64-aligned):
 *   value 1 [1, 8]  (linear's backward reads its input for dW)
 *   value 4 [4, 5]  (read by the permute only)
 *   value 5 [5, 13] (the output: to the end)
 *   grad 5  [6, 7]  (from the backward's start to its own backward)
 *   grad 4  [7, 8]  (written by node 5's backward, read by its own)
 * Live bytes per t = 0..13: 0 128 128 128 256 384 384 512 384 128 ... 128.
 * Root: forward peak 384 (t = 5), backward 512 (t = 7); Linear (node 4):
 * 256 at t = 4, 384 at t = 8. Placement (largest first, then creation
 * order: value 1, value 4, grad 4, value 5, grad 5) at 0, 128, 128, 256,
 * 384: a 512-byte block, plus linear's 40 bytes of scratch (5 bias partial
 * sums in double). Parameters 25 floats: 100 B, as many for gradients, 200 B
 * of Adam; input 96 B; total 400 + 96 + 552 = 1048 B. */
static const char *const lf_sets[] = {"B=2", "enc_in=3", "seq_len=4", "pred_len=5"};

Test(summary, linear_forecast_memory_by_hand)
{
    tt_deadline(30);
    static char out[OUT_MAX];
    run_ok(TT_ARGS("summary", "linear_forecast", "--set", lf_sets[0], lf_sets[1], lf_sets[2],
                   lf_sets[3], "--csv"),
           out, sizeof out);
    cr_assert(strstr(out, "\nlinear_forecast,0,\"[2, 5, 3]\",25,270,336,100,100,200,384,512\n"),
              "%s", out);
    cr_assert(strstr(out, "\nLinear,1,\"[2, 3, 5]\",25,270,120,100,100,200,256,384\n"), "%s", out);
    run_ok(TT_ARGS("summary", "linear_forecast", "--set", lf_sets[0], lf_sets[1], lf_sets[2],
                   lf_sets[3]),
           out, sizeof out);
    cr_assert(strstr(out, "\nTraining step's planned memory: 552 B (") &&
              strstr(out, "at most 384 B of it live in the forward, 512 B in the backward"),
              "%s", out);
    cr_assert(strstr(out, "\nTraining step's memory: 1.02 KB = parameters 100 B + gradients 100 B "
                          "+ Adam state 200 B (2 moments a parameter, tgraph train's default "
                          "optimizer) + inputs 96 B + the plan 552 B ("), "%s", out);
}

/* The same graph in the library: tg_graph_plan_live_bytes at every time. */
Test(summary, plan_live_bytes_by_hand)
{
    tt_layer_opts o = {.dtype = TG_F32, .training = true, .no_grad = true};
    tt_layer t = tt_layer_new("linear_forecast", lf_sets, 4, &o);
    tg_graph_set_share_values(t.g, true);
    cr_assert_eq(tg_graph_node_count(t.g), 6);
    tg_clear_error();
    cr_assert_eq(tg_graph_plan_live_bytes(t.g, 0), 0);
    cr_assert(strstr(tg_last_error(), "not planned yet"), "%s", tg_last_error());
    cr_assert_eq(tg_graph_plan(t.g), TG_OK, "%s", tg_last_error());
    static const size_t want[14] = {0, 128, 128, 128, 256, 384, 384, 512, 384,
                                    128, 128, 128, 128, 128};
    for (int64_t k = 0; k < 14; k++)
        cr_assert_eq(tg_graph_plan_live_bytes(t.g, k), want[k], "t = %lld: %zu, want %zu",
                     (long long)k, tg_graph_plan_live_bytes(t.g, k), want[k]);
    cr_assert_eq(tg_graph_planned_bytes(t.g), 552);
    tg_clear_error();
    cr_assert_eq(tg_graph_plan_live_bytes(t.g, 14), 0);
    cr_assert(strstr(tg_last_error(), "time 14 is outside [0, 13]"), "%s", tg_last_error());
    cr_assert_eq(tg_graph_plan_live_bytes(t.g, -1), 0);
    cr_assert(strstr(tg_last_error(), "time -1 is outside"), "%s", tg_last_error());
    cr_assert_eq(tg_graph_plan_live_bytes(NULL, 0), 0);
    cr_assert(strstr(tg_last_error(), "g is NULL"), "%s", tg_last_error());
    /* the bytes held move with what the library allocates */
    size_t before = tg_alloc_live_bytes();
    tg_tensor *x = tg_tensor_new(TG_F32, 1, (int64_t[]){1 << 16});
    cr_assert_not_null(x);
#ifdef __GLIBC__
    cr_assert_geq(tg_alloc_live_bytes(), before + (4 << 16));
    cr_assert_geq(tg_alloc_peak_bytes(), tg_alloc_live_bytes());
#endif
    tg_tensor_free(x);
    cr_assert_eq(tg_alloc_live_bytes(), before);
    tg_alloc_reset_peak();
    cr_assert_eq(tg_alloc_peak_bytes(), tg_alloc_live_bytes());
    tt_layer_free(&t);
}

/* Per-module bytes: gradients as many as parameters, Adam twice (float32);
 * the modules one level down and the layer's own parameters (`own` floats)
 * hold every parameter, and their peaks are the
 * plan's within the layer's; the layer's peaks are the plan's own, from the
 * same graph built in the library. */
static void check_module_sums(const char *layer, const char *const *sets, int n_sets,
                              const char *const *mods, int n_mods, double own)
{
    static char out[OUT_MAX];
    const char *args[32] = {"summary", layer, "--csv", "--depth", "1"};
    int n = 5;
    for (int i = 0; i < n_sets; i++) args[n++] = "--set", args[n++] = sets[i];
    args[n] = NULL;
    run_ok(args, out, sizeof out);
    mem_row top = csv_row(out, layer), sum = {.param_b = 4 * own, .grad_b = 4 * own,
                                              .adam_b = 8 * own};
    for (int i = 0; i < n_mods; i++) {
        mem_row r = csv_row(out, mods[i]);
        cr_assert(r.depth == 1 && r.param_b == 4 * r.params && r.grad_b == r.param_b &&
                  r.adam_b == 2 * r.param_b, "%s %s: %s", layer, mods[i], out);
        cr_assert(r.peak_f <= top.peak_f && r.peak_b <= top.peak_b, "%s %s", layer, mods[i]);
        sum.param_b += r.param_b, sum.grad_b += r.grad_b, sum.adam_b += r.adam_b;
    }
    cr_assert(top.param_b == 4 * top.params && top.param_b == sum.param_b &&
              top.grad_b == sum.grad_b && top.adam_b == sum.adam_b,
              "%s: the modules' bytes do not add up to the layer's:\n%s", layer, out);
    /* the plan's peaks over every forward time and every backward time */
    tt_layer_opts o = {.dtype = TG_F32, .training = true, .no_grad = true};
    tt_layer t = tt_layer_new(layer, sets, n_sets, &o);
    tg_graph_set_share_values(t.g, true);
    cr_assert_eq(tg_graph_plan(t.g), TG_OK, "%s", tg_last_error());
    int64_t N = tg_graph_node_count(t.g);
    size_t fwd = 0, bwd = 0;
    for (int64_t k = 0; k <= 2 * N + 1; k++) {
        size_t b = tg_graph_plan_live_bytes(t.g, k);
        if (k < N && b > fwd) fwd = b;
        if (k >= N && b > bwd) bwd = b;
    }
    cr_assert_leq(fwd > bwd ? fwd : bwd, tg_graph_planned_bytes(t.g));
    cr_assert(top.peak_f == (double)fwd && top.peak_b == (double)bwd,
              "%s: summary's peaks %.0f / %.0f, the plan's %zu / %zu", layer, top.peak_f,
              top.peak_b, fwd, bwd);
    tt_layer_free(&t);
}

Test(summary, module_bytes_add_up_and_root_peaks_are_the_plans)
{
    tt_deadline(60);
    static const char *const gpt_sets[] = {"n_embd=32", "n_head=4", "T=8", "B=3"};
    check_module_sums("gpt", gpt_sets, 4, (const char *const[]){"transformer", "lm_head"}, 2, 0);
    /* the layer's own: enc_pos_embedding [1, 4, 3, 16], dec_pos_embedding [1, 4, 2, 16] */
    static const char *const cf_sets[] = {"d_model=16", "enc_in=4"};
    check_module_sums("crossformer", cf_sets, 2,
                      (const char *const[]){"enc_value_embedding", "pre_norm", "encoder",
                                            "decoder"}, 4, 4 * 3 * 16 + 4 * 2 * 16);
    static const char *const dl_sets[] = {"enc_in=3", "seq_len=48", "pred_len=24"};
    check_module_sums("dlinear", dl_sets, 2,
                      (const char *const[]){"decompsition", "Linear_Seasonal", "Linear_Trend"},
                      3, 0);
}

/* "Training step's memory: 15.4 MB" in bytes. */
static double summary_total(const char *out)
{
    const char *at = strstr(out, "\nTraining step's memory: ");
    cr_assert_not_null(at, "%s", out);
    double v;
    char unit[8];
    cr_assert_eq(sscanf(at, "\nTraining step's memory: %lf %7s", &v, unit), 2, "%s", at);
    static const char *const units[] = {"B", "KB", "MB", "GB"};
    for (int u = 0; u < 4; u++, v *= 1024)
        if (!strcmp(unit, units[u])) return v;
    cr_assert_fail("unit %s", unit);
    return 0;
}

/* summary's total against what bench measures: the most tgraph's allocator
 * held during its training steps (train_peak_alloc_mb), within 10%, for
 * three models at a size where the plan is megabytes. What it leaves out is
 * the graph's bookkeeping (nodes, attributes: about 1 KB a node). */
Test(summary, total_is_the_peak_bench_measures)
{
    tt_deadline(300);
    static const char *const cases[3][7] = {
        {"crossformer", "d_model=64", "B=16", "seq_len=96", "pred_len=24", "enc_in=7", NULL},
        {"gpt", "n_embd=64", "n_head=4", "B=8", "T=64", "block_size=64", "vocab_size=128"},
        {"tsa", "d_model=64", "n_heads=4", "b=8", "ts_d=7", "seg_num=12", NULL}};
    static char out[OUT_MAX];
    for (int c = 0; c < 3; c++) {
        const char *args[40] = {"summary", cases[c][0]};
        int n = 2;
        for (int i = 1; i < 7 && cases[c][i]; i++) args[n++] = "--set", args[n++] = cases[c][i];
        args[n] = NULL;
        run_ok(args, out, sizeof out);
        double predicted = summary_total(out);
        args[0] = "bench";
        const char *more[] = {"--min-time", "0", "--warmup", "0", "--threads", "1", "-q"};
        for (int i = 0; i < 7; i++) args[n++] = more[i];
        args[n] = NULL;
        run_ok(args, out, sizeof out);
        const char *m = strstr(out, "\"train_peak_alloc_mb\":");
        cr_assert_not_null(m, "%s", out);
        double measured = strtod(m + 22, NULL) * 1024 * 1024;
#ifndef __GLIBC__
        cr_skip_test("the allocator's bytes are counted with glibc only");
#endif
        cr_assert(fabs(predicted - measured) <= 0.10 * measured,
                  "%s: summary says %.0f bytes, bench measured %.0f", cases[c][0], predicted,
                  measured);
        cr_assert_gt(predicted, 5e6, "%s: %.0f bytes: too small to tell", cases[c][0], predicted);
    }
}
