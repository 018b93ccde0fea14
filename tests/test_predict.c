/*
 * test_predict.c - dates in checkpoints (their parsing is tested in
 * test_dataset.c), `tgraph predict` end to end (its forecast equals `tgraph eval --inverse`'s
 * for the same window, dates continued hourly) and its errors, and train's
 * --features S / MS and --target.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "checkpoint.h"
#include "dataset.h"
#include "tensor_io.h"

/* ---- predict ---- */

static char out_text[1 << 16], err_text[4096];

/* An hourly CSV of `rows` rows from 2016-07-01 00:00:00 with columns a, b, OT;
 * rows [gap_at, ...) are shifted one hour later when gap_at > 0. */
static const char *hourly_csv(const char *name, int rows, int gap_at)
{
    const char *p = tt_path(name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fprintf(f, "date,a,b,OT\n");
    for (int i = 0; i < rows; i++) {
        char date[32];
        int64_t t = 1467331200 + 3600 * (int64_t)(i + (gap_at > 0 && i >= gap_at));
        fprintf(f, "%s,%.4f,%.4f,%.4f\n", tg_date_format(t, TG_DATE_YMD_HMS, date, sizeof date),
                sin(i / 4.0), 3 + 2 * cos(i / 5.0), 10 + 5 * sin(i / 24.0) + 0.1 * (i % 7));
    }
    fclose(f);
    return p;
}

/* A tiny linear model trained on 300 hourly rows (seq_len 24, pred_len 6),
 * test split = the last 60 rows, with --features and --target (NULL: none). */
static const char *train_tiny(const char *out, const char *features, const char *target)
{
    const char *data = hourly_csv("full.csv", 300, 0);
    const char *a[32] = {"train", "--data", data, "--model", "linear_forecast", "--set",
                         "seq_len=24", "--set", "pred_len=6", "--split", "200,40,60",
                         "--epochs", "2", "--batch-size", "16", "--lr", "1e-2", "--overwrite",
                         "--out", tt_path(out)};
    int n = 20;
    if (features) a[n++] = "--features", a[n++] = features;
    if (target) a[n++] = "--target", a[n++] = target;
    a[n] = NULL;
    int rc = tt_run_tool_out(a, out_text, sizeof out_text, err_text, sizeof err_text);
    cr_assert_eq(rc, 0, "%s", err_text);
    static char ck[4096];
    snprintf(ck, sizeof ck, "%s/best.safetensors", tt_path(out));
    return ck;
}

static int predict(const char *ck, const char *data)
{
    return tt_run_tool_out(TT_ARGS("predict", "--checkpoint", ck, "--data", data), out_text,
                           sizeof out_text, err_text, sizeof err_text);
}

Test(predict, equals_eval_on_the_last_window_with_dates_continued)
{
    tt_deadline(60);
    const char *ck = train_tiny("run", NULL, NULL);
    /* the checkpoint knows the data's dates */
    tg_checkpoint meta;
    tg_checkpoint_init(&meta);
    cr_assert_eq(tg_checkpoint_read(ck, &meta), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_checkpoint_meta(&meta, "date.column"), "date");
    cr_assert_str_eq(tg_checkpoint_meta(&meta, "date.first"), "2016-07-01 00:00:00");
    cr_assert_str_eq(tg_checkpoint_meta(&meta, "date.last"), "2016-07-13 11:00:00");   /* row 299 */
    cr_assert_str_eq(tg_checkpoint_meta(&meta, "date.freq"), "3600");
    cr_assert_str_eq(tg_checkpoint_meta(&meta, "columns"), "a\nb\nOT");
    cr_assert_str_eq(tg_checkpoint_meta(&meta, "features"), "M");
    cr_assert_str_eq(tg_checkpoint_meta(&meta, "target"), "OT");
    tg_checkpoint_clear(&meta);
    /* eval's forecasts of the test windows, in data units */
    const char *npy = tt_path("pred.npy");
    int rc = tt_run_tool(TT_ARGS("eval", "--checkpoint", ck, "--predictions", npy, "--inverse"),
                         err_text, sizeof err_text);
    cr_assert_eq(rc, 0, "%s", err_text);
    tg_tensor *ev = NULL;
    cr_assert_eq(tg_npy_load(npy, &ev), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ev->shape[1], 6);
    cr_assert_eq(ev->shape[2], 3);
    /* the last test window's input: rows [270, 294); predict from the first 294 rows */
    const char *head = hourly_csv("head.csv", 294, 0);
    cr_assert_eq(predict(ck, head), 0, "%s", err_text);
    const float *want = (const float *)ev->data + (ev->shape[0] - 1) * 18;
    char *line = strtok(out_text, "\n");
    cr_assert_str_eq(line, "date,a,b,OT");
    for (int i = 0; i < 6; i++) {
        line = strtok(NULL, "\n");
        cr_assert_not_null(line, "row %d missing", i);
        char date[32], expect[32];
        double v[3];
        cr_assert_eq(sscanf(line, "%19[^,],%lf,%lf,%lf", date, &v[0], &v[1], &v[2]), 4, "%s", line);
        /* the hours after the last input row (293: 2016-07-13 05:00:00) */
        tg_date_format(1467331200 + 3600 * (294 + i), TG_DATE_YMD_HMS, expect, sizeof expect);
        cr_assert_str_eq(date, expect);
        for (int c = 0; c < 3; c++) {
            cr_assert(isfinite(v[c]));
            cr_assert_float_eq(v[c], want[i * 3 + c], 1e-5 * (1 + fabs(want[i * 3 + c])),
                               "step %d col %d: %g vs eval %g", i, c, v[c], want[i * 3 + c]);
        }
    }
    cr_assert_null(strtok(NULL, "\n"));
    tg_tensor_free(ev);
    /* --out FILE: the same bytes; deterministic */
    const char *out = tt_path("fc.csv");
    cr_assert_eq(tt_run_tool(TT_ARGS("predict", "--checkpoint", ck, "--data", head, "--out", out),
                             err_text, sizeof err_text), 0, "%s", err_text);
    char again[1 << 16];
    cr_assert_eq(predict(ck, head), 0);
    memcpy(again, out_text, sizeof again);
    FILE *f = fopen(out, "r");
    char file[1 << 16];
    size_t n = fread(file, 1, sizeof file - 1, f);
    file[n] = '\0';
    fclose(f);
    cr_assert_str_eq(file, again);
}

Test(predict, errors)
{
    tt_deadline(60);
    const char *ck = train_tiny("run", NULL, NULL);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data",
                                hourly_csv("short.csv", 20, 0)),
                        "has 20 rows; the model forecasts from the last seq_len = 24", NULL);
    /* a gap among the last 24 rows */
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data",
                                hourly_csv("gap.csv", 100, 90)),
                        "data row 91 ('2016-07-04 19:00:00') comes 2h after the row before "
                        "('2016-07-04 17:00:00')", "a gap or an irregular step");
    /* a gap before them does not matter */
    cr_assert_eq(predict(ck, hourly_csv("oldgap.csv", 100, 20)), 0, "%s", err_text);
    /* other columns */
    const char *p = tt_path("cols.csv");
    FILE *f = fopen(p, "w");
    fprintf(f, "date,a,c,OT\n");
    for (int i = 0; i < 20; i++) fprintf(f, "2016-07-02 %02d:00:00,1,2,3\n", i);
    fclose(f);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data", p),
                        "has the columns a,c,OT; the model was trained on a,b,OT", NULL);
    f = fopen(p, "w");
    fprintf(f, "date,a,OT\n");
    for (int i = 0; i < 20; i++) fprintf(f, "2016-07-01 %02d:00:00,1,3\n", i);
    fclose(f);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data", p),
                        "has the columns a,OT; the model was trained on a,b,OT", NULL);
    const char *head = hourly_csv("head.csv", 50, 0);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data", head, "--out", head),
                        "is the same file as input --data", NULL);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", head, "--data", head),
                        "--checkpoint", head);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", tt_path("none.safetensors"), "--data",
                                head), "--checkpoint", "none.safetensors");
    tt_expect_cli_error(TT_ARGS("predict", "--data", head), "missing --checkpoint", NULL);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck), "missing --data", NULL);
}

