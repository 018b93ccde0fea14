/*
 * axial.c - lucidrains' AxialAttention (axial-attention 0.6.1) as a graph
 * builder, PyTorch-exact (LAYERS.md 5.1; the oracle is AxialAttention in
 * shared/oracle/layers.py).
 *
 * What this is: the unmasked building block of the Axial Transformer (Ho et al.
 * 2019). For each axial axis, in increasing axis order, PermuteToFrom moves
 * (axis, emb) to the end, folds the other axes into a batch, runs a plain
 * multi-head SelfAttention along the axis, and undoes the fold:
 *
 *   y = x.permute(*perm).contiguous(); shape = y.shape
 *   y = fn(y.reshape(-1, shape[-2], shape[-1]))       # SelfAttention on (n, t, dim)
 *   y = y.reshape(shape).permute(*inv_perm).contiguous()
 *
 * and AxialAttention sums the axes' results (each sees the same x) or chains
 * them. The fold and unfold are one einops rearrange each ("b a0 a1 dim ->
 * (b a1) a0 dim"), which is a view when no element moves.
 *
 * What this is not: the "axial attention" code of the blog the seed document
 * was written from (the one looping x.transpose(1, i+2) on a [batch, seq_len,
 * dim] tensor). That code cannot run: it transposes axes a 3-d tensor does not
 * have, splits heads with a raw .view that mixes positions and channels, has no
 * Q/K/V and no QK^T, softmaxes the axes together, and never restores the shape
 * (LAYERS.md 5.2). It is not salvageable, so this file implements the real
 * layer instead. No mask, dropout, residual, norm or positional embedding.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "axial.h"
#include "op.h"
#include "ops.h"

tg_axial_attention_config tg_axial_attention_defaults(int64_t dim)
{
    tg_axial_attention_config c;
    tg_keys_defaults(tg_axial_attention_class.keys, &c, sizeof c);   /* the key table below */
    c.dim = dim;
    c.heads = 8;   /* AxialAttention(dim, heads=8); the table's 2 is the oracle cases' */
    c.shape = (tg_int_list){0, {0}};   /* registry only (the input's shape) */
    return c;
}

/* ------------------------------------------------------------------ config */

static tg_status axial_check(const tg_axial_attention_config *c, const char *who)
{
    if (c->heads <= 0 || c->dim <= 0)
        return tg_set_error(TG_ERR_INVALID, "%s: dim (%lld) and heads (%lld) must be positive",
                            who, (long long)c->dim, (long long)c->heads);
    /* assert dim % heads == 0 (lucidrains checks it even when dim_heads is given) */
    if (c->dim % c->heads)
        return tg_set_error(TG_ERR_INVALID, "%s: hidden dimension must be divisible by number "
                            "of heads (dim %lld, heads %lld)", who, (long long)c->dim,
                            (long long)c->heads);
    if (c->dim_heads < 0)
        return tg_set_error(TG_ERR_INVALID, "%s: dim_heads must be positive or null (dim // "
                            "heads), got %lld", who, (long long)c->dim_heads);
    if (c->num_dimensions < 1 || c->num_dimensions > TG_AXIAL_MAX_AXES)
        return tg_set_error(TG_ERR_INVALID, "%s: num_dimensions must be in [1, %d] (x has "
                            "num_dimensions + 2 <= %d axes), got %lld", who, TG_AXIAL_MAX_AXES,
                            TG_MAX_RANK, (long long)c->num_dimensions);
    const int64_t total = c->num_dimensions + 2;
    if (c->dim_index < -total || c->dim_index >= total)
        return tg_set_error(TG_ERR_INVALID, "%s: dim_index: Dimension out of range (expected to "
                            "be in range of [%lld, %lld], but got %lld)", who, (long long)-total,
                            (long long)(total - 1), (long long)c->dim_index);
    if (c->dim_index == 0 || c->dim_index == -total)
        return tg_set_error(TG_ERR_INVALID, "%s: dim_index %lld is the batch axis 0; the "
                            "embedding axis must be one of axes 1..%lld", who,
                            (long long)c->dim_index, (long long)(total - 1));
    return TG_OK;
}

/* axial_permutations(num_dimensions, dim_index): for each axial axis a (increasing),
 * [the other axes ascending..., a, emb]. */
static void axial_permutations(tg_axial_attention *l)
{
    int i = 0;
    for (int ax = 1; ax < l->total; ax++) {
        if (ax == l->dim_index) continue;
        int k = 0;
        for (int d = 0; d < l->total; d++)
            if (d != ax && d != l->dim_index) l->perm[i][k++] = d;
        l->perm[i][k++] = ax;
        l->perm[i][k] = l->dim_index;
        i++;
    }
    l->n_axes = i;
}

