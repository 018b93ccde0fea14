/*
 * test_train_steps.c - issue 19's training items in `tgraph train` (the
 * library trainer's max_steps is tested in test_trainer.c): the
 * defaults on a --data CSV and the configuration printed before training;
 * progress lines on a pipe (--progress-every 0: one per step; --quiet:
 * none); --max-steps (exactly N steps, resumed equals straight, bit for
 * bit); bad values of the new flags.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "checkpoint.h"
#include "trainer.h"

/* ---- the command ---- */

static char out_text[1 << 16], err_text[1 << 16];

static int tool(const char *const *args)
{
    return tt_run_tool_out(args, out_text, sizeof out_text, err_text, sizeof err_text);
}

static void setup(void) { tt_deadline(120); }

TestSuite(train_progress, .init = setup);

/* A CSV of `rows` rows x 3 columns with a date column. */
static const char *write_csv(int rows)
{
    const char *path = tt_path("data.csv");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fprintf(f, "date,A,B,C\n");
    for (int r = 0; r < rows; r++)
        fprintf(f, "2020-01-%02d %02d:00:00,%.6f,%.6f,%.6f\n", 1 + r / 24, r % 24,
                sin(r * 0.26), cos(r * 0.13) * 2 + 5, 0.5 * sin(r * 0.7 + 1) + 0.01 * (r % 7));
    fclose(f);
    return path;
}

/* The config line starting at `line` ("\n  config: K=V K=V ...") holds kv. */
static bool config_has(const char *line, const char *kv)
{
    const char *eol = strchr(line + 1, '\n');
    size_t n = strlen(kv);
    for (const char *p = strstr(line, kv); p && p < eol; p = strstr(p + 1, kv))
        if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n')) return true;
    return false;
}

Test(train_progress, defaults_on_a_data_csv_and_the_config_printed_first)
{
    const char *csv = write_csv(400);
    cr_assert_eq(tool(TT_ARGS("train", "--data", csv, "--max-steps", "2", "--threads", "2",
                              "--quiet", "--out", tt_path("r"))), 0, "%s", err_text);
    const char *keys[] = {"seq_len=96", "pred_len=24", "seg_len=12", "d_model=64", "n_heads=4",
                          "e_layers=2", "factor=3", "d_ff=128", "dropout=0.2", "enc_in=3", "B=32",
                          NULL};
    const char *config = strstr(out_text, "\n  config:");
    cr_assert_not_null(config, "%s", out_text);
    for (int i = 0; keys[i]; i++)
        cr_assert(config_has(config, keys[i]), "%s not in the config line:\n%s", keys[i],
                  out_text);
    const char *needles[] = {"tgraph train: crossformer, ", " parameters, on ", "400 rows x 3 columns",
                             "split 0.7,0.1,0.2: train rows [0, 280)", "windows 161 / ",
                             "adam lr 0.001 (type1), batch 32", "10 epochs, patience 3, seed 0",
                             "2 threads, max steps 2", NULL};
    for (int i = 0; needles[i]; i++)
        cr_assert(strstr(out_text, needles[i]), "'%s' not in:\n%s", needles[i], out_text);
    /* said before training: ahead of the steps' report */
    cr_assert(strstr(out_text, "max steps: stopped after step 2") > config, "%s", out_text);
    cr_assert(strstr(out_text, "no epoch completed: testing the weights after step 2"), "%s",
              out_text);
    tt_assert_final_line(out_text);   /* still the last line on stdout */

    /* --set and --lr still win, key by key */
    cr_assert_eq(tool(TT_ARGS("train", "--data", csv, "--set", "d_model=32", "--lr", "3e-3",
                              "--max-steps", "1", "--threads", "2", "--quiet", "--out",
                              tt_path("r2"))), 0, "%s", err_text);
    config = strstr(out_text, "\n  config:");
    cr_assert(config && config_has(config, "d_model=32") && config_has(config, "seq_len=96") &&
              config_has(config, "d_ff=128") && strstr(out_text, "adam lr 0.003"), "%s", out_text);

    /* the built-in data keeps its own small config */
    cr_assert_eq(tool(TT_ARGS("train", "--max-steps", "1", "--threads", "2", "--quiet", "--out",
                              tt_path("r3"))), 0, "%s", err_text);
    config = strstr(out_text, "\n  config:");
    cr_assert(config && config_has(config, "d_model=32") && config_has(config, "n_heads=2") &&
              config_has(config, "dropout=0.1") && strstr(out_text, "adam lr 0.005"), "%s",
              out_text);
}

