/*
 * einops.c - rearrange, repeat and reduce (einops; OPS.md section 8): the
 * builders, the nodes, their forward and backward. The pattern language and
 * the shape inference are in einops_parse.c, the kernels that run the walks
 * in einops_kernels.c.
 *
 * Every op is a walk over the elementary axes of its recipe:
 *   rearrange  y[right order] = x[left order]             (a permutation)
 *   repeat     y[right order] = x[left order]; x has stride 0 along new axes
 *   reduce     y[kept axes]   = sum/mean/max/min/prod over the reduced axes of x
 * so two kernels do all the work:
 *   gather: dst[k] (= | +=) scale * src[off(k)]   dst contiguous, src strided;
 *   fold:   dst[k] (= | +=) sum/max/min of src over an inner walk at off(k).
 * Before anything runs, unit axes are dropped and neighbouring axes that are
 * contiguous in both operands merged: "(b ts_d) seg d -> (b seg) ts_d d" is a
 * 3-d walk that memcpys d elements per row, and a pure reshape ("b ts_d seg d
 * -> (b ts_d) seg d") is the identity walk: that node is a view (TG_OP_VIEW),
 * no copy forward or backward.
 *
 * Not here: einsum (contractions), strided views (tgraph has none).
 *
 * Reading order: the attribute type, the builders (a recipe made into walks),
 * the forward, the backward, the descriptors and registry rows.
 */
#include <stdio.h>

#include "einops_kernels.h"
#include "einops_parse.h"
#include "ops_internal.h"
#include "generic.h"

typedef struct ein_attr {
    tg__ein_kind        kind;
    tg_einops_reduction red;
    const char         *pattern;   /* graph-owned copy (names point into it) */
    tg__ein_recipe      rc;        /* axes and their lengths */
    ein_walk            fwd;       /* y from x: rearrange, repeat */
    ein_walk            bwd;       /* dx from dy: rearrange, reduce sum/mean */
    ein_walk            outer;     /* fold: reduce forward (over x), repeat backward (over dy) */
    ein_walk            inner;
    double              scale;     /* mean: 1 / (elements per reduced slice) */
    int                 arg;       /* max/min: buffer of the picked flat x indices; else -1 */
} ein_attr;

/* the descriptors, after the backwards */
static const tg_op op_rearrange, op_repeat, op_reduce, op_reduce_arg, op_reduce_prod,
                   op_reduce_int, op_rearrange_view, op_repeat_view, op_reduce_view;

/* ---- builder ---- */

static int64_t wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }

/* Build a walk over axes ax[0..n) (lengths len[], source strides src[]). The
 * products wrap instead of overflowing: they can only be garbage when one
 * operand is empty, and then every walk that would read them is empty. */
static void walk_make(ein_walk *w, int n, const int *ax, const int64_t *len, const int64_t *src)
{
    memset(w, 0, sizeof *w);
    w->numel = 1;
    for (int i = 0; i < n; i++) {
        int64_t l = len[ax[i]], s = src[ax[i]];
        if (l == 0) w->empty = true;
        if (l == 1) continue;
        w->numel = wrap_mul(w->numel, l);
        if (w->rank && w->src[w->rank - 1] == wrap_mul(s, l)) {
            w->len[w->rank - 1] = wrap_mul(w->len[w->rank - 1], l);
            w->src[w->rank - 1] = s;
        } else {
            w->len[w->rank] = l;
            w->src[w->rank] = s;
            w->rank++;
        }
    }
    if (w->empty) w->numel = w->rank = 0;   /* no length-0 axis left to divide by */
    w->inner = w->rank ? w->len[w->rank - 1] : 1;
    w->inner_src = w->rank ? w->src[w->rank - 1] : 0;
}

/* The identity walk: dst[k] = src[k] (a reshape). */
static bool walk_identity(const ein_walk *w)
{
    return w->empty || w->rank == 0 || (w->rank == 1 && w->src[0] == 1);
}

static const char *const red_names[] = {"sum", "mean", "max", "min", "prod"};

const char *tg_einops_reduction_name(tg_einops_reduction r)
{
    return (unsigned)r < TG_EINOPS_REDUCTION_COUNT ? red_names[r] : NULL;
}