tg_status tg_axial_attention_init(tg_axial_attention *l, const tg_axial_attention_config *c,
                                  tg_params *ps, const char *prefix, const char *name,
                                  tg_rng *rng)
{
    TG__NONNULL(l, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char full[TG_NAME_MAX], sub[64], fn[TG_NAME_MAX];
    tg_status st;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name ? name : "");
    l->c = *c;
    if ((st = axial_check(c, *l->name ? l->name : "axial")) ||
        (st = tg_name_join(full, sizeof full, prefix, l->name)))
        return st;
    l->total = (int)c->num_dimensions + 2;
    /* self.dim_index = dim_index if dim_index > 0 else dim_index + total_dimensions */
    l->dim_index = (int)(c->dim_index > 0 ? c->dim_index : c->dim_index + l->total);
    axial_permutations(l);
    /* self.dim_heads = (dim // heads) if dim_heads is None else dim_heads */
    const int64_t e = c->dim_heads ? c->dim_heads : c->dim / c->heads, hidden = e * c->heads;
    /* ModuleList([PermuteToFrom(p, SelfAttention(dim, heads, dim_heads)) for p in perms]):
     * construction order is the RNG order: axis by axis, to_q, to_kv, to_out */
    for (int i = 0; i < l->n_axes; i++) {
        tg_axial_self_attention *f = &l->fn[i];
        f->heads = c->heads;
        f->dim_heads = e;
        snprintf(sub, sizeof sub, "axial_attentions.%d.fn", i);
        if ((st = tg_name_join(fn, sizeof fn, full, sub)) ||
            (st = tg_linear_mod_init(&f->to_q, ps, fn, "to_q", c->dim, hidden, false, rng)) ||
            (st = tg_linear_mod_init(&f->to_kv, ps, fn, "to_kv", c->dim, 2 * hidden, false,
                                     rng)) ||
            (st = tg_linear_mod_init(&f->to_out, ps, fn, "to_out", hidden, c->dim, true, rng)))
            return st;
    }
    return TG_OK;
}

/* ----------------------------------------------------------- SelfAttention */

/* SelfAttention.forward (the oracle's AxialSelfAttention) on x [n, t, dim] -> [n, t, dim]. */
static tg_node *self_attention(tg_graph *g, const tg_axial_self_attention *f, tg_node *x)
{
    const tg_tensor *xv = tg_node_value(x);
    const int64_t n = xv->shape[0], t = xv->shape[1], h = f->heads, e = f->dim_heads;
    const int64_t hidden = h * e;
    tg_node *kv[2];
    if (tg_scope_push(g, "fn")) return NULL;
    /* q = self.to_q(x) */
    tg_node *q = tg_linear_mod_build(g, &f->to_q, x);                        /* [n, t, h*e] */
    /* k, v = self.to_kv(x).chunk(2, dim=-1) */
    tg_split(g, tg_linear_mod_build(g, &f->to_kv, x), 2, (int64_t[]){hidden, hidden}, -1,
             kv);                                                            /* [n, t, h*e] x2 */
    /* q, k, v = split(q), split(k), split(v): split(z) = z.reshape(n, t, h, e).transpose(1, 2).
     * The reshape is a view; the transpose to (n, h, t, e) is folded into the einsums. */
    const int64_t heads[4] = {n, t, h, e};
    q = tg_reshape(g, q, 4, heads);                                          /* [n, t, h, e] */
    tg_node *k = tg_reshape(g, kv[0], 4, heads), *v = tg_reshape(g, kv[1], 4, heads);
    /* a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * (e ** -0.5), dim=-1)
     * o = torch.matmul(a, v).transpose(1, 2).reshape(n, t, h * e)
     * as one fused node (ops/sdpa.h): the [n, h, t, t] weights are never stored,
     * and o comes out as [n, t, h, e], so the transpose back is a reshape. */
    tg_node *o = tg_sdpa(g, q, k, v, false, pow((double)e, -0.5), 0.0);     /* [n, t, h, e] */
    o = tg_reshape(g, o, 3, (int64_t[]){n, t, hidden});
    /* return self.to_out(o) */
    tg_node *out = tg_linear_mod_build(g, &f->to_out, o);                    /* [n, t, dim] */
    tg_scope_pop(g);
    return out;
}

/* ------------------------------------------------------------ PermuteToFrom */

/* Axis names for the einops patterns: "b" (batch), "dim" (embedding), "a<i>" for the
 * i-th axial axis (the one axial_attentions.<i> attends along). */
