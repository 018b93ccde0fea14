/*
 * cmd_run.c - `tgraph run`: a layer on PyTorch-exported weights and inputs,
 * writing its output, attention weights and gradients.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"
#include "outputs.h"

#define MAX_SETS 64

static int save_grads(tg_cli_layer *c, const char *path)
{
    int n = tg_params_count(c->ps), k = 0;
    const char **names = calloc((size_t)n + TG_MAX_LAYER_INPUTS, sizeof *names);
    const tg_tensor **ts = calloc((size_t)n + TG_MAX_LAYER_INPUTS, sizeof *ts);
    char (*in_names)[80] = calloc(TG_MAX_LAYER_INPUTS, sizeof *in_names);
    int rc = 0;
    if (!names || !ts || !in_names) {
        rc = tg_cli_fail("run", "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        tg_param *p = tg_params_at(c->ps, i);
        names[k] = p->name;
        ts[k++] = &p->grad;
    }
    for (int i = 0; i < c->n_in; i++) {
        const tg_tensor *gr = tg_node_grad(c->in[i]);
        if (!gr) continue;
        snprintf(in_names[i], sizeof in_names[i], "input.%s", tg_node_name(c->in[i]));
        names[k] = in_names[i];
        ts[k++] = gr;
    }
    if (tg_st_save(path, k, names, ts, 1, (const char *[]){"loss"},
                   (const char *[]){"sum(y*dy)"}))
        rc = tg_cli_fail("run", "--grads %s", tg_last_error());
done:
    free(names);
    free(ts);
    free(in_names);
    return rc;
}

/* One `tgraph run` call: the command line and the layer it builds. */
typedef struct {
    const char   *layer, *weights, *buffers, *out, *attn, *attn_svg, *dy_path, *grads;
    const char   *save_weights;                       /* --save-weights */
    int64_t       seed;                               /* --seed: the init without --weights */
    tg_config    *cfg;                                /* the --set values */
    tg_cli_inputs files;                              /* the --input NAME=FILE.npy */
    tg_cli_file   in[TG_MAX_LAYER_INPUTS + 3];        /* --input files, then the others */
    int           n_in;
    tg_cli_layer  c;
    tg_tensor    *dy;                                 /* --grad-output */
} run_req;

enum { O_SET, O_INPUT, O_WEIGHTS, O_SEED, O_SAVE_WEIGHTS, O_BUFFERS, O_OUT, O_ATTN, O_ATTN_SVG,
       O_GRAD_OUTPUT, O_GRADS };
static const tg_opt opts[] = {
    [O_SET] = {"--set", NULL, "KEY=VALUE", "config keys of LAYER (tgraph layers LAYER); KEY=VALUE words after it are more"},
    [O_INPUT] = {"--input", "--in", "NAME=FILE.npy", "the layer's input NAME"},
    [O_OUT] = {"--out", "-o", "FILE.npy", "the output y"},
    [O_WEIGHTS] = {"--weights", NULL, "FILE.safetensors",
                   "the parameters by state_dict name; without it they are initialised like "
                   "PyTorch's defaults from --seed N (one line on stderr says so)"},
    [O_SEED] = {"--seed", NULL, "N", "the seed of that initialisation, default 0"},
    [O_SAVE_WEIGHTS] = {"--save-weights", NULL, "FILE.safetensors",
                        "the parameters used (loaded or initialised), by state_dict name: "
                        "loadable back with --weights or torch's load_state_dict"},
    [O_ATTN] = {"--attn", NULL, "FILE.npy", "the attention weights, where the layer has them"},
    [O_ATTN_SVG] = {"--attn-svg", NULL, "FILE.svg",
                    "the same as a heatmap (every head of batch 0)"},
    [O_GRAD_OUTPUT] = {"--grad-output", NULL, "FILE.npy",
                       "dy; --grads then receives d sum(y*dy) for every parameter under its "
                       "own key and for every float input under input.NAME"},
    [O_GRADS] = {"--grads", "--grad", "FILE.safetensors", "the gradients (with --grad-output)"},
    [O_BUFFERS] = {"--buffers", NULL, "FILE.safetensors",
                   "the layer's buffers (BatchNorm running statistics) by name; with it "
                   "--weights needs only the parameters; recomputed ones (pe, "
                   "relative_position_index) are only checked"},
};

