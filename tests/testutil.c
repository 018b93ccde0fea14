/*
 * testutil.c - helpers for the Criterion suites (see testutil.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

tg_tensor *tt_load(const char *dir, const char *file)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", TT_FIXTURES, dir, file);
    tg_tensor *t = NULL;
    tg_status st = tg_npy_load(path, &t);
    cr_assert(st == TG_OK, "cannot load fixture %s: %s", path, tg_last_error());
    return t;
}

bool tt_exists(const char *dir, const char *file)
{
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s/%s", TT_FIXTURES, dir, file);
    return stat(path, &sb) == 0;
}

void tt_assert_close(const tg_tensor *got, const tg_tensor *want, double atol, double rtol,
                     const char *what)
{
    char a[128], b[128];
    cr_assert(got && want, "%s: missing tensor", what);
    cr_assert(tg_tensor_same_shape(got, want), "%s: shape %s, expected %s", what,
              tg_shape_str(got->rank, got->shape, a, sizeof a),
              tg_shape_str(want->rank, want->shape, b, sizeof b));
    double worst = 0, worst_g = 0, worst_w = 0;
    int64_t at = -1;
    for (int64_t i = 0; i < want->numel; i++) {
        double g = tg_tensor_get(got, i), w = tg_tensor_get(want, i);
        if (isnan(w) || isnan(g)) {
            cr_assert(isnan(w) && isnan(g), "%s: element %lld is %g, expected %g", what,
                      (long long)i, g, w);
            continue;
        }
        if (isinf(w) || isinf(g)) {
            cr_assert(g == w, "%s: element %lld is %g, expected %g", what, (long long)i, g, w);
            continue;
        }
        double ratio = fabs(g - w) / (atol + rtol * fabs(w));
        if (ratio > worst) {
            worst = ratio;
            at = i;
            worst_g = g;
            worst_w = w;
        }
    }
    cr_assert(worst <= 1.0, "%s: element %lld is %.9g, expected %.9g (|diff| %.3g > atol %g + "
              "rtol %g * |expected|)", what, (long long)at, worst_g, worst_w,
              fabs(worst_g - worst_w), atol, rtol);
}

int tt_gradcheck(tg_graph *g, tg_node *out, uint64_t seed)
{
    tg_gradcheck_result res[64];
    int n = 0;
    bool ok = false;
    tg_gradcheck_opts o = {.seed = seed};
    cr_assert(tg_graph_error(g) == NULL, "graph error: %s", tg_graph_error(g));
    tg_status st = tg_gradcheck(g, out, &o, res, 64, &n, &ok);
    cr_assert(st == TG_OK, "gradcheck could not run: %s", tg_last_error());
    cr_assert(n > 0, "gradcheck checked nothing");
    if (!ok) {
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  %-40s worst rel %.3g (a=%.9g n=%.9g at %lld) %s\n", res[i].name,
                    res[i].max_rel_err, res[i].worst_analytical, res[i].worst_numerical,
                    (long long)res[i].worst_index, res[i].pass ? "ok" : "FAIL");
    }
    for (int i = 0; i < n; i++) {
        cr_expect(res[i].checked > 0, "%s: no element checked", res[i].name);
        cr_expect(res[i].pass, "%s: gradcheck failed (worst rel %.3g, a=%.9g n=%.9g at %lld)",
                  res[i].name, res[i].max_rel_err, res[i].worst_analytical,
                  res[i].worst_numerical, (long long)res[i].worst_index);
    }
    cr_assert(ok, "gradcheck failed");
    return n;
}

void tt_randn(tg_tensor *t, uint64_t seed)
{
    tg_rng r;
    tg_rng_seed(&r, seed);
    tg_init_normal(t, 0, 1, &r);
}

void tt_assert_graph_error(const tg_graph *g, const char *needle)
{
    const char *e = tg_graph_error(g);
    cr_assert(e != NULL, "expected a graph error containing \"%s\", got none", needle);
    cr_assert(strstr(e, needle) != NULL, "expected a graph error containing \"%s\", got \"%s\"",
              needle, e);
}

void tt_assert_last_error(const char *needle)
{
    const char *e = tg_last_error();
    cr_assert(strstr(e, needle) != NULL, "expected an error containing \"%s\", got \"%s\"", needle,
              e);
}

/* ---- a fresh temporary directory per test ---- */