/* A CSV of a date column and a, b, OT: row i's date is dates(i). */
static const char *dated_csv(const char *name, int rows, const char *(*dates)(int, char *))
{
    const char *p = tt_path(name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fprintf(f, "date,a,b,OT\n");
    char buf[64];
    for (int i = 0; i < rows; i++)
        fprintf(f, "%s,%.4f,%.4f,%.4f\n", dates(i, buf), sin(i / 4.0), 3 + cos(i / 5.0),
                10 + sin(i / 24.0));
    fclose(f);
    return p;
}

static const char *one_date(int i, char *buf)
{
    (void)i;
    return strcpy(buf, "2016-07-01 00:00:00");
}

static const char *us_date(int i, char *buf)
{
    snprintf(buf, 64, "07/%02d/2016 %02d:00", 1 + i / 24, i % 24);
    return buf;
}

/* hourly, but the last row goes back two hours */
static const char *back_date(int i, char *buf)
{
    int h = i == 49 ? 47 : i;
    return tg_date_format(1467331200 + 3600 * (int64_t)h, TG_DATE_YMD_HMS, buf, 64);
}

Test(predict, dates_that_do_not_increase_or_do_not_parse_are_refused_with_the_line)
{
    tt_deadline(60);
    const char *ck = train_tiny("run", NULL, NULL);
    /* every row at one time: every forecast row would get that date (the first
     * row of the last seq_len = 24 is line 28, the first step checked line 29) */
    const char *same = dated_csv("same.csv", 50, one_date);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data", same),
                        "same.csv:29: the date '2016-07-01 00:00:00' is not after the row "
                        "before's ('2016-07-01 00:00:00', line 28)", "must strictly increase");
    const char *back = dated_csv("back.csv", 50, back_date);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data", back),
                        "back.csv:51: the date '2016-07-02 23:00:00' is not after the row "
                        "before's ('2016-07-03 00:00:00', line 50)", NULL);
    /* a date column in a form not read: refused at its first line, not dropped */
    const char *us = dated_csv("us.csv", 50, us_date);
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data", us),
                        "us.csv:2: column 1 ('date'): '07/01/2016 00:00' is not a date", NULL);
    /* an irregular step names its line too */
    tt_expect_cli_error(TT_ARGS("predict", "--checkpoint", ck, "--data",
                                hourly_csv("gap.csv", 100, 90)),
                        "gap.csv:92: data row 91", NULL);
}

