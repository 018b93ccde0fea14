/*
 * test_hygiene.c - the suites' own sources keep to the rules that let two
 * runs share a machine (issue 17):
 *   - no fixed path under /tmp: a file a test writes goes under tt_tmpdir();
 *   - no made-up absolute path that "surely" does not exist: a missing path
 *     is tt_path("missing/..."), which cannot exist whatever the machine has;
 *   - no tool path relative to the repository: a CLI test runs the tgraph of
 *     its own build (tt_run_tool, beside the test binary: in build or
 *     build-asan);
 *   - no Criterion `.timeout`: its watchdog leaks in the runner now and then,
 *     which fails `make asan` after every test passed; tt_deadline() arms an
 *     alarm in the test's own process instead;
 *   - no fork() whose child could allocate: under ASan such a child can hang
 *     for ever (testutil.h); outside testutil.c a fork() line says why its
 *     child is safe ("fork-safe: ..."), else tt_spawn_role/tt_start_tool.
 * Every .c and .h file in tests/ is read (the suites run from the repository
 * root, as TT_FIXTURES assumes); a hit fails naming file:line.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define SOURCES TT_FIXTURES "/.."

/* Spelt in pieces so that this file does not match itself. */
static const char *const banned[] = {
    "\"/tm" "p/",          /* a string literal starting with /tmp/ */
    "/non" "existent",     /* anywhere: a literal, or a path in a comment */
    "\"build" "/tgraph",   /* the tool of another build */
    "." "timeout =",       /* Criterion's watchdog: tt_deadline() instead */
};

/* A call of fork() is allowed in testutil.c and on a line that says why
 * ("fork-safe:"). */
static bool bad_fork(const char *name, const char *line)
{
    return strstr(line, "fo" "rk();") && strcmp(name, "testutil.c") &&
           !strstr(line, "fork-" "safe:");
}

static bool is_source(const char *name)
{
    size_t n = strlen(name);
    return n > 2 && name[n - 2] == '.' && (name[n - 1] == 'c' || name[n - 1] == 'h');
}

/* Append "file:line: text" to report for each banned string on a line of
 * path; returns the number of hits. */
static int scan(const char *path, const char *name, char *report, size_t len)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    char line[4096];
    int hits = 0, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        for (size_t b = 0; b <= sizeof banned / sizeof *banned; b++) {
            if (b < sizeof banned / sizeof *banned ? !strstr(line, banned[b])
                                                   : !bad_fork(name, line))
                continue;
            size_t used = strlen(report);
            snprintf(report + used, len - used, "  tests/%s:%d: %s%s", name, lineno, line,
                     strchr(line, '\n') ? "" : "\n");
            hits++;
            break;
        }
    }
    fclose(f);
    return hits;
}

Test(hygiene, no_fixed_temp_paths_or_foreign_tool_in_the_tests)
{
    DIR *d = opendir(SOURCES);
    cr_assert_not_null(d, "cannot list %s (run the suite from the repository root)", SOURCES);
    static char report[1 << 16];
    report[0] = '\0';
    int files = 0, hits = 0;
    bool saw_self = false;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_source(e->d_name)) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SOURCES, e->d_name);
        hits += scan(path, e->d_name, report, sizeof report);
        files++;
        if (!strcmp(e->d_name, "test_hygiene.c")) saw_self = true;
    }
    closedir(d);
    cr_assert(saw_self && files > 10, "%s: %d sources and not this one: not the tests directory",
              SOURCES, files);
    cr_assert_eq(hits, 0,
                 "%d line(s) in the tests name a fixed path under /tmp, a path assumed not to "
                 "exist, the tgraph of another build, a Criterion timeout or a fork() "
                 "without a reason; use tt_tmpdir()/tt_path() (tt_path(\"missing/x\") for "
                 "a missing path), tt_run_tool, tt_deadline() and tt_spawn_role:\n%s", hits, report);
}

/* The helper itself: a fresh directory, under $TMPDIR, the same for the whole
 * test, and a missing path whose parent does not exist. */
Test(hygiene, tmpdir_is_fresh_and_private)
{
    const char *dir = tt_tmpdir();
    cr_assert_str_eq(dir, tt_tmpdir(), "the same directory for the whole test");
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    cr_assert(!strncmp(dir, base, strlen(base)), "%s is not under %s", dir, base);
    cr_assert_not_null(strstr(dir, "/tgraph-test-"), "%s", dir);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s does not exist", dir);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
    closedir(d);
    cr_assert_eq(entries, 0, "%s is not empty", dir);
    const char *p = tt_path("a.txt");
    cr_assert_eq(strncmp(p, dir, strlen(dir)), 0);
    cr_assert_str_eq(p + strlen(dir), "/a.txt");
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fclose(f);
    cr_assert_null(fopen(tt_path("missing/x.npy"), "w"), "missing/ must not exist");
}

/* tt_deadline ends a hung test: the alarm is delivered to the test's own
 * process, which dies of SIGALRM (Criterion's `.signal` expects exactly that). */
Test(hygiene, deadline_ends_a_hung_test, .signal = SIGALRM)
{
    tt_deadline(1);
    for (;;) pause();
}
