/*
 * test_checkpoint.c - checkpoints: a round trip (parameters, Adam state,
 * counters, RNG states, scaler, history, metadata) giving identical model
 * outputs; the file's keys (state_dict names + "tgraph." extras); strict
 * restores naming the key at fault and leaving the store unchanged; and
 * interrupted saves (every allocation failing in turn, and a write failing
 * mid-file) leaving the previous checkpoint loadable.
 */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "checkpoint.h"
#include "internal.h"

static char dir[64];

static void cleanup(void)
{
    char cmd[128];
    if (dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd)) {}
    }
}

TestSuite(checkpoint, .fini = cleanup);

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof dir, "%s", tt_tmpdir());
}

static char *path_in(const char *name)
{
    static char buf[4][128];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

/* fc.weight [4, 3], fc.bias [4], seeded. */
static tg_params *make_store(uint64_t seed)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "fc.weight", 2, (int64_t[]){4, 3});
    tg_param *b = tg_params_add(ps, "fc.bias", 1, (int64_t[]){4});
    tg_rng r;
    tg_rng_seed(&r, seed);
    tg_init_kaiming_uniform(&w->value, sqrt(5.0), &r);
    tg_init_uniform(&b->value, -0.5, 0.5, &r);
    return ps;
}

/* A few Adam steps on random gradients, so the state is non-trivial. */
static void take_steps(tg_params *ps, tg_optim *o, int n, uint64_t seed)
{
    for (int s = 0; s < n; s++) {
        for (int i = 0; i < tg_params_count(ps); i++) tt_randn(&tg_params_at(ps, i)->grad, seed + 10 * s + i);
        cr_assert_eq(tg_optim_step(o), TG_OK);
    }
}

static void fill_state(tg_checkpoint *ck)
{
    tg_checkpoint_init(ck);
    ck->epoch = 3;
    ck->step = 42;
    ck->best_epoch = 2;
    ck->best_val = 0.123456789012345;
    ck->bad_epochs = 1;
    tg_rng_seed(&ck->data_rng, 11);
    tg_rng_seed(&ck->dropout_rng, 12);
    tg_rng_next(&ck->data_rng);   /* a state no seed gives directly */
    ck->scaler = tg_scaler_new(2, (double[]){1.5, -2.25}, (double[]){0.1, 3e10});
    cr_assert_not_null(ck->scaler);
    for (int e = 1; e <= 3; e++) {
        double row[TG_CKPT_HISTORY_COLS] = {e, 14.0 * e, 1.0 / e, 0.5 / e, 1e-3 * pow(0.5, e - 1),
                                            0.25 * e};
        cr_assert_eq(tg_checkpoint_add_history(ck, row), TG_OK);
    }
    cr_assert_eq(tg_checkpoint_set_meta(ck, "model", "linear_forecast"), TG_OK);
    cr_assert_eq(tg_checkpoint_set_meta(ck, "config", "B=4\nseq_len=3"), TG_OK);
}

static void assert_same_tensor(const tg_tensor *a, const tg_tensor *b, const char *what)
{
    cr_assert(tg_tensor_same_shape(a, b), "%s: shapes differ", what);
    for (int64_t i = 0; i < a->numel; i++)
        cr_assert_eq(tg_tensor_get(a, i), tg_tensor_get(b, i), "%s[%lld]", what, (long long)i);
}

/* y = fc(x) on a store, for "identical outputs". */
static tg_tensor *model_output(tg_params *ps)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){5, 3});
    tt_randn((tg_tensor *)tg_node_value(x), 99);
    tg_node *y = tg_linear(g, x, tg_param_node(g, tg_params_find(ps, "fc.weight")),
                           tg_param_node(g, tg_params_find(ps, "fc.bias")));
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    tg_tensor *out = tg_tensor_clone(tg_node_value(y));
    tg_graph_free(g);
    return out;
}

