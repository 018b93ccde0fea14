/*
 * cmd_train.c - `tgraph train`: train a forecaster from the layer registry on
 * a CSV file or the built-in series, with validation each epoch, the best
 * checkpoint kept, early stopping, resumable checkpoints, metrics.csv,
 * loss.svg and the model diagram, ending with the test metrics next to two
 * baselines on one parseable line.
 *
 * A thin client of the library's trainer (engine/train/trainer.h), which
 * runs the steps and epochs, early stopping, checkpoints and the stop flag;
 * here are the options and their defaults (a real small config on --data),
 * the run directory's safety, the signals, and the trainer's callbacks
 * (batches of windows, validation MSE, the progress on stderr - a live line
 * on a terminal, plain lines every --progress-every seconds elsewhere - and
 * the epoch lines). --max-steps is the trainer's max_steps.
 *
 * Not here: the data pipeline and evaluation (train_loop.c), the model
 * (layers/), the optimizer (engine/train/optim.c), the loop (trainer.c).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"
#include "run_dir.h"
#include "train_loop.h"
#include "train_text.h"

#define CMD "train"

/* What the built-in job trains when --model is not given, with its --set
 * defaults (crossformer once it is registered, else the linear baseline). */
typedef struct model_defaults {
    const char *model;
    const char *sets[12];
    int64_t     epochs;
    double      lr;
} model_defaults;

static const model_defaults defaults_table[] = {
    {"crossformer",
     {"seq_len=96", "pred_len=24", "seg_len=12", "win_size=2", "d_model=32", "n_heads=2",
      "d_ff=64", "e_layers=2", "factor=3", "dropout=0.1", NULL},
     8, 5e-3},
    {"linear_forecast", {"seq_len=96", "pred_len=24", NULL}, 10, 1e-2},
};

/* The same on a --data file: a real small forecasting config (crossformer
 * reaches test MSE about 0.32 on ETTh1 with it). A model without an entry
 * gets its registry defaults, lr 1e-4 and 20 epochs. */
static const model_defaults data_defaults_table[] = {
    {"crossformer",
     {"seq_len=96", "pred_len=24", "seg_len=12", "d_model=64", "n_heads=4", "e_layers=2",
      "factor=3", "d_ff=128", "dropout=0.2", NULL},
     10, 1e-3},
    {"linear_forecast", {"seq_len=96", "pred_len=24", NULL}, 10, 1e-3},
};

/* How the steps of an epoch are shown on stderr. */
typedef enum progress_mode {
    PROGRESS_NONE,    /* --quiet */
    PROGRESS_LIVE,    /* a terminal: one line redrawn in place */
    PROGRESS_LINES,   /* a pipe or a file (or --progress-every): a line every N seconds */
} progress_mode;

typedef struct settings {
    const char    *data, *model, *out, *resume;
    const char    *target;     /* --target: NULL for OT or the last column */
    tg_tl_features features;   /* --features M|S|MS */
    tg_split_spec       split;
    int64_t        epochs, batch, patience, seed, threads;
    double         lr, clip, weight_decay;
    tg_lr_schedule lradj;
    tg_optim_kind  optim;
    bool           progress;   /* the live line on stderr (PROGRESS_LIVE) */
    progress_mode  pmode;
    double         progress_every;   /* PROGRESS_LINES: seconds between lines (0: every step) */
    int64_t        max_steps;        /* 0: no limit */
    bool           quiet;
    bool           recompute;  /* recompute linear outputs in backward (less memory) */
    bool           overwrite;  /* --overwrite: replace a run found in --out */
    bool           allow_data_change;   /* --allow-data-change: resume on other data */
    /* what the command line gave explicitly */
    bool set_data, set_model, set_split, set_epochs, set_batch, set_patience, set_seed, set_lr,
        set_lradj, set_optim, set_clip, set_wd, set_cfg, set_threads, set_out, set_progress_every;
} settings;

static const char *const optim_names[TG_OPTIM_KIND_COUNT] = {"sgd", "adam", "adamw"};

static int parse_optim(const char *s, tg_optim_kind *out)
{
    for (int i = 0; i < TG_OPTIM_KIND_COUNT; i++)
        if (!strcmp(s, optim_names[i])) {
            *out = (tg_optim_kind)i;
            return 0;
        }
    return tg_cli_fail(CMD, "--optim wants sgd, adam or adamw, got '%s'", s);
}

