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
