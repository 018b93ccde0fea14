/*
 * graph.c - nodes, scopes, leaves, the sticky error, the plan, forward and
 * backward.
 *
 * What it is not: it knows no op by name (ops/ supplies descriptors) and no
 * kernel. The plan here gives every buffer its own memory; buffer reuse by
 * lifetime lives in planner.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "graph_impl.h"
#include "params.h"

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

/* ----------------------------------------------------------------- nodes */

bool tg_builder_check(tg_graph *g, const char *op, int n, tg_node *const *in)
{
    if (!op) op = "(op name NULL)";
    if (!g) {
        tg_set_error(TG_ERR_INVALID, "%s: graph is NULL", op);
        return false;
    }
    if (g->has_error) return false;
    for (int i = 0; i < n; i++) {
        if (!in || !in[i]) {
            tg_graph_fail(g, "%s: input %d is NULL", op, i);
            return false;
        }
        if (in[i]->graph != g) {
            tg_graph_fail(g, "%s: input %d belongs to another graph", op, i);
            return false;
        }
    }
    return true;
}

/* Append a node with the given kind and output; shared by leaves and ops. */
static tg_node *node_create(tg_graph *g, tg_node_kind kind, const tg_op *op, int n_in,
                            tg_node *const *in, tg_dtype dt, int rank, const int64_t *shape,
                            const char *what)
{
    int64_t numel;
    char sh[160];
    if ((unsigned)dt >= TG_DTYPE_COUNT) return tg_graph_fail(g, "%s: unknown dtype", what);
    if (rank < 0 || rank > TG_MAX_RANK)
        return tg_graph_fail(g, "%s: result rank %d is above the maximum rank %d", what, rank,
                             TG_MAX_RANK);
    if (tg_shape_numel(rank, shape, &numel) != TG_OK)
        return tg_graph_fail(g, "%s: bad result shape %s: %s", what,
                             tg_shape_str(rank, shape, sh, sizeof sh), tg_last_error());
    if (g->n_nodes == g->node_cap) {
        int cap = g->node_cap ? 2 * g->node_cap : 64;
        tg_node **nodes = tg__realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) return tg_graph_fail(g, "%s: out of memory", what);
        g->nodes = nodes;
        g->node_cap = cap;
    }
    tg_node *n = tg__arena_alloc(&g->arena, sizeof *n, 16);
    tg_node **ins = n_in ? tg__arena_alloc(&g->arena, (size_t)n_in * sizeof *ins, 16) : NULL;
    if (!n || (n_in && !ins)) return tg_graph_fail(g, "%s: out of memory", what);
    if (n_in) memcpy(ins, in, (size_t)n_in * sizeof *ins);
    n->id = g->n_nodes;
    n->kind = kind;
    n->op = op;
    n->graph = g;
    n->n_in = n_in;
    n->in = ins;
    n->value.dtype = dt;
    n->value.rank = rank;
    if (rank) memcpy(n->value.shape, shape, (size_t)rank * sizeof *shape);
    n->value.numel = numel;
    n->grad = n->value;
    n->grad.data = NULL;
    n->scope = g->cur_scope;
    n->name = op ? op->name : "";
    if (op) {
        bool any = false;
        for (int i = 0; i < n_in; i++) any |= in[i]->requires_grad;
        n->requires_grad = any && op->backward && tg_dtype_is_float(dt);
    }
    g->nodes[g->n_nodes++] = n;
    g->planned = false;
    return n;
}

tg_node *tg_node_new(tg_graph *g, const tg_op *op, int n_in, tg_node *const *in, tg_dtype dt,
                     int rank, const int64_t *shape)
{
    const char *name = op && op->name ? op->name : "op";
    if (!tg_builder_check(g, name, n_in, in)) return NULL;
    if (!op || !op->name || (!op->forward && !(op->flags & TG_OP_VIEW)))
        return tg_graph_fail(g, "%s: op descriptor needs a name and a forward", name);
    if ((op->flags & TG_OP_VIEW) && (n_in < 1 || in[0]->value.dtype != dt))
        return tg_graph_fail(g, "%s: a view op needs input 0 of the same dtype", name);
    tg_node *n = node_create(g, TG_NODE_OP, op, n_in, in, dt, rank, shape, name);
    if (n && (op->flags & TG_OP_VIEW) && n->value.numel != in[0]->value.numel)
        return tg_graph_fail(g, "%s: a view must keep the element count (%lld vs %lld)", name,
                             (long long)n->value.numel, (long long)in[0]->value.numel);
    return n;
}

void *tg_node_attr(tg_node *n, size_t size)
{
    TG__NONNULL(n, NULL);
    void *a = tg__arena_alloc(&n->graph->arena, size ? size : 1, 16);
    if (!a) tg_graph_fail(n->graph, "%s: out of memory", n->name);
    n->attr = a;
    return a;
}

