/*
 * einsum.c - torch.einsum (OPS.md section 4): contraction planner, forward and
 * backward. The equation parser is in einsum_parse.c.
 *
 * What it is. The builder parses the equation exactly as PyTorch does (same
 * checks in the same order, same messages), gives every label an integer id
 * (0-25 'A'-'Z', 26-51 'a'-'z', 52.. one per ellipsis dim) and turns each
 * operand into a *view*: its distinct labels with size and stride. A repeated
 * label is one entry whose stride is the sum of its dims' strides (the
 * generalised diagonal, read in place); a dim of size 1 is left out of the view
 * (that is size-1 broadcasting: the operand does not depend on the label).
 * Then it compiles *plans*, one for the forward and one per operand for the
 * backward, each a short list of steps:
 *   REDUCE  dst (=|+=) sum over the labels missing in dst of src, broadcast
 *           over the dst labels missing in src (strided, accumulates in double)
 *   GEMM    one tg_gemm_batched call per index of some outer batch labels
 *   ZERO    memset (a label of size 0: the sum is empty)
 * Operands are contracted left to right, two at a time: labels in both and kept
 * are batch, in one only and kept are M / N, in both and not kept are K, in one
 * only and not kept are summed first. An operand is read in place when its M/N,
 * K and (a suffix of its) batch labels merge into single strided dims with one
 * of the two matrix dims contiguous; otherwise it is packed into scratch. The
 * attention contractions ("blhe,bshe->bhls", "bhls,bshd->blhd" and their
 * backward) run with no copy at all.
 *
 * Backward (OPS.md 4.3): dA_k = einsum(S_out, S_1.., S_k skipped, .. -> S_k)
 * (dy, A_1, .., A_k skipped, ..), compiled with the same planner into A_k's
 * gradient view: labels only in S_k are broadcast (REDUCE), the diagonal view
 * writes onto the diagonal, labels left out of A_k's view (size 1) are summed
 * (sum_to), and a node used twice receives both contributions. Forward and
 * backward do no parsing and no allocation; intermediates live in scratch.
 *
 * What it is not: no contraction-order optimisation (PyTorch's opt_einsum path);
 * operands are contracted left to right. Not the equation parser either
 * (einsum_parse.c, with the view and parsed-equation types in einsum_parse.h).
 *
 * Reading order (engine/generic.h): the builder (the planner, then
 * tg_einsum), the forward (running a plan), the backward, the descriptor and
 * registry row, then the portable REDUCE kernel for float and double at the
 * end.
 */
#ifndef TG_KERNELS /* ====================================== the op proper */

#include <stdio.h>

#include "ops_internal.h"
#include "gemm.h"
#include "einsum_parse.h"
#include "generic.h"

#define EM_STEPS   (4 * EM_MAXOPS + 2)   /* per plan: pack A, pack B, GEMM, copy out */
#define EM_SMALL   256                   /* MACs per GEMM call below which an outer
                                            batch loop is replaced by packing */

enum { EM_ZERO, EM_REDUCE, EM_GEMM };

typedef struct {
    int     kind;
    int     ra, rb, rc;             /* buffers: REDUCE reads a, writes c */
    int64_t oa, ob, oc;             /* element offsets */
    bool    acc;                    /* += into c (GEMM: beta = 1) */
    bool    ta, tb;                 /* GEMM */
    int64_t batch, M, N, K, lda, ldb, ldc, sa, sb, sc;
    int     n_dims, n_outer;        /* REDUCE: dst dims, then summed dims; GEMM: loop dims */
    int64_t size[EM_MAXL], s_a[EM_MAXL], s_b[EM_MAXL], s_c[EM_MAXL];
} em_step;

typedef struct { int n; const em_step *step; } em_plan;

typedef struct {
    const char *equation;
    em_plan     fwd, bwd[EM_MAXOPS];
    int64_t     zero_bytes;         /* ZERO step size */
} einsum_attr;

/* What a running step sees (kernels read it through vctx). */
typedef struct {
    const em_step *st;
    tg_dtype       dt;
    size_t         es;
    char          *a, *b, *c;
} em_run;