/* The command line; 2 (or the unknown argument's code) when it is wrong. */
static int parse_args(run_req *R, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "run", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg, *v;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_SET) {
            if (tg_cli_set_args(&a, "run", R->cfg)) return 2;
        } else if (a.opt == O_INPUT) {
            if (!tg_args_value(&a, &v) || tg_cli_inputs_add("run", &R->files, v)) return 2;
            R->in[R->n_in++] = (tg_cli_file){"--input", strchr(v, '=') + 1};   /* loaded: has '=' */
        } else if (a.opt == O_WEIGHTS) {
            if (!tg_args_value(&a, &R->weights)) return 2;
        } else if (a.opt == O_SEED) {
            if (!tg_args_int(&a, 0, INT64_MAX, &R->seed)) return 2;
        } else if (a.opt == O_SAVE_WEIGHTS) {
            if (!tg_args_value(&a, &R->save_weights)) return 2;
        } else if (a.opt == O_BUFFERS) {
            if (!tg_args_value(&a, &R->buffers)) return 2;
        } else if (a.opt == O_OUT) {
            if (!tg_args_value(&a, &R->out)) return 2;
        } else if (a.opt == O_ATTN) {
            if (!tg_args_value(&a, &R->attn)) return 2;
        } else if (a.opt == O_ATTN_SVG) {
            if (!tg_args_value(&a, &R->attn_svg)) return 2;
        } else if (a.opt == O_GRAD_OUTPUT) {
            if (!tg_args_value(&a, &R->dy_path)) return 2;
        } else if (a.opt == O_GRADS) {
            if (!tg_args_value(&a, &R->grads)) return 2;
        } else if (arg[0] != '-' && !R->layer) {
            R->layer = arg;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    return 0;
}

/* What must be given, and no output onto an input or another output. */
static int check_args(run_req *R)
{
    if (!R->layer) return tg_cli_fail("run", "missing LAYER (see tgraph layers)");
    if (!R->out) return tg_cli_fail("run", "missing --out FILE.npy");
    if (!!R->dy_path != !!R->grads)
        return tg_cli_fail("run", "--grad-output and --grads go together");
    if (R->files.n == 0)
        return tg_cli_fail("run", "missing --input NAME=FILE.npy (see tgraph layers %s)", R->layer);
    R->in[R->n_in++] = (tg_cli_file){"--weights", R->weights};
    R->in[R->n_in++] = (tg_cli_file){"--buffers", R->buffers};
    R->in[R->n_in++] = (tg_cli_file){"--grad-output", R->dy_path};
    const tg_cli_file outs[] = {{"--out", R->out}, {"--attn", R->attn},
                                {"--attn-svg", R->attn_svg}, {"--grads", R->grads},
                                {"--save-weights", R->save_weights}};
    if (tg_cli_check_outputs("run", R->in, R->n_in, outs, 5)) return 2;
    return 0;
}

/* The layer built on its inputs, its weights loaded (or initialised like
 * PyTorch from --seed, said on stderr), its buffers from the buffers file
 * (the file's other tensors, buffers tgraph recomputes, only parsed; without
 * --buffers they must be in the weights file), and the weights saved when
 * asked. */
static int load_layer(run_req *R)
{
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)R->seed);
    if (tg_cli_layer_build(&R->c, "run", R->layer, R->cfg, &R->files, TG_F32,
                           R->weights ? NULL : &rng, R->dy_path != NULL))
        return 2;
    if (R->weights && tg_params_load(R->c.ps, R->weights, R->buffers ? TG_LOAD_PARAMS_ONLY : 0))
        return tg_cli_fail("run", "--weights %s", tg_last_error());
    if (R->buffers &&
        tg_params_load(R->c.ps, R->buffers, TG_LOAD_BUFFERS_ONLY | TG_LOAD_ALLOW_EXTRA))
        return tg_cli_fail("run", "--buffers %s", tg_last_error());
    if (!R->weights && tg_params_count(R->c.ps) > 0)   /* one without parameters: nothing to say */
        fprintf(stderr, "tgraph run: no --weights: %d parameter tensor%s of %s initialised like "
                "PyTorch from --seed %lld\n", tg_params_count(R->c.ps),
                tg_params_count(R->c.ps) == 1 ? "" : "s", R->layer, (long long)R->seed);
    if (R->save_weights &&
        tg_params_save(R->c.ps, R->save_weights, 1, (const char *[]){"format"},
                       (const char *[]){"pt"}))
        return tg_cli_fail("run", "--save-weights %s", tg_last_error());
    return 0;
}

