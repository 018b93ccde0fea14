/*
 * params.c - the parameter store (a growable array plus a name hash) and the
 * initialisers.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "threads.h"
#include "params.h"

struct tg_params {
    tg_dtype   dtype;
    int        refs;        /* the owner (until tg_params_free) + one per graph using it */
    bool       owner_freed; /* tg_params_free was called */
    bool       shapes_only; /* tg_params_new_shapes: parameters without data */
    int        count, cap;
    tg_param **items;       /* creation order */
    int        n_buffers, buffer_cap;
    tg_param **buffers;     /* tg_params_add_buffer, creation order */
    int       *table;       /* open addressing: i+1 into items, -(i+1) into buffers, 0 = empty */
    int        table_cap;   /* power of two, > 2*(count + n_buffers) */
    int        n_alias;     /* tied names (tg_params_alias), a short list */
    char     **alias_name;
    tg_param **alias_target;
};

/* A parameter as the store allocates it: the public struct plus its owner, so
 * a graph that takes a parameter node knows which store to hold on to. */
typedef struct param_box {
    tg_param   p;           /* first: a tg_param * is a param_box * */
    tg_params *owner;
} param_box;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;           /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

tg_params *tg_params_new(tg_dtype dt)
{
    if (!tg_dtype_is_float(dt)) {
        tg_set_error(TG_ERR_DTYPE, "params: dtype must be float32 or float64, got %s",
                     tg_dtype_name(dt));
        return NULL;
    }
    tg_params *ps = tg__calloc(1, sizeof *ps);
    if (!ps) {
        tg_set_error(TG_ERR_NOMEM, "params: out of memory");
        return NULL;
    }
    ps->dtype = dt;
    ps->refs = 1;
    return ps;
}

tg_params *tg_params_new_shapes(tg_dtype dt)
{
    tg_params *ps = tg_params_new(dt);
    if (ps) ps->shapes_only = true;
    return ps;
}

int64_t tg_params_bytes(const tg_params *ps)
{
    if (!ps) {
        tg_set_error(TG_ERR_INVALID, "tg_params_bytes: ps is NULL");
        return 0;
    }
    int64_t n = 0;
    for (int i = 0; i < ps->count; i++) {   /* parameters only: buffers are not counted */
        int64_t b = ps->items[i]->value.numel * (int64_t)tg_dtype_size(ps->dtype);
        n = b > INT64_MAX - n ? INT64_MAX : n + b;
    }
    return n;
}

static void param_free(tg_param *p)
{
    if (!p) return;
    tg__free(p->name);
    tg__free_aligned(p->value.data);
    tg__free_aligned(p->grad.data);
    for (int s = 0; s < TG_PARAM_STATE; s++) tg__free_aligned(p->state[s].data);
    tg__free(p);
}

static void params_destroy(tg_params *ps)
{
    for (int i = 0; i < ps->count; i++) param_free(ps->items[i]);
    for (int i = 0; i < ps->n_buffers; i++) param_free(ps->buffers[i]);
    tg__free(ps->buffers);
    for (int i = 0; i < ps->n_alias; i++) tg__free(ps->alias_name[i]);
    tg__free(ps->alias_name);
    tg__free(ps->alias_target);
    tg__free(ps->items);
    tg__free(ps->table);
    tg__free(ps);
}

void tg__params_retain(tg_params *ps)
{
    if (ps) ps->refs++;
}

void tg__params_release(tg_params *ps)
{
    if (ps && --ps->refs == 0) params_destroy(ps);
}

tg_params *tg__param_owner(const tg_param *p)
{
    return p ? ((const param_box *)(const void *)p)->owner : NULL;
}

void tg_params_free(tg_params *ps)
{
    if (!ps || ps->owner_freed) return;
    ps->owner_freed = true;
    tg__params_release(ps);
}

tg_dtype tg_params_dtype(const tg_params *ps)
{
    if (!ps) {
        tg_set_error(TG_ERR_INVALID, "tg_params_dtype: ps is NULL");
        return TG_F32;
    }
    return ps->dtype;
}

/* The entry a table value stands for: i+1 a parameter, -(i+1) a buffer. */
static tg_param *table_entry(const tg_params *ps, int at)
{
    return at > 0 ? ps->items[at - 1] : ps->buffers[-at - 1];
}

static int table_slot(const tg_params *ps, const char *name)
{
    uint64_t mask = (uint64_t)ps->table_cap - 1;
    for (uint64_t h = hash_str(name) & mask;; h = (h + 1) & mask) {
        int at = ps->table[h];
        if (!at || strcmp(table_entry(ps, at)->name, name) == 0) return (int)h;
    }
}

