/*
 * cmd_eval.c - `tgraph eval`: the test metrics of a checkpoint written by
 * `tgraph train` (the model and its configuration, the data, the split and
 * the scaler all come from the checkpoint), optionally on other data, with
 * what Time-Series-Library's test writes: the forecasts and the truth as
 * .npy, its metrics (mae, mse, rmse, mape, mspe) overall and per horizon
 * step, and pictures: forecast windows (history, truth, forecast) and the
 * error at each horizon step, as SVG.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "outputs.h"
#include "progress.h"
#include "train_loop.h"

#define CMD "eval"

/* At most this many forecast windows in one --plot. */
#define MAX_PLOT_WINDOWS 64

/* One `tgraph eval` call: the command line, the checkpoint and what it rebuilds. */
typedef struct {
    const char    *ckpt, *data, *preds;   /* --checkpoint, --data, --predictions */
    const char    *truth, *metrics;       /* --truth (or true.npy beside pred.npy), --metrics */
    const char    *plot, *hplot;          /* --plot, --horizon-plot */
    const char    *plot_windows, *plot_channel;   /* --plot-windows, --plot-channel */
    char          *truth_beside;          /* DIR/true.npy for --predictions DIR/pred.npy */
    bool           inverse, set_split;    /* --inverse; --split given */
    int64_t        threads;
    tg_split_spec  split;
    tg_config     *cfg;                   /* the model's config, from the checkpoint */
    tg_checkpoint  ck;
    const char    *model, *config, *cdata, *csplit;   /* the checkpoint's metadata */
    int64_t        batch;
    tg_tl_data     td;
    tg_tl_model    m;
    float         *pred, *true_;          /* forecasts and truth [windows, pred_len, cols] */
    tg_tl_metrics  test;                  /* scaled units, as train reports */
    tg_tl_tsl      tsl, *by_step;         /* TSL's metrics in the output units; by step */
    int64_t        zero_truths;
    int64_t        win[MAX_PLOT_WINDOWS], n_win, channel;   /* what --plot draws */
    tg_cli_progress progress;             /* --progress-every, --quiet */
} eval_run;

/* TSL's names: --predictions DIR/pred.npy without --truth puts the truth in
 * DIR/true.npy. 0, or 2 after printing (out of memory). */
static int truth_beside(eval_run *E)
{
    const char *p = E->preds;
    if (E->truth || !p) return 0;
    const char *base = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
    if (strcmp(base, "pred.npy")) return 0;
    char *dir = tg_tl_dirname(p);
    E->truth = E->truth_beside = dir ? tg_tl_path_join(dir, "true.npy") : NULL;
    free(dir);
    return E->truth ? 0 : tg_cli_fail(CMD, "out of memory");
}

enum { O_CHECKPOINT, O_DATA, O_SPLIT, O_PREDS, O_TRUTH, O_INVERSE, O_METRICS, O_PLOT,
       O_PLOT_WINDOWS, O_PLOT_CHANNEL, O_HPLOT, O_THREADS, O_PROGRESS_EVERY, O_QUIET };
static const tg_opt opts[] = {
    [O_CHECKPOINT] = {"--checkpoint", NULL, "FILE", "a checkpoint of tgraph train (required)"},
    [O_DATA] = {"--data", NULL, "FILE.csv", "other data (default: the run's); the scaler stays "
                "the one fitted on the run's training rows"},
    [O_SPLIT] = {"--split", NULL, "A,B,C", "another split (default: the run's)"},
    [O_PREDS] = {"--predictions", NULL, "FILE.npy",
                 "the forecasts [test windows, pred_len, channels], float32"},
    [O_TRUTH] = {"--truth", NULL, "FILE.npy",
                 "the truth of the same windows (the pred_len rows after each input), same "
                 "shape and units; --predictions DIR/pred.npy (TSL's name) without --truth "
                 "writes it to DIR/true.npy"},
    [O_INVERSE] = {"--inverse", NULL, NULL, "arrays, metrics and plots in the data's units "
                   "(default: scaled units, as TSL without --inverse)"},
    [O_METRICS] = {"--metrics", NULL, "FILE",
                   "FILE.npy: TSL's metrics.npy, float64 [mae, mse, rmse, mape, mspe]; any "
                   "other name: CSV with the header horizon,mae,mse,rmse,mape,mspe, a row 'all' "
                   "over every forecast value, then one row per horizon step 1..pred_len"},
    [O_PLOT] = {"--plot", NULL, "FILE.svg",
                "one panel per window: the channel's input history (seq_len steps), truth and "
                "forecast (pred_len steps). Data with dates: x ticks are dates (2018-02-20 for "
                "ticks a whole number of days apart, else 02-20 04h or 02-20 04:30) and the "
                "title names the forecast's first date (2018-02-20 04:00); else x = the row "
                "of the data"},
    [O_PLOT_WINDOWS] = {"--plot-windows", NULL, "I,J,...",
                        "test window indexes (0-based, as in the arrays; at most 64); "
                        "default: 4 spread evenly over the test split"},
    [O_PLOT_CHANNEL] = {"--plot-channel", NULL, "C", "a column name or index (0-based); "
                        "default: the last column (TSL's target, OT)"},
    [O_HPLOT] = {"--horizon-plot", NULL, "FILE.svg",
                 "the test MSE and MAE at each of the pred_len steps (x: 'hours ahead' on "
                 "hourly data, 'steps ahead (15min)' on 15-minute data, 'horizon step' "
                 "without dates)"},
    [O_THREADS] = {"--threads", NULL, "N", "default: every core"},
    [O_PROGRESS_EVERY] = {"--progress-every", NULL, "SECONDS",
                          "an evaluation running longer writes a line on stderr every "
                          "SECONDS (default 5; 0: every batch): windows done of the total"},
    [O_QUIET] = {"--quiet", "-q", NULL, "no progress lines"},
};