/* Criterion runs each test in a process of its own, but the helper does not
 * count on it: the directory belongs to one test (its function: the struct
 * criterion_current_test points to is a copy on the stack) and to the process
 * that made it, which alone removes it. A child of fork() in the same test
 * shares it and leaves it alone when it exits. */
static char tmp_dir[PATH_MAX];               /* "" until the test asks */
static void (*tmp_test)(void);               /* the test it belongs to */
static pid_t tmp_owner;                      /* the process that made it */
static char **tmp_names;                     /* tt_path's strings, freed with it */
static size_t tmp_count, tmp_cap;

/* Remove path and, for a directory (not a symlink to one), all under it. */
static void remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        chmod(path, 0700);   /* a test may have taken away the write permission */
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char *sub = malloc(strlen(path) + strlen(e->d_name) + 2);
            if (!sub) break;
            sprintf(sub, "%s/%s", path, e->d_name);
            remove_tree(sub);
            free(sub);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void tmp_cleanup(void)
{
    if (!tmp_dir[0] || tmp_owner != getpid()) return;
    remove_tree(tmp_dir);
    tmp_dir[0] = '\0';
    for (size_t i = 0; i < tmp_count; i++) free(tmp_names[i]);
    free(tmp_names);
    tmp_names = NULL;
    tmp_count = tmp_cap = 0;
}

const char *tt_tmpdir(void)
{
    static bool registered;
    void (*test)(void) = criterion_current_test ? criterion_current_test->test : NULL;
    if (tmp_dir[0] && tmp_test == test) return tmp_dir;
    tmp_cleanup();   /* the previous test's, when tests share this process */
    tmp_dir[0] = '\0';
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    size_t blen = strlen(base);
    while (blen > 1 && base[blen - 1] == '/') blen--;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s/tgraph-test-XXXXXX", (int)blen, base);
    cr_assert(strlen(dir) <= TT_TMPDIR_MAX, "%s: TMPDIR is too long for the suites' path "
                  "buffers (at most %d characters with /tgraph-test-XXXXXX)", dir, TT_TMPDIR_MAX);
    cr_assert_not_null(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
    if (!registered) {
        atexit(tmp_cleanup);
        registered = true;
    }
    strcpy(tmp_dir, dir);
    tmp_test = test;
    tmp_owner = getpid();
    return tmp_dir;
}

const char *tt_path(const char *name)
{
    const char *dir = tt_tmpdir();
    if (tmp_count == tmp_cap) {
        size_t cap = tmp_cap ? 2 * tmp_cap : 16;
        char **grown = realloc(tmp_names, cap * sizeof *grown);
        cr_assert_not_null(grown);
        tmp_names = grown;
        tmp_cap = cap;
    }
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    cr_assert_not_null(p);
    sprintf(p, "%s/%s", dir, name);
    tmp_names[tmp_count++] = p;
    return p;
}

/* ---- the tgraph program ---- */

/* build/tgraph (or build-asan/tgraph) beside the test binary. */
static void tool_path(char *buf, size_t n)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(k, 0);
    self[k] = '\0';
    char *slash = strrchr(self, '/');
    cr_assert_not_null(slash);
    *slash = '\0';
    snprintf(buf, n, "%.4000s/tgraph", self);
    cr_assert_eq(access(buf, X_OK), 0, "%s is missing: build it first (make test does)", buf);
}

pid_t tt_start_tool(const char *const *args, const char *out, const char *err,
                    const char *path_dir, bool own_group)
{
    char tp[PATH_MAX];
    tool_path(tp, sizeof tp);
    const char *argv[40] = {tp};
    int n = 1;
    for (; args[n - 1] && n < 38; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    /* everything that allocates is done here, before the fork */
    static char path[8192];
    const char *old = getenv("PATH");
    snprintf(path, sizeof path, "PATH=%s:%s", path_dir ? path_dir : "", old ? old : "/usr/bin:/bin");
    char **env = tt_env_with(path_dir ? (const char *const[]){path, NULL}
                                      : (const char *const[]){NULL});
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (own_group) setpgid(0, 0);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fi = open("/dev/null", O_RDONLY);
        if (fo < 0 || fe < 0 || fi < 0) _exit(126);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        alarm(TT_CHILD_DEADLINE);
        execve(tp, (char *const *)argv, env);
        _exit(127);
    }
    tt_env_free(env);
    return pid;
}

