/*
 * cmd_gradcheck.c - `tgraph gradcheck`: a layer in float64 with random,
 * perturbed parameters and random inputs, or a single op of the registry
 * (ops/registry.h) on given or random inputs; every gradient against central
 * differences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"
#include "progress.h"
#include "tgraph.h"

/* The inputs of a single op, in order: a file or a shape to fill at random. */
typedef struct {
    int         n;
    bool        is_file[TG_OP_MAX_INPUTS];
    const char *text[TG_OP_MAX_INPUTS];
} op_sources;

static void print_results(const char *name, const tg_gradcheck_result *res, int n_res, bool ok,
                          int64_t seed)
{
    printf("gradcheck %s (float64, eps 1e-6, atol 1e-5, rtol 1e-3, seed %lld)\n", name,
           (long long)seed);
    for (int i = 0; i < n_res; i++) {
        char sh[96], skipped[48] = "";
        if (res[i].skipped)
            snprintf(skipped, sizeof skipped, " (%lld at kinks left out)", (long long)res[i].skipped);
        printf("  %-52s %-16s worst rel %.2e  %6lld checked%s  %s\n", res[i].name,
               tg_shape_str(res[i].rank, res[i].shape, sh, sizeof sh), res[i].max_rel_err,
               (long long)res[i].checked, skipped, res[i].pass ? "pass" : "FAIL");
    }
    printf("%s: %d tensors, %s\n", name, n_res, ok ? "all pass" : "FAILED");
}

/* A line on stderr every --progress-every seconds: the tensor and element
 * being probed. */
typedef struct gc_watch {
    tg_cli_progress *pr;
    const char      *what;   /* the layer or op */
} gc_watch;

static void on_progress(void *user, const tg_gradcheck_progress *p)
{
    gc_watch *w = user;
    if (!tg_cli_progress_due(w->pr)) return;
    fprintf(stderr, "progress: gradcheck %s: tensor %d/%d %s, element %lld of %lld, %.1fs\n",
            w->what, p->tensor + 1, p->tensors, p->name, (long long)p->element + 1,
            (long long)p->elements, tg_cli_progress_elapsed(w->pr));
    fflush(stderr);
}

/* --shape text ("2,3", "[2, 3]", "" or [] for 0-d) into a shape. */
static int parse_shape(const char *text, int *rank, int64_t *shape)
{
    char buf[256];
    tg_value v;
    int n = 0;
    snprintf(buf, sizeof buf, text[0] == '[' ? "%s" : "[%s]", text);
    if (tg_value_parse(buf, &v)) return tg_cli_fail("gradcheck", "--shape %s", tg_last_error());
    tg_status st = tg_value_as_int_list(&v, "--shape", shape, TG_MAX_RANK, &n);
    tg_value_free(&v);
    if (st) return tg_cli_fail("gradcheck", "%s", tg_last_error());
    for (int d = 0; d < n; d++)
        if (shape[d] < 0) return tg_cli_fail("gradcheck", "--shape %s: negative size", text);
    *rank = n;
    return 0;
}

/* The tensor of input i: loaded from its file or shaped and filled at random. */
static int op_input(const tg_op_call *call, const op_sources *src, int i, tg_tensor **t,
                    tg_rng *rng)
{
    const tg_op_def *op = call->op;
    const tg_op_input *spec = tg_op_input_at(op, i);
    if (src->is_file[i]) {
        if (!strcmp(src->text[i], "null")) t[i] = NULL;
        else if (tg_npy_load(src->text[i], &t[i]))
            return tg_cli_fail("gradcheck", "%s: --in #%d (%s): %s", op->name, i + 1, spec->name,
                               tg_last_error());
    } else {
        int rank = 0;
        int64_t shape[TG_MAX_RANK];
        if (parse_shape(src->text[i], &rank, shape)) return 2;
        tg_dtype dt = tg_op_input_dtype(op, i);
        if (!(t[i] = tg_tensor_new(dt, rank, shape)))
            return tg_cli_fail("gradcheck", "%s: --shape %s: %s", op->name, src->text[i],
                               tg_last_error());
        if (tg_op_random_input(call, i, (const tg_tensor *const *)t, t[i], rng))
            return tg_cli_fail("gradcheck", "%s", tg_last_error());
    }
    if (tg_op_check_input(op, i, t[i]))
        return tg_cli_fail("gradcheck", "%s: input #%d (%s): %s", op->name, i + 1, spec->name,
                           tg_last_error());
    return 0;
}

