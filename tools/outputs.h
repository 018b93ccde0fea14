/*
 * outputs.h - the checks every command makes on the files it will write,
 * before it writes any: no output may be one of its inputs, and no two
 * outputs may be the same file (or both stdout).
 */
#ifndef TG_OUTPUTS_H
#define TG_OUTPUTS_H

/* One file a command reads or writes, and the flag that named it. */
typedef struct tg_cli_file {
    const char *flag;   /* "--out", "--checkpoint", ...: for messages */
    const char *path;   /* NULL: not given (skipped) */
} tg_cli_file;

/* Refuse, with one line naming both files and returning 2, when
 *  - an output is the same file as an input: same device and inode, after
 *    following symlinks, so a hard link or a symlink to the input counts;
 *  - two outputs are "-" (stdout), the same name, or the same existing file.
 * Outputs that exist and are not regular files (/dev/null, a FIFO) may repeat
 * and are not compared with the inputs; nor are "-" and paths that do not
 * exist yet (they cannot be an input). Returns 0 when all is well. */
int tg_cli_check_outputs(const char *cmd, const tg_cli_file *in, int n_in,
                         const tg_cli_file *out, int n_out);

#endif
