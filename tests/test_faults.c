/*
 * test_faults.c - allocation-failure sweeps: fail the Nth allocation for
 * N = 1, 2, ... until the whole job gets through, for building and running
 * a real layer from the registry, loading tensor files and parameter stores,
 * and a full training step (forward, backward, optimizer step).
 *
 * Every failure must come back as an error status or NULL with a message
 * saying memory ran out, never a crash; the sanitizer build (`make asan`)
 * checks that nothing leaks on any of the failure paths. Not here: write
 * failures (test_robust.c) and the bad-input messages of each op.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "internal.h"

/* Most failure points a sweep walks before giving up (a job that never
 * completes under injection would be a bug of its own). */
#define MAX_SWEEP 20000

/* The last error must say memory ran out: a failed allocation reported as
 * some other problem ("unknown key", "shape mismatch") misleads the user. */
static void assert_oom_message(const char *msg, uint64_t n, const char *step)
{
    cr_assert(msg && *msg, "N=%llu: %s failed without a message", (unsigned long long)n, step);
    cr_assert(strstr(msg, "out of memory") || strstr(msg, "Cannot allocate memory"),
              "N=%llu: %s failed with a message that does not say memory ran out: %s",
              (unsigned long long)n, step, msg);
}

/* ---- (a) building and running attention_layer from the registry ---- */

typedef struct job {
    tg_config *cfg;
    tg_params *ps;
    tg_layer  *layer;
    tg_graph  *g;
    tg_optim  *opt;
    tg_node   *loss;
} job;

static void job_free(job *j)
{
    tg_optim_free(j->opt);
    tg_graph_free(j->g);
    tg_layer_free(j->layer);
    tg_params_free(j->ps);
    tg_config_free(j->cfg);
    memset(j, 0, sizeof *j);
}

/* Build attention_layer (d_model 8, 2 heads, L = S = 3) and, with `train`,
 * an MSE loss against a target input. Returns the step that failed, or NULL. */
static const char *job_build(job *j, bool train, uint64_t n)
{
    static const char *const sets[] = {"B=2", "L=3", "S=3", "d_model=8", "n_heads=2"};
    j->cfg = tg_config_new();
    if (!j->cfg) return "tg_config_new";
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        if (tg_config_set(j->cfg, sets[i]) != TG_OK) return "tg_config_set";
    j->ps = tg_params_new(TG_F32);
    if (!j->ps) return "tg_params_new";
    tg_rng rng;
    tg_rng_seed(&rng, 7);
    j->layer = tg_layer_new("attention_layer", j->cfg, j->ps, "attn", &rng);
    if (!j->layer) return "tg_layer_new";
    j->g = tg_graph_new(TG_F32);
    if (!j->g) return "tg_graph_new";
    tg_node *in[TG_MAX_LAYER_INPUTS] = {0};
    int n_in = tg_layer_input_count(j->layer);
    for (int i = 0; i < n_in; i++) {
        const tg_layer_input *li = tg_layer_input_at(j->layer, i);
        in[i] = tg_input(j->g, li->name, TG_F32, li->rank, li->shape);
        if (in[i]) tt_randn((tg_tensor *)tg_node_value(in[i]), 100 + (uint64_t)i);
    }
    tg_layer_outputs out = {0};
    if (tg_layer_build(j->layer, j->g, in, &out) != TG_OK) {
        cr_assert_not_null(tg_graph_error(j->g), "N=%llu: build failed, graph not in error",
                           (unsigned long long)n);
        return "tg_layer_build";
    }
    if (!train) {
        j->loss = out.y;
        return NULL;
    }
    const tg_tensor *y = tg_node_value(out.y);
    tg_node *t = tg_input(j->g, "target", TG_F32, y->rank, y->shape);
    if (t) tt_randn((tg_tensor *)tg_node_value(t), 200);
    j->loss = tg_mse_loss(j->g, out.y, t, TG_REDUCTION_MEAN);
    if (!j->loss) return "tg_mse_loss";
    j->opt = tg_optim_new(j->ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 1e-3});
    if (!j->opt) return "tg_optim_new";
    return NULL;
}

