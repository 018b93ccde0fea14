/*
 * test_topk.c - topk against PyTorch fixtures (values, indices and the
 * gradient, float32), F64 gradcheck, the tie rule (lower index first), NaN
 * ranking, sorted = false, the attention shape against a full-sort
 * reference, and the bad inputs of OPS.md 19.
 * Fixtures: tests/fixtures/gen_select.py.
 */
#include "testutil.h"

#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "select_case.h"
#include "simd/vec.h"

#define TOPK(fn, k, dim, largest)                                               \
    static tg_node *fn(tg_graph *g, tg_node **in, tg_node **ix)                 \
    {                                                                           \
        return tg_topk(g, in[0], k, dim, largest, true, ix);                    \
    }
TOPK(tk_last, 3, -1, true)
TOPK(tk_smallest, 3, -1, false)
TOPK(tk_dim0, 2, 0, true)
TOPK(tk_dim1_3d, 2, 1, false)
TOPK(tk_full, 5, -1, true)
TOPK(tk_k0, 0, -1, true)
TOPK(tk_nan, 2, 0, true)
TOPK(tk_nan_smallest, 4, 0, false)
TOPK(tk_attention, 32, -1, true)
TOPK(tk_0d, 1, 0, true)

static const sel_case cases[] = {
    {"topk_last", 1, tk_last, true},
    {"topk_smallest", 1, tk_smallest, true},
    {"topk_dim0", 1, tk_dim0, true},
    {"topk_dim1_3d", 1, tk_dim1_3d, true},
    {"topk_k_full", 1, tk_full, true},
    {"topk_k0", 1, tk_k0, true},                 /* empty outputs, zero gradient */
    {"topk_nan", 1, tk_nan, false},              /* [2, nan, 0, -1] -> [nan, 2], [1, 0] */
    {"topk_nan_smallest", 1, tk_nan_smallest, false},
    {"topk_attention", 1, tk_attention, true},   /* 16 rows of 256, k = 32 */
    {"topk_0d", 1, tk_0d, true},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)
static int case_idx[N_CASES];

ParameterizedTestParameters(topk, fixture)
{
    return sel_params(cases, N_CASES, false, case_idx);
}
ParameterizedTest(int *i, topk, fixture) { sel_fixture(&cases[*i]); }

ParameterizedTestParameters(topk, gradcheck)
{
    return sel_params(cases, N_CASES, true, case_idx);
}
ParameterizedTest(int *i, topk, gradcheck) { sel_gradcheck(&cases[*i]); }

/* Run topk on a 1-d vector in float64; return values and indices in caller
 * arrays. The same vector in float32 (every test value is exact in float)
 * must give the same indices: float32 rows of k <= 64 take their own path. */
static void topk_1d(const double *x, int n, int64_t k, bool largest, bool sorted, double *v,
                    int64_t *ix)
{
    for (int f32 = 0; f32 < 2; f32++) {
        tg_graph *g = tg_graph_new(f32 ? TG_F32 : TG_F64);
        tg_node *idx, *in = tg_input(g, "x", f32 ? TG_F32 : TG_F64, 1, (int64_t[]){n});
        cr_assert(in);
        for (int i = 0; i < n; i++) {
            if (f32) ((float *)tg_node_value(in)->data)[i] = (float)x[i];
            else ((double *)tg_node_value(in)->data)[i] = x[i];
        }
        tg_node *y = tg_topk(g, in, k, 0, largest, sorted, &idx);
        cr_assert(y && idx, "%s", tg_graph_error(g));
        cr_assert_eq(tg_node_value(idx)->dtype, TG_I64);
        cr_assert(tg_graph_forward(g) == TG_OK, "%s", tg_last_error());
        const int64_t *I = tg_node_value(idx)->data;
        if (!f32) {
            memcpy(v, tg_node_value(y)->data, (size_t)k * sizeof *v);
            memcpy(ix, I, (size_t)k * sizeof *ix);
        } else {
            const float *V = tg_node_value(y)->data;
            for (int64_t j = 0; j < k; j++) {
                cr_assert_eq(I[j], ix[j], "float32: pick %ld is index %ld, float64 says %ld",
                             (long)j, (long)I[j], (long)ix[j]);
                cr_assert(V[j] == (float)v[j] || (isnan(V[j]) && isnan(v[j])));
            }
        }
        tg_graph_free(g);
    }
}

