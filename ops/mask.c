/*
 * mask.c - masked_fill with a scalar or a 0-d tensor value (OPS.md section 13),
 * and the causal mask constant (LAYERS.md section 1).
 *
 * Out of place only: x and mask broadcast together (PyTorch's out-of-place
 * rule), the result takes the broadcast shape. The walk is a row odometer
 * over the result with x and mask as broadcast operands; rows go to the
 * thread pool. Not here: the in-place form, masked_select, masked_scatter.
 *
 * Reading order (engine/generic.h): masked_fill's builder, forward, backward
 * and descriptor; the causal mask; the registry rows; then the portable
 * kernels for float and double at the end of the file.
 */
#ifndef TG_KERNELS /* ===================================== the ops proper */

#include <stdio.h>

#include "ops_internal.h"
#include "mask.h"
#include "generic.h"

typedef struct { double value; } fill_attr;

/* A row walk over the result: operand 0 the result, 1 x, 2 the mask. */
typedef struct {
    tg_node *n;
    tg__iter it;
    int64_t  inner, rows;
} fill_ctx;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, fill_rows, (void *vctx, int64_t begin, int64_t end, int tid));
TG_KERNEL_DECL(static void, fill_backward, (fill_ctx *c));

static const tg_op op_masked_fill;   /* the descriptor, after the backward */

/* ============================================================ masked_fill */

/* ---- builder ---- */

static tg_node *build(tg_graph *g, tg_node *x, tg_node *mask, bool tensor_value, tg_node *value,
                      double v)
{
    tg_node *in[3] = {x, mask, value};
    int n_in = tensor_value ? 3 : 2, rank;
    int64_t shape[TG_MAX_RANK];
    if (!tg_builder_check(g, "masked_fill", n_in, in)) return NULL;
    if (!tg__want_float(g, "masked_fill", x, "input")) return NULL;
    if (mask->value.dtype != TG_BOOL)
        return tg_graph_fail(g, "masked_fill: masked_fill only supports boolean masks, but got "
                             "mask with dtype %s", tg_dtype_name(mask->value.dtype));
    if (value && value->value.rank != 0)
        return tg_graph_fail(g, "masked_fill: masked_fill only supports a 0-dimensional value "
                             "tensor, but got tensor with %d dimension(s).", value->value.rank);
    if (value && !tg__want_float(g, "masked_fill", value, "value")) return NULL;
    if (!tg__broadcast(g, "masked_fill", &x->value, &mask->value, &rank, shape)) return NULL;
    tg_node *n = tg_node_new(g, &op_masked_fill, n_in, in, x->value.dtype, rank, shape);
    fill_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    a->value = v;
    return n;
}

tg_node *tg_masked_fill(tg_graph *g, tg_node *x, tg_node *mask, double value)
{
    return build(g, x, mask, false, NULL, value);
}

tg_node *tg_masked_fill_tensor(tg_graph *g, tg_node *x, tg_node *mask, tg_node *value)
{
    return build(g, x, mask, true, value, 0);
}

/* ---- forward ---- */

static void fill_ctx_init(fill_ctx *c, tg_node *n)
{
    c->n = n;
    c->inner = tg__iter_bcast(&c->it, &n->value, &n->in[0]->value, &n->in[1]->value, &c->rows);
}

static tg_status fill_forward(tg_node *n)
{
    fill_ctx c;
    fill_ctx_init(&c, n);
    tg_parallel_for(c.rows, 1 + 16384 / (c.inner + 1), TG_DISPATCH(n->value.dtype, fill_rows), &c);
    return TG_OK;
}

/* ---- backward ---- */

static tg_status fill_backward(tg_node *n)
{
    fill_ctx c;
    fill_ctx_init(&c, n);
    TG_DISPATCH(n->value.dtype, fill_backward)(&c);
    return TG_OK;
}

/* ---- descriptor ---- */

static void fill_describe(const tg_node *n, char *buf, size_t len)
{
    if (n->n_in > 2) snprintf(buf, len, "value=%s", tg_node_name(n->in[2]));
    else snprintf(buf, len, "value=%g", ((const fill_attr *)n->attr)->value);
}