Test(checkpoint, round_trip_gives_identical_state_and_outputs)
{
    mkdir_tmp();
    tg_params *ps = make_store(1);
    tg_optim *o = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1e-2});
    take_steps(ps, o, 3, 5);
    tg_optim_set_lr(o, 2.5e-3);
    tg_checkpoint ck;
    fill_state(&ck);
    cr_assert_eq(tg_checkpoint_save(path_in("c.safetensors"), ps, o, &ck), TG_OK, "%s",
                 tg_last_error());

    /* a fresh store and optimizer, differently initialised */
    tg_params *ps2 = make_store(2);
    tg_optim *o2 = tg_optim_new(ps2, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1});
    tg_checkpoint rd;
    tg_checkpoint_init(&rd);
    cr_assert_eq(tg_checkpoint_read(path_in("c.safetensors"), &rd), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_checkpoint_restore_params(&rd, ps2), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_checkpoint_restore_optim(&rd, ps2, o2), TG_OK, "%s", tg_last_error());
    cr_assert_eq(rd.epoch, 3);
    cr_assert_eq(rd.step, 42);
    cr_assert_eq(rd.best_epoch, 2);
    cr_assert_eq(rd.bad_epochs, 1);
    cr_assert_eq(rd.best_val, 0.123456789012345);
    cr_assert_arr_eq(rd.data_rng.s, ck.data_rng.s, sizeof rd.data_rng.s);
    cr_assert_arr_eq(rd.dropout_rng.s, ck.dropout_rng.s, sizeof rd.dropout_rng.s);
    cr_assert_eq(rd.scaler->cols, 2);
    cr_assert_eq(rd.scaler->mean[1], -2.25);
    cr_assert_eq(rd.scaler->std[1], 3e10);
    cr_assert_eq(rd.history_rows, 3);
    cr_assert_arr_eq(rd.history, ck.history, sizeof(double) * 3 * TG_CKPT_HISTORY_COLS);
    cr_assert_str_eq(tg_checkpoint_meta(&rd, "model"), "linear_forecast");
    cr_assert_str_eq(tg_checkpoint_meta(&rd, "config"), "B=4\nseq_len=3");
    cr_assert_str_eq(tg_checkpoint_meta(&rd, "optim.kind"), "adam");
    cr_assert_eq(tg_optim_steps(o2), 3);
    cr_assert_eq(tg_optim_lr(o2), 2.5e-3);
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_param *a = tg_params_at(ps, i), *b = tg_params_at(ps2, i);
        assert_same_tensor(&a->value, &b->value, a->name);
        assert_same_tensor(&a->state[0], &b->state[0], "exp_avg");
        assert_same_tensor(&a->state[1], &b->state[1], "exp_avg_sq");
    }
    tg_tensor *y1 = model_output(ps), *y2 = model_output(ps2);
    assert_same_tensor(y1, y2, "output");
    /* and the next optimizer step is the same step */
    take_steps(ps, o, 1, 77);
    take_steps(ps2, o2, 1, 77);
    for (int i = 0; i < tg_params_count(ps); i++)
        assert_same_tensor(&tg_params_at(ps, i)->value, &tg_params_at(ps2, i)->value, "after step");
    tg_tensor_free(y1), tg_tensor_free(y2);
    tg_checkpoint_clear(&rd);
    tg_checkpoint_clear(&ck);
    tg_optim_free(o), tg_optim_free(o2);
    tg_params_free(ps), tg_params_free(ps2);
}

Test(checkpoint, keys_are_state_dict_names_plus_tgraph_extras)
{
    mkdir_tmp();
    tg_params *ps = make_store(1);
    tg_optim *o = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1e-2});
    tg_checkpoint ck;
    fill_state(&ck);
    cr_assert_eq(tg_checkpoint_save(path_in("c.safetensors"), ps, o, &ck), TG_OK);
    tg_st_file *f = NULL;
    cr_assert_eq(tg_st_load(path_in("c.safetensors"), &f), TG_OK);
    const char *want[] = {"fc.bias", "fc.weight", "tgraph.history", "tgraph.optim.exp_avg.fc.bias",
                          "tgraph.optim.exp_avg.fc.weight", "tgraph.optim.exp_avg_sq.fc.bias",
                          "tgraph.optim.exp_avg_sq.fc.weight", "tgraph.rng.data",
                          "tgraph.rng.dropout", "tgraph.scaler.mean", "tgraph.scaler.std"};
    cr_assert_eq(tg_st_count(f), 11);
    for (int i = 0; i < 11; i++) cr_assert_str_eq(tg_st_name(f, i), want[i]);
    /* what PyTorch's load_state_dict sees after the documented filter */
    int plain = 0;
    for (int i = 0; i < tg_st_count(f); i++)
        if (strncmp(tg_st_name(f, i), "tgraph.", 7)) {
            plain++;
            cr_assert_not_null(tg_params_find(ps, tg_st_name(f, i)));
            cr_assert_eq(tg_st_tensor(f, i)->dtype, TG_F32);
        }
    cr_assert_eq(plain, tg_params_count(ps));
    cr_assert_str_eq(tg_st_meta_find(f, "format"), "tgraph-checkpoint-1");
    cr_assert_str_eq(tg_st_meta_find(f, "epoch"), "3");
    tg_st_free(f);
    tg_checkpoint_clear(&ck);
    tg_optim_free(o);
    tg_params_free(ps);
}