/* einops' wrapper around every inner message, on one line. */
static tg_node *fail_wrapped(tg_graph *g, const char *op, const char *what, const char *pattern,
                             const tg_tensor *x, int n_kw, const tg_axis_len *kw, const char *msg)
{
    char shape[200], info[300];
    size_t k = 0;
    k += (size_t)snprintf(shape, sizeof shape, "(");
    for (int d = 0; d < x->rank && k < sizeof shape; d++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, d ? ", %lld" : "%lld",
                              (long long)x->shape[d]);
    if (k < sizeof shape) snprintf(shape + k, sizeof shape - k, x->rank == 1 ? ",)" : ")");
    k = (size_t)snprintf(info, sizeof info, "{");
    for (int i = 0; i < n_kw && k < sizeof info; i++)
        k += (size_t)snprintf(info + k, sizeof info - k, "%s%s%s%s: %lld", i ? ", " : "",
                              kw[i].name ? "'" : "", kw[i].name ? kw[i].name : "None",
                              kw[i].name ? "'" : "", (long long)kw[i].len);
    if (k < sizeof info) snprintf(info + k, sizeof info - k, "}");
    return tg_graph_fail(g, "%s: Error while processing %s-reduction pattern \"%.300s%s\". Input "
                         "tensor shape: %s. Additional info: %s. %s", op, what, pattern,
                         strlen(pattern) > 300 ? "..." : "", shape, info, msg);
}

/* C-order strides over the axes ax[0..n); stride[] must be zeroed by the caller. */
static void strides_over(int n, const int *ax, const int64_t *len, int64_t *stride)
{
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) {
        stride[ax[i]] = s;
        s = wrap_mul(s, len[ax[i]]);
    }
}