static int table_grow(tg_params *ps)
{
    int cap = ps->table_cap ? ps->table_cap * 2 : 64;
    int *old = ps->table, old_cap = ps->table_cap;
    int *t = tg__calloc((size_t)cap, sizeof *t);
    if (!t) return 0;
    ps->table = t;
    ps->table_cap = cap;
    for (int i = 0; i < old_cap; i++)
        if (old[i]) ps->table[table_slot(ps, table_entry(ps, old[i])->name)] = old[i];
    tg__free(old);
    return 1;
}

tg_param *tg_params_find(const tg_params *ps, const char *name)
{
    TG__NONNULL(ps, NULL);
    TG__NONNULL(name, NULL);
    int at = ps->table_cap ? ps->table[table_slot(ps, name)] : 0;
    if (at) return table_entry(ps, at);
    for (int i = 0; i < ps->n_alias; i++)
        if (!strcmp(ps->alias_name[i], name)) return ps->alias_target[i];
    return NULL;
}

tg_status tg_params_alias(tg_params *ps, const char *alias, tg_param *p)
{
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(alias, TG_ERR_INVALID);
    TG__NONNULL(p, TG_ERR_INVALID);
    if (tg__param_owner(p) != ps)
        return tg_set_error(TG_ERR_INVALID, "params: cannot tie '%s' to '%s' of another store",
                            alias, p->name);
    if (!*alias) return tg_set_error(TG_ERR_INVALID, "params: empty alias name");
    if (tg_params_find(ps, alias))
        return tg_set_error(TG_ERR_INVALID, "params: a parameter named '%s' already exists", alias);
    int n = ps->n_alias + 1;
    char **names = tg__realloc(ps->alias_name, (size_t)n * sizeof *names);
    if (names) ps->alias_name = names;
    tg_param **targets = names ? tg__realloc(ps->alias_target, (size_t)n * sizeof *targets) : NULL;
    if (targets) ps->alias_target = targets;
    char *copy = targets ? tg__strdup(alias) : NULL;
    if (!copy) return tg_set_error(TG_ERR_NOMEM, "params: out of memory adding alias '%s'", alias);
    ps->alias_name[ps->n_alias] = copy;
    ps->alias_target[ps->n_alias++] = p;
    return TG_OK;
}

int tg_params_alias_count(const tg_params *ps)
{
    TG__NONNULL(ps, 0);
    return ps->n_alias;
}

const char *tg_params_alias_name(const tg_params *ps, int i)
{
    TG__NONNULL(ps, NULL);
    return i >= 0 && i < ps->n_alias ? ps->alias_name[i] : NULL;
}

tg_param *tg_params_alias_target(const tg_params *ps, int i)
{
    TG__NONNULL(ps, NULL);
    return i >= 0 && i < ps->n_alias ? ps->alias_target[i] : NULL;
}

static tg_status tensor_alloc(tg_tensor *t, tg_dtype dt, int rank, const int64_t *shape,
                              int64_t numel, bool shapes_only)
{
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
    t->numel = numel;
    t->data = NULL;
    if (shapes_only) return TG_OK;
    size_t bytes = (size_t)numel * tg_dtype_size(dt);
    t->data = tg__malloc_aligned(bytes);
    if (!t->data) return tg_set_error(TG_ERR_NOMEM, "out of memory (%zu bytes)", bytes);
    memset(t->data, 0, bytes);
    return TG_OK;
}

/* The checks tg_params_add and tg_params_add_buffer share: a usable name
 * that no entry has yet, and a valid shape (its element count out). */
static bool entry_check(tg_params *ps, const char *fn, const char *name, int rank,
                        const int64_t *shape, int64_t *numel)
{
    if (!ps) {
        tg_set_error(TG_ERR_INVALID, "%s: ps is NULL", fn);
        return false;
    }
    if (!shape && rank > 0) {
        tg_set_error(TG_ERR_INVALID, "%s: shape is NULL with rank %d", fn, rank);
        return false;
    }
    if (!name || !*name) {
        tg_set_error(TG_ERR_INVALID, "params: empty parameter name");
        return false;
    }
    if (tg_params_find(ps, name)) {
        tg_set_error(TG_ERR_INVALID, "params: a parameter named '%s' already exists", name);
        return false;
    }
    tg_status bad = tg_shape_numel(rank, shape, numel);
    if (bad) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", tg_last_error());
        tg_set_error(bad, "params: '%s': %s", name, msg);
        return false;
    }
    return true;
}

