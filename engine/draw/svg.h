/*
 * svg.h - plain SVG pictures written by tgraph itself (no dependency):
 * attention heatmaps and line plots (training curves).
 */
#ifndef TG_SVG_H
#define TG_SVG_H

#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_heatmap_opts {
    const char *title;     /* NULL: "attention weights" */
    int64_t     batch;     /* which batch element */
    int64_t     head;      /* which head; -1 draws every head in a grid */
    int         cell;      /* pixels per weight; 0 picks one from the size */
} tg_heatmap_opts;

/* Attention weights as a heatmap: attn is [B, H, L, S] (also [B, L, S] or
 * [L, S]); rows are query positions l, columns key positions s. One <rect>
 * per weight, viridis colours, axis labels and ticks, and a colour scale
 * from the minimum to the maximum weight drawn. Written atomically. Errors:
 * a bad rank, batch/head out of range (TG_ERR_INVALID), I/O. */
tg_status tg_svg_heatmap(const char *path, const tg_tensor *attn, const tg_heatmap_opts *opts);

typedef struct tg_series {
    const char   *name;    /* legend entry */
    const double *x, *y;   /* n points; non-finite points are skipped */
    int           n;
} tg_series;

/* A line plot of one or more series with axes, ticks, labels and a legend.
 * Each series is one <polyline class="series" data-series="NAME">. */
tg_status tg_svg_lines(const char *path, const char *title, const char *xlabel,
                       const char *ylabel, const tg_series *series, int n_series);

/* One panel of tg_svg_panels: a line plot as tg_svg_lines draws it. */
typedef struct tg_plot_panel {
    const char      *title, *xlabel, *ylabel;   /* NULL: none */
    const tg_series *series;
    int              n_series;
    const char *const *colours;   /* n_series SVG colours ("#2ca02c", "black"); NULL: the
                                   * palette's */
    bool             mark;     /* draw a dashed vertical line at x = mark_x */
    double           mark_x;
    /* Optional x ticks in place of the numeric ones (dates, names): n_xticks
     * positions in x units and their labels; ticks outside the x range are
     * not drawn. 0: numeric ticks. */
    const double      *xticks;
    const char *const *xtick_labels;
    int                n_xticks;
} tg_plot_panel;

/* Several line plots stacked top to bottom in one SVG under `title` ("" for
 * none), each in a <g class="panel">; tick labels are <text class="xtick">.
 * Errors: no panels or more than 256, a panel whose series list or tick
 * labels are missing, I/O. */
tg_status tg_svg_panels(const char *path, const char *title, const tg_plot_panel *panels,
                        int n_panels);

#ifdef __cplusplus
}
#endif
#endif
