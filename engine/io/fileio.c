/*
 * fileio.c - reading whole files, and the one helper every writer uses:
 * write "<path>.tmp.<pid>", flush, fsync, rename. A crash or a failed write
 * leaves the previous file as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tensor_io.h"

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
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir) return;
        memcpy(dir, path, n);
        dir[n] = '\0';
    }
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

tg_status tg_write_atomic(const char *path, tg_status (*fn)(FILE *f, void *ctx), void *ctx)
{
    char tmp[4096];
    if (!path || !*path) return tg_set_error(TG_ERR_INVALID, "write: empty path");
    if (!fn) return tg_set_error(TG_ERR_INVALID, "%s: write: no writer function", path);
    int k = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (k < 0 || (size_t)k >= sizeof tmp)
        return tg_set_error(TG_ERR_INVALID, "write: path too long: %s", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return tg_set_error(TG_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    errno = 0;
    tg_status st = fn(f, ctx);
    int fn_errno = errno;
    /* A writer's own message may not name the file (or the cause): add them. */
    if (st && strncmp(tg_last_error(), path, strlen(path)) != 0) {
        if (ferror(f) && fn_errno)
            st = tg_set_error(st, "%s: %s: %s", path, tg_last_error(), strerror(fn_errno));
        else
            st = tg_set_error(st, "%s: %s", path, tg_last_error());
    }
    if (!st && (fflush(f) != 0 || ferror(f)))
        st = tg_set_error(TG_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    if (!st && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS)
        st = tg_set_error(TG_ERR_IO, "%s: fsync failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && !st)
        st = tg_set_error(TG_ERR_IO, "%s: close failed: %s", path, strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = tg_set_error(TG_ERR_IO, "%s: cannot rename %s into place: %s", path, tmp,
                          strerror(errno));
    if (st) remove(tmp);
    else sync_dir(path);
    return st;
}
