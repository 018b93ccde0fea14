/*
 * test_train_safety.c - `tgraph train` never loses or mixes a run without
 * being asked: a second run into the same --out is refused (--overwrite
 * replaces it); a long --out is used whole, never cut into another path;
 * SIGINT/SIGTERM stop between steps with one line naming the last checkpoint
 * and the exact resume command, leaving no temporary file (a kill -9's
 * leftovers are removed by the next run); resuming into a directory holding
 * another run is refused; the checkpoint records its data's identity
 * (absolute path, size, hash), so other data is refused on resume unless
 * asked for, and eval works from any directory; non-integer metadata is
 * rejected by name; an absurd or non-finite validation MSE stops the run.
 *
 * Each test works in its own fresh directory (tt_tmpdir) and runs the tgraph binary
 * built beside this test binary.
 */
#define _XOPEN_SOURCE 700   /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "checkpoint.h"
#include "st_bytes.h"

static char dir[PATH_MAX];

/* The test's own fresh directory (tt_tmpdir: removed when the test ends). */
static void setup(void)
{
    tt_deadline(180);
    snprintf(dir, sizeof dir, "%s", tt_tmpdir());
}

TestSuite(train_safety, .init = setup);

static char out_text[1 << 16], err_text[1 << 16];

/* DIR/name into buf. */
static char *at(char *buf, size_t len, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    cr_assert(n > 0 && (size_t)n < len);
    return buf;
}

static size_t slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
    return n;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static int tool(const char *const *args)
{
    return tt_run_tool_out(args, out_text, sizeof out_text, err_text, sizeof err_text);
}

/* Exit 2, one line on stderr, every needle in it. */
static void expect_refusal(const char *const *args, const char *const *needles)
{
    int rc = tool(args);
    cr_assert_eq(rc, 2, "exit %d, stderr: %s", rc, err_text);
    size_t len = strlen(err_text);
    cr_assert(len > 0 && err_text[len - 1] == '\n' && !memchr(err_text, '\n', len - 1),
              "not one line: %s", err_text);
    cr_assert(!strncmp(err_text, "tgraph ", 7), "%s", err_text);
    for (int i = 0; needles[i]; i++)
        cr_assert_not_null(strstr(err_text, needles[i]), "'%s' not in: %s", needles[i], err_text);
}

static void read_ckpt(const char *path, tg_checkpoint *ck)
{
    tg_checkpoint_init(ck);
    cr_assert_eq(tg_checkpoint_read(path, ck), TG_OK, "%s", tg_last_error());
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* No "*.tmp.*" file in d. */
static void assert_no_temp_files(const char *d)
{
    DIR *h = opendir(d);
    cr_assert_not_null(h, "%s: %s", d, strerror(errno));
    struct dirent *e;
    while ((e = readdir(h)))
        cr_assert_null(strstr(e->d_name, ".tmp."), "temporary file left: %s/%s", d, e->d_name);
    closedir(h);
}

#define SMALL "--model", "linear_forecast", "--set", "seq_len=24", "--set", "pred_len=8", \
              "--threads", "2"

/* A CSV of 200 rows x 3 columns (A, B, C): smooth series with noise; rows
 * [from, to) of column B multiplied by `scale`; `bump` added to one cell. */
static void write_csv(const char *path, int from, int to, double scale, double bump)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fprintf(f, "date,A,B,C\n");
    for (int r = 0; r < 200; r++) {
        double a = sin(r * 0.3) + 0.01 * ((r * 37) % 11), b = cos(r * 0.2) * 2 + 5;
        double c = 0.5 * sin(r * 0.7 + 1) + (r == 50 ? bump : 0);
        if (r >= from && r < to) b *= scale;
        fprintf(f, "2020-01-01 %02d:00:00,%.17g,%.17g,%.17g\n", r % 24, a, b, c);
    }
    fclose(f);
}

#define CSV_ARGS "--split", "120,40,40", "--model", "linear_forecast", "--set", "seq_len=8", \
                 "--set", "pred_len=4", "--batch-size", "8", "--lr", "1e-2", "--threads", "1"