/* Read fd to its end into buf (NUL-terminated; the rest is dropped). */
static void read_all(int fd, char *buf, size_t len)
{
    size_t got = 0;
    char sink[4096];
    for (;;) {
        ssize_t r = got + 1 < len ? read(fd, buf + got, len - 1 - got) : read(fd, sink, sizeof sink);
        if (r <= 0) break;
        if (got + 1 < len) got += (size_t)r;
    }
    buf[got] = '\0';
}

int tt_run_tool_out(const char *const *args, char *out, size_t outlen, char *err, size_t errlen)
{
    char tool[PATH_MAX];
    tool_path(tool, sizeof tool);
    const char *argv[40] = {tool};
    int n = 1;
    while (args[n - 1]) {
        cr_assert_lt(n, 39);
        argv[n] = args[n - 1];
        n++;
    }
    argv[n] = NULL;
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    /* stdout into an unlinked temporary file: two pipes could fill up */
    int out_fd = -1;
    if (out) {
        char tmpl[PATH_MAX];
        snprintf(tmpl, sizeof tmpl, "%s/stdout-XXXXXX", tt_tmpdir());
        out_fd = mkstemp(tmpl);
        cr_assert_neq(out_fd, -1, "mkstemp: %s", strerror(errno));
        unlink(tmpl);
    }
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(out ? out_fd : devnull, 1);
        dup2(fds[1], 2);
        close(fds[0]);
        alarm(TT_CHILD_DEADLINE);
        execv(tool, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    read_all(fds[0], err, errlen);
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (out) {
        lseek(out_fd, 0, SEEK_SET);
        read_all(out_fd, out, outlen);
        close(out_fd);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int tt_run_tool(const char *const *args, char *err, size_t errlen)
{
    return tt_run_tool_out(args, NULL, 0, err, errlen);
}

/* Exit 2, exactly one line on stderr starting "tgraph CMD: " (or "tgraph: "),
 * containing each of the needles. */
void tt_expect_cli_error(const char *const *args, const char *needle1, const char *needle2)
{
    char err[8192];
    int rc = tt_run_tool(args, err, sizeof err);
    char cmd[256] = "";
    for (int i = 0; args[i] && strlen(cmd) < 200; i++) {
        strcat(cmd, " ");
        strncat(cmd, args[i], 40);
    }
    cr_assert_eq(rc, 2, "tgraph%s: exit %d, stderr: %s", cmd, rc, err);
    size_t len = strlen(err);
    cr_assert(len > 0 && err[len - 1] == '\n', "tgraph%s: stderr is not one line: '%s'", cmd, err);
    cr_assert_null(memchr(err, '\n', len - 1), "tgraph%s: more than one line on stderr:\n%s", cmd,
                   err);
    cr_assert(!strncmp(err, "tgraph ", 7) || !strncmp(err, "tgraph: ", 8),
              "tgraph%s: the line does not start with the program name: %s", cmd, err);
    cr_assert_not_null(strstr(err, needle1), "tgraph%s: '%s' not in: %s", cmd, needle1, err);
    if (needle2)
        cr_assert_not_null(strstr(err, needle2), "tgraph%s: '%s' not in: %s", cmd, needle2, err);
}

/* ---- deadlines ---- */

static unsigned deadline_seconds;

static void deadline_hit(int sig)
{
    char msg[64];
    int n = snprintf(msg, sizeof msg, "tt_deadline: deadline of %u s exceeded\n",
                     deadline_seconds);
    if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0) { /* nothing more to do */ }
    signal(sig, SIG_DFL);
    raise(sig);
}

void tt_deadline(unsigned seconds)
{
    deadline_seconds = seconds;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = deadline_hit;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0, "sigaction(SIGALRM)");
    alarm(seconds);
}

/* Criterion runs each test in a fresh exec of this binary that has BXFI_MAP
 * set (the runner itself has not): arm the default deadline there, before the
 * test starts. A test's own tt_deadline replaces it. */
__attribute__((constructor)) static void default_deadline(void)
{
    if (!getenv("BXFI_MAP") || getenv("TT_ROLE")) return;
    const char *s = getenv("TT_TEST_DEADLINE");
    long secs = s && *s ? strtol(s, NULL, 10) : TT_DEFAULT_DEADLINE;
    if (secs <= 0 || secs > 86400) secs = TT_DEFAULT_DEADLINE;
    deadline_seconds = (unsigned)secs;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = deadline_hit;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) == 0) alarm((unsigned)secs);
}

