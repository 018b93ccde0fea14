/*
 * test_cli_op.c - `tgraph op` and `tgraph gradcheck OP`, run as a program:
 * every op on its PyTorch fixtures (the outputs and every --grad file against
 * the fixture at atol 1e-6 / rtol 1e-5), the seed shapes of issue 3, each
 * class of bad input (exit status 2 and exactly one line on stderr), the help
 * (every op, every attribute) and the single-op gradcheck. sdpa also: its
 * dropout against the unfused four-command chain, its builder's messages
 * verbatim, zero-size dims.
 *
 * The tgraph binary is the one next to this test binary (build/ or
 * build-asan/: `make test` builds it first). Fixtures: tests/fixtures/gen_*.py;
 * no Python runs here.
 */
#include "testutil.h"

#include <criterion/parameterized.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- running tgraph ---- */

typedef struct {
    int  status;        /* exit status; -1 when it did not exit normally (a crash) */
    char out[65536];    /* stdout */
    char err[8192];     /* stderr */
    int  err_lines;
} run_result;

static void tool_path(char *buf, size_t len)
{
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(buf, len, "%s/tgraph", self);
    cr_assert(access(buf, X_OK) == 0, "%s is missing (make builds it with the tests)", buf);
}

/* A fresh directory for one test's files. */
static void temp_dir(char *buf, size_t len)
{
    snprintf(buf, len, "%s/cli-op-XXXXXX", tt_tmpdir());
    cr_assert(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, len - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
}

/* Run tgraph with args[0..n) (stdout and stderr into files under dir). */
static void run_tgraph(const char *dir, int n, char **args, run_result *r)
{
    char tool[1200], out_path[1100], err_path[1100];
    char *argv[160];
    cr_assert(n < 158, "too many arguments");
    tool_path(tool, sizeof tool);
    argv[0] = tool;
    memcpy(argv + 1, args, (size_t)n * sizeof *args);
    argv[n + 1] = NULL;
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int st = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert(st == 0, "posix_spawn %s: %s", tool, strerror(st));
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0) cr_assert(errno == EINTR, "waitpid: %s", strerror(errno));
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    slurp(out_path, r->out, sizeof r->out);
    slurp(err_path, r->err, sizeof r->err);
    r->err_lines = 0;
    for (const char *p = r->err; *p; p++) r->err_lines += *p == '\n';
    remove(out_path);
    remove(err_path);
}

/* Split "a|b|c" into args, replacing $F by the fixtures root and $T by dir.
 * The strings live in store. */
static int split_args(const char *spec, const char *dir, char *store, size_t len, char **args)
{
    size_t at = 0;
    int n = 0;
    const char *p = spec;
    while (*p) {
        args[n++] = store + at;
        for (; *p && *p != '|'; p++) {
            const char *sub = NULL;
            if (p[0] == '$' && p[1] == 'F') sub = TT_FIXTURES;
            if (p[0] == '$' && p[1] == 'T') sub = dir;
            if (sub) {
                at += (size_t)snprintf(store + at, len - at, "%s", sub);
                p++;
            } else if (at + 1 < len) {
                store[at++] = *p;
            }
        }
        store[at++] = '\0';
        cr_assert(at < len, "argument store too small");
        if (*p == '|') p++;
    }
    return n;
}

static void run_spec(const char *spec, const char *dir, run_result *r)
{
    char store[8192];
    char *args[128];
    int n = split_args(spec, dir, store, sizeof store, args);
    run_tgraph(dir, n, args, r);
}

static tg_tensor *load_abs(const char *path)
{
    tg_tensor *t = NULL;
    cr_assert(tg_npy_load(path, &t) == TG_OK, "cannot load %s: %s", path, tg_last_error());
    return t;
}

/* Remove a test's directory and every file in it. */
static void remove_dir(const char *dir)
{
    char path[1200];
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    if (d) closedir(d);
    rmdir(dir);
}

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
    temp_dir(dir, sizeof dir);
#define ARG(...) (args[n++] = store + at, \
                  at += snprintf(store + at, sizeof store - (size_t)at, __VA_ARGS__) + 1)
    ARG("op");
    ARG("%s", c->op);
    char attr_store[2048];
    char *attrs[32];
    int n_attrs = split_args(c->attrs, dir, attr_store, sizeof attr_store, attrs);
    for (int i = 0; i < n_attrs; i++) ARG("%s", attrs[i]);
    char in_store[1024];
    char *ins[16];
    int n_in = 0;
    if (c->ins) {
        n_in = split_args(c->ins, dir, in_store, sizeof in_store, ins);
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
    run_result *r = malloc(sizeof *r);
    cr_assert(r);
    run_tgraph(dir, n, args, r);
    cr_assert(r->status == 0 && r->err[0] == '\0', "tgraph op %s on %s: exit %d: %s", c->op,
              c->dir, r->status, r->err);
    char what[1024], path[1200];
    for (int j = 0; j < n_out; j++) {
        snprintf(path, sizeof path, "%s/%s", dir, outs[j]);
        tg_tensor *got = load_abs(path), *want = tt_load(c->dir, outs[j]);
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
        tg_tensor *got = load_abs(path), *want = tt_load(c->dir, grads[i]);
        snprintf(what, sizeof what, "%s %s %s", c->op, c->dir, grads[i]);
        tt_assert_close(got, want, 1e-6, 1e-5, what);
        tg_tensor_free(got);
        tg_tensor_free(want);
    }
    cr_assert(c->fwd_only || n_grad > 0, "%s: no gradient compared", c->dir);
    free(r);
    remove_dir(dir);
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
    tg_tensor *t = load_abs(path);
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
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    run_spec("op|einsum|equation=blhe,bshe->bhls|--in|$F/einsum/attn_scores/in0.npy|"
             "--in|$F/einsum/attn_scores/in1.npy|--out|$T/s.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/s.npy", dir);
    assert_shape(path, 4, (int64_t[]){8, 2, 6, 6});
    run_spec("op|rearrange|pattern=b ts_d seg_num d_model -> (b ts_d) seg_num d_model|"
             "--in|$F/einops/tsa_merge/in0.npy|--out|$T/r.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/r.npy", dir);
    assert_shape(path, 3, (int64_t[]){6, 5, 8});
    run_spec("op|repeat|pattern=seg_num factor d_model -> (repeat seg_num) factor d_model|"
             "repeat=2|--in|$F/einops/router/in0.npy|--out|$T/p.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/p.npy", dir);
    assert_shape(path, 3, (int64_t[]){10, 2, 8});
    free(r);
    remove_dir(dir);
}

