/*
 * cmd_sample.c - `tgraph sample`: text from a checkpoint of `tgraph train
 * --text`, as nanoGPT's sample.py / model.generate do it: for each new
 * character the context cropped to its last block_size characters, the
 * logits of its last position divided by the temperature, all but the top k
 * set to -inf, softmax, one draw from that distribution (the --seed's RNG).
 * The prompt and the characters after it go to --out (stdout), the speed to
 * stderr.
 *
 * The decode: one forward-only graph of [1, block_size] positions built
 * once; the context sits at positions 0 .. L-1 (the rest is padding the
 * causal mask keeps out of them) and position L-1's logits are read, so
 * each character costs one forward of the whole window (no key/value cache).
 *
 * Not here: training (train_text.c), the model (layers/).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "outputs.h"
#include "text.h"
#include "layer_cli.h"
#include "train_loop.h"
#include "train_text.h"

#define CMD "sample"

typedef struct sample_run {
    const char   *ckpt, *prompt, *out;
    int64_t       tokens, top_k, seed, threads;
    double        temperature;
    tg_checkpoint ck;
    tg_config    *cfg;
    uint32_t     *vocab;
    int64_t       V, T;
    tg_params    *ps;
    tg_layer     *layer;
    tg_graph     *g;
    tg_node      *idx, *logits;    /* [1, T] int64 -> [1, T, V] */
    int32_t      *ids;             /* [n_ids]: the prompt, then what was drawn */
    int64_t       n_ids, n_prompt;
    double       *p, *sorted;      /* [V] each */
    double        seconds;
} sample_run;

enum { O_CHECKPOINT, O_PROMPT, O_TOKENS, O_TEMPERATURE, O_TOP_K, O_SEED, O_OUT, O_THREADS };
static const tg_opt opts[] = {
    [O_CHECKPOINT] = {"--checkpoint", NULL, "FILE",
                      "a checkpoint of tgraph train --text (best.safetensors or "
                      "checkpoint.safetensors; required)"},
    [O_PROMPT] = {"--prompt", NULL, "TEXT",
                  "where the text starts (default a newline, as sample.py); every character "
                  "must be in the model's vocabulary"},
    [O_TOKENS] = {"--tokens", NULL, "N", "characters to generate (default 500)"},
    [O_TEMPERATURE] = {"--temperature", NULL, "T",
                       "divides the logits: below 1 more likely characters, above 1 more "
                       "random ones (default 0.8)"},
    [O_TOP_K] = {"--top-k", NULL, "K",
                 "draw only from the K likeliest characters (default 200: all of a small "
                 "vocabulary; 0: all)"},
    [O_SEED] = {"--seed", NULL, "N", "the draws' RNG (default 1337): the same seed, checkpoint "
                "and options give the same text"},
    [O_OUT] = {"--out", "-o", "FILE", "where the text goes; - (the default) is stdout"},
    [O_THREADS] = {"--threads", NULL, "N", "default: every core"},
};

static int parse_args(sample_run *r, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, CMD, argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    while ((arg = tg_args_next(&a))) {
        bool ok = true;
        switch (a.opt) {
        case O_CHECKPOINT: ok = tg_args_value(&a, &r->ckpt); break;
        case O_PROMPT: ok = tg_args_value(&a, &r->prompt); break;
        case O_OUT: ok = tg_args_value(&a, &r->out); break;
        case O_TOKENS: ok = tg_args_int(&a, 0, 100000000, &r->tokens); break;
        case O_TEMPERATURE: ok = tg_args_double(&a, 1e-6, 1e6, &r->temperature); break;
        case O_TOP_K: ok = tg_args_int(&a, 0, INT32_MAX, &r->top_k); break;
        case O_SEED: ok = tg_args_int(&a, 0, INT64_MAX, &r->seed); break;
        case O_THREADS: ok = tg_args_int(&a, 0, TG_MAX_THREADS, &r->threads); break;
        default: return tg_cli_unknown(&a, arg);
        }
        if (!ok) return 2;
    }
    if (!r->ckpt) return tg_cli_fail(CMD, "--checkpoint FILE is required");
    const tg_cli_file in = {"--checkpoint", r->ckpt}, out = {"--out", r->out};
    if (tg_cli_check_outputs(CMD, &in, 1, &out, 1)) return 2;
    if (r->threads && tg_threads_set((int)r->threads))
        return tg_cli_fail(CMD, "--threads %s", tg_last_error());
    return 0;
}

/* Every weight restored is finite: a diverged run's NaN or Inf would make
 * every draw the same character. 0, or 2 naming the first tensor that is not. */
static int check_finite(const sample_run *r)
{
    for (int i = 0; i < tg_params_count(r->ps); i++) {
        const tg_param *p = tg_params_at(r->ps, i);
        for (int64_t k = 0; k < p->value.numel; k++) {
            double v = tg_tensor_get(&p->value, k);
            if (!isfinite(v))
                return tg_cli_fail(CMD, "--checkpoint %s: tensor '%s' holds %g at element %lld "
                                   "(a diverged run?): its samples would mean nothing", r->ckpt,
                                   p->name, v, (long long)k);
        }
    }
    return 0;
}

