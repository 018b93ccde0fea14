/*
 * einops.c - rearrange, repeat and reduce (einops; OPS.md section 8): the
 * builders, the nodes, their forward and backward kernels. The pattern
 * language and the shape inference are in einops_parse.c.
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
 * Reading order (engine/generic.h): the walk and attribute types, the
 * builders (a recipe made into walks), the forward, the backward, the
 * descriptors and registry rows, then the portable kernels for float and
 * double at the end of the file.
 */
#ifndef TG_KERNELS /* ===================================== the ops proper */

#include <stdio.h>

#include "einops_parse.h"
#include "ops_internal.h"
#include "generic.h"

/* A walk over some elementary axes, with the destination contiguous in walk
 * order and the source at a stride per axis. Unit axes are dropped, axes that
 * stay contiguous in both operands merged. */
typedef struct ein_walk {
    int     rank;                          /* 0: one element (none when empty) */
    bool    empty;                         /* an axis of length 0: nothing to visit */
    int64_t numel;                         /* elements visited (0 when empty) */
    int64_t inner, inner_src;              /* last axis: length and source stride (1, 0 at rank 0) */
    int64_t len[TG__EIN_MAX_AXES];
    int64_t src[TG__EIN_MAX_AXES];
} ein_walk;

typedef struct ein_gather {
    const ein_walk *w;
    const void     *src;
    void           *dst;
    size_t          es;      /* element size (copy) */
    double          scale;   /* (add) */
} ein_gather;

enum { FOLD_SUM, FOLD_MAX, FOLD_MIN, FOLD_PROD };
#define FOLD_BLOCK 256   /* dst elements summed together by fold_sum_blocks */

typedef struct ein_fold {
    const ein_walk *outer, *inner;
    const void     *src;
    void           *dst;
    int64_t        *arg;          /* max/min: flat source index of each pick, or NULL */
    int             mode;
    double          scale;
    bool            accumulate;   /* dst += (backward) instead of dst = (forward) */
} ein_fold;

typedef struct ein_prod {        /* prod backward: outer over y, inner over a slice of x */
    const ein_walk *outer, *inner;
    const void     *x, *dy;
    void           *dx;
} ein_prod;

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

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, gather_add_range, (void *vctx, int64_t begin, int64_t end, int tid));
TG_KERNEL_DECL(static void, fold_range, (void *vctx, int64_t begin, int64_t end, int tid));
TG_KERNEL_DECL(static void, prod_backward_range, (void *vctx, int64_t begin, int64_t end,
                                                  int tid));
TG_KERNEL_DECL(static void, arg_backward, (tg_node *n, const int64_t *arg));

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

/* Position number k over the first nd axes (the last of them fastest): index and offset. */
static void walk_start(const ein_walk *w, int nd, int64_t k, int64_t *idx, int64_t *off)
{
    *off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = k % w->len[d];
        k /= w->len[d];
        *off += idx[d] * w->src[d];
    }
}

/* The next position over the first nd axes (an odometer). */
static inline void walk_next(const ein_walk *w, int nd, int64_t *idx, int64_t *off)
{
    for (int d = nd - 1; d >= 0; d--) {
        *off += w->src[d];
        if (++idx[d] < w->len[d]) return;
        *off -= w->src[d] * w->len[d];
        idx[d] = 0;
    }
}

/* Forward of rearrange and repeat, any dtype: dst[k] = src[off(k)], rows of
 * the last axis at a time (one memcpy when the source is contiguous there). */
static void copy_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_gather *j = vctx;
    const ein_walk *w = j->w;
    const size_t es = j->es;
    const char *src = j->src;
    char *dst = (char *)j->dst + (size_t)(begin * w->inner) * es;
    int64_t idx[TG__EIN_MAX_AXES], off, inner = w->inner, si = w->inner_src;
    (void)tid;
    walk_start(w, w->rank - 1, begin, idx, &off);
    for (int64_t r = begin; r < end; r++, dst += (size_t)inner * es) {
        const char *x = src + (size_t)off * es;
        if (si == 1) {
            memcpy(dst, x, (size_t)inner * es);
        } else if (es == 8) {
            for (int64_t i = 0; i < inner; i++) memcpy(dst + 8 * i, x + 8 * i * si, 8);
        } else if (es == 4) {
            for (int64_t i = 0; i < inner; i++) memcpy(dst + 4 * i, x + 4 * i * si, 4);
        } else {
            for (int64_t i = 0; i < inner; i++) memcpy(dst + es * (size_t)i, x + es * (size_t)(i * si), es);
        }
        walk_next(w, w->rank - 1, idx, &off);
    }
}

