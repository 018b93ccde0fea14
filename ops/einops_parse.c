/*
 * einops_parse.c - the einops pattern language (OPS.md 8.1, 8.2, 8.4): parse
 * both sides, check them in einops' order with einops' messages, expand
 * "...", take the keyword lengths and infer the others from the input shape.
 *
 * It mirrors einops/parsing.py (ParsedExpression) and einops/einops.py
 * (_prepare_transformation_recipe, _reconstruct_from_shape_uncached) step by
 * step. It is not the kernels and knows no graph: einops.c turns the recipe
 * into a node. Deliberate differences from einops: ASCII only; "exactly one
 * '->'" gets a real message (einops: a tuple-unpacking ValueError); negative
 * lengths and a zero divisor are rejected (einops crashes); sets are printed
 * in pattern order (Python's set order is random); axis-count limits.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "einops_parse.h"
#include "internal.h"

#define MAX_TOK 64   /* axes (and unit items) on one side */

typedef struct tok {
    int     off, len;   /* its text in the pattern */
    int64_t num;        /* >= 2: an anonymous axis of that length; 0: a name or "..." */
    bool    ellipsis;
} tok;

typedef struct item {   /* a top-level item: one dim ("..." outside parentheses: any number) */
    int  first, count;  /* its tokens; count 0 = a unit dim ("1", "()") */
    bool bare_ellipsis;
} item;

typedef struct side {
    const char *p;      /* the whole pattern */
    int   off, len;     /* this side's text */
    int   n_tok, n_item;
    tok   t[MAX_TOK];
    item  it[MAX_TOK];
    bool  has_ellipsis, ellipsis_in_group, has_anon;
} side;

typedef struct ctx {
    char  *err;
    size_t errlen;
} ctx;

static bool fail(ctx *c, const char *fmt, ...) TG__PRINTF(2, 3);
static bool fail(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->errlen, fmt, ap);
    va_end(ap);
    return false;
}

static bool is_digit(int ch) { return ch >= '0' && ch <= '9'; }
static bool is_alpha(int ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }
static bool is_word(int ch) { return is_alpha(ch) || is_digit(ch) || ch == '_'; }

/* A valid axis name: a Python identifier (ASCII) not starting or ending with '_'. */
static const char *name_problem(const char *s, int len)
{
    if (len == 0 || !(is_alpha(s[0]) || s[0] == '_')) return "not a valid python identifier";
    for (int i = 0; i < len; i++)
        if (!is_word((unsigned char)s[i])) return "not a valid python identifier";
    if (s[0] == '_' || s[len - 1] == '_')
        return "axis name should should not start or end with underscore";   /* sic, einops */
    return NULL;
}

/* ---------------------------------------------------------------- one side */

/* Dots may only form one "..." (parsing.py checks this before anything else). */
static bool check_dots(ctx *c, side *s)
{
    const char *p = s->p + s->off;
    int dots = 0, triples = 0;
    for (int i = 0; i < s->len; i++) dots += p[i] == '.';
    if (!dots) return true;
    for (int i = 0; i + 3 <= s->len;) {   /* non-overlapping, like str.count */
        if (p[i] == '.' && p[i + 1] == '.' && p[i + 2] == '.') {
            triples++;
            i += 3;
        } else {
            i++;
        }
    }
    if (!triples) return fail(c, "Expression may contain dots only inside ellipsis (...)");
    if (triples != 1 || dots != 3)
        return fail(c, "Expression may contain dots only inside ellipsis (...); only one "
                       "ellipsis for tensor ");
    s->has_ellipsis = true;
    return true;
}

static bool same_name(const side *s, const tok *t, const char *x, int len)
{
    return !t->num && !t->ellipsis && t->len == len && !memcmp(s->p + t->off, x, (size_t)len);
}

/* parsing.py's add_axis_name: one finished word at [off, off+len); group is the
 * item index of the open parenthesis, or -1 at top level. */