/* the portable kernel, float and double (end of this file) */
TG_KERNEL_DECL(static void, em_reduce_range, (void *vctx, int64_t begin, int64_t end, int tid));

static const tg_op op_einsum;   /* the descriptor, after the backward */

/* ---- builder ----
 * The planner's pieces, then tg_einsum: parse (einsum_parse.c), check, create
 * the node and compile its plans. */

/* =============================================================== planning */

typedef struct {
    tg_graph *g;
    em_step  *step;           /* [EM_STEPS] being filled */
    int       n;
    int64_t   scratch;        /* elements of scratch used so far */
    int64_t   lsize[EM_MAXL]; /* size of every label */
} em_builder;

static uint64_t vmask(const em_view *v)
{
    uint64_t m = 0;
    for (int i = 0; i < v->n; i++) m |= 1ull << v->lab[i];
    return m;
}

static int64_t vstride(const em_view *v, int lab) { return v->stride[tg__em_vfind(v, lab)]; }

static int64_t vnumel(const em_view *v)
{
    int64_t k = 1;
    for (int i = 0; i < v->n; i++) k *= v->size[i];
    return k;
}

/* The labels of v that are in mask, by decreasing stride (the only order in
 * which they can merge into one dim). */
static int order(const em_view *v, uint64_t mask, int8_t *out)
{
    int k = 0;
    for (int i = 0; i < v->n; i++) {
        if (!(mask >> v->lab[i] & 1)) continue;
        int j = k++;
        for (; j > 0 && vstride(v, out[j - 1]) < v->stride[i]; j--) out[j] = out[j - 1];
        out[j] = v->lab[i];
    }
    return k;
}

/* Do labels l[0..n) of v form one dim (stride of l[j] = stride of l[j+1] * its size)? */
static bool merges(const em_view *v, const int8_t *l, int n)
{
    for (int j = 0; j + 1 < n; j++)
        if (vstride(v, l[j]) != vstride(v, l[j + 1]) * v->size[tg__em_vfind(v, l[j + 1])])
            return false;
    return true;
}

/* Is that merged dim contiguous (or absent)? */
static bool unit(const em_view *v, const int8_t *l, int n) { return !n || vstride(v, l[n - 1]) == 1; }

static int64_t gsize(const em_builder *b, const int8_t *l, int n)
{
    int64_t k = 1;
    for (int j = 0; j < n; j++) k *= b->lsize[l[j]];
    return k;
}

static int cat(int8_t *out, const int8_t *x, int nx, const int8_t *y, int ny, const int8_t *z, int nz)
{
    memcpy(out, x, (size_t)nx);
    memcpy(out + nx, y, (size_t)ny);
    memcpy(out + nx + ny, z, (size_t)nz);
    return nx + ny + nz;
}

/* A new contiguous scratch tensor with labels l[0..n) in that order. */
static bool fresh(em_builder *b, em_view *v, const int8_t *l, int n)
{
    int64_t s = 1;
    v->n = n;
    v->ref = EM_SCRATCH;
    v->off = b->scratch;
    for (int i = n - 1; i >= 0; i--) {
        v->lab[i] = l[i];
        v->size[i] = b->lsize[l[i]];
        v->stride[i] = s;
        if (!tg__mul_overflow_i64(s, v->size[i], &s)) s = INT64_MAX >> 5;
    }
    if (s > (INT64_MAX >> 5) - 16 - b->scratch) {
        tg_graph_fail(b->g, "einsum(): an intermediate of the contraction has too many elements");
        return false;
    }
    b->scratch += (s + 15) / 16 * 16;   /* keep every region 64-byte aligned */
    return true;
}

static em_step *new_step(em_builder *b, int kind)
{
    em_step *st = &b->step[b->n++];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    return st;
}

/* dst (=|+=) src summed over src's labels missing in dst, broadcast over dst's
 * labels missing in src. */
