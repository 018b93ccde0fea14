/*
 * test_cli_op_errors.c - `tgraph op` (and `tgraph gradcheck OP`) on what it
 * must refuse or survive, run as a program: each class of bad input (exit
 * status 2 and exactly one line on stderr), odd but legal-looking input (a
 * result or one error line, never a crash), and sdpa beyond its fixtures:
 * its dropout against the unfused four-command chain, its builder's messages
 * verbatim, zero-size dims. Not here: the ops on their fixtures and the help
 * (test_cli_op.c), gradcheck runs that pass or fail (test_cli_op_gradcheck.c).
 *
 * Fixtures: tests/fixtures/gen_*.py; no Python runs here.
 */
#include "cli_op_run.h"

#include <criterion/parameterized.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    write_bad_files(dir);
    char store[1024];
    char *one[1];
    tt_op_split_args(e->needle, dir, store, sizeof store, one);
    snprintf(needle, sizeof needle, "%s", one[0]);
    tt_op_run_spec(e->args, dir, r);
    cr_assert(r->status == 2, "%s: exit status %d, expected 2 (stderr: %s)", e->name, r->status,
              r->err);
    cr_assert(r->err_lines == 1, "%s: %d lines on stderr, expected 1:\n%s", e->name,
              r->err_lines, r->err);
    cr_assert(strstr(r->err, needle), "%s: stderr\n  %s\nlacks\n  %s", e->name, r->err, needle);
    cr_assert(!strncmp(r->err, "tgraph ", 7), "%s: %s", e->name, r->err);
    free(r);
    tt_op_remove_dir(dir);
}

/* ---- sdpa beyond its fixtures ---- */

/* Run spec (it must succeed) and load $T/<file>. */
static tg_tensor *run_and_load(const char *spec, const char *dir, const char *file)
{
    char path[512];
    tt_op_result *r = malloc(sizeof *r);
    cr_assert(r);
    tt_op_run_spec(spec, dir, r);
    cr_assert(r->status == 0 && r->err[0] == '\0', "%s: exit %d: %s", spec, r->status, r->err);
    free(r);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return tt_op_load(path);
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
    tt_op_temp_dir(dir, sizeof dir);
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
        tg_tensor *g = tt_op_load(path);
        for (int64_t i = 0; i < g->numel; i++)
            cr_assert(tg_tensor_get(g, i) == 0, "dropout_p=1: grad %d [%lld] = %g", k,
                      (long long)i, tg_tensor_get(g, i));
        tg_tensor_free(g);
    }
    tg_tensor_free(y), tg_tensor_free(a), tg_tensor_free(chain), tg_tensor_free(eval);
    tg_tensor_free(again), tg_tensor_free(other), tg_tensor_free(zero);
    tt_op_remove_dir(dir);
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
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tt_op_run_spec(spec, dir, r);
    cr_assert(r->status == 2, "%s: exit %d (stderr: %s)", spec, r->status, r->err);
    cr_assert(!strcmp(r->err, want), "%s: stderr\n  %s\nexpected\n  %s", spec, r->err, want);
    free(r);
    tt_op_remove_dir(dir);
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
    tt_op_temp_dir(dir, sizeof dir);
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
    tg_tensor *gq = tt_op_load(path);
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
    tt_op_result *r = malloc(sizeof *r);
    tt_op_run_spec("op|sdpa|--in|$T/q_e0.npy|--in|$T/k_e0.npy|--in|$T/v_e.npy|--out|$T/y.npy",
                   dir, r);
    cr_assert(r->status == 2 && !strcmp(r->err, "tgraph op: sdpa: scale must be finite, got inf\n"),
              "E = 0, default scale: exit %d: %s", r->status, r->err);
    free(r);
    tt_op_remove_dir(dir);
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
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tt_op_run_spec(odd[*i], dir, r);
    cr_assert(r->status == 0 || (r->status == 2 && r->err_lines == 1),
              "%s: exit %d, %d stderr lines:\n%s", odd[*i], r->status, r->err_lines, r->err);
    free(r);
    tt_op_remove_dir(dir);
}
