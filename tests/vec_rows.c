/*
 * vec_rows.c - see vec_rows.h.
 */
#include <math.h>

#include "vec_rows.h"

/* deterministic N(0, 1)-ish values (sum of uniforms), and uniforms in [0, 1) */
uint64_t tt_vec_rng_state;
static double unif(void)
{
    tt_vec_rng_state = tt_vec_rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(tt_vec_rng_state >> 11) / (double)(1ULL << 53);
}
float tt_vec_randn(void)
{
    double s = 0;
    for (int i = 0; i < 12; i++) s += unif();
    return (float)(s - 6);
}

/* Row r of the special-value table, n entries. */
void tt_vec_fill_row(float *x, int r, int64_t n)
{
    for (int64_t j = 0; j < n; j++) {
        float z = tt_vec_randn();
        switch (r) {
        case 0: x[j] = z; break;
        case 1: x[j] = 30 * z; break;                               /* exp underflows to 0 */
        case 2: x[j] = j % 3 == 1 ? -INFINITY : z; break;           /* masked entries */
        case 3: x[j] = -INFINITY; break;                            /* fully masked: NaN row */
        case 4: x[j] = j == n / 2 ? INFINITY : z; break;            /* +inf: NaN row */
        case 5: x[j] = j == n - 1 ? NAN : z; break;                 /* NaN in the tail */
        case 6: x[j] = j % 2 ? 1e30f * z : -1e30f; break;           /* huge */
        case 7: x[j] = 1e-40f * z; break;                           /* subnormal */
        case 8: x[j] = j == n - 1 ? -INFINITY : z; break;           /* masked tail entry */
        case 9: x[j] = 0.75f; break;                                /* constant row */
        case 10: x[j] = 1e-3f * z; break;
        case 11: x[j] = 95 + z; break;                              /* exp(x) would overflow */
        case 12: x[j] = 1000 + 0.01f * z; break;                    /* layer norm: cancellation */
        default: x[j] = j % 4 == 0 ? -INFINITY : 4 * z; break;
        }
    }
}
