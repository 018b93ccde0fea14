/*
 * npy.c - NumPy .npy files, format 1.0 - 3.0 (OPS.md section 16).
 *
 * The header is a Python dict literal; this parser accepts the subset numpy
 * writes and reads (keys in any order, either quote, spaces anywhere, a
 * trailing comma, True/False, ints with a Python-2 'L', no padding, no final
 * newline), and rejects the rest with numpy's message where it has one,
 * naming the file and quoting the offending text.
 *
 * Decided (OPS.md 16.3 "also decide"):
 *   - fortran_order True is read: the column-major data is transposed into
 *     tgraph's row-major layout;
 *   - big-endian data ('>f4') is rejected with a message saying how to save
 *     it little-endian ('|' and '=' on a little-endian host are fine);
 *   - dtypes other than <f4 <f8 <i8 and b1 are rejected by name (no silent
 *     conversion); structured and object arrays are rejected;
 *   - bytes after the data are accepted, like numpy;
 *   - any header byte outside printable ASCII (and \t \n \r) is rejected.
 * Nothing is allocated from a size in the file before it is checked against
 * the file's real length and the input limit (tensor_io.h); tg_npy_load
 * reads the header first and the data straight into the tensor. From a pipe
 * or a device it reads the magic and header first (garbage stops there),
 * then exactly the data the header announces; bytes after it are an error
 * there (a device that goes on would otherwise be read forever).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "io_internal.h"
#include "tensor_io.h"

#define NPY_MAX_HEADER 65536   /* numpy refuses more than 10000 by default */
#define NPY_PREAMBLE_MAX 12

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

/* The word w, not followed by more identifier characters. */
static bool parse_word(hdr *h, const char *w)
{
    skip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->s) < n || memcmp(h->s, w, n) != 0) return false;
    if ((size_t)(h->end - h->s) > n) {
        char c = h->s[n];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_')
            return false;
    }
    h->s += n;
    return true;
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
    if (h->s < h->end && (*h->s == '.' || *h->s == 'e' || *h->s == 'E' || *h->s == 'j' ||
                          *h->s == '_' || *h->s == 'x'))
        return -1;
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

/* The text of the value starting at `from`, for messages: a bracketed value
 * up to its closing bracket, otherwise up to ',' or '}'; at most 40 chars. */
static const char *value_text(const hdr *h, const char *from, char *buf, size_t n)
{
    const char *s = from, *e = from;
    while (s < h->end && (*s == ' ' || *s == '\t')) s++;
    e = s;
    if (e < h->end && (*e == '(' || *e == '[')) {
        char close = *e == '(' ? ')' : ']';
        while (e < h->end && *e != close) e++;
        if (e < h->end) e++;
    } else {
        while (e < h->end && *e != ',' && *e != '}') e++;
    }
    while (e > s && (e[-1] == ' ' || e[-1] == '\n')) e--;
    size_t k = (size_t)(e - s);
    if (k > 40) k = 40;
    if (k >= n) k = n - 1;
    memcpy(buf, s, k);
    buf[k] = '\0';
    return buf;
}

static tg_status parse_shape(hdr *h, npy_header *out)
{
    const char *start = h->s;
    char text[48];
    if (!take(h, '('))
        return bad(h->what, "shape is not valid: ", value_text(h, start, text, sizeof text));
    out->rank = 0;
    if (take(h, ')')) return TG_OK;
    for (;;) {
        if (parse_word(h, "True") || parse_word(h, "False"))
            return tg_set_error(TG_ERR_FORMAT, "%s: shape is not valid: %s (a bool is not a "
                                "dimension)", h->what, value_text(h, start, text, sizeof text));
        int64_t d = parse_dim(h);
        if (d == -2)
            return tg_set_error(TG_ERR_FORMAT, "%s: negative dimensions are not allowed: %s",
                                h->what, value_text(h, start, text, sizeof text));
        if (d == -3)
            return tg_set_error(TG_ERR_LIMIT, "%s: shape is not valid: %s (a dimension "
                                "overflows int64)", h->what,
                                value_text(h, start, text, sizeof text));
        if (d < 0) return bad(h->what, "shape is not valid: ", value_text(h, start, text,
                                                                          sizeof text));
        if (out->rank == TG_MAX_RANK)
            return tg_set_error(TG_ERR_LIMIT, "%s: shape %s has more than %d dims (tgraph's "
                                "maximum rank)", h->what, value_text(h, start, text, sizeof text),
                                TG_MAX_RANK);
        out->shape[out->rank++] = d;
        if (take(h, ')')) return TG_OK;
        if (!take(h, ','))
            return bad(h->what, "shape is not valid: ", value_text(h, start, text, sizeof text));
        if (take(h, ')')) return TG_OK;
    }
}

