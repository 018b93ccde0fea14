/*
 * dataset.h - multivariate time series for training forecasters: the ETT CSV
 * layout, a built-in synthetic series, train/val/test splits, a
 * StandardScaler, sliding windows and shuffled mini-batches.
 *
 * The pipeline, as the ETT benchmark protocol (Informer, Crossformer,
 * Time-Series-Library) defines it:
 *
 *     tg_dataset *d;   tg_dataset_load_csv("ETTh1.csv", &d);      // rows x cols, double
 *     tg_split_spec sp;     tg_split_parse("8640,2880,2880", &sp);
 *     tg_split_rows r; tg_split_resolve(&sp, d->rows, seq_len, pred_len, &r);
 *     tg_scaler *sc = tg_scaler_fit(d, r.train_begin, r.train_end);   // train rows only
 *     float *z = ...;  tg_scaler_transform(sc, d, z);                 // the scaled series
 *     tg_windows w = tg_windows_make(z, d->cols, r.test_begin, r.test_end, seq_len, pred_len);
 *     tg_windows_fill(&w, idx, n, x_tensor, y_tensor);                // one batch
 *
 * A window i of a segment [begin, end) takes x = rows [begin+i, begin+i+seq_len)
 * and y = the pred_len rows after them; a segment of n rows holds
 * n - seq_len - pred_len + 1 windows. Validation and test segments start
 * seq_len rows before their first target row, so the first target follows
 * straight on from the previous split.
 *
 * Dates: a first column of dates (ETT's `date`) is read into d->time, with
 * the series' frequency (the most common step between rows) in d->freq;
 * they are not model inputs (no time features). Not here: missing values
 * (an empty cell is an error), file formats other than CSV.
 */
#ifndef TG_DATASET_H
#define TG_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "rng.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a CSV file writes its dates (tg_date_parse, tg_date_format). */
typedef enum tg_date_style {
    TG_DATE_YMD,        /* 2016-07-01 */
    TG_DATE_YMD_HM,     /* 2016-07-01 00:00 */
    TG_DATE_YMD_HMS,    /* 2016-07-01 00:00:00 (ETT) */
    TG_DATE_ISO_HM,     /* 2016-07-01T00:00 */
    TG_DATE_ISO_HMS     /* 2016-07-01T00:00:00 (ISO 8601) */
} tg_date_style;

/* A series: rows x cols values, row-major (row = time step). */
typedef struct tg_dataset {
    int64_t rows, cols;
    double *data;       /* [rows, cols], owned */
    char  **names;      /* cols column names, owned */
    char   *source;     /* file path or "synthetic(...)", owned */
    int64_t skipped_cols; /* CSV columns before value column 0 that are not kept: 1 when a date
                             column was skipped (more after tg_dataset_keep_column) */
    /* The date column, when the CSV's first column holds dates (else NULL, 0): */
    char          *date_name;   /* its header ("date"), owned */
    int64_t       *time;        /* [rows] seconds since 1970-01-01 00:00:00, the dates read
                                   as UTC (no time zones); owned */
    int64_t        freq;        /* the most common positive step between consecutive rows,
                                   in seconds (3600 for ETTh1, 900 for ETTm1); 0 with one
                                   row or none later than the one before */
    tg_date_style  date_style;  /* how the file writes them */
    int64_t       *line;        /* [rows] the file line of each dated row (for messages), owned */
} tg_dataset;

/* Parse a date: YYYY-MM-DD, YYYY-MM-DD HH:MM, YYYY-MM-DD HH:MM:SS,
 * YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SS (years 1..9999, a real calendar
 * day, 00:00:00..23:59:59). *t: seconds since 1970-01-01 00:00:00 (read as
 * UTC); *style (may be NULL): the form it had. TG_ERR_FORMAT naming the text
 * otherwise. */
tg_status tg_date_parse(const char *s, int64_t *t, tg_date_style *style);
/* Write t in `style` into buf and return buf (a date-only style gets the
 * time of day too when t is not midnight); NULL when buf is NULL. */
