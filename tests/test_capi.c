/*
 * test_capi.c - the C API on misuse (issue 17, item 11): every public
 * function called with NULL in each pointer argument (the cases generated from
 * the installed headers by tests/gen_null_calls.sh), out-of-range indices,
 * parameters added after the optimizer, a parameter store freed before the
 * graph that uses it, and requires_grad set after a forward. Issue 31, item
 * 6: every tensor argument also given bad tensors (rank 99, data NULL, numel
 * not the shape's), an optimizer outliving its store.
 *
 * Each Criterion test runs in its own process, so a NULL case that crashes
 * fails as that case (function and argument named), not the whole suite.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "null_calls.h"

#include <criterion/parameterized.h>

void *tc_null(void) { return NULL; }

const char *const tc_bad_names[4] = {"NULL", "a tensor of rank 99", "a tensor with data NULL",
                                     "a tensor of numel 2 and shape [1000000]"};

void *tc_zero(tc_ctx *c)
{
    if (c->n_zero == (int)(sizeof c->zero / sizeof c->zero[0])) return c->zero[0];
    void *p = calloc(1, 1u << 20);
    if (p) c->zero[c->n_zero++] = p;
    return p;
}

/* ---- the context: a fresh working directory and one valid object of each type ---- */

static char ctx_dir[64];
static int ctx_old_cwd = -1;

