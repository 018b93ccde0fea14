/*
 * test_safetensors.c - safetensors reading and writing (OPS.md section 17):
 * the known-good files, the dtype conversions, the writer's layout (17.4),
 * round trips, and files written by the PyTorch oracle's writer
 * (tests/fixtures/gen_io.py). The malformed files of 17.3:
 * test_safetensors_errors.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "internal.h"
#include "st_bytes.h"

#include <criterion/parameterized.h>

#define IO_FIX TT_FIXTURES "/io"

static unsigned char *read_bytes(const char *path, size_t *len)
{
    void *d;
    cr_assert_eq(tg_read_file(path, 0, &d, len), TG_OK, "%s", tg_last_error());
    return d;
}

/* ---- known-good files ---- */

static tg_st_file *parse_ok(const char *header, const void *data, size_t dlen)
{
    size_t n = strlen(header), len = 8 + n + dlen;
    unsigned char *b = malloc(len);   /* exact size: ASan sees any overread */
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(b + 8, header, n);
    if (dlen) memcpy(b + 8 + n, data, dlen);
    tg_st_file *f = NULL;
    tg_status st = tg_st_parse(b, len, "good", &f);
    cr_assert_eq(st, TG_OK, "%s: %s", header, tg_last_error());
    /* and the same through a file */
    char path[256];
    tt_st_path(path, sizeof path, "good");
    tt_st_write_bytes(path, b, len);
    tg_st_file *g = NULL;
    st = tg_st_load(path, &g);
    remove(path);
    cr_assert_eq(st, TG_OK, "%s (file): %s", header, tg_last_error());
    cr_assert_eq(tg_st_count(g), tg_st_count(f));
    for (int i = 0; i < tg_st_count(f); i++) {
        cr_assert_str_eq(tg_st_name(f, i), tg_st_name(g, i));
        const tg_tensor *x = tg_st_tensor(f, i), *y = tg_st_tensor(g, i);
        cr_assert(x->dtype == y->dtype && tg_tensor_same_shape(x, y));
        cr_assert_eq(memcmp(x->data, y->data, (size_t)x->numel * tg_dtype_size(x->dtype)), 0);
    }
    tg_st_free(g);
    free(b);
    return f;
}

Test(safetensors, reference_i32_2x2)
{
    int32_t v[4] = {0, 1, -2, 2147483647};
    unsigned char le[16];
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) le[4 * i + k] = (unsigned char)((uint32_t)v[i] >> (8 * k));
    tg_st_file *f = parse_ok("{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],"
                             "\"data_offsets\":[0,16]}}", le, 16);
    cr_assert_eq(tg_st_count(f), 1);
    cr_assert_str_eq(tg_st_name(f, 0), "test");
    const tg_tensor *t = tg_st_find(f, "test");
    cr_assert_not_null(t);
    cr_assert_eq(t->dtype, TG_I64, "I32 is read as int64");
    cr_assert(t->rank == 2 && t->shape[0] == 2 && t->shape[1] == 2);
    const int64_t *d = t->data;
    for (int i = 0; i < 4; i++) cr_assert_eq(d[i], v[i]);
    cr_assert_null(tg_st_find(f, "absent"));
    cr_assert_eq(tg_st_meta_count(f), 0);
    tg_st_free(f);
}

Test(safetensors, zero_sized)
{
    tg_st_file *f = parse_ok("{\"a\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0,0]},"
                             "\"b\":{\"dtype\":\"F32\",\"shape\":[0,0],\"data_offsets\":[0,0]},"
                             "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                             "\"d\":{\"dtype\":\"F64\",\"shape\":[0],\"data_offsets\":[4,4]}}",
                             "\0\0\x80\x3f", 4);
    cr_assert_eq(tg_st_count(f), 4);
    const tg_tensor *a = tg_st_find(f, "a"), *b = tg_st_find(f, "b");
    cr_assert(a->rank == 2 && a->shape[0] == 2 && a->shape[1] == 0 && a->numel == 0);
    cr_assert(b->rank == 2 && b->shape[0] == 0 && b->numel == 0);
    cr_assert_eq(((float *)tg_st_find(f, "c")->data)[0], 1.0f);
    cr_assert_eq(tg_st_find(f, "d")->numel, 0);
    tg_st_free(f);
}

