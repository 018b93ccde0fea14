/*
 * train_text.c - `tgraph train --text FILE.txt`: a character-level GPT (the
 * gpt layer, or any layer taking idx [B, T] int64 to logits [B, T, vocab])
 * trained with nanoGPT's protocol (train.py with
 * config/train_shakespeare_char.py) through the library's trainer:
 *
 *   - the text data set of engine/train/text.h (sorted character
 *     vocabulary, first 90% train, random windows of block_size + 1);
 *   - the loss: mean cross-entropy of the logits against the next character;
 *   - AdamW, weight decay on the parameters of rank >= 2 only, betas, eps
 *     1e-8, gradient clipping; get_lr (linear warmup, cosine to min_lr over
 *     lr_decay_iters);
 *   - every eval_interval steps (and at step 0) estimate_loss: the mean loss
 *     over eval_iters random batches of each split with dropout off, printed
 *     "step N: train loss A, val loss B" and a row of metrics.csv (step,
 *     train_loss, val_loss, lr); best.safetensors when the validation loss
 *     is the best so far, step 0's included (the initial weights, until an
 *     evaluation beats them); an absurd validation loss (1000 times that of
 *     guessing uniformly) or a non-finite one stops the run (exit 1);
 *     checkpoint.safetensors after each evaluation (and at --max-steps)
 *     resumes exactly; loss.svg draws the two curves.
 *
 * An "epoch" of the trainer is one eval interval. The evaluation batches
 * come from an RNG seeded by (seed, step), so they neither disturb the
 * training batches nor depend on where a run was resumed.
 *
 * The checkpoint's metadata: model, config (every key), text (absolute
 * path), data.size, data.fnv1a64, text.vocab (code points), the settings,
 * and text.evals (the metrics rows). `tgraph sample` reads model, config
 * and text.vocab.
 *
 * Not here: the model (layers/), the loop (engine/train/trainer.c), the run
 * directory's safety (run_dir.c).
 */
#include <errno.h>
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
#include "text.h"
#include "train_loop.h"
#include "train_text.h"

#define CMD "train"

typedef struct text_settings {
    const char *text, *model, *out, *resume;
    int64_t batch, max_steps, warmup, decay_iters, eval_interval, eval_iters, seed, threads;
    double  lr, min_lr, wd, beta1, beta2, clip, progress_every;
    bool    overwrite, quiet;
    /* given on the command line */
    bool set_text, set_out, set_max_steps, set_decay, set_threads;
    const char *fixed;   /* the first option a resumed run may not change, or NULL */
} text_settings;

/* nanoGPT's config/train_shakespeare_char.py, under the user's --set. */
static const char *const model_defaults[] = {"n_layer=6", "n_head=6", "n_embd=384",
                                             "block_size=256", "dropout=0.2", "bias=false", NULL};

enum { O_TEXT, O_MODEL, O_SET, O_BATCH, O_MAX_STEPS, O_LR, O_MIN_LR, O_WARMUP, O_DECAY, O_WD,
       O_BETA1, O_BETA2, O_CLIP, O_EVAL_INTERVAL, O_EVAL_ITERS, O_SEED, O_THREADS, O_OUT_DIR,
       O_OVERWRITE, O_RESUME, O_PROGRESS_EVERY, O_QUIET };
/* The parser's table (names only: `tgraph train --help` documents them). */
static const tg_opt opts[] = {
    [O_TEXT] = {"--text", NULL, "FILE", NULL},
    [O_MODEL] = {"--model", NULL, "NAME", NULL},
    [O_SET] = {"--set", NULL, "KEY=VALUE", NULL},
    [O_BATCH] = {"--batch-size", NULL, "N", NULL},
    [O_MAX_STEPS] = {"--max-steps", NULL, "N", NULL},
    [O_LR] = {"--lr", NULL, "F", NULL},
    [O_MIN_LR] = {"--min-lr", NULL, "F", NULL},
    [O_WARMUP] = {"--warmup", NULL, "N", NULL},
    [O_DECAY] = {"--lr-decay-iters", NULL, "N", NULL},
    [O_WD] = {"--weight-decay", NULL, "F", NULL},
    [O_BETA1] = {"--beta1", NULL, "F", NULL},
    [O_BETA2] = {"--beta2", NULL, "F", NULL},
    [O_CLIP] = {"--clip", NULL, "F", NULL},
    [O_EVAL_INTERVAL] = {"--eval-interval", NULL, "N", NULL},
    [O_EVAL_ITERS] = {"--eval-iters", NULL, "N", NULL},
    [O_SEED] = {"--seed", NULL, "N", NULL},
    [O_THREADS] = {"--threads", NULL, "N", NULL},
    [O_OUT_DIR] = {"--out-dir", "--out -o", "DIR", NULL},
    [O_OVERWRITE] = {"--overwrite", NULL, NULL, NULL},
    [O_RESUME] = {"--resume", NULL, "FILE", NULL},
    [O_PROGRESS_EVERY] = {"--progress-every", NULL, "SECONDS", NULL},
    [O_QUIET] = {"--quiet", "-q", NULL, NULL},
};

