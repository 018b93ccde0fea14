/*
 * svg.c - heatmaps and line plots as plain SVG text (see svg.h).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "svg.h"
#include "tensor_io.h"

/* viridis at 9 evenly spaced stops */
static const unsigned char viridis[9][3] = {
    {68, 1, 84},   {71, 44, 122},  {59, 81, 139},  {44, 113, 142}, {33, 144, 141},
    {39, 173, 129}, {92, 200, 99}, {170, 220, 50}, {253, 231, 37},
};

static void colour(double t, char *buf, size_t len)
{
    if (!(t >= 0)) t = 0;   /* NaN too */
    if (t > 1) t = 1;
    double p = t * 8;
    int i = (int)p;
    if (i > 7) i = 7;
    double f = p - i;
    int c[3];
    for (int k = 0; k < 3; k++)
        c[k] = (int)lround(viridis[i][k] + f * (viridis[i + 1][k] - viridis[i][k]));
    snprintf(buf, len, "#%02x%02x%02x", c[0], c[1], c[2]);
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* A tick step of 1, 2 or 5 times a power of ten giving about `want` ticks. */
static double nice_step(double span, int want)
{
    if (!(span > 0)) return 1;
    double raw = span / want, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

/* ------------------------------------------------------------------ heatmap */

typedef struct {
    const tg_tensor *a;
    int64_t B, H, L, S, b, h0, h1;
    double lo, hi;
    int cell;
    const char *title;
} heat;

static double at(const heat *m, int64_t h, int64_t l, int64_t s)
{
    return tg_tensor_get(m->a, ((m->b * m->H + h) * m->L + l) * m->S + s);
}

static tg_status write_heatmap(FILE *f, void *vctx)
{
    const heat *m = vctx;
    const int cell = m->cell, left = 56, top = 40, gap = 52, bar = 16;
    int64_t heads = m->h1 - m->h0, cols = heads < 4 ? heads : 4, rows = (heads + cols - 1) / cols;
    int pw = (int)(m->S * cell), ph = (int)(m->L * cell);
    int W = left + (int)cols * (pw + gap) + 70, Hh = top + (int)rows * (ph + gap + 16) + 30;
    char col[16];
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Hh, W, Hh);
    fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\">", left);
    xml_text(f, m->title);
    fprintf(f, " (batch %lld)</text>\n", (long long)m->b);
    int tick = (int)nice_step((double)(m->L > m->S ? m->L : m->S), 6);
    if (tick < 1) tick = 1;
    for (int64_t h = m->h0; h < m->h1; h++) {
        int64_t k = h - m->h0;
        int x0 = left + (int)(k % cols) * (pw + gap), y0 = top + 16 + (int)(k / cols) * (ph + gap + 16);
        fprintf(f, "<g class=\"head\" data-head=\"%lld\">\n", (long long)h);
        if (m->H > 1)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">head %lld</text>\n", x0,
                    y0 - 4, (long long)h);
        for (int64_t l = 0; l < m->L; l++)
            for (int64_t s = 0; s < m->S; s++) {
                double v = at(m, h, l, s), t = m->hi > m->lo ? (v - m->lo) / (m->hi - m->lo) : 0;
                colour(t, col, sizeof col);
                fprintf(f, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                           "fill=\"%s\"><title>l=%lld s=%lld: %.6g</title></rect>\n",
                        x0 + (int)s * cell, y0 + (int)l * cell, cell, cell, col, (long long)l,
                        (long long)s, v);
            }
        for (int64_t s = 0; s < m->S; s += tick)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"middle\">%lld</text>\n",
                    x0 + (int)s * cell + cell / 2, y0 + ph + 11, (long long)s);
        for (int64_t l = 0; l < m->L; l += tick)
            fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\" text-anchor=\"end\">%lld</text>\n",
                    x0 - 3, y0 + (int)l * cell + cell / 2 + 3, (long long)l);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">key position "
                   "s</text>\n", x0 + pw / 2, y0 + ph + 24);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" "
                   "transform=\"rotate(-90 %d %d)\">query position l</text>\n",
                x0 - 30, y0 + ph / 2, x0 - 30, y0 + ph / 2);
        fprintf(f, "</g>\n");
    }
    /* colour scale */
    int bx = W - 56, by = top + 16, bh = rows * (ph + gap) - gap > 60 ? (int)(rows * (ph + gap) - gap) : 60;
    fprintf(f, "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n");
    for (int i = 0; i <= 8; i++) {
        colour(i / 8.0, col, sizeof col);
        fprintf(f, "<stop offset=\"%g\" stop-color=\"%s\"/>\n", i / 8.0, col);
    }
    fprintf(f, "</linearGradient></defs>\n<rect class=\"scale\" x=\"%d\" y=\"%d\" width=\"%d\" "
               "height=\"%d\" fill=\"url(#scale)\" stroke=\"#444\" stroke-width=\"0.5\"/>\n",
            bx, by, bar, bh);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\">%.3g</text>\n", bx + bar + 3, by + 8, m->hi);
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\">%.3g</text>\n", bx + bar + 3, by + bh,
            m->lo);
    fprintf(f, "</svg>\n");
    return ferror(f) ? tg_set_error(TG_ERR_IO, "heatmap: write failed") : TG_OK;
}

