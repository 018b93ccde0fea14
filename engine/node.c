/*
 * node.c - making nodes and reading them: the builder's side of op.h (an op
 * node, its attributes, saved buffers and scratch), the leaves (inputs,
 * constants, filled tensors, parameters looked up by pointer) and what a
 * caller reads from a node.
 *
 * What it is not: it runs nothing and plans no memory; a node made here only
 * marks the graph for planning again (planner.c).
 */
#include <string.h>

#include "graph_impl.h"
#include "params.h"

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
    if (rank < 0)
        return tg_graph_fail(g, "%s: result rank %d is negative", what, rank);
    if (rank > TG_MAX_RANK)
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
    if (tg_tensor_check(t, "constant")) return tg_graph_fail(g, "%s", tg_last_error());
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
    if (tg_tensor_check(&p->value, "param") || (!p->buffer && tg_tensor_check(&p->grad, "param")))
        return tg_graph_fail(g, "param '%s': %s", p->name, tg_last_error());
    /* an int64 buffer (num_batches_tracked) is no float tensor of the graph's dtype */
    if (p->value.dtype != g->dtype && !(p->buffer && p->value.dtype == TG_I64))
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
    n->requires_grad = !p->frozen && !p->buffer;
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
    if (!n) return tg_set_error(TG_ERR_INVALID, "set: node is NULL");
    tg_status bad = tg_tensor_check(src, "set");
    if (bad) return bad;
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
