/*
 * rng.c - xoshiro256** with splitmix64 seeding.
 */
#include <math.h>

#include "internal.h"
#include "rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void tg_rng_seed(tg_rng *r, uint64_t seed)
{
    TG__NONNULL_VOID(r);
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t tg_rng_next(tg_rng *r)
{
    TG__NONNULL(r, 0);
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double tg_rng_uniform(tg_rng *r)
{
    TG__NONNULL(r, NAN);
    return (double)(tg_rng_next(r) >> 11) * 0x1.0p-53;
}

double tg_rng_normal(tg_rng *r)
{
    TG__NONNULL(r, NAN);
    /* u1 in (0, 1] so log(u1) is finite */
    double u1 = 1.0 - tg_rng_uniform(r);
    double u2 = tg_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

uint64_t tg_rng_below(tg_rng *r, uint64_t n)
{
    TG__NONNULL(r, 0);
    if (n == 0) return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = tg_rng_next(r); while (x >= limit);
    return x % n;
}
