/*
 * trainer.c - the training loop (trainer.h): steps, epochs, the schedule,
 * validation, early stopping, best/last checkpoints, progress and stop.
 *
 * Not here: where batches come from or what validation measures (the
 * caller's callbacks), the checkpoint format (checkpoint.c), the update
 * rules (optim.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "trainer.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void tg_trainer_init(tg_trainer *t)
{
    TG__NONNULL_VOID(t);
    memset(t, 0, sizeof *t);
    t->schedule = TG_LR_CONSTANT;
    tg_checkpoint_init(&t->state);
    tg_trainer_seed(t, 0);
}

void tg_trainer_clear(tg_trainer *t)
{
    TG__NONNULL_VOID(t);
    tg_checkpoint_clear(&t->state);
    tg_trainer_init(t);
}

void tg_trainer_seed(tg_trainer *t, uint64_t seed)
{
    TG__NONNULL_VOID(t);
    tg_rng_seed(&t->state.data_rng, seed ^ 0xda7a5eedull);
    tg_rng_seed(&t->state.dropout_rng, seed ^ 0xd409047ull);
}

tg_status tg_trainer_resume(tg_trainer *t, const tg_checkpoint *ck)
{
    TG__NONNULL(t, TG_ERR_INVALID);
    TG__NONNULL(ck, TG_ERR_INVALID);
    if (!t->ps || !t->optim)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_resume: set the trainer's %s first",
                            t->ps ? "optim" : "ps");
    tg_status st = tg_checkpoint_restore_params(ck, t->ps);
    if (!st) st = tg_checkpoint_restore_optim(ck, t->ps, t->optim);
    if (st) return st;
    /* the history first: the one step that can fail (out of memory) */
    tg_checkpoint h;
    tg_checkpoint_init(&h);
    for (int64_t i = 0; i < ck->history_rows && !st; i++)
        st = tg_checkpoint_add_history(&h, ck->history + i * TG_CKPT_HISTORY_COLS);
    if (st) {
        tg_checkpoint_clear(&h);
        return st;
    }
    tg_checkpoint *s = &t->state;
    free(s->history);
    s->history = h.history;
    s->history_rows = h.history_rows;
    h.history = NULL;
    h.history_rows = 0;
    tg_checkpoint_clear(&h);
    s->epoch = ck->epoch;
    s->step = ck->step;
    s->best_epoch = ck->best_epoch;
    s->best_val = ck->best_val;
    s->bad_epochs = ck->bad_epochs;
    s->data_rng = ck->data_rng;
    s->dropout_rng = ck->dropout_rng;
    return TG_OK;
}

/* ---- checks ---- */

static tg_status check_settings(const tg_trainer *t)
{
    const char *missing = !t->graph ? "graph" : !t->loss ? "loss" : !t->ps ? "ps"
                          : !t->optim ? "optim" : !t->batch ? "batch (the batch callback)" : NULL;
    if (missing) return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: %s is NULL", missing);
    if (t->epochs < 1)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: epochs must be >= 1, got %lld",
                            (long long)t->epochs);
    if (t->steps_per_epoch < 1)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: steps_per_epoch must be >= 1, got %lld",
                            (long long)t->steps_per_epoch);
    if (!(t->lr > 0) || !isfinite(t->lr))
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: lr must be > 0, got %g", t->lr);
    if (t->patience < 0 || t->warmup < 0 || !(t->clip >= 0) || (unsigned)t->schedule >= TG_LR_SCHEDULE_COUNT)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: %s", t->patience < 0 ? "patience < 0"
                            : t->warmup < 0 ? "warmup < 0" : !(t->clip >= 0) ? "clip < 0 or NaN"
                            : "unknown schedule");
    const tg_tensor *v = tg_node_value(t->loss);
    if (!v || v->numel != 1)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: the loss must be a scalar node, "
                            "got %lld values", v ? (long long)v->numel : 0LL);
    return TG_OK;
}

tg_status tg_trainer_diagnose(tg_graph *g, double value)
{
    TG__NONNULL(g, TG_ERR_INVALID);
    char was[64];
    snprintf(was, sizeof was, "%g", value);
    tg_graph_set_check_finite(g, true);
    tg_status st = tg_graph_forward(g);
    tg_graph_set_check_finite(g, false);
    if (st == TG_ERR_NUMERIC)
        return tg_set_error(st, "non-finite value (the loss is %s): %s", was, tg_last_error());
    if (st) return st;
    return tg_set_error(TG_ERR_NUMERIC, "non-finite value: the loss is %s, and a second run found "
                        "no op that produced a NaN or Inf (a random op such as dropout?)", was);
}

/* Every trained parameter's gradient finite? The first that is not, or NULL. */
static const char *bad_grad(tg_params *ps)
{
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_param *p = tg_params_at(ps, i);
        const float *g = p->grad.data;
        if (p->frozen || p->grad.dtype != TG_F32) continue;
        for (int64_t k = 0; k < p->grad.numel; k++)
            if (!isfinite(g[k])) return p->name;
    }
    return NULL;
}

/* ---- the loop ---- */

typedef struct run_clock {
    double start, before;   /* now at the run's start; seconds of earlier runs */
} run_clock;

static double run_seconds(const run_clock *c) { return c->before + (now_seconds() - c->start); }

static bool stop_requested(const tg_trainer *t) { return t->stop && *t->stop; }

