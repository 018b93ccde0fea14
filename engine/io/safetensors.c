/*
 * safetensors.c - reading safetensors files (OPS.md section 17): the parsed
 * file and its accessors, and the tensors built from a header that
 * safetensors_header.c has validated.
 *
 * Nothing is allocated for a tensor before the whole header is checked (the
 * sizes, every entry, the offsets and the file length). Only then are
 * tensors created and filled (converted to tgraph's dtypes). tg_st_load reads
 * the header first and the data straight from the file, so a huge file with
 * a bad header costs nothing and a good one is not held in memory twice. A
 * pipe or a device is read the same way, in order: the size field, the
 * header, then the tensors in offset order; the input limit (tensor_io.h) is
 * checked against the header size and then the data the header announces,
 * before either is read.
 *
 * Messages: "<file>: <problem> (<reference error name>)" where the reference
 * reader has a name for it. The writer is in safetensors_write.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "io_internal.h"
#include "json.h"
#include "st_internal.h"
#include "tensor_io.h"

#define ST_CHUNK (1u << 20)                 /* file reads during conversion */

/* ---- the parsed file ---- */

struct tg_st_file {
    int         n;
    char      **names;     /* sorted */
    tg_tensor **tensors;
    const char **file_dtypes;   /* the dtype tag in the file ("I32"), static strings */
    int         n_meta;
    char      **meta_keys, **meta_values;   /* file order */
};

void tg_st_free(tg_st_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->n; i++) {
        tg__free(f->names ? f->names[i] : NULL);
        tg_tensor_free(f->tensors ? f->tensors[i] : NULL);
    }
    for (int i = 0; i < f->n_meta; i++) {
        tg__free(f->meta_keys[i]);
        tg__free(f->meta_values[i]);
    }
    tg__free(f->names);
    tg__free(f->tensors);
    tg__free(f->file_dtypes);
    tg__free(f->meta_keys);
    tg__free(f->meta_values);
    tg__free(f);
}

int tg_st_count(const tg_st_file *f) { return f ? f->n : 0; }
const char *tg_st_name(const tg_st_file *f, int i)
{
    TG__NONNULL(f, NULL);
    return f && i >= 0 && i < f->n ? f->names[i] : NULL;
}
const tg_tensor *tg_st_tensor(const tg_st_file *f, int i)
{
    TG__NONNULL(f, NULL);
    return f && i >= 0 && i < f->n ? f->tensors[i] : NULL;
}
const tg_tensor *tg_st_find(const tg_st_file *f, const char *name)
{
    TG__NONNULL(f, NULL);
    TG__NONNULL(name, NULL);
    if (!f || !name) return NULL;
    int lo = 0, hi = f->n - 1;   /* names are sorted: binary search */
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(f->names[mid], name);
        if (!c) return f->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}
const char *tg__st_file_dtype(const tg_st_file *f, int i)
{
    return f && i >= 0 && i < f->n ? f->file_dtypes[i] : NULL;
}
int tg_st_meta_count(const tg_st_file *f) { return f ? f->n_meta : 0; }
const char *tg_st_meta_key(const tg_st_file *f, int i)
{
    TG__NONNULL(f, NULL);
    return f && i >= 0 && i < f->n_meta ? f->meta_keys[i] : NULL;
}
const char *tg_st_meta_value(const tg_st_file *f, int i)
{
    TG__NONNULL(f, NULL);
    return f && i >= 0 && i < f->n_meta ? f->meta_values[i] : NULL;
}
const char *tg_st_meta_find(const tg_st_file *f, const char *key)
{
    TG__NONNULL(f, NULL);
    TG__NONNULL(key, NULL);
    if (!f || !key) return NULL;
    for (int i = 0; i < f->n_meta; i++)
        if (!strcmp(f->meta_keys[i], key)) return f->meta_values[i];
    return NULL;
}