/* Forward; the output, and the attention weights as .npy and SVG when asked. */
static int write_forward(run_req *R)
{
    const tg_cli_layer *c = &R->c;
    if (tg_graph_forward(c->g)) return tg_cli_fail("run", "%s", tg_last_error());
    if (tg_npy_save(R->out, tg_node_value(c->out.y)))
        return tg_cli_fail("run", "--out %s", tg_last_error());
    if ((R->attn || R->attn_svg) && !c->out.attn)
        return tg_cli_fail("run", "%s has no attention weights to write (for full_attention and "
                           "attention_layer set output_attention=true)", R->layer);
    if (R->attn && tg_npy_save(R->attn, tg_node_value(c->out.attn)))
        return tg_cli_fail("run", "--attn %s", tg_last_error());
    if (R->attn_svg) {
        tg_heatmap_opts ho = {.title = R->layer, .head = -1};
        if (tg_svg_heatmap(R->attn_svg, tg_node_value(c->out.attn), &ho))
            return tg_cli_fail("run", "--attn-svg %s", tg_last_error());
    }
    return 0;
}

/* Backward from --grad-output; every parameter's and input's gradient to --grads. */
static int write_backward(run_req *R)
{
    if (tg_npy_load(R->dy_path, &R->dy))
        return tg_cli_fail("run", "--grad-output %s", tg_last_error());
    if (tg_graph_backward(R->c.g, R->c.out.y, R->dy))
        return tg_cli_fail("run", "--grad-output %s: %s", R->dy_path, tg_last_error());
    return save_grads(&R->c, R->grads);
}

static int run(int argc, char **argv)
{
    run_req R = {0};
    if (!(R.cfg = tg_config_new())) return tg_cli_fail("run", "out of memory");
    int rc = parse_args(&R, argc, argv);
    if (!rc) rc = check_args(&R);
    if (!rc) rc = load_layer(&R);
    if (!rc) rc = write_forward(&R);
    if (!rc && R.dy_path) rc = write_backward(&R);
    tg_tensor_free(R.dy);
    tg_cli_layer_free(&R.c);
    tg_cli_inputs_free(&R.files);
    tg_config_free(R.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_run = {
    .name = "run",
    .summary = "run a layer on PyTorch (or freshly initialised) weights and .npy inputs; write y, A, grads",
    .help =
        "usage: tgraph run LAYER [--set KEY=VALUE]... [--weights FILE.safetensors | --seed N]\n"
        "                  [--buffers FILE.safetensors] --input NAME=FILE.npy [--input ...]\n"
        "                  --out FILE.npy [--attn FILE.npy] [--attn-svg FILE.svg]\n"
        "                  [--grad-output FILE.npy --grads FILE.safetensors]\n"
        "                  [--save-weights FILE.safetensors]\n\n"
        "Builds LAYER (see tgraph layers) in eval mode, loads its parameters by state_dict\n"
        "name (a missing, extra or misshaped tensor is an error naming it), runs it on the\n"
        "inputs and writes the output. Shape keys (B, L, b, ts_d, shape, ...) not given with\n"
        "--set are read off the input files; given ones must agree.\n"
        "One of --out, --attn, --attn-svg, --grads, --save-weights may be - (stdout); an\n"
        "output that is one of the input files is refused before anything is written.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\nexamples (a case written by shared/oracle/make_case.py tsa /tmp/tsa):\n"
        "  tgraph run tsa --set factor=2 --weights /tmp/tsa/weights.safetensors \\\n"
        "      --input x=/tmp/tsa/x.npy --out y.npy \\\n"
        "      --grad-output /tmp/tsa/dy.npy --grads grads.safetensors\n"
        "  tgraph run attention_layer --seed 1 --input queries=q.npy --input keys=k.npy \\\n"
        "      --input values=v.npy --out y.npy --save-weights w.safetensors\n",
    .run = run,
};
