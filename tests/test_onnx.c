/*
 * test_onnx.c - ONNX export (tg_graph_onnx_save, tgraph export), verified
 * three ways:
 *   1. everywhere: the file read back by a small protobuf reader here: IR 8,
 *      opset 17, the inputs and output, every parameter an initializer
 *      under its state_dict name with its bytes, every node input produced
 *      before it (a topological, closed graph), the expected op types;
 *   2. Debian's python3-onnx: onnx.checker.check_model(full_check=True)
 *      and strict shape inference, on every layer (skipped with a message
 *      when the module is missing: apt-get install python3-onnx);
 *   3. onnxruntime (npm onnxruntime-node, installed with --ignore-scripts
 *      into the test's temporary directory, or $TGRAPH_ORT_DIR when it
 *      names a directory holding node_modules/onnxruntime-node): the
 *      outputs equal `tgraph run` on the same inputs and weights to 1e-5,
 *      for every layer, at the export's batch and (a symbolic batch) at
 *      another, and for trained checkpoints of crossformer, dlinear,
 *      patchtst, itransformer and gpt; and every op of the registry but the
 *      losses on its gradcheck case (skipped with a message when node, npm
 *      or the npm registry cannot be had).
 * The runner is tests/onnx_run.js.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "layer_case.h"

extern char **environ;

/* ---- a protobuf reader: just enough of ModelProto ---- */

typedef struct {
    const uint8_t *p, *end;
} pbr;

