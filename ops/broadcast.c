/*
 * broadcast.c - broadcasting, dim wrapping, and the sum_to reduction that
 * undoes a broadcast in backward (OPS.md 0.1-0.3).
 */
#include <stdio.h>

#include "ops_internal.h"

bool tg__broadcast(tg_graph *g, const char *op, const tg_tensor *a, const tg_tensor *b,
                   int *rank, int64_t *shape)
{
    int r = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            tg_graph_fail(g, "%s: The size of tensor a (%lld) must match the size of tensor b "
                          "(%lld) at non-singleton dimension %d", op, (long long)sa,
                          (long long)sb, i);
            return false;
        }
        shape[i] = sa == 1 ? sb : sa;
    }
    *rank = r;
    return true;
}

void tg__bcast_strides(int rank, const int64_t *shape, int out_rank, const int64_t *out_shape,
                       int64_t *strides)
{
    int64_t s = 1;
    (void)out_shape;
    for (int i = out_rank - 1; i >= 0; i--) {
        int j = i - (out_rank - rank);
        strides[i] = (j < 0 || shape[j] == 1) ? 0 : s;
        if (j >= 0) s *= shape[j];
    }
}

void tg__iter_init(tg__iter *it, int rank, const int64_t *shape, const int64_t *s0,
                   const int64_t *s1, const int64_t *s2)
{
    const int64_t *s[3] = {s0, s1, s2};
    memset(it, 0, sizeof *it);
    it->rank = rank;
    for (int d = 0; d < rank; d++) {
        it->shape[d] = shape[d];
        for (int k = 0; k < 3; k++) it->stride[k][d] = s[k] ? s[k][d] : 0;
    }
}

int64_t tg__iter_bcast(tg__iter *it, const tg_tensor *out, const tg_tensor *a,
                       const tg_tensor *b, int64_t *rows)
{
    int64_t so[TG_MAX_RANK], sa[TG_MAX_RANK], sb[TG_MAX_RANK];
    static const int64_t one[1] = {1};
    if (out->rank == 0) {
        tg__iter_init(it, 1, one, one, one, b ? one : NULL);
        *rows = 1;
        return 1;
    }
    tg__strides(out->rank, out->shape, so);
    tg__bcast_strides(a->rank, a->shape, out->rank, out->shape, sa);
    if (b) tg__bcast_strides(b->rank, b->shape, out->rank, out->shape, sb);
    tg__iter_init(it, out->rank, out->shape, so, sa, b ? sb : NULL);
    int64_t inner = out->shape[out->rank - 1];
    *rows = inner ? out->numel / inner : 0;
    return inner;
}

bool tg__dim(tg_graph *g, const char *op, int64_t dim, int rank, int *out)
{
    int d = tg_wrap_dim(dim, rank);
    if (d < 0) {
        int m = rank > 0 ? rank : 1;
        tg_graph_fail(g, "%s: Dimension out of range (expected to be in range of [%d, %d], but "
                      "got %lld)", op, -m, m - 1, (long long)dim);
        return false;
    }
    *out = d;
    return true;
}

bool tg__dims(tg_graph *g, const char *op, const int64_t *dims, int n, int rank, bool *mask)
{
    for (int d = 0; d < TG_MAX_RANK; d++) mask[d] = false;
    for (int i = 0; i < n; i++) {
        int d;
        if (!tg__dim(g, op, dims[i], rank, &d)) return false;
        if (mask[d]) {
            tg_graph_fail(g, "%s: dim %d appears multiple times in the list of dims", op, d);
            return false;
        }
        mask[d] = true;
    }
    return true;
}

bool tg__want_float(tg_graph *g, const char *op, const tg_node *x, const char *what)
{
    if (x->value.dtype == tg_graph_dtype(g)) return true;
    tg_graph_fail(g, "%s: %s must be %s, got %s", op, what, tg_dtype_name(tg_graph_dtype(g)),
                  tg_dtype_name(x->value.dtype));
    return false;
}

void tg__sum_to_acc(tg_dtype dt, const tg_tensor *dy, tg_tensor *dx, double scale)
{
    tg__iter it;
    int64_t rows, inner = tg__iter_bcast(&it, dy, dx, NULL, &rows);
    int64_t sxi = it.stride[1][it.rank - 1];
    for (int64_t r = 0; r < rows; r++, tg__iter_next_row(&it)) {
        if (dt == TG_F64) {
            const double *y = (const double *)dy->data + it.off[0];
            double *x = (double *)dx->data + it.off[1];
            for (int64_t i = 0; i < inner; i++) x[i * sxi] += scale * y[i];
        } else {
            const float *y = (const float *)dy->data + it.off[0];
            float *x = (float *)dx->data + it.off[1];
            for (int64_t i = 0; i < inner; i++) x[i * sxi] += (float)scale * y[i];
        }
    }
}
