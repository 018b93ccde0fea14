/*
 * test_run_dir.c - a run's directory and the files every command writes
 * (issue 31 items 3, 5, 13, 14): `train` holds an exclusive lock on --out
 * (a second run is refused naming the pid holding it; a stale lock file does
 * not block); --overwrite keeps the previous run until the new one has a
 * checkpoint, and gives it back when the new one fails first; a --out that
 * takes no file (a dangling symlink, a loop) is refused before training; a
 * signal during an output write leaves no NAME.tmp.PID, and the next write
 * of that output removes one a killed process left.
 *
 * Each test works in its own fresh directory (tt_tmpdir) and runs the tgraph
 * binary built beside this test binary.
 */
#define _DEFAULT_SOURCE   /* flock */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "checkpoint.h"

static void setup(void) { tt_deadline(180); }

TestSuite(run_dir, .init = setup);

static char out_text[1 << 16], err_text[1 << 16];

static int tool(const char *const *args)
{
    return tt_run_tool_out(args, out_text, sizeof out_text, err_text, sizeof err_text);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* No "*.tmp.*" or "*.previous" file in d. */
static void assert_no_leftovers(const char *d)
{
    DIR *h = opendir(d);
    cr_assert_not_null(h, "%s: %s", d, strerror(errno));
    struct dirent *e;
    while ((e = readdir(h))) {
        cr_assert_null(strstr(e->d_name, ".tmp."), "temporary file left: %s/%s", d, e->d_name);
        cr_assert_null(strstr(e->d_name, ".previous"), "file left: %s/%s", d, e->d_name);
    }
    closedir(h);
}

/* tgraph with args in a child of its own process group, stdout and stderr
 * into tt_path("child.out"/"child.err"), PATH prefixed by path_dir when given. */
static pid_t start_tool(const char *path_dir, const char *const *args)
{
    return tt_start_tool(args, tt_path("child.out"), tt_path("child.err"), path_dir, true);
}

/* The id of a process that has ended (reaped): no process has it now. */
static pid_t gone_pid(void)
{
    pid_t pid = fork();   /* fork-safe: the child only _exits */
    cr_assert_neq(pid, -1);
    if (pid == 0) _exit(0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    return pid;
}

#define SMALL "--model", "linear_forecast", "--set", "seq_len=24", "--set", "pred_len=8", \
              "--threads", "2"

/* ---- item 3: one run at a time in --out ---- */

static const char *write_text(const char *name)
{
    const char *p = tt_path(name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    for (int i = 0; i < 60; i++) fputs("to be or not to be that is the question\n", f);
    fclose(f);
    return p;
}

#define TINY "--set", "n_layer=1", "n_head=2", "n_embd=16", "--set", \
             "block_size=8", "--set", "dropout=0", "--batch-size", "4", "--eval-iters", "2", \
             "--warmup", "2", "--lr", "1e-2", "--quiet"

Test(run_dir, a_locked_out_dir_is_refused_naming_the_pid_and_a_stale_lock_does_not_block)
{
    const char *out = tt_path("run"), *txt = write_text("in.txt");
    cr_assert_eq(mkdir(out, 0777), 0);
    /* this process holds the lock, as a running train does */
    int fd = open(tt_path("run/.tgraph.lock"), O_RDWR | O_CREAT, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
    char pid[32], want[64];
    snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    cr_assert_eq(write(fd, pid, strlen(pid)), (ssize_t)strlen(pid));
    snprintf(want, sizeof want, "(process %ld holds ", (long)getpid());

    int rc = tool(TT_ARGS("train", SMALL, "--epochs", "1", "--out", out));
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err_text);
    cr_assert_not_null(strstr(err_text, "is in use by another run"), "%s", err_text);
    cr_assert_not_null(strstr(err_text, want), "%s", err_text);
    cr_assert(!exists(tt_path("run/checkpoint.safetensors")), "the second run wrote");
    rc = tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "4", "--eval-interval", "2",
                      "--out-dir", out));
    cr_assert_eq(rc, 2, "--text: exit %d: %s", rc, err_text);
    cr_assert_not_null(strstr(err_text, want), "--text: %s", err_text);
    cr_assert(!exists(tt_path("run/checkpoint.safetensors")), "the second --text run wrote");

    /* the holder gone (as a killed run's: the kernel drops its flock), the
     * lock file left behind blocks nothing */
    close(fd);
    cr_assert(exists(tt_path("run/.tgraph.lock")));
    rc = tool(TT_ARGS("train", SMALL, "--epochs", "1", "--out", out));
    cr_assert_eq(rc, 0, "a stale lock file blocked: exit %d: %s", rc, err_text);
    cr_assert(exists(tt_path("run/checkpoint.safetensors")));
}

Test(run_dir, two_trains_started_together_one_is_refused_naming_the_other)
{
    const char *out = tt_path("run"), *lock = tt_path("run/.tgraph.lock");
    pid_t first = start_tool(NULL, TT_ARGS("train", SMALL, "--epochs", "100000", "--patience",
                                           "0", "--lradj", "constant", "--out", out));
    int status, waited = 0;
    /* the pid is written once the flock is held (the file exists a moment before) */
    struct stat sb;
    while (!(stat(lock, &sb) == 0 && sb.st_size > 0) && waited < 20000 &&
           waitpid(first, &status, WNOHANG) == 0) {
        sleep_ms(10);
        waited += 10;
    }
    if (!(stat(lock, &sb) == 0 && sb.st_size > 0)) {
        kill(first, SIGKILL);
        waitpid(first, &status, 0);
        cr_assert_fail("the first run holds no lock on %s", out);
    }
    int rc = tool(TT_ARGS("train", SMALL, "--epochs", "1", "--out", out));
    char want[64];
    snprintf(want, sizeof want, "(process %ld holds ", (long)first);
    kill(first, SIGKILL);
    waitpid(first, &status, 0);
    cr_assert_eq(rc, 2, "both ran: exit %d: %s", rc, err_text);
    cr_assert_not_null(strstr(err_text, want), "%s", err_text);
    /* the first, killed, blocks nothing */
    rc = tool(TT_ARGS("train", SMALL, "--epochs", "1", "--overwrite", "--out", out));
    cr_assert_eq(rc, 0, "after the holder was killed: exit %d: %s", rc, err_text);
}

/* ---- item 5: --overwrite keeps the old run until the new one has a checkpoint ---- */

/* A CSV of 200 rows x 3 columns; rows [120, 160) of column B times scale. */
static const char *write_csv(const char *name, double scale)
{
    const char *p = tt_path(name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fprintf(f, "date,A,B,C\n");
    for (int r = 0; r < 200; r++) {
        double a = sin(r * 0.3) + 0.01 * ((r * 37) % 11), b = cos(r * 0.2) * 2 + 5;
        double c = 0.5 * sin(r * 0.7 + 1);
        if (r >= 120 && r < 160) b *= scale;
        fprintf(f, "2020-01-01 %02d:00:00,%.17g,%.17g,%.17g\n", r % 24, a, b, c);
    }
    fclose(f);
    return p;
}

#define CSV_ARGS "--split", "120,40,40", "--model", "linear_forecast", "--set", "seq_len=8", \
                 "--set", "pred_len=4", "--batch-size", "8", "--lr", "1e-2", "--threads", "1"

static const char *const run_files[6] = {"checkpoint.safetensors", "best.safetensors",
                                         "metrics.csv", "loss.svg", "model.dot", "model.svg"};

/* The run files of d (NULL where absent). */
static void read_run(const char *d, char *files[6], size_t sizes[6])
{
    for (int i = 0; i < 6; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", d, run_files[i]);
        files[i] = exists(p) ? tt_slurp(p, &sizes[i]) : NULL;
    }
}

Test(run_dir, overwrite_that_fails_before_its_first_checkpoint_leaves_the_old_run_intact)
{
    const char *good = write_csv("good.csv", 1), *bad = write_csv("bad.csv", 1e20);
    const char *out = tt_path("run");
    int rc = tool(TT_ARGS("train", "--data", good, CSV_ARGS, "--epochs", "1", "--out", out));
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err_text);
    char *before[6], *after[6];
    size_t nb[6], na[6];
    read_run(out, before, nb);
    cr_assert_not_null(before[0]);
    /* the new run stops at its first validation (absurd MSE), before any checkpoint */
    rc = tool(TT_ARGS("train", "--data", bad, CSV_ARGS, "--epochs", "2", "--overwrite",
                      "--out", out));
    cr_assert_eq(rc, 1, "exit %d: %s", rc, err_text);
    cr_assert_not_null(strstr(err_text, "the previous run's files are back in"), "%s", err_text);
    read_run(out, after, na);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(after[i] != NULL, before[i] != NULL, "%s: there before %d, after %d",
                     run_files[i], before[i] != NULL, after[i] != NULL);
        if (before[i])
            cr_assert(nb[i] == na[i] && !memcmp(before[i], after[i], nb[i]), "%s changed",
                      run_files[i]);
        free(after[i]);
    }
    assert_no_leftovers(out);

    /* one that writes a checkpoint replaces it, and the old files go */
    rc = tool(TT_ARGS("train", "--data", good, CSV_ARGS, "--epochs", "2", "--seed", "5",
                      "--overwrite", "--out", out));
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err_text);
    cr_assert_not_null(strstr(err_text, "--overwrite: removed the previous run's files"), "%s",
                       err_text);
    assert_no_leftovers(out);
    tg_checkpoint c;
    tg_checkpoint_init(&c);
    cr_assert_eq(tg_checkpoint_read(tt_path("run/checkpoint.safetensors"), &c), TG_OK);
    cr_assert_eq(c.epoch, 2);
    cr_assert_str_eq(tg_checkpoint_meta(&c, "seed"), "5");
    tg_checkpoint_clear(&c);
    for (int i = 0; i < 6; i++) free(before[i]);
}

