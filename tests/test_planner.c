/*
 * test_planner.c - the memory plan: values and gradients sharing memory by
 * lifetime (forward-only graphs, training with shared values), recomputed
 * values and chains of them, gradients and values written in place, kept
 * values; every plan gives the default plan's bits, and a random-graph
 * property test checks that on graphs nobody wrote by hand.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"

/* ---- the planner shares memory between buffers whose lifetimes do not overlap ---- */

static tg_node *chain(tg_graph *g, tg_node *x, int depth, tg_node **mid)
{
    tg_node *h = x;
    for (int i = 0; i < depth; i++) {
        h = tg_add(g, tg_scale(g, h, 0.9), tg_square(g, tg_scale(g, h, 0.1)));
        if (i == depth / 2 && mid) *mid = h;
    }
    return tg_sum(g, h, NULL, 0, false);
}

Test(planner, forward_only_graphs_reuse_values)
{
    const int64_t n = 4096, depth = 20;
    size_t one = (size_t)n * sizeof(float);
    double want = 0;
    for (int pass = 0; pass < 2; pass++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
        tg_node *y = chain(g, x, (int)depth, NULL);
        if (pass == 1) tg_graph_set_grad_enabled(g, false);
        tt_randn((tg_tensor *)tg_node_value(x), 5);
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        double got = tg_tensor_get(tg_node_value(y), 0);
        if (pass == 0) {
            want = got;
            /* with gradients on, every value is kept: 4 per step */
            cr_assert_geq(tg_graph_planned_bytes(g), (size_t)(4 * depth) * one);
            tg_graph_free(g);
            continue;
        }
        cr_assert_float_eq(got, want, 1e-9 * fabs(want) + 1e-9, "same result with reuse");
        cr_assert_leq(tg_graph_planned_bytes(g), (size_t)8 * one,
                      "forward-only plan holds %zu bytes, expected a few buffers",
                      tg_graph_planned_bytes(g));
        cr_assert_eq(tg_graph_backward(g, y, NULL), TG_ERR_STATE);
        tt_assert_last_error("gradients are disabled");
        tg_graph_free(g);
    }
}

/* tg_graph_set_share_values: a training graph whose values go once the
 * backward that reads them has run. Same loss and gradient as the default
 * plan, in less memory: add and scale read no values in their backward, so
 * of the 4 values per step only square's input stays to the backward. */
Test(planner, shared_values_same_gradients_less_memory)
{
    const int64_t n = 4096, depth = 20;
    size_t bytes[2];
    double loss[2];
    float *dx[2];
    for (int share = 0; share < 2; share++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_graph_set_share_values(g, share);
        tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
        cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
        tg_node *y = chain(g, x, (int)depth, NULL);
        tt_randn((tg_tensor *)tg_node_value(x), 5);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK, "%s", tg_last_error());
        bytes[share] = tg_graph_planned_bytes(g);
        loss[share] = tg_tensor_get(tg_node_value(y), 0);
        dx[share] = malloc((size_t)n * sizeof(float));
        memcpy(dx[share], tg_node_grad(x)->data, (size_t)n * sizeof(float));
        tg_graph_free(g);
    }
    cr_expect_eq(loss[0], loss[1]);
    cr_expect(memcmp(dx[0], dx[1], (size_t)n * sizeof(float)) == 0, "gradients differ");
    size_t one = (size_t)n * sizeof(float);
    cr_expect_leq(bytes[1] + (size_t)(2 * depth) * one, bytes[0],
                  "shared plan %zu bytes, default %zu", bytes[1], bytes[0]);
    free(dx[0]);
    free(dx[1]);
}

/* A float32 training graph with the given plan (mode 0: default, 1: shared
 * values, 2: and recompute) and its input x [T, d], which needs a gradient. */
static tg_graph *train_graph(int mode, int64_t T, int64_t d, tg_node **x)
{
    tg_graph *g = tg_graph_new(TG_F32);
    cr_assert_not_null(g);
    tg_graph_set_share_values(g, mode > 0);
    tg_graph_set_recompute(g, mode == 2);
    *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){T, d});
    cr_assert_eq(tg_node_set_requires_grad(*x, true), TG_OK);
    return g;
}

