/*
 * cmd_train.c - `tgraph train`: train a forecaster from the layer registry on
 * a CSV file or the built-in series, with validation each epoch, the best
 * checkpoint kept, early stopping, resumable checkpoints, metrics.csv,
 * loss.svg and the model diagram, ending with the test metrics next to two
 * baselines on one parseable line.
 *
 * A thin client of the library's trainer (engine/train/trainer.h), which
 * runs the steps and epochs, early stopping, checkpoints and the stop flag;
 * here are the command's steps (the output directory checked; data, model,
 * optimizer and trainer set up; the run described, trained and tested; the
 * line after a stop signal), the trainer's callbacks (batches of windows,
 * validation MSE, the progress on stderr - a live line on a terminal, plain
 * lines every --progress-every seconds elsewhere - and the epoch lines), and
 * the usage and examples --help prints around the options. --max-steps is
 * the trainer's max_steps.
 *
 * Not here: the options and their parsing (train_opts.c), the defaults and
 * the settings a checkpoint records (train_settings.c), the run directory's
 * safety and the signals (run_dir.c), training on text (train_text.c), the
 * data pipeline and evaluation (train_loop.c), the model (layers/), the
 * optimizer (engine/train/optim.c), the loop (trainer.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"
#include "resume_check.h"
#include "run_dir.h"
#include "train_job.h"
#include "train_loop.h"
#include "train_opts.h"
#include "train_settings.h"
#include "train_text.h"

#define CMD "train"

static void job_free(job *j)
{
    tg_rd_release();
    tg_rd_signals_restore();
    free(j->order);
    free(j->resume_dir);
    free(j->resume_best);
    free(j->cfg_src);
    tg_file_id_clear(&j->data_id);
    tg_tl_files_free(&j->rf);
    tg_optim_free(j->opt);
    tg_tl_model_free(&j->m);
    tg_tl_data_free(&j->td);
    tg_trainer_clear(&j->tr);
    tg_checkpoint_clear(&j->resume_ck);
    tg_config_free(j->cfg);
}

/* ---- the trainer's callbacks ---- */

/* Batch k of the epoch: at k == 0 the epoch's order is shuffled. */
static tg_status fill_batch(void *user, int64_t epoch, int64_t k, tg_rng *rng)
{
    job *j = user;
    (void)epoch;
    if (k == 0) {
        for (int64_t i = 0; i < j->td.train.count; i++) j->order[i] = i;
        tg_shuffle_i64(j->order, j->td.train.count, rng);
        j->t_epoch = tg_tl_now();
        j->t_draw = 0;
    }
    return tg_tl_fill(&j->m, &j->td.train, j->order + k * j->m.B, j->m.B, true);
}

/* Before any update the loss measures the data and the init: an absurd one
 * is theirs (later, a diverging run ends in a NaN/Inf the trainer names). */
static tg_status check_first_loss(void *user, int64_t epoch, int64_t k, double loss)
{
    job *j = user;
    (void)epoch, (void)k;
    if (j->tr.state.step == 0 && loss > TG_TL_ABSURD_MSE)
        return tg_set_error(TG_ERR_NUMERIC, "the training loss %.3g before any update is absurd "
                            "(scaled units, where the training mean scores about 1): the data or "
                            "the configuration is at fault (a column nearly constant over the "
                            "training rows?)", loss);
    return TG_OK;
}

static void clear_bar(const job *j)
{
    if (j->s.progress) fprintf(stderr, "\r%*s\r", 120, "");
}

