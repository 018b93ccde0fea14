/*
 * train_loop.h - what `tgraph train` and `tgraph eval` share: the data
 * (a CSV file or the built-in series) split and scaled, a forecasting model
 * from the layer registry with its training graph and a forward-only
 * evaluation graph on the same parameters, evaluation over every window of a
 * split, and the two baselines.
 *
 * A model is any registry layer with one input x [B, seq_len, enc_in] whose
 * output y is [B, pred_len, enc_in]. The loss is MSE on the pred_len window,
 * in scaled units (the ETT protocol).
 */
#ifndef TG_TRAIN_LOOP_H
#define TG_TRAIN_LOOP_H

#include <stdio.h>

#include "checkpoint.h"
#include "outputs.h"
#include "progress.h"
#include "dataset.h"
#include "tgraph.h"

/* The built-in data: "builtin" in --data / checkpoints. */
#define TG_BUILTIN_DATA  "builtin"
#define TG_BUILTIN_ROWS  4000
#define TG_BUILTIN_COLS  7
#define TG_BUILTIN_SEED  0
#define TG_BUILTIN_SPLIT "0.7,0.1,0.2"

/* TSL's --features: M multivariate in and out; S univariate (the target
 * column only); MS multivariate in, univariate out (the model forecasts every
 * channel; the loss and the metrics take the target's). */
typedef enum tg_tl_features { TG_TL_M, TG_TL_S, TG_TL_MS } tg_tl_features;
extern const char *const tg_tl_features_names[3];   /* "M", "S", "MS" */
/* 0, or 2 after printing for `cmd` ("--features wants M, S or MS"). */
int tg_tl_features_parse(const char *cmd, const char *s, tg_tl_features *out);

/* The data side: the series, its split, the scaler and the windows. */
typedef struct tg_tl_data {
    tg_dataset   *d;
    tg_tl_features features;  /* tg_tl_data_layout's */
    int64_t       target;     /* the target's channel in d, after the layout */
    char         *columns;    /* the file's value columns before the layout, '\n'-joined */
    tg_split_spec      split;
    tg_split_rows rows;
    tg_scaler    *scaler;    /* owned */
    float        *z;         /* [rows, cols] scaled */
    tg_windows    train, val, test;
    /* TSL's timeF features of the dates (engine/train/timefeatures.h) at
     * frequency freq, for a model with an x_mark input (tg_tl_data_marks);
     * NULL and 0 without a date column */
    float        *marks;     /* [rows, n_mark] */
    int64_t       n_mark;
    char          freq[16];
} tg_tl_data;

/* Load `spec` (a CSV path, or TG_BUILTIN_DATA) into td->d. Returns 0 or 2
 * after printing one line for `cmd`. */
int tg_tl_data_load(const char *cmd, const char *spec, tg_tl_data *td);
/* With a date column, its time features at freq (TSL's --freq; NULL: h)
 * into td->marks (td->freq records it; none without dates). 0 or 2. */
int tg_tl_data_marks(const char *cmd, tg_tl_data *td, const char *freq);
/* The layout: the target column (NULL: OT when there is one, else the
 * last) and, for S, d cut down to it. Records the file's columns first.
 * 0, or 2 after printing (an unknown --target names the columns). */
int tg_tl_data_layout(const char *cmd, tg_tl_data *td, const char *target, tg_tl_features f);
/* The layout a checkpoint records (features, target; M and NULL when it has
 * none; NULL for M, which does not use it), checked. 0 or 2. */
int tg_tl_layout_of(const char *cmd, const tg_checkpoint *ck, tg_tl_features *f,
                    const char **target);
/* The data's layout and dates into ck's metadata: columns, target,
 * features, and with a date column date.column, date.first, date.last,
 * date.freq (seconds). 0 or 2. */
int tg_tl_put_data_meta(const char *cmd, tg_checkpoint *ck, const tg_tl_data *td);
/* Resolve the split for seq_len/pred_len, take the scaler (fitted on the
 * training rows when `scaler` is NULL, else a copy of it), scale and window. */