static tg_status parse_header(hdr *h, npy_header *out)
{
    static const char *const keys[3] = {"descr", "fortran_order", "shape"};
    bool seen[3] = {false, false, false};
    char text[48];
    const char *begin = h->s;
    if (!take(h, '{'))
        return bad(h->what, "Header is not a dictionary: ", value_text(h, begin, text, sizeof text));
    while (!take(h, '}')) {
        char key[32];
        if (!parse_str(h, key, sizeof key))
            return bad(h->what, "Cannot parse header: expected a quoted key at ",
                       value_text(h, h->s, text, sizeof text));
        if (!take(h, ':')) return bad(h->what, "Cannot parse header: expected ':' after key ", key);
        int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1
              : !strcmp(key, "shape") ? 2 : -1;
        if (k < 0)
            return bad(h->what, "Header does not contain the correct keys: unexpected key ", key);
        if (seen[k]) return bad(h->what, "Cannot parse header: the key is repeated: ", key);
        seen[k] = true;
        tg_status st = TG_OK;
        skip_ws(h);
        const char *vstart = h->s;
        if (k == 0) {
            if (h->s < h->end && *h->s == '[')
                return bad(h->what, "structured dtypes (a descr list) are not supported", NULL);
            if (!parse_str(h, out->descr, sizeof out->descr))
                return bad(h->what, "descr is not a valid dtype descriptor: ",
                           value_text(h, vstart, text, sizeof text));
        } else if (k == 1) {
            if (parse_word(h, "True")) out->fortran = 1;
            else if (parse_word(h, "False")) out->fortran = 0;
            else return bad(h->what, "fortran_order is not a valid bool: ",
                            value_text(h, vstart, text, sizeof text));
        } else {
            st = parse_shape(h, out);
        }
        if (st) return st;
        if (take(h, '}')) break;
        if (!take(h, ','))
            return bad(h->what, "Cannot parse header: expected ',' or '}' at ",
                       value_text(h, h->s, text, sizeof text));
    }
    skip_ws(h);
    if (h->s != h->end)
        return bad(h->what, "Cannot parse header: text after the dictionary: ",
                   value_text(h, h->s, text, sizeof text));
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return bad(h->what, "Header does not contain the correct keys (descr, fortran_order, "
                       "shape): missing ", keys[k]);
    return TG_OK;
}

static bool host_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

static tg_status descr_dtype(const char *what, const char *d, tg_dtype *dt)
{
    size_t n = strlen(d);
    char order = n ? d[0] : '\0';
    const char *kind = n ? d + 1 : d;
    if (n >= 2 && d[1] == 'O')
        return bad(what, "Object arrays cannot be loaded when allow_pickle=False", NULL);
    if (n < 2 || !strchr("<>|=", order) || !strchr("biufcmMSUVO", kind[0]))
        return tg_set_error(TG_ERR_FORMAT, "%s: descr is not a valid dtype descriptor: '%s'",
                            what, d);
    if (!strcmp(kind, "b1")) {   /* one byte: the order does not matter */
        *dt = TG_BOOL;
        return TG_OK;
    }
    if (order == '>' || (order == '=' && !host_little_endian()))
        return tg_set_error(TG_ERR_FORMAT, "%s: big-endian data ('%s') is not supported; save "
                            "it little-endian (e.g. astype('<%s'))", what, d, kind);
    if (!strcmp(kind, "f4")) *dt = TG_F32;
    else if (!strcmp(kind, "f8")) *dt = TG_F64;
    else if (!strcmp(kind, "i8")) *dt = TG_I64;
    else
        return tg_set_error(TG_ERR_DTYPE, "%s: dtype '%s' is not supported (use float32 '<f4', "
                            "float64 '<f8', int64 '<i8' or bool '|b1')", what, d);
    return TG_OK;
}

/* Column-major data of t's shape -> row-major t. */
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

/* The preamble: magic, version, header length. p[0..len) is what is
 * available (len may be short); sets *hlen and *at (where the header starts). */
static tg_status parse_preamble(const unsigned char *p, size_t len, const char *what, size_t *hlen,
                                size_t *at)
{
    if (len < 6 || memcmp(p, "\x93NUMPY", 6) != 0) {
        char got[40] = "";
        size_t k = 0;
        for (size_t i = 0; i < len && i < 8; i++)
            k += (size_t)snprintf(got + k, sizeof got - k, "\\x%02x", p[i]);
        return tg_set_error(TG_ERR_FORMAT, "%s: not a .npy file: the magic string is not correct; "
                            "expected \\x93NUMPY, got '%s'%s", what, got,
                            len < 6 ? " (the file is too short)" : "");
    }
    if (len < 8)
        return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading the format version (the file is %zu "
                            "bytes)", what, len);
    unsigned major = p[6], minor = p[7];
    if (major == 1 && minor == 0) {
        if (len < 10)
            return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading the header length (the file is "
                                "%zu bytes)", what, len);
        *hlen = (size_t)p[8] | ((size_t)p[9] << 8);
        *at = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (len < 12)
            return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading the header length (the file is "
                                "%zu bytes)", what, len);
        *hlen = (size_t)p[8] | ((size_t)p[9] << 8) | ((size_t)p[10] << 16) |
                ((size_t)p[11] << 24);
        *at = 12;
    } else {
        return tg_set_error(TG_ERR_FORMAT, "%s: we only support format version (1,0), (2,0), and "
                            "(3,0), not (%u, %u)", what, major, minor);
    }
    if (*hlen > NPY_MAX_HEADER)
        return tg_set_error(TG_ERR_LIMIT, "%s: Header info length (%zu) is large and may not be "
                            "safe to load securely (limit %d)", what, *hlen, NPY_MAX_HEADER);
    return TG_OK;
}

