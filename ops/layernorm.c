/*
 * layernorm.c - F.layer_norm over the trailing dims (OPS.md section 9).
 *
 * x is seen as [R, N]: R rows (the leading dims) of N = prod(normalized_shape)
 * elements. One row function for the forward and one for the backward, called
 * for blocks of rows through tg_parallel_for; the per-row mean and rstd are
 * saved (double) for the backward. dgamma / dbeta are sums over rows, done by
 * a second pass: partial sums over fixed blocks of rows in parallel, added up
 * in block order, so the sums do not depend on the thread count.
 *
 * Reading order (engine/generic.h): builder, forward, backward, the
 * descriptor and registry row, then the portable kernels for float and
 * double at the end. The passes take their three row functions from a table
 * (ln_rows): the portable ones, or for F32 when tg__vec_on() the AVX2 rows
 * of ops/simd/vec_layernorm.c; the portable rows stay the reference
 * (TG_NO_SIMD=1) and the F64 path.
 * Not here: RMSNorm, batch/group norm.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "ops_internal.h"
#include "layernorm.h"
#include "generic.h"
#include "simd/vec.h"

#define LN_PARAM_ROWS 256   /* rows per partial sum of dgamma / dbeta */

typedef struct {
    int     n_norm;
    int64_t shape[TG_MAX_RANK];   /* normalized_shape */
    int     wi, bi;               /* input index of weight / bias, -1 when absent */
    double  eps;
} ln_attr;

/* the portable kernels, float and double (end of this file) */
/* rows: the row functions (ln_rows_f32 / _f64 below), NULL for the portable ones */
TG_KERNEL_DECL(static void, ln_forward, (tg_node *n, int wi, int bi, double eps,
                                         const void *rows));
TG_KERNEL_DECL(static void, ln_backward, (tg_node *n, int wi, int bi, const void *rows));

static const tg_op op_layer_norm;   /* the descriptor, after the backward */

/* ---- builder ---- */

/* weight / bias must have exactly normalized_shape */
static bool ln_check_param(tg_graph *g, tg_node *p, const char *what, int n_norm,
                           const int64_t *ns)
{
    char a[160], b[160];
    if (!p) return true;
    if (!tg__want_float(g, "layer_norm", p, what)) return false;
    bool same = p->value.rank == n_norm;
    for (int d = 0; same && d < n_norm; d++) same = p->value.shape[d] == ns[d];
    if (!same)
        tg_graph_fail(g, "layer_norm: Expected %s to be of same shape as normalized_shape, but got "
                      "%s of shape %s and normalized_shape = %s", what, what,
                      TG__SHAPE(&p->value, a), tg_shape_str(n_norm, ns, b, sizeof b));
    return same;
}

