/*
 * train_opts.h - the command line of `tgraph train` on series
 * (train_opts.c): the options' table, which tg_cmd_train hands to --help and
 * the man page, and the parsing of the arguments into a job's settings.
 */
#ifndef TG_TRAIN_OPTS_H
#define TG_TRAIN_OPTS_H

#include "args.h"
#include "train_job.h"

/* The rows of tg_train_opts (a definition with another count does not compile). */
#define TG_TRAIN_OPTS_N 32
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
