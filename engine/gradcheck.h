/*
 * gradcheck.h - compare a graph's backward with central differences.
 *
 * The scalar checked is L = sum(out * r) for a fixed random r (so no VJP can
 * hide behind an all-ones upstream gradient), accumulated in double. Every
 * parameter node and every requires-grad input of the graph is perturbed,
 * element by element: numerical = (L(x+eps) - L(x-eps)) / (2 eps), compared
 * with the analytical gradient from one backward pass with dy = r:
 *     pass  iff  |a - n| <= atol + rtol * |n|     (torch.allclose)
 * Run it on an F64 graph with the defaults (torch.autograd.gradcheck's:
 * eps 1e-6, atol 1e-5, rtol 1e-3). In training mode the graph RNG is reset
 * before every evaluation, so dropout masks stay fixed.
 *
 * Kinks: ops that declare discrete decisions (relu signs, topk picks) are
 * watched; an element whose probe changes any decision is left out and
 * counted in `skipped`, so the check is tie-safe for any seed.
 */
#ifndef TG_GRADCHECK_H
#define TG_GRADCHECK_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a check is: told to the progress callback before each element. */
typedef struct tg_gradcheck_progress {
    const char *name;            /* the tensor's result name */
    int         tensor, tensors; /* its index (0-based) among the tensors checked */
    int64_t     element, elements;   /* elements of it probed so far / to probe */
} tg_gradcheck_progress;

typedef struct tg_gradcheck_opts {
    double   eps, atol, rtol;    /* 0 = default (1e-6, 1e-5, 1e-3) */
    uint64_t seed;               /* for r */
    int64_t  max_per_tensor;     /* check at most this many elements per tensor, spread
                                    evenly (0 = all) */
    /* optional: called before each element's probe (a progress display;
     * throttle it there), with progress_user */
    void   (*progress)(void *progress_user, const tg_gradcheck_progress *p);
    void    *progress_user;
} tg_gradcheck_opts;

typedef struct tg_gradcheck_result {
    char    name[160];           /* state_dict key or "input.<name>" */
    int     rank;
    int64_t shape[TG_MAX_RANK];
    double  max_abs_err;         /* max |a - n| */
    double  max_rel_err;         /* max |a - n| / max(|a|, |n|, atol/rtol) */
    double  worst_ratio;         /* max |a - n| / (atol + rtol |n|); pass iff <= 1 */
    int64_t worst_index;         /* flat index of the worst element */
    double  worst_analytical, worst_numerical;
    int64_t checked, skipped;    /* elements compared / left out at kinks */
    bool    pass;
} tg_gradcheck_result;

/* Check every gradient of `out` (which must depend on something that requires
 * grad). Writes up to max_results results (one per parameter / input, in node
 * order) and their count to *n_results; *all_pass is false if any fails.
 * Returns TG_OK when the check ran (even if it failed), an error if it could
 * not run (forward or backward error, out of memory). */
tg_status tg_gradcheck(tg_graph *g, tg_node *out, const tg_gradcheck_opts *opts,
                       tg_gradcheck_result *results, int max_results, int *n_results,
                       bool *all_pass);

#ifdef __cplusplus
}
#endif
#endif
