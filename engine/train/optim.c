/*
 * optim.c - SGD, Adam and AdamW exactly as torch.optim (1.13, for-loop
 * implementation), in the parameters' own precision.
 *
 * Reading order (engine/generic.h): the optimizer (creation, step,
 * accessors), gradient clipping and the learning-rate schedules; then the
 * update kernels, written once and compiled for float and double at the end
 * of the file.
 */
#ifndef TG_KERNELS /* ============================ the optimizers proper */

#include <math.h>
#include <string.h>

#include "internal.h"
#include "optim.h"
#include "threads.h"
#include "generic.h"

/* the update kernels, float and double (end of this file) */
TG_KERNEL_DECL(static void, sgd_update, (const tg_optim_config *c, double lr, bool first,
                                         tg_param *p));
TG_KERNEL_DECL(static void, adam_update, (const tg_optim_config *c, double lr, int64_t t,
                                          tg_param *p));

struct tg_optim {
    tg_params      *ps;
    tg_optim_config c;
    int64_t         steps;
    /* Parameters added to the store after the optimizer was made get their
     * state on the next step (zeroed, like PyTorch's lazily created state)
     * and count their own steps from there: born[i] is the step count when
     * parameter i joined (0 for those there at creation). */
    int             n_seen;
    int64_t        *born;       /* [n_seen] */
    bool           *no_decay;   /* [n_seen]: weight decay off for this parameter */
};

/* Allocate the state slots this optimizer uses for every parameter lacking them. */
static tg_status alloc_slots(tg_params *ps, const tg_optim_config *c)
{
    tg_status st = TG_OK;
    if (c->kind == TG_OPTIM_SGD) {
        if (c->momentum != 0) st = tg_params_alloc_state(ps, 0);
    } else {
        st = tg_params_alloc_state(ps, 0);
        if (!st) st = tg_params_alloc_state(ps, 1);
    }
    return st;
}

/* Take in parameters added to the store since the last look. */
static tg_status adopt_new_params(tg_optim *o)
{
    int n = tg_params_count(o->ps);
    if (n <= o->n_seen) return TG_OK;
    int64_t *born = tg__realloc(o->born, (size_t)n * sizeof *born);
    if (!born) return tg_set_error(TG_ERR_NOMEM, "tg_optim_step: out of memory");
    o->born = born;
    bool *no_decay = tg__realloc(o->no_decay, (size_t)n * sizeof *no_decay);
    if (!no_decay) return tg_set_error(TG_ERR_NOMEM, "tg_optim_step: out of memory");
    o->no_decay = no_decay;
    tg_status st = alloc_slots(o->ps, &o->c);
    if (st) return st;
    for (int i = o->n_seen; i < n; i++) {
        born[i] = o->steps;
        no_decay[i] = false;
    }
    o->n_seen = n;
    return TG_OK;
}

static const char *const kind_names[TG_OPTIM_KIND_COUNT] = {"sgd", "adam", "adamw"};

