/*
 * test_einsum.c - einsum against PyTorch fixtures (forward and every operand
 * gradient, float32), gradcheck in float64, a seeded sweep of random equations
 * against a naive sum-over-all-labels reference, the no-copy attention paths,
 * and one test per bad input of OPS.md 4.4 / section 19.
 * Fixtures: tests/fixtures/gen_einsum.py (the table below repeats its cases).
 */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "op.h"

#include <criterion/parameterized.h>

typedef struct {
    const char *name;       /* fixture folder under einsum/ */
    const char *equation;
    int         n_in;       /* distinct inputs (in<i>.npy) */
    const char *uses;       /* input index of each operand, "01", "00", ... */
    bool        gradcheck;  /* false for zero-size cases */
} es_case;

static es_case cases[] = {
    {"attn_scores", "blhe,bshe->bhls", 2, "01", true},
    {"attn_values", "bhls,bshd->blhd", 2, "01", true},
    {"matmul", "ij,jk->ik", 2, "01", true},
    {"implicit_jh", "ij,jh", 2, "01", true},
    {"implicit_jk", "ij,jk", 2, "01", true},
    {"implicit_bA", "bA", 1, "0", true},
    {"implicit_AbbA", "Ab,bA", 2, "01", true},
    {"trace", "ii", 1, "0", true},
    {"diagonal", "ii->i", 1, "0", true},
    {"diag_bcast3", "iij,jk,k->k", 3, "012", true},
    {"ellipsis_bmm", "...ij,...jk->...ik", 2, "01", true},
    {"ellipsis_sum", "...j->j", 1, "0", true},
    {"ellipsis_out", "ij->...ij", 1, "0", true},
    {"bcast_dot", "i,i", 2, "01", true},
    {"bcast_mul", "ij,ij->ij", 2, "01", true},
    {"presum", "ij,j->j", 2, "01", true},
    {"scalars", ",", 2, "01", true},
    {"scalar", "", 1, "0", true},
    {"sum", "i->", 1, "0", true},
    {"bmm", "bij,bjk->bik", 2, "01", true},
    {"outer", "ij,kl->ijkl", 2, "01", true},
    {"chain4", "ab,bc,cd,de->ae", 4, "0123", true},
    {"same_node", "ij,ij->", 1, "00", true},
    {"zero_k", "ij,jk->ik", 2, "01", false},
    {"zero_out", "ij,jk->ik", 2, "01", false},
    {"spaces", " ij , jk -> ik ", 2, "01", true},
    {"trans_both", "ji,kj->ik", 2, "01", true},
    {"batch_perm", "ibj,bjk->kbi", 2, "01", true},
    {"elem_perm", "ijk,kji->ijk", 2, "01", true},
    {"diag_gemm", "iij,jk->ik", 2, "01", true},
    {"diag_apart", "iji->ij", 1, "0", true},
    {"transpose", "ij->ji", 1, "0", true},
    {"diag_three", "i,jj,j->ij", 3, "012", true},
    {"multi_k", "abcd,cdbe->ae", 2, "01", true},
    {"case_labels", "aA,Ab->ab", 2, "01", true},
    {"ell_one_side", "i...,i->...", 2, "01", true},
    {"three_elem", "ij,ij,ij->ij", 3, "012", true},
    {"dot", "i,i->", 1, "00", true},
    {"outer_vec", "i,j->ij", 2, "01", true},
    {"bcast_label_out", "ij,jk->ijk", 2, "01", true},
    {"big_mk", "mk,kn->nm", 2, "01", true},
};

#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_index[N_CASES];

static struct criterion_test_params case_params(void)
{
    for (int i = 0; i < N_CASES; i++) case_index[i] = i;
    return cr_make_param_array(int, case_index, N_CASES);
}

