/*
 * rng.h - the seeded random generator every random thing draws from.
 *
 * xoshiro256** (Blackman & Vigna), seeded through splitmix64. Owned by the
 * caller: the same seed gives the same bits on every machine. The state is
 * four words, so it can be saved in a checkpoint and restored exactly.
 * (PyTorch's own bit stream is not reproduced; distributions are.)
 */
#ifndef TG_RNG_H
#define TG_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_rng {
    uint64_t s[4];
} tg_rng;

void     tg_rng_seed(tg_rng *r, uint64_t seed);
uint64_t tg_rng_next(tg_rng *r);             /* 64 random bits */
double   tg_rng_uniform(tg_rng *r);          /* [0, 1), 53 bits */
double   tg_rng_normal(tg_rng *r);           /* N(0, 1), Box-Muller */
uint64_t tg_rng_below(tg_rng *r, uint64_t n);/* uniform in [0, n), unbiased; 0 if n == 0 */

#ifdef __cplusplus
}
#endif
#endif