/* x's gradient, then every parameter's, in one malloc'd float array of *n */
static float *all_grads(const tg_node *x, const tg_params *ps, int64_t *n)
{
    int64_t total = tg_node_grad(x)->numel;
    for (int i = 0; i < tg_params_count(ps); i++) total += tg_params_at(ps, i)->grad.numel;
    float *out = malloc((size_t)total * sizeof(float));
    cr_assert_not_null(out);
    memcpy(out, tg_node_grad(x)->data, (size_t)tg_node_grad(x)->numel * sizeof(float));
    int64_t at = tg_node_grad(x)->numel;
    for (int i = 0; i < tg_params_count(ps); i++) {
        const tg_tensor *gr = &tg_params_at(ps, i)->grad;
        memcpy(out + at, gr->data, (size_t)gr->numel * sizeof(float));
        at += gr->numel;
    }
    *n = total;
    return out;
}

/* Two training steps of g (x and a dy drawn from fixed seeds; a second step
 * sees the forward's buffers back after a backward), then all_grads. */
static float *two_steps(tg_graph *g, tg_params *ps, tg_node *x, tg_node *y, int64_t *n)
{
    tt_randn((tg_tensor *)tg_node_value(x), 5);
    tg_tensor *dy = tg_tensor_new(TG_F32, tg_node_value(y)->rank, tg_node_value(y)->shape);
    cr_assert_not_null(dy);
    tt_randn(dy, 6);
    for (int rep = 0; rep < 2; rep++) {
        tg_params_zero_grad(ps);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
    }
    tg_tensor_free(dy);
    return all_grads(x, ps, n);
}

/* Attention then an MLP stack, [T, d]: a = sdpa of three linear projections
 * of x seen as [1, T, 2, d/2]; then per block h = ln(h + fc2(gelu(fc1(h)))).
 * The backward's peak is in the blocks, while Q, K, V wait for sdpa's. */
static tg_node *remat_net(tg_graph *g, tg_params *ps, tg_node *x, int64_t d, int blocks)
{
    const int64_t T = tg_node_value(x)->shape[0];
    tg_node *qkv[3];
    for (int k = 0; k < 3; k++) {
        tg_node *w = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, d}, "attn.w%d", k));
        qkv[k] = tg_reshape(g, tg_linear(g, x, w, NULL), 4, (int64_t[]){1, T, 2, d / 2});
    }
    tg_node *h = tg_reshape(g, tg_sdpa(g, qkv[0], qkv[1], qkv[2], true, 0.5, 0), 2,
                            (int64_t[]){T, d});
    for (int b = 0; b < blocks; b++) {
        tg_node *w1 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){2 * d, d}, "b%d.w1", b));
        tg_node *w2 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, 2 * d}, "b%d.w2", b));
        tg_node *gm = tg_param_node(g, tg_params_addf(ps, 1, &d, "b%d.gamma", b));
        tg_node *f = tg_linear(g, tg_gelu(g, tg_linear(g, h, w1, NULL), TG_GELU_NONE), w2, NULL);
        h = tg_layer_norm(g, tg_add(g, h, f), 1, &d, gm, NULL, 1e-5);
    }
    return h;
}

/* Recomputed values (TG_OP_RECOMPUTE: GELU and layer_norm always with shared
 * values; linear outputs with tg_graph_set_recompute): the same bits as the
 * default plan, in less memory each step. Reading a recomputed value that
 * was not recomputed would read reused memory and change the gradients. */
Test(planner, recomputed_values_same_bits_less_memory)
{
    const int64_t T = 64, d = 32;
    size_t bytes[3];
    float *grads[3];
    int64_t total = 0;
    for (int mode = 0; mode < 3; mode++) {
        tg_rng r;
        tg_rng_seed(&r, 4);
        tg_params *ps = tg_params_new(TG_F32);
        tg_node *x;
        tg_graph *g = train_graph(mode, T, d, &x);
        tg_node *y = remat_net(g, ps, x, d, 3);
        cr_assert_not_null(y, "%s", tg_graph_error(g));
        for (int i = 0; i < tg_params_count(ps); i++) {
            tg_tensor *p = &tg_params_at(ps, i)->value;
            for (int64_t k = 0; k < p->numel; k++)
                tg_tensor_set(p, k, (p->rank == 1 ? 1 : 0.2) + 0.2 * tg_rng_normal(&r));
        }
        grads[mode] = two_steps(g, ps, x, y, &total);
        bytes[mode] = tg_graph_planned_bytes(g);
        tg_graph_free(g);
        tg_params_free(ps);
    }
    for (int mode = 1; mode < 3; mode++)
        cr_expect(memcmp(grads[0], grads[mode], (size_t)total * sizeof(float)) == 0,
                  "plan %d: gradients differ from the default plan", mode);
    /* share: GELU outputs [T, 2d] and LN outputs [T, d] go after the forward;
     * recompute: so do the Q, K, V projections [T, d] */
    const size_t td = (size_t)(T * d) * sizeof(float);
    cr_expect_lt(bytes[1], bytes[0], "shared %zu, default %zu", bytes[1], bytes[0]);
    cr_expect_leq(bytes[2] + 2 * td, bytes[1], "recompute %zu, shared %zu", bytes[2], bytes[1]);
    for (int mode = 0; mode < 3; mode++) free(grads[mode]);
}

