/*
 * linear.c - y = x W^T + b over the last dim of x (OPS.md section 3).
 *
 * x is viewed as M rows of `in` features: X [M, in], W [out, in], Y [M, out].
 * Forward and backward are three GEMMs and a column sum (the bias gradient:
 * double partial sums over fixed blocks of rows, in parallel).
 *
 * Reading order (engine/generic.h): builder, forward, backward, the
 * descriptor and registry row. No kernels of its own: the GEMMs are gemm.c's.
 */
#include <stdio.h>

#include "ops_internal.h"
#include "gemm.h"
#include "linear.h"
#include "simd/vec.h"

typedef struct { int64_t M, in, out; } linear_attr;

#define BIAS_ROWS 256   /* rows per partial sum of the bias gradient */

static const tg_op op_linear;   /* the descriptor, after the backward */

/* ---- builder ---- */

tg_node *tg_linear(tg_graph *g, tg_node *x, tg_node *weight, tg_node *bias)
{
    tg_node *in[3] = {x, weight, bias};
    if (!tg_builder_check(g, "linear", 2, in)) return NULL;
    if (bias && !tg_builder_check(g, "linear", 3, in)) return NULL;
    if (!tg__want_float(g, "linear", x, "input") || !tg__want_float(g, "linear", weight, "weight") ||
        (bias && !tg__want_float(g, "linear", bias, "bias")))
        return NULL;
    const tg_tensor *xv = &x->value, *wv = &weight->value;
    if (wv->rank != 2)
        return tg_graph_fail(g, "linear: weight must be 2-d [out, in], got %d-d", wv->rank);
    if (xv->rank < 1) return tg_graph_fail(g, "linear: input must have at least 1 dim, got 0-d");
    int64_t in_f = xv->shape[xv->rank - 1], out_f = wv->shape[0];
    int64_t M = in_f ? xv->numel / in_f : 0;
    if (in_f == 0) {
        M = 1;
        for (int d = 0; d < xv->rank - 1; d++) M *= xv->shape[d];
    }
    if (wv->shape[1] != in_f)
        return tg_graph_fail(g, "linear: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and "
                             "%lldx%lld)", (long long)M, (long long)in_f,
                             (long long)wv->shape[1], (long long)out_f);
    if (bias && (bias->value.rank != 1 || bias->value.shape[0] != out_f)) {
        char sh[96];
        return tg_graph_fail(g, "linear: bias must have shape [%lld] (out features), got %s",
                             (long long)out_f, TG__SHAPE(&bias->value, sh));
    }
    int64_t shape[TG_MAX_RANK];
    memcpy(shape, xv->shape, (size_t)xv->rank * sizeof *shape);
    shape[xv->rank - 1] = out_f;
    tg_node *n = tg_node_new(g, &op_linear, bias ? 3 : 2, in, xv->dtype, xv->rank, shape);
    linear_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    a->M = M;
    a->in = in_f;
    a->out = out_f;
    /* the bias gradient's partial sums per block of BIAS_ROWS rows (double) */
    if (bias)
        tg_node_scratch(n, (size_t)out_f * (size_t)((M + BIAS_ROWS - 1) / BIAS_ROWS) *
                               sizeof(double));
    return n;
}

/* ---- forward ---- */

/* rows [begin, end) of Y = the bias: one row, then doubling copies of the
 * rows filled so far (rows are short, 64 to 512 features: a memcpy per row
 * cost more in calls than in bytes) */
static void bias_rows(void *ctx, int64_t begin, int64_t end, int tid)
{
    const tg_node *n = ctx;
    const size_t row = (size_t)((const linear_attr *)n->attr)->out * tg_dtype_size(n->value.dtype);
    char *y = (char *)n->value.data + (size_t)begin * row;
    const int64_t rows = end - begin;
    (void)tid;
    if (rows <= 0) return;
    memcpy(y, n->in[2]->value.data, row);
    for (int64_t done = 1; done < rows;) {
        const int64_t c = rows - done < done ? rows - done : done;
        memcpy(y + (size_t)done * row, y, (size_t)c * row);
        done += c;
    }
}

/* forward: Y[M, out] = X[M, in] . W[out, in]^T (+ b) */
static tg_status linear_forward(tg_node *n)
{
    const linear_attr *a = n->attr;
    tg_dtype dt = n->value.dtype;
    /* broadcast the bias into every row (on the pool), then accumulate */
    if (n->n_in == 3 && a->out > 0) tg_parallel_for(a->M, 1 + 16384 / a->out, bias_rows, n);
    tg_gemm_batched(dt, false, true, 1, a->M, a->out, a->in, 1.0, n->in[0]->value.data, a->in, 0,
                    n->in[1]->value.data, a->in, 0, n->n_in == 3 ? 1.0 : 0.0, n->value.data,
                    a->out, 0);
    return TG_OK;
}

/* ---- backward ---- */

/* Row block k (BIAS_ROWS rows) of dY summed over its rows, in double, into its
 * own partial sums (the node's scratch, [blocks, out]). */
