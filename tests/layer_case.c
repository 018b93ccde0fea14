/*
 * layer_case.c - run one PyTorch oracle case (shared/oracle/make_case.py,
 * files under tests/fixtures/oracle/<case>/) through the layer registry and
 * compare the output, the attention weights and every gradient; and the
 * helpers around registry layers the suites share (tt_layer_new, gradcheck,
 * config rejection).
 */
#include <stdio.h>
#include <string.h>

#include "graph_impl.h"
#include "json.h"
#include "layer_case.h"

/* A JSON config value as text in the KEY=VALUE language. */
static void json_text(const tg__json *v, char *buf, size_t len)
{
    size_t at = 0;
    switch (v->kind) {
    case TG__JSON_NULL: snprintf(buf, len, "null"); break;
    case TG__JSON_BOOL: snprintf(buf, len, "%s", v->b ? "true" : "false"); break;
    case TG__JSON_NUMBER:
        if (v->is_int) snprintf(buf, len, "%lld", (long long)v->i);
        else snprintf(buf, len, "%.17g", v->num);
        break;
    case TG__JSON_STRING: snprintf(buf, len, "'%s'", v->str); break;
    case TG__JSON_ARRAY:
        at += (size_t)snprintf(buf, len, "[");
        for (int i = 0; i < v->n && at < len; i++) {
            char item[64];
            json_text(tg__json_at(v, i), item, sizeof item);
            at += (size_t)snprintf(buf + at, len - at, i ? ", %s" : "%s", item);
        }
        if (at < len) snprintf(buf + at, len - at, "]");
        break;
    default: snprintf(buf, len, "?"); break;
    }
}

void *tt_case_json(const char *dir, tg__json_doc *doc)
{
    char path[512];
    void *text;
    size_t len;
    snprintf(path, sizeof path, "%s/%s/case.json", TT_FIXTURES, dir);
    cr_assert_eq(tg_read_file(path, 0, &text, &len), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg__json_parse(text, len, path, NULL, doc), TG_OK, "%s", tg_last_error());
    return text;
}

tg_config *tt_case_config(const char *dir, char *layer, size_t layer_len)
{
    tg__json_doc doc = {0};
    void *text = tt_case_json(dir, &doc);
    const tg__json *l = tg__json_get(doc.root, "layer"), *c = tg__json_get(doc.root, "config");
    cr_assert(l && l->kind == TG__JSON_STRING && c && c->kind == TG__JSON_OBJECT);
    snprintf(layer, layer_len, "%s", l->str);
    tg_config *cfg = tg_config_new();
    for (int k = 0; k < c->n; k++) {
        char item[512], val[400];
        json_text(tg__json_value(c, k), val, sizeof val);
        snprintf(item, sizeof item, "%s=%s", tg__json_key(c, k)->str, val);
        cr_assert_eq(tg_config_set(cfg, item), TG_OK, "%s: %s", item, tg_last_error());
    }
    tg__json_free(&doc);
    tg_free(text);
    return cfg;
}

/* The case's state_dict into ps, as `tgraph run --weights --buffers` loads
 * it: weights.safetensors holds the parameters, buffers.safetensors (when
 * the layer has buffers) every buffer, beside ones the layer recomputes (a
 * position table). */
static void load_state(tg_params *ps, const char *dir, const char *name)
{
    char path[512];
    const bool split = tt_exists(dir, "buffers.safetensors") && tg_params_buffer_count(ps);
    snprintf(path, sizeof path, "%s/%s/weights.safetensors", TT_FIXTURES, dir);
    cr_assert_eq(tg_params_load(ps, path, split ? TG_LOAD_PARAMS_ONLY : 0), TG_OK, "%s: %s",
                 name, tg_last_error());
    if (!split) return;
    snprintf(path, sizeof path, "%s/%s/buffers.safetensors", TT_FIXTURES, dir);
    cr_assert_eq(tg_params_load(ps, path, TG_LOAD_BUFFERS_ONLY | TG_LOAD_ALLOW_EXTRA), TG_OK,
                 "%s: %s", name, tg_last_error());
}

/* After a training-mode forward: every buffer of ps as buffers_after.safetensors
 * has it (the running statistics PyTorch's step left; counters exactly). */
