/*
 * cmd_export.c - `tgraph export`: a layer's forward graph as an ONNX model
 * (opset 17), for onnxruntime, Netron and other ONNX tools.
 *
 * The layer is built as `tgraph run` builds it (the same --set keys, shape
 * keys read off --input files, weights from --weights or initialised from
 * --seed), or as the checkpoint of `tgraph train` says (its model, config
 * and weights; --set keys over its config), in eval mode, and written by
 * tg_graph_onnx_save (onnx_export.h).
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"
#include "outputs.h"
#include "train_loop.h"

/* One `tgraph export` call: the command line. */
typedef struct {
    const char   *layer, *weights, *onnx, *ckpt, *save_weights;
    int64_t       seed;
    bool          attn;          /* --attn: also the attention weights, as output "attn" */
    bool          fixed;         /* --fixed-batch: no symbolic batch dim */
    tg_config    *cfg;           /* the --set values */
    tg_cli_inputs files;         /* --input NAME=FILE.npy (their shapes only) */
    tg_cli_file   in[TG_MAX_LAYER_INPUTS + 2];
    int           n_in;
} export_req;

enum { O_SET, O_INPUT, O_WEIGHTS, O_SEED, O_CHECKPOINT, O_ATTN, O_FIXED, O_ONNX, O_SAVE_WEIGHTS };
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
    [O_CHECKPOINT] = {"--checkpoint", NULL, "FILE",
                      "a checkpoint of tgraph train (best.safetensors, checkpoint.safetensors; "
                      "--text runs too) instead of LAYER: its model, config and weights; --set "
                      "keys replace its config's (--set B=1 for one window at a time)"},
    [O_ATTN] = {"--attn", NULL, NULL,
                "also write the attention weights, as the model's second output \"attn\" "
                "(layers that have them)"},
    [O_FIXED] = {"--fixed-batch", NULL, NULL,
                 "fixed shapes throughout; by default the batch dim is symbolic (\"B\") where "
                 "the layer allows it, and a line on stderr says which"},
    [O_ONNX] = {"--onnx", NULL, "FILE.onnx", "the ONNX model (- for stdout; required)"},
    [O_SAVE_WEIGHTS] = {"--save-weights", NULL, "FILE.safetensors",
                        "the parameters exported, by state_dict name (as tgraph run "
                        "--save-weights writes them)"},
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
        } else if (a.opt == O_CHECKPOINT) {
            if (!tg_args_value(&a, &R->ckpt)) return 2;
        } else if (a.opt == O_SAVE_WEIGHTS) {
            if (!tg_args_value(&a, &R->save_weights)) return 2;
        } else if (a.opt == O_ATTN) {
            R->attn = true;
        } else if (a.opt == O_FIXED) {
            R->fixed = true;
        } else if (a.opt == O_ONNX) {
            if (!tg_args_value(&a, &R->onnx)) return 2;
        } else if (arg[0] != '-' && !R->layer) {
            R->layer = arg;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    if (!R->layer && !R->ckpt)
        return tg_cli_fail("export", "missing LAYER (see tgraph layers) or --checkpoint FILE");
    if (R->layer && R->ckpt)
        return tg_cli_fail("export", "LAYER '%s' and --checkpoint: give one (the checkpoint "
                           "names its model)", R->layer);
    if (R->ckpt && R->weights)
        return tg_cli_fail("export", "--weights and --checkpoint: give one (the checkpoint "
                           "holds the weights)");
    if (!R->onnx) return tg_cli_fail("export", "missing --onnx FILE.onnx (- for stdout)");
    R->in[R->n_in++] = (tg_cli_file){"--weights", R->weights};
    R->in[R->n_in++] = (tg_cli_file){"--checkpoint", R->ckpt};
    const tg_cli_file outs[] = {{"--onnx", R->onnx}, {"--save-weights", R->save_weights}};
    return tg_cli_check_outputs("export", R->in, R->n_in, outs, 2);
}

