/*
 * test_npy.c - .npy reading and writing (OPS.md section 16).
 *
 * Every row of 16.3 and each "also decide" item is a table row built here
 * from bytes, read from memory (tg_npy_parse) and from a file (tg_npy_load,
 * which reads header and data separately), expecting numpy's message where
 * it has one. Then files written by numpy in every style tgraph must read
 * (v1.0/v2.0/v3.0, both quotes, no padding, 'L' ints, Fortran order,
 * trailing bytes), and round trips through tg_npy_save, whose output
 * gen_io.py checked with np.load.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/stat.h>

#include "testutil.h"
#include "internal.h"

#include <criterion/parameterized.h>

/* ---- malformed files ---- */

typedef struct {
    const char *name;
    const char *header;   /* v1.0 header text; NULL: use raw */
    int         data;     /* data bytes after the header (0, 1, 2, ...) */
    const char *raw;
    int         raw_len;
    tg_status   status;
    const char *msg;
} bad_case;

#define H(shape) "{'descr': '<f4', 'fortran_order': False, 'shape': " shape ", }"
#define D(descr) "{'descr': '" descr "', 'fortran_order': False, 'shape': (1,), }"

static const bad_case bad_cases[] = {
    /* preamble */
    {"empty", NULL, 0, "", 0, TG_ERR_FORMAT,
     "not a .npy file: the magic string is not correct; expected \\x93NUMPY, got '' (the file is "
     "too short)"},
    {"short_magic", NULL, 0, "\x93NUM", 4, TG_ERR_FORMAT, "the magic string is not correct"},
    {"bad_magic", NULL, 0, "\x89PNG\r\n\x1a\n\0\0\0\0", 12, TG_ERR_FORMAT,
     "the magic string is not correct; expected \\x93NUMPY, got '\\x89\\x50\\x4e\\x47\\x0d\\x0a"
     "\\x1a\\x0a'"},
    {"no_version", NULL, 0, "\x93NUMPY\x01", 7, TG_ERR_FORMAT, "EOF: reading the format version"},
    {"short_v1_length", NULL, 0, "\x93NUMPY\x01\x00\x10", 9, TG_ERR_FORMAT,
     "EOF: reading the header length (the file is 9 bytes)"},
    {"short_v2_length", NULL, 0, "\x93NUMPY\x02\x00\x10\x00\x00", 11, TG_ERR_FORMAT,
     "EOF: reading the header length (the file is 11 bytes)"},
    {"version_4", NULL, 0, "\x93NUMPY\x04\x00\x00\x00\x00\x00", 12, TG_ERR_FORMAT,
     "we only support format version (1,0), (2,0), and (3,0), not (4, 0)"},
    {"version_1_1", NULL, 0, "\x93NUMPY\x01\x01\x00\x00", 10, TG_ERR_FORMAT, "not (1, 1)"},
    {"header_past_eof", NULL, 0, "\x93NUMPY\x01\x00\x64\x00{'descr'", 18, TG_ERR_FORMAT,
     "EOF: reading array header, expected 100 bytes got 8"},
    {"header_too_long", NULL, 0, "\x93NUMPY\x02\x00\x70\x11\x01\x00{}", 14, TG_ERR_LIMIT,
     "Header info length (70000) is large and may not be safe to load securely (limit 65536)"},
    /* the dict */
    {"not_a_dict", "[1, 2]", 0, NULL, 0, TG_ERR_FORMAT, "Header is not a dictionary: [1, 2]"},
    {"empty_header", "", 0, NULL, 0, TG_ERR_FORMAT, "Header is not a dictionary: "},
    {"unquoted_key", "{descr: '<f4'}", 0, NULL, 0, TG_ERR_FORMAT,
     "Cannot parse header: expected a quoted key at descr: '<f4'"},
    {"no_colon", "{'descr' '<f4'}", 0, NULL, 0, TG_ERR_FORMAT,
     "Cannot parse header: expected ':' after key descr"},
    {"no_comma", "{'descr': '<f4' 'shape': (1,)}", 0, NULL, 0, TG_ERR_FORMAT,
     "Cannot parse header: expected ',' or '}' at 'shape': (1"},
    {"unterminated", "{'descr': '<f4', ", 0, NULL, 0, TG_ERR_FORMAT,
     "Cannot parse header: expected a quoted key"},
    {"text_after", H("(1,)") " x", 4, NULL, 0, TG_ERR_FORMAT,
     "Cannot parse header: text after the dictionary: x"},
    {"missing_key", "{'descr': '<f4', 'shape': (2,)}", 8, NULL, 0, TG_ERR_FORMAT,
     "Header does not contain the correct keys (descr, fortran_order, shape): missing "
     "fortran_order"},
    {"missing_descr", "{'fortran_order': False, 'shape': (2,)}", 8, NULL, 0, TG_ERR_FORMAT,
     "missing descr"},
    {"extra_key", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, NULL, 0,
     TG_ERR_FORMAT, "Header does not contain the correct keys: unexpected key x"},
    {"repeated_key", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4,
     NULL, 0, TG_ERR_FORMAT, "Cannot parse header: the key is repeated: descr"},
    /* shape */
    {"shape_list", H("[2]"), 8, NULL, 0, TG_ERR_FORMAT, "shape is not valid: [2]"},
    {"shape_float", H("(2.0,)"), 8, NULL, 0, TG_ERR_FORMAT, "shape is not valid: (2.0,)"},
    {"shape_string", H("'2'"), 8, NULL, 0, TG_ERR_FORMAT, "shape is not valid: '2'"},
    {"shape_int", H("2"), 8, NULL, 0, TG_ERR_FORMAT, "shape is not valid: 2"},
    {"shape_no_comma", H("(2 3)"), 24, NULL, 0, TG_ERR_FORMAT, "shape is not valid: (2 3)"},
    {"shape_negative", H("(2, -1)"), 8, NULL, 0, TG_ERR_FORMAT,
     "negative dimensions are not allowed: (2, -1)"},
    {"shape_bool", H("(True,)"), 4, NULL, 0, TG_ERR_FORMAT,
     "shape is not valid: (True,) (a bool is not a dimension)"},
    {"shape_false", H("(2, False)"), 4, NULL, 0, TG_ERR_FORMAT, "(a bool is not a dimension)"},
    {"shape_dim_overflow", H("(99999999999999999999,)"), 4, NULL, 0, TG_ERR_LIMIT,
     "shape is not valid: (99999999999999999999,) (a dimension overflows int64)"},
    {"shape_rank_9", H("(1, 1, 1, 1, 1, 1, 1, 1, 1)"), 4, NULL, 0, TG_ERR_LIMIT,
     "has more than 8 dims (tgraph's maximum rank)"},
    {"numel_overflow", H("(4294967296, 4294967296)"), 4, NULL, 0, TG_ERR_LIMIT,
     "shape [4294967296, 4294967296]: element count overflows at dim 1"},
    {"numel_too_large", H("(1152921504606846976,)"), 4, NULL, 0, TG_ERR_LIMIT,
     "shape [1152921504606846976]: element count 1152921504606846976 is too large"},
    /* fortran_order and descr */
    {"fortran_zero", "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", 4, NULL, 0,
     TG_ERR_FORMAT, "fortran_order is not a valid bool: 0"},
    {"fortran_lower", "{'descr': '<f4', 'fortran_order': true, 'shape': (1,)}", 4, NULL, 0,
     TG_ERR_FORMAT, "fortran_order is not a valid bool: true"},
    {"descr_invalid", D("<q9"), 4, NULL, 0, TG_ERR_FORMAT,
     "descr is not a valid dtype descriptor: '<q9'"},
    {"descr_empty", D(""), 4, NULL, 0, TG_ERR_FORMAT, "descr is not a valid dtype descriptor: ''"},
    {"descr_not_string", "{'descr': 4, 'fortran_order': False, 'shape': (1,)}", 4, NULL, 0,
     TG_ERR_FORMAT, "descr is not a valid dtype descriptor: 4"},
    {"descr_object", D("|O"), 8, NULL, 0, TG_ERR_FORMAT,
     "Object arrays cannot be loaded when allow_pickle=False"},
    {"descr_structured", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4,
     NULL, 0, TG_ERR_FORMAT, "structured dtypes (a descr list) are not supported"},
    {"big_endian", D(">f4"), 4, NULL, 0, TG_ERR_FORMAT,
     "big-endian data ('>f4') is not supported; save it little-endian (e.g. astype('<f4'))"},
    {"big_endian_i8", D(">i8"), 8, NULL, 0, TG_ERR_FORMAT, "big-endian data ('>i8')"},
    {"float16", D("<f2"), 2, NULL, 0, TG_ERR_DTYPE,
     "dtype '<f2' is not supported (use float32 '<f4', float64 '<f8', int64 '<i8' or bool '|b1')"},
    {"int32", D("<i4"), 4, NULL, 0, TG_ERR_DTYPE, "dtype '<i4' is not supported"},
    {"uint8", D("|u1"), 1, NULL, 0, TG_ERR_DTYPE, "dtype '|u1' is not supported"},
    {"complex", D("<c8"), 8, NULL, 0, TG_ERR_DTYPE, "dtype '<c8' is not supported"},
    {"unicode", D("<U3"), 12, NULL, 0, TG_ERR_DTYPE, "dtype '<U3' is not supported"},
    /* header bytes */
    {"non_ascii", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '\xc3\xa9': 1}", 4,
     NULL, 0, TG_ERR_FORMAT, "header byte 57 (0xc3) is not printable ASCII"},
    {"invalid_utf8_v3", NULL, 0, "\x93NUMPY\x03\x00\x03\x00\x00\x00{\xff}", 15, TG_ERR_FORMAT,
     "header byte 1 (0xff) is not printable ASCII"},
    {"nul_in_header", NULL, 0, "\x93NUMPY\x01\x00\x03\x00{\0}", 13, TG_ERR_FORMAT,
     "header byte 1 (0x00) is not printable ASCII"},
    /* data */
    {"data_short", "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 5, NULL, 0,
     TG_ERR_FORMAT, "EOF: reading array data, expected 8 bytes got 5"},
    {"data_missing", H("(2, 3)"), 0, NULL, 0, TG_ERR_FORMAT,
     "EOF: reading array data, expected 24 bytes got 0"},
    /* a 1 TiB array in a tiny file: rejected before anything is allocated for it */
    {"data_huge", H("(274877906944,)"), 16, NULL, 0, TG_ERR_FORMAT,
     "EOF: reading array data, expected 1099511627776 bytes got 16"},
    {"bool_not_01", "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 3, NULL, 0,
     TG_ERR_FORMAT, "bool element 2 has value 2 (not 0 or 1)"},
};

