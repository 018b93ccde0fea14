/*
 * itransformer.h - iTransformer (Liu et al., "iTransformer: Inverted
 * Transformers Are Effective for Time Series Forecasting", ICLR 2024), as
 * Time-Series-Library's models/iTransformer.py runs it on the forecast path:
 * every variate (and every time-feature column) is one token whose embedding
 * is a Linear over its whole series; TSL's Encoder attends across them.
 *
 *     x, means, stdev = instance_norm(x_enc)                  [B, L, N]
 *     tokens = x^T (cat x_mark^T when given)                  [B, N + M, L]
 *     enc = dropout(enc_embedding.value_embedding(tokens))    [B, N + M, d_model]
 *     enc = encoder(enc)                 e_layers EncoderLayers, LayerNorm "encoder.norm"
 *     y = projection(enc)^T[:, :, :N]                         [B, pred_len, N]
 *     return instance_denorm(y, means, stdev)
 *
 * Inputs x [B, seq_len, N] and, when n_mark > 0, x_mark [B, seq_len, n_mark]
 * (TSL's timeF features, engine/train/dataset.h; not differentiated). The
 * gradient of x is autograd's through the detached mean (as PyTorch's).
 * Parameters by state_dict name: enc_embedding.value_embedding.{weight,bias}
 * [d_model, seq_len], encoder.attn_layers.{i}.* (tsl_encoder.h),
 * encoder.norm.{weight,bias}, projection.{weight,bias} [pred_len, d_model].
 */
#ifndef TG_ITRANSFORMER_H
#define TG_ITRANSFORMER_H

#include "layer.h"
#include "modules.h"
#include "tsl_encoder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_itransformer_config {
    int64_t    B, N, n_mark;          /* batch, variates, time-feature columns (0: none) */
    int64_t    seq_len, pred_len;
    int64_t    d_model, n_heads, e_layers;
    int64_t    d_ff;                  /* 0 / None: 4 * d_model */
    double     dropout;
    int64_t    factor;                /* unused, as in TSL's FullAttention */
    tg_key_str activation;            /* "gelu" or "relu" */
} tg_itransformer_config;

/* The key table's defaults (`tgraph layers itransformer`). */
tg_itransformer_config tg_itransformer_defaults(void);

typedef struct tg_itransformer {
    tg_itransformer_config c;
    tg_linear_mod          value_embedding;   /* enc_embedding.value_embedding */
    tg_tsl_encoder         encoder;
    tg_linear_mod          projection;
} tg_itransformer;

/* Check the config (errors name the key) and create the parameters under
 * prefix ("" for none) in PyTorch's order: value_embedding, the encoder,
 * projection. rng NULL leaves them zero (LayerNorm gains one). */
tg_status tg_itransformer_init(tg_itransformer *m, const tg_itransformer_config *c,
                               tg_params *ps, const char *prefix, tg_rng *rng);
/* x [B, seq_len, N], x_mark [B, seq_len, n_mark] or NULL when n_mark is 0
 * -> y [B, pred_len, N] (B and N from x). */
tg_node  *tg_itransformer_build(tg_graph *g, const tg_itransformer *m, tg_node *x,
                                tg_node *x_mark);

extern const tg_layer_class tg_itransformer_class;

#ifdef __cplusplus
}
#endif
#endif
