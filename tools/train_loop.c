/*
 * train_loop.c - data, model, evaluation and baselines shared by `tgraph
 * train` and `tgraph eval` (see train_loop.h).
 *
 * Not here: the epoch loop and when to save what (cmd_train.c).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "args.h"
#include "layer_cli.h"
#include "train_loop.h"

/* ---- data ---- */

int tg_tl_data_marks(const char *cmd, tg_tl_data *td, const char *freq)
{
    const tg_dataset *d = td->d;
    if (!freq) freq = "h";   /* TSL's run.py default */
    snprintf(td->freq, sizeof td->freq, "%s", freq);
    if (strlen(freq) >= sizeof td->freq)
        return tg_cli_fail(cmd, "--freq '%.40s' is too long", freq);
    free(td->marks);
    td->marks = NULL;
    td->n_mark = 0;
    if (!d->time) return 0;
    tg_time_feature f[TG_TIME_FEATURES_MAX];
    int n = 0;
    if (tg_time_features_for(freq, f, &n)) return tg_cli_fail(cmd, "--freq: %s", tg_last_error());
    td->n_mark = n;
    if (n && !(td->marks = malloc((size_t)d->rows * (size_t)n * sizeof *td->marks)))
        return tg_cli_fail(cmd, "out of memory");
    if (n && tg_dataset_time_features(d, freq, 0, d->rows, td->marks, (size_t)(d->rows * n)))
        return tg_cli_fail(cmd, "--data %s", tg_last_error());
    return 0;
}

int tg_tl_data_load(const char *cmd, const char *spec, tg_tl_data *td)
{
    memset(td, 0, sizeof *td);
    tg_status st = !strcmp(spec, TG_BUILTIN_DATA)
                       ? tg_dataset_synthetic(TG_BUILTIN_ROWS, TG_BUILTIN_COLS, TG_BUILTIN_SEED,
                                              &td->d)
                       : tg_dataset_load_csv(spec, &td->d);
    if (st) return tg_cli_fail(cmd, "--data %s", tg_last_error());
    return 0;
}

int tg_tl_data_prepare(const char *cmd, tg_tl_data *td, const tg_split_spec *split, int64_t seq_len,
                       int64_t pred_len, const tg_scaler *scaler)
{
    tg_dataset *d = td->d;
    td->split = *split;
    if (tg_split_resolve(split, d->rows, seq_len, pred_len, &td->rows)) {
        char buf[64];
        tg_split_format(split, buf, sizeof buf);
        return tg_cli_fail(cmd, "%s (%lld rows, --split %s)", tg_last_error(),
                           (long long)d->rows, buf);
    }
    td->scaler = scaler ? tg_scaler_new(scaler->cols, scaler->mean, scaler->std)
                        : tg_scaler_fit(d, td->rows.train_begin, td->rows.train_end);
    if (!td->scaler) return tg_cli_fail(cmd, "%s", tg_last_error());
    if (!(td->z = malloc((size_t)d->rows * (size_t)d->cols * sizeof *td->z)))
        return tg_cli_fail(cmd, "out of memory");
    if (tg_scaler_transform(td->scaler, d, td->z))
        return tg_cli_fail(cmd, "%s", tg_last_error());
    const tg_split_rows *r = &td->rows;
    td->train = tg_windows_make(td->z, d->cols, r->train_begin, r->train_end, seq_len, pred_len);
    td->val = tg_windows_make(td->z, d->cols, r->val_begin, r->val_end, seq_len, pred_len);
    td->test = tg_windows_make(td->z, d->cols, r->test_begin, r->test_end, seq_len, pred_len);
    return 0;
}

const char *const tg_tl_features_names[3] = {"M", "S", "MS"};

int tg_tl_features_parse(const char *cmd, const char *s, tg_tl_features *out)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, tg_tl_features_names[i])) {
            *out = (tg_tl_features)i;
            return 0;
        }
    return tg_cli_fail(cmd, "--features wants M (multivariate), S (univariate: the target "
                       "only) or MS (multivariate in, the target out), got '%s'", s);
}