/* y = fc2(gelu(fc1(x))), x [T, d], hidden [T, H]; parameters from ps */
static tg_node *mlp_net(tg_graph *g, tg_params *ps, tg_node *x, int64_t d, int64_t H)
{
    tg_node *w1 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){H, d}, "w1"));
    tg_node *w2 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, H}, "w2"));
    return tg_linear(g, tg_gelu(g, tg_linear(g, x, w1, NULL), TG_GELU_NONE), w2, NULL);
}

/* TG_OP_BWD_DX_OVER_X (linear) and _OVER_DY (GELU): in an MLP's backward the
 * recomputed GELU output, its gradient and the pre-activation's gradient
 * are one [T, H] buffer, so with the pre-activation that is two, not four;
 * and the gradients are the bits of the default plan (where the value
 * stays): a linear that wrote dX before reading X for dW would differ. */
Test(planner, mlp_backward_gradients_take_dead_memory)
{
    const int64_t T = 64, d = 8, H = 256;
    size_t bytes[2];
    float *grads[2];
    int64_t total = 0;
    for (int share = 0; share < 2; share++) {
        tg_params *ps = tg_params_new(TG_F32);
        tg_node *x;
        tg_graph *g = train_graph(share, T, d, &x);
        tg_node *y = mlp_net(g, ps, x, d, H);
        cr_assert_not_null(y, "%s", tg_graph_error(g));
        for (int i = 0; i < tg_params_count(ps); i++)
            tt_randn(&tg_params_at(ps, i)->value, 10 + (uint64_t)i);
        grads[share] = two_steps(g, ps, x, y, &total);
        bytes[share] = tg_graph_planned_bytes(g);
        tg_graph_free(g);
        tg_params_free(ps);
    }
    cr_expect(memcmp(grads[0], grads[1], (size_t)total * sizeof(float)) == 0,
              "shared plan: gradients differ from the default plan");
    /* the peak: pre-activation + one shared hidden buffer + y and its
     * gradient, the fc2 scratch aside; three hidden buffers would be 192 KiB */
    const size_t th = (size_t)(T * H) * sizeof(float), td = (size_t)(T * d) * sizeof(float);
    cr_expect_leq(bytes[1], 2 * th + 4 * td + 4096, "shared plan %zu bytes (a [T, H] is %zu)",
                  bytes[1], th);
    for (int share = 0; share < 2; share++) free(grads[share]);
}

/* TG_OP_BWD_DX_OVER_DY on a chain of dropouts, neg and scale: each backward
 * writes its input's gradient over its own, so the backward holds one [n]
 * gradient for the chain beside x's, and x's gradient is the product of the
 * factors (x = 1: three masks of 0 or 2, two -1, one 0.5: each element 0 or
 * 4, summing to the loss). */
