/*
 * test_value.c - the KEY=VALUE value language (engine/io/value.h): every kind,
 * formatting back to text, typed reads, configs, and each error with its
 * message and position.
 */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "internal.h"
#include "value.h"

static tg_value parse_ok(const char *text)
{
    tg_value v;
    tg_status st = tg_value_parse(text, &v);
    cr_assert_eq(st, TG_OK, "parse '%s': %s", text, tg_last_error());
    return v;
}

static void parse_bad(const char *text, const char *needle)
{
    tg_value v;
    tg_status st = tg_value_parse(text, &v);
    cr_assert_neq(st, TG_OK, "parse '%s' should fail", text);
    cr_assert_eq(v.kind, TG_VALUE_NULL, "failed parse leaves a null value");
    tt_assert_last_error(needle);
}

static void roundtrip(const char *text, const char *want)
{
    char buf[256];
    tg_value v = parse_ok(text);
    tg_value_format(&v, buf, sizeof buf);
    cr_assert_str_eq(buf, want, "format(parse('%s'))", text);
    tg_value_free(&v);
    /* and the formatted text parses back to the same text */
    v = parse_ok(buf);
    char again[256];
    tg_value_format(&v, again, sizeof again);
    cr_assert_str_eq(again, buf);
    tg_value_free(&v);
}

Test(value, integers)
{
    tg_value v = parse_ok("-3");
    cr_assert_eq(v.kind, TG_VALUE_INT);
    cr_assert_eq(v.i, -3);
    cr_assert_eq(v.f, -3.0);
    v = parse_ok("  +42\t");
    cr_assert_eq(v.kind, TG_VALUE_INT);
    cr_assert_eq(v.i, 42);
    v = parse_ok("9223372036854775807");
    cr_assert_eq(v.i, INT64_MAX);
    v = parse_ok("-9223372036854775808");
    cr_assert_eq(v.i, INT64_MIN);
    parse_bad("9223372036854775808", "integer out of range (int64) at offset 0");
    parse_bad("[1, -9223372036854775809]", "integer out of range (int64) at offset 4");
}

Test(value, floats)
{
    tg_value v = parse_ok("1e-5");
    cr_assert_eq(v.kind, TG_VALUE_FLOAT);
    cr_assert_eq(v.f, 1e-5);
    v = parse_ok("0.5");
    cr_assert_eq(v.f, 0.5);
    v = parse_ok(".25");
    cr_assert_eq(v.f, 0.25);
    v = parse_ok("3.");
    cr_assert_eq(v.kind, TG_VALUE_FLOAT);
    cr_assert_eq(v.f, 3.0);
    v = parse_ok("-2E+3");
    cr_assert_eq(v.f, -2000.0);
    v = parse_ok("inf");
    cr_assert(isinf(v.f) && v.f > 0);
    v = parse_ok("-inf");
    cr_assert(isinf(v.f) && v.f < 0);
    v = parse_ok("+Infinity");
    cr_assert(isinf(v.f) && v.f > 0);
    v = parse_ok("nan");
    cr_assert(isnan(v.f));
    v = parse_ok("NaN");
    cr_assert(isnan(v.f));
    v = parse_ok("1e999");   /* like Python's float('1e999') */
    cr_assert(isinf(v.f));
}

Test(value, bools_null)
{
    tg_value v = parse_ok("true");
    cr_assert_eq(v.kind, TG_VALUE_BOOL);
    cr_assert(v.b);
    v = parse_ok("False");
    cr_assert_eq(v.kind, TG_VALUE_BOOL);
    cr_assert(!v.b);
    v = parse_ok("null");
    cr_assert_eq(v.kind, TG_VALUE_NULL);
    v = parse_ok("None");
    cr_assert_eq(v.kind, TG_VALUE_NULL);
    /* other spellings are bare strings */
    v = parse_ok("TRUE");
    cr_assert_eq(v.kind, TG_VALUE_STRING);
    cr_assert_str_eq(v.s, "TRUE");
    tg_value_free(&v);
}