/* ---- item 2: a second run into the same directory ---- */

Test(train_safety, second_run_into_the_same_out_is_refused_and_overwrite_replaces_it)
{
    char out[PATH_MAX], ck[PATH_MAX], csv[PATH_MAX], resume[PATH_MAX + 64];
    at(out, sizeof out, "run");
    at(ck, sizeof ck, "run/checkpoint.safetensors");
    at(csv, sizeof csv, "run/metrics.csv");
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "1", "--out", out)), 0, "%s", err_text);
    static char before_ck[1 << 20], after_ck[1 << 20], before_csv[4096], after_csv[4096];
    size_t n_ck = slurp(ck, before_ck, sizeof before_ck);
    slurp(csv, before_csv, sizeof before_csv);

    snprintf(resume, sizeof resume, "--resume %s", ck);
    expect_refusal(TT_ARGS("train", SMALL, "--epochs", "2", "--out", out),
                   (const char *const[]){"tgraph train: --out ", "already holds a run",
                                         "checkpoint.safetensors, best.safetensors, metrics.csv",
                                         resume, "--overwrite", NULL});
    cr_assert_eq(slurp(ck, after_ck, sizeof after_ck), n_ck);
    cr_assert_eq(memcmp(before_ck, after_ck, n_ck), 0, "the checkpoint changed");
    slurp(csv, after_csv, sizeof after_csv);
    cr_assert_str_eq(after_csv, before_csv);

    /* --overwrite: a new run from epoch 0, none of the old one's history */
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "2", "--seed", "3", "--overwrite",
                              "--out", out)), 0, "%s", err_text);
    cr_assert_not_null(strstr(err_text, "--overwrite: removed the previous run's files"), "%s",
                       err_text);
    tg_checkpoint c;
    read_ckpt(ck, &c);
    cr_assert_eq(c.epoch, 2);
    cr_assert_eq(c.history_rows, 2);
    cr_assert_str_eq(tg_checkpoint_meta(&c, "seed"), "3");
    tg_checkpoint_clear(&c);
    /* continuing the run in its own directory is not a second run */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--epochs", "3")), 0, "%s", err_text);
}

/* ---- item 4: a long --out ---- */

Test(train_safety, long_out_is_used_whole_and_nothing_is_written_outside_it)
{
    /* DIR/ddd.../ddd... : 11 components of 200 bytes, about 2,240 bytes in all */
    char out[PATH_MAX], comp[201];
    memset(comp, 'd', 200);
    comp[200] = '\0';
    size_t n = (size_t)snprintf(out, sizeof out, "%s", dir);
    for (int i = 0; i < 11; i++) {
        n += (size_t)snprintf(out + n, sizeof out - n, "/%s", comp);
        cr_assert_eq(mkdir(out, 0777), 0, "mkdir: %s", strerror(errno));
    }
    cr_assert_gt(strlen(out), 2200);
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "2", "--out", out)), 0, "%s", err_text);
    const char *files[] = {"checkpoint.safetensors", "best.safetensors", "metrics.csv",
                           "loss.svg", "model.dot"};
    for (int i = 0; i < 5; i++) {
        char p[PATH_MAX + 64];
        snprintf(p, sizeof p, "%s/%s", out, files[i]);
        cr_assert(exists(p), "%s missing in the long --out", files[i]);
    }
    tg_checkpoint c;
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/checkpoint.safetensors", out);
    read_ckpt(p, &c);
    cr_assert_eq(c.epoch, 2);
    tg_checkpoint_clear(&c);
    /* every directory above --out holds only the next one */
    char walk[PATH_MAX];
    snprintf(walk, sizeof walk, "%s", dir);
    for (int i = 0; i < 11; i++) {
        DIR *h = opendir(walk);
        cr_assert_not_null(h);
        struct dirent *e;
        while ((e = readdir(h)))
            cr_assert(!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
                      !strcmp(e->d_name, comp), "written outside --out: %s/%s", walk, e->d_name);
        closedir(h);
        strcat(walk, "/");
        strcat(walk, comp);
    }
    /* too long for the system: refused before anything is written */
    static char huge[PATH_MAX + 400];
    n = (size_t)snprintf(huge, sizeof huge, "%s/new", dir);
    while (n < PATH_MAX + 100) n += (size_t)snprintf(huge + n, sizeof huge - n, "/%s", comp);
    expect_refusal(TT_ARGS("train", SMALL, "--epochs", "1", "--out", huge),
                   (const char *const[]){"tgraph train: --out: the directory name is",
                                         "PATH_MAX", NULL});
    snprintf(p, sizeof p, "%s/new", dir);
    cr_assert(!exists(p), "the too-long --out was started");
}

