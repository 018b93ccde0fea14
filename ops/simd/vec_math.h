/*
 * vec_math.h - the vector maths of ops/simd/vec.c (exp, erf, tanh, GELU rows),
 * written once and included once per vector width: not a header to include
 * anywhere else. The includer defines, for its instruction set,
 *
 *   VM_ATTR          the target attribute of every function here
 *   VM_SUF(name)     name with the width's suffix
 *   VM_F, VM_I       float and int32 vector types; VM_MASK a compare's lane mask,
 *                    VM_TAILM a row tail's
 *   VM_LANES         floats per vector
 *   arithmetic       VM_SET1 VM_ADD VM_SUB VM_MUL VM_DIV VM_MIN VM_MAX
 *                    VM_FMA(a, b, c) = a b + c   VM_FNMA(a, b, c) = c - a b
 *                    VM_ROUND (to nearest)  VM_CVT (to int32, nearest)
 *                    VM_ABS  VM_COPYSIGN(a, b) = |a| with b's sign
 *   int lanes        VM_ISET1 VM_IADD VM_ISUB VM_ISRA1 (>> 1)  VM_BITS_F (<< 23, as float)
 *   masks            VM_LT VM_GT VM_GE (ordered)  VM_NAN
 *                    VM_BLEND(m, a, b) = m ? b : a   VM_ZERO_IF(m, a) = m ? 0 : a
 *   rows             VM_TAIL(rem) a VM_TAILM of min(rem, VM_LANES) lanes
 *                    VM_LOAD(p, rem, m)  VM_STORE(p, v, rem, m)  (rem >= VM_LANES: whole)
 *
 * and vec_math.h #undefs them all at its end, ready for the next width.
 * The same operations in the same order on every width, so AVX2 and
 * AVX-512 give the same bits lane for lane. The coefficients and the
 * methods are described at the top of ops/simd/vec.c.
 */

/* 2^k for integer-valued k in [-126, 127] */
VM_ATTR static inline VM_F VM_SUF(pow2i)(VM_I k) { return VM_BITS_F(VM_IADD(k, VM_ISET1(127))); }

VM_ATTR static inline VM_F VM_SUF(vexp)(VM_F x)
{
    /* below -104 the result is 0: those lanes compute exp(0) and are zeroed
     * at the end, so they never make subnormal products (microcode assists:
     * masked -inf entries of a softmax row would pay for them) */
    VM_MASK under = VM_LT(x, VM_SET1(-104.0f));
    VM_F xc = VM_ZERO_IF(under, VM_MIN(x, VM_SET1(89.0f)));   /* NaN -> 89, fixed below */
    VM_F n = VM_ROUND(VM_MUL(xc, VM_SET1(1.44269504088896341f)));   /* [-150, 128] */
    /* r = x - n ln2; n * 0.693359375 is exact, x minus it too (Sterbenz) */
    VM_F r = VM_FNMA(n, VM_SET1(0.693359375f), xc);
    r = VM_FNMA(n, VM_SET1(-2.12194440e-4f), r);
    VM_F q = VM_SET1(1.978927886837384e-4f);
    q = VM_FMA(q, r, VM_SET1(1.3945740294920763e-3f));
    q = VM_FMA(q, r, VM_SET1(8.333503672349555e-3f));
    q = VM_FMA(q, r, VM_SET1(4.166628048542627e-2f));
    q = VM_FMA(q, r, VM_SET1(1.6666665820666546e-1f));
    q = VM_FMA(q, r, VM_SET1(5.000000071628705e-1f));
    VM_F p = VM_ADD(VM_FMA(q, VM_MUL(r, r), r), VM_SET1(1.0f));
    /* times 2^n as 2^h * 2^(n-h): each factor normal, one rounding at most */
    VM_I ni = VM_CVT(n);
    VM_I h = VM_ISRA1(ni);
    VM_F y = VM_MUL(VM_MUL(p, VM_SUF(pow2i)(h)), VM_SUF(pow2i)(VM_ISUB(ni, h)));
    return VM_BLEND(VM_NAN(x), VM_ZERO_IF(under, y), x);
}

