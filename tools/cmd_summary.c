/*
 * cmd_summary.c - `tgraph summary`: a layer's modules as a table, the way
 * torchinfo's summary() prints a PyTorch model: one row per module scope down
 * to a depth, with its output shape, parameter count, forward FLOPs, its
 * memory (bytes of its parameters, their gradients and Adam's two moments,
 * the bytes its ops keep, and the most the plan holds while its ops run
 * forward and backward: tg_graph_plan_live_bytes) and with --profile its
 * forward and backward time per training step, then the totals: parameters,
 * gradients, Adam's state and the plan add up to what `tgraph bench`
 * measures (train_peak_alloc_mb). FLOPs follow engine/cost.h (2 per multiply-add).
 * Not a benchmark: --profile times a few steps, for proportions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "cost_cli.h"
#include "layer_cli.h"
#include "outputs.h"

enum { F_TEXT, F_CSV, F_MARKDOWN };

typedef struct {
    const char *layer, *out;
    tg_config  *cfg;
    int         depth, steps, format;
    bool        profile;
} sum_req;

typedef struct {
    int     scope, depth;   /* depth below the layer (0: the layer itself) */
    char    shape[96];      /* its output's */
    int64_t params;
    tg_cost cost;           /* times per step */
    double  param_bytes;    /* its parameters' values; their gradients take as many, Adam twice */
    double  peak_fwd, peak_bwd;   /* the plan's most live bytes while its ops run; < 0: no plan */
} sum_row;

typedef struct {
    const sum_req *R;
    tg_cli_layer   c;
    tg_cli_steps   st;
    sum_row       *rows;
    int            n_rows, base;
    int64_t        params, trainable;
    double         param_bytes;  /* every parameter's value (gradients as many, Adam twice) */
    double         buffer_bytes; /* the buffers' (BatchNorm's running statistics): no gradient */
    double         leaf_bytes;   /* the values of inputs and constants (outside the plan) */
    double         planned;      /* < 0: the plan is over the memory left (plan_error) */
    char           plan_error[320];
    int64_t        limit;        /* counts_only: the memory it would not fit in */
    const char    *limit_source;
    bool           counts_only;  /* too large to build: the totals of parameters alone */
} summary;

/* The shape of scope s's output: its last op whose value is read outside s,
 * or by nothing. */
static void scope_output(const tg_graph *g, int s, char *buf, size_t len)
{
    int n = tg_graph_node_count(g), last = -1;
    for (int i = 0; i < n; i++) {
        const tg_node *nd = tg_graph_node(g, i);
        bool inside = tg_cli_scope_within(g, nd->scope, s);
        for (int k = 0; k < nd->n_in; k++) {
            const tg_node *a = nd->in[k];
            if (!inside && a->kind == TG_NODE_OP && tg_cli_scope_within(g, a->scope, s) &&
                a->id > last)
                last = a->id;
        }
    }
    for (int i = n - 1; i > last; i--) {   /* outputs: read by nothing */
        const tg_node *nd = tg_graph_node(g, i);
        bool read = false;
        for (int j = i + 1; j < n && !read; j++)
            for (int k = 0; k < tg_graph_node(g, j)->n_in; k++) read |= tg_graph_node(g, j)->in[k] == nd;
        if (nd->kind == TG_NODE_OP && !read && tg_cli_scope_within(g, nd->scope, s)) {
            last = i;
            break;
        }
    }
    if (last < 0) snprintf(buf, len, "-");
    else tg_shape_str(tg_node_value(tg_graph_node(g, last))->rank,
                      tg_node_value(tg_graph_node(g, last))->shape, buf, len);
}

/* Scope s's memory: its parameters' bytes and, when planned, the most the
 * plan holds during its ops' forwards (t = i) and backwards (t = 2N - i). */
