#include <math.h>

#include "layer_case.h"

#define ATOL 1e-5
#define RTOL 1e-4

Test(assa_topk, oracle) { tt_run_oracle_case("assa_topk", ATOL, RTOL); }
Test(assa_topk, oracle_2heads) { tt_run_oracle_case("assa_topk_2heads", ATOL, RTOL); }
Test(assa_topk, oracle_odd) { tt_run_oracle_case("x_assa_topk_odd", ATOL, RTOL); }
Test(assa_paper, oracle) { tt_run_oracle_case("assa_paper", ATOL, RTOL); }
Test(assa_paper, oracle_perturbed_mask) { tt_run_oracle_case("assa_paper_perturbed_mask", ATOL, RTOL); }
Test(assa_paper, oracle_odd) { tt_run_oracle_case("x_assa_paper_odd", ATOL, RTOL); }