static tg_node *einops_node(tg_graph *g, tg__ein_kind kind, tg_einops_reduction red, tg_node *x,
                            const char *pattern, int n_kw, const tg_axis_len *kw)
{
    const char *op = kind == TG__EIN_REARRANGE ? "rearrange" : kind == TG__EIN_REPEAT ? "repeat"
                                                                                       : "reduce";
    const char *what = op;
    if (!tg_builder_check(g, op, 1, &x)) return NULL;
    if (!pattern) return tg_graph_fail(g, "%s: pattern is NULL", op);
    if (n_kw < 0 || (n_kw > 0 && !kw))
        return tg_graph_fail(g, "%s: bad axis length list (n_axes %d, axes %s)", op, n_kw,
                             kw ? "given" : "NULL");
    if (kind == TG__EIN_REDUCE) {
        if ((unsigned)red >= TG_EINOPS_REDUCTION_COUNT)
            return tg_graph_fail(g, "reduce: unknown reduction %d (expected sum, mean, max, min or "
                                 "prod)", (int)red);
        what = red_names[red];
        if (x->value.dtype == TG_I64 && red == TG_EINOPS_MEAN)
            return tg_graph_fail(g, "reduce: mean needs a float input, got int64 (torch: mean(): "
                                 "could not infer output dtype)");
        if (x->value.dtype != TG_I64 && !tg__want_float(g, op, x, "input")) return NULL;
    }
    const tg_tensor *v = &x->value;
    char err[512];
    tg__ein_recipe rc;
    if (!tg__ein_prepare(pattern, kind, what, v->rank, v->shape, n_kw, kw, &rc, err, sizeof err))
        return fail_wrapped(g, op, what, pattern, v, n_kw, kw, err);

    /* strides of the elementary axes in x (left order) and in y (right order) */
    int left[TG__EIN_MAX_AXES], red_ax[TG__EIN_MAX_AXES], new_ax[TG__EIN_MAX_AXES];
    int n_red = 0, n_new = 0;
    int64_t sx[TG__EIN_MAX_AXES] = {0}, sy[TG__EIN_MAX_AXES] = {0}, count = 1, ynumel = 1;
    for (int i = 0; i < rc.n_left; i++) {
        left[i] = i;
        if (!rc.on_right[i]) {
            red_ax[n_red++] = i;
            count = wrap_mul(count, rc.len[i]);
        }
    }
    for (int i = 0; i < rc.n_right; i++)
        if (rc.right[i] >= rc.n_left) new_ax[n_new++] = rc.right[i];
    for (int d = 0; d < rc.out_rank; d++) ynumel *= rc.out_shape[d];
    strides_over(rc.n_left, left, rc.len, sx);
    strides_over(rc.n_right, rc.right, rc.len, sy);

    bool ints = kind == TG__EIN_REDUCE && v->dtype == TG_I64;
    bool arg = kind == TG__EIN_REDUCE && (red == TG_EINOPS_MAX || red == TG_EINOPS_MIN);
    if (arg && count == 0 && ynumel > 0)
        return fail_wrapped(g, op, what, pattern, v, n_kw, kw,
                            "cannot take the max/min over zero elements (a reduced axis has "
                            "length 0)");
    ein_attr at = {.kind = kind, .red = red, .rc = rc, .arg = -1};
    walk_make(&at.fwd, rc.n_right, rc.right, rc.len, sx);
    bool view = ynumel == v->numel && walk_identity(&at.fwd);
    const tg_op *desc = view ? &op_rearrange_view : &op_rearrange;
    if (kind == TG__EIN_REPEAT) {
        desc = view ? &op_repeat_view : &op_repeat;
        walk_make(&at.outer, rc.n_left, left, rc.len, sy);
        walk_make(&at.inner, n_new, new_ax, rc.len, sy);
    } else if (kind == TG__EIN_REDUCE) {
        view = view && count == 1;
        desc = view ? &op_reduce_view : ints ? &op_reduce_int : arg ? &op_reduce_arg
             : red == TG_EINOPS_PROD ? &op_reduce_prod : &op_reduce;
        walk_make(&at.outer, rc.n_right, rc.right, rc.len, sx);
        walk_make(&at.inner, n_red, red_ax, rc.len, sx);
        walk_make(&at.bwd, rc.n_left, left, rc.len, sy);
        at.scale = red == TG_EINOPS_MEAN ? 1.0 / (double)count : 1.0;   /* 1/0: NaN means */
    } else {
        walk_make(&at.bwd, rc.n_left, left, rc.len, sy);
    }

    tg_node *n = tg_node_new(g, desc, 1, &x, v->dtype, rc.out_rank, rc.out_shape);
    ein_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    *a = at;
    if (!(a->pattern = tg_graph_strdup(g, pattern))) return NULL;
    if (arg && !view && !ints &&
        (a->arg = tg_node_buffer(n, TG_I64, rc.out_rank, rc.out_shape)) < 0)
        return NULL;
    return n;
}

tg_node *tg_rearrange(tg_graph *g, tg_node *x, const char *pattern, int n_axes,
                      const tg_axis_len *axes)
{
    return einops_node(g, TG__EIN_REARRANGE, TG_EINOPS_SUM, x, pattern, n_axes, axes);
}

tg_node *tg_repeat(tg_graph *g, tg_node *x, const char *pattern, int n_axes,
                   const tg_axis_len *axes)
{
    return einops_node(g, TG__EIN_REPEAT, TG_EINOPS_SUM, x, pattern, n_axes, axes);
}

tg_node *tg_reduce(tg_graph *g, tg_node *x, const char *pattern, tg_einops_reduction r,
                   int n_axes, const tg_axis_len *axes)
{
    return einops_node(g, TG__EIN_REDUCE, r, x, pattern, n_axes, axes);
}

static bool is_einops(const tg_op *op)
{
    return op == &op_rearrange || op == &op_repeat || op == &op_reduce || op == &op_reduce_arg ||
           op == &op_reduce_prod || op == &op_reduce_int || op == &op_rearrange_view || op == &op_repeat_view || op == &op_reduce_view;
}

int64_t tg_einops_axis_len(const tg_node *n, const char *name)
{
    TG__NONNULL(n, -1);
    TG__NONNULL(name, -1);
    if (!n || !name || !n->op || !is_einops(n->op) || !n->attr) return -1;
    const ein_attr *a = n->attr;
    size_t len = strlen(name);
    for (int i = 0; i < a->rc.n_axes; i++)
        if (a->rc.name_off[i] >= 0 && (size_t)a->rc.name_len[i] == len &&
            !memcmp(a->pattern + a->rc.name_off[i], name, len))
            return a->rc.len[i];
    return -1;
}