static void add_reduce(em_builder *b, const em_view *src, const em_view *dst, bool acc)
{
    em_step *st = new_step(b, EM_REDUCE);
    st->ra = st->rb = src->ref;
    st->oa = st->ob = src->off;
    st->rc = dst->ref;
    st->oc = dst->off;
    st->acc = acc;
    for (int i = 0; i < dst->n; i++) {
        int j = tg__em_vfind(src, dst->lab[i]);
        st->size[st->n_dims] = dst->size[i];
        st->s_c[st->n_dims] = dst->stride[i];
        st->s_a[st->n_dims++] = j < 0 ? 0 : src->stride[j];
    }
    st->n_outer = st->n_dims;
    for (int j = 0; j < src->n; j++) {
        if (tg__em_vfind(dst, src->lab[j]) >= 0) continue;
        st->size[st->n_dims] = src->size[j];
        st->s_a[st->n_dims++] = src->stride[j];
    }
}

/* Longest suffix of the batch labels that merges in every view given. */
static int inner_batch(const int8_t *lb, int nb, const em_view *a, const em_view *bv,
                       const em_view *c)
{
    int s = nb;
    while (s > 0 && !((!a || merges(a, lb + nb - s, s)) && (!bv || merges(bv, lb + nb - s, s)) &&
                      (!c || merges(c, lb + nb - s, s))))
        s--;
    return s;
}

/* Contract T and S, keeping the labels in `keep`. Final step (D != NULL): write
 * into D (=|+= by acc). Otherwise the result goes to a new scratch view *R.
 * Labels: batch (both, kept), M (T only, kept), N (S only, kept), K (both, not
 * kept); T-only / S-only labels that are not kept are summed while packing.
 * One GEMM step computes, for every index of the outer batch labels,
 *   C [batch, rows, cols] = A [batch, rows, K] . B [batch, K, cols]
 * with (A, B, rows, cols) = (T, S, M, N), or (S, T, N, M) when D's N labels
 * are not contiguous but its M labels are (C^T = S^T T^T). A or B may be
 * stored transposed ([batch, K, rows] / [batch, cols, K]) and is read in place
 * when its groups merge; else it is packed into scratch in the layout shown. */
