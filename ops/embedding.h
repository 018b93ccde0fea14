/*
 * embedding.h - F.embedding: rows of a weight table picked by int64 ids.
 */
#ifndef TG_EMBEDDING_H
#define TG_EMBEDDING_H

#include <stdint.h>

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* padding_idx for "None": every row takes gradients. */
#define TG_EMBEDDING_NO_PADDING INT64_MIN

/* F.embedding(input, weight, padding_idx): y[..., :] = weight[input[...], :].
 * input: int64 ids of any shape (0-d too); weight: [V, C], float; the result
 * has shape input.shape + [C] and weight's dtype. Backward adds dy's rows into
 * weight's gradient at their ids (repeated ids accumulate), except the row
 * padding_idx (in [-V, V), negative counts from the end;
 * TG_EMBEDDING_NO_PADDING: none). An id outside [0, V) is an error of the
 * forward that names it; a non-int64 input, a weight that is not 2-d or a
 * padding_idx out of range are builder errors. */
tg_node *tg_embedding(tg_graph *g, tg_node *input, tg_node *weight, int64_t padding_idx);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__embedding_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(embedding)
#endif
