/*
 * patchtst.c - PatchTST (see patchtst.h): patching, the patch embedding, the
 * flatten head, the graph builder and its registry entry. The encoder is the
 * shared TSL Encoder (tsl_encoder.h), the encoder norm the batch_norm module.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "crossformer.h"
#include "internal.h"
#include "ops.h"
#include "patchtst.h"

int64_t tg_patch_count(int64_t seq_len, int64_t patch_len, int64_t stride, int64_t padding)
{
    if (seq_len < 1 || patch_len < 1 || stride < 1 || padding < 0 ||
        patch_len > seq_len + padding)
        return 0;
    return (seq_len + padding - patch_len) / stride + 1;
}

/* The gather index of tg_patch_unfold: patch p, tap j reads step
 * min(p * stride + j, T - 1), the replication padding and the unfold in one. */
static tg_tensor *patch_index(int64_t T, int64_t n, int64_t patch_len, int64_t stride)
{
    tg_tensor *idx = tg_tensor_new(TG_I64, 1, (int64_t[]){n * patch_len});
    if (!idx) return NULL;
    int64_t *v = idx->data;
    for (int64_t p = 0; p < n; p++)
        for (int64_t j = 0; j < patch_len; j++) {
            const int64_t s = p * stride + j;
            v[p * patch_len + j] = s < T ? s : T - 1;
        }
    return idx;
}

tg_node *tg_patch_unfold(tg_graph *g, tg_node *x, int64_t patch_len, int64_t stride,
                         int64_t padding)
{
    TG__BUILDER_NONNULL(g, x);
    const tg_tensor *xv = tg_node_value(x);
    char got[96];
    if (xv->rank != 3)
        return tg_graph_fail(g, "patch_unfold: expected x [B, n_vars, T], got %s",
                             tg_shape_str(xv->rank, xv->shape, got, sizeof got));
    if (patch_len < 1 || stride < 1 || padding < 0)
        return tg_graph_fail(g, "patch_unfold: patch_len and stride must be at least 1 and "
                             "padding at least 0, got %lld, %lld and %lld", (long long)patch_len,
                             (long long)stride, (long long)padding);
    const int64_t N = xv->shape[0], C = xv->shape[1], T = xv->shape[2];
    const int64_t n = tg_patch_count(T, patch_len, stride, padding);
    if (n < 1)
        return tg_graph_fail(g, "patch_unfold: patch_len %lld is longer than the padded series "
                             "(%lld steps + padding %lld)", (long long)patch_len, (long long)T,
                             (long long)padding);
    tg_tensor *index = patch_index(T, n, patch_len, stride);
    if (!index) return tg_graph_fail(g, "patch_unfold: patch index: %s", tg_last_error());
    if (tg_scope_push(g, "padding_patch_layer")) {
        tg_tensor_free(index);
        return NULL;
    }
    tg_node *idx = tg_constant(g, "patch_index", index);              /* [n*patch_len] int64 */
    tg_tensor_free(index);
    tg_node *p = tg_index_select(g, x, 2, idx);                       /* [N, C, n*patch_len] */
    tg_scope_pop(g);
    /* x = x.unfold(-1, patch_len, stride); x = x.reshape(N * C, n, patch_len) */
    return tg_reshape(g, p, 3, (int64_t[]){N * C, n, patch_len});
}

/* ------------------------------------------------------------ the config */

tg_patchtst_config tg_patchtst_defaults(void)
{
    tg_patchtst_config c;
    tg_keys_defaults(tg_patchtst_class.keys, &c, sizeof c);   /* the key table below */
    return c;
}