static void remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                char sub[1024];
                snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
                remove_tree(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void ctx_init(tc_ctx *c)
{
    memset(c, 0, sizeof *c);
    snprintf(ctx_dir, sizeof ctx_dir, "%s", tt_tmpdir());   /* fresh, removed at the end */
    ctx_old_cwd = open(".", O_RDONLY);
    cr_assert(ctx_old_cwd >= 0);
    cr_assert_eq(chdir(ctx_dir), 0);

    c->g = tg_graph_new(TG_F32);
    c->x = tg_input(c->g, "x", TG_F32, 2, (int64_t[]){2, 2});
    cr_assert_not_null(c->x, "%s", tg_last_error());
    for (int i = 0; i < 8; i++) c->nodes[i] = c->x;
    c->t = tg_tensor_new(TG_F32, 2, (int64_t[]){2, 2});
    cr_assert_not_null(c->t);
    for (int i = 0; i < 8; i++) c->tensors[i] = c->t;
    c->ps = tg_params_new(TG_F32);
    c->p = tg_params_add(c->ps, "w", 2, (int64_t[]){2, 2});
    cr_assert_not_null(c->p, "%s", tg_last_error());
    c->o = tg_optim_new(c->ps, &(tg_optim_config){.kind = TG_OPTIM_SGD, .lr = 0.1});
    cr_assert_not_null(c->o, "%s", tg_last_error());
    c->cfg = tg_config_new();
    tg_rng_seed(&c->rng, 1);
    c->layer = tg_layer_new("linear_forecast", c->cfg, c->ps, "", &c->rng);
    cr_assert_not_null(c->layer, "%s", tg_last_error());
    c->cls = tg_layer_class_at(0);
    cr_assert_eq(tg_value_parse("1", &c->val), TG_OK);
    /* safetensors: an 8-byte little-endian header length, the header, the data */
    static const char hdr[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    unsigned char st[8 + sizeof hdr + 4] = {0};
    st[0] = (unsigned char)(sizeof hdr - 1);
    memcpy(st + 8, hdr, sizeof hdr - 1);
    cr_assert_eq(tg_st_parse(st, 8 + sizeof hdr - 1 + 4, "capi", &c->st), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg_dataset_synthetic(32, 2, 1, &c->ds), TG_OK, "%s", tg_last_error());
    c->sc = tg_scaler_fit(c->ds, 0, 32);
    cr_assert_not_null(c->sc, "%s", tg_last_error());
    tg_checkpoint_init(&c->ck);
    c->op.name = "capi_nop";
    c->file = fopen("f.txt", "w+");
    cr_assert_not_null(c->file);
    for (int i = 0; i < 8; i++) c->strs[i] = "x";
    for (int i = 0; i < 64; i++) {
        c->f32[i] = 0.5f;
        c->f64[i] = 0.5;
        c->i64[i] = 2;
        c->sz[i] = 2;
        c->u64[i] = 2;
    }
    c->i32[0] = 1;
    for (int k = 1; k < 4; k++) {
        c->bad[k] = (tg_tensor){.dtype = TG_F32, .rank = 2, .shape = {2, 2}, .numel = 4,
                                .data = c->f32};
        for (int i = 0; i < 8; i++) c->bad_arr[k][i] = &c->bad[k];
    }
    c->bad[1].rank = 99;
    c->bad[2].data = NULL;
    c->bad[3].rank = 1, c->bad[3].shape[0] = 1000000, c->bad[3].numel = 2;
}

static void ctx_free(tc_ctx *c)
{
    tg_optim_free(c->o);
    tg_layer_free(c->layer);
    tg_graph_free(c->g);
    tg_params_free(c->ps);
    tg_config_free(c->cfg);
    tg_tensor_free(c->t);
    tg_value_free(&c->val);
    tg_st_free(c->st);
    tg_st_free(c->st_out);
    tg_dataset_free(c->ds);
    tg_dataset_free(c->ds_out);
    tg_scaler_free(c->sc);
    tg_checkpoint_clear(&c->ck);
    if (c->file) fclose(c->file);
    for (int i = 0; i < c->n_zero; i++) free(c->zero[i]);
    if (ctx_old_cwd >= 0) {
        cr_assert_eq(fchdir(ctx_old_cwd), 0);
        close(ctx_old_cwd);
        ctx_old_cwd = -1;
    }
    /* ctx_dir itself is tt_tmpdir's: removed when the test process exits */
}

/* ---- every public function, NULL in each pointer argument ---- */

/* On a crash, name the case (Criterion's report only says "CRASH"), then die
 * of the same signal. */
static char crash_note[256];

static void on_crash(int sig)
{
    ssize_t w = write(2, crash_note, strlen(crash_note));
    (void)w;
    remove_tree(ctx_dir);   /* not async-signal-safe; the process is dying anyway */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void note(const char *what, const tc_case *tc)
{
    snprintf(crash_note, sizeof crash_note, "capi: signal %s %s(%s = %s)\n", what, tc->func,
             tc->arg, tc_bad_names[tc->bad]);
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on_crash);
}

static void free_indices(struct criterion_test_params *p) { cr_free(p->params); }

/* The parameters are indices: Criterion's workers are new processes, where
 * the table's pointers would not hold. */
ParameterizedTestParameters(capi, null_arguments)
{
    int *idx = cr_malloc((size_t)tc_null_case_count * sizeof *idx);
    for (int i = 0; i < tc_null_case_count; i++) idx[i] = i;
    return cr_make_param_array(int, idx, (size_t)tc_null_case_count, free_indices);
}

ParameterizedTest(int *case_index, capi, null_arguments)
{
    const tc_case *tc = &tc_null_cases[*case_index];
    tc_ctx c;
    note("while setting up for", tc);
    ctx_init(&c);
    note("in", tc);
    tg_clear_error();
    int error_result = tc->call(&c);
    note("after", tc);
    const char *msg = tg_last_error();
    char saved[512];
    snprintf(saved, sizeof saved, "%s", msg);
    ctx_free(&c);
    if (tc->allowed || tc->ret == TC_RET_VOID) return;
    static const char *const what[] = {"", "an error status", "NULL", "NaN", ""};
    if (tc->ret != TC_RET_OTHER)
        cr_assert(error_result, "%s(%s = %s) did not return %s", tc->func, tc->arg,
                  tc_bad_names[tc->bad], what[tc->ret]);
    cr_assert(saved[0], "%s(%s = %s) left no message in tg_last_error()", tc->func, tc->arg,
              tc_bad_names[tc->bad]);
}

/* The generator found the API: a few functions from each part. */
Test(capi, cases_cover_the_api)
{
    static const char *const must[] = {"tg_params_add", "tg_input", "tg_tensor_copy",
                                       "tg_layer_build", "tg_layer_input_count", "tg_optim_step",
                                       "tg_einsum", "tg_tsa_build", "tg_st_save", "tg_set_error"};
    cr_assert_gt(tc_null_function_count, 150);
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) {
        bool found = false;
        for (int k = 0; k < tc_null_case_count; k++) found |= !strcmp(tc_null_cases[k].func, must[i]);
        cr_assert(found, "no NULL case for %s", must[i]);
    }
}

/* ---- the crashes named in the issue, one by one ---- */

static void assert_error_has(const char *want)
{
    cr_assert(strstr(tg_last_error(), want), "error '%s' does not contain '%s'", tg_last_error(),
              want);
}

Test(capi, issue_named_null_calls)
{
    tg_graph *g = tg_graph_new(TG_F32);
    cr_assert_null(tg_input(g, "x", TG_F32, 2, NULL));
    cr_assert_not_null(tg_graph_error(g));
    assert_error_has("shape");
    tg_graph_free(g);

    cr_assert_null(tg_params_add(NULL, "w", 1, (int64_t[]){2}));
    assert_error_has("tg_params_add: ps is NULL");
    cr_assert_neq(tg_tensor_copy(NULL, NULL), TG_OK);
    assert_error_has("tg_tensor_copy");
    tg_clear_error();
    cr_assert_eq(tg_layer_input_count(NULL), 0);
    assert_error_has("tg_layer_input_count: l is NULL");
}

Test(capi, layer_build_null_inputs_or_outputs)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_config *cfg = tg_config_new();
    tg_layer *l = tg_layer_new("linear_forecast", cfg, ps, "", NULL);
    cr_assert_not_null(l, "%s", tg_last_error());
    tg_graph *g = tg_graph_new(TG_F32);
    tg_layer_outputs out;
    cr_assert_neq(tg_layer_build(l, g, NULL, &out), TG_OK);
    assert_error_has("inputs is NULL");
    const tg_layer_input *in = tg_layer_input_at(l, 0);
    tg_node *x = tg_input(g, "x", TG_F32, in->rank, in->shape);
    cr_assert_neq(tg_layer_build(l, g, &x, NULL), TG_OK);
    assert_error_has("out is NULL");
    tg_node *none[4] = {NULL};
    cr_assert_neq(tg_layer_build(l, g, none, &out), TG_OK);
    tg_graph_free(g);
    tg_layer_free(l);
    tg_config_free(cfg);
    tg_params_free(ps);
}

