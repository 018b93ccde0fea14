/*
 * activation.c - GELU, exact (erf) and tanh forms (OPS.md section 10).
 *
 * Elementwise through tg_parallel_for. The formulas are PyTorch's CPU
 * kernels', including 1 + erf(...) rather than erfc, so tails round the same
 * way. relu lives in elementwise.c; this file is only GELU.
 *
 * Reading order (engine/generic.h): builder, forward and backward, the
 * descriptor and registry row, then the portable kernels for float and
 * double at the end. Float32 goes to the vector kernels of ops/simd/vec.c
 * when tg__vec_on() (vector erf / tanh / exp within about 1e-7 of libm's);
 * the portable kernels stay the reference (TG_NO_SIMD=1) and the F64 path.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>
#include <string.h>

#include "ops_internal.h"
#include "activation.h"
#include "generic.h"
#include "simd/vec.h"

#define GELU_SQRT1_2 0.70710678118654752440        /* 1/sqrt(2) */
#define GELU_INV_SQRT_2PI 0.39894228040143267794   /* 1/sqrt(2 pi) */
#define GELU_K_TANH 0.79788456080286535588         /* sqrt(2/pi) */
#define GELU_C 0.044715

typedef struct { tg_gelu_approx approx; } gelu_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, gelu_run, (tg_node *n, tg_gelu_approx approx, bool backward));

static const tg_op op_gelu;   /* the descriptor, after the backward */

/* ---- builder ---- */

static const char *const approx_names[TG_GELU_APPROX_COUNT] = {"none", "tanh"};

const char *tg_gelu_approx_name(tg_gelu_approx a)
{
    return (unsigned)a < TG_GELU_APPROX_COUNT ? approx_names[a] : "unknown";
}

tg_status tg_gelu_approx_parse(const char *s, tg_gelu_approx *out)
{
    for (int a = 0; a < TG_GELU_APPROX_COUNT; a++)
        if (s && strcmp(s, approx_names[a]) == 0) {
            *out = (tg_gelu_approx)a;
            return TG_OK;
        }
    return tg_set_error(TG_ERR_INVALID, "gelu: approximate argument must be either none or tanh. "
                        "(got '%s')", s ? s : "(null)");
}

tg_node *tg_gelu(tg_graph *g, tg_node *x, tg_gelu_approx approx)
{
    if (!tg_builder_check(g, "gelu", 1, &x)) return NULL;
    if (!tg__want_float(g, "gelu", x, "input")) return NULL;
    if ((unsigned)approx >= TG_GELU_APPROX_COUNT)
        return tg_graph_fail(g, "gelu: approximate argument must be either none or tanh. (got "
                             "enum value %d)", (int)approx);
    tg_node *n = tg_node_new(g, &op_gelu, 1, &x, x->value.dtype, x->value.rank, x->value.shape);
    gelu_attr *at = n ? tg_node_attr(n, sizeof *at) : NULL;
    if (!at) return NULL;
    at->approx = approx;
    return n;
}

/* ---- forward and backward ----
 * Float32 with the vector path on: ops/simd/vec.c's rows over each range;
 * otherwise the portable kernels below. */

#if TG_VEC
typedef struct { tg_node *n; bool tanh_form, fresh; } gelu_vec_ctx;

static void gelu_vec_forward_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const gelu_vec_ctx *c = vctx;
    const float *x = c->n->in[0]->value.data;
    float *y = c->n->value.data;
    (void)tid;
    tg__vec_gelu(x + begin, y + begin, end - begin, c->tanh_form);
}

static void gelu_vec_backward_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const gelu_vec_ctx *c = vctx;
    const float *x = c->n->in[0]->value.data, *dy = c->n->grad.data;
    float *dx = c->n->in[0]->grad.data;
    (void)tid;
    tg__vec_gelu_backward(x + begin, dy + begin, dx + begin, end - begin, c->tanh_form, c->fresh);
}
#endif