tg_node *tg_layer_norm(tg_graph *g, tg_node *x, int n_norm, const int64_t *normalized_shape,
                       tg_node *weight, tg_node *bias, double eps)
{
    tg_node *in[3] = {x};
    int n_in = 1;
    ln_attr at = {.n_norm = n_norm, .wi = -1, .bi = -1, .eps = eps};
    char a[160], b[160];
    if (weight) at.wi = n_in, in[n_in++] = weight;
    if (bias) at.bi = n_in, in[n_in++] = bias;
    if (!tg_builder_check(g, "layer_norm", n_in, in)) return NULL;
    if (!tg__want_float(g, "layer_norm", x, "input")) return NULL;
    if (n_norm == 0)
        return tg_graph_fail(g, "layer_norm: Expected normalized_shape to be at least "
                             "1-dimensional, i.e., containing at least one element, but got "
                             "normalized_shape = []");
    if (n_norm < 0 || n_norm > TG_MAX_RANK || !normalized_shape)
        return tg_graph_fail(g, "layer_norm: normalized_shape must have 1 to %d dims, got %d%s",
                             TG_MAX_RANK, n_norm, normalized_shape ? "" : " (NULL)");
    memcpy(at.shape, normalized_shape, (size_t)n_norm * sizeof *normalized_shape);
    const tg_tensor *v = &x->value;
    int lead = v->rank - n_norm;
    bool fits = lead >= 0;
    for (int d = 0; fits && d < n_norm; d++) fits = v->shape[lead + d] == normalized_shape[d];
    if (!fits) {
        /* "[*, 3, 4]" from "[3, 4]" */
        tg_shape_str(n_norm, normalized_shape, a, sizeof a);
        return tg_graph_fail(g, "layer_norm: Given normalized_shape=%s, expected input with shape "
                             "[*, %s, but got input of size%s", a, a + 1, TG__SHAPE(v, b));
    }
    if (!ln_check_param(g, weight, "weight", n_norm, normalized_shape) ||
        !ln_check_param(g, bias, "bias", n_norm, normalized_shape))
        return NULL;
    if (!(eps > 0))
        return tg_graph_fail(g, "layer_norm: eps must be positive, got %g (tgraph rejects eps <= 0 "
                             "and NaN; PyTorch's default is 1e-5)", eps);
    tg_node *n = tg_node_new(g, &op_layer_norm, n_in, in, v->dtype, v->rank, v->shape);
    ln_attr *attr = n ? tg_node_attr(n, sizeof *attr) : NULL;
    if (!attr) return NULL;
    *attr = at;
    int64_t N = 1;
    for (int d = 0; d < n_norm; d++) N *= normalized_shape[d];   /* <= numel: no overflow */
    /* saved for backward: mean and rstd per row, [*leading] */
    if (tg_node_buffer(n, TG_F64, lead, v->shape) < 0 || tg_node_buffer(n, TG_F64, lead, v->shape) < 0)
        return NULL;
    /* dgamma, dbeta partial sums per block of LN_PARAM_ROWS rows */
    const int64_t rows = N ? v->numel / N : 0;
    tg_node_scratch(n, 2 * (size_t)N * (size_t)((rows + LN_PARAM_ROWS - 1) / LN_PARAM_ROWS) *
                           sizeof(double));
    return n;
}

/* ---- forward and backward ----
 * The passes are the portable kernels' (end of this file): rows in parallel,
 * then the parameters' sums by fixed blocks of rows. Each row goes through a
 * table of three row functions: the portable ones, or for float32 with the
 * vector path on those of ops/simd/vec_layernorm.c (the same arithmetic
 * order, so the same passes and partial sums). */

/* The row functions of one type (T float or double). */
#define LN_ROWS(T, name)                                                                     \
    typedef struct {                                                                        \
        /* y = (x - mean) * rstd * gamma + beta; the row's mean and rstd out */             \
        void (*forward)(const T *x, T *y, const T *gamma, const T *beta, int64_t N,         \
                        double eps, double *mean, double *rstd);                            \
        /* dx (+)= rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma */           \
        void (*backward)(const T *x, const T *dy, T *dx, const T *gamma, int64_t N,         \
                         double mean, double rstd, bool fresh);                             \
        /* acc_g[j] += dy[j] * xhat[j], acc_b[j] += dy[j] (double) */                       \
        void (*param)(const T *x, const T *dy, double mean, double rstd, double *acc_g,     \
                      double *acc_b, int64_t N);                                            \
    } name
LN_ROWS(float, ln_rows_f32);
LN_ROWS(double, ln_rows_f64);

/* The row functions for a node: NULL for the portable ones. */
static const void *ln_rows(const tg_node *n)
{
#if TG_VEC
    static const ln_rows_f32 vec = {tg__vec_ln_row, tg__vec_ln_row_backward,
                                    tg__vec_ln_param_row};
    if (n->value.dtype == TG_F32 && tg__vec_on()) return &vec;
#else
    (void)n;
#endif
    return NULL;
}

static tg_status ln_forward(tg_node *n)
{
    const ln_attr *a = n->attr;
    TG_DISPATCH(n->value.dtype, ln_forward)(n, a->wi, a->bi, a->eps, ln_rows(n));
    return TG_OK;
}

static tg_status ln_backward(tg_node *n)
{
    const ln_attr *a = n->attr;
    TG_DISPATCH(n->value.dtype, ln_backward)(n, a->wi, a->bi, ln_rows(n));
    return TG_OK;
}

/* ---- descriptor ---- */

