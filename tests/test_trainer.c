/*
 * test_trainer.c - the library's training loop (engine/train/trainer.h) on
 * linear regression (y = x w^T + b, 4 features, MSE): it converges; early
 * stopping stops after `patience` epochs without improvement; the best and
 * last checkpoints are written; a stop request stops between steps leaving
 * the last epoch's checkpoint complete, and resuming from it gives the
 * parameters of the uninterrupted run bit for bit; bad settings get errors
 * naming the field; the progress callback sees every step and epoch;
 * max_steps ends a run, and a mid-epoch stop resumes to the same bits.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "trainer.h"

#define N_TRAIN 64
#define N_VAL   32
#define FEAT    4
#define BATCH   16

TestSuite(trainer);

/* One regression problem and the model being trained on it. */
typedef struct lin {
    float      xs[N_TRAIN][FEAT], ys[N_TRAIN];
    float      vx[N_VAL][FEAT], vy[N_VAL];
    int64_t    order[N_TRAIN];
    tg_params *ps;
    tg_param  *w, *b;
    tg_graph  *g;
    tg_node   *x, *y, *pred, *loss;
    tg_optim  *opt;
    /* what the callbacks do or saw */
    volatile sig_atomic_t stop;
    int64_t    stop_epoch, stop_k;    /* set stop at this batch (-1: never) */
    double     fixed_metric;          /* > 0: validate returns it (no improvement) */
    int64_t    n_step, n_validated, n_epoch, last_k;
    int64_t    bad_order;             /* progress events out of order */
    int64_t    steps_seen, total_steps, bad;   /* steps, the totals progress saw; bad totals */
} lin;

static const float true_w[FEAT] = {1.0f, -2.0f, 0.5f, 3.0f};
static const float true_b = 0.7f;

static void make_data(lin *l)
{
    tg_rng r;
    tg_rng_seed(&r, 1234);
    for (int i = 0; i < N_TRAIN + N_VAL; i++) {
        float *x = i < N_TRAIN ? l->xs[i] : l->vx[i - N_TRAIN], y = true_b;
        for (int f = 0; f < FEAT; f++) {
            x[f] = (float)tg_rng_normal(&r);
            y += true_w[f] * x[f];
        }
        y += 0.01f * (float)tg_rng_normal(&r);
        if (i < N_TRAIN) l->ys[i] = y;
        else l->vy[i - N_TRAIN] = y;
    }
}

/* dropout p > 0 after the linear layer: the graph's RNG matters to the bits */
static void lin_init_drop(lin *l, double lr, double p)
{
    memset(l, 0, sizeof *l);
    l->stop_epoch = -1;
    make_data(l);
    l->ps = tg_params_new(TG_F32);
    l->w = tg_params_add(l->ps, "w", 2, (int64_t[]){1, FEAT});
    l->b = tg_params_add(l->ps, "b", 1, (int64_t[]){1});
    tg_rng r;
    tg_rng_seed(&r, 7);
    tg_init_uniform(&l->w->value, -0.5, 0.5, &r);
    l->g = tg_graph_new(TG_F32);
    l->x = tg_input(l->g, "x", TG_F32, 2, (int64_t[]){BATCH, FEAT});
    l->y = tg_input(l->g, "y", TG_F32, 2, (int64_t[]){BATCH, 1});
    l->pred = tg_linear(l->g, l->x, tg_param_node(l->g, l->w), tg_param_node(l->g, l->b));
    tg_node *h = p > 0 ? tg_dropout(l->g, l->pred, p) : l->pred;
    l->loss = tg_mse_loss(l->g, h, l->y, TG_REDUCTION_MEAN);
    cr_assert_null(tg_graph_error(l->g), "%s", tg_graph_error(l->g));
    l->opt = tg_optim_new(l->ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = lr});
    cr_assert_not_null(l->opt);
}

static void lin_init(lin *l, double lr) { lin_init_drop(l, lr, 0); }

static void lin_free(lin *l)
{
    tg_optim_free(l->opt);
    tg_graph_free(l->g);
    tg_params_free(l->ps);
}

static tg_status fill(void *user, int64_t epoch, int64_t k, tg_rng *rng)
{
    lin *l = user;
    if (epoch == l->stop_epoch && k == l->stop_k) l->stop = 1;
    if (k == 0) {
        for (int64_t i = 0; i < N_TRAIN; i++) l->order[i] = i;
        tg_shuffle_i64(l->order, N_TRAIN, rng);
    }
    float *x = tg_node_value(l->x)->data, *y = tg_node_value(l->y)->data;
    for (int64_t i = 0; i < BATCH; i++) {
        int64_t s = l->order[k * BATCH + i];
        memcpy(x + i * FEAT, l->xs[s], sizeof l->xs[s]);
        y[i] = l->ys[s];
    }
    return TG_OK;
}