/* Validation MSE over every validation window; errors are printed here. */
static tg_status validate(void *user, int64_t epoch, double *mse)
{
    job *j = user;
    tg_tl_metrics val;
    char what[96];
    clear_bar(j);
    snprintf(what, sizeof what, "stopped at epoch %lld (step %lld): validation", (long long)epoch,
             (long long)j->tr.state.step);
    if (tg_tl_evaluate(CMD, what, &j->m, &j->td.val, &val, NULL)) return TG_ERR_NUMERIC;
    if (!(val.mse <= TG_TL_ABSURD_MSE)) {
        fprintf(stderr, "tgraph train: stopped at epoch %lld (step %lld): the validation MSE "
                "%.3g is absurd (scaled units, where the training mean scores about 1; worst "
                "channel '%s', column %lld, MSE %.3g): the data or the configuration is at "
                "fault (a column nearly constant over the training rows? validation rows on "
                "another scale?)\n", (long long)epoch, (long long)j->tr.state.step, val.mse,
                j->td.d->names ? j->td.d->names[val.worst_col] : "?", (long long)val.worst_col + 1,
                val.worst_col_mse);
        return TG_ERR_NUMERIC;
    }
    *mse = val.mse;
    return TG_OK;
}

/* Seconds as M:SS or H:MM:SS. */
static void fmt_time(char *buf, size_t len, double sec)
{
    long t = sec > 0 && sec < 1e9 ? lround(sec) : 0;
    if (t >= 3600) snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

/* A step on stderr: the live line on a terminal (at most 10 a second, and
 * at the epoch's last step), else a plain line every progress_every seconds. */
static void show_step(job *j, const tg_trainer_progress *p)
{
    const settings *s = &j->s;
    double now = tg_tl_now();
    if (s->pmode == PROGRESS_NONE) return;
    if (s->pmode == PROGRESS_LIVE && p->k < p->steps_per_epoch && now - j->t_draw < 0.1) return;
    if (s->pmode == PROGRESS_LINES && now - j->t_line < s->progress_every) return;
    j->t_draw = j->t_line = now;
    double rate = p->call_seconds > 0 ? (double)p->call_steps / p->call_seconds : 0;
    char eta_epoch[32] = "?", eta_run[32] = "?";
    if (rate > 0) {
        fmt_time(eta_epoch, sizeof eta_epoch, (double)(p->steps_per_epoch - p->k) / rate);
        fmt_time(eta_run, sizeof eta_run, (double)(p->total_steps - p->step) / rate);
    }
    if (s->pmode == PROGRESS_LINES) {
        fprintf(stderr, "progress: epoch %lld/%lld step %lld/%lld (run %lld/%lld)  loss %.4f  "
                "%.2f steps/s  ETA epoch %s, run %s\n", (long long)p->epoch, (long long)p->epochs,
                (long long)p->k, (long long)p->steps_per_epoch, (long long)p->step,
                (long long)p->total_steps, p->loss, rate, eta_epoch, eta_run);
        fflush(stderr);
        return;
    }
    int width = 24, fill = (int)(width * p->k / p->steps_per_epoch);
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\repoch %lld/%lld [%s] %lld/%lld  loss %.4f  %.2f steps/s  ETA %s (run %s)   ",
            (long long)p->epoch, (long long)p->epochs, bar, (long long)p->k,
            (long long)p->steps_per_epoch, p->loss, rate, eta_epoch, eta_run);
    fflush(stderr);
}

/* The progress on stderr (steps); the best weights brought along (before
 * the epoch's checkpoints); the run files and the epoch's line (after them). */
static tg_status on_progress(void *user, const tg_trainer_progress *p)
{
    job *j = user;
    j->seconds = p->seconds;
    tg_rd_overwrite_commit();   /* the first checkpoint written: --overwrite's old files go */
    if (p->event == TG_TRAINER_EVENT_STEP) {
        show_step(j, p);
        return TG_OK;
    }
    if (p->event == TG_TRAINER_EVENT_VALIDATED) {
        bool copy = j->need_best_copy && !p->best;
        j->need_best_copy = false;
        return copy && tg_tl_copy_file(CMD, j->resume_best, j->rf.best) ? TG_ERR_IO : TG_OK;
    }
    j->ls = (last_saved){j->rf.ckpt, p->epoch, true};
    if (tg_tl_write_curves(CMD, &j->rf, &j->tr.state)) return TG_ERR_IO;
    printf("epoch %3lld/%lld  train loss %.4f  val mse %.4f%s  lr %.3g  %.1fs\n",
           (long long)p->epoch, (long long)p->epochs, p->loss, p->metric, p->best ? " *" : "  ",
           p->lr, tg_tl_now() - j->t_epoch);
    fflush(stdout);
    if (j->tr.patience > 0 && j->tr.state.bad_epochs >= j->tr.patience)
        printf("early stopping: validation MSE did not improve for %lld epochs\n",
               (long long)j->tr.patience);
    return TG_OK;
}