static void gelu_run(tg_node *n, bool backward)
{
    tg_gelu_approx approx = ((const gelu_attr *)n->attr)->approx;
#if TG_VEC
    if (n->value.dtype == TG_F32 && tg__vec_on()) {
        gelu_vec_ctx c = {n, approx == TG_GELU_TANH, backward && tg_grad_fresh(n, 0)};
        tg_parallel_for(n->value.numel, 8192,
                        backward ? gelu_vec_backward_range : gelu_vec_forward_range, &c);
        return;
    }
#endif
    TG_DISPATCH(n->value.dtype, gelu_run)(n, approx, backward);
}

static tg_status gelu_forward(tg_node *n)
{
    gelu_run(n, false);
    return TG_OK;
}

static tg_status gelu_backward(tg_node *n)
{
    gelu_run(n, true);
    return TG_OK;
}

/* ---- descriptor ---- */

static void gelu_describe(const tg_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "approximate=%s", tg_gelu_approx_name(((const gelu_attr *)n->attr)->approx));
}

/* ONNX: GELU in its Erf form, x * 0.5 * (1 + erf(x / sqrt 2)) (opset 17 has no Gelu), or
 * its tanh form x * 0.5 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static tg_status gelu_onnx(const tg_node *n, struct tg_onnx *m)
{
    const tg_dtype dt = n->value.dtype;
    const char *x = tg__onnx_in(m, n, 0), *t = tg__onnx_tmp(m, n, "t");
    if (((const gelu_attr *)n->attr)->approx == TG_GELU_TANH) {
        const char *x2 = tg__onnx_tmp(m, n, "x2"), *x3 = tg__onnx_tmp(m, n, "x3");
        const char *c3 = tg__onnx_tmp(m, n, "c3"), *s = tg__onnx_tmp(m, n, "s");
        const char *u = tg__onnx_tmp(m, n, "u");
        TG__ONNX_NODE(m, "Mul", x2, x, x);
        TG__ONNX_NODE(m, "Mul", x3, x2, x);
        TG__ONNX_NODE(m, "Mul", c3, x3, tg__onnx_const_scalar(m, dt, 0.044715));
        TG__ONNX_NODE(m, "Add", s, x, c3);
        TG__ONNX_NODE(m, "Mul", u, s, tg__onnx_const_scalar(m, dt, 0.7978845608028654 /* sqrt(2 / pi) */));
        TG__ONNX_NODE(m, "Tanh", t, u);
    } else {
        const char *u = tg__onnx_tmp(m, n, "u");
        TG__ONNX_NODE(m, "Div", u, x, tg__onnx_const_scalar(m, dt, sqrt(2.0)));
        TG__ONNX_NODE(m, "Erf", t, u);
    }
    const char *p = tg__onnx_tmp(m, n, "p"), *xp = tg__onnx_tmp(m, n, "xp");
    TG__ONNX_NODE(m, "Add", p, t, tg__onnx_const_scalar(m, dt, 1.0));
    TG__ONNX_NODE(m, "Mul", xp, x, p);
    TG__ONNX_NODE(m, "Mul", tg__onnx_value(m, n), xp, tg__onnx_const_scalar(m, dt, 0.5));
    return tg__onnx_status(m);
}

static const tg_op op_gelu = {.name = "gelu", .forward = gelu_forward,
                              .backward = gelu_backward, .describe = gelu_describe,
                              .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_RECOMPUTE | TG_OP_BWD_FRESH |
                                       TG_OP_BWD_DX_OVER_DY | TG_OP_FWD_INPLACE, .onnx = gelu_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_gelu)
{
    (void)n_in;
    tg_gelu_approx a;
    if (tg_gelu_approx_parse(tg__op_str(c, "approximate"), &a)) return tg__op_fail_last(g, c);
    return TG_GLUE_ONE(tg_gelu(g, in[0], a));
}

