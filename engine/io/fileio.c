/*
 * fileio.c - reading whole files, and the one helper every writer uses:
 * write "<path>.tmp.<pid>", flush, fsync, rename. A crash or a failed write
 * leaves the previous file as it was. Devices, FIFOs and "-" (stdout) are
 * written in place instead: renaming a file over them would replace them.
 *
 * Reading is capped: every input (a regular file, a pipe, a device) is
 * refused once it needs more than the input limit (tensor_io.h: 4 GiB by
 * default, 2 GiB for CSV, TG_MAX_INPUT_BYTES overrides both). A regular
 * file is refused from its size before anything is read; a stream is read
 * in blocks, each handed to an optional check that can stop it early (CSV:
 * a NUL byte), and refused as soon as it passes the limit.
 */
#define _XOPEN_SOURCE 700   /* realpath: glibc hides it under _POSIX_C_SOURCE alone */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "io_internal.h"
#include "tensor_io.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#ifndef NAME_MAX
#define NAME_MAX 255
#endif

void tg_free(void *p) { tg__free(p); }

#define READ_BLOCK ((size_t)1 << 16)

tg_status tg__input_cap(size_t dflt, size_t *cap)
{
    const char *s = getenv(TG_MAX_INPUT_ENV);
    *cap = dflt;
    if (!s || !*s) return TG_OK;
    const char *p = s;
    unsigned long long v = 0;
    if (*p < '0' || *p > '9') goto bad;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (ULLONG_MAX - 9) / 10) goto bad;
        v = v * 10 + (unsigned long long)(*p - '0');
    }
    unsigned shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    default: break;
    }
    if (*p || v == 0 || v > (ULLONG_MAX >> shift)) goto bad;
    v <<= shift;
    *cap = v > (unsigned long long)SIZE_MAX ? SIZE_MAX : (size_t)v;
    return TG_OK;
bad:
    return tg_set_error(TG_ERR_INVALID, "%s='%.40s': expected a byte count above 0, such as "
                        "1000000, 512M or 8G", TG_MAX_INPUT_ENV, s);
}

tg_status tg__over_cap(const char *path, const char *kind, uint64_t need, size_t cap)
{
    return tg_set_error(TG_ERR_LIMIT, "%s: the %s needs %llu bytes, more than the input limit of "
                        "%zu bytes (set %s, e.g. %s=8G, to raise it)", path, kind,
                        (unsigned long long)need, cap, TG_MAX_INPUT_ENV, TG_MAX_INPUT_ENV);
}

/* read(2) that retries on EINTR; returns what one call gave (0 at the end). */
static ssize_t read_some(int fd, void *buf, size_t n)
{
    ssize_t k;
    do k = read(fd, buf, n);
    while (k < 0 && errno == EINTR);
    return k;
}

/* Everything fd holds, into a new buffer; closes fd. Refuses more than
 * max_bytes (how the message says so depends on whether the limit is the
 * input limit, env_cap, or the caller's own). check, if set, sees every
 * block as it arrives (offset = where it starts) and may stop the read. */
