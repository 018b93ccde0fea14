/*
 * safetensors.c - reading and writing safetensors files (OPS.md section 17).
 *
 * Reading validates everything the reference reader does (17.2), and more
 * (duplicate names, extra fields, 48-bit integers), before it allocates any
 * tensor: the 8-byte size, the header (<= 100 MB, inside the file, UTF-8,
 * strict JSON), every entry, the offsets (sorted, from 0, back to back) and
 * the file length (exactly 8 + N + last END). Only then are tensors created
 * and filled (converted to tgraph's dtypes). tg_st_load reads the header
 * first and the data straight from the file, so a huge file with a bad
 * header costs nothing and a good one is not held in memory twice. A pipe
 * or a device is read the same way, in order: the size field, the header,
 * then the tensors in offset order; the input limit (tensor_io.h) is
 * checked against the header size and then the data the header announces,
 * before either is read.
 *
 * Messages: "<file>: <problem> (<reference error name>)" where the reference
 * reader has a name for it. The writer is in safetensors_write.c.
 *
 * Decided here: extra fields in a tensor entry are rejected (the schema's
 * additionalProperties: false); "__metadata__": null is rejected (not an
 * object); names containing NUL are rejected; known dtypes tgraph cannot
 * convert (U64, C64, F8_*, F6_*, F4) are rejected by name.
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

#define ST_MAX_HEADER 100000000ull          /* the reference reader's limit */
#define ST_MAX_INT ((int64_t)1 << 48)       /* the schema's integer limit (exclusive) */
#define ST_CHUNK (1u << 20)                 /* file reads during conversion */
#define ST_UNKNOWN_LEN UINT64_MAX           /* a stream's length */

/* ---- dtypes ---- */

enum { ST_KEEP, ST_F16, ST_BF16, ST_SINT, ST_UINT, ST_NONE };

static const struct {
    const char *name;
    unsigned    size;   /* bytes per element (0: sub-byte) */
    int         conv;   /* how it becomes a tgraph dtype */
    tg_dtype    to;
} st_dtypes[] = {
    {"F32", 4, ST_KEEP, TG_F32},  {"F64", 8, ST_KEEP, TG_F64},   {"I64", 8, ST_KEEP, TG_I64},
    {"BOOL", 1, ST_KEEP, TG_BOOL}, {"F16", 2, ST_F16, TG_F32},   {"BF16", 2, ST_BF16, TG_F32},
    {"I8", 1, ST_SINT, TG_I64},   {"I16", 2, ST_SINT, TG_I64},   {"I32", 4, ST_SINT, TG_I64},
    {"U8", 1, ST_UINT, TG_I64},   {"U16", 2, ST_UINT, TG_I64},   {"U32", 4, ST_UINT, TG_I64},
    {"U64", 8, ST_NONE, TG_I64},  {"C64", 8, ST_NONE, TG_F32},   {"F8_E5M2", 1, ST_NONE, TG_F32},
    {"F8_E4M3", 1, ST_NONE, TG_F32}, {"F8_E8M0", 1, ST_NONE, TG_F32},
    {"F8_E4M3FNUZ", 1, ST_NONE, TG_F32}, {"F8_E5M2FNUZ", 1, ST_NONE, TG_F32},
    {"F4", 0, ST_NONE, TG_F32},   {"F6_E2M3", 0, ST_NONE, TG_F32}, {"F6_E3M2", 0, ST_NONE, TG_F32},
};
#define ST_NDTYPES ((int)(sizeof st_dtypes / sizeof st_dtypes[0]))

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

/* ---- header validation ---- */

typedef struct {
    const tg__json *name;   /* key node: str, len */
    int      dt;            /* index into st_dtypes */
    int      rank;
    int64_t  shape[TG_MAX_RANK];
    uint64_t begin, end;
} st_entry;

typedef struct {
    const char     *what;
    tg__json_doc    doc;
    st_entry       *e;
    int             n;
    const tg__json *meta;   /* the __metadata__ object or NULL */
    uint64_t        data_end;   /* bytes of data the tensors cover */
} st_plan;

