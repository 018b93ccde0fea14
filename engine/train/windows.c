/*
 * windows.c - from a dataset's rows to training windows: splits, the
 * StandardScaler, sliding windows and shuffling (see dataset.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "internal.h"

/* ---- splits ---- */

tg_status tg_split_parse(const char *s, tg_split_spec *out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    memset(out, 0, sizeof *out);
    if (!s) return tg_set_error(TG_ERR_INVALID, "split: NULL");
    const char *p = s;
    bool dot = strpbrk(s, ".eE") != NULL;
    out->ratios = dot;
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        if (dot) {
            double v = strtod(p, &end);
            if (end == p || errno || !(v >= 0 && v <= 1)) goto bad;
            out->r[i] = v;
        } else {
            if (*p == '-' || *p == '+') goto bad;
            long long v = strtoll(p, &end, 10);
            if (end == p || errno || v < 0) goto bad;
            out->n[i] = v;
        }
        p = end;
        if (i < 2) {
            if (*p != ',') goto bad;
            p++;
        }
    }
    if (*p) goto bad;
    if (dot && out->r[0] + out->r[1] + out->r[2] > 1 + 1e-9)
        return tg_set_error(TG_ERR_INVALID, "split '%s': the ratios add up to %g, more than 1", s,
                            out->r[0] + out->r[1] + out->r[2]);
    return TG_OK;
bad:
    return tg_set_error(TG_ERR_INVALID, "split '%s': expected three row counts A,B,C (e.g. "
                        "8640,2880,2880) or three ratios (e.g. 0.7,0.1,0.2)", s);
}

void tg_split_format(const tg_split_spec *s, char *buf, size_t len)
{
    TG__NONNULL_VOID(buf);
    if (len && !s) buf[0] = 0;
    TG__NONNULL_VOID(s);
    if (s->ratios) tg__fmt(buf, len, "%g,%g,%g", s->r[0], s->r[1], s->r[2]);
    else tg__fmt(buf, len, "%lld,%lld,%lld", (long long)s->n[0], (long long)s->n[1],
                 (long long)s->n[2]);
}

tg_status tg_split_resolve(const tg_split_spec *s, int64_t rows, int64_t seq_len, int64_t pred_len,
                           tg_split_rows *out)
{
    TG__NONNULL(s, TG_ERR_INVALID);
    TG__NONNULL(out, TG_ERR_INVALID);
    memset(out, 0, sizeof *out);
    if (seq_len < 1 || pred_len < 1)
        return tg_set_error(TG_ERR_INVALID, "seq_len and pred_len must be >= 1, got %lld and "
                            "%lld", (long long)seq_len, (long long)pred_len);
    int64_t n[3];
    if (s->ratios) {
        n[0] = (int64_t)floor((double)rows * s->r[0]);
        n[2] = (int64_t)floor((double)rows * s->r[2]);
        if (fabs(s->r[0] + s->r[1] + s->r[2] - 1) < 1e-9) n[1] = rows - n[0] - n[2];
        else n[1] = (int64_t)floor((double)rows * s->r[1]);
    } else {
        for (int i = 0; i < 3; i++) n[i] = s->n[i];
        if (n[0] > rows || n[1] > rows - n[0] || n[2] > rows - n[0] - n[1]) {
            char buf[96];
            tg_split_format(s, buf, sizeof buf);
            return tg_set_error(TG_ERR_INVALID, "split %s needs %lld rows, the data has %lld",
                                buf, (long long)n[0] + n[1] + n[2], (long long)rows);
        }
    }
    int64_t need = seq_len + pred_len;
    out->train_begin = 0;
    out->train_end = n[0];
    out->val_begin = n[0] - seq_len;
    out->val_end = n[0] + n[1];
    out->test_begin = n[0] + n[1] - seq_len;
    out->test_end = n[0] + n[1] + n[2];
    const char *names[3] = {"train", "validation", "test"};
    int64_t seg[3] = {n[0], n[1] + seq_len, n[2] + seq_len};
    for (int i = 0; i < 3; i++) {
        /* val/test borrow seq_len rows from before them; those must exist */
        if (seg[i] < need || (i > 0 && (i == 1 ? out->val_begin : out->test_begin) < 0))
            return tg_set_error(TG_ERR_INVALID, "too few rows for one window: the %s split has "
                                "%lld rows; one window needs seq_len + pred_len = %lld rows "
                                "(seq_len %lld, pred_len %lld)%s", names[i], (long long)n[i],
                                (long long)need, (long long)seq_len, (long long)pred_len,
                                i == 0 ? "" : " counting the seq_len rows it borrows from the "
                                              "split before it");
    }
    out->n_train = n[0] - need + 1;
    out->n_val = n[1] + seq_len - need + 1;
    out->n_test = n[2] + seq_len - need + 1;
    return TG_OK;
}

