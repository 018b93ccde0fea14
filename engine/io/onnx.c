/*
 * onnx.c - the ONNX model of onnx.h and its protobuf writer: varints,
 * length-delimited fields, fixed32/64, with the message and field numbers of
 * onnx.proto3 (ModelProto, GraphProto, NodeProto, AttributeProto,
 * TensorProto, ValueInfoProto, TypeProto, TensorShapeProto).
 *
 * Not a protobuf library: it writes the few messages ONNX needs, each
 * encoded into a byte buffer and appended to its parent as a
 * length-delimited field. Tensor data goes as raw_data (little-endian).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "onnx.h"

/* ---- the model in memory ---- */

enum { A_FLOAT = 1, A_INT = 2, A_STRING = 3, A_INTS = 7 };   /* AttributeProto.AttributeType */

typedef struct {
    const char *name;
    int         type;
    int64_t     i;
    double      f;
    const char *s;
    int         n;
    int64_t    *ints;
} ox_attr;

typedef struct {
    const char  *op;
    int          n_in, n_out, n_attr;
    const char **in, **out;
    ox_attr     *attr;
} ox_node;

typedef struct {
    const char      *name;
    const tg_tensor *t;          /* borrowed, or own */
    tg_tensor        own;        /* constants made here: data malloc'd */
} ox_init;

typedef struct {
    const char  *name;
    bool         output;
    tg_dtype     dt;
    int          rank;
    int64_t      shape[TG_MAX_RANK];
    const char  *param[TG_MAX_RANK];
} ox_io;

struct tg_onnx {
    const char *graph_name;
    ox_node    *nodes;
    int         n_nodes, node_cap;
    ox_init    *inits;
    int         n_inits, init_cap;
    ox_io      *io;
    int         n_io, io_cap;
    const char **values;          /* node id -> value name */
    int         n_values;
    void      **pool;             /* everything else malloc'd, freed at the end */
    int         n_pool, pool_cap;
    int         n_tmp;
    tg_status   st;
    char        err[512];
};

tg_status tg__onnx_fail(tg_onnx *m, tg_status st, const char *fmt, ...)
{
    if (m->st) return m->st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->err, sizeof m->err, fmt, ap);
    va_end(ap);
    m->st = st ? st : TG_ERR_INVALID;
    return tg_set_error(m->st, "%s", m->err);
}

tg_status   tg__onnx_status(const tg_onnx *m) { return m->st; }
const char *tg__onnx_error(const tg_onnx *m) { return m->st ? m->err : NULL; }

/* Grow *arr (elements of size es, *cap of them) to hold n + 1; false on OOM. */
static bool grow(tg_onnx *m, void **arr, int *cap, int n, size_t es)
{
    if (m->st) return false;
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)nc * es);
    if (!p) {
        tg__onnx_fail(m, TG_ERR_NOMEM, "onnx: out of memory");
        return false;
    }
    memset((char *)p + (size_t)*cap * es, 0, (size_t)(nc - *cap) * es);
    *arr = p;
    *cap = nc;
    return true;
}

/* n bytes owned by the model (zeroed); NULL on OOM (model in error). */
static void *keep(tg_onnx *m, size_t n)
{
    if (!grow(m, (void **)&m->pool, &m->pool_cap, m->n_pool, sizeof *m->pool)) return NULL;
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        tg__onnx_fail(m, TG_ERR_NOMEM, "onnx: out of memory");
        return NULL;
    }
    return m->pool[m->n_pool++] = p;
}

static const char *keep_str(tg_onnx *m, const char *s)
{
    size_t n = strlen(s ? s : "");
    char *p = keep(m, n + 1);
    if (p) memcpy(p, s ? s : "", n);
    return p ? p : "";
}

tg_onnx *tg__onnx_new(const char *graph_name)
{
    tg_onnx *m = calloc(1, sizeof *m);
    if (!m) {
        tg_set_error(TG_ERR_NOMEM, "onnx: out of memory");
        return NULL;
    }
    m->graph_name = keep_str(m, graph_name ? graph_name : "tgraph");
    return m;
}