static void plan_free(st_plan *p)
{
    tg__free(p->e);
    tg__json_free(&p->doc);
}

static const char *nm(const tg__json *name, char *buf, size_t n)
{
    return tg__json_excerpt(name->str, name->len, buf, n);
}

/* A non-negative integer below 2^48 from JSON; `field` like "shape[1]".
 * hdr is the header text, to quote the number as written. */
static tg_status st_uint(const char *what, const char *hdr, size_t hlen, const char *name,
                         const char *field, const tg__json *v, int64_t *out)
{
    if (v->kind != TG__JSON_NUMBER)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': %s is not an integer (got %s) "
                            "(InvalidHeaderDeserialization)", what, name, field,
                            tg__json_kind_name(v->kind));
    size_t n = 0;
    bool frac = false;
    while (v->pos + n < hlen && hdr[v->pos + n] && strchr("0123456789+-.eE", hdr[v->pos + n])) {
        frac |= strchr(".eE", hdr[v->pos + n]) != NULL;
        n++;
    }
    int shown = n > 40 ? 40 : (int)n;
    const char *more = n > 40 ? "..." : "";
    if (v->num < 0 || (v->is_int && v->i < 0))
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': %s = %.*s%s is negative "
                            "(InvalidHeaderDeserialization)", what, name, field, shown,
                            hdr + v->pos, more);
    if (frac)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': %s = %.*s%s is not an integer "
                            "(InvalidHeaderDeserialization)", what, name, field, shown,
                            hdr + v->pos, more);
    if (!v->is_int || v->i >= ST_MAX_INT)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': %s = %.*s%s is not below 2^48 (the "
                            "format's integer limit) (InvalidHeaderDeserialization)", what, name,
                            field, shown, hdr + v->pos, more);
    *out = v->i;
    return TG_OK;
}

