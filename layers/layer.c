/*
 * layer.c - the layer registry and the generic KEY=VALUE -> config struct
 * reader (see layer.h).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "layer.h"
#include "layers.h"

static const tg_layer_class *const classes[] = {
    &tg_full_attention_class,
    &tg_attention_layer_class,
    &tg_tsa_class,
    &tg_seg_merging_class,
    &tg_axial_attention_class,
    &tg_assa_topk_class,
    &tg_assa_paper_class,
    &tg_crossformer_class,
    &tg_linear_forecast_class,
    &tg_dlinear_class,
    &tg_patchtst_class,
    &tg_itransformer_class,
    &tg_gpt_class,
};

#define N_CLASSES (int)(sizeof classes / sizeof *classes)

int tg_layer_class_count(void) { return N_CLASSES; }

const tg_layer_class *tg_layer_class_at(int i)
{
    return i >= 0 && i < N_CLASSES ? classes[i] : NULL;
}

const tg_layer_class *tg_layer_class_find(const char *name)
{
    TG__NONNULL(name, NULL);
    for (int i = 0; i < N_CLASSES; i++)
        if (!strcmp(classes[i]->name, name)) return classes[i];
    return NULL;
}

struct tg_layer {
    const tg_layer_class *cls;
    void                 *config;
    void                 *state;
    int                   n_inputs;
    tg_layer_input        inputs[TG_MAX_LAYER_INPUTS];
};

tg_status tg_layer_read_config(const tg_layer_class *cls, tg_config *cfg, void *config)
{
    TG__NONNULL(cls, TG_ERR_INVALID);
    TG__NONNULL(config, TG_ERR_INVALID);
    int n = tg_keys_count(cls->keys, 1 << 20);
    tg_value *v = tg__calloc((size_t)n + 1, sizeof *v);
    if (!v) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", cls->name);
    tg_status st = tg_keys_resolve(cls->keys, n, cfg, cls->name, "key", 0, v);
    if (!st && (st = tg_keys_fill_struct(cls->keys, n, v, config)))
        tg_set_error(st, "%s: %s", cls->name, tg_last_error());
    for (int i = 0; i < n; i++) tg_value_free(&v[i]);
    tg__free(v);
    return st;
}

tg_layer *tg_layer_new(const char *name, tg_config *cfg, tg_params *ps, const char *prefix,
                       tg_rng *rng)
{
    const tg_layer_class *cls = tg_layer_class_find(name);
    if (!cls) {
        char list[512] = "";
        size_t k = 0;
        for (int i = 0; i < N_CLASSES; i++)
            k += (size_t)snprintf(list + k, k < sizeof list ? sizeof list - k : 0, "%s%s",
                                  i ? ", " : "", classes[i]->name);
        tg_set_error(TG_ERR_NOT_FOUND, "unknown layer '%s' (layers: %s)", name ? name : "(null)",
                     list);
        return NULL;
    }
    if (!ps) {
        tg_set_error(TG_ERR_INVALID, "%s: parameter store is NULL", cls->name);
        return NULL;
    }
    tg_layer *l = tg__calloc(1, sizeof *l);
    if (!l || !(l->config = tg__calloc(1, cls->config_size)) ||
        !(l->state = tg__calloc(1, cls->state_size))) {
        tg_layer_free(l);
        tg_set_error(TG_ERR_NOMEM, "%s: out of memory", cls->name);
        return NULL;
    }
    l->cls = cls;
    if (tg_layer_read_config(cls, cfg, l->config) || cls->check(l->config) ||
        cls->init(l->state, l->config, ps, prefix ? prefix : "", rng)) {
        tg_layer_free(l);
        return NULL;
    }
    l->n_inputs = cls->inputs(l->config, l->inputs);
    return l;
}

void tg_layer_free(tg_layer *l)
{
    if (!l) return;
    tg__free(l->config);
    tg__free(l->state);
    tg__free(l);
}

int tg_layer_input_count(const tg_layer *l)
{
    TG__NONNULL(l, 0);
    return l->n_inputs;
}

const tg_layer_input *tg_layer_input_at(const tg_layer *l, int i)
{
    TG__NONNULL(l, NULL);
    return i >= 0 && i < l->n_inputs ? &l->inputs[i] : NULL;
}

tg_status tg_layer_build(const tg_layer *l, tg_graph *g, tg_node *const *inputs,
                         tg_layer_outputs *out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    out->y = out->attn = NULL;
    TG__NONNULL(l, TG_ERR_INVALID);
    TG__NONNULL(g, TG_ERR_INVALID);
    TG__NONNULL(inputs, TG_ERR_INVALID);
    tg_status st = l->cls->build(l->state, g, inputs, out);
    if (!st && tg_graph_error(g)) st = TG_ERR_INVALID;
    if (st && tg_graph_error(g)) tg_set_error(st, "%s", tg_graph_error(g));
    return st;
}

const void *tg_layer_config(const tg_layer *l)
{
    TG__NONNULL(l, NULL);
    return l->config;
}

const char *tg_layer_name(const tg_layer *l)
{
    TG__NONNULL(l, NULL);
    return l->cls->name;
}
