/*
 * op.h - how an op plugs into the engine. For op implementers (ops/ and code
 * outside the library); users of ops never need this header.
 *
 * An op is a descriptor: a name, a forward, a backward (the VJP) and an
 * attribute printer. A builder function validates its arguments, creates a
 * node with tg_node_new(), stores its attributes and declares the buffers it
 * needs. The engine knows no op by name.
 *
 * Contract:
 * - forward(n) computes n->value from n->in[i]->value (and n->attr, n->buf).
 *   It may fail only on data-dependent problems (index out of range), with
 *   tg_set_error().
 * - backward(n) reads n->grad (dL/d value) and ADDS its contribution into
 *   n->in[i]->grad.data for every input with requires_grad; those buffers are
 *   zeroed by the engine before a backward pass, so accumulation across
 *   consumers (fan-out) is automatic.
 * - Neither allocates: scratch memory is declared at build time
 *   (tg_node_scratch) and is tg_graph_scratch() at run time.
 */
#ifndef TG_OP_H
#define TG_OP_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_NODE_MAX_BUFFERS 4

typedef enum tg_node_kind {
    TG_NODE_OP,      /* the result of an op */
    TG_NODE_INPUT,   /* data written before each run */
    TG_NODE_CONST,   /* data fixed at build time */
    TG_NODE_PARAM,   /* a parameter from a tg_params store */
    TG_NODE_KIND_COUNT
} tg_node_kind;

enum tg_op_flags {
    /* The output is input 0's buffer reinterpreted (a reshape): no forward or
     * backward work; value and grad alias input 0's. */
    TG_OP_VIEW = 1u << 0,
    /* The backward reads no value of the node's own (it may read saved
     * buffers and its inputs' values): with gradients on, the planner lets
     * the value's memory go after its last forward consumer. */
    TG_OP_BWD_NO_OUTPUT = 1u << 1,
    /* The backward reads no input's value (only the output's, buffers, grads). */
    TG_OP_BWD_NO_INPUTS = 1u << 2,
    /* The forward is cheap and deterministic: it reads only its inputs and
     * attributes, draws no random numbers, and rewrites its saved buffers
     * with the same values. With tg_graph_set_share_values, a node whose op
     * says this (and TG_OP_BWD_NO_OUTPUT, and whose backward reads its
     * inputs, so they stay alive) lets its value go after its last forward
     * consumer; the backward pass recomputes it into a buffer of its own
     * just before the first backward that reads it (GELU, layer_norm). */
    TG_OP_RECOMPUTE = 1u << 3,
    /* As TG_OP_RECOMPUTE, for an op whose forward costs real work (linear):
     * recomputed only when tg_graph_set_recompute is on too, and never for a
     * value that a TG_OP_RECOMPUTE op reads (that one is recomputed instead). */
    TG_OP_RECOMPUTE_COSTLY = 1u << 4,
    /* The backward can initialise an input's gradient: where
     * tg_grad_fresh(n, k) is true, it sets every element of in[k]'s gradient
     * (as if adding to zeros) and the engine skips zeroing that buffer. */
    TG_OP_BWD_FRESH = 1u << 5,
    /* With TG_OP_BWD_FRESH, for input 0: its gradient is elementwise in the
     * node's gradient (element j read before element j of dx is written;
     * GELU, dropout), so the two may share memory. The planner does that
     * where this node's backward is the first to write input 0's gradient. */
    TG_OP_BWD_DX_OVER_DY = 1u << 6,
    /* With TG_OP_BWD_FRESH, for input 0: the backward reads input 0's value
     * only before it writes any of input 0's gradient (linear: dW first),
     * so with tg_graph_set_share_values, where this backward is the value's
     * last reader and the gradient's first writer, the gradient takes the
     * value's memory. */
    TG_OP_BWD_DX_OVER_X = 1u << 7,
    /* Elementwise forward: element j of the output depends on element j of
     * each input only, read before element j of the output is written, and
     * input 0 has the output's element count. Where input 0's value is read
     * by nothing after this forward (forward-only graphs, or with
     * tg_graph_set_share_values), the planner puts the output in its memory. */
    TG_OP_FWD_INPLACE = 1u << 8,
};

struct tg_onnx;   /* an ONNX model being written (engine/io/onnx.h) */

