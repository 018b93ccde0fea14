/*
 * sdpa.c - scaled dot-product attention in one op (see sdpa.h).
 *
 * Work is cut per head: item (b, h) sees Q, K, V and y as strided matrices
 * (row stride H * E or H * D) and runs blocks of up to rb query rows:
 *
 *   forward   S = Q_blk K^T;  per row: m = max(scale * s), e = exp(scale * s - m),
 *             r = 1 / sum e, P = e * r  (stats (m, r) saved);  Pd = dropout(P);
 *             y_blk = Pd V
 *   backward  P rebuilt from (m, r) exactly as the forward made it;
 *             dV += Pd^T dy_blk;  dPd = dy_blk V^T;
 *             dS = P * (dPd * keep / (1 - p) - D),  D_i = dy_i . y_i
 *             dQ_blk += scale * dS K;  dK += scale * dS^T Q_blk
 *
 * (D_i = sum_j dP_ij P_ij because y = Pd V; this is the FlashAttention
 * backward.) With the causal mask a block of rows [i0, i1) needs only the
 * first i1 columns, and entries s > l are exact zeros of P.
 *
 * Scratch: two rb x S blocks per slot (three with dropout: the backward
 * draws each row's keep factors once, for Pd and for dS), and for small heads
 * a max(E, D) x S block where K or V is transposed for a shallow product.
 * The forward's items are (b, h, row block), the backward's (b, h) (dK and dV
 * of a head are summed over all its rows). Each of `slots` workers runs one
 * contiguous range of items and owns its scratch, so no two threads share a
 * block. (Taking every slots-th item instead put neighbouring heads, whose
 * rows of y, dq, dk and dv share cache lines, on different threads: the tiny
 * heads' forward ran no faster on 2 threads than on 1.)
 *
 * Reading order (engine/generic.h): builder, forward and backward, the
 * descriptor and registry row, then the portable kernels for float and
 * double at the end: the per-head loops above with the packing GEMM and
 * plain loops, the reference (TG_NO_SIMD=1) and the F64 path. Float32, when
 * tg__vec_on(), runs the same loops written with the vector kernels of
 * ops/simd/ (section "float32 with the vector kernels", before sdpa_run):
 * the softmax rows and the dot products of vec_softmax.c, the dropout of
 * vec_dropout.c, and for short heads the small products of vec_gemm.c
 * instead of the packing GEMM; with AVX-512, heads of at most 16 keys take
 * the tiny-head kernels (16 query rows at a time).
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "dropout.h"
#include "einsum.h"
#include "gemm.h"
#include "mask.h"
#include "ops_internal.h"
#include "sdpa.h"
#include "softmax.h"
#include "generic.h"
#include "simd/vec.h"

enum { SDPA_COPY, SDPA_ZERO, SDPA_MASK };
#define SDPA_SMALL 64   /* heads with S, E and D up to this skip the packing GEMM */
#define SDPA_SHALLOW 16 /* and Q K^T, dy V^T with E, D up to this transpose K, V first */
#define SDPA_TINY 16    /* with AVX-512, heads of up to this many keys: 16 query rows at a
                         * time, one register per key, the softmax down the keys */

typedef struct {
    int64_t B, L, S, H, E, D;
    int64_t rb, nblk;        /* query rows per block, blocks per head */
    int64_t slots;           /* scratch slots (workers) */
    int64_t blocks;          /* [rb, S] blocks per slot (then [max(E, D), S] when small) */
    size_t  slot_bytes;
    bool    causal;
    bool    small;           /* S, E, D <= 64: the small vector kernels (F32, when on) */
    bool    tiny;            /* small and S <= 16: the AVX-512 kernels (F32, when on) */
    double  scale, p;
    double  dscale;          /* 1 / (1 - p); 0 for p = 1 */
    uint64_t threshold;      /* p * 2^32 rounded up (as tg_dropout) */
    int     mode;            /* set by each forward, read by the backward after it */
    uint64_t key;            /* MASK: the forward's key */
} sdpa_attr;

typedef struct {
    const tg_node *n;
    int64_t B, L, S, H, E, D, rb, nblk, slots, items, blocks;
    size_t  slot_bytes;
    void   *scratch;
    bool    causal, small, tiny, backward, gq, gk, gv;
    bool    fq, fk, fv;      /* backward: that gradient is set, not added to */
    double  scale, dscale;
    int     mode;
    uint64_t key, threshold;
} sdpa_ctx;

/* The head (b, h) of a [B, T, H, W] tensor: its first row, row stride H * W. */
#define HEAD(ptr, T_, W_) ((ptr) + (b * (T_) * c->H + h) * (W_))

/* the portable kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, sdpa_slots, (void *vctx, int64_t begin, int64_t end, int tid));
#if TG_VEC
/* and the float instances of their helpers that the vector path shares */
static void sdpa_drop_row_f32(const sdpa_ctx *c, float *p, int64_t row, int64_t n);
static void sdpa_ds_row_f32(float *tr, const float *pr, const float *ur, double dot, int64_t nv,
                            int64_t ncols, bool drop);
#endif

static const tg_op op_sdpa;   /* the descriptor, after the backward */

/* ---- builder ---- */

