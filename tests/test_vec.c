/*
 * test_vec.c - the AVX2 float32 row kernels (ops/simd/vec*.c) against the portable
 * kernels they replace, and the vector maths against libm.
 *
 * Each op (softmax, softmax_scaled with a positive and a negative scale,
 * log_softmax, layer_norm with and without affine, GELU exact and tanh) runs
 * forward and backward twice on the same data, once with the portable path
 * forced (tg__vec_set(0)) and once with the vector path, over row lengths
 * 1..67 (every vector tail) and rows of special
 * values: masked (-inf) entries, fully masked rows (NaN rows, as PyTorch),
 * +inf, NaN, huge and subnormal entries. NaN must match NaN, inf the same inf,
 * the rest agree within a few float ulps (the exp / erf / tanh differ from
 * libm's by an ulp or so, and the double sums are added in another order).
 * On a CPU without AVX2 + FMA both runs take the portable path and the maths
 * tests only check that the switch stays off.
 *
 * The fused attention's kernels (the small GEMMs, dot, softmax_row_stats) are
 * also called directly, against double-precision loops (the end of the file;
 * skipped on a CPU without AVX2 + FMA).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "testutil.h"
#include "threads.h"
#include "simd/vec.h"

/* deterministic N(0, 1)-ish values (sum of uniforms), and uniforms in [0, 1) */
static uint64_t rng_state;
static double unif(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / (double)(1ULL << 53);
}
static float randn(void)
{
    double s = 0;
    for (int i = 0; i < 12; i++) s += unif();
    return (float)(s - 6);
}

typedef enum {
    K_SOFTMAX, K_SOFTMAX_SCALED, K_SOFTMAX_NEG, K_LOG_SOFTMAX, K_LN, K_LN_AFFINE, K_GELU,
    K_GELU_TANH, K_COUNT
} kind;
static const char *const kind_name[K_COUNT] = {"softmax", "softmax_scaled",
                                               "softmax_scaled_negative", "log_softmax",
                                               "layer_norm", "layer_norm_affine", "gelu",
                                               "gelu_tanh"};

typedef struct { tg_tensor *y, *dx, *dw, *db; } result;

static void result_free(result *r)
{
    tg_tensor_free(r->y);
    tg_tensor_free(r->dx);
    tg_tensor_free(r->dw);
    tg_tensor_free(r->db);
}

static tg_tensor *clone_or_null(const tg_tensor *t) { return t ? tg_tensor_clone(t) : NULL; }

/* Build op k over x [R, n] (gamma, beta [n] for the affine layer norm), run
 * forward and backward with dy, with the vector path on or off. */
static result run_op(kind k, int64_t R, int64_t n, const float *x, const float *dy,
                     const float *gamma, const float *beta, bool vec)
{
    cr_assert(tg__vec_set(vec ? 1 : 0) || !tg__vec_supported());
    int64_t shape[2] = {R, n};
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *xi = tg_input(g, "x", TG_F32, 2, shape), *w = NULL, *b = NULL, *y = NULL;
    memcpy(tg_node_value(xi)->data, x, (size_t)(R * n) * sizeof *x);
    tg_node_set_requires_grad(xi, true);
    if (k == K_LN_AFFINE) {
        w = tg_input(g, "w", TG_F32, 1, &n);
        b = tg_input(g, "b", TG_F32, 1, &n);
        memcpy(tg_node_value(w)->data, gamma, (size_t)n * sizeof *gamma);
        memcpy(tg_node_value(b)->data, beta, (size_t)n * sizeof *beta);
        tg_node_set_requires_grad(w, true);
        tg_node_set_requires_grad(b, true);
    }
    switch (k) {
    case K_SOFTMAX: y = tg_softmax(g, xi, -1); break;
    case K_SOFTMAX_SCALED: y = tg_softmax_scaled(g, xi, -1, 0.125); break;
    case K_SOFTMAX_NEG: y = tg_softmax_scaled(g, xi, -1, -0.7); break;
    case K_LOG_SOFTMAX: y = tg_log_softmax(g, xi, -1); break;
    case K_LN: y = tg_layer_norm(g, xi, 1, &n, NULL, NULL, 1e-5); break;
    case K_LN_AFFINE: y = tg_layer_norm(g, xi, 1, &n, w, b, 1e-5); break;
    case K_GELU: y = tg_gelu(g, xi, TG_GELU_NONE); break;
    default: y = tg_gelu(g, xi, TG_GELU_TANH); break;
    }
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    tg_tensor *d = tg_tensor_new(TG_F32, 2, shape);
    memcpy(d->data, dy, (size_t)(R * n) * sizeof *dy);
    cr_assert_eq(tg_graph_backward(g, y, d), TG_OK, "%s", tg_last_error());
    result r = {tg_tensor_clone(tg_node_value(y)), tg_tensor_clone(tg_node_grad(xi)),
                w ? clone_or_null(tg_node_grad(w)) : NULL, b ? clone_or_null(tg_node_grad(b)) : NULL};
    tg_tensor_free(d);
    tg_graph_free(g);
    tg__vec_set(-1);
    return r;
}

