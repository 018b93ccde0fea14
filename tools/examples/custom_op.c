/*
 * custom_op.c - adding an op from outside the library: softplus,
 * y = log(1 + exp(x)), with its forward, its backward, and a gradient check.
 * The op table is open: an op is a tg_op descriptor (op.h) that nodes point to.
 *
 *     cc custom_op.c $(pkg-config --cflags --libs tgraph) -lm && ./a.out
 */
#include <math.h>
#include <stdio.h>

#include <tgraph/tgraph.h>

/* forward: y = log1p(exp(x)), computed stably as max(x, 0) + log1p(exp(-|x|)) */
static tg_status softplus_forward(tg_node *n)
{
    const double *x = n->in[0]->value.data;   /* this example supports float64 graphs */
    double *y = n->value.data;
    for (int64_t i = 0; i < n->value.numel; i++)
        y[i] = fmax(x[i], 0.0) + log1p(exp(-fabs(x[i])));
    return TG_OK;
}

/* backward, from y = softplus(x): dx += dy * sigmoid(x) */
static tg_status softplus_backward(tg_node *n)
{
    const double *x = n->in[0]->value.data, *dy = n->grad.data;
    double *dx = n->in[0]->grad.data;
    for (int64_t i = 0; i < n->value.numel; i++) dx[i] += dy[i] / (1.0 + exp(-x[i]));
    return TG_OK;
}

static const tg_op softplus_op = {
    .name = "softplus",
    .forward = softplus_forward,
    .backward = softplus_backward,
};

/* The builder: check the input, then create the node. */
static tg_node *softplus(tg_graph *g, tg_node *x)
{
    if (!tg_builder_check(g, "softplus", 1, &x)) return NULL;
    const tg_tensor *v = tg_node_value(x);
    if (v->dtype != TG_F64)
        return tg_graph_fail(g, "softplus: this example wants float64, got %s",
                             tg_dtype_name(v->dtype));
    return tg_node_new(g, &softplus_op, 1, &x, TG_F64, v->rank, v->shape);
}

int main(void)
{
    tg_graph *g = tg_graph_new(TG_F64);
    int64_t shape[2] = {3, 4};
    tg_node *x = tg_input(g, "x", TG_F64, 2, shape);
    tg_node_set_requires_grad(x, true);
    tg_node *y = tg_mean(g, softplus(g, tg_scale(g, x, 2.0)), NULL, 0, false);
    if (tg_graph_error(g)) {
        fprintf(stderr, "%s\n", tg_graph_error(g));
        return 1;
    }
    tg_rng rng;
    tg_rng_seed(&rng, 1);
    tg_init_normal((tg_tensor *)tg_node_value(x), 0, 1, &rng);

    tg_gradcheck_result res[1];
    int n = 0;
    bool ok = false;
    if (tg_gradcheck(g, y, NULL, res, 1, &n, &ok)) {
        fprintf(stderr, "%s\n", tg_last_error());
        return 1;
    }
    printf("softplus: y = %.6f, gradcheck of %s: worst relative error %.2e -> %s\n",
           ((const double *)tg_node_value(y)->data)[0], res[0].name, res[0].max_rel_err,
           ok ? "pass" : "FAIL");
    tg_graph_free(g);
    return ok ? 0 : 1;
}