/* ---- forward ---- */

/* forward: y[k] = x[off(k)] with x's stride 0 along repeat's new axes */
static tg_status rearrange_forward(tg_node *n)
{
    const ein_attr *a = n->attr;
    tg__ein_run_copy(&a->fwd, n->in[0]->value.data, n->value.data, tg_dtype_size(n->value.dtype));
    return TG_OK;
}

/* forward: y[k] = reduce over the reduced axes of x (mean = scale * sum) */
static tg_status reduce_forward(tg_node *n)
{
    const ein_attr *a = n->attr;
    int mode = a->red == TG_EINOPS_MAX ? FOLD_MAX : a->red == TG_EINOPS_MIN ? FOLD_MIN
             : a->red == TG_EINOPS_PROD ? FOLD_PROD : FOLD_SUM;
    ein_fold j = {&a->outer, &a->inner, n->in[0]->value.data, n->value.data,
                  a->arg >= 0 ? n->buf[a->arg].data : NULL, mode, a->scale, false};
    if (n->value.dtype == TG_I64) {
        if (!a->outer.empty)
            tg_parallel_for(a->outer.numel, tg__ein_grain_for(a->inner.numel),
                            tg__ein_fold_i64_range, &j);
        return TG_OK;
    }
    tg__ein_run_fold(n->value.dtype, &j);
    return TG_OK;
}

/* ---- backward ---- */

/* backward of the permutation y = x[perm]: dx[perm^-1] += dy (a copy when dx
 * is fresh: each element of dx comes from exactly one of dy) */
static tg_status rearrange_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    if (tg_grad_fresh(n, 0))
        tg__ein_run_copy(&a->bwd, n->grad.data, n->in[0]->grad.data, tg_dtype_size(n->value.dtype));
    else
        tg__ein_run_gather_add(n->value.dtype, &a->bwd, n->grad.data, n->in[0]->grad.data, 1.0);
    return TG_OK;
}

/* backward of repeat: y = copies of x along the new axes, so dx += the sum of
 * dy over the new axes, laid out back in input order (einops.reduce(dy,
 * 'right -> left', 'sum')) */
static tg_status repeat_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    ein_fold j = {&a->outer, &a->inner, n->grad.data, n->in[0]->grad.data, NULL, FOLD_SUM, 1.0, true};
    tg__ein_run_fold(n->value.dtype, &j);
    return TG_OK;
}

/* backward: sum/mean were y[j] = scale * sum_{i -> j} x[i], so dx[i] += scale * dy[j(i)];
 * max/min were y[k] = x[arg[k]], so dx[arg[k]] += dy[k] */
static tg_status reduce_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    if (a->arg >= 0)
        TG_DISPATCH(n->value.dtype, tg__ein_arg_backward)(n, n->buf[a->arg].data);
    else
        tg__ein_run_gather_add(n->value.dtype, &a->bwd, n->grad.data, n->in[0]->grad.data,
                               a->scale);
    return TG_OK;
}

/* backward of prod: dx[i] += dy[k] * (the product of the others in i's slice) */
static tg_status reduce_prod_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    ein_prod j = {&a->outer, &a->inner, n->in[0]->value.data, n->grad.data, n->in[0]->grad.data};
    if (!a->outer.empty)
        tg_parallel_for(a->outer.numel, tg__ein_grain_for(a->inner.numel),
                        TG_DISPATCH(n->value.dtype, tg__ein_prod_backward_range), &j);
    return TG_OK;
}

/* ---- descriptors ---- */

/* max/min picks, for gradcheck: a probe that changes one straddles a kink. */
static uint64_t reduce_kinks(const tg_node *n)
{
    const ein_attr *a = n->attr;
    const int64_t *arg = n->buf[a->arg].data;
    uint64_t h = 1469598103934665603ull;
    for (int64_t k = 0; k < n->value.numel; k++) h = (h ^ (uint64_t)arg[k]) * 1099511628211ull;
    return h;
}

