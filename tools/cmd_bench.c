/*
 * cmd_bench.c - `tgraph bench`: how long a layer's training step and its
 * inference forward take, and the GEMM's GFLOPS; one JSON line each.
 *
 * The training step is what a real one costs: forward (dropout active),
 * backward of sum(y*dy) with a fixed random dy (given to the backward as the
 * output's gradient), an Adam update over the parameter store and zeroed
 * gradients. Inference is a second graph on the same parameters built without
 * gradients (so the planner shares intermediate buffers) in eval mode.
 * tests/bench/torch_bench.py measures the same in PyTorch; `make bench` puts
 * the two side by side. Not a test: it checks nothing but prints numbers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "bench_time.h"
#include "cli.h"
#include "layer_cli.h"
#include "progress.h"

#define MAX_GEMM_DIM (1 << 16)

typedef struct bench_opts {
    int    threads;
    double min_time;
    int    warmup;
    bool   recompute;   /* tg_graph_set_recompute on the training graph */
    bool   profile;     /* per-op times on stderr */
    tg_cli_progress pr; /* --progress-every, --quiet */
} bench_opts;

#define MAX_PROFILED_OPS 64

/* The per-op table on stderr: ms per training step (forward, backward) and
 * per inference, averaged over every call made (warm-up included). */
static void print_profile(const tg_op_time *tr, int n_tr, int train_calls, const tg_op_time *in,
                          int n_in, int infer_calls)
{
    double sum[3] = {0, 0, 0};
    fprintf(stderr, "per op, ms (train: per step over %d steps; infer: per forward over %d):\n",
            train_calls, infer_calls);
    fprintf(stderr, "  %-16s %5s %10s %10s %10s\n", "op", "nodes", "train fwd", "train bwd",
            "infer");
    for (int i = 0; i < n_tr; i++) {
        double inf = 0;
        for (int k = 0; k < n_in; k++)
            if (!strcmp(in[k].op, tr[i].op)) inf = in[k].forward_s;
        double row[3] = {1e3 * tr[i].forward_s / train_calls, 1e3 * tr[i].backward_s / train_calls,
                         1e3 * inf / infer_calls};
        fprintf(stderr, "  %-16s %5ld %10.3f %10.3f %10.3f\n", tr[i].op, tr[i].nodes, row[0],
                row[1], row[2]);
        for (int k = 0; k < 3; k++) sum[k] += row[k];
    }
    fprintf(stderr, "  %-16s %5s %10.3f %10.3f %10.3f\n", "sum", "", sum[0], sum[1], sum[2]);
}

/* ---- the layer form ---- */

typedef struct step_ctx {
    tg_cli_layer *c;
    tg_tensor    *dy;
    tg_optim     *opt;
    tg_graph     *infer;
    /* the progress lines */
    tg_cli_progress *pr;
    const char   *layer, *phase;
    int64_t       calls;
    int           warmup;
} step_ctx;

/* Every --progress-every seconds: the phase and the call under way. */
static void show_progress(step_ctx *s)
{
    s->calls++;
    if (!tg_cli_progress_due(s->pr)) return;
    fprintf(stderr, "progress: bench %s: %s, call %lld (%s), %.1fs\n", s->layer, s->phase,
            (long long)s->calls, s->calls <= s->warmup ? "warm-up" : "timed",
            tg_cli_progress_elapsed(s->pr));
    fflush(stderr);
}

/* forward, backward of sum(y*dy), Adam, zero grads */
static int train_step(void *ctx)
{
    step_ctx *s = ctx;
    show_progress(s);
    if (tg_graph_forward(s->c->g) || tg_graph_backward(s->c->g, s->c->out.y, s->dy) ||
        tg_optim_step(s->opt))
        return 1;
    tg_params_zero_grad(s->c->ps);
    return 0;
}

static int infer_step(void *ctx)
{
    step_ctx *s = ctx;
    show_progress(s);
    return tg_graph_forward(s->infer) ? 1 : 0;
}

/* The shortest of %.15g / %.17g that reads back as v. */
static void print_double(double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    printf("%s", buf);
}

