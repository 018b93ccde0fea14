/*
 * train_classifier.c - a small MLP classifier trained through the library's
 * trainer (tg_trainer): three classes of 2-d points around three centres,
 * Linear(2, 32) -> ReLU -> Linear(32, 3), cross-entropy, Adam, validation
 * loss each epoch with early stopping, the best and last checkpoints in a
 * temporary directory, and Ctrl-C stopping the run cleanly between steps.
 * Prints the falling loss, then the best weights' validation accuracy.
 *
 *     cc train_classifier.c $(pkg-config --cflags --libs tgraph) && ./a.out
 *
 * What it is not: a data pipeline. Batches are written into the graph's
 * input nodes by a callback; the trainer owns only the loop.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tgraph/tgraph.h>

#define N_TRAIN 600
#define N_VAL   300
#define CLASSES 3
#define HIDDEN  32
#define BATCH   30

typedef struct task {
    float    xs[N_TRAIN][2], vx[N_VAL][2];   /* points */
    int64_t  ys[N_TRAIN], vy[N_VAL];         /* classes */
    int64_t  order[N_TRAIN];                 /* this epoch's shuffle */
    tg_node *x, *y;                          /* training graph inputs [BATCH, 2], [BATCH] */
    tg_graph *ge;                            /* evaluation graph over the whole val set */
    tg_node *ex, *ey, *elogits, *eloss;
    double   accuracy;                       /* of the last validation */
} task;

static volatile sig_atomic_t stop_flag;
static void on_sigint(int sig) { (void)sig; stop_flag = 1; }

/* A point of class c: around the c-th of three centres on a circle. */
static void sample(tg_rng *r, float *x, int64_t *y)
{
    int64_t c = (int64_t)tg_rng_below(r, CLASSES);
    double a = 2 * 3.14159265358979 * (double)c / CLASSES;
    x[0] = (float)(2 * cos(a) + 1.0 * tg_rng_normal(r));
    x[1] = (float)(2 * sin(a) + 1.0 * tg_rng_normal(r));
    *y = c;
}

/* The trainer asks for batch k of an epoch; at k == 0 the order is shuffled
 * with the trainer's data RNG (saved in checkpoints: a resume draws the same). */
static tg_status fill(void *user, int64_t epoch, int64_t k, tg_rng *rng)
{
    task *t = user;
    (void)epoch;
    if (k == 0) {
        for (int64_t i = 0; i < N_TRAIN; i++) t->order[i] = i;
        tg_shuffle_i64(t->order, N_TRAIN, rng);
    }
    float *x = tg_node_value(t->x)->data;      /* [BATCH, 2] */
    int64_t *y = tg_node_value(t->y)->data;    /* [BATCH] */
    for (int64_t i = 0; i < BATCH; i++) {
        int64_t s = t->order[k * BATCH + i];
        x[2 * i] = t->xs[s][0];
        x[2 * i + 1] = t->xs[s][1];
        y[i] = t->ys[s];
    }
    return TG_OK;
}

/* Validation: the cross-entropy of the whole validation set (the metric the
 * trainer minimises) and, on the side, the accuracy. */
static tg_status validate(void *user, int64_t epoch, double *metric)
{
    task *t = user;
    (void)epoch;
    tg_status st = tg_graph_forward(t->ge);
    if (st) return st;
    const float *lg = tg_node_value(t->elogits)->data;   /* [N_VAL, CLASSES] */
    int64_t right = 0;
    for (int64_t i = 0; i < N_VAL; i++) {
        int64_t best = 0;
        for (int64_t c = 1; c < CLASSES; c++)
            if (lg[i * CLASSES + c] > lg[i * CLASSES + best]) best = c;
        right += best == t->vy[i];
    }
    t->accuracy = (double)right / N_VAL;
    *metric = tg_tensor_get(tg_node_value(t->eloss), 0);
    return TG_OK;
}

static tg_status progress(void *user, const tg_trainer_progress *p)
{
    task *t = user;
    if (p->event == TG_TRAINER_EVENT_EPOCH && (p->epoch <= 3 || p->epoch % 5 == 0 || p->best))
        printf("epoch %2lld  train loss %.4f  val loss %.4f  val acc %.3f%s\n",
               (long long)p->epoch, p->loss, p->metric, t->accuracy, p->best ? "  *" : "");
    return TG_OK;
}

/* logits = fc2(relu(fc1(x))) on graph g */
static tg_node *mlp(tg_graph *g, tg_params *ps, tg_node *x)
{
    tg_node *h = tg_linear(g, x, tg_param_node(g, tg_params_find(ps, "fc1.weight")),
                           tg_param_node(g, tg_params_find(ps, "fc1.bias")));
    return tg_linear(g, tg_relu(g, h), tg_param_node(g, tg_params_find(ps, "fc2.weight")),
                     tg_param_node(g, tg_params_find(ps, "fc2.bias")));
}