/* The checkpoint's model with B = 1 and T = block_size, its weights, the
 * vocabulary, and the decode graph. */
static int load_model(sample_run *r)
{
    if (tg_checkpoint_read(r->ckpt, &r->ck))
        return tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
    const char *model = tg_checkpoint_meta(&r->ck, "model");
    const char *config = tg_checkpoint_meta(&r->ck, "config");
    const char *vocab = tg_checkpoint_meta(&r->ck, TG_TEXT_META_VOCAB);
    if (!model || !config || !vocab)
        return tg_cli_fail(CMD, "--checkpoint %s: not a checkpoint of tgraph train --text (its "
                           "metadata has no %s)", r->ckpt,
                           !vocab ? "vocabulary (text.vocab)" : "model or config");
    if (tg_text_vocab_parse(vocab, &r->vocab, &r->V))
        return tg_cli_fail(CMD, "--checkpoint %s: %s", r->ckpt, tg_last_error());
    if (tg_tl_config_parse(CMD, config, r->cfg)) return 2;
    if (tg_value_as_int(tg_config_get(r->cfg, "block_size"), "block_size", &r->T))
        return tg_cli_fail(CMD, "--checkpoint %s: %s", r->ckpt, tg_last_error());
    const tg_value *vs = tg_config_get(r->cfg, "vocab_size");
    if (vs && !(vs->kind == TG_VALUE_INT && vs->i == r->V)) {
        char buf[64];
        tg_value_format(vs, buf, sizeof buf);
        return tg_cli_fail(CMD, "--checkpoint %s: the vocabulary in its metadata (%s) has %lld "
                           "entries but its config says vocab_size=%s", r->ckpt,
                           TG_TEXT_META_VOCAB, (long long)r->V, buf);
    }
    char item[64];
    snprintf(item, sizeof item, "T=%lld", (long long)r->T);
    if (tg_config_set(r->cfg, "B=1") || tg_config_set(r->cfg, item))
        return tg_cli_fail(CMD, "--checkpoint %s: model %s: %s", r->ckpt, model, tg_last_error());
    if (tg_cli_check_memory(CMD, model, r->cfg, TG_F32)) return 2;
    if (!(r->ps = tg_params_new(TG_F32)) ||
        !(r->layer = tg_layer_new(model, r->cfg, r->ps, "", NULL)))
        return tg_cli_fail(CMD, "--checkpoint %s: model %s: %s", r->ckpt, model, tg_last_error());
    if (tg_checkpoint_restore_params(&r->ck, r->ps))
        return tg_cli_fail(CMD, "--checkpoint %s", tg_last_error());
    if (check_finite(r)) return 2;
    if (!(r->g = tg_graph_new(TG_F32))) return tg_cli_fail(CMD, "%s", tg_last_error());
    tg_graph_set_grad_enabled(r->g, false);
    r->idx = tg_input(r->g, "idx", TG_I64, 2, (int64_t[]){1, r->T});
    tg_layer_outputs out;
    if (tg_layer_build(r->layer, r->g, (tg_node *const[]){r->idx}, &out))
        return tg_cli_fail(CMD, "model %s: %s", model, tg_last_error());
    r->logits = out.y;
    const tg_tensor *y = tg_node_value(r->logits);
    if (y->rank != 3 || y->shape[1] != r->T || y->shape[2] != r->V)
        return tg_cli_fail(CMD, "model %s: its output is not logits [1, %lld, %lld]", model,
                           (long long)r->T, (long long)r->V);
    return 0;
}

static int encode_prompt(sample_run *r)
{
    int32_t *p;
    int64_t n;
    if (tg_text_encode(r->vocab, r->V, r->prompt, strlen(r->prompt), &p, &n))
        return tg_cli_fail(CMD, "--prompt: %s", tg_last_error());
    if (n == 0) {
        tg_free(p);
        return tg_cli_fail(CMD, "--prompt is empty: give at least one character (the default "
                           "is a newline)");
    }
    r->ids = malloc((size_t)(n + r->tokens) * sizeof *r->ids);
    r->p = malloc((size_t)r->V * sizeof *r->p);
    r->sorted = malloc((size_t)r->V * sizeof *r->sorted);
    if (!r->ids || !r->p || !r->sorted) {
        tg_free(p);
        return tg_cli_fail(CMD, "out of memory");
    }
    memcpy(r->ids, p, (size_t)n * sizeof *p);
    tg_free(p);
    r->n_ids = r->n_prompt = n;
    return 0;
}