/* Validate the header text; set the dtype, the header fields and the data size. */
static tg_status check_header(const unsigned char *text, size_t hlen, const char *what,
                              npy_header *nh, tg_dtype *dt, size_t *bytes)
{
    for (size_t i = 0; i < hlen; i++)
        if (text[i] >= 0x7f || (text[i] < 0x20 && text[i] != '\n' && text[i] != '\t' &&
                                text[i] != '\r'))
            return tg_set_error(TG_ERR_FORMAT, "%s: header byte %zu (0x%02x) is not printable "
                                "ASCII", what, i, text[i]);
    hdr h = {(const char *)text, (const char *)text + hlen, what};
    memset(nh, 0, sizeof *nh);
    tg_status st = parse_header(&h, nh);
    if (!st) st = descr_dtype(what, nh->descr, dt);
    if (st) return st;
    int64_t numel;
    if (tg_shape_numel(nh->rank, nh->shape, &numel)) {
        char msg[512], sh[160];
        snprintf(msg, sizeof msg, "%s", tg_last_error());
        return tg_set_error(TG_ERR_LIMIT, "%s: shape %s: %s", what,
                            tg_shape_str(nh->rank, nh->shape, sh, sizeof sh), msg);
    }
    if (!tg__mul_overflow_size((size_t)numel, tg_dtype_size(*dt), bytes))
        return tg_set_error(TG_ERR_LIMIT, "%s: data size overflows", what);
    return TG_OK;
}

static tg_status check_bools(const char *what, const tg_tensor *t)
{
    if (t->dtype != TG_BOOL) return TG_OK;
    const uint8_t *b = t->data;
    for (int64_t i = 0; i < t->numel; i++)
        if (b[i] > 1)
            return tg_set_error(TG_ERR_FORMAT, "%s: bool element %lld has value %u (not 0 or 1)",
                                what, (long long)i, b[i]);
    return TG_OK;
}

static tg_tensor *new_tensor(const char *what, const npy_header *nh, tg_dtype dt)
{
    tg_tensor *t = tg_tensor_new(dt, nh->rank, nh->shape);
    if (!t) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tg_last_error());
        tg_set_error(TG_ERR_NOMEM, "%s: %s", what, msg);
    }
    return t;
}

static tg_status data_eof(const char *what, size_t want, size_t got)
{
    return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading array data, expected %zu bytes got %zu",
                        what, want, got);
}

tg_status tg_npy_parse(const void *buf, size_t len, const char *what, tg_tensor **out)
{
    const unsigned char *p = buf;
    if (!out) return tg_set_error(TG_ERR_INVALID, "tg_npy_parse: out is NULL");
    *out = NULL;
    if (!what) what = "npy";
    if (!buf && len) return tg_set_error(TG_ERR_INVALID, "%s: buffer is NULL", what);
    size_t hlen, at, bytes;
    tg_status st = parse_preamble(p, len, what, &hlen, &at);
    if (st) return st;
    if (hlen > len - at)
        return tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading array header, expected %zu bytes got "
                            "%zu", what, hlen, len - at);
    npy_header nh;
    tg_dtype dt = TG_F32;
    if ((st = check_header(p + at, hlen, what, &nh, &dt, &bytes))) return st;
    size_t data_at = at + hlen;
    if (bytes > len - data_at) return data_eof(what, bytes, len - data_at);
    tg_tensor *t = new_tensor(what, &nh, dt);
    if (!t) return TG_ERR_NOMEM;
    if (nh.fortran && nh.rank > 1) from_fortran(p + data_at, t);
    else if (bytes) memcpy(t->data, p + data_at, bytes);
    if ((st = check_bools(what, t))) {
        tg_tensor_free(t);
        return st;
    }
    *out = t;
    return TG_OK;
}

