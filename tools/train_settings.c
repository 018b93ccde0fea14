/*
 * train_settings.c - where a run's settings come from besides the command
 * line: a new run's defaults (the built-in job's, and a real small config on
 * --data), and a resumed run's checkpoint, which records them (with the
 * data's identity: a resume on other bytes is refused unless
 * --allow-data-change says so).
 *
 * Not here: the options and their parsing (train_opts.c), the checkpoint's
 * format and the trainer's own state in it (engine/train/checkpoint.c,
 * trainer.c), the data's columns and layout in it (train_loop.c).
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "train_job.h"
#include "train_opts.h"
#include "train_settings.h"

#define CMD "train"

/* ---- a new run: the defaults ---- */

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
    /* TSL's run.py defaults (its DLinear scripts set only the horizon) */
    {"dlinear", {"seq_len=96", "pred_len=96", "moving_avg=25", NULL}, 10, 1e-4},
    /* TSL's scripts/long_term_forecast/ETT_script/iTransformer_ETTh1.sh (every horizon):
     * e_layers 2, d_model 128, d_ff 128, factor 3; run.py's n_heads 8, dropout 0.1, gelu */
    {"itransformer",
     {"seq_len=96", "pred_len=96", "d_model=128", "n_heads=8", "e_layers=2", "d_ff=128",
      "factor=3", "dropout=0.1", "activation=gelu", NULL},
     10, 1e-4},
};

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

/* A new run: the command line over the defaults. The built-in job has its
 * own (the first registered model of defaults_table, a small config); with
 * --data, data_defaults_table's (a real small config), or for a model not
 * in it the registry defaults and Crossformer's main.py (lr 1e-4, 20 epochs). */
int tg_train_settings_new(job *j)
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

/* ---- the run's settings in a checkpoint ---- */

int tg_train_settings_put(tg_checkpoint *ck, const settings *s, const tg_tl_model *m,
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
    META("freq", "%s", td->freq);
    META("seq_len", "%lld", (long long)m->seq_len);
    META("pred_len", "%lld", (long long)m->pred_len);
    META("enc_in", "%lld", (long long)m->cols);
    META("batch_size", "%lld", (long long)s->batch);
    META("seed", "%lld", (long long)s->seed);
    META("lr", "%.17g", s->lr);
    META("lradj", "%s", tg_lr_schedule_name(s->lradj));
    META("optim", "%s", tg_train_opts_optim_names[s->optim]);
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
    const char *conflict = s->set_model ? "--model" : s->set_cfg ? "--set" : s->set_freq ? "--freq"
                           : s->set_split ? "--split"
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
    s->freq = tg_checkpoint_meta(ck, "freq");   /* NULL (an older run): h */
    if (tg_tl_config_parse(CMD, config, cfg)) return 2;
    if (!s->set_data) s->data = data;
    if (tg_split_parse(split, &s->split) || tg_lr_schedule_parse(lradj, &s->lradj))
        return tg_cli_fail(CMD, "--resume %s: %s", ck->path, tg_last_error());
    if (tg_train_opts_parse_optim(optim, &s->optim)) return 2;
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

/* A resumed run's settings come from its checkpoint. */
int tg_train_settings_from_checkpoint(job *j)
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
int tg_train_settings_check_data(const settings *s, tg_checkpoint *run, tg_trainer *t,
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
    tg_cli_print(stderr, "tgraph train: --allow-data-change: training on %s instead of %s; the "
                 "run's scaler (fitted on the old training rows) is kept, and the best epoch is "
                 "chosen again by validation MSE on the new data (the old best: epoch %lld, val "
                 "mse %.4g)\n", now, was, (long long)ck->best_epoch, ck->best_val);
    ck->best_epoch = 0;
    ck->best_val = INFINITY;
    ck->bad_epochs = 0;
    t->resume_k = 0;   /* a run saved mid-epoch (--max-steps): a new epoch on the new data */
    t->resume_loss_sum = 0;
    return 0;
}
