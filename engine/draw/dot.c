/*
 * dot.c - write a graph as Graphviz .dot (see dot.h).
 *
 * Every node is drawn by its "owner": itself, or - when its scope lies at or
 * below the collapse depth - the box of its ancestor scope at that depth.
 * Edges connect owners; edges inside one box are hidden, and an edge that
 * carries the same tensor into the same owner is drawn once.
 */
#include <stdio.h>
#include <string.h>

#include "dot.h"
#include "graph_impl.h"
#include "params.h"
#include "tensor_io.h"

typedef struct {
    const tg_graph *g;
    tg_dot_opts     o;
    FILE           *f;
    int            *box_of_scope;    /* scope -> collapsed ancestor scope, or -1 */
    int            *consumers;       /* node -> number of consumers */
    int            *box_ops;         /* scope -> ops folded into its box */
    int            *n_below;         /* scope -> nodes in it and its descendants */
    bool           *frameless;       /* scope -> its nodes drawn without a cluster */
    bool           *grad;            /* node -> receives a gradient; [n_nodes + s]: box s
                                      * holds a node that does */
    uint64_t       *seen;            /* edge dedupe set (open addressing, 0 = empty) */
    size_t          seen_cap;
    int             indent;
    bool            io_error;
} dot_ctx;

static void out(dot_ctx *c, const char *fmt, ...) TG__PRINTF(2, 3);
static void out(dot_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(c->f, fmt, ap) < 0) c->io_error = true;
    va_end(ap);
}

/* A quoted DOT string: escape quotes and backslashes; "\n" stays a line break. */
static void quoted(dot_ctx *c, const char *s)
{
    out(c, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') out(c, "\\%c", *s);
        else if (*s == '\n') out(c, "\\n");
        else out(c, "%c", *s);
    }
    out(c, "\"");
}

/* The decoration of an op node or a scope (o.decorate; empty without). */
static tg_dot_decor decorate(const dot_ctx *c, int node, int scope)
{
    tg_dot_decor d = {"", ""};
    if (c->o.decorate) c->o.decorate(c->o.decorate_ctx, node, scope, &d);
    d.lines[sizeof d.lines - 1] = d.fill[sizeof d.fill - 1] = '\0';
    return d;
}

/* Append a decoration's lines to label; write its fill (after the style, so it wins). */
static void decor_lines(const tg_dot_decor *d, char *label, size_t len)
{
    size_t k = strlen(label);
    if (*d->lines) snprintf(label + k, len - k, "\n%s", d->lines);
}

static void decor_fill(dot_ctx *c, const tg_dot_decor *d)
{
    if (*d->fill) out(c, ", fillcolor=\"%s\"", d->fill);
}

static void owner_id(const dot_ctx *c, const tg_node *n, char *buf, size_t len)
{
    int box = c->box_of_scope[n->scope];
    if (box >= 0) snprintf(buf, len, "s%d", box);
    else snprintf(buf, len, "n%d", n->id);
}

/* Insert a (tensor, owner) pair; false when it was already there. */
static bool first_time(dot_ctx *c, int tensor, const char *owner, bool grad)
{
    uint64_t key = 1469598103934665603ull;
    for (const char *s = owner; *s; s++) key = (key ^ (unsigned char)*s) * 1099511628211ull;
    key = (key ^ (uint64_t)(tensor + 1) * 0x9e3779b97f4a7c15ull) | 1;
    key ^= grad ? 2 : 0;
    size_t mask = c->seen_cap - 1;
    for (size_t h = (size_t)(key * 0xff51afd7ed558ccdull) & mask;; h = (h + 1) & mask) {
        if (c->seen[h] == key) return false;
        if (!c->seen[h]) {
            c->seen[h] = key;
            return true;
        }
    }
}

static void shape_label(const tg_tensor *t, char *buf, size_t len)
{
    tg_shape_str(t->rank, t->shape, buf, len);
}

