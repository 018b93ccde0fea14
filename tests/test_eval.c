/*
 * test_eval.c - what `tgraph eval` writes beside the forecasts, as
 * Time-Series-Library's test does: the truth (true.npy) of every test window,
 * TSL's metrics (mae, mse, rmse, mape, mspe) in the report and --metrics
 * (CSV by horizon step, or metrics.npy), the forecast plot (history, truth,
 * forecast per window) and the per-horizon error plot as SVG; a zero truth;
 * the command line's errors. A tiny linear model is trained on a CSV the
 * test writes, so every number can be recomputed here.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "dataset.h"

static void setup(void) { tt_deadline(60); }

TestSuite(eval, .init = setup);

/* 120 rows: date, a, b, OT (OT constant when const_ot: its scaled values are
 * all 0); the dates from 2020-01-01 00:00:00 every `step` seconds (0: no date
 * column) */
static const char *write_csv_every(bool const_ot, int step)
{
    const char *p = tt_path("data.csv");
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fprintf(f, "%sa,b,OT\n", step ? "date," : "");
    for (int i = 0; i < 120; i++) {
        int t = i * step;
        if (step)
            fprintf(f, "2020-01-%02d %02d:%02d:00,", 1 + t / 86400, t / 3600 % 24, t / 60 % 60);
        fprintf(f, "%.6f,%.6f,%.6f\n", 3 * sin(i * 0.3) + 0.01 * i, 2 * cos(i * 0.17) + 0.5,
                const_ot ? 5.0 : 10 + 4 * sin(i * 0.05) + 0.3 * sin(i * 1.3));
    }
    fclose(f);
    return p;
}

/* seq_len 8, pred_len 4, split 72,24,24: the test windows' inputs start at
 * row 88 (8 rows before the first test row 96), 32 - 8 - 4 + 1 = 21 windows */
#define SEQ 8
#define PRED 4
#define WINDOWS 21
#define COLS 3

/* A tiny run on write_csv_every(const_ot, step); its best checkpoint. */
static const char *train_tiny_every(bool const_ot, int step)
{
    const char *csv = write_csv_every(const_ot, step), *out = tt_path("run");
    char err[8192];
    int rc = tt_run_tool(TT_ARGS("train", "--data", csv, "--split", "72,24,24", "--model",
                                 "linear_forecast", "--set", "seq_len=8", "--set", "pred_len=4",
                                 "--batch-size", "4", "--epochs", "1", "--threads", "1", "--out",
                                 out), err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    return tt_path("run/best.safetensors");
}

/* ... on hourly data */
static const char *train_tiny(bool const_ot) { return train_tiny_every(const_ot, 3600); }

static char out_text[1 << 16], err_text[1 << 16];

static int eval(const char *const *args)
{
    return tt_run_tool_out(args, out_text, sizeof out_text, err_text, sizeof err_text);
}

static tg_tensor *load_npy(const char *name)
{
    tg_tensor *t = NULL;
    cr_assert_eq(tg_npy_load(tt_path(name), &t), TG_OK, "%s: %s", name, tg_last_error());
    return t;
}

static void assert_rel(double got, double want, double rel, const char *what)
{
    cr_assert(fabs(got - want) <= rel * fabs(want) + 1e-12, "%s: %.9g vs %.9g", what, got, want);
}

/* TSL's metrics over [n] elements */
static void tsl(const float *p, const float *t, int64_t n, int64_t stride, double m[5])
{
    double s[4] = {0};
    for (int64_t i = 0; i < n; i++) {
        double e = (double)p[i * stride] - t[i * stride], r = e / t[i * stride];
        s[0] += fabs(e), s[1] += e * e, s[2] += fabs(r), s[3] += r * r;
    }
    m[0] = s[0] / n, m[1] = s[1] / n, m[2] = sqrt(s[1] / n), m[3] = s[2] / n, m[4] = s[3] / n;
}

Test(eval, truth_is_the_scaled_rows_after_each_input)
{
    const char *ck = train_tiny(false);
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--predictions", tt_path("pred.npy"))),
                 0, "%s", err_text);
    cr_assert(strstr(out_text, "truth [21, 4, 3] (scaled units) -> "), "%s", out_text);
    tg_tensor *t = load_npy("true.npy"), *p = load_npy("pred.npy");
    cr_assert_eq(t->rank, 3);
    cr_assert_eq(t->shape[0], WINDOWS);
    cr_assert_eq(t->shape[1], PRED);
    cr_assert_eq(t->shape[2], COLS);
    cr_assert_eq(p->numel, t->numel);
    /* recompute: the CSV scaled by the training rows' mean and std */
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(tt_path("data.csv"), &d), TG_OK, "%s", tg_last_error());
    tg_scaler *sc = tg_scaler_fit(d, 0, 72);
    float z[120 * COLS];
    cr_assert_eq(tg_scaler_transform(sc, d, z), TG_OK);
    const float *tv = t->data;
    for (int w = 0; w < WINDOWS; w++)
        for (int k = 0; k < PRED * COLS; k++)   /* window w's truth: rows 96 + w ... */
            cr_assert_eq(tv[w * PRED * COLS + k], z[(88 + w + SEQ) * COLS + k], "window %d", w);
    /* --inverse: the data's own values */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--truth", tt_path("t_inv.npy"),
                              "--inverse")), 0, "%s", err_text);
    tg_tensor *ti = load_npy("t_inv.npy");
    for (int w = 0; w < WINDOWS; w++)
        for (int k = 0; k < PRED * COLS; k++) {
            double want = d->data[(96 + w) * COLS + k];
            assert_rel(((float *)ti->data)[w * PRED * COLS + k], want, 1e-5, "inverse truth");
        }
    cr_assert(strstr(out_text, "metrics (data units): "), "%s", out_text);
    /* another name than pred.npy: no truth written */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--predictions", tt_path("p.npy"))), 0);
    cr_assert(!strstr(out_text, "truth ["), "%s", out_text);
    tg_tensor_free(ti);
    tg_tensor_free(t);
    tg_tensor_free(p);
    tg_scaler_free(sc);
    tg_dataset_free(d);
}

