/*
 * onnx_batch.c - tg__onnx_batch (onnx.h): a model made symbolic in its batch
 * size, by comparing it with the same model built at another batch size.
 * What differs must be the batch: shape constants k * b1 against k * b2
 * become c0 + B * k computed in the graph from the batch read off an input
 * (Shape, Gather), graph constants [b1, ...] of equal slices one slice
 * expanded to [B, ...], input and output dims b1 the symbolic "B".
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "onnx_internal.h"

static bool attr_eq(const ox_attr *a, const ox_attr *b)
{
    if (strcmp(a->name, b->name) || a->type != b->type || a->i != b->i || a->f != b->f ||
        a->n != b->n || strcmp(a->s ? a->s : "", b->s ? b->s : ""))
        return false;
    return !a->n || !memcmp(a->ints, b->ints, (size_t)a->n * sizeof *a->ints);
}

static bool node_eq(const ox_node *a, const ox_node *b)
{
    if (strcmp(a->op, b->op) || a->n_in != b->n_in || a->n_out != b->n_out || a->n_attr != b->n_attr)
        return false;
    for (int i = 0; i < a->n_in; i++)
        if (strcmp(a->in[i], b->in[i])) return false;
    for (int i = 0; i < a->n_out; i++)
        if (strcmp(a->out[i], b->out[i])) return false;
    for (int i = 0; i < a->n_attr; i++)
        if (!attr_eq(&a->attr[i], &b->attr[i])) return false;
    return true;
}

/* Entry v (at batch b1) and w (at b2) of a shape constant: 0 when equal, k when
 * they are k * b1 and k * b2, -1 otherwise. */
static int64_t batch_multiple(int64_t v, int64_t w, int64_t b1, int64_t b2)
{
    if (v == w) return 0;
    if (v % b1 || w % b2 || v / b1 != w / b2 || v / b1 <= 0) return -1;
    return v / b1;
}

/* A graph constant [b1, ...] (in m2 [b2, ...]) whose batch slices are all the same:
 * the model keeps one slice and expands it to the batch at run time. */
static bool batch_constant(const ox_init *a, const ox_init *b, int64_t b1, int64_t b2)
{
    const tg_tensor *ta = a->t, *tb = b->t;
    if (!ta || !tb || ta->rank < 1 || ta->shape[0] != b1 || tb->shape[0] != b2 ||
        memcmp(ta->shape + 1, tb->shape + 1, (size_t)(ta->rank - 1) * sizeof *ta->shape))
        return false;
    size_t slice = (size_t)(ta->numel / b1) * tg_dtype_size(ta->dtype);
    for (int64_t k = 1; k < b1; k++)
        if (memcmp((const char *)ta->data + k * slice, ta->data, slice)) return false;
    for (int64_t k = 0; k < b2; k++)
        if (memcmp((const char *)tb->data + k * slice, ta->data, slice)) return false;
    return true;
}

/* Does m2 differ from m only where the batch size does? Into why when not. */
static bool batch_compatible(const tg_onnx *m, const tg_onnx *m2, int64_t b1, int64_t b2,
                             char *why, size_t n)
{
    if (m->n_nodes != m2->n_nodes || m->n_inits != m2->n_inits || m->n_io != m2->n_io) {
        snprintf(why, n, "the graph has other ops at another batch size");
        return false;
    }
    for (int i = 0; i < m->n_nodes; i++)
        if (!node_eq(&m->nodes[i], &m2->nodes[i])) {
            snprintf(why, n, "node %d (%s) differs at another batch size", i, m->nodes[i].op);
            return false;
        }
    for (int i = 0; i < m->n_inits; i++) {
        const ox_init *a = &m->inits[i], *b = &m2->inits[i];
        const tg_tensor *ta = a->t ? a->t : &a->own, *tb = b->t ? b->t : &b->own;
        bool same = !strcmp(a->name, b->name) && ta->dtype == tb->dtype && ta->rank == tb->rank &&
                    (!memcmp(ta->shape, tb->shape, (size_t)ta->rank * sizeof *ta->shape) ||
                     batch_constant(a, b, b1, b2));
        bool shape_const = !a->t && ta->dtype == TG_I64 && ta->rank == 1;
        if (same && !a->t && ta->dtype != TG_I64)
            same = !memcmp(ta->data, tb->data, (size_t)ta->numel * tg_dtype_size(ta->dtype));
        for (int64_t k = 0; same && !a->t && ta->dtype == TG_I64 && k < ta->numel; k++) {
            int64_t v = ((const int64_t *)ta->data)[k], w = ((const int64_t *)tb->data)[k];
            same = shape_const ? batch_multiple(v, w, b1, b2) >= 0 : v == w;
        }
        if (!same) {
            snprintf(why, n, "%s '%.200s' depends on the batch size", a->t ? "the constant"
                     : "a shape", a->name);
            return false;
        }
    }
    for (int i = 0; i < m->n_io; i++)
        for (int d = 0; d < m->io[i].rank; d++)
            if (m->io[i].shape[d] != m2->io[i].shape[d] &&
                !(m->io[i].shape[d] == b1 && m2->io[i].shape[d] == b2)) {
                snprintf(why, n, "dim %d of '%.200s' is a multiple of the batch size", d,
                         m->io[i].name);
                return false;
            }
    return true;
}