Test(planner, elementwise_chain_shares_one_gradient)
{
    const int64_t n = 4096;
    const int depth = 6;
    tg_graph *g = tg_graph_new(TG_F32);
    tg_graph_set_training(g, true);
    tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
    cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
    tg_node *h = x;
    for (int i = 0; i < depth; i++)
        h = i % 2 == 0 ? tg_dropout(g, h, 0.5) : i == 3 ? tg_scale(g, h, 0.5) : tg_neg(g, h);
    tg_node *y = tg_sum(g, h, NULL, 0, false);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    tg_tensor *xv = (tg_tensor *)tg_node_value(x);
    for (int64_t i = 0; i < n; i++) ((float *)xv->data)[i] = 1;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK, "%s", tg_last_error());
    const float *dx = tg_node_grad(x)->data;
    double sum = 0;
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        cr_assert(dx[i] == 0 || dx[i] == 4, "dx[%lld] = %g", (long long)i, dx[i]);
        sum += dx[i];
        kept += dx[i] != 0;
    }
    cr_expect_eq(sum, tg_tensor_get(tg_node_value(y), 0));
    cr_expect(kept > 400 && kept < 630, "%lld of %lld kept (expected about 512)", (long long)kept,
              (long long)n);
    /* default plan: the values stay (n each); gradients: x's and one shared */
    const size_t one = (size_t)n * sizeof(float);
    cr_expect_leq(tg_graph_planned_bytes(g), (size_t)(depth + 2) * one + 4096,
                  "planned %zu bytes, one [n] is %zu", tg_graph_planned_bytes(g), one);
    tg_graph_free(g);
}

/* TG_OP_FWD_INPLACE: without gradients, an elementwise chain on a linear's
 * output (GELU, an eval-mode dropout, scale, relu, a residual add) runs in
 * that output's memory, one [T, H] buffer instead of two; the result is the
 * bits of the default training plan, where every value has its own. */
Test(planner, forward_only_elementwise_chain_in_place)
{
    const int64_t T = 64, d = 16, H = 256;
    size_t bytes[2];
    float *out[2];
    for (int lean = 0; lean < 2; lean++) {
        tg_params *ps = tg_params_new(TG_F32);
        tg_graph *g = tg_graph_new(TG_F32);
        tg_graph_set_grad_enabled(g, !lean);
        tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){T, d});
        tg_node *w = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){H, d}, "w"));
        tg_node *h = tg_linear(g, x, w, NULL);
        tg_node *f = tg_relu(g, tg_scale(g, tg_dropout(g, tg_gelu(g, h, TG_GELU_TANH), 0.3), -2));
        tg_node *y = tg_add(g, f, tg_linear(g, x, w, NULL));
        cr_assert_not_null(y, "%s", tg_graph_error(g));
        tt_randn(&tg_params_at(ps, 0)->value, 3);
        tt_randn((tg_tensor *)tg_node_value(x), 4);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
        bytes[lean] = tg_graph_planned_bytes(g);
        out[lean] = malloc((size_t)(T * H) * sizeof(float));
        memcpy(out[lean], tg_node_value(y)->data, (size_t)(T * H) * sizeof(float));
        tg_graph_free(g);
        tg_params_free(ps);
    }
    cr_expect(memcmp(out[0], out[1], (size_t)(T * H) * sizeof(float)) == 0,
              "in-place forward differs from the default plan");
    /* the chain's buffer and the second linear's output, which the add reads */
    const size_t th = (size_t)(T * H) * sizeof(float);
    cr_expect_leq(bytes[1], 2 * th + 4096, "forward-only plan %zu bytes, a [T, H] is %zu",
                  bytes[1], th);
    for (int lean = 0; lean < 2; lean++) free(out[lean]);
}

/* A recomputed chain (TG_OP_RECOMPUTE): rearrange(layer_norm(x)) feeding a
 * linear is made again, from x, for the linear's backward rather than kept
 * through the MLP's backward after it: the plan is that of the same net
 * without the rearrange (layer_norm alone is recomputed), and the gradients
 * are the default plan's bits. */
