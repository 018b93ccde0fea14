/*
 * run_dir.h - a training run's directory and its stop signals (run_dir.c),
 * shared by the two kinds of `tgraph train`.
 */
#ifndef TG_RUN_DIR_H
#define TG_RUN_DIR_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "train_loop.h"

/* The signal that asked the run to stop (0: none); the trainer's stop flag. */
extern volatile sig_atomic_t tg_rd_stop_signal;
/* Catch SIGINT, SIGTERM and SIGHUP into tg_rd_stop_signal (once each: a
 * second one acts at once); ignored signals stay ignored. */
void tg_rd_signals_install(void);
/* Stopping: from now on any of the three signals acts at once. */
void tg_rd_signals_default(void);
/* The handlers as they were before tg_rd_signals_install. */
void tg_rd_signals_restore(void);
const char *tg_rd_signal_name(int sig);
/* " ARG" as a POSIX shell reads it back (quoted when needed). */
void tg_rd_put_shell_arg(FILE *f, const char *a);
/* Whether two paths name the same existing directory. */
bool tg_rd_same_dir(const char *a, const char *b);
/* The run files (checkpoint, best weights, metrics) present in rf->dir, as
 * "a, b, c" into buf; false when there are none. */
bool tg_rd_run_files_present(const tg_tl_files *rf, char *buf, size_t len);
/* --overwrite: the previous run's files are moved to NAME.previous, removed
 * by tg_rd_overwrite_commit once this run's checkpoint exists, put back by
 * tg_rd_release when it ends without one. 0, or 2 after printing. */
int tg_rd_remove_run_files(const tg_tl_files *rf);
void tg_rd_overwrite_commit(void);
/* mkdir -p dir, check it takes a file and lock it for this run (flock on
 * dir/.tgraph.lock, holding the pid); another run holding it: 2 naming its
 * pid. 0, or 2 after printing. */
int tg_rd_lock(const char *dir);
/* The run's end: --overwrite settled (see above), the lock released. */
void tg_rd_release(void);
/* Remove "<run file>.tmp.<pid>" files whose process is gone, saying so. */
void tg_rd_remove_stale_temps(const char *dir);
/* The same for one output of cmd: "<path>.tmp.<pid>" (beside the file a
 * symlink names) whose process is gone; "-", NULL and devices: nothing. */
void tg_rd_remove_stale_temps_of(const char *cmd, const char *path);
/* tg_rd_remove_stale_temps_of for each output (tg_cli_check_outputs's list). */
struct tg_cli_file;
void tg_rd_clean_outputs(const char *cmd, const struct tg_cli_file *out, int n_out);
/* Every command, from main: SIGINT, SIGTERM and SIGHUP remove the temporary
 * files of the writes in progress, then end the process as the signal
 * does (ignored signals stay ignored). */
void tg_rd_output_signals_install(void);

#endif
