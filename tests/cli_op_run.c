/*
 * cli_op_run.c - see cli_op_run.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_op_run.h"

extern char **environ;

static void tool_path(char *buf, size_t len)
{
    char self[1024];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(buf, len, "%s/tgraph", self);
    cr_assert(access(buf, X_OK) == 0, "%s is missing (make builds it with the tests)", buf);
}

void tt_op_temp_dir(char *buf, size_t len)
{
    snprintf(buf, len, "%s/cli-op-XXXXXX", tt_tmpdir());
    cr_assert(mkdtemp(buf), "mkdtemp: %s", strerror(errno));
}

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, len - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
}

void tt_op_run(const char *dir, int n, char **args, tt_op_result *r)
{
    char tool[1200], out_path[1100], err_path[1100];
    char *argv[160];
    cr_assert(n < 158, "too many arguments");
    tool_path(tool, sizeof tool);
    argv[0] = tool;
    memcpy(argv + 1, args, (size_t)n * sizeof *args);
    argv[n + 1] = NULL;
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int st = posix_spawn(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert(st == 0, "posix_spawn %s: %s", tool, strerror(st));
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0) cr_assert(errno == EINTR, "waitpid: %s", strerror(errno));
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    slurp(out_path, r->out, sizeof r->out);
    slurp(err_path, r->err, sizeof r->err);
    r->err_lines = 0;
    for (const char *p = r->err; *p; p++) r->err_lines += *p == '\n';
    remove(out_path);
    remove(err_path);
}

int tt_op_split_args(const char *spec, const char *dir, char *store, size_t len, char **args)
{
    size_t at = 0;
    int n = 0;
    const char *p = spec;
    while (*p) {
        args[n++] = store + at;
        for (; *p && *p != '|'; p++) {
            const char *sub = NULL;
            if (p[0] == '$' && p[1] == 'F') sub = TT_FIXTURES;
            if (p[0] == '$' && p[1] == 'T') sub = dir;
            if (sub) {
                at += (size_t)snprintf(store + at, len - at, "%s", sub);
                p++;
            } else if (at + 1 < len) {
                store[at++] = *p;
            }
        }
        store[at++] = '\0';
        cr_assert(at < len, "argument store too small");
        if (*p == '|') p++;
    }
    return n;
}

void tt_op_run_spec(const char *spec, const char *dir, tt_op_result *r)
{
    char store[8192];
    char *args[128];
    int n = tt_op_split_args(spec, dir, store, sizeof store, args);
    tt_op_run(dir, n, args, r);
}

tg_tensor *tt_op_load(const char *path)
{
    tg_tensor *t = NULL;
    cr_assert(tg_npy_load(path, &t) == TG_OK, "cannot load %s: %s", path, tg_last_error());
    return t;
}

void tt_op_remove_dir(const char *dir)
{
    char path[1200];
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            remove(path);
        }
    if (d) closedir(d);
    rmdir(dir);
}
