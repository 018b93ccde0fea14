/*
 * einops_kernels.h - what einops.c and einops_kernels.c share: the walk a
 * recipe becomes, the jobs over it, and the kernels that run them.
 * Library-private.
 *
 * einops.c's builders make each recipe (einops_parse.h) into walks (ein_walk);
 * its forwards and backwards hand them to the runners here:
 * tg__ein_run_copy (rearrange and repeat forward, rearrange backward into a
 * fresh gradient), tg__ein_run_gather_add (rearrange and reduce sum/mean
 * backward) and tg__ein_run_fold (reduce forward, repeat backward), or give
 * tg_parallel_for a kernel from here directly (int64 reduce, prod backward).
 */
#ifndef TG_EINOPS_KERNELS_H
#define TG_EINOPS_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "einops_parse.h"
#include "generic.h"
#include "graph.h"
#include "tensor.h"

/* A walk over some elementary axes, with the destination contiguous in walk
 * order and the source at a stride per axis. Unit axes are dropped, axes that
 * stay contiguous in both operands merged. */
typedef struct ein_walk {
    int     rank;                          /* 0: one element (none when empty) */
    bool    empty;                         /* an axis of length 0: nothing to visit */
    int64_t numel;                         /* elements visited (0 when empty) */
    int64_t inner, inner_src;              /* last axis: length and source stride (1, 0 at rank 0) */
    int64_t len[TG__EIN_MAX_AXES];
    int64_t src[TG__EIN_MAX_AXES];
} ein_walk;

enum { FOLD_SUM, FOLD_MAX, FOLD_MIN, FOLD_PROD };

typedef struct ein_fold {
    const ein_walk *outer, *inner;
    const void     *src;
    void           *dst;
    int64_t        *arg;          /* max/min: flat source index of each pick, or NULL */
    int             mode;
    double          scale;
    bool            accumulate;   /* dst += (backward) instead of dst = (forward) */
} ein_fold;

typedef struct ein_prod {        /* prod backward: outer over y, inner over a slice of x */
    const ein_walk *outer, *inner;
    const void     *x, *dy;
    void           *dx;
} ein_prod;

/* Rows of at least ~16k elements per task: tg_parallel_for's grain for items of
 * per_item elements. */
int64_t tg__ein_grain_for(int64_t per_item);
/* dst[k] = src[off(k)] over walk w, elements of es bytes (any dtype). */
void tg__ein_run_copy(const ein_walk *w, const void *src, void *dst, size_t es);
/* dst[k] += scale * src[off(k)] over walk w; float32 or float64 (dt). */
void tg__ein_run_gather_add(tg_dtype dt, const ein_walk *w, const void *src, void *dst,
                            double scale);
/* The fold j (sum/mean, max, min or prod; dst = or +=); float32 or float64 (dt). */
void tg__ein_run_fold(tg_dtype dt, ein_fold *j);
/* For tg_parallel_for over j->outer (vctx: an ein_fold): the fold over int64. */
void tg__ein_fold_i64_range(void *vctx, int64_t begin, int64_t end, int tid);
/* For tg_parallel_for over j->outer (vctx: an ein_prod): prod's backward,
 * dx[i] += dy[k] * (the product of the others in i's slice). */
TG_KERNEL_DECL(void, tg__ein_prod_backward_range, (void *vctx, int64_t begin, int64_t end,
                                                   int tid));
/* max/min backward of node n: dx[arg[k]] += dy[k]. */
TG_KERNEL_DECL(void, tg__ein_arg_backward, (tg_node *n, const int64_t *arg));

#endif