/* Move the nodes from `first` on to the front (they compute what the others read). */
static void nodes_to_front(tg_onnx *m, int first)
{
    int k = m->n_nodes - first;
    ox_node *tmp = tg__onnx_keep(m, (size_t)(k ? k : 1) * sizeof *tmp);
    if (!tmp) return;
    memcpy(tmp, m->nodes + first, (size_t)k * sizeof *tmp);
    memmove(m->nodes + k, m->nodes, (size_t)first * sizeof *tmp);
    memcpy(m->nodes, tmp, (size_t)k * sizeof *tmp);
}

/* The name of c0 + B * kv (n int64s): a shape computed from the batch B (bvec, [1]). */
static const char *dyn_shape(tg_onnx *m, const char *bvec, int n, const int64_t *c0,
                             const int64_t *kv, const char *out)
{
    const char *mul = tg__onnx_tmp(m, NULL, "batch_mul");
    TG__ONNX_NODE(m, "Mul", mul, bvec, tg__onnx_const_i64(m, n, kv));
    TG__ONNX_NODE(m, "Add", out, tg__onnx_const_i64(m, n, c0), mul);
    return out;
}

/* Shape constant i as c0 + B * kvec, computed in the graph; its readers read that. */
static void batch_shape(tg_onnx *m, const tg_onnx *m2, int i, const char *bvec, int64_t b1,
                        int64_t b2)
{
    ox_init *in = &m->inits[i];
    const int64_t *w = m2->inits[i].own.data;
    int64_t *v = in->own.data, n = in->own.numel;
    int64_t *kv = tg__onnx_keep(m, (size_t)(n ? n : 1) * sizeof *kv);
    bool any = false;
    for (int64_t j = 0; kv && j < n; j++) {
        kv[j] = batch_multiple(v[j], w[j], b1, b2);
        if (kv[j]) v[j] = 0, any = true;
    }
    if (!kv || !any) return;
    char name[600];
    snprintf(name, sizeof name, "%.500s:batch", in->name);
    const char *old = in->name, *out = tg__onnx_keep_str(m, name);
    int first = m->n_nodes;
    const char *mul = tg__onnx_tmp(m, NULL, "batch_mul");
    TG__ONNX_NODE(m, "Mul", mul, bvec, tg__onnx_const_i64(m, (int)n, kv));
    TG__ONNX_NODE(m, "Add", out, old, mul);
    for (int k = 0; k < first; k++)
        for (int j = 0; j < m->nodes[k].n_in; j++)
            if (!strcmp(m->nodes[k].in[j], old)) m->nodes[k].in[j] = out;
}

/* Graph constant i [b1, ...], its batch slices equal: one slice [1, ...] as the
 * initializer, expanded to [B, ...] under the constant's name. */
static void batch_expand(tg_onnx *m, int i, const char *bvec, int64_t b1)
{
    const tg_tensor *t = m->inits[i].t;
    const char *name = m->inits[i].name, *slice;
    size_t bytes = (size_t)(t->numel / b1) * tg_dtype_size(t->dtype);
    void *d = tg__onnx_own_const(m, t->dtype, t->rank, t->numel / b1, &slice);
    if (!d) return;
    memcpy(d, t->data, bytes);
    ox_init *own = &m->inits[m->n_inits - 1];
    int64_t c0[TG_MAX_RANK], kv[TG_MAX_RANK] = {1};
    for (int k = 0; k < t->rank; k++) own->own.shape[k] = k ? t->shape[k] : 1;
    for (int k = 0; k < t->rank; k++) c0[k] = k ? t->shape[k] : 0;
    m->inits[i].name = tg__onnx_keep_str(m, "");   /* dropped when written: see write_graph */
    const char *shape = dyn_shape(m, bvec, t->rank, c0, kv, tg__onnx_tmp(m, NULL, "batch_shape"));
    TG__ONNX_NODE(m, "Expand", name, slice, shape);
}

tg_status tg__onnx_batch(tg_onnx *m, const tg_onnx *m2, const char *input, int dim, int64_t b1,
                         int64_t b2, char *why, size_t n)
{
    if (m->st || m2->st) return m->st ? m->st : m2->st;
    if (b1 <= 0 || b2 <= 0 || b1 == b2 || !batch_compatible(m, m2, b1, b2, why, n)) {
        if (b1 == b2) snprintf(why, n, "the batch size is the same in both graphs");
        return TG_ERR_INVALID;
    }
    int first = m->n_nodes, n_inits = m->n_inits;
    const char *shape = tg__onnx_tmp(m, NULL, "input_shape"), *bvec = "batch:B";
    TG__ONNX_NODE(m, "Shape", shape, input);
    TG__ONNX_NODE(m, "Gather", bvec, shape, tg__onnx_const_i64(m, 1, (const int64_t[]){dim}));
    tg__onnx_attr_int(m, "axis", 0);
    for (int i = 0; i < n_inits; i++) {
        const ox_init *a = &m->inits[i];
        if (!a->t && a->own.dtype == TG_I64 && a->own.rank == 1) batch_shape(m, m2, i, bvec, b1, b2);
        else if (a->t && a->t->rank && a->t->shape[0] != (m2->inits[i].t ? m2->inits[i].t->shape[0]
                                                                          : a->t->shape[0]))
            batch_expand(m, i, bvec, b1);
    }
    nodes_to_front(m, first);
    for (int i = 0; i < m->n_io; i++)
        for (int d = 0; d < m->io[i].rank; d++)
            if (m->io[i].shape[d] != m2->io[i].shape[d]) m->io[i].param[d] = "B";
    return m->st;
}
