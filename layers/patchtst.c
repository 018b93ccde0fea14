/*
 * patchtst.c - PatchTST (see patchtst.h): patching, the patch embedding, the
 * flatten head, the graph builder and its registry entry. The encoder is the
 * shared TSL Encoder (tsl_encoder.h), the encoder norm the batch_norm module.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "crossformer.h"
#include "internal.h"
#include "ops.h"
#include "patchtst.h"

int64_t tg_patch_count(int64_t seq_len, int64_t patch_len, int64_t stride, int64_t padding)
{
    if (seq_len < 1 || patch_len < 1 || stride < 1 || padding < 0 ||
        patch_len > seq_len + padding)
        return 0;
    return (seq_len + padding - patch_len) / stride + 1;
}

/* The gather index of tg_patch_unfold: patch p, tap j reads step
 * min(p * stride + j, T - 1), the replication padding and the unfold in one. */
static tg_tensor *patch_index(int64_t T, int64_t n, int64_t patch_len, int64_t stride)
{
    tg_tensor *idx = tg_tensor_new(TG_I64, 1, (int64_t[]){n * patch_len});
    if (!idx) return NULL;
    int64_t *v = idx->data;
    for (int64_t p = 0; p < n; p++)
        for (int64_t j = 0; j < patch_len; j++) {
            const int64_t s = p * stride + j;
            v[p * patch_len + j] = s < T ? s : T - 1;
        }
    return idx;
}

tg_node *tg_patch_unfold(tg_graph *g, tg_node *x, int64_t patch_len, int64_t stride,
                         int64_t padding)
{
    TG__BUILDER_NONNULL(g, x);
    const tg_tensor *xv = tg_node_value(x);
    char got[96];
    if (xv->rank != 3)
        return tg_graph_fail(g, "patch_unfold: expected x [B, n_vars, T], got %s",
                             tg_shape_str(xv->rank, xv->shape, got, sizeof got));
    if (patch_len < 1 || stride < 1 || padding < 0)
        return tg_graph_fail(g, "patch_unfold: patch_len and stride must be at least 1 and "
                             "padding at least 0, got %lld, %lld and %lld", (long long)patch_len,
                             (long long)stride, (long long)padding);
    const int64_t N = xv->shape[0], C = xv->shape[1], T = xv->shape[2];
    const int64_t n = tg_patch_count(T, patch_len, stride, padding);
    if (n < 1)
        return tg_graph_fail(g, "patch_unfold: patch_len %lld is longer than the padded series "
                             "(%lld steps + padding %lld)", (long long)patch_len, (long long)T,
                             (long long)padding);
    tg_tensor *index = patch_index(T, n, patch_len, stride);
    if (!index) return tg_graph_fail(g, "patch_unfold: patch index: %s", tg_last_error());
    if (tg_scope_push(g, "padding_patch_layer")) {
        tg_tensor_free(index);
        return NULL;
    }
    tg_node *idx = tg_constant(g, "patch_index", index);              /* [n*patch_len] int64 */
    tg_tensor_free(index);
    tg_node *p = tg_index_select(g, x, 2, idx);                       /* [N, C, n*patch_len] */
    tg_scope_pop(g);
    /* x = x.unfold(-1, patch_len, stride); x = x.reshape(N * C, n, patch_len) */
    return tg_reshape(g, p, 3, (int64_t[]){N * C, n, patch_len});
}
