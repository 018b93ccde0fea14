/*
 * vec_topk.c - float32 top-k of one contiguous row, k <= 64, on AVX-512 or
 * AVX2 (see vec.h). The portable kernel, topk_row_packed_f32 in ops/topk.c,
 * is the reference: this one picks the same entries in the same order, bit
 * for bit (tests/test_topk.c compares them on random, tied, NaN, signed-zero,
 * ascending, descending and all-equal rows).
 *
 * As there, a key is the rank of a value as a uint32 (rank_key_f32) and an
 * entry packs key and complemented index into a uint64 (key high, ~index
 * low): the rank order is the integer order, and every entry is distinct and
 * above 0, the padding. A row is read twice:
 * 1. The bar. Element j joins group j % G, G = 2B (B: the power of two >= k,
 *    at least 8), a group per key lane, so the group maxima cost one unsigned
 *    max per vector; a bitonic network on the 32-bit maxima gives the k-th
 *    largest, lo. At least k keys reach lo (the maxima of k groups), so no
 *    pick has a key below it. For random data about k + k/4 elements reach it
 *    (n = 256, k = 32: 41 of 256); an ascending or a descending row has k.
 * 2. The picks. Vectors with keys >= lo (a well-predicted branch skips the
 *    rest: most vectors of a long row) have those lanes' entries appended to
 *    cand: AVX-512 compresses keys and ~indices (vpcompressd) and interleaves
 *    them; AVX2 widens each half to entries and compacts them with a
 *    permutation from a 16-row table. Past max(G, 64) entries, cand is
 *    reduced into buf, the B best so far, and lo rises above buf[k - 1]'s key
 *    (a later element loses every tie with it): an all-equal row stops there.
 * A reduce sorts blocks of at most B entries with a bitonic network held in
 * registers and merges each into buf with a bitonic merge (the max of buf and
 * the block reversed, then half-cleaners). Every network is unrolled to
 * straight-line min / max / permute code.
 *
 * AVX2 has no unsigned 64-bit compare: its entries are kept with the top bit
 * flipped (then the signed order is the unsigned one), padding INT64_MIN.
 *
 * Measured: see ops/topk.c. The file includes itself once per instruction
 * set (TK_ISA 512, 256) for the kernels.
 */
#ifndef TK_ISA /* ------------------------------------------------ the file proper */

#include "vec.h"

#if TG_VEC
#include <immintrin.h>

#define TK_CAP 128   /* room in cand (and the most groups, G for k = 64) */
/* loops over vectors, with constant bounds once inlined, fully unrolled */
#define TK_UNROLL _Pragma("GCC unroll 16")
#define TK_INLINE static inline __attribute__((always_inline))

/* AVX2 compaction: for the 4-bit mask m of the lanes kept, the 32-bit lane
 * pairs of the kept 64-bit lanes, in order, for vpermd */
static const int32_t tk_lut[16][8] = {
    {0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 3, 0, 1, 4, 5, 6, 7},
    {0, 1, 2, 3, 4, 5, 6, 7}, {4, 5, 0, 1, 2, 3, 6, 7}, {0, 1, 4, 5, 2, 3, 6, 7},
    {2, 3, 4, 5, 0, 1, 6, 7}, {0, 1, 2, 3, 4, 5, 6, 7}, {6, 7, 0, 1, 2, 3, 4, 5},
    {0, 1, 6, 7, 2, 3, 4, 5}, {2, 3, 6, 7, 0, 1, 4, 5}, {0, 1, 2, 3, 6, 7, 4, 5},
    {4, 5, 6, 7, 0, 1, 2, 3}, {0, 1, 4, 5, 6, 7, 2, 3}, {2, 3, 4, 5, 6, 7, 0, 1},
    {0, 1, 2, 3, 4, 5, 6, 7},
};

#define TK_ISA 512
#include "vec_topk.c"
#undef TK_ISA
#define TK_ISA 256
#include "vec_topk.c"
#undef TK_ISA

void tg__vec_topk_row_f32(const float *x, int64_t n, float *v, int64_t *ix, int64_t k,
                          int64_t os, bool largest)
{
    if (tg__vec_avx512_on()) tk512_row(x, n, v, ix, k, os, largest);
    else tk256_row(x, n, v, ix, k, os, largest);
}

#else
typedef int tg__vec_topk_none;   /* (ISO C wants something in a translation unit) */
#endif /* TG_VEC */