static bool pb_varint(pbr *r, uint64_t *v)
{
    *v = 0;
    for (int s = 0; s < 64 && r->p < r->end; s += 7) {
        uint8_t b = *r->p++;
        *v |= (uint64_t)(b & 0x7f) << s;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The next field: its number, wire type, varint value or (length-delimited) bytes. */
static bool pb_next(pbr *r, int *field, int *wt, uint64_t *v, pbr *sub)
{
    uint64_t key;
    if (r->p >= r->end || !pb_varint(r, &key)) return false;
    *field = (int)(key >> 3);
    *wt = (int)(key & 7);
    if (*wt == 0) return pb_varint(r, v);
    if (*wt == 2) {
        if (!pb_varint(r, v) || *v > (uint64_t)(r->end - r->p)) return false;
        *sub = (pbr){r->p, r->p + *v};
        r->p += *v;
        return true;
    }
    size_t n = *wt == 1 ? 8 : *wt == 5 ? 4 : 0;
    cr_assert(n, "wire type %d", *wt);
    cr_assert(r->p + n <= r->end, "truncated fixed field");
    r->p += n;
    return true;
}

static char *pb_str(pbr s)
{
    size_t n = (size_t)(s.end - s.p);
    char *c = malloc(n + 1);
    cr_assert(c);
    memcpy(c, s.p, n);
    c[n] = '\0';
    return c;
}

#define MAX_NAMES 4096

typedef struct {
    char *name;
    int   dtype, rank;
    int64_t dims[8];
    pbr   raw;
} ox_tensor;

typedef struct {
    int64_t   ir, opset;
    int       n_nodes, n_inits, n_in, n_out;
    char     *op[MAX_NAMES];
    char    **node_in[MAX_NAMES], **node_out[MAX_NAMES];
    int       node_n_in[MAX_NAMES], node_n_out[MAX_NAMES];
    ox_tensor init[MAX_NAMES];
    char     *in[16], *out[16];
    int64_t   in_dims[16][8], out_dims[16][8];
    int       in_rank[16], out_rank[16];
    uint8_t  *bytes;
} ox_model;

static void read_node(ox_model *m, pbr r)
{
    int f, wt, k = m->n_nodes++;
    uint64_t v;
    pbr s;
    cr_assert(k < MAX_NAMES);
    m->node_in[k] = calloc(64, sizeof(char *));
    m->node_out[k] = calloc(8, sizeof(char *));
    while (pb_next(&r, &f, &wt, &v, &s)) {
        if (f == 1) {
            cr_assert(m->node_n_in[k] < 64);
            m->node_in[k][m->node_n_in[k]++] = pb_str(s);
        }
        if (f == 2) {
            cr_assert(m->node_n_out[k] < 8);
            m->node_out[k][m->node_n_out[k]++] = pb_str(s);
        }
        if (f == 4) m->op[k] = pb_str(s);
    }
    cr_assert(m->op[k], "node %d has no op_type", k);
}

static void read_tensor(ox_model *m, pbr r)
{
    int f, wt;
    uint64_t v;
    pbr s;
    cr_assert(m->n_inits < MAX_NAMES);
    ox_tensor *t = &m->init[m->n_inits++];
    while (pb_next(&r, &f, &wt, &v, &s)) {
        if (f == 1) t->dims[t->rank++] = (int64_t)v;
        if (f == 2) t->dtype = (int)v;
        if (f == 8) t->name = pb_str(s);
        if (f == 9) t->raw = s;
    }
    cr_assert(t->name, "an initializer without a name");
}

/* ValueInfoProto: name, type.tensor_type.shape.dim[].dim_value */
static char *read_io(pbr r, int64_t *dims, int *rank)
{
    int f, wt, f2, wt2, f3, wt3, f4, wt4, f5, wt5;
    uint64_t v;
    pbr s, s2, s3, s4, s5;
    char *name = NULL;
    *rank = 0;
    while (pb_next(&r, &f, &wt, &v, &s)) {
        if (f == 1) name = pb_str(s);
        if (f != 2) continue;
        while (pb_next(&s, &f2, &wt2, &v, &s2))           /* TypeProto.tensor_type */
            while (f2 == 1 && pb_next(&s2, &f3, &wt3, &v, &s3))   /* Tensor.shape */
                while (f3 == 2 && pb_next(&s3, &f4, &wt4, &v, &s4))   /* dim */
                    while (f4 == 1 && pb_next(&s4, &f5, &wt5, &v, &s5)) {
                        if (f5 == 1) dims[(*rank)++] = (int64_t)v;
                        if (f5 == 2) dims[(*rank)++] = -1;   /* dim_param: symbolic */
                    }
    }
    cr_assert(name, "a graph input or output without a name");
    return name;
}

static void read_graph(ox_model *m, pbr r)
{
    int f, wt;
    uint64_t v;
    pbr s;
    while (pb_next(&r, &f, &wt, &v, &s)) {
        if (f == 1) read_node(m, s);
        if (f == 5) read_tensor(m, s);
        if (f == 11) {
            cr_assert(m->n_in < 16);
            m->in[m->n_in] = read_io(s, m->in_dims[m->n_in], &m->in_rank[m->n_in]);
            m->n_in++;
        }
        if (f == 12) {
            cr_assert(m->n_out < 16);
            m->out[m->n_out] = read_io(s, m->out_dims[m->n_out], &m->out_rank[m->n_out]);
            m->n_out++;
        }
    }
}

static ox_model *read_model(const char *path)
{
    ox_model *m = calloc(1, sizeof *m);
    cr_assert(m);
    size_t n;
    m->bytes = (uint8_t *)tt_slurp(path, &n);
    pbr r = {m->bytes, m->bytes + n}, s;
    int f, wt;
    uint64_t v;
    while (pb_next(&r, &f, &wt, &v, &s)) {
        if (f == 1) m->ir = (int64_t)v;
        if (f == 7) read_graph(m, s);
        if (f == 8) {
            int f2, wt2;
            pbr s2;
            while (pb_next(&s, &f2, &wt2, &v, &s2))
                if (f2 == 2) m->opset = (int64_t)v;
        }
    }
    cr_assert(r.p == r.end, "%s: bytes left after the last field", path);
    return m;
}

static void free_model(ox_model *m)
{
    for (int i = 0; i < m->n_nodes; i++) {
        for (int k = 0; k < m->node_n_in[i]; k++) free(m->node_in[i][k]);
        for (int k = 0; k < m->node_n_out[i]; k++) free(m->node_out[i][k]);
        free(m->node_in[i]);
        free(m->node_out[i]);
        free(m->op[i]);
    }
    for (int i = 0; i < m->n_inits; i++) free(m->init[i].name);
    for (int i = 0; i < m->n_in; i++) free(m->in[i]);
    for (int i = 0; i < m->n_out; i++) free(m->out[i]);
    free(m->bytes);
    free(m);
}

static const ox_tensor *find_init(const ox_model *m, const char *name)
{
    for (int i = 0; i < m->n_inits; i++)
        if (!strcmp(m->init[i].name, name)) return &m->init[i];
    return NULL;
}

static int count_op(const ox_model *m, const char *op)
{
    int n = 0;
    for (int i = 0; i < m->n_nodes; i++) n += !strcmp(m->op[i], op);
    return n;
}

/* ---- the checks that run everywhere ---- */

/* Every node input is a graph input, an initializer or an earlier node's
 * output; no value is produced twice; every graph output is produced. */
static void assert_closed(const ox_model *m, const char *what)
{
    const char **known = calloc(3 * MAX_NAMES + 16, sizeof *known);
    int n = 0;
    cr_assert(known);
    for (int i = 0; i < m->n_in; i++) known[n++] = m->in[i];
    for (int i = 0; i < m->n_inits; i++) known[n++] = m->init[i].name;
    for (int i = 0; i < m->n_nodes; i++) {
        for (int k = 0; k < m->node_n_in[i]; k++) {
            const char *v = m->node_in[i][k];
            bool found = !*v;   /* "": an omitted optional input */
            for (int j = 0; j < n && !found; j++) found = !strcmp(known[j], v);
            cr_assert(found, "%s: node %d (%s) reads '%s', which nothing before it produces",
                      what, i, m->op[i], v);
        }
        for (int k = 0; k < m->node_n_out[i]; k++) {
            for (int j = 0; j < n; j++)
                cr_assert(strcmp(known[j], m->node_out[i][k]), "%s: '%s' produced twice", what,
                          m->node_out[i][k]);
            cr_assert(n < 3 * MAX_NAMES + 16);
            known[n++] = m->node_out[i][k];
        }
    }
    for (int i = 0; i < m->n_out; i++) {
        bool found = false;
        for (int j = 0; j < n && !found; j++) found = !strcmp(known[j], m->out[i]);
        cr_assert(found, "%s: output '%s' is never produced", what, m->out[i]);
    }
    free(known);
}

/* IR 8, opset 17, the layer's inputs and output y with their shapes, and
 * every parameter an initializer under its state_dict name, bytes equal. */
static void assert_model_of(const ox_model *m, const tt_layer *b, const char *what)
{
    cr_assert_eq(m->ir, 8, "%s: ir_version %lld", what, (long long)m->ir);
    cr_assert_eq(m->opset, 17, "%s: opset %lld", what, (long long)m->opset);
    int n_in = tg_layer_input_count(b->l);
    cr_assert_eq(m->n_in, n_in, "%s: %d graph inputs, the layer has %d", what, m->n_in, n_in);
    for (int i = 0; i < n_in; i++) {
        const tg_tensor *v = tg_node_value(b->in[i]);
        cr_assert_str_eq(m->in[i], tg_node_name(b->in[i]), "%s: input %d", what, i);
        cr_assert_eq(m->in_rank[i], v->rank, "%s: input %s rank", what, m->in[i]);
        for (int d = 0; d < v->rank; d++) cr_assert_eq(m->in_dims[i][d], v->shape[d]);
    }
    cr_assert_eq(m->n_out, 1, "%s: %d outputs", what, m->n_out);
    cr_assert_str_eq(m->out[0], "y");
    const tg_tensor *y = tg_node_value(b->out.y);
    cr_assert_eq(m->out_rank[0], y->rank, "%s: output rank", what);
    for (int d = 0; d < y->rank; d++) cr_assert_eq(m->out_dims[0][d], y->shape[d], "%s", what);
    for (int i = 0; i < tg_params_count(b->ps); i++) {
        const tg_param *p = tg_params_at(b->ps, i);
        const ox_tensor *t = find_init(m, p->name);
        cr_assert(t, "%s: parameter %s is no initializer", what, p->name);
        cr_assert_eq(t->dtype, 1, "%s: %s is not FLOAT", what, p->name);
        cr_assert_eq(t->rank, p->value.rank, "%s: %s rank", what, p->name);
        for (int d = 0; d < t->rank; d++) cr_assert_eq(t->dims[d], p->value.shape[d]);
        size_t bytes = (size_t)p->value.numel * sizeof(float);
        cr_assert_eq((size_t)(t->raw.end - t->raw.p), bytes, "%s: %s raw_data size", what, p->name);
        cr_assert(!memcmp(t->raw.p, p->value.data, bytes), "%s: %s raw_data differs", what,
                  p->name);
    }
    assert_closed(m, what);
}

static ox_model *export_layer(const tt_layer *b, const char *file)
{
    const char *path = tt_path(file);
    cr_assert_eq(tg_graph_onnx_save(b->g, 1, &b->out.y, (const char *[]){"y"}, path), TG_OK,
                 "%s: %s", file, tg_last_error());
    return read_model(path);
}

Test(onnx, tsa_model_structure)
{
    tt_layer_opts o = {.init = true, .seed = 3};
    tt_layer b = tt_layer_new("tsa", NULL, 0, &o);
    ox_model *m = export_layer(&b, "tsa.onnx");
    assert_model_of(m, &b, "tsa");
    cr_assert(find_init(m, "time_attention.query_projection.weight"));
    cr_assert(find_init(m, "router"));
    cr_assert(count_op(m, "Einsum") >= 6, "sdpa is two Einsum nodes each (3 of them)");
    cr_assert_eq(count_op(m, "Erf"), 2, "GELU in its Erf form, twice (MLP1, MLP2)");
    cr_assert_eq(count_op(m, "LayerNormalization"), 4);
    cr_assert_eq(count_op(m, "Dropout"), 0, "dropout is the identity in inference");
    cr_assert_eq(count_op(m, "MatMul"), 16, "one per linear");
    free_model(m);
    tt_layer_free(&b);
}

Test(onnx, every_layer_writes_a_closed_model)
{
    for (int i = 0; i < tg_layer_class_count(); i++) {
        const char *name = tg_layer_class_at(i)->name;
        tt_layer_opts o = {.init = true, .seed = (uint64_t)i + 1};
        tt_layer b = tt_layer_new(name, NULL, 0, &o);
        char file[96];
        snprintf(file, sizeof file, "%s.onnx", name);
        ox_model *m = export_layer(&b, file);
        assert_model_of(m, &b, name);
        cr_log_info("onnx: %s: %d nodes, %d initializers", name, m->n_nodes, m->n_inits);
        free_model(m);
        tt_layer_free(&b);
    }
}

Test(onnx, the_same_graph_gives_the_same_bytes)
{
    tt_layer_opts o = {.init = true, .seed = 1};
    tt_layer b = tt_layer_new("attention_layer", NULL, 0, &o);
    const char *p1 = tt_path("a.onnx"), *p2 = tt_path("b.onnx");
    cr_assert_eq(tg_graph_onnx_save(b.g, 1, &b.out.y, (const char *[]){"y"}, p1), TG_OK);
    cr_assert_eq(tg_graph_onnx_save(b.g, 1, &b.out.y, (const char *[]){"y"}, p2), TG_OK);
    size_t n1, n2;
    char *a = tt_slurp(p1, &n1), *c = tt_slurp(p2, &n2);
    cr_assert(n1 == n2 && !memcmp(a, c, n1), "two exports of one graph differ");
    free(a);
    free(c);
    tt_layer_free(&b);
}

Test(onnx, attention_weights_as_a_second_output)
{
    tt_layer b = tt_layer_new("full_attention", NULL, 0, NULL);
    const char *path = tt_path("fa.onnx");
    tg_node *outs[2] = {b.out.y, b.out.attn};
    cr_assert_eq(tg_graph_onnx_save(b.g, 2, outs, (const char *[]){"y", "attn"}, path), TG_OK,
                 "%s", tg_last_error());
    ox_model *m = read_model(path);
    cr_assert_eq(m->n_out, 2);
    cr_assert_str_eq(m->out[1], "attn");
    cr_assert_eq(m->out_rank[1], 4);
    assert_closed(m, "full_attention");
    free_model(m);
    tt_layer_free(&b);
}

/* ---- errors ---- */

Test(onnx, an_op_without_an_onnx_form_is_named)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (const int64_t[]){4});
    tg_node *t = tg_input(g, "t", TG_F32, 1, (const int64_t[]){4});
    tg_node *loss = tg_mse_loss(g, x, t, TG_REDUCTION_MEAN);
    cr_assert(loss, "%s", tg_graph_error(g));
    const char *path = tt_path("loss.onnx");
    cr_assert_eq(tg_graph_onnx_save(g, 1, &loss, (const char *[]){"loss"}, path), TG_ERR_INVALID);
    tt_assert_last_error("op 'mse_loss'");
    tt_assert_last_error("has no ONNX form");
    cr_assert(access(path, F_OK) != 0, "nothing is written on an error");
    /* outputs: none, unnamed, named twice, from another graph */
    cr_assert_eq(tg_graph_onnx_save(g, 0, &x, (const char *[]){"y"}, path), TG_ERR_INVALID);
    tt_assert_last_error("no outputs");
    cr_assert_eq(tg_graph_onnx_save(g, 1, &x, (const char *[]){""}, path), TG_ERR_INVALID);
    tt_assert_last_error("has no name");
    cr_assert_eq(tg_graph_onnx_save(g, 2, (tg_node *[]){x, t}, (const char *[]){"y", "y"}, path),
                 TG_ERR_INVALID);
    tt_assert_last_error("two outputs named 'y'");
    tg_graph *h = tg_graph_new(TG_F32);
    tg_node *z = tg_input(h, "z", TG_F32, 1, (const int64_t[]){4});
    cr_assert_eq(tg_graph_onnx_save(g, 1, &z, (const char *[]){"y"}, path), TG_ERR_INVALID);
    tt_assert_last_error("from another graph");
    tg_graph_free(h);
    tg_graph_free(g);
}