static void bias_blocks(void *ctx, int64_t begin, int64_t end, int tid)
{
    const tg_node *n = ctx;
    const linear_attr *a = n->attr;
    const int64_t out = a->out;
    const bool vec = n->value.dtype == TG_F32 && tg__vec_on();
    (void)tid;
    for (int64_t k = begin; k < end; k++) {
        double *acc = (double *)tg_graph_scratch(n->graph) + k * out;
        for (int64_t j = 0; j < out; j++) acc[j] = 0;
        const int64_t r1 = (k + 1) * BIAS_ROWS < a->M ? (k + 1) * BIAS_ROWS : a->M;
        for (int64_t r = k * BIAS_ROWS; r < r1; r++) {
            if (n->value.dtype == TG_F64) {
                const double *dy = (const double *)n->grad.data + r * out;
                for (int64_t j = 0; j < out; j++) acc[j] += dy[j];
                continue;
            }
            const float *dy = (const float *)n->grad.data + r * out;
#if TG_VEC
            if (vec) {
                tg__vec_acc_row(dy, acc, out);
                continue;
            }
#endif
            for (int64_t j = 0; j < out; j++) acc[j] += dy[j];
        }
    }
    (void)vec;
}

/* db += the sum of dY's rows: partial sums over fixed blocks of rows in
 * parallel, then added up in block order (the same bits for any thread count) */
static void bias_grad(tg_node *n)
{
    const linear_attr *a = n->attr;
    const int64_t out = a->out, blocks = (a->M + BIAS_ROWS - 1) / BIAS_ROWS;
    if (out == 0) return;
    tg_parallel_for(blocks, 1 + 65536 / (BIAS_ROWS * out), bias_blocks, n);
    const double *acc = tg_graph_scratch(n->graph);
    tg_tensor *db = &n->in[2]->grad;
    for (int64_t j = 0; j < out; j++) {
        double s = 0;
        for (int64_t k = 0; k < blocks; k++) s += acc[k * out + j];
        if (db->dtype == TG_F64) ((double *)db->data)[j] += s;
        else ((float *)db->data)[j] += (float)s;
    }
}

/* backward, from Y = X W^T + b:
 *   dW[out, in] += dY^T[out, M] . X[M, in]
 *   db[out]     += sum over rows of dY
 *   dX[M, in]  += dY[M, out] . W[out, in]
 * in that order: X is not read once dX is being written, so the plan may put
 * dX in X's memory (TG_OP_BWD_DX_OVER_X). */
static tg_status linear_backward(tg_node *n)
{
    const linear_attr *a = n->attr;
    tg_dtype dt = n->value.dtype;
    tg_node *x = n->in[0], *w = n->in[1];
    if (w->requires_grad)
        tg_gemm_batched(dt, true, false, 1, a->out, a->in, a->M, 1.0, n->grad.data, a->out, 0,
                        x->value.data, a->in, 0, 1.0, w->grad.data, a->in, 0);
    if (n->n_in == 3 && n->in[2]->requires_grad) bias_grad(n);
    if (x->requires_grad)   /* set rather than added to when this is its first writer */
        tg_gemm_batched(dt, false, false, 1, a->M, a->in, a->out, 1.0, n->grad.data, a->out, 0,
                        w->value.data, a->in, 0, tg_grad_fresh(n, 0) ? 0.0 : 1.0, x->grad.data,
                        a->in, 0);
    return TG_OK;
}

/* ---- descriptor ---- */

static void linear_describe(const tg_node *n, char *buf, size_t len)
{
    const linear_attr *a = n->attr;
    snprintf(buf, len, "%lld->%lld%s", (long long)a->in, (long long)a->out,
             n->n_in == 3 ? "" : " no bias");
}

/* FLOPs (engine/cost.h): 2 per multiply-add of x W^T, 1 per bias add */
static double linear_flops(const tg_node *n)
{
    const linear_attr *a = n->attr;
    double mo = (double)a->M * (double)a->out;
    return 2.0 * mo * (double)a->in + (n->n_in == 3 ? mo : 0.0);
}

/* ONNX: y = MatMul(x, Transpose(W)) (+ b). */
static tg_status linear_onnx(const tg_node *n, struct tg_onnx *m)
{
    const char *wt = tg__onnx_tmp(m, n, "weight_t"), *y = tg__onnx_value(m, n);
    TG__ONNX_NODE(m, "Transpose", wt, tg__onnx_in(m, n, 1));
    tg__onnx_attr_ints(m, "perm", 2, (const int64_t[]){1, 0});
    const char *xw = n->n_in == 3 ? tg__onnx_tmp(m, n, "xw") : y;
    TG__ONNX_NODE(m, "MatMul", xw, tg__onnx_in(m, n, 0), wt);
    if (n->n_in == 3) TG__ONNX_NODE(m, "Add", y, xw, tg__onnx_in(m, n, 2));
    return tg__onnx_status(m);
}

static const tg_op op_linear = {.name = "linear", .forward = linear_forward,
                                .backward = linear_backward, .describe = linear_describe,
                                .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_RECOMPUTE_COSTLY |
                                         TG_OP_BWD_FRESH | TG_OP_BWD_DX_OVER_X,
                                .flops = linear_flops, .onnx = linear_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_linear) { (void)c; return TG_GLUE_ONE(tg_linear(g, in[0], in[1], n_in > 2 ? in[2] : NULL)); }

const tg_op_def tg__linear_ops[] = {
    {"linear", "F.linear(input, weight, bias=None)", {{0}}, false,
     {TG_IN("input"), TG_IN("weight"), TG_IN("bias")}, 2, false, 1, b_linear, NULL,
     "linear --in x.npy --in w.npy --in b.npy --out y.npy", &op_linear, NULL,
     "[2,3];[4,3];[4]", "[2,3];[4,5]", NULL},
    {0}
};
