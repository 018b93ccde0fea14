/*
 * onnx_export.h - a graph's forward pass as an ONNX model (opset 17), for
 * onnxruntime, Netron and every other ONNX consumer.
 *
 * The file is protobuf written by tgraph's own writer (no library). Inputs
 * keep their names, parameters become initializers under their state_dict
 * keys, constants initializers named "const:ID"; each op is written by its
 * descriptor's ONNX hook (tg_op.onnx, op.h): einsum as Einsum, einops as
 * Reshape/Transpose/Expand, GELU in its Erf form, layer_norm as
 * LayerNormalization, dropout as Identity (inference). Shapes are the
 * graph's own, fixed: a graph is built for one batch size.
 */
#ifndef TG_ONNX_EXPORT_H
#define TG_ONNX_EXPORT_H

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Write the part of g's forward pass that computes outputs[0..n_out) as an
 * ONNX model to path (through tg_write_atomic; "-" is stdout), the outputs
 * named names[i]. Every input of g is a graph input (used or not). An op
 * without an ONNX form, a graph in error, or a bad output is TG_ERR_INVALID
 * with a message naming it (the op, its node and scope); nothing is written
 * then. g is only read. */
tg_status tg_graph_onnx_save(const tg_graph *g, int n_out, tg_node *const *outputs,
                             const char *const *names, const char *path);

#ifdef __cplusplus
}
#endif
#endif