static void emit_node(dot_ctx *c, const tg_node *n)
{
    char label[800], sh[200], attr[300] = "";
    shape_label(&n->value, sh, sizeof sh);
    const char *style;
    bool output = c->consumers[n->id] == 0 && n->kind == TG_NODE_OP;
    switch (n->kind) {
    case TG_NODE_PARAM:   /* a buffer (running statistics) says so */
        snprintf(label, sizeof label, "%s%s\n%s", n->param->buffer ? "buffer " : "", n->name, sh);
        style = "shape=box, style=\"rounded,filled\", fillcolor=\"#fff2cc\", color=\"#b08d1a\"";
        break;
    case TG_NODE_INPUT:
        snprintf(label, sizeof label, "input %s\n%s", n->name, sh);
        style = "shape=box, style=\"rounded,filled\", fillcolor=\"#dae8fc\", color=\"#3d6fb6\"";
        break;
    case TG_NODE_CONST:
        snprintf(label, sizeof label, "const %s\n%s", n->name, sh);
        style = "shape=note, style=filled, fillcolor=\"#eeeeee\", color=\"#888888\"";
        break;
    default:
        if (n->op->describe) n->op->describe(n, attr, sizeof attr);
        snprintf(label, sizeof label, "%s%s%s", n->op->name, *attr ? "\n" : "", attr);
        style = output ? "shape=box, style=filled, fillcolor=\"#d5e8d4\", color=\"#3a7d32\", "
                         "peripheries=2"
                       : "shape=box, style=filled, fillcolor=\"#ffffff\", color=\"#444444\"";
        break;
    }
    if (output) {
        size_t k = strlen(label);
        snprintf(label + k, sizeof label - k, "\noutput %s", sh);
    }
    tg_dot_decor d = n->kind == TG_NODE_OP ? decorate(c, n->id, -1) : (tg_dot_decor){"", ""};
    decor_lines(&d, label, sizeof label);
    out(c, "%*sn%d [label=", c->indent, "", n->id);
    quoted(c, label);
    out(c, ", %s", style);
    decor_fill(c, &d);
    out(c, "];\n");
    if (c->o.backward && c->grad[n->id]) {
        snprintf(label, sizeof label, "grad %s\n%s", n->kind == TG_NODE_OP ? n->op->name : n->name,
                 sh);
        out(c, "%*sgn%d [label=", c->indent, "", n->id);
        quoted(c, label);
        out(c, ", shape=box, style=\"dashed,filled\", fillcolor=\"#f8cecc\", color=\"#b85450\", "
               "fontcolor=\"#b85450\"];\n");
        /* the gradient sits beside the value it differentiates */
        out(c, "%*sn%d -> gn%d [style=dotted, arrowhead=none, color=\"#b85450\"];\n", c->indent,
            "", n->id, n->id);
        out(c, "%*s{ rank=same; n%d; gn%d; }\n", c->indent, "", n->id, n->id);
    }
}

static void emit_box(dot_ctx *c, int s)
{
    char label[400];
    snprintf(label, sizeof label, "%s\n(%d op%s)", c->g->scopes[s].name, c->box_ops[s],
             c->box_ops[s] == 1 ? "" : "s");
    tg_dot_decor d = decorate(c, -1, s);
    decor_lines(&d, label, sizeof label);
    out(c, "%*ss%d [label=", c->indent, "", s);
    quoted(c, label);
    out(c, ", shape=box3d, style=filled, fillcolor=\"#e1d5e7\", color=\"#9673a6\"");
    decor_fill(c, &d);
    out(c, "];\n");
    if (c->o.backward && c->grad[c->g->n_nodes + s]) {
        snprintf(label, sizeof label, "grad %s", c->g->scopes[s].name);
        out(c, "%*sgs%d [label=", c->indent, "", s);
        quoted(c, label);
        out(c, ", shape=box3d, style=\"dashed,filled\", fillcolor=\"#f8cecc\", "
               "color=\"#b85450\", fontcolor=\"#b85450\"];\n");
        out(c, "%*ss%d -> gs%d [style=dotted, arrowhead=none, color=\"#b85450\"];\n", c->indent,
            "", s, s);
        out(c, "%*s{ rank=same; s%d; gs%d; }\n", c->indent, "", s, s);
    }
}

/* Scope s as a cluster (the root is the graph itself), then its children. */
static void emit_scope(dot_ctx *c, int s, int indent)
{
    const tg_graph *g = c->g;
    bool frame = s > 0 && !c->frameless[s];
    c->indent = indent + (frame ? 2 : 0);
    if (frame) {
        char label[400];
        tg_dot_decor d = decorate(c, -1, s);
        snprintf(label, sizeof label, "%s", g->scopes[s].name);
        decor_lines(&d, label, sizeof label);
        out(c, "%*ssubgraph cluster_s%d {\n%*s  label=", indent, "", s, indent, "");
        quoted(c, label);
        out(c, "; style=\"rounded%s\"; color=\"#999999\"; fontcolor=\"#555555\";\n",
            *d.fill ? ",filled" : "");
        if (*d.fill) out(c, "%*s  fillcolor=\"%s\";\n", indent, "", d.fill);
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->scope == s && c->box_of_scope[s] < 0) emit_node(c, g->nodes[i]);
    for (int k = 1; k < g->n_scopes; k++) {
        if (g->scopes[k].parent != s || c->n_below[k] == 0) continue;   /* no empty cluster */
        if (c->box_of_scope[k] == k) emit_box(c, k);
        else if (c->box_of_scope[k] < 0) emit_scope(c, k, frame ? indent + 2 : indent);
        c->indent = indent + (frame ? 2 : 0);
    }
    if (frame) out(c, "%*s}\n", indent, "");
}