#else /* ---------------------------------------------------- the kernels, per ISA */

/* One vector type holds either 64-bit entries or 32-bit keys; the network
 * takes the lane width L (64 or 32, a constant) and has TK_N(L) lanes. */
#define TK_N(L) ((L) == 64 ? TK_W : TK_LW)

#if TK_ISA == 512
#define TK(name) tk512_##name
#define TGT __attribute__((target("avx512f,popcnt")))
#define TK_W 8      /* entries per vector */
#define TK_LW 16    /* keys per vector */
typedef __m512i TK(v);
typedef __mmask16 TK(mask);

TGT static inline TK(v) TK(pad)(int L) { (void)L; return _mm512_setzero_si512(); }
TGT static inline TK(v) TK(vmax)(TK(v) a, TK(v) b, int L)
{
    return L == 64 ? _mm512_max_epu64(a, b) : _mm512_max_epu32(a, b);
}
TGT static inline TK(v) TK(vmin)(TK(v) a, TK(v) b, int L)
{
    return L == 64 ? _mm512_min_epu64(a, b) : _mm512_min_epu32(a, b);
}
/* lane l takes lane l ^ pat */
TGT static inline TK(v) TK(perm)(TK(v) v, int pat, int L)
{
    if (L == 64)
        return _mm512_permutexvar_epi64(_mm512_set_epi64(7 ^ pat, 6 ^ pat, 5 ^ pat, 4 ^ pat,
                                                         3 ^ pat, 2 ^ pat, 1 ^ pat, 0 ^ pat), v);
    return _mm512_permutexvar_epi32(_mm512_set_epi32(15 ^ pat, 14 ^ pat, 13 ^ pat, 12 ^ pat,
                                                     11 ^ pat, 10 ^ pat, 9 ^ pat, 8 ^ pat,
                                                     7 ^ pat, 6 ^ pat, 5 ^ pat, 4 ^ pat,
                                                     3 ^ pat, 2 ^ pat, 1 ^ pat, 0 ^ pat), v);
}
/* compare-exchange of lane l with lane l ^ pat: the max to the lane without
 * bit hb (pat's top bit), the min to the lane with it */
TGT static inline TK(v) TK(inreg)(TK(v) v, int pat, int hb, int L)
{
    TK(v) p = TK(perm)(v, pat, L);
    unsigned hi = hb == 1 ? 0xAAAA : hb == 2 ? 0xCCCC : hb == 4 ? 0xF0F0 : 0xFF00;
    if (L == 64) {
        hi = hb == 1 ? 0xAA : hb == 2 ? 0xCC : 0xF0;
        return _mm512_mask_min_epu64(_mm512_max_epu64(v, p), (__mmask8)hi, v, p);
    }
    return _mm512_mask_min_epu32(_mm512_max_epu32(v, p), (__mmask16)hi, v, p);
}
/* entries a[0..m), padded */
TGT static inline TK(v) TK(load)(const uint64_t *a, int64_t m)
{
    if (m >= 8) return _mm512_loadu_si512(a);
    return _mm512_maskz_loadu_epi64(m > 0 ? (__mmask8)((1u << m) - 1) : 0, a);
}
TGT static inline void TK(store)(void *a, TK(v) v) { _mm512_storeu_si512(a, v); }
/* an entry as stored, unsigned */
static inline uint64_t TK(plain)(uint64_t e) { return e; }

/* keys of 16 floats (rank_key_f32 of ops/topk.c; lanes from m on: 0, and
 * left out of *valid) */
TGT static inline TK(v) TK(keys)(const float *x, int64_t m, TK(v) flip, TK(mask) *valid)
{
    __mmask16 ok = m >= 16 ? 0xFFFF : (__mmask16)((1u << m) - 1);
    __m512 f = _mm512_maskz_loadu_ps(ok, x);
    __mmask16 zero = _mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_EQ_OQ);
    __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
    __m512i u = _mm512_maskz_mov_epi32((__mmask16)~zero, _mm512_castps_si512(f));   /* -0 -> +0 */
    u = _mm512_xor_si512(u, _mm512_or_si512(_mm512_srai_epi32(u, 31),
                                             _mm512_set1_epi32(INT32_MIN)));
    u = _mm512_mask_mov_epi32(u, nan, _mm512_set1_epi32(-1));
    *valid = ok;
    return _mm512_maskz_mov_epi32(ok, _mm512_xor_si512(u, flip));
}
TGT static inline TK(v) TK(splat)(uint32_t k) { return _mm512_set1_epi32((int)k); }
/* the lanes of keys >= lo, a bit per lane */
TGT static inline unsigned TK(ge)(TK(v) keys, uint32_t lo)
{
    return _mm512_cmpge_epu32_mask(keys, _mm512_set1_epi32((int)lo));
}
/* store the entries of the lanes in m (keys of x[j ..]) at a, in lane order
 * (two whole vectors are written); their count */
