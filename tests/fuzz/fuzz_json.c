/*
 * fuzz_json.c - libFuzzer target for the strict JSON parser (engine/io/json.c),
 * which reads safetensors headers and oracle case files.
 *
 * Input: byte 0 picks the options (reject duplicate keys; a small or the
 * default nesting limit; a small or the default value limit); the rest is
 * the document, not NUL-terminated. A parsed tree is walked completely.
 */
#include "fuzz.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const tg__json *v, int depth)
{
    size_t n = 1;
    if (depth > 1001) abort();   /* deeper than the hard cap */
    switch (v->kind) {
    case TG__JSON_STRING:
        n += strlen(v->str) <= v->len ? 0 : (abort(), 0);
        break;
    case TG__JSON_ARRAY:
        for (int i = 0; i < v->n; i++) n += walk(tg__json_at(v, i), depth + 1);
        break;
    case TG__JSON_OBJECT:
        for (int k = 0; k < v->n; k++) {
            const tg__json *key = tg__json_key(v, k);
            if (key->kind != TG__JSON_STRING) abort();
            if (strlen(key->str) == key->len && !tg__json_get(v, key->str)) abort();
            n += walk(tg__json_value(v, k), depth + 1);
        }
        break;
    default:
        break;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    uint8_t o = fz_byte(&r);
    tg__json_opts opts = {
        .reject_duplicates = o & 1,
        .max_depth = (o & 2) ? 4 : 0,
        .max_values = (o & 4) ? 16 : 0,
    };
    /* An exact-size heap copy, so a read past the end is caught. */
    char *text = malloc(r.n ? r.n : 1);
    if (!text) return 0;
    if (r.n) memcpy(text, r.p, r.n);
    tg__json_doc doc;
    if (tg__json_parse(text, r.n, "fuzz.json", &opts, &doc) == TG_OK) {
        if (!doc.root) abort();
        (void)walk(doc.root, 0);
        char ex[64];
        (void)tg__escape(text, r.n, ex, sizeof ex);
    }
    tg__json_free(&doc);
    free(text);
    return 0;
}