/* |v - s| <= atol + rtol |s|; NaN matches NaN, an inf the same inf. rows of n. */
static void expect_close(const tg_tensor *vt, const tg_tensor *st, double atol, double rtol,
                         const char *what, kind k, int64_t n)
{
    const float *v = vt->data, *s = st->data;
    cr_assert_eq(vt->numel, st->numel);
    for (int64_t i = 0; i < vt->numel; i++) {
        bool ok;
        if (isnan(s[i]) || isnan(v[i])) ok = isnan(s[i]) && isnan(v[i]);
        else if (isinf(s[i]) || isinf(v[i])) ok = v[i] == s[i];
        else ok = fabs((double)v[i] - s[i]) <= atol + rtol * fabs((double)s[i]);
        cr_assert(ok, "%s %s n=%ld: element %ld (row %ld): vector %.9g, portable %.9g",
                  kind_name[k], what, (long)n, (long)i, (long)(i / n), (double)v[i], (double)s[i]);
    }
}

/* Compare the two paths on x [R, n]; tolerances per op. */
static void compare(kind k, int64_t R, int64_t n, const float *x, const float *dy,
                    const float *gamma, const float *beta)
{
    result s = run_op(k, R, n, x, dy, gamma, beta, false);
    result v = run_op(k, R, n, x, dy, gamma, beta, true);
    /* y: a few ulps (exp, erf within 1-2 ulp of libm's; GELU's erf to ~1e-7
     * absolute, so atol scaled by |x| up to the test's range) */
    double atol = k >= K_GELU ? 4e-7 : 1e-7, rtol = 2e-6;
    expect_close(v.y, s.y, atol, rtol, "forward", k, n);
    expect_close(v.dx, s.dx, k >= K_GELU ? 4e-7 : 2e-6, 1e-5, "dx", k, n);
    if (v.dw) expect_close(v.dw, s.dw, 1e-5, 1e-5, "dgamma", k, n);
    if (v.db) expect_close(v.db, s.db, 1e-5, 1e-5, "dbeta", k, n);
    result_free(&s);
    result_free(&v);
}

#define ROWS 14

/* Row r of the special-value table, n entries. */
static void fill_row(float *x, int r, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        float z = randn();
        switch (r) {
        case 0: x[j] = z; break;
        case 1: x[j] = 30 * z; break;                               /* exp underflows to 0 */
        case 2: x[j] = j % 3 == 1 ? -INFINITY : z; break;           /* masked entries */
        case 3: x[j] = -INFINITY; break;                            /* fully masked: NaN row */
        case 4: x[j] = j == n / 2 ? INFINITY : z; break;            /* +inf: NaN row */
        case 5: x[j] = j == n - 1 ? NAN : z; break;                 /* NaN in the tail */
        case 6: x[j] = j % 2 ? 1e30f * z : -1e30f; break;           /* huge */
        case 7: x[j] = 1e-40f * z; break;                           /* subnormal */
        case 8: x[j] = j == n - 1 ? -INFINITY : z; break;           /* masked tail entry */
        case 9: x[j] = 0.75f; break;                                /* constant row */
        case 10: x[j] = 1e-3f * z; break;
        case 11: x[j] = 95 + z; break;                              /* exp(x) would overflow */
        case 12: x[j] = 1000 + 0.01f * z; break;                    /* layer norm: cancellation */
        default: x[j] = j % 4 == 0 ? -INFINITY : 4 * z; break;
        }
    }
}

static void sweep(kind k)
{
    rng_state = 42 + (uint64_t)k;
    for (int64_t n = 1; n <= 67; n++) {
        float *x = malloc(sizeof(float) * ROWS * (size_t)n), *dy = malloc(sizeof(float) * ROWS * (size_t)n);
        float *gm = malloc(sizeof(float) * (size_t)n), *bt = malloc(sizeof(float) * (size_t)n);
        for (int r = 0; r < ROWS; r++) fill_row(x + r * n, r, n);
        for (int64_t i = 0; i < ROWS * n; i++) dy[i] = randn();
        for (int64_t j = 0; j < n; j++) gm[j] = 1 + 0.5f * randn(), bt[j] = randn();
        compare(k, ROWS, n, x, dy, gm, bt);
        free(x), free(dy), free(gm), free(bt);
    }
}

Test(vec, softmax_lengths_and_specials) { sweep(K_SOFTMAX); }
Test(vec, softmax_scaled_lengths_and_specials) { sweep(K_SOFTMAX_SCALED); }
Test(vec, softmax_scaled_negative_lengths_and_specials) { sweep(K_SOFTMAX_NEG); }
Test(vec, log_softmax_lengths_and_specials) { sweep(K_LOG_SOFTMAX); }
Test(vec, layer_norm_lengths_and_specials) { sweep(K_LN); }
Test(vec, layer_norm_affine_lengths_and_specials) { sweep(K_LN_AFFINE); }
Test(vec, gelu_lengths_and_specials) { sweep(K_GELU); }
Test(vec, gelu_tanh_lengths_and_specials) { sweep(K_GELU_TANH); }

/* GELU's AVX-512 kernels (16 lanes, vec_math.h) give the AVX2 kernels' bits,
 * forward and backward, both forms, over the special-value rows and every
 * length up to 67 (tails of 1..15 lanes); the sweeps above check the values. */