/* ---- the run's settings in a checkpoint ---- */

static int put_settings(tg_checkpoint *ck, const settings *s, const tg_tl_model *m,
                        const tg_tl_data *td, const tg_file_id *id)
{
    char buf[8192];
    tg_status st = TG_OK;
#define META(k, ...) \
    if (!st) { snprintf(buf, sizeof buf, __VA_ARGS__); st = tg_checkpoint_set_meta(ck, k, buf); }
    META("model", "%s", m->name);
    if (tg_tl_config_format(m->layer, buf, sizeof buf))
        return tg_cli_fail(CMD, "model config too long for a checkpoint");
    if (!st) st = tg_checkpoint_set_meta(ck, "config", buf);
    /* the data's identity: an absolute path (eval works from any directory),
     * its size and hash (a resume notices other data) */
    META("data", "%s", id->path ? id->path : s->data);
    if (id->path && id->regular) {
        META("data.size", "%llu", (unsigned long long)id->size);
        META("data.fnv1a64", "%016llx", (unsigned long long)id->hash);
    }
    char sp[64];
    tg_split_format(&td->split, sp, sizeof sp);
    META("split", "%s", sp);
    META("seq_len", "%lld", (long long)m->seq_len);
    META("pred_len", "%lld", (long long)m->pred_len);
    META("enc_in", "%lld", (long long)m->cols);
    META("batch_size", "%lld", (long long)s->batch);
    META("seed", "%lld", (long long)s->seed);
    META("lr", "%.17g", s->lr);
    META("lradj", "%s", tg_lr_schedule_name(s->lradj));
    META("optim", "%s", optim_names[s->optim]);
    META("weight_decay", "%.17g", s->weight_decay);
    META("clip", "%.17g", s->clip);
    META("epochs", "%lld", (long long)s->epochs);
    META("patience", "%lld", (long long)s->patience);
#undef META
    if (st) return tg_cli_fail(CMD, "%s", tg_last_error());
    if (tg_tl_put_data_meta(CMD, ck, td)) return 2;   /* columns, target, features, dates */
    return 0;
}

static int meta_int(const tg_checkpoint *ck, const char *key, int64_t lo, int64_t hi,
                    int64_t *out)
{
    if (tg_checkpoint_meta_int(ck, key, lo, hi, out))
        return tg_cli_fail(CMD, "--resume %s", tg_last_error());
    return 0;
}

static int meta_num(const tg_checkpoint *ck, const char *key, double lo, double hi, double *out)
{
    if (tg_checkpoint_meta_num(ck, key, lo, hi, out))
        return tg_cli_fail(CMD, "--resume %s", tg_last_error());
    return 0;
}

/* Settings of a resumed run come from its checkpoint; a few may be changed. */
static int get_settings(const tg_checkpoint *ck, settings *s, tg_config *cfg)
{
    const char *conflict = s->set_model ? "--model" : s->set_cfg ? "--set" : s->set_split ? "--split"
                           : s->set_batch ? "--batch-size" : s->set_seed ? "--seed"
                           : s->set_lradj ? "--lradj" : s->set_optim ? "--optim"
                           : s->set_wd ? "--weight-decay" : NULL;
    if (conflict)
        return tg_cli_fail(CMD, "%s cannot be changed when resuming (the run's configuration "
                           "comes from %s; --epochs, --patience, --lr, --clip, --data, --out and "
                           "--threads can)", conflict, ck->path);
    const char *model = tg_checkpoint_meta(ck, "model"), *config = tg_checkpoint_meta(ck, "config");
    const char *data = tg_checkpoint_meta(ck, "data"), *split = tg_checkpoint_meta(ck, "split");
    const char *lradj = tg_checkpoint_meta(ck, "lradj"), *optim = tg_checkpoint_meta(ck, "optim");
    if (!model || !config || !data || !split || !lradj || !optim)
        return tg_cli_fail(CMD, "--resume %s: not a checkpoint of tgraph train (metadata lacks "
                           "the run's settings)", ck->path);
    s->model = model;
    if (tg_tl_config_parse(CMD, config, cfg)) return 2;
    if (!s->set_data) s->data = data;
    if (tg_split_parse(split, &s->split) || tg_lr_schedule_parse(lradj, &s->lradj))
        return tg_cli_fail(CMD, "--resume %s: %s", ck->path, tg_last_error());
    if (parse_optim(optim, &s->optim)) return 2;
    if (tg_tl_layout_of(CMD, ck, &s->features, &s->target)) return 2;   /* the run's layout */
    /* the ranges of the command line's options */
    if (meta_int(ck, "batch_size", 1, 4096, &s->batch) ||
        meta_int(ck, "seed", 0, INT64_MAX, &s->seed) ||
        meta_num(ck, "weight_decay", 0, 1e6, &s->weight_decay) ||
        (!s->set_lr && meta_num(ck, "lr", 1e-300, 1e300, &s->lr)) ||
        (!s->set_clip && meta_num(ck, "clip", 0, 1e300, &s->clip)) ||
        (!s->set_epochs && meta_int(ck, "epochs", 1, 100000, &s->epochs)) ||
        (!s->set_patience && meta_int(ck, "patience", 0, 100000, &s->patience)))
        return 2;
    return 0;
}