static bool pair(em_builder *b, const em_view *T, const em_view *S, uint64_t keep,
                 const em_view *D, bool acc, em_view *R)
{
    uint64_t mt = vmask(T), ms = vmask(S);
    uint64_t mb = mt & ms & keep, mk = mt & ms & ~keep, mm = mt & ~ms & keep,
             mn = ms & ~mt & keep;
    bool pre_t = (mt & ~ms & ~keep) != 0, pre_s = (ms & ~mt & ~keep) != 0;
    int8_t lb[EM_MAXL], lm[EM_MAXL], ln[EM_MAXL], lk[EM_MAXL], l[EM_MAXL];
    int nb = 0, nm = 0, nn = 0, nk;
    const em_view *C = NULL, *big = vnumel(T) >= vnumel(S) ? T : S;
    bool swap = false;
    /* in place into D when its M and N labels each merge and one is contiguous
     * (C = op(A) op(B) needs contiguous columns; swap operands for C^T) */
    if (D && vmask(D) == (mb | mm | mn)) {
        nb = order(D, mb, lb);
        nm = order(D, mm, lm);
        nn = order(D, mn, ln);
        if (merges(D, lm, nm) && merges(D, ln, nn) && (unit(D, ln, nn) || unit(D, lm, nm))) {
            C = D;
            swap = !unit(D, ln, nn);
        }
    }
    if (!C) {
        nb = order(big, mb, lb);
        nm = order(T, mm, lm);
        nn = order(S, mn, ln);
    }
    nk = order(big, mk, lk);
    const em_view *A = swap ? S : T, *B = swap ? T : S;
    const int8_t *lr = swap ? ln : lm, *lc = swap ? lm : ln;   /* rows / cols of C */
    int nr = swap ? nn : nm, nc = swap ? nm : nn;
    bool pack_a = (swap ? pre_s : pre_t) || !merges(A, lr, nr) || !merges(A, lk, nk) ||
                  !(unit(A, lk, nk) || unit(A, lr, nr));
    bool pack_b = (swap ? pre_t : pre_s) || !merges(B, lk, nk) || !merges(B, lc, nc) ||
                  !(unit(B, lc, nc) || unit(B, lk, nk));
    int64_t M = gsize(b, lr, nr), N = gsize(b, lc, nc), K = gsize(b, lk, nk);
    int s = inner_batch(lb, nb, pack_a ? NULL : A, pack_b ? NULL : B, C);
    if (s < nb && (double)gsize(b, lb + nb - s, s) * (double)M * (double)N * (double)K < EM_SMALL) {
        /* many tiny GEMMs: pack whatever stops the batch labels merging */
        pack_a |= !merges(A, lb, nb);
        pack_b |= !merges(B, lb, nb);
        if (C && !merges(C, lb, nb)) C = NULL;
    }
    em_view Ap, Bp, Cf;
    if (pack_a) {   /* A as [batch.., rows.., K..], summing its own-only labels */
        if (!fresh(b, &Ap, l, cat(l, lb, nb, lr, nr, lk, nk))) return false;
        add_reduce(b, A, &Ap, false);
        A = &Ap;
    }
    if (pack_b) {   /* B as [batch.., K.., cols..] */
        if (!fresh(b, &Bp, l, cat(l, lb, nb, lk, nk, lc, nc))) return false;
        add_reduce(b, B, &Bp, false);
        B = &Bp;
    }
    bool in_place = C != NULL;
    if (!C) {       /* C as [batch.., rows.., cols..] */
        if (!fresh(b, &Cf, l, cat(l, lb, nb, lr, nr, lc, nc))) return false;
        C = &Cf;
    }
    s = inner_batch(lb, nb, A, B, C);
    em_step *st = new_step(b, EM_GEMM);
    st->ra = A->ref, st->oa = A->off;
    st->rb = B->ref, st->ob = B->off;
    st->rc = C->ref, st->oc = C->off;
    st->acc = in_place && acc;
    for (int j = 0; j < nb - s; j++) {   /* outer loop over the batch labels that do not merge */
        st->size[j] = b->lsize[lb[j]];
        st->s_a[j] = vstride(A, lb[j]);
        st->s_b[j] = vstride(B, lb[j]);
        st->s_c[j] = vstride(C, lb[j]);
    }
    st->n_dims = nb - s;
    const int8_t *li = lb + nb - s;
    st->batch = gsize(b, li, s);
    st->sa = s ? vstride(A, li[s - 1]) : 0;
    st->sb = s ? vstride(B, li[s - 1]) : 0;
    st->sc = s ? vstride(C, li[s - 1]) : 0;
    st->M = M, st->N = N, st->K = K;
    st->ta = !unit(A, lk, nk);        /* A is [M, K] (lda = row stride) or [K, M] */
    st->lda = st->ta ? (nk ? vstride(A, lk[nk - 1]) : M) : (nr ? vstride(A, lr[nr - 1]) : K);
    st->tb = !unit(B, lc, nc);        /* B is [K, N] or [N, K] */
    st->ldb = st->tb ? (nc ? vstride(B, lc[nc - 1]) : K) : (nk ? vstride(B, lk[nk - 1]) : N);
    st->ldc = nr ? vstride(C, lr[nr - 1]) : N;
    if (D && !in_place) add_reduce(b, C, D, acc);
    if (R) *R = *C;
    return true;
}

/* dst (=|+=) the contraction of src[0..m) over every label not in dst, left to right. */
static bool contract(em_builder *b, int m, const em_view *src, const em_view *dst, bool acc)
{
    if (m == 1) {
        add_reduce(b, &src[0], dst, acc);
        return true;
    }
    em_view T = src[0], R;
    for (int i = 1; i < m; i++) {
        uint64_t keep = vmask(dst);
        for (int j = i + 1; j < m; j++) keep |= vmask(&src[j]);
        if (!pair(b, &T, &src[i], keep, i == m - 1 ? dst : NULL, acc, &R)) return false;
        T = R;
    }
    return true;
}