/* ONNX: Where(mask, value, x). */
static tg_status fill_onnx(const tg_node *n, struct tg_onnx *m)
{
    const char *v = n->n_in > 2 ? tg__onnx_in(m, n, 2)
                  : tg__onnx_const_scalar(m, n->value.dtype, ((const fill_attr *)n->attr)->value);
    TG__ONNX_NODE(m, "Where", tg__onnx_value(m, n), tg__onnx_in(m, n, 1), v, tg__onnx_in(m, n, 0));
    return tg__onnx_status(m);
}

static const tg_op op_masked_fill = {.name = "masked_fill", .forward = fill_forward,
                                     .backward = fill_backward, .describe = fill_describe,
                                     .flags = TG_OP_BWD_NO_OUTPUT, .onnx = fill_onnx};   /* reads the mask */

/* ================================= causal_mask: a constant, no forward */

tg_node *tg_causal_mask(tg_graph *g, int64_t B, int64_t L)
{
    if (!tg_builder_check(g, "causal_mask", 0, NULL)) return NULL;
    if (B < 0 || L < 0)
        return tg_graph_fail(g, "causal_mask: B and L must be >= 0, got B = %lld, L = %lld",
                             (long long)B, (long long)L);
    int64_t shape[4] = {B, 1, L, L}, numel;
    if (tg_shape_numel(4, shape, &numel) != TG_OK)
        return tg_graph_fail(g, "causal_mask: [%lld, 1, %lld, %lld] is too large: %s",
                             (long long)B, (long long)L, (long long)L, tg_last_error());
    tg_tensor *t = tg_tensor_new(TG_BOOL, 4, shape);
    if (!t) return tg_graph_fail(g, "causal_mask: out of memory");
    unsigned char *m = t->data;                          /* [B, 1, L, L] */
    for (int64_t b = 0; b < B; b++)
        for (int64_t l = 0; l < L; l++)
            for (int64_t s = 0; s < L; s++) m[(b * L + l) * L + s] = s > l;
    tg_node *n = tg_constant(g, "causal_mask", t);
    tg_tensor_free(t);
    return n;
}

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_masked_fill)
{
    bool tensor = n_in > 2 && in[2], value = !tg__op_is_null(c, "value");
    if (tensor == value) {
        tg_graph_fail(g, "masked_fill: give either value= or a 0-d value tensor (a third --in), "
                      "%s", tensor ? "not both" : "got neither");
        return TG_ERR_INVALID;
    }
    if (tensor) return TG_GLUE_ONE(tg_masked_fill_tensor(g, in[0], in[1], in[2]));
    return TG_GLUE_ONE(tg_masked_fill(g, in[0], in[1], tg__op_f(c, "value")));
}

TG_GLUE(b_causal_mask)
{
    (void)in, (void)n_in;
    return TG_GLUE_ONE(tg_causal_mask(g, tg__op_int(c, "B"), tg__op_int(c, "L")));
}

