/*
 * assa_paper.c - the paper's Adaptive Sparse Self-Attention (AST, CVPR 2024,
 * WindowAttention_sparse) as a graph builder (LAYERS.md 6.2; oracle class
 * AdaptiveSparseWindowAttention).
 *
 * The builder reads like the PyTorch forward, line for line:
 *
 *   q, k, v = self.qkv(x)                                   # (B_, h, N, dh) each
 *   attn = (q * self.scale) @ k.transpose(-2, -1)           # (B_, h, N, N)
 *   bias = table[relative_position_index.view(-1)].view(N, N, h).permute(2, 0, 1)
 *   attn = attn + bias.unsqueeze(0)
 *   if mask is not None:                                    # mask (nW, N, N)
 *       attn = (attn.view(B_ // nW, nW, h, N, N) + mask.unsqueeze(1).unsqueeze(0))
 *       attn = attn.view(-1, h, N, N)
 *   attn0 = softmax(attn);  attn1 = relu(attn) ** 2
 *   w1 = exp(w[0]) / sum(exp(w));  w2 = exp(w[1]) / sum(exp(w))
 *   attn = attn_drop(attn0 * w1 + attn1 * w2)
 *   x = proj_drop(proj((attn @ v).transpose(1, 2).reshape(B_, N, C)))
 *
 * Every backward comes from the ops: the bias table's gradient is
 * index_select's scatter-add over all (i, j) pairs sharing an index, summed
 * over B_; d relu(s)^2 / ds = 2 relu(s); the mix weights get softmax(w)'s
 * backward through exp / sum / div. The mask takes no gradient.
 * What it is not: the window partition / shift of the AST block (the caller
 * cuts windows and builds the shifted-window mask), nor the conv token
 * projection (token_projection='linear' only).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "assa.h"
#include "op.h"
#include "ops.h"

tg_assa_paper_config tg_assa_paper_defaults(int64_t dim, int64_t wh, int64_t ww,
                                            int64_t num_heads)
{
    tg_assa_paper_config c;
    tg_keys_defaults(tg_assa_paper_class.keys, &c, sizeof c);   /* the key table below */
    c.dim = dim;
    c.win_size = (tg_int_list){2, {wh, ww}};
    c.num_heads = num_heads;
    c.B_ = 0;   /* registry only (the input's batch); 0: any, checked when built */
    return c;
}

/* win_size as (Wh, Ww): [wh, ww], or one int w meaning (w, w) as in the
 * PyTorch code's isinstance(win_size, int). 0, 0 when malformed. */
static void win_hw(const tg_int_list *w, int64_t *wh, int64_t *ww)
{
    *wh = *ww = 0;
    if (w->n == 1) *wh = *ww = w->v[0];
    else if (w->n == 2) *wh = w->v[0], *ww = w->v[1];
}

static tg_status paper_config_check(const tg_assa_paper_config *c)
{
    int64_t wh, ww;
    win_hw(&c->win_size, &wh, &ww);
    if (wh <= 0 || ww <= 0 || wh > 4096 || ww > 4096) {
        char s[96];
        return tg_set_error(TG_ERR_INVALID, "assa_paper: win_size must be two positive sizes "
                            "(Wh, Ww) of at most 4096, got %s",
                            tg_shape_str(c->win_size.n, c->win_size.v, s, sizeof s));
    }
    if (c->dim <= 0 || c->num_heads <= 0)
        return tg_set_error(TG_ERR_INVALID, "assa_paper: dim (%lld) and num_heads (%lld) must be "
                            "positive", (long long)c->dim, (long long)c->num_heads);
    if (c->dim % c->num_heads)
        return tg_set_error(TG_ERR_INVALID, "assa_paper: dim (%lld) must be divisible by "
                            "num_heads (%lld)", (long long)c->dim, (long long)c->num_heads);
    if (c->mask_windows < 0)
        return tg_set_error(TG_ERR_INVALID, "assa_paper: mask_windows must be >= 0 (0: no mask), "
                            "got %lld", (long long)c->mask_windows);
    if (c->mask_windows > 0 && c->B_ > 0 && c->B_ % c->mask_windows)
        return tg_set_error(TG_ERR_INVALID, "assa_paper: B_ (%lld) must be a multiple of "
                            "mask_windows (%lld)", (long long)c->B_, (long long)c->mask_windows);
    if (!(c->attn_drop >= 0 && c->attn_drop <= 1) || !(c->proj_drop >= 0 && c->proj_drop <= 1))
        return tg_set_error(TG_ERR_INVALID, "assa_paper: attn_drop (%g) and proj_drop (%g) must "
                            "be in [0, 1]", c->attn_drop, c->proj_drop);
    return TG_OK;
}