const char *tg_date_format(int64_t t, tg_date_style style, char *buf, size_t len);
/* A step in seconds as a short name: "1h", "15min", "1d", "30s", "90s"; into
 * buf, which it returns (NULL when buf is NULL). */
const char *tg_date_freq_name(int64_t seconds, char *buf, size_t len);

/* How messages name column c (0-based) of d: "FILE: column N ('name')",
 * N the 1-based column of the CSV file (a skipped date column counts), as
 * the loader's own messages do. Writes into buf and returns it. */
const char *tg_dataset_column_name(const tg_dataset *d, int64_t c, char *buf, size_t len);

/* Read a CSV file in the ETT layout: a header row naming the columns, then
 * one row per time step. When the first cell of the first data row is not a
 * number, the first column is not a value column: when that cell starts like
 * a date (4 digits and '-'), is digits and date separators (07/01/2016 00:00,
 * 2016/07/01, 1.7.2016) or its header is date, time, datetime or timestamp
 * (any case), the column is the date column and every row's
 * cell must be a date in the same form as the first (tg_date_parse): "t.csv:5:
 * column 1 ('date'): '2016-07-01 25:00:00' is not a date ..."; d->time and
 * d->freq hold them (dates out of order are read; predict refuses them). Any other first column
 * (names, ids) is skipped. Every other cell must be a finite number. Blank lines are
 * ignored; lines may end in \n, \r\n or a lone \r (old Mac files); a cell
 * may be "double quoted". A number is decimal, as pandas reads ETT files:
 * [+-]? (digits [. digits] | . digits) ([eE] [+-]? digits)?; hexadecimal
 * (0x10, which C's strtod takes) and trailing text (1e5x) are not numbers.
 * nan, inf and infinity (any case, a sign allowed) are read as pandas reads
 * them but refused as "not a finite number": the scaler and the loss cannot
 * use them. The file is read with a limit of 2 GiB (TG_MAX_INPUT_BYTES
 * overrides it, tensor_io.h); a NUL byte stops the read at the block it is
 * in (binary data, /dev/zero), naming its line.
 * Errors (TG_ERR_FORMAT, message "FILE:LINE: ..." naming the line and for a
 * cell its 1-based column number and header name: "t.csv:3: column 2 ('y'): ..."): an empty file, a header without
 * data rows, a row with more or fewer cells than the header, an empty or
 * non-numeric or non-finite cell. *out is a new dataset (tg_dataset_free). */
tg_status tg_dataset_load_csv(const char *path, tg_dataset **out);
/* The same from memory; `what` names the source in messages. */
tg_status tg_dataset_parse_csv(const char *text, size_t len, const char *what, tg_dataset **out);

/* The built-in series: `cols` (1..64) coupled channels over `rows` hourly
 * steps, deterministic for a seed (same bits on every machine that rounds
 * libm's sin/cos/exp the same). Each channel mixes a daily and a weekly
 * cycle of its own phase and amplitude, a slow trend and AR(1) noise; the
 * channels share a common load factor and the last one ("OT", as in ETT)
 * follows a lagged, smoothed mix of the others. Column names HUFL, HULL, ...
 * like ETT where there are that many, else c0, c1, ... */
tg_status tg_dataset_synthetic(int64_t rows, int64_t cols, uint64_t seed, tg_dataset **out);

void tg_dataset_free(tg_dataset *d);

/* Keep only value column `col` of d (univariate forecasting: TSL's
 * --features S); the names, the data and column numbering in messages
 * follow. TG_ERR_INVALID for a column out of range. */
tg_status tg_dataset_keep_column(tg_dataset *d, int64_t col);
/* The value column named `name`, or -1. */
int64_t tg_dataset_find_column(const tg_dataset *d, const char *name);

/* ---- splits ---- */

/* How to split the rows: counts (8640,2880,2880: the first A rows train, the
 * next B validate, the next C test; rows after them are unused) or ratios
 * (0.7,0.1,0.2: train = floor(rows*a), test = floor(rows*c), val = the rest,
 * as Time-Series-Library's Dataset_Custom does; the ratios must sum to <= 1). */
typedef struct tg_split_spec {
    bool    ratios;
    int64_t n[3];      /* counts */
    double  r[3];      /* ratios */
} tg_split_spec;

