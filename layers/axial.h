/*
 * axial.h - lucidrains' AxialAttention (axial-attention 0.6.1), PyTorch-exact.
 * LAYERS.md section 5.
 *
 * Multi-head self-attention along one axis of an N-d tensor at a time, the
 * other axes folded into the batch; one SelfAttention per axial axis, summed
 * (every axis sees the same x) or chained. No mask, dropout, residual, norm or
 * positional embedding (those belong to AxialImageTransformer, not here).
 *
 *     tg_axial_attention_config c = tg_axial_attention_defaults(64);  // AxialAttention(64)
 *     tg_axial_attention ax;
 *     tg_axial_attention_init(&ax, &c, ps, "", "", &rng);   // axial_attentions.{i}.fn.*
 *     tg_node *y = tg_axial_attention_build(g, &ax, x);     // x [b, h, w, 64] -> same shape
 */
#ifndef TG_AXIAL_H
#define TG_AXIAL_H

#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* AxialAttention(dim, num_dimensions=2, heads=8, dim_heads=None, dim_index=-1,
 * sum_axial_out=True). `shape` is the registry's input shape (x has
 * num_dimensions + 2 axes); the typed API ignores it and takes x's shape. */
typedef struct tg_axial_attention_config {
    tg_int_list shape;           /* registry only */
    int64_t     dim;             /* embedding size: x.shape[dim_index] */
    int64_t     num_dimensions;  /* axial axes; x has num_dimensions + 2 axes */
    int64_t     heads;
    int64_t     dim_heads;       /* 0 / None: dim // heads */
    int64_t     dim_index;       /* the embedding axis; negative counts from the end, not 0 */
    bool        sum_axial_out;   /* true: sum over axes; false: chain them */
} tg_axial_attention_config;

/* PyTorch's constructor defaults for AxialAttention(dim) (heads = 8; the rest
 * from the key table, `tgraph layers axial`); shape left empty. */
tg_axial_attention_config tg_axial_attention_defaults(int64_t dim);

/* The per-axis SelfAttention (lucidrains' `fn`): to_q [hidden, dim] and
 * to_kv [2*hidden, dim] without bias, to_out [dim, hidden] with bias. */
typedef struct tg_axial_self_attention {
    int64_t       heads, dim_heads;
    tg_linear_mod to_q, to_kv, to_out;
} tg_axial_self_attention;

#define TG_AXIAL_MAX_AXES (TG_MAX_RANK - 2)

typedef struct tg_axial_attention {
    char                      name[64];     /* scope name ("" for none) */
    tg_axial_attention_config c;
    int                       total;        /* num_dimensions + 2 */
    int                       dim_index;    /* normalised to [1, total) */
    int                       n_axes;       /* = num_dimensions */
    int                       perm[TG_AXIAL_MAX_AXES][TG_MAX_RANK]; /* [others..., axis, emb] */
    tg_axial_self_attention   fn[TG_AXIAL_MAX_AXES];                /* axial_attentions.{i}.fn */
} tg_axial_attention;

/* Check the config and create the parameters
 * "<prefix>.<name>.axial_attentions.{i}.fn.{to_q,to_kv,to_out}.*" (empty prefix
 * and/or name are left out), initialised like PyTorch from rng in construction
 * order (NULL: left zero). Errors (TG_ERR_INVALID, tg_last_error()): heads or
 * dim not positive, "hidden dimension must be divisible by number of heads"
 * (dim % heads, checked even when dim_heads is given, as lucidrains does),
 * dim_heads negative, num_dimensions outside [1, TG_MAX_RANK - 2],
 * "Dimension out of range (expected to be in range of [-4, 3], but got 4)" for
 * dim_index, and dim_index naming the batch axis 0. */
tg_status tg_axial_attention_init(tg_axial_attention *l, const tg_axial_attention_config *c,
                                  tg_params *ps, const char *prefix, const char *name,
                                  tg_rng *rng);

/* x [num_dimensions + 2 axes, x.shape[dim_index] == dim] -> y, same shape.
 * Graph errors: "wrong number of dimensions", "wrong embedding size" (the
 * asserts of lucidrains' forward), and whatever the ops report (dtype). */
tg_node *tg_axial_attention_build(tg_graph *g, const tg_axial_attention *l, tg_node *x);

/* One axis only: axial_attentions.{axis}(x), same shape as x (the summands of
 * sum_axial_out mode). */
tg_node *tg_axial_attention_build_axis(tg_graph *g, const tg_axial_attention *l, int axis,
                                       tg_node *x);

extern const tg_layer_class tg_axial_attention_class;

#ifdef __cplusplus
}
#endif
#endif