Test(vec, gelu_avx512_same_bits_as_avx2)
{
    if (!tg__vec_supported()) cr_skip_test("the CPU has no AVX2 + FMA");
    if (!tg__vec_set_avx512(1)) cr_skip_test("the CPU has no AVX-512");
    rng_state = 77;
    for (int64_t n = 1; n <= 67; n++) {
        float *x = malloc(sizeof(float) * (size_t)n), *dy = malloc(sizeof(float) * (size_t)n);
        float *y[2], *dx[2];
        for (int w = 0; w < 2; w++)
            y[w] = malloc(sizeof(float) * (size_t)n), dx[w] = malloc(sizeof(float) * (size_t)n);
        for (int r = 0; r < ROWS; r++) {
            fill_row(x, r, n);
            for (int64_t j = 0; j < n; j++) dy[j] = randn();
            for (int form = 0; form < 2; form++) {
                for (int w = 0; w < 2; w++) {
                    cr_assert(tg__vec_set_avx512(w));
                    tg__vec_gelu(x, y[w], n, form);
                    for (int64_t j = 0; j < n; j++) dx[w][j] = 0.5f;
                    tg__vec_gelu_backward(x, dy, dx[w], n, form, r % 2);
                }
                cr_assert(!memcmp(y[0], y[1], sizeof(float) * (size_t)n),
                          "n=%ld row %d form %d: forward differs", (long)n, r, form);
                cr_assert(!memcmp(dx[0], dx[1], sizeof(float) * (size_t)n),
                          "n=%ld row %d form %d: backward differs", (long)n, r, form);
            }
        }
        free(x), free(dy), free(y[0]), free(y[1]), free(dx[0]), free(dx[1]);
    }
    tg__vec_set_avx512(-1);
}

/* The fully masked row really is NaN on the vector path, forward and dx. */
Test(vec, fully_masked_softmax_row_is_nan)
{
    float x[2 * 19], dy[2 * 19];
    for (int j = 0; j < 19; j++) x[j] = -INFINITY, x[19 + j] = (float)j, dy[j] = dy[19 + j] = 1;
    result r = run_op(K_SOFTMAX, 2, 19, x, dy, NULL, NULL, true);
    const float *y = r.y->data, *dx = r.dx->data;
    double s = 0;
    for (int j = 0; j < 19; j++) {
        cr_assert(isnan(y[j]) && isnan(dx[j]), "element %d: y %g dx %g", j, y[j], dx[j]);
        s += y[19 + j];
    }
    cr_assert(fabs(s - 1) < 1e-6, "unmasked row sums to %.9g", s);
    result_free(&r);
}

/* Many rows over the pool: the vector path gives the same bits on 1 and 2
 * threads (a row never splits), and agrees with the portable path. */
Test(vec, threads_same_bits)
{
    const int64_t R = 301, n = 515;
    float *x = malloc(sizeof(float) * R * n), *dy = malloc(sizeof(float) * R * n);
    float *gm = malloc(sizeof(float) * n), *bt = malloc(sizeof(float) * n);
    rng_state = 7;
    for (int64_t i = 0; i < R * n; i++) x[i] = 3 * randn(), dy[i] = randn();
    for (int64_t j = 0; j < n; j++) gm[j] = randn(), bt[j] = randn();
    for (int k = 0; k < K_COUNT; k++) {
        cr_assert_eq(tg_threads_set(1), TG_OK);
        result one = run_op((kind)k, R, n, x, dy, gm, bt, true);
        cr_assert_eq(tg_threads_set(2), TG_OK);
        result two = run_op((kind)k, R, n, x, dy, gm, bt, true);
        cr_assert(memcmp(one.y->data, two.y->data, sizeof(float) * R * n) == 0, "%s y", kind_name[k]);
        cr_assert(memcmp(one.dx->data, two.dx->data, sizeof(float) * R * n) == 0, "%s dx", kind_name[k]);
        if (one.dw) cr_assert(memcmp(one.dw->data, two.dw->data, sizeof(float) * n) == 0);
        result_free(&one);
        result_free(&two);
        compare((kind)k, R, n, x, dy, gm, bt);
    }
    tg_threads_set(0);
    free(x), free(dy), free(gm), free(bt);
}

/* TG_NO_SIMD turns the vector path off (read when the choice is made). */
Test(vec, env_switch)
{
    setenv("TG_NO_SIMD", "1", 1);
    tg__vec_set(-1);
    cr_assert(!tg__vec_on());
    setenv("TG_NO_SIMD", "0", 1);
    tg__vec_set(-1);
    cr_assert_eq(tg__vec_on(), tg__vec_supported());
    unsetenv("TG_NO_SIMD");
    tg__vec_set(-1);
    cr_assert_eq(tg__vec_on(), tg__vec_supported());
    cr_assert(tg__vec_set(0) && !tg__vec_on());
    cr_assert_eq(tg__vec_set(1), tg__vec_supported());
    tg__vec_set(-1);
}

/* The AVX-512 switch (topk's kernels): on only with the vector path and the
 * CPU's AVX-512; TG_NO_AVX512 and tg__vec_set_avx512(0) turn it off. */