Test(safetensors, padded_headers)
{
    /* the reference reader accepts JSON whitespace before and after the object */
    const char *headers[] = {
        "{\"t\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}      ",
        "{\"t\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}\t\t\n\r ",
        "   \n{ \"t\" : { \"dtype\" : \"F32\" , \"shape\" : [ ] , \"data_offsets\" : [ 0 , 4 ] } }\r\n",
        "\t{\"t\":{\"data_offsets\":[0,4],\"shape\":[],\"dtype\":\"F32\"}}",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        tg_st_file *f = parse_ok(headers[i], "\0\0\x20\x40", 4);
        const tg_tensor *t = tg_st_find(f, "t");
        cr_assert_eq(t->rank, 0, "shape [] is a scalar");
        cr_assert_eq(t->numel, 1);
        cr_assert_eq(((float *)t->data)[0], 2.5f);
        tg_st_free(f);
    }
}

Test(safetensors, empty_header)
{
    tg_st_file *f = parse_ok("{}", NULL, 0);
    cr_assert_eq(tg_st_count(f), 0);
    cr_assert_null(tg_st_name(f, 0));
    cr_assert_null(tg_st_tensor(f, -1));
    tg_st_free(f);
    f = parse_ok("{\"__metadata__\":{}}", NULL, 0);
    cr_assert_eq(tg_st_count(f), 0);
    cr_assert_eq(tg_st_meta_count(f), 0);
    tg_st_free(f);
}

Test(safetensors, metadata_and_names)
{
    tg_st_file *f = parse_ok("{\"__metadata__\":{\"format\":\"pt\",\"note\":\"caf\\u00e9 \\\"q\\\"\"},"
                             "\"z.w\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]},"
                             "\"a.b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]},"
                             "\"\\u00e9\":{\"dtype\":\"I8\",\"shape\":[2],\"data_offsets\":[4,6]}}",
                             "\x01\x00\xff\x07\xff\x80", 6);
    cr_assert_eq(tg_st_meta_count(f), 2);
    cr_assert_str_eq(tg_st_meta_key(f, 0), "format");
    cr_assert_str_eq(tg_st_meta_value(f, 0), "pt");
    cr_assert_str_eq(tg_st_meta_find(f, "note"), "caf\xc3\xa9 \"q\"");
    cr_assert_null(tg_st_meta_find(f, "absent"));
    cr_assert_null(tg_st_meta_key(f, 2));
    /* sorted by name (bytes) */
    cr_assert_str_eq(tg_st_name(f, 0), "a.b");
    cr_assert_str_eq(tg_st_name(f, 1), "z.w");
    cr_assert_str_eq(tg_st_name(f, 2), "\xc3\xa9");
    const tg_tensor *b = tg_st_find(f, "z.w");
    cr_assert_eq(b->dtype, TG_BOOL);
    cr_assert(((uint8_t *)b->data)[0] == 1 && ((uint8_t *)b->data)[1] == 0);
    const int64_t *u8 = tg_st_find(f, "a.b")->data, *i8 = tg_st_find(f, "\xc3\xa9")->data;
    cr_assert(u8[0] == 255 && u8[1] == 7, "U8 zero-extends");
    cr_assert(i8[0] == -1 && i8[1] == -128, "I8 sign-extends");
    tg_st_free(f);
}