Test(value, strings)
{
    tg_value v = parse_ok("mean");
    cr_assert_eq(v.kind, TG_VALUE_STRING);
    cr_assert_str_eq(v.s, "mean");
    tg_value_free(&v);
    v = parse_ok("'b l h e'");
    cr_assert_str_eq(v.s, "b l h e");
    tg_value_free(&v);
    v = parse_ok("\"x\"");
    cr_assert_str_eq(v.s, "x");
    tg_value_free(&v);
    v = parse_ok(" b l h e ");   /* bare text at the top level keeps inner blanks */
    cr_assert_str_eq(v.s, "b l h e");
    tg_value_free(&v);
    v = parse_ok("'3'");         /* quoted digits stay a string */
    cr_assert_eq(v.kind, TG_VALUE_STRING);
    cr_assert_str_eq(v.s, "3");
    tg_value_free(&v);
    v = parse_ok("''");
    cr_assert_str_eq(v.s, "");
    tg_value_free(&v);
    v = parse_ok("'it\\'s a \\\\ \\n'");
    cr_assert_str_eq(v.s, "it's a \\ \n");
    tg_value_free(&v);
    v = parse_ok("1.2.3");
    cr_assert_eq(v.kind, TG_VALUE_STRING);
    tg_value_free(&v);
    v = parse_ok("12abc");
    cr_assert_eq(v.kind, TG_VALUE_STRING);
    tg_value_free(&v);
}

Test(value, lists)
{
    tg_value v = parse_ok("[2, 3]");
    cr_assert_eq(v.kind, TG_VALUE_LIST);
    cr_assert_eq(v.n, 2);
    cr_assert_eq(v.items[0].kind, TG_VALUE_INT);
    cr_assert_eq(v.items[1].i, 3);
    tg_value_free(&v);
    cr_assert_eq(v.kind, TG_VALUE_NULL, "free resets the value");

    v = parse_ok("[[1,2],[3, [4.5, x, 'y z', null, true]], []]");
    cr_assert_eq(v.n, 3);
    cr_assert_eq(v.items[0].n, 2);
    const tg_value *inner = &v.items[1].items[1];
    cr_assert_eq(inner->kind, TG_VALUE_LIST);
    cr_assert_eq(inner->n, 5);
    cr_assert_eq(inner->items[0].f, 4.5);
    cr_assert_str_eq(inner->items[1].s, "x");
    cr_assert_str_eq(inner->items[2].s, "y z");
    cr_assert_eq(inner->items[3].kind, TG_VALUE_NULL);
    cr_assert(inner->items[4].b);
    cr_assert_eq(v.items[2].kind, TG_VALUE_LIST);
    cr_assert_eq(v.items[2].n, 0);
    tg_value_free(&v);

    v = parse_ok("[]");
    cr_assert_eq(v.n, 0);
    tg_value_free(&v);

    /* many items (growth) */
    char big[4096] = "[";
    for (int i = 0; i < 500; i++) strcat(big, i ? ",7" : "7");
    strcat(big, "]");
    v = parse_ok(big);
    cr_assert_eq(v.n, 500);
    cr_assert_eq(v.items[499].i, 7);
    tg_value_free(&v);
}

Test(value, errors_with_positions)
{
    parse_bad("[2,", "bad value '[2,': unterminated list at offset 3");
    parse_bad("[2", "unterminated list at offset 2");
    parse_bad("[", "unterminated list at offset 1");
    parse_bad("[2,]", "expected a value after ',' at offset 3");
    parse_bad("[,]", "expected a value at offset 1");
    parse_bad("[1 2]", "expected ',' or ']' at offset 3");
    parse_bad("[1] x", "unexpected text after the list at offset 4");
    parse_bad("'abc", "unterminated string (missing ') at offset 4");
    parse_bad("\"abc", "unterminated string (missing \") at offset 4");
    parse_bad("'a' b", "unexpected text after the string at offset 4");
    parse_bad("'a\\qb'", "unknown escape");
    parse_bad("'a\\'", "unterminated string");
    parse_bad("", "empty value");
    parse_bad("   ", "empty value");
    parse_bad("[1, 'x]", "unterminated string");
    /* long text is cut in the message, the position still exact */
    char longtext[200];
    memset(longtext, 'a', sizeof longtext);
    longtext[0] = '[';
    longtext[198] = '!';
    longtext[199] = '\0';
    parse_bad(longtext, "...': unterminated list at offset 199");
}

Test(value, depth_limit)
{
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 99);
    deep[199] = '\0';
    parse_bad(deep, "nested too deeply");
    /* 32 levels are fine */
    char ok[65];
    memset(ok, '[', 32);
    memset(ok + 32, ']', 32);
    ok[64] = '\0';
    tg_value v = parse_ok(ok);
    tg_value_free(&v);
}

