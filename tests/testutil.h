/*
 * testutil.h - what the Criterion suites share: loading fixtures, comparing
 * tensors with the worst difference printed, running a gradcheck.
 */
#ifndef TG_TESTUTIL_H
#define TG_TESTUTIL_H

#include <criterion/criterion.h>
#include <unistd.h>

#include "tgraph.h"
#include "tensor_io.h"

/* Where the fixtures are, relative to the repository root (the tests run from
 * there); override with -DTT_FIXTURES='"..."'. */
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

/* ---- a fresh temporary directory per test ----
 *
 * tt_tmpdir() makes ${TMPDIR:-/tmp}/tgraph-test-XXXXXX (mkdtemp) on its first
 * call in a test and returns the same path for the rest of that test; the
 * next test (in this process or another) gets a new one. The directory and
 * everything in it is removed when the test process exits, or when the next
 * test in the same process asks for its own (a test killed by a signal leaves
 * its directory behind). Tests write only under it: two runs of the suite at
 * once never share a file, and nothing is left behind. tests/test_hygiene.c
 * fails on a fixed /tmp path or a made-up missing path in a test source.
 *
 * tt_path(name) is tt_tmpdir()/name, valid until the end of the test. For a
 * path that does not exist and cannot be created, name one under a missing
 * directory: tt_path("missing/x.npy") (nothing creates "missing"). */
const char *tt_tmpdir(void);
/* The longest path tt_tmpdir() returns (a longer $TMPDIR fails the test): the
 * suites hold it in buffers of 64 bytes. */
#define TT_TMPDIR_MAX 63
const char *tt_path(const char *name);

/* ---- a deadline for a test that could hang (a FIFO, a long run) ----
 *
 * tt_deadline(seconds) arms alarm(2) in the test's own process: past the
 * deadline the test prints "deadline of N s exceeded" and dies of SIGALRM,
 * which Criterion reports as a crash of that test. Criterion's own
 * `.timeout` is not used: its watchdog (boxfort's timeout thread) leaks a
 * request now and then in the runner process, which LeakSanitizer reports
 * after the whole suite has passed (tests/test_hygiene.c refuses it). Child
 * processes (tt_run_tool) do not inherit the alarm.
 *
 * Every test has one anyway: a worker process of the suite arms
 * TT_DEFAULT_DEADLINE seconds (or $TT_TEST_DEADLINE) before the test starts,
 * so a test that hangs is reported by name instead of stalling the run; and
 * every tgraph a helper below starts gets TT_CHILD_DEADLINE seconds, after
 * which it dies of SIGALRM (reported as 128 + 14). */
void tt_deadline(unsigned seconds);
#define TT_DEFAULT_DEADLINE 900
#define TT_CHILD_DEADLINE 600

/* ---- children of a test: exec only ----
 *
 * A test process has other threads (Criterion's), and AddressSanitizer's
 * allocator (gcc 12's libsanitizer) has no fork handlers: a child of fork()
 * that allocates can wait forever on a lock some thread held at the fork.
 * So a child forked by a test only sets up file descriptors and execs
 * (test_hygiene checks that every fork() outside testutil.c says on its line
 * why its child is safe: "fork-safe: ..."). A child that must run test code (a writer
 * killed halfway) is this test binary exec'd afresh with TT_ROLE=name:
 *
 *     TT_ROLE(slow_writer) { ... use tt_role_arg() ...; return exit_status; }
 *     pid_t pid = tt_spawn_role("slow_writer", "arg", -1);
 *
 * The role's body runs in a constructor, before Criterion's main, and the
 * process exits with its return value. out_fd (>= 0) becomes its stdout. */
#define TT_ROLE(name)                                                                  \
    static int tt_role_body_##name(void);                                              \
    __attribute__((constructor)) static void tt_role_start_##name(void)                \
    {                                                                                  \
        if (tt_role_is(#name)) _exit(tt_role_body_##name());                           \
    }                                                                                  \
    static int tt_role_body_##name(void)
pid_t tt_spawn_role(const char *name, const char *arg, int out_fd);
bool tt_role_is(const char *name);
const char *tt_role_arg(void);
/* This process's environment with the "KEY=VALUE" strings of set (NULL-
 * terminated) in place of any same KEY, and without Criterion's worker
 * variable: for execve in a child. Free it with tt_env_free. */
char **tt_env_with(const char *const *set);
void tt_env_free(char **env);

/* The whole file at path, NUL-terminated, malloc'd (free it); *n its length
 * when n is not NULL. Fails the test if the file cannot be read. */
char *tt_slurp(const char *path, size_t *n);
/* out (a train or eval stdout) ends with exactly one final line
 * "test mse=M mae=A | repeat-last mse=R | train-mean mse=T" (4 decimals). */
void tt_assert_final_line(const char *out);

/* ---- the tgraph program (build/tgraph or build-asan/tgraph, beside the test binary) ---- */

/* A NULL-terminated argument list: tt_run_tool(TT_ARGS("bench", "tsa"), ...). */
#define TT_ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Run tgraph with args (NULL-terminated, without the program); returns the exit
 * status (or 128 + signal) and fills err (NUL-terminated, truncated to errlen)
 * with what it wrote to stderr. stdout goes to out likewise, or is discarded
 * when out is NULL. */
int tt_run_tool_out(const char *const *args, char *out, size_t outlen, char *err, size_t errlen);
/* Start tgraph with args in a child and return its pid without waiting:
 * stdin /dev/null, stdout and stderr into the files out and err, the stop
 * signals at their defaults (a background job may inherit them ignored),
 * PATH prefixed by path_dir when given, in a process group of its own when
 * own_group. */
pid_t tt_start_tool(const char *const *args, const char *out, const char *err,
                    const char *path_dir, bool own_group);
int tt_run_tool(const char *const *args, char *err, size_t errlen);

/* Assert exit status 2 and exactly one line on stderr, starting "tgraph CMD: "
 * (or "tgraph: "), containing needle1 and needle2 (NULL: not checked). */
void tt_expect_cli_error(const char *const *args, const char *needle1, const char *needle2);

/* TT_ASAN: defined when built with AddressSanitizer (gcc or clang), for the
 * few tests that cannot run under it and say why where they skip. */
#if defined(__SANITIZE_ADDRESS__)
#define TT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TT_ASAN 1
#endif
#endif

#endif
