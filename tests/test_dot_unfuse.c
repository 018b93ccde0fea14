/*
 * test_dot_unfuse.c - `tgraph dot --unfuse` (tg_graph_set_unfused): a fused
 * sdpa records, inside a scope "sdpa", the very chain FullAttention records
 * when it returns the weights (same ops, attributes and shapes, compared node
 * by node with a graph built that way), runs to the same output and gradients
 * as the fused op, and the CLI draws it as a cluster "sdpa".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_case.h"
#include "op.h"

/* A registry layer (sets: KEY=VALUE), parameters from a seeded RNG, inputs
 * requiring grad; dtype dt; unfused or not. */
static tt_layer build(const char *layer, const char *const *sets, int n_sets, tg_dtype dt,
                      bool unfused)
{
    return tt_layer_new(layer, sets, n_sets,
                        &(tt_layer_opts){.dtype = dt, .init = true, .seed = 7, .unfused = unfused});
}

/* ---- a node as text: op (or leaf kind), attribute, shapes in and out ---- */

static void node_text(const tg_node *n, char *buf, size_t len)
{
    char attr[300] = "", sh[128];
    const tg_tensor *v = tg_node_value(n);
    if (n->kind == TG_NODE_OP && n->op->describe) n->op->describe(n, attr, sizeof attr);
    size_t at = (size_t)snprintf(buf, len, "%s | %s | %s <-",
                                 n->kind == TG_NODE_OP ? n->op->name : tg_node_name(n), attr,
                                 tg_shape_str(v->rank, v->shape, sh, sizeof sh));
    for (int k = 0; k < n->n_in && at < len; k++) {
        const tg_tensor *a = tg_node_value(n->in[k]);
        at += (size_t)snprintf(buf + at, len - at, " %s", tg_shape_str(a->rank, a->shape, sh,
                                                                        sizeof sh));
    }
}

/* The nodes of g in scopes whose path ends with suffix, one text line each,
 * from the first node of the (occurrence)-th such scope to that scope's last. */
typedef struct { char line[16][512]; int n; } chain;

static chain chain_in(const tg_graph *g, const char *suffix, int occurrence)
{
    chain c = {.n = 0};
    int seen = -1, want = -1;
    for (int s = 0; s < tg_graph_scope_count(g); s++) {
        const char *p = tg_graph_scope_path(g, s);
        size_t lp = strlen(p), ls = strlen(suffix);
        if (lp >= ls && !strcmp(p + lp - ls, suffix) && ++seen == occurrence) want = s;
    }
    cr_assert_geq(want, 0, "no scope #%d ending in %s", occurrence, suffix);
    for (int i = 0; i < tg_graph_node_count(g); i++) {
        const tg_node *n = tg_graph_node(g, i);
        if (tg_node_scope(n) != want) continue;
        cr_assert_lt(c.n, 16);
        node_text(n, c.line[c.n++], sizeof c.line[0]);
    }
    return c;
}

static void assert_same_chain(const chain *got, const chain *want, const char *what)
{
    for (int i = 0; i < got->n && i < want->n; i++)
        cr_assert_str_eq(got->line[i], want->line[i], "%s: node %d of the chain", what, i);
    cr_assert_eq(got->n, want->n, "%s: %d nodes unfused, %d in FullAttention's chain", what,
                 got->n, want->n);
}

/* attention_layer --unfuse: its sdpa cluster holds FullAttention's chain
 * (built with output_attention=true, which records it), with and without the
 * causal mask. */
