/*
 * dataset.c - the ETT CSV reader and the built-in synthetic series (dates.c:
 * the date strings; windows.c: splits, the scaler, windows; see dataset.h).
 *
 * Not here: anything that knows a model or a graph - windows are copied into
 * plain tensors the caller owns.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "internal.h"
#include "io_internal.h"
#include "tensor_io.h"

#define CSV_MAX_BYTES ((size_t)1 << 31)   /* 2 GiB */
#define CSV_MAX_COLS  4096

void tg_dataset_free(tg_dataset *d)
{
    if (!d) return;
    for (int64_t c = 0; d->names && c < d->cols; c++) tg__free(d->names[c]);
    tg__free(d->names);
    tg__free(d->data);
    tg__free(d->source);
    tg__free(d->date_name);
    tg__free(d->time);
    tg__free(d->line);
    tg__free(d);
}

tg_status tg_dataset_keep_column(tg_dataset *d, int64_t col)
{
    TG__NONNULL(d, TG_ERR_INVALID);
    if (col < 0 || col >= d->cols)
        return tg_set_error(TG_ERR_INVALID, "%s: no value column %lld (it has %lld)",
                            d->source ? d->source : "data", (long long)col + 1,
                            (long long)d->cols);
    for (int64_t r = 0; r < d->rows; r++) d->data[r] = d->data[r * d->cols + col];
    for (int64_t c = 0; c < d->cols; c++)
        if (c != col) tg__free(d->names[c]);
    d->names[0] = d->names[col];
    d->skipped_cols += col;
    d->cols = 1;
    return TG_OK;
}

int64_t tg_dataset_find_column(const tg_dataset *d, const char *name)
{
    TG__NONNULL(d, -1);
    TG__NONNULL(name, -1);
    for (int64_t c = 0; c < d->cols; c++)
        if (d->names[c] && !strcmp(d->names[c], name)) return c;
    return -1;
}

/* Header names that say the column holds dates (any case). */
static bool date_header(const char *h)
{
    static const char *const names[] = {"date", "time", "datetime", "timestamp"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t k = 0;
        while (names[i][k] && (h[k] | 0x20) == names[i][k]) k++;
        if (!names[i][k] && !h[k]) return true;
    }
    return false;
}

/* The non-numeric first cell s, under header h, is a date column's: it
 * starts like yyyy-, its header says so, or it is digits and date
 * separators (07/01/2016 00:00, 2016/07/01, 1.7.2016) -- then a cell that
 * does not parse is an error naming its line, not a column dropped. */
