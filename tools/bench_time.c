/*
 * bench_time.c - median-of-runs timing and a timed GEMM (see bench_time.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_time.h"
#include "gemm.h"

double tg_bench_now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int tg_bench_time(tg_bench_fn fn, void *ctx, const tg_bench_opts *o, tg_bench_result *out)
{
    int rc;
    for (int i = 0; i < o->warmup; i++)
        if ((rc = fn(ctx))) return rc;
    int max_runs = o->max_runs > 0 ? o->max_runs : 1000000;
    int min_runs = o->min_runs < 1 ? 1 : o->min_runs;
    if (min_runs > max_runs) min_runs = max_runs;
    size_t cap = 64;
    double *ts = malloc(cap * sizeof *ts);
    if (!ts) return -1;
    double total = 0;
    int n = 0;
    while (n < max_runs && (n < min_runs || total < o->min_time)) {
        if ((size_t)n == cap) {
            double *grown = realloc(ts, 2 * cap * sizeof *ts);
            if (!grown) {
                free(ts);
                return -1;
            }
            ts = grown;
            cap *= 2;
        }
        double t0 = tg_bench_now(o->clock);
        if ((rc = fn(ctx))) {
            free(ts);
            return rc;
        }
        ts[n] = tg_bench_now(o->clock) - t0;
        total += ts[n++];
    }
    qsort(ts, (size_t)n, sizeof *ts, cmp_double);
    out->median = n % 2 ? ts[n / 2] : 0.5 * (ts[n / 2 - 1] + ts[n / 2]);
    out->best = ts[0];
    out->runs = n;
    free(ts);
    return 0;
}

typedef struct gemm_ctx {
    const tg_bench_gemm *s;
    void *A, *B, *C;
    int64_t na, nb, nc;
} gemm_ctx;

static int gemm_call(void *ctx)
{
    const gemm_ctx *c = ctx;
    const tg_bench_gemm *s = c->s;
    int64_t lda = s->trans_a ? s->M : s->K, ldb = s->trans_b ? s->K : s->N;
    tg_gemm_batched(s->dtype, s->trans_a, s->trans_b, s->batch, s->M, s->N, s->K, 1.0, c->A, lda,
                    c->na, c->B, ldb, c->nb, s->beta1 ? 1.0 : 0.0, c->C, s->N, c->nc);
    return 0;
}

/* Values in [-0.5, 0.5): a fixed pattern, no RNG state. */
static void fill(void *p, tg_dtype dt, int64_t n, int64_t mult)
{
    for (int64_t i = 0; i < n; i++) {
        double v = (double)((i * mult) % 1000) / 1000.0 - 0.5;
        if (dt == TG_F64) ((double *)p)[i] = v;
        else ((float *)p)[i] = (float)v;
    }
}

int tg_bench_gemm_time(const tg_bench_gemm *s, const tg_bench_opts *o, tg_bench_result *out)
{
    size_t es = s->dtype == TG_F64 ? sizeof(double) : sizeof(float);
    gemm_ctx c = {.s = s, .na = s->M * s->K, .nb = s->K * s->N, .nc = s->M * s->N};
    c.A = malloc(es * (size_t)(c.na * s->batch));
    c.B = malloc(es * (size_t)(c.nb * s->batch));
    c.C = calloc((size_t)(c.nc * s->batch), es);
    int rc = -1;
    if (c.A && c.B && c.C) {
        fill(c.A, s->dtype, c.na * s->batch, 7919);
        fill(c.B, s->dtype, c.nb * s->batch, 104729);
        rc = tg_bench_time(gemm_call, &c, o, out);
    }
    free(c.A);
    free(c.B);
    free(c.C);
    return rc;
}

double tg_bench_gemm_flop(const tg_bench_gemm *s)
{
    return 2.0 * (double)s->batch * (double)s->M * (double)s->N * (double)s->K;
}

double tg_bench_peak_rss_mb(void)
{
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (getrusage(RUSAGE_SELF, &ru)) return 0;
    return (double)ru.ru_maxrss / 1024.0;   /* Linux: kilobytes */
}
