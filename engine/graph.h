/*
 * graph.h - build a graph once, run forward/backward on it many times.
 *
 * A graph is a DAG of nodes. Each node is the result of one op on earlier
 * nodes, so creation order is a topological order: forward walks the nodes in
 * that order, backward walks them in reverse and calls each op's
 * vector-Jacobian product. Leaves are inputs (data written before each run),
 * constants, and parameters (owned by a tg_params store, see params.h).
 *
 * Memory: the graph owns its nodes and buffers. Buffers of op results, grads
 * and saved values are planned and allocated once, at the first forward (or
 * tg_graph_plan); later runs allocate nothing.
 *
 * Errors: a builder (any function returning tg_node *) that gets bad input
 * records one message on the graph and returns NULL. Once a graph is in error,
 * every later builder returns NULL too (a sticky error), so builder code stays
 * linear and checks once at the end with tg_graph_error().
 */
#ifndef TG_GRAPH_H
#define TG_GRAPH_H

#include "tensor.h"
#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_graph tg_graph;
typedef struct tg_node  tg_node;     /* defined in op.h, for op implementers */
typedef struct tg_param tg_param;    /* params.h */

/* A new, empty graph whose float tensors are float_dtype (TG_F32 or TG_F64).
 * NULL when out of memory or float_dtype is not a float type (tg_last_error()).
 * Free with tg_graph_free (NULL is fine); this frees every node and buffer,
 * and lets go of the parameter stores the graph holds (see tg_param_node). */
tg_graph *tg_graph_new(tg_dtype float_dtype);
void      tg_graph_free(tg_graph *g);

/* The float dtype given at creation. */
tg_dtype tg_graph_dtype(const tg_graph *g);

/* The sticky error message, or NULL when the graph is fine. Owned by the graph. */
const char *tg_graph_error(const tg_graph *g);

/* Record a builder error on g (only the first one is kept; the current scope
 * path is prefixed). Always returns NULL, so a builder can `return tg_graph_fail(...)`. */
