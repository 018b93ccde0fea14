/*
 * test_embedding.c - embedding (F.embedding) against PyTorch fixtures
 * (forward and the weight's gradient, float32, with padding_idx: ids [2, 3]
 * and [5], repeated ids accumulating), a float64 gradcheck, and its bad
 * inputs: an id out of range (an error of the forward naming it, never a
 * crash), ids that are not int64, a weight that is not 2-d, padding_idx out
 * of range; and `tgraph op embedding` end to end.
 * Fixtures: tests/fixtures/ops/embedding/gen.py.
 */
#include "testutil.h"

#include <criterion/parameterized.h>

#define DIR "ops/embedding"

/* y = embedding(ids, w, padding_idx) from the fixture in dir; out and grad against it. */
static void check_fixture(const char *dir, int64_t padding_idx)
{
    tg_tensor *ids = tt_load(dir, "in0.npy"), *w = tt_load(dir, "in1.npy");
    tg_tensor *want = tt_load(dir, "out0.npy"), *dy = tt_load(dir, "dout0.npy");
    tg_tensor *dw = tt_load(dir, "grad1.npy");
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "ids", TG_I64, ids->rank, ids->shape);
    tg_node *p = tg_input(g, "weight", TG_F32, w->rank, w->shape);
    cr_assert(tg_node_set(x, ids) == TG_OK && tg_node_set(p, w) == TG_OK);
    tg_node_set_requires_grad(p, true);
    tg_node *y = tg_embedding(g, x, p, padding_idx);
    cr_assert(y, "%s: %s", dir, tg_graph_error(g));
    tg_node_keep(y);
    cr_assert(tg_graph_forward(g) == TG_OK, "%s: %s", dir, tg_last_error());
    tt_assert_close(tg_node_value(y), want, 1e-6, 1e-5, dir);
    cr_assert(tg_graph_backward(g, y, dy) == TG_OK, "%s: %s", dir, tg_last_error());
    tt_assert_close(tg_node_grad(p), dw, 1e-6, 1e-5, dir);
    tg_graph_free(g);
    tg_tensor_free(ids), tg_tensor_free(w), tg_tensor_free(want), tg_tensor_free(dy);
    tg_tensor_free(dw);
}

Test(embedding, matches_pytorch_with_padding_idx)
{
    check_fixture(DIR, 1);            /* ids [2, 3]; row 1 takes no gradient */
    check_fixture(DIR "/flat", -2);   /* ids [5]; -2 is row 5, which appears twice */
}

Test(embedding, gradcheck_float64)
{
    int64_t ids_shape[] = {2, 3}, w_shape[] = {5, 4};
    const int64_t ids[] = {4, 0, 2, 2, 1, 4};   /* repeats: their gradients add */
    for (int pad = 0; pad < 2; pad++) {
        tg_graph *g = tg_graph_new(TG_F64);
        tg_node *x = tg_input(g, "ids", TG_I64, 2, ids_shape);
        tg_node *p = tg_input(g, "weight", TG_F64, 2, w_shape);
        memcpy(tg_node_value(x)->data, ids, sizeof ids);
        tt_randn((tg_tensor *)tg_node_value(p), 3);
        tg_node_set_requires_grad(p, true);
        /* with padding_idx=3 (an id that does not occur) the gradient is the same */
        tg_node *y = tg_embedding(g, x, p, pad ? 3 : TG_EMBEDDING_NO_PADDING);
        cr_assert(y, "%s", tg_graph_error(g));
        cr_assert(tt_gradcheck(g, y, 5) == 1);
        tg_graph_free(g);
    }
}

/* A graph with ids of dtype dt and shape ids_shape, weight [5, 3]. */
static tg_graph *bad_graph(tg_dtype dt, int w_rank, tg_node **x, tg_node **p)
{
    int64_t ids_shape[] = {4}, w_shape[] = {5, 3};
    tg_graph *g = tg_graph_new(TG_F32);
    *x = tg_input(g, "ids", dt, 1, ids_shape);
    *p = tg_input(g, "weight", TG_F32, w_rank, w_shape);
    return g;
}

