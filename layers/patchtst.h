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

#ifdef __cplusplus
extern "C" {
#endif

/* PositionalEmbedding(d_model, max_len=5000): patch_num may not exceed it. */
#define TG_PATCHTST_PE_MAX_LEN 5000

/* TSL's configs for the forecast path. B describes the input for the
 * registry; the builder takes any batch. */
typedef struct tg_patchtst_config {
    int64_t B, enc_in, seq_len, pred_len;
    int64_t d_model, n_heads, e_layers, d_ff;
    double  dropout;
    int64_t factor;              /* FullAttention's; unused, as in TSL */
    int64_t patch_len, stride;   /* the padding is stride, as TSL's PatchTST */
} tg_patchtst_config;

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
