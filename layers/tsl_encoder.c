/*
 * tsl_encoder.c - TSL's EncoderLayer and Encoder, the kernel-1 Conv1d they
 * use as a position-wise feed-forward, and the instance normalisation of
 * iTransformer and PatchTST (see tsl_encoder.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "ops.h"
#include "tsl_encoder.h"

/* ------------------------------------------------- Conv1d, kernel_size=1 */

tg_status tg_conv1d_k1_mod_init(tg_conv1d_k1_mod *m, tg_params *ps, const char *prefix,
                                const char *name, int64_t in, int64_t out, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    char full[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->in = in;
    m->out = out;
    if (in <= 0 || out <= 0)
        return tg_set_error(TG_ERR_INVALID, "%s: Conv1d(%lld, %lld, kernel_size=1) needs "
                            "positive sizes", name, (long long)in, (long long)out);
    if ((st = tg_name_join(full, sizeof full, prefix, name))) return st;
    if (!(m->weight = tg_params_addf(ps, 3, (int64_t[]){out, in, 1}, "%s.weight", full)) ||
        !(m->bias = tg_params_addf(ps, 1, (int64_t[]){out}, "%s.bias", full)))
        return TG_ERR_INVALID;
    if (rng) {   /* nn.Conv1d.reset_parameters: fan_in = in * kernel_size */
        tg_init_kaiming_uniform(&m->weight->value, sqrt(5.0), rng);
        tg_init_uniform(&m->bias->value, -1.0 / sqrt((double)in), 1.0 / sqrt((double)in), rng);
    }
    return TG_OK;
}

/* conv1d(x^T, weight [out, in, 1], bias)^T == linear(x, weight.view(out, in), bias) */
tg_node *tg_conv1d_k1_mod_build(tg_graph *g, const tg_conv1d_k1_mod *m, tg_node *x)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    if (tg_scope_push(g, m->name)) return NULL;
    tg_node *w = tg_reshape(g, tg_param_node(g, m->weight), 2,
                            (int64_t[]){m->out, m->in});               /* [out, in] */
    tg_node *y = tg_linear(g, x, w, tg_param_node(g, m->bias));       /* [..., out] */
    tg_scope_pop(g);
    return y;
}

/* ------------------------------------------------------------ activation */

tg_status tg_tsl_activation_parse(const char *s, const char *who, tg_tsl_activation *out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    if (!who) who = "encoder";
    if (s && !strcmp(s, "relu")) *out = TG_TSL_ACT_RELU;
    else if (s && !strcmp(s, "gelu")) *out = TG_TSL_ACT_GELU;
    else
        return tg_set_error(TG_ERR_INVALID, "%s: activation must be relu or gelu, got '%s'", who,
                            s ? s : "(null)");
    return TG_OK;
}

static tg_node *activation(tg_graph *g, tg_tsl_activation a, tg_node *x)
{
    return a == TG_TSL_ACT_RELU ? tg_relu(g, x) : tg_gelu(g, x, TG_GELU_NONE);
}

/* -------------------------------------------------- EncoderLayer, Encoder */

static tg_status encoder_check(const tg_tsl_encoder_config *c, const char *who)
{
    if (c->e_layers < 1 || c->e_layers > TG_TSL_MAX_LAYERS)
        return tg_set_error(TG_ERR_INVALID, "%s: e_layers must be in [1, %d], got %lld", who,
                            TG_TSL_MAX_LAYERS, (long long)c->e_layers);
    if (c->d_model <= 0 || c->n_heads <= 0 || c->d_ff < 0)
        return tg_set_error(TG_ERR_INVALID, "%s: d_model (%lld) and n_heads (%lld) must be "
                            "positive and d_ff (%lld) positive or null", who,
                            (long long)c->d_model, (long long)c->n_heads, (long long)c->d_ff);
    if (c->d_model % c->n_heads)
        return tg_set_error(TG_ERR_INVALID, "%s: d_model (%lld) must be divisible by n_heads "
                            "(%lld): AttentionLayer splits it into n_heads heads of d_model // "
                            "n_heads", who, (long long)c->d_model, (long long)c->n_heads);
    if (!(c->dropout >= 0 && c->dropout <= 1))
        return tg_set_error(TG_ERR_INVALID, "%s: dropout must be in [0, 1], got %g", who,
                            c->dropout);
    if ((unsigned)c->activation >= TG_TSL_ACT_COUNT)
        return tg_set_error(TG_ERR_INVALID, "%s: bad activation %d", who, (int)c->activation);
    return TG_OK;
}