/* Ties: the lower index ranks first, for both directions (documented in topk.h). */
Test(topk, ties_lower_index_first)
{
    double v[5];
    int64_t ix[5];
    topk_1d((double[]){1, 3, 3, 2, 3}, 5, 2, true, true, v, ix);
    cr_assert(v[0] == 3 && v[1] == 3 && ix[0] == 1 && ix[1] == 2, "got %g@%ld %g@%ld", v[0],
              (long)ix[0], v[1], (long)ix[1]);
    topk_1d((double[]){1, 3, 3, 2, 3}, 5, 5, true, true, v, ix);
    int64_t want[5] = {1, 2, 4, 3, 0};
    for (int i = 0; i < 5; i++) cr_assert_eq(ix[i], want[i], "position %d", i);
    topk_1d((double[]){1, 1, 0, -0.0, 0}, 5, 3, false, true, v, ix);   /* -0.0 == 0 */
    int64_t want_s[3] = {2, 3, 4};
    for (int i = 0; i < 3; i++) cr_assert_eq(ix[i], want_s[i], "smallest position %d", i);
    topk_1d((double[]){NAN, 1, NAN, 5}, 4, 3, true, true, v, ix);       /* NaNs tie too */
    cr_assert(ix[0] == 0 && ix[1] == 2 && ix[2] == 3 && isnan(v[0]) && isnan(v[1]) && v[2] == 5);
    topk_1d((double[]){NAN, 1, NAN, INFINITY, -INFINITY}, 5, 5, false, true, v, ix);
    int64_t want_n[5] = {4, 1, 3, 0, 2};                                /* NaNs last */
    for (int i = 0; i < 5; i++) cr_assert_eq(ix[i], want_n[i], "NaN smallest position %d", i);
}

/* sorted = false: the same set (order unspecified). */
Test(topk, unsorted_same_set)
{
    double x[40], v1[9], v2[9];
    int64_t i1[9], i2[9];
    for (int i = 0; i < 40; i++) x[i] = sin(1.7 * i + 0.3) * 10;
    topk_1d(x, 40, 9, true, true, v1, i1);
    topk_1d(x, 40, 9, true, false, v2, i2);
    for (int a = 0; a < 9; a++) {
        int found = 0;
        for (int b = 0; b < 9; b++) found += i2[b] == i1[a] && v2[b] == v1[a];
        cr_assert_eq(found, 1, "index %ld missing from the unsorted result", (long)i1[a]);
    }
}

/* Values and indices node are optional: indices = NULL works; the node
 * returned for indices copies the values node's picks. */
Test(topk, indices_optional)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 2, (int64_t[]){2, 4});
    float *xd = tg_node_value(x)->data;
    for (int i = 0; i < 8; i++) xd[i] = (float)((i * 5) % 8);
    tg_node *y = tg_topk(g, x, 2, 1, true, true, NULL);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    const float *yd = tg_node_value(y)->data;    /* rows [0,5,2,7], [4,1,6,3] */
    cr_assert(yd[0] == 7 && yd[1] == 5 && yd[2] == 6 && yd[3] == 4);
    tg_graph_free(g);
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* The attention shape, many rows (thread pool), against a full sort per row,
 * and the backward: dx is dv at the picks, 0 elsewhere. */
Test(topk, attention_rows_against_full_sort)
{
    enum { R = 4 * 8 * 16, N = 256, K = 32 };
    tg_graph *g = tg_graph_new(TG_F64);
    tg_node *x = sel_in(g, 2, (int64_t[]){R, N}), *ix;
    tt_randn((tg_tensor *)tg_node_value(x), 5);
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_topk(g, x, K, -1, true, true, &ix);
    cr_assert(tg_graph_forward(g) == TG_OK);
    tg_tensor *dv = tg_tensor_new(TG_F64, 2, (int64_t[]){R, K});
    tt_randn(dv, 6);
    cr_assert(tg_graph_backward(g, y, dv) == TG_OK);
    const double *X = tg_node_value(x)->data, *V = tg_node_value(y)->data;
    const double *DX = tg_node_grad(x)->data;
    const double *DV = dv->data;
    const int64_t *I = tg_node_value(ix)->data;
    static double row[N];
    for (int r = 0; r < R; r++) {
        memcpy(row, X + r * N, sizeof row);
        qsort(row, N, sizeof *row, cmp_desc);
        int nz = 0;
        for (int j = 0; j < K; j++) {
            cr_assert_eq(V[r * K + j], row[j], "row %d pick %d", r, j);
            cr_assert_eq(X[r * N + I[r * K + j]], row[j], "row %d index %d", r, j);
            cr_assert_eq(DX[r * N + I[r * K + j]], DV[r * K + j]);
        }
        for (int j = 0; j < N; j++) nz += DX[r * N + j] != 0;
        cr_assert_eq(nz, K, "row %d: %d nonzero gradients", r, nz);
    }
    tg_tensor_free(dv);
    tg_graph_free(g);
}

