/*
 * nn_fixture.h - the table-driven fixture runner shared by the nn op suites
 * (test_layernorm, test_activation, test_concat, test_crossentropy).
 *
 * A case names a folder under tests/fixtures/nn/ (written by gen_nn.py) and a
 * build function. Inputs in<i>.npy become input nodes: float ones in the
 * graph's dtype, requiring grad iff grad<i>.npy exists; int64 ones as int64.
 * Outputs out<j>.npy are compared with the build's outputs, then grad<i>.npy
 * with the gradients of sum_j sum(out_j * dout_j).
 */
#ifndef NN_FIXTURE_H
#define NN_FIXTURE_H

#include "testutil.h"

#define NN_MAX_IO 8

/* Build the op(s) on in[0..n_in); write the outputs to out[], return their
 * count (0 on error: the graph error is reported). */
typedef int (*nn_build_fn)(tg_graph *g, tg_node **in, tg_node **out);

typedef struct {
    const char *name;        /* folder under nn/ */
    int         n_in;
    nn_build_fn build;
    bool        no_gradcheck;   /* e.g. a NaN output: leave it out of the gradcheck table */
} nn_case;

/* Float32 graph against PyTorch: forward, then every input gradient
 * (atol 1e-6, rtol 1e-5). */
void nn_fixture_run(const nn_case *c);

/* Float64 graph: tg_gradcheck of every float input that has a grad fixture
 * (fails for a no_gradcheck case). */
void nn_gradcheck_run(const nn_case *c);

#endif