#define LINEAR "--model", "linear_forecast", "--set", "seq_len=24", "--set", "pred_len=8", \
               "--batch-size", "256", "--threads", "2"

Test(train_progress, a_line_per_step_on_a_pipe_and_none_when_quiet)
{
    /* the built-in data, 2769 training windows: 10 steps an epoch */
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "2", "--progress-every", "0",
                              "--out", tt_path("a"))), 0, "%s", err_text);
    const char *p = err_text;
    for (int step = 1; step <= 20; step++) {
        int epoch, k, spe, run, total, n = 0;
        double loss;
        cr_assert_eq(sscanf(p, "progress: epoch %d/2 step %d/%d (run %d/%d)  loss %lf%n", &epoch,
                            &k, &spe, &run, &total, &loss, &n), 6, "line %d of:\n%s", step,
                     err_text);
        cr_assert(n > 0);
        cr_assert_eq(epoch, 1 + (step - 1) / 10);
        cr_assert_eq(k, 1 + (step - 1) % 10);
        cr_assert_eq(spe, 10);
        cr_assert_eq(run, step);
        cr_assert_eq(total, 20);
        cr_assert(loss > 0 && loss < 10, "loss %g", loss);
        cr_assert(strstr(p, " steps/s  ETA epoch "), "%s", p);
        p = strchr(p, '\n');
        cr_assert_not_null(p);
        p++;
    }
    cr_assert_str_eq(p, "", "more than one line a step:\n%s", err_text);
    tt_assert_final_line(out_text);   /* still the last line on stdout */

    /* --quiet: nothing on stderr; the default (5 s) on this short run: nothing either */
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "2", "--progress-every", "0",
                              "--quiet", "--out", tt_path("b"))), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");
    tt_assert_final_line(out_text);   /* still the last line on stdout */
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "1", "--out", tt_path("c"))), 0, "%s",
                 err_text);
    cr_assert_str_eq(err_text, "");
}

/* The checkpoint's step and epoch; history rows. */
static void ckpt_steps(const char *path, int64_t *step, int64_t *epoch, int64_t *rows)
{
    tg_checkpoint c;
    tg_checkpoint_init(&c);
    cr_assert_eq(tg_checkpoint_read(path, &c), TG_OK, "%s", tg_last_error());
    *step = c.step;
    *epoch = c.epoch;
    *rows = c.history_rows;
    tg_checkpoint_clear(&c);
}

/* Two checkpoints hold the same tensors (weights, optimizer state, RNGs,
 * history but its seconds) bit for bit. */
static void assert_same_tensors(const char *pa, const char *pb)
{
    tg_checkpoint x, y;
    tg_checkpoint_init(&x);
    tg_checkpoint_init(&y);
    cr_assert_eq(tg_checkpoint_read(pa, &x), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_checkpoint_read(pb, &y), TG_OK, "%s", tg_last_error());
    cr_assert_eq(x.step, y.step);
    cr_assert_eq(x.epoch, y.epoch);
    cr_assert_eq(x.best_epoch, y.best_epoch);
    cr_assert_eq(x.best_val, y.best_val);
    cr_assert_eq(x.history_rows, y.history_rows);
    for (int64_t i = 0; i < x.history_rows * TG_CKPT_HISTORY_COLS; i++)
        if (i % TG_CKPT_HISTORY_COLS != 5)
            cr_assert_eq(x.history[i], y.history[i], "history value %lld", (long long)i);
    cr_assert_eq(tg_st_count(x.file), tg_st_count(y.file));
    for (int i = 0; i < tg_st_count(x.file); i++) {
        const char *name = tg_st_name(x.file, i);
        const tg_tensor *t = tg_st_tensor(x.file, i), *u = tg_st_find(y.file, name);
        cr_assert_not_null(u, "%s", name);
        if (!strcmp(name, "tgraph.history")) continue;
        cr_assert_eq(t->numel, u->numel);
        cr_assert_arr_eq(t->data, u->data, (size_t)t->numel * tg_dtype_size(t->dtype), "%s", name);
    }
    tg_checkpoint_clear(&x);
    tg_checkpoint_clear(&y);
}