Test(onnx, training_mode_dropout_and_batch_norm_are_refused)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_graph_set_training(g, true);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (const int64_t[]){4, 3});
    tg_node *y = tg_dropout(g, x, 0.5);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert_eq(tg_graph_onnx_save(g, 1, &y, (const char *[]){"y"}, tt_path("d.onnx")),
                 TG_ERR_INVALID);
    tt_assert_last_error("dropout in training mode");
    tg_graph_free(g);
}

Test(onnx, cli_errors)
{
    tt_expect_cli_error(TT_ARGS("export", "tsa"), "missing --onnx", NULL);
    tt_expect_cli_error(TT_ARGS("export", "--onnx", tt_path("m.onnx")), "missing LAYER", NULL);
    tt_expect_cli_error(TT_ARGS("export", "nosuch", "--onnx", tt_path("m.onnx")), "nosuch", NULL);
    tt_expect_cli_error(TT_ARGS("export", "tsa", "--set", "bogus=1", "--onnx", tt_path("m.onnx")),
                        "bogus", NULL);
    tt_expect_cli_error(TT_ARGS("export", "tsa", "--attn", "--onnx", tt_path("m.onnx")),
                        "--attn", "no attention weights");
    tt_expect_cli_error(TT_ARGS("export", "tsa", "--weights", tt_path("missing/w.safetensors"),
                                "--onnx", tt_path("m.onnx")), "--weights", NULL);
    char err[512];
    const char *w = tt_path("w.safetensors");
    cr_assert_eq(tt_run_tool(TT_ARGS("run", "seg_merging", "--input", "x=tests/fixtures/"
                                     "oracle/seg_merging/x.npy", "--out", tt_path("y.npy"),
                                     "--save-weights", w), err, sizeof err), 0, "%s", err);
    tt_expect_cli_error(TT_ARGS("export", "seg_merging", "--weights", w, "--onnx", w),
                        "--onnx", NULL);
    tt_expect_cli_error(TT_ARGS("export", "tsa", "--checkpoint", w, "--onnx", tt_path("m.onnx")),
                        "LAYER 'tsa' and --checkpoint", NULL);
    tt_expect_cli_error(TT_ARGS("export", "--checkpoint", w, "--weights", w, "--onnx",
                                tt_path("m.onnx")), "--weights and --checkpoint", NULL);
    tt_expect_cli_error(TT_ARGS("export", "--checkpoint", w, "--onnx", tt_path("m.onnx")),
                        "--checkpoint", w);
    cr_assert(access(tt_path("m.onnx"), F_OK) != 0, "no model is left by a failed export");
}