const tg_op_def tg__mask_ops[] = {
    {"masked_fill", "Tensor.masked_fill(mask, value); value= or a 0-d value tensor",
     {{"value", TG_OP_FLOAT, "null", true,
       "the fill value (or a 0-d tensor as a third --in)", NULL, 0}},
     false, {TG_IN("input"), {"mask", TG_OP_IN_MASK, 0}, TG_IN("value")}, 2, false, 1,
     b_masked_fill, NULL, "masked_fill value=-inf --in x.npy --in mask.npy --out y.npy",
     &op_masked_fill, NULL,
     "value=-2;[3,4];bool[4]", "value=1;[3,4];f64[4]", NULL},
    {"causal_mask", "TriangularCausalMask(B, L): bool [B, 1, L, L], true where s > l (tgraph)",
     {{"B", TG_OP_INT, NULL, false, "batch size", NULL, 0}, {"L", TG_OP_INT, NULL, false,
                                                             "sequence length", NULL, 0}},
     false, {{0}}, 0, false, 1, b_causal_mask, NULL, "causal_mask B=2 L=4 --out mask.npy", NULL,
     "no input; a constant bool output",
     NULL, "B=-1;L=2", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "mask.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* forward, rows [begin, end) of the result:  y = mask ? value : x */
static void TG_F(fill_rows)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const fill_ctx *c = vctx;
    const tg_node *n = c->n;
    const TG_T *X = n->in[0]->value.data;
    const unsigned char *M = n->in[1]->value.data;
    TG_T *Y = n->value.data;
    const fill_attr *a = n->attr;
    TG_T v = n->n_in > 2 ? *(const TG_T *)n->in[2]->value.data : (TG_T)a->value;
    tg__iter it = c->it;
    int64_t inner = c->inner, xs = it.stride[1][it.rank - 1], ms = it.stride[2][it.rank - 1];
    (void)tid;
    tg__iter_seek(&it, begin);
    for (int64_t r = begin; r < end; r++, tg__iter_next_row(&it)) {
        TG_T *y = Y + it.off[0];
        const TG_T *x = X + it.off[1];
        const unsigned char *m = M + it.off[2];
        if (xs == 1 && ms == 1) {   /* the common case, contiguous rows: vectorises */
            for (int64_t i = 0; i < inner; i++) y[i] = m[i] ? v : x[i];
        } else {
            for (int64_t i = 0; i < inner; i++) y[i] = m[i * ms] ? v : x[i * xs];
        }
    }
}

/* backward, rows [begin, end):
 *   dx += dy where the mask is 0 (summed over broadcast copies of x)
 *   dvalue += sum of dy where the mask is 1 (returned, in double; only summed
 *   when track_dv) */
static double TG_F(fill_backward_rows)(const fill_ctx *c, int64_t begin, int64_t end, TG_T *DX,
                                       bool track_dv)
{
    const tg_node *n = c->n;
    const unsigned char *M = n->in[1]->value.data;
    const TG_T *DY = n->grad.data;
    tg__iter it = c->it;
    int64_t inner = c->inner, xs = it.stride[1][it.rank - 1], ms = it.stride[2][it.rank - 1];
    double dv = 0;
    tg__iter_seek(&it, begin);
    for (int64_t r = begin; r < end; r++, tg__iter_next_row(&it)) {
        const TG_T *dy = DY + it.off[0];
        const unsigned char *m = M + it.off[2];
        TG_T *dx = DX ? DX + it.off[1] : NULL;
        if (dx && !track_dv && xs == 1 && ms == 1) {   /* contiguous, no dvalue: vectorises */
            for (int64_t i = 0; i < inner; i++) dx[i] += m[i] ? (TG_T)0 : dy[i];
            continue;
        }
        for (int64_t i = 0; i < inner; i++) {
            if (m[i * ms]) dv += dy[i];
            else if (dx) dx[i * xs] += dy[i];
        }
    }
    return dv;
}

static void TG_F(fill_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const fill_ctx *c = vctx;
    (void)tid;
    TG_F(fill_backward_rows)(c, begin, end, c->n->in[0]->grad.data, false);
}

/* the whole backward: rows in parallel when x is not broadcast (each dx
 * element then has one writer) and value needs no gradient; else serially */
static void TG_F(fill_backward)(fill_ctx *c)
{
    tg_node *n = c->n, *x = n->in[0], *val = n->n_in > 2 ? n->in[2] : NULL;
    bool dval = val && val->requires_grad;
    if (x->requires_grad && !dval && tg_tensor_same_shape(&x->value, &n->value)) {
        tg_parallel_for(c->rows, 1 + 16384 / (c->inner + 1), TG_F(fill_backward_range), c);
        return;
    }
    double dv = TG_F(fill_backward_rows)(c, 0, c->rows, x->requires_grad ? x->grad.data : NULL,
                                         dval);
    if (dval) *(TG_T *)val->grad.data += (TG_T)dv;
}

#endif