static void ln_describe(const tg_node *n, char *buf, size_t len)
{
    const ln_attr *a = n->attr;
    char s[160];
    snprintf(buf, len, "normalized_shape=%s eps=%g%s", tg_shape_str(a->n_norm, a->shape, s, sizeof s),
             a->eps, a->wi < 0 && a->bi < 0 ? " no affine" : "");
}

/* FLOPs (engine/cost.h): 5 per element (mean, variance, normalise), plus 1
 * each for the affine weight and bias */
static double ln_flops(const tg_node *n)
{
    const ln_attr *a = n->attr;
    return (double)n->value.numel * (5.0 + (a->wi >= 0) + (a->bi >= 0));
}

/* ONNX: LayerNormalization over the last n_norm dims (opset 17); without a weight
 * (or bias) a ones (zeros) tensor of the normalized shape stands in. */
static tg_status ln_onnx(const tg_node *n, struct tg_onnx *m)
{
    const ln_attr *a = n->attr;
    const char *wb[2];
    for (int k = 0; k < 2; k++) {
        int idx = k ? a->bi : a->wi;
        if (idx >= 0) {
            wb[k] = tg__onnx_in(m, n, idx);
            continue;
        }
        wb[k] = tg__onnx_tmp(m, n, k ? "bias" : "weight");
        TG__ONNX_NODE(m, "Expand", wb[k], tg__onnx_const_scalar(m, n->value.dtype, k ? 0 : 1),
                      tg__onnx_const_i64(m, a->n_norm, a->shape));
    }
    TG__ONNX_NODE(m, "LayerNormalization", tg__onnx_value(m, n), tg__onnx_in(m, n, 0), wb[0],
                  wb[1]);
    tg__onnx_attr_int(m, "axis", -a->n_norm);
    tg__onnx_attr_float(m, "epsilon", a->eps);
    return tg__onnx_status(m);
}

static const tg_op op_layer_norm = {.name = "layer_norm", .forward = ln_forward,
                                    .backward = ln_backward, .describe = ln_describe,
                                    /* reads x, gamma, mean, rstd; cheap to redo */
                                    .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_RECOMPUTE |
                                             TG_OP_BWD_FRESH,

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */
                                    .flops = ln_flops, .onnx = ln_onnx};

#include "registry_internal.h"

TG_GLUE(b_layer_norm)
{
    int64_t shape[TG_MAX_RANK];
    int n = tg__op_list(g, c, "normalized_shape", shape, TG_MAX_RANK);
    if (n < 0) return TG_ERR_INVALID;
    return TG_GLUE_ONE(tg_layer_norm(g, in[0], n, shape, n_in > 1 ? in[1] : NULL,
                             n_in > 2 ? in[2] : NULL, tg__op_f(c, "eps")));
}