Test(value, format)
{
    roundtrip("[2,3]", "[2, 3]");
    roundtrip("1e-5", "1e-05");
    roundtrip("0.1", "0.1");
    roundtrip("100.0", "100.0");
    roundtrip("3.", "3.0");
    roundtrip("-2.5e-7", "-2.5e-07");
    roundtrip("1e16", "1e+16");
    roundtrip("123456789012345.6", "123456789012345.6");
    roundtrip("0.0001", "0.0001");
    roundtrip("1.7976931348623157e308", "1.7976931348623157e+308");
    roundtrip("-inf", "-inf");
    roundtrip("nan", "nan");
    roundtrip("true", "true");
    roundtrip("None", "null");
    roundtrip("-7", "-7");
    roundtrip("mean", "mean");
    roundtrip("'b l h e'", "'b l h e'");
    roundtrip("'3'", "'3'");
    roundtrip("'true'", "'true'");
    roundtrip("'1e5'", "'1e5'");
    roundtrip("''", "''");
    roundtrip("'it\\'s'", "'it\\'s'");
    roundtrip("[a, 'b c', [1.5, null], []]", "[a, 'b c', [1.5, null], []]");
    roundtrip("'99999999999999999999'", "'99999999999999999999'");

    /* truncation always NUL-terminates */
    tg_value v = parse_ok("[1, 2, 3, 4]");
    char small[5];
    memset(small, 'x', sizeof small);
    tg_value_format(&v, small, sizeof small);
    cr_assert_str_eq(small, "[1, ");
    tg_value_free(&v);
}

Test(value, typed_reads)
{
    int64_t i;
    double d;
    bool b;
    const char *s;
    tg_value v = parse_ok("abc");
    cr_assert_eq(tg_value_as_int(&v, "k", &i), TG_ERR_INVALID);
    tt_assert_last_error("k: expected an integer, got 'abc'");
    cr_assert_eq(tg_value_as_string(&v, "k", &s), TG_OK);
    cr_assert_str_eq(s, "abc");
    cr_assert_neq(tg_value_as_bool(&v, "flag", &b), TG_OK);
    tt_assert_last_error("flag: expected true or false, got 'abc'");
    tg_value_free(&v);

    v = parse_ok("3");
    cr_assert_eq(tg_value_as_int(&v, "k", &i), TG_OK);
    cr_assert_eq(i, 3);
    cr_assert_eq(tg_value_as_double(&v, "k", &d), TG_OK, "as_double accepts INT");
    cr_assert_eq(d, 3.0);
    cr_assert_neq(tg_value_as_string(&v, "name", &s), TG_OK);
    tt_assert_last_error("name: expected a string, got an integer 3");

    v = parse_ok("3.5");
    cr_assert_neq(tg_value_as_int(&v, "k", &i), TG_OK);
    tt_assert_last_error("k: expected an integer, got a float 3.5");
    cr_assert_eq(tg_value_as_double(&v, "k", &d), TG_OK);
    cr_assert_eq(d, 3.5);

    v = parse_ok("[1, 2]");
    cr_assert_neq(tg_value_as_double(&v, "lr", &d), TG_OK);
    tt_assert_last_error("lr: expected a number, got a list [1, 2]");
    tg_value_free(&v);

    v = parse_ok("true");
    cr_assert_eq(tg_value_as_bool(&v, "f", &b), TG_OK);
    cr_assert(b);
    cr_assert_neq(tg_value_as_int(NULL, "k", &i), TG_OK);
    tt_assert_last_error("k: expected an integer, got nothing");
}

Test(value, int_lists)
{
    int64_t out[4];
    int n = -1;
    tg_value v = parse_ok("[2, -3, 4]");
    cr_assert_eq(tg_value_as_int_list(&v, "dims", out, 4, &n), TG_OK);
    cr_assert_eq(n, 3);
    cr_assert(out[0] == 2 && out[1] == -3 && out[2] == 4);
    cr_assert_neq(tg_value_as_int_list(&v, "dims", out, 2, &n), TG_OK);
    tt_assert_last_error("dims: expected at most 2 integers, got 3");
    tg_value_free(&v);

    v = parse_ok("7");
    cr_assert_eq(tg_value_as_int_list(&v, "dims", out, 4, &n), TG_OK);
    cr_assert_eq(n, 1);
    cr_assert_eq(out[0], 7);

    v = parse_ok("[]");
    cr_assert_eq(tg_value_as_int_list(&v, "dims", out, 4, &n), TG_OK);
    cr_assert_eq(n, 0);
    tg_value_free(&v);

    v = parse_ok("[1, x]");
    cr_assert_neq(tg_value_as_int_list(&v, "dims", out, 4, &n), TG_OK);
    tt_assert_last_error("dims[1]: expected an integer, got 'x'");
    tg_value_free(&v);

    v = parse_ok("x");
    cr_assert_neq(tg_value_as_int_list(&v, "dims", out, 4, &n), TG_OK);
    tt_assert_last_error("dims: expected a list of integers, got 'x'");
    tg_value_free(&v);
}