int tg_tl_data_layout(const char *cmd, tg_tl_data *td, const char *target, tg_tl_features f)
{
    tg_dataset *d = td->d;
    size_t len = 1;
    for (int64_t c = 0; c < d->cols; c++) len += strlen(d->names[c]) + 1;
    if (!(td->columns = malloc(len))) return tg_cli_fail(cmd, "out of memory");
    td->columns[0] = '\0';
    for (int64_t c = 0; c < d->cols; c++) {
        if (c) strcat(td->columns, "\n");
        strcat(td->columns, d->names[c]);
    }
    int64_t t = tg_dataset_find_column(d, target ? target : "OT");
    if (t < 0 && !target) t = d->cols - 1;
    if (t < 0) {
        for (char *p = td->columns; *p; p++)
            if (*p == '\n') *p = ',';
        tg_cli_fail(cmd, "--target %s: %s has no such column (its columns: %s)", target,
                    d->source, td->columns);
        free(td->columns);
        td->columns = NULL;
        return 2;
    }
    td->features = f;
    td->target = t;
    if (f == TG_TL_S) {
        if (tg_dataset_keep_column(d, t)) return tg_cli_fail(cmd, "%s", tg_last_error());
        td->target = 0;
    }
    return 0;
}

int tg_tl_layout_of(const char *cmd, const tg_checkpoint *ck, tg_tl_features *f,
                    const char **target)
{
    const char *fs = tg_checkpoint_meta(ck, "features");
    *target = tg_checkpoint_meta(ck, "target");
    *f = TG_TL_M;
    if (fs && tg_tl_features_parse(cmd, fs, f)) return 2;
    if (*f == TG_TL_M) *target = NULL;   /* M does not use it: other data need not have it */
    return 0;
}

int tg_tl_put_data_meta(const char *cmd, tg_checkpoint *ck, const tg_tl_data *td)
{
    const tg_dataset *d = td->d;
    tg_status st = tg_checkpoint_set_meta(ck, "columns", td->columns ? td->columns : "");
    if (!st) st = tg_checkpoint_set_meta(ck, "target", d->names[td->target]);
    if (!st) st = tg_checkpoint_set_meta(ck, "features", tg_tl_features_names[td->features]);
    if (!st && d->time) {
        char first[32], last[32], freq[32];
        tg_date_format(d->time[0], d->date_style, first, sizeof first);
        tg_date_format(d->time[d->rows - 1], d->date_style, last, sizeof last);
        snprintf(freq, sizeof freq, "%lld", (long long)d->freq);
        st = tg_checkpoint_set_meta(ck, "date.column", d->date_name);
        if (!st) st = tg_checkpoint_set_meta(ck, "date.first", first);
        if (!st) st = tg_checkpoint_set_meta(ck, "date.last", last);
        if (!st) st = tg_checkpoint_set_meta(ck, "date.freq", freq);
    }
    if (st) return tg_cli_fail(cmd, "%s", tg_last_error());
    return 0;
}

void tg_tl_data_free(tg_tl_data *td)
{
    free(td->columns);
    tg_dataset_free(td->d);
    tg_scaler_free(td->scaler);
    free(td->z);
    free(td->marks);
    memset(td, 0, sizeof *td);
}

/* ---- model ---- */

static const tg_layer_key *find_key(const tg_layer_class *cls, const char *name)
{
    for (const tg_layer_key *k = cls->keys; k->name; k++)
        if (!strcmp(k->name, name)) return k;
    return NULL;
}

/* Put KEY=v into cfg unless it is there; a different given value is an error. */
static int force_key(const char *cmd, const tg_layer_class *cls, tg_config *cfg, const char *src,
                     const char *key, int64_t v, const char *why)
{
    if (!find_key(cls, key)) return 0;
    const tg_value *given = tg_config_get(cfg, key);
    if (given) {
        if (given->kind == TG_VALUE_INT && given->i == v) return 0;
        char buf[64];
        tg_value_format(given, buf, sizeof buf);
        if (!strcmp(src, "--set"))
            return tg_cli_fail(cmd, "--set %s=%s conflicts with %s (%lld)", key, buf, why,
                               (long long)v);
        return tg_cli_fail(cmd, "%s has %s=%s, which conflicts with %s (%lld)", src, key, buf,
                           why, (long long)v);
    }
    char item[96];
    snprintf(item, sizeof item, "%s=%lld", key, (long long)v);
    if (tg_config_set(cfg, item)) return tg_cli_fail(cmd, "%s", tg_last_error());
    return 0;
}

