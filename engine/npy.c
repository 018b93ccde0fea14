/*
 * npy.c - NumPy .npy files, format 1.0 - 3.0 (OPS.md section 16).
 *
 * The header is a Python dict literal; this parser accepts the subset numpy
 * writes and reads (keys in any order, either quote, spaces anywhere, a
 * trailing comma, True/False, ints with a Python-2 'L'), and rejects the rest
 * with a message naming the file and the problem. Nothing is allocated from a
 * size in the file before it is checked against the file's real length.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "tensor_io.h"

#define NPY_MAX_HEADER 65536   /* numpy refuses more than 10000 by default */

typedef struct {
    const char *s, *end;
    const char *what;
} hdr;

static void skip_ws(hdr *h)
{
    while (h->s < h->end && (*h->s == ' ' || *h->s == '\t' || *h->s == '\n' || *h->s == '\r'))
        h->s++;
}

static bool take(hdr *h, char c)
{
    skip_ws(h);
    if (h->s < h->end && *h->s == c) {
        h->s++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes (keys and descr never have them). */
static bool parse_str(hdr *h, char *out, size_t cap)
{
    skip_ws(h);
    if (h->s >= h->end || (*h->s != '\'' && *h->s != '"')) return false;
    char q = *h->s++;
    size_t n = 0;
    while (h->s < h->end && *h->s != q) {
        if (*h->s == '\\' || n + 1 >= cap) return false;
        out[n++] = *h->s++;
    }
    if (h->s >= h->end) return false;
    h->s++;
    out[n] = '\0';
    return true;
}

static bool parse_word(hdr *h, const char *w)
{
    skip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->s) >= n && memcmp(h->s, w, n) == 0) {
        h->s += n;
        return true;
    }
    return false;
}

/* Non-negative integer (optionally followed by L); -1 on syntax error, -2 on
 * a negative number, -3 on overflow. */
static int64_t parse_dim(hdr *h)
{
    skip_ws(h);
    if (h->s < h->end && *h->s == '-') return -2;
    if (h->s >= h->end || *h->s < '0' || *h->s > '9') return -1;
    int64_t v = 0;
    while (h->s < h->end && *h->s >= '0' && *h->s <= '9') {
        if (v > (INT64_MAX - 9) / 10) return -3;
        v = v * 10 + (*h->s++ - '0');
    }
    if (h->s < h->end && (*h->s == 'L' || *h->s == 'l')) h->s++;
    if (h->s < h->end && (*h->s == '.' || *h->s == 'e' || *h->s == 'E')) return -1;
    return v;
}

typedef struct {
    char    descr[32];
    int     fortran;        /* 0/1 */
    int     rank;
    int64_t shape[TG_MAX_RANK];
} npy_header;

static tg_status bad(const char *what, const char *msg, const char *detail)
{
    return tg_set_error(TG_ERR_FORMAT, "%s: %s%s", what, msg, detail ? detail : "");
}

static tg_status parse_shape(hdr *h, npy_header *out)
{
    if (!take(h, '(')) {
        char got[40] = "";
        skip_ws(h);
        size_t n = (size_t)(h->end - h->s) < 30 ? (size_t)(h->end - h->s) : 30;
        memcpy(got, h->s, n);
        for (size_t i = 0; i < n; i++)
            if (got[i] == ',' || got[i] == '}') got[i] = '\0';
        return bad(h->what, "shape is not valid (expected a tuple of ints): ", got);
    }
    out->rank = 0;
    if (take(h, ')')) return TG_OK;
    for (;;) {
        if (parse_word(h, "True") || parse_word(h, "False"))
            return bad(h->what, "shape is not valid: a bool is not a dimension", NULL);
        int64_t d = parse_dim(h);
        if (d == -2) return bad(h->what, "negative dimensions are not allowed", NULL);
        if (d == -3) return bad(h->what, "shape is not valid: a dimension overflows", NULL);
        if (d < 0) return bad(h->what, "shape is not valid (expected a tuple of ints)", NULL);
        if (out->rank == TG_MAX_RANK)
            return tg_set_error(TG_ERR_LIMIT, "%s: shape has more than %d dims (tgraph's maximum "
                                "rank)", h->what, TG_MAX_RANK);
        out->shape[out->rank++] = d;
        if (take(h, ')')) return TG_OK;
        if (!take(h, ',')) return bad(h->what, "shape is not valid (expected ',' or ')')", NULL);
        if (take(h, ')')) return TG_OK;
    }
}