tg_status tg_svg_heatmap(const char *path, const tg_tensor *attn, const tg_heatmap_opts *opts)
{
    tg_heatmap_opts o = opts ? *opts : (tg_heatmap_opts){0};
    tg_status bad = tg_tensor_check(attn, "heatmap");
    if (bad) return bad;
    if (!tg_dtype_is_float(attn->dtype))
        return tg_set_error(TG_ERR_INVALID, "heatmap: attention weights must be a float tensor");
    heat m = {.a = attn, .B = 1, .H = 1, .title = o.title ? o.title : "attention weights"};
    if (attn->rank == 4) m.B = attn->shape[0], m.H = attn->shape[1];
    else if (attn->rank == 3) m.B = attn->shape[0];
    else if (attn->rank != 2)
        return tg_set_error(TG_ERR_INVALID, "heatmap: expected attention weights [B, H, L, S], "
                            "[B, L, S] or [L, S], got a %d-d tensor", attn->rank);
    m.L = attn->shape[attn->rank - 2];
    m.S = attn->shape[attn->rank - 1];
    if (o.batch < 0 || o.batch >= m.B)
        return tg_set_error(TG_ERR_INVALID, "heatmap: batch %lld is out of range [0, %lld)",
                            (long long)o.batch, (long long)m.B);
    if (o.head < -1 || o.head >= m.H)
        return tg_set_error(TG_ERR_INVALID, "heatmap: head %lld is out of range [0, %lld) (or -1 "
                            "for all)", (long long)o.head, (long long)m.H);
    if (m.L == 0 || m.S == 0 || m.L > 4096 || m.S > 4096)
        return tg_set_error(TG_ERR_INVALID, "heatmap: %lld x %lld weights cannot be drawn (1 to "
                            "4096 each)", (long long)m.L, (long long)m.S);
    m.b = o.batch;
    m.h0 = o.head < 0 ? 0 : o.head;
    m.h1 = o.head < 0 ? m.H : o.head + 1;
    m.lo = INFINITY, m.hi = -INFINITY;
    for (int64_t h = m.h0; h < m.h1; h++)
        for (int64_t l = 0; l < m.L; l++)
            for (int64_t s = 0; s < m.S; s++) {
                double v = at(&m, h, l, s);
                if (isfinite(v)) m.lo = fmin(m.lo, v), m.hi = fmax(m.hi, v);
            }
    if (!isfinite(m.lo)) m.lo = 0, m.hi = 1;
    int64_t big = m.L > m.S ? m.L : m.S;
    m.cell = o.cell > 0 ? o.cell : big <= 16 ? 24 : big <= 64 ? 8 : big <= 256 ? 3 : 1;
    return tg_write_atomic(path, write_heatmap, &m);
}

/* -------------------------------------------------------------- line plots */

typedef struct {
    const char *title;
    const tg_plot_panel *p;
    int n, panel_h;
} plot;

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b"};

enum { PLOT_W = 640, PLOT_L = 70, PLOT_R = 150, PLOT_T = 40, PLOT_B = 50 };

/* The data's range over every finite point, rounded out to whole y ticks. */
typedef struct { double x0, x1, y0, y1, xs, ys, pw, ph; int top; } frame;

