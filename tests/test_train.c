/*
 * test_train.c - `tgraph train` and `tgraph eval` end to end, by running the
 * tgraph binary built beside this test binary: the loss falls and the model
 * beats both baselines; the same seed gives bit-identical runs; a resumed run
 * equals the uninterrupted one exactly; a non-finite loss stops the run
 * naming the op and keeps the last good checkpoint; eval counts every test
 * window once (a short last batch included) and writes the forecasts; the
 * output files; the command line's errors.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "checkpoint.h"
#include "dataset.h"
#include "layer_case.h"

static char dir[64];
static char out_text[1 << 16], err_text[1 << 16];

static void cleanup(void)
{
    char cmd[128];
    if (dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) {}
    }
}

static void setup(void)
{
    tt_deadline(120);
    snprintf(dir, sizeof dir, "%s", tt_tmpdir());
}

TestSuite(train, .init = setup, .fini = cleanup);

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
}

/* Run `tgraph ARGS` (paths in ARGS may use @ for the test directory);
 * returns the exit status, with stdout/stderr in out_text/err_text. */
static int tgraph(const char *fmt, ...)
{
    char exe[4096], args[4096], cmd[16384];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 16);
    cr_assert_gt(n, 0);
    exe[n] = '\0';
    strcpy(strrchr(exe, '/') + 1, "tgraph");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char expanded[8192];
    size_t k = 0;
    for (const char *p = args; *p && k + 70 < sizeof expanded; p++) {
        if (*p == '@') k += (size_t)snprintf(expanded + k, sizeof expanded - k, "%s", dir);
        else expanded[k++] = *p;
    }
    expanded[k] = '\0';
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s/stdout' 2>'%s/stderr' </dev/null", exe, expanded, dir,
             dir);
    int st = system(cmd);
    char p[128];
    snprintf(p, sizeof p, "%s/stdout", dir);
    slurp(p, out_text, sizeof out_text);
    snprintf(p, sizeof p, "%s/stderr", dir);
    slurp(p, err_text, sizeof err_text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#define SMALL "--model linear_forecast --set seq_len=24 --set pred_len=8 --threads 2 "

/* The final line: exactly one, last, parseable. */
static void parse_result(double *mse, double *mae, double *rl, double *tm)
{
    tt_assert_final_line(out_text);
    const char *last = strstr(out_text, "\ntest mse=");
    cr_assert_eq(sscanf(last, "\ntest mse=%lf mae=%lf | repeat-last mse=%lf | train-mean mse=%lf",
                        mse, mae, rl, tm), 4);
}

static void read_ckpt(const char *name, tg_checkpoint *ck)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    tg_checkpoint_init(ck);
    cr_assert_eq(tg_checkpoint_read(p, ck), TG_OK, "%s", tg_last_error());
}

/* Two checkpoints hold the same weights, optimizer state, RNG states and
 * history (every column but the seconds), bit for bit. */
static void assert_same_run(const char *a, const char *b)
{
    tg_checkpoint x, y;
    read_ckpt(a, &x);
    read_ckpt(b, &y);
    cr_assert_eq(x.epoch, y.epoch);
    cr_assert_eq(x.step, y.step);
    cr_assert_arr_eq(x.data_rng.s, y.data_rng.s, sizeof x.data_rng.s);
    cr_assert_arr_eq(x.dropout_rng.s, y.dropout_rng.s, sizeof x.dropout_rng.s);
    cr_assert_eq(x.history_rows, y.history_rows);
    for (int64_t r = 0; r < x.history_rows; r++)
        for (int c = 0; c < 5; c++)
            cr_assert_eq(x.history[r * TG_CKPT_HISTORY_COLS + c],
                         y.history[r * TG_CKPT_HISTORY_COLS + c], "history row %lld col %d",
                         (long long)r, c);
    cr_assert_eq(tg_st_count(x.file), tg_st_count(y.file));
    for (int i = 0; i < tg_st_count(x.file); i++) {
        const tg_tensor *t = tg_st_tensor(x.file, i), *u = tg_st_find(y.file, tg_st_name(x.file, i));
        cr_assert_not_null(u, "%s", tg_st_name(x.file, i));
        if (!strcmp(tg_st_name(x.file, i), "tgraph.history")) continue;
        cr_assert_eq(t->numel, u->numel);
        cr_assert_arr_eq(t->data, u->data, (size_t)t->numel * tg_dtype_size(t->dtype), "%s",
                         tg_st_name(x.file, i));
    }
    tg_checkpoint_clear(&x);
    tg_checkpoint_clear(&y);
}

