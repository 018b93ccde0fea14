/*
 * text.c - the character-level text data set (text.h): strict UTF-8
 * decoding, the sorted vocabulary, the 90/10 split and random windows.
 *
 * Not here: what is trained on it (tools/train_text.c), sampling
 * (tools/cmd_sample.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tensor_io.h"
#include "text.h"

/* ---- UTF-8 ---- */

/* Decode the character at s[0..len): its code point into *cp and its byte
 * count, or 0 when the bytes there are not valid UTF-8 (Python's strict
 * decoder: no overlong forms, no surrogates, nothing above U+10FFFF, no
 * truncated sequence, no stray continuation byte). */
static int utf8_get(const unsigned char *s, size_t len, uint32_t *cp)
{
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
            : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n || (size_t)n > len) return 0;
    uint32_t v = c & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
        (n == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    *cp = v;
    return n;
}

int tg_utf8_put(uint32_t cp, char *out)
{
    TG__NONNULL(out, 0);
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | cp >> 6);
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | cp >> 12);
        o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (unsigned char)(0xf0 | (cp >> 18 & 0x07));
    o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* The code points of utf8 into cps (room for len), with Python's universal
 * newlines ("\r\n" and "\r" read as "\n"); *n their count. TG_ERR_FORMAT
 * naming `name` and the byte offset of the first invalid sequence. */
static tg_status decode_all(const char *utf8, size_t len, const char *name, uint32_t *cps,
                            int64_t *n)
{
    const unsigned char *s = (const unsigned char *)utf8;
    int64_t k = 0;
    for (size_t at = 0; at < len;) {
        uint32_t cp;
        int m = utf8_get(s + at, len - at, &cp);
        if (!m)
            return tg_set_error(TG_ERR_FORMAT, "%s: not valid UTF-8 at byte offset %zu (byte "
                                "0x%02x)", name, at, s[at]);
        at += (size_t)m;
        if (cp == '\r') {
            cp = '\n';
            if (at < len && s[at] == '\n') at++;
        }
        cps[k++] = cp;
    }
    *n = k;
    return TG_OK;
}

/* ---- the data set ---- */

void tg_text_clear(tg_text *t)
{
    TG__NONNULL_VOID(t);
    tg__free(t->source);
    tg__free(t->vocab);
    tg__free(t->ids);
    memset(t, 0, sizeof *t);
}

/* The vocabulary of cps[0..n) (sorted set) into t, and the ids. */
static tg_status build_vocab(tg_text *t, const uint32_t *cps, int64_t n)
{
    int32_t *index = tg__malloc(TG_TEXT_CODE_POINTS * sizeof *index);
    if (!index) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", t->source);
    for (int64_t c = 0; c < TG_TEXT_CODE_POINTS; c++) index[c] = -1;
    for (int64_t i = 0; i < n; i++) index[cps[i]] = 0;
    int64_t v = 0;
    for (int64_t c = 0; c < TG_TEXT_CODE_POINTS; c++)
        if (index[c] == 0) v++;
    t->vocab = tg__malloc((size_t)v * sizeof *t->vocab);
    t->ids = tg__malloc((size_t)(n ? n : 1) * sizeof *t->ids);
    if (!t->vocab || !t->ids) {
        tg__free(index);
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", t->source);
    }
    v = 0;
    for (int64_t c = 0; c < TG_TEXT_CODE_POINTS; c++)
        if (index[c] == 0) {
            index[c] = (int32_t)v;
            t->vocab[v++] = (uint32_t)c;
        }
    for (int64_t i = 0; i < n; i++) t->ids[i] = index[cps[i]];
    t->vocab_size = v;
    t->n = n;
    t->n_train = (int64_t)((double)n * 0.9);   /* Python's int(n * 0.9) */
    tg__free(index);
    return TG_OK;
}