Test(dot_unfuse, attention_layer_chain_is_full_attentions)
{
    const char *sets[][2] = {{"mask_flag=false", "output_attention=false"},
                             {"mask_flag=true", "output_attention=false"}};
    for (int m = 0; m < 2; m++) {
        tt_layer u = build("attention_layer", sets[m], 2, TG_F32, true);
        const char *ref_sets[] = {sets[m][0], "output_attention=true"};
        tt_layer r = build("attention_layer", ref_sets, 2, TG_F32, false);
        chain cu = chain_in(u.g, "inner_attention.sdpa", 0);
        chain cr = chain_in(r.g, "inner_attention", 0);
        cr_assert_eq(cu.n, m ? 6 : 4, "%s: %d nodes", sets[m][0], cu.n);   /* + const, mask */
        cr_assert(strstr(cu.line[0], "einsum | blhe,bshe->bhls | [2, 2, 6, 6] <- [2, 6, 2, 8] "
                                     "[2, 6, 2, 8]"), "%s", cu.line[0]);
        cr_assert(strstr(cu.line[cu.n - 1], "einsum | bhls,bshd->blhd | [2, 6, 2, 8] <-"), "%s",
                  cu.line[cu.n - 1]);
        assert_same_chain(&cu, &cr, sets[m][0]);
        /* the fused graph has no such scope, one sdpa node instead */
        tt_layer f = build("attention_layer", sets[m], 2, TG_F32, false);
        chain cf = chain_in(f.g, "inner_attention", 0);
        cr_assert_eq(cf.n, 1);
        cr_assert(!strncmp(cf.line[0], "sdpa |", 6), "%s", cf.line[0]);
        tt_layer_free(&f);
        tt_layer_free(&u);
        tt_layer_free(&r);
    }
}

/* tsa: each of its three sdpa clusters holds the chain FullAttention records
 * on inputs of the same shapes (TSA's FullAttention(False, scale=None,
 * attention_dropout=dropout)). */
Test(dot_unfuse, tsa_chains_are_full_attentions)
{
    tt_layer u = build("tsa", NULL, 0, TG_F32, true);
    int clusters = 0;
    for (int s = 0; s < tg_graph_scope_count(u.g); s++)
        clusters += !strcmp(tg_graph_scope_name(u.g, s), "sdpa");
    cr_assert_eq(clusters, 3, "%d sdpa scopes in tsa", clusters);
    for (int i = 0; i < clusters; i++) {
        /* the chain's inputs: q, k from its first node, v from its last */
        const tg_node *first = NULL, *last = NULL;
        tg_graph *rg = tg_graph_new(TG_F32);
        int found = -1, prev = -1;
        for (int k = 0; k < tg_graph_node_count(u.g); k++) {
            const tg_node *n = tg_graph_node(u.g, k);
            if (strcmp(tg_graph_scope_name(u.g, tg_node_scope(n)), "sdpa")) continue;
            if (tg_node_scope(n) != prev) found++, prev = tg_node_scope(n);
            if (found != i) continue;
            if (!first) first = n;
            last = n;
        }
        cr_assert(first && last && first->n_in == 2 && last->n_in == 2);
        tg_node *qkv[3];
        const tg_node *src[3] = {first->in[0], first->in[1], last->in[1]};
        for (int k = 0; k < 3; k++) {
            const tg_tensor *v = tg_node_value(src[k]);
            qkv[k] = tg_input(rg, "x", TG_F32, v->rank, v->shape);
        }
        tg_full_attention_config fc = tg_full_attention_defaults();
        fc.mask_flag = false;
        fc.attention_dropout = 0.1;
        fc.output_attention = true;
        tg_node *attn = NULL;
        cr_assert_not_null(tg_full_attention(rg, &fc, "ref", qkv[0], qkv[1], qkv[2], NULL,
                                              &attn), "%s", tg_graph_error(rg));
        cr_assert_not_null(attn);
        chain want = chain_in(rg, "ref", 0);
        chain got = chain_in(u.g, ".sdpa", i);
        assert_same_chain(&got, &want, "tsa");
        tg_graph_free(rg);
    }
    tt_layer_free(&u);
}

/* Random inputs, a training forward (dropout on, the graph RNG seeded) and a
 * backward from sum(y * w) for fixed w; y and x's gradient into the arrays. */
static void run_layer(tt_layer *b, uint64_t seed, tg_tensor **y, tg_tensor **dx)
{
    tg_graph_set_training(b->g, true);
    tg_graph_seed(b->g, seed);
    tg_tensor *x = (tg_tensor *)tg_node_value(b->in[0]);
    tt_randn(x, 11);
    cr_assert_eq(tg_graph_forward(b->g), TG_OK, "%s", tg_last_error());
    const tg_tensor *v = tg_node_value(b->out.y);
    tg_tensor *dy = tg_tensor_new(v->dtype, v->rank, v->shape);
    tt_randn(dy, 12);
    cr_assert_eq(tg_graph_backward(b->g, b->out.y, dy), TG_OK, "%s", tg_last_error());
    *y = tg_tensor_clone(v);
    *dx = tg_tensor_clone(tg_node_grad(b->in[0]));
    tg_tensor_free(dy);
}