static const char *axis_name(const tg_axial_attention *l, int d, char *buf, size_t len)
{
    if (d == 0) snprintf(buf, len, "b");
    else if (d == l->dim_index) snprintf(buf, len, "dim");
    else snprintf(buf, len, "a%d", d - 1 - (d > l->dim_index));
    return buf;
}

/* Write "b a0 a1 dim" (x's axes) into in, and "(b a1) a0 dim" (perm, others folded) into
 * folded; the lengths of the folded axes into lens (names in names); returns their count. */
static int fold_patterns(const tg_axial_attention *l, int i, const tg_tensor *xv, char *in,
                         char *folded, size_t len, char names[][16], tg_axis_len *lens)
{
    const int *p = l->perm[i];
    size_t a = 0, b = 0;
    char nm[16];
    for (int d = 0; d < l->total; d++)
        a += (size_t)snprintf(in + a, len - a, d ? " %s" : "%s", axis_name(l, d, nm, sizeof nm));
    b += (size_t)snprintf(folded + b, len - b, "(");
    for (int k = 0; k < l->total - 2; k++) {
        axis_name(l, p[k], names[k], 16);
        lens[k] = (tg_axis_len){names[k], xv->shape[p[k]]};
        b += (size_t)snprintf(folded + b, len - b, k ? " %s" : "%s", names[k]);
    }
    snprintf(folded + b, len - b, ") %s dim", axis_name(l, p[l->total - 2], nm, sizeof nm));
    return l->total - 2;
}

/* axial_attentions.<i>(x): PermuteToFrom(perm_i, SelfAttention).forward. Inside the layer's
 * scope; x already checked. */
static tg_node *permute_to_from(tg_graph *g, const tg_axial_attention *l, int i, tg_node *x)
{
    char in[128], folded[128], pattern[260], names[TG_MAX_RANK][16];
    tg_axis_len lens[TG_MAX_RANK];
    if (!x) return NULL;   /* an earlier axis failed (chained mode): the graph has the error */
    const int n = fold_patterns(l, i, tg_node_value(x), in, folded, sizeof in, names, lens);
    if (tg_scope_pushf(g, "axial_attentions.%d", i)) return NULL;
    /* y = x.permute(*perm).contiguous().reshape(-1, shape[-2], shape[-1]) */
    snprintf(pattern, sizeof pattern, "%s -> %s", in, folded);
    tg_node *y = tg_rearrange(g, x, pattern, 0, NULL);                       /* [n, t, dim] */
    /* y = self.fn(y) */
    if (y) y = self_attention(g, &l->fn[i], y);
    /* y.reshape(shape).permute(*inv_perm).contiguous() */
    snprintf(pattern, sizeof pattern, "%s -> %s", folded, in);
    y = tg_rearrange(g, y, pattern, n, lens);                                /* like x */
    tg_scope_pop(g);
    return y;
}

/* ----------------------------------------------------------- AxialAttention */

static bool check_input(tg_graph *g, const tg_axial_attention *l, tg_node *x)
{
    if (!tg_builder_check(g, "axial_attention", 1, &x)) return false;
    const tg_tensor *xv = tg_node_value(x);
    const char *who = *l->name ? l->name : "axial_attention";
    /* assert x.dim() == self.total_dimensions, 'wrong number of dimensions' */
    if (xv->rank != l->total) {
        tg_graph_fail(g, "%s: wrong number of dimensions: x must have num_dimensions + 2 = %d "
                      "axes, got %d", who, l->total, xv->rank);
        return false;
    }
    /* assert x.shape[self.dim_index] == self.dim, 'wrong embedding size' */
    if (xv->shape[l->dim_index] != l->c.dim) {
        tg_graph_fail(g, "%s: wrong embedding size: x.shape[%d] must be dim = %lld, got %lld",
                      who, l->dim_index, (long long)l->c.dim,
                      (long long)xv->shape[l->dim_index]);
        return false;
    }
    return true;
}

static bool push_name(tg_graph *g, const tg_axial_attention *l)
{
    return !*l->name || !tg_scope_push(g, l->name);
}

static void pop_name(tg_graph *g, const tg_axial_attention *l)
{
    if (*l->name) tg_scope_pop(g);
}

tg_node *tg_axial_attention_build_axis(tg_graph *g, const tg_axial_attention *l, int axis,
                                       tg_node *x)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, x);
    if (!check_input(g, l, x)) return NULL;
    if (axis < 0 || axis >= l->n_axes)
        return tg_graph_fail(g, "axial_attention: axis %d out of range [0, %d)", axis,
                             l->n_axes);
    if (!push_name(g, l)) return NULL;
    tg_node *y = permute_to_from(g, l, axis, x);
    pop_name(g, l);
    return y;
}

