/*
 * cmd_predict.c - `tgraph predict`: the forecast of a checkpoint of `tgraph
 * train` from the last seq_len rows of a CSV file, written as a CSV file
 * with the input's header, its date column continued at the data's own step
 * and the values in the data's units.
 *
 * The model, its config, the scaler and the layout (--features, --target)
 * come from the checkpoint, as in `tgraph eval`; the forecast of a window is
 * the one `tgraph eval --predictions --inverse` gives for the same window.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "outputs.h"
#include "train_loop.h"

#define CMD "predict"

/* One `tgraph predict` call. */
typedef struct {
    const char    *ckpt, *data, *out;   /* --checkpoint, --data, --out */
    int64_t        threads;
    tg_config     *cfg;
    tg_checkpoint  ck;
    const char    *model, *config;     /* the checkpoint's metadata */
    int64_t        batch;
    tg_tl_features features;
    const char    *target;
    tg_tl_data     td;
    tg_tl_model    m;
    int64_t        step;               /* seconds between rows; 0: no dates */
    int64_t        out_cols, out_col0; /* the columns written: out_col0 .. +out_cols */
    double        *fc;                 /* [pred_len, m.cols] forecast, data units */
} predict_run;

enum { O_CHECKPOINT, O_DATA, O_OUT, O_THREADS };
static const tg_opt opts[] = {
    [O_CHECKPOINT] = {"--checkpoint", NULL, "FILE", "a checkpoint of tgraph train (required)"},
    [O_DATA] = {"--data", NULL, "FILE.csv",
                "the columns the model was trained on, in the same order, at least seq_len "
                "rows; when it has a date column, the last seq_len rows must step evenly (no "
                "gap) (required)"},
    [O_OUT] = {"--out", "-o", "FILE.csv", "where the forecast goes; - (the default) is stdout"},
    [O_THREADS] = {"--threads", NULL, "N", "default: every core"},
};

static int parse_args(predict_run *P, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_CHECKPOINT) {
            if (!tg_args_value(&a, &P->ckpt)) return 2;
        } else if (a.opt == O_DATA) {
            if (!tg_args_value(&a, &P->data)) return 2;
        } else if (a.opt == O_OUT) {
            if (!tg_args_value(&a, &P->out)) return 2;
        } else if (a.opt == O_THREADS) {
            if (!tg_args_int(&a, 0, TG_MAX_THREADS, &P->threads)) return 2;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    if (!P->ckpt) return tg_cli_fail(CMD, "missing --checkpoint FILE.safetensors (written by "
                                     "tgraph train)");
    if (!P->data) return tg_cli_fail(CMD, "missing --data FILE.csv (at least seq_len rows, the "
                                     "columns the model was trained on)");
    if (!P->out) P->out = "-";
    const tg_cli_file in[] = {{"--checkpoint", P->ckpt}, {"--data", P->data}};
    const tg_cli_file out = {"--out", P->out};
    if (tg_cli_check_outputs(CMD, in, 2, &out, 1)) return 2;
    if (P->threads && tg_threads_set((int)P->threads))
        return tg_cli_fail(CMD, "--threads %s", tg_last_error());
    return 0;
}

/* The checkpoint and what it says about the run. */
static int read_checkpoint(predict_run *P)
{
    tg_checkpoint *ck = &P->ck;
    if (tg_checkpoint_read(P->ckpt, ck))
        return tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
    P->model = tg_checkpoint_meta(ck, "model"), P->config = tg_checkpoint_meta(ck, "config");
    if (!P->model || !P->config || !tg_checkpoint_meta(ck, "batch_size") || !ck->scaler)
        return tg_cli_fail(CMD, "--checkpoint %s: not a checkpoint of tgraph train (metadata "
                           "lacks the model, its config or the scaler)", P->ckpt);
    if (tg_checkpoint_meta_int(ck, "batch_size", 1, 4096, &P->batch))
        return tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
    if (tg_tl_config_parse(CMD, P->config, P->cfg) ||
        tg_tl_layout_of(CMD, ck, &P->features, &P->target))
        return 2;
    return 0;
}

/* "a,b,c" from td->columns (a copy of the text, '\n'-joined). */
static void commas(char *s)
{
    for (; *s; s++)
        if (*s == '\n') *s = ',';
}

