/*
 * fuzz_value.c - libFuzzer target for the `--set KEY=VALUE` config parser
 * and the value language behind it (engine/io/config.c, value.c).
 *
 * Each of the first four lines of the input is one item: it goes to
 * tg_config_set, and the text after its first '=' (or the whole line) to
 * tg_value_parse, whose result is read through every typed accessor,
 * formatted back and parsed again. Finally every key is looked up and the
 * unused-key check runs. (Four lines keep one execution short; the fuzzer
 * gets more executions for the same time.)
 */
#include <stdio.h>

#include "fuzz.h"
#include "tgraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_value(const tg_value *v)
{
    int64_t i, list[8];
    double d;
    bool b;
    const char *s;
    int n;
    (void)tg_value_as_int(v, "k", &i);
    (void)tg_value_as_double(v, "k", &d);
    (void)tg_value_as_bool(v, "k", &b);
    (void)tg_value_as_string(v, "k", &s);
    (void)tg_value_as_int_list(v, "k", list, 8, &n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    char *text = fz_rest_str(&r);
    tg_config *c = tg_config_new();
    char *line = text;
    for (int k = 0; k < 4 && line; k++) {
        char *next = fz_next_line(line);
        if (c) (void)tg_config_set(c, line);
        const char *eq = strchr(line, '=');
        tg_value v;
        if (tg_value_parse(eq ? eq + 1 : line, &v) == TG_OK) {
            char buf[256];
            tg_value_format(&v, buf, sizeof buf);
            read_value(&v);
            tg_value w;
            if (tg_value_parse(buf, &w) == TG_OK) tg_value_free(&w);
            tg_value_free(&v);
        }
        line = next;
    }
    if (c) {
        for (int i = 0; i < tg_config_count(c); i++) {
            const tg_value *v = tg_config_get(c, tg_config_key(c, i));
            if (!v) abort();   /* every listed key must be found */
            if (i & 1) read_value(v);
        }
        (void)tg_config_check_unused(c, "fuzz", "a, b");
        tg_config_free(c);
    }
    free(text);
    return 0;
}