/* ---- the steps of the command ---- */

/* The output directory: every name fits, no run file is an input, and no
 * other run is in it. The checkpoint continued in its own directory is read
 * whole before the run writes its next one there. */
static int check_out_dir(job *j)
{
    const settings *s = &j->s;
    if (tg_tl_files_init(CMD, &j->rf, s->out)) return 2;
    j->continuing = s->resume && tg_rd_same_dir(j->resume_dir, s->out);
    const tg_cli_file in[] = {{"--data", strcmp(s->data, TG_BUILTIN_DATA) ? s->data : NULL},
                              {"--resume", j->continuing ? NULL : s->resume},
                              {"(the resumed run's best weights)",
                               j->continuing ? NULL : j->resume_best}};
    /* nothing is created (the lock makes --out) before the run files are checked */
    if (tg_tl_files_check(CMD, &j->rf, in, 3) || tg_rd_lock(s->out)) return 2;
    char found[256];
    if (j->continuing || s->overwrite || !tg_rd_run_files_present(&j->rf, found, sizeof found))
        return 0;
    if (s->resume)
        return tg_cli_fail(CMD, "--out %s already holds another run (%s): resuming %s there "
                           "would mix the two; continue that one with --resume %s, choose another "
                           "--out, or replace it with --overwrite", s->out, found, s->resume,
                           j->rf.ckpt);
    return tg_cli_fail(CMD, "--out %s already holds a run (%s): continue it with --resume %s, or "
                       "replace it with --overwrite", s->out, found, j->rf.ckpt);
}

/* Data, model, graphs, optimizer. */
static int build(job *j)
{
    const settings *s = &j->s;
    if (strcmp(s->data, TG_BUILTIN_DATA) && tg_file_id_of(s->data, &j->data_id))
        return tg_cli_fail(CMD, "--data %s", tg_last_error());
    if (tg_tl_data_load(CMD, s->data, &j->td) ||
        tg_tl_data_layout(CMD, &j->td, s->target, s->features) ||
        tg_tl_data_marks(CMD, &j->td, s->freq))
        return 2;
    tg_rng init_rng;
    tg_rng_seed(&init_rng, (uint64_t)s->seed);
    if (tg_tl_model_build(CMD, &j->m, s->model, j->cfg, j->cfg_src ? j->cfg_src : "--set",
                          &j->td, s->batch, s->resume ? NULL : &init_rng))
        return 2;
    if (s->features == TG_TL_MS && tg_tl_model_target(CMD, &j->m, j->td.target)) return 2;
    tg_graph_set_recompute(j->m.gt, s->recompute);
    if (tg_tl_data_prepare(CMD, &j->td, &s->split, j->m.seq_len, j->m.pred_len,
                           s->resume ? j->resume_ck.scaler : NULL))
        return 2;
    if (j->td.train.count < j->m.B)
        return tg_cli_fail(CMD, "the training split has %lld windows, fewer than one batch of "
                           "%lld (use a smaller --batch-size or more training rows)",
                           (long long)j->td.train.count, (long long)j->m.B);
    tg_optim_config oc = {.kind = s->optim, .lr = s->lr, .weight_decay = s->weight_decay};
    if (!(j->opt = tg_optim_new(j->m.ps, &oc))) return tg_cli_fail(CMD, "%s", tg_last_error());
    if (!(j->order = malloc(sizeof *j->order * (size_t)j->td.train.count)))
        return tg_cli_fail(CMD, "out of memory");
    return 0;
}

