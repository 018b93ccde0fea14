/*
 * cmd_eval.c - `tgraph eval`: the test metrics of a checkpoint written by
 * `tgraph train` (the model and its configuration, the data, the split and
 * the scaler all come from the checkpoint), optionally on other data, with
 * the forecasts written as .npy.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "outputs.h"
#include "train_loop.h"

#define CMD "eval"

/* One `tgraph eval` call: the command line, the checkpoint and what it rebuilds. */
typedef struct {
    const char    *ckpt, *data, *preds;   /* --checkpoint, --data, --predictions */
    bool           inverse, set_split;    /* --inverse; --split given */
    int64_t        threads;
    tg_split_spec  split;
    tg_config     *cfg;                   /* the model's config, from the checkpoint */
    tg_checkpoint  ck;
    const char    *model, *config, *cdata, *csplit;   /* the checkpoint's metadata */
    int64_t        batch;
    tg_tl_data     td;
    tg_tl_model    m;
    float         *pred;                  /* the forecasts, with --predictions */
    tg_tensor     *out;
    tg_tl_metrics  test;
} eval_run;

/* The command line; 2 (or the unknown argument's code) when it is wrong. */
static int parse_args(eval_run *E, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    const char *arg, *v;
    while ((arg = tg_args_next(&a))) {
        if (!strcmp(arg, "--checkpoint")) {
            if (!tg_args_value(&a, &E->ckpt)) return 2;
        } else if (!strcmp(arg, "--data")) {
            if (!tg_args_value(&a, &E->data)) return 2;
        } else if (!strcmp(arg, "--split")) {
            if (!tg_args_value(&a, &v)) return 2;
            if (tg_split_parse(v, &E->split)) {
                tg_cli_fail(CMD, "--split %s", tg_last_error());
                return 2;
            }
            E->set_split = true;
        } else if (!strcmp(arg, "--predictions")) {
            if (!tg_args_value(&a, &E->preds)) return 2;
        } else if (!strcmp(arg, "--inverse")) {
            E->inverse = true;
        } else if (!strcmp(arg, "--threads")) {
            if (!tg_args_int(&a, 0, TG_MAX_THREADS, &E->threads)) return 2;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    return 0;
}

/* The checkpoint read and its metadata checked (a run of tgraph train whose
 * data can still be read); false after printing why not. */
static bool read_checkpoint(eval_run *E)
{
    const char *ckpt = E->ckpt, *data = E->data, *preds = E->preds;
    tg_checkpoint *ck = &E->ck;
    if (!ckpt) {
        tg_cli_fail(CMD, "missing --checkpoint FILE.safetensors (written by tgraph train)");
        return false;
    }
    const tg_cli_file in[] = {{"--checkpoint", ckpt}, {"--data", data}};
    const tg_cli_file out_file = {"--predictions", preds};
    if (tg_cli_check_outputs(CMD, in, 2, &out_file, 1)) return false;
    if (E->threads && tg_threads_set((int)E->threads)) {
        tg_cli_fail(CMD, "--threads %s", tg_last_error());
        return false;
    }
    if (tg_checkpoint_read(ckpt, ck)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        return false;
    }
    E->model = tg_checkpoint_meta(ck, "model"), E->config = tg_checkpoint_meta(ck, "config");
    E->cdata = tg_checkpoint_meta(ck, "data"), E->csplit = tg_checkpoint_meta(ck, "split");
    if (!E->model || !E->config || !E->cdata || !E->csplit ||
        !tg_checkpoint_meta(ck, "batch_size") || !ck->scaler) {
        tg_cli_fail(CMD, "--checkpoint %s: not a checkpoint of tgraph train (metadata lacks the "
                    "model, its config, the data, the split or the scaler)", ckpt);
        return false;
    }
    if (tg_checkpoint_meta_int(ck, "batch_size", 1, 4096, &E->batch)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        return false;
    }
    const char *cdata = E->cdata;
    if (!data && strcmp(cdata, TG_BUILTIN_DATA) && access(cdata, R_OK) != 0) {
        tg_cli_fail(CMD, "the run's data %s (stored in %s) cannot be read: %s; give its new "
                    "place with --data FILE.csv", cdata, ckpt, strerror(errno));
        return false;
    }
    /* the data is the checkpoint's unless --data says otherwise */
    const tg_cli_file cdata_file = {"(the checkpoint's data)", data ? NULL : cdata};
    if (tg_cli_check_outputs(CMD, &cdata_file, 1, &out_file, 1)) return false;
    if (!E->set_split && tg_split_parse(E->csplit, &E->split)) {
        tg_cli_fail(CMD, "--checkpoint %s: %s", ckpt, tg_last_error());
        return false;
    }
    return true;
}

/* The data loaded and the model rebuilt with the checkpoint's weights and scaler. */
static bool load_model(eval_run *E)
{
    const char *ckpt = E->ckpt;
    tg_tl_data *td = &E->td;
    tg_tl_model *m = &E->m;
    tg_tl_features features;
    const char *target;
    if (tg_tl_config_parse(CMD, E->config, E->cfg) ||
        tg_tl_layout_of(CMD, &E->ck, &features, &target) ||
        tg_tl_data_load(CMD, E->data ? E->data : E->cdata, td) ||
        tg_tl_data_layout(CMD, td, target, features))
        return false;
    if (td->d->cols != E->ck.scaler->cols) {
        tg_cli_fail(CMD, "--data %s has %lld columns; the model was trained on %lld",
                    td->d->source, (long long)td->d->cols, (long long)E->ck.scaler->cols);
        return false;
    }
    char src[64 + 4096];
    snprintf(src, sizeof src, "the config of checkpoint %.4000s", ckpt);
    if (tg_tl_model_build(CMD, m, E->model, E->cfg, src, td->d->cols, E->batch, NULL) ||
        (features == TG_TL_MS && tg_tl_model_target(CMD, m, td->target)))
        return false;
    if (tg_checkpoint_restore_params(&E->ck, m->ps)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        return false;
    }
    /* the scaler the model was trained with, whatever the data */
    return !tg_tl_data_prepare(CMD, td, &E->split, m->seq_len, m->pred_len, E->ck.scaler);
}

/* The forecasts [test windows, pred_len, channels] to --predictions, in scaled
 * units or (--inverse) the data's. */
static bool write_predictions(eval_run *E)
{
    const tg_tl_data *td = &E->td;
    const tg_tl_model *m = &E->m;
    const float *pred = E->pred;
    tg_tensor *out = E->out =
        tg_tensor_new(TG_F32, 3, (int64_t[]){td->test.count, m->pred_len, m->cols});
    if (!out) {
        tg_cli_fail(CMD, "%s", tg_last_error());
        return false;
    }
    float *o = out->data;
    for (int64_t i = 0; i < out->numel; i++) {
        int64_t c = i % m->cols;
        o[i] = E->inverse ? (float)(pred[i] * td->scaler->std[c] + td->scaler->mean[c]) : pred[i];
    }
    if (tg_npy_save(E->preds, out)) {
        tg_cli_fail(CMD, "--predictions %s", tg_last_error());
        return false;
    }
    return true;
}

/* The report: what was tested, where the forecasts went, the metrics and baselines. */
static bool report(eval_run *E)
{
    const char *preds = E->preds;
    const tg_tl_data *td = &E->td;
    const tg_tl_model *m = &E->m;
    double rl, tm;
    if (tg_tl_baselines(CMD, td, &rl, &tm)) return false;
    char sp[64];
    tg_split_format(&E->split, sp, sizeof sp);
    /* with --predictions - the forecasts are stdout: the report goes to stderr */
    FILE *rep = preds && !strcmp(preds, "-") ? stderr : stdout;
    fprintf(rep, "%s (epoch %lld of its run) on %s, split %s: %lld test windows\n", E->model,
           (long long)E->ck.epoch, td->d->source, sp, (long long)td->test.count);
    if (preds)
        fprintf(rep, "forecasts [%lld, %lld, %lld] (%s units) -> %s\n", (long long)td->test.count,
               (long long)m->pred_len, (long long)m->cols, E->inverse ? "data" : "scaled", preds);
    tg_tl_print_result(rep, &E->test, rl, tm);
    return true;
}

/* Every test window through the model (0), 1 if evaluation failed, 2 otherwise. */
static int evaluate(eval_run *E)
{
    int64_t per = E->m.pred_len * E->m.cols;
    if (E->preds && !(E->pred = malloc(sizeof *E->pred * (size_t)(E->td.test.count * per)))) {
        tg_cli_fail(CMD, "out of memory");
        return 2;
    }
    if (tg_tl_evaluate(CMD, "evaluation", &E->m, &E->td.test, &E->test, E->pred)) return 1;
    if (E->preds && !write_predictions(E)) return 2;
    return report(E) ? 0 : 2;
}

static int run(int argc, char **argv)
{
    eval_run E = {0};
    tg_checkpoint_init(&E.ck);
    if (!(E.cfg = tg_config_new())) return tg_cli_fail(CMD, "out of memory");
    int rc = parse_args(&E, argc, argv);
    if (!rc) rc = read_checkpoint(&E) && load_model(&E) ? evaluate(&E) : 2;
    tg_tensor_free(E.out);
    free(E.pred);
    tg_tl_model_free(&E.m);
    tg_tl_data_free(&E.td);
    tg_checkpoint_clear(&E.ck);
    tg_config_free(E.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_eval = {
    .name = "eval",
    .summary = "test a checkpoint of tgraph train; optionally write its forecasts as .npy",
    .help =
        "usage: tgraph eval --checkpoint FILE [--data FILE.csv] [--split A,B,C]\n"
        "                   [--predictions FILE.npy [--inverse]] [--threads N]\n\n"
        "Rebuilds the model a checkpoint of `tgraph train` was trained with (model,\n"
        "config, batch size from its metadata), loads its weights and prints the test\n"
        "MSE and MAE over every test window, in the units of the training run's\n"
        "StandardScaler, next to the repeat-last and train-mean baselines, on the same\n"
        "one line as tgraph train:\n"
        "  test mse=0.3150 mae=0.3720 | repeat-last mse=1.2220 | train-mean mse=1.1100\n\n"
        "  --data, --split   other data or another split (default: the run's); the\n"
        "                    scaler stays the one fitted on the run's training rows\n"
        "  --predictions     write the forecasts [test windows, pred_len, channels],\n"
        "                    float32, in scaled units (--inverse: in the data's units);\n"
        "                    - writes them to stdout (and the report to stderr)\n\n"
        "examples:\n"
        "  tgraph eval --checkpoint runs/train/best.safetensors\n"
        "  tgraph eval --checkpoint runs/etth1/best.safetensors --predictions pred.npy\n",
    .run = run,
};
