/*
 * test_etth1_table.c - tools/doc/etth1.sh (make etth1-table), the paper's
 * ETTh1 table, run tiny: a 1000-row CSV, a small model through EXTRA, one
 * epoch or a few steps, in a temporary RUNS_DIR. Checks the rows of
 * results.csv and etth1-table.md, each run's files, that a second call skips
 * the finished runs, that a run stopped by MAX_STEPS is resumed by a call
 * without it (to the numbers of a straight run), and SEEDS' mean +- std.
 * The same for tools/doc/tsl.sh (make tsl-table, suite tsl_table): DLinear
 * rows beside the published numbers, skipped when done, bad settings refused.
 * The real runs take hours; this checks the machinery only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static void setup(void) { tt_deadline(240); }

TestSuite(etth1_table, .init = setup);

#define TINY "--set d_model=8 --set d_ff=16 --set n_heads=2 --set e_layers=1 --set factor=2 -q"

/* The directory of the test binary (build/ or build-asan/): tgraph is there,
 * the script in ../tools/doc/. */
static void build_dir(char *buf, size_t n)
{
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    cr_assert_gt(k, 0);
    buf[k] = '\0';
    char *slash = strrchr(buf, '/');
    cr_assert_not_null(slash);
    *slash = '\0';
}

/* NAME in the temporary directory: 1000 hourly rows of 7 channels with
 * daily cycles and a little noise, no date column. */
static const char *write_csv_named(const char *name)
{
    const char *path = tt_path(name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fprintf(f, "A,B,C,D,E,F,OT\n");
    unsigned s = 1;
    for (int r = 0; r < 1000; r++) {
        for (int c = 0; c < 7; c++) {
            s = s * 1103515245u + 12345u;
            double noise = (double)(s >> 16 & 0x7fff) / 32768.0 - 0.5;
            fprintf(f, "%s%.5f", c ? "," : "",
                    (c + 1) * ((r * (c + 3)) % 24 - 12) / 12.0 + 0.3 * noise);
        }
        fprintf(f, "\n");
    }
    fclose(f);
    return path;
}

static const char *write_csv(void) { return write_csv_named("data.csv"); }

/* Run tools/doc/NAME with the environment assignments in env (NULL-
 * terminated, over this process's); its stdout and stderr go to out. The
 * exit status. */
static int run_named(const char *name, const char *const *env, char *out, size_t outlen)
{
    char dir[PATH_MAX], script[PATH_MAX + 32], tgraph[PATH_MAX + 32];
    build_dir(dir, sizeof dir - 40);
    snprintf(script, sizeof script, "%s/../tools/doc/%s", dir, name);
    snprintf(tgraph, sizeof tgraph, "%s/tgraph", dir);
    const char *log = tt_path("script.log");
    const char *set[16];
    char tg_env[PATH_MAX + 40];
    snprintf(tg_env, sizeof tg_env, "TGRAPH=%s", tgraph);
    int k = 0;
    set[k++] = tg_env;
    for (int i = 0; env[i] && k < 15; i++) set[k++] = env[i];   /* "KEY=VALUE" */
    set[k] = NULL;
    char **envp = tt_env_with(set);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0, "%s: %s", log, strerror(errno));
    char *const argv[] = {"sh", script, NULL};
    fflush(NULL);
    pid_t pid = fork();   /* fork-safe: the child only execs */
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
        alarm(TT_CHILD_DEADLINE);
        execve("/bin/sh", argv, envp);
        _exit(127);
    }
    close(fd);
    tt_env_free(envp);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    char *text = tt_slurp(log, NULL);
    snprintf(out, outlen, "%s", text);
    free(text);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_script(const char *const *env, char *out, size_t outlen)
{
    return run_named("etth1.sh", env, out, outlen);
}

static char *slurp_in(const char *runs, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", runs, name);
    return tt_slurp(path, NULL);
}