/* The metrics line of the report: mae=... mse=... rmse=... mape=... mspe=... */
static void report_metrics(double m[5])
{
    const char *l = strstr(out_text, "metrics (scaled units): ");
    cr_assert_not_null(l, "%s", out_text);
    cr_assert_eq(sscanf(l, "metrics (scaled units): mae=%lf mse=%lf rmse=%lf mape=%lf mspe=%lf",
                        &m[0], &m[1], &m[2], &m[3], &m[4]), 5, "%s", l);
}

Test(eval, metrics_agree_with_pred_and_true)
{
    const char *ck = train_tiny(false);
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--predictions", tt_path("pred.npy"),
                              "--metrics", tt_path("m.csv"))), 0, "%s", err_text);
    tg_tensor *t = load_npy("true.npy"), *p = load_npy("pred.npy");
    double want[5], got[5];
    tsl(p->data, t->data, p->numel, 1, want);
    report_metrics(got);
    for (int i = 0; i < 5; i++) assert_rel(got[i], want[i], 1e-5, "report (6 digits)");
    /* the final line's scaled test mse is the same number */
    double mse;
    cr_assert_eq(sscanf(strstr(out_text, "\ntest mse="), "\ntest mse=%lf", &mse), 1);
    cr_assert(fabs(mse - want[1]) < 6e-5, "%g vs %g", mse, want[1]);
    /* the CSV: header, 'all', then one row per horizon step */
    char *csv = tt_slurp(tt_path("m.csv"), NULL);
    cr_assert(!strncmp(csv, "horizon,mae,mse,rmse,mape,mspe\nall,", 35), "%s", csv);
    char *row = strchr(csv, '\n') + 1;
    cr_assert_eq(sscanf(row, "all,%lf,%lf,%lf,%lf,%lf", &got[0], &got[1], &got[2], &got[3],
                        &got[4]), 5);
    for (int i = 0; i < 5; i++) assert_rel(got[i], want[i], 1e-6, "metrics.csv all");
    for (int h = 0; h < PRED; h++) {
        row = strchr(row, '\n') + 1;
        int step;
        cr_assert_eq(sscanf(row, "%d,%lf,%lf,%lf,%lf,%lf", &step, &got[0], &got[1], &got[2],
                            &got[3], &got[4]), 6, "%s", row);
        cr_assert_eq(step, h + 1);
        double wh[5], sh[5] = {0};
        /* step h: elements (w, h, c) */
        for (int w = 0; w < WINDOWS; w++) {
            tsl((const float *)p->data + (w * PRED + h) * COLS,
                (const float *)t->data + (w * PRED + h) * COLS, COLS, 1, wh);
            for (int i = 0; i < 5; i++) sh[i] += (i == 2 ? wh[1] : wh[i]) / WINDOWS;
        }
        sh[2] = sqrt(sh[2]);
        for (int i = 0; i < 5; i++) assert_rel(got[i], sh[i], 1e-6, "metrics.csv step");
    }
    cr_assert_eq(*strchr(row, '\n'), '\n');
    cr_assert_eq(strchr(row, '\n')[1], '\0', "one row per step: %s", csv);
    free(csv);
    /* metrics.npy: TSL's [mae, mse, rmse, mape, mspe] */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--metrics", tt_path("metrics.npy"))),
                 0, "%s", err_text);
    tg_tensor *m = load_npy("metrics.npy");
    cr_assert_eq(m->rank, 1);
    cr_assert_eq(m->shape[0], 5);
    for (int i = 0; i < 5; i++) assert_rel(tg_tensor_get(m, i), want[i], 1e-6, "metrics.npy");
    tg_tensor_free(m);
    tg_tensor_free(t);
    tg_tensor_free(p);
}

