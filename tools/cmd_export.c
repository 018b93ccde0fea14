/*
 * cmd_export.c - `tgraph export`: a layer's forward graph as an ONNX model
 * (opset 17), for onnxruntime, Netron and other ONNX tools.
 *
 * The layer is built as `tgraph run` builds it (the same --set keys, shape
 * keys read off --input files, weights from --weights or initialised from
 * --seed), in eval mode, and written by tg_graph_onnx_save (onnx_export.h).
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"
#include "outputs.h"

/* One `tgraph export` call: the command line. */
typedef struct {
    const char   *layer, *weights, *onnx;
    int64_t       seed;
    bool          attn;          /* --attn: also the attention weights, as output "attn" */
    tg_config    *cfg;           /* the --set values */
    tg_cli_inputs files;         /* --input NAME=FILE.npy (their shapes only) */
    tg_cli_file   in[TG_MAX_LAYER_INPUTS + 1];
    int           n_in;
} export_req;

enum { O_SET, O_INPUT, O_WEIGHTS, O_SEED, O_ATTN, O_ONNX };
static const tg_opt opts[] = {
    [O_SET] = {"--set", NULL, "KEY=VALUE", "config keys of LAYER (tgraph layers LAYER); "
               "KEY=VALUE words after it are more"},
    [O_INPUT] = {"--input", "--in", "NAME=FILE.npy",
                 "an input of the layer, read for its shape only (shape keys not given with "
                 "--set are taken from it, as tgraph run does)"},
    [O_WEIGHTS] = {"--weights", NULL, "FILE.safetensors",
                   "the parameters by state_dict name; without it they are initialised like "
                   "PyTorch's defaults from --seed N, as tgraph run does"},
    [O_SEED] = {"--seed", NULL, "N", "the seed of that initialisation, default 0"},
    [O_ATTN] = {"--attn", NULL, NULL,
                "also write the attention weights, as the model's second output \"attn\" "
                "(layers that have them)"},
    [O_ONNX] = {"--onnx", NULL, "FILE.onnx", "the ONNX model (- for stdout; required)"},
};

/* The command line; 2 (or the unknown argument's code) when it is wrong. */
static int parse_args(export_req *R, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "export", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg, *v;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_SET) {
            if (tg_cli_set_args(&a, "export", R->cfg)) return 2;
        } else if (a.opt == O_INPUT) {
            if (!tg_args_value(&a, &v) || tg_cli_inputs_add("export", &R->files, v)) return 2;
            R->in[R->n_in++] = (tg_cli_file){"--input", strchr(v, '=') + 1};
        } else if (a.opt == O_WEIGHTS) {
            if (!tg_args_value(&a, &R->weights)) return 2;
        } else if (a.opt == O_SEED) {
            if (!tg_args_int(&a, 0, INT64_MAX, &R->seed)) return 2;
        } else if (a.opt == O_ATTN) {
            R->attn = true;
        } else if (a.opt == O_ONNX) {
            if (!tg_args_value(&a, &R->onnx)) return 2;
        } else if (arg[0] != '-' && !R->layer) {
            R->layer = arg;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    if (!R->layer) return tg_cli_fail("export", "missing LAYER (see tgraph layers)");
    if (!R->onnx) return tg_cli_fail("export", "missing --onnx FILE.onnx (- for stdout)");
    R->in[R->n_in++] = (tg_cli_file){"--weights", R->weights};
    const tg_cli_file out = {"--onnx", R->onnx};
    return tg_cli_check_outputs("export", R->in, R->n_in, &out, 1);
}

/* The layer built in eval mode, its weights loaded or initialised, written as ONNX. */
static int export_layer(export_req *R, tg_cli_layer *c)
{
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)R->seed);
    if (tg_cli_layer_build(c, "export", R->layer, R->cfg, R->files.n ? &R->files : NULL, TG_F32,
                           R->weights ? NULL : &rng, false))
        return 2;
    if (R->weights && tg_params_load(c->ps, R->weights, 0))
        return tg_cli_fail("export", "--weights %s", tg_last_error());
    if (R->attn && !c->out.attn)
        return tg_cli_fail("export", "--attn: %s has no attention weights (for full_attention "
                           "and attention_layer set output_attention=true)", R->layer);
    tg_node *outs[2] = {c->out.y, c->out.attn};
    const char *names[2] = {"y", "attn"};
    if (tg_graph_onnx_save(c->g, R->attn ? 2 : 1, outs, names, R->onnx))
        return tg_cli_fail("export", "--onnx %s: %s", R->onnx, tg_last_error());
    return 0;
}

static int run(int argc, char **argv)
{
    export_req R = {0};
    tg_cli_layer c = {0};
    if (!(R.cfg = tg_config_new())) return tg_cli_fail("export", "out of memory");
    int rc = parse_args(&R, argc, argv);
    if (!rc) rc = export_layer(&R, &c);
    tg_cli_layer_free(&c);
    tg_cli_inputs_free(&R.files);
    tg_config_free(R.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_export = {
    .name = "export",
    .summary = "write a layer's forward graph as an ONNX model (opset 17) for onnxruntime",
    .help =
        "usage: tgraph export LAYER [--set KEY=VALUE]... [--input NAME=FILE.npy]...\n"
        "                  [--weights FILE.safetensors | --seed N] [--attn] --onnx FILE.onnx\n\n"
        "Builds LAYER as tgraph run does (eval mode: dropout is the identity) and writes its\n"
        "forward graph as ONNX (opset 17, our own protobuf writer): inputs keep their names,\n"
        "parameters are initializers under their state_dict keys, the output is \"y\". Ops\n"
        "map to ONNX nodes: linear to Transpose + MatMul + Add, einsum to Einsum, einops to\n"
        "Reshape/Transpose/Expand, GELU to its Erf form, layer_norm to LayerNormalization,\n"
        "sdpa to Einsum, Softmax, Einsum. Shapes are fixed: the model is for the batch size\n"
        "it was built with. An op without an ONNX form is an error naming it.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\nexamples:\n  tgraph export tsa --onnx tsa.onnx\n"
        "  tgraph export gpt --weights w.safetensors --input idx=idx.npy --onnx gpt.onnx\n",
    .run = run,
};
