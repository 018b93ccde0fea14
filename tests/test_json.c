/*
 * test_json.c - the strict JSON parser (engine/io/json.h): what it accepts,
 * exact integers, escapes and UTF-8, duplicates, limits, and each rejection
 * with its message and position.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "json.h"

static tg__json_doc doc_ok_n(const char *text, size_t len)
{
    tg__json_doc d;
    tg_status st = tg__json_parse(text, len, "t.json", NULL, &d);
    cr_assert_eq(st, TG_OK, "parse %s: %s", text, tg_last_error());
    cr_assert_not_null(d.root);
    return d;
}
static tg__json_doc doc_ok(const char *text) { return doc_ok_n(text, strlen(text)); }

static void bad_n(const char *text, size_t len, const char *needle)
{
    tg__json_doc d;
    tg_status st = tg__json_parse(text, len, "t.json", NULL, &d);
    cr_assert_neq(st, TG_OK, "parse '%s' should fail", text);
    cr_assert_null(d.root);
    tt_assert_last_error(needle);
    tt_assert_last_error("t.json: ");
    tg__json_free(&d);
}
static void bad(const char *text, const char *needle) { bad_n(text, strlen(text), needle); }

Test(json, values)
{
    tg__json_doc d = doc_ok(" {\"a\": [1, -2.5, true, false, null, \"x\", {}, []],\n\"b\":{\"c\":{}}} ");
    const tg__json *r = d.root;
    cr_assert_eq(r->kind, TG__JSON_OBJECT);
    cr_assert_eq(r->n, 2);
    cr_assert_eq(r->dup, -1);
    cr_assert(tg__json_streq(tg__json_key(r, 0), "a"));
    const tg__json *a = tg__json_get(r, "a");
    cr_assert_eq(a->kind, TG__JSON_ARRAY);
    cr_assert_eq(a->n, 8);
    cr_assert_eq(a->pos, 7);
    int64_t i;
    cr_assert(tg__json_get_i64(tg__json_at(a, 0), &i) && i == 1);
    cr_assert_eq(tg__json_at(a, 1)->num, -2.5);
    cr_assert(!tg__json_at(a, 1)->is_int);
    cr_assert(tg__json_at(a, 2)->kind == TG__JSON_BOOL && tg__json_at(a, 2)->b);
    cr_assert(tg__json_at(a, 3)->kind == TG__JSON_BOOL && !tg__json_at(a, 3)->b);
    cr_assert_eq(tg__json_at(a, 4)->kind, TG__JSON_NULL);
    cr_assert(tg__json_streq(tg__json_at(a, 5), "x"));
    cr_assert(tg__json_at(a, 6)->kind == TG__JSON_OBJECT && tg__json_at(a, 6)->n == 0);
    cr_assert(tg__json_at(a, 7)->kind == TG__JSON_ARRAY && tg__json_at(a, 7)->n == 0);
    cr_assert_null(tg__json_at(a, 8));
    cr_assert_null(tg__json_at(a, -1));
    cr_assert_null(tg__json_get(r, "zz"));
    cr_assert_null(tg__json_key(a, 0), "an array has no keys");
    cr_assert_eq(tg__json_get(tg__json_get(r, "b"), "c")->kind, TG__JSON_OBJECT);
    cr_assert_str_eq(tg__json_kind_name(TG__JSON_ARRAY), "an array");
    tg__json_free(&d);

    /* scalars at the top level */
    d = doc_ok("\t\r\n 42 \n");
    cr_assert(d.root->is_int && d.root->i == 42);
    tg__json_free(&d);
    d = doc_ok("\"s\"");
    cr_assert(tg__json_streq(d.root, "s"));
    tg__json_free(&d);
}