/* ---- item 6: stop signals ---- */

/* Start `tgraph train ARGS` with stdout/stderr in DIR/run.out, DIR/run.err
 * and the stop signals at their defaults (a background job may inherit them
 * ignored). */
static pid_t start_train(const char *const *args)
{
    char o[PATH_MAX], e[PATH_MAX];
    at(o, sizeof o, "run.out");
    at(e, sizeof e, "run.err");
    return tt_start_tool(args, o, e, NULL, false);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void signal_stops_cleanly(int sig, const char *name, int want_rc)
{
    char out[PATH_MAX], ck[PATH_MAX], csv[PATH_MAX], want[PATH_MAX + 256];
    at(out, sizeof out, "sig");
    at(ck, sizeof ck, "sig/checkpoint.safetensors");
    at(csv, sizeof csv, "sig/metrics.csv");
    pid_t pid = start_train(TT_ARGS("train", SMALL, "--epochs", "100000", "--patience", "0",
                                    "--lradj", "constant", "--lr", "1e-3", "--out", out));
    /* wait for the first complete epoch (metrics.csv follows the checkpoint) */
    int status, waited = 0;
    while (!exists(csv) && waited < 120000) {
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "train ended before the signal");
        sleep_ms(20);
        waited += 20;
    }
    cr_assert(exists(csv), "no epoch finished in 120 s");
    sleep_ms(150);
    cr_assert_eq(kill(pid, sig), 0);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "killed by signal %d instead of stopping",
              WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    char e[PATH_MAX];
    slurp(at(e, sizeof e, "run.err"), err_text, sizeof err_text);
    cr_assert_eq(WEXITSTATUS(status), want_rc, "exit %d: %s", WEXITSTATUS(status), err_text);
    size_t len = strlen(err_text);
    cr_assert(len > 0 && err_text[len - 1] == '\n' && !memchr(err_text, '\n', len - 1),
              "not one line: %s", err_text);
    snprintf(want, sizeof want, "tgraph train: interrupted (%s); last complete checkpoint: %s "
             "(epoch ", name, ck);
    cr_assert(!strncmp(err_text, want, strlen(want)), "%s", err_text);
    snprintf(want, sizeof want, "; resume with: tgraph train --resume %s --threads 2\n", ck);
    cr_assert_not_null(strstr(err_text, want), "%s", err_text);
    assert_no_temp_files(out);

    /* the checkpoint named is complete, at the epoch named */
    long long epoch = atoll(err_text + strlen("tgraph train: interrupted (") + strlen(name) +
                            strlen("); last complete checkpoint: ") + strlen(ck) +
                            strlen(" (epoch "));
    tg_checkpoint c;
    read_ckpt(ck, &c);
    cr_assert_eq(c.epoch, epoch, "the line says epoch %lld, the file holds %lld", epoch,
                 (long long)c.epoch);
    tg_checkpoint_clear(&c);

    /* the command works (one more epoch) */
    char *cmd = strstr(err_text, "resume with: tgraph ") + strlen("resume with: tgraph ");
    cmd[strlen(cmd) - 1] = '\0';
    const char *argv[32];
    int n = 0;
    for (char *tok = strtok(cmd, " "); tok && n < 28; tok = strtok(NULL, " ")) argv[n++] = tok;
    char more[32];
    snprintf(more, sizeof more, "%lld", epoch + 1);
    argv[n++] = "--epochs";
    argv[n++] = more;
    argv[n] = NULL;
    cr_assert_eq(tool(argv), 0, "%s", err_text);
    cr_assert_not_null(strstr(out_text, "resumed from"), "%s", out_text);
    read_ckpt(ck, &c);
    cr_assert_eq(c.epoch, epoch + 1);
    tg_checkpoint_clear(&c);
    assert_no_temp_files(out);
}

