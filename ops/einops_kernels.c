/*
 * einops_kernels.c - the kernels of rearrange, repeat and reduce: they run the
 * walks einops.c's builders made (einops_kernels.h) over the data.
 *   copy:       dst[k] = src[off(k)], any dtype, a row at a time (one memcpy
 *               when the source is contiguous there): rearrange and repeat
 *               forward, rearrange backward into a fresh gradient;
 *   gather-add: dst[k] += scale * src[off(k)]: rearrange and reduce sum/mean
 *               backward;
 *   fold:       dst[k] (= | +=) sum/max/min/prod of src over an inner walk at
 *               off(k): reduce forward (int64 too), repeat backward;
 * and the backward of prod and of max/min. All but max/min's backward run on
 * tg_parallel_for, rows of the walk per task.
 *
 * Not here: the nodes, their attributes and descriptors (einops.c), the
 * pattern language (einops_parse.c).
 *
 * Reading order (engine/generic.h): the walk's odometer, the kernels that do
 * not depend on the element type (copy, the int64 fold) and the runners, then
 * the portable kernels for float and double at the end of the file.
 */
#ifndef TG_KERNELS /* ======================== the odometer, copy, int64, runners */

#include "einops_kernels.h"
#include "ops_internal.h"
#include "generic.h"

typedef struct ein_gather {
    const ein_walk *w;
    const void     *src;
    void           *dst;
    size_t          es;      /* element size (copy) */
    double          scale;   /* (add) */
} ein_gather;

#define FOLD_BLOCK 256   /* dst elements summed together by fold_sum_blocks */

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, gather_add_range, (void *vctx, int64_t begin, int64_t end, int tid));
TG_KERNEL_DECL(static void, fold_range, (void *vctx, int64_t begin, int64_t end, int tid));

/* Position number k over the first nd axes (the last of them fastest): index and offset. */
static void walk_start(const ein_walk *w, int nd, int64_t k, int64_t *idx, int64_t *off)
{
    *off = 0;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = k % w->len[d];
        k /= w->len[d];
        *off += idx[d] * w->src[d];
    }
}

/* The next position over the first nd axes (an odometer). */
static inline void walk_next(const ein_walk *w, int nd, int64_t *idx, int64_t *off)
{
    for (int d = nd - 1; d >= 0; d--) {
        *off += w->src[d];
        if (++idx[d] < w->len[d]) return;
        *off -= w->src[d] * w->len[d];
        idx[d] = 0;
    }
}

/* Forward of rearrange and repeat, any dtype: dst[k] = src[off(k)], rows of
 * the last axis at a time (one memcpy when the source is contiguous there). */
static void copy_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_gather *j = vctx;
    const ein_walk *w = j->w;
    const size_t es = j->es;
    const char *src = j->src;
    char *dst = (char *)j->dst + (size_t)(begin * w->inner) * es;
    int64_t idx[TG__EIN_MAX_AXES], off, inner = w->inner, si = w->inner_src;
    (void)tid;
    walk_start(w, w->rank - 1, begin, idx, &off);
    for (int64_t r = begin; r < end; r++, dst += (size_t)inner * es) {
        const char *x = src + (size_t)off * es;
        if (si == 1) {
            memcpy(dst, x, (size_t)inner * es);
        } else if (es == 8) {
            for (int64_t i = 0; i < inner; i++) memcpy(dst + 8 * i, x + 8 * i * si, 8);
        } else if (es == 4) {
            for (int64_t i = 0; i < inner; i++) memcpy(dst + 4 * i, x + 4 * i * si, 4);
        } else {
            for (int64_t i = 0; i < inner; i++) memcpy(dst + es * (size_t)i, x + es * (size_t)(i * si), es);
        }
        walk_next(w, w->rank - 1, idx, &off);
    }
}

/* reduce forward on int64: y[k] = sum / prod (wrapping, as torch's int64
 * does) or max / min over the reduced axes of x at x offset off(k). */
