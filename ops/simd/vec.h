/*
 * vec.h - library-private vectorised float32 kernels for the row-wise ops
 * (softmax, log_softmax, layer_norm, GELU) and the vector maths they need
 * (exp, erf, tanh). Not installed, not exported from libtgraph.so (tg__).
 *
 * The op files keep their portable generic kernels (engine/generic.h, F32 and
 * F64) as the reference; for F32 with contiguous rows they call the routines
 * below instead when tg__vec_on() says so. The routines are AVX2 + FMA,
 * chosen at run time with __builtin_cpu_supports; setting the environment
 * variable TG_NO_SIMD=1 (read once) or calling tg__vec_set(0) forces the
 * portable path everywhere, for tests and benchmarks that compare the two.
 *
 * Accuracy (checked by tests/test_vec.c): exp within 2 ulp of libm expf over
 * the whole float range, with exp(-inf) = 0, exp(+inf) = +inf, exp(NaN) = NaN,
 * subnormal results and overflow as expf; erf within about 1e-7 absolute of
 * erf(); tanh within a few ulp. The row kernels accumulate their sums in
 * double, as the portable ones do, and follow the same NaN / inf rules: an
 * all -inf softmax row (every entry masked) is a NaN row, as in PyTorch.
 *
 * Not here: F64 (stays portable), strided rows (softmax over a non-last dim
 * keeps the portable path), AVX-512 (but for GELU, through ops/simd/vec_math.h,
 * and topk, ops/simd/vec_topk.c).
 */
#ifndef TG_VEC_H
#define TG_VEC_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TG_VEC: the vector routines exist (x86-64 with GCC or clang); elsewhere
 * only the switch below does, and tg__vec_on() is always false. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TG_VEC 1
#else
#define TG_VEC 0
#endif

/* ---- the one choice of instruction set ----
 * What the CPU has, less what the environment turns off: TG_NO_SIMD
 * (non-empty, not "0": no vector kernel anywhere, the portable ones run) and
 * TG_NO_AVX512 (AVX2 at most). Every vector kernel starts from it: the row
 * kernels' switch below (tg__vec_on, tg__vec_avx512_on) and the GEMM's
 * microkernel (ops/gemm.c, where TG_GEMM_KERNEL=c|avx2|avx512 can also name
 * one). Tests and benchmarks force a path through the setters below and
 * tg__gemm_kernel_set (ops/gemm_internal.h). */
typedef enum tg__isa { TG__ISA_PORTABLE, TG__ISA_AVX2, TG__ISA_AVX512 } tg__isa;
/* The CPU has isa (AVX2: with FMA and POPCNT; AVX-512: F, on top of AVX2). */
bool tg__isa_supported(tg__isa isa);
/* The best isa the CPU has that the environment allows (read at each call). */
tg__isa tg__isa_auto(void);

/* True when the vector routines are in use: the CPU has AVX2 and FMA, and
 * neither TG_NO_SIMD (non-empty, not "0") nor tg__vec_set(0) turned them off. */
bool tg__vec_on(void);
/* mode 0: portable path everywhere; 1: vector path (false, and nothing
 * changes, if the CPU lacks AVX2/FMA); -1: back to the automatic choice.
 * Not thread-safe against kernels running at the same time. */
bool tg__vec_set(int mode);
/* The CPU has what the vector path needs (whatever the switch says). */
bool tg__vec_supported(void);

/* AVX-512 (F) on top, for the kernels that have such a version (GELU, topk): on
 * when tg__vec_on(), the CPU has it, and neither TG_NO_AVX512 (non-empty,
 * not "0") nor tg__vec_set_avx512(0) turned it off. Modes as tg__vec_set
 * (1 is refused when the CPU lacks it); the AVX2 kernels run in its place. */
bool tg__vec_avx512_on(void);
bool tg__vec_set_avx512(int mode);

#if TG_VEC
/* The vector maths, elementwise over n floats (y may alias x). Callable only
 * when tg__vec_supported(). */
void tg__vec_exp(const float *x, float *y, int64_t n);
void tg__vec_erf(const float *x, float *y, int64_t n);
void tg__vec_tanh(const float *x, float *y, int64_t n);

/* ---- row kernels; all rows contiguous, n >= 1 ---- */

/* y = softmax(scale * x) over one row of n */
void tg__vec_softmax_row(const float *x, float *y, int64_t n, float scale);
/* The same, with its statistics: *max = max(scale * x) and *rsum = 1 / sum
 * exp(scale * x - max) come out (given false) or go in (given true: y is
 * rebuilt bit for bit as the call that made them made it) */
void tg__vec_softmax_row_stats(const float *x, float *y, int64_t n, float scale, float *max,
                               double *rsum, bool given);
/* sum x * y over n, in double */
double tg__vec_dot(const float *x, const float *y, int64_t n);
/* dx += scale * y * (dy - sum(dy * y)) */
void tg__vec_softmax_row_backward(const float *y, const float *dy, float *dx, int64_t n,
                                  float scale);
/* (AVX-512, when tg__vec_avx512_on()) up to 16 query rows of a fused
 * attention's head of n <= 16 keys: rows r < rows of Q (q + r * ldq, E
 * entries) against K [n, E] (row stride ldk) give scores s; then
 * P = softmax(scale s) over each row's valid entries (the first i0 + r + 1
 * when causal, else n), 0 after, is written transposed: pt [n, 16], P(r, j)
 * at pt[16 j + r]. st holds 2 doubles per row, (max, 1 / sum): written, or
 * read when given (then P is rebuilt bit for bit). qt: scratch of E * 16. */
