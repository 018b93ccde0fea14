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

/* ---- the position of a mid-epoch checkpoint (max_steps), in its metadata ---- */

#define META_EPOCH_STEP "trainer.epoch_step"
#define META_LOSS_SUM   "trainer.epoch_loss_sum"

/* ck's steps into the epoch under way and their loss sum (0, 0 when absent:
 * a checkpoint written at an epoch's end, or by an older version). */
static tg_status mid_epoch_of(const tg_checkpoint *ck, int64_t *k, double *sum)
{
    *k = 0;
    *sum = 0;
    const char *ks = tg_checkpoint_meta(ck, META_EPOCH_STEP);
    const char *ss = tg_checkpoint_meta(ck, META_LOSS_SUM);
    if (!ks) return TG_OK;
    tg_status st = tg_checkpoint_meta_int(ck, META_EPOCH_STEP, 0, INT64_MAX, k);
    if (st) return st;
    char *end = NULL;
    *sum = ss ? strtod(ss, &end) : NAN;
    if (!ss || end == ss || *end || !isfinite(*sum))
        return tg_set_error(TG_ERR_FORMAT, "%s: metadata %s is '%s', not a finite number",
                            ck->path ? ck->path : "checkpoint", META_LOSS_SUM,
                            ss ? tg__escape(ss, strlen(ss), (char[96]){0}, 96) : "(missing)");
    return TG_OK;
}

/* Record in t->state where the epoch under way is: k steps, their loss sum
 * (exactly, as a hexadecimal float). */
static tg_status set_mid_epoch(tg_trainer *t, int64_t k, double sum)
{
    char ks[32], ss[64];
    snprintf(ks, sizeof ks, "%lld", (long long)k);
    snprintf(ss, sizeof ss, "%a", sum);
    tg_status st = tg_checkpoint_set_meta(&t->state, META_EPOCH_STEP, ks);
    return st ? st : tg_checkpoint_set_meta(&t->state, META_LOSS_SUM, ss);
}

tg_status tg_trainer_resume(tg_trainer *t, const tg_checkpoint *ck)
{
    TG__NONNULL(t, TG_ERR_INVALID);
    TG__NONNULL(ck, TG_ERR_INVALID);
    if (!t->ps || !t->optim)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_resume: set the trainer's %s first",
                            t->ps ? "optim" : "ps");
    int64_t k;
    double sum;
    tg_status st = mid_epoch_of(ck, &k, &sum);
    if (!st) st = tg_checkpoint_restore_params(ck, t->ps);
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
    t->resume_k = k;
    t->resume_loss_sum = sum;
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
    if (!(t->min_lr >= 0) || !isfinite(t->min_lr) || t->decay_steps < 0)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: %s", t->decay_steps < 0
                            ? "decay_steps < 0" : "min_lr must be finite and >= 0");
    if (t->max_steps < 0)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: max_steps must be >= 0 (0: no "
                            "limit), got %lld", (long long)t->max_steps);
    if (t->resume_k < 0 || t->resume_k >= t->steps_per_epoch)
        return tg_set_error(TG_ERR_INVALID, "tg_trainer_run: the run was saved after %lld steps "
                            "of an epoch, but an epoch has %lld steps now (resume_k)",
                            (long long)t->resume_k, (long long)t->steps_per_epoch);
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
    double  start, before;   /* now at the run's start; seconds of earlier runs */
    double  epoch_start;     /* now when the epoch under way began (in this call) */
    int64_t start_step;      /* state.step when this call began */
} run_clock;

static bool stop_requested(const tg_trainer *t) { return t->stop && *t->stop; }

static bool steps_out(const tg_trainer *t)
{
    return t->max_steps > 0 && t->state.step >= t->max_steps;
}

/* What the progress callback is told about the run so far. */
static tg_trainer_progress progress_of(const tg_trainer *t, const run_clock *clk,
                                       tg_trainer_event ev, double loss)
{
    const tg_checkpoint *s = &t->state;
    int64_t total = t->epochs * t->steps_per_epoch;
    double now = now_seconds();
    bool step = ev == TG_TRAINER_EVENT_STEP;
    return (tg_trainer_progress){
        .event = ev, .epoch = step ? s->epoch + 1 : s->epoch, .epochs = t->epochs,
        .k = step ? t->k : t->steps_per_epoch, .steps_per_epoch = t->steps_per_epoch,
        .step = s->step, .loss = loss, .metric = NAN, .lr = tg_optim_lr(t->optim),
        .seconds = clk->before + (now - clk->start),
        .total_steps = t->max_steps > 0 && t->max_steps < total ? t->max_steps : total,
        .call_steps = s->step - clk->start_step, .call_seconds = now - clk->start,
        .epoch_seconds = now - clk->epoch_start};
}

