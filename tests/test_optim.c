/*
 * test_optim.c - SGD / Adam / AdamW against torch.optim over five steps
 * (fixtures: tests/fixtures/gen_optim.py), clipping, schedules, bad configs.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"

typedef struct { const char *name; tg_optim_config c; } optim_case;

static void run_case(const char *name, tg_optim_config cfg)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 2, (int64_t[]){3, 4});
    tg_param *b = tg_params_add(ps, "b", 1, (int64_t[]){4});
    tg_tensor *w0 = tt_load("optim", "w0.npy"), *b0 = tt_load("optim", "b0.npy");
    tg_tensor_copy(&w->value, w0);
    tg_tensor_copy(&b->value, b0);
    tg_optim *o = tg_optim_new(ps, &cfg);
    cr_assert_not_null(o, "%s", tg_last_error());
    char f[64], what[96];
    for (int s = 0; s < 5; s++) {
        snprintf(f, sizeof f, "gw%d.npy", s);
        tg_tensor *gw = tt_load("optim", f);
        snprintf(f, sizeof f, "gb%d.npy", s);
        tg_tensor *gb = tt_load("optim", f);
        tg_tensor_copy(&w->grad, gw);
        tg_tensor_copy(&b->grad, gb);
        cr_assert_eq(tg_optim_step(o), TG_OK);
        snprintf(f, sizeof f, "%s_w%d.npy", name, s);
        tg_tensor *ew = tt_load("optim", f);
        snprintf(f, sizeof f, "%s_b%d.npy", name, s);
        tg_tensor *eb = tt_load("optim", f);
        snprintf(what, sizeof what, "%s step %d weight", name, s);
        tt_assert_close(&w->value, ew, 1e-6, 1e-6, what);
        snprintf(what, sizeof what, "%s step %d bias", name, s);
        tt_assert_close(&b->value, eb, 1e-6, 1e-6, what);
        tg_tensor_free(gw), tg_tensor_free(gb), tg_tensor_free(ew), tg_tensor_free(eb);
    }
    cr_assert_eq(tg_optim_steps(o), 5);
    tg_optim_free(o);
    tg_tensor_free(w0), tg_tensor_free(b0);
    tg_params_free(ps);
}

Test(optim, sgd) { run_case("sgd", (tg_optim_config){.kind = TG_OPTIM_SGD, .lr = 0.1}); }
Test(optim, sgd_momentum)
{
    run_case("sgd_momentum", (tg_optim_config){.kind = TG_OPTIM_SGD, .lr = 0.1, .momentum = 0.9,
                                               .dampening = 0.1, .weight_decay = 0.01});
}
Test(optim, sgd_nesterov)
{
    run_case("sgd_nesterov", (tg_optim_config){.kind = TG_OPTIM_SGD, .lr = 0.05, .momentum = 0.9,
                                               .nesterov = true});
}
Test(optim, adam)
{
    run_case("adam", (tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1e-2, .weight_decay = 0.01});
}
Test(optim, adam_betas)
{
    run_case("adam_betas", (tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 3e-3, .beta1 = 0.8,
                                             .beta2 = 0.99, .eps = 1e-6});
}
Test(optim, adamw)
{
    run_case("adamw", (tg_optim_config){.kind = TG_OPTIM_ADAMW, .lr = 1e-2, .weight_decay = 0.1});
}

static void clip_case(const char *name, double max_norm)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 2, (int64_t[]){3, 4});
    tg_param *b = tg_params_add(ps, "b", 1, (int64_t[]){4});
    tg_tensor *gw = tt_load("optim", "gw0.npy"), *gb = tt_load("optim", "gb0.npy");
    tg_tensor_copy(&w->grad, gw);
    tg_tensor_copy(&b->grad, gb);
    double norm = tg_clip_grad_norm(ps, max_norm);
    char f[64];
    snprintf(f, sizeof f, "%s_norm.npy", name);
    tg_tensor *en = tt_load("optim", f);
    cr_assert(fabs(norm - tg_tensor_get(en, 0)) < 1e-5, "norm %g vs %g", norm, tg_tensor_get(en, 0));
    snprintf(f, sizeof f, "%s_gw.npy", name);
    tg_tensor *ew = tt_load("optim", f);
    snprintf(f, sizeof f, "%s_gb.npy", name);
    tg_tensor *eb = tt_load("optim", f);
    tt_assert_close(&w->grad, ew, 1e-6, 1e-6, "clipped weight grad");
    tt_assert_close(&b->grad, eb, 1e-6, 1e-6, "clipped bias grad");
    tg_tensor_free(gw), tg_tensor_free(gb), tg_tensor_free(en), tg_tensor_free(ew),
        tg_tensor_free(eb);
    tg_params_free(ps);
}

Test(optim, clip_grad_norm)
{
    clip_case("clip_small", 0.5);
    clip_case("clip_large", 100.0);
}

Test(optim, schedules)
{
    cr_assert_float_eq(tg_lr_at(TG_LR_CONSTANT, 1e-3, 5, 100, 1000, 0), 1e-3, 1e-15);
    cr_assert_float_eq(tg_lr_at(TG_LR_TYPE1, 1e-4, 0, 0, 0, 0), 1e-4, 1e-18);
    cr_assert_float_eq(tg_lr_at(TG_LR_TYPE1, 1e-4, 3, 0, 0, 0), 1.25e-5, 1e-18);
    cr_assert_float_eq(tg_lr_at(TG_LR_COSINE, 1.0, 0, 0, 110, 10), 0.1, 1e-12);
    cr_assert_float_eq(tg_lr_at(TG_LR_COSINE, 1.0, 0, 9, 110, 10), 1.0, 1e-12);
    cr_assert_float_eq(tg_lr_at(TG_LR_COSINE, 1.0, 0, 60, 110, 10), 0.5, 1e-12);
    cr_assert(tg_lr_at(TG_LR_COSINE, 1.0, 0, 110, 110, 10) < 1e-12);
    tg_lr_schedule s;
    cr_assert_eq(tg_lr_schedule_parse("type1", &s), TG_OK);
    cr_assert_eq(s, TG_LR_TYPE1);
    cr_assert_neq(tg_lr_schedule_parse("type9", &s), TG_OK);
    tt_assert_last_error("unknown learning-rate schedule 'type9'");
}

/* Crossformer's adjust_learning_rate ('type1' in its utils/tools.py): after
 * epoch e (1-based) the rate becomes {2: lr/2, 4: lr/4, 6: lr/8, 8: lr/16,
 * 10: lr/32}[e] when e is a key, else it stays; epoch counted from 0 here. */