static bool looks_like_date(const char *s, const char *h)
{
    if (date_header(h)) return true;
    int digits = 0;   /* stops at the terminating NUL: s may be shorter than 4 */
    while (digits < 4 && s[digits] >= '0' && s[digits] <= '9') digits++;
    if (digits == 4 && s[4] == '-') return true;
    if (s[0] < '0' || s[0] > '9') return false;
    int seps = 0, dots = 0;
    for (const char *c = s; *c; c++) {
        if (*c == '/' || *c == '-' || *c == ':') seps++;
        else if (*c == '.') dots++;
        else if ((*c < '0' || *c > '9') && *c != ' ' && *c != 'T') return false;
    }
    return seps > 0 || dots > 1;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* d->freq: the most common positive step between rows (the smallest of
 * equally common ones); 0 when no row follows an earlier date. */
static tg_status infer_freq(tg_dataset *d, const char *what)
{
    d->freq = 0;
    if (!d->time || d->rows < 2) return TG_OK;
    int64_t n = d->rows - 1, best = 0, run = 0;
    int64_t *step = tg__malloc((size_t)n * sizeof *step);
    if (!step) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    for (int64_t i = 0; i < n; i++) step[i] = d->time[i + 1] - d->time[i];
    qsort(step, (size_t)n, sizeof *step, cmp_i64);
    for (int64_t i = 0; i < n; i++) {
        if (step[i] <= 0) continue;
        run = i && step[i] == step[i - 1] ? run + 1 : 1;
        if (run > best) best = run, d->freq = step[i];
    }
    tg__free(step);
    return TG_OK;
}

/* ---- CSV ---- */

/* A line split into cells, in place: cells point into the line buffer. */
typedef struct csv_line {
    char  **cell;
    int64_t n, cap;
} csv_line;

/* " ('name')" for CSV column c (0-based) of a data row, or "" on the header
 * row (d->names not yet set) or past the header's columns. */
static const char *col_name(const tg_dataset *d, int64_t skip, int64_t c, char *buf, size_t n)
{
    buf[0] = '\0';
    if (d && d->names && c - skip >= 0 && c - skip < d->cols && d->names[c - skip])
        tg__fmt(buf, n, " ('%s')", d->names[c - skip]);
    return buf;
}

/* Split line (NUL-terminated, no newline) at commas; "quoted" cells lose
 * their quotes. d and skip name the columns in messages (d NULL: the header). */
static tg_status split_cells(char *line, csv_line *out, const char *what, int64_t lineno,
                             const tg_dataset *d, int64_t skip)
{
    char nm[96];
    out->n = 0;
    char *p = line;
    for (;;) {
        if (out->n == out->cap) {
            if (out->cap >= CSV_MAX_COLS)
                return tg_set_error(TG_ERR_LIMIT, "%s:%lld: more than %d columns", what,
                                    (long long)lineno, CSV_MAX_COLS);
            int64_t ncap = out->cap ? out->cap * 2 : 16;
            char **nc = tg__realloc(out->cell, (size_t)ncap * sizeof *nc);
            if (!nc) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
            out->cell = nc;
            out->cap = ncap;
        }
        while (*p == ' ' || *p == '\t') p++;
        char *start = p, *end;
        if (*p == '"') {
            start = ++p;
            char *w = p;   /* "" inside quotes is one quote */
            for (;;) {
                if (!*p)
                    return tg_set_error(TG_ERR_FORMAT, "%s:%lld: column %lld%s: unterminated "
                                        "quoted cell", what, (long long)lineno,
                                        (long long)out->n + 1,
                                        col_name(d, skip, out->n, nm, sizeof nm));
                if (*p == '"' && p[1] == '"') { *w++ = '"'; p += 2; continue; }
                if (*p == '"') break;
                *w++ = *p++;
            }
            end = w;
            p++;
            while (*p == ' ' || *p == '\t') p++;
            if (*p && *p != ',')
                return tg_set_error(TG_ERR_FORMAT, "%s:%lld: column %lld%s: text after the "
                                    "closing quote", what, (long long)lineno,
                                    (long long)out->n + 1,
                                    col_name(d, skip, out->n, nm, sizeof nm));
        } else {
            while (*p && *p != ',') p++;
            end = p;
            while (end > start && (end[-1] == ' ' || end[-1] == '\t')) end--;
        }
        char sep = *p;
        *end = '\0';
        out->cell[out->n++] = start;
        if (sep != ',') break;
        p++;
    }
    return TG_OK;
}

static bool ieq(const char *s, const char *w)
{
    for (; *s && *w; s++, w++)
        if ((*s | 0x20) != *w) return false;
    return !*s && !*w;
}

/* A cell as a number: 0 when it is one, else why not. The syntax is
 * decimal only, as pandas' C parser reads ETT files:
 *     [+-]? (digits [. digits] | . digits) ([eE] [+-]? digits)?
 * and the spellings nan, inf, infinity (any case, optional sign), which are
 * numbers but not finite ones (rejected by the caller). Hexadecimal (0x10,
 * which strtod would take), 1e5x, 1,5 and blanks inside are not numbers. */
static const char *parse_number(const char *s, double *v)
{
    const char *p = s;
    if (!*s) return "empty";
    if (*p == '+' || *p == '-') p++;
    if (ieq(p, "nan") || ieq(p, "inf") || ieq(p, "infinity")) {
        *v = (*p | 0x20) == 'n' ? NAN : *s == '-' ? -INFINITY : INFINITY;
        return NULL;
    }
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) return "hexadecimal is not a CSV number";
    size_t digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (!digits) return "";
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (*p < '0' || *p > '9') return "";
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return "";
    char *end;
    errno = 0;
    *v = strtod(s, &end);   /* the syntax above is strtod's decimal form */
    if (*end) return "cannot convert it (is the locale's decimal point '.'?)";
    return NULL;
}