/* ---- ops without a PyTorch fixture ---- */

Test(cli_op, dropout)
{
    char dir[256], path[512];
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    tg_tensor *x = tt_load("basic/exp", "in0.npy"), *dy = tt_load("basic/exp", "dout0.npy");
    /* eval: the identity, forward and backward */
    run_spec("op|dropout|training=false|--in|$F/basic/exp/in0.npy|--out|$T/y.npy|"
             "--grad-output|$F/basic/exp/dout0.npy|--grad|$T/g.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    tg_tensor *y = load_abs(path);
    tt_assert_close(y, x, 0, 0, "dropout eval y");
    tg_tensor_free(y);
    snprintf(path, sizeof path, "%s/g.npy", dir);
    tg_tensor *gx = load_abs(path);
    tt_assert_close(gx, dy, 0, 0, "dropout eval grad");
    tg_tensor_free(gx);
    /* training, p = 0.5: y is 0 or 2x; the gradient uses the same mask */
    run_spec("op|dropout|p=0.5|seed=3|--in|$F/basic/exp/in0.npy|--out|$T/y.npy|"
             "--grad-output|$F/basic/exp/dout0.npy|--grad|$T/g.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    y = load_abs(path);
    snprintf(path, sizeof path, "%s/g.npy", dir);
    gx = load_abs(path);
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
    run_spec("op|dropout|p=1|--in|$F/basic/exp/in0.npy|--out|$T/y.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    y = load_abs(path);
    for (int64_t i = 0; i < y->numel; i++) cr_assert(tg_tensor_get(y, i) == 0);
    tg_tensor_free(y);
    tg_tensor_free(x);
    tg_tensor_free(dy);
    free(r);
    remove_dir(dir);
}

Test(cli_op, causal_mask)
{
    char dir[256], path[512];
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    run_spec("op|causal_mask|B=2|L=4|--out|$T/m.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/m.npy", dir);
    tg_tensor *m = load_abs(path);
    cr_assert(m->dtype == TG_BOOL);
    assert_shape(path, 4, (int64_t[]){2, 1, 4, 4});
    for (int64_t i = 0; i < m->numel; i++) {
        int64_t l = (i / 4) % 4, s = i % 4;
        cr_assert(tg_tensor_get(m, i) == (s > l), "mask[%lld]", (long long)i);
    }
    tg_tensor_free(m);
    free(r);
    remove_dir(dir);
}

/* 0-d tensors stay 0-d: a mean loss, an implicit trace */
Test(cli_op, zero_dim_outputs)
{
    char dir[256], path[512];
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    run_spec("op|mse_loss|--in|$F/basic/mse_mean/in0.npy|--in|$F/basic/mse_mean/in1.npy|"
             "--out|$T/l.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/l.npy", dir);
    assert_shape(path, 0, NULL);
    run_spec("op|einsum|equation=ii|--in|$F/einsum/trace/in0.npy|--out|$T/l.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    assert_shape(path, 0, NULL);
    free(r);
    remove_dir(dir);
}

/* float64 inputs give a float64 graph and float64 files */
Test(cli_op, float64_inputs)
{
    char dir[256], path[512];
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    tg_tensor *x = tt_load("basic/exp", "in0.npy"), *x64 = tg_tensor_new(TG_F64, x->rank, x->shape);
    cr_assert(tg_tensor_copy(x64, x) == TG_OK);
    snprintf(path, sizeof path, "%s/x64.npy", dir);
    cr_assert(tg_npy_save(path, x64) == TG_OK);
    run_spec("op|exp|--in|$T/x64.npy|--out|$T/y.npy", dir, r);
    cr_assert(r->status == 0, "%s", r->err);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    tg_tensor *y = load_abs(path), *want = tt_load("basic/exp", "out0.npy");
    cr_assert(y->dtype == TG_F64, "dtype %s", tg_dtype_name(y->dtype));
    tt_assert_close(y, want, 1e-6, 1e-6, "exp float64");
    tg_tensor_free(y);
    tg_tensor_free(want);
    tg_tensor_free(x);
    tg_tensor_free(x64);
    free(r);
    remove_dir(dir);
}

/* ---- bad input: exit status 2 and one line on stderr ---- */

/* A .npy file written byte by byte (dtypes tg_npy_save does not write). */
static void write_raw_npy(const char *path, const char *descr, const char *shape,
                          const void *data, size_t bytes)
{
    char header[128];
    int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, "
                     "'shape': %s, }", descr, shape);
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    unsigned short hlen = (unsigned short)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hlen & 0xff, f);
    fputc(hlen >> 8, f);
    fwrite(header, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, bytes, f);
    fclose(f);
}

/* Files the error cases use: $T/idx32.npy (int32 index), $T/idx_big.npy
 * (int64 index with a value out of range), $T/garbage.npy. */
static void write_bad_files(const char *dir)
{
    char path[512];
    int32_t i32[6] = {0, 1, 1, 0, 2, 3};
    snprintf(path, sizeof path, "%s/idx32.npy", dir);
    write_raw_npy(path, "<i4", "(3, 2)", i32, sizeof i32);
    tg_tensor *big = tg_tensor_new(TG_I64, 2, (int64_t[]){3, 2});
    for (int i = 0; i < 6; i++) ((int64_t *)big->data)[i] = i == 4 ? 7 : i % 2;
    snprintf(path, sizeof path, "%s/idx_big.npy", dir);
    cr_assert(tg_npy_save(path, big) == TG_OK);
    tg_tensor_free(big);
    snprintf(path, sizeof path, "%s/garbage.npy", dir);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fputs("this is not a numpy file", f);
    fclose(f);
}

typedef struct {
    const char *name;
    const char *args;     /* '|'-separated; $F fixtures, $T the test's directory */
    const char *needle;   /* must occur in the one stderr line */
} err_case;

#define X "$F/basic/exp/in0.npy"              /* float [3, 5] */
#define SDPA_CROSS "--in|$F/nn/sdpa_cross/in0.npy|--in|$F/nn/sdpa_cross/in1.npy|" \
                   "--in|$F/nn/sdpa_cross/in2.npy"   /* q [2, 4, 2, 3], k [2, 7, 2, 3], v [2, 7, 2, 5] */
#define LIN "$F/basic/linear/"
#define OUT "--out|$T/o.npy"

static const err_case errs[] = {
    {"unknown_op", "op|nosuch|--in|" X "|" OUT,
     "unknown op 'nosuch' (ops: einsum, softmax, log_softmax"},
    {"missing_name", "op", "missing NAME (ops: einsum"},
    {"unknown_attr", "op|softmax|dim=1|dims=2|--in|" X "|" OUT,
     "softmax: unknown attribute 'dims' (attributes: dim)"},
    {"unknown_attr_topk", "op|topk|k=1|j=2|--in|" X "|" OUT,
     "unknown attribute 'j' (attributes: k, dim, largest, sorted)"},
    {"missing_attr", "op|topk|--in|" X "|" OUT "|--out|$T/i.npy",
     "topk: missing required attribute 'k' (attributes: k, dim, largest, sorted)"},
    {"missing_equation", "op|einsum|--in|" X "|" OUT, "missing required attribute 'equation'"},
    {"bad_int", "op|topk|k=abc|--in|" X "|" OUT, "topk: k: expected an integer, got 'abc'"},
    {"bad_bool", "op|topk|k=1|largest=3|--in|" X "|" OUT, "largest: expected true or false"},
    {"bad_null", "op|softmax|dim=null|--in|" X "|" OUT, "dim: expected an integer, got null"},
    {"bad_list", "op|layer_norm|normalized_shape=[5,|--in|" X "|" OUT, "unterminated list"},
    {"bad_list_item", "op|permute|dims=[1,a]|--in|" X "|" OUT, "dims[1]: expected an integer"},
    {"bad_float", "op|scale|scale=yes|--in|" X "|" OUT, "scale: expected a number"},
    {"bad_axis_len", "op|repeat|pattern=a b -> a b r|r=x|--in|" X "|" OUT,
     "r: expected an integer, got 'x' (an axis length"},
    {"bad_key", "op|softmax|di-m=1|--in|" X "|" OUT, "bad key 'di-m'"},
    {"too_many_in", "op|softmax|dim=1|--in|" X "|--in|" X "|" OUT,
     "softmax: expected 1 --in file (input), got 2"},
    {"too_few_in", "op|linear|--in|" LIN "in0.npy|" OUT,
     "linear: expected 2 to 3 --in files (input, weight, [bias]), got 1"},
    {"no_in", "op|exp|" OUT, "exp: expected 1 --in file (input), got 0"},
    {"null_required", "op|linear|--in|" LIN "in0.npy|--in|null|" OUT, "weight is required"},
    {"too_few_out", "op|topk|k=2|--in|" X "|" OUT,
     "topk: expected 2 --out files (one per output), got 1"},
    {"no_out", "op|exp|--in|" X, "exp: expected 1 --out file (one per output), got 0"},
    {"split_outs", "op|split|split_size_or_sections=2|dim=1|--in|" X "|" OUT,
     "split: expected 3 --out files"},
    {"too_few_grads", "op|mse_loss|--in|$F/basic/mse_mean/in0.npy|--in|$F/basic/mse_mean/in1.npy|"
     OUT "|--grad-output|$F/basic/mse_mean/dout0.npy|--grad|$T/g0.npy",
     "mse_loss: expected 1 --grad-output file (one per float output) and 2 --grad files"},
    {"grad_without_dy", "op|exp|--in|" X "|" OUT "|--grad|$T/g.npy",
     "expected 1 --grad-output file"},
    {"dy_shape",
     "op|exp|--in|" X "|" OUT "|--grad-output|$F/basic/mean_all/in0.npy|--grad|$T/g.npy",
     "--grad-output #1 $F/basic/mean_all/in0.npy: expected a float array of the output's shape "
     "[3, 5], got float32 [5, 3]"},
    {"nothing_to_diff", "op|causal_mask|B=1|L=2|" OUT "|--grad-output|" X "|--grad|$T/g.npy",
     "causal_mask: nothing to differentiate here (no float output)"},
    {"linear_shapes", "op|linear|--in|" X "|--in|" LIN "in1.npy|" OUT,
     "linear: mat1 and mat2 shapes cannot be multiplied (3x5 and 4x5)"},
    {"linear_weight_rank", "op|linear|--in|" LIN "in0.npy|--in|" LIN "in0.npy|" OUT,
     "linear: weight must be 2-d"},
    {"add_bcast", "op|add|--in|" X "|--in|$F/basic/mean_all/in0.npy|" OUT,
     "must match the size of tensor b"},
    {"bad_pattern", "op|rearrange|pattern=a b -> a|--in|" X "|" OUT,
     "Identifiers only on one side of expression"},
    {"pattern_rank", "op|rearrange|pattern=a b c -> a b c|--in|" X "|" OUT, "Wrong shape"},
    {"bad_equation", "op|einsum|equation=ij,jk->ik|--in|" X "|" OUT, "einsum(): "},
    {"einsum_char", "op|einsum|equation=i1->i|--in|" X "|" OUT, "invalid subscript"},
    {"dim_range", "op|softmax|dim=5|--in|" X "|" OUT,
     "softmax: Dimension out of range (expected to be in range of [-2, 1], but got 5)"},
    {"dim_huge", "op|softmax|dim=99999999999|--in|" X "|" OUT, "Dimension out of range"},
    {"topk_k", "op|topk|k=9|--in|" X "|" OUT "|--out|$T/i.npy", "selected index k out of range"},
    {"gelu_approx", "op|gelu|approximate=sigmoid|--in|" X "|" OUT,
     "approximate argument must be either none or tanh"},
    {"reduction", "op|mse_loss|reduction=avg|--in|" X "|--in|" X "|" OUT,
     "avg is not a valid value for reduction"},
    {"einops_reduction", "op|reduce|pattern=a b -> a|reduction=avg|--in|" X "|" OUT,
     "reduce: unknown reduction 'avg' (sum, mean, max, min, prod)"},
    {"dropout_p", "op|dropout|p=1.5|--in|" X "|" OUT, "dropout probability has to be between 0"},
    {"sdpa_causal_l_ne_s", "op|sdpa|is_causal=true|" SDPA_CROSS "|" OUT,
     "tgraph op: sdpa: the causal mask needs L == S (query length 4, key length 7)\n"},
    {"sdpa_rank3_query", "op|sdpa|--in|$F/einops/tsa_merge/out0.npy|--in|$F/nn/sdpa_cross/in1.npy|"
     "--in|$F/nn/sdpa_cross/in2.npy|" OUT,
     "tgraph op: sdpa: query, key and value must be 4-d [B, L, H, E], [B, S, H, E] and "
     "[B, S, H, D]; got [6, 5, 8], [2, 7, 2, 3] and [2, 7, 2, 5]\n"},
    {"sdpa_two_inputs", "op|sdpa|--in|$F/nn/sdpa_cross/in0.npy|--in|$F/nn/sdpa_cross/in1.npy|" OUT,
     "sdpa: expected 3 --in files (query, key, value), got 2"},
    {"sdpa_int_key", "op|sdpa|--in|$F/nn/sdpa_cross/in0.npy|--in|$F/select/gather_dim1/in1.npy|"
     "--in|$F/nn/sdpa_cross/in2.npy|" OUT, "sdpa: --in #2 (key)"},
    {"sdpa_bad_bool", "op|sdpa|is_causal=1|" SDPA_CROSS "|" OUT,
     "is_causal: expected true or false"},
    {"sdpa_unknown_attr", "op|sdpa|attn_mask=null|" SDPA_CROSS "|" OUT,
     "sdpa: unknown attribute 'attn_mask' (attributes: is_causal, scale, dropout_p, seed)"},
    {"ln_shape", "op|layer_norm|normalized_shape=[4]|--in|" X "|" OUT,
     "Given normalized_shape=[4], expected input with shape [*, 4]"},
    {"float_mask", "op|masked_fill|value=1|--in|" X "|--in|" X "|" OUT,
     "masked_fill: --in #2 (mask) $F/basic/exp/in0.npy: masked_fill only supports boolean masks, "
     "but got mask with dtype float32"},
    {"mask_value_twice", "op|masked_fill|value=1|--in|$F/select/mf_tensor/in0.npy|"
     "--in|$F/select/mf_tensor/in1.npy|--in|$F/select/mf_tensor/in2.npy|" OUT, "not both"},
    {"int32_index", "op|gather|dim=1|--in|$F/select/gather_dim1/in0.npy|--in|$T/idx32.npy|" OUT,
     "gather: --in #2 (index): $T/idx32.npy: dtype '<i4' is not supported"},
    {"int32_index_hint", "op|index_select|dim=0|--in|" X "|--in|$T/idx32.npy|" OUT,
     "index tensors must be int64"},
    {"float_index", "op|gather|dim=1|--in|" X "|--in|" X "|" OUT,
     "--in #2 (index) $F/basic/exp/in0.npy: Expected dtype int64 for index, got float32"},
    {"int_input", "op|exp|--in|$F/select/gather_dim1/in1.npy|" OUT,
     "input must be a float array (<f4 or <f8), got int64"},
    {"index_value", "op|gather|dim=1|--in|$F/select/gather_dim1/in0.npy|--in|$T/idx_big.npy|" OUT,
     "gather: index 7 is out of bounds for dimension 1 with size 4"},
    {"scatter_neither", "op|scatter|dim=0|--in|$F/select/scatter_value/in0.npy|"
     "--in|$F/select/scatter_value/in1.npy|" OUT, "scatter: give either src"},
    {"no_file", "op|exp|--in|$T/does_not_exist.npy|" OUT, "does_not_exist.npy"},
    {"garbage_file", "op|exp|--in|$T/garbage.npy|" OUT, "exp: --in #1 (input): $T/garbage.npy"},
    {"unwritable_out", "op|exp|--in|" X "|--out|$T/no/such/dir/o.npy", "--out #1 $T/no/such/dir"},
    {"unknown_option", "op|exp|--bogus|" X, "unknown option '--bogus'"},
    {"stray_argument", "op|exp|stray|--in|" X "|" OUT, "unexpected argument 'stray'"},
    {"missing_value", "op|exp|--in", "missing value for --in"},
    {"gradcheck_unknown", "gradcheck|nosuch", "'nosuch' is neither a layer"},
    {"gradcheck_count", "gradcheck|gather|dim=1|--shape|3,4",
     "gather: expected 2 --in files (input, index), got 1"},
    {"gradcheck_index_rule", "gradcheck|gather|dim=1|--shape|3,0|--shape|3,2",
     "gather: index: no index fits an input of size 0 at dim 1"},
    {"gradcheck_shape", "gradcheck|exp|--shape|2,x", "--shape"},
    {"gradcheck_attr", "gradcheck|topk|--shape|3,4", "topk: missing required attribute 'k'"},
    {"gradcheck_nothing", "gradcheck|causal_mask|B=1|L=2", "nothing to check (no float output)"},
    {"gradcheck_layer_in", "gradcheck|full_attention|--shape|2,3",
     "--in and --shape are for single ops"},
};
#define N_ERRS (int)(sizeof errs / sizeof *errs)

ParameterizedTestParameters(cli_op, bad_input)
{
    static int idx[N_ERRS];
    for (int i = 0; i < N_ERRS; i++) idx[i] = i;
    return cr_make_param_array(int, idx, N_ERRS);
}

ParameterizedTest(int *i, cli_op, bad_input)
{
    const err_case *e = &errs[*i];
    char dir[256], needle[1024];
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    write_bad_files(dir);
    char store[1024];
    char *one[1];
    split_args(e->needle, dir, store, sizeof store, one);
    snprintf(needle, sizeof needle, "%s", one[0]);
    run_spec(e->args, dir, r);
    cr_assert(r->status == 2, "%s: exit status %d, expected 2 (stderr: %s)", e->name, r->status,
              r->err);
    cr_assert(r->err_lines == 1, "%s: %d lines on stderr, expected 1:\n%s", e->name,
              r->err_lines, r->err);
    cr_assert(strstr(r->err, needle), "%s: stderr\n  %s\nlacks\n  %s", e->name, r->err, needle);
    cr_assert(!strncmp(r->err, "tgraph ", 7), "%s: %s", e->name, r->err);
    free(r);
    remove_dir(dir);
}

/* ---- sdpa beyond its fixtures ---- */

/* Run spec (it must succeed) and load $T/<file>. */
static tg_tensor *run_and_load(const char *spec, const char *dir, const char *file)
{
    char path[512];
    run_result *r = malloc(sizeof *r);
    cr_assert(r);
    run_spec(spec, dir, r);
    cr_assert(r->status == 0 && r->err[0] == '\0', "%s: exit %d: %s", spec, r->status, r->err);
    free(r);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return load_abs(path);
}

static bool same_bits(const tg_tensor *a, const tg_tensor *b)
{
    return a->dtype == b->dtype && a->numel == b->numel &&
           !memcmp(a->data, b->data, (size_t)a->numel * tg_dtype_size(a->dtype));
}

/* dropout_p > 0 drops weights on every run (F.scaled_dot_product_attention has
 * no training flag, and tgraph op no eval switch for it): the mask is the one
 * tg_dropout draws from the same seed over the [B, H, L, S] weights, so the
 * fused op equals einsum, softmax_scaled, dropout and einsum run as four
 * commands. The same seed gives the same bits, another seed another mask;
 * dropout_p=1 gives zeros and zero gradients. */
Test(cli_op, sdpa_dropout)
{
    char dir[256];
    temp_dir(dir, sizeof dir);
    tg_tensor *y = run_and_load("op|sdpa|dropout_p=0.5|seed=3|" SDPA_CROSS "|--out|$T/y.npy", dir,
                                "y.npy");
    tg_tensor_free(run_and_load("op|einsum|equation=blhe,bshe->bhls|"
                                "--in|$F/nn/sdpa_cross/in0.npy|--in|$F/nn/sdpa_cross/in1.npy|"
                                "--out|$T/s.npy", dir, "s.npy"));
    tg_tensor_free(run_and_load("op|softmax_scaled|dim=-1|scale=0.5773502691896258|"
                                "--in|$T/s.npy|--out|$T/a.npy", dir, "a.npy"));
    tg_tensor *a = run_and_load("op|dropout|p=0.5|seed=3|--in|$T/a.npy|--out|$T/ad.npy", dir,
                                "ad.npy");
    tg_tensor *chain = run_and_load("op|einsum|equation=bhls,bshd->blhd|--in|$T/ad.npy|"
                                    "--in|$F/nn/sdpa_cross/in2.npy|--out|$T/yc.npy", dir,
                                    "yc.npy");
    int64_t dropped = 0;
    for (int64_t i = 0; i < a->numel; i++) dropped += tg_tensor_get(a, i) == 0;
    cr_assert(dropped > 0 && dropped < a->numel, "the chain's dropout dropped %lld of %lld",
              (long long)dropped, (long long)a->numel);
    tt_assert_close(y, chain, 1e-6, 1e-5, "sdpa dropout_p=0.5 against the unfused chain");
    /* not the eval result; the same bits again from seed 3, others from seed 4 */
    tg_tensor *eval = tt_load("nn/sdpa_cross", "out0.npy");
    int64_t moved = 0;
    for (int64_t i = 0; i < y->numel; i++)
        moved += fabs(tg_tensor_get(y, i) - tg_tensor_get(eval, i)) > 1e-4;
    cr_assert(moved > 0, "dropout_p=0.5 left every output as without dropout");
    tg_tensor *again = run_and_load("op|sdpa|dropout_p=0.5|seed=3|" SDPA_CROSS "|--out|$T/y.npy",
                                    dir, "y.npy");
    cr_assert(same_bits(y, again), "seed=3 twice gave different bits");
    tg_tensor *other = run_and_load("op|sdpa|dropout_p=0.5|seed=4|" SDPA_CROSS "|--out|$T/y.npy",
                                    dir, "y.npy");
    cr_assert(!same_bits(y, other), "seed=4 gave seed=3's mask");
    /* p = 1: nothing kept, nothing flows back */
    tg_tensor *zero = run_and_load("op|sdpa|dropout_p=1|" SDPA_CROSS "|--out|$T/y.npy|"
                                   "--grad-output|$F/nn/sdpa_cross/dout0.npy|--grad|$T/g0.npy|"
                                   "--grad|$T/g1.npy|--grad|$T/g2.npy", dir, "y.npy");
    for (int64_t i = 0; i < zero->numel; i++)
        cr_assert(tg_tensor_get(zero, i) == 0, "dropout_p=1: y[%lld] = %g", (long long)i,
                  tg_tensor_get(zero, i));
    for (int k = 0; k < 3; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/g%d.npy", dir, k);
        tg_tensor *g = load_abs(path);
        for (int64_t i = 0; i < g->numel; i++)
            cr_assert(tg_tensor_get(g, i) == 0, "dropout_p=1: grad %d [%lld] = %g", k,
                      (long long)i, tg_tensor_get(g, i));
        tg_tensor_free(g);
    }
    tg_tensor_free(y), tg_tensor_free(a), tg_tensor_free(chain), tg_tensor_free(eval);
    tg_tensor_free(again), tg_tensor_free(other), tg_tensor_free(zero);
    remove_dir(dir);
}

/* Bad input gets the builder's own message, unchanged: stderr is exactly
 * "tgraph op: " and what tg_sdpa puts on a graph given tensors of the same
 * shapes and the same arguments. */
typedef struct {
    const char *attrs;          /* '|'-separated */
    const char *in[3];          /* under tests/fixtures */
    bool        causal;
    double      scale, p;
} sdpa_err;

#define CQ "nn/sdpa_cross/in0.npy"   /* [2, 4, 2, 3] */
#define CK "nn/sdpa_cross/in1.npy"   /* [2, 7, 2, 3] */
#define CV "nn/sdpa_cross/in2.npy"   /* [2, 7, 2, 5] */
static const sdpa_err sdpa_errs[] = {
    {"is_causal=true", {CQ, CK, CV}, true, 0.5773502691896258, 0},
    {"dropout_p=0", {"einops/tsa_merge/out0.npy", CK, CV}, false, 0.35355339059327373, 0},
    {"is_causal=false", {CQ, "nn/sdpa_causal/in1.npy", CV}, false, 0.5773502691896258, 0},
    {"seed=1", {CQ, CK, CQ}, false, 0.5773502691896258, 0},
    {"scale=inf", {CQ, CK, CV}, false, INFINITY, 0},
    {"scale=-inf|is_causal=false", {CQ, CK, CV}, false, -INFINITY, 0},
    {"scale=nan", {CQ, CK, CV}, false, NAN, 0},
    {"dropout_p=1.5", {CQ, CK, CV}, false, 0.5773502691896258, 1.5},
    {"dropout_p=-0.1|scale=2", {CQ, CK, CV}, false, 2, -0.1},
    {"dropout_p=nan", {CQ, CK, CV}, false, 0.5773502691896258, NAN},
};
#define N_SDPA_ERRS (int)(sizeof sdpa_errs / sizeof *sdpa_errs)

ParameterizedTestParameters(cli_op, sdpa_builder_message)
{
    static int idx[N_SDPA_ERRS];
    for (int i = 0; i < N_SDPA_ERRS; i++) idx[i] = i;
    return cr_make_param_array(int, idx, N_SDPA_ERRS);
}

ParameterizedTest(int *i, cli_op, sdpa_builder_message)
{
    const sdpa_err *e = &sdpa_errs[*i];
    char dir[256], spec[2048], want[1024];
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *in[3];
    int at = snprintf(spec, sizeof spec, "op|sdpa|%s", e->attrs);
    for (int k = 0; k < 3; k++) {
        tg_tensor *t = tt_load(".", e->in[k]);
        in[k] = tg_input(g, "x", TG_F32, t->rank, t->shape);
        tg_tensor_free(t);
        at += snprintf(spec + at, sizeof spec - (size_t)at, "|--in|$F/%s", e->in[k]);
    }
    snprintf(spec + at, sizeof spec - (size_t)at, "|--out|$T/o.npy");
    cr_assert_null(tg_sdpa(g, in[0], in[1], in[2], e->causal, e->scale, e->p));
    snprintf(want, sizeof want, "tgraph op: %s\n", tg_graph_error(g));
    tg_graph_free(g);
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    run_spec(spec, dir, r);
    cr_assert(r->status == 2, "%s: exit %d (stderr: %s)", spec, r->status, r->err);
    cr_assert(!strcmp(r->err, want), "%s: stderr\n  %s\nexpected\n  %s", spec, r->err, want);
    free(r);
    remove_dir(dir);
}

/* A [rank 4] float32 file of N(0, 1) values under dir; the tensor is returned. */
static tg_tensor *save_randn(const char *dir, const char *name, const int64_t *shape,
                             uint64_t seed)
{
    char path[512];
    tg_tensor *t = tg_tensor_new(TG_F32, 4, shape);
    cr_assert(t);
    tt_randn(t, seed);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    cr_assert(tg_npy_save(path, t) == TG_OK, "%s: %s", path, tg_last_error());
    return t;
}

/* Zero-size dims: L = 0 gives [B, 0, H, D]; S = 0 gives zeros (the softmax
 * over nothing, y a sum of no terms) and a zero dq; E = 0 with a scale gives
 * uniform weights (y = the mean of v over S), and with the default scale
 * 1/sqrt(0) the builder's "scale must be finite". */
Test(cli_op, sdpa_zero_sizes)
{
    char dir[256];
    temp_dir(dir, sizeof dir);
    tg_tensor_free(save_randn(dir, "q_l0.npy", (int64_t[]){2, 0, 1, 3}, 1));
    tg_tensor_free(save_randn(dir, "k.npy", (int64_t[]){2, 4, 1, 3}, 2));
    tg_tensor_free(save_randn(dir, "v.npy", (int64_t[]){2, 4, 1, 5}, 3));
    tg_tensor *y = run_and_load("op|sdpa|--in|$T/q_l0.npy|--in|$T/k.npy|--in|$T/v.npy|"
                                "--out|$T/y.npy", dir, "y.npy");
    cr_assert(y->rank == 4 && y->shape[0] == 2 && y->shape[1] == 0 && y->shape[2] == 1 &&
              y->shape[3] == 5, "L = 0: wrong output shape");
    tg_tensor_free(y);

    tg_tensor_free(save_randn(dir, "q.npy", (int64_t[]){1, 3, 2, 3}, 4));
    tg_tensor_free(save_randn(dir, "k_s0.npy", (int64_t[]){1, 0, 2, 3}, 5));
    tg_tensor_free(save_randn(dir, "v_s0.npy", (int64_t[]){1, 0, 2, 5}, 6));
    tg_tensor_free(save_randn(dir, "dy.npy", (int64_t[]){1, 3, 2, 5}, 7));
    y = run_and_load("op|sdpa|--in|$T/q.npy|--in|$T/k_s0.npy|--in|$T/v_s0.npy|--out|$T/y.npy|"
                     "--grad-output|$T/dy.npy|--grad|$T/gq.npy|--grad|$T/gk.npy|--grad|$T/gv.npy",
                     dir, "y.npy");
    cr_assert(y->numel == 3 * 2 * 5);
    for (int64_t i = 0; i < y->numel; i++) cr_assert(tg_tensor_get(y, i) == 0, "S = 0: y != 0");
    tg_tensor_free(y);
    char path[512];
    snprintf(path, sizeof path, "%s/gq.npy", dir);
    tg_tensor *gq = load_abs(path);
    cr_assert(gq->numel == 3 * 2 * 3);
    for (int64_t i = 0; i < gq->numel; i++) cr_assert(tg_tensor_get(gq, i) == 0, "S = 0: dq != 0");
    tg_tensor_free(gq);

    tg_tensor_free(save_randn(dir, "q_e0.npy", (int64_t[]){1, 3, 2, 0}, 8));
    tg_tensor_free(save_randn(dir, "k_e0.npy", (int64_t[]){1, 4, 2, 0}, 9));
    tg_tensor *v = save_randn(dir, "v_e.npy", (int64_t[]){1, 4, 2, 5}, 10);
    y = run_and_load("op|sdpa|scale=1|--in|$T/q_e0.npy|--in|$T/k_e0.npy|--in|$T/v_e.npy|"
                     "--out|$T/y.npy", dir, "y.npy");
    for (int64_t l = 0; l < 3; l++)
        for (int64_t h = 0; h < 2; h++)
            for (int64_t d = 0; d < 5; d++) {
                double mean = 0;
                for (int64_t s2 = 0; s2 < 4; s2++) mean += tg_tensor_get(v, (s2 * 2 + h) * 5 + d) / 4;
                double got = tg_tensor_get(y, (l * 2 + h) * 5 + d);
                cr_assert(fabs(got - mean) <= 1e-6, "E = 0: y[0,%lld,%lld,%lld] = %g, want %g",
                          (long long)l, (long long)h, (long long)d, got, mean);
            }
    tg_tensor_free(y);
    tg_tensor_free(v);
    run_result *r = malloc(sizeof *r);
    run_spec("op|sdpa|--in|$T/q_e0.npy|--in|$T/k_e0.npy|--in|$T/v_e.npy|--out|$T/y.npy", dir, r);
    cr_assert(r->status == 2 && !strcmp(r->err, "tgraph op: sdpa: scale must be finite, got inf\n"),
              "E = 0, default scale: exit %d: %s", r->status, r->err);
    free(r);
    remove_dir(dir);
}

/* ---- odd but legal-looking input: a result or one error line, never a crash ---- */

#define S0 "$F/select/topk_0d/in0.npy"        /* float 0-d */
#define E0 "$F/io/npy_v1_f32_0x4.npy"         /* float [0, 4] */
#define I2 "$F/select/gather_dim1/in1.npy"    /* int64 [3, 2] */

static const char *const odd[] = {
    "op|reshape|shape=[]|--in|" S0 "|" OUT,
    "op|permute|dims=[]|--in|" S0 "|" OUT,
    "op|split|split_size_or_sections=[]|--in|" X "|" OUT,
    "op|split|split_size_or_sections=0|--in|" E0 "|" OUT,
    "op|split|split_size_or_sections=5|--in|" S0 "|" OUT,
    "op|topk|k=1|--in|" S0 "|" OUT "|--out|$T/i.npy|--grad-output|" S0 "|--grad|$T/g.npy",
    "op|softmax|dim=0|--in|" E0 "|" OUT "|--grad-output|" E0 "|--grad|$T/g.npy",
    "op|mean|--in|" E0 "|" OUT,
    "op|cat|--in|" E0 "|--in|" E0 "|" OUT "|--grad-output|" E0 "|--grad|$T/g.npy|--grad|$T/g1.npy",
    "op|gather|dim=0|--in|" E0 "|--in|" I2 "|" OUT,
    "op|einsum|equation=...,...->...|--in|" S0 "|--in|" E0 "|" OUT,
    "op|repeat|pattern=a b -> a b r|r=0|--in|" X "|" OUT,
    "op|reshape|shape=[99999999999,99999999999]|--in|" X "|" OUT,
    "op|narrow|dim=0|start=-9223372036854775808|length=9223372036854775807|--in|" X "|" OUT,
    "op|slice|start=-9223372036854775808|end=9223372036854775807|step=9223372036854775807|--in|"
    X "|" OUT,
    "op|topk|k=-9223372036854775808|--in|" X "|" OUT "|--out|$T/i.npy",
    "op|causal_mask|B=99999999|L=99999999|" OUT,
    "op|transpose|dim0=-2147483649|dim1=0|--in|" X "|" OUT,
    "op|permute|dims=[99999999999,0]|--in|" X "|" OUT,
    "op|sum|dim=[99999999999]|--in|" X "|" OUT,
    "op|cross_entropy|--in|" S0 "|--in|" I2 "|" OUT,
    "op|linear|--in|" S0 "|--in|" S0 "|" OUT,
    "op|layer_norm|normalized_shape=[]|--in|" X "|" OUT,
    "op|scatter|dim=0|value=inf|--in|" X "|--in|" I2 "|" OUT,
    "gradcheck|einsum|equation=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "gradcheck|einsum|equation=,,,,,,,,,,,,,,,,,,,,",
    "gradcheck|cross_entropy|--shape||--shape|",
    "gradcheck|exp|--shape|99999999999,99999999999",
    "gradcheck|index_select|dim=0|--in|" X "|--shape|3,3",
};
#define N_ODD (int)(sizeof odd / sizeof *odd)

ParameterizedTestParameters(cli_op, odd_input)
{
    static int idx[N_ODD];
    for (int i = 0; i < N_ODD; i++) idx[i] = i;
    return cr_make_param_array(int, idx, N_ODD);
}

ParameterizedTest(int *i, cli_op, odd_input)
{
    char dir[256];
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    run_spec(odd[*i], dir, r);
    cr_assert(r->status == 0 || (r->status == 2 && r->err_lines == 1),
              "%s: exit %d, %d stderr lines:\n%s", odd[*i], r->status, r->err_lines, r->err);
    free(r);
    remove_dir(dir);
}

/* ---- help: every op, each with its attributes and an example ---- */

/* The op names listed by the unknown-op message (the table itself). */
static int op_names(const char *dir, char names[64][32])
{
    run_result *r = malloc(sizeof *r);
    run_spec("op|nosuch", dir, r);
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
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    int n = op_names(dir, names);
    cr_assert(n >= 38, "only %d ops listed", n);
    run_spec("op|--help", dir, r);
    cr_assert(r->status == 0);
    snprintf(help, sizeof help, "%s", r->out);
    run_spec("help|op", dir, r);
    cr_assert(r->status == 0 && !strcmp(help, r->out), "tgraph help op differs from op --help");
    for (int i = 0; i < n; i++) {
        /* op --help lists it; op NAME --help (= help op NAME) has the rest */
        char head[64], spec[256];
        snprintf(head, sizeof head, "\n  %.31s ", names[i]);
        cr_assert(strstr(help, head), "help does not list %s", names[i]);
        snprintf(spec, sizeof spec, "op|%.31s|--help", names[i]);
        run_spec(spec, dir, r);
        cr_assert(r->status == 0, "%s --help: exit %d", names[i], r->status);
        snprintf(block, sizeof block, "%s", r->out);
        snprintf(spec, sizeof spec, "help|op|%.31s", names[i]);
        run_spec(spec, dir, r);
        cr_assert(!strcmp(block, r->out), "tgraph help op %s differs from op %s --help", names[i],
                  names[i]);
        char example[64];
        snprintf(example, sizeof example, "e.g. tgraph op %.31s ", names[i]);
        cr_assert(strstr(block, example), "help of %s has no example:\n%s", names[i], block);
        /* every attribute the op accepts (from its own error message) is in its block */
        snprintf(spec, sizeof spec, "op|%.31s|zz_not_an_attribute=x", names[i]);
        run_spec(spec, dir, r);
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
    remove_dir(dir);
}

Test(cli_op, every_op_has_a_test)
{
    char dir[256], names[64][32];
    temp_dir(dir, sizeof dir);
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
    remove_dir(dir);
}

/* ---- tgraph gradcheck OP ---- */

static void expect_gradcheck(const char *spec, int status, int lines_with_pass)
{
    char dir[256];
    run_result *r = malloc(sizeof *r);
    temp_dir(dir, sizeof dir);
    run_spec(spec, dir, r);
    cr_assert(r->status == status, "%s: exit %d, expected %d\n%s%s", spec, r->status, status,
              r->out, r->err);
    int pass = 0;
    for (const char *p = r->out; (p = strstr(p, "  pass\n")); p++) pass++;
    cr_assert(pass == lines_with_pass, "%s: %d lines pass, expected %d:\n%s", spec, pass,
              lines_with_pass, r->out);
    free(r);
    remove_dir(dir);
}

Test(cli_op, gradcheck_einsum_from_equation)
{
    expect_gradcheck("gradcheck|einsum|equation=blhe,bshe->bhls", 0, 2);
    expect_gradcheck("gradcheck|einsum|equation=i,jj,j->ij|--seed|5", 0, 3);
}

Test(cli_op, gradcheck_random_shapes)
{
    expect_gradcheck("gradcheck|topk|k=3|--shape|4,7|--seed|2", 0, 1);
    expect_gradcheck("gradcheck|gather|dim=1|--shape|3,4|--shape|3,6", 0, 1);
    expect_gradcheck("gradcheck|scatter|dim=0|--shape|4,3|--shape|3,3|--shape|3,3", 0, 2);
    expect_gradcheck("gradcheck|index_select|dim=1|--shape|2,5|--shape|7", 0, 1);
    expect_gradcheck("gradcheck|cross_entropy|label_smoothing=0.1|--shape|4,5|--shape|4", 0, 1);
    expect_gradcheck("gradcheck|masked_fill|value=-2|--shape|3,4|--shape|4", 0, 1);
    expect_gradcheck("gradcheck|split|split_size_or_sections=2|dim=1|--shape|2,5", 0, 1);
    expect_gradcheck("gradcheck|reduce|pattern=b (h 2) w -> b h|reduction=max|--shape|2,6,3",
                     0, 1);
    expect_gradcheck("gradcheck|relu|--shape|50", 0, 1);
    expect_gradcheck("gradcheck|log|--shape|3,4", 0, 1);
    expect_gradcheck("gradcheck|div|--shape|3,4|--shape|4", 0, 2);
    expect_gradcheck("gradcheck|dropout|p=0.4|--shape|5,6", 0, 1);
    expect_gradcheck("gradcheck|mse_loss|--shape||--shape|[]", 0, 2);   /* 0-d */
}

/* sdpa in float64 from random inputs: causal, cross with the default scale,
 * a negative scale, and dropout (gradcheck restores the graph's RNG before
 * each evaluation, so every probe sees the same mask) */
Test(cli_op, gradcheck_sdpa)
{
    expect_gradcheck("gradcheck|sdpa|is_causal=true|--shape|2,5,2,3|--shape|2,5,2,3|"
                     "--shape|2,5,2,4", 0, 3);
    expect_gradcheck("gradcheck|sdpa|--shape|1,3,2,4|--shape|1,6,2,4|--shape|1,6,2,2", 0, 3);
    expect_gradcheck("gradcheck|sdpa|scale=-0.8|--shape|1,4,1,9|--shape|1,4,1,9|--shape|1,4,1,3"
                     "|--seed|3", 0, 3);
    expect_gradcheck("gradcheck|sdpa|dropout_p=0.3|seed=2|is_causal=true|--shape|2,4,2,3|"
                     "--shape|2,4,2,3|--shape|2,4,2,2", 0, 3);
}

Test(cli_op, gradcheck_files)
{
    expect_gradcheck("gradcheck|layer_norm|normalized_shape=[5]|--in|$F/nn/ln_last_affine/in0.npy|"
                     "--in|$F/nn/ln_last_affine/in1.npy|--in|$F/nn/ln_last_affine/in2.npy", 0, 3);
    expect_gradcheck("gradcheck|masked_fill|--in|$F/select/mf_tensor/in0.npy|"
                     "--in|$F/select/mf_tensor/in1.npy|--in|$F/select/mf_tensor/in2.npy", 0, 2);
    expect_gradcheck("gradcheck|cross_entropy|--in|$F/nn/ce_weight_mean/in0.npy|"
                     "--in|$F/nn/ce_weight_mean/in1.npy|--in|$F/nn/ce_weight_mean/in2.npy", 0, 1);
}

/* A check that must fail: sqrt at 1e-9, where x - eps is negative. */
Test(cli_op, gradcheck_failure_exits_1)
{
    char dir[256], path[512];
    temp_dir(dir, sizeof dir);
    tg_tensor *x = tg_tensor_new(TG_F64, 1, (int64_t[]){2});
    tg_tensor_set(x, 0, 1e-9);
    tg_tensor_set(x, 1, 4.0);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    cr_assert(tg_npy_save(path, x) == TG_OK);
    tg_tensor_free(x);
    run_result *r = malloc(sizeof *r);
    run_spec("gradcheck|sqrt|--in|$T/x.npy", dir, r);
    cr_assert(r->status == 1, "exit %d\n%s%s", r->status, r->out, r->err);
    cr_assert(strstr(r->out, "FAIL"), "%s", r->out);
    free(r);
    remove_dir(dir);
}

/* The layer form is unchanged. */
Test(cli_op, gradcheck_layer_still_works)
{
    expect_gradcheck("gradcheck|full_attention|--set|B=1|--set|L=3|--set|S=3|"
                     "--max-per-tensor|6", 0, 3);
}
