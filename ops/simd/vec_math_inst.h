/*
 * vec_math_inst.h - the vector maths of vec_math.h instantiated for AVX2
 * (vexp, verf, vtanh, gelu_row, gelu_backward_row) and AVX-512 (the same
 * names with 16: vexp16, ...), all static inline: each kernel file of
 * ops/simd/ that needs them includes this once, after vec_lanes.h.
 * Library-private; not a header to include outside ops/simd/.
 */
/* AVX2 instances: vexp, verf, vtanh, gelu_row, gelu_backward_row */
#define GELU_SQRT1_2 0.70710678118654752440f        /* 1/sqrt(2) */
#define GELU_INV_SQRT_2PI 0.39894228040143267794f   /* 1/sqrt(2 pi) */
#define GELU_K_TANH 0.79788456080286535588f         /* sqrt(2/pi) */
#define GELU_C 0.044715f

#define VM_ATTR AVX2
#define VM_SUF(name) name
#define VM_F v8f
#define VM_I __m256i
#define VM_MASK v8f
#define VM_TAILM __m256i
#define VM_LANES 8
#define VM_SET1(c) _mm256_set1_ps(c)
#define VM_ADD _mm256_add_ps
#define VM_SUB _mm256_sub_ps
#define VM_MUL _mm256_mul_ps
#define VM_DIV _mm256_div_ps
#define VM_MIN _mm256_min_ps
#define VM_MAX _mm256_max_ps
#define VM_FMA _mm256_fmadd_ps
#define VM_FNMA _mm256_fnmadd_ps
#define VM_ROUND(x) _mm256_round_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VM_CVT _mm256_cvtps_epi32
#define VM_ABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (x))
#define VM_COPYSIGN(a, b) _mm256_or_ps(VM_ABS(a), _mm256_and_ps(_mm256_set1_ps(-0.0f), (b)))
#define VM_ISET1 _mm256_set1_epi32
#define VM_IADD _mm256_add_epi32
#define VM_ISUB _mm256_sub_epi32
#define VM_ISRA1(i) _mm256_srai_epi32((i), 1)
#define VM_BITS_F(i) _mm256_castsi256_ps(_mm256_slli_epi32((i), 23))
#define VM_LT(a, b) _mm256_cmp_ps((a), (b), _CMP_LT_OQ)
#define VM_GT(a, b) _mm256_cmp_ps((a), (b), _CMP_GT_OQ)
#define VM_GE(a, b) _mm256_cmp_ps((a), (b), _CMP_GE_OQ)
#define VM_NAN(x) _mm256_cmp_ps((x), (x), _CMP_UNORD_Q)
#define VM_BLEND(m, a, b) _mm256_blendv_ps((a), (b), (m))
#define VM_ZERO_IF(m, a) _mm256_andnot_ps((m), (a))
#define VM_TAIL(rem) tail_mask((rem) < 8 ? (rem) : 8)
#define VM_LOAD(p, rem, m) ld((p), (rem), (m))
#define VM_STORE(p, v, rem, m) st((p), (v), (rem), (m))
#include "vec_math.h"   /* (it #undefs the VM_ macros) */

/* AVX-512 instances, the same code 16 lanes wide: vexp16, ..., gelu_row16 */
#define VM_ATTR AVX512
#define VM_SUF(name) name##16
#define VM_F __m512
#define VM_I __m512i
#define VM_MASK __mmask16
#define VM_TAILM __mmask16
#define VM_LANES 16
#define VM_SET1(c) _mm512_set1_ps(c)
#define VM_ADD _mm512_add_ps
#define VM_SUB _mm512_sub_ps
#define VM_MUL _mm512_mul_ps
#define VM_DIV _mm512_div_ps
#define VM_MIN _mm512_min_ps
#define VM_MAX _mm512_max_ps
#define VM_FMA _mm512_fmadd_ps
#define VM_FNMA _mm512_fnmadd_ps
#define VM_ROUND(x) _mm512_roundscale_ps((x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VM_CVT _mm512_cvtps_epi32
#define VM_ABS(x) _mm512_abs_ps(x)
#define VM_COPYSIGN(a, b)                                                                 \
    _mm512_castsi512_ps(_mm512_or_epi32(_mm512_castps_si512(_mm512_abs_ps(a)),             \
                                        _mm512_and_epi32(_mm512_set1_epi32(INT32_MIN),     \
                                                         _mm512_castps_si512(b))))
#define VM_ISET1 _mm512_set1_epi32
#define VM_IADD _mm512_add_epi32
#define VM_ISUB _mm512_sub_epi32
#define VM_ISRA1(i) _mm512_srai_epi32((i), 1)
#define VM_BITS_F(i) _mm512_castsi512_ps(_mm512_slli_epi32((i), 23))
#define VM_LT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_LT_OQ)
#define VM_GT(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GT_OQ)
#define VM_GE(a, b) _mm512_cmp_ps_mask((a), (b), _CMP_GE_OQ)
#define VM_NAN(x) _mm512_cmp_ps_mask((x), (x), _CMP_UNORD_Q)
#define VM_BLEND(m, a, b) _mm512_mask_blend_ps((m), (a), (b))
#define VM_ZERO_IF(m, a) _mm512_maskz_mov_ps((__mmask16)~(m), (a))
#define VM_TAIL(rem) ((rem) >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (rem)) - 1))
#define VM_LOAD(p, rem, m) _mm512_maskz_loadu_ps((m), (p))
#define VM_STORE(p, v, rem, m) _mm512_mask_storeu_ps((p), (m), (v))
#include "vec_math.h"   /* (it #undefs the VM_ macros) */