/* ---- a symbolic batch ---- */

/* x [b, 4] -> (+ const [b, 4]: ones, or row r holding r) -> reshape [4b] -> relu (exp)
 * -> (reshape [b, 4]) */
typedef struct { bool other_op, ones, const_depends, flat_out; } batch_case;

static tg_node *row_constant(tg_graph *g, int64_t b)
{
    tg_tensor *t = tg_tensor_new(TG_F32, 2, (const int64_t[]){b, 4});
    cr_assert(t);
    for (int64_t k = 0; k < t->numel; k++) ((float *)t->data)[k] = (float)(k / 4);
    tg_node *n = tg_constant(g, "rows", t);
    tg_tensor_free(t);
    return n;
}

static tg_graph *batch_graph(int64_t b, batch_case c, tg_node **y)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (const int64_t[]){b, 4});
    tg_node *h = c.ones ? tg_add(g, x, tg_full(g, 2, (const int64_t[]){b, 4}, 1.0))
               : c.const_depends ? tg_add(g, x, row_constant(g, b)) : x;
    h = tg_reshape(g, h, 1, (const int64_t[]){4 * b});
    h = c.other_op ? tg_exp(g, h) : tg_relu(g, h);
    *y = c.flat_out ? h : tg_reshape(g, h, 2, (const int64_t[]){b, 4});
    cr_assert(*y, "%s", tg_graph_error(g));
    return g;
}

/* Export c at batch 2 and 3: the status, and the message on failure. */
static tg_status batch_export(batch_case c, const char *file)
{
    tg_node *y1, *y2;
    tg_graph *g1 = batch_graph(2, (batch_case){0}, &y1), *g2 = batch_graph(3, c, &y2);
    if (c.ones || c.const_depends || c.flat_out) {
        tg_graph_free(g1);
        g1 = batch_graph(2, c, &y1);
    }
    tg_status st = tg_graph_onnx_save_batch(g1, g2, 1, &y1, &y2, (const char *[]){"y"},
                                            tt_path(file));
    tg_graph_free(g1);
    tg_graph_free(g2);
    return st;
}

Test(onnx, dynamic_batch_and_when_it_is_refused)
{
    cr_assert_eq(batch_export((batch_case){0}, "b.onnx"), TG_OK, "%s", tg_last_error());
    ox_model *m = read_model(tt_path("b.onnx"));
    cr_assert(m->in_rank[0] == 2 && m->in_dims[0][0] == -1 && m->in_dims[0][1] == 4, "x [B, 4]");
    cr_assert(m->out_rank[0] == 2 && m->out_dims[0][0] == -1 && m->out_dims[0][1] == 4, "y [B, 4]");
    cr_assert_eq(count_op(m, "Shape"), 1, "the batch is read off x");
    cr_assert_eq(count_op(m, "Reshape"), 2);
    assert_closed(m, "batch");
    free_model(m);
    /* a constant [b, 4] of equal rows: one row, expanded to [B, 4] */
    cr_assert_eq(batch_export((batch_case){.ones = true}, "e.onnx"), TG_OK, "%s", tg_last_error());
    m = read_model(tt_path("e.onnx"));
    cr_assert_eq(count_op(m, "Expand"), 1);
    bool one_row = false;
    for (int i = 0; i < m->n_inits; i++)
        one_row |= m->init[i].dtype == 1 && m->init[i].rank == 2 && m->init[i].dims[0] == 1 &&
                   m->init[i].dims[1] == 4;
    cr_assert(one_row, "the constant is kept as one row [1, 4]");
    assert_closed(m, "batch constant");
    free_model(m);
    cr_assert_eq(batch_export((batch_case){.other_op = true}, "c.onnx"), TG_ERR_INVALID);
    tt_assert_last_error("no dynamic batch: node");
    cr_assert_eq(batch_export((batch_case){.const_depends = true}, "c.onnx"), TG_ERR_INVALID);
    tt_assert_last_error("depends on the batch size");
    cr_assert_eq(batch_export((batch_case){.flat_out = true}, "c.onnx"), TG_ERR_INVALID);
    tt_assert_last_error("dim 0 of 'y' is a multiple of the batch size");
    cr_assert(access(tt_path("c.onnx"), F_OK) != 0, "nothing is written when refused");
    tg_node *y;
    tg_graph *g = batch_graph(2, (batch_case){0}, &y);
    cr_assert_eq(tg_graph_onnx_save_batch(g, g, 1, &y, &y, (const char *[]){"y"},
                                          tt_path("c.onnx")), TG_ERR_INVALID);
    tt_assert_last_error("no input of the two graphs differs");
    tg_graph_free(g);
}

Test(onnx, cli_says_whether_the_batch_is_symbolic)
{
    char err[1024];
    cr_assert_eq(tt_run_tool(TT_ARGS("export", "tsa", "--onnx", tt_path("d.onnx")), err,
                             sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "tsa: batch dim b is symbolic"), "%s", err);
    ox_model *m = read_model(tt_path("d.onnx"));
    cr_assert(m->in_dims[0][0] == -1 && m->out_dims[0][0] == -1, "x and y are [B, ...]");
    free_model(m);
    cr_assert_eq(tt_run_tool(TT_ARGS("export", "tsa", "--fixed-batch", "--onnx", tt_path("f.onnx")),
                             err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "tsa: fixed shapes (batch 2): --fixed-batch"), "%s", err);
    m = read_model(tt_path("f.onnx"));
    cr_assert(m->in_dims[0][0] == 2 && m->out_dims[0][0] == 2, "x and y are [2, ...]");
    free_model(m);
    cr_assert_eq(tt_run_tool(TT_ARGS("export", "axial", "--onnx", tt_path("g.onnx")),
                             err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "axial: fixed shapes (batch 2): no batch key"), "%s", err);
}

/* ---- programs of the verification: python3-onnx and onnxruntime ---- */

/* Run argv (argv[0] looked up in PATH) with stdout and stderr into log;
 * returns its exit status, or -1 when it could not be started. */
static int spawn_wait(const char *const *argv, const char *log, char *const *envp)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int st = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, envp ? envp : environ);
    posix_spawn_file_actions_destroy(&fa);
    if (st) return -1;
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* The last lines of a log file, for a message (static buffer). */
static const char *log_tail(const char *log)
{
    static char buf[1200];
    size_t n;
    char *t = tt_slurp(log, &n);
    snprintf(buf, sizeof buf, "%s", n > 1000 ? t + n - 1000 : t);
    free(t);
    return buf;
}