/* reduce forward on int64: y[k] = sum / prod (wrapping, as torch's int64
 * does) or max / min over the reduced axes of x at x offset off(k). */
static void fold_i64_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_fold *j = vctx;
    const ein_walk *o = j->outer, *in = j->inner;
    const int64_t *src = j->src;
    int64_t *dst = j->dst;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    int64_t rows = in->empty ? 0 : in->numel / in->inner, inner = in->inner, si = in->inner_src;
    (void)tid;
    walk_start(o, o->rank, begin, oidx, &off);
    for (int64_t k = begin; k < end; k++) {
        uint64_t acc = j->mode == FOLD_PROD ? 1 : 0;
        int64_t best = 0;
        bool any = false;
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows; r++) {
            const int64_t *x = src + off + ioff;
            for (int64_t i = 0; i < inner; i++) {
                int64_t v = x[i * si];
                if (j->mode == FOLD_SUM) acc += (uint64_t)v;
                else if (j->mode == FOLD_PROD) acc *= (uint64_t)v;
                else if (!any || (j->mode == FOLD_MAX ? v > best : v < best)) best = v, any = true;
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        dst[k] = j->mode == FOLD_SUM || j->mode == FOLD_PROD ? (int64_t)acc : best;
        walk_next(o, o->rank, oidx, &off);
    }
}

/* Rows of at least ~16k elements per task. */
static int64_t grain_for(int64_t per_item)
{
    return per_item >= 16384 ? 1 : 16384 / (per_item > 0 ? per_item : 1);
}

static void run_copy(const ein_walk *w, const void *src, void *dst, size_t es)
{
    if (w->empty) return;
    ein_gather j = {w, src, dst, es, 1.0};
    tg_parallel_for(w->numel / w->inner, grain_for(w->inner), copy_range, &j);
}

static void run_gather_add(tg_dtype dt, const ein_walk *w, const void *src, void *dst, double scale)
{
    if (w->empty) return;
    ein_gather j = {w, src, dst, 0, scale};
    tg_parallel_for(w->numel / w->inner, grain_for(w->inner), TG_DISPATCH(dt, gather_add_range), &j);
}

static void run_fold(tg_dtype dt, ein_fold *j)
{
    if (j->outer->empty) return;
    tg_parallel_for(j->outer->numel, grain_for(j->inner->numel), TG_DISPATCH(dt, fold_range), j);
}

/* forward: y[k] = x[off(k)] with x's stride 0 along repeat's new axes */
static tg_status rearrange_forward(tg_node *n)
{
    const ein_attr *a = n->attr;
    run_copy(&a->fwd, n->in[0]->value.data, n->value.data, tg_dtype_size(n->value.dtype));
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
            tg_parallel_for(a->outer.numel, grain_for(a->inner.numel), fold_i64_range, &j);
        return TG_OK;
    }
    run_fold(n->value.dtype, &j);
    return TG_OK;
}

/* ---- backward ---- */

/* backward of the permutation y = x[perm]: dx[perm^-1] += dy (a copy when dx
 * is fresh: each element of dx comes from exactly one of dy) */
static tg_status rearrange_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    if (tg_grad_fresh(n, 0))
        run_copy(&a->bwd, n->grad.data, n->in[0]->grad.data, tg_dtype_size(n->value.dtype));
    else
        run_gather_add(n->value.dtype, &a->bwd, n->grad.data, n->in[0]->grad.data, 1.0);
    return TG_OK;
}

/* backward of repeat: y = copies of x along the new axes, so dx += the sum of
 * dy over the new axes, laid out back in input order (einops.reduce(dy,
 * 'right -> left', 'sum')) */
static tg_status repeat_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    ein_fold j = {&a->outer, &a->inner, n->grad.data, n->in[0]->grad.data, NULL, FOLD_SUM, 1.0, true};
    run_fold(n->value.dtype, &j);
    return TG_OK;
}

/* backward: sum/mean were y[j] = scale * sum_{i -> j} x[i], so dx[i] += scale * dy[j(i)];
 * max/min were y[k] = x[arg[k]], so dx[arg[k]] += dy[k] */
static tg_status reduce_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    if (a->arg >= 0)
        TG_DISPATCH(n->value.dtype, arg_backward)(n, n->buf[a->arg].data);
    else
        run_gather_add(n->value.dtype, &a->bwd, n->grad.data, n->in[0]->grad.data, a->scale);
    return TG_OK;
}

