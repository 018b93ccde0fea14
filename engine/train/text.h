/*
 * text.h - a character-level text data set, nanoGPT's shakespeare_char
 * protocol (data/shakespeare_char/prepare.py and train.py's get_batch):
 *
 *   - the file is read as UTF-8 text, as Python's open(f).read() does
 *     (strict: invalid UTF-8 is an error naming the byte offset; universal
 *     newlines: "\r\n" and a lone "\r" become "\n");
 *   - the vocabulary is the sorted set of its characters (Unicode code
 *     points, Python's sorted(set(data))), ids in that order;
 *   - the first int(n * 0.9) characters train, the rest validate;
 *   - a batch is B random windows of T + 1 characters of one split, each
 *     starting at a uniform offset in [0, len(split) - T) drawn from the
 *     caller's RNG: x = ids[i, i + T), y = ids[i + 1, i + T + 1).
 *
 *     tg_text t;
 *     if (tg_text_load("input.txt", &t)) fprintf(stderr, "%s\n", tg_last_error());
 *     if (tg_text_check_block(&t, 64)) ...;   // both splits hold a window
 *     tg_text_batch(&t, TG_TEXT_TRAIN, 64, &rng, x, y);   // x, y int64 [B, 64]
 *     tg_text_clear(&t);
 *
 * Not here: tokenizers other than characters, streaming (the file is read
 * whole, at most TG_TEXT_MAX_BYTES, and held as int32 ids: 4 bytes a
 * character).
 */
#ifndef TG_TEXT_H
#define TG_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "rng.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest text file tg_text_load reads: 256 MiB (1 GiB of ids). */
#define TG_TEXT_MAX_BYTES ((size_t)256 << 20)

/* The last code point, plus one: the size of a code-point lookup table. */
#define TG_TEXT_CODE_POINTS 0x110000

typedef enum tg_text_split {
    TG_TEXT_TRAIN,   /* the first int(n * 0.9) characters */
    TG_TEXT_VAL,     /* the rest */
    TG_TEXT_SPLIT_COUNT
} tg_text_split;

/* A text as ids. Owns vocab, ids and source; zero-initialise or fill with
 * tg_text_load / tg_text_from_utf8, free with tg_text_clear. */
typedef struct tg_text {
    char     *source;       /* the file's path (messages) */
    int64_t   vocab_size;
    uint32_t *vocab;        /* [vocab_size] code points, ascending: id -> character */
    int64_t   n;            /* characters */
    int32_t  *ids;          /* [n] */
    int64_t   n_train;      /* int(n * 0.9): ids [0, n_train) train, [n_train, n) validate */
} tg_text;

/* Read a UTF-8 text file whole (TG_TEXT_MAX_BYTES at most: TG_ERR_LIMIT
 * beyond), build the vocabulary and the ids. Errors name the file: invalid
 * UTF-8 (TG_ERR_FORMAT with the byte offset and the byte), an empty file.
 * On error t is left zeroed. */
tg_status tg_text_load(const char *path, tg_text *t);
/* The same from bytes in memory; `name` stands for the file in messages. */
tg_status tg_text_from_utf8(const char *bytes, size_t len, const char *name, tg_text *t);
void      tg_text_clear(tg_text *t);

/* ids [begin, begin + len) of a split. */
const int32_t *tg_text_split_ids(const tg_text *t, tg_text_split s, int64_t *len);

/* Both splits hold at least one window of block_size + 1 characters; else
 * TG_ERR_INVALID saying which split, how many characters it has and how
 * many a window needs. */
tg_status tg_text_check_block(const tg_text *t, int64_t block_size);

/* A batch of split s into x and y, int64 tensors of one shape [B, T]: B
 * offsets drawn from rng (tg_rng_below(rng, len - T) each, in order). Errors:
 * tensors not int64 [B, T] alike, a split too short for T. */
tg_status tg_text_batch(const tg_text *t, tg_text_split s, tg_rng *rng, tg_tensor *x,
                        tg_tensor *y);

/* ---- the vocabulary outside a tg_text (a checkpoint's, for sampling) ---- */

/* The vocabulary as text for a checkpoint's metadata: the code points in
 * decimal, ascending, separated by spaces ("10 32 33 ..."). A new string
 * (free with tg_free), NULL on out of memory. */
char *tg_text_vocab_format(const uint32_t *vocab, int64_t vocab_size);
/* Read it back: strictly ascending code points below TG_TEXT_CODE_POINTS
 * (not surrogates). *vocab is a new array (free with tg_free). TG_ERR_FORMAT
 * naming the entry at fault. */
tg_status tg_text_vocab_parse(const char *s, uint32_t **vocab, int64_t *vocab_size);

/* Encode UTF-8 text with a vocabulary: *ids a new array of *n ids (free
 * with tg_free). Invalid UTF-8 is TG_ERR_FORMAT with the offset; characters
 * not in the vocabulary are TG_ERR_INVALID naming them (each once, quoted,
 * with its code point). The newline rule of tg_text_load applies. */
tg_status tg_text_encode(const uint32_t *vocab, int64_t vocab_size, const char *utf8, size_t len,
                         int32_t **ids, int64_t *n);

/* The UTF-8 bytes of code point cp into out (room for 4); their count. */
int tg_utf8_put(uint32_t cp, char *out);

#ifdef __cplusplus
}
#endif
#endif
