/*
 * test_itransformer.c - TSL's iTransformer and the shared TSL encoder against
 * the PyTorch oracle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_case.h"
#include "layers.h"

#define ATOL 1e-5
#define RTOL 1e-5

Test(itransformer, oracle_toy) { tt_run_oracle_case("itransformer", ATOL, RTOL); }
Test(itransformer, oracle_nomark_relu) { tt_run_oracle_case("itransformer_nomark", ATOL, RTOL); }
Test(itransformer, oracle_3_layers_4_heads_relu_dff_none)
{
    tt_run_oracle_case("x_itransformer_3l4h", ATOL, RTOL);
}
Test(itransformer, oracle_odd_one_variate_one_mark) { tt_run_oracle_case("x_itransformer_odd", ATOL, RTOL); }
