/*
 * onnx_graph.c - tg_graph_onnx_save (onnx_export.h): a graph's forward pass
 * walked in creation order (a topological order) into an ONNX model
 * (onnx.h), each op node by its descriptor's hook.
 *
 * Only the nodes the outputs depend on are written; every input is a graph
 * input. Value names: inputs by their names, parameters by state_dict key,
 * constants "const:ID", op results "SCOPE/op:ID" (an output node takes its
 * output name instead).
 */
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "internal.h"
#include "onnx.h"
#include "onnx_export.h"
#include "tensor_io.h"

/* The nodes outputs depend on (need[id]). */
static uint8_t *needed(const tg_graph *g, int n_out, tg_node *const *outputs)
{
    uint8_t *need = calloc((size_t)g->n_nodes + 1, 1);
    if (!need) return NULL;
    for (int i = 0; i < n_out; i++) need[outputs[i]->id] = 1;
    for (int id = g->n_nodes - 1; id >= 0; id--) {
        const tg_node *n = g->nodes[id];
        if (need[id])
            for (int k = 0; k < n->n_in; k++) need[n->in[k]->id] = 1;
    }
    return need;
}

static void leaf_name(tg_onnx *m, const tg_graph *g, const tg_node *n)
{
    char buf[512];
    const char *scope = tg_graph_scope_path(g, n->scope);
    if (n->kind == TG_NODE_INPUT) snprintf(buf, sizeof buf, "%s", n->name ? n->name : "input");
    else if (n->param) snprintf(buf, sizeof buf, "%s", n->param->name);
    else if (n->kind == TG_NODE_CONST) snprintf(buf, sizeof buf, "const:%d", n->id);
    else snprintf(buf, sizeof buf, "%s%s%s:%d", scope ? scope : "", scope && *scope ? "/" : "",
                  n->op ? n->op->name : "?", n->id);
    tg__onnx_set_value(m, n->id, buf);
}

/* One needed node into the model. */
static tg_status export_node(tg_onnx *m, const tg_graph *g, const tg_node *n)
{
    if (!*tg__onnx_value(m, n)) leaf_name(m, g, n);
    if (n->kind == TG_NODE_INPUT) return TG_OK;   /* its graph input is written first */
    if (n->kind != TG_NODE_OP) {
        tg__onnx_initializer(m, tg__onnx_value(m, n), &n->value);
        return tg__onnx_status(m);
    }
    if (!n->op->onnx) {
        const char *scope = tg_graph_scope_path(g, n->scope);
        return tg__onnx_fail(m, TG_ERR_INVALID, "onnx export: op '%s' (node %d%s%s) has no ONNX "
                             "form", n->op->name, n->id, scope && *scope ? " in " : "",
                             scope ? scope : "");
    }
    tg_status st = n->op->onnx(n, m);
    if (st && !tg__onnx_status(m))
        tg__onnx_fail(m, st, "onnx export of op '%s' (node %d): %s", n->op->name, n->id,
                      tg_last_error());
    return tg__onnx_status(m);
}

/* Output i: its node takes the output name, or (a leaf, or a node named
 * already) an Identity gives it that name after the walk. */
static void name_outputs(tg_onnx *m, const tg_graph *g, int n_out, tg_node *const *outputs,
                         const char *const *names)
{
    for (int i = 0; i < n_out; i++) {
        const tg_node *n = outputs[i];
        if (n->kind == TG_NODE_OP && !*tg__onnx_value(m, n)) tg__onnx_set_value(m, n->id, names[i]);
    }
    for (int id = 0; id < g->n_nodes; id++) {
        const tg_node *n = g->nodes[id];
        if (n->kind != TG_NODE_INPUT) continue;
        leaf_name(m, g, n);
        const tg_tensor *v = &n->value;
        tg__onnx_io(m, false, tg__onnx_value(m, n), v->dtype, v->rank, v->shape, NULL);
    }
}

static tg_status check_args(const tg_graph *g, int n_out, tg_node *const *outputs,
                            const char *const *names)
{
    if (g->has_error)
        return tg_set_error(TG_ERR_INVALID, "onnx export: the graph is in error: %s", g->error);
    if (n_out < 1) return tg_set_error(TG_ERR_INVALID, "onnx export: no outputs (n_out %d)", n_out);
    for (int i = 0; i < n_out; i++) {
        if (!outputs[i] || outputs[i]->graph != g)
            return tg_set_error(TG_ERR_INVALID, "onnx export: output %d is %s", i,
                                outputs[i] ? "from another graph" : "NULL");
        if (!names[i] || !*names[i])
            return tg_set_error(TG_ERR_INVALID, "onnx export: output %d has no name", i);
        for (int k = 0; k < i; k++)
            if (!strcmp(names[k], names[i]))
                return tg_set_error(TG_ERR_INVALID, "onnx export: two outputs named '%s'",
                                    names[i]);
    }
    return TG_OK;
}

