/*
 * test_params_io.c - parameter stores to and from safetensors (tg_params_load /
 * tg_params_save): the oracle's TSA weights by state_dict name, strict
 * loading and its relaxations, every error naming the tensor with the store
 * left unchanged, and round trips.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "internal.h"
#include "json.h"

#define IO_FIX TT_FIXTURES "/io"
#define TSA_WEIGHTS IO_FIX "/tsa_weights.safetensors"

static void tmp_path(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "%s/%s.safetensors", tt_tmpdir(), tag);
}

/* The TSA parameter list of tsa_params.json (from the oracle's case.json). */
typedef struct {
    tg__json_doc    doc;
    const tg__json *params;   /* array of {name, shape, sum, first} */
} tsa_list;

static tsa_list tsa_read(void)
{
    tsa_list l;
    void *buf;
    size_t len;
    cr_assert_eq(tg_read_file(IO_FIX "/tsa_params.json", 0, &buf, &len), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(tg__json_parse(buf, len, "tsa_params.json", NULL, &l.doc), TG_OK, "%s",
                 tg_last_error());
    tg_free(buf);
    l.params = tg__json_get(l.doc.root, "params");
    cr_assert(l.params && l.params->kind == TG__JSON_ARRAY && l.params->n == 41);
    return l;
}

/* A store with the TSA parameters (optionally skipping one name, or changing
 * the last dim of one), filled with a recognisable pattern. */
static tg_params *tsa_store(const tsa_list *l, tg_dtype dt, const char *skip, const char *reshape)
{
    tg_params *ps = tg_params_new(dt);
    for (int i = 0; i < l->params->n; i++) {
        const tg__json *p = tg__json_at(l->params, i), *shape = tg__json_get(p, "shape");
        const char *name = tg__json_get(p, "name")->str;
        if (skip && !strcmp(name, skip)) continue;
        int64_t dims[TG_MAX_RANK];
        for (int d = 0; d < shape->n; d++) cr_assert(tg__json_get_i64(tg__json_at(shape, d), &dims[d]));
        if (reshape && !strcmp(name, reshape)) dims[shape->n - 1]--;
        tg_param *pp = tg_params_add(ps, name, shape->n, dims);
        cr_assert_not_null(pp, "%s", tg_last_error());
        for (int64_t k = 0; k < pp->value.numel; k++) tg_tensor_set(&pp->value, k, 0.5 + (double)k);
    }
    return ps;
}

static double tsum(const tg_tensor *t)
{
    double s = 0;
    for (int64_t k = 0; k < t->numel; k++) s += tg_tensor_get(t, k);
    return s;
}

/* Every parameter still holds the pattern tsa_store put there. */
static void assert_pattern(const tg_params *ps)
{
    for (int i = 0; i < tg_params_count(ps); i++) {
        const tg_param *p = tg_params_at(ps, i);
        for (int64_t k = 0; k < p->value.numel; k++)
            cr_assert_eq(tg_tensor_get(&p->value, k), 0.5 + (double)k, "%s changed", p->name);
    }
}

Test(params_io, oracle_tsa_weights)
{
    tsa_list l = tsa_read();
    int64_t n_params;
    cr_assert(tg__json_get_i64(tg__json_get(l.doc.root, "n_params"), &n_params));
    for (int pass = 0; pass < 2; pass++) {
        tg_dtype dt = pass ? TG_F64 : TG_F32;
        tg_params *ps = tsa_store(&l, dt, NULL, NULL);
        cr_assert_eq(tg_params_numel(ps), n_params);
        cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, 0), TG_OK, "%s", tg_last_error());
        for (int i = 0; i < l.params->n; i++) {
            const tg__json *p = tg__json_at(l.params, i);
            const tg_param *pp = tg_params_find(ps, tg__json_get(p, "name")->str);
            double want = tg__json_get(p, "sum")->num, first = tg__json_get(p, "first")->num;
            cr_assert_float_eq(tsum(&pp->value), want, 1e-9 + 1e-12 * fabs(want), "%s: sum %.17g, "
                               "want %.17g", pp->name, tsum(&pp->value), want);
            cr_assert_eq(tg_tensor_get(&pp->value, 0), first, "%s[0]", pp->name);
            cr_assert_eq(pp->value.dtype, dt);
        }
        tg_params_free(ps);
    }
    tg__json_free(&l.doc);
}