static bool add_word(ctx *c, side *s, int off, int len, int group)
{
    const char *x = s->p + off;
    bool ell = len == 3 && !memcmp(x, "...", 3), number = true;
    int64_t v = 0;
    if (!ell)
        for (int i = 0; i < s->n_tok; i++)
            if (same_name(s, &s->t[i], x, len))
                return fail(c, "Indexing expression contains duplicate dimension \"%.*s\"", len, x);
    for (int i = 0; i < len && number; i++) number = is_digit(x[i]);
    if (number) {
        for (int i = 0; i < len; i++) {
            if (v > (INT64_MAX - (x[i] - '0')) / 10)
                return fail(c, "Anonymous axis %.*s is too long (tgraph's limit: 2^63 - 1)", len, x);
            v = v * 10 + (x[i] - '0');
        }
        if (v == 1) {   /* a unit axis: a length-1 dim at top level, nothing inside a group */
            if (group >= 0) return true;
            if (s->n_item == MAX_TOK)
                return fail(c, "more than %d items on one side (tgraph's limit)", MAX_TOK);
            s->it[s->n_item++] = (item){s->n_tok, 0, false};
            return true;
        }
        if (v == 0) return fail(c, "Anonymous axis should have positive length, not 0");
    } else if (!ell) {
        const char *why = name_problem(x, len);
        if (why) return fail(c, "Invalid axis identifier: %.*s (%s)", len, x, why);
    }
    if (s->n_tok == MAX_TOK || s->n_item == MAX_TOK)
        return fail(c, "more than %d axes on one side (tgraph's limit)", MAX_TOK);
    s->t[s->n_tok++] = (tok){off, len, number ? v : 0, ell};
    if (ell && group >= 0) s->ellipsis_in_group = true;
    if (number) s->has_anon = true;
    if (group >= 0)
        s->it[group].count++;
    else
        s->it[s->n_item++] = (item){s->n_tok - 1, 1, ell};
    return true;
}

/* ParsedExpression(expression): words, one level of parentheses, spaces. */
static bool parse_side(ctx *c, side *s)
{
    const char *p = s->p;
    int word = -1, group = -1;   /* start of the current word; item of the open group */
    if (!check_dots(c, s)) return false;
    for (int i = s->off; i < s->off + s->len; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '(' || ch == ')' || ch == ' ') {
            if (word >= 0 && !add_word(c, s, word, i - word, group)) return false;
            word = -1;
            if (ch == '(') {
                if (group >= 0)
                    return fail(c, "Axis composition is one-level (brackets inside brackets not "
                                   "allowed)");
                if (s->n_item == MAX_TOK)
                    return fail(c, "more than %d items on one side (tgraph's limit)", MAX_TOK);
                group = s->n_item;
                s->it[s->n_item++] = (item){s->n_tok, 0, false};
            } else if (ch == ')') {
                if (group < 0) return fail(c, "Brackets are not balanced");
                group = -1;
            }
        } else if (is_word(ch) || ch == '.') {   /* dots: part of the one "..." */
            if (word < 0) word = i;
        } else if (ch >= 0x80) {
            return fail(c, "Unknown character: byte 0x%02x is not ASCII (tgraph accepts only "
                           "ASCII in patterns)", ch);
        } else if (ch == '\t') {
            return fail(c, "Unknown character '\\t'");
        } else if (ch == '\n') {
            return fail(c, "Unknown character '\\n'");
        } else if (ch < 0x20 || ch == 0x7f) {
            return fail(c, "Unknown character '\\x%02x'", ch);
        } else {
            return fail(c, "Unknown character '%c'", ch);
        }
    }
    if (group >= 0)
        return fail(c, "Imbalanced parentheses in expression: \"%.*s\"", s->len, p + s->off);
    if (word >= 0 && !add_word(c, s, word, s->off + s->len - word, -1)) return false;
    return true;
}

