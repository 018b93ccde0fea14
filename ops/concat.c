/*
 * concat.c - cat, split, narrow / stepped slice and index_select: copies
 * along one dim (OPS.md sections 0.1, 19; PyTorch's messages).
 *
 * Every op here sees its tensors as [outer, size, inner] around the dim it
 * works on (outer = prod of the dims before, inner = prod of the dims after),
 * so the forward is a set of memcpy's of `inner` elements, dtype-agnostic,
 * and the backward adds the same blocks back (float kernels, F32 and F64).
 * split is a list of narrows. "take" = slice or index_select: output row i
 * along dim comes from input row src(i) = start + i * step, or index[i].
 * Not here: views with strides (tgraph has none), negative steps, gather.
 *
 * Reading order (engine/generic.h): the builders, the forwards, the
 * backwards, the descriptors and registry rows (cat first, then the take
 * ops in each), then the portable backward kernels for float and double at
 * the end.
 */
#ifndef TG_KERNELS /* ===================================== the ops proper */

#include <stdio.h>

#include "ops_internal.h"
#include "concat.h"
#include "generic.h"

typedef struct { const tg_node *n; int64_t outer, row; } cat_ctx;

typedef struct {
    const tg_node *n;
    const int64_t *idx;            /* index_select: src(i) = idx[i]; NULL for a slice */
    int64_t start, step;           /* slice: src(i) = start + i * step */
    int64_t outer, size, len, inner;
} take_ctx;

static inline int64_t take_src(const take_ctx *c, int64_t i)
{
    return c->idx ? c->idx[i] : c->start + i * c->step;
}

typedef struct { int dim; } cat_attr;

typedef struct {
    int     dim;
    int64_t start, stop, step;   /* slice (stop: for messages) */
} take_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, cat_backward_range, (void *vctx, int64_t begin, int64_t end, int tid));
TG_KERNEL_DECL(static void, take_backward_range, (void *vctx, int64_t begin, int64_t end, int tid));

/* the descriptors, after the backwards */
static const tg_op op_cat;
static const tg_op op_slice;
static const tg_op op_index_select;

/* ---- builders ---- */

tg_node *tg_concat(tg_graph *g, int n, tg_node *const *xs, int64_t dim)
{
    char a[160], b[160];
    if (!tg_builder_check(g, "cat", 0, NULL)) return NULL;
    if (n <= 0 || !xs) return tg_graph_fail(g, "cat: torch.cat(): expected a non-empty list of Tensors");
    if (!tg_builder_check(g, "cat", n, xs)) return NULL;
    const tg_tensor *v0 = &xs[0]->value;
    for (int k = 0; k < n; k++)
        if (xs[k]->value.rank == 0)
            return tg_graph_fail(g, "cat: zero-dimensional tensor (at position %d) cannot be "
                                 "concatenated", k);
    int d;
    if (!tg__dim(g, "cat", dim, v0->rank, &d)) return NULL;
    int64_t shape[TG_MAX_RANK];
    memcpy(shape, v0->shape, sizeof shape);
    shape[d] = 0;
    for (int k = 0; k < n; k++) {
        const tg_tensor *v = &xs[k]->value;
        if (v->dtype != v0->dtype)
            return tg_graph_fail(g, "cat: expected all tensors to have the same dtype, but tensor "
                                 "0 is %s and tensor %d is %s (tgraph does not promote)",
                                 tg_dtype_name(v0->dtype), k, tg_dtype_name(v->dtype));
        if (v->rank != v0->rank)
            return tg_graph_fail(g, "cat: Tensors must have same number of dimensions: got %d and "
                                 "%d (tensor number %d in the list)", v0->rank, v->rank, k);
        for (int e = 0; e < v->rank; e++)
            if (e != d && v->shape[e] != v0->shape[e])
                return tg_graph_fail(g, "cat: Sizes of tensors must match except in dimension %d. "
                                     "Expected size %lld but got size %lld for tensor number %d "
                                     "in the list. (shapes %s and %s differ at dim %d)", d,
                                     (long long)v0->shape[e], (long long)v->shape[e], k,
                                     TG__SHAPE(v0, a), TG__SHAPE(v, b), e);
        shape[d] += v->shape[d];   /* sizes are bounded by numel: no overflow */
    }
    tg_node *y = tg_node_new(g, &op_cat, n, xs, v0->dtype, v0->rank, shape);
    cat_attr *at = y ? tg_node_attr(y, sizeof *at) : NULL;
    if (!at) return NULL;
    at->dim = d;
    return y;
}

