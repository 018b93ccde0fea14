/*
 * softmax.c - softmax, log_softmax and softmax(scale * x) along one dim
 * (OPS.md section 5).
 *
 * The tensor is seen as rows: [outer, n, inner] with the softmax dim in the
 * middle; row r = (o, i) holds the n elements x[o*n*inner + j*inner + i].
 * Each row is handled by one row function (forward and backward side by
 * side); rows are spread over the thread pool. The last dim (inner = 1) is
 * the contiguous fast path; other dims walk with stride `inner`.
 *
 * Reading order (engine/generic.h): builder, forward and backward, the
 * descriptors and registry rows, then the portable kernels for float and
 * double at the end. F32 contiguous rows go to the AVX2 row kernels of
 * ops/simd/vec_softmax.c when the CPU has them (tg__vec_on(); the choice is
 * made in run() below); TG_NO_SIMD=1 keeps the portable kernels, which stay
 * the reference and the F64 / strided path.
 *
 * Not here: masking (masked_fill, ops/mask.c) and dropout.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "ops_internal.h"
#include "softmax.h"
#include "generic.h"
#include "simd/vec.h"

typedef struct {
    int     dim;          /* wrapped dim (0 for a 0-d input) */
    int64_t outer, n, inner;
    double  scale;        /* 1 unless tg_softmax_scaled */
    bool    log;          /* log_softmax */
} softmax_attr;

typedef struct { tg_node *n; bool backward; } softmax_ctx;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, softmax_rows, (void *vctx, int64_t begin, int64_t end, int tid));

static const tg_op op_softmax, op_log_softmax;   /* the descriptors, after the backward */

/* ---- builder ---- */

static tg_node *build(tg_graph *g, const tg_op *op, tg_node *x, int dim, double scale, bool log)
{
    if (!tg_builder_check(g, op->name, 1, &x)) return NULL;
    if (!tg__want_float(g, op->name, x, "input")) return NULL;
    const tg_tensor *v = &x->value;
    int d;
    if (!tg__dim(g, op->name, dim, v->rank, &d)) return NULL;
    softmax_attr at = {.dim = d, .outer = 1, .n = 1, .inner = 1, .scale = scale, .log = log};
    if (v->rank > 0) {
        for (int i = 0; i < d; i++) at.outer *= v->shape[i];
        at.n = v->shape[d];
        for (int i = d + 1; i < v->rank; i++) at.inner *= v->shape[i];
    }
    tg_node *n = tg_node_new(g, op, 1, &x, v->dtype, v->rank, v->shape);
    softmax_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    *a = at;
    return n;
}

tg_node *tg_softmax(tg_graph *g, tg_node *x, int dim)
{
    return build(g, &op_softmax, x, dim, 1.0, false);
}

tg_node *tg_log_softmax(tg_graph *g, tg_node *x, int dim)
{
    return build(g, &op_log_softmax, x, dim, 1.0, true);
}

tg_node *tg_softmax_scaled(tg_graph *g, tg_node *x, int dim, double scale)
{
    return build(g, &op_softmax, x, dim, scale, false);
}

/* ---- forward and backward ----
 * Float32 contiguous rows with the vector path on: ops/simd/vec_softmax.c's
 * row kernels over each range; otherwise the portable kernels below. */

#if TG_VEC
/* contiguous float rows [begin, end): the vector kernels */
static void softmax_vec_rows(void *vctx, int64_t begin, int64_t end, int tid)
{
    const softmax_ctx *c = vctx;
    const softmax_attr *a = c->n->attr;
    int64_t n = a->n;
    (void)tid;
    const float *x = c->n->in[0]->value.data, *y = c->n->value.data;
    const float *dy = c->backward ? c->n->grad.data : NULL;
    float *out = c->backward ? c->n->in[0]->grad.data : c->n->value.data;
    for (int64_t r = begin; r < end; r++) {
        int64_t o = r * n;
        if (!c->backward && a->log) tg__vec_log_softmax_row(x + o, out + o, n);
        else if (!c->backward) tg__vec_softmax_row(x + o, out + o, n, (float)a->scale);
        else if (a->log) tg__vec_log_softmax_row_backward(y + o, dy + o, out + o, n);
        else tg__vec_softmax_row_backward(y + o, dy + o, out + o, n, (float)a->scale);
    }
}
#endif