tg_node *tg_axial_attention_build(tg_graph *g, const tg_axial_attention *l, tg_node *x)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, x);
    if (!check_input(g, l, x) || !push_name(g, l)) return NULL;
    tg_node *out = x;
    if (l->c.sum_axial_out) {
        /* for f in self.axial_attentions: y = f(x); out = y if out is None else out + y */
        out = permute_to_from(g, l, 0, x);
        for (int i = 1; i < l->n_axes; i++) out = tg_add(g, out, permute_to_from(g, l, i, x));
    } else {
        /* out = x; for f in self.axial_attentions: out = f(out) */
        for (int i = 0; i < l->n_axes; i++) out = permute_to_from(g, l, i, out);
    }
    pop_name(g, l);
    return out;
}

/* ---------------------------------------------------------------- registry */

#define AX(f) offsetof(tg_axial_attention_config, f)
static const tg_layer_key axial_keys[] = {
    {"shape", TG_KEY_INT_LIST, "[2, 4, 5, 8]", false,
     "x's shape: batch, the axial axes and the embedding axis (num_dimensions + 2 entries)",
     "[1, inf)", AX(shape)},
    {"dim", TG_KEY_INT, "8", false, "embedding size, x.shape[dim_index]", "[1, inf)", AX(dim)},
    {"num_dimensions", TG_KEY_INT, "2", false,
     "number of axial axes", "[1, 6]", AX(num_dimensions)},
    {"heads", TG_KEY_INT, "2", false, "heads (must divide dim)", "[1, inf)", AX(heads)},
    {"dim_heads", TG_KEY_INT, "null", true,
     "size per head; null: dim // heads", "[1, inf)", AX(dim_heads)},
    {"dim_index", TG_KEY_INT, "-1", false, "the embedding axis (not 0)", NULL, AX(dim_index)},
    {"sum_axial_out", TG_KEY_BOOL, "true", false,
     "sum the per-axis attentions (each on x); false: chain them", NULL, AX(sum_axial_out)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef AX

static tg_status ax_check(const void *vc)
{
    const tg_axial_attention_config *c = vc;
    tg_status st = axial_check(c, "axial");
    if (st) return st;
    const int64_t total = c->num_dimensions + 2;
    char sh[160];
    size_t at = 0;
    for (int i = 0; i < c->shape.n && at < sizeof sh; i++)
        at += (size_t)snprintf(sh + at, sizeof sh - at, i ? ", %lld" : "[%lld",
                               (long long)c->shape.v[i]);
    snprintf(sh + (at < sizeof sh ? at : 0), at < sizeof sh ? sizeof sh - at : sizeof sh,
             c->shape.n ? "]" : "[]");
    if (c->shape.n != total)
        return tg_set_error(TG_ERR_INVALID, "axial: wrong number of dimensions: shape %s has %d "
                            "axes, num_dimensions + 2 = %lld", sh, c->shape.n, (long long)total);
    for (int i = 0; i < c->shape.n; i++)
        if (c->shape.v[i] <= 0)
            return tg_set_error(TG_ERR_INVALID, "axial: shape %s: sizes must be positive", sh);
    const int64_t di = c->dim_index > 0 ? c->dim_index : c->dim_index + total;
    if (c->shape.v[di] != c->dim)
        return tg_set_error(TG_ERR_INVALID, "axial: wrong embedding size: shape[%lld] of %s is "
                            "%lld, dim is %lld", (long long)c->dim_index, sh,
                            (long long)c->shape.v[di], (long long)c->dim);
    return TG_OK;
}

static int ax_inputs(const void *vc, tg_layer_input *in)
{
    const tg_axial_attention_config *c = vc;
    in[0] = (tg_layer_input){"x", "shape", c->shape.n, {0}, true, 0};
    memcpy(in[0].shape, c->shape.v, (size_t)c->shape.n * sizeof *c->shape.v);
    return 1;
}

static tg_status ax_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    /* a top-level AxialAttention's keys start at axial_attentions.* */
    tg_axial_attention *l = state;
    tg_status st = tg_axial_attention_init(l, cfg, ps, "", prefix, rng);
    snprintf(l->name, sizeof l->name, "axial");
    return st;
}

static tg_status ax_build(const void *state, tg_graph *g, tg_node *const *in, tg_layer_outputs *out)
{
    out->y = tg_axial_attention_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_axial_attention_class = {
    .name = "axial",
    .summary = "lucidrains AxialAttention: multi-head self-attention along each axial axis, "
               "summed or chained",
    .keys = axial_keys,
    .config_size = sizeof(tg_axial_attention_config),
    .state_size = sizeof(tg_axial_attention),
    .check = ax_check,
    .inputs = ax_inputs,
    .init = ax_init,
    .build = ax_build,
};
