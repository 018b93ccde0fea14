/*
 * checkpoint.c - training checkpoints in safetensors (see checkpoint.h).
 *
 * Not here: deciding when to save or what a run's configuration means - the
 * caller puts its configuration into string metadata and reads it back.
 */
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "internal.h"
#include "tensor_io.h"

#define FORMAT_TAG "tgraph-checkpoint-1"

static const char *const kind_names[TG_OPTIM_KIND_COUNT] = {"sgd", "adam", "adamw"};

/* Metadata keys the checkpoint writes itself. */
static const char *const reserved[] = {
    "format", "epoch", "step", "best_epoch", "best_val", "bad_epochs",
    "optim.kind", "optim.steps", "optim.lr",
};
#define N_RESERVED (int)(sizeof reserved / sizeof *reserved)

void tg_checkpoint_init(tg_checkpoint *ck)
{
    TG__NONNULL_VOID(ck);
    memset(ck, 0, sizeof *ck);
    ck->best_val = INFINITY;
}

void tg_checkpoint_clear(tg_checkpoint *ck)
{
    if (!ck) return;
    tg_scaler_free(ck->scaler);
    tg__free(ck->history);
    for (int i = 0; i < ck->n_meta; i++) {
        tg__free(ck->meta_keys[i]);
        tg__free(ck->meta_values[i]);
    }
    tg__free(ck->meta_keys);
    tg__free(ck->meta_values);
    tg_st_free(ck->file);
    tg__free(ck->path);
    tg_checkpoint_init(ck);
}

const char *tg_checkpoint_meta(const tg_checkpoint *ck, const char *key)
{
    TG__NONNULL(ck, NULL);
    TG__NONNULL(key, NULL);
    for (int i = 0; i < ck->n_meta; i++)
        if (!strcmp(ck->meta_keys[i], key)) return ck->meta_values[i];
    return NULL;
}

/* Add or replace without the reserved-name check. */
static tg_status put_meta(tg_checkpoint *ck, const char *key, const char *value)
{
    char *v = tg__strdup(value);
    if (!v) return tg_set_error(TG_ERR_NOMEM, "checkpoint: out of memory");
    for (int i = 0; i < ck->n_meta; i++)
        if (!strcmp(ck->meta_keys[i], key)) {
            tg__free(ck->meta_values[i]);
            ck->meta_values[i] = v;
            return TG_OK;
        }
    char *k = tg__strdup(key);
    char **nk = tg__realloc(ck->meta_keys, (size_t)(ck->n_meta + 1) * sizeof *nk);
    if (nk) ck->meta_keys = nk;
    char **nv = nk ? tg__realloc(ck->meta_values, (size_t)(ck->n_meta + 1) * sizeof *nv) : NULL;
    if (nv) ck->meta_values = nv;
    if (!k || !nk || !nv) {
        tg__free(k);
        tg__free(v);
        return tg_set_error(TG_ERR_NOMEM, "checkpoint: out of memory");
    }
    ck->meta_keys[ck->n_meta] = k;
    ck->meta_values[ck->n_meta++] = v;
    return TG_OK;
}

tg_status tg_checkpoint_set_meta(tg_checkpoint *ck, const char *key, const char *value)
{
    TG__NONNULL(ck, TG_ERR_INVALID);
    if (!key || !*key || !value)
        return tg_set_error(TG_ERR_INVALID, "checkpoint: empty metadata key or NULL value");
    for (int i = 0; i < N_RESERVED; i++)
        if (!strcmp(key, reserved[i]))
            return tg_set_error(TG_ERR_INVALID, "checkpoint: metadata key '%s' is reserved", key);
    return put_meta(ck, key, value);
}

tg_status tg_checkpoint_add_history(tg_checkpoint *ck, const double *row)
{
    TG__NONNULL(ck, TG_ERR_INVALID);
    TG__NONNULL(row, TG_ERR_INVALID);
    size_t n = (size_t)(ck->history_rows + 1) * TG_CKPT_HISTORY_COLS;
    double *h = tg__realloc(ck->history, n * sizeof *h);
    if (!h) return tg_set_error(TG_ERR_NOMEM, "checkpoint: out of memory");
    memcpy(h + ck->history_rows * TG_CKPT_HISTORY_COLS, row,
           TG_CKPT_HISTORY_COLS * sizeof *row);
    ck->history = h;
    ck->history_rows++;
    return TG_OK;
}