Test(embedding, id_out_of_range_is_an_error_naming_it)
{
    const int64_t bad[][4] = {{0, 1, 5, 2}, {0, -1, 2, 3}};
    const char *needle[] = {"embedding: index 5 is out of range for a weight of 5 rows (input[2])",
                            "embedding: index -1 is out of range for a weight of 5 rows (input[1])"};
    for (int k = 0; k < 2; k++) {
        tg_node *x, *p;
        tg_graph *g = bad_graph(TG_I64, 2, &x, &p);
        memcpy(tg_node_value(x)->data, bad[k], sizeof bad[k]);
        tg_node *y = tg_embedding(g, x, p, TG_EMBEDDING_NO_PADDING);
        cr_assert(y, "%s", tg_graph_error(g));
        cr_assert(tg_graph_forward(g) != TG_OK, "forward accepted id %lld", (long long)bad[k][2]);
        tt_assert_last_error(needle[k]);
        tg_graph_free(g);
    }
}

Test(embedding, bad_builder_inputs)
{
    tg_node *x, *p;
    tg_graph *g = bad_graph(TG_F32, 2, &x, &p);
    cr_assert_null(tg_embedding(g, x, p, TG_EMBEDDING_NO_PADDING));
    tt_assert_graph_error(g, "embedding: input (the ids) must be int64, got float32");
    tg_graph_free(g);
    g = bad_graph(TG_I64, 1, &x, &p);
    cr_assert_null(tg_embedding(g, x, p, TG_EMBEDDING_NO_PADDING));
    tt_assert_graph_error(g, "embedding: 'weight' must be 2-D");
    tg_graph_free(g);
    for (int k = 0; k < 2; k++) {
        g = bad_graph(TG_I64, 2, &x, &p);
        cr_assert_null(tg_embedding(g, x, p, k ? -6 : 5));
        tt_assert_graph_error(g, "embedding: Padding_idx must be within num_embeddings");
        tg_graph_free(g);
    }
    g = bad_graph(TG_I64, 2, &x, &p);
    cr_assert_null(tg_embedding(g, x, NULL, 0));   /* sticky: NULL in, NULL out */
    cr_assert_null(tg_embedding(g, x, p, 0));
    tg_graph_free(g);
}

Test(embedding, cli_end_to_end)
{
    char err[1024], out[4096];
    const char *y = tt_path("y.npy");
    const char *const ok[] = {"op", "embedding", "padding_idx=1", "--in", TT_FIXTURES "/" DIR "/in0.npy",
                              "--in", TT_FIXTURES "/" DIR "/in1.npy", "--out", y, NULL};
    cr_assert_eq(tt_run_tool(ok, err, sizeof err), 0, "%s", err);
    tg_tensor *got = NULL;
    cr_assert_eq(tg_npy_load(y, &got), TG_OK, "%s", tg_last_error());
    tg_tensor_free(got);
    const char *const help[] = {"op", "embedding", "--help", NULL};
    cr_assert_eq(tt_run_tool_out(help, out, sizeof out, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(out, "padding_idx=null") && strstr(out, "int64"), "%s", out);
    tt_expect_cli_error(TT_ARGS("op", "embedding", "--in", TT_FIXTURES "/" DIR "/in1.npy",
                                "--in", TT_FIXTURES "/" DIR "/in1.npy", "--out", tt_path("e.npy")),
                        "embedding: --in #1 (input)", "Expected dtype int64 for input");
    tt_expect_cli_error(TT_ARGS("gradcheck", "embedding", "padding_idx=9", "--shape", "3",
                                "--shape", "4,2"), "Padding_idx must be within num_embeddings",
                        NULL);
}
