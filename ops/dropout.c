/*
 * dropout.c - dropout (OPS.md section 12), with no saved mask.
 *
 * The mode is decided at each forward from tg_graph_training() and p, and
 * remembered for the backward (so the backward always matches the forward
 * that ran): COPY (eval, or p = 0), ZERO (p = 1) or MASK. In MASK mode each
 * forward takes one 64-bit key from the graph RNG and element i is kept when
 * a 32-bit hash of (key, i) (tg__drop_bits) is at least p * 2^32: a counter-based
 * stream, so the mask is drawn in the same parallel pass that applies it and
 * does not depend on the thread count, and the backward regenerates it from
 * the key instead of storing a byte per element. Keep probability is 1 - p to
 * within 2^-32. PyTorch's bit stream is not reproduced, only the distribution.
 *
 * Reading order (engine/generic.h): builder, forward and backward, the
 * descriptor and registry row, then the portable kernels for float and
 * double at the end. Float32 in MASK mode goes to the AVX2 kernel of
 * ops/simd/vec_dropout.c when tg__vec_on() (chosen in drop_run below); the
 * portable kernels stay the reference (TG_NO_SIMD=1) and the F64 path.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <math.h>
#include <stdio.h>

#include "ops_internal.h"
#include "dropout.h"
#include "generic.h"
#include "simd/vec.h"

enum { DROP_COPY, DROP_ZERO, DROP_MASK };

typedef struct {
    double p;
    double scale;  /* 1 / (1 - p); 0 for p = 1 */
    int    mode;   /* set by each forward, read by the backward that follows */
    uint64_t key;         /* MASK: the forward's key, for the backward's redraw */
    uint64_t threshold;   /* p * 2^32, rounded up: a draw below it is dropped */
} drop_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, drop_run, (tg_node *n, int mode, double scale, uint64_t key,
                                       uint64_t threshold, bool backward));

static const tg_op op_dropout;   /* the descriptor, after the backward */

/* ---- builder ---- */

tg_node *tg_dropout(tg_graph *g, tg_node *x, double p)
{
    if (!tg_builder_check(g, "dropout", 1, &x)) return NULL;
    if (!tg__want_float(g, "dropout", x, "input")) return NULL;
    if (!(p >= 0 && p <= 1))
        return tg_graph_fail(g, "dropout: dropout probability has to be between 0 and 1, but got %g",
                             p);
    const tg_tensor *v = &x->value;
    tg_node *n = tg_node_new(g, &op_dropout, 1, &x, v->dtype, v->rank, v->shape);
    drop_attr *at = n ? tg_node_attr(n, sizeof *at) : NULL;
    if (!at) return NULL;
    at->p = p;
    at->scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
    at->threshold = (uint64_t)ceil(p * 4294967296.0);   /* in [0, 2^32] */
    return n;
}

/* ---- forward and backward ----
 * Float32 in MASK mode with the vector path on: ops/simd/vec_dropout.c over
 * each range; otherwise the portable kernels below. */

#if TG_VEC
typedef struct {
    tg_node *n;
    bool     fresh;   /* backward: dx = 0 + ..., not read (tg_grad_fresh) */
    float    scale;
    uint64_t key, threshold;   /* the forward's key; keep when bits >= threshold */
} drop_vec_ctx;

/* forward: y = x * keep * scale, drawing keep */
static void drop_vec_forward_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const drop_vec_ctx *c = vctx;
    const float *x = c->n->in[0]->value.data;     /* [numel] */
    float *y = c->n->value.data;                  /* [numel] */
    (void)tid;
    tg__vec_dropout(x + begin, y + begin, end - begin, begin, c->key, c->threshold, c->scale, 0);
}

/* backward: dx += dy * keep * scale, the keep of the forward's key, redrawn */
static void drop_vec_backward_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const drop_vec_ctx *c = vctx;
    const float *dy = c->n->grad.data;            /* [numel] */
    float *dx = c->n->in[0]->grad.data;           /* [numel] */
    (void)tid;
    tg__vec_dropout(dy + begin, dx + begin, end - begin, begin, c->key, c->threshold, c->scale,
                    c->fresh ? 2 : 1);
}
#endif

static void drop_run(tg_node *n, const drop_attr *a, bool backward)
{
#if TG_VEC
    if (a->mode == DROP_MASK && n->value.dtype == TG_F32 && tg__vec_on() &&
        a->threshold < ((uint64_t)1 << 32)) {
        drop_vec_ctx c = {n, backward && tg_grad_fresh(n, 0), (float)a->scale, a->key,
                          a->threshold};
        tg_parallel_for(n->value.numel, 16384,
                        backward ? drop_vec_backward_range : drop_vec_forward_range, &c);
        return;
    }
#endif
    TG_DISPATCH(n->value.dtype, drop_run)(n, a->mode, a->scale, a->key, a->threshold, backward);
}

static tg_status drop_forward(tg_node *n)
{
    drop_attr *a = n->attr;
    uint64_t key = 0;
    if (!tg_graph_training(n->graph) || a->p == 0) {
        a->mode = DROP_COPY;
    } else if (a->p == 1) {
        a->mode = DROP_ZERO;
    } else {
        /* keep ~ Bernoulli(1 - p), drawn with the apply */
        a->mode = DROP_MASK;
        key = tg_rng_next(tg_graph_rng(n->graph));
    }
    a->key = key;
    drop_run(n, a, false);
    return TG_OK;
}