/* What the run had saved when it stopped. */
typedef struct last_saved {
    const char *ckpt;     /* the last complete checkpoint; NULL: none */
    int64_t     epoch;
    bool        here;     /* written by this invocation (it holds its settings) */
} last_saved;

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


/* ---- the data's identity ---- */

static void describe_id(char *buf, size_t len, const char *path, const char *size,
                        const char *hash)
{
    if (!strcmp(path, TG_BUILTIN_DATA)) snprintf(buf, len, "the built-in series");
    else if (size && hash) snprintf(buf, len, "%s, %s bytes, fnv1a64 %s", path, size, hash);
    else snprintf(buf, len, "%s", path);
}

/* On --resume: is s->data the data the run was trained on? Refused (2) when
 * not, unless --allow-data-change; then the run's best-epoch tracking starts
 * again on the new validation split, and a line says what changes. */
static int check_resume_data(const settings *s, tg_checkpoint *run, tg_trainer *t,
                             const tg_file_id *id)
{
    tg_checkpoint *ck = &t->state;
    const char *old = tg_checkpoint_meta(run, "data");
    const char *osize = tg_checkpoint_meta(run, "data.size");
    const char *ohash = tg_checkpoint_meta(run, "data.fnv1a64");
    char nsize[32] = "", nhash[32] = "";
    snprintf(nsize, sizeof nsize, "%llu", (unsigned long long)id->size);
    snprintf(nhash, sizeof nhash, "%016llx", (unsigned long long)id->hash);
    bool old_builtin = !strcmp(old, TG_BUILTIN_DATA), new_builtin = !id->path, same;
    if (old_builtin || new_builtin) same = old_builtin && new_builtin;
    else if (osize && ohash && id->regular) same = !strcmp(osize, nsize) && !strcmp(ohash, nhash);
    else   /* an older checkpoint, or a pipe: only the path can be compared */
        same = !s->set_data || !strcmp(old, s->data) || !strcmp(old, id->path);
    if (same) return 0;
    char was[4400], now[4400];
    describe_id(was, sizeof was, old, osize, ohash);
    describe_id(now, sizeof now, new_builtin ? TG_BUILTIN_DATA : id->path,
                id->regular ? nsize : NULL, id->regular ? nhash : NULL);
    if (!s->allow_data_change && !s->set_data)
        return tg_cli_fail(CMD, "the run's data changed since %s was written (now %s; then %s): "
                           "the run's scaler and best validation MSE belong to the old bytes; to "
                           "continue on the new bytes anyway add --allow-data-change", run->path,
                           now, was);
    if (!s->allow_data_change)
        return tg_cli_fail(CMD, "--data %s (%s) is not the data of the run in %s (%s): the run's "
                           "scaler and best validation MSE belong to that data; to continue "
                           "training on this data anyway add --allow-data-change", s->data, now,
                           run->path, was);
    fprintf(stderr, "tgraph train: --allow-data-change: training on %s instead of %s; the run's "
            "scaler (fitted on the old training rows) is kept, and the best epoch is chosen "
            "again by validation MSE on the new data (the old best: epoch %lld, val mse %.4g)\n",
            now, was, (long long)ck->best_epoch, ck->best_val);
    ck->best_epoch = 0;
    ck->best_val = INFINITY;
    ck->bad_epochs = 0;
    t->resume_k = 0;   /* a run saved mid-epoch (--max-steps): a new epoch on the new data */
    t->resume_loss_sum = 0;
    return 0;
}

