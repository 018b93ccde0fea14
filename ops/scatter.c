/*
 * scatter.c - gather, scatter (src tensor or scalar value) and scatter_add
 * (OPS.md section 7). Shape rules and messages are PyTorch's; see scatter.h.
 *
 * Every kernel is one walk over the positions p of index (row-major, the
 * last dim innermost). At p it knows three offsets:
 *   io = p in index (= p in gather's result),
 *   xo = p with p[dim] := index[p], in x (and in scatter's result),
 *   so = p in src,
 * and moves one element between them (walk modes below). A walk that writes
 * at xo runs rows in parallel only when dim is the last dim (then rows of
 * index write disjoint rows of x); otherwise it runs serially, which also
 * makes "the last duplicate wins" deterministic.
 *
 * Index values are data: every forward and backward first checks them all
 * and fails with TG_ERR_INVALID before touching memory.
 * Not here: index_select, scatter_reduce ('multiply', 'amax'), sparse grads.
 *
 * Reading order (engine/generic.h): the builder with its shape checks, the
 * forward, the backward, the descriptors, the registry rows, then the
 * portable walks for float and double at the end of the file.
 */
#ifndef TG_KERNELS /* ===================================== the ops proper */

#include <stdio.h>

#include "ops_internal.h"
#include "scatter.h"
#include "generic.h"

enum { K_GATHER, K_SCATTER, K_SCATTER_VALUE, K_SCATTER_ADD };

/* what a walk moves at each index position p (offsets io, xo, so above) */
enum { W_GATHER, W_GATHER_BWD, W_SCATTER, W_VALUE, W_ADD, W_MARK, W_SRC_BWD };

typedef struct {
    int     kind;                    /* K_* */
    int     dim;                     /* wrapped */
    int     rank;                    /* common rank, a 0-d tensor counted as [1] */
    int64_t ishape[TG_MAX_RANK];     /* index shape, walked */
    int64_t istride[TG_MAX_RANK];    /* contiguous strides of index (and gather's result) */
    int64_t xstride[TG_MAX_RANK];    /* strides of x, 0 at dim */
    int64_t sstride[TG_MAX_RANK];    /* strides of src (scatter, scatter_add) */
    int64_t xdim_stride, size;       /* x.stride(dim), x.size(dim) */
    int64_t rows;                    /* index.numel / index.size(-1); 0 when index is empty */
    double  value;                   /* scatter_value */
} sg_attr;

typedef struct {
    const sg_attr *a;
    int            mode;             /* W_* */
    const int64_t *index;
    void          *dst;              /* written: result, a gradient, or the mark bytes */
    const void    *src;              /* read */
    const unsigned char *mark;       /* add_unmarked */
} walk_ctx;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, walk_rows, (void *vctx, int64_t begin, int64_t end, int tid));
TG_KERNEL_DECL(static void, add_unmarked, (void *vctx, int64_t begin, int64_t end, int tid));

/* the descriptors, after the backward */
static const tg_op op_gather, op_scatter, op_scatter_add;

/* ---- builder ---- */

/* A tensor's shape with a 0-d tensor read as [1]. */
static void eff_shape(const tg_tensor *t, int64_t *shape)
{
    if (t->rank == 0) shape[0] = 1;
    else memcpy(shape, t->shape, (size_t)t->rank * sizeof *shape);
}

/* tg_graph_fail for the bool-returning shape check. */
static bool shape_fail(tg_graph *g, const char *fmt, ...) TG__PRINTF(2, 3);
static bool shape_fail(tg_graph *g, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tg_graph_fail(g, "%s", msg);
    return false;
}