/* Drop the size-1 dims of a view (broadcasting); note size-0 labels. */
static void squeeze(em_view *v, bool *zero)
{
    int k = 0;
    for (int i = 0; i < v->n; i++) {
        if (v->size[i] == 0) *zero = true;
        if (v->size[i] == 1) continue;
        v->lab[k] = v->lab[i];
        v->size[k] = v->size[i];
        v->stride[k++] = v->stride[i];
    }
    v->n = k;
}

/* ============================================================== tg_einsum */

/* Compile one plan into b->step[from..b->n). */
static bool plan_forward(em_builder *b, em_eq *e)
{
    if (e->zero) {
        em_step *st = new_step(b, EM_ZERO);
        st->rc = EM_OUT;
        return true;
    }
    return contract(b, e->n, e->opv, &e->outv, false);
}

static bool plan_backward(em_builder *b, em_eq *e, int k)
{
    em_view src[EM_MAXOPS], dst = e->opv[k];
    if (e->zero) return true;       /* every product has an empty factor: grads are 0 */
    src[0] = e->outv;
    src[0].ref = EM_DY;
    for (int j = 0, m = 1; j < e->n; j++)
        if (j != k) src[m++] = e->opv[j];
    dst.ref = EM_GRAD + k;
    return contract(b, e->n, src, &dst, true);
}

/* Parse, check, create the node and compile its plans (e and b->step are
 * caller-owned work space). */
static tg_node *einsum_build(tg_graph *g, const char *equation, int n, tg_node *const *operands,
                             em_eq *e, em_builder *b, em_step *all)
{
    size_t len = strlen(equation);
    const char *arrow = strstr(equation, "->");
    e->n = n;
    if (!tg__em_parse_lhs(g, equation, arrow ? (size_t)(arrow - equation) : len, e) ||
        !tg__em_parse_rest(g, equation, arrow, operands, e))
        return NULL;

    /* the output: contiguous, then its view without the size-1 dims */
    int64_t numel = 1, shape[TG_MAX_RANK];
    for (int i = 0; i < e->nout; i++) {
        shape[i] = e->lsize[e->out[i]];
        if (!tg__mul_overflow_i64(numel, shape[i], &numel) || numel > (INT64_MAX >> 5)) {
            char sh[160];
            return tg_graph_fail(g, "einsum(): the output shape %s has too many elements",
                                 tg_shape_str(e->nout, shape, sh, sizeof sh));
        }
    }
    tg__strides(e->nout, shape, e->outv.stride);
    e->outv.n = e->nout;
    e->outv.ref = EM_OUT;
    for (int i = 0; i < e->nout; i++) {
        e->outv.lab[i] = e->out[i];
        e->outv.size[i] = shape[i];
    }
    for (int l = 0; l < EM_MAXL; l++)
        if (e->lsize[l] == 0) e->zero = true;
    squeeze(&e->outv, &e->zero);
    for (int i = 0; i < n; i++) squeeze(&e->opv[i], &e->zero);
    memcpy(b->lsize, e->lsize, sizeof b->lsize);

    tg_node *node = tg_node_new(g, &op_einsum, n, operands, tg_graph_dtype(g), e->nout, shape);
    if (!node) return NULL;

    /* compile the forward and one backward per operand, then copy them into the node */
    int counts[1 + EM_MAXOPS], total = 0;
    int64_t scratch = 0;
    for (int p = 0; p <= n; p++) {
        b->n = 0;
        b->scratch = 0;
        if (!(p == 0 ? plan_forward(b, e) : plan_backward(b, e, p - 1))) return NULL;
        memcpy(all + total, b->step, (size_t)b->n * sizeof *all);
        counts[p] = b->n;
        total += b->n;
        if (b->scratch > scratch) scratch = b->scratch;
    }
    size_t head = (sizeof(einsum_attr) + 63) / 64 * 64;
    einsum_attr *at = tg_node_attr(node, head + (size_t)total * sizeof *all + len + 1);
    if (!at) return NULL;
    em_step *steps = (em_step *)((char *)at + head);
    char *eqcopy = (char *)(steps + total);
    memcpy(steps, all, (size_t)total * sizeof *all);
    memcpy(eqcopy, equation, len + 1);
    at->equation = eqcopy;
    at->zero_bytes = numel * (int64_t)tg_dtype_size(node->value.dtype);
    for (int p = 0, first = 0; p <= n; first += counts[p], p++) {
        em_plan pl = {counts[p], steps + first};
        if (p == 0) at->fwd = pl;
        else at->bwd[p - 1] = pl;
    }
    tg_node_scratch(node, (size_t)scratch * tg_dtype_size(node->value.dtype));
    return node;
}