Test(train, loss_falls_and_beats_both_baselines)
{
    cr_assert_eq(tgraph("train " SMALL "--epochs 4 --lradj constant --lr 3e-3 --patience 0 "
                        "--out @/run"), 0, "%s", err_text);
    double mse, mae, rl, tm;
    parse_result(&mse, &mae, &rl, &tm);
    tg_checkpoint ck;
    read_ckpt("run/checkpoint.safetensors", &ck);
    cr_assert_eq(ck.history_rows, 4);
    double first = ck.history[2], last = ck.history[3 * TG_CKPT_HISTORY_COLS + 2];
    cr_assert_lt(last, 0.8 * first, "train loss %g -> %g", first, last);
    cr_assert_lt(mse, 0.5 * rl, "test mse %g vs repeat-last %g", mse, rl);
    cr_assert_lt(mse, 0.5 * tm, "test mse %g vs train-mean %g", mse, tm);
    cr_assert_gt(mae, 0);
    tg_checkpoint_clear(&ck);
}

/* --lradj crossformer: the rate of Crossformer's code (halved after epochs
 * 2, 4, ...), in metrics.csv's lr column and in the checkpoint. */
Test(train, lradj_crossformer_halves_every_second_epoch)
{
    cr_assert_eq(tgraph("train " SMALL "--epochs 5 --lradj crossformer --lr 1e-3 --patience 0 "
                        "--out @/run"), 0, "%s", err_text);
    cr_assert(strstr(out_text, "adam lr 0.001 (crossformer)"), "%s", out_text);
    tg_checkpoint ck;
    read_ckpt("run/checkpoint.safetensors", &ck);
    cr_assert_eq(ck.history_rows, 5);
    static const double want[] = {1e-3, 1e-3, 5e-4, 5e-4, 2.5e-4};
    for (int r = 0; r < 5; r++)
        cr_assert_float_eq(ck.history[r * TG_CKPT_HISTORY_COLS + 4], want[r], 1e-15, "epoch %d",
                           r + 1);
    tg_checkpoint_clear(&ck);
}

Test(train, same_seed_gives_bit_identical_runs)
{
    cr_assert_eq(tgraph("train " SMALL "--epochs 2 --seed 5 --out @/a"), 0, "%s", err_text);
    char first[1 << 12];
    snprintf(first, sizeof first, "%s", strstr(out_text, "\ntest mse="));
    cr_assert_eq(tgraph("train " SMALL "--epochs 2 --seed 5 --out @/b"), 0, "%s", err_text);
    cr_assert_str_eq(strstr(out_text, "\ntest mse="), first);
    assert_same_run("a/checkpoint.safetensors", "b/checkpoint.safetensors");
    assert_same_run("a/best.safetensors", "b/best.safetensors");
    /* another seed is another run */
    cr_assert_eq(tgraph("train " SMALL "--epochs 2 --seed 6 --out @/c"), 0, "%s", err_text);
    tg_checkpoint x, y;
    read_ckpt("a/checkpoint.safetensors", &x);
    read_ckpt("c/checkpoint.safetensors", &y);
    cr_assert_neq(x.history[2], y.history[2]);
    tg_checkpoint_clear(&x);
    tg_checkpoint_clear(&y);
}