Test(eval, zero_truth_makes_mape_and_mspe_inf)
{
    const char *ck = train_tiny(true);   /* OT constant: every scaled OT truth is 0 */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--predictions", tt_path("pred.npy"),
                              "--metrics", tt_path("m.csv"))), 0, "%s", err_text);
    cr_assert(strstr(out_text, "(84 truth values are 0: mape and mspe divide by them"), "%s",
              out_text);
    cr_assert(strstr(out_text, "mape=inf mspe=inf"), "%s", out_text);
    char *csv = tt_slurp(tt_path("m.csv"), NULL);
    double v[5];
    cr_assert_eq(sscanf(strchr(csv, '\n') + 1, "all,%lf,%lf,%lf,%lf,%lf", &v[0], &v[1], &v[2],
                        &v[3], &v[4]), 5, "%s", csv);
    cr_assert(isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]));
    cr_assert(isinf(v[3]) && v[3] > 0 && isinf(v[4]) && v[4] > 0, "%s", csv);
    free(csv);
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void assert_well_formed_svg(const char *s)
{
    cr_assert(!strncmp(s, "<?xml", 5) && strstr(s, "<svg ") == strchr(s, '\n') + 1, "%.200s", s);
    size_t n = strlen(s);
    cr_assert(n > 7 && !strcmp(s + n - 7, "</svg>\n"));
    char stack[64][32];
    int depth = 0;
    for (const char *p = s; (p = strchr(p, '<')); p++) {
        if (p[1] == '?') continue;
        const char *end = strchr(p, '>');
        cr_assert(end, "unterminated tag");
        bool closing = p[1] == '/', self = end[-1] == '/';
        const char *name = p + 1 + closing;
        size_t k = strcspn(name, " >/");
        cr_assert(k > 0 && k < 32);
        if (closing) {
            cr_assert(depth > 0 && strlen(stack[depth - 1]) == k &&
                      !strncmp(stack[depth - 1], name, k), "mismatched </%.*s>", (int)k, name);
            depth--;
        } else if (!self) {
            cr_assert(depth < 64);
            memcpy(stack[depth], name, k);
            stack[depth++][k] = '\0';
        }
    }
    cr_assert_eq(depth, 0, "unclosed <%s>", depth ? stack[depth - 1] : "");
}

/* The x tick labels of panel `panel` (0-based), in order; their count. */
static int xticks(const char *s, int panel, char (*out)[32], int max)
{
    const char *p = s;
    for (int k = 0; k <= panel; k++) {
        p = strstr(p, "<g class=\"panel\">");
        cr_assert_not_null(p, "panel %d", panel);
        p++;
    }
    const char *end = strstr(p, "</g>");
    int n = 0;
    while ((p = strstr(p, "class=\"xtick\"")) && p < end) {
        p = strchr(p, '>') + 1;
        size_t len = strcspn(p, "<");
        cr_assert(n < max && len < 32);
        memcpy(out[n], p, len);
        out[n++][len] = '\0';
    }
    return n;
}

/* The point counts of every polyline of series `name`, in order. */
static int series_points(const char *s, const char *name, int *pts, int max)
{
    char key[64];
    snprintf(key, sizeof key, "data-series=\"%s\"", name);
    int n = 0;
    for (const char *p = s; (p = strstr(p, key)); p++) {
        const char *q = strstr(p, "points=\"") + 8, *e = strchr(q, '"');
        int c = 0;
        for (const char *r = q; r < e; r++) c += *r == ',';
        cr_assert_lt(n, max);
        pts[n++] = c;
    }
    return n;
}