static tg_status parse_entry(const char *what, const char *hdr, size_t hlen,
                             const tg__json *key, const tg__json *v, st_entry *e)
{
    char name[96];
    nm(key, name, sizeof name);
    e->name = key;
    if (memchr(key->str, '\0', key->len))
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor name '%s' contains a NUL character", what,
                            name);
    if (v->kind != TG__JSON_OBJECT)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': expected an object with dtype, shape "
                            "and data_offsets, got %s (InvalidHeaderDeserialization)", what, name,
                            tg__json_kind_name(v->kind));
    if (v->dup >= 0) {
        char f[64];
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': duplicate field '%s'", what, name,
                            nm(tg__json_key(v, v->dup), f, sizeof f));
    }
    const tg__json *dtype = NULL, *shape = NULL, *offs = NULL;
    for (int k = 0; k < v->n; k++) {
        const tg__json *fk = tg__json_key(v, k), *fv = tg__json_value(v, k);
        if (tg__json_streq(fk, "dtype")) dtype = fv;
        else if (tg__json_streq(fk, "shape")) shape = fv;
        else if (tg__json_streq(fk, "data_offsets")) offs = fv;
        else {
            char f[64];
            return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': unexpected field '%s' (an entry "
                                "has only dtype, shape and data_offsets)", what, name,
                                nm(fk, f, sizeof f));
        }
    }
    const char *missing = !dtype ? "dtype" : !shape ? "shape" : !offs ? "data_offsets" : NULL;
    if (missing)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': missing field '%s' "
                            "(InvalidHeaderDeserialization)", what, name, missing);
    /* dtype */
    if (dtype->kind != TG__JSON_STRING)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': dtype is not a string (got %s) "
                            "(InvalidHeaderDeserialization)", what, name,
                            tg__json_kind_name(dtype->kind));
    e->dt = -1;
    for (int d = 0; d < ST_NDTYPES; d++)
        if (tg__json_streq(dtype, st_dtypes[d].name)) e->dt = d;
    if (e->dt < 0) {
        char dn[64];
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s' "
                            "(InvalidHeaderDeserialization)", what, name,
                            nm(dtype, dn, sizeof dn));
    }
    /* shape */
    if (shape->kind != TG__JSON_ARRAY)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': shape is not an array of integers "
                            "(got %s) (InvalidHeaderDeserialization)", what, name,
                            tg__json_kind_name(shape->kind));
    for (int d = 0; d < shape->n; d++) {
        char field[32];
        int64_t dim;
        snprintf(field, sizeof field, "shape[%d]", d);
        tg_status st = st_uint(what, hdr, hlen, name, field, tg__json_at(shape, d), &dim);
        if (st) return st;
        if (d < TG_MAX_RANK) e->shape[d] = dim;
    }
    if (shape->n > TG_MAX_RANK)
        return tg_set_error(TG_ERR_LIMIT, "%s: tensor '%s': rank %d is more than tgraph's maximum "
                            "rank %d", what, name, shape->n, TG_MAX_RANK);
    e->rank = shape->n;
    /* data_offsets */
    if (offs->kind != TG__JSON_ARRAY || offs->n != 2) {
        char got[48];
        if (offs->kind == TG__JSON_ARRAY) snprintf(got, sizeof got, "an array of %d", offs->n);
        else snprintf(got, sizeof got, "%s", tg__json_kind_name(offs->kind));
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets must be [BEGIN, END] "
                            "(two non-negative integers), got %s (InvalidHeaderDeserialization)",
                            what, name, got);
    }
    int64_t b, en;
    tg_status st = st_uint(what, hdr, hlen, name, "data_offsets[0]", tg__json_at(offs, 0), &b);
    if (!st) st = st_uint(what, hdr, hlen, name, "data_offsets[1]", tg__json_at(offs, 1), &en);
    if (st) return st;
    e->begin = (uint64_t)b;
    e->end = (uint64_t)en;
    if (en < b)
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] end before "
                            "they begin (InvalidOffset)", what, name, (long long)b, (long long)en);
    /* a dtype tgraph reads? (after the structure, before the sizes: sub-byte
     * dtypes have no byte size) */
    if (st_dtypes[e->dt].conv == ST_NONE)
        return tg_set_error(TG_ERR_DTYPE, "%s: tensor '%s': dtype %s is not supported by tgraph "
                            "(it reads F32, F64, F16, BF16, I64, I32, I16, I8, U32, U16, U8 and "
                            "BOOL)", what, name, st_dtypes[e->dt].name);
    /* size = prod(shape) * size(dtype), checked */
    int64_t numel = 1;
    size_t bytes;
    for (int d = 0; d < e->rank; d++)
        if (!tg__mul_overflow_i64(numel, e->shape[d], &numel))
            return tg_set_error(TG_ERR_LIMIT, "%s: tensor '%s': the element count of its shape "
                                "overflows (ValidationOverflow)", what, name);
    if (!tg__mul_overflow_size((size_t)numel, st_dtypes[e->dt].size, &bytes) ||
        !tg__mul_overflow_size((size_t)numel, 16, &(size_t){0}))
        return tg_set_error(TG_ERR_LIMIT, "%s: tensor '%s': its size in bytes overflows "
                            "(ValidationOverflow)", what, name);
    if ((uint64_t)bytes != e->end - e->begin) {
        char sh[160];
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] hold %lld "
                            "bytes, but shape %s of %s needs %zu (TensorInvalidInfo)", what, name,
                            (long long)b, (long long)en, (long long)(en - b),
                            tg_shape_str(e->rank, e->shape, sh, sizeof sh),
                            st_dtypes[e->dt].name, bytes);
    }
    return TG_OK;
}

