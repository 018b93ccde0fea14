/*
 * gpt.c - nanoGPT's GPT as a graph builder (see gpt.h), and its registry
 * entry. The builder is model.py's forward, step by step, with its names:
 *
 *   GPT:   tok_emb = wte(idx); pos_emb = wpe(pos); x = drop(tok_emb + pos_emb)
 *          for block in h: x = block(x)
 *          x = ln_f(x); logits = lm_head(x)
 *   Block: x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))
 *   CausalSelfAttention: q, k, v = c_attn(x).split(n_embd, dim=2)
 *          y = scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p)
 *          y = resid_dropout(c_proj(y))
 *   MLP:   dropout(c_proj(gelu(c_fc(x))))
 *
 * The heads stay in the [B, T, n_head, hs] layout tg_sdpa takes, so the
 * .view(B, T, nh, hs).transpose(1, 2) of model.py is a reshape here, and the
 * attention weights are never stored (the fused op). wpe(arange(T)) is the
 * first T rows of wpe (a narrow), so T < block_size works. A dropout of 0
 * adds no node (the identity).
 *
 * Not here: the loss (the caller adds tg_cross_entropy on the logits), the
 * logits of the last position only (nanoGPT's inference shortcut), generation,
 * from_pretrained's GPT-2 checkpoints (Conv1D weights transposed).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gpt.h"
#include "internal.h"
#include "op.h"
#include "ops.h"

tg_gpt_config tg_gpt_defaults(void)
{
    tg_gpt_config c;
    tg_keys_defaults(tg_gpt_class.keys, &c, sizeof c);   /* the key table below */
    return c;
}

static tg_status gpt_config_check(const tg_gpt_config *c)
{
    if (c->n_layer < 1 || c->n_layer > TG_GPT_MAX_LAYERS)
        return tg_set_error(TG_ERR_INVALID, "gpt: n_layer must be in [1, %d], got %lld",
                            TG_GPT_MAX_LAYERS, (long long)c->n_layer);
    if (c->n_head < 1 || c->n_embd < 1 || c->n_embd % c->n_head)
        return tg_set_error(TG_ERR_INVALID, "gpt: n_embd (%lld) must be divisible by n_head "
                            "(%lld)", (long long)c->n_embd, (long long)c->n_head);
    if (c->vocab_size < 1 || c->block_size < 1)
        return tg_set_error(TG_ERR_INVALID, "gpt: vocab_size and block_size must be >= 1, got "
                            "%lld and %lld", (long long)c->vocab_size, (long long)c->block_size);
    /* wte [vocab_size, n_embd] and wpe [block_size, n_embd]: counts an int64 holds */
    const int64_t most = INT64_MAX / c->n_embd;
    if (c->vocab_size > most || c->block_size > most)
        return tg_set_error(TG_ERR_LIMIT, "gpt: %s %lld is too large: %s [%s, n_embd=%lld] would "
                            "have more elements than an int64 counts (at most %lld with this "
                            "n_embd)", c->vocab_size > most ? "vocab_size" : "block_size",
                            (long long)(c->vocab_size > most ? c->vocab_size : c->block_size),
                            c->vocab_size > most ? "wte" : "wpe",
                            c->vocab_size > most ? "vocab_size" : "block_size",
                            (long long)c->n_embd, (long long)most);
    if (c->T > c->block_size)
        return tg_set_error(TG_ERR_INVALID, "gpt: T (%lld) exceeds block_size (%lld): Cannot "
                            "forward sequence of length %lld, block size is only %lld",
                            (long long)c->T, (long long)c->block_size, (long long)c->T,
                            (long long)c->block_size);
    if (!(c->dropout >= 0 && c->dropout <= 1))
        return tg_set_error(TG_ERR_INVALID, "gpt: dropout probability has to be between 0 and 1, "
                            "but got %g", c->dropout);
    return TG_OK;
}

