/*
 * assa_topk.c - the seed document's ASSA(embed_dim, num_heads, k=32): top-k
 * sparse attention as a graph builder (LAYERS.md 6.1; oracle class ASSA).
 *
 * The builder reads like the PyTorch forward, line for line:
 *
 *   q, k, v = split(q_proj(x)), split(k_proj(x)), split(v_proj(x))  # (B, h, N, dh)
 *   scores = matmul(q, k.transpose(-1, -2)) / sqrt(dh)               # (B, h, N, N)
 *   top_vals, top_idx = topk(scores, k, dim=-1)                      # (B, h, N, k)
 *   p = softmax(top_vals, dim=-1)
 *   attn = zeros_like(scores).scatter(-1, top_idx, p)                # (B, h, N, N)
 *   out = out_proj(matmul(attn, v).transpose(1, 2).reshape(B, N, C))
 *
 * The backward comes from the ops: topk's indices are constants, so dS is
 * p * (dp - sum(dp * p)) scattered back at the kept positions and 0 elsewhere.
 * What it is not: a sparse kernel. Like the PyTorch code it computes all N^2
 * scores and multiplies the dense A (zeros included) with V.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "assa.h"
#include "op.h"
#include "ops.h"

tg_assa_topk_config tg_assa_topk_defaults(int64_t embed_dim, int64_t num_heads)
{
    tg_assa_topk_config c;
    tg_keys_defaults(tg_assa_topk_class.keys, &c, sizeof c);   /* the key table below */
    c.embed_dim = embed_dim;
    c.num_heads = num_heads;
    c.k = 32;   /* the module's default; the table's 3 is the oracle cases' (N = 6) */
    c.B = c.N = 0;   /* registry only (the input's shape); 0: any, checked when built */
    return c;
}

static tg_status topk_config_check(const tg_assa_topk_config *c)
{
    if (c->embed_dim <= 0 || c->num_heads <= 0)
        return tg_set_error(TG_ERR_INVALID, "assa_topk: embed_dim (%lld) and num_heads (%lld) "
                            "must be positive", (long long)c->embed_dim, (long long)c->num_heads);
    if (c->embed_dim % c->num_heads)
        return tg_set_error(TG_ERR_INVALID, "assa_topk: embed_dim (%lld) must be divisible by "
                            "num_heads (%lld)", (long long)c->embed_dim, (long long)c->num_heads);
    if (c->k < 1)
        return tg_set_error(TG_ERR_INVALID, "assa_topk: k must be >= 1, got %lld",
                            (long long)c->k);
    if (c->N > 0 && c->k > c->N)
        return tg_set_error(TG_ERR_INVALID, "assa_topk: k (%lld) is larger than the sequence "
                            "length N (%lld); torch.topk: selected index k out of range",
                            (long long)c->k, (long long)c->N);
    return TG_OK;
}