/* Parse "A,B,C": three non-negative integers, or three numbers in [0, 1]
 * containing a '.' (ratios). Errors name the text. */
tg_status tg_split_parse(const char *s, tg_split_spec *out);
/* Write the split back as text ("8640,2880,2880" or "0.7,0.1,0.2"). */
void      tg_split_format(const tg_split_spec *s, char *buf, size_t len);

/* Row ranges [begin, end) of the three segments, with val and test starting
 * seq_len rows before their first target, and their window counts. */
typedef struct tg_split_rows {
    int64_t train_begin, train_end, val_begin, val_end, test_begin, test_end;
    int64_t n_train, n_val, n_test;    /* windows */
} tg_split_rows;

/* Resolve a split over `rows` rows for windows of seq_len + pred_len.
 * Errors: counts that add up to more rows than there are; a segment too short
 * for a single window ("the test split has 50 rows; one window needs
 * seq_len + pred_len = 120 rows (seq_len 96, pred_len 24)"); seq_len or
 * pred_len < 1. */
tg_status tg_split_resolve(const tg_split_spec *s, int64_t rows, int64_t seq_len, int64_t pred_len,
                           tg_split_rows *out);

/* ---- StandardScaler (sklearn): z = (x - mean) / std, std the population
 * std (ddof 0) of the fitted rows; a constant column gets std 1. ----
 * "Constant" is sklearn's rule (_is_constant_feature): the variance is
 * within the rounding error bound of its two-pass computation,
 * var <= n*eps*var + (n*mean*eps)^2 (n rows, eps = DBL_EPSILON), so a
 * column of 0.1 in every row, whose computed std is ~1e-17 rather than 0,
 * is constant and is not blown up by 1e17. */
typedef struct tg_scaler {
    int64_t        cols;
    double        *mean, *std;   /* [cols], owned */
    unsigned char *constant;     /* [cols], owned: 1 where fit found the column constant
                                    (std set to 1); all 0 from tg_scaler_new */
} tg_scaler;

/* Fit on rows [begin, end) of d (two passes in double, the second corrected
 * by the residuals' sum). NULL on a bad range, values whose mean or variance
 * overflow a double (TG_ERR_NUMERIC, naming the column as
 * tg_dataset_column_name does) or OOM (tg_last_error()). Free with
 * tg_scaler_free. To name the constant columns of a fit:
 *     for (c = 0; c < sc->cols; c++) if (sc->constant[c])
 *         tg_dataset_column_name(d, c, buf, sizeof buf);                       */
tg_scaler *tg_scaler_fit(const tg_dataset *d, int64_t begin, int64_t end);
/* A scaler from given statistics (checkpoints); std must be > 0. */
tg_scaler *tg_scaler_new(int64_t cols, const double *mean, const double *std);
void       tg_scaler_free(tg_scaler *s);
/* Scale every row of d into out ([rows, cols] floats); cols must match. */
tg_status  tg_scaler_transform(const tg_scaler *s, const tg_dataset *d, float *out);

/* ---- sliding windows over a scaled series ---- */
typedef struct tg_windows {
    const float *z;                 /* [rows, cols] scaled series, not owned */
    int64_t      cols, begin, count, seq_len, pred_len;
} tg_windows;

/* The windows of segment [begin, end) of z (count 0 when too short). */
tg_windows tg_windows_make(const float *z, int64_t cols, int64_t begin, int64_t end,
                           int64_t seq_len, int64_t pred_len);

/* Copy windows idx[0..n) into x [B, seq_len, cols] and y [B, pred_len, cols]
 * (F32 or F64 tensors, B >= n; y may be NULL). Rows n..B-1 of a short batch
 * repeat the last window, so a fixed-size graph can run it; callers count
 * only the first n. Errors: shapes that do not match, an index out of range. */
tg_status tg_windows_fill(const tg_windows *w, const int64_t *idx, int64_t n, tg_tensor *x,
                          tg_tensor *y);

/* Shuffle a[0..n) in place (Fisher-Yates, drawing from rng). */
void tg_shuffle_i64(int64_t *a, int64_t n, tg_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