/* The built-in job's --set defaults under the user's: cfg is replaced by
 * a config holding both. */
static int merge_defaults(const model_defaults *def, tg_config **cfg)
{
    tg_config *merged = tg_config_new();
    if (!merged) return tg_cli_fail(CMD, "out of memory");
    for (int i = 0; def->sets[i]; i++) tg_config_set(merged, def->sets[i]);
    for (int i = 0; i < tg_config_count(*cfg); i++) {
        const char *k = tg_config_key(*cfg, i);
        tg_value copy;
        if (tg_value_copy(&copy, tg_config_get(*cfg, k)) || tg_config_put(merged, k, &copy)) {
            tg_config_free(merged);
            return tg_cli_fail(CMD, "--set %s: %s", k, tg_last_error());
        }
    }
    tg_config_free(*cfg);
    *cfg = merged;
    return 0;
}


/* ---- the run: everything one invocation holds ---- */

typedef struct job {
    settings       s;
    tg_config     *cfg;
    tg_checkpoint  resume_ck;    /* the file given to --resume, read */
    tg_tl_data     td;
    tg_tl_model    m;
    tg_tl_files    rf;
    tg_file_id     data_id;
    tg_optim      *opt;
    tg_trainer     tr;           /* the library's loop; tr.state is the run's checkpoint */
    int64_t       *order;        /* [train windows]: this epoch's batch order */
    char          *resume_dir, *resume_best, *cfg_src;
    bool           continuing;   /* resumed in the checkpoint's own directory */
    bool           need_best_copy;
    last_saved     ls;
    double         t_epoch, t_draw;   /* the progress bar's clocks */
    double         t_line;            /* PROGRESS_LINES: when the last line was written */
    double         seconds;           /* training time so far (the trainer's clock) */
} job;