Test(value, config)
{
    tg_config *c = tg_config_new();
    cr_assert_not_null(c);
    cr_assert_eq(tg_config_set(c, "d_model=64"), TG_OK);
    cr_assert_eq(tg_config_set(c, "attn.pattern='b l h e'"), TG_OK);
    cr_assert_eq(tg_config_set(c, "dims=[2, 3]"), TG_OK);
    cr_assert_eq(tg_config_set(c, "d_model=128"), TG_OK, "a repeated key replaces");
    cr_assert_eq(tg_config_count(c), 3);
    cr_assert_str_eq(tg_config_key(c, 0), "d_model");
    cr_assert_null(tg_config_key(c, 3));

    int64_t i;
    cr_assert_eq(tg_value_as_int(tg_config_get(c, "d_model"), "d_model", &i), TG_OK);
    cr_assert_eq(i, 128);
    const char *s;
    cr_assert_eq(tg_value_as_string(tg_config_get(c, "attn.pattern"), "attn.pattern", &s), TG_OK);
    cr_assert_str_eq(s, "b l h e");
    cr_assert_null(tg_config_get(c, "absent"));

    cr_assert_eq(tg_config_check_unused(c, "train", "d_model, attn.pattern"), TG_ERR_NOT_FOUND);
    tt_assert_last_error("train: unknown key 'dims' (known: d_model, attn.pattern)");
    tg_config_get(c, "dims");
    cr_assert_eq(tg_config_check_unused(c, "train", "x"), TG_OK);

    tg_value v = parse_ok("[1]");
    cr_assert_eq(tg_config_put(c, "extra_1", &v), TG_OK);
    cr_assert_eq(v.kind, TG_VALUE_NULL, "put takes ownership");
    cr_assert_eq(tg_config_count(c), 4);
    cr_assert_eq(tg_config_check_unused(c, "run", NULL), TG_ERR_NOT_FOUND);
    tt_assert_last_error("run: unknown key 'extra_1'");
    tg_config_free(c);
}

Test(value, config_errors)
{
    tg_config *c = tg_config_new();
    cr_assert_eq(tg_config_set(c, "noequals"), TG_ERR_FORMAT);
    tt_assert_last_error("item 'noequals': expected KEY=VALUE");
    cr_assert_eq(tg_config_set(c, "=3"), TG_ERR_FORMAT);
    tt_assert_last_error("item '=3': bad key '': the key is empty");
    cr_assert_eq(tg_config_set(c, "a-b=3"), TG_ERR_FORMAT);
    tt_assert_last_error("bad key 'a-b': a key may only contain letters, digits, '_' and '.'");
    cr_assert_eq(tg_config_set(c, "k=[2,"), TG_ERR_FORMAT);
    tt_assert_last_error("item 'k=[2,': bad value '[2,': unterminated list at offset 3");
    cr_assert_eq(tg_config_set(c, "k="), TG_ERR_FORMAT);
    tt_assert_last_error("item 'k=': bad value '': empty value");
    cr_assert_eq(tg_config_count(c), 0, "failed items add nothing");
    cr_assert_eq(tg_config_set(c, " k = 'a=b' "), TG_OK, "blanks around the key, '=' in value");
    cr_assert_str_eq(tg_config_get(c, "k")->s, "a=b");

    tg_value v = parse_ok("'s'");
    cr_assert_eq(tg_config_put(c, "bad key", &v), TG_ERR_FORMAT);
    cr_assert_eq(v.kind, TG_VALUE_NULL, "put frees the value on failure");
    tg_config_free(c);
}

Test(value, out_of_memory_is_clean)
{
    /* every allocation failing in turn: an error, never a crash or a leak (asan) */
    for (uint64_t k = 1; k < 40; k++) {
        tg_value v;
        tg__alloc_fail_after(k);
        tg_status st = tg_value_parse("[[1, 'ab', [x, y, z, w, q]], 'long string', [3]]", &v);
        tg__alloc_fail_after(0);
        if (st) {
            cr_assert_eq(st, TG_ERR_NOMEM);
            tt_assert_last_error("out of memory");
        } else {
            tg_value_free(&v);
        }
        tg_config *c;
        tg__alloc_fail_after(k);
        c = tg_config_new();
        if (c) {
            for (int j = 0; j < 12; j++) {
                char item[32];
                snprintf(item, sizeof item, "k%d=[%d, x]", j, j);
                tg_config_set(c, item);
            }
        }
        tg__alloc_fail_after(0);
        tg_config_free(c);
    }
}
