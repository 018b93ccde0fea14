/*
 * test_axial.c - lucidrains' AxialAttention against the PyTorch oracle
 * (tests/fixtures/gen_oracle.sh), gradcheck, the sum/chain structure, and bad
 * configs and inputs.
 */
#include <math.h>
#include <string.h>

#include "layer_case.h"

#define ATOL 1e-5
#define RTOL 1e-4

Test(axial, oracle_sum) { tt_run_oracle_case("axial_sum", ATOL, RTOL); }
Test(axial, oracle_seq) { tt_run_oracle_case("axial_seq", ATOL, RTOL); }
Test(axial, oracle_chw) { tt_run_oracle_case("axial_chw", ATOL, RTOL); }
Test(axial, oracle_3d) { tt_run_oracle_case("axial_3d", ATOL, RTOL); }
Test(axial, oracle_odd) { tt_run_oracle_case("x_axial_odd", ATOL, RTOL); }
Test(axial, oracle_dim_heads) { tt_run_oracle_case("x_axial_dim_heads", ATOL, RTOL); }

Test(axial, gradcheck_sum)
{
    tt_layer_gradcheck("axial", (const char *[]){"shape=[2,3,4,6]", "dim=6", "heads=2"}, 3, 1, 0);
    tt_layer_gradcheck("axial", (const char *[]){"shape=[2,4,3,5]", "dim=4", "heads=2",
                                                 "dim_index=1", "dim_heads=3"}, 5, 2, 0);
}

Test(axial, gradcheck_sequential)
{
    tt_layer_gradcheck("axial", (const char *[]){"shape=[2,3,4,6]", "dim=6", "heads=3",
                                                 "sum_axial_out=false"}, 4, 3, 0);
    tt_layer_gradcheck("axial", (const char *[]){"shape=[2,4,3,5]", "dim=4", "heads=1",
                                                 "dim_index=1", "sum_axial_out=false"}, 5, 4, 0);
}

Test(axial, gradcheck_3d)
{
    tt_layer_gradcheck("axial", (const char *[]){"shape=[1,2,3,4,4]", "num_dimensions=3",
                                                 "dim=4", "heads=2"}, 4, 5, 0);
    tt_layer_gradcheck("axial", (const char *[]){"shape=[2,2,4,3,3]", "num_dimensions=3",
                                                 "dim=4", "heads=2", "dim_index=2",
                                                 "sum_axial_out=false"}, 6, 6, 0);
}

Test(axial, gradcheck_1d)
{
    tt_layer_gradcheck("axial", (const char *[]){"shape=[3,5,4]", "num_dimensions=1", "dim=4",
                                                 "heads=2"}, 4, 7, 0);
}

/* ------------------------------------------------------------ structure */

typedef struct axial_fixture {
    tg_params          *ps;
    tg_axial_attention  ax;
    tg_graph           *g;
    tg_node            *x;
} axial_fixture;

static void fixture_init(axial_fixture *f, const tg_axial_attention_config *c, int rank,
                         const int64_t *shape, uint64_t seed)
{
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    f->ps = tg_params_new(TG_F64);
    cr_assert_eq(tg_axial_attention_init(&f->ax, c, f->ps, "", "axial", &rng), TG_OK, "%s",
                 tg_last_error());
    f->g = tg_graph_new(TG_F64);
    f->x = tg_input(f->g, "x", TG_F64, rank, shape);
    tt_randn((tg_tensor *)tg_node_value(f->x), seed + 100);
}

static void fixture_fini(axial_fixture *f)
{
    tg_graph_free(f->g);
    tg_params_free(f->ps);
}

/* sum_axial_out=True is the sum of the single-axis layers, each on the same x;
 * sum_axial_out=False is their composition. */
