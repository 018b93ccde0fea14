/*
 * rows_bench.c - the row-wise kernels, portable path against the AVX2 path
 * and, on a CPU with AVX-512, the AVX-512 path (ops/simd/vec_softmax.c: softmax rows over
 * 8 and GELU have one), side by side in one run. Built and run by
 * `make bench-rows`.
 *
 *   rows-bench [--time SECONDS] [-t THREADS]
 *
 * Shapes: softmax [4096, 512] (last dim), layer_norm [8192, 256] with weight
 * and bias, GELU exact and tanh over 1M elements; each forward (one
 * tg_graph_forward) and backward (one tg_graph_backward, which also zeroes
 * the gradients it writes), on 1 and 2 threads unless -t is given. The
 * paths alternate call by call (tg__vec_set, tg__vec_set_avx512), so a busy
 * machine slows them alike; each number is the median over the calls
 * (--time seconds per path, 0.5 by default, at least 7 calls), and each
 * ratio is portable / that path.
 *
 * Not a test: it checks nothing but prints the numbers (tests/test_vec.c checks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_time.h"
#include "tgraph.h"
#include "threads.h"
#include "simd/vec.h"

static double seconds = 0.5;

static double now_s(void) { return tg_bench_now(CLOCK_MONOTONIC); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef enum { B_SOFTMAX, B_LN, B_GELU, B_GELU_TANH } bench_kind;

typedef struct {
    tg_graph *g;
    tg_node *y;
    tg_tensor *dy;
} bench_graph;

static void fill(tg_tensor *t, unsigned seed)
{
    float *d = t->data;
    uint64_t s = seed;
    for (int64_t i = 0; i < t->numel; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        d[i] = (float)((double)(s >> 11) / (double)(1ULL << 53) * 6.0 - 3.0);
    }
}

static bench_graph build(bench_kind k, int64_t R, int64_t n)
{
    bench_graph b;
    int64_t shape[2] = {R, n};
    b.g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(b.g, "x", TG_F32, 2, shape);
    fill((tg_tensor *)tg_node_value(x), 1);
    tg_node_set_requires_grad(x, true);
    if (k == B_LN) {
        tg_node *w = tg_input(b.g, "w", TG_F32, 1, &n), *bias = tg_input(b.g, "b", TG_F32, 1, &n);
        fill((tg_tensor *)tg_node_value(w), 2);
        fill((tg_tensor *)tg_node_value(bias), 3);
        tg_node_set_requires_grad(w, true);
        tg_node_set_requires_grad(bias, true);
        b.y = tg_layer_norm(b.g, x, 1, &n, w, bias, 1e-5);
    } else if (k == B_SOFTMAX) {
        b.y = tg_softmax_scaled(b.g, x, -1, 0.125);
    } else {
        b.y = tg_gelu(b.g, x, k == B_GELU ? TG_GELU_NONE : TG_GELU_TANH);
    }
    if (!b.y) {
        fprintf(stderr, "rows-bench: %s\n", tg_graph_error(b.g));
        exit(1);
    }
    b.dy = tg_tensor_new(TG_F32, 2, shape);
    fill(b.dy, 4);
    if (tg_graph_forward(b.g) != TG_OK || tg_graph_backward(b.g, b.y, b.dy) != TG_OK) {
        fprintf(stderr, "rows-bench: %s\n", tg_last_error());
        exit(1);
    }
    return b;
}

static double call(bench_graph *b, bool backward)
{
    double t0 = now_s();
    tg_status st = backward ? tg_graph_backward(b->g, b->y, b->dy) : tg_graph_forward(b->g);
    double t = now_s() - t0;
    if (st != TG_OK) {
        fprintf(stderr, "rows-bench: %s\n", tg_last_error());
        exit(1);
    }
    return t;
}

/* path p: 0 portable, 1 AVX2 (AVX-512 off), 2 AVX-512 where a kernel has it */
static void set_path(int p)
{
    tg__vec_set(p > 0);
    tg__vec_set_avx512(p == 2);
}

/* medians of the paths 0 .. npath-1 (see set_path), call by call alternating */
static void time_paths(bench_graph *b, bool backward, int npath, double med[3])
{
    for (int w = 0; w < 2; w++)   /* warm-up */
        for (int p = 0; p < npath; p++) {
            set_path(p);
            call(b, backward);
        }
    set_path(0);
    double one = call(b, backward);
    int reps = one > 0 ? (int)(seconds / one) : 1000;
    if (reps < 7) reps = 7;
    if (reps > 5000) reps = 5000;
    double *ts[3];
    for (int p = 0; p < npath; p++) ts[p] = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++)
        for (int p = 0; p < npath; p++) {
            set_path(p);
            ts[p][r] = call(b, backward);
        }
    for (int p = 0; p < npath; p++) {
        qsort(ts[p], (size_t)reps, sizeof(double), cmp_double);
        med[p] = ts[p][reps / 2];
        free(ts[p]);
    }
    tg__vec_set(-1);
    tg__vec_set_avx512(-1);
}

int main(int argc, char **argv)
{
    int only_threads = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--time") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) only_threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: rows-bench [--time SECONDS] [-t THREADS]\n");
            return 2;
        }
    }
    if (!tg__vec_supported()) {
        printf("rows-bench: this CPU lacks AVX2/FMA: only the portable path exists\n");
        return 0;
    }
    static const struct { bench_kind k; const char *name; int64_t R, n; } cases[] = {
        {B_SOFTMAX, "softmax [4096, 512]", 4096, 512},
        {B_LN, "layer_norm [8192, 256]", 8192, 256},
        {B_GELU, "gelu [1M]", 1, 1 << 20},
        {B_GELU_TANH, "gelu_tanh [1M]", 1, 1 << 20},
    };
    /* AVX-512: where the CPU has it; the softmax (rows over 8) and GELU kernels use it */
    const int npath = tg__vec_set_avx512(1) ? 3 : 2;
    tg__vec_set_avx512(-1);
    printf("%-24s %-8s %3s %12s %12s %8s", "op", "pass", "t", "portable_ms", "avx2_ms", "ratio");
    if (npath == 3) printf(" %12s %8s", "avx512_ms", "ratio");
    printf("\n");
    for (int t = 1; t <= 2; t++) {
        if (only_threads && t != only_threads) continue;
        tg_threads_set(t);
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            bench_graph b = build(cases[c].k, cases[c].R, cases[c].n);
            for (int bw = 0; bw < 2; bw++) {
                double med[3];
                time_paths(&b, bw, npath, med);
                printf("%-24s %-8s %3d %12.3f %12.3f %7.2fx", cases[c].name,
                       bw ? "backward" : "forward", t, med[0] * 1e3, med[1] * 1e3, med[0] / med[1]);
                if (npath == 3) printf(" %12.3f %7.2fx", med[2] * 1e3, med[0] / med[2]);
                printf("\n");
                fflush(stdout);
            }
            tg_tensor_free(b.dy);
            tg_graph_free(b.g);
        }
    }
    return 0;
}