int tg_tl_data_prepare(const char *cmd, tg_tl_data *td, const tg_split_spec *split, int64_t seq_len,
                       int64_t pred_len, const tg_scaler *scaler);
void tg_tl_data_free(tg_tl_data *td);

/* The model side. */
typedef struct tg_tl_model {
    const char *name;
    tg_params  *ps;
    tg_layer   *layer;
    int64_t     B, seq_len, pred_len, cols;
    /* a model with a second input x_mark [B, seq_len, n_mark] (iTransformer):
     * the time features of x's rows, from td->marks (not owned); else NULL, 0 */
    const float *marks;
    int64_t     n_mark;
    /* training graph: x, y [, x_mark] -> pred, loss (dropout on) */
    tg_graph   *gt;
    tg_node    *x, *y, *xm, *pred, *loss;
    /* forward-only evaluation graph on the same parameters */
    tg_graph   *ge;
    tg_node    *ex, *exm, *epred;
    /* --features MS: the loss and the metrics take channel `target` only */
    bool        target_only;
    int64_t     target;
    /* optional: tg_tl_evaluate writes a progress line when one is due */
    tg_cli_progress *progress;
} tg_tl_model;

/* Create `name` from cfg with enc_in (or N) = td's column count, n_mark =
 * td's time features and B = batch (set when the layer has those keys and
 * cfg does not; a conflicting value is an error naming cfg_source: "--set",
 * or "the config of checkpoint F"), parameters initialised from rng (NULL:
 * zero, to be loaded), and build both graphs. A forecaster takes x [B,
 * seq_len, enc_in] and optionally x_mark [B, seq_len, n_mark]. Returns 0 or
 * 2 after printing one line. */
int tg_tl_model_build(const char *cmd, tg_tl_model *m, const char *name, tg_config *cfg,
                      const char *cfg_source, const tg_tl_data *td, int64_t batch, tg_rng *rng);
/* Windows idx[0..n) of w (tg_windows_fill) into the training graph's x and y
 * (train) or the evaluation graph's x, and x_mark from the same rows' time
 * features when the model takes them. */
tg_status tg_tl_fill(const tg_tl_model *m, const tg_windows *w, const int64_t *idx, int64_t n,
                     bool train);
void tg_tl_model_free(tg_tl_model *m);
/* --features MS: the training loss on channel `channel` of the forecast
 * only (TSL's f_dim = -1 with the target last), and tg_tl_evaluate's
 * metrics too. 0 or 2. */
int tg_tl_model_target(const char *cmd, tg_tl_model *m, int64_t channel);

/* The layer's full configuration as "KEY=VALUE" lines (every key, defaults
 * included), for checkpoints; parsed back with tg_tl_config_parse. */
int tg_tl_config_format(const tg_layer *l, char *buf, size_t len);
int tg_tl_config_parse(const char *cmd, const char *text, tg_config *cfg);

/* MSE and MAE of the model over every window of w, batch by batch (a short
 * last batch is padded and only its real windows count). pred (may be NULL)
 * receives the forecasts [w->count, pred_len, cols]. 0, or 1 after printing
 * the engine's error (a NaN/Inf forecast names the op that produced it). */
typedef struct tg_tl_metrics {
    double  mse, mae;
    int64_t worst_col;       /* the channel with the largest MSE */
    double  worst_col_mse;
} tg_tl_metrics;
/* `what` starts the error line after "tgraph CMD: " ("evaluation",
 * "validation after epoch 3"). */
int tg_tl_evaluate(const char *cmd, const char *what, tg_tl_model *m, const tg_windows *w,
                   tg_tl_metrics *out, float *pred);

/* A validation or training MSE (scaled units, where predicting the training
 * mean scores about 1) above this says the data or the configuration is
 * broken: the run stops instead of reporting it. */