Test(checkpoint, strict_restore_names_the_key_and_changes_nothing)
{
    mkdir_tmp();
    tg_params *ps = make_store(1);
    tg_checkpoint ck;
    fill_state(&ck);
    cr_assert_eq(tg_checkpoint_save(path_in("c.safetensors"), ps, NULL, &ck), TG_OK);
    tg_checkpoint rd;
    tg_checkpoint_init(&rd);
    cr_assert_eq(tg_checkpoint_read(path_in("c.safetensors"), &rd), TG_OK);

    /* a model with one more parameter: missing in the file */
    tg_params *more = make_store(2);
    tg_params_add(more, "fc2.weight", 2, (int64_t[]){2, 2});
    tg_tensor *before = tg_tensor_clone(&tg_params_find(more, "fc.weight")->value);
    cr_assert_eq(tg_checkpoint_restore_params(&rd, more), TG_ERR_NOT_FOUND);
    tt_assert_last_error("c.safetensors: missing parameter 'fc2.weight' [2, 2]");
    assert_same_tensor(&tg_params_find(more, "fc.weight")->value, before, "unchanged");

    /* a model with one parameter fewer: the file has an unexpected key */
    tg_params *fewer = tg_params_new(TG_F32);
    tg_params_add(fewer, "fc.weight", 2, (int64_t[]){4, 3});
    cr_assert_eq(tg_checkpoint_restore_params(&rd, fewer), TG_ERR_NOT_FOUND);
    tt_assert_last_error("unexpected key 'fc.bias' (no parameter of that name in the model)");

    /* a different shape */
    tg_params *other = tg_params_new(TG_F32);
    tg_params_add(other, "fc.weight", 2, (int64_t[]){4, 5});
    tg_params_add(other, "fc.bias", 1, (int64_t[]){4});
    cr_assert_eq(tg_checkpoint_restore_params(&rd, other), TG_ERR_SHAPE);
    tt_assert_last_error("size mismatch for fc.weight: copying a param with shape [4, 3] from "
                         "checkpoint, the shape in current model is [4, 5]");

    /* no optimizer state was saved */
    tg_optim *o = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1e-2});
    cr_assert_eq(tg_checkpoint_restore_optim(&rd, ps, o), TG_ERR_NOT_FOUND);
    tt_assert_last_error("no optimizer state in the file");

    /* reserved metadata */
    cr_assert_eq(tg_checkpoint_set_meta(&ck, "epoch", "9"), TG_ERR_INVALID);
    tt_assert_last_error("metadata key 'epoch' is reserved");

    tg_tensor_free(before);
    tg_optim_free(o);
    tg_params_free(more), tg_params_free(fewer), tg_params_free(other), tg_params_free(ps);
    tg_checkpoint_clear(&rd);
    tg_checkpoint_clear(&ck);
}

Test(checkpoint, optimizer_kind_must_match)
{
    mkdir_tmp();
    tg_params *ps = make_store(1);
    tg_optim *o = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1e-2});
    tg_checkpoint ck, rd;
    fill_state(&ck);
    tg_checkpoint_init(&rd);
    cr_assert_eq(tg_checkpoint_save(path_in("c.safetensors"), ps, o, &ck), TG_OK);
    cr_assert_eq(tg_checkpoint_read(path_in("c.safetensors"), &rd), TG_OK);
    tg_params *ps2 = make_store(1);
    tg_optim *sgd = tg_optim_new(ps2, &(tg_optim_config){.kind = TG_OPTIM_SGD, .lr = 1,
                                                        .momentum = 0.9});
    cr_assert_eq(tg_checkpoint_restore_optim(&rd, ps2, sgd), TG_ERR_INVALID);
    tt_assert_last_error("the optimizer state is adam's, the run uses sgd");
    tg_optim_free(o), tg_optim_free(sgd);
    tg_params_free(ps), tg_params_free(ps2);
    tg_checkpoint_clear(&rd);
    tg_checkpoint_clear(&ck);
}

