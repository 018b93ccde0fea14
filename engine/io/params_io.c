/*
 * params_io.c - parameter stores to and from safetensors files, by
 * state_dict name (tensor_io.h).
 *
 * Loading is load_state_dict(strict=True) by default: every parameter must
 * be in the file and every file tensor must be a parameter, with the same
 * shape and a float dtype. The messages reuse PyTorch's wording ("Missing
 * key(s) in state_dict", "Unexpected key(s) in state_dict", "size mismatch
 * for ...") so a user who knows one knows the other. Everything is checked
 * before the first value is copied, so a failed load leaves the store as it
 * was. Gradients, optimizer state and frozen flags are never touched.
 *
 * Buffers (params.h: running_mean, running_var, num_batches_tracked) are
 * state_dict entries like the parameters: required by a strict load, saved
 * after the parameters, in their own dtype (int64 stays int64, as PyTorch
 * writes num_batches_tracked).
 *
 * Tied weights (tg_params_alias) load from either name, or both when they
 * agree, and are saved under both, as torch.save(model.state_dict()) does.
 *
 * Not here: renaming keys, partial prefixes, or loading into a store that
 * lacks the parameters (the layers create them; this only fills values).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "st_internal.h"
#include "tensor_io.h"

#define NAME_LIST_MAX 600   /* characters of names listed in one message */

/* Append "\"name\"" to a comma-separated list, cut with "..." when long. */
static void list_add(char *buf, size_t cap, int *count, const char *name)
{
    size_t k = strlen(buf);
    if (k + strlen(name) + 8 < cap && k < NAME_LIST_MAX)
        snprintf(buf + k, cap - k, "%s\"%s\"", *count ? ", " : "", name);
    else if (!strstr(buf, ", ..."))
        snprintf(buf + k, cap - k, ", ...");
    (*count)++;
}

/* Store entry i: the parameters, then the buffers. */
static tg_param *entry_at(const tg_params *ps, int i)
{
    int n = tg_params_count(ps);
    return i < n ? tg_params_at(ps, i) : tg_params_buffer_at(ps, i - n);
}

static int entry_count(const tg_params *ps)
{
    return tg_params_count(ps) + tg_params_buffer_count(ps);
}

/* File tensor t (index i of f) for entry p: an int64 buffer takes an integer
 * tensor, everything else a float one; the shapes must be equal. */
static tg_status check_pair(const tg_st_file *f, int i, const tg_param *p, const tg_tensor *t,
                            const char *path)
{
    bool int_buffer = p->buffer && p->value.dtype == TG_I64;
    if (int_buffer ? t->dtype != TG_I64 : !tg_dtype_is_float(t->dtype))
        return tg_set_error(TG_ERR_DTYPE, "%s: tensor '%s' has dtype %s, expected %s", path,
                            p->name, tg__st_file_dtype(f, i),
                            int_buffer ? "an integer tensor (I64) for an int64 buffer"
                                       : "a float tensor (F32, F64, F16 or BF16) for a parameter");
    if (!tg_tensor_same_shape(&p->value, t)) {
        char a[128], b[128];
        return tg_set_error(TG_ERR_SHAPE, "%s: size mismatch for %s: copying a param with shape "
                            "%s from checkpoint, the shape in current model is %s", path,
                            p->name, tg_shape_str(t->rank, t->shape, a, sizeof a),
                            tg_shape_str(p->value.rank, p->value.shape, b, sizeof b));
    }
    return TG_OK;
}

/* Whether the file has p under one of its aliases. */
static bool alias_in_file(const tg_params *ps, const tg_st_file *f, const tg_param *p)
{
    for (int i = 0; i < tg_params_alias_count(ps); i++)
        if (tg_params_alias_target(ps, i) == p && tg_st_find(f, tg_params_alias_name(ps, i)))
            return true;
    return false;
}

/* A tied weight stored under both its names (as torch.save of a state_dict
 * writes it) must hold the same values under both. */
static tg_status check_ties(const tg_params *ps, const tg_st_file *f, const char *path)
{
    for (int i = 0; i < tg_params_alias_count(ps); i++) {
        const tg_param *p = tg_params_alias_target(ps, i);
        const char *alias = tg_params_alias_name(ps, i);
        const tg_tensor *a = tg_st_find(f, alias), *b = tg_st_find(f, p->name);
        if (!a || !b) continue;
        for (int64_t k = 0; k < a->numel; k++) {
            double x = tg_tensor_get(a, k), y = tg_tensor_get(b, k);
            if (x != y && !(x != x && y != y))
                return tg_set_error(TG_ERR_INVALID, "%s: '%s' is tied to '%s' (the same tensor), "
                                    "but the file's values differ (element %lld: %.9g vs %.9g)",
                                    path, alias, p->name, (long long)k, x, y);
        }
    }
    return TG_OK;
}

/* Whether a load with these flags sets entry p (TG_LOAD_PARAMS_ONLY /
 * TG_LOAD_BUFFERS_ONLY leave the other kind alone). */
static bool loads(const tg_param *p, unsigned flags)
{
    if (flags & TG_LOAD_PARAMS_ONLY) return !p->buffer;
    if (flags & TG_LOAD_BUFFERS_ONLY) return p->buffer;
    return true;
}

