/*
 * embedding.c - embedding (F.embedding): rows of a weight [V, C] picked by
 * int64 ids of any shape; the backward a scatter-add into the weight's
 * gradient, skipping padding_idx. Builder, shape check, forward, backward,
 * descriptor, then the op's registry row. Not here: max_norm (PyTorch
 * renormalises the weight in place) and sparse gradients.
 */
#include <stdio.h>

#include "ops_internal.h"
#include "embedding.h"

typedef struct {
    int64_t V, C;      /* weight [V, C] */
    int64_t padding;   /* the row without gradient, wrapped to [0, V); -1: none */
} emb_attr;

static const tg_op op_embedding;   /* the descriptor, after the backward */

tg_node *tg_embedding(tg_graph *g, tg_node *input, tg_node *weight, int64_t padding_idx)
{
    tg_node *in[2] = {input, weight};
    char s[96];
    if (!tg_builder_check(g, "embedding", 2, in)) return NULL;
    const tg_tensor *ids = &input->value, *w = &weight->value;
    if (ids->dtype != TG_I64)
        return tg_graph_fail(g, "embedding: input (the ids) must be int64, got %s",
                             tg_dtype_name(ids->dtype));
    if (!tg__want_float(g, "embedding", weight, "weight")) return NULL;
    if (w->rank != 2)
        return tg_graph_fail(g, "embedding: 'weight' must be 2-D [num_embeddings, "
                             "embedding_dim], got %s", TG__SHAPE(w, s));
    if (ids->rank + 1 > TG_MAX_RANK)
        return tg_graph_fail(g, "embedding: input has %d dims; the output's %d exceed %d",
                             ids->rank, ids->rank + 1, TG_MAX_RANK);
    int64_t V = w->shape[0], C = w->shape[1], pad = -1;
    if (padding_idx != TG_EMBEDDING_NO_PADDING) {
        if (padding_idx < -V || padding_idx >= V)
            return tg_graph_fail(g, "embedding: Padding_idx must be within num_embeddings "
                                 "(padding_idx=%lld, num_embeddings %lld)",
                                 (long long)padding_idx, (long long)V);
        pad = padding_idx < 0 ? padding_idx + V : padding_idx;
    }
    int64_t shape[TG_MAX_RANK];   /* y: input.shape + [C] */
    for (int d = 0; d < ids->rank; d++) shape[d] = ids->shape[d];
    shape[ids->rank] = C;
    tg_node *y = tg_node_new(g, &op_embedding, 2, in, w->dtype, ids->rank + 1, shape);
    if (!y) return NULL;
    emb_attr *a = tg_node_attr(y, sizeof *a);
    if (!a) return NULL;
    *a = (emb_attr){V, C, pad};
    return y;
}

/* forward: y[r, :] = weight[ids[r], :]   // y: [R, C] with R = ids.numel */
static tg_status emb_forward(tg_node *n)
{
    const emb_attr *a = n->attr;
    const int64_t *ids = n->in[0]->value.data;
    int64_t R = n->in[0]->value.numel;
    size_t row = (size_t)a->C * tg_dtype_size(n->value.dtype);
    for (int64_t r = 0; r < R; r++)
        if (ids[r] < 0 || ids[r] >= a->V)
            return tg_set_error(TG_ERR_INVALID, "embedding: index %lld is out of range for a "
                                "weight of %lld rows (input[%lld])", (long long)ids[r],
                                (long long)a->V, (long long)r);
    const char *w = n->in[1]->value.data;
    char *y = n->value.data;
    for (int64_t r = 0; r < R; r++) memcpy(y + (size_t)r * row, w + (size_t)ids[r] * row, row);
    return TG_OK;
}

/* backward (forward was y[r, :] = weight[ids[r], :]):
 *   dweight[ids[r], :] += dy[r, :]   for every r with ids[r] != padding_idx
 * serial: repeated ids add into the same row */
static tg_status emb_backward(tg_node *n)
{
    const emb_attr *a = n->attr;
    tg_node *w = n->in[1];
    if (!w->requires_grad) return TG_OK;
    const int64_t *ids = n->in[0]->value.data;
    int64_t R = n->in[0]->value.numel, C = a->C;
    for (int64_t r = 0; r < R; r++) {
        if (ids[r] == a->padding) continue;
        if (n->value.dtype == TG_F32) {
            float *dw = (float *)w->grad.data + ids[r] * C;
            const float *dy = (const float *)n->grad.data + r * C;
            for (int64_t c = 0; c < C; c++) dw[c] += dy[c];
        } else {
            double *dw = (double *)w->grad.data + ids[r] * C;
            const double *dy = (const double *)n->grad.data + r * C;
            for (int64_t c = 0; c < C; c++) dw[c] += dy[c];
        }
    }
    return TG_OK;
}

static void emb_describe(const tg_node *n, char *buf, size_t len)
{
    const emb_attr *a = n->attr;
    if (a->padding >= 0) snprintf(buf, len, "padding_idx=%lld", (long long)a->padding);
    else if (len) buf[0] = '\0';
}

/* ONNX: Gather(weight, ids, axis=0). */
static tg_status emb_onnx(const tg_node *n, struct tg_onnx *m)
{
    TG__ONNX_NODE(m, "Gather", tg__onnx_value(m, n), tg__onnx_in(m, n, 1), tg__onnx_in(m, n, 0));
    tg__onnx_attr_int(m, "axis", 0);
    return tg__onnx_status(m);
}

static const tg_op op_embedding = {.name = "embedding", .forward = emb_forward,
                                   .backward = emb_backward, .describe = emb_describe,
                                   .flags = TG_OP_BWD_NO_OUTPUT,
                                   .flops = tg__flops_none, .onnx = emb_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_embedding)
{
    (void)n_in;
    int64_t pad = tg__op_is_null(c, "padding_idx") ? TG_EMBEDDING_NO_PADDING
                                                    : tg__op_int(c, "padding_idx");
    return TG_GLUE_ONE(tg_embedding(g, in[0], in[1], pad));
}

/* gradcheck ids: uniform in [0, V), V = weight.size(0) (input 1, drawn first). */
static tg_status gen_ids(const tg_op_call *c, int i, const tg_tensor *const *in, tg_tensor *t,
                         tg_rng *rng)
{
    (void)c, (void)i;
    const tg_tensor *w = in[1];
    int64_t V = w && w->rank >= 1 ? w->shape[0] : 0;
    if (V <= 0 && t->numel) return tg_set_error(TG_ERR_INVALID, "the weight has no rows to pick");
    int64_t *v = t->data;
    for (int64_t k = 0; k < t->numel; k++) v[k] = (int64_t)tg_rng_below(rng, (uint64_t)V);
    return TG_OK;
}

const tg_op_def tg__embedding_ops[] = {
    {"embedding", "F.embedding(input, weight, padding_idx=None)",
     {{"padding_idx", TG_OP_INT, "null", true,
       "the row that takes no gradient (< 0: from the end)", NULL, 0}},
     false, {{"input", TG_OP_IN_INDEX, 0}, TG_IN("weight")}, 2, false, 1, b_embedding, gen_ids,
     "embedding padding_idx=0 --in ids.npy --in weight.npy --out y.npy", &op_embedding, NULL,
     "i64[2,3];[5,4]", "padding_idx=5;i64[3];[5,4]",
     "input: int64 ids of any shape; weight [V, C]; output input.shape + [C].\n"
     "An id outside [0, V) is an error naming it."},
    {0}
};