static void job_free(job *j)
{
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
    tg_windows_fill(&j->td.train, j->order + k * j->m.B, j->m.B,
                    (tg_tensor *)tg_node_value(j->m.x), (tg_tensor *)tg_node_value(j->m.y));
    return TG_OK;
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

enum { O_DATA, O_SPLIT, O_MODEL, O_SET, O_FEATURES, O_TARGET, O_EPOCHS, O_BATCH, O_LR, O_LRADJ,
       O_PATIENCE, O_SEED, O_THREADS, O_RECOMPUTE, O_OUT_DIR, O_OVERWRITE, O_RESUME, O_ALLOW_DATA,
       O_OPTIM, O_WD, O_CLIP, O_MAX_STEPS, O_PROGRESS_EVERY, O_QUIET,
       /* training on text (train_text.c) */
       O_TEXT, O_MIN_LR, O_WARMUP, O_DECAY, O_BETA1, O_BETA2, O_EVAL_INTERVAL, O_EVAL_ITERS };
static const tg_opt opts[] = {
    [O_DATA] = {"--data", NULL, "FILE.csv",
                "a header row, an optional date column (read: predict continues it), numeric "
                "columns (the ETT layout). Default: the built-in series (4000 hourly steps, 7 "
                "coupled channels, daily and weekly cycles)"},
    [O_SPLIT] = {"--split", NULL, "A,B,C",
                 "train, validation, test rows (8640,2880,2880: the ETT protocol) or ratios "
                 "(default 0.7,0.1,0.2); validation and test windows start seq_len rows early"},
    [O_MODEL] = {"--model", NULL, "NAME",
                 "default crossformer (linear_forecast if it is not built in); enc_in and B "
                 "come from the data and --batch-size"},
    [O_SET] = {"--set", NULL, "KEY=VALUE",
               "a model config key (crossformer: seq_len pred_len seg_len win_size factor "
               "d_model d_ff n_heads e_layers dropout), over the defaults key by key. With "
               "--data: a small real config (crossformer: seq_len 96, pred_len 24, seg_len 12, "
               "d_model 64, n_heads 4, e_layers 2, factor 3, d_ff 128, dropout 0.2; "
               "linear_forecast: seq_len 96, pred_len 24; other models: their own). On the "
               "built-in data a smaller one (crossformer: seq_len 96, pred_len 24, d_model 32, "
               "n_heads 2, d_ff 64, e_layers 2, factor 3, dropout 0.1)"},
    [O_FEATURES] = {"--features", NULL, "M|S|MS",
                    "as TSL's run.py: M (default) every column in and out; S the target column "
                    "only; MS every column in, the loss and metrics on the target's forecast"},
    [O_TARGET] = {"--target", NULL, "COL",
                  "the target column (default OT when there is one, else the last)"},
    [O_EPOCHS] = {"--epochs", NULL, "N", "default 10 (20 for a model without defaults); "
                  "built-in data: 8 (crossformer), 10 (linear)"},
    [O_BATCH] = {"--batch-size", NULL, "N",
                 "default 32 (a last partial training batch is dropped; every validation and "
                 "test window counts once)"},
    [O_LR] = {"--lr", NULL, "F", "the optimizer's lr, default 1e-3 (1e-4 for a model without "
              "defaults); built-in data: 5e-3, 1e-2 (linear)"},
    [O_LRADJ] = {"--lradj", NULL, "S",
                 "type1 (default; halve each epoch), constant, or cosine (one epoch of warmup, "
                 "then cosine decay to 0)"},
    [O_PATIENCE] = {"--patience", NULL, "N", "default 3; 0: no early stopping"},
    [O_SEED] = {"--seed", NULL, "N", "default 0 (init, batch order, dropout): the same seed and "
                "--threads give bit-identical runs"},
    [O_THREADS] = {"--threads", NULL, "N", "default: every core"},
    [O_RECOMPUTE] = {"--recompute", NULL, NULL,
                     "recompute linear layers' outputs in backward instead of keeping them from "
                     "the forward: less memory, one more GEMM per such layer and step; "
                     "bit-identical results"},
    [O_OUT_DIR] = {"--out-dir", "--out -o", "DIR",
                   "default runs/train (on --resume: the file's dir), created if missing: "
                   "checkpoint.safetensors (last epoch), best.safetensors, metrics.csv (epoch, "
                   "step, train_loss, val_mse, lr, seconds), loss.svg, model.dot (+ .svg if "
                   "Graphviz is installed). A DIR that holds a run already is refused: continue "
                   "it with --resume DIR/checkpoint.safetensors"},
    [O_OVERWRITE] = {"--overwrite", NULL, NULL,
                     "replace the run found in --out-dir (its files are removed first)"},
    [O_RESUME] = {"--resume", NULL, "FILE",
                  "continue a run exactly (the losses of an uninterrupted run); only --epochs "
                  "--patience --lr --clip --data --out-dir --threads may change (--max-steps, "
                  "--progress-every and --quiet are this invocation's). Another --out-dir gets "
                  "the run's best weights too; one holding another run is refused"},
    [O_ALLOW_DATA] = {"--allow-data-change", NULL, NULL,
                      "on --resume, train on a --data file other than the run's (the "
                      "checkpoint records its absolute path, size and FNV-1a hash; other bytes "
                      "are refused): the run's scaler is kept and the best epoch is chosen "
                      "again on the new validation rows"},
    [O_OPTIM] = {"--optim", NULL, "adam|adamw|sgd", "the optimizer, default adam"},
    [O_WD] = {"--weight-decay", NULL, "F", "weight decay, default 0"},
    [O_CLIP] = {"--clip", NULL, "F", "clip the gradient norm (default: off)"},
    [O_MAX_STEPS] = {"--max-steps", NULL, "N",
                     "stop after N optimizer steps of the run (a smoke test, a time budget): "
                     "the checkpoint is written there, even in mid-epoch, and the best complete "
                     "epoch's weights are tested (before any, the weights as they are). "
                     "--resume with a larger --max-steps (or none) continues exactly: the bits "
                     "of one straight run. The schedule still spans --epochs"},
    [O_PROGRESS_EVERY] = {"--progress-every", NULL, "SECONDS",
                          "the steps inside an epoch on stderr: on a terminal a live line "
                          "(step/total, running loss, steps/s, ETA of the epoch and of the "
                          "run); on a pipe or file one plain line every SECONDS (default 5; 0: "
                          "every step), flushed:\n"
                          "progress: epoch E/N step K/S (run STEP/TOTAL)  loss L  R steps/s  "
                          "ETA epoch M:SS, run M:SS\n"
                          "Given on a terminal, plain lines are written there too"},
    [O_QUIET] = {"--quiet", "-q", NULL, "no progress on stderr (the epoch lines on stdout stay)"},
    [O_TEXT] = {"--text", NULL, "FILE",
                "train a character-level language model on a UTF-8 text file instead (nanoGPT's "
                "shakespeare_char protocol, below): --model gpt (the default), its keys by --set "
                "(defaults those of nanoGPT's config/train_shakespeare_char.py: n_layer=6 "
                "n_head=6 n_embd=384 block_size=256 dropout=0.2 bias=false; vocab_size, B and T "
                "come from the text, --batch-size and block_size; one --set may take several "
                "KEY=VALUE words: --set n_layer=4 n_head=4). With --text the other "
                "options' defaults are nanoGPT's too: --batch-size 64, --max-steps 5000 (its "
                "max_iters), --lr 1e-3, --weight-decay 0.1 (AdamW, on parameters of rank >= 2 "
                "only), --clip 1, --seed 1337, --out-dir runs/gpt; --data, --split, --epochs, "
                "--patience, --lradj, --optim and the series options do not apply"},
    [O_MIN_LR] = {"--min-lr", NULL, "F", "--text: the rate the cosine decays to (default 1e-4)"},
    [O_WARMUP] = {"--warmup", NULL, "N",
                  "--text: linear warmup steps, lr * (step + 1) / (N + 1) (default 100)"},
    [O_DECAY] = {"--lr-decay-iters", NULL, "N",
                 "--text: the step where the cosine reaches --min-lr (default --max-steps)"},
    [O_BETA1] = {"--beta1", NULL, "F", "--text: AdamW's beta1 (default 0.9)"},
    [O_BETA2] = {"--beta2", NULL, "F", "--text: AdamW's beta2 (default 0.99)"},
    [O_EVAL_INTERVAL] = {"--eval-interval", NULL, "N",
                         "--text: evaluate every N steps (default 250): the mean loss of "
                         "--eval-iters random batches of each split, dropout off; printed "
                         "(\"step N: train loss A, val loss B\"), a row of metrics.csv (step, "
                         "train_loss, val_loss, lr), best.safetensors when the validation loss "
                         "is the best so far, and checkpoint.safetensors"},
    [O_EVAL_ITERS] = {"--eval-iters", NULL, "N", "--text: batches per split and evaluation "
                      "(default 200)"},
};

/* A data or model option (--data --split --target --features --model --set)
 * into j->s or j->cfg: 0, the exit status, or -1 when a->opt is none of them. */
static int parse_data_option(job *j, tg_args *a)
{
    settings *s = &j->s;
    const char *v;
#define VALUE(p) if (!tg_args_value(a, p)) return 2
    if (a->opt == O_DATA) {
        VALUE(&s->data);
        s->set_data = true;
    } else if (a->opt == O_SPLIT) {
        VALUE(&v);
        if (tg_split_parse(v, &s->split)) return tg_cli_fail(CMD, "--split %s", tg_last_error());
        s->set_split = true;
    } else if (a->opt == O_TARGET) {
        VALUE(&s->target);
    } else if (a->opt == O_FEATURES) {
        VALUE(&v);
        if (tg_tl_features_parse(CMD, v, &s->features)) return 2;
    } else if (a->opt == O_MODEL) {
        VALUE(&s->model);
        s->set_model = true;
    } else if (a->opt == O_SET) {
        if (tg_cli_set_args(a, CMD, j->cfg)) return 2;
        s->set_cfg = true;
    } else {
        return -1;
    }
#undef VALUE
    return 0;
}

/* One option into j->s (or j->cfg). 0, or the exit status. */
static int parse_option(job *j, tg_args *a, const char *arg)
{
    settings *s = &j->s;
    const char *v;
#define VALUE(p) if (!tg_args_value(a, p)) return 2
    int r = parse_data_option(j, a);
    if (r >= 0) return r;
    if (a->opt == O_EPOCHS) {
        if (!tg_args_int(a, 1, 100000, &s->epochs)) return 2;
        s->set_epochs = true;
    } else if (a->opt == O_BATCH) {
        if (!tg_args_int(a, 1, 4096, &s->batch)) return 2;
        s->set_batch = true;
    } else if (a->opt == O_LR) {
        if (!tg_args_double(a, 1e-300, 1e300, &s->lr)) return 2;
        s->set_lr = true;
    } else if (a->opt == O_LRADJ) {
        VALUE(&v);
        if (tg_lr_schedule_parse(v, &s->lradj))
            return tg_cli_fail(CMD, "--lradj %s", tg_last_error());
        s->set_lradj = true;
    } else if (a->opt == O_OPTIM) {
        VALUE(&v);
        if (parse_optim(v, &s->optim)) return 2;
        s->set_optim = true;
    } else if (a->opt == O_WD) {
        if (!tg_args_double(a, 0, 1e6, &s->weight_decay)) return 2;
        s->set_wd = true;
    } else if (a->opt == O_CLIP) {
        if (!tg_args_double(a, 0, 1e300, &s->clip)) return 2;
        s->set_clip = true;
    } else if (a->opt == O_PATIENCE) {
        if (!tg_args_int(a, 0, 100000, &s->patience)) return 2;
        s->set_patience = true;
    } else if (a->opt == O_SEED) {
        if (!tg_args_int(a, 0, INT64_MAX, &s->seed)) return 2;
        s->set_seed = true;
    } else if (a->opt == O_THREADS) {
        if (!tg_args_int(a, 0, TG_MAX_THREADS, &s->threads)) return 2;
        s->set_threads = true;
    } else if (a->opt == O_MAX_STEPS) {
        if (!tg_args_int(a, 1, INT64_MAX, &s->max_steps)) return 2;
    } else if (a->opt == O_PROGRESS_EVERY) {
        if (!tg_args_double(a, 0, 1e9, &s->progress_every)) return 2;
        s->set_progress_every = true;
    } else if (a->opt == O_QUIET) {
        s->quiet = true;
    } else if (a->opt == O_RECOMPUTE) {
        s->recompute = true;
    } else if (a->opt == O_OVERWRITE) {
        s->overwrite = true;
    } else if (a->opt == O_ALLOW_DATA) {
        s->allow_data_change = true;
    } else if (a->opt == O_OUT_DIR) {
        VALUE(&s->out);
        s->set_out = true;
    } else if (a->opt == O_RESUME) {
        VALUE(&s->resume);
    } else {
        return tg_cli_unknown(a, arg);
    }
#undef VALUE
    return 0;
}

static int parse_args(job *j, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    int rc;
    while ((arg = tg_args_next(&a)))
        if (a.opt >= O_TEXT)
            return tg_cli_fail(CMD, "%s applies to training on text (--text FILE)", arg);
        else if ((rc = parse_option(j, &a, arg))) return rc;
    if (j->s.allow_data_change && !j->s.resume)
        return tg_cli_fail(CMD, "--allow-data-change only applies with --resume (a new run fits "
                           "its scaler on the data it is given)");
    if (j->s.threads && tg_threads_set((int)j->s.threads))
        return tg_cli_fail(CMD, "--threads %s", tg_last_error());
    tg_rd_signals_install();
    return 0;
}

/* A resumed run's settings come from its checkpoint. */
static int settings_from_checkpoint(job *j)
{
    settings *s = &j->s;
    if (tg_checkpoint_read(s->resume, &j->resume_ck))
        return tg_cli_fail(CMD, "--resume %s", tg_last_error());
    if (get_settings(&j->resume_ck, s, j->cfg)) return 2;
    size_t src_len = strlen("the config of checkpoint ") + strlen(s->resume) + 1;
    if (!(j->resume_dir = tg_tl_dirname(s->resume)) ||
        !(j->resume_best = tg_tl_path_join(j->resume_dir, "best.safetensors")) ||
        !(j->cfg_src = malloc(src_len)))
        return tg_cli_fail(CMD, "out of memory");
    snprintf(j->cfg_src, src_len, "the config of checkpoint %s", s->resume);
    if (!s->set_out) s->out = j->resume_dir;   /* continue in the checkpoint's directory */
    if (!s->set_data && strcmp(s->data, TG_BUILTIN_DATA) && access(s->data, R_OK) != 0)
        return tg_cli_fail(CMD, "the run's data %s (stored in %s) cannot be read: %s; give its "
                           "new place with --data FILE.csv", s->data, s->resume, strerror(errno));
    return 0;
}

/* A new run: the command line over the defaults. The built-in job has its
 * own (the first registered model of defaults_table, a small config); with
 * --data, data_defaults_table's (a real small config), or for a model not
 * in it the registry defaults and Crossformer's main.py (lr 1e-4, 20 epochs). */
static int settings_new(job *j)
{
    settings *s = &j->s;
    const model_defaults *def = NULL;
    bool builtin = !strcmp(s->data, TG_BUILTIN_DATA);
    for (size_t i = 0; i < sizeof defaults_table / sizeof *defaults_table && !def; i++)
        if (s->model ? !strcmp(defaults_table[i].model, s->model)
                     : tg_layer_class_find(defaults_table[i].model) != NULL)
            def = &defaults_table[i];
    if (!s->model) s->model = def ? def->model : "linear_forecast";
    if (!builtin) {
        def = NULL;
        for (size_t i = 0; i < sizeof data_defaults_table / sizeof *data_defaults_table; i++)
            if (!strcmp(data_defaults_table[i].model, s->model)) def = &data_defaults_table[i];
    }
    if (def && merge_defaults(def, &j->cfg)) return 2;
    if (!s->set_epochs) s->epochs = def ? def->epochs : 20;
    if (!s->set_lr) s->lr = def ? def->lr : 1e-4;
    if (!s->set_split) tg_split_parse(builtin ? TG_BUILTIN_SPLIT : "0.7,0.1,0.2", &s->split);
    return 0;
}

/* The output directory: every name fits, and no other run is in it. */
static int check_out_dir(job *j)
{
    const settings *s = &j->s;
    if (tg_tl_files_init(CMD, &j->rf, s->out)) return 2;
    j->continuing = s->resume && tg_rd_same_dir(j->resume_dir, s->out);
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
        tg_tl_data_layout(CMD, &j->td, s->target, s->features))
        return 2;
    tg_rng init_rng;
    tg_rng_seed(&init_rng, (uint64_t)s->seed);
    if (tg_tl_model_build(CMD, &j->m, s->model, j->cfg, j->cfg_src ? j->cfg_src : "--set",
                          j->td.d->cols, s->batch, s->resume ? NULL : &init_rng))
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
        if (tg_trainer_resume(t, &j->resume_ck))
            return tg_cli_fail(CMD, "--resume %s", tg_last_error());
        if (check_resume_data(s, &j->resume_ck, t, &j->data_id)) return 2;
    }
    if (put_settings(&t->state, s, &j->m, &j->td, &j->data_id)) return 2;
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
    if (s->overwrite && !j->continuing && tg_rd_run_files_present(&j->rf, found, sizeof found)) {
        if (tg_rd_remove_run_files(&j->rf)) return 2;
        fprintf(stderr, "tgraph train: --overwrite: removed the previous run's files from %s "
                "(%s)\n", s->out, found);
    }
    tg_rd_remove_stale_temps(s->out);
    tg_tl_write_diagram(CMD, &j->rf, &j->m);
    printf("tgraph train: %s, %lld parameters, on %s: %lld rows x %lld columns\n", j->m.name,
           (long long)tg_params_numel(j->m.ps), td->d->source, (long long)td->d->rows,
           (long long)td->d->cols);
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
           optim_names[s->optim], s->lr, tg_lr_schedule_name(s->lradj), (long long)j->m.B,
           (long long)j->tr.steps_per_epoch, (long long)s->epochs, (long long)s->patience,
           (long long)s->seed, tg_threads_get());
    if (s->max_steps) printf(", max steps %lld", (long long)s->max_steps);
    printf(" -> %s/\n", s->out);
    if (s->resume)
        printf("  resumed from %s after epoch %lld (step %lld%s)\n", s->resume,
               (long long)j->tr.state.epoch, (long long)j->tr.state.step,
               j->tr.resume_k ? ", in mid-epoch" : "");
    fflush(stdout);
    return 0;
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
    if (!tg_trainer_run(t)) {
        if (t->end == TG_TRAINER_STOPPED) return report_interrupt(&j->s, &j->ls, tg_rd_stop_signal);
        return t->end == TG_TRAINER_MAX_STEPS ? report_max_steps(j) : 0;
    }
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
    if (!rc) rc = parse_args(&j, argc, argv);
    if (!rc) rc = j.s.resume ? settings_from_checkpoint(&j) : settings_new(&j);
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
        "                    [--epochs N] [--batch-size N] [--lr F] [--lradj type1|constant|cosine]\n"
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
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
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
        "      --batch-size 32 --lr 1e-4 --lradj type1 --patience 3 --out runs/etth1\n"
        "  tgraph train --resume runs/etth1/checkpoint.safetensors --epochs 30\n"
        "  tgraph eval --checkpoint runs/train/best.safetensors\n",
    .run = run,
};
