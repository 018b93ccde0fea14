/*
 * test_einops_errors.c - rearrange / repeat / reduce on bad input: every
 * bad-input row of OPS.md 8.4 / 19 with einops' inner message behind einops'
 * wrapper (the op, the pattern, the input shape and the axis lengths), the
 * wrapper in full, tgraph's limits on a pattern (axes, items, length) and API
 * misuse (NULL pattern or input, a bad axis list, an unknown reduction, a bool
 * input). The graph stays in error and gets no node.
 */
#include "testutil.h"

#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "einops_case.h"

typedef struct {
    const char         *name;
    int                 kind;
    const char         *pattern;
    tg_einops_reduction red;
    int                 rank;
    int64_t             shape[4];
    int                 n_axes;
    tg_axis_len         axes[2];
    const char         *needle;
} bad_case;

static const bad_case bad[] = {
    {"no_arrow", R, "a b", SUM, 2, {2, 3}, 0, {{0}}, "exactly one \"->\" between its left and right side, found 0"},
    {"two_arrows", R, "a -> b -> a", SUM, 1, {2}, 0, {{0}}, "exactly one \"->\" between its left and right side, found 2"},
    {"spaced_arrow", R, "a - > a", SUM, 1, {2}, 0, {{0}}, "found 0"},
    {"tab", R, "a\tb -> a b", SUM, 2, {2, 3}, 0, {{0}}, "Unknown character '\\t'"},
    {"unknown_char", R, "a+b -> a b", SUM, 2, {2, 3}, 0, {{0}}, "Unknown character '+'"},
    {"non_ascii", R, "a\xc3\x9f -> a\xc3\x9f", SUM, 1, {2}, 0, {{0}}, "Unknown character: byte 0xc3 is not ASCII"},
    {"stray_dot", R, "a. -> a", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...)"},
    {"two_dots", R, "a .. -> a", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...)"},
    {"two_ellipses", R, "... ... -> ...", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...); only one ellipsis for tensor"},
    {"four_dots", R, ".... -> ....", SUM, 1, {2}, 0, {{0}}, "only one ellipsis for tensor"},
    {"right_dots", R, "a -> a .", SUM, 1, {2}, 0, {{0}}, "Expression may contain dots only inside ellipsis (...)"},
    {"dots_glued", R, "...pre -> ...pre", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: ...pre (not a valid python identifier)"},
    {"ellipsis_right_only", R, "a -> a ...", SUM, 1, {2}, 0, {{0}}, "Ellipsis found in right side, but not left side of a pattern a -> a ..."},
    {"ellipsis_left_group", R, "(a ...) -> a ...", SUM, 1, {2}, 0, {{0}}, "Ellipsis inside parenthesis in the left side is not allowed: (a ...) -> a ..."},
    {"nested", R, "((a b)) -> a b", SUM, 1, {6}, 0, {{0}}, "Axis composition is one-level (brackets inside brackets not allowed)"},
    {"nested_unit", R, "(a () b) -> a b", SUM, 1, {6}, 0, {{0}}, "Axis composition is one-level (brackets inside brackets not allowed)"},
    {"close_unopened", R, "a b) -> a b", SUM, 2, {2, 3}, 0, {{0}}, "Brackets are not balanced"},
    {"unclosed", R, "(a b -> a b", SUM, 1, {6}, 0, {{0}}, "Imbalanced parentheses in expression: \"(a b \""},
    {"name_digit", R, "2c -> 2c", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: 2c (not a valid python identifier)"},
    {"name_lead_underscore", R, "_c -> _c", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: _c (axis name should should not start or end with underscore)"},
    {"name_trail_underscore", R, "c_ -> c_", SUM, 1, {2}, 0, {{0}}, "Invalid axis identifier: c_ (axis name should should not start or end with underscore)"},
    {"duplicate_left", R, "a a -> a", SUM, 2, {2, 2}, 0, {{0}}, "Indexing expression contains duplicate dimension \"a\""},
    {"duplicate_right", R, "a b c -> a (b c) b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Indexing expression contains duplicate dimension \"b\""},
    {"anon_zero", R, "a 0 -> a", SUM, 2, {2, 1}, 0, {{0}}, "Anonymous axis should have positive length, not 0"},
    {"anon_too_long", R, "a 99999999999999999999 -> a", SUM, 2, {2, 1}, 0, {{0}}, "Anonymous axis 99999999999999999999 is too long"},
    {"anon_rearrange_left", R, "a 2 -> a 2", SUM, 2, {3, 2}, 0, {{0}}, "Non-unitary anonymous axes are not supported in rearrange (exception is length 1)"},
    {"anon_rearrange_right", R, "a -> a 2", SUM, 1, {3}, 0, {{0}}, "Non-unitary anonymous axes are not supported in rearrange (exception is length 1)"},
    {"one_side", R, "a b c -> a b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Identifiers only on one side of expression (should be on both): {'c'}"},
    {"one_side_both", R, "a b -> a c", SUM, 2, {2, 3}, 0, {{0}}, "Identifiers only on one side of expression (should be on both): {'b', 'c'}"},
    {"one_side_ellipsis", R, "a ... -> a", SUM, 2, {2, 3}, 0, {{0}}, "Identifiers only on one side of expression (should be on both): {'\xe2\x80\xa6'}"},
    {"repeat_left_missing", P, "a b c -> a b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Unexpected identifiers on the left side of repeat: {'c'}"},
    {"repeat_left_number", P, "a 2 -> a", SUM, 2, {3, 2}, 0, {{0}}, "Unexpected identifiers on the left side of repeat: {2-axis}"},
    {"repeat_left_ellipsis", P, "a ... -> a", SUM, 2, {3, 2}, 0, {{0}}, "Unexpected identifiers on the left side of repeat: {'\xe2\x80\xa6'}"},
    {"repeat_no_size", P, "a -> a d", SUM, 1, {2}, 0, {{0}}, "Specify sizes for new axes in repeat: {'d'}"},
    {"repeat_no_sizes", P, "a -> (e a) d", SUM, 1, {2}, 1, {{"d", 2}}, "Specify sizes for new axes in repeat: {'e'}"},
    {"reduce_new_axis", D, "a b -> a c", SUM, 2, {2, 3}, 0, {{0}}, "Unexpected identifiers on the right side of reduce sum: {'c'}"},
    {"reduce_anon_right", D, "a b -> a 2", MEAN, 2, {2, 3}, 0, {{0}}, "Unexpected identifiers on the right side of reduce mean: {2-axis}"},
    {"wrong_rank", R, "a b -> a b", SUM, 3, {2, 3, 4}, 0, {{0}}, "Wrong shape: expected 2 dims. Received 3-dim tensor."},
    {"wrong_rank_ellipsis", R, "a b c ... -> a b c ...", SUM, 2, {2, 3}, 0, {{0}}, "Wrong shape: expected >=3 dims. Received 2-dim tensor."},
    {"kw_unused", R, "a b -> b a", SUM, 2, {2, 3}, 1, {{"z", 2}}, "Axis z is not used in transform"},
    {"kw_invalid", R, "a b -> b a", SUM, 2, {2, 3}, 1, {{"_", 2}}, "('Invalid name for an axis', '_')"},
    {"kw_invalid_digit", R, "a b -> b a", SUM, 2, {2, 3}, 1, {{"2a", 2}}, "('Invalid name for an axis', '2a')"},
    {"kw_twice", R, "(a b) -> a b", SUM, 1, {6}, 2, {{"a", 2}, {"a", 2}}, "Axis a is given twice in the axis lengths"},
    {"kw_no_name", R, "(a b) -> a b", SUM, 1, {6}, 1, {{NULL, 2}}, "axis length 0 has no name"},
    {"could_not_infer", R, "(b c) -> b c", SUM, 1, {6}, 0, {{0}}, "Could not infer sizes for {'b', 'c'}"},
    {"not_dividing", R, "(b c) -> b c", SUM, 1, {6}, 1, {{"c", 4}}, "Shape mismatch, can't divide axis of length 6 in chunks of 4"},
    {"anon_not_dividing", D, "(b 4) -> b", SUM, 1, {6}, 0, {{0}}, "Shape mismatch, can't divide axis of length 6 in chunks of 4"},
    {"product_mismatch", R, "(b c) -> b c", SUM, 1, {6}, 2, {{"b", 2}, {"c", 2}}, "Shape mismatch, 6 != 4"},
    {"given_mismatch", R, "a b c -> a b c", SUM, 3, {2, 3, 4}, 1, {{"b", 4}}, "Shape mismatch, 3 != 4"},
    {"unit_not_one", R, "1 b c -> b c", SUM, 3, {2, 3, 4}, 0, {{0}}, "Shape mismatch, 2 != 1"},
    {"empty_group_not_one", R, "() b c -> b c", SUM, 3, {2, 3, 4}, 0, {{0}}, "Shape mismatch, 2 != 1"},
    {"kw_negative", P, "a -> a r", SUM, 1, {3}, 1, {{"r", -1}}, "Axis r has negative length -1"},
    {"kw_zero_divisor", R, "(h w) -> h w", SUM, 1, {6}, 1, {{"h", 0}}, "Shape mismatch, can't divide axis of length 6 in chunks of 0"},
    {"kw_zero_plain", R, "a b -> a b", SUM, 2, {2, 3}, 1, {{"a", 0}}, "Shape mismatch, 2 != 0"},
    {"max_of_nothing", D, "a b -> a", MAX, 2, {2, 0}, 0, {{0}}, "cannot take the max/min over zero elements"},
    {"min_of_nothing", D, "a b -> a", MIN, 2, {2, 0}, 0, {{0}}, "cannot take the max/min over zero elements"},
    {"rank_above_max", P, "a -> a 2 2 2 2 2 2 2 2", SUM, 1, {2}, 0, {{0}}, "the result would have 9 dims; tgraph supports at most 8"},
    {"dim_overflow", P, "a -> a (r s)", SUM, 1, {2}, 2, {{"r", 1ll << 40}, {"s", 1ll << 40}}, "the result's dim 1 overflows int64"},
    {"numel_overflow", P, "a -> a r s", SUM, 1, {2}, 2, {{"r", 1ll << 30}, {"s", 1ll << 30}}, "the result has too many elements"},
};

#define N_BAD (int)(sizeof bad / sizeof *bad)
static int bad_index[N_BAD];

ParameterizedTestParameters(einops_errors, pattern)
{
    for (int i = 0; i < N_BAD; i++) bad_index[i] = i;
    return cr_make_param_array(int, bad_index, N_BAD);
}

ParameterizedTest(int *idx, einops_errors, pattern)
{
    const bad_case *c = &bad[*idx];
    const ein_case e = {c->name, c->kind, c->pattern, c->red, c->n_axes,
                        {c->axes[0], c->axes[1]}, false};
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, c->rank, c->shape);
    cr_assert_null(tt_ein_build(&e, g, x), "%s: no error", c->name);
    tt_assert_graph_error(g, c->needle);
    /* behind einops' wrapper, which names the op, the pattern and the shape */
    char head[512];
    const char *op = c->kind == R ? "rearrange" : c->kind == P ? "repeat" : "reduce";
    const char *what = c->kind == D ? tg_einops_reduction_name(c->red) : op;
    snprintf(head, sizeof head, "%s: Error while processing %s-reduction pattern \"%s\". Input "
             "tensor shape: (", op, what, c->pattern);
    cr_assert(strncmp(tg_graph_error(g), head, strlen(head)) == 0, "%s: message \"%s\"",
              c->name, tg_graph_error(g));
    cr_assert_eq(tg_graph_node_count(g), 1, "%s: a node was added", c->name);
    /* sticky: the graph stays in error */
    cr_assert_null(tg_rearrange(g, x, "a -> a", 0, NULL));
    tt_assert_graph_error(g, c->needle);
    tg_graph_free(g);
}

Test(einops_errors, wrapper_in_full)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 3, (int64_t[]){2, 3, 4});
    cr_assert_null(tg_rearrange(g, x, "a b -> a b", 0, NULL));
    cr_assert_str_eq(tg_graph_error(g),
                     "rearrange: Error while processing rearrange-reduction pattern \"a b -> a b\". "
                     "Input tensor shape: (2, 3, 4). Additional info: {}. Wrong shape: expected 2 "
                     "dims. Received 3-dim tensor.");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){5});
    cr_assert_null(tg_repeat(g, x, "a -> a r", 2, (tg_axis_len[]){{"r", -1}, {"a", 5}}));
    cr_assert_str_eq(tg_graph_error(g),
                     "repeat: Error while processing repeat-reduction pattern \"a -> a r\". Input "
                     "tensor shape: (5,). Additional info: {'r': -1, 'a': 5}. Axis r has negative "
                     "length -1");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 0, NULL);
    cr_assert_null(tg_reduce(g, x, "a -> ", TG_EINOPS_MIN, 0, NULL));
    cr_assert_str_eq(tg_graph_error(g),
                     "reduce: Error while processing min-reduction pattern \"a -> \". Input tensor "
                     "shape: (). Additional info: {}. Wrong shape: expected 1 dims. Received "
                     "0-dim tensor.");
    tg_graph_free(g);
}