static unsigned char *case_bytes(const bad_case *c, size_t *len)
{
    if (!c->header) {
        unsigned char *b = malloc((size_t)c->raw_len + 1);
        memcpy(b, c->raw, (size_t)c->raw_len);
        *len = (size_t)c->raw_len;
        return b;
    }
    size_t n = strlen(c->header);
    *len = 10 + n + (size_t)c->data;
    unsigned char *b = malloc(*len);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)n, b[9] = (unsigned char)(n >> 8);
    memcpy(b + 10, c->header, n);
    for (int k = 0; k < c->data; k++) b[10 + n + k] = (unsigned char)k;
    return b;
}

static void tmp_path(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "%s/%s.npy", tt_tmpdir(), tag);
}

static void write_bytes(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    if (len) cr_assert_eq(fwrite(b, 1, len, f), len);
    fclose(f);
}

ParameterizedTestParameters(npy, malformed)
{
    static int idx[sizeof bad_cases / sizeof bad_cases[0]];
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, sizeof idx / sizeof idx[0]);
}

ParameterizedTest(int *i, npy, malformed)
{
    const bad_case *c = &bad_cases[*i];
    size_t len;
    unsigned char *b = case_bytes(c, &len);
    tg_tensor *t = (tg_tensor *)1;
    tg_status st = tg_npy_parse(b, len, "mem.npy", &t);
    cr_assert_eq(st, c->status, "%s: status %d (%s), expected %d", c->name, st, tg_last_error(),
                 c->status);
    cr_assert_null(t);
    tt_assert_last_error("mem.npy: ");
    tt_assert_last_error(c->msg);
    char path[256];
    tmp_path(path, sizeof path, c->name);
    write_bytes(path, b, len);
    t = (tg_tensor *)1;
    st = tg_npy_load(path, &t);
    remove(path);
    cr_assert_eq(st, c->status, "%s (file): status %d (%s)", c->name, st, tg_last_error());
    cr_assert_null(t);
    tt_assert_last_error(path);
    tt_assert_last_error(c->msg);
    free(b);
}