static tg_status parse_meta(const char *what, const tg__json *m)
{
    if (m->kind != TG__JSON_OBJECT)
        return tg_set_error(TG_ERR_FORMAT, "%s: __metadata__ is not an object (got %s) "
                            "(InvalidHeaderDeserialization)", what, tg__json_kind_name(m->kind));
    if (m->dup >= 0) {
        char k[64];
        return tg_set_error(TG_ERR_FORMAT, "%s: __metadata__: duplicate key '%s'", what,
                            nm(tg__json_key(m, m->dup), k, sizeof k));
    }
    const tg__json *offs = tg__json_get(m, "data_offsets");
    if (offs && offs->kind != TG__JSON_STRING)
        return tg_set_error(TG_ERR_FORMAT, "%s: '__metadata__' is reserved for metadata and "
                            "cannot name a tensor (InvalidHeaderDeserialization)", what);
    for (int k = 0; k < m->n; k++) {
        const tg__json *key = tg__json_key(m, k), *val = tg__json_value(m, k);
        char kb[64];
        if (val->kind != TG__JSON_STRING)
            return tg_set_error(TG_ERR_FORMAT, "%s: __metadata__ value of '%s' is not a string "
                                "(got %s) (InvalidHeaderDeserialization)", what,
                                nm(key, kb, sizeof kb), tg__json_kind_name(val->kind));
        if (memchr(key->str, '\0', key->len) || memchr(val->str, '\0', val->len))
            return tg_set_error(TG_ERR_FORMAT, "%s: __metadata__ entry '%s' contains a NUL "
                                "character", what, nm(key, kb, sizeof kb));
    }
    return TG_OK;
}