Test(params_io, missing_is_an_error)
{
    tsa_list l = tsa_read();
    tg_params *ps = tsa_store(&l, TG_F32, NULL, NULL);
    tg_params_add(ps, "extra.weight", 1, (int64_t[]){3});
    for (int k = 0; k < 3; k++) tg_tensor_set(&tg_params_find(ps, "extra.weight")->value, k, 0.5 + k);
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, 0), TG_ERR_NOT_FOUND);
    tt_assert_last_error(TSA_WEIGHTS ": Missing key(s) in state_dict: \"extra.weight\" (1 of 42 "
                         "parameters");
    assert_pattern(ps);
    /* allowed: the others load, the missing one keeps its value */
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, TG_LOAD_ALLOW_MISSING), TG_OK, "%s",
                 tg_last_error());
    const tg_param *x = tg_params_find(ps, "extra.weight");
    for (int k = 0; k < 3; k++) cr_assert_eq(tg_tensor_get(&x->value, k), 0.5 + k);
    cr_assert_neq(tg_tensor_get(&tg_params_find(ps, "router")->value, 0), 0.5);
    tg_params_free(ps);
    tg__json_free(&l.doc);
}

Test(params_io, many_missing_are_listed_and_cut)
{
    tg_params *ps = tg_params_new(TG_F32);
    for (int i = 0; i < 100; i++) tg_params_addf(ps, 1, (int64_t[]){2}, "block.%d.weight", i);
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, TG_LOAD_ALLOW_EXTRA), TG_ERR_NOT_FOUND);
    tt_assert_last_error("Missing key(s) in state_dict: \"block.0.weight\", \"block.1.weight\"");
    tt_assert_last_error(", ... (100 of 100 parameters");
    tg_params_free(ps);
}

Test(params_io, extra_is_an_error)
{
    tsa_list l = tsa_read();
    tg_params *ps = tsa_store(&l, TG_F32, "router", NULL);
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, 0), TG_ERR_NOT_FOUND);
    tt_assert_last_error(": Unexpected key(s) in state_dict: \"router\" (1 of 41 tensors; "
                         "TG_LOAD_ALLOW_EXTRA ignores them)");
    assert_pattern(ps);
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, TG_LOAD_ALLOW_EXTRA), TG_OK, "%s",
                 tg_last_error());
    cr_assert_neq(tg_tensor_get(&tg_params_find(ps, "norm1.weight")->value, 1), 1.5);
    tg_params_free(ps);
    tg__json_free(&l.doc);
}

Test(params_io, misshaped_is_an_error)
{
    tsa_list l = tsa_read();
    tg_params *ps = tsa_store(&l, TG_F32, NULL, "router");
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, 0), TG_ERR_SHAPE);
    tt_assert_last_error(": size mismatch for router: copying a param with shape [5, 2, 8] from "
                         "checkpoint, the shape in current model is [5, 2, 7]");
    assert_pattern(ps);
    /* no flag relaxes a shape mismatch */
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, TG_LOAD_ALLOW_MISSING | TG_LOAD_ALLOW_EXTRA),
                 TG_ERR_SHAPE);
    assert_pattern(ps);
    tg_params_free(ps);
    tg__json_free(&l.doc);
}

static void write_file(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b, 1, n, f), n);
    fclose(f);
}

Test(params_io, non_float_is_an_error)
{
    char path[256];
    tmp_path(path, sizeof path, "int");
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *w = tg_params_add(ps, "w", 1, (int64_t[]){2});
    tg_tensor_set(&w->value, 0, 7), tg_tensor_set(&w->value, 1, 8);
    /* I64 */
    tg_tensor *t = tg_tensor_new(TG_I64, 1, (int64_t[]){2});
    cr_assert_eq(tg_st_save(path, 1, (const char *[]){"w"}, (const tg_tensor *[]){t}, 0, NULL,
                            NULL), TG_OK);
    cr_assert_eq(tg_params_load(ps, path, 0), TG_ERR_DTYPE);
    tt_assert_last_error(": tensor 'w' has dtype I64, expected a float tensor (F32, F64, F16 or "
                         "BF16) for a parameter");
    /* I32 and BOOL are reported by their file dtype */
    const char *h32 = "{\"w\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    unsigned char b[128] = {0};
    b[0] = (unsigned char)strlen(h32);
    memcpy(b + 8, h32, strlen(h32));
    write_file(path, b, 8 + strlen(h32) + 8);
    cr_assert_eq(tg_params_load(ps, path, 0), TG_ERR_DTYPE);
    tt_assert_last_error("tensor 'w' has dtype I32, expected a float tensor");
    tg_tensor *m = tg_tensor_new(TG_BOOL, 1, (int64_t[]){2});
    cr_assert_eq(tg_st_save(path, 1, (const char *[]){"w"}, (const tg_tensor *[]){m}, 0, NULL,
                            NULL), TG_OK);
    cr_assert_eq(tg_params_load(ps, path, TG_LOAD_ALLOW_EXTRA), TG_ERR_DTYPE);
    tt_assert_last_error("tensor 'w' has dtype BOOL");
    cr_assert(tg_tensor_get(&w->value, 0) == 7 && tg_tensor_get(&w->value, 1) == 8, "unchanged");
    /* F16 is a float: accepted, converted */
    const char *h16 = "{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";
    memset(b, 0, sizeof b);
    b[0] = (unsigned char)strlen(h16);
    memcpy(b + 8, h16, strlen(h16));
    memcpy(b + 8 + strlen(h16), "\x00\x3c\x00\xc0", 4);   /* 1, -2 */
    write_file(path, b, 8 + strlen(h16) + 4);
    cr_assert_eq(tg_params_load(ps, path, 0), TG_OK, "%s", tg_last_error());
    cr_assert(tg_tensor_get(&w->value, 0) == 1 && tg_tensor_get(&w->value, 1) == -2);
    remove(path);
    tg_tensor_free(t);
    tg_tensor_free(m);
    tg_params_free(ps);
}