static tg_status validate(void *user, int64_t epoch, double *metric)
{
    lin *l = user;
    (void)epoch;
    if (l->fixed_metric > 0) {
        *metric = l->fixed_metric;
        return TG_OK;
    }
    const float *w = l->w->value.data, *b = l->b->value.data;
    double se = 0;
    for (int i = 0; i < N_VAL; i++) {
        double p = b[0];
        for (int f = 0; f < FEAT; f++) p += w[f] * l->vx[i][f];
        se += (p - l->vy[i]) * (p - l->vy[i]);
    }
    *metric = se / N_VAL;
    return TG_OK;
}

static tg_status progress(void *user, const tg_trainer_progress *p)
{
    lin *l = user;
    if (p->event == TG_TRAINER_EVENT_STEP) {
        l->n_step++;
        l->steps_seen++;
        l->total_steps = p->total_steps;
        if (p->call_steps != l->steps_seen || p->call_seconds < 0 || p->epoch_seconds < 0 ||
            p->epoch_seconds > p->call_seconds + 1e-9)
            l->bad++;
        l->last_k = p->k;
        if (p->step != (p->epoch - 1) * p->steps_per_epoch + p->k) l->bad_order++;
    } else if (p->event == TG_TRAINER_EVENT_VALIDATED) {
        l->n_validated++;
        if (l->n_validated != l->n_epoch + 1 || p->k != p->steps_per_epoch) l->bad_order++;
    } else {
        l->n_epoch++;
        if (l->n_epoch != l->n_validated || !isfinite(p->metric)) l->bad_order++;
    }
    return TG_OK;
}

static void trainer_for(tg_trainer *t, lin *l, int64_t epochs)
{
    tg_trainer_init(t);
    t->graph = l->g;
    t->loss = l->loss;
    t->ps = l->ps;
    t->optim = l->opt;
    t->lr = 0.05;
    t->schedule = TG_LR_TYPE1;
    t->epochs = epochs;
    t->steps_per_epoch = N_TRAIN / BATCH;
    t->batch = fill;
    t->validate = validate;
    t->progress = progress;
    t->user = l;
    t->stop = &l->stop;
    tg_trainer_seed(t, 3);
}

Test(trainer, converges)
{
    lin l;
    lin_init(&l, 0.05);
    tg_trainer t;
    trainer_for(&t, &l, 60);
    t.schedule = TG_LR_CONSTANT;
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t.end, TG_TRAINER_DONE);
    cr_assert_eq(t.state.epoch, 60);
    cr_assert_eq(t.state.step, 60 * 4);
    cr_assert_eq(t.state.history_rows, 60);
    double first = t.state.history[3], last = t.state.history[59 * TG_CKPT_HISTORY_COLS + 3];
    cr_assert(last < 1e-2 && last < first / 100, "val mse %g -> %g", first, last);
    const float *w = l.w->value.data;
    for (int f = 0; f < FEAT; f++)
        cr_assert(fabsf(w[f] - true_w[f]) < 0.05f, "w[%d] = %g, want %g", f, w[f], true_w[f]);
    tg_trainer_clear(&t);
    lin_free(&l);
}

Test(trainer, early_stopping_after_patience)
{
    lin l;
    lin_init(&l, 0.05);
    l.fixed_metric = 1.0;   /* epoch 1 is the best, none after it improves */
    tg_trainer t;
    trainer_for(&t, &l, 20);
    t.patience = 3;
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t.end, TG_TRAINER_EARLY_STOP);
    cr_assert_eq(t.state.epoch, 4, "stopped after epoch %lld", (long long)t.state.epoch);
    cr_assert_eq(t.state.best_epoch, 1);
    cr_assert_eq(t.state.bad_epochs, 3);
    /* running it again trains nothing: the patience is spent */
    cr_assert_eq(tg_trainer_run(&t), TG_OK);
    cr_assert_eq(t.end, TG_TRAINER_EARLY_STOP);
    cr_assert_eq(t.state.epoch, 4);
    tg_trainer_clear(&t);
    lin_free(&l);
}