/* tg_tensor_get / tg_tensor_set out of range: NaN and an error, no write. */
Test(capi, tensor_index_out_of_range)
{
    tg_tensor *t = tg_tensor_new(TG_F32, 1, (int64_t[]){4});
    tg_tensor_set(t, 3, 2.5);
    cr_assert_eq(tg_tensor_get(t, 3), 2.5);
    tg_clear_error();
    cr_assert(isnan(tg_tensor_get(t, (int64_t)1e9)));
    assert_error_has("tg_tensor_get: index 1000000000 outside [0, 4)");
    cr_assert(isnan(tg_tensor_get(t, -1)));
    tg_tensor_set(t, 4, 1.0);
    assert_error_has("tg_tensor_set: index 4 outside [0, 4)");
    tg_tensor_set(t, (int64_t)1e9, 1.0);
    for (int i = 0; i < 3; i++) cr_assert_eq(tg_tensor_get(t, i), 0.0);
    tg_tensor_free(t);
}

/* ---- parameters added after the optimizer ---- */

static void fill_grads(tg_params *ps, int step)
{
    for (int i = 0; i < tg_params_count(ps); i++) {
        tg_param *p = tg_params_at(ps, i);
        for (int64_t k = 0; k < p->grad.numel; k++)
            tg_tensor_set(&p->grad, k, 0.1 * (double)(k + 1) - 0.05 * step + 0.3 * i);
    }
}

static tg_params *store_with(tg_dtype dt, int n)
{
    tg_params *ps = tg_params_new(dt);
    for (int i = 0; i < n; i++) {
        tg_param *p = tg_params_addf(ps, 1, (int64_t[]){5}, "p%d", i);
        for (int64_t k = 0; k < 5; k++) tg_tensor_set(&p->value, k, 0.2 * (double)k - i);
    }
    return ps;
}

static void optim_late_param_case(tg_dtype dt, tg_optim_config cfg)
{
    /* a: the optimizer made with one parameter, the second added after it;
     * b: the optimizer made after both */
    tg_params *a = store_with(dt, 1), *b = store_with(dt, 2);
    tg_optim *oa = tg_optim_new(a, &cfg);
    cr_assert_not_null(oa, "%s", tg_last_error());
    tg_param *late = tg_params_add(a, "p1", 1, (int64_t[]){5});
    for (int64_t k = 0; k < 5; k++) tg_tensor_set(&late->value, k, 0.2 * (double)k - 1);
    tg_optim *ob = tg_optim_new(b, &cfg);
    for (int step = 0; step < 4; step++) {
        fill_grads(a, step);
        fill_grads(b, step);
        cr_assert_eq(tg_optim_step(oa), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_optim_step(ob), TG_OK, "%s", tg_last_error());
    }
    for (int i = 0; i < 2; i++) {
        const tg_param *pa = tg_params_at(a, i), *pb = tg_params_at(b, i);
        size_t bytes = (size_t)pa->value.numel * tg_dtype_size(dt);
        cr_assert_eq(memcmp(pa->value.data, pb->value.data, bytes), 0,
                     "kind %d, %s: parameter %d differs", (int)cfg.kind, tg_dtype_name(dt), i);
        for (int s = 0; s < TG_PARAM_STATE; s++) {
            cr_assert_eq(pa->state[s].data == NULL, pb->state[s].data == NULL);
            if (pa->state[s].data)
                cr_assert_eq(memcmp(pa->state[s].data, pb->state[s].data, bytes), 0);
        }
    }
    tg_optim_free(oa);
    tg_optim_free(ob);
    tg_params_free(a);
    tg_params_free(b);
}