static void einops_describe(const tg_node *n, char *buf, size_t len)
{
    const ein_attr *a = n->attr;
    if (a->kind == TG__EIN_REDUCE)
        snprintf(buf, len, "%s, %s", a->pattern, red_names[a->red]);
    else
        snprintf(buf, len, "%s", a->pattern);
}

/* ONNX: x reshaped to its elementary axes (repeat: new axes of length 1 appended,
 * then Expand; reduce: Reduce* over its axes), a Transpose into the output's axis
 * order, and a Reshape to the output shape. */
static const char *ein_onnx_axes(const tg_node *n, struct tg_onnx *m, const ein_attr *a,
                                 const char *x)
{
    const tg__ein_recipe *rc = &a->rc;
    int64_t len[TG__EIN_MAX_AXES], axes[TG__EIN_MAX_AXES];
    int k = 0;
    for (int i = 0; i < rc->n_axes; i++) len[i] = i < rc->n_left ? rc->len[i] : 1;
    const char *e = tg__onnx_tmp(m, n, "axes");
    tg__onnx_reshape(m, x, e, rc->n_axes, len);
    if (a->kind == TG__EIN_REPEAT && rc->n_axes > rc->n_left) {
        const char *r = tg__onnx_tmp(m, n, "repeated");
        TG__ONNX_NODE(m, "Expand", r, e, tg__onnx_const_i64(m, rc->n_axes, rc->len));
        return r;
    }
    if (a->kind != TG__EIN_REDUCE) return e;
    for (int i = 0; i < rc->n_left; i++)
        if (!rc->on_right[i]) axes[k++] = i;
    if (!k) return e;
    static const char *const types[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                        "ReduceProd"};
    const char *r = tg__onnx_tmp(m, n, "reduced");
    if (a->red == TG_EINOPS_SUM) TG__ONNX_NODE(m, "ReduceSum", r, e, tg__onnx_const_i64(m, k, axes));
    else TG__ONNX_NODE(m, types[a->red], r, e);
    if (a->red != TG_EINOPS_SUM) tg__onnx_attr_ints(m, "axes", k, axes);
    tg__onnx_attr_int(m, "keepdims", 0);
    return r;
}

static tg_status einops_onnx(const tg_node *n, struct tg_onnx *m)
{
    const ein_attr *a = n->attr;
    const tg__ein_recipe *rc = &a->rc;
    const char *e = ein_onnx_axes(n, m, a, tg__onnx_in(m, n, 0));
    int pos[TG__EIN_MAX_AXES], k = 0;   /* axis -> its position after the reduction */
    for (int i = 0; i < rc->n_axes; i++) pos[i] = i < rc->n_left && !rc->on_right[i] ? -1 : k++;
    int64_t perm[TG__EIN_MAX_AXES];
    bool identity = true;
    for (int j = 0; j < rc->n_right; j++) {
        perm[j] = pos[rc->right[j]];
        identity = identity && perm[j] == j;
    }
    if (!identity) {
        const char *t = tg__onnx_tmp(m, n, "permuted");
        TG__ONNX_NODE(m, "Transpose", t, e);
        tg__onnx_attr_ints(m, "perm", rc->n_right, perm);
        e = t;
    }
    tg__onnx_reshape_as(m, n, e, tg__onnx_value(m, n));
    return tg__onnx_status(m);
}

static const tg_op op_rearrange = {.name = "rearrange", .forward = rearrange_forward,
                                   .backward = rearrange_backward, .describe = einops_describe,
                                   .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS |
                                            TG_OP_BWD_FRESH | TG_OP_RECOMPUTE,
                                   .flops = tg__flops_none, .onnx = einops_onnx};
static const tg_op op_repeat = {.name = "repeat", .forward = rearrange_forward,
                                .backward = repeat_backward, .describe = einops_describe,
                                .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS |
                                         TG_OP_RECOMPUTE,
                                .flops = tg__flops_none, .onnx = einops_onnx};
static const tg_op op_reduce = {.name = "reduce", .forward = reduce_forward,
                                .backward = reduce_backward, .describe = einops_describe,
                                .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                                .flops = tg__flops_reduce, .onnx = einops_onnx};
static const tg_op op_reduce_arg = {.name = "reduce", .forward = reduce_forward,
                                    .backward = reduce_backward, .describe = einops_describe,
                                    .kinks = reduce_kinks, .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                                    .flops = tg__flops_reduce, .onnx = einops_onnx};
