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

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    const char *ckpt = NULL, *data = NULL, *preds = NULL, *arg, *v;
    bool inverse = false, set_split = false;
    int64_t threads = 0;
    tg_split_spec split;
    tg_config *cfg = tg_config_new();
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    tg_tl_data td = {0};
    tg_tl_model m = {0};
    float *pred = NULL;
    tg_tensor *out = NULL;
    int rc = 2;
    if (!cfg) return tg_cli_fail(CMD, "out of memory");
    while ((arg = tg_args_next(&a))) {
        if (!strcmp(arg, "--checkpoint")) {
            if (!tg_args_value(&a, &ckpt)) goto done;
        } else if (!strcmp(arg, "--data")) {
            if (!tg_args_value(&a, &data)) goto done;
        } else if (!strcmp(arg, "--split")) {
            if (!tg_args_value(&a, &v)) goto done;
            if (tg_split_parse(v, &split)) {
                tg_cli_fail(CMD, "--split %s", tg_last_error());
                goto done;
            }
            set_split = true;
        } else if (!strcmp(arg, "--predictions")) {
            if (!tg_args_value(&a, &preds)) goto done;
        } else if (!strcmp(arg, "--inverse")) {
            inverse = true;
        } else if (!strcmp(arg, "--threads")) {
            if (!tg_args_int(&a, 0, TG_MAX_THREADS, &threads)) goto done;
        } else {
            rc = tg_cli_unknown(&a, arg);
            goto done;
        }
    }
    if (!ckpt) {
        tg_cli_fail(CMD, "missing --checkpoint FILE.safetensors (written by tgraph train)");
        goto done;
    }
    const tg_cli_file in[] = {{"--checkpoint", ckpt}, {"--data", data}};
    const tg_cli_file out_file = {"--predictions", preds};
    if (tg_cli_check_outputs(CMD, in, 2, &out_file, 1)) goto done;
    if (threads && tg_threads_set((int)threads)) {
        tg_cli_fail(CMD, "--threads %s", tg_last_error());
        goto done;
    }
    if (tg_checkpoint_read(ckpt, &ck)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        goto done;
    }
    const char *model = tg_checkpoint_meta(&ck, "model"), *config = tg_checkpoint_meta(&ck, "config");
    const char *cdata = tg_checkpoint_meta(&ck, "data"), *csplit = tg_checkpoint_meta(&ck, "split");
    int64_t batch = 0;
    if (!model || !config || !cdata || !csplit || !tg_checkpoint_meta(&ck, "batch_size") ||
        !ck.scaler) {
        tg_cli_fail(CMD, "--checkpoint %s: not a checkpoint of tgraph train (metadata lacks the "
                    "model, its config, the data, the split or the scaler)", ckpt);
        goto done;
    }
    if (tg_checkpoint_meta_int(&ck, "batch_size", 1, 4096, &batch)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        goto done;
    }
    if (!data && strcmp(cdata, TG_BUILTIN_DATA) && access(cdata, R_OK) != 0) {
        tg_cli_fail(CMD, "the run's data %s (stored in %s) cannot be read: %s; give its new "
                    "place with --data FILE.csv", cdata, ckpt, strerror(errno));
        goto done;
    }
    /* the data is the checkpoint's unless --data says otherwise */
    const tg_cli_file cdata_file = {"(the checkpoint's data)", data ? NULL : cdata};
    if (tg_cli_check_outputs(CMD, &cdata_file, 1, &out_file, 1)) goto done;
    if (!set_split && tg_split_parse(csplit, &split)) {
        tg_cli_fail(CMD, "--checkpoint %s: %s", ckpt, tg_last_error());
        goto done;
    }
    if (tg_tl_config_parse(CMD, config, cfg) || tg_tl_data_load(CMD, data ? data : cdata, &td))
        goto done;
    if (td.d->cols != ck.scaler->cols) {
        tg_cli_fail(CMD, "--data %s has %lld columns; the model was trained on %lld",
                    td.d->source, (long long)td.d->cols, (long long)ck.scaler->cols);
        goto done;
    }
    char src[64 + 4096];
    snprintf(src, sizeof src, "the config of checkpoint %.4000s", ckpt);
    if (tg_tl_model_build(CMD, &m, model, cfg, src, td.d->cols, batch, NULL)) goto done;
    if (tg_checkpoint_restore_params(&ck, m.ps)) {
        tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
        goto done;
    }
    /* the scaler the model was trained with, whatever the data */
    if (tg_tl_data_prepare(CMD, &td, &split, m.seq_len, m.pred_len, ck.scaler)) goto done;
    int64_t per = m.pred_len * m.cols;
    if (preds && !(pred = malloc(sizeof *pred * (size_t)(td.test.count * per)))) {
        tg_cli_fail(CMD, "out of memory");
        goto done;
    }
    tg_tl_metrics test;
    if (tg_tl_evaluate(CMD, "evaluation", &m, &td.test, &test, pred)) {
        rc = 1;
        goto done;
    }
    if (preds) {
        out = tg_tensor_new(TG_F32, 3, (int64_t[]){td.test.count, m.pred_len, m.cols});
        if (!out) {
            tg_cli_fail(CMD, "%s", tg_last_error());
            goto done;
        }
        float *o = out->data;
        for (int64_t i = 0; i < out->numel; i++) {
            int64_t c = i % m.cols;
            o[i] = inverse ? (float)(pred[i] * td.scaler->std[c] + td.scaler->mean[c]) : pred[i];
        }
        if (tg_npy_save(preds, out)) {
            tg_cli_fail(CMD, "--predictions %s", tg_last_error());
            goto done;
        }
    }
    double rl, tm;
    if (tg_tl_baselines(CMD, &td, &rl, &tm)) goto done;
    char sp[64];
    tg_split_format(&split, sp, sizeof sp);
    /* with --predictions - the forecasts are stdout: the report goes to stderr */
    FILE *rep = preds && !strcmp(preds, "-") ? stderr : stdout;
    fprintf(rep, "%s (epoch %lld of its run) on %s, split %s: %lld test windows\n", model,
           (long long)ck.epoch, td.d->source, sp, (long long)td.test.count);
    if (preds)
        fprintf(rep, "forecasts [%lld, %lld, %lld] (%s units) -> %s\n", (long long)td.test.count,
               (long long)m.pred_len, (long long)m.cols, inverse ? "data" : "scaled", preds);
    tg_tl_print_result(rep, &test, rl, tm);
    rc = 0;
done:
    tg_tensor_free(out);
    free(pred);
    tg_tl_model_free(&m);
    tg_tl_data_free(&td);
    tg_checkpoint_clear(&ck);
    tg_config_free(cfg);
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
