/*
 * outputs.c - an output that names an input would destroy it (the writer
 * replaces the file before anyone notices), and two outputs that name the
 * same file keep only the last: both refused up front (see outputs.h).
 * A file that exists is known by its device and inode; one that does not
 * exist yet by the real path of its directory and its name, so two
 * spellings of one new file ("x.npy", "./../so/x.npy", a symlinked
 * directory) are one file.
 */
#define _XOPEN_SOURCE 700   /* realpath: glibc hides it under _POSIX_C_SOURCE alone */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "outputs.h"
#include "run_dir.h"

typedef enum id_kind {
    ID_NONE,      /* not given */
    ID_STDIO,     /* "-" */
    ID_SPECIAL,   /* a device, FIFO or socket: may be written twice */
    ID_FILE,      /* exists (a regular file or a directory): dev, ino */
    ID_NEW,       /* does not exist yet: name */
} id_kind;

typedef struct file_id {
    id_kind kind;
    dev_t   dev;
    ino_t   ino;
    char   *name;   /* ID_NEW: the real path of its directory + "/" + its name */
    char   *where;  /* ID_FILE, ID_NEW: the entry an input is at, or an output is
                     * written to (and its temporary file beside it); NULL: unknown */
} file_id;

static char *join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    if (!a || dir[a - 1] != '/') p[a++] = '/';
    memcpy(p + a, name, b + 1);
    return p;
}

/* The absolute name path has or will have: the real path of its longest
 * existing ancestor, then the rest of its components as the writer (which
 * creates missing directories) meets them ("." stays, ".." goes up). NULL
 * when that cannot be told (out of memory, a component that is a file, no
 * permission, longer than PATH_MAX): then the path is compared as it is
 * spelt. Recursion at most PATH_MAX / 2 deep, one level a component.
 * follow: a last component that exists is followed (a symlink's target)
 * too; else only the directory is resolved (the symlink itself). */
static char *resolved_name(const char *path, bool follow)
{
    if (strlen(path) >= PATH_MAX) return NULL;
    char *real = follow ? realpath(path, NULL) : NULL;
    if (real || (follow && errno != ENOENT && errno != ENOTDIR)) return real;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;   /* "a/b/" is "a/b" */
    const char *slash = NULL;
    for (size_t i = n; i-- > 0;)
        if (path[i] == '/') {
            slash = path + i;
            break;
        }
    size_t dn = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
    const char *base = slash ? slash + 1 : path;
    size_t bn = n - (size_t)(base - path);
    char *dir = malloc(dn + 1), *name = malloc(bn + 1);
    char *res = NULL;
    if (dir && name && bn > 0) {
        memcpy(dir, slash ? path : ".", dn);
        dir[dn] = '\0';
        memcpy(name, base, bn);
        name[bn] = '\0';
        char *up = resolved_name(dir, true);
        if (up && !strcmp(name, ".")) {
            res = up, up = NULL;
        } else if (up && !strcmp(name, "..")) {
            char *last = strrchr(up, '/');
            if (last) *(last == up ? last + 1 : last) = '\0';
            res = up, up = NULL;
        } else if (up) {
            res = join(up, name);
        }
        free(up);
    }
    free(dir);
    free(name);
    return res;
}

/* An existing file's identity. */
static void from_stat(const struct stat *sb, file_id *id)
{
    id->kind = S_ISREG(sb->st_mode) || S_ISDIR(sb->st_mode) ? ID_FILE : ID_SPECIAL;
    id->dev = sb->st_dev, id->ino = sb->st_ino;
}

/* What path names (output: where it is written); 0, or -1 out of memory. */
static int identify(const char *path, bool output, file_id *id)
{
    struct stat sb;
    *id = (file_id){ID_NONE, 0, 0, NULL, NULL};
    if (!path) return 0;
    if (!strcmp(path, "-")) {
        id->kind = ID_STDIO;
    } else if (stat(path, &sb) == 0) {
        from_stat(&sb, id);
    } else {
        /* absent, or a dangling symlink: the writer's rename puts a file at that name */
        id->kind = ID_NEW;
        if (!(id->name = resolved_name(path, true)) && !(id->name = strdup(path))) return -1;
        /* "D/new/../x" is the file D/x once the writer has made D/new */
        if (id->name[0] == '/' && stat(id->name, &sb) == 0) from_stat(&sb, id);
    }
    if (id->kind == ID_FILE || id->kind == ID_NEW) {
        errno = 0;
        id->where = resolved_name(path, output);
        if (!id->where && errno == ENOMEM) return -1;
    }
    return 0;
}

