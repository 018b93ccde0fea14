/*
 * cmd_op.c - `tgraph op`: one op of the registry (ops/registry.h) on .npy files, with its
 * gradients: the op's result and d sum_j(out_j * grad_output_j) for every
 * float input, so any op can be compared with PyTorch from the shell.
 *
 * It builds a graph of the input leaves and the one op, runs forward and
 * (with --grad-output) backward once. It is not a pipeline: to chain ops,
 * chain the commands (or write C).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "outputs.h"
#include "tgraph.h"

static void print_man(FILE *f);
static void print_markdown(FILE *f);

typedef struct {
    const char *path[TG_OP_MAX_OUTPUTS];
    int         n;
} file_list;

static int add_file(tg_args *a, file_list *l, int max)
{
    const char *v;
    if (!tg_args_value(a, &v)) return 2;
    if (l->n == max) return tg_cli_fail("op", "more than %d %s files", max, a->flag);
    l->path[l->n++] = v;
    return 0;
}

/* No --out or --grad may be an --in or --grad-output file, or another
 * output (see tools/outputs.h); checked before anything is read or written. */
static int check_files(const file_list *ins, const file_list *dys, const file_list *outs,
                       const file_list *grads)
{
    tg_cli_file in[TG_OP_MAX_INPUTS + TG_OP_MAX_OUTPUTS], out[TG_OP_MAX_OUTPUTS + TG_OP_MAX_INPUTS];
    int n_in = 0, n_out = 0;
    for (int i = 0; i < ins->n; i++) {
        const char *p = ins->path[i];
        bool none = !strcmp(p, "null") || !strcmp(p, "None");
        in[n_in++] = (tg_cli_file){"--in", none ? NULL : p};
    }
    for (int i = 0; i < dys->n; i++) in[n_in++] = (tg_cli_file){"--grad-output", dys->path[i]};
    for (int i = 0; i < outs->n; i++) out[n_out++] = (tg_cli_file){"--out", outs->path[i]};
    for (int i = 0; i < grads->n; i++) out[n_out++] = (tg_cli_file){"--grad", grads->path[i]};
    return tg_cli_check_outputs("op", in, n_in, out, n_out);
}

/* The message of a failed input load (the loader's names the file), with a
 * hint for int32 indices. */
static int load_fail(const tg_op_def *op, int i)
{
    const tg_op_input *spec = tg_op_input_at(op, i);
    const char *msg = tg_last_error();
    bool int_kind = spec->kind == TG_OP_IN_INDEX || spec->kind == TG_OP_IN_TARGET;
    bool narrow_int = strstr(msg, "'<i4'") || strstr(msg, "'<i2'") || strstr(msg, "'|i1'") ||
                      strstr(msg, "'<u") || strstr(msg, "'|u1'");
    return tg_cli_fail("op", "%s: --in #%d (%s): %s%s", op->name, i + 1, spec->name, msg,
                       int_kind && narrow_int ? "; index tensors must be int64 ('<i8'; PyTorch: "
                                                "Expected dtype int64 for index)" : "");
}

/* Load and check the --in files ("null" = an omitted optional input). */
static int load_inputs(const tg_op_def *op, const file_list *files, tg_tensor **t)
{
    if (tg_op_check_count(op, files->n)) return tg_cli_fail("op", "%s", tg_last_error());
    for (int i = 0; i < files->n; i++) {
        const tg_op_input *spec = tg_op_input_at(op, i);
        if (!strcmp(files->path[i], "null") || !strcmp(files->path[i], "None")) {
            t[i] = NULL;
        } else if (tg_npy_load(files->path[i], &t[i])) {
            return load_fail(op, i);
        }
        if (tg_op_check_input(op, i, t[i]))
            return tg_cli_fail("op", "%s: --in #%d (%s) %s: %s", op->name, i + 1, spec->name,
                               files->path[i], tg_last_error());
    }
    return 0;
}

/* One line naming the op, whatever the builder's message starts with. */
static int graph_fail(const tg_op_def *op, const char *msg)
{
    size_t n = strlen(op->name);
    if (!strncmp(msg, op->name, n) && msg[n] == ':') return tg_cli_fail("op", "%s", msg);
    return tg_cli_fail("op", "%s: %s", op->name, msg);
}

/* The scalar L = sum_j sum(out_j * dy_j) over the float outputs, or the single
 * float output itself (its dy is then seeded directly). */