Test(train_safety, sigint_stops_between_steps_naming_the_checkpoint_and_the_resume_command)
{
    signal_stops_cleanly(SIGINT, "SIGINT", 130);
}

Test(train_safety, sigterm_stops_between_steps_naming_the_checkpoint_and_the_resume_command)
{
    signal_stops_cleanly(SIGTERM, "SIGTERM", 143);
}

Test(train_safety, temporary_files_of_a_killed_run_are_removed_and_reported)
{
    char out[PATH_MAX], stale[PATH_MAX], other[PATH_MAX], want[PATH_MAX + 64];
    cr_assert_eq(mkdir(at(out, sizeof out, "k"), 0777), 0);
    /* no process has this id (above Linux's pid_max) */
    spit(at(stale, sizeof stale, "k/checkpoint.safetensors.tmp.99999999"), "partial");
    spit(at(other, sizeof other, "k/notes.tmp.12"), "not ours");
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "1", "--out", out)), 0, "%s", err_text);
    snprintf(want, sizeof want, "tgraph train: removed %s (", stale);
    cr_assert_not_null(strstr(err_text, want), "%s", err_text);
    cr_assert(!exists(stale), "the stale temporary file is still there");
    cr_assert(exists(other), "a file that is not the run's was removed");
}

/* ---- item 7: resuming into a directory that holds another run ---- */

Test(train_safety, resume_into_a_directory_holding_another_run_is_refused)
{
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], ack[PATH_MAX], bbest[PATH_MAX], cbest[PATH_MAX];
    at(a, sizeof a, "A");
    at(b, sizeof b, "B");
    at(c, sizeof c, "C");
    at(ack, sizeof ack, "A/checkpoint.safetensors");
    at(bbest, sizeof bbest, "B/best.safetensors");
    at(cbest, sizeof cbest, "C/best.safetensors");
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "1", "--seed", "1", "--out", a)), 0,
                 "%s", err_text);
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "1", "--seed", "2", "--out", b)), 0,
                 "%s", err_text);
    static char before[1 << 20], after[1 << 20];
    size_t nb = slurp(bbest, before, sizeof before);
    expect_refusal(TT_ARGS("train", "--resume", ack, "--epochs", "2", "--out", b),
                   (const char *const[]){"already holds another run", "--overwrite", NULL});
    cr_assert_eq(slurp(bbest, after, sizeof after), nb);
    cr_assert_eq(memcmp(before, after, nb), 0, "B's best weights changed");
    /* --overwrite: B now holds A's run, best weights included */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ack, "--epochs", "2", "--overwrite", "--out",
                              b)), 0, "%s", err_text);
    tg_checkpoint k;
    read_ckpt(bbest, &k);
    cr_assert_str_eq(tg_checkpoint_meta(&k, "seed"), "1", "B's best is not A's run's");
    tg_checkpoint_clear(&k);
    /* into a fresh directory: A's best comes along */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ack, "--epochs", "2", "--out", c)), 0, "%s",
                 err_text);
    read_ckpt(cbest, &k);
    cr_assert_str_eq(tg_checkpoint_meta(&k, "seed"), "1");
    tg_checkpoint_clear(&k);
}

/* ---- item 8: the data's identity ---- */