/* prod's backward reads x; int64 reductions take no gradient. */
static const tg_op op_reduce_prod = {.name = "reduce", .forward = reduce_forward,
                                     .backward = reduce_prod_backward, .describe = einops_describe,
                                     .flags = TG_OP_BWD_NO_OUTPUT,
                                     .flops = tg__flops_reduce, .onnx = einops_onnx};
static const tg_op op_reduce_int = {.name = "reduce", .forward = reduce_forward,
                                    .describe = einops_describe,
                                    .flops = tg__flops_reduce, .onnx = einops_onnx};
/* When no element moves: the same ops as views. */
static const tg_op op_rearrange_view = {.name = "rearrange", .describe = einops_describe,
                                        .flags = TG_OP_VIEW, .onnx = einops_onnx};
static const tg_op op_repeat_view = {.name = "repeat", .describe = einops_describe,
                                     .flags = TG_OP_VIEW, .onnx = einops_onnx};
static const tg_op op_reduce_view = {.name = "reduce", .describe = einops_describe,
                                     .flags = TG_OP_VIEW, .onnx = einops_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_rearrange)
{
    (void)n_in;
    return TG_GLUE_ONE(tg_rearrange(g, in[0], tg__op_str(c, "pattern"), c->n_axes, c->axes));
}

TG_GLUE(b_repeat)
{
    (void)n_in;
    return TG_GLUE_ONE(tg_repeat(g, in[0], tg__op_str(c, "pattern"), c->n_axes, c->axes));
}

TG_GLUE(b_reduce)
{
    (void)n_in;
    const char *r = tg__op_str(c, "reduction");
    for (int k = 0; k < TG_EINOPS_REDUCTION_COUNT; k++)
        if (!strcmp(r, tg_einops_reduction_name((tg_einops_reduction)k)))
            return TG_GLUE_ONE(tg_reduce(g, in[0], tg__op_str(c, "pattern"), (tg_einops_reduction)k,
                                 c->n_axes, c->axes));
    tg_graph_fail(g, "reduce: unknown reduction '%s' (sum, mean, max, min, prod)", r);
    return TG_ERR_INVALID;
}

const tg_op_def tg__einops_ops[] = {
    {"rearrange", "einops.rearrange(tensor, pattern, **axes_lengths)",
     {{"pattern", TG_OP_STRING, NULL, false, "einops pattern ('b (h w) -> b h w')", NULL, 0}}, true,
     {TG_ANY("tensor")}, 1, false, 1, b_rearrange, NULL,
     "rearrange 'pattern=(b ts_d) seg d -> b ts_d seg d' b=2 --in x.npy --out y.npy",
     &op_rearrange, NULL,
     "pattern=a b -> b a;[2,3]", "pattern=a b -> a;[2,3]", NULL},
    {"repeat", "einops.repeat(tensor, pattern, **axes_lengths)",
     {{"pattern", TG_OP_STRING, NULL, false,
       "einops pattern; new axes on the right repeat", NULL, 0}},
     true, {TG_ANY("tensor")}, 1, false, 1, b_repeat, NULL,
     "repeat 'pattern=seg f d -> (repeat seg) f d' repeat=2 --in x.npy --out y.npy", &op_repeat,
     NULL, "pattern=a b -> a b r;r=2;[2,3]", "pattern=a b -> a b r;[2,3]", NULL},
    {"reduce", "einops.reduce(tensor, pattern, reduction, **axes_lengths)",
     {{"pattern", TG_OP_STRING, NULL, false,
       "einops pattern; axes missing on the right reduce", NULL, 0},
      {"reduction", TG_OP_STRING, NULL, false,
       "sum, mean, max, min or prod (int64: not mean)", NULL, 0}},
     true, {TG_ANY("tensor")}, 1, false, 1, b_reduce, NULL,
     "reduce 'pattern=b (h 2) w -> b h' reduction=max --in x.npy --out y.npy", &op_reduce, NULL,
     "pattern=a b -> a;reduction=sum;[2,3]", "pattern=a b -> a;reduction=avg;[2,3]", NULL},
    {0}
};
