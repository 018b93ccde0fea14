/*
 * progress.c - the progress lines of gradcheck and bench (progress.h).
 */
#include <string.h>
#include <time.h>

#include "progress.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tg_cli_progress_option(tg_cli_progress *p, tg_args *a, const char *arg)
{
    if (!strcmp(arg, "--progress-every")) return tg_args_double(a, 0, 1e9, &p->every) ? 1 : -1;
    if (strcmp(arg, "--quiet") && strcmp(arg, "-q")) return 0;
    p->quiet = true;
    return 1;
}

void tg_cli_progress_start(tg_cli_progress *p) { p->start = p->last = now(); }

bool tg_cli_progress_due(tg_cli_progress *p)
{
    if (p->quiet) return false;
    double t = now();
    if (t - p->last < p->every) return false;
    p->last = t;
    return true;
}

double tg_cli_progress_elapsed(const tg_cli_progress *p) { return now() - p->start; }
