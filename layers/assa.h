/*
 * assa.h - the two "ASSA" attention layers, PyTorch-exact (LAYERS.md 6).
 *
 * - assa_topk (assa_topk.c): the seed document's ASSA(embed_dim, num_heads,
 *   k=32), top-k sparse attention: per query keep the k largest scores,
 *   softmax over those k, zeros elsewhere (LAYERS.md 6.1).
 * - assa_paper (assa_paper.c): the CVPR 2024 paper's Adaptive Sparse
 *   Self-Attention, AST's WindowAttention_sparse: inside one window,
 *   A = w1 * softmax(S) + w2 * relu(S)^2 with a learned relative-position
 *   bias and a learned 2-way mix w (LAYERS.md 6.2).
 *
 * Each has a config struct, a typed init that creates the parameters under
 * their PyTorch state_dict keys, a typed builder that reads like the PyTorch
 * forward, and a registry class (layer.h).
 */
#ifndef TG_ASSA_H
#define TG_ASSA_H

#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- assa_topk */

/* ASSA(embed_dim, num_heads, k=32, bias=True). B and N describe the input
 * for the registry only (0 in the typed API: the builder takes x's shape). */
typedef struct tg_assa_topk_config {
    int64_t B, N;
    int64_t embed_dim, num_heads;
    int64_t k;         /* scores kept per query row, 1 <= k <= N */
    bool    bias;      /* the four projections have a bias */
} tg_assa_topk_config;

/* PyTorch's constructor defaults: k = 32, bias = true; the rest from the key
 * table (`tgraph layers assa_topk`), B and N left at 0 (any). */
tg_assa_topk_config tg_assa_topk_defaults(int64_t embed_dim, int64_t num_heads);

typedef struct tg_assa_topk {
    char                name[64];   /* the builder's scope */
    tg_assa_topk_config c;
    tg_linear_mod       q_proj, k_proj, v_proj, out_proj;
} tg_assa_topk;

/* Check the config (embed_dim % num_heads == 0, k >= 1, and k <= N when N is
 * given) and create "<prefix>.q_proj.weight" [embed_dim, embed_dim],
 * ".bias" [embed_dim], likewise k_proj, v_proj, out_proj (prefix "" for
 * none), drawn in that order with nn.Linear's init from rng (NULL: zeros).
 * `name` is the scope the builder opens. Errors: TG_ERR_INVALID with
 * "assa_topk: embed_dim (10) must be divisible by num_heads (3)",
 * "assa_topk: k must be >= 1, got 0",
 * "assa_topk: k (32) is larger than the sequence length N (6)". */
tg_status tg_assa_topk_init(tg_assa_topk *l, const tg_assa_topk_config *c, tg_params *ps,
                            const char *prefix, const char *name, tg_rng *rng);

/* x [B, N, embed_dim] -> y [B, N, embed_dim]. *attn (may be NULL) receives
 * A [B, num_heads, N, N]: softmax over the k kept scores of each row, 0 at the
 * others (each row has exactly k non-zeros summing to 1). Ties keep the lower
 * key index (tg_topk). Graph errors: x not 3-d or not embed_dim wide, and
 * "assa_topk: k (32) is larger than the sequence length N (6)". */
tg_node *tg_assa_topk_build(tg_graph *g, const tg_assa_topk *l, tg_node *x, tg_node **attn);

extern const tg_layer_class tg_assa_topk_class;

/* --------------------------------------------------------------- assa_paper */

/* WindowAttention_sparse(dim, win_size, num_heads, token_projection='linear',
 * qkv_bias=True, qk_scale=None, attn_drop=0., proj_drop=0.). B_ (batch times
 * windows) and mask_windows (nW of the additive mask input, 0 = no mask) are
 * for the registry only; the builder takes its inputs' shapes. */
typedef struct tg_assa_paper_config {
    int64_t     B_;
    int64_t     dim;
    tg_int_list win_size;       /* (Wh, Ww); one entry w means (w, w) */
    int64_t     num_heads;
    bool        qkv_bias;
    double      qk_scale;       /* 0 / None: head_dim^-0.5 (Python's `qk_scale or ...`) */
    int64_t     mask_windows;
    double      attn_drop, proj_drop;
} tg_assa_paper_config;

/* PyTorch's constructor defaults: qkv_bias = true, qk_scale = None, no dropout
 * (the key table's, `tgraph layers assa_paper`); B_ left at 0 (any). */
tg_assa_paper_config tg_assa_paper_defaults(int64_t dim, int64_t wh, int64_t ww,
                                            int64_t num_heads);

typedef struct tg_assa_paper {
    char                 name[64];
    tg_assa_paper_config c;
    int64_t              wh, ww, head_dim;
    double               scale;
    tg_param            *relative_position_bias_table;   /* [(2Wh-1)(2Ww-1), H] */
    tg_param            *w;                              /* [2] */
    tg_linear_mod        to_q, to_kv;                    /* qkv.to_q, qkv.to_kv */
    tg_linear_mod        proj;
} tg_assa_paper;

/* Check the config and create, under prefix, "relative_position_bias_table"
 * (trunc_normal std .02 in [-2, 2]), "w" (ones), "qkv.to_q.*" [dim, dim],
 * "qkv.to_kv.*" [2 dim, dim] (K rows first), "proj.*" [dim, dim], drawn in
 * PyTorch's order (table, to_q, to_kv, proj). The relative_position_index
 * buffer is recomputed by the builder (an int64 constant). Errors:
 * "assa_paper: dim (10) must be divisible by num_heads (3)",
 * "assa_paper: win_size must be two positive sizes (Wh, Ww), got [2, 0]",
 * "assa_paper: B_ (5) must be a multiple of mask_windows (2)", bad dropout. */
tg_status tg_assa_paper_init(tg_assa_paper *l, const tg_assa_paper_config *c, tg_params *ps,
                             const char *prefix, const char *name, tg_rng *rng);

/* x [B_, N, dim] with N == Wh*Ww, mask NULL or a float [nW, N, N] additive
 * mask (0 / -100; window of row b is b % nW; takes no gradient) -> y
 * [B_, N, dim]. *attn (may be NULL) receives the mixed A [B_, H, N, N] (after
 * attn_drop). Graph errors: "assa_paper: x has N = 5 tokens, but a (2, 3)
 * window holds 6", a wrong width, a mask not [nW, N, N], B_ not a multiple
 * of nW. */
tg_node *tg_assa_paper_build(tg_graph *g, const tg_assa_paper *l, tg_node *x, tg_node *mask,
                             tg_node **attn);

/* The relative_position_index buffer for a (wh, ww) window: int64 [N, N],
 * idx(i, j) = (r_i - r_j + wh-1) * (2ww-1) + (c_i - c_j + ww-1) with tokens
 * numbered row-major (i = r*ww + c). NULL on bad sizes or OOM; caller frees. */
tg_tensor *tg_relative_position_index(int64_t wh, int64_t ww);

extern const tg_layer_class tg_assa_paper_class;

#ifdef __cplusplus
}
#endif
#endif