Test(einops_errors, too_many_axes)
{
    char pat[512], side[240];
    size_t k = 0;
    k += (size_t)snprintf(side + k, sizeof side - k, "(");
    for (int i = 0; i < 33; i++) k += (size_t)snprintf(side + k, sizeof side - k, i ? " a%d" : "a%d", i);
    snprintf(side + k, sizeof side - k, ")");
    snprintf(pat, sizeof pat, "%s -> %s", side, side);
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){1});
    cr_assert_null(tg_rearrange(g, x, pat, 0, NULL));
    tt_assert_graph_error(g, "more than 32 axes in one pattern (tgraph's limit)");
    tg_graph_free(g);

    /* 65 top-level unit items on one side */
    k = 0;
    for (int i = 0; i < 65; i++) k += (size_t)snprintf(pat + k, sizeof pat - k, "1 ");
    snprintf(pat + k, sizeof pat - k, "-> ");
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){1});
    cr_assert_null(tg_rearrange(g, x, pat, 0, NULL));
    tt_assert_graph_error(g, "more than 64 items on one side (tgraph's limit)");
    tg_graph_free(g);

    /* a pattern longer than 64 KiB */
    char *big = malloc(70001);
    cr_assert(big);
    memset(big, ' ', 70000);
    memcpy(big + 100, "->", 2);
    big[70000] = 0;
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 0, NULL);
    cr_assert_null(tg_rearrange(g, x, big, 0, NULL));
    tt_assert_graph_error(g, "the pattern is 70000 bytes long (tgraph's limit: 65536)");
    tg_graph_free(g);
    free(big);
}

Test(einops_errors, api_misuse)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_rearrange(g, x, NULL, 0, NULL));
    tt_assert_graph_error(g, "rearrange: pattern is NULL");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_repeat(g, x, "a -> a r", 1, NULL));
    tt_assert_graph_error(g, "repeat: bad axis length list (n_axes 1, axes NULL)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_reduce(g, x, "a -> ", (tg_einops_reduction)7, 0, NULL));
    tt_assert_graph_error(g, "reduce: unknown reduction 7 (expected sum, mean, max, min or prod)");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    x = tg_input(g, "m", TG_BOOL, 1, (int64_t[]){2});   /* int64 is fine (reduce_int64) */
    cr_assert_null(tg_reduce(g, x, "a -> ", TG_EINOPS_SUM, 0, NULL));
    tt_assert_graph_error(g, "reduce: input must be float32, got bool");
    tg_graph_free(g);

    g = tg_graph_new(TG_F32);
    cr_assert_null(tg_rearrange(g, NULL, "a -> a", 0, NULL));
    cr_assert_not_null(tg_graph_error(g));
    tg_graph_free(g);
}
