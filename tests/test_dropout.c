/*
 * test_dropout.c - dropout by its invariants (PyTorch's random bits cannot be
 * reproduced): every output is 0 or x/(1-p), the kept fraction is about 1-p,
 * same seed same mask, each forward a fresh mask, the backward uses the
 * forward's mask, p = 1 zeros, p = 0 and eval are the identity without
 * touching the RNG, gradcheck in training mode; bad p.
 */
#include "testutil.h"

#include <math.h>
#include <string.h>

#define N_BIG 200000

typedef struct {
    tg_graph *g;
    tg_node  *x, *y;
} drop_graph;

static drop_graph make(tg_dtype dt, int64_t n, double p, bool training, uint64_t seed)
{
    drop_graph d;
    d.g = tg_graph_new(dt);
    d.x = tg_input(d.g, "x", dt, 1, (int64_t[]){n});
    tt_randn((tg_tensor *)tg_node_value(d.x), 11);
    cr_assert(tg_node_set_requires_grad(d.x, true) == TG_OK);
    tg_graph_set_training(d.g, training);
    tg_graph_seed(d.g, seed);
    d.y = tg_dropout(d.g, d.x, p);
    cr_assert(d.y, "%s", tg_graph_error(d.g));
    return d;
}

Test(dropout, outputs_and_kept_fraction)
{
    const double ps[3] = {0.1, 0.3, 0.75};
    for (int k = 0; k < 3; k++) {
        double p = ps[k];
        drop_graph d = make(TG_F32, N_BIG, p, true, 5);
        cr_assert(tg_graph_forward(d.g) == TG_OK, "%s", tg_last_error());
        const float *x = tg_node_value(d.x)->data, *y = tg_node_value(d.y)->data;
        float scale = (float)(1.0 / (1.0 - p));
        int64_t kept = 0;
        for (int64_t i = 0; i < N_BIG; i++) {
            if (y[i] == 0 && x[i] != 0) continue;
            cr_assert_eq(y[i], x[i] * scale, "p=%g: y[%lld] = %g, x = %g", p, (long long)i,
                         y[i], x[i]);
            kept++;
        }
        double frac = (double)kept / N_BIG, sd = sqrt(p * (1 - p) / N_BIG);
        cr_expect(fabs(frac - (1 - p)) < 5 * sd, "p=%g: kept %.5f, expected %.5f +- %.5f", p, frac,
                  1 - p, 5 * sd);
        tg_graph_free(d.g);
    }
}

static float *copy_out(const tg_node *n)
{
    const tg_tensor *t = tg_node_value(n);
    float *c = malloc((size_t)t->numel * sizeof *c);
    memcpy(c, t->data, (size_t)t->numel * sizeof *c);
    return c;
}

Test(dropout, same_seed_same_mask_new_mask_each_forward)
{
    drop_graph a = make(TG_F32, 4096, 0.5, true, 42), b = make(TG_F32, 4096, 0.5, true, 42),
               c = make(TG_F32, 4096, 0.5, true, 43);
    cr_assert(tg_graph_forward(a.g) == TG_OK && tg_graph_forward(b.g) == TG_OK &&
              tg_graph_forward(c.g) == TG_OK);
    float *ya = copy_out(a.y);
    cr_expect(memcmp(ya, tg_node_value(b.y)->data, 4096 * sizeof(float)) == 0,
              "same seed, different mask");
    cr_expect(memcmp(ya, tg_node_value(c.y)->data, 4096 * sizeof(float)) != 0,
              "different seeds, same mask");
    cr_assert(tg_graph_forward(a.g) == TG_OK);
    cr_expect(memcmp(ya, tg_node_value(a.y)->data, 4096 * sizeof(float)) != 0,
              "the second forward reused the mask");
    free(ya);
    tg_graph_free(a.g);
    tg_graph_free(b.g);
    tg_graph_free(c.g);
}

