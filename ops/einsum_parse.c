/*
 * einsum_parse.c - the einsum equation (OPS.md 4.1, 4.2, 4.4): parse both sides
 * exactly as PyTorch does (same checks in the same order, same messages),
 * give every label an integer id (0-25 'A'-'Z', 26-51 'a'-'z', 52.. one per
 * ellipsis dim), size every label and turn each operand into a view: its
 * distinct labels with size and stride, a repeated label one entry whose
 * stride is the sum of its dims' strides (the diagonal, read in place).
 *
 * It is not the planner, the kernels or the node: einsum.c squeezes the
 * views, compiles the plans and runs them.
 */
#include <string.h>

#include "einsum_parse.h"
#include "ops_internal.h"

/* ================================================================ parsing */

static int label_id(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
    return -1;
}

static char label_chr(int id) { return (char)(id < 26 ? 'A' + id : 'a' + id - 26); }

#define FAIL(...) (tg_graph_fail(g, __VA_ARGS__), false)

/* The left side: one term per operand (PyTorch's checks, in its order). */
bool tg__em_parse_lhs(tg_graph *g, const char *eq, size_t lhs_len, em_eq *e)
{
    int cur = 0;
    bool ell = false;
    for (size_t i = 0; i < lhs_len; i++) {
        unsigned char c = (unsigned char)eq[i];
        int id = label_id(c);
        if (c == ' ') continue;
        if (c == '.') {
            if (ell)
                return FAIL("einsum(): found '.' for operand %d for which an ellipsis was "
                            "already found", cur);
            if (!(i + 2 < lhs_len && eq[i + 1] == '.' && eq[i + 2] == '.'))
                return FAIL("einsum(): found '.' for operand %d that is not part of any ellipsis",
                            cur);
            i += 2;
            id = EM_ELL;
            ell = e->has_ell[cur] = true;
        } else if (c == ',') {
            if (++cur >= e->n)
                return FAIL("einsum(): fewer operands were provided than specified in the "
                            "equation");
            ell = false;
            continue;
        } else if (id < 0) {
            return FAIL("einsum(): invalid subscript given at index %zu in the equation string, "
                        "subscripts must be in [a-zA-Z]", i);
        }
        if (e->nent[cur] < EM_TERM) e->ent[cur][e->nent[cur]] = (int8_t)id;
        e->nent[cur]++;
    }
    if (cur != e->n - 1)
        return FAIL("einsum(): more operands were provided than specified in the equation");
    return true;
}

/* The output term (explicit after "->", else implicit), then the label sizes
 * and the operand views. */