/* The forecast's header and row count for a run trained with features/target. */
static void check_layout(const char *features, const char *target, const char *header)
{
    const char *ck = train_tiny(features, features, target);
    cr_assert_eq(predict(ck, hourly_csv("head.csv", 50, 0)), 0, "%s", err_text);
    char *line = strtok(out_text, "\n");
    cr_assert_str_eq(line, header);
    int rows = 0, commas = 0;
    while ((line = strtok(NULL, "\n"))) {
        rows++;
        commas = 0;
        for (char *q = line; *q; q++) commas += *q == ',';
        double v;
        cr_assert_eq(sscanf(strrchr(line, ',') + 1, "%lf", &v), 1);
        cr_assert(isfinite(v));
    }
    cr_assert_eq(rows, 6);
    cr_assert_eq(commas, 1);   /* the date and one value */
    tg_checkpoint c;
    tg_checkpoint_init(&c);
    cr_assert_eq(tg_checkpoint_read(ck, &c), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_checkpoint_meta(&c, "features"), features);
    cr_assert_str_eq(tg_checkpoint_meta(&c, "enc_in"), !strcmp(features, "S") ? "1" : "3");
    tg_checkpoint_clear(&c);
    /* eval honours the layout */
    cr_assert_eq(tt_run_tool_out(TT_ARGS("eval", "--checkpoint", ck), out_text, sizeof out_text,
                                 err_text, sizeof err_text), 0, "%s", err_text);
    cr_assert(strstr(out_text, "test mse="), "%s", out_text);
}

Test(predict, features_s_ms_and_target)
{
    tt_deadline(60);
    check_layout("S", NULL, "date,OT");
    check_layout("MS", NULL, "date,OT");
    check_layout("S", "a", "date,a");
    check_layout("MS", "b", "date,b");
    tt_expect_cli_error(TT_ARGS("train", "--data", hourly_csv("t.csv", 100, 0), "--target", "zz",
                                "--out", tt_path("bad")),
                        "--target zz: ", "no such column (its columns: a,b,OT)");
    tt_expect_cli_error(TT_ARGS("train", "--features", "X", "--out", tt_path("bad")),
                        "--features wants M", NULL);
}

/* MS trains on the target only: its test MSE is the target channel's, which
 * an M run reports as one of three; S and MS of a channel-shared linear
 * model agree. */
Test(predict, ms_metrics_are_the_targets)
{
    tt_deadline(60);
    train_tiny("S", "S", NULL);
    char s_line[256], ms_line[256];
    snprintf(s_line, sizeof s_line, "%s", strstr(out_text, "test mse="));
    train_tiny("MS", "MS", NULL);
    snprintf(ms_line, sizeof ms_line, "%s", strstr(out_text, "test mse="));
    cr_assert_str_eq(s_line, ms_line);
    train_tiny("M", NULL, NULL);
    cr_assert_str_neq(strstr(out_text, "test mse="), ms_line);
}