/* The documented order, written plainly: NaN first for largest (last for
 * smallest), then by value, then the lower index. */
static bool ref_largest;
static const double *ref_x;
static int ref_cmp(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    double x = ref_x[a], y = ref_x[b];
    int nx = isnan(x), ny = isnan(y);
    if (nx != ny) return ref_largest ? ny - nx : nx - ny;
    if (!nx && x != y) return ref_largest ? (x < y ? 1 : -1) : (x < y ? -1 : 1);
    return (a > b) - (a < b);
}

/* Both row paths (sorted buffer for k <= 64, heap above) on rows full of
 * ties, NaNs, infinities and signed zeros, against a full sort by the rule. */
Test(topk, both_paths_match_the_rule_on_ties_and_nan)
{
    enum { N = 300 };
    static double x[N];
    static int64_t order[N], ix[N];
    static double v[N];
    for (int i = 0; i < N; i++) {
        int r = (i * 37 + 11) % 23;
        x[i] = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : r == 3 ? -0.0
             : (double)(r % 7) - 3;                             /* values repeat a lot */
    }
    const int64_t ks[] = {1, 5, 33, 64, 65, 100, 299, 300};
    for (int dir = 0; dir < 2; dir++)
        for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
            int64_t k = ks[t];
            ref_largest = dir == 0;
            ref_x = x;
            for (int i = 0; i < N; i++) order[i] = i;
            qsort(order, N, sizeof *order, ref_cmp);
            topk_1d(x, N, k, ref_largest, true, v, ix);
            for (int64_t j = 0; j < k; j++) {
                cr_assert_eq(ix[j], order[j], "largest=%d k=%ld: pick %ld is index %ld, want %ld",
                             ref_largest, (long)k, (long)j, (long)ix[j], (long)order[j]);
                cr_assert(v[j] == x[ix[j]] || (isnan(v[j]) && isnan(x[ix[j]])));
            }
            topk_1d(x, N, k, ref_largest, false, v, ix);        /* unsorted: same set */
            qsort(ix, (size_t)k, sizeof *ix, ref_cmp);
            for (int64_t j = 0; j < k; j++)
                cr_assert_eq(ix[j], order[j], "unsorted k=%ld", (long)k);
        }
}

/* Both paths along a strided dim, float64 and float32: x [N, 3] with three
 * copies of a row along dim 0. */
Test(topk, both_paths_strided_dim)
{
    enum { N = 200 };
    static double x[N];
    static int64_t order[N];
    for (int i = 0; i < N; i++) x[i] = (double)((i * 53) % 61) - 30 + (i % 3 == 0 ? 0.5 : 0);
    ref_largest = false;
    ref_x = x;
    for (int i = 0; i < N; i++) order[i] = i;
    qsort(order, N, sizeof *order, ref_cmp);
    const int64_t ks[] = {7, 64, 65, 150};
    for (size_t t = 0; t < sizeof ks / sizeof *ks; t++) {
      for (int f32 = 0; f32 < 2; f32++) {
        tg_graph *g = tg_graph_new(f32 ? TG_F32 : TG_F64);
        tg_node *in = tg_input(g, "x", f32 ? TG_F32 : TG_F64, 2, (int64_t[]){N, 3}), *ixn;
        cr_assert(in);
        for (int i = 0; i < 3 * N; i++) {
            if (f32) ((float *)tg_node_value(in)->data)[i] = (float)x[i / 3];
            else ((double *)tg_node_value(in)->data)[i] = x[i / 3];
        }
        tg_node *y = tg_topk(g, in, ks[t], 0, false, true, &ixn);
        cr_assert(y && tg_graph_forward(g) == TG_OK);
        const int64_t *ix = tg_node_value(ixn)->data;
        for (int64_t j = 0; j < ks[t]; j++)
            for (int c = 0; c < 3; c++) {
                cr_assert_eq(ix[3 * j + c], order[j], "%s k=%ld pick %ld column %d",
                             f32 ? "float32" : "float64", (long)ks[t], (long)j, c);
                double vj = f32 ? ((const float *)tg_node_value(y)->data)[3 * j + c]
                                : ((const double *)tg_node_value(y)->data)[3 * j + c];
                cr_assert_eq(vj, x[order[j]]);
            }
        tg_graph_free(g);
      }
    }
}