Test(vec, avx512_switch)
{
    bool sup = tg__vec_set_avx512(1);                      /* refused if the CPU lacks it */
    cr_assert(!sup || tg__vec_supported());
    tg__vec_set(1);
    cr_assert_eq(tg__vec_avx512_on(), sup);
    cr_assert(tg__vec_set(0) && !tg__vec_avx512_on());     /* needs the vector path */
    tg__vec_set(1);
    cr_assert(tg__vec_set_avx512(0) && !tg__vec_avx512_on());
    setenv("TG_NO_AVX512", "1", 1);
    tg__vec_set_avx512(-1);
    cr_assert(!tg__vec_avx512_on());
    setenv("TG_NO_AVX512", "0", 1);
    tg__vec_set_avx512(-1);
    cr_assert_eq(tg__vec_avx512_on(), sup);
    unsetenv("TG_NO_AVX512");
    tg__vec_set_avx512(-1);
    cr_assert_eq(tg__vec_avx512_on(), sup);
    tg__vec_set(-1);
}

/* ---- the vector maths against libm ---- */

/* distance in ulps between two floats of the same sign class (ordered ints) */
static int64_t ulps(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? -(int64_t)(ia & 0x7fffffff) : ia, ob = ib < 0 ? -(int64_t)(ib & 0x7fffffff) : ib;
    return oa > ob ? oa - ob : ob - oa;
}

#if TG_VEC
enum { CHUNK = 4096 };

/* exp within 2 ulp of expf over every 1021st float (all exponents, both
 * signs, the subnormal-result and overflow ranges) and on the specials. */
Test(vec_math, exp_within_2_ulp)
{
    if (!tg__vec_supported()) return;   /* nothing vector to test on this CPU */
    static float x[CHUNK], y[CHUNK];
    int64_t worst = 0, count = 0;
    float worst_x = 0;
    for (uint64_t b = 0; b < (1ULL << 32);) {
        int n = 0;
        for (; n < CHUNK && b < (1ULL << 32); n++, b += 1021) {
            uint32_t u = (uint32_t)b;
            memcpy(&x[n], &u, 4);
        }
        tg__vec_exp(x, y, n);
        for (int i = 0; i < n; i++) {
            float r = expf(x[i]);
            if (isnan(r)) {
                cr_assert(isnan(y[i]), "exp(%a) = %a, want NaN", x[i], y[i]);
                continue;
            }
            int64_t d = ulps(y[i], r);
            if (d > worst) worst = d, worst_x = x[i];
            count++;
        }
    }
    cr_assert(worst <= 2, "exp: %ld ulp from expf at %a", (long)worst, worst_x);
    cr_assert(count > 4000000);
    float sp[] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, 88.72283172607422f, 88.72283935546875f,
                  -87.33654f, -103.9720840454f, -104.0f, -1e30f, 1e30f, 1e-30f, -1e-45f};
    float out[sizeof sp / sizeof *sp];
    int ns = (int)(sizeof sp / sizeof *sp);
    tg__vec_exp(sp, out, ns);
    cr_assert(out[0] == 0 && !signbit(out[0]), "exp(-inf) = %a", out[0]);
    cr_assert(isinf(out[1]) && out[1] > 0, "exp(inf) = %a", out[1]);
    cr_assert(isnan(out[2]));
    cr_assert(out[3] == 1 && out[4] == 1);
    for (int i = 5; i < ns; i++)
        cr_assert(ulps(out[i], expf(sp[i])) <= 2, "exp(%a) = %a, expf %a", sp[i], out[i], expf(sp[i]));
}

/* erf within 1.5e-7 absolute of double erf() on [-10, 10]; the specials exact */
Test(vec_math, erf_accuracy)
{
    if (!tg__vec_supported()) return;
    static float x[CHUNK], y[CHUNK];
    double worst = 0;
    float worst_x = 0;
    for (int c = 0; c < 256; c++) {
        for (int i = 0; i < CHUNK; i++) x[i] = -10.0f + 20.0f * (float)(c * CHUNK + i) / (256.0f * CHUNK);
        tg__vec_erf(x, y, CHUNK - c % 8);   /* tails too */
        for (int i = 0; i < CHUNK - c % 8; i++) {
            double e = fabs((double)y[i] - erf((double)x[i]));
            if (e > worst) worst = e, worst_x = x[i];
        }
    }
    cr_assert(worst <= 1.5e-7, "erf: %g from erf() at %.9g", worst, worst_x);
    float sp[] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, 1e-40f, -1e-30f, 4.0f, -100.0f};
    float out[9];
    tg__vec_erf(sp, out, 9);
    cr_assert(out[0] == -1 && out[1] == 1 && isnan(out[2]));
    cr_assert(out[3] == 0 && !signbit(out[3]) && out[4] == 0 && signbit(out[4]));
    for (int i = 5; i < 9; i++)
        cr_assert(ulps(out[i], erff(sp[i])) <= 1, "erf(%a) = %a, erff %a", sp[i], out[i], erff(sp[i]));
}

