/*
 * einsum_parse.h - what einsum_parse.c and einsum.c share: the label ids, the
 * labelled strided view an operand becomes, and the parsed equation.
 * Library-private.
 *
 * tg__em_parse_lhs and tg__em_parse_rest turn (equation, operands) into an
 * em_eq: one term per operand, the output labels, the size of every label and
 * each operand's view (its distinct labels with size and stride). einsum.c
 * then squeezes the views and plans the contraction from them; it needs
 * nothing else from the equation.
 */
#ifndef TG_EINSUM_PARSE_H
#define TG_EINSUM_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "einsum.h"
#include "tensor.h"

#define EM_LETTERS 52                    /* label ids 0..51: 'A'-'Z', 'a'-'z' */
#define EM_MAXL    (EM_LETTERS + TG_MAX_RANK)   /* + one id per ellipsis dim */
#define EM_ELL     (-1)                  /* "..." inside a parsed term */
#define EM_TERM    (TG_MAX_RANK + 2)     /* parsed entries kept per term */
#define EM_MAXOPS  TG_EINSUM_MAX_OPERANDS

/* Which buffer a view or step reads/writes: scratch, dy, y, in[k], in[k]->grad. */
enum { EM_SCRATCH, EM_DY, EM_OUT, EM_IN = 16, EM_GRAD = 16 + EM_MAXOPS };

typedef struct {         /* a labelled strided view of a buffer */
    int     n;
    int8_t  lab[EM_MAXL];
    int64_t size[EM_MAXL], stride[EM_MAXL];
    int     ref;         /* EM_* buffer */
    int64_t off;         /* element offset into it */
} em_view;

/* The entry of v with label lab; -1 if v does not have it. */
static inline int tg__em_vfind(const em_view *v, int lab)
{
    for (int i = 0; i < v->n; i++)
        if (v->lab[i] == lab) return i;
    return -1;
}

typedef struct {
    int     n;                       /* operands */
    int     nent[EM_MAXOPS];         /* entries per term ("..." counts one) */
    int8_t  ent[EM_MAXOPS][EM_TERM]; /* label ids or EM_ELL (first EM_TERM kept) */
    bool    has_ell[EM_MAXOPS];
    int     ell;                     /* dims the widest ellipsis covers */
    int     nout;
    int8_t  out[EM_MAXL];            /* output label ids */
    int64_t lsize[EM_MAXL];
    em_view opv[EM_MAXOPS], outv;
    bool    zero;                    /* some label has size 0 */
} em_eq;

/* The left side of eq (its first lhs_len bytes): one term per operand, in
 * e->ent / e->nent / e->has_ell (e->n set by the caller). On a bad equation
 * records PyTorch's message on g and returns false. */
bool tg__em_parse_lhs(tg_graph *g, const char *eq, size_t lhs_len, em_eq *e);
/* The output term (explicit after arrow, the "->" in eq, or implicit when
 * arrow is NULL), then every label's size and the operand views e->opv
 * (after tg__em_parse_lhs). On a bad equation or shape records PyTorch's
 * message on g and returns false. */
bool tg__em_parse_rest(tg_graph *g, const char *eq, const char *arrow, tg_node *const *ops,
                       em_eq *e);

#endif
