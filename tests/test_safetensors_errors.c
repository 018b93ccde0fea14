/*
 * test_safetensors_errors.c - every malformed safetensors file of OPS.md
 * section 17.3 (sizes, header text, entries, metadata, names, sizes that
 * overflow, dtypes tgraph cannot convert, values) as a table row built here
 * from bytes. Each row is read twice, from memory (tg_st_parse) and from a
 * file (tg_st_load, which reads the header and data separately), and must
 * fail with the row's status and message; a wrong 8-byte size allocates
 * nothing. Well-formed files, the writer and round trips: test_safetensors.c.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "st_bytes.h"

#include <criterion/parameterized.h>

/* An 8-byte size, the header, then `data` bytes 0, 1, 2, ... (or `raw` as given). */
typedef struct {
    const char *name;
    const char *header;     /* NULL: use raw */
    int         data;       /* bytes of data after the header */
    const char *raw;        /* whole file when header is NULL */
    int         raw_len;
    tg_status   status;
    const char *msg;
} bad_case;

#define T(h) "{\"t\":{" h "}}"

static const bad_case bad_cases[] = {
    /* sizes */
    {"empty_file", NULL, 0, "", 0, TG_ERR_FORMAT, "the file is empty"},
    {"seven_bytes", NULL, 0, "\x02\0\0\0\0\0\0", 7, TG_ERR_FORMAT,
     "the file is 7 bytes long, too short for the 8-byte header size (HeaderTooSmall)"},
    {"huge_n", NULL, 0, "\xff\xff\xff\xff\xff\xff\xff\xff{}", 10, TG_ERR_LIMIT,
     "header size 18446744073709551615 is larger than the limit of 100000000 bytes "
     "(HeaderTooLarge)"},
    {"n_just_over_limit", NULL, 0, "\x01\xe1\xf5\x05\0\0\0\0{}", 10, TG_ERR_LIMIT,
     "header size 100000001 is larger than the limit"},
    {"n_zero", NULL, 0, "\0\0\0\0\0\0\0\0", 8, TG_ERR_FORMAT, "header size is 0"},
    {"n_zero_with_data", NULL, 0, "\0\0\0\0\0\0\0\0{}", 10, TG_ERR_FORMAT, "header size is 0"},
    {"n_past_eof", NULL, 0, "\x64\0\0\0\0\0\0\0{}", 10, TG_ERR_FORMAT,
     "header size 100 points past the end of the file (2 bytes after the size field) "
     "(InvalidHeaderLength)"},
    {"n_at_limit_past_eof", NULL, 0, "\0\xe1\xf5\x05\0\0\0\0{}", 10, TG_ERR_FORMAT,
     "header size 100000000 points past the end"},
    /* header text */
    {"invalid_utf8", NULL, 0, "\x0a\0\0\0\0\0\0\0{\"a\xff\":{}}", 18, TG_ERR_FORMAT,
     "header is not valid UTF-8 (byte 0xff at offset 3 of the header) (InvalidHeader)"},
    {"brace_only", "{", 0, NULL, 0, TG_ERR_FORMAT,
     "header: unterminated object at line 1, column 2 (offset 1) (InvalidHeaderDeserialization)"},
    {"trailing_comma", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4,
     NULL, 0, TG_ERR_FORMAT, "header: trailing comma before '}' at line 1, column 55"},
    {"trailing_comma_shape", T("\"dtype\":\"F32\",\"shape\":[1,],\"data_offsets\":[0,4]"), 4, NULL,
     0, TG_ERR_FORMAT, "trailing comma before ']'"},
    {"comment", "{/* c */}", 0, NULL, 0, TG_ERR_FORMAT, "header: comments are not allowed in JSON"},
    {"line_comment", "{}\n// c", 0, NULL, 0, TG_ERR_FORMAT, "comments are not allowed in JSON at "
     "line 2, column 1"},
    {"nan_literal", T("\"dtype\":\"F32\",\"shape\":[NaN],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "NaN is not valid JSON"},
    {"lone_surrogate", "{\"\\ud800\":{}}", 0, NULL, 0, TG_ERR_FORMAT, "lone leading surrogate"},
    {"top_array", "[]", 0, NULL, 0, TG_ERR_FORMAT,
     "header is not a JSON object (got an array) (InvalidHeaderDeserialization)"},
    {"top_string", "\"x\"", 0, NULL, 0, TG_ERR_FORMAT, "header is not a JSON object (got a string)"},
    {"text_after_object", "{} x", 0, NULL, 0, TG_ERR_FORMAT,
     "unexpected character 'x' after the JSON value"},
    {"too_deep", "{\"t\":{\"dtype\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}}", 0, NULL, 0,
     TG_ERR_LIMIT, "nesting deeper than 16 levels"},
    /* entries */
    {"entry_not_object", "{\"t\":[1]}", 0, NULL, 0, TG_ERR_FORMAT,
     "tensor 't': expected an object with dtype, shape and data_offsets, got an array"},
    {"missing_dtype", T("\"shape\":[1],\"data_offsets\":[0,4]"), 4, NULL, 0, TG_ERR_FORMAT,
     "tensor 't': missing field 'dtype' (InvalidHeaderDeserialization)"},
    {"missing_shape", T("\"dtype\":\"F32\",\"data_offsets\":[0,4]"), 4, NULL, 0, TG_ERR_FORMAT,
     "tensor 't': missing field 'shape'"},
    {"missing_offsets", T("\"dtype\":\"F32\",\"shape\":[1]"), 4, NULL, 0, TG_ERR_FORMAT,
     "tensor 't': missing field 'data_offsets'"},
    {"extra_field", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"foo\":1"), 4, NULL,
     0, TG_ERR_FORMAT, "tensor 't': unexpected field 'foo' (an entry has only dtype, shape and "
     "data_offsets)"},
    {"duplicate_field", T("\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"),
     4, NULL, 0, TG_ERR_FORMAT, "tensor 't': duplicate field 'dtype'"},
    {"unknown_dtype", T("\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': unknown dtype 'F17' (InvalidHeaderDeserialization)"},
    {"lowercase_dtype", T("\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "unknown dtype 'f32'"},
    {"dtype_not_string", T("\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': dtype is not a string (got a number)"},
    {"shape_not_array", T("\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': shape is not an array of integers (got a number)"},
    {"shape_negative", T("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': shape[0] = -1 is negative (InvalidHeaderDeserialization)"},
    {"shape_float", T("\"dtype\":\"F32\",\"shape\":[1,2.0],\"data_offsets\":[0,8]"), 8, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': shape[1] = 2.0 is not an integer"},
    {"shape_exponent", T("\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "shape[0] = 1e0 is not an integer"},
    {"shape_bool", T("\"dtype\":\"F32\",\"shape\":[true],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': shape[0] is not an integer (got a bool)"},
    {"shape_string", T("\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "shape[0] is not an integer (got a string)"},
    {"shape_2_48", T("\"dtype\":\"BOOL\",\"shape\":[281474976710656],\"data_offsets\":[0,4]"), 4,
     NULL, 0, TG_ERR_FORMAT, "tensor 't': shape[0] = 281474976710656 is not below 2^48"},
    {"shape_int64_overflow",
     T("\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "shape[0] = 99999999999999999999 is not below 2^48"},
    {"rank_9", T("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]"), 4, NULL,
     0, TG_ERR_LIMIT, "tensor 't': rank 9 is more than tgraph's maximum rank 8"},
    {"offsets_one", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': data_offsets must be [BEGIN, END] (two non-negative integers), "
     "got an array of 1"},
    {"offsets_three", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,4]"), 4, NULL, 0,
     TG_ERR_FORMAT, "got an array of 3"},
    {"offsets_string", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":\"0,4\""), 4, NULL, 0,
     TG_ERR_FORMAT, "data_offsets must be [BEGIN, END] (two non-negative integers), got a string"},
    {"offsets_negative", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': data_offsets[0] = -4 is negative"},
    {"offsets_float", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': data_offsets[1] = 4.0 is not an integer"},
    {"offsets_null", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,null]"), 4, NULL, 0,
     TG_ERR_FORMAT, "data_offsets[1] is not an integer (got null)"},
    {"offsets_2_48", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,281474976710656]"), 4,
     NULL, 0, TG_ERR_FORMAT, "data_offsets[1] = 281474976710656 is not below 2^48"},
    {"end_before_begin", T("\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]"), 4, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': data_offsets [4, 0] end before they begin (InvalidOffset)"},
    {"first_not_at_zero", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]"), 8, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': data_offsets [4, 8]: the first tensor must start at 0 "
     "(InvalidOffset)"},
    {"gap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
            "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12, NULL, 0,
     TG_ERR_FORMAT, "tensor 'b': data_offsets [8, 12] leave a gap after tensor 'a', which ends at "
     "4 (InvalidOffset)"},
    {"overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, NULL, 0,
     TG_ERR_FORMAT, "tensor 'b': data_offsets [4, 8] overlap tensor 'a', which ends at 8 "
     "(InvalidOffset)"},
    {"same_offsets", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                     "\"b\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, NULL, 0,
     TG_ERR_FORMAT, "data_offsets [0, 4] overlap tensor"},
    {"size_mismatch", T("\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,12]"), 12, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': data_offsets [0, 12] hold 12 bytes, but shape [2, 2] of F32 needs "
     "16 (TensorInvalidInfo)"},
    {"trailing_bytes", T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 8, NULL, 0,
     TG_ERR_FORMAT, "4 trailing bytes after the last tensor (the data is 8 bytes, the tensors cover "
     "4) (MetadataIncompleteBuffer)"},
    {"trailing_bytes_no_tensors", "{}", 3, NULL, 0, TG_ERR_FORMAT,
     "3 trailing bytes after the last tensor"},
    {"truncated_data", T("\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]"), 8, NULL, 0,
     TG_ERR_FORMAT, "the file is truncated: the tensors need 16 bytes of data, the file has 8 "
     "(MetadataIncompleteBuffer)"},
    /* a 1 TiB tensor in a tiny file: rejected before anything is allocated for it */
    {"truncated_huge", T("\"dtype\":\"F32\",\"shape\":[274877906944],"
                         "\"data_offsets\":[0,1099511627776]"), 16, NULL, 0, TG_ERR_FORMAT,
     "the tensors need 1099511627776 bytes of data, the file has 16"},
    /* metadata */
    {"meta_not_object", "{\"__metadata__\":\"x\"}", 0, NULL, 0, TG_ERR_FORMAT,
     "__metadata__ is not an object (got a string) (InvalidHeaderDeserialization)"},
    {"meta_null", "{\"__metadata__\":null}", 0, NULL, 0, TG_ERR_FORMAT,
     "__metadata__ is not an object (got null)"},
    {"meta_array", "{\"__metadata__\":[\"a\"]}", 0, NULL, 0, TG_ERR_FORMAT,
     "__metadata__ is not an object (got an array)"},
    {"meta_value_number", "{\"__metadata__\":{\"format\":\"pt\",\"k\":1}}", 0, NULL, 0,
     TG_ERR_FORMAT, "__metadata__ value of 'k' is not a string (got a number)"},
    {"meta_value_object", "{\"__metadata__\":{\"k\":{}}}", 0, NULL, 0, TG_ERR_FORMAT,
     "__metadata__ value of 'k' is not a string (got an object)"},
    {"meta_as_tensor", "{\"__metadata__\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     4, NULL, 0, TG_ERR_FORMAT, "'__metadata__' is reserved for metadata and cannot name a tensor"},
    {"meta_duplicate_key", "{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0, NULL, 0, TG_ERR_FORMAT,
     "__metadata__: duplicate key 'k'"},
    {"meta_nul", "{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, NULL, 0, TG_ERR_FORMAT,
     "__metadata__ entry 'k' contains a NUL character"},
    /* names */
    {"duplicate_name", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, NULL, 0,
     TG_ERR_FORMAT, "duplicate tensor name 'a' in the header"},
    {"duplicate_metadata", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, NULL, 0, TG_ERR_FORMAT,
     "duplicate '__metadata__' entry in the header"},
    {"name_with_nul", "{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     NULL, 0, TG_ERR_FORMAT, "tensor name 'a\\x00b' contains a NUL character"},
    /* sizes that overflow */
    {"numel_overflow",
     T("\"dtype\":\"F32\",\"shape\":[281474976710655,281474976710655],\"data_offsets\":[0,4]"), 4,
     NULL, 0, TG_ERR_LIMIT, "tensor 't': the element count of its shape overflows "
     "(ValidationOverflow)"},
    {"bytes_overflow",
     T("\"dtype\":\"F32\",\"shape\":[1099511627776,4194304],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_LIMIT, "tensor 't': its size in bytes overflows (ValidationOverflow)"},
    /* dtypes tgraph cannot convert, named */
    {"dtype_u64", T("\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[0,8]"), 8, NULL, 0,
     TG_ERR_DTYPE, "tensor 't': dtype U64 is not supported by tgraph"},
    {"dtype_f8", T("\"dtype\":\"F8_E4M3\",\"shape\":[4],\"data_offsets\":[0,4]"), 4, NULL, 0,
     TG_ERR_DTYPE, "tensor 't': dtype F8_E4M3 is not supported by tgraph"},
    {"dtype_c64", T("\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]"), 8, NULL, 0,
     TG_ERR_DTYPE, "dtype C64 is not supported"},
    {"dtype_f4", T("\"dtype\":\"F4\",\"shape\":[2],\"data_offsets\":[0,1]"), 1, NULL, 0,
     TG_ERR_DTYPE, "dtype F4 is not supported"},
    /* values */
    {"bool_not_01", T("\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]"), 3, NULL, 0,
     TG_ERR_FORMAT, "tensor 't': bool element 2 has value 2 (not 0 or 1)"},
};

/* Build the file bytes of a case; returns a malloc'd buffer. */
static unsigned char *case_bytes(const bad_case *c, size_t *len)
{
    if (!c->header) {
        unsigned char *b = malloc((size_t)c->raw_len + 1);
        memcpy(b, c->raw, (size_t)c->raw_len);
        *len = (size_t)c->raw_len;
        return b;
    }
    size_t n = strlen(c->header);
    *len = 8 + n + (size_t)c->data;
    unsigned char *b = malloc(*len);
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(b + 8, c->header, n);
    for (int k = 0; k < c->data; k++) b[8 + n + k] = (unsigned char)k;
    return b;
}

ParameterizedTestParameters(safetensors, malformed)
{
    static int idx[sizeof bad_cases / sizeof bad_cases[0]];
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) idx[i] = (int)i;
    return cr_make_param_array(int, idx, sizeof idx / sizeof idx[0]);
}

ParameterizedTest(int *i, safetensors, malformed)
{
    const bad_case *c = &bad_cases[*i];
    size_t len;
    unsigned char *b = case_bytes(c, &len);
    tg_st_file *f = (tg_st_file *)1;
    /* from memory: nothing allocated by a failing parse survives it (ASan) */
    tg_status st = tg_st_parse(b, len, "mem.safetensors", &f);
    cr_assert_eq(st, c->status, "%s: status %d (%s), expected %d", c->name, st, tg_last_error(),
                 c->status);
    cr_assert_null(f, "%s: *out is NULL on failure", c->name);
    tt_assert_last_error("mem.safetensors: ");
    tt_assert_last_error(c->msg);
    /* from a file */
    char path[256];
    tt_st_path(path, sizeof path, c->name);
    tt_st_write_bytes(path, b, len);
    f = (tg_st_file *)1;
    st = tg_st_load(path, &f);
    remove(path);
    cr_assert_eq(st, c->status, "%s (file): status %d (%s)", c->name, st, tg_last_error());
    cr_assert_null(f);
    tt_assert_last_error(path);
    tt_assert_last_error(c->msg);
    free(b);
}

Test(safetensors, size_errors_allocate_nothing)
{
    /* files whose first 8 bytes are wrong are rejected before any allocation */
    for (size_t i = 0; i < 8; i++) {
        size_t len;
        unsigned char *b = case_bytes(&bad_cases[i], &len);
        tg_st_file *f;
        uint64_t before = tg__alloc_count();
        cr_assert_neq(tg_st_parse(b, len, "x", &f), TG_OK);
        cr_assert_eq(tg__alloc_count(), before, "%s allocated", bad_cases[i].name);
        free(b);
    }
}