/* The trainer over the model, then its state: fresh, or the resumed run's. */
static int setup_trainer(job *j)
{
    const settings *s = &j->s;
    tg_trainer *t = &j->tr;
    int64_t steps = j->td.train.count / j->m.B;
    *t = (tg_trainer){.graph = j->m.gt, .loss = j->m.loss, .ps = j->m.ps, .optim = j->opt,
                      .schedule = s->lradj, .lr = s->lr,
                      .warmup = s->lradj == TG_LR_COSINE ? steps : 0, .epochs = s->epochs,
                      .steps_per_epoch = steps, .patience = s->patience, .clip = s->clip,
                      .best_path = j->rf.best, .last_path = j->rf.ckpt, .batch = fill_batch,
                      .validate = validate, .check = check_first_loss, .progress = on_progress,
                      .user = j, .stop = &tg_rd_stop_signal, .max_steps = s->max_steps};
    tg_checkpoint_init(&t->state);
    tg_trainer_seed(t, (uint64_t)s->seed);
    if (!(t->state.scaler = tg_scaler_new(j->td.scaler->cols, j->td.scaler->mean,
                                          j->td.scaler->std)))
        return tg_cli_fail(CMD, "%s", tg_last_error());
    if (s->resume) {
        if (tg_resume_check_series(CMD, &j->resume_ck, steps)) return 2;
        if (tg_trainer_resume(t, &j->resume_ck))
            return tg_cli_fail(CMD, "--resume %s", tg_last_error());
        if (tg_train_settings_check_data(s, &j->resume_ck, t, &j->data_id)) return 2;
    }
    if (tg_train_settings_put(&t->state, s, &j->m, &j->td, &j->data_id)) return 2;
    /* Resuming into another directory: the run's best weights come along
     * with the first checkpoint written there (unless that epoch is the
     * best); until then the final test reads them where they are. */
    j->need_best_copy = s->resume && t->state.best_epoch > 0 && !j->continuing;
    j->ls = (last_saved){s->resume ? s->resume : NULL, j->resume_ck.epoch, false};
    return 0;
}

/* The model's configuration, every key of its schema (defaults included). */
static void print_config(const job *j)
{
    char buf[8192];
    if (tg_tl_config_format(j->m.layer, buf, sizeof buf)) return;
    fputs("  config:", stdout);
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) printf(" %s", line);
    fputc('\n', stdout);
}

/* The directory made ready, the diagram, and the run's description. */
static int start_run(job *j)
{
    const settings *s = &j->s;
    const tg_tl_data *td = &j->td;
    char found[256], sp[64];
    if (tg_tl_mkdirs(CMD, s->out)) return 2;
    if (s->overwrite && !j->continuing && tg_rd_run_files_present(&j->rf, found, sizeof found) &&
        tg_rd_remove_run_files(&j->rf))
        return 2;
    tg_rd_remove_stale_temps(s->out);
    tg_tl_write_diagram(CMD, &j->rf, &j->m);
    tg_cli_print(stdout, "tgraph train: %s, %lld parameters, on %s: %lld rows x %lld columns\n",
                 j->m.name, (long long)tg_params_numel(j->m.ps), td->d->source,
                 (long long)td->d->rows, (long long)td->d->cols);   /* on --resume: metadata */
    print_config(j);
    tg_split_format(&s->split, sp, sizeof sp);
    printf("  split %s: train rows [%lld, %lld), val [%lld, %lld), test [%lld, %lld); "
           "windows %lld / %lld / %lld (seq_len %lld, pred_len %lld)\n",
           sp, (long long)td->rows.train_begin, (long long)td->rows.train_end,
           (long long)td->rows.val_begin, (long long)td->rows.val_end,
           (long long)td->rows.test_begin, (long long)td->rows.test_end,
           (long long)td->train.count, (long long)td->val.count, (long long)td->test.count,
           (long long)j->m.seq_len, (long long)j->m.pred_len);
    printf("  %s lr %g (%s), batch %lld, %lld steps/epoch, %lld epochs, patience %lld, seed "
           "%lld, %d threads",
           tg_train_opts_optim_names[s->optim], s->lr, tg_lr_schedule_name(s->lradj),
           (long long)j->m.B, (long long)j->tr.steps_per_epoch, (long long)s->epochs,
           (long long)s->patience, (long long)s->seed, tg_threads_get());
    if (s->max_steps) printf(", max steps %lld", (long long)s->max_steps);
    printf(" -> %s/\n", s->out);
    if (s->resume)
        printf("  resumed from %s after epoch %lld (step %lld%s)\n", s->resume,
               (long long)j->tr.state.epoch, (long long)j->tr.state.step,
               j->tr.resume_k ? ", in mid-epoch" : "");
    fflush(stdout);
    return 0;
}