/* ---- the run: everything one invocation holds ---- */

typedef struct text_job {
    text_settings s;
    tg_config    *cfg;
    tg_checkpoint resume_ck;
    tg_text       text;
    tg_file_id    id;
    tg_params    *ps;
    tg_layer     *layer;
    int64_t       B, T, V;
    tg_graph     *gt, *ge;               /* training; evaluation (forward only, no dropout) */
    tg_node      *idx, *tgt, *loss;      /* gt: idx, targets [B, T] int64 -> loss */
    tg_node      *eidx, *etgt, *eloss;   /* ge: the same */
    tg_optim     *opt;
    tg_trainer    tr;
    tg_tl_files   rf;
    char         *evals;                 /* metrics.csv's rows, "step,train,val,lr\n" each */
    const char   *last_ckpt;             /* the last complete checkpoint; NULL: none */
    bool          continuing;
    double        t_line, t_start;
    int64_t       steps_at_start;
} text_job;

static void job_free(text_job *j)
{
    tg_rd_release();
    tg_rd_signals_restore();
    tg_trainer_clear(&j->tr);
    tg_optim_free(j->opt);
    tg_graph_free(j->gt);
    tg_graph_free(j->ge);
    tg_layer_free(j->layer);
    tg_params_free(j->ps);
    tg_text_clear(&j->text);
    tg_file_id_clear(&j->id);
    tg_tl_files_free(&j->rf);
    tg_checkpoint_clear(&j->resume_ck);
    tg_config_free(j->cfg);
    free(j->evals);
}

/* ---- the command line ---- */

bool tg_train_text_wanted(int argc, char **argv)
{
    const char *resume = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--text") || !strncmp(argv[i], "--text=", 7)) return true;
        if (!strcmp(argv[i], "--resume") && i + 1 < argc) resume = argv[i + 1];
        else if (!strncmp(argv[i], "--resume=", 9)) resume = argv[i] + 9;
    }
    if (!resume) return false;
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    bool text = !tg_checkpoint_read(resume, &ck) && tg_checkpoint_meta(&ck, TG_TEXT_META_VOCAB);
    tg_checkpoint_clear(&ck);
    return text;
}

/* A numeric option: 0, or 2 after the message. A resumed run may change
 * only some (s->fixed records the first other one). */
static int parse_number(text_settings *s, tg_args *a, const char *arg)
{
    bool ok = true, fixed = true;
    switch (a->opt) {
    case O_BATCH: ok = tg_args_int(a, 1, 1 << 20, &s->batch); break;
    case O_MAX_STEPS: ok = tg_args_int(a, 1, INT64_MAX / 2, &s->max_steps);
        s->set_max_steps = true, fixed = false; break;
    case O_LR: ok = tg_args_double(a, 1e-300, 1e300, &s->lr); break;
    case O_MIN_LR: ok = tg_args_double(a, 0, 1e300, &s->min_lr); break;
    case O_WARMUP: ok = tg_args_int(a, 0, INT64_MAX / 2, &s->warmup); break;
    case O_DECAY: ok = tg_args_int(a, 1, INT64_MAX / 2, &s->decay_iters);
        s->set_decay = true; break;
    case O_WD: ok = tg_args_double(a, 0, 1e6, &s->wd); break;
    case O_BETA1: ok = tg_args_double(a, 0, 0.999999999, &s->beta1); break;
    case O_BETA2: ok = tg_args_double(a, 0, 0.999999999, &s->beta2); break;
    case O_CLIP: ok = tg_args_double(a, 0, 1e300, &s->clip); break;
    case O_EVAL_INTERVAL: ok = tg_args_int(a, 1, INT64_MAX / 2, &s->eval_interval); break;
    case O_EVAL_ITERS: ok = tg_args_int(a, 1, 1 << 30, &s->eval_iters); break;
    case O_SEED: ok = tg_args_int(a, 0, INT64_MAX, &s->seed); break;
    case O_THREADS: ok = tg_args_int(a, 0, TG_MAX_THREADS, &s->threads);
        s->set_threads = true, fixed = false; break;
    case O_PROGRESS_EVERY: ok = tg_args_double(a, 0, 1e9, &s->progress_every);
        fixed = false; break;
    default: return -1;
    }
    if (fixed && !s->fixed) s->fixed = arg;
    return ok ? 0 : 2;
}