VM_ATTR static inline VM_F VM_SUF(verf)(VM_F x)
{
    VM_F t = VM_ABS(x);
    /* |x| <= 0.93: x + x P(x^2) */
    VM_F s = VM_MUL(x, x);
    VM_F p = VM_SET1(-5.953882389579807e-4f);
    p = VM_FMA(p, s, VM_SET1(4.985974326416634e-3f));
    p = VM_FMA(p, s, VM_SET1(-2.6761749321472336e-2f));
    p = VM_FMA(p, s, VM_SET1(1.128168366892017e-1f));
    p = VM_FMA(p, s, VM_SET1(-3.7612481276854315e-1f));
    p = VM_FMA(p, s, VM_SET1(1.2837914776866527e-1f));
    VM_F small = VM_FMA(p, x, x);
    /* above: 1 - exp(F(|x|)), F ~ log erfc on [0.92, 4] */
    VM_F tc = VM_MIN(t, VM_SET1(4.0f));
    VM_F f = VM_SET1(-2.1161906517908058e-5f);
    f = VM_FMA(f, tc, VM_SET1(4.352188861983519e-4f));
    f = VM_FMA(f, tc, VM_SET1(-4.17464302110121e-3f));
    f = VM_FMA(f, tc, VM_SET1(2.512862459017584e-2f));
    f = VM_FMA(f, tc, VM_SET1(-1.0829394662927744e-1f));
    f = VM_FMA(f, tc, VM_SET1(-6.333346530130428e-1f));
    f = VM_FMA(f, tc, VM_SET1(-1.1295208233348015f));
    f = VM_FMA(f, tc, VM_SET1(1.7587456230942742e-4f));
    VM_F big = VM_COPYSIGN(VM_SUB(VM_SET1(1.0f), VM_SUF(vexp)(f)), x);
    VM_F y = VM_BLEND(VM_GT(t, VM_SET1(0.93f)), small, big);
    return VM_BLEND(VM_NAN(x), y, x);
}

VM_ATTR static inline VM_F VM_SUF(vtanh)(VM_F x)
{
    VM_F t = VM_ABS(x);
    /* |x| < 0.625: x + x^3 P(x^2) */
    VM_F s = VM_MUL(x, x);
    VM_F p = VM_SET1(-5.704990372470878e-3f);
    p = VM_FMA(p, s, VM_SET1(2.063909061959666e-2f));
    p = VM_FMA(p, s, VM_SET1(-5.373971626606085e-2f));
    p = VM_FMA(p, s, VM_SET1(1.3331442214843386e-1f));
    p = VM_FMA(p, s, VM_SET1(-3.333328194277489e-1f));
    VM_F small = VM_COPYSIGN(VM_FMA(VM_MUL(p, s), x, x), x);   /* tanh(-0) = -0 */
    /* above: 1 - 2 / (e^(2|x|) + 1) */
    VM_F e = VM_SUF(vexp)(VM_ADD(VM_MIN(t, VM_SET1(10.0f)), VM_MIN(t, VM_SET1(10.0f))));
    VM_F big = VM_COPYSIGN(VM_SUB(VM_SET1(1.0f), VM_DIV(VM_SET1(2.0f), VM_ADD(e, VM_SET1(1.0f)))),
                           x);
    VM_F y = VM_BLEND(VM_GE(t, VM_SET1(0.625f)), small, big);
    return VM_BLEND(VM_NAN(x), y, x);
}

