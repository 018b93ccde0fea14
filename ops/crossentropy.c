/*
 * crossentropy.c - F.cross_entropy on logits, class-index and class-probability
 * targets, weights, ignore_index, label smoothing (OPS.md section 15).
 *
 * The input is seen as [B, C, inner] (B = N, or 1 for a 1-d input; inner =
 * d1 * ... * dK); sample s = b * inner + k has its C logits `inner` apart.
 * Per sample the forward keeps lse = max + log(sum exp(x - max)) (double) so
 * that lp[c] = x[c] - lse and p[c] = exp(lp[c]) can be rebuilt in the
 * backward. Samples run in parallel; the reduction over samples is a serial
 * double sum, so results do not depend on the thread count.
 * Not here: nll_loss on log-probabilities, multi-target / soft labels with
 * ignore_index, a gradient for the class weights.
 *
 * Reading order (engine/generic.h): the builder with its shape checks, the
 * forward, the backward, the descriptor and registry row, then the portable
 * kernels for float and double at the end of the file.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "ops_internal.h"
#include "crossentropy.h"
#include "generic.h"

typedef struct {
    tg_reduction red;
    int64_t      ignore_index;
    double       smoothing;
    bool         probs;          /* probability targets */
    int          wi;             /* input index of weight, -1 when absent */
    int64_t      C, inner, S;    /* classes, d1*...*dK, samples */
} ce_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static tg_status, ce_forward, (tg_node *n));
TG_KERNEL_DECL(static tg_status, ce_backward, (tg_node *n));

static const tg_op op_cross_entropy;   /* the descriptor, after the backward */

/* ---- builder ---- */

/* PyTorch's scalar type names, for its messages */
static const char *torch_type(tg_dtype dt)
{
    switch (dt) {
    case TG_F32: return "Float";
    case TG_F64: return "Double";
    case TG_I64: return "Long";
    default:     return "Bool";
    }
}

/* class-index target shape: () for (C), (N) for (N, C), (N, d1..dK) for (N, C, d1..dK) */
static bool check_index_target(tg_graph *g, const tg_tensor *x, const tg_tensor *t)
{
    char a[160], b[160];
    if (x->rank == 1) {
        if (t->rank == 0) return true;
        if (t->rank == 1)
            tg_graph_fail(g, "cross_entropy: size mismatch (got input: %s, target: %s)",
                          TG__SHAPE(x, a), TG__SHAPE(t, b));
        else
            tg_graph_fail(g, "cross_entropy: 0D or 1D target tensor expected, multi-target not "
                          "supported (target shape %s)", TG__SHAPE(t, b));
        return false;
    }
    if (x->rank == 2 && t->rank > 1) {
        tg_graph_fail(g, "cross_entropy: 0D or 1D target tensor expected, multi-target not "
                      "supported (input %s, target %s)", TG__SHAPE(x, a), TG__SHAPE(t, b));
        return false;
    }
    if (t->rank >= 1 && t->shape[0] != x->shape[0]) {
        tg_graph_fail(g, "cross_entropy: Expected input batch_size (%lld) to match target "
                      "batch_size (%lld).", (long long)x->shape[0], (long long)t->shape[0]);
        return false;
    }
    int64_t want[TG_MAX_RANK];
    want[0] = x->shape[0];
    for (int d = 2; d < x->rank; d++) want[d - 1] = x->shape[d];
    bool ok = t->rank == x->rank - 1;
    for (int d = 0; ok && d < t->rank; d++) ok = t->shape[d] == want[d];
    if (!ok)
        tg_graph_fail(g, "cross_entropy: Expected target size %s, got %s",
                      tg_shape_str(x->rank - 1, want, a, sizeof a), TG__SHAPE(t, b));
    return ok;
}