static tg_status drop_backward(tg_node *n)
{
    const drop_attr *a = n->attr;
    drop_run(n, a, true);
    return TG_OK;
}

/* ---- descriptor ---- */

static void drop_describe(const tg_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "p=%g", ((const drop_attr *)n->attr)->p);
}

/* ONNX: the identity (an exported graph is for inference). */
static tg_status drop_onnx(const tg_node *n, struct tg_onnx *m)
{
    if (tg_graph_training(n->graph) && ((const drop_attr *)n->attr)->p > 0)
        return tg__onnx_fail(m, TG_ERR_INVALID, "onnx export: dropout in training mode has no "
                             "inference form: build the graph in eval mode");
    TG__ONNX_NODE(m, "Identity", tg__onnx_value(m, n), tg__onnx_in(m, n, 0));
    return tg__onnx_status(m);
}

static const tg_op op_dropout = {.name = "dropout", .forward = drop_forward,
                                 .backward = drop_backward, .describe = drop_describe,
                                 .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS |
                                          TG_OP_BWD_FRESH | TG_OP_BWD_DX_OVER_DY |
                                          TG_OP_FWD_INPLACE, .onnx = drop_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_dropout)
{
    (void)n_in;
    tg_graph_set_training(g, tg__op_bool(c, "training"));
    tg_graph_seed(g, (uint64_t)tg__op_int(c, "seed"));
    return TG_GLUE_ONE(tg_dropout(g, in[0], tg__op_f(c, "p")));
}

const tg_op_def tg__dropout_ops[] = {
    {"dropout", "F.dropout(input, p=0.5, training=True); seed= seeds the mask (tgraph)",
     {{"p", TG_OP_FLOAT, "0.5", false, "probability of an element to be zeroed", NULL, 0},
      {"training", TG_OP_BOOL, "true", false, "false: the identity", NULL, 0},
      {"seed", TG_OP_INT, "0", false,
       "seeds the mask", NULL, 0}}, false, {TG_IN("input")}, 1, false, 1,
     b_dropout, NULL, "dropout p=0.1 seed=7 --in x.npy --out y.npy", &op_dropout, NULL,
     "p=0.4;[5,6]", "p=1.5;[3]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "dropout.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

typedef struct TG_F(drop_ctx) {
    tg_node *n;
    int      mode;
    bool     fresh;   /* backward: dx = 0 + ..., not read (tg_grad_fresh) */
    TG_T     scale;
    uint64_t key, threshold;   /* MASK: the forward's key; keep when bits >= threshold */
} TG_F(drop_ctx);

/* forward: y = x * keep * scale, drawing keep  (COPY: y = x;  ZERO: y = x * 0) */
static void TG_F(drop_forward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(drop_ctx) *c = vctx;
    const TG_T *x = c->n->in[0]->value.data;     /* [numel] */
    TG_T *y = c->n->value.data;                  /* [numel] */
    const TG_T scale = c->scale;
    (void)tid;
    switch (c->mode) {
    case DROP_COPY:   /* nothing to do when the plan put y in x's memory */
        if (y != x) memcpy(y + begin, x + begin, (size_t)(end - begin) * sizeof *y);
        break;
    case DROP_ZERO:
        for (int64_t i = begin; i < end; i++) y[i] = x[i] * (TG_T)0;
        break;
    default:
        for (int64_t i = begin; i < end; i++)
            y[i] = x[i] * (tg__drop_bits(c->key, i) >= c->threshold ? scale : (TG_T)0);
        break;
    }
}

/* backward: dx += dy * keep * scale, the keep of the forward's key, redrawn */
static void TG_F(drop_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(drop_ctx) *c = vctx;
    const TG_T *dy = c->n->grad.data;            /* [numel] */
    TG_T *dx = c->n->in[0]->grad.data;           /* [numel] */
    const TG_T scale = c->scale;
    const bool fresh = c->fresh;   /* dx = 0 + ..., not read */
    (void)tid;
    switch (c->mode) {
    case DROP_COPY:
        for (int64_t i = begin; i < end; i++) dx[i] = (fresh ? 0 : dx[i]) + dy[i];
        break;
    case DROP_ZERO:
        for (int64_t i = begin; i < end; i++) dx[i] = (fresh ? 0 : dx[i]) + dy[i] * (TG_T)0;
        break;
    default:
        for (int64_t i = begin; i < end; i++)
            dx[i] = (fresh ? 0 : dx[i]) +
                    dy[i] * (tg__drop_bits(c->key, i) >= c->threshold ? scale : (TG_T)0);
        break;
    }
}

static void TG_F(drop_run)(tg_node *n, int mode, double scale, uint64_t key,
                           uint64_t threshold, bool backward)
{
    TG_F(drop_ctx) c = {n, mode, backward && tg_grad_fresh(n, 0), (TG_T)scale, key, threshold};
    tg_parallel_for(n->value.numel, 16384,
                    backward ? TG_F(drop_backward_range) : TG_F(drop_forward_range), &c);
}

#endif
