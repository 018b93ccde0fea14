/*
 * layer.h - every attention layer by name, for tools and generic code.
 *
 * Each layer in layers/ has a typed C API (a config struct with PyTorch's
 * defaults, an init that creates its parameters in a store under a name
 * prefix, and a build that adds its forward to a graph inside its own scope).
 * This header wraps them all behind one interface driven by KEY=VALUE
 * configs, with the keys and defaults of shared/oracle/make_case.py --list:
 *
 *     tg_config *cfg = tg_config_new();  tg_config_set(cfg, "d_model=16");
 *     tg_layer *l = tg_layer_new("attention_layer", cfg, ps, "", &rng);
 *     tg_node *in[4];   // one per tg_layer_input, shaped as it says
 *     tg_layer_outputs out;
 *     tg_layer_build(l, g, in, &out);    // out.y, out.attn
 */
#ifndef TG_LAYER_H
#define TG_LAYER_H

#include "graph.h"
#include "params.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One config key: the one key schema of engine/io/value.h (type, default,
 * nullable, doc, range, offset in the layer's config struct). Rows are
 * {name, type, def, nullable, doc, range, offset}; before issue 18 they were
 * {name, type, def, nullable, offset, doc}: move doc before offset and put a
 * range (or NULL) between them. tg_key_type, TG_KEY_* and tg_int_list moved
 * to value.h (included here), so code naming them compiles unchanged. */
typedef tg_key tg_layer_key;

#define TG_MAX_LAYER_INPUTS 4

typedef struct tg_layer_input {
    const char *name;              /* "x", "q", "k", "v", "mask" */
    const char *dims;              /* what each dim is, by config key where there is one:
                                      "B L H E", "b ts_d seg_num d_model", "shape", "B_ N dim" */
    int         rank;
    int64_t     shape[TG_MAX_RANK];
    bool        differentiable;    /* false for masks and token ids */
    int64_t     ids;               /* > 0: int64 token ids in [0, ids) (gpt's idx: vocab_size);
                                      0: a float input of the graph's dtype */
} tg_layer_input;

typedef struct tg_layer_outputs {
    tg_node *y;       /* the layer's output */
    tg_node *attn;    /* attention weights where the layer has them, else NULL */
} tg_layer_outputs;

typedef struct tg_layer tg_layer;

/* Create a layer: read its keys from cfg (unknown keys are an error naming
 * them; missing keys take their defaults; cfg may be NULL), check the
 * configuration, and create its parameters in ps under prefix ("" for none),
 * initialised like PyTorch from rng (NULL: left at zero, e.g. before loading
 * weights). NULL with tg_last_error() on any problem. */
tg_layer *tg_layer_new(const char *name, tg_config *cfg, tg_params *ps, const char *prefix,
                       tg_rng *rng);
void      tg_layer_free(tg_layer *l);

/* The inputs the layer expects, with the shapes its config describes. */
int                   tg_layer_input_count(const tg_layer *l);
const tg_layer_input *tg_layer_input_at(const tg_layer *l, int i);

/* Add the forward to g on inputs shaped as tg_layer_input_at says (inputs:
 * tg_layer_input_count nodes; out: where y and attn go). Returns TG_OK, or
 * the graph's error; TG_ERR_INVALID for a NULL l, g, inputs or out. Dropout follows tg_graph_training(g). */
tg_status tg_layer_build(const tg_layer *l, tg_graph *g, tg_node *const *inputs,
                         tg_layer_outputs *out);

/* The config struct the layer was created with (the layer's own type). */
const void *tg_layer_config(const tg_layer *l);
const char *tg_layer_name(const tg_layer *l);

/* ---- the registry ---- */

typedef struct tg_layer_class {
    const char         *name;          /* "tsa" */
    const char         *summary;       /* one line */
    const tg_layer_key *keys;          /* terminated by a key with name NULL */
    size_t              config_size;
    size_t              state_size;    /* the layer's typed struct */
    /* Validate the filled config (errors name the key). */
    tg_status (*check)(const void *cfg);
    /* Inputs with their shapes from the config; returns the count. */
    int (*inputs)(const void *cfg, tg_layer_input *out);
    /* Create parameters. */
    tg_status (*init)(void *state, const void *cfg, tg_params *ps, const char *prefix,
                      tg_rng *rng);
    /* Build the forward. */
    tg_status (*build)(const void *state, tg_graph *g, tg_node *const *in, tg_layer_outputs *out);
    /* Bit i set: input i is differentiable, but its gradient is autograd's
     * through a detached statistic (TSL's instance normalisation), not the
     * derivative finite differences see. Run and the fixtures compare it;
     * gradcheck leaves the input out (the parameters are checked). */
    unsigned grad_detached_inputs;
} tg_layer_class;

int                    tg_layer_class_count(void);
const tg_layer_class  *tg_layer_class_at(int i);
const tg_layer_class  *tg_layer_class_find(const char *name);   /* NULL if unknown */

/* Fill a config struct from cfg per the key table with tg_keys_resolve
 * (defaults for absent keys; unknown, mistyped and out-of-range keys are
 * errors naming them, prefixed with the layer's name). Exposed for tools
 * that list or infer keys. */
tg_status tg_layer_read_config(const tg_layer_class *cls, tg_config *cfg, void *config);

#ifdef __cplusplus
}
#endif
#endif
