/*
 * run_dir.c - what keeps a training run's directory safe, shared by
 * `tgraph train` on series (cmd_train.c) and on text (train_text.c): the
 * stop signals (SIGINT, SIGTERM, SIGHUP set a flag the trainer reads
 * between steps), a run already in --out-dir, --overwrite, and temporary
 * files left by a killed run. Moved out of cmd_train.c unchanged.
 */
#define _DEFAULT_SOURCE   /* flock, realpath: glibc hides them under _POSIX_C_SOURCE alone */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "outputs.h"
#include "tensor_io.h"
#include "run_dir.h"

#define CMD "train"

/* ---- stopping on SIGINT, SIGTERM, SIGHUP ---- */

/* The handler only records the signal; the epoch loop looks at it between
 * steps and stops at a safe point (no write half done, so no *.tmp.<pid>
 * left). SA_RESETHAND puts the default action back as the signal arrives:
 * a second Ctrl-C while stopping ends the process at once (the next run in
 * the directory then removes the temporary file a write left). */
volatile sig_atomic_t tg_rd_stop_signal;
static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction saved_actions[3];
static bool installed[3];

static void on_end_signal(int sig);

static void on_stop_signal(int sig)
{
    if (tg_rd_stop_signal) on_end_signal(sig);   /* the second: at once */
    else tg_rd_stop_signal = sig;
}

/* A signal that is ignored when the run starts (nohup, a background job)
 * stays ignored. */
void tg_rd_signals_install(void)
{
    tg_rd_stop_signal = 0;
    for (int i = 0; i < 3; i++) {
        struct sigaction sa, old;
        if (sigaction(stop_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        installed[i] = sigaction(stop_signals[i], &sa, &saved_actions[i]) == 0;
    }
}

/* Stopping: from now on any of the three signals acts at once. */
void tg_rd_signals_default(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_end_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++)
        if (installed[i]) sigaction(stop_signals[i], &sa, NULL);
}

void tg_rd_signals_restore(void)
{
    for (int i = 0; i < 3; i++)
        if (installed[i]) sigaction(stop_signals[i], &saved_actions[i], NULL);
    memset(installed, 0, sizeof installed);
}

const char *tg_rd_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "signal";
}

/* An argument as a POSIX shell reads it back. */
void tg_rd_put_shell_arg(FILE *f, const char *a)
{
    bool plain = *a != '\0';
    for (const char *p = a; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+=:,@%",
                       *p) != NULL;
    if (plain) {
        fprintf(f, " %s", a);
        return;
    }
    fputs(" '", f);
    for (const char *p = a; *p; p++)
        if (*p == '\'') fputs("'\\''", f);
        else fputc(*p, f);
    fputc('\'', f);
}

/* ---- the output directory ---- */

/* Whether two paths name the same existing directory. */
bool tg_rd_same_dir(const char *a, const char *b)
{
    struct stat x, y;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The run files (checkpoint, best weights, metrics) present in rf->dir, as
 * "a, b, c" into buf; false when there are none. */
bool tg_rd_run_files_present(const tg_tl_files *rf, char *buf, size_t len)
{
    const char *paths[3] = {rf->ckpt, rf->best, rf->csv};
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < 3; i++)
        if (access(paths[i], F_OK) == 0)
            at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? ", " : "",
                                   tg_tl_run_files[i]);
    return at > 0;
}

/* ---- --overwrite: the previous run set aside until this one has a checkpoint ---- */

/* The six run files of the directory being overwritten and their
 * "NAME.previous" names; moved[i]: the previous run had that file. */
static struct {
    bool pending, moved[6];
    char *path[6], *prev[6], *dir, *ckpt, list[256];
} aside;

/* A copy of s (NULL: out of memory). */
static char *copy_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    return c ? memcpy(c, s, n) : NULL;
}

static void aside_free(void)
{
    for (int i = 0; i < 6; i++) {
        free(aside.path[i]);
        free(aside.prev[i]);
    }
    free(aside.dir);
    memset(&aside, 0, sizeof aside);
}