/* Room for one more entry in *list (parameters or buffers) and the table. */
static bool entry_room(tg_params *ps, tg_param ***list, int n, int *cap)
{
    if (n == *cap) {
        int ncap = *cap ? *cap * 2 : 32;
        tg_param **items = tg__realloc(*list, (size_t)ncap * sizeof *items);
        if (!items) return false;
        *list = items;
        *cap = ncap;
    }
    return 2 * (ps->count + ps->n_buffers + 1) <= ps->table_cap || table_grow(ps);
}

/* A new entry: value zero-filled of dtype dt; the gradient's data only when
 * grad is set (else its shape with data NULL); optimizer slots unallocated. */
static tg_param *entry_new(tg_params *ps, const char *name, tg_dtype dt, int rank,
                           const int64_t *shape, int64_t numel, bool grad)
{
    param_box *box = tg__calloc(1, sizeof *box);
    if (!box) return NULL;
    box->owner = ps;
    tg_param *p = &box->p;
    p->name = tg__strdup(name);
    if (!p->name || tensor_alloc(&p->value, dt, rank, shape, numel, ps->shapes_only) ||
        tensor_alloc(&p->grad, dt, rank, shape, numel, ps->shapes_only || !grad)) {
        param_free(p);
        return NULL;
    }
    for (int s = 0; s < TG_PARAM_STATE; s++) {
        p->state[s] = p->value;
        p->state[s].data = NULL;
    }
    return p;
}

tg_param *tg_params_add(tg_params *ps, const char *name, int rank, const int64_t *shape)
{
    int64_t numel;
    if (!entry_check(ps, "tg_params_add", name, rank, shape, &numel)) return NULL;
    tg_param *p = entry_room(ps, &ps->items, ps->count, &ps->cap)
                      ? entry_new(ps, name, ps->dtype, rank, shape, numel, true) : NULL;
    if (!p) {
        tg_set_error(TG_ERR_NOMEM, "params: out of memory adding '%s'", name);
        return NULL;
    }
    ps->items[ps->count++] = p;
    ps->table[table_slot(ps, name)] = ps->count;
    return p;
}

tg_param *tg_params_add_buffer(tg_params *ps, const char *name, tg_dtype dt, int rank,
                               const int64_t *shape)
{
    int64_t numel;
    if (!entry_check(ps, "tg_params_add_buffer", name, rank, shape, &numel)) return NULL;
    if (dt != ps->dtype && dt != TG_I64) {
        tg_set_error(TG_ERR_DTYPE, "params: buffer '%s' has dtype %s; a buffer is the store's "
                     "dtype (%s) or int64", name, tg_dtype_name(dt), tg_dtype_name(ps->dtype));
        return NULL;
    }
    tg_param *p = entry_room(ps, &ps->buffers, ps->n_buffers, &ps->buffer_cap)
                      ? entry_new(ps, name, dt, rank, shape, numel, false) : NULL;
    if (!p) {
        tg_set_error(TG_ERR_NOMEM, "params: out of memory adding '%s'", name);
        return NULL;
    }
    p->frozen = p->buffer = true;
    ps->buffers[ps->n_buffers++] = p;
    ps->table[table_slot(ps, name)] = -ps->n_buffers;
    return p;
}

tg_param *tg_params_addf(tg_params *ps, int rank, const int64_t *shape, const char *fmt, ...)
{
    char name[512];
    va_list ap;
    TG__NONNULL(ps, NULL);
    TG__NONNULL(fmt, NULL);
    va_start(ap, fmt);
    int n = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof name) {
        tg_set_error(TG_ERR_LIMIT, "params: parameter name longer than %zu bytes",
                     sizeof name - 1);
        return NULL;
    }
    return tg_params_add(ps, name, rank, shape);
}

int tg_params_count(const tg_params *ps)
{
    TG__NONNULL(ps, 0);
    return ps->count;
}

tg_param *tg_params_at(const tg_params *ps, int i)
{
    TG__NONNULL(ps, NULL);
    return i >= 0 && i < ps->count ? ps->items[i] : NULL;
}

int tg_params_buffer_count(const tg_params *ps)
{
    TG__NONNULL(ps, 0);
    return ps->n_buffers;
}

tg_param *tg_params_buffer_at(const tg_params *ps, int i)
{
    TG__NONNULL(ps, NULL);
    return i >= 0 && i < ps->n_buffers ? ps->buffers[i] : NULL;
}

