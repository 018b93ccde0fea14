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
 * graph's own, fixed: a graph is built for one batch size; for a model of
 * any batch size, give the same model built at a second batch size to
 * tg_graph_onnx_save_batch.
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

/* The same with a symbolic batch size "B": g2 is the same model built at
 * another batch size (the same ops in the same order; outputs2 its outputs).
 * The first input dim that differs between the graphs is the batch; every
 * shape the model computes with is then k * B, read off that input at run
 * time (Shape, Gather), and the inputs' and outputs' batch dims are "B"; a
 * constant [batch, ...] whose batch slices are all equal is kept as one
 * slice and expanded to [B, ...]. Where the graphs differ otherwise (a
 * constant or an attribute that depends on the batch size otherwise, an
 * input or output dim that is another multiple of it) it is
 * TG_ERR_INVALID, "no dynamic batch: " and the reason, and nothing is
 * written: tg_graph_onnx_save then writes fixed shapes. */
tg_status tg_graph_onnx_save_batch(const tg_graph *g, const tg_graph *g2, int n_out,
                                   tg_node *const *outputs, tg_node *const *outputs2,
                                   const char *const *names, const char *path);

#ifdef __cplusplus
}
#endif
#endif