/* The command line; 2 (or the unknown argument's code) when it is wrong. */
static int parse_args(eval_run *E, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg, *v;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_CHECKPOINT) {
            if (!tg_args_value(&a, &E->ckpt)) return 2;
        } else if (a.opt == O_DATA) {
            if (!tg_args_value(&a, &E->data)) return 2;
        } else if (a.opt == O_SPLIT) {
            if (!tg_args_value(&a, &v)) return 2;
            if (tg_split_parse(v, &E->split)) {
                tg_cli_fail(CMD, "--split %s", tg_last_error());
                return 2;
            }
            E->set_split = true;
        } else if (a.opt == O_PREDS) {
            if (!tg_args_value(&a, &E->preds)) return 2;
        } else if (a.opt == O_TRUTH) {
            if (!tg_args_value(&a, &E->truth)) return 2;
        } else if (a.opt == O_METRICS) {
            if (!tg_args_value(&a, &E->metrics)) return 2;
        } else if (a.opt == O_PLOT) {
            if (!tg_args_value(&a, &E->plot)) return 2;
        } else if (a.opt == O_PLOT_WINDOWS) {
            if (!tg_args_value(&a, &E->plot_windows)) return 2;
        } else if (a.opt == O_PLOT_CHANNEL) {
            if (!tg_args_value(&a, &E->plot_channel)) return 2;
        } else if (a.opt == O_HPLOT) {
            if (!tg_args_value(&a, &E->hplot)) return 2;
        } else if (a.opt == O_INVERSE) {
            E->inverse = true;
        } else if (a.opt == O_THREADS) {
            if (!tg_args_int(&a, 0, TG_MAX_THREADS, &E->threads)) return 2;
        } else if (a.opt == O_PROGRESS_EVERY) {
            if (!tg_args_double(&a, 0, 1e9, &E->progress.every)) return 2;
        } else if (a.opt == O_QUIET) {
            E->progress.quiet = true;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    if (!E->plot && (E->plot_windows || E->plot_channel))
        return tg_cli_fail(CMD, "%s chooses what --plot draws; give --plot FILE.svg too",
                           E->plot_windows ? "--plot-windows" : "--plot-channel");
    return truth_beside(E);
}

/* Without --data: the run's data file still holds the bytes the checkpoint
 * recorded (its size and hash), as a resume checks; false after printing
 * what differs. */
static bool same_run_data(const eval_run *E)
{
    const tg_checkpoint *ck = &E->ck;
    const char *osize = tg_checkpoint_meta(ck, "data.size");
    const char *ohash = tg_checkpoint_meta(ck, "data.fnv1a64");
    if (E->data || !strcmp(E->cdata, TG_BUILTIN_DATA) || !osize || !ohash) return true;
    tg_file_id id = {0};
    if (tg_file_id_of(E->cdata, &id)) {
        tg_cli_fail(CMD, "the run's data (stored in %s): %s", E->ckpt, tg_last_error());
        return false;
    }
    char nsize[32], nhash[32];
    snprintf(nsize, sizeof nsize, "%llu", (unsigned long long)id.size);
    snprintf(nhash, sizeof nhash, "%016llx", (unsigned long long)id.hash);
    bool same = !id.regular || (!strcmp(osize, nsize) && !strcmp(ohash, nhash));
    tg_file_id_clear(&id);
    if (!same)
        tg_cli_fail(CMD, "the run's data changed since %s was written (now %s, %s bytes, fnv1a64 "
                    "%s; then %s bytes, fnv1a64 %s): the run's scaler and metrics belong to the "
                    "old bytes; to evaluate on the new bytes anyway give --data %s", E->ckpt,
                    E->cdata, nsize, nhash, osize, ohash, E->cdata);
    return same;
}

