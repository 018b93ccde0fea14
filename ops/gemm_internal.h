/*
 * gemm_internal.h - library-private knobs of the GEMM kernel (ops/gemm.c):
 * tests and benchmarks force a microkernel or a path with them. Not
 * installed, not exported from libtgraph.so (tg__ names).
 */
#ifndef TG_GEMM_INTERNAL_H
#define TG_GEMM_INTERNAL_H

#include <stdbool.h>

#include "gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg__gemm_kernel {
    TG__GEMM_KERNEL_C,        /* portable C microkernel */
    TG__GEMM_KERNEL_AVX2,     /* x86-64 AVX2 + FMA */
    TG__GEMM_KERNEL_AVX512,   /* x86-64 AVX-512F */
    TG__GEMM_KERNEL_COUNT
} tg__gemm_kernel;
typedef enum tg__gemm_path {
    TG__GEMM_PATH_AUTO,       /* chosen by shape */
    TG__GEMM_PATH_SMALL,      /* unpacked A, B direct or packed whole (falls back to PACKED if too big) */
    TG__GEMM_PATH_PACKED,     /* BLIS-style packed and cache-blocked */
    TG__GEMM_PATH_REF,        /* plain C loops, no buffers (the allocation-failure fallback) */
    TG__GEMM_PATH_COUNT
} tg__gemm_path;
/* The kernel in use: the one for the instruction set every vector kernel
 * uses (tg__isa_auto, ops/simd/vec.h: the CPU's best, less TG_NO_SIMD /
 * TG_NO_AVX512) unless forced, by the call below or the environment variable
 * TG_GEMM_KERNEL=c|avx2|avx512 (read once). */
tg__gemm_kernel tg__gemm_kernel_get(void);
/* Force kernel k; returns false (and changes nothing) if the CPU lacks it.
 * k == TG__GEMM_KERNEL_COUNT goes back to the automatic choice. Not thread-safe
 * against GEMMs running at the same time. */
bool tg__gemm_kernel_set(tg__gemm_kernel k);
const char *tg__gemm_kernel_name(tg__gemm_kernel k);
/* Force a path for every later call (AUTO = by shape). */
void tg__gemm_path_set(tg__gemm_path p);

#ifdef __cplusplus
}
#endif
#endif