Test(planner, recomputed_chain_is_not_kept)
{
    const int64_t T = 64, d = 32, H = 128;
    size_t bytes[2][2];
    float *gx[2][2];
    for (int perm = 0; perm < 2; perm++)
        for (int share = 0; share < 2; share++) {
            tg_params *ps = tg_params_new(TG_F32);
            tg_node *x;
            tg_graph *g = train_graph(share, T, d, &x);
            tg_node *h = tg_layer_norm(g, x, 1, &d, NULL, NULL, 1e-5);
            if (perm)
                h = tg_rearrange(g, h, "(a b) d -> (b a) d", 1, (tg_axis_len[]){{"a", 8}});
            tg_node *w0 = tg_param_node(g, tg_params_addf(ps, 2, (int64_t[]){d, d}, "w0"));
            tg_node *y = mlp_net(g, ps, tg_linear(g, h, w0, NULL), d, H);
            cr_assert_not_null(y, "%s", tg_graph_error(g));
            for (int i = 0; i < tg_params_count(ps); i++)
                tt_randn(&tg_params_at(ps, i)->value, 20 + (uint64_t)i);
            tt_randn((tg_tensor *)tg_node_value(x), 5);
            tg_tensor *dy = tg_tensor_new(TG_F32, 2, tg_node_value(y)->shape);
            tt_randn(dy, 6);
            cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
            cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
            bytes[perm][share] = tg_graph_planned_bytes(g);
            gx[perm][share] = malloc((size_t)(T * d) * sizeof(float));
            memcpy(gx[perm][share], tg_node_grad(x)->data, (size_t)(T * d) * sizeof(float));
            tg_tensor_free(dy);
            tg_graph_free(g);
            tg_params_free(ps);
        }
    for (int perm = 0; perm < 2; perm++) {
        cr_expect(memcmp(gx[perm][0], gx[perm][1], (size_t)(T * d) * sizeof(float)) == 0,
                  "perm %d: shared plan's gradient differs", perm);
        for (int share = 0; share < 2; share++) free(gx[perm][share]);
    }
    cr_expect_eq(bytes[1][1], bytes[0][1], "with the rearrange %zu bytes, without %zu",
                 bytes[1][1], bytes[0][1]);
}

Test(planner, kept_values_survive_reuse)
{
    const int64_t n = 256;
    double want = 0, got = 0;
    for (int pass = 0; pass < 2; pass++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
        tg_node *mid = NULL;
        chain(g, x, 10, &mid);
        tg_node_keep(mid);
        tg_graph_set_grad_enabled(g, pass == 0);
        tt_randn((tg_tensor *)tg_node_value(x), 9);
        cr_assert_eq(tg_graph_forward(g), TG_OK);
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += tg_tensor_get(tg_node_value(mid), i);
        if (pass == 0) want = s;
        else got = s;
        tg_graph_free(g);
    }
    cr_assert_float_eq(got, want, 1e-9);
}

Test(planner, training_graphs_share_gradient_memory)
{
    const int64_t n = 4096, depth = 20;
    size_t one = (size_t)n * sizeof(float);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
    tg_node_set_requires_grad(x, true);
    tg_node *y = chain(g, x, (int)depth, NULL);
    tt_randn((tg_tensor *)tg_node_value(x), 5);
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK);
    /* values: 4 per step kept; gradients: a few live at once, not 4 per step */
    size_t planned = tg_graph_planned_bytes(g);
    cr_assert_leq(planned, (size_t)(4 * depth + 10) * one, "planned %zu bytes", planned);
    /* and they are right: compare with a float64 gradcheck of a shorter chain */
    tg_graph_free(g);
    g = tg_graph_new(TG_F64);
    const int64_t m = 5;
    x = tg_input(g, "x", TG_F64, 1, &m);
    tg_node_set_requires_grad(x, true);
    tt_randn((tg_tensor *)tg_node_value(x), 6);
    tt_gradcheck(g, chain(g, x, 6, NULL), 3);
    tg_graph_free(g);
}

/* ---- random graphs: every plan, the same bits ----
 * A graph of [T, d] values drawn from a seed: linear layers, GELU, dropout
 * (training), scale, neg, relu, add, mul, layer_norm, a row permutation
 * (rearrange), attention (sdpa on reshaped views), an MLP to [T, H] and
 * back; operands are picked mostly among the newest values, so there are
 * chains (in-place and recomputed ones) and fan-out, some values are kept,
 * and some are dangling outputs. */
enum { RG_T = 24, RG_D = 16, RG_H = 48 };

static tg_node *rg_param(tg_graph *g, tg_params *ps, int rank, const int64_t *shape, int *np)
{
    tg_param *p = tg_params_addf(ps, rank, shape, "p%d", (*np)++);
    return p ? tg_param_node(g, p) : NULL;
}