static bool blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t') return false;
    return true;
}

/* "binary data (a NUL byte at line L, byte B)": text[0..at) is what precedes it. */
static tg_status nul_error(const char *what, const char *text, size_t at)
{
    long long line = 1;
    for (size_t i = 0; i < at; i++)
        if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= at || text[i + 1] != '\n'))) line++;
    return tg_set_error(TG_ERR_FORMAT, "%s:%lld: binary data (a NUL byte at byte %zu) in a CSV "
                        "file", what, line, at + 1);
}

/* One CSV parse's state, line by line. */
typedef struct csv_parse {
    const char *what;
    tg_dataset *d;
    csv_line    cl;         /* the current line's cells */
    int64_t     cap_rows;   /* rows d->data has room for */
    int64_t     skip;       /* 1: the first column (dates) is skipped */
    bool        dates;      /* the skipped column holds dates (into d->time) */
    int64_t     lineno;
} csv_parse;

/* The header row: its cells are the column names. */
static tg_status read_header(csv_parse *P)
{
    tg_dataset *d = P->d;
    const csv_line cl = P->cl;
    const char *what = P->what;
    d->cols = cl.n;   /* refined below once the first data row tells about column 0 */
    if (!(d->names = tg__calloc((size_t)cl.n, sizeof *d->names)))
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    for (int64_t c = 0; c < cl.n; c++)
        if (!(d->names[c] = tg__strdup(cl.cell[c])))
            return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
    return TG_OK;
}

/* first data row: a non-numeric first column (dates) is skipped */
static tg_status skip_date_column(csv_parse *P)
{
    tg_dataset *d = P->d;
    P->skip = 1;
    if (looks_like_date(P->cl.cell[0], d->names[0])) {
        P->dates = true;
        d->date_name = d->names[0];
    } else {
        tg__free(d->names[0]);
    }
    memmove(d->names, d->names + 1, (size_t)(d->cols - 1) * sizeof *d->names);
    d->names[--d->cols] = NULL;
    if (d->cols == 0)
        return tg_set_error(TG_ERR_FORMAT, "%s:%lld: no numeric columns after the "
                            "first (skipped) column", P->what, (long long)P->lineno);
    return TG_OK;
}

/* Room for one more row in d->data (doubling). */
static tg_status grow_rows(csv_parse *P)
{
    tg_dataset *d = P->d;
    int64_t ncap = P->cap_rows ? P->cap_rows * 2 : 1024;
    size_t bytes;
    double *nd = NULL;
    if (tg__mul_overflow_size((size_t)ncap, (size_t)d->cols * sizeof *nd, &bytes))
        nd = tg__realloc(d->data, bytes);
    if (nd) d->data = nd;
    int64_t *nt = NULL, *nl = NULL;
    if (nd && P->dates && (nt = tg__realloc(d->time, (size_t)ncap * sizeof *nt))) d->time = nt;
    if (nt && (nl = tg__realloc(d->line, (size_t)ncap * sizeof *nl))) d->line = nl;
    if (!nd || (P->dates && !nl))
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory at line %lld", P->what,
                            (long long)P->lineno);
    P->cap_rows = ncap;
    return TG_OK;
}