/* The data read, its columns the checkpoint's, the layout applied. */
static int load_data(predict_run *P)
{
    tg_tl_data *td = &P->td;
    if (tg_tl_data_load(CMD, P->data, td) ||
        tg_tl_data_layout(CMD, td, P->target, P->features) ||
        tg_tl_data_marks(CMD, td, tg_checkpoint_meta(&P->ck, "freq")))
        return 2;
    const char *want = tg_checkpoint_meta(&P->ck, "columns");
    if (want && strcmp(want, td->columns)) {
        char *w = strdup(want);
        if (!w) return tg_cli_fail(CMD, "out of memory");
        commas(w);
        commas(td->columns);
        tg_cli_fail(CMD, "--data %s has the columns %s; the model was trained on %s", P->data,
                    td->columns, w);
        free(w);
        return 2;
    }
    if (td->d->cols != P->ck.scaler->cols)
        return tg_cli_fail(CMD, "--data %s has %lld value columns; the model was trained on %lld",
                           P->data, (long long)td->d->cols, (long long)P->ck.scaler->cols);
    return 0;
}

/* The model with the checkpoint's weights; the data long enough for it. */
static int load_model(predict_run *P)
{
    tg_tl_model *m = &P->m;
    const tg_dataset *d = P->td.d;
    size_t n = strlen(P->ckpt) + 32;
    char *src = malloc(n);
    if (!src) return tg_cli_fail(CMD, "out of memory");
    snprintf(src, n, "the config of checkpoint %s", P->ckpt);
    int rc = tg_tl_model_build(CMD, m, P->model, P->cfg, src, &P->td, P->batch, NULL);
    free(src);
    if (rc || (P->features == TG_TL_MS && tg_tl_model_target(CMD, m, P->td.target))) return 2;
    if (tg_checkpoint_restore_params(&P->ck, m->ps))
        return tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
    if (d->rows < m->seq_len)
        return tg_cli_fail(CMD, "--data %s has %lld rows; the model forecasts from the last "
                           "seq_len = %lld", P->data, (long long)d->rows, (long long)m->seq_len);
    return 0;
}

/* The dates of the rows used strictly increase and step evenly at the
 * data's frequency (or, with a single row, the training data's): the
 * forecast's dates continue them. The last step is checked even when
 * seq_len is 1 (it is the step the forecast continues). */
static int check_dates(predict_run *P)
{
    const tg_dataset *d = P->td.d;
    if (!d->time) return 0;
    P->step = d->freq;
    if (d->rows < 2 &&
        tg_checkpoint_meta_int(&P->ck, "date.freq", 1, INT64_MAX, &P->step))
        return tg_cli_fail(CMD, "--data %s has a single row and %s: its step is unknown",
                           P->data, tg_last_error());
    char f[32], a[32], b[32], g[32];
    int64_t r0 = d->rows - P->m.seq_len + 1;
    for (int64_t r = r0 < d->rows - 1 ? r0 : d->rows - 1; r >= 1 && r < d->rows; r++) {
        int64_t gap = d->time[r] - d->time[r - 1];
        tg_date_format(d->time[r], d->date_style, a, sizeof a);
        tg_date_format(d->time[r - 1], d->date_style, b, sizeof b);
        if (gap <= 0)
            return tg_cli_fail(CMD, "--data %s:%lld: the date '%s' is not after the row before's "
                               "('%s', line %lld); the dates of the rows a forecast uses must "
                               "strictly increase (its dates continue them)", P->data,
                               (long long)d->line[r], a, b, (long long)d->line[r - 1]);
        if (gap == P->step) continue;
        return tg_cli_fail(CMD, "--data %s:%lld: data row %lld ('%s') comes %s after the row "
                           "before ('%s'); the rows a forecast uses must step evenly by the "
                           "data's frequency, %s (a gap or an irregular step)", P->data,
                           (long long)d->line[r], (long long)r + 1, a,
                           tg_date_freq_name(gap, g, sizeof g), b,
                           tg_date_freq_name(P->step, f, sizeof f));
    }
    return 0;
}

/* The last seq_len rows through the model; the forecast in data units. */
static int forecast(predict_run *P)
{
    tg_tl_model *m = &P->m;
    const tg_dataset *d = P->td.d;
    const tg_scaler *sc = P->ck.scaler;
    tg_tensor *x = (tg_tensor *)tg_node_value(m->ex);
    float *xv = x->data;
    const int64_t C = m->cols, per = m->seq_len * C;
    const double *rows = d->data + (d->rows - m->seq_len) * C;
    for (int64_t k = 0; k < per; k++)   /* as tg_scaler_transform */
        xv[k] = (float)((rows[k] - sc->mean[k % C]) / sc->std[k % C]);
    for (int64_t b = 1; b < m->B; b++) memcpy(xv + b * per, xv, (size_t)per * sizeof *xv);
    if (m->n_mark) {   /* x_mark: the time features of the same rows */
        float *mv = ((tg_tensor *)tg_node_value(m->exm))->data;
        const int64_t mper = m->seq_len * m->n_mark;
        for (int64_t b = 0; b < m->B; b++)
            memcpy(mv + b * mper, m->marks + (d->rows - m->seq_len) * m->n_mark,
                   (size_t)mper * sizeof *mv);
    }
    if (tg_graph_forward(m->ge)) return tg_cli_fail(CMD, "forecast: %s", tg_last_error());
    const float *p = tg_node_value(m->epred)->data;
    if (!(P->fc = malloc((size_t)(m->pred_len * C) * sizeof *P->fc)))
        return tg_cli_fail(CMD, "out of memory");
    for (int64_t k = 0; k < m->pred_len * C; k++) {
        P->fc[k] = (double)p[k] * sc->std[k % C] + sc->mean[k % C];   /* as eval --inverse */
        if (!isfinite(P->fc[k]))
            return tg_cli_fail(CMD, "forecast: step %lld of column '%s' is %g",
                               (long long)(k / C) + 1, d->names[k % C], P->fc[k]);
    }
    /* MS: only the target's forecast was trained */
    P->out_col0 = P->features == TG_TL_MS ? P->td.target : 0;
    P->out_cols = P->features == TG_TL_MS ? 1 : C;
    return 0;
}

