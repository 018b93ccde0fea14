/*
 * graph_impl.h - the graph struct, shared by graph.c, node.c, forward.c,
 * backward.c, planner.c, cost.c, gradcheck.c and dot.c. Library-private.
 */
#ifndef TG_GRAPH_IMPL_H
#define TG_GRAPH_IMPL_H

#include "internal.h"
#include "op.h"

typedef struct tg__scope {
    const char *name;     /* last component */
    const char *path;     /* dotted path from the root */
    int         parent;   /* -1 for the root */
    int         depth;    /* 0 for the root */
} tg__scope;

struct tg_graph {
    tg_dtype   dtype;          /* float dtype of the graph */
    tg__arena  arena;          /* nodes, inputs arrays, attributes, strings, leaf data */
    tg_node  **nodes;          /* creation order */
    int        n_nodes, node_cap;
    tg__scope *scopes;
    int        n_scopes, scope_cap, cur_scope;
    tg_node  **param_table;    /* param pointer -> node */
    int        n_params, param_cap;
    tg_params **stores;        /* the parameter stores of param nodes, each retained once */
    int        n_stores, store_cap;

    bool       has_error;
    char       error[1024];

    bool       training, check_finite;
    bool       grad_enabled;   /* false: forward-only, values share memory by lifetime */
    bool       share_values;   /* with gradients: values go after the backward that reads them */
    bool       recompute;      /* with share_values: linear outputs recomputed too */
    bool       unfused;        /* fused ops' builders record their chain of ops instead */
    tg_rng     rng;

    /* the plan (planner.c) */
    bool       planned, ran_forward;
    void      *block;          /* one allocation for op results, grads, buffers */
    size_t     block_bytes;
    void      *scratch;
    size_t     scratch_bytes;
    size_t    *live;           /* per time 0 .. 2N + 1: the block's bytes live then */
    int64_t    n_live;
    uint8_t   *reach;          /* per node, for backward */
    int       *first_writer;   /* per node: the first backward to write its grad */
    /* recomputed values (TG_OP_RECOMPUTE), per node: the buffer the backward
     * pass recomputes the value into (NULL: not recomputed), the forward's
     * buffer to put back after the pass, and whether this pass did it yet */
    void     **remat;
    void     **remat_fwd;
    uint8_t   *remat_done;
    uint8_t   *fresh;          /* per node: its grad is to be set, not added to (TG_OP_BWD_FRESH) */
    double    *prof;           /* profiling on: per node, seconds forward [2i], backward [2i+1] */
    int        prof_cap;       /* nodes prof has room for */
};

/* With profiling on: seconds since t0 (a tg__prof_now()) added to node n's pass. */
double tg__prof_now(void);
void tg__prof_add(tg_node *n, int pass, double t0);

void tg__plan_release(tg_graph *g);
void tg__node_where(const tg_node *n, char *buf, size_t len);
/* Planned and not in error (plans on first use); else the error. */
tg_status tg__graph_ready(tg_graph *g);
/* "<pass> of node N (op) in scope: <last error>" as the error, with st. */
tg_status tg__run_failed(const tg_node *n, const char *pass, tg_status st);

static inline bool tg__is_view(const tg_node *n)
{
    return n->op && (n->op->flags & TG_OP_VIEW);
}

/* The node whose memory n's value and gradient live in (views share their input's). */
static inline tg_node *tg__root_of(const tg_node *n)
{
    while (tg__is_view(n)) n = n->in[0];
    return (tg_node *)n;
}

#endif