/* The error message behind a failed step: the graph's, else the thread's. */
static const char *job_error(const job *j)
{
    const char *ge = j->g ? tg_graph_error(j->g) : NULL;
    return ge ? ge : tg_last_error();
}

/* Run sweep N = 1, 2, ... over fn until it completes with injection on;
 * returns the number of failure points walked. */
typedef bool (*sweep_fn)(uint64_t n);

static uint64_t sweep(sweep_fn fn)
{
    uint64_t n;
    for (n = 1; n < MAX_SWEEP; n++)
        if (fn(n)) return n;
    cr_assert_fail("the job never completed under %d injected failures", MAX_SWEEP);
    return n;
}

/* One attempt at (a): build and run forward; true when it all went through. */
static bool layer_forward_at(uint64_t n)
{
    job j = {0};
    tg_clear_error();
    tg__alloc_fail_after(n);
    const char *failed = job_build(&j, false, n);
    tg_status st = TG_OK;
    if (!failed && (st = tg_graph_forward(j.g)) != TG_OK) failed = "tg_graph_forward";
    tg__alloc_fail_after(0);
    if (failed) {
        cr_assert(st == TG_OK || st == TG_ERR_NOMEM, "N=%llu: forward returned %s",
                  (unsigned long long)n, tg_status_str(st));
        assert_oom_message(job_error(&j), n, failed);
    } else {
        const tg_tensor *y = tg_node_value(j.loss);
        cr_assert_eq(y->rank, 3);
        cr_assert_eq(y->shape[2], 8);
    }
    job_free(&j);
    return !failed;
}

Test(faults, attention_layer_build_and_forward_sweep)
{
    tt_deadline(120);
    uint64_t n = sweep(layer_forward_at);
    cr_assert_gt(n, 30, "only %llu allocations: is injection reaching the layer?",
                 (unsigned long long)n);
}

/* ---- (c) a training step: forward, backward, Adam step, twice ---- */

static bool train_step_at(uint64_t n)
{
    job j = {0};
    tg_clear_error();
    tg__alloc_fail_after(n);
    const char *failed = job_build(&j, true, n);
    tg_status st = TG_OK;
    for (int step = 0; step < 2 && !failed; step++) {
        tg_params_zero_grad(j.ps);
        if ((st = tg_graph_forward(j.g)) != TG_OK) failed = "tg_graph_forward";
        else if ((st = tg_graph_backward(j.g, j.loss, NULL)) != TG_OK) failed = "tg_graph_backward";
        else if ((st = tg_optim_step(j.opt)) != TG_OK) failed = "tg_optim_step";
    }
    tg__alloc_fail_after(0);
    if (failed) {
        cr_assert(st == TG_OK || st == TG_ERR_NOMEM, "N=%llu: %s returned %s",
                  (unsigned long long)n, failed, tg_status_str(st));
        assert_oom_message(job_error(&j), n, failed);
    } else {
        cr_assert_eq(tg_optim_steps(j.opt), 2);
        /* the step did something: Adam moved every parameter */
        tg_param *p = tg_params_find(j.ps, "attn.query_projection.weight");
        cr_assert_not_null(p);
        cr_assert_not_null(p->grad.data);
    }
    job_free(&j);
    return !failed;
}

Test(faults, training_step_sweep)
{
    tt_deadline(240);
    uint64_t n = sweep(train_step_at);
    cr_assert_gt(n, 30);
}

/* ---- (b) loading .npy, safetensors and a parameter store ---- */

static char dir[256], npy_path[300], st_path[300], params_path[300];