tg_status tg_assa_topk_init(tg_assa_topk *l, const tg_assa_topk_config *c, tg_params *ps,
                            const char *prefix, const char *name, tg_rng *rng)
{
    TG__NONNULL(l, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    tg_status st;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->c = *c;
    if ((st = topk_config_check(c))) return st;
    const int64_t C = c->embed_dim;
    /* self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias); then k, v, out */
    if ((st = tg_linear_mod_init(&l->q_proj, ps, prefix, "q_proj", C, C, c->bias, rng)) ||
        (st = tg_linear_mod_init(&l->k_proj, ps, prefix, "k_proj", C, C, c->bias, rng)) ||
        (st = tg_linear_mod_init(&l->v_proj, ps, prefix, "v_proj", C, C, c->bias, rng)) ||
        (st = tg_linear_mod_init(&l->out_proj, ps, prefix, "out_proj", C, C, c->bias, rng)))
        return st;
    return TG_OK;
}

/* split(z) = z.reshape(B, N, h, dh).transpose(1, 2): [B, N, C] -> [B, h, N, dh] */
static tg_node *split_heads(tg_graph *g, tg_node *z, int64_t h)
{
    return tg_rearrange(g, z, "b n (h dh) -> b h n dh", 1, &(tg_axis_len){"h", h});
}

tg_node *tg_assa_topk_build(tg_graph *g, const tg_assa_topk *l, tg_node *x, tg_node **attn)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, x);
    if (attn) *attn = NULL;
    if (!tg_builder_check(g, "assa_topk", 1, &x)) return NULL;
    const tg_tensor *xv = tg_node_value(x);
    if (xv->rank != 3 || xv->shape[2] != l->c.embed_dim) {
        char s[96];
        return tg_graph_fail(g, "%s: x must be [B, N, embed_dim=%lld], got %s", l->name,
                             (long long)l->c.embed_dim, tg_shape_str(xv->rank, xv->shape, s,
                                                                     sizeof s));
    }
    const int64_t B = xv->shape[0], N = xv->shape[1], C = xv->shape[2];
    const int64_t h = l->c.num_heads, dh = C / h, k = l->c.k;
    if (k > N)
        return tg_graph_fail(g, "assa_topk: k (%lld) is larger than the sequence length N (%lld); "
                             "torch.topk: selected index k out of range", (long long)k,
                             (long long)N);
    if (tg_scope_push(g, l->name)) return NULL;

    /* q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x)) */
    tg_node *q = split_heads(g, tg_linear_mod_build(g, &l->q_proj, x), h);   /* [B, h, N, dh] */
    tg_node *kk = split_heads(g, tg_linear_mod_build(g, &l->k_proj, x), h);  /* [B, h, N, dh] */
    tg_node *v = split_heads(g, tg_linear_mod_build(g, &l->v_proj, x), h);   /* [B, h, N, dh] */
    /* scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dh) */
    tg_node *scores = tg_scale(g, tg_einsum(g, "bhnd,bhmd->bhnm", 2, (tg_node *[]){q, kk}),
                               1.0 / sqrt((double)dh));                      /* [B, h, N, N] */
    /* top_vals, top_idx = torch.topk(scores, self.k, dim=-1)   (sorted, descending) */
    tg_node *top_idx = NULL;
    tg_node *top_vals = tg_topk(g, scores, k, -1, true, true, &top_idx);     /* [B, h, N, k] */
    /* p = torch.softmax(top_vals, dim=-1) */
    tg_node *p = tg_softmax(g, top_vals, -1);                                /* [B, h, N, k] */
    /* attn = torch.zeros_like(scores).scatter(-1, top_idx, p) */
    tg_node *zeros = tg_full(g, 4, (int64_t[]){B, h, N, N}, 0.0);
    tg_node *A = tg_scatter(g, zeros, -1, top_idx, p);                       /* [B, h, N, N] */
    /* out = torch.matmul(attn, v).transpose(1, 2).reshape(B, N, C) */
    tg_node *out = tg_einsum(g, "bhnm,bhmd->bnhd", 2, (tg_node *[]){A, v});  /* [B, N, h, dh] */
    out = tg_reshape(g, out, 3, (int64_t[]){B, N, C});                       /* head-major */
    /* out = self.out_proj(out) */
    tg_node *y = tg_linear_mod_build(g, &l->out_proj, out);                  /* [B, N, C] */
    tg_scope_pop(g);
    if (!y) return NULL;
    if (attn) *attn = A;
    return y;
}

/* ---------------------------------------------------------------- registry */

#define AT(f) offsetof(tg_assa_topk_config, f)
static const tg_layer_key assa_topk_keys[] = {
    {"B", TG_KEY_INT, "2", false, "batch", "[1, inf)", AT(B)},
    {"N", TG_KEY_INT, "6", false, "sequence length", "[1, inf)", AT(N)},
    {"embed_dim", TG_KEY_INT, "8", false, "model width", "[1, inf)", AT(embed_dim)},
    {"num_heads", TG_KEY_INT, "1", false,
     "heads (embed_dim % num_heads == 0)", "[1, inf)", AT(num_heads)},
    {"k", TG_KEY_INT, "3", false, "scores kept per query row, 1 <= k <= N", "[1, inf)", AT(k)},
    {"bias", TG_KEY_BOOL, "true", false, "q/k/v/out projections have a bias", NULL, AT(bias)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef AT

static tg_status at_check(const void *vc)
{
    /* B, N >= 1 and the rest of the table's ranges: checked by the parser (tg_keys_resolve) */
    return topk_config_check(vc);
}

static int at_inputs(const void *vc, tg_layer_input *in)
{
    const tg_assa_topk_config *c = vc;
    in[0] = (tg_layer_input){"x", "B N embed_dim", 3, {c->B, c->N, c->embed_dim}, true, 0};
    return 1;
}

static tg_status at_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    return tg_assa_topk_init(state, cfg, ps, prefix, "assa_topk", rng);
}

static tg_status at_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    out->y = tg_assa_topk_build(g, state, in[0], &out->attn);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_assa_topk_class = {
    .name = "assa_topk",
    .summary = "seed ASSA(embed_dim, num_heads, k): softmax over the k largest scores per "
               "query, zeros elsewhere",
    .keys = assa_topk_keys,
    .config_size = sizeof(tg_assa_topk_config),
    .state_size = sizeof(tg_assa_topk),
    .check = at_check,
    .inputs = at_inputs,
    .init = at_init,
    .build = at_build,
};
