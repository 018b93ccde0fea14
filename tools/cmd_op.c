/*
 * cmd_op.c - `tgraph op`: one op (tools/op_table.h) on .npy files, with its
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
#include "tgraph.h"

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
        if (!strcmp(arg, "--in")) {
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

/* The help lists every op of tools/op_table.c with its attributes, defaults,
 * inputs and example (tests/test_cli_op.c checks that every op and attribute
 * of the table appears). That takes more than the 4095 bytes C guarantees for
 * one string literal; GCC and Clang take any length (__extension__ says so to
 * -pedantic). */
#if defined(__GNUC__)
#define LONG_STRING __extension__
#else
#define LONG_STRING
#endif

const tg_cli_cmd tg_cmd_op = {
    .name = "op",
    .summary = "run one op (einsum, softmax, topk, ...) on .npy files; write outputs and grads",
    .help = LONG_STRING
        "usage: tgraph op NAME [ATTR=VALUE]... --in FILE.npy [--in FILE.npy]...\n"
        "                 --out FILE.npy [--out FILE.npy]...\n"
        "                 [--grad-output FILE.npy]... [--grad FILE.npy]...\n\n"
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
        "Bad attributes, files, shapes or patterns: exit status 2 and one line on stderr.\n\n"
        "ops (ATTR=TYPE: required; ATTR=value: the default; [optional input]; ... repeats):\n"
        "  einsum         torch.einsum(equation, *operands)\n"
        "       equation=STR\n"
        "       --in: operands...\n"
        "       e.g. tgraph op einsum 'equation=blhe,bshe->bhls' --in q.npy --in k.npy --out"
        " s.npy\n"
        "  softmax        torch.softmax(input, dim)\n"
        "       dim=INT\n"
        "       --in: input\n"
        "       e.g. tgraph op softmax dim=-1 --in x.npy --out y.npy --grad-output dy.npy --grad"
        " dx.npy\n"
        "  log_softmax    torch.log_softmax(input, dim)\n"
        "       dim=INT\n"
        "       --in: input\n"
        "       e.g. tgraph op log_softmax dim=1 --in x.npy --out y.npy\n"
        "  softmax_scaled softmax(scale * input, dim) in one op (tgraph)\n"
        "       dim=INT, scale=FLOAT\n"
        "       --in: input\n"
        "       e.g. tgraph op softmax_scaled dim=-1 scale=0.125 --in x.npy --out y.npy\n"
        "  sdpa           F.scaled_dot_product_attention on [B, L, H, E] (TSL's layout; tgraph)\n"
        "       is_causal=false, scale=null (1/sqrt(E)), dropout_p=0.0, seed=0\n"
        "       --in: query [B, L, H, E], key [B, S, H, E], value [B, S, H, D] -> [B, L, H, D]\n"
        "       is_causal needs L == S. dropout_p > 0 drops attention weights on every run, as\n"
        "       PyTorch's function does (there is no eval mode here); seed= seeds the mask\n"
        "       e.g. tgraph op sdpa is_causal=true --in q.npy --in k.npy --in v.npy --out y.npy\n"
        "  topk           torch.topk(input, k, dim, largest, sorted) -> values, int64 indices\n"
        "       k=INT, dim=-1, largest=true, sorted=true\n"
        "       --in: input\n"
        "       e.g. tgraph op topk k=3 dim=-1 --in x.npy --out values.npy --out indices.npy\n"
        "  gather         torch.gather(input, dim, index)\n"
        "       dim=INT\n"
        "       --in: input, index (int64)\n"
        "       e.g. tgraph op gather dim=1 --in x.npy --in i.npy --out y.npy\n"
        "  scatter        torch.scatter(input, dim, index, src) or (input, dim, index, value=)\n"
        "       dim=INT, value=null\n"
        "       --in: input, index (int64), [src]\n"
        "       e.g. tgraph op scatter dim=0 --in x.npy --in i.npy --in src.npy --out y.npy\n"
        "  scatter_add    torch.scatter_add(input, dim, index, src)\n"
        "       dim=INT\n"
        "       --in: input, index (int64), src\n"
        "       e.g. tgraph op scatter_add dim=0 --in x.npy --in i.npy --in src.npy --out y.npy\n"
        "  rearrange      einops.rearrange(tensor, pattern, **axes_lengths)\n"
        "       pattern=STR, NAME=INT axis lengths\n"
        "       --in: tensor (any dtype)\n"
        "       e.g. tgraph op rearrange 'pattern=(b ts_d) seg d -> b ts_d seg d' b=2 --in x.npy"
        " --out y.npy\n"
        "  repeat         einops.repeat(tensor, pattern, **axes_lengths)\n"
        "       pattern=STR, NAME=INT axis lengths\n"
        "       --in: tensor (any dtype)\n"
        "       e.g. tgraph op repeat 'pattern=seg f d -> (repeat seg) f d' repeat=2 --in x.npy"
        " --out y.npy\n"
        "  reduce         einops.reduce(tensor, pattern, reduction, **axes_lengths)\n"
        "       pattern=STR, reduction=STR, NAME=INT axis lengths\n"
        "       --in: tensor\n"
        "       e.g. tgraph op reduce 'pattern=b (h 2) w -> b h' reduction=max --in x.npy --out"
        " y.npy\n"
        "  linear         F.linear(input, weight, bias=None)\n"
        "       no attributes\n"
        "       --in: input, weight, [bias]\n"
        "       e.g. tgraph op linear --in x.npy --in w.npy --in b.npy --out y.npy\n"
        "  layer_norm     F.layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)\n"
        "       normalized_shape=[INT,...], eps=1e-5\n"
        "       --in: input, [weight], [bias]\n"
        "       e.g. tgraph op layer_norm normalized_shape=[8] --in x.npy --in w.npy --in b.npy"
        " --out y.npy\n"
        "  gelu           F.gelu(input, approximate='none')\n"
        "       approximate=none\n"
        "       --in: input\n"
        "       e.g. tgraph op gelu approximate=tanh --in x.npy --out y.npy\n"
        "  relu           torch.relu(input)\n"
        "       no attributes\n"
        "       --in: input\n"
        "       e.g. tgraph op relu --in x.npy --out y.npy\n"
        "  dropout        F.dropout(input, p=0.5, training=True); seed= seeds the mask (tgraph)\n"
        "       p=0.5, training=true, seed=0\n"
        "       --in: input\n"
        "       e.g. tgraph op dropout p=0.1 seed=7 --in x.npy --out y.npy\n"
        "  masked_fill    Tensor.masked_fill(mask, value); value= or a 0-d value tensor\n"
        "       value=null\n"
        "       --in: input, mask (bool), [value]\n"
        "       e.g. tgraph op masked_fill value=-inf --in x.npy --in mask.npy --out y.npy\n"
        "  causal_mask    TriangularCausalMask(B, L): bool [B, 1, L, L], true where s > l"
        " (tgraph)\n"
        "       B=INT, L=INT\n"
        "       --in: none\n"
        "       e.g. tgraph op causal_mask B=2 L=4 --out mask.npy\n"
        "  mse_loss       F.mse_loss(input, target, reduction='mean')\n"
        "       reduction=mean\n"
        "       --in: input, target\n"
        "       e.g. tgraph op mse_loss reduction=sum --in y.npy --in t.npy --out loss.npy\n"
        "  cross_entropy  F.cross_entropy(input, target, weight=None, ...) on logits\n"
        "       ignore_index=-100, reduction=mean, label_smoothing=0.0\n"
        "       --in: input, target (int64 or float), [weight (float, no grad)]\n"
        "       e.g. tgraph op cross_entropy label_smoothing=0.1 --in x.npy --in target.npy --out"
        " loss.npy\n"
        "  cat            torch.cat(tensors, dim=0) (also: concat)\n"
        "       dim=0\n"
        "       --in: tensors (any dtype)...\n"
        "       e.g. tgraph op cat dim=-1 --in a.npy --in b.npy --out y.npy\n"
        "  split          torch.split(tensor, split_size_or_sections, dim=0) -> one --out per"
        " piece\n"
        "       split_size_or_sections=[INT,...], dim=0\n"
        "       --in: tensor (any dtype)\n"
        "       e.g. tgraph op split split_size_or_sections=[2,5] dim=-1 --in x.npy --out a.npy"
        " --out b.npy\n"
        "  narrow         torch.narrow(input, dim, start, length)\n"
        "       dim=INT, start=INT, length=INT\n"
        "       --in: input (any dtype)\n"
        "       e.g. tgraph op narrow dim=1 start=1 length=3 --in x.npy --out y.npy\n"
        "  slice          input[..., start:end:step] along dim (aten::slice)\n"
        "       dim=0, start=null, end=null, step=1\n"
        "       --in: input (any dtype)\n"
        "       e.g. tgraph op slice dim=1 start=1 end=8 step=3 --in x.npy --out y.npy\n"
        "  index_select   torch.index_select(input, dim, index)\n"
        "       dim=INT\n"
        "       --in: input (any dtype), index (int64)\n"
        "       e.g. tgraph op index_select dim=0 --in x.npy --in i.npy --out y.npy\n"
        "  exp            torch.exp(input)\n"
        "       no attributes\n"
        "       --in: input\n"
        "       e.g. tgraph op exp --in x.npy --out y.npy\n"
        "  log            torch.log(input)\n"
        "       no attributes\n"
        "       --in: input\n"
        "       e.g. tgraph op log --in x.npy --out y.npy\n"
        "  sqrt           torch.sqrt(input)\n"
        "       no attributes\n"
        "       --in: input\n"
        "       e.g. tgraph op sqrt --in x.npy --out y.npy\n"
        "  square         torch.square(input)\n"
        "       no attributes\n"
        "       --in: input\n"
        "       e.g. tgraph op square --in x.npy --out y.npy\n"
        "  neg            torch.neg(input)\n"
        "       no attributes\n"
        "       --in: input\n"
        "       e.g. tgraph op neg --in x.npy --out y.npy\n"
        "  scale          scale * input (tgraph)\n"
        "       scale=FLOAT\n"
        "       --in: input\n"
        "       e.g. tgraph op scale scale=2.5 --in x.npy --out y.npy\n"
        "  add            torch.add(input, other, alpha=1); other a tensor or a number\n"
        "       other=null, alpha=1\n"
        "       --in: input, [other]\n"
        "       e.g. tgraph op add --in a.npy --in b.npy --out y.npy\n"
        "  sub            torch.sub(input, other, alpha=1); other a tensor or a number\n"
        "       other=null, alpha=1\n"
        "       --in: input, [other]\n"
        "       e.g. tgraph op sub alpha=2 --in a.npy --in b.npy --out y.npy\n"
        "  mul            torch.mul(input, other); other a tensor or a number\n"
        "       other=null\n"
        "       --in: input, [other]\n"
        "       e.g. tgraph op mul other=2.5 --in x.npy --out y.npy\n"
        "  div            torch.div(input, other); other a tensor or a number\n"
        "       other=null\n"
        "       --in: input, [other]\n"
        "       e.g. tgraph op div --in a.npy --in b.npy --out y.npy\n"
        "  sum            torch.sum(input, dim=None, keepdim=False)\n"
        "       dim=null, keepdim=false\n"
        "       --in: input\n"
        "       e.g. tgraph op sum dim=[0,2] --in x.npy --out y.npy\n"
        "  mean           torch.mean(input, dim=None, keepdim=False)\n"
        "       dim=null, keepdim=false\n"
        "       --in: input\n"
        "       e.g. tgraph op mean dim=1 keepdim=true --in x.npy --out y.npy\n"
        "  permute        torch.permute(input, dims)\n"
        "       dims=[INT,...]\n"
        "       --in: input (any dtype)\n"
        "       e.g. tgraph op permute dims=[2,0,1] --in x.npy --out y.npy\n"
        "  transpose      torch.transpose(input, dim0, dim1)\n"
        "       dim0=INT, dim1=INT\n"
        "       --in: input (any dtype)\n"
        "       e.g. tgraph op transpose dim0=0 dim1=1 --in x.npy --out y.npy\n"
        "  reshape        torch.reshape(input, shape); one dim may be -1\n"
        "       shape=[INT,...]\n"
        "       --in: input (any dtype)\n"
        "       e.g. tgraph op reshape shape=[-1,5,8] --in x.npy --out y.npy\n"
        "\nsee also: tgraph gradcheck OP [ATTR=VALUE]... (one op against central differences)\n",
    .run = run,
};