tg_node *tg_cross_entropy(tg_graph *g, tg_node *input, tg_node *target, tg_node *weight,
                          int64_t ignore_index, tg_reduction reduction, double label_smoothing)
{
    tg_node *in[3] = {input, target, weight};
    int n_in = weight ? 3 : 2;
    char a[160], b[160];
    if (!tg_builder_check(g, "cross_entropy", n_in, in)) return NULL;
    if (!tg__want_float(g, "cross_entropy", input, "input")) return NULL;
    const tg_tensor *x = &input->value, *t = &target->value;
    if (x->rank == 0)
        return tg_graph_fail(g, "cross_entropy: input must have at least 1 dimension (the "
                             "classes), got a 0-d tensor");
    if ((unsigned)reduction >= TG_REDUCTION_COUNT)
        return tg_graph_fail(g, "cross_entropy: %d is not a valid value for reduction",
                             (int)reduction);
    if (!(label_smoothing >= 0 && label_smoothing <= 1))
        return tg_graph_fail(g, "cross_entropy: label_smoothing must be between 0.0 and 1.0. "
                             "Got: %g", label_smoothing);
    ce_attr at = {.red = reduction, .ignore_index = ignore_index, .smoothing = label_smoothing,
                  .wi = weight ? 2 : -1};
    at.C = x->rank == 1 ? x->shape[0] : x->shape[1];
    at.inner = 1;
    for (int d = 2; d < x->rank; d++) at.inner *= x->shape[d];
    at.S = at.C ? x->numel / at.C : (x->rank == 1 ? 1 : x->shape[0] * at.inner);
    at.probs = tg_tensor_same_shape(x, t);
    if (at.probs && !tg_dtype_is_float(t->dtype))
        return tg_graph_fail(g, "cross_entropy: Expected floating point type for target with "
                             "class probabilities, got %s", torch_type(t->dtype));
    if (at.probs && !tg__want_float(g, "cross_entropy", target, "target")) return NULL;
    if (!at.probs && t->dtype != TG_I64)
        return tg_graph_fail(g, "cross_entropy: expected scalar type Long but found %s (class "
                             "indices must be int64; class probabilities must have the input's "
                             "shape %s, got %s)", torch_type(t->dtype), TG__SHAPE(x, a),
                             TG__SHAPE(t, b));
    if (!at.probs && !check_index_target(g, x, t)) return NULL;
    if (weight) {
        const tg_tensor *w = &weight->value;
        if (!tg__want_float(g, "cross_entropy", weight, "weight")) return NULL;
        if (w->rank != 1 || w->shape[0] != at.C)
            return tg_graph_fail(g, "cross_entropy: weight tensor should be defined either for "
                                 "all %lld classes or no classes but got weight tensor of shape: "
                                 "%s", (long long)at.C, TG__SHAPE(w, a));
        if (weight->requires_grad)
            return tg_graph_fail(g, "cross_entropy: not differentiable with respect to argument "
                                 "'weight'. This input cannot have requires_grad True.");
    }
    if (at.probs && ignore_index >= 0)
        return tg_graph_fail(g, "cross_entropy: ignore_index is not supported for floating point "
                             "target (got ignore_index %lld; use a negative value)",
                             (long long)ignore_index);
    /* 'none': one loss per sample, shaped like the index target / input without dim 1 */
    int64_t oshape[TG_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != (x->rank == 1 ? 0 : 1)) oshape[orank++] = x->shape[d];
    if (reduction != TG_REDUCTION_NONE) orank = 0;
    tg_node *n = tg_node_new(g, &op_cross_entropy, n_in, in, x->dtype, orank, oshape);
    ce_attr *attr = n ? tg_node_attr(n, sizeof *attr) : NULL;
    if (!attr) return NULL;
    *attr = at;
    /* saved: lse per sample [S], and W (the 'mean' divisor) [] */
    if (tg_node_buffer(n, TG_F64, 1, (int64_t[]){at.S}) < 0 || tg_node_buffer(n, TG_F64, 0, NULL) < 0)
        return NULL;
    tg_node_scratch(n, (size_t)at.S * sizeof(double));   /* per-sample losses */
    return n;
}