/* ------------------------------------------------- identifier set messages */

/* A Python-looking set "{'b', 'c'}" built in pattern order. */
typedef struct setstr {
    char   s[256];
    size_t n;
    int    count;
} setstr;

static void set_add(setstr *b, const side *s, const tok *t)
{
    if (b->n >= sizeof b->s) return;
    size_t room = sizeof b->s - b->n;
    const char *sep = b->count++ ? ", " : "";
    int k;
    if (t->ellipsis)
        k = snprintf(b->s + b->n, room, "%s'\xe2\x80\xa6'", sep);   /* einops shows '…' */
    else if (t->num)
        k = snprintf(b->s + b->n, room, "%s%lld-axis", sep, (long long)t->num);
    else
        k = snprintf(b->s + b->n, room, "%s'%.*s'", sep, t->len, s->p + t->off);
    b->n += k > 0 ? (size_t)k : 0;
    if (b->n >= sizeof b->s) b->n = sizeof b->s - 1;
}

static const char *set_str(setstr *b, char *out, size_t len)
{
    snprintf(out, len, "{%s}", b->s);
    return out;
}

/* Is token t of side a (a name or "...") among the identifiers of side b? */
static bool in_side(const side *a, const tok *t, const side *b)
{
    if (t->ellipsis) return b->has_ellipsis;
    if (t->num) return false;   /* anonymous axes are all distinct */
    for (int i = 0; i < b->n_tok; i++)
        if (same_name(b, &b->t[i], a->p + t->off, t->len)) return true;
    return false;
}

static bool given(const tok *t, const char *p, int n_kw, const tg_axis_len *kw)
{
    for (int k = 0; k < n_kw; k++)
        if (kw[k].name && (int)strlen(kw[k].name) == t->len &&
            !memcmp(kw[k].name, p + t->off, (size_t)t->len))
            return true;
    return false;
}

/* The identifier checks of _prepare_transformation_recipe, per op. */
static bool check_identifiers(ctx *c, tg__ein_kind kind, const char *what, const side *L,
                              const side *R, int n_kw, const tg_axis_len *kw)
{
    const char *pat = L->p;
    setstr d = {.n = 0};
    char buf[300];
    if (!L->has_ellipsis && R->has_ellipsis)
        return fail(c, "Ellipsis found in right side, but not left side of a pattern %s", pat);
    if (L->has_ellipsis && L->ellipsis_in_group)
        return fail(c, "Ellipsis inside parenthesis in the left side is not allowed: %s", pat);
    if (kind == TG__EIN_REARRANGE) {
        if (L->has_anon || R->has_anon)
            return fail(c, "Non-unitary anonymous axes are not supported in rearrange (exception "
                           "is length 1)");
        for (int i = 0; i < L->n_tok; i++)
            if (!in_side(L, &L->t[i], R)) set_add(&d, L, &L->t[i]);
        for (int i = 0; i < R->n_tok; i++)
            if (!in_side(R, &R->t[i], L)) set_add(&d, R, &R->t[i]);
        if (d.count)
            return fail(c, "Identifiers only on one side of expression (should be on both): %s",
                        set_str(&d, buf, sizeof buf));
    } else if (kind == TG__EIN_REPEAT) {
        for (int i = 0; i < L->n_tok; i++)
            if (!in_side(L, &L->t[i], R)) set_add(&d, L, &L->t[i]);
        if (d.count)
            return fail(c, "Unexpected identifiers on the left side of repeat: %s",
                        set_str(&d, buf, sizeof buf));
        for (int i = 0; i < R->n_tok; i++) {
            const tok *t = &R->t[i];
            if (!t->num && !t->ellipsis && !in_side(R, t, L) && !given(t, pat, n_kw, kw))
                set_add(&d, R, t);
        }
        if (d.count)
            return fail(c, "Specify sizes for new axes in repeat: %s", set_str(&d, buf, sizeof buf));
    } else {
        for (int i = 0; i < R->n_tok; i++)
            if (!in_side(R, &R->t[i], L)) set_add(&d, R, &R->t[i]);
        if (d.count)
            return fail(c, "Unexpected identifiers on the right side of reduce %s: %s", what,
                        set_str(&d, buf, sizeof buf));
    }
    return true;
}