void tg__ein_fold_i64_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_fold *j = vctx;
    const ein_walk *o = j->outer, *in = j->inner;
    const int64_t *src = j->src;
    int64_t *dst = j->dst;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    int64_t rows = in->empty ? 0 : in->numel / in->inner, inner = in->inner, si = in->inner_src;
    (void)tid;
    walk_start(o, o->rank, begin, oidx, &off);
    for (int64_t k = begin; k < end; k++) {
        uint64_t acc = j->mode == FOLD_PROD ? 1 : 0;
        int64_t best = 0;
        bool any = false;
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows; r++) {
            const int64_t *x = src + off + ioff;
            for (int64_t i = 0; i < inner; i++) {
                int64_t v = x[i * si];
                if (j->mode == FOLD_SUM) acc += (uint64_t)v;
                else if (j->mode == FOLD_PROD) acc *= (uint64_t)v;
                else if (!any || (j->mode == FOLD_MAX ? v > best : v < best)) best = v, any = true;
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        dst[k] = j->mode == FOLD_SUM || j->mode == FOLD_PROD ? (int64_t)acc : best;
        walk_next(o, o->rank, oidx, &off);
    }
}

/* Rows of at least ~16k elements per task. */
int64_t tg__ein_grain_for(int64_t per_item)
{
    return per_item >= 16384 ? 1 : 16384 / (per_item > 0 ? per_item : 1);
}

void tg__ein_run_copy(const ein_walk *w, const void *src, void *dst, size_t es)
{
    if (w->empty) return;
    ein_gather j = {w, src, dst, es, 1.0};
    tg_parallel_for(w->numel / w->inner, tg__ein_grain_for(w->inner), copy_range, &j);
}

void tg__ein_run_gather_add(tg_dtype dt, const ein_walk *w, const void *src, void *dst,
                            double scale)
{
    if (w->empty) return;
    ein_gather j = {w, src, dst, 0, scale};
    tg_parallel_for(w->numel / w->inner, tg__ein_grain_for(w->inner),
                    TG_DISPATCH(dt, gather_add_range), &j);
}