/* The date of the current row into d->time: a date in the first row's form. */
static tg_status read_date(csv_parse *P)
{
    tg_dataset *d = P->d;
    const char *cell = P->cl.cell[0];
    tg_date_style style;
    int64_t t;
    if (tg_date_parse(cell, &t, &style))
        return tg_set_error(TG_ERR_FORMAT, "%s:%lld: column 1 ('%s'): %s", P->what,
                            (long long)P->lineno, d->date_name, tg_last_error());
    if (d->rows == 0) d->date_style = style;
    if (style != d->date_style) {
        char first[32];
        return tg_set_error(TG_ERR_FORMAT, "%s:%lld: column 1 ('%s'): '%.40s' is not written "
                            "like the first row's date (%s)", P->what, (long long)P->lineno,
                            d->date_name, cell,
                            tg_date_format(d->time[0], d->date_style, first, sizeof first));
    }
    d->time[d->rows] = t;
    d->line[d->rows] = P->lineno;
    return TG_OK;
}

/* A data row: as many cells as the header, each a finite number. */
static tg_status read_row(csv_parse *P)
{
    tg_dataset *d = P->d;
    const csv_line cl = P->cl;
    const char *what = P->what;
    const int64_t lineno = P->lineno;
    tg_status st;
    if (cl.n != d->cols + P->skip)
        return tg_set_error(TG_ERR_FORMAT, "%s:%lld: %lld cells, expected %lld as in the "
                            "header (a ragged row)", what, (long long)lineno,
                            (long long)cl.n, (long long)(d->cols + P->skip));
    double v;
    if (d->rows == 0 && parse_number(cl.cell[0], &v) && (st = skip_date_column(P))) return st;
    if (d->rows == P->cap_rows && (st = grow_rows(P))) return st;
    if (P->dates && (st = read_date(P))) return st;
    const int64_t skip = P->skip;
    for (int64_t c = 0; c < d->cols; c++) {
        const char *cell = cl.cell[c + skip];
        const char *name = d->names[c];
        if (!*cell)
            return tg_set_error(TG_ERR_FORMAT, "%s:%lld: column %lld ('%s'): empty cell "
                                "(missing values are not supported)", what, (long long)lineno,
                                (long long)(c + skip + 1), name);
        const char *why = parse_number(cell, &v);
        if (why)
            return tg_set_error(TG_ERR_FORMAT, "%s:%lld: column %lld ('%s'): '%.40s' is not "
                                "a number%s%s", what, (long long)lineno,
                                (long long)(c + skip + 1), name, cell, *why ? ": " : "", why);
        if (!isfinite(v))
            return tg_set_error(TG_ERR_FORMAT, "%s:%lld: column %lld ('%s'): '%.40s' is not "
                                "a finite number", what, (long long)lineno,
                                (long long)(c + skip + 1), name, cell);
        d->data[d->rows * d->cols + c] = v;
    }
    d->rows++;
    return TG_OK;
}

