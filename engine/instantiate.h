/*
 * instantiate.h - compile the kernel section of an op file once for float
 * and once for double (engine/generic.h explains the layout). The op file
 * ends its op proper with
 *
 *     #define TG_SELF "relu.c"
 *     #include "instantiate.h"
 *
 * which includes TG_SELF with TG_KERNELS 32, then 64 (each pass compiles only
 * the file's `#else` part: the kernels over TG_T), and undefines TG_SELF. No
 * include guard: one use per op file.
 */
#ifndef TG_SELF
#error "instantiate.h: define TG_SELF as the including file's name first"
#endif
#define TG_KERNELS 32
#include TG_SELF
#undef TG_KERNELS
#define TG_KERNELS 64
#include TG_SELF
#undef TG_KERNELS
#undef TG_SELF
