/*
 * onnx.c - the ONNX model of onnx.h in memory: nodes, attributes,
 * initializers, the graph's inputs and outputs, value names. Written by
 * onnx_write.c; made symbolic in its batch size by onnx_batch.c.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "onnx_internal.h"

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
void *tg__onnx_keep(tg_onnx *m, size_t n)
{
    if (!grow(m, (void **)&m->pool, &m->pool_cap, m->n_pool, sizeof *m->pool)) return NULL;
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        tg__onnx_fail(m, TG_ERR_NOMEM, "onnx: out of memory");
        return NULL;
    }
    return m->pool[m->n_pool++] = p;
}

const char *tg__onnx_keep_str(tg_onnx *m, const char *s)
{
    size_t n = strlen(s ? s : "");
    char *p = tg__onnx_keep(m, n + 1);
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
    m->graph_name = tg__onnx_keep_str(m, graph_name ? graph_name : "tgraph");
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
    m->values[id] = tg__onnx_keep_str(m, name);
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
    return tg__onnx_keep_str(m, buf);
}

/* ---- nodes and attributes ---- */

static const char **keep_names(tg_onnx *m, int n, const char *const *names)
{
    const char **p = tg__onnx_keep(m, (size_t)(n ? n : 1) * sizeof *p);
    for (int i = 0; p && i < n; i++) p[i] = tg__onnx_keep_str(m, names[i]);
    return p;
}

void tg__onnx_node(tg_onnx *m, const char *op_type, int n_in, const char *const *in, int n_out,
                   const char *const *out)
{
    if (!grow(m, (void **)&m->nodes, &m->node_cap, m->n_nodes, sizeof *m->nodes)) return;
    ox_node nd = {.op = tg__onnx_keep_str(m, op_type), .n_in = n_in, .n_out = n_out,
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
    ox_attr *a = tg__onnx_keep(m, (size_t)(nd->n_attr + 1) * sizeof *a);
    if (!a) return NULL;
    if (nd->n_attr) memcpy(a, nd->attr, (size_t)nd->n_attr * sizeof *a);
    nd->attr = a;
    a += nd->n_attr++;
    a->name = tg__onnx_keep_str(m, name);
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
    if (a) a->s = tg__onnx_keep_str(m, v);
}

void tg__onnx_attr_ints(tg_onnx *m, const char *name, int n, const int64_t *v)
{
    ox_attr *a = new_attr(m, name, A_INTS);
    if (!a) return;
    a->ints = tg__onnx_keep(m, (size_t)(n ? n : 1) * sizeof *a->ints);
    if (!a->ints) return;
    if (n) memcpy(a->ints, v, (size_t)n * sizeof *v);
    a->n = n;
}

/* ---- initializers ---- */

void tg__onnx_initializer(tg_onnx *m, const char *name, const tg_tensor *t)
{
    if (!grow(m, (void **)&m->inits, &m->init_cap, m->n_inits, sizeof *m->inits)) return;
    m->inits[m->n_inits++] = (ox_init){.name = tg__onnx_keep_str(m, name), .t = t};
}

/* A constant tensor owned by the model, of rank 0 or 1 (n values); its data to fill. */
void *tg__onnx_own_const(tg_onnx *m, tg_dtype dt, int rank, int64_t n, const char **name)
{
    char buf[32];
    snprintf(buf, sizeof buf, "onnx:const:%d", m->n_tmp++);
    *name = tg__onnx_keep_str(m, buf);
    void *data = tg__onnx_keep(m, (size_t)(n ? n : 1) * tg_dtype_size(dt));
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
    int64_t *d = tg__onnx_own_const(m, TG_I64, 1, n, &name);
    if (d && n) memcpy(d, v, (size_t)n * sizeof *v);
    return name;
}

const char *tg__onnx_const_scalar(tg_onnx *m, tg_dtype dt, double v)
{
    const char *name = "";
    void *d = tg__onnx_own_const(m, dt, 0, 1, &name);
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
    *o = (ox_io){.name = tg__onnx_keep_str(m, name), .output = output, .dt = dt, .rank = rank};
    for (int d = 0; d < rank; d++) {
        o->shape[d] = shape[d];
        o->param[d] = dim_param && dim_param[d] ? tg__onnx_keep_str(m, dim_param[d]) : NULL;
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
