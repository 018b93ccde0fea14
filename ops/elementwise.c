/*
 * elementwise.c - add/sub/mul/div with broadcasting, scale, and unary maths
 * (exp, log, sqrt, square, neg, relu). OPS.md sections 1, 11.
 *
 * Reading order (engine/generic.h): the binary ops, then the unary ops, each
 * with its builder, forward, backward and descriptors; the registry rows; then
 * the portable kernels for float and double at the end of the file, where
 * the forward and backward of each op sit side by side.
 */
#ifndef TG_KERNELS /* ===================================== the ops proper */

#include <stdio.h>

#include "ops_internal.h"
#include "elementwise.h"
#include "generic.h"

enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV };
enum { UN_SCALE, UN_NEG, UN_EXP, UN_LOG, UN_SQRT, UN_SQUARE, UN_RELU };

typedef struct { int kind; } binary_attr;
typedef struct { int kind; double s; } unary_attr;

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, binary_forward, (tg_node *n, int kind));
TG_KERNEL_DECL(static void, binary_backward, (tg_node *n, int kind));
TG_KERNEL_DECL(static void, unary_run, (tg_node *n, int kind, double s, bool backward));

/* the descriptors, after the backwards */
static const tg_op op_add, op_sub, op_mul, op_div;
static const tg_op op_scale, op_neg, op_exp, op_log, op_sqrt, op_square, op_relu;

/* ==================================== binary ops: add, sub, mul, div */

/* ---- builder ---- */

static tg_node *binary(tg_graph *g, const tg_op *op, int kind, tg_node *a, tg_node *b)
{
    tg_node *in[2] = {a, b};
    int rank;
    int64_t shape[TG_MAX_RANK];
    if (!tg_builder_check(g, op->name, 2, in)) return NULL;
    if (!tg__want_float(g, op->name, a, "input a") || !tg__want_float(g, op->name, b, "input b"))
        return NULL;
    if (!tg__broadcast(g, op->name, &a->value, &b->value, &rank, shape)) return NULL;
    tg_node *n = tg_node_new(g, op, 2, in, tg_graph_dtype(g), rank, shape);
    binary_attr *at = n ? tg_node_attr(n, sizeof *at) : NULL;
    if (!at) return NULL;
    at->kind = kind;
    return n;
}

tg_node *tg_add(tg_graph *g, tg_node *a, tg_node *b) { return binary(g, &op_add, BIN_ADD, a, b); }
tg_node *tg_sub(tg_graph *g, tg_node *a, tg_node *b) { return binary(g, &op_sub, BIN_SUB, a, b); }
tg_node *tg_mul(tg_graph *g, tg_node *a, tg_node *b) { return binary(g, &op_mul, BIN_MUL, a, b); }
tg_node *tg_div(tg_graph *g, tg_node *a, tg_node *b) { return binary(g, &op_div, BIN_DIV, a, b); }

/* ---- forward ---- */

static tg_status binary_forward(tg_node *n)
{
    TG_DISPATCH(n->value.dtype, binary_forward)(n, ((binary_attr *)n->attr)->kind);
    return TG_OK;
}

/* ---- backward ---- */

static tg_status binary_backward(tg_node *n)
{
    TG_DISPATCH(n->value.dtype, binary_backward)(n, ((binary_attr *)n->attr)->kind);
    return TG_OK;
}

/* ---- descriptors ---- */

/* ONNX: Add, Sub, Mul, Div (numpy broadcasting, as PyTorch's). */
static tg_status binary_onnx(const tg_node *n, struct tg_onnx *m)
{
    static const char *const types[] = {"Add", "Sub", "Mul", "Div"};
    const binary_attr *at = n->attr;
    TG__ONNX_NODE(m, types[at->kind], tg__onnx_value(m, n), tg__onnx_in(m, n, 0),
                  tg__onnx_in(m, n, 1));
    return tg__onnx_status(m);
}