Test(npy, missing_file)
{
    tg_tensor *t;
    cr_assert_eq(tg_npy_load(tt_path("missing/x.npy"), &t), TG_ERR_IO);
    tt_assert_last_error(tt_path("missing/x.npy: cannot open"));
}

/* ---- files written by numpy ---- */

/* The values gen_io.py and io_write.c put in element k (C order). */
static void assert_values(const tg_tensor *t, tg_dtype dt, int rank, const int64_t *shape,
                          const char *what)
{
    cr_assert_eq(t->dtype, dt, "%s: dtype %s", what, tg_dtype_name(t->dtype));
    cr_assert_eq(t->rank, rank, "%s: rank %d", what, t->rank);
    for (int d = 0; d < rank; d++) cr_assert_eq(t->shape[d], shape[d], "%s: dim %d", what, d);
    for (int64_t k = 0; k < t->numel; k++) {
        if (dt == TG_BOOL)
            cr_assert_eq(((uint8_t *)t->data)[k], k % 3 == 1, "%s[%lld]", what, (long long)k);
        else if (dt == TG_I64)
            cr_assert_eq(((int64_t *)t->data)[k], (k - 3) * 1000000007LL, "%s[%lld]", what,
                         (long long)k);
        else if (dt == TG_F32)
            cr_assert_eq(((float *)t->data)[k], (float)((double)k * 0.25 - 1.0 / 3.0), "%s[%lld]",
                         what, (long long)k);
        else
            cr_assert_eq(((double *)t->data)[k], (double)k * 0.25 - 1.0 / 3.0, "%s[%lld]", what,
                         (long long)k);
    }
}