/* With tg_graph_unfused: the chain this op computes, node by node, as
 * FullAttention records it when it returns the weights (layers/attention.c),
 * inside a scope "sdpa"; the same results and dropout mask (sdpa.h). */
static tg_node *sdpa_unfused(tg_graph *g, tg_node *q, tg_node *k, tg_node *v, bool causal,
                             double scale, double dropout)
{
    if (tg_scope_push(g, "sdpa")) return NULL;
    tg_node *scores = tg_einsum(g, "blhe,bshe->bhls", 2, (tg_node *[]){q, k}); /* [B,H,L,S] */
    if (causal)
        scores = tg_masked_fill(g, scores, tg_causal_mask(g, q->value.shape[0], q->value.shape[1]),
                                -INFINITY);
    tg_node *A = tg_dropout(g, tg_softmax_scaled(g, scores, -1, scale), dropout);
    tg_node *y = tg_einsum(g, "bhls,bshd->blhd", 2, (tg_node *[]){A, v}); /* [B,L,H,D] */
    tg_scope_pop(g);
    return y;
}

tg_node *tg_sdpa(tg_graph *g, tg_node *q, tg_node *k, tg_node *v, bool causal, double scale,
                 double dropout)
{
    tg_node *in[3] = {q, k, v};
    if (!tg_builder_check(g, "sdpa", 3, in)) return NULL;
    if (!tg__want_float(g, "sdpa", q, "query") || !tg__want_float(g, "sdpa", k, "key") ||
        !tg__want_float(g, "sdpa", v, "value"))
        return NULL;
    const tg_tensor *qv = &q->value, *kv = &k->value, *vv = &v->value;
    char sq[96], sk[96], sv[96];
    TG__SHAPE(qv, sq), TG__SHAPE(kv, sk), TG__SHAPE(vv, sv);
    if (qv->rank != 4 || kv->rank != 4 || vv->rank != 4)
        return tg_graph_fail(g, "sdpa: query, key and value must be 4-d [B, L, H, E], [B, S, H, "
                             "E] and [B, S, H, D]; got %s, %s and %s", sq, sk, sv);
    const int64_t B = qv->shape[0], L = qv->shape[1], H = qv->shape[2], E = qv->shape[3];
    const int64_t S = kv->shape[1], D = vv->shape[3];
    if (kv->shape[0] != B || kv->shape[2] != H || kv->shape[3] != E)
        return tg_graph_fail(g, "sdpa: key %s must be [B, S, H, E] with B, H and E of query %s",
                             sk, sq);
    if (vv->shape[0] != B || vv->shape[1] != S || vv->shape[2] != H)
        return tg_graph_fail(g, "sdpa: value %s must be [B, S, H, D] with B, S and H of key %s",
                             sv, sk);
    if (causal && L != S)
        return tg_graph_fail(g, "sdpa: the causal mask needs L == S (query length %lld, key "
                             "length %lld)", (long long)L, (long long)S);
    if (!isfinite(scale))
        return tg_graph_fail(g, "sdpa: scale must be finite, got %g", scale);
    if (!(dropout >= 0 && dropout <= 1))
        return tg_graph_fail(g, "sdpa: dropout probability has to be between 0 and 1, but got %g",
                             dropout);
    if (tg_graph_unfused(g)) return sdpa_unfused(g, q, k, v, causal, scale, dropout);

    tg_node *n = tg_node_new(g, &op_sdpa, 3, in, qv->dtype, 4, (int64_t[]){B, L, H, D});
    sdpa_attr *a = n ? tg_node_attr(n, sizeof *a) : NULL;
    if (!a) return NULL;
    /* blocks of up to 64 query rows, fewer when S is long (a block is rb x S) */
    int64_t rb = S > 0 ? 32768 / S : 64;
    rb = rb < 1 ? 1 : rb > 64 ? 64 : rb;
    if (L > 0 && rb > L) rb = L;
    const int threads = tg_threads_get();
    *a = (sdpa_attr){.B = B, .L = L, .S = S, .H = H, .E = E, .D = D, .rb = rb,
                     .nblk = L > 0 ? (L + rb - 1) / rb : 0,
                     .slots = threads > 4 ? threads : 4, .causal = causal, .scale = scale,
                     .p = dropout, .dscale = dropout < 1 ? 1.0 / (1.0 - dropout) : 0.0,
                     .threshold = (uint64_t)ceil(dropout * 4294967296.0)};
    /* short heads: the products by the small vector kernels */
    a->small = S <= SDPA_SMALL && E <= SDPA_SMALL && D <= SDPA_SMALL;
    a->tiny = a->small && S <= SDPA_TINY;
    size_t sz = tg_dtype_size(qv->dtype);
    /* per slot: P and a work block, with dropout the keep factors, and for
     * small heads room for K or V transposed (for the tiny: Q^T or V^T, and
     * P^T, 16 lanes a row) */
    a->blocks = dropout > 0 ? 3 : 2;
    const int64_t kt = !a->small ? 0 : a->tiny ? ((E > D ? E : D) + S) * SDPA_TINY
                                                : (E > D ? E : D) * S;
    a->slot_bytes = ((size_t)(a->blocks * rb * S + kt) * sz + 63) & ~(size_t)63;
    tg_node_scratch(n, (size_t)a->slots * a->slot_bytes);
    /* per query row: the softmax's max and 1 / sum (double), [B, H, L, 2] */
    if (tg_node_buffer(n, TG_F64, 4, (int64_t[]){B, H, L, 2}) < 0) return NULL;
    return n;
}