typedef struct tg_op {
    const char *name;                          /* "einsum", "softmax" */
    tg_status (*forward)(tg_node *n);
    tg_status (*backward)(tg_node *n);         /* NULL: no gradient flows through */
    /* The key attribute for diagrams and messages ("blhe,bshe->bhls",
     * "dim=-1"); NULL when the op has none. */
    void (*describe)(const tg_node *n, char *buf, size_t len);
    /* For gradcheck: a hash of the op's discrete decisions at the current
     * values (relu signs, topk picks). A probe that changes it straddles a
     * kink and is left out. NULL: the op is smooth. */
    uint64_t (*kinks)(const tg_node *n);
    /* Forward FLOPs of one call, counted from the shapes by the rule in
     * cost.h (2 per multiply-add). NULL: one per output element (an
     * elementwise op). Views count 0 whatever this says. */
    double (*flops)(const tg_node *n);
    unsigned flags;                            /* enum tg_op_flags */
    /* ONNX export (tg_graph_onnx_save): add the ONNX nodes that compute n's
     * value, named tg__onnx_value(m, n), from its inputs' values
     * (tg__onnx_in); inference semantics (dropout is the identity). NULL:
     * the op has no ONNX form, and exporting a graph that uses it fails
     * naming it. */
    tg_status (*onnx)(const tg_node *n, struct tg_onnx *m);
} tg_op;

struct tg_node {
    int           id;          /* creation index = topological position */
    tg_node_kind  kind;
    const tg_op  *op;          /* NULL for leaves */
    tg_graph     *graph;
    int           n_in;
    tg_node     **in;          /* inputs, all created earlier */
    tg_tensor     value;       /* the result; data set by the plan (leaves: now) */
    tg_tensor     grad;        /* dL/d value; data NULL unless requires_grad */
    bool          requires_grad;
    bool          keep;        /* value stays readable after forward (tg_node_keep) */
    int           scope;       /* innermost scope at creation */
    const char   *name;        /* leaves: input name / state_dict key */
    tg_param     *param;       /* TG_NODE_PARAM: the parameter */
    void         *attr;        /* op attributes (tg_node_attr) */
    int           n_buf;
    tg_tensor     buf[TG_NODE_MAX_BUFFERS];   /* saved values (tg_node_buffer) */
    size_t        scratch;     /* bytes of scratch needed by forward/backward */
};

/* Create an op node with n_in inputs and an output of dtype/shape. Returns
 * NULL if the graph is in error or an input is NULL (sticky error), or on a
 * bad shape / out of memory (then the graph goes into error). */
tg_node *tg_node_new(tg_graph *g, const tg_op *op, int n_in, tg_node *const *in,
                     tg_dtype dt, int rank, const int64_t *shape);

/* Check the common preconditions of a builder: g is usable and not in error,
 * and none of the n inputs is NULL or from another graph. Returns false (after
 * setting the graph error where needed) when the builder must return NULL. */
bool tg_builder_check(tg_graph *g, const char *op, int n, tg_node *const *in);

/* Zeroed attribute block of `size` bytes owned by the graph; NULL on OOM
 * (graph in error). Also stored in n->attr. */
void *tg_node_attr(tg_node *n, size_t size);

/* A copy of s owned by the graph (for string attributes); NULL on OOM. */
char *tg_graph_strdup(tg_graph *g, const char *s);

/* Declare a saved buffer (e.g. a dropout mask, layernorm statistics) that
 * lives from forward to backward. Returns its index in n->buf, or -1 on error
 * (graph in error). Data is allocated by the plan. */
int tg_node_buffer(tg_node *n, tg_dtype dt, int rank, const int64_t *shape);

/* Declare that forward or backward needs `bytes` of scratch memory. */
void tg_node_scratch(tg_node *n, size_t bytes);

/* The scratch block at run time (size: the largest declared; 64-byte aligned). */
void *tg_graph_scratch(tg_graph *g);

/* Inside the backward of an op with TG_OP_BWD_FRESH: true when this backward
 * is the first to touch input k's gradient in this pass, so it must set every
 * element of it (dx = v rather than dx += v). Always false for a gradient
 * that is also another input's of n, and for leaves and parameters. */
bool tg_grad_fresh(const tg_node *n, int k);

#ifdef __cplusplus
}
#endif
#endif