void tg__ein_run_fold(tg_dtype dt, ein_fold *j)
{
    if (j->outer->empty) return;
    tg_parallel_for(j->outer->numel, tg__ein_grain_for(j->inner->numel),
                    TG_DISPATCH(dt, fold_range), j);
}

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "einops_kernels.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* rearrange backward: dx = inverse permutation of dy, i.e. walking dx in input
 * order, dst[k] += dy[off(k)];  reduce sum/mean backward: dx[i] += scale * dy[j(i)]
 * (the walk's dy stride is 0 along reduced axes). dst contiguous. */
static void TG_F(gather_add_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_gather *j = vctx;
    const ein_walk *w = j->w;
    const TG_T *src = j->src;
    TG_T *dst = (TG_T *)j->dst + begin * w->inner;
    TG_T s = (TG_T)j->scale;
    int64_t idx[TG__EIN_MAX_AXES], off, inner = w->inner, si = w->inner_src;
    (void)tid;
    walk_start(w, w->rank - 1, begin, idx, &off);
    for (int64_t r = begin; r < end; r++, dst += inner) {
        const TG_T *x = src + off;
        if (si == 1)
            for (int64_t i = 0; i < inner; i++) dst[i] += s * x[i];
        else
            for (int64_t i = 0; i < inner; i++) dst[i] += s * x[i * si];
        walk_next(w, w->rank - 1, idx, &off);
    }
}

/* The sum of fold_range when the outer walk is contiguous in src along its
 * last axis (repeat backward, "(b t) s d -> b d"): a block of dst at a time,
 * each inner position adding one contiguous run of src (cache-friendly and
 * vectorisable, where one element at a time would stride through memory). */
static void TG_F(fold_sum_blocks)(const ein_fold *j, int64_t begin, int64_t end)
{
    const ein_walk *o = j->outer, *in = j->inner;
    const TG_T *src = j->src;
    TG_T *dst = j->dst;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    double acc[FOLD_BLOCK];
    for (int64_t k = begin; k < end;) {
        walk_start(o, o->rank, k, oidx, &off);
        int64_t n = o->len[o->rank - 1] - oidx[o->rank - 1];   /* to the end of the row */
        if (n > end - k) n = end - k;
        if (n > FOLD_BLOCK) n = FOLD_BLOCK;
        for (int64_t i = 0; i < n; i++) acc[i] = 0;
        walk_start(in, in->rank, 0, iidx, &ioff);
        for (int64_t r = 0; r < in->numel; r++) {
            const TG_T *x = src + off + ioff;
            for (int64_t i = 0; i < n; i++) acc[i] += x[i];
            walk_next(in, in->rank, iidx, &ioff);
        }
        for (int64_t i = 0; i < n; i++) {
            TG_T v = (TG_T)(acc[i] * j->scale);
            dst[k + i] = j->accumulate ? dst[k + i] + v : v;
        }
        k += n;
    }
}

/* reduce forward:  y[k]  = scale * sum (or max / min) over the reduced axes of x
 *                  at x offset off(k); max/min also keep the flat x index;
 * repeat backward: dx[k] += sum over the new axes of dy at dy offset off(k).
 * Sums accumulate in double. Max/min keep the first extreme element (lowest
 * flat index: the inner walk runs in input order) and propagate NaN. */
static void TG_F(fold_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_fold *j = vctx;
    const ein_walk *o = j->outer, *in = j->inner;
    const TG_T *src = j->src;
    TG_T *dst = j->dst;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    int64_t rows = in->empty ? 0 : in->numel / in->inner, inner = in->inner, si = in->inner_src;
    (void)tid;
    if (j->mode == FOLD_SUM && o->rank && o->inner_src == 1) {
        TG_F(fold_sum_blocks)(j, begin, end);
        return;
    }
    walk_start(o, o->rank, begin, oidx, &off);
    for (int64_t k = begin; k < end; k++) {
        double acc = j->mode == FOLD_PROD ? 1 : 0;
        TG_T best = 0;
        int64_t arg = -1;
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows; r++) {
            const TG_T *x = src + off + ioff;
            if (j->mode == FOLD_SUM) {
                double s = 0;
                for (int64_t i = 0; i < inner; i++) s += x[i * si];
                acc += s;
            } else if (j->mode == FOLD_PROD) {
                for (int64_t i = 0; i < inner; i++) acc *= x[i * si];
            } else {
                for (int64_t i = 0; i < inner; i++) {
                    TG_T v = x[i * si];
                    bool take = arg < 0 || (isnan(v) && !isnan(best)) ||
                                (j->mode == FOLD_MAX ? v > best : v < best);
                    if (take) {
                        best = v;
                        arg = off + ioff + i * si;
                    }
                }
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        TG_T v = j->mode == FOLD_SUM || j->mode == FOLD_PROD ? (TG_T)(acc * j->scale) : best;
        dst[k] = j->accumulate ? dst[k] + v : v;
        if (j->arg) j->arg[k] = arg;
        walk_next(o, o->rank, oidx, &off);
    }
}

/* prod backward: forward was y[k] = prod of the slice S(k) of x, so
 * dx[i] += dy[k] * prod_{i' in S(k), i' != i} x[i']: with no zero in the slice
 * y[k] / x[i]; with one zero, the product of the others at that zero and 0
 * elsewhere; with two or more, 0 everywhere (never a division by zero). */
void TG_F(tg__ein_prod_backward_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const ein_prod *j = vctx;
    const ein_walk *o = j->outer, *in = j->inner;
    const TG_T *x = j->x, *dy = j->dy;
    TG_T *dx = j->dx;
    int64_t oidx[TG__EIN_MAX_AXES], iidx[TG__EIN_MAX_AXES], off, ioff;
    int64_t rows = in->empty ? 0 : in->numel / in->inner, inner = in->inner, si = in->inner_src;
    (void)tid;
    walk_start(o, o->rank, begin, oidx, &off);
    for (int64_t k = begin; k < end; k++) {
        double nonzero = 1;   /* product of the slice's nonzero elements */
        int64_t zeros = 0;
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t i = 0; i < inner; i++) {
                TG_T v = x[off + ioff + i * si];
                if (v == 0) zeros++;
                else nonzero *= v;
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        walk_start(in, in->rank - 1, 0, iidx, &ioff);
        for (int64_t r = 0; r < rows && zeros < 2; r++) {
            for (int64_t i = 0; i < inner; i++) {
                int64_t p = off + ioff + i * si;
                double others = zeros == 0 ? nonzero / x[p] : x[p] == 0 ? nonzero : 0;
                dx[p] += (TG_T)(dy[k] * others);
            }
            walk_next(in, in->rank - 1, iidx, &ioff);
        }
        walk_next(o, o->rank, oidx, &off);
    }
}

/* max/min backward: forward was y[k] = x[arg[k]], so dx[arg[k]] += dy[k]. */
void TG_F(tg__ein_arg_backward)(tg_node *n, const int64_t *arg)
{
    const TG_T *dy = n->grad.data;
    TG_T *dx = n->in[0]->grad.data;
    for (int64_t k = 0; k < n->value.numel; k++) dx[arg[k]] += dy[k];
}

#endif