static tg_node *loss_node(tg_graph *g, tg_node *const *out, const int *fo, int n_fo,
                          tg_tensor *const *dy)
{
    if (n_fo == 1) return out[fo[0]];
    tg_node *L = NULL;
    for (int j = 0; j < n_fo; j++) {
        char name[32];
        snprintf(name, sizeof name, "grad_output[%d]", j);
        tg_node *term = tg_sum(g, tg_mul(g, out[fo[j]], tg_constant(g, name, dy[j])), NULL, 0,
                               false);
        L = L ? tg_add(g, L, term) : term;
    }
    return L;
}

/* One `tgraph op` call: what the command line asks for, and what it builds. */
typedef struct {
    const char      *name;                         /* the op's name, as given */
    file_list        ins, outs, dys, grads;        /* --in, --out, --grad-output, --grad */
    tg_config       *cfg;                          /* the ATTR=VALUE attributes */
    bool             listed;                       /* --man / --markdown: printed, done */
    const tg_op_def *op;
    tg_op_call       call;
    bool             call_ok;                      /* call holds something to free */
    tg_tensor       *t[TG_OP_MAX_INPUTS];          /* the --in tensors (NULL: omitted) */
    tg_tensor       *dy[TG_OP_MAX_OUTPUTS];        /* the --grad-output tensors, in dt */
    tg_dtype         dt;                           /* float64 when any float input is */
    bool             want_grads;
    tg_graph        *g;
    tg_node         *in[TG_OP_MAX_INPUTS], *out[TG_OP_MAX_OUTPUTS];
    int              n_out;
    int              fo[TG_OP_MAX_OUTPUTS], n_fo;  /* float outputs */
    int              n_fi;                         /* float inputs with grads */
    tg_node         *L;                            /* what backward starts from */
} op_run;

/* One attribute, "KEY=VALUE" (--set, or bare). */
static int set_attr(op_run *R, const char *item)
{
    if (tg_config_set(R->cfg, item))
        return tg_cli_fail("op", "%s: attribute %s", R->name ? R->name : "--set",
                           tg_last_error());
    return 0;
}

enum { O_SET, O_INPUT, O_OUT, O_GRAD_OUTPUT, O_GRADS, O_MAN, O_MARKDOWN };
static const tg_opt opts[] = {
    [O_SET] = {"--set", NULL, "ATTR=VALUE", "an attribute (a bare ATTR=VALUE is the same)"},
    [O_INPUT] = {"--input", "--in", "FILE.npy",
                 "the tensor arguments in PyTorch's positional order, as FILE or NAME=FILE "
                 "(NAME the op's name for that input, checked); 'null' stands for an omitted "
                 "optional one (layer_norm x null bias)"},
    [O_OUT] = {"--out", "-o", "FILE.npy",
               "the outputs in order (topk: values, then int64 indices; split: each piece)"},
    [O_GRAD_OUTPUT] = {"--grad-output", NULL, "FILE.npy", "dy for each float output, in order"},
    [O_GRADS] = {"--grads", "--grad", "FILE.npy",
                 "receives d sum(out * dy) for each float input that takes a gradient, in "
                 "order (mse_loss: both; cross_entropy: not weight)"},
    [O_MAN] = {"--man", NULL, NULL, "print the op list as roff (the man page's OPS section)"},
    [O_MARKDOWN] = {"--markdown", NULL, NULL, "print the op list as Markdown"},
};

/* The command line: files, the op's name and its attributes. */
static int parse_args(op_run *R, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "op", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_MAN || a.opt == O_MARKDOWN) {
            /* the op list for the man page / as Markdown */
            if (a.opt == O_MAN) print_man(stdout);
            else print_markdown(stdout);
            R->listed = true;
            return 0;
        } else if (a.opt == O_INPUT) {
            if (add_file(&a, &R->ins, TG_OP_MAX_INPUTS)) return 2;
        } else if (a.opt == O_OUT) {
            if (add_file(&a, &R->outs, TG_OP_MAX_OUTPUTS)) return 2;
        } else if (a.opt == O_GRAD_OUTPUT) {
            if (add_file(&a, &R->dys, TG_OP_MAX_OUTPUTS)) return 2;
        } else if (a.opt == O_GRADS) {
            if (add_file(&a, &R->grads, TG_OP_MAX_INPUTS)) return 2;
        } else if (a.opt == O_SET) {
            const char *v;
            if (!tg_args_value(&a, &v) || set_attr(R, v)) return 2;
        } else if (arg[0] != '-' && !R->name) {
            R->name = arg;
        } else if (arg[0] != '-' && strchr(arg, '=')) {
            if (set_attr(R, arg)) return 2;   /* the older spelling of --set */
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    return 0;
}