/* the slice [start, stop) with step on a dim already checked; start/stop in [0, size] */
static tg_node *make_slice(tg_graph *g, tg_node *x, int d, int64_t start, int64_t stop,
                           int64_t step)
{
    int64_t shape[TG_MAX_RANK];
    memcpy(shape, x->value.shape, sizeof shape);
    shape[d] = stop > start ? (stop - start - 1) / step + 1 : 0;
    tg_node *y = tg_node_new(g, &op_slice, 1, &x, x->value.dtype, x->value.rank, shape);
    take_attr *at = y ? tg_node_attr(y, sizeof *at) : NULL;
    if (!at) return NULL;
    *at = (take_attr){.dim = d, .start = start, .stop = stop, .step = step};
    return y;
}

tg_node *tg_narrow(tg_graph *g, tg_node *x, int64_t dim, int64_t start, int64_t length)
{
    int d;
    if (!tg_builder_check(g, "narrow", 1, &x)) return NULL;
    if (x->value.rank == 0) return tg_graph_fail(g, "narrow: narrow() cannot be applied to a 0-dim tensor.");
    if (!tg__dim(g, "narrow", dim, x->value.rank, &d)) return NULL;
    int64_t size = x->value.shape[d];
    if (start < -size || start > size)
        return tg_graph_fail(g, "narrow: start out of range (expected to be in range of [%lld, "
                             "%lld], but got %lld) for dim %d of size %lld", (long long)-size,
                             (long long)size, (long long)start, d, (long long)size);
    if (start < 0) start += size;
    if (length < 0 || length > size - start)
        return tg_graph_fail(g, "narrow: start (%lld) + length (%lld) exceeds dimension size "
                             "(%lld). (dim %d)%s", (long long)start, (long long)length,
                             (long long)size, d, length < 0 ? " length must be non-negative" : "");
    return make_slice(g, x, d, start, start + length, 1);
}

tg_node *tg_slice(tg_graph *g, tg_node *x, int64_t dim, int64_t start, int64_t stop,
                  int64_t step)
{
    int d;
    if (!tg_builder_check(g, "slice", 1, &x)) return NULL;
    if (x->value.rank == 0) return tg_graph_fail(g, "slice: a 0-dim tensor cannot be sliced");
    if (!tg__dim(g, "slice", dim, x->value.rank, &d)) return NULL;
    if (step <= 0)
        return tg_graph_fail(g, "slice: slice step must be positive, got %lld (dim %d)",
                             (long long)step, d);
    int64_t size = x->value.shape[d];
    /* Python: negative counts from the end, then clamp to [0, size] */
    if (start < 0) start = start < -size ? 0 : start + size;
    if (stop < 0) stop = stop < -size ? 0 : stop + size;
    if (start > size) start = size;
    if (stop > size) stop = size;
    return make_slice(g, x, d, start, stop, step);
}

tg_status tg_split(tg_graph *g, tg_node *x, int n, const int64_t *sizes, int64_t dim,
                   tg_node **out)
{
    char s[400];
    int d;
    if (out)
        for (int i = 0; i < n; i++) out[i] = NULL;
    if (!tg_builder_check(g, "split", 1, &x)) return TG_ERR_STATE;
    if (n < 0 || !out || (n && !sizes)) {
        tg_graph_fail(g, "split: bad arguments (n = %d, sizes %s, out %s)", n,
                      sizes ? "given" : "NULL", out ? "given" : "NULL");
        return TG_ERR_INVALID;
    }
    if (x->value.rank == 0) {
        tg_graph_fail(g, "split: split expects at least a 1-dimensional tensor");
        return TG_ERR_SHAPE;
    }
    if (!tg__dim(g, "split", dim, x->value.rank, &d)) return TG_ERR_INVALID;
    int64_t sum = 0;
    bool neg = false;
    for (int i = 0; i < n; i++) {
        neg |= sizes[i] < 0;
        if (sizes[i] > 0 && sum <= INT64_MAX - sizes[i]) sum += sizes[i];
        else if (sizes[i] > 0) sum = -1;   /* overflow: cannot match */
    }
    if (neg || sum != x->value.shape[d]) {
        tg_shape_str(n, sizes, s, sizeof s);
        if (neg)
            tg_graph_fail(g, "split: split_with_sizes expects split_sizes have only non-negative "
                          "entries, but got split_sizes=%s", s);
        else
            tg_graph_fail(g, "split: split_with_sizes expects split_sizes to sum exactly to %lld "
                          "(input tensor's size at dimension %d), but got split_sizes=%s",
                          (long long)x->value.shape[d], d, s);
        return TG_ERR_SHAPE;
    }
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        out[i] = make_slice(g, x, d, start, start + sizes[i], 1);
        if (!out[i]) {
            for (int k = 0; k < n; k++) out[k] = NULL;
            return TG_ERR_STATE;
        }
        start += sizes[i];
    }
    return TG_OK;
}

