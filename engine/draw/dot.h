/*
 * dot.h - a graph as a Graphviz diagram for documentation.
 *
 * One nested `subgraph cluster_*` per scope holding a node (labelled with its
 * name), op nodes labelled with the op and its key attribute ("einsum" /
 * "blhe,bshe->bhls"), every edge labelled with the full shape of the tensor
 * on it, parameters (named by their state_dict key), inputs, constants and
 * outputs drawn distinctly. Node ids are creation indices, so the same graph
 * always gives the same bytes (diffable in a repository).
 */
#ifndef TG_DOT_H
#define TG_DOT_H

#include <stdio.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_rankdir { TG_RANKDIR_TB, TG_RANKDIR_LR } tg_rankdir;

/* What tg_dot_opts.decorate adds to one drawn item. */
typedef struct tg_dot_decor {
    char lines[256];   /* label lines appended ("\n" between them); "" for none */
    char fill[16];     /* fill colour ("#rrggbb"); "" keeps the default */
} tg_dot_decor;

typedef struct tg_dot_opts {
    /* 0: every scope expanded. N > 0: every scope at depth N is drawn as one
     * box (with its input and output shapes on the edges); shallower scopes
     * stay clusters. Depths count from the outermost scope that holds an op
     * of its own or several child scopes, so a layer built inside a scope of
     * its own name counts from its modules: depth 1 shows its modules (or a
     * model's top-level modules) as boxes. A box with no op (a scope of
     * constants or parameters only) is not drawn: its nodes are, without a
     * frame; a scope with no node is never drawn. */
    int         depth;
    /* Add the backward pass: a gradient node per node that receives a
     * gradient (as the planner decides it: views and fused ops included, so
     * the gradient edges run as one flow from the output's gradient to every
     * parameter's and input's; a box gets one when a node in it does),
     * gradient edges running against the forward ones, and a dotted link from
     * each forward node to its gradient. */
    bool        backward;
    tg_rankdir  rankdir;
    const char *title;      /* graph label; NULL for none */
    /* Extra label lines and a fill colour per op node (node >= 0, scope -1)
     * and per module box or cluster (node -1, scope >= 1), filled into a
     * zeroed *d; NULL: none. tgraph dot --profile draws cost with it. */
    void (*decorate)(void *ctx, int node, int scope, tg_dot_decor *d);
    void       *decorate_ctx;
    const char *legend;     /* a note drawn beside the graph; NULL for none */
} tg_dot_opts;

/* Write g as .dot text to f. opts may be NULL (defaults: expanded, forward
 * only, top to bottom). Errors: a graph in error (TG_ERR_STATE), a write
 * failure (TG_ERR_IO). */
tg_status tg_graph_dot(const tg_graph *g, const tg_dot_opts *opts, FILE *f);

/* The same into a file, atomically (a failed write leaves the old file). */
tg_status tg_graph_dot_save(const tg_graph *g, const tg_dot_opts *opts, const char *path);

#ifdef __cplusplus
}
#endif
#endif