/* einsum without inputs: one random operand per term of the equation, each
 * label of size 2, 3 or 4 (by first appearance), "..." one dim of size 2. */
static int einsum_shapes(const tg_op_call *call, op_sources *src, char (*buf)[64])
{
    const char *eq = call->attr[0].s ? call->attr[0].s : "";
    char sizes[128] = {0};
    int next = 0;
    src->n = 0;
    for (const char *p = eq;; p++) {
        if (src->n == TG_EINSUM_MAX_OPERANDS)
            return tg_cli_fail("gradcheck", "einsum: more than %d operands",
                               TG_EINSUM_MAX_OPERANDS);
        char *b = buf[src->n];
        int at = 0;
        for (; *p && *p != ',' && !(p[0] == '-' && p[1] == '>'); p++) {
            unsigned char ch = (unsigned char)*p;
            if (at > 50) break;
            if (ch < 128 && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))) {
                if (!sizes[ch]) sizes[ch] = (char)('2' + next++ % 3);
                at += snprintf(b + at, 64 - (size_t)at, "%s%c", at ? "," : "", sizes[ch]);
            } else if (ch == '.' && p[1] == '.' && p[2] == '.') {
                at += snprintf(b + at, 64 - (size_t)at, "%s2", at ? "," : "");
                p += 2;
            }
        }
        b[at] = '\0';
        src->is_file[src->n] = false;
        src->text[src->n++] = b;
        if (*p != ',') break;
    }
    return 0;
}