Test(run_dir, an_overwrite_killed_before_its_checkpoint_is_undone_by_the_next_run)
{
    const char *good = write_csv("good.csv", 1), *out = tt_path("run");
    int rc = tool(TT_ARGS("train", "--data", good, CSV_ARGS, "--epochs", "1", "--out", out));
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err_text);
    /* what a SIGKILL between the move aside and the first checkpoint leaves:
     * every file NAME.previous, and the new run's diagram */
    bool had[6];
    for (int i = 0; i < 6; i++) {
        char p[PATH_MAX], q[PATH_MAX + 16];
        snprintf(p, sizeof p, "%s/%s", out, run_files[i]);
        snprintf(q, sizeof q, "%s.previous", p);
        had[i] = exists(p);
        if (had[i]) cr_assert_eq(rename(p, q), 0);
    }
    FILE *f = fopen(tt_path("run/model.dot"), "wb");
    cr_assert_not_null(f);
    fputs("digraph new {}\n", f);
    fclose(f);
    /* a plain train finds the previous run back, and refuses to replace it */
    rc = tool(TT_ARGS("train", "--data", good, CSV_ARGS, "--epochs", "1", "--out", out));
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err_text);
    cr_assert_not_null(strstr(err_text, "already holds a run"), "%s", err_text);
    for (int i = 0; i < 6; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", out, run_files[i]);
        cr_assert_eq(exists(p), had[i], "%s", run_files[i]);
    }
    char *d = tt_slurp(tt_path("run/model.dot"), NULL);
    cr_assert_null(strstr(d, "digraph new"), "the killed run's model.dot is still there");
    free(d);
    assert_no_leftovers(out);
}