/* The mask is a function of (seed, element): 1 and 2 threads draw the same one,
 * and neighbouring elements are not correlated (the counter-based stream). */
Test(dropout, mask_independent_of_threads)
{
    int before = tg_threads_get();
    float *y[2];
    for (int t = 1; t <= 2; t++) {
        cr_assert(tg_threads_set(t) == TG_OK);
        drop_graph d = make(TG_F32, N_BIG, 0.5, true, 77);
        cr_assert(tg_graph_forward(d.g) == TG_OK);
        y[t - 1] = copy_out(d.y);
        tg_graph_free(d.g);
    }
    cr_assert(tg_threads_set(before) == TG_OK);
    cr_expect(memcmp(y[0], y[1], N_BIG * sizeof(float)) == 0, "the mask depends on the threads");
    /* P(both of a pair kept) = 1/4 for independent draws */
    int64_t both = 0;
    for (int64_t i = 0; i + 1 < N_BIG; i += 2) both += y[0][i] != 0 && y[0][i + 1] != 0;
    double frac = (double)both / (N_BIG / 2), sd = sqrt(0.25 * 0.75 / (N_BIG / 2));
    cr_expect(fabs(frac - 0.25) < 5 * sd, "pairs kept together: %.4f", frac);
    free(y[0]);
    free(y[1]);
}

/* dx = dy * keep / (1-p) with the keep of the forward that ran before. */
Test(dropout, gradient_uses_the_forward_mask)
{
    double p = 0.4;
    drop_graph d = make(TG_F32, 10000, p, true, 9);
    tg_tensor *dy = tg_tensor_new(TG_F32, 1, (int64_t[]){10000});
    tt_randn(dy, 3);
    cr_assert(tg_graph_forward(d.g) == TG_OK);
    float *y = copy_out(d.y);
    /* the RNG moves on between forward and backward: the mask must not */
    tg_graph_seed(d.g, 12345);
    cr_assert(tg_graph_backward(d.g, d.y, dy) == TG_OK, "%s", tg_last_error());
    const float *x = tg_node_value(d.x)->data, *dx = tg_node_grad(d.x)->data,
                *g = dy->data;
    float scale = (float)(1.0 / (1.0 - p));
    int64_t kept = 0;
    for (int64_t i = 0; i < 10000; i++) {
        bool keep = y[i] != 0 || x[i] == 0;
        kept += keep;
        cr_assert_eq(dx[i], keep ? g[i] * scale : 0.0f, "dx[%lld]", (long long)i);
    }
    cr_expect(kept > 5000 && kept < 7000);
    free(y);
    tg_tensor_free(dy);
    tg_graph_free(d.g);
}

Test(dropout, p_one_gives_zeros)
{
    drop_graph d = make(TG_F32, 1000, 1.0, true, 1);
    tg_tensor *dy = tg_tensor_new(TG_F32, 1, (int64_t[]){1000});
    tt_randn(dy, 3);
    cr_assert(tg_graph_forward(d.g) == TG_OK && tg_graph_backward(d.g, d.y, dy) == TG_OK);
    const float *y = tg_node_value(d.y)->data, *dx = tg_node_grad(d.x)->data;
    for (int i = 0; i < 1000; i++) {
        cr_assert_eq(y[i], 0.0f);
        cr_assert_eq(dx[i], 0.0f);
    }
    /* PyTorch multiplies: an infinite input becomes NaN */
    ((float *)tg_node_value(d.x)->data)[0] = INFINITY;
    cr_assert(tg_graph_forward(d.g) == TG_OK);
    cr_expect(isnan(((const float *)tg_node_value(d.y)->data)[0]));
    tg_tensor_free(dy);
    tg_graph_free(d.g);
}

