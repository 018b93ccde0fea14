/*
 * test_outputs.c - where outputs go (issue 17, "Outputs" 1, 3, 5):
 * tg_write_atomic writes a FIFO, a Unix socket, a character device and "-"
 * (stdout) in place and replaces a symlink's target, not the link; names too
 * long for the temporary file's suffix still work; the CLI writes "-" and
 * /dev/stdout to stdout, refuses an output that is one of its inputs (also
 * through a hard link or a symlink) before writing anything, and a failed
 * write to stdout (> /dev/full) is an error with one line on stderr.
 * Issue 31: a file that does not exist yet is one file however it is spelt
 * ("./../DIR/x", a symlinked or a not yet made directory); the run files
 * train writes unnamed (loss.svg, model.dot, ...) are checked against its
 * data and text (also by their temporary files' names), and sample's --out
 * against its --checkpoint.
 *
 * Every test works in its own fresh directory (tt_tmpdir). Where a test also uses the
 * system's /dev/null or /dev/stdout, it first checks a private stand-in (a
 * device node or symlink of its own), so that code with the old behaviour
 * fails there before it could replace the system's file.
 */
#define _XOPEN_SOURCE 700   /* mknod, realpath */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[512];

/* The test's own fresh directory (tt_tmpdir: removed when the test ends). */
static void setup(void)
{
    tt_deadline(60);
    snprintf(dir, sizeof dir, "%s", tt_tmpdir());
}

TestSuite(outputs, .init = setup);

/* dir/name in one of 32 rotating buffers (copy what must live longer). */
static const char *in_dir(const char *name)
{
    static char bufs[32][PATH_MAX];
    static int k;
    char *b = bufs[k++ % 32];
    cr_assert_lt(snprintf(b, PATH_MAX, "%s/%s", dir, name), PATH_MAX);
    return b;
}

/* A fixture by absolute path (the tool runs in the test's directory); 16
 * rotating buffers. */
static const char *fixture(const char *rel)
{
    static char bufs[16][PATH_MAX];
    static int k;
    char *b = bufs[k++ % 16];
    char rel_path[PATH_MAX];
    snprintf(rel_path, sizeof rel_path, "%s/%s", TT_FIXTURES, rel);
    cr_assert_not_null(realpath(rel_path, b), "%s: %s", rel_path, strerror(errno));
    return b;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

/* The whole file in a new buffer (free it); its length in *n. */
static char *slurp(const char *path, size_t *n)
{
    void *d;
    cr_assert_eq(tg_read_file(path, 0, &d, n), TG_OK, "%s", tg_last_error());
    return d;
}

static void copy_file(const char *from, const char *to)
{
    size_t n;
    char *d = slurp(from, &n);
    FILE *f = fopen(to, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(d, 1, n, f), n);
    fclose(f);
    tg_free(d);
}

static void assert_same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    cr_assert(na == nb && !memcmp(x, y, na), "%s (%zu bytes) differs from %s (%zu bytes)", a, na,
              b, nb);
    tg_free(x);
    tg_free(y);
}

/* Names in d containing ".tmp." (leftover temporary files). */
static int count_temps(const char *d)
{
    DIR *dd = opendir(d);
    cr_assert_not_null(dd, "%s: %s", d, strerror(errno));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(dd);
    return n;
}

static tg_status write_hello(FILE *f, void *ctx)
{
    (void)ctx;
    fputs("hello", f);
    return TG_OK;
}

/* ---- the library: tg_write_atomic ---- */

typedef struct {
    const char *path;
    char        buf[64];
    ssize_t     n;
} fifo_reader;

static void *read_fifo(void *arg)
{
    fifo_reader *r = arg;
    int fd = open(r->path, O_RDONLY);   /* waits for the writer */
    r->n = 0;
    if (fd < 0) return NULL;
    ssize_t k;
    while ((k = read(fd, r->buf + r->n, sizeof r->buf - 1 - (size_t)r->n)) > 0) r->n += k;
    r->buf[r->n] = '\0';
    close(fd);
    return NULL;
}

Test(outputs, fifo_is_written_in_place)
{
    fifo_reader r = {.path = in_dir("fifo")};
    cr_assert_eq(mkfifo(r.path, 0600), 0, "mkfifo: %s", strerror(errno));
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, read_fifo, &r), 0);
    cr_assert_eq(tg_write_atomic(r.path, write_hello, NULL), TG_OK, "%s", tg_last_error());
    struct stat sb;
    /* checked before the join: renamed over, the FIFO's reader would wait forever */
    cr_assert_eq(stat(r.path, &sb), 0);
    cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced by a file");
    pthread_join(th, NULL);
    cr_assert_str_eq(r.buf, "hello");
    cr_assert_eq(count_temps(dir), 0);
}

