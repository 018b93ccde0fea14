/*
 * registry.c - the op registry (ops/registry.h) over the op families: each family's
 * rows live after its builders in its own op file, as `tg__FAMILY_ops[]`
 * ended by a {0} row; the order here is the order of `tgraph op --help` and
 * of the man page. The list is ops/ops.h: adding an op family is one
 * #include line there.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "registry_internal.h"

/* The families' rows, in ops/ops.h's order: each family header ends with
 * TG__OP_FAMILY(name) when it is defined. */
#define TG__OP_FAMILY(family) extern const tg_op_def tg__##family##_ops[];
#include "ops.h"
#undef TG__OP_FAMILY

static const tg_op_def *const families[] = {
#define TG__OP_FAMILY(family) tg__##family##_ops,
#include "ops.h"
#undef TG__OP_FAMILY
};
#define N_FAMILIES (int)(sizeof families / sizeof *families)

int tg_op_count(void)
{
    int n = 0;
    for (int f = 0; f < N_FAMILIES; f++)
        for (const tg_op_def *d = families[f]; d->name; d++) n++;
    return n;
}

const tg_op_def *tg_op_at(int i)
{
    if (i < 0) return NULL;
    for (int f = 0; f < N_FAMILIES; f++)
        for (const tg_op_def *d = families[f]; d->name; d++)
            if (i-- == 0) return d;
    return NULL;
}

const tg_op_def *tg_op_find(const char *name)
{
    TG__NONNULL(name, NULL);
    if (!strcmp(name, "concat")) name = "cat";
    for (int f = 0; f < N_FAMILIES; f++)
        for (const tg_op_def *d = families[f]; d->name; d++)
            if (!strcmp(d->name, name)) return d;
    return NULL;
}

void tg_op_names(char *buf, size_t len)
{
    size_t at = 0;
    if (!buf || !len) return;
    buf[0] = '\0';
    for (int i = 0; i < tg_op_count() && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", tg_op_at(i)->name);
}

bool tg_op_has_backward(const tg_op_def *op)
{
    TG__NONNULL(op, false);
    return op->desc && (op->desc->backward || (op->desc->flags & TG_OP_VIEW));
}

const char *tg_op_attr_type_name(tg_op_attr_type t) { return tg_key_type_name(t); }

const char *tg_op_input_kind_name(tg_op_input_kind k)
{
    switch (k) {
    case TG_OP_IN_FLOAT: return "float";
    case TG_OP_IN_CONST: return "float, no grad";
    case TG_OP_IN_INDEX: return "int64";
    case TG_OP_IN_MASK: return "bool";
    case TG_OP_IN_TARGET: return "int64 or float";
    case TG_OP_IN_ANY: return "any dtype";
    default: return "?";
    }
}