Test(safetensors, conversions)
{
    /* F16: 1, -2, 65504 (max), 2^-24 (smallest subnormal), -0, inf, -inf, nan, 2^-14 (smallest
     * normal), 0.333251953125 */
    static const uint16_t f16[] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x7c00,
                                   0xfc00, 0x7e00, 0x0400, 0x3555};
    static const float f16_want[] = {1, -2, 65504, 5.9604644775390625e-08f, -0.0f, INFINITY,
                                     -INFINITY, NAN, 6.103515625e-05f, 0.333251953125f};
    /* BF16: 1, -2.5, 3.3895314e38 (max), inf, 9.18354962e-41 (subnormal) */
    static const uint16_t bf16[] = {0x3f80, 0xc020, 0x7f7f, 0x7f80, 0x0001};
    static const float bf16_want[] = {1, -2.5f, 3.3895313892515355e38f, INFINITY,
                                      9.183549615799121e-41f};
    static const int16_t i16[] = {-32768, 32767, -1};
    static const uint16_t u16[] = {65535, 0, 1};
    static const int32_t i32[] = {INT32_MIN, INT32_MAX, -5};
    static const uint32_t u32[] = {4294967295u, 0, 123456789};
    unsigned char data[256];
    size_t at = 0;
#define PUT(arr)                                                                          \
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++)                               \
        for (size_t k = 0; k < sizeof arr[0]; k++)                                        \
            data[at++] = (unsigned char)((uint64_t)(uint32_t)arr[i] >> (8 * k));
    PUT(f16) PUT(bf16) PUT(i16) PUT(u16) PUT(i32) PUT(u32)
#undef PUT
    char header[1024];
    snprintf(header, sizeof header,
             "{\"f16\":{\"dtype\":\"F16\",\"shape\":[10],\"data_offsets\":[0,20]},"
             "\"bf16\":{\"dtype\":\"BF16\",\"shape\":[5],\"data_offsets\":[20,30]},"
             "\"i16\":{\"dtype\":\"I16\",\"shape\":[3],\"data_offsets\":[30,36]},"
             "\"u16\":{\"dtype\":\"U16\",\"shape\":[3],\"data_offsets\":[36,42]},"
             "\"i32\":{\"dtype\":\"I32\",\"shape\":[3],\"data_offsets\":[42,54]},"
             "\"u32\":{\"dtype\":\"U32\",\"shape\":[3],\"data_offsets\":[54,%zu]}}", at);
    tg_st_file *f = parse_ok(header, data, at);
    const tg_tensor *t = tg_st_find(f, "f16");
    cr_assert_eq(t->dtype, TG_F32);
    for (int i = 0; i < 10; i++) {
        float g = ((float *)t->data)[i], w = f16_want[i];
        if (isnan(w)) cr_assert(isnan(g), "f16[%d]", i);
        else cr_assert(g == w && signbit(g) == signbit(w), "f16[%d] = %.9g, want %.9g", i, g, w);
    }
    t = tg_st_find(f, "bf16");
    for (int i = 0; i < 5; i++)
        cr_assert_eq(((float *)t->data)[i], bf16_want[i], "bf16[%d] = %.9g", i,
                     ((float *)t->data)[i]);
    const int64_t *d = tg_st_find(f, "i16")->data;
    cr_assert(d[0] == -32768 && d[1] == 32767 && d[2] == -1);
    d = tg_st_find(f, "u16")->data;
    cr_assert(d[0] == 65535 && d[1] == 0 && d[2] == 1);
    d = tg_st_find(f, "i32")->data;
    cr_assert(d[0] == INT32_MIN && d[1] == INT32_MAX && d[2] == -5);
    d = tg_st_find(f, "u32")->data;
    cr_assert(d[0] == 4294967295LL && d[1] == 0 && d[2] == 123456789);
    cr_assert_eq(tg_st_find(f, "u32")->dtype, TG_I64);
    tg_st_free(f);
}