tg_optim *tg_optim_new(tg_params *ps, const tg_optim_config *cfg)
{
    TG__NONNULL(ps, NULL);
    TG__NONNULL(cfg, NULL);
    tg_optim_config c = *cfg;
    if ((unsigned)c.kind >= TG_OPTIM_KIND_COUNT) {
        tg_set_error(TG_ERR_INVALID, "optim: unknown optimizer kind %d", (int)c.kind);
        return NULL;
    }
    const char *k = kind_names[c.kind];
    if (c.beta1 == 0 && c.beta2 == 0) c.beta1 = 0.9, c.beta2 = 0.999;
    if (c.eps == 0) c.eps = 1e-8;
    if (!(c.lr > 0) || !isfinite(c.lr)) {
        tg_set_error(TG_ERR_INVALID, "%s: Invalid learning rate: %g (must be > 0)", k, c.lr);
        return NULL;
    }
    if (!(c.weight_decay >= 0) || !(c.momentum >= 0) || !(c.eps > 0) || !(c.beta1 >= 0) ||
        !(c.beta1 < 1) || !(c.beta2 >= 0) || !(c.beta2 < 1) || !(c.dampening >= 0)) {
        tg_set_error(TG_ERR_INVALID, "%s: invalid hyper-parameter (weight_decay %g, momentum %g, "
                     "dampening %g, betas (%g, %g), eps %g)", k, c.weight_decay, c.momentum,
                     c.dampening, c.beta1, c.beta2, c.eps);
        return NULL;
    }
    if (c.nesterov && (c.momentum <= 0 || c.dampening != 0)) {
        tg_set_error(TG_ERR_INVALID, "sgd: Nesterov momentum requires a momentum and zero "
                     "dampening");
        return NULL;
    }
    if (alloc_slots(ps, &c)) return NULL;
    tg_optim *o = tg__calloc(1, sizeof *o);
    if (!o) {
        tg_set_error(TG_ERR_NOMEM, "optim: out of memory");
        return NULL;
    }
    o->ps = ps;
    tg__params_retain(ps);   /* held until tg_optim_free, as a graph holds it */
    o->c = c;
    if (adopt_new_params(o)) {
        tg_optim_free(o);
        return NULL;
    }
    return o;
}

void tg_optim_free(tg_optim *o)
{
    if (!o) return;
    tg__params_release(o->ps);
    tg__free(o->born);
    tg__free(o->no_decay);
    tg__free(o);
}

tg_status tg_optim_step(tg_optim *o)
{
    if (!o) return tg_set_error(TG_ERR_INVALID, "tg_optim_step: o is NULL");
    tg_status st = adopt_new_params(o);
    if (st) return st;
    o->steps++;
    tg_optim_config nodecay = o->c;
    nodecay.weight_decay = 0;
    for (int i = 0; i < o->n_seen; i++) {
        tg_param *p = tg_params_at(o->ps, i);
        if (p->frozen) continue;
        const tg_optim_config *c = o->no_decay[i] ? &nodecay : &o->c;
        /* this parameter's own step count (PyTorch keeps one per parameter) */
        int64_t t = o->steps - o->born[i] < 1 ? 1 : o->steps - o->born[i];
        bool f64 = p->value.dtype == TG_F64;
        if (o->c.kind == TG_OPTIM_SGD) {
            if (f64) sgd_update_f64(c, c->lr, t == 1, p);
            else sgd_update_f32(c, c->lr, t == 1, p);
        } else {
            if (f64) adam_update_f64(c, c->lr, t, p);
            else adam_update_f32(c, c->lr, t, p);
        }
    }
    return TG_OK;
}

double tg_optim_lr(const tg_optim *o)
{
    TG__NONNULL(o, NAN);
    return o->c.lr;
}

void tg_optim_set_lr(tg_optim *o, double lr)
{
    TG__NONNULL_VOID(o);
    o->c.lr = lr;
}

int64_t tg_optim_steps(const tg_optim *o)
{
    TG__NONNULL(o, 0);
    return o->steps;
}

void tg_optim_set_steps(tg_optim *o, int64_t steps)
{
    TG__NONNULL_VOID(o);
    o->steps = steps;
}

tg_status tg_optim_set_decay(tg_optim *o, int i, bool decay)
{
    TG__NONNULL(o, TG_ERR_INVALID);
    tg_status st = adopt_new_params(o);
    if (st) return st;
    if (i < 0 || i >= o->n_seen)
        return tg_set_error(TG_ERR_INVALID, "tg_optim_set_decay: parameter %d out of range "
                            "[0, %d)", i, o->n_seen);
    o->no_decay[i] = !decay;
    return TG_OK;
}

bool tg_optim_decays(const tg_optim *o, int i)
{
    TG__NONNULL(o, false);
    return i >= 0 && i < o->n_seen && !o->no_decay[i];
}

