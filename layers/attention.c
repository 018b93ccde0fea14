/*
 * attention.c - FullAttention and AttentionLayer as graph builders.
 *
 * Each builder reads like TSL's forward, line for line (LAYERS.md 1-2):
 *
 *   scores = einsum("blhe,bshe->bhls", queries, keys)
 *   scores.masked_fill_(attn_mask, -inf)              # if mask_flag
 *   A = dropout(softmax(scale * scores, dim=-1))
 *   V = einsum("bhls,bshd->blhd", A, values)
 *
 * When A is not returned (output_attention false) and the mask is the causal
 * one or none, the four steps are one tg_sdpa node (ops/sdpa.h): the same
 * maths and the same dropout stream, without storing the [B, H, L, S] weights.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "attention.h"
#include "op.h"
#include "ops.h"

/* ------------------------------------------------------------ FullAttention */

tg_full_attention_config tg_full_attention_defaults(void)
{
    tg_full_attention_config c;
    tg_keys_defaults(tg_full_attention_class.keys, &c, sizeof c);   /* the key table below */
    c.output_attention = false;   /* TSL's FullAttention(output_attention=False); the table's
                                     true is the oracle cases' (make_case.py --list) */
    return c;
}

tg_node *tg_full_attention(tg_graph *g, const tg_full_attention_config *c, const char *name,
                           tg_node *queries, tg_node *keys, tg_node *values, tg_node *attn_mask,
                           tg_node **attn)
{
    TG__BUILDER_NONNULL(g, c);
    TG__BUILDER_NONNULL(g, queries);
    TG__BUILDER_NONNULL(g, keys);
    TG__BUILDER_NONNULL(g, values);
    tg_node *in[3] = {queries, keys, values};
    if (attn) *attn = NULL;
    if (!tg_builder_check(g, "full_attention", 3, in)) return NULL;
    const tg_tensor *q = tg_node_value(queries), *k = tg_node_value(keys);
    if (q->rank != 4 || k->rank != 4 || tg_node_value(values)->rank != 4)
        return tg_graph_fail(g, "full_attention: queries, keys and values must be 4-d [B, L, H, E] "
                             "/ [B, S, H, E] / [B, S, H, D], got %d-d, %d-d and %d-d", q->rank,
                             k->rank, tg_node_value(values)->rank);
    const int64_t B = q->shape[0], L = q->shape[1], S = k->shape[1], E = q->shape[3];
    const double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)E);   /* scale or 1/sqrt(E) */
    if (c->mask_flag && !attn_mask && L != S)
        return tg_graph_fail(g, "full_attention: the causal mask (TriangularCausalMask) is "
                             "[B, 1, L, L], so it needs L == S; got L=%lld, S=%lld",
                             (long long)L, (long long)S);
    if (tg_scope_push(g, name)) return NULL;
    if (!attn_mask && !c->output_attention) {
        /* A is not wanted: the same maths in one op that never stores it */
        tg_node *V = tg_sdpa(g, queries, keys, values, c->mask_flag, scale, c->attention_dropout);
        tg_scope_pop(g);
        return V;
    }

    tg_node *scores = tg_einsum(g, "blhe,bshe->bhls", 2, (tg_node *[]){queries, keys}); /* [B,H,L,S] */
    if (c->mask_flag) {
        if (!attn_mask) attn_mask = tg_causal_mask(g, B, L);          /* [B, 1, L, L] */
        scores = tg_masked_fill(g, scores, attn_mask, -INFINITY);
    }
    tg_node *A = tg_dropout(g, tg_softmax_scaled(g, scores, -1, scale), c->attention_dropout);
    tg_node *V = tg_einsum(g, "bhls,bshd->blhd", 2, (tg_node *[]){A, values}); /* [B,L,H,D] */
    tg_scope_pop(g);
    if (attn && c->output_attention) *attn = A;
    return V;
}

/* ----------------------------------------------------------- AttentionLayer */

tg_attention_layer_config tg_attention_layer_defaults(void)
{
    tg_attention_layer_config c;
    tg_keys_defaults(tg_attention_layer_class.keys, &c, sizeof c);   /* the key table below */
    return c;
}