/* The shape checks of OPS.md 7.1-7.2 on non-empty index; fills rank/shapes. */
static bool check_shapes(tg_graph *g, const char *name, int kind, const tg_tensor *x,
                         const tg_tensor *ix, const tg_tensor *src, sg_attr *a)
{
    int rx = x->rank ? x->rank : 1, ri = ix->rank ? ix->rank : 1;
    int rs = src ? (src->rank ? src->rank : 1) : ri;
    int64_t xs[TG_MAX_RANK], is[TG_MAX_RANK], ss[TG_MAX_RANK];
    char b1[160], b2[160], b3[160];
    if (ri != rx)
        return shape_fail(g, "%s: Index tensor must have the same number of dimensions as %s "
                             "tensor (index has %d, %s has %d)", name,
                             kind == K_GATHER ? "input" : "self", ri,
                             kind == K_GATHER ? "input" : "self", rx);
    if (rs != ri)
        return shape_fail(g, "%s: Index tensor must have the same number of dimensions as src "
                             "tensor (index has %d, src has %d)", name, ri, rs);
    eff_shape(x, xs);
    eff_shape(ix, is);
    if (src) eff_shape(src, ss);
    TG__SHAPE(ix, b1);
    TG__SHAPE(x, b2);
    for (int d = 0; d < ri; d++) {
        bool over_self = d != a->dim && is[d] > xs[d], over_src = src && is[d] > ss[d];
        if (kind == K_GATHER && over_self)
            return shape_fail(g, "%s: Size does not match at dimension %d expected index %s to "
                                 "be smaller than self %s apart from dimension %d", name, d, b1,
                                 b2, a->dim);
        if (kind == K_SCATTER_VALUE && over_self)
            return shape_fail(g, "%s: Expected index %s to be smaller than self %s apart from "
                                 "dimension %d", name, b1, b2, a->dim);
        if (over_self || over_src)
            return shape_fail(g, "%s: Expected index %s to be smaller than self %s apart from "
                                 "dimension %d and to be smaller size than src %s", name, b1, b2,
                                 a->dim, TG__SHAPE(src, b3));
    }
    a->rank = ri;
    memcpy(a->ishape, is, sizeof is);
    tg__strides(ri, is, a->istride);
    tg__strides(rx, xs, a->xstride);
    a->xdim_stride = a->xstride[a->dim];
    a->xstride[a->dim] = 0;
    if (src) tg__strides(rs, ss, a->sstride);
    a->rows = ix->numel / is[ri - 1];
    return true;
}

static tg_node *build(tg_graph *g, int kind, tg_node *x, int dim, tg_node *index, tg_node *src,
                      double value)
{
    const tg_op *op = kind == K_GATHER ? &op_gather
                    : kind == K_SCATTER_ADD ? &op_scatter_add : &op_scatter;
    const char *name = op->name;
    tg_node *in[3] = {x, index, src};
    int n_in = kind == K_SCATTER || kind == K_SCATTER_ADD ? 3 : 2;
    char b1[160], b2[160];
    if (!tg_builder_check(g, name, n_in, in)) return NULL;
    sg_attr at = {.kind = kind, .value = value};
    const tg_tensor *xv = &x->value, *iv = &index->value, *sv = src ? &src->value : NULL;
    if (!tg__dim(g, name, dim, xv->rank, &at.dim)) return NULL;
    if (iv->dtype != TG_I64)
        return tg_graph_fail(g, "%s: Expected dtype int64 for index, got %s", name,
                             tg_dtype_name(iv->dtype));
    if (sv && sv->dtype != xv->dtype)
        return tg_graph_fail(g, "%s: Expected self.dtype to be equal to src.dtype (self %s, src "
                             "%s)", name, tg_dtype_name(xv->dtype), tg_dtype_name(sv->dtype));
    if (!tg__want_float(g, name, x, "input")) return NULL;
    at.size = xv->rank ? xv->shape[at.dim] : 1;
    if (iv->numel > 0 && !check_shapes(g, name, kind, xv, iv, sv, &at)) return NULL;
    if (sv && src->requires_grad && iv->numel > 0) {
        int64_t is[TG_MAX_RANK], ss[TG_MAX_RANK];
        eff_shape(iv, is);
        eff_shape(sv, ss);
        if (memcmp(is, ss, (size_t)at.rank * sizeof *is) != 0)
            return tg_graph_fail(g, "%s: src requires grad, so its shape %s must equal index's "
                                 "shape %s (PyTorch's backward fails for other shapes)", name,
                                 TG__SHAPE(sv, b1), TG__SHAPE(iv, b2));
    }
    const tg_tensor *out = kind == K_GATHER ? iv : xv;
    tg_node *n = tg_node_new(g, op, n_in, in, xv->dtype, out->rank, out->shape);
    sg_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    *a = at;
    if (kind == K_SCATTER || kind == K_SCATTER_VALUE) tg_node_scratch(n, (size_t)xv->numel);
    return n;
}

tg_node *tg_gather(tg_graph *g, tg_node *x, int dim, tg_node *index)
{
    return build(g, K_GATHER, x, dim, index, NULL, 0);
}

tg_node *tg_scatter(tg_graph *g, tg_node *x, int dim, tg_node *index, tg_node *src)
{
    return build(g, K_SCATTER, x, dim, index, src, 0);
}