static int parse_option(text_job *j, tg_args *a, const char *arg)
{
    text_settings *s = &j->s;
    int r = parse_number(s, a, arg);
    if (r >= 0) return r;
    switch (a->opt) {
    case O_TEXT: if (!tg_args_value(a, &s->text)) return 2;
        s->set_text = true; break;
    case O_MODEL: if (!tg_args_value(a, &s->model)) return 2;
        if (!s->fixed) s->fixed = arg;
        break;
    case O_SET: if (tg_cli_set_args(a, CMD, j->cfg)) return 2;
        if (!s->fixed) s->fixed = arg;
        break;
    case O_OUT_DIR: if (!tg_args_value(a, &s->out)) return 2;
        s->set_out = true; break;
    case O_RESUME: if (!tg_args_value(a, &s->resume)) return 2;
        break;
    case O_OVERWRITE: s->overwrite = true; break;
    case O_QUIET: s->quiet = true; break;
    default:
        if (arg[0] == '-' && arg[1] == '-' && tg_opt_find(tg_cmd_train.opts, tg_cmd_train.n_opts,
                                                           arg) >= 0)
            return tg_cli_fail(CMD, "%s does not apply to training on text (--text); see "
                               "tgraph train --help", arg);
        return tg_cli_unknown(a, arg);
    }
    return 0;
}

static int parse_args(text_job *j, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    int rc;
    while ((arg = tg_args_next(&a)))
        if ((rc = parse_option(j, &a, arg))) return rc;
    if (!j->s.text && !j->s.resume)
        return tg_cli_fail(CMD, "--text FILE names the text to train on");
    if (j->s.threads && tg_threads_set((int)j->s.threads))
        return tg_cli_fail(CMD, "--threads %s", tg_last_error());
    return 0;
}

/* ---- the run's settings in its checkpoint ---- */

static int put_settings(text_job *j)
{
    const text_settings *s = &j->s;
    tg_checkpoint *ck = &j->tr.state;
    char buf[8192];
    char *vocab = tg_text_vocab_format(j->text.vocab, j->text.vocab_size);
    tg_status st = vocab ? tg_checkpoint_set_meta(ck, TG_TEXT_META_VOCAB, vocab) : TG_ERR_NOMEM;
    tg_free(vocab);
#define META(k, ...) \
    if (!st) { snprintf(buf, sizeof buf, __VA_ARGS__); st = tg_checkpoint_set_meta(ck, k, buf); }
    META("model", "%s", s->model);
    if (tg_tl_config_format(j->layer, buf, sizeof buf))
        return tg_cli_fail(CMD, "model config too long for a checkpoint");
    if (!st) st = tg_checkpoint_set_meta(ck, "config", buf);
    META("text", "%s", j->id.path ? j->id.path : s->text);
    META("data.size", "%llu", (unsigned long long)j->id.size);
    META("data.fnv1a64", "%016llx", (unsigned long long)j->id.hash);
    META("batch_size", "%lld", (long long)s->batch);
    META("seed", "%lld", (long long)s->seed);
    META("lr", "%.17g", s->lr);
    META("min_lr", "%.17g", s->min_lr);
    META("warmup", "%lld", (long long)s->warmup);
    META("lr_decay_iters", "%lld", (long long)s->decay_iters);
    META("weight_decay", "%.17g", s->wd);
    META("beta1", "%.17g", s->beta1);
    META("beta2", "%.17g", s->beta2);
    META("clip", "%.17g", s->clip);
    META("eval_interval", "%lld", (long long)s->eval_interval);
    META("eval_iters", "%lld", (long long)s->eval_iters);
    META("max_steps", "%lld", (long long)s->max_steps);
    META("text.evals", "%s", j->evals ? j->evals : "");
#undef META
    return st ? tg_cli_fail(CMD, "%s", tg_last_error()) : 0;
}

/* A resumed run's settings come from its checkpoint (--max-steps, --text
 * (the same bytes elsewhere), --out-dir, --threads and the progress options
 * may be given). */
