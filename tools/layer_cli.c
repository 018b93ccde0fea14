/*
 * layer_cli.c - building a layer graph for the command line (see layer_cli.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "layer_cli.h"

int tg_cli_set(const char *cmd, tg_config *cfg, const char *item)
{
    if (tg_config_set(cfg, item)) return tg_cli_fail(cmd, "--set %s: %s", item, tg_last_error());
    return 0;
}

int tg_cli_set_args(tg_args *a, const char *cmd, tg_config *cfg)
{
    const char *v;
    if (!tg_args_value(a, &v) || tg_cli_set(cmd, cfg, v)) return 2;
    while (a->i < a->argc && a->argv[a->i][0] != '-' && strchr(a->argv[a->i], '='))
        if (tg_cli_set(cmd, cfg, a->argv[a->i++])) return 2;
    return 0;
}

int tg_cli_inputs_add(const char *cmd, tg_cli_inputs *in, const char *item)
{
    const char *eq = strchr(item, '=');
    if (!eq || eq == item || !eq[1])
        return tg_cli_fail(cmd, "--input wants NAME=FILE.npy, got '%s'", item);
    if (in->n == TG_MAX_LAYER_INPUTS)
        return tg_cli_fail(cmd, "more than %d --input files", TG_MAX_LAYER_INPUTS);
    size_t len = (size_t)(eq - item);
    for (int i = 0; i < in->n; i++)
        if (strlen(in->name[i]) == len && !strncmp(in->name[i], item, len))
            return tg_cli_fail(cmd, "--input %.*s given twice", (int)len, item);
    tg_tensor *t = NULL;
    if (tg_npy_load(eq + 1, &t)) return tg_cli_fail(cmd, "--input %s", tg_last_error());
    char *name = malloc(len + 1);
    if (name) {
        memcpy(name, item, len);
        name[len] = '\0';
    } else {
        tg_tensor_free(t);
        return tg_cli_fail(cmd, "out of memory");
    }
    in->name[in->n] = name;
    in->t[in->n++] = t;
    return 0;
}

void tg_cli_inputs_free(tg_cli_inputs *in)
{
    for (int i = 0; i < in->n; i++) {
        free(in->name[i]);
        tg_tensor_free(in->t[i]);
    }
    in->n = 0;
}

static const tg_tensor *file_for(const tg_cli_inputs *files, const char *name)
{
    for (int i = 0; files && i < files->n; i++)
        if (!strcmp(files->name[i], name)) return files->t[i];
    return NULL;
}

static const tg_layer_key *key_of(const tg_layer_class *cls, const char *name, size_t len)
{
    for (const tg_layer_key *k = cls->keys; k->name; k++)
        if (strlen(k->name) == len && !strncmp(k->name, name, len)) return k;
    return NULL;
}

/* Put shape keys the user did not give into cfg, read off the input files. */
static int infer_shape_keys(const char *cmd, const tg_layer_class *cls, tg_config *cfg,
                            const tg_cli_inputs *files)
{
    unsigned char probe[4096];
    tg_layer_input spec[TG_MAX_LAYER_INPUTS];
    if (cls->config_size > sizeof probe) return tg_cli_fail(cmd, "internal: config too large");
    memset(probe, 0, sizeof probe);
    if (tg_layer_read_config(cls, cfg, probe)) return tg_cli_fail(cmd, "%s", tg_last_error());
    int n = cls->inputs(probe, spec);
    for (int i = 0; i < n; i++) {
        const tg_tensor *t = file_for(files, spec[i].name);
        if (!t) continue;
        const char *d = spec[i].dims;
        for (int dim = 0; *d; dim++) {
            while (*d == ' ') d++;
            size_t len = strcspn(d, " ");
            const tg_layer_key *k = key_of(cls, d, len);
            if (k && !tg_config_get(cfg, k->name)) {
                char item[256];
                if (k->type == TG_KEY_INT_LIST) {
                    size_t at = (size_t)snprintf(item, sizeof item, "%s=[", k->name);
                    for (int r = 0; r < t->rank && at < sizeof item; r++)
                        at += (size_t)snprintf(item + at, sizeof item - at, r ? ",%lld" : "%lld",
                                               (long long)t->shape[r]);
                    if (at < sizeof item) snprintf(item + at, sizeof item - at, "]");
                } else if (k->type == TG_KEY_INT && dim < t->rank) {
                    snprintf(item, sizeof item, "%s=%lld", k->name, (long long)t->shape[dim]);
                } else {
                    d += len;
                    continue;
                }
                if (tg_cli_set(cmd, cfg, item)) return 2;
            }
            d += len;
        }
    }
    return 0;
}

