/*
 * reduce.c - sum and mean over a set of dims (OPS.md section 2).
 *
 * Both are one kernel: out = scale * sum over the reduced dims, accumulated in
 * double, with scale = 1 (sum) or 1/count (mean). Backward broadcasts dy back:
 * dx[i] += scale * dy[reduced(i)].
 *
 * Reading order (engine/generic.h): builder, forward, backward, the
 * descriptors and registry rows, then the portable kernels for float and
 * double at the end.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "ops_internal.h"
#include "reduce.h"
#include "generic.h"

typedef struct {
    bool    mask[TG_MAX_RANK];      /* reduced dims of the input */
    int64_t ostride[TG_MAX_RANK];   /* output strides seen from the input (0 on reduced dims) */
    double  scale;
    bool    keepdim;
} reduce_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, reduce_forward, (tg_node *n, const int64_t *ostride, double scale));
TG_KERNEL_DECL(static void, reduce_backward, (tg_node *n, const int64_t *ostride, double scale));

/* the descriptors, after the backward */
static const tg_op op_sum;
static const tg_op op_mean;

/* ---- builder ---- */

static tg_node *reduce(tg_graph *g, const tg_op *op, tg_node *x, const int64_t *dims, int n_dims,
                       bool keepdim)
{
    reduce_attr at = {.keepdim = keepdim};
    if (!tg_builder_check(g, op->name, 1, &x)) return NULL;
    if (!tg__want_float(g, op->name, x, "input")) return NULL;
    const tg_tensor *v = &x->value;
    if (n_dims < 0 || n_dims > TG_MAX_RANK || (n_dims && !dims))
        return tg_graph_fail(g, "%s: bad dim list (%d dims)", op->name, n_dims);
    if (n_dims == 0) {
        for (int d = 0; d < v->rank; d++) at.mask[d] = true;
    } else if (!tg__dims(g, op->name, dims, n_dims, v->rank, at.mask)) {
        return NULL;
    }
    if (v->rank == 0) at.mask[0] = false;
    int64_t oshape[TG_MAX_RANK], kshape[TG_MAX_RANK], count = 1;
    int orank = 0;
    for (int d = 0; d < v->rank; d++) {
        kshape[d] = at.mask[d] ? 1 : v->shape[d];
        if (at.mask[d]) count *= v->shape[d];
        if (!at.mask[d] || keepdim) oshape[orank++] = kshape[d];
    }
    tg__bcast_strides(v->rank, kshape, v->rank, v->shape, at.ostride);
    at.scale = op == &op_mean ? 1.0 / (double)count : 1.0;   /* 1/0 = inf: 0 * inf = NaN */
    tg_node *n = tg_node_new(g, op, 1, &x, v->dtype, orank, oshape);
    reduce_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    *a = at;
    tg_node_scratch(n, (size_t)n->value.numel * sizeof(double));
    return n;
}

tg_node *tg_sum(tg_graph *g, tg_node *x, const int64_t *dims, int n_dims, bool keepdim)
{
    return reduce(g, &op_sum, x, dims, n_dims, keepdim);
}

tg_node *tg_mean(tg_graph *g, tg_node *x, const int64_t *dims, int n_dims, bool keepdim)
{
    return reduce(g, &op_mean, x, dims, n_dims, keepdim);
}

/* ---- forward ---- */

static tg_status reduce_forward(tg_node *n)
{
    const reduce_attr *at = n->attr;
    TG_DISPATCH(n->value.dtype, reduce_forward)(n, at->ostride, at->scale);
    return TG_OK;
}

/* ---- backward ---- */

static tg_status reduce_backward(tg_node *n)
{
    const reduce_attr *at = n->attr;
    TG_DISPATCH(n->value.dtype, reduce_backward)(n, at->ostride, at->scale);
    return TG_OK;
}

/* ---- descriptor ---- */

static void reduce_describe(const tg_node *n, char *buf, size_t len)
{
    const reduce_attr *at = n->attr;
    const tg_tensor *x = &n->in[0]->value;
    size_t k = 0;
    bool all = true;
    for (int d = 0; d < x->rank; d++) all &= at->mask[d];
    if (all) {
        snprintf(buf, len, "all%s", at->keepdim ? " keepdim" : "");
        return;
    }
    k += (size_t)snprintf(buf + k, len - k, "dim=");
    for (int d = 0, first = 1; d < x->rank && k < len; d++)
        if (at->mask[d]) {
            k += (size_t)snprintf(buf + k, len - k, first ? "%d" : ",%d", d);
            first = 0;
        }
    if (at->keepdim && k < len) snprintf(buf + k, len - k, " keepdim");
}

/* ONNX: ReduceSum (axes an input) or ReduceMean (axes an attribute in opset 17). */
static tg_status reduce_onnx(const tg_node *n, struct tg_onnx *m)
{
    const reduce_attr *a = n->attr;
    int64_t axes[TG_MAX_RANK];
    int k = 0;
    for (int d = 0; d < n->in[0]->value.rank; d++)
        if (a->mask[d]) axes[k++] = d;
    const char *x = tg__onnx_in(m, n, 0), *y = tg__onnx_value(m, n);
    if (k == 0) TG__ONNX_NODE(m, "Identity", y, x);
    else if (n->op == &op_sum) TG__ONNX_NODE(m, "ReduceSum", y, x, tg__onnx_const_i64(m, k, axes));
    else TG__ONNX_NODE(m, "ReduceMean", y, x);
    if (k && n->op != &op_sum) tg__onnx_attr_ints(m, "axes", k, axes);
    if (k) tg__onnx_attr_int(m, "keepdims", a->keepdim);
    return tg__onnx_status(m);
}