/* Whether `entry` is a temporary file of a write to `dst` ("DST.tmp.PID"):
 * the writer makes its own, and a run removes those of dead processes. */
static bool temp_of(const char *entry, const char *dst)
{
    size_t n = strlen(dst);
    if (!entry || !dst || strncmp(entry, dst, n) || strncmp(entry + n, ".tmp.", 5)) return false;
    const char *pid = entry + n + 5;
    return *pid && strspn(pid, "0123456789") == strlen(pid);
}

static bool same(const file_id *a, const file_id *b)
{
    if (a->kind != b->kind) return false;
    if (a->kind == ID_FILE) return a->dev == b->dev && a->ino == b->ino;
    return a->kind == ID_NEW && !strcmp(a->name, b->name);
}

/* The clash of out[j] with an input or an earlier output; 0 when none. */
static int clash(const char *cmd, const tg_cli_file *in, const file_id *iid, int n_in,
                 const tg_cli_file *out, const file_id *oid, int j)
{
    const file_id *o = &oid[j];
    for (int i = 0; i < n_in; i++) {
        if (same(o, &iid[i]))
            return tg_cli_fail(cmd, "output %s %s is the same file as input %s %s; nothing "
                               "was written", out[j].flag, out[j].path, in[i].flag, in[i].path);
        if (o->where && temp_of(iid[i].where, o->where))
            return tg_cli_fail(cmd, "input %s %s has the name of a temporary file of output %s "
                               "%s (NAME.tmp.PID: written there, and removed when left by an "
                               "interrupted run); rename it; nothing was written", in[i].flag,
                               in[i].path, out[j].flag, out[j].path);
    }
    for (int k = 0; k < j; k++) {
        if (o->kind == ID_STDIO && oid[k].kind == ID_STDIO)
            return tg_cli_fail(cmd, "%s - and %s - would both write to stdout", out[k].flag,
                               out[j].flag);
        if (same(o, &oid[k]))
            return tg_cli_fail(cmd, "output %s %s is the same file as output %s %s%s%s%s",
                               out[j].flag, out[j].path, out[k].flag, out[k].path,
                               o->kind == ID_NEW ? " (both " : "",
                               o->kind == ID_NEW ? o->name : "", o->kind == ID_NEW ? ")" : "");
    }
    return 0;
}

int tg_cli_check_outputs(const char *cmd, const tg_cli_file *in, int n_in,
                         const tg_cli_file *out, int n_out)
{
    if (n_out <= 0) return 0;
    file_id *ids = calloc((size_t)(n_in > 0 ? n_in : 0) + (size_t)n_out, sizeof *ids);
    if (!ids) return tg_cli_fail(cmd, "out of memory");
    file_id *iid = ids, *oid = ids + (n_in > 0 ? n_in : 0);
    int rc = 0;
    for (int i = 0; i < n_in && !rc; i++)
        if (identify(in[i].path, false, &iid[i])) rc = tg_cli_fail(cmd, "out of memory");
    for (int j = 0; j < n_out && !rc; j++)
        if (identify(out[j].path, true, &oid[j])) rc = tg_cli_fail(cmd, "out of memory");
    for (int i = 0; i < n_in && !rc; i++)   /* an input is read, never replaced */
        if (iid[i].kind == ID_SPECIAL || iid[i].kind == ID_STDIO) iid[i].kind = ID_NONE;
    for (int j = 0; j < n_out && !rc; j++) rc = clash(cmd, in, iid, n_in, out, oid, j);
    for (int i = 0; i < (n_in > 0 ? n_in : 0) + n_out; i++) {
        free(ids[i].name);
        free(ids[i].where);
    }
    if (!rc) tg_rd_clean_outputs(cmd, out, n_out);   /* temps a killed run left beside them */
    free(ids);
    return rc;
}