/* EncoderLayer(AttentionLayer(FullAttention(False, factor, attention_dropout=dropout),
 * d_model, n_heads), d_model, d_ff, dropout, activation), modules in PyTorch's order */
static tg_status layer_init(tg_tsl_encoder_layer *l, const tg_tsl_encoder *e, tg_params *ps,
                            const char *prefix, int i, tg_rng *rng)
{
    const tg_tsl_encoder_config *c = &e->c;
    char full[TG_NAME_MAX];
    tg_status st;
    snprintf(l->name, sizeof l->name, "attn_layers.%d", i);
    l->dropout = c->dropout;
    l->activation = c->activation;
    tg_attention_layer_config ac = tg_attention_layer_defaults();
    ac.d_model = c->d_model;
    ac.n_heads = c->n_heads;
    ac.d_keys = ac.d_values = 0;
    ac.mask_flag = false;
    ac.scale = 0;
    ac.attention_dropout = c->dropout;
    ac.output_attention = false;
    if ((st = tg_name_join(full, sizeof full, prefix, l->name)) ||
        (st = tg_attention_layer_init(&l->attention, &ac, ps, full, "attention", rng)) ||
        (st = tg_conv1d_k1_mod_init(&l->conv1, ps, full, "conv1", c->d_model, e->d_ff, rng)) ||
        (st = tg_conv1d_k1_mod_init(&l->conv2, ps, full, "conv2", e->d_ff, c->d_model, rng)) ||
        (st = tg_layernorm_mod_init(&l->norm1, ps, full, "norm1", c->d_model)) ||
        (st = tg_layernorm_mod_init(&l->norm2, ps, full, "norm2", c->d_model)))
        return st;
    return TG_OK;
}

tg_status tg_tsl_encoder_init(tg_tsl_encoder *e, const tg_tsl_encoder_config *c, tg_params *ps,
                              const char *prefix, const char *name, tg_rng *rng)
{
    TG__NONNULL(e, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    char full[TG_NAME_MAX];
    tg_status st;
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    if ((st = encoder_check(c, name))) return st;
    e->c = *c;
    e->d_ff = c->d_ff ? c->d_ff : 4 * c->d_model;   /* d_ff = d_ff or 4 * d_model */
    e->n_layers = (int)c->e_layers;
    if ((st = tg_name_join(full, sizeof full, prefix, name))) return st;
    for (int i = 0; i < e->n_layers; i++)
        if ((st = layer_init(&e->layers[i], e, ps, full, i, rng))) return st;
    if (c->norm && (st = tg_layernorm_mod_init(&e->norm, ps, full, "norm", c->d_model)))
        return st;
    return TG_OK;
}

tg_node *tg_tsl_encoder_layer_build(tg_graph *g, const tg_tsl_encoder_layer *l, tg_node *x)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, x);
    const tg_tensor *xv = tg_node_value(x);
    char got[96];
    if (xv->rank != 3 || xv->shape[2] != l->norm1.n)
        return tg_graph_fail(g, "%s: expected x [B, L, d_model=%lld], got %s", l->name,
                             (long long)l->norm1.n,
                             tg_shape_str(xv->rank, xv->shape, got, sizeof got));
    if (tg_scope_push(g, l->name)) return NULL;
    /* new_x, attn = self.attention(x, x, x, attn_mask=None) */
    tg_node *new_x = tg_attention_layer_build(g, &l->attention, x, x, x, NULL, NULL);
    /* x = x + self.dropout(new_x); y = x = self.norm1(x) */
    x = tg_layernorm_mod_build(g, &l->norm1, tg_add(g, x, tg_dropout(g, new_x, l->dropout)));
    /* y = self.dropout(self.activation(self.conv1(y.transpose(-1, 1)))) */
    tg_node *y = tg_dropout(g, activation(g, l->activation, tg_conv1d_k1_mod_build(g, &l->conv1, x)),
                            l->dropout);                                 /* [B, L, d_ff] */
    /* y = self.dropout(self.conv2(y).transpose(-1, 1)) */
    y = tg_dropout(g, tg_conv1d_k1_mod_build(g, &l->conv2, y), l->dropout);   /* [B, L, d_model] */
    /* return self.norm2(x + y), attn */
    y = tg_layernorm_mod_build(g, &l->norm2, tg_add(g, x, y));
    tg_scope_pop(g);
    return y;
}

