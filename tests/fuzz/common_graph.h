/*
 * common_graph.h - helpers for the fuzz targets that build a graph: make a
 * small input leaf, and run forward and backward when the sizes are small
 * enough to keep one execution well under a millisecond.
 */
#ifndef TG_FUZZ_GRAPH_H
#define TG_FUZZ_GRAPH_H

#include "fuzz.h"
#include "tgraph.h"

/* Run forward, then backward from out with a patterned upstream gradient,
 * when out exists and work stays under `budget` elements. Errors are fine
 * (they are what bad inputs produce); crashes are not. */
static inline void fz_run(tg_graph *g, tg_node *out, int64_t work, int64_t budget)
{
    if (!out || tg_graph_error(g) || work > budget) return;
    const tg_tensor *v = tg_node_value(out);
    if (!v || v->numel > budget) return;
    if (tg_graph_forward(g) != TG_OK) return;
    if (!tg_dtype_is_float(v->dtype)) return;
    tg_tensor *dy = tg_tensor_new(v->dtype, v->rank, v->shape);
    if (!dy) return;
    for (int64_t i = 0; i < dy->numel; i++) tg_tensor_set(dy, i, (double)(i % 7) - 3.0);
    (void)tg_graph_backward(g, out, dy);
    tg_tensor_free(dy);
}

/* Fill a float leaf with a small pattern so kernels see distinct values. */
static inline void fz_fill(tg_node *n)
{
    if (!n) return;
    tg_tensor *t = (tg_tensor *)tg_node_value(n);
    if (!tg_dtype_is_float(t->dtype)) return;
    for (int64_t i = 0; i < t->numel; i++) tg_tensor_set(t, i, 0.25 * (double)(i % 11) - 1.0);
}

#endif