static int get_settings(text_job *j)
{
    text_settings *s = &j->s;
    tg_checkpoint *ck = &j->resume_ck;
    if (tg_checkpoint_read(s->resume, ck)) return tg_cli_fail(CMD, "--resume %s", tg_last_error());
    if (s->fixed)
        return tg_cli_fail(CMD, "%s cannot be changed when resuming (the run's settings come "
                           "from %s; --max-steps, --text, --out-dir, --threads, --progress-every "
                           "and --quiet can)", s->fixed, s->resume);
    const char *model = tg_checkpoint_meta(ck, "model"), *config = tg_checkpoint_meta(ck, "config");
    const char *text = tg_checkpoint_meta(ck, "text");
    const char *evals = tg_checkpoint_meta(ck, "text.evals");
    if (!model || !config || !text || !tg_checkpoint_meta(ck, TG_TEXT_META_VOCAB))
        return tg_cli_fail(CMD, "--resume %s: not a checkpoint of tgraph train --text (its "
                           "metadata lacks the run's settings)", s->resume);
    s->model = model;
    if (tg_tl_config_parse(CMD, config, j->cfg)) return 2;
    if (!s->text) s->text = text;
    if (!(j->evals = strdup(evals ? evals : ""))) return tg_cli_fail(CMD, "out of memory");
    int64_t max_steps = s->max_steps;
    if (tg_checkpoint_meta_int(ck, "batch_size", 1, 1 << 20, &s->batch) ||
        tg_checkpoint_meta_int(ck, "seed", 0, INT64_MAX, &s->seed) ||
        tg_checkpoint_meta_num(ck, "lr", 1e-300, 1e300, &s->lr) ||
        tg_checkpoint_meta_num(ck, "min_lr", 0, 1e300, &s->min_lr) ||
        tg_checkpoint_meta_int(ck, "warmup", 0, INT64_MAX / 2, &s->warmup) ||
        tg_checkpoint_meta_int(ck, "lr_decay_iters", 1, INT64_MAX / 2, &s->decay_iters) ||
        tg_checkpoint_meta_num(ck, "weight_decay", 0, 1e6, &s->wd) ||
        tg_checkpoint_meta_num(ck, "beta1", 0, 1, &s->beta1) ||
        tg_checkpoint_meta_num(ck, "beta2", 0, 1, &s->beta2) ||
        tg_checkpoint_meta_num(ck, "clip", 0, 1e300, &s->clip) ||
        tg_checkpoint_meta_int(ck, "eval_interval", 1, INT64_MAX / 2, &s->eval_interval) ||
        tg_checkpoint_meta_int(ck, "eval_iters", 1, 1 << 30, &s->eval_iters) ||
        tg_checkpoint_meta_int(ck, "max_steps", 1, INT64_MAX / 2, &s->max_steps))
        return tg_cli_fail(CMD, "--resume %s", tg_last_error());
    /* the run's counters within its own max_steps (an epoch: an eval interval) */
    int64_t epochs = (s->max_steps + s->eval_interval - 1) / s->eval_interval;
    if (tg_resume_check_counters(CMD, ck, epochs, s->max_steps)) return 2;
    if (s->set_max_steps) s->max_steps = max_steps;
    char *dir = tg_tl_dirname(s->resume);
    if (!dir) return tg_cli_fail(CMD, "out of memory");
    j->continuing = !s->set_out || tg_rd_same_dir(dir, s->out);
    if (!s->set_out) s->out = s->resume;   /* replaced below by its directory */
    free(dir);
    return 0;
}

/* The text's bytes are those the run was trained on. */
static int check_resume_text(text_job *j)
{
    const tg_checkpoint *ck = &j->resume_ck;
    char size[32], hash[32];
    snprintf(size, sizeof size, "%llu", (unsigned long long)j->id.size);
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)j->id.hash);
    const char *os = tg_checkpoint_meta(ck, "data.size");
    const char *oh = tg_checkpoint_meta(ck, "data.fnv1a64");
    if (os && oh && j->id.regular && !strcmp(os, size) && !strcmp(oh, hash)) return 0;
    return tg_cli_fail(CMD, "--text %s (%s bytes, fnv1a64 %s) is not the text of the run in %s "
                       "(%s, %s bytes, fnv1a64 %s): its vocabulary and validation loss belong to "
                       "that text", j->s.text, size, hash, ck->path,
                       tg_checkpoint_meta(ck, "text"), os ? os : "?", oh ? oh : "?");
}

/* ---- the model ---- */

/* key=v into cfg, unless cfg has key already: then it must say v. */
static int force_key(tg_config *cfg, const char *key, int64_t v, const char *why)
{
    const tg_value *given = tg_config_get(cfg, key);
    if (given) {
        if (given->kind == TG_VALUE_INT && given->i == v) return 0;
        char buf[64];
        tg_value_format(given, buf, sizeof buf);
        return tg_cli_fail(CMD, "--set %s=%s conflicts with %s (%lld)", key, buf, why,
                           (long long)v);
    }
    char item[96];
    snprintf(item, sizeof item, "%s=%lld", key, (long long)v);
    return tg_config_set(cfg, item) ? tg_cli_fail(CMD, "%s", tg_last_error()) : 0;
}

/* The model's defaults (a new run) under the user's --set, and the keys
 * the data decides. */
static int model_config(text_job *j)
{
    tg_config *cfg = j->cfg;
    if (!j->s.resume)
        for (int i = 0; model_defaults[i]; i++) {
            char key[32];
            snprintf(key, sizeof key, "%.*s", (int)strcspn(model_defaults[i], "="),
                     model_defaults[i]);
            if (!tg_config_get(cfg, key) && tg_config_set(cfg, model_defaults[i]))
                return tg_cli_fail(CMD, "%s", tg_last_error());
        }
    int64_t block;
    if (tg_value_as_int(tg_config_get(cfg, "block_size"), "block_size", &block))
        return tg_cli_fail(CMD, "--set %s", tg_last_error());
    j->B = j->s.batch, j->T = block, j->V = j->text.vocab_size;
    if (force_key(cfg, "vocab_size", j->V, "the text's vocabulary") ||
        force_key(cfg, "B", j->B, "--batch-size") || force_key(cfg, "T", block, "block_size"))
        return 2;
    if (tg_text_check_block(&j->text, block)) return tg_cli_fail(CMD, "--text %s", tg_last_error());
    return 0;
}