int main(void)
{
    static task t;
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    for (int i = 0; i < N_TRAIN; i++) sample(&rng, t.xs[i], &t.ys[i]);
    for (int i = 0; i < N_VAL; i++) sample(&rng, t.vx[i], &t.vy[i]);

    /* parameters, initialised like nn.Linear: U(-1/sqrt(in), 1/sqrt(in)) */
    tg_params *ps = tg_params_new(TG_F32);
    const int64_t shapes[4][2] = {{HIDDEN, 2}, {HIDDEN, 0}, {CLASSES, HIDDEN}, {CLASSES, 0}};
    const char *names[4] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
    for (int i = 0; i < 4; i++) {
        tg_param *p = tg_params_add(ps, names[i], shapes[i][1] ? 2 : 1, shapes[i]);
        double bound = 1 / sqrt(i < 2 ? 2.0 : (double)HIDDEN);
        if (p) tg_init_uniform(&p->value, -bound, bound, &rng);
    }

    /* the training graph [BATCH] and the evaluation graph [N_VAL], built once */
    tg_graph *g = tg_graph_new(TG_F32);
    t.x = tg_input(g, "x", TG_F32, 2, (int64_t[]){BATCH, 2});
    t.y = tg_input(g, "y", TG_I64, 1, (int64_t[]){BATCH});
    tg_node *loss = tg_cross_entropy(g, mlp(g, ps, t.x), t.y, NULL, -100, TG_REDUCTION_MEAN, 0);
    t.ge = tg_graph_new(TG_F32);
    t.ex = tg_input(t.ge, "x", TG_F32, 2, (int64_t[]){N_VAL, 2});
    t.ey = tg_input(t.ge, "y", TG_I64, 1, (int64_t[]){N_VAL});
    t.elogits = mlp(t.ge, ps, t.ex);
    t.eloss = tg_cross_entropy(t.ge, t.elogits, t.ey, NULL, -100, TG_REDUCTION_MEAN, 0);
    if (tg_graph_error(g) || tg_graph_error(t.ge)) {
        fprintf(stderr, "%s\n", tg_graph_error(g) ? tg_graph_error(g) : tg_graph_error(t.ge));
        return 1;
    }
    memcpy(tg_node_value(t.ex)->data, t.vx, sizeof t.vx);
    memcpy(tg_node_value(t.ey)->data, t.vy, sizeof t.vy);
    tg_optim *adam = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 2e-3});

    /* checkpoints in a fresh temporary directory */
    char dir[] = "/tmp/tgraph-classifier-XXXXXX";
    if (!adam || !mkdtemp(dir)) {
        fprintf(stderr, "setup failed: %s\n", adam ? "mkdtemp" : tg_last_error());
        return 1;
    }
    size_t len = strlen(dir) + sizeof "/best.safetensors";
    char *best = malloc(len), *last = malloc(len);
    if (!best || !last) return 1;
    snprintf(best, len, "%s/best.safetensors", dir);
    snprintf(last, len, "%s/last.safetensors", dir);

    /* the trainer: everything it points to is ours and outlives the run */
    tg_trainer tr;
    tg_trainer_init(&tr);
    tr.graph = g, tr.loss = loss, tr.ps = ps, tr.optim = adam;
    tr.lr = 2e-3, tr.schedule = TG_LR_CONSTANT;
    tr.epochs = 60, tr.steps_per_epoch = N_TRAIN / BATCH, tr.patience = 5;
    tr.batch = fill, tr.validate = validate, tr.progress = progress, tr.user = &t;
    tr.best_path = best, tr.last_path = last;
    tr.stop = &stop_flag;
    signal(SIGINT, on_sigint);
    tg_trainer_seed(&tr, 42);
    tg_checkpoint_set_meta(&tr.state, "model", "mlp 2-32-3");

    int rc = 1;
    if (tg_trainer_run(&tr)) {
        fprintf(stderr, "training failed: %s\n", tg_last_error());
    } else {
        const char *why[] = {"?", "every epoch trained", "early stopping", "stopped (Ctrl-C)"};
        printf("%s after epoch %lld; best epoch %lld (val loss %.4f)\n", why[tr.end],
               (long long)tr.state.epoch, (long long)tr.state.best_epoch, tr.state.best_val);
        /* the best weights back from their checkpoint, then the final accuracy */
        tg_checkpoint ck;
        tg_checkpoint_init(&ck);
        double val_loss;
        if (tg_checkpoint_read(best, &ck) || tg_checkpoint_restore_params(&ck, ps) ||
            validate(&t, 0, &val_loss)) {
            fprintf(stderr, "%s\n", tg_last_error());
        } else {
            printf("best weights: val loss %.4f, val accuracy %.3f\n", val_loss, t.accuracy);
            rc = t.accuracy > 0.7 ? 0 : 1;   /* chance is 1/3 */
        }
        tg_checkpoint_clear(&ck);
    }
    remove(best);
    remove(last);
    rmdir(dir);
    free(best);
    free(last);
    tg_trainer_clear(&tr);
    tg_optim_free(adam);
    tg_graph_free(t.ge);
    tg_graph_free(g);
    tg_params_free(ps);
    return rc;
}