/* --checkpoint: its model's name, and its config with the --set keys over it (into cfg). */
static int checkpoint_config(export_req *R, tg_checkpoint *ck, tg_config *cfg)
{
    if (tg_checkpoint_read(R->ckpt, ck))
        return tg_cli_fail("export", "--checkpoint %s", tg_last_error());
    const char *config = tg_checkpoint_meta(ck, "config");
    R->layer = tg_checkpoint_meta(ck, "model");
    if (!R->layer || !config)
        return tg_cli_fail("export", "--checkpoint %s: not a checkpoint of tgraph train (its "
                           "metadata has no %s)", R->ckpt, R->layer ? "config" : "model");
    if (tg_tl_config_parse("export", config, cfg)) return 2;
    for (int i = 0; i < tg_config_count(R->cfg); i++) {
        const char *key = tg_config_key(R->cfg, i);
        tg_value v;
        if (tg_value_copy(&v, tg_config_get(R->cfg, key)) || tg_config_put(cfg, key, &v))
            return tg_cli_fail("export", "--set %s: %s", key, tg_last_error());
    }
    return 0;
}

/* The layer's batch key: the first dim of its first input when that is an INT key
 * ("B", "b", "B_"); NULL when there is none (axial's "shape"). */
static const char *batch_key(const tg_cli_layer *c, char *buf, size_t len)
{
    const tg_layer_class *cls = tg_layer_class_find(tg_layer_name(c->layer));
    const char *dims = tg_layer_input_at(c->layer, 0)->dims;
    size_t n = strcspn(dims, " ");
    if (!cls || n == 0 || n >= len) return NULL;
    memcpy(buf, dims, n);
    buf[n] = '\0';
    for (const tg_layer_key *k = cls->keys; k->name; k++)
        if (!strcmp(k->name, buf)) return k->type == TG_KEY_INT ? buf : NULL;
    return NULL;
}

/* The layer built again (into c2) at batch + 1: the second graph of a dynamic batch.
 * 0, or 1 (nothing printed) when it cannot be. */
static int build_again(export_req *R, const tg_cli_layer *c, tg_config *cfg, tg_cli_layer *c2,
                       char *key, size_t len)
{
    if (!batch_key(c, key, len)) return 1;
    tg_config *cfg2 = tg_config_new();
    int rc = cfg2 ? 0 : 1;
    for (int i = 0; !rc && i < tg_config_count(cfg); i++) {
        tg_value v;
        const char *k = tg_config_key(cfg, i);
        rc = tg_value_copy(&v, tg_config_get(cfg, k)) || tg_config_put(cfg2, k, &v);
    }
    char item[160];
    snprintf(item, sizeof item, "%s=%lld", key,
             (long long)tg_node_value(c->in[0])->shape[0] + 1);
    if (!rc) rc = tg_config_set(cfg2, item) != TG_OK;
    if (!rc) rc = tg_cli_layer_build(c2, "export", R->layer, cfg2, NULL, TG_F32, NULL, false) != 0;
    tg_config_free(cfg2);
    return rc;
}

/* The model with a symbolic batch where the layer allows it, else fixed; a line on
 * stderr says which. 0, or 2 after printing one line. */
static int write_model(export_req *R, tg_cli_layer *c, tg_config *cfg)
{
    tg_node *outs[2] = {c->out.y, c->out.attn};
    const char *names[2] = {"y", "attn"};
    int n_out = R->attn ? 2 : 1;
    char key[64], why[600] = "--fixed-batch";
    tg_cli_layer c2 = {0};
    if (!R->fixed && !build_again(R, c, cfg, &c2, key, sizeof key)) {
        tg_node *outs2[2] = {c2.out.y, c2.out.attn};
        tg_status st = tg_graph_onnx_save_batch(c->g, c2.g, n_out, outs, outs2, names, R->onnx);
        tg_cli_layer_free(&c2);
        if (!st) {
            fprintf(stderr, "tgraph export: %s: batch dim %s is symbolic (\"B\")\n", R->layer,
                    key);
            return 0;
        }
        snprintf(why, sizeof why, "%s", tg_last_error());
    } else if (!R->fixed) {
        tg_cli_layer_free(&c2);
        snprintf(why, sizeof why, "no batch key");
    }
    if (tg_graph_onnx_save(c->g, n_out, outs, names, R->onnx))
        return tg_cli_fail("export", "--onnx %s: %s", R->onnx, tg_last_error());
    fprintf(stderr, "tgraph export: %s: fixed shapes (batch %lld): %s\n", R->layer,
            (long long)tg_node_value(c->in[0])->shape[0], why);
    return 0;
}