/* ---- item 14: a --out that takes no file, refused before training ---- */

static void refused_before_training(const char *out, const char *reason)
{
    int rc = tool(TT_ARGS("train", SMALL, "--epochs", "1", "--out", out));
    cr_assert_eq(rc, 2, "%s: exit %d: %s", out, rc, err_text);
    cr_assert_not_null(strstr(err_text, out), "%s", err_text);
    cr_assert_not_null(strstr(err_text, reason), "%s", err_text);
    cr_assert_null(strstr(out_text, "epoch"), "it trained first: %s", out_text);
    cr_assert_null(strstr(out_text, "parameters"), "it built the model first: %s", out_text);
}

Test(run_dir, an_out_dir_that_takes_no_file_is_refused_before_training)
{
    const char *dangling = tt_path("dangling"), *loop = tt_path("loop");
    cr_assert_eq(symlink("no/such/dir", dangling), 0);
    cr_assert_eq(symlink("loop", loop), 0);
    refused_before_training(dangling, "dangling symbolic link");
    refused_before_training(loop, "loop of symbolic links");
    int rc = tool(TT_ARGS("train", "--text", write_text("in.txt"), TINY, "--max-steps", "4",
                          "--out-dir", dangling));
    cr_assert_eq(rc, 2, "--text: exit %d: %s", rc, err_text);
    cr_assert_not_null(strstr(err_text, "dangling symbolic link"), "%s", err_text);
    if (geteuid() != 0) {   /* root writes anywhere */
        const char *ro = tt_path("ro");
        cr_assert_eq(mkdir(ro, 0555), 0);
        refused_before_training(ro, "is not writable");
    }
}