Test(train_safety, resume_on_other_data_is_refused_unless_asked_naming_both)
{
    char a[PATH_MAX], b[PATH_MAX], out[PATH_MAX], ck[PATH_MAX], real[PATH_MAX];
    cr_assert_not_null(realpath(dir, real));
    write_csv(at(a, sizeof a, "a.csv"), 0, 0, 1, 0);
    write_csv(at(b, sizeof b, "b.csv"), 0, 0, 1, 0.5);   /* one cell differs */
    at(out, sizeof out, "r");
    at(ck, sizeof ck, "r/checkpoint.safetensors");
    cr_assert_eq(tool(TT_ARGS("train", "--data", a, CSV_ARGS, "--epochs", "1", "--out", out)), 0,
                 "%s", err_text);
    tg_checkpoint k;
    read_ckpt(ck, &k);
    char ra[PATH_MAX + 16], rb[PATH_MAX + 16];
    snprintf(ra, sizeof ra, "%s/a.csv", real);
    snprintf(rb, sizeof rb, "%s/b.csv", real);
    cr_assert_str_eq(tg_checkpoint_meta(&k, "data"), ra);
    cr_assert_not_null(tg_checkpoint_meta(&k, "data.size"));
    cr_assert_eq(strlen(tg_checkpoint_meta(&k, "data.fnv1a64")), 16);
    tg_checkpoint_clear(&k);

    /* the same file: accepted without a word */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--data", a, "--epochs", "2")), 0, "%s",
                 err_text);
    cr_assert_null(strstr(err_text, "data"), "%s", err_text);
    /* other bytes: refused, both identities named */
    expect_refusal(TT_ARGS("train", "--resume", ck, "--data", b, "--epochs", "3"),
                   (const char *const[]){"is not the data of the run", ra, rb, "fnv1a64",
                                         "--allow-data-change", NULL});
    read_ckpt(ck, &k);
    cr_assert_eq(k.epoch, 2);
    tg_checkpoint_clear(&k);
    /* asked for: accepted, saying what changes; the checkpoint records the new data */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--data", b, "--allow-data-change",
                              "--epochs", "3")), 0, "%s", err_text);
    cr_assert_not_null(strstr(err_text, "--allow-data-change: training on"), "%s", err_text);
    cr_assert_not_null(strstr(err_text, "scaler"), "%s", err_text);
    read_ckpt(ck, &k);
    cr_assert_eq(k.epoch, 3);
    cr_assert_str_eq(tg_checkpoint_meta(&k, "data"), rb);
    cr_assert_eq(k.best_epoch, 3, "the best epoch was not chosen again on the new data");
    tg_checkpoint_clear(&k);
    /* the run's own file edited in place: refused too, though no --data was given */
    write_csv(b, 0, 0, 1, 0.25);
    expect_refusal(TT_ARGS("train", "--resume", ck, "--epochs", "4"),
                   (const char *const[]){"the run's data changed since", rb,
                                         "--allow-data-change", NULL});
}

Test(train_safety, stored_data_path_is_absolute_so_eval_works_from_another_directory)
{
    char sub[PATH_MAX], moved[PATH_MAX], real[PATH_MAX];
    cr_assert_not_null(realpath(dir, real));
    cr_assert_eq(chdir(dir), 0);   /* this test's own process */
    write_csv("a.csv", 0, 0, 1, 0);
    cr_assert_eq(tool(TT_ARGS("train", "--data", "a.csv", CSV_ARGS, "--epochs", "1", "--out",
                              "r")), 0, "%s", err_text);
    tg_checkpoint k;
    read_ckpt("r/best.safetensors", &k);
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/a.csv", real);
    cr_assert_str_eq(tg_checkpoint_meta(&k, "data"), want);
    tg_checkpoint_clear(&k);
    cr_assert_eq(mkdir(at(sub, sizeof sub, "elsewhere"), 0777), 0);
    cr_assert_eq(chdir(sub), 0);
    cr_assert_eq(tool(TT_ARGS("eval", "--checkpoint", "../r/best.safetensors")), 0, "%s",
                 err_text);
    cr_assert_not_null(strstr(out_text, "test mse="), "%s", out_text);
    /* the file moved: the error names the stored path and --data */
    cr_assert_eq(rename(want, at(moved, sizeof moved, "moved.csv")), 0);
    expect_refusal(TT_ARGS("eval", "--checkpoint", "../r/best.safetensors"),
                   (const char *const[]){want, "--data", NULL});
    expect_refusal(TT_ARGS("train", "--resume", "../r/checkpoint.safetensors", "--epochs", "2"),
                   (const char *const[]){want, "--data", NULL});
    /* given its new place, the same bytes: accepted */
    cr_assert_eq(tool(TT_ARGS("eval", "--checkpoint", "../r/best.safetensors", "--data", moved)),
                 0, "%s", err_text);
    cr_assert_eq(tool(TT_ARGS("train", "--resume", "../r/checkpoint.safetensors", "--data", moved,
                              "--epochs", "2")), 0, "%s", err_text);
}