Test(train, resume_equals_the_uninterrupted_run)
{
    /* dropout-free model, so check the data order and optimizer state carry over;
     * cosine changes the lr every step, so the step counter must too */
    cr_assert_eq(tgraph("train " SMALL "--epochs 2 --lradj cosine --out @/straight"), 0, "%s",
                 err_text);
    char straight[1 << 12];
    snprintf(straight, sizeof straight, "%s", strstr(out_text, "\ntest mse="));
    cr_assert_eq(tgraph("train " SMALL "--epochs 2 --lradj cosine --out @/split"), 0);
    /* the interrupted run: one epoch, then resume for the second */
    cr_assert_eq(tgraph("train " SMALL "--epochs 1 --lradj cosine --out @/part"), 0, "%s",
                 err_text);
    cr_assert_eq(tgraph("train --resume @/part/checkpoint.safetensors --epochs 2"), 0, "%s",
                 err_text);
    cr_assert(strstr(out_text, "resumed from"), "%s", out_text);
    cr_assert_str_eq(strstr(out_text, "\ntest mse="), straight);
    assert_same_run("straight/checkpoint.safetensors", "part/checkpoint.safetensors");
    /* metrics.csv of the resumed run has both epochs */
    char p[256], csv[4096];
    snprintf(p, sizeof p, "%s/part/metrics.csv", dir);
    slurp(p, csv, sizeof csv);
    cr_assert(!strncmp(csv, "epoch,step,train_loss,val_mse,lr,seconds\n1,", 43), "%s", csv);
    cr_assert(strstr(csv, "\n2,"), "%s", csv);
    /* settings that define the run cannot change on resume */
    cr_assert_eq(tgraph("train --resume @/part/checkpoint.safetensors --set seq_len=12"), 2);
    cr_assert(strstr(err_text, "tgraph train: --set cannot be changed when resuming"), "%s",
              err_text);
}

/* A model with dropout: the dropout RNG must carry over too. */
#define TINY_CF "--model crossformer --set seq_len=24 --set pred_len=8 --set seg_len=4 " \
                "--set d_model=8 --set n_heads=2 --set d_ff=16 --set e_layers=2 --set factor=2 " \
                "--set dropout=0.3 --batch-size 16 --threads 2 --split 600,200,200 "

Test(train, crossformer_with_dropout_resumes_exactly_and_repeats_bit_for_bit)
{
    cr_assert_eq(tgraph("train " TINY_CF "--epochs 2 --out @/straight"), 0, "%s", err_text);
    char straight[1 << 12];
    snprintf(straight, sizeof straight, "%s", strstr(out_text, "\ntest mse="));
    cr_assert_eq(tgraph("train " TINY_CF "--epochs 2 --out @/again"), 0, "%s", err_text);
    cr_assert_str_eq(strstr(out_text, "\ntest mse="), straight);
    assert_same_run("straight/checkpoint.safetensors", "again/checkpoint.safetensors");
    /* --recompute (linear outputs recomputed in backward): the same run, bit for bit */
    cr_assert_eq(tgraph("train " TINY_CF "--epochs 2 --recompute --out @/recompute"), 0, "%s",
                 err_text);
    cr_assert_str_eq(strstr(out_text, "\ntest mse="), straight);
    assert_same_run("straight/checkpoint.safetensors", "recompute/checkpoint.safetensors");
    cr_assert_eq(tgraph("train " TINY_CF "--epochs 1 --out @/part"), 0, "%s", err_text);
    cr_assert_eq(tgraph("train --resume @/part/checkpoint.safetensors --epochs 2"), 0, "%s",
                 err_text);
    cr_assert_str_eq(strstr(out_text, "\ntest mse="), straight);
    assert_same_run("straight/checkpoint.safetensors", "part/checkpoint.safetensors");
    /* the dropout stream moved: a run without dropout differs */
    tg_checkpoint ck;
    read_ckpt("straight/checkpoint.safetensors", &ck);
    tg_rng fresh;
    tg_rng_seed(&fresh, 0 ^ 0xd409047ull);
    cr_assert(memcmp(&fresh, &ck.dropout_rng, sizeof fresh) != 0, "dropout drew nothing");
    tg_checkpoint_clear(&ck);
}

