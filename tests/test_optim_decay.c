/*
 * test_optim_decay.c - nanoGPT's optimizer setup: AdamW with weight decay
 * on the parameters of rank >= 2 only (its two param groups: the same bits
 * as two optimizers, one with the decay and one without), and its
 * learning-rate schedule get_lr (linear warmup, cosine to min_lr) against
 * values computed by train.py's formula in Python, at the warmup edges and
 * after the decay, as tg_lr_warmup_cosine and as the rates the trainer sets.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"

static void fill(tg_tensor *t, uint64_t seed) { tt_randn(t, seed); }

Test(optim_decay, min_rank_mask_is_two_param_groups)
{
    /* one store, the mask; and the same parameters split over two stores */
    tg_params *ps = tg_params_new(TG_F32), *pa = tg_params_new(TG_F32), *pb = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 2, (int64_t[]){3, 4});
    tg_param *b = tg_params_add(ps, "b", 1, (int64_t[]){4});
    tg_param *wa = tg_params_add(pa, "w", 2, (int64_t[]){3, 4});
    tg_param *bb = tg_params_add(pb, "b", 1, (int64_t[]){4});
    fill(&w->value, 1), fill(&b->value, 2);
    tg_tensor_copy(&wa->value, &w->value);
    tg_tensor_copy(&bb->value, &b->value);
    tg_optim_config c = {.kind = TG_OPTIM_ADAMW, .lr = 1e-2, .weight_decay = 0.1, .beta1 = 0.9,
                         .beta2 = 0.99};
    tg_optim *o = tg_optim_new(ps, &c), *oa = tg_optim_new(pa, &c);
    tg_optim_config c0 = c;
    c0.weight_decay = 0;
    tg_optim *ob = tg_optim_new(pb, &c0);
    cr_assert(tg_optim_decays(o, 0) && tg_optim_decays(o, 1));
    int decayed = -1;
    cr_assert_eq(tg_optim_decay_min_rank(o, 2, &decayed), TG_OK);
    cr_assert_eq(decayed, 1);
    cr_assert(tg_optim_decays(o, 0) && !tg_optim_decays(o, 1) && !tg_optim_decays(o, 2));
    for (int s = 0; s < 4; s++) {
        fill(&w->grad, 10 + (uint64_t)s), fill(&b->grad, 20 + (uint64_t)s);
        tg_tensor_copy(&wa->grad, &w->grad);
        tg_tensor_copy(&bb->grad, &b->grad);
        cr_assert_eq(tg_optim_step(o), TG_OK);
        tg_optim_step(oa), tg_optim_step(ob);
        cr_assert_eq(memcmp(w->value.data, wa->value.data, 12 * sizeof(float)), 0, "step %d w", s);
        cr_assert_eq(memcmp(b->value.data, bb->value.data, 4 * sizeof(float)), 0, "step %d b", s);
    }
    /* and the decay does act: with it on for b, b moves elsewhere */
    cr_assert_eq(tg_optim_set_decay(o, 1, true), TG_OK);
    cr_assert(tg_optim_decays(o, 1));
    fill(&b->grad, 30), fill(&w->grad, 31);
    tg_tensor_copy(&bb->grad, &b->grad);
    tg_optim_step(o), tg_optim_step(ob);
    cr_assert_neq(memcmp(b->value.data, bb->value.data, 4 * sizeof(float)), 0);
    cr_assert_eq(tg_optim_set_decay(o, 2, false), TG_ERR_INVALID);
    tt_assert_last_error("parameter 2 out of range [0, 2)");
    tg_optim_free(o), tg_optim_free(oa), tg_optim_free(ob);
    tg_params_free(ps), tg_params_free(pa), tg_params_free(pb);
}

/* train.py's get_lr with learning_rate 1e-3, min_lr 1e-4, warmup_iters 100,
 * lr_decay_iters 2000, printed by Python (repr). */