static const char *const CHECKER =
    "import sys, onnx\n"
    "from onnx import checker, shape_inference\n"
    "m = onnx.load(sys.argv[1])\n"
    "checker.check_model(m, full_check=True)\n"
    "i = shape_inference.infer_shapes(m, check_type=True, strict_mode=True)\n"
    "o = i.graph.output[0].type.tensor_type.shape.dim\n"
    "print(' '.join(d.dim_param or str(d.dim_value) for d in o))\n";

Test(onnx, python_onnx_checker_and_shape_inference)
{
    const char *log = tt_path("py.log");
    /* Debian's module is for Debian's python (another python3 may come first in PATH) */
    const char *py = "/usr/bin/python3";
    if (spawn_wait(TT_ARGS(py, "-c", "import onnx"), log, NULL) != 0) py = "python3";
    if (spawn_wait(TT_ARGS(py, "-c", "import onnx"), log, NULL) != 0)
        cr_skip_test("python3-onnx is not installed (apt-get install python3-onnx): the ONNX "
                     "checker is not run");
    for (int i = 0; i < tg_layer_class_count(); i++) {
        const char *name = tg_layer_class_at(i)->name;
        tt_layer b = tt_layer_new(name, NULL, 0, NULL);
        char file[96], err[2048];
        snprintf(file, sizeof file, "%s.onnx", name);
        cr_assert_eq(tt_run_tool(TT_ARGS("export", name, "--onnx", tt_path(file)), err, sizeof err),
                     0, "%s: %s", name, err);
        bool symbolic = strstr(err, "is symbolic") != NULL;
        int st = spawn_wait(TT_ARGS(py, "-c", CHECKER, tt_path(file)), log, NULL);
        cr_assert_eq(st, 0, "%s: the ONNX checker refuses the model: %s", name, log_tail(log));
        /* the inferred output shape is the layer's, its batch "B" where symbolic */
        char want[256] = "";
        const tg_tensor *y = tg_node_value(b.out.y);
        for (int d = 0; d < y->rank; d++)
            if (d == 0 && symbolic) snprintf(want, sizeof want, "B");
            else snprintf(want + strlen(want), sizeof want - strlen(want), d ? " %lld" : "%lld",
                          (long long)y->shape[d]);
        char *got = tt_slurp(log, NULL);
        got[strcspn(got, "\n")] = '\0';
        cr_assert_str_eq(got, want, "%s: shape inference gives [%s], the layer [%s]", name, got,
                         want);
        cr_log_info("onnx checker: %s passes (full_check, strict shape inference: [%s])", name,
                    got);
        free(got);
        tt_layer_free(&b);
    }
}

/* onnxruntime-node: $TGRAPH_ORT_DIR/node_modules, or installed into the test's
 * directory; NULL (after cr_skip_test) when it cannot be had. */
static const char *ort_modules(void)
{
    static char dir[512];
    const char *log = tt_path("npm.log");
    const char *given = getenv("TGRAPH_ORT_DIR");
    if (spawn_wait(TT_ARGS("node", "--version"), log, NULL) != 0)
        cr_skip_test("node is not installed (apt-get install nodejs npm): onnxruntime not run");
    if (given && *given) {
        snprintf(dir, sizeof dir, "%s/node_modules", given);
    } else {
        if (spawn_wait(TT_ARGS("npm", "--version"), log, NULL) != 0)
            cr_skip_test("npm is not installed (apt-get install npm): onnxruntime not run");
        char cache[128], prefix[128];
        snprintf(cache, sizeof cache, "npm_config_cache=%s", tt_path("npm-cache"));
        snprintf(prefix, sizeof prefix, "%s", tt_tmpdir());
        char **env = tt_env_with((const char *[]){cache, "npm_config_update_notifier=false",
                                                  NULL});
        int st = spawn_wait(TT_ARGS("npm", "install", "--prefix", prefix, "--ignore-scripts",
                                    "--no-audit", "--no-fund", "--loglevel=error",
                                    "onnxruntime-node"), log, env);
        tt_env_free(env);
        if (st != 0)
            cr_skip_test("npm install --ignore-scripts onnxruntime-node failed (no registry?): %s",
                         log_tail(log));
        snprintf(dir, sizeof dir, "%s/node_modules", prefix);
    }
    char np[600];
    snprintf(np, sizeof np, "NODE_PATH=%s", dir);
    char **env = tt_env_with((const char *[]){np, NULL});
    int st = spawn_wait(TT_ARGS("node", "-e", "require('onnxruntime-node')"), log, env);
    tt_env_free(env);
    if (st != 0)
        cr_skip_test("onnxruntime-node does not load (installed with --ignore-scripts: is its "
                     "native binary missing?): %s", log_tail(log));
    return dir;
}

/* Random inputs for layer b as NAME=FILE.npy items (into items[], paths under the tmpdir). */
static int write_inputs(const tt_layer *b, const char *tag, char items[][320], uint64_t seed)
{
    int n = tg_layer_input_count(b->l);
    for (int i = 0; i < n; i++) {
        const tg_layer_input *li = tg_layer_input_at(b->l, i);
        const tg_tensor *v = tg_node_value(b->in[i]);
        tg_tensor *t = tg_tensor_new(v->dtype, v->rank, v->shape);
        cr_assert(t);
        if (li->ids > 0) {
            for (int64_t k = 0; k < t->numel; k++)
                ((int64_t *)t->data)[k] = (int64_t)((k * 7 + (int64_t)seed) % li->ids);
        } else {
            tt_randn(t, seed + (uint64_t)i);
        }
        char file[192];
        snprintf(file, sizeof file, "%s.%s.npy", tag, li->name);
        cr_assert_eq(tg_npy_save(tt_path(file), t), TG_OK, "%s", tg_last_error());
        snprintf(items[i], sizeof items[i], "%s=%s", li->name, tt_path(file));
        tg_tensor_free(t);
    }
    return n;
}

/* max |got - want| and max |got - want| / |want| over |want| >= 1e-3. */
static void diffs(const tg_tensor *got, const tg_tensor *want, double *abs_d, double *rel_d)
{
    *abs_d = *rel_d = 0;
    for (int64_t k = 0; k < want->numel; k++) {
        double a = ((const float *)got->data)[k], b = ((const float *)want->data)[k];
        double d = a > b ? a - b : b - a, m = b < 0 ? -b : b;
        if (d > *abs_d) *abs_d = d;
        if (m >= 1e-3 && d / m > *rel_d) *rel_d = d / m;
    }
}

/* One comparison: the paths and the command lines. */
typedef struct {
    const char *modules, *name, *ckpt;
    const char *const *sets;
    int         n_sets;
    bool        attn;
    char        tag[96], model[128], w[128];
} ort_case;