/* The unfused chain runs to the fused op's results: the same output and input
 * gradient (float64, dropout on with the same RNG state: the same mask), and
 * the same parameter gradients; causal and not. */
Test(dot_unfuse, runs_like_the_fused_op)
{
    tt_deadline(10);
    const char *sets[][2] = {{"mask_flag=false", "attention_dropout=0.3"},
                             {"mask_flag=true", "attention_dropout=0.3"}};
    for (int m = 0; m < 2; m++) {
        tt_layer f = build("attention_layer", sets[m], 2, TG_F64, false);
        tt_layer u = build("attention_layer", sets[m], 2, TG_F64, true);
        tg_tensor *yf, *dxf, *yu, *dxu;
        run_layer(&f, 99, &yf, &dxf);
        run_layer(&u, 99, &yu, &dxu);
        tt_assert_close(yu, yf, 1e-12, 1e-10, sets[m][0]);
        tt_assert_close(dxu, dxf, 1e-12, 1e-10, sets[m][0]);
        cr_assert_eq(tg_params_count(f.ps), tg_params_count(u.ps));
        for (int i = 0; i < tg_params_count(f.ps); i++)
            tt_assert_close(&tg_params_at(u.ps, i)->grad, &tg_params_at(f.ps, i)->grad, 1e-12,
                            1e-10, tg_params_at(f.ps, i)->name);
        /* dropout did drop: the result differs from an eval forward's */
        tg_graph_set_training(u.g, false);
        cr_assert_eq(tg_graph_forward(u.g), TG_OK);
        const tg_tensor *ye = tg_node_value(u.out.y);
        double diff = 0;
        for (int64_t k = 0; k < ye->numel; k++) {
            double d = ((const double *)ye->data)[k] - ((const double *)yu->data)[k];
            diff += d < 0 ? -d : d;
        }
        cr_assert_gt(diff, 1e-6, "dropout changed nothing");
        tg_tensor_free(yf), tg_tensor_free(dxf), tg_tensor_free(yu), tg_tensor_free(dxu);
        tt_layer_free(&f);
        tt_layer_free(&u);
    }
}

/* The CLI: --unfuse draws each sdpa as a cluster of its chain; the default
 * draws the one op; a misspelt --unfuse is refused. */
Test(dot_unfuse, cli)
{
    tt_deadline(10);
    char err[512];
    const char *fused = tt_path("tsa.dot"), *unfused = tt_path("tsa_unfused.dot");
    cr_assert_eq(tt_run_tool(TT_ARGS("dot", "tsa", "-o", fused), err, sizeof err), 0, "%s", err);
    cr_assert_eq(tt_run_tool(TT_ARGS("dot", "tsa", "--unfuse", "--backward", "-o", unfused), err,
                             sizeof err), 0, "%s", err);
    char *tf = tt_slurp(fused, NULL), *tu = tt_slurp(unfused, NULL);
    int nf = 0, nu = 0, ef = 0, eu = 0;
    for (const char *p = tf; (p = strstr(p, "label=\"sdpa\"")); p++) nf++;
    for (const char *p = tu; (p = strstr(p, "label=\"sdpa\"")); p++) nu++;
    for (const char *p = tf; (p = strstr(p, "einsum\\nblhe,bshe->bhls")); p++) ef++;
    for (const char *p = tu; (p = strstr(p, "einsum\\nbhls,bshd->blhd")); p++) eu++;
    cr_assert_eq(nf, 0, "fused: %d sdpa clusters", nf);
    cr_assert_eq(ef, 0);
    cr_assert_eq(nu, 3, "unfused: %d sdpa clusters", nu);
    cr_assert_eq(eu, 3);
    cr_assert(strstr(tu, "subgraph cluster_"), "no clusters");
    cr_assert(strstr(tu, "label=\"grad softmax\\n[6, 2, 5, 5]\""), "no gradient of the softmax");
    cr_assert(strstr(tf, "label=\"sdpa\\nscale="), "the fused diagram has no sdpa node");
    free(tf);
    free(tu);
    tt_expect_cli_error(TT_ARGS("dot", "tsa", "--unfused", "-o", fused),
                        "unknown option '--unfused'", "tgraph dot --help");
}