tg_status tg_optim_decay_min_rank(tg_optim *o, int min_rank, int *decayed)
{
    TG__NONNULL(o, TG_ERR_INVALID);
    TG__NONNULL(decayed, TG_ERR_INVALID);
    tg_status st = adopt_new_params(o);
    if (st) return st;
    *decayed = 0;
    for (int i = 0; i < o->n_seen; i++) {
        o->no_decay[i] = tg_params_at(o->ps, i)->value.rank < min_rank;
        *decayed += !o->no_decay[i];
    }
    return TG_OK;
}

const tg_optim_config *tg_optim_config_of(const tg_optim *o)
{
    TG__NONNULL(o, NULL);
    return &o->c;
}

const char *tg_optim_slot_name(const tg_optim *o, int slot)
{
    TG__NONNULL(o, NULL);
    if (o->c.kind == TG_OPTIM_SGD) return slot == 0 && o->c.momentum != 0 ? "momentum_buffer" : NULL;
    return slot == 0 ? "exp_avg" : slot == 1 ? "exp_avg_sq" : NULL;
}

double tg_clip_grad_norm(tg_params *ps, double max_norm)
{
    double sq = 0;
    TG__NONNULL(ps, NAN);
    for (int i = 0; i < tg_params_count(ps); i++) {
        const tg_tensor *g = &tg_params_at(ps, i)->grad;
        for (int64_t k = 0; k < g->numel; k++) {
            double v = tg_tensor_get(g, k);
            sq += v * v;
        }
    }
    double norm = sqrt(sq), coef = max_norm / (norm + 1e-6);
    if (coef < 1)
        for (int i = 0; i < tg_params_count(ps); i++) {
            tg_tensor *g = &tg_params_at(ps, i)->grad;
            for (int64_t k = 0; k < g->numel; k++) tg_tensor_set(g, k, tg_tensor_get(g, k) * coef);
        }
    return norm;
}

static const char *const schedule_names[TG_LR_SCHEDULE_COUNT] = {"constant", "type1", "cosine",
                                                                      "warmup_cosine",
                                                                      "crossformer"};

const char *tg_lr_schedule_name(tg_lr_schedule s)
{
    return (unsigned)s < TG_LR_SCHEDULE_COUNT ? schedule_names[s] : "unknown";
}

tg_status tg_lr_schedule_parse(const char *s, tg_lr_schedule *out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    for (int i = 0; i < TG_LR_SCHEDULE_COUNT; i++)
        if (s && !strcmp(s, schedule_names[i])) {
            *out = (tg_lr_schedule)i;
            return TG_OK;
        }
    return tg_set_error(TG_ERR_INVALID, "unknown learning-rate schedule '%s' (constant, type1, "
                        "cosine, warmup_cosine, crossformer)", s ? s : "(null)");
}

double tg_lr_at(tg_lr_schedule s, double lr0, int64_t epoch, int64_t step, int64_t total,
                int64_t warmup)
{
    switch (s) {
    case TG_LR_TYPE1:
        return lr0 * pow(0.5, (double)(epoch < 0 ? 0 : epoch));
    case TG_LR_CROSSFORMER:
        return lr0 * pow(0.5, (double)(epoch < 0 ? 0 : epoch / 2 < 5 ? epoch / 2 : 5));
    case TG_LR_COSINE:
        if (warmup > 0 && step < warmup) return lr0 * (double)(step + 1) / (double)warmup;
        if (total <= warmup) return lr0;
        return 0.5 * lr0 *
               (1 + cos(3.14159265358979323846 * (double)(step - warmup) / (double)(total - warmup)));
    case TG_LR_WARMUP_COSINE:
        return tg_lr_warmup_cosine(lr0, 0, step, warmup, total);
    default:
        return lr0;
    }
}

/* nanoGPT's get_lr(it) (train.py), term by term. */
double tg_lr_warmup_cosine(double lr, double min_lr, int64_t step, int64_t warmup,
                           int64_t decay_steps)
{
    if (step < warmup) return lr * (double)(step + 1) / (double)(warmup + 1);
    if (step > decay_steps || decay_steps <= warmup) return min_lr;
    double decay_ratio = (double)(step - warmup) / (double)(decay_steps - warmup);
    double coeff = 0.5 * (1.0 + cos(3.14159265358979323846 * decay_ratio));
    return min_lr + coeff * (lr - min_lr);
}