/* tanh within 3 ulp of tanhf on [-12, 12]; the specials exact */
Test(vec_math, tanh_accuracy)
{
    if (!tg__vec_supported()) return;
    static float x[CHUNK], y[CHUNK];
    int64_t worst = 0;
    float worst_x = 0;
    for (int c = 0; c < 256; c++) {
        for (int i = 0; i < CHUNK; i++) x[i] = -12.0f + 24.0f * (float)(c * CHUNK + i) / (256.0f * CHUNK);
        tg__vec_tanh(x, y, CHUNK);
        for (int i = 0; i < CHUNK; i++) {
            int64_t d = ulps(y[i], tanhf(x[i]));
            if (d > worst) worst = d, worst_x = x[i];
        }
    }
    cr_assert(worst <= 3, "tanh: %ld ulp from tanhf at %.9g", (long)worst, worst_x);
    float sp[] = {-INFINITY, INFINITY, NAN, 0.0f, -0.0f, 1e-40f, 30.0f};
    float out[7];
    tg__vec_tanh(sp, out, 7);
    cr_assert(out[0] == -1 && out[1] == 1 && isnan(out[2]));
    cr_assert(out[3] == 0 && !signbit(out[3]) && out[4] == 0 && signbit(out[4]));
    cr_assert(out[5] == 1e-40f && out[6] == 1);
}
#else
Test(vec_math, no_vector_path)
{
    cr_assert(!tg__vec_supported() && !tg__vec_set(1) && !tg__vec_on());
}
#endif

/* ---- the fused attention's kernels, called directly, against double loops ----
 * tg__vec_gemm_small (A strided either way, B row-major), tg__vec_gemm_nt_small
 * (A B^T, depth contiguous), tg__vec_dot and tg__vec_softmax_row_stats, which
 * tg_sdpa reaches only for some shapes. Every storage cell a kernel must not
 * read holds NaN (A's and B's padding, C when beta == 0, the floats past a
 * row's end), and every cell it must not write holds a sentinel that has to
 * come back bit for bit (C's padding columns when ldc > N, a guard after C). */
#if TG_VEC
#define NEED_VEC()                                                                      \
    do {                                                                                \
        if (!tg__vec_supported())                                                       \
            cr_skip_test("this CPU lacks AVX2 + FMA: the vector kernels cannot run");   \
    } while (0)

#define C_GUARD 11                  /* floats after C's last row that must stay untouched */
static const float SENTINEL = -31415.9f;

/* n floats of NaN (a valid pointer for n == 0 too) */
static float *nan_floats(int64_t n)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    cr_assert(p);
    for (int64_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* One product C = alpha A B + beta C as the kernels see it: A(i, p) =
 * A[i * ars + p * acs], B(p, j) = B[p * brs + j * bcs], C [M, N] with row
 * stride ldc. */
typedef struct {
    const char *kernel;
    int64_t     M, N, K, ars, acs, brs, bcs, ldc;
    float       alpha, beta;
} mm_case;

/* C (after the call) against the double product from A, B and C0 (C before
 * it): each entry within 1e-5 of the sum of its terms' magnitudes (the float
 * FMA chain's error), exactly 0 when there are none; the padding and the
 * guard bit for bit as in C0. */
static void mm_check(const mm_case *s, const float *A, const float *B, const float *C0,
                     const float *C)
{
    for (int64_t i = 0; i < s->M; i++) {
        for (int64_t j = 0; j < s->N; j++) {
            double acc = 0, mag = 0;
            for (int64_t p = 0; p < s->K; p++) {
                double t = (double)A[i * s->ars + p * s->acs] * B[p * s->brs + j * s->bcs];
                acc += t;
                mag += fabs(t);
            }
            double want = s->alpha * acc, bound = fabs((double)s->alpha) * mag;
            const double c0 = C0[i * s->ldc + j];
            if (s->beta != 0) want += s->beta * c0, bound += fabs(s->beta * c0);
            const float got = C[i * s->ldc + j];
            if (!(isfinite(got) && fabs(got - want) <= 1e-5 * bound))
                cr_assert_fail("%s M=%ld N=%ld K=%ld alpha=%g beta=%g ldc=%ld: C[%ld][%ld] = "
                               "%.9g, want %.9g (bound %.3g)", s->kernel, (long)s->M,
                               (long)s->N, (long)s->K, s->alpha, s->beta, (long)s->ldc,
                               (long)i, (long)j, got, want, 1e-5 * bound);
        }
        for (int64_t j = s->N; j < s->ldc; j++)
            if (memcmp(&C[i * s->ldc + j], &C0[i * s->ldc + j], sizeof(float)))
                cr_assert_fail("%s M=%ld N=%ld K=%ld ldc=%ld: padding C[%ld][%ld] written "
                               "(%.9g)", s->kernel, (long)s->M, (long)s->N, (long)s->K,
                               (long)s->ldc, (long)i, (long)j, C[i * s->ldc + j]);
    }
    for (int64_t g = 0; g < C_GUARD; g++)
        if (memcmp(&C[s->M * s->ldc + g], &C0[s->M * s->ldc + g], sizeof(float)))
            cr_assert_fail("%s M=%ld N=%ld K=%ld ldc=%ld: wrote %ld floats past C's last row",
                           s->kernel, (long)s->M, (long)s->N, (long)s->K, (long)s->ldc,
                           (long)g + 1);
}

/* C storage [M, ldc] plus the guard: the sentinel everywhere, then the M x N
 * entries NaN (beta == 0: they must not be read) or random; C0 a copy. */
static void mm_fill_c(const mm_case *s, float **C, float **C0)
{
    const int64_t total = s->M * s->ldc + C_GUARD;
    *C = nan_floats(total);
    *C0 = nan_floats(total);
    for (int64_t k = 0; k < total; k++) (*C)[k] = SENTINEL;
    for (int64_t i = 0; i < s->M; i++)
        for (int64_t j = 0; j < s->N; j++) (*C)[i * s->ldc + j] = s->beta == 0 ? NAN : randn();
    memcpy(*C0, *C, sizeof(float) * (size_t)total);
}

/* tg__vec_gemm_small: A row-major [M, K] (lda = K + pad: rs = lda, cs = 1) or
 * stored transposed [K, M] (lda = M + pad: rs = 1, cs = lda); B [K, N] with
 * ldb = N + pad; C with ldc = N + pad. */
static void gemm_small_case(int64_t M, int64_t N, int64_t K, float alpha, float beta, bool ta,
                            int64_t pad)
{
    const int64_t lda = (ta ? M : K) + pad, ldb = N + pad;
    mm_case s = {"gemm_small", M, N, K, ta ? 1 : lda, ta ? lda : 1, ldb, 1, N + pad, alpha, beta};
    float *A = nan_floats((ta ? K : M) * lda), *B = nan_floats(K * ldb), *C, *C0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t p = 0; p < K; p++) A[i * s.ars + p * s.acs] = randn();
    for (int64_t p = 0; p < K; p++)
        for (int64_t j = 0; j < N; j++) B[p * ldb + j] = randn();
    mm_fill_c(&s, &C, &C0);
    tg__vec_gemm_small(M, N, K, alpha, A, s.ars, s.acs, B, ldb, beta, C, s.ldc);
    mm_check(&s, A, B, C0, C);
    free(A), free(B), free(C), free(C0);
}