char *tg_graph_strdup(tg_graph *g, const char *s)
{
    TG__NONNULL(g, NULL);
    char *d = tg__arena_strdup(&g->arena, s ? s : "");
    if (!d) tg_graph_fail(g, "out of memory");
    return d;
}

int tg_node_buffer(tg_node *n, tg_dtype dt, int rank, const int64_t *shape)
{
    int64_t numel;
    TG__NONNULL(n, -1);
    if (n->n_buf == TG_NODE_MAX_BUFFERS) {
        tg_graph_fail(n->graph, "%s: more than %d saved buffers", n->name, TG_NODE_MAX_BUFFERS);
        return -1;
    }
    if (tg_shape_numel(rank, shape, &numel) != TG_OK) {
        tg_graph_fail(n->graph, "%s: bad buffer shape: %s", n->name, tg_last_error());
        return -1;
    }
    tg_tensor *b = &n->buf[n->n_buf];
    b->dtype = dt;
    b->rank = rank;
    if (rank) memcpy(b->shape, shape, (size_t)rank * sizeof *shape);
    b->numel = numel;
    b->data = NULL;
    n->graph->planned = false;
    return n->n_buf++;
}

void tg_node_scratch(tg_node *n, size_t bytes)
{
    TG__NONNULL_VOID(n);
    if (bytes > n->scratch) n->scratch = bytes;
    n->graph->planned = false;
}

void *tg_graph_scratch(tg_graph *g)
{
    TG__NONNULL(g, NULL);
    return g->scratch;
}

/* ---------------------------------------------------------------- leaves */

static void *leaf_data(tg_graph *g, const tg_node *n)
{
    size_t bytes = (size_t)n->value.numel * tg_dtype_size(n->value.dtype);
    return tg__arena_alloc(&g->arena, bytes ? bytes : 1, 64);
}

tg_node *tg_input(tg_graph *g, const char *name, tg_dtype dt, int rank, const int64_t *shape)
{
    if (!tg_builder_check(g, "input", 0, NULL)) return NULL;
    if (tg_dtype_is_float(dt) && dt != g->dtype)
        return tg_graph_fail(g, "input '%s': float inputs must have the graph's dtype %s, got %s",
                             name ? name : "", tg_dtype_name(g->dtype), tg_dtype_name(dt));
    char what[96];   /* messages name the input: "input 'x': bad result shape ..." */
    tg__fmt(what, sizeof what, "input '%s'", name ? name : "");
    tg_node *n = node_create(g, TG_NODE_INPUT, NULL, 0, NULL, dt, rank, shape, what);
    if (!n) return NULL;
    n->name = tg_graph_strdup(g, name ? name : "input");
    n->value.data = leaf_data(g, n);
    if (!n->name || !n->value.data) return tg_graph_fail(g, "%s: out of memory", what);
    return n;
}

tg_node *tg_constant(tg_graph *g, const char *name, const tg_tensor *t)
{
    if (!tg_builder_check(g, "constant", 0, NULL)) return NULL;
    if (!t) return tg_graph_fail(g, "constant: tensor is NULL");
    tg_dtype dt = tg_dtype_is_float(t->dtype) ? g->dtype : t->dtype;
    tg_node *n = node_create(g, TG_NODE_CONST, NULL, 0, NULL, dt, t->rank, t->shape, "constant");
    if (!n) return NULL;
    n->name = tg_graph_strdup(g, name ? name : "constant");
    n->value.data = leaf_data(g, n);
    if (!n->name || !n->value.data) return tg_graph_fail(g, "constant: out of memory");
    tg_tensor_copy(&n->value, t);
    return n;
}

tg_node *tg_full(tg_graph *g, int rank, const int64_t *shape, double value)
{
    if (!tg_builder_check(g, "full", 0, NULL)) return NULL;
    tg_node *n = node_create(g, TG_NODE_CONST, NULL, 0, NULL, g->dtype, rank, shape, "full");
    if (!n) return NULL;
    n->name = "full";
    n->value.data = leaf_data(g, n);
    if (!n->value.data) return tg_graph_fail(g, "full: out of memory");
    tg_init_constant(&n->value, value);
    return n;
}

/* Parameter nodes are looked up by pointer in a small open-addressing table. */
static size_t ptr_hash(const void *p, size_t mask)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & mask;
}

static tg_node **param_slot(tg_graph *g, const tg_param *p)
{
    size_t mask = (size_t)g->param_cap - 1;
    for (size_t h = ptr_hash(p, mask);; h = (h + 1) & mask)
        if (!g->param_table[h] || g->param_table[h]->param == p) return &g->param_table[h];
}