Test(capi, optimizer_takes_params_added_after_it)
{
    const tg_optim_config cfgs[] = {
        {.kind = TG_OPTIM_ADAM, .lr = 0.01},
        {.kind = TG_OPTIM_ADAMW, .lr = 0.01, .weight_decay = 0.1},
        {.kind = TG_OPTIM_SGD, .lr = 0.1, .momentum = 0.9, .dampening = 0.5},
        {.kind = TG_OPTIM_SGD, .lr = 0.1},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        optim_late_param_case(TG_F32, cfgs[i]);
        optim_late_param_case(TG_F64, cfgs[i]);
    }
}

/* A parameter added after some steps counts its own steps (PyTorch keeps a
 * step per parameter): its first Adam step moves it by lr in each element. */
Test(capi, late_param_counts_its_own_steps)
{
    tg_params *ps = store_with(TG_F64, 1);
    tg_optim *o = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 0.01});
    for (int s = 0; s < 3; s++) {
        fill_grads(ps, s);
        cr_assert_eq(tg_optim_step(o), TG_OK);
    }
    tg_param *late = tg_params_add(ps, "late", 1, (int64_t[]){5});
    fill_grads(ps, 0);
    cr_assert_eq(tg_optim_step(o), TG_OK, "%s", tg_last_error());
    for (int64_t k = 0; k < 5; k++)
        cr_assert_float_eq(tg_tensor_get(&late->value, k), -0.01, 1e-9, "element %lld: %g",
                           (long long)k, tg_tensor_get(&late->value, k));
    tg_optim_free(o);
    tg_params_free(ps);
}

/* ---- a store freed while a graph uses it ---- */

Test(capi, params_freed_before_graph)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 1, (int64_t[]){3});
    for (int k = 0; k < 3; k++) tg_tensor_set(&w->value, k, k + 1.0);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){3});
    tg_node *wn = tg_param_node(g, w);
    tg_node *y = tg_sum(g, tg_mul(g, x, wn), NULL, 0, false);
    cr_assert_not_null(y, "%s", tg_graph_error(g));
    tg_params_free(ps);   /* the graph still holds the store */
    /* fill the heap, so memory freed too early would be reused */
    void *junk[64];
    for (int i = 0; i < 64; i++) {
        junk[i] = malloc(64);
        memset(junk[i], 0x7f, 64);
    }
    float *xd = tg_node_value(x)->data;
    xd[0] = 1, xd[1] = 1, xd[2] = 1;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_tensor_get(tg_node_value(y), 0), 6.0);
    cr_assert_eq(tg_graph_backward(g, y, NULL), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_tensor_get(tg_node_grad(wn), 2), 1.0);
    for (int i = 0; i < 64; i++) free(junk[i]);
    tg_graph_free(g);     /* frees the store too (ASan: no leak, no use after free) */
}

/* Two graphs on one store, the store freed first, the graphs in either order. */
Test(capi, params_outlive_every_graph_using_them)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 1, (int64_t[]){2});
    tg_graph *g1 = tg_graph_new(TG_F32), *g2 = tg_graph_new(TG_F32);
    cr_assert_not_null(tg_param_node(g1, w));
    cr_assert_not_null(tg_param_node(g1, w));
    cr_assert_not_null(tg_param_node(g2, w));
    tg_params_free(ps);
    tg_graph_free(g1);
    cr_assert_eq(tg_graph_forward(g2), TG_OK, "%s", tg_last_error());
    tg_graph_free(g2);
}

/* ---- requires_grad after a forward ---- */

