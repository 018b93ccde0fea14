/*
 * gpt.h - nanoGPT's GPT (Karpathy's model.py: GPT-2 blocks with a tied
 * lm_head) as a graph builder, PyTorch-exact (shared/oracle layers.py GPT).
 *
 *     x = drop(wte(idx) + wpe(arange(T)))                       // [B, T, C]
 *     for each block h.i:
 *         x = x + attn(ln_1(x))      // c_attn [3C, C] -> q, k, v; causal sdpa; c_proj
 *         x = x + mlp(ln_2(x))       // c_fc [4C, C], exact GELU, c_proj [C, 4C]
 *     logits = lm_head(ln_f(x))                                  // [B, T, vocab_size]
 *
 * lm_head.weight IS transformer.wte.weight (weight tying): the store holds one
 * parameter, transformer.wte.weight, whose gradient is the sum over its two
 * uses (the embedding and the output projection), and "lm_head.weight" is an
 * alias of it in the store (tg_params_alias): a weights file written by
 * torch.save(model.state_dict()) (with the alias) or without the alias both
 * load; an alias whose values differ from wte's is refused. Saved weights
 * carry the alias too (as PyTorch's state_dict does); gradients exist once,
 * under transformer.wte.weight.
 *
 * Parameters, in nanoGPT's state_dict order and names: transformer.wte.weight
 * [vocab_size, C], transformer.wpe.weight [block_size, C],
 * transformer.h.{i}.ln_1.weight/.bias, .attn.c_attn.weight [3C, C]/.bias,
 * .attn.c_proj.weight [C, C]/.bias, .ln_2.*, .mlp.c_fc.weight [4C, C]/.bias,
 * .mlp.c_proj.weight [C, 4C]/.bias, transformer.ln_f.weight/.bias. bias=false
 * drops every Linear and LayerNorm bias. Init (nanoGPT's _init_weights):
 * Linear and Embedding weights N(0, 0.02), every c_proj.weight
 * N(0, 0.02 / sqrt(2 n_layer)), biases 0, LayerNorm weights 1 (tgraph's RNG,
 * not PyTorch's bit stream).
 */
#ifndef TG_GPT_H
#define TG_GPT_H

#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_GPT_MAX_LAYERS 64

/* GPTConfig, plus B and T (the registry's input shape; the builder takes any
 * B and any T <= block_size). */
typedef struct tg_gpt_config {
    int64_t B, T;
    int64_t vocab_size, block_size;
    int64_t n_layer, n_head, n_embd;   /* n_embd % n_head == 0; head size n_embd / n_head */
    double  dropout;                   /* embeddings, attention weights, residual branches */
    bool    bias;                      /* biases in every Linear and LayerNorm */
} tg_gpt_config;

/* The key table's defaults (`tgraph layers gpt`). */
tg_gpt_config tg_gpt_defaults(void);

typedef struct tg_gpt_block {
    char             name[32];         /* "h.3": its scope, inside "transformer" */
    tg_layernorm_mod ln_1, ln_2;       /* bias NULL when bias=false */
    tg_linear_mod    c_attn, attn_proj;   /* attn.c_attn [3C, C], attn.c_proj [C, C] */
    tg_linear_mod    c_fc, mlp_proj;      /* mlp.c_fc [4C, C], mlp.c_proj [C, 4C] */
} tg_gpt_block;

typedef struct tg_gpt {
    tg_gpt_config    c;
    tg_param        *wte, *wpe;        /* [vocab_size, C] (also lm_head.weight), [block_size, C] */
    tg_gpt_block     h[TG_GPT_MAX_LAYERS];
    tg_layernorm_mod ln_f;
} tg_gpt;

/* Check c (errors name the key: "gpt: n_embd (30) must be divisible by n_head
 * (4)", "gpt: T (9) exceeds block_size (8)") and create the parameters under
 * prefix ("" for none) in state_dict order, plus the alias
 * "<prefix>.lm_head.weight" of the wte weight; rng NULL leaves weights at zero
 * (LayerNorm weights 1), e.g. before loading. */
tg_status tg_gpt_init(tg_gpt *m, const tg_gpt_config *c, tg_params *ps, const char *prefix,
                      tg_rng *rng);

/* idx [B, T] int64 token ids in [0, vocab_size), T <= block_size -> logits
 * [B, T, vocab_size], in scopes named like the state_dict (transformer,
 * transformer.h.0, ..., lm_head). Graph errors: idx not 2-d int64, "gpt:
 * Cannot forward sequence of length 9, block size is only 8". An id out of
 * range is an error of the forward ("embedding: index 11 is out of range for
 * a weight of 11 rows"). Dropout follows tg_graph_training. */
tg_node *tg_gpt_build(tg_graph *g, const tg_gpt *m, tg_node *idx);

extern const tg_layer_class tg_gpt_class;

#ifdef __cplusplus
}
#endif
#endif