static bool exists_in(const char *runs, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", runs, name);
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* Field `col` (0-based) of the CSV line starting with `prefix`, into buf. */
static void csv_field(const char *csv, const char *prefix, int col, char *buf, size_t n)
{
    const char *line = csv;
    while (line && strncmp(line, prefix, strlen(prefix))) {
        line = strchr(line, '\n');
        if (line) line++;
    }
    cr_assert_not_null(line, "no row '%s' in:\n%s", prefix, csv);
    for (int i = 0; i < col; i++) {
        line = strchr(line, ',');
        cr_assert_not_null(line);
        line++;
    }
    size_t k = strcspn(line, ",\n");
    cr_assert_lt(k, n);
    memcpy(buf, line, k);
    buf[k] = '\0';
}

static char out[1 << 16];

/* The script called again: each line of done (NULL-terminated) in its
 * output, nothing trained, and results.csv in runs still equal to csv. */
static void assert_second_call_skips(const char *script, const char *const *env, const char *runs,
                                     const char *csv, const char *const *done)
{
    cr_assert_eq(run_named(script, env, out, sizeof out), 0, "%s", out);
    for (int i = 0; done[i]; i++) cr_assert_not_null(strstr(out, done[i]), "%s", out);
    cr_assert_null(strstr(out, "tgraph train:"), "a finished run was trained again:\n%s", out);
    char *again = slurp_in(runs, "results.csv");
    cr_assert_str_eq(again, csv);
    free(again);
}

Test(etth1_table, two_horizons_then_a_second_call_skips_them)
{
    char runs_env[PATH_MAX], data_env[PATH_MAX];
    snprintf(runs_env, sizeof runs_env, "RUNS_DIR=%s", tt_path("runs"));
    snprintf(data_env, sizeof data_env, "DATA=%s", write_csv());
    const char *env[] = {runs_env, data_env, "SPLIT=500,250,250", "HORIZONS=24,48",
                         "THREADS=1", "EXTRA=" TINY " --epochs 1", NULL};
    cr_assert_eq(run_script(env, out, sizeof out), 0, "%s", out);
    const char *runs = tt_path("runs");
    char *csv = slurp_in(runs, "results.csv");
    cr_assert(!strncmp(csv, "horizon,seed,input,seg_len,lr,test_mse,test_mae,epochs,", 55), "%s", csv);
    char f[64];
    csv_field(csv, "24,0,168,6,1e-4,", 7, f, sizeof f);
    cr_assert_str_eq(f, "1", "epochs of horizon 24: %s", csv);
    csv_field(csv, "48,0,168,6,1e-4,", 13, f, sizeof f);
    cr_assert_str_eq(f, "complete");
    cr_assert_null(strstr(csv, "\n168,"), "horizon 168 was not asked for:\n%s", csv);
    char *md = slurp_in(runs, "etth1-table.md");
    cr_assert_not_null(strstr(md, "| 24 | 168 | "), "%s", md);
    cr_assert_not_null(strstr(md, " | 0.305 | 0.367 | "), "the paper's 24: %s", md);
    cr_assert_not_null(strstr(md, "| 48 | 168 | "), "%s", md);
    cr_assert_not_null(strstr(md, " | 0.352 | 0.394 | "), "the paper's 48: %s", md);
    cr_assert_not_null(strstr(md, "ICLR 2023, Table 2"), "%s", md);
    const char *files[] = {"metrics.csv", "loss.svg", "checkpoint.safetensors", "best.safetensors",
                           "forecast.svg", "horizon.svg", "test-metrics.csv", "train.log"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char name[64];
        snprintf(name, sizeof name, "h48-seed0/%s", files[i]);
        cr_assert(exists_in(runs, name), "%s is missing or empty", name);
    }
    assert_second_call_skips("etth1.sh", env, runs, csv,
                             TT_ARGS("horizon 24 seed 0: done", "horizon 48 seed 0: done"));
    free(md);
    free(csv);
}

/* MAX_STEPS=2 stops the run mid-epoch; the same call again skips it; a call
 * without MAX_STEPS resumes it, to the numbers of a run never stopped. */
Test(etth1_table, max_steps_run_is_resumed_to_the_straight_numbers)
{
    char runs_env[PATH_MAX], straight_env[PATH_MAX], data_env[PATH_MAX];
    snprintf(runs_env, sizeof runs_env, "RUNS_DIR=%s", tt_path("runs"));
    snprintf(straight_env, sizeof straight_env, "RUNS_DIR=%s", tt_path("straight"));
    snprintf(data_env, sizeof data_env, "DATA=%s", write_csv());
    const char *env[] = {runs_env, data_env, "SPLIT=500,250,250", "HORIZONS=24", "THREADS=1",
                         "PLOTS=0", "EXTRA=" TINY " --epochs 2", "MAX_STEPS=2", NULL};
    cr_assert_eq(run_script(env, out, sizeof out), 0, "%s", out);
    char *csv = slurp_in(tt_path("runs"), "results.csv"), f[64];
    csv_field(csv, "24,0,", 13, f, sizeof f);
    cr_assert_str_eq(f, "max-steps 2", "%s", csv);
    char *md = slurp_in(tt_path("runs"), "etth1-table.md");
    cr_assert_not_null(strstr(md, "| 24 (max steps) | 168 | "), "%s", md);
    free(md);
    free(csv);
    cr_assert_eq(run_script(env, out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "horizon 24 seed 0: done"), "%s", out);

    env[7] = NULL;   /* no MAX_STEPS: resumed */
    cr_assert_eq(run_script(env, out, sizeof out), 0, "%s", out);
    cr_assert_not_null(strstr(out, "horizon 24 seed 0: resuming"), "%s", out);
    env[0] = straight_env;
    cr_assert_eq(run_script(env, out, sizeof out), 0, "%s", out);
    char *a = slurp_in(tt_path("runs"), "results.csv");
    char *b = slurp_in(tt_path("straight"), "results.csv");
    char fa[64], fb[64];
    for (int col = 5; col <= 8; col++) {   /* test_mse test_mae epochs best_epoch */
        csv_field(a, "24,0,", col, fa, sizeof fa);
        csv_field(b, "24,0,", col, fb, sizeof fb);
        cr_assert_str_eq(fa, fb, "column %d: resumed %s, straight %s", col, fa, fb);
    }
    csv_field(a, "24,0,", 13, fa, sizeof fa);
    cr_assert_str_eq(fa, "complete");
    free(a);
    free(b);
}

Test(etth1_table, seeds_give_mean_and_std)
{
    char runs_env[PATH_MAX], data_env[PATH_MAX];
    snprintf(runs_env, sizeof runs_env, "RUNS_DIR=%s", tt_path("runs"));
    snprintf(data_env, sizeof data_env, "DATA=%s", write_csv());
    const char *env[] = {runs_env, data_env, "SPLIT=500,250,250", "HORIZONS=24", "SEEDS=2",
                         "THREADS=1", "PLOTS=0", "EXTRA=" TINY " --epochs 1", NULL};
    cr_assert_eq(run_script(env, out, sizeof out), 0, "%s", out);
    char *csv = slurp_in(tt_path("runs"), "results.csv");
    cr_assert_not_null(strstr(csv, "\n24,0,"), "%s", csv);
    cr_assert_not_null(strstr(csv, "\n24,1,"), "%s", csv);
    char *md = slurp_in(tt_path("runs"), "etth1-table.md");
    cr_assert_not_null(strstr(md, " ± "), "no mean ± std over 2 seeds:\n%s", md);
    cr_assert_not_null(strstr(md, " | 2 | "), "the seed count: %s", md);
    free(md);
    free(csv);
}

Test(etth1_table, bad_settings_are_refused)
{
    char runs_env[PATH_MAX], data_env[PATH_MAX];
    snprintf(runs_env, sizeof runs_env, "RUNS_DIR=%s", tt_path("runs"));
    snprintf(data_env, sizeof data_env, "DATA=%s", write_csv());
    const char *bad_h[] = {runs_env, data_env, "HORIZONS=24,96", NULL};
    cr_assert_eq(run_script(bad_h, out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "horizon 96: not one of 24 48 168 336 720"), "%s", out);
    const char *bad_s[] = {runs_env, data_env, "SEEDS=x", NULL};
    cr_assert_eq(run_script(bad_s, out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "SEEDS=x"), "%s", out);
    char missing_env[PATH_MAX];
    snprintf(missing_env, sizeof missing_env, "DATA=%s", tt_path("missing/ETTh1.csv"));
    const char *no_data[] = {runs_env, missing_env, NULL};
    cr_assert_eq(run_script(no_data, out, sizeof out), 2, "%s", out);
    cr_assert_not_null(strstr(out, "no data file"), "%s", out);
}

/* ---- tools/doc/tsl.sh ---- */

TestSuite(tsl_table, .init = setup);

Test(tsl_table, dlinear_rows_beside_the_published_numbers_then_skipped)
{
    char runs_env[PATH_MAX], data_env[PATH_MAX];
    snprintf(runs_env, sizeof runs_env, "RUNS_DIR=%s", tt_path("runs"));
    write_csv_named("ETTh1.csv");
    snprintf(data_env, sizeof data_env, "DATA_DIR=%s", tt_tmpdir());
    const char *env[] = {runs_env, data_env, "SPLIT=500,250,250", "MODELS=dlinear",
                         "DATASETS=ETTh1", "HORIZONS=96", "THREADS=1", "EXTRA=--epochs 1 -q",
                         NULL};
    cr_assert_eq(run_named("tsl.sh", env, out, sizeof out), 0, "%s", out);
    const char *runs = tt_path("runs");
    char *csv = slurp_in(runs, "results.csv");
    cr_assert(!strncmp(csv, "model,data,horizon,paper_mse,paper_mae,test_mse,test_mae,epochs,", 64),
              "%s", csv);
    char f[64];
    csv_field(csv, "dlinear,ETTh1,96,", 3, f, sizeof f);
    cr_assert_str_eq(f, "0.386", "the published MSE: %s", csv);
    csv_field(csv, "dlinear,ETTh1,96,", 7, f, sizeof f);
    cr_assert_str_eq(f, "1", "epochs: %s", csv);
    csv_field(csv, "dlinear,ETTh1,96,", 13, f, sizeof f);
    cr_assert_str_eq(f, "complete", "%s", csv);
    char *md = slurp_in(runs, "tsl-table.md");
    cr_assert_not_null(strstr(md, "| dlinear | ETTh1 | 96 | "), "%s", md);
    cr_assert_not_null(strstr(md, " | 0.386 | 0.400 | "), "the published row: %s", md);
    cr_assert_not_null(strstr(md, "ICLR 2024"), "%s", md);
    const char *files[] = {"metrics.csv", "checkpoint.safetensors", "best.safetensors",
                           "train.log", "result.csv"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char name[64];
        snprintf(name, sizeof name, "dlinear-ETTh1-h96/%s", files[i]);
        cr_assert(exists_in(runs, name), "%s is missing or empty", name);
    }
    assert_second_call_skips("tsl.sh", env, runs, csv, TT_ARGS("dlinear ETTh1 96: done"));
    free(md);
    free(csv);
}

Test(tsl_table, bad_settings_are_refused)
{
    char runs_env[PATH_MAX], data_env[PATH_MAX];
    snprintf(runs_env, sizeof runs_env, "RUNS_DIR=%s", tt_path("runs"));
    write_csv_named("ETTh1.csv");
    snprintf(data_env, sizeof data_env, "DATA_DIR=%s", tt_tmpdir());
    const struct { const char *models, *data, *horizons, *want; } cases[] = {
        {"MODELS=dlinear,informer", "DATASETS=ETTh1", "HORIZONS=96",
         "model informer: not one of dlinear patchtst itransformer"},
        {"MODELS=dlinear", "DATASETS=ETTm1", "HORIZONS=96", "data ETTm1: not one of ETTh1 ETTh2"},
        {"MODELS=dlinear", "DATASETS=ETTh1", "HORIZONS=24", "horizon 24: not one of 96 192 336 720"},
        {"MODELS=dlinear", "DATASETS=ETTh1,ETTh2", "HORIZONS=96", "no data file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *env[] = {runs_env, data_env, cases[i].models, cases[i].data,
                             cases[i].horizons, NULL};
        cr_assert_eq(run_named("tsl.sh", env, out, sizeof out), 2, "%s: %s", cases[i].want, out);
        cr_assert_not_null(strstr(out, cases[i].want), "%s", out);
    }
}