/* ---- save ---- */

typedef struct save_list {
    int               n, cap;
    const char      **names;
    const tg_tensor **ts;
    char            **owned;   /* names we allocated */
    int               n_owned;
} save_list;

static tg_status list_add(save_list *l, const char *name, const tg_tensor *t, bool own)
{
    if (l->n == l->cap) {
        int ncap = l->cap ? l->cap * 2 : 64;
        const char **nn = tg__realloc(l->names, (size_t)ncap * sizeof *nn);
        if (nn) l->names = nn;
        const tg_tensor **nt = nn ? tg__realloc(l->ts, (size_t)ncap * sizeof *nt) : NULL;
        if (nt) l->ts = nt;
        char **no = nt ? tg__realloc(l->owned, (size_t)ncap * sizeof *no) : NULL;
        if (no) l->owned = no;
        if (!no) return tg_set_error(TG_ERR_NOMEM, "checkpoint: out of memory");
        l->cap = ncap;
    }
    l->names[l->n] = name;
    l->ts[l->n++] = t;
    if (own) l->owned[l->n_owned++] = (char *)name;
    return TG_OK;
}

static tg_status list_addf(save_list *l, const tg_tensor *t, const char *fmt, ...) TG__PRINTF(3, 4);
static tg_status list_addf(save_list *l, const tg_tensor *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? tg__malloc((size_t)n + 1) : NULL;
    if (!s) return tg_set_error(TG_ERR_NOMEM, "checkpoint: out of memory");
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    tg_status st = list_add(l, s, t, true);
    if (st) tg__free(s);
    return st;
}

static void list_free(save_list *l)
{
    for (int i = 0; i < l->n_owned; i++) tg__free(l->owned[i]);
    tg__free(l->names);
    tg__free(l->ts);
    tg__free(l->owned);
}

/* A tensor view over caller memory (no ownership). */
static tg_tensor view(tg_dtype dt, int rank, int64_t d0, int64_t d1, void *data)
{
    tg_tensor t = {.dtype = dt, .rank = rank, .shape = {d0, d1}, .numel = rank == 1 ? d0 : d0 * d1,
                   .data = data};
    return t;
}

