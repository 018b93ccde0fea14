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

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "op", argc, argv);
    const char *name = NULL, *arg;
    file_list ins = {0}, outs = {0}, dys = {0}, grads = {0};
    tg_config *cfg = tg_config_new();
    tg_tensor *t[TG_OP_MAX_INPUTS] = {0}, *dy[TG_OP_MAX_OUTPUTS] = {0};
    tg_op_call call = {0};
    tg_graph *g = NULL;
    bool call_ok = false;
    char names[1024];
    int rc = 2;
    if (!cfg) return tg_cli_fail("op", "out of memory");
    while ((arg = tg_args_next(&a))) {
        if (!strcmp(arg, "--man") || !strcmp(arg, "--markdown")) {
            /* hidden: the op list for the man page / as Markdown */
            if (!strcmp(arg, "--man")) print_man(stdout);
            else print_markdown(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(arg, "--in")) {
            if (add_file(&a, &ins, TG_OP_MAX_INPUTS)) goto done;
        } else if (!strcmp(arg, "--out") || !strcmp(arg, "-o")) {
            if (add_file(&a, &outs, TG_OP_MAX_OUTPUTS)) goto done;
        } else if (!strcmp(arg, "--grad-output")) {
            if (add_file(&a, &dys, TG_OP_MAX_OUTPUTS)) goto done;
        } else if (!strcmp(arg, "--grad")) {
            if (add_file(&a, &grads, TG_OP_MAX_INPUTS)) goto done;
        } else if (arg[0] != '-' && !name) {
            name = arg;
        } else if (arg[0] != '-' && strchr(arg, '=')) {
            if (tg_config_set(cfg, arg)) {
                rc = tg_cli_fail("op", "%s: attribute %s", name, tg_last_error());
                goto done;
            }
        } else {
            rc = tg_cli_unknown(&a, arg);
            goto done;
        }
    }
    tg_op_names(names, sizeof names);
    if (check_files(&ins, &dys, &outs, &grads)) goto done;
    if (!name) {
        rc = tg_cli_fail("op", "missing NAME (ops: %s; see tgraph op --help)", names);
        goto done;
    }
    const tg_op_def *op = tg_op_find(name);
    if (!op) {
        rc = tg_cli_fail("op", "unknown op '%s' (ops: %s)", name, names);
        goto done;
    }
    if (tg_op_call_init(&call, op, cfg)) {
        rc = tg_cli_fail("op", "%s", tg_last_error());
        goto done;
    }
    call_ok = true;
    if (load_inputs(op, &ins, t)) goto done;
    bool want_grads = dys.n || grads.n;
    tg_dtype dt = TG_F32;   /* float64 when any float input is */
    for (int i = 0; i < ins.n; i++)
        if (t[i] && t[i]->dtype == TG_F64) dt = TG_F64;
    if (!(g = tg_graph_new(dt))) {
        rc = tg_cli_fail("op", "%s", tg_last_error());
        goto done;
    }
    if (!want_grads) tg_graph_set_grad_enabled(g, false);
    tg_node *in[TG_OP_MAX_INPUTS] = {0}, *out[TG_OP_MAX_OUTPUTS] = {0};
    int n_out = 0;
    if (tg_op_make_inputs(g, op, t, ins.n, want_grads, in)) {
        rc = graph_fail(op, tg_last_error());
        goto done;
    }
    if (tg_op_build(g, &call, in, ins.n, out, TG_OP_MAX_OUTPUTS, &n_out)) {
        rc = graph_fail(op, tg_graph_error(g));
        goto done;
    }
    if (outs.n != n_out) {
        rc = tg_cli_fail("op", "%s: expected %d --out file%s (one per output), got %d", op->name,
                         n_out, n_out == 1 ? "" : "s", outs.n);
        goto done;
    }
    int fo[TG_OP_MAX_OUTPUTS], n_fo = 0, n_fi = 0;   /* float outputs; float inputs with grads */
    for (int j = 0; j < n_out; j++) {
        tg_node_keep(out[j]);
        if (tg_dtype_is_float(tg_node_value(out[j])->dtype)) fo[n_fo++] = j;
    }
    for (int i = 0; i < ins.n; i++) n_fi += t[i] && tg_op_input_differentiable(op, i, t[i]->dtype);
    tg_node *L = NULL;
    if (want_grads) {
        if (n_fo == 0 || n_fi == 0) {
            rc = tg_cli_fail("op", "%s: nothing to differentiate here (%s); drop --grad-output "
                             "and --grad", op->name, n_fo ? "no float input takes a gradient"
                                                          : "no float output");
            goto done;
        }
        if (dys.n != n_fo || grads.n != n_fi) {
            rc = tg_cli_fail("op", "%s: expected %d --grad-output file%s (one per float output) "
                             "and %d --grad file%s (one per float input), got %d and %d",
                             op->name, n_fo, n_fo == 1 ? "" : "s", n_fi, n_fi == 1 ? "" : "s",
                             dys.n, grads.n);
            goto done;
        }
        for (int j = 0; j < n_fo; j++) {
            const tg_tensor *y = tg_node_value(out[fo[j]]);
            tg_tensor *raw = NULL;
            char a1[160], a2[160];
            if (tg_npy_load(dys.path[j], &raw)) {
                rc = tg_cli_fail("op", "%s: --grad-output #%d %s", op->name, j + 1,
                                 tg_last_error());
                goto done;
            }
            if (!tg_dtype_is_float(raw->dtype) || !tg_tensor_same_shape(raw, y)) {
                rc = tg_cli_fail("op", "%s: --grad-output #%d %s: expected a float array of the "
                                 "output's shape %s, got %s %s", op->name, j + 1, dys.path[j],
                                 tg_shape_str(y->rank, y->shape, a1, sizeof a1),
                                 tg_dtype_name(raw->dtype),
                                 tg_shape_str(raw->rank, raw->shape, a2, sizeof a2));
                tg_tensor_free(raw);
                goto done;
            }
            dy[j] = tg_tensor_new(dt, raw->rank, raw->shape);
            tg_status st = dy[j] ? tg_tensor_copy(dy[j], raw) : TG_ERR_NOMEM;
            tg_tensor_free(raw);
            if (st) {
                rc = tg_cli_fail("op", "%s: %s", op->name, tg_last_error());
                goto done;
            }
        }
        if (!(L = loss_node(g, out, fo, n_fo, dy))) {
            rc = graph_fail(op, tg_graph_error(g));
            goto done;
        }
    }
    if (tg_graph_forward(g)) {
        rc = graph_fail(op, tg_last_error());
        goto done;
    }
    for (int j = 0; j < n_out; j++)
        if (tg_npy_save(outs.path[j], tg_node_value(out[j]))) {
            rc = tg_cli_fail("op", "%s: --out #%d %s: %s", op->name, j + 1, outs.path[j],
                             tg_last_error());
            goto done;
        }
    if (want_grads) {
        if (tg_graph_backward(g, L, n_fo == 1 ? dy[0] : NULL)) {
            rc = graph_fail(op, tg_last_error());
            goto done;
        }
        for (int i = 0, k = 0; i < ins.n; i++) {
            if (!t[i] || !tg_op_input_differentiable(op, i, t[i]->dtype)) continue;
            const tg_tensor *gr = tg_node_grad(in[i]);
            tg_tensor *zero = gr ? NULL : tg_tensor_new(dt, t[i]->rank, t[i]->shape);
            tg_status st = gr || zero ? tg_npy_save(grads.path[k], gr ? gr : zero) : TG_ERR_NOMEM;
            tg_tensor_free(zero);
            if (st) {
                rc = tg_cli_fail("op", "%s: --grad #%d %s: %s", op->name, k + 1, grads.path[k],
                                 tg_last_error());
                goto done;
            }
            k++;
        }
    }
    rc = 0;
done:
    tg_graph_free(g);
    for (int i = 0; i < TG_OP_MAX_INPUTS; i++) tg_tensor_free(t[i]);
    for (int j = 0; j < TG_OP_MAX_OUTPUTS; j++) tg_tensor_free(dy[j]);
    if (call_ok) tg_op_call_free(&call);
    tg_config_free(cfg);
    return rc;
}