Test(train, resume_into_a_new_directory_keeps_the_best_weights)
{
    cr_assert_eq(tgraph("train " SMALL "--epochs 1 --out @/one"), 0, "%s", err_text);
    cr_assert_eq(tgraph("train --resume @/one/checkpoint.safetensors --epochs 2 --out @/two"), 0,
                 "%s", err_text);
    char p[256];
    snprintf(p, sizeof p, "%s/two/best.safetensors", dir);
    cr_assert_eq(access(p, R_OK), 0);
}

Test(train, non_finite_loss_stops_naming_the_op_and_keeps_the_checkpoint)
{
    cr_assert_eq(tgraph("train " SMALL "--epochs 1 --out @/r"), 0, "%s", err_text);
    char p[256], before[1 << 16], after[1 << 16];
    snprintf(p, sizeof p, "%s/r/checkpoint.safetensors", dir);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    cr_assert_lt(sb.st_size, (off_t)sizeof before);
    slurp(p, before, sizeof before);
    /* an absurd learning rate makes the weights overflow at the next step */
    cr_assert_eq(tgraph("train --resume @/r/checkpoint.safetensors --epochs 3 --lr 1e30"), 1);
    cr_assert(strstr(err_text, "tgraph train: stopped at epoch 2 step 2: non-finite value (the loss is inf): node "),
              "%s", err_text);
    cr_assert(strstr(err_text, "(mse_loss reduction=mean) produced +Inf"), "%s", err_text);
    cr_assert(strstr(err_text, "the last good checkpoint is"), "%s", err_text);
    cr_assert(!strstr(out_text, "test mse="), "%s", out_text);
    slurp(p, after, sizeof after);
    cr_assert_eq(memcmp(before, after, (size_t)sb.st_size), 0, "the checkpoint changed");
    tg_checkpoint ck;
    read_ckpt("r/checkpoint.safetensors", &ck);
    cr_assert_eq(ck.epoch, 1);
    tg_checkpoint_clear(&ck);
    /* in the first epoch there is no checkpoint to keep, and it says so */
    cr_assert_eq(tgraph("train " SMALL "--epochs 1 --optim sgd --lr 1e6 --out @/s"), 1);
    cr_assert(strstr(err_text, "non-finite value"), "%s", err_text);
    cr_assert(strstr(err_text, "no checkpoint was written"), "%s", err_text);
}

Test(train, output_files_and_nested_out_dir)
{
    cr_assert_eq(tgraph("train " SMALL "--epochs 2 --out @/a/b/c"), 0, "%s", err_text);
    const char *files[] = {"checkpoint.safetensors", "best.safetensors", "metrics.csv",
                           "loss.svg", "model.dot"};
    char p[256], text[8192];
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/a/b/c/%s", dir, files[i]);
        cr_assert_eq(access(p, R_OK), 0, "%s missing", files[i]);
    }
    snprintf(p, sizeof p, "%s/a/b/c/metrics.csv", dir);
    slurp(p, text, sizeof text);
    int lines = 0;
    for (char *s = text; *s; s++) lines += *s == '\n';
    cr_assert_eq(lines, 3, "%s", text);
    snprintf(p, sizeof p, "%s/a/b/c/loss.svg", dir);
    slurp(p, text, sizeof text);
    cr_assert(strstr(text, "<svg") && strstr(text, "validation MSE"), "%s", text);
    snprintf(p, sizeof p, "%s/a/b/c/model.dot", dir);
    slurp(p, text, sizeof text);
    cr_assert(strstr(text, "digraph") && strstr(text, "Linear.weight"), "%s", text);
    /* --out naming a file */
    cr_assert_eq(tgraph("train " SMALL "--epochs 1 --out @/a/b/c/metrics.csv"), 2);
    cr_assert(strstr(err_text, "exists and is not a directory"), "%s", err_text);
}