/* The checkpoint read and its metadata checked (a run of tgraph train whose
 * data can still be read); false after printing why not. */
static bool read_checkpoint(eval_run *E)
{
    const char *ckpt = E->ckpt, *data = E->data, *preds = E->preds;
    tg_checkpoint *ck = &E->ck;
    if (!ckpt) {
        tg_cli_fail(CMD, "missing --checkpoint FILE.safetensors (written by tgraph train)");
        return false;
    }
    const tg_cli_file in[] = {{"--checkpoint", ckpt}, {"--data", data}};
    const tg_cli_file out_file[] = {{"--predictions", preds}, {"--truth", E->truth},
                                    {"--metrics", E->metrics}, {"--plot", E->plot},
                                    {"--horizon-plot", E->hplot}};
    const int n_out = (int)(sizeof out_file / sizeof *out_file);
    if (tg_cli_check_outputs(CMD, in, 2, out_file, n_out)) return false;
    if (E->threads && tg_threads_set((int)E->threads)) {
        tg_cli_fail(CMD, "--threads %s", tg_last_error());
        return false;
    }
    if (tg_checkpoint_read(ckpt, ck)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        return false;
    }
    E->model = tg_checkpoint_meta(ck, "model"), E->config = tg_checkpoint_meta(ck, "config");
    E->cdata = tg_checkpoint_meta(ck, "data"), E->csplit = tg_checkpoint_meta(ck, "split");
    if (!E->model || !E->config || !E->cdata || !E->csplit ||
        !tg_checkpoint_meta(ck, "batch_size") || !ck->scaler) {
        tg_cli_fail(CMD, "--checkpoint %s: not a checkpoint of tgraph train (metadata lacks the "
                    "model, its config, the data, the split or the scaler)", ckpt);
        return false;
    }
    if (tg_checkpoint_meta_int(ck, "batch_size", 1, 4096, &E->batch)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        return false;
    }
    const char *cdata = E->cdata;
    if (!data && strcmp(cdata, TG_BUILTIN_DATA) && access(cdata, R_OK) != 0) {
        tg_cli_fail(CMD, "the run's data %s (stored in %s) cannot be read: %s; give its new "
                    "place with --data FILE.csv", cdata, ckpt, strerror(errno));
        return false;
    }
    /* the data is the checkpoint's unless --data says otherwise */
    const tg_cli_file cdata_file = {"(the checkpoint's data)", data ? NULL : cdata};
    if (tg_cli_check_outputs(CMD, &cdata_file, 1, out_file, n_out) || !same_run_data(E))
        return false;
    if (!E->set_split && tg_split_parse(E->csplit, &E->split)) {
        tg_cli_fail(CMD, "--checkpoint %s: %s", ckpt, tg_last_error());
        return false;
    }
    return true;
}

/* The data loaded and the model rebuilt with the checkpoint's weights and scaler. */
static bool load_model(eval_run *E)
{
    const char *ckpt = E->ckpt;
    tg_tl_data *td = &E->td;
    tg_tl_model *m = &E->m;
    tg_tl_features features;
    const char *target;
    if (tg_tl_config_parse(CMD, E->config, E->cfg) ||
        tg_tl_layout_of(CMD, &E->ck, &features, &target) ||
        tg_tl_data_load(CMD, E->data ? E->data : E->cdata, td) ||
        tg_tl_data_layout(CMD, td, target, features) ||
        tg_tl_data_marks(CMD, td, tg_checkpoint_meta(&E->ck, "freq")))
        return false;
    if (td->d->cols != E->ck.scaler->cols) {
        tg_cli_fail(CMD, "--data %s has %lld columns; the model was trained on %lld",
                    td->d->source, (long long)td->d->cols, (long long)E->ck.scaler->cols);
        return false;
    }
    char src[64 + 4096];
    snprintf(src, sizeof src, "the config of checkpoint %.4000s", ckpt);
    if (tg_tl_model_build(CMD, m, E->model, E->cfg, src, td, E->batch, NULL) ||
        (features == TG_TL_MS && tg_tl_model_target(CMD, m, td->target)))
        return false;
    if (tg_checkpoint_restore_params(&E->ck, m->ps)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        return false;
    }
    /* the scaler the model was trained with, whatever the data */
    return !tg_tl_data_prepare(CMD, td, &E->split, m->seq_len, m->pred_len, E->ck.scaler);
}