tg_tensor *tg_relative_position_index(int64_t wh, int64_t ww)
{
    if (wh <= 0 || ww <= 0 || wh > 4096 || ww > 4096) {
        tg_set_error(TG_ERR_INVALID, "relative_position_index: bad window (%lld, %lld)",
                     (long long)wh, (long long)ww);
        return NULL;
    }
    const int64_t N = wh * ww;
    tg_tensor *t = tg_tensor_new(TG_I64, 2, (int64_t[]){N, N});
    if (!t) return NULL;
    int64_t *idx = t->data;                                                  /* [N, N] */
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < N; j++) {
            int64_t ri = i / ww, ci = i % ww, rj = j / ww, cj = j % ww;
            idx[i * N + j] = (ri - rj + wh - 1) * (2 * ww - 1) + (ci - cj + ww - 1);
        }
    return t;
}

tg_status tg_assa_paper_init(tg_assa_paper *l, const tg_assa_paper_config *c, tg_params *ps,
                             const char *prefix, const char *name, tg_rng *rng)
{
    TG__NONNULL(l, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char full[TG_NAME_MAX], qkv[TG_NAME_MAX];
    tg_status st;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->c = *c;
    if ((st = paper_config_check(c))) return st;
    win_hw(&c->win_size, &l->wh, &l->ww);
    const int64_t H = c->num_heads, dim = c->dim;
    l->head_dim = dim / H;
    /* self.scale = qk_scale or head_dim ** -0.5 */
    l->scale = c->qk_scale != 0 ? c->qk_scale : pow((double)l->head_dim, -0.5);
    if ((st = tg_name_join(full, sizeof full, prefix, "relative_position_bias_table")) ||
        (st = tg_name_join(qkv, sizeof qkv, prefix, "qkv")))
        return st;
    /* self.relative_position_bias_table = nn.Parameter(zeros((2Wh-1)*(2Ww-1), H));
     * trunc_normal_(table, std=.02)   (absolute bounds +-2) */
    const int64_t T = (2 * l->wh - 1) * (2 * l->ww - 1);
    if (!(l->relative_position_bias_table = tg_params_add(ps, full, 2, (int64_t[]){T, H})))
        return TG_ERR_INVALID;
    if (rng) tg_init_trunc_normal(&l->relative_position_bias_table->value, 0, 0.02, -2, 2, rng);
    /* self.w = nn.Parameter(torch.ones(2))   (registered last, listed second) */
    if ((st = tg_name_join(full, sizeof full, prefix, "w"))) return st;
    if (!(l->w = tg_params_add(ps, full, 1, (int64_t[]){2}))) return TG_ERR_INVALID;
    tg_init_constant(&l->w->value, 1.0);
    /* self.qkv = LinearProjection(dim, num_heads, dim // num_heads, bias=qkv_bias);
     * self.proj = nn.Linear(dim, dim) */
    if ((st = tg_linear_mod_init(&l->to_q, ps, qkv, "to_q", dim, dim, c->qkv_bias, rng)) ||
        (st = tg_linear_mod_init(&l->to_kv, ps, qkv, "to_kv", dim, 2 * dim, c->qkv_bias, rng)) ||
        (st = tg_linear_mod_init(&l->proj, ps, prefix, "proj", dim, dim, true, rng)))
        return st;
    return TG_OK;
}

/* LinearProjection.forward: q = to_q(x) as (B_, h, N, dh); kv = to_kv(x)
 * .reshape(B_, N, 2, h, dh).permute(2, 0, 3, 1, 4); k, v = kv[0], kv[1]. */
static void qkv_build(tg_graph *g, const tg_assa_paper *l, tg_node *x, tg_node **q, tg_node **k,
                      tg_node **v)
{
    const int64_t H = l->c.num_heads;
    const tg_tensor *xv = tg_node_value(x);
    const int64_t B_ = xv->shape[0], N = xv->shape[1];
    tg_node *kv[2] = {NULL, NULL};
    *q = *k = *v = NULL;
    if (tg_scope_push(g, "qkv")) return;
    *q = tg_rearrange(g, tg_linear_mod_build(g, &l->to_q, x), "b n (h dh) -> b h n dh", 1,
                      &(tg_axis_len){"h", H});                              /* [B_, h, N, dh] */
    tg_node *both = tg_rearrange(g, tg_linear_mod_build(g, &l->to_kv, x),
                                 "b n (two h dh) -> two b h n dh", 2,
                                 (tg_axis_len[]){{"two", 2}, {"h", H}}); /* [2, B_, h, N, dh] */
    if (!tg_split(g, both, 2, (int64_t[]){1, 1}, 0, kv)) {
        *k = tg_reshape(g, kv[0], 4, (int64_t[]){B_, H, N, l->head_dim});  /* kv[0] */
        *v = tg_reshape(g, kv[1], 4, (int64_t[]){B_, H, N, l->head_dim});  /* kv[1] */
    }
    tg_scope_pop(g);
}

/* relative_position_bias_table[relative_position_index.view(-1)]
 *     .view(N, N, h).permute(2, 0, 1)   -> [h, N, N] */
static tg_node *position_bias(tg_graph *g, const tg_assa_paper *l)
{
    const int64_t N = l->wh * l->ww, H = l->c.num_heads;
    tg_tensor *index = tg_relative_position_index(l->wh, l->ww);
    if (!index) return tg_graph_fail(g, "%s: relative_position_index: %s", l->name,
                                     tg_last_error());
    if (tg_scope_push(g, "relative_position_bias_table")) {
        tg_tensor_free(index);
        return NULL;
    }
    tg_node *idx = tg_constant(g, "relative_position_index", index);        /* [N, N] int64 */
    tg_tensor_free(index);
    idx = tg_reshape(g, idx, 1, (int64_t[]){N * N});                         /* [N*N] */
    tg_node *bias = tg_index_select(g, tg_param_node(g, l->relative_position_bias_table), 0,
                                    idx);                                    /* [N*N, h] */
    bias = tg_reshape(g, bias, 3, (int64_t[]){N, N, H});                     /* [N, N, h] */
    bias = tg_permute(g, bias, (int[]){2, 0, 1});                            /* [h, N, N] */
    tg_scope_pop(g);
    return bias;
}

tg_node *tg_assa_paper_build(tg_graph *g, const tg_assa_paper *l, tg_node *x, tg_node *mask,
                             tg_node **attn)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, x);
    char s[96];
    if (attn) *attn = NULL;
    if (!tg_builder_check(g, "assa_paper", 1, &x) ||
        (mask && !tg_builder_check(g, "assa_paper", 1, &mask)))
        return NULL;
    const tg_tensor *xv = tg_node_value(x);
    const int64_t H = l->c.num_heads, C = l->c.dim, Nw = l->wh * l->ww;
    if (xv->rank != 3 || xv->shape[2] != C)
        return tg_graph_fail(g, "%s: x must be [B_, N, dim=%lld], got %s", l->name, (long long)C,
                             tg_shape_str(xv->rank, xv->shape, s, sizeof s));
    const int64_t B_ = xv->shape[0], N = xv->shape[1];
    if (N != Nw)
        return tg_graph_fail(g, "%s: x has N = %lld tokens, but a (%lld, %lld) window holds "
                             "Wh*Ww = %lld", l->name, (long long)N, (long long)l->wh,
                             (long long)l->ww, (long long)Nw);
    int64_t nW = 0;
    if (mask) {
        const tg_tensor *mv = tg_node_value(mask);
        if (mv->rank != 3 || mv->shape[0] < 1 || mv->shape[1] != N || mv->shape[2] != N)
            return tg_graph_fail(g, "%s: mask must be [nW, N=%lld, N=%lld], got %s", l->name,
                                 (long long)N, (long long)N,
                                 tg_shape_str(mv->rank, mv->shape, s, sizeof s));
        nW = mv->shape[0];
        if (B_ % nW)
            return tg_graph_fail(g, "%s: B_ (%lld) must be a multiple of the mask's windows nW "
                                 "(%lld)", l->name, (long long)B_, (long long)nW);
    }
    if (tg_scope_push(g, l->name)) return NULL;

    /* q, k, v = self.qkv(x) */
    tg_node *q, *k, *v;
    qkv_build(g, l, x, &q, &k, &v);                                         /* [B_, h, N, dh] */
    /* q = q * self.scale; attn = q @ k.transpose(-2, -1) */
    q = tg_scale(g, q, l->scale);
    tg_node *S = tg_einsum(g, "bhnd,bhmd->bhnm", 2, (tg_node *[]){q, k});   /* [B_, h, N, N] */
    /* attn = attn + relative_position_bias.unsqueeze(0) */
    S = tg_add(g, S, position_bias(g, l));                                   /* + [h, N, N] */
    /* attn = attn.view(B_ // nW, nW, h, N, N) + mask.unsqueeze(1).unsqueeze(0) */
    if (mask) {
        S = tg_reshape(g, S, 5, (int64_t[]){B_ / nW, nW, H, N, N});
        S = tg_add(g, S, tg_reshape(g, mask, 4, (int64_t[]){nW, 1, N, N}));
        S = tg_reshape(g, S, 4, (int64_t[]){B_, H, N, N});                  /* window = b % nW */
    }
    /* attn0 = self.softmax(attn); attn1 = self.relu(attn) ** 2 */
    tg_node *attn0 = tg_softmax(g, S, -1);                                   /* dense branch */
    tg_node *attn1 = tg_square(g, tg_relu(g, S));                            /* sparse branch */
    /* w1 = exp(w[0]) / sum(exp(w)); w2 = exp(w[1]) / sum(exp(w)) */
    tg_node *ew = tg_exp(g, tg_param_node(g, l->w));                         /* [2] */
    tg_node *ew_sum = tg_sum(g, ew, NULL, 0, false);                         /* [] */
    tg_node *w1 = tg_div(g, tg_narrow(g, ew, 0, 0, 1), ew_sum);              /* [1] */
    tg_node *w2 = tg_div(g, tg_narrow(g, ew, 0, 1, 1), ew_sum);              /* [1] */
    /* attn = attn0 * w1 + attn1 * w2; attn = self.attn_drop(attn) */
    tg_node *A = tg_add(g, tg_mul(g, attn0, w1), tg_mul(g, attn1, w2));      /* [B_, h, N, N] */
    A = tg_dropout(g, A, l->c.attn_drop);
    /* x = (attn @ v).transpose(1, 2).reshape(B_, N, C) */
    tg_node *out = tg_einsum(g, "bhnm,bhmd->bnhd", 2, (tg_node *[]){A, v}); /* [B_, N, h, dh] */
    out = tg_reshape(g, out, 3, (int64_t[]){B_, N, C});                      /* head-major */
    /* x = self.proj(x); x = self.proj_drop(x) */
    tg_node *y = tg_dropout(g, tg_linear_mod_build(g, &l->proj, out), l->c.proj_drop);
    tg_scope_pop(g);
    if (!y) return NULL;
    if (attn) *attn = A;
    return y;
}