tg_node *tg_index_select(tg_graph *g, tg_node *x, int64_t dim, tg_node *index)
{
    tg_node *in[2] = {x, index};
    int d;
    if (!tg_builder_check(g, "index_select", 2, in)) return NULL;
    if (index->value.dtype != TG_I64)
        return tg_graph_fail(g, "index_select: index_select(): Expected dtype int64 for index, got "
                             "%s", tg_dtype_name(index->value.dtype));
    if (index->value.rank > 1)
        return tg_graph_fail(g, "index_select: index_select(): Index is supposed to be a vector "
                             "(got an index of rank %d)", index->value.rank);
    if (x->value.rank == 0)
        return tg_graph_fail(g, "index_select: cannot be applied to a 0-dim tensor (tgraph needs "
                             "x of rank >= 1)");
    if (!tg__dim(g, "index_select", dim, x->value.rank, &d)) return NULL;
    int64_t shape[TG_MAX_RANK];
    memcpy(shape, x->value.shape, sizeof shape);
    shape[d] = index->value.numel;
    tg_node *y = tg_node_new(g, &op_index_select, 2, in, x->value.dtype, x->value.rank, shape);
    take_attr *at = y ? tg_node_attr(y, sizeof *at) : NULL;
    if (!at) return NULL;
    at->dim = d;
    return y;
}

/* ---- forward ---- */

/* prod(shape[from..to)) */
static int64_t prod(const int64_t *shape, int from, int to)
{
    int64_t p = 1;
    for (int d = from; d < to; d++) p *= shape[d];
    return p;
}

static int64_t grain_rows(int64_t row_elems) { return 1 + 16384 / (row_elems ? row_elems : 1); }

/* forward: y[o, :] = concat_k x_k[o, :]   (x_k: [outer, blk_k], y: [outer, row]) */
static void cat_forward_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const cat_ctx *c = vctx;
    const tg_node *n = c->n;
    size_t es = tg_dtype_size(n->value.dtype);
    (void)tid;
    for (int64_t o = begin; o < end; o++) {
        char *y = (char *)n->value.data + (size_t)(o * c->row) * es;
        for (int k = 0; k < n->n_in; k++) {
            size_t blk = (size_t)(n->in[k]->value.numel / c->outer) * es;
            memcpy(y, (const char *)n->in[k]->value.data + (size_t)o * blk, blk);
            y += blk;
        }
    }
}

static cat_ctx cat_setup(const tg_node *n)
{
    const cat_attr *a = n->attr;
    cat_ctx c = {n, prod(n->value.shape, 0, a->dim), 0};
    c.row = c.outer ? n->value.numel / c.outer : 0;
    return c;
}

static tg_status cat_forward(tg_node *n)
{
    cat_ctx c = cat_setup(n);
    if (n->value.numel) tg_parallel_for(c.outer, grain_rows(c.row), cat_forward_range, &c);
    return TG_OK;
}

static take_ctx take_setup(const tg_node *n)
{
    const take_attr *a = n->attr;
    const tg_tensor *x = &n->in[0]->value;
    take_ctx c = {.n = n, .start = a->start, .step = a->step,
                  .outer = prod(x->shape, 0, a->dim), .size = x->shape[a->dim],
                  .len = n->value.shape[a->dim], .inner = prod(x->shape, a->dim + 1, x->rank)};
    if (n->n_in == 2) c.idx = n->in[1]->value.data;
    return c;
}

