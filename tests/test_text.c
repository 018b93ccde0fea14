/*
 * test_text.c - the character-level text data set (engine/train/text.h):
 * the vocabulary is the sorted set of code points (multi-byte characters
 * included), ids follow it, the split is int(n * 0.9) by characters, CRLF
 * reads as "\n", invalid UTF-8 is refused naming the byte offset, too short
 * a split names the counts, batches are windows of the split with targets
 * one character on, drawn from the RNG (same seed, same batch), and the
 * vocabulary survives its metadata form; encoding names unknown characters.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "text.h"

static void load_str(const char *s, tg_text *t)
{
    cr_assert_eq(tg_text_from_utf8(s, strlen(s), "mem.txt", t), TG_OK, "%s", tg_last_error());
}

Test(text, vocabulary_is_the_sorted_set_of_code_points)
{
    tg_text t;
    /* "é" U+00E9 (2 bytes), "€" U+20AC (3 bytes), "😀" U+1F600 (4 bytes) */
    load_str("b\xc3\xa9" "a\xe2\x82\xac" "b\n\xf0\x9f\x98\x80" "a", &t);
    cr_assert_eq(t.n, 8);
    cr_assert_eq(t.vocab_size, 6);
    const uint32_t want[6] = {'\n', 'a', 'b', 0xe9, 0x20ac, 0x1f600};
    for (int i = 0; i < 6; i++) cr_assert_eq(t.vocab[i], want[i], "vocab[%d] = %u", i, t.vocab[i]);
    const int32_t ids[8] = {2, 3, 1, 4, 2, 0, 5, 1};
    for (int i = 0; i < 8; i++) cr_assert_eq(t.ids[i], ids[i], "ids[%d] = %d", i, t.ids[i]);
    tg_text_clear(&t);
    cr_assert_null(t.ids);
}

Test(text, split_is_int_n_times_0_9_by_characters)
{
    static const int64_t ns[] = {1, 9, 10, 11, 29, 100, 1115394};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        int64_t n = ns[k];
        char *s = malloc((size_t)n);
        for (int64_t i = 0; i < n; i++) s[i] = (char)('a' + i % 26);
        tg_text t;
        cr_assert_eq(tg_text_from_utf8(s, (size_t)n, "x", &t), TG_OK);
        cr_assert_eq(t.n_train, (int64_t)((double)n * 0.9), "n %lld", (long long)n);
        int64_t lt, lv;
        cr_assert_eq(tg_text_split_ids(&t, TG_TEXT_TRAIN, &lt), t.ids);
        cr_assert_eq(tg_text_split_ids(&t, TG_TEXT_VAL, &lv), t.ids + t.n_train);
        cr_assert_eq(lt + lv, n);
        tg_text_clear(&t);
        free(s);
    }
    tg_text t;
    char s[] = "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    load_str(s, &t);   /* 10 characters in 20 bytes: the split counts characters */
    cr_assert_eq(t.n, 10);
    cr_assert_eq(t.n_train, 9);
    tg_text_clear(&t);
}

Test(text, universal_newlines)
{
    tg_text t;
    load_str("a\r\nb\rc\n", &t);
    cr_assert_eq(t.n, 6);   /* a \n b \n c \n */
    cr_assert_eq(t.vocab_size, 4);
    cr_assert_eq(t.vocab[0], '\n');
    cr_assert_eq(t.ids[1], 0);
    cr_assert_eq(t.ids[3], 0);
    tg_text_clear(&t);
}

Test(text, invalid_utf8_names_the_byte_offset)
{
    static const struct { const char *s; size_t len; const char *needle; } bad[] = {
        {"abc\xff", 4, "byte offset 3 (byte 0xff)"},
        {"ab\xc3", 3, "byte offset 2 (byte 0xc3)"},          /* truncated */
        {"a\xc0\xaf", 3, "byte offset 1 (byte 0xc0)"},       /* overlong */
        {"ab\xed\xa0\x80", 5, "byte offset 2 (byte 0xed)"},  /* a surrogate */
        {"\x80", 1, "byte offset 0 (byte 0x80)"},            /* stray continuation */
        {"xy\xf4\x90\x80\x80", 6, "byte offset 2 (byte 0xf4)"},   /* above U+10FFFF */
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        tg_text t;
        cr_assert_eq(tg_text_from_utf8(bad[k].s, bad[k].len, "bad.txt", &t), TG_ERR_FORMAT,
                     "%zu", k);
        tt_assert_last_error("bad.txt: not valid UTF-8");
        tt_assert_last_error(bad[k].needle);
        cr_assert_null(t.ids);
    }
    tg_text t;
    cr_assert_eq(tg_text_from_utf8("", 0, "empty.txt", &t), TG_ERR_FORMAT);
    tt_assert_last_error("empty.txt: the text is empty");
}