Test(json, numbers)
{
    static const struct { const char *t; bool is_int; int64_t i; double f; } cases[] = {
        {"0", true, 0, 0},
        {"-0", true, 0, 0},
        {"123", true, 123, 123},
        {"9007199254740993", true, 9007199254740993LL, 9007199254740992.0},   /* 2^53 + 1 */
        {"9223372036854775807", true, INT64_MAX, 9223372036854775807.0},
        {"-9223372036854775808", true, INT64_MIN, -9223372036854775808.0},
        {"9223372036854775808", false, 0, 9223372036854775808.0},
        {"281474976710656", true, 281474976710656LL, 281474976710656.0},
        {"1.5", false, 0, 1.5},
        {"1e3", false, 0, 1000},
        {"2.0", false, 0, 2},
        {"-1.25E-2", false, 0, -0.0125},
        {"1e+2", false, 0, 100},
        {"0.1", false, 0, 0.1},
        {"1e-400", false, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tg__json_doc d = doc_ok(cases[k].t);
        cr_assert_eq(d.root->kind, TG__JSON_NUMBER);
        cr_assert_eq(d.root->is_int, cases[k].is_int, "%s", cases[k].t);
        if (cases[k].is_int) cr_assert_eq(d.root->i, cases[k].i, "%s", cases[k].t);
        cr_assert_eq(d.root->num, cases[k].f, "%s: %.17g", cases[k].t, d.root->num);
        tg__json_free(&d);
    }
}

Test(json, number_errors)
{
    bad("[01]", "invalid number: leading zeros are not allowed at line 1, column 2 (offset 1)");
    bad("-01", "leading zeros are not allowed");
    bad("[1.]", "expected a digit after '.' at line 1, column 2 (offset 1)");
    bad("[1e]", "expected a digit in the exponent");
    bad("[1e+]", "expected a digit in the exponent");
    bad("[.5]", "expected a digit before '.'");
    bad("[+1]", "a leading '+' is not allowed");
    bad("[-]", "expected a digit after '-'");
    bad("[1e999]", "number out of range (overflows a double) at line 1, column 2 (offset 1)");
    bad("[NaN]", "NaN is not valid JSON at line 1, column 2 (offset 1)");
    bad("[nan]", "NaN is not valid JSON");
    bad("[Infinity]", "Infinity is not valid JSON at line 1, column 2 (offset 1)");
    bad("[-Infinity]", "Infinity is not valid JSON");
    bad("0x10", "unexpected character 'x' after the JSON value at line 1, column 2 (offset 1)");
}

Test(json, numbers_not_nul_terminated)
{
    /* strtod must not read past len: the digits after len are not part of the text */
    tg__json_doc d = doc_ok_n("1.5999", 3);
    cr_assert_eq(d.root->num, 1.5);
    tg__json_free(&d);
    d = doc_ok_n("123456", 3);
    cr_assert_eq(d.root->i, 123);
    tg__json_free(&d);
    /* an exact-size heap copy: ASan catches any read past the end */
    const char *texts[] = {"1.25", "-3e2", "[1,2.5]", "\"\\u00e9\"", "{\"a\":0.5}"};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        size_t n = strlen(texts[k]);
        char *buf = malloc(n);
        memcpy(buf, texts[k], n);
        d = doc_ok_n(buf, n);
        tg__json_free(&d);
        free(buf);
    }
    /* a long number (bigger than the on-stack buffer) */
    char longnum[400] = "0.";
    memset(longnum + 2, '1', 300);
    longnum[302] = '\0';
    d = doc_ok(longnum);
    cr_assert_float_eq(d.root->num, 0.11111111111111111, 1e-16);
    tg__json_free(&d);
}