static void assert_buffers_after(const tg_params *ps, const char *dir, const char *name)
{
    char path[512], what[512];
    tg_st_file *f;
    snprintf(path, sizeof path, "%s/%s/buffers_after.safetensors", TT_FIXTURES, dir);
    cr_assert_eq(tg_st_load(path, &f), TG_OK, "%s", tg_last_error());
    cr_assert_gt(tg_params_buffer_count(ps), 0, "%s: a training case without buffers", name);
    for (int i = 0; i < tg_params_buffer_count(ps); i++) {
        const tg_param *p = tg_params_buffer_at(ps, i);
        const tg_tensor *want = tg_st_find(f, p->name);
        cr_assert_not_null(want, "%s: buffers_after lacks %s", name, p->name);
        snprintf(what, sizeof what, "%s: buffer %s after the forward", name, p->name);
        if (p->value.dtype == TG_I64) {
            cr_assert(want->dtype == TG_I64 && want->numel == p->value.numel, "%s", what);
            for (int64_t k = 0; k < want->numel; k++)
                cr_assert_eq(((const int64_t *)p->value.data)[k],
                             ((const int64_t *)want->data)[k], "%s [%lld]", what, (long long)k);
        } else {
            tt_assert_close(&p->value, want, 1e-6, 1e-5, what);
        }
    }
    tg_st_free(f);
}

/* plan 0: default; 1: shared values; 2: shared values and recompute */
static void run_oracle_case(const char *name, double atol, double rtol, int plan)
{
    char dir[256], path[512], what[512];
    snprintf(dir, sizeof dir, "oracle/%s", name);
    char label[160];
    snprintf(label, sizeof label, "%s%s", name,
             plan == 2 ? " (recompute)" : plan ? " (shared values)" : "");
    name = label;
    tt_layer t = tt_case_layer(dir, &(tt_layer_opts){.no_graph = true});
    tg_params *ps = t.ps;
    tg_layer *l = t.l;
    load_state(ps, dir, name);
    /* a case made with --train (BatchNorm) runs in training mode */
    const bool training = tt_exists(dir, "buffers_after.safetensors");

    tg_graph *g = tg_graph_new(TG_F32);
    tg_graph_set_training(g, training);
    tg_graph_set_share_values(g, plan > 0);
    tg_graph_set_recompute(g, plan == 2);
    tg_node *in[TG_MAX_LAYER_INPUTS];
    tg_tensor *x[TG_MAX_LAYER_INPUTS];
    int n = tg_layer_input_count(l);
    for (int i = 0; i < n; i++) {
        const tg_layer_input *spec = tg_layer_input_at(l, i);
        char file[64];
        snprintf(file, sizeof file, "%s.npy", spec->name);
        x[i] = tt_load(dir, file);
        in[i] = tg_input(g, spec->name, spec->ids ? TG_I64 : TG_F32, spec->rank, spec->shape);
        cr_assert_eq(tg_node_set(in[i], x[i]), TG_OK, "%s input %s: %s", name, spec->name,
                     tg_last_error());
        if (spec->differentiable) tg_node_set_requires_grad(in[i], true);
    }
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(l, g, in, &out), TG_OK, "%s: %s", name, tg_last_error());
    if (out.attn) tg_node_keep(out.attn);
    /* every planned byte starts as NaN: a kernel that reads memory nobody
     * wrote (a value freed too early, a gradient it adds to that was never
     * zeroed) spreads NaN into the compared results */
    cr_assert_eq(tg_graph_plan(g), TG_OK, "%s: %s", name, tg_last_error());
    memset(g->block, 0xff, g->block_bytes);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s: %s", name, tg_last_error());

    tg_tensor *y = tt_load(dir, "y.npy");
    snprintf(what, sizeof what, "%s: y", name);
    tt_assert_close(tg_node_value(out.y), y, atol, rtol, what);
    if (tt_exists(dir, "attn.npy")) {
        cr_assert_not_null(out.attn, "%s: the case has attention weights, the layer gave none",
                           name);
        tg_tensor *a = tt_load(dir, "attn.npy");
        snprintf(what, sizeof what, "%s: attn", name);
        tt_assert_close(tg_node_value(out.attn), a, atol, rtol, what);
        tg_tensor_free(a);
    }

    if (training) assert_buffers_after(ps, dir, name);

    tg_tensor *dy = tt_load(dir, "dy.npy");
    cr_assert_eq(tg_graph_backward(g, out.y, dy), TG_OK, "%s: %s", name, tg_last_error());
    tg_st_file *grads;
    snprintf(path, sizeof path, "%s/%s/grads.safetensors", TT_FIXTURES, dir);
    cr_assert_eq(tg_st_load(path, &grads), TG_OK, "%s", tg_last_error());
    int checked = 0;
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_param *p = tg_params_at(ps, i);
        const tg_tensor *want = tg_st_find(grads, p->name);
        cr_assert_not_null(want, "%s: no expected gradient for parameter %s", name, p->name);
        snprintf(what, sizeof what, "%s: grad %s", name, p->name);
        tt_assert_close(&p->grad, want, atol, rtol, what);
        checked++;
    }
    for (int i = 0; i < n; i++) {
        const tg_layer_input *spec = tg_layer_input_at(l, i);
        if (!spec->differentiable) continue;
        char key[80];
        snprintf(key, sizeof key, "input.%s", spec->name);
        const tg_tensor *want = tg_st_find(grads, key);
        cr_assert_not_null(want, "%s: no expected gradient %s", name, key);
        snprintf(what, sizeof what, "%s: grad %s", name, key);
        tt_assert_close(tg_node_grad(in[i]), want, atol, rtol, what);
        checked++;
    }
    cr_assert_eq(checked, tg_st_count(grads), "%s: %d gradients compared, the case has %d", name,
                 checked, tg_st_count(grads));
    tg_st_free(grads);
    tg_tensor_free(y);
    tg_tensor_free(dy);
    for (int i = 0; i < n; i++) tg_tensor_free(x[i]);
    tg_graph_free(g);
    tt_layer_free(&t);
}