bool tg__em_parse_rest(tg_graph *g, const char *eq, const char *arrow, tg_node *const *ops,
                       em_eq *e)
{
    int count[EM_LETTERS] = {0};
    bool used[EM_MAXL] = {false};
    for (int i = 0; i < e->n; i++) {
        int rank = ops[i]->value.rank, nl = e->nent[i] - e->has_ell[i];
        bool has_ell = e->has_ell[i];
        if (has_ell && rank - nl > e->ell) e->ell = rank - nl;
        for (int j = 0; j < e->nent[i] && j < EM_TERM; j++)
            if (e->ent[i][j] != EM_ELL) count[e->ent[i][j]]++;
        if (has_ell && nl > rank)
            return FAIL("einsum(): the number of subscripts in the equation (%d) is more than the "
                        "number of dimensions (%d) for operand %d", nl, rank, i);
        if (!has_ell && nl != rank)
            return FAIL("einsum(): the number of subscripts in the equation (%d) does not match "
                        "the number of dimensions (%d) for operand %d and no ellipsis was given",
                        nl, rank, i);
    }
    if (!arrow) {   /* implicit: the ellipsis dims, then labels used once, A-Z before a-z */
        for (int j = 0; j < e->ell; j++) e->out[e->nout++] = (int8_t)(EM_LETTERS + j);
        for (int id = 0; id < EM_LETTERS; id++)
            if (count[id] == 1) e->out[e->nout++] = (int8_t)id;
    } else {
        const char *rhs = arrow + 2;
        size_t rlen = strlen(rhs), lhs_len = (size_t)(arrow - eq);
        bool ell = false;
        for (size_t i = 0; i < rlen; i++) {
            unsigned char c = (unsigned char)rhs[i];
            int id = label_id(c);
            if (c == ' ') continue;
            if (c == '.') {
                if (ell)
                    return FAIL("einsum(): found '.' for output but an ellipsis (...) was already "
                                "found");
                if (!(i + 2 < rlen && rhs[i + 1] == '.' && rhs[i + 2] == '.'))
                    return FAIL("einsum(): found '.' for output that is not part of any ellipsis "
                                "(...)");
                i += 2;
                ell = true;
                for (int j = 0; j < e->ell; j++) e->out[e->nout++] = (int8_t)(EM_LETTERS + j);
            } else if (id < 0) {
                return FAIL("einsum(): invalid subscript given at index %zu in the equation "
                            "string, subscripts must be in [a-zA-Z]", lhs_len + 2 + i);
            } else if (!count[id] || used[id]) {
                return FAIL("einsum(): output subscript %c %s", c,
                            used[id] ? "appears more than once in the output"
                                     : "does not appear in the equation for any input operand");
            } else {
                used[id] = true;
                e->out[e->nout++] = (int8_t)id;
            }
        }
    }
    if (e->nout > TG_MAX_RANK)
        return FAIL("einsum(): the output would have %d dims, more than the maximum rank %d",
                    e->nout, TG_MAX_RANK);

    /* sizes: equal or 1 across operands, exactly equal on a diagonal */
    for (int l = 0; l < EM_MAXL; l++) e->lsize[l] = 1;
    for (int i = 0; i < e->n; i++) {
        const tg_tensor *x = &ops[i]->value;
        int64_t cs[TG_MAX_RANK];
        em_view *v = &e->opv[i];
        int d = 0, pd = 0;   /* dim of x, and PyTorch's dim (after taking diagonals) */
        tg__strides(x->rank, x->shape, cs);
        v->ref = EM_IN + i;
        for (int j = 0; j < e->nent[i]; j++) {
            int id = e->ent[i][j], at;
            if (id == EM_ELL) {
                int nd = x->rank - (e->nent[i] - 1);
                for (int k = e->ell - nd; k < e->ell; k++, d++, pd++) {
                    int64_t sz = x->shape[d], *ls = &e->lsize[EM_LETTERS + k];
                    if (sz != 1 && *ls != 1 && *ls != sz)
                        return FAIL("einsum(): dimension %d covered by ellipsis in operand %d"
                                    "has size %lld which does not broadcast with previously seen "
                                    "ellipsis with size %lld for the respective dimension", pd, i,
                                    (long long)sz, (long long)*ls);
                    if (sz != 1) *ls = sz;
                    v->lab[v->n] = (int8_t)(EM_LETTERS + k);
                    v->size[v->n] = sz;
                    v->stride[v->n++] = cs[d];
                }
            } else if ((at = tg__em_vfind(v, id)) < 0) {
                int64_t sz = x->shape[d];
                if (sz != 1 && e->lsize[id] != 1 && e->lsize[id] != sz)
                    return FAIL("einsum(): subscript %c has size %lld for operand %d which does "
                                "not broadcast with previously seen size %lld", label_chr(id),
                                (long long)sz, i, (long long)e->lsize[id]);
                if (sz != 1) e->lsize[id] = sz;
                v->lab[v->n] = (int8_t)id;
                v->size[v->n] = sz;
                v->stride[v->n++] = cs[d++];
                pd++;
            } else {
                if (x->shape[d] != v->size[at])
                    return FAIL("einsum(): subscript %c is repeated for operand %d but the sizes "
                                "don't match, %lld != %lld", label_chr(id), i,
                                (long long)x->shape[d], (long long)v->size[at]);
                v->stride[at] += cs[d++];   /* the diagonal, read in place */
            }
        }
    }
    return true;
}
