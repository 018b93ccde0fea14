/*
 * patchtst.h - PatchTST (Nie et al., "A Time Series is Worth 64 Words",
 * ICLR 2023), as Time-Series-Library's models/PatchTST.py runs it on the
 * forecast path:
 *
 *     x (B, seq_len, enc_in)
 *       -> instance normalisation over time (mean detached, population std
 *          with 1e-5 inside the sqrt; the std is not detached)
 *       -> patch_embedding: channels apart, replicate the last step stride
 *          times, cut patches of patch_len every stride (patch_num =
 *          (seq_len - patch_len) // stride + 2), value_embedding =
 *          Linear(patch_len, d_model, no bias) + sinusoidal position
 *          embedding, dropout                  -> (B*enc_in, patch_num, d_model)
 *       -> encoder: e_layers TSL EncoderLayers (FullAttention, no mask), then
 *          norm = Sequential(Transpose(1, 2), BatchNorm1d(d_model), Transpose(1, 2))
 *       -> head: flatten (d_model, patch_num) in that order, Linear(d_model *
 *          patch_num, pred_len); head_dropout
 *       -> de-normalisation                    -> y (B, pred_len, enc_in)
 *
 * Parameters by state_dict name: patch_embedding.value_embedding.weight
 * [d_model, patch_len], encoder.attn_layers.{i}.* (the TSL EncoderLayer's),
 * encoder.norm.1.weight / bias [d_model], head.linear.weight [pred_len,
 * d_model * patch_num], head.linear.bias. The buffer
 * patch_embedding.position_embedding.pe is not a parameter: the builder
 * recomputes the rows it needs (tg_positional_embedding_fill).
 *
 * One model serves training and evaluation: dropout follows
 * tg_graph_training.
 */
#ifndef TG_PATCHTST_H
#define TG_PATCHTST_H

#include "layer.h"
#include "modules.h"
#include "tsl_encoder.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PositionalEmbedding(d_model, max_len=5000): patch_num may not exceed it. */
#define TG_PATCHTST_PE_MAX_LEN 5000

/* TSL's configs for the forecast path. B describes the input for the
 * registry; the builder takes any batch. */
typedef struct tg_patchtst_config {
    int64_t    B, enc_in, seq_len, pred_len;
    int64_t    d_model, n_heads, e_layers;
    int64_t    d_ff;                 /* 0 / None: 4 * d_model */
    double     dropout;              /* every dropout, the head's too (training only) */
    int64_t    factor;               /* FullAttention's; unused, as in TSL */
    tg_key_str activation;           /* "gelu" or "relu" */
    int64_t    patch_len, stride;    /* the padding is stride, as TSL's PatchTST */
} tg_patchtst_config;

/* The key table's defaults (`tgraph layers patchtst`): the oracle's toy
 * sizes (make_case.py --list), TSL's patch_len 16 / stride 8 scaled down. */
tg_patchtst_config tg_patchtst_defaults(void);

/* The model's typed state (~the TSL encoder's size: allocate it rather than
 * putting it on a small stack). */
typedef struct tg_patchtst {
    tg_patchtst_config c;
    int64_t            patch_num;         /* (seq_len - patch_len) // stride + 2 */
    int64_t            head_nf;           /* d_model * patch_num */
    tg_linear_mod      value_embedding;   /* patch_embedding.value_embedding, no bias */
    tg_tsl_encoder     encoder;           /* encoder.attn_layers.* (no LayerNorm) */
    tg_batchnorm_mod   norm;              /* encoder.norm.1: BatchNorm1d(d_model) */
    tg_linear_mod      head;              /* head.linear */
} tg_patchtst;

/* Check c (errors name the key) and create every parameter and buffer under
 * prefix ("" for none) with PyTorch's state_dict keys, in state_dict order
 * (patch_embedding.value_embedding.weight, encoder.attn_layers.*,
 * encoder.norm.1.weight / bias and its buffers running_mean, running_var,
 * num_batches_tracked, head.linear.*), drawn from rng in construction order
 * (rng NULL: zeros, norm gains 1). */
tg_status tg_patchtst_init(tg_patchtst *m, const tg_patchtst_config *c, tg_params *ps,
                           const char *prefix, tg_rng *rng);

/* x_enc [B, seq_len, enc_in] -> y [B, pred_len, enc_in] (B and enc_in from
 * x_enc: channels are independent). Graph errors: x_enc not 3-d or its
 * seq_len not the model's. In training mode (tg_graph_set_training) the
 * encoder norm normalises with the batch's statistics and every forward
 * updates its running ones. */
tg_node *tg_patchtst_build(tg_graph *g, const tg_patchtst *m, tg_node *x_enc);

/* The number of patches PatchEmbedding cuts from seq_len steps padded with
 * padding copies of the last: (seq_len + padding - patch_len) / stride + 1,
 * or 0 when patch_len > seq_len + padding or a size is out of range. */
int64_t tg_patch_count(int64_t seq_len, int64_t patch_len, int64_t stride, int64_t padding);

/* PatchEmbedding's padding_patch_layer and unfold in one gather: x [N, C, T]
 * (right-padded with `padding` copies of the last step) -> patches
 * [N*C, patch_num, patch_len], patch p holding steps p*stride ..
 * p*stride + patch_len - 1 (x.unfold(-1, patch_len, stride) reshaped).
 * Graph errors: x not 3-d, patch_len or stride < 1, padding < 0, patch_len
 * longer than the padded series. */
tg_node *tg_patch_unfold(tg_graph *g, tg_node *x, int64_t patch_len, int64_t stride,
                         int64_t padding);

extern const tg_layer_class tg_patchtst_class;

#ifdef __cplusplus
}
#endif
#endif