Test(trainer, best_and_last_checkpoints)
{
    lin l;
    lin_init(&l, 0.05);
    tg_trainer t;
    trainer_for(&t, &l, 5);
    char *best = strdup(tt_path("best.safetensors")), *last = strdup(tt_path("last.safetensors"));
    t.best_path = best;
    t.last_path = last;
    cr_assert_eq(tg_checkpoint_set_meta(&t.state, "task", "regression"), TG_OK);
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_checkpoint_read(last, &ck), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ck.epoch, 5);
    cr_assert_eq(ck.step, 20);
    cr_assert_eq(ck.history_rows, 5);
    cr_assert_str_eq(tg_checkpoint_meta(&ck, "task"), "regression");
    tg_checkpoint_clear(&ck);
    cr_assert_eq(tg_checkpoint_read(best, &ck), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ck.epoch, t.state.best_epoch);
    cr_assert_eq(ck.best_val, t.state.best_val);
    tg_checkpoint_clear(&ck);
    free(best);
    free(last);
    tg_trainer_clear(&t);
    lin_free(&l);
}

/* A stop request during epoch 4's batch 2: the run returns between steps, the last checkpoint is epoch 3's and complete; resuming from it in
 * a fresh process-like setup gives the uninterrupted run's parameters. */
Test(trainer, stop_then_resume_is_bit_identical)
{
    const int64_t epochs = 7;
    lin a;
    lin_init(&a, 0.05);
    tg_trainer ta;
    trainer_for(&ta, &a, epochs);
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ta.end, TG_TRAINER_DONE);

    char *last = strdup(tt_path("last.safetensors")), *best = strdup(tt_path("best.safetensors"));
    lin b;
    lin_init(&b, 0.05);
    b.stop_epoch = 3;
    b.stop_k = 2;
    tg_trainer tb;
    trainer_for(&tb, &b, epochs);
    tb.last_path = last;
    tb.best_path = best;
    cr_assert_eq(tg_trainer_run(&tb), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tb.end, TG_TRAINER_STOPPED);
    /* set while batch 2 was filled: that step finishes, the next does not start */
    cr_assert_eq(tb.k, 3, "stopped before step %lld", (long long)tb.k);
    cr_assert_eq(tb.state.step, 3 * 4 + 3);

    lin c;
    lin_init(&c, 0.05);   /* fresh parameters, optimizer and trainer */
    tg_trainer tc;
    trainer_for(&tc, &c, epochs);
    tc.last_path = last;
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_checkpoint_read(last, &ck), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ck.epoch, 3, "the last complete epoch");
    cr_assert_eq(ck.step, 12);
    cr_assert_eq(tg_trainer_resume(&tc, &ck), TG_OK, "%s", tg_last_error());
    tg_checkpoint_clear(&ck);
    cr_assert_eq(tg_trainer_run(&tc), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tc.end, TG_TRAINER_DONE);
    cr_assert_eq(tc.state.epoch, epochs);
    cr_assert_eq(tc.state.step, ta.state.step);
    cr_assert(!memcmp(c.w->value.data, a.w->value.data, FEAT * sizeof(float)), "w differs");
    cr_assert(!memcmp(c.b->value.data, a.b->value.data, sizeof(float)), "b differs");
    for (int64_t i = 0; i < epochs; i++)   /* loss and metric of every epoch, bit for bit */
        for (int col = 0; col < 5; col++)
            cr_assert_eq(tc.state.history[i * TG_CKPT_HISTORY_COLS + col],
                         ta.state.history[i * TG_CKPT_HISTORY_COLS + col], "epoch %lld col %d",
                         (long long)i + 1, col);
    cr_assert_eq(tc.state.best_epoch, ta.state.best_epoch);
    free(last);
    free(best);
    tg_trainer_clear(&ta);
    tg_trainer_clear(&tb);
    tg_trainer_clear(&tc);
    lin_free(&a);
    lin_free(&b);
    lin_free(&c);
}

/* A stop already requested: nothing runs, nothing is written. */
Test(trainer, stop_before_the_first_step)
{
    lin l;
    lin_init(&l, 0.05);
    tg_trainer t;
    trainer_for(&t, &l, 3);
    t.last_path = tt_path("last.safetensors");
    l.stop = 1;
    cr_assert_eq(tg_trainer_run(&t), TG_OK);
    cr_assert_eq(t.end, TG_TRAINER_STOPPED);
    cr_assert_eq(t.state.step, 0);
    cr_assert_eq(l.n_step, 0);
    cr_assert_neq(access(t.last_path, F_OK), 0);
    tg_trainer_clear(&t);
    lin_free(&l);
}