tg_status tg_checkpoint_save(const char *path, const tg_params *ps, const tg_optim *o,
                             const tg_checkpoint *ck)
{
    TG__NONNULL(path, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(ck, TG_ERR_INVALID);
    if (!path || !ps || !ck) return tg_set_error(TG_ERR_INVALID, "checkpoint: NULL argument");
    save_list l = {0};
    tg_checkpoint meta;   /* reserved entries first, then the caller's */
    tg_checkpoint_init(&meta);
    int64_t rng_bits[2][4];
    for (int i = 0; i < 4; i++) {
        rng_bits[0][i] = (int64_t)ck->data_rng.s[i];
        rng_bits[1][i] = (int64_t)ck->dropout_rng.s[i];
    }
    tg_tensor t_rng0 = view(TG_I64, 1, 4, 0, rng_bits[0]);
    tg_tensor t_rng1 = view(TG_I64, 1, 4, 0, rng_bits[1]);
    tg_tensor t_mean, t_std, t_hist;
    tg_status st = TG_OK;
    char buf[64];

    for (int i = 0; i < tg_params_count(ps) && !st; i++) {
        tg_param *p = tg_params_at(ps, i);
        if (!strncmp(p->name, TG_CKPT_PREFIX, strlen(TG_CKPT_PREFIX)))
            st = tg_set_error(TG_ERR_INVALID, "checkpoint: parameter name '%s' uses the "
                              "reserved prefix " TG_CKPT_PREFIX, p->name);
        else st = list_add(&l, p->name, &p->value, false);
        for (int s = 0; o && !st && s < TG_PARAM_STATE; s++) {
            const char *slot = tg_optim_slot_name(o, s);
            if (slot && p->state[s].data)
                st = list_addf(&l, &p->state[s], TG_CKPT_PREFIX "optim.%s.%s", slot, p->name);
        }
    }
    for (int i = 0; i < tg_params_buffer_count(ps) && !st; i++) {   /* own dtype: I64 stays */
        tg_param *b = tg_params_buffer_at(ps, i);
        if (!strncmp(b->name, TG_CKPT_PREFIX, strlen(TG_CKPT_PREFIX)))
            st = tg_set_error(TG_ERR_INVALID, "checkpoint: buffer name '%s' uses the reserved "
                              "prefix " TG_CKPT_PREFIX, b->name);
        else st = list_add(&l, b->name, &b->value, false);
    }
    if (!st) st = list_add(&l, TG_CKPT_PREFIX "rng.data", &t_rng0, false);
    if (!st) st = list_add(&l, TG_CKPT_PREFIX "rng.dropout", &t_rng1, false);
    if (!st && ck->scaler) {
        t_mean = view(TG_F64, 1, ck->scaler->cols, 0, ck->scaler->mean);
        t_std = view(TG_F64, 1, ck->scaler->cols, 0, ck->scaler->std);
        st = list_add(&l, TG_CKPT_PREFIX "scaler.mean", &t_mean, false);
        if (!st) st = list_add(&l, TG_CKPT_PREFIX "scaler.std", &t_std, false);
    }
    if (!st && ck->history_rows > 0) {
        t_hist = view(TG_F64, 2, ck->history_rows, TG_CKPT_HISTORY_COLS, ck->history);
        st = list_add(&l, TG_CKPT_PREFIX "history", &t_hist, false);
    }

#define PUT(key, ...) \
    if (!st) { tg__fmt(buf, sizeof buf, __VA_ARGS__); st = put_meta(&meta, key, buf); }
    PUT("format", "%s", FORMAT_TAG);
    PUT("epoch", "%lld", (long long)ck->epoch);
    PUT("step", "%lld", (long long)ck->step);
    PUT("best_epoch", "%lld", (long long)ck->best_epoch);
    PUT("best_val", "%.17g", ck->best_val);
    PUT("bad_epochs", "%lld", (long long)ck->bad_epochs);
    if (o) {
        PUT("optim.kind", "%s", kind_names[tg_optim_config_of(o)->kind]);
        PUT("optim.steps", "%lld", (long long)tg_optim_steps(o));
        PUT("optim.lr", "%.17g", tg_optim_lr(o));
    }
#undef PUT
    for (int i = 0; i < ck->n_meta && !st; i++)
        st = put_meta(&meta, ck->meta_keys[i], ck->meta_values[i]);
    if (!st)
        st = tg_st_save(path, l.n, l.names, l.ts, meta.n_meta,
                        (const char *const *)meta.meta_keys, (const char *const *)meta.meta_values);
    list_free(&l);
    tg_checkpoint_clear(&meta);
    return st;
}

/* ---- load ---- */

/* A metadata value as a message shows it: escaped (tg__escape), cut at 96 bytes. */
#define SHOWN(v) tg__escape((v), strlen(v), (char[96]){0}, 96)

static tg_status meta_i64(const tg_checkpoint *ck, const char *path, const char *key,
                          bool required, int64_t *out)
{
    const char *s = tg_st_meta_find(ck->file, key);
    if (!s) {
        if (!required) return TG_OK;
        return tg_set_error(TG_ERR_FORMAT, "%s: checkpoint metadata lacks '%s'", path, key);
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 0)
        return tg_set_error(TG_ERR_FORMAT, "%s: checkpoint metadata '%s' is '%s', expected a "
                            "non-negative integer", path, key, SHOWN(s));
    *out = v;
    return TG_OK;
}

static tg_status meta_f64(const tg_checkpoint *ck, const char *path, const char *key,
                          double *out)
{
    const char *s = tg_st_meta_find(ck->file, key);
    if (!s) return tg_set_error(TG_ERR_FORMAT, "%s: checkpoint metadata lacks '%s'", path, key);
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end)
        return tg_set_error(TG_ERR_FORMAT, "%s: checkpoint metadata '%s' is '%s', expected a "
                            "number", path, key, SHOWN(s));
    *out = v;
    return TG_OK;
}

/* The text of metadata key, and the checkpoint's name for messages; an
 * error naming both when the key is missing (or an argument NULL). */
static tg_status meta_text(const char *fn, const tg_checkpoint *ck, const char *key,
                           const void *out, const char **path, const char **s)
{
    if (!ck || !key || !out)
        return tg_set_error(TG_ERR_INVALID, "%s: %s is NULL", fn,
                            !ck ? "ck" : !key ? "key" : "out");
    *path = ck->path ? ck->path : "checkpoint";
    *s = tg_checkpoint_meta(ck, key);
    if (!*s) return tg_set_error(TG_ERR_FORMAT, "%s: checkpoint metadata lacks '%s'", *path, key);
    return TG_OK;
}

