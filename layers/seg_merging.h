/*
 * seg_merging.h - Crossformer's SegMerging (TSL layers/Crossformer_EncDec.py),
 * PyTorch-exact. LAYERS.md section 4.1.
 */
#ifndef TG_SEG_MERGING_H
#define TG_SEG_MERGING_H

#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* SegMerging(d_model, win_size, norm_layer=nn.LayerNorm). b, ts_d and seg_num
 * describe the input for the registry only. */
typedef struct tg_seg_merging_config {
    int64_t b, ts_d, seg_num, d_model;
    int64_t win_size;       /* >= 1; win_size segments merge into one token */
} tg_seg_merging_config;

/* The key table's defaults (`tgraph layers seg_merging`). */
tg_seg_merging_config tg_seg_merging_defaults(void);

typedef struct tg_seg_merging {
    char             name[64];       /* its scope: "seg_merging", "merge_layer" */
    int64_t          d_model, win_size;
    tg_linear_mod    linear_trans;   /* Linear(win_size * d_model, d_model) */
    tg_layernorm_mod norm;           /* LayerNorm(win_size * d_model): the merged width */
} tg_seg_merging;

/* Create "<prefix>.<name>.linear_trans.{weight,bias}" and "...norm.{weight,bias}"
 * (state_dict order; rng NULL: zeros, norm 1/0). Errors: d_model or win_size < 1. */
tg_status tg_seg_merging_init(tg_seg_merging *l, int64_t d_model, int64_t win_size,
                              tg_params *ps, const char *prefix, const char *name, tg_rng *rng);

/* x [b, ts_d, seg_num, d_model] -> [b, ts_d, ceil(seg_num / win_size), d_model].
 * When seg_num % win_size != 0 the last pad = win_size - seg_num % win_size
 * segments are appended again (their gradient flows back into them). Graph
 * errors: x not 4-d, x's d_model not the layer's, pad > seg_num (PyTorch's
 * strided slices would then differ in length and torch.cat would fail). */
tg_node *tg_seg_merging_build(tg_graph *g, const tg_seg_merging *l, tg_node *x);

/* The padding SegMerging appends to seg_num segments (0 when none). */
int64_t tg_seg_merging_pad(int64_t seg_num, int64_t win_size);

extern const tg_layer_class tg_seg_merging_class;

#ifdef __cplusplus
}
#endif
#endif
