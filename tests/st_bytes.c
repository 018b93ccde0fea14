/*
 * st_bytes.c - see st_bytes.h.
 */
#include <stdio.h>
#include <string.h>

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

void tt_st_rewrite(const char *path, const char *tensor, double v, const char *key,
                   const char *value)
{
    tg_st_file *f = NULL;
    cr_assert_eq(tg_st_load(path, &f), TG_OK, "%s", tg_last_error());
    int n = tg_st_count(f), m = tg_st_meta_count(f);
    const char *names[512], *keys[256], *values[256];
    tg_tensor *ts[512];
    cr_assert(n <= 512 && m < 256, "%s: too many tensors or metadata entries", path);
    bool found = !tensor;
    for (int i = 0; i < n; i++) {
        names[i] = tg_st_name(f, i);
        cr_assert_not_null(ts[i] = tg_tensor_clone(tg_st_tensor(f, i)));
        if (tensor && !strcmp(names[i], tensor)) tg_tensor_set(ts[i], 0, v), found = true;
    }
    cr_assert(found, "%s: no tensor '%s'", path, tensor);
    bool put = !key;
    for (int i = 0; i < m; i++) {
        keys[i] = tg_st_meta_key(f, i), values[i] = tg_st_meta_value(f, i);
        if (key && !strcmp(keys[i], key)) values[i] = value, put = true;
    }
    if (!put) keys[m] = key, values[m++] = value;
    cr_assert_eq(tg_st_save(path, n, names, (const tg_tensor *const *)ts, m, keys, values), TG_OK,
                 "%s", tg_last_error());
    for (int i = 0; i < n; i++) tg_tensor_free(ts[i]);
    tg_st_free(f);
}

void tt_st_resave_meta(const char *src, const char *dst, const char *key, const char *value)
{
    tg_st_file *f;
    cr_assert_eq(tg_st_load(src, &f), TG_OK, "%s", tg_last_error());
    int n = tg_st_count(f), m = tg_st_meta_count(f);
    const char *names[64], *keys[64], *vals[64];
    const tg_tensor *ts[64];
    cr_assert(n <= 64 && m < 64);
    for (int i = 0; i < n; i++) names[i] = tg_st_name(f, i), ts[i] = tg_st_tensor(f, i);
    bool found = false;
    for (int i = 0; i < m; i++) {
        keys[i] = tg_st_meta_key(f, i);
        vals[i] = tg_st_meta_value(f, i);
        if (!strcmp(keys[i], key)) vals[i] = value, found = true;
    }
    if (!found) keys[m] = key, vals[m++] = value;
    cr_assert_eq(tg_st_save(dst, n, names, ts, m, keys, vals), TG_OK, "%s", tg_last_error());
    tg_st_free(f);
}