tg_node *tg_einsum(tg_graph *g, const char *equation, int n, tg_node *const *operands)
{
    if (!tg_builder_check(g, "einsum", 0, NULL)) return NULL;
    if (!equation) return tg_graph_fail(g, "einsum(): the equation is NULL");
    if (n <= 0) return tg_graph_fail(g, "einsum(): must provide at least one operand");
    if (n > EM_MAXOPS)
        return tg_graph_fail(g, "einsum(): at most %d operands are supported, got %d", EM_MAXOPS,
                             n);
    if (!tg_builder_check(g, "einsum", n, operands)) return NULL;
    for (int i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "operand %d", i);
        if (!tg__want_float(g, "einsum()", operands[i], what)) return NULL;
    }
    for (size_t i = 0; equation[i]; i++)
        if ((unsigned char)equation[i] >= 0x80)
            return tg_graph_fail(g, "einsum(): invalid subscript given at index %zu in the "
                                 "equation string, subscripts must be in [a-zA-Z] (non-ASCII "
                                 "byte 0x%02x)", i, (unsigned char)equation[i]);
    em_eq *e = tg__calloc(1, sizeof *e);
    em_builder b = {.g = g, .step = tg__malloc(EM_STEPS * sizeof(em_step))};
    em_step *all = tg__malloc((size_t)(1 + n) * EM_STEPS * sizeof *all);
    tg_node *node = e && b.step && all ? einsum_build(g, equation, n, operands, e, &b, all)
                                       : tg_graph_fail(g, "einsum(): out of memory");
    tg__free(all);
    tg__free(b.step);
    tg__free(e);
    return node;
}

/* ---- forward: running a plan (the backward's too) ---- */

static char *em_ptr(tg_node *n, int ref, int64_t off, size_t es)
{
    char *p;
    if (ref == EM_SCRATCH) p = tg_graph_scratch(n->graph);
    else if (ref == EM_DY) p = n->grad.data;
    else if (ref == EM_OUT) p = n->value.data;
    else if (ref >= EM_GRAD) p = n->in[ref - EM_GRAD]->grad.data;
    else p = n->in[ref - EM_IN]->value.data;
    return p ? p + (size_t)off * es : NULL;
}

/* GEMM over items [begin, end) of the outer loop dims. */
static void em_gemm_range(void *vctx, int64_t begin, int64_t end, int tid)
{
    const em_run *c = vctx;
    const em_step *st = c->st;
    int64_t idx[EM_MAXL], oa = 0, ob = 0, oc = 0, r = begin;
    (void)tid;
    for (int d = st->n_dims - 1; d >= 0; d--) {
        idx[d] = r % st->size[d];
        r /= st->size[d];
        oa += idx[d] * st->s_a[d];
        ob += idx[d] * st->s_b[d];
        oc += idx[d] * st->s_c[d];
    }
    for (int64_t it = begin; it < end; it++) {
        tg_gemm_batched(c->dt, st->ta, st->tb, st->batch, st->M, st->N, st->K, 1.0,
                        c->a + (size_t)oa * c->es, st->lda, st->sa, c->b + (size_t)ob * c->es,
                        st->ldb, st->sb, st->acc ? 1.0 : 0.0, c->c + (size_t)oc * c->es,
                        st->ldc, st->sc);
        for (int d = st->n_dims - 1; d >= 0; d--) {
            oa += st->s_a[d];
            ob += st->s_b[d];
            oc += st->s_c[d];
            if (++idx[d] < st->size[d]) break;
            oa -= st->s_a[d] * st->size[d];
            ob -= st->s_b[d] * st->size[d];
            oc -= st->s_c[d] * st->size[d];
            idx[d] = 0;
        }
    }
}

