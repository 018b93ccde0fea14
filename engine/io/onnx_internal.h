/*
 * onnx_internal.h - the model of onnx.h as data, shared by onnx.c (building
 * it), onnx_batch.c (a symbolic batch) and onnx_write.c (the protobuf
 * writer). Library-private.
 */
#ifndef TG_ONNX_INTERNAL_H
#define TG_ONNX_INTERNAL_H

#include "onnx.h"

enum { A_FLOAT = 1, A_INT = 2, A_STRING = 3, A_INTS = 7 };   /* AttributeProto.AttributeType */

typedef struct {
    const char *name;
    int         type;
    int64_t     i;
    double      f;
    const char *s;
    int         n;
    int64_t    *ints;
} ox_attr;

typedef struct {
    const char  *op;
    int          n_in, n_out, n_attr;
    const char **in, **out;
    ox_attr     *attr;
} ox_node;

typedef struct {
    const char      *name;
    const tg_tensor *t;          /* borrowed, or own */
    tg_tensor        own;        /* constants made here: data malloc'd */
} ox_init;

typedef struct {
    const char  *name;
    bool         output;
    tg_dtype     dt;
    int          rank;
    int64_t      shape[TG_MAX_RANK];
    const char  *param[TG_MAX_RANK];
} ox_io;

struct tg_onnx {
    const char *graph_name;
    ox_node    *nodes;
    int         n_nodes, node_cap;
    ox_init    *inits;
    int         n_inits, init_cap;
    ox_io      *io;
    int         n_io, io_cap;
    const char **values;          /* node id -> value name */
    int         n_values;
    void      **pool;             /* everything else malloc'd, freed at the end */
    int         n_pool, pool_cap;
    int         n_tmp;
    tg_status   st;
    char        err[512];
};

/* n bytes owned by the model (zeroed), freed with it; NULL on OOM (model in error). */
void       *tg__onnx_keep(tg_onnx *m, size_t n);
/* A copy of s owned by the model ("" on OOM). */
const char *tg__onnx_keep_str(tg_onnx *m, const char *s);
/* A new constant initializer of dtype dt, rank 0 or 1 (n values; its shape
 * may be changed after), named "onnx:const:N" (*name); its data to fill, NULL
 * on OOM. */
void       *tg__onnx_own_const(tg_onnx *m, tg_dtype dt, int rank, int64_t n, const char **name);

#endif
