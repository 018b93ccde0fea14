/*
 * demo.c - `tgraph demo`: build a small MLP once, train it for a few hundred
 * steps of SGD on generated data, and print the falling loss. It shows the
 * engine end to end: inputs written per step, forward, backward, update.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "tgraph.h"
#include "args.h"
#include "cli.h"

/* y = sin(x0) + 0.5 * x1 * x2 + noise: a smooth target a 2-layer MLP can fit */
static void make_batch(tg_rng *rng, float *x, float *y, int B)
{
    for (int b = 0; b < B; b++) {
        for (int k = 0; k < 3; k++) x[b * 3 + k] = (float)(2 * tg_rng_uniform(rng) - 1);
        y[b] = (float)(sin(3 * x[b * 3]) + 0.5 * x[b * 3 + 1] * x[b * 3 + 2] +
                       0.01 * tg_rng_normal(rng));
    }
}

enum { O_STEPS };
static const tg_opt opts[] = {
    [O_STEPS] = {"--steps", NULL, "N", "training steps, default 300"},
};

/* --steps N (default 300); 2 after a message when the command line is wrong. */
static int parse_steps(int argc, char **argv, int *steps)
{
    tg_args a;
    tg_args_init(&a, "demo", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    while ((arg = tg_args_next(&a))) {
        int64_t v;
        if (a.opt != O_STEPS) return tg_cli_unknown(&a, arg);
        if (!tg_args_int(&a, 1, 1000000, &v)) return 2;
        *steps = (int)v;
    }
    return 0;
}

/* The MLP's parameters, its graph and the nodes a training step touches. */
typedef struct {
    tg_params *ps;
    tg_graph  *g;
    tg_node   *x, *t, *loss;   /* [B, 3] inputs, [B, 1] targets, the scalar MSE */
} demo_mlp;

/* ... and run many times with new data: SGD, the loss every 50 steps; 2 if a step fails. */
static int train_steps(const demo_mlp *m, int steps, int B, tg_rng *rng)
{
    tg_graph *g = m->g;
    tg_params *ps = m->ps;
    tg_node *x = m->x, *t = m->t, *loss = m->loss;
    float *xd = tg_node_value(x)->data, *yd = tg_node_value(t)->data;
    double first = 0, avg = 0;
    int rc = 0;
    for (int step = 1; step <= steps; step++) {
        make_batch(rng, xd, yd, B);
        tg_params_zero_grad(ps);
        if (tg_graph_forward(g) || tg_graph_backward(g, loss, NULL)) {
            fprintf(stderr, "tgraph demo: %s\n", tg_last_error());
            rc = 2;
            break;
        }
        for (int i = 0; i < tg_params_count(ps); i++) {
            tg_param *p = tg_params_at(ps, i);
            float *v = p->value.data, *gr = p->grad.data;
            for (int64_t k = 0; k < p->value.numel; k++) v[k] -= 0.1f * gr[k];
        }
        double l = ((float *)tg_node_value(loss)->data)[0];
        if (step == 1) first = l;
        avg += l;
        if (step % 50 == 0 || step == 1) {
            printf("step %4d  loss %.5f\n", step, step == 1 ? l : avg / 50);
            avg = 0;
        }
    }
    if (!rc) printf("loss fell from %.4f to %.4f\n", first,
                    ((float *)tg_node_value(loss)->data)[0]);
    return rc;
}

static int run(int argc, char **argv)
{
    int steps = 300;
    if (parse_steps(argc, argv, &steps)) return 2;
    enum { B = 64, IN = 3, HID = 32 };
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w1 = tg_params_add(ps, "0.weight", 2, (int64_t[]){HID, IN});
    tg_param *b1 = tg_params_add(ps, "0.bias", 1, (int64_t[]){HID});
    tg_param *w2 = tg_params_add(ps, "2.weight", 2, (int64_t[]){1, HID});
    tg_param *b2 = tg_params_add(ps, "2.bias", 1, (int64_t[]){1});
    if (!w1 || !b1 || !w2 || !b2) {
        fprintf(stderr, "tgraph demo: %s\n", tg_last_error());
        tg_params_free(ps);
        return 2;
    }
    tg_init_kaiming_uniform(&w1->value, sqrt(5.0), &rng);
    tg_init_uniform(&b1->value, -1 / sqrt(IN), 1 / sqrt(IN), &rng);
    tg_init_kaiming_uniform(&w2->value, sqrt(5.0), &rng);
    tg_init_uniform(&b2->value, -1 / sqrt(HID), 1 / sqrt(HID), &rng);

    /* the graph is built once ... */
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){B, IN});
    tg_node *t = tg_input(g, "y", TG_F32, 2, (int64_t[]){B, 1});
    tg_node *h = tg_relu(g, tg_linear(g, x, tg_param_node(g, w1), tg_param_node(g, b1)));
    tg_node *yhat = tg_linear(g, h, tg_param_node(g, w2), tg_param_node(g, b2));
    tg_node *loss = tg_mse_loss(g, yhat, t, TG_REDUCTION_MEAN);
    if (tg_graph_error(g)) {
        fprintf(stderr, "tgraph demo: %s\n", tg_graph_error(g));
        tg_graph_free(g);
        tg_params_free(ps);
        return 2;
    }
    printf("tgraph demo: MLP 3 -> %d -> 1 (%lld parameters), batch %d, SGD lr 0.1\n", HID,
           (long long)tg_params_numel(ps), B);
    demo_mlp m = {ps, g, x, t, loss};
    int rc = train_steps(&m, steps, B, &rng);
    tg_graph_free(g);
    tg_params_free(ps);
    return rc;
}

const tg_cli_cmd tg_cmd_demo = {
    .name = "demo",
    .summary = "train a tiny MLP on generated data and print the falling loss",
    .help = "usage: tgraph demo [--steps N]\n\n"
            "Builds a 3 -> 32 -> 1 MLP graph once, then trains it with SGD for N steps\n"
            "(default 300) on freshly generated batches, printing the loss.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more = "\nexample:\n  tgraph demo --steps 500\n",
    .run = run,
};