/* ------------------------------------------------------ the recipe proper */

enum { UNKNOWN, KNOWN };

typedef struct axes {
    tg__ein_recipe *r;
    int  state[TG__EIN_MAX_AXES];
    int  ell[TG_MAX_RANK];   /* elementary axis of each ellipsis dim */
} axes;

static bool new_axis(ctx *c, axes *A, const tok *t, int64_t len, int state)
{
    tg__ein_recipe *r = A->r;
    if (r->n_axes == TG__EIN_MAX_AXES)
        return fail(c, "more than %d axes in one pattern (tgraph's limit)", TG__EIN_MAX_AXES);
    int a = r->n_axes++;
    r->len[a] = len;
    A->state[a] = state;
    r->name_off[a] = t && !t->num && !t->ellipsis ? t->off : -1;
    r->name_len[a] = r->name_off[a] >= 0 ? t->len : 0;
    r->on_right[a] = false;
    return true;
}

static int find_name(const tg__ein_recipe *r, const char *p, const char *x, int len)
{
    for (int a = 0; a < r->n_axes; a++)
        if (r->name_off[a] >= 0 && r->name_len[a] == len && !memcmp(p + r->name_off[a], x, (size_t)len))
            return a;
    return -1;
}

static bool put_right(axes *A, int a)
{
    A->r->on_right[a] = true;
    A->r->right[A->r->n_right++] = a;
    return true;
}

/* One tg__ein_prepare call's working state: the two sides, the axes, and
 * which axes make each input dim and each output dim. */
typedef struct prep {
    ctx         c;
    const char *pattern;
    side        L, R;
    axes        A;
    int         n_ell;   /* input dims the left's "..." stands for */
    int         gfirst[TG_MAX_RANK], gcount[TG_MAX_RANK];   /* input dim d: its axes */
    int         out_first[MAX_TOK + TG_MAX_RANK], out_count[MAX_TOK + TG_MAX_RANK];
    int         n_out;   /* output dims; o's axes: r->right[out_first[o]...] */
} prep;

/* left_str, rght_str = pattern.split("->"), each side parsed and the identifiers checked. */
static bool split_sides(prep *P, tg__ein_kind kind, const char *what, int n_kw,
                        const tg_axis_len *kw)
{
    ctx *c = &P->c;
    side *L = &P->L, *R = &P->R;
    const char *pattern = P->pattern;
    size_t full = strlen(pattern);
    if (full > 65536) return fail(c, "the pattern is %zu bytes long (tgraph's limit: 65536)", full);
    int arrows = 0, split = -1, plen = (int)full;
    for (const char *q = pattern; (q = strstr(q, "->")) != NULL; q += 2)
        if (arrows++ == 0) split = (int)(q - pattern);
    if (arrows != 1)
        return fail(c, "Pattern must contain exactly one \"->\" between its left and right "
                        "side, found %d", arrows);
    L->p = R->p = pattern;
    L->off = 0;
    L->len = split;
    R->off = split + 2;
    R->len = plen - R->off;
    if (!parse_side(c, L) || !parse_side(c, R)) return false;
    if (!check_identifiers(c, kind, what, L, R, n_kw, kw)) return false;
    return true;
}

/* rank; "..." stands for what the other items leave */
static bool count_ellipsis(prep *P, int rank)
{
    ctx *c = &P->c;
    const side *L = &P->L;
    int n_ell = 0;
    if (L->has_ellipsis) {
        int other = L->n_item - 1;
        if (rank < other)
            return fail(c, "Wrong shape: expected >=%d dims. Received %d-dim tensor.", other, rank);
        n_ell = rank - other;
    } else if (rank != L->n_item) {
        return fail(c, "Wrong shape: expected %d dims. Received %d-dim tensor.", L->n_item, rank);
    }
    P->n_ell = n_ell;
    return true;
}

