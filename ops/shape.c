/*
 * shape.c - reshape (a view), permute (a strided copy) and detach (a copy
 * that no gradient flows through).
 *
 * Reading order: for each op its builder, its forward and backward (reshape,
 * a view, has none), its descriptor; the registry rows last.
 */
#include <stdio.h>

#include "ops_internal.h"
#include "shape.h"

static const tg_op op_reshape, op_permute, op_detach;   /* the descriptors, after each op's backward */

/* ---- reshape: a view, so the engine does no work at all ---- */

tg_node *tg_reshape(tg_graph *g, tg_node *x, int rank, const int64_t *shape)
{
    char a[160], b[160];
    if (!tg_builder_check(g, "reshape", 1, &x)) return NULL;
    if (rank < 0 || rank > TG_MAX_RANK)
        return tg_graph_fail(g, "reshape: rank %d is outside [0, %d]", rank, TG_MAX_RANK);
    if (rank && !shape) return tg_graph_fail(g, "reshape: shape is NULL");
    int64_t out[TG_MAX_RANK], known = 1;
    int infer = -1;
    for (int d = 0; d < rank; d++) {
        out[d] = shape[d];
        if (shape[d] == -1) {
            if (infer >= 0) return tg_graph_fail(g, "reshape: only one dimension can be inferred");
            infer = d;
        } else if (shape[d] < 0) {
            return tg_graph_fail(g, "reshape: invalid shape dimension %lld", (long long)shape[d]);
        } else if (!tg__mul_overflow_i64(known, shape[d], &known)) {
            return tg_graph_fail(g, "reshape: shape %s overflows",
                                 tg_shape_str(rank, shape, a, sizeof a));
        }
    }
    int64_t numel = x->value.numel;
    if (infer >= 0) {
        if (known == 0 || numel % known)
            return tg_graph_fail(g, "reshape: shape '%s' is invalid for input of size %lld",
                                 tg_shape_str(rank, shape, a, sizeof a), (long long)numel);
        out[infer] = numel / known;
        known = numel;
    }
    if (known != numel)
        return tg_graph_fail(g, "reshape: shape '%s' is invalid for input of size %lld (input "
                             "shape %s)", tg_shape_str(rank, shape, a, sizeof a),
                             (long long)numel, TG__SHAPE(&x->value, b));
    return tg_node_new(g, &op_reshape, 1, &x, x->value.dtype, rank, out);
}

static void reshape_describe(const tg_node *n, char *buf, size_t len)
{
    tg_shape_str(n->value.rank, n->value.shape, buf, len);
}

/* ONNX: Reshape to the node's shape. */
static tg_status reshape_onnx(const tg_node *n, struct tg_onnx *m)
{
    tg__onnx_reshape_as(m, n, tg__onnx_in(m, n, 0), tg__onnx_value(m, n));
    return tg__onnx_status(m);
}

static const tg_op op_reshape = {.name = "reshape", .describe = reshape_describe,
                                 .flags = TG_OP_VIEW, .onnx = reshape_onnx};

/* ---- permute ---- */

typedef struct { int perm[TG_MAX_RANK]; int64_t xstride[TG_MAX_RANK]; } permute_attr;

tg_node *tg_permute(tg_graph *g, tg_node *x, const int *perm)
{
    if (!tg_builder_check(g, "permute", 1, &x)) return NULL;
    const tg_tensor *v = &x->value;
    if (v->rank && !perm) return tg_graph_fail(g, "permute: perm is NULL");
    permute_attr at;
    bool seen[TG_MAX_RANK] = {false};
    int64_t shape[TG_MAX_RANK], xs[TG_MAX_RANK];
    tg__strides(v->rank, v->shape, xs);
    for (int i = 0; i < v->rank; i++) {
        int d;
        if (!tg__dim(g, "permute", perm[i], v->rank, &d)) return NULL;
        if (seen[d]) return tg_graph_fail(g, "permute: repeated dim %d in the permutation", d);
        seen[d] = true;
        at.perm[i] = d;
        shape[i] = v->shape[d];
        at.xstride[i] = xs[d];
    }
    tg_node *n = tg_node_new(g, &op_permute, 1, &x, v->dtype, v->rank, shape);
    permute_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    *a = at;
    return n;
}