/* forward: y[o, i, :] = x[o, src(i), :]   (x: [outer, size, inner], y: [outer, len, inner]) */
static void take_forward_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const take_ctx *c = vctx;
    size_t es = tg_dtype_size(c->n->value.dtype), blk = (size_t)c->inner * es;
    const char *x = c->n->in[0]->value.data;
    char *y = c->n->value.data;
    (void)tid;
    if (!c->idx && c->step == 1) {   /* one contiguous run of len * inner per outer row */
        const size_t run = (size_t)c->len * blk;
        for (int64_t o = begin; o < end; o++)
            memcpy(y + (size_t)o * run, x + (size_t)(o * c->size + c->start) * blk, run);
        return;
    }
    /* single elements (inner = 1): plain loads and stores, not a memcpy each */
#define TAKE_ELEMENTS(U)                                                                   \
    do {                                                                                   \
        const U *xs = (const void *)x;                                                     \
        U *ys = (void *)y;                                                                 \
        for (int64_t o = begin; o < end; o++)                                              \
            for (int64_t i = 0; i < c->len; i++)                                           \
                ys[o * c->len + i] = xs[o * c->size + take_src(c, i)];                     \
    } while (0)
    if (blk == sizeof(uint32_t)) {
        TAKE_ELEMENTS(uint32_t);
        return;
    }
    if (blk == sizeof(uint64_t)) {
        TAKE_ELEMENTS(uint64_t);
        return;
    }
#undef TAKE_ELEMENTS
    for (int64_t o = begin; o < end; o++)
        for (int64_t i = 0; i < c->len; i++)
            memcpy(y + (size_t)(o * c->len + i) * blk,
                   x + (size_t)(o * c->size + take_src(c, i)) * blk, blk);
}

static tg_status take_forward(tg_node *n)
{
    take_ctx c = take_setup(n);
    if (c.idx) {   /* index values are data: check them before reading x with them */
        for (int64_t i = 0; i < c.len; i++)
            if (c.idx[i] < 0 || c.idx[i] >= c.size)
                return tg_set_error(TG_ERR_INVALID, "index_select: index out of range in self: "
                                    "index[%lld] = %lld is not in [0, %lld) (dim %d of size %lld)",
                                    (long long)i, (long long)c.idx[i], (long long)c.size,
                                    ((const take_attr *)n->attr)->dim, (long long)c.size);
    }
    if (n->value.numel)
        tg_parallel_for(c.outer, grain_rows(c.len * c.inner), take_forward_range, &c);
    return TG_OK;
}

/* ---- backward ---- */

static tg_status cat_backward(tg_node *n)
{
    cat_ctx c = cat_setup(n);
    if (n->value.numel)
        tg_parallel_for(c.outer, grain_rows(c.row),
                        TG_DISPATCH(n->value.dtype, cat_backward_range), &c);
    return TG_OK;
}

static tg_status take_backward(tg_node *n)
{
    take_ctx c = take_setup(n);
    if (n->value.numel)
        tg_parallel_for(c.outer, grain_rows(c.len * c.inner),
                        TG_DISPATCH(n->value.dtype, take_backward_range), &c);
    return TG_OK;
}

/* ---- descriptors ---- */

static void cat_describe(const tg_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "dim=%d", ((const cat_attr *)n->attr)->dim);
}

/* ONNX: Concat along dim. */
static tg_status cat_onnx(const tg_node *n, struct tg_onnx *m)
{
    const char *in[64];
    if (n->n_in > 64)
        return tg__onnx_fail(m, TG_ERR_LIMIT, "onnx export: cat of %d tensors (at most %d)",
                             n->n_in, 64);
    for (int i = 0; i < n->n_in; i++) in[i] = tg__onnx_in(m, n, i);
    const char *out = tg__onnx_value(m, n);
    tg__onnx_node(m, "Concat", n->n_in, in, 1, &out);
    tg__onnx_attr_int(m, "axis", ((const cat_attr *)n->attr)->dim);
    return tg__onnx_status(m);
}

static const tg_op op_cat = {.name = "cat", .forward = cat_forward, .backward = cat_backward,
                             .describe = cat_describe, .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                             .flops = tg__flops_none, .onnx = cat_onnx};

static void slice_describe(const tg_node *n, char *buf, size_t len)
{
    const take_attr *a = n->attr;
    snprintf(buf, len, "dim=%d %lld:%lld:%lld", a->dim, (long long)a->start, (long long)a->stop,
             (long long)a->step);
}