/* Steps 1-4 of a load: everything checked before anything is copied. */
static tg_status load_check(const tg_params *ps, const tg_st_file *f, const char *path,
                            unsigned flags)
{
    char list[NAME_LIST_MAX + 64];
    int count = 0, wanted = 0;
    list[0] = '\0';
    /* 1. parameters and buffers the file lacks */
    for (int i = 0; i < entry_count(ps); i++) {
        const tg_param *p = entry_at(ps, i);
        if (!loads(p, flags)) continue;
        wanted++;
        if (!(flags & TG_LOAD_ALLOW_MISSING) && !tg_st_find(f, p->name) &&
            !alias_in_file(ps, f, p))
            list_add(list, sizeof list, &count, p->name);
    }
    if (count)
        return tg_set_error(TG_ERR_NOT_FOUND, "%s: Missing key(s) in state_dict: %s (%d of %d "
                            "%s; TG_LOAD_ALLOW_MISSING keeps their values)", path, list, count,
                            wanted, flags & TG_LOAD_BUFFERS_ONLY ? "buffers"
                            : (flags & TG_LOAD_PARAMS_ONLY) || !tg_params_buffer_count(ps)
                                ? "parameters" : "parameters and buffers");
    /* 2. file tensors that are no parameter or buffer (the kind a *_ONLY load
     * leaves alone is no surprise: it is the model's) */
    for (int i = 0; !(flags & TG_LOAD_ALLOW_EXTRA) && i < tg_st_count(f); i++)
        if (!tg_params_find(ps, tg_st_name(f, i))) list_add(list, sizeof list, &count,
                                                            tg_st_name(f, i));
    if (count)
        return tg_set_error(TG_ERR_NOT_FOUND, "%s: Unexpected key(s) in state_dict: %s (%d of %d "
                            "tensors; TG_LOAD_ALLOW_EXTRA ignores them)", path, list, count,
                            tg_st_count(f));
    /* 3. shapes and dtypes of the pairs */
    tg_status st;
    for (int i = 0; i < tg_st_count(f); i++) {
        const tg_param *p = tg_params_find(ps, tg_st_name(f, i));
        if (p && loads(p, flags) && (st = check_pair(f, i, p, tg_st_tensor(f, i), path)))
            return st;
    }
    /* 4. tied names (tg_params_alias) given twice must agree */
    return flags & TG_LOAD_BUFFERS_ONLY ? TG_OK : check_ties(ps, f, path);
}

tg_status tg_params_load(tg_params *ps, const char *path, unsigned flags)
{
    if (!ps || !path) return tg_set_error(TG_ERR_INVALID, "params load: NULL argument");
    const unsigned known = TG_LOAD_ALLOW_MISSING | TG_LOAD_ALLOW_EXTRA | TG_LOAD_PARAMS_ONLY |
                           TG_LOAD_BUFFERS_ONLY;
    if (flags & ~known)
        return tg_set_error(TG_ERR_INVALID, "%s: unknown load flags 0x%x", path, flags);
    if ((flags & TG_LOAD_PARAMS_ONLY) && (flags & TG_LOAD_BUFFERS_ONLY))
        return tg_set_error(TG_ERR_INVALID, "%s: TG_LOAD_PARAMS_ONLY and TG_LOAD_BUFFERS_ONLY "
                            "exclude each other", path);
    tg_st_file *f;
    tg_status st = tg_st_load(path, &f);
    if (st) return st;
    if (!(st = load_check(ps, f, path, flags))) {
        /* 5. copy (cannot fail now: shapes equal, both float or both int64) */
        for (int i = 0; i < tg_st_count(f); i++) {
            tg_param *p = tg_params_find(ps, tg_st_name(f, i));
            if (p && loads(p, flags)) tg_tensor_copy(&p->value, tg_st_tensor(f, i));
        }
    }
    tg_st_free(f);
    return st;
}

tg_status tg_params_save(const tg_params *ps, const char *path, int n_meta,
                         const char *const *meta_keys, const char *const *meta_values)
{
    if (!ps || !path) return tg_set_error(TG_ERR_INVALID, "params save: NULL argument");
    int n = tg_params_count(ps), n_alias = tg_params_alias_count(ps);
    int n_buf = tg_params_buffer_count(ps), total = n + n_alias + n_buf;
    const char **names = tg__malloc(((size_t)total + 1) * sizeof *names);
    const tg_tensor **ts = tg__malloc(((size_t)total + 1) * sizeof *ts);
    tg_status st;
    if (!names || !ts) {
        st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
    } else {
        for (int i = 0; i < n; i++) {
            const tg_param *p = tg_params_at(ps, i);
            names[i] = p->name;
            ts[i] = &p->value;
        }
        for (int i = 0; i < n_alias; i++) {   /* tied names too, as PyTorch's state_dict */
            names[n + i] = tg_params_alias_name(ps, i);
            ts[n + i] = &tg_params_alias_target(ps, i)->value;
        }
        for (int i = 0; i < n_buf; i++) {     /* buffers, in their own dtype */
            const tg_param *b = tg_params_buffer_at(ps, i);
            names[n + n_alias + i] = b->name;
            ts[n + n_alias + i] = &b->value;
        }
        st = tg_st_save(path, total, names, ts, n_meta, meta_keys, meta_values);
    }
    tg__free(names);
    tg__free(ts);
    return st;
}
