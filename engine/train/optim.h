/*
 * optim.h - optimizers over a parameter store, with PyTorch's exact update
 * rules (torch.optim.SGD, Adam, AdamW in 1.13, single-tensor path), gradient
 * clipping by global norm, and learning-rate schedules.
 *
 * State (momentum buffer, Adam's exp_avg / exp_avg_sq) lives in each
 * parameter's state slots (params.h) and is allocated when the optimizer is
 * created, so a step never allocates. Frozen parameters are skipped.
 *
 * Parameters added to the store after the optimizer was made are taken in by
 * the next tg_optim_step: their state is allocated then (zeroed, as PyTorch
 * creates its state lazily; that step allocates) and they count their own
 * steps from there (Adam's bias correction, SGD's first momentum step), as
 * PyTorch counts steps per parameter. Added before the first step, they
 * train bit for bit as if the optimizer had been made after them.
 */
#ifndef TG_OPTIM_H
#define TG_OPTIM_H

#include "params.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_optim_kind {
    TG_OPTIM_SGD,
    TG_OPTIM_ADAM,
    TG_OPTIM_ADAMW,
    TG_OPTIM_KIND_COUNT
} tg_optim_kind;

typedef struct tg_optim_config {
    tg_optim_kind kind;
    double lr;             /* required, > 0 */
    double weight_decay;   /* SGD/Adam: L2 added to the gradient; AdamW: decoupled */
    double momentum;       /* SGD */
    double dampening;      /* SGD */
    bool   nesterov;       /* SGD (needs momentum > 0, dampening 0) */
    double beta1, beta2;   /* Adam/AdamW; 0 and 0 select PyTorch's 0.9, 0.999 */
    double eps;            /* Adam/AdamW; 0 selects 1e-8 */
} tg_optim_config;

typedef struct tg_optim tg_optim;

/* An optimizer over every parameter of ps. It holds the store until
 * tg_optim_free, as a graph does (params.h): tg_params_free (and the graphs'
 * tg_graph_free) before tg_optim_free is safe, and the optimizer keeps
 * stepping the store's parameters. NULL with
 * tg_last_error() on a bad config ("lr must be > 0, got -1") or OOM. */
tg_optim *tg_optim_new(tg_params *ps, const tg_optim_config *cfg);
void      tg_optim_free(tg_optim *o);

/* One update from the current gradients. */
tg_status tg_optim_step(tg_optim *o);

double  tg_optim_lr(const tg_optim *o);
void    tg_optim_set_lr(tg_optim *o, double lr);
/* Steps taken (Adam's bias correction uses it); settable for resuming. */
int64_t tg_optim_steps(const tg_optim *o);
void    tg_optim_set_steps(tg_optim *o, int64_t steps);
const tg_optim_config *tg_optim_config_of(const tg_optim *o);

/* Weight decay per parameter (nanoGPT's two param groups): every parameter
 * decays by default; tg_optim_set_decay turns it off or on for parameter i
 * of the store (TG_ERR_INVALID out of range), tg_optim_decays says whether
 * it does (false out of range), and tg_optim_decay_min_rank decays exactly
 * the parameters of rank >= min_rank (nanoGPT: p.dim() >= 2, so weight
 * matrices and embeddings decay, biases and LayerNorm weights do not),
 * *decayed their count. A parameter added to the store later decays. The
 * mask is not in checkpoints: set it again after resuming. */
tg_status tg_optim_set_decay(tg_optim *o, int i, bool decay);
bool      tg_optim_decays(const tg_optim *o, int i);
tg_status tg_optim_decay_min_rank(tg_optim *o, int min_rank, int *decayed);
/* The optimizer state tensor names for checkpoints: "exp_avg", "exp_avg_sq"
 * (Adam/AdamW) or "momentum_buffer" (SGD with momentum); NULL for unused slots. */
const char *tg_optim_slot_name(const tg_optim *o, int slot);

/* torch.nn.utils.clip_grad_norm_(params, max_norm): the global 2-norm of all
 * gradients (returned), and every gradient scaled by
 * min(1, max_norm / (norm + 1e-6)). */
double tg_clip_grad_norm(tg_params *ps, double max_norm);

/* ---- learning-rate schedules ---- */
typedef enum tg_lr_schedule {
    TG_LR_CONSTANT,
    TG_LR_TYPE1,     /* Informer/TSL's 'type1': lr0 * 0.5^epoch (epoch counted from 0) */
    TG_LR_COSINE,    /* linear warmup over `warmup` steps, then cosine decay to 0 at `total` */
    TG_LR_WARMUP_COSINE,   /* nanoGPT's get_lr: tg_lr_warmup_cosine (tg_lr_at: min_lr 0,
                              decay over `total`; the trainer: its min_lr and decay_steps) */
    TG_LR_CROSSFORMER,     /* Crossformer's own 'type1' (its utils/tools.py): lr0 halved
                              after epochs 2, 4, 6, 8 and 10, then kept: lr0 * 0.5^min(epoch
                              / 2, 5) (epoch counted from 0) */
    TG_LR_SCHEDULE_COUNT
} tg_lr_schedule;

/* constant|type1|cosine|warmup_cosine|crossformer */
tg_status   tg_lr_schedule_parse(const char *s, tg_lr_schedule *out);
const char *tg_lr_schedule_name(tg_lr_schedule s);
/* The learning rate at (epoch, step) of a run with `total` steps. */
double tg_lr_at(tg_lr_schedule s, double lr0, int64_t epoch, int64_t step, int64_t total,
                int64_t warmup);

/* nanoGPT's get_lr(it), step = it counted from 0: lr * (step + 1) / (warmup
 * + 1) while step < warmup; min_lr after decay_steps (and from warmup on
 * when decay_steps <= warmup); in between min_lr + 0.5 * (1 + cos(pi *
 * (step - warmup) / (decay_steps - warmup))) * (lr - min_lr). */
double tg_lr_warmup_cosine(double lr, double min_lr, int64_t step, int64_t warmup,
                           int64_t decay_steps);

#ifdef __cplusplus
}
#endif
#endif
