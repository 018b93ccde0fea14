/*
 * topk.c - torch.topk along one dim (OPS.md section 6): values, indices.
 *
 * Each row (n elements along dim, stride `inner`) is a partial selection,
 * never a full sort:
 * - float32, k <= 64, n >= 8, when tg__vec_on(): ops/simd/vec_topk.c on AVX-512
 *   or AVX2 (strided rows of up to 4096 copied out first). A bar from group
 *   maxima lets about k + k/4 of a random row through, and bitonic networks
 *   sort those: the same picks in the same order, bit for bit, as the
 *   portable kernel below, which stays the reference (TG_NO_SIMD=1).
 * - k <= TOPK_SMALL (64; attention uses k = 32 of n = 256): a sorted buffer
 *   of the k best so far on the stack; most elements fail one integer
 *   comparison with the buffer's last, the rest are inserted from the back
 *   (float64), or, in float32, appended branch-free to a candidate list that
 *   is sorted and merged in when full (key and index packed in one uint64).
 * - larger k: a binary heap of k entries kept in the output row (root = the
 *   worst kept), O(n log k), then a heap sort when `sorted`.
 * Measured (make bench-topk: one thread, float32, largest, sorted, 16384
 * rows (1024 of 4096), ns per row; portable / AVX2 / AVX-512):
 *   n=256  k=32: 2380 / 333 / 226   (heap 5200, full qsort 23000)
 *   n=256  k=8:  1050 / 200 / 141;   k=64: 3740 / 522 / 341
 *   n=4096 k=32: 10900 / 2490 / 1420 (heap 15900, qsort 500000)
 *   n=64   k=32: 1010 / 185 / 160;   n=600 k=17: 2530 / 533 / 298
 *   n=256  k=32 at stride 64: 2430 / 492 / 385
 *   n=256  k=32 ascending rows: 2110 / 299 / 206; all equal: 464 / 360 / 252
 * (2 threads, the attention's 16384 rows: 19.8 ms portable, 2.8 AVX2, 1.9
 * AVX-512.)
 *
 * The rank order is strict and total: value first (NaN above every number;
 * reversed for smallest), then the lower index. So the chosen set and its
 * order are fully determined, ties included.
 *
 * The values node saves the indices in n->buf[0]; the optional indices node
 * is a second op whose forward copies that buffer. Not here: sort, argmax.
 *
 * Reading order (engine/generic.h): builder, forward and backward, the
 * descriptors and registry row, then the portable kernels for float and
 * double at the end (the reference: TG_NO_SIMD=1, and the F64 path). The
 * float32 rows that the vector kernel of ops/simd/vec_topk.c takes are
 * chosen in run(), once per call, and go through topk_vec_rows; the other
 * float32 forward rows with k <= 64 go through the packed kernel
 * (topk_packed_rows), float32 only since its key and index share 64 bits.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "ops_internal.h"
#include "topk.h"
#include "generic.h"
#include "simd/vec.h"

typedef struct {
    int     dim;                 /* wrapped */
    int64_t k, outer, n, inner;  /* x seen as [outer, n, inner], values as [outer, k, inner] */
    bool    largest, sorted;
} topk_attr;

typedef struct { tg_node *n; bool backward, vec; } topk_ctx;   /* vec: topk_f32_rows' choice */

/* Up to this k a row keeps a sorted buffer on the stack; above, a heap. */
#ifndef TOPK_SMALL
#define TOPK_SMALL 64
#endif
_Static_assert(TOPK_SMALL >= 64, "the vector kernel's rows (k <= 64) go through topk_f32_rows");
/* float32, k <= 64: the vector kernel (ops/simd/vec_topk.c) takes rows of at least
 * TOPK_VEC_MIN (below, the portable one is as fast), strided ones of at most
 * TOPK_GATHER (copied to the stack first). */
#define TOPK_VEC_MIN 8
#define TOPK_GATHER 4096

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, topk_rows, (void *vctx, int64_t begin, int64_t end, int tid));
/* the float32 rank key (kernel section), for the packed kernel of the op proper */
static inline uint32_t rank_key_f32(float x, bool largest);

static const tg_op op_topk, op_topk_indices;   /* the descriptors, after the backward */

/* ---- builder ---- */

