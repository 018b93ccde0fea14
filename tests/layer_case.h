/*
 * layer_case.h - test helpers for layers: a registry layer built into a graph
 * (tt_layer_new, tt_case_layer), the PyTorch oracle cases, gradcheck of a
 * registry layer, and config rejection.
 */
#ifndef TG_LAYER_CASE_H
#define TG_LAYER_CASE_H

#include "json.h"
#include "testutil.h"

/* ---- a registry layer, its parameter store and a graph it is built into ---- */

/* How tt_layer_new builds; all zero (or NULL options): float32, parameters
 * left at zero (no RNG), every input zero and requiring grad where it is
 * differentiable, eval mode, fused ops. */
typedef struct tt_layer_opts {
    tg_dtype dtype;        /* the store's, the graph's and every float input's */
    bool     init;         /* parameters initialised like PyTorch from an RNG seeded with seed */
    uint64_t seed;
    uint64_t randn_seed;   /* > 0: float input i ~ N(0, 1) from tt_randn(randn_seed + i) */
    bool     training;     /* tg_graph_set_training */
    bool     unfused;      /* tg_graph_set_unfused */
    bool     no_grad;      /* no input requires grad */
    bool     no_graph;     /* the store and the layer only: g, in and out stay zero */
} tt_layer_opts;

typedef struct tt_layer {
    tg_params       *ps;
    tg_layer        *l;
    tg_graph        *g;
    tg_node         *in[TG_MAX_LAYER_INPUTS];   /* named and shaped as tg_layer_input_at says;
                                                    token ids int64 */
    tg_layer_outputs out;
} tt_layer;

/* Create the registry layer with these --set items (KEY=VALUE) in a new store
 * and build it into a new graph on one input node per tg_layer_input; fails
 * the test on any error. o may be NULL. Free with tt_layer_free. */
tt_layer tt_layer_new(const char *layer, const char *const *sets, int n_sets,
                      const tt_layer_opts *o);
void tt_layer_free(tt_layer *t);
/* tt_layer_new for the layer and config of fixtures/DIR/case.json. */
tt_layer tt_case_layer(const char *dir, const tt_layer_opts *o);

/* The case's layer name (into layer) and its config as a tg_config (free it). */
tg_config *tt_case_config(const char *dir, char *layer, size_t layer_len);
/* Parse fixtures/DIR/case.json into *doc; returns the text to tg_free after
 * tg__json_free(doc). */
void *tt_case_json(const char *dir, tg__json_doc *doc);

/* Build the case's layer from its case.json config, load weights.safetensors
 * by name, run the inputs, and compare y, attn (when present) and every
 * gradient in grads.safetensors (parameters and input.<name>). */
void tt_run_oracle_case(const char *name, double atol, double rtol);

/* Gradcheck a registry layer in float64 with the given --set items, PyTorch
 * init from seed plus 0.1*randn, random inputs (masks: 0/-100). Inputs in
 * the class's grad_detached_inputs are left out (their gradient is not the
 * derivative): the parameters only. */
int tt_layer_gradcheck(const char *layer, const char *const *sets, int n_sets, uint64_t seed,
                       int64_t max_per_tensor);

/* Assert that creating the layer with these --set items fails with a message
 * containing needle. */
void tt_assert_layer_rejects(const char *layer, const char *const *sets, int n_sets,
                             const char *needle);

#endif
