/*
 * cmd_dot.c - `tgraph dot`: a layer's graph as a Graphviz diagram, rendered
 * with Graphviz's dot when it is installed.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"

extern char **environ;

/* Run `dot -T<fmt> in -o out.tmp`, then rename into place. */
static int render(const char *in, const char *fmt, const char *out)
{
    char tfmt[16], tmp[4096];
    snprintf(tfmt, sizeof tfmt, "-T%s", fmt);
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid()) >= (int)sizeof tmp)
        return tg_cli_fail("dot", "output path too long: %s", out);
    char *args[] = {"dot", tfmt, (char *)in, "-o", tmp, NULL};
    pid_t pid;
    int status;
    if (posix_spawnp(&pid, "dot", NULL, NULL, args, environ) != 0)
        return tg_cli_fail("dot", "Graphviz 'dot' is not installed, so --%s %s was not rendered "
                           "(the .dot file %s was written; apt-get install graphviz)", fmt, out, in);
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        remove(tmp);
        return tg_cli_fail("dot", "Graphviz 'dot -%s' failed on %s", tfmt, in);
    }
    if (rename(tmp, out) != 0) {
        remove(tmp);
        return tg_cli_fail("dot", "cannot write %s", out);
    }
    return 0;
}

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "dot", argc, argv);
    const char *layer = NULL, *out = NULL, *svg = NULL, *png = NULL, *arg, *v;
    tg_dot_opts o = {0};
    int64_t depth = 0;
    tg_config *cfg = tg_config_new();
    tg_cli_layer c = {0};
    int rc = 2;
    if (!cfg) return tg_cli_fail("dot", "out of memory");
    while ((arg = tg_args_next(&a))) {
        if (!strcmp(arg, "--set")) {
            if (!tg_args_value(&a, &v) || tg_cli_set("dot", cfg, v)) goto done;
        } else if (!strcmp(arg, "--depth")) {
            if (!tg_args_int(&a, 0, 64, &depth)) goto done;
            o.depth = (int)depth;
        } else if (!strcmp(arg, "--backward")) {
            o.backward = true;
        } else if (!strcmp(arg, "--rankdir")) {
            if (!tg_args_value(&a, &v)) goto done;
            if (!strcmp(v, "LR")) o.rankdir = TG_RANKDIR_LR;
            else if (!strcmp(v, "TB")) o.rankdir = TG_RANKDIR_TB;
            else {
                rc = tg_cli_fail("dot", "--rankdir wants LR or TB, got '%s'", v);
                goto done;
            }
        } else if (!strcmp(arg, "-o") || !strcmp(arg, "--out")) {
            if (!tg_args_value(&a, &out)) goto done;
        } else if (!strcmp(arg, "--svg")) {
            if (!tg_args_value(&a, &svg)) goto done;
        } else if (!strcmp(arg, "--png")) {
            if (!tg_args_value(&a, &png)) goto done;
        } else if (arg[0] != '-' && !layer) {
            layer = arg;
        } else {
            rc = tg_cli_unknown(&a, arg);
            goto done;
        }
    }
    if (!layer) { rc = tg_cli_fail("dot", "missing LAYER (see tgraph layers)"); goto done; }
    if (!out) { rc = tg_cli_fail("dot", "missing -o FILE.dot"); goto done; }
    if (tg_cli_layer_build(&c, "dot", layer, cfg, NULL, TG_F32, NULL, true)) goto done;
    char title[256];
    snprintf(title, sizeof title, "%s%s", layer, o.backward ? " (forward and backward)" : "");
    o.title = title;
    if (tg_graph_dot_save(c.g, &o, out)) {
        rc = tg_cli_fail("dot", "-o %s", tg_last_error());
        goto done;
    }
    if (svg && (rc = render(out, "svg", svg))) goto done;
    if (png && (rc = render(out, "png", png))) goto done;
    rc = 0;
done:
    tg_cli_layer_free(&c);
    tg_config_free(cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_dot = {
    .name = "dot",
    .summary = "draw a layer's graph as a Graphviz diagram, clustered by module",
    .help =
        "usage: tgraph dot LAYER [--set KEY=VALUE]... [--depth N] [--backward]\n"
        "                  [--rankdir LR|TB] -o FILE.dot [--svg FILE.svg] [--png FILE.png]\n\n"
        "Builds LAYER on inputs of the configured shape and writes its graph: one box per\n"
        "module scope (time_attention, MLP1, norm1, ...), ops labelled with their key\n"
        "attribute, every edge with the full shape of its tensor, parameters by state_dict\n"
        "name. The same graph always gives the same bytes.\n"
        "  --depth N    draw every module at depth N as one box (0: everything expanded)\n"
        "  --backward   add the gradient nodes beside the forward ones\n"
        "  --svg/--png  also render with Graphviz's dot (must be installed)\n\n"
        "examples:\n  tgraph dot tsa -o tsa.dot --svg tsa.svg\n"
        "  tgraph dot crossformer --depth 1 -o model.dot --png model.png\n",
    .run = run,
};