/* nn.Linear(in, out, bias) with nanoGPT's init: weight N(0, std), bias 0. */
static tg_status linear_init(tg_linear_mod *m, tg_params *ps, const char *prefix,
                             const char *name, int64_t in, int64_t out, bool bias, double std,
                             tg_rng *rng)
{
    tg_status st = tg_linear_mod_init(m, ps, prefix, name, in, out, bias, NULL);
    if (!st && rng) tg_init_normal(&m->weight->value, 0.0, std, rng);
    return st;
}

static tg_status block_init(tg_gpt_block *b, const tg_gpt_config *c, tg_params *ps,
                            const char *prefix, int i, tg_rng *rng)
{
    char full[TG_NAME_MAX], sub[TG_NAME_MAX];
    const int64_t C = c->n_embd;
    const double std = 0.02, proj_std = 0.02 / sqrt(2.0 * (double)c->n_layer);
    tg_status st;
    snprintf(b->name, sizeof b->name, "h.%d", i);
    if ((st = tg_name_join(full, sizeof full, prefix, b->name))) return st;
    if ((st = tg_layernorm_mod_init_bias(&b->ln_1, ps, full, "ln_1", C, c->bias))) return st;
    if ((st = tg_name_join(sub, sizeof sub, full, "attn")) ||
        (st = linear_init(&b->c_attn, ps, sub, "c_attn", C, 3 * C, c->bias, std, rng)) ||
        (st = linear_init(&b->attn_proj, ps, sub, "c_proj", C, C, c->bias, proj_std, rng)))
        return st;
    if ((st = tg_layernorm_mod_init_bias(&b->ln_2, ps, full, "ln_2", C, c->bias))) return st;
    if ((st = tg_name_join(sub, sizeof sub, full, "mlp")) ||
        (st = linear_init(&b->c_fc, ps, sub, "c_fc", C, 4 * C, c->bias, std, rng)) ||
        (st = linear_init(&b->mlp_proj, ps, sub, "c_proj", 4 * C, C, c->bias, proj_std, rng)))
        return st;
    return TG_OK;
}