static void make_files(void)
{
    snprintf(dir, sizeof dir, "%s/files", tt_tmpdir());
    mkdir(dir, 0700);
    snprintf(npy_path, sizeof npy_path, "%s/a.npy", dir);
    snprintf(st_path, sizeof st_path, "%s/b.safetensors", dir);
    snprintf(params_path, sizeof params_path, "%s/p.safetensors", dir);
    tg_tensor *a = tg_tensor_new(TG_F32, 2, (int64_t[]){3, 4});
    tt_randn(a, 1);
    cr_assert_eq(tg_npy_save(npy_path, a), TG_OK, "%s", tg_last_error());
    tg_tensor *b = tg_tensor_new(TG_I64, 1, (int64_t[]){5});
    const char *names[] = {"a", "b"};
    const tg_tensor *ts[] = {a, b};
    const char *mk[] = {"format"}, *mv[] = {"pt"};
    cr_assert_eq(tg_st_save(st_path, 2, names, ts, 1, mk, mv), TG_OK, "%s", tg_last_error());
    tg_params *ps = tg_params_new(TG_F32);
    tt_randn(&tg_params_add(ps, "fc.weight", 2, (int64_t[]){4, 3})->value, 2);
    tt_randn(&tg_params_add(ps, "fc.bias", 1, (int64_t[]){4})->value, 3);
    cr_assert_eq(tg_params_save(ps, params_path, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
    tg_params_free(ps);
    tg_tensor_free(a);
    tg_tensor_free(b);
}

static void remove_files(void)
{
    remove(npy_path);
    remove(st_path);
    remove(params_path);
    rmdir(dir);
}

static bool load_npy_at(uint64_t n)
{
    tg_tensor *t = (tg_tensor *)1;
    tg_clear_error();
    tg__alloc_fail_after(n);
    tg_status st = tg_npy_load(npy_path, &t);
    tg__alloc_fail_after(0);
    if (st) {
        cr_assert_eq(st, TG_ERR_NOMEM, "N=%llu: %s", (unsigned long long)n, tg_last_error());
        cr_assert_null(t);
        assert_oom_message(tg_last_error(), n, "tg_npy_load");
        tt_assert_last_error("a.npy");
        return false;
    }
    cr_assert_eq(t->numel, 12);
    tg_tensor_free(t);
    return true;
}

static bool load_st_at(uint64_t n)
{
    tg_st_file *f = (tg_st_file *)1;
    tg_clear_error();
    tg__alloc_fail_after(n);
    tg_status st = tg_st_load(st_path, &f);
    tg__alloc_fail_after(0);
    if (st) {
        cr_assert_eq(st, TG_ERR_NOMEM, "N=%llu: %s", (unsigned long long)n, tg_last_error());
        cr_assert_null(f);
        assert_oom_message(tg_last_error(), n, "tg_st_load");
        tt_assert_last_error("b.safetensors");
        return false;
    }
    cr_assert_eq(tg_st_count(f), 2);
    cr_assert_str_eq(tg_st_meta_find(f, "format"), "pt");
    tg_st_free(f);
    return true;
}

static bool load_params_at(uint64_t n)
{
    tg_clear_error();
    tg__alloc_fail_after(n);
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = ps ? tg_params_add(ps, "fc.weight", 2, (int64_t[]){4, 3}) : NULL;
    tg_param *b = w ? tg_params_add(ps, "fc.bias", 1, (int64_t[]){4}) : NULL;
    tg_status st = b ? tg_params_load(ps, params_path, 0) : TG_ERR_NOMEM;
    tg__alloc_fail_after(0);
    if (st) {
        cr_assert_eq(st, TG_ERR_NOMEM, "N=%llu: %s", (unsigned long long)n, tg_last_error());
        assert_oom_message(tg_last_error(), n, b ? "tg_params_load" : "tg_params_add");
        if (b) {
            /* a failed load leaves the store unchanged (all zeros as created) */
            for (int64_t i = 0; i < w->value.numel; i++)
                cr_assert_eq(((float *)w->value.data)[i], 0.0f, "N=%llu: store changed",
                             (unsigned long long)n);
        }
        tg_params_free(ps);
        return false;
    }
    tg_tensor *want = tg_tensor_new(TG_F32, 2, (int64_t[]){4, 3});
    tt_randn(want, 2);
    tt_assert_close(&w->value, want, 0, 0, "fc.weight");
    tg_tensor_free(want);
    tg_params_free(ps);
    return true;
}

Test(faults, loading_sweeps)
{
    make_files();
    cr_assert_gt(sweep(load_npy_at), 1);
    cr_assert_gt(sweep(load_st_at), 2);
    cr_assert_gt(sweep(load_params_at), 3);
    remove_files();
}