static tg_node *rg_build(tg_graph *g, tg_params *ps, tg_node *x, uint64_t seed)
{
    tg_rng r;
    tg_rng_seed(&r, seed);
    const int64_t d = RG_D, dd[2] = {RG_D, RG_D};
    tg_node *pool[64];
    int n = 0, np = 0;
    pool[n++] = x;
    const int steps = 8 + (int)tg_rng_below(&r, 14);
    for (int s = 0; s < steps; s++) {
        /* an operand: the newest value half the time, else any */
#define PICK() pool[tg_rng_uniform(&r) < 0.5 ? n - 1 : (int)tg_rng_below(&r, (uint64_t)n)]
        tg_node *a = PICK(), *y = NULL;
        switch (tg_rng_below(&r, 12)) {
        case 0: y = tg_linear(g, a, rg_param(g, ps, 2, dd, &np), rg_param(g, ps, 1, &d, &np)); break;
        case 1: y = tg_gelu(g, a, tg_rng_uniform(&r) < 0.5 ? TG_GELU_NONE : TG_GELU_TANH); break;
        case 2: y = tg_dropout(g, a, 0.3); break;
        case 3: y = tg_scale(g, a, -0.7); break;
        case 4: y = tg_rng_uniform(&r) < 0.5 ? tg_neg(g, a) : tg_relu(g, a); break;
        case 5: y = tg_add(g, a, PICK()); break;
        case 6: y = tg_mul(g, a, PICK()); break;
        case 7: y = tg_layer_norm(g, a, 1, &d, rg_param(g, ps, 1, &d, &np), NULL, 1e-5); break;
        case 8: y = tg_rearrange(g, a, "(a b) d -> (b a) d", 1, (tg_axis_len[]){{"a", 4}}); break;
        case 9: {
            const int64_t heads[4] = {1, RG_T, 2, RG_D / 2};
            tg_node *q = tg_reshape(g, a, 4, heads), *k = tg_reshape(g, PICK(), 4, heads);
            tg_node *v = tg_reshape(g, PICK(), 4, heads);
            y = tg_reshape(g, tg_sdpa(g, q, k, v, tg_rng_uniform(&r) < 0.5, 0.3, 0.2), 2,
                           (int64_t[]){RG_T, RG_D});
            break;
        }
        case 10: {
            const int64_t up[2] = {RG_H, RG_D}, down[2] = {RG_D, RG_H};
            tg_node *h = tg_gelu(g, tg_linear(g, a, rg_param(g, ps, 2, up, &np), NULL),
                                 TG_GELU_NONE);
            y = tg_linear(g, tg_dropout(g, h, 0.2), rg_param(g, ps, 2, down, &np), NULL);
            break;
        }
        default:
            tg_node_keep(a);   /* and no new value */
            continue;
        }
#undef PICK
        if (!y || n == 64) return NULL;
        pool[n++] = y;
    }
    /* the loss: the newest value and one other (an add), plus a dangling
     * square of a third that nothing reads */
    tg_square(g, pool[tg_rng_below(&r, (uint64_t)n)]);
    return tg_add(g, pool[n - 1], pool[tg_rng_below(&r, (uint64_t)n)]);
}

/* Modes: 0 the default plan, 1 shared values, 2 with recompute, 3 no
 * gradients (forward only; dropout still in training mode). out: the output
 * and, with gradients, x's and every parameter's gradient, after two steps
 * (as doubles: a float converts exactly). */
static int64_t rg_run(uint64_t seed, int mode, tg_dtype dt, double *out, int64_t cap,
                      size_t *bytes)
{
    tg_params *ps = tg_params_new(dt);
    tg_graph *g = tg_graph_new(dt);
    tg_graph_set_training(g, true);
    tg_graph_set_grad_enabled(g, mode != 3);
    tg_graph_set_share_values(g, mode == 1 || mode == 2);
    tg_graph_set_recompute(g, mode == 2);
    tg_node *x = tg_input(g, "x", dt, 2, (int64_t[]){RG_T, RG_D});
    if (mode != 3) cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
    tg_node *y = rg_build(g, ps, x, seed);
    cr_assert_not_null(y, "seed %llu: %s", (unsigned long long)seed, tg_graph_error(g));
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_tensor *p = &tg_params_at(ps, i)->value;
        tt_randn(p, 100 + (uint64_t)i);
        for (int64_t k = 0; p->rank == 1 && k < p->numel; k++)   /* gains near 1 */
            tg_tensor_set(p, k, 1 + 0.3 * tg_tensor_get(p, k));
    }
    tt_randn((tg_tensor *)tg_node_value(x), seed);
    tg_tensor *dy = tg_tensor_new(dt, 2, tg_node_value(y)->shape);
    tt_randn(dy, seed + 1);
    int64_t at = 0;