/* ---- what --plot draws ---- */

/* --plot-windows I,J,...: test window indexes, each in range. */
static bool parse_windows(eval_run *E)
{
    const int64_t count = E->td.test.count;
    const char *s = E->plot_windows;
    while (*s) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || (*end && *end != ',') || *s == '-' || *s == '+') {
            tg_cli_fail(CMD, "--plot-windows '%s': expected window indexes like 0,10,20",
                        E->plot_windows);
            return false;
        }
        if (v >= count) {
            tg_cli_fail(CMD, "--plot-windows: window %lld is out of range: the test split has "
                        "%lld windows (0 to %lld)", v, (long long)count, (long long)count - 1);
            return false;
        }
        if (E->n_win == MAX_PLOT_WINDOWS) {
            tg_cli_fail(CMD, "--plot-windows: at most %d windows in one plot", MAX_PLOT_WINDOWS);
            return false;
        }
        E->win[E->n_win++] = v;
        s = *end ? end + 1 : end;
    }
    if (!E->n_win) tg_cli_fail(CMD, "--plot-windows: no window given");
    return E->n_win > 0;
}

/* --plot-channel C: a column name of the data, else an index 0..cols-1. */
static bool parse_channel(eval_run *E)
{
    const tg_dataset *d = E->td.d;
    const char *s = E->plot_channel;
    for (int64_t c = 0; c < d->cols; c++)
        if (d->names && d->names[c] && !strcmp(d->names[c], s)) return E->channel = c, true;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end != s && !*end && !errno && v >= 0 && v < d->cols) return E->channel = v, true;
    char names[512] = "";
    for (int64_t c = 0; c < d->cols && d->names; c++) {
        size_t n = strlen(names);
        if (n + 64 >= sizeof names) {
            snprintf(names + n, sizeof names - n, ", ...");
            break;
        }
        snprintf(names + n, sizeof names - n, "%s%.48s", c ? ", " : "", d->names[c]);
    }
    tg_cli_fail(CMD, "--plot-channel '%s': no such column (the data's columns: %s) nor an "
                "index from 0 to %lld", s, names, (long long)d->cols - 1);
    return false;
}

/* The windows and the channel --plot draws: by default 4 windows spread
 * evenly over the test split, and the last column (TSL's target, 'OT'). */
static bool choose_plot(eval_run *E)
{
    if (!E->plot) return true;
    const int64_t count = E->td.test.count;
    E->channel = E->td.d->cols - 1;
    if (E->plot_channel && !parse_channel(E)) return false;
    if (E->plot_windows) return parse_windows(E);
    for (int64_t k = 0; k < 4 && k < count; k++)
        E->win[E->n_win++] = count < 4 ? k : (k * (count - 1) + 1) / 3;
    return true;
}

/* ---- the outputs ---- */

/* v (scaled, column c) in the output units: the data's with --inverse. */
static float unit(const eval_run *E, double v, int64_t c)
{
    const tg_scaler *sc = E->td.scaler;
    return E->inverse ? (float)(v * sc->std[c] + sc->mean[c]) : (float)v;
}

/* The truth of every test window (the pred_len rows after its input), and
 * both arrays in the output units. */
static void make_truth(eval_run *E)
{
    const tg_windows *w = &E->td.test;
    const int64_t per = w->pred_len * w->cols;
    for (int64_t i = 0; i < w->count; i++)
        memcpy(E->true_ + i * per, w->z + (w->begin + i + w->seq_len) * w->cols,
               (size_t)per * sizeof *E->true_);
    if (!E->inverse) return;
    for (int64_t i = 0; i < w->count * per; i++) {
        E->pred[i] = unit(E, E->pred[i], i % w->cols);
        E->true_[i] = unit(E, E->true_[i], i % w->cols);
    }
}

/* [test windows, pred_len, channels] float32 to a .npy file. */
static bool write_npy(const eval_run *E, const char *flag, const char *path, const float *v)
{
    const tg_tl_model *m = &E->m;
    tg_tensor *t = tg_tensor_new(TG_F32, 3, (int64_t[]){E->td.test.count, m->pred_len, m->cols});
    if (!t) {
        tg_cli_fail(CMD, "%s", tg_last_error());
        return false;
    }
    memcpy(t->data, v, (size_t)t->numel * sizeof *v);
    bool ok = !tg_npy_save(path, t);
    if (!ok) tg_cli_fail(CMD, "%s %s", flag, tg_last_error());
    tg_tensor_free(t);
    return ok;
}