/* The layer's inputs: x [B, seq_len, cols], and x_mark [B, seq_len, n_mark] if a second. */
static int check_inputs(const char *cmd, tg_tl_model *m, int64_t batch, int64_t cols)
{
    char s1[96];
    int n = tg_layer_input_count(m->layer);
    const tg_layer_input *in = tg_layer_input_at(m->layer, 0);
    const tg_layer_input *mk = n == 2 ? tg_layer_input_at(m->layer, 1) : NULL;
    if (n < 1 || n > 2 || (mk && strcmp(mk->name, "x_mark")))
        return tg_cli_fail(cmd, "--model %s takes %d inputs; a forecaster takes x [B, seq_len, "
                           "enc_in] and optionally x_mark [B, seq_len, n_mark]", m->name, n);
    if (in->rank != 3 || in->shape[0] != batch || in->shape[2] != cols)
        return tg_cli_fail(cmd, "--model %s: its input %s is %s (%s); a forecaster takes x "
                           "[B=%lld, seq_len, enc_in=%lld]", m->name, in->name,
                           tg_shape_str(in->rank, in->shape, s1, sizeof s1), in->dims,
                           (long long)batch, (long long)cols);
    if (mk && (mk->rank != 3 || mk->shape[0] != batch || mk->shape[1] != in->shape[1] ||
               mk->shape[2] != m->n_mark || !m->marks))
        return tg_cli_fail(cmd, "--model %s: its input x_mark is %s; the data's time features "
                           "are [B=%lld, seq_len=%lld, n_mark=%lld]", m->name,
                           tg_shape_str(mk->rank, mk->shape, s1, sizeof s1), (long long)batch,
                           (long long)in->shape[1], (long long)m->n_mark);
    if (!mk) m->n_mark = 0, m->marks = NULL;
    m->B = batch;
    m->seq_len = in->shape[1];
    m->cols = cols;
    return 0;
}

/* One graph's inputs: x, and x_mark when the model takes it. */
static tg_status build_on(tg_tl_model *m, tg_graph *g, tg_node **x, tg_node **xm,
                          tg_layer_outputs *out)
{
    const tg_layer_input *in = tg_layer_input_at(m->layer, 0);
    *x = tg_input(g, "x", TG_F32, 3, in->shape);
    if (m->n_mark)
        *xm = tg_input(g, "x_mark", TG_F32, 3, tg_layer_input_at(m->layer, 1)->shape);
    return tg_layer_build(m->layer, g, (tg_node *const[]){*x, m->n_mark ? *xm : NULL}, out);
}