static void scope_memory(const summary *S, int s, sum_row *r)
{
    const tg_graph *g = S->c.g;
    const int64_t N = tg_graph_node_count(g);
    r->peak_fwd = r->peak_bwd = S->planned < 0 ? -1 : 0;
    for (int64_t i = 0; i < N; i++) {
        const tg_node *nd = tg_graph_node(g, (int)i);
        if (!tg_cli_scope_within(g, nd->scope, s)) continue;
        if (nd->kind == TG_NODE_PARAM && !(nd->param && nd->param->buffer))   /* buffers apart */
            r->param_bytes += (double)nd->value.numel * (double)tg_dtype_size(nd->value.dtype);
        if (nd->kind != TG_NODE_OP || S->planned < 0) continue;
        double f = (double)tg_graph_plan_live_bytes(g, i);
        double b = (double)tg_graph_plan_live_bytes(g, 2 * N - i);
        if (f > r->peak_fwd) r->peak_fwd = f;
        if (b > r->peak_bwd) r->peak_bwd = b;
    }
}

/* Scope s and, down to the depth asked, its children, in order (depth-first). */
static int add_rows(summary *S, int s, int depth)
{
    const tg_graph *g = S->c.g;
    tg_cost cost;
    tg_graph_scope_cost(g, s, &cost);
    int64_t params = tg_cli_scope_params(g, s);
    if (depth > 0 && cost.ops == 0 && params == 0) return 0;   /* constants only */
    sum_row *r = &S->rows[S->n_rows++];
    *r = (sum_row){.scope = s, .depth = depth, .params = params, .cost = cost};
    if (S->st.steps) r->cost.forward_s /= S->st.steps, r->cost.backward_s /= S->st.steps;
    scope_output(g, s, r->shape, sizeof r->shape);
    scope_memory(S, s, r);
    if (depth >= S->R->depth) return 0;
    for (int k = s + 1; k < tg_graph_scope_count(g); k++)
        if (tg_graph_scope_parent(g, k) == s) add_rows(S, k, depth + 1);
    return 0;
}

/* "11,301,400" */
static void fmt_count(int64_t v, char *buf, size_t len)
{
    char d[32];
    int n = snprintf(d, sizeof d, "%lld", (long long)v), at = 0;
    for (int i = 0; i < n && at + 2 < (int)len; i++) {
        if (i && (n - i) % 3 == 0 && d[i - 1] != '-') buf[at++] = ',';
        buf[at++] = d[i];
    }
    buf[at] = '\0';
}

/* A row's name: the layer's for the top row, else the scope's dotted path
 * below the layer (markdown, CSV) or its own name (text, indented). */
static const char *row_name(const summary *S, const sum_row *r, bool path)
{
    if (r->depth == 0) return S->R->layer;
    const char *p = tg_graph_scope_path(S->c.g, r->scope);
    size_t skip = S->base ? strlen(tg_graph_scope_path(S->c.g, S->base)) + 1 : 0;
    return path ? p + skip : tg_graph_scope_name(S->c.g, r->scope);
}

/* Bytes as a cell: "-" when unknown (< 0). */
static void fmt_bytes_cell(double v, char *buf, size_t len)
{
    if (v < 0) snprintf(buf, len, "-");
    else tg_cli_fmt_bytes(v, buf, len);
}

enum { N_CELLS = 11 };   /* the columns after the name */

/* The cells of a row (name apart): shape, params, FLOPs, parameter,
 * gradient and Adam bytes, kept, peak forward, peak backward, fwd ms, bwd ms. */
static void row_cells(const sum_row *r, char cell[N_CELLS][96])
{
    snprintf(cell[0], 96, "%s", r->shape);
    fmt_count(r->params, cell[1], 96);
    tg_cli_fmt_flops(r->cost.flops, cell[2], 96);
    tg_cli_fmt_bytes(r->param_bytes, cell[3], 96);
    tg_cli_fmt_bytes(r->param_bytes, cell[4], 96);
    tg_cli_fmt_bytes(2 * r->param_bytes, cell[5], 96);
    tg_cli_fmt_bytes(r->cost.bytes, cell[6], 96);
    fmt_bytes_cell(r->peak_fwd, cell[7], 96);
    fmt_bytes_cell(r->peak_bwd, cell[8], 96);
    snprintf(cell[9], 96, "%.3f", 1e3 * r->cost.forward_s);
    snprintf(cell[10], 96, "%.3f", 1e3 * r->cost.backward_s);
}

static const char *const heads[N_CELLS + 1] = {
    "Module", "Output shape", "Params", "FLOPs fwd", "Params B", "Grads B", "Adam B", "Kept",
    "Peak fwd", "Peak bwd", "Forward ms", "Backward ms"};