static const struct {
    const char *file;
    tg_dtype    dt;
    int         rank;
    int64_t     shape[3];
} numpy_files[] = {
    {"npy_v1_f32_2x3.npy", TG_F32, 2, {2, 3}},
    {"npy_v1_f64_scalar.npy", TG_F64, 0, {0}},
    {"npy_v1_f32_0x4.npy", TG_F32, 2, {0, 4}},
    {"npy_v1_bool_7.npy", TG_BOOL, 1, {7}},
    {"npy_v2_i64_5.npy", TG_I64, 1, {5}},
    {"npy_v3_f32_2x2.npy", TG_F32, 2, {2, 2}},
    {"npy_fortran_f64_3x4.npy", TG_F64, 2, {3, 4}},
    {"npy_fortran_i64_2x3x4.npy", TG_I64, 3, {2, 3, 4}},
    {"npy_double_quotes.npy", TG_F64, 2, {2, 3}},
    {"npy_no_padding.npy", TG_F64, 2, {2, 3}},
    {"npy_keys_order_L.npy", TG_F64, 2, {2, 3}},
    {"npy_v2_spaces.npy", TG_F64, 2, {2, 3}},
    {"npy_trailing_bytes.npy", TG_F64, 2, {2, 3}},
};

ParameterizedTestParameters(npy, numpy_written)
{
    static int idx[sizeof numpy_files / sizeof numpy_files[0]];
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, sizeof idx / sizeof idx[0]);
}

