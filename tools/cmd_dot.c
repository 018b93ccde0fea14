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
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "cost_cli.h"
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

/* Run `dot -T<fmt>` on the .dot text in the file of fd (from its start) and
 * write what it prints to out through tg_write_atomic: a file replaced only
 * when dot succeeded, a device or FIFO written in place, "-" stdout. */
static int render(int fd, const char *fmt, const char *flag, const char *out)
{
    char tfmt[16];
    snprintf(tfmt, sizeof tfmt, "-T%s", fmt);
    char *args[] = {"dot", tfmt, NULL};
    int fds[2];
    if (lseek(fd, 0, SEEK_SET) != 0 || pipe(fds) != 0)
        return tg_cli_fail("dot", "%s %s: %s", flag, out, strerror(errno));
    posix_spawn_file_actions_t fa;
    render_ctx r = {.fd = fds[0]};
    int err = posix_spawn_file_actions_init(&fa);
    if (!err) err = posix_spawn_file_actions_adddup2(&fa, fd, STDIN_FILENO);
    if (!err) err = posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    if (!err) err = posix_spawn_file_actions_addclose(&fa, fds[0]);
    if (!err) err = posix_spawnp(&r.pid, "dot", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (err) {
        close(fds[0]);
        return tg_cli_fail("dot", "Graphviz 'dot' is not installed, so %s %s was not rendered "
                           "(apt-get install graphviz; -o FILE.dot alone needs no Graphviz)",
                           flag, out);
    }
    tg_status st = tg_write_atomic(out, copy_rendering, &r);
    close(fds[0]);   /* a dot still writing gets EPIPE */
    if (!r.reaped) waitpid(r.pid, &r.status, 0);
    if (st) return tg_cli_fail("dot", "%s %s", flag, tg_last_error());
    return 0;
}

/* One `tgraph dot` call: the command line. */
typedef struct {
    const char *layer, *out, *svg, *png;
    tg_dot_opts o;
    bool        unfuse;
    tg_config  *cfg;   /* the --set values */
    bool        profile;
    int         steps;
} dot_req;

enum { O_SET, O_DEPTH, O_BACKWARD, O_UNFUSE, O_RANKDIR, O_OUT, O_SVG, O_PNG, O_PROFILE, O_STEPS };
static const tg_opt opts[] = {
    [O_SET] = {"--set", NULL, "KEY=VALUE", "config keys of LAYER (tgraph layers LAYER); KEY=VALUE words after it are more"},
    [O_DEPTH] = {"--depth", NULL, "N",
                 "draw every module N levels below the layer (or model) as one box, counted "
                 "from the layer's own modules: 1 shows them as boxes (0, the default: "
                 "everything expanded); a module of constants only is not a box"},
    [O_BACKWARD] = {"--backward", NULL, NULL,
                    "add the gradient nodes beside the forward ones: one per node that takes a "
                    "gradient (views and fused ops included), gradient edges from the output's "
                    "gradient back to every parameter's and input's"},
    [O_UNFUSE] = {"--unfuse", NULL, NULL,
                  "draw each fused op as the chain of ops it computes, in a cluster named after "
                  "it: sdpa as einsum, masked_fill (causal), softmax, dropout, einsum (what "
                  "FullAttention records with the weights); the default draws what runs"},
    [O_RANKDIR] = {"--rankdir", NULL, "LR|TB", "the direction of the layout (default TB)"},
    [O_OUT] = {"--out", "-o", "FILE.dot", "the .dot text (- for stdout)"},
    [O_SVG] = {"--svg", NULL, "FILE.svg",
               "render with Graphviz's dot (must be installed); no --out needed; - for stdout"},
    [O_PNG] = {"--png", NULL, "FILE.png", "the same as PNG"},
    [O_PROFILE] = {"--profile", NULL, NULL,
                   "run a few training steps (random parameters and inputs) and put cost on the "
                   "picture: each op node and module gets its time per step (forward + backward), "
                   "forward FLOPs and bytes kept, coloured on one heat scale (share of the step; "
                   "a legend says so); the title names the three most expensive modules"},
    [O_STEPS] = {"--steps", NULL, "N", "training steps --profile times, after one warm-up "
                 "(default 3)"},
};

/* The command line; 2 (or the unknown argument's code) when it is wrong. */
static int parse_args(dot_req *R, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "dot", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg, *v;
    int64_t depth = 0;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_SET) {
            if (tg_cli_set_args(&a, "dot", R->cfg)) return 2;
        } else if (a.opt == O_DEPTH) {
            if (!tg_args_int(&a, 0, 64, &depth)) return 2;
            R->o.depth = (int)depth;
        } else if (a.opt == O_BACKWARD) {
            R->o.backward = true;
        } else if (a.opt == O_UNFUSE) {
            R->unfuse = true;
        } else if (a.opt == O_RANKDIR) {
            if (!tg_args_value(&a, &v)) return 2;
            if (!strcmp(v, "LR")) R->o.rankdir = TG_RANKDIR_LR;
            else if (!strcmp(v, "TB")) R->o.rankdir = TG_RANKDIR_TB;
            else return tg_cli_fail("dot", "--rankdir wants LR or TB, got '%s'", v);
        } else if (a.opt == O_OUT) {
            if (!tg_args_value(&a, &R->out)) return 2;
        } else if (a.opt == O_SVG) {
            if (!tg_args_value(&a, &R->svg)) return 2;
        } else if (a.opt == O_PNG) {
            if (!tg_args_value(&a, &R->png)) return 2;
        } else if (a.opt == O_PROFILE) {
            R->profile = true;
        } else if (a.opt == O_STEPS) {
            if (!tg_args_int(&a, 1, 1000000, &depth)) return 2;
            R->steps = (int)depth;
        } else if (arg[0] != '-' && !R->layer) {
            R->layer = arg;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    if (!R->layer) return tg_cli_fail("dot", "missing LAYER (see tgraph layers)");
    if (!R->out && !R->svg && !R->png)
        return tg_cli_fail("dot", "missing -o FILE.dot, --svg FILE.svg or --png FILE.png "
                           "(- for stdout)");
    const tg_cli_file outs[] = {{"-o", R->out}, {"--svg", R->svg}, {"--png", R->png}};
    return tg_cli_check_outputs("dot", NULL, 0, outs, 3);
}

/* The .dot text to -o, and rendered from an unnamed temporary copy to --svg
 * and --png (so neither needs -o, and -o may be -). */
static int write_outputs(const dot_req *R, const tg_graph *g)
{
    if (R->out && tg_graph_dot_save(g, &R->o, R->out))
        return tg_cli_fail("dot", "-o %s", tg_last_error());
    if (!R->svg && !R->png) return 0;
    FILE *tf = tmpfile();
    if (!tf) return tg_cli_fail("dot", "a temporary file for Graphviz: %s", strerror(errno));
    int rc = 0;
    if (tg_graph_dot(g, &R->o, tf) || fflush(tf)) rc = tg_cli_fail("dot", "%s", tg_last_error());
    if (!rc && R->svg) rc = render(fileno(tf), "svg", "--svg", R->svg);
    if (!rc && R->png) rc = render(fileno(tf), "png", "--png", R->png);
    fclose(tf);
    return rc;
}

/* The layer built again on a graph whose fused ops record their chains (the
 * layer and its parameters are kept; the first graph goes). */
static int rebuild_unfused(tg_cli_layer *c)
{
    tg_graph *g = tg_graph_new(tg_graph_dtype(c->g));
    if (!g) return tg_cli_fail("dot", "%s", tg_last_error());
    tg_graph_set_unfused(g, true);
    for (int i = 0; i < c->n_in; i++) {
        const tg_node *was = c->in[i];
        const tg_tensor *v = tg_node_value(was);
        tg_node *n = tg_input(g, tg_node_name(was), v->dtype, v->rank, v->shape);
        if (n && tg_layer_input_at(c->layer, i)->differentiable)
            tg_node_set_requires_grad(n, true);   /* as tg_cli_layer_build with grads */
        c->in[i] = n;
    }
    tg_graph_free(c->g);
    c->g = g;
    memset(&c->out, 0, sizeof c->out);
    if (tg_layer_build(c->layer, g, c->in, &c->out))
        return tg_cli_fail("dot", "--unfuse: %s", tg_last_error());
    return 0;
}

static int run(int argc, char **argv)
{
    dot_req R = {.steps = TG_CLI_PROFILE_STEPS};
    tg_cli_layer c = {0};
    tg_cli_dot_cost cost = {0};
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    if (!(R.cfg = tg_config_new())) return tg_cli_fail("dot", "out of memory");
    int rc = parse_args(&R, argc, argv);
    if (!rc)
        rc = tg_cli_layer_build(&c, "dot", R.layer, R.cfg, NULL, TG_F32, R.profile ? &rng : NULL,
                                true);
    if (!rc && R.unfuse) rc = rebuild_unfused(&c);
    char title[256];
    snprintf(title, sizeof title, "%s%s%s%s", R.layer ? R.layer : "",
             R.o.backward ? " (forward and backward" : "",
             R.unfuse ? (R.o.backward ? ", fused ops unfused" : " (fused ops unfused") : "",
             R.o.backward || R.unfuse ? ")" : "");
    R.o.title = title;
    if (!rc && R.profile) rc = tg_cli_dot_cost_init(&cost, &c, "dot", R.steps, &R.o, title);
    if (!rc) rc = write_outputs(&R, c.g);
    tg_cli_dot_cost_free(&cost);
    tg_cli_layer_free(&c);
    tg_config_free(R.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_dot = {
    .name = "dot",
    .summary = "draw a layer's graph as a Graphviz diagram, clustered by module",
    .help =
        "usage: tgraph dot LAYER [--set KEY=VALUE]... [--depth N] [--backward] [--unfuse]\n"
        "                  [--profile [--steps N]]\n"
        "                  [--rankdir LR|TB] [-o FILE.dot] [--svg FILE.svg] [--png FILE.png]\n\n"
        "Builds LAYER on inputs of the configured shape and writes its graph: one box per\n"
        "module scope (time_attention, MLP1, norm1, ...), ops labelled with their key\n"
        "attribute, every edge with the full shape of its tensor, parameters by state_dict\n"
        "name. The same graph always gives the same bytes. At least one of -o, --svg,\n"
        "--png is needed.\n\n"
        "Fused ops draw as the one node that runs; --unfuse builds the graph with each\n"
        "fused op recording its chain of ops instead (real nodes, which run to the same\n"
        "results). It expands sdpa, the fused attention of attention_layer, tsa and\n"
        "crossformer; softmax(scale * x) stays one softmax node (its label shows scale=).\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\nexamples:\n  tgraph dot tsa --svg tsa.svg\n"
        "  tgraph dot crossformer --depth 1 -o model.dot --png model.png\n"
        "  tgraph dot tsa --unfuse --backward --svg tsa_steps.svg\n"
        "  tgraph dot crossformer --depth 1 --profile --svg cost.svg\n"
        "  tgraph dot tsa -o - | dot -Tsvg > tsa.svg\n",
    .run = run,
};