/* A header cell, quoted when it has to be. */
static void put_name(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static tg_status write_csv(FILE *f, void *ctx)
{
    const predict_run *P = ctx;
    const tg_dataset *d = P->td.d;
    const int64_t C = P->m.cols;
    if (d->time) {
        put_name(f, d->date_name);
        fputc(',', f);
    }
    for (int64_t c = 0; c < P->out_cols; c++) {
        if (c) fputc(',', f);
        put_name(f, d->names[P->out_col0 + c]);
    }
    fputc('\n', f);
    for (int64_t i = 0; i < P->m.pred_len; i++) {
        char date[32];
        if (d->time)
            fprintf(f, "%s,", tg_date_format(d->time[d->rows - 1] + (i + 1) * P->step,
                                             d->date_style, date, sizeof date));
        for (int64_t c = 0; c < P->out_cols; c++)
            fprintf(f, "%s%.9g", c ? "," : "", P->fc[i * C + P->out_col0 + c]);
        fputc('\n', f);
    }
    return ferror(f) ? tg_set_error(TG_ERR_IO, "write failed") : TG_OK;
}

static int write_forecast(predict_run *P)
{
    if (tg_write_atomic(P->out, write_csv, P)) return tg_cli_fail(CMD, "--out %s", tg_last_error());
    if (strcmp(P->out, "-")) {
        const tg_dataset *d = P->td.d;
        char last[32] = "";
        if (d->time) tg_date_format(d->time[d->rows - 1], d->date_style, last, sizeof last);
        printf("%s: %lld steps of %lld column%s after %s%s -> %s\n", P->model,
               (long long)P->m.pred_len, (long long)P->out_cols, P->out_cols > 1 ? "s" : "",
               d->time ? last : "the last row of ", d->time ? "" : P->data, P->out);
    }
    return 0;
}

static int run(int argc, char **argv)
{
    predict_run P = {0};
    tg_checkpoint_init(&P.ck);
    if (!(P.cfg = tg_config_new())) return tg_cli_fail(CMD, "out of memory");
    int rc = parse_args(&P, argc, argv);
    if (!rc) rc = read_checkpoint(&P);
    if (!rc) rc = load_data(&P);
    if (!rc) rc = load_model(&P);
    if (!rc) rc = check_dates(&P);
    if (!rc) rc = forecast(&P);
    if (!rc) rc = write_forecast(&P);
    free(P.fc);
    tg_tl_model_free(&P.m);
    tg_tl_data_free(&P.td);
    tg_checkpoint_clear(&P.ck);
    tg_config_free(P.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_predict = {
    .name = "predict",
    .summary = "forecast the steps after a CSV file's last rows with a checkpoint of tgraph train",
    .help =
        "usage: tgraph predict --checkpoint FILE --data FILE.csv [--out FILE.csv] [--threads N]\n\n"
        "Rebuilds the model of a checkpoint of `tgraph train` (model, config, scaler,\n"
        "--features and --target from its metadata), feeds it the last seq_len rows\n"
        "of --data and writes the next pred_len steps as CSV: the header of --data,\n"
        "its date column continued at the data's own step (hourly ETT: the next 24\n"
        "hours after the last row), the values in the data's units. --features S and\n"
        "MS runs write the date and the target column only.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\nBad input exits 2 with one line: too few rows, other columns, dates used that\n"
        "do not strictly increase, a gap or an irregular step in them (each named by\n"
        "FILE:LINE), an unreadable checkpoint, --out naming an input.\n\n"
        "examples:\n"
        "  tgraph predict --checkpoint runs/etth1/best.safetensors --data recent.csv\n"
        "  tgraph predict --checkpoint runs/etth1/best.safetensors --data recent.csv \\\n"
        "      --out forecast.csv\n",
    .run = run,
};
