/*
 * test_cli_op.c - `tgraph op` run as a program on what it accepts: every op
 * on its PyTorch fixtures (the outputs and every --grad file against the
 * fixture at atol 1e-6 / rtol 1e-5), the seed shapes of issue 3, the ops
 * without a fixture (dropout, causal_mask, 0-d outputs, float64 inputs), and
 * the help (every op, every attribute, an example each; every op has a test).
 * Not here: bad and odd input and sdpa beyond its fixtures
 * (test_cli_op_errors.c), `tgraph gradcheck OP` (test_cli_op_gradcheck.c);
 * the running of tgraph: cli_op_run.c.
 *
 * Fixtures: tests/fixtures/gen_*.py; no Python runs here.
 */
#include "cli_op_run.h"

#include <criterion/parameterized.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- every op on its PyTorch fixture ---- */

typedef struct {
    const char *op;
    const char *dir;      /* under tests/fixtures */
    const char *attrs;    /* '|'-separated ATTR=VALUE items */
    const char *ins;      /* NULL: in0.npy, in1.npy, ... in order; else '|'-separated
                             file names or null */
    bool        fwd_only; /* no --grad-output (the fixture's grads are not the CLI's) */
} cli_case;

static const cli_case cases[] = {
    /* einsum: the seed shape (8,6,2,8) x (8,6,2,8) -> (8,2,6,6), implicit output, three operands */
    {"einsum", "einsum/attn_scores", "equation=blhe,bshe->bhls", NULL, false},
    {"einsum", "einsum/implicit_jh", "equation=ij,jh", NULL, false},
    {"einsum", "einsum/diag_three", "equation=i,jj,j->ij", NULL, false},
    {"einsum", "einsum/ellipsis_bmm", "equation=...ij,...jk->...ik", NULL, false},
    {"einsum", "einsum/trace", "equation=ii", NULL, false},        /* 0-d output */
    {"einsum", "einsum/scalar", "equation=''", NULL, false},       /* the empty equation */
    {"softmax", "select/softmax_last", "dim=-1", NULL, false},
    {"softmax", "select/softmax_row_all_ninf", "dim=-1", NULL, false},   /* NaN row, NaN grads */
    {"softmax", "select/softmax_dim0", "dim=0", NULL, false},
    {"log_softmax", "select/log_softmax_dim1", "dim=1", NULL, false},
    {"softmax_scaled", "select/softmax_scaled", "dim=-1|scale=0.35355339059327373", NULL, false},
    {"sdpa", "nn/sdpa_causal", "is_causal=true|scale=0.5", NULL, false},
    {"sdpa", "nn/sdpa_cross", "", NULL, false},          /* L 4, S 7; scale=null: 1/sqrt(3) */
    {"sdpa", "nn/sdpa_long_causal", "is_causal=true", NULL, false},   /* 1/sqrt(8); 70 rows */
    {"sdpa", "nn/sdpa_wide", "scale=0.25", NULL, false},              /* S 600 */
    {"topk", "select/topk_last", "k=3", NULL, false},
    {"topk", "select/topk_dim1_3d", "k=2|dim=1|largest=false", NULL, false},
    {"topk", "select/topk_nan", "k=2|sorted=true", NULL, false},
    {"gather", "select/gather_dim1", "dim=1", NULL, false},
    {"gather", "select/gather_0d", "dim=0", NULL, false},
    {"scatter", "select/scatter_grad", "dim=0", NULL, false},
    {"scatter", "select/scatter_doc", "dim=0", NULL, true},
    {"scatter", "select/scatter_value", "dim=1|value=1.5", NULL, false},
    {"scatter_add", "select/scatter_add_2d", "dim=0", NULL, false},
    {"scatter_add", "select/scatter_add_dup", "dim=0", NULL, false},
    {"rearrange", "einops/tsa_merge",   /* seed shape (2,3,5,8) -> (6,5,8) */
     "pattern=b ts_d seg_num d_model -> (b ts_d) seg_num d_model", NULL, false},
    {"rearrange", "einops/tsa_dim_send",
     "pattern=(b ts_d) seg_num d_model -> (b seg_num) ts_d d_model|b=2", NULL, false},
    {"rearrange", "einops/units", "pattern=1 a () b -> b (a 1) 1", NULL, false},
    {"repeat", "einops/router",         /* seed shape (5,2,8) -> (10,2,8) */
     "pattern=seg_num factor d_model -> (repeat seg_num) factor d_model|repeat=2", NULL, false},
    {"repeat", "einops/interleave", "pattern=a -> (a r)|r=2", NULL, false},
    {"repeat", "einops/scalar_repeat", "pattern= -> a|a=3", NULL, false},
    {"reduce", "einops/pool_max", "pattern=b (h 2) w -> b h|reduction=max", NULL, false},
    {"reduce", "einops/bt_mean", "pattern=(b t) s d -> b d|reduction=mean|b=2", NULL, false},
    {"linear", "basic/linear", "", NULL, false},
    {"linear", "basic/linear_nobias", "", NULL, false},
    {"layer_norm", "nn/ln_last_affine", "normalized_shape=[5]", NULL, false},
    {"layer_norm", "nn/ln_two_plain", "normalized_shape=[3,4]|eps=1e-5", NULL, false},
    {"layer_norm", "nn/ln_bias_only", "normalized_shape=[7]|eps=1e-3", "in0.npy|null|in1.npy",
     false},
    {"gelu", "nn/gelu_none", "", NULL, false},
    {"gelu", "nn/gelu_tanh", "approximate=tanh", NULL, false},
    {"relu", "basic/relu", "", NULL, false},
    {"masked_fill", "select/mf_bcast", "value=-1.5", NULL, false},
    {"masked_fill", "select/mf_ninf", "value=-inf", NULL, false},
    {"masked_fill", "select/mf_tensor", "", NULL, false},
    {"mse_loss", "basic/mse_mean", "", NULL, false},                 /* 0-d, both grads */
    {"mse_loss", "basic/mse_none", "reduction=none", NULL, false},
    {"cross_entropy", "nn/ce_mean", "", NULL, false},
    {"cross_entropy", "nn/ce_weight_mean", "", NULL, false},         /* weight: no grad */
    {"cross_entropy", "nn/ce_ls_none", "reduction=none|label_smoothing=0.1", NULL, false},
    {"cross_entropy", "nn/ce_ignore_custom", "ignore_index=2", NULL, false},
    {"cross_entropy", "nn/ce_prob_mean", "", NULL, false},           /* float target: grad */
    {"cat", "nn/cat_last", "dim=-1", NULL, false},
    {"concat", "nn/cat_dim0", "", NULL, false},
    {"split", "nn/split", "split_size_or_sections=[2,4,1]|dim=-1", NULL, false},
    {"split", "nn/split_dim0", "split_size_or_sections=[1,3]", NULL, false},
    {"narrow", "nn/narrow", "dim=1|start=1|length=3", NULL, false},
    {"narrow", "nn/narrow_neg", "dim=0|start=-2|length=2", NULL, false},
    {"slice", "nn/slice_step", "dim=1|start=1|end=8|step=3", NULL, false},
    {"slice", "nn/slice_clamp", "start=-100|end=100|step=2", NULL, false},
    {"index_select", "nn/index_select_rep", "dim=0", NULL, false},
    {"exp", "basic/exp", "", NULL, false},
    {"log", "basic/log", "", NULL, false},
    {"sqrt", "basic/sqrt", "", NULL, false},
    {"square", "basic/square", "", NULL, false},
    {"neg", "basic/neg", "", NULL, false},
    {"scale", "basic/scale", "scale=2.5", NULL, false},
    {"add", "basic/add_bcast", "", NULL, false},
    {"sub", "basic/sub_bcast", "", NULL, false},
    {"mul", "basic/mul_bcast", "", NULL, false},
    {"mul", "basic/mul_scalar", "", NULL, false},                    /* a 0-d operand */
    {"mul", "basic/scale", "other=2.5", NULL, false},                /* other as a number */
    {"div", "basic/div", "", NULL, false},
    {"sum", "basic/sum_dims", "dim=[0,2]", NULL, false},
    {"sum", "basic/sum_keepdim", "dim=-1|keepdim=true", NULL, false},
    {"sum", "basic/sum_all", "", NULL, false},                       /* 0-d */
    {"mean", "basic/mean_dims", "dim=1", NULL, false},
    {"mean", "basic/mean_all", "dim=null", NULL, false},
    {"permute", "basic/permute", "dims=[2,0,1]", NULL, false},
    {"transpose", "basic/transpose", "dim0=0|dim1=1", NULL, false},
    {"reshape", "einops/tsa_merge", "shape=[-1,5,8]", NULL, false},
};
#define N_CASES (int)(sizeof cases / sizeof *cases)