/* eval on a CSV whose test split is not a multiple of the batch: the
 * forecasts of every window must be the linear model's, and the metric the
 * mean over all of them. */
Test(train, eval_counts_every_test_window_once)
{
    /* tiny.csv: 40 rows; split 24,8,8 with seq_len 6, pred_len 3: 6 test windows,
     * batch 4 -> one full batch and one short one */
    cr_assert_eq(tgraph("train --data " TT_FIXTURES "/train/tiny.csv --split 24,8,8 --model "
                        "linear_forecast --set seq_len=6 --set pred_len=3 --batch-size 4 "
                        "--epochs 2 --lr 1e-2 --threads 1 --out @/t"), 0, "%s", err_text);
    double mse0, mae0, rl0, tm0;
    parse_result(&mse0, &mae0, &rl0, &tm0);
    cr_assert_eq(tgraph("eval --checkpoint @/t/best.safetensors --predictions @/p.npy"), 0, "%s",
                 err_text);
    double mse, mae, rl, tm;
    parse_result(&mse, &mae, &rl, &tm);
    cr_assert_eq(mse, mse0);
    cr_assert_eq(rl, rl0);
    cr_assert(strstr(out_text, "6 test windows"), "%s", out_text);

    /* recompute: the data, the scaler of the training rows, the weights */
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(TT_FIXTURES "/train/tiny.csv", &d), TG_OK);
    tg_scaler *sc = tg_scaler_fit(d, 0, 24);
    float z[40 * 3];
    tg_scaler_transform(sc, d, z);
    tg_checkpoint ck;
    read_ckpt("t/best.safetensors", &ck);
    const tg_tensor *W = tg_st_find(ck.file, "Linear.weight"), *b = tg_st_find(ck.file, "Linear.bias");
    cr_assert_not_null(W);
    char p[256];
    snprintf(p, sizeof p, "%s/p.npy", dir);
    tg_tensor *pred = NULL;
    cr_assert_eq(tg_npy_load(p, &pred), TG_OK, "%s", tg_last_error());
    cr_assert_eq(pred->rank, 3);
    cr_assert_eq(pred->shape[0], 6);
    cr_assert_eq(pred->shape[1], 3);
    cr_assert_eq(pred->shape[2], 3);
    const float *pw = W->data, *pb = b->data, *pp = pred->data;
    double se = 0, ae = 0, sl = 0;
    for (int i = 0; i < 6; i++) {          /* test windows start at row 32 - 6 = 26 */
        int x0 = 26 + i;
        for (int t = 0; t < 3; t++)
            for (int c = 0; c < 3; c++) {
                double y = pb[t];
                for (int s = 0; s < 6; s++) y += (double)pw[t * 6 + s] * z[(x0 + s) * 3 + c];
                float got = pp[(i * 3 + t) * 3 + c];
                cr_assert(fabs(got - y) < 1e-5, "window %d step %d col %d: %g vs %g", i, t, c,
                          got, y);
                double e = got - z[(x0 + 6 + t) * 3 + c], l = z[(x0 + 5) * 3 + c] - z[(x0 + 6 + t) * 3 + c];
                se += e * e;
                ae += fabs(e);
                sl += l * l;
            }
    }
    cr_assert(fabs(se / 54 - mse) < 5e-5, "mse %g vs %g", se / 54, mse);
    cr_assert(fabs(ae / 54 - mae) < 5e-5, "mae %g vs %g", ae / 54, mae);
    cr_assert(fabs(sl / 54 - rl) < 5e-5, "repeat-last %g vs %g", sl / 54, rl);
    /* --inverse writes data units */
    cr_assert_eq(tgraph("eval --checkpoint @/t/best.safetensors --predictions @/q.npy --inverse"),
                 0, "%s", err_text);
    tg_tensor *q = NULL;
    snprintf(p, sizeof p, "%s/q.npy", dir);
    cr_assert_eq(tg_npy_load(p, &q), TG_OK);
    for (int64_t i = 0; i < q->numel; i++) {
        int c = (int)(i % 3);
        double want = pp[i] * sc->std[c] + sc->mean[c];
        cr_assert(fabs(((float *)q->data)[i] - want) < 1e-4 * (1 + fabs(want)));
    }
    tg_tensor_free(q);
    tg_tensor_free(pred);
    tg_checkpoint_clear(&ck);
    tg_scaler_free(sc);
    tg_dataset_free(d);
}