Test(safetensors, unaligned_data)
{
    /* a tensor may start at any byte: F64 at offset 1, I64 at 9, F32 at 17 */
    unsigned char data[21];
    double x = -1.5;
    int64_t y = -123456789012345LL;
    float z = 0.25f;
    data[0] = 1;
    memcpy(data + 1, &x, 8);
    memcpy(data + 9, &y, 8);
    memcpy(data + 17, &z, 4);
    tg_st_file *f = parse_ok("{\"b\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1]},"
                             "\"x\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[1,9]},"
                             "\"y\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[9,17]},"
                             "\"z\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[17,21]}}",
                             data, sizeof data);
    cr_assert_eq(((double *)tg_st_find(f, "x")->data)[0], -1.5);
    cr_assert_eq(((int64_t *)tg_st_find(f, "y")->data)[0], y);
    cr_assert_eq(((float *)tg_st_find(f, "z")->data)[0], 0.25f);
    tg_st_free(f);
}

Test(safetensors, large_tensor_in_chunks)
{
    /* 700k F16 elements (1.4 MB): the file reader converts in 1 MB chunks */
    const size_t n = 700000;
    unsigned char *data = malloc(2 * n);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(0x3c00 + (i % 1000));   /* 1 + (i%1000)/1024 */
        data[2 * i] = (unsigned char)h, data[2 * i + 1] = (unsigned char)(h >> 8);
    }
    char header[128];
    snprintf(header, sizeof header, "{\"h\":{\"dtype\":\"F16\",\"shape\":[%zu],"
             "\"data_offsets\":[0,%zu]}}", n, 2 * n);
    tg_st_file *f = parse_ok(header, data, 2 * n);
    const float *v = tg_st_find(f, "h")->data;
    for (size_t i = 0; i < n; i += 9973)
        cr_assert_eq(v[i], 1.0f + (float)(i % 1000) / 1024.0f, "element %zu", i);
    cr_assert_eq(v[n - 1], 1.0f + (float)((n - 1) % 1000) / 1024.0f);
    tg_st_free(f);
    free(data);
}

/* ---- writing ---- */

static tg_tensor *mk(tg_dtype dt, int rank, const int64_t *shape, uint64_t seed)
{
    tg_tensor *t = tg_tensor_new(dt, rank, shape);
    for (int64_t i = 0; i < t->numel; i++) {
        if (dt == TG_BOOL) ((uint8_t *)t->data)[i] = (uint8_t)((i * 7 + seed) % 3 == 0);
        else if (dt == TG_I64) ((int64_t *)t->data)[i] = (int64_t)(i * 1000003 - 5) * (int64_t)seed;
        else tg_tensor_set(t, i, sin((double)(i + 1) * (double)seed) * 100.0);
    }
    return t;
}

static void assert_same(const tg_tensor *a, const tg_tensor *b, const char *what)
{
    cr_assert_eq(a->dtype, b->dtype, "%s dtype", what);
    cr_assert(tg_tensor_same_shape(a, b), "%s shape", what);
    cr_assert_eq(memcmp(a->data, b->data, (size_t)a->numel * tg_dtype_size(a->dtype)), 0,
                 "%s data", what);
}