#define TAKE(t)                                                                         \
    do {                                                                                \
        cr_assert_leq(at + (t)->numel, cap);                                            \
        for (int64_t k_ = 0; k_ < (t)->numel; k_++) out[at++] = tg_tensor_get((t), k_); \
    } while (0)
    for (int step = 0; step < 2; step++) {
        tg_params_zero_grad(ps);
        cr_assert_eq(tg_graph_forward(g), TG_OK, "seed %llu mode %d: %s",
                     (unsigned long long)seed, mode, tg_last_error());
        if (mode != 3)
            cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "seed %llu mode %d: %s",
                         (unsigned long long)seed, mode, tg_last_error());
    }
    TAKE(tg_node_value(y));
    if (mode != 3) {
        TAKE(tg_node_grad(x));
        for (int i = 0; i < tg_params_count(ps); i++) TAKE(&tg_params_at(ps, i)->grad);
    }
#undef TAKE
    *bytes = tg_graph_planned_bytes(g);
    tg_tensor_free(dy);
    tg_graph_free(g);
    tg_params_free(ps);
    return at;
}

/* float32 (the vector kernels) and float64 (the portable loops) */
Test(planner, random_graphs_every_plan_same_bits)
{
    enum { CAP = 1 << 16, GRAPHS = 300 };
    double *want = malloc(CAP * sizeof(double)), *got = malloc(CAP * sizeof(double));
    cr_assert(want && got);
    for (int f64 = 0; f64 < 2; f64++) {
        const tg_dtype dt = f64 ? TG_F64 : TG_F32;
        size_t bytes[4], saved = 0, base = 0;
        for (uint64_t seed = 1; seed <= GRAPHS; seed++) {
            const int64_t nwant = rg_run(seed, 0, dt, want, CAP, &bytes[0]);
            const int64_t ny = RG_T * RG_D;   /* the output comes first */
            for (int mode = 1; mode < 4; mode++) {
                const int64_t ngot = rg_run(seed, mode, dt, got, CAP, &bytes[mode]);
                cr_assert_eq(ngot, mode == 3 ? ny : nwant);
                for (int64_t i = 0; i < ngot; i++)
                    cr_assert(memcmp(&got[i], &want[i], sizeof(double)) == 0,
                              "%s, seed %llu, mode %d: element %lld is %.17g, the default "
                              "plan's %.17g (%s)", tg_dtype_name(dt), (unsigned long long)seed,
                              mode, (long long)i, got[i], want[i],
                              i < ny ? "output" : "a gradient");
            }
            cr_assert_leq(bytes[1], bytes[0], "seed %llu", (unsigned long long)seed);
            cr_assert_leq(bytes[3], bytes[1], "seed %llu", (unsigned long long)seed);
            base += bytes[0], saved += bytes[0] - bytes[1];
        }
        /* the shared plans hold less memory in all (not a test of any one graph) */
        cr_expect_gt(saved, base / 8, "%s: shared plans saved %zu of %zu bytes",
                     tg_dtype_name(dt), saved, base);
    }
    free(want);
    free(got);
}

/* tg_set_plan_limit: a plan above the cap fails with TG_ERR_LIMIT naming both
 * figures, allocates nothing, and plans once the cap allows it. */
Test(planner, a_plan_over_the_limit_is_refused_naming_the_bytes)
{
    const int64_t n = 4096;
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, &n);
    chain(g, x, 20, NULL);
    cr_assert_eq(tg_plan_limit(), 0);
    tg_set_plan_limit(4096);
    cr_assert_eq(tg_plan_limit(), 4096);
    cr_assert_eq(tg_graph_plan(g), TG_ERR_LIMIT);
    tt_assert_last_error("more than the limit of 4096 bytes");
    cr_assert(strstr(tg_last_error(), "nodes need "), "%s", tg_last_error());
    cr_assert_eq(tg_graph_planned_bytes(g), 0);
    cr_assert_eq(tg_graph_forward(g), TG_ERR_LIMIT);
    tg_set_plan_limit(0);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    cr_assert_gt(tg_graph_planned_bytes(g), 4096);
    tg_graph_free(g);
}
