/*
 * test_dot.c - diagrams: the .dot text has the clusters, labels and shapes it
 * must have (parsed, not just non-empty), is byte-identical for the same
 * graph, stays consistent when collapsed, renders with Graphviz when it is
 * installed; SVG heatmaps and plots are well-formed with one cell per weight.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layer_case.h"

/* The diagram as a string (free it). */
static char *dot_text(const tg_graph *g, const tg_dot_opts *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(tg_graph_dot(g, o, f), TG_OK, "%s", tg_last_error());
    fclose(f);
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

Test(dot, clusters_labels_and_shapes)
{
    tt_layer b = tt_layer_new("attention_layer", (const char *[]){"output_attention=true"}, 1,
                              NULL);
    char *t = dot_text(b.g, NULL);
    /* one cluster per scope: attention_layer, its four projections, inner_attention */
    cr_assert_eq(count(t, "subgraph cluster_"), 6, "%d clusters", count(t, "subgraph cluster_"));
    const char *labels[] = {"label=\"attention_layer\"", "label=\"query_projection\"",
                            "label=\"key_projection\"", "label=\"value_projection\"",
                            "label=\"out_projection\"", "label=\"inner_attention\""};
    for (size_t i = 0; i < sizeof labels / sizeof *labels; i++)
        cr_assert(strstr(t, labels[i]), "missing %s", labels[i]);
    /* op nodes carry their key attribute; parameters their state_dict key */
    cr_assert(strstr(t, "einsum\\nblhe,bshe->bhls"));
    cr_assert(strstr(t, "einsum\\nbhls,bshd->blhd"));
    cr_assert(strstr(t, "softmax\\ndim=3 scale=0.353553"));
    cr_assert(strstr(t, "label=\"query_projection.weight\\n[16, 16]\""));
    cr_assert(strstr(t, "label=\"input x\\n[2, 6, 16]\""));
    /* every edge has the full shape of its tensor, all dims */
    cr_assert(strstr(t, "[label=\"[2, 2, 6, 6]\"]"), "the scores edge shows all four dims");
    int edges = count(t, " -> ");
    cr_assert_eq(count(t, "[label=\"["), edges, "every edge is labelled with a shape");
    /* inputs, parameters and outputs are drawn distinctly */
    cr_assert(strstr(t, "fillcolor=\"#dae8fc\""));
    cr_assert(strstr(t, "fillcolor=\"#fff2cc\""));
    cr_assert(strstr(t, "peripheries=2"));
    free(t);
    tt_layer_free(&b);
}

Test(dot, same_graph_same_bytes)
{
    tt_layer a = tt_layer_new("attention_layer", NULL, 0, NULL);
    tt_layer b = tt_layer_new("attention_layer", NULL, 0, NULL);
    tg_dot_opts o = {.backward = true, .rankdir = TG_RANKDIR_LR, .title = "t"};
    char *x = dot_text(a.g, &o), *y = dot_text(a.g, &o), *z = dot_text(b.g, &o);
    cr_assert_str_eq(x, y);
    cr_assert_str_eq(x, z, "two builds of the same layer give the same diagram");
    cr_assert(strstr(x, "rankdir=LR"));
    free(x), free(y), free(z);
    tt_layer_free(&a);
    tt_layer_free(&b);
}

Test(dot, collapse_keeps_edge_shapes_consistent)
{
    /* output_attention: the unfused einsum / softmax / dropout / einsum chain */
    tt_layer b = tt_layer_new("attention_layer", (const char *[]){"output_attention=true"}, 1,
                              NULL);
    tg_dot_opts o = {.depth = 1};
    char *t = dot_text(b.g, &o);
    /* depth 1 (counted from the layer's own modules): the projections and
     * inner_attention become boxes inside attention_layer */
    cr_assert_eq(count(t, "subgraph cluster_"), 1);
    cr_assert_eq(count(t, "shape=box3d"), 5);
    cr_assert(strstr(t, "label=\"inner_attention\\n(4 ops)\""), "%s", t);
    /* every edge label is the shape of the node the edge leaves (or of a tensor
     * leaving the box it leaves) */
    for (const char *p = t; (p = strstr(p, " -> ")); p += 4) {
        const char *src = p;
        while (src > t && src[-1] != ' ') src--;
        const char *lab = strstr(p, "[label=\"");
        cr_assert(lab);
        lab += 8;
        char shape[64];
        size_t n = strcspn(lab, "\"");
        cr_assert(n < sizeof shape);
        memcpy(shape, lab, n);
        shape[n] = '\0';
        bool found = false;
        if (src[0] == 'n') {
            const tg_tensor *v = tg_node_value(tg_graph_node(b.g, atoi(src + 1)));
            char want[64];
            found = !strcmp(tg_shape_str(v->rank, v->shape, want, sizeof want), shape);
        } else {
            int scope = atoi(src + 1);
            for (int i = 0; i < tg_graph_node_count(b.g) && !found; i++) {
                tg_node *nd = tg_graph_node(b.g, i);
                int s = tg_node_scope(nd);
                while (s > 0 && s != scope) s = tg_graph_scope_parent(b.g, s);
                const tg_tensor *v = tg_node_value(nd);
                char have[64];
                found = s == scope && !strcmp(tg_shape_str(v->rank, v->shape, have, sizeof have),
                                              shape);
            }
        }
        cr_assert(found, "edge from %.*s labelled %s matches no tensor", (int)(p - src), src, shape);
    }
    free(t);
    /* depth 2: below the modules' own depth, everything expanded */
    o.depth = 2;
    t = dot_text(b.g, &o);
    cr_assert_eq(count(t, "subgraph cluster_"), 6);
    cr_assert_eq(count(t, "shape=box3d"), 0);
    free(t);
    tt_layer_free(&b);
}

Test(dot, backward_adds_gradient_nodes)
{
    tt_layer b = tt_layer_new("attention_layer", NULL, 0, NULL);
    tg_dot_opts o = {.backward = true};
    char *t = dot_text(b.g, &o);
    cr_assert(strstr(t, "label=\"grad query_projection.weight\\n[16, 16]\""));
    cr_assert(strstr(t, "label=\"grad x\\n[2, 6, 16]\""));
    cr_assert_gt(count(t, "style=dashed, constraint=false"), 10, "gradient edges");
    /* every gradient node is linked to the forward node it differentiates */
    cr_assert_eq(count(t, "[label=\"grad "), count(t, "arrowhead=none"));
    free(t);
    tt_layer_free(&b);
}

Test(dot, renders_with_graphviz)
{
    if (system("command -v dot >/dev/null 2>&1") != 0) {
        cr_log_warn("Graphviz is not installed: rendering not checked (CI installs it)");
        return;
    }
    tt_layer b = tt_layer_new("attention_layer", NULL, 0, NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/dot-XXXXXX", tt_tmpdir());
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    tg_dot_opts o = {.backward = true};
    cr_assert_eq(tg_graph_dot_save(b.g, &o, path), TG_OK);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "dot -Tsvg %s -o %s.svg 2>%s.err", path, path, path);
    cr_assert_eq(system(cmd), 0, "dot rejected the file");
    snprintf(cmd, sizeof cmd, "test -s %s.svg && ! test -s %s.err", path, path);
    cr_assert_eq(system(cmd), 0, "dot printed warnings or wrote nothing");
    snprintf(cmd, sizeof cmd, "rm -f %s %s.svg %s.err", path, path, path);
    cr_assert_eq(system(cmd), 0);
    tt_layer_free(&b);
}

Test(dot, graph_in_error_is_refused)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_graph_fail(g, "broken on purpose");
    FILE *f = fopen("/dev/null", "w");
    cr_assert_eq(tg_graph_dot(g, NULL, f), TG_ERR_STATE);
    tt_assert_last_error("broken on purpose");
    fclose(f);
    tg_graph_free(g);
}