Test(train, data_errors_name_the_file_line_and_column)
{
    cr_assert_eq(tgraph("train --data " TT_FIXTURES "/train/ragged.csv --out @/x"), 2);
    cr_assert(strstr(err_text, "tgraph train: --data " TT_FIXTURES "/train/ragged.csv:3: 3 "
                               "cells, expected 4"), "%s", err_text);
    cr_assert_eq(tgraph("train --data " TT_FIXTURES "/train/nonnumeric.csv --out @/x"), 2);
    cr_assert(strstr(err_text, "nonnumeric.csv:4: column 3 ('HULL'): 'abc' is not a number"), "%s",
              err_text);
    cr_assert_eq(tgraph("train --data " TT_FIXTURES "/train/empty.csv --out @/x"), 2);
    cr_assert(strstr(err_text, "empty.csv: empty file"), "%s", err_text);
    cr_assert_eq(tgraph("train --data " TT_FIXTURES "/train/tiny.csv --model linear_forecast "
                        "--out @/x"), 2);
    cr_assert(strstr(err_text, "too few rows for one window: the train split has 28 rows; one "
                               "window needs seq_len + pred_len = 120 rows"), "%s", err_text);
}

Test(train, command_line_errors)
{
    cr_assert_eq(tgraph("train --epochs 0"), 2);
    cr_assert(strstr(err_text, "--epochs wants an integer in [1, 100000], got '0'"), "%s", err_text);
    cr_assert_eq(tgraph("train --lradj step"), 2);
    cr_assert(strstr(err_text, "unknown learning-rate schedule 'step'"), "%s", err_text);
    cr_assert_eq(tgraph("train --split 1,2"), 2);
    cr_assert(strstr(err_text, "--split split '1,2': expected three row counts"), "%s", err_text);
    cr_assert_eq(tgraph("train --model nosuch --out @/x"), 2);
    cr_assert(strstr(err_text, "unknown layer 'nosuch'"), "%s", err_text);
    cr_assert_eq(tgraph("train " SMALL "--set nokey=1 --out @/x"), 2);
    cr_assert(strstr(err_text, "unknown key 'nokey'"), "%s", err_text);
    cr_assert_eq(tgraph("train " SMALL "--set enc_in=3 --out @/x"), 2);
    cr_assert(strstr(err_text, "--set enc_in=3 conflicts with the data's column count (7)"), "%s",
              err_text);
    cr_assert_eq(tgraph("train --bogus"), 2);
    cr_assert(strstr(err_text, "unknown option '--bogus'"), "%s", err_text);
    cr_assert_eq(tgraph("train --resume @/none.safetensors"), 2);
    cr_assert(strstr(err_text, "none.safetensors: cannot open"), "%s", err_text);
    cr_assert_eq(tgraph("eval"), 2);
    cr_assert(strstr(err_text, "missing --checkpoint"), "%s", err_text);
    cr_assert_eq(tgraph("train --help"), 0);
    cr_assert(strstr(out_text, "--lradj S        type1 (default") && strstr(out_text, "examples:"));
}