/* ---- forward and backward ----
 * sdpa_run fills the context and runs the slots: float32 with tg__vec_on()
 * through the vector per-head loops just below, otherwise through the
 * portable kernels at the end of the file. */

#if TG_VEC
/* -- float32 with the vector kernels --
 * The portable kernels' per-head loops (sdpa_forward_item, sdpa_backward_item
 * at the end of the file), step for step, with the kernels of ops/simd/ where
 * they have one; their arithmetic elsewhere (sdpa_drop_row_f32 when the mask
 * is not a vector one, sdpa_ds_row_f32, tg_gemm_f32 for long heads). */

/* Pd = P * keep / (1 - p) over a row of n, in place: a mask draw of 32 bits by
 * the vector kernel, else sdpa_drop_row_f32 */
static void sdpa_vec_drop_row(const sdpa_ctx *c, float *p, int64_t row, int64_t n)
{
    if (c->mode == SDPA_MASK && c->threshold < ((uint64_t)1 << 32)) {
        tg__vec_dropout(p, p, n, row * c->S, c->key, c->threshold, (float)c->dscale, 0);
        return;
    }
    sdpa_drop_row_f32(c, p, row, n);
}

/* C = alpha op(A) op(B) + beta C. Short heads (c->small) skip the packing
 * GEMM: A B^T (Q K^T, dy V^T: depth contiguous in both) as dot products, or,
 * with a shallow depth (at most SDPA_SHALLOW) and N a multiple of 8 (whole
 * vectors: no masked stores), B transposed into bt first (the slot's [K, N]
 * block) and FMA rows, as the others (A or A^T times B). Tiny heads (c->tiny,
 * AVX-512) take A B^T 16 columns at a time. */