/* add and sub: dx = dy, no value read; mul reads its inputs. Each output
 * element reads the same element of a (whose shape it has when the planner
 * writes in place) before it is written: TG_OP_FWD_INPLACE. */
#define BIN_FLAGS (TG_OP_BWD_FRESH | TG_OP_FWD_INPLACE)
static const tg_op op_add = {.name = "add", .forward = binary_forward, .backward = binary_backward,
                             .onnx = binary_onnx,
                             .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS | BIN_FLAGS};
static const tg_op op_sub = {.name = "sub", .forward = binary_forward, .backward = binary_backward,
                             .onnx = binary_onnx,
                             .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS | BIN_FLAGS};
static const tg_op op_mul = {.name = "mul", .forward = binary_forward, .backward = binary_backward,
                             .onnx = binary_onnx,
                             .flags = TG_OP_BWD_NO_OUTPUT | BIN_FLAGS};
static const tg_op op_div = {.name = "div", .forward = binary_forward, .backward = binary_backward,
                             .onnx = binary_onnx,
                             .flags = BIN_FLAGS};
#undef BIN_FLAGS

/* ================= unary ops: scale, neg, exp, log, sqrt, square, relu */

/* ---- builder ---- */

static tg_node *unary(tg_graph *g, const tg_op *op, int kind, double s, tg_node *x)
{
    if (!tg_builder_check(g, op->name, 1, &x)) return NULL;
    if (!tg__want_float(g, op->name, x, "input")) return NULL;
    tg_node *n = tg_node_new(g, op, 1, &x, x->value.dtype, x->value.rank, x->value.shape);
    unary_attr *at = n ? tg_node_attr(n, sizeof *at) : NULL;
    if (!at) return NULL;
    at->kind = kind;
    at->s = s;
    return n;
}

tg_node *tg_scale(tg_graph *g, tg_node *x, double s) { return unary(g, &op_scale, UN_SCALE, s, x); }
tg_node *tg_neg(tg_graph *g, tg_node *x) { return unary(g, &op_neg, UN_NEG, 0, x); }
tg_node *tg_exp(tg_graph *g, tg_node *x) { return unary(g, &op_exp, UN_EXP, 0, x); }
tg_node *tg_log(tg_graph *g, tg_node *x) { return unary(g, &op_log, UN_LOG, 0, x); }
tg_node *tg_sqrt(tg_graph *g, tg_node *x) { return unary(g, &op_sqrt, UN_SQRT, 0, x); }
tg_node *tg_square(tg_graph *g, tg_node *x) { return unary(g, &op_square, UN_SQUARE, 0, x); }
tg_node *tg_relu(tg_graph *g, tg_node *x) { return unary(g, &op_relu, UN_RELU, 0, x); }

/* ---- forward ---- */

static tg_status unary_forward(tg_node *n)
{
    const unary_attr *at = n->attr;
    TG_DISPATCH(n->value.dtype, unary_run)(n, at->kind, at->s, false);
    return TG_OK;
}

/* ---- backward ---- */

static tg_status unary_backward(tg_node *n)
{
    const unary_attr *at = n->attr;
    TG_DISPATCH(n->value.dtype, unary_run)(n, at->kind, at->s, true);
    return TG_OK;
}

/* ---- descriptors ---- */

static void scale_describe(const tg_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "%g", ((const unary_attr *)n->attr)->s);
}

/* relu's decisions: the sign pattern of its input (for gradcheck). */
static uint64_t relu_kinks(const tg_node *n)
{
    const tg_tensor *x = &n->in[0]->value;
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < x->numel; i++)
        h = (h ^ (uint64_t)(tg_tensor_get(x, i) > 0)) * 1099511628211ull;
    return h;
}

/* Every unary op reads element i before it writes element i, forward (x[i]
 * for y[i]) and backward (dy[i] for dx[i]): the planner may write either in
 * place (TG_OP_FWD_INPLACE, TG_OP_BWD_DX_OVER_DY). */
