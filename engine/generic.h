/*
 * generic.h - write a kernel once, compile it for float and double.
 *
 * An op file reads from the top as a reader wants it: what the op computes,
 * the builder (with its shape checks), the forward, the backward, the
 * descriptor and the registry row. Its kernels, written once over TG_T, come
 * last: the file includes itself once per type at the end of the op proper
 * (engine/instantiate.h), and the self-included copy compiles only the
 * section under `#else`:
 *
 *     #ifndef TG_KERNELS  // ---------------------------------- the op proper
 *     #include "ops_internal.h"
 *     #include "generic.h"
 *     TG_KERNEL_DECL(static void, relu_run, (tg_node *n, bool backward));
 *
 *     tg_node *tg_relu(tg_graph *g, tg_node *x) { ... }        // builder
 *     static tg_status relu_forward(tg_node *n)                 // forward
 *     { TG_DISPATCH(n->value.dtype, relu_run)(n, false); return TG_OK; }
 *     ...                                                       // backward, descriptor
 *
 *     #define TG_SELF "relu.c"       // the kernels below, for float and double
 *     #include "instantiate.h"
 *
 *     #else  // ------------------------------ kernels, compiled once per type
 *     #include "generic.h"
 *     static void TG_F(relu_run)(tg_node *n, bool backward) {
 *         const TG_T *x = n->in[0]->value.data; ...  TG_M(exp)(x[i]) ...
 *     }
 *     #endif
 *
 * Outside the kernel section (TG_KERNELS undefined): TG_KERNEL_DECL(ret,
 * name, params) declares name_f32 and name_f64 (entry points whose
 * parameters do not mention TG_T), TG_DISPATCH(dtype, name) picks one.
 * Inside it: TG_T is the element type, TG_F(name) gives the type-suffixed
 * name (name_f32 / name_f64), TG_M(exp) the <math.h> function for TG_T
 * (expf / exp), TG_EPS its machine epsilon, TG_U the unsigned integer as wide
 * as TG_T (uint32_t / uint64_t: its bits as an integer).
 *
 * The generic kernels are the reference for every dtype. A faster kernel for
 * one dtype and one instruction set (float32 with AVX2 or AVX-512) lives in
 * ops/simd/ and is chosen in the op proper, beside TG_DISPATCH, never inside
 * a generic kernel: see ops/simd/vec.h for the one switch (tg__vec_on(),
 * tg__vec_avx512_on()) that picks the instruction set at run time.
 *
 * No include guard for the TG_T part: it is read once per instantiation.
 */
#ifndef TG_GENERIC_ONCE
#define TG_GENERIC_ONCE
/* Both instances of a kernel entry point, declared before the op proper
 * calls them (they are defined at the end of the file). */
#define TG_KERNEL_DECL(ret, name, params) ret name##_f32 params; ret name##_f64 params
/* The f32 or f64 instance of a kernel, chosen by dtype. */
#define TG_DISPATCH(dt, name) ((dt) == TG_F64 ? name##_f64 : name##_f32)
#endif

#ifdef TG_KERNELS
#undef TG_T
#undef TG_F
#undef TG_M
#undef TG_EPS
#undef TG_U
#if TG_KERNELS == 32
#  define TG_T float
#  define TG_F(name) name##_f32
#  define TG_M(fn) fn##f
#  define TG_EPS FLT_EPSILON
#  define TG_U uint32_t
#elif TG_KERNELS == 64
#  define TG_T double
#  define TG_F(name) name##_f64
#  define TG_M(fn) fn
#  define TG_EPS DBL_EPSILON
#  define TG_U uint64_t
#else
#  error "TG_KERNELS must be 32 or 64"
#endif
#endif