/* {"key":value,...} from the layer's config struct, every key (defaults too). */
static void print_config(const tg_layer_class *cls, const void *cfg)
{
    const unsigned char *base = cfg;
    printf("{");
    for (const tg_layer_key *k = cls->keys; k->name; k++) {
        printf("%s\"%s\":", k == cls->keys ? "" : ",", k->name);
        const void *p = base + k->offset;
        switch ((int)k->type) {
        case TG_KEY_STRING: printf("\"%s\"", ((const tg_key_str *)p)->s); break;
        case TG_KEY_INT: {
            int64_t v;
            memcpy(&v, p, sizeof v);
            if (k->nullable && v == 0) printf("null");
            else printf("%lld", (long long)v);
            break;
        }
        case TG_KEY_FLOAT: {
            double v;
            memcpy(&v, p, sizeof v);
            if (k->nullable && v == 0) printf("null");
            else print_double(v);
            break;
        }
        case TG_KEY_BOOL: {
            bool v;
            memcpy(&v, p, sizeof v);
            printf("%s", v ? "true" : "false");
            break;
        }
        case TG_KEY_INT_LIST: {
            tg_int_list v;
            memcpy(&v, p, sizeof v);
            printf("[");
            for (int i = 0; i < v.n; i++) printf(i ? ",%lld" : "%lld", (long long)v.v[i]);
            printf("]");
            break;
        }
        }
    }
    printf("}");
}

/* One layer's benchmark: its training graph, then its inference graph, and the timings. */
typedef struct {
    const bench_opts *bo;
    tg_cli_layer      c;
    tg_graph         *infer;
    tg_tensor        *dy;
    tg_optim         *opt;
    tg_rng            rng;
    tg_rng            rng_inputs;   /* the inference graph draws the same inputs again */
    step_ctx          s;
    tg_bench_opts     o;
    tg_bench_result   train, inf;
    tg_op_time        prof_train[MAX_PROFILED_OPS], prof_infer[MAX_PROFILED_OPS];
    int               n_prof_train, n_prof_infer;
    double            plan_mb;      /* the training graph's planned memory */
    double            peak_mb;      /* the most tgraph's allocator held in the training steps */
    tg_cli_progress   pr;           /* the progress lines (bo->pr, started) */
    const char       *layer;
} layer_bench;

/* the training graph: dropout on; a layer without parameters (full_attention)
 * differentiates its inputs instead, so backward has work to do */
static int build_train_graph(layer_bench *B, const char *layer, tg_config *cfg)
{
    tg_cli_layer *c = &B->c;
    if (tg_cli_layer_build(c, "bench", layer, cfg, NULL, TG_F32, &B->rng, false)) return 2;
    tg_graph_set_training(c->g, true);
    tg_graph_set_share_values(c->g, true);   /* as tgraph train: one backward per forward */
    tg_graph_set_recompute(c->g, B->bo->recompute);
    bool no_params = tg_params_count(c->ps) == 0;
    B->rng_inputs = B->rng;
    for (int i = 0; i < c->n_in; i++) {
        const tg_layer_input *spec = tg_layer_input_at(c->layer, i);
        if (tg_cli_random_input(c->layer, i, c->in[i], &B->rng) ||
            (no_params && spec->differentiable && tg_node_set_requires_grad(c->in[i], true)))
            return tg_cli_fail("bench", "input %s: %s", spec->name, tg_last_error());
    }
    const tg_tensor *y = tg_node_value(c->out.y);
    if (!(B->dy = tg_tensor_new(TG_F32, y->rank, y->shape)))
        return tg_cli_fail("bench", "%s", tg_last_error());
    for (int64_t k = 0; k < B->dy->numel; k++) tg_tensor_set(B->dy, k, tg_rng_normal(&B->rng));
    tg_optim_config oc = {.kind = TG_OPTIM_ADAM, .lr = 1e-4};
    if (!(B->opt = tg_optim_new(c->ps, &oc))) return tg_cli_fail("bench", "%s", tg_last_error());
    return 0;
}

/* Training steps timed; then the training graph's memory goes before the
 * inference graph is built, as in a process that trains and then serves: the
 * peak RSS is the larger of the two phases, not their sum (PyTorch frees its
 * autograd buffers too) */