/* the left's elementary axes, input dim by input dim */
static bool left_axes(prep *P)
{
    ctx *c = &P->c;
    const side *L = &P->L;
    axes *A = &P->A;
    tg__ein_recipe *r = A->r;
    const int n_ell = P->n_ell;
    int *gfirst = P->gfirst, *gcount = P->gcount, d = 0;
    for (int i = 0; i < L->n_item; i++) {
        const item *it = &L->it[i];
        if (it->bare_ellipsis) {
            for (int e = 0; e < n_ell; e++, d++) {
                gfirst[d] = r->n_axes;
                gcount[d] = 1;
                A->ell[e] = r->n_axes;
                if (!new_axis(c, A, &L->t[it->first], 0, UNKNOWN)) return false;
            }
            continue;
        }
        gfirst[d] = r->n_axes;
        gcount[d] = it->count;
        for (int k = 0; k < it->count; k++) {
            const tok *t = &L->t[it->first + k];
            if (!new_axis(c, A, t, t->num, t->num ? KNOWN : UNKNOWN)) return false;
        }
        d++;
    }
    r->n_left = r->n_axes;
    return true;
}

/* the right: each item one output dim; new axes (repeat) get created */
static bool right_axes(prep *P)
{
    ctx *c = &P->c;
    const side *R = &P->R;
    axes *A = &P->A;
    tg__ein_recipe *r = A->r;
    const char *pattern = P->pattern;
    const int n_ell = P->n_ell;
    int *out_first = P->out_first, *out_count = P->out_count, n_out = 0;
    for (int i = 0; i < R->n_item; i++) {
        const item *it = &R->it[i];
        if (it->bare_ellipsis) {
            for (int e = 0; e < n_ell; e++, n_out++) {
                out_first[n_out] = r->n_right;
                out_count[n_out] = 1;
                put_right(A, A->ell[e]);
            }
            continue;
        }
        out_first[n_out] = r->n_right;
        for (int k = 0; k < it->count; k++) {
            const tok *t = &R->t[it->first + k];
            if (t->ellipsis) {
                for (int e = 0; e < n_ell; e++) put_right(A, A->ell[e]);
                continue;
            }
            int a = t->num ? -1 : find_name(r, pattern, pattern + t->off, t->len);
            if (a < 0) {   /* repeat's new axis (the checks above allow nothing else) */
                a = r->n_axes;
                if (!new_axis(c, A, t, t->num, t->num ? KNOWN : UNKNOWN)) return false;
            }
            put_right(A, a);
        }
        out_count[n_out] = r->n_right - out_first[n_out];
        n_out++;
    }
    P->n_out = n_out;
    return true;
}

/* keyword lengths */
static bool keyword_lengths(prep *P, int n_kw, const tg_axis_len *kw)
{
    ctx *c = &P->c;
    axes *A = &P->A;
    tg__ein_recipe *r = A->r;
    const char *pattern = P->pattern;
    for (int k = 0; k < n_kw; k++) {
        const char *nm = kw[k].name;
        if (!nm) return fail(c, "axis length %d has no name (NULL)", k);
        if (name_problem(nm, (int)strlen(nm))) return fail(c, "('Invalid name for an axis', '%s')", nm);
        int a = find_name(r, pattern, nm, (int)strlen(nm));
        if (a < 0) return fail(c, "Axis %s is not used in transform", nm);
        for (int j = 0; j < k; j++)
            if (kw[j].name && !strcmp(kw[j].name, nm))
                return fail(c, "Axis %s is given twice in the axis lengths", nm);
        if (kw[k].len < 0)
            return fail(c, "Axis %s has negative length %lld", nm, (long long)kw[k].len);
        r->len[a] = kw[k].len;
        A->state[a] = KNOWN;
    }
    return true;
}