int tg_cli_layer_build(tg_cli_layer *c, const char *cmd, const char *name, tg_config *cfg,
                       const tg_cli_inputs *files, tg_dtype dt, tg_rng *rng, bool grads)
{
    char a[128], b[128];
    memset(c, 0, sizeof *c);
    c->cmd = cmd;
    const tg_layer_class *cls = tg_layer_class_find(name);
    if (!cls) {
        tg_layer_free(tg_layer_new(name, NULL, NULL, "", NULL));   /* for the message */
        return tg_cli_fail(cmd, "%s (see tgraph layers)", tg_last_error());
    }
    if (files && infer_shape_keys(cmd, cls, cfg, files)) return 2;
    if (tg_cli_check_memory(cmd, name, cfg, dt)) return 2;
    if (!(c->ps = tg_params_new(dt))) return tg_cli_fail(cmd, "%s", tg_last_error());
    if (!(c->layer = tg_layer_new(name, cfg, c->ps, "", rng)))
        return tg_cli_fail(cmd, "%s", tg_last_error());
    c->n_in = tg_layer_input_count(c->layer);
    for (int i = 0; files && i < files->n; i++) {
        bool known = false;
        for (int k = 0; k < c->n_in; k++) known |= !strcmp(tg_layer_input_at(c->layer, k)->name,
                                                           files->name[i]);
        if (!known) {
            char list[128] = "";
            for (int k = 0, at = 0; k < c->n_in; k++)
                at += snprintf(list + at, sizeof list - (size_t)at, "%s%s", k ? ", " : "",
                               tg_layer_input_at(c->layer, k)->name);
            return tg_cli_fail(cmd, "--input %s: %s has no input of that name with this config "
                               "(inputs: %s; see tgraph layers %s)", files->name[i], name, list,
                               name);
        }
    }
    if (!(c->g = tg_graph_new(dt))) return tg_cli_fail(cmd, "%s", tg_last_error());
    for (int i = 0; i < c->n_in; i++) {
        const tg_layer_input *spec = tg_layer_input_at(c->layer, i);
        const tg_tensor *t = file_for(files, spec->name);
        if (files && !t)
            return tg_cli_fail(cmd, "missing --input %s=FILE.npy (%s wants %s shaped %s: %s)",
                               spec->name, name, spec->name,
                               tg_shape_str(spec->rank, spec->shape, a, sizeof a), spec->dims);
        if (t && (t->rank != spec->rank || memcmp(t->shape, spec->shape,
                                                   (size_t)t->rank * sizeof *t->shape)))
            return tg_cli_fail(cmd, "--input %s: shape %s does not match the config's %s (%s)",
                               spec->name, tg_shape_str(t->rank, t->shape, a, sizeof a),
                               tg_shape_str(spec->rank, spec->shape, b, sizeof b), spec->dims);
        if (t && spec->ids && t->dtype != TG_I64)
            return tg_cli_fail(cmd, "--input %s: dtype %s, expected int64 token ids in [0, %lld)",
                               spec->name, tg_dtype_name(t->dtype), (long long)spec->ids);
        if (t && !spec->ids && !tg_dtype_is_float(t->dtype))
            return tg_cli_fail(cmd, "--input %s: dtype %s, expected a float array", spec->name,
                               tg_dtype_name(t->dtype));
        c->in[i] = tg_input(c->g, spec->name, spec->ids ? TG_I64 : dt, spec->rank, spec->shape);
        if (t && c->in[i] && tg_node_set(c->in[i], t))
            return tg_cli_fail(cmd, "--input %s: %s", spec->name, tg_last_error());
        /* gradcheck leaves out a gradient through a detached statistic (not the derivative) */
        bool detached = !strcmp(cmd, "gradcheck") &&
                        (cls->grad_detached_inputs >> i & 1u);
        if (grads && spec->differentiable && !detached && c->in[i])
            tg_node_set_requires_grad(c->in[i], true);
    }
    if (tg_layer_build(c->layer, c->g, c->in, &c->out))
        return tg_cli_fail(cmd, "%s", tg_last_error());
    if (c->out.attn) tg_node_keep(c->out.attn);
    return 0;
}

void tg_cli_layer_free(tg_cli_layer *c)
{
    tg_graph_free(c->g);
    tg_layer_free(c->layer);
    tg_params_free(c->ps);
    memset(c, 0, sizeof *c);
}

/* Seeded random data: N(0, 1) for differentiable inputs; for masks 0 or -100
 * (as make_case.py and gradcheck make them); token ids uniform in [0, ids). */
