/*
 * layer_cli.h - what the layer subcommands (run, gradcheck, dot, bench,
 * layers) share: --set parsing, building a layer graph with its inputs, and
 * inferring shape keys from input files.
 */
#ifndef TG_LAYER_CLI_H
#define TG_LAYER_CLI_H

#include "args.h"
#include "tgraph.h"

typedef struct tg_cli_layer {
    const char      *cmd;          /* for messages */
    tg_params       *ps;
    tg_layer        *layer;
    tg_graph        *g;
    int              n_in;
    tg_node         *in[TG_MAX_LAYER_INPUTS];
    tg_layer_outputs out;
} tg_cli_layer;

/* Input files given as NAME=FILE.npy. */
typedef struct tg_cli_inputs {
    int        n;
    char      *name[TG_MAX_LAYER_INPUTS];
    tg_tensor *t[TG_MAX_LAYER_INPUTS];
} tg_cli_inputs;

/* Load "NAME=FILE.npy" into in (error message printed; returns 2 on failure, 0 on success). */
int  tg_cli_inputs_add(const char *cmd, tg_cli_inputs *in, const char *item);
void tg_cli_inputs_free(tg_cli_inputs *in);

/* Create layer `name` from cfg in a store of dtype dt and build its graph on
 * input nodes (float inputs require grad when `grads` is set, but for cmd
 * "gradcheck" not one in the class's grad_detached_inputs). Shape keys not
 * given in cfg are taken from `files` (may be NULL); given ones must agree.
 * rng NULL leaves parameters at zero. Returns 0, or 2 after printing one line. */
int tg_cli_layer_build(tg_cli_layer *c, const char *cmd, const char *name, tg_config *cfg,
                       const tg_cli_inputs *files, tg_dtype dt, tg_rng *rng, bool grads);
void tg_cli_layer_free(tg_cli_layer *c);

/* Layer `name`'s parameter count (*trainable: not frozen; may be NULL) and
 * the bytes of their values, from a shapes-only store (nothing allocated).
 * 0, or 2 after printing one line. */
int tg_cli_model_size(const char *cmd, const char *name, tg_config *cfg, tg_dtype dt,
                      int64_t *count, int64_t *trainable, int64_t *bytes);
/* The memory a command may use: $TGRAPH_MEM_LIMIT (bytes, or with a K, M, G
 * or T suffix, powers of 1024) when set, else MemAvailable in /proc/meminfo;
 * 0 when neither is known (no check). *source names which. 0, or 2 after
 * printing one line (a bad TGRAPH_MEM_LIMIT). */
int tg_cli_mem_limit(const char *cmd, int64_t *limit, const char **source);
/* Refuse (2, the figures in the message) a model whose parameters, values
 * and gradients (2 x tg_cli_model_size's bytes), exceed tg_cli_mem_limit,
 * before anything is allocated. 0 when it fits. */
int tg_cli_check_memory(const char *cmd, const char *name, tg_config *cfg, tg_dtype dt);
/* Draw input i of the layer into node n through a temporary (so the process
 * holds each input once, in its graph): N(0, 1) for differentiable inputs,
 * masks 0 or -100 (as make_case.py and gradcheck make them), token ids
 * uniform in [0, ids). The same rng state gives the same data. */
tg_status tg_cli_random_input(const tg_layer *layer, int i, tg_node *n, tg_rng *rng);


/* Add "KEY=VALUE" to cfg, printing the error; returns 0 or 2. */
int tg_cli_set(const char *cmd, tg_config *cfg, const char *item);
/* --set's value and the KEY=VALUE words after it (--set n_layer=4 n_head=4,
 * nanoGPT's habit; a word starting with '-' ends the list). 0 or 2. */
int tg_cli_set_args(tg_args *a, const char *cmd, tg_config *cfg);

#endif
