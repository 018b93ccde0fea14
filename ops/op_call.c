/*
 * op_call.c - calling any op of the registry (ops/registry.h) by name:
 * resolving its attributes from KEY=VALUE items, checking and creating its
 * inputs, building it, and drawing random inputs for gradcheck; and the
 * attribute readers the glue in each op file uses (registry_internal.h). The
 * list of ops is ops/registry.c; each op's row and glue are in its op file.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "registry_internal.h"

/* ---- reading resolved attributes (types were checked by tg_op_call_init) ---- */

const tg_value *tg__op_attr(const tg_op_call *c, const char *name)
{
    for (int i = 0; i < TG_OP_MAX_ATTRS && c->op->attrs[i].name; i++)
        if (!strcmp(c->op->attrs[i].name, name)) return &c->attr[i];
    return NULL;   /* a glue/table mismatch; the getters then read 0 */
}

bool tg__op_is_null(const tg_op_call *c, const char *name)
{
    const tg_value *v = tg__op_attr(c, name);
    return !v || v->kind == TG_VALUE_NULL;
}

int64_t tg__op_int(const tg_op_call *c, const char *name)
{
    const tg_value *v = tg__op_attr(c, name);
    return v && v->kind == TG_VALUE_INT ? v->i : 0;
}

double tg__op_f(const tg_op_call *c, const char *name)
{
    const tg_value *v = tg__op_attr(c, name);
    return !v ? 0 : v->kind == TG_VALUE_INT ? (double)v->i : v->f;
}

bool tg__op_bool(const tg_op_call *c, const char *name)
{
    const tg_value *v = tg__op_attr(c, name);
    return v && v->kind == TG_VALUE_BOOL && v->b;
}

const char *tg__op_str(const tg_op_call *c, const char *name)
{
    const tg_value *v = tg__op_attr(c, name);
    return v && v->kind == TG_VALUE_STRING && v->s ? v->s : "";
}

/* Put tg_last_error() on the graph, prefixed with the op's name unless it has it. */
tg_status tg__op_fail_last(tg_graph *g, const tg_op_call *c)
{
    const char *msg = tg_last_error();
    size_t n = strlen(c->op->name);
    if (!strncmp(msg, c->op->name, n) && msg[n] == ':') tg_graph_fail(g, "%s", msg);
    else tg_graph_fail(g, "%s: %s", c->op->name, msg);
    return TG_ERR_INVALID;
}

/* An int list attribute into out[0..max); -1 (graph error) when longer. */
int tg__op_list(tg_graph *g, const tg_op_call *c, const char *name, int64_t *out, int max)
{
    const tg_value *v = tg__op_attr(c, name);
    int n = 0;
    if (!v || v->kind == TG_VALUE_NULL) return 0;
    if (tg_value_as_int_list(v, name, out, max, &n)) {
        tg__op_fail_last(g, c);
        return -1;
    }
    return n;
}

/* A dim attribute as the builders' int; a value no int holds cannot be a dim. */
bool tg__op_dim(tg_graph *g, const tg_op_call *c, const char *name, int *out)
{
    int64_t d = tg__op_int(c, name);
    if (d < INT_MIN || d > INT_MAX) {
        tg_graph_fail(g, "%s: Dimension out of range (%s=%lld)", c->op->name, name, (long long)d);
        return false;
    }
    *out = (int)d;
    return true;
}

void tg_op_attr_names(const tg_op_def *op, char *buf, size_t len)
{
    TG__NONNULL_VOID(buf);
    if (!len) return;
    TG__NONNULL_VOID(op);
    int n = tg_keys_count(op->attrs, TG_OP_MAX_ATTRS);
    tg_keys_names(op->attrs, n, buf, len);
    size_t at = strlen(buf);
    if (!n) snprintf(buf, len, "none");
    else if (op->axis_lengths && at + 1 < len)
        snprintf(buf + at, len - at, ", and axis lengths NAME=INT");
}

tg_status tg__op_reduction(tg_graph *g, const tg_op_call *c, tg_reduction *r)
{
    return tg_reduction_parse(tg__op_str(c, "reduction"), r) ? tg__op_fail_last(g, c) : TG_OK;
}

/* ---- resolving attributes ---- */