const tg_op_def tg__layernorm_ops[] = {
    {"layer_norm", "F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)",
     {{"normalized_shape", TG_OP_INT_LIST, NULL, false, "the trailing dims to normalise", NULL, 0},
      {"eps", TG_OP_FLOAT, "1e-5", false, "added to the variance", NULL, 0}},
     false, {TG_IN("input"), TG_IN("weight"), TG_IN("bias")}, 1, false, 1, b_layer_norm, NULL,
     "layer_norm normalized_shape=[8] --in x.npy --in w.npy --in b.npy --out y.npy",
     &op_layer_norm, NULL,
     "normalized_shape=[4];[3,4];[4];[4]", "normalized_shape=[5];[3,4]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "layernorm.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* forward of one row:
 *   mean = sum(x) / N,  var = sum((x - mean)^2) / N     (two passes, double)
 *   rstd = 1 / sqrt(var + eps)
 *   y    = (x - mean) * rstd * gamma + beta             (gamma, beta optional) */
static void TG_F(ln_row_forward)(const TG_T *x, TG_T *y, const TG_T *gamma, const TG_T *beta,
                                 int64_t N, double eps, double *mean_out, double *rstd_out)
{
    double s = 0, v = 0;
    for (int64_t i = 0; i < N; i++) s += x[i];
    double mean = s / (double)N;
    for (int64_t i = 0; i < N; i++) {
        double d = (double)x[i] - mean;
        v += d * d;
    }
    double rstd = 1.0 / sqrt(v / (double)N + eps);
    *mean_out = mean;
    *rstd_out = rstd;
    TG_T m = (TG_T)mean, r = (TG_T)rstd;
    for (int64_t i = 0; i < N; i++) {
        TG_T xh = (x[i] - m) * r;
        if (gamma) xh *= gamma[i];
        y[i] = beta ? xh + beta[i] : xh;
    }
}

/* backward of one row, forward was y = xhat * gamma + beta, xhat = (x - mean) * rstd:
 *   g  = dy * gamma                      (dy without affine)
 *   dx += rstd * (g - mean(g) - xhat * mean(g * xhat))      (means in double) */
static void TG_F(ln_row_backward)(const TG_T *x, const TG_T *dy, TG_T *dx, const TG_T *gamma,
                                  int64_t N, double mean, double rstd, bool fresh)
{
    double sg = 0, sgx = 0;
    TG_T m = (TG_T)mean, r = (TG_T)rstd;
    for (int64_t i = 0; i < N; i++) {
        TG_T g = gamma ? dy[i] * gamma[i] : dy[i];
        TG_T xh = (x[i] - m) * r;
        sg += g;
        sgx += (double)g * (double)xh;
    }
    TG_T mg = (TG_T)(sg / (double)N), mgx = (TG_T)(sgx / (double)N);
    for (int64_t i = 0; i < N; i++) {
        TG_T g = gamma ? dy[i] * gamma[i] : dy[i];
        TG_T xh = (x[i] - m) * r;
        dx[i] = (fresh ? 0 : dx[i]) + r * (g - mg - xh * mgx);
    }
}

/* one row's share of the parameter gradients (double):
 *   acc_g[j] += dy[j] * xhat[j],  acc_b[j] += dy[j] */
static void TG_F(ln_row_param)(const TG_T *x, const TG_T *dy, double m, double rs, double *ag,
                               double *ab, int64_t N)
{
    for (int64_t j = 0; j < N; j++) {
        ag[j] += (double)dy[j] * (((double)x[j] - m) * rs);
        ab[j] += dy[j];
    }
}

static const TG_F(ln_rows) TG_F(ln_portable_rows) = {TG_F(ln_row_forward), TG_F(ln_row_backward),
                                                     TG_F(ln_row_param)};

typedef struct TG_F(ln_ctx) {
    tg_node *n;
    const TG_T *x, *gamma, *beta, *dy;   /* x, dy [R, N]; gamma, beta [N] or NULL */
    TG_T *y, *dx;                        /* [R, N] */
    double *mean, *rstd;                 /* [R] */
    double *acc_g;                       /* scratch: per row block, dgamma and dbeta sums
                                          * [blocks, 2, N] (the parameter pass) */
    int64_t R, N;
    double eps;
    bool fresh;                          /* backward: dx = 0 + ..., not read (tg_grad_fresh) */
    const TG_F(ln_rows) *rows;           /* the row functions */
} TG_F(ln_ctx);

static void TG_F(ln_forward_rows)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(ln_ctx) *c = vctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++)
        c->rows->forward(c->x + r * c->N, c->y + r * c->N, c->gamma, c->beta, c->N, c->eps,
                         &c->mean[r], &c->rstd[r]);
}

static void TG_F(ln_backward_rows)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(ln_ctx) *c = vctx;
    (void)tid;
    for (int64_t r = begin; r < end; r++)
        c->rows->backward(c->x + r * c->N, c->dy + r * c->N, c->dx + r * c->N, c->gamma, c->N,
                          c->mean[r], c->rstd[r], c->fresh);
}

/* Row block k (LN_PARAM_ROWS rows) of the parameter gradients' sums, into its
 * own partials acc_g + 2 N k (dgamma) and + N (dbeta):
 *   sum_r dy[r, j] * xhat[r, j]  and  sum_r dy[r, j]  (double)
 * The blocks are fixed by R alone, so the result does not depend on threads. */