static void csv_row(FILE *f, const tg_tl_tsl *m)
{
    fprintf(f, ",%.9g,%.9g,%.9g,%.9g,%.9g\n", m->mae, m->mse, m->rmse, m->mape, m->mspe);
}

static tg_status write_metrics_csv(FILE *f, void *ctx)
{
    const eval_run *E = ctx;
    fprintf(f, "horizon,mae,mse,rmse,mape,mspe\nall");
    csv_row(f, &E->tsl);
    for (int64_t h = 0; h < E->m.pred_len; h++) {
        fprintf(f, "%lld", (long long)h + 1);
        csv_row(f, &E->by_step[h]);
    }
    return ferror(f) ? tg_set_error(TG_ERR_IO, "write failed") : TG_OK;
}

/* --metrics: FILE.npy is TSL's metrics.npy ([mae, mse, rmse, mape, mspe],
 * float64); any other name a CSV with the overall row and one per step. */
static bool write_metrics(eval_run *E)
{
    const char *p = E->metrics;
    size_t n = strlen(p);
    tg_status st;
    if (n >= 4 && !strcmp(p + n - 4, ".npy")) {
        tg_tensor *t = tg_tensor_new(TG_F64, 1, (int64_t[]){5});
        if (!t) return tg_cli_fail(CMD, "%s", tg_last_error()), false;
        double *v = t->data;
        v[0] = E->tsl.mae, v[1] = E->tsl.mse, v[2] = E->tsl.rmse;
        v[3] = E->tsl.mape, v[4] = E->tsl.mspe;
        st = tg_npy_save(p, t);
        tg_tensor_free(t);
    } else {
        st = tg_write_atomic(p, write_metrics_csv, E);
    }
    if (st) tg_cli_fail(CMD, "--metrics %s", tg_last_error());
    return !st;
}

/* ---- dates on the x axis of --plot ---- */

/* At most this many x ticks on one panel. */
#define MAX_TICKS 16

/* One panel's texts: its title and its x tick positions and labels. */
typedef struct {
    char        title[256];
    double      x[MAX_TICKS];
    char        text[MAX_TICKS][24];
    const char *label[MAX_TICKS];
} panel_text;

/* Tick steps in seconds: a date axis takes the smallest that is a multiple
 * of the data's step and gives at most about 6 ticks. */
static const int64_t date_steps[] = {
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200,
    86400, 2 * 86400, 3 * 86400, 7 * 86400, 14 * 86400, 28 * 86400, 91 * 86400, 182 * 86400,
    364 * 86400};

static int64_t floor_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

static int64_t date_step(int64_t span, int64_t freq)
{
    for (size_t i = 0; i < sizeof date_steps / sizeof *date_steps; i++)
        if (date_steps[i] % freq == 0 && date_steps[i] * 5 >= span) return date_steps[i];
    return (span / freq / 5 + 1) * freq;
}

/* t as a tick label, compact: "2018-02-20" for steps of whole days, else
 * "02-20 04h" on whole hours, "02-20 04:30" off them, "02-20 04:30:15" for
 * steps under a minute (the year is in the panel's title). */
static void tick_label(int64_t t, int64_t step, char *buf, size_t len)
{
    char s[32];   /* YYYY-MM-DD HH:MM:SS */
    tg_date_format(t, TG_DATE_YMD_HMS, s, sizeof s);
    if (step % 86400 == 0)
        snprintf(buf, len, "%.10s", s);
    else if (step % 3600 == 0 && t % 3600 == 0)
        snprintf(buf, len, "%.5s %.2sh", s + 5, s + 11);
    else
        snprintf(buf, len, "%.5s %.*s", s + 5, step % 60 ? 8 : 5, s + 11);
}

/* The x ticks of the rows r0..r1 of dated data: the rows whose date is a
 * whole number of tick steps from the window's phase (regular data), else
 * (dates out of order or irregular) about 5 rows spread over the window. */
static int date_ticks(const tg_dataset *d, int64_t r0, int64_t r1, panel_text *pt)
{
    const int64_t *t = d->time, freq = d->freq > 0 ? d->freq : 1, span = t[r1] - t[r0];
    int64_t step = date_step(span > 0 ? span : freq, freq), phase = floor_mod(t[r0], freq);
    int n = 0;
    for (int64_t r = r0; r <= r1 && n < MAX_TICKS; r++)
        if (floor_mod(t[r] - phase, step) == 0) pt->x[n++] = (double)r;
    if (n < 2 || span <= 0) {
        n = 0, step = freq;
        for (int64_t r = r0; r <= r1 && n < MAX_TICKS; r += (r1 - r0) / 5 + 1)
            pt->x[n++] = (double)r;
    }
    for (int k = 0; k < n; k++) {
        tick_label(t[(int64_t)pt->x[k]], step, pt->text[k], sizeof pt->text[k]);
        pt->label[k] = pt->text[k];
    }
    return n;
}