/* tg__vec_gemm_nt_small: A [M, K] (lda = K + pad), B [N, K] (ldb = K + pad + 1),
 * C with ldc = N + pad. */
static void gemm_nt_case(int64_t M, int64_t N, int64_t K, float alpha, float beta, int64_t pad)
{
    const int64_t lda = K + pad, ldb = K + pad + 1;
    mm_case s = {"gemm_nt_small", M, N, K, lda, 1, 1, ldb, N + pad, alpha, beta};
    float *A = nan_floats(M * lda), *B = nan_floats(N * ldb), *C, *C0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t p = 0; p < K; p++) A[i * lda + p] = randn();
    for (int64_t j = 0; j < N; j++)
        for (int64_t p = 0; p < K; p++) B[j * ldb + p] = randn();
    mm_fill_c(&s, &C, &C0);
    tg__vec_gemm_nt_small(M, N, K, alpha, A, lda, B, ldb, beta, C, s.ldc);
    mm_check(&s, A, B, C0, C);
    free(A), free(B), free(C), free(C0);
}

/* M 1..9 (odd: a lone last row), N 1..70 (every tail 1..7 of the 8-wide
 * vectors, one and three passes of 32 columns), depths around the 8-lane
 * steps; each with beta 0 (C NaN) and beta != 0, A in both layouts, padded
 * and unpadded. */
Test(vec_kernels, gemm_small_shapes)
{
    NEED_VEC();
    rng_state = 11;
    static const int64_t depths[] = {0, 1, 3, 8, 13, 40};
    for (int64_t M = 1; M <= 9; M++)
        for (int64_t N = 1; N <= 70; N++)
            for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
                const int64_t K = depths[d];
                const float alpha = (M + N) % 2 ? 1.5f : -0.625f;
                for (int ta = 0; ta < 2; ta++) {
                    const int64_t pad = (N + K + ta) % 3 * 2;   /* 0, 2 or 4 */
                    gemm_small_case(M, N, K, alpha, 0, ta, pad);
                    gemm_small_case(M, N, K, alpha, ta ? 0.5f : -2.0f, ta, pad);
                }
            }
}

/* every depth 0..40 on a few shapes */
Test(vec_kernels, gemm_small_depths)
{
    NEED_VEC();
    rng_state = 12;
    static const int64_t shapes[][2] = {{1, 1}, {2, 7}, {3, 32}, {5, 33}, {4, 64}, {7, 39},
                                        {9, 70}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int64_t K = 0; K <= 40; K++)
            for (int ta = 0; ta < 2; ta++) {
                gemm_small_case(shapes[s][0], shapes[s][1], K, 0.75f, 0, ta, 3);
                gemm_small_case(shapes[s][0], shapes[s][1], K, -1.25f, 1.5f, ta, 0);
            }
}

/* M 1..9, N 1..70 (blocks of 4 columns and their 1..3 remainders), depth 0,
 * 1..9, and around 16, 24, 32, 40 (the masked last depth step and none) */
Test(vec_kernels, gemm_nt_small_shapes)
{
    NEED_VEC();
    rng_state = 13;
    static const int64_t depths[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 24, 31, 33, 40};
    for (int64_t M = 1; M <= 9; M++)
        for (int64_t N = 1; N <= 70; N++)
            for (size_t d = 0; d < sizeof depths / sizeof *depths; d++) {
                const int64_t K = depths[d], pad = (M + N + K) % 3 * 3;   /* 0, 3 or 6 */
                const float alpha = (M + K) % 2 ? 0.375f : -1.75f;
                gemm_nt_case(M, N, K, alpha, 0, pad);
                gemm_nt_case(M, N, K, alpha, N % 2 ? 0.25f : -3.0f, pad);
            }
}

