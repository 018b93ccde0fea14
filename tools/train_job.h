/*
 * train_job.h - what the files of `tgraph train` on series share (private to
 * tools/): the run's settings, what the run had saved when it stopped, and
 * the job one invocation holds. cmd_train.c runs the job; train_opts.c fills
 * the settings from the command line, train_settings.c from the defaults or
 * a resumed run's checkpoint.
 *
 * Not here: --text, which has its own settings and job (train_text.c).
 */
#ifndef TG_TRAIN_JOB_H
#define TG_TRAIN_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "train_loop.h"

/* How the steps of an epoch are shown on stderr. */
typedef enum progress_mode {
    PROGRESS_NONE,    /* --quiet */
    PROGRESS_LIVE,    /* a terminal: one line redrawn in place */
    PROGRESS_LINES,   /* a pipe or a file (or --progress-every): a line every N seconds */
} progress_mode;

/* The run's settings: the command line (train_opts.c) over the defaults or
 * the resumed run's (train_settings.c). */
typedef struct settings {
    const char    *data, *model, *out, *resume;
    const char    *target;     /* --target: NULL for OT or the last column */
    const char    *freq;       /* --freq: the time features' frequency (NULL: TSL's h) */
    tg_tl_features features;   /* --features M|S|MS */
    tg_split_spec       split;
    int64_t        epochs, batch, patience, seed, threads;
    double         lr, clip, weight_decay;
    tg_lr_schedule lradj;
    tg_optim_kind  optim;
    bool           progress;   /* the live line on stderr (PROGRESS_LIVE) */
    progress_mode  pmode;
    double         progress_every;   /* PROGRESS_LINES: seconds between lines (0: every step) */
    int64_t        max_steps;        /* 0: no limit */
    bool           quiet;
    bool           recompute;  /* recompute linear outputs in backward (less memory) */
    bool           overwrite;  /* --overwrite: replace a run found in --out */
    bool           allow_data_change;   /* --allow-data-change: resume on other data */
    /* what the command line gave explicitly */
    bool set_freq;
    bool set_data, set_model, set_split, set_epochs, set_batch, set_patience, set_seed, set_lr,
        set_lradj, set_optim, set_clip, set_wd, set_cfg, set_threads, set_out, set_progress_every;
} settings;

/* What the run had saved when it stopped. */
typedef struct last_saved {
    const char *ckpt;     /* the last complete checkpoint; NULL: none */
    int64_t     epoch;
    bool        here;     /* written by this invocation (it holds its settings) */
} last_saved;

/* The run: everything one invocation holds. */
typedef struct job {
    settings       s;
    tg_config     *cfg;
    tg_checkpoint  resume_ck;    /* the file given to --resume, read */
    tg_tl_data     td;
    tg_tl_model    m;
    tg_tl_files    rf;
    tg_file_id     data_id;
    tg_optim      *opt;
    tg_trainer     tr;           /* the library's loop; tr.state is the run's checkpoint */
    int64_t       *order;        /* [train windows]: this epoch's batch order */
    char          *resume_dir, *resume_best, *cfg_src;
    bool           continuing;   /* resumed in the checkpoint's own directory */
    bool           need_best_copy;
    last_saved     ls;
    double         t_epoch, t_draw;   /* the progress bar's clocks */
    double         t_line;            /* PROGRESS_LINES: when the last line was written */
    double         seconds;           /* training time so far (the trainer's clock) */
} job;

#endif