/* --input NAME=FILE: NAME, when it is one of the op's input names, must be
 * that of input #i (inputs stay in PyTorch's order) and is dropped from
 * *path; any other '=' is part of the file name. */
static int input_path(const tg_op_def *op, int i, const char **path)
{
    const char *eq = strchr(*path, '=');
    if (!eq) return 0;
    size_t len = (size_t)(eq - *path);
    bool known = false;
    for (int k = 0; k < TG_OP_MAX_INPUTS && tg_op_input_at(op, k); k++) {
        const char *nm = tg_op_input_at(op, k)->name;
        known |= strlen(nm) == len && !strncmp(nm, *path, len);
    }
    if (!known) return 0;
    const tg_op_input *spec = tg_op_input_at(op, i);
    if (!spec || strlen(spec->name) != len || strncmp(spec->name, *path, len))
        return tg_cli_fail("op", "%s: --input %s: input #%d is %s (the inputs go in PyTorch's "
                           "order; see tgraph op %s --help)", op->name, *path, i + 1,
                           spec ? spec->name : "past the last", op->name);
    *path = eq + 1;
    return 0;
}

/* The op found, its attributes read, the files checked against each other. */
static int find_op(op_run *R)
{
    char names[1024];
    tg_op_names(names, sizeof names);
    if (!R->name) return tg_cli_fail("op", "missing NAME (ops: %s; see tgraph op --help)", names);
    if (!(R->op = tg_op_find(R->name)))
        return tg_cli_fail("op", "unknown op '%s' (ops: %s)", R->name, names);
    for (int i = 0; i < R->ins.n; i++)
        if (input_path(R->op, i, &R->ins.path[i])) return 2;
    if (check_files(&R->ins, &R->dys, &R->outs, &R->grads)) return 2;
    if (tg_op_call_init(&R->call, R->op, R->cfg)) return tg_cli_fail("op", "%s", tg_last_error());
    R->call_ok = true;
    return 0;
}

/* The inputs loaded, the graph of their leaves and the one op built. */
static int build_graph(op_run *R)
{
    const tg_op_def *op = R->op;
    if (load_inputs(op, &R->ins, R->t)) return 2;
    R->want_grads = R->dys.n || R->grads.n;
    R->dt = TG_F32;   /* float64 when any float input is */
    for (int i = 0; i < R->ins.n; i++)
        if (R->t[i] && R->t[i]->dtype == TG_F64) R->dt = TG_F64;
    if (!(R->g = tg_graph_new(R->dt))) return tg_cli_fail("op", "%s", tg_last_error());
    if (!R->want_grads) tg_graph_set_grad_enabled(R->g, false);
    if (tg_op_make_inputs(R->g, op, R->t, R->ins.n, R->want_grads, R->in))
        return graph_fail(op, tg_last_error());
    if (tg_op_build(R->g, &R->call, R->in, R->ins.n, R->out, TG_OP_MAX_OUTPUTS, &R->n_out))
        return graph_fail(op, tg_graph_error(R->g));
    if (R->outs.n != R->n_out)
        return tg_cli_fail("op", "%s: expected %d --out file%s (one per output), got %d", op->name,
                           R->n_out, R->n_out == 1 ? "" : "s", R->outs.n);
    for (int j = 0; j < R->n_out; j++) {
        tg_node_keep(R->out[j]);
        if (tg_dtype_is_float(tg_node_value(R->out[j])->dtype)) R->fo[R->n_fo++] = j;
    }
    for (int i = 0; i < R->ins.n; i++)
        R->n_fi += R->t[i] && tg_op_input_differentiable(op, i, R->t[i]->dtype);
    return 0;
}

