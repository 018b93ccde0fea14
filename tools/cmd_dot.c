/*
 * cmd_dot.c - `tgraph dot`: a layer's graph as a Graphviz diagram, rendered
 * with Graphviz's dot when it is installed.
 */
#include <errno.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"
#include "outputs.h"

extern char **environ;

/* Graphviz's output, read from its stdout pipe until it ends. */
typedef struct {
    int   fd;        /* the pipe's read end */
    pid_t pid;       /* dot */
    bool  reaped;
    int   status;
} render_ctx;

static tg_status copy_rendering(FILE *f, void *vctx)
{
    render_ctx *r = vctx;
    char buf[1 << 14];
    ssize_t n;
    while ((n = read(r->fd, buf, sizeof buf)) != 0) {
        if (n < 0) {
            if (errno == EINTR) continue;
            return tg_set_error(TG_ERR_IO, "reading Graphviz's output: %s", strerror(errno));
        }
        if (fwrite(buf, 1, (size_t)n, f) != (size_t)n)
            return tg_set_error(TG_ERR_IO, "write failed");
    }
    r->reaped = waitpid(r->pid, &r->status, 0) == r->pid;
    if (!r->reaped || !WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0)
        return tg_set_error(TG_ERR_IO, "Graphviz 'dot' failed");
    return TG_OK;
}

/* Run `dot -T<fmt> in` and write what it prints to out through
 * tg_write_atomic: a file replaced only when dot succeeded, a device or FIFO
 * written in place, "-" stdout. */
static int render(const char *in, const char *fmt, const char *flag, const char *out)
{
    char tfmt[16];
    snprintf(tfmt, sizeof tfmt, "-T%s", fmt);
    char *args[] = {"dot", tfmt, (char *)in, NULL};
    int fds[2];
    if (pipe(fds) != 0) return tg_cli_fail("dot", "%s %s: pipe: %s", flag, out, strerror(errno));
    posix_spawn_file_actions_t fa;
    render_ctx r = {.fd = fds[0]};
    int err = posix_spawn_file_actions_init(&fa);
    if (!err) err = posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    if (!err) err = posix_spawn_file_actions_addclose(&fa, fds[0]);
    if (!err) err = posix_spawnp(&r.pid, "dot", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err) {
        close(fds[0]);
        return tg_cli_fail("dot", "Graphviz 'dot' is not installed, so %s %s was not rendered "
                           "(the .dot file %s was written; apt-get install graphviz)", flag, out,
                           in);
    }
    tg_status st = tg_write_atomic(out, copy_rendering, &r);
    close(fds[0]);   /* a dot still writing gets EPIPE */
    if (!r.reaped) waitpid(r.pid, &r.status, 0);
    if (st) return tg_cli_fail("dot", "%s %s (rendering %s)", flag, tg_last_error(), in);
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
    if (!out) { rc = tg_cli_fail("dot", "missing -o FILE.dot (- for stdout)"); goto done; }
    const tg_cli_file outs[] = {{"-o", out}, {"--svg", svg}, {"--png", png}};
    if (tg_cli_check_outputs("dot", NULL, 0, outs, 3)) goto done;
    struct stat sb;
    if ((svg || png) && (!strcmp(out, "-") || (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode)))) {
        rc = tg_cli_fail("dot", "--svg and --png render the file of -o, so -o %s must name a "
                         "file", out);
        goto done;
    }
    if (tg_cli_layer_build(&c, "dot", layer, cfg, NULL, TG_F32, NULL, true)) goto done;
    char title[256];
    snprintf(title, sizeof title, "%s%s", layer, o.backward ? " (forward and backward)" : "");
    o.title = title;
    if (tg_graph_dot_save(c.g, &o, out)) {
        rc = tg_cli_fail("dot", "-o %s", tg_last_error());
        goto done;
    }
    if (svg && (rc = render(out, "svg", "--svg", svg))) goto done;
    if (png && (rc = render(out, "png", "--png", png))) goto done;
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
        "  --svg/--png  also render with Graphviz's dot (must be installed)\n"
        "  -o -         the .dot text to stdout (--svg and --png then need -o FILE)\n"
        "  --svg -, --png -  the rendering to stdout\n\n"
        "examples:\n  tgraph dot tsa -o tsa.dot --svg tsa.svg\n"
        "  tgraph dot crossformer --depth 1 -o model.dot --png model.png\n"
        "  tgraph dot tsa -o - | dot -Tsvg > tsa.svg\n",
    .run = run,
};