/* The names of rf's six files and their ".previous" names. false: out of memory. */
static bool aside_names(const tg_tl_files *rf)
{
    const char *paths[6] = {rf->ckpt, rf->best, rf->csv, rf->svg, rf->dot, rf->dot_svg};
    aside_free();
    aside.dir = copy_str(rf->dir);
    bool ok = aside.dir != NULL;
    for (int i = 0; i < 6 && ok; i++) {
        size_t n = strlen(paths[i]);
        aside.path[i] = malloc(n + 1);
        aside.prev[i] = malloc(n + sizeof ".previous");
        ok = aside.path[i] && aside.prev[i];
        if (ok) {
            memcpy(aside.path[i], paths[i], n + 1);
            memcpy(aside.prev[i], paths[i], n);
            memcpy(aside.prev[i] + n, ".previous", sizeof ".previous");
        }
    }
    if (ok) aside.ckpt = aside.path[0];
    else aside_free();
    return ok;
}

/* The previous run's files back where they were, the new run's gone. */
static void aside_restore(const char *why)
{
    for (int i = 0; i < 6; i++) {
        if (aside.moved[i]) rename(aside.prev[i], aside.path[i]);
        else remove(aside.path[i]);
    }
    fprintf(stderr, "tgraph train: --overwrite: %s; the previous run's files are back in %s "
            "(%s)\n", why, aside.dir, aside.list);
    aside_free();
}

/* --overwrite: the previous run's files are renamed to NAME.previous; they
 * go when this run writes its first checkpoint (tg_rd_overwrite_commit), and
 * come back when it ends without one (tg_rd_release). 0, or 2 after printing. */
int tg_rd_remove_run_files(const tg_tl_files *rf)
{
    if (!aside_names(rf)) return tg_cli_fail(CMD, "out of memory");
    size_t at = 0;
    for (int i = 0; i < 6; i++) {
        if (access(aside.path[i], F_OK) != 0) continue;
        if (rename(aside.path[i], aside.prev[i]) != 0) {
            int e = errno;
            for (int k = 0; k < i; k++)
                if (aside.moved[k]) rename(aside.prev[k], aside.path[k]);
            tg_cli_fail(CMD, "--overwrite: cannot move %s aside to %s: %s", aside.path[i],
                        aside.prev[i], strerror(e));
            aside_free();
            return 2;
        }
        aside.moved[i] = true;
        at += (size_t)snprintf(aside.list + at, at < sizeof aside.list ? sizeof aside.list - at
                               : 0, "%s%s", at ? ", " : "", tg_tl_run_files[i]);
    }
    aside.pending = true;
    fprintf(stderr, "tgraph train: --overwrite: the previous run's files in %s (%s) are kept as "
            "NAME.previous until this run writes its first checkpoint\n", rf->dir, aside.list);
    return 0;
}

/* Once this run's checkpoint exists, the previous run's files go. */
void tg_rd_overwrite_commit(void)
{
    if (!aside.pending || access(aside.ckpt, F_OK) != 0) return;
    for (int i = 0; i < 6; i++)
        if (aside.moved[i] && remove(aside.prev[i]) != 0 && errno != ENOENT)
            fprintf(stderr, "tgraph train: warning: --overwrite: cannot remove %s: %s\n",
                    aside.prev[i], strerror(errno));
    fprintf(stderr, "tgraph train: --overwrite: removed the previous run's files from %s (%s)\n",
            aside.dir, aside.list);
    aside_free();
}

/* An --overwrite killed before its first checkpoint left NAME.previous: the
 * previous run comes back (no checkpoint of the new one), or they go. */
static void recover_aside(const char *dir)
{
    tg_tl_files rf = {.dir = (char *)dir};
    char **p[6] = {&rf.ckpt, &rf.best, &rf.csv, &rf.svg, &rf.dot, &rf.dot_svg};
    bool ok = true;
    for (int i = 0; i < 6; i++) ok = (*p[i] = tg_tl_path_join(dir, tg_tl_run_files[i])) && ok;
    if (ok && aside_names(&rf)) {
        size_t at = 0;
        for (int i = 0; i < 6; i++) {
            aside.moved[i] = access(aside.prev[i], F_OK) == 0;
            if (aside.moved[i])
                at += (size_t)snprintf(aside.list + at, at < sizeof aside.list
                                       ? sizeof aside.list - at : 0, "%s%s", at ? ", " : "",
                                       tg_tl_run_files[i]);
        }
        aside.pending = at > 0;
        if (aside.pending && access(aside.ckpt, F_OK) == 0) tg_rd_overwrite_commit();
        else if (aside.pending) aside_restore("an earlier run was killed before its first "
                                              "checkpoint");
        aside_free();
    }
    for (int i = 0; i < 6; i++) free(*p[i]);
}