/* t for a title: "2018-02-20 04:00" (date-only data at midnight: the day;
 * seconds when there are some). */
static const char *title_date(const tg_dataset *d, int64_t t, char *buf, size_t len)
{
    tg_date_style st = d->date_style == TG_DATE_YMD ? TG_DATE_YMD
                       : t % 60                     ? TG_DATE_YMD_HMS
                                                    : TG_DATE_YMD_HM;
    return tg_date_format(t, st, buf, len);
}

/* One panel of --plot: window i's history, truth and forecast of the
 * channel; x is the row of the data, labelled with its dates when it has them. */
static void plot_panel(const eval_run *E, int64_t i, double *xy, tg_series *s, panel_text *pt,
                       tg_plot_panel *p)
{
    const tg_windows *w = &E->td.test;
    const tg_dataset *d = E->td.d;
    const int64_t L = w->seq_len, P = w->pred_len, c = E->channel, C = w->cols;
    const int64_t row0 = w->begin + i, f0 = row0 + L;   /* first input and forecast rows */
    double *hx = xy, *hy = hx + L, *fx = hy + L, *ty = fx + P, *fy = ty + P;
    for (int64_t k = 0; k < L; k++) hx[k] = (double)(row0 + k), hy[k] = unit(E, w->z[(row0 + k) * C + c], c);
    for (int64_t k = 0; k < P; k++) {
        fx[k] = (double)(f0 + k);
        ty[k] = E->true_[(i * P + k) * C + c];
        fy[k] = E->pred[(i * P + k) * C + c];
    }
    s[0] = (tg_series){"history", hx, hy, (int)L};
    s[1] = (tg_series){"truth", fx, ty, (int)P};
    s[2] = (tg_series){"forecast", fx, fy, (int)P};
    const char *name = d->names ? d->names[c] : "";
    char date[40];
    if (d->time)
        snprintf(pt->title, sizeof pt->title, "test window %lld, '%.48s': forecast from %s "
                 "(rows %lld-%lld)", (long long)i, name, title_date(d, d->time[f0], date,
                 sizeof date), (long long)f0, (long long)(f0 + P - 1));
    else
        snprintf(pt->title, sizeof pt->title, "test window %lld, channel %lld '%.64s': rows "
                 "%lld-%lld in, %lld-%lld forecast", (long long)i, (long long)c, name,
                 (long long)row0, (long long)(f0 - 1), (long long)f0, (long long)(f0 + P - 1));
    static const char *const colours[3] = {"#1f77b4", "#2ca02c", "#d62728"};
    *p = (tg_plot_panel){pt->title, NULL /* write_plot sets it */,
                         E->inverse ? "value (data units)" : "value (scaled)", s, 3,
                         colours, true, (double)f0 - 0.5, NULL, NULL, 0};
    if (d->time) {
        p->n_xticks = date_ticks(d, row0, f0 + P - 1, pt);
        p->xticks = pt->x, p->xtick_labels = pt->label;
    }
}

/* The x axis label of --plot: "date (every 1h)" on dated data. */
static const char *plot_xlabel(const tg_dataset *d, char *buf, size_t len)
{
    char f[32];
    if (!d->time) return "time step (row of the data)";
    if (d->freq > 0)
        snprintf(buf, len, "%.64s (every %s)", d->date_name ? d->date_name : "date",
                 tg_date_freq_name(d->freq, f, sizeof f));
    else
        snprintf(buf, len, "%.64s", d->date_name ? d->date_name : "date");
    return buf;
}

/* --plot: one panel per chosen window, stacked. */
static bool write_plot(const eval_run *E)
{
    const int64_t n = E->n_win, per = 2 * (E->m.seq_len + 2 * E->m.pred_len);
    double *xy = malloc(sizeof *xy * (size_t)(n * per));
    tg_series *s = malloc(sizeof *s * (size_t)(3 * n));
    tg_plot_panel *p = malloc(sizeof *p * (size_t)n);
    panel_text *pt = malloc(sizeof *pt * (size_t)n);
    char top[256], xlabel[128];
    bool ok = xy && s && p && pt;
    if (!ok) tg_cli_fail(CMD, "out of memory");
    const char *xl = plot_xlabel(E->td.d, xlabel, sizeof xlabel);
    for (int64_t k = 0; ok && k < n; k++) {
        plot_panel(E, E->win[k], xy + k * per, s + 3 * k, pt + k, p + k);
        p[k].xlabel = xl;
    }
    const char *src = strrchr(E->td.d->source, '/') ? strrchr(E->td.d->source, '/') + 1
                                                      : E->td.d->source;
    snprintf(top, sizeof top, "%s on %.60s, test split (%s units)", E->model, src,
             E->inverse ? "data" : "scaled");
    if (ok && tg_svg_panels(E->plot, top, p, (int)n))
        ok = false, tg_cli_fail(CMD, "--plot %s", tg_last_error());
    free(xy), free(s), free(p), free(pt);
    return ok;
}