/* Ops tested by their own tests below rather than by a fixture. */
static const char *const own_tests[] = {"dropout", "causal_mask"};

static bool fixture_exists(const char *dir, const char *file) { return tt_exists(dir, file); }

static void run_case(const cli_case *c)
{
    char dir[256], store[16384], name[64];
    char *args[128];
    int n = 0, at = 0;
    tt_op_temp_dir(dir, sizeof dir);
#define ARG(...) (args[n++] = store + at, \
                  at += snprintf(store + at, sizeof store - (size_t)at, __VA_ARGS__) + 1)
    ARG("op");
    ARG("%s", c->op);
    char attr_store[2048];
    char *attrs[32];
    int n_attrs = tt_op_split_args(c->attrs, dir, attr_store, sizeof attr_store, attrs);
    for (int i = 0; i < n_attrs; i++) ARG("%s", attrs[i]);
    char in_store[1024];
    char *ins[16];
    int n_in = 0;
    if (c->ins) {
        n_in = tt_op_split_args(c->ins, dir, in_store, sizeof in_store, ins);
    } else {
        for (int i = 0; i < 16; i++) {
            snprintf(name, sizeof name, "in%d.npy", i);
            if (!fixture_exists(c->dir, name)) break;
            ins[n_in] = in_store + 64 * i;
            snprintf(ins[n_in++], 64, "%s", name);
        }
    }
    for (int i = 0; i < n_in; i++) {
        ARG("--in");
        if (!strcmp(ins[i], "null")) ARG("null");
        else ARG("%s/%s/%s", TT_FIXTURES, c->dir, ins[i]);
    }
    int n_out = 0, n_dout = 0, n_grad = 0;
    static char outs[16][24], grads[16][24];
    for (int j = 0; j < 16; j++) {
        snprintf(name, sizeof name, "out%d.npy", j);
        if (!fixture_exists(c->dir, name)) break;
        snprintf(outs[n_out], sizeof outs[n_out], "out%d.npy", j);
        ARG("--out");
        ARG("%s/%s", dir, outs[n_out++]);
    }
    cr_assert(n_out > 0, "%s: no out0.npy", c->dir);
    if (!c->fwd_only) {
        for (int j = 0; j < n_out; j++) {
            snprintf(name, sizeof name, "dout%d.npy", j);
            if (!fixture_exists(c->dir, name)) continue;
            ARG("--grad-output");
            ARG("%s/%s/%s", TT_FIXTURES, c->dir, name);
            n_dout++;
        }
        /* fixture input i has grad<i>.npy exactly when the CLI writes a --grad for it */
        for (int i = 0; i < 16; i++) {
            snprintf(name, sizeof name, "grad%d.npy", i);
            if (!fixture_exists(c->dir, name)) continue;
            snprintf(grads[n_grad], sizeof grads[n_grad], "grad%d.npy", i);
            ARG("--grad");
            ARG("%s/%s", dir, grads[n_grad++]);
        }
    }