static void em_run_plan(tg_node *n, const em_plan *p, int64_t zero_bytes)
{
    tg_dtype dt = n->value.dtype;
    em_run c = {.dt = dt, .es = tg_dtype_size(dt)};
    for (int i = 0; i < p->n; i++) {
        const em_step *st = &p->step[i];
        c.st = st;
        c.a = em_ptr(n, st->ra, st->oa, c.es);
        c.b = em_ptr(n, st->rb, st->ob, c.es);
        c.c = em_ptr(n, st->rc, st->oc, c.es);
        int64_t count = 1, work = 1;
        if (st->kind == EM_ZERO) {
            if (zero_bytes) memset(c.c, 0, (size_t)zero_bytes);
        } else if (st->kind == EM_REDUCE) {
            for (int d = 0; d < st->n_dims; d++) {
                if (d < st->n_outer) count *= st->size[d];
                else work *= st->size[d];
            }
            tg_parallel_for(count, work >= 8192 ? 1 : 8192 / work,
                            TG_DISPATCH(dt, em_reduce_range), &c);
        } else {
            for (int d = 0; d < st->n_dims; d++) count *= st->size[d];
            double w = (double)st->batch * (double)st->M * (double)st->N * (double)st->K;
            work = w > 65536 ? 65536 : (int64_t)w;
            if (count >= tg_threads_get())   /* parallel over the loop, GEMMs inline */
                tg_parallel_for(count, work >= 65536 ? 1 : 65536 / (work + 1), em_gemm_range, &c);
            else                             /* few big GEMMs: each one parallel */
                em_gemm_range(&c, 0, count, 0);
        }
    }
}

static tg_status einsum_forward(tg_node *n)
{
    const einsum_attr *a = n->attr;
    em_run_plan(n, &a->fwd, a->zero_bytes);
    return TG_OK;
}

/* ---- backward ---- */

/* backward, from y = einsum(S_1, .., S_n -> S_out)(A_1, .., A_n):
 *   dA_k += einsum(S_out, S_j (j != k) -> S_k)(dy, A_j (j != k)), with S_k's
 *   diagonal / size-1 broadcast / own-only labels handled by A_k's grad view. */
static tg_status einsum_backward(tg_node *n)
{
    const einsum_attr *a = n->attr;
    for (int k = 0; k < n->n_in; k++)
        if (n->in[k]->requires_grad) em_run_plan(n, &a->bwd[k], 0);
    return TG_OK;
}

/* ---- descriptor ---- */

static void einsum_describe(const tg_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "%s", ((const einsum_attr *)n->attr)->equation);
}

/* FLOPs (engine/cost.h), from the forward plan the shapes made: 2 per
 * multiply-add of each GEMM step, 1 per element summed by a REDUCE step (a
 * step that sums nothing only copies) */
static double einsum_flops(const tg_node *n)
{
    const em_plan *p = &((const einsum_attr *)n->attr)->fwd;
    double f = 0;
    for (int i = 0; i < p->n; i++) {
        const em_step *st = &p->step[i];
        double count = 1;
        for (int d = 0; d < st->n_dims; d++) count *= (double)st->size[d];
        if (st->kind == EM_GEMM)
            f += 2.0 * count * (double)st->batch * (double)st->M * (double)st->N * (double)st->K;
        else if (st->kind == EM_REDUCE && st->n_dims > st->n_outer)
            f += count;
    }
    return f;
}