tg_node *tg_topk(tg_graph *g, tg_node *x, int64_t k, int dim, bool largest, bool sorted,
                 tg_node **indices)
{
    if (indices) *indices = NULL;
    if (!tg_builder_check(g, "topk", 1, &x)) return NULL;
    if (!tg__want_float(g, "topk", x, "input")) return NULL;
    const tg_tensor *v = &x->value;
    int d;
    if (!tg__dim(g, "topk", dim, v->rank, &d)) return NULL;
    int64_t size = v->rank ? v->shape[d] : 1;
    if (k < 0 || k > size)
        return tg_graph_fail(g, "topk: selected index k out of range (k = %lld, size of dim %d "
                             "is %lld)", (long long)k, d, (long long)size);
    topk_attr at = {.dim = d, .k = k, .outer = 1, .n = size, .inner = 1, .largest = largest,
                    .sorted = sorted};
    int64_t shape[TG_MAX_RANK];
    for (int i = 0; i < v->rank; i++) {
        shape[i] = i == d ? k : v->shape[i];
        if (i < d) at.outer *= v->shape[i];
        if (i > d) at.inner *= v->shape[i];
    }
    if (v->rank == 0) at.k = 1;            /* PyTorch: a 0-d input gives itself, even for k = 0 */
    tg_node *n = tg_node_new(g, &op_topk, 1, &x, v->dtype, v->rank, shape);
    topk_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    *a = at;
    if (tg_node_buffer(n, TG_I64, v->rank, shape) < 0) return NULL;
    if (indices) {
        *indices = tg_node_new(g, &op_topk_indices, 1, &n, TG_I64, v->rank, shape);
        if (!*indices) return NULL;
    }
    return n;
}

/* ---- forward and backward ---- */


/* float32, k <= TOPK_SMALL: the rank key and the complemented index packed
 * into one uint64 (key high, ~index low), so the rank order is the integer
 * order and every entry is distinct. The k best so far stay sorted in buf;
 * later entries that beat the k-th best are appended to cand without a
 * branch, and a full cand is sorted and merged into buf, raising the bar.
 * For random data few entries pass the bar, so a row costs about n
 * branch-free steps plus a few small sorts. */
static void topk_sort_desc(uint64_t *a, int64_t m)
{
    for (int64_t i = 1; i < m; i++) {
        uint64_t e = a[i];
        int64_t p = i;
        for (; p > 0 && a[p - 1] < e; p--) a[p] = a[p - 1];
        a[p] = e;
    }
}

/* buf[0..k) = the k largest of buf[0..k) and cand[0..c), descending */
static void topk_merge(uint64_t *buf, int64_t k, uint64_t *cand, int64_t c)
{
    uint64_t out[TOPK_SMALL];
    topk_sort_desc(cand, c);
    int64_t i = 0, j = 0;
    for (int64_t o = 0; o < k; o++) out[o] = (j >= c || buf[i] > cand[j]) ? buf[i++] : cand[j++];
    memcpy(buf, out, (size_t)k * sizeof *buf);
}

static void topk_row_packed_f32(const float *x, int64_t n, int64_t xs, float *v, int64_t *ix,
                                int64_t k, int64_t os, bool largest)
{
    uint64_t buf[TOPK_SMALL], cand[TOPK_SMALL];
#define PACK(j) (((uint64_t)rank_key_f32(x[(j) * xs], largest) << 32) | (uint32_t)~(uint32_t)(j))
    for (int64_t j = 0; j < k; j++) buf[j] = PACK(j);
    topk_sort_desc(buf, k);
    uint64_t bar = buf[k - 1];
    int64_t c = 0;
    for (int64_t j = k; j < n; j++) {
        uint64_t p = PACK(j);
        cand[c] = p;
        c += p > bar;
        if (c == k) {
            topk_merge(buf, k, cand, c);
            c = 0;
            bar = buf[k - 1];
        }
    }
#undef PACK
    if (c) topk_merge(buf, k, cand, c);
    for (int64_t j = 0; j < k; j++) {
        int64_t i = (uint32_t)~(uint32_t)buf[j];
        v[j * os] = x[i * xs];
        ix[j * os] = i;
    }
}

