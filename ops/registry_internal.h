/*
 * registry_internal.h - what the registry rows in the op files share: reading
 * a call's resolved attributes, the glue function's signature, and the
 * gradcheck rule for index inputs along a dim. Library-private (ops/op_call.c).
 *
 * The glue only translates: every check of shapes, dims and values is the
 * builder's own (its message reaches the user unchanged). The glue checks
 * only what the builder's C signature cannot express (a list longer than a
 * tensor can be, a dim that does not fit an int, src and value= both given).
 */
#ifndef TG_REGISTRY_INTERNAL_H
#define TG_REGISTRY_INTERNAL_H

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "registry.h"

/* ---- reading resolved attributes (types were checked by tg_op_call_init) ---- */

/* The value of attribute `name`; NULL on a glue/table mismatch (the getters then read 0). */
const tg_value *tg__op_attr(const tg_op_call *c, const char *name);
bool            tg__op_is_null(const tg_op_call *c, const char *name);
int64_t         tg__op_int(const tg_op_call *c, const char *name);
double          tg__op_f(const tg_op_call *c, const char *name);
bool            tg__op_bool(const tg_op_call *c, const char *name);
const char     *tg__op_str(const tg_op_call *c, const char *name);   /* "" when unset */
/* Put tg_last_error() on the graph, prefixed with the op's name unless it has it. */
tg_status       tg__op_fail_last(tg_graph *g, const tg_op_call *c);
/* An int list attribute into out[0..max); -1 (graph error) when longer. */
int             tg__op_list(tg_graph *g, const tg_op_call *c, const char *name, int64_t *out,
                            int max);
/* The reduction= attribute (none, mean, sum) of a loss. */
tg_status       tg__op_reduction(tg_graph *g, const tg_op_call *c, tg_reduction *r);
/* A dim attribute as the builders' int; a value no int holds cannot be a dim. */
bool            tg__op_dim(tg_graph *g, const tg_op_call *c, const char *name, int *out);

/* gather/scatter/scatter_add/index_select gradcheck index rule: values in
 * [0, input.size(dim)) (see op_call.c). */
tg_status tg__op_gen_along_dim(const tg_op_call *c, int i, const tg_tensor *const *in,
                               tg_tensor *t, tg_rng *rng);

/* ---- glue: one per op (out[], *n_out as in tg_op_def.build) ---- */

#define TG_GLUE(fn) static tg_status fn(tg_graph *g, const tg_op_call *c, tg_node *const *in, \
                                        int n_in, tg_node **out, int *n_out)
#define TG_GLUE_ONE(expr) (out[0] = (expr), *n_out = 1, out[0] ? TG_OK : TG_ERR_INVALID)

/* Row helpers: a float input with the normal generator, an any-dtype one, a required dim. */
#define TG_IN(name) {name, TG_OP_IN_FLOAT, TG_OP_GEN_NORMAL}
#define TG_ANY(name) {name, TG_OP_IN_ANY, TG_OP_GEN_NORMAL}
#define TG_DIM_REQ(doc) {"dim", TG_OP_INT, NULL, false, doc, NULL, 0}

#endif