tg_status tg_text_from_utf8(const char *bytes, size_t len, const char *name, tg_text *t)
{
    TG__NONNULL(t, TG_ERR_INVALID);
    memset(t, 0, sizeof *t);
    TG__NONNULL(bytes, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    if (!(t->source = tg__malloc(strlen(name) + 1)))
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", name);
    strcpy(t->source, name);
    if (len == 0) {
        tg_text_clear(t);
        return tg_set_error(TG_ERR_FORMAT, "%s: the text is empty", name);
    }
    uint32_t *cps = tg__malloc(len * sizeof *cps);
    if (!cps) {
        tg_text_clear(t);
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory (%zu bytes of text)", name, len);
    }
    int64_t n = 0;
    tg_status st = decode_all(bytes, len, name, cps, &n);
    if (!st) st = build_vocab(t, cps, n);
    tg__free(cps);
    if (st) tg_text_clear(t);
    return st;
}

tg_status tg_text_load(const char *path, tg_text *t)
{
    TG__NONNULL(t, TG_ERR_INVALID);
    memset(t, 0, sizeof *t);
    TG__NONNULL(path, TG_ERR_INVALID);
    void *data = NULL;
    size_t len = 0;
    tg_status st = tg_read_file(path, TG_TEXT_MAX_BYTES, &data, &len);
    if (st) return st;
    st = tg_text_from_utf8(data, len, path, t);
    tg_free(data);
    return st;
}

const int32_t *tg_text_split_ids(const tg_text *t, tg_text_split s, int64_t *len)
{
    TG__NONNULL(t, NULL);
    TG__NONNULL(len, NULL);
    *len = s == TG_TEXT_TRAIN ? t->n_train : t->n - t->n_train;
    return t->ids ? (s == TG_TEXT_TRAIN ? t->ids : t->ids + t->n_train) : NULL;
}

static const char *split_name(tg_text_split s)
{
    return s == TG_TEXT_TRAIN ? "training split (the first 90%" : "validation split (the last 10%";
}

tg_status tg_text_check_block(const tg_text *t, int64_t block_size)
{
    TG__NONNULL(t, TG_ERR_INVALID);
    if (block_size < 1)
        return tg_set_error(TG_ERR_INVALID, "block_size must be >= 1, got %lld",
                            (long long)block_size);
    for (int s = 0; s < TG_TEXT_SPLIT_COUNT; s++) {
        int64_t len;
        tg_text_split_ids(t, (tg_text_split)s, &len);
        if (len - 1 < block_size)   /* not len < block_size + 1: that overflows */
            return tg_set_error(TG_ERR_INVALID, "%s: block_size %lld is too large: the %s of "
                                "%lld characters) has %lld characters, and one window needs "
                                "block_size + 1, so block_size can be at most %lld",
                                t->source ? t->source : "text", (long long)block_size,
                                split_name((tg_text_split)s), (long long)t->n, (long long)len,
                                (long long)(len > 0 ? len - 1 : 0));
    }
    return TG_OK;
}

tg_status tg_text_batch(const tg_text *t, tg_text_split s, tg_rng *rng, tg_tensor *x,
                        tg_tensor *y)
{
    TG__NONNULL(t, TG_ERR_INVALID);
    TG__NONNULL(rng, TG_ERR_INVALID);
    tg_status bad = tg_tensor_check(x, "text batch: x");
    if (!bad) bad = tg_tensor_check(y, "text batch: y");
    if (bad) return bad;
    if (x->dtype != TG_I64 || y->dtype != TG_I64 || x->rank != 2 || y->rank != 2 ||
        x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1] || x->shape[1] < 1)
        return tg_set_error(TG_ERR_INVALID, "tg_text_batch: x and y must be int64 tensors of "
                            "one shape [B, T], T >= 1");
    const int64_t B = x->shape[0], T = x->shape[1];
    int64_t len;
    const int32_t *ids = tg_text_split_ids(t, s, &len);
    if (!ids || len < T + 1)
        return tg_set_error(TG_ERR_INVALID, "%s: the %s) has %lld characters; a window of %lld "
                            "needs %lld", t->source ? t->source : "text", split_name(s),
                            (long long)len, (long long)T, (long long)T + 1);
    int64_t *xd = x->data, *yd = y->data;   /* [B, T] */
    for (int64_t b = 0; b < B; b++) {
        int64_t i = (int64_t)tg_rng_below(rng, (uint64_t)(len - T));
        for (int64_t k = 0; k < T; k++) {
            xd[b * T + k] = ids[i + k];
            yd[b * T + k] = ids[i + k + 1];
        }
    }
    return TG_OK;
}

/* ---- the vocabulary as metadata, and encoding ---- */

char *tg_text_vocab_format(const uint32_t *vocab, int64_t vocab_size)
{
    TG__NONNULL(vocab, NULL);
    size_t cap = (size_t)(vocab_size > 0 ? vocab_size : 0) * 8 + 1, at = 0;
    char *s = tg__malloc(cap);
    if (!s) {
        tg_set_error(TG_ERR_NOMEM, "tg_text_vocab_format: out of memory");
        return NULL;
    }
    s[0] = '\0';
    for (int64_t i = 0; i < vocab_size; i++)
        at += (size_t)snprintf(s + at, cap - at, "%s%" PRIu32, i ? " " : "", vocab[i]);
    return s;
}