/* ---- small ones: metadata ---- */

/* Replace the first `from` in the file by `to` (same length). */
static void patch(const char *path, const char *from, const char *to)
{
    static char buf[1 << 20];
    size_t n = slurp(path, buf, sizeof buf), k = strlen(from);
    cr_assert_eq(strlen(to), k);
    char *p = NULL;
    for (size_t i = 0; i + k <= n && !p; i++)
        if (!memcmp(buf + i, from, k)) p = buf + i;
    cr_assert_not_null(p, "'%s' not in %s", from, path);
    memcpy(p, to, k);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
}

Test(train_safety, non_integer_metadata_is_rejected_by_name)
{
    char out[PATH_MAX], ck[PATH_MAX], best[PATH_MAX];
    at(out, sizeof out, "m");
    at(ck, sizeof ck, "m/checkpoint.safetensors");
    at(best, sizeof best, "m/best.safetensors");
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "1", "--batch-size", "100", "--out",
                              out)), 0, "%s", err_text);
    patch(ck, "\"batch_size\":\"100\"", "\"batch_size\":\"nan\"");
    patch(best, "\"batch_size\":\"100\"", "\"batch_size\":\"1.5\"");
    expect_refusal(TT_ARGS("train", "--resume", ck, "--epochs", "2"),
                   (const char *const[]){"metadata 'batch_size' is 'nan', expected an integer",
                                         ck, NULL});
    cr_assert_null(strstr(err_text, "-9223372036854775808"));
    expect_refusal(TT_ARGS("eval", "--checkpoint", best),
                   (const char *const[]){"metadata 'batch_size' is '1.5', expected an integer",
                                         NULL});
}

Test(train_safety, resume_on_narrower_data_names_the_checkpoints_config_not_set)
{
    char a[PATH_MAX], two[PATH_MAX], out[PATH_MAX], ck[PATH_MAX];
    write_csv(at(a, sizeof a, "a.csv"), 0, 0, 1, 0);
    at(two, sizeof two, "two.csv");
    FILE *f = fopen(two, "wb");
    cr_assert_not_null(f);
    fprintf(f, "A,B\n");
    for (int r = 0; r < 200; r++) fprintf(f, "%g,%g\n", sin(r * 0.3), cos(r * 0.1));
    fclose(f);
    at(out, sizeof out, "r");
    at(ck, sizeof ck, "r/checkpoint.safetensors");
    cr_assert_eq(tool(TT_ARGS("train", "--data", a, CSV_ARGS, "--epochs", "1", "--out", out)), 0,
                 "%s", err_text);
    expect_refusal(TT_ARGS("train", "--resume", ck, "--data", two, "--allow-data-change",
                           "--epochs", "2"),
                   (const char *const[]){"the config of checkpoint", "has enc_in=3, which "
                                         "conflicts with the data's column count (2)", NULL});
    cr_assert_null(strstr(err_text, "--set"), "%s", err_text);
}

/* ---- item 9: an absurd or non-finite validation MSE ---- */