/* ---- one run at a time in a directory ---- */

#define LOCK_NAME ".tgraph.lock"
static int lock_fd = -1;
static char *lock_path, *lock_dir;   /* lock_dir: the directory, when this run made it */

/* Why dir takes no file (e: errno of creating the lock file there). */
static int unwritable(const char *dir, int e)
{
    struct stat sb;
    bool link = lstat(dir, &sb) == 0 && S_ISLNK(sb.st_mode);
    int se = stat(dir, &sb) == 0 ? 0 : errno;
    if (link && se == ENOENT)
        return tg_cli_fail(CMD, "--out %s is a dangling symbolic link (what it names does not "
                           "exist); nothing was trained", dir);
    if (se == ELOOP)
        return tg_cli_fail(CMD, "--out %s: a loop of symbolic links; nothing was trained", dir);
    return tg_cli_fail(CMD, "--out %s is not writable (creating %s there: %s); nothing was "
                       "trained", dir, LOCK_NAME, strerror(e));
}

/* A file system without flock (some FUSE and network ones): the run goes on,
 * unguarded, saying so. */
static bool no_locks(const char *dir, int e)
{
    if (e != ENOLCK && e != EOPNOTSUPP && e != ENOSYS && e != EINVAL) return false;
    fprintf(stderr, "tgraph train: warning: --out %s: cannot lock %s (%s): a second run there "
            "would not be noticed\n", dir, LOCK_NAME, strerror(e));
    return true;
}

static int lock_refused(const char *dir, int fd, int e)
{
    char buf[32] = "";
    ssize_t k = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    buf[k > 0 ? k : 0] = '\0';
    buf[strspn(buf, "0123456789")] = '\0';
    if (fd >= 0) close(fd);
    if (e != EWOULDBLOCK)
        return tg_cli_fail(CMD, "--out %s: cannot lock %s: %s", dir, LOCK_NAME, strerror(e));
    if (*buf)
        return tg_cli_fail(CMD, "--out %s is in use by another run (process %s holds %s/%s): "
                           "wait for it to end, or choose another --out", dir, buf, dir,
                           LOCK_NAME);
    return tg_cli_fail(CMD, "--out %s is in use by another run (%s/%s is locked): wait for it "
                       "to end, or choose another --out", dir, dir, LOCK_NAME);
}

/* Make dir, see that it takes a file, and hold an exclusive flock on
 * dir/.tgraph.lock (holding the pid) until tg_rd_release: a second run in
 * the same directory is refused naming the first's pid; the kernel drops
 * the lock of a killed run. 0, or 2 after printing. */
int tg_rd_lock(const char *dir)
{
    struct stat sb;
    bool made = stat(dir, &sb) != 0 && errno == ENOENT && lstat(dir, &sb) != 0;
    if (tg_tl_mkdirs(CMD, dir)) return 2;
    char *path = tg_tl_path_join(dir, LOCK_NAME);
    if (!path) return tg_cli_fail(CMD, "out of memory");
    for (int tries = 0; tries < 16; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0) {
            int e = errno;
            free(path);
            return unwritable(dir, e);
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0 && !no_locks(dir, errno)) {
            free(path);
            return lock_refused(dir, fd, errno);
        }
        /* the file still the one in the directory: not unlinked by the run
         * that held it just before */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
                int e = errno;
                close(fd);
                remove(path);
                free(path);
                return tg_cli_fail(CMD, "--out %s: cannot write there (%s: %s)", dir, LOCK_NAME,
                                   strerror(e));
            }
            lock_fd = fd;
            lock_path = path;
            lock_dir = made ? copy_str(dir) : NULL;
            recover_aside(dir);
            return 0;
        }
        close(fd);
    }
    free(path);
    return tg_cli_fail(CMD, "--out %s: cannot lock %s: it keeps being replaced", dir, LOCK_NAME);
}

/* The end of the run: an --overwrite that wrote no checkpoint gives the
 * previous run back; the lock goes (and the directory, when this run made it
 * and left nothing in it). */
