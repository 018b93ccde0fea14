/*
 * tensor.h - dtypes, shapes and the plain tensor struct.
 *
 * A tg_tensor is a dense, row-major (C order) array of up to TG_MAX_RANK
 * dims, PyTorch's conventions: the last dim is fastest, negative dims count
 * from the end. It is a plain struct: inside a graph the graph owns the data;
 * a tensor made by tg_tensor_new() owns its data and is freed with
 * tg_tensor_free(). There are no strides: views are whole-buffer aliases.
 */
#ifndef TG_TENSOR_H
#define TG_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. Float graphs are F32 (default) or F64 (gradient checks). */
typedef enum tg_dtype {
    TG_F32,   /* float */
    TG_F64,   /* double */
    TG_I64,   /* int64_t: indices (topk, gather/scatter), class targets */
    TG_BOOL,  /* uint8_t 0/1: masks */
    TG_DTYPE_COUNT
} tg_dtype;

/* Maximum rank of any tensor. PyTorch allows more; 8 covers every layer here. */
#define TG_MAX_RANK 8

typedef struct tg_tensor {
    tg_dtype dtype;
    int      rank;                 /* 0 .. TG_MAX_RANK; 0 = scalar with 1 element */
    int64_t  shape[TG_MAX_RANK];   /* shape[0..rank) */
    int64_t  numel;                /* product of shape (1 for rank 0) */
    void    *data;                 /* numel elements of dtype, 64-byte aligned */
} tg_tensor;

/* Name ("float32", "float64", "int64", "bool") and element size in bytes. */
const char *tg_dtype_name(tg_dtype dt);
size_t      tg_dtype_size(tg_dtype dt);
static inline bool tg_dtype_is_float(tg_dtype dt) { return dt == TG_F32 || dt == TG_F64; }

/* Element count of a shape; TG_ERR_LIMIT if rank is out of [0, TG_MAX_RANK],
 * a dim is negative, or the count (times 16 bytes) overflows. */
tg_status tg_shape_numel(int rank, const int64_t *shape, int64_t *numel);

/* Write "[2, 3, 4]" into buf (always NUL-terminated); returns buf. A rank
 * outside [0, TG_MAX_RANK] writes "[rank 99?]": it never reads past shape[]. */
char *tg_shape_str(int rank, const int64_t *shape, char *buf, size_t len);

/* Wrap a possibly negative dim for a tensor of the given rank (PyTorch: rank 0
 * accepts -1 and 0). Returns the wrapped dim, or -1 when it is out of range. */
int tg_wrap_dim(int64_t dim, int rank);

/* The check every public entry makes of a caller's tensor: not NULL, a known
 * dtype, rank in [0, TG_MAX_RANK], no negative dim, numel the product of the
 * shape (no overflow), and data non-NULL when numel > 0. TG_OK, or the error
 * (TG_ERR_INVALID, _DTYPE, _LIMIT, _SHAPE) with a message starting with
 * `what` ("tg_npy_save: numel is 2 but shape [1000000] has 1000000 elements").
 * tg_tensor_check_shape makes every check but the data one (for tensors whose
 * data is not there yet, or not wanted: shapes only). */
tg_status tg_tensor_check(const tg_tensor *t, const char *what);
tg_status tg_tensor_check_shape(const tg_tensor *t, const char *what);

/* A heap tensor, zero-filled; NULL on bad shape or out of memory (message in
 * tg_last_error()). Free with tg_tensor_free (NULL is fine). */
tg_tensor *tg_tensor_new(tg_dtype dt, int rank, const int64_t *shape);
void       tg_tensor_free(tg_tensor *t);
/* Deep copy of t into a new heap tensor (same dtype); NULL on failure. */
tg_tensor *tg_tensor_clone(const tg_tensor *t);

/* True when the two tensors have the same rank and dims. */
bool tg_tensor_same_shape(const tg_tensor *a, const tg_tensor *b);

/* Copy src into dst, converting between F32 and F64 (and I64 <-> I64, BOOL <-> BOOL)
 * as needed. The shapes must be equal; TG_ERR_SHAPE / TG_ERR_DTYPE otherwise. */
tg_status tg_tensor_copy(tg_tensor *dst, const tg_tensor *src);

/* Element i (flat, 0 <= i < numel) as a double / set from a double.
 * Out of range, or a NULL tensor or data: get returns NaN and set writes
 * nothing, both recording the error ("tg_tensor_get: index 9 outside [0, 4)");
 * neither reads or writes outside the data. */
double tg_tensor_get(const tg_tensor *t, int64_t i);
void   tg_tensor_set(tg_tensor *t, int64_t i, double v);

#ifdef __cplusplus
}
#endif
#endif