static int descending(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* sample.py's step on the logits row l [V]: / temperature, top-k, softmax,
 * torch.multinomial(probs, 1) (here: the first id whose cumulative
 * probability passes a uniform draw). */
static int32_t draw(sample_run *r, const float *l, tg_rng *rng)
{
    const int64_t V = r->V;
    double *p = r->p, max = -INFINITY;
    for (int64_t i = 0; i < V; i++) p[i] = (double)l[i] / r->temperature;
    if (r->top_k > 0 && r->top_k < V) {
        /* v, _ = torch.topk(logits, k); logits[logits < v[:, [-1]]] = -inf */
        memcpy(r->sorted, p, (size_t)V * sizeof *p);
        qsort(r->sorted, (size_t)V, sizeof *p, descending);
        double cut = r->sorted[r->top_k - 1];
        for (int64_t i = 0; i < V; i++)
            if (p[i] < cut) p[i] = -INFINITY;
    }
    for (int64_t i = 0; i < V; i++) max = p[i] > max ? p[i] : max;
    double sum = 0;
    for (int64_t i = 0; i < V; i++) sum += p[i] = exp(p[i] - max);
    double u = tg_rng_uniform(rng) * sum, c = 0;
    for (int64_t i = 0; i < V; i++) {
        c += p[i];
        if (u < c && p[i] > 0) return (int32_t)i;
    }
    for (int64_t i = V - 1; i >= 0; i--)   /* rounding at the very end */
        if (p[i] > 0) return (int32_t)i;
    return 0;
}

/* --tokens characters after the prompt. */
static int generate(sample_run *r)
{
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)r->seed);
    int64_t *x = tg_node_value(r->idx)->data;   /* [1, T] */
    double t0 = tg_tl_now();
    for (int64_t k = 0; k < r->tokens; k++) {
        int64_t L = r->n_ids < r->T ? r->n_ids : r->T;   /* idx[:, -block_size:] */
        const int32_t *ctx = r->ids + r->n_ids - L;
        for (int64_t i = 0; i < r->T; i++) x[i] = i < L ? ctx[i] : 0;
        if (tg_graph_forward(r->g)) return tg_cli_fail(CMD, "%s", tg_last_error());
        const float *logits = (const float *)tg_node_value(r->logits)->data + (L - 1) * r->V;
        r->ids[r->n_ids++] = draw(r, logits, &rng);
    }
    r->seconds = tg_tl_now() - t0;
    return 0;
}

static tg_status write_text(FILE *f, void *ctx)
{
    const sample_run *r = ctx;
    char buf[4];
    for (int64_t i = 0; i < r->n_ids; i++)
        fwrite(buf, 1, (size_t)tg_utf8_put(r->vocab[r->ids[i]], buf), f);
    fputc('\n', f);
    return ferror(f) ? tg_set_error(TG_ERR_IO, "writing the text") : TG_OK;
}

static int run(int argc, char **argv)
{
    sample_run r = {.prompt = "\n", .out = "-", .tokens = 500, .top_k = 200, .seed = 1337,
                    .temperature = 0.8};
    tg_checkpoint_init(&r.ck);
    int rc = (r.cfg = tg_config_new()) ? 0 : tg_cli_fail(CMD, "out of memory");
    if (!rc) rc = parse_args(&r, argc, argv);
    if (!rc) rc = load_model(&r);
    if (!rc) rc = encode_prompt(&r);
    if (!rc) rc = generate(&r);
    if (!rc && tg_write_atomic(r.out, write_text, &r))
        rc = tg_cli_fail(CMD, "--out %s", tg_last_error());
    if (!rc)
        fprintf(stderr, "sample: %lld characters in %.2f s: %.1f tokens/s (a forward of the "
                "%lld-position window per character, %d threads)\n", (long long)r.tokens,
                r.seconds, r.seconds > 0 ? (double)r.tokens / r.seconds : 0.0, (long long)r.T,
                tg_threads_get());
    free(r.ids);
    free(r.p);
    free(r.sorted);
    tg_free(r.vocab);
    tg_graph_free(r.g);
    tg_layer_free(r.layer);
    tg_params_free(r.ps);
    tg_config_free(r.cfg);
    tg_checkpoint_clear(&r.ck);
    return rc;
}

const tg_cli_cmd tg_cmd_sample = {
    .name = "sample",
    .summary = "generate text from a character-level model trained by tgraph train --text",
    .help =
        "usage: tgraph sample --checkpoint FILE [--prompt TEXT] [--tokens N]\n"
        "                     [--temperature T] [--top-k K] [--seed S] [--out FILE]\n"
        "\n"
        "Generates text as nanoGPT's sample.py does: the context cropped to the model's\n"
        "block_size, the last position's logits divided by the temperature, the top k\n"
        "kept, softmax, one random draw per character. Prints the prompt and what\n"
        "follows it; the speed (tokens/s) goes to stderr.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\n"
        "examples:\n"
        "  tgraph sample --checkpoint runs/gpt/best.safetensors\n"
        "  tgraph sample --checkpoint runs/gpt/best.safetensors --prompt 'ROMEO:' \\\n"
        "      --tokens 200 --temperature 1.0 --top-k 10 --seed 7\n",
    .run = run,
};