static void fill_input(tg_tensor *t, bool differentiable, int64_t ids, tg_rng *rng)
{
    for (int64_t k = 0; k < t->numel; k++)
        tg_tensor_set(t, k, ids ? (double)tg_rng_below(rng, (uint64_t)ids)
                            : differentiable ? tg_rng_normal(rng)
                                             : (tg_rng_uniform(rng) < 0.3 ? -100.0 : 0.0));
}

tg_status tg_cli_random_input(const tg_layer *layer, int i, tg_node *n, tg_rng *rng)
{
    const tg_layer_input *spec = tg_layer_input_at(layer, i);
    tg_tensor *t = tg_tensor_new(spec->ids ? TG_I64 : TG_F32, spec->rank, spec->shape);
    if (!t) return TG_ERR_NOMEM;   /* tg_tensor_new set the message */
    fill_input(t, spec->differentiable, spec->ids, rng);
    tg_status st = tg_node_set(n, t);
    tg_tensor_free(t);
    return st;
}

int tg_cli_model_size(const char *cmd, const char *name, tg_config *cfg, tg_dtype dt,
                      int64_t *count, int64_t *trainable, int64_t *bytes)
{
    int64_t tr = 0;
    tg_params *ps = tg_params_new_shapes(dt);
    if (!ps) return tg_cli_fail(cmd, "%s", tg_last_error());
    tg_layer *l = tg_layer_new(name, cfg, ps, "", NULL);
    if (!l) {
        tg_params_free(ps);
        return tg_cli_fail(cmd, "%s", tg_last_error());
    }
    *count = 0;
    for (int i = 0; i < tg_params_count(ps); i++) {
        int64_t n = tg_params_at(ps, i)->value.numel;
        *count = n > INT64_MAX - *count ? INT64_MAX : *count + n;
        if (!tg_params_at(ps, i)->frozen) tr = n > INT64_MAX - tr ? INT64_MAX : tr + n;
    }
    if (trainable) *trainable = tr;
    *bytes = tg_params_bytes(ps);
    tg_layer_free(l);
    tg_params_free(ps);
    tg_clear_error();   /* the initialisers' "data is NULL": nothing was to be filled */
    return 0;
}

int tg_cli_mem_limit(const char *cmd, int64_t *limit, const char **source)
{
    const char *env = getenv("TGRAPH_MEM_LIMIT");
    *limit = 0;
    *source = "";
    if (env && *env) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(env, &end, 10);
        int shift = 0;
        if (*end && strchr("KkMmGgTt", *end) && !end[1]) {
            const char *u = strchr("KkMmGgTt", *end);
            shift = 10 * (int)(1 + (u - "KkMmGgTt") / 2);
            end++;
        }
        if (errno || *end || env[0] == '-' || !(env[0] >= '0' && env[0] <= '9') ||
            v > (unsigned long long)(INT64_MAX >> shift))
            return tg_cli_fail(cmd, "TGRAPH_MEM_LIMIT=%s: expected a byte count such as "
                               "8000000000 or 8G", env);
        *limit = (int64_t)(v << shift);
        *source = "TGRAPH_MEM_LIMIT";
        return 0;
    }
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    long long kb;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1 && kb > 0 &&
            kb < (long long)(INT64_MAX / 1024)) {
            *limit = (int64_t)kb * 1024;
            *source = "MemAvailable in /proc/meminfo";
            break;
        }
    fclose(f);
    return 0;
}

int tg_cli_check_memory(const char *cmd, const char *name, tg_config *cfg, tg_dtype dt)
{
    int64_t count, bytes, limit;
    const char *source;
    if (tg_cli_model_size(cmd, name, cfg, dt, &count, NULL, &bytes) ||
        tg_cli_mem_limit(cmd, &limit, &source))
        return 2;
    int64_t need = bytes > INT64_MAX / 2 ? INT64_MAX : 2 * bytes;   /* values and gradients */
    if (!limit) return 0;
    /* what the parameters leave is the cap on the graph's plan (activations,
     * gradients, saved buffers and scratch) */
    if (need <= limit) {
        tg_set_plan_limit(need < limit ? (size_t)(limit - need) : 1);
        return 0;
    }
    return tg_cli_fail(cmd, "%s: its %lld parameters need %lld bytes (%.3g GB: values and "
                       "gradients), more than the %lld bytes (%.3g GB) available (%s); lower "
                       "the sizes, or set TGRAPH_MEM_LIMIT (tgraph(1))", name, (long long)count,
                       (long long)need, (double)need / 1e9, (long long)limit,
                       (double)limit / 1e9, source);
}
