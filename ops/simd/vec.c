/*
 * vec.c - AVX2 + FMA float32 row kernels and vector maths (see vec.h).
 *
 * Each routine walks its row 8 floats at a time; the last 1..7 go through
 * the same code with masked loads and stores, so every element sees the same
 * arithmetic whatever its position. Sums are kept in double (two 4-wide
 * accumulators), as in the portable kernels. The maths and the GELU rows are
 * written once in vec_math.h and instantiated here for AVX2 and for AVX-512
 * (16 lanes, the same bits; GELU takes it when tg__vec_avx512_on(): 1.9x the
 * AVX2 rate here, 0.63 against 1.17 ns per element on one thread).
 *
 * The maths (coefficients fitted for this file by weighted least squares,
 * iterated to near-minimax, on Chebyshev nodes):
 *   exp(x):  n = round(x / ln2), r = x - n ln2 (Cody-Waite, ln2 in two
 *            parts), e^r = 1 + r + r^2 Q(r) with Q of degree 5 (relative
 *            error 6e-11 on |r| <= ln2/2), times 2^n built in two halves so
 *            subnormal results round once. x is clamped to [-104, 89] first:
 *            below, the result is 0 (those lanes computed as exp(0), then
 *            zeroed); above, it overflows to +inf; NaN is passed through.
 *   erf(x):  |x| <= 0.93: x + x P(x^2), P of degree 5 (relative 2e-8);
 *            above: sign(x) (1 - exp(F(|x|))), F of degree 7 fitting
 *            log(erfc) on [0.92, 4] (erfc absolute 4e-11); |x| >= 4 gives 1.
 *   tanh(x): |x| < 0.625: x + x^3 P(x^2), P of degree 4 (relative 4e-9);
 *            above: sign(x) (1 - 2 / (exp(2|x|) + 1)), |x| clamped at 10.
 *
 * The row kernels of each op family are beside this file: vec_softmax.c
 * (softmax, log_softmax and the fused attention's tiny heads),
 * vec_layernorm.c, vec_gemm.c, vec_topk.c, vec_dropout.c; the maths are
 * instantiated for each of them by vec_math_inst.h.
 *
 * Not here: -ffast-math style shortcuts (NaN and inf follow IEEE, as the
 * portable path), F64, the strided rows.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ops_internal.h"
#include "vec.h"

#if TG_VEC
#include <immintrin.h>
#endif

/* ---- the switches ----
 * Each is decided on first use, from what the CPU has and an environment
 * variable that turns it off (non-empty, not "0"), unless set before. */

typedef struct vec_switch {
    atomic_int  mode;               /* -1: not decided yet; 0: off; 1: on */
    const char *env;                /* turns it off */
    bool      (*supported)(void);   /* the CPU can */
} vec_switch;

static int switch_auto(const vec_switch *w)
{
    const char *env = getenv(w->env);
    if (env && *env && strcmp(env, "0") != 0) return 0;
    return w->supported();
}

static bool switch_on(vec_switch *w)
{
    int m = atomic_load_explicit(&w->mode, memory_order_relaxed);
    if (m < 0) {
        m = switch_auto(w);
        atomic_store(&w->mode, m);
    }
    return m == 1;
}

static bool switch_set(vec_switch *w, int mode)
{
    if (mode == 1 && !w->supported()) return false;
    atomic_store(&w->mode, mode == 0 ? 0 : mode == 1 ? 1 : switch_auto(w));
    return true;
}

bool tg__vec_supported(void)
{
#if TG_VEC
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("popcnt");
#else
    return false;
#endif
}

static bool avx512_supported(void)
{
#if TG_VEC
    return tg__vec_supported() && __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

static vec_switch vec_sw = {-1, "TG_NO_SIMD", tg__vec_supported};      /* the vector path */
static vec_switch avx512_sw = {-1, "TG_NO_AVX512", avx512_supported};  /* AVX-512 on top */

bool tg__isa_supported(tg__isa isa)
{
    switch (isa) {
    case TG__ISA_PORTABLE: return true;
    case TG__ISA_AVX2: return tg__vec_supported();
    case TG__ISA_AVX512: return avx512_supported();
    }
    return false;
}

tg__isa tg__isa_auto(void)
{
    if (!switch_auto(&vec_sw)) return TG__ISA_PORTABLE;
    return switch_auto(&avx512_sw) ? TG__ISA_AVX512 : TG__ISA_AVX2;
}

bool tg__vec_on(void) { return switch_on(&vec_sw); }
bool tg__vec_set(int mode) { return switch_set(&vec_sw, mode); }
bool tg__vec_avx512_on(void) { return tg__vec_on() && switch_on(&avx512_sw); }
bool tg__vec_set_avx512(int mode) { return switch_set(&avx512_sw, mode); }

#if TG_VEC

#include "vec_lanes.h"
#include "vec_math_inst.h"

/* ---- the maths ---- */

#define MAP(name, fn)                                                           \
    AVX2 void name(const float *x, float *y, int64_t n)                         \
    {                                                                           \
        FOR_LANES(i, n) {                                                       \
            __m256i m = tail_mask(REM < 8 ? REM : 8);                           \
            st(y + i, fn(ld(x + i, REM, m)), REM, m);                           \
        }                                                                       \
    }
MAP(tg__vec_exp, vexp)
MAP(tg__vec_erf, verf)
MAP(tg__vec_tanh, vtanh)

/* ---- GELU ---- */

/* GELU (vec_math.h), 16 lanes wide when tg__vec_avx512_on() */
AVX2 void tg__vec_gelu(const float *x, float *y, int64_t n, bool tanh_form)
{
    if (tg__vec_avx512_on()) gelu_row16(x, y, n, tanh_form);
    else gelu_row(x, y, n, tanh_form);
}

AVX2 void tg__vec_gelu_backward(const float *x, const float *dy, float *dx, int64_t n,
                                bool tanh_form, bool fresh)
{
    if (tg__vec_avx512_on()) gelu_backward_row16(x, dy, dx, n, tanh_form, fresh);
    else gelu_backward_row(x, dy, dx, n, tanh_form, fresh);
}

#endif /* TG_VEC */