Test(eval, forecast_plot_has_history_truth_and_forecast)
{
    const char *ck = train_tiny_every(false, 0);   /* no dates: x is the row of the data */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--plot", tt_path("f.svg"))), 0, "%s",
                 err_text);
    cr_assert(strstr(out_text, "plot of 4 windows, channel 2 'OT' -> "), "%s", out_text);
    char *s = tt_slurp(tt_path("f.svg"), NULL);
    assert_well_formed_svg(s);
    cr_assert_eq(count(s, "<g class=\"panel\">"), 4);
    int pts[8];
    const char *names[3] = {"history", "truth", "forecast"};
    const int want[3] = {SEQ, PRED, PRED};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(series_points(s, names[k], pts, 8), 4, "%s", names[k]);
        for (int i = 0; i < 4; i++) cr_assert_eq(pts[i], want[k], "%s panel %d", names[k], i);
        char legend[64];
        snprintf(legend, sizeof legend, ">%s</text>", names[k]);
        cr_assert_eq(count(s, legend), 4, "legend %s", names[k]);
    }
    /* default windows: spread evenly over the 21, first and last included */
    cr_assert(strstr(s, "test window 0, channel 2 'OT': rows 88-95 in, 96-99 forecast"), "%s", s);
    cr_assert(strstr(s, "test window 20, channel 2 'OT'"));
    char ticks[16][32];
    cr_assert_eq(xticks(s, 0, ticks, 16), 12, "rows 88-99");
    for (int k = 0; k < 12; k++) {
        char row[16];
        snprintf(row, sizeof row, "%d", 88 + k);
        cr_assert_str_eq(ticks[k], row);
    }
    cr_assert(strstr(s, ">time step (row of the data)</text>"));
    free(s);
    /* chosen windows and channel, by name and by index */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--plot", tt_path("g.svg"),
                              "--plot-windows", "3,17", "--plot-channel", "b")), 0, "%s", err_text);
    s = tt_slurp(tt_path("g.svg"), NULL);
    assert_well_formed_svg(s);
    cr_assert_eq(count(s, "<g class=\"panel\">"), 2);
    cr_assert(strstr(s, "test window 3, channel 1 'b': rows 91-98 in, 99-102 forecast"), "%s", s);
    cr_assert(strstr(s, "test window 17, channel 1 'b'"));
    free(s);
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--plot", tt_path("g.svg"),
                              "--plot-windows", "5", "--plot-channel", "0")), 0, "%s", err_text);
    s = tt_slurp(tt_path("g.svg"), NULL);
    cr_assert(strstr(s, "test window 5, channel 0 'a'"), "%s", s);
    free(s);
}

static void assert_ticks(const char *s, int panel, const char *const *want, int n)
{
    char got[16][32];
    cr_assert_eq(xticks(s, panel, got, 16), n, "panel %d: %d ticks", panel, n);
    for (int k = 0; k < n; k++)
        cr_assert_str_eq(got[k], want[k], "panel %d tick %d", panel, k);
}

Test(eval, forecast_plot_has_dates_on_dated_data)
{
    const char *ck = train_tiny(false);   /* hourly from 2020-01-01 00:00 */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--plot", tt_path("f.svg"),
                              "--plot-windows", "0,13", "--horizon-plot", tt_path("h.svg"))),
                 0, "%s", err_text);
    char *s = tt_slurp(tt_path("f.svg"), NULL);
    assert_well_formed_svg(s);
    /* window 0: input rows 88-95 (2020-01-04 16:00 to 23:00), forecast 96-99
     * (2020-01-05 00:00 to 03:00); 11 hours: a tick every 3 hours */
    cr_assert(strstr(s, ">test window 0, 'OT': forecast from 2020-01-05 00:00 (rows 96-99)<"),
              "%s", s);
    assert_ticks(s, 0, (const char *const[]){"01-04 18h", "01-04 21h", "01-05 00h", "01-05 03h"},
                 4);
    /* window 13: rows 101-112, 2020-01-05 05:00 to 16:00 */
    cr_assert(strstr(s, ">test window 13, 'OT': forecast from 2020-01-05 13:00 (rows 109-112)<"));
    assert_ticks(s, 1, (const char *const[]){"01-05 06h", "01-05 09h", "01-05 12h", "01-05 15h"},
                 4);
    cr_assert_eq(count(s, ">date (every 1h)</text>"), 2);
    cr_assert_null(strstr(s, "rows 88-95 in"), "no row-number title");
    free(s);
    s = tt_slurp(tt_path("h.svg"), NULL);
    assert_well_formed_svg(s);
    cr_assert(strstr(s, ">hours ahead</text>"), "%s", s);
    free(s);
}