/* argv of `tgraph run` or `tgraph export` for case c (extra: one more --set item or NULL). */
static void case_args(const ort_case *c, bool export, const char *extra, const char *y,
                      const char *a, char items[][320], int n_items, const char **argv)
{
    int n = 0;
    argv[n++] = export ? "export" : "run";
    argv[n++] = c->ckpt && export ? "--checkpoint" : c->name;
    if (c->ckpt && export) argv[n++] = c->ckpt;
    argv[n++] = c->ckpt ? (export ? "--save-weights" : "--weights") : "--seed";
    argv[n++] = c->ckpt ? c->w : "5";
    argv[n++] = export ? "--onnx" : "--out";
    argv[n++] = export ? c->model : y;
    for (int i = 0; i < c->n_sets; i++) argv[n++] = "--set", argv[n++] = c->sets[i];
    if (extra) argv[n++] = "--set", argv[n++] = extra;
    for (int i = 0; i < n_items; i++) argv[n++] = "--input", argv[n++] = items[i];
    if (c->attn) argv[n++] = "--attn";
    if (c->attn && !export) argv[n++] = a;
    argv[n] = NULL;
}

/* Inputs at batch + delta (extra: "KEY=VALUE" for it, "" when delta is 0), tgraph run
 * on them, onnxruntime on them; y (and attn) compared at 1e-5. */
static void ort_at(const ort_case *c, const char *extra, const char *what)
{
    static int runs;
    char items[TG_MAX_LAYER_INPUTS][320], y[128], a[128], outdir[128], err[2048], sub[128];
    snprintf(sub, sizeof sub, "%s.%d", c->tag, runs++);
    const char *sets[80];
    int n_sets = 0;
    for (int i = 0; i < c->n_sets; i++) sets[n_sets++] = c->sets[i];
    if (*extra) sets[n_sets++] = extra;
    tt_layer b = tt_layer_new(c->name, sets, n_sets, NULL);
    int n = write_inputs(&b, sub, items, 11);
    snprintf(y, sizeof y, "%s.y.npy", tt_path(sub));
    snprintf(a, sizeof a, "%s.attn.npy", tt_path(sub));
    snprintf(outdir, sizeof outdir, "%s.ort", tt_path(sub));
    cr_assert_eq(mkdir(outdir, 0755), 0);
    const char *run[200];
    case_args(c, false, *extra ? extra : NULL, y, a, items, n, run);
    cr_assert_eq(tt_run_tool(run, err, sizeof err), 0, "%s: tgraph run: %s", c->name, err);
    const char *node[16] = {"node", "tests/onnx_run.js", c->model, outdir};
    for (int i = 0; i < n; i++) node[4 + i] = items[i];
    node[4 + n] = NULL;
    char np[600];
    snprintf(np, sizeof np, "NODE_PATH=%s", c->modules);
    char **env = tt_env_with((const char *[]){np, NULL});
    const char *log = tt_path("node.log");
    int st = spawn_wait(node, log, env);
    tt_env_free(env);
    cr_assert_eq(st, 0, "%s: onnxruntime: %s", c->name, log_tail(log));
    for (int k = 0; k < (c->attn ? 2 : 1); k++) {
        char got_path[256];
        snprintf(got_path, sizeof got_path, "%s/%s.npy", outdir, k ? "attn" : "y");
        tg_tensor *got, *want;
        cr_assert_eq(tg_npy_load(got_path, &got), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_npy_load(k ? a : y, &want), TG_OK, "%s", tg_last_error());
        double ad, rd;
        diffs(got, want, &ad, &rd);
        fprintf(stderr, "onnxruntime: %s%s %s %s, %lld elements: max abs %.3g, max rel %.3g\n",
                c->name, c->ckpt ? " (trained)" : "", k ? "attn" : "y", what,
                (long long)want->numel, ad, rd);
        char msg[256];
        snprintf(msg, sizeof msg, "%s %s %s: onnxruntime against tgraph run", c->name,
                 k ? "attn" : "y", what);
        tt_assert_close(got, want, 1e-5, 1e-5, msg);
        tg_tensor_free(got);
        tg_tensor_free(want);
    }
    tt_layer_free(&b);
}

/* Export (weights from --seed, or a checkpoint), then compare at the export's batch
 * and, where the batch is symbolic, at batch + 2. Returns whether it was symbolic. */
static bool compare_with_ort(const char *modules, const char *name, const char *const *sets,
                             int n_sets, bool attn, const char *ckpt)
{
    static int cases;
    ort_case c = {.modules = modules, .name = name, .ckpt = ckpt, .sets = sets, .n_sets = n_sets,
                  .attn = attn};
    snprintf(c.tag, sizeof c.tag, "%s%d", name, cases++);
    snprintf(c.model, sizeof c.model, "%s.onnx", tt_path(c.tag));
    snprintf(c.w, sizeof c.w, "%s.w.safetensors", tt_path(c.tag));
    tt_layer b = tt_layer_new(name, sets, n_sets, NULL);
    char items[TG_MAX_LAYER_INPUTS][320], err[2048], extra[160];
    int n = write_inputs(&b, c.tag, items, 11);
    const char *exp[200];
    case_args(&c, true, NULL, NULL, NULL, items, n, exp);
    cr_assert_eq(tt_run_tool(exp, err, sizeof err), 0, "%s: tgraph export: %s", name, err);
    bool symbolic = strstr(err, "is symbolic") != NULL;
    cr_assert(symbolic || strstr(err, "fixed shapes"), "%s: export says neither: %s", name, err);
    ort_at(&c, "", "at the export's batch");
    if (symbolic) {
        const char *dims = tg_layer_input_at(b.l, 0)->dims;
        snprintf(extra, sizeof extra, "%.*s=%lld", (int)strcspn(dims, " "), dims,
                 (long long)tg_node_value(b.in[0])->shape[0] + 2);
        ort_at(&c, extra, "at batch + 2 (symbolic B)");
    }
    tt_layer_free(&b);
    return symbolic;
}

Test(onnx, onnxruntime_equals_tgraph_run)
{
    const char *modules = ort_modules();
    /* these export with a symbolic batch (the others say why not on stderr) */
    static const char *const dynamic[] = {"full_attention", "attention_layer", "tsa",
                                          "seg_merging", "assa_topk", "assa_paper", "crossformer",
                                          "linear_forecast", "dlinear", "patchtst",
                                          "itransformer", "gpt"};
    for (int i = 0; i < tg_layer_class_count(); i++) {
        const char *name = tg_layer_class_at(i)->name;
        bool symbolic = compare_with_ort(modules, name, NULL, 0, !strcmp(name, "full_attention"),
                                         NULL);
        for (size_t k = 0; k < sizeof dynamic / sizeof *dynamic; k++)
            cr_assert(symbolic || strcmp(dynamic[k], name), "%s lost its symbolic batch", name);
    }
    /* other paths: causal attention with its weights, cross attention, LayerNorm without bias */
    compare_with_ort(modules, "attention_layer",
                     (const char *[]){"mask_flag=true", "output_attention=true"}, 2, true, NULL);
    compare_with_ort(modules, "attention_layer", (const char *[]){"self_attention=false", "S=4"},
                     2, false, NULL);
    compare_with_ort(modules, "gpt", (const char *[]){"bias=false"}, 1, false, NULL);
}