tg_status tg_gpt_init(tg_gpt *m, const tg_gpt_config *c, tg_params *ps, const char *prefix,
                      tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char tr[TG_NAME_MAX], name[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    if ((st = gpt_config_check(c))) return st;
    m->c = *c;
    const int64_t C = c->n_embd;
    if ((st = tg_name_join(tr, sizeof tr, prefix, "transformer"))) return st;
    m->wte = tg_params_addf(ps, 2, (int64_t[]){c->vocab_size, C}, "%s.wte.weight", tr);
    m->wpe = m->wte ? tg_params_addf(ps, 2, (int64_t[]){c->block_size, C}, "%s.wpe.weight", tr)
                    : NULL;
    if (!m->wpe) return TG_ERR_INVALID;
    if (rng) {
        tg_init_normal(&m->wte->value, 0.0, 0.02, rng);
        tg_init_normal(&m->wpe->value, 0.0, 0.02, rng);
    }
    for (int i = 0; i < c->n_layer; i++)
        if ((st = block_init(&m->h[i], c, ps, tr, i, rng))) return st;
    if ((st = tg_layernorm_mod_init_bias(&m->ln_f, ps, tr, "ln_f", C, c->bias))) return st;
    /* lm_head.weight is wte's weight: one parameter, a second state_dict name */
    if ((st = tg_name_join(name, sizeof name, prefix, "lm_head.weight"))) return st;
    return tg_params_alias(ps, name, m->wte);
}

/* nn.Dropout(p): no node for p = 0 (the identity in training and eval alike) */
static tg_node *drop(tg_graph *g, tg_node *x, double p)
{
    return p > 0 ? tg_dropout(g, x, p) : x;
}

/* CausalSelfAttention.forward; x [B, T, C] -> [B, T, C] */
static tg_node *attn_build(tg_graph *g, const tg_gpt *m, const tg_gpt_block *b, tg_node *x)
{
    const int64_t B = tg_node_value(x)->shape[0], T = tg_node_value(x)->shape[1];
    const int64_t C = m->c.n_embd, H = m->c.n_head, hs = C / H;
    if (tg_scope_push(g, "attn")) return NULL;
    /* q, k, v = self.c_attn(x).split(self.n_embd, dim=2) */
    tg_node *qkv[3] = {NULL, NULL, NULL};
    tg_split(g, tg_linear_mod_build(g, &b->c_attn, x), 3, (const int64_t[]){C, C, C}, 2, qkv);
    /* k = k.view(B, T, n_head, hs): sdpa's [B, T, H, hs] layout, no transpose */
    const int64_t heads[4] = {B, T, H, hs};
    tg_node *q = tg_reshape(g, qkv[0], 4, heads);                   // [B, T, H, hs]
    tg_node *k = tg_reshape(g, qkv[1], 4, heads);                   // [B, T, H, hs]
    tg_node *v = tg_reshape(g, qkv[2], 4, heads);                   // [B, T, H, hs]
    /* y = softmax(q k^T / sqrt(hs), causal) v, attn_dropout on the weights */
    tg_node *y = tg_sdpa(g, q, k, v, true, 1.0 / sqrt((double)hs), m->c.dropout);
    y = tg_reshape(g, y, 3, (const int64_t[]){B, T, C});           // [B, T, C]
    /* y = self.resid_dropout(self.c_proj(y)) */
    y = drop(g, tg_linear_mod_build(g, &b->attn_proj, y), m->c.dropout);
    tg_scope_pop(g);
    return y;
}

/* MLP.forward: dropout(c_proj(gelu(c_fc(x)))); [B, T, C] -> [B, T, C] */
static tg_node *mlp_build(tg_graph *g, const tg_gpt *m, const tg_gpt_block *b, tg_node *x)
{
    if (tg_scope_push(g, "mlp")) return NULL;
    tg_node *h = tg_linear_mod_build(g, &b->c_fc, x);               // [B, T, 4C]
    h = tg_gelu(g, h, TG_GELU_NONE);                                // exact (erf) GELU
    /* kept for c_proj's backward rather than recomputed there (tgraph train's
     * memory plan recomputes GELU outputs): an erf per element costs more
     * than the [B, T, 4C] buffer is worth at these sizes */
    if (h) tg_node_keep(h);
    h = drop(g, tg_linear_mod_build(g, &b->mlp_proj, h), m->c.dropout);   // [B, T, C]
    tg_scope_pop(g);
    return h;
}

tg_node *tg_gpt_build(tg_graph *g, const tg_gpt *m, tg_node *idx)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, idx);
    if (!tg_builder_check(g, "gpt", 1, &idx)) return NULL;
    const tg_tensor *iv = tg_node_value(idx);
    if (iv->rank != 2 || iv->dtype != TG_I64)
        return tg_graph_fail(g, "gpt: idx must be 2-d int64 token ids [B, T], got %d-d %s",
                             iv->rank, tg_dtype_name(iv->dtype));
    const int64_t T = iv->shape[1];
    if (T > m->c.block_size)
        return tg_graph_fail(g, "gpt: Cannot forward sequence of length %lld, block size is only "
                             "%lld", (long long)T, (long long)m->c.block_size);
    if (tg_scope_push(g, "transformer")) return NULL;
    tg_node *wte = tg_param_node(g, m->wte);                        // [V, C]
    /* tok_emb = wte(idx); pos_emb = wpe(arange(T)) = wpe.weight[:T] */
    tg_node *tok_emb = NULL, *pos_emb = NULL;
    if (!tg_scope_push(g, "wte")) {
        tok_emb = tg_embedding(g, idx, wte, TG_EMBEDDING_NO_PADDING);   // [B, T, C]
        tg_scope_pop(g);
    }
    if (!tg_scope_push(g, "wpe")) {
        pos_emb = tg_narrow(g, tg_param_node(g, m->wpe), 0, 0, T);      // [T, C]
        tg_scope_pop(g);
    }
    tg_node *x = drop(g, tg_add(g, tok_emb, pos_emb), m->c.dropout);   // [B, T, C]
    for (int64_t i = 0; i < m->c.n_layer; i++) {
        const tg_gpt_block *b = &m->h[i];
        if (tg_scope_push(g, b->name)) return NULL;
        x = tg_add(g, x, attn_build(g, m, b, tg_layernorm_mod_build(g, &b->ln_1, x)));   // x + attn(ln_1(x))
        x = tg_add(g, x, mlp_build(g, m, b, tg_layernorm_mod_build(g, &b->ln_2, x)));    // x + mlp(ln_2(x))
        tg_scope_pop(g);
    }
    x = tg_layernorm_mod_build(g, &m->ln_f, x);                                   // [B, T, C]
    tg_scope_pop(g);
    /* logits = lm_head(x): Linear(C, V, bias=False) whose weight is wte's */
    tg_node *logits = NULL;
    if (!tg_scope_push(g, "lm_head")) {
        logits = tg_linear(g, x, wte, NULL);                        // [B, T, V]
        tg_scope_pop(g);
    }
    return logits;
}

