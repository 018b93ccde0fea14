/*
 * trainer.h - the training loop as a library call: any graph with a scalar
 * loss node, its parameter store and an optimizer, trained for a number of
 * epochs with a learning-rate schedule, validation and early stopping, the
 * best and the last checkpoint written each epoch (exact resume), progress
 * through a callback, and a clean stop on request (a flag a signal handler
 * sets). `tgraph train` is one client of it; tools/examples/train_classifier.c
 * is another.
 *
 * What it is not: a data pipeline or a model. The caller builds the graph
 * once and fills its inputs in the batch callback; the caller measures
 * validation in the validate callback (one number, lower is better).
 *
 * Usage:
 *
 *     static tg_status fill(void *user, int64_t epoch, int64_t k, tg_rng *rng)
 *     {   ... write batch k of this epoch into the graph's input nodes, drawing
 *         any shuffling from rng (the trainer's data RNG, saved in checkpoints) ...
 *         return TG_OK; }
 *     static tg_status val(void *user, int64_t epoch, double *metric)
 *     {   ... *metric = validation loss after `epoch` epochs ...; return TG_OK; }
 *
 *     tg_trainer t;
 *     tg_trainer_init(&t);
 *     t.graph = g; t.loss = loss; t.ps = ps; t.optim = adam;   // borrowed
 *     t.lr = 1e-3; t.schedule = TG_LR_CONSTANT;
 *     t.epochs = 20; t.steps_per_epoch = 50; t.patience = 3;
 *     t.batch = fill; t.validate = val; t.user = &my_data;
 *     t.best_path = "run/best.safetensors"; t.last_path = "run/last.safetensors";
 *     t.stop = &stop_flag;                      // optional: a signal handler sets it
 *     t.max_steps = 1000;                       // optional: end there (0: no limit)
 *     tg_trainer_seed(&t, 42);
 *     // to continue a run: tg_checkpoint ck; tg_checkpoint_read(t.last_path, &ck);
 *     //                    tg_trainer_resume(&t, &ck); tg_checkpoint_clear(&ck);
 *     if (tg_trainer_run(&t)) fprintf(stderr, "%s\n", tg_last_error());
 *     printf("best epoch %lld\n", (long long)t.state.best_epoch);
 *     tg_trainer_clear(&t);
 *
 * One step: stop flag checked, learning rate set from the schedule, batch
 * callback, gradients zeroed, forward, the loss read (a NaN/Inf is an error
 * naming the op that produced it), backward, the check callback, every
 * gradient checked finite (an error names the parameter), gradient clipping,
 * optimizer step. One epoch: the graph's RNG set from state.dropout_rng,
 * steps_per_epoch steps, the graph's RNG saved back, validation, best and
 * early-stopping counters, a history row, the checkpoints. Same seed and
 * callbacks, same bits; a run resumed from an epoch's checkpoint gives the
 * bits of the uninterrupted run.
 *
 * A run of N steps with validation every V steps: steps_per_epoch = V,
 * epochs = N / V (an "epoch" is the interval between validations).
 *
 * max_steps (a smoke test, a time budget) ends the run when state.step
 * reaches it (t->end = TG_TRAINER_MAX_STEPS). At an epoch's end that epoch
 * is finished as usual; in mid-epoch the steps so far are kept in the last
 * checkpoint (no validation: the best checkpoint stays the best complete
 * epoch's), with the epoch's position, its loss sum and the data RNG of its
 * start (metadata trainer.epoch_step, trainer.epoch_loss_sum). Resuming from
 * it continues the epoch: the batch callback is called again for the
 * epoch's first batches (no steps taken) so that it draws the same shuffle,
 * then the steps go on; the bits are those of the uninterrupted run. The
 * batch callback must therefore depend only on (epoch, k, rng). max_steps
 * does not change the learning-rate schedule (its length stays epochs *
 * steps_per_epoch), so a run continued with a larger max_steps is the
 * uninterrupted run.
 */
#ifndef TG_TRAINER_H
#define TG_TRAINER_H

#include <signal.h>

#include "checkpoint.h"
#include "graph.h"
#include "optim.h"
#include "params.h"
#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fill the graph's inputs with batch k (0-based) of epoch `epoch` (0-based).
 * rng is the trainer's data RNG (state.data_rng): draw shuffles from it and
 * a resumed run draws the same ones. Non-TG_OK ends the run with that status. */
