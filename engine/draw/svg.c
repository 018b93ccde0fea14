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
    if (!attn || !tg_dtype_is_float(attn->dtype))
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
    const char *title, *xlabel, *ylabel;
    const tg_series *s;
    int n;
} plot;

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                      "#8c564b"};

static tg_status write_lines(FILE *f, void *vctx)
{
    const plot *p = vctx;
    const int W = 640, H = 400, L = 70, R = 150, T = 40, B = 50;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int k = 0; k < p->n; k++)
        for (int i = 0; i < p->s[k].n; i++) {
            double x = p->s[k].x[i], y = p->s[k].y[i];
            if (!isfinite(x) || !isfinite(y)) continue;
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
        }
    if (!isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 == x0) x1 = x0 + 1;
    if (y1 == y0) y1 = y0 + 1;
    double ys = nice_step(y1 - y0, 6), xs = nice_step(x1 - x0, 8);
    y0 = floor(y0 / ys) * ys, y1 = ceil(y1 / ys) * ys;
    double pw = W - L - R, ph = H - T - B;
#define PX(x) (L + ((x) - x0) / (x1 - x0) * pw)
#define PY(y) (T + ph - ((y) - y0) / (y1 - y0) * ph)
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, "
               "sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
    fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"14\">", L);
    xml_text(f, p->title ? p->title : "");
    fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%g\" height=\"%g\" fill=\"none\" "
               "stroke=\"#444\"/>\n", L, T, pw, ph);
    for (double y = y0; y <= y1 + ys / 2; y += ys)
        fprintf(f, "<line x1=\"%d\" x2=\"%g\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>\n",
                L, L + pw, PY(y), PY(y), L - 4, PY(y) + 3, fabs(y) < ys / 1e6 ? 0 : y);
    for (double x = ceil(x0 / xs) * xs; x <= x1 + xs / 1e6; x += xs)
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%g\" y2=\"%g\" stroke=\"#444\"/>"
                   "<text x=\"%.1f\" y=\"%g\" font-size=\"10\" text-anchor=\"middle\">%g</text>\n",
                PX(x), PX(x), T + ph, T + ph + 4, PX(x), T + ph + 16, x);
    fprintf(f, "<text x=\"%g\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">", L + pw / 2, H - 12);
    xml_text(f, p->xlabel ? p->xlabel : "");
    fprintf(f, "</text>\n<text x=\"16\" y=\"%g\" font-size=\"11\" text-anchor=\"middle\" "
               "transform=\"rotate(-90 16 %g)\">", T + ph / 2, T + ph / 2);
    xml_text(f, p->ylabel ? p->ylabel : "");
    fprintf(f, "</text>\n");
    for (int k = 0; k < p->n; k++) {
        const char *c = palette[k % (int)(sizeof palette / sizeof *palette)];
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" "
                   "points=\"", c);
        for (int i = 0; i < p->s[k].n; i++) {
            double x = p->s[k].x[i], y = p->s[k].y[i];
            if (isfinite(x) && isfinite(y)) fprintf(f, "%.1f,%.1f ", PX(x), PY(y));
        }
        fprintf(f, "\"/>\n<line x1=\"%g\" x2=\"%g\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" "
                   "stroke-width=\"2\"/><text x=\"%g\" y=\"%d\" font-size=\"11\">",
                L + pw + 12, L + pw + 32, T + 14 + 18 * k, T + 14 + 18 * k, c, L + pw + 36,
                T + 18 + 18 * k);
        xml_text(f, p->s[k].name ? p->s[k].name : "");
        fprintf(f, "</text>\n");
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    return ferror(f) ? tg_set_error(TG_ERR_IO, "plot: write failed") : TG_OK;
}

tg_status tg_svg_lines(const char *path, const char *title, const char *xlabel,
                       const char *ylabel, const tg_series *series, int n_series)
{
    if (n_series < 0 || (n_series && !series))
        return tg_set_error(TG_ERR_INVALID, "plot: bad series list");
    plot p = {title, xlabel, ylabel, series, n_series};
    return tg_write_atomic(path, write_lines, &p);
}
