/*
 * safetensors_header.c - validating a safetensors header (OPS.md 17.2): the
 * first half of reading a file; safetensors.c builds the tensors from what
 * this checks.
 *
 * It checks everything the reference reader does, and more (duplicate names,
 * extra fields, 48-bit integers), before any tensor is allocated: the 8-byte
 * size, the header (<= 100 MB, inside the file, UTF-8, strict JSON), every
 * entry, the offsets (sorted, from 0, back to back) and the file length
 * (exactly 8 + N + last END). What it hands on is an st_plan: each entry's
 * dtype, shape and offsets, and the metadata.
 *
 * Messages: "<file>: <problem> (<reference error name>)" where the reference
 * reader has a name for it.
 *
 * Decided here: extra fields in a tensor entry are rejected (the schema's
 * additionalProperties: false); "__metadata__": null is rejected (not an
 * object); names containing NUL are rejected; known dtypes tgraph cannot
 * convert (U64, C64, F8_*, F6_*, F4) are rejected by name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json.h"
#include "st_internal.h"

#define ST_MAX_HEADER 100000000ull          /* the reference reader's limit */
#define ST_MAX_INT ((int64_t)1 << 48)       /* the schema's integer limit (exclusive) */

/* ---- dtypes ---- */

const st_dtype tg__st_dtypes[] = {
    {"F32", 4, ST_KEEP, TG_F32},  {"F64", 8, ST_KEEP, TG_F64},   {"I64", 8, ST_KEEP, TG_I64},
    {"BOOL", 1, ST_KEEP, TG_BOOL}, {"F16", 2, ST_F16, TG_F32},   {"BF16", 2, ST_BF16, TG_F32},
    {"I8", 1, ST_SINT, TG_I64},   {"I16", 2, ST_SINT, TG_I64},   {"I32", 4, ST_SINT, TG_I64},
    {"U8", 1, ST_UINT, TG_I64},   {"U16", 2, ST_UINT, TG_I64},   {"U32", 4, ST_UINT, TG_I64},
    {"U64", 8, ST_NONE, TG_I64},  {"C64", 8, ST_NONE, TG_F32},   {"F8_E5M2", 1, ST_NONE, TG_F32},
    {"F8_E4M3", 1, ST_NONE, TG_F32}, {"F8_E8M0", 1, ST_NONE, TG_F32},
    {"F8_E4M3FNUZ", 1, ST_NONE, TG_F32}, {"F8_E5M2FNUZ", 1, ST_NONE, TG_F32},
    {"F4", 0, ST_NONE, TG_F32},   {"F6_E2M3", 0, ST_NONE, TG_F32}, {"F6_E3M2", 0, ST_NONE, TG_F32},
};
#define ST_NDTYPES ((int)(sizeof tg__st_dtypes / sizeof tg__st_dtypes[0]))

/* ---- header validation ---- */

void tg__st_plan_free(st_plan *p)
{
    tg__free(p->e);
    tg__json_free(&p->doc);
}

const char *tg__st_nm(const tg__json *name, char *buf, size_t n)
{
    return tg__escape(name->str, name->len, buf, n);
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
    tg__st_nm(key, name, sizeof name);
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
                            tg__st_nm(tg__json_key(v, v->dup), f, sizeof f));
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
                                tg__st_nm(fk, f, sizeof f));
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
        if (tg__json_streq(dtype, tg__st_dtypes[d].name)) e->dt = d;
    if (e->dt < 0) {
        char dn[64];
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s' "
                            "(InvalidHeaderDeserialization)", what, name,
                            tg__st_nm(dtype, dn, sizeof dn));
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
    if (tg__st_dtypes[e->dt].conv == ST_NONE)
        return tg_set_error(TG_ERR_DTYPE, "%s: tensor '%s': dtype %s is not supported by tgraph "
                            "(it reads F32, F64, F16, BF16, I64, I32, I16, I8, U32, U16, U8 and "
                            "BOOL)", what, name, tg__st_dtypes[e->dt].name);
    /* size = prod(shape) * size(dtype), checked */
    int64_t numel = 1;
    size_t bytes;
    for (int d = 0; d < e->rank; d++)
        if (!tg__mul_overflow_i64(numel, e->shape[d], &numel))
            return tg_set_error(TG_ERR_LIMIT, "%s: tensor '%s': the element count of its shape "
                                "overflows (ValidationOverflow)", what, name);
    if (!tg__mul_overflow_size((size_t)numel, tg__st_dtypes[e->dt].size, &bytes) ||
        !tg__mul_overflow_size((size_t)numel, 16, &(size_t){0}))
        return tg_set_error(TG_ERR_LIMIT, "%s: tensor '%s': its size in bytes overflows "
                            "(ValidationOverflow)", what, name);
    if ((uint64_t)bytes != e->end - e->begin) {
        char sh[160];
        return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%lld, %lld] hold %lld "
                            "bytes, but shape %s of %s needs %zu (TensorInvalidInfo)", what, name,
                            (long long)b, (long long)en, (long long)(en - b),
                            tg_shape_str(e->rank, e->shape, sh, sizeof sh),
                            tg__st_dtypes[e->dt].name, bytes);
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
                            tg__st_nm(tg__json_key(m, m->dup), k, sizeof k));
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
                                tg__st_nm(key, kb, sizeof kb), tg__json_kind_name(val->kind));
        if (memchr(key->str, '\0', key->len) || memchr(val->str, '\0', val->len))
            return tg_set_error(TG_ERR_FORMAT, "%s: __metadata__ entry '%s' contains a NUL "
                                "character", what, tg__st_nm(key, kb, sizeof kb));
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
tg_status tg__st_check_sizes(const char *what, uint64_t len, const unsigned char *first8,
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
tg_status tg__st_plan_header(st_plan *p, const char *hdr, size_t n, uint64_t data_len)
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
                            tg__st_nm(k, name, sizeof name));
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
        tg__st_nm(e->name, name, sizeof name);
        if (i == 0)
            return tg_set_error(TG_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu]: the "
                                "first tensor must start at 0 (InvalidOffset)", what, name,
                                (unsigned long long)e->begin, (unsigned long long)e->end);
        tg__st_nm(p->e[i - 1].name, prev, sizeof prev);
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