typedef tg_status (*tg_trainer_batch_fn)(void *user, int64_t epoch, int64_t k, tg_rng *rng);

/* After epoch `epoch` (1-based, the epochs completed): write the validation
 * metric (lower is better) to *metric. Non-TG_OK ends the run. */
typedef tg_status (*tg_trainer_validate_fn)(void *user, int64_t epoch, double *metric);

/* After backward, before clipping and the optimizer step: a chance to refuse
 * the step (`loss` is this batch's). Non-TG_OK ends the run with that status. */
typedef tg_status (*tg_trainer_check_fn)(void *user, int64_t epoch, int64_t k, double loss);

typedef enum tg_trainer_event {
    TG_TRAINER_EVENT_STEP,        /* after an optimizer step */
    TG_TRAINER_EVENT_VALIDATED,   /* epoch done, state updated; before the checkpoints */
    TG_TRAINER_EVENT_EPOCH,       /* after the epoch's checkpoints were written */
    TG_TRAINER_EVENT_COUNT
} tg_trainer_event;

/* What a progress callback is told. */
typedef struct tg_trainer_progress {
    tg_trainer_event event;
    int64_t epoch;        /* STEP: the epoch under way, 1-based; else the epochs completed */
    int64_t epochs;       /* the run's epochs */
    int64_t k;            /* STEP: steps done in this epoch; else steps_per_epoch */
    int64_t steps_per_epoch;
    int64_t step;         /* optimizer steps taken in the whole run */
    double  loss;         /* mean training loss of this epoch so far */
    double  metric;       /* VALIDATED, EPOCH: the validation metric (NAN for STEP) */
    double  lr;           /* the learning rate of the last step */
    bool    best;         /* VALIDATED, EPOCH: this epoch is the best so far */
    double  seconds;      /* training time of the run (resumed runs included) */
    /* added with max_steps (issue 19): enough for a rate and the ETAs */
    int64_t total_steps;  /* the step the run ends at unless it stops early:
                             epochs * steps_per_epoch, or max_steps when smaller */
    int64_t call_steps;   /* optimizer steps taken by this tg_trainer_run call */
    double  call_seconds; /* seconds since this tg_trainer_run call began */
    double  epoch_seconds;/* seconds since the epoch under way began (in this call) */
} tg_trainer_progress;

/* Non-TG_OK ends the run with that status. */
typedef tg_status (*tg_trainer_progress_fn)(void *user, const tg_trainer_progress *p);

/* Why tg_trainer_run returned. */
typedef enum tg_trainer_end {
    TG_TRAINER_RUNNING,      /* not run yet (or it failed: see phase) */
    TG_TRAINER_DONE,         /* every epoch trained */
    TG_TRAINER_EARLY_STOP,   /* patience epochs without a better metric */
    TG_TRAINER_STOPPED,      /* *stop was set: stopped between steps or epochs */
    TG_TRAINER_MAX_STEPS,    /* state.step reached max_steps (the last checkpoint is there) */
    TG_TRAINER_END_COUNT
} tg_trainer_end;

/* Where a failed run failed. */
typedef enum tg_trainer_phase {
    TG_TRAINER_PHASE_SETUP,      /* bad arguments */
    TG_TRAINER_PHASE_STEP,       /* batch, forward, backward, check, gradients, optimizer */
    TG_TRAINER_PHASE_VALIDATE,   /* the validate callback */
    TG_TRAINER_PHASE_SAVE,       /* writing a checkpoint */
    TG_TRAINER_PHASE_PROGRESS,   /* the progress callback */
    TG_TRAINER_PHASE_COUNT
} tg_trainer_phase;

/* A training run. The fields above `state` are the caller's settings: set
 * them after tg_trainer_init; the pointers are borrowed (graph, loss, ps,
 * optim, paths, user and stop must outlive tg_trainer_run). `state` is the
 * run's state, owned by the trainer and written into each checkpoint: the
 * caller may add metadata (tg_checkpoint_set_meta) or a scaler to it. */