/* Inputs from the fixture (requiring grad) and the einsum over them. */
static tg_node *build_case(const es_case *c, tg_graph *g, tg_node **in, tg_tensor **x)
{
    char dir[96], file[32];
    tg_node *ops[8];
    snprintf(dir, sizeof dir, "einsum/%s", c->name);
    for (int i = 0; i < c->n_in; i++) {
        snprintf(file, sizeof file, "in%d.npy", i);
        x[i] = tt_load(dir, file);
        in[i] = tg_input(g, file, tg_graph_dtype(g), x[i]->rank, x[i]->shape);
        cr_assert(tg_node_set(in[i], x[i]) == TG_OK);
        cr_assert(tg_node_set_requires_grad(in[i], true) == TG_OK);
    }
    int n = (int)strlen(c->uses);
    for (int k = 0; k < n; k++) ops[k] = in[c->uses[k] - '0'];
    return tg_einsum(g, c->equation, n, ops);
}

ParameterizedTestParameters(einsum, fixture) { return case_params(); }

ParameterizedTest(int *idx, einsum, fixture)
{
    const es_case *c = &cases[*idx];
    char dir[96], file[32];
    snprintf(dir, sizeof dir, "einsum/%s", c->name);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in[8];
    tg_tensor *x[8];
    tg_node *y = build_case(c, g, in, x);
    cr_assert(y, "%s: %s", c->name, tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
    tg_tensor *want = tt_load(dir, "out0.npy"), *dy = tt_load(dir, "dout0.npy");
    tt_assert_close(tg_node_value(y), want, 1e-6, 1e-5, c->name);
    /* twice: the second backward must give the same (grads are reset, nothing stale) */
    for (int rep = 0; rep < 2; rep++) {
        cr_assert(tg_graph_backward(g, y, dy) == TG_OK, "%s", tg_last_error());
        for (int i = 0; i < c->n_in; i++) {
            snprintf(file, sizeof file, "grad%d.npy", i);
            tg_tensor *gw = tt_load(dir, file);
            tt_assert_close(tg_node_grad(in[i]), gw, 1e-6, 1e-5, file);
            tg_tensor_free(gw);
        }
    }
    for (int i = 0; i < c->n_in; i++) tg_tensor_free(x[i]);
    tg_tensor_free(want);
    tg_tensor_free(dy);
    tg_graph_free(g);
}

ParameterizedTestParameters(einsum, gradcheck) { return case_params(); }

ParameterizedTest(int *idx, einsum, gradcheck)
{
    const es_case *c = &cases[*idx];
    if (!c->gradcheck) return;   /* empty tensors: nothing to perturb */
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *in[8];
    tg_tensor *x[8];
    tg_node *y = build_case(c, g, in, x);
    cr_assert(y, "%s: %s", c->name, tg_graph_error(g));
    tt_gradcheck(g, y, 7);
    for (int i = 0; i < c->n_in; i++) tg_tensor_free(x[i]);
    tg_graph_free(g);
}

/* ---- the seed shapes, the describe hook, no copies on the attention paths ---- */

static tg_node *in_f32(tg_graph *g, int rank, const int64_t *shape)
{
    return tg_input(g, "x", TG_F32, rank, shape);
}

Test(einsum, attention_shapes_and_describe)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *q = in_f32(g, 4, (int64_t[]){8, 6, 2, 8}), *k = in_f32(g, 4, (int64_t[]){8, 6, 2, 8});
    tg_node *s = tg_einsum(g, "blhe,bshe->bhls", 2, (tg_node *[]){q, k});
    cr_assert_not_null(s, "%s", tg_graph_error(g));
    const tg_tensor *v = tg_node_value(s);
    int64_t want[4] = {8, 2, 6, 6};
    cr_assert_eq(v->rank, 4);
    for (int d = 0; d < 4; d++) cr_assert_eq(v->shape[d], want[d]);
    char buf[64];
    s->op->describe(s, buf, sizeof buf);
    cr_assert_str_eq(buf, "blhe,bshe->bhls");
    cr_assert_str_eq(tg_node_name(s), "einsum");
    tg_graph_free(g);
}