Test(text, load_reads_the_file_and_names_it)
{
    const char *p = tt_path("in.txt");
    FILE *f = fopen(p, "wb");
    fputs("hello world\n", f);
    fclose(f);
    tg_text t;
    cr_assert_eq(tg_text_load(p, &t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t.n, 12);
    cr_assert_eq(t.vocab_size, 9);   /* \n space d e h l o r w */
    cr_assert_str_eq(t.source, p);
    tg_text_clear(&t);
    cr_assert_neq(tg_text_load(tt_path("missing/in.txt"), &t), TG_OK);
    tt_assert_last_error("missing/in.txt");
}

Test(text, too_little_text_for_a_window_says_how_much)
{
    tg_text t;
    load_str("abcdefghijklmnopqrst", &t);   /* 20: train 18, val 2 */
    cr_assert_eq(tg_text_check_block(&t, 1), TG_OK);
    cr_assert_eq(tg_text_check_block(&t, 2), TG_ERR_INVALID);
    tt_assert_last_error("validation split");
    tt_assert_last_error("block_size 2 is too large");
    tt_assert_last_error("has 2 characters, and one window needs block_size + 1, so block_size "
                         "can be at most 1");
    cr_assert_eq(tg_text_check_block(&t, 18), TG_ERR_INVALID);
    tt_assert_last_error("training split");
    tt_assert_last_error("has 18 characters, and one window needs block_size + 1, so "
                         "block_size can be at most 17");
    /* INT64_MAX + 1 would wrap: the message says too large, never a negative number */
    cr_assert_eq(tg_text_check_block(&t, INT64_MAX), TG_ERR_INVALID);
    tt_assert_last_error("block_size 9223372036854775807 is too large");
    tt_assert_last_error("can be at most 17");
    cr_assert_null(strstr(tg_last_error(), "-9223372036854775808"), "%s", tg_last_error());
    tg_text_clear(&t);
}

Test(text, batches_are_windows_with_shifted_targets)
{
    tg_text t;
    char s[301];
    for (int i = 0; i < 300; i++) s[i] = (char)(' ' + (i * 7) % 90);
    s[300] = '\0';
    load_str(s, &t);
    int64_t B = 5, T = 8;
    tg_tensor *x = tg_tensor_new(TG_I64, 2, (int64_t[]){B, T});
    tg_tensor *y = tg_tensor_new(TG_I64, 2, (int64_t[]){B, T});
    tg_tensor *x2 = tg_tensor_new(TG_I64, 2, (int64_t[]){B, T});
    tg_tensor *y2 = tg_tensor_new(TG_I64, 2, (int64_t[]){B, T});
    for (int sp = 0; sp < 2; sp++) {
        tg_rng r, r2;
        tg_rng_seed(&r, 42);
        r2 = r;
        cr_assert_eq(tg_text_batch(&t, (tg_text_split)sp, &r, x, y), TG_OK, "%s", tg_last_error());
        int64_t len;
        const int32_t *ids = tg_text_split_ids(&t, (tg_text_split)sp, &len);
        const int64_t *xd = x->data, *yd = y->data;
        for (int64_t b = 0; b < B; b++) {
            int64_t i = (int64_t)tg_rng_below(&r2, (uint64_t)(len - T));   /* the same draw */
            for (int64_t k = 0; k < T; k++) {
                cr_assert_eq(xd[b * T + k], ids[i + k]);
                cr_assert_eq(yd[b * T + k], ids[i + k + 1]);
            }
        }
        tg_rng_seed(&r, 42);
        cr_assert_eq(tg_text_batch(&t, (tg_text_split)sp, &r, x2, y2), TG_OK);
        cr_assert_eq(memcmp(x->data, x2->data, (size_t)(B * T) * 8), 0);
    }
    /* the validation split (30 characters) cannot hold T = 30 */
    tg_tensor *xl = tg_tensor_new(TG_I64, 2, (int64_t[]){1, 30});
    tg_rng r;
    tg_rng_seed(&r, 1);
    cr_assert_eq(tg_text_batch(&t, TG_TEXT_VAL, &r, xl, xl), TG_ERR_INVALID);
    tt_assert_last_error("has 30 characters; a window of 30 needs 31");
    cr_assert_eq(tg_text_batch(&t, TG_TEXT_VAL, &r, x, xl), TG_ERR_INVALID);
    tg_tensor_free(xl);
    tg_tensor_free(x), tg_tensor_free(y), tg_tensor_free(x2), tg_tensor_free(y2);
    tg_text_clear(&t);
}

Test(text, vocabulary_metadata_round_trip_and_encoding)
{
    tg_text t;
    load_str("ab\n\xc3\xa9 \xf0\x9f\x98\x80", &t);
    char *s = tg_text_vocab_format(t.vocab, t.vocab_size);
    cr_assert_str_eq(s, "10 32 97 98 233 128512");
    uint32_t *v;
    int64_t n;
    cr_assert_eq(tg_text_vocab_parse(s, &v, &n), TG_OK, "%s", tg_last_error());
    cr_assert_eq(n, t.vocab_size);
    cr_assert_eq(memcmp(v, t.vocab, (size_t)n * sizeof *v), 0);
    int32_t *ids;
    int64_t k;
    cr_assert_eq(tg_text_encode(v, n, "b\xc3\xa9" "a", 4, &ids, &k), TG_OK);
    cr_assert_eq(k, 3);
    cr_assert(ids[0] == 3 && ids[1] == 4 && ids[2] == 2);
    tg_free(ids);
    cr_assert_eq(tg_text_encode(v, n, "aZbZq", 5, &ids, &k), TG_ERR_INVALID);
    tt_assert_last_error("not in the model's vocabulary of 6: 'Z' (U+005A), 'q' (U+0071)");
    cr_assert_null(ids);
    static const char *const bad[] = {"", "10 10", "10 9", "x", "1114112", "55296", "10,32"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint32_t *w = (uint32_t *)1;
        cr_assert_eq(tg_text_vocab_parse(bad[i], &w, &n), TG_ERR_FORMAT, "'%s'", bad[i]);
        cr_assert_null(w);
    }
    char buf[4];
    cr_assert_eq(tg_utf8_put(0x20ac, buf), 3);
    cr_assert_eq(memcmp(buf, "\xe2\x82\xac", 3), 0);
    tg_free(v);
    tg_free(s);
    tg_text_clear(&t);
}