void tg__onnx_free(tg_onnx *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_pool; i++) free(m->pool[i]);
    free(m->pool);
    free(m->nodes);
    free(m->inits);
    free(m->io);
    free(m->values);
    free(m);
}

/* ---- value names ---- */

void tg__onnx_set_value(tg_onnx *m, int id, const char *name)
{
    if (m->st || id < 0) return;
    if (id >= m->n_values) {
        int nv = id + 64;
        const char **p = realloc((void *)m->values, (size_t)nv * sizeof *p);
        if (!p) {
            tg__onnx_fail(m, TG_ERR_NOMEM, "onnx: out of memory");
            return;
        }
        for (int i = m->n_values; i < nv; i++) p[i] = NULL;
        m->values = p;
        m->n_values = nv;
    }
    m->values[id] = keep_str(m, name);
}

const char *tg__onnx_value(tg_onnx *m, const tg_node *n)
{
    int id = n ? n->id : -1;
    return id >= 0 && id < m->n_values && m->values[id] ? m->values[id] : "";
}

const char *tg__onnx_in(tg_onnx *m, const tg_node *n, int i)
{
    return i >= 0 && i < n->n_in ? tg__onnx_value(m, n->in[i]) : "";
}

const char *tg__onnx_tmp(tg_onnx *m, const tg_node *n, const char *what)
{
    char buf[600];
    snprintf(buf, sizeof buf, "%.400s:%.100s%d", n ? tg__onnx_value(m, n) : "t", what,
             m->n_tmp++);
    return keep_str(m, buf);
}

/* ---- nodes and attributes ---- */

static const char **keep_names(tg_onnx *m, int n, const char *const *names)
{
    const char **p = keep(m, (size_t)(n ? n : 1) * sizeof *p);
    for (int i = 0; p && i < n; i++) p[i] = keep_str(m, names[i]);
    return p;
}

void tg__onnx_node(tg_onnx *m, const char *op_type, int n_in, const char *const *in, int n_out,
                   const char *const *out)
{
    if (!grow(m, (void **)&m->nodes, &m->node_cap, m->n_nodes, sizeof *m->nodes)) return;
    ox_node nd = {.op = keep_str(m, op_type), .n_in = n_in, .n_out = n_out,
                  .in = keep_names(m, n_in, in), .out = keep_names(m, n_out, out)};
    if (!m->st) m->nodes[m->n_nodes++] = nd;
}

static ox_attr *new_attr(tg_onnx *m, const char *name, int type)
{
    if (m->st) return NULL;
    if (!m->n_nodes) {
        tg__onnx_fail(m, TG_ERR_STATE, "onnx: attribute '%s' before any node", name);
        return NULL;
    }
    ox_node *nd = &m->nodes[m->n_nodes - 1];
    ox_attr *a = keep(m, (size_t)(nd->n_attr + 1) * sizeof *a);
    if (!a) return NULL;
    if (nd->n_attr) memcpy(a, nd->attr, (size_t)nd->n_attr * sizeof *a);
    nd->attr = a;
    a += nd->n_attr++;
    a->name = keep_str(m, name);
    a->type = type;
    return a;
}

void tg__onnx_attr_int(tg_onnx *m, const char *name, int64_t v)
{
    ox_attr *a = new_attr(m, name, A_INT);
    if (a) a->i = v;
}

void tg__onnx_attr_float(tg_onnx *m, const char *name, double v)
{
    ox_attr *a = new_attr(m, name, A_FLOAT);
    if (a) a->f = v;
}

void tg__onnx_attr_str(tg_onnx *m, const char *name, const char *v)
{
    ox_attr *a = new_attr(m, name, A_STRING);
    if (a) a->s = keep_str(m, v);
}