TGT static inline int TK(append)(uint64_t *a, TK(v) keys, int64_t j, unsigned m)
{
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                        24, 8);
    __m512i nj = _mm512_xor_si512(_mm512_add_epi32(_mm512_set1_epi32((int)j), iota),
                                  _mm512_set1_epi32(-1));              /* ~index */
    __m512i ck = _mm512_maskz_compress_epi32((__mmask16)m, keys);
    __m512i ci = _mm512_maskz_compress_epi32((__mmask16)m, nj);
    _mm512_storeu_si512(a, _mm512_permutex2var_epi32(ci, lo, ck));   /* (ci, ck) pairs */
    _mm512_storeu_si512(a + 8, _mm512_permutex2var_epi32(ci, hi, ck));
    return __builtin_popcount(m);
}

#else /* TK_ISA == 256 */
#define TK(name) tk256_##name
#define TGT __attribute__((target("avx2,fma,popcnt")))
#define TK_W 4      /* entries per vector (top bit flipped) */
#define TK_LW 8     /* keys per vector */
typedef __m256i TK(v);
typedef unsigned TK(mask);

TGT static inline TK(v) TK(pad)(int L)
{
    return L == 64 ? _mm256_set1_epi64x(INT64_MIN) : _mm256_setzero_si256();
}
TGT static inline TK(v) TK(vmax)(TK(v) a, TK(v) b, int L)
{
    if (L == 32) return _mm256_max_epu32(a, b);
    return _mm256_blendv_epi8(b, a, _mm256_cmpgt_epi64(a, b));
}
TGT static inline TK(v) TK(vmin)(TK(v) a, TK(v) b, int L)
{
    if (L == 32) return _mm256_min_epu32(a, b);
    return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b));
}
TGT static inline TK(v) TK(perm)(TK(v) v, int pat, int L)
{
    if (L == 32)
        return _mm256_permutevar8x32_epi32(v, _mm256_set_epi32(7 ^ pat, 6 ^ pat, 5 ^ pat,
                                                                4 ^ pat, 3 ^ pat, 2 ^ pat,
                                                                1 ^ pat, 0 ^ pat));
    switch (pat) {
    case 1: return _mm256_shuffle_epi32(v, 0x4E);
    case 2: return _mm256_permute4x64_epi64(v, 0x4E);
    default: return _mm256_permute4x64_epi64(v, 0x1B);
    }
}
TGT static inline TK(v) TK(inreg)(TK(v) v, int pat, int hb, int L)
{
    TK(v) p = TK(perm)(v, pat, L);
    if (L == 32) {
        TK(v) mx = _mm256_max_epu32(v, p), mn = _mm256_min_epu32(v, p);
        switch (hb) {
        case 1: return _mm256_blend_epi32(mx, mn, 0xAA);
        case 2: return _mm256_blend_epi32(mx, mn, 0xCC);
        default: return _mm256_blend_epi32(mx, mn, 0xF0);
        }
    }
    /* lanes without bit hb keep the max: v where v > p there, p elsewhere */
    TK(v) lo = hb == 1 ? _mm256_set_epi64x(0, -1, 0, -1) : _mm256_set_epi64x(0, 0, -1, -1);
    return _mm256_blendv_epi8(v, p, _mm256_xor_si256(_mm256_cmpgt_epi64(v, p), lo));
}
TGT static inline TK(v) TK(load)(const uint64_t *a, int64_t m)
{
    if (m >= 4) return _mm256_loadu_si256((const __m256i *)a);
    __m256i ok = _mm256_cmpgt_epi64(_mm256_set1_epi64x(m), _mm256_set_epi64x(3, 2, 1, 0));
    return _mm256_blendv_epi8(TK(pad)(64), _mm256_maskload_epi64((const long long *)a, ok), ok);
}
TGT static inline void TK(store)(void *a, TK(v) v) { _mm256_storeu_si256((__m256i *)a, v); }
static inline uint64_t TK(plain)(uint64_t e) { return e ^ (1ull << 63); }