Test(eval, plots_of_15_minute_data)
{
    const char *ck = train_tiny_every(false, 900);   /* 2020-01-01 00:00, 00:15, ... */
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--plot", tt_path("f.svg"),
                              "--plot-windows", "20", "--horizon-plot", tt_path("h.svg"))),
                 0, "%s", err_text);
    char *s = tt_slurp(tt_path("f.svg"), NULL);
    /* window 20: rows 108-119, 2020-01-02 03:00 to 05:45; 165 min: hourly ticks */
    cr_assert(strstr(s, ">test window 20, 'OT': forecast from 2020-01-02 05:00 (rows 116-119)<"),
              "%s", s);
    assert_ticks(s, 0, (const char *const[]){"01-02 03h", "01-02 04h", "01-02 05h"}, 3);
    cr_assert(strstr(s, ">date (every 15min)</text>"));
    free(s);
    s = tt_slurp(tt_path("h.svg"), NULL);
    cr_assert(strstr(s, ">steps ahead (15min)</text>"), "%s", s);
    free(s);
}

Test(eval, horizon_plot_has_one_point_per_step)
{
    const char *ck = train_tiny(false);
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--horizon-plot", tt_path("h.svg"))), 0,
                 "%s", err_text);
    char *s = tt_slurp(tt_path("h.svg"), NULL);
    assert_well_formed_svg(s);
    int pts[2];
    cr_assert_eq(series_points(s, "MSE", pts, 2), 1);
    cr_assert_eq(pts[0], PRED);
    cr_assert_eq(series_points(s, "MAE", pts, 2), 1);
    cr_assert_eq(pts[0], PRED);
    cr_assert(strstr(s, "horizon step"));
    free(s);
}

Test(eval, bad_plot_and_metrics_options)
{
    const char *ck = train_tiny(false), *f = tt_path("f.svg");
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--plot", f, "--plot-windows", "2,21"),
                        "--plot-windows: window 21 is out of range", "21 windows (0 to 20)");
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--plot", f, "--plot-windows", "x"),
                        "--plot-windows 'x': expected window indexes", NULL);
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--plot", f, "--plot-channel", "HUFL"),
                        "--plot-channel 'HUFL': no such column", "columns: a, b, OT");
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--plot", f, "--plot-channel", "3"),
                        "--plot-channel '3'", "index from 0 to 2");
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--plot-windows", "1"),
                        "--plot-windows chooses what --plot draws", NULL);
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--metrics", ck),
                        "output --metrics", "is the same file as input --checkpoint");
    cr_assert_eq(access(f, F_OK), -1, "nothing written");
}

/* Progress over many windows (issue 19): with --progress-every 0 a line per
 * batch on stderr, windows done rising to the total; --quiet none; a bad
 * value names the flag. */
Test(eval, progress_lines_over_the_windows)
{
    const char *ckpt = train_tiny(false);
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ckpt, "--progress-every", "0")), 0, "%s",
                 err_text);
    int lines = 0, last = 0, total = 0;
    for (const char *p = strstr(err_text, "progress: "); p; p = strstr(p + 1, "progress: ")) {
        int done, of;
        cr_assert_eq(sscanf(p, "progress: evaluation %d/%d windows", &done, &of), 2, "%s",
                     err_text);
        cr_assert_gt(done, last, "%s", err_text);
        last = done;
        total = of;
        lines++;
    }
    cr_assert_eq(total, 21, "%s", err_text);
    cr_assert_eq(last, 21, "the last line counts every window:\n%s", err_text);
    cr_assert_geq(lines, 2, "%s", err_text);
    cr_assert(strstr(out_text, "test mse="), "%s", out_text);

    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ckpt, "--progress-every", "0", "--quiet")),
                 0, "%s", err_text);
    cr_assert_null(strstr(err_text, "progress:"), "%s", err_text);
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ckpt, "--progress-every", "-1")), 2);
    cr_assert(strstr(err_text, "--progress-every"), "%s", err_text);
}

/* eval without --data reads the run's CSV by its stored path: when those
 * bytes are no longer the ones the checkpoint recorded (size, hash), it is
 * refused naming the file, as train --resume refuses; --data takes them. */
Test(eval, replaced_run_data_is_refused)
{
    const char *ck = train_tiny(false), *csv = tt_path("data.csv");
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck)), 0, "%s", err_text);
    FILE *f = fopen(csv, "w");
    cr_assert_not_null(f);
    fprintf(f, "date,a,b,OT\n");
    for (int i = 0; i < 120; i++)
        fprintf(f, "2020-01-%02d %02d:00:00,%d,%d,%d\n", 1 + i / 24, i % 24, i % 7, i % 5, i % 3);
    fclose(f);
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck), "the run's data changed", csv);
    cr_assert_eq(eval(TT_ARGS("eval", "--checkpoint", ck, "--data", csv)), 0, "%s", err_text);
}