static void print_text_table(const summary *S, FILE *f, int ncol)
{
    int w[N_CELLS + 1] = {0};
    char cell[N_CELLS][96];
    for (int c = 0; c < ncol; c++) w[c] = (int)strlen(heads[c]);
    for (int i = 0; i < S->n_rows; i++) {
        const sum_row *r = &S->rows[i];
        int nl = 2 * r->depth + (int)strlen(row_name(S, r, false));
        if (nl > w[0]) w[0] = nl;
        row_cells(r, cell);
        for (int c = 1; c < ncol; c++)
            if ((int)strlen(cell[c - 1]) > w[c]) w[c] = (int)strlen(cell[c - 1]);
    }
    int total = 0;
    for (int c = 0; c < ncol; c++) total += w[c] + (c ? 2 : 0);
    fprintf(f, "%.*s\n%-*s", total, "=============================================================="
            "============================================================================", w[0],
            heads[0]);
    for (int c = 1; c < ncol; c++) fprintf(f, "  %*s", w[c], heads[c]);
    fprintf(f, "\n%.*s\n", total, "=================================================================="
            "========================================================================");
    for (int i = 0; i < S->n_rows; i++) {
        const sum_row *r = &S->rows[i];
        row_cells(r, cell);
        fprintf(f, "%*s%-*s", 2 * r->depth, "", w[0] - 2 * r->depth, row_name(S, r, false));
        for (int c = 1; c < ncol; c++) fprintf(f, "  %*s", w[c], cell[c - 1]);
        fprintf(f, "\n");
    }
    fprintf(f, "%.*s\n", total, "======================================================================"
            "====================================================================");
}

/* The training step's memory, the sum of the per-module columns' totals. */
static void print_memory_total(const summary *S, FILE *f, const char *pre)
{
    char t[48], p[48], a[48], l[48], pl[48], bu[64] = "";
    /* values, gradients, Adam's two moments, buffers, inputs */
    double known = 4 * S->param_bytes + S->buffer_bytes + S->leaf_bytes;
    if (S->buffer_bytes > 0) {
        char v[48];
        tg_cli_fmt_bytes(S->buffer_bytes, v, sizeof v);
        snprintf(bu, sizeof bu, " + buffers %s", v);
    }
    tg_cli_fmt_bytes(S->param_bytes, p, sizeof p);
    tg_cli_fmt_bytes(2 * S->param_bytes, a, sizeof a);
    tg_cli_fmt_bytes(S->leaf_bytes, l, sizeof l);
    tg_cli_fmt_bytes(S->planned < 0 ? known : known + S->planned, t, sizeof t);
    tg_cli_fmt_bytes(S->planned, pl, sizeof pl);
    fprintf(f, "%sTraining step's memory%s: %s = parameters %s + gradients %s + Adam state %s "
            "(2 moments a parameter, tgraph train's default optimizer)%s + inputs %s%s%s%s\n",
            pre, S->planned < 0 ? " without the plan" : "", t, p, p, a, bu, l,
            S->planned < 0 ? "" : " + the plan ", S->planned < 0 ? "" : pl,
            S->planned < 0 ? "" : " (tgraph bench measures it as train_peak_alloc_mb, with "
            "the graph's bookkeeping)");
}