static int entry_by_offset(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

/* The checks on the first 8 bytes: file length len, header size n. */
static tg_status check_sizes(const char *what, uint64_t len, const unsigned char *first8,
                             uint64_t *hsize)
{
    if (len == 0)
        return tg_set_error(TG_ERR_FORMAT, "%s: the file is empty (a safetensors file starts with "
                            "an 8-byte header size) (HeaderTooSmall)", what);
    if (len < 8)
        return tg_set_error(TG_ERR_FORMAT, "%s: the file is %llu bytes long, too short for the "
                            "8-byte header size (HeaderTooSmall)", what, (unsigned long long)len);
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = (n << 8) | first8[k];
    if (n > ST_MAX_HEADER)
        return tg_set_error(TG_ERR_LIMIT, "%s: header size %llu is larger than the limit of %llu "
                            "bytes (HeaderTooLarge)", what, (unsigned long long)n, ST_MAX_HEADER);
    if (n == 0)
        return tg_set_error(TG_ERR_FORMAT, "%s: header size is 0 (the header must be a JSON "
                            "object) (InvalidHeaderLength)", what);
    if (n > len - 8)
        return tg_set_error(TG_ERR_FORMAT, "%s: header size %llu points past the end of the file "
                            "(%llu bytes after the size field) (InvalidHeaderLength)", what,
                            (unsigned long long)n, (unsigned long long)(len - 8));
    *hsize = n;
    return TG_OK;
}

/* Validate header bytes hdr[0..n); data_len = bytes after the header
 * (ST_UNKNOWN_LEN from a stream: checked while reading). */
static tg_status plan_header(st_plan *p, const char *hdr, size_t n, uint64_t data_len)
{
    const char *what = p->what;
    size_t bad = tg__utf8_check(hdr, n);
    if (bad != n)
        return tg_set_error(TG_ERR_FORMAT, "%s: header is not valid UTF-8 (byte 0x%02x at offset "
                            "%zu of the header) (InvalidHeader)", what, (unsigned char)hdr[bad],
                            bad);
    char jwhat[600];
    snprintf(jwhat, sizeof jwhat, "%s: header", what);
    /* depth: a valid header nests 3 deep; values: 4M (~400k tensors, <= 256 MB of nodes) */
    tg__json_opts o = {.max_depth = 16, .max_values = (size_t)1 << 22};
    tg_status st = tg__json_parse(hdr, n, jwhat, &o, &p->doc);
    if (st) {
        if (st == TG_ERR_NOMEM) return st;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s (InvalidHeaderDeserialization)", tg_last_error());
        return tg_set_error(st, "%s", msg);
    }
    const tg__json *root = p->doc.root;
    if (root->kind != TG__JSON_OBJECT)
        return tg_set_error(TG_ERR_FORMAT, "%s: header is not a JSON object (got %s) "
                            "(InvalidHeaderDeserialization)", what, tg__json_kind_name(root->kind));
    if (root->dup >= 0) {
        const tg__json *k = tg__json_key(root, root->dup);
        char name[96];
        if (tg__json_streq(k, "__metadata__"))
            return tg_set_error(TG_ERR_FORMAT, "%s: duplicate '__metadata__' entry in the header",
                                what);
        return tg_set_error(TG_ERR_FORMAT, "%s: duplicate tensor name '%s' in the header", what,
                            nm(k, name, sizeof name));
    }
    p->e = tg__calloc((size_t)root->n + 1, sizeof *p->e);
    if (!p->e) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    for (int k = 0; k < root->n; k++) {
        const tg__json *key = tg__json_key(root, k), *val = tg__json_value(root, k);
        if (tg__json_streq(key, "__metadata__")) {
            if ((st = parse_meta(what, val))) return st;
            p->meta = val;
            continue;
        }
        if ((st = parse_entry(what, hdr, n, key, val, &p->e[p->n]))) return st;
        p->n++;
    }
    /* offsets: sorted, from 0, back to back (InvalidOffset) */
    qsort(p->e, (size_t)p->n, sizeof *p->e, entry_by_offset);
    uint64_t at = 0;
    for (int i = 0; i < p->n; i++) {
        const st_entry *e = &p->e[i];
        char name[96], prev[96];
        if (e->begin == at) {
            at = e->end;
            continue;
        }
        nm(e->name, name, sizeof name);
        if (i == 0)
            return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu]: the "
                                "first tensor must start at 0 (InvalidOffset)", what, name,
                                (unsigned long long)e->begin, (unsigned long long)e->end);
        nm(p->e[i - 1].name, prev, sizeof prev);
        if (e->begin > at)
            return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] leave a "
                                "gap after tensor '%s', which ends at %llu (InvalidOffset)", what,
                                name, (unsigned long long)e->begin, (unsigned long long)e->end,
                                prev, (unsigned long long)at);
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] overlap "
                            "tensor '%s', which ends at %llu (InvalidOffset)", what, name,
                            (unsigned long long)e->begin, (unsigned long long)e->end, prev,
                            (unsigned long long)at);
    }
    /* the byte buffer must be indexed entirely (MetadataIncompleteBuffer) */
    p->data_end = at;
    if (data_len == ST_UNKNOWN_LEN) return TG_OK;
    if (at > data_len)
        return tg_set_error(TG_ERR_FORMAT, "%s: the file is truncated: the tensors need %llu bytes "
                            "of data, the file has %llu (MetadataIncompleteBuffer)", what,
                            (unsigned long long)at, (unsigned long long)data_len);
    if (at < data_len)
        return tg_set_error(TG_ERR_FORMAT, "%s: %llu trailing bytes after the last tensor (the "
                            "data is %llu bytes, the tensors cover %llu) "
                            "(MetadataIncompleteBuffer)", what,
                            (unsigned long long)(data_len - at), (unsigned long long)data_len,
                            (unsigned long long)at);
    return TG_OK;
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
    unsigned size = st_dtypes[dt].size;
    int conv = st_dtypes[dt].conv;
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
    nm(e->name, name, sizeof name);
    size_t count = (size_t)t->numel, es = st_dtypes[e->dt].size;
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
        f->tensors[i] = tg_tensor_new(st_dtypes[e->dt].to, e->rank, e->shape);
        if (!f->names[i] || !f->tensors[i]) {
            char name[96];
            st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory for tensor '%s'", what,
                              nm(e->name, name, sizeof name));
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
        fd[i] = st_dtypes[p->e[order[i].idx].dt].name;
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
    tg_status st = check_sizes(what, len, b, &n);
    if (st) return st;
    st_plan p = {.what = what};
    st = plan_header(&p, (const char *)b + 8, (size_t)n, len - 8 - n);
    if (!st) {
        st_source src = {b + 8 + n, NULL, 0, NULL, false};
        st = build(&p, &src, out);
    }
    plan_free(&p);
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
    st = check_sizes(path, got < 8 ? got : len, first8, &n);
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
    if (!st) st = plan_header(&p, hdr, (size_t)n, stream ? ST_UNKNOWN_LEN : len - 8 - n);
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
    plan_free(&p);
    fclose(f);
    return st;
}