/* ---- scaler ---- */

void tg_scaler_free(tg_scaler *s)
{
    if (!s) return;
    tg__free(s->mean);
    tg__free(s->std);
    tg__free(s->constant);
    tg__free(s);
}

static tg_scaler *scaler_alloc(int64_t cols)
{
    tg_scaler *s = tg__calloc(1, sizeof *s);
    if (s) {
        s->cols = cols;
        s->mean = tg__calloc((size_t)cols, sizeof *s->mean);
        s->std = tg__calloc((size_t)cols, sizeof *s->std);
        s->constant = tg__calloc((size_t)cols, sizeof *s->constant);
        if (!s->mean || !s->std || !s->constant) {
            tg_scaler_free(s);
            s = NULL;
        }
    }
    if (!s) tg_set_error(TG_ERR_NOMEM, "scaler: out of memory");
    return s;
}

const char *tg_dataset_column_name(const tg_dataset *d, int64_t c, char *buf, size_t len)
{
    if (!buf || !len) return "";
    if (!d || c < 0 || c >= d->cols)
        tg__fmt(buf, len, "column %lld", (long long)c + 1);
    else
        tg__fmt(buf, len, "%s: column %lld ('%s')", d->source ? d->source : "data",
                (long long)(c + d->skipped_cols + 1),
                d->names && d->names[c] ? d->names[c] : "?");
    return buf;
}

/* sklearn's test for a column that is constant up to rounding
 * (sklearn.preprocessing._data._is_constant_feature): the two-pass variance
 * of n values has an error bound of n*eps*var + (n*|mean|*eps)^2 (Chan,
 * Golub and LeVeque), so a variance within it is indistinguishable from 0.
 * A column of 0.1 in every row has a computed variance near 1e-34, not 0;
 * without this it would be scaled by 1/1e-17. */
static bool constant_column(double var, double mean, double n)
{
    const double eps = 2.220446049250313080847e-16;   /* DBL_EPSILON */
    double bound = n * eps * var + (n * mean * eps) * (n * mean * eps);
    return var <= bound;
}

tg_scaler *tg_scaler_fit(const tg_dataset *d, int64_t begin, int64_t end)
{
    if (!d || begin < 0 || end > d->rows || end <= begin) {
        tg_set_error(TG_ERR_INVALID, "scaler: %s: bad row range [%lld, %lld) (the data has %lld "
                     "rows)", d && d->source ? d->source : "data", (long long)begin,
                     (long long)end, d ? (long long)d->rows : 0LL);
        return NULL;
    }
    tg_scaler *s = scaler_alloc(d->cols);
    if (!s) return NULL;
    double n = (double)(end - begin);
    for (int64_t c = 0; c < d->cols; c++) {
        /* two passes in double, the second corrected by the residuals' sum
         * (the "corrected two-pass algorithm", exact for a constant column
         * up to the mean's rounding) */
        double sum = 0, sq = 0, se = 0;
        for (int64_t r = begin; r < end; r++) sum += d->data[r * d->cols + c];
        double m = sum / n;
        for (int64_t r = begin; r < end; r++) {
            double e = d->data[r * d->cols + c] - m;
            se += e;
            sq += e * e;
        }
        double var = (sq - se * se / n) / n;
        if (var < 0) var = 0;
        if (!isfinite(m) || !isfinite(var)) {
            char col[160];
            tg_set_error(TG_ERR_NUMERIC, "scaler: %s: the values of rows [%lld, %lld) overflow "
                         "a double (mean %g, variance %g)",
                         tg_dataset_column_name(d, c, col, sizeof col), (long long)begin,
                         (long long)end, m, var);
            tg_scaler_free(s);
            return NULL;
        }
        s->mean[c] = m;
        /* sklearn: a constant feature keeps scale 1 */
        s->constant[c] = constant_column(var, m, n);
        s->std[c] = s->constant[c] ? 1.0 : sqrt(var);
    }
    return s;
}