#undef ARG
    tt_op_result *r = malloc(sizeof *r);
    cr_assert(r);
    tt_op_run(dir, n, args, r);
    cr_assert(r->status == 0 && r->err[0] == '\0', "tgraph op %s on %s: exit %d: %s", c->op,
              c->dir, r->status, r->err);
    char what[1024], path[1200];
    for (int j = 0; j < n_out; j++) {
        snprintf(path, sizeof path, "%s/%s", dir, outs[j]);
        tg_tensor *got = tt_op_load(path), *want = tt_load(c->dir, outs[j]);
        snprintf(what, sizeof what, "%s %s %s", c->op, c->dir, outs[j]);
        cr_assert(got->dtype == want->dtype || (tg_dtype_is_float(got->dtype) &&
                                                 tg_dtype_is_float(want->dtype)),
                  "%s: dtype %s, expected %s", what, tg_dtype_name(got->dtype),
                  tg_dtype_name(want->dtype));
        tt_assert_close(got, want, 1e-6, 1e-5, what);
        tg_tensor_free(got);
        tg_tensor_free(want);
    }
    for (int i = 0; i < n_grad; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, grads[i]);
        tg_tensor *got = tt_op_load(path), *want = tt_load(c->dir, grads[i]);
        snprintf(what, sizeof what, "%s %s %s", c->op, c->dir, grads[i]);
        tt_assert_close(got, want, 1e-6, 1e-5, what);
        tg_tensor_free(got);
        tg_tensor_free(want);
    }
    cr_assert(c->fwd_only || n_grad > 0, "%s: no gradient compared", c->dir);
    free(r);
    tt_op_remove_dir(dir);
}