/* forward, float32 rows [begin, end), k <= TOPK_SMALL, n < 2^32: the vector
 * kernel (ops/simd/vec_topk.c; strided rows copied out first) when c->vec,
 * else the packed kernel above (the index fits 32 bits); run() says which
 * calls take them */
static void topk_f32_rows(void *vctx, int64_t begin, int64_t end, int tid)
{
    const topk_ctx *c = vctx;
    const topk_attr *a = c->n->attr;
    int64_t n = a->n, k = a->k, in = a->inner;
    int64_t *IX = c->n->buf[0].data;                       /* [outer, k, inner] */
    const float *x = c->n->in[0]->value.data;              /* [outer, n, inner] */
    float *v = c->n->value.data;                           /* [outer, k, inner] */
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t o = r / in, i = r % in;
        int64_t xb = o * n * in + i, ob = o * k * in + i;
        if (!c->vec) {
            topk_row_packed_f32(x + xb, n, in, v + ob, IX + ob, k, in, a->largest);
            continue;
        }
#if TG_VEC
        const float *row = x + xb;
        float copy[TOPK_GATHER];                           /* a strided row, copied out */
        if (in > 1) {
            for (int64_t j = 0; j < n; j++) copy[j] = x[xb + j * in];
            row = copy;
        }
        tg__vec_topk_row_f32(row, n, v + ob, IX + ob, k, in, a->largest);
#endif
    }
}

static void run(tg_node *n, bool backward)
{
    const topk_attr *a = n->attr;
    topk_ctx c = {n, backward, false};
    if (a->k == 0) return;
    if (!backward && n->value.dtype == TG_F32 && a->k <= TOPK_SMALL &&
        a->n <= (int64_t)UINT32_MAX) {
#if TG_VEC
        /* the vector kernel: k <= 64, rows of TOPK_VEC_MIN or more, strided
         * ones up to TOPK_GATHER */
        c.vec = tg__vec_on() && a->k <= 64 && a->n >= TOPK_VEC_MIN &&
                (a->inner == 1 || a->n <= TOPK_GATHER);
#endif
        tg_parallel_for(a->outer * a->inner, 1 + 8192 / (a->n + 1), topk_f32_rows, &c);
        return;
    }
    tg_parallel_for(a->outer * a->inner, 1 + 8192 / (a->n + 1),
                    TG_DISPATCH(n->value.dtype, topk_rows), &c);
}

static tg_status topk_forward(tg_node *n)
{
    run(n, false);
    return TG_OK;
}

static tg_status topk_backward(tg_node *n)
{
    run(n, true);
    return TG_OK;
}

/* indices node: a copy of the values node's saved indices */
static tg_status topk_indices_forward(tg_node *n)
{
    memcpy(n->value.data, n->in[0]->buf[0].data, (size_t)n->value.numel * sizeof(int64_t));
    return TG_OK;
}

/* ---- descriptors ---- */

static void topk_describe(const tg_node *n, char *buf, size_t len)
{
    const topk_attr *a = n->attr;
    snprintf(buf, len, "k=%lld dim=%d%s%s", (long long)a->k, a->dim,
             a->largest ? "" : " smallest", a->sorted ? "" : " unsorted");
}

/* The decisions: which indices were picked, in which order (for gradcheck). */
static uint64_t topk_kinks(const tg_node *n)
{
    const int64_t *ix = n->buf[0].data;
    uint64_t h = 1469598103934665603ull;
    for (int64_t i = 0; i < n->buf[0].numel; i++) h = (h ^ (uint64_t)ix[i]) * 1099511628211ull;
    return h;
}

/* ONNX: TopK; its indices go to "<values>:indices", which topk_indices names. */
static tg_status topk_onnx(const tg_node *n, struct tg_onnx *m)
{
    const topk_attr *a = n->attr;
    char ind[600];
    snprintf(ind, sizeof ind, "%.500s:indices", tg__onnx_value(m, n));
    const char *in[2] = {tg__onnx_in(m, n, 0), tg__onnx_const_i64(m, 1, &a->k)};
    const char *out[2] = {tg__onnx_value(m, n), ind};
    tg__onnx_node(m, "TopK", 2, in, 2, out);
    tg__onnx_attr_int(m, "axis", a->dim);
    tg__onnx_attr_int(m, "largest", a->largest);
    tg__onnx_attr_int(m, "sorted", a->sorted);
    return tg__onnx_status(m);
}

