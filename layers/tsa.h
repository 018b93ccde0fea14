/*
 * tsa.h - Crossformer's TwoStageAttentionLayer (TSL layers/SelfAttention_Family.py),
 * PyTorch-exact. LAYERS.md section 3.
 *
 *     tg_tsa_config c = tg_tsa_defaults();          // the seed toy: x (2, 3, 5, 8)
 *     tg_tsa tsa;
 *     tg_tsa_init(&tsa, &c, ps, "", "tsa", &rng);   // keys router, time_attention.*, ...
 *     tg_node *y = tg_tsa_build(g, &tsa, x);        // x, y: [b, ts_d, seg_num, d_model]
 */
#ifndef TG_TSA_H
#define TG_TSA_H

#include "attention.h"
#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TwoStageAttentionLayer(configs, seg_num, factor, d_model, n_heads, d_ff=None,
 * dropout=0.1). b and ts_d describe the input for the registry only (the
 * builder takes any b and ts_d). */
typedef struct tg_tsa_config {
    int64_t b, ts_d;
    int64_t seg_num;        /* the router is per segment: the input must have this many */
    int64_t d_model;
    int64_t factor;         /* router vectors per segment (the paper's c) */
    int64_t n_heads;        /* the three AttentionLayers' heads; d_keys = d_model // n_heads */
    int64_t d_ff;           /* 0 / None: 4 * d_model */
    double  dropout;        /* `self.dropout`, used on 4 residual branches */
    double  attn_dropout;   /* inside the three FullAttentions (TSL: configs.dropout);
                               < 0: the same as dropout */
} tg_tsa_config;

/* The key table's defaults (`tgraph layers tsa`). */
tg_tsa_config tg_tsa_defaults(void);

typedef struct tg_tsa {
    char               name[64];      /* its scope: "tsa", "encode_layers.0", "self_attention" */
    tg_tsa_config      c;             /* as given, d_ff and attn_dropout resolved */
    tg_param          *router;        /* [seg_num, factor, d_model] */
    tg_attention_layer time_attention, dim_sender, dim_receiver;
    tg_layernorm_mod   norm1, norm2, norm3, norm4;
    tg_mlp_mod         MLP1, MLP2;    /* Linear(d_model, d_ff), GELU, Linear(d_ff, d_model) */
} tg_tsa;

/* Check c (errors name the key and say what PyTorch needs) and create the 41
 * parameters "<prefix>.<name>.router", "...time_attention.query_projection.weight",
 * ... in state_dict order (router first), drawn from rng in construction order
 * (time_attention, dim_sender, dim_receiver, router ~ N(0, 1), MLP1, MLP2;
 * rng NULL: zeros, norms 1/0). Name "" puts the keys directly under prefix. */
tg_status tg_tsa_init(tg_tsa *l, const tg_tsa_config *c, tg_params *ps, const char *prefix,
                      const char *name, tg_rng *rng);

/* x [b, ts_d, seg_num, d_model] -> [b, ts_d, seg_num, d_model], inside scope
 * l->name. Graph errors: x not 4-d, x's d_model or seg_num not the layer's
 * ("the router was built for seg_num 5"). Dropout follows tg_graph_training. */
tg_node *tg_tsa_build(tg_graph *g, const tg_tsa *l, tg_node *x);

/* Check a TSA config the way tg_tsa_init does (n_heads, d_model // n_heads,
 * seg_num, factor, d_ff, dropout), messages prefixed with `who`
 * ("crossformer: n_heads must be >= 1, got 0"). For models that hold TSAs. */
tg_status tg_tsa_config_check(const tg_tsa_config *c, const char *who);

extern const tg_layer_class tg_tsa_class;

#ifdef __cplusplus
}
#endif
#endif