tg_node *tg_scatter_value(tg_graph *g, tg_node *x, int dim, tg_node *index, double value)
{
    return build(g, K_SCATTER_VALUE, x, dim, index, NULL, value);
}

tg_node *tg_scatter_add(tg_graph *g, tg_node *x, int dim, tg_node *index, tg_node *src)
{
    return build(g, K_SCATTER_ADD, x, dim, index, src, 0);
}

/* ---- forward ---- */

static const char *const kind_name[] = {"gather", "scatter", "scatter", "scatter_add"};

/* Every index value in [0, size(dim)), or TG_ERR_INVALID naming the first bad one. */
static tg_status check_values(const tg_node *n)
{
    const sg_attr *a = n->attr;
    const tg_tensor *index = &n->in[1]->value;
    const int64_t *ix = index->data;
    if (!a->rows) return TG_OK;
    for (int64_t i = 0; i < index->numel; i++)
        if (ix[i] < 0 || ix[i] >= a->size)
            return tg_set_error(TG_ERR_INVALID, "%s: index %lld is out of bounds for dimension "
                                "%d with size %lld", kind_name[a->kind], (long long)ix[i],
                                a->dim, (long long)a->size);
    return TG_OK;
}

/* One walk over index; parallel unless it writes at x positions along a dim
 * other than the last (rows could then collide). */
static void walk(const tg_node *n, int mode, void *dst, const void *src)
{
    const sg_attr *a = n->attr;
    walk_ctx c = {.a = a, .mode = mode, .index = n->in[1]->value.data, .dst = dst, .src = src};
    tg_range_fn fn = TG_DISPATCH(n->value.dtype, walk_rows);
    bool writes_x = mode != W_GATHER && mode != W_SRC_BWD;
    if (!a->rows) return;
    if (writes_x && a->dim != a->rank - 1) fn(&c, 0, a->rows, 0);
    else tg_parallel_for(a->rows, 1 + 16384 / (a->ishape[a->rank - 1] + 1), fn, &c);
}

/* forward:
 *   gather:      y[p] = x[p with p[dim] := index[p]]                 // y: index.shape
 *   scatter:     y = x;  y[p with p[dim] := index[p]] = src[p]       // y: x.shape
 *   scatter_add: y = x;  y[p with p[dim] := index[p]] += src[p]      */
static tg_status sg_forward(tg_node *n)
{
    const sg_attr *a = n->attr;
    tg_status st = check_values(n);
    if (st) return st;
    const tg_tensor *x = &n->in[0]->value;
    if (a->kind == K_GATHER) {
        walk(n, W_GATHER, n->value.data, x->data);
        return TG_OK;
    }
    memcpy(n->value.data, x->data, (size_t)x->numel * tg_dtype_size(x->dtype));
    if (a->kind == K_SCATTER) walk(n, W_SCATTER, n->value.data, n->in[2]->value.data);
    else if (a->kind == K_SCATTER_VALUE) walk(n, W_VALUE, n->value.data, NULL);
    else walk(n, W_ADD, n->value.data, n->in[2]->value.data);
    return TG_OK;
}

/* ---- backward ---- */

static void add_unmarked(const tg_node *n, void *dx, const void *dy, const unsigned char *mark)
{
    walk_ctx c = {.a = n->attr, .dst = dx, .src = dy, .mark = mark};
    tg_parallel_for(n->value.numel, 16384, TG_DISPATCH(n->value.dtype, add_unmarked), &c);
}

/* backward:
 *   gather:      dx[p with p[dim] := index[p]] += dy[p]   (a scatter_add of dy)
 *   scatter:     dx += dy with the written positions zeroed;  dsrc[p] += dy[p with ...]
 *   scatter_add: dx += dy;                                    dsrc[p] += dy[p with ...] */
static tg_status sg_backward(tg_node *n)
{
    const sg_attr *a = n->attr;
    tg_node *x = n->in[0], *src = n->n_in > 2 ? n->in[2] : NULL;
    tg_status st = check_values(n);
    if (st) return st;
    if (a->kind == K_GATHER) {
        if (x->requires_grad) walk(n, W_GATHER_BWD, x->grad.data, n->grad.data);
        return TG_OK;
    }
    if (x->requires_grad) {
        unsigned char *mark = NULL;
        if (a->kind != K_SCATTER_ADD) {
            mark = tg_graph_scratch(n->graph);                   /* [x.numel] */
            memset(mark, 0, (size_t)x->value.numel);
            walk(n, W_MARK, mark, NULL);
        }
        add_unmarked(n, x->grad.data, n->grad.data, mark);
    }
    if (src && src->requires_grad) walk(n, W_SRC_BWD, src->grad.data, n->grad.data);
    return TG_OK;
}