/* Each case three times: the default plan; the training plan of tgraph train
 * (tg_graph_set_share_values), where values go once the backward that reads
 * them has run: an op that reads a value it declared it does not
 * (TG_OP_BWD_NO_OUTPUT / _NO_INPUTS) would read reused memory here; and that
 * plan with linear outputs recomputed (tg_graph_set_recompute). */
void tt_run_oracle_case(const char *name, double atol, double rtol)
{
    for (int plan = 0; plan < 3; plan++) run_oracle_case(name, atol, rtol, plan);
}

/* tt_layer_new and tt_case_layer once the config is made (the caller frees it). */
static tt_layer layer_new(const char *layer, tg_config *cfg, const tt_layer_opts *o)
{
    static const tt_layer_opts zero = {0};
    if (!o) o = &zero;
    tt_layer t = {0};
    tg_rng rng;
    tg_rng_seed(&rng, o->seed);
    t.ps = tg_params_new(o->dtype);
    t.l = tg_layer_new(layer, cfg, t.ps, "", o->init ? &rng : NULL);
    cr_assert_not_null(t.l, "%s: %s", layer, tg_last_error());
    if (o->no_graph) return t;
    t.g = tg_graph_new(o->dtype);
    tg_graph_set_training(t.g, o->training);
    tg_graph_set_unfused(t.g, o->unfused);
    cr_assert_eq(tg_graph_unfused(t.g), o->unfused);
    for (int i = 0; i < tg_layer_input_count(t.l); i++) {
        const tg_layer_input *s = tg_layer_input_at(t.l, i);
        t.in[i] = tg_input(t.g, s->name, s->ids ? TG_I64 : o->dtype, s->rank, s->shape);
        if (o->randn_seed && !s->ids)
            tt_randn((tg_tensor *)tg_node_value(t.in[i]), o->randn_seed + (uint64_t)i);
        if (s->differentiable && !o->no_grad) tg_node_set_requires_grad(t.in[i], true);
    }
    cr_assert_eq(tg_layer_build(t.l, t.g, t.in, &t.out), TG_OK, "%s: %s", layer,
                 tg_last_error());
    return t;
}

tt_layer tt_layer_new(const char *layer, const char *const *sets, int n_sets,
                      const tt_layer_opts *o)
{
    tg_config *cfg = tg_config_new();
    for (int i = 0; i < n_sets; i++)
        cr_assert_eq(tg_config_set(cfg, sets[i]), TG_OK, "%s: %s", sets[i], tg_last_error());
    tt_layer t = layer_new(layer, cfg, o);
    tg_config_free(cfg);
    return t;
}