/* The totals, one per line (prefix "" for text, "- " for markdown). */
static void print_totals(const summary *S, FILE *f, const char *pre)
{
    char a[48], b[48], c[48];
    const tg_cost *top = &S->rows[0].cost;
    fmt_count(S->params, a, sizeof a);
    fmt_count(S->trainable, b, sizeof b);
    tg_cli_fmt_bytes(4.0 * (double)S->params, c, sizeof c);
    fprintf(f, "%sParameters: %s (trainable %s), %s as float32\n", pre, a, b, c);
    if (S->planned < 0) {
        fprintf(f, "%sTraining step's planned memory: not planned: %s\n", pre, S->plan_error);
    } else {
        tg_cli_fmt_bytes(S->planned, a, sizeof a);
        tg_cli_fmt_bytes(S->rows[0].peak_fwd, b, sizeof b);
        tg_cli_fmt_bytes(S->rows[0].peak_bwd, c, sizeof c);
        fprintf(f, "%sTraining step's planned memory: %s (values, gradients, saved buffers and "
                "scratch; parameters and optimizer state apart); at most %s of it live in the "
                "forward, %s in the backward\n", pre, a, b, c);
    }
    print_memory_total(S, f, pre);
    tg_cli_fmt_flops(top->flops, a, sizeof a);
    tg_cli_fmt_flops(3 * top->flops, b, sizeof b);
    fprintf(f, "%sFLOPs per step: forward %s; forward + backward %s (backward counted as twice "
            "the forward; 2 FLOPs per multiply-add)\n", pre, a, b);
    if (S->st.steps)
        fprintf(f, "%sTraining step: %.3f ms = forward %.3f + backward %.3f (mean of %d after a "
                "warm-up)\n", pre, 1e3 * S->st.step_s, 1e3 * S->st.forward_s,
                1e3 * S->st.backward_s, S->st.steps);
}

static void print_markdown(const summary *S, FILE *f, int ncol)
{
    char cell[N_CELLS][96];
    for (int c = 0; c < ncol; c++) fprintf(f, "| %s ", heads[c]);
    fprintf(f, "|\n|---");
    for (int c = 1; c < ncol; c++) fprintf(f, "|---:");
    fprintf(f, "|\n");
    for (int i = 0; i < S->n_rows; i++) {
        row_cells(&S->rows[i], cell);
        fprintf(f, "| %s%s%s ", S->rows[i].depth ? "" : "**", row_name(S, &S->rows[i], true),
                S->rows[i].depth ? "" : "**");
        for (int c = 1; c < ncol; c++) fprintf(f, "| %s ", cell[c - 1]);
        fprintf(f, "|\n");
    }
    fprintf(f, "\n");
    print_totals(S, f, "- ");
}

static void print_csv(const summary *S, FILE *f)
{
    fprintf(f, "module,depth,output_shape,params,flops,bytes_kept,param_bytes,grad_bytes,"
            "adam_bytes,peak_forward_bytes,peak_backward_bytes%s\n",
            S->st.steps ? ",forward_ms,backward_ms" : "");
    for (int i = 0; i < S->n_rows; i++) {
        const sum_row *r = &S->rows[i];
        fprintf(f, "%s,%d,\"%s\",%lld,%.0f,%.0f,%.0f,%.0f,%.0f,", row_name(S, r, true), r->depth,
                r->shape, (long long)r->params, r->cost.flops, r->cost.bytes, r->param_bytes,
                r->param_bytes, 2 * r->param_bytes);
        if (r->peak_fwd >= 0) fprintf(f, "%.0f,%.0f", r->peak_fwd, r->peak_bwd);
        else fprintf(f, ",");   /* not planned: empty */
        if (S->st.steps) fprintf(f, ",%.6f,%.6f", 1e3 * r->cost.forward_s, 1e3 * r->cost.backward_s);
        fprintf(f, "\n");
    }
}

/* A model too large to build here: its parameter counts, from the shapes. */
static void print_counts_only(const summary *S, FILE *f)
{
    char a[48], b[48], c[48], d[48];
    fmt_count(S->params, a, sizeof a);
    fmt_count(S->trainable, b, sizeof b);
    tg_cli_fmt_bytes(4.0 * (double)S->params, c, sizeof c);
    tg_cli_fmt_bytes((double)S->limit, d, sizeof d);
    if (S->R->format == F_CSV) {
        fprintf(f, "module,params,trainable,bytes_float32\n%s,%lld,%lld,%.0f\n", S->R->layer,
                (long long)S->params, (long long)S->trainable, 4.0 * (double)S->params);
        return;
    }
    const char *pre = S->R->format == F_MARKDOWN ? "- " : "";
    fprintf(f, "%s%s\n%sParameters: %s (trainable %s), %s as float32\n", pre, S->R->layer, pre, a,
            b, c);
    fprintf(f, "%sNo module table: the model's values and gradients would not fit in the %s "
            "available (%s), so it was not built\n", pre, d, S->limit_source);
}

