/*
 * test_dot_backward.c - the backward diagram is one connected flow: for every
 * layer of the registry (iterated, so a new layer is covered), the .dot text
 * of `--backward` is parsed (node ids, edges) and every parameter's and every
 * differentiable input's gradient node must be reachable from the output's
 * gradient node along gradient edges; also when modules are collapsed into
 * boxes (--depth) and when fused ops are drawn as their chain (--unfuse).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_case.h"
#include "op.h"

/* ---- the .dot text, parsed: node names ("n12", "gs5") and edges ---- */

typedef struct { char from[24], to[24]; } edge;

typedef struct {
    char (*node)[24];
    int   n_nodes;
    edge *e;
    int   n_edges;
} dotgraph;

static dotgraph parse(const char *text)
{
    dotgraph d = {0};
    size_t lines = 1;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    d.node = calloc(lines, sizeof *d.node);
    d.e = calloc(lines, sizeof *d.e);
    cr_assert(d.node && d.e);
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        while (*p == ' ') p++;
        char a[24], b[24];
        int k = 0;
        /* "ID [label=..." is a node; "ID -> ID [..." an edge */
        if (sscanf(p, "%23[a-z0-9] -> %23[a-z0-9] [%n", a, b, &k) == 2 && k > 0) {
            snprintf(d.e[d.n_edges].from, sizeof a, "%s", a);
            snprintf(d.e[d.n_edges++].to, sizeof b, "%s", b);
        } else if (sscanf(p, "%23[a-z0-9] [label=%n", a, &k) == 1 && k > 0) {
            snprintf(d.node[d.n_nodes++], sizeof a, "%s", a);
        }
        p = *end ? end + 1 : end;
    }
    return d;
}

static void dotgraph_free(dotgraph *d)
{
    free(d->node);
    free(d->e);
}

static int node_index(const dotgraph *d, const char *name)
{
    for (int i = 0; i < d->n_nodes; i++)
        if (!strcmp(d->node[i], name)) return i;
    return -1;
}

/* Which nodes are reachable from root along gradient edges (both ends 'g'). */
static bool *reach_from(const dotgraph *d, const char *root)
{
    bool *seen = calloc((size_t)d->n_nodes + 1, sizeof *seen);
    int *stack = calloc((size_t)d->n_nodes + 1, sizeof *stack), top = 0;
    cr_assert(seen && stack);
    int r = node_index(d, root);
    cr_assert_geq(r, 0, "no gradient node %s for the output", root);
    seen[r] = true;
    stack[top++] = r;
    while (top) {
        const char *at = d->node[stack[--top]];
        for (int i = 0; i < d->n_edges; i++) {
            const edge *e = &d->e[i];
            if (e->from[0] != 'g' || e->to[0] != 'g' || strcmp(e->from, at)) continue;
            int k = node_index(d, e->to);
            cr_assert_geq(k, 0, "gradient edge to %s, which is no node", e->to);
            if (!seen[k]) seen[k] = true, stack[top++] = k;
        }
    }
    free(stack);
    return seen;
}

static char *dot_text(const tg_graph *g, int depth)
{
    tg_dot_opts o = {.depth = depth, .backward = true};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(tg_graph_dot(g, &o, f), TG_OK, "%s", tg_last_error());
    fclose(f);
    return buf;
}

/* Expanded: each parameter's and differentiable input's gradient node is
 * reachable from the output's. Returns how many were checked. */