int tg_tl_model_build(const char *cmd, tg_tl_model *m, const char *name, tg_config *cfg,
                      const char *cfg_source, const tg_tl_data *td, int64_t batch, tg_rng *rng)
{
    char s1[96], s2[96];
    const int64_t cols = td->d->cols;
    memset(m, 0, sizeof *m);
    m->name = name;
    m->marks = td->marks;
    m->n_mark = td->n_mark;
    const tg_layer_class *cls = tg_layer_class_find(name);
    if (!cls) {
        tg_layer_free(tg_layer_new(name, NULL, NULL, "", NULL));   /* for the message */
        return tg_cli_fail(cmd, "--model %s (see tgraph layers)", tg_last_error());
    }
    if (force_key(cmd, cls, cfg, cfg_source, "enc_in", cols, "the data's column count") ||
        force_key(cmd, cls, cfg, cfg_source, "N", cols, "the data's column count") ||
        force_key(cmd, cls, cfg, cfg_source, "n_mark", td->n_mark,
                  "the data's time features (timeF of its dates; none without a date column)") ||
        force_key(cmd, cls, cfg, cfg_source, "B", batch, "--batch-size"))
        return 2;
    if (tg_cli_check_memory(cmd, name, cfg, TG_F32)) return 2;
    if (!(m->ps = tg_params_new(TG_F32))) return tg_cli_fail(cmd, "%s", tg_last_error());
    if (!(m->layer = tg_layer_new(name, cfg, m->ps, "", rng)))
        return tg_cli_fail(cmd, "%s", tg_last_error());
    if (check_inputs(cmd, m, batch, cols)) return 2;
    const tg_layer_input *in = tg_layer_input_at(m->layer, 0);

    /* training graph */
    if (!(m->gt = tg_graph_new(TG_F32))) return tg_cli_fail(cmd, "%s", tg_last_error());
    tg_graph_set_training(m->gt, true);
    tg_graph_set_share_values(m->gt, true);   /* one backward per forward */
    tg_layer_outputs out;
    if (build_on(m, m->gt, &m->x, &m->xm, &out))
        return tg_cli_fail(cmd, "--model %s: %s", name, tg_last_error());
    m->pred = out.y;
    const tg_tensor *yv = tg_node_value(m->pred);
    if (yv->rank != 3 || yv->shape[0] != batch || yv->shape[2] != cols)
        return tg_cli_fail(cmd, "--model %s: its output is %s; a forecaster returns [B=%lld, "
                           "pred_len, enc_in=%lld] (input %s)", name,
                           tg_shape_str(yv->rank, yv->shape, s1, sizeof s1), (long long)batch,
                           (long long)cols, tg_shape_str(in->rank, in->shape, s2, sizeof s2));
    m->pred_len = yv->shape[1];
    m->y = tg_input(m->gt, "y", TG_F32, 3, yv->shape);
    m->loss = tg_mse_loss(m->gt, m->pred, m->y, TG_REDUCTION_MEAN);
    tg_node_keep(m->pred);
    if (tg_graph_error(m->gt)) return tg_cli_fail(cmd, "%s", tg_graph_error(m->gt));

    /* evaluation graph: forward only, dropout off, same parameters */
    if (!(m->ge = tg_graph_new(TG_F32))) return tg_cli_fail(cmd, "%s", tg_last_error());
    tg_graph_set_grad_enabled(m->ge, false);
    if (build_on(m, m->ge, &m->ex, &m->exm, &out))
        return tg_cli_fail(cmd, "--model %s: %s", name, tg_last_error());
    m->epred = out.y;
    return 0;
}

tg_status tg_tl_fill(const tg_tl_model *m, const tg_windows *w, const int64_t *idx, int64_t n,
                     bool train)
{
    tg_status st = tg_windows_fill(w, idx, n, (tg_tensor *)tg_node_value(train ? m->x : m->ex),
                                   train ? (tg_tensor *)tg_node_value(m->y) : NULL);
    if (st || !m->n_mark) return st;
    /* the same windows over the time features: rows [begin + i, begin + i + seq_len) */
    tg_windows mw = tg_windows_make(m->marks, m->n_mark, w->begin,
                                    w->begin + w->count + w->seq_len + w->pred_len - 1,
                                    w->seq_len, w->pred_len);
    return tg_windows_fill(&mw, idx, n, (tg_tensor *)tg_node_value(train ? m->xm : m->exm), NULL);
}

int tg_tl_model_target(const char *cmd, tg_tl_model *m, int64_t channel)
{
    m->target_only = true;
    m->target = channel;
    tg_node *p = tg_narrow(m->gt, m->pred, 2, channel, 1);
    tg_node *y = tg_narrow(m->gt, m->y, 2, channel, 1);
    m->loss = tg_mse_loss(m->gt, p, y, TG_REDUCTION_MEAN);
    if (tg_graph_error(m->gt)) return tg_cli_fail(cmd, "%s", tg_graph_error(m->gt));
    return 0;
}

void tg_tl_model_free(tg_tl_model *m)
{
    tg_graph_free(m->gt);
    tg_graph_free(m->ge);
    tg_layer_free(m->layer);
    tg_params_free(m->ps);
    memset(m, 0, sizeof *m);
}