static tg_status build_model(tg_onnx *m, const tg_graph *g, int n_out, tg_node *const *outputs,
                             const char *const *names)
{
    uint8_t *need = needed(g, n_out, outputs);
    if (!need) return tg__onnx_fail(m, TG_ERR_NOMEM, "onnx export: out of memory");
    name_outputs(m, g, n_out, outputs, names);
    for (int id = 0; id < g->n_nodes && !tg__onnx_status(m); id++)
        if (need[id]) export_node(m, g, g->nodes[id]);
    free(need);
    for (int i = 0; i < n_out && !tg__onnx_status(m); i++) {
        const tg_node *n = outputs[i];
        const char *v = tg__onnx_value(m, n);
        if (strcmp(v, names[i])) TG__ONNX_NODE(m, "Identity", names[i], v);
        tg__onnx_io(m, true, names[i], n->value.dtype, n->value.rank, n->value.shape, NULL);
    }
    return tg__onnx_status(m);
}

static tg_status write_model(FILE *f, void *ctx) { return tg__onnx_write(ctx, f); }

tg_status tg_graph_onnx_save(const tg_graph *g, int n_out, tg_node *const *outputs,
                             const char *const *names, const char *path)
{
    TG__NONNULL(g, TG_ERR_INVALID);
    TG__NONNULL(outputs, TG_ERR_INVALID);
    TG__NONNULL(names, TG_ERR_INVALID);
    TG__NONNULL(path, TG_ERR_INVALID);
    tg_status st = check_args(g, n_out, outputs, names);
    if (st) return st;
    tg_onnx *m = tg__onnx_new("tgraph");
    if (!m) return TG_ERR_NOMEM;
    st = build_model(m, g, n_out, outputs, names);
    if (!st) st = tg_write_atomic(path, write_model, m);
    else tg_set_error(st, "%s", tg__onnx_error(m));
    tg__onnx_free(m);
    return st;
}

/* The first dim of an input that differs between g and g2: the batch. */
static bool find_batch(const tg_graph *g, const tg_graph *g2, const tg_node **in, int *dim,
                       int64_t *b1, int64_t *b2)
{
    for (int id = 0; id < g->n_nodes && id < g2->n_nodes; id++) {
        const tg_node *a = g->nodes[id], *b = g2->nodes[id];
        if (a->kind != TG_NODE_INPUT || b->kind != TG_NODE_INPUT || a->value.rank != b->value.rank)
            continue;
        for (int d = 0; d < a->value.rank; d++)
            if (a->value.shape[d] != b->value.shape[d]) {
                *in = a, *dim = d, *b1 = a->value.shape[d], *b2 = b->value.shape[d];
                return true;
            }
    }
    return false;
}

static tg_status batch_models(tg_onnx *m, tg_onnx *m2, const tg_graph *g, const tg_graph *g2,
                              int n_out, tg_node *const *outputs, tg_node *const *outputs2,
                              const char *const *names)
{
    const tg_node *in;
    int dim;
    int64_t b1, b2;
    char why[400];
    if (build_model(m, g, n_out, outputs, names) || build_model(m2, g2, n_out, outputs2, names))
        return tg_set_error(TG_ERR_INVALID, "%s", tg__onnx_error(tg__onnx_status(m) ? m : m2));
    if (!find_batch(g, g2, &in, &dim, &b1, &b2))
        return tg_set_error(TG_ERR_INVALID, "onnx export: no input of the two graphs differs in a "
                            "dim (the batch)");
    tg_status st = tg__onnx_batch(m, m2, tg__onnx_value(m, in), dim, b1, b2, why, sizeof why);
    if (st == TG_ERR_INVALID && !tg__onnx_status(m))
        return tg_set_error(st, "onnx export: no dynamic batch: %s", why);
    return st ? tg_set_error(st, "%s", tg__onnx_error(m)) : TG_OK;
}

tg_status tg_graph_onnx_save_batch(const tg_graph *g, const tg_graph *g2, int n_out,
                                   tg_node *const *outputs, tg_node *const *outputs2,
                                   const char *const *names, const char *path)
{
    TG__NONNULL(g, TG_ERR_INVALID);
    TG__NONNULL(g2, TG_ERR_INVALID);
    TG__NONNULL(outputs, TG_ERR_INVALID);
    TG__NONNULL(outputs2, TG_ERR_INVALID);
    TG__NONNULL(names, TG_ERR_INVALID);
    TG__NONNULL(path, TG_ERR_INVALID);
    tg_status st = check_args(g, n_out, outputs, names);
    if (!st) st = check_args(g2, n_out, outputs2, names);
    if (st) return st;
    tg_onnx *m = tg__onnx_new("tgraph"), *m2 = tg__onnx_new("tgraph");
    st = m && m2 ? batch_models(m, m2, g, g2, n_out, outputs, outputs2, names) : TG_ERR_NOMEM;
    if (!st) st = tg_write_atomic(path, write_model, m);
    tg__onnx_free(m);
    tg__onnx_free(m2);
    return st;
}