static tg_status write_summary(FILE *f, void *ctx)
{
    const summary *S = ctx;
    if (S->counts_only) {
        print_counts_only(S, f);
        return ferror(f) ? tg_set_error(TG_ERR_IO, "write failed") : TG_OK;
    }
    int ncol = S->st.steps ? N_CELLS + 1 : N_CELLS - 1;
    if (S->R->format == F_CSV) {
        print_csv(S, f);
    } else if (S->R->format == F_MARKDOWN) {
        print_markdown(S, f, ncol);
    } else {
        print_text_table(S, f, ncol);
        print_totals(S, f, "");
    }
    return ferror(f) ? tg_set_error(TG_ERR_IO, "write failed") : TG_OK;
}

enum { O_SET, O_DEPTH, O_PROFILE, O_STEPS, O_CSV, O_MARKDOWN, O_OUT };
static const tg_opt opts[] = {
    [O_SET] = {"--set", NULL, "KEY=VALUE", "config keys of LAYER (tgraph layers LAYER); KEY=VALUE words after it are more"},
    [O_DEPTH] = {"--depth", NULL, "N",
                 "rows for modules down to N levels below the layer, counted as tgraph dot "
                 "--depth counts (default 3; 0: the layer's row alone)"},
    [O_PROFILE] = {"--profile", NULL, NULL,
                   "run a few training steps (random parameters and inputs) and add each "
                   "module's forward and backward ms per step, and the step's time"},
    [O_STEPS] = {"--steps", NULL, "N", "training steps --profile times, after one warm-up "
                 "(default 3)"},
    [O_CSV] = {"--csv", NULL, NULL, "comma-separated values, one line per module (path below "
               "the layer, depth, shape, params, FLOPs, bytes kept, bytes of parameters, "
               "gradients and Adam state, peak planned bytes forward and backward[, ms])"},
    [O_MARKDOWN] = {"--markdown", NULL, NULL, "a Markdown table and the totals as a list"},
    [O_OUT] = {"--out", "-o", "FILE", "where to write it (default -: stdout)"},
};

/* The command line; 2 (or the unknown argument's code) when it is wrong. */
static int parse_args(sum_req *R, int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "summary", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *arg;
    int64_t k;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_SET) {
            if (tg_cli_set_args(&a, "summary", R->cfg)) return 2;
        } else if (a.opt == O_DEPTH || a.opt == O_STEPS) {
            if (!tg_args_int(&a, a.opt == O_DEPTH ? 0 : 1, a.opt == O_DEPTH ? 64 : 1000000, &k))
                return 2;
            *(a.opt == O_DEPTH ? &R->depth : &R->steps) = (int)k;
        } else if (a.opt == O_PROFILE) {
            R->profile = true;
        } else if (a.opt == O_CSV || a.opt == O_MARKDOWN) {
            int want = a.opt == O_CSV ? F_CSV : F_MARKDOWN;
            if (R->format && R->format != want)
                return tg_cli_fail("summary", "--csv and --markdown exclude each other");
            R->format = want;
        } else if (a.opt == O_OUT) {
            if (!tg_args_value(&a, &R->out)) return 2;
        } else if (arg[0] != '-' && !R->layer) {
            R->layer = arg;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    if (!R->layer) return tg_cli_fail("summary", "missing LAYER (see tgraph layers)");
    const tg_cli_file outs[] = {{"-o", R->out}};
    return tg_cli_check_outputs("summary", NULL, 0, outs, 1);
}