/* ---- the float32 row kernels (k <= 64) against the rule, randomized ---- */

static uint64_t rnd_state;
static uint64_t rnd(void)                       /* splitmix64 */
{
    uint64_t z = (rnd_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float rnd_unit(void) { return (float)((double)(rnd() >> 11) / (double)(1ull << 53)); }

static float rnd_special(void)
{
    static const float s[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f,
                              FLT_MIN, -FLT_MIN, 1e-45f, FLT_MAX, -FLT_MAX};
    return s[rnd() % (sizeof s / sizeof *s)];
}

/* Row j of one of the patterns the kernels treat differently: random, few
 * levels (ties), specials (NaN, +-0, +-inf, subnormal), ascending,
 * descending, all equal, sawtooth, arbitrary bit patterns (NaN payloads). */
static void fill_row(float *x, int n, int pattern)
{
    float c = rnd() % 4 == 0 ? rnd_special() : rnd_unit() * 4 - 2;
    int period = 1 + (int)(rnd() % 70), levels = 1 + (int)(rnd() % 5);
    for (int j = 0; j < n; j++) {
        switch (pattern) {
        case 0: x[j] = rnd_unit() * 2 - 1; break;
        case 1: x[j] = (float)(rnd() % (uint64_t)levels) - 1; break;
        case 2: x[j] = rnd() % 3 ? rnd_special() : (float)(rnd() % 3); break;
        case 3: x[j] = (float)j * 0.5f - 7; break;
        case 4: x[j] = 100 - (float)j; break;
        case 5: x[j] = c; break;
        case 6: x[j] = (float)(j % period); break;
        case 7: {
            uint32_t b = (uint32_t)rnd();
            memcpy(&x[j], &b, sizeof b);
            break;
        }
        default: x[j] = rnd() % 10 == 0 ? NAN : rnd_unit() - 0.5f; break;
        }
    }
}

/* One graph: x [R, n, inner] (rows along dim 1, each with its own pattern),
 * topk k; every row's picks against qsort by the rule. */
static void check_rows(int R, int n, int inner, int k, bool largest, const char *path)
{
    int64_t shape[3] = {R, n, inner};
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, shape), *ixn;
    float *X = tg_node_value(x)->data;
    static float row[700];
    static double rowd[700];
    static int64_t order[700];
    for (int r = 0; r < R; r++)
        for (int i = 0; i < inner; i++) {
            fill_row(row, n, (int)(rnd() % 9));
            for (int j = 0; j < n; j++) X[((int64_t)r * n + j) * inner + i] = row[j];
        }
    tg_node *y = tg_topk(g, x, k, 1, largest, rnd() % 2, &ixn);
    cr_assert(y && tg_graph_forward(g) == TG_OK, "%s", tg_graph_error(g));
    const float *V = tg_node_value(y)->data;
    const int64_t *I = tg_node_value(ixn)->data;
    ref_largest = largest;
    ref_x = rowd;
    for (int r = 0; r < R; r++)
        for (int i = 0; i < inner; i++) {
            for (int j = 0; j < n; j++) {
                rowd[j] = X[((int64_t)r * n + j) * inner + i];
                order[j] = j;
            }
            qsort(order, (size_t)n, sizeof *order, ref_cmp);
            for (int j = 0; j < k; j++) {
                int64_t o = ((int64_t)r * k + j) * inner + i, want = order[j];
                cr_assert_eq(I[o], want, "%s: n=%d k=%d inner=%d largest=%d row %d.%d: pick %d is "
                             "index %ld, want %ld", path, n, k, inner, largest, r, i, j,
                             (long)I[o], (long)want);
                float w = X[((int64_t)r * n + want) * inner + i];
                cr_assert(memcmp(&V[o], &w, sizeof w) == 0, "%s: value bits", path);
            }
        }
    tg_graph_free(g);
}

/* Every float32 row path (portable; AVX2 and AVX-512 where the CPU has them)
 * on random shapes: n 1..600 (not only multiples of 8), k 1..64 including
 * k == n and k tiny against n, inner 1 and 3, both directions. */
static void random_rows(const char *path)
{
    static const int ns[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129,
                             255, 256, 257, 300, 511, 512, 600};
    rnd_state = 12345;
    for (int t = 0; t < 400; t++) {
        bool few = t >= 25 && t % 7 == 0;                 /* a long row for k: few pass */
        int n = t < 25 ? ns[t] : few ? 400 + (int)(rnd() % 200) : 1 + (int)(rnd() % 600);
        int kmax = n < 64 ? n : 64;
        int k = few ? 1 + (int)(rnd() % 3)
              : t % 5 == 0 ? kmax : 1 + (int)(rnd() % (uint64_t)kmax);
        int inner = t % 4 == 3 ? 3 : 1;
        check_rows(1 + (int)(rnd() % 4), n, inner, k, t % 2 == 0, path);
    }
}

Test(topk_rows, random_portable)
{
    cr_assert(tg__vec_set(0));
    random_rows("portable");
    tg__vec_set(-1);
}

/* (on a CPU without the instructions: the best path it has, once more) */
Test(topk_rows, random_avx2)
{
    cr_assert(tg__vec_set(1) || !tg__vec_supported());
    cr_assert(tg__vec_set_avx512(0));
    random_rows("avx2");
    tg__vec_set_avx512(-1);
    tg__vec_set(-1);
}

Test(topk_rows, random_avx512)
{
    tg__vec_set(1);
    tg__vec_set_avx512(1);
    random_rows(tg__vec_avx512_on() ? "avx512" : "fallback");
    tg__vec_set_avx512(-1);
    tg__vec_set(-1);
}

Test(topk, k0_on_0d_returns_the_scalar)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, 0, NULL), *ix;
    *(float *)tg_node_value(x)->data = 5;
    tg_node *y = tg_topk(g, x, 0, -1, true, true, &ix);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert(tg_graph_forward(g) == TG_OK);
    cr_assert_eq(tg_node_value(y)->rank, 0);
    cr_assert_eq(*(float *)tg_node_value(y)->data, 5);
    cr_assert_eq(*(int64_t *)tg_node_value(ix)->data, 0);
    tg_graph_free(g);
}