static int check_expanded(const char *layer, bool unfused)
{
    /* the layer with its default config, parameters zero, inputs requiring grad */
    tt_layer b = tt_layer_new(layer, NULL, 0, &(tt_layer_opts){.unfused = unfused});
    char *t = dot_text(b.g, 0);
    dotgraph d = parse(t);
    char root[24], name[24];
    snprintf(root, sizeof root, "gn%d", tg_node_id(b.out.y));
    bool *seen = reach_from(&d, root);
    int checked = 0;
    for (int i = 0; i < tg_graph_node_count(b.g); i++) {
        const tg_node *n = tg_graph_node(b.g, i);
        bool want = (n->kind == TG_NODE_PARAM && !n->param->frozen) ||
                    (n->kind == TG_NODE_INPUT && n->requires_grad);
        if (!want) continue;
        snprintf(name, sizeof name, "gn%d", n->id);
        int k = node_index(&d, name);
        cr_assert_geq(k, 0, "%s%s: no gradient node for %s '%s'", layer,
                      unfused ? " (unfused)" : "", n->kind == TG_NODE_PARAM ? "parameter" : "input",
                      tg_node_name(n));
        cr_assert(seen[k], "%s%s: the gradient of %s '%s' (%s) is not reachable from the "
                  "output's (%s)", layer, unfused ? " (unfused)" : "",
                  n->kind == TG_NODE_PARAM ? "parameter" : "input", tg_node_name(n), name, root);
        checked++;
    }
    free(seen);
    dotgraph_free(&d);
    free(t);
    tt_layer_free(&b);
    return checked;
}

Test(dot_backward, every_layer_connected)
{
    tt_deadline(20);
    int layers = tg_layer_class_count();
    cr_assert_geq(layers, 8, "the registry has %d layers", layers);
    for (int i = 0; i < layers; i++) {
        const char *name = tg_layer_class_at(i)->name;
        int checked = check_expanded(name, false);
        cr_assert_gt(checked, 0, "%s: no parameter or input with a gradient was checked", name);
    }
}

Test(dot_backward, unfused_connected)
{
    tt_deadline(20);
    for (int i = 0; i < tg_layer_class_count(); i++)
        check_expanded(tg_layer_class_at(i)->name, true);
}

static int count_boxes(const char *t)
{
    int n = 0;
    for (const char *p = t; (p = strstr(p, "shape=box3d, style=filled")); p++) n++;
    return n;
}

/* Collapsed into boxes: exactly one gradient node takes no gradient edge (the
 * output's, or its box's) and every gradient node is reachable from it. */
static void check_collapsed(const char *layer, int depth, bool unfused)
{
    tt_layer b = tt_layer_new(layer, NULL, 0, &(tt_layer_opts){.unfused = unfused});
    char *t = dot_text(b.g, depth);
    dotgraph d = parse(t);
    int root = -1, gnodes = 0;
    for (int i = 0; i < d.n_nodes; i++) {
        if (d.node[i][0] != 'g') continue;
        gnodes++;
        bool fed = false;
        for (int k = 0; k < d.n_edges && !fed; k++)
            fed = d.e[k].from[0] == 'g' && !strcmp(d.e[k].to, d.node[i]);
        if (fed) continue;
        cr_assert_eq(root, -1, "%s --depth %d: two gradient nodes take no gradient: %s and %s",
                     layer, depth, d.node[root], d.node[i]);
        root = i;
    }
    cr_assert_geq(root, 0, "%s --depth %d: no root gradient", layer, depth);
    cr_assert_gt(count_boxes(t), 0, "%s --depth %d: nothing collapsed", layer, depth);
    bool *seen = reach_from(&d, d.node[root]);
    for (int i = 0; i < d.n_nodes; i++)
        cr_assert(d.node[i][0] != 'g' || seen[i], "%s --depth %d: gradient node %s is not "
                  "reachable from %s", layer, depth, d.node[i], d.node[root]);
    cr_assert_gt(gnodes, 3);
    free(seen);
    dotgraph_free(&d);
    free(t);
    tt_layer_free(&b);
}

Test(dot_backward, collapsed_connected)
{
    tt_deadline(20);
    check_collapsed("crossformer", 1, false);
    check_collapsed("crossformer", 2, false);
    check_collapsed("crossformer", 1, true);
    check_collapsed("tsa", 1, false);
    check_collapsed("tsa", 2, true);
}
