/*
 * diagram.c - write a layer's computation graph as a Graphviz diagram:
 * an AttentionLayer (TSL) built through the typed API, drawn with its
 * backward pass.
 *
 *     cc diagram.c $(pkg-config --cflags --libs tgraph) && ./a.out && dot -Tsvg attn.dot -o attn.svg
 */
#include <stdio.h>

#include <tgraph/tgraph.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "attn.dot";
    tg_params *ps = tg_params_new(TG_F32);
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    tg_attention_layer_config c = tg_attention_layer_defaults();
    c.d_model = 32;
    c.n_heads = 4;
    tg_attention_layer attn;
    if (tg_attention_layer_init(&attn, &c, ps, "", "self_attention", &rng)) {
        fprintf(stderr, "%s\n", tg_last_error());
        return 1;
    }
    tg_graph *g = tg_graph_new(TG_F32);
    int64_t shape[3] = {2, 10, 32};
    tg_node *x = tg_input(g, "x", TG_F32, 3, shape);
    tg_node *y = tg_attention_layer_build(g, &attn, x, x, x, NULL, NULL);
    if (!y) {
        fprintf(stderr, "%s\n", tg_graph_error(g));
        return 1;
    }
    tg_dot_opts o = {.backward = true, .title = "AttentionLayer, forward and backward"};
    if (tg_graph_dot_save(g, &o, path)) {
        fprintf(stderr, "%s\n", tg_last_error());
        return 1;
    }
    printf("wrote %s (%d nodes)\n", path, tg_graph_node_count(g));
    tg_graph_free(g);
    tg_params_free(ps);
    return 0;
}
