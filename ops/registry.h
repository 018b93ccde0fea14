/*
 * registry.h - the one op registry: every op of ops/ by its PyTorch/einops
 * name, as data: its attributes (PyTorch's/einops' argument names, types,
 * defaults, one line of doc each), its tensor inputs in PyTorch's positional
 * order with their dtypes, its outputs, whether it has a gradient, and a glue
 * function that calls the builder. Each op family declares its ops once, after
 * its builders, in its own file in ops/; ops/ops.h lists the families.
 * `tgraph op`, its help, the man page's op list, `tgraph gradcheck OP` and the
 * op-completeness test (tests/test_registry.c) all read it; a C program can
 * call any op by name through it too:
 *
 *     const tg_op_def *op = tg_op_find("topk");
 *     tg_op_call call;
 *     tg_op_call_init(&call, op, cfg);          // cfg: k=3 dim=-1 (value.h)
 *     ... create the input nodes (tg_op_make_inputs), then
 *     tg_op_build(g, &call, in, n_in, out, TG_OP_MAX_OUTPUTS, &n_out);
 *     tg_op_call_free(&call);
 *
 * The functions below are in ops/op_call.c and ops/registry.c. It is not a
 * general dispatcher: attributes PyTorch has but tgraph does not implement
 * (scatter's reduce=, div's rounding_mode=) are unknown attributes.
 *
 * Adding an op: its builder, and after it in the same file a row
 * `{"name", "torch.name(...)", {attrs}, ...}` in the family's array
 * (`const tg_op_def tg__FAMILY_ops[]`, ended by {0}) with its glue, its
 * descriptor, a gradcheck and a bad-input case; a new family is its files
 * (ops/FAMILY.c, ops/FAMILY.h ending with its TG__OP_FAMILY(FAMILY) line)
 * and one #include "FAMILY.h" line in ops/ops.h. Its PyTorch fixture goes to
 * tests/fixtures/ops/NAME/ (see tests/test_registry.c).
 */
#ifndef TG_REGISTRY_H
#define TG_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "einops.h"
#include "error.h"
#include "graph.h"
#include "op.h"
#include "rng.h"
#include "tensor.h"
#include "value.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TG_OP_MAX_ATTRS   8    /* attributes of one op */
#define TG_OP_MAX_AXES    32   /* einops axis lengths (b=2) */
#define TG_OP_MAX_INPUTS  16   /* tensor inputs (einsum operands, cat tensors) */
#define TG_OP_MAX_OUTPUTS 64   /* outputs (split pieces) */

/* An attribute is a row of the one key schema (engine/io/value.h's tg_key):
 * {name (PyTorch's / einops' argument name; NULL ends the list), type,
 * default in the value language ("-1", "null", "'mean'"; NULL: required),
 * nullable (accepts null, None), doc (one line for `tgraph op NAME --help`),
 * range (NULL: none)}; offset is unused. The old names stay as aliases. */
typedef tg_key_type tg_op_attr_type;
#define TG_OP_INT             TG_KEY_INT        /* an integer */
#define TG_OP_FLOAT           TG_KEY_FLOAT      /* a number; inf, -inf and nan allowed */
#define TG_OP_BOOL            TG_KEY_BOOL       /* true / false */
#define TG_OP_STRING          TG_KEY_STRING     /* text (the shell strips quotes: equation=ij,jk->ik) */
#define TG_OP_INT_LIST        TG_KEY_INT_LIST   /* [2, 3]; a single integer counts as a list of one */
#define TG_OP_ATTR_TYPE_COUNT TG_KEY_TYPE_COUNT
typedef tg_key tg_op_attr;

typedef enum tg_op_input_kind {
    TG_OP_IN_FLOAT,    /* float, differentiable */
    TG_OP_IN_CONST,    /* float, takes no gradient (cross_entropy's class weights) */
    TG_OP_IN_INDEX,    /* int64 indices */
    TG_OP_IN_MASK,     /* bool */
    TG_OP_IN_TARGET,   /* int64 class indices, or float class probabilities (differentiable) */
    TG_OP_IN_ANY,      /* any dtype (reshape, cat, ...); differentiable when float */
    TG_OP_IN_KIND_COUNT
} tg_op_input_kind;

/* How `tgraph gradcheck OP --shape ...` fills a float input. */
typedef enum tg_op_gen {
    TG_OP_GEN_NORMAL,     /* N(0, 1) */
    TG_OP_GEN_POSITIVE,   /* |N(0, 1)| + 0.5 (log, sqrt) */
    TG_OP_GEN_NONZERO,    /* sign * (|N(0, 1)| + 0.5) (a divisor) */
    TG_OP_GEN_COUNT
} tg_op_gen;

typedef struct tg_op_input {
    const char      *name;    /* PyTorch's argument name; NULL ends the list */
    tg_op_input_kind kind;
    tg_op_gen        gen;
} tg_op_input;

typedef struct tg_op_call tg_op_call;

