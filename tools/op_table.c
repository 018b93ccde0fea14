/*
 * op_table.c - the op table of `tgraph op` (see op_table.h): one row per op,
 * PyTorch's names and defaults, and a small glue function per op that reads
 * the attributes and calls the builder in ops/. op_call.c uses the table.
 *
 * The glue only translates: every check of shapes, dims and values is the
 * builder's own (its message reaches the user unchanged). The glue checks
 * only what the builder's C signature cannot express (a list longer than a
 * tensor can be, a dim that does not fit an int, src and value= both given).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "op_table.h"

/* ---- reading resolved attributes (types were checked by tg_op_call_init) ---- */

static const tg_value *attr(const tg_op_call *c, const char *name)
{
    for (int i = 0; i < TG_OP_MAX_ATTRS && c->op->attrs[i].name; i++)
        if (!strcmp(c->op->attrs[i].name, name)) return &c->attr[i];
    return NULL;   /* a glue/table mismatch; the getters then read 0 */
}

static bool is_null(const tg_op_call *c, const char *name)
{
    const tg_value *v = attr(c, name);
    return !v || v->kind == TG_VALUE_NULL;
}

static int64_t get_int(const tg_op_call *c, const char *name)
{
    const tg_value *v = attr(c, name);
    return v && v->kind == TG_VALUE_INT ? v->i : 0;
}

static double get_f(const tg_op_call *c, const char *name)
{
    const tg_value *v = attr(c, name);
    return !v ? 0 : v->kind == TG_VALUE_INT ? (double)v->i : v->f;
}

static bool get_bool(const tg_op_call *c, const char *name)
{
    const tg_value *v = attr(c, name);
    return v && v->kind == TG_VALUE_BOOL && v->b;
}

static const char *get_str(const tg_op_call *c, const char *name)
{
    const tg_value *v = attr(c, name);
    return v && v->kind == TG_VALUE_STRING && v->s ? v->s : "";
}

/* Put tg_last_error() on the graph, prefixed with the op's name unless it has it. */
static tg_status fail_last(tg_graph *g, const tg_op_call *c)
{
    const char *msg = tg_last_error();
    size_t n = strlen(c->op->name);
    if (!strncmp(msg, c->op->name, n) && msg[n] == ':') tg_graph_fail(g, "%s", msg);
    else tg_graph_fail(g, "%s: %s", c->op->name, msg);
    return TG_ERR_INVALID;
}

/* An int list attribute into out[0..max); -1 (graph error) when longer. */
static int get_list(tg_graph *g, const tg_op_call *c, const char *name, int64_t *out, int max)
{
    const tg_value *v = attr(c, name);
    int n = 0;
    if (!v || v->kind == TG_VALUE_NULL) return 0;
    if (tg_value_as_int_list(v, name, out, max, &n)) {
        fail_last(g, c);
        return -1;
    }
    return n;
}

/* A dim attribute as the builders' int; a value no int holds cannot be a dim. */
static bool get_dim(tg_graph *g, const tg_op_call *c, const char *name, int *out)
{
    int64_t d = get_int(c, name);
    if (d < INT_MIN || d > INT_MAX) {
        tg_graph_fail(g, "%s: Dimension out of range (%s=%lld)", c->op->name, name, (long long)d);
        return false;
    }
    *out = (int)d;
    return true;
}

static const tg_tensor *val(const tg_node *n) { return tg_node_value(n); }


/* ---- glue: one per op (out[], *n_out as in tg_op_def.build) ---- */

#define GLUE(fn) static tg_status fn(tg_graph *g, const tg_op_call *c, tg_node *const *in, \
                                     int n_in, tg_node **out, int *n_out)
#define ONE(expr) (out[0] = (expr), *n_out = 1, out[0] ? TG_OK : TG_ERR_INVALID)

GLUE(b_einsum) { return ONE(tg_einsum(g, get_str(c, "equation"), n_in, in)); }

GLUE(b_softmax)
{
    (void)n_in;
    int dim;
    return get_dim(g, c, "dim", &dim) ? ONE(tg_softmax(g, in[0], dim)) : TG_ERR_INVALID;
}