Test(axial, sum_and_chain_of_single_axes)
{
    const int64_t shape[5] = {2, 3, 4, 6, 5};
    tg_axial_attention_config c = tg_axial_attention_defaults(6);
    c.num_dimensions = 3;
    c.heads = 3;
    c.dim_index = 3;
    for (int mode = 0; mode < 2; mode++) {
        c.sum_axial_out = mode == 0;
        axial_fixture f;
        fixture_init(&f, &c, 5, shape, 11);
        cr_assert_eq(f.ax.n_axes, 3);
        tg_node *y = tg_axial_attention_build(f.g, &f.ax, f.x), *ys[3], *chain = f.x;
        for (int i = 0; i < 3; i++) {
            ys[i] = tg_axial_attention_build_axis(f.g, &f.ax, i, f.x);
            chain = tg_axial_attention_build_axis(f.g, &f.ax, i, chain);
            tg_node_keep(ys[i]);
        }
        tg_node_keep(y);
        tg_node_keep(chain);
        cr_assert_eq(tg_graph_forward(f.g), TG_OK, "%s", tg_last_error());
        const tg_tensor *yv = tg_node_value(y);
        cr_assert_eq(yv->rank, 5);
        cr_assert_eq(memcmp(yv->shape, shape, sizeof shape), 0);
        double worst = 0, spread = 0;
        for (int64_t k = 0; k < yv->numel; k++) {
            double want = c.sum_axial_out ? tg_tensor_get(tg_node_value(ys[0]), k) +
                                                tg_tensor_get(tg_node_value(ys[1]), k) +
                                                tg_tensor_get(tg_node_value(ys[2]), k)
                                          : tg_tensor_get(tg_node_value(chain), k);
            worst = fmax(worst, fabs(tg_tensor_get(yv, k) - want));
            /* the axes differ: no single axis explains the result */
            spread = fmax(spread, fabs(tg_tensor_get(tg_node_value(ys[0]), k) -
                                       tg_tensor_get(tg_node_value(ys[1]), k)));
        }
        cr_assert_leq(worst, 1e-12, "mode %d: worst %g", mode, worst);
        cr_assert_gt(spread, 1e-3);
        fixture_fini(&f);
    }
}

/* One axis attends along its axis only: changing x at one position moves the
 * axis-0 result only on the line through it along axis 1 (all embedding entries). */
Test(axial, single_axis_attends_along_its_axis_only)
{
    const int64_t shape[4] = {2, 4, 5, 6};
    tg_axial_attention_config c = tg_axial_attention_defaults(6);
    c.heads = 2;
    axial_fixture f;
    fixture_init(&f, &c, 4, shape, 12);
    tg_node *y = tg_axial_attention_build_axis(f.g, &f.ax, 0, f.x);
    tg_node_keep(y);
    cr_assert_eq(tg_graph_forward(f.g), TG_OK);
    tg_tensor *before = tg_tensor_clone(tg_node_value(y));
    tg_tensor *xv = (tg_tensor *)tg_node_value(f.x);
    const int64_t b0 = 1, i0 = 2, j0 = 3;   /* x[1, 2, 3, :] += 1 */
    for (int64_t d = 0; d < 6; d++) {
        int64_t at = ((b0 * 4 + i0) * 5 + j0) * 6 + d;
        tg_tensor_set(xv, at, tg_tensor_get(xv, at) + 1);
    }
    cr_assert_eq(tg_graph_forward(f.g), TG_OK);
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 5; j++) {
                double diff = 0;
                for (int64_t d = 0; d < 6; d++) {
                    int64_t at = ((b * 4 + i) * 5 + j) * 6 + d;
                    diff = fmax(diff, fabs(tg_tensor_get(tg_node_value(y), at) -
                                           tg_tensor_get(before, at)));
                }
                if (b == b0 && j == j0) cr_assert_gt(diff, 1e-6, "(%lld,%lld,%lld)",
                                                     (long long)b, (long long)i, (long long)j);
                else cr_assert_eq(diff, 0.0, "(%lld,%lld,%lld)", (long long)b, (long long)i,
                                  (long long)j);
            }
    tg_tensor_free(before);
    fixture_fini(&f);
}

/* The embedding axis can sit anywhere: AxialAttention(dim_index=1) on x [b, d, h, w] is
 * AxialAttention(dim_index=-1) on x.permute(0, 2, 3, 1), permuted back, with the same
 * weights. */