/* One optimizer step: batch k of the epoch under way; *loss its loss. */
static tg_status train_step(tg_trainer *t, int64_t k, double *loss)
{
    tg_checkpoint *s = &t->state;
    const int64_t total = t->steps_per_epoch * t->epochs;
    tg_optim_set_lr(t->optim, tg_lr_at(t->schedule, t->lr, s->epoch, s->step, total, t->warmup));
    tg_status st = t->batch(t->user, s->epoch, k, &s->data_rng);
    if (st) return st;
    tg_params_zero_grad(t->ps);
    st = tg_graph_forward(t->graph);
    *loss = st ? NAN : tg_tensor_get(tg_node_value(t->loss), 0);
    if (!st && !isfinite(*loss)) st = tg_trainer_diagnose(t->graph, *loss);
    if (!st) st = tg_graph_backward(t->graph, t->loss, NULL);
    if (!st && t->check) st = t->check(t->user, s->epoch, k, *loss);
    if (st) return st;
    const char *bad = bad_grad(t->ps);
    if (bad)
        return tg_set_error(TG_ERR_NUMERIC, "non-finite gradient of parameter '%s' (the loss "
                            "was %g)", bad, *loss);
    if (t->clip > 0) tg_clip_grad_norm(t->ps, t->clip);
    st = tg_optim_step(t->optim);
    if (st) return st;
    s->step++;
    return TG_OK;
}

/* The steps of one epoch; *mean_loss their mean. TG_OK with *stopped set
 * when a stop request came (the epoch is abandoned). */
static tg_status train_epoch(tg_trainer *t, const run_clock *clk, double *mean_loss,
                             bool *stopped)
{
    tg_checkpoint *s = &t->state;
    double sum = 0;
    *tg_graph_rng(t->graph) = s->dropout_rng;
    for (t->k = 0; t->k < t->steps_per_epoch; ) {
        if (stop_requested(t)) {
            *stopped = true;
            return TG_OK;
        }
        double loss;
        tg_status st = train_step(t, t->k, &loss);
        if (st) return st;
        t->k++;
        sum += loss;
        if (t->progress) {
            tg_trainer_progress p = {TG_TRAINER_EVENT_STEP, s->epoch + 1, t->epochs, t->k,
                                     t->steps_per_epoch, s->step, sum / (double)t->k, NAN,
                                     tg_optim_lr(t->optim), false, run_seconds(clk)};
            if ((st = t->progress(t->user, &p))) {
                t->phase = TG_TRAINER_PHASE_PROGRESS;
                return st;
            }
        }
    }
    s->dropout_rng = *tg_graph_rng(t->graph);
    *mean_loss = sum / (double)t->steps_per_epoch;
    return TG_OK;
}

static tg_status save(tg_trainer *t, const char *path)
{
    tg_status st = path ? tg_checkpoint_save(path, t->ps, t->optim, &t->state) : TG_OK;
    if (!st) return TG_OK;
    t->phase = TG_TRAINER_PHASE_SAVE;
    return tg_set_error(st, "saving a checkpoint: %s", tg_last_error());
}

/* After the steps of an epoch: validate, count, record, save, report. */
static tg_status end_epoch(tg_trainer *t, const run_clock *clk, double loss)
{
    tg_checkpoint *s = &t->state;
    double lr_used = tg_optim_lr(t->optim), metric = loss;
    t->phase = TG_TRAINER_PHASE_VALIDATE;
    tg_status st = t->validate ? t->validate(t->user, s->epoch + 1, &metric) : TG_OK;
    if (st) return st;
    s->epoch++;
    bool best = metric < s->best_val;
    if (best) {
        s->best_val = metric;
        s->best_epoch = s->epoch;
        s->bad_epochs = 0;
    } else {
        s->bad_epochs++;
    }
    tg_trainer_progress p = {TG_TRAINER_EVENT_VALIDATED, s->epoch, t->epochs, t->steps_per_epoch,
                             t->steps_per_epoch, s->step, loss, metric, lr_used, best,
                             run_seconds(clk)};
    double row[TG_CKPT_HISTORY_COLS] = {(double)s->epoch, (double)s->step, loss, metric, lr_used,
                                        p.seconds};
    t->phase = TG_TRAINER_PHASE_SAVE;
    if ((st = tg_checkpoint_add_history(s, row))) return st;
    t->phase = TG_TRAINER_PHASE_PROGRESS;
    if (t->progress && (st = t->progress(t->user, &p))) return st;
    if ((best && (st = save(t, t->best_path))) || (st = save(t, t->last_path))) return st;
    p.event = TG_TRAINER_EVENT_EPOCH;
    t->phase = TG_TRAINER_PHASE_PROGRESS;
    if (t->progress && (st = t->progress(t->user, &p))) return st;
    return TG_OK;
}

static bool patience_out(const tg_trainer *t)
{
    return t->patience > 0 && t->state.bad_epochs >= t->patience;
}

tg_status tg_trainer_run(tg_trainer *t)
{
    TG__NONNULL(t, TG_ERR_INVALID);
    t->end = TG_TRAINER_RUNNING;
    t->phase = TG_TRAINER_PHASE_SETUP;
    t->k = 0;
    tg_status st = check_settings(t);
    if (st) return st;
    const tg_checkpoint *s = &t->state;
    run_clock clk = {now_seconds(),
                     s->history_rows ? s->history[(s->history_rows - 1) * TG_CKPT_HISTORY_COLS + 5]
                                     : 0};
    bool stopped = false;
    while (s->epoch < t->epochs && !patience_out(t) && !stopped) {
        if ((stopped = stop_requested(t))) break;
        double loss = 0;
        t->phase = TG_TRAINER_PHASE_STEP;
        if ((st = train_epoch(t, &clk, &loss, &stopped))) return st;
        if (!stopped && (st = end_epoch(t, &clk, loss))) return st;
    }
    t->end = stopped || stop_requested(t) ? TG_TRAINER_STOPPED
             : s->epoch < t->epochs       ? TG_TRAINER_EARLY_STOP
                                          : TG_TRAINER_DONE;
    return TG_OK;
}