tg_status tg_op_call_init(tg_op_call *c, const tg_op_def *op, tg_config *cfg)
{
    char names[512], msg[1024];
    TG__NONNULL(c, TG_ERR_INVALID);
    memset(c, 0, sizeof *c);
    TG__NONNULL(op, TG_ERR_INVALID);
    c->op = op;
    tg_op_attr_names(op, names, sizeof names);
    int n_attrs = tg_keys_count(op->attrs, TG_OP_MAX_ATTRS);
    /* einops: every key the table does not name is an axis length (NAME=INT) */
    for (int k = 0; cfg && op->axis_lengths && k < tg_config_count(cfg); k++) {
        const char *key = tg_config_key(cfg, k);
        bool known = false;
        for (int i = 0; i < n_attrs; i++) known |= !strcmp(op->attrs[i].name, key);
        if (known) continue;
        const tg_value *v = tg_config_get(cfg, key);
        if (v->kind != TG_VALUE_INT) {
            snprintf(msg, sizeof msg, "%s", tg_value_as_int(v, key, &(int64_t){0}) ? tg_last_error()
                                                                                   : "");
            tg_op_call_free(c);
            return tg_set_error(TG_ERR_INVALID, "%s: %s (an axis length; attributes: %s)",
                                op->name, msg, names);
        }
        if (c->n_axes == TG_OP_MAX_AXES) {
            tg_op_call_free(c);
            return tg_set_error(TG_ERR_LIMIT, "%s: more than %d axis lengths", op->name,
                                TG_OP_MAX_AXES);
        }
        char *name = malloc(strlen(key) + 1);
        if (!name) {
            tg_op_call_free(c);
            return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", op->name);
        }
        strcpy(name, key);
        c->axes[c->n_axes++] = (tg_axis_len){name, v->i};
    }
    /* the attributes: the one key schema's parser (value.h) */
    tg_status st = tg_keys_resolve(op->attrs, n_attrs, cfg, op->name, "attribute",
                                   op->axis_lengths ? TG_KEYS_ALLOW_EXTRA : 0, c->attr);
    if (st) tg_op_call_free(c);
    return st;
}

void tg_op_call_free(tg_op_call *c)
{
    if (!c) return;   /* NULL is a no-op, as with free() */
    for (int i = 0; i < TG_OP_MAX_ATTRS; i++) tg_value_free(&c->attr[i]);
    for (int i = 0; i < c->n_axes; i++) free((char *)c->axes[i].name);
    c->n_axes = 0;
}

/* ---- inputs ---- */

static int n_specs(const tg_op_def *op)
{
    int n = 0;
    while (n < (int)(sizeof op->inputs / sizeof *op->inputs) && op->inputs[n].name) n++;
    return n;
}

const tg_op_input *tg_op_input_at(const tg_op_def *op, int i)
{
    TG__NONNULL(op, NULL);
    int n = n_specs(op);
    if (i < 0 || n == 0) return NULL;
    if (i < n) return &op->inputs[i];
    return op->variadic && i < TG_OP_MAX_INPUTS ? &op->inputs[n - 1] : NULL;
}

tg_status tg_op_check_count(const tg_op_def *op, int n_in)
{
    TG__NONNULL(op, TG_ERR_INVALID);
    int n = n_specs(op), max = op->variadic ? TG_OP_MAX_INPUTS : n;
    if (op->name && !strcmp(op->name, "einsum")) max = TG_EINSUM_MAX_OPERANDS;
    if (n_in >= op->n_required && n_in <= max) return TG_OK;
    char names[256] = "";
    for (int i = 0, at = 0; i < n && at < (int)sizeof names; i++)
        at += snprintf(names + at, sizeof names - (size_t)at, "%s%s%s%s", i ? ", " : "",
                       i >= op->n_required ? "[" : "", op->inputs[i].name,
                       i >= op->n_required ? "]" : "");
    if (op->variadic)
        return tg_set_error(TG_ERR_INVALID, "%s: expected %d to %d --in files (%s...), got %d",
                            op->name, op->n_required, max, names, n_in);
    if (max == op->n_required)
        return tg_set_error(TG_ERR_INVALID, "%s: expected %d --in file%s (%s), got %d", op->name,
                            max, max == 1 ? "" : "s", n ? names : "none", n_in);
    return tg_set_error(TG_ERR_INVALID, "%s: expected %d to %d --in files (%s), got %d",
                        op->name, op->n_required, max, names, n_in);
}