Test(safetensors, writer_layout)
{
    /* OPS.md 17.4: __metadata__ first, then dtype alignment descending, then name;
     * offsets back to back from 0; header padded with spaces to a multiple of 8 */
    tg_tensor *a = mk(TG_F32, 1, (int64_t[]){2}, 1), *b = mk(TG_BOOL, 1, (int64_t[]){3}, 2),
              *c = mk(TG_I64, 0, NULL, 3), *d = mk(TG_F64, 2, (int64_t[]){1, 1}, 4);
    const char *names[] = {"b_f32", "a_bool", "z_i64", "c_f64"};
    const tg_tensor *ts[] = {a, b, c, d};
    const char *mk_[] = {"format"}, *mv[] = {"pt"};
    char path[256];
    tt_st_path(path, sizeof path, "layout");
    cr_assert_eq(tg_st_save(path, 4, names, ts, 1, mk_, mv), TG_OK, "%s", tg_last_error());
    size_t len;
    unsigned char *bytes = read_bytes(path, &len);
    const char *want = "{\"__metadata__\":{\"format\":\"pt\"},"
                       "\"c_f64\":{\"dtype\":\"F64\",\"shape\":[1,1],\"data_offsets\":[0,8]},"
                       "\"z_i64\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]},"
                       "\"b_f32\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]},"
                       "\"a_bool\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[24,27]}}";
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = (n << 8) | bytes[k];
    cr_assert_eq((8 + n) % 8, 0, "header padded to a multiple of 8");
    cr_assert_eq(len, 8 + n + 27);
    cr_assert_eq(memcmp(bytes + 8, want, strlen(want)), 0, "header: %.*s", (int)n, bytes + 8);
    for (size_t k = strlen(want); k < n; k++) cr_assert_eq(bytes[8 + k], ' ');
    cr_assert_eq(memcmp(bytes + 8 + n, d->data, 8), 0);
    cr_assert_eq(memcmp(bytes + 8 + n + 24, b->data, 3), 0);
    tg_free(bytes);
    /* and it reads back */
    tg_st_file *f;
    cr_assert_eq(tg_st_load(path, &f), TG_OK, "%s", tg_last_error());
    for (int i = 0; i < 4; i++) assert_same(tg_st_find(f, names[i]), ts[i], names[i]);
    cr_assert_str_eq(tg_st_meta_find(f, "format"), "pt");
    tg_st_free(f);
    remove(path);
    tg_tensor_free(a), tg_tensor_free(b), tg_tensor_free(c), tg_tensor_free(d);
}

Test(safetensors, round_trip)
{
    tg_tensor *t[] = {
        mk(TG_F32, 3, (int64_t[]){2, 3, 4}, 5), mk(TG_F64, 1, (int64_t[]){7}, 6),
        mk(TG_I64, 2, (int64_t[]){3, 2}, 7),    mk(TG_BOOL, 2, (int64_t[]){4, 5}, 8),
        mk(TG_F32, 0, NULL, 9),                 mk(TG_F32, 2, (int64_t[]){3, 0}, 10),
        mk(TG_I64, 1, (int64_t[]){0}, 11),      mk(TG_F32, 8, (int64_t[]){1, 2, 1, 2, 1, 2, 1, 2}, 12),
    };
    const char *names[] = {"layer.0.weight", "x", "idx", "mask", "scalar", "empty", "empty_i",
                           "rank8"};
    const char *mk_[] = {"k \"quoted\"\n", "caf\xc3\xa9"}, *mv[] = {"v\\1\t", ""};
    char path[256];
    tt_st_path(path, sizeof path, "rt");
    cr_assert_eq(tg_st_save(path, 8, names, (const tg_tensor *const *)t, 2, mk_, mv), TG_OK, "%s",
                 tg_last_error());
    tg_st_file *f;
    cr_assert_eq(tg_st_load(path, &f), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_count(f), 8);
    for (int i = 0; i < 8; i++) assert_same(tg_st_find(f, names[i]), t[i], names[i]);
    cr_assert_str_eq(tg_st_meta_find(f, "k \"quoted\"\n"), "v\\1\t");
    cr_assert_str_eq(tg_st_meta_find(f, "caf\xc3\xa9"), "");
    tg_st_free(f);
    /* overwrite (atomic rename over the old file) with no tensors */
    cr_assert_eq(tg_st_save(path, 0, NULL, NULL, 0, NULL, NULL), TG_OK);
    cr_assert_eq(tg_st_load(path, &f), TG_OK);
    cr_assert_eq(tg_st_count(f), 0);
    tg_st_free(f);
    size_t len;
    unsigned char *bytes = read_bytes(path, &len);
    cr_assert_eq(len, 16);
    cr_assert_eq(memcmp(bytes, "\x08\0\0\0\0\0\0\0{}      ", 16), 0);
    tg_free(bytes);
    remove(path);
    for (int i = 0; i < 8; i++) tg_tensor_free(t[i]);
}

