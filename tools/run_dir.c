/*
 * run_dir.c - what keeps a training run's directory safe, shared by
 * `tgraph train` on series (cmd_train.c) and on text (train_text.c): the
 * stop signals (SIGINT, SIGTERM, SIGHUP set a flag the trainer reads
 * between steps), a run already in --out-dir, --overwrite, and temporary
 * files left by a killed run. Moved out of cmd_train.c unchanged.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "run_dir.h"

#define CMD "train"

/* ---- stopping on SIGINT, SIGTERM, SIGHUP ---- */

/* The handler only records the signal; the epoch loop looks at it between
 * steps and stops at a safe point (no write half done, so no *.tmp.<pid>
 * left). SA_RESETHAND puts the default action back as the signal arrives:
 * a second Ctrl-C while stopping ends the process at once (the next run in
 * the directory then removes the temporary file a write left). */
volatile sig_atomic_t tg_rd_stop_signal;
static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction saved_actions[3];
static bool installed[3];

static void on_stop_signal(int sig) { tg_rd_stop_signal = sig; }

/* A signal that is ignored when the run starts (nohup, a background job)
 * stays ignored. */
void tg_rd_signals_install(void)
{
    tg_rd_stop_signal = 0;
    for (int i = 0; i < 3; i++) {
        struct sigaction sa, old;
        if (sigaction(stop_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART | SA_RESETHAND;
        installed[i] = sigaction(stop_signals[i], &sa, &saved_actions[i]) == 0;
    }
}

/* Stopping: from now on any of the three signals acts at once. */
void tg_rd_signals_default(void)
{
    for (int i = 0; i < 3; i++)
        if (installed[i]) signal(stop_signals[i], SIG_DFL);
}

void tg_rd_signals_restore(void)
{
    for (int i = 0; i < 3; i++)
        if (installed[i]) sigaction(stop_signals[i], &saved_actions[i], NULL);
    memset(installed, 0, sizeof installed);
}

const char *tg_rd_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "signal";
}

/* An argument as a POSIX shell reads it back. */
void tg_rd_put_shell_arg(FILE *f, const char *a)
{
    bool plain = *a != '\0';
    for (const char *p = a; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,@%",
                       *p) != NULL;
    if (plain) {
        fprintf(f, " %s", a);
        return;
    }
    fputs(" '", f);
    for (const char *p = a; *p; p++)
        if (*p == '\'') fputs("'\\''", f);
        else fputc(*p, f);
    fputc('\'', f);
}

/* ---- the output directory ---- */

/* Whether two paths name the same existing directory. */
bool tg_rd_same_dir(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The run files (checkpoint, best weights, metrics) present in rf->dir, as
 * "a, b, c" into buf; false when there are none. */
bool tg_rd_run_files_present(const tg_tl_files *rf, char *buf, size_t len)
{
    const char *paths[3] = {rf->ckpt, rf->best, rf->csv};
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < 3; i++)
        if (access(paths[i], F_OK) == 0)
            at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? ", " : "",
                                   tg_tl_run_files[i]);
    return at > 0;
}

/* --overwrite: the previous run's files go before this run writes any. */
int tg_rd_remove_run_files(const tg_tl_files *rf)
{
    const char *paths[6] = {rf->ckpt, rf->best, rf->csv, rf->svg, rf->dot, rf->dot_svg};
    for (int i = 0; i < 6; i++)
        if (remove(paths[i]) != 0 && errno != ENOENT)
            return tg_cli_fail(CMD, "--overwrite: cannot remove %s: %s", paths[i], strerror(errno));
    return 0;
}

/* Remove "<run file>.tmp.<pid>" files whose process is gone (a run killed
 * mid-write, by SIGKILL or a second Ctrl-C), saying so for each. */
void tg_rd_remove_stale_temps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name, *rest = NULL;
        for (int i = 0; i < 6 && !rest; i++) {
            size_t n = strlen(tg_tl_run_files[i]);
            if (!strncmp(name, tg_tl_run_files[i], n) && !strncmp(name + n, ".tmp.", 5))
                rest = name + n + 5;
        }
        if (!rest || !*rest || strspn(rest, "0123456789") != strlen(rest)) continue;
        errno = 0;
        long long pid = strtoll(rest, NULL, 10);
        bool alive = errno == 0 && pid > 0 && pid <= INT_MAX &&
                     (pid == (long long)getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM);
        if (alive) continue;
        char *path = tg_tl_path_join(dir, name);
        if (path && remove(path) == 0)
            fprintf(stderr, "tgraph train: removed %s (left by an interrupted run, process %s)\n",
                    path, rest);
        free(path);
    }
    closedir(d);
}