typedef struct tg_trainer {
    tg_graph  *graph;           /* required: the training graph */
    tg_node   *loss;            /* required: a scalar node of graph */
    tg_params *ps;              /* required: the parameters the optimizer updates */
    tg_optim  *optim;           /* required: an optimizer over ps */
    tg_lr_schedule schedule;    /* default TG_LR_CONSTANT */
    double     lr;              /* required, > 0: the schedule's base rate */
    int64_t    warmup;          /* TG_LR_COSINE and TG_LR_WARMUP_COSINE warmup steps (0: none) */
    int64_t    epochs;          /* required, >= 1 (the schedule's length is epochs * steps) */
    int64_t    steps_per_epoch; /* required, >= 1 */
    int64_t    patience;        /* early stop after this many epochs without improvement; 0: off */
    double     clip;            /* gradient clipping by global norm; 0: off */
    const char *best_path;      /* written when an epoch is the best; NULL: not kept */
    const char *last_path;      /* written after every epoch; NULL: not kept */
    tg_trainer_batch_fn    batch;      /* required */
    tg_trainer_validate_fn validate;   /* NULL: the epoch's mean training loss is the metric */
    tg_trainer_check_fn    check;      /* optional */
    tg_trainer_progress_fn progress;   /* optional */
    void      *user;            /* handed to every callback */
    volatile sig_atomic_t *stop;   /* optional: nonzero asks the run to stop between steps */
    int64_t    max_steps;       /* end the run when state.step reaches it; 0: no limit */
    /* TG_LR_WARMUP_COSINE (nanoGPT's get_lr): the rate it decays to, and the
     * step where it gets there (0: epochs * steps_per_epoch) */
    double     min_lr;
    int64_t    decay_steps;

    tg_checkpoint    state;     /* owned: counters, RNGs, history (tg_trainer_clear frees) */
    tg_trainer_end   end;       /* after tg_trainer_run: why it returned */
    tg_trainer_phase phase;     /* after a failed tg_trainer_run: where */
    int64_t          k;         /* steps done in the epoch under way (where a step failed) */
    /* set by tg_trainer_resume from a checkpoint written mid-epoch (max_steps) */
    int64_t          resume_k;         /* steps of epoch state.epoch + 1 already done */
    double           resume_loss_sum;  /* the sum of their losses */
} tg_trainer;

/* Zero t, set the defaults (constant schedule, state.best_val = INFINITY,
 * both RNGs seeded with 0). */
void tg_trainer_init(tg_trainer *t);
/* Free what t owns (state) and init it again: the borrowed pointers are
 * forgotten (set to NULL), never freed. */
void tg_trainer_clear(tg_trainer *t);

/* Seed the data RNG (seed ^ 0xda7a5eed) and the graph's dropout RNG
 * (seed ^ 0xd409047), as `tgraph train --seed` does. */
void tg_trainer_seed(tg_trainer *t, uint64_t seed);

/* Continue the run saved in ck (read with tg_checkpoint_read from a
 * checkpoint this trainer wrote): parameters into t->ps, optimizer state
 * into t->optim, and the counters, RNGs and history into t->state (and,
 * from a mid-epoch checkpoint, resume_k and resume_loss_sum). The
 * caller's metadata and scaler are not copied (set them again). Errors name
 * the file and the tensor; on error the state is unchanged (the parameters
 * may have been restored). ck stays the caller's. */
tg_status tg_trainer_resume(tg_trainer *t, const tg_checkpoint *ck);

/* Train from t->state.epoch to t->epochs. TG_OK when the run ended
 * normally (t->end: DONE, EARLY_STOP, STOPPED or MAX_STEPS); else the
 * status of the failure with tg_last_error() saying what, and t->phase
 * where. Bad settings (NULL graph, loss, ps, optim or batch callback, epochs
 * or steps_per_epoch < 1, lr <= 0, max_steps < 0, a loss that is not a
 * scalar of graph, a mid-epoch resume_k not below steps_per_epoch) are
 * TG_ERR_INVALID naming the field, before anything runs. A stop request in
 * mid-epoch abandons that epoch: the parameters are mid-epoch, the last
 * checkpoint on disk is the last complete epoch's (resume from it). */
tg_status tg_trainer_run(tg_trainer *t);

/* After a non-finite value computed from g (a loss, an evaluation sum): run
 * g's forward again with the finite check on and return TG_ERR_NUMERIC with a
 * message naming the first op that produced a NaN or Inf ("non-finite value
 * (the loss is nan): ..."). The check stays off in normal steps: it costs a
 * pass over every result, and masks legitimately hold -inf. */
tg_status tg_trainer_diagnose(tg_graph *g, double value);

#ifdef __cplusplus
}
#endif
#endif
