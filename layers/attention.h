/*
 * attention.h - Time-Series-Library's FullAttention and AttentionLayer
 * (layers/SelfAttention_Family.py), PyTorch-exact. LAYERS.md sections 1-2.
 */
#ifndef TG_ATTENTION_H
#define TG_ATTENTION_H

#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FullAttention(mask_flag=True, factor=5, scale=None, attention_dropout=0.1,
 * output_attention=False). No parameters. B, L, S, H, E, D describe the
 * inputs for the registry; the builder takes the shapes of its inputs. */
typedef struct tg_full_attention_config {
    int64_t B, L, S, H, E, D;
    bool    mask_flag;
    int64_t factor;              /* unused, as in TSL */
    double  scale;               /* 0 / None: 1/sqrt(E) (Python's `scale or ...`) */
    double  attention_dropout;
    bool    output_attention;
} tg_full_attention_config;

/* The key table's defaults (`tgraph layers full_attention`), but TSL's
 * output_attention = false. */
tg_full_attention_config tg_full_attention_defaults(void);

/* queries [B, L, H, E], keys [B, S, H, E], values [B, S, H, D] -> V [B, L, H, D].
 * With mask_flag, attn_mask NULL means TriangularCausalMask (needs L == S);
 * otherwise attn_mask is a bool node broadcastable to [B, H, L, S] (True =
 * hidden). *attn (may be NULL) receives A [B, H, L, S] when output_attention.
 * Adds its nodes inside scope `name`. */
tg_node *tg_full_attention(tg_graph *g, const tg_full_attention_config *c, const char *name,
                           tg_node *queries, tg_node *keys, tg_node *values, tg_node *attn_mask,
                           tg_node **attn);

/* AttentionLayer(FullAttention(...), d_model, n_heads, d_keys=None, d_values=None):
 * {query,key,value,out}_projection.{weight,bias}. */
typedef struct tg_attention_layer_config {
    int64_t B, L, S;
    int64_t d_model, n_heads;
    int64_t d_keys, d_values;    /* 0 / None: d_model // n_heads */
    bool    mask_flag;           /* the inner FullAttention's */
    double  scale;
    double  attention_dropout;
    bool    output_attention;
    bool    self_attention;      /* registry only: one input x used as q = k = v */
} tg_attention_layer_config;

/* The key table's defaults (`tgraph layers attention_layer`). */
tg_attention_layer_config tg_attention_layer_defaults(void);

typedef struct tg_attention_layer {
    char                     name[64];
    tg_attention_layer_config c;
    int64_t                  dk, dv;
    tg_linear_mod            query_projection, key_projection, value_projection, out_projection;
} tg_attention_layer;

/* Check the config and create the parameters "<prefix>.<name>.query_projection.weight", ...
 * (prefix "" for none). rng NULL leaves them zero. */
tg_status tg_attention_layer_init(tg_attention_layer *l, const tg_attention_layer_config *c,
                                  tg_params *ps, const char *prefix, const char *name,
                                  tg_rng *rng);
/* queries [B, L, d_model], keys and values [B, S, d_model] -> [B, L, d_model]. */
tg_node *tg_attention_layer_build(tg_graph *g, const tg_attention_layer *l, tg_node *queries,
                            tg_node *keys, tg_node *values, tg_node *attn_mask, tg_node **attn);

extern const tg_layer_class tg_full_attention_class;
extern const tg_layer_class tg_attention_layer_class;

#ifdef __cplusplus
}
#endif
#endif
