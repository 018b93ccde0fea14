/*
 * batchnorm.c - F.batch_norm / nn.BatchNorm1d over the channel axis (see
 * batchnorm.h for what it computes and when the running statistics move).
 *
 * x is seen as [N, C, L] (L = 1 for a 2-d x). Channels are independent, so
 * one channel function per pass, called for blocks of channels through
 * tg_parallel_for: each channel's sums are taken in a fixed order (n, then
 * l, in double), and a channel writes only its own outputs (y, dx of its
 * elements, its running statistics, dweight[c], dbias[c]), so the results do
 * not depend on the thread count. The forward saves the per-channel mean and
 * rstd (double) it used (the batch's in training, the running ones in eval)
 * and the mode, so the backward always matches the forward that ran.
 *
 * Reading order (engine/generic.h): builder, forward, backward, the
 * descriptor and registry row, then the portable kernels for float and
 * double at the end. Not here: momentum=None, track_running_stats=False,
 * SIMD kernels (BatchNorm is a small part of PatchTST's step).
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <math.h>
#include <stdio.h>

#include "ops_internal.h"
#include "batchnorm.h"
#include "generic.h"

typedef struct {
    int    wi, bi, ni;       /* input index of weight / bias / num_batches_tracked, -1: absent */
    double momentum, eps;
    bool   trained;          /* set by each forward: batch statistics were used */
} bn_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, bn_forward_run, (tg_node *n, const bn_attr *a));
TG_KERNEL_DECL(static void, bn_backward_run, (tg_node *n, const bn_attr *a));

static const tg_op op_batch_norm;   /* the descriptor, after the backward */

/* ---- builder ---- */

/* running_mean, running_var, weight, bias: float, 1-d, C elements */
static bool bn_check_channel(tg_graph *g, tg_node *p, const char *what, int64_t C)
{
    char a[160];
    if (!p) return true;
    if (!tg__want_float(g, "batch_norm", p, what)) return false;
    if (what[0] == 'r' && p->kind == TG_NODE_OP) {   /* a running statistic */
        tg_graph_fail(g, "batch_norm: %s must be a leaf (a buffer, an input or a constant), got "
                      "the result of %s: a training-mode forward updates it in place", what,
                      p->op->name);
        return false;
    }
    if (p->value.rank != 1 || p->value.shape[0] != C) {
        if (p->value.rank == 1)
            tg_graph_fail(g, "batch_norm: %s should contain %lld elements not %lld", what,
                          (long long)C, (long long)p->value.shape[0]);
        else
            tg_graph_fail(g, "batch_norm: %s should be 1-d with %lld elements (one per channel), "
                          "got shape %s", what, (long long)C, TG__SHAPE(&p->value, a));
        return false;
    }
    return true;
}

/* x 2-d or 3-d float; num_batches_tracked one int64; eps, momentum in range */
static bool bn_check_args(tg_graph *g, tg_node *x, tg_node *nbt, double momentum, double eps)
{
    char a[160];
    if (!tg__want_float(g, "batch_norm", x, "input")) return false;
    if (x->value.rank != 2 && x->value.rank != 3) {
        tg_graph_fail(g, "batch_norm: expected 2D or 3D input (got %dD input of shape %s; "
                      "BatchNorm1d normalises x (N, C) or (N, C, L) over channel axis 1)",
                      x->value.rank, TG__SHAPE(&x->value, a));
        return false;
    }
    if (nbt && (nbt->value.dtype != TG_I64 || nbt->value.numel != 1 || nbt->kind == TG_NODE_OP)) {
        tg_graph_fail(g, "batch_norm: num_batches_tracked must be an int64 leaf of one element "
                      "(PyTorch's torch.tensor(0, dtype=torch.long)), got %s %s%s",
                      tg_dtype_name(nbt->value.dtype), TG__SHAPE(&nbt->value, a),
                      nbt->kind == TG_NODE_OP ? " computed by an op" : "");
        return false;
    }
    if (!(eps > 0) || !isfinite(eps)) {
        tg_graph_fail(g, "batch_norm: eps must be positive and finite, got %g (PyTorch's default "
                      "is 1e-5)", eps);
        return false;
    }
    if (!(momentum >= 0 && momentum <= 1)) {
        tg_graph_fail(g, "batch_norm: momentum must be in [0, 1], got %g (PyTorch's default is "
                      "0.1; momentum=None, the cumulative average, is not supported)", momentum);
        return false;
    }
    return true;
}

