/*
 * train_opts.c - the command line of `tgraph train` on series: the options'
 * table (the rows --help and the man page print, with those of --text, which
 * train_text.c parses with a table of its own) and the parsing of the
 * arguments into the job's settings and model config, --threads applied.
 *
 * Not here: the defaults a run gets for what the command line leaves out and
 * the settings of a resumed run (train_settings.c), the usage and examples
 * around the table (tg_cmd_train in cmd_train.c).
 */
#include <stdint.h>
#include <string.h>

#include "args.h"
#include "layer_cli.h"
#include "train_job.h"
#include "train_opts.h"

#define CMD "train"

/* ---- the table ---- */

/* The rows --help prints in this order (train_opts.h names them). */
const tg_opt tg_train_opts[TG_TRAIN_OPTS_N] = {
    [TG_TRAIN_O_DATA] = {"--data", NULL, "FILE.csv",
        "a header row, an optional date column (read: predict continues it), numeric "
        "columns (the ETT layout). Default: the built-in series (4000 hourly steps, 7 "
        "coupled channels, daily and weekly cycles)"},
    [TG_TRAIN_O_SPLIT] = {"--split", NULL, "A,B,C",
        "train, validation, test rows (8640,2880,2880: the ETT protocol) or ratios "
        "(default 0.7,0.1,0.2); validation and test windows start seq_len rows early"},
    [TG_TRAIN_O_MODEL] = {"--model", NULL, "NAME",
        "default crossformer (linear_forecast if it is not built in); enc_in (or N) "
        "and B come from the data and --batch-size, and a model with an x_mark input "
        "(itransformer) gets TSL's timeF features of the data's dates (n_mark: 4 for "
        "hourly data, 0 without a date column)"},
    [TG_TRAIN_O_SET] = {"--set", NULL, "KEY=VALUE",
        "a model config key (crossformer: seq_len pred_len seg_len win_size factor "
        "d_model d_ff n_heads e_layers dropout), over the defaults key by key. With "
        "--data: a small real config (crossformer: seq_len 96, pred_len 24, seg_len 12, "
        "d_model 64, n_heads 4, e_layers 2, factor 3, d_ff 128, dropout 0.2; "
        "linear_forecast: seq_len 96, pred_len 24; other models: their own). On the "
        "built-in data a smaller one (crossformer: seq_len 96, pred_len 24, d_model 32, "
        "n_heads 2, d_ff 64, e_layers 2, factor 3, dropout 0.1)"},
    [TG_TRAIN_O_FEATURES] = {"--features", NULL, "M|S|MS",
        "as TSL's run.py: M (default) every column in and out; S the target column "
        "only; MS every column in, the loss and metrics on the target's forecast"},
    [TG_TRAIN_O_TARGET] = {"--target", NULL, "COL",
        "the target column (default OT when there is one, else the last)"},
    [TG_TRAIN_O_FREQ] = {"--freq", NULL, "FREQ",
        "the time features' frequency, as TSL's run.py --freq (default h: HourOfDay, "
        "DayOfWeek, DayOfMonth, DayOfYear; t or 15min adds MinuteOfHour, s SecondOfMinute, "
        "d and b three, w two, m one); for a model with an x_mark input (itransformer)"},
    [TG_TRAIN_O_EPOCHS] = {"--epochs", NULL, "N",
        "default 10 (20 for a model without defaults); "
        "built-in data: 8 (crossformer), 10 (linear)"},
    [TG_TRAIN_O_BATCH] = {"--batch-size", NULL, "N",
        "default 32 (a last partial training batch is dropped; every validation and "
        "test window counts once)"},
    [TG_TRAIN_O_LR] = {"--lr", NULL, "F",
        "the optimizer's lr, default 1e-3 (1e-4 for a model without "
        "defaults); built-in data: 5e-3, 1e-2 (linear)"},
    [TG_TRAIN_O_LRADJ] = {"--lradj", NULL, "S",
        "type1 (default; halve each epoch), crossformer (Crossformer's code: halve "
        "after epochs 2, 4, 6, 8, 10), constant, or cosine (one epoch of warmup, then "
        "cosine decay to 0)"},
    [TG_TRAIN_O_PATIENCE] = {"--patience", NULL, "N", "default 3; 0: no early stopping"},
    [TG_TRAIN_O_SEED] = {"--seed", NULL, "N",
        "default 0 (init, batch order, dropout): the same seed and "
        "--threads give bit-identical runs"},
    [TG_TRAIN_O_THREADS] = {"--threads", NULL, "N", "default: every core"},
    [TG_TRAIN_O_RECOMPUTE] = {"--recompute", NULL, NULL,
        "recompute linear layers' outputs in backward instead of keeping them from "
        "the forward: less memory, one more GEMM per such layer and step; "
        "bit-identical results"},
    [TG_TRAIN_O_OUT_DIR] = {"--out-dir", "--out -o", "DIR",
        "default runs/train (on --resume: the file's dir), created if missing: "
        "checkpoint.safetensors (last epoch), best.safetensors, metrics.csv (epoch, "
        "step, train_loss, val_mse, lr, seconds), loss.svg, model.dot (+ .svg if "
        "Graphviz is installed). A DIR that holds a run already is refused: continue "
        "it with --resume DIR/checkpoint.safetensors"},
    [TG_TRAIN_O_OVERWRITE] = {"--overwrite", NULL, NULL,
        "replace the run found in --out-dir (its files are kept as NAME.previous until "
        "this run writes its first checkpoint, and put back if it ends before one)"},
    [TG_TRAIN_O_RESUME] = {"--resume", NULL, "FILE",
        "continue a run exactly (the losses of an uninterrupted run); only --epochs "
        "--patience --lr --clip --data --out-dir --threads may change (--max-steps, "
        "--progress-every and --quiet are this invocation's). Another --out-dir gets "
        "the run's best weights too; one holding another run is refused"},
    [TG_TRAIN_O_ALLOW_DATA] = {"--allow-data-change", NULL, NULL,
        "on --resume, train on a --data file other than the run's (the "
        "checkpoint records its absolute path, size and FNV-1a hash; other bytes "
        "are refused): the run's scaler is kept and the best epoch is chosen "
        "again on the new validation rows"},
    [TG_TRAIN_O_OPTIM] = {"--optim", NULL, "adam|adamw|sgd", "the optimizer, default adam"},
    [TG_TRAIN_O_WD] = {"--weight-decay", NULL, "F", "weight decay, default 0"},
    [TG_TRAIN_O_CLIP] = {"--clip", NULL, "F", "clip the gradient norm (default: off)"},
    [TG_TRAIN_O_MAX_STEPS] = {"--max-steps", NULL, "N",
        "stop after N optimizer steps of the run (a smoke test, a time budget): "
        "the checkpoint is written there, even in mid-epoch, and the best complete "
        "epoch's weights are tested (before any, the weights as they are). "
        "--resume with a larger --max-steps (or none) continues exactly: the bits "
        "of one straight run. The schedule still spans --epochs"},
    [TG_TRAIN_O_PROGRESS_EVERY] = {"--progress-every", NULL, "SECONDS",
        "the steps inside an epoch on stderr: on a terminal a live line "
        "(step/total, running loss, steps/s, ETA of the epoch and of the "
        "run); on a pipe or file one plain line every SECONDS (default 5; 0: "
        "every step), flushed:\n"
        "progress: epoch E/N step K/S (run STEP/TOTAL)  loss L  R steps/s  "
        "ETA epoch M:SS, run M:SS\n"
        "Given on a terminal, plain lines are written there too"},
    [TG_TRAIN_O_QUIET] = {"--quiet", "-q", NULL,
        "no progress on stderr (the epoch lines on stdout stay)"},
    [TG_TRAIN_O_TEXT] = {"--text", NULL, "FILE",
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
    [TG_TRAIN_O_MIN_LR] = {"--min-lr", NULL, "F",
        "--text: the rate the cosine decays to (default 1e-4)"},
    [TG_TRAIN_O_WARMUP] = {"--warmup", NULL, "N",
        "--text: linear warmup steps, lr * (step + 1) / (N + 1) (default 100)"},
    [TG_TRAIN_O_DECAY] = {"--lr-decay-iters", NULL, "N",
        "--text: the step where the cosine reaches --min-lr (default --max-steps)"},
    [TG_TRAIN_O_BETA1] = {"--beta1", NULL, "F", "--text: AdamW's beta1 (default 0.9)"},
    [TG_TRAIN_O_BETA2] = {"--beta2", NULL, "F", "--text: AdamW's beta2 (default 0.99)"},
    [TG_TRAIN_O_EVAL_INTERVAL] = {"--eval-interval", NULL, "N",
        "--text: evaluate every N steps (default 250): the mean loss of "
        "--eval-iters random batches of each split, dropout off; printed "
        "(\"step N: train loss A, val loss B\"), a row of metrics.csv (step, "
        "train_loss, val_loss, lr), best.safetensors when the validation loss "
        "is the best so far, and checkpoint.safetensors"},
    [TG_TRAIN_O_EVAL_ITERS] = {"--eval-iters", NULL, "N",
        "--text: batches per split and evaluation "
        "(default 200)"},
};

/* ---- reading the arguments ---- */

const char *const tg_train_opts_optim_names[TG_OPTIM_KIND_COUNT] = {"sgd", "adam", "adamw"};

int tg_train_opts_parse_optim(const char *s, tg_optim_kind *out)
{
    for (int i = 0; i < TG_OPTIM_KIND_COUNT; i++)
        if (!strcmp(s, tg_train_opts_optim_names[i])) {
            *out = (tg_optim_kind)i;
            return 0;
        }
    return tg_cli_fail(CMD, "--optim wants sgd, adam or adamw, got '%s'", s);
}

/* A data or model option (--data --split --target --features --model --set)
 * into j->s or j->cfg: 0, the exit status, or -1 when a->opt is none of them. */
static int parse_data_option(job *j, tg_args *a)
{
    settings *s = &j->s;
    const char *v;
#define VALUE(p) if (!tg_args_value(a, p)) return 2
    if (a->opt == TG_TRAIN_O_DATA) {
        VALUE(&s->data);
        s->set_data = true;
    } else if (a->opt == TG_TRAIN_O_SPLIT) {
        VALUE(&v);
        if (tg_split_parse(v, &s->split)) return tg_cli_fail(CMD, "--split %s", tg_last_error());
        s->set_split = true;
    } else if (a->opt == TG_TRAIN_O_TARGET) {
        VALUE(&s->target);
    } else if (a->opt == TG_TRAIN_O_FREQ) {
        tg_time_feature f[TG_TIME_FEATURES_MAX];
        int n;
        VALUE(&s->freq);
        if (tg_time_features_for(s->freq, f, &n))
            return tg_cli_fail(CMD, "--freq: %s", tg_last_error());
        s->set_freq = true;
    } else if (a->opt == TG_TRAIN_O_FEATURES) {
        VALUE(&v);
        if (tg_tl_features_parse(CMD, v, &s->features)) return 2;
    } else if (a->opt == TG_TRAIN_O_MODEL) {
        VALUE(&s->model);
        s->set_model = true;
    } else if (a->opt == TG_TRAIN_O_SET) {
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
    if (a->opt == TG_TRAIN_O_EPOCHS) {
        if (!tg_args_int(a, 1, 100000, &s->epochs)) return 2;
        s->set_epochs = true;
    } else if (a->opt == TG_TRAIN_O_BATCH) {
        if (!tg_args_int(a, 1, 4096, &s->batch)) return 2;
        s->set_batch = true;
    } else if (a->opt == TG_TRAIN_O_LR) {
        if (!tg_args_double(a, 1e-300, 1e300, &s->lr)) return 2;
        s->set_lr = true;
    } else if (a->opt == TG_TRAIN_O_LRADJ) {
        VALUE(&v);
        if (tg_lr_schedule_parse(v, &s->lradj))
            return tg_cli_fail(CMD, "--lradj %s", tg_last_error());
        s->set_lradj = true;
    } else if (a->opt == TG_TRAIN_O_OPTIM) {
        VALUE(&v);
        if (tg_train_opts_parse_optim(v, &s->optim)) return 2;
        s->set_optim = true;
    } else if (a->opt == TG_TRAIN_O_WD) {
        if (!tg_args_double(a, 0, 1e6, &s->weight_decay)) return 2;
        s->set_wd = true;
    } else if (a->opt == TG_TRAIN_O_CLIP) {
        if (!tg_args_double(a, 0, 1e300, &s->clip)) return 2;
        s->set_clip = true;
    } else if (a->opt == TG_TRAIN_O_PATIENCE) {
        if (!tg_args_int(a, 0, 100000, &s->patience)) return 2;
        s->set_patience = true;
    } else if (a->opt == TG_TRAIN_O_SEED) {
        if (!tg_args_int(a, 0, INT64_MAX, &s->seed)) return 2;
        s->set_seed = true;
    } else if (a->opt == TG_TRAIN_O_THREADS) {
        if (!tg_args_int(a, 0, TG_MAX_THREADS, &s->threads)) return 2;
        s->set_threads = true;
    } else if (a->opt == TG_TRAIN_O_MAX_STEPS) {
        if (!tg_args_int(a, 1, INT64_MAX, &s->max_steps)) return 2;
    } else if (a->opt == TG_TRAIN_O_PROGRESS_EVERY) {
        if (!tg_args_double(a, 0, 1e9, &s->progress_every)) return 2;
        s->set_progress_every = true;
    } else if (a->opt == TG_TRAIN_O_QUIET) {
        s->quiet = true;
    } else if (a->opt == TG_TRAIN_O_RECOMPUTE) {
        s->recompute = true;
    } else if (a->opt == TG_TRAIN_O_OVERWRITE) {
        s->overwrite = true;
    } else if (a->opt == TG_TRAIN_O_ALLOW_DATA) {
        s->allow_data_change = true;
    } else if (a->opt == TG_TRAIN_O_OUT_DIR) {
        VALUE(&s->out);
        s->set_out = true;
    } else if (a->opt == TG_TRAIN_O_RESUME) {
        VALUE(&s->resume);
    } else {
        return tg_cli_unknown(a, arg);
    }
#undef VALUE
    return 0;
}

/* The arguments in turn; then what only the whole command line can tell. */
int tg_train_opts_parse(job *j, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    tg_args_table(&a, tg_train_opts, TG_OPTS_N(tg_train_opts));
    const char *arg;
    int rc;
    while ((arg = tg_args_next(&a)))
        if (a.opt >= TG_TRAIN_O_TEXT)
            return tg_cli_fail(CMD, "%s applies to training on text (--text FILE)", arg);
        else if ((rc = parse_option(j, &a, arg))) return rc;
    if (j->s.allow_data_change && !j->s.resume)
        return tg_cli_fail(CMD, "--allow-data-change only applies with --resume (a new run fits "
                           "its scaler on the data it is given)");
    if (j->s.threads && tg_threads_set((int)j->s.threads))
        return tg_cli_fail(CMD, "--threads %s", tg_last_error());
    return 0;
}