Test(safetensors, writer_errors)
{
    tg_tensor *a = mk(TG_F32, 1, (int64_t[]){2}, 1);
    const tg_tensor *ts[] = {a, a};
    char path[256];
    tt_st_path(path, sizeof path, "werr");
    cr_assert_eq(tg_st_save(path, 2, (const char *[]){"w", "w"}, ts, 0, NULL, NULL),
                 TG_ERR_INVALID);
    tt_assert_last_error("duplicate tensor name 'w'");
    cr_assert_eq(tg_st_save(path, 1, (const char *[]){""}, ts, 0, NULL, NULL), TG_ERR_INVALID);
    tt_assert_last_error("tensor 0 has an empty name");
    cr_assert_eq(tg_st_save(path, 1, (const char *[]){"__metadata__"}, ts, 0, NULL, NULL),
                 TG_ERR_INVALID);
    tt_assert_last_error("'__metadata__' is reserved");
    cr_assert_eq(tg_st_save(path, 1, (const char *[]){"\xff"}, ts, 0, NULL, NULL), TG_ERR_INVALID);
    tt_assert_last_error("not valid UTF-8");
    cr_assert_eq(tg_st_save(path, 1, (const char *[]){"w"}, ts, 2, (const char *[]){"k", "k"},
                            (const char *[]){"1", "2"}), TG_ERR_INVALID);
    tt_assert_last_error("duplicate metadata key 'k'");
    cr_assert_eq(tg_st_save(path, 1, (const char *[]){"w"}, (const tg_tensor *[]){NULL}, 0, NULL,
                            NULL), TG_ERR_INVALID);
    tt_assert_last_error("tensor 'w': tensor is NULL");
    cr_assert_eq(tg_st_save(tt_path("missing/x.safetensors"), 1, (const char *[]){"w"}, ts, 0,
                            NULL, NULL), TG_ERR_IO);
    tt_assert_last_error(tt_path("missing/x.safetensors"));
    cr_assert_eq(access(path, F_OK), -1, "nothing written on error");
    tg_tensor_free(a);
}

Test(safetensors, load_errors)
{
    tg_st_file *f;
    cr_assert_eq(tg_st_load(tt_path("missing/x.safetensors"), &f), TG_ERR_IO);
    tt_assert_last_error(tt_path("missing/x.safetensors: cannot open"));
    cr_assert_null(f);
}

Test(safetensors, out_of_memory_is_clean)
{
    const char *h = "{\"__metadata__\":{\"a\":\"b\",\"c\":\"d\"},"
                    "\"x\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                    "\"y\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[4,12]}}";
    size_t n = strlen(h), len = 8 + n + 12;
    unsigned char *b = calloc(1, len);
    b[0] = (unsigned char)n;
    memcpy(b + 8, h, n);
    char path[256];
    tt_st_path(path, sizeof path, "oom");
    tt_st_write_bytes(path, b, len);
    for (uint64_t k = 1; k < 40; k++) {
        tg_st_file *f;
        tg__alloc_fail_after(k);
        tg_status st = tg_st_parse(b, len, "m", &f);
        tg__alloc_fail_after(0);
        if (st) cr_assert_eq(st, TG_ERR_NOMEM, "%s", tg_last_error());
        else tg_st_free(f);
    }
    for (uint64_t k = 1; k < 40; k++) {
        tg_st_file *f;
        tg__alloc_fail_after(k);
        tg_status st = tg_st_load(path, &f);
        tg__alloc_fail_after(0);
        if (st) cr_assert_eq(st, TG_ERR_NOMEM, "%s", tg_last_error());
        else tg_st_free(f);
    }
    remove(path);
    free(b);
}

/* ---- files from the PyTorch oracle's writer (/work/shared/oracle/st.py) ---- */

