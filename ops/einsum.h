/*
 * einsum.h - torch.einsum as a graph op (OPS.md section 4), forward and backward.
 */
#ifndef TG_EINSUM_H
#define TG_EINSUM_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most operands one einsum takes (PyTorch has no limit). */
#define TG_EINSUM_MAX_OPERANDS 8

/* y = torch.einsum(equation, operands[0], ..., operands[n-1]).
 *
 * Grammar and meaning are PyTorch's: labels [A-Za-z] (case-sensitive), terms
 * separated by ',', optional "->" output (implicit output: the ellipsis dims,
 * then the labels used exactly once, uppercase before lowercase), at most one
 * "..." per term (dims aligned from the right and broadcast), spaces ignored,
 * a label repeated in one term takes the diagonal, labels not in the output
 * are summed, size-1 dims broadcast against the same label elsewhere.
 *   "blhe,bshe->bhls": [B, L, H, E] x [B, S, H, E] -> [B, H, L, S]
 *   "ij,jh" (implicit): [2, 3] x [3, 4] -> [4, 2] (output "hi")
 *
 * Operands: 1 .. TG_EINSUM_MAX_OPERANDS nodes of the graph's float dtype; the
 * same node may appear more than once (its gradient gets every contribution).
 * The equation is copied. Result: a new node (rank <= TG_MAX_RANK) owned by g.
 *
 * Errors (NULL, graph error set): PyTorch's messages, prefixed "einsum(): "
 * ("fewer operands were provided than specified in the equation", "subscript j
 * has size 2 for operand 1 which does not broadcast with previously seen size
 * 3", ...), plus NULL equation, non-ASCII bytes, too many operands, result rank
 * above TG_MAX_RANK, element counts that overflow, operands of another dtype. */
tg_node *tg_einsum(tg_graph *g, const char *equation, int n, tg_node *const *operands);

#ifdef __cplusplus
}
#endif
#endif

/* This family's line of the op registry (ops/ops.h is the list; ops/registry.c
 * reads it with TG__OP_FAMILY defined): its rows are tg__einsum_ops[]. */
#ifdef TG__OP_FAMILY
TG__OP_FAMILY(einsum)
#endif
