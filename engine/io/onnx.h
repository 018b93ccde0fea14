/*
 * onnx.h - an ONNX model (opset 17) built in memory and written as protobuf
 * by our own writer (onnx.c; no protobuf library). Library-private: the
 * graph exporter (onnx_graph.c) and the ops' ONNX hooks (tg_op.onnx, one per
 * op in ops/) use it; users call tg_graph_onnx_save (onnx_export.h).
 *
 * A model is a list of nodes (op_type, input and output value names,
 * attributes), initializers (named tensors), and the graph's inputs and
 * outputs with their types. Value names come from the exporter: every graph
 * node's value has one (tg__onnx_value), and a hook that needs intermediate
 * values asks for fresh names (tg__onnx_tmp). Errors are sticky: after the
 * first failure (out of memory, a bad argument) every call does nothing and
 * tg__onnx_status says what went wrong.
 *
 * Field numbers are onnx.proto3's (onnx/onnx.proto3, IR version 8).
 */
#ifndef TG_ONNX_H
#define TG_ONNX_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "op.h"
#include "tensor.h"

#define TG__ONNX_OPSET 17
#define TG__ONNX_IR_VERSION 8

typedef struct tg_onnx tg_onnx;

/* A new, empty model; NULL when out of memory. Free with tg__onnx_free. */
tg_onnx *tg__onnx_new(const char *graph_name);
void     tg__onnx_free(tg_onnx *m);
/* TG_OK, or the first error (its message was set with tg_set_error then and
 * is kept in the model: tg__onnx_error). */
tg_status   tg__onnx_status(const tg_onnx *m);
const char *tg__onnx_error(const tg_onnx *m);
/* Record an error (printf-style); the first one is kept. Returns its status. */
tg_status tg__onnx_fail(tg_onnx *m, tg_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- value names ---- */

/* Name node id's value (a copy is kept). */
void        tg__onnx_set_value(tg_onnx *m, int id, const char *name);
/* The name of node n's value ("" if it has none yet: a bug of the exporter). */
const char *tg__onnx_value(tg_onnx *m, const tg_node *n);
/* The name of n's input i's value. */
const char *tg__onnx_in(tg_onnx *m, const tg_node *n, int i);
/* A fresh name for an intermediate value of n's export ("<n's name>:<what>N"). */
const char *tg__onnx_tmp(tg_onnx *m, const tg_node *n, const char *what);

/* ---- nodes ---- */

/* Add a node op_type(in[0..n_in)) -> out[0..n_out) (names; "" is an omitted
 * optional input). Its attributes follow with tg__onnx_attr_*. */
void tg__onnx_node(tg_onnx *m, const char *op_type, int n_in, const char *const *in, int n_out,
                   const char *const *out);
/* One output, inputs as arguments: TG__ONNX_NODE(m, "Add", y, a, b). */
#define TG__ONNX_NODE(m, op, out, ...)                                                          \
    tg__onnx_node((m), (op), (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *)), \
                  (const char *[]){__VA_ARGS__}, 1, (const char *[]){(out)})

/* Attributes of the node added last. */
void tg__onnx_attr_int(tg_onnx *m, const char *name, int64_t v);
void tg__onnx_attr_float(tg_onnx *m, const char *name, double v);
void tg__onnx_attr_str(tg_onnx *m, const char *name, const char *v);
void tg__onnx_attr_ints(tg_onnx *m, const char *name, int n, const int64_t *v);

/* ---- initializers and constants ---- */

/* An initializer named name holding t (F32, F64, I64 or BOOL). The data is
 * read when the model is written: t must outlive the model. */
void tg__onnx_initializer(tg_onnx *m, const char *name, const tg_tensor *t);
/* A 1-d int64 constant of n values (copied); returns its name. */
const char *tg__onnx_const_i64(tg_onnx *m, int n, const int64_t *v);
/* A 0-d constant of dtype dt (F32, F64 or I64) holding v; returns its name. */
const char *tg__onnx_const_scalar(tg_onnx *m, tg_dtype dt, double v);

/* ---- the graph's inputs and outputs ---- */

/* A graph input (output when `output`) named name of dtype dt and shape
 * shape[0..rank); dim_param[d] non-NULL makes dim d symbolic ("B"). */
void tg__onnx_io(tg_onnx *m, bool output, const char *name, tg_dtype dt, int rank,
                 const int64_t *shape, const char *const *dim_param);

/* ---- common patterns of the hooks ---- */

/* out = Reshape(in, shape[0..rank)). */
void tg__onnx_reshape(tg_onnx *m, const char *in, const char *out, int rank, const int64_t *shape);
/* out = Reshape(in, n's own shape): a hook for a reshape-like op. */
void tg__onnx_reshape_as(tg_onnx *m, const tg_node *n, const char *in, const char *out);

/* Dynamic batch: m2 is the model of the same graph built at batch size b2
 * (m's at b1). Where they differ only by the batch size (shape constants
 * k * b1 against k * b2, inputs' and outputs' dims b1 against b2), m's shape
 * constants are computed from the batch size read off dim `dim` of graph
 * input `input` (Shape, Gather), graph constants [b1, ...] of equal slices
 * become one slice expanded to [B, ...], and those dims become "B".
 * TG_OK; else TG_ERR_INVALID with the reason in why, m unchanged (or m's
 * sticky error). */
tg_status tg__onnx_batch(tg_onnx *m, const tg_onnx *m2, const char *input, int dim, int64_t b1,
                         int64_t b2, char *why, size_t n);

/* Write the model (ModelProto) to f. TG_OK or the model's error, or TG_ERR_IO. */
tg_status tg__onnx_write(tg_onnx *m, FILE *f);

#endif