typedef struct {
    int  listener;
    char buf[64];
} socket_reader;

static void *read_socket(void *arg)
{
    socket_reader *r = arg;
    int fd = accept(r->listener, NULL, NULL);
    size_t n = 0;
    ssize_t k;
    while (fd >= 0 && (k = read(fd, r->buf + n, sizeof r->buf - 1 - n)) > 0) n += (size_t)k;
    r->buf[n] = '\0';
    if (fd >= 0) close(fd);
    return NULL;
}

Test(outputs, unix_socket_is_written_in_place)
{
    socket_reader r = {.listener = socket(AF_UNIX, SOCK_STREAM, 0)};
    cr_assert_geq(r.listener, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *p = in_dir("sock");
    if (strlen(p) >= sizeof sa.sun_path) cr_skip_test("TMPDIR too long for a socket path");
    strcpy(sa.sun_path, p);
    cr_assert_eq(bind(r.listener, (struct sockaddr *)&sa, sizeof sa), 0, "%s", strerror(errno));
    cr_assert_eq(listen(r.listener, 1), 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, read_socket, &r), 0);
    tg_status st = tg_write_atomic(p, write_hello, NULL);
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    cr_assert(S_ISSOCK(sb.st_mode), "the socket was replaced by a file");
    cr_assert_eq(st, TG_OK, "%s", tg_last_error());
    pthread_join(th, NULL);
    close(r.listener);
    cr_assert_str_eq(r.buf, "hello");
}

/* A character device like /dev/null: a node of our own where we may make one
 * (root, a file system that allows devices), else the system's. */
static const char *null_device(void)
{
    const char *p = in_dir("null");
    if (mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        int fd = open(p, O_WRONLY);
        if (fd >= 0) {
            close(fd);
            return p;
        }
        unlink(p);
    }
    return "/dev/null";
}

static void assert_still_null(const char *p, const struct stat *before)
{
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0, "%s: %s", p, strerror(errno));
    cr_assert(S_ISCHR(sb.st_mode) && sb.st_rdev == before->st_rdev,
              "%s is no longer the character device it was", p);
}

Test(outputs, char_device_stays_a_device)
{
    const char *devs[] = {null_device(), "/dev/null"};   /* the private one first */
    for (int i = 0; i < 2; i++) {
        struct stat before;
        cr_assert_eq(stat(devs[i], &before), 0);
        cr_assert(S_ISCHR(before.st_mode));
        cr_assert_eq(tg_write_atomic(devs[i], write_hello, NULL), TG_OK, "%s", tg_last_error());
        assert_still_null(devs[i], &before);
    }
    cr_assert_eq(count_temps(dir), 0);
}