static tg_status parse_header(hdr *h, npy_header *out)
{
    bool seen[3] = {false, false, false};
    if (!take(h, '{')) return bad(h->what, "Header is not a dictionary", NULL);
    while (!take(h, '}')) {
        char key[32];
        if (!parse_str(h, key, sizeof key))
            return bad(h->what, "Cannot parse header: expected a quoted key", NULL);
        if (!take(h, ':')) return bad(h->what, "Cannot parse header: expected ':' after key ", key);
        int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1
              : !strcmp(key, "shape") ? 2 : -1;
        if (k < 0) return bad(h->what, "Header does not contain the correct keys: unexpected key ", key);
        if (seen[k]) return bad(h->what, "Header repeats the key ", key);
        seen[k] = true;
        tg_status st = TG_OK;
        if (k == 0) {
            skip_ws(h);
            if (h->s < h->end && *h->s == '[')
                return bad(h->what, "structured dtypes (a descr list) are not supported", NULL);
            if (!parse_str(h, out->descr, sizeof out->descr))
                return bad(h->what, "descr is not a valid dtype descriptor", NULL);
        } else if (k == 1) {
            if (parse_word(h, "True")) out->fortran = 1;
            else if (parse_word(h, "False")) out->fortran = 0;
            else return bad(h->what, "fortran_order is not a valid bool", NULL);
        } else {
            st = parse_shape(h, out);
        }
        if (st) return st;
        if (take(h, '}')) break;
        if (!take(h, ',')) return bad(h->what, "Cannot parse header: expected ',' or '}'", NULL);
    }
    skip_ws(h);
    if (h->s != h->end) return bad(h->what, "Cannot parse header: text after the dictionary", NULL);
    if (!seen[0] || !seen[1] || !seen[2])
        return bad(h->what, "Header does not contain the correct keys (descr, fortran_order, "
                   "shape): missing ", !seen[0] ? "descr" : !seen[1] ? "fortran_order" : "shape");
    return TG_OK;
}

static bool host_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static tg_status descr_dtype(const char *what, const char *d, tg_dtype *dt)
{
    char order = d[0];
    const char *kind = d + 1;
    if (!strcmp(d, "|O") || !strcmp(d, "O"))
        return bad(what, "Object arrays cannot be loaded when allow_pickle=False", NULL);
    if (!strcmp(d, "|b1") || !strcmp(d, "b1") || !strcmp(d, "?")) {
        *dt = TG_BOOL;
        return TG_OK;
    }
    bool little = order == '<' || order == '|' || (order == '=' && host_little_endian());
    if (order == '>' || (order == '=' && !host_little_endian()))
        return tg_set_error(TG_ERR_FORMAT, "%s: big-endian data ('%s') is not supported; save "
                            "it little-endian (e.g. astype('<%s'))", what, d, kind);
    if (little && !strcmp(kind, "f4")) *dt = TG_F32;
    else if (little && !strcmp(kind, "f8")) *dt = TG_F64;
    else if (little && !strcmp(kind, "i8")) *dt = TG_I64;
    else if (little && (kind[0] == 'f' || kind[0] == 'i' || kind[0] == 'u' || kind[0] == 'c'))
        return tg_set_error(TG_ERR_DTYPE, "%s: dtype '%s' is not supported (use float32 '<f4', "
                            "float64 '<f8', int64 '<i8' or bool '|b1')", what, d);
    else
        return tg_set_error(TG_ERR_FORMAT, "%s: descr is not a valid dtype descriptor: '%s'", what,
                            d);
    return TG_OK;
}