ParameterizedTestParameters(cli_op, fixture)
{
    static int idx[N_CASES];
    for (int i = 0; i < N_CASES; i++) idx[i] = i;
    return cr_make_param_array(int, idx, N_CASES);
}

ParameterizedTest(int *i, cli_op, fixture) { run_case(&cases[*i]); }

/* ---- the seed shapes of issue 3 ---- */

static void assert_shape(const char *path, int rank, const int64_t *shape)
{
    tg_tensor *t = tt_op_load(path);
    char a[96], b[96];
    bool same = t->rank == rank &&
                (rank == 0 || !memcmp(t->shape, shape, (size_t)rank * sizeof *shape));
    cr_assert(same,
              "%s: shape %s, expected %s", path, tg_shape_str(t->rank, t->shape, a, sizeof a),
              tg_shape_str(rank, shape, b, sizeof b));
    tg_tensor_free(t);
}

Test(cli_op, seed_shapes)
{
    char dir[256], path[512];
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tt_op_run_spec("op|einsum|equation=blhe,bshe->bhls|--in|$F/einsum/attn_scores/in0.npy|"
             "--in|$F/einsum/attn_scores/in1.npy|--out|$T/s.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/s.npy", dir);
    assert_shape(path, 4, (int64_t[]){8, 2, 6, 6});
    tt_op_run_spec("op|rearrange|pattern=b ts_d seg_num d_model -> (b ts_d) seg_num d_model|"
             "--in|$F/einops/tsa_merge/in0.npy|--out|$T/r.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/r.npy", dir);
    assert_shape(path, 3, (int64_t[]){6, 5, 8});
    tt_op_run_spec("op|repeat|pattern=seg_num factor d_model -> (repeat seg_num) factor d_model|"
             "repeat=2|--in|$F/einops/router/in0.npy|--out|$T/p.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/p.npy", dir);
    assert_shape(path, 3, (int64_t[]){10, 2, 8});
    free(r);
    tt_op_remove_dir(dir);
}

/* ---- ops without a PyTorch fixture ---- */