Test(json, strings_and_escapes)
{
    tg__json_doc d = doc_ok("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u00e9\\u20AC\", \"\\ud83d\\ude00\","
                            " \"a\\u0000b\", \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\", \"\"]");
    const tg__json *a = d.root;
    cr_assert_str_eq(tg__json_at(a, 0)->str, "\"\\/\b\f\n\r\t");
    cr_assert_str_eq(tg__json_at(a, 1)->str, "\xc3\xa9\xe2\x82\xac");
    cr_assert_str_eq(tg__json_at(a, 2)->str, "\xf0\x9f\x98\x80");
    cr_assert_eq(tg__json_at(a, 3)->len, 3);
    cr_assert_eq(memcmp(tg__json_at(a, 3)->str, "a\0b", 3), 0);
    cr_assert(!tg__json_streq(tg__json_at(a, 3), "a"), "the NUL is part of the string");
    cr_assert_str_eq(tg__json_at(a, 4)->str, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    cr_assert_eq(tg__json_at(a, 5)->len, 0);
    tg__json_free(&d);
}

Test(json, string_errors)
{
    bad("\"a\nb\"", "control character 0x0a in a string (escape it) at line 1, column 3 (offset 2)");
    bad("\"a\tb\"", "control character 0x09");
    bad("\"\\x\"", "invalid escape '\\x' at line 1, column 2 (offset 1)");
    bad("\"\\u12\"", "invalid \\u escape (expected 4 hex digits)");
    bad("\"\\u12g4\"", "invalid \\u escape");
    bad("\"\\ud800\"", "lone leading surrogate \\ud800");
    bad("\"\\ud800\\u0041\"", "lone leading surrogate");
    bad("\"\\udc00\"", "lone trailing surrogate \\udc00");
    bad("\"abc", "unterminated string at line 1, column 1 (offset 0)");
    bad("\"abc\\", "unterminated string");
    bad("'a'", "single-quoted strings are not valid JSON");
    /* invalid UTF-8 inside strings */
    bad("[\"\xff\"]", "invalid UTF-8 byte 0xff in a string at line 1, column 3 (offset 2)");
    bad("\"\xc0\xaf\"", "invalid UTF-8 byte 0xc0");          /* overlong '/' */
    bad("\"\xed\xa0\x80\"", "invalid UTF-8 byte 0xed");      /* encoded surrogate */
    bad("\"\xe2\x82\"", "invalid UTF-8 byte 0xe2");          /* cut sequence */
    bad_n("\"\xe2\x82", 3, "invalid UTF-8 byte 0xe2");       /* cut by the end */
    bad("\"\xf4\x90\x80\x80\"", "invalid UTF-8 byte 0xf4");  /* above U+10FFFF */
    bad("\"\x80\"", "invalid UTF-8 byte 0x80");              /* lone continuation */
    bad("[\xff]", "unexpected byte 0xff (expected a value) at line 1, column 2 (offset 1)");
    bad("\xef\xbb\xbf{}", "a byte order mark is not allowed");
}

Test(json, syntax_errors)
{
    bad("", "unexpected end of input (expected a value) at line 1, column 1 (offset 0)");
    bad("   ", "unexpected end of input");
    bad("[1,2,]", "trailing comma before ']' at line 1, column 6 (offset 5)");
    bad("{\"a\":1,}", "trailing comma before '}' at line 1, column 8 (offset 7)");
    bad("{\"a\":1,\n}", "trailing comma before '}' at line 2, column 1 (offset 8)");
    bad("// c\n{}", "comments are not allowed in JSON at line 1, column 1 (offset 0)");
    bad("{} /* c */", "comments are not allowed in JSON at line 1, column 4 (offset 3)");
    bad("[1, /* c */ 2]", "comments are not allowed in JSON");
    bad("[1 /* c */]", "comments are not allowed in JSON");
    bad("{\"a\" /* c */: 1}", "comments are not allowed in JSON");
    bad("{", "unterminated object at line 1, column 2 (offset 1)");
    bad("[", "unexpected end of input (expected a value)");
    bad("[1", "unterminated array");
    bad("{\"a\":1", "unterminated object");
    bad("{\"a\" 1}", "expected ':' after the key, got character '1' at line 1, column 6");
    bad("{1:2}", "expected a string key, got character '1'");
    bad("[1 2]", "expected ',' or ']', got character '2'");
    bad("{\"a\":1 \"b\":2}", "expected ',' or '}', got character '\"'");
    bad("[1] x", "unexpected character 'x' after the JSON value at line 1, column 5 (offset 4)");
    bad("{}{}", "after the JSON value");
    bad("tru", "invalid literal (expected true, false or null)");
    bad("nul", "invalid literal");
    bad("True", "unexpected character 'T'");
    bad("[,1]", "unexpected character ','");
    bad_n("[1,\0]", 5, "unexpected byte 0x00");
    /* line and column count lines */
    bad("{\n  \"a\": tru\n}", "invalid literal (expected true, false or null) at line 2, column 8 "
        "(offset 9)");
}

Test(json, depth_limit)
{
    char deep[200];
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = '\0';
    bad(deep, "nesting deeper than 64 levels at line 1, column 65 (offset 64)");
    tg__json_doc d = doc_ok_n(deep + 1, 128);   /* 64 levels are fine */
    tg__json_free(&d);
    /* a very deep document fails cleanly, without deep recursion */
    size_t n = 1000000;
    char *huge = malloc(n);
    memset(huge, '[', n);
    bad_n(huge, n, "nesting deeper than 64 levels");
    free(huge);
    /* a smaller limit by option */
    tg__json_opts o = {.max_depth = 2};
    cr_assert_eq(tg__json_parse("[[1]]", 5, "x", &o, &d), TG_OK);
    tg__json_free(&d);
    cr_assert_eq(tg__json_parse("[[[1]]]", 7, "x", &o, &d), TG_ERR_LIMIT);
    tt_assert_last_error("x: nesting deeper than 2 levels");
}

Test(json, value_limit)
{
    tg__json_opts o = {.max_values = 4};
    tg__json_doc d;
    cr_assert_eq(tg__json_parse("[1,2,3]", 7, "x", &o, &d), TG_OK);
    tg__json_free(&d);
    cr_assert_eq(tg__json_parse("[1,2,3,4]", 9, "x", &o, &d), TG_ERR_LIMIT);
    tt_assert_last_error("x: too many values (limit 4) at line 1, column 8 (offset 7)");
    /* the root and the keys count too */
    o.max_values = 5;
    cr_assert_eq(tg__json_parse("{\"a\":1,\"b\":2}", 13, "x", &o, &d), TG_OK);
    tg__json_free(&d);
    cr_assert_eq(tg__json_parse("{\"a\":1,\"b\":2,\"c\":3}", 19, "x", &o, &d), TG_ERR_LIMIT);
}

Test(json, duplicates)
{
    /* reported, not rejected, by default */
    tg__json_doc d = doc_ok("{\"a\":1,\"b\":2,\"a\":3}");
    cr_assert_eq(d.root->dup, 2);
    cr_assert_eq(tg__json_get(d.root, "a")->i, 1, "get returns the first");
    tg__json_free(&d);
    /* keys differing only after a NUL are different */
    d = doc_ok("{\"a\":1,\"a\\u0000\":2}");
    cr_assert_eq(d.root->dup, -1);
    tg__json_free(&d);
    /* rejected by option, naming the key and the position of the repeat */
    tg__json_opts o = {.reject_duplicates = true};
    const char *t = "{\"x\": {\"k\": 1, \"k\": 2}}";
    cr_assert_eq(tg__json_parse(t, strlen(t), "h", &o, &d), TG_ERR_FORMAT);
    tt_assert_last_error("h: duplicate key \"k\" at line 1, column 16 (offset 15)");
    /* the sorted path (more than 8 keys): the first repeat in document order */
    char big[512] = "{";
    for (int k = 0; k < 20; k++) {
        char m[32];
        snprintf(m, sizeof m, "\"%c\":%d,", 'a' + k, k);
        strcat(big, m);
    }
    strcat(big, "\"z\":0,\"t\":1,\"z\":2}");
    d = doc_ok(big);
    cr_assert_eq(d.root->n, 23);
    cr_assert_eq(d.root->dup, 21, "'t' (member 21) repeats member 19 before 'z' repeats");
    tg__json_free(&d);
    strcpy(big, "{");
    for (int k = 0; k < 30; k++) {
        char m[32];
        snprintf(m, sizeof m, "%s\"k%d\":%d", k ? "," : "", k, k);
        strcat(big, m);
    }
    strcat(big, "}");
    d = doc_ok(big);
    cr_assert_eq(d.root->dup, -1);
    tg__json_free(&d);
}

Test(json, utf8_check_and_excerpt)
{
    cr_assert_eq(tg__utf8_check("abc\xc3\xa9", 5), 5);
    cr_assert_eq(tg__utf8_check("ab\xff", 3), 2);
    cr_assert_eq(tg__utf8_check("a\xe0\x80\x80", 4), 1, "overlong 3-byte");
    cr_assert_eq(tg__utf8_check("\xf0\x8f\xbf\xbf", 4), 0, "overlong 4-byte");
    cr_assert_eq(tg__utf8_check("\xf4\x8f\xbf\xbf", 4), 4, "U+10FFFF is fine");
    cr_assert_eq(tg__utf8_check("\xed\x9f\xbf", 3), 3, "U+D7FF is fine");
    cr_assert_eq(tg__utf8_check("\xc3", 1), 0, "cut");
    char buf[16];
    cr_assert_str_eq(tg__escape("a\nb\\", 4, buf, sizeof buf), "a\\x0ab\\\\");
    cr_assert_str_eq(tg__escape("abcdefghijklmnopqrstuvwxyz", 26, buf, sizeof buf),
                     "abcdefghijk...");
    int line, col;
    tg__json_line_col("ab\ncd\nef", 8, 7, &line, &col);
    cr_assert(line == 3 && col == 2);
}

Test(json, out_of_memory_is_clean)
{
    char big[2048] = "{\"s\": \"a long string value to copy\", \"list\": [";
    for (int k = 0; k < 100; k++) strcat(big, k ? ",[1,\"x\"]" : "[1,\"x\"]");
    strcat(big, "], \"k0\":1,\"k1\":1,\"k2\":1,\"k3\":1,\"k4\":1,\"k5\":1,\"k6\":1,\"k7\":1,\"k8\":1}");
    for (uint64_t k = 1; k < 30; k++) {
        tg__json_doc d;
        tg__alloc_fail_after(k);
        tg_status st = tg__json_parse(big, strlen(big), "m", NULL, &d);
        tg__alloc_fail_after(0);
        if (st) {
            cr_assert_eq(st, TG_ERR_NOMEM, "%s", tg_last_error());
            tt_assert_last_error("m: out of memory");
        }
        tg__json_free(&d);
    }
}