/* ---- help, all from the registry (ops/registry.h) ---- */

static const char usage_text[] =
    "usage: tgraph op NAME [ATTR=VALUE]... --in FILE.npy [--in FILE.npy]...\n"
    "                 --out FILE.npy [--out FILE.npy]...\n"
    "                 [--grad-output FILE.npy]... [--grad FILE.npy]...\n"
    "       tgraph op NAME --help     (the op's inputs, attributes and an example)\n\n"
    "Runs one op on .npy files (float32/float64, int64 indices, bool masks) and writes\n"
    "its outputs. NAME and ATTR are PyTorch's / einops' names; VALUE is an integer, a\n"
    "float (inf, -inf, nan), true/false, null (None), a list [2,3] or a string (quote\n"
    "it for the shell: 'equation=blhe,bshe->bhls'). The graph is float64 when any float\n"
    "input is, float32 otherwise; 0-d tensors stay 0-d.\n"
    "  --in           the tensor arguments in PyTorch's positional order; 'null' stands\n"
    "                 for an omitted optional one (layer_norm x null bias)\n"
    "  --out          the outputs in order (topk: values, then int64 indices; split: each\n"
    "                 piece)\n"
    "  --grad-output  dy for each float output, in order; then\n"
    "  --grad         receives d sum(out * dy) for each float input that takes a\n"
    "                 gradient, in order (mse_loss: both; cross_entropy: not weight)\n"
    "One --out or --grad may be - (stdout); an output that is one of the input files\n"
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
    fprintf(f, "tgraph op %s: %s\n\ninputs (--in, in order; [optional]; ... repeats):\n",
            op->name, op->summary);
    if (!n_in) fputs("  none\n", f);
    for (int i = 0; i < n_in; i++) {
        const tg_op_input *in = &op->inputs[i];
        bool opt = i >= op->n_required, rep = op->variadic && i == n_in - 1;
        int w = (int)strlen(in->name) + (opt ? 2 : 0) + (rep ? 3 : 0);
        fprintf(f, "  %s%s%s%s%*s%s\n", opt ? "[" : "", in->name, opt ? "]" : "",
                rep ? "..." : "", w < 15 ? 16 - w : 1, "", tg_op_input_kind_name(in->kind));
    }
    fputs("attributes (NAME=TYPE: required; NAME=DEFAULT: optional):\n", f);
    if (!n_at && !op->axis_lengths) fputs("  none\n", f);
    tg_keys_print(f, op->attrs, n_at, 2);
    if (op->axis_lengths) fprintf(f, "  NAME=INT%*s an axis length of the pattern\n", 16, "");
    if (op->n_out < 0) fputs("outputs: one --out per piece (decided by the attributes)\n", f);
    else fprintf(f, "outputs: %d --out file%s\n", op->n_out, op->n_out == 1 ? "" : "s");
    if (op->no_grad) fprintf(f, "gradient: none (%s)\n", op->no_grad);
    else fprintf(f, "gradient: to each float input that takes one (--grad-output/--grad)\n");
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
    .run = run,
    .print_help = print_help,
};
