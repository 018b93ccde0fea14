/*
 * loss.c - mse_loss (OPS.md section 14).
 *
 * Reading order (engine/generic.h): builder, forward, backward, the
 * descriptor and registry row, then the portable kernels for float and
 * double at the end.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "ops_internal.h"
#include "loss.h"
#include "generic.h"

typedef struct { tg_reduction red; double scale; } mse_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, mse_forward, (tg_node *n, tg_reduction red, double scale));
TG_KERNEL_DECL(static void, mse_backward, (tg_node *n, tg_reduction red, double scale));

static const tg_op op_mse;   /* the descriptor, after the backward */

/* ---- builder ---- */

static const char *const reduction_names[TG_REDUCTION_COUNT] = {"mean", "sum", "none"};

const char *tg_reduction_name(tg_reduction r)
{
    return (unsigned)r < TG_REDUCTION_COUNT ? reduction_names[r] : "unknown";
}

tg_status tg_reduction_parse(const char *s, tg_reduction *out)
{
    for (int r = 0; r < TG_REDUCTION_COUNT; r++)
        if (s && strcmp(s, reduction_names[r]) == 0) {
            *out = (tg_reduction)r;
            return TG_OK;
        }
    return tg_set_error(TG_ERR_INVALID, "%s is not a valid value for reduction (mean, sum, none)",
                        s ? s : "(null)");
}

tg_node *tg_mse_loss(tg_graph *g, tg_node *input, tg_node *target, tg_reduction reduction)
{
    tg_node *in[2] = {input, target};
    char a[96], b[96];
    if (!tg_builder_check(g, "mse_loss", 2, in)) return NULL;
    if (!tg__want_float(g, "mse_loss", input, "input") ||
        !tg__want_float(g, "mse_loss", target, "target"))
        return NULL;
    if ((unsigned)reduction >= TG_REDUCTION_COUNT)
        return tg_graph_fail(g, "mse_loss: %d is not a valid value for reduction", (int)reduction);
    if (!tg_tensor_same_shape(&input->value, &target->value))
        return tg_graph_fail(g, "mse_loss: input shape %s and target shape %s differ (PyTorch "
                             "would broadcast them with a warning; tgraph requires equal shapes)",
                             TG__SHAPE(&input->value, a), TG__SHAPE(&target->value, b));
    const tg_tensor *v = &input->value;
    tg_node *n = reduction == TG_REDUCTION_NONE
                     ? tg_node_new(g, &op_mse, 2, in, v->dtype, v->rank, v->shape)
                     : tg_node_new(g, &op_mse, 2, in, v->dtype, 0, NULL);
    mse_attr *at = n ? tg_node_attr(n, sizeof *at) : NULL;
    if (!at) return NULL;
    at->red = reduction;
    at->scale = reduction == TG_REDUCTION_MEAN ? 1.0 / (double)v->numel : 1.0;
    return n;
}

/* ---- forward ---- */

static tg_status mse_forward(tg_node *n)
{
    const mse_attr *a = n->attr;
    TG_DISPATCH(n->value.dtype, mse_forward)(n, a->red, a->scale);
    return TG_OK;
}

/* ---- backward ---- */

static tg_status mse_backward(tg_node *n)
{
    const mse_attr *a = n->attr;
    TG_DISPATCH(n->value.dtype, mse_backward)(n, a->red, a->scale);
    return TG_OK;
}

/* ---- descriptor ---- */

static void reduction_describe(const tg_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "reduction=%s", tg_reduction_name(((const mse_attr *)n->attr)->red));
}

/* FLOPs: 3 per element (subtract, square, sum; engine/cost.h) */
static double mse_flops(const tg_node *n) { return tg__flops_per_in0(n, 3); }

static const tg_op op_mse = {.name = "mse_loss", .forward = mse_forward,
                             .backward = mse_backward, .describe = reduction_describe,
                             .flops = mse_flops};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_mse_loss)
{
    (void)n_in;
    tg_reduction r;
    if (tg__op_reduction(g, c, &r)) return TG_ERR_INVALID;
    return TG_GLUE_ONE(tg_mse_loss(g, in[0], in[1], r));
}

const tg_op_def tg__loss_ops[] = {
    {"mse_loss", "F.mse_loss(input, target, reduction='mean')",
     {{"reduction", TG_OP_STRING, "mean", false, "none, mean or sum", NULL, 0}}, false,
     {TG_IN("input"), TG_IN("target")}, 2, false, 1, b_mse_loss, NULL,
     "mse_loss reduction=sum --in y.npy --in t.npy --out loss.npy", &op_mse, NULL,
     "[3,4];[3,4]", "reduction=avg;[3];[3]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "loss.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* forward: d = x - t; 'none': y = d^2; 'sum'/'mean': y = scale * sum d^2 (double accumulation) */
static void TG_F(mse_forward)(tg_node *n, tg_reduction red, double scale)
{
    const TG_T *x = n->in[0]->value.data, *t = n->in[1]->value.data;
    TG_T *y = n->value.data;
    int64_t N = n->in[0]->value.numel;
    if (red == TG_REDUCTION_NONE) {
        for (int64_t i = 0; i < N; i++) y[i] = (x[i] - t[i]) * (x[i] - t[i]);
        return;
    }
    double s = 0;
    for (int64_t i = 0; i < N; i++) {
        double d = (double)x[i] - (double)t[i];
        s += d * d;
    }
    y[0] = (TG_T)(s * scale);
}

/* backward: dx += 2 d g',  dt -= 2 d g'  with g' = dy (none) or scale * dy (sum, mean) */
static void TG_F(mse_backward)(tg_node *n, tg_reduction red, double scale)
{
    const TG_T *x = n->in[0]->value.data, *t = n->in[1]->value.data, *dy = n->grad.data;
    TG_T *dx = n->in[0]->requires_grad ? n->in[0]->grad.data : NULL;
    TG_T *dt = n->in[1]->requires_grad ? n->in[1]->grad.data : NULL;
    int64_t N = n->in[0]->value.numel;
    for (int64_t i = 0; i < N; i++) {
        TG_T g = red == TG_REDUCTION_NONE ? dy[i] : (TG_T)(scale * dy[0]);
        TG_T v = 2 * (x[i] - t[i]) * g;
        if (dx) dx[i] += v;
        if (dt) dt[i] -= v;
    }
}

#endif