TGT static inline TK(v) TK(keys)(const float *x, int64_t m, TK(v) flip, TK(mask) *valid)
{
    __m256i ok = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(m < 8 ? m : 8)),
                                    _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
    __m256 f = m >= 8 ? _mm256_loadu_ps(x) : _mm256_maskload_ps(x, ok);
    __m256 zero = _mm256_cmp_ps(f, _mm256_setzero_ps(), _CMP_EQ_OQ);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
    __m256i u = _mm256_castps_si256(_mm256_andnot_ps(zero, f));                    /* -0 -> +0 */
    u = _mm256_xor_si256(u, _mm256_or_si256(_mm256_srai_epi32(u, 31),
                                             _mm256_set1_epi32(INT32_MIN)));
    u = _mm256_or_si256(u, nan);
    *valid = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ok));
    return _mm256_and_si256(_mm256_xor_si256(u, flip), ok);
}
TGT static inline TK(v) TK(splat)(uint32_t k) { return _mm256_set1_epi32((int)k); }
TGT static inline unsigned TK(ge)(TK(v) keys, uint32_t lo)
{
    __m256i ge = _mm256_cmpeq_epi32(_mm256_max_epu32(keys, _mm256_set1_epi32((int)lo)), keys);
    return (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ge));
}
/* the same, a half (4 lanes) at a time: each half widened to its entries
 * (top bit flipped) and compacted with a permutation from tk_lut */
TGT static inline int TK(append)(uint64_t *a, TK(v) keys, int64_t j, unsigned m)
{
    __m256i nj = _mm256_xor_si256(_mm256_add_epi64(_mm256_set1_epi64x(j),
                                                   _mm256_set_epi64x(3, 2, 1, 0)),
                                  _mm256_set1_epi64x(0xFFFFFFFF));     /* ~index, low half */
    int c = 0;
    for (int h = 0; h < 2; h++) {
        unsigned mh = (m >> 4 * h) & 15;
        __m128i k4 = h ? _mm256_extracti128_si256(keys, 1) : _mm256_castsi256_si128(keys);
        k4 = _mm_xor_si128(k4, _mm_set1_epi32(INT32_MIN));
        __m256i e = _mm256_or_si256(_mm256_slli_epi64(_mm256_cvtepu32_epi64(k4), 32), nj);
        __m256i idx = _mm256_loadu_si256((const __m256i *)tk_lut[mh]);
        _mm256_storeu_si256((__m256i *)(a + c), _mm256_permutevar8x32_epi32(e, idx));
        c += __builtin_popcount(mh);
        nj = _mm256_sub_epi64(nj, _mm256_set1_epi64x(4));
    }
    return c;
}
#endif

/* ---- the bitonic network, for either ISA and lane width: nv vectors,
 * element t * TK_N(L) + l in lane l of r[t] ---- */

TGT TK_INLINE void TK(cx)(TK(v) *a, TK(v) *b, int L)
{
    TK(v) hi = TK(vmax)(*a, *b, L), lo = TK(vmin)(*a, *b, L);
    *a = hi;
    *b = lo;
}

/* The stages are spelled out (no loop over them) so that, with nv and L
 * constants, every network unrolls to straight-line code (GCC and clang). */

/* one half-cleaner at distance d: the max to the lower position */
TGT TK_INLINE void TK(half)(TK(v) *r, int nv, int d, int L)
{
    if (d < TK_N(L)) {
        TK_UNROLL
        for (int t = 0; t < nv; t++) r[t] = TK(inreg)(r[t], d, d, L);
    } else {
        int h = d / TK_N(L);
        TK_UNROLL
        for (int b = 0; b < nv; b += 2 * h)
            TK_UNROLL
            for (int t = b; t < b + h; t++) TK(cx)(&r[t], &r[t + h], L);
    }
}

/* half-cleaners at distances d, d / 2, ..., 1 (d a power of two up to 32, or 0) */
TGT TK_INLINE void TK(clean)(TK(v) *r, int nv, int d, int L)
{
    if (d >= 32) TK(half)(r, nv, 32, L);
    if (d >= 16) TK(half)(r, nv, 16, L);
    if (d >= 8) TK(half)(r, nv, 8, L);
    if (d >= 4) TK(half)(r, nv, 4, L);
    if (d >= 2) TK(half)(r, nv, 2, L);
    if (d >= 1) TK(half)(r, nv, 1, L);
}