void tg_rd_release(void)
{
    if (aside.pending) {
        if (access(aside.ckpt, F_OK) == 0) tg_rd_overwrite_commit();
        else aside_restore("this run ended before its first checkpoint");
    }
    if (lock_fd < 0) return;
    remove(lock_path);   /* before the close: no one takes the lock on a file going away */
    close(lock_fd);
    if (lock_dir) rmdir(lock_dir);
    free(lock_path);
    free(lock_dir);
    lock_fd = -1;
    lock_path = lock_dir = NULL;
}

/* Whether rest (after "NAME.tmp.") is the pid of a process that is gone. */
static bool dead_pid(const char *rest)
{
    if (!*rest || strspn(rest, "0123456789") != strlen(rest)) return false;
    errno = 0;
    long long pid = strtoll(rest, NULL, 10);
    bool alive = errno == 0 && pid > 0 && pid <= INT_MAX &&
                 (pid == (long long)getpid() || kill((pid_t)pid, 0) == 0 || errno == EPERM);
    return !alive;
}

/* Remove dir's "<name>.tmp.<pid>" files of gone processes, for the names
 * that want(name, n, ctx) accepts ("<name>" being the first n bytes). */
static void remove_dead_temps(const char *cmd, const char *dir,
                              bool (*want)(const char *name, size_t n, const void *ctx),
                              const void *ctx)
{
    DIR *d = opendir(*dir ? dir : ".");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name, *t = strstr(name, ".tmp.");
        while (t && strstr(t + 1, ".tmp.")) t = strstr(t + 1, ".tmp.");
        if (!t || !dead_pid(t + 5) || !want(name, (size_t)(t - name), ctx)) continue;
        char *path = tg_tl_path_join(dir, name);
        if (path && remove(path) == 0)
            fprintf(stderr, "tgraph %s: removed %s (left by an interrupted run, process %s)\n",
                    cmd, path, t + 5);
        free(path);
    }
    closedir(d);
}

static bool is_run_file(const char *name, size_t n, const void *ctx)
{
    (void)ctx;
    for (int i = 0; i < 6; i++)
        if (strlen(tg_tl_run_files[i]) == n && !strncmp(name, tg_tl_run_files[i], n)) return true;
    return false;
}

/* Remove "<run file>.tmp.<pid>" files whose process is gone (a run killed
 * mid-write, by SIGKILL or a second Ctrl-C), saying so for each. */
void tg_rd_remove_stale_temps(const char *dir)
{
    remove_dead_temps(CMD, dir, is_run_file, NULL);
}

/* The name a temp of the write takes ("<base>", or tg_write_atomic's
 * ".tgraph" for a name too long for the suffix). */
static bool is_output(const char *name, size_t n, const void *ctx)
{
    const char *base = ctx;
    return (strlen(base) == n && !strncmp(name, base, n)) || (n == 7 && !strncmp(name, ".tgraph", 7));
}

void tg_rd_remove_stale_temps_of(const char *cmd, const char *path)
{
    struct stat sb;
    if (!path || !*path || !strcmp(path, "-") || (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)))
        return;
    /* a symlink to a file: the write's temp goes beside the file */
    char *target = lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode) ? realpath(path, NULL) : NULL;
    const char *p = target ? target : path, *slash = strrchr(p, '/');
    char *dir = slash ? tg_tl_dirname(p) : NULL;
    if (dir || !slash) remove_dead_temps(cmd, dir ? dir : "", is_output, slash ? slash + 1 : p);
    free(dir);
    free(target);
}

void tg_rd_clean_outputs(const char *cmd, const tg_cli_file *out, int n_out)
{
    for (int i = 0; i < n_out; i++) tg_rd_remove_stale_temps_of(cmd, out[i].path);
}

/* ---- every command: a signal leaves no temporary file ---- */

/* Unlink the temps of the writes in progress, then die of sig as if
 * uncaught (the shell sees the signal). */
static void on_end_signal(int sig)
{
    tg_write_atomic_abandon();
    signal(sig, SIG_DFL);
    raise(sig);   /* delivered when the handler returns */
}

void tg_rd_output_signals_install(void)
{
    for (int i = 0; i < 3; i++) {
        struct sigaction sa, old;
        if (sigaction(stop_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_end_signal;
        sigemptyset(&sa.sa_mask);
        for (int k = 0; k < 3; k++) sigaddset(&sa.sa_mask, stop_signals[k]);
        sigaction(stop_signals[i], &sa, NULL);
    }
}