/* ---------------------------------------------------------------- registry */

#define AP(f) offsetof(tg_assa_paper_config, f)
static const tg_layer_key assa_paper_keys[] = {
    {"B_", TG_KEY_INT, "3", false, "batch * windows", "[1, inf)", AP(B_)},
    {"dim", TG_KEY_INT, "8", false, "channels", "[1, inf)", AP(dim)},
    {"win_size", TG_KEY_INT_LIST, "[2, 3]", false,
     "window (Wh, Ww); N = Wh*Ww", NULL, AP(win_size)},
    {"num_heads", TG_KEY_INT, "2", false,
     "heads (dim % num_heads == 0)", "[1, inf)", AP(num_heads)},
    {"qkv_bias", TG_KEY_BOOL, "true", false,
     "qkv.to_q / qkv.to_kv have a bias", NULL, AP(qkv_bias)},
    {"qk_scale", TG_KEY_FLOAT, "null", true,
     "score scale; null: head_dim^-0.5", NULL, AP(qk_scale)},
    {"mask_windows", TG_KEY_INT, "0", false,
     "nW of the additive mask input [nW, N, N]; 0: no mask", "[0, inf)", AP(mask_windows)},
    {"attn_drop", TG_KEY_FLOAT, "0", false,
     "dropout on the attention weights (training only)", "[0, 1]", AP(attn_drop)},
    {"proj_drop", TG_KEY_FLOAT, "0", false,
     "dropout after proj (training only)", "[0, 1]", AP(proj_drop)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef AP

static tg_status ap_check(const void *vc)
{
    /* B_ >= 1 and the rest of the table's ranges: checked by the parser (tg_keys_resolve) */
    return paper_config_check(vc);
}

static int ap_inputs(const void *vc, tg_layer_input *in)
{
    const tg_assa_paper_config *c = vc;
    int64_t wh, ww;
    win_hw(&c->win_size, &wh, &ww);
    in[0] = (tg_layer_input){"x", "B_ N dim", 3, {c->B_, wh * ww, c->dim}, true, 0};
    if (c->mask_windows <= 0) return 1;
    in[1] = (tg_layer_input){"mask", "mask_windows N N", 3, {c->mask_windows, wh * ww, wh * ww},
                             false, 0};
    return 2;
}

static tg_status ap_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    return tg_assa_paper_init(state, cfg, ps, prefix, "assa_paper", rng);
}

static tg_status ap_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    const tg_assa_paper *l = state;
    out->y = tg_assa_paper_build(g, l, in[0], l->c.mask_windows > 0 ? in[1] : NULL, &out->attn);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_assa_paper_class = {
    .name = "assa_paper",
    .summary = "paper ASSA (AST WindowAttention_sparse): w1*softmax(S) + w2*relu(S)^2 in a "
               "window, relative-position bias, optional mask",
    .keys = assa_paper_keys,
    .config_size = sizeof(tg_assa_paper_config),
    .state_size = sizeof(tg_assa_paper),
    .check = ap_check,
    .inputs = ap_inputs,
    .init = ap_init,
    .build = ap_build,
};