tg_node *tg_transpose(tg_graph *g, tg_node *x, int dim0, int dim1)
{
    if (!tg_builder_check(g, "transpose", 1, &x)) return NULL;
    int r = x->value.rank, d0, d1, perm[TG_MAX_RANK];
    if (!tg__dim(g, "transpose", dim0, r, &d0) || !tg__dim(g, "transpose", dim1, r, &d1))
        return NULL;
    for (int i = 0; i < r; i++) perm[i] = i;
    if (r) {
        perm[d0] = d1;
        perm[d1] = d0;
    }
    return tg_permute(g, x, perm);
}

/* Walk the output in order; operand 1 follows the input through its strides. */
static void permute_walk(tg_node *n, bool backward)
{
    const permute_attr *a = n->attr;
    const tg_tensor *y = &n->value;
    size_t es = tg_dtype_size(y->dtype);
    int64_t sy[TG_MAX_RANK];
    if (!y->numel) return;
    if (y->rank == 0) {
        if (backward) tg__sum_to_acc(y->dtype, &n->grad, &n->in[0]->grad, 1.0);
        else memcpy(y->data, n->in[0]->value.data, es);
        return;
    }
    tg__strides(y->rank, y->shape, sy);
    tg__iter it;
    tg__iter_init(&it, y->rank, y->shape, sy, a->xstride, NULL);
    int64_t inner = y->shape[y->rank - 1], rows = y->numel / inner;
    int64_t sx = a->xstride[y->rank - 1];
    for (int64_t r = 0; r < rows; r++, tg__iter_next_row(&it)) {
        if (!backward) {
            const char *src = (const char *)n->in[0]->value.data + (size_t)it.off[1] * es;
            char *dst = (char *)y->data + (size_t)it.off[0] * es;
            if (sx == 1) {
                memcpy(dst, src, (size_t)inner * es);
            } else {
                for (int64_t i = 0; i < inner; i++)
                    memcpy(dst + (size_t)i * es, src + (size_t)(i * sx) * es, es);
            }
        } else if (y->dtype == TG_F64) {
            const double *dy = (const double *)n->grad.data + it.off[0];
            double *dx = (double *)n->in[0]->grad.data + it.off[1];
            for (int64_t i = 0; i < inner; i++) dx[i * sx] += dy[i];
        } else {
            const float *dy = (const float *)n->grad.data + it.off[0];
            float *dx = (float *)n->in[0]->grad.data + it.off[1];
            for (int64_t i = 0; i < inner; i++) dx[i * sx] += dy[i];
        }
    }
}

/* forward: y[i_0..i_r] = x[j] with j[perm[k]] = i_k */
static tg_status permute_forward(tg_node *n)
{
    permute_walk(n, false);
    return TG_OK;
}

/* backward: the inverse permutation, accumulated: dx[j] += dy[i] */
static tg_status permute_backward(tg_node *n)
{
    permute_walk(n, true);
    return TG_OK;
}

static void permute_describe(const tg_node *n, char *buf, size_t len)
{
    const permute_attr *a = n->attr;
    size_t k = (size_t)snprintf(buf, len, "(");
    for (int d = 0; d < n->value.rank && k < len; d++)
        k += (size_t)snprintf(buf + k, len - k, d ? ", %d" : "%d", a->perm[d]);
    if (k < len) snprintf(buf + k, len - k, ")");
}

/* ONNX: Transpose with perm. */
static tg_status permute_onnx(const tg_node *n, struct tg_onnx *m)
{
    const permute_attr *a = n->attr;
    int64_t perm[TG_MAX_RANK];
    for (int d = 0; d < n->value.rank; d++) perm[d] = a->perm[d];
    TG__ONNX_NODE(m, "Transpose", tg__onnx_value(m, n), tg__onnx_in(m, n, 0));
    tg__onnx_attr_ints(m, "perm", n->value.rank, perm);
    return tg__onnx_status(m);
}

static const tg_op op_permute = {.name = "permute", .forward = permute_forward,
                                 .backward = permute_backward, .describe = permute_describe,
                                 .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,
                                 .flops = tg__flops_none, .onnx = permute_onnx};

/* ---- detach: the same values, cut off from the gradient ---- */