/* Shortest "%.*g" that reads back as v. */
static void fmt_double(double v, char *buf, size_t len)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v || isnan(v)) return;
    }
}

int tg_tl_config_format(const tg_layer *l, char *buf, size_t len)
{
    const tg_layer_class *cls = tg_layer_class_find(tg_layer_name(l));
    const char *cfg = tg_layer_config(l);
    size_t at = 0;
    buf[0] = '\0';
    for (const tg_layer_key *k = cls->keys; k->name; k++) {
        char v[256];
        const void *p = cfg + k->offset;
        switch ((int)k->type) {
        case TG_KEY_STRING: snprintf(v, sizeof v, "%s", ((const tg_key_str *)p)->s); break;
        case TG_KEY_INT: {
            int64_t x;
            memcpy(&x, p, sizeof x);
            if (k->nullable && x == 0) snprintf(v, sizeof v, "null");
            else snprintf(v, sizeof v, "%lld", (long long)x);
            break;
        }
        case TG_KEY_FLOAT: {
            double x;
            memcpy(&x, p, sizeof x);
            if (k->nullable && x == 0) snprintf(v, sizeof v, "null");
            else fmt_double(x, v, sizeof v);
            break;
        }
        case TG_KEY_BOOL: {
            bool x;
            memcpy(&x, p, sizeof x);
            snprintf(v, sizeof v, "%s", x ? "true" : "false");
            break;
        }
        case TG_KEY_INT_LIST: {
            tg_int_list x;
            memcpy(&x, p, sizeof x);
            if (k->nullable && x.n == 0) {
                snprintf(v, sizeof v, "null");
                break;
            }
            size_t w = (size_t)snprintf(v, sizeof v, "[");
            for (int i = 0; i < x.n && w < sizeof v; i++)
                w += (size_t)snprintf(v + w, sizeof v - w, "%s%lld", i ? ", " : "",
                                      (long long)x.v[i]);
            if (w < sizeof v) snprintf(v + w, sizeof v - w, "]");
            break;
        }
        }
        int n = snprintf(buf + at, len - at, "%s%s=%s", at ? "\n" : "", k->name, v);
        if (n < 0 || (size_t)n >= len - at) return -1;
        at += (size_t)n;
    }
    return 0;
}

int tg_tl_config_parse(const char *cmd, const char *text, tg_config *cfg)
{
    while (*text) {
        size_t n = strcspn(text, "\n");
        char item[1024];
        if (n >= sizeof item) return tg_cli_fail(cmd, "checkpoint: config entry too long");
        memcpy(item, text, n);
        item[n] = '\0';
        if (n && tg_config_set(cfg, item))
            return tg_cli_fail(cmd, "checkpoint config: %s", tg_last_error());
        text += n + (text[n] == '\n');
    }
    return 0;
}

/* ---- evaluation ---- */