/* ONNX: scale as Mul by a constant, square as Mul(x, x), the others one node each. */
static tg_status unary_onnx(const tg_node *n, struct tg_onnx *m)
{
    static const char *const types[] = {"Mul", "Neg", "Exp", "Log", "Sqrt", "Mul", "Relu"};
    const unary_attr *at = n->attr;
    const char *x = tg__onnx_in(m, n, 0), *y = tg__onnx_value(m, n);
    if (at->kind == UN_SCALE)
        TG__ONNX_NODE(m, "Mul", y, x, tg__onnx_const_scalar(m, n->value.dtype, at->s));
    else if (at->kind == UN_SQUARE)
        TG__ONNX_NODE(m, "Mul", y, x, x);
    else
        TG__ONNX_NODE(m, types[at->kind], y, x);
    return tg__onnx_status(m);
}

#define UN_FLAGS (TG_OP_BWD_FRESH | TG_OP_BWD_DX_OVER_DY | TG_OP_FWD_INPLACE)
#define UNARY_OP(nm) {.name = #nm, .forward = unary_forward, .backward = unary_backward, \
                     .onnx = unary_onnx, .flags = UN_FLAGS}
static const tg_op op_scale = {.name = "scale", .forward = unary_forward,
                               .backward = unary_backward, .describe = scale_describe,
                               .onnx = unary_onnx,
                               .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS | UN_FLAGS};
static const tg_op op_neg = {.name = "neg", .forward = unary_forward, .backward = unary_backward,
                             .onnx = unary_onnx,
                             .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS | UN_FLAGS};
static const tg_op op_exp = UNARY_OP(exp);
static const tg_op op_log = UNARY_OP(log);
static const tg_op op_sqrt = UNARY_OP(sqrt);
static const tg_op op_square = UNARY_OP(square);
static const tg_op op_relu = {.name = "relu", .forward = unary_forward,
                              .backward = unary_backward, .kinks = relu_kinks,
                              .onnx = unary_onnx, .flags = UN_FLAGS};
#undef UNARY_OP
#undef UN_FLAGS

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

/* add/sub/mul/div: other is a tensor (the second --in) or a number (other=). */
static tg_status binary_glue(tg_graph *g, const tg_op_call *c, tg_node *const *in, int n_in,
                             tg_node **out, int *n_out,
                             tg_node *(*fn)(tg_graph *, tg_node *, tg_node *))
{
    bool tensor = n_in > 1 && in[1], number = !tg__op_is_null(c, "other");
    if (tensor == number) {
        tg_graph_fail(g, "%s: give other either as a tensor (a second --in) or as a number "
                      "(other=), %s", c->op->name, tensor ? "not both" : "got neither");
        return TG_ERR_INVALID;
    }
    tg_node *other = tensor ? in[1] : tg_full(g, 0, NULL, tg__op_f(c, "other"));
    const tg_value *alpha = tg__op_attr(c, "alpha");
    if (alpha && tg__op_f(c, "alpha") != 1.0) other = tg_scale(g, other, tg__op_f(c, "alpha"));
    return TG_GLUE_ONE(fn(g, in[0], other));
}

TG_GLUE(b_add) { return binary_glue(g, c, in, n_in, out, n_out, tg_add); }
TG_GLUE(b_sub) { return binary_glue(g, c, in, n_in, out, n_out, tg_sub); }
TG_GLUE(b_mul) { return binary_glue(g, c, in, n_in, out, n_out, tg_mul); }
TG_GLUE(b_div) { return binary_glue(g, c, in, n_in, out, n_out, tg_div); }