/* The x axis label of --horizon-plot: "hours ahead" for hourly data, "steps
 * ahead (15min)" for another known step, else "horizon step". */
static const char *horizon_xlabel(const tg_dataset *d, char *buf, size_t len)
{
    static const char *const unit_names[][2] = {
        {"1s", "seconds"}, {"1min", "minutes"}, {"1h", "hours"}, {"1d", "days"}};
    char f[32];
    if (!d->time || d->freq <= 0) return "horizon step";
    tg_date_freq_name(d->freq, f, sizeof f);
    for (size_t k = 0; k < sizeof unit_names / sizeof *unit_names; k++)
        if (!strcmp(f, unit_names[k][0])) {
            snprintf(buf, len, "%s ahead", unit_names[k][1]);
            return buf;
        }
    snprintf(buf, len, "steps ahead (%s)", f);
    return buf;
}

/* --horizon-plot: the test MSE and MAE at each of the pred_len steps. */
static bool write_horizon_plot(const eval_run *E)
{
    const int64_t P = E->m.pred_len;
    double *v = malloc(sizeof *v * (size_t)(3 * P));
    if (!v) return tg_cli_fail(CMD, "out of memory"), false;
    for (int64_t h = 0; h < P; h++)
        v[h] = (double)(h + 1), v[P + h] = E->by_step[h].mse, v[2 * P + h] = E->by_step[h].mae;
    tg_series s[2] = {{"MSE", v, v + P, (int)P}, {"MAE", v, v + 2 * P, (int)P}};
    char title[256], xlabel[64];
    snprintf(title, sizeof title, "%s: test error by horizon step (%lld windows)", E->model,
             (long long)E->td.test.count);
    bool ok = !tg_svg_lines(E->hplot, title, horizon_xlabel(E->td.d, xlabel, sizeof xlabel),
                            E->inverse ? "error (data units)" : "error (scaled units)", s, 2);
    if (!ok) tg_cli_fail(CMD, "--horizon-plot %s", tg_last_error());
    free(v);
    return ok;
}

/* ---- the report ---- */

static void report_files(const eval_run *E, FILE *rep)
{
    const char *u = E->inverse ? "data" : "scaled";
    long long W = E->td.test.count, P = E->m.pred_len, C = E->m.cols;
    if (E->preds)
        fprintf(rep, "forecasts [%lld, %lld, %lld] (%s units) -> %s\n", W, P, C, u, E->preds);
    if (E->truth)
        fprintf(rep, "truth [%lld, %lld, %lld] (%s units) -> %s\n", W, P, C, u, E->truth);
    if (E->metrics) fprintf(rep, "metrics (overall and by horizon step) -> %s\n", E->metrics);
    if (E->plot)
        fprintf(rep, "plot of %lld window%s, channel %lld '%s' -> %s\n", (long long)E->n_win,
                E->n_win == 1 ? "" : "s", (long long)E->channel,
                E->td.d->names ? E->td.d->names[E->channel] : "", E->plot);
    if (E->hplot) fprintf(rep, "error by horizon step -> %s\n", E->hplot);
}

/* The report: what was tested, where the files went, TSL's metrics, then
 * the one line of train with the baselines. */
static bool report(eval_run *E)
{
    const tg_tl_data *td = &E->td;
    double rl, tm;
    if (tg_tl_baselines(CMD, td, &rl, &tm)) return false;
    char sp[64];
    tg_split_format(&E->split, sp, sizeof sp);
    /* with an output on stdout (-) the report goes to stderr */
    const char *outs[] = {E->preds, E->truth, E->metrics, E->plot, E->hplot};
    FILE *rep = stdout;
    for (int i = 0; i < 5; i++)
        if (outs[i] && !strcmp(outs[i], "-")) rep = stderr;
    tg_cli_print(rep, "%s (epoch %lld of its run) on %s, split %s: %lld test windows\n",
                 E->model, (long long)E->ck.epoch, td->d->source, sp, (long long)td->test.count);
    report_files(E, rep);
    const tg_tl_tsl *t = &E->tsl;
    fprintf(rep, "metrics (%s units): mae=%.6g mse=%.6g rmse=%.6g mape=%.6g mspe=%.6g",
            E->inverse ? "data" : "scaled", t->mae, t->mse, t->rmse, t->mape, t->mspe);
    if (E->zero_truths)
        fprintf(rep, " (%lld truth values are 0: mape and mspe divide by them, as TSL does)",
                (long long)E->zero_truths);
    fprintf(rep, "\n");
    tg_tl_print_result(rep, &E->test, rl, tm);
    return true;
}