Test(axial, dim_index_moves_the_embedding_axis_only)
{
    const int64_t chw[4] = {2, 6, 3, 4};
    tg_axial_attention_config c = tg_axial_attention_defaults(6);
    c.heads = 2;
    c.dim_index = 1;
    axial_fixture f;
    fixture_init(&f, &c, 4, chw, 13);
    tg_node *y1 = tg_axial_attention_build(f.g, &f.ax, f.x);
    c.dim_index = -1;
    tg_axial_attention last;
    tg_params *ps2 = tg_params_new(TG_F64);
    cr_assert_eq(tg_axial_attention_init(&last, &c, ps2, "", "last", NULL), TG_OK);
    for (int i = 0; i < tg_params_count(ps2); i++)   /* same weights, by position */
        tg_tensor_copy(&tg_params_at(ps2, i)->value, &tg_params_at(f.ps, i)->value);
    tg_node *y2 = tg_permute(f.g, tg_axial_attention_build(f.g, &last,
                                                           tg_permute(f.g, f.x,
                                                                      (int[]){0, 2, 3, 1})),
                             (int[]){0, 3, 1, 2});
    tg_node_keep(y1);
    tg_node_keep(y2);
    cr_assert_eq(tg_graph_forward(f.g), TG_OK, "%s", tg_last_error());
    tt_assert_close(tg_node_value(y1), tg_node_value(y2), 1e-12, 0, "dim_index 1 vs -1");
    tg_params_free(ps2);
    fixture_fini(&f);
}

Test(axial, parameter_names_and_count)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_axial_attention ax;
    tg_axial_attention_config c = tg_axial_attention_defaults(8);
    c.heads = 2;
    c.dim_heads = 3;   /* hidden 6 != dim */
    cr_assert_eq(tg_axial_attention_init(&ax, &c, ps, "model", "axial", NULL), TG_OK);
    cr_assert_eq(tg_params_count(ps), 8);
    const char *want[8] = {"model.axial.axial_attentions.0.fn.to_q.weight",
                           "model.axial.axial_attentions.0.fn.to_kv.weight",
                           "model.axial.axial_attentions.0.fn.to_out.weight",
                           "model.axial.axial_attentions.0.fn.to_out.bias",
                           "model.axial.axial_attentions.1.fn.to_q.weight",
                           "model.axial.axial_attentions.1.fn.to_kv.weight",
                           "model.axial.axial_attentions.1.fn.to_out.weight",
                           "model.axial.axial_attentions.1.fn.to_out.bias"};
    const int64_t rows[8] = {6, 12, 8, 8, 6, 12, 8, 8};
    for (int i = 0; i < 8; i++) {
        const tg_param *p = tg_params_at(ps, i);
        cr_assert_str_eq(p->name, want[i]);
        cr_assert_eq(p->value.shape[0], rows[i], "%s", p->name);
    }
    tg_params_free(ps);
    /* the registry's top-level layer: no prefix, 528 parameters in axial_sum */
    ps = tg_params_new(TG_F32);
    tg_layer *l = tg_layer_new("axial", NULL, ps, "", NULL);
    cr_assert_not_null(l, "%s", tg_last_error());
    int64_t n = 0;
    for (int i = 0; i < tg_params_count(ps); i++) n += tg_params_at(ps, i)->value.numel;
    cr_assert_eq(n, 528);
    cr_assert_str_eq(tg_params_at(ps, 0)->name, "axial_attentions.0.fn.to_q.weight");
    tg_layer_free(l);
    tg_params_free(ps);
}

/* ----------------------------------------------------------- bad input */