static frame panel_frame(const tg_plot_panel *p, int top, int height)
{
    frame r = {INFINITY, -INFINITY, INFINITY, -INFINITY, 0, 0, 0, 0, top};
    for (int k = 0; k < p->n_series; k++)
        for (int i = 0; i < p->series[k].n; i++) {
            double x = p->series[k].x[i], y = p->series[k].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            r.x0 = fmin(r.x0, x), r.x1 = fmax(r.x1, x), r.y0 = fmin(r.y0, y), r.y1 = fmax(r.y1, y);
        }
    if (!isfinite(r.x0)) r.x0 = 0, r.x1 = 1, r.y0 = 0, r.y1 = 1;
    if (r.x1 == r.x0) r.x1 = r.x0 + 1;
    if (r.y1 == r.y0) r.y1 = r.y0 + 1;
    r.ys = nice_step(r.y1 - r.y0, 6), r.xs = nice_step(r.x1 - r.x0, 8);
    r.y0 = floor(r.y0 / r.ys) * r.ys, r.y1 = ceil(r.y1 / r.ys) * r.ys;
    r.pw = PLOT_W - PLOT_L - PLOT_R, r.ph = height - PLOT_T - PLOT_B;
    return r;
}

static double px(const frame *r, double x) { return PLOT_L + (x - r->x0) / (r->x1 - r->x0) * r->pw; }
static double py(const frame *r, double y)
{
    return r->top + PLOT_T + r->ph - (y - r->y0) / (r->y1 - r->y0) * r->ph;
}

/* The panel's own x ticks (p->xticks, p->xtick_labels) inside the x range. */
static void draw_xticks(FILE *f, const tg_plot_panel *p, const frame *r)
{
    const double T = r->top + PLOT_T, eps = (r->x1 - r->x0) * 1e-9;
    for (int i = 0; i < p->n_xticks; i++) {
        double x = p->xticks[i];
        if (!isfinite(x) || x < r->x0 - eps || x > r->x1 + eps) continue;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\" stroke=\"#444\"/>"
                   "<text class=\"xtick\" x=\"%.1f\" y=\"%g\" font-size=\"10\" "
                   "text-anchor=\"middle\">", px(r, x), px(r, x), T + r->ph, T + r->ph + 4,
                px(r, x), T + r->ph + 16);
        xml_text(f, p->xtick_labels[i]);
        fprintf(f, "</text>\n");
    }
}

/* The frame, grid, ticks and axis labels of one panel. */
static void draw_axes(FILE *f, const tg_plot_panel *p, const frame *r, int height)
{
    const int T = r->top + PLOT_T;
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\">", PLOT_L, r->top + 24);
    xml_text(f, p->title ? p->title : "");
    fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%g\" height=\"%g\" fill=\"none\" "
               "stroke=\"#444\"/>\n", PLOT_L, T, r->pw, r->ph);
    for (double y = r->y0; y <= r->y1 + r->ys / 2; y += r->ys)
        fprintf(f, "<line x1=\"%d\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>\n",
                PLOT_L, PLOT_L + r->pw, py(r, y), py(r, y), PLOT_L - 4, py(r, y) + 3,
                fabs(y) < r->ys / 1e6 ? 0 : y);
    if (p->n_xticks)
        draw_xticks(f, p, r);
    else
        for (double x = ceil(r->x0 / r->xs) * r->xs; x <= r->x1 + r->xs / 1e6; x += r->xs)
            fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\" stroke=\"#444\"/>"
                       "<text class=\"xtick\" x=\"%.1f\" y=\"%g\" font-size=\"10\" "
                       "text-anchor=\"middle\">%g</text>\n",
                    px(r, x), px(r, x), T + r->ph, T + r->ph + 4, px(r, x), T + r->ph + 16, x);
    fprintf(f, "<text x=\"%g\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">",
            PLOT_L + r->pw / 2, r->top + height - 12);
    xml_text(f, p->xlabel ? p->xlabel : "");
    fprintf(f, "</text>\n<text x=\"16\" y=\"%g\" font-size=\"11\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 16 %g)\">", T + r->ph / 2, T + r->ph / 2);
    xml_text(f, p->ylabel ? p->ylabel : "");
    fprintf(f, "</text>\n");
    if (p->mark && isfinite(p->mark_x) && p->mark_x >= r->x0 && p->mark_x <= r->x1)
        fprintf(f, "<line class=\"mark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%g\" "
                   "stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n",
                px(r, p->mark_x), px(r, p->mark_x), T, T + r->ph);
}

