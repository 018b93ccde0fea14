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

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "run", argc, argv);
    const char *layer = NULL, *weights = NULL, *buffers = NULL, *out = NULL, *attn = NULL;
    const char *attn_svg = NULL, *dy_path = NULL, *grads = NULL, *arg, *v;
    tg_config *cfg = tg_config_new();
    tg_cli_inputs files = {0};
    tg_cli_file in[TG_MAX_LAYER_INPUTS + 3] = {{0}};   /* --input files, then the others */
    int n_in = 0;
    tg_cli_layer c = {0};
    tg_tensor *dy = NULL;
    int rc = 2;
    if (!cfg) return tg_cli_fail("run", "out of memory");
    while ((arg = tg_args_next(&a))) {
        if (!strcmp(arg, "--set")) {
            if (!tg_args_value(&a, &v) || tg_cli_set("run", cfg, v)) goto done;
        } else if (!strcmp(arg, "--input")) {
            if (!tg_args_value(&a, &v) || tg_cli_inputs_add("run", &files, v)) goto done;
            in[n_in++] = (tg_cli_file){"--input", strchr(v, '=') + 1};   /* loaded: has '=' */
        } else if (!strcmp(arg, "--weights")) {
            if (!tg_args_value(&a, &weights)) goto done;
        } else if (!strcmp(arg, "--buffers")) {
            if (!tg_args_value(&a, &buffers)) goto done;
        } else if (!strcmp(arg, "--out") || !strcmp(arg, "-o")) {
            if (!tg_args_value(&a, &out)) goto done;
        } else if (!strcmp(arg, "--attn")) {
            if (!tg_args_value(&a, &attn)) goto done;
        } else if (!strcmp(arg, "--attn-svg")) {
            if (!tg_args_value(&a, &attn_svg)) goto done;
        } else if (!strcmp(arg, "--grad-output")) {
            if (!tg_args_value(&a, &dy_path)) goto done;
        } else if (!strcmp(arg, "--grads")) {
            if (!tg_args_value(&a, &grads)) goto done;
        } else if (arg[0] != '-' && !layer) {
            layer = arg;
        } else {
            rc = tg_cli_unknown(&a, arg);
            goto done;
        }
    }
    if (!layer) { rc = tg_cli_fail("run", "missing LAYER (see tgraph layers)"); goto done; }
    if (!weights) { rc = tg_cli_fail("run", "missing --weights FILE.safetensors"); goto done; }
    if (!out) { rc = tg_cli_fail("run", "missing --out FILE.npy"); goto done; }
    if (!!dy_path != !!grads) {
        rc = tg_cli_fail("run", "--grad-output and --grads go together");
        goto done;
    }
    if (files.n == 0) {
        rc = tg_cli_fail("run", "missing --input NAME=FILE.npy (see tgraph layers %s)", layer);
        goto done;
    }
    in[n_in++] = (tg_cli_file){"--weights", weights};
    in[n_in++] = (tg_cli_file){"--buffers", buffers};
    in[n_in++] = (tg_cli_file){"--grad-output", dy_path};
    const tg_cli_file outs[] = {{"--out", out}, {"--attn", attn}, {"--attn-svg", attn_svg},
                                {"--grads", grads}};
    if (tg_cli_check_outputs("run", in, n_in, outs, 4)) goto done;
    if (tg_cli_layer_build(&c, "run", layer, cfg, &files, TG_F32, NULL, dy_path != NULL)) goto done;
    if (tg_params_load(c.ps, weights, 0)) {
        rc = tg_cli_fail("run", "--weights %s", tg_last_error());
        goto done;
    }
    if (buffers) {
        tg_st_file *bf = NULL;
        if (tg_st_load(buffers, &bf)) {
            rc = tg_cli_fail("run", "--buffers %s", tg_last_error());
            goto done;
        }
        tg_st_free(bf);   /* buffers are recomputed; the file is only checked */
    }
    if (tg_graph_forward(c.g)) {
        rc = tg_cli_fail("run", "%s", tg_last_error());
        goto done;
    }
    if (tg_npy_save(out, tg_node_value(c.out.y))) {
        rc = tg_cli_fail("run", "--out %s", tg_last_error());
        goto done;
    }
    if ((attn || attn_svg) && !c.out.attn) {
        rc = tg_cli_fail("run", "%s has no attention weights to write (for full_attention and "
                         "attention_layer set output_attention=true)", layer);
        goto done;
    }
    if (attn && tg_npy_save(attn, tg_node_value(c.out.attn))) {
        rc = tg_cli_fail("run", "--attn %s", tg_last_error());
        goto done;
    }
    if (attn_svg) {
        tg_heatmap_opts ho = {.title = layer, .head = -1};
        if (tg_svg_heatmap(attn_svg, tg_node_value(c.out.attn), &ho)) {
            rc = tg_cli_fail("run", "--attn-svg %s", tg_last_error());
            goto done;
        }
    }
    if (dy_path) {
        if (tg_npy_load(dy_path, &dy)) {
            rc = tg_cli_fail("run", "--grad-output %s", tg_last_error());
            goto done;
        }
        if (tg_graph_backward(c.g, c.out.y, dy)) {
            rc = tg_cli_fail("run", "--grad-output %s: %s", dy_path, tg_last_error());
            goto done;
        }
        if ((rc = save_grads(&c, grads))) goto done;
    }
    rc = 0;
done:
    tg_tensor_free(dy);
    tg_cli_layer_free(&c);
    tg_cli_inputs_free(&files);
    tg_config_free(cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_run = {
    .name = "run",
    .summary = "run a layer on PyTorch weights (safetensors) and .npy inputs; write y, A, grads",
    .help =
        "usage: tgraph run LAYER [--set KEY=VALUE]... --weights FILE.safetensors\n"
        "                  [--buffers FILE.safetensors] --input NAME=FILE.npy [--input ...]\n"
        "                  --out FILE.npy [--attn FILE.npy] [--attn-svg FILE.svg]\n"
        "                  [--grad-output FILE.npy --grads FILE.safetensors]\n\n"
        "Builds LAYER (see tgraph layers) in eval mode, loads its parameters by state_dict\n"
        "name (a missing, extra or misshaped tensor is an error naming it), runs it on the\n"
        "inputs and writes the output. Shape keys (B, L, b, ts_d, shape, ...) not given with\n"
        "--set are read off the input files; given ones must agree.\n"
        "  --attn        the attention weights, where the layer has them\n"
        "  --attn-svg    the same as a heatmap (every head of batch 0)\n"
        "  --grad-output dy; --grads then receives d sum(y*dy) for every parameter under its\n"
        "                own key and for every float input under input.NAME\n"
        "  --buffers     accepted and checked; buffers (pe, relative_position_index) are\n"
        "                recomputed\n"
        "One of --out, --attn, --attn-svg, --grads may be - (stdout); an output that is one\n"
        "of the input files is refused before anything is written.\n\n"
        "example (a case written by shared/oracle/make_case.py tsa /tmp/tsa):\n"
        "  tgraph run tsa --set factor=2 --weights /tmp/tsa/weights.safetensors \\\n"
        "      --input x=/tmp/tsa/x.npy --out y.npy \\\n"
        "      --grad-output /tmp/tsa/dy.npy --grads grads.safetensors\n",
    .run = run,
};