/* p = 0 in training and any p in eval: y = x, dx = dy, RNG untouched. */
Test(dropout, identity_without_rng)
{
    struct { double p; bool training; } modes[3] = {{0.0, true}, {0.5, false}, {1.0, false}};
    for (int k = 0; k < 3; k++) {
        drop_graph d = make(TG_F32, 777, modes[k].p, modes[k].training, 8);
        tg_rng before = *tg_graph_rng(d.g);
        tg_tensor *dy = tg_tensor_new(TG_F32, 1, (int64_t[]){777});
        tt_randn(dy, 3);
        cr_assert(tg_graph_forward(d.g) == TG_OK && tg_graph_backward(d.g, d.y, dy) == TG_OK);
        cr_expect(memcmp(&before, tg_graph_rng(d.g), sizeof before) == 0, "RNG moved");
        cr_expect(memcmp(tg_node_value(d.y)->data, tg_node_value(d.x)->data, 777 * 4) == 0);
        cr_expect(memcmp(tg_node_grad(d.x)->data, dy->data, 777 * 4) == 0);
        tg_tensor_free(dy);
        tg_graph_free(d.g);
    }
}

/* One graph serves both: the flag is read at every forward. */
Test(dropout, train_then_eval_on_one_graph)
{
    drop_graph d = make(TG_F32, 2000, 0.5, true, 4);
    cr_assert(tg_graph_forward(d.g) == TG_OK);
    int zeros = 0;
    for (int i = 0; i < 2000; i++) zeros += ((const float *)tg_node_value(d.y)->data)[i] == 0;
    cr_expect(zeros > 800);
    tg_graph_set_training(d.g, false);
    cr_assert(tg_graph_forward(d.g) == TG_OK);
    cr_expect(memcmp(tg_node_value(d.y)->data, tg_node_value(d.x)->data, 2000 * 4) == 0);
    /* the backward after an eval forward is the identity too */
    tg_tensor *dy = tg_tensor_new(TG_F32, 1, (int64_t[]){2000});
    tt_randn(dy, 3);
    cr_assert(tg_graph_backward(d.g, d.y, dy) == TG_OK);
    cr_expect(memcmp(tg_node_grad(d.x)->data, dy->data, 2000 * 4) == 0);
    tg_tensor_free(dy);
    tg_graph_free(d.g);
}

/* tg_gradcheck resets the graph RNG before each evaluation, so the mask is
 * the same in every probe and dropout is checkable in training mode. */
Test(dropout, gradcheck_in_training)
{
    drop_graph d = make(TG_F64, 60, 0.4, true, 2);
    tg_node *z = tg_mul(d.g, d.y, d.x);   /* a nonlinear use: x * dropout(x) */
    cr_assert(z);
    cr_assert_eq(tt_gradcheck(d.g, z, 3), 1);
    /* and the mask did drop something */
    cr_assert(tg_graph_forward(d.g) == TG_OK);
    int zeros = 0;
    for (int i = 0; i < 60; i++) zeros += ((const double *)tg_node_value(d.y)->data)[i] == 0;
    cr_expect(zeros > 5 && zeros < 50, "%d of 60 dropped", zeros);
    tg_graph_free(d.g);
}

/* ---- bad input (OPS.md 19: dropout) ---- */

Test(dropout_errors, p_outside_0_1_or_nan)
{
    const double bad[3] = {1.5, -0.5, NAN};
    const char *msg[3] = {"dropout probability has to be between 0 and 1, but got 1.5",
                          "dropout probability has to be between 0 and 1, but got -0.5",
                          "dropout probability has to be between 0 and 1, but got nan"};
    for (int k = 0; k < 3; k++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){4});
        cr_assert_null(tg_dropout(g, x, bad[k]));
        tt_assert_graph_error(g, msg[k]);
        tg_graph_free(g);
    }
}

Test(dropout_errors, integer_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "i", TG_I64, 1, (int64_t[]){4});
    cr_assert_null(tg_dropout(g, x, 0.5));
    tt_assert_graph_error(g, "dropout: input must be float32, got int64");
    tg_graph_free(g);
}