void tg__vec_attn_rows16(const float *q, int64_t ldq, int64_t E, const float *k,
                         int64_t ldk, int64_t rows, int64_t n, int64_t i0, bool causal,
                         float scale, double *st, bool given, float *pt, float *qt);
/* y[r] (row stride ldy, D entries) = P V for r < rows <= 16, from
 * tg__vec_attn_rows16's pt and V [n, D] (row stride ldv): the arithmetic of
 * tg__vec_gemm_small (a chain over the keys in order), so the same bits */
void tg__vec_attn_pv16(const float *pt, int64_t rows, int64_t n, const float *v, int64_t ldv,
                       int64_t D, float *y, int64_t ldy);
/* y = x - max - log(sum(exp(x - max))) */
void tg__vec_log_softmax_row(const float *x, float *y, int64_t n);
/* dx += dy - exp(y) * sum(dy) */
void tg__vec_log_softmax_row_backward(const float *y, const float *dy, float *dx, int64_t n);

/* (ops/simd/vec_gemm.c) C[M, N] = alpha * A B + beta * C (beta == 0: C not read) for short rows:
 * A(i, p) = A[i * rs_a + p * cs_a], B row-major [K, N] (ldb), C row-major
 * (ldc). Plain FMA chains with no packing: for the fused attention's heads of
 * at most 64, where a packing GEMM spends more on set-up than on the product. */
void tg__vec_gemm_small(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                        int64_t rs_a, int64_t cs_a, const float *B, int64_t ldb, float beta,
                        float *C, int64_t ldc);

/* bt [K, N] (row-major) = the first K columns of B [N, ldb], transposed, for
 * N a multiple of 8: 8 x 8 blocks in registers (the shallow heads' K^T, V^T). */
void tg__vec_transpose_small(const float *B, int64_t ldb, int64_t N, int64_t K, float *bt);

/* C[M, N] = alpha * A B^T + beta * C (beta == 0: C not read), A [M, K] and
 * B [N, K] row-major: dot products over contiguous depth, for the same heads. */
void tg__vec_gemm_nt_small(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                           int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                           int64_t ldc);

/* (ops/simd/vec_gemm.c; AVX-512, when tg__vec_avx512_on()) C[M, N] = alpha * A B^T
 * + beta * C (beta == 0: C not read) for 1 <= N <= 16, A [M, K] and B [N, K]
 * row-major: B^T into bt [K, 16] (tg__vec_transpose16), then each row of
 * C one register of FMAs in depth order (the tiny heads' Q K^T and dy V^T). */
void tg__vec_gemm_nt16(int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                       int64_t ldc, float *bt);
/* (ops/simd/vec_gemm.c; AVX-512) bt [K, 16] (row stride ldbt) = B [N, K] (row
 * stride ldb) transposed, N <= 16: lanes past N zero (ldbt >= 16) or not
 * written (ldbt < 16). 16 x 16 tiles in registers. */
void tg__vec_transpose16(const float *B, int64_t ldb, int64_t N, int64_t K, float *bt,
                         int64_t ldbt);

/* (ops/simd/vec_dropout.c) Dropout over elements [i0, i0 + n) of a tensor, the mask of tg__drop_bits
 * (ops/ops_internal.h) with this key and threshold (element kept when its
 * bits >= threshold, threshold < 2^32), m = keep ? scale : 0:
 *   mode 0: dst = src * m;  mode 1: dst += src * m;  mode 2: dst = 0 + src * m */
void tg__vec_dropout(const float *src, float *dst, int64_t n, int64_t i0, uint64_t key,
                     uint64_t threshold, float scale, int mode);

/* layer norm of one row of N: y = (x - mean) * rstd * gamma + beta (gamma,
 * beta may be NULL); *mean, *rstd get the saved statistics */
void tg__vec_ln_row(const float *x, float *y, const float *gamma, const float *beta, int64_t N,
                    double eps, double *mean, double *rstd);
/* dx += rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = dy * gamma
 * (fresh: dx = 0 + that, dx not read; the backward's first writer) */
void tg__vec_ln_row_backward(const float *x, const float *dy, float *dx, const float *gamma,
                             int64_t N, double mean, double rstd, bool fresh);
/* acc_g[j] += dy[j] * (x[j] - mean) * rstd,  acc_b[j] += dy[j]  (double) for j in [0, n) */
void tg__vec_ln_param_row(const float *x, const float *dy, double mean, double rstd,
                          double *acc_g, double *acc_b, int64_t n);

/* acc[j] += x[j], j < n, each sum in double */
void tg__vec_acc_row(const float *x, double *acc, int64_t n);

/* top-k of one row of n floats, 1 <= k <= min(n, 64), n <= UINT32_MAX:
 * (v, ix)[j * os] for j < k = the k first of x in topk's rank order
 * (ops/topk.c), bit for bit as the portable kernel (AVX-512 when
 * tg__vec_avx512_on(), else AVX2) */
void tg__vec_topk_row_f32(const float *x, int64_t n, float *v, int64_t *ix, int64_t k,
                          int64_t os, bool largest);

/* GELU over n elements, exact (erf) or tanh form: y = gelu(x); dx += dy * gelu'(x)
 * (fresh: dx = 0 + dy * gelu'(x), dx not read) */
void tg__vec_gelu(const float *x, float *y, int64_t n, bool tanh_form);
void tg__vec_gelu_backward(const float *x, const float *dy, float *dx, int64_t n,
                           bool tanh_form, bool fresh);
#endif /* TG_VEC */

#ifdef __cplusplus
}
#endif
#endif