#define XF "--model", "crossformer", "--set", "seq_len=24", "--set", "pred_len=8", "--set", \
           "seg_len=4", "--set", "d_model=8", "--set", "n_heads=2", "--set", "d_ff=16",       \
           "--set", "dropout=0.3", "--split", "300,100,100", "--batch-size", "64", "--epochs", \
           "3", "--threads", "2", "--quiet"

Test(train_progress, max_steps_stops_there_and_resumes_bit_for_bit)
{
    /* 300 training rows, seq_len + pred_len 32: 269 windows, 4 steps an epoch */
    char ck[PATH_MAX], straight[512];
    snprintf(ck, sizeof ck, "%s", tt_path("a/checkpoint.safetensors"));
    cr_assert_eq(tool(TT_ARGS("train", XF, "--max-steps", "6", "--out", tt_path("a"))), 0, "%s",
                 err_text);
    cr_assert(strstr(out_text, "max steps: stopped after step 6 (epoch 2/3, 2 of 4 steps)"), "%s",
              out_text);
    cr_assert(strstr(out_text, "best epoch 1 "), "%s", out_text);
    tt_assert_final_line(out_text);   /* still the last line on stdout */
    int64_t step, epoch, rows;
    ckpt_steps(ck, &step, &epoch, &rows);
    cr_assert_eq(step, 6);
    cr_assert_eq(epoch, 1);
    cr_assert_eq(rows, 1);
    size_t n;
    char *csv = tt_slurp(tt_path("a/metrics.csv"), &n);
    cr_assert(strstr(csv, "\n1,4,") && !strstr(csv, "\n2,"), "%s", csv);
    free(csv);

    /* resumed with a larger --max-steps (mid-epoch again), then to the end */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--max-steps", "10", "--quiet")), 0, "%s",
                 err_text);
    cr_assert(strstr(out_text, "in mid-epoch") && strstr(out_text, "stopped after step 10"), "%s",
              out_text);
    ckpt_steps(ck, &step, &epoch, &rows);
    cr_assert_eq(step, 10);
    cr_assert_eq(epoch, 2);
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--quiet")), 0, "%s", err_text);
    tt_assert_final_line(out_text);   /* still the last line on stdout */
    snprintf(straight, sizeof straight, "%s", strstr(out_text, "\ntest mse="));

    /* the straight run */
    cr_assert_eq(tool(TT_ARGS("train", XF, "--out", tt_path("b"))), 0, "%s", err_text);
    cr_assert_str_eq(strstr(out_text, "\ntest mse="), straight);
    char ckb[PATH_MAX], best_a[PATH_MAX];
    snprintf(ckb, sizeof ckb, "%s", tt_path("b/checkpoint.safetensors"));
    assert_same_tensors(ck, ckb);
    snprintf(best_a, sizeof best_a, "%s", tt_path("a/best.safetensors"));
    assert_same_tensors(best_a, tt_path("b/best.safetensors"));
    ckpt_steps(ckb, &step, &epoch, &rows);
    cr_assert_eq(step, 12);
    cr_assert_eq(rows, 3);

    /* at an epoch's end: exactly N steps, N in metrics.csv */
    cr_assert_eq(tool(TT_ARGS("train", XF, "--max-steps", "8", "--out", tt_path("c"))), 0, "%s",
                 err_text);
    csv = tt_slurp(tt_path("c/metrics.csv"), &n);
    cr_assert(strstr(csv, "\n2,8,") && !strstr(csv, "\n3,"), "%s", csv);
    free(csv);
}