/* ---- item 13: no NAME.tmp.PID after a signal, and none left by a killed writer ---- */

Test(run_dir, a_signal_during_an_output_write_leaves_no_temporary_file)
{
    /* a Graphviz that prints part of its output and then takes its time: the
     * signal comes while `dot --svg` writes x.svg.tmp.PID */
    const char *bin = tt_path("bin"), *svg = tt_path("x.svg");
    cr_assert_eq(mkdir(bin, 0777), 0);
    FILE *f = fopen(tt_path("bin/dot"), "wb");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\ncat >/dev/null\necho '<svg>'\nexec sleep 20\n", f);
    fclose(f);
    cr_assert_eq(chmod(tt_path("bin/dot"), 0755), 0);
    int sigs[2] = {SIGTERM, SIGINT};
    for (int s = 0; s < 2; s++) {
        pid_t pid = start_tool(bin, TT_ARGS("dot", "tsa", "--svg", svg));
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", svg, (long)pid);
        int status, waited = 0;
        while (!exists(tmp) && waited < 30000) {
            cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "dot ended before the signal");
            sleep_ms(10);
            waited += 10;
        }
        cr_assert(exists(tmp), "no %s", tmp);
        cr_assert_eq(kill(pid, sigs[s]), 0);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        kill(-pid, SIGKILL);   /* the sleeping "dot" */
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == sigs[s],
                  "not ended by signal %d (status %#x)", sigs[s], status);
        cr_assert(!exists(tmp), "signal %d left %s", sigs[s], tmp);
        cr_assert(!exists(svg), "a half-written %s", svg);
    }
}

Test(run_dir, a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_write)
{
    char stale[PATH_MAX], live[PATH_MAX], want[PATH_MAX + 64];
    const char *dot = tt_path("x.dot");
    snprintf(stale, sizeof stale, "%s.tmp.%ld", dot, (long)gone_pid());
    snprintf(live, sizeof live, "%s.tmp.%ld", dot, (long)getpid());   /* a live writer's */
    FILE *f = fopen(stale, "wb");
    cr_assert_not_null(f);
    fputs("partial", f);
    fclose(f);
    f = fopen(live, "wb");
    cr_assert_not_null(f);
    fclose(f);
    int rc = tool(TT_ARGS("dot", "tsa", "--out", dot));
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err_text);
    snprintf(want, sizeof want, "tgraph dot: removed %s (", stale);
    cr_assert_not_null(strstr(err_text, want), "%s", err_text);
    cr_assert(!exists(stale), "the stale temporary file is still there");
    cr_assert(exists(live), "a live process's temporary file was removed");
    cr_assert(exists(dot));
}