ParameterizedTest(int *i, npy, numpy_written)
{
    tg_tensor *t = tt_load("io", numpy_files[*i].file);
    assert_values(t, numpy_files[*i].dt, numpy_files[*i].rank, numpy_files[*i].shape,
                  numpy_files[*i].file);
    tg_tensor_free(t);
    /* the same from memory */
    char path[512];
    void *buf;
    size_t len;
    snprintf(path, sizeof path, "%s/io/%s", TT_FIXTURES, numpy_files[*i].file);
    cr_assert_eq(tg_read_file(path, 0, &buf, &len), TG_OK);
    cr_assert_eq(tg_npy_parse(buf, len, path, &t), TG_OK, "%s", tg_last_error());
    assert_values(t, numpy_files[*i].dt, numpy_files[*i].rank, numpy_files[*i].shape, path);
    tg_tensor_free(t);
    tg_free(buf);
}

Test(npy, fortran_order_is_transposed)
{
    /* the file's bytes are column-major: element [i][j] of a 3x4 array sits at j*3 + i */
    char path[512];
    void *buf;
    size_t len;
    snprintf(path, sizeof path, "%s/io/npy_fortran_f64_3x4.npy", TT_FIXTURES);
    cr_assert_eq(tg_read_file(path, 0, &buf, &len), TG_OK);
    const unsigned char *data = (const unsigned char *)buf + len - 12 * 8;
    double second;
    memcpy(&second, data + 8, 8);
    cr_assert_eq(second, 4 * 0.25 - 1.0 / 3.0, "the file holds [1][0] second (column-major)");
    tg_tensor *t;
    cr_assert_eq(tg_npy_parse(buf, len, "f", &t), TG_OK);
    cr_assert_eq(((double *)t->data)[1], 1 * 0.25 - 1.0 / 3.0, "row-major after the transpose");
    cr_assert_eq(((double *)t->data)[4], second);
    tg_tensor_free(t);
    tg_free(buf);
}

