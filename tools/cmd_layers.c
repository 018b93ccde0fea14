/*
 * cmd_layers.c - `tgraph layers`: every layer with its config keys, defaults
 * and inputs.
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "tgraph.h"

enum { O_NAMES };
static const tg_opt opts[] = {
    [O_NAMES] = {"--names", NULL, NULL, "print only the layer names, one per line"},
};

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "layers", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *only = NULL, *arg;
    bool names = false;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_NAMES) names = true;
        else if (arg[0] == '-' || only) return tg_cli_unknown(&a, arg);
        else only = arg;
    }
    if (names) {
        for (int i = 0; i < tg_layer_class_count(); i++) puts(tg_layer_class_at(i)->name);
        return 0;
    }
    if (only && !tg_layer_class_find(only))
        return tg_cli_fail("layers", "unknown layer '%s' (run tgraph layers for the list)", only);
    for (int i = 0; i < tg_layer_class_count(); i++) {
        const tg_layer_class *c = tg_layer_class_at(i);
        if (only && strcmp(only, c->name)) continue;
        unsigned char cfg[4096];
        tg_layer_input in[TG_MAX_LAYER_INPUTS];
        memset(cfg, 0, sizeof cfg);
        int n = 0;
        if (c->config_size <= sizeof cfg && !tg_layer_read_config(c, NULL, cfg))
            n = c->inputs(cfg, in);
        printf("%s\n  %s\n  keys (NAME=DEFAULT TYPE; doc):\n", c->name, c->summary);
        tg_keys_print(stdout, c->keys, tg_keys_count(c->keys, 1 << 20), 4);
        printf("  inputs (default config):\n");
        for (int j = 0; j < n; j++) {
            char sh[128];
            char ids[64] = "";
            if (in[j].ids) snprintf(ids, sizeof ids, ", int64 ids in [0, %lld)", (long long)in[j].ids);
            printf("    %-6s %-18s (%s)%s\n", in[j].name,
                   tg_shape_str(in[j].rank, in[j].shape, sh, sizeof sh), in[j].dims,
                   in[j].ids ? ids : in[j].differentiable ? "" : ", constant");
        }
        if (!only && i + 1 < tg_layer_class_count()) printf("\n");
    }
    return 0;
}

const tg_cli_cmd tg_cmd_layers = {
    .name = "layers",
    .summary = "list the layers with their config keys, defaults and inputs",
    .help = "usage: tgraph layers [LAYER] | tgraph layers --names\n\n"
            "Lists every layer (or one) with its config keys (for --set KEY=VALUE in run,\n"
            "gradcheck, dot and bench), their defaults (PyTorch's, as in\n"
            "shared/oracle/make_case.py --list), types and ranges, and the inputs with\n"
            "their shapes. The key lines read like tgraph op NAME --help's attributes.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more = "\nexamples:\n  tgraph layers\n  tgraph layers tsa\n",
    .run = run,
};