static const struct { int64_t it; double lr; } nanogpt_lr[] = {
    {0, 9.900990099009901e-06},    {1, 1.9801980198019803e-05},
    {98, 0.0009801980198019802},   {99, 0.0009900990099009901},
    {100, 0.001},                  {101, 0.0009999993848585915},
    {1000, 0.0005871607054625496}, {1999, 0.00010000061514140841},
    {2000, 0.0001},                {2001, 0.0001},
    {5000, 0.0001},
};

Test(optim_decay, warmup_cosine_is_nanogpt_get_lr)
{
    for (size_t i = 0; i < sizeof nanogpt_lr / sizeof *nanogpt_lr; i++) {
        double got = tg_lr_warmup_cosine(1e-3, 1e-4, nanogpt_lr[i].it, 100, 2000);
        cr_assert(fabs(got - nanogpt_lr[i].lr) <= 1e-18, "it %lld: %.17g, want %.17g",
                  (long long)nanogpt_lr[i].it, got, nanogpt_lr[i].lr);
    }
    /* no warmup; decay_steps <= warmup: min_lr after the warmup */
    cr_assert_eq(tg_lr_warmup_cosine(1.0, 0.1, 0, 0, 10), 1.0);
    cr_assert_eq(tg_lr_warmup_cosine(1.0, 0.1, 5, 5, 5), 0.1);
    tg_lr_schedule s;
    cr_assert_eq(tg_lr_schedule_parse("warmup_cosine", &s), TG_OK);
    cr_assert_eq(s, TG_LR_WARMUP_COSINE);
    cr_assert_str_eq(tg_lr_schedule_name(s), "warmup_cosine");
    cr_assert_eq(tg_lr_at(s, 1.0, 0, 3, 10, 2), tg_lr_warmup_cosine(1.0, 0, 3, 2, 10));
}

/* ---- the trainer sets those rates, step by step ---- */

typedef struct sched_run {
    tg_graph *g;
    tg_node  *x;
    double    lrs[64];
    int       n;
} sched_run;

static tg_status batch(void *user, int64_t epoch, int64_t k, tg_rng *rng)
{
    sched_run *r = user;
    (void)epoch, (void)k;
    float *x = tg_node_value(r->x)->data;
    for (int i = 0; i < 4; i++) x[i] = (float)tg_rng_uniform(rng);
    return TG_OK;
}

static tg_status progress(void *user, const tg_trainer_progress *p)
{
    sched_run *r = user;
    if (p->event == TG_TRAINER_EVENT_STEP && r->n < 64) r->lrs[r->n++] = p->lr;
    return TG_OK;
}

Test(optim_decay, the_trainer_follows_get_lr)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 2, (int64_t[]){1, 4});
    sched_run r = {0};
    r.g = tg_graph_new(TG_F32);
    r.x = tg_input(r.g, "x", TG_F32, 2, (int64_t[]){1, 4});
    tg_node *loss = tg_sum(r.g, tg_mul(r.g, r.x, tg_param_node(r.g, w)), NULL, 0, false);
    cr_assert_null(tg_graph_error(r.g), "%s", tg_graph_error(r.g));
    tg_optim *o = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAMW, .lr = 1});
    tg_trainer t;
    tg_trainer_init(&t);
    t.graph = r.g, t.loss = loss, t.ps = ps, t.optim = o, t.batch = batch, t.user = &r;
    t.progress = progress;
    t.schedule = TG_LR_WARMUP_COSINE, t.lr = 1e-3, t.min_lr = 1e-4, t.warmup = 3;
    t.decay_steps = 12, t.epochs = 4, t.steps_per_epoch = 4;   /* 16 steps: 12..15 at min_lr */
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(r.n, 16);
    for (int s = 0; s < 16; s++)
        cr_assert_eq(r.lrs[s], tg_lr_warmup_cosine(1e-3, 1e-4, s, 3, 12), "step %d", s);
    cr_assert_eq(r.lrs[0], 1e-3 * 1 / 4);
    cr_assert_eq(r.lrs[15], 1e-4);
    t.min_lr = -1;
    cr_assert_eq(tg_trainer_run(&t), TG_ERR_INVALID);
    tt_assert_last_error("min_lr");
    tg_trainer_clear(&t);
    tg_optim_free(o);
    tg_graph_free(r.g);
    tg_params_free(ps);
}