/* --grad-output #j, checked against float output j and converted to the graph's dtype. */
static int load_grad_output(op_run *R, int j)
{
    const tg_op_def *op = R->op;
    const tg_tensor *y = tg_node_value(R->out[R->fo[j]]);
    tg_tensor *raw = NULL;
    char a1[160], a2[160];
    if (tg_npy_load(R->dys.path[j], &raw))
        return tg_cli_fail("op", "%s: --grad-output #%d %s", op->name, j + 1, tg_last_error());
    if (!tg_dtype_is_float(raw->dtype) || !tg_tensor_same_shape(raw, y)) {
        int rc = tg_cli_fail("op", "%s: --grad-output #%d %s: expected a float array of the "
                             "output's shape %s, got %s %s", op->name, j + 1, R->dys.path[j],
                             tg_shape_str(y->rank, y->shape, a1, sizeof a1),
                             tg_dtype_name(raw->dtype),
                             tg_shape_str(raw->rank, raw->shape, a2, sizeof a2));
        tg_tensor_free(raw);
        return rc;
    }
    R->dy[j] = tg_tensor_new(R->dt, raw->rank, raw->shape);
    tg_status st = R->dy[j] ? tg_tensor_copy(R->dy[j], raw) : TG_ERR_NOMEM;
    tg_tensor_free(raw);
    if (st) return tg_cli_fail("op", "%s: %s", op->name, tg_last_error());
    return 0;
}

/* With --grad-output/--grad: the files counted, dy loaded, the loss node built. */
static int prepare_backward(op_run *R)
{
    const tg_op_def *op = R->op;
    const int n_fo = R->n_fo, n_fi = R->n_fi;
    if (n_fo == 0 || n_fi == 0)
        return tg_cli_fail("op", "%s: nothing to differentiate here (%s); drop --grad-output "
                           "and --grad", op->name, n_fo ? "no float input takes a gradient"
                                                        : "no float output");
    if (R->dys.n != n_fo || R->grads.n != n_fi)
        return tg_cli_fail("op", "%s: expected %d --grad-output file%s (one per float output) "
                           "and %d --grad file%s (one per float input), got %d and %d",
                           op->name, n_fo, n_fo == 1 ? "" : "s", n_fi, n_fi == 1 ? "" : "s",
                           R->dys.n, R->grads.n);
    for (int j = 0; j < n_fo; j++) {
        int rc = load_grad_output(R, j);
        if (rc) return rc;
    }
    if (!(R->L = loss_node(R->g, R->out, R->fo, n_fo, R->dy)))
        return graph_fail(op, tg_graph_error(R->g));
    return 0;
}

/* Forward, and each output to its --out file. */
static int write_outputs(op_run *R)
{
    const tg_op_def *op = R->op;
    if (tg_graph_forward(R->g)) return graph_fail(op, tg_last_error());
    for (int j = 0; j < R->n_out; j++)
        if (tg_npy_save(R->outs.path[j], tg_node_value(R->out[j])))
            return tg_cli_fail("op", "%s: --out #%d %s: %s", op->name, j + 1, R->outs.path[j],
                               tg_last_error());
    return 0;
}

/* Backward, and each float input's gradient to its --grad file (zeros when none flowed). */
static int write_grads(op_run *R)
{
    const tg_op_def *op = R->op;
    tg_tensor *const *t = R->t;
    if (tg_graph_backward(R->g, R->L, R->n_fo == 1 ? R->dy[0] : NULL))
        return graph_fail(op, tg_last_error());
    for (int i = 0, k = 0; i < R->ins.n; i++) {
        if (!t[i] || !tg_op_input_differentiable(op, i, t[i]->dtype)) continue;
        const tg_tensor *gr = tg_node_grad(R->in[i]);
        tg_tensor *zero = gr ? NULL : tg_tensor_new(R->dt, t[i]->rank, t[i]->shape);
        tg_status st = gr || zero ? tg_npy_save(R->grads.path[k], gr ? gr : zero) : TG_ERR_NOMEM;
        tg_tensor_free(zero);
        if (st)
            return tg_cli_fail("op", "%s: --grad #%d %s: %s", op->name, k + 1, R->grads.path[k],
                               tg_last_error());
        k++;
    }
    return 0;
}

static int run(int argc, char **argv)
{
    op_run R = {0};
    if (!(R.cfg = tg_config_new())) return tg_cli_fail("op", "out of memory");
    int rc = parse_args(&R, argc, argv);
    if (!rc && !R.listed) {
        rc = find_op(&R);
        if (!rc) rc = build_graph(&R);
        if (!rc && R.want_grads) rc = prepare_backward(&R);
        if (!rc) rc = write_outputs(&R);
        if (!rc && R.want_grads) rc = write_grads(&R);
    }
    tg_graph_free(R.g);
    for (int i = 0; i < TG_OP_MAX_INPUTS; i++) tg_tensor_free(R.t[i]);
    for (int j = 0; j < TG_OP_MAX_OUTPUTS; j++) tg_tensor_free(R.dy[j]);
    if (R.call_ok) tg_op_call_free(&R.call);
    tg_config_free(R.cfg);
    return rc;
}