/* GELU forward over a row, the portable kernel's formulas and order:
 *   none: y = x * 0.5 * (1 + erf(x / sqrt 2))
 *   tanh: y = 0.5 * x * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
VM_ATTR static inline void VM_SUF(gelu_row)(const float *x, float *y, int64_t n, bool tanh_form)
{
    for (int64_t i = 0; i < n; i += VM_LANES) {
        const int64_t rem = n - i;
        const VM_TAILM m = VM_TAIL(rem);
        VM_F v = VM_LOAD(x + i, rem, m), r;
        if (tanh_form) {
            VM_F v3 = VM_MUL(VM_MUL(VM_MUL(VM_SET1(GELU_C), v), v), v);
            VM_F u = VM_MUL(VM_SET1(GELU_K_TANH), VM_ADD(v, v3));
            r = VM_MUL(VM_MUL(VM_SET1(0.5f), v), VM_ADD(VM_SET1(1.0f), VM_SUF(vtanh)(u)));
        } else {
            VM_F e = VM_SUF(verf)(VM_MUL(v, VM_SET1(GELU_SQRT1_2)));
            r = VM_MUL(VM_MUL(v, VM_SET1(0.5f)), VM_ADD(VM_SET1(1.0f), e));
        }
        VM_STORE(y + i, r, rem, m);
    }
}

/* GELU backward over a row, dx += dy * y'(x) (fresh: dx not read):
 *   none: y' = Phi(x) + x phi(x),  phi(x) = exp(-x^2/2) / sqrt(2 pi)
 *   tanh: y' = (1 + t)/2 + x/2 (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2) */
VM_ATTR static inline void VM_SUF(gelu_backward_row)(const float *x, const float *dy, float *dx,
                                              int64_t n, bool tanh_form, bool fresh)
{
    for (int64_t i = 0; i < n; i += VM_LANES) {
        const int64_t rem = n - i;
        const VM_TAILM m = VM_TAIL(rem);
        VM_F v = VM_LOAD(x + i, rem, m), d;
        if (tanh_form) {
            VM_F v3 = VM_MUL(VM_MUL(VM_MUL(VM_SET1(GELU_C), v), v), v);
            VM_F t = VM_SUF(vtanh)(VM_MUL(VM_SET1(GELU_K_TANH), VM_ADD(v, v3)));
            VM_F du = VM_MUL(VM_SET1(GELU_K_TANH),
                             VM_ADD(VM_SET1(1.0f), VM_MUL(VM_MUL(VM_SET1(3 * GELU_C), v), v)));
            VM_F a = VM_MUL(VM_SET1(0.5f), VM_ADD(VM_SET1(1.0f), t));
            VM_F b = VM_MUL(VM_MUL(VM_MUL(VM_SET1(0.5f), v), VM_SUB(VM_SET1(1.0f), VM_MUL(t, t))),
                            du);
            d = VM_ADD(a, b);
        } else {
            VM_F cdf = VM_MUL(VM_SET1(0.5f),
                              VM_ADD(VM_SET1(1.0f), VM_SUF(verf)(VM_MUL(v, VM_SET1(GELU_SQRT1_2)))));
            VM_F pdf = VM_MUL(VM_SUF(vexp)(VM_MUL(VM_MUL(VM_SET1(-0.5f), v), v)),
                              VM_SET1(GELU_INV_SQRT_2PI));
            d = VM_ADD(cdf, VM_MUL(v, pdf));
        }
        VM_F g = VM_LOAD(dy + i, rem, m);
        VM_F base = fresh ? VM_SET1(0.0f) : VM_LOAD(dx + i, rem, m);
        VM_STORE(dx + i, VM_ADD(base, VM_MUL(g, d)), rem, m);
    }
}

/* the parameters, undefined for the next instantiation */
#undef VM_ATTR
#undef VM_SUF
#undef VM_F
#undef VM_I
#undef VM_MASK
#undef VM_TAILM
#undef VM_LANES
#undef VM_SET1
#undef VM_ADD
#undef VM_SUB
#undef VM_MUL
#undef VM_DIV
#undef VM_MIN
#undef VM_MAX
#undef VM_FMA
#undef VM_FNMA
#undef VM_ROUND
#undef VM_CVT
#undef VM_ABS
#undef VM_COPYSIGN
#undef VM_ISET1
#undef VM_IADD
#undef VM_ISUB
#undef VM_ISRA1
#undef VM_BITS_F
#undef VM_LT
#undef VM_GT
#undef VM_GE
#undef VM_NAN
#undef VM_BLEND
#undef VM_ZERO_IF
#undef VM_TAIL
#undef VM_LOAD
#undef VM_STORE