const tg_op_def tg__activation_ops[] = {
    {"gelu", "F.gelu(input, approximate='none')",
     {{"approximate", TG_OP_STRING, "none", false, "none (erf) or tanh", NULL, 0}}, false,
     {TG_IN("input")}, 1, false, 1, b_gelu, NULL, "gelu approximate=tanh --in x.npy --out y.npy",
     &op_gelu, NULL,
     "[3,4]", "approximate=sigmoid;[3,4]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "activation.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

typedef struct TG_F(gelu_ctx) {
    tg_node *n;
    tg_gelu_approx approx;
    bool fresh;   /* backward: dx = 0 + ..., not read (tg_grad_fresh) */
} TG_F(gelu_ctx);

/* forward:
 *   none: y = x * Phi(x),                Phi(x) = (1 + erf(x / sqrt 2)) / 2
 *   tanh: y = x/2 * (1 + tanh(u)),       u = sqrt(2/pi) * (x + 0.044715 x^3) */
static void TG_F(gelu_forward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gelu_ctx) *c = vctx;
    const TG_T *x = c->n->in[0]->value.data;   /* [numel] */
    TG_T *y = c->n->value.data;                /* [numel] */
    (void)tid;
    if (c->approx == TG_GELU_TANH) {
        for (int64_t i = begin; i < end; i++) {
            TG_T v = x[i];
            TG_T u = (TG_T)GELU_K_TANH * (v + (TG_T)GELU_C * v * v * v);
            y[i] = (TG_T)0.5 * v * (1 + TG_M(tanh)(u));
        }
    } else {
        for (int64_t i = begin; i < end; i++) {
            TG_T v = x[i];
            y[i] = v * (TG_T)0.5 * (1 + TG_M(erf)(v * (TG_T)GELU_SQRT1_2));
        }
    }
}

/* backward of the above, dx += dy * y'(x):
 *   none: y' = Phi(x) + x * phi(x),      phi(x) = exp(-x^2/2) / sqrt(2 pi)
 *   tanh: y' = (1 + t)/2 + x/2 * (1 - t^2) * sqrt(2/pi) * (1 + 3 * 0.044715 x^2),  t = tanh(u) */
static void TG_F(gelu_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(gelu_ctx) *c = vctx;
    const TG_T *x = c->n->in[0]->value.data, *dy = c->n->grad.data;   /* [numel] */
    TG_T *dx = c->n->in[0]->grad.data;                                /* [numel] */
    (void)tid;
    if (c->approx == TG_GELU_TANH) {
        for (int64_t i = begin; i < end; i++) {
            TG_T v = x[i];
            TG_T u = (TG_T)GELU_K_TANH * (v + (TG_T)GELU_C * v * v * v);
            TG_T t = TG_M(tanh)(u);
            TG_T du = (TG_T)GELU_K_TANH * (1 + 3 * (TG_T)GELU_C * v * v);
            dx[i] = (c->fresh ? 0 : dx[i]) +
                    dy[i] * ((TG_T)0.5 * (1 + t) + (TG_T)0.5 * v * (1 - t * t) * du);
        }
    } else {
        for (int64_t i = begin; i < end; i++) {
            TG_T v = x[i];
            TG_T cdf = (TG_T)0.5 * (1 + TG_M(erf)(v * (TG_T)GELU_SQRT1_2));
            TG_T pdf = TG_M(exp)((TG_T)-0.5 * v * v) * (TG_T)GELU_INV_SQRT_2PI;
            dx[i] = (c->fresh ? 0 : dx[i]) + dy[i] * (cdf + v * pdf);
        }
    }
}

static void TG_F(gelu_run)(tg_node *n, tg_gelu_approx approx, bool backward)
{
    TG_F(gelu_ctx) c = {n, approx, backward && tg_grad_fresh(n, 0)};
    tg_parallel_for(n->value.numel, 8192,
                    backward ? TG_F(gelu_backward_range) : TG_F(gelu_forward_range), &c);
}

#endif