Test(trainer, bad_settings_are_named)
{
    cr_assert_eq(tg_trainer_run(NULL), TG_ERR_INVALID);
    tt_assert_last_error("t is NULL");
    lin l;
    lin_init(&l, 0.05);
    tg_trainer t;
    struct { const char *needle; } cases[] = {{"batch"}, {"epochs must be >= 1, got 0"},
                                              {"steps_per_epoch must be >= 1, got 0"},
                                              {"lr must be > 0"}, {"graph is NULL"},
                                              {"loss must be a scalar"}, {"optim is NULL"},
                                              {"patience < 0"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        trainer_for(&t, &l, 3);
        switch (i) {
        case 0: t.batch = NULL; break;
        case 1: t.epochs = 0; break;
        case 2: t.steps_per_epoch = 0; break;
        case 3: t.lr = 0; break;
        case 4: t.graph = NULL; break;
        case 5: t.loss = l.pred; break;
        case 6: t.optim = NULL; break;
        case 7: t.patience = -1; break;
        }
        cr_assert_eq(tg_trainer_run(&t), TG_ERR_INVALID, "case %zu", i);
        cr_assert_eq(t.phase, TG_TRAINER_PHASE_SETUP);
        tt_assert_last_error(cases[i].needle);
        cr_assert_eq(t.state.step, 0);
        tg_trainer_clear(&t);
    }
    cr_assert_eq(l.n_step, 0);
    trainer_for(&t, &l, 3);
    t.ps = NULL;
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_trainer_resume(&t, &ck), TG_ERR_INVALID);
    tt_assert_last_error("set the trainer's ps first");
    tg_trainer_clear(&t);
    lin_free(&l);
}

/* The callbacks: every step and epoch reported in order, and a callback's
 * error ends the run with its status and phase. */
static tg_status failing_validate(void *user, int64_t epoch, double *metric)
{
    (void)user, (void)metric;
    return epoch == 2 ? tg_set_error(TG_ERR_NUMERIC, "validation broke") : (*metric = 1, TG_OK);
}

Test(trainer, progress_counts_and_callback_errors)
{
    lin l;
    lin_init(&l, 0.05);
    tg_trainer t;
    trainer_for(&t, &l, 5);
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(l.n_step, 5 * 4);
    cr_assert_eq(l.n_validated, 5);
    cr_assert_eq(l.n_epoch, 5);
    cr_assert_eq(l.last_k, 4);
    cr_assert_eq(l.bad_order, 0);
    tg_trainer_clear(&t);

    trainer_for(&t, &l, 5);
    t.validate = failing_validate;
    cr_assert_eq(tg_trainer_run(&t), TG_ERR_NUMERIC);
    cr_assert_eq(t.phase, TG_TRAINER_PHASE_VALIDATE);
    cr_assert_eq(t.state.epoch, 1);
    tt_assert_last_error("validation broke");
    tg_trainer_clear(&t);

    /* no validate callback: the epoch's training loss is the metric */
    trainer_for(&t, &l, 2);
    t.validate = NULL;
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t.state.history[3], t.state.history[2]);
    cr_assert_eq(t.state.best_epoch, 2);
    tg_trainer_clear(&t);
    lin_free(&l);
}

/* A non-finite loss names the op; a checkpoint path that cannot be written
 * is a SAVE failure naming the file. */
Test(trainer, numeric_and_save_failures)
{
    lin l;
    lin_init(&l, 0.05);
    l.xs[5][0] = NAN;
    tg_trainer t;
    trainer_for(&t, &l, 2);
    cr_assert_eq(tg_trainer_run(&t), TG_ERR_NUMERIC);
    cr_assert_eq(t.phase, TG_TRAINER_PHASE_STEP);
    tt_assert_last_error("non-finite value");
    tg_trainer_clear(&t);
    l.xs[5][0] = 0;

    trainer_for(&t, &l, 2);
    t.last_path = tt_path("missing/last.safetensors");
    cr_assert_neq(tg_trainer_run(&t), TG_OK);
    cr_assert_eq(t.phase, TG_TRAINER_PHASE_SAVE);
    tt_assert_last_error("saving a checkpoint");
    tt_assert_last_error("missing/last.safetensors");
    tg_trainer_clear(&t);
    lin_free(&l);
}

/* ---- max_steps: the run ends there; a mid-epoch stop saves a checkpoint that
 * resumes to the bits of the uninterrupted run (from the file, and in the
 * same process); the progress callback's totals ---- */

static void trainer_steps_for(tg_trainer *t, lin *l, int64_t max_steps, const char *last)
{
    trainer_for(t, l, 5);
    t->max_steps = max_steps;
    t->last_path = last;
    tg_trainer_seed(t, 5);
}

