/*
 * tsl_encoder.h - Time-Series-Library's Transformer encoder
 * (layers/Transformer_EncDec.py: EncoderLayer, Encoder without distilling
 * convolutions) and the instance normalisation its forecasters wrap around
 * it (the Non-stationary Transformer's, inlined in models/iTransformer.py
 * and models/PatchTST.py), shared by iTransformer and PatchTST.
 *
 * EncoderLayer (post-norm), x [B, L, d_model]:
 *
 *     new_x = attention(x, x, x)         AttentionLayer(FullAttention(mask_flag=False,
 *                                        factor, attention_dropout=dropout), d_model, n_heads)
 *     x = norm1(x + dropout(new_x))
 *     y = dropout(activation(conv1(x^T)))    Conv1d(d_model, d_ff, kernel_size=1)
 *     y = dropout(conv2(y)^T)                Conv1d(d_ff, d_model, kernel_size=1)
 *     return norm2(x + y)
 *
 * A Conv1d with kernel 1 over x^T is a Linear over the last dim of x: it is
 * built as one, on PyTorch's [out, in, 1] weight viewed as [out, in].
 * Encoder: the layers in turn, then `norm` when there is one. Parameters by
 * state_dict name under the encoder's name (TSL: "encoder"):
 *     attn_layers.{i}.attention.{query,key,value,out}_projection.{weight,bias}
 *     attn_layers.{i}.conv1.weight [d_ff, d_model, 1], .conv1.bias [d_ff]
 *     attn_layers.{i}.conv2.weight [d_model, d_ff, 1], .conv2.bias [d_model]
 *     attn_layers.{i}.norm1.{weight,bias}, attn_layers.{i}.norm2.{weight,bias}
 *     norm.{weight,bias}                     (a final LayerNorm, when asked for)
 * Every module builds inside a scope of its name, so `tgraph dot` draws
 * encoder > attn_layers.0 > attention / conv1 / ... as nested clusters.
 *
 * A caller with a final norm of its own (PatchTST: BatchNorm1d over d_model
 * through a transpose, keys encoder.norm.1.*) asks for none and builds
 *
 *     tg_scope_push(g, "encoder");
 *     x = tg_tsl_encoder_layers_build(g, &enc, x);
 *     tg_scope_push(g, "norm"); x = its norm; tg_scope_pop(g);
 *     tg_scope_pop(g);
 */
#ifndef TG_TSL_ENCODER_H
#define TG_TSL_ENCODER_H

#include "attention.h"
#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Conv1d(in, out, kernel_size=1) on channels-last input ---- */

typedef struct tg_conv1d_k1_mod {
    char      name[64];        /* the scope, e.g. "conv1" */
    tg_param *weight, *bias;   /* [out, in, 1], [out] */
    int64_t   in, out;
} tg_conv1d_k1_mod;

/* Create "<prefix>.<name>.weight" [out, in, 1] and ".bias" [out] with
 * nn.Conv1d's initialisation (kaiming_uniform(a=sqrt(5)) over fan_in = in,
 * bias U(+-1/sqrt(in)); rng NULL: zeros). */
tg_status tg_conv1d_k1_mod_init(tg_conv1d_k1_mod *m, tg_params *ps, const char *prefix,
                                const char *name, int64_t in, int64_t out, tg_rng *rng);
/* x [..., in] -> [..., out]: conv(x^T)^T, i.e. a Linear over the last dim. */
tg_node  *tg_conv1d_k1_mod_build(tg_graph *g, const tg_conv1d_k1_mod *m, tg_node *x);

/* ---- the activation of the feed-forward part ---- */

typedef enum tg_tsl_activation {
    TG_TSL_ACT_RELU,   /* F.relu */
    TG_TSL_ACT_GELU,   /* F.gelu, the exact erf form */
    TG_TSL_ACT_COUNT
} tg_tsl_activation;