/* ---- descriptors ---- */

static void sg_describe(const tg_node *n, char *buf, size_t len)
{
    const sg_attr *a = n->attr;
    if (a->kind == K_SCATTER_VALUE) snprintf(buf, len, "dim=%d value=%g", a->dim, a->value);
    else snprintf(buf, len, "dim=%d", a->dim);
}

/* FLOPs: scatter_add adds each element of src once (engine/cost.h) */
static double scatter_add_flops(const tg_node *n)
{
    return (double)n->in[n->n_in - 1]->value.numel;
}

/* ONNX: GatherElements; ScatterElements (reduction "add" for scatter_add) with the
 * updates src cut to index's shape, or the value expanded to it. */
static tg_status sg_onnx(const tg_node *n, struct tg_onnx *m)
{
    const sg_attr *a = n->attr;
    const char *x = tg__onnx_in(m, n, 0), *idx = tg__onnx_in(m, n, 1), *y = tg__onnx_value(m, n);
    const tg_tensor *iv = &n->in[1]->value;
    if (a->kind == K_GATHER) {
        TG__ONNX_NODE(m, "GatherElements", y, x, idx);
        tg__onnx_attr_int(m, "axis", a->dim);
        return tg__onnx_status(m);
    }
    const char *upd = tg__onnx_tmp(m, n, "updates"), *ishape = tg__onnx_const_i64(m, iv->rank,
                                                                                   iv->shape);
    if (a->kind == K_SCATTER_VALUE) {
        TG__ONNX_NODE(m, "Expand", upd, tg__onnx_const_scalar(m, n->value.dtype, a->value), ishape);
    } else {
        int64_t zeros[TG_MAX_RANK] = {0}, axes[TG_MAX_RANK];
        for (int d = 0; d < iv->rank; d++) axes[d] = d;
        TG__ONNX_NODE(m, "Slice", upd, tg__onnx_in(m, n, 2), tg__onnx_const_i64(m, iv->rank, zeros),
                      ishape, tg__onnx_const_i64(m, iv->rank, axes));
    }
    TG__ONNX_NODE(m, "ScatterElements", y, x, idx, upd);
    tg__onnx_attr_int(m, "axis", a->dim);
    if (a->kind == K_SCATTER_ADD) tg__onnx_attr_str(m, "reduction", "add");
    return tg__onnx_status(m);
}

static const tg_op op_gather = {.name = "gather", .forward = sg_forward,
                                .backward = sg_backward, .describe = sg_describe,
                                .flops = tg__flops_none, .onnx = sg_onnx};
static const tg_op op_scatter = {.name = "scatter", .forward = sg_forward,
                                 .backward = sg_backward, .describe = sg_describe,
                                 .flops = tg__flops_none, .onnx = sg_onnx};
static const tg_op op_scatter_add = {.name = "scatter_add", .forward = sg_forward,
                                     .backward = sg_backward, .describe = sg_describe,
                                     .flops = scatter_add_flops, .onnx = sg_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_gather)
{
    (void)n_in;
    int dim;
    return tg__op_dim(g, c, "dim", &dim) ? TG_GLUE_ONE(tg_gather(g, in[0], dim, in[1])) : TG_ERR_INVALID;
}