int tg_tl_evaluate(const char *cmd, const char *what, tg_tl_model *m, const tg_windows *w,
                   tg_tl_metrics *out, float *pred)
{
    int64_t idx[4096];
    const int64_t B = m->B, per = m->pred_len * m->cols;
    double se = 0, ae = 0;
    out->mse = out->mae = out->worst_col_mse = NAN;
    out->worst_col = 0;
    if (B > (int64_t)(sizeof idx / sizeof *idx))
        return tg_cli_fail(cmd, "batch size %lld too large for evaluation", (long long)B);
    double *col_se = calloc((size_t)m->cols, sizeof *col_se);   /* [cols] */
    if (!col_se) return tg_cli_fail(cmd, "out of memory");
    for (int64_t start = 0; start < w->count; start += B) {
        int64_t n = w->count - start < B ? w->count - start : B;
        for (int64_t i = 0; i < n; i++) idx[i] = start + i;
        if (tg_tl_fill(m, w, idx, n, false) ||
            tg_graph_forward(m->ge)) {
            fprintf(stderr, "tgraph %s: %s: %s\n", cmd, what, tg_last_error());
            free(col_se);
            return 1;
        }
        const float *p = tg_node_value(m->epred)->data;
        double se0 = se;
        for (int64_t i = 0; i < n; i++) {
            /* the target rows follow the input rows straight on */
            const float *t = w->z + (w->begin + start + i + w->seq_len) * w->cols;
            for (int64_t k = 0; k < per; k++) {
                if (m->target_only && k % m->cols != m->target) continue;   /* MS */
                double e = (double)p[i * per + k] - (double)t[k];
                se += e * e;
                ae += fabs(e);
                col_se[k % m->cols] += e * e;
            }
        }
        if (!isfinite(se)) {
            tg_trainer_diagnose(m->ge, se - se0);
            fprintf(stderr, "tgraph %s: %s: %s\n", cmd, what, tg_last_error());
            free(col_se);
            return 1;
        }
        if (pred) memcpy(pred + start * per, p, (size_t)(n * per) * sizeof *p);
        if (m->progress && tg_cli_progress_due(m->progress)) {
            fprintf(stderr, "progress: %s %lld/%lld windows, %.1fs\n", what,
                    (long long)(start + n), (long long)w->count,
                    tg_cli_progress_elapsed(m->progress));
            fflush(stderr);
        }
    }
    double cnt = (double)w->count * (double)(m->target_only ? m->pred_len : per);
    out->mse = se / cnt;
    out->mae = ae / cnt;
    for (int64_t c = 0; c < m->cols; c++)
        if (c == 0 || col_se[c] > col_se[out->worst_col]) out->worst_col = c;
    out->worst_col_mse = col_se[out->worst_col] / (double)(w->count * m->pred_len);
    free(col_se);
    return 0;
}

int tg_tl_baselines(const char *cmd, const tg_tl_data *td, double *repeat_last_mse,
                    double *train_mean_mse)
{
    const tg_windows *w = &td->test;
    const int64_t C = w->cols, b = td->rows.train_begin, e = td->rows.train_end;
    double *mean = calloc((size_t)C, sizeof *mean), s_last = 0, s_mean = 0;
    if (!mean) return tg_cli_fail(cmd, "out of memory");
    for (int64_t c = 0; c < C; c++) {
        for (int64_t r = b; r < e; r++) mean[c] += td->z[r * C + c];
        mean[c] /= (double)(e - b);
    }
    for (int64_t i = 0; i < w->count; i++) {
        const float *last = w->z + (w->begin + i + w->seq_len - 1) * C;
        const float *t = last + C;   /* [pred_len, C] targets */
        for (int64_t k = 0; k < w->pred_len * C; k++) {
            if (td->features == TG_TL_MS && k % C != td->target) continue;
            double a = (double)t[k] - last[k % C], d = (double)t[k] - mean[k % C];
            s_last += a * a;
            s_mean += d * d;
        }
    }
    double cnt = (double)w->count * (double)(w->pred_len * (td->features == TG_TL_MS ? 1 : C));
    *repeat_last_mse = s_last / cnt;
    *train_mean_mse = s_mean / cnt;
    free(mean);
    return 0;
}

void tg_tl_print_result(FILE *f, const tg_tl_metrics *test, double repeat_last, double train_mean)
{
    fprintf(f, "test mse=%.4f mae=%.4f | repeat-last mse=%.4f | train-mean mse=%.4f\n", test->mse,
            test->mae, repeat_last, train_mean);
    fflush(f);
}

const char *const tg_tl_tsl_names[5] = {"mae", "mse", "rmse", "mape", "mspe"};

/* sums [4] of |e|, e^2, |e/t|, (e/t)^2 to the metrics over n elements */
static tg_tl_tsl tsl_from_sums(const double *s, double n)
{
    tg_tl_tsl m = {s[0] / n, s[1] / n, sqrt(s[1] / n), s[2] / n, s[3] / n};
    return m;
}