Test(einsum, attention_paths_need_no_scratch)
{
    /* forward and both backward contractions are read and written in place */
    int64_t B = 4, L = 5, S = 7, H = 3, E = 6;
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *q = in_f32(g, 4, (int64_t[]){B, L, H, E}), *k = in_f32(g, 4, (int64_t[]){B, S, H, E});
    tg_node *v = in_f32(g, 4, (int64_t[]){B, S, H, E});
    tg_node *sc = tg_einsum(g, "blhe,bshe->bhls", 2, (tg_node *[]){q, k});
    tg_node *o = tg_einsum(g, "bhls,bshd->blhd", 2, (tg_node *[]){sc, v});
    cr_assert_not_null(o, "%s", tg_graph_error(g));
    cr_assert_eq(sc->scratch, 0, "scores need %zu bytes of scratch", sc->scratch);
    cr_assert_eq(o->scratch, 0, "values need %zu bytes of scratch", o->scratch);
    tg_graph_free(g);
}

Test(einsum, run_allocates_nothing)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = in_f32(g, 3, (int64_t[]){3, 3, 4}), *b = in_f32(g, 2, (int64_t[]){4, 1});
    tg_node *c = in_f32(g, 1, (int64_t[]){5});
    tg_node_set_requires_grad(a, true);
    tg_node_set_requires_grad(b, true);
    tg_node_set_requires_grad(c, true);
    tg_node *y = tg_einsum(g, "iij,jk,k->", 3, (tg_node *[]){a, b, c});
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    tt_randn((tg_tensor *)tg_node_value(a), 1);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    uint64_t before = tg__alloc_count();
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    }
    cr_assert_eq(tg__alloc_count(), before);
    tg_graph_free(g);
}

/* ---- random equations against a naive reference ---- */

typedef struct {
    int     n, nout, rank[3], lab[3][5], out[6];
    int64_t size[6];          /* per label a..f */
    int64_t shape[3][5];
    char    eq[64];
} rnd_eq;

static uint64_t rnd_state;
static int rnd(int n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rnd_state >> 33) % (uint64_t)n);
}

/* n operands of rank 0..3 over labels a..e (repeats allowed: diagonals), some
 * dims 1 (broadcast); explicit output = a random arrangement of used labels,
 * or implicit. */
static void rnd_make(rnd_eq *r)
{
    memset(r, 0, sizeof *r);
    bool used[6] = {false};
    for (int l = 0; l < 5; l++) r->size[l] = 2 + rnd(4);
    r->n = 1 + rnd(3);
    char *p = r->eq;
    for (int i = 0; i < r->n; i++) {
        if (i) *p++ = ',';
        r->rank[i] = rnd(5);
        for (int d = 0; d < r->rank[i]; d++) {
            int l = rnd(5);
            bool again = false;
            for (int e = 0; e < d; e++) again |= r->lab[i][e] == l;
            r->lab[i][d] = l;
            used[l] = true;
            *p++ = (char)('a' + l);
            r->shape[i][d] = r->size[l];
            if (!again && rnd(5) == 0) r->shape[i][d] = 1;   /* broadcast */
        }
        for (int d = 0; d < r->rank[i]; d++)   /* a repeated label: all dims full size */
            for (int e = 0; e < r->rank[i]; e++)
                if (e != d && r->lab[i][e] == r->lab[i][d]) r->shape[i][d] = r->size[r->lab[i][d]];
    }
    if (rnd(4) == 0) {   /* implicit: labels used once, sorted */
        int cnt[6] = {0};
        for (int i = 0; i < r->n; i++)
            for (int d = 0; d < r->rank[i]; d++) cnt[r->lab[i][d]]++;
        for (int l = 0; l < 5; l++)
            if (cnt[l] == 1) r->out[r->nout++] = l;
    } else {
        *p++ = '-', *p++ = '>';
        for (int l = 0; l < 5; l++)
            if (used[l] && rnd(2)) {
                int at = rnd(r->nout + 1);
                memmove(r->out + at + 1, r->out + at, (size_t)(r->nout - at) * sizeof *r->out);
                r->out[at] = l;
                r->nout++;
            }
        for (int j = 0; j < r->nout; j++) *p++ = (char)('a' + r->out[j]);
    }
    *p = '\0';
}