/* Column-major data of shape s -> row-major tensor. */
static void from_fortran(const unsigned char *src, tg_tensor *t)
{
    size_t es = tg_dtype_size(t->dtype);
    int64_t idx[TG_MAX_RANK] = {0}, fstride[TG_MAX_RANK];
    int64_t s = 1;
    for (int d = 0; d < t->rank; d++) {
        fstride[d] = s;
        s *= t->shape[d];
    }
    unsigned char *dst = t->data;
    for (int64_t i = 0; i < t->numel; i++) {
        int64_t off = 0;
        for (int d = 0; d < t->rank; d++) off += idx[d] * fstride[d];
        memcpy(dst + (size_t)i * es, src + (size_t)off * es, es);
        for (int d = t->rank - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}

tg_status tg_npy_parse(const void *buf, size_t len, const char *what, tg_tensor **out)
{
    const unsigned char *p = buf;
    *out = NULL;
    if (!what) what = "npy";
    if (len < 10 || memcmp(p, "\x93NUMPY", 6) != 0)
        return tg_set_error(TG_ERR_FORMAT, "%s: not a .npy file (the magic string is not correct; "
                            "expected \\x93NUMPY)", what);
    unsigned major = p[6], minor = p[7];
    size_t hlen, at;
    if (major == 1 && minor == 0) {
        hlen = (size_t)p[8] | ((size_t)p[9] << 8);
        at = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (len < 12)
            return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading the header length", what);
        hlen = (size_t)p[8] | ((size_t)p[9] << 8) | ((size_t)p[10] << 16) | ((size_t)p[11] << 24);
        at = 12;
    } else {
        return tg_set_error(TG_ERR_FORMAT, "%s: we only support format version (1,0), (2,0), and "
                            "(3,0), not (%u, %u)", what, major, minor);
    }
    if (hlen > NPY_MAX_HEADER)
        return tg_set_error(TG_ERR_LIMIT, "%s: Header info length (%zu) is large and may not be "
                            "safe to load (limit %d)", what, hlen, NPY_MAX_HEADER);
    if (hlen > len - at)
        return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading array header, expected %zu bytes got "
                            "%zu", what, hlen, len - at);
    for (size_t i = 0; i < hlen; i++)
        if (p[at + i] >= 0x80 || (p[at + i] < 0x20 && p[at + i] != '\n' && p[at + i] != '\t' &&
                                  p[at + i] != '\r'))
            return tg_set_error(TG_ERR_FORMAT, "%s: header byte %zu (0x%02x) is not printable "
                                "ASCII", what, i, p[at + i]);
    hdr h = {(const char *)p + at, (const char *)p + at + hlen, what};
    npy_header nh = {.rank = -1};
    tg_status st = parse_header(&h, &nh);
    if (st) return st;
    tg_dtype dt = TG_F32;
    if ((st = descr_dtype(what, nh.descr, &dt))) return st;
    int64_t numel;
    if (tg_shape_numel(nh.rank, nh.shape, &numel))
        return tg_set_error(TG_ERR_LIMIT, "%s: %s", what, tg_last_error());
    size_t bytes, data_at = at + hlen;
    if (!tg__mul_overflow_size((size_t)numel, tg_dtype_size(dt), &bytes))
        return tg_set_error(TG_ERR_LIMIT, "%s: data size overflows", what);
    if (bytes > len - data_at)
        return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading array data, expected %zu bytes got "
                            "%zu", what, bytes, len - data_at);
    tg_tensor *t = tg_tensor_new(dt, nh.rank, nh.shape);
    if (!t) return tg_set_error(TG_ERR_NOMEM, "%s: %s", what, tg_last_error());
    if (nh.fortran && nh.rank > 1)
        from_fortran(p + data_at, t);
    else
        memcpy(t->data, p + data_at, bytes);
    if (dt == TG_BOOL) {
        uint8_t *b = t->data;
        for (int64_t i = 0; i < numel; i++)
            if (b[i] > 1) {
                tg_tensor_free(t);
                return tg_set_error(TG_ERR_FORMAT, "%s: bool element %lld has value %u (not 0/1)",
                                    what, (long long)i, b[i]);
            }
    }
    *out = t;
    return TG_OK;
}

tg_status tg_npy_load(const char *path, tg_tensor **out)
{
    void *buf;
    size_t len;
    *out = NULL;
    tg_status st = tg_read_file(path, 0, &buf, &len);
    if (st) return st;
    st = tg_npy_parse(buf, len, path, out);
    tg__free(buf);
    return st;
}

typedef struct { const tg_tensor *t; } npy_write_ctx;

static tg_status npy_write(FILE *f, void *vctx)
{
    const tg_tensor *t = ((npy_write_ctx *)vctx)->t;
    static const char *const descr[TG_DTYPE_COUNT] = {"<f4", "<f8", "<i8", "|b1"};
    char dict[512], shape[400];
    size_t k = 0;
    shape[0] = '\0';
    for (int d = 0; d < t->rank; d++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, d ? ", %lld" : "%lld",
                              (long long)t->shape[d]);
    if (t->rank == 1) snprintf(shape + k, sizeof shape - k, ",");
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                     descr[t->dtype], shape);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)n + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    size_t bytes = (size_t)t->numel * tg_dtype_size(t->dtype);
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(dict, 1, (size_t)n, f) != (size_t)n)
        return tg_set_error(TG_ERR_IO, "npy: write failed");
    for (size_t i = 0; i < pad; i++)
        if (fputc(' ', f) == EOF) return tg_set_error(TG_ERR_IO, "npy: write failed");
    if (fputc('\n', f) == EOF || (bytes && fwrite(t->data, 1, bytes, f) != bytes))
        return tg_set_error(TG_ERR_IO, "npy: write failed");
    return TG_OK;
}

tg_status tg_npy_save(const char *path, const tg_tensor *t)
{
    if (!t || (unsigned)t->dtype >= TG_DTYPE_COUNT || t->rank < 0 || t->rank > TG_MAX_RANK)
        return tg_set_error(TG_ERR_INVALID, "%s: bad tensor", path ? path : "npy");
    npy_write_ctx c = {t};
    tg_status st = tg_write_atomic(path, npy_write, &c);
    if (st && !strstr(tg_last_error(), path)) return tg_set_error(st, "%s: %s", path, tg_last_error());
    return st;
}