int tg_tl_tsl_metrics(const char *cmd, const float *pred, const float *truth, int64_t windows,
                      int64_t pred_len, int64_t cols, tg_tl_tsl *all, tg_tl_tsl *by_step,
                      int64_t *zero_truths)
{
    double *sum = calloc((size_t)(pred_len + 1) * 4, sizeof *sum);   /* [pred_len + 1][4] */
    if (!sum) return tg_cli_fail(cmd, "out of memory");
    int64_t zeros = 0;
    for (int64_t w = 0; w < windows; w++)
        for (int64_t h = 0; h < pred_len; h++) {
            double *s = sum + 4 * h;
            for (int64_t c = 0; c < cols; c++) {
                int64_t k = (w * pred_len + h) * cols + c;
                double t = truth[k], e = (double)pred[k] - t, r;
                if (t != 0) r = e / t;
                else r = e == 0 ? NAN : INFINITY, zeros++;   /* numpy: 0/0 nan, e/0 inf */
                s[0] += fabs(e), s[1] += e * e, s[2] += fabs(r), s[3] += r * r;
            }
        }
    double *tot = sum + 4 * pred_len;
    for (int64_t h = 0; h < pred_len; h++) {
        for (int j = 0; j < 4; j++) tot[j] += sum[4 * h + j];
        if (by_step) by_step[h] = tsl_from_sums(sum + 4 * h, (double)windows * (double)cols);
    }
    *all = tsl_from_sums(tot, (double)windows * (double)pred_len * (double)cols);
    if (zero_truths) *zero_truths = zeros;
    free(sum);
    return 0;
}

/* ---- the output directory ---- */

const char *const tg_tl_run_files[6] = {"checkpoint.safetensors", "best.safetensors",
                                        "metrics.csv", "loss.svg", "model.dot", "model.svg"};

char *tg_tl_path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    size_t at = a;
    if (a && dir[a - 1] != '/') p[at++] = '/';
    memcpy(p + at, name, b + 1);
    return p;
}