Test(checkpoint, not_a_checkpoint)
{
    mkdir_tmp();
    tg_params *ps = make_store(1);
    cr_assert_eq(tg_params_save(ps, path_in("w.safetensors"), 0, NULL, NULL), TG_OK);
    tg_checkpoint rd;
    tg_checkpoint_init(&rd);
    cr_assert_eq(tg_checkpoint_read(path_in("w.safetensors"), &rd), TG_ERR_FORMAT);
    tt_assert_last_error("w.safetensors: not a tgraph checkpoint (metadata format is missing");
    cr_assert_eq(tg_checkpoint_read(path_in("none.safetensors"), &rd), TG_ERR_IO);
    cr_assert_null(rd.file);
    tg_params_free(ps);
}

/* The old checkpoint (store seeded 1) must read back intact. */
static void assert_old_intact(const char *path)
{
    tg_checkpoint rd;
    tg_checkpoint_init(&rd);
    cr_assert_eq(tg_checkpoint_read(path, &rd), TG_OK, "%s", tg_last_error());
    tg_params *want = make_store(1), *got = make_store(3);
    cr_assert_eq(tg_checkpoint_restore_params(&rd, got), TG_OK);
    for (int i = 0; i < tg_params_count(want); i++)
        assert_same_tensor(&tg_params_at(got, i)->value, &tg_params_at(want, i)->value, "old");
    cr_assert_eq(rd.epoch, 3);
    tg_params_free(want), tg_params_free(got);
    tg_checkpoint_clear(&rd);
}

static int files_in_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", dir);
    return system(cmd) == 0 ? 1 : 0;
}

Test(checkpoint, interrupted_save_by_allocation_failure_keeps_the_old_file)
{
    mkdir_tmp();
    const char *path = path_in("checkpoint.safetensors");
    tg_params *ps = make_store(1);
    tg_checkpoint ck;
    fill_state(&ck);
    cr_assert_eq(tg_checkpoint_save(path, ps, NULL, &ck), TG_OK);
    tg_params *ps2 = make_store(2);
    tg_optim *o = tg_optim_new(ps2, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1e-2});
    int failures = 0;
    for (uint64_t k = 1; k < 10000; k++) {
        tg__alloc_fail_after(k);
        tg_status st = tg_checkpoint_save(path, ps2, o, &ck);
        tg__alloc_fail_after(0);
        if (st == TG_OK) break;
        failures++;
        cr_assert_eq(st, TG_ERR_NOMEM, "allocation %llu: %s", (unsigned long long)k,
                     tg_last_error());
        assert_old_intact(path);
        cr_assert(files_in_dir(), "a temporary file was left behind");
    }
    cr_assert_gt(failures, 3);
    /* the save that succeeded wrote the new weights */
    tg_checkpoint rd;
    tg_checkpoint_init(&rd);
    tg_params *got = make_store(3);
    cr_assert_eq(tg_checkpoint_read(path, &rd), TG_OK);
    cr_assert_eq(tg_checkpoint_restore_params(&rd, got), TG_OK);
    assert_same_tensor(&tg_params_at(got, 0)->value, &tg_params_at(ps2, 0)->value, "new");
    tg_checkpoint_clear(&rd);
    tg_checkpoint_clear(&ck);
    tg_optim_free(o);
    tg_params_free(ps), tg_params_free(ps2), tg_params_free(got);
}

Test(checkpoint, interrupted_save_by_write_failure_keeps_the_old_file)
{
    mkdir_tmp();
    const char *path = path_in("checkpoint.safetensors");
    tg_params *ps = make_store(1);
    tg_checkpoint ck;
    fill_state(&ck);
    cr_assert_eq(tg_checkpoint_save(path, ps, NULL, &ck), TG_OK);
    struct stat sb;
    cr_assert_eq(stat(path, &sb), 0);
    /* a bigger model, and a file size limit that cuts its write in the middle */
    tg_params *big = make_store(2);
    tg_params_add(big, "fc2.weight", 2, (int64_t[]){64, 64});
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = (rlim_t)sb.st_size + 4096;   /* the new file needs > 16 KiB */
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tg_status st = tg_checkpoint_save(path, big, NULL, &ck);
    setrlimit(RLIMIT_FSIZE, &old);
    cr_assert_eq(st, TG_ERR_IO, "%s", tg_last_error());
    assert_old_intact(path);
    cr_assert(files_in_dir(), "a temporary file was left behind");
    tg_checkpoint_clear(&ck);
    tg_params_free(ps), tg_params_free(big);
}