void tg__onnx_attr_ints(tg_onnx *m, const char *name, int n, const int64_t *v)
{
    ox_attr *a = new_attr(m, name, A_INTS);
    if (!a) return;
    a->ints = keep(m, (size_t)(n ? n : 1) * sizeof *a->ints);
    if (!a->ints) return;
    if (n) memcpy(a->ints, v, (size_t)n * sizeof *v);
    a->n = n;
}

/* ---- initializers ---- */

void tg__onnx_initializer(tg_onnx *m, const char *name, const tg_tensor *t)
{
    if (!grow(m, (void **)&m->inits, &m->init_cap, m->n_inits, sizeof *m->inits)) return;
    m->inits[m->n_inits++] = (ox_init){.name = keep_str(m, name), .t = t};
}

/* A constant tensor owned by the model, of rank 0 or 1 (n values); its data to fill. */
static void *own_const(tg_onnx *m, tg_dtype dt, int rank, int64_t n, const char **name)
{
    char buf[32];
    snprintf(buf, sizeof buf, "onnx:const:%d", m->n_tmp++);
    *name = keep_str(m, buf);
    void *data = keep(m, (size_t)(n ? n : 1) * tg_dtype_size(dt));
    if (!data || !grow(m, (void **)&m->inits, &m->init_cap, m->n_inits, sizeof *m->inits))
        return NULL;
    ox_init *in = &m->inits[m->n_inits++];
    *in = (ox_init){.name = *name};
    in->own.dtype = dt;
    in->own.rank = rank;
    in->own.shape[0] = n;
    in->own.numel = n;
    in->own.data = data;
    in->t = NULL;
    return data;
}

const char *tg__onnx_const_i64(tg_onnx *m, int n, const int64_t *v)
{
    const char *name = "";
    int64_t *d = own_const(m, TG_I64, 1, n, &name);
    if (d && n) memcpy(d, v, (size_t)n * sizeof *v);
    return name;
}

const char *tg__onnx_const_scalar(tg_onnx *m, tg_dtype dt, double v)
{
    const char *name = "";
    void *d = own_const(m, dt, 0, 1, &name);
    if (!d) return name;
    if (dt == TG_F32) *(float *)d = (float)v;
    else if (dt == TG_F64) *(double *)d = v;
    else *(int64_t *)d = (int64_t)v;
    return name;
}

void tg__onnx_io(tg_onnx *m, bool output, const char *name, tg_dtype dt, int rank,
                 const int64_t *shape, const char *const *dim_param)
{
    if (rank < 0 || rank > TG_MAX_RANK) {
        tg__onnx_fail(m, TG_ERR_INVALID, "onnx: rank %d of '%s'", rank, name);
        return;
    }
    if (!grow(m, (void **)&m->io, &m->io_cap, m->n_io, sizeof *m->io)) return;
    ox_io *o = &m->io[m->n_io++];
    *o = (ox_io){.name = keep_str(m, name), .output = output, .dt = dt, .rank = rank};
    for (int d = 0; d < rank; d++) {
        o->shape[d] = shape[d];
        o->param[d] = dim_param && dim_param[d] ? keep_str(m, dim_param[d]) : NULL;
    }
}

void tg__onnx_reshape(tg_onnx *m, const char *in, const char *out, int rank, const int64_t *shape)
{
    const char *s = tg__onnx_const_i64(m, rank, shape);
    TG__ONNX_NODE(m, "Reshape", out, in, s);
}

void tg__onnx_reshape_as(tg_onnx *m, const tg_node *n, const char *in, const char *out)
{
    tg__onnx_reshape(m, in, out, n->value.rank, n->value.shape);
}