/* One panel at y offset `top`: axes, one polyline per series, the legend. */
static void draw_panel(FILE *f, const tg_plot_panel *p, int top, int height)
{
    frame r = panel_frame(p, top, height);
    draw_axes(f, p, &r, height);
    const int T = top + PLOT_T;
    for (int k = 0; k < p->n_series; k++) {
        const tg_series *s = &p->series[k];
        const char *c = p->colours && p->colours[k]
                            ? p->colours[k]
                            : palette[k % (int)(sizeof palette / sizeof *palette)];
        fprintf(f, "<polyline class=\"series\" data-series=\"");
        xml_text(f, s->name ? s->name : "");
        fprintf(f, "\" fill=\"none\" stroke=\"");
        xml_text(f, c);
        fprintf(f, "\" stroke-width=\"1.6\" points=\"");
        for (int i = 0; i < s->n; i++) {
            double x = s->x[i], y = s->y[i];
            if (isfinite(x) && isfinite(y)) fprintf(f, "%.1f,%.1f ", px(&r, x), py(&r, y));
        }
        fprintf(f, "\"/>\n<line x1=\"%g\" x2=\"%g\" y1=\"%d\" y2=\"%d\" stroke=\"",
                PLOT_L + r.pw + 12, PLOT_L + r.pw + 32, T + 14 + 18 * k, T + 14 + 18 * k);
        xml_text(f, c);
        fprintf(f, "\" stroke-width=\"2\"/><text class=\"legend\" x=\"%g\" y=\"%d\" "
                   "font-size=\"11\">", PLOT_L + r.pw + 36, T + 18 + 18 * k);
        xml_text(f, s->name ? s->name : "");
        fprintf(f, "</text>\n");
    }
}

static tg_status write_lines(FILE *f, void *vctx)
{
    const plot *p = vctx;
    int head = p->title && *p->title ? 30 : 0, H = head + p->n * p->panel_h;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, "
               "sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", PLOT_W,
            H, PLOT_W, H);
    if (head) {
        fprintf(f, "<text x=\"16\" y=\"22\" font-size=\"13\" font-weight=\"bold\">");
        xml_text(f, p->title);
        fprintf(f, "</text>\n");
    }
    for (int i = 0; i < p->n; i++) {
        fprintf(f, "<g class=\"panel\">\n");
        draw_panel(f, &p->p[i], head + i * p->panel_h, p->panel_h);
        fprintf(f, "</g>\n");
    }
    fprintf(f, "</svg>\n");
    return ferror(f) ? tg_set_error(TG_ERR_IO, "plot: write failed") : TG_OK;
}

static tg_status check_series(const tg_series *s, int n)
{
    if (n < 0 || (n && !s)) return tg_set_error(TG_ERR_INVALID, "plot: bad series list");
    for (int k = 0; k < n; k++)
        if (s[k].n < 0 || (s[k].n && (!s[k].x || !s[k].y)))
            return tg_set_error(TG_ERR_INVALID, "plot: series %d has %d points and no data", k,
                                s[k].n);
    return TG_OK;
}

tg_status tg_svg_lines(const char *path, const char *title, const char *xlabel,
                       const char *ylabel, const tg_series *series, int n_series)
{
    tg_status st = check_series(series, n_series);
    if (st) return st;
    tg_plot_panel one = {title, xlabel, ylabel, series, n_series, NULL, false, 0, NULL, NULL, 0};
    plot p = {NULL, &one, 1, 400};
    return tg_write_atomic(path, write_lines, &p);
}

tg_status tg_svg_panels(const char *path, const char *title, const tg_plot_panel *panels,
                        int n_panels)
{
    TG__NONNULL(title, TG_ERR_INVALID);
    TG__NONNULL(panels, TG_ERR_INVALID);
    if (n_panels < 1 || n_panels > 256)
        return tg_set_error(TG_ERR_INVALID, "plot: %d panels (1 to 256 can be drawn)", n_panels);
    for (int i = 0; i < n_panels; i++) {
        tg_status st = check_series(panels[i].series, panels[i].n_series);
        if (st) return st;
        const tg_plot_panel *q = &panels[i];
        bool bad = q->n_xticks < 0 || (q->n_xticks && (!q->xticks || !q->xtick_labels));
        for (int k = 0; !bad && k < q->n_xticks; k++) bad = !q->xtick_labels[k];
        if (bad)
            return tg_set_error(TG_ERR_INVALID, "plot: panel %d has %d x ticks and no positions "
                                "or labels for them", i, q->n_xticks);
    }
    plot p = {title, panels, n_panels, 300};
    return tg_write_atomic(path, write_lines, &p);
}