/* Every test window through the model (0), 1 if evaluation failed, 2 otherwise. */
static int evaluate(eval_run *E)
{
    const int64_t W = E->td.test.count, per = E->m.pred_len * E->m.cols;
    if (!choose_plot(E)) return 2;
    E->pred = malloc(sizeof *E->pred * (size_t)(W * per));
    E->true_ = malloc(sizeof *E->true_ * (size_t)(W * per));
    E->by_step = malloc(sizeof *E->by_step * (size_t)E->m.pred_len);
    if (!E->pred || !E->true_ || !E->by_step) return tg_cli_fail(CMD, "out of memory");
    tg_cli_progress_start(&E->progress);
    E->m.progress = &E->progress;
    if (tg_tl_evaluate(CMD, "evaluation", &E->m, &E->td.test, &E->test, E->pred)) return 1;
    make_truth(E);
    if (tg_tl_tsl_metrics(CMD, E->pred, E->true_, W, E->m.pred_len, E->m.cols, &E->tsl,
                          E->by_step, &E->zero_truths))
        return 2;
    if ((E->preds && !write_npy(E, "--predictions", E->preds, E->pred)) ||
        (E->truth && !write_npy(E, "--truth", E->truth, E->true_)) ||
        (E->metrics && !write_metrics(E)) || (E->plot && !write_plot(E)) ||
        (E->hplot && !write_horizon_plot(E)))
        return 2;
    return report(E) ? 0 : 2;
}

static int run(int argc, char **argv)
{
    eval_run E = {.progress = TG_CLI_PROGRESS_DEFAULT};
    tg_checkpoint_init(&E.ck);
    if (!(E.cfg = tg_config_new())) return tg_cli_fail(CMD, "out of memory");
    int rc = parse_args(&E, argc, argv);
    if (!rc) rc = read_checkpoint(&E) && load_model(&E) ? evaluate(&E) : 2;
    free(E.pred);
    free(E.true_);
    free(E.by_step);
    free(E.truth_beside);
    tg_tl_model_free(&E.m);
    tg_tl_data_free(&E.td);
    tg_checkpoint_clear(&E.ck);
    tg_config_free(E.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_eval = {
    .name = "eval",
    .summary = "test a checkpoint of tgraph train; write forecasts, truth, metrics and plots",
    .help =
        "usage: tgraph eval --checkpoint FILE [--data FILE.csv] [--split A,B,C]\n"
        "                   [--predictions FILE.npy] [--truth FILE.npy] [--inverse]\n"
        "                   [--metrics FILE.csv|FILE.npy] [--plot FILE.svg\n"
        "                   [--plot-windows I,J,...] [--plot-channel C]]\n"
        "                   [--horizon-plot FILE.svg] [--threads N]\n"
        "                   [--progress-every SECONDS] [--quiet]\n\n"
        "Rebuilds the model a checkpoint of `tgraph train` was trained with (model,\n"
        "config, batch size from its metadata), loads its weights and runs every test\n"
        "window. It prints Time-Series-Library's metrics (mae, mse, rmse, mape, mspe,\n"
        "as its utils/metrics.py defines them) in the units of the written arrays, then\n"
        "the test MSE and MAE in the units of the training run's StandardScaler next to\n"
        "the repeat-last and train-mean baselines, on the same last line as train:\n"
        "  metrics (scaled units): mae=0.372 mse=0.315 rmse=0.5612 mape=2.31 mspe=310.2\n"
        "  test mse=0.3150 mae=0.3720 | repeat-last mse=1.2220 | train-mean mse=1.1100\n"
        "A truth of 0 makes mape and mspe inf (nan when its forecast is 0 too), as\n"
        "numpy does in TSL; the metrics line then says how many truths are 0.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\n"
        "Any one output may be - (stdout); the report then goes to stderr.\n\n"
        "examples:\n"
        "  tgraph eval --checkpoint runs/train/best.safetensors\n"
        "  tgraph eval --checkpoint runs/etth1/best.safetensors --predictions out/pred.npy \\\n"
        "      --metrics out/metrics.csv --plot out/forecast.svg --horizon-plot out/horizon.svg\n",
    .run = run,
};