/* every element of each run of s paired with its mirror in the run */
TGT TK_INLINE void TK(flip)(TK(v) *r, int nv, int s, int L)
{
    if (s <= TK_N(L)) {
        TK_UNROLL
        for (int t = 0; t < nv; t++) r[t] = TK(inreg)(r[t], s - 1, s / 2, L);
    } else {
        int h = s / TK_N(L);
        TK_UNROLL
        for (int b = 0; b < nv; b += h)
            TK_UNROLL
            for (int t = 0; t < h / 2; t++) {
                TK(v) lo = TK(perm)(r[b + h - 1 - t], TK_N(L) - 1, L), hi = r[b + t];
                TK(cx)(&hi, &lo, L);
                r[b + t] = hi;
                r[b + h - 1 - t] = TK(perm)(lo, TK_N(L) - 1, L);
            }
    }
}

/* r[0..nv) sorted descending (nv * TK_N(L) up to 128): sorted runs of s / 2
 * merged into runs of s, s = 2, 4, ... */
#define TK_MERGE(s)                                                           \
    if ((s) <= nv * TK_N(L)) {                                                \
        TK(flip)(r, nv, s, L);                                                \
        TK(clean)(r, nv, (s) / 4, L);                                         \
    }
TGT TK_INLINE void TK(sort)(TK(v) *r, int nv, int L)
{
    TK_MERGE(2) TK_MERGE(4) TK_MERGE(8) TK_MERGE(16) TK_MERGE(32) TK_MERGE(64) TK_MERGE(128)
}
#undef TK_MERGE