Test(npy, accepted_variants)
{
    /* native order '=', bool as '<b1', 'True'-less 1-d without trailing comma */
    const char *headers[] = {
        "{'descr': '=f4', 'fortran_order': False, 'shape': (2,)}",
        "{'descr': '<f4', 'fortran_order': True, 'shape': (2,)}",   /* 1-d: same bytes */
        "{'descr':\"<f4\",'fortran_order':False,'shape':(2,),}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}\n\n\n",
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
        size_t n = strlen(headers[i]);
        unsigned char b[256];
        memcpy(b, "\x93NUMPY\x01\x00", 8);
        b[8] = (unsigned char)n, b[9] = 0;
        memcpy(b + 10, headers[i], n);
        float v[2] = {1.5f, -2.0f};
        memcpy(b + 10 + n, v, 8);
        tg_tensor *t;
        cr_assert_eq(tg_npy_parse(b, 10 + n + 8, "v", &t), TG_OK, "%s: %s", headers[i],
                     tg_last_error());
        cr_assert(t->dtype == TG_F32 && t->rank == 1 && t->shape[0] == 2);
        cr_assert(((float *)t->data)[0] == 1.5f && ((float *)t->data)[1] == -2.0f);
        tg_tensor_free(t);
    }
    const char *hb = "{'descr': '<b1', 'fortran_order': False, 'shape': (2,)}";
    unsigned char b[128];
    size_t n = strlen(hb);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (unsigned char)n, b[9] = 0;
    memcpy(b + 10, hb, n);
    b[10 + n] = 1, b[11 + n] = 0;
    tg_tensor *t;
    cr_assert_eq(tg_npy_parse(b, 12 + n, "b", &t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t->dtype, TG_BOOL);
    tg_tensor_free(t);
}

/* ---- writing ---- */

static tg_tensor *filled(tg_dtype dt, int rank, const int64_t *shape)
{
    tg_tensor *t = tg_tensor_new(dt, rank, shape);
    for (int64_t k = 0; k < t->numel; k++) {
        if (dt == TG_BOOL) ((uint8_t *)t->data)[k] = (uint8_t)(k % 3 == 1);
        else if (dt == TG_I64) ((int64_t *)t->data)[k] = (k - 3) * 1000000007LL;
        else tg_tensor_set(t, k, (double)k * 0.25 - 1.0 / 3.0);
    }
    return t;
}

Test(npy, round_trips)
{
    static const struct { tg_dtype dt; int rank; int64_t shape[8]; } c[] = {
        {TG_F32, 2, {2, 3}},   {TG_F64, 1, {5}},        {TG_I64, 3, {2, 2, 2}},
        {TG_BOOL, 1, {7}},     {TG_F32, 0, {0}},        {TG_F64, 2, {0, 4}},
        {TG_I64, 1, {0}},      {TG_BOOL, 2, {3, 0}},    {TG_F32, 8, {1, 2, 1, 2, 1, 2, 1, 2}},
        {TG_F32, 1, {1000}},
    };
    char path[256];
    tmp_path(path, sizeof path, "rt");
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        tg_tensor *t = filled(c[i].dt, c[i].rank, c[i].shape), *u;
        cr_assert_eq(tg_npy_save(path, t), TG_OK, "%s", tg_last_error());
        cr_assert_eq(tg_npy_load(path, &u), TG_OK, "%s", tg_last_error());
        assert_values(u, c[i].dt, c[i].rank, c[i].shape, "round trip");
        /* numpy's layout: v1.0, data at a multiple of 64, header ending in a newline */
        void *buf;
        size_t len;
        cr_assert_eq(tg_read_file(path, 0, &buf, &len), TG_OK);
        const unsigned char *b = buf;
        size_t hlen = (size_t)b[8] | ((size_t)b[9] << 8);
        cr_assert_eq(memcmp(b, "\x93NUMPY\x01\x00", 8), 0);
        cr_assert_eq((10 + hlen) % 64, 0);
        cr_assert_eq(b[10 + hlen - 1], '\n');
        cr_assert_eq(len, 10 + hlen + (size_t)t->numel * tg_dtype_size(t->dtype));
        tg_free(buf);
        tg_tensor_free(t);
        tg_tensor_free(u);
    }
    remove(path);
}

Test(npy, tgraph_writes_what_numpy_read)
{
    /* gen_io.py ran tg_npy_save (tests/fixtures/io_write.c) and checked every file with
     * np.load; tg_npy_save must still write exactly those bytes */
    static const struct { const char *name; tg_dtype dt; int rank; int64_t shape[3]; } c[] = {
        {"f32_2x3", TG_F32, 2, {2, 3}}, {"f64_5", TG_F64, 1, {5}},
        {"i64_2x2x2", TG_I64, 3, {2, 2, 2}}, {"bool_7", TG_BOOL, 1, {7}},
        {"f32_scalar", TG_F32, 0, {0}}, {"f64_0x4", TG_F64, 2, {0, 4}},
    };
    char path[256], ref[512];
    tmp_path(path, sizeof path, "same");
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        tg_tensor *t = filled(c[i].dt, c[i].rank, c[i].shape);
        cr_assert_eq(tg_npy_save(path, t), TG_OK);
        snprintf(ref, sizeof ref, "%s/io/npy_tgraph_%s.npy", TT_FIXTURES, c[i].name);
        void *a, *b;
        size_t na, nb;
        cr_assert_eq(tg_read_file(path, 0, &a, &na), TG_OK);
        cr_assert_eq(tg_read_file(ref, 0, &b, &nb), TG_OK, "%s", tg_last_error());
        cr_assert(na == nb && !memcmp(a, b, na), "%s differs from what numpy checked", c[i].name);
        tg_free(a);
        tg_free(b);
        tg_tensor_free(t);
    }
    remove(path);
}