/* ---- the update kernels, once per type ---- */

#define TG_SELF "optim.c"
#include "instantiate.h"

#else /* ================================== kernels, compiled once per type */
#include "generic.h"

/* torch.optim.SGD:
 *   g = grad + wd * p
 *   buf = g (first step) | momentum * buf + (1 - dampening) * g
 *   g = g + momentum * buf (nesterov) | buf
 *   p -= lr * g */
static void TG_F(sgd_update)(const tg_optim_config *c, double lr, bool first, tg_param *p)
{
    TG_T *w = p->value.data, *buf = p->state[0].data;
    const TG_T *gr = p->grad.data;
    const TG_T wd = (TG_T)c->weight_decay, mom = (TG_T)c->momentum, damp = (TG_T)c->dampening;
    for (int64_t i = 0; i < p->value.numel; i++) {
        TG_T g = gr[i];
        if (c->weight_decay != 0) g += wd * w[i];
        if (c->momentum != 0) {
            buf[i] = first ? g : mom * buf[i] + (1 - damp) * g;
            g = c->nesterov ? g + mom * buf[i] : buf[i];
        }
        w[i] -= (TG_T)lr * g;
    }
}

typedef struct TG_F(adam_job) {
    const tg_optim_config *c;
    tg_param *p;
    TG_T step, bc2s, eps, b1, b2, wd, decay;
} TG_F(adam_job);

/* elements [begin, end) of one parameter: each on its own, so any split of
 * the range over threads gives the same bits */
static void TG_F(adam_range)(void *ctx, int64_t begin, int64_t end, int tid)
{
    const TG_F(adam_job) *j = ctx;
    TG_T *w = j->p->value.data, *m = j->p->state[0].data, *v = j->p->state[1].data;
    const TG_T *gr = j->p->grad.data;
    const TG_T step = j->step, bc2s = j->bc2s, eps = j->eps, b1 = j->b1, b2 = j->b2;
    (void)tid;
    if (j->c->kind == TG_OPTIM_ADAMW) {
        const TG_T decay = j->decay;
        for (int64_t i = begin; i < end; i++) {
            TG_T g = gr[i];
            w[i] *= decay;
            m[i] = m[i] * b1 + g * (1 - b1);
            v[i] = v[i] * b2 + g * g * (1 - b2);
            w[i] += -step * (m[i] / (TG_M(sqrt)(v[i]) / bc2s + eps));
        }
        return;
    }
    const TG_T wd = j->wd;
    const bool decay = j->c->weight_decay != 0;
    for (int64_t i = begin; i < end; i++) {
        TG_T g = gr[i];
        if (decay) g += wd * w[i];
        m[i] = m[i] * b1 + g * (1 - b1);
        v[i] = v[i] * b2 + g * g * (1 - b2);
        w[i] += -step * (m[i] / (TG_M(sqrt)(v[i]) / bc2s + eps));
    }
}

/* torch.optim.Adam / AdamW (t = step count after increment):
 *   AdamW: p *= 1 - lr * wd            Adam: g = grad + wd * p
 *   m = b1 m + (1 - b1) g ;  v = b2 v + (1 - b2) g^2
 *   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
 * on the thread pool for big parameters (a GPT-2-sized model's update is
 * memory-bound: hundreds of MB a step) */
static void TG_F(adam_update)(const tg_optim_config *c, double lr, int64_t t, tg_param *p)
{
    const double bc1 = 1 - pow(c->beta1, (double)t), bc2 = 1 - pow(c->beta2, (double)t);
    TG_F(adam_job) j = {c, p, (TG_T)(lr / bc1), (TG_T)sqrt(bc2), (TG_T)c->eps, (TG_T)c->beta1,
                        (TG_T)c->beta2, (TG_T)c->weight_decay, (TG_T)(1 - lr * c->weight_decay)};
    tg_parallel_for(p->value.numel, 32768, TG_F(adam_range), &j);
}

#endif