/* The one line after a stop signal; returns the shell's exit status for it. */
static int report_interrupt(const settings *s, const last_saved *ls, int sig)
{
    tg_rd_signals_default();
    if (s->progress) fprintf(stderr, "\n");
    fflush(stdout);
    if (!ls->ckpt) {
        fprintf(stderr, "tgraph train: interrupted (%s) before the first epoch ended; no checkpoint "
                "was written: run the same command again to start over\n",
                tg_rd_signal_name(sig));
        return 128 + sig;
    }
    fprintf(stderr, "tgraph train: interrupted (%s); last complete checkpoint: %s (epoch %lld); "
            "resume with: tgraph train --resume", tg_rd_signal_name(sig), ls->ckpt,
            (long long)ls->epoch);
    tg_rd_put_shell_arg(stderr, ls->ckpt);
    if (!ls->here) {
        /* the file resumed from holds the run's settings, not this command's changes */
        char num[64];
        if (s->set_out) {
            fputs(" --out", stderr);
            tg_rd_put_shell_arg(stderr, s->out);
        }
        if (s->set_data) {
            fputs(" --data", stderr);
            tg_rd_put_shell_arg(stderr, s->data);
            if (s->allow_data_change) fputs(" --allow-data-change", stderr);
        }
        if (s->set_epochs) fprintf(stderr, " --epochs %lld", (long long)s->epochs);
        if (s->set_patience) fprintf(stderr, " --patience %lld", (long long)s->patience);
        if (s->set_lr) {
            snprintf(num, sizeof num, "%.17g", s->lr);
            fprintf(stderr, " --lr %s", num);
        }
        if (s->set_clip) {
            snprintf(num, sizeof num, "%.17g", s->clip);
            fprintf(stderr, " --clip %s", num);
        }
    }
    if (s->set_threads) fprintf(stderr, " --threads %lld", (long long)s->threads);
    if (s->recompute) fputs(" --recompute", stderr);
    fputc('\n', stderr);
    return 128 + sig;
}

/* --max-steps reached before the last epoch: where the run is, and how it
 * continues. The test that follows uses the best complete epoch's weights
 * (or, before any, the weights as they are). */
static int report_max_steps(job *j)
{
    const tg_trainer *t = &j->tr;
    if (j->s.progress) fprintf(stderr, "\n");
    if (t->resume_k > 0 && j->need_best_copy) {   /* the run's best weights come along */
        j->need_best_copy = false;
        if (tg_tl_copy_file(CMD, j->resume_best, j->rf.best)) return 2;
    }
    printf("max steps: stopped after step %lld (epoch %lld/%lld, %lld of %lld steps); "
           "checkpoint %s; continue with --resume %s and a larger --max-steps (or none)\n",
           (long long)t->state.step, (long long)t->state.epoch + (t->resume_k > 0),
           (long long)t->epochs, (long long)(t->resume_k > 0 ? t->resume_k : t->steps_per_epoch),
           (long long)t->steps_per_epoch, j->rf.ckpt, j->rf.ckpt);
    fflush(stdout);
    return 0;
}