/* One graph: idx, targets [B, T] int64 -> mean cross-entropy. */
static int build_graph(text_job *j, bool training, tg_graph **g, tg_node **idx, tg_node **tgt,
                       tg_node **loss)
{
    const int64_t shape[2] = {j->B, j->T};
    if (!(*g = tg_graph_new(TG_F32))) return tg_cli_fail(CMD, "%s", tg_last_error());
    tg_graph_set_training(*g, training);
    if (training) tg_graph_set_share_values(*g, true);
    else tg_graph_set_grad_enabled(*g, false);
    *idx = tg_input(*g, "idx", TG_I64, 2, shape);
    *tgt = tg_input(*g, "targets", TG_I64, 2, shape);
    tg_layer_outputs out;
    if (tg_layer_build(j->layer, *g, (tg_node *const[]){*idx}, &out))
        return tg_cli_fail(CMD, "--model %s: %s", j->s.model, tg_last_error());
    const tg_tensor *y = tg_node_value(out.y);
    if (y->rank != 3 || y->shape[0] != j->B || y->shape[1] != j->T || y->shape[2] != j->V)
        return tg_cli_fail(CMD, "--model %s: its output is not logits [B=%lld, T=%lld, "
                           "vocab_size=%lld]", j->s.model, (long long)j->B, (long long)j->T,
                           (long long)j->V);
    tg_node *logits = tg_reshape(*g, out.y, 2, (int64_t[]){j->B * j->T, j->V});
    tg_node *t = tg_reshape(*g, *tgt, 1, (int64_t[]){j->B * j->T});
    *loss = tg_cross_entropy(*g, logits, t, NULL, TG_CROSS_ENTROPY_IGNORE_INDEX,
                             TG_REDUCTION_MEAN, 0);
    if (tg_graph_error(*g)) return tg_cli_fail(CMD, "%s", tg_graph_error(*g));
    return 0;
}

/* Text, model, graphs, optimizer. */
static int build(text_job *j)
{
    const text_settings *s = &j->s;
    if (tg_file_id_of(s->text, &j->id)) return tg_cli_fail(CMD, "--text %s", tg_last_error());
    if (tg_text_load(s->text, &j->text)) return tg_cli_fail(CMD, "--text %s", tg_last_error());
    if (s->resume && check_resume_text(j)) return 2;
    if (model_config(j)) return 2;
    if (tg_cli_check_memory(CMD, s->model, j->cfg, TG_F32)) return 2;
    tg_rng init;
    tg_rng_seed(&init, (uint64_t)s->seed);
    if (!(j->ps = tg_params_new(TG_F32))) return tg_cli_fail(CMD, "%s", tg_last_error());
    if (!(j->layer = tg_layer_new(s->model, j->cfg, j->ps, "", s->resume ? NULL : &init)))
        return tg_cli_fail(CMD, "--model %s", tg_last_error());
    const tg_layer_input *in = tg_layer_input_count(j->layer) == 1 ? tg_layer_input_at(j->layer, 0)
                                                                   : NULL;
    if (!in || in->rank != 2 || in->shape[0] != j->B || in->shape[1] != j->T)
        return tg_cli_fail(CMD, "--model %s does not take one input idx [B, T] of character ids",
                           s->model);
    if (build_graph(j, true, &j->gt, &j->idx, &j->tgt, &j->loss) ||
        build_graph(j, false, &j->ge, &j->eidx, &j->etgt, &j->eloss))
        return 2;
    tg_optim_config oc = {.kind = TG_OPTIM_ADAMW, .lr = s->lr, .weight_decay = s->wd,
                          .beta1 = s->beta1, .beta2 = s->beta2, .eps = 1e-8};
    int decayed;
    if (!(j->opt = tg_optim_new(j->ps, &oc)) || tg_optim_decay_min_rank(j->opt, 2, &decayed))
        return tg_cli_fail(CMD, "%s", tg_last_error());
    return 0;
}

/* ---- the trainer's callbacks ---- */

static tg_status fill_batch(void *user, int64_t epoch, int64_t k, tg_rng *rng)
{
    text_job *j = user;
    (void)epoch, (void)k;
    return tg_text_batch(&j->text, TG_TEXT_TRAIN, rng, (tg_tensor *)tg_node_value(j->idx),
                         (tg_tensor *)tg_node_value(j->tgt));
}

/* nanoGPT's estimate_loss for one split after `step` steps: the mean loss
 * of eval_iters batches, from an RNG of (seed, step, split). */
static tg_status estimate(text_job *j, tg_text_split split, int64_t step, double *mean)
{
    tg_rng r;
    tg_rng_seed(&r, (uint64_t)j->s.seed ^ 0x65766131ull ^ (uint64_t)step << 20 ^
                        (uint64_t)split << 60);
    double sum = 0;
    for (int64_t k = 0; k < j->s.eval_iters; k++) {
        tg_status st = tg_text_batch(&j->text, split, &r, (tg_tensor *)tg_node_value(j->eidx),
                                     (tg_tensor *)tg_node_value(j->etgt));
        if (!st) st = tg_graph_forward(j->ge);
        if (st) return st;
        double l = tg_tensor_get(tg_node_value(j->eloss), 0);
        if (!isfinite(l)) return tg_trainer_diagnose(j->ge, l);
        sum += l;
    }
    *mean = sum / (double)j->s.eval_iters;
    return TG_OK;
}

