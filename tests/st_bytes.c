/*
 * st_bytes.c - see st_bytes.h.
 */
#include <stdio.h>

#include "testutil.h"
#include "st_bytes.h"

void tt_st_path(char *buf, size_t n, const char *tag)
{
    snprintf(buf, n, "%s/%s.safetensors", tt_tmpdir(), tag);
}

void tt_st_write_bytes(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    if (len) cr_assert_eq(fwrite(b, 1, len, f), len);
    fclose(f);
}