/* ---- dynamic batch: a model made symbolic in its batch size ---- */

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
    ox_node *tmp = keep(m, (size_t)(k ? k : 1) * sizeof *tmp);
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
    int64_t *kv = keep(m, (size_t)(n ? n : 1) * sizeof *kv);
    bool any = false;
    for (int64_t j = 0; kv && j < n; j++) {
        kv[j] = batch_multiple(v[j], w[j], b1, b2);
        if (kv[j]) v[j] = 0, any = true;
    }
    if (!kv || !any) return;
    char name[600];
    snprintf(name, sizeof name, "%.500s:batch", in->name);
    const char *old = in->name, *out = keep_str(m, name);
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
    void *d = own_const(m, t->dtype, t->rank, t->numel / b1, &slice);
    if (!d) return;
    memcpy(d, t->data, bytes);
    ox_init *own = &m->inits[m->n_inits - 1];
    int64_t c0[TG_MAX_RANK], kv[TG_MAX_RANK] = {1};
    for (int k = 0; k < t->rank; k++) own->own.shape[k] = k ? t->shape[k] : 1;
    for (int k = 0; k < t->rank; k++) c0[k] = k ? t->shape[k] : 0;
    m->inits[i].name = keep_str(m, "");   /* dropped when written: see write_graph */
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

/* ---- the protobuf writer ---- */

typedef struct {
    uint8_t *p;
    size_t   n, cap;
    bool     oom;
} pb_buf;

static void pb_raw(pb_buf *b, const void *src, size_t n)
{
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n) nc *= 2;
        uint8_t *p = realloc(b->p, nc);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    if (n) memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void pb_varint(pb_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    int k = 0;
    do {
        tmp[k] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[k] |= 0x80;
        k++;
    } while (v);
    pb_raw(b, tmp, (size_t)k);
}

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

static void pb_key(pb_buf *b, int field, int wt) { pb_varint(b, (uint64_t)field << 3 | (unsigned)wt); }

static void pb_int(pb_buf *b, int field, int64_t v)
{
    pb_key(b, field, WT_VARINT);
    pb_varint(b, (uint64_t)v);   /* int32/int64: two's complement, 10 bytes when negative */
}

static void pb_bytes(pb_buf *b, int field, const void *p, size_t n)
{
    pb_key(b, field, WT_LEN);
    pb_varint(b, n);
    pb_raw(b, p, n);
}

