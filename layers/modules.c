/*
 * modules.c - nn.Linear, nn.LayerNorm, nn.BatchNorm1d and the MLP as
 * parameter-holding structs (see modules.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "modules.h"
#include "ops.h"

tg_status tg_name_join(char *buf, size_t len, const char *prefix, const char *name)
{
    TG__NONNULL(buf, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    int n = (prefix && *prefix) ? snprintf(buf, len, "%s.%s", prefix, name)
                                : snprintf(buf, len, "%s", name);
    if (n < 0 || (size_t)n >= len)
        return tg_set_error(TG_ERR_LIMIT, "parameter name '%s.%s' is too long", prefix, name);
    return TG_OK;
}

tg_status tg_linear_mod_init(tg_linear_mod *m, tg_params *ps, const char *prefix,
                             const char *name, int64_t in, int64_t out, bool bias, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    char full[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->in = in;
    m->out = out;
    if (in <= 0 || out <= 0)
        return tg_set_error(TG_ERR_INVALID, "%s: Linear(%lld, %lld) needs positive sizes", name,
                            (long long)in, (long long)out);
    if ((st = tg_name_join(full, sizeof full, prefix, name))) return st;
    m->weight = tg_params_addf(ps, 2, (int64_t[]){out, in}, "%s.weight", full);
    if (!m->weight) return TG_ERR_INVALID;
    if (bias && !(m->bias = tg_params_addf(ps, 1, (int64_t[]){out}, "%s.bias", full)))
        return TG_ERR_INVALID;
    if (rng) {
        double bound = 1.0 / sqrt((double)in);
        tg_init_kaiming_uniform(&m->weight->value, sqrt(5.0), rng);
        if (m->bias) tg_init_uniform(&m->bias->value, -bound, bound, rng);
    }
    return TG_OK;
}

tg_node *tg_linear_mod_build(tg_graph *g, const tg_linear_mod *m, tg_node *x)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    if (tg_scope_push(g, m->name)) return NULL;
    tg_node *y = tg_linear(g, x, tg_param_node(g, m->weight),
                           m->bias ? tg_param_node(g, m->bias) : NULL);
    tg_scope_pop(g);
    return y;
}

tg_status tg_layernorm_mod_init(tg_layernorm_mod *m, tg_params *ps, const char *prefix,
                                const char *name, int64_t n)
{
    return tg_layernorm_mod_init_bias(m, ps, prefix, name, n, true);
}

tg_status tg_layernorm_mod_init_bias(tg_layernorm_mod *m, tg_params *ps, const char *prefix,
                                     const char *name, int64_t n, bool bias)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    char full[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->n = n;
    m->eps = TG_LAYER_NORM_EPS;
    if (n <= 0) return tg_set_error(TG_ERR_INVALID, "%s: LayerNorm(%lld) needs a positive size",
                                    name, (long long)n);
    if ((st = tg_name_join(full, sizeof full, prefix, name))) return st;
    if (!(m->weight = tg_params_addf(ps, 1, &n, "%s.weight", full)) ||
        (bias && !(m->bias = tg_params_addf(ps, 1, &n, "%s.bias", full))))
        return TG_ERR_INVALID;
    tg_init_constant(&m->weight->value, 1.0);
    return TG_OK;
}

tg_node *tg_layernorm_mod_build(tg_graph *g, const tg_layernorm_mod *m, tg_node *x)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    if (tg_scope_push(g, m->name)) return NULL;
    tg_node *y = tg_layer_norm(g, x, 1, &m->n, tg_param_node(g, m->weight),
                               m->bias ? tg_param_node(g, m->bias) : NULL, m->eps);
    tg_scope_pop(g);
    return y;
}

tg_status tg_batchnorm_mod_init(tg_batchnorm_mod *m, tg_params *ps, const char *prefix,
                                const char *name, int64_t C)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    char full[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->C = C;
    m->eps = TG_BATCH_NORM_EPS;
    m->momentum = TG_BATCH_NORM_MOMENTUM;
    if (C <= 0) return tg_set_error(TG_ERR_INVALID, "%s: BatchNorm1d(%lld) needs a positive "
                                    "number of channels", name, (long long)C);
    if ((st = tg_name_join(full, sizeof full, prefix, name))) return st;
    const tg_dtype dt = tg_params_dtype(ps);
    if (!(m->weight = tg_params_addf(ps, 1, &C, "%s.weight", full)) ||
        !(m->bias = tg_params_addf(ps, 1, &C, "%s.bias", full)))
        return TG_ERR_INVALID;
    char key[TG_NAME_MAX + 32];
    snprintf(key, sizeof key, "%s.running_mean", full);
    if (!(m->running_mean = tg_params_add_buffer(ps, key, dt, 1, &C))) return TG_ERR_INVALID;
    snprintf(key, sizeof key, "%s.running_var", full);
    if (!(m->running_var = tg_params_add_buffer(ps, key, dt, 1, &C))) return TG_ERR_INVALID;
    snprintf(key, sizeof key, "%s.num_batches_tracked", full);
    if (!(m->num_batches_tracked = tg_params_add_buffer(ps, key, TG_I64, 0, NULL)))
        return TG_ERR_INVALID;
    tg_init_constant(&m->weight->value, 1.0);
    tg_init_constant(&m->running_var->value, 1.0);
    return TG_OK;
}

tg_node *tg_batchnorm_mod_build(tg_graph *g, const tg_batchnorm_mod *m, tg_node *x)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    if (tg_scope_push(g, m->name)) return NULL;
    /* the leaves one by one: nodes in F.batch_norm's argument order, whatever the compiler's */
    tg_node *rm = tg_param_node(g, m->running_mean), *rv = tg_param_node(g, m->running_var);
    tg_node *w = tg_param_node(g, m->weight), *b = tg_param_node(g, m->bias);
    tg_node *nbt = tg_param_node(g, m->num_batches_tracked);
    tg_node *y = tg_batch_norm(g, x, rm, rv, w, b, nbt, m->momentum, m->eps);
    tg_scope_pop(g);
    return y;
}

tg_status tg_mlp_mod_init(tg_mlp_mod *m, tg_params *ps, const char *prefix, const char *name,
                          int64_t d_in, int64_t d_hidden, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    char full[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    if ((st = tg_name_join(full, sizeof full, prefix, name)) ||
        (st = tg_linear_mod_init(&m->fc0, ps, full, "0", d_in, d_hidden, true, rng)) ||
        (st = tg_linear_mod_init(&m->fc2, ps, full, "2", d_hidden, d_in, true, rng)))
        return st;
    return TG_OK;
}

/* forward: Linear -> GELU (exact erf form) -> Linear */
tg_node *tg_mlp_mod_build(tg_graph *g, const tg_mlp_mod *m, tg_node *x)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    if (tg_scope_push(g, m->name)) return NULL;
    tg_node *h = tg_gelu(g, tg_linear_mod_build(g, &m->fc0, x), TG_GELU_NONE);
    tg_node *y = tg_linear_mod_build(g, &m->fc2, h);
    tg_scope_pop(g);
    return y;
}
