/*
 * train_tsa.c - a Two-Stage Attention layer (Crossformer) trained for a few
 * steps through the C API: parameters in a store, the graph built once, then
 * forward / backward / Adam on fresh random batches. The target is a fixed
 * random linear map of the input, so the loss has something to fall towards.
 *
 *     cc train_tsa.c $(pkg-config --cflags --libs tgraph) && ./a.out
 */
#include <stdio.h>

#include <tgraph/tgraph.h>

int main(void)
{
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    tg_params *ps = tg_params_new(TG_F32);

    /* TwoStageAttentionLayer(seg_num=6, factor=2, d_model=16, n_heads=2), dropout 0.1 */
    tg_tsa_config c = tg_tsa_defaults();
    c.b = 8, c.ts_d = 3, c.seg_num = 6, c.d_model = 16, c.factor = 2, c.n_heads = 2;
    tg_tsa tsa;
    if (tg_tsa_init(&tsa, &c, ps, "", "tsa", &rng)) {
        fprintf(stderr, "%s\n", tg_last_error());
        return 1;
    }

    /* the graph, built once: y = tsa(x); loss = mse(y, target) */
    tg_graph *g = tg_graph_new(TG_F32);
    int64_t shape[4] = {c.b, c.ts_d, c.seg_num, c.d_model};
    tg_node *x = tg_input(g, "x", TG_F32, 4, shape);
    tg_node *t = tg_input(g, "target", TG_F32, 4, shape);
    tg_node *y = tg_tsa_build(g, &tsa, x);
    tg_node *loss = tg_mse_loss(g, y, t, TG_REDUCTION_MEAN);
    if (tg_graph_error(g)) {
        fprintf(stderr, "%s\n", tg_graph_error(g));
        return 1;
    }
    tg_graph_set_training(g, true);   /* dropout on */

    tg_optim *adam = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 3e-3});
    tg_tensor *mix = tg_tensor_new(TG_F32, 2, (int64_t[]){c.d_model, c.d_model});
    tg_init_normal(mix, 0, 0.3, &rng);
    printf("TSA with %lld parameters, %d graph nodes\n", (long long)tg_params_numel(ps),
           tg_graph_node_count(g));

    float *xd = tg_node_value(x)->data, *td = tg_node_value(t)->data;
    const float *m = mix->data;
    const int64_t rows = c.b * c.ts_d * c.seg_num, d = c.d_model;
    double first = 0, last = 0;
    for (int step = 1; step <= 60; step++) {
        for (int64_t i = 0; i < rows * d; i++) xd[i] = (float)tg_rng_normal(&rng);
        for (int64_t r = 0; r < rows; r++)     /* target = tanh-free linear mix of x */
            for (int64_t j = 0; j < d; j++) {
                float s = 0;
                for (int64_t k = 0; k < d; k++) s += xd[r * d + k] * m[k * d + j];
                td[r * d + j] = s;
            }
        tg_params_zero_grad(ps);
        if (tg_graph_forward(g) || tg_graph_backward(g, loss, NULL) || tg_optim_step(adam)) {
            fprintf(stderr, "%s\n", tg_last_error());
            return 1;
        }
        last = ((const float *)tg_node_value(loss)->data)[0];
        if (step == 1) first = last;
        if (step % 20 == 0 || step == 1) printf("step %2d  loss %.4f\n", step, last);
    }
    printf("loss %.4f -> %.4f\n", first, last);
    tg_tensor_free(mix);
    tg_optim_free(adam);
    tg_graph_free(g);
    tg_params_free(ps);
    return last < first ? 0 : 1;
}