/* ---------------------------------------------------------------- registry */

#define GP(f) offsetof(tg_gpt_config, f)
static const tg_layer_key gpt_keys[] = {
    {"B", TG_KEY_INT, "2", false, "batch", "[1, inf)", GP(B)},
    {"T", TG_KEY_INT, "8", false, "tokens per sequence (<= block_size)", "[1, inf)", GP(T)},
    {"vocab_size", TG_KEY_INT, "11", false,
     "token ids are in [0, vocab_size); rows of wte and lm_head", "[1, inf)", GP(vocab_size)},
    {"block_size", TG_KEY_INT, "8", false,
     "longest sequence: rows of the position embedding wpe", "[1, inf)", GP(block_size)},
    {"n_layer", TG_KEY_INT, "2", false, "transformer blocks", "[1, 64]", GP(n_layer)},
    {"n_head", TG_KEY_INT, "2", false,
     "attention heads; each n_embd / n_head wide", "[1, inf)", GP(n_head)},
    {"n_embd", TG_KEY_INT, "16", false,
     "model width C (a multiple of n_head)", "[1, inf)", GP(n_embd)},
    {"dropout", TG_KEY_FLOAT, "0", false,
     "dropout on the embeddings, attention weights and residual branches (training only)",
     "[0, 1]", GP(dropout)},
    {"bias", TG_KEY_BOOL, "true", false,
     "biases in every Linear and LayerNorm (nanoGPT's GPTConfig.bias)", NULL, GP(bias)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef GP

static tg_status gpt_check(const void *vc) { return gpt_config_check(vc); }

static int gpt_inputs(const void *vc, tg_layer_input *in)
{
    const tg_gpt_config *c = vc;
    in[0] = (tg_layer_input){"idx", "B T", 2, {c->B, c->T}, false, c->vocab_size};
    return 1;
}

static tg_status gpt_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                          tg_rng *rng)
{
    return tg_gpt_init(state, cfg, ps, prefix, rng);
}

static tg_status gpt_build(const void *state, tg_graph *g, tg_node *const *in,
                           tg_layer_outputs *out)
{
    out->y = tg_gpt_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_gpt_class = {
    .name = "gpt",
    .summary = "nanoGPT's GPT: token and position embeddings, n_layer pre-LayerNorm causal "
               "attention + MLP blocks, ln_f, lm_head tied to wte; idx int64 -> logits",
    .keys = gpt_keys,
    .config_size = sizeof(tg_gpt_config),
    .state_size = sizeof(tg_gpt),
    .check = gpt_check,
    .inputs = gpt_inputs,
    .init = gpt_init,
    .build = gpt_build,
};