static bool param_table_grow(tg_graph *g)
{
    int cap = g->param_cap ? 2 * g->param_cap : 64;
    tg_node **old = g->param_table;
    int old_cap = g->param_cap;
    g->param_table = tg__calloc((size_t)cap, sizeof *g->param_table);
    if (!g->param_table) {
        g->param_table = old;
        return false;
    }
    g->param_cap = cap;
    for (int i = 0; i < old_cap; i++)
        if (old[i]) *param_slot(g, old[i]->param) = old[i];
    tg__free(old);
    return true;
}

/* Hold p's store until the graph is freed (tg_params_free then defers). */
static bool retain_store(tg_graph *g, tg_params *ps)
{
    if (!ps) return true;
    for (int i = 0; i < g->n_stores; i++)
        if (g->stores[i] == ps) return true;
    if (g->n_stores == g->store_cap) {
        int cap = g->store_cap ? 2 * g->store_cap : 4;
        tg_params **s = tg__realloc(g->stores, (size_t)cap * sizeof *s);
        if (!s) return false;
        g->stores = s;
        g->store_cap = cap;
    }
    g->stores[g->n_stores++] = ps;
    tg__params_retain(ps);
    return true;
}

tg_node *tg_param_node(tg_graph *g, tg_param *p)
{
    if (!tg_builder_check(g, "param", 0, NULL)) return NULL;
    if (!p) return tg_graph_fail(g, "param: parameter is NULL");
    if (p->value.dtype != g->dtype)
        return tg_graph_fail(g, "param '%s': dtype %s differs from the graph's %s", p->name,
                             tg_dtype_name(p->value.dtype), tg_dtype_name(g->dtype));
    if (g->param_cap) {
        tg_node *found = *param_slot(g, p);
        if (found) return found;
    }
    if (2 * (g->n_params + 1) > g->param_cap && !param_table_grow(g))
        return tg_graph_fail(g, "param: out of memory");
    if (!retain_store(g, tg__param_owner(p))) return tg_graph_fail(g, "param: out of memory");
    tg_node *n = node_create(g, TG_NODE_PARAM, NULL, 0, NULL, p->value.dtype, p->value.rank,
                             p->value.shape, "param");
    if (!n) return NULL;
    n->name = p->name;
    n->param = p;
    n->value.data = p->value.data;
    n->requires_grad = !p->frozen;
    if (n->requires_grad) n->grad.data = p->grad.data;
    *param_slot(g, p) = n;
    g->n_params++;
    return n;
}

tg_status tg_node_set_requires_grad(tg_node *n, bool requires_grad)
{
    if (!n) return tg_set_error(TG_ERR_INVALID, "requires_grad: node is NULL");
    if (n->kind != TG_NODE_INPUT)
        return tg_set_error(TG_ERR_INVALID,
                            "requires_grad: only input leaves can be marked (node %d is %s)",
                            n->id, n->name);
    if (n->requires_grad == requires_grad) return TG_OK;
    if (requires_grad && !tg_dtype_is_float(n->value.dtype))
        return tg_set_error(TG_ERR_DTYPE, "requires_grad: input '%s' has dtype %s, not float",
                            n->name, tg_dtype_name(n->value.dtype));
    if (n->graph->planned || n->graph->ran_forward)
        return tg_set_error(TG_ERR_STATE,
                            "tg_node_set_requires_grad: input '%s' (node %d): the graph has "
                            "already been planned or run; set requires_grad before the first "
                            "forward or tg_graph_plan", n->name, n->id);
    n->requires_grad = requires_grad;
    n->graph->planned = false;
    return TG_OK;
}

/* -------------------------------------------------------------- accessors */

const tg_tensor *tg_node_value(const tg_node *n)
{
    TG__NONNULL(n, NULL);
    return &n->value;
}

const tg_tensor *tg_node_grad(const tg_node *n)
{
    TG__NONNULL(n, NULL);
    return n->requires_grad && n->grad.data ? &n->grad : NULL;
}

tg_status tg_node_set(tg_node *n, const tg_tensor *src)
{
    if (!n || !src) return tg_set_error(TG_ERR_INVALID, "set: node or tensor is NULL");
    if (n->kind != TG_NODE_INPUT && n->kind != TG_NODE_CONST)
        return tg_set_error(TG_ERR_INVALID, "set: node %d (%s) is not an input or constant",
                            n->id, n->name);
    tg_status st = tg_tensor_copy(&n->value, src);
    if (st) return tg_set_error(st, "set '%s': %s", n->name, tg_last_error());
    return TG_OK;
}

const char *tg_node_name(const tg_node *n)
{
    TG__NONNULL(n, NULL);
    return n->name;
}

int tg_node_id(const tg_node *n)
{
    TG__NONNULL(n, -1);
    return n->id;
}

int tg_node_scope(const tg_node *n)
{
    TG__NONNULL(n, 0);
    return n->scope;
}

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

