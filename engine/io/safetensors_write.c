/*
 * safetensors_write.c - writing safetensors files (OPS.md 17.4), the writer
 * half of tensor_io.h's safetensors API (the reader is safetensors.c).
 *
 * Like the reference writer: "__metadata__" first, then the tensors by dtype
 * alignment (descending) and name, offsets back to back from 0, the JSON
 * padded with spaces so the data starts at a multiple of 8. The file goes
 * through tg_write_atomic. Names must be unique, non-empty, valid UTF-8 and
 * not "__metadata__"; metadata keys must be unique.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json.h"
#include "tensor_io.h"

#define ST_MAX_HEADER 100000000ull          /* what readers accept */
#define ST_MAX_INT ((int64_t)1 << 48)       /* the schema's integer limit (exclusive) */

static bool host_le(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* For sorting without global state. */
typedef struct {
    const char *name;
    size_t      align;
    int         idx;
} named;

static int by_align_then_name(const void *a, const void *b)
{
    const named *x = a, *y = b;
    if (x->align != y->align) return x->align > y->align ? -1 : 1;
    return strcmp(x->name, y->name);
}

typedef struct {
    char  *s;
    size_t n, cap;
    bool   oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *ns = tg__realloc(b->s, cap);
        if (!ns) {
            b->oom = true;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* A JSON string literal. */
static void sb_json(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        char esc[8];
        if (*c == '"' || *c == '\\') {
            esc[0] = '\\', esc[1] = (char)*c;
            sb_put(b, esc, 2);
        } else if (*c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *c);
            sb_put(b, esc, 6);
        } else {
            sb_put(b, (const char *)c, 1);
        }
    }
    sb_put(b, "\"", 1);
}

static const char *const st_out_names[TG_DTYPE_COUNT] = {"F32", "F64", "I64", "BOOL"};

typedef struct {
    sbuf                     hdr;
    int                      n;
    const named             *order;
    const tg_tensor *const  *tensors;
} st_write_ctx;

static tg_status st_write(FILE *f, void *vctx)
{
    st_write_ctx *c = vctx;
    unsigned char size8[8];
    uint64_t n = c->hdr.n;
    for (int k = 0; k < 8; k++) size8[k] = (unsigned char)(n >> (8 * k));
    if (fwrite(size8, 1, 8, f) != 8 || fwrite(c->hdr.s, 1, c->hdr.n, f) != c->hdr.n)
        return tg_set_error(TG_ERR_IO, "safetensors: write failed: %s", strerror(errno));
    unsigned char chunk[4096];
    for (int i = 0; i < c->n; i++) {
        const tg_tensor *t = c->tensors[c->order[i].idx];
        size_t es = tg_dtype_size(t->dtype), bytes = (size_t)t->numel * es;
        if (host_le() || es == 1) {
            if (bytes && fwrite(t->data, 1, bytes, f) != bytes)
                return tg_set_error(TG_ERR_IO, "safetensors: write failed: %s", strerror(errno));
            continue;
        }
        const unsigned char *src = t->data;
        for (size_t at = 0; at < bytes; at += sizeof chunk) {
            size_t k = bytes - at < sizeof chunk ? bytes - at : sizeof chunk;
            for (size_t j = 0; j < k; j++) chunk[j] = src[at + (j / es) * es + es - 1 - j % es];
            if (fwrite(chunk, 1, k, f) != k)
                return tg_set_error(TG_ERR_IO, "safetensors: write failed: %s", strerror(errno));
        }
    }
    return TG_OK;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* NULL when the list of n strings has no repeat, else the repeated string. */
static const char *find_repeat(const char *const *s, int n, const char **scratch)
{
    for (int i = 0; i < n; i++) scratch[i] = s[i];
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_str_ptr);
    for (int i = 1; i < n; i++)
        if (!strcmp(scratch[i], scratch[i - 1])) return scratch[i];
    return NULL;
}

tg_status tg_st_save(const char *path, int n, const char *const *names,
                     const tg_tensor *const *tensors, int n_meta, const char *const *meta_keys,
                     const char *const *meta_values)
{
    const char *what = path ? path : "safetensors";
    if (!path || n < 0 || n_meta < 0 || (n && (!names || !tensors)) ||
        (n_meta && (!meta_keys || !meta_values)))
        return tg_set_error(TG_ERR_INVALID, "%s: bad arguments to tg_st_save", what);
    for (int i = 0; i < n; i++) {
        const tg_tensor *t = tensors[i];
        if (!names[i] || !*names[i])
            return tg_set_error(TG_ERR_INVALID, "%s: tensor %d has an empty name", what, i);
        if (!strcmp(names[i], "__metadata__"))
            return tg_set_error(TG_ERR_INVALID, "%s: '__metadata__' is reserved and cannot name a "
                                "tensor", what);
        if (tg__utf8_check(names[i], strlen(names[i])) != strlen(names[i]))
            return tg_set_error(TG_ERR_INVALID, "%s: tensor name %d is not valid UTF-8", what, i);
        tg_status bad = tg_tensor_check(t, "");
        if (bad) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tg_last_error() + 2);   /* after ": " */
            return tg_set_error(bad, "%s: tensor '%s': %s", what, names[i], msg);
        }
        for (int d = 0; d < t->rank; d++)
            if (t->shape[d] < 0 || t->shape[d] >= ST_MAX_INT)
                return tg_set_error(TG_ERR_INVALID, "%s: tensor '%s' has a dim outside [0, 2^48)",
                                    what, names[i]);
    }
    for (int i = 0; i < n_meta; i++)
        if (!meta_keys[i] || !meta_values[i] ||
            tg__utf8_check(meta_keys[i], strlen(meta_keys[i])) != strlen(meta_keys[i]) ||
            tg__utf8_check(meta_values[i], strlen(meta_values[i])) != strlen(meta_values[i]))
            return tg_set_error(TG_ERR_INVALID, "%s: metadata entry %d is NULL or not valid UTF-8",
                                what, i);
    int biggest = n > n_meta ? n : n_meta;
    const char **scratch = tg__malloc(((size_t)biggest + 1) * sizeof *scratch);
    named *order = tg__malloc(((size_t)n + 1) * sizeof *order);
    st_write_ctx c = {{0}, n, order, tensors};
    tg_status st = TG_OK;
    const char *rep;
    if (!scratch || !order) {
        st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    } else if ((rep = find_repeat(names, n, scratch))) {
        st = tg_set_error(TG_ERR_INVALID, "%s: duplicate tensor name '%s'", what, rep);
    } else if ((rep = find_repeat(meta_keys, n_meta, scratch))) {
        st = tg_set_error(TG_ERR_INVALID, "%s: duplicate metadata key '%s'", what, rep);
    }
    if (!st) {
        /* dtype alignment descending, then name (OPS.md 17.4) */
        for (int i = 0; i < n; i++)
            order[i] = (named){names[i], tg_dtype_size(tensors[i]->dtype), i};
        qsort(order, (size_t)n, sizeof *order, by_align_then_name);
        sb_str(&c.hdr, "{");
        if (n_meta) {
            sb_str(&c.hdr, "\"__metadata__\":{");
            for (int i = 0; i < n_meta; i++) {
                if (i) sb_str(&c.hdr, ",");
                sb_json(&c.hdr, meta_keys[i]);
                sb_str(&c.hdr, ":");
                sb_json(&c.hdr, meta_values[i]);
            }
            sb_str(&c.hdr, "}");
        }
        uint64_t off = 0;
        for (int i = 0; i < n; i++) {
            const tg_tensor *t = tensors[order[i].idx];
            char num[64];
            if (i || n_meta) sb_str(&c.hdr, ",");
            sb_json(&c.hdr, order[i].name);
            sb_str(&c.hdr, ":{\"dtype\":\"");
            sb_str(&c.hdr, st_out_names[t->dtype]);
            sb_str(&c.hdr, "\",\"shape\":[");
            for (int d = 0; d < t->rank; d++) {
                snprintf(num, sizeof num, d ? ",%lld" : "%lld", (long long)t->shape[d]);
                sb_str(&c.hdr, num);
            }
            uint64_t bytes = (uint64_t)t->numel * tg_dtype_size(t->dtype);
            snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                     (unsigned long long)(off + bytes));
            sb_str(&c.hdr, num);
            off += bytes;
        }
        sb_str(&c.hdr, "}");
        while (!c.hdr.oom && (8 + c.hdr.n) % 8) sb_str(&c.hdr, " ");
        if (c.hdr.oom) st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
        else if (c.hdr.n > ST_MAX_HEADER)
            st = tg_set_error(TG_ERR_LIMIT, "%s: the header would be larger than 100 MB", what);
    }
    if (!st) {
        st = tg_write_atomic(path, st_write, &c);
        if (st && !strstr(tg_last_error(), path)) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", tg_last_error());
            st = tg_set_error(st, "%s: %s", path, msg);
        }
    }
    tg__free(c.hdr.s);
    tg__free(scratch);
    tg__free(order);
    return st;
}