tg_node *tg_graph_fail(tg_graph *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Number of nodes, and node i in creation order (NULL when out of range). */
int      tg_graph_node_count(const tg_graph *g);
tg_node *tg_graph_node(const tg_graph *g, int i);

/* ---- scopes: every node created inside records the innermost scope ---- */

/* Enter a named scope ("time_attention", "MLP1"); names nest into a dotted
 * path ("encoder.encode_blocks.0"). Returns TG_OK, or an error (and the graph
 * goes into error) on a bad name or when out of memory. */
tg_status tg_scope_push(tg_graph *g, const char *name);
/* printf-style variant: tg_scope_pushf(g, "encode_layers.%d", i). */
tg_status tg_scope_pushf(tg_graph *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Leave the innermost scope (no effect at the root). */
void tg_scope_pop(tg_graph *g);

/* Scope ids: 0 is the root (""). Path and last component of a scope, its
 * parent (-1 for the root) and depth (0 for the root). */
int         tg_graph_scope_count(const tg_graph *g);
const char *tg_graph_scope_path(const tg_graph *g, int scope);
const char *tg_graph_scope_name(const tg_graph *g, int scope);
int         tg_graph_scope_parent(const tg_graph *g, int scope);
int         tg_graph_scope_depth(const tg_graph *g, int scope);

/* ---- leaves ---- */

/* An input leaf of the given dtype and shape (float inputs must use the
 * graph's float dtype). Its buffer is allocated now, zero-filled; write it
 * with tg_node_set or through tg_node_value(n)->data before each run. */
tg_node *tg_input(tg_graph *g, const char *name, tg_dtype dt, int rank, const int64_t *shape);

/* A constant leaf holding a copy of t (float data converted to the graph's
 * float dtype). */
tg_node *tg_constant(tg_graph *g, const char *name, const tg_tensor *t);

/* A constant filled with one value (float dtype of the graph). */
tg_node *tg_full(tg_graph *g, int rank, const int64_t *shape, double value);

/* The leaf of a parameter from a store (params.h): its value and grad are the
 * store's, so backward accumulates into tg_param.grad. Asking twice for the
 * same parameter returns the same node. The store's dtype must be the graph's.
 * A buffer (params.h) gives a leaf without gradient, of its own dtype (an
 * int64 buffer in any graph); ops read it as a constant, and the node's value
 * is the store's memory, so an op that updates it (batch_norm in training)
 * updates the store. From here until tg_graph_free the graph holds p's store: tg_params_free
 * before tg_graph_free is safe, the store goes with the last graph using it
 * (params.h). */
tg_node *tg_param_node(tg_graph *g, tg_param *p);

/* Ask for the gradient of an input leaf (floats only). Before the first
 * forward or tg_graph_plan: a change after that is refused with TG_ERR_STATE
 * and a message naming the input (setting the value it already has is fine). */
tg_status tg_node_set_requires_grad(tg_node *n, bool requires_grad);

/* ---- reading nodes ---- */

/* The node's value; its data is valid after a forward (leaves: always). */
const tg_tensor *tg_node_value(const tg_node *n);
/* The node's gradient after a backward, or NULL when it has none. */
const tg_tensor *tg_node_grad(const tg_node *n);
/* Copy src into an input or constant leaf (shape must match; F32/F64 convert). */
tg_status tg_node_set(tg_node *n, const tg_tensor *src);
/* Name of a leaf (input name or state_dict key), or of the op for op nodes. */
const char *tg_node_name(const tg_node *n);
int         tg_node_id(const tg_node *n);
int         tg_node_scope(const tg_node *n);

/* ---- running ---- */

/* Dropout and friends look at this flag (default: false = eval). */
void tg_graph_set_training(tg_graph *g, bool training);
bool tg_graph_training(const tg_graph *g);

/* Unfused (off by default): a fused op's builder records the chain of ops it
 * computes instead of its one node, inside a scope named after the op, so a
 * diagram shows the steps (tgraph dot --unfuse). The chain is the unfused
 * form the op documents (sdpa: einsum, masked_fill, softmax, dropout, einsum,
 * as FullAttention records it when it returns the weights), with the same
 * results and more memory. Set before building; nodes built earlier stay. */
void tg_graph_set_unfused(tg_graph *g, bool on);
bool tg_graph_unfused(const tg_graph *g);

/* The graph's own RNG (dropout masks). Seeded with 0 at creation. */
void    tg_graph_seed(tg_graph *g, uint64_t seed);
tg_rng *tg_graph_rng(tg_graph *g);

/* When on, forward checks every op result for NaN/Inf and fails with
 * TG_ERR_NUMERIC naming the first node (op, scope, shape) that produced one. */
void tg_graph_set_check_finite(tg_graph *g, bool on);

/* Gradients on (default) or off (like torch.no_grad): a graph without
 * gradients cannot run backward, and its intermediate values share memory by
 * lifetime, so only outputs (nodes nothing consumes) and kept nodes are
 * readable after forward. Set before the first run. */
void tg_graph_set_grad_enabled(tg_graph *g, bool enabled);

/* Training memory (off by default): with gradients on, let an intermediate
 * value share memory once nothing can read it any more: after its last
 * forward consumer, or after the backward that reads it (each op declares
 * whether its backward reads its output and its inputs: TG_OP_BWD_NO_OUTPUT,
 * TG_OP_BWD_NO_INPUTS in op.h). The cost: only outputs and kept nodes are
 * readable after forward, and each forward supports one backward pass (from
 * any one output); a second backward after the same forward may read
 * overwritten values. Set before the first run. tgraph train and bench use it. */
void tg_graph_set_share_values(tg_graph *g, bool on);

/* With share_values, values of cheap deterministic ops that a backward reads
 * (GELU, layer_norm, and rearranges / repeats of those: TG_OP_RECOMPUTE in
 * op.h) are not kept from the forward but recomputed just before that
 * backward, and gradients may take the memory of values no longer read (a
 * linear's dX over its input: TG_OP_BWD_DX_OVER_X). Recompute on (off by default)
 * does the same for the outputs of linear layers (TG_OP_RECOMPUTE_COSTLY):
 * activation checkpointing, one more GEMM per recomputed linear per step for
 * less memory (e.g. the Q, K, V projections that attention's backward reads).
 * Results are bitwise the same either way. Set before the first run. */
void tg_graph_set_recompute(tg_graph *g, bool on);

/* Keep n's value readable after forward even where memory is shared (an
 * intermediate result you want to look at, e.g. attention weights). */
void tg_node_keep(tg_node *n);

/* Allocate every buffer now (forward does this on its first call). Buffers
 * whose lifetimes do not overlap share memory: the gradients of op nodes are
 * working memory of the backward pass (read gradients of inputs and
 * parameters), and without gradients intermediate values are too. */
tg_status tg_graph_plan(tg_graph *g);

/* Bytes of tensor memory the plan holds (op results, grads, saved values,
 * scratch; leaves and parameters excluded). 0 before planning. */
size_t tg_graph_planned_bytes(const tg_graph *g);

/* What the plan holds over time: the bytes of the block's buffers live at
 * time t, where time runs as in the planner: node i's forward at t = i, its
 * backward at t = 2N - i (N = tg_graph_node_count), t = N between the two
 * passes and t = 2N + 1 after the backward (what outlives it: outputs, kept
 * values, saved buffers, input gradients). Scratch is apart (one buffer, at
 * every time). So node i's forward runs with tg_graph_plan_live_bytes(g, i)
 * bytes of values, gradients and saved buffers in use, its backward with
 * (g, 2N - i). The largest over t is at most the block's size
 * (tg_graph_planned_bytes less scratch): greedy placement may leave gaps.
 * 0, with an error recorded, before planning or for t outside [0, 2N + 1]. */
size_t tg_graph_plan_live_bytes(const tg_graph *g, int64_t t);

/* Bytes tgraph's allocator holds now, process-wide (every tensor, graph,
 * plan, parameter store and optimizer state of the library; not the GEMM's
 * per-thread packing buffers, about 4.3 MB a thread whatever the model), as
 * the C library counts them (its usable size of each block; 0 where it
 * cannot tell: glibc only), and the most it has held since start or the last
 * tg_alloc_reset_peak (which sets the peak to what is held now). */
size_t tg_alloc_live_bytes(void);
size_t tg_alloc_peak_bytes(void);
void   tg_alloc_reset_peak(void);

/* A cap on the bytes one plan may hold (what tg_graph_planned_bytes would
 * say): tg_graph_plan, and so the first forward, of a graph above it fails
 * with TG_ERR_LIMIT naming both figures, before anything is allocated.
 * 0 (the default) is no cap. Process-wide; the tgraph command sets it to the
 * memory left once the parameters are counted (TGRAPH_MEM_LIMIT or
 * MemAvailable). */
void   tg_set_plan_limit(size_t bytes);
size_t tg_plan_limit(void);

/* Per-op timing: with profiling on, every forward and backward call of an op
 * is timed (CLOCK_MONOTONIC, two clock reads per call) and summed per node,
 * from the moment it is turned on; turning it on again starts from zero, and
 * nodes added after that are not timed. Off by default. */
typedef struct tg_op_time {
    const char *op;          /* the op's name ("linear", "sdpa") */
    double      forward_s;   /* seconds in its forward calls */
    double      backward_s;  /* seconds in its backward calls, with the recomputation
                              * of values they read (TG_OP_RECOMPUTE) */
    long        nodes;       /* nodes of this op in the graph */
} tg_op_time;

void tg_graph_set_profile(tg_graph *g, bool on);
/* Up to max entries, one per op name, in the order the ops first appear in
 * the graph; returns how many there are (all of them, even beyond max). */
int tg_graph_profile(const tg_graph *g, tg_op_time *out, int max);

/* Run every node. TG_OK, or an error (message in tg_last_error()): the graph
 * is in error, a data-dependent check failed (e.g. an index out of range),
 * out of memory at the first run, or the finite check fired. */
tg_status tg_graph_forward(tg_graph *g);

/* Reverse pass from `out`: its gradient is seeded with dy (same shape as out)
 * or, when dy is NULL, with 1 (out must then have one element). Gradients of
 * op nodes and inputs are reset first; parameter gradients accumulate into
 * the store (PyTorch semantics: call tg_params_zero_grad between steps).
 * Only nodes on a path from a parameter or requires-grad input to `out` run. */
tg_status tg_graph_backward(tg_graph *g, tg_node *out, const tg_tensor *dy);

#ifdef __cplusplus
}
#endif
#endif
