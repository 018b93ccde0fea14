/*
 * layer_case.h - test helpers for layers: the PyTorch oracle cases, gradcheck
 * of a registry layer, and config rejection.
 */
#ifndef TG_LAYER_CASE_H
#define TG_LAYER_CASE_H

#include "json.h"
#include "testutil.h"

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
 * init from seed plus 0.1*randn, random inputs (masks: 0/-100). */
int tt_layer_gradcheck(const char *layer, const char *const *sets, int n_sets, uint64_t seed,
                       int64_t max_per_tensor);

/* Assert that creating the layer with these --set items fails with a message
 * containing needle. */
void tt_assert_layer_rejects(const char *layer, const char *const *sets, int n_sets,
                             const char *needle);

#endif