void tg_graph_set_profile(tg_graph *g, bool on)
{
    if (!g) return;
    tg__free(g->prof);
    g->prof = NULL;
    g->prof_cap = 0;
    if (!on) return;
    g->prof = tg__calloc(2 * (size_t)g->n_nodes + 2, sizeof *g->prof);
    if (g->prof) g->prof_cap = g->n_nodes;   /* out of memory: profiling stays off */
}

double tg__prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tg__prof_add(tg_node *n, int pass, double t0)
{
    if (n->id < n->graph->prof_cap) n->graph->prof[2 * n->id + pass] += tg__prof_now() - t0;
}

/* Does an op node before i have this op's name? */
static bool name_seen(const tg_graph *g, int i)
{
    for (int j = 0; j < i; j++) {
        const tg_node *m = g->nodes[j];
        if (m->kind == TG_NODE_OP && !tg__is_view(m) && !strcmp(m->op->name, g->nodes[i]->op->name))
            return true;
    }
    return false;
}

int tg_graph_profile(const tg_graph *g, tg_op_time *out, int max)
{
    int count = 0;
    TG__NONNULL(g, 0);
    if (!out && max > 0) {
        tg_set_error(TG_ERR_INVALID, "tg_graph_profile: out is NULL with max %d", max);
        return 0;
    }
    if (max < 0) max = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        if (n->kind != TG_NODE_OP || tg__is_view(n)) continue;
        int stored = count < max ? count : max, k = 0;
        while (k < stored && strcmp(out[k].op, n->op->name)) k++;
        if (k == stored) {   /* not among the stored names */
            if (count < max) {
                out[count] = (tg_op_time){n->op->name, 0, 0, 0};
            } else {
                if (!name_seen(g, i)) count++;   /* a name beyond max: counted only */
                continue;
            }
            count++;
        }
        out[k].nodes++;
        if (i < g->prof_cap) {
            out[k].forward_s += g->prof[2 * i];
            out[k].backward_s += g->prof[2 * i + 1];
        }
    }
    return count;
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

/* ------------------------------------------------------------------- run */

/* Where node n sits, for messages: "node 12 (softmax dim=-1) in time_attention". */
void tg__node_where(const tg_node *n, char *buf, size_t len)
{
    char attr[160] = "";
    const tg_graph *g = n->graph;
    if (n->op && n->op->describe) n->op->describe(n, attr, sizeof attr);
    const char *path = g->scopes[n->scope].path;
    snprintf(buf, len, "node %d (%s%s%s)%s%s", n->id, n->name, *attr ? " " : "", attr,
             *path ? " in " : "", path);
}

/* Index of the first non-finite element of a float tensor, or -1. */
static int64_t first_non_finite(const tg_tensor *t)
{
    if (t->dtype == TG_F32) {
        const float *x = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            if (!isfinite(x[i])) return i;
    } else if (t->dtype == TG_F64) {
        const double *x = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            if (!isfinite(x[i])) return i;
    }
    return -1;
}

static tg_status check_finite(const tg_node *n)
{
    int64_t at = first_non_finite(&n->value);
    if (at < 0) return TG_OK;
    char where[400], sh[160];
    tg__node_where(n, where, sizeof where);
    double v = tg_tensor_get(&n->value, at);
    return tg_set_error(TG_ERR_NUMERIC, "%s produced %s at element %lld of shape %s", where,
                        isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"), (long long)at,
                        tg_shape_str(n->value.rank, n->value.shape, sh, sizeof sh));
}

tg_status tg__run_failed(const tg_node *n, const char *pass, tg_status st)
{
    char where[400], msg[1024];
    tg__node_where(n, where, sizeof where);
    snprintf(msg, sizeof msg, "%s", tg_last_error());
    return tg_set_error(st, "%s of %s: %s", pass, where, msg);
}

tg_status tg__graph_ready(tg_graph *g)
{
    if (!g) return tg_set_error(TG_ERR_INVALID, "graph is NULL");
    if (g->has_error) return tg_set_error(TG_ERR_STATE, "graph is in error: %s", g->error);
    return g->planned ? TG_OK : tg_graph_plan(g);
}

tg_status tg_graph_forward(tg_graph *g)
{
    tg_status st = tg__graph_ready(g);
    if (st) return st;
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        if (n->kind != TG_NODE_OP || (n->op->flags & TG_OP_VIEW)) continue;
        double t0 = g->prof ? tg__prof_now() : 0;
        st = n->op->forward(n);
        if (g->prof) tg__prof_add(n, 0, t0);
        if (st) return tg__run_failed(n, "forward", st);
        if (g->check_finite && (st = check_finite(n))) return st;
    }
    g->ran_forward = true;
    return TG_OK;
}