/* The config's constraints beyond the key ranges (errors name the key). */
static tg_status pt_check(const void *vc)
{
    const tg_patchtst_config *c = vc;
    tg_tsl_activation a;
    if (c->d_model % 2)
        return tg_set_error(TG_ERR_INVALID, "patchtst: d_model must be even for the sinusoidal "
                            "position embedding (PositionalEmbedding: pe[:, 1::2] = cos(...) needs "
                            "d_model/2 columns), got %lld", (long long)c->d_model);
    if (c->n_heads < 1 || c->d_model % c->n_heads)
        return tg_set_error(TG_ERR_INVALID, "patchtst: d_model (%lld) must be divisible by "
                            "n_heads (%lld)", (long long)c->d_model, (long long)c->n_heads);
    if (c->stride < 1 || c->patch_len < 1 || c->patch_len > c->seq_len + c->stride)
        return tg_set_error(TG_ERR_INVALID, "patchtst: patch_len %lld is longer than seq_len + "
                            "stride = %lld (the padded series holds no patch)",
                            (long long)c->patch_len, (long long)(c->seq_len + c->stride));
    const int64_t n = tg_patch_count(c->seq_len, c->patch_len, c->stride, c->stride);
    if (n > TG_PATCHTST_PE_MAX_LEN)
        return tg_set_error(TG_ERR_LIMIT, "patchtst: %lld patches are more than the position "
                            "embedding's max_len %d", (long long)n, TG_PATCHTST_PE_MAX_LEN);
    if (c->d_model > INT64_MAX / n / (c->pred_len > 0 ? c->pred_len : 1))
        return tg_set_error(TG_ERR_LIMIT, "patchtst: head.linear would have d_model %lld x %lld "
                            "patches x pred_len %lld weights, more than int64 holds",
                            (long long)c->d_model, (long long)n, (long long)c->pred_len);
    return tg_tsl_activation_parse(c->activation.s, "patchtst", &a);
}