int64_t tg_params_numel(const tg_params *ps)
{
    int64_t n = 0;
    TG__NONNULL(ps, 0);
    for (int i = 0; i < ps->count; i++) n += ps->items[i]->value.numel;
    return n;
}

/* bytes [begin, end) * ZERO_CHUNK of one gradient */
#define ZERO_CHUNK ((int64_t)1 << 16)
static void zero_range(void *ctx, int64_t begin, int64_t end, int tid)
{
    const tg_tensor *g = ctx;
    const int64_t bytes = g->numel * (int64_t)tg_dtype_size(g->dtype);
    const int64_t lo = begin * ZERO_CHUNK, hi = end * ZERO_CHUNK < bytes ? end * ZERO_CHUNK : bytes;
    (void)tid;
    memset((char *)g->data + lo, 0, (size_t)(hi - lo));
}

/* big gradients on the thread pool: a GPT-2-sized model zeroes 340 MB a step */
void tg_params_zero_grad(tg_params *ps)
{
    TG__NONNULL_VOID(ps);
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_tensor *g = &ps->items[i]->grad;
        const int64_t bytes = g->numel * (int64_t)tg_dtype_size(g->dtype);
        if (bytes >= 4 * ZERO_CHUNK)
            tg_parallel_for((bytes + ZERO_CHUNK - 1) / ZERO_CHUNK, 1, zero_range, g);
        else
            memset(g->data, 0, (size_t)bytes);
    }
}

tg_status tg_params_alloc_state(tg_params *ps, int slot)
{
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (slot < 0 || slot >= TG_PARAM_STATE)
        return tg_set_error(TG_ERR_INVALID, "params: optimizer slot %d outside [0, %d)", slot,
                            TG_PARAM_STATE);
    for (int i = 0; i < ps->count; i++) {
        tg_param *p = ps->items[i];
        if (p->state[slot].data) continue;
        if (ps->shapes_only)
            return tg_set_error(TG_ERR_STATE, "params: a shapes-only store has no optimizer "
                                "state");
        tg_status st = tensor_alloc(&p->state[slot], ps->dtype, p->value.rank, p->value.shape,
                                    p->value.numel, false);
        if (st) return st;
    }
    return TG_OK;
}

/* ---- initialisers ---- */

void tg_init_constant(tg_tensor *t, double v)
{
    if (tg_tensor_check(t, "tg_init_constant")) return;
    for (int64_t i = 0; i < t->numel; i++) tg_tensor_set(t, i, v);
}

void tg_init_uniform(tg_tensor *t, double lo, double hi, tg_rng *rng)
{
    if (tg_tensor_check(t, "tg_init_uniform")) return;
    TG__NONNULL_VOID(rng);
    for (int64_t i = 0; i < t->numel; i++)
        tg_tensor_set(t, i, lo + (hi - lo) * tg_rng_uniform(rng));
}

void tg_init_normal(tg_tensor *t, double mean, double std, tg_rng *rng)
{
    if (tg_tensor_check(t, "tg_init_normal")) return;
    TG__NONNULL_VOID(rng);
    for (int64_t i = 0; i < t->numel; i++)
        tg_tensor_set(t, i, mean + std * tg_rng_normal(rng));
}

void tg_init_trunc_normal(tg_tensor *t, double mean, double std, double lo, double hi,
                          tg_rng *rng)
{
    if (tg_tensor_check(t, "tg_init_trunc_normal")) return;
    TG__NONNULL_VOID(rng);
    for (int64_t i = 0; i < t->numel; i++) {
        double v = mean;
        for (int tries = 0; tries < 1000; tries++) {
            v = mean + std * tg_rng_normal(rng);
            if (v >= lo && v <= hi) break;
            v = mean;
        }
        tg_tensor_set(t, i, v);
    }
}

int64_t tg_fan_in(const tg_tensor *t)
{
    if (tg_tensor_check_shape(t, "tg_fan_in")) return 0;
    if (t->rank < 2) return t->rank == 1 ? t->shape[0] : 1;
    int64_t fan = t->shape[1];
    for (int i = 2; i < t->rank; i++) fan *= t->shape[i];
    return fan;
}

void tg_init_kaiming_uniform(tg_tensor *t, double a, tg_rng *rng)
{
    if (tg_tensor_check(t, "tg_init_kaiming_uniform")) return;
    TG__NONNULL_VOID(rng);
    int64_t fan = tg_fan_in(t);
    double gain = sqrt(2.0 / (1.0 + a * a));
    double bound = fan > 0 ? gain * sqrt(3.0 / (double)fan) : 0.0;
    tg_init_uniform(t, -bound, bound, rng);
}
