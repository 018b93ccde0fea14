/*
 * topk_bench.c - float32 topk rows (k <= 64): ns per row on each path the
 * library has, side by side in one run. Built and run by `make bench-topk`.
 *
 *   topk-bench [--time SECONDS] [-t THREADS]
 *
 * Shapes: the attention layer's [16384, 256] k = 32 (largest, sorted), then
 * k = 8 and 64, n = 4096 and 64, a strided dim (x [64, 256, 64], dim 1: rows
 * of 256 at stride 64), ascending rows and all-equal rows. Each call is one
 * tg_graph_forward of a graph holding the one topk node; the paths (portable,
 * AVX2, AVX-512 where the CPU has them) alternate call by call, so a busy
 * machine slows all alike; each number is the median over the calls
 * (--time seconds per path, 0.2 by default, at least 7 calls) divided by the
 * rows. One thread unless -t is given.
 *
 * Built with -DTOPK_BENCH_OLD against an older libtgraph (which has no vector
 * topk and no tg__vec_set_avx512) it times the one path that has, for the
 * before / after numbers in ops/topk.c.
 *
 * Not a test: it checks nothing but prints the numbers (tests/test_topk.c checks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "tgraph.h"
#include "threads.h"
#include "simd/vec.h"

static double seconds = 0.2;

static double now_s(void) { return tg_bench_now(CLOCK_MONOTONIC); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef enum { ROW_RANDOM, ROW_ASCENDING, ROW_EQUAL } row_kind;

typedef struct {
    const char *name;
    int64_t     outer, n, inner, k;
    row_kind    kind;
} bench_case;

/* x [outer, n, inner]: uniform in [-3, 3), or each row 0, 1, 2, ... , or all 1 */
static void fill(tg_tensor *t, const bench_case *c)
{
    float *d = t->data;
    uint64_t s = 1;
    for (int64_t i = 0; i < t->numel; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int64_t j = i / c->inner % c->n;                   /* position along the row */
        d[i] = c->kind == ROW_EQUAL       ? 1.0f
             : c->kind == ROW_ASCENDING   ? (float)j
             : (float)((double)(s >> 11) / (double)(1ULL << 53) * 6.0 - 3.0);
    }
}

/* the paths: 0 portable, 1 AVX2, 2 AVX-512 */
static bool set_path(int p)
{
    if (p == 0) return tg__vec_set(0);
#ifdef TOPK_BENCH_OLD
    return false;
#else
    if (!tg__vec_set(1)) return false;
    return tg__vec_set_avx512(p == 2 ? 1 : 0) || p == 1;
#endif
}

static double call(tg_graph *g)
{
    double t0 = now_s();
    tg_status st = tg_graph_forward(g);
    double t = now_s() - t0;
    if (st != TG_OK) {
        fprintf(stderr, "topk-bench: %s\n", tg_last_error());
        exit(1);
    }
    return t;
}

int main(int argc, char **argv)
{
    int threads = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--time") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: topk-bench [--time SECONDS] [-t THREADS]\n");
            return 2;
        }
    }
    static const bench_case cases[] = {
        {"n=256 k=32", 16384, 256, 1, 32, ROW_RANDOM},
        {"n=256 k=8", 16384, 256, 1, 8, ROW_RANDOM},
        {"n=256 k=64", 16384, 256, 1, 64, ROW_RANDOM},
        {"n=4096 k=32", 1024, 4096, 1, 32, ROW_RANDOM},
        {"n=64 k=32", 16384, 64, 1, 32, ROW_RANDOM},
        {"n=600 k=17", 4096, 600, 1, 17, ROW_RANDOM},
        {"n=256 k=32 inner=64", 64, 256, 64, 32, ROW_RANDOM},
        {"n=256 k=32 ascending", 16384, 256, 1, 32, ROW_ASCENDING},
        {"n=256 k=32 all equal", 16384, 256, 1, 32, ROW_EQUAL},
    };
    static const char *path_name[3] = {"portable", "avx2", "avx512"};
    bool have[3];
    for (int p = 0; p < 3; p++) have[p] = set_path(p);
    tg__vec_set(-1);
#ifndef TOPK_BENCH_OLD
    tg__vec_set_avx512(-1);
#endif
    tg_threads_set(threads);
    printf("topk float32, largest, sorted; ns per row, median; %d thread%s\n", threads,
           threads > 1 ? "s" : "");
    printf("%-24s", "shape");
    for (int p = 0; p < 3; p++)
        if (have[p]) printf(" %10s", path_name[p]);
    printf("\n");
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const bench_case *bc = &cases[c];
        int64_t shape[3] = {bc->outer, bc->n, bc->inner};
        int64_t rows = bc->outer * bc->inner;
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 3, shape);
        fill((tg_tensor *)tg_node_value(x), bc);
        tg_node *y = tg_topk(g, x, bc->k, 1, true, true, NULL);
        if (!y) {
            fprintf(stderr, "topk-bench: %s\n", tg_graph_error(g));
            return 1;
        }
        double one = 0;
        for (int p = 0; p < 3; p++)   /* warm-up */
            if (have[p]) {
                set_path(p);
                one = call(g);
            }
        int reps = one > 0 ? (int)(seconds / one) : 1000;
        if (reps < 7) reps = 7;
        if (reps > 2000) reps = 2000;
        double *ts[3];
        for (int p = 0; p < 3; p++) ts[p] = malloc(sizeof(double) * (size_t)reps);
        for (int r = 0; r < reps; r++)
            for (int p = 0; p < 3; p++)
                if (have[p]) {
                    set_path(p);
                    ts[p][r] = call(g);
                }
        printf("%-24s", bc->name);
        for (int p = 0; p < 3; p++) {
            if (have[p]) {
                qsort(ts[p], (size_t)reps, sizeof(double), cmp_double);
                printf(" %10.1f", ts[p][reps / 2] / (double)rows * 1e9);
            }
            free(ts[p]);
        }
        printf("\n");
        fflush(stdout);
        tg_graph_free(g);
    }
    tg__vec_set(-1);
    return 0;
}
