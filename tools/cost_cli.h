/*
 * cost_cli.h - what `tgraph summary` and `tgraph dot --profile` share: a few
 * profiled training steps on a layer graph, the module scopes a summary or a
 * title counts from, and how costs are written (FLOPs, bytes, heat colours).
 */
#ifndef TG_COST_CLI_H
#define TG_COST_CLI_H

#include <stddef.h>

#include "layer_cli.h"

/* Wall-clock seconds per training step, averaged over the profiled steps. */
typedef struct tg_cli_steps {
    int    steps;                 /* steps profiled (after one warm-up step) */
    double step_s, forward_s, backward_s;
} tg_cli_steps;

#define TG_CLI_PROFILE_STEPS 3    /* --steps default */

/* Make c's graph a training step's, before its first run: training mode and
 * shared values (as tgraph train), seeded random inputs (masks 0 / -100); a
 * layer without parameters differentiates its inputs. 0, or 2 (printed). */
int tg_cli_train_graph(tg_cli_layer *c, const char *cmd, tg_rng *rng);

/* tg_cli_train_graph, a random output gradient, one warm-up step, then
 * `steps` forward + backward passes with profiling on. Before the graph's
 * first run. Returns 0, or 2 after one line on stderr. */
int tg_cli_profile(tg_cli_layer *c, const char *cmd, int steps, tg_cli_steps *out);

/* The scope module depths count from, as tgraph dot --depth counts them: the
 * root, or - while it holds no op of its own and exactly one child scope -
 * that child. */
int tg_cli_base_scope(const tg_graph *g);

/* Is scope s at or below scope top? */
bool tg_cli_scope_within(const tg_graph *g, int s, int top);

/* Parameter elements whose nodes lie in scope (and below); buffers (BatchNorm's
 * running statistics) are not parameters and not counted. */
int64_t tg_cli_scope_params(const tg_graph *g, int scope);

/* "12.3 GFLOP", "512 FLOP"; "1.5 MB", "64 B" (powers of 1000 and 1024). */
void tg_cli_fmt_flops(double flops, char *buf, size_t len);
void tg_cli_fmt_bytes(double bytes, char *buf, size_t len);

/* A heat colour "#rrggbb" for t in [0, 1] (clamped): pale yellow to dark red
 * (ColorBrewer YlOrRd); none of r, g, b rises as t grows, and r + g + b falls. */
void tg_cli_heat_colour(double t, char buf[16]);

/* tgraph dot --profile: per-node and per-scope costs behind a tg_dot_opts
 * decorate hook, a legend and a title. Lives until the diagram is written. */
typedef struct tg_cli_dot_cost {
    const tg_graph *g;
    tg_cli_steps    st;
    tg_cost        *node;      /* per node (per step) */
    tg_cost        *scope;     /* per scope (per step) */
    int             base;      /* tg_cli_base_scope */
    char           *title;     /* owned */
    char            legend[512];
} tg_cli_dot_cost;

/* Profile c (tg_cli_profile), then point o's decorate hook, legend and title
 * at dc (the title: `title`, then the three most expensive modules' shares).
 * Returns 0 or 2 (message printed). */
int  tg_cli_dot_cost_init(tg_cli_dot_cost *dc, tg_cli_layer *c, const char *cmd, int steps,
                          tg_dot_opts *o, const char *title);
void tg_cli_dot_cost_free(tg_cli_dot_cost *dc);

#endif