/* Both splits at `step`: printed, and a metrics row. */
static tg_status evaluate(text_job *j, int64_t step, double lr, double *val)
{
    double train;
    tg_status st = estimate(j, TG_TEXT_TRAIN, step, &train);
    if (!st) st = estimate(j, TG_TEXT_VAL, step, val);
    if (st) {
        fprintf(stderr, "tgraph train: evaluation at step %lld: %s\n", (long long)step,
                tg_last_error());
        return st;
    }
    /* a thousand times the loss of guessing uniformly: the run diverged (or
     * the model is broken); stop instead of reporting it as a result */
    double uniform = log((double)j->V), absurd = 1e3 * (uniform > 1 ? uniform : 1);
    if (!(*val <= absurd)) {
        fprintf(stderr, "tgraph train: stopped at step %lld: the validation loss %.4g is absurd "
                "(nats per character, where guessing uniformly among the %lld characters scores "
                "%.4g): the run diverged; try a smaller --lr\n", (long long)step, *val,
                (long long)j->V, uniform);
        return tg_set_error(TG_ERR_NUMERIC, "validation loss %g at step %lld", *val,
                            (long long)step);
    }
    printf("step %lld: train loss %.4f, val loss %.4f\n", (long long)step, train, *val);
    fflush(stdout);
    char row[160];
    snprintf(row, sizeof row, "%lld,%.6f,%.6f,%.9g\n", (long long)step, train, *val, lr);
    size_t n = j->evals ? strlen(j->evals) : 0;
    char *e = realloc(j->evals, n + strlen(row) + 1);
    if (!e) return tg_set_error(TG_ERR_NOMEM, "out of memory");
    strcpy(e + n, row);
    j->evals = e;
    return tg_checkpoint_set_meta(&j->tr.state, "text.evals", e);
}

static tg_status validate(void *user, int64_t epoch, double *metric)
{
    text_job *j = user;
    (void)epoch;
    return evaluate(j, j->tr.state.step, tg_optim_lr(j->opt), metric);
}

static tg_status write_metrics(FILE *f, void *ctx)
{
    const text_job *j = ctx;
    fputs("step,train_loss,val_loss,lr\n", f);
    if (j->evals) fputs(j->evals, f);
    return ferror(f) ? tg_set_error(TG_ERR_IO, "writing metrics.csv") : TG_OK;
}

/* metrics.csv, and loss.svg: train and val loss against steps. */
static tg_status write_curves(text_job *j)
{
    if (tg_write_atomic(j->rf.csv, write_metrics, j)) return TG_ERR_IO;
    int n = 0;
    for (const char *c = j->evals; c && *c; c++) n += *c == '\n';
    double *x = malloc(sizeof *x * (size_t)(3 * n + 1)), *tr = x + n, *va = x + 2 * n;
    if (!x) return tg_set_error(TG_ERR_NOMEM, "out of memory");
    const char *c = j->evals;
    for (int i = 0; i < n; i++) {
        char *end;
        x[i] = strtod(c, &end);
        tr[i] = strtod(end + 1, &end);
        va[i] = strtod(end + 1, &end);
        c = strchr(end, '\n') + 1;
    }
    tg_series s[2] = {{"train", x, tr, n}, {"val", x, va, n}};
    tg_status st = tg_svg_lines(j->rf.svg, "training curves", "step", "loss (nats per character)",
                                s, 2);
    free(x);
    return st;
}

static tg_status on_progress(void *user, const tg_trainer_progress *p)
{
    text_job *j = user;
    double now = tg_tl_now();
    tg_rd_overwrite_commit();   /* the first checkpoint written: --overwrite's old files go */
    if (p->event == TG_TRAINER_EVENT_STEP) {
        if (j->s.quiet || now - j->t_line < j->s.progress_every) return TG_OK;
        j->t_line = now;
        double ms = p->call_steps > 0 ? 1e3 * p->call_seconds / (double)p->call_steps : 0;
        fprintf(stderr, "iter %lld/%lld: loss %.4f, lr %.3g, %.1f ms/step\n", (long long)p->step,
                (long long)p->total_steps, p->loss, p->lr, ms);
        fflush(stderr);
        return TG_OK;
    }
    if (p->event == TG_TRAINER_EVENT_EPOCH) j->last_ckpt = j->rf.ckpt;
    if (p->event == TG_TRAINER_EVENT_EPOCH && write_curves(j)) {
        fprintf(stderr, "tgraph train: %s\n", tg_last_error());
        return TG_ERR_IO;
    }
    return TG_OK;
}

/* ---- the steps of the command ---- */

/* The output directory: no run file is an input, and no other run is in it
 * (unless --overwrite). */