/* ---- conversion ---- */

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
    if (e == 0x1f) {
        bits = sign | 0x7f800000u | (m << 13);          /* inf / nan */
    } else if (e) {
        bits = sign | ((e + 112) << 23) | (m << 13);    /* normal: rebias 15 -> 127 */
    } else if (!m) {
        bits = sign;                                     /* +-0 */
    } else {
        int shift = 0;                                   /* subnormal: normalise */
        while (!(m & 0x400)) m <<= 1, shift++;
        bits = sign | ((uint32_t)(113 - shift) << 23) | ((m & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint64_t le_bytes(const unsigned char *p, unsigned size)
{
    uint64_t v = 0;
    for (unsigned k = size; k-- > 0;) v = (v << 8) | p[k];
    return v;
}

static bool host_le(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* Convert `count` elements of file dtype dt from raw into t starting at element at. */
static tg_status convert(const char *what, const char *name, int dt, const unsigned char *raw,
                         size_t count, tg_tensor *t, size_t at)
{
    unsigned size = tg__st_dtypes[dt].size;
    int conv = tg__st_dtypes[dt].conv;
    if (conv == ST_KEEP) {
        unsigned char *dst = (unsigned char *)t->data + at * size;
        if (host_le() || size == 1) {
            memcpy(dst, raw, count * size);
        } else {
            for (size_t i = 0; i < count; i++)
                for (unsigned k = 0; k < size; k++) dst[i * size + k] = raw[i * size + size - 1 - k];
        }
        if (t->dtype == TG_BOOL)
            for (size_t i = 0; i < count; i++)
                if (dst[i] > 1)
                    return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': bool element %zu has "
                                        "value %u (not 0 or 1)", what, name, at + i, dst[i]);
        return TG_OK;
    }
    for (size_t i = 0; i < count; i++) {
        uint64_t u = le_bytes(raw + i * size, size);
        if (conv == ST_F16) {
            ((float *)t->data)[at + i] = half_to_float((uint16_t)u);
        } else if (conv == ST_BF16) {
            uint32_t bits = (uint32_t)u << 16;
            memcpy((float *)t->data + at + i, &bits, 4);
        } else {
            int64_t v = (int64_t)u;
            if (conv == ST_SINT && size < 8 && (u >> (size * 8 - 1)))
                v = (int64_t)(u | (~(uint64_t)0 << (size * 8)));   /* sign-extend */
            ((int64_t *)t->data)[at + i] = v;
        }
    }
    return TG_OK;
}

/* Where the data comes from: memory, or a file at a base offset. */
typedef struct {
    const unsigned char *mem;
    FILE                *f;
    uint64_t             base;   /* file offset of the byte buffer */
    unsigned char       *chunk;  /* ST_CHUNK bytes, file only */
    bool                 stream; /* a pipe: read in offset order, no seeking */
} st_source;

static tg_status fill(const char *what, const st_entry *e, const st_source *src, tg_tensor *t)
{
    char name[96];
    tg__st_nm(e->name, name, sizeof name);
    size_t count = (size_t)t->numel, es = tg__st_dtypes[e->dt].size;
    if (src->mem) return convert(what, name, e->dt, src->mem + e->begin, count, t, 0);
    if (!count) return TG_OK;
    /* a stream is already there: the tensors are read in offset order and
     * lie back to back from 0 (plan_header checked) */
    if (!src->stream && fseeko(src->f, (off_t)(src->base + e->begin), SEEK_SET) != 0)
        return tg_set_error(TG_ERR_IO, "%s: cannot seek to tensor '%s': %s", what, name,
                            strerror(errno));
    size_t per = ST_CHUNK / es;
    for (size_t at = 0; at < count; at += per) {
        size_t k = count - at < per ? count - at : per;
        if (fread(src->chunk, es, k, src->f) != k)
            return tg_set_error(TG_ERR_IO, "%s: unexpected end of file reading tensor '%s' (%s)",
                                what, name, src->stream ? "the stream ended before the data the "
                                "header announces (MetadataIncompleteBuffer)"
                                : "was the file changed while reading?");
        tg_status st = convert(what, name, e->dt, src->chunk, k, t, at);
        if (st) return st;
    }
    return TG_OK;
}

/* For sorting names without global state. */
typedef struct {
    const char *name;
    int         idx;
} named;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

static tg_status build(st_plan *p, const st_source *src, tg_st_file **out)
{
    const char *what = p->what;
    tg_st_file *f = tg__calloc(1, sizeof *f);
    if (!f) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    /* file order of the data is the offset order: read in that order, then sort */
    f->names = tg__calloc((size_t)p->n + 1, sizeof *f->names);
    f->tensors = tg__calloc((size_t)p->n + 1, sizeof *f->tensors);
    int nm_ = p->meta ? p->meta->n : 0;
    f->meta_keys = tg__calloc((size_t)nm_ + 1, sizeof *f->meta_keys);
    f->meta_values = tg__calloc((size_t)nm_ + 1, sizeof *f->meta_values);
    if (!f->names || !f->tensors || !f->meta_keys || !f->meta_values) {
        tg_st_free(f);
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    }
    tg_status st = TG_OK;
    for (; f->n_meta < nm_; f->n_meta++) {
        f->meta_keys[f->n_meta] = tg__strdup(tg__json_key(p->meta, f->n_meta)->str);
        f->meta_values[f->n_meta] = tg__strdup(tg__json_value(p->meta, f->n_meta)->str);
        if (!f->meta_keys[f->n_meta] || !f->meta_values[f->n_meta]) {
            f->n_meta++;
            st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
            break;
        }
    }
    for (int i = 0; !st && i < p->n; i++) {
        const st_entry *e = &p->e[i];
        f->n = i + 1;
        f->names[i] = tg__strdup(e->name->str);
        f->tensors[i] = tg_tensor_new(tg__st_dtypes[e->dt].to, e->rank, e->shape);
        if (!f->names[i] || !f->tensors[i]) {
            char name[96];
            st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory for tensor '%s'", what,
                              tg__st_nm(e->name, name, sizeof name));
            break;
        }
        st = fill(what, e, src, f->tensors[i]);
    }
    if (st) {
        tg_st_free(f);
        return st;
    }
    /* sort names and tensors together by name */
    named *order = tg__malloc(((size_t)p->n + 1) * sizeof *order);
    char **names = tg__malloc(((size_t)p->n + 1) * sizeof *names);
    tg_tensor **ts = tg__malloc(((size_t)p->n + 1) * sizeof *ts);
    const char **fd = tg__malloc(((size_t)p->n + 1) * sizeof *fd);
    if (!order || !names || !ts || !fd) {
        tg__free(order), tg__free(names), tg__free(ts), tg__free(fd);
        tg_st_free(f);
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    }
    for (int i = 0; i < p->n; i++) order[i] = (named){f->names[i], i};
    qsort(order, (size_t)p->n, sizeof *order, by_name);
    for (int i = 0; i < p->n; i++) {
        names[i] = f->names[order[i].idx];
        ts[i] = f->tensors[order[i].idx];
        fd[i] = tg__st_dtypes[p->e[order[i].idx].dt].name;
    }
    tg__free(order);
    tg__free(f->names);
    tg__free(f->tensors);
    f->names = names;
    f->tensors = ts;
    f->file_dtypes = fd;
    *out = f;
    return TG_OK;
}

tg_status tg_st_parse(const void *buf, size_t len, const char *what, tg_st_file **out)
{
    const unsigned char *b = buf;
    uint64_t n = 0;
    if (!out) return tg_set_error(TG_ERR_INVALID, "tg_st_parse: out is NULL");
    *out = NULL;
    if (!what) what = "safetensors";
    if (!buf && len) return tg_set_error(TG_ERR_INVALID, "%s: buffer is NULL", what);
    tg_status st = tg__st_check_sizes(what, len, b, &n);
    if (st) return st;
    st_plan p = {.what = what};
    st = tg__st_plan_header(&p, (const char *)b + 8, (size_t)n, len - 8 - n);
    if (!st) {
        st_source src = {b + 8 + n, NULL, 0, NULL, false};
        st = build(&p, &src, out);
    }
    tg__st_plan_free(&p);
    return st;
}

tg_status tg_st_load(const char *path, tg_st_file **out)
{
    if (!out) return tg_set_error(TG_ERR_INVALID, "tg_st_load: out is NULL");
    *out = NULL;
    if (!path) return tg_set_error(TG_ERR_INVALID, "safetensors: path is NULL");
    FILE *f;
    uint64_t len, n = 0;
    bool stream;
    size_t cap;
    tg_status st = tg__input_cap(TG_MAX_INPUT_DEFAULT, &cap);
    if (!st) st = tg__open_for_load(path, &f, &len, &stream);
    if (st) return st;
    /* the 8-byte header size first, checked before the header is read: a
     * stream of garbage (/dev/zero) stops here */
    unsigned char first8[8] = {0};
    size_t got = fread(first8, 1, 8, f);
    if (stream) len = ST_UNKNOWN_LEN;
    st = tg__st_check_sizes(path, got < 8 ? got : len, first8, &n);
    if (!st && 8 + n > cap) st = tg__over_cap(path, "header", 8 + n, cap);
    if (st) {
        fclose(f);
        return st;
    }
    st_plan p = {.what = path};
    char *hdr = tg__malloc((size_t)n);   /* n <= 100 MB, the limit, and the file's length */
    if (!hdr) st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory for the header", path);
    else if (fread(hdr, 1, (size_t)n, f) != n)
        st = tg_set_error(TG_ERR_IO, "%s: cannot read the header (%llu bytes)%s", path,
                          (unsigned long long)n, stream ? ": the stream ended" : "");
    if (!st) st = tg__st_plan_header(&p, hdr, (size_t)n, stream ? ST_UNKNOWN_LEN : len - 8 - n);
    tg__free(hdr);
    if (!st && 8 + n + p.data_end > cap)
        st = tg__over_cap(path, "file (header and tensors)", 8 + n + p.data_end, cap);
    if (!st) {
        st_source src = {NULL, f, 8 + n, tg__malloc(ST_CHUNK), stream};
        if (!src.chunk) st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
        else st = build(&p, &src, out);
        tg__free(src.chunk);
    }
    /* a stream must end with the last tensor, as a file must */
    if (!st && stream && fgetc(f) != EOF) {
        tg_st_free(*out);
        *out = NULL;
        st = tg_set_error(TG_ERR_FORMAT, "%s: trailing bytes after the last tensor (the tensors "
                          "cover %llu bytes of data, the stream goes on) "
                          "(MetadataIncompleteBuffer)", path, (unsigned long long)p.data_end);
    }
    tg__st_plan_free(&p);
    fclose(f);
    return st;
}
