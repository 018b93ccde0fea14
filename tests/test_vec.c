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
 * The fused attention's kernels, called directly: test_vec_kernels.c.
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
#include "vec_rows.h"

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

static void sweep(kind k)
{
    tt_vec_rng_state = 42 + (uint64_t)k;
    for (int64_t n = 1; n <= 67; n++) {
        float *x = malloc(sizeof(float) * ROWS * (size_t)n), *dy = malloc(sizeof(float) * ROWS * (size_t)n);
        float *gm = malloc(sizeof(float) * (size_t)n), *bt = malloc(sizeof(float) * (size_t)n);
        for (int r = 0; r < ROWS; r++) tt_vec_fill_row(x + r * n, r, n);
        for (int64_t i = 0; i < ROWS * n; i++) dy[i] = tt_vec_randn();
        for (int64_t j = 0; j < n; j++) gm[j] = 1 + 0.5f * tt_vec_randn(), bt[j] = tt_vec_randn();
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
    tt_vec_rng_state = 77;
    for (int64_t n = 1; n <= 67; n++) {
        float *x = malloc(sizeof(float) * (size_t)n), *dy = malloc(sizeof(float) * (size_t)n);
        float *y[2], *dx[2];
        for (int w = 0; w < 2; w++)
            y[w] = malloc(sizeof(float) * (size_t)n), dx[w] = malloc(sizeof(float) * (size_t)n);
        for (int r = 0; r < ROWS; r++) {
            tt_vec_fill_row(x, r, n);
            for (int64_t j = 0; j < n; j++) dy[j] = tt_vec_randn();
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
    tt_vec_rng_state = 7;
    for (int64_t i = 0; i < R * n; i++) x[i] = 3 * tt_vec_randn(), dy[i] = tt_vec_randn();
    for (int64_t j = 0; j < n; j++) gm[j] = tt_vec_randn(), bt[j] = tt_vec_randn();
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
