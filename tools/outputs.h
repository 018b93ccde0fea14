/*
 * outputs.h - the checks every command makes on the files it will write,
 * before it writes any: no output may be one of its inputs, and no two
 * outputs may be the same file (or both stdout). Every writer lists all it
 * writes here, the files it names itself too (train's run files).
 */
#ifndef TG_OUTPUTS_H
#define TG_OUTPUTS_H

/* One file a command reads or writes, and the flag that named it. */
typedef struct tg_cli_file {
    const char *flag;   /* "--out", "--checkpoint", ...: for messages */
    const char *path;   /* NULL: not given (skipped) */
} tg_cli_file;

/* Refuse, with one line naming both files and returning 2, when an output
 * is the same file as an input or an earlier output, or two outputs are "-"
 * (stdout). The same file is:
 *  - for files that exist: the same device and inode, after following
 *    symlinks, so a hard link or a symlink to the file counts;
 *  - for files that do not exist yet: the same real path of the directory
 *    (its longest existing ancestor through realpath, then the missing
 *    components as mkdir -p would make them) and the same name, so
 *    "x.npy", "./../d/x.npy" and a symlinked directory's "l/x.npy" are one.
 * Also refused: an input whose name is that of an output's temporary file
 * (OUT.tmp.PID beside the file OUT is written to), which the writer creates
 * and a later run removes as left over.
 * Outputs that exist and are not regular files (/dev/null, a FIFO) may repeat
 * and are not compared with the inputs, nor are inputs that are "-" or not
 * regular files. Returns 0 when all is well. */
int tg_cli_check_outputs(const char *cmd, const tg_cli_file *in, int n_in,
                         const tg_cli_file *out, int n_out);

#endif