/* ---- SVG ---- */

static char *slurp(const char *path)
{
    void *d;
    size_t n;
    cr_assert_eq(tg_read_file(path, 0, &d, &n), TG_OK);
    char *s = malloc(n + 1);
    memcpy(s, d, n);
    s[n] = '\0';
    tg_free(d);
    return s;
}

/* Every element opened is closed, in order (a small well-formedness check). */
static void assert_balanced_xml(const char *s)
{
    char stack[64][32];
    int depth = 0;
    for (const char *p = s; (p = strchr(p, '<')); p++) {
        if (p[1] == '?' || p[1] == '!') continue;
        const char *end = strchr(p, '>');
        cr_assert(end, "unterminated tag");
        bool closing = p[1] == '/', self = end[-1] == '/';
        const char *name = p + 1 + closing;
        size_t n = strcspn(name, " >/");
        cr_assert(n > 0 && n < 32);
        if (closing) {
            cr_assert(depth > 0 && strlen(stack[depth - 1]) == n &&
                      !strncmp(stack[depth - 1], name, n), "mismatched </%.*s>", (int)n, name);
            depth--;
        } else if (!self) {
            cr_assert(depth < 64);
            memcpy(stack[depth], name, n);
            stack[depth++][n] = '\0';
        }
    }
    cr_assert_eq(depth, 0, "unclosed <%s>", depth ? stack[depth - 1] : "");
}