tg_node *tg_batch_norm(tg_graph *g, tg_node *x, tg_node *running_mean, tg_node *running_var,
                       tg_node *weight, tg_node *bias, tg_node *num_batches_tracked,
                       double momentum, double eps)
{
    tg_node *in[6] = {x, running_mean, running_var};
    int n_in = 3;
    bn_attr at = {.wi = -1, .bi = -1, .ni = -1, .momentum = momentum, .eps = eps};
    if (!tg_builder_check(g, "batch_norm", 3, in)) return NULL;   /* the required three */
    if (weight) at.wi = n_in, in[n_in++] = weight;
    if (bias) at.bi = n_in, in[n_in++] = bias;
    if (num_batches_tracked) at.ni = n_in, in[n_in++] = num_batches_tracked;
    if (!tg_builder_check(g, "batch_norm", n_in, in)) return NULL;
    if (!bn_check_args(g, x, num_batches_tracked, momentum, eps)) return NULL;
    const tg_tensor *v = &x->value;
    const int64_t C = v->shape[1];
    if (!bn_check_channel(g, running_mean, "running_mean", C) ||
        !bn_check_channel(g, running_var, "running_var", C) ||
        !bn_check_channel(g, weight, "weight", C) || !bn_check_channel(g, bias, "bias", C))
        return NULL;
    tg_node *n = tg_node_new(g, &op_batch_norm, n_in, in, v->dtype, v->rank, v->shape);
    bn_attr *attr = n ? tg_node_attr(n, sizeof *attr) : NULL;
    if (!attr) return NULL;
    *attr = at;
    /* saved for backward: the mean and rstd each channel was normalised with, [C] */
    if (tg_node_buffer(n, TG_F64, 1, &C) < 0 || tg_node_buffer(n, TG_F64, 1, &C) < 0) return NULL;
    return n;
}

/* ---- forward and backward ---- */

static tg_status bn_forward(tg_node *n)
{
    bn_attr *a = n->attr;
    const tg_tensor *x = &n->in[0]->value;
    const int64_t M = x->numel / (x->shape[1] ? x->shape[1] : 1);   /* N * L */
    a->trained = tg_graph_training(n->graph);
    if (a->trained && M == 1) {
        char s[160];
        return tg_set_error(TG_ERR_SHAPE, "batch_norm: Expected more than 1 value per channel "
                            "when training, got input size %s (use a batch of 2 or more, or eval "
                            "mode)", TG__SHAPE(x, s));
    }
    TG_DISPATCH(n->value.dtype, bn_forward_run)(n, a);
    /* num_batches_tracked += 1, once per training forward */
    if (a->trained && a->ni >= 0 && M > 0) ((int64_t *)n->in[a->ni]->value.data)[0] += 1;
    return TG_OK;
}

static tg_status bn_backward(tg_node *n)
{
    TG_DISPATCH(n->value.dtype, bn_backward_run)(n, n->attr);
    return TG_OK;
}

/* ---- descriptor ---- */

static void bn_describe(const tg_node *n, char *buf, size_t len)
{
    const bn_attr *a = n->attr;
    snprintf(buf, len, "momentum=%g eps=%g%s", a->momentum, a->eps,
             a->wi < 0 && a->bi < 0 ? " no affine" : "");
}

/* FLOPs (engine/cost.h): 5 per element (mean, variance, normalise), plus 1
 * each for the affine weight and bias */
static double bn_flops(const tg_node *n)
{
    const bn_attr *a = n->attr;
    return (double)n->value.numel * (5.0 + (a->wi >= 0) + (a->bi >= 0));
}

/* ONNX: BatchNormalization with the running statistics (inference, training_mode 0);
 * without a weight (or bias) a ones (zeros) [C] stands in. */
static tg_status bn_onnx(const tg_node *n, struct tg_onnx *m)
{
    const bn_attr *a = n->attr;
    const int64_t C = n->value.rank > 1 ? n->value.shape[1] : 1;
    if (tg_graph_training(n->graph))
        return tg__onnx_fail(m, TG_ERR_INVALID, "onnx export: batch_norm in training mode (batch "
                             "statistics) has no inference form: build the graph in eval mode");
    const char *wb[2];
    for (int k = 0; k < 2; k++) {
        int idx = k ? a->bi : a->wi;
        if (idx >= 0) {
            wb[k] = tg__onnx_in(m, n, idx);
            continue;
        }
        wb[k] = tg__onnx_tmp(m, n, k ? "bias" : "weight");
        TG__ONNX_NODE(m, "Expand", wb[k], tg__onnx_const_scalar(m, n->value.dtype, k ? 0 : 1),
                      tg__onnx_const_i64(m, 1, &C));
    }
    TG__ONNX_NODE(m, "BatchNormalization", tg__onnx_value(m, n), tg__onnx_in(m, n, 0), wb[0],
                  wb[1], tg__onnx_in(m, n, 1), tg__onnx_in(m, n, 2));
    tg__onnx_attr_float(m, "epsilon", a->eps);
    return tg__onnx_status(m);
}