/* ---- help, all from the registry (ops/registry.h) ---- */

static const char usage_text[] =
    "usage: tgraph op NAME [--set ATTR=VALUE]... --input FILE.npy [--input FILE.npy]...\n"
    "                 --out FILE.npy [--out FILE.npy]...\n"
    "                 [--grad-output FILE.npy]... [--grads FILE.npy]...\n"
    "       tgraph op NAME --help     (the op's inputs, attributes and an example)\n\n"
    "Runs one op on .npy files (float32/float64, int64 indices, bool masks) and writes\n"
    "its outputs. NAME and ATTR are PyTorch's / einops' names; VALUE is an integer, a\n"
    "float (inf, -inf, nan), true/false, null (None), a list [2,3] or a string (quote\n"
    "it for the shell: --set 'equation=blhe,bshe->bhls'). The graph is float64 when any\n"
    "float input is, float32 otherwise; 0-d tensors stay 0-d.\n";

static const char usage_more[] =
    "\nOne --out or --grads may be - (stdout); an output that is one of the input files\n"
    "is refused before anything is written.\n"
    "Bad attributes, files, shapes or patterns: exit status 2 and one line on stderr.\n";

static int n_inputs(const tg_op_def *op)
{
    int n = 0;
    while (n < (int)(sizeof op->inputs / sizeof *op->inputs) && op->inputs[n].name) n++;
    return n;
}

static int n_attrs(const tg_op_def *op)
{
    int n = 0;
    while (n < TG_OP_MAX_ATTRS && op->attrs[n].name) n++;
    return n;
}

/* `tgraph op --help`: the options and every op with its summary. */
static void print_list(FILE *f)
{
    fputs(usage_text, f);
    fputs("\noptions:\n", f);
    tg_opts_print_help(f, opts, TG_OPTS_N(opts));
    fputs(usage_more, f);
    fputs("\nops (tgraph op NAME --help for one in full):\n", f);
    for (int i = 0; i < tg_op_count(); i++)
        fprintf(f, "  %-14s %s\n", tg_op_at(i)->name, tg_op_at(i)->summary);
    fputs("\nsee also: tgraph gradcheck OP [ATTR=VALUE]... (one op against central differences)\n",
          f);
}

/* `tgraph op NAME --help`: its inputs, attributes, outputs, gradient, example. */
static void print_op(FILE *f, const tg_op_def *op)
{
    int n_in = n_inputs(op), n_at = n_attrs(op);
    fprintf(f, "tgraph op %s: %s\n\ninputs (--input, in order; [optional]; ... repeats):\n",
            op->name, op->summary);
    if (!n_in) fputs("  none\n", f);
    for (int i = 0; i < n_in; i++) {
        const tg_op_input *in = &op->inputs[i];
        bool opt = i >= op->n_required, rep = op->variadic && i == n_in - 1;
        int w = (int)strlen(in->name) + (opt ? 2 : 0) + (rep ? 3 : 0);
        fprintf(f, "  %s%s%s%s%*s%s\n", opt ? "[" : "", in->name, opt ? "]" : "",
                rep ? "..." : "", w < 15 ? 16 - w : 1, "", tg_op_input_kind_name(in->kind));
    }
    fputs("attributes (--set NAME=VALUE; NAME=TYPE: required; NAME=DEFAULT: optional):\n", f);
    if (!n_at && !op->axis_lengths) fputs("  none\n", f);
    tg_keys_print(f, op->attrs, n_at, 2);
    if (op->axis_lengths) fprintf(f, "  NAME=INT%*s an axis length of the pattern\n", 16, "");
    if (op->n_out < 0) fputs("outputs: one --out per piece (decided by the attributes)\n", f);
    else fprintf(f, "outputs: %d --out file%s\n", op->n_out, op->n_out == 1 ? "" : "s");
    if (op->no_grad) fprintf(f, "gradient: none (%s)\n", op->no_grad);
    else fprintf(f, "gradient: to each float input that takes one (--grad-output/--grads)\n");
    if (op->notes) fprintf(f, "%s\n", op->notes);
    fprintf(f, "e.g. tgraph op %s\n", op->example);
}