/* out[o] = sum over every label assignment of prod_i x_i[labels]; a label's
 * size is the largest of its dims (1 when unused or broadcast everywhere). */
static void rnd_reference(const rnd_eq *r, const tg_tensor **x, double *out, int64_t nout)
{
    int64_t idx[6] = {0}, size[6] = {1, 1, 1, 1, 1, 1}, total = 1;
    for (int i = 0; i < r->n; i++)
        for (int d = 0; d < r->rank[i]; d++)
            if (r->shape[i][d] > size[r->lab[i][d]]) size[r->lab[i][d]] = r->shape[i][d];
    for (int l = 0; l < 5; l++) total *= size[l];
    memset(out, 0, (size_t)nout * sizeof *out);
    for (int64_t t = 0; t < total; t++) {
        int64_t rem = t;
        for (int l = 4; l >= 0; l--) {
            idx[l] = rem % size[l];
            rem /= size[l];
        }
        double prod = 1;
        for (int i = 0; i < r->n; i++) {
            int64_t off = 0;
            for (int d = 0; d < r->rank[i]; d++)
                off = off * r->shape[i][d] + (r->shape[i][d] == 1 ? 0 : idx[r->lab[i][d]]);
            prod *= tg_tensor_get(x[i], off);
        }
        int64_t o = 0;
        for (int j = 0; j < r->nout; j++) o = o * size[r->out[j]] + idx[r->out[j]];
        out[o] += prod;
    }
}

Test(einsum, random_equations_vs_naive)
{
    rnd_state = 12345;
    for (int t = 0; t < 300; t++) {
        rnd_eq r;
        rnd_make(&r);
        tg_graph *g = tg_graph_new(TG_F64);
        tg_node *ops[3];
        const tg_tensor *xs[3];
        for (int i = 0; i < r.n; i++) {
            ops[i] = tg_input(g, "x", TG_F64, r.rank[i], r.shape[i]);
            tt_randn((tg_tensor *)tg_node_value(ops[i]), 100 + (uint64_t)(t * 3 + i));
            tg_node_set_requires_grad(ops[i], true);
            xs[i] = tg_node_value(ops[i]);
        }
        tg_node *y = tg_einsum(g, r.eq, r.n, ops);
        cr_assert_not_null(y, "'%s': %s", r.eq, tg_graph_error(g));
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        const tg_tensor *yv = tg_node_value(y);
        cr_assert_eq(yv->rank, r.nout, "'%s': rank %d", r.eq, yv->rank);
        double ref[4096];
        cr_assert(yv->numel <= 4096);
        rnd_reference(&r, xs, ref, yv->numel);
        for (int64_t i = 0; i < yv->numel; i++)
            cr_assert(fabs(tg_tensor_get(yv, i) - ref[i]) <= 1e-9 * (1 + fabs(ref[i])),
                      "'%s' element %lld: %.12g vs %.12g", r.eq, (long long)i,
                      tg_tensor_get(yv, i), ref[i]);
        if (t % 3 == 0) {
            cr_log_info("gradcheck '%s'", r.eq);
            tt_gradcheck(g, y, (uint64_t)t);
        }
        tg_graph_free(g);
    }
}

/* ---- bad input: one test per row of OPS.md 4.4 and section 19 ---- */

/* einsum(eq) over operands of the given ranks/shapes; expects NULL and `needle`. */
static void expect_error(const char *eq, int n, const int *ranks, const int64_t shapes[][8],
                         const char *needle)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *ops[16];
    for (int i = 0; i < n; i++) ops[i] = in_f32(g, ranks[i], shapes[i]);
    cr_assert_null(tg_einsum(g, eq, n, ops), "'%s' was accepted", eq ? eq : "(null)");
    tt_assert_graph_error(g, needle);
    /* sticky: later builders return NULL too */
    cr_assert_null(tg_einsum(g, "i", 1, ops));
    tg_graph_free(g);
}

#define SH(...) ((const int64_t[][8]){__VA_ARGS__})

Test(einsum_errors, no_operands)
{
    expect_error("", 0, NULL, NULL, "einsum(): must provide at least one operand");
}