/* ---- bad input (OPS.md 19: k < 0, k > size(dim), bad dim, k > 1 on 0-d) ---- */

static void expect_topk_error(int rank, const int64_t *shape, int64_t k, int dim, const char *msg)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = sel_in(g, rank, shape), *ix = (tg_node *)1;
    cr_assert_null(tg_topk(g, x, k, dim, true, true, &ix));
    cr_assert_null(ix, "indices must be NULL on error");
    tt_assert_graph_error(g, msg);
    tg_graph_free(g);
}

#define K_RANGE "topk: selected index k out of range"
Test(topk_errors, k_negative) { expect_topk_error(1, (int64_t[]){4}, -1, 0, K_RANGE); }
Test(topk_errors, k_too_large) { expect_topk_error(2, (int64_t[]){3, 4}, 5, -1, K_RANGE); }
Test(topk_errors, k_too_large_dim0) { expect_topk_error(2, (int64_t[]){3, 4}, 4, 0, K_RANGE); }
Test(topk_errors, k_above_1_on_0d) { expect_topk_error(0, NULL, 2, 0, K_RANGE); }
Test(topk_errors, bad_dim)
{
    expect_topk_error(2, (int64_t[]){3, 2}, 1, 2,
                      "topk: Dimension out of range (expected to be in range of [-2, 1], "
                      "but got 2)");
}
Test(topk_errors, bad_dim_0d)
{
    expect_topk_error(0, NULL, 1, 1, "Dimension out of range (expected to be in range of [-1, 0], "
                                     "but got 1)");
}
Test(topk_errors, integer_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "i", TG_I64, 1, (int64_t[]){3});
    cr_assert_null(tg_topk(g, x, 1, 0, true, true, NULL));
    tt_assert_graph_error(g, "topk: input must be float32, got int64");
    tg_graph_free(g);
}