Test(safetensors, oracle_written)
{
    static const char *names[] = {"b.bool", "f16", "f32", "f64", "i16", "i32", "i64", "i8",
                                  "scalar", "u8", "w.empty"};
    tg_st_file *f;
    cr_assert_eq(tg_st_load(IO_FIX "/st_oracle.safetensors", &f), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_count(f), 11);
    cr_assert_str_eq(tg_st_meta_find(f, "format"), "pt");
    cr_assert_str_eq(tg_st_meta_find(f, "step"), "3");
    for (int i = 0; i < 11; i++) {
        char file[64];
        snprintf(file, sizeof file, "st_oracle_%s.npy", names[i]);
        tg_tensor *want = tt_load("io", file);
        const tg_tensor *got = tg_st_find(f, names[i]);
        cr_assert_not_null(got, "%s missing", names[i]);
        cr_assert_str_eq(tg_st_name(f, i), names[i], "sorted by name");
        assert_same(got, want, names[i]);
        tg_tensor_free(want);
    }
    tg_st_free(f);
    /* BF16 / U16 / U32, which st.py does not write: bytes written by gen_io.py, values
     * converted by PyTorch */
    cr_assert_eq(tg_st_load(IO_FIX "/st_extra_dtypes.safetensors", &f), TG_OK, "%s",
                 tg_last_error());
    static const char *extra[] = {"bf16", "u16", "u32"};
    for (int i = 0; i < 3; i++) {
        char file[64];
        snprintf(file, sizeof file, "st_extra_%s.npy", extra[i]);
        tg_tensor *want = tt_load("io", file);
        assert_same(tg_st_find(f, extra[i]), want, extra[i]);
        tg_tensor_free(want);
    }
    tg_st_free(f);
}

Test(safetensors, tgraph_writes_what_the_generator_checked)
{
    /* gen_io.py wrote st_tgraph.safetensors with tgraph's writer (tests/fixtures/io_write.c),
     * read it with st.py and compared the values; here tg_st_save must still write those
     * exact bytes for the same tensors. */
    tg_tensor *w = tg_tensor_new(TG_F32, 2, (int64_t[]){2, 3});
    tg_tensor *d = tg_tensor_new(TG_F64, 1, (int64_t[]){3});
    tg_tensor *i = tg_tensor_new(TG_I64, 1, (int64_t[]){4});
    tg_tensor *m = tg_tensor_new(TG_BOOL, 2, (int64_t[]){2, 2});
    tg_tensor *s = tg_tensor_new(TG_F32, 0, NULL);
    tg_tensor *e = tg_tensor_new(TG_F32, 2, (int64_t[]){0, 3});
    for (int k = 0; k < 6; k++) ((float *)w->data)[k] = (float)k * 0.5f - 1.0f;
    for (int k = 0; k < 3; k++) ((double *)d->data)[k] = 1.0 / (k + 3);
    for (int k = 0; k < 4; k++) ((int64_t *)i->data)[k] = (int64_t)k * 1000000000000LL - 7;
    for (int k = 0; k < 4; k++) ((uint8_t *)m->data)[k] = (uint8_t)(k % 3 == 0);
    ((float *)s->data)[0] = 3.5f;
    const char *names[] = {"w", "d", "idx", "mask", "scalar", "empty"};
    const tg_tensor *ts[] = {w, d, i, m, s, e};
    char path[256];
    tt_st_path(path, sizeof path, "same");
    cr_assert_eq(tg_st_save(path, 6, names, ts, 2, (const char *[]){"format", "by"},
                            (const char *[]){"pt", "tgraph"}), TG_OK, "%s", tg_last_error());
    size_t n1, n2;
    unsigned char *mine = read_bytes(path, &n1);
    unsigned char *ref = read_bytes(IO_FIX "/st_tgraph.safetensors", &n2);
    cr_assert_eq(n1, n2);
    cr_assert_eq(memcmp(mine, ref, n1), 0);
    tg_free(mine);
    tg_free(ref);
    remove(path);
    tg_tensor_free(w), tg_tensor_free(d), tg_tensor_free(i), tg_tensor_free(m);
    tg_tensor_free(s), tg_tensor_free(e);
}
