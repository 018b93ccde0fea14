/*
 * crossformer.h - Time-Series-Library's Crossformer forecasting model
 * (models/Crossformer.py + layers/Crossformer_EncDec.py + the PatchEmbedding of
 * layers/Embed.py), PyTorch-exact. LAYERS.md sections 4.2-4.3.
 *
 *     x (B, seq_len, enc_in)
 *       -> enc_value_embedding: replicate-pad the end to pad_in_len, cut into
 *          in_seg_num patches of seg_len, Linear(seg_len, d_model, no bias)
 *          + sinusoidal position embedding
 *       -> + enc_pos_embedding, pre_norm
 *       -> encoder: e_layers scale blocks (block 0: TSA; block l >= 1:
 *          SegMerging(win_size) then TSA), outputs [x, out_0, ..., out_{e-1}]
 *       -> decoder: e_layers + 1 DecoderLayers on dec_pos_embedding, layer i
 *          cross-attending encoder output i; their predictions are summed
 *       -> the last pred_len steps: y (B, pred_len, enc_in)
 *
 * One model serves training and evaluation: dropout follows tg_graph_training.
 */
#ifndef TG_CROSSFORMER_H
#define TG_CROSSFORMER_H

#include "attention.h"
#include "layer.h"
#include "modules.h"
#include "seg_merging.h"
#include "tsa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* e_layers above this are refused (the model struct holds its blocks inline). */
#define TG_CROSSFORMER_MAX_E_LAYERS 16
/* PositionalEmbedding(d_model, max_len=5000): in_seg_num may not exceed it. */
#define TG_CROSSFORMER_PE_MAX_LEN 5000

/* TSL's configs for the forecast path. TSL hard-codes seg_len 12 and
 * win_size 2; here they are keys with those defaults (the original
 * Crossformer repo's main.py uses seg_len 6). B describes the input for the
 * registry; the builder takes any batch. */
typedef struct tg_crossformer_config {
    int64_t B, enc_in, seq_len, pred_len;
    int64_t d_model, n_heads;
    int64_t d_ff;           /* the TSAs' MLP width; 0 / None: 4 * d_model */
    int64_t e_layers;       /* encoder scale blocks; the decoder has e_layers + 1 layers */
    int64_t factor;         /* router vectors per segment in every TSA */
    double  dropout;
    int64_t seg_len, win_size;
} tg_crossformer_config;

/* The key table's defaults (`tgraph layers crossformer`). */
tg_crossformer_config tg_crossformer_defaults(void);

/* scale_block(configs, win_size, d_model, n_heads, d_ff, depth=1, dropout, seg_num, factor) */
typedef struct tg_scale_block {
    char           name[64];          /* "encode_blocks.<l>" */
    bool           has_merge;         /* win_size > 1 */
    tg_seg_merging merge_layer;
    tg_tsa         encode_layer;      /* encode_layers.0 (Crossformer uses depth 1) */
} tg_scale_block;

/* DecoderLayer(TSA, AttentionLayer(FullAttention(False)), seg_len, d_model, d_ff, dropout) */
typedef struct tg_decoder_layer {
    char               name[64];      /* "decode_layers.<i>" */
    double             dropout;
    tg_tsa             self_attention;
    tg_attention_layer cross_attention;
    tg_layernorm_mod   norm1, norm2;
    tg_mlp_mod         MLP1;          /* d_model -> d_model -> d_model (d_ff is not used) */
    tg_linear_mod      linear_pred;   /* Linear(d_model, seg_len) */
} tg_decoder_layer;

/* The whole model's typed state (~115 KB: every block inline; allocate it
 * rather than putting it on a small stack). */
typedef struct tg_crossformer {
    tg_crossformer_config c;
    int64_t pad_in_len, pad_out_len;  /* ceil(len / seg_len) * seg_len */
    int64_t in_seg_num, out_seg_num;  /* pad_in_len / seg_len; ceil(in_seg / w^(e-1)) */
    int64_t dec_seg_num;              /* pad_out_len / seg_len */
    tg_linear_mod    value_embedding; /* enc_value_embedding.value_embedding */
    tg_param        *enc_pos_embedding;   /* [1, enc_in, in_seg_num, d_model] */
    tg_param        *dec_pos_embedding;   /* [1, enc_in, dec_seg_num, d_model] */
    tg_layernorm_mod pre_norm;
    tg_scale_block   encode_blocks[TG_CROSSFORMER_MAX_E_LAYERS];
    tg_decoder_layer decode_layers[TG_CROSSFORMER_MAX_E_LAYERS + 1];
} tg_crossformer;

/* Check c (errors say which key and why) and create every parameter under
 * prefix ("" for none) with PyTorch's state_dict keys, in state_dict order
 * (enc_pos_embedding, dec_pos_embedding, enc_value_embedding.value_embedding.weight,
 * pre_norm.*, encoder.encode_blocks.*, decoder.decode_layers.*), drawn from rng
 * in construction order (rng NULL: zeros, norms 1/0). The position embedding
 * buffer enc_value_embedding.position_embedding.pe is not a parameter: the
 * builder recomputes the rows it needs. */
tg_status tg_crossformer_init(tg_crossformer *m, const tg_crossformer_config *c, tg_params *ps,
                              const char *prefix, tg_rng *rng);

/* x_enc [B, seq_len, enc_in] -> y [B, pred_len, enc_in]. Graph errors: x_enc
 * not 3-d or its seq_len / enc_in not the model's. */
tg_node *tg_crossformer_build(tg_graph *g, const tg_crossformer *m, tg_node *x_enc);

/* PositionalEmbedding's table rows [0, len) as PyTorch computes them in
 * float32: pe[p, 2i] = sin(p * div_i), pe[p, 2i+1] = cos(p * div_i), div_i =
 * exp(2i * -(ln(10000) / d_model)), every step rounded to float. Bit-equal to
 * PyTorch's scalar kernels (libm; ATEN_CPU_CAPABILITY=default); PyTorch's
 * AVX2 kernels use SLEEF's 1-ulp exp/sin/cos and differ in the last bits
 * (< 1e-6 over the first 64 positions, < 3e-4 anywhere). d_model must be
 * even; out holds len * d_model floats, row-major. */
void tg_positional_embedding_fill(float *out, int64_t len, int64_t d_model);

extern const tg_layer_class tg_crossformer_class;

#ifdef __cplusplus
}
#endif
#endif