static int time_train(layer_bench *B)
{
    tg_cli_layer *c = &B->c;
    B->s = (step_ctx){.c = c, .dy = B->dy, .opt = B->opt, .pr = &B->pr, .layer = B->layer,
                      .phase = "training step", .warmup = B->bo->warmup};
    B->o = (tg_bench_opts){.warmup = B->bo->warmup, .min_time = B->bo->min_time, .min_runs = 5,
                           .clock = CLOCK_MONOTONIC};
    tg_graph_set_profile(c->g, B->bo->profile);
    /* planned first: the steps' peak leaves out the planner's working arrays */
    if (tg_graph_plan(c->g)) return tg_cli_fail("bench", "%s", tg_last_error());
    tg_alloc_reset_peak();
    int st = tg_bench_time(train_step, &B->s, &B->o, &B->train);
    if (st) return tg_cli_fail("bench", "%s", st < 0 ? "out of memory" : tg_last_error());
    B->peak_mb = (double)tg_alloc_peak_bytes() / (1024.0 * 1024.0);
    B->plan_mb = (double)tg_graph_planned_bytes(c->g) / (1024.0 * 1024.0);
    if (B->bo->profile) B->n_prof_train = tg_graph_profile(c->g, B->prof_train, MAX_PROFILED_OPS);
    tg_graph_free(c->g);
    c->g = NULL;
    return 0;
}

/* the inference graph: same layer and parameters, no gradients, eval mode; timed */
static int time_infer(layer_bench *B)
{
    const tg_cli_layer *c = &B->c;
    tg_node *in[TG_MAX_LAYER_INPUTS];
    tg_layer_outputs out;
    if (!(B->infer = tg_graph_new(TG_F32))) return tg_cli_fail("bench", "%s", tg_last_error());
    tg_graph_set_grad_enabled(B->infer, false);
    B->rng = B->rng_inputs;
    for (int i = 0; i < c->n_in; i++) {
        const tg_layer_input *spec = tg_layer_input_at(c->layer, i);
        in[i] = tg_input(B->infer, spec->name, spec->ids ? TG_I64 : TG_F32, spec->rank,
                         spec->shape);
        if (in[i] && tg_cli_random_input(c->layer, i, in[i], &B->rng))
            return tg_cli_fail("bench", "input %s: %s", spec->name, tg_last_error());
    }
    if (tg_layer_build(c->layer, B->infer, in, &out))
        return tg_cli_fail("bench", "%s", tg_last_error());
    B->s.infer = B->infer;
    B->s.phase = "inference";
    B->s.calls = 0;
    tg_graph_set_profile(B->infer, B->bo->profile);
    int st = tg_bench_time(infer_step, &B->s, &B->o, &B->inf);
    if (st) return tg_cli_fail("bench", "%s", st < 0 ? "out of memory" : tg_last_error());
    if (B->bo->profile)
        B->n_prof_infer = tg_graph_profile(B->infer, B->prof_infer, MAX_PROFILED_OPS);
    return 0;
}

/* The profiles (with --profile) and the one JSON line of results. */
static void print_layer_result(const layer_bench *B, const char *layer)
{
    const bench_opts *bo = B->bo;
    const int n_prof_train = B->n_prof_train, n_prof_infer = B->n_prof_infer;
    if (bo->profile)
        print_profile(B->prof_train,
                      n_prof_train < MAX_PROFILED_OPS ? n_prof_train : MAX_PROFILED_OPS,
                      bo->warmup + B->train.runs, B->prof_infer,
                      n_prof_infer < MAX_PROFILED_OPS ? n_prof_infer : MAX_PROFILED_OPS,
                      bo->warmup + B->inf.runs);
    printf("{\"layer\":\"%s\",\"config\":", layer);
    print_config(tg_layer_class_find(layer), tg_layer_config(B->c.layer));
    printf(",\"train_step_ms\":%.4f,\"infer_ms\":%.4f,\"params\":%lld,\"peak_rss_mb\":%.1f,"
           "\"train_peak_alloc_mb\":%.4f,\"train_plan_mb\":%.4f,\"threads\":%d,\"recompute\":%s}\n",
           B->train.median * 1e3, B->inf.median * 1e3, (long long)tg_params_numel(B->c.ps),
           tg_bench_peak_rss_mb(), B->peak_mb, B->plan_mb, tg_threads_get(),
           bo->recompute ? "true" : "false");
}

static int bench_layer(const char *layer, tg_config *cfg, const bench_opts *bo)
{
    layer_bench B = {.bo = bo, .pr = bo->pr, .layer = layer};
    tg_cli_progress_start(&B.pr);
    tg_rng_seed(&B.rng, 0);
    int rc = build_train_graph(&B, layer, cfg);
    if (!rc) rc = time_train(&B);
    if (!rc) rc = time_infer(&B);
    if (!rc) print_layer_result(&B, layer);
    tg_tensor_free(B.dy);
    tg_optim_free(B.opt);
    tg_graph_free(B.infer);
    tg_cli_layer_free(&B.c);
    return rc;
}