static void assert_same_state(const lin *a, const tg_trainer *ta, const lin *b,
                              const tg_trainer *tb)
{
    cr_assert_arr_eq(a->w->value.data, b->w->value.data, FEAT * sizeof(float));
    cr_assert_arr_eq(a->b->value.data, b->b->value.data, sizeof(float));
    cr_assert_eq(ta->state.step, tb->state.step);
    cr_assert_eq(ta->state.epoch, tb->state.epoch);
    cr_assert_eq(ta->state.history_rows, tb->state.history_rows);
    for (int64_t i = 0; i < ta->state.history_rows * TG_CKPT_HISTORY_COLS; i++)
        if (i % TG_CKPT_HISTORY_COLS != 5)   /* not the seconds */
            cr_assert_eq(ta->state.history[i], tb->state.history[i], "history value %lld",
                         (long long)i);
}

TestSuite(trainer_steps);

Test(trainer_steps, max_steps_mid_epoch_resumes_to_the_uninterrupted_bits)
{
    lin s, a, b;
    tg_trainer ts, ta, tb;
    /* straight: 5 epochs of 4 steps */
    lin_init_drop(&s, 0.05, 0.2);
    trainer_steps_for(&ts, &s, 0, NULL);
    cr_assert_eq(tg_trainer_run(&ts), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ts.end, TG_TRAINER_DONE);
    cr_assert_eq(ts.state.step, 20);
    cr_assert_eq(s.total_steps, 20);

    /* 6 steps: epoch 1 and two steps of epoch 2, saved there */
    const char *ck = tt_path("last.safetensors");
    lin_init_drop(&a, 0.05, 0.2);
    trainer_steps_for(&ta, &a, 6, ck);
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ta.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(ta.state.step, 6);
    cr_assert_eq(ta.state.epoch, 1);
    cr_assert_eq(ta.state.history_rows, 1);
    cr_assert_eq(a.steps_seen, 6);
    cr_assert_eq(a.total_steps, 6);
    cr_assert_eq(a.bad, 0);

    /* from the file, into a fresh model: the rest of the run */
    tg_checkpoint c;
    tg_checkpoint_init(&c);
    cr_assert_eq(tg_checkpoint_read(ck, &c), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_checkpoint_meta(&c, "trainer.epoch_step"), "2");
    lin_init_drop(&b, 0.05, 0.2);
    trainer_steps_for(&tb, &b, 0, NULL);
    cr_assert_eq(tg_trainer_resume(&tb, &c), TG_OK, "%s", tg_last_error());
    tg_checkpoint_clear(&c);
    cr_assert_eq(tb.resume_k, 2);
    cr_assert_eq(tg_trainer_run(&tb), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tb.end, TG_TRAINER_DONE);
    cr_assert_eq(b.steps_seen, 14);
    assert_same_state(&s, &ts, &b, &tb);

    /* in the same process: a larger max_steps goes on (11 = mid-epoch again) */
    ta.max_steps = 11;
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ta.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(ta.state.step, 11);
    ta.max_steps = 0;
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ta.end, TG_TRAINER_DONE);
    assert_same_state(&s, &ts, &a, &ta);

    tg_trainer_clear(&ts);
    tg_trainer_clear(&ta);
    tg_trainer_clear(&tb);
    lin_free(&s);
    lin_free(&a);
    lin_free(&b);
}

Test(trainer_steps, max_steps_at_an_epoch_end_and_bad_values)
{
    lin l;
    tg_trainer t;
    lin_init_drop(&l, 0.05, 0.2);
    trainer_steps_for(&t, &l, 8, NULL);
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(t.state.epoch, 2);
    cr_assert_eq(t.state.step, 8);
    cr_assert_eq(t.resume_k, 0);
    /* already there: nothing more */
    cr_assert_eq(tg_trainer_run(&t), TG_OK);
    cr_assert_eq(t.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(t.state.step, 8);
    t.max_steps = -1;
    cr_assert_eq(tg_trainer_run(&t), TG_ERR_INVALID);
    cr_assert(strstr(tg_last_error(), "max_steps must be >= 0"), "%s", tg_last_error());
    t.max_steps = 0;
    t.resume_k = 4;
    cr_assert_eq(tg_trainer_run(&t), TG_ERR_INVALID);
    cr_assert(strstr(tg_last_error(), "resume_k"), "%s", tg_last_error());
    tg_trainer_clear(&t);
    lin_free(&l);
}