static const tg_op op_batch_norm = {.name = "batch_norm", .forward = bn_forward,
                                    .backward = bn_backward, .describe = bn_describe,
                                    /* reads x and the saved mean, rstd; never recomputed:
                                     * a training forward moves the running statistics */
                                    .flags = TG_OP_BWD_NO_OUTPUT, .flops = bn_flops, .onnx = bn_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_batch_norm)
{
    tg_graph_set_training(g, tg__op_bool(c, "training"));
    return TG_GLUE_ONE(tg_batch_norm(g, in[0], in[1], in[2], n_in > 3 ? in[3] : NULL,
                                     n_in > 4 ? in[4] : NULL, NULL, tg__op_f(c, "momentum"),
                                     tg__op_f(c, "eps")));
}

const tg_op_def tg__batchnorm_ops[] = {
    {"batch_norm", "F.batch_norm(input, running_mean, running_var, weight=None, bias=None, "
                   "training=False, momentum=0.1, eps=1e-5)",
     {{"training", TG_OP_BOOL, "false", false,
       "true: batch statistics, and the running ones move by momentum", NULL, 0},
      {"momentum", TG_OP_FLOAT, "0.1", false, "weight of the batch in the running statistics",
       NULL, 0},
      {"eps", TG_OP_FLOAT, "1e-5", false, "added to the variance", NULL, 0}},
     false,
     {TG_IN("input"), {"running_mean", TG_OP_IN_CONST, TG_OP_GEN_NORMAL},
      {"running_var", TG_OP_IN_CONST, TG_OP_GEN_POSITIVE}, TG_IN("weight"), TG_IN("bias")},
     3, false, 1, b_batch_norm, NULL,
     "batch_norm training=true --in x.npy --in mean.npy --in var.npy --in w.npy --in b.npy "
     "--out y.npy",
     &op_batch_norm, NULL, "training=true;[4,3,5];[3];[3];[3];[3]", "momentum=1.5;[4,3];[3];[3]",
     "input (N, C) or (N, C, L), statistics per channel (axis 1); running_mean and running_var "
     "are updated in place in training mode (not an output of `tgraph op`)"},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "batchnorm.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

typedef struct TG_F(bn_ctx) {
    const TG_T *x, *w, *b, *dy;   /* x, dy [N, C, L]; w, b [C] or NULL */
    TG_T *y, *dx;                 /* [N, C, L]; dx NULL when not wanted */
    TG_T *rm, *rv;                /* running statistics [C] */
    TG_T *dw, *db;                /* [C] or NULL */
    double *mean, *rstd;          /* saved [C] */
    int64_t N, C, L;
    double momentum, eps;
    bool training;
} TG_F(bn_ctx);

/* forward of channel c:
 *   training: mean = sum(x) / M, var = sum((x - mean)^2) / M (biased; double)
 *             running_mean = (1 - m) * running_mean + m * mean
 *             running_var  = (1 - m) * running_var + m * sum((x - mean)^2) / (M - 1)
 *   eval:     mean = running_mean, var = running_var
 *   rstd = 1 / sqrt(var + eps)
 *   y = x * alpha + beta,  alpha = rstd * weight, beta = bias - mean * alpha (PyTorch's form) */
static void TG_F(bn_forward_channel)(const TG_F(bn_ctx) *c, int64_t ch)
{
    const int64_t N = c->N, C = c->C, L = c->L, M = N * L;
    double mean, var;
    if (c->training) {
        double s = 0, v = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++) s += c->x[(n * C + ch) * L + l];
        mean = s / (double)M;
        for (int64_t n = 0; n < N; n++)
            for (int64_t l = 0; l < L; l++) {
                double d = (double)c->x[(n * C + ch) * L + l] - mean;
                v += d * d;
            }
        var = v / (double)M;
        c->rm[ch] = (TG_T)(c->momentum * mean + (1 - c->momentum) * (double)c->rm[ch]);
        c->rv[ch] = (TG_T)(c->momentum * (v / (double)(M - 1)) +
                           (1 - c->momentum) * (double)c->rv[ch]);
    } else {
        mean = c->rm[ch];
        var = c->rv[ch];
    }
    const double rstd = 1.0 / sqrt(var + c->eps);
    c->mean[ch] = mean;
    c->rstd[ch] = rstd;
    const double alpha = c->w ? rstd * (double)c->w[ch] : rstd;
    const TG_T al = (TG_T)alpha, be = (TG_T)((c->b ? (double)c->b[ch] : 0.0) - mean * alpha);
    for (int64_t n = 0; n < N; n++) {
        const TG_T *x = c->x + (n * C + ch) * L;
        TG_T *y = c->y + (n * C + ch) * L;
        for (int64_t l = 0; l < L; l++) y[l] = x[l] * al + be;
    }
}