/* main.c's --help: argv[0] is "op"; the first argument naming an op selects it. */
static void print_help(FILE *f, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const tg_op_def *op = argv[i][0] != '-' ? tg_op_find(argv[i]) : NULL;
        if (op) {
            print_op(f, op);
            return;
        }
    }
    print_list(f);
}

/* Text for roff: backslashes and dashes escaped, no control character at a
 * line's start. */
static void roff(FILE *f, const char *s)
{
    if (*s == '.' || *s == '\'') fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\') fputs("\\e", f);
        else if (*s == '-') fputs("\\-", f);
        else fputc(*s, f);
    }
}

/* `tgraph op --man`: the OPS section make puts at tools/tgraph.1's @OPS@ line
 * (build/tgraph.1, the installed page; tests/test_registry.c checks it). */
static void print_man(FILE *f)
{
    fputs(".SH OPS\n"
          "The ops of\n.B tgraph op\nand\n.BR \"tgraph gradcheck\" ,\n"
          "with their inputs (in order; [optional]; ... repeats) and attributes\n"
          "(NAME=TYPE: required; NAME=DEFAULT: optional);\n"
          ".B tgraph op NAME \\-\\-help\nexplains each attribute.\n", f);
    for (int i = 0; i < tg_op_count(); i++) {
        const tg_op_def *op = tg_op_at(i);
        int n_in = n_inputs(op), n_at = n_attrs(op);
        fputs(".TP\n.B ", f);
        roff(f, op->name);
        fputs("\n", f);
        roff(f, op->summary);
        fputs(".\n.br\ninputs: ", f);
        if (!n_in) fputs("none", f);
        for (int k = 0; k < n_in; k++) {
            bool opt = k >= op->n_required, rep = op->variadic && k == n_in - 1;
            fprintf(f, "%s%s", k ? ", " : "", opt ? "[" : "");
            roff(f, op->inputs[k].name);
            fprintf(f, "%s%s (%s)", opt ? "]" : "", rep ? "..." : "",
                    tg_op_input_kind_name(op->inputs[k].kind));
        }
        fputs("; attributes: ", f);
        if (!n_at && !op->axis_lengths) fputs("none", f);
        for (int k = 0; k < n_at; k++) {
            const tg_op_attr *a = &op->attrs[k];
            fprintf(f, "%s", k ? ", " : "");
            roff(f, a->name);
            fputs("=", f);
            roff(f, a->def ? a->def : tg_op_attr_type_name(a->type));
        }
        if (op->axis_lengths) fputs(", NAME=INT axis lengths", f);
        fputs(op->no_grad ? "; no gradient.\n" : ".\n", f);
    }
}

/* `tgraph op --markdown`: the op list as a Markdown table (for docs). */
static void print_markdown(FILE *f)
{
    fputs("| op | what (PyTorch / einops) | inputs | attributes |\n|---|---|---|---|\n", f);
    for (int i = 0; i < tg_op_count(); i++) {
        const tg_op_def *op = tg_op_at(i);
        int n_in = n_inputs(op), n_at = n_attrs(op);
        fprintf(f, "| `%s` | `%s` | ", op->name, op->summary);
        for (int k = 0; k < n_in; k++)
            fprintf(f, "%s%s%s%s%s", k ? ", " : "", k >= op->n_required ? "[" : "",
                    op->inputs[k].name, k >= op->n_required ? "]" : "",
                    op->variadic && k == n_in - 1 ? "..." : "");
        fputs(n_in ? " | " : "none | ", f);
        for (int k = 0; k < n_at; k++)
            fprintf(f, "%s`%s=%s`", k ? ", " : "", op->attrs[k].name,
                    op->attrs[k].def ? op->attrs[k].def : tg_op_attr_type_name(op->attrs[k].type));
        if (op->axis_lengths) fputs(", `NAME=INT` axis lengths", f);
        fputs(!n_at && !op->axis_lengths ? "none |\n" : " |\n", f);
    }
}

const tg_cli_cmd tg_cmd_op = {
    .name = "op",
    .summary = "run one op (einsum, softmax, topk, ...) on .npy files; write outputs and grads",
    .help = usage_text,
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .run = run,
    .print_help = print_help,
};