static void run(tg_node *n, bool backward)
{
    const softmax_attr *a = n->attr;
    softmax_ctx c = {n, backward};
    int64_t rows = a->outer * a->inner;
    int64_t grain = a->n > 0 ? 1 + 16384 / a->n : rows;   /* ~16K elements per chunk */
    if (a->n == 0) return;
#if TG_VEC
    if (a->inner == 1 && n->value.dtype == TG_F32 && tg__vec_on()) {
        tg_parallel_for(rows, grain, softmax_vec_rows, &c);
        return;
    }
#endif
    tg_parallel_for(rows, grain, TG_DISPATCH(n->value.dtype, softmax_rows), &c);
}

static tg_status softmax_forward(tg_node *n)
{
    run(n, false);
    return TG_OK;
}

static tg_status softmax_backward(tg_node *n)
{
    run(n, true);
    return TG_OK;
}

/* ---- descriptor ---- */

static void softmax_describe(const tg_node *n, char *buf, size_t len)
{
    const softmax_attr *a = n->attr;
    if (a->scale != 1.0) snprintf(buf, len, "dim=%d scale=%g", a->dim, a->scale);
    else snprintf(buf, len, "dim=%d", a->dim);
}

/* FLOPs: 5 per element (max, subtract, exp, sum, divide; engine/cost.h) */
static double softmax_flops(const tg_node *n) { return tg__flops_per_in0(n, 5); }

/* ONNX: Softmax / LogSoftmax along dim (after a Mul for softmax(scale * x)). */
static tg_status softmax_onnx(const tg_node *n, struct tg_onnx *m)
{
    const softmax_attr *a = n->attr;
    const char *x = tg__onnx_in(m, n, 0);
    if (a->scale != 1) {
        const char *sx = tg__onnx_tmp(m, n, "scaled");
        TG__ONNX_NODE(m, "Mul", sx, x, tg__onnx_const_scalar(m, n->value.dtype, a->scale));
        x = sx;
    }
    TG__ONNX_NODE(m, a->log ? "LogSoftmax" : "Softmax", tg__onnx_value(m, n), x);
    tg__onnx_attr_int(m, "axis", a->dim);
    return tg__onnx_status(m);
}

static const tg_op op_softmax = {.name = "softmax", .forward = softmax_forward,
                                 .backward = softmax_backward, .describe = softmax_describe,
                                 .flags = TG_OP_BWD_NO_INPUTS,   /* reads y only */
                                 .flops = softmax_flops, .onnx = softmax_onnx};
static const tg_op op_log_softmax = {.name = "log_softmax", .forward = softmax_forward,
                                     .backward = softmax_backward,
                                     .describe = softmax_describe, .flags = TG_OP_BWD_NO_INPUTS,

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */
                                     .flops = softmax_flops, .onnx = softmax_onnx};

#include "registry_internal.h"

TG_GLUE(b_softmax)
{
    (void)n_in;
    int dim;
    return tg__op_dim(g, c, "dim", &dim) ? TG_GLUE_ONE(tg_softmax(g, in[0], dim)) : TG_ERR_INVALID;
}

TG_GLUE(b_log_softmax)
{
    (void)n_in;
    int dim;
    return tg__op_dim(g, c, "dim", &dim) ? TG_GLUE_ONE(tg_log_softmax(g, in[0], dim)) : TG_ERR_INVALID;
}

