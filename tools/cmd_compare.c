/*
 * cmd_compare.c - `tgraph compare`: two .npy files, or two safetensors files
 * tensor by tensor (by name), within a tolerance. The last step of checking a
 * PyTorch layer against tgraph without Python.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "tgraph.h"

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* How far x is from y: |x - y| / (atol + rtol |y|), so <= 1 agrees. A NaN or
 * an infinity on either side is never within a tolerance: equal infinities
 * agree (0), NaN agrees with NaN only under --equal-nan, anything else against
 * a non-finite value is a mismatch (infinite distance). */
static double distance(double x, double y, double atol, double rtol, bool equal_nan, double *d)
{
    if (isnan(x) || isnan(y)) {
        bool agree = equal_nan && isnan(x) && isnan(y);
        *d = agree ? 0 : INFINITY;
        return agree ? 0 : INFINITY;
    }
    if (isinf(x) || isinf(y)) {
        *d = x == y ? 0 : INFINITY;
        return *d;
    }
    *d = fabs(x - y);
    if (*d == 0) return 0;
    double r = *d / (atol + rtol * fabs(y));
    return isnan(r) ? INFINITY : r;
}

/* Print one line for a pair; returns true when they agree. */
static bool compare_one(const char *name, const tg_tensor *a, const tg_tensor *b, double atol,
                        double rtol, bool equal_nan)
{
    char sa[96], sb[96];
    if (!tg_tensor_same_shape(a, b)) {
        printf("  %-48s shape %s vs %s  MISMATCH\n", name, tg_shape_str(a->rank, a->shape, sa, sizeof sa),
               tg_shape_str(b->rank, b->shape, sb, sizeof sb));
        return false;
    }
    double worst = 0, max_abs = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < a->numel; i++) {
        double d, x = tg_tensor_get(a, i), y = tg_tensor_get(b, i);
        double r = distance(x, y, atol, rtol, equal_nan, &d);
        if (d > max_abs) max_abs = d;
        if (r > worst) worst = r, at = i;
    }
    bool ok = worst <= 1;
    printf("  %-48s %-16s max |diff| %.3g%s\n", name, tg_shape_str(a->rank, a->shape, sa, sizeof sa),
           max_abs, ok ? "  ok" : "  MISMATCH");
    if (!ok)
        printf("    worst at element %lld: %.9g vs %.9g\n", (long long)at, tg_tensor_get(a, at),
               tg_tensor_get(b, at));
    return ok;
}

enum { O_ATOL, O_RTOL, O_EQUAL_NAN };
static const tg_opt opts[] = {
    [O_ATOL] = {"--atol", NULL, "F", "absolute tolerance, default 1e-5"},
    [O_RTOL] = {"--rtol", NULL, "F", "relative tolerance, default 1e-4"},
    [O_EQUAL_NAN] = {"--equal-nan", NULL, NULL, "a NaN agrees with a NaN (without it, NaN is a "
                     "mismatch against anything)"},
};

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "compare", argc, argv);
    tg_args_table(&a, opts, TG_OPTS_N(opts));
    const char *files[2] = {NULL, NULL}, *arg;
    double atol = 1e-5, rtol = 1e-4;
    bool equal_nan = false;
    int nf = 0;
    while ((arg = tg_args_next(&a))) {
        if (a.opt == O_ATOL) {
            if (!tg_args_double(&a, 0, 1e300, &atol)) return 2;
        } else if (a.opt == O_RTOL) {
            if (!tg_args_double(&a, 0, 1e300, &rtol)) return 2;
        } else if (a.opt == O_EQUAL_NAN) {
            equal_nan = true;
        } else if (arg[0] != '-' && nf < 2) {
            files[nf++] = arg;
        } else {
            return tg_cli_unknown(&a, arg);
        }
    }
    if (nf != 2) return tg_cli_fail("compare", "wants two files (see tgraph compare --help)");
    bool st = ends_with(files[0], ".safetensors");
    if (st != ends_with(files[1], ".safetensors"))
        return tg_cli_fail("compare", "compare .npy with .npy or .safetensors with .safetensors");
    bool ok = true;
    if (!st) {
        tg_tensor *x = NULL, *y = NULL;
        if (tg_npy_load(files[0], &x) || tg_npy_load(files[1], &y)) {
            tg_tensor_free(x);
            return tg_cli_fail("compare", "%s", tg_last_error());
        }
        ok = compare_one(files[0], x, y, atol, rtol, equal_nan);
        tg_tensor_free(x);
        tg_tensor_free(y);
    } else {
        tg_st_file *x = NULL, *y = NULL;
        if (tg_st_load(files[0], &x) || tg_st_load(files[1], &y)) {
            tg_st_free(x);
            return tg_cli_fail("compare", "%s", tg_last_error());
        }
        for (int i = 0; i < tg_st_count(x); i++) {
            const tg_tensor *other = tg_st_find(y, tg_st_name(x, i));
            if (!other) {
                printf("  %-48s only in %s  MISMATCH\n", tg_st_name(x, i), files[0]);
                ok = false;
                continue;
            }
            ok &= compare_one(tg_st_name(x, i), tg_st_tensor(x, i), other, atol, rtol, equal_nan);
        }
        for (int i = 0; i < tg_st_count(y); i++)
            if (!tg_st_find(x, tg_st_name(y, i))) {
                printf("  %-48s only in %s  MISMATCH\n", tg_st_name(y, i), files[1]);
                ok = false;
            }
        tg_st_free(x);
        tg_st_free(y);
    }
    printf("%s (atol %g, rtol %g)\n", ok ? "all agree" : "MISMATCH", atol, rtol);
    return ok ? 0 : 1;
}

const tg_cli_cmd tg_cmd_compare = {
    .name = "compare",
    .summary = "compare two .npy or two safetensors files (by tensor name) within a tolerance",
    .help = "usage: tgraph compare A B [--atol 1e-5] [--rtol 1e-4] [--equal-nan]\n\n"
            "A and B are both .npy or both .safetensors; safetensors files are matched by\n"
            "tensor name (a name in only one file is a mismatch). Every element must satisfy\n"
            "|a - b| <= atol + rtol * |b|. An infinity agrees only with the same infinity;\n"
            "a NaN is a mismatch against anything, or agrees with a NaN under --equal-nan.\n"
            "Prints one line per tensor with the largest difference; exits 1 on any mismatch.\n",
    .opts = opts,
    .n_opts = TG_OPTS_N(opts),
    .help_more = "\nexamples:\n  tgraph compare y.npy /tmp/tsa/y.npy\n"
            "  tgraph compare grads.safetensors /tmp/tsa/grads.safetensors\n",
    .run = run,
};