/* ---- trained models: a checkpoint of tgraph train ---- */

/* Train with args (the run's directory appended) and compare the checkpoint's
 * export with tgraph run on its weights, at batch B. The config lines of the
 * checkpoint (every key) are the --set items of both, B replaced. */
static void compare_trained(const char *modules, const char *tag, const char *const *train,
                            int n_train, const char *batch)
{
    char dir[128], ckpt[192], err[2048];
    snprintf(dir, sizeof dir, "%s", tt_path(tag));
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.safetensors", dir);
    const char *args[64];
    for (int i = 0; i < n_train; i++) args[i] = train[i];
    args[n_train] = "--out-dir", args[n_train + 1] = dir, args[n_train + 2] = NULL;
    cr_assert_eq(tt_run_tool(args, err, sizeof err), 0, "%s: tgraph train: %s", tag, err);
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_checkpoint_read(ckpt, &ck), TG_OK, "%s", tg_last_error());
    const char *model = tg_checkpoint_meta(&ck, "model"), *config = tg_checkpoint_meta(&ck, "config");
    cr_assert(model && config);
    char *text = strdup(config), *sets[64];
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cr_assert(n < 63);
        if (strncmp(line, "B=", 2)) sets[n++] = line;
    }
    sets[n++] = (char *)batch;
    compare_with_ort(modules, model, (const char *const *)sets, n, false, ckpt);
    free(text);
    tg_checkpoint_clear(&ck);
}

/* A train command line and its length. */
#define TRAIN(...) TT_ARGS("train", __VA_ARGS__), (int)(sizeof TT_ARGS(__VA_ARGS__) / sizeof(char *))

Test(onnx, onnxruntime_equals_tgraph_run_on_trained_models)
{
    const char *modules = ort_modules();
    compare_trained(modules, "crossformer", TRAIN("--set", "seq_len=24", "pred_len=8", "seg_len=4",
                                                  "d_model=16", "n_heads=2", "d_ff=32",
                                                  "e_layers=1", "--max-steps", "20",
                                                  "--batch-size", "8", "--quiet"), "B=3");
    compare_trained(modules, "dlinear", TRAIN("--model", "dlinear", "--set", "seq_len=48",
                                              "pred_len=12", "--max-steps", "20", "--batch-size",
                                              "8", "--quiet"), "B=3");
    compare_trained(modules, "patchtst", TRAIN("--model", "patchtst", "--set", "seq_len=48",
                                               "pred_len=12", "--max-steps", "20", "--batch-size",
                                               "8", "--quiet"), "B=3");
    compare_trained(modules, "itransformer", TRAIN("--model", "itransformer", "--set",
                                                   "seq_len=48", "pred_len=12", "--max-steps",
                                                   "20", "--batch-size", "8", "--quiet"), "B=3");
    FILE *f = fopen(tt_path("in.txt"), "w");
    cr_assert(f);
    for (int i = 0; i < 40; i++) fputs("the quick brown fox jumps over the lazy dog\n", f);
    fclose(f);
    compare_trained(modules, "gpt", TRAIN("--text", tt_path("in.txt"), "--set", "n_layer=1",
                                          "n_head=2", "n_embd=16", "block_size=8", "dropout=0",
                                          "--batch-size", "4", "--eval-iters", "2", "--max-steps",
                                          "8", "--quiet"), "B=2");
}

/* ---- every op: its registry gradcheck case (the `check` spec, ops/registry.h)
 * in float32, through onnxruntime, against tgraph's forward ---- */

/* ---- a case spec: "dim=1;[3,4];i64[3,2]" ---- */

typedef struct {
    tg_config *cfg;
    int        n_in;
    int        rank[TG_OP_MAX_INPUTS];
    int64_t    shape[TG_OP_MAX_INPUTS][TG_MAX_RANK];
    int        dtype[TG_OP_MAX_INPUTS];   /* -1: from the input's kind */
} spec;

static void spec_parse(const char *op, const char *text, spec *s)
{
    memset(s, 0, sizeof *s);
    s->cfg = tg_config_new();
    cr_assert(s->cfg);
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    cr_assert(buf);
    memcpy(buf, text, len + 1);
    for (char *item = strtok(buf, ";"); item; item = strtok(NULL, ";")) {
        while (*item == ' ') item++;
        int dt = -1;
        char *br = strchr(item, '[');
        if (br && (br == item || !strchr(item, '='))) {
            if (!strncmp(item, "i64[", 4)) dt = TG_I64;
            else if (!strncmp(item, "f64[", 4)) dt = TG_F64;
            else if (!strncmp(item, "bool[", 5)) dt = TG_BOOL;
            else cr_assert(br == item, "%s: bad shape item '%s'", op, item);
            tg_value v;
            int n = 0;
            cr_assert(tg_value_parse(br, &v) == TG_OK, "%s: shape '%s': %s", op, item,
                      tg_last_error());
            cr_assert(tg_value_as_int_list(&v, "shape", s->shape[s->n_in], TG_MAX_RANK, &n) ==
                      TG_OK, "%s: shape '%s': %s", op, item, tg_last_error());
            tg_value_free(&v);
            cr_assert(s->n_in < TG_OP_MAX_INPUTS);
            s->rank[s->n_in] = n;
            s->dtype[s->n_in++] = dt;
        } else {
            cr_assert(tg_config_set(s->cfg, item) == TG_OK, "%s: attribute '%s': %s", op, item,
                      tg_last_error());
        }
    }
    free(buf);
}

static bool kind_takes(tg_op_input_kind k, tg_dtype dt)
{
    switch (k) {
    case TG_OP_IN_INDEX: return dt == TG_I64;
    case TG_OP_IN_MASK: return dt == TG_BOOL;
    case TG_OP_IN_TARGET: return dt == TG_I64 || tg_dtype_is_float(dt);
    case TG_OP_IN_ANY: return true;
    default: return tg_dtype_is_float(dt);
    }
}

/* The spec's input tensors: drawn by the registry's rules where the dtype fits
 * the input (float and bool first, then int64 indices, which read them), zeros
 * where it does not (a bad-input case). Returns false with tg_last_error() set
 * when a rule refuses. */