/* `tgraph gradcheck OP ...`: the op in float64 on the given or random inputs. */
static int op_gradcheck(const tg_op_def *op, tg_config *cfg, op_sources *src, int64_t seed,
                        int64_t max_per, tg_cli_progress *pr)
{
    char shapes[TG_EINSUM_MAX_OPERANDS][64];
    tg_op_call call;
    tg_tensor *t[TG_OP_MAX_INPUTS] = {0};
    tg_node *in[TG_OP_MAX_INPUTS] = {0}, *out[TG_OP_MAX_OUTPUTS] = {0}, *y = NULL;
    tg_gradcheck_result res[TG_OP_MAX_INPUTS];
    tg_graph *g = NULL;
    int rc = 2, n_out = 0, n_res = 0, n_fo = 0;
    bool ok = false;
    if (tg_op_call_init(&call, op, cfg)) return tg_cli_fail("gradcheck", "%s", tg_last_error());
    if (src->n == 0 && !strcmp(op->name, "einsum") && einsum_shapes(&call, src, shapes)) goto done;
    if (tg_op_check_count(op, src->n)) {
        rc = tg_cli_fail("gradcheck", "%s (give each with --in FILE.npy or --shape 2,3)",
                         tg_last_error());
        goto done;
    }
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)seed);
    /* in order, except that random int64 indices before the first float input
     * (embedding's ids) wait for it: their rule reads it */
    int first_float = 0;
    while (first_float < src->n && tg_op_input_dtype(op, first_float) != TG_F64) first_float++;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < src->n; i++) {
            bool later = !src->is_file[i] && i < first_float && tg_op_input_dtype(op, i) == TG_I64;
            if (later == (pass == 1) && op_input(&call, src, i, t, &rng)) goto done;
        }
    if (!(g = tg_graph_new(TG_F64)) || tg_op_make_inputs(g, op, t, src->n, true, in)) {
        rc = tg_cli_fail("gradcheck", "%s: %s", op->name, tg_last_error());
        goto done;
    }
    if (tg_op_build(g, &call, in, src->n, out, TG_OP_MAX_OUTPUTS, &n_out)) {
        rc = tg_cli_fail("gradcheck", "%s", tg_graph_error(g));
        goto done;
    }
    /* one float output is checked as it is; several (split) as one flat concat */
    tg_node *flat[TG_OP_MAX_OUTPUTS];
    for (int j = 0; j < n_out; j++)
        if (tg_dtype_is_float(tg_node_value(out[j])->dtype))
            flat[n_fo++] = tg_reshape(g, out[j], 1, (int64_t[]){-1});
    for (int j = 0; j < n_out && n_fo == 1; j++)
        if (tg_dtype_is_float(tg_node_value(out[j])->dtype)) y = out[j];
    if (n_fo > 1) y = tg_concat(g, n_fo, flat, 0);
    bool any_grad = false;
    for (int i = 0; i < src->n; i++)
        any_grad |= t[i] && tg_op_input_differentiable(op, i, t[i]->dtype);
    if (!n_fo || !any_grad) {
        rc = tg_cli_fail("gradcheck", "%s: nothing to check (%s)", op->name,
                         n_fo ? "no float input takes a gradient" : "no float output");
        goto done;
    }
    if (!y) {
        rc = tg_cli_fail("gradcheck", "%s", tg_graph_error(g));
        goto done;
    }
    gc_watch w = {pr, op->name};
    tg_gradcheck_opts o = {.seed = (uint64_t)seed, .max_per_tensor = max_per,
                           .progress = on_progress, .progress_user = &w};
    tg_cli_progress_start(pr);
    if (tg_gradcheck(g, y, &o, res, TG_OP_MAX_INPUTS, &n_res, &ok)) {
        rc = tg_cli_fail("gradcheck", "%s: %s", op->name, tg_last_error());
        goto done;
    }
    print_results(op->name, res, n_res, ok, seed);
    rc = ok ? 0 : 1;
done:
    tg_graph_free(g);
    for (int i = 0; i < TG_OP_MAX_INPUTS; i++) tg_tensor_free(t[i]);
    tg_op_call_free(&call);
    return rc;
}

/* `tgraph gradcheck LAYER ...`: the layer in float64, parameters perturbed, inputs random. */
static int layer_gradcheck(const char *layer, tg_config *cfg, int64_t seed, int64_t max_per,
                           tg_cli_progress *pr)
{
    tg_cli_layer c = {0};
    tg_gradcheck_result *res = NULL;
    int rc = 2;
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)seed);
    if (tg_cli_layer_build(&c, "gradcheck", layer, cfg, NULL, TG_F64, &rng, true)) goto done;
    /* perturb every parameter (LayerNorm gains of exactly 1 can hide bugs) */
    for (int i = 0; i < tg_params_count(c.ps); i++) {
        tg_tensor *p = &tg_params_at(c.ps, i)->value;
        for (int64_t k = 0; k < p->numel; k++)
            tg_tensor_set(p, k, tg_tensor_get(p, k) + 0.1 * tg_rng_normal(&rng));
    }
    for (int i = 0; i < c.n_in; i++) {
        const tg_layer_input *spec = tg_layer_input_at(c.layer, i);
        tg_tensor *t = (tg_tensor *)tg_node_value(c.in[i]);
        for (int64_t k = 0; k < t->numel; k++)
            tg_tensor_set(t, k, spec->ids ? (double)tg_rng_below(&rng, (uint64_t)spec->ids)
                                : spec->differentiable ? tg_rng_normal(&rng)
                                : (tg_rng_uniform(&rng) < 0.3 ? -100.0 : 0.0));
    }
    int n_res = 0;
    bool ok = false;
    res = calloc((size_t)tg_params_count(c.ps) + TG_MAX_LAYER_INPUTS, sizeof *res);
    if (!res) {
        rc = tg_cli_fail("gradcheck", "out of memory");
        goto done;
    }
    gc_watch w = {pr, layer};
    tg_gradcheck_opts o = {.seed = (uint64_t)seed, .max_per_tensor = max_per,
                           .progress = on_progress, .progress_user = &w};
    tg_cli_progress_start(pr);
    if (tg_gradcheck(c.g, c.out.y, &o, res, tg_params_count(c.ps) + TG_MAX_LAYER_INPUTS, &n_res,
                     &ok)) {
        rc = tg_cli_fail("gradcheck", "%s", tg_last_error());
        goto done;
    }
    print_results(layer, res, n_res, ok, seed);
    rc = ok ? 0 : 1;