#define TG_TL_ABSURD_MSE 1e10

/* The baselines over the test windows: repeat the last input step, and
 * predict the training mean (per column: the mean of the scaled training
 * rows, about 0 by construction). 0, or 2 after printing (OOM). */
int tg_tl_baselines(const char *cmd, const tg_tl_data *td, double *repeat_last_mse,
                    double *train_mean_mse);

/* The one line scripts parse. */
void tg_tl_print_result(FILE *f, const tg_tl_metrics *test, double repeat_last, double train_mean);

/* Time-Series-Library's forecasting metrics (utils/metrics.py), in the
 * units of the arrays they are computed on: MAE = mean |p - t|, MSE =
 * mean (p - t)^2, RMSE = sqrt(MSE), MAPE = mean |(p - t) / t|, MSPE =
 * mean ((p - t) / t)^2. */
typedef struct tg_tl_tsl {
    double mae, mse, rmse, mape, mspe;
} tg_tl_tsl;

/* Their names in TSL's order (the order of its metrics.npy). */
extern const char *const tg_tl_tsl_names[5];

/* The metrics of forecasts pred against truth, both [windows, pred_len,
 * cols], over every element (*all) and, when by_step is not NULL, at each
 * horizon step h over the elements of that step (by_step[h], pred_len of
 * them). A truth of 0 divides as numpy does: |(p - t) / t| is +inf (NaN when
 * p is 0 too), so MAPE and MSPE become inf or NaN; *zero_truths (may be NULL)
 * counts such elements. Accumulated in double. 0, or 2 after printing (out of
 * memory). */
int tg_tl_tsl_metrics(const char *cmd, const float *pred, const float *truth, int64_t windows,
                      int64_t pred_len, int64_t cols, tg_tl_tsl *all, tg_tl_tsl *by_step,
                      int64_t *zero_truths);

/* The files of a run in its --out directory (each path allocated to fit). */
typedef struct tg_tl_files {
    char *dir, *ckpt, *best, *csv, *svg, *dot, *dot_svg;
} tg_tl_files;

/* The run files' names in DIR, in the order tg_tl_files holds them after dir. */
extern const char *const tg_tl_run_files[6];

/* 0, or 2 after printing (out of memory, or a directory so long that a run
 * file's temporary name would exceed PATH_MAX: checked before anything is
 * written). Free with tg_tl_files_free. */
int  tg_tl_files_init(const char *cmd, tg_tl_files *f, const char *dir);
void tg_tl_files_free(tg_tl_files *f);
/* None of the run files (all six: written, or removed by --overwrite) is
 * one of the run's n_in inputs (tools/outputs.h: the same file, existing or
 * not yet). 0, or 2 after printing; checked before anything is written. */
int  tg_tl_files_check(const char *cmd, const tg_tl_files *f, const tg_cli_file *in, int n_in);
/* metrics.csv and loss.svg from the run's history, atomically. 0 or 2. */
int  tg_tl_write_curves(const char *cmd, const tg_tl_files *f, const tg_checkpoint *ck);
/* model.dot of the evaluation graph (scopes below depth 3 collapsed) and,
 * when Graphviz's dot is on the PATH, model.svg. Failures only warn. */
void tg_tl_write_diagram(const char *cmd, const tg_tl_files *f, const tg_tl_model *m);
/* Copy src (a run's best.safetensors) to dst, atomically. 0 or 2. */
int  tg_tl_copy_file(const char *cmd, const char *src, const char *dst);
/* "DIR/NAME" in a new string (NULL: out of memory); DIR "" gives "NAME". */
char *tg_tl_path_join(const char *dir, const char *name);
/* The directory part of a file path ("." when it has none), a new string. */
char *tg_tl_dirname(const char *path);

/* mkdir -p. 0, or 2 after printing. */
int tg_tl_mkdirs(const char *cmd, const char *dir);

/* Seconds on a monotonic clock. */
double tg_tl_now(void);

#endif