static void emit_edges(dot_ctx *c)
{
    const tg_graph *g = c->g;
    char src[32], dst[32], sh[200];
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        owner_id(c, n, dst, sizeof dst);
        for (int k = 0; k < n->n_in; k++) {
            const tg_node *a = n->in[k];
            owner_id(c, a, src, sizeof src);
            if (!strcmp(src, dst)) continue;
            shape_label(&a->value, sh, sizeof sh);
            if (first_time(c, a->id, dst, false)) {
                out(c, "  %s -> %s [label=", src, dst);
                quoted(c, sh);
                out(c, "];\n");
            }
            /* apart from the forward edge: the tensor's first consumer in this
             * owner may take no gradient, a later one does */
            if (c->o.backward && c->grad[a->id] && c->grad[n->id] &&
                first_time(c, a->id, dst, true)) {
                out(c, "  g%s -> g%s [label=", dst, src);
                quoted(c, sh);
                out(c, ", color=\"#b85450\", fontcolor=\"#b85450\", style=dashed, "
                       "constraint=false];\n");
            }
        }
    }
}

/* The scope depths count from: the root, or - while the scope holds no op of
 * its own and exactly one child scope - that child (a layer built inside a
 * scope of its own name counts from its modules). */
static int base_depth(const dot_ctx *c, const int *own_ops)
{
    const tg_graph *g = c->g;
    int base = 0;
    for (;;) {
        int child = -1, n_children = 0;
        for (int k = base + 1; k < g->n_scopes; k++)
            if (g->scopes[k].parent == base) child = k, n_children++;
        if (own_ops[base] || n_children != 1) return g->scopes[base].depth;
        base = child;
    }
}

/* Each scope's box (the ancestor collapsed at the depth asked, or -1), the
 * ops in each box and the consumers of each node. A box with no op (a
 * scope of constants or parameters) is not drawn: its nodes are, without a
 * frame; nor is a scope with no node at all. */
static void assign_boxes(dot_ctx *c)
{
    const tg_graph *g = c->g;
    int *own_ops = c->box_ops;   /* borrowed: scope -> ops directly in it */
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        for (int k = 0; k < n->n_in; k++) c->consumers[n->in[k]->id]++;
        c->n_below[n->scope]++;
        own_ops[n->scope] += n->kind == TG_NODE_OP;
    }
    int depth = c->o.depth ? c->o.depth + base_depth(c, own_ops) : 0;
    memset(own_ops, 0, (size_t)g->n_scopes * sizeof *own_ops);
    for (int s = g->n_scopes - 1; s > 0; s--) c->n_below[g->scopes[s].parent] += c->n_below[s];
    /* scopes are created after their parents, so one pass finds each box */
    for (int s = 0; s < g->n_scopes; s++) {
        int p = g->scopes[s].parent;
        if (s == 0 || depth == 0) c->box_of_scope[s] = -1;
        else if (p > 0 && c->box_of_scope[p] >= 0) c->box_of_scope[s] = c->box_of_scope[p];
        else c->box_of_scope[s] = g->scopes[s].depth >= depth ? s : -1;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        if (c->box_of_scope[n->scope] >= 0 && n->kind == TG_NODE_OP)
            c->box_ops[c->box_of_scope[n->scope]]++;
    }
    for (int s = 1; s < g->n_scopes; s++) {
        int box = c->box_of_scope[s];
        if (box < 0 || c->box_ops[box] > 0) continue;
        c->box_of_scope[s] = -1;   /* box_ops[box] is still read for its descendants */
        c->frameless[s] = true;
    }
}

/* Which nodes receive a gradient, as the planner will decide it
 * (propagate_requires_grad): a graph not yet planned has it right only for
 * leaves, since a view's requires_grad is set by the plan, and so is that of
 * everything downstream of a view (sdpa on reshaped projections). Then which
 * boxes hold such a node. */