/* One optimizer step: batch k of the epoch under way; *loss its loss. */
static tg_status train_step(tg_trainer *t, int64_t k, double *loss)
{
    tg_checkpoint *s = &t->state;
    const int64_t total = t->steps_per_epoch * t->epochs;
    double lr = t->schedule == TG_LR_WARMUP_COSINE
                    ? tg_lr_warmup_cosine(t->lr, t->min_lr, s->step, t->warmup,
                                          t->decay_steps > 0 ? t->decay_steps : total)
                    : tg_lr_at(t->schedule, t->lr, s->epoch, s->step, total, t->warmup);
    tg_optim_set_lr(t->optim, lr);
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

static tg_status save(tg_trainer *t, const char *path)
{
    tg_status st = path ? tg_checkpoint_save(path, t->ps, t->optim, &t->state) : TG_OK;
    if (!st) return TG_OK;
    t->phase = TG_TRAINER_PHASE_SAVE;
    return tg_set_error(st, "saving a checkpoint: %s", tg_last_error());
}

/* max_steps reached after t->k steps of the epoch: the state becomes that
 * of a run resumed here (the data RNG of the epoch's start, the graph's RNG
 * as it is now, resume_k and the loss sum) and is saved as the last
 * checkpoint. */
static tg_status save_mid_epoch(tg_trainer *t, const tg_rng *epoch_start, double sum)
{
    tg_checkpoint *s = &t->state;
    s->dropout_rng = *tg_graph_rng(t->graph);
    s->data_rng = *epoch_start;
    t->resume_k = t->k;
    t->resume_loss_sum = sum;
    tg_status st = set_mid_epoch(t, t->k, sum);
    if (st) {
        t->phase = TG_TRAINER_PHASE_SAVE;
        return st;
    }
    return save(t, t->last_path);
}

/* Continue the epoch of a mid-epoch checkpoint: its first resume_k batches
 * drawn again (no steps), so the data RNG and the caller's shuffle are
 * where they were. */
static tg_status replay(tg_trainer *t, double *sum)
{
    for (int64_t k = 0; k < t->resume_k; k++) {
        tg_status st = t->batch(t->user, t->state.epoch, k, &t->state.data_rng);
        if (st) return st;
    }
    t->k = t->resume_k;
    *sum = t->resume_loss_sum;
    t->resume_k = 0;
    t->resume_loss_sum = 0;
    return TG_OK;
}

/* The steps of one epoch; *mean_loss their mean. TG_OK with *stopped set
 * when a stop request came (the epoch is abandoned), or *capped when
 * max_steps came in mid-epoch (the epoch is saved where it is). */
static tg_status train_epoch(tg_trainer *t, run_clock *clk, double *mean_loss, bool *stopped,
                             bool *capped)
{
    tg_checkpoint *s = &t->state;
    double sum = 0;
    const tg_rng epoch_start = s->data_rng;
    *tg_graph_rng(t->graph) = s->dropout_rng;
    clk->epoch_start = now_seconds();
    t->k = 0;
    tg_status st = t->resume_k > 0 ? replay(t, &sum) : TG_OK;
    if (st) return st;
    while (t->k < t->steps_per_epoch) {
        if (stop_requested(t)) {
            *stopped = true;
            return TG_OK;
        }
        if (steps_out(t)) {
            *capped = true;
            return save_mid_epoch(t, &epoch_start, sum);
        }
        double loss;
        if ((st = train_step(t, t->k, &loss))) return st;
        t->k++;
        sum += loss;
        if (t->progress) {
            tg_trainer_progress p = progress_of(t, clk, TG_TRAINER_EVENT_STEP, sum / (double)t->k);
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

/* After the steps of an epoch: validate, count, record, save, report. */
static tg_status end_epoch(tg_trainer *t, const run_clock *clk, double loss)
{
    tg_checkpoint *s = &t->state;
    double metric = loss;
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
    tg_trainer_progress p = progress_of(t, clk, TG_TRAINER_EVENT_VALIDATED, loss);
    p.metric = metric;
    p.best = best;
    double row[TG_CKPT_HISTORY_COLS] = {(double)s->epoch, (double)s->step, loss, metric, p.lr,
                                        p.seconds};
    t->phase = TG_TRAINER_PHASE_SAVE;
    if ((st = tg_checkpoint_add_history(s, row)) || (st = set_mid_epoch(t, 0, 0))) return st;
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
                                     : 0, 0, s->step};
    bool stopped = false, capped = false;   /* capped: max_steps reached */
    while (s->epoch < t->epochs && !patience_out(t) && !stopped && !capped) {
        if ((stopped = stop_requested(t)) || (capped = steps_out(t))) break;
        double loss = 0;
        t->phase = TG_TRAINER_PHASE_STEP;
        if ((st = train_epoch(t, &clk, &loss, &stopped, &capped))) return st;
        if (!stopped && !capped && (st = end_epoch(t, &clk, loss))) return st;
    }
    t->end = stopped || stop_requested(t)   ? TG_TRAINER_STOPPED
             : s->epoch >= t->epochs         ? TG_TRAINER_DONE
             : patience_out(t)               ? TG_TRAINER_EARLY_STOP
                                             : TG_TRAINER_MAX_STEPS;
    return TG_OK;
}