/* ---- the gemm form ---- */

static int bench_gemm(int64_t m, int64_t n, int64_t k, const bench_opts *bo)
{
    tg_bench_gemm g = {.batch = 1, .M = m, .N = n, .K = k, .dtype = TG_F32};
    tg_bench_opts o = {.warmup = bo->warmup, .min_time = bo->min_time, .min_runs = 5,
                       .clock = CLOCK_MONOTONIC};
    tg_bench_result r;
    if (tg_bench_gemm_time(&g, &o, &r))
        return tg_cli_fail("bench", "gemm %lldx%lldx%lld: out of memory", (long long)m,
                           (long long)n, (long long)k);
    printf("{\"gemm\":[%lld,%lld,%lld],\"gflops\":%.2f,\"threads\":%d}\n", (long long)m,
           (long long)n, (long long)k, tg_bench_gemm_flop(&g) / r.median * 1e-9,
           tg_threads_get());
    return 0;
}

enum { O_SET, O_THREADS, O_MIN_TIME, O_WARMUP, O_RECOMPUTE, O_PROFILE, O_PROGRESS_EVERY, O_QUIET,
       O_M, O_N, O_K };
static const tg_opt opts[] = {
    [O_SET] = {"--set", NULL, "KEY=VALUE", "config keys of LAYER (tgraph layers LAYER); KEY=VALUE words after it are more"},
    [O_THREADS] = {"--threads", "-t", "N", "threads of the pool (1 .. 64; default: the online "
                   "cores)"},
    [O_MIN_TIME] = {"--min-time", NULL, "SECONDS", "time each part at least this long "
                    "(default 1)"},
    [O_WARMUP] = {"--warmup", NULL, "N", "untimed calls first (default 3)"},
    [O_RECOMPUTE] = {"--recompute", NULL, NULL,
                     "as tgraph train --recompute: linear layers' outputs recomputed in the "
                     "backward"},
    [O_PROFILE] = {"--profile", NULL, NULL,
                   "also print, on stderr, the time per op name: ms per training step in "
                   "forward and backward, and per inference forward"},
    [O_PROGRESS_EVERY] = {"--progress-every", NULL, "SECONDS",
                          "a layer's bench running longer writes a line on stderr every "
                          "SECONDS (default 5; 0: every call): the phase (training step, "
                          "inference) and the call"},
    [O_QUIET] = {"--quiet", "-q", NULL, "no progress lines"},
    [O_M] = {"--m", NULL, "M", "gemm: the rows of A and C"},
    [O_N] = {"--n", NULL, "N", "gemm: the columns of B and C"},
    [O_K] = {"--k", NULL, "K", "gemm: the columns of A, rows of B"},
};

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "bench", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *layer = NULL, *arg;
    bench_opts bo = {.threads = 0, .min_time = 1.0, .warmup = 3, .pr = TG_CLI_PROGRESS_DEFAULT};
    int64_t dims[3] = {0, 0, 0}, iv;
    tg_config *cfg = tg_config_new();
    int rc = 2, n_sets = 0;
    if (!cfg) return tg_cli_fail("bench", "out of memory");
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_PROGRESS_EVERY) {
            if (!tg_args_double(&a, 0, 1e9, &bo.pr.every)) goto done;
        } else if (a.opt == O_QUIET) {
            bo.pr.quiet = true;
        } else if (a.opt == O_SET) {
            if (tg_cli_set_args(&a, "bench", cfg)) goto done;
            n_sets++;
        } else if (a.opt == O_THREADS) {
            if (!tg_args_int(&a, 1, TG_MAX_THREADS, &iv)) goto done;
            bo.threads = (int)iv;
        } else if (a.opt == O_MIN_TIME) {
            if (!tg_args_double(&a, 0, 3600, &bo.min_time)) goto done;
        } else if (a.opt == O_RECOMPUTE) {
            bo.recompute = true;
        } else if (a.opt == O_PROFILE) {
            bo.profile = true;
        } else if (a.opt == O_WARMUP) {
            if (!tg_args_int(&a, 0, 1000000, &iv)) goto done;
            bo.warmup = (int)iv;
        } else if (a.opt == O_M || a.opt == O_N || a.opt == O_K) {
            int d = a.opt - O_M;
            if (!tg_args_int(&a, 1, MAX_GEMM_DIM, &iv)) goto done;
            dims[d] = iv;
        } else if (arg[0] != '-' && !layer) {
            layer = arg;
        } else {
            rc = tg_cli_unknown(&a, arg);
            goto done;
        }
    }
    if (!layer) {
        rc = tg_cli_fail("bench", "missing LAYER or gemm (see tgraph bench --help)");
        goto done;
    }
    bool gemm = !strcmp(layer, "gemm");
    if (gemm) {
        static const char *const flag[3] = {"--m M", "--n N", "--k K"};
        for (int i = 0; i < 3; i++)
            if (!dims[i]) {
                rc = tg_cli_fail("bench", "gemm: missing %s", flag[i]);
                goto done;
            }
        if (n_sets) {
            rc = tg_cli_fail("bench", "--set is for layers, not gemm");
            goto done;
        }
    } else if (dims[0] || dims[1] || dims[2]) {
        rc = tg_cli_fail("bench", "--m, --n and --k are for gemm, not a layer");
        goto done;
    }
    if (tg_threads_set(bo.threads)) {
        rc = tg_cli_fail("bench", "--threads %d: %s", bo.threads, tg_last_error());
        goto done;
    }
    rc = gemm ? bench_gemm(dims[0], dims[1], dims[2], &bo) : bench_layer(layer, cfg, &bo);