tg_status tg_op_check_input(const tg_op_def *op, int i, const tg_tensor *t)
{
    TG__NONNULL(op, TG_ERR_INVALID);
    const tg_op_input *in = tg_op_input_at(op, i);
    if (!in) return tg_set_error(TG_ERR_INVALID, "%s: no input %d", op->name, i + 1);
    if (!t) {
        if (i < op->n_required)
            return tg_set_error(TG_ERR_INVALID, "%s is required (null is only for optional "
                                "inputs)", in->name);
        return TG_OK;
    }
    tg_status bad = tg_tensor_check(t, in->name);
    if (bad) return bad;
    const char *dt = tg_dtype_name(t->dtype);
    switch (in->kind) {
    case TG_OP_IN_FLOAT:
    case TG_OP_IN_CONST:
        if (!tg_dtype_is_float(t->dtype))
            return tg_set_error(TG_ERR_DTYPE, "%s must be a float array (<f4 or <f8), got %s",
                                in->name, dt);
        return TG_OK;
    case TG_OP_IN_INDEX:
        if (t->dtype != TG_I64)
            return tg_set_error(TG_ERR_DTYPE, "Expected dtype int64 for %s, got %s", in->name, dt);
        return TG_OK;
    case TG_OP_IN_MASK:
        if (t->dtype != TG_BOOL)
            return tg_set_error(TG_ERR_DTYPE, "%s only supports boolean masks, but got mask with "
                                "dtype %s",
                                op->name, dt);
        return TG_OK;
    case TG_OP_IN_TARGET:
        if (t->dtype == TG_BOOL)
            return tg_set_error(TG_ERR_DTYPE, "%s must be int64 class indices or float class "
                                "probabilities, got bool", in->name);
        return TG_OK;
    default:
        return TG_OK;
    }
}

bool tg_op_input_differentiable(const tg_op_def *op, int i, tg_dtype dt)
{
    TG__NONNULL(op, false);
    const tg_op_input *in = tg_op_input_at(op, i);
    if (!in || !tg_dtype_is_float(dt)) return false;
    return in->kind == TG_OP_IN_FLOAT || in->kind == TG_OP_IN_TARGET || in->kind == TG_OP_IN_ANY;
}

void tg_op_input_name(const tg_op_def *op, int i, char *buf, size_t len)
{
    TG__NONNULL_VOID(buf);
    TG__NONNULL_VOID(op);
    const tg_op_input *spec = tg_op_input_at(op, i);
    int last = n_specs(op) - 1;
    if (!spec) snprintf(buf, len, "input%d", i);
    else if (op->variadic && i >= last) snprintf(buf, len, "%s[%d]", spec->name, i - last);
    else snprintf(buf, len, "%s", spec->name);
}

tg_status tg_op_make_inputs(tg_graph *g, const tg_op_def *op, tg_tensor *const *t, int n,
                            bool grads, tg_node **in)
{
    TG__NONNULL(g, TG_ERR_INVALID);
    TG__NONNULL(op, TG_ERR_INVALID);
    TG__NONNULL(t, TG_ERR_INVALID);
    TG__NONNULL(in, TG_ERR_INVALID);
    for (int i = 0; i < n; i++) {
        char name[64];
        in[i] = NULL;
        if (!t[i]) continue;
        tg_op_input_name(op, i, name, sizeof name);
        tg_status bad = tg_tensor_check(t[i], name);
        if (bad) return bad;
        tg_dtype dt = tg_dtype_is_float(t[i]->dtype) ? tg_graph_dtype(g) : t[i]->dtype;
        if (!(in[i] = tg_input(g, name, dt, t[i]->rank, t[i]->shape)))
            return tg_set_error(TG_ERR_INVALID, "%s", tg_graph_error(g));
        if (tg_node_set(in[i], t[i])) return TG_ERR_INVALID;
        if (grads && tg_op_input_differentiable(op, i, t[i]->dtype) &&
            tg_node_set_requires_grad(in[i], true))
            return TG_ERR_INVALID;
    }
    return TG_OK;
}