static void mark_grads(dot_ctx *c)
{
    const tg_graph *g = c->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const tg_node *n = g->nodes[i];
        bool any = false;
        if (n->kind == TG_NODE_PARAM) any = g->grad_enabled && !n->param->frozen && !n->param->buffer;
        else if (n->kind == TG_NODE_INPUT) any = g->grad_enabled && n->requires_grad;
        else if (n->kind == TG_NODE_CONST) any = n->requires_grad;
        else if (tg__is_view(n)) any = c->grad[n->in[0]->id];
        else if (n->op->backward && tg_dtype_is_float(n->value.dtype))
            for (int k = 0; k < n->n_in; k++) any |= c->grad[n->in[k]->id];
        c->grad[i] = any;
        int box = c->box_of_scope[n->scope];
        if (any && box >= 0) c->grad[g->n_nodes + box] = true;
    }
}

tg_status tg_graph_dot(const tg_graph *g, const tg_dot_opts *opts, FILE *f)
{
    if (!g) return tg_set_error(TG_ERR_INVALID, "dot: graph is NULL");
    TG__NONNULL(f, TG_ERR_INVALID);
    if (g->has_error) return tg_set_error(TG_ERR_STATE, "dot: graph is in error: %s", g->error);
    dot_ctx c = {.g = g, .f = f};
    if (opts) c.o = *opts;
    if (c.o.depth < 0)
        return tg_set_error(TG_ERR_INVALID, "dot: depth must be >= 0, got %d", c.o.depth);
    c.box_of_scope = tg__calloc((size_t)g->n_scopes, sizeof *c.box_of_scope);
    c.box_ops = tg__calloc((size_t)g->n_scopes, sizeof *c.box_ops);
    c.n_below = tg__calloc((size_t)g->n_scopes, sizeof *c.n_below);
    c.frameless = tg__calloc((size_t)g->n_scopes, sizeof *c.frameless);
    c.consumers = tg__calloc((size_t)g->n_nodes + 1, sizeof *c.consumers);
    c.grad = tg__calloc((size_t)g->n_nodes + (size_t)g->n_scopes, sizeof *c.grad);
    c.seen_cap = 64;
    while (c.seen_cap < 4 * (size_t)g->n_nodes * 4) c.seen_cap *= 2;
    c.seen = tg__calloc(c.seen_cap, sizeof *c.seen);
    tg_status st = TG_OK;
    if (!c.box_of_scope || !c.box_ops || !c.n_below || !c.frameless || !c.consumers || !c.seen ||
        !c.grad) {
        st = tg_set_error(TG_ERR_NOMEM, "dot: out of memory");
        goto done;
    }
    assign_boxes(&c);
    mark_grads(&c);
    out(&c, "digraph tgraph {\n  graph [rankdir=%s, fontname=\"Helvetica\", fontsize=12, "
             "newrank=true, nodesep=0.25, ranksep=0.35",
        c.o.rankdir == TG_RANKDIR_LR ? "LR" : "TB");
    if (c.o.title) {
        out(&c, ", labelloc=t, label=");
        quoted(&c, c.o.title);
    }
    out(&c, "];\n  node [fontname=\"Helvetica\", fontsize=10, margin=\"0.08,0.04\"];\n"
             "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\", "
             "fontcolor=\"#333333\", arrowsize=0.6];\n");
    emit_scope(&c, 0, 2);
    emit_edges(&c);
    if (c.o.legend) {
        out(&c, "  legend [label=");
        quoted(&c, c.o.legend);
        out(&c, ", shape=note, style=filled, fillcolor=\"#ffffff\", color=\"#888888\"];\n");
    }
    out(&c, "}\n");
    if (c.io_error || ferror(f)) st = tg_set_error(TG_ERR_IO, "dot: write failed");
done:
    tg__free(c.box_of_scope);
    tg__free(c.box_ops);
    tg__free(c.n_below);
    tg__free(c.frameless);
    tg__free(c.consumers);
    tg__free(c.seen);
    tg__free(c.grad);
    return st;
}

typedef struct { const tg_graph *g; const tg_dot_opts *o; } dot_file_ctx;

static tg_status write_dot(FILE *f, void *vctx)
{
    dot_file_ctx *d = vctx;
    return tg_graph_dot(d->g, d->o, f);
}

tg_status tg_graph_dot_save(const tg_graph *g, const tg_dot_opts *opts, const char *path)
{
    dot_file_ctx d = {g, opts};
    return tg_write_atomic(path, write_dot, &d);
}