static tg_status topk_indices_onnx(const tg_node *n, struct tg_onnx *m)
{
    char ind[600];
    snprintf(ind, sizeof ind, "%.500s:indices", tg__onnx_in(m, n, 0));
    TG__ONNX_NODE(m, "Identity", tg__onnx_value(m, n), ind);
    return tg__onnx_status(m);
}

static const tg_op op_topk = {.name = "topk", .forward = topk_forward, .backward = topk_backward,
                              .describe = topk_describe, .kinks = topk_kinks,
                              .flags = TG_OP_BWD_NO_OUTPUT | TG_OP_BWD_NO_INPUTS,   /* the saved indices */
                              .flops = tg__flops_none, .onnx = topk_onnx};

static const tg_op op_topk_indices = {.name = "topk_indices", .forward = topk_indices_forward,

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */
                                      .flops = tg__flops_none, .onnx = topk_indices_onnx};

#include "registry_internal.h"

TG_GLUE(b_topk)
{
    (void)n_in;
    int dim;
    if (!tg__op_dim(g, c, "dim", &dim)) return TG_ERR_INVALID;
    out[0] = tg_topk(g, in[0], tg__op_int(c, "k"), dim, tg__op_bool(c, "largest"),
                     tg__op_bool(c, "sorted"), &out[1]);
    *n_out = 2;
    return out[0] ? TG_OK : TG_ERR_INVALID;
}

const tg_op_def tg__topk_ops[] = {
    {"topk", "torch.topk(input, k, dim, largest, sorted) -> values, int64 indices",
     {{"k", TG_OP_INT, NULL, false, "how many elements to keep", NULL, 0},
      {"dim", TG_OP_INT, "-1", false, "the dim to select along", NULL, 0},
      {"largest", TG_OP_BOOL, "true", false, "the largest (true) or smallest (false)", NULL, 0},
      {"sorted", TG_OP_BOOL, "true", false, "return them in sorted order", NULL, 0}},
     false, {TG_IN("input")}, 1, false, 2, b_topk, NULL,
     "topk k=3 dim=-1 --in x.npy --out values.npy --out indices.npy", &op_topk, NULL,
     "k=2;[3,5]", "k=6;[3,5]", NULL},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "topk.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* Does (a at index ia) rank before (b at ib)? largest: NaN > +inf > ... ;
 * smallest: -inf < ... < +inf < NaN. Equal values: the lower index first. */
static inline bool TG_F(before)(TG_T a, int64_t ia, TG_T b, int64_t ib, bool largest)
{
    bool na = a != a, nb = b != b;
    if (na || nb) {
        if (na && nb) return ia < ib;
        return largest ? na : nb;
    }
    if (a != b) return largest ? a > b : a < b;
    return ia < ib;
}

/* Restore the heap below position i (heap of m entries at stride st; every
 * parent ranks after its children, so the root is the worst). */
static void TG_F(sift_down)(TG_T *v, int64_t *ix, int64_t i, int64_t m, int64_t st, bool largest)
{
    TG_T pv = v[i * st];
    int64_t pi = ix[i * st];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && TG_F(before)(v[c * st], ix[c * st], v[(c + 1) * st], ix[(c + 1) * st],
                                      largest))
            c++;                                          /* the worse child */
        if (!TG_F(before)(pv, pi, v[c * st], ix[c * st], largest)) break;
        v[i * st] = v[c * st];
        ix[i * st] = ix[c * st];
        i = c;
    }
    v[i * st] = pv;
    ix[i * st] = pi;
}

/* forward, one row, large k: (v, ix)[0..k) = the k best of x[0..n) (stride
 * xs), in rank order when sorted. A heap in the output row (stride os). */
