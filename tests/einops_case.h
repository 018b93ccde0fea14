/*
 * einops_case.h - what the einops suites share (test_einops.c,
 * test_einops_errors.c): a case row's op, pattern, reduction and axis
 * lengths, and tt_ein_build, which adds that op to a graph.
 */
#ifndef TG_EINOPS_CASE_H
#define TG_EINOPS_CASE_H

#include "testutil.h"

enum { R, P, D };   /* rearrange, repeat, reduce */

typedef struct {
    const char         *name;   /* fixture folder under einops/ */
    int                 kind;
    const char         *pattern;
    tg_einops_reduction red;
    int                 n_axes;
    tg_axis_len         axes[2];
    bool                view;   /* the node must be a view (no copy) */
} ein_case;

#define SUM TG_EINOPS_SUM
#define MEAN TG_EINOPS_MEAN
#define MAX TG_EINOPS_MAX
#define MIN TG_EINOPS_MIN
#define PROD TG_EINOPS_PROD

/* The op of row c on x (with c's axis lengths, if any); NULL when the graph
 * rejects it (the message on g). */
tg_node *tt_ein_build(const ein_case *c, tg_graph *g, tg_node *x);

#endif