char *tg_tl_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return tg_tl_path_join("", ".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

int tg_tl_files_init(const char *cmd, tg_tl_files *f, const char *dir)
{
    memset(f, 0, sizeof *f);
    /* the longest name written: "DIR/checkpoint.safetensors.tmp.<pid>" */
    size_t longest = strlen(dir) + 1 + strlen("checkpoint.safetensors.tmp.") + 20;
    if (longest >= PATH_MAX)
        return tg_cli_fail(cmd, "--out: the directory name is %zu bytes long; its run files' "
                           "names would exceed the system's limit of %d bytes (PATH_MAX)",
                           strlen(dir), PATH_MAX);
    char **slot[7] = {&f->ckpt, &f->best, &f->csv, &f->svg, &f->dot, &f->dot_svg, &f->dir};
    for (int i = 0; i < 7; i++)
        if (!(*slot[i] = i < 6 ? tg_tl_path_join(dir, tg_tl_run_files[i])
                               : tg_tl_path_join("", dir))) {
            tg_tl_files_free(f);
            return tg_cli_fail(cmd, "out of memory");
        }
    return 0;
}

void tg_tl_files_free(tg_tl_files *f)
{
    free(f->dir);
    free(f->ckpt);
    free(f->best);
    free(f->csv);
    free(f->svg);
    free(f->dot);
    free(f->dot_svg);
    memset(f, 0, sizeof *f);
}

int tg_tl_files_check(const char *cmd, const tg_tl_files *f, const tg_cli_file *in, int n_in)
{
    const char *paths[6] = {f->ckpt, f->best, f->csv, f->svg, f->dot, f->dot_svg};
    tg_cli_file out[6];
    for (int i = 0; i < 6; i++) out[i] = (tg_cli_file){"(a run file of --out-dir)", paths[i]};
    return tg_cli_check_outputs(cmd, in, n_in, out, 6);
}

static tg_status write_csv(FILE *f, void *ctx)
{
    const tg_checkpoint *ck = ctx;
    fprintf(f, "epoch,step,train_loss,val_mse,lr,seconds\n");
    for (int64_t i = 0; i < ck->history_rows; i++) {
        const double *h = ck->history + i * TG_CKPT_HISTORY_COLS;
        fprintf(f, "%lld,%lld,%.6g,%.6g,%.6g,%.2f\n", (long long)h[0], (long long)h[1], h[2], h[3],
                h[4], h[5]);
    }
    return ferror(f) ? tg_set_error(TG_ERR_IO, "write failed") : TG_OK;
}

int tg_tl_write_curves(const char *cmd, const tg_tl_files *rf, const tg_checkpoint *ck)
{
    if (tg_write_atomic(rf->csv, write_csv, (void *)ck))
        return tg_cli_fail(cmd, "%s", tg_last_error());
    int64_t n = ck->history_rows;
    double *x = malloc(sizeof(double) * (size_t)(3 * n + 1));
    if (!x) return tg_cli_fail(cmd, "out of memory");
    double *tr = x + n, *va = x + 2 * n;
    for (int64_t i = 0; i < n; i++) {
        x[i] = ck->history[i * TG_CKPT_HISTORY_COLS];
        tr[i] = ck->history[i * TG_CKPT_HISTORY_COLS + 2];
        va[i] = ck->history[i * TG_CKPT_HISTORY_COLS + 3];
    }
    tg_series s[2] = {{"train loss (MSE)", x, tr, (int)n}, {"validation MSE", x, va, (int)n}};
    int rc = 0;
    if (tg_svg_lines(rf->svg, "training curves", "epoch", "MSE (scaled units)", s, 2))
        rc = tg_cli_fail(cmd, "%s", tg_last_error());
    free(x);
    return rc;
}

void tg_tl_write_diagram(const char *cmd, const tg_tl_files *rf, const tg_tl_model *m)
{
    char title[128];
    snprintf(title, sizeof title, "%s (eval graph)", m->name);
    tg_dot_opts o = {.depth = 3, .title = title};
    if (tg_graph_dot_save(m->ge, &o, rf->dot)) {
        fprintf(stderr, "tgraph %s: warning: model diagram: %s\n", cmd, tg_last_error());
        return;
    }
    if (!strchr(rf->dot, '\'') && system("command -v dot >/dev/null 2>&1") == 0) {
        size_t len = 2 * strlen(rf->dot) + 64;
        char *line = malloc(len);
        if (!line) return;
        snprintf(line, len, "dot -Tsvg '%s' -o '%s' 2>/dev/null", rf->dot, rf->dot_svg);
        if (system(line) != 0)
            fprintf(stderr, "tgraph %s: warning: Graphviz could not render %s\n", cmd, rf->dot);
        free(line);
    }
}

static tg_status write_bytes(FILE *f, void *ctx)
{
    const struct { const void *p; size_t n; } *b = ctx;
    return fwrite(b->p, 1, b->n, f) == b->n ? TG_OK : tg_set_error(TG_ERR_IO, "write failed");
}

int tg_tl_copy_file(const char *cmd, const char *src, const char *dst)
{
    void *data;
    size_t len;
    if (tg_read_file(src, 0, &data, &len))
        return tg_cli_fail(cmd, "--resume: the run's best weights: %s", tg_last_error());
    struct { const void *p; size_t n; } b = {data, len};
    tg_status st = tg_write_atomic(dst, write_bytes, &b);
    tg_free(data);
    if (st) return tg_cli_fail(cmd, "%s", tg_last_error());
    return 0;
}

/* ---- small things ---- */

int tg_tl_mkdirs(const char *cmd, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 0) return tg_cli_fail(cmd, "--out: empty directory name");
    char *path = malloc(n + 1);
    if (!path) return tg_cli_fail(cmd, "out of memory");
    memcpy(path, dir, n + 1);
    int rc = 0;
    for (size_t i = 1; i <= n && !rc; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char c = path[i];
        path[i] = '\0';
        struct stat sb;
        if (stat(path, &sb) != 0) {
            if (mkdir(path, 0777) != 0 && errno != EEXIST)
                rc = tg_cli_fail(cmd, "--out: cannot create %s: %s", path, strerror(errno));
        } else if (!S_ISDIR(sb.st_mode)) {
            rc = tg_cli_fail(cmd, "--out: %s exists and is not a directory", path);
        }
        path[i] = c;
    }
    free(path);
    return rc;
}

double tg_tl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