tt_layer tt_case_layer(const char *dir, const tt_layer_opts *o)
{
    char layer[64];
    tg_config *cfg = tt_case_config(dir, layer, sizeof layer);
    tt_layer t = layer_new(layer, cfg, o);
    tg_config_free(cfg);
    return t;
}

void tt_layer_free(tt_layer *t)
{
    tg_graph_free(t->g);
    tg_layer_free(t->l);
    tg_params_free(t->ps);
}

int tt_layer_gradcheck(const char *layer, const char *const *sets, int n_sets, uint64_t seed,
                       int64_t max_per_tensor)
{
    tg_config *cfg = tg_config_new();
    for (int i = 0; i < n_sets; i++)
        cr_assert_eq(tg_config_set(cfg, sets[i]), TG_OK, "%s", tg_last_error());
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    tg_params *ps = tg_params_new(TG_F64);
    tg_layer *l = tg_layer_new(layer, cfg, ps, "", &rng);
    cr_assert_not_null(l, "%s: %s", layer, tg_last_error());
    for (int i = 0; i < tg_params_count(ps); i++) {   /* perturb: no gain exactly 1 */
        tg_tensor *p = &tg_params_at(ps, i)->value;
        for (int64_t k = 0; k < p->numel; k++)
            tg_tensor_set(p, k, tg_tensor_get(p, k) + 0.1 * tg_rng_normal(&rng));
    }
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *in[TG_MAX_LAYER_INPUTS];
    int n = tg_layer_input_count(l);
    for (int i = 0; i < n; i++) {
        const tg_layer_input *spec = tg_layer_input_at(l, i);
        in[i] = tg_input(g, spec->name, spec->ids ? TG_I64 : TG_F64, spec->rank, spec->shape);
        tg_tensor *t = (tg_tensor *)tg_node_value(in[i]);
        for (int64_t k = 0; k < t->numel; k++)
            tg_tensor_set(t, k, spec->ids ? (double)tg_rng_below(&rng, (uint64_t)spec->ids)
                                : spec->differentiable ? tg_rng_normal(&rng)
                                : (tg_rng_uniform(&rng) < 0.3 ? -100 : 0));
        /* a gradient through a detached statistic is not the derivative: left out */
        bool detached = tg_layer_class_find(layer)->grad_detached_inputs >> i & 1u;
        if (spec->differentiable && !detached) tg_node_set_requires_grad(in[i], true);
    }
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(l, g, in, &out), TG_OK, "%s: %s", layer, tg_last_error());
    tg_gradcheck_result res[256];
    int nres = 0;
    bool ok = false;
    tg_gradcheck_opts o = {.seed = seed, .max_per_tensor = max_per_tensor};
    cr_assert_eq(tg_gradcheck(g, out.y, &o, res, 256, &nres, &ok), TG_OK, "%s",
                 tg_last_error());
    for (int i = 0; i < nres; i++) {
        cr_expect(res[i].pass, "%s: %s: worst rel %.3g (a=%.9g n=%.9g at %lld)", layer,
                  res[i].name, res[i].max_rel_err, res[i].worst_analytical,
                  res[i].worst_numerical, (long long)res[i].worst_index);
        cr_expect(res[i].checked > 0, "%s: %s: nothing checked", layer, res[i].name);
    }
    cr_assert(ok, "%s: gradcheck failed", layer);
    tg_graph_free(g);
    tg_layer_free(l);
    tg_params_free(ps);
    tg_config_free(cfg);
    return nres;
}

void tt_assert_layer_rejects(const char *layer, const char *const *sets, int n_sets,
                             const char *needle)
{
    tg_config *cfg = tg_config_new();
    for (int i = 0; i < n_sets; i++) tg_config_set(cfg, sets[i]);
    tg_params *ps = tg_params_new(TG_F32);
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    tg_layer *l = tg_layer_new(layer, cfg, ps, "", &rng);
    cr_assert_null(l, "%s accepted a bad config (expected \"%s\")", layer, needle);
    tt_assert_last_error(needle);
    tg_params_free(ps);
    tg_config_free(cfg);
}