/* every depth 0..40 on a few shapes */
Test(vec_kernels, gemm_nt_small_depths)
{
    NEED_VEC();
    rng_state = 14;
    static const int64_t shapes[][2] = {{1, 1}, {2, 4}, {3, 5}, {8, 7}, {9, 64}, {5, 70}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int64_t K = 0; K <= 40; K++) {
            gemm_nt_case(shapes[s][0], shapes[s][1], K, 2.5f, 0, 1);
            gemm_nt_case(shapes[s][0], shapes[s][1], K, -0.5f, 0.75f, 0);
        }
}

/* sum x y in double: within 1e-12 of the double loop relative to sum |x y|
 * (the products are exact in double; only the order of the additions
 * differs); NaN past the end is not read; a NaN inside gives NaN. */
/* tg__vec_transpose_small: bt [K, N] = B's first K columns transposed, for
 * N a multiple of 8 and depths on both sides of a vector band; B's columns
 * past K hold NaN (not to be read into bt), and bt's guard must stay. */
Test(vec_kernels, transpose_small)
{
    NEED_VEC();
    const int64_t Ns[] = {8, 16, 32, 64}, ldb = 24;
    for (size_t a = 0; a < sizeof Ns / sizeof Ns[0]; a++)
        for (int64_t K = 1; K <= 20; K++) {
            const int64_t N = Ns[a];
            float *B = nan_floats(N * ldb), *bt = malloc(sizeof(float) * (size_t)(K * N + C_GUARD));
            cr_assert(bt);
            for (int64_t j = 0; j < N; j++)
                for (int64_t q = 0; q < K; q++) B[j * ldb + q] = (float)(j * 100 + q);
            for (int64_t i = 0; i < K * N + C_GUARD; i++) bt[i] = SENTINEL;
            tg__vec_transpose_small(B, ldb, N, K, bt);
            for (int64_t q = 0; q < K; q++)
                for (int64_t j = 0; j < N; j++)
                    cr_assert_eq(bt[q * N + j], (float)(j * 100 + q), "N %lld K %lld: [%lld, %lld]",
                                 (long long)N, (long long)K, (long long)q, (long long)j);
            for (int64_t i = K * N; i < K * N + C_GUARD; i++)
                cr_assert_eq(bt[i], SENTINEL, "N %lld K %lld: guard overwritten", (long long)N,
                             (long long)K);
            free(B);
            free(bt);
        }
}

Test(vec_kernels, dot)
{
    NEED_VEC();
    rng_state = 15;
    static const int64_t lengths[] = {127, 128, 129, 515};
    for (int64_t t = 1; t <= 70 + 4; t++) {
        const int64_t n = t <= 70 ? t : lengths[t - 71];
        float *x = nan_floats(n + 8), *y = nan_floats(n + 8);
        for (int64_t i = 0; i < n; i++) {
            x[i] = randn() * (t % 3 ? 1.0f : 1e4f);
            y[i] = randn() * (t % 5 ? 1.0f : 1e-3f);
        }
        double want = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            want += (double)x[i] * y[i];
            mag += fabs((double)x[i] * y[i]);
        }
        const double got = tg__vec_dot(x, y, n);
        cr_assert(fabs(got - want) <= 1e-12 * mag, "dot n=%ld: %.17g, want %.17g", (long)n, got,
                  want);
        x[n - 1] = NAN;
        cr_assert(isnan(tg__vec_dot(x, y, n)), "dot n=%ld: NaN in the last entry", (long)n);
        free(x), free(y);
    }
}

/* softmax_row_stats over the special-value rows, n 1..70, four scales:
 *  - given=false writes the stats; its y is tg__vec_softmax_row's, bit for bit;
 *  - given=true with those stats rebuilds y bit for bit and leaves them alone;
 *  - max equals the reference max(scale * x) (NaN skipped) exactly, 1 / sum
 *    agrees with the double reference within 1e-6 relative (NaN when the
 *    reference is: a NaN or +inf entry, a fully masked row);
 *  - y agrees with exp(z - max) / sum in double (all NaN on a NaN row). */
static void softmax_row_stats_check(void);

/* on the AVX2 path and, where the CPU has it, the AVX-512 one (rows over 8) */
Test(vec_kernels, softmax_row_stats)
{
    NEED_VEC();
    for (int wide = 0; wide < 2; wide++) {
        if (!tg__vec_set_avx512(wide)) continue;   /* no AVX-512: the AVX2 pass only */
        softmax_row_stats_check();
    }
    tg__vec_set_avx512(-1);
}