static void sdpa_vec_mm(const sdpa_ctx *c, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                        float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                        float beta, float *C, int64_t ldc, float *bt)
{
    if (c->tiny && tb && !ta) {   /* N <= S <= 16 */
        tg__vec_gemm_nt16(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bt);
        return;
    }
    if (c->small && tb && !ta && K <= SDPA_SHALLOW && N % 8 == 0 && N > 0) {
        tg__vec_transpose_small(B, ldb, N, K, bt);
        tg__vec_gemm_small(M, N, K, alpha, A, lda, 1, bt, N, beta, C, ldc);
        return;
    }
    if (c->small && tb && !ta) {
        tg__vec_gemm_nt_small(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (c->small && !tb) {
        tg__vec_gemm_small(M, N, K, alpha, A, ta ? 1 : lda, ta ? lda : 1, B, ldb, beta, C, ldc);
        return;
    }
    tg_gemm_f32(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Tiny heads (c->tiny): rows [i0, i0 + rows) of head bh, 16 at a time, P^T
 * made by tg__vec_attn_rows16 (stats written when make_stats, else read),
 * then y = P V straight from it (y != NULL), or P transposed back into p
 * (row stride ncols). bt holds Q^T, then P^T after max(E, D) rows of 16. */
static void sdpa_tiny_rows(const sdpa_ctx *c, int64_t bh, int64_t i0, int64_t rows,
                           int64_t ncols, bool make_stats, float *p, float *y, float *bt)
{
    const tg_node *n = c->n;
    const int64_t b = bh / c->H, h = bh % c->H, E = c->E, D = c->D, HE = c->H * E,
                  HD = c->H * D;
    const float *q = HEAD((const float *)n->in[0]->value.data, c->L, E) + i0 * HE;
    const float *k = HEAD((const float *)n->in[1]->value.data, c->S, E);
    const float *v = HEAD((const float *)n->in[2]->value.data, c->S, D);
    double *st = (double *)n->buf[0].data + 2 * (bh * c->L + i0);
    float *pt = bt + SDPA_TINY * (E > D ? E : D);
    for (int64_t r0 = 0; r0 < rows; r0 += SDPA_TINY) {
        const int64_t nr = rows - r0 < SDPA_TINY ? rows - r0 : SDPA_TINY;
        tg__vec_attn_rows16(q + r0 * HE, HE, E, k, HE, nr, ncols, i0 + r0, c->causal,
                            (float)c->scale, st + 2 * r0, !make_stats, pt, bt);
        if (y) tg__vec_attn_pv16(pt, nr, ncols, v, HD, D, y + r0 * HD, HD);
        else   tg__vec_transpose16(pt, SDPA_TINY, ncols, nr, p + r0 * ncols, ncols);
    }
}

/* sdpa_probs with the vector kernels: rows [i0, i0 + rows) of head bh, S =
 * Q K^T into p, then P (stats from st, or computed into st when make_stats)
 * by the AVX2 row kernel, which rebuilds P from given stats bit for bit as
 * it made it; tiny heads all at once by sdpa_tiny_rows. */
static void sdpa_vec_probs(const sdpa_ctx *c, int64_t bh, int64_t i0, int64_t rows,
                           int64_t ncols, float *p, double *st, bool make_stats, float *bt)
{
    const tg_node *n = c->n;
    const int64_t b = bh / c->H, h = bh % c->H, E = c->E, HE = c->H * E;
    const float *q = HEAD((const float *)n->in[0]->value.data, c->L, E) + i0 * HE;
    const float *k = HEAD((const float *)n->in[1]->value.data, c->S, E);
    const float scale = (float)c->scale;
    if (c->tiny) {
        sdpa_tiny_rows(c, bh, i0, rows, ncols, make_stats, p, NULL, bt);
        return;
    }
    sdpa_vec_mm(c, false, true, rows, ncols, E, 1, q, HE, k, HE, 0, p, ncols, bt);
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = i0 + r, nv = c->causal ? i + 1 : ncols;   /* valid columns */
        float *row = p + r * ncols;
        double *sr = st + 2 * (bh * c->L + i);
        float mf = (float)sr[0];
        tg__vec_softmax_row_stats(row, row, nv, scale, &mf, &sr[1], !make_stats);
        sr[0] = mf;
        for (int64_t j = nv; j < ncols; j++) row[j] = 0;   /* masked: exactly 0 */
    }
}

static void sdpa_vec_forward_item(const sdpa_ctx *c, int64_t item, float *p, float *bt)
{
    const tg_node *n = c->n;
    const int64_t bh = item / c->nblk, i0 = (item % c->nblk) * c->rb;
    const int64_t rows = c->L - i0 < c->rb ? c->L - i0 : c->rb;
    const int64_t ncols = c->causal ? i0 + rows : c->S;
    const int64_t b = bh / c->H, h = bh % c->H, D = c->D, HD = c->H * D;
    const float *v = HEAD((const float *)n->in[2]->value.data, c->S, D);
    float *y = HEAD((float *)n->value.data, c->L, D) + i0 * HD;
    if (c->tiny && c->mode == SDPA_COPY) {   /* P V straight from P^T, P not stored */
        sdpa_tiny_rows(c, bh, i0, rows, ncols, true, NULL, y, bt);
        return;
    }
    sdpa_vec_probs(c, bh, i0, rows, ncols, p, n->buf[0].data, true, bt);
    for (int64_t r = 0; r < rows; r++) sdpa_vec_drop_row(c, p + r * ncols, bh * c->L + i0 + r,
                                                         ncols);
    sdpa_vec_mm(c, false, false, rows, D, ncols, 1, p, ncols, v, HD, 0, y, HD, bt);
}

static void sdpa_vec_backward_item(const sdpa_ctx *c, int64_t bh, float *p, float *t, float *u,
                                   float *bt)
{
    const tg_node *n = c->n;
    const int64_t b = bh / c->H, h = bh % c->H, E = c->E, D = c->D, HE = c->H * E,
                  HD = c->H * D;
    const float *q = HEAD((const float *)n->in[0]->value.data, c->L, E);
    const float *k = HEAD((const float *)n->in[1]->value.data, c->S, E);
    const float *v = HEAD((const float *)n->in[2]->value.data, c->S, D);
    const float *y = HEAD((const float *)n->value.data, c->L, D);
    const float *dy = HEAD((const float *)n->grad.data, c->L, D);
    float *dq = c->gq ? HEAD((float *)n->in[0]->grad.data, c->L, E) : NULL;
    float *dk = c->gk ? HEAD((float *)n->in[1]->grad.data, c->S, E) : NULL;
    float *dv = c->gv ? HEAD((float *)n->in[2]->grad.data, c->S, D) : NULL;
    const float scale = (float)c->scale;
    /* fresh gradients: as sdpa_backward_item */
    const bool zk = c->fk && c->causal, zv = c->fv && c->causal;
    for (int64_t j = 0; zk && j < c->S; j++) memset(dk + j * HE, 0, (size_t)E * sizeof *dk);
    for (int64_t j = 0; zv && j < c->S; j++) memset(dv + j * HD, 0, (size_t)D * sizeof *dv);
    const float beta_q = c->fq ? 0 : 1;
    for (int64_t i0 = 0; i0 < c->L; i0 += c->rb) {
        const float beta_k = c->fk && !zk && i0 == 0 ? 0 : 1;
        const float beta_v = c->fv && !zv && i0 == 0 ? 0 : 1;
        const int64_t rows = c->L - i0 < c->rb ? c->L - i0 : c->rb;
        const int64_t ncols = c->causal ? i0 + rows : c->S;
        sdpa_vec_probs(c, bh, i0, rows, ncols, p, n->buf[0].data, false, bt);
        /* with dropout, u = keep / (1 - p) of these rows, drawn once for both uses */
        const bool drop = c->mode != SDPA_COPY;
        for (int64_t r = 0; drop && r < rows; r++) {
            float *ur = u + r * ncols;
            for (int64_t j = 0; j < ncols; j++) ur[j] = 1;
            sdpa_vec_drop_row(c, ur, bh * c->L + i0 + r, ncols);
        }
        if (dv) {   /* dV += Pd^T dy,  Pd = P u */
            const float *pd = p;
            if (drop) {
                for (int64_t x = 0; x < rows * ncols; x++) t[x] = p[x] * u[x];
                pd = t;
            }
            sdpa_vec_mm(c, true, false, ncols, D, rows, 1, pd, ncols, dy + i0 * HD, HD, beta_v,
                        dv, HD, bt);
        }
        if (!dq && !dk) continue;
        /* t = dPd = dy V^T, then dS = P * (dPd * keep / (1 - p) - D) */
        sdpa_vec_mm(c, false, true, rows, ncols, D, 1, dy + i0 * HD, HD, v, HD, 0, t, ncols, bt);
        for (int64_t r = 0; r < rows; r++) {
            const int64_t i = i0 + r, nv = c->causal ? i + 1 : ncols;
            sdpa_ds_row_f32(t + r * ncols, p + r * ncols, u + r * ncols,
                            tg__vec_dot(dy + i * HD, y + i * HD, D), nv, ncols, drop);
        }
        if (dq)
            sdpa_vec_mm(c, false, false, rows, E, ncols, scale, t, ncols, k, HE, beta_q,
                        dq + i0 * HE, HE, bt);
        if (dk)
            sdpa_vec_mm(c, true, false, ncols, E, rows, scale, t, ncols, q + i0 * HE, HE, beta_k,
                        dk, HE, bt);
    }
}

/* slot s runs items [s items / slots, (s + 1) items / slots) with its own scratch */
static void sdpa_vec_slots(void *vctx, int64_t begin, int64_t end, int tid)
{
    const sdpa_ctx *c = vctx;
    (void)tid;
    for (int64_t s = begin; s < end; s++) {
        float *p = (float *)((unsigned char *)c->scratch + (size_t)s * c->slot_bytes);
        float *t = p + c->rb * c->S, *u = t + c->rb * c->S;   /* [rb, S] each; u: dropout */
        float *bt = p + c->blocks * c->rb * c->S;             /* [max(E, D), S]: small heads */
        for (int64_t it = s * c->items / c->slots; it < (s + 1) * c->items / c->slots; it++) {
            if (c->backward) sdpa_vec_backward_item(c, it, p, t, u, bt);
            else             sdpa_vec_forward_item(c, it, p, bt);
        }
    }
}
#endif

static void sdpa_run(tg_node *n, bool backward)
{
    const sdpa_attr *a = n->attr;
    sdpa_ctx c = {.n = n, .B = a->B, .L = a->L, .S = a->S, .H = a->H, .E = a->E, .D = a->D,
                  .rb = a->rb, .nblk = a->nblk, .blocks = a->blocks, .slot_bytes = a->slot_bytes,
                  .scratch = tg_graph_scratch(n->graph), .causal = a->causal,
                  .backward = backward,
                  .small = a->small && n->value.dtype == TG_F32 && tg__vec_on(),
                  .tiny = a->tiny && n->value.dtype == TG_F32 && tg__vec_avx512_on(),
                  .scale = a->scale, .dscale = a->dscale, .mode = a->mode, .key = a->key,
                  .threshold = a->threshold};
    if (backward) {
        c.gq = n->in[0]->requires_grad;
        c.gk = n->in[1]->requires_grad;
        c.gv = n->in[2]->requires_grad;
        c.fq = c.gq && tg_grad_fresh(n, 0);
        c.fk = c.gk && tg_grad_fresh(n, 1);
        c.fv = c.gv && tg_grad_fresh(n, 2);
    }
    c.items = a->B * a->H * (backward ? 1 : a->nblk);
    c.slots = a->slots < c.items ? a->slots : c.items;
    if (c.items == 0 || a->L == 0) return;
#if TG_VEC
    if (n->value.dtype == TG_F32 && tg__vec_on()) {
        tg_parallel_for(c.slots, 1, sdpa_vec_slots, &c);
        return;
    }
#endif
    tg_parallel_for(c.slots, 1, TG_DISPATCH(n->value.dtype, sdpa_slots), &c);
}

static tg_status sdpa_forward(tg_node *n)
{
    sdpa_attr *a = n->attr;
    a->key = 0;
    if (!tg_graph_training(n->graph) || a->p == 0) {
        a->mode = SDPA_COPY;
    } else if (a->p == 1) {
        a->mode = SDPA_ZERO;
    } else {
        a->mode = SDPA_MASK;
        a->key = tg_rng_next(tg_graph_rng(n->graph));   /* one draw, as tg_dropout */
    }
    if (a->S == 0) {   /* softmax over nothing: y = A V is a sum of no terms */
        memset(n->value.data, 0, (size_t)n->value.numel * tg_dtype_size(n->value.dtype));
        return TG_OK;
    }
    sdpa_run(n, false);
    return TG_OK;
}

static tg_status sdpa_backward(tg_node *n)
{
    const sdpa_attr *a = n->attr;
    if (a->S > 0 && a->L > 0) {
        sdpa_run(n, true);
        return TG_OK;
    }
    /* no query or no key: nothing reaches q, k, v; fresh gradients are zeros */
    for (int k = 0; k < 3; k++) {
        const tg_tensor *d = &n->in[k]->grad;
        if (n->in[k]->requires_grad && tg_grad_fresh(n, k) && d->numel)
            memset(d->data, 0, (size_t)d->numel * tg_dtype_size(d->dtype));
    }
    return TG_OK;
}

/* ---- descriptor ---- */

static void sdpa_describe(const tg_node *n, char *buf, size_t len)
{
    const sdpa_attr *a = n->attr;
    snprintf(buf, len, "%sscale=%g p=%g", a->causal ? "causal " : "", a->scale, a->p);
}

/* FLOPs (engine/cost.h): those of the unfused chain - einsum blhe,bshe->bhls
 * (2*B*H*L*S*E), masked_fill when causal, softmax (5 per element), dropout
 * (1 per element), einsum bhls,bshd->blhd (2*B*H*L*S*D) */
static double sdpa_flops(const tg_node *n)
{
    const sdpa_attr *a = n->attr;
    double bhls = (double)a->B * (double)a->H * (double)a->L * (double)a->S;
    return 2.0 * bhls * (double)(a->E + a->D) + bhls * (6.0 + a->causal);
}

/* ONNX: sdpa's unfused form in eval: A = Softmax(scale * Einsum(q, k) [causal: -inf
 * above the diagonal]), y = Einsum(A, v). */
static tg_status sdpa_onnx(const tg_node *n, struct tg_onnx *m)
{
    const sdpa_attr *a = n->attr;
    const tg_dtype dt = n->value.dtype;
    const char *qk = tg__onnx_tmp(m, n, "scores"), *s = tg__onnx_tmp(m, n, "scaled");
    const char *w = tg__onnx_tmp(m, n, "weights");
    TG__ONNX_NODE(m, "Einsum", qk, tg__onnx_in(m, n, 0), tg__onnx_in(m, n, 1));
    tg__onnx_attr_str(m, "equation", "blhe,bshe->bhls");
    TG__ONNX_NODE(m, "Mul", s, qk, tg__onnx_const_scalar(m, dt, a->scale));
    if (a->causal) {
        /* mask[l, s] = s > l: Less(Range(L)[:, None], Range(S)[None, :]) */
        const char *rl = tg__onnx_tmp(m, n, "rows"), *rs = tg__onnx_tmp(m, n, "cols");
        const char *rl2 = tg__onnx_tmp(m, n, "rows2"), *mask = tg__onnx_tmp(m, n, "mask");
        const char *masked = tg__onnx_tmp(m, n, "masked"), *zero = tg__onnx_const_scalar(m, TG_I64, 0);
        const char *one = tg__onnx_const_scalar(m, TG_I64, 1);
        TG__ONNX_NODE(m, "Range", rl, zero, tg__onnx_const_scalar(m, TG_I64, (double)a->L), one);
        TG__ONNX_NODE(m, "Range", rs, zero, tg__onnx_const_scalar(m, TG_I64, (double)a->S), one);
        tg__onnx_reshape(m, rl, rl2, 2, (const int64_t[]){a->L, 1});
        TG__ONNX_NODE(m, "Less", mask, rl2, rs);
        TG__ONNX_NODE(m, "Where", masked, mask, tg__onnx_const_scalar(m, dt, -INFINITY), s);
        s = masked;
    }
    TG__ONNX_NODE(m, "Softmax", w, s);
    tg__onnx_attr_int(m, "axis", -1);
    TG__ONNX_NODE(m, "Einsum", tg__onnx_value(m, n), w, tg__onnx_in(m, n, 2));
    tg__onnx_attr_str(m, "equation", "bhls,bshd->blhd");
    return tg__onnx_status(m);
}

static const tg_op op_sdpa = {.name = "sdpa", .forward = sdpa_forward,
                              .backward = sdpa_backward, .describe = sdpa_describe,
                              .flags = TG_OP_BWD_FRESH,
                              .flops = sdpa_flops, .onnx = sdpa_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

/* F.scaled_dot_product_attention applies dropout_p whenever it is > 0 (it has
 * no training flag), so the graph is put in training mode here, as dropout's
 * glue does for training=true; seed= seeds the mask. scale=null is PyTorch's
 * 1 / sqrt(E), E = query.shape[-1] (1 for a query the builder will reject). */
TG_GLUE(b_sdpa)
{
    (void)n_in;
    const tg_tensor *q = tg_node_value(in[0]);
    double scale = !tg__op_is_null(c, "scale") ? tg__op_f(c, "scale")
                   : q->rank > 0 ? 1.0 / sqrt((double)q->shape[q->rank - 1]) : 1.0;
    tg_graph_set_training(g, true);
    tg_graph_seed(g, (uint64_t)tg__op_int(c, "seed"));
    return TG_GLUE_ONE(tg_sdpa(g, in[0], in[1], in[2], tg__op_bool(c, "is_causal"), scale,
                       tg__op_f(c, "dropout_p")));
}

const tg_op_def tg__sdpa_ops[] = {
    {"sdpa", "F.scaled_dot_product_attention on [B, L, H, E] (TSL's layout; tgraph)",
     {{"is_causal", TG_OP_BOOL, "false", false,
       "mask keys after the query (needs L == S)", NULL, 0},
      {"scale", TG_OP_FLOAT, "null", true, "score factor; null: 1/sqrt(E)", NULL, 0},
      {"dropout_p", TG_OP_FLOAT, "0.0", false,
       "drop attention weights on every run (> 0)", NULL, 0},
      {"seed", TG_OP_INT, "0", false, "seeds the dropout mask", NULL, 0}}, false,
     {TG_IN("query"), TG_IN("key"), TG_IN("value")}, 3, false, 1, b_sdpa, NULL,
     "sdpa is_causal=true --in q.npy --in k.npy --in v.npy --out y.npy", &op_sdpa, NULL,
     "is_causal=true;[2,4,2,3];[2,4,2,3];[2,4,2,2]", "is_causal=true;[1,3,1,2];[1,5,1,2];[1,5,1,2]",
     "shapes: query [B, L, H, E], key [B, S, H, E], value [B, S, H, D] -> [B, L, H, D].\n"
     "is_causal needs L == S. dropout_p > 0 drops attention weights on every run, as\n"
     "PyTorch's function does (there is no eval mode here); seed= seeds the mask."},
    {0}
};

/* ---- the portable kernels, once per type ---- */

#define TG_SELF "sdpa.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* keep / (1 - p) for entry j of row `row` (0 when dropped; 1 without dropout) */
static inline TG_T TG_F(sdpa_keep)(const sdpa_ctx *c, int64_t row, int64_t j)
{
    if (c->mode == SDPA_COPY) return 1;
    if (c->mode == SDPA_ZERO) return 0;
    return tg__drop_bits(c->key, row * c->S + j) >= c->threshold ? (TG_T)c->dscale : 0;
}

/* Pd = P * keep / (1 - p) over a row of n, in place (ZERO: P * 0, NaN stays NaN) */
static void TG_F(sdpa_drop_row)(const sdpa_ctx *c, TG_T *p, int64_t row, int64_t n)
{
    if (c->mode == SDPA_COPY) return;
    for (int64_t j = 0; j < n; j++) p[j] *= TG_F(sdpa_keep)(c, row, j);
}

/* rows [i0, i0 + rows) of head bh: S = Q K^T into p (row stride ncols), then
 * P (stats from st, or computed into st when make_stats). The forward and the
 * backward both make P here, with the same arithmetic, so they agree bit for
 * bit (the loops as ops/softmax.c's; the vector path's: sdpa_vec_probs). */
static void TG_F(sdpa_probs)(const sdpa_ctx *c, int64_t bh, int64_t i0, int64_t rows,
                             int64_t ncols, TG_T *p, double *st, bool make_stats)
{
    const tg_node *n = c->n;
    const int64_t b = bh / c->H, h = bh % c->H, E = c->E, HE = c->H * E;
    const TG_T *q = HEAD((const TG_T *)n->in[0]->value.data, c->L, E) + i0 * HE;
    const TG_T *k = HEAD((const TG_T *)n->in[1]->value.data, c->S, E);
    const TG_T scale = (TG_T)c->scale;
    TG_F(tg_gemm)(false, true, rows, ncols, E, 1, q, HE, k, HE, 0, p, ncols);
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i = i0 + r, nv = c->causal ? i + 1 : ncols;   /* valid columns */
        TG_T *row = p + r * ncols;
        double *sr = st + 2 * (bh * c->L + i);
        TG_T m;
        if (make_stats) {
            m = -INFINITY;
            for (int64_t j = 0; j < nv; j++) {
                TG_T z = scale * row[j];
                if (z > m) m = z;
            }
        } else {
            m = (TG_T)sr[0];
        }
        for (int64_t j = 0; j < nv; j++) row[j] = TG_M(exp)(scale * row[j] - m);
        double rs;
        if (make_stats) {
            double sum = 0;
            for (int64_t j = 0; j < nv; j++) sum += row[j];
            rs = 1.0 / sum;
            sr[0] = m;
            sr[1] = rs;
        } else {
            rs = sr[1];
        }
        for (int64_t j = 0; j < nv; j++) row[j] = (TG_T)(row[j] * rs);
        for (int64_t j = nv; j < ncols; j++) row[j] = 0;   /* masked: exactly 0 */
    }
}

static void TG_F(sdpa_forward_item)(const sdpa_ctx *c, int64_t item, TG_T *p)
{
    const tg_node *n = c->n;
    const int64_t bh = item / c->nblk, i0 = (item % c->nblk) * c->rb;
    const int64_t rows = c->L - i0 < c->rb ? c->L - i0 : c->rb;
    const int64_t ncols = c->causal ? i0 + rows : c->S;
    const int64_t b = bh / c->H, h = bh % c->H, D = c->D, HD = c->H * D;
    const TG_T *v = HEAD((const TG_T *)n->in[2]->value.data, c->S, D);
    TG_T *y = HEAD((TG_T *)n->value.data, c->L, D) + i0 * HD;
    TG_F(sdpa_probs)(c, bh, i0, rows, ncols, p, n->buf[0].data, true);
    for (int64_t r = 0; r < rows; r++) TG_F(sdpa_drop_row)(c, p + r * ncols, bh * c->L + i0 + r,
                                                           ncols);
    TG_F(tg_gemm)(false, false, rows, D, ncols, 1, p, ncols, v, HD, 0, y, HD);
}

/* One row of dS = P * (dPd * keep / (1 - p) - D) in place over dPd (tr),
 * D_i = dot; the columns from nv on (masked) exactly 0. */
static void TG_F(sdpa_ds_row)(TG_T *tr, const TG_T *pr, const TG_T *ur, double dot, int64_t nv,
                              int64_t ncols, bool drop)
{
    if (drop)
        for (int64_t j = 0; j < nv; j++) tr[j] = (TG_T)(pr[j] * (tr[j] * ur[j] - dot));
    else
        for (int64_t j = 0; j < nv; j++) tr[j] = (TG_T)(pr[j] * (tr[j] - dot));
    for (int64_t j = nv; j < ncols; j++) tr[j] = 0;
}

static void TG_F(sdpa_backward_item)(const sdpa_ctx *c, int64_t bh, TG_T *p, TG_T *t, TG_T *u)
{
    const tg_node *n = c->n;
    const int64_t b = bh / c->H, h = bh % c->H, E = c->E, D = c->D, HE = c->H * E,
                  HD = c->H * D;
    const TG_T *q = HEAD((const TG_T *)n->in[0]->value.data, c->L, E);
    const TG_T *k = HEAD((const TG_T *)n->in[1]->value.data, c->S, E);
    const TG_T *v = HEAD((const TG_T *)n->in[2]->value.data, c->S, D);
    const TG_T *y = HEAD((const TG_T *)n->value.data, c->L, D);
    const TG_T *dy = HEAD((const TG_T *)n->grad.data, c->L, D);
    TG_T *dq = c->gq ? HEAD((TG_T *)n->in[0]->grad.data, c->L, E) : NULL;
    TG_T *dk = c->gk ? HEAD((TG_T *)n->in[1]->grad.data, c->S, E) : NULL;
    TG_T *dv = c->gv ? HEAD((TG_T *)n->in[2]->grad.data, c->S, D) : NULL;
    const TG_T scale = (TG_T)c->scale;
    /* Fresh gradients (tg_grad_fresh) are set, not added to: dq's rows by
     * their one block (beta 0); dk and dv by the first block, which covers
     * every key without the causal mask, else zeroed here first. */
    const bool zk = c->fk && c->causal, zv = c->fv && c->causal;
    for (int64_t j = 0; zk && j < c->S; j++) memset(dk + j * HE, 0, (size_t)E * sizeof *dk);
    for (int64_t j = 0; zv && j < c->S; j++) memset(dv + j * HD, 0, (size_t)D * sizeof *dv);
    const TG_T beta_q = c->fq ? 0 : 1;
    for (int64_t i0 = 0; i0 < c->L; i0 += c->rb) {
        const TG_T beta_k = c->fk && !zk && i0 == 0 ? 0 : 1;
        const TG_T beta_v = c->fv && !zv && i0 == 0 ? 0 : 1;
        const int64_t rows = c->L - i0 < c->rb ? c->L - i0 : c->rb;
        const int64_t ncols = c->causal ? i0 + rows : c->S;
        TG_F(sdpa_probs)(c, bh, i0, rows, ncols, p, n->buf[0].data, false);
        /* with dropout, u = keep / (1 - p) of these rows, drawn once for both uses */
        const bool drop = c->mode != SDPA_COPY;
        for (int64_t r = 0; drop && r < rows; r++) {
            TG_T *ur = u + r * ncols;
            for (int64_t j = 0; j < ncols; j++) ur[j] = 1;
            TG_F(sdpa_drop_row)(c, ur, bh * c->L + i0 + r, ncols);
        }
        if (dv) {   /* dV += Pd^T dy,  Pd = P u */
            const TG_T *pd = p;
            if (drop) {
                for (int64_t x = 0; x < rows * ncols; x++) t[x] = p[x] * u[x];
                pd = t;
            }
            TG_F(tg_gemm)(true, false, ncols, D, rows, 1, pd, ncols, dy + i0 * HD, HD, beta_v,
                          dv, HD);
        }
        if (!dq && !dk) continue;
        /* t = dPd = dy V^T, then dS = P * (dPd * keep / (1 - p) - D) */
        TG_F(tg_gemm)(false, true, rows, ncols, D, 1, dy + i0 * HD, HD, v, HD, 0, t, ncols);
        for (int64_t r = 0; r < rows; r++) {
            const int64_t i = i0 + r, nv = c->causal ? i + 1 : ncols;
            const TG_T *yi = y + i * HD, *dyi = dy + i * HD;
            double dot = 0;
            for (int64_t d = 0; d < D; d++) dot += (double)dyi[d] * yi[d];
            TG_F(sdpa_ds_row)(t + r * ncols, p + r * ncols, u + r * ncols, dot, nv, ncols, drop);
        }
        if (dq)
            TG_F(tg_gemm)(false, false, rows, E, ncols, scale, t, ncols, k, HE, beta_q,
                          dq + i0 * HE, HE);
        if (dk)
            TG_F(tg_gemm)(true, false, ncols, E, rows, scale, t, ncols, q + i0 * HE, HE, beta_k,
                          dk, HE);
    }
}

/* slot s runs items [s items / slots, (s + 1) items / slots) with its own scratch */
static void TG_F(sdpa_slots)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const sdpa_ctx *c = vctx;
    (void)tid;
    for (int64_t s = begin; s < end; s++) {
        TG_T *p = (TG_T *)((unsigned char *)c->scratch + (size_t)s * c->slot_bytes);
        TG_T *t = p + c->rb * c->S, *u = t + c->rb * c->S;   /* [rb, S] each; u: dropout */
        for (int64_t it = s * c->items / c->slots; it < (s + 1) * c->items / c->slots; it++) {
            if (c->backward) TG_F(sdpa_backward_item)(c, it, p, t, u);
            else             TG_F(sdpa_forward_item)(c, it, p);
        }
    }
}

#endif
