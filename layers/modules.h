/*
 * modules.h - the nn building blocks the layers are made of, as small structs
 * holding their parameters: nn.Linear, nn.LayerNorm, nn.BatchNorm1d (with its
 * buffers), and the Sequential(Linear, GELU, Linear) MLP of Crossformer.
 *
 * init creates the parameters as "<prefix>.<name>.weight" etc. with PyTorch's
 * default initialisation (rng NULL: zeros / ones); build adds the forward to a
 * graph inside a scope named <name>, so diagrams show one box per module.
 */
#ifndef TG_MODULES_H
#define TG_MODULES_H

#include "graph.h"
#include "params.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_NAME_MAX 256

typedef struct tg_linear_mod {
    char      name[64];        /* attribute name: the scope, e.g. "query_projection" */
    tg_param *weight, *bias;   /* [out, in], [out] or NULL */
    int64_t   in, out;
} tg_linear_mod;

/* nn.Linear(in, out, bias): weight ~ kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(in)),
 * then bias ~ U(+-1/sqrt(in)), drawn in that order. */
tg_status tg_linear_mod_init(tg_linear_mod *m, tg_params *ps, const char *prefix,
                             const char *name, int64_t in, int64_t out, bool bias, tg_rng *rng);
tg_node  *tg_linear_mod_build(tg_graph *g, const tg_linear_mod *m, tg_node *x);

typedef struct tg_layernorm_mod {
    char      name[64];
    tg_param *weight, *bias;   /* [n] each: ones, zeros */
    int64_t   n;
    double    eps;
} tg_layernorm_mod;

/* nn.LayerNorm(n) (eps 1e-5, elementwise affine) over the last dim. */
tg_status tg_layernorm_mod_init(tg_layernorm_mod *m, tg_params *ps, const char *prefix,
                                const char *name, int64_t n);
/* The same with the bias optional (nanoGPT's LayerNorm(ndim, bias)): without
 * it m->bias is NULL and the build adds none. */
tg_status tg_layernorm_mod_init_bias(tg_layernorm_mod *m, tg_params *ps, const char *prefix,
                                     const char *name, int64_t n, bool bias);
tg_node  *tg_layernorm_mod_build(tg_graph *g, const tg_layernorm_mod *m, tg_node *x);

/* nn.BatchNorm1d(C) (eps 1e-5, momentum 0.1, affine, track_running_stats):
 * the parameters <prefix>.<name>.weight (ones) and .bias (zeros) [C], and the
 * buffers (params.h) .running_mean (zeros), .running_var (ones) [C] and
 * .num_batches_tracked (int64, rank 0, 0), in PyTorch's state_dict order. */
typedef struct tg_batchnorm_mod {
    char      name[64];
    tg_param *weight, *bias;                  /* [C] parameters */
    tg_param *running_mean, *running_var;     /* [C] buffers */
    tg_param *num_batches_tracked;            /* [] int64 buffer */
    int64_t   C;
    double    eps, momentum;
} tg_batchnorm_mod;

/* Create the five entries (errors: C <= 0, a name taken, a name too long). */
tg_status tg_batchnorm_mod_init(tg_batchnorm_mod *m, tg_params *ps, const char *prefix,
                                const char *name, int64_t C);
/* tg_batch_norm (ops/batchnorm.h) of x (N, C) or (N, C, L) over channel axis 1
 * with m's entries, inside scope m->name: batch statistics and a running
 * update in training mode (tg_graph_set_training), the running statistics
 * in eval. For (N, L, C) data (PatchTST's Transpose(1, 2), BatchNorm1d,
 * Transpose(1, 2)) transpose around it. */
tg_node  *tg_batchnorm_mod_build(tg_graph *g, const tg_batchnorm_mod *m, tg_node *x);

/* Crossformer's MLP: Sequential(Linear(d_in, d_hidden), GELU(), Linear(d_hidden, d_in)),
 * parameters "<name>.0.*" and "<name>.2.*". */
typedef struct tg_mlp_mod {
    char          name[64];
    tg_linear_mod fc0, fc2;
} tg_mlp_mod;

tg_status tg_mlp_mod_init(tg_mlp_mod *m, tg_params *ps, const char *prefix, const char *name,
                          int64_t d_in, int64_t d_hidden, tg_rng *rng);
tg_node  *tg_mlp_mod_build(tg_graph *g, const tg_mlp_mod *m, tg_node *x);

/* "<prefix>.<name>" or "<name>" when prefix is empty, into buf; TG_ERR_LIMIT if too long. */
tg_status tg_name_join(char *buf, size_t len, const char *prefix, const char *name);

#ifdef __cplusplus
}
#endif
#endif
