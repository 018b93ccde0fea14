/*
 * resume_check.h - the counters a checkpoint hands to a resumed run (epoch,
 * step, best_epoch, bad_epochs, best_val), checked against the run's own
 * settings before the trainer takes them: a crafted or damaged file is
 * refused naming the key and its value, instead of a run that starts at
 * epoch INT64_MAX or compares every validation loss against a NaN.
 * Shared by `tgraph train --resume` on series (cmd_train.c) and on text
 * (train_text.c).
 */
#ifndef TG_RESUME_CHECK_H
#define TG_RESUME_CHECK_H

#include "tgraph.h"

/* ck (read by tg_checkpoint_read): best_val a loss (>= 0; inf: none yet);
 * 0 <= best_epoch, bad_epochs <= epoch <= epochs (the run's configured
 * epochs, from its metadata); step <= max_step. 0, or 2 after printing one
 * line "tgraph CMD: --resume PATH: checkpoint metadata 'KEY' is 'VALUE', ...". */
int tg_resume_check_counters(const char *cmd, const tg_checkpoint *ck, int64_t epochs,
                             int64_t max_step);
/* The same for a run on series: epochs from ck's metadata, and at most
 * epochs + 1 epochs of steps, an epoch being steps_per_epoch (this data's)
 * or the longest one ck's history records. */
int tg_resume_check_series(const char *cmd, const tg_checkpoint *ck, int64_t steps_per_epoch);

#endif