static tg_status attention_layer_check(const tg_attention_layer_config *c, const char *who)
{
    if (c->d_model <= 0 || c->n_heads <= 0)
        return tg_set_error(TG_ERR_INVALID, "%s: d_model (%lld) and n_heads (%lld) must be "
                            "positive", who, (long long)c->d_model, (long long)c->n_heads);
    if (c->d_keys < 0 || c->d_values < 0)
        return tg_set_error(TG_ERR_INVALID, "%s: d_keys and d_values must be positive or null",
                            who);
    if (c->d_model / c->n_heads == 0 && (!c->d_keys || !c->d_values))
        return tg_set_error(TG_ERR_INVALID, "%s: d_model // n_heads is 0 (d_model %lld, n_heads "
                            "%lld): give d_keys and d_values", who, (long long)c->d_model,
                            (long long)c->n_heads);
    return TG_OK;
}

tg_status tg_attention_layer_init(tg_attention_layer *l, const tg_attention_layer_config *c,
                                  tg_params *ps, const char *prefix, const char *name,
                                  tg_rng *rng)
{
    TG__NONNULL(l, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char full[TG_NAME_MAX];
    tg_status st;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->c = *c;
    if ((st = attention_layer_check(c, name)) || (st = tg_name_join(full, sizeof full, prefix, name)))
        return st;
    /* d_keys = d_keys or (d_model // n_heads); likewise d_values */
    l->dk = c->d_keys ? c->d_keys : c->d_model / c->n_heads;
    l->dv = c->d_values ? c->d_values : c->d_model / c->n_heads;
    const int64_t H = c->n_heads, d = c->d_model;
    if ((st = tg_linear_mod_init(&l->query_projection, ps, full, "query_projection", d, l->dk * H,
                                 true, rng)) ||
        (st = tg_linear_mod_init(&l->key_projection, ps, full, "key_projection", d, l->dk * H,
                                 true, rng)) ||
        (st = tg_linear_mod_init(&l->value_projection, ps, full, "value_projection", d,
                                 l->dv * H, true, rng)) ||
        (st = tg_linear_mod_init(&l->out_projection, ps, full, "out_projection", l->dv * H, d,
                                 true, rng)))
        return st;
    return TG_OK;
}

tg_node *tg_attention_layer_build(tg_graph *g, const tg_attention_layer *l, tg_node *queries,
                            tg_node *keys, tg_node *values, tg_node *attn_mask, tg_node **attn)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, queries);
    TG__BUILDER_NONNULL(g, keys);
    TG__BUILDER_NONNULL(g, values);
    tg_node *in[3] = {queries, keys, values};
    if (attn) *attn = NULL;
    if (!tg_builder_check(g, "attention_layer", 3, in)) return NULL;
    const tg_tensor *q = tg_node_value(queries), *k = tg_node_value(keys);
    if (q->rank != 3 || k->rank != 3 || tg_node_value(values)->rank != 3)
        return tg_graph_fail(g, "%s: queries, keys and values must be 3-d [B, L, d_model], got "
                             "%d-d, %d-d and %d-d", l->name, q->rank, k->rank,
                             tg_node_value(values)->rank);
    const int64_t B = q->shape[0], L = q->shape[1], S = k->shape[1], H = l->c.n_heads;
    tg_full_attention_config inner = {.mask_flag = l->c.mask_flag, .scale = l->c.scale,
                                      .attention_dropout = l->c.attention_dropout,
                                      .output_attention = l->c.output_attention};
    if (tg_scope_push(g, l->name)) return NULL;
    /* queries = self.query_projection(queries).view(B, L, H, -1), likewise keys and values */
    tg_node *Q = tg_reshape(g, tg_linear_mod_build(g, &l->query_projection, queries), 4,
                            (int64_t[]){B, L, H, l->dk});
    tg_node *K = tg_reshape(g, tg_linear_mod_build(g, &l->key_projection, keys), 4,
                            (int64_t[]){B, S, H, l->dk});
    tg_node *V = tg_reshape(g, tg_linear_mod_build(g, &l->value_projection, values), 4,
                            (int64_t[]){B, S, H, l->dv});
    /* out, attn = self.inner_attention(queries, keys, values, attn_mask) */
    tg_node *out = tg_full_attention(g, &inner, "inner_attention", Q, K, V, attn_mask, attn);
    /* out = out.view(B, L, -1); return self.out_projection(out), attn */
    out = tg_reshape(g, out, 3, (int64_t[]){B, L, H * l->dv});
    tg_node *y = tg_linear_mod_build(g, &l->out_projection, out);
    tg_scope_pop(g);
    return y;
}

