/*
 * test_attention.c - FullAttention and AttentionLayer against the PyTorch
 * oracle (tests/fixtures/gen_oracle.sh), gradcheck, and bad configs.
 */
#include <math.h>

#include "layer_case.h"

#define ATOL 1e-5
#define RTOL 1e-4

Test(full_attention, oracle_causal) { tt_run_oracle_case("full_attention", ATOL, RTOL); }
Test(full_attention, oracle_nomask) { tt_run_oracle_case("full_attention_nomask", ATOL, RTOL); }
Test(full_attention, oracle_long) { tt_run_oracle_case("x_full_attention_long", ATOL, RTOL); }

Test(attention_layer, oracle_self) { tt_run_oracle_case("attention_layer_self", ATOL, RTOL); }
Test(attention_layer, oracle_cross) { tt_run_oracle_case("attention_layer_cross", ATOL, RTOL); }
Test(attention_layer, oracle_odd) { tt_run_oracle_case("x_attention_layer_odd", ATOL, RTOL); }

Test(full_attention, gradcheck)
{
    tt_layer_gradcheck("full_attention", (const char *[]){"B=2", "L=5", "S=5"}, 3, 1, 0);
    tt_layer_gradcheck("full_attention", (const char *[]){"B=2", "L=4", "S=6", "mask_flag=false"},
                       4, 2, 0);
}

Test(attention_layer, gradcheck)
{
    tt_layer_gradcheck("attention_layer", NULL, 0, 1, 0);
    tt_layer_gradcheck("attention_layer",
                       (const char *[]){"self_attention=false", "S=4", "d_model=6", "n_heads=3",
                                        "d_keys=3", "d_values=2"},
                       6, 2, 0);
}

/* The seed example: FullAttention on (8, 6, 2, 8) gives V (8, 6, 2, 8) and A (8, 2, 6, 6),
 * with the upper triangle of A exactly 0 and row 0 attending to s = 0 only. */
Test(full_attention, seed_shapes_and_causality)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_layer *l = tg_layer_new("full_attention", NULL, ps, "", NULL);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in[3];
    for (int i = 0; i < 3; i++) {
        in[i] = tg_input(g, "qkv", TG_F32, 4, (int64_t[]){8, 6, 2, 8});
        tt_randn((tg_tensor *)tg_node_value(in[i]), 10 + (uint64_t)i);
    }
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(l, g, in, &out), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_graph_forward(g), TG_OK);
    const tg_tensor *A = tg_node_value(out.attn), *V = tg_node_value(out.y);
    cr_assert(A->rank == 4 && A->shape[0] == 8 && A->shape[1] == 2 && A->shape[2] == 6 &&
              A->shape[3] == 6);
    cr_assert(V->rank == 4 && V->shape[0] == 8 && V->shape[1] == 6 && V->shape[2] == 2 &&
              V->shape[3] == 8);
    for (int64_t i = 0; i < A->numel; i++) {
        int64_t l_ = (i / 6) % 6, s = i % 6;
        if (s > l_) cr_assert_eq(tg_tensor_get(A, i), 0.0);
    }
    /* row l = 0 sees only s = 0, so V[:, 0] == values[:, 0] */
    const tg_tensor *v = tg_node_value(in[2]);
    for (int64_t b = 0; b < 8; b++)
        for (int64_t k = 0; k < 16; k++)
            cr_assert_float_eq(tg_tensor_get(V, b * 96 + k), tg_tensor_get(v, b * 96 + k), 1e-6);
    tg_graph_free(g);
    tg_layer_free(l);
    tg_params_free(ps);
}

Test(full_attention, bad_configs)
{
    tt_assert_layer_rejects("full_attention", (const char *[]){"L=6", "S=7"}, 2,
                            "mask_flag needs L == S");
    tt_assert_layer_rejects("full_attention", (const char *[]){"attention_dropout=1.5"}, 1,
                            "attention_dropout: 1.5 is out of range [0, 1]");
    tt_assert_layer_rejects("full_attention", (const char *[]){"heads=2"}, 1,
                            "unknown key 'heads'");
    tt_assert_layer_rejects("full_attention", (const char *[]){"B=x"}, 1, "B");
}

Test(full_attention, causal_mask_needs_equal_lengths_in_the_builder)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *q = tg_input(g, "q", TG_F32, 4, (int64_t[]){2, 6, 2, 4});
    tg_node *k = tg_input(g, "k", TG_F32, 4, (int64_t[]){2, 7, 2, 4});
    tg_full_attention_config c = tg_full_attention_defaults();
    cr_assert_null(tg_full_attention(g, &c, "inner", q, k, k, NULL, NULL));
    tt_assert_graph_error(g, "it needs L == S; got L=6, S=7");
    tg_graph_free(g);
}

Test(attention_layer, bad_configs)
{
    tt_assert_layer_rejects("attention_layer", (const char *[]){"n_heads=0"}, 1,
                            "n_heads: 0 is out of range [1, inf)");
    tt_assert_layer_rejects("attention_layer", (const char *[]){"d_model=2", "n_heads=4"}, 2,
                            "d_model // n_heads is 0");
    tt_assert_layer_rejects("attention_layer", (const char *[]){"S=7"}, 1,
                            "self_attention uses one input, so S (7) must equal L (6)");
    tt_assert_layer_rejects("nope", NULL, 0, "unknown layer 'nope'");
}

Test(attention_layer, wrong_input_width_is_a_graph_error)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_layer *l = tg_layer_new("attention_layer", NULL, ps, "", NULL);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 6, 15});
    tg_layer_outputs out;
    cr_assert_neq(tg_layer_build(l, g, &x, &out), TG_OK);
    tt_assert_graph_error(g, "attention_layer.query_projection: linear: mat1 and mat2 shapes "
                             "cannot be multiplied (12x15 and 16x16)");
    tg_graph_free(g);
    tg_layer_free(l);
    tg_params_free(ps);
}
