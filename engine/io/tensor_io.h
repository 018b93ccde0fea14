/*
 * tensor_io.h - tensors in files: NumPy .npy, safetensors, and parameter
 * stores by state_dict name. Every file tgraph writes goes through one
 * write-temp-then-rename helper, so a crash mid-write leaves the previous file
 * intact.
 *
 * All loaders validate before they allocate anything the file asks for, and
 * report the file and the problem in tg_last_error() (OPS.md 16.3, 17.3).
 */
#ifndef TG_TENSOR_IO_H
#define TG_TENSOR_IO_H

#include <stdio.h>

#include "tensor.h"
#include "params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- .npy (format 1.0 - 3.0) ---- */

/* Read a .npy file into a new heap tensor (free with tg_tensor_free).
 * Accepted descr: <f4 -> F32, <f8 -> F64, <i8 -> I64, |b1 -> BOOL ('=' native
 * order accepted too); fortran_order True is read (transposed to row-major);
 * bytes after the data are ignored (like numpy); big-endian, other dtypes,
 * structured and object arrays are rejected with a message. */
tg_status tg_npy_load(const char *path, tg_tensor **out);
/* The same from memory; `what` names the source in messages. */
tg_status tg_npy_parse(const void *buf, size_t len, const char *what, tg_tensor **out);
/* Write t as .npy v1.0 (descr <f4/<f8/<i8/|b1), atomically. */
tg_status tg_npy_save(const char *path, const tg_tensor *t);

/* ---- safetensors ---- */

typedef struct tg_st_file tg_st_file;

/* Parse a whole safetensors file. Tensors of dtype F32, F64, I64 and BOOL
 * are kept as they are; F16 and BF16 are converted to F32, and I8, I16, I32,
 * U8, U16, U32 to I64; any other dtype is an error naming it. */
tg_status tg_st_load(const char *path, tg_st_file **out);
tg_status tg_st_parse(const void *buf, size_t len, const char *what, tg_st_file **out);
void      tg_st_free(tg_st_file *f);

int              tg_st_count(const tg_st_file *f);                 /* tensors, sorted by name */
const char      *tg_st_name(const tg_st_file *f, int i);
const tg_tensor *tg_st_tensor(const tg_st_file *f, int i);
const tg_tensor *tg_st_find(const tg_st_file *f, const char *name);  /* NULL if absent */
/* __metadata__ entries (string -> string). */
int         tg_st_meta_count(const tg_st_file *f);
const char *tg_st_meta_key(const tg_st_file *f, int i);
const char *tg_st_meta_value(const tg_st_file *f, int i);
const char *tg_st_meta_find(const tg_st_file *f, const char *key);   /* NULL if absent */

/* Write n named tensors (and optional string metadata) as safetensors,
 * atomically: tensors ordered by dtype alignment then name, header padded to
 * a multiple of 8 (OPS.md 17.4). Names must be unique and non-empty. */
tg_status tg_st_save(const char *path, int n, const char *const *names,
                     const tg_tensor *const *tensors, int n_meta, const char *const *meta_keys,
                     const char *const *meta_values);

/* ---- parameter stores by state_dict name ---- */

enum tg_params_load_flags {
    TG_LOAD_ALLOW_MISSING = 1u << 0,   /* store parameters absent from the file keep their values */
    TG_LOAD_ALLOW_EXTRA   = 1u << 1,   /* file tensors with no parameter are ignored */
    /* Only the parameters: the store's buffers (params.h) are neither
     * required nor set (a PyTorch weights file that holds no buffers). */
    TG_LOAD_PARAMS_ONLY   = 1u << 2,
    /* Only the buffers: required (unless ALLOW_MISSING) and set; the file's
     * parameters are ignored (a buffers file beside a weights file; with
     * ALLOW_EXTRA also the buffers tgraph recomputes, such as Crossformer's
     * and PatchTST's sinusoidal pe). Not with TG_LOAD_PARAMS_ONLY. */
    TG_LOAD_BUFFERS_ONLY  = 1u << 3,
};

/* Set every parameter and buffer (params.h) of ps from the tensor of the same
 * name in a safetensors file (F32/F64 converted to the store's dtype; an
 * int64 buffer takes an integer tensor). By default (strict, like
 * load_state_dict) a missing, extra, misshaped or mistyped tensor is an error
 * naming it ("Missing key(s) in state_dict: \"encoder.norm.1.running_mean\""),
 * and the store is left unchanged. */
tg_status tg_params_load(tg_params *ps, const char *path, unsigned flags);
/* Save every parameter under its name (store dtype), its aliases, then every
 * buffer in its own dtype (num_batches_tracked as I64, as PyTorch's
 * state_dict), with optional metadata. */
tg_status tg_params_save(const tg_params *ps, const char *path, int n_meta,
                         const char *const *meta_keys, const char *const *meta_values);

/* ---- atomic files ---- */

/* Write a file through fn(f, ctx) into "<path>.tmp.<pid>", flush, fsync, and
 * rename over path; on any failure the temporary file is removed and path is
 * untouched. fn returns TG_OK or an error (with tg_set_error).
 * That holds for a regular file or a path that does not exist yet. A symlink
 * to a regular file: the file it points to is replaced (the temporary file
 * goes beside it) and the link stays. A path that exists and is not a regular
 * file or a directory (a device such as /dev/null, a FIFO, a socket, or a
 * symlink to one) is opened and written in place, never replaced. "-" means
 * stdout (written through a duplicate of fd 1 and flushed; a failed write is
 * this call's error). Paths of PATH_MAX bytes or more are TG_ERR_INVALID. */
tg_status tg_write_atomic(const char *path, tg_status (*fn)(FILE *f, void *ctx), void *ctx);
/* For a signal handler that ends the process (async-signal-safe): unlink the
 * temporary files of the tg_write_atomic calls in progress, so that none is
 * left; their targets stay as they were. */
void tg_write_atomic_abandon(void);

/* ---- the input limit ----
 * Every reader refuses an input that needs more than the input limit, with
 * TG_ERR_LIMIT and a message naming the limit and how to raise it: .npy and
 * safetensors files (the header's announced size, checked before the data
 * is read), tg_read_file with max_bytes 0, and anything else read whole:
 * TG_MAX_INPUT_DEFAULT (4 GiB); CSV datasets: 2 GiB (dataset.h). The
 * environment variable TG_MAX_INPUT_BYTES, when set, replaces every default:
 * a byte count above 0 with an optional K, M, G or T suffix (powers of
 * 1024), e.g. TG_MAX_INPUT_BYTES=16G; a malformed value is an error.
 * Regular files are refused from their size before anything is read; pipes
 * and devices are read in order and refused as soon as what was read cannot
 * be valid (a bad .npy magic or header, a safetensors header size over its
 * limit, a NUL byte in a CSV block) or passes the limit. */
#define TG_MAX_INPUT_ENV "TG_MAX_INPUT_BYTES"
#define TG_MAX_INPUT_DEFAULT ((size_t)((uint64_t)SIZE_MAX < ((uint64_t)1 << 32) \
                                       ? (uint64_t)SIZE_MAX : ((uint64_t)1 << 32)))

/* Read a whole file into a new buffer (free with tg_free); refuses files
 * larger than max_bytes with TG_ERR_LIMIT (0 = the input limit above). A
 * directory is TG_ERR_IO. */
tg_status tg_read_file(const char *path, size_t max_bytes, void **data, size_t *len);
void      tg_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
