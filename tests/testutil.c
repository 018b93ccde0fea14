/*
 * testutil.c - helpers for the Criterion suites (see testutil.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"

tg_tensor *tt_load(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", TT_FIXTURES, dir, file);
    tg_tensor *t = NULL;
    tg_status st = tg_npy_load(path, &t);
    cr_assert(st == TG_OK, "cannot load fixture %s: %s", path, tg_last_error());
    return t;
}

bool tt_exists(const char *dir, const char *file)
{
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s/%s", TT_FIXTURES, dir, file);
    return stat(path, &sb) == 0;
}

void tt_assert_close(const tg_tensor *got, const tg_tensor *want, double atol, double rtol,
                     const char *what)
{
    char a[128], b[128];
    cr_assert(got && want, "%s: missing tensor", what);
    cr_assert(tg_tensor_same_shape(got, want), "%s: shape %s, expected %s", what,
              tg_shape_str(got->rank, got->shape, a, sizeof a),
              tg_shape_str(want->rank, want->shape, b, sizeof b));
    double worst = 0, worst_g = 0, worst_w = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < want->numel; i++) {
        double g = tg_tensor_get(got, i), w = tg_tensor_get(want, i);
        if (isnan(w) || isnan(g)) {
            cr_assert(isnan(w) && isnan(g), "%s: element %lld is %g, expected %g", what,
                      (long long)i, g, w);
            continue;
        }
        if (isinf(w) || isinf(g)) {
            cr_assert(g == w, "%s: element %lld is %g, expected %g", what, (long long)i, g, w);
            continue;
        }
        double ratio = fabs(g - w) / (atol + rtol * fabs(w));
        if (ratio > worst) {
            worst = ratio;
            at = i;
            worst_g = g;
            worst_w = w;
        }
    }
    cr_assert(worst <= 1.0, "%s: element %lld is %.9g, expected %.9g (|diff| %.3g > atol %g + "
              "rtol %g * |expected|)", what, (long long)at, worst_g, worst_w,
              fabs(worst_g - worst_w), atol, rtol);
}

int tt_gradcheck(tg_graph *g, tg_node *out, uint64_t seed)
{
    tg_gradcheck_result res[64];
    int n = 0;
    bool ok = false;
    tg_gradcheck_opts o = {.seed = seed};
    cr_assert(tg_graph_error(g) == NULL, "graph error: %s", tg_graph_error(g));
    tg_status st = tg_gradcheck(g, out, &o, res, 64, &n, &ok);
    cr_assert(st == TG_OK, "gradcheck could not run: %s", tg_last_error());
    cr_assert(n > 0, "gradcheck checked nothing");
    if (!ok) {
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  %-40s worst rel %.3g (a=%.9g n=%.9g at %lld) %s\n", res[i].name,
                    res[i].max_rel_err, res[i].worst_analytical, res[i].worst_numerical,
                    (long long)res[i].worst_index, res[i].pass ? "ok" : "FAIL");
    }
    for (int i = 0; i < n; i++) {
        cr_expect(res[i].checked > 0, "%s: no element checked", res[i].name);
        cr_expect(res[i].pass, "%s: gradcheck failed (worst rel %.3g, a=%.9g n=%.9g at %lld)",
                  res[i].name, res[i].max_rel_err, res[i].worst_analytical,
                  res[i].worst_numerical, (long long)res[i].worst_index);
    }
    cr_assert(ok, "gradcheck failed");
    return n;
}

void tt_randn(tg_tensor *t, uint64_t seed)
{
    tg_rng r;
    tg_rng_seed(&r, seed);
    tg_init_normal(t, 0, 1, &r);
}

void tt_assert_graph_error(const tg_graph *g, const char *needle)
{
    const char *e = tg_graph_error(g);
    cr_assert(e != NULL, "expected a graph error containing \"%s\", got none", needle);
    cr_assert(strstr(e, needle) != NULL, "expected a graph error containing \"%s\", got \"%s\"",
              needle, e);
}

void tt_assert_last_error(const char *needle)
{
    const char *e = tg_last_error();
    cr_assert(strstr(e, needle) != NULL, "expected an error containing \"%s\", got \"%s\"", needle,
              e);
}