GLUE(b_log_softmax)
{
    (void)n_in;
    int dim;
    return get_dim(g, c, "dim", &dim) ? ONE(tg_log_softmax(g, in[0], dim)) : TG_ERR_INVALID;
}

GLUE(b_softmax_scaled)
{
    (void)n_in;
    int dim;
    if (!get_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    return ONE(tg_softmax_scaled(g, in[0], dim, get_f(c, "scale")));
}

/* F.scaled_dot_product_attention applies dropout_p whenever it is > 0 (it has
 * no training flag), so the graph is put in training mode here, as dropout's
 * glue does for training=true; seed= seeds the mask. scale=null is PyTorch's
 * 1 / sqrt(E), E = query.shape[-1] (1 for a query the builder will reject). */
GLUE(b_sdpa)
{
    (void)n_in;
    const tg_tensor *q = val(in[0]);
    double scale = !is_null(c, "scale") ? get_f(c, "scale")
                   : q->rank > 0 ? 1.0 / sqrt((double)q->shape[q->rank - 1]) : 1.0;
    tg_graph_set_training(g, true);
    tg_graph_seed(g, (uint64_t)get_int(c, "seed"));
    return ONE(tg_sdpa(g, in[0], in[1], in[2], get_bool(c, "is_causal"), scale,
                       get_f(c, "dropout_p")));
}

GLUE(b_topk)
{
    (void)n_in;
    int dim;
    if (!get_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    out[0] = tg_topk(g, in[0], get_int(c, "k"), dim, get_bool(c, "largest"),
                     get_bool(c, "sorted"), &out[1]);
    *n_out = 2;
    return out[0] ? TG_OK : TG_ERR_INVALID;
}

GLUE(b_gather)
{
    (void)n_in;
    int dim;
    return get_dim(g, c, "dim", &dim) ? ONE(tg_gather(g, in[0], dim, in[1])) : TG_ERR_INVALID;
}

GLUE(b_scatter)
{
    int dim;
    if (!get_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    bool src = n_in > 2 && in[2], value = !is_null(c, "value");
    if (src == value) {
        tg_graph_fail(g, "scatter: give either src (a third --in) or value=, %s",
                      src ? "not both" : "got neither");
        return TG_ERR_INVALID;
    }
    if (value) return ONE(tg_scatter_value(g, in[0], dim, in[1], get_f(c, "value")));
    return ONE(tg_scatter(g, in[0], dim, in[1], in[2]));
}

GLUE(b_scatter_add)
{
    (void)n_in;
    int dim;
    if (!get_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    return ONE(tg_scatter_add(g, in[0], dim, in[1], in[2]));
}

GLUE(b_rearrange)
{
    (void)n_in;
    return ONE(tg_rearrange(g, in[0], get_str(c, "pattern"), c->n_axes, c->axes));
}

GLUE(b_repeat)
{
    (void)n_in;
    return ONE(tg_repeat(g, in[0], get_str(c, "pattern"), c->n_axes, c->axes));
}

GLUE(b_reduce)
{
    (void)n_in;
    const char *r = get_str(c, "reduction");
    for (int k = 0; k < TG_EINOPS_REDUCTION_COUNT; k++)
        if (!strcmp(r, tg_einops_reduction_name((tg_einops_reduction)k)))
            return ONE(tg_reduce(g, in[0], get_str(c, "pattern"), (tg_einops_reduction)k,
                                 c->n_axes, c->axes));
    tg_graph_fail(g, "reduce: unknown reduction '%s' (sum, mean, max, min)", r);
    return TG_ERR_INVALID;
}

GLUE(b_linear) { (void)c; return ONE(tg_linear(g, in[0], in[1], n_in > 2 ? in[2] : NULL)); }

GLUE(b_layer_norm)
{
    int64_t shape[TG_MAX_RANK];
    int n = get_list(g, c, "normalized_shape", shape, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    return ONE(tg_layer_norm(g, in[0], n, shape, n_in > 1 ? in[1] : NULL,
                             n_in > 2 ? in[2] : NULL, get_f(c, "eps")));
}

GLUE(b_gelu)
{
    (void)n_in;
    tg_gelu_approx a;
    if (tg_gelu_approx_parse(get_str(c, "approximate"), &a)) return fail_last(g, c);
    return ONE(tg_gelu(g, in[0], a));
}

GLUE(b_dropout)
{
    (void)n_in;
    tg_graph_set_training(g, get_bool(c, "training"));
    tg_graph_seed(g, (uint64_t)get_int(c, "seed"));
    return ONE(tg_dropout(g, in[0], get_f(c, "p")));
}

GLUE(b_masked_fill)
{
    bool tensor = n_in > 2 && in[2], value = !is_null(c, "value");
    if (tensor == value) {
        tg_graph_fail(g, "masked_fill: give either value= or a 0-d value tensor (a third --in), "
                      "%s", tensor ? "not both" : "got neither");
        return TG_ERR_INVALID;
    }
    if (tensor) return ONE(tg_masked_fill_tensor(g, in[0], in[1], in[2]));
    return ONE(tg_masked_fill(g, in[0], in[1], get_f(c, "value")));
}

GLUE(b_causal_mask)
{
    (void)in, (void)n_in;
    return ONE(tg_causal_mask(g, get_int(c, "B"), get_int(c, "L")));
}

static tg_status reduction(tg_graph *g, const tg_op_call *c, tg_reduction *r)
{
    return tg_reduction_parse(get_str(c, "reduction"), r) ? fail_last(g, c) : TG_OK;
}

GLUE(b_mse_loss)
{
    (void)n_in;
    tg_reduction r;
    if (reduction(g, c, &r)) return TG_ERR_INVALID;
    return ONE(tg_mse_loss(g, in[0], in[1], r));
}

GLUE(b_cross_entropy)
{
    tg_reduction r;
    if (reduction(g, c, &r)) return TG_ERR_INVALID;
    return ONE(tg_cross_entropy(g, in[0], in[1], n_in > 2 ? in[2] : NULL,
                                get_int(c, "ignore_index"), r, get_f(c, "label_smoothing")));
}

GLUE(b_cat)
{
    return ONE(tg_concat(g, n_in, in, get_int(c, "dim")));
}

GLUE(b_split)
{
    (void)n_in;
    const tg_value *v = attr(c, "split_size_or_sections");
    int64_t sizes[TG_OP_MAX_OUTPUTS];
    int n;
    if (v && v->kind == TG_VALUE_INT) {   /* a chunk size: equal pieces, the last smaller */
        const tg_tensor *x = val(in[0]);
        int d = tg_wrap_dim(get_int(c, "dim"), x->rank);
        if (d < 0 || x->rank == 0) {
            tg_split(g, in[0], 1, (int64_t[]){0}, get_int(c, "dim"), out);   /* its message */
            return TG_ERR_INVALID;
        }
        int64_t size = x->shape[d], ss = v->i;
        if (ss < 0 || (ss == 0 && size > 0)) {
            tg_graph_fail(g, "split: split_size can only be 0 if dimension size is 0, and never "
                          "negative, but got split_size=%lld and dimension size %lld",
                          (long long)ss, (long long)size);
            return TG_ERR_INVALID;
        }
        int64_t pieces = size == 0 ? 1 : (size + ss - 1) / ss;
        if (pieces > TG_OP_MAX_OUTPUTS) {
            tg_graph_fail(g, "split: split_size=%lld gives %lld pieces (tgraph op writes at most "
                          "%d)", (long long)ss, (long long)pieces, TG_OP_MAX_OUTPUTS);
            return TG_ERR_INVALID;
        }
        n = (int)pieces;
        for (int i = 0; i < n; i++) sizes[i] = size - i * ss < ss ? size - i * ss : ss;
    } else if ((n = get_list(g, c, "split_size_or_sections", sizes, TG_OP_MAX_OUTPUTS)) < 0) {
        return TG_ERR_INVALID;
    }
    *n_out = n;
    return tg_split(g, in[0], n, sizes, get_int(c, "dim"), out);
}

GLUE(b_narrow)
{
    (void)n_in;
    return ONE(tg_narrow(g, in[0], get_int(c, "dim"), get_int(c, "start"), get_int(c, "length")));
}

GLUE(b_slice)
{
    (void)n_in;
    int64_t start = is_null(c, "start") ? 0 : get_int(c, "start");
    int64_t end = is_null(c, "end") ? TG_SLICE_END : get_int(c, "end");
    return ONE(tg_slice(g, in[0], get_int(c, "dim"), start, end, get_int(c, "step")));
}

GLUE(b_index_select)
{
    (void)n_in;
    return ONE(tg_index_select(g, in[0], get_int(c, "dim"), in[1]));
}

/* add/sub/mul/div: other is a tensor (the second --in) or a number (other=). */
static tg_status binary(tg_graph *g, const tg_op_call *c, tg_node *const *in, int n_in,
                        tg_node **out, int *n_out,
                        tg_node *(*fn)(tg_graph *, tg_node *, tg_node *))
{
    bool tensor = n_in > 1 && in[1], number = !is_null(c, "other");
    if (tensor == number) {
        tg_graph_fail(g, "%s: give other either as a tensor (a second --in) or as a number "
                      "(other=), %s", c->op->name, tensor ? "not both" : "got neither");
        return TG_ERR_INVALID;
    }
    tg_node *other = tensor ? in[1] : tg_full(g, 0, NULL, get_f(c, "other"));
    const tg_value *alpha = attr(c, "alpha");
    if (alpha && get_f(c, "alpha") != 1.0) other = tg_scale(g, other, get_f(c, "alpha"));
    return ONE(fn(g, in[0], other));
}

GLUE(b_add) { return binary(g, c, in, n_in, out, n_out, tg_add); }
GLUE(b_sub) { return binary(g, c, in, n_in, out, n_out, tg_sub); }
GLUE(b_mul) { return binary(g, c, in, n_in, out, n_out, tg_mul); }
GLUE(b_div) { return binary(g, c, in, n_in, out, n_out, tg_div); }

GLUE(b_scale) { (void)n_in; return ONE(tg_scale(g, in[0], get_f(c, "scale"))); }
GLUE(b_neg) { (void)c, (void)n_in; return ONE(tg_neg(g, in[0])); }
GLUE(b_exp) { (void)c, (void)n_in; return ONE(tg_exp(g, in[0])); }
GLUE(b_log) { (void)c, (void)n_in; return ONE(tg_log(g, in[0])); }
GLUE(b_sqrt) { (void)c, (void)n_in; return ONE(tg_sqrt(g, in[0])); }
GLUE(b_square) { (void)c, (void)n_in; return ONE(tg_square(g, in[0])); }
GLUE(b_relu) { (void)c, (void)n_in; return ONE(tg_relu(g, in[0])); }

static tg_status reduce_dims(tg_graph *g, const tg_op_call *c, tg_node *const *in, tg_node **out,
                             int *n_out, bool mean)
{
    int64_t dims[TG_MAX_RANK];
    int n = get_list(g, c, "dim", dims, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    bool keep = get_bool(c, "keepdim");
    return ONE(mean ? tg_mean(g, in[0], dims, n, keep) : tg_sum(g, in[0], dims, n, keep));
}

GLUE(b_sum) { (void)n_in; return reduce_dims(g, c, in, out, n_out, false); }
GLUE(b_mean) { (void)n_in; return reduce_dims(g, c, in, out, n_out, true); }

GLUE(b_permute)
{
    (void)n_in;
    int64_t dims[TG_MAX_RANK];
    int perm[TG_MAX_RANK], n = get_list(g, c, "dims", dims, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    int rank = val(in[0])->rank;
    if (n != rank) {   /* tg_permute reads exactly rank entries */
        tg_graph_fail(g, "permute: number of dims don't match in permute (the input has %d, "
                      "dims has %d)", rank, n);
        return TG_ERR_INVALID;
    }
    for (int i = 0; i < n; i++) {
        if (dims[i] < INT_MIN || dims[i] > INT_MAX) {
            tg_graph_fail(g, "permute: Dimension out of range (dims[%d]=%lld)", i,
                          (long long)dims[i]);
            return TG_ERR_INVALID;
        }
        perm[i] = (int)dims[i];
    }
    return ONE(tg_permute(g, in[0], perm));
}

GLUE(b_transpose)
{
    (void)n_in;
    int d0, d1;
    if (!get_dim(g, c, "dim0", &d0) || !get_dim(g, c, "dim1", &d1)) return TG_ERR_INVALID;
    return ONE(tg_transpose(g, in[0], d0, d1));
}

GLUE(b_reshape)
{
    (void)n_in;
    int64_t shape[TG_MAX_RANK];
    int n = get_list(g, c, "shape", shape, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    return ONE(tg_reshape(g, in[0], n, shape));
}

/* ---- gradcheck input rules for int64 inputs ---- */

/* gather/scatter/scatter_add/index_select: values in [0, input.size(dim));
 * along the index's own `dim` (its only dim when 1-d) a slice of a random
 * permutation where it fits, so scatter targets are unique; uniform draws
 * otherwise. */
static tg_status gen_along_dim(const tg_op_call *c, int i, const tg_tensor *const *in,
                               tg_tensor *t, tg_rng *rng)
{
    (void)i;
    const tg_tensor *x = in[0];
    int64_t dim = get_int(c, "dim");
    int dx = tg_wrap_dim(dim, x->rank), di = t->rank <= 1 ? 0 : tg_wrap_dim(dim, t->rank);
    if (dx < 0 || di < 0) return tg_set_error(TG_ERR_INVALID, "dim=%lld is out of range for "
                                              "the input", (long long)dim);
    int64_t size = x->rank ? x->shape[dx] : 1, len = t->rank ? t->shape[di] : 1;
    if (t->numel && size == 0)
        return tg_set_error(TG_ERR_INVALID, "no index fits an input of size 0 at dim %lld",
                            (long long)dim);
    int64_t inner = 1;
    for (int d = di + 1; d < t->rank; d++) inner *= t->shape[d];
    int64_t *v = t->data, *perm = malloc((size_t)(size ? size : 1) * sizeof *perm);
    if (!perm) return tg_set_error(TG_ERR_NOMEM, "out of memory");
    for (int64_t row = 0; row < (len ? t->numel / len : 0); row++) {
        for (int64_t k = 0; k < size; k++) perm[k] = k;
        for (int64_t k = 0; k + 1 < size; k++) {   /* Fisher-Yates */
            int64_t j = k + (int64_t)tg_rng_below(rng, (uint64_t)(size - k)), tmp = perm[k];
            perm[k] = perm[j], perm[j] = tmp;
        }
        int64_t outer = row / inner, off = row % inner;
        for (int64_t k = 0; k < len; k++)
            v[(outer * len + k) * inner + off] =
                len <= size ? perm[k] : (int64_t)tg_rng_below(rng, (uint64_t)size);
    }
    free(perm);
    return TG_OK;
}

/* cross_entropy class indices: uniform in [0, C), C = input.size(1) (size(0) for a 1-d input). */
static tg_status gen_class(const tg_op_call *c, int i, const tg_tensor *const *in, tg_tensor *t,
                           tg_rng *rng)
{
    (void)c, (void)i;
    const tg_tensor *x = in[0];
    int64_t C = x->rank == 0 ? 0 : x->shape[x->rank == 1 ? 0 : 1];
    if (C <= 0) return tg_set_error(TG_ERR_INVALID, "the input has no classes to draw from");
    int64_t *v = t->data;
    for (int64_t k = 0; k < t->numel; k++) v[k] = (int64_t)tg_rng_below(rng, (uint64_t)C);
    return TG_OK;
}

/* ---- the table ---- */

#define IN(name) {name, TG_OP_IN_FLOAT, TG_OP_GEN_NORMAL}
#define ANY(name) {name, TG_OP_IN_ANY, TG_OP_GEN_NORMAL}
#define DIM_REQ {"dim", TG_OP_INT, NULL, false}
#define UNARY(nm, fn, gen, sum) \
    {nm, sum, {{0}}, false, {{"input", TG_OP_IN_FLOAT, gen}}, 1, false, 1, fn, NULL, \
     nm " --in x.npy --out y.npy"}
#define BINARY(nm, fn, sum, gen1, example, extra) \
    {nm, sum, {{"other", TG_OP_FLOAT, "null", true} extra}, false, \
     {IN("input"), {"other", TG_OP_IN_FLOAT, gen1}}, 1, false, 1, fn, NULL, \
     nm " " example}
#define ALPHA , {"alpha", TG_OP_FLOAT, "1", false}

static const tg_op_def table[] = {
    {"einsum", "torch.einsum(equation, *operands)", {{"equation", TG_OP_STRING, NULL, false}},
     false, {IN("operands")}, 1, true, 1, b_einsum, NULL,
     "einsum 'equation=blhe,bshe->bhls' --in q.npy --in k.npy --out s.npy"},
    {"softmax", "torch.softmax(input, dim)", {DIM_REQ}, false, {IN("input")}, 1, false, 1,
     b_softmax, NULL, "softmax dim=-1 --in x.npy --out y.npy --grad-output dy.npy --grad dx.npy"},
    {"log_softmax", "torch.log_softmax(input, dim)", {DIM_REQ}, false, {IN("input")}, 1, false,
     1, b_log_softmax, NULL, "log_softmax dim=1 --in x.npy --out y.npy"},
    {"softmax_scaled", "softmax(scale * input, dim) in one op (tgraph)",
     {DIM_REQ, {"scale", TG_OP_FLOAT, NULL, false}}, false, {IN("input")}, 1, false, 1,
     b_softmax_scaled, NULL, "softmax_scaled dim=-1 scale=0.125 --in x.npy --out y.npy"},
    {"sdpa", "F.scaled_dot_product_attention on [B, L, H, E] (TSL's layout; tgraph)",
     {{"is_causal", TG_OP_BOOL, "false", false}, {"scale", TG_OP_FLOAT, "null", true},
      {"dropout_p", TG_OP_FLOAT, "0.0", false}, {"seed", TG_OP_INT, "0", false}}, false,
     {IN("query"), IN("key"), IN("value")}, 3, false, 1, b_sdpa, NULL,
     "sdpa is_causal=true --in q.npy --in k.npy --in v.npy --out y.npy"},
    {"topk", "torch.topk(input, k, dim, largest, sorted) -> values, int64 indices",
     {{"k", TG_OP_INT, NULL, false}, {"dim", TG_OP_INT, "-1", false},
      {"largest", TG_OP_BOOL, "true", false}, {"sorted", TG_OP_BOOL, "true", false}},
     false, {IN("input")}, 1, false, 2, b_topk, NULL,
     "topk k=3 dim=-1 --in x.npy --out values.npy --out indices.npy"},
    {"gather", "torch.gather(input, dim, index)", {DIM_REQ}, false,
     {IN("input"), {"index", TG_OP_IN_INDEX, 0}}, 2, false, 1, b_gather, gen_along_dim,
     "gather dim=1 --in x.npy --in i.npy --out y.npy"},
    {"scatter", "torch.scatter(input, dim, index, src) or (input, dim, index, value=)",
     {DIM_REQ, {"value", TG_OP_FLOAT, "null", true}}, false,
     {IN("input"), {"index", TG_OP_IN_INDEX, 0}, IN("src")}, 2, false, 1, b_scatter,
     gen_along_dim, "scatter dim=0 --in x.npy --in i.npy --in src.npy --out y.npy"},
    {"scatter_add", "torch.scatter_add(input, dim, index, src)", {DIM_REQ}, false,
     {IN("input"), {"index", TG_OP_IN_INDEX, 0}, IN("src")}, 3, false, 1, b_scatter_add,
     gen_along_dim, "scatter_add dim=0 --in x.npy --in i.npy --in src.npy --out y.npy"},
    {"rearrange", "einops.rearrange(tensor, pattern, **axes_lengths)",
     {{"pattern", TG_OP_STRING, NULL, false}}, true, {ANY("tensor")}, 1, false, 1,
     b_rearrange, NULL,
     "rearrange 'pattern=(b ts_d) seg d -> b ts_d seg d' b=2 --in x.npy --out y.npy"},
    {"repeat", "einops.repeat(tensor, pattern, **axes_lengths)",
     {{"pattern", TG_OP_STRING, NULL, false}}, true, {ANY("tensor")}, 1, false, 1, b_repeat,
     NULL, "repeat 'pattern=seg f d -> (repeat seg) f d' repeat=2 --in x.npy --out y.npy"},
    {"reduce", "einops.reduce(tensor, pattern, reduction, **axes_lengths)",
     {{"pattern", TG_OP_STRING, NULL, false}, {"reduction", TG_OP_STRING, NULL, false}}, true,
     {IN("tensor")}, 1, false, 1, b_reduce, NULL,
     "reduce 'pattern=b (h 2) w -> b h' reduction=max --in x.npy --out y.npy"},
    {"linear", "F.linear(input, weight, bias=None)", {{0}}, false,
     {IN("input"), IN("weight"), IN("bias")}, 2, false, 1, b_linear, NULL,
     "linear --in x.npy --in w.npy --in b.npy --out y.npy"},
    {"layer_norm", "F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)",
     {{"normalized_shape", TG_OP_INT_LIST, NULL, false}, {"eps", TG_OP_FLOAT, "1e-5", false}},
     false, {IN("input"), IN("weight"), IN("bias")}, 1, false, 1, b_layer_norm, NULL,
     "layer_norm normalized_shape=[8] --in x.npy --in w.npy --in b.npy --out y.npy"},
    {"gelu", "F.gelu(input, approximate='none')",
     {{"approximate", TG_OP_STRING, "none", false}}, false, {IN("input")}, 1, false, 1, b_gelu,
     NULL, "gelu approximate=tanh --in x.npy --out y.npy"},
    UNARY("relu", b_relu, TG_OP_GEN_NORMAL, "torch.relu(input)"),
    {"dropout", "F.dropout(input, p=0.5, training=True); seed= seeds the mask (tgraph)",
     {{"p", TG_OP_FLOAT, "0.5", false}, {"training", TG_OP_BOOL, "true", false},
      {"seed", TG_OP_INT, "0", false}}, false, {IN("input")}, 1, false, 1, b_dropout, NULL,
     "dropout p=0.1 seed=7 --in x.npy --out y.npy"},
    {"masked_fill", "Tensor.masked_fill(mask, value); value= or a 0-d value tensor",
     {{"value", TG_OP_FLOAT, "null", true}}, false,
     {IN("input"), {"mask", TG_OP_IN_MASK, 0}, IN("value")}, 2, false, 1, b_masked_fill, NULL,
     "masked_fill value=-inf --in x.npy --in mask.npy --out y.npy"},
    {"causal_mask", "TriangularCausalMask(B, L): bool [B, 1, L, L], true where s > l (tgraph)",
     {{"B", TG_OP_INT, NULL, false}, {"L", TG_OP_INT, NULL, false}}, false, {{0}}, 0, false, 1,
     b_causal_mask, NULL, "causal_mask B=2 L=4 --out mask.npy"},
    {"mse_loss", "F.mse_loss(input, target, reduction='mean')",
     {{"reduction", TG_OP_STRING, "mean", false}}, false, {IN("input"), IN("target")}, 2, false,
     1, b_mse_loss, NULL,
     "mse_loss reduction=sum --in y.npy --in t.npy --out loss.npy"},
    {"cross_entropy",
     "F.cross_entropy(input, target, weight=None, ...) on logits",
     {{"ignore_index", TG_OP_INT, "-100", false}, {"reduction", TG_OP_STRING, "mean", false},
      {"label_smoothing", TG_OP_FLOAT, "0.0", false}}, false,
     {IN("input"), {"target", TG_OP_IN_TARGET, 0}, {"weight", TG_OP_IN_CONST, 0}}, 2, false, 1,
     b_cross_entropy, gen_class,
     "cross_entropy label_smoothing=0.1 --in x.npy --in target.npy --out loss.npy"},
    {"cat", "torch.cat(tensors, dim=0) (also: concat)", {{"dim", TG_OP_INT, "0", false}}, false,
     {ANY("tensors")}, 1, true, 1, b_cat, NULL, "cat dim=-1 --in a.npy --in b.npy --out y.npy"},
    {"split", "torch.split(tensor, split_size_or_sections, dim=0) -> one --out per piece",
     {{"split_size_or_sections", TG_OP_INT_LIST, NULL, false}, {"dim", TG_OP_INT, "0", false}},
     false, {ANY("tensor")}, 1, false, -1, b_split, NULL,
     "split split_size_or_sections=[2,5] dim=-1 --in x.npy --out a.npy --out b.npy"},
    {"narrow", "torch.narrow(input, dim, start, length)",
     {DIM_REQ, {"start", TG_OP_INT, NULL, false}, {"length", TG_OP_INT, NULL, false}}, false,
     {ANY("input")}, 1, false, 1, b_narrow, NULL,
     "narrow dim=1 start=1 length=3 --in x.npy --out y.npy"},
    {"slice", "input[..., start:end:step] along dim (aten::slice)",
     {{"dim", TG_OP_INT, "0", false}, {"start", TG_OP_INT, "null", true},
      {"end", TG_OP_INT, "null", true}, {"step", TG_OP_INT, "1", false}}, false,
     {ANY("input")}, 1, false, 1, b_slice, NULL,
     "slice dim=1 start=1 end=8 step=3 --in x.npy --out y.npy"},
    {"index_select", "torch.index_select(input, dim, index)", {DIM_REQ}, false,
     {ANY("input"), {"index", TG_OP_IN_INDEX, 0}}, 2, false, 1, b_index_select, gen_along_dim,
     "index_select dim=0 --in x.npy --in i.npy --out y.npy"},
    UNARY("exp", b_exp, TG_OP_GEN_NORMAL, "torch.exp(input)"),
    UNARY("log", b_log, TG_OP_GEN_POSITIVE, "torch.log(input)"),
    UNARY("sqrt", b_sqrt, TG_OP_GEN_POSITIVE, "torch.sqrt(input)"),
    UNARY("square", b_square, TG_OP_GEN_NORMAL, "torch.square(input)"),
    UNARY("neg", b_neg, TG_OP_GEN_NORMAL, "torch.neg(input)"),
    {"scale", "scale * input (tgraph)", {{"scale", TG_OP_FLOAT, NULL, false}}, false,
     {IN("input")}, 1, false, 1, b_scale, NULL, "scale scale=2.5 --in x.npy --out y.npy"},
    BINARY("add", b_add, "torch.add(input, other, alpha=1); other a tensor or a number",
           TG_OP_GEN_NORMAL, "--in a.npy --in b.npy --out y.npy", ALPHA),
    BINARY("sub", b_sub, "torch.sub(input, other, alpha=1); other a tensor or a number",
           TG_OP_GEN_NORMAL, "alpha=2 --in a.npy --in b.npy --out y.npy", ALPHA),
    BINARY("mul", b_mul, "torch.mul(input, other); other a tensor or a number",
           TG_OP_GEN_NORMAL, "other=2.5 --in x.npy --out y.npy", ),
    BINARY("div", b_div, "torch.div(input, other); other a tensor or a number",
           TG_OP_GEN_NONZERO, "--in a.npy --in b.npy --out y.npy", ),
    {"sum", "torch.sum(input, dim=None, keepdim=False)",
     {{"dim", TG_OP_INT_LIST, "null", true}, {"keepdim", TG_OP_BOOL, "false", false}}, false,
     {IN("input")}, 1, false, 1, b_sum, NULL, "sum dim=[0,2] --in x.npy --out y.npy"},
    {"mean", "torch.mean(input, dim=None, keepdim=False)",
     {{"dim", TG_OP_INT_LIST, "null", true}, {"keepdim", TG_OP_BOOL, "false", false}}, false,
     {IN("input")}, 1, false, 1, b_mean, NULL, "mean dim=1 keepdim=true --in x.npy --out y.npy"},
    {"permute", "torch.permute(input, dims)", {{"dims", TG_OP_INT_LIST, NULL, false}}, false,
     {ANY("input")}, 1, false, 1, b_permute, NULL, "permute dims=[2,0,1] --in x.npy --out y.npy"},
    {"transpose", "torch.transpose(input, dim0, dim1)",
     {{"dim0", TG_OP_INT, NULL, false}, {"dim1", TG_OP_INT, NULL, false}}, false,
     {ANY("input")}, 1, false, 1, b_transpose, NULL,
     "transpose dim0=0 dim1=1 --in x.npy --out y.npy"},
    {"reshape", "torch.reshape(input, shape); one dim may be -1",
     {{"shape", TG_OP_INT_LIST, NULL, false}}, false, {ANY("input")}, 1, false, 1, b_reshape,
     NULL, "reshape shape=[-1,5,8] --in x.npy --out y.npy"},
};
#define N_OPS (int)(sizeof table / sizeof *table)

int tg_op_count(void) { return N_OPS; }
const tg_op_def *tg_op_at(int i) { return i >= 0 && i < N_OPS ? &table[i] : NULL; }