/* ---- forward ---- */

static tg_status ce_forward(tg_node *n)
{
    const ce_attr *a = n->attr;
    if (a->wi >= 0 && n->in[a->wi]->requires_grad)   /* marked after the build */
        return tg_set_error(TG_ERR_INVALID, "cross_entropy: not differentiable with respect to "
                            "argument 'weight'. This input cannot have requires_grad True.");
    return TG_DISPATCH(n->value.dtype, ce_forward)(n);
}

/* ---- backward ---- */

static tg_status ce_backward(tg_node *n) { return TG_DISPATCH(n->value.dtype, ce_backward)(n); }

/* ---- descriptor ---- */

static void ce_describe(const tg_node *n, char *buf, size_t len)
{
    const ce_attr *a = n->attr;
    snprintf(buf, len, "reduction=%s%s ignore_index=%lld label_smoothing=%g%s",
             tg_reduction_name(a->red), a->probs ? " probabilities" : "",
             (long long)a->ignore_index, a->smoothing, a->wi >= 0 ? " weighted" : "");
}

/* FLOPs: 5 per logit (a log_softmax, then the picks and the mean; engine/cost.h) */
static double ce_flops(const tg_node *n) { return tg__flops_per_in0(n, 5); }

static const tg_op op_cross_entropy = {.name = "cross_entropy", .forward = ce_forward,
                                       .backward = ce_backward, .describe = ce_describe,
                                       .flops = ce_flops};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_cross_entropy)
{
    tg_reduction r;
    if (tg__op_reduction(g, c, &r)) return TG_ERR_INVALID;
    return TG_GLUE_ONE(tg_cross_entropy(g, in[0], in[1], n_in > 2 ? in[2] : NULL,
                                tg__op_int(c, "ignore_index"), r, tg__op_f(c, "label_smoothing")));
}

/* cross_entropy class indices: uniform in [0, C), C = input.size(1) (size(0) for a 1-d input). */
static tg_status gen_class(const tg_op_call *c, int i, const tg_tensor *const *in, tg_tensor *t,
                           tg_rng *rng)
{
    (void)c, (void)i;
    const tg_tensor *x = in[0];
    int64_t C = x->rank == 0 ? 0 : x->shape[x->rank == 1 ? 0 : 1];
    if (C <= 0) return tg_set_error(TG_ERR_INVALID, "the input has no classes to draw from");
    int64_t *v = t->data;
    for (int64_t k = 0; k < t->numel; k++) v[k] = (int64_t)tg_rng_below(rng, (uint64_t)C);
    return TG_OK;
}