Test(axial, bad_configs)
{
    tt_assert_layer_rejects("axial", (const char *[]){"heads=3"}, 1,
                            "hidden dimension must be divisible by number of heads");
    /* lucidrains asserts it even when dim_heads is given */
    tt_assert_layer_rejects("axial", (const char *[]){"heads=3", "dim_heads=4"}, 2,
                            "hidden dimension must be divisible by number of heads");
    tt_assert_layer_rejects("axial", (const char *[]){"heads=0"}, 1,
                            "heads: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("axial", (const char *[]){"heads=-2"}, 1,
                            "heads: -2 is out of range [1, inf)");
    tt_assert_layer_rejects("axial", (const char *[]){"dim_heads=-1"}, 1,
                            "dim_heads: -1 is out of range [1, inf)");
    tt_assert_layer_rejects("axial", (const char *[]){"shape=[2,4,8]"}, 1,
                            "wrong number of dimensions");
    tt_assert_layer_rejects("axial", (const char *[]){"shape=[2,4,5,3,8]"}, 1,
                            "wrong number of dimensions");
    tt_assert_layer_rejects("axial", (const char *[]){"shape=[2,4,5,7]"}, 1,
                            "wrong embedding size");
    tt_assert_layer_rejects("axial", (const char *[]){"dim_index=1"}, 1,
                            "wrong embedding size: shape[1] of [2, 4, 5, 8] is 4, dim is 8");
    tt_assert_layer_rejects("axial", (const char *[]){"dim_index=4"}, 1,
                            "Dimension out of range (expected to be in range of [-4, 3], but "
                            "got 4)");
    tt_assert_layer_rejects("axial", (const char *[]){"dim_index=-5"}, 1,
                            "Dimension out of range (expected to be in range of [-4, 3], but "
                            "got -5)");
    tt_assert_layer_rejects("axial", (const char *[]){"dim_index=0", "shape=[8,4,5,8]"}, 2,
                            "dim_index 0 is the batch axis 0");
    tt_assert_layer_rejects("axial", (const char *[]){"dim_index=-4", "shape=[8,4,5,8]"}, 2,
                            "dim_index -4 is the batch axis 0");
    tt_assert_layer_rejects("axial", (const char *[]){"num_dimensions=0", "shape=[2,8]"}, 2,
                            "num_dimensions: 0 is out of range [1, 6]");
    tt_assert_layer_rejects("axial", (const char *[]){"shape=[2,0,5,8]"}, 1,
                            "shape[1]: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("axial", (const char *[]){"heads=2.5"}, 1, "heads");
    tt_assert_layer_rejects("axial", (const char *[]){"dim_head=2"}, 1, "unknown key 'dim_head'");
}

Test(axial, bad_typed_config)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_axial_attention ax;
    tg_axial_attention_config c = tg_axial_attention_defaults(12);   /* heads = 8 */
    cr_assert_neq(tg_axial_attention_init(&ax, &c, ps, "", "axial", NULL), TG_OK);
    tt_assert_last_error("axial: hidden dimension must be divisible by number of heads "
                         "(dim 12, heads 8)");
    c = tg_axial_attention_defaults(16);
    c.num_dimensions = 7;
    cr_assert_neq(tg_axial_attention_init(&ax, &c, ps, "", "axial", NULL), TG_OK);
    tt_assert_last_error("num_dimensions must be in [1, 6]");
    cr_assert_eq(tg_params_count(ps), 0);
    tg_params_free(ps);
}

Test(axial, wrong_inputs_are_graph_errors)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_axial_attention ax;
    tg_axial_attention_config c = tg_axial_attention_defaults(8);
    c.heads = 2;
    cr_assert_eq(tg_axial_attention_init(&ax, &c, ps, "", "axial", NULL), TG_OK);
    struct { int rank; int64_t shape[5]; const char *needle; } bad[] = {
        {3, {2, 4, 8}, "axial: wrong number of dimensions: x must have num_dimensions + 2 = 4 "
                       "axes, got 3"},
        {5, {2, 4, 5, 6, 8}, "wrong number of dimensions"},
        {4, {2, 4, 5, 7}, "axial: wrong embedding size: x.shape[3] must be dim = 8, got 7"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, bad[i].rank, bad[i].shape);
        cr_assert_null(tg_axial_attention_build(g, &ax, x));
        tt_assert_graph_error(g, bad[i].needle);
        tg_graph_free(g);
    }
    /* an input of the wrong dtype, and an axis out of range */
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F64, 4, (int64_t[]){2, 4, 5, 8});
    cr_assert_null(tg_axial_attention_build(g, &ax, x));
    cr_assert_not_null(tg_graph_error(g));
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 4, (int64_t[]){2, 4, 5, 8});
    cr_assert_null(tg_axial_attention_build_axis(g, &ax, 2, x));
    tt_assert_graph_error(g, "axis 2 out of range [0, 2)");
    tg_graph_free(g);
    tg_params_free(ps);
}