static const tg_op op_sum = {.name = "sum", .forward = reduce_forward,
                             .backward = reduce_backward, .describe = reduce_describe,
                             .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                             .flops = tg__flops_reduce, .onnx = reduce_onnx};
static const tg_op op_mean = {.name = "mean", .forward = reduce_forward,
                              .backward = reduce_backward, .describe = reduce_describe,
                              .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                              .flops = tg__flops_reduce, .onnx = reduce_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

static tg_status reduce_dims(tg_graph *g, const tg_op_call *c, tg_node *const *in, tg_node **out,
                             int *n_out, bool mean)
{
    int64_t dims[TG_MAX_RANK];
    int n = tg__op_list(g, c, "dim", dims, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    bool keep = tg__op_bool(c, "keepdim");
    return TG_GLUE_ONE(mean ? tg_mean(g, in[0], dims, n, keep) : tg_sum(g, in[0], dims, n, keep));
}

TG_GLUE(b_sum) { (void)n_in; return reduce_dims(g, c, in, out, n_out, false); }
TG_GLUE(b_mean) { (void)n_in; return reduce_dims(g, c, in, out, n_out, true); }

const tg_op_def tg__reduce_ops[] = {
    {"sum", "torch.sum(input, dim=None, keepdim=False)",
     {{"dim", TG_OP_INT_LIST, "null", true, "the dims to reduce; null: all", NULL, 0},
      {"keepdim", TG_OP_BOOL, "false", false, "keep reduced dims with size 1", NULL, 0}}, false,
     {TG_IN("input")}, 1, false, 1, b_sum, NULL, "sum dim=[0,2] --in x.npy --out y.npy", &op_sum,
     NULL, "dim=[0,2];[2,3,4]", "dim=[3];[2,3]", NULL},
    {"mean", "torch.mean(input, dim=None, keepdim=False)",
     {{"dim", TG_OP_INT_LIST, "null", true, "the dims to reduce; null: all", NULL, 0},
      {"keepdim", TG_OP_BOOL, "false", false, "keep reduced dims with size 1", NULL, 0}}, false,
     {TG_IN("input")}, 1, false, 1, b_mean, NULL, "mean dim=1 keepdim=true --in x.npy --out y.npy",
     &op_mean, NULL,
     "dim=1;keepdim=true;[3,4]", "dim=5;[3,4]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "reduce.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* forward: out[j] = scale * sum_{i -> j} x[i] */
static void TG_F(reduce_forward)(tg_node *n, const int64_t *ostride, double scale)
{
    const tg_tensor *x = &n->in[0]->value;
    const TG_T *X = x->data;
    TG_T *Y = n->value.data;
    double *acc = tg_graph_scratch(n->graph);          /* [numel(out)] */
    memset(acc, 0, (size_t)n->value.numel * sizeof *acc);
    if (x->numel) {
        int64_t sx[TG_MAX_RANK];
        tg__strides(x->rank, x->shape, sx);
        tg__iter it;
        tg__iter_init(&it, x->rank, x->shape, sx, ostride, NULL);
        int64_t inner = x->rank ? x->shape[x->rank - 1] : 1, rows = x->numel / inner;
        int64_t so = x->rank ? ostride[x->rank - 1] : 0;
        for (int64_t r = 0; r < rows; r++, tg__iter_next_row(&it)) {
            const TG_T *xx = X + it.off[0];
            double *aa = acc + it.off[1];
            if (so == 0) {
                double s = 0;
                for (int64_t i = 0; i < inner; i++) s += xx[i];
                aa[0] += s;
            } else {
                for (int64_t i = 0; i < inner; i++) aa[i * so] += xx[i];
            }
        }
    }
    for (int64_t j = 0; j < n->value.numel; j++) Y[j] = (TG_T)(acc[j] * scale);
}

/* backward: dx[i] += scale * dy[j(i)] */
static void TG_F(reduce_backward)(tg_node *n, const int64_t *ostride, double scale)
{
    const tg_tensor *x = &n->in[0]->value;
    TG_T *DX = n->in[0]->grad.data;
    const TG_T *DY = n->grad.data;
    if (!x->numel) return;
    int64_t sx[TG_MAX_RANK];
    tg__strides(x->rank, x->shape, sx);
    tg__iter it;
    tg__iter_init(&it, x->rank, x->shape, sx, ostride, NULL);
    int64_t inner = x->rank ? x->shape[x->rank - 1] : 1, rows = x->numel / inner;
    int64_t so = x->rank ? ostride[x->rank - 1] : 0;
    for (int64_t r = 0; r < rows; r++, tg__iter_next_row(&it)) {
        TG_T *dx = DX + it.off[0];
        const TG_T *dy = DY + it.off[1];
        for (int64_t i = 0; i < inner; i++) dx[i] += (TG_T)scale * dy[i * so];
    }
}

#endif
