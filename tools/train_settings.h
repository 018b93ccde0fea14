/*
 * train_settings.h - a run's settings of `tgraph train` on series besides
 * the command line (train_settings.c): a new run's defaults, and the
 * settings a checkpoint records and a resumed run reads back from it.
 * Each returns 0, or the exit status after printing one line.
 */
#ifndef TG_TRAIN_SETTINGS_H
#define TG_TRAIN_SETTINGS_H

#include "train_job.h"

/* A new run: the defaults under what the command line gave (j->s, and
 * j->cfg, which may be replaced by a config holding the defaults too). */
int tg_train_settings_new(job *j);
/* A resumed run (j->s.resume): reads the checkpoint into j->resume_ck, its
 * settings into j->s and j->cfg (refused when the command line changes one
 * that is the run's), and sets j->resume_dir, j->resume_best and j->cfg_src
 * (j owns them). */
int tg_train_settings_from_checkpoint(job *j);
/* The run's settings, the model's config and the data's identity (id: its
 * absolute path, size and hash) into ck's metadata. */
int tg_train_settings_put(tg_checkpoint *ck, const settings *s, const tg_tl_model *m,
                          const tg_tl_data *td, const tg_file_id *id);
/* On --resume, after the trainer took run's state: is the data (id) the
 * run's? Refused unless --allow-data-change, which restarts the best-epoch
 * tracking in t->state (and a mid-epoch run's epoch) on the new data. */
int tg_train_settings_check_data(const settings *s, tg_checkpoint *run, tg_trainer *t,
                                 const tg_file_id *id);

#endif
