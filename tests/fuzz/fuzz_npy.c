/*
 * fuzz_npy.c - libFuzzer target for the .npy reader (tg_npy_parse): the
 * whole input is the file. A parsed tensor is read end to end so a wrong
 * size shows up as an out-of-bounds read.
 */
#include "fuzz.h"
#include "tgraph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_tensor *t = NULL;
    if (tg_npy_parse(data, size, "fuzz.npy", &t) == TG_OK) {
        volatile uint8_t sink = 0;
        const uint8_t *p = t->data;
        size_t bytes = (size_t)t->numel * tg_dtype_size(t->dtype);
        for (size_t i = 0; i < bytes; i++) sink ^= p[i];
        (void)sink;
        tg_tensor_free(t);
    } else if (t) {
        abort();   /* a failed parse must leave *out NULL */
    }
    return 0;
}
