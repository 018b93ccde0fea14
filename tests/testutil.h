/*
 * testutil.h - what the Criterion suites share: loading fixtures, comparing
 * tensors with the worst difference printed, running a gradcheck.
 */
#ifndef TG_TESTUTIL_H
#define TG_TESTUTIL_H

#include <criterion/criterion.h>

#include "tgraph.h"
#include "tensor_io.h"

#ifndef TT_FIXTURES
#define TT_FIXTURES "tests/fixtures"
#endif

/* Load TT_FIXTURES/<dir>/<file> (a .npy); fails the test if it cannot. */
tg_tensor *tt_load(const char *dir, const char *file);
/* True when TT_FIXTURES/<dir>/<file> exists. */
bool tt_exists(const char *dir, const char *file);

/* Assert |got - want| <= atol + rtol |want| everywhere (shapes equal; NaN
 * must match NaN); on failure report the worst element. */
void tt_assert_close(const tg_tensor *got, const tg_tensor *want, double atol, double rtol,
                     const char *what);

/* Run tg_gradcheck on out (F64 graph expected) and assert every tensor passes;
 * prints the per-tensor lines on failure. Returns the number of tensors checked. */
int tt_gradcheck(tg_graph *g, tg_node *out, uint64_t seed);

/* Fill a tensor / input node with N(0, 1) values from a seeded RNG. */
void tt_randn(tg_tensor *t, uint64_t seed);

/* Assert that the graph is in error and the message contains `needle`. */
void tt_assert_graph_error(const tg_graph *g, const char *needle);
/* Assert that tg_last_error() contains `needle`. */
void tt_assert_last_error(const char *needle);

#endif