/* "relu" or "gelu" into *out; anything else is an error naming `who` and the
 * value (upstream takes any other text as gelu; tgraph refuses it). */
tg_status tg_tsl_activation_parse(const char *s, const char *who, tg_tsl_activation *out);

/* ---- EncoderLayer and Encoder ---- */

typedef struct tg_tsl_encoder_config {
    int64_t           e_layers;     /* >= 1 */
    int64_t           d_model, n_heads;
    int64_t           d_ff;         /* 0 / None: 4 * d_model */
    int64_t           factor;       /* unused, as in TSL's FullAttention */
    double            dropout;      /* every dropout, the attention weights' too */
    tg_tsl_activation activation;
    bool              norm;         /* a final LayerNorm(d_model) "norm" (iTransformer) */
} tg_tsl_encoder_config;

/* The most encoder layers tgraph builds. */
#define TG_TSL_MAX_LAYERS 64

typedef struct tg_tsl_encoder_layer {
    char               name[64];   /* "attn_layers.{i}" */
    double             dropout;
    tg_tsl_activation  activation;
    tg_attention_layer attention;
    tg_conv1d_k1_mod   conv1, conv2;
    tg_layernorm_mod   norm1, norm2;
} tg_tsl_encoder_layer;

typedef struct tg_tsl_encoder {
    char                  name[64];   /* the scope and key prefix: "encoder" */
    tg_tsl_encoder_config c;
    int64_t               d_ff;       /* resolved */
    int                   n_layers;
    tg_tsl_encoder_layer  layers[TG_TSL_MAX_LAYERS];
    tg_layernorm_mod      norm;       /* when c.norm */
} tg_tsl_encoder;

/* Check the config (errors name the key: d_model % n_heads, e_layers, d_ff,
 * dropout in [0, 1]) and create the parameters "<prefix>.<name>.attn_layers.0..."
 * in the order PyTorch creates them (layer by layer: attention, conv1, conv2,
 * norm1, norm2; then norm). rng NULL leaves the weights zero (gains one). */
tg_status tg_tsl_encoder_init(tg_tsl_encoder *e, const tg_tsl_encoder_config *c, tg_params *ps,
                              const char *prefix, const char *name, tg_rng *rng);
/* One EncoderLayer: x [B, L, d_model] -> [B, L, d_model], inside scope l->name. */
tg_node  *tg_tsl_encoder_layer_build(tg_graph *g, const tg_tsl_encoder_layer *l, tg_node *x);
/* The layers in turn, without the encoder's scope or its norm (for a caller
 * with a norm of its own, see the top of this file). */
tg_node  *tg_tsl_encoder_layers_build(tg_graph *g, const tg_tsl_encoder *e, tg_node *x);
/* Encoder.forward: scope e->name, the layers, then the LayerNorm if c.norm.
 * x [B, L, d_model] -> [B, L, d_model]. */
tg_node  *tg_tsl_encoder_build(tg_graph *g, const tg_tsl_encoder *e, tg_node *x);

/* ---- instance normalisation (Non-stationary Transformer) ---- */

/* Over time (dim 1) of x [B, T, N]:
 *     means = x.mean(1, keepdim=True).detach()          [B, 1, N]
 *     x = x - means
 *     stdev = sqrt(var(x, dim=1, keepdim=True, unbiased=False) + 1e-5)    [B, 1, N]
 *     return x / stdev
 * No gradient flows through the mean (tg_detach); the stdev is not detached,
 * as upstream. *means and *stdev receive the two statistics for
 * tg_instance_denorm. Scope "instance_norm". */
tg_node  *tg_instance_norm(tg_graph *g, tg_node *x, tg_node **means, tg_node **stdev);
/* y [B, P, N] * stdev + means (each [B, 1, N], repeated over P). Scope
 * "instance_denorm". */
tg_node  *tg_instance_denorm(tg_graph *g, tg_node *y, tg_node *means, tg_node *stdev);

#ifdef __cplusplus
}
#endif
#endif