/* The epochs, through the library's trainer. 0, or the exit status. */
static int train(job *j)
{
    tg_trainer *t = &j->tr;
    j->t_line = tg_tl_now();
    tg_status st = tg_trainer_run(t);
    if (!st) {
        if (t->end == TG_TRAINER_STOPPED) return report_interrupt(&j->s, &j->ls, tg_rd_stop_signal);
        return t->end == TG_TRAINER_MAX_STEPS ? report_max_steps(j) : 0;
    }
    if (st == TG_ERR_LIMIT)   /* the step's plan is larger than the memory left */
        return tg_cli_fail(CMD, "%s; lower the sizes or --batch-size, or set TGRAPH_MEM_LIMIT "
                           "(tgraph(1))", tg_last_error());
    switch (t->phase) {
    case TG_TRAINER_PHASE_STEP:
        if (j->s.progress) fprintf(stderr, "\n");
        fprintf(stderr, "tgraph train: stopped at epoch %lld step %lld: %s\n",
                (long long)t->state.epoch + 1, (long long)t->k + 1, tg_last_error());
        if (j->ls.ckpt)
            fprintf(stderr, "tgraph train: the last good checkpoint is %s (after epoch %lld)\n",
                    j->ls.ckpt, (long long)j->ls.epoch);
        else
            fprintf(stderr, "tgraph train: no checkpoint was written (it failed in the first "
                    "epoch); try a smaller --lr\n");
        return 1;
    case TG_TRAINER_PHASE_VALIDATE: return 1;    /* said by validate() */
    case TG_TRAINER_PHASE_PROGRESS: return 2;    /* said by on_progress() */
    default: return tg_cli_fail(CMD, "%s", tg_last_error());
    }
}

/* The best weights on the test windows, next to the baselines. */
static int report(job *j)
{
    const tg_checkpoint *st = &j->tr.state;
    if (st->best_epoch > 0) {
        const char *best_path = j->need_best_copy ? j->resume_best : j->rf.best;
        tg_checkpoint best;
        tg_checkpoint_init(&best);
        if (tg_checkpoint_read(best_path, &best) || tg_checkpoint_restore_params(&best, j->m.ps)) {
            tg_checkpoint_clear(&best);
            return tg_cli_fail(CMD, "reading the best checkpoint: %s", tg_last_error());
        }
        tg_checkpoint_clear(&best);
        printf("best epoch %lld (val mse %.4f), weights in %s\n", (long long)st->best_epoch,
               st->best_val, best_path);
    } else {
        printf("no epoch completed: testing the weights after step %lld\n", (long long)st->step);
    }
    tg_tl_metrics test;
    if (tg_tl_evaluate(CMD, "test", &j->m, &j->td.test, &test, NULL)) return 1;
    double rl, tm;
    if (tg_tl_baselines(CMD, &j->td, &rl, &tm)) return 2;
    double seconds = st->history_rows ? st->history[(st->history_rows - 1) *
                                                    TG_CKPT_HISTORY_COLS + 5] : 0;
    if (j->seconds > seconds) seconds = j->seconds;   /* steps after the last epoch */
    printf("trained %.1fs; %lld test windows\n", seconds, (long long)j->td.test.count);
    tg_tl_print_result(stdout, &test, rl, tm);
    return 0;
}

static int run(int argc, char **argv)
{
    if (tg_train_text_wanted(argc, argv)) return tg_train_text_run(argc, argv);
    job j = {.s = {.data = TG_BUILTIN_DATA, .out = "runs/train", .batch = 32, .patience = 3,
                   .lradj = TG_LR_TYPE1, .optim = TG_OPTIM_ADAM, .progress_every = 5}};
    tg_checkpoint_init(&j.resume_ck);
    tg_trainer_init(&j.tr);
    int rc = (j.cfg = tg_config_new()) ? 0 : tg_cli_fail(CMD, "out of memory");
    if (!rc) rc = tg_train_opts_parse(&j, argc, argv);
    if (!rc) tg_rd_signals_install();
    if (!rc) rc = j.s.resume ? tg_train_settings_from_checkpoint(&j) : tg_train_settings_new(&j);
    j.s.pmode = j.s.quiet ? PROGRESS_NONE
                : isatty(fileno(stderr)) && !j.s.set_progress_every ? PROGRESS_LIVE
                                                                    : PROGRESS_LINES;
    j.s.progress = j.s.pmode == PROGRESS_LIVE;
    if (!rc) rc = check_out_dir(&j);
    if (!rc) rc = build(&j);
    if (!rc) rc = setup_trainer(&j);
    if (!rc) rc = start_run(&j);
    if (!rc) rc = train(&j);
    if (!rc) rc = report(&j);
    job_free(&j);
    return rc;
}