/* The layer built in eval mode on cfg, its weights from the checkpoint, --weights
 * or --seed, written as ONNX (and the weights when asked). */
static int export_layer(export_req *R, tg_cli_layer *c, tg_config *cfg, const tg_checkpoint *ck)
{
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)R->seed);
    if (tg_cli_layer_build(c, "export", R->layer, cfg, R->files.n ? &R->files : NULL, TG_F32,
                           R->weights || R->ckpt ? NULL : &rng, false))
        return 2;
    if (R->weights && tg_params_load(c->ps, R->weights, 0))
        return tg_cli_fail("export", "--weights %s", tg_last_error());
    if (R->ckpt && tg_checkpoint_restore_params(ck, c->ps))
        return tg_cli_fail("export", "--checkpoint %s", tg_last_error());
    if (R->attn && !c->out.attn)
        return tg_cli_fail("export", "--attn: %s has no attention weights (for full_attention "
                           "and attention_layer set output_attention=true)", R->layer);
    if (write_model(R, c, cfg)) return 2;
    if (R->save_weights &&
        tg_params_save(c->ps, R->save_weights, 1, (const char *[]){"format"},
                       (const char *[]){"pt"}))
        return tg_cli_fail("export", "--save-weights %s", tg_last_error());
    return 0;
}

static int run(int argc, char **argv)
{
    export_req R = {0};
    tg_cli_layer c = {0};
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    tg_config *ck_cfg = tg_config_new();
    if (!(R.cfg = tg_config_new()) || !ck_cfg) {
        tg_config_free(R.cfg);
        tg_config_free(ck_cfg);
        return tg_cli_fail("export", "out of memory");
    }
    int rc = parse_args(&R, argc, argv);
    if (!rc && R.ckpt) rc = checkpoint_config(&R, &ck, ck_cfg);
    if (!rc) rc = export_layer(&R, &c, R.ckpt ? ck_cfg : R.cfg, &ck);
    tg_cli_layer_free(&c);
    tg_checkpoint_clear(&ck);
    tg_cli_inputs_free(&R.files);
    tg_config_free(R.cfg);
    tg_config_free(ck_cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_export = {
    .name = "export",
    .summary = "write a layer's forward graph as an ONNX model (opset 17) for onnxruntime",
    .help =
        "usage: tgraph export LAYER [--set KEY=VALUE]... [--input NAME=FILE.npy]...\n"
        "                  [--weights FILE.safetensors | --seed N] [--attn] --onnx FILE.onnx\n"
        "                  [--save-weights FILE.safetensors]\n"
        "       tgraph export --checkpoint FILE [--set KEY=VALUE]... --onnx FILE.onnx\n\n"
        "Builds LAYER as tgraph run does (eval mode: dropout is the identity) and writes its\n"
        "forward graph as ONNX (opset 17, our own protobuf writer): inputs keep their names,\n"
        "parameters are initializers under their state_dict keys, the output is \"y\". Ops\n"
        "map to ONNX nodes: linear to Transpose + MatMul + Add, einsum to Einsum, einops to\n"
        "Reshape/Transpose/Expand, GELU to its Erf form, layer_norm to LayerNormalization,\n"
        "sdpa to Einsum, Softmax, Einsum. The batch dim is symbolic (\"B\") where the layer\n"
        "allows it: the layer is built at a second batch size, and every shape that differs\n"
        "is computed from the input's batch at run time (a constant of the batch's shape\n"
        "whose slices are equal, such as a causal mask, is one slice expanded); where\n"
        "something else depends on the batch, or the layer has no batch key (axial's is\n"
        "in shape=[...]), the shapes are fixed at the built batch size. One line on stderr\n"
        "says which, and why. An op without an ONNX form is an error naming it.\n"
        "With --checkpoint the model is the one tgraph train saved, with its config and\n"
        "weights; a forecaster's input x is in the scaled units of training (its\n"
        "StandardScaler), as the model saw it.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\nexamples:\n  tgraph export tsa --onnx tsa.onnx\n"
        "  tgraph export gpt --weights w.safetensors --input idx=idx.npy --onnx gpt.onnx\n"
        "  tgraph export --checkpoint runs/train/best.safetensors --set B=1 --onnx model.onnx\n",
    .run = run,
};