tg_node *tg_detach(tg_graph *g, tg_node *x)
{
    if (!tg_builder_check(g, "detach", 1, &x)) return NULL;
    return tg_node_new(g, &op_detach, 1, &x, x->value.dtype, x->value.rank, x->value.shape);
}

/* forward: y = x (a copy, so that the output has no gradient buffer to alias) */
static tg_status detach_forward(tg_node *n)
{
    if (n->value.numel)
        memcpy(n->value.data, n->in[0]->value.data,
               (size_t)n->value.numel * tg_dtype_size(n->value.dtype));
    return TG_OK;
}

/* backward: none. An op without one makes a node that requires no gradient
 * (engine/node.c), so nothing flows from y back to x: torch's x.detach(). */
/* ONNX: the identity (no gradients in an exported model). */
static tg_status detach_onnx(const tg_node *n, struct tg_onnx *m)
{
    TG__ONNX_NODE(m, "Identity", tg__onnx_value(m, n), tg__onnx_in(m, n, 0));
    return tg__onnx_status(m);
}

static const tg_op op_detach = {.name = "detach", .forward = detach_forward,
                                .flags = TG_OP_FWD_INPLACE, .flops = tg__flops_none, .onnx = detach_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_permute)
{
    (void)n_in;
    int64_t dims[TG_MAX_RANK];
    int perm[TG_MAX_RANK], n = tg__op_list(g, c, "dims", dims, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    int rank = tg_node_value(in[0])->rank;
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
    return TG_GLUE_ONE(tg_permute(g, in[0], perm));
}

TG_GLUE(b_transpose)
{
    (void)n_in;
    int d0, d1;
    if (!tg__op_dim(g, c, "dim0", &d0) || !tg__op_dim(g, c, "dim1", &d1)) return TG_ERR_INVALID;
    return TG_GLUE_ONE(tg_transpose(g, in[0], d0, d1));
}

TG_GLUE(b_reshape)
{
    (void)n_in;
    int64_t shape[TG_MAX_RANK];
    int n = tg__op_list(g, c, "shape", shape, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    return TG_GLUE_ONE(tg_reshape(g, in[0], n, shape));
}

TG_GLUE(b_detach) { (void)c, (void)n_in; return TG_GLUE_ONE(tg_detach(g, in[0])); }

const tg_op_def tg__shape_ops[] = {
    {"permute", "torch.permute(input, dims)",
     {{"dims", TG_OP_INT_LIST, NULL, false, "the new order of the dims", NULL, 0}}, false,
     {TG_ANY("input")}, 1, false, 1, b_permute, NULL, "permute dims=[2,0,1] --in x.npy --out y.npy",
     &op_permute, NULL,
     "dims=[2,0,1];[2,3,4]", "dims=[0,1];[2,3,4]", NULL},
    {"transpose", "torch.transpose(input, dim0, dim1)",
     {{"dim0", TG_OP_INT, NULL, false, "first dim to swap", NULL, 0},
      {"dim1", TG_OP_INT, NULL, false, "second dim to swap", NULL, 0}}, false,
     {TG_ANY("input")}, 1, false, 1, b_transpose, NULL,
     "transpose dim0=0 dim1=1 --in x.npy --out y.npy", &op_permute, NULL,
     "dim0=0;dim1=2;[2,3,4]", "dim0=0;dim1=3;[2,3]", NULL},
    {"reshape", "torch.reshape(input, shape); one dim may be -1",
     {{"shape", TG_OP_INT_LIST, NULL, false, "the new shape; one dim may be -1", NULL, 0}}, false,
     {TG_ANY("input")}, 1, false, 1, b_reshape, NULL, "reshape shape=[-1,5,8] --in x.npy --out y.npy",
     &op_reshape, NULL,
     "shape=[-1,2];[3,4]", "shape=[5,-1];[3,4]", NULL},
    {"detach", "Tensor.detach(): the same values, no gradient flows back", {{0}}, false,
     {TG_ANY("input")}, 1, false, 1, b_detach, NULL, "detach --in x.npy --out y.npy",
     &op_detach, "its output is cut off from the gradient (torch's detach)",
     NULL, "[3];[3]", NULL},
    {0}
};