/* ---- children: exec only (see testutil.h) ---- */

extern char **environ;

static bool same_key(const char *a, const char *b)
{
    size_t n = strcspn(a, "=");
    return !strncmp(a, b, n) && b[n] == '=';
}

char **tt_env_with(const char *const *set)
{
    size_t n = 0, k = 0, extra = 0;
    while (environ[n]) n++;
    while (set[extra]) extra++;
    char **env = calloc(n + extra + 1, sizeof *env);
    cr_assert_not_null(env);
    for (size_t i = 0; i < n; i++) {
        bool replaced = same_key("BXFI_MAP=", environ[i]);
        for (size_t j = 0; j < extra && !replaced; j++) replaced = same_key(set[j], environ[i]);
        if (!replaced) env[k++] = strdup(environ[i]);
    }
    for (size_t j = 0; j < extra; j++) env[k++] = strdup(set[j]);
    for (size_t i = 0; i < k; i++) cr_assert_not_null(env[i]);
    return env;
}

void tt_env_free(char **env)
{
    for (size_t i = 0; env && env[i]; i++) free(env[i]);
    free(env);
}

bool tt_role_is(const char *name)
{
    const char *r = getenv("TT_ROLE");
    return r && !strcmp(r, name);
}

const char *tt_role_arg(void)
{
    const char *a = getenv("TT_ROLE_ARG");
    return a ? a : "";
}

pid_t tt_spawn_role(const char *name, const char *arg, int out_fd)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert(k > 0, "readlink /proc/self/exe: %s", strerror(errno));
    self[k] = '\0';
    char role[256], role_arg[PATH_MAX + 64];
    snprintf(role, sizeof role, "TT_ROLE=%s", name);
    snprintf(role_arg, sizeof role_arg, "TT_ROLE_ARG=%s", arg ? arg : "");
    char **env = tt_env_with((const char *const[]){role, role_arg, NULL});
    char *const argv[] = {self, NULL};
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        if (out_fd >= 0 && dup2(out_fd, STDOUT_FILENO) < 0) _exit(126);
        alarm(TT_CHILD_DEADLINE);
        execve(self, argv, env);
        _exit(127);
    }
    tt_env_free(env);
    return pid;
}

/* ---- files and the final line ---- */

char *tt_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0, "%s", path);
    long len = ftell(f);
    cr_assert_geq(len, 0, "%s", path);
    cr_assert_eq(fseek(f, 0, SEEK_SET), 0, "%s", path);
    char *buf = malloc((size_t)len + 1);
    cr_assert_not_null(buf);
    size_t got = fread(buf, 1, (size_t)len, f);
    fclose(f);
    cr_assert_eq(got, (size_t)len, "short read of %s", path);
    buf[got] = '\0';
    if (n) *n = got;
    return buf;
}

void tt_assert_final_line(const char *out)
{
    regex_t re;
    cr_assert_eq(regcomp(&re, "\ntest mse=[0-9]+\\.[0-9]{4} mae=[0-9]+\\.[0-9]{4} \\| repeat-last "
                              "mse=[0-9]+\\.[0-9]{4} \\| train-mean mse=[0-9]+\\.[0-9]{4}\n$",
                         REG_EXTENDED), 0);
    int rc = regexec(&re, out, 0, NULL, 0);
    regfree(&re);
    cr_assert_eq(rc, 0, "bad final line in:\n%s", out);
    const char *last = strstr(out, "\ntest mse=");
    cr_assert_null(strstr(last + 1, "\ntest mse="), "more than one final line in:\n%s", out);
}