Test(einsum_errors, fewer_operands_than_terms)
{
    expect_error("i,j", 1, (int[]){1}, SH({2}),
                 "einsum(): fewer operands were provided than specified in the equation");
}

Test(einsum_errors, more_operands_than_terms)
{
    expect_error("i", 2, (int[]){1, 1}, SH({2}, {2}),
                 "einsum(): more operands were provided than specified in the equation");
}

Test(einsum_errors, invalid_character)
{
    const char *tail = " in the equation string, subscripts must be in [a-zA-Z]";
    char want[128];
    snprintf(want, sizeof want, "einsum(): invalid subscript given at index 1%s", tail);
    expect_error("i1", 1, (int[]){2}, SH({2, 2}), want);
    snprintf(want, sizeof want, "invalid subscript given at index 2%s", tail);
    expect_error("ij-jk", 1, (int[]){2}, SH({2, 2}), want);
    snprintf(want, sizeof want, "invalid subscript given at index 4%s", tail);
    expect_error("i->i->i", 1, (int[]){1}, SH({2}), want);   /* a second arrow */
    snprintf(want, sizeof want, "invalid subscript given at index 1%s", tail);
    expect_error("i\tj", 1, (int[]){2}, SH({2, 2}), want);
}

Test(einsum_errors, stray_dots)
{
    const char *want = "einsum(): found '.' for operand 0 that is not part of any ellipsis";
    expect_error("..i", 1, (int[]){1}, SH({2}), want);
    expect_error(". . .", 1, (int[]){1}, SH({2}), want);
    expect_error("i..", 1, (int[]){1}, SH({2}), want);
    expect_error("....i", 1, (int[]){1}, SH({2}), "for which an ellipsis was already found");
    expect_error("i,.", 2, (int[]){1, 1}, SH({2}, {2}),
                 "found '.' for operand 1 that is not part of any ellipsis");
}

Test(einsum_errors, two_ellipses_in_a_term)
{
    expect_error("...i...", 1, (int[]){1}, SH({2}),
                 "einsum(): found '.' for operand 0 for which an ellipsis was already found");
}

Test(einsum_errors, output_ellipsis_twice_or_stray)
{
    expect_error("i->......", 1, (int[]){1}, SH({2}),
                 "einsum(): found '.' for output but an ellipsis (...) was already found");
    expect_error("i->..i", 1, (int[]){1}, SH({2}),
                 "einsum(): found '.' for output that is not part of any ellipsis (...)");
}

Test(einsum_errors, label_count_not_rank)
{
    expect_error("ijk", 1, (int[]){2}, SH({2, 3}),
                 "einsum(): the number of subscripts in the equation (3) does not match the "
                 "number of dimensions (2) for operand 0 and no ellipsis was given");
    expect_error("abcdefghijkl", 1, (int[]){2}, SH({2, 3}),   /* longer than any rank */
                 "subscripts in the equation (12) does not match the number of dimensions (2)");
}

Test(einsum_errors, more_labels_than_rank_with_ellipsis)
{
    expect_error("...ijk", 1, (int[]){2}, SH({2, 3}),
                 "einsum(): the number of subscripts in the equation (3) is more than the number "
                 "of dimensions (2) for operand 0");
    expect_error("abcdefghijk...", 1, (int[]){2}, SH({2, 3}),
                 "subscripts in the equation (11) is more than the number of dimensions (2)");
}

Test(einsum_errors, output_label_not_in_inputs)
{
    expect_error("ij->ik", 1, (int[]){2}, SH({2, 3}),
                 "einsum(): output subscript k does not appear in the equation for any input "
                 "operand");
}

Test(einsum_errors, output_label_twice)
{
    expect_error("ij->ii", 1, (int[]){2}, SH({2, 3}),
                 "einsum(): output subscript i appears more than once in the output");
}

Test(einsum_errors, label_sizes_do_not_broadcast)
{
    expect_error("ij,jk", 2, (int[]){2, 2}, SH({2, 3}, {2, 4}),
                 "einsum(): subscript j has size 2 for operand 1 which does not broadcast with "
                 "previously seen size 3");
    expect_error("i,i", 2, (int[]){1, 1}, SH({0}, {3}),   /* 0 against 3: no broadcast */
                 "subscript i has size 3 for operand 1 which does not broadcast with previously "
                 "seen size 0");
}