/* ONNX: Slice(x, [start], [stop], [dim], [step]). */
static tg_status slice_onnx(const tg_node *n, struct tg_onnx *m)
{
    const take_attr *a = n->attr;
    const int64_t axis = a->dim;
    TG__ONNX_NODE(m, "Slice", tg__onnx_value(m, n), tg__onnx_in(m, n, 0),
                  tg__onnx_const_i64(m, 1, &a->start), tg__onnx_const_i64(m, 1, &a->stop),
                  tg__onnx_const_i64(m, 1, &axis), tg__onnx_const_i64(m, 1, &a->step));
    return tg__onnx_status(m);
}

static const tg_op op_slice = {.name = "slice", .forward = take_forward,
                               .backward = take_backward, .describe = slice_describe,
                               .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                               .flops = tg__flops_none, .onnx = slice_onnx};
static void index_select_describe(const tg_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "dim=%d", ((const take_attr *)n->attr)->dim);
}

/* ONNX: Gather(x, index, axis=dim); a 0-d index is taken as [1] (torch keeps the dim). */
static tg_status index_select_onnx(const tg_node *n, struct tg_onnx *m)
{
    const char *idx = tg__onnx_in(m, n, 1);
    if (n->in[1]->value.rank == 0) {
        const char *r = tg__onnx_tmp(m, n, "index");
        tg__onnx_reshape(m, idx, r, 1, (const int64_t[]){1});
        idx = r;
    }
    TG__ONNX_NODE(m, "Gather", tg__onnx_value(m, n), tg__onnx_in(m, n, 0), idx);
    tg__onnx_attr_int(m, "axis", ((const take_attr *)n->attr)->dim);
    return tg__onnx_status(m);
}

static const tg_op op_index_select = {.name = "index_select", .forward = take_forward,
                                      .backward = take_backward,
                                      .describe = index_select_describe,
                                      .flags = TG_OP_BWD_NO_OUTPUT,   /* reads the index */
                                      .flops = tg__flops_none, .onnx = index_select_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_cat)
{
    return TG_GLUE_ONE(tg_concat(g, n_in, in, tg__op_int(c, "dim")));
}

