/*
 * einops_case.c - see einops_case.h.
 */
#include "einops_case.h"

tg_node *tt_ein_build(const ein_case *c, tg_graph *g, tg_node *x)
{
    const tg_axis_len *ax = c->n_axes ? c->axes : NULL;
    if (c->kind == R) return tg_rearrange(g, x, c->pattern, c->n_axes, ax);
    if (c->kind == P) return tg_repeat(g, x, c->pattern, c->n_axes, ax);
    return tg_reduce(g, x, c->pattern, c->red, c->n_axes, ax);
}