tg_status tg_checkpoint_meta_int(const tg_checkpoint *ck, const char *key, int64_t min,
                                 int64_t max, int64_t *out)
{
    const char *path, *s;
    tg_status st = meta_text(__func__, ck, key, out, &path, &s);
    if (st) return st;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < min || v > max)
        return tg_set_error(TG_ERR_FORMAT, "%s: checkpoint metadata '%s' is '%s', expected an "
                            "integer in [%lld, %lld]", path, key, SHOWN(s), (long long)min,
                            (long long)max);
    *out = v;
    return TG_OK;
}

tg_status tg_checkpoint_meta_num(const tg_checkpoint *ck, const char *key, double min, double max,
                                 double *out)
{
    const char *path, *s;
    tg_status st = meta_text(__func__, ck, key, out, &path, &s);
    if (st) return st;
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v) || v < min || v > max)
        return tg_set_error(TG_ERR_FORMAT, "%s: checkpoint metadata '%s' is '%s', expected a "
                            "number in [%g, %g]", path, key, SHOWN(s), min, max);
    *out = v;
    return TG_OK;
}

/* ---- the identity of a data file ---- */

tg_status tg_file_id_of(const char *path, tg_file_id *id)
{
    TG__NONNULL(id, TG_ERR_INVALID);
    memset(id, 0, sizeof *id);
    TG__NONNULL(path, TG_ERR_INVALID);
    memset(id, 0, sizeof *id);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return tg_set_error(TG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    uint64_t h = 0xcbf29ce484222325ull, n = 0;   /* FNV-1a 64 */
    if (S_ISREG(sb.st_mode)) {
        FILE *f = fopen(path, "rb");
        if (!f) return tg_set_error(TG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        unsigned char buf[1 << 16];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
            for (size_t i = 0; i < got; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
            n += got;
        }
        int err = ferror(f);
        fclose(f);
        if (err) return tg_set_error(TG_ERR_IO, "%s: read error", path);
        id->regular = true;
    } else {
        h = 0;
    }
    char *abs = realpath(path, NULL);   /* /dev/stdin on a pipe has none: kept as given */
    if (!abs && id->regular)
        return tg_set_error(TG_ERR_IO, "%s: cannot resolve its absolute path: %s", path,
                            strerror(errno));
    id->path = tg__strdup(abs ? abs : path);
    free(abs);   /* realpath's buffer comes from malloc */
    if (!id->path) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
    id->size = n;
    id->hash = h;
    return TG_OK;
}

void tg_file_id_clear(tg_file_id *id)
{
    if (!id) return;   /* NULL is a no-op, as with free() */
    tg__free(id->path);
    memset(id, 0, sizeof *id);
}

/* A tensor of the file with the given dtype and rank-1 length (len < 0: any). */
static const tg_tensor *want(const tg_checkpoint *ck, const char *path, const char *key,
                             tg_dtype dt, int rank, int64_t len, tg_status *st)
{
    const tg_tensor *t = tg_st_find(ck->file, key);
    char b[96];
    if (!t) {
        *st = tg_set_error(TG_ERR_FORMAT, "%s: checkpoint lacks tensor '%s'", path, key);
        return NULL;
    }
    if (t->dtype != dt || t->rank != rank || (len >= 0 && t->shape[0] != len)) {
        *st = tg_set_error(TG_ERR_FORMAT, "%s: checkpoint tensor '%s' is %s %s, expected %s of "
                           "rank %d", path, key, tg_dtype_name(t->dtype),
                           tg_shape_str(t->rank, t->shape, b, sizeof b), tg_dtype_name(dt), rank);
        return NULL;
    }
    return t;
}

tg_status tg_checkpoint_read(const char *path, tg_checkpoint *ck)
{
    TG__NONNULL(path, TG_ERR_INVALID);
    TG__NONNULL(ck, TG_ERR_INVALID);
    tg_checkpoint_clear(ck);
    tg_status st = tg_st_load(path, &ck->file);
    if (st) return st;
    if (!(ck->path = tg__strdup(path))) {
        st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    const char *fmt = tg_st_meta_find(ck->file, "format");
    if (!fmt || strcmp(fmt, FORMAT_TAG)) {
        st = tg_set_error(TG_ERR_FORMAT, "%s: not a tgraph checkpoint (metadata format is %s%s%s, "
                          "expected " FORMAT_TAG ")", path, fmt ? "'" : "",
                          fmt ? fmt : "missing", fmt ? "'" : "");
        goto fail;
    }
    if ((st = meta_i64(ck, path, "epoch", true, &ck->epoch)) ||
        (st = meta_i64(ck, path, "step", true, &ck->step)) ||
        (st = meta_i64(ck, path, "best_epoch", true, &ck->best_epoch)) ||
        (st = meta_i64(ck, path, "bad_epochs", true, &ck->bad_epochs)) ||
        (st = meta_f64(ck, path, "best_val", &ck->best_val)))
        goto fail;
    const tg_tensor *r0 = want(ck, path, TG_CKPT_PREFIX "rng.data", TG_I64, 1, 4, &st);
    const tg_tensor *r1 = r0 ? want(ck, path, TG_CKPT_PREFIX "rng.dropout", TG_I64, 1, 4, &st)
                             : NULL;
    if (!r1) goto fail;
    for (int i = 0; i < 4; i++) {
        ck->data_rng.s[i] = (uint64_t)((const int64_t *)r0->data)[i];
        ck->dropout_rng.s[i] = (uint64_t)((const int64_t *)r1->data)[i];
    }
    if (tg_st_find(ck->file, TG_CKPT_PREFIX "scaler.mean")) {
        const tg_tensor *m = want(ck, path, TG_CKPT_PREFIX "scaler.mean", TG_F64, 1, -1, &st);
        const tg_tensor *s =
            m ? want(ck, path, TG_CKPT_PREFIX "scaler.std", TG_F64, 1, m->shape[0], &st) : NULL;
        if (!s) goto fail;
        if (!(ck->scaler = tg_scaler_new(m->shape[0], m->data, s->data))) {
            st = tg_set_error(TG_ERR_FORMAT, "%s: %s", path, tg_last_error());
            goto fail;
        }
    }
    if (tg_st_find(ck->file, TG_CKPT_PREFIX "history")) {
        const tg_tensor *h = want(ck, path, TG_CKPT_PREFIX "history", TG_F64, 2, -1, &st);
        if (!h) goto fail;
        if (h->shape[1] != TG_CKPT_HISTORY_COLS) {
            st = tg_set_error(TG_ERR_FORMAT, "%s: checkpoint history has %lld columns, expected "
                              "%d", path, (long long)h->shape[1], TG_CKPT_HISTORY_COLS);
            goto fail;
        }
        if (!(ck->history = tg__malloc((size_t)h->numel * sizeof *ck->history)) && h->numel) {
            st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        if (h->numel) memcpy(ck->history, h->data, (size_t)h->numel * sizeof *ck->history);
        ck->history_rows = h->shape[0];
    }
    for (int i = 0; i < tg_st_meta_count(ck->file); i++)
        if ((st = put_meta(ck, tg_st_meta_key(ck->file, i), tg_st_meta_value(ck->file, i))))
            goto fail;
    return TG_OK;
fail:
    tg_checkpoint_clear(ck);
    return st;
}

/* Store entry i: the parameters, then the buffers (params.h). */
static tg_param *ckpt_entry(const tg_params *ps, int i)
{
    int n = tg_params_count(ps);
    return i < n ? tg_params_at(ps, i) : tg_params_buffer_at(ps, i - n);
}

/* Entry p's tensor in the file: present, float (an int64 buffer: I64), same shape. */
static tg_status ckpt_entry_check(const tg_checkpoint *ck, const char *path, const tg_param *p)
{
    char b1[96], b2[96];
    const tg_tensor *t = tg_st_find(ck->file, p->name);
    const bool int_buffer = p->buffer && p->value.dtype == TG_I64;
    if (!t)
        return tg_set_error(TG_ERR_NOT_FOUND, "%s: missing %s '%s' %s (a checkpoint of a "
                            "different model or configuration?)", path,
                            p->buffer ? "buffer" : "parameter", p->name,
                            tg_shape_str(p->value.rank, p->value.shape, b1, sizeof b1));
    if (int_buffer ? t->dtype != TG_I64 : !tg_dtype_is_float(t->dtype))
        return tg_set_error(TG_ERR_DTYPE, "%s: %s '%s' has dtype %s, expected %s", path,
                            p->buffer ? "buffer" : "parameter", p->name, tg_dtype_name(t->dtype),
                            int_buffer ? "int64" : "a float type");
    if (!tg_tensor_same_shape(t, &p->value))
        return tg_set_error(TG_ERR_SHAPE, "%s: size mismatch for %s: copying a param "
                            "with shape %s from checkpoint, the shape in current model is %s",
                            path, p->name, tg_shape_str(t->rank, t->shape, b1, sizeof b1),
                            tg_shape_str(p->value.rank, p->value.shape, b2, sizeof b2));
    return TG_OK;
}

tg_status tg_checkpoint_restore_params(const tg_checkpoint *ck, tg_params *ps)
{
    TG__NONNULL(ck, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (!ck->file) return tg_set_error(TG_ERR_STATE, "checkpoint: nothing read");
    const char *path = ck->path ? ck->path : "checkpoint";
    const int n = tg_params_count(ps) + tg_params_buffer_count(ps);
    tg_status st;
    /* check everything first, so a failure leaves ps unchanged */
    for (int i = 0; i < n; i++)
        if ((st = ckpt_entry_check(ck, path, ckpt_entry(ps, i)))) return st;
    size_t plen = strlen(TG_CKPT_PREFIX);
    for (int i = 0; i < tg_st_count(ck->file); i++) {
        const char *name = tg_st_name(ck->file, i);
        if (strncmp(name, TG_CKPT_PREFIX, plen) && !tg_params_find(ps, name))
            return tg_set_error(TG_ERR_NOT_FOUND, "%s: unexpected key '%s' (no parameter "
                                "of that name in the model)", path, name);
    }
    for (int i = 0; i < n; i++) {   /* the buffers bit-exact: the same dtype */
        tg_param *p = ckpt_entry(ps, i);
        tg_tensor_copy(&p->value, tg_st_find(ck->file, p->name));
    }
    return TG_OK;
}

tg_status tg_checkpoint_restore_optim(const tg_checkpoint *ck, tg_params *ps, tg_optim *o)
{
    TG__NONNULL(ck, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(o, TG_ERR_INVALID);
    if (!ck->file) return tg_set_error(TG_ERR_STATE, "checkpoint: nothing read");
    const tg_optim_config *c = tg_optim_config_of(o);
    const char *kind = tg_checkpoint_meta(ck, "optim.kind");
    if (!kind)
        return tg_set_error(TG_ERR_NOT_FOUND, "checkpoint: no optimizer state in the file");
    if (strcmp(kind, kind_names[c->kind]))
        return tg_set_error(TG_ERR_INVALID, "checkpoint: the optimizer state is %s's, the run "
                            "uses %s", kind, kind_names[c->kind]);
    int64_t steps = 0;
    double lr = 0;
    tg_status st;
    if ((st = meta_i64(ck, ck->path, "optim.steps", true, &steps)) ||
        (st = meta_f64(ck, ck->path, "optim.lr", &lr)))
        return st;
    char name[512];
    /* check, then copy */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < tg_params_count(ps); i++) {
            tg_param *p = tg_params_at(ps, i);
            for (int s = 0; s < TG_PARAM_STATE; s++) {
                const char *slot = tg_optim_slot_name(o, s);
                if (!slot || !p->state[s].data) continue;
                tg__fmt(name, sizeof name, TG_CKPT_PREFIX "optim.%s.%s", slot, p->name);
                const tg_tensor *t = tg_st_find(ck->file, name);
                if (!t)
                    return tg_set_error(TG_ERR_NOT_FOUND, "checkpoint: missing optimizer state "
                                        "'%s'", name);
                if (pass == 0 && (!tg_dtype_is_float(t->dtype) ||
                                  !tg_tensor_same_shape(t, &p->state[s])))
                    return tg_set_error(TG_ERR_SHAPE, "checkpoint: optimizer state '%s' does not "
                                        "match its parameter's shape", name);
                if (pass == 1) tg_tensor_copy(&p->state[s], t);
            }
        }
    }
    tg_optim_set_steps(o, steps);
    if (lr > 0 && isfinite(lr)) tg_optim_set_lr(o, lr);
    return TG_OK;
}