done:
    tg_config_free(cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_bench = {
    .name = "bench",
    .summary = "time a layer's training step and inference, or the GEMM; one JSON line",
    .help =
        "usage: tgraph bench LAYER [--set KEY=VALUE]... [--threads N] [--min-time SECONDS]\n"
        "                    [--warmup N] [--recompute] [--profile]\n"
        "                    [--progress-every SECONDS] [--quiet]\n"
        "       tgraph bench gemm --m M --n N --k K [--threads N] [--min-time SECONDS]\n"
        "                    [--warmup N]\n\n"
        "Builds LAYER (see tgraph layers; the same --set keys as run, shape keys included)\n"
        "with F32 inputs of the configured shape filled with seeded random data, and times\n"
        "  a training step: forward (dropout on), backward of sum(y*dy) with a fixed random\n"
        "                   dy, an Adam update over every parameter, gradients zeroed;\n"
        "                   memory planned as in tgraph train (a value is kept only\n"
        "                   until the backward that reads it; GELU and layer_norm\n"
        "                   outputs are recomputed there; with --recompute, as tgraph\n"
        "                   train --recompute, linear layers' outputs too)\n"
        "  inference:       a forward of a graph built without gradients (buffers shared\n"
        "                   by lifetime), dropout off\n"
        "Each is called --warmup times (default 3), then until --min-time seconds (default\n"
        "1) have been timed and at least 5 times; the median is reported. Prints one line:\n"
        "  {\"layer\":...,\"config\":{every key},\"train_step_ms\":...,\"infer_ms\":...,\n"
        "   \"params\":<parameter scalars>,\"peak_rss_mb\":<the process's peak>,\n"
        "   \"train_peak_alloc_mb\":<the most tgraph's allocator held during the training\n"
        "   steps (planned before them): parameters, gradients, Adam state, the plan,\n"
        "   inputs, graph; tgraph summary's \"Training step's memory\" predicts it>,\n"
        "   \"train_plan_mb\":<the training graph's planned tensor memory>,\"threads\":N,\n"
        "   \"recompute\":true|false}\n"
        "A layer without parameters (full_attention) differentiates its inputs instead.\n"
        "--profile also prints, on stderr, the time per op name: ms per training step in\n"
        "forward and backward, and per inference forward (averaged over every call).\n\n"
        "The gemm form times C = A B in F32 (row-major, A M x K, B K x N) and prints\n"
        "  {\"gemm\":[M,N,K],\"gflops\":...,\"threads\":N}\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\ntests/bench/torch_bench.py measures the same in PyTorch; make bench prints both.\n\n"
        "examples:\n"
        "  tgraph bench tsa\n"
        "  tgraph bench tsa --set b=32 --set ts_d=7 --set seg_num=12 --set d_model=64 \\\n"
        "      --set factor=3 --set n_heads=4 --set d_ff=128 --threads 2\n"
        "  tgraph bench attention_layer --set B=8 --set L=512 --set d_model=256 \\\n"
        "      --set n_heads=8 --set mask_flag=true --min-time 5\n"
        "  tgraph bench gemm --m 512 --n 512 --k 512 --threads 1\n",
    .run = run,
};
