/*
 * vec_rows.h - what the vector-kernel suites share (test_vec.c,
 * test_vec_kernels.c): a deterministic N(0, 1)-ish generator and the rows of
 * special values the kernels run on.
 */
#ifndef TG_VEC_ROWS_H
#define TG_VEC_ROWS_H

#include <stdint.h>

/* The generator's state; a test seeds it (tt_vec_rng_state = 42) before it draws. */
extern uint64_t tt_vec_rng_state;
/* The next value, about N(0, 1): the sum of 12 uniforms in [0, 1), less 6. */
float tt_vec_randn(void);

#define ROWS 14
/* Row r (0 .. ROWS - 1) of the special-value table, n entries into x: plain,
 * exp underflowing, masked (-inf) entries, fully masked, +inf, NaN, huge,
 * subnormal, a masked tail, constant, tiny, exp overflowing, a layer norm
 * cancellation, every fourth entry masked. */
void tt_vec_fill_row(float *x, int r, int64_t n);

#endif