static void TG_F(ln_param_blocks)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(ln_ctx) *c = vctx;
    const int64_t N = c->N;
    (void)tid;
    for (int64_t k = begin; k < end; k++) {
        double *ag = c->acc_g + 2 * N * k, *ab = ag + N;
        for (int64_t j = 0; j < N; j++) ag[j] = ab[j] = 0;
        const int64_t r1 = (k + 1) * LN_PARAM_ROWS < c->R ? (k + 1) * LN_PARAM_ROWS : c->R;
        for (int64_t r = k * LN_PARAM_ROWS; r < r1; r++) {
            const TG_T *x = c->x + r * N, *dy = c->dy + r * N;
            double m = c->mean[r], rs = c->rstd[r];
            c->rows->param(x, dy, m, rs, ag, ab, N);
        }
    }
}

/* The blocks' partial sums added up in block order (acc_g [blocks, 2, N]):
 *   dgamma[j] += sum_k acc_g[k, 0, j],  dbeta[j] += sum_k acc_g[k, 1, j]
 * (each NULL when not wanted). */
static void TG_F(ln_param_sums)(void *vdg, void *vdbeta, const double *acc_g, int64_t blocks,
                                int64_t N)
{
    TG_T *dg = vdg, *dbeta = vdbeta;
    for (int64_t j = 0; j < N; j++) {
        double sg = 0, sb = 0;
        for (int64_t k = 0; k < blocks; k++) {
            sg += acc_g[2 * N * k + j];
            sb += acc_g[2 * N * k + N + j];
        }
        if (dg) dg[j] += (TG_T)sg;
        if (dbeta) dbeta[j] += (TG_T)sb;
    }
}

static void TG_F(ln_forward)(tg_node *n, int wi, int bi, double eps, const void *rows)
{
    const tg_tensor *x = &n->in[0]->value;
    TG_F(ln_ctx) c = {.n = n, .x = x->data, .y = n->value.data,
                      .gamma = wi >= 0 ? n->in[wi]->value.data : NULL,
                      .beta = bi >= 0 ? n->in[bi]->value.data : NULL,
                      .mean = n->buf[0].data, .rstd = n->buf[1].data,
                      .R = n->buf[0].numel, .N = n->buf[0].numel ? x->numel / n->buf[0].numel : 0,
                      .eps = eps, .rows = rows ? rows : &TG_F(ln_portable_rows)};
    if (c.N == 0) return;
    tg_parallel_for(c.R, 1 + 16384 / c.N, TG_F(ln_forward_rows), &c);
}

static void TG_F(ln_backward)(tg_node *n, int wi, int bi, const void *rows)
{
    const tg_tensor *x = &n->in[0]->value;
    tg_node *w = wi >= 0 ? n->in[wi] : NULL, *b = bi >= 0 ? n->in[bi] : NULL;
    TG_F(ln_ctx) c = {.n = n, .x = x->data, .dy = n->grad.data,
                      .gamma = w ? w->value.data : NULL,
                      .mean = n->buf[0].data, .rstd = n->buf[1].data,
                      .R = n->buf[0].numel, .N = n->buf[0].numel ? x->numel / n->buf[0].numel : 0,
                      .rows = rows ? rows : &TG_F(ln_portable_rows)};
    if (c.N == 0) return;
    if (n->in[0]->requires_grad) {
        c.dx = n->in[0]->grad.data;
        c.fresh = tg_grad_fresh(n, 0);
        tg_parallel_for(c.R, 1 + 16384 / c.N, TG_F(ln_backward_rows), &c);
    }
    bool dw = w && w->requires_grad, db = b && b->requires_grad;
    if (!dw && !db) return;
    /* partial sums per block of rows, in parallel; then added up in block order */
    const int64_t blocks = (c.R + LN_PARAM_ROWS - 1) / LN_PARAM_ROWS;
    c.acc_g = tg_graph_scratch(n->graph);   /* [blocks, 2, N] */
    tg_parallel_for(blocks, 1 + 65536 / (LN_PARAM_ROWS * c.N), TG_F(ln_param_blocks), &c);
    TG_F(ln_param_sums)(dw ? w->grad.data : NULL, db ? b->grad.data : NULL, c.acc_g, blocks, c.N);
}

#endif