static void TG_F(topk_row_heap)(const TG_T *x, int64_t n, int64_t xs, TG_T *v, int64_t *ix,
                                int64_t k, int64_t os, bool largest, bool sorted)
{
    /* fill with the first k, then heapify */
    for (int64_t j = 0; j < k; j++) {
        v[j * os] = x[j * xs];
        ix[j * os] = j;
    }
    for (int64_t i = k / 2 - 1; i >= 0; i--) TG_F(sift_down)(v, ix, i, k, os, largest);
    /* every later element replaces the root if it ranks before it */
    for (int64_t j = k; j < n; j++) {
        TG_T e = x[j * xs];
        if (TG_F(before)(e, j, v[0], ix[0], largest)) {
            v[0] = e;
            ix[0] = j;
            TG_F(sift_down)(v, ix, 0, k, os, largest);
        }
    }
    if (!sorted) return;
    /* heap sort: move the worst to the back, repeatedly */
    for (int64_t m = k - 1; m > 0; m--) {
        TG_T tv = v[0];
        int64_t ti = ix[0];
        v[0] = v[m * os];
        ix[0] = ix[m * os];
        v[m * os] = tv;
        ix[m * os] = ti;
        TG_F(sift_down)(v, ix, 0, m, os, largest);
    }
}

/* The rank of a value as an unsigned key, larger = ranks before (ties are
 * broken by index separately): the IEEE bits made monotonic (sign flipped for
 * positives, all bits for negatives; -0.0 read as +0.0), complemented for
 * smallest; NaN is the top key for largest and 0 (last) for smallest. */
typedef TG_U TG_F(key);
static inline TG_F(key) TG_F(rank_key)(TG_T x, bool largest)
{
    const TG_F(key) top = (TG_F(key))1 << (sizeof(TG_F(key)) * 8 - 1);
    TG_F(key) u;
    TG_T z = x == 0 ? (TG_T)0 : x;
    memcpy(&u, &z, sizeof u);
    u = (u & top) ? ~u : (u | top);
    if (x != x) return largest ? (TG_F(key))~(TG_F(key))0 : 0;
    return largest ? u : ~u;
}

/* forward, one row, k <= TOPK_SMALL: a buffer of the best so far, sorted by
 * key. Each new element has the largest index yet, so it loses every tie: it
 * enters only with a strictly larger key than the buffer's last, and settles
 * after any equal keys (insertion from the back). Always sorted. Costs n key
 * comparisons plus about k/2 moves per entry (k ln(n/k) entries for random
 * data, n for an ascending row, hence the small k). */
static void TG_F(topk_row_small)(const TG_T *x, int64_t n, int64_t xs, TG_T *v, int64_t *ix,
                                 int64_t k, int64_t os, bool largest)
{
    TG_F(key) bk[TOPK_SMALL];
    int64_t bi[TOPK_SMALL], m = 0;
    for (int64_t j = 0; j < n; j++) {
        TG_F(key) e = TG_F(rank_key)(x[j * xs], largest);
        if (m == k && e <= bk[k - 1]) continue;
        int64_t p = m < k ? m++ : k - 1;
        for (; p > 0 && bk[p - 1] < e; p--) {
            bk[p] = bk[p - 1];
            bi[p] = bi[p - 1];
        }
        bk[p] = e;
        bi[p] = j;
    }
    for (int64_t j = 0; j < k; j++) {
        v[j * os] = x[bi[j] * xs];
        ix[j * os] = bi[j];
    }
}

/* rows [begin, end): forward selects; backward does dx[o, ix[j], i] += dv[o, j, i] */
static void TG_F(topk_rows)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const topk_ctx *c = vctx;
    const topk_attr *a = c->n->attr;
    int64_t n = a->n, k = a->k, in = a->inner;
    int64_t *IX = c->n->buf[0].data;                       /* [outer, k, inner] */
    (void)tid;
    for (int64_t r = begin; r < end; r++) {
        int64_t o = r / in, i = r % in;
        int64_t xb = o * n * in + i, ob = o * k * in + i;
        if (!c->backward) {
            const TG_T *x = c->n->in[0]->value.data;       /* [outer, n, inner] */
            TG_T *v = c->n->value.data;                    /* [outer, k, inner] */
            if (k <= TOPK_SMALL)
                TG_F(topk_row_small)(x + xb, n, in, v + ob, IX + ob, k, in, a->largest);
            else
                TG_F(topk_row_heap)(x + xb, n, in, v + ob, IX + ob, k, in, a->largest, a->sorted);
        } else {
            TG_T *dx = c->n->in[0]->grad.data;
            const TG_T *dv = c->n->grad.data;
            for (int64_t j = 0; j < k; j++) dx[xb + IX[ob + j * in] * in] += dv[ob + j * in];
        }
    }
}

#endif