typedef struct tg_op_def {
    const char  *name;           /* "einsum", "log_softmax", ... */
    const char  *summary;        /* its PyTorch / einops equivalent, one line */
    tg_op_attr   attrs[TG_OP_MAX_ATTRS];
    bool         axis_lengths;   /* einops: other NAME=INT attributes are axis lengths */
    tg_op_input  inputs[6];      /* positional tensor inputs */
    int          n_required;     /* inputs[0..n_required) must be given; the rest are optional */
    bool         variadic;       /* the last input repeats (einsum operands, cat tensors) */
    int          n_out;          /* outputs; -1: decided by the attributes (split) */
    /* Build the op on in[0..n_in) (NULL for an omitted optional input); write
     * the outputs and their count. Errors go onto the graph (tg_graph_fail). */
    tg_status (*build)(tg_graph *g, const tg_op_call *c, tg_node *const *in, int n_in,
                       tg_node **out, int *n_out);
    /* Fill int64 input i of gradcheck from the others (NULL: needs a file);
     * float inputs are drawn first when an index comes before them (embedding). */
    tg_status (*gen_index)(const tg_op_call *c, int i, const tg_tensor *const *in, tg_tensor *t,
                           tg_rng *rng);
    const char  *example;        /* arguments after `tgraph op` */
    /* The descriptor of the node the op builds (for a composite op, the one
     * that carries its gradient: split -> slice); tg_op_has_backward reads
     * its backward. NULL only for an op without gradient. */
    const tg_op *desc;
    /* NULL: a gradient flows to every float input that takes one. Otherwise
     * why none does ("a bool output"), and the op is exempt from gradcheck. */
    const char  *no_grad;
    /* The op's own test cases, run by tests/test_registry.c: `check` a
     * gradcheck in float64 (NULL only with no_grad), `bad` a call that must
     * fail with a message naming the op, an attribute or an input. Both are
     * ';'-separated ATTR=VALUE items and input shapes in order ("dim=1;
     * [3,4];i64[3,2]"), a shape with an optional dtype (f64, i64, bool;
     * default: the input's kind); inputs are drawn by tg_op_random_input. */
    const char  *check;
    const char  *bad;
    const char  *notes;          /* more help lines, or NULL */
} tg_op_def;

/* The resolved attributes of one call: every attribute given or defaulted. */
struct tg_op_call {
    const tg_op_def *op;
    tg_value         attr[TG_OP_MAX_ATTRS];   /* attrs[i]'s value (owned) */
    int              n_axes;
    tg_axis_len      axes[TG_OP_MAX_AXES];    /* einops axis lengths (names owned) */
};

/* The registry, in the order of ops/ops.h's families. */
int              tg_op_count(void);
const tg_op_def *tg_op_at(int i);
const tg_op_def *tg_op_find(const char *name);   /* NULL if unknown ("concat" = "cat") */
/* "einsum, softmax, ..." (every op name) into buf (cut short if it does not fit). */
void tg_op_names(char *buf, size_t len);
/* Does a gradient flow through the op (its descriptor has a backward or is a view)? */
bool tg_op_has_backward(const tg_op_def *op);
/* The name of a type / input kind for help texts ("INT", "int64");
 * tg_op_attr_type_name is tg_key_type_name. */
const char *tg_op_attr_type_name(tg_op_attr_type t);
const char *tg_op_input_kind_name(tg_op_input_kind k);
/* "dim, k, largest, sorted" (op's attribute names; "none" when it has none). */
void tg_op_attr_names(const tg_op_def *op, char *buf, size_t len);

/* Resolve op's attributes from cfg with tg_keys_resolve (value.h): unknown,
 * missing required, mistyped and out-of-range attributes are errors naming
 * the attribute ("softmax: missing required
 * attribute 'dim' (attributes: dim)"), in tg_last_error(). On error c holds
 * nothing to free; on success free with tg_op_call_free. */
tg_status tg_op_call_init(tg_op_call *c, const tg_op_def *op, tg_config *cfg);
void      tg_op_call_free(tg_op_call *c);

/* Input i's spec (the variadic last one repeats); NULL when out of range. */
const tg_op_input *tg_op_input_at(const tg_op_def *op, int i);
/* Check the number of inputs (message names the op and the expected count). */
tg_status tg_op_check_count(const tg_op_def *op, int n_in);
/* Check tensor t against input i's kind ("masked_fill only supports boolean
 * masks, but got mask with dtype float32"; the caller names the op and the
 * file); NULL t = omitted, which is fine only for optional inputs. */
tg_status tg_op_check_input(const tg_op_def *op, int i, const tg_tensor *t);
/* Does input i of this dtype take a gradient? */
bool tg_op_input_differentiable(const tg_op_def *op, int i, tg_dtype dt);

/* "input", "index", "operands[1]" (variadic inputs are numbered). */
void tg_op_input_name(const tg_op_def *op, int i, char *buf, size_t len);

/* Input leaves in[0..n) for the tensors t[0..n) (NULL t: omitted optional
 * input, NULL node), float data converted to the graph's dtype; float inputs
 * that take a gradient require one when `grads` is set. Errors in
 * tg_last_error() (naming the input). */
tg_status tg_op_make_inputs(tg_graph *g, const tg_op_def *op, tg_tensor *const *t, int n,
                            bool grads, tg_node **in);

/* Build the op (g in error afterwards on failure; message in tg_graph_error). */
tg_status tg_op_build(tg_graph *g, const tg_op_call *c, tg_node *const *in, int n_in,
                      tg_node **out, int max_out, int *n_out);

/* The dtype of a random input i (int64 indices and targets, bool masks, else
 * float64). */
tg_dtype tg_op_input_dtype(const tg_op_def *op, int i);

/* Fill t (already shaped; dtype per the input's kind) at random for
 * gradcheck: floats per the input's gen rule, masks Bernoulli(0.3), int64 by
 * the op's gen_index rule (an error naming the input when there is none),
 * which reads the other inputs in[] (fill the float ones first). */
tg_status tg_op_random_input(const tg_op_call *c, int i, const tg_tensor *const *in,
                             tg_tensor *t, tg_rng *rng);

#ifdef __cplusplus
}
#endif

#endif
