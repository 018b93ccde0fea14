/*
 * outputs.c - an output that names an input would destroy it (the writer
 * replaces the file before anyone notices), and two outputs that name the
 * same file keep only the last: both refused up front (see outputs.h).
 * Files are compared by device and inode, not by name.
 */
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "outputs.h"
#include "run_dir.h"

/* A regular file that exists (following symlinks): its identity in sb. */
static int regular_file(const char *path, struct stat *sb)
{
    return path && strcmp(path, "-") != 0 && stat(path, sb) == 0 && S_ISREG(sb->st_mode);
}

static int same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int tg_cli_check_outputs(const char *cmd, const tg_cli_file *in, int n_in,
                         const tg_cli_file *out, int n_out)
{
    for (int j = 0; j < n_out; j++) {
        const char *p = out[j].path;
        if (!p) continue;
        struct stat so, sx;
        bool reg = regular_file(p, &so);
        /* a device or FIFO may be written twice (--out /dev/null --grads /dev/null) */
        bool special = !reg && strcmp(p, "-") != 0 && stat(p, &sx) == 0 && !S_ISDIR(sx.st_mode);
        for (int i = 0; reg && i < n_in; i++)
            if (regular_file(in[i].path, &sx) && same(&so, &sx))
                return tg_cli_fail(cmd, "output %s %s is the same file as input %s %s; nothing "
                                   "was written", out[j].flag, p, in[i].flag, in[i].path);
        for (int k = 0; k < j && !special; k++) {
            const char *q = out[k].path;
            if (!q) continue;
            if (!strcmp(p, "-") && !strcmp(q, "-"))
                return tg_cli_fail(cmd, "%s - and %s - would both write to stdout", out[k].flag,
                                   out[j].flag);
            if (!strcmp(p, q) || (reg && regular_file(q, &sx) && same(&so, &sx)))
                return tg_cli_fail(cmd, "output %s %s is the same file as output %s %s",
                                   out[j].flag, p, out[k].flag, q);
        }
    }
    tg_rd_clean_outputs(cmd, out, n_out);   /* temps a killed run left beside them */
    return 0;
}