TG_GLUE(b_scale) { (void)n_in; return TG_GLUE_ONE(tg_scale(g, in[0], tg__op_f(c, "scale"))); }
TG_GLUE(b_neg) { (void)c, (void)n_in; return TG_GLUE_ONE(tg_neg(g, in[0])); }
TG_GLUE(b_exp) { (void)c, (void)n_in; return TG_GLUE_ONE(tg_exp(g, in[0])); }
TG_GLUE(b_log) { (void)c, (void)n_in; return TG_GLUE_ONE(tg_log(g, in[0])); }
TG_GLUE(b_sqrt) { (void)c, (void)n_in; return TG_GLUE_ONE(tg_sqrt(g, in[0])); }
TG_GLUE(b_square) { (void)c, (void)n_in; return TG_GLUE_ONE(tg_square(g, in[0])); }
TG_GLUE(b_relu) { (void)c, (void)n_in; return TG_GLUE_ONE(tg_relu(g, in[0])); }

#define UNARY(nm, fn, gen, sum, desc, check, bad) \
    {nm, sum, {{0}}, false, {{"input", TG_OP_IN_FLOAT, gen}}, 1, false, 1, fn, NULL, \
     nm " --in x.npy --out y.npy", desc, NULL, check, bad, NULL}
#define BINARY(nm, fn, sum, gen1, example, desc, check, bad, extra) \
    {nm, sum, {{"other", TG_OP_FLOAT, "null", true, "a number (instead of a second --in)", \
                NULL, 0} extra}, \
     false, {TG_IN("input"), {"other", TG_OP_IN_FLOAT, gen1}}, 1, false, 1, fn, NULL, \
     nm " " example, desc, NULL, check, bad, NULL}
#define ALPHA , {"alpha", TG_OP_FLOAT, "1", false, "multiplier for other", NULL, 0}