tg_status tg_text_vocab_parse(const char *s, uint32_t **vocab, int64_t *vocab_size)
{
    TG__NONNULL(s, TG_ERR_INVALID);
    TG__NONNULL(vocab, TG_ERR_INVALID);
    TG__NONNULL(vocab_size, TG_ERR_INVALID);
    *vocab = NULL;
    *vocab_size = 0;
    size_t cap = strlen(s) / 2 + 1;
    uint32_t *v = tg__malloc(cap * sizeof *v);
    if (!v) return tg_set_error(TG_ERR_NOMEM, "vocabulary: out of memory");
    int64_t n = 0;
    for (const char *p = s; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        char *end;
        unsigned long c = *p >= '0' && *p <= '9' ? strtoul(p, &end, 10) : (end = (char *)p, 0);
        if (end == p || (*end && *end != ' ') || c >= TG_TEXT_CODE_POINTS ||
            (c >= 0xd800 && c <= 0xdfff) || (n > 0 && c <= v[n - 1]) || (size_t)n >= cap) {
            tg__free(v);
            return tg_set_error(TG_ERR_FORMAT, "vocabulary: entry %lld ('%.12s') is not a code "
                                "point above the one before it", (long long)n + 1, p);
        }
        v[n++] = (uint32_t)c;
        p = end;
    }
    if (n == 0) {
        tg__free(v);
        return tg_set_error(TG_ERR_FORMAT, "vocabulary: empty");
    }
    *vocab = v;
    *vocab_size = n;
    return TG_OK;
}

/* The id of code point c in the ascending vocab, or -1. */
static int64_t vocab_find(const uint32_t *vocab, int64_t n, uint32_t c)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (vocab[mid] < c) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && vocab[lo] == c ? lo : -1;
}

/* The characters of cps[0..n) missing from vocab, each once, into a
 * TG_ERR_INVALID message. */
static tg_status unknown_chars(const uint32_t *vocab, int64_t V, const uint32_t *cps, int64_t n)
{
    char msg[512];
    size_t at = 0;
    int shown = 0;
    for (int64_t i = 0; i < n && shown < 16; i++) {
        bool seen = false;
        for (int64_t j = 0; j < i && !seen; j++) seen = cps[j] == cps[i];
        if (seen || vocab_find(vocab, V, cps[i]) >= 0) continue;
        char ch[5] = {0};
        if (cps[i] >= 0x20 && cps[i] != 0x7f) ch[tg_utf8_put(cps[i], ch)] = '\0';
        else snprintf(ch, sizeof ch, "?");
        at += (size_t)snprintf(msg + at, at < sizeof msg ? sizeof msg - at : 0, "%s'%s' (U+%04"
                               PRIX32 ")", shown ? ", " : "", ch, cps[i]);
        shown++;
    }
    return tg_set_error(TG_ERR_INVALID, "characters not in the model's vocabulary of %lld: %s",
                        (long long)V, msg);
}

tg_status tg_text_encode(const uint32_t *vocab, int64_t vocab_size, const char *utf8, size_t len,
                         int32_t **ids, int64_t *n)
{
    TG__NONNULL(vocab, TG_ERR_INVALID);
    TG__NONNULL(utf8, TG_ERR_INVALID);
    TG__NONNULL(ids, TG_ERR_INVALID);
    TG__NONNULL(n, TG_ERR_INVALID);
    *ids = NULL;
    *n = 0;
    uint32_t *cps = tg__malloc((len ? len : 1) * sizeof *cps);
    int32_t *out = tg__malloc((len ? len : 1) * sizeof *out);
    int64_t k = 0;
    tg_status st = cps && out ? decode_all(utf8, len, "text", cps, &k)
                              : tg_set_error(TG_ERR_NOMEM, "tg_text_encode: out of memory");
    for (int64_t i = 0; i < k && !st; i++) {
        int64_t id = vocab_find(vocab, vocab_size, cps[i]);
        if (id < 0) st = unknown_chars(vocab, vocab_size, cps, k);
        else out[i] = (int32_t)id;
    }
    tg__free(cps);
    if (st) {
        tg__free(out);
        return st;
    }
    *ids = out;
    *n = k;
    return TG_OK;
}