tg_status tg_npy_load(const char *path, tg_tensor **out)
{
    if (!out) return tg_set_error(TG_ERR_INVALID, "tg_npy_load: out is NULL");
    *out = NULL;
    if (!path) return tg_set_error(TG_ERR_INVALID, "npy: path is NULL");
    FILE *f;
    uint64_t flen;
    bool stream;
    size_t cap;
    tg_status st = tg__input_cap(TG_MAX_INPUT_DEFAULT, &cap);
    if (!st) st = tg__open_for_load(path, &f, &flen, &stream);
    if (st) return st;
    /* The preamble and the header (at most 12 + 65536 bytes), read in order
     * with no seeking, so a pipe or a device is read the same way; garbage
     * (/dev/zero) stops at the magic. */
    unsigned char pre[NPY_PREAMBLE_MAX];
    size_t got = fread(pre, 1, sizeof pre, f), hlen = 0, at = 0, bytes = 0;
    unsigned char *text = NULL;
    tg_tensor *t = NULL;
    npy_header nh;
    tg_dtype dt = TG_F32;
    if (stream) flen = UINT64_MAX;   /* unknown: the reads below find the end */
    st = parse_preamble(pre, got, path, &hlen, &at);
    if (!st && (uint64_t)hlen > (flen > at ? flen - at : 0))
        st = tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading array header, expected %zu bytes got "
                          "%llu", path, hlen, (unsigned long long)(flen > at ? flen - at : 0));
    if (!st && !(text = tg__malloc(hlen + 1)))
        st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
    if (!st) {
        size_t have = got - at < hlen ? got - at : hlen;   /* v1.0: 2 header bytes in pre */
        memcpy(text, pre + at, have);
        size_t more = fread(text + have, 1, hlen - have, f);
        if (have + more != hlen)
            st = tg_set_error(TG_ERR_FORMAT, "%s: EOF: reading array header, expected %zu bytes "
                              "got %zu", path, hlen, have + more);
    }
    if (!st) st = check_header(text, hlen, path, &nh, &dt, &bytes);
    tg__free(text);
    /* the data: checked against the input limit and the file's length
     * before anything is allocated */
    uint64_t need = (uint64_t)at + hlen + bytes;
    uint64_t avail = stream ? UINT64_MAX : flen - at - hlen;
    if (!st && (uint64_t)bytes > avail) st = data_eof(path, bytes, (size_t)avail);
    if (!st && need > cap) st = tg__over_cap(path, "array (header and data)", need, cap);
    if (!st && !(t = new_tensor(path, &nh, dt))) st = TG_ERR_NOMEM;
    if (!st && bytes) {
        bool transpose = nh.fortran && nh.rank > 1;
        unsigned char *dst = transpose ? tg__malloc(bytes) : t->data;
        if (!dst) {
            st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
        } else {
            size_t n = fread(dst, 1, bytes, f);
            if (n != bytes) st = data_eof(path, bytes, n);   /* short, or the file shrank */
            else if (transpose) from_fortran(dst, t);
            if (transpose) tg__free(dst);
        }
    }
    /* a stream must end with the data (a file may have bytes after it, as
     * numpy allows): a device that goes on is not read forever */
    if (!st && stream && fgetc(f) != EOF)
        st = tg_set_error(TG_ERR_FORMAT, "%s: the stream goes on after the %zu data bytes the "
                          "header announces (a .npy stream must end with its data)", path, bytes);
    if (!st && stream && ferror(f))
        st = tg_set_error(TG_ERR_IO, "%s: read error", path);
    if (!st) st = check_bools(path, t);
    fclose(f);
    if (st) {
        tg_tensor_free(t);
        return st;
    }
    *out = t;
    return TG_OK;
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
    if (fputc('\n', f) == EOF) return tg_set_error(TG_ERR_IO, "npy: write failed");
    if (!bytes) return TG_OK;
    if (host_little_endian() || tg_dtype_size(t->dtype) == 1) {
        if (fwrite(t->data, 1, bytes, f) != bytes) return tg_set_error(TG_ERR_IO, "npy: write failed");
        return TG_OK;
    }
    size_t es = tg_dtype_size(t->dtype);   /* big-endian host: write little-endian */
    const unsigned char *src = t->data;
    for (size_t i = 0; i < bytes; i += es)
        for (size_t b = es; b-- > 0;)
            if (fputc(src[i + b], f) == EOF) return tg_set_error(TG_ERR_IO, "npy: write failed");
    return TG_OK;
}

tg_status tg_npy_save(const char *path, const tg_tensor *t)
{
    if (!path) return tg_set_error(TG_ERR_INVALID, "npy: path is NULL");
    tg_status bad = tg_tensor_check(t, path);
    if (bad) return bad;
    npy_write_ctx c = {t};
    tg_status st = tg_write_atomic(path, npy_write, &c);
    if (st && !strstr(tg_last_error(), path)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tg_last_error());
        return tg_set_error(st, "%s: %s", path, msg);
    }
    return st;
}
