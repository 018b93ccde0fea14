/*
 * checkpoint.h - training checkpoints as safetensors files that PyTorch can
 * read: every parameter under its state_dict key, and everything a run needs
 * to continue exactly under keys starting with "tgraph." - the optimizer's
 * state, the RNG states, the data scaler and the run's history - with the
 * counters and the configuration in the file's string metadata.
 *
 * Loading into PyTorch (the one-line filter drops tgraph's extra keys):
 *
 *     from safetensors.torch import load_file
 *     model.load_state_dict({k: v for k, v in load_file("best.safetensors").items()
 *                            if not k.startswith("tgraph.")}, strict=False)
 *
 * strict=False is only needed for models with buffers that tgraph computes
 * instead of storing (Crossformer's enc_value_embedding.position_embedding.pe,
 * reported as the one missing key); LTSF-Linear loads with strict=True. The
 * buffers tgraph stores (params.h: BatchNorm's running_mean, running_var and
 * int64 num_batches_tracked) are in the file under their state_dict keys.
 * Checked: tests/fixtures/check_train_pytorch.py runs TSL's Crossformer on
 * the loaded weights and matches `tgraph eval --predictions` to 1e-6.
 *
 * File layout:
 *     <param name>                       the parameter (store dtype)
 *     <buffer name>                      a buffer (params.h), its own dtype:
 *                                        running_mean/var (store dtype),
 *                                        num_batches_tracked (I64), as PyTorch
 *     tgraph.optim.<slot>.<param name>   optimizer state: exp_avg, exp_avg_sq
 *                                        (Adam/AdamW) or momentum_buffer (SGD)
 *     tgraph.rng.data, tgraph.rng.dropout   I64 [4]: xoshiro256** states
 *     tgraph.scaler.mean, tgraph.scaler.std F64 [cols]
 *     tgraph.history                     F64 [epochs, 6]: epoch, step, train
 *                                        loss, val MSE, lr, seconds
 *     __metadata__: format=tgraph-checkpoint-1, epoch, step, best_epoch,
 *                   best_val, bad_epochs, optim.kind, optim.steps, optim.lr,
 *                   and the caller's entries (model, config, data, ...)
 *
 * Saving goes through tg_write_atomic: a crash or a failed write mid-save
 * leaves the previous file at the path intact and loadable.
 */
#ifndef TG_CHECKPOINT_H
#define TG_CHECKPOINT_H

#include "dataset.h"
#include "optim.h"
#include "params.h"
#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_CKPT_HISTORY_COLS 6   /* epoch, step, train loss, val MSE, lr, seconds */
#define TG_CKPT_PREFIX "tgraph."

typedef struct tg_st_file tg_st_file;

/* The state of a run besides its parameters and optimizer. Owns everything
 * it points to; zero-initialise (or tg_checkpoint_init), free with
 * tg_checkpoint_clear. */
typedef struct tg_checkpoint {
    int64_t    epoch;          /* epochs completed */
    int64_t    step;           /* optimizer steps taken */
    int64_t    best_epoch;     /* epoch (1-based) of the best validation MSE; 0: none */
    int64_t    bad_epochs;     /* epochs since the best (early stopping) */
    double     best_val;       /* best validation MSE; INFINITY when none */
    tg_rng     data_rng;       /* batch shuffling */
    tg_rng     dropout_rng;    /* the training graph's RNG */
    tg_scaler *scaler;         /* owned; may be NULL */
    int64_t    history_rows;
    double    *history;        /* [history_rows, TG_CKPT_HISTORY_COLS], owned */
    int        n_meta;
    char     **meta_keys, **meta_values;   /* owned */
    tg_st_file *file;          /* after tg_checkpoint_read: the parsed file */
    char       *path;          /* after tg_checkpoint_read: its path */
} tg_checkpoint;

void tg_checkpoint_init(tg_checkpoint *ck);   /* zeroes; best_val = INFINITY */
void tg_checkpoint_clear(tg_checkpoint *ck);  /* frees what ck owns, then init */

/* Set (or replace) a metadata entry; copies both strings. Keys may not
 * start with a reserved name (the ones listed above). */
tg_status   tg_checkpoint_set_meta(tg_checkpoint *ck, const char *key, const char *value);
const char *tg_checkpoint_meta(const tg_checkpoint *ck, const char *key);   /* NULL if absent */
/* Append one history row (TG_CKPT_HISTORY_COLS values). */
tg_status   tg_checkpoint_add_history(tg_checkpoint *ck, const double *row);

/* A metadata entry as an integer in [min, max], or a finite number in
 * [min, max]: anything else (missing, "nan", "1.5", "12abc", out of range) is
 * TG_ERR_FORMAT naming the file, the key and the value. */
tg_status tg_checkpoint_meta_int(const tg_checkpoint *ck, const char *key, int64_t min,
                                 int64_t max, int64_t *out);
tg_status tg_checkpoint_meta_num(const tg_checkpoint *ck, const char *key, double min, double max,
                                 double *out);

/* The identity of a data file, for a checkpoint to record what it was
 * trained on: its absolute path (symbolic links resolved), its size and a
 * 64-bit FNV-1a hash of its bytes. Free with tg_file_id_clear. */
typedef struct tg_file_id {
    char    *path;      /* absolute, owned */
    bool     regular;   /* false (a FIFO, /dev/stdin): not read, size and hash 0 */
    uint64_t size;
    uint64_t hash;
} tg_file_id;

/* Read `path` whole (streamed) and fill id; a file that is not a regular
 * one is left unread (reading would consume it). TG_ERR_IO names the file. */
tg_status tg_file_id_of(const char *path, tg_file_id *id);
void      tg_file_id_clear(tg_file_id *id);

/* Write ps (and o's state and counters when o is not NULL) with ck, atomically. */
tg_status tg_checkpoint_save(const char *path, const tg_params *ps, const tg_optim *o,
                             const tg_checkpoint *ck);

/* Read a checkpoint: counters, RNG states, scaler, history and metadata into
 * ck (cleared first); the parsed file stays in ck->file for the restores
 * below. Errors name the file and the key at fault. */
tg_status tg_checkpoint_read(const char *path, tg_checkpoint *ck);

/* Set every parameter and buffer of ps from the file read into ck (F32/F64
 * converted; a buffer of the store's dtype and an int64 buffer come back
 * bit-exact). Strict like load_state_dict: a parameter or buffer missing from
 * the file, a file tensor outside "tgraph." that is neither, or a shape or
 * dtype that differs is an error naming it, and ps is left unchanged. */
tg_status tg_checkpoint_restore_params(const tg_checkpoint *ck, tg_params *ps);

/* Restore the state tensors of o (an optimizer over ps), its step count and
 * learning rate. The optimizer kind must match the file's; a missing or
 * misshaped state tensor is an error naming it, and nothing is changed. */
tg_status tg_checkpoint_restore_optim(const tg_checkpoint *ck, tg_params *ps, tg_optim *o);

#ifdef __cplusplus
}
#endif
#endif