Test(cli_op, dropout)
{
    char dir[256], path[512];
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tg_tensor *x = tt_load("basic/exp", "in0.npy"), *dy = tt_load("basic/exp", "dout0.npy");
    /* eval: the identity, forward and backward */
    tt_op_run_spec("op|dropout|training=false|--in|$F/basic/exp/in0.npy|--out|$T/y.npy|"
             "--grad-output|$F/basic/exp/dout0.npy|--grad|$T/g.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    tg_tensor *y = tt_op_load(path);
    tt_assert_close(y, x, 0, 0, "dropout eval y");
    tg_tensor_free(y);
    snprintf(path, sizeof path, "%s/g.npy", dir);
    tg_tensor *gx = tt_op_load(path);
    tt_assert_close(gx, dy, 0, 0, "dropout eval grad");
    tg_tensor_free(gx);
    /* training, p = 0.5: y is 0 or 2x; the gradient uses the same mask */
    tt_op_run_spec("op|dropout|p=0.5|seed=3|--in|$F/basic/exp/in0.npy|--out|$T/y.npy|"
             "--grad-output|$F/basic/exp/dout0.npy|--grad|$T/g.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    y = tt_op_load(path);
    snprintf(path, sizeof path, "%s/g.npy", dir);
    gx = tt_op_load(path);
    int dropped = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        double xv = tg_tensor_get(x, i), yv = tg_tensor_get(y, i), gv = tg_tensor_get(gx, i);
        bool kept = yv != 0;
        dropped += !kept;
        cr_assert(!kept || fabs(yv - 2 * xv) <= 1e-6 * fabs(xv), "y[%lld] = %g, x = %g",
                  (long long)i, yv, xv);
        cr_assert(fabs(gv - (kept ? 2 * tg_tensor_get(dy, i) : 0)) <= 1e-6, "grad[%lld] = %g",
                  (long long)i, gv);
    }
    cr_assert(dropped > 0 && dropped < x->numel, "p=0.5 dropped %d of %lld", dropped,
              (long long)x->numel);
    tg_tensor_free(y);
    tg_tensor_free(gx);
    /* p = 1: zeros */
    tt_op_run_spec("op|dropout|p=1|--in|$F/basic/exp/in0.npy|--out|$T/y.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    y = tt_op_load(path);
    for (int64_t i = 0; i < y->numel; i++) cr_assert(tg_tensor_get(y, i) == 0);
    tg_tensor_free(y);
    tg_tensor_free(x);
    tg_tensor_free(dy);
    free(r);
    tt_op_remove_dir(dir);
}

Test(cli_op, causal_mask)
{
    char dir[256], path[512];
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tt_op_run_spec("op|causal_mask|B=2|L=4|--out|$T/m.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/m.npy", dir);
    tg_tensor *m = tt_op_load(path);
    cr_assert(m->dtype == TG_BOOL);
    assert_shape(path, 4, (int64_t[]){2, 1, 4, 4});
    for (int64_t i = 0; i < m->numel; i++) {
        int64_t l = (i / 4) % 4, s = i % 4;
        cr_assert(tg_tensor_get(m, i) == (s > l), "mask[%lld]", (long long)i);
    }
    tg_tensor_free(m);
    free(r);
    tt_op_remove_dir(dir);
}

/* 0-d tensors stay 0-d: a mean loss, an implicit trace */
Test(cli_op, zero_dim_outputs)
{
    char dir[256], path[512];
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tt_op_run_spec("op|mse_loss|--in|$F/basic/mse_mean/in0.npy|--in|$F/basic/mse_mean/in1.npy|"
             "--out|$T/l.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/l.npy", dir);
    assert_shape(path, 0, NULL);
    tt_op_run_spec("op|einsum|equation=ii|--in|$F/einsum/trace/in0.npy|--out|$T/l.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    assert_shape(path, 0, NULL);
    free(r);
    tt_op_remove_dir(dir);
}

/* float64 inputs give a float64 graph and float64 files */
Test(cli_op, float64_inputs)
{
    char dir[256], path[512];
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tg_tensor *x = tt_load("basic/exp", "in0.npy"), *x64 = tg_tensor_new(TG_F64, x->rank, x->shape);
    cr_assert(tg_tensor_copy(x64, x) == TG_OK);
    snprintf(path, sizeof path, "%s/x64.npy", dir);
    cr_assert(tg_npy_save(path, x64) == TG_OK);
    tt_op_run_spec("op|exp|--in|$T/x64.npy|--out|$T/y.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    tg_tensor *y = tt_op_load(path), *want = tt_load("basic/exp", "out0.npy");
    cr_assert(y->dtype == TG_F64, "dtype %s", tg_dtype_name(y->dtype));
    tt_assert_close(y, want, 1e-6, 1e-6, "exp float64");
    tg_tensor_free(y);
    tg_tensor_free(want);
    tg_tensor_free(x);
    tg_tensor_free(x64);
    free(r);
    tt_op_remove_dir(dir);
}

/* ---- help: every op, each with its attributes and an example ---- */

/* The op names listed by the unknown-op message (the table itself). */
static int op_names(const char *dir, char names[64][32])
{
    tt_op_result *r = malloc(sizeof *r);
    tt_op_run_spec("op|nosuch", dir, r);
    const char *p = strstr(r->err, "(ops: ");
    cr_assert(p, "no op list in: %s", r->err);
    p += 6;
    int n = 0;
    while (*p && *p != ')' && n < 64) {
        size_t len = strcspn(p, ",)");
        cr_assert(len < 32);
        memcpy(names[n], p, len);
        names[n++][len] = '\0';
        p += len;
        if (*p == ',') p += 2;
    }
    free(r);
    return n;
}

Test(cli_op, help_lists_every_op)
{
    static char help[65536], block[65536];
    char dir[256], names[64][32];
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    int n = op_names(dir, names);
    cr_assert(n >= 38, "only %d ops listed", n);
    tt_op_run_spec("op|--help", dir, r);
    cr_assert(r->status == 0);
    snprintf(help, sizeof help, "%s", r->out);
    tt_op_run_spec("help|op", dir, r);
    cr_assert(r->status == 0 && !strcmp(help, r->out), "tgraph help op differs from op --help");
    for (int i = 0; i < n; i++) {
        /* op --help lists it; op NAME --help (= help op NAME) has the rest */
        char head[64], spec[256];
        snprintf(head, sizeof head, "\n  %.31s ", names[i]);
        cr_assert(strstr(help, head), "help does not list %s", names[i]);
        snprintf(spec, sizeof spec, "op|%.31s|--help", names[i]);
        tt_op_run_spec(spec, dir, r);
        cr_assert(r->status == 0, "%s --help: exit %d", names[i], r->status);
        snprintf(block, sizeof block, "%s", r->out);
        snprintf(spec, sizeof spec, "help|op|%.31s", names[i]);
        tt_op_run_spec(spec, dir, r);
        cr_assert(!strcmp(block, r->out), "tgraph help op %s differs from op %s --help", names[i],
                  names[i]);
        char example[64];
        snprintf(example, sizeof example, "e.g. tgraph op %.31s ", names[i]);
        cr_assert(strstr(block, example), "help of %s has no example:\n%s", names[i], block);
        /* every attribute the op accepts (from its own error message) is in its block */
        snprintf(spec, sizeof spec, "op|%.31s|zz_not_an_attribute=x", names[i]);
        tt_op_run_spec(spec, dir, r);
        const char *a = strstr(r->err, "attributes: ");
        cr_assert(a, "%s: no attribute list in: %s", names[i], r->err);
        a += 12;
        while (*a && *a != ')' && strncmp(a, "none", 4) && strncmp(a, "and axis", 8)) {
            size_t alen = strcspn(a, ",)");
            char attr[64];
            snprintf(attr, sizeof attr, " %.*s=", (int)alen, a);
            cr_assert(strstr(block, attr), "help of %s lacks attribute%s:\n%s", names[i], attr,
                      block);
            a += alen;
            if (*a == ',') a += 2;
        }
    }
    free(r);
    tt_op_remove_dir(dir);
}

Test(cli_op, every_op_has_a_test)
{
    char dir[256], names[64][32];
    tt_op_temp_dir(dir, sizeof dir);
    int n = op_names(dir, names);
    for (int i = 0; i < n; i++) {
        bool found = false;
        for (int k = 0; k < N_CASES; k++) found |= !strcmp(cases[k].op, names[i]);
        for (size_t k = 0; k < sizeof own_tests / sizeof *own_tests; k++)
            found |= !strcmp(own_tests[k], names[i]);
        /* or its PyTorch fixture case, which tests/test_registry.c runs by name */
        char fixture[64];
        snprintf(fixture, sizeof fixture, "ops/%.40s", names[i]);
        found |= tt_exists(fixture, "case.txt");
        cr_expect(found, "op %s has no CLI test and no tests/fixtures/%s/case.txt", names[i],
                  fixture);
    }
    tt_op_remove_dir(dir);
}