Test(train_progress, bad_values_name_the_flag)
{
    const char *flags[][2] = {{"--max-steps", "0"},    {"--max-steps", "-1"},
                              {"--max-steps", "abc"},  {"--progress-every", "-1"},
                              {"--progress-every", "x"}};
    for (int i = 0; i < 5; i++)
        tt_expect_cli_error(TT_ARGS("train", flags[i][0], flags[i][1], "--out", tt_path("x")),
                            flags[i][0], flags[i][1]);
}

/* gradcheck and bench: a line per element / call with --progress-every 0,
 * none with --quiet (and none by default on a check this short). */
Test(train_progress, gradcheck_and_bench_progress_lines)
{
    cr_assert_eq(tool(TT_ARGS("gradcheck", "topk", "k=3", "--shape", "4,7", "--progress-every",
                              "0")), 0, "%s", err_text);
    const char *p = err_text;
    for (int e = 1; e <= 28; e++) {
        char want[128];
        snprintf(want, sizeof want, "progress: gradcheck topk: tensor 1/1 input.input, element "
                 "%d of 28, ", e);
        cr_assert_eq(strncmp(p, want, strlen(want)), 0, "want '%s' at:\n%s", want, p);
        p = strchr(p, '\n');
        cr_assert_not_null(p);
        p++;
    }
    cr_assert_str_eq(p, "");
    cr_assert(strstr(out_text, "topk: 1 tensors, all pass"), "%s", out_text);
    cr_assert_eq(tool(TT_ARGS("gradcheck", "topk", "k=3", "--shape", "4,7", "--progress-every",
                              "0", "--quiet")), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");
    cr_assert_eq(tool(TT_ARGS("gradcheck", "topk", "k=3", "--shape", "4,7")), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");

    cr_assert_eq(tool(TT_ARGS("bench", "tsa", "--min-time", "0", "--warmup", "1", "--threads", "1",
                              "--progress-every", "0")), 0, "%s", err_text);
    cr_assert(strstr(err_text, "progress: bench tsa: training step, call 1 (warm-up), ") &&
              strstr(err_text, "progress: bench tsa: training step, call 2 (timed), ") &&
              strstr(err_text, "progress: bench tsa: inference, call 1 (warm-up), "), "%s",
              err_text);
    cr_assert(strstr(out_text, "\"train_step_ms\":"), "%s", out_text);
    cr_assert_eq(tool(TT_ARGS("bench", "tsa", "--min-time", "0", "--warmup", "1", "--threads", "1",
                              "--progress-every", "0", "-q")), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");
    tt_expect_cli_error(TT_ARGS("gradcheck", "tsa", "--progress-every", "-1"),
                        "--progress-every", "-1");
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--progress-every", "x"), "--progress-every", "x");
}

/* --out-dir is the spelling of a directory output (issue 19); --out stays an
 * alias: both write the run's files into the directory given. */
Test(train_progress, out_dir_and_its_alias_out)
{
    const char *dirs[2] = {tt_path("by-out-dir"), tt_path("by-out")};
    const char *flags[2] = {"--out-dir", "--out"};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "1", "--quiet", flags[i],
                                  dirs[i])), 0, "%s: %s", flags[i], err_text);
        char path[256];
        snprintf(path, sizeof path, "%s/metrics.csv", dirs[i]);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "%s wrote no %s", flags[i], path);
        fclose(f);
        snprintf(path, sizeof path, "%s/best.safetensors", dirs[i]);
        f = fopen(path, "r");
        cr_assert_not_null(f, "%s wrote no %s", flags[i], path);
        fclose(f);
    }
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--out-dir")), 2);
    cr_assert(strstr(err_text, "--out-dir"), "%s", err_text);
}