tg_node *tg_tsl_encoder_layers_build(tg_graph *g, const tg_tsl_encoder *e, tg_node *x)
{
    TG__BUILDER_NONNULL(g, e);
    TG__BUILDER_NONNULL(g, x);
    for (int i = 0; i < e->n_layers && x; i++) x = tg_tsl_encoder_layer_build(g, &e->layers[i], x);
    return x;
}

tg_node *tg_tsl_encoder_build(tg_graph *g, const tg_tsl_encoder *e, tg_node *x)
{
    TG__BUILDER_NONNULL(g, e);
    TG__BUILDER_NONNULL(g, x);
    if (tg_scope_push(g, e->name)) return NULL;
    x = tg_tsl_encoder_layers_build(g, e, x);
    /* if self.norm is not None: x = self.norm(x) */
    if (x && e->c.norm) x = tg_layernorm_mod_build(g, &e->norm, x);
    tg_scope_pop(g);
    return x;
}

/* ---------------------------------------------------- instance normalisation */

tg_node *tg_instance_norm(tg_graph *g, tg_node *x, tg_node **means, tg_node **stdev)
{
    TG__BUILDER_NONNULL(g, means);
    TG__BUILDER_NONNULL(g, stdev);
    *means = *stdev = NULL;
    TG__BUILDER_NONNULL(g, x);
    const tg_tensor *xv = tg_node_value(x);
    char got[96];
    if (xv->rank != 3)
        return tg_graph_fail(g, "instance_norm: expected x [B, T, N], got %s",
                             tg_shape_str(xv->rank, xv->shape, got, sizeof got));
    const int64_t t_dim = 1;
    if (tg_scope_push(g, "instance_norm")) return NULL;
    /* means = x_enc.mean(1, keepdim=True).detach() */
    tg_node *m = tg_detach(g, tg_mean(g, x, &t_dim, 1, true));                  /* [B, 1, N] */
    /* x_enc = x_enc - means */
    x = tg_sub(g, x, m);                                                          /* [B, T, N] */
    /* stdev = torch.sqrt(torch.var(x_enc, dim=1, keepdim=True, unbiased=False) + 1e-5) */
    tg_node *centred = tg_sub(g, x, tg_mean(g, x, &t_dim, 1, true));
    tg_node *var = tg_mean(g, tg_square(g, centred), &t_dim, 1, true);          /* [B, 1, N] */
    tg_node *s = tg_sqrt(g, tg_add(g, var, tg_full(g, 0, NULL, 1e-5)));        /* [B, 1, N] */
    /* x_enc /= stdev */
    x = tg_div(g, x, s);
    tg_scope_pop(g);
    if (!x) return NULL;
    *means = m;
    *stdev = s;
    return x;
}

tg_node *tg_instance_denorm(tg_graph *g, tg_node *y, tg_node *means, tg_node *stdev)
{
    TG__BUILDER_NONNULL(g, y);
    TG__BUILDER_NONNULL(g, means);
    TG__BUILDER_NONNULL(g, stdev);
    const tg_tensor *yv = tg_node_value(y), *mv = tg_node_value(means);
    char a[96], b[96];
    if (yv->rank != 3 || mv->rank != 3 || mv->shape[1] != 1 || mv->shape[0] != yv->shape[0] ||
        mv->shape[2] != yv->shape[2])
        return tg_graph_fail(g, "instance_denorm: expected y [B, P, N] and statistics [B, 1, N], "
                             "got y %s and means %s",
                             tg_shape_str(yv->rank, yv->shape, a, sizeof a),
                             tg_shape_str(mv->rank, mv->shape, b, sizeof b));
    if (tg_scope_push(g, "instance_denorm")) return NULL;
    /* dec_out = dec_out * stdev[:, 0, :].unsqueeze(1).repeat(1, P, 1)
     *         + means[:, 0, :].unsqueeze(1).repeat(1, P, 1)      (the repeat: broadcasting) */
    y = tg_add(g, tg_mul(g, y, stdev), means);                                   /* [B, P, N] */
    tg_scope_pop(g);
    return y;
}