/* backward of channel c, forward was y = xhat * weight + bias, xhat = (x - mean) * rstd:
 *   dbias   += sum(dy),  dweight += sum(dy * xhat)                  (double)
 *   training: dx += rstd * weight * (dy - sum(dy) / M - xhat * sum(dy * xhat) / M)
 *   eval:     dx += rstd * weight * dy     (mean, rstd are constants there) */
static void TG_F(bn_backward_channel)(const TG_F(bn_ctx) *c, int64_t ch)
{
    const int64_t N = c->N, C = c->C, L = c->L, M = N * L;
    const double mean = c->mean[ch], rstd = c->rstd[ch];
    double sdy = 0, sdyx = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t l = 0; l < L; l++) {
            const int64_t i = (n * C + ch) * L + l;
            sdy += c->dy[i];
            sdyx += (double)c->dy[i] * (((double)c->x[i] - mean) * rstd);
        }
    if (c->dw) c->dw[ch] += (TG_T)sdyx;
    if (c->db) c->db[ch] += (TG_T)sdy;
    if (!c->dx) return;
    const double k = c->w ? rstd * (double)c->w[ch] : rstd;
    const double mdy = c->training ? sdy / (double)M : 0, mdyx = c->training ? sdyx / (double)M : 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t l = 0; l < L; l++) {
            const int64_t i = (n * C + ch) * L + l;
            const double xh = ((double)c->x[i] - mean) * rstd;
            c->dx[i] += (TG_T)(k * ((double)c->dy[i] - mdy - xh * mdyx));
        }
}

static void TG_F(bn_forward_channels)(void *vctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    for (int64_t ch = begin; ch < end; ch++) TG_F(bn_forward_channel)(vctx, ch);
}

static void TG_F(bn_backward_channels)(void *vctx, int64_t begin, int64_t end, int tid)
{
    (void)tid;
    for (int64_t ch = begin; ch < end; ch++) TG_F(bn_backward_channel)(vctx, ch);
}

/* The context of node n: x as [N, C, L], its inputs' data. */
static TG_F(bn_ctx) TG_F(bn_context)(tg_node *n, const bn_attr *a)
{
    const tg_tensor *x = &n->in[0]->value;
    TG_F(bn_ctx) c = {.x = x->data, .y = n->value.data, .rm = n->in[1]->value.data,
                      .rv = n->in[2]->value.data, .w = a->wi >= 0 ? n->in[a->wi]->value.data : NULL,
                      .b = a->bi >= 0 ? n->in[a->bi]->value.data : NULL,
                      .mean = n->buf[0].data, .rstd = n->buf[1].data, .N = x->shape[0],
                      .C = x->shape[1], .L = x->rank == 3 ? x->shape[2] : 1,
                      .momentum = a->momentum, .eps = a->eps, .training = a->trained};
    return c;
}

static void TG_F(bn_forward_run)(tg_node *n, const bn_attr *a)
{
    TG_F(bn_ctx) c = TG_F(bn_context)(n, a);
    const int64_t M = c.N * c.L;
    if (M == 0) return;   /* an empty batch: nothing to normalise, statistics unchanged */
    tg_parallel_for(c.C, 1 + 16384 / M, TG_F(bn_forward_channels), &c);
}

static void TG_F(bn_backward_run)(tg_node *n, const bn_attr *a)
{
    TG_F(bn_ctx) c = TG_F(bn_context)(n, a);
    tg_node *w = a->wi >= 0 ? n->in[a->wi] : NULL, *b = a->bi >= 0 ? n->in[a->bi] : NULL;
    const int64_t M = c.N * c.L;
    c.dy = n->grad.data;
    c.dx = n->in[0]->requires_grad ? n->in[0]->grad.data : NULL;
    c.dw = w && w->requires_grad ? w->grad.data : NULL;
    c.db = b && b->requires_grad ? b->grad.data : NULL;
    if (M == 0 || (!c.dx && !c.dw && !c.db)) return;
    tg_parallel_for(c.C, 1 + 16384 / M, TG_F(bn_backward_channels), &c);
}

#endif