/* at most one unknown per input dim */
static bool one_unknown_per_dim(prep *P, int rank)
{
    ctx *c = &P->c;
    side *L = &P->L;
    const axes *A = &P->A;
    const tg__ein_recipe *r = A->r;
    const int *gfirst = P->gfirst, *gcount = P->gcount;
    for (int d = 0; d < rank; d++) {
        setstr u = {.n = 0};
        char buf[300];
        for (int k = 0; k < gcount[d]; k++) {
            int a = gfirst[d] + k;
            if (A->state[a] == UNKNOWN) {
                tok t = {r->name_off[a], r->name_len[a], 0, false};
                set_add(&u, L, &t);
            }
        }
        if (u.count > 1) return fail(c, "Could not infer sizes for %s", set_str(&u, buf, sizeof buf));
    }
    return true;
}

/* infer from the input shape, dim by dim */
static bool infer_lengths(prep *P, int rank, const int64_t *shape)
{
    ctx *c = &P->c;
    const axes *A = &P->A;
    tg__ein_recipe *r = A->r;
    const int *gfirst = P->gfirst, *gcount = P->gcount;
    for (int d = 0; d < rank; d++) {
        int64_t len = shape[d], known = 1;
        int unknown = -1;
        for (int k = 0; k < gcount[d]; k++) {
            int a = gfirst[d] + k;
            if (A->state[a] == UNKNOWN)
                unknown = a;
            else if (!tg__mul_overflow_i64(known, r->len[a], &known))
                return fail(c, "Shape mismatch, the axis lengths of dim %d overflow", d);
        }
        if (unknown >= 0 && gcount[d] == 1) {
            r->len[unknown] = len;
        } else if (unknown < 0) {
            if (len != known)
                return fail(c, "Shape mismatch, %lld != %lld", (long long)len, (long long)known);
        } else {
            if (known == 0 || len % known)
                return fail(c, "Shape mismatch, can't divide axis of length %lld in chunks of %lld",
                            (long long)len, (long long)known);
            r->len[unknown] = len / known;
        }
    }
    return true;
}

/* the output shape */
static bool output_shape(prep *P)
{
    ctx *c = &P->c;
    tg__ein_recipe *r = P->A.r;
    const int *out_first = P->out_first, *out_count = P->out_count, n_out = P->n_out;
    if (n_out > TG_MAX_RANK)
        return fail(c, "the result would have %d dims; tgraph supports at most %d", n_out,
                    TG_MAX_RANK);
    r->out_rank = n_out;
    int64_t total = 1;
    for (int o = 0; o < n_out; o++) {
        int64_t len = 1;
        for (int k = 0; k < out_count[o]; k++)
            if (!tg__mul_overflow_i64(len, r->len[r->right[out_first[o] + k]], &len))
                return fail(c, "the result's dim %d overflows int64", o);
        r->out_shape[o] = len;
        if (!tg__mul_overflow_i64(total, len, &total) || total > (INT64_MAX >> 5))
            return fail(c, "the result has too many elements");
    }
    return true;
}

bool tg__ein_prepare(const char *pattern, tg__ein_kind kind, const char *what, int rank,
                     const int64_t *shape, int n_kw, const tg_axis_len *kw, tg__ein_recipe *r,
                     char *err, size_t errlen)
{
    static const prep zero;
    prep P = zero;
    P.c = (ctx){err, errlen};
    P.pattern = pattern;
    P.A.r = r;
    memset(r, 0, sizeof *r);
    return split_sides(&P, kind, what, n_kw, kw) && count_ellipsis(&P, rank) && left_axes(&P) &&
           right_axes(&P) && keyword_lengths(&P, n_kw, kw) && one_unknown_per_dim(&P, rank) &&
           infer_lengths(&P, rank, shape) && output_shape(&P);
}
