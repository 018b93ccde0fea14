/*
 * generic.h - write a kernel once, compile it for float and double.
 *
 * An op file keeps its kernels in a section guarded by TG_KERNELS and
 * includes itself twice at the end of its normal part:
 *
 *     #ifdef TG_KERNELS            // ---- kernels, compiled once per type
 *     #include "generic.h"
 *     static tg_status TG_F(relu_forward)(tg_node *n) {
 *         const TG_T *x = n->in[0]->value.data; ...  TG_M(exp)(x[i]) ...
 *     }
 *     #else                        // ---- builder, descriptor, dispatch
 *     ...
 *     #define TG_KERNELS 32
 *     #include "relu.c"
 *     #undef TG_KERNELS
 *     #define TG_KERNELS 64
 *     #include "relu.c"
 *     #undef TG_KERNELS
 *     static tg_status relu_forward(tg_node *n)
 *     { return TG_DISPATCH(n->value.dtype, relu_forward)(n); }
 *     #endif
 *
 * Inside the kernel section: TG_T is the element type, TG_F(name) gives the
 * type-suffixed name (name_f32 / name_f64), TG_M(exp) the <math.h> function
 * for TG_T (expf / exp), TG_EPS its machine epsilon. No include guard: it is
 * meant to be read once per instantiation.
 */
#undef TG_T
#undef TG_F
#undef TG_M
#undef TG_EPS
#if TG_KERNELS == 32
#  define TG_T float
#  define TG_F(name) name##_f32
#  define TG_M(fn) fn##f
#  define TG_EPS FLT_EPSILON
#elif TG_KERNELS == 64
#  define TG_T double
#  define TG_F(name) name##_f64
#  define TG_M(fn) fn
#  define TG_EPS DBL_EPSILON
#else
#  error "TG_KERNELS must be 32 or 64"
#endif

#ifndef TG_DISPATCH
/* The f32 or f64 instance of a kernel, chosen by dtype. */
#  define TG_DISPATCH(dt, name) ((dt) == TG_F64 ? name##_f64 : name##_f32)
#endif