tg_scaler *tg_scaler_new(int64_t cols, const double *mean, const double *std)
{
    TG__NONNULL(mean, NULL);
    TG__NONNULL(std, NULL);
    if (cols < 1) {
        tg_set_error(TG_ERR_INVALID, "scaler: %lld columns", (long long)cols);
        return NULL;
    }
    for (int64_t c = 0; c < cols; c++)
        if (!isfinite(mean[c]) || !(std[c] > 0) || !isfinite(std[c])) {
            tg_set_error(TG_ERR_INVALID, "scaler: column %lld of %lld has mean %g and std %g "
                         "(std must be finite and > 0)", (long long)c + 1, (long long)cols,
                         mean[c], std[c]);
            return NULL;
        }
    tg_scaler *s = scaler_alloc(cols);
    if (!s) return NULL;
    memcpy(s->mean, mean, (size_t)cols * sizeof *mean);
    memcpy(s->std, std, (size_t)cols * sizeof *std);
    return s;
}

tg_status tg_scaler_transform(const tg_scaler *s, const tg_dataset *d, float *out)
{
    TG__NONNULL(s, TG_ERR_INVALID);
    TG__NONNULL(d, TG_ERR_INVALID);
    TG__NONNULL(out, TG_ERR_INVALID);
    if (s->cols != d->cols)
        return tg_set_error(TG_ERR_SHAPE, "scaler: fitted on %lld columns, %s has %lld",
                            (long long)s->cols, d->source ? d->source : "the data",
                            (long long)d->cols);
    for (int64_t r = 0; r < d->rows; r++)
        for (int64_t c = 0; c < d->cols; c++)
            out[r * d->cols + c] = (float)((d->data[r * d->cols + c] - s->mean[c]) / s->std[c]);
    return TG_OK;
}

/* ---- windows ---- */

tg_windows tg_windows_make(const float *z, int64_t cols, int64_t begin, int64_t end,
                           int64_t seq_len, int64_t pred_len)
{
    TG__NONNULL(z, (tg_windows){0});
    tg_windows w = {z, cols, begin, 0, seq_len, pred_len};
    int64_t n = end - begin - seq_len - pred_len + 1;
    w.count = n > 0 ? n : 0;
    return w;
}

static tg_status check_batch_tensor(const tg_tensor *t, int64_t n, int64_t len, int64_t cols,
                                    const char *what)
{
    if (!tg_dtype_is_float(t->dtype) || t->rank != 3 || t->shape[0] < n || t->shape[0] < 1 ||
        t->shape[1] != len || t->shape[2] != cols) {
        char b[96];
        return tg_set_error(TG_ERR_SHAPE, "windows: %s is %s %s, expected a float [B >= %lld, "
                            "%lld, %lld]", what, tg_dtype_name(t->dtype),
                            tg_shape_str(t->rank, t->shape, b, sizeof b), (long long)n,
                            (long long)len, (long long)cols);
    }
    return TG_OK;
}

static void copy_rows(const float *src, int64_t count, tg_tensor *dst, int64_t at)
{
    if (dst->dtype == TG_F32) {
        memcpy((float *)dst->data + at, src, (size_t)count * sizeof(float));
    } else {
        double *d = (double *)dst->data + at;
        for (int64_t i = 0; i < count; i++) d[i] = src[i];
    }
}

tg_status tg_windows_fill(const tg_windows *w, const int64_t *idx, int64_t n, tg_tensor *x,
                          tg_tensor *y)
{
    TG__NONNULL(w, TG_ERR_INVALID);
    TG__NONNULL(idx, TG_ERR_INVALID);
    tg_status st;
    if ((st = tg_tensor_check(x, "windows: x")) || (y && (st = tg_tensor_check(y, "windows: y"))))
        return st;
    if (n < 1) return tg_set_error(TG_ERR_INVALID, "windows: empty batch");
    if ((st = check_batch_tensor(x, n, w->seq_len, w->cols, "x"))) return st;
    if (y && (st = check_batch_tensor(y, n, w->pred_len, w->cols, "y"))) return st;
    if (y && y->shape[0] != x->shape[0])
        return tg_set_error(TG_ERR_SHAPE, "windows: x and y batch sizes differ");
    int64_t B = x->shape[0], xs = w->seq_len * w->cols, ys = w->pred_len * w->cols;
    for (int64_t b = 0; b < B; b++) {
        int64_t i = idx[b < n ? b : n - 1];
        if (i < 0 || i >= w->count)
            return tg_set_error(TG_ERR_INVALID, "windows: index %lld out of range [0, %lld)",
                                (long long)i, (long long)w->count);
        const float *start = w->z + (w->begin + i) * w->cols;
        copy_rows(start, xs, x, b * xs);
        if (y) copy_rows(start + xs, ys, y, b * ys);
    }
    return TG_OK;
}

void tg_shuffle_i64(int64_t *a, int64_t n, tg_rng *rng)
{
    TG__NONNULL_VOID(rng);
    if (n > 0) TG__NONNULL_VOID(a);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)tg_rng_below(rng, (uint64_t)i + 1);
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
