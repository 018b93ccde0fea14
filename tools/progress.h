/*
 * progress.h - the "still working" lines of the long commands (gradcheck of a
 * large layer, bench): one plain line on stderr every --progress-every
 * seconds (default 5; 0: at every chance), nothing with --quiet, flushed as
 * written. train has its own (a live line on a terminal; cmd_train.c).
 */
#ifndef TG_CLI_PROGRESS_H
#define TG_CLI_PROGRESS_H

#include <stdbool.h>

#include "args.h"

typedef struct tg_cli_progress {
    double every;    /* seconds between lines; 0: every call of tg_cli_progress_due */
    bool   quiet;    /* no lines */
    double start, last;   /* when the work began; when the last line was written */
} tg_cli_progress;

#define TG_CLI_PROGRESS_DEFAULT {.every = 5}

/* The work begins now. */
void tg_cli_progress_start(tg_cli_progress *p);
/* Is a line due (and then counted as written)? */
bool tg_cli_progress_due(tg_cli_progress *p);
/* Seconds since tg_cli_progress_start. */
double tg_cli_progress_elapsed(const tg_cli_progress *p);

#endif