/* one network per size and lane width, on nv vectors in memory */
#define TK_SORT(nv, L)                                                        \
    TGT static void TK(sort##nv##_##L)(TK(v) *io)                             \
    {                                                                         \
        TK(v) r[nv];                                                          \
        TK_UNROLL for (int t = 0; t < nv; t++) r[t] = io[t];                  \
        TK(sort)(r, nv, L);                                                   \
        TK_UNROLL for (int t = 0; t < nv; t++) io[t] = r[t];                  \
    }
TK_SORT(1, 64)
TK_SORT(2, 64)
TK_SORT(4, 64)
TK_SORT(8, 64)
TK_SORT(1, 32)
TK_SORT(2, 32)
TK_SORT(4, 32)
TK_SORT(8, 32)
#if TK_W == 4
TK_SORT(16, 64)
TK_SORT(16, 32)
#endif
#undef TK_SORT

/* nv vectors of lane width L sorted, nv a power of two up to 64 / TK_W */
TGT static inline void TK(sort_n)(TK(v) *r, int nv, int L)
{
    switch (nv) {
    case 1: (L == 64 ? TK(sort1_64) : TK(sort1_32))(r); break;
    case 2: (L == 64 ? TK(sort2_64) : TK(sort2_32))(r); break;
    case 4: (L == 64 ? TK(sort4_64) : TK(sort4_32))(r); break;
    case 8: (L == 64 ? TK(sort8_64) : TK(sort8_32))(r); break;
#if TK_W == 4
    case 16: (L == 64 ? TK(sort16_64) : TK(sort16_32))(r); break;
#endif
    }
}

/* buf[0..B) = the B best of buf[0..B) (sorted descending) and a[0..c), in
 * order; *fresh: buf holds nothing yet. B is a constant. The entries go in
 * blocks of at most B, each sorted and merged in. */
TGT TK_INLINE void TK(reduce)(uint64_t *buf, int B, bool *fresh, const uint64_t *a, int64_t c)
{
    enum { NV = 64 / TK_W };
    TK(v) rb[NV], r[NV];
    int nb = B / TK_W, nv;
    TK_UNROLL
    for (int t = 0; t < nb; t++) rb[t] = *fresh ? TK(pad)(64) : TK(load)(buf + t * TK_W, TK_W);
    for (int64_t o = 0; o < c; o += nv * TK_W) {
        for (nv = 1; nv < nb && nv * TK_W < c - o; nv *= 2) {}
        for (int t = 0; t < nv; t++) r[t] = TK(load)(a + o + t * TK_W, c - o - t * TK_W);
        for (int t = nv; t < nb; t++) r[t] = TK(pad)(64);
        TK(sort_n)(r, nv, 64);
        if (*fresh) {
            TK_UNROLL
            for (int t = 0; t < nb; t++) rb[t] = r[t];
            *fresh = false;
            continue;
        }
        TK_UNROLL
        for (int t = 0; t < nb; t++)   /* buf against the block reversed: a bitonic top B */
            rb[t] = TK(vmax)(rb[t], TK(perm)(r[nb - 1 - t], TK_W - 1, 64), 64);
        TK(clean)(rb, nb, B / 2, 64);
    }
    TK_UNROLL
    for (int t = 0; t < nb; t++) TK(store)(buf + t * TK_W, rb[t]);
}

/* the row for one B (a constant: the power of two >= k, at least 8) */
TGT TK_INLINE void TK(row_b)(const float *x, int64_t n, float *v, int64_t *ix, int64_t k,
                             int64_t os, bool largest, int B)
{
    enum { NA = TK_CAP / TK_LW };
    uint64_t buf[64], cand[TK_CAP];
    uint32_t gm[TK_CAP];
    TK(v) acc[NA];                                  /* [G] group maxima, G / TK_LW vectors */
    TK(v) flip = TK(splat)(largest ? 0 : UINT32_MAX);
    TK(mask) valid;
    int G = 2 * B, na = G / TK_LW;
    int64_t j = 0, c = 0, held = 0, thr = (G > 64 ? G : 64) - TK_LW;
    bool fresh = true;
    /* 1. the bar: the k-th largest group maximum */
    TK_UNROLL
    for (int a = 0; a < na; a++) acc[a] = TK(splat)(0);
    for (; j + G <= n; j += G) {
        TK_UNROLL
        for (int a = 0; a < na; a++)
            acc[a] = TK(vmax)(acc[a], TK(keys)(x + j + a * TK_LW, TK_LW, flip, &valid), 32);
    }
    TK_UNROLL
    for (int a = 0; a < na; a++)
        if (j + a * TK_LW < n)
            acc[a] = TK(vmax)(acc[a], TK(keys)(x + j + a * TK_LW, n - j - a * TK_LW, flip, &valid),
                              32);
    TK(v) mx[NA];                                   /* (acc stays in registers) */
    TK_UNROLL
    for (int a = 0; a < na; a++) mx[a] = acc[a];
    TK(sort_n)(mx, na, 32);
    TK_UNROLL
    for (int a = 0; a < na; a++) TK(store)(gm + a * TK_LW, mx[a]);
    uint32_t lo = gm[k - 1];                        /* every pick has a key >= lo */
    /* 2. the picks. When most vectors have none (a long row: about 1.25 k
     * of n pass) a branch skips those; otherwise the branch would be a coin
     * toss, mispredicted more often than append costs, so every vector goes
     * through append. */
    bool sparse = n >= 16 * k * TK_LW;
    for (j = 0; j < n; j += TK_LW) {
        TK(v) keys = TK(keys)(x + j, n - j, flip, &valid);
        unsigned m = TK(ge)(keys, lo) & valid;
        if (sparse && !m) continue;
        if (c > thr) {
            TK(reduce)(buf, B, &fresh, cand, c);
            held = held + c < B ? held + c : B;
            c = 0;
            if (held >= k) {   /* later entries lose ties: keys above buf[k - 1]'s */
                uint32_t kb = (uint32_t)(TK(plain)(buf[k - 1]) >> 32);
                if (kb == UINT32_MAX) break;
                if (kb >= lo) lo = kb + 1;
                m = TK(ge)(keys, lo) & valid;
                if (!m) continue;
            }
        }
        c += TK(append)(cand + c, keys, j, m);
    }
    TK(reduce)(buf, B, &fresh, cand, c);
    for (int64_t i = 0; i < k; i++) {
        int64_t id = (uint32_t)~(uint32_t)TK(plain)(buf[i]);
        v[i * os] = x[id];
        ix[i * os] = id;
    }
}

TGT static void TK(row)(const float *x, int64_t n, float *v, int64_t *ix, int64_t k, int64_t os,
                        bool largest)
{
    if (k <= 8) TK(row_b)(x, n, v, ix, k, os, largest, 8);
    else if (k <= 16) TK(row_b)(x, n, v, ix, k, os, largest, 16);
    else if (k <= 32) TK(row_b)(x, n, v, ix, k, os, largest, 32);
    else TK(row_b)(x, n, v, ix, k, os, largest, 64);
}

#undef TK
#undef TGT
#undef TK_W
#undef TK_LW
#undef TK_N
#endif