done:
    free(res);
    tg_cli_layer_free(&c);
    return rc;
}

/* The command line of `tgraph gradcheck`. */
typedef struct {
    const char *layer;   /* LAYER or OP */
    int64_t     seed, max_per;
    tg_config  *cfg;     /* --set values, or the op's ATTR=VALUE */
    op_sources  src;     /* --in / --shape, for an op */
    tg_cli_progress pr;  /* --progress-every, --quiet */
} gc_args;

enum { O_SET, O_SEED, O_MAX_PER, O_INPUT, O_SHAPE, O_PROGRESS_EVERY, O_QUIET };
static const tg_opt opts[] = {
    [O_SET] = {"--set", NULL, "KEY=VALUE",
               "a config key of LAYER or an attribute of OP (for an op, a bare ATTR=VALUE is "
               "the same)"},
    [O_SEED] = {"--seed", NULL, "N", "the seed of the parameters, inputs and r (default 0)"},
    [O_MAX_PER] = {"--max-per-tensor", NULL, "N",
                   "check at most N elements per tensor (spread evenly)"},
    [O_INPUT] = {"--input", "--in", "FILE.npy",
                 "an op's next tensor input, from a file ('null' for an omitted optional "
                 "input)"},
    [O_SHAPE] = {"--shape", NULL, "2,3", "an op's next tensor input, drawn at random in this "
                 "shape ('' for 0-d)"},
    [O_PROGRESS_EVERY] = {"--progress-every", NULL, "SECONDS",
                          "a check running longer writes a line on stderr every SECONDS "
                          "(default 5; 0: every element): the tensor and the element it is at"},
    [O_QUIET] = {"--quiet", "-q", NULL, "no progress lines"},
};

/* The command line; 2 (or the unknown argument's code) when it is wrong. */
static int parse_args(gc_args *G, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "gradcheck", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    op_sources *src = &G->src;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_PROGRESS_EVERY) {
            if (!tg_args_double(&a, 0, 1e9, &G->pr.every)) return 2;
        } else if (a.opt == O_QUIET) {
            G->pr.quiet = true;
        } else if (a.opt == O_SET) {
            if (tg_cli_set_args(&a, "gradcheck", G->cfg)) return 2;
        } else if (a.opt == O_SEED) {
            if (!tg_args_int(&a, 0, INT64_MAX, &G->seed)) return 2;
        } else if (a.opt == O_MAX_PER) {
            if (!tg_args_int(&a, 0, INT64_MAX, &G->max_per)) return 2;
        } else if (a.opt == O_INPUT || a.opt == O_SHAPE) {
            if (src->n == TG_OP_MAX_INPUTS)
                return tg_cli_fail("gradcheck", "more than %d inputs", TG_OP_MAX_INPUTS);
            src->is_file[src->n] = a.opt == O_INPUT;   /* --input: as tgraph op */
            if (!tg_args_value(&a, &src->text[src->n++])) return 2;
        } else if (arg[0] != '-' && !G->layer) {
            G->layer = arg;
        } else if (arg[0] != '-' && strchr(arg, '=')) {
            if (tg_cli_set("gradcheck", G->cfg, arg)) return 2;   /* op attributes: k=3 */
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    return 0;
}