Test(svg, heatmap_one_cell_per_weight)
{
    tg_tensor *a = tg_tensor_new(TG_F32, 4, (int64_t[]){2, 3, 5, 7});
    tt_randn(a, 1);
    char path[128];
    snprintf(path, sizeof path, "%s/heat-XXXXXX", tt_tmpdir());
    close(mkstemp(path));
    tg_heatmap_opts o = {.batch = 1, .head = -1};
    cr_assert_eq(tg_svg_heatmap(path, a, &o), TG_OK, "%s", tg_last_error());
    char *s = slurp(path);
    assert_balanced_xml(s);
    cr_assert_eq(count(s, "<rect class=\"cell\""), 3 * 5 * 7);
    cr_assert_eq(count(s, "class=\"head\""), 3);
    cr_assert(strstr(s, "key position s") && strstr(s, "query position l"));
    cr_assert(strstr(s, "class=\"scale\""), "a colour scale");
    free(s);
    o.head = 2;
    cr_assert_eq(tg_svg_heatmap(path, a, &o), TG_OK);
    s = slurp(path);
    cr_assert_eq(count(s, "<rect class=\"cell\""), 5 * 7);
    free(s);
    o.head = 3;
    cr_assert_eq(tg_svg_heatmap(path, a, &o), TG_ERR_INVALID);
    tt_assert_last_error("head 3 is out of range [0, 3)");
    o.head = 0, o.batch = 2;
    cr_assert_eq(tg_svg_heatmap(path, a, &o), TG_ERR_INVALID);
    tt_assert_last_error("batch 2 is out of range");
    remove(path);
    tg_tensor_free(a);
}

Test(svg, line_plot)
{
    double x[5] = {1, 2, 3, 4, 5}, y1[5] = {1, 0.5, 0.3, 0.2, 0.15}, y2[5] = {1.2, 0.8, NAN, 0.5, 0.4};
    tg_series s[2] = {{"train <loss>", x, y1, 5}, {"val", x, y2, 5}};
    char path[128];
    snprintf(path, sizeof path, "%s/plot-XXXXXX", tt_tmpdir());
    close(mkstemp(path));
    cr_assert_eq(tg_svg_lines(path, "loss & more", "epoch", "mse", s, 2), TG_OK);
    char *t = slurp(path);
    assert_balanced_xml(t);
    cr_assert_eq(count(t, "class=\"series\""), 2);
    cr_assert(strstr(t, "train &lt;loss&gt;") && strstr(t, "loss &amp; more"));
    free(t);
    remove(path);
}