static void softmax_row_stats_check(void)
{
    rng_state = 16;
    static const float scales[] = {1.0f, 0.125f, -0.7f, 3.0f};
    for (int64_t n = 1; n <= 70; n++) {
        float *x = nan_floats(n + 8), *y0 = nan_floats(n + 8), *y1 = nan_floats(n + 8);
        float *y2 = nan_floats(n + 8);
        for (int r = 0; r < ROWS; r++) {
            fill_row(x, r, n);   /* x[n..n+8) stay NaN: must not be read */
            for (size_t k = 0; k < sizeof scales / sizeof *scales; k++) {
                const float sc = scales[k];
                float m = 12345.0f;
                double rs = 12345.0;
                tg__vec_softmax_row_stats(x, y1, n, sc, &m, &rs, false);
                tg__vec_softmax_row(x, y0, n, sc);
                cr_assert(!memcmp(y0, y1, sizeof(float) * (size_t)n),
                          "n=%ld row %d scale %g: stats(given=false) differs from softmax_row",
                          (long)n, r, sc);
                float m2 = m;
                double rs2 = rs;
                tg__vec_softmax_row_stats(x, y2, n, sc, &m2, &rs2, true);
                cr_assert(!memcmp(y1, y2, sizeof(float) * (size_t)n),
                          "n=%ld row %d scale %g: given=true does not rebuild y", (long)n, r, sc);
                cr_assert(!memcmp(&m, &m2, sizeof m) && !memcmp(&rs, &rs2, sizeof rs),
                          "n=%ld row %d scale %g: given=true changed the stats", (long)n, r, sc);
                for (int64_t j = n; j < n + 8; j++)
                    cr_assert(isnan(y1[j]) && isnan(y2[j]), "n=%ld: wrote y[%ld]", (long)n,
                              (long)j);
                /* the reference */
                float want_m = -INFINITY;
                for (int64_t j = 0; j < n; j++) {
                    const float z = sc * x[j];
                    if (z > want_m) want_m = z;
                }
                cr_assert(m == want_m, "n=%ld row %d scale %g: max %.9g, want %.9g", (long)n,
                          r, sc, m, want_m);
                double sum = 0;
                for (int64_t j = 0; j < n; j++) sum += exp((double)(sc * x[j]) - want_m);
                const double want_rs = 1.0 / sum;
                if (isnan(want_rs)) {
                    cr_assert(isnan(rs), "n=%ld row %d scale %g: 1/sum %.17g, want NaN",
                              (long)n, r, sc, rs);
                    for (int64_t j = 0; j < n; j++)
                        cr_assert(isnan(y1[j]), "n=%ld row %d: y[%ld] = %g on a NaN row",
                                  (long)n, r, (long)j, y1[j]);
                    continue;
                }
                cr_assert(fabs(rs - want_rs) <= 1e-6 * want_rs,
                          "n=%ld row %d scale %g: 1/sum %.17g, want %.17g", (long)n, r, sc, rs,
                          want_rs);
                for (int64_t j = 0; j < n; j++) {
                    const double want_y = exp((double)(sc * x[j]) - want_m) * want_rs;
                    cr_assert(fabs(y1[j] - want_y) <= 1e-9 + 4e-6 * want_y,
                              "n=%ld row %d scale %g: y[%ld] = %.9g, want %.9g", (long)n, r, sc,
                              (long)j, y1[j], want_y);
                }
            }
        }
        free(x), free(y0), free(y1), free(y2);
    }
}
#endif

/* tg__vec_dropout against the scalar mask of tg__drop_bits, bit for bit, in
 * its three modes: lengths 0..40 (every tail), element offsets that put the
 * 2^32 boundary of the counter's low word inside a vector, thresholds from
 * keep-all to keep-nearly-none, and NaN kept through a dropped element. */
Test(vec_kernels, dropout_matches_the_scalar_mask)
{
    NEED_VEC();
    rng_state = 17;
    const int64_t offsets[] = {0, 5, 1000003, ((int64_t)1 << 32) - 13, ((int64_t)1 << 32) - 3,
                               ((int64_t)3 << 32) + 7};
    const uint64_t thresholds[] = {0, 1, 429496730, 2147483648u, 4294967295u};
    const uint64_t keys[] = {0x0123456789abcdefu, 0xfedcba9876543210u};
    float src[40], dst[40], want[40], base[40];
    for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++)
        for (size_t t = 0; t < sizeof thresholds / sizeof *thresholds; t++)
            for (size_t k = 0; k < 2; k++)
                for (int64_t n = 0; n <= 40; n++)
                    for (int mode = 0; mode < 3; mode++) {
                        for (int64_t i = 0; i < 40; i++) src[i] = randn(), base[i] = randn();
                        src[n / 2] = NAN;
                        const float scale = 1.25f;
                        for (int64_t i = 0; i < 40; i++) {
                            bool keep = tg__drop_bits(keys[k], offsets[o] + i) >= thresholds[t];
                            float v = src[i] * (keep ? scale : 0.0f);
                            want[i] = i >= n ? base[i] : mode == 0 ? v
                                                      : mode == 1 ? base[i] + v : 0.0f + v;
                        }
                        memcpy(dst, base, sizeof dst);
                        tg__vec_dropout(src, dst, n, offsets[o], keys[k], thresholds[t], scale,
                                        mode);
                        for (int64_t i = 0; i < 40; i++)
                            cr_assert(memcmp(&dst[i], &want[i], sizeof(float)) == 0 ||
                                          (isnan(dst[i]) && isnan(want[i])),
                                      "offset %lld threshold %llu n %lld mode %d at %lld: %g vs %g",
                                      (long long)offsets[o], (unsigned long long)thresholds[t],
                                      (long long)n, mode, (long long)i, dst[i], want[i]);
                    }
}