Test(capi, requires_grad_after_forward_is_refused)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "feat", TG_F32, 1, (int64_t[]){3});
    tg_node *y = tg_sum(g, tg_square(g, x), NULL, 0, false);
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_node_set_requires_grad(x, true), TG_ERR_STATE);
    assert_error_has("tg_node_set_requires_grad: input 'feat'");
    /* the graph still runs as built */
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_node_set_requires_grad(x, false), TG_OK);   /* no change: fine */
    tg_graph_free(g);
    (void)y;
}

/* ---- issue 31, item 6: the optimizer holds its store; every tensor checked alike ---- */

/* The store and its graph freed before the optimizer: the optimizer still
 * steps (it holds the store, as the graph did), and frees it last. */
Test(capi, optimizer_outlives_its_store)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 1, (int64_t[]){3});
    cr_assert_not_null(w, "%s", tg_last_error());
    tg_optim *o = tg_optim_new(ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 0.1});
    cr_assert_not_null(o, "%s", tg_last_error());
    tg_graph *g = tg_graph_new(TG_F32);
    cr_assert_not_null(tg_param_node(g, w));
    tg_graph_free(g);
    tg_params_free(ps);
    /* fill the heap, so a store freed too early would be reused */
    void *junk[256];
    for (int i = 0; i < 256; i++) {
        junk[i] = malloc(64);
        memset(junk[i], 0x7f, 64);
    }
    for (int s = 0; s < 3; s++) cr_assert_eq(tg_optim_step(o), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_optim_steps(o), 3);
    for (int i = 0; i < 256; i++) free(junk[i]);
    tg_optim_free(o);   /* frees the store (ASan: no leak, no use after free) */
}

/* tg_node_set with .data = NULL: an error naming it, no crash. */
Test(capi, node_set_null_data)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){4});
    tg_tensor t = {.dtype = TG_F32, .rank = 1, .shape = {4}, .numel = 4, .data = NULL};
    cr_assert_eq(tg_node_set(x, &t), TG_ERR_INVALID);
    assert_error_has("set: data is NULL with 4 elements");
    tg_graph_free(g);
}

/* tg_shape_str never reads past shape[TG_MAX_RANK], whatever the rank. */
Test(capi, shape_str_bad_rank)
{
    char buf[256];
    struct { int64_t shape[TG_MAX_RANK]; int64_t canary[4]; } s;
    for (int i = 0; i < TG_MAX_RANK; i++) s.shape[i] = 2;
    for (int i = 0; i < 4; i++) s.canary[i] = 777;
    cr_assert_str_eq(tg_shape_str(99, s.shape, buf, sizeof buf), "[rank 99?]");
    cr_assert_str_eq(tg_shape_str(-1, s.shape, buf, sizeof buf), "[rank -1?]");
    cr_assert_str_eq(tg_shape_str(TG_MAX_RANK + 1, s.shape, buf, sizeof buf), "[rank 9?]");
    cr_assert_str_eq(tg_shape_str(TG_MAX_RANK, s.shape, buf, sizeof buf),
                     "[2, 2, 2, 2, 2, 2, 2, 2]");
    tg_tensor t = {.dtype = TG_F32, .rank = 99, .numel = 1, .data = buf};
    cr_assert_neq(tg_tensor_check(&t, "t"), TG_OK);
    assert_error_has("t: rank 99 is above the maximum rank 8");
    t.rank = -1;
    cr_assert_neq(tg_tensor_check(&t, "t"), TG_OK);
    assert_error_has("t: rank -1 is negative");
}

/* tg_npy_save with numel disagreeing with the shape: refused, no file. */
Test(capi, npy_save_numel_mismatch)
{
    float d[2] = {1, 2};
    tg_tensor t = {.dtype = TG_F32, .rank = 1, .shape = {1000000}, .numel = 2, .data = d};
    const char *path = tt_path("bad.npy");
    cr_assert_eq(tg_npy_save(path, &t), TG_ERR_SHAPE);
    assert_error_has("numel is 2 but shape [1000000] has 1000000 elements");
    cr_assert_neq(access(path, F_OK), 0, "tg_npy_save wrote %s", path);
    /* the shared check on the other tensor entries */
    cr_assert_null(tg_tensor_clone(&t));
    cr_assert_neq(tg_st_save(path, 1, (const char *[]){"t"}, (const tg_tensor *const[]){&t}, 0,
                             NULL, NULL), TG_OK);
    assert_error_has("tensor 't': numel is 2");
    cr_assert_neq(access(path, F_OK), 0);
}