tg_status tg_patchtst_init(tg_patchtst *m, const tg_patchtst_config *c, tg_params *ps,
                           const char *prefix, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char emb[TG_NAME_MAX], norm[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    if ((st = pt_check(c))) return st;
    m->c = *c;
    m->patch_num = tg_patch_count(c->seq_len, c->patch_len, c->stride, c->stride);
    m->head_nf = c->d_model * m->patch_num;
    tg_tsl_encoder_config ec = {.e_layers = c->e_layers, .d_model = c->d_model,
                                .n_heads = c->n_heads, .d_ff = c->d_ff, .factor = c->factor,
                                .dropout = c->dropout, .norm = false};
    tg_tsl_activation_parse(c->activation.s, "patchtst", &ec.activation);
    /* modules in PyTorch's construction order: the RNG is drawn in that order */
    if ((st = tg_name_join(emb, sizeof emb, prefix, "patch_embedding")) ||
        (st = tg_linear_mod_init(&m->value_embedding, ps, emb, "value_embedding", c->patch_len,
                                 c->d_model, false, rng)) ||
        (st = tg_tsl_encoder_init(&m->encoder, &ec, ps, prefix, "encoder", rng)) ||
        (st = tg_name_join(norm, sizeof norm, prefix, "encoder.norm")) ||
        (st = tg_batchnorm_mod_init(&m->norm, ps, norm, "1", c->d_model)) ||
        (st = tg_name_join(emb, sizeof emb, prefix, "head")) ||
        (st = tg_linear_mod_init(&m->head, ps, emb, "linear", m->head_nf, c->pred_len, true,
                                 rng)))
        return st;
    return TG_OK;
}

/* ---------------------------------------------------------------- forward */

/* PatchEmbedding(d_model, patch_len, stride, padding=stride, dropout):
 * x [B, n_vars, seq_len] -> [B*n_vars, patch_num, d_model] */
static tg_node *patch_embedding(tg_graph *g, const tg_patchtst *m, tg_node *x)
{
    if (tg_scope_push(g, "patch_embedding")) return NULL;
    /* x = self.padding_patch_layer(x); x = x.unfold(-1, patch_len, stride); reshape */
    x = tg_patch_unfold(g, x, m->c.patch_len, m->c.stride, m->c.stride);
    /* x = self.value_embedding(x) + self.position_embedding(x) */
    tg_node *v = x ? tg_linear_mod_build(g, &m->value_embedding, x) : NULL;
    tg_node *pe = NULL;
    tg_tensor *t = tg_tensor_new(TG_F32, 3, (int64_t[]){1, m->patch_num, m->c.d_model});
    if (!t) {
        tg_scope_pop(g);
        return tg_graph_fail(g, "patch_embedding: out of memory for the position embedding");
    }
    tg_positional_embedding_fill(t->data, m->patch_num, m->c.d_model);
    if (!tg_scope_push(g, "position_embedding")) {
        pe = tg_constant(g, "pe", t);                 /* [1, patch_num, d_model] = pe[:, :patch_num] */
        tg_scope_pop(g);
    }
    tg_tensor_free(t);
    x = tg_dropout(g, tg_add(g, v, pe), m->c.dropout);
    tg_scope_pop(g);
    return x;
}

/* FlattenHead: enc [B*n_vars, patch_num, d_model] -> [B, n_vars, pred_len] */
static tg_node *head(tg_graph *g, const tg_patchtst *m, tg_node *enc, int64_t n_vars)
{
    const tg_tensor *ev = tg_node_value(enc);
    const int64_t P = m->patch_num, D = m->c.d_model, B = ev->shape[0] / n_vars;
    /* enc_out = torch.reshape(enc_out, (-1, n_vars, patch_num, d_model)).permute(0, 1, 3, 2) */
    enc = tg_reshape(g, enc, 4, (int64_t[]){B, n_vars, P, D});
    enc = tg_permute(g, enc, (const int[]){0, 1, 3, 2});               /* [B, n_vars, D, P] */
    if (tg_scope_push(g, "head")) return NULL;
    /* x = self.flatten(x): start_dim=-2, d_model outer, patch_num inner */
    tg_node *y = tg_reshape(g, enc, 3, (int64_t[]){B, n_vars, D * P});
    y = tg_linear_mod_build(g, &m->head, y);                          /* [B, n_vars, pred_len] */
    tg_scope_pop(g);
    return tg_dropout(g, y, m->c.dropout);                            /* head_dropout */
}


/* encoder: the TSL layers, then norm = Sequential(Transpose(1, 2), BatchNorm1d(d_model),
 * Transpose(1, 2)); x [B*n_vars, patch_num, d_model] -> the same */
static tg_node *encoder(tg_graph *g, const tg_patchtst *m, tg_node *x)
{
    if (tg_scope_push(g, "encoder")) return NULL;
    x = tg_tsl_encoder_layers_build(g, &m->encoder, x);
    if (!tg_scope_push(g, "norm")) {
        x = tg_transpose(g, x, 1, 2);                                  /* [BC, d_model, P] */
        x = tg_batchnorm_mod_build(g, &m->norm, x);
        x = tg_transpose(g, x, 1, 2);                                  /* [BC, P, d_model] */
        tg_scope_pop(g);
    }
    tg_scope_pop(g);
    return x;
}

tg_node *tg_patchtst_build(tg_graph *g, const tg_patchtst *m, tg_node *x_enc)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x_enc);
    const tg_tensor *xv = tg_node_value(x_enc);
    char got[96];
    if (xv->rank != 3 || xv->shape[1] != m->c.seq_len || xv->shape[0] < 1 || xv->shape[2] < 1)
        return tg_graph_fail(g, "patchtst: expected x_enc [B, seq_len=%lld, enc_in] (B and "
                             "enc_in at least 1), got %s",
                             (long long)m->c.seq_len,
                             tg_shape_str(xv->rank, xv->shape, got, sizeof got));
    const int64_t n_vars = xv->shape[2];
    if (tg_scope_push(g, "patchtst")) return NULL;
    /* Normalization from Non-stationary Transformer */
    tg_node *means, *stdev;
    tg_node *x = tg_instance_norm(g, x_enc, &means, &stdev);           /* [B, L, C] */
    /* x_enc = x_enc.permute(0, 2, 1); enc_out, n_vars = self.patch_embedding(x_enc) */
    x = patch_embedding(g, m, tg_permute(g, x, (const int[]){0, 2, 1}));   /* [BC, P, D] */
    /* enc_out, attns = self.encoder(enc_out) */
    x = encoder(g, m, x);
    /* dec_out = self.head(enc_out).permute(0, 2, 1) */
    tg_node *y = x ? head(g, m, x, n_vars) : NULL;                     /* [B, C, pred_len] */
    y = tg_permute(g, y, (const int[]){0, 2, 1});                      /* [B, pred_len, C] */
    /* De-Normalization from Non-stationary Transformer */
    y = tg_instance_denorm(g, y, means, stdev);
    tg_scope_pop(g);
    return y;
}