static void pb_str(pb_buf *b, int field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

static void pb_float(pb_buf *b, int field, float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    pb_key(b, field, WT_I32);
    pb_raw(b, le, 4);
}

/* Append sub (a finished message) to b as field `field`, and free it. */
static void pb_msg(pb_buf *b, int field, pb_buf *sub)
{
    if (sub->oom) b->oom = true;
    pb_bytes(b, field, sub->p, sub->n);
    free(sub->p);
    *sub = (pb_buf){0};
}

/* ---- the messages ---- */

static int onnx_dtype(tg_dtype dt)   /* TensorProto.DataType */
{
    switch (dt) {
    case TG_F32: return 1;
    case TG_F64: return 11;
    case TG_I64: return 7;
    case TG_BOOL: return 9;
    default: return 0;
    }
}

/* The tensor's data, little-endian, in b. */
static void raw_le(pb_buf *b, const tg_tensor *t)
{
    size_t es = tg_dtype_size(t->dtype), n = (size_t)t->numel * es;
    const uint16_t one = 1;
    if (*(const unsigned char *)&one == 1 || es == 1) {
        pb_raw(b, t->data, n);
        return;
    }
    const uint8_t *s = t->data;
    for (size_t i = 0; i < n; i += es)
        for (size_t k = 0; k < es; k++) pb_raw(b, s + i + es - 1 - k, 1);
}

static void write_tensor(pb_buf *b, int field, const char *name, const tg_tensor *t)
{
    pb_buf s = {0}, raw = {0};
    for (int d = 0; d < t->rank; d++) pb_int(&s, 1, t->shape[d]);   /* dims */
    pb_int(&s, 2, onnx_dtype(t->dtype));                            /* data_type */
    pb_str(&s, 8, name);                                            /* name */
    raw_le(&raw, t);
    if (raw.oom) s.oom = true;
    pb_bytes(&s, 9, raw.p, raw.n);                                  /* raw_data */
    free(raw.p);
    pb_msg(b, field, &s);
}

static void write_attr(pb_buf *b, const ox_attr *a)
{
    pb_buf s = {0};
    pb_str(&s, 1, a->name);
    if (a->type == A_FLOAT) pb_float(&s, 2, (float)a->f);
    if (a->type == A_INT) pb_int(&s, 3, a->i);
    if (a->type == A_STRING) pb_str(&s, 4, a->s);
    for (int i = 0; a->type == A_INTS && i < a->n; i++) pb_int(&s, 8, a->ints[i]);
    pb_int(&s, 20, a->type);
    pb_msg(b, 5, &s);
}

static void write_node(pb_buf *b, const ox_node *nd, int idx)
{
    pb_buf s = {0};
    char name[64];
    for (int i = 0; i < nd->n_in; i++) pb_str(&s, 1, nd->in[i]);
    for (int i = 0; i < nd->n_out; i++) pb_str(&s, 2, nd->out[i]);
    snprintf(name, sizeof name, "%s_%d", nd->op, idx);
    pb_str(&s, 3, name);
    pb_str(&s, 4, nd->op);
    for (int i = 0; i < nd->n_attr; i++) write_attr(&s, &nd->attr[i]);
    pb_msg(b, 1, &s);
}

/* ValueInfoProto { name, type: TypeProto { tensor_type { elem_type, shape { dim* } } } } */
static void write_io(pb_buf *b, const ox_io *o)
{
    pb_buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (int d = 0; d < o->rank; d++) {
        pb_buf dim = {0};
        if (o->param[d]) pb_str(&dim, 2, o->param[d]);
        else pb_int(&dim, 1, o->shape[d]);
        pb_msg(&sh, 1, &dim);
    }
    pb_int(&tt, 1, onnx_dtype(o->dt));
    pb_msg(&tt, 2, &sh);
    pb_msg(&tp, 1, &tt);
    pb_str(&vi, 1, o->name);
    pb_msg(&vi, 2, &tp);
    pb_msg(b, o->output ? 12 : 11, &vi);
}

static void write_graph(pb_buf *b, const tg_onnx *m)
{
    pb_buf g = {0};
    for (int i = 0; i < m->n_nodes; i++) write_node(&g, &m->nodes[i], i);
    pb_str(&g, 2, m->graph_name);
    for (int i = 0; i < m->n_inits; i++)   /* "": replaced by a node (batch_expand) */
        if (*m->inits[i].name)
            write_tensor(&g, 5, m->inits[i].name, m->inits[i].t ? m->inits[i].t : &m->inits[i].own);
    for (int i = 0; i < m->n_io; i++)
        if (!m->io[i].output) write_io(&g, &m->io[i]);
    for (int i = 0; i < m->n_io; i++)
        if (m->io[i].output) write_io(&g, &m->io[i]);
    pb_msg(b, 7, &g);
}

tg_status tg__onnx_write(tg_onnx *m, FILE *f)
{
    if (m->st) return tg_set_error(m->st, "%s", m->err);
    pb_buf b = {0}, op = {0};
    pb_int(&b, 1, TG__ONNX_IR_VERSION);      /* ir_version */
    pb_str(&b, 2, "tgraph");                 /* producer_name */
    pb_str(&b, 3, "0.1.0");                  /* producer_version */
    write_graph(&b, m);                      /* graph = 7 */
    pb_str(&op, 1, "");                      /* opset_import: domain "" (ai.onnx) */
    pb_int(&op, 2, TG__ONNX_OPSET);
    pb_msg(&b, 8, &op);
    tg_status st = TG_OK;
    if (b.oom) st = tg_set_error(TG_ERR_NOMEM, "onnx: out of memory writing the model");
    else if (fwrite(b.p, 1, b.n, f) != b.n) st = tg_set_error(TG_ERR_IO, "write failed");
    free(b.p);
    return st;
}