Test(npy, save_errors)
{
    cr_assert_eq(tg_npy_save(tt_path("x.npy"), NULL), TG_ERR_INVALID);
    tt_assert_last_error(tt_path("x.npy: tensor is NULL"));
    tg_tensor t = {.dtype = TG_F32, .rank = 1, .shape = {3}, .numel = 3, .data = NULL};
    cr_assert_eq(tg_npy_save(tt_path("x.npy"), &t), TG_ERR_INVALID);
    tg_tensor *u = filled(TG_F32, 1, (int64_t[]){3});
    cr_assert_eq(tg_npy_save(tt_path("missing/x.npy"), u), TG_ERR_IO);
    tt_assert_last_error(tt_path("missing/x.npy"));
    tg_tensor_free(u);
}

Test(npy, out_of_memory_is_clean)
{
    char path[512];
    snprintf(path, sizeof path, "%s/io/npy_fortran_i64_2x3x4.npy", TT_FIXTURES);
    for (uint64_t k = 1; k < 12; k++) {
        tg_tensor *t;
        tg__alloc_fail_after(k);
        tg_status st = tg_npy_load(path, &t);
        tg__alloc_fail_after(0);
        if (st) cr_assert_eq(st, TG_ERR_NOMEM, "%s", tg_last_error());
        else tg_tensor_free(t);
    }
}

/* ---- a FIFO instead of a regular file: both loaders read it whole ---- */

typedef struct { const char *fifo; const void *bytes; size_t len; } pipe_writer;

static void *write_fifo(void *arg)
{
    const pipe_writer *w = arg;
    FILE *f = fopen(w->fifo, "wb");   /* blocks until the loader opens its end */
    if (f) {
        fwrite(w->bytes, 1, w->len, f);
        fclose(f);
    }
    return NULL;
}

/* Load path's bytes through a FIFO with load(fifo, out). */
static tg_status through_fifo(const char *path, const char *tag,
                              tg_status (*load)(const char *, void *), void *out)
{
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo-%s", tt_tmpdir(), tag);
    remove(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo %s", fifo);
    pipe_writer w = {fifo, NULL, 0};
    void *buf;
    cr_assert_eq(tg_read_file(path, 0, &buf, &w.len), TG_OK, "%s", tg_last_error());
    w.bytes = buf;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, write_fifo, &w), 0);
    tg_status st = load(fifo, out);
    pthread_join(th, NULL);
    tg_free(buf);
    remove(fifo);
    return st;
}

static tg_status load_npy(const char *p, void *out) { return tg_npy_load(p, out); }
static tg_status load_st(const char *p, void *out) { return tg_st_load(p, out); }

Test(npy, loads_from_a_pipe)
{
    tt_deadline(20);
    char path[256];
    tmp_path(path, sizeof path, "pipe");
    tg_tensor *t = filled(TG_F64, 2, (int64_t[]){3, 5}), *u = NULL;
    cr_assert_eq(tg_npy_save(path, t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(through_fifo(path, "npy", load_npy, &u), TG_OK, "%s", tg_last_error());
    assert_values(u, TG_F64, 2, (int64_t[]){3, 5}, "through a FIFO");
    tg_tensor_free(u);
    /* safetensors: the same tensor under a name */
    const char *names[1] = {"w"};
    const tg_tensor *ts[1] = {t};
    cr_assert_eq(tg_st_save(path, 1, names, ts, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
    tg_st_file *sf = NULL;
    cr_assert_eq(through_fifo(path, "st", load_st, &sf), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_count(sf), 1);
    assert_values((tg_tensor *)tg_st_find(sf, "w"), TG_F64, 2, (int64_t[]){3, 5},
                  "safetensors through a FIFO");
    tg_st_free(sf);
    /* a FIFO that closes empty is a format error, not a crash */
    FILE *e = fopen(path, "wb");
    fclose(e);
    cr_assert_neq(through_fifo(path, "empty", load_npy, &u), TG_OK);
    cr_assert_null(u);
    tg_tensor_free(t);
    remove(path);
}