TG_GLUE(b_softmax_scaled)
{
    (void)n_in;
    int dim;
    if (!tg__op_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    return TG_GLUE_ONE(tg_softmax_scaled(g, in[0], dim, tg__op_f(c, "scale")));
}

const tg_op_def tg__softmax_ops[] = {
    {"softmax", "torch.softmax(input, dim)", {TG_DIM_REQ("the dim that sums to 1")}, false,
     {TG_IN("input")}, 1, false, 1, b_softmax, NULL,
     "softmax dim=-1 --in x.npy --out y.npy --grad-output dy.npy --grad dx.npy", &op_softmax, NULL,
     "dim=-1;[3,4]", "dim=2;[3,4]", NULL},
    {"log_softmax", "torch.log_softmax(input, dim)", {TG_DIM_REQ("the dim to normalise over")},
     false, {TG_IN("input")}, 1, false, 1, b_log_softmax, NULL,
     "log_softmax dim=1 --in x.npy --out y.npy", &op_log_softmax, NULL,
     "dim=1;[3,4]", "dim=-3;[3,4]", NULL},
    {"softmax_scaled", "softmax(scale * input, dim) in one op (tgraph)",
     {TG_DIM_REQ("the dim that sums to 1"),
      {"scale", TG_OP_FLOAT, NULL, false,
       "factor applied to input before the softmax", NULL, 0}}, false,
     {TG_IN("input")}, 1, false, 1, b_softmax_scaled, NULL,
     "softmax_scaled dim=-1 scale=0.125 --in x.npy --out y.npy", &op_softmax, NULL,
     "dim=-1;scale=0.7;[3,4]", "dim=-1;scale=1;i64[3,4]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "softmax.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* forward, one row of n elements at stride st:
 *   z = scale * x;  m = max z;  e = exp(z - m);  y = e / sum e
 * -inf entries give e = 0; an all -inf row gives m = -inf, z - m = NaN, so a
 * NaN row (as PyTorch); +inf or NaN anywhere makes the sum NaN, so a NaN row. */
static inline void TG_F(softmax_row)(const TG_T *x, TG_T *y, int64_t n, int64_t st, TG_T scale)
{
    TG_T m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        TG_T z = scale * x[j * st];
        if (z > m) m = z;
    }
    double s = 0;
    for (int64_t j = 0; j < n; j++) {
        TG_T e = TG_M(exp)(scale * x[j * st] - m);
        y[j * st] = e;
        s += e;
    }
    double r = 1.0 / s;
    for (int64_t j = 0; j < n; j++) y[j * st] = (TG_T)(y[j * st] * r);
}

/* backward of y = softmax(scale * x):
 *   dx += scale * y * (dy - sum_j dy_j y_j) */
static inline void TG_F(softmax_row_backward)(const TG_T *y, const TG_T *dy, TG_T *dx,
                                              int64_t n, int64_t st, TG_T scale)
{
    double dot = 0;
    for (int64_t j = 0; j < n; j++) dot += (double)dy[j * st] * y[j * st];
    for (int64_t j = 0; j < n; j++)
        dx[j * st] += (TG_T)(scale * (y[j * st] * (dy[j * st] - dot)));
}

/* forward, one row: y = x - m - log sum exp(x - m) (same NaN rules as softmax) */
static inline void TG_F(log_softmax_row)(const TG_T *x, TG_T *y, int64_t n, int64_t st)
{
    TG_T m = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (x[j * st] > m) m = x[j * st];
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += TG_M(exp)(x[j * st] - m);
    double lse = log(s);
    for (int64_t j = 0; j < n; j++) y[j * st] = (TG_T)((double)(x[j * st] - m) - lse);
}

/* backward of y = log_softmax(x):
 *   dx += dy - exp(y) * sum_j dy_j */
static inline void TG_F(log_softmax_row_backward)(const TG_T *y, const TG_T *dy, TG_T *dx,
                                                  int64_t n, int64_t st)
{
    double sdy = 0;
    for (int64_t j = 0; j < n; j++) sdy += dy[j * st];
    for (int64_t j = 0; j < n; j++)
        dx[j * st] += (TG_T)(dy[j * st] - TG_M(exp)(y[j * st]) * sdy);
}

/* one row at offset base with stride st, forward or backward */
static inline void TG_F(row)(const softmax_ctx *c, int64_t base, int64_t st)
{
    const tg_node *nd = c->n;
    const softmax_attr *a = nd->attr;
    const TG_T *x = nd->in[0]->value.data;
    TG_T *y = nd->value.data;
    if (!c->backward) {
        if (a->log) TG_F(log_softmax_row)(x + base, y + base, a->n, st);
        else        TG_F(softmax_row)(x + base, y + base, a->n, st, (TG_T)a->scale);
        return;
    }
    const TG_T *dy = nd->grad.data;
    TG_T *dx = nd->in[0]->grad.data;
    if (a->log)
        TG_F(log_softmax_row_backward)(y + base, dy + base, dx + base, a->n, st);
    else
        TG_F(softmax_row_backward)(y + base, dy + base, dx + base, a->n, st, (TG_T)a->scale);
}

/* rows [begin, end); row r = (o, i) starts at o*n*inner + i */
static void TG_F(softmax_rows)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const softmax_ctx *c = vctx;
    const softmax_attr *a = c->n->attr;
    int64_t n = a->n, in = a->inner;
    (void)tid;
    if (in == 1)            /* contiguous rows: the row code inlined with stride 1 */
        for (int64_t r = begin; r < end; r++) TG_F(row)(c, r * n, 1);
    else
        for (int64_t r = begin; r < end; r++) TG_F(row)(c, (r / in) * n * in + r % in, in);
}

#endif