tg_status tg_dataset_parse_csv(const char *text, size_t len, const char *what, tg_dataset **out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    TG__NONNULL(text, TG_ERR_INVALID);
    *out = NULL;
    if (!what) what = "csv";
    tg_status st = TG_OK;
    char *buf = tg__malloc(len + 1);
    csv_parse P = {.what = what, .d = tg__calloc(1, sizeof *P.d)};
    tg_dataset *d = P.d;
    bool have_header = false;
    if (!buf || !d) {
        st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
        goto fail;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    const char *nul = memchr(buf, '\0', len);
    if (nul) {
        st = nul_error(what, text, (size_t)(nul - buf));
        goto fail;
    }
    char *p = buf;
    if ((unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB && (unsigned char)p[2] == 0xBF)
        p += 3;   /* UTF-8 byte order mark */
    while (*p) {
        /* a line ends at \n, \r\n or a lone \r (old Mac files) */
        char *line = p;
        size_t ll = strcspn(p, "\r\n");
        p += ll;
        if (*p == '\r' && p[1] == '\n') *p = '\0', p += 2;
        else if (*p) *p++ = '\0';
        P.lineno++;
        if (blank(line)) continue;
        if ((st = split_cells(line, &P.cl, what, P.lineno, have_header ? d : NULL, P.skip)))
            goto fail;
        if (!have_header) {
            have_header = true;
            if ((st = read_header(&P))) goto fail;
            continue;
        }
        if ((st = read_row(&P))) goto fail;
    }
    if (!have_header) {
        st = tg_set_error(TG_ERR_FORMAT, "%s: empty file (expected a header row and data rows)",
                          what);
        goto fail;
    }
    if (d->rows == 0) {
        st = tg_set_error(TG_ERR_FORMAT, "%s: no data rows after the header (line %lld)", what,
                          (long long)P.lineno);
        goto fail;
    }
    d->skipped_cols = P.skip;
    if ((st = infer_freq(d, what))) goto fail;
    if (!(d->source = tg__strdup(what))) {
        st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory", what);
        goto fail;
    }
    tg__free(P.cl.cell);
    tg__free(buf);
    *out = d;
    return TG_OK;
fail:
    tg__free(P.cl.cell);
    tg__free(buf);
    tg_dataset_free(d);
    return st;
}

/* Lines seen so far in the blocks before a NUL, for its message. */
typedef struct {
    long long line;
    bool      cr;   /* the previous block ended in \r */
} nul_scan;

/* Each block as it is read: a NUL stops the read there, so a binary stream
 * (/dev/zero) costs one block, not the 2 GiB limit. */
static tg_status check_block(const unsigned char *b, size_t n, size_t offset, const char *path,
                             void *ctx)
{
    nul_scan *ns = ctx;
    const unsigned char *nul = memchr(b, '\0', n);
    size_t upto = nul ? (size_t)(nul - b) : n;
    for (size_t i = 0; i < upto; i++) {
        if (b[i] == '\n' && !(i == 0 && ns->cr)) ns->line++;
        if (b[i] == '\r') ns->line++;   /* \r\n counts once: the \n after \r is skipped */
        ns->cr = b[i] == '\r';
        if (ns->cr && i + 1 < upto && b[i + 1] == '\n') i++, ns->cr = false;
    }
    if (!nul) return TG_OK;
    return tg_set_error(TG_ERR_FORMAT, "%s:%lld: binary data (a NUL byte at byte %zu) in a CSV "
                        "file", path, ns->line, offset + upto + 1);
}

tg_status tg_dataset_load_csv(const char *path, tg_dataset **out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    TG__NONNULL(path, TG_ERR_INVALID);
    void *data;
    size_t len;
    *out = NULL;
    if (!path) return tg_set_error(TG_ERR_INVALID, "csv: path is NULL");
    nul_scan ns = {1, false};
    tg_status st = tg__read_input(path, CSV_MAX_BYTES, check_block, &ns, &data, &len);
    if (st) return st;
    st = tg_dataset_parse_csv(data, len, path, out);
    tg_free(data);
    return st;
}

/* ---- the built-in series ---- */

static const char *const ett_names[7] = {"HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT"};

tg_status tg_dataset_synthetic(int64_t rows, int64_t cols, uint64_t seed, tg_dataset **out)
{
    TG__NONNULL(out, TG_ERR_INVALID);
    *out = NULL;
    if (rows < 1 || rows > ((int64_t)1 << 28) || cols < 1 || cols > 64)
        return tg_set_error(TG_ERR_INVALID, "synthetic data: rows must be in [1, 2^28] and cols "
                            "in [1, 64], got %lld and %lld", (long long)rows, (long long)cols);
    tg_dataset *d = tg__calloc(1, sizeof *d);
    if (!d) return tg_set_error(TG_ERR_NOMEM, "synthetic data: out of memory");
    d->rows = rows;
    d->cols = cols;
    char src[96];
    tg__fmt(src, sizeof src, "synthetic(rows=%lld, cols=%lld, seed=%llu)", (long long)rows,
            (long long)cols, (unsigned long long)seed);
    d->data = tg__malloc((size_t)rows * (size_t)cols * sizeof *d->data);
    d->names = tg__calloc((size_t)cols, sizeof *d->names);
    d->source = tg__strdup(src);
    if (!d->data || !d->names || !d->source) goto oom;
    for (int64_t c = 0; c < cols; c++) {
        char nm[16];
        if (cols == 7) tg__fmt(nm, sizeof nm, "%s", ett_names[c]);
        else if (c == cols - 1) tg__fmt(nm, sizeof nm, "OT");
        else tg__fmt(nm, sizeof nm, "c%lld", (long long)c);
        if (!(d->names[c] = tg__strdup(nm))) goto oom;
    }

    /* Per-channel constants, drawn first so they do not depend on `rows`. */
    enum { MAXC = 64 };
    double amp_d[MAXC], ph_d[MAXC], amp_h[MAXC], amp_w[MAXC], ph_w[MAXC], load[MAXC],
        trend[MAXC], level[MAXC], lag[MAXC], noise[MAXC], ar[MAXC];
    const double two_pi = 6.283185307179586476925;
    tg_rng rng;
    tg_rng_seed(&rng, seed ^ 0x5eedda7a5e7ull);
    for (int64_t c = 0; c < cols; c++) {
        amp_d[c] = 0.6 + 0.8 * tg_rng_uniform(&rng);      /* daily cycle */
        ph_d[c] = two_pi * tg_rng_uniform(&rng);
        amp_h[c] = 0.3 * tg_rng_uniform(&rng);            /* its second harmonic */
        amp_w[c] = 0.3 + 0.5 * tg_rng_uniform(&rng);      /* weekly cycle */
        ph_w[c] = two_pi * tg_rng_uniform(&rng);
        load[c] = 0.5 + 1.0 * tg_rng_uniform(&rng);       /* share of the common factor */
        trend[c] = 0.6 * (tg_rng_uniform(&rng) - 0.5);    /* per 1000 steps */
        level[c] = 10.0 * (tg_rng_uniform(&rng) - 0.3);
        lag[c] = (double)tg_rng_below(&rng, 4);           /* steps behind the common factor */
        noise[c] = 0.08 + 0.12 * tg_rng_uniform(&rng);
        ar[c] = 0.0;
    }
    /* The common factor: a daily load curve whose height follows the week
     * (quieter weekends) plus slow AR(1) weather. It is generated a few steps
     * ahead so channels can lag it. */
    double weather = 0, ot = 0;
    enum { HIST = 8 };
    double common[HIST] = {0};
    for (int64_t t = -HIST; t < rows; t++) {
        double day = two_pi * (double)t / 24.0, week = two_pi * (double)t / 168.0;
        double weekday = 1.0 - 0.35 * (sin(week) > 0.62 ? 1.0 : 0.0);   /* ~2 quiet days */
        weather = 0.97 * weather + 0.05 * tg_rng_normal(&rng);
        double f = weekday * (sin(day - 1.2) + 0.35 * sin(2 * day + 0.4)) + 0.3 * weekday + weather;
        memmove(common + 1, common, (HIST - 1) * sizeof *common);
        common[0] = f;
        double mix = 0;
        for (int64_t c = 0; c < cols; c++) {
            ar[c] = 0.8 * ar[c] + noise[c] * tg_rng_normal(&rng);
            if (t < 0) continue;
            double v;
            if (c == cols - 1 && cols > 1) {
                /* OT: the oil temperature follows the load slowly (smoothed,
                 * lagged), with a weekly swing of its own */
                ot = 0.92 * ot + 0.08 * (mix / (double)(cols - 1));
                v = level[c] + 3.0 * ot + amp_w[c] * sin(week + ph_w[c]) +
                    trend[c] * (double)t / 1000.0 + 0.5 * ar[c];
            } else {
                v = level[c] + load[c] * common[(int)lag[c]] +
                    amp_d[c] * sin(day + ph_d[c]) + amp_h[c] * sin(2 * day + 2 * ph_d[c]) +
                    amp_w[c] * weekday * sin(week + ph_w[c]) + trend[c] * (double)t / 1000.0 +
                    ar[c];
                mix += v - level[c];
            }
            d->data[t * cols + c] = v;
        }
    }
    *out = d;
    return TG_OK;
oom:
    tg_dataset_free(d);
    return tg_set_error(TG_ERR_NOMEM, "synthetic data: out of memory");
}
