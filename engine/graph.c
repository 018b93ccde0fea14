/*
 * graph.c - the graph itself: life, the sticky error, the node list, scopes
 * and the switches a run reads (training, seed, finiteness checks, gradients,
 * memory sharing).
 *
 * What it is not: it knows no op by name (ops/ supplies descriptors) and no
 * kernel. Nodes and leaves are made in node.c, the forward pass and the
 * profile are in forward.c, the backward pass in backward.c; buffer reuse
 * by lifetime lives in planner.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph_impl.h"

/* ------------------------------------------------------------------ life */

tg_graph *tg_graph_new(tg_dtype float_dtype)
{
    if (!tg_dtype_is_float(float_dtype)) {
        tg_set_error(TG_ERR_DTYPE, "graph: float dtype must be float32 or float64, got %s",
                     tg_dtype_name(float_dtype));
        return NULL;
    }
    tg_graph *g = tg__calloc(1, sizeof *g);
    if (!g) goto oom;
    g->dtype = float_dtype;
    g->grad_enabled = true;
    tg_rng_seed(&g->rng, 0);
    g->scopes = tg__calloc(16, sizeof *g->scopes);
    if (!g->scopes) goto oom;
    g->scope_cap = 16;
    g->n_scopes = 1;
    g->scopes[0].name = g->scopes[0].path = "";
    g->scopes[0].parent = -1;
    g->cur_scope = 0;
    return g;
oom:
    tg_graph_free(g);
    tg_set_error(TG_ERR_NOMEM, "graph: out of memory");
    return NULL;
}

void tg_graph_free(tg_graph *g)
{
    if (!g) return;
    tg__plan_release(g);
    tg__arena_free(&g->arena);
    tg__free(g->nodes);
    tg__free(g->scopes);
    tg__free(g->param_table);
    for (int i = 0; i < g->n_stores; i++) tg__params_release(g->stores[i]);
    tg__free(g->stores);
    tg__free(g->prof);
    tg__free(g);
}

tg_dtype tg_graph_dtype(const tg_graph *g)
{
    TG__NONNULL(g, TG_F32);
    return g->dtype;
}

const char *tg_graph_error(const tg_graph *g)
{
    if (!g) return "graph is NULL";
    return g->has_error ? g->error : NULL;
}

static void vfail(tg_graph *g, const char *fmt, va_list ap)
{
    if (g->has_error) return;
    char msg[sizeof g->error - 256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const char *path = g->scopes[g->cur_scope].path;
    if (*path)
        snprintf(g->error, sizeof g->error, "%.200s: %s", path, msg);
    else
        snprintf(g->error, sizeof g->error, "%s", msg);
    g->has_error = true;
    tg_set_error(TG_ERR_INVALID, "%s", g->error);
}

tg_node *tg_graph_fail(tg_graph *g, const char *fmt, ...)
{
    TG__NONNULL(g, NULL);
    if (!fmt) return tg_graph_fail(g, "%s", "tg_graph_fail: fmt is NULL");
    va_list ap;
    va_start(ap, fmt);
    vfail(g, fmt, ap);
    va_end(ap);
    return NULL;
}

int tg_graph_node_count(const tg_graph *g)
{
    TG__NONNULL(g, 0);
    return g->n_nodes;
}

tg_node *tg_graph_node(const tg_graph *g, int i)
{
    TG__NONNULL(g, NULL);
    return i >= 0 && i < g->n_nodes ? g->nodes[i] : NULL;
}

/* ---------------------------------------------------------------- scopes */

static bool scope_name_ok(const char *s)
{
    if (!*s) return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '.' || *s == '-'))
            return false;
    return true;
}