/* An op (its own name, or with --in/--shape where a layer shares it) or a layer. */
static int gradcheck_named(gc_args *G)
{
    const char *layer = G->layer;
    if (!layer)
        return tg_cli_fail("gradcheck",
                           "missing LAYER or OP (see tgraph layers, tgraph op --help)");
    const tg_op_def *op = tg_op_find(layer);
    if (op && (!tg_layer_class_find(layer) || G->src.n))
        return op_gradcheck(op, G->cfg, &G->src, G->seed, G->max_per, &G->pr);
    if (!op && !tg_layer_class_find(layer)) {
        char ops[1024];
        tg_op_names(ops, sizeof ops);
        return tg_cli_fail("gradcheck", "'%s' is neither a layer (see tgraph layers) nor an op "
                           "(ops: %s)", layer, ops);
    }
    if (G->src.n)
        return tg_cli_fail("gradcheck", "--in and --shape are for single ops; %s is a layer (its "
                           "inputs are random)", layer);
    return layer_gradcheck(layer, G->cfg, G->seed, G->max_per, &G->pr);
}

static int run(int argc, char **argv)
{
    gc_args G = {.pr = TG_CLI_PROGRESS_DEFAULT};
    if (!(G.cfg = tg_config_new())) return tg_cli_fail("gradcheck", "out of memory");
    int rc = parse_args(&G, argc, argv);
    if (!rc) rc = gradcheck_named(&G);
    tg_config_free(G.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_gradcheck = {
    .name = "gradcheck",
    .summary = "check every gradient of a layer or op against central differences (float64)",
    .help =
        "usage: tgraph gradcheck LAYER [--set KEY=VALUE]... [--seed N] [--max-per-tensor N]\n"
        "       tgraph gradcheck OP [--set ATTR=VALUE]... [--in FILE.npy | --shape 2,3]...\n"
        "                        [--seed N] [--max-per-tensor N]\n"
        "       (both: [--progress-every SECONDS] [--quiet])\n\n"
        "Builds LAYER in float64 with PyTorch-default parameters plus 0.1*randn (so no\n"
        "LayerNorm gain is exactly 1) and random inputs, and compares the gradient of\n"
        "sum(y * r) for a random r with central differences (eps 1e-6, atol 1e-5,\n"
        "rtol 1e-3, as torch.autograd.gradcheck) for every parameter and input. Elements\n"
        "whose probe flips a discrete decision (a topk pick, a relu sign) are left out and\n"
        "counted. Prints one line per tensor; exits 1 if any fails.\n\n"
        "OP is any op of tgraph op --help, with its attributes. Its tensor inputs, in\n"
        "PyTorch's order, come from --in files (float data converted to float64; 'null'\n"
        "for an omitted optional input) or are drawn at random in the --shape given\n"
        "('' for 0-d), from the seed:\n"
        "  float    N(0, 1); log/sqrt inputs |N| + 0.5; div's divisor sign * (|N| + 0.5)\n"
        "  bool     true with probability 0.3 (masked_fill's mask)\n"
        "  int64    gather/scatter/scatter_add/index_select index: values in\n"
        "           [0, input.size(dim)), distinct along dim where they fit (unique\n"
        "           scatter targets); cross_entropy target: classes in [0, C)\n"
        "einsum with no inputs draws one operand per term (labels of size 2, 3, 4).\n"
        "One line per float input that takes a gradient; several float outputs (split)\n"
        "are checked together.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\nexamples:\n  tgraph gradcheck tsa\n"
        "  tgraph gradcheck assa_topk --set N=9 --set k=4 --seed 3\n"
        "  tgraph gradcheck einsum 'equation=blhe,bshe->bhls'\n"
        "  tgraph gradcheck topk k=3 --shape 4,7 --seed 2\n"
        "  tgraph gradcheck gather dim=1 --shape 3,4 --shape 3,2\n",
    .run = run,
};