TG_GLUE(b_scatter)
{
    int dim;
    if (!tg__op_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    bool src = n_in > 2 && in[2], value = !tg__op_is_null(c, "value");
    if (src == value) {
        tg_graph_fail(g, "scatter: give either src (a third --in) or value=, %s",
                      src ? "not both" : "got neither");
        return TG_ERR_INVALID;
    }
    if (value) return TG_GLUE_ONE(tg_scatter_value(g, in[0], dim, in[1], tg__op_f(c, "value")));
    return TG_GLUE_ONE(tg_scatter(g, in[0], dim, in[1], in[2]));
}

TG_GLUE(b_scatter_add)
{
    (void)n_in;
    int dim;
    if (!tg__op_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    return TG_GLUE_ONE(tg_scatter_add(g, in[0], dim, in[1], in[2]));
}

const tg_op_def tg__scatter_ops[] = {
    {"gather", "torch.gather(input, dim, index)", {TG_DIM_REQ("the dim to index along")}, false,
     {TG_IN("input"), {"index", TG_OP_IN_INDEX, 0}}, 2, false, 1, b_gather, tg__op_gen_along_dim,
     "gather dim=1 --in x.npy --in i.npy --out y.npy", &op_gather, NULL,
     "dim=1;[3,4];i64[3,2]", "dim=2;[3,4];i64[3,2]", NULL},
    {"scatter", "torch.scatter(input, dim, index, src) or (input, dim, index, value=)",
     {TG_DIM_REQ("the dim to index along"),
      {"value", TG_OP_FLOAT, "null", true,
       "the number to write (instead of a src tensor)", NULL, 0}},
     false, {TG_IN("input"), {"index", TG_OP_IN_INDEX, 0}, TG_IN("src")}, 2, false, 1,
     b_scatter, tg__op_gen_along_dim,
     "scatter dim=0 --in x.npy --in i.npy --in src.npy --out y.npy", &op_scatter, NULL,
     "dim=0;[4,3];i64[3,3];[3,3]", "dim=0;[4,3];i64[3,3]", NULL},
    {"scatter_add", "torch.scatter_add(input, dim, index, src)",
     {TG_DIM_REQ("the dim to index along")}, false,
     {TG_IN("input"), {"index", TG_OP_IN_INDEX, 0}, TG_IN("src")}, 3, false, 1, b_scatter_add,
     tg__op_gen_along_dim, "scatter_add dim=0 --in x.npy --in i.npy --in src.npy --out y.npy",
     &op_scatter_add, NULL,
     "dim=0;[4,3];i64[3,3];[3,3]", "dim=0;[4,3];i64[3];[3,3]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "scatter.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* rows [begin, end) of index; see the walk modes for what moves where.
 * Offsets: io into index.shape (index, gather's y, gather's dy), xo into
 * x.shape (x, dx, scatter's y and dy), so into src.shape (src, dsrc). */
static void TG_F(walk_rows)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const walk_ctx *c = vctx;
    const sg_attr *a = c->a;
    const int64_t *I = c->index;
    TG_T *dst = c->dst;
    const TG_T *src = c->src;
    unsigned char *mark = c->dst;
    const TG_T value = (TG_T)a->value;
    int last = a->rank - 1;
    int64_t inner = a->ishape[last], xd = a->xdim_stride;
    tg__iter it;
    tg__iter_init(&it, a->rank, a->ishape, a->istride, a->xstride, a->sstride);
    tg__iter_seek(&it, begin);
    int64_t xl = it.stride[1][last], sl = it.stride[2][last];
    (void)tid;
    for (int64_t r = begin; r < end; r++, tg__iter_next_row(&it)) {
        const int64_t *ix = I + it.off[0];
        int64_t io = it.off[0], xo = it.off[1], so = it.off[2];
        switch (c->mode) {
        case W_GATHER:      /* y[io] = x[xo] */
            for (int64_t i = 0; i < inner; i++) dst[io + i] = src[xo + i * xl + ix[i] * xd];
            break;
        case W_GATHER_BWD:  /* dx[xo] += dy[io] */
            for (int64_t i = 0; i < inner; i++) dst[xo + i * xl + ix[i] * xd] += src[io + i];
            break;
        case W_SCATTER:     /* y[xo] = src[so] */
            for (int64_t i = 0; i < inner; i++) dst[xo + i * xl + ix[i] * xd] = src[so + i * sl];
            break;
        case W_VALUE:       /* y[xo] = value */
            for (int64_t i = 0; i < inner; i++) dst[xo + i * xl + ix[i] * xd] = value;
            break;
        case W_ADD:         /* y[xo] += src[so] */
            for (int64_t i = 0; i < inner; i++) dst[xo + i * xl + ix[i] * xd] += src[so + i * sl];
            break;
        case W_MARK:        /* mark[xo] = 1 (positions scatter wrote) */
            for (int64_t i = 0; i < inner; i++) mark[xo + i * xl + ix[i] * xd] = 1;
            break;
        default:            /* W_SRC_BWD: dsrc[so] += dy[xo] */
            for (int64_t i = 0; i < inner; i++) dst[so + i * sl] += src[xo + i * xl + ix[i] * xd];
            break;
        }
    }
}

/* dx[i] += mark[i] ? 0 : dy[i] over x (mark NULL: everywhere) */
static void TG_F(add_unmarked)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const walk_ctx *c = vctx;
    TG_T *dx = c->dst;
    const TG_T *dy = c->src;
    const unsigned char *mark = c->mark;
    (void)tid;
    for (int64_t i = begin; i < end; i++)
        if (!mark || !mark[i]) dx[i] += dy[i];
}

#endif