const tg_op_def tg__crossentropy_ops[] = {
    {"cross_entropy", "F.cross_entropy(input, target, weight=None, ...) on logits",
     {{"ignore_index", TG_OP_INT, "-100", false,
       "a class index target that counts for nothing", NULL, 0},
      {"reduction", TG_OP_STRING, "mean", false, "none, mean or sum", NULL, 0},
      {"label_smoothing", TG_OP_FLOAT, "0.0", false,
       "mix of the target with uniform, in [0, 1]", NULL, 0}},
     false, {TG_IN("input"), {"target", TG_OP_IN_TARGET, 0}, {"weight", TG_OP_IN_CONST, 0}}, 2,
     false, 1, b_cross_entropy, gen_class,
     "cross_entropy label_smoothing=0.1 --in x.npy --in target.npy --out loss.npy",
     &op_cross_entropy, NULL,
     "label_smoothing=0.1;[4,5];i64[4]", "[4,5];i64[3]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "crossentropy.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

typedef struct TG_F(ce_ctx) {
    const ce_attr *a;
    const TG_T *x;            /* [B, C, inner] logits */
    const TG_T *t;            /* [B, C, inner] probability targets, or NULL */
    const int64_t *y;         /* [B, inner] class targets, or NULL */
    const TG_T *w;            /* [C] or NULL (all ones) */
    double *lse;              /* [S] saved */
    double *loss;             /* [S] scratch: per-sample losses */
    const TG_T *dy;           /* [S] ('none') or [] */
    TG_T *dx, *dt;            /* like x; NULL when not wanted */
    int64_t C, inner;
    double g;                 /* 'sum'/'mean': dy[0] (/ W or / S) */
    double sumw;              /* sum_c w[c] */
} TG_F(ce_ctx);

#define W_(c) (ctx->w ? (double)ctx->w[c] : 1.0)

/* forward of one sample, with lp[c] = x[c] - lse:
 *   indices:        loss = (1 - eps) * (-w[y] lp[y]) + eps/C * (-sum_c w[c] lp[c]);  0 if ignored
 *   probabilities:  loss = -sum_c w[c] tt[c] lp[c],   tt = (1 - eps) t + eps/C */
static void TG_F(ce_forward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(ce_ctx) *ctx = vctx;
    const int64_t C = ctx->C, in = ctx->inner;
    const double eps = ctx->a->smoothing;
    (void)tid;
    for (int64_t s = begin; s < end; s++) {
        int64_t base = (s / in) * C * in + s % in;
        const TG_T *x = ctx->x + base;
        double m = -INFINITY, se = 0;
        for (int64_t c = 0; c < C; c++)
            if (x[c * in] > m) m = x[c * in];
        for (int64_t c = 0; c < C; c++) se += exp((double)x[c * in] - m);
        double lse = C ? m + log(se) : 0, loss = 0;
        if (isnan(se)) lse = NAN;   /* a NaN logit */
        ctx->lse[s] = lse;
        if (ctx->y) {
            int64_t yv = ctx->y[s];
            if (yv != ctx->a->ignore_index) {
                loss = (1 - eps) * -W_(yv) * ((double)x[yv * in] - lse);
                if (eps > 0) {
                    double sm = 0;
                    for (int64_t c = 0; c < C; c++) sm -= W_(c) * ((double)x[c * in] - lse);
                    loss += eps / (double)C * sm;
                }
            }
        } else {
            const TG_T *t = ctx->t + base;
            for (int64_t c = 0; c < C; c++)
                loss -= W_(c) * ((1 - eps) * t[c * in] + eps / (double)C) * ((double)x[c * in] - lse);
        }
        ctx->loss[s] = loss;
    }
}

/* backward of one sample, g = dy[s] ('none') or the scaled scalar, p = exp(lp):
 *   indices (not ignored):
 *     dx[c] += g * ((1 - eps) w[y] (p[c] - [c == y]) + eps/C (p[c] sum_c' w[c'] - w[c]))
 *   probabilities:
 *     dx[c] += g * (p[c] sum_c' w[c'] tt[c'] - w[c] tt[c])
 *     dt[c] += g * -(1 - eps) w[c] lp[c]          (d tt[c] / d t[c] = 1 - eps) */
static void TG_F(ce_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(ce_ctx) *ctx = vctx;
    const int64_t C = ctx->C, in = ctx->inner;
    const double eps = ctx->a->smoothing;
    (void)tid;
    for (int64_t s = begin; s < end; s++) {
        int64_t base = (s / in) * C * in + s % in;
        const TG_T *x = ctx->x + base;
        double g = ctx->a->red == TG_REDUCTION_NONE ? (double)ctx->dy[s] : ctx->g;
        double lse = ctx->lse[s];
        if (ctx->y) {
            int64_t yv = ctx->y[s];
            if (yv == ctx->a->ignore_index || !ctx->dx) continue;
            TG_T *dx = ctx->dx + base;
            double wy = (1 - eps) * W_(yv);
            for (int64_t c = 0; c < C; c++) {
                double p = exp((double)x[c * in] - lse);
                double d = wy * (p - (c == yv)) + eps / (double)C * (p * ctx->sumw - W_(c));
                dx[c * in] += (TG_T)(g * d);
            }
        } else {
            const TG_T *t = ctx->t + base;
            double st = 0;
            for (int64_t c = 0; c < C; c++) st += W_(c) * ((1 - eps) * t[c * in] + eps / (double)C);
            for (int64_t c = 0; c < C; c++) {
                double lp = (double)x[c * in] - lse;
                double tt = (1 - eps) * t[c * in] + eps / (double)C;
                if (ctx->dx) ctx->dx[base + c * in] += (TG_T)(g * (exp(lp) * st - W_(c) * tt));
                if (ctx->dt) ctx->dt[base + c * in] += (TG_T)(g * -(1 - eps) * W_(c) * lp);
            }
        }
    }
}

#undef W_

static TG_F(ce_ctx) TG_F(ce_setup)(tg_node *n)
{
    const ce_attr *a = n->attr;
    TG_F(ce_ctx) c = {.a = a, .x = n->in[0]->value.data, .lse = n->buf[0].data,
                      .loss = tg_graph_scratch(n->graph), .C = a->C, .inner = a->inner};
    if (a->probs) c.t = n->in[1]->value.data;
    else c.y = n->in[1]->value.data;
    if (a->wi >= 0) c.w = n->in[a->wi]->value.data;
    c.sumw = 0;
    for (int64_t k = 0; k < a->C; k++) c.sumw += c.w ? (double)c.w[k] : 1.0;
    return c;
}

static tg_status TG_F(ce_forward)(tg_node *n)
{
    TG_F(ce_ctx) c = TG_F(ce_setup)(n);
    const ce_attr *a = n->attr;
    double W = 0;   /* sum of w[y] over the non-ignored samples (index targets) */
    if (c.y) {
        for (int64_t s = 0; s < a->S; s++) {
            int64_t yv = c.y[s];
            if (yv == a->ignore_index) continue;
            if (yv < 0 || yv >= a->C)
                return tg_set_error(TG_ERR_INVALID, "cross_entropy: Target %lld is out of bounds. "
                                    "(sample %lld; classes [0, %lld), ignore_index %lld)",
                                    (long long)yv, (long long)s, (long long)a->C,
                                    (long long)a->ignore_index);
            W += c.w ? (double)c.w[yv] : 1.0;
        }
    } else {
        W = (double)a->S;
    }
    *(double *)n->buf[1].data = W;
    tg_parallel_for(a->S, 1 + 4096 / (a->C ? a->C : 1), TG_F(ce_forward_range), &c);
    TG_T *out = n->value.data;
    if (a->red == TG_REDUCTION_NONE) {
        for (int64_t s = 0; s < a->S; s++) out[s] = (TG_T)c.loss[s];
    } else {
        double sum = 0;
        for (int64_t s = 0; s < a->S; s++) sum += c.loss[s];
        out[0] = (TG_T)(a->red == TG_REDUCTION_MEAN ? sum / W : sum);   /* 0/0 = NaN */
    }
    return TG_OK;
}

static tg_status TG_F(ce_backward)(tg_node *n)
{
    TG_F(ce_ctx) c = TG_F(ce_setup)(n);
    const ce_attr *a = n->attr;
    c.dy = n->grad.data;
    c.dx = n->in[0]->requires_grad ? n->in[0]->grad.data : NULL;
    c.dt = a->probs && n->in[1]->requires_grad ? n->in[1]->grad.data : NULL;
    if (a->red != TG_REDUCTION_NONE) {
        c.g = (double)c.dy[0];
        if (a->red == TG_REDUCTION_MEAN) c.g /= *(const double *)n->buf[1].data;
    }
    tg_parallel_for(a->S, 1 + 4096 / (a->C ? a->C : 1), TG_F(ce_backward_range), &c);
    return TG_OK;
}

#endif