/* ONNX: Einsum with the same equation (spaces dropped). */
static tg_status einsum_onnx(const tg_node *n, struct tg_onnx *m)
{
    const char *eq = ((const einsum_attr *)n->attr)->equation, *in[EM_MAXOPS];
    char buf[512];
    size_t k = 0;
    for (const char *c = eq; *c && k + 1 < sizeof buf; c++)
        if (*c != ' ') buf[k++] = *c;
    buf[k] = '\0';
    if (n->n_in > EM_MAXOPS || strlen(eq) >= sizeof buf)
        return tg__onnx_fail(m, TG_ERR_LIMIT, "onnx export: einsum '%.100s' too long", eq);
    for (int i = 0; i < n->n_in; i++) in[i] = tg__onnx_in(m, n, i);
    const char *out = tg__onnx_value(m, n);
    tg__onnx_node(m, "Einsum", n->n_in, in, 1, &out);
    tg__onnx_attr_str(m, "equation", buf);
    return tg__onnx_status(m);
}

static const tg_op op_einsum = {.name = "einsum", .forward = einsum_forward,
                                .backward = einsum_backward, .describe = einsum_describe,
                                .flags = TG_OP_BWD_NO_OUTPUT,
                                .flops = einsum_flops, .onnx = einsum_onnx};

/* ---- registry: `tgraph op` glue and signatures (ops/registry.h) ---- */

#include "registry_internal.h"

TG_GLUE(b_einsum) { return TG_GLUE_ONE(tg_einsum(g, tg__op_str(c, "equation"), n_in, in)); }

const tg_op_def tg__einsum_ops[] = {
    {"einsum", "torch.einsum(equation, *operands)",
     {{"equation", TG_OP_STRING, NULL, false,
       "subscripts per operand, -> output ('ij,jk->ik')", NULL, 0}},
     false, {TG_IN("operands")}, 1, true, 1, b_einsum, NULL,
     "einsum 'equation=blhe,bshe->bhls' --in q.npy --in k.npy --out s.npy", &op_einsum, NULL,
     "equation=ij,jk->ik;[2,3];[3,4]", "equation=ij,jk->ik;[2,3];[4,4]", NULL},
    {0}
};

/* ---- the portable kernel, once per type ---- */

#define TG_SELF "einsum.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* REDUCE, items [begin, end) of the dst dims (dims 0..n_outer-1):
 *   dst[i] (=|+=) sum over dims n_outer..n_dims-1 of src[i, j] */
static void TG_F(em_reduce_range)(void *vctx, int64_t begin, int64_t end, int tid)
{
    const em_run *c = vctx;
    const em_step *st = c->st;
    const TG_T *src = (const TG_T *)c->a;
    TG_T *dst = (TG_T *)c->c;
    int no = st->n_outer, nd = st->n_dims;
    int64_t idx[EM_MAXL], jdx[EM_MAXL], os = 0, od = 0, r = begin;
    (void)tid;
    for (int d = no - 1; d >= 0; d--) {
        idx[d] = r % st->size[d];
        r /= st->size[d];
        os += idx[d] * st->s_a[d];
        od += idx[d] * st->s_c[d];
    }
    for (int64_t it = begin; it < end; it++) {
        if (nd == no) {
            if (st->acc) dst[od] += src[os];
            else dst[od] = src[os];
        } else {
            double acc = 0;
            int64_t off = os, nl = st->size[nd - 1], sl = st->s_a[nd - 1];
            for (int d = no; d < nd - 1; d++) jdx[d] = 0;
            for (;;) {
                const TG_T *p = src + off;
                for (int64_t k = 0; k < nl; k++) acc += p[k * sl];
                int d = nd - 2;
                for (; d >= no; d--) {
                    off += st->s_a[d];
                    if (++jdx[d] < st->size[d]) break;
                    off -= st->s_a[d] * st->size[d];
                    jdx[d] = 0;
                }
                if (d < no) break;
            }
            if (st->acc) dst[od] += (TG_T)acc;
            else dst[od] = (TG_T)acc;
        }
        for (int d = no - 1; d >= 0; d--) {
            os += st->s_a[d];
            od += st->s_c[d];
            if (++idx[d] < st->size[d]) break;
            os -= st->s_a[d] * st->size[d];
            od -= st->s_c[d] * st->size[d];
            idx[d] = 0;
        }
    }
}

#endif