/* ---------------------------------------------------------------- registry */

#define FA(f) offsetof(tg_full_attention_config, f)
static const tg_layer_key full_attention_keys[] = {
    {"B", TG_KEY_INT, "8", false, "batch", "[1, inf)", FA(B)},
    {"L", TG_KEY_INT, "6", false, "query length", "[1, inf)", FA(L)},
    {"S", TG_KEY_INT, "6", false, "key/value length", "[1, inf)", FA(S)},
    {"H", TG_KEY_INT, "2", false, "heads", "[1, inf)", FA(H)},
    {"E", TG_KEY_INT, "8", false, "query/key size per head", "[1, inf)", FA(E)},
    {"D", TG_KEY_INT, "8", false, "value size per head", "[1, inf)", FA(D)},
    {"mask_flag", TG_KEY_BOOL, "true", false, "causal mask (needs L == S)", NULL, FA(mask_flag)},
    {"factor", TG_KEY_INT, "5", false, "unused (TSL signature)", NULL, FA(factor)},
    {"scale", TG_KEY_FLOAT, "null", true, "score scale; null: 1/sqrt(E)", NULL, FA(scale)},
    {"attention_dropout", TG_KEY_FLOAT, "0.1", false,
     "dropout on the attention weights (training only)", "[0, 1]", FA(attention_dropout)},
    {"output_attention", TG_KEY_BOOL, "true", false,
     "also return A [B, H, L, S]", NULL, FA(output_attention)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef FA

static tg_status fa_check(const void *vc)
{
    const tg_full_attention_config *c = vc;
    /* sizes >= 1, attention_dropout in [0, 1]: the key table's ranges (tg_keys_resolve) */
    if (c->mask_flag && c->L != c->S)
        return tg_set_error(TG_ERR_INVALID, "full_attention: mask_flag needs L == S (the causal "
                            "mask is [B, 1, L, L]); got L=%lld, S=%lld", (long long)c->L,
                            (long long)c->S);
    return TG_OK;
}

static int fa_inputs(const void *vc, tg_layer_input *in)
{
    const tg_full_attention_config *c = vc;
    in[0] = (tg_layer_input){"q", "B L H E", 4, {c->B, c->L, c->H, c->E}, true, 0};
    in[1] = (tg_layer_input){"k", "B S H E", 4, {c->B, c->S, c->H, c->E}, true, 0};
    in[2] = (tg_layer_input){"v", "B S H D", 4, {c->B, c->S, c->H, c->D}, true, 0};
    return 3;
}

static tg_status fa_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    (void)ps, (void)prefix, (void)rng;
    memcpy(state, cfg, sizeof(tg_full_attention_config));
    return TG_OK;
}

static tg_status fa_build(const void *state, tg_graph *g, tg_node *const *in, tg_layer_outputs *out)
{
    out->y = tg_full_attention(g, state, "full_attention", in[0], in[1], in[2], NULL, &out->attn);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_full_attention_class = {
    .name = "full_attention",
    .summary = "TSL FullAttention: softmax(scale * QK^T [causal mask]) V on head-split tensors",
    .keys = full_attention_keys,
    .config_size = sizeof(tg_full_attention_config),
    .state_size = sizeof(tg_full_attention_config),
    .check = fa_check,
    .inputs = fa_inputs,
    .init = fa_init,
    .build = fa_build,
};

#define AL(f) offsetof(tg_attention_layer_config, f)
static const tg_layer_key attention_layer_keys[] = {
    {"B", TG_KEY_INT, "2", false, "batch", "[1, inf)", AL(B)},
    {"L", TG_KEY_INT, "6", false, "query length", "[1, inf)", AL(L)},
    {"S", TG_KEY_INT, "6", false, "key/value length (cross-attention)", "[1, inf)", AL(S)},
    {"d_model", TG_KEY_INT, "16", false, "model width", "[1, inf)", AL(d_model)},
    {"n_heads", TG_KEY_INT, "2", false, "heads", "[1, inf)", AL(n_heads)},
    {"d_keys", TG_KEY_INT, "null", true,
     "key size per head; null: d_model // n_heads", "[1, inf)", AL(d_keys)},
    {"d_values", TG_KEY_INT, "null", true,
     "value size per head; null: d_model // n_heads", "[1, inf)", AL(d_values)},
    {"mask_flag", TG_KEY_BOOL, "false", false, "causal mask in FullAttention", NULL, AL(mask_flag)},
    {"scale", TG_KEY_FLOAT, "null", true, "score scale; null: 1/sqrt(d_keys)", NULL, AL(scale)},
    {"attention_dropout", TG_KEY_FLOAT, "0.1", false,
     "dropout on the attention weights (training only)", "[0, 1]", AL(attention_dropout)},
    {"output_attention", TG_KEY_BOOL, "false", false,
     "also return A [B, H, L, S]", NULL, AL(output_attention)},
    {"self_attention", TG_KEY_BOOL, "true", false,
     "one input x used as queries, keys and values; false: inputs q, k, v",
     NULL, AL(self_attention)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef AL

static tg_status al_check(const void *vc)
{
    const tg_attention_layer_config *c = vc;
    tg_status st = attention_layer_check(c, "attention_layer");
    if (st) return st;
    /* B, L, S >= 1: the key table's ranges (tg_keys_resolve) */
    if (c->self_attention && c->S != c->L)
        return tg_set_error(TG_ERR_INVALID, "attention_layer: self_attention uses one input, so S "
                            "(%lld) must equal L (%lld)", (long long)c->S, (long long)c->L);
    if (c->mask_flag && c->L != c->S)
        return tg_set_error(TG_ERR_INVALID, "attention_layer: mask_flag needs L == S (the causal "
                            "mask is [B, 1, L, L]); got L=%lld, S=%lld", (long long)c->L,
                            (long long)c->S);
    if (!(c->attention_dropout >= 0 && c->attention_dropout <= 1))
        return tg_set_error(TG_ERR_INVALID, "attention_layer: attention_dropout must be in [0, 1], "
                            "got %g", c->attention_dropout);
    return TG_OK;
}

static int al_inputs(const void *vc, tg_layer_input *in)
{
    const tg_attention_layer_config *c = vc;
    if (c->self_attention) {
        in[0] = (tg_layer_input){"x", "B L d_model", 3, {c->B, c->L, c->d_model}, true, 0};
        return 1;
    }
    in[0] = (tg_layer_input){"q", "B L d_model", 3, {c->B, c->L, c->d_model}, true, 0};
    in[1] = (tg_layer_input){"k", "B S d_model", 3, {c->B, c->S, c->d_model}, true, 0};
    in[2] = (tg_layer_input){"v", "B S d_model", 3, {c->B, c->S, c->d_model}, true, 0};
    return 3;
}

static tg_status al_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    /* a top-level AttentionLayer's keys have no module prefix: init it under the
     * given prefix directly */
    tg_attention_layer *l = state;
    tg_status st = tg_attention_layer_init(l, cfg, ps, "", *prefix ? prefix : "", rng);
    snprintf(l->name, sizeof l->name, "attention_layer");
    return st;
}

static tg_status al_build(const void *state, tg_graph *g, tg_node *const *in, tg_layer_outputs *out)
{
    const tg_attention_layer *l = state;
    if (l->c.self_attention)
        out->y = tg_attention_layer_build(g, l, in[0], in[0], in[0], NULL, &out->attn);
    else
        out->y = tg_attention_layer_build(g, l, in[0], in[1], in[2], NULL, &out->attn);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_attention_layer_class = {
    .name = "attention_layer",
    .summary = "TSL AttentionLayer: q/k/v/out projections around FullAttention, self or cross",
    .keys = attention_layer_keys,
    .config_size = sizeof(tg_attention_layer_config),
    .state_size = sizeof(tg_attention_layer),
    .check = al_check,
    .inputs = al_inputs,
    .init = al_init,
    .build = al_build,
};