TG_GLUE(b_split)
{
    (void)n_in;
    const tg_value *v = tg__op_attr(c, "split_size_or_sections");
    int64_t sizes[TG_OP_MAX_OUTPUTS];
    int n;
    if (v && v->kind == TG_VALUE_INT) {   /* a chunk size: equal pieces, the last smaller */
        const tg_tensor *x = tg_node_value(in[0]);
        int d = tg_wrap_dim(tg__op_int(c, "dim"), x->rank);
        if (d < 0 || x->rank == 0) {
            tg_split(g, in[0], 1, (int64_t[]){0}, tg__op_int(c, "dim"), out);   /* its message */
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
    } else if ((n = tg__op_list(g, c, "split_size_or_sections", sizes, TG_OP_MAX_OUTPUTS)) < 0) {
        return TG_ERR_INVALID;
    }
    *n_out = n;
    return tg_split(g, in[0], n, sizes, tg__op_int(c, "dim"), out);
}

TG_GLUE(b_narrow)
{
    (void)n_in;
    return TG_GLUE_ONE(tg_narrow(g, in[0], tg__op_int(c, "dim"), tg__op_int(c, "start"), tg__op_int(c, "length")));
}

TG_GLUE(b_slice)
{
    (void)n_in;
    int64_t start = tg__op_is_null(c, "start") ? 0 : tg__op_int(c, "start");
    int64_t end = tg__op_is_null(c, "end") ? TG_SLICE_END : tg__op_int(c, "end");
    return TG_GLUE_ONE(tg_slice(g, in[0], tg__op_int(c, "dim"), start, end, tg__op_int(c, "step")));
}

TG_GLUE(b_index_select)
{
    (void)n_in;
    return TG_GLUE_ONE(tg_index_select(g, in[0], tg__op_int(c, "dim"), in[1]));
}

const tg_op_def tg__concat_ops[] = {
    {"cat", "torch.cat(tensors, dim=0) (also: concat)",
     {{"dim", TG_OP_INT, "0", false,
       "the dim to join along", NULL, 0}}, false, {TG_ANY("tensors")}, 1,
     true, 1, b_cat, NULL, "cat dim=-1 --in a.npy --in b.npy --out y.npy", &op_cat, NULL,
     "dim=1;[2,3];[2,4]", "dim=0;[2,3];[2,4]", NULL},
    {"split", "torch.split(tensor, split_size_or_sections, dim=0) -> one --out per piece",
     {{"split_size_or_sections", TG_OP_INT_LIST, NULL, false,
       "a chunk size, or a list of piece sizes", NULL, 0},
      {"dim", TG_OP_INT, "0", false, "the dim to split", NULL, 0}},
     false, {TG_ANY("tensor")}, 1, false, -1, b_split, NULL,
     "split split_size_or_sections=[2,5] dim=-1 --in x.npy --out a.npy --out b.npy", &op_slice,
     NULL, "split_size_or_sections=2;dim=1;[2,5]",
     "split_size_or_sections=[2,2];dim=1;[2,5]", NULL},
    {"narrow", "torch.narrow(input, dim, start, length)",
     {TG_DIM_REQ("the dim to narrow"), {"start", TG_OP_INT, NULL, false,
                                        "first index (< 0: from the end)", NULL, 0},
      {"length", TG_OP_INT, NULL, false, "number of elements", NULL, 0}}, false,
     {TG_ANY("input")}, 1, false, 1, b_narrow, NULL,
     "narrow dim=1 start=1 length=3 --in x.npy --out y.npy", &op_slice, NULL,
     "dim=1;start=1;length=2;[3,4]", "dim=1;start=3;length=2;[3,4]", NULL},
    {"slice", "input[..., start:end:step] along dim (aten::slice)",
     {{"dim", TG_OP_INT, "0", false, "the dim to slice", NULL, 0},
      {"start", TG_OP_INT, "null", true, "first index; null: 0", NULL, 0},
      {"end", TG_OP_INT, "null", true, "one past the last; null: the end", NULL, 0},
      {"step", TG_OP_INT, "1", false, "stride (> 0)", NULL, 0}}, false,
     {TG_ANY("input")}, 1, false, 1, b_slice, NULL,
     "slice dim=1 start=1 end=8 step=3 --in x.npy --out y.npy", &op_slice, NULL,
     "dim=1;start=1;end=4;step=2;[3,5]", "step=0;[3,5]", NULL},
    {"index_select", "torch.index_select(input, dim, index)",
     {TG_DIM_REQ("the dim to index along")}, false,
     {TG_ANY("input"), {"index", TG_OP_IN_INDEX, 0}}, 2, false, 1, b_index_select,
     tg__op_gen_along_dim, "index_select dim=0 --in x.npy --in i.npy --out y.npy",
     &op_index_select, NULL,
     "dim=1;[2,5];i64[7]", "dim=0;[2,5];i64[2,2]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "concat.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* backward of cat: forward was y[o, off_k + j] = x_k[o, j] (rows of blk_k
 * elements), so dx_k[o, j] += dy[o, off_k + j] */
static void TG_F(cat_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const cat_ctx *c = vctx;
    const tg_node *n = c->n;
    const TG_T *dy = n->grad.data;   /* [outer, row] */
    (void)tid;
    for (int64_t o = begin; o < end; o++) {
        int64_t off = 0;
        for (int k = 0; k < n->n_in; k++) {
            int64_t blk = n->in[k]->value.numel / c->outer;
            if (n->in[k]->requires_grad) {
                TG_T *dx = (TG_T *)n->in[k]->grad.data + o * blk;   /* [outer, blk] */
                const TG_T *g = dy + o * c->row + off;
                for (int64_t j = 0; j < blk; j++) dx[j] += g[j];
            }
            off += blk;
        }
    }
}

/* backward of take: forward was y[o, i, :] = x[o, src(i), :], so
 * dx[o, src(i), :] += dy[o, i, :]; repeated src(i) sum (serial in i). */
static void TG_F(take_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const take_ctx *c = vctx;
    const TG_T *dy = c->n->grad.data;       /* [outer, len, inner] */
    TG_T *dx = c->n->in[0]->grad.data;      /* [outer, size, inner] */
    (void)tid;
    if (!c->idx && c->step == 1) {   /* one contiguous run of len * inner per outer row */
        const int64_t run = c->len * c->inner;
        for (int64_t o = begin; o < end; o++) {
            TG_T *d = dx + (o * c->size + c->start) * c->inner;
            const TG_T *g = dy + o * run;
            for (int64_t k = 0; k < run; k++) d[k] += g[k];
        }
        return;
    }
    for (int64_t o = begin; o < end; o++)
        for (int64_t i = 0; i < c->len; i++) {
            TG_T *d = dx + (o * c->size + take_src(c, i)) * c->inner;
            const TG_T *g = dy + (o * c->len + i) * c->inner;
            for (int64_t k = 0; k < c->inner; k++) d[k] += g[k];
        }
}

#endif
