/*
 * onnx_write.c - tg__onnx_write (onnx.h): the model as protobuf, by our own
 * writer: varints, length-delimited fields, fixed32, with the message and
 * field numbers of onnx.proto3 (ModelProto, GraphProto, NodeProto,
 * AttributeProto, TensorProto, ValueInfoProto, TypeProto, TensorShapeProto).
 *
 * Not a protobuf library: it writes the few messages ONNX needs, each
 * encoded into a byte buffer and appended to its parent as a
 * length-delimited field. Tensor data goes as raw_data (little-endian).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "onnx_internal.h"

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