static bool spec_tensors(const tg_op_call *c, const spec *s, tg_tensor **t, uint64_t seed)
{
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < s->n_in; i++) {
            tg_dtype dt = s->dtype[i] >= 0 ? (tg_dtype)s->dtype[i] : tg_op_input_dtype(c->op, i);
            if ((dt == TG_I64) != (pass == 1)) continue;
            t[i] = tg_tensor_new(dt, s->rank[i], s->shape[i]);
            cr_assert(t[i], "%s: %s", c->op->name, tg_last_error());
            const tg_op_input *in = tg_op_input_at(c->op, i);
            if (in && kind_takes(in->kind, dt) &&
                tg_op_random_input(c, i, (const tg_tensor *const *)t, t[i], &rng))
                return false;
        }
    return true;
}

static void free_tensors(tg_tensor **t, int n)
{
    for (int i = 0; i < n; i++) tg_tensor_free(t[i]);
}

/* Ops the export does not cover: losses (the forward of a model only). */
static bool no_onnx_form(const char *op)
{
    return !strcmp(op, "mse_loss") || !strcmp(op, "cross_entropy") || !strcmp(op, "causal_mask");
}

Test(onnx, every_op_has_an_onnx_form_but_the_losses)
{
    for (int i = 0; i < tg_op_count(); i++) {
        const tg_op_def *d = tg_op_at(i);
        if (no_onnx_form(d->name)) continue;
        cr_assert(d->desc && d->desc->onnx, "op %s has no ONNX hook (tg_op.onnx)", d->name);
    }
}

/* Op d on its check case: inputs and outputs as .npy under tag, the model exported; the
 * number of outputs. */
static int op_case(const tg_op_def *d, const char *tag, char items[][320], int *n_items,
                   char outs[][128])
{
    spec sp;
    tg_op_call c;
    spec_parse(d->name, d->check, &sp);
    for (int k = 0; k < TG_OP_MAX_ATTRS && d->attrs[k].name; k++)   /* inference: eval mode */
        if (!strcmp(d->attrs[k].name, "training")) cr_assert(!tg_config_set(sp.cfg, "training=false"));
    cr_assert_eq(tg_op_call_init(&c, d, sp.cfg), TG_OK, "%s: %s", d->name, tg_last_error());
    tg_tensor *t[TG_OP_MAX_INPUTS] = {0};
    cr_assert(spec_tensors(&c, &sp, t, 3), "%s: %s", d->name, tg_last_error());
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in[TG_OP_MAX_INPUTS], *out[TG_OP_MAX_OUTPUTS];
    int n_out = 0;
    cr_assert_eq(tg_op_make_inputs(g, d, t, sp.n_in, false, in), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_op_build(g, &c, in, sp.n_in, out, TG_OP_MAX_OUTPUTS, &n_out), TG_OK, "%s: %s",
                 d->name, tg_graph_error(g));
    for (int k = 0; k < n_out; k++) tg_node_keep(out[k]);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s: %s", d->name, tg_last_error());
    *n_items = 0;
    for (int k = 0; k < sp.n_in; k++) {
        if (!in[k]) continue;
        char file[160];
        snprintf(file, sizeof file, "%s.in%d.npy", tag, k);
        cr_assert_eq(tg_npy_save(tt_path(file), tg_node_value(in[k])), TG_OK);
        snprintf(items[(*n_items)++], 320, "%s=%s", tg_node_name(in[k]), tt_path(file));
    }
    const char *names[TG_OP_MAX_OUTPUTS];
    for (int k = 0; k < n_out; k++) {
        snprintf(outs[k], 128, "out%d", k);
        names[k] = outs[k];
        char file[160];
        snprintf(file, sizeof file, "%s.want%d.npy", tag, k);
        cr_assert_eq(tg_npy_save(tt_path(file), tg_node_value(out[k])), TG_OK);
    }
    char model[160];
    snprintf(model, sizeof model, "%s.onnx", tag);
    cr_assert_eq(tg_graph_onnx_save(g, n_out, out, names, tt_path(model)), TG_OK, "%s: %s",
                 d->name, tg_last_error());
    tg_graph_free(g);
    free_tensors(t, sp.n_in);
    tg_op_call_free(&c);
    tg_config_free(sp.cfg);
    return n_out;
}

Test(onnx, every_op_through_onnxruntime)
{
    const char *modules = ort_modules();
    char np[600];
    snprintf(np, sizeof np, "NODE_PATH=%s", modules);
    char **env = tt_env_with((const char *[]){np, NULL});
    for (int i = 0; i < tg_op_count(); i++) {
        const tg_op_def *d = tg_op_at(i);
        if (no_onnx_form(d->name) || !d->check) continue;
        char tag[64], items[TG_OP_MAX_INPUTS][320], outs[TG_OP_MAX_OUTPUTS][128], model[160];
        char outdir[160];
        int n_items;
        snprintf(tag, sizeof tag, "op_%s", d->name);
        int n_out = op_case(d, tag, items, &n_items, outs);
        snprintf(model, sizeof model, "%s.onnx", tt_path(tag));
        snprintf(outdir, sizeof outdir, "%s.ort", tt_path(tag));
        cr_assert_eq(mkdir(outdir, 0755), 0);
        const char *node[TG_OP_MAX_INPUTS + 8] = {"node", "tests/onnx_run.js", model, outdir};
        for (int k = 0; k < n_items; k++) node[4 + k] = items[k];
        node[4 + n_items] = NULL;
        const char *log = tt_path("node.log");
        cr_assert_eq(spawn_wait(node, log, env), 0, "%s: onnxruntime: %s", d->name, log_tail(log));
        double worst = 0;
        for (int k = 0; k < n_out; k++) {
            char gp[320], wf[128];
            snprintf(gp, sizeof gp, "%s/%.100s.npy", outdir, outs[k]);
            snprintf(wf, sizeof wf, "%s.want%d.npy", tag, k);
            tg_tensor *got, *want;
            cr_assert_eq(tg_npy_load(gp, &got), TG_OK, "%s: %s", d->name, tg_last_error());
            cr_assert_eq(tg_npy_load(tt_path(wf), &want), TG_OK, "%s", tg_last_error());
            if (want->dtype == TG_F32) {
                double ad, rd;
                diffs(got, want, &ad, &rd);
                worst = ad > worst ? ad : worst;
            }
            char msg[128];
            snprintf(msg, sizeof msg, "op %s output %d: onnxruntime against tgraph", d->name, k);
            tt_assert_close(got, want, 1e-5, 1e-5, msg);
            tg_tensor_free(got);
            tg_tensor_free(want);
        }
        fprintf(stderr, "onnxruntime: op %s (%s): %d output(s), max abs diff %.3g\n", d->name,
                d->check, n_out, worst);
    }
    tt_env_free(env);
}
