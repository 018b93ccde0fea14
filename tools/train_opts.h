/*
 * train_opts.h - the command line of `tgraph train` on series
 * (train_opts.c): the options' table, which tg_cmd_train hands to --help and
 * the man page, and the parsing of the arguments into a job's settings.
 */
#ifndef TG_TRAIN_OPTS_H
#define TG_TRAIN_OPTS_H

#include "args.h"
#include "train_job.h"

/* The rows of tg_train_opts, in the order --help prints them; the parser
 * keys on them. */
enum tg_train_opt {
    TG_TRAIN_O_DATA, TG_TRAIN_O_SPLIT, TG_TRAIN_O_MODEL, TG_TRAIN_O_SET, TG_TRAIN_O_FEATURES,
    TG_TRAIN_O_TARGET, TG_TRAIN_O_FREQ, TG_TRAIN_O_EPOCHS, TG_TRAIN_O_BATCH, TG_TRAIN_O_LR, TG_TRAIN_O_LRADJ,
    TG_TRAIN_O_PATIENCE, TG_TRAIN_O_SEED, TG_TRAIN_O_THREADS, TG_TRAIN_O_RECOMPUTE,
    TG_TRAIN_O_OUT_DIR, TG_TRAIN_O_OVERWRITE, TG_TRAIN_O_RESUME, TG_TRAIN_O_ALLOW_DATA,
    TG_TRAIN_O_OPTIM, TG_TRAIN_O_WD, TG_TRAIN_O_CLIP, TG_TRAIN_O_MAX_STEPS,
    TG_TRAIN_O_PROGRESS_EVERY, TG_TRAIN_O_QUIET,
    /* training on text (train_text.c parses these with its own table) */
    TG_TRAIN_O_TEXT, TG_TRAIN_O_MIN_LR, TG_TRAIN_O_WARMUP, TG_TRAIN_O_DECAY, TG_TRAIN_O_BETA1,
    TG_TRAIN_O_BETA2, TG_TRAIN_O_EVAL_INTERVAL, TG_TRAIN_O_EVAL_ITERS,
    TG_TRAIN_OPTS_N /* the number of rows */
};
/* Every option of `tgraph train`: those on series, then those of --text
 * (documented here; train_text.c parses them with its own table). */
extern const tg_opt tg_train_opts[TG_TRAIN_OPTS_N];

/* The --optim values, by tg_optim_kind: "sgd", "adam", "adamw" (also the
 * checkpoint's "optim"). */
extern const char *const tg_train_opts_optim_names[TG_OPTIM_KIND_COUNT];
/* One of them into *out: 0, or 2 after printing "--optim wants ...". */
int tg_train_opts_parse_optim(const char *s, tg_optim_kind *out);

/* The command line (argv[0] is "train") into j->s and j->cfg (--set), and
 * --threads applied. 0, or the exit status after printing one line; an option
 * of --text is refused (tg_train_text_wanted sends those runs elsewhere). */
int tg_train_opts_parse(job *j, int argc, char **argv);

#endif