/* Build, plan (or profile) the training step, and gather the rows. */
static int gather(summary *S)
{
    const sum_req *R = S->R;
    tg_rng rng;
    tg_rng_seed(&rng, 0);
    /* shapes first: a model that would not fit is counted, never allocated */
    int64_t bytes;
    if (tg_cli_model_size("summary", R->layer, R->cfg, TG_F32, &S->params, &S->trainable,
                          &bytes) ||
        tg_cli_mem_limit("summary", &S->limit, &S->limit_source))
        return 2;
    if (S->limit && (bytes > INT64_MAX / 2 || 2 * bytes > S->limit)) {
        S->counts_only = true;
        return 0;
    }
    S->params = S->trainable = 0;
    if (tg_cli_layer_build(&S->c, "summary", R->layer, R->cfg, NULL, TG_F32, &rng, false))
        return 2;
    if (R->profile) {
        if (tg_cli_profile(&S->c, "summary", R->steps, &S->st)) return 2;
    } else {
        if (tg_cli_train_graph(&S->c, "summary", &rng)) return 2;
        tg_status st = tg_graph_plan(S->c.g);
        if (st && st != TG_ERR_LIMIT) return tg_cli_fail("summary", "%s", tg_last_error());
        if (st) snprintf(S->plan_error, sizeof S->plan_error, "%s", tg_last_error());
    }
    S->planned = S->plan_error[0] ? -1 : (double)tg_graph_planned_bytes(S->c.g);
    for (int i = 0; i < tg_params_count(S->c.ps); i++) {
        const tg_param *p = tg_params_at(S->c.ps, i);
        S->params += p->value.numel;
        S->param_bytes += (double)p->value.numel * (double)tg_dtype_size(p->value.dtype);
        if (!p->frozen) S->trainable += p->value.numel;
    }
    for (int i = 0; i < tg_params_buffer_count(S->c.ps); i++) {
        const tg_param *p = tg_params_buffer_at(S->c.ps, i);
        S->buffer_bytes += (double)p->value.numel * (double)tg_dtype_size(p->value.dtype);
    }
    for (int i = 0; i < tg_graph_node_count(S->c.g); i++) {
        const tg_node *nd = tg_graph_node(S->c.g, i);
        if (nd->kind == TG_NODE_INPUT || nd->kind == TG_NODE_CONST)
            S->leaf_bytes += (double)nd->value.numel * (double)tg_dtype_size(nd->value.dtype);
    }
    S->rows = calloc((size_t)tg_graph_scope_count(S->c.g), sizeof *S->rows);
    if (!S->rows) return tg_cli_fail("summary", "out of memory");
    S->base = tg_cli_base_scope(S->c.g);
    return add_rows(S, S->base, 0);
}

static int run(int argc, char **argv)
{
    sum_req R = {.depth = 3, .steps = TG_CLI_PROFILE_STEPS, .out = "-"};
    summary S = {.R = &R};
    if (!(R.cfg = tg_config_new())) return tg_cli_fail("summary", "out of memory");
    int rc = parse_args(&R, argc, argv);
    if (!rc) rc = gather(&S);
    if (!rc && tg_write_atomic(R.out, write_summary, &S))
        rc = tg_cli_fail("summary", "-o %s", tg_last_error());
    free(S.rows);
    tg_cli_layer_free(&S.c);
    tg_config_free(R.cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_summary = {
    .name = "summary",
    .summary = "a layer's modules as a table: output shapes, parameters, FLOPs, memory, time",
    .help =
        "usage: tgraph summary LAYER [--set KEY=VALUE]... [--depth N] [--profile [--steps N]]\n"
        "                      [--csv | --markdown] [-o FILE]\n\n"
        "Builds LAYER's training step (random parameters) and prints one row per module\n"
        "scope down to --depth, as torchinfo's summary() does: the module's output shape,\n"
        "its parameters, its forward FLOPs (2 per multiply-add, counted from the shapes:\n"
        "see FLOPS in the man page), its memory: the bytes of its parameters (Params B),\n"
        "their gradients (Grads B) and Adam's two moments (Adam B: tgraph train's default\n"
        "optimizer), the bytes its ops keep alive (Kept: values and saved buffers), and\n"
        "the most the plan holds live while its ops run forward (Peak fwd) and backward\n"
        "(Peak bwd); with --profile, its forward and backward ms per training step.\n"
        "Then the totals: parameters (trainable), the training step's planned memory\n"
        "(and its live peaks), the training step's memory (parameters + gradients + Adam\n"
        "state + inputs + the plan: what tgraph bench measures as train_peak_alloc_mb,\n"
        "less the graph's bookkeeping), FLOPs per step (forward; forward + backward\n"
        "counts the backward as twice the forward) and, with --profile, the step's time.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more =
        "\nexamples:\n  tgraph summary tsa\n"
        "  tgraph summary crossformer --depth 1 --profile --markdown -o crossformer.md\n",
    .run = run,
};
