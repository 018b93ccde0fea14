/*
 * fileio.c - reading whole files, and the one helper every writer uses:
 * write "<path>.tmp.<pid>", flush, fsync, rename. A crash or a failed write
 * leaves the previous file as it was. Devices, FIFOs and "-" (stdout) are
 * written in place instead: renaming a file over them would replace them.
 */
#define _XOPEN_SOURCE 700   /* realpath: glibc hides it under _POSIX_C_SOURCE alone */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "tensor_io.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif
#ifndef NAME_MAX
#define NAME_MAX 255
#endif

void tg_free(void *p) { tg__free(p); }

/* The rest of an open stream into a new buffer; closes f. */
static tg_status read_stream(FILE *f, const char *path, size_t max_bytes, void **data,
                             size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = tg__malloc(cap);
    if (!buf) {
        fclose(f);
        return tg_set_error(TG_ERR_NOMEM, "%s: out of memory reading the file", path);
    }
    for (;;) {
        if (n == cap) {
            if (max_bytes && cap > max_bytes) break;
            size_t ncap = cap * 2;
            unsigned char *nb = ncap > cap ? tg__realloc(buf, ncap) : NULL;
            if (!nb) {
                tg__free(buf);
                fclose(f);
                return tg_set_error(TG_ERR_NOMEM, "%s: out of memory reading the file", path);
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        tg__free(buf);
        return tg_set_error(TG_ERR_IO, "%s: read error", path);
    }
    if (max_bytes && n > max_bytes) {
        tg__free(buf);
        return tg_set_error(TG_ERR_LIMIT, "%s: file is larger than %zu bytes", path, max_bytes);
    }
    *data = buf;
    *len = n;
    return TG_OK;
}

tg_status tg_read_file(const char *path, size_t max_bytes, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (!path) return tg_set_error(TG_ERR_INVALID, "read: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) return tg_set_error(TG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    return read_stream(f, path, max_bytes, data, len);
}

tg_status tg__open_for_load(const char *path, FILE **f, uint64_t *size, tg__parse_fn parse,
                            void *out)
{
    *f = fopen(path, "rb");
    if (!*f) return tg_set_error(TG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(*f), &sb) == 0 && S_ISREG(sb.st_mode)) {
        *size = (uint64_t)sb.st_size;
        return TG_OK;
    }
    /* not a regular file: read it whole from this handle (a FIFO opened
     * again would wait for a writer that has gone) */
    FILE *g = *f;
    *f = NULL;
    void *buf;
    size_t len;
    tg_status st = read_stream(g, path, 0, &buf, &len);
    if (st) return st;
    st = parse(buf, len, path, out);
    tg_free(buf);
    return st;
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
    /* A writer's own message may not name the file (or the cause): add them. */
    if (st && strncmp(tg_last_error(), name, strlen(name)) != 0) {
        if (ferror(f) && fn_errno)
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

/* Write "<dst>.tmp.<pid>", fsync, rename over dst. path is the user's name
 * for dst (a symlink to it, or dst itself), for messages. */
static tg_status write_replace(const char *path, const char *dst,
                               tg_status (*fn)(FILE *f, void *ctx), void *ctx)
{
    char *tmp = temp_name(dst);
    if (!tmp) return tg_set_error(TG_ERR_NOMEM, "%s: out of memory", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        tg_status e = tg_set_error(TG_ERR_IO, "%s: cannot create the temporary file %s: %s", path,
                                   tmp, strerror(errno));
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
    else sync_dir(dst);
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