Test(einsum_errors, repeated_label_sizes_differ)
{
    expect_error("ii", 1, (int[]){2}, SH({2, 3}),
                 "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2");
    expect_error("ii", 1, (int[]){2}, SH({1, 3}),   /* no broadcasting on a diagonal */
                 "subscript i is repeated for operand 0 but the sizes don't match, 3 != 1");
}

Test(einsum_errors, ellipsis_dims_do_not_broadcast)
{
    expect_error("...i,...i", 2, (int[]){2, 2}, SH({3, 2}, {4, 2}),
                 "einsum(): dimension 0 covered by ellipsis in operand 1has size 4 which does not "
                 "broadcast with previously seen ellipsis with size 3 for the respective dimension");
}

Test(einsum_errors, non_ascii)
{
    expect_error("i\xc3\xa9", 1, (int[]){2}, SH({2, 2}), "index 1 in the equation string");
    expect_error("i\xc3\xa9", 1, (int[]){2}, SH({2, 2}), "non-ASCII byte 0xc3");
    expect_error("ij->j\x80", 1, (int[]){2}, SH({2, 2}), "non-ASCII byte 0x80");
}

Test(einsum_errors, null_equation)
{
    expect_error(NULL, 1, (int[]){1}, SH({2}), "einsum(): the equation is NULL");
}

Test(einsum_errors, too_many_operands)
{
    int ranks[9] = {0};
    int64_t shapes[9][8] = {{0}};
    expect_error(",,,,,,,,", 9, ranks, (const int64_t(*)[8])shapes,
                 "einsum(): at most 8 operands are supported, got 9");
}

Test(einsum_errors, result_rank_above_max)
{
    expect_error("abcde,fghij->abcdefghij", 2, (int[]){5, 5},
                 SH({1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}),
                 "the output would have 10 dims, more than the maximum rank 8");
    expect_error("abcde,fghij", 2, (int[]){5, 5}, SH({1, 1, 1, 1, 1}, {1, 1, 1, 1, 1}),
                 "the output would have 10 dims");
}

Test(einsum_errors, element_count_overflow)
{
    int64_t s = (int64_t)1 << 15;
    expect_error("a,b,c,d->abcd", 4, (int[]){1, 1, 1, 1}, SH({s}, {s}, {s}, {s}),
                 "einsum(): the output shape [32768, 32768, 32768, 32768] has too many elements");
}

static tg_status noop_forward(tg_node *n)
{
    (void)n;
    return TG_OK;
}
static const tg_op op_as_f64 = {.name = "as_f64", .forward = noop_forward};

Test(einsum_errors, operand_dtypes)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = in_f32(g, 1, (int64_t[]){3});
    tg_node *b = tg_node_new(g, &op_as_f64, 1, &a, TG_F64, 1, (int64_t[]){3});
    cr_assert_not_null(b);
    cr_assert_null(tg_einsum(g, "i,i", 2, (tg_node *[]){a, b}));
    tt_assert_graph_error(g, "einsum(): operand 1 must be float32, got float64");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    a = in_f32(g, 1, (int64_t[]){3});
    b = tg_input(g, "idx", TG_I64, 1, (int64_t[]){3});
    cr_assert_null(tg_einsum(g, "i,i", 2, (tg_node *[]){b, a}));
    tt_assert_graph_error(g, "einsum(): operand 0 must be float32, got int64");
    tg_graph_free(g);
}

Test(einsum_errors, null_operand)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *a = in_f32(g, 1, (int64_t[]){3});
    cr_assert_null(tg_einsum(g, "i,i", 2, (tg_node *[]){a, NULL}));
    tt_assert_graph_error(g, "einsum: input 1 is NULL");
    tg_graph_free(g);
    cr_assert_null(tg_einsum(NULL, "i", 1, (tg_node *[]){NULL}));
}
