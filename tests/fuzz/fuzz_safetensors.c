/*
 * fuzz_safetensors.c - libFuzzer target for the safetensors reader
 * (tg_st_parse): the whole input is the file. On success every tensor,
 * name and metadata entry is read end to end, and lookups by name agree
 * with the index.
 */
#include "fuzz.h"
#include "tgraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_st_file *f = NULL;
    if (tg_st_parse(data, size, "fuzz.safetensors", &f) != TG_OK) {
        if (f) abort();   /* a failed parse must leave *out NULL */
        return 0;
    }
    volatile uint8_t sink = 0;
    for (int i = 0; i < tg_st_count(f); i++) {
        const char *name = tg_st_name(f, i);
        const tg_tensor *t = tg_st_tensor(f, i);
        if (!name || !t || tg_st_find(f, name) != t) abort();
        const uint8_t *p = t->data;
        size_t bytes = (size_t)t->numel * tg_dtype_size(t->dtype);
        for (size_t k = 0; k < bytes; k++) sink ^= p[k];
    }
    for (int i = 0; i < tg_st_meta_count(f); i++) {
        const char *k = tg_st_meta_key(f, i), *v = tg_st_meta_value(f, i);
        if (!k || !v || !tg_st_meta_find(f, k)) abort();
        sink ^= (uint8_t)(strlen(k) + strlen(v));
    }
    (void)sink;
    tg_st_free(f);
    return 0;
}
