/*
 * einops_parse.h - the einops pattern parser and shape inference shared by
 * einops_parse.c and einops.c. Library-private.
 *
 * tg__ein_prepare turns (pattern, input shape, keyword lengths) into a recipe:
 * the elementary axes (every name, anonymous number and ellipsis dim), their
 * lengths, which of them the input is made of (in input order) and the order
 * in which they make up the output. The kernels then need nothing else.
 */
#ifndef TG_EINOPS_PARSE_H
#define TG_EINOPS_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include "einops.h"
#include "tensor.h"

/* Most elementary axes one pattern may have (after "..." expands). */
#define TG__EIN_MAX_AXES 32

typedef enum tg__ein_kind { TG__EIN_REARRANGE, TG__EIN_REPEAT, TG__EIN_REDUCE } tg__ein_kind;

typedef struct tg__ein_recipe {
    /* Elementary axes: the input's first (left side, in order; the input is
     * their C-order flattening), then repeat's new axes (right side order). */
    int     n_axes, n_left;
    int64_t len[TG__EIN_MAX_AXES];
    int     name_off[TG__EIN_MAX_AXES];   /* name in the pattern; -1: anonymous or "..." */
    int     name_len[TG__EIN_MAX_AXES];
    bool    on_right[TG__EIN_MAX_AXES];   /* false: reduced away (reduce only) */
    /* The output is the C-order flattening of these axes, in this order. */
    int     n_right;
    int     right[TG__EIN_MAX_AXES];
    int     out_rank;
    int64_t out_shape[TG_MAX_RANK];
} tg__ein_recipe;

/* Parse `pattern` for op `kind` (`what` names it in messages the way einops
 * does: "rearrange", "repeat" or the reduction "sum"/"mean"/"max"/"min"),
 * match it against an input of (rank, shape) and the keyword lengths, and fill
 * *r. On a bad pattern or shape writes einops' inner message into err and
 * returns false. The caller has checked that pattern and axes are non-NULL
 * (axes may be NULL when n_kw is 0). */
bool tg__ein_prepare(const char *pattern, tg__ein_kind kind, const char *what, int rank,
                     const int64_t *shape, int n_kw, const tg_axis_len *kw, tg__ein_recipe *r,
                     char *err, size_t errlen);

#endif