/* ---------------------------------------------------------------- registry */

#define PT(f) offsetof(tg_patchtst_config, f)
static const tg_layer_key patchtst_keys[] = {
    {"B", TG_KEY_INT, "2", false, "batch", "[1, inf)", PT(B)},
    {"enc_in", TG_KEY_INT, "3", false, "channels (each patched on its own)", "[1, inf)",
     PT(enc_in)},
    {"seq_len", TG_KEY_INT, "20", false, "input steps", "[1, inf)", PT(seq_len)},
    {"pred_len", TG_KEY_INT, "6", false, "forecast steps", "[1, inf)", PT(pred_len)},
    {"d_model", TG_KEY_INT, "8", false, "patch token width (even: sinusoidal embedding)",
     "[1, inf)", PT(d_model)},
    {"n_heads", TG_KEY_INT, "2", false, "attention heads (d_model divisible by it)", "[1, inf)",
     PT(n_heads)},
    {"e_layers", TG_KEY_INT, "2", false, "encoder layers", "[1, 64]", PT(e_layers)},
    {"d_ff", TG_KEY_INT, "16", true, "feed-forward width; null: 4 * d_model", "[1, inf)",
     PT(d_ff)},
    {"dropout", TG_KEY_FLOAT, "0.1", false, "every dropout, the head's too (training only)",
     "[0, 1]", PT(dropout)},
    {"factor", TG_KEY_INT, "1", false, "unused (TSL signature)", NULL, PT(factor)},
    {"activation", TG_KEY_STRING, "gelu", false, "feed-forward activation: gelu or relu", NULL,
     PT(activation)},
    {"patch_len", TG_KEY_INT, "4", false, "steps per patch (TSL: 16)", "[1, inf)",
     PT(patch_len)},
    {"stride", TG_KEY_INT, "2", false, "steps between patches, and the right padding (TSL: 8)",
     "[1, inf)", PT(stride)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef PT

static int pt_inputs(const void *vc, tg_layer_input *in)
{
    const tg_patchtst_config *c = vc;
    in[0] = (tg_layer_input){"x", "B seq_len enc_in", 3, {c->B, c->seq_len, c->enc_in}, true, 0};
    return 1;
}

static tg_status pt_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    return tg_patchtst_init(state, cfg, ps, prefix, rng);
}

static tg_status pt_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    out->y = tg_patchtst_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_patchtst_class = {
    .name = "patchtst",
    .summary = "TSL PatchTST: instance norm, channel-independent patches (Linear + sinusoidal "
               "PE), TSL's Encoder with a BatchNorm1d, a flatten head to pred_len",
    .keys = patchtst_keys,
    .config_size = sizeof(tg_patchtst_config),
    .state_size = sizeof(tg_patchtst),
    .check = pt_check,
    .inputs = pt_inputs,
    .init = pt_init,
    .build = pt_build,
    .grad_detached_inputs = 1u << 0,   /* x: the instance norm's mean is detached */
};