const tg_op_def tg__elementwise_ops[] = {
    UNARY("relu", b_relu, TG_OP_GEN_NORMAL, "torch.relu(input)", &op_relu, "[50]", "bool[3]"),
    UNARY("exp", b_exp, TG_OP_GEN_NORMAL, "torch.exp(input)", &op_exp, "[3,4]", "bool[3]"),
    UNARY("log", b_log, TG_OP_GEN_POSITIVE, "torch.log(input)", &op_log, "[3,4]", "i64[3]"),
    UNARY("sqrt", b_sqrt, TG_OP_GEN_POSITIVE, "torch.sqrt(input)", &op_sqrt, "[3,4]", "bool[2]"),
    UNARY("square", b_square, TG_OP_GEN_NORMAL, "torch.square(input)", &op_square, "[3,4]", "bool[2]"),
    UNARY("neg", b_neg, TG_OP_GEN_NORMAL, "torch.neg(input)", &op_neg, "[3,4]", "i64[2]"),
    {"scale", "scale * input (tgraph)", {{"scale", TG_OP_FLOAT, NULL, false,
                                          "the factor", NULL, 0}}, false,
     {TG_IN("input")}, 1, false, 1, b_scale, NULL, "scale scale=2.5 --in x.npy --out y.npy",
     &op_scale, NULL,
     "scale=1.5;[3,4]", "scale=yes;[3]", NULL},
    BINARY("add", b_add, "torch.add(input, other, alpha=1); other a tensor or a number",
           TG_OP_GEN_NORMAL, "--in a.npy --in b.npy --out y.npy", &op_add, "alpha=2;[3,4];[4]", "[3,4];[5]", ALPHA),
    BINARY("sub", b_sub, "torch.sub(input, other, alpha=1); other a tensor or a number",
           TG_OP_GEN_NORMAL, "alpha=2 --in a.npy --in b.npy --out y.npy", &op_sub, "[3,4];[3,4]", "other=1;[3];[3]", ALPHA),
    BINARY("mul", b_mul, "torch.mul(input, other); other a tensor or a number",
           TG_OP_GEN_NORMAL, "other=2.5 --in x.npy --out y.npy", &op_mul, "[3,4];[4]", "[3];[4]", ),
    BINARY("div", b_div, "torch.div(input, other); other a tensor or a number",
           TG_OP_GEN_NONZERO, "--in a.npy --in b.npy --out y.npy", &op_div, "[3,4];[4]", "[3]", ),
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "elementwise.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* ------------------------------------------------------------- binary ops */

/* a and b both of the output's shape: element i of each is element i of y, so
 * the work splits over the thread pool in plain loops (forward or backward;
 * the same arithmetic as the broadcast loops below) */
typedef struct TG_F(flat_ctx) { tg_node *n; int kind; bool backward, fa, fb; } TG_F(flat_ctx);

static void TG_F(binary_flat_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(flat_ctx) *c = vctx;
    const TG_T *A = c->n->in[0]->value.data, *B = c->n->in[1]->value.data;
    (void)tid;
    if (!c->backward) {
        TG_T *y = c->n->value.data;
        /* In place (y over a: TG_OP_FWD_INPLACE), a and y are spelled as one
         * pointer: two that overlap fail the compiler's run-time alias check
         * and would take its scalar loop. */
#define BIN_LOOPS(A_)                                                              \
        switch (c->kind) {                                                         \
        case 0: for (int64_t i = begin; i < end; i++) y[i] = A_[i] + B[i]; break;  \
        case 1: for (int64_t i = begin; i < end; i++) y[i] = A_[i] - B[i]; break;  \
        case 2: for (int64_t i = begin; i < end; i++) y[i] = A_[i] * B[i]; break;  \
        default: for (int64_t i = begin; i < end; i++) y[i] = A_[i] / B[i]; break; \
        }
        if (y == A) BIN_LOOPS(y) else BIN_LOOPS(A)
#undef BIN_LOOPS
        return;
    }
    const TG_T *g = c->n->grad.data;
    TG_T *ga = c->n->in[0]->requires_grad ? c->n->in[0]->grad.data : NULL;
    TG_T *gb = c->n->in[1]->requires_grad ? c->n->in[1]->grad.data : NULL;
    /* D[i] = 0 + v (fresh: D not read) or D[i] + v, the test outside the
     * loop so that each loop vectorises */
#define ACC(D, fresh, v)                                                   \
    do {                                                                   \
        if (fresh) for (int64_t i = begin; i < end; i++) D[i] = 0 + (v);   \
        else for (int64_t i = begin; i < end; i++) D[i] = D[i] + (v);      \
    } while (0)
    if (ga) {
        switch (c->kind) {
        case 0: case 1: ACC(ga, c->fa, g[i]); break;
        case 2: ACC(ga, c->fa, g[i] * B[i]); break;
        default: ACC(ga, c->fa, g[i] / B[i]); break;
        }
    }
    if (gb) {
        switch (c->kind) {
        case 0: ACC(gb, c->fb, g[i]); break;
        case 1: ACC(gb, c->fb, -g[i]); break;
        case 2: ACC(gb, c->fb, g[i] * A[i]); break;
        default: ACC(gb, c->fb, -(g[i] * A[i] / (B[i] * B[i]))); break;
        }
    }
#undef ACC
}

/* true (and done) when a and b have the output's shape */
static bool TG_F(binary_flat)(tg_node *n, int kind, bool backward)
{
    const int64_t N = n->value.numel;
    if (n->in[0]->value.numel != N || n->in[1]->value.numel != N) return false;
    TG_F(flat_ctx) c = {n, kind, backward, false, false};
    if (backward) {
        c.fa = n->in[0]->requires_grad && tg_grad_fresh(n, 0);
        c.fb = n->in[1]->requires_grad && tg_grad_fresh(n, 1);
        /* x + x: never fresh (the engine zeroes it), and each chunk adds
         * a's part, then b's, into the one gradient */
    }
    tg_parallel_for(N, 16384, TG_F(binary_flat_range), &c);
    return true;
}

/* forward: y = a (op) b over the broadcast shape */
static void TG_F(binary_forward)(tg_node *n, int kind)
{
    if (TG_F(binary_flat)(n, kind, false)) return;
    const tg_tensor *a = &n->in[0]->value, *b = &n->in[1]->value;
    TG_T *y = n->value.data;
    const TG_T *A = a->data, *B = b->data;
    tg__iter it;
    int64_t rows, inner = tg__iter_bcast(&it, &n->value, a, b, &rows);
    int64_t ia = it.stride[1][it.rank - 1], ib = it.stride[2][it.rank - 1];
    for (int64_t row = 0; row < rows; row++, tg__iter_next_row(&it)) {
        TG_T *yy = y + it.off[0];
        const TG_T *aa = A + it.off[1], *bb = B + it.off[2];
        switch (kind) {
        case 0: for (int64_t i = 0; i < inner; i++) yy[i] = aa[i * ia] + bb[i * ib]; break;
        case 1: for (int64_t i = 0; i < inner; i++) yy[i] = aa[i * ia] - bb[i * ib]; break;
        case 2: for (int64_t i = 0; i < inner; i++) yy[i] = aa[i * ia] * bb[i * ib]; break;
        default: for (int64_t i = 0; i < inner; i++) yy[i] = aa[i * ia] / bb[i * ib]; break;
        }
    }
}

/* backward, with the broadcast values of the other operand:
 *   add: da += dy          db += dy
 *   sub: da += dy          db -= dy
 *   mul: da += dy * b      db += dy * a
 *   div: da += dy / b      db -= dy * a / b^2
 * A broadcast operand receives the sum over its copies (sum_to). */
static void TG_F(binary_backward)(tg_node *n, int kind)
{
    if (TG_F(binary_flat)(n, kind, true)) return;
    const tg_tensor *a = &n->in[0]->value, *b = &n->in[1]->value;
    TG_T *da = n->in[0]->requires_grad ? n->in[0]->grad.data : NULL;
    TG_T *db = n->in[1]->requires_grad ? n->in[1]->grad.data : NULL;
    const TG_T *dy = n->grad.data, *A = a->data, *B = b->data;
    /* A fresh gradient (tg_grad_fresh) starts at 0: set (0 + v) where the
     * operand has the output's shape, each element being visited once;
     * zeroed up front where it is broadcast (its elements take sums). */
    bool za = da && tg_grad_fresh(n, 0), zb = db && tg_grad_fresh(n, 1);
    const bool fa = za && a->numel == n->value.numel, fb = zb && b->numel == n->value.numel;
    if (za && !fa && a->numel) memset(da, 0, (size_t)a->numel * sizeof *da);
    if (zb && !fb && b->numel) memset(db, 0, (size_t)b->numel * sizeof *db);
    tg__iter it;
    int64_t rows, inner = tg__iter_bcast(&it, &n->value, a, b, &rows);
    int64_t ia = it.stride[1][it.rank - 1], ib = it.stride[2][it.rank - 1];
#define GA(v) ga[i * ia] = (fa ? 0 : ga[i * ia]) + (v)
#define GB(v) gb[i * ib] = (fb ? 0 : gb[i * ib]) + (v)
    for (int64_t row = 0; row < rows; row++, tg__iter_next_row(&it)) {
        const TG_T *g = dy + it.off[0], *aa = A + it.off[1], *bb = B + it.off[2];
        TG_T *ga = da ? da + it.off[1] : NULL, *gb = db ? db + it.off[2] : NULL;
        for (int64_t i = 0; i < inner; i++) {
            TG_T av = aa[i * ia], bv = bb[i * ib], gv = g[i];
            switch (kind) {
            case 0:
                if (ga) GA(gv);
                if (gb) GB(gv);
                break;
            case 1:
                if (ga) GA(gv);
                if (gb) GB(-gv);
                break;
            case 2:
                if (ga) GA(gv * bv);
                if (gb) GB(gv * av);
                break;
            default:
                if (ga) GA(gv / bv);
                if (gb) GB(-(gv * av / (bv * bv)));
                break;
            }
        }
    }
#undef GA
#undef GB
}

/* -------------------------------------------------------------- unary ops */

typedef struct TG_F(unary_ctx) { tg_node *n; int kind; TG_T s; bool fresh; } TG_F(unary_ctx);

/* forward, element by element: one loop per kind (so each vectorises) */
static void TG_F(unary_forward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(unary_ctx) *c = vctx;
    const TG_T *x = c->n->in[0]->value.data, s = c->s;
    TG_T *y = c->n->value.data;
    (void)tid;
    /* in place (y over x), one pointer: see binary_flat_range */
#define UN_LOOP(X, expr) for (int64_t i = begin; i < end; i++) { TG_T v = X[i]; y[i] = (expr); }
#define UN_ALL(X)                                                                   \
    switch (c->kind) {                                                              \
    case UN_SCALE:  UN_LOOP(X, s * v) break;                                        \
    case UN_NEG:    UN_LOOP(X, -v) break;                                           \
    case UN_EXP:    UN_LOOP(X, TG_M(exp)(v)) break;                                 \
    case UN_LOG:    UN_LOOP(X, TG_M(log)(v)) break;                                 \
    case UN_SQRT:   UN_LOOP(X, TG_M(sqrt)(v)) break;                                \
    case UN_SQUARE: UN_LOOP(X, v * v) break;                                        \
    default:        UN_LOOP(X, v < 0 ? (TG_T)0 : v) break;   /* relu: keeps NaN, -0.0 */ \
    }
    if (y == x) UN_ALL(y) else UN_ALL(x)
#undef UN_ALL
#undef UN_LOOP
}

/* backward: dx += dy * dy/dx (dx = 0 + ... when fresh: tg_grad_fresh)
 *   scale: s    neg: -1    exp: y    log: 1/x    sqrt: 1/(2y)    square: 2x
 *   relu: 1 where x > 0, else 0 (0 at exactly 0, as PyTorch) */
static void TG_F(unary_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(unary_ctx) *c = vctx;
    const TG_T *x = c->n->in[0]->value.data, *y = c->n->value.data, *dy = c->n->grad.data;
    const TG_T s = c->s;
    TG_T *dx = c->n->in[0]->grad.data;
    const bool f = c->fresh;
    (void)tid;
    /* in place (dx over dy: TG_OP_BWD_DX_OVER_DY), one pointer: see
     * binary_flat_range; the fresh test outside the loops */
#define UN_LOOP(DY, expr)                                                                     \
    do {                                                                                      \
        if (f) for (int64_t i = begin; i < end; i++) { TG_T g = DY[i]; dx[i] = 0 + (expr); }  \
        else for (int64_t i = begin; i < end; i++) { TG_T g = DY[i]; dx[i] = dx[i] + (expr); } \
    } while (0);
#define UN_ALL(DY)                                          \
    switch (c->kind) {                                      \
    case UN_SCALE:  UN_LOOP(DY, s * g) break;               \
    case UN_NEG:    UN_LOOP(DY, -g) break;                  \
    case UN_EXP:    UN_LOOP(DY, g * y[i]) break;            \
    case UN_LOG:    UN_LOOP(DY, g / x[i]) break;            \
    case UN_SQRT:   UN_LOOP(DY, g / (2 * y[i])) break;      \
    case UN_SQUARE: UN_LOOP(DY, 2 * x[i] * g) break;        \
    default:        UN_LOOP(DY, x[i] > 0 ? g : (TG_T)0) break; \
    }
    if (dx == dy) UN_ALL(dx) else UN_ALL(dy)
#undef UN_ALL
#undef UN_LOOP
}

static void TG_F(unary_run)(tg_node *n, int kind, double s, bool backward)
{
    TG_F(unary_ctx) c = {n, kind, (TG_T)s, backward && tg_grad_fresh(n, 0)};
    tg_parallel_for(n->value.numel, 16384,
                    backward ? TG_F(unary_backward_range) : TG_F(unary_forward_range), &c);
}

#endif
