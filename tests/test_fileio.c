/*
 * test_fileio.c - the write-temp-then-rename helper (tg_write_atomic) and
 * tg_read_file: a writer that fails half way and a process killed mid-write
 * both leave the previous file intact and loadable; failures leave no
 * temporary file behind.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* A fresh directory for one test. */
static void make_dir(char *dir, size_t n, const char *tag)
{
    snprintf(dir, n, "%s/%s", tt_tmpdir(), tag);
    mkdir(dir, 0700);
}

/* Names in dir containing ".tmp." (leftover temporary files). */
static int count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            remove(p);
        }
    closedir(d);
    rmdir(dir);
}

static tg_tensor *ramp(int64_t n, double scale)
{
    tg_tensor *t = tg_tensor_new(TG_F64, 1, &n);
    for (int64_t k = 0; k < n; k++) ((double *)t->data)[k] = (double)k * scale;
    return t;
}

static void assert_ramp(const char *path, int64_t n, double scale)
{
    tg_tensor *t;
    cr_assert_eq(tg_npy_load(path, &t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t->numel, n);
    for (int64_t k = 0; k < n; k++)
        cr_assert_eq(((double *)t->data)[k], (double)k * scale, "element %lld", (long long)k);
    tg_tensor_free(t);
}

/* A writer that writes half of its bytes and then fails. */
typedef struct { const unsigned char *bytes; size_t len; } half_ctx;
static tg_status write_half_then_fail(FILE *f, void *vctx)
{
    half_ctx *c = vctx;
    fwrite(c->bytes, 1, c->len / 2, f);
    fflush(f);
    return tg_set_error(TG_ERR_IO, "injected: the disk is full");
}

Test(fileio, failed_write_keeps_the_old_file)
{
    char dir[256], path[512];
    make_dir(dir, sizeof dir, "fail");
    snprintf(path, sizeof path, "%s/w.npy", dir);
    tg_tensor *old = ramp(100, 1.0);
    cr_assert_eq(tg_npy_save(path, old), TG_OK);
    void *before;
    size_t nbefore;
    cr_assert_eq(tg_read_file(path, 0, &before, &nbefore), TG_OK);

    unsigned char junk[4000];
    memset(junk, 0xab, sizeof junk);
    half_ctx c = {junk, sizeof junk};
    cr_assert_eq(tg_write_atomic(path, write_half_then_fail, &c), TG_ERR_IO);
    tt_assert_last_error("injected: the disk is full");
    /* the old file: same bytes, still loadable; no temporary file left */
    void *after;
    size_t nafter;
    cr_assert_eq(tg_read_file(path, 0, &after, &nafter), TG_OK);
    cr_assert(nafter == nbefore && !memcmp(before, after, nbefore), "the old file changed");
    assert_ramp(path, 100, 1.0);
    cr_assert_eq(count_temps(dir), 0, "a temporary file was left behind");
    tg_free(before);
    tg_free(after);

    /* a writer that succeeds replaces the file, again without leftovers */
    tg_tensor *new_ = ramp(7, -0.5);
    cr_assert_eq(tg_npy_save(path, new_), TG_OK);
    assert_ramp(path, 7, -0.5);
    cr_assert_eq(count_temps(dir), 0);
    tg_tensor_free(old);
    tg_tensor_free(new_);
    remove_dir(dir);
}

/* A writer for the child: half the bytes, flushed to the temporary file,
 * then a signal to the parent, then wait to be killed. */
typedef struct { int signal_fd; } slow_ctx;
static tg_status write_slowly(FILE *f, void *vctx)
{
    slow_ctx *c = vctx;
    unsigned char junk[8192];
    memset(junk, 0xcd, sizeof junk);
    fwrite(junk, 1, sizeof junk / 2, f);
    fflush(f);
    if (write(c->signal_fd, "x", 1) != 1) _exit(3);
    for (;;) pause();   /* the rest never comes: the parent kills us here */
    return TG_OK;
}

/* The child: "FD PATH" (the pipe to signal on, the file to write). */
TT_ROLE(fileio_slow_writer)
{
    int fd = -1, used = 0;
    if (sscanf(tt_role_arg(), "%d %n", &fd, &used) != 1 || fd < 0) return 4;
    slow_ctx c = {fd};
    tg_write_atomic(tt_role_arg() + used, write_slowly, &c);
    return 2;   /* never reached */
}

Test(fileio, killed_writer_keeps_the_old_file)
{
    char dir[256], path[512], tmp[600], arg[600];
    make_dir(dir, sizeof dir, "kill");
    snprintf(path, sizeof path, "%s/w.npy", dir);
    tg_tensor *old = ramp(50, 0.25);
    cr_assert_eq(tg_npy_save(path, old), TG_OK);

    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    snprintf(arg, sizeof arg, "%d %s", fds[1], path);
    pid_t pid = tt_spawn_role("fileio_slow_writer", arg, -1);
    close(fds[1]);
    char got;
    cr_assert_eq(read(fds[0], &got, 1), 1, "the child did not start writing");
    close(fds[0]);
    /* mid-write: the child's temporary file holds half the bytes */
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)pid);
    struct stat sb;
    cr_assert_eq(stat(tmp, &sb), 0, "no temporary file %s", tmp);
    cr_assert_eq(sb.st_size, 4096);
    cr_assert_eq(kill(pid, SIGKILL), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    /* the old file is untouched and loads; only the dead child's temp remains */
    assert_ramp(path, 50, 0.25);
    cr_assert_eq(count_temps(dir), 1);
    remove(tmp);
    /* a later write by a live process goes through */
    tg_tensor *new_ = ramp(3, 2.0);
    cr_assert_eq(tg_npy_save(path, new_), TG_OK);
    assert_ramp(path, 3, 2.0);
    cr_assert_eq(count_temps(dir), 0);
    tg_tensor_free(old);
    tg_tensor_free(new_);
    remove_dir(dir);
}