tg_status tg_op_build(tg_graph *g, const tg_op_call *c, tg_node *const *in, int n_in,
                      tg_node **out, int max_out, int *n_out)
{
    tg_node *tmp[TG_OP_MAX_OUTPUTS] = {0};
    int n = 0;
    TG__NONNULL(n_out, TG_ERR_INVALID);
    *n_out = 0;
    TG__NONNULL(g, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(c->op, TG_ERR_INVALID);
    TG__NONNULL(out, TG_ERR_INVALID);
    if (!in && n_in > 0)
        return tg_set_error(TG_ERR_INVALID, "tg_op_build: in is NULL with n_in = %d", n_in);
    if (tg_graph_error(g)) return TG_ERR_INVALID;
    tg_status st = c->op->build(g, c, in, n_in, tmp, &n);
    if (!st && tg_graph_error(g)) st = TG_ERR_INVALID;
    if (st) {
        if (!tg_graph_error(g)) tg_graph_fail(g, "%s: %s", c->op->name, tg_last_error());
        return st;
    }
    if (n > max_out) {
        tg_graph_fail(g, "%s: %d outputs, more than %d", c->op->name, n, max_out);
        return TG_ERR_LIMIT;
    }
    memcpy(out, tmp, (size_t)n * sizeof *out);
    *n_out = n;
    return TG_OK;
}

tg_status tg_op_random_input(const tg_op_call *c, int i, const tg_tensor *const *in,
                             tg_tensor *t, tg_rng *rng)
{
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(c->op, TG_ERR_INVALID);
    TG__NONNULL(rng, TG_ERR_INVALID);
    tg_status bad = tg_tensor_check(t, "tg_op_random_input");
    if (bad) return bad;
    const tg_op_input *spec = tg_op_input_at(c->op, i);
    if (!spec) return tg_set_error(TG_ERR_INVALID, "%s: no input %d", c->op->name, i + 1);
    if (t->dtype == TG_BOOL) {
        for (int64_t k = 0; k < t->numel; k++)
            ((unsigned char *)t->data)[k] = tg_rng_uniform(rng) < 0.3;
        return TG_OK;
    }
    if (t->dtype == TG_I64) {
        if (!c->op->gen_index)
            return tg_set_error(TG_ERR_INVALID, "%s: %s has no generation rule; give it as a file",
                                c->op->name, spec->name);
        int f = i == 0 ? 1 : 0;   /* the float input the rule reads (embedding's weight follows) */
        if (!in || !in[f] || !tg_dtype_is_float(in[f]->dtype))
            return tg_set_error(TG_ERR_INVALID, "%s: %s needs the float input first", c->op->name,
                                spec->name);
        tg_status st = c->op->gen_index(c, i, in, t, rng);
        if (st) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tg_last_error());
            return tg_set_error(st, "%s: %s: %s", c->op->name, spec->name, msg);
        }
        return TG_OK;
    }
    for (int64_t k = 0; k < t->numel; k++) {
        double x = tg_rng_normal(rng);
        if (spec->gen == TG_OP_GEN_POSITIVE) x = fabs(x) + 0.5;
        else if (spec->gen == TG_OP_GEN_NONZERO) x = x < 0 ? x - 0.5 : x + 0.5;
        tg_tensor_set(t, k, x);
    }
    return TG_OK;
}

/* ---- gradcheck input rules for int64 inputs ---- */

/* gather/scatter/scatter_add/index_select: values in [0, input.size(dim));
 * along the index's own `dim` (its only dim when 1-d) a slice of a random
 * permutation where it fits, so scatter targets are unique; uniform draws
 * otherwise. */
tg_status tg__op_gen_along_dim(const tg_op_call *c, int i, const tg_tensor *const *in,
                               tg_tensor *t, tg_rng *rng)
{
    (void)i;
    const tg_tensor *x = in[0];
    int64_t dim = tg__op_int(c, "dim");
    int dx = tg_wrap_dim(dim, x->rank), di = t->rank <= 1 ? 0 : tg_wrap_dim(dim, t->rank);
    if (dx < 0 || di < 0) return tg_set_error(TG_ERR_INVALID, "dim=%lld is out of range for "
                                              "the input", (long long)dim);
    int64_t size = x->rank ? x->shape[dx] : 1, len = t->rank ? t->shape[di] : 1;
    if (t->numel && size == 0)
        return tg_set_error(TG_ERR_INVALID, "no index fits an input of size 0 at dim %lld",
                            (long long)dim);
    int64_t inner = 1;
    for (int d = di + 1; d < t->rank; d++) inner *= t->shape[d];
    int64_t *v = t->data, *perm = malloc((size_t)(size ? size : 1) * sizeof *perm);
    if (!perm) return tg_set_error(TG_ERR_NOMEM, "out of memory");
    for (int64_t row = 0; row < (len ? t->numel / len : 0); row++) {
        for (int64_t k = 0; k < size; k++) perm[k] = k;
        for (int64_t k = 0; k + 1 < size; k++) {   /* Fisher-Yates */
            int64_t j = k + (int64_t)tg_rng_below(rng, (uint64_t)(size - k)), tmp = perm[k];
            perm[k] = perm[j], perm[j] = tmp;
        }
        int64_t outer = row / inner, off = row % inner;
        for (int64_t k = 0; k < len; k++)
            v[(outer * len + k) * inner + off] =
                len <= size ? perm[k] : (int64_t)tg_rng_below(rng, (uint64_t)size);
    }
    free(perm);
    return TG_OK;
}

tg_dtype tg_op_input_dtype(const tg_op_def *op, int i)
{
    TG__NONNULL(op, TG_F64);
    const tg_op_input *spec = tg_op_input_at(op, i);
    if (!spec) return TG_F64;
    return spec->kind == TG_OP_IN_INDEX || spec->kind == TG_OP_IN_TARGET ? TG_I64
         : spec->kind == TG_OP_IN_MASK ? TG_BOOL : TG_F64;
}