/* ---- the linear_forecast layer against PyTorch (tests/fixtures/gen_train.py) ---- */

static void run_linear_case(const char *name, bool normalize, bool check_dx)
{
    char fx[64];
    snprintf(fx, sizeof fx, "train/%s", name);
    tg_tensor *x = tt_load(fx, "x.npy"), *W = tt_load(fx, "weight.npy"), *b = tt_load(fx, "bias.npy");
    tg_tensor *dy = tt_load(fx, "dy.npy"), *y = tt_load(fx, "y.npy");
    tg_tensor *gW = tt_load(fx, "gweight.npy"), *gb = tt_load(fx, "gbias.npy"), *gx = tt_load(fx, "gx.npy");
    char item[4][64];
    snprintf(item[0], 64, "B=%lld", (long long)x->shape[0]);
    snprintf(item[1], 64, "seq_len=%lld", (long long)x->shape[1]);
    snprintf(item[2], 64, "enc_in=%lld", (long long)x->shape[2]);
    snprintf(item[3], 64, "pred_len=%lld", (long long)W->shape[0]);
    tg_config *cfg = tg_config_new();
    for (int i = 0; i < 4; i++) tg_config_set(cfg, item[i]);
    tg_config_set(cfg, normalize ? "normalize=true" : "normalize=false");
    tg_params *ps = tg_params_new(TG_F32);
    tg_layer *l = tg_layer_new("linear_forecast", cfg, ps, "", NULL);
    cr_assert_not_null(l, "%s", tg_last_error());
    cr_assert_eq(tg_params_count(ps), 2);
    tg_tensor_copy(&tg_params_find(ps, "Linear.weight")->value, W);
    tg_tensor_copy(&tg_params_find(ps, "Linear.bias")->value, b);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in = tg_input(g, "x", TG_F32, 3, x->shape);
    tg_node_set(in, x);
    tg_node_set_requires_grad(in, true);
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(l, g, &in, &out), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    tt_assert_close(tg_node_value(out.y), y, 1e-6, 1e-5, "y");
    cr_assert_eq(tg_graph_backward(g, out.y, dy), TG_OK, "%s", tg_last_error());
    tt_assert_close(&tg_params_find(ps, "Linear.weight")->grad, gW, 1e-6, 1e-5, "dLinear.weight");
    tt_assert_close(&tg_params_find(ps, "Linear.bias")->grad, gb, 1e-6, 1e-5, "dLinear.bias");
    if (check_dx) tt_assert_close(tg_node_grad(in), gx, 1e-6, 1e-5, "dx");
    tg_graph_free(g);
    tg_layer_free(l);
    tg_params_free(ps);
    tg_config_free(cfg);
    tg_tensor *all[] = {x, W, b, dy, y, gW, gb, gx};
    for (int i = 0; i < 8; i++) tg_tensor_free(all[i]);
}

Test(linear_forecast, pytorch_linear) { run_linear_case("linear", false, true); }

/* NLinear detaches seq_last in PyTorch, so only the parameter gradients match
 * (training never needs x's gradient). */
Test(linear_forecast, pytorch_nlinear) { run_linear_case("nlinear", true, false); }

Test(linear_forecast, gradcheck)
{
    const char *sets[] = {"B=2", "seq_len=6", "pred_len=4", "enc_in=3", "normalize=false"};
    tt_layer_gradcheck("linear_forecast", sets, 5, 1, 0);
    sets[4] = "normalize=true";
    tt_layer_gradcheck("linear_forecast", sets, 5, 2, 0);
}

Test(linear_forecast, bad_configs)
{
    tt_assert_layer_rejects("linear_forecast", (const char *[]){"seq_len=0"}, 1,
                            "seq_len: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("linear_forecast", (const char *[]){"dropout=0.1"}, 1,
                            "unknown key 'dropout'");
}