static tg_status write_ok(FILE *f, void *vctx)
{
    (void)vctx;
    fputs("hello", f);
    return TG_OK;
}

Test(fileio, atomic_write_errors)
{
    char dir[256], path[512];
    make_dir(dir, sizeof dir, "err");
    cr_assert_eq(tg_write_atomic("", write_ok, NULL), TG_ERR_INVALID);
    tt_assert_last_error("write: empty path");
    snprintf(path, sizeof path, "%s/x", dir);
    cr_assert_eq(tg_write_atomic(path, NULL, NULL), TG_ERR_INVALID);
    tt_assert_last_error("no writer function");
    cr_assert_eq(tg_write_atomic(tt_path("missing/x"), write_ok, NULL), TG_ERR_IO);
    tt_assert_last_error(tt_path("missing/x.tmp."));
    tt_assert_last_error("cannot create");
    /* the target is a directory: the rename fails and the temp file is removed */
    snprintf(path, sizeof path, "%s/sub", dir);
    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(tg_write_atomic(path, write_ok, NULL), TG_ERR_IO);
    tt_assert_last_error("cannot rename");
    cr_assert_eq(count_temps(dir), 0);
    rmdir(path);
    /* a path too long for the temporary name */
    char longp[5000];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    cr_assert_eq(tg_write_atomic(longp, write_ok, NULL), TG_ERR_INVALID);
    tt_assert_last_error("path too long");
    /* success writes exactly what fn wrote */
    snprintf(path, sizeof path, "%s/ok.txt", dir);
    cr_assert_eq(tg_write_atomic(path, write_ok, NULL), TG_OK);
    void *d;
    size_t n;
    cr_assert_eq(tg_read_file(path, 0, &d, &n), TG_OK);
    cr_assert(n == 5 && !memcmp(d, "hello", 5));
    tg_free(d);
    remove_dir(dir);
}