tg_status tg_scope_push(tg_graph *g, const char *name)
{
    if (!g) return tg_set_error(TG_ERR_INVALID, "scope: graph is NULL");
    if (g->has_error) return TG_ERR_STATE;
    if (!name || !scope_name_ok(name)) {
        tg_graph_fail(g, "scope: invalid scope name '%s' (letters, digits, '_', '.', '-')",
                      name ? name : "(null)");
        return TG_ERR_INVALID;
    }
    /* reuse an existing child of the same name, so a scope entered twice is one box */
    for (int i = 1; i < g->n_scopes; i++)
        if (g->scopes[i].parent == g->cur_scope && strcmp(g->scopes[i].name, name) == 0) {
            g->cur_scope = i;
            return TG_OK;
        }
    if (g->n_scopes == g->scope_cap) {
        int cap = g->scope_cap * 2;
        tg__scope *s = tg__realloc(g->scopes, (size_t)cap * sizeof *s);
        if (!s) goto oom;
        g->scopes = s;
        g->scope_cap = cap;
    }
    const char *parent = g->scopes[g->cur_scope].path;
    size_t len = strlen(parent) + strlen(name) + 2;
    char *path = tg__arena_alloc(&g->arena, len, 1);
    char *nm = tg__arena_strdup(&g->arena, name);
    if (!path || !nm) goto oom;
    snprintf(path, len, *parent ? "%s.%s" : "%s%s", parent, name);
    tg__scope *s = &g->scopes[g->n_scopes];
    s->name = nm;
    s->path = path;
    s->parent = g->cur_scope;
    s->depth = g->scopes[g->cur_scope].depth + 1;
    g->cur_scope = g->n_scopes++;
    return TG_OK;
oom:
    tg_graph_fail(g, "scope: out of memory");
    return TG_ERR_NOMEM;
}

tg_status tg_scope_pushf(tg_graph *g, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    TG__NONNULL(g, TG_ERR_INVALID);
    if (!fmt) return tg_scope_push(g, NULL);
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return tg_scope_push(g, name);
}

void tg_scope_pop(tg_graph *g)
{
    if (g && g->cur_scope > 0) g->cur_scope = g->scopes[g->cur_scope].parent;
}

int tg_graph_scope_count(const tg_graph *g)
{
    TG__NONNULL(g, 0);
    return g->n_scopes;
}

static const tg__scope *scope_at(const tg_graph *g, int s)
{
    return s >= 0 && s < g->n_scopes ? &g->scopes[s] : &g->scopes[0];
}

const char *tg_graph_scope_path(const tg_graph *g, int s)
{
    TG__NONNULL(g, NULL);
    return scope_at(g, s)->path;
}

const char *tg_graph_scope_name(const tg_graph *g, int s)
{
    TG__NONNULL(g, NULL);
    return scope_at(g, s)->name;
}

int tg_graph_scope_parent(const tg_graph *g, int s)
{
    TG__NONNULL(g, -1);
    return scope_at(g, s)->parent;
}
int tg_graph_scope_depth(const tg_graph *g, int s)
{
    TG__NONNULL(g, 0);
    return scope_at(g, s)->depth;
}

/* -------------------------------------------------------------- settings */

void tg_graph_set_training(tg_graph *g, bool training)
{
    TG__NONNULL_VOID(g);
    g->training = training;
}

bool tg_graph_training(const tg_graph *g)
{
    TG__NONNULL(g, false);
    return g->training;
}

void tg_graph_set_unfused(tg_graph *g, bool on)
{
    TG__NONNULL_VOID(g);
    g->unfused = on;
}

bool tg_graph_unfused(const tg_graph *g)
{
    TG__NONNULL(g, false);
    return g->unfused;
}

void tg_graph_seed(tg_graph *g, uint64_t seed)
{
    TG__NONNULL_VOID(g);
    tg_rng_seed(&g->rng, seed);
}

tg_rng *tg_graph_rng(tg_graph *g)
{
    TG__NONNULL(g, NULL);
    return &g->rng;
}

void tg_graph_set_check_finite(tg_graph *g, bool on)
{
    TG__NONNULL_VOID(g);
    g->check_finite = on;
}

void tg_graph_set_grad_enabled(tg_graph *g, bool enabled)
{
    TG__NONNULL_VOID(g);
    if (g->grad_enabled != enabled) g->planned = false;
    g->grad_enabled = enabled;
}

void tg_graph_set_share_values(tg_graph *g, bool on)
{
    TG__NONNULL_VOID(g);
    if (g->share_values != on) g->planned = false;
    g->share_values = on;
}

void tg_graph_set_recompute(tg_graph *g, bool on)
{
    TG__NONNULL_VOID(g);
    if (g->recompute != on) g->planned = false;
    g->recompute = on;
}

void tg_node_keep(tg_node *n)
{
    if (!n || n->keep) return;
    n->keep = true;
    n->graph->planned = false;
}