Test(train_safety, absurd_or_non_finite_validation_mse_stops_the_run)
{
    char csv[PATH_MAX], out[PATH_MAX];
    /* validation rows 120..159 of column B on another scale */
    write_csv(at(csv, sizeof csv, "absurd.csv"), 120, 160, 1e20, 0);
    int rc = tool(TT_ARGS("train", "--data", csv, CSV_ARGS, "--epochs", "2",
                          "--out", at(out, sizeof out, "x")));
    cr_assert_eq(rc, 1, "exit %d: %s", rc, err_text);
    size_t len = strlen(err_text);
    cr_assert(len > 0 && !memchr(err_text, '\n', len - 1), "not one line: %s", err_text);
    cr_assert_not_null(strstr(err_text, "tgraph train: stopped at epoch 1 (step 13): the "
                              "validation MSE"), "%s", err_text);
    cr_assert_not_null(strstr(err_text, "is absurd"), "%s", err_text);
    cr_assert_not_null(strstr(err_text, "worst channel 'B', column 2"), "%s", err_text);
    cr_assert_not_null(strstr(err_text, "the data or the configuration is at fault"), "%s",
                       err_text);
    cr_assert_null(strstr(out_text, "test mse="), "%s", out_text);
    /* beyond float: the scaled values overflow, the forecasts are not finite */
    write_csv(at(csv, sizeof csv, "inf.csv"), 120, 160, 1e300, 0);
    rc = tool(TT_ARGS("train", "--data", csv, CSV_ARGS, "--epochs", "2",
                      "--out", at(out, sizeof out, "y")));
    cr_assert_eq(rc, 1, "exit %d: %s", rc, err_text);
    len = strlen(err_text);
    cr_assert(len > 0 && !memchr(err_text, '\n', len - 1), "not one line: %s", err_text);
    cr_assert_not_null(strstr(err_text, "tgraph train: stopped at epoch 1 (step 13): "
                              "validation: non-finite"), "%s", err_text);
    cr_assert_null(strstr(out_text, "test mse="), "%s", out_text);
}

/* ---- a long --set value reaches the layer whole (it was cut at 511 bytes) ---- */

Test(train_safety, a_long_list_value_reaches_the_layer_whole)
{
    char out[PATH_MAX], item[2048];
    int n = snprintf(item, sizeof item, "tags=[");
    for (int i = 1; i <= 200; i++) n += snprintf(item + n, sizeof item - (size_t)n, "%d,", i);
    item[n - 1] = ']';
    cr_assert_gt(n, 600);
    at(out, sizeof out, "t");
    expect_refusal(TT_ARGS("train", "--set", item, "--out", out),
                   (const char *const[]){"unknown key 'tags'", NULL});
    cr_assert_null(strstr(err_text, "unterminated"), "%s", err_text);
}

/* The counters a resumed run takes from the metadata: a best_val that is no
 * loss (NaN, -inf, negative), an epoch or a step beyond what the run's
 * settings allow (INT64_MAX among them), a best epoch after the last one:
 * each refused naming the key and the value, before anything is trained. */
Test(train_safety, resume_refuses_impossible_counters_by_name)
{
    char out[PATH_MAX], ck[PATH_MAX], bad[PATH_MAX];
    at(out, sizeof out, "m");
    at(ck, sizeof ck, "m/checkpoint.safetensors");
    at(bad, sizeof bad, "b");
    cr_assert_eq(mkdir(bad, 0777), 0);
    at(bad, sizeof bad, "b/checkpoint.safetensors");
    cr_assert_eq(tool(TT_ARGS("train", SMALL, "--epochs", "2", "--batch-size", "100", "--out",
                              out)), 0, "%s", err_text);
    static const char *const cases[][3] = {
        {"best_val", "nan", "'best_val' is 'nan'"},
        {"best_val", "-inf", "'best_val' is '-inf'"},
        {"best_val", "-0.5", "'best_val' is '-0.5'"},
        {"epoch", "9223372036854775807", "'epoch' is '9223372036854775807'"},
        {"epoch", "3", "'epoch' is '3', beyond the run's 2 epochs"},
        {"epoch", "-1", "'epoch' is '-1'"},
        {"step", "9223372036854775807", "'step' is '9223372036854775807'"},
        {"step", "-3", "'step' is '-3'"},
        {"best_epoch", "9223372036854775807", "'best_epoch' is '9223372036854775807'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1 << 16];
        size_t n = slurp(ck, text, sizeof text);
        tt_st_write_bytes(bad, text, n);
        tt_st_rewrite(bad, NULL, 0, cases[i][0], cases[i][1]);
        expect_refusal(TT_ARGS("train", "--resume", bad, "--epochs", "4"),
                       (const char *const[]){cases[i][2], bad, NULL});
    }
    /* the file as it was resumes */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--epochs", "3")), 0, "%s", err_text);
}