Test(optim, schedule_crossformer)
{
    static const double want[] = {1, 1, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.0625, 0.0625,
                                  0.03125, 0.03125, 0.03125, 0.03125, 0.03125, 0.03125,
                                  0.03125, 0.03125, 0.03125, 0.03125};
    for (int e = 0; e < (int)(sizeof want / sizeof *want); e++)
        cr_assert_float_eq(tg_lr_at(TG_LR_CROSSFORMER, 1e-5, e, 0, 0, 0), 1e-5 * want[e], 1e-20,
                           "epoch %d", e);
    tg_lr_schedule s;
    cr_assert_eq(tg_lr_schedule_parse("crossformer", &s), TG_OK);
    cr_assert_eq(s, TG_LR_CROSSFORMER);
    cr_assert_str_eq(tg_lr_schedule_name(s), "crossformer");
    cr_assert_neq(tg_lr_schedule_parse("Crossformer", &s), TG_OK);
    tt_assert_last_error("(constant, type1, cosine, warmup_cosine, crossformer)");
}

Test(optim, bad_configs)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_params_add(ps, "w", 1, (int64_t[]){3});
    cr_assert_null(tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = -1}));
    tt_assert_last_error("Invalid learning rate: -1");
    cr_assert_null(tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1, .beta1 = 1,
                                                        .beta2 = 0.9}));
    tt_assert_last_error("invalid hyper-parameter");
    cr_assert_null(tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_SGD, .lr = 1,
                                                        .nesterov = true}));
    tt_assert_last_error("Nesterov momentum requires a momentum");
    tg_params_free(ps);
}
