/*
 * params.h - the parameter store: parameters by PyTorch state_dict name.
 *
 * A store outlives graphs: build a graph, train, free it, build another on
 * the same store. Each parameter has its value, its gradient (backward
 * accumulates into it) and room for optimizer state. Layers create their
 * parameters under a name prefix ("time_attention.query_projection.weight"),
 * so weights move to and from PyTorch by name (see tensor_io.h).
 *
 * Buffers (tg_params_add_buffer) are the rest of a state_dict: non-trained
 * state such as BatchNorm's running_mean, running_var and num_batches_tracked
 * (int64), stored by name beside the parameters. A buffer has no gradient
 * and no optimizer state; optimizers, tg_params_zero_grad and gradcheck never
 * see it (tg_params_count / tg_params_at / tg_params_numel / tg_params_bytes
 * count parameters only, like PyTorch's model.parameters()). A graph reads it
 * as a constant (tg_param_node); an op may update it in a training-mode
 * forward (batch_norm). tg_params_find finds it, tg_params_save and
 * tg_params_load and checkpoints save and restore it with the parameters.
 *
 * Initialisers reproduce PyTorch's default distributions from a tg_rng owned
 * by the caller (not PyTorch's bit stream).
 */
#ifndef TG_PARAMS_H
#define TG_PARAMS_H

#include "tensor.h"
#include "rng.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_PARAM_STATE 2   /* optimizer slots per parameter (Adam: m, v) */

struct tg_param {
    char     *name;                    /* state_dict key, owned by the store */
    tg_tensor value;                   /* owned by the store */
    tg_tensor grad;                    /* same shape, zero at creation */
    tg_tensor state[TG_PARAM_STATE];   /* optimizer state; data NULL until used */
    bool      frozen;                  /* true: graphs treat it as a constant */
    bool      buffer;                  /* a buffer (tg_params_add_buffer): no gradient
                                        * (grad.data NULL), no optimizer state, always
                                        * frozen; its dtype may be TG_I64 */
};
typedef struct tg_param tg_param;
typedef struct tg_params tg_params;

/* An empty store whose parameters have dtype dt (TG_F32 or TG_F64); NULL on
 * OOM or a bad dtype. Free with tg_params_free (frees every parameter).
 *
 * Graphs and stores: a graph holds the store of every parameter it has a node
 * of (tg_param_node) until tg_graph_free. tg_params_free gives up the
 * caller's hold: the store and its parameters are freed at once when no
 * graph holds it, else with the last graph that does, so forward and
 * backward never run on freed parameters. The caller must not use ps (or its
 * tg_param pointers) after tg_params_free either way; a graph built on it
 * stays usable until tg_graph_free. An optimizer holds its store the same
 * way, until tg_optim_free (optim.h). */
tg_params *tg_params_new(tg_dtype dt);
void       tg_params_free(tg_params *ps);
/* A store whose parameters have shapes but no data (value, grad and state
 * data NULL): for counting a model's parameters without allocating them
 * (tgraph summary, the CLI's memory check). Graphs, optimizers, initialisers
 * and savers refuse its parameters (the tensor check: data is NULL). */
tg_params *tg_params_new_shapes(tg_dtype dt);
/* Bytes of the store's parameter values (numel x dtype size, summed; one copy:
 * the gradients take as many again); INT64_MAX when that overflows. Buffers
 * are not counted (a BatchNorm's are 2 C + 1 numbers). */
int64_t    tg_params_bytes(const tg_params *ps);
tg_dtype   tg_params_dtype(const tg_params *ps);

/* Add a zero-filled parameter. NULL (tg_last_error()) when the name exists,
 * is empty, the shape is bad, or memory runs out. The store owns it. */
tg_param *tg_params_add(tg_params *ps, const char *name, int rank, const int64_t *shape);
/* The same with the name given as "%s.weight"-style format. */
tg_param *tg_params_addf(tg_params *ps, int rank, const int64_t *shape, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Add a zero-filled buffer: state_dict state that is not trained (BatchNorm's
 * running statistics). dt is the store's dtype or TG_I64 (a counter such as
 * num_batches_tracked, rank 0 as PyTorch's). Names are unique across
 * parameters, buffers and aliases. NULL (tg_last_error()) as tg_params_add,
 * or when dt is another dtype. The store owns it; p->buffer and p->frozen
 * are true, p->grad has the shape but no data. */
tg_param *tg_params_add_buffer(tg_params *ps, const char *name, tg_dtype dt, int rank,
                               const int64_t *shape);

/* Buffers in creation order (tg_params_count / tg_params_at do not see them). */
int       tg_params_buffer_count(const tg_params *ps);
tg_param *tg_params_buffer_at(const tg_params *ps, int i);   /* NULL out of range */

/* Look up by exact name (an alias finds its parameter, a buffer's name the
 * buffer); NULL when absent (no error recorded; a NULL ps or name is an
 * error: NULL and tg_last_error()). */
tg_param *tg_params_find(const tg_params *ps, const char *name);

/* Tied weights: `alias` becomes a second state_dict name of parameter p
 * (nanoGPT's lm_head.weight is transformer.wte.weight), as PyTorch's
 * state_dict lists a shared tensor under both names. It is no parameter of its
 * own (tg_params_count and tg_params_at do not see it; p has one gradient),
 * but tg_params_find finds p under it, tg_params_load accepts it (its values
 * must equal p's when the file has both names; alone it sets p) and
 * tg_params_save writes p under both names. Errors: the name exists, p is
 * of another store. */
tg_status   tg_params_alias(tg_params *ps, const char *alias, tg_param *p);
int         tg_params_alias_count(const tg_params *ps);
const char *tg_params_alias_name(const tg_params *ps, int i);     /* NULL out of range */
tg_param   *tg_params_alias_target(const tg_params *ps, int i);   /* NULL out of range */

/* Parameters in creation order (no buffers). */
int       tg_params_count(const tg_params *ps);
tg_param *tg_params_at(const tg_params *ps, int i);
/* Total number of scalar parameters: sum(p.numel() for p in model.parameters()),
 * buffers excluded. */
int64_t   tg_params_numel(const tg_params *ps);

/* Set every gradient to zero. */
void tg_params_zero_grad(tg_params *ps);

/* Allocate (zeroed) optimizer slot `slot` of every parameter that lacks it.
 * Called by optimizers at creation, so steps never allocate. */
tg_status tg_params_alloc_state(tg_params *ps, int slot);

/* ---- initialisers (PyTorch's torch.nn.init semantics) ---- */
void tg_init_constant(tg_tensor *t, double v);
void tg_init_uniform(tg_tensor *t, double lo, double hi, tg_rng *rng);
void tg_init_normal(tg_tensor *t, double mean, double std, tg_rng *rng);
/* Normal restricted to [lo, hi] by resampling (trunc_normal_; bounds absolute). */
void tg_init_trunc_normal(tg_tensor *t, double mean, double std, double lo, double hi,
                          tg_rng *rng);
/* kaiming_uniform_(a, mode='fan_in', nonlinearity='leaky_relu'):
 * bound = sqrt(6 / ((1 + a^2) * fan_in)), fan_in = shape[1] * prod(shape[2:]).
 * With a = sqrt(5) this is nn.Linear's weight init, U(+-1/sqrt(fan_in)). */
void tg_init_kaiming_uniform(tg_tensor *t, double a, tg_rng *rng);
/* fan_in as PyTorch computes it (1 for rank < 2: PyTorch raises there). */
int64_t tg_fan_in(const tg_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