const tg_cli_cmd tg_cmd_train = {
    .name = "train",
    .summary = "train a forecaster (crossformer, linear_forecast, ...) on a CSV file or built-in data",
    .help =
        "usage: tgraph train [--data FILE.csv] [--split A,B,C] [--model NAME] [--set KEY=VALUE]...\n"
        "                    [--features M|S|MS] [--target COL]\n"
        "                    [--epochs N] [--batch-size N] [--lr F] [--lradj S]\n"
        "                    [--patience N] [--seed N] [--threads N] [--recompute] [--out-dir DIR]\n"
        "                    [--overwrite] [--resume FILE [--allow-data-change]]\n"
        "                    [--optim adam|adamw|sgd] [--weight-decay F] [--clip F]\n"
        "                    [--max-steps N] [--progress-every SECONDS] [--quiet]\n"
        "\n"
        "Trains a forecaster from the layer registry (x [B, seq_len, channels] ->\n"
        "[B, pred_len, channels]) with MSE on StandardScaler-scaled values (fitted on\n"
        "the training rows). Each epoch: validation MSE, best weights kept, early stop\n"
        "after --patience epochs without improvement. Then the best weights are tested,\n"
        "ending with one line next to two baselines (repeat the last input step; the\n"
        "training mean):\n"
        "  test mse=0.3150 mae=0.3720 | repeat-last mse=1.2220 | train-mean mse=1.1100\n",
    .opts = tg_train_opts,
    .n_opts = TG_OPTS_N(tg_train_opts),
    .help_more =
        "\n"
        "Before the first step it prints the model's full config (every key), the\n"
        "data (file, rows, columns), the split (rows and windows), the parameter count\n"
        "and the training options, on stdout with the epoch lines.\n"
        "A NaN/Inf stops the run naming the op (or parameter) that produced it; the\n"
        "last epoch's checkpoint stays as it was. So does a validation MSE above 1e10\n"
        "(scaled units: the data or the configuration is broken), naming the worst\n"
        "channel; both exit 1. SIGINT, SIGTERM and SIGHUP stop the run between steps\n"
        "(exit 130, 143, 129) with one line naming the last complete checkpoint and\n"
        "the command that resumes it; a second one ends it at once. Temporary files\n"
        "(NAME.tmp.PID) left by a killed run are removed by the next run in --out.\n"
        "A run locks --out (DIR/.tgraph.lock): a second one there is refused, exit 2,\n"
        "naming the process of the first.\n"
        "PyTorch loads a checkpoint with\n"
        "  model.load_state_dict({k: v for k, v in load_file(F).items()\n"
        "                         if not k.startswith(\"tgraph.\")}, strict=False)\n"
        "(strict=False: the pe buffer Crossformer computes is not stored)\n"
        "\n"
        "examples:\n"
        "  tgraph train                                  # built-in data, about a minute\n"
        "  tgraph train --model linear_forecast --set normalize=true\n"
        "  tgraph train --data ETTh1.csv --split 8640,2880,2880 --set seq_len=168 \\\n"
        "      --set pred_len=24 --set seg_len=6 --set d_model=256 --set n_heads=4 \\\n"
        "      --set e_layers=3 --set factor=10 --set d_ff=512 --set dropout=0.2 \\\n"
        "      --batch-size 32 --lr 1e-4 --lradj crossformer --patience 3 --out runs/etth1\n"
        "  tgraph train --resume runs/etth1/checkpoint.safetensors --epochs 30\n"
        "  tgraph eval --checkpoint runs/train/best.safetensors\n",
    .run = run,
};