static int prepare_out_dir(text_job *j)
{
    text_settings *s = &j->s;
    char found[256];
    if (s->resume && !s->set_out) {
        char *dir = tg_tl_dirname(s->resume);
        int rc = dir ? tg_tl_files_init(CMD, &j->rf, dir) : tg_cli_fail(CMD, "out of memory");
        free(dir);
        if (rc) return rc;
        s->out = j->rf.dir;
    } else if (tg_tl_files_init(CMD, &j->rf, s->out)) {
        return 2;
    }
    /* the checkpoint continued in its own directory is read whole before */
    const tg_cli_file in[] = {{"--text", s->text}, {"--resume", j->continuing ? NULL : s->resume}};
    if (tg_tl_files_check(CMD, &j->rf, in, 2)) return 2;
    if (tg_rd_lock(s->out)) return 2;
    bool present = tg_rd_run_files_present(&j->rf, found, sizeof found);
    if (present && !j->continuing && !s->overwrite)
        return tg_cli_fail(CMD, "--out-dir %s already holds a run (%s): continue it with "
                           "--resume %s, or replace it with --overwrite", s->out, found,
                           j->rf.ckpt);
    if (tg_tl_mkdirs(CMD, s->out)) return 2;
    if (present && !j->continuing && tg_rd_remove_run_files(&j->rf)) return 2;
    tg_rd_remove_stale_temps(s->out);
    return 0;
}

/* The trainer over the model, then its state: fresh, or the resumed run's. */
static int setup_trainer(text_job *j)
{
    const text_settings *s = &j->s;
    tg_trainer *t = &j->tr;
    *t = (tg_trainer){.graph = j->gt, .loss = j->loss, .ps = j->ps, .optim = j->opt,
                      .schedule = TG_LR_WARMUP_COSINE, .lr = s->lr, .min_lr = s->min_lr,
                      .warmup = s->warmup, .decay_steps = s->decay_iters,
                      .epochs = (s->max_steps + s->eval_interval - 1) / s->eval_interval,
                      .steps_per_epoch = s->eval_interval, .clip = s->clip,
                      .best_path = j->rf.best, .last_path = j->rf.ckpt, .batch = fill_batch,
                      .validate = validate, .progress = on_progress, .user = j,
                      .stop = &tg_rd_stop_signal, .max_steps = s->max_steps};
    tg_checkpoint_init(&t->state);
    tg_trainer_seed(t, (uint64_t)s->seed);
    if (s->resume && tg_trainer_resume(t, &j->resume_ck))
        return tg_cli_fail(CMD, "--resume %s", tg_last_error());
    return put_settings(j);
}

static void describe(const text_job *j)
{
    const text_settings *s = &j->s;
    char cfg[8192];
    tg_cli_print(stdout, "tgraph train: %s, %lld parameters, on %s: %lld characters, vocabulary "
                 "%lld; train %lld, val %lld\n", s->model, (long long)tg_params_numel(j->ps),
                 j->text.source, (long long)j->text.n, (long long)j->V,
                 (long long)j->text.n_train, (long long)(j->text.n - j->text.n_train));
    if (!tg_tl_config_format(j->layer, cfg, sizeof cfg)) {
        fputs("  config:", stdout);
        for (char *line = strtok(cfg, "\n"); line; line = strtok(NULL, "\n")) printf(" %s", line);
        fputc('\n', stdout);
    }
    printf("  adamw lr %g -> %g (warmup %lld, cosine to step %lld), betas (%g, %g), weight "
           "decay %g (rank >= 2), clip %g, batch %lld x %lld, %lld steps, eval every %lld "
           "(%lld batches), seed %lld, %d threads -> %s/\n", s->lr, s->min_lr,
           (long long)s->warmup, (long long)s->decay_iters, s->beta1, s->beta2, s->wd, s->clip,
           (long long)j->B, (long long)j->T, (long long)s->max_steps, (long long)s->eval_interval,
           (long long)s->eval_iters, (long long)s->seed, tg_threads_get(), s->out);
    if (s->resume)
        printf("  resumed from %s at step %lld\n", s->resume, (long long)j->tr.state.step);
    fflush(stdout);
}

/* The one line after a stop signal; the shell's exit status for it. */
static int report_interrupt(const text_job *j)
{
    int sig = tg_rd_stop_signal;
    tg_rd_signals_default();
    fflush(stdout);
    if (!j->last_ckpt) {
        fprintf(stderr, "tgraph train: interrupted (%s) before the first evaluation; no "
                "checkpoint was written: run the same command again to start over\n",
                tg_rd_signal_name(sig));
        return 128 + sig;
    }
    fprintf(stderr, "tgraph train: interrupted (%s) at step %lld; last complete checkpoint: %s; "
            "resume with: tgraph train --resume", tg_rd_signal_name(sig),
            (long long)j->tr.state.step, j->last_ckpt);
    tg_rd_put_shell_arg(stderr, j->last_ckpt);
    if (j->last_ckpt != j->rf.ckpt) {   /* resumed elsewhere and no evaluation since */
        fputs(" --out-dir", stderr);
        tg_rd_put_shell_arg(stderr, j->s.out);
    }
    if (j->s.set_max_steps) fprintf(stderr, " --max-steps %lld", (long long)j->s.max_steps);
    if (j->s.set_threads) fprintf(stderr, " --threads %lld", (long long)j->s.threads);
    fputc('\n', stderr);
    return 128 + sig;
}