Test(params_io, bad_files_and_arguments)
{
    tg_params *ps = tg_params_new(TG_F32);
    tg_params_add(ps, "w", 1, (int64_t[]){2});
    cr_assert_eq(tg_params_load(ps, tt_path("missing/w.safetensors"), 0), TG_ERR_IO);
    tt_assert_last_error(tt_path("missing/w.safetensors: cannot open"));
    cr_assert_eq(tg_params_load(ps, TSA_WEIGHTS, 16), TG_ERR_INVALID);
    tt_assert_last_error("unknown load flags 0x10");
    char path[256];
    tmp_path(path, sizeof path, "bad");
    write_file(path, "\x02\0\0\0\0\0\0\0{", 9);
    cr_assert_eq(tg_params_load(ps, path, 0), TG_ERR_FORMAT);
    tt_assert_last_error("header size 2 points past the end of the file");
    remove(path);
    tg_params_free(ps);
}

Test(params_io, save_and_load_round_trip)
{
    char path[256];
    tmp_path(path, sizeof path, "rt");
    for (int pass = 0; pass < 2; pass++) {
        tg_dtype dt = pass ? TG_F64 : TG_F32;
        tg_params *ps = tg_params_new(dt);
        tg_rng rng_, *rng = &rng_;
        tg_rng_seed(rng, 42);
        tg_param *a = tg_params_add(ps, "layer.0.weight", 2, (int64_t[]){4, 3});
        tg_param *b = tg_params_add(ps, "layer.0.bias", 1, (int64_t[]){4});
        tg_param *c = tg_params_add(ps, "scale", 0, NULL);
        tg_init_normal(&a->value, 0, 1, rng);
        tg_init_normal(&b->value, 0, 1, rng);
        tg_init_constant(&c->value, 1.0 / 3.0);
        cr_assert_eq(tg_params_save(ps, path, 1, (const char *[]){"format"},
                                    (const char *[]){"pt"}), TG_OK, "%s", tg_last_error());
        /* the file is what PyTorch would want: names, store dtype, metadata */
        tg_st_file *f;
        cr_assert_eq(tg_st_load(path, &f), TG_OK);
        cr_assert_eq(tg_st_count(f), 3);
        cr_assert_eq(tg_st_find(f, "layer.0.weight")->dtype, dt);
        cr_assert_str_eq(tg_st_meta_find(f, "format"), "pt");
        tg_st_free(f);
        /* into a fresh store of either dtype */
        for (int into = 0; into < 2; into++) {
            tg_dtype dt2 = into ? TG_F64 : TG_F32;
            tg_params *q = tg_params_new(dt2);
            tg_params_add(q, "scale", 0, NULL);
            tg_params_add(q, "layer.0.bias", 1, (int64_t[]){4});
            tg_params_add(q, "layer.0.weight", 2, (int64_t[]){4, 3});
            cr_assert_eq(tg_params_load(q, path, 0), TG_OK, "%s", tg_last_error());
            for (int i = 0; i < 3; i++) {
                const tg_param *p = tg_params_at(ps, i), *r = tg_params_find(q, p->name);
                for (int64_t k = 0; k < p->value.numel; k++) {
                    double x = tg_tensor_get(&p->value, k), y = tg_tensor_get(&r->value, k);
                    if (dt == TG_F64 && dt2 == TG_F32) cr_assert_eq((float)x, (float)y);
                    else cr_assert_eq(x, y, "%s[%lld]", p->name, (long long)k);
                }
            }
            tg_params_free(q);
        }
        tg_params_free(ps);
    }
    /* an empty store saves an empty file and loads from it */
    tg_params *e = tg_params_new(TG_F32);
    cr_assert_eq(tg_params_save(e, path, 0, NULL, NULL), TG_OK);
    cr_assert_eq(tg_params_load(e, path, 0), TG_OK);
    tg_params_free(e);
    remove(path);
}