Test(outputs, symlink_to_a_file_stays_a_link)
{
    /* a/link -> ../b/real.txt: the temporary file must go beside real.txt */
    cr_assert_eq(mkdir(in_dir("a"), 0700), 0);
    cr_assert_eq(mkdir(in_dir("b"), 0700), 0);
    write_text(in_dir("b/real.txt"), "old contents");
    cr_assert_eq(symlink("../b/real.txt", in_dir("a/link")), 0);
    cr_assert_eq(tg_write_atomic(in_dir("a/link"), write_hello, NULL), TG_OK, "%s",
                 tg_last_error());
    struct stat sb;
    cr_assert_eq(lstat(in_dir("a/link"), &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the symlink was replaced by a file");
    char target[PATH_MAX];
    ssize_t n = readlink(in_dir("a/link"), target, sizeof target - 1);
    cr_assert_gt(n, 0);
    target[n] = '\0';
    cr_assert_str_eq(target, "../b/real.txt");
    size_t len;
    char *d = slurp(in_dir("b/real.txt"), &len);
    cr_assert(len == 5 && !memcmp(d, "hello", 5), "the target was not updated");
    tg_free(d);
    cr_assert_eq(count_temps(in_dir("a")), 0);
    cr_assert_eq(count_temps(in_dir("b")), 0);
    /* a dangling link is replaced by the file (there is nothing to point at) */
    cr_assert_eq(symlink("missing.txt", in_dir("dangling")), 0);
    cr_assert_eq(tg_write_atomic(in_dir("dangling"), write_hello, NULL), TG_OK);
    cr_assert_eq(lstat(in_dir("dangling"), &sb), 0);
    cr_assert(S_ISREG(sb.st_mode));
}

/* The child: "P DIR" (print around the write when P is 1; cwd DIR). Exit 0
 * when tg_write_atomic("-") succeeded, 1 when it failed as it should, else 2. */
TT_ROLE(outputs_write_dash)
{
    int print_around = 0, used = 0;
    if (sscanf(tt_role_arg(), "%d %n", &print_around, &used) != 1) return 98;
    if (chdir(tt_role_arg() + used) != 0) return 99;
    if (print_around) printf("before;");
    tg_status st = tg_write_atomic("-", write_hello, NULL);
    if (st && !strstr(tg_last_error(), "stdout (-): write failed")) return 2;
    if (print_around) printf(";after");
    fflush(stdout);
    return st ? 1 : 0;
}

/* Call tg_write_atomic("-") in a child whose stdout is fd (and cwd the test's
 * directory, so a file named "-" would land there); returns its exit status
 * (0 when the call succeeded). */
static int write_dash_in_child(int fd, bool print_around)
{
    char arg[600];
    snprintf(arg, sizeof arg, "%d %s", print_around ? 1 : 0, dir);
    pid_t pid = tt_spawn_role("outputs_write_dash", arg, fd);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

Test(outputs, dash_is_stdout)
{
    const char *out = in_dir("captured");
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write_dash_in_child(fd, true), 0);
    close(fd);
    size_t n;
    char *d = slurp(out, &n);
    cr_assert(n == 18 && !memcmp(d, "before;hello;after", 18), "stdout held '%.*s'", (int)n, d);
    tg_free(d);
    cr_assert_neq(access(in_dir("-"), F_OK), 0, "a file named '-' was written");
}

Test(outputs, dash_to_a_full_device_fails)
{
    int fd = open("/dev/full", O_WRONLY);
    if (fd < 0) cr_skip_test("no /dev/full here");
    cr_assert_eq(write_dash_in_child(fd, false), 1, "writing '-' to /dev/full succeeded");
    close(fd);
    cr_assert_neq(access(in_dir("-"), F_OK), 0, "a file named '-' was written");
}

/* A file whose name with ".tmp.<pid>" would be longer than the file system
 * takes (NAME_MAX), and one whose path would reach PATH_MAX: both written. */
Test(outputs, long_names_work)
{
    char name[NAME_MAX + 1];
    memset(name, 'n', NAME_MAX - 3);
    name[NAME_MAX - 3] = '\0';
    const char *p = in_dir(name);
    cr_assert_eq(tg_write_atomic(p, write_hello, NULL), TG_OK, "%s", tg_last_error());
    size_t n;
    char *d = slurp(p, &n);
    cr_assert(n == 5 && !memcmp(d, "hello", 5));
    tg_free(d);
    cr_assert_eq(count_temps(dir), 0);

    /* nested directories of 200-byte names up to PATH_MAX - 10 bytes */
    static char deep[PATH_MAX + 256];
    size_t len = (size_t)snprintf(deep, sizeof deep, "%s", dir);
    while (len + 202 < PATH_MAX - 20) {
        deep[len++] = '/';
        memset(deep + len, 'd', 200);
        len += 200;
        deep[len] = '\0';
        cr_assert_eq(mkdir(deep, 0700), 0, "mkdir: %s", strerror(errno));
    }
    deep[len++] = '/';
    while (len < PATH_MAX - 10) deep[len++] = 'f';
    deep[len] = '\0';
    cr_assert_eq(tg_write_atomic(deep, write_hello, NULL), TG_OK, "%s", tg_last_error());
    int fd = open(deep, O_RDONLY);
    cr_assert_geq(fd, 0, "%s", strerror(errno));
    char buf[8];
    cr_assert_eq(read(fd, buf, sizeof buf), 5);
    close(fd);
    /* a path of PATH_MAX bytes or more: an error naming it, nothing written */
    memset(deep + len, 'f', 20);
    deep[len + 20] = '\0';
    cr_assert_eq(tg_write_atomic(deep, write_hello, NULL), TG_ERR_INVALID);
    tt_assert_last_error("path too long");
}

/* ---- the command line ---- */

typedef struct {
    int    status;
    char   out[1 << 16];   /* stdout when it went to a pipe */
    size_t out_len;
    char   err[8192];      /* stderr */
} tool_run;

/* Run the tgraph beside this test binary in the test's directory; stdout
 * goes to stdout_path (opened without O_CREAT: /dev/full) or, when NULL, a
 * pipe read into r->out. */
static void run_tool(tool_run *r, const char *stdout_path, const char *const *args)
{
    char tool[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", tool, sizeof tool - 16);
    cr_assert_gt(k, 0);
    tool[k] = '\0';
    strcpy(strrchr(tool, '/') + 1, "tgraph");
    const char *argv[40] = {tool};
    int n = 1;
    for (; args[n - 1]; n++) {
        cr_assert_lt(n, 39);
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    const char *errf = in_dir(".stderr");
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();   /* fork-safe: the child only execs */
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int out = stdout_path ? open(stdout_path, O_WRONLY) : fds[1];
        int err = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDONLY);
        if (out < 0 || err < 0 || in < 0 || chdir(dir) != 0) _exit(98);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        close(fds[0]);
        close(fds[1]);
        execv(tool, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    r->out_len = 0;
    ssize_t got;
    while ((got = read(fds[0], r->out + r->out_len, sizeof r->out - 1 - r->out_len)) > 0)
        r->out_len += (size_t)got;
    r->out[r->out_len] = '\0';
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *f = fopen(errf, "rb");
    size_t e = f ? fread(r->err, 1, sizeof r->err - 1, f) : 0;
    r->err[e] = '\0';
    if (f) fclose(f);
    unlink(errf);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* The .npy that `op relu` writes for the relu fixture, on stdout. */
static void assert_relu_npy(const tool_run *r)
{
    cr_assert_eq(r->status, 0, "exit %d: %s", r->status, r->err);
    const char *p = in_dir("stdout.npy");
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fwrite(r->out, 1, r->out_len, f);
    fclose(f);
    tg_tensor *got = NULL, *want = NULL;
    cr_assert_eq(tg_npy_load(p, &got), TG_OK, "stdout is not a .npy: %s", tg_last_error());
    cr_assert_eq(tg_npy_load(fixture("basic/relu/out0.npy"), &want), TG_OK);
    tt_assert_close(got, want, 0, 0, "relu on stdout");
    tg_tensor_free(got);
    tg_tensor_free(want);
    remove(p);
}

Test(outputs, cli_op_writes_dash_and_dev_stdout_to_stdout)
{
    char x[PATH_MAX];
    snprintf(x, sizeof x, "%s", fixture("basic/relu/in0.npy"));
    tool_run *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    run_tool(r, NULL, TT_ARGS("op", "relu", "--in", x, "--out", "-"));
    assert_relu_npy(r);
    cr_assert_neq(access(in_dir("-"), F_OK), 0, "a file named '-' was written");
    /* a symlink of our own to fd 1, then the system's /dev/stdout */
    cr_assert_eq(symlink("/proc/self/fd/1", in_dir("stdout")), 0);
    run_tool(r, NULL, TT_ARGS("op", "relu", "--in", x, "--out", in_dir("stdout")));
    assert_relu_npy(r);
    struct stat sb;
    cr_assert_eq(lstat(in_dir("stdout"), &sb), 0);
    cr_assert(S_ISLNK(sb.st_mode), "the symlink to /proc/self/fd/1 was replaced by a file");
    run_tool(r, NULL, TT_ARGS("op", "relu", "--in", x, "--out", "/dev/stdout"));
    assert_relu_npy(r);
    /* a device: exit 0, and it stays a device */
    const char *devs[] = {null_device(), "/dev/null"};
    for (int i = 0; i < 2; i++) {
        struct stat before;
        cr_assert_eq(stat(devs[i], &before), 0);
        run_tool(r, NULL, TT_ARGS("op", "relu", "--in", x, "--out", devs[i]));
        cr_assert_eq(r->status, 0, "%s", r->err);
        assert_still_null(devs[i], &before);
    }
    /* two outputs on stdout are one too many */
    run_tool(r, NULL, TT_ARGS("op", "relu", "--in", x, "--out", "-", "--grad-output", x,
                              "--grad", "-"));
    cr_assert_eq(r->status, 2);
    cr_assert_eq(count_lines(r->err), 1, "%s", r->err);
    cr_assert_not_null(strstr(r->err, "both write to stdout"), "%s", r->err);
    cr_assert_eq(r->out_len, 0);
    free(r);
}

Test(outputs, cli_dot_dash_prints_the_graph)
{
    tool_run *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    run_tool(r, NULL, TT_ARGS("dot", "attention_layer", "-o", "-"));
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert_eq(strncmp(r->out, "digraph tgraph {", 16), 0, "stdout: %.200s", r->out);
    cr_assert_not_null(strstr(r->out, "query_projection"));
    cr_assert_neq(access(in_dir("-"), F_OK), 0, "a file named '-' was written");
    /* -o and --svg on one file (-o - with --svg: tests/test_cli_aliases.c) */
    tt_expect_cli_error(TT_ARGS("dot", "attention_layer", "-o", in_dir("g.dot"), "--svg",
                                in_dir("g.dot")),
                        "is the same file as output -o", NULL);
    free(r);
}

/* A copy of a fixture in the test directory, with a hard link and a symlink
 * to it: three names for one file. */
static void three_names(const char *fix, const char *name, const char *hard, const char *soft)
{
    copy_file(fixture(fix), in_dir(name));
    cr_assert_eq(link(in_dir(name), in_dir(hard)), 0);
    cr_assert_eq(symlink(name, in_dir(soft)), 0);
}

/* Exit 2, one line naming the clash, and the input byte for byte as it was. */
static void expect_refused(const char *const *args, const char *input, const char *fix)
{
    tt_expect_cli_error(args, "is the same file as input", NULL);
    assert_same_bytes(input, fixture(fix));
    cr_assert_eq(count_temps(dir), 0);
}

Test(outputs, cli_op_output_is_an_input)
{
    const char *fx = "basic/relu/in0.npy";
    three_names(fx, "x.npy", "hard.npy", "soft.npy");
    char x[PATH_MAX];
    snprintf(x, sizeof x, "%s", in_dir("x.npy"));
    expect_refused(TT_ARGS("op", "relu", "--in", x, "--out", x), x, fx);
    expect_refused(TT_ARGS("op", "relu", "--in", x, "--out", in_dir("hard.npy")), x, fx);
    expect_refused(TT_ARGS("op", "relu", "--in", in_dir("soft.npy"), "--out", x), x, fx);
    /* --grad onto --grad-output, and onto the input */
    expect_refused(TT_ARGS("op", "relu", "--in", fixture(fx), "--out", in_dir("y.npy"),
                           "--grad-output", x, "--grad", in_dir("soft.npy")),
                   x, fx);
    cr_assert_neq(access(in_dir("y.npy"), F_OK), 0, "an output was written before the refusal");
    /* the same output twice */
    tt_expect_cli_error(TT_ARGS("op", "relu", "--in", fixture(fx), "--out", in_dir("y.npy"),
                                "--grad-output", x, "--grad", in_dir("y.npy")),
                        "is the same file as output", NULL);
}

#define ORACLE "oracle/attention_layer_self/"

Test(outputs, cli_run_output_is_an_input)
{
    three_names(ORACLE "weights.safetensors", "w.safetensors", "w2.safetensors", "w3.safetensors");
    copy_file(fixture(ORACLE "x.npy"), in_dir("x.npy"));
    char w[PATH_MAX], xin[PATH_MAX + 8];
    snprintf(w, sizeof w, "%s", in_dir("w.safetensors"));   /* in_dir's buffers rotate */
    snprintf(xin, sizeof xin, "x=%s", in_dir("x.npy"));
    expect_refused(TT_ARGS("run", "attention_layer", "--weights", w, "--input", xin, "--out", w),
                   w, ORACLE "weights.safetensors");
    expect_refused(TT_ARGS("run", "attention_layer", "--weights", in_dir("w3.safetensors"),
                           "--input", xin, "--out", in_dir("w2.safetensors")),
                   w, ORACLE "weights.safetensors");
    expect_refused(TT_ARGS("run", "attention_layer", "--weights", w, "--input", xin, "--out",
                           in_dir("x.npy")),
                   in_dir("x.npy"), ORACLE "x.npy");
    expect_refused(TT_ARGS("run", "attention_layer", "--weights", w, "--input", xin, "--out",
                           in_dir("y.npy"), "--grad-output", fixture(ORACLE "dy.npy"), "--grads",
                           in_dir("w3.safetensors")),
                   w, ORACLE "weights.safetensors");
    cr_assert_neq(access(in_dir("y.npy"), F_OK), 0, "--out was written before the refusal");
    /* the good command still works, with its output on stdout */
    tool_run *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    run_tool(r, NULL, TT_ARGS("run", "attention_layer", "--weights", w, "--input", xin, "--out",
                              "-"));
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(r->out_len > 6 && !memcmp(r->out, "\x93NUMPY", 6), "stdout is not a .npy");
    free(r);
}

Test(outputs, cli_eval_predictions_onto_the_checkpoint)
{
    /* refused before the checkpoint is read: any file shows it */
    const char *fx = ORACLE "weights.safetensors";
    three_names(fx, "best.safetensors", "hard.safetensors", "soft.safetensors");
    char c[PATH_MAX];
    snprintf(c, sizeof c, "%s", in_dir("best.safetensors"));
    expect_refused(TT_ARGS("eval", "--checkpoint", c, "--predictions", c), c, fx);
    expect_refused(TT_ARGS("eval", "--checkpoint", in_dir("soft.safetensors"), "--predictions",
                           in_dir("hard.safetensors")),
                   c, fx);
    expect_refused(TT_ARGS("eval", "--checkpoint", in_dir("x"), "--data", c, "--predictions",
                           in_dir("soft.safetensors")),
                   c, fx);
}

/* A real checkpoint: its own file and its training data are inputs of eval;
 * --predictions - puts the forecasts on stdout and the report on stderr. */
Test(outputs, cli_eval_with_a_checkpoint)
{
    char csv[PATH_MAX], ck[PATH_MAX], run_dir[PATH_MAX];
    snprintf(csv, sizeof csv, "%s", in_dir("tiny.csv"));
    snprintf(ck, sizeof ck, "%s", in_dir("t/best.safetensors"));
    snprintf(run_dir, sizeof run_dir, "%s", in_dir("t"));
    copy_file(fixture("train/tiny.csv"), csv);
    tool_run *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    run_tool(r, NULL, TT_ARGS("train", "--data", csv, "--split", "24,8,8", "--model",
                              "linear_forecast", "--set", "seq_len=6", "--set", "pred_len=3",
                              "--batch-size", "4", "--epochs", "1", "--threads", "1", "--out",
                              run_dir));
    cr_assert_eq(r->status, 0, "%s", r->err);
    char *before = NULL, *csv_before = NULL;
    size_t n_before, n_csv;
    before = slurp(ck, &n_before);
    csv_before = slurp(csv, &n_csv);
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--predictions", ck),
                        "is the same file as input --checkpoint", NULL);
    tt_expect_cli_error(TT_ARGS("eval", "--checkpoint", ck, "--predictions", csv),
                        "is the same file as input (the checkpoint's data)", NULL);
    size_t n;
    char *after = slurp(ck, &n);
    cr_assert(n == n_before && !memcmp(after, before, n), "the checkpoint changed");
    tg_free(after);
    after = slurp(csv, &n);
    cr_assert(n == n_csv && !memcmp(after, csv_before, n), "the data changed");
    tg_free(after);
    tg_free(before);
    tg_free(csv_before);
    /* --predictions -: the forecasts on stdout, the report on stderr */
    run_tool(r, NULL, TT_ARGS("eval", "--checkpoint", ck, "--predictions", "-"));
    cr_assert_eq(r->status, 0, "%s", r->err);
    cr_assert(r->out_len > 6 && !memcmp(r->out, "\x93NUMPY", 6), "stdout is not a .npy");
    cr_assert_not_null(strstr(r->err, "test mse="), "the report is not on stderr: %s", r->err);
    free(r);
}

/* ---- issue 31: files nobody names, and new files spelt two ways ---- */

/* Entries of d (but "." and ".."). */
static int count_entries(const char *d)
{
    DIR *dd = opendir(d);
    cr_assert_not_null(dd, "%s: %s", d, strerror(errno));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(dd);
    return n;
}

/* Exit 2 (run in the test's directory), both needles on stderr, nothing
 * named `absent` written. */
static void expect_clash(const char *const *args, const char *needle1, const char *needle2,
                         const char *absent)
{
    tool_run *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    run_tool(r, NULL, args);
    cr_assert_eq(r->status, 2, "tgraph %s: exit %d, stderr: %s", args[0], r->status, r->err);
    cr_assert_eq(count_lines(r->err), 1, "%s", r->err);
    cr_assert_not_null(strstr(r->err, needle1), "'%s' not in: %s", needle1, r->err);
    if (needle2) cr_assert_not_null(strstr(r->err, needle2), "'%s' not in: %s", needle2, r->err);
    if (absent) cr_assert_neq(access(absent, F_OK), 0, "%s was written", absent);
    free(r);
}

/* Two spellings of one file that does not exist yet are one output: through
 * "./../DIR/", through a symlinked directory, through a directory to be made. */
Test(outputs, a_new_output_spelt_two_ways_is_one_file)
{
    const char *fx = fixture("basic/relu/in0.npy");
    char fxc[PATH_MAX], up[PATH_MAX + 16], link_dir[PATH_MAX];
    snprintf(fxc, sizeof fxc, "%s", fx);
    snprintf(up, sizeof up, "./../%s/x.npy", strrchr(dir, '/') + 1);   /* "x.npy" from dir */
    expect_clash(TT_ARGS("op", "relu", "--in", fxc, "--out", "x.npy", "--grad-output", fxc,
                         "--grad", up),
                 "is the same file as output --out x.npy", "/x.npy)", in_dir("x.npy"));
    snprintf(link_dir, sizeof link_dir, "%s", in_dir("L"));
    cr_assert_eq(symlink(dir, link_dir), 0);
    expect_clash(TT_ARGS("op", "relu", "--in", fxc, "--out", in_dir("y.npy"), "--grad-output",
                         fxc, "--grad", "L/y.npy"),
                 "is the same file as output --out", NULL, in_dir("y.npy"));
    /* eval's outputs: refused before the checkpoint is read */
    copy_file(fixture(ORACLE "weights.safetensors"), in_dir("c.safetensors"));
    expect_clash(TT_ARGS("eval", "--checkpoint", "c.safetensors", "--predictions", "x.npy",
                         "--truth", up),
                 "is the same file as output --predictions x.npy", NULL, in_dir("x.npy"));
    expect_clash(TT_ARGS("eval", "--checkpoint", "c.safetensors", "--predictions", "p.npy",
                         "--metrics", "m.csv", "--truth", "L/./m.csv"),
                 "output --metrics m.csv is the same file as output --truth L/./m.csv", NULL,
                 in_dir("m.csv"));
    /* an existing file named through a directory not made yet */
    copy_file(fxc, in_dir("x0.npy"));
    expect_clash(TT_ARGS("op", "relu", "--in", "x0.npy", "--out", "new/../x0.npy"),
                 "output --out new/../x0.npy is the same file as input --in x0.npy", NULL, NULL);
    assert_same_bytes(in_dir("x0.npy"), fxc);
    cr_assert_eq(count_temps(dir), 0);
}

#define TINY_TRAIN "--split", "24,8,8", "--model", "linear_forecast", "--set", "seq_len=6", \
                   "--set", "pred_len=3", "--batch-size", "4", "--epochs", "1", "--threads", "1"

/* The run files train writes without being told their names (loss.svg,
 * model.dot, ...) are outputs like any other: one that is the data is
 * refused before anything is written. */
Test(outputs, train_run_files_are_checked_against_the_data)
{
    const char *fx = fixture("train/tiny.csv");
    char d[PATH_MAX], data[PATH_MAX], up[PATH_MAX];
    snprintf(d, sizeof d, "%s", in_dir("D"));
    snprintf(data, sizeof data, "%s", in_dir("D/loss.svg"));
    cr_assert_eq(mkdir(d, 0777), 0);
    copy_file(fx, data);
    expect_clash(TT_ARGS("train", "--data", data, TINY_TRAIN, "--out-dir", d),
                 "output (a run file of --out-dir) ", "is the same file as input --data", NULL);
    /* --out-dir spelt through a directory that does not exist yet: not made */
    snprintf(up, sizeof up, "%s", in_dir("D/new/.."));
    expect_clash(TT_ARGS("train", "--data", "D/loss.svg", TINY_TRAIN, "--out-dir", up),
                 "is the same file as input --data D/loss.svg", NULL, in_dir("D/new"));
    assert_same_bytes(data, fx);
    cr_assert_eq(count_entries(d), 1, "the run wrote into %s", d);
    /* through a symlink in --out-dir */
    cr_assert_eq(mkdir(in_dir("E"), 0777), 0);
    copy_file(fx, in_dir("data.csv"));
    cr_assert_eq(symlink("../data.csv", in_dir("E/loss.svg")), 0);
    expect_clash(TT_ARGS("train", "--data", "data.csv", TINY_TRAIN, "--out-dir", "E"),
                 "is the same file as input --data data.csv", NULL, in_dir("E/model.dot"));
    assert_same_bytes(in_dir("data.csv"), fx);
    /* named as a run file's temporary file, which the run removes as left over */
    cr_assert_eq(rename(data, in_dir("D/loss.svg.tmp.99999999")), 0);
    expect_clash(TT_ARGS("train", "--data", "D/loss.svg.tmp.99999999", TINY_TRAIN, "--out-dir",
                         "D"),
                 "input --data D/loss.svg.tmp.99999999 has the name of a temporary file of "
                 "output", NULL, in_dir("D/loss.svg"));
    cr_assert_eq(rename(in_dir("D/loss.svg.tmp.99999999"), data), 0);
    /* model.dot, which --overwrite would also remove */
    cr_assert_eq(rename(data, in_dir("D/model.dot")), 0);
    expect_clash(TT_ARGS("train", "--data", "D/model.dot", TINY_TRAIN, "--out-dir", "D",
                         "--overwrite"),
                 "is the same file as input --data D/model.dot", NULL, in_dir("D/loss.svg"));
    assert_same_bytes(in_dir("D/model.dot"), fx);
    cr_assert_eq(count_entries(d), 1, "the run wrote into %s", d);
}

/* A text of ~600 characters over a few words, enough for a tiny GPT. */
static void write_words(const char *path)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    for (int i = 0; i < 100; i++) fputs(i % 6 == 5 ? "rome\n" : "king ", f);
    fclose(f);
}

#define TINY_GPT "--set", "n_layer=1", "n_head=2", "n_embd=16", "--set", "block_size=8", \
                 "--set", "dropout=0", "--batch-size", "4", "--eval-iters", "2", "--warmup", \
                 "1", "--max-steps", "2", "--eval-interval", "2", "--threads", "1", "--quiet"

/* The same for train --text; and sample's --out onto its --checkpoint (by
 * name, a hard link or a symlink) is refused as predict's is. */
Test(outputs, text_run_files_and_sample_out_are_checked_against_the_inputs)
{
    char d[PATH_MAX], txt[PATH_MAX], ck[PATH_MAX], before[PATH_MAX];
    snprintf(d, sizeof d, "%s", in_dir("G"));
    snprintf(txt, sizeof txt, "%s", in_dir("G/loss.svg"));
    cr_assert_eq(mkdir(d, 0777), 0);
    write_words(txt);
    write_words(in_dir("words.txt"));
    expect_clash(TT_ARGS("train", "--text", txt, TINY_GPT, "--out-dir", d),
                 "is the same file as input --text", "loss.svg", NULL);
    assert_same_bytes(txt, in_dir("words.txt"));
    cr_assert_eq(count_entries(d), 1, "the run wrote into %s", d);
    /* a real checkpoint for sample */
    tool_run *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    run_tool(r, NULL, TT_ARGS("train", "--text", "words.txt", TINY_GPT, "--out-dir", "run"));
    cr_assert_eq(r->status, 0, "%s", r->err);
    free(r);
    snprintf(ck, sizeof ck, "%s", in_dir("run/best.safetensors"));
    snprintf(before, sizeof before, "%s", in_dir("before.safetensors"));
    copy_file(ck, before);
    cr_assert_eq(link(ck, in_dir("hard.safetensors")), 0);
    cr_assert_eq(symlink("run/best.safetensors", in_dir("soft.safetensors")), 0);
    expect_clash(TT_ARGS("sample", "--checkpoint", ck, "--out", ck, "--tokens", "5"),
                 "output --out", "is the same file as input --checkpoint", NULL);
    expect_clash(TT_ARGS("sample", "--checkpoint", "soft.safetensors", "--out",
                         "hard.safetensors", "--tokens", "5"),
                 "is the same file as input --checkpoint soft.safetensors", NULL, NULL);
    expect_clash(TT_ARGS("sample", "--checkpoint", "run/best.safetensors", "--out",
                         "soft.safetensors", "--tokens", "5"),
                 "is the same file as input --checkpoint", NULL, NULL);
    assert_same_bytes(ck, before);
    cr_assert_eq(count_temps(dir), 0);
}

/* `> /dev/full`: the command's stdout never arrives, so it must not exit 0. */
Test(outputs, stdout_write_errors_fail)
{
    if (access("/dev/full", W_OK) != 0) cr_skip_test("no /dev/full here");
    tool_run *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    const char *x = fixture("basic/relu/in0.npy");
    const char *const *cmds[] = {
        TT_ARGS("layers"),
        TT_ARGS("--help"),
        TT_ARGS("compare", x, x),
        TT_ARGS("op", "relu", "--in", x, "--out", "-"),
        TT_ARGS("dot", "attention_layer", "-o", "-"),
    };
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        run_tool(r, "/dev/full", cmds[i]);
        cr_assert(r->status == 1 || r->status == 2, "tgraph %s > /dev/full: exit %d", cmds[i][0],
                  r->status);
        cr_assert_eq(count_lines(r->err), 1, "tgraph %s > /dev/full: stderr '%s'", cmds[i][0],
                     r->err);
        cr_assert(!strncmp(r->err, "tgraph", 6) && strstr(r->err, "No space left on device"),
                  "tgraph %s > /dev/full: stderr '%s'", cmds[i][0], r->err);
    }
    cr_assert_neq(access(in_dir("-"), F_OK), 0, "a file named '-' was written");
    free(r);
}