/* backward of prod: dx[i] += dy[k] * (the product of the others in i's slice) */
static tg_status reduce_prod_backward(tg_node *n)
{
    const ein_attr *a = n->attr;
    ein_prod j = {&a->outer, &a->inner, n->in[0]->value.data, n->grad.data, n->in[0]->grad.data};
    if (!a->outer.empty)
        tg_parallel_for(a->outer.numel, grain_for(a->inner.numel),
                        TG_DISPATCH(n->value.dtype, prod_backward_range), &j);
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

static const tg_op op_rearrange = {.name = "rearrange", .forward = rearrange_forward,
                                   .backward = rearrange_backward, .describe = einops_describe,
                                   .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS |
                                            TG_OP_BWD_FRESH | TG_OP_RECOMPUTE,
                                   .flops = tg__flops_none};
static const tg_op op_repeat = {.name = "repeat", .forward = rearrange_forward,
                                .backward = repeat_backward, .describe = einops_describe,
                                .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS |
                                         TG_OP_RECOMPUTE,
                                .flops = tg__flops_none};
static const tg_op op_reduce = {.name = "reduce", .forward = reduce_forward,
                                .backward = reduce_backward, .describe = einops_describe,
                                .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                                .flops = tg__flops_reduce};
static const tg_op op_reduce_arg = {.name = "reduce", .forward = reduce_forward,
                                    .backward = reduce_backward, .describe = einops_describe,
                                    .kinks = reduce_kinks, .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                                    .flops = tg__flops_reduce};
/* prod's backward reads x; int64 reductions take no gradient. */
static const tg_op op_reduce_prod = {.name = "reduce", .forward = reduce_forward,
                                     .backward = reduce_prod_backward, .describe = einops_describe,
                                     .flags = TG_OP_BWD_NO_OUTPUT,
                                     .flops = tg__flops_reduce};
static const tg_op op_reduce_int = {.name = "reduce", .forward = reduce_forward,
                                    .describe = einops_describe,
                                    .flops = tg__flops_reduce};
/* When no element moves: the same ops as views. */
static const tg_op op_rearrange_view = {.name = "rearrange", .describe = einops_describe,
                                        .flags = TG_OP_VIEW};
static const tg_op op_repeat_view = {.name = "repeat", .describe = einops_describe,
                                     .flags = TG_OP_VIEW};
static const tg_op op_reduce_view = {.name = "reduce", .describe = einops_describe,
                                     .flags = TG_OP_VIEW};

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

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "einops.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* rearrange backward: dx = inverse permutation of dy, i.e. walking dx in input
 * order, dst[k] += dy[off(k)];  reduce sum/mean backward: dx[i] += scale * dy[j(i)]
 * (the walk's dy stride is 0 along reduced axes). dst contiguous. */
static void TG_F(gather_add_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_gather *j = vctx;
    const ein_walk *w = j->w;
    const TG_T *src = j->src;
    TG_T *dst = (TG_T *)j->dst + begin * w->inner;
    TG_T s = (TG_T)j->scale;
    int64_t idx[TG__EIN_MAX_AXES], off, inner = w->inner, si = w->inner_src;
    (void)tid;
    walk_start(w, w->rank - 1, begin, idx, &off);
    for (int64_t r = begin; r < end; r++, dst += inner) {
        const TG_T *x = src + off;
        if (si == 1)
            for (int64_t i = 0; i < inner; i++) dst[i] += s * x[i];
        else
            for (int64_t i = 0; i < inner; i++) dst[i] += s * x[i * si];
        walk_next(w, w->rank - 1, idx, &off);
    }
}

/* The sum of fold_range when the outer walk is contiguous in src along its
 * last axis (repeat backward, "(b t) s d -> b d"): a block of dst at a time,
 * each inner position adding one contiguous run of src (cache-friendly and
 * vectorisable, where one element at a time would stride through memory). */
static void TG_F(fold_sum_blocks)(const ein_fold *j, int64_t begin, int64_t end)
{
    const ein_walk *o = j->outer, *in = j->inner;
    const TG_T *src = j->src;
    TG_T *dst = j->dst;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    double acc[FOLD_BLOCK];
    for (int64_t k = begin; k < end;) {
        walk_start(o, o->rank, k, oidx, &off);
        int64_t n = o->len[o->rank - 1] - oidx[o->rank - 1];   /* to the end of the row */
        if (n > end - k) n = end - k;
        if (n > FOLD_BLOCK) n = FOLD_BLOCK;
        for (int64_t i = 0; i < n; i++) acc[i] = 0;
        walk_start(in, in->rank, 0, iidx, &ioff);
        for (int64_t r = 0; r < in->numel; r++) {
            const TG_T *x = src + off + ioff;
            for (int64_t i = 0; i < n; i++) acc[i] += x[i];
            walk_next(in, in->rank, iidx, &ioff);
        }
        for (int64_t i = 0; i < n; i++) {
            TG_T v = (TG_T)(acc[i] * j->scale);
            dst[k + i] = j->accumulate ? dst[k + i] + v : v;
        }
        k += n;
    }
}

/* reduce forward:  y[k]  = scale * sum (or max / min) over the reduced axes of x
 *                  at x offset off(k); max/min also keep the flat x index;
 * repeat backward: dx[k] += sum over the new axes of dy at dy offset off(k).
 * Sums accumulate in double. Max/min keep the first extreme element (lowest
 * flat index: the inner walk runs in input order) and propagate NaN. */
static void TG_F(fold_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_fold *j = vctx;
    const ein_walk *o = j->outer, *in = j->inner;
    const TG_T *src = j->src;
    TG_T *dst = j->dst;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    int64_t rows = in->empty ? 0 : in->numel / in->inner, inner = in->inner, si = in->inner_src;
    (void)tid;
    if (j->mode == FOLD_SUM && o->rank && o->inner_src == 1) {
        TG_F(fold_sum_blocks)(j, begin, end);
        return;
    }
    walk_start(o, o->rank, begin, oidx, &off);
    for (int64_t k = begin; k < end; k++) {
        double acc = j->mode == FOLD_PROD ? 1 : 0;
        TG_T best = 0;
        int64_t arg = -1;
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows; r++) {
            const TG_T *x = src + off + ioff;
            if (j->mode == FOLD_SUM) {
                double s = 0;
                for (int64_t i = 0; i < inner; i++) s += x[i * si];
                acc += s;
            } else if (j->mode == FOLD_PROD) {
                for (int64_t i = 0; i < inner; i++) acc *= x[i * si];
            } else {
                for (int64_t i = 0; i < inner; i++) {
                    TG_T v = x[i * si];
                    bool take = arg < 0 || (isnan(v) && !isnan(best)) ||
                                (j->mode == FOLD_MAX ? v > best : v < best);
                    if (take) {
                        best = v;
                        arg = off + ioff + i * si;
                    }
                }
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        TG_T v = j->mode == FOLD_SUM || j->mode == FOLD_PROD ? (TG_T)(acc * j->scale) : best;
        dst[k] = j->accumulate ? dst[k] + v : v;
        if (j->arg) j->arg[k] = arg;
        walk_next(o, o->rank, oidx, &off);
    }
}

/* prod backward: forward was y[k] = prod of the slice S(k) of x, so
 * dx[i] += dy[k] * prod_{i' in S(k), i' != i} x[i']: with no zero in the slice
 * y[k] / x[i]; with one zero, the product of the others at that zero and 0
 * elsewhere; with two or more, 0 everywhere (never a division by zero). */
static void TG_F(prod_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_prod *j = vctx;
    const ein_walk *o = j->outer, *in = j->inner;
    const TG_T *x = j->x, *dy = j->dy;
    TG_T *dx = j->dx;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    int64_t rows = in->empty ? 0 : in->numel / in->inner, inner = in->inner, si = in->inner_src;
    (void)tid;
    walk_start(o, o->rank, begin, oidx, &off);
    for (int64_t k = begin; k < end; k++) {
        double nonzero = 1;   /* product of the slice's nonzero elements */
        int64_t zeros = 0;
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t i = 0; i < inner; i++) {
                TG_T v = x[off + ioff + i * si];
                if (v == 0) zeros++;
                else nonzero *= v;
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows && zeros < 2; r++) {
            for (int64_t i = 0; i < inner; i++) {
                int64_t p = off + ioff + i * si;
                double others = zeros == 0 ? nonzero / x[p] : x[p] == 0 ? nonzero : 0;
                dx[p] += (TG_T)(dy[k] * others);
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        walk_next(o, o->rank, oidx, &off);
    }
}

/* max/min backward: forward was y[k] = x[arg[k]], so dx[arg[k]] += dy[k]. */
static void TG_F(arg_backward)(tg_node *n, const int64_t *arg)
{
    const TG_T *dy = n->grad.data;
    TG_T *dx = n->in[0]->grad.data;
    for (int64_t k = 0; k < n->value.numel; k++) dx[arg[k]] += dy[k];
}

#endif