Test(fileio, read_file_limits)
{
    char dir[256], path[512];
    make_dir(dir, sizeof dir, "read");
    snprintf(path, sizeof path, "%s/big.bin", dir);
    size_t n = 200000;   /* more than the first 64 KiB buffer */
    unsigned char *b = malloc(n);
    for (size_t k = 0; k < n; k++) b[k] = (unsigned char)(k * 31);
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    void *d;
    size_t got;
    cr_assert_eq(tg_read_file(path, 0, &d, &got), TG_OK);
    cr_assert(got == n && !memcmp(d, b, n));
    tg_free(d);
    cr_assert_eq(tg_read_file(path, n, &d, &got), TG_OK, "a limit equal to the size is fine");
    tg_free(d);
    cr_assert_eq(tg_read_file(path, 1000, &d, &got), TG_ERR_LIMIT);
    tt_assert_last_error("big.bin: file is larger than 1000 bytes");
    cr_assert_null(d);
    cr_assert_eq(tg_read_file(dir, 0, &d, &got), TG_ERR_IO, "a directory is not a file");
    cr_assert_eq(tg_read_file(tt_path("missing/f"), 0, &d, &got), TG_ERR_IO);
    tt_assert_last_error(tt_path("missing/f: cannot open"));
    free(b);
    remove_dir(dir);
}

/* A writer whose own message gives the cause (safetensors does: "write
 * failed: No space left on device") gets the path added, not the cause a
 * second time. */
Test(fileio, a_full_device_is_named_once_with_the_path)
{
    if (access("/dev/full", W_OK) != 0) cr_skip_test("no writable /dev/full");
    tg_tensor *t = tg_tensor_new(TG_F32, 1, (int64_t[]){100000});
    cr_assert_not_null(t);
    const tg_tensor *ts[1] = {t};
    cr_assert_eq(tg_st_save("/dev/full", 1, (const char *const[]){"a"}, ts, 0, NULL, NULL),
                 TG_ERR_IO);
    const char *e = tg_last_error(), *cause = strerror(ENOSPC);
    tt_assert_last_error("/dev/full");
    const char *first = strstr(e, cause);
    cr_assert_not_null(first, "%s", e);
    cr_assert_null(strstr(first + strlen(cause), cause), "the cause twice: %s", e);
    tg_tensor_free(t);
}

/* tg_write_atomic_abandon (what a signal handler calls): the temporary file
 * of the write in progress is gone at once; the target stays as it was. */
static char abandon_tmp[1024];

static tg_status write_then_abandon(FILE *f, void *ctx)
{
    (void)ctx;
    fputs("half", f);
    fflush(f);
    cr_assert_eq(access(abandon_tmp, F_OK), 0, "no temporary file %s during the write",
                 abandon_tmp);
    tg_write_atomic_abandon();
    cr_assert_neq(access(abandon_tmp, F_OK), 0, "%s still there after abandon", abandon_tmp);
    return TG_OK;
}

static tg_status write_old(FILE *f, void *ctx)
{
    (void)ctx;
    fputs("old", f);
    return TG_OK;
}

Test(fileio, abandon_removes_the_temporary_file_of_a_write_in_progress)
{
    char dir[512], path[600];
    make_dir(dir, sizeof dir, "abandon");
    snprintf(path, sizeof path, "%s/out.txt", dir);
    cr_assert_eq(tg_write_atomic(path, write_old, NULL), TG_OK);
    snprintf(abandon_tmp, sizeof abandon_tmp, "%s.tmp.%ld", path, (long)getpid());
    /* the rename then finds no file: the write fails, the old file stays */
    cr_assert_neq(tg_write_atomic(path, write_then_abandon, NULL), TG_OK);
    size_t n;
    char *text = tt_slurp(path, &n);
    cr_assert_str_eq(text, "old");
    free(text);
    cr_assert_eq(count_temps(dir), 0);
    tg_write_atomic_abandon();   /* nothing in progress: nothing happens */
    cr_assert_eq(access(path, F_OK), 0);
    remove_dir(dir);
}