/* Step 0, before any update: evaluated, and the best so far (as nanoGPT's
 * best_val_loss takes it), so a later evaluation is best only when it beats
 * the initial weights. Like every evaluation it is followed by the
 * checkpoints: best.safetensors holds the initial weights until an
 * evaluation beats them (the best reported and the weights in
 * best.safetensors are always one model), and checkpoint.safetensors
 * resumes from step 0; then the run files, as after any evaluation. */
static int first_evaluation(text_job *j)
{
    tg_trainer *t = &j->tr;
    double val;
    if (evaluate(j, 0, tg_lr_warmup_cosine(t->lr, t->min_lr, 0, t->warmup, t->decay_steps), &val))
        return 1;
    t->state.best_val = val;
    if (tg_checkpoint_save(j->rf.best, j->ps, j->opt, &t->state) ||
        tg_checkpoint_save(j->rf.ckpt, j->ps, j->opt, &t->state))
        return tg_cli_fail(CMD, "saving a checkpoint: %s", tg_last_error());
    tg_trainer_progress p = {.event = TG_TRAINER_EVENT_EPOCH};
    return on_progress(j, &p) ? 1 : 0;
}

/* The steps, through the library's trainer. 0, or the exit status. */
static int train(text_job *j)
{
    tg_trainer *t = &j->tr;
    j->t_start = j->t_line = tg_tl_now();
    j->steps_at_start = t->state.step;
    if (t->state.step == 0 && !j->s.resume && first_evaluation(j)) return 1;
    tg_status st = tg_trainer_run(t);
    if (!st) return t->end == TG_TRAINER_STOPPED ? report_interrupt(j) : 0;
    if (st == TG_ERR_LIMIT)   /* the step's plan is larger than the memory left */
        return tg_cli_fail(CMD, "%s; lower the sizes or --batch-size, or set TGRAPH_MEM_LIMIT "
                           "(tgraph(1))", tg_last_error());
    if (t->phase == TG_TRAINER_PHASE_STEP)
        fprintf(stderr, "tgraph train: stopped at step %lld: %s\n", (long long)t->state.step + 1,
                tg_last_error());
    else if (t->phase != TG_TRAINER_PHASE_VALIDATE && t->phase != TG_TRAINER_PHASE_PROGRESS)
        return tg_cli_fail(CMD, "%s", tg_last_error());
    return 1;
}

static void report(const text_job *j)
{
    const tg_checkpoint *st = &j->tr.state;
    int64_t steps = st->step - j->steps_at_start;
    double secs = tg_tl_now() - j->t_start;
    if (j->tr.end == TG_TRAINER_MAX_STEPS && j->tr.resume_k > 0)
        printf("max steps: stopped after step %lld (between evaluations); checkpoint %s\n",
               (long long)st->step, j->rf.ckpt);
    if (isfinite(st->best_val))   /* best_epoch 0: step 0, the initial weights */
        printf("best val loss %.4f at step %lld, weights in %s\n", st->best_val,
               (long long)(st->best_epoch * j->s.eval_interval), j->rf.best);
    printf("trained %lld steps in %.1fs (%.1f ms/step)\n", (long long)steps, secs,
           steps > 0 ? 1e3 * secs / (double)steps : 0.0);
}

int tg_train_text_run(int argc, char **argv)
{
    text_job j = {.s = {.model = "gpt", .out = "runs/gpt", .batch = 64, .max_steps = 5000,
                        .lr = 1e-3, .min_lr = 1e-4, .warmup = 100, .wd = 0.1, .beta1 = 0.9,
                        .beta2 = 0.99, .clip = 1.0, .eval_interval = 250, .eval_iters = 200,
                        .seed = 1337, .progress_every = 5}};
    tg_checkpoint_init(&j.resume_ck);
    tg_trainer_init(&j.tr);
    int rc = (j.cfg = tg_config_new()) ? 0 : tg_cli_fail(CMD, "out of memory");
    if (!rc) rc = parse_args(&j, argc, argv);
    if (!rc && j.s.resume) rc = get_settings(&j);
    j.last_ckpt = j.s.resume;
    if (!rc && !j.s.set_decay && !j.s.resume) j.s.decay_iters = j.s.max_steps;
    if (!rc) rc = prepare_out_dir(&j);
    if (!rc) rc = build(&j);
    if (!rc) rc = setup_trainer(&j);
    if (!rc) {
        tg_rd_signals_install();
        describe(&j);
        rc = train(&j);
    }
    if (!rc) report(&j);
    job_free(&j);
    return rc;
}