static tg_status read_fd(int fd, const char *path, size_t max_bytes, bool env_cap,
                         tg__block_check check, void *ctx, void **data, size_t *len)
{
    struct stat sb;
    tg_status st = TG_OK;
    size_t cap = READ_BLOCK, n = 0;
    if (fstat(fd, &sb) != 0) {
        st = tg_set_error(TG_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return st;
    }
    if (S_ISDIR(sb.st_mode)) {
        close(fd);
        return tg_set_error(TG_ERR_IO, "%s: is a directory, not a file", path);
    }
    if (S_ISREG(sb.st_mode)) {
        /* the size first: a file over the limit costs nothing */
        if ((uint64_t)sb.st_size > (uint64_t)max_bytes) {
            close(fd);
            return env_cap ? tg__over_cap(path, "file", (uint64_t)sb.st_size, max_bytes)
                           : tg_set_error(TG_ERR_LIMIT, "%s: file is larger than %zu bytes",
                                          path, max_bytes);
        }
        cap = (size_t)sb.st_size + 1;   /* + 1: EOF is seen without growing */
    }
    unsigned char *buf = tg__malloc(cap);
    if (!buf) {
        close(fd);
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
            if (max_bytes < SIZE_MAX && ncap > max_bytes + 1) ncap = max_bytes + 1;
            unsigned char *nb = ncap > cap ? tg__realloc(buf, ncap) : NULL;
            if (!nb) {
                st = tg_set_error(TG_ERR_NOMEM, "%s: out of memory reading the file (%zu bytes "
                                  "so far)", path, n);
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - n < READ_BLOCK ? cap - n : READ_BLOCK;
        ssize_t got = read_some(fd, buf + n, want);
        if (got < 0) {
            st = tg_set_error(TG_ERR_IO, "%s: read error: %s", path, strerror(errno));
            break;
        }
        if (got == 0) break;
        if (check && (st = check(buf + n, (size_t)got, n, path, ctx))) break;
        n += (size_t)got;
        if (n > max_bytes) {
            st = env_cap ? tg_set_error(TG_ERR_LIMIT, "%s: the input goes on past the input limit "
                                        "of %zu bytes (set %s, e.g. %s=8G, to raise it)", path,
                                        max_bytes, TG_MAX_INPUT_ENV, TG_MAX_INPUT_ENV)
                         : tg_set_error(TG_ERR_LIMIT, "%s: file is larger than %zu bytes", path,
                                        max_bytes);
            break;
        }
    }
    close(fd);
    if (st) {
        tg__free(buf);
        return st;
    }
    *data = buf;
    *len = n;
    return TG_OK;
}

static tg_status open_fd(const char *path, int *fd)
{
    if (!path) return tg_set_error(TG_ERR_INVALID, "read: path is NULL");
    *fd = open(path, O_RDONLY);
    if (*fd < 0) return tg_set_error(TG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return TG_OK;
}

tg_status tg_read_file(const char *path, size_t max_bytes, void **data, size_t *len)
{
    TG__NONNULL(data, TG_ERR_INVALID);
    TG__NONNULL(len, TG_ERR_INVALID);
    *data = NULL;
    *len = 0;
    bool env_cap = max_bytes == 0;
    tg_status st = env_cap ? tg__input_cap(TG_MAX_INPUT_DEFAULT, &max_bytes) : TG_OK;
    int fd;
    if (!st) st = open_fd(path, &fd);
    if (st) return st;
    return read_fd(fd, path, max_bytes, env_cap, NULL, NULL, data, len);
}

tg_status tg__read_input(const char *path, size_t default_cap, tg__block_check check, void *ctx,
                         void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    size_t cap;
    int fd;
    tg_status st = tg__input_cap(default_cap, &cap);
    if (!st) st = open_fd(path, &fd);
    if (st) return st;
    return read_fd(fd, path, cap, true, check, ctx, data, len);
}

tg_status tg__open_for_load(const char *path, FILE **f, uint64_t *size, bool *stream)
{
    *f = NULL;
    *size = 0;
    *stream = false;
    if (!path) return tg_set_error(TG_ERR_INVALID, "read: path is NULL");
    *f = fopen(path, "rb");
    if (!*f) return tg_set_error(TG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(*f), &sb) != 0) {
        tg_status st = tg_set_error(TG_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        fclose(*f);
        *f = NULL;
        return st;
    }
    if (S_ISDIR(sb.st_mode)) {
        fclose(*f);
        *f = NULL;
        return tg_set_error(TG_ERR_IO, "%s: is a directory, not a file", path);
    }
    if (S_ISREG(sb.st_mode)) *size = (uint64_t)sb.st_size;
    else *stream = true;   /* a pipe or a device: read in order, no seeking */
    return TG_OK;
}

/* fsync the directory holding path, so the rename itself survives a power
 * loss. Best effort: some file systems refuse to sync a directory. */
static void sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
    char *dir = n ? tg__malloc(n + 1) : NULL;
    if (n && !dir) return;
    if (dir) {
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir ? dir : ".", O_RDONLY);
    tg__free(dir);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* Run the writer on f and flush; name is the path for messages. */
static tg_status run_writer(FILE *f, const char *name, tg_status (*fn)(FILE *f, void *ctx),
                            void *ctx)
{
    errno = 0;
    tg_status st = fn(f, ctx);
    int fn_errno = errno;
    /* A writer's own message may not name the file (or the cause): add them,
     * the cause only when the message does not give it already. */
    if (st && strncmp(tg_last_error(), name, strlen(name)) != 0) {
        if (ferror(f) && fn_errno && !strstr(tg_last_error(), strerror(fn_errno)))
            st = tg_set_error(st, "%s: %s: %s", name, tg_last_error(), strerror(fn_errno));
        else
            st = tg_set_error(st, "%s: %s", name, tg_last_error());
    }
    if (!st && (fflush(f) != 0 || ferror(f)))
        st = tg_set_error(TG_ERR_IO, "%s: write failed: %s", name, strerror(errno));
    return st;
}

/* Write in place through fd (a duplicate of stdout, or a device, FIFO or
 * socket opened as it is); closes fd. */
static tg_status write_in_place(int fd, const char *name, tg_status (*fn)(FILE *f, void *ctx),
                                void *ctx)
{
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        return tg_set_error(TG_ERR_IO, "%s: cannot write: %s", name, strerror(e));
    }
    tg_status st = run_writer(f, name, fn, ctx);
    if (fclose(f) != 0 && !st)
        st = tg_set_error(TG_ERR_IO, "%s: write failed: %s", name, strerror(errno));
    return st;
}

/* A stream connection to the Unix socket at path (open() cannot open one);
 * -1 with errno set. */
static int connect_socket(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (connect(fd, (const struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* "<dst>.tmp.<pid>" in a new buffer, or "<dir of dst>/.tgraph.tmp.<pid>" when
 * the suffix would make the name longer than the file system takes (the
 * file itself may still fit). NULL when out of memory. */
static char *temp_name(const char *dst)
{
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp.%ld", (long)getpid());
    const char *slash = strrchr(dst, '/');
    size_t n = strlen(dst), k = strlen(suffix), dir_len = slash ? (size_t)(slash - dst) + 1 : 0;
    char *tmp = tg__malloc(n + k + sizeof ".tgraph");
    if (!tmp) return NULL;
    if (n - dir_len + k <= NAME_MAX && n + k < PATH_MAX) {
        memcpy(tmp, dst, n);
        memcpy(tmp + n, suffix, k + 1);
    } else {
        memcpy(tmp, dst, dir_len);
        memcpy(tmp + dir_len, ".tgraph", 7);
        memcpy(tmp + dir_len + 7, suffix, k + 1);
    }
    return tmp;
}

/* ---- the temporary files of writes in progress, for a signal handler ----
 * A slot is claimed (its flag set) by the thread that writes; `armed` says
 * its name is complete, for tg_write_atomic_abandon to unlink. Writes beyond
 * TEMP_SLOTS at once are not registered (their temps are then left to the
 * next run's clean-up, as after SIGKILL). */
#define TEMP_SLOTS 4
static struct {
    atomic_flag busy;
    volatile sig_atomic_t armed;
    char name[PATH_MAX + 64];
} temps[TEMP_SLOTS] = {{ATOMIC_FLAG_INIT, 0, ""}, {ATOMIC_FLAG_INIT, 0, ""},
                       {ATOMIC_FLAG_INIT, 0, ""}, {ATOMIC_FLAG_INIT, 0, ""}};

/* The slot now holding tmp, or -1. */
static int temp_register(const char *tmp)
{
    size_t n = strlen(tmp);
    if (n >= sizeof temps[0].name) return -1;
    for (int i = 0; i < TEMP_SLOTS; i++) {
        if (atomic_flag_test_and_set(&temps[i].busy)) continue;
        memcpy(temps[i].name, tmp, n + 1);
        atomic_signal_fence(memory_order_seq_cst);   /* the name whole before it is armed */
        temps[i].armed = 1;
        return i;
    }
    return -1;
}

static void temp_unregister(int slot)
{
    if (slot < 0) return;
    temps[slot].armed = 0;
    atomic_flag_clear(&temps[slot].busy);
}

void tg_write_atomic_abandon(void)
{
    for (int i = 0; i < TEMP_SLOTS; i++)
        if (temps[i].armed) unlink(temps[i].name);
}

/* Write "<dst>.tmp.<pid>", fsync, rename over dst. path is the user's name
 * for dst (a symlink to it, or dst itself), for messages. */
static tg_status write_replace(const char *path, const char *dst,
                               tg_status (*fn)(FILE *f, void *ctx), void *ctx)
{
    char *tmp = temp_name(dst);
    if (!tmp) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
    int slot = temp_register(tmp);   /* before it exists: a signal any time after leaves none */
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        tg_status e = tg_set_error(TG_ERR_IO, "%s: cannot create the temporary file %s: %s", path,
                                   tmp, strerror(errno));
        temp_unregister(slot);
        tg__free(tmp);
        return e;
    }
    tg_status st = run_writer(f, path, fn, ctx);
    if (!st && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        st = tg_set_error(TG_ERR_IO, "%s: fsync failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && !st)
        st = tg_set_error(TG_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    if (!st && rename(tmp, dst) != 0)
        st = tg_set_error(TG_ERR_IO, "%s: cannot rename %s into place: %s", path, tmp,
                          strerror(errno));
    if (st) remove(tmp);
    temp_unregister(slot);
    if (!st) sync_dir(dst);
    tg__free(tmp);
    return st;
}

tg_status tg_write_atomic(const char *path, tg_status (*fn)(FILE *f, void *ctx), void *ctx)
{
    if (!path || !*path) return tg_set_error(TG_ERR_INVALID, "write: empty path");
    if (!fn) return tg_set_error(TG_ERR_INVALID, "%s: write: no writer function", path);
    if (!strcmp(path, "-")) {
        /* through a duplicate of fd 1, after what was printed so far: a failed
         * write is this call's error, and stdout's own stream stays clean */
        fflush(stdout);
        int fd = dup(STDOUT_FILENO);
        if (fd < 0)
            return tg_set_error(TG_ERR_IO, "stdout (-): cannot write: %s", strerror(errno));
        return write_in_place(fd, "stdout (-)", fn, ctx);
    }
    if (strlen(path) >= PATH_MAX)
        return tg_set_error(TG_ERR_INVALID, "write: path too long (%zu bytes, at most %d): "
                            "%.64s...", strlen(path), PATH_MAX - 1, path);
    /* stat, not lstat: what a symlink points to decides */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
        /* a device, FIFO or socket: written as it is, never replaced by a
         * file (as root, /dev/null would be); no O_CREAT, no O_TRUNC */
        int fd = S_ISSOCK(sb.st_mode) ? connect_socket(path)
                                      : open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return tg_set_error(TG_ERR_IO, "%s: cannot open for writing: %s", path,
                                strerror(errno));
        if (fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode)) return write_in_place(fd, path, fn, ctx);
        close(fd);   /* it became a regular file since the stat: replace it */
    }
    /* a symlink to a file: replace the file it points to, so that the link
     * stays a link (a dangling link is replaced by the file) */
    struct stat lsb;
    char *target = lstat(path, &lsb) == 0 && S_ISLNK(lsb.st_mode) ? realpath(path, NULL) : NULL;
    tg_status st = write_replace(path, target ? target : path, fn, ctx);
    free(target);   /* realpath's, from malloc */
    return st;
}
