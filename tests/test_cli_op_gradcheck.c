/*
 * test_cli_op_gradcheck.c - `tgraph gradcheck OP`, run as a program: the
 * single-op gradcheck from an equation, from random shapes, from files, sdpa
 * in float64, a check that must fail (exit 1), and the layer form beside it.
 * Not here: gradcheck's bad and odd arguments (test_cli_op_errors.c).
 */
#include "cli_op_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tgraph gradcheck OP ---- */

static void expect_gradcheck(const char *spec, int status, int lines_with_pass)
{
    char dir[256];
    tt_op_result *r = malloc(sizeof *r);
    tt_op_temp_dir(dir, sizeof dir);
    tt_op_run_spec(spec, dir, r);
    cr_assert(r->status == status, "%s: exit %d, expected %d\n%s%s", spec, r->status, status,
              r->out, r->err);
    int pass = 0;
    for (const char *p = r->out; (p = strstr(p, "  pass\n")); p++) pass++;
    cr_assert(pass == lines_with_pass, "%s: %d lines pass, expected %d:\n%s", spec, pass,
              lines_with_pass, r->out);
    free(r);
    tt_op_remove_dir(dir);
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
    tt_op_temp_dir(dir, sizeof dir);
    tg_tensor *x = tg_tensor_new(TG_F64, 1, (int64_t[]){2});
    tg_tensor_set(x, 0, 1e-9);
    tg_tensor_set(x, 1, 4.0);
    snprintf(path, sizeof path, "%s/x.npy", dir);
    cr_assert(tg_npy_save(path, x) == TG_OK);
    tg_tensor_free(x);
    tt_op_result *r = malloc(sizeof *r);
    tt_op_run_spec("gradcheck|sqrt|--in|$T/x.npy", dir, r);
    cr_assert(r->status == 1, "exit %d\n%s%s", r->status, r->out, r->err);
    cr_assert(strstr(r->out, "FAIL"), "%s", r->out);
    free(r);
    tt_op_remove_dir(dir);
}

/* The layer form is unchanged. */
Test(cli_op, gradcheck_layer_still_works)
{
    expect_gradcheck("gradcheck|full_attention|--set|B=1|--set|L=3|--set|S=3|"
                     "--max-per-tensor|6", 0, 3);
}
