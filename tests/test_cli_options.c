/*
 * test_cli_options.c - every command's options come from one table (tools/args.h
 * tg_opt): each row (name and aliases) is in the command's --help and in the
 * generated man page (tgraph.1 beside tgraph: build/tgraph.1, build-asan/tgraph.1),
 * each is accepted by the command's parser, an unknown option exits 2 naming it,
 * and the man page's EXAMPLES use only options the commands have, quoted for the
 * shell.
 */
#include <criterion/criterion.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static const char *const commands[] = {"train", "eval", "predict", "sample", "run", "op", "gradcheck",
                                       "dot", "export", "compare", "bench", "layers", "demo"};
#define N_COMMANDS (int)(sizeof commands / sizeof *commands)

#define MAX_ROWS 40
#define MAX_SPELL 4
typedef struct {
    char spell[MAX_SPELL][40];   /* the name, then the aliases */
    int  n_spell;
    char arg[40];                /* the placeholder, "" for a flag */
} row;

/* The table of cmd, from `tgraph help --options CMD`. */
static int rows_of(const char *cmd, row *rows)
{
    static char out[65536], err[4096];
    int rc = tt_run_tool_out(TT_ARGS("help", "--options", cmd), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "tgraph help --options %s: exit %d: %s", cmd, rc, err);
    int n = 0;
    char *lines = NULL;
    for (char *line = strtok_r(out, "\n", &lines); line; line = strtok_r(NULL, "\n", &lines)) {
        cr_assert_lt(n, MAX_ROWS);
        row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        cr_assert(tab1 && tab2, "bad line '%s'", line);
        cr_assert_eq(line[0], '-', "%s: a row without an option's name: '%s'", cmd, line);
        *tab1 = *tab2 = '\0';
        snprintf(r->spell[r->n_spell++], sizeof r->spell[0], "%s", line);
        char *save = NULL;   /* the aliases, space-separated */
        for (char *w = strtok_r(tab1 + 1, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
            cr_assert_lt(r->n_spell, MAX_SPELL);
            snprintf(r->spell[r->n_spell++], sizeof r->spell[0], "%s", w);
        }
        snprintf(r->arg, sizeof r->arg, "%s", tab2 + 1);
    }
    cr_assert_gt(n, 0, "%s has no options", cmd);
    return n;
}

/* word occurs in text as a whole option (not a prefix of a longer one). */
static bool has_word(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        char before = p == text ? ' ' : p[-1], after = p[n];
        if (!isalnum((unsigned char)after) && after != '-' && after != '_' && before != '-' &&
            !isalnum((unsigned char)before))
            return true;
    }
    return false;
}

/* The man page beside tgraph (and the test binary). */
static char *read_man(void)
{
    char self[PATH_MAX], path[PATH_MAX + 16];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(k, 0);
    self[k] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(path, sizeof path, "%s/tgraph.1", self);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s is missing: make builds it", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* "--out-dir" as roff writes it: "\fB\-\-out\-dir\fR". */
static void roff_name(const char *s, char *out, size_t n)
{
    size_t k = (size_t)snprintf(out, n, "\\fB");
    for (; *s && k + 4 < n; s++) {
        if (*s == '-') out[k++] = '\\';
        out[k++] = *s;
    }
    snprintf(out + k, n - k, "\\fR");
}

Test(cli_options, every_row_in_help_and_man_page)
{
    static char out[65536], err[4096];
    const char *man = read_man();
    for (int c = 0; c < N_COMMANDS; c++) {
        row rows[MAX_ROWS];
        int n = rows_of(commands[c], rows);
        int rc = tt_run_tool_out(TT_ARGS(commands[c], "--help"), out, sizeof out, err, sizeof err);
        cr_assert_eq(rc, 0, "%s --help: %s", commands[c], err);
        const char *opts = strstr(out, "\noptions:\n");
        cr_assert_not_null(opts, "%s --help has no options section", commands[c]);
        for (int i = 0; i < n; i++)
            for (int s = 0; s < rows[i].n_spell; s++) {
                char want[128];
                cr_assert(has_word(opts, rows[i].spell[s]), "%s --help lacks %s:\n%s",
                          commands[c], rows[i].spell[s], out);
                roff_name(rows[i].spell[s], want, sizeof want);
                cr_assert(strstr(man, want), "tgraph.1 lacks %s's %s (%s)", commands[c],
                          rows[i].spell[s], want);
            }
    }
}

/* A value each placeholder accepts while parsing. */
static const char *value_for(const char *cmd, const char *arg)
{
    static const char *const map[][2] = {
        {"N", "1"}, {"M", "1"}, {"K", "1"}, {"F", "0.5"}, {"SECONDS", "1"},
        {"A,B,C", "0.7,0.1,0.2"}, {"M|S|MS", "M"}, {"S", "constant"}, {"adam|adamw|sgd", "adam"},
        {"LR|TB", "LR"}, {"2,3", "2,3"}, {"I,J,...", "0"}, {"C", "0"}, {"ATTR=VALUE", "dim=1"},
        {"NAME=FILE.npy", "x=x.npy"},
    };
    if (!strcmp(arg, "KEY=VALUE")) return !strcmp(cmd, "gradcheck") ? "dim=1" : "seq_len=8";
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (!strcmp(arg, map[i][0])) return map[i][1];
    return "x";   /* a file name: stored while parsing */
}

#define BOGUS "--zz-not-an-option"

Test(cli_options, every_row_is_accepted_and_unknown_ones_are_not)
{
    tt_deadline(60);
    static char err[4096];
    for (int c = 0; c < N_COMMANDS; c++) {
        row rows[MAX_ROWS];
        int n = rows_of(commands[c], rows);
        char want[128];
        snprintf(want, sizeof want, "unknown option '%s'", BOGUS);
        tt_expect_cli_error(TT_ARGS(commands[c], BOGUS), want, NULL);
        for (int i = 0; i < n; i++)
            for (int s = 0; s < rows[i].n_spell; s++) {
                const char *sp = rows[i].spell[s];
                const char *const *args =
                    rows[i].arg[0] ? TT_ARGS(commands[c], sp, value_for(commands[c], rows[i].arg),
                                             BOGUS)
                                   : TT_ARGS(commands[c], sp, BOGUS);
                int rc = tt_run_tool(args, err, sizeof err);
                char refused[128];
                snprintf(refused, sizeof refused, "unknown option '%s'", sp);
                cr_assert(!strstr(err, refused), "%s refuses its own %s: %s", commands[c], sp, err);
                cr_assert(rc == 0 || rc == 2, "%s %s: exit %d: %s", commands[c], sp, rc, err);
            }
    }
}

Test(cli_options, only_table_rows_are_matched_in_the_sources)
{
    /* the parsers key on table rows: no option is spelled in a strcmp of an argument */
    static const char *const files[] = {"tools/cmd_train.c", "tools/train_opts.c",
                                        "tools/cmd_eval.c", "tools/cmd_predict.c",
                                        "tools/cmd_run.c", "tools/cmd_op.c",
                                        "tools/cmd_gradcheck.c", "tools/cmd_dot.c",
                                        "tools/cmd_export.c",
                                        "tools/cmd_compare.c", "tools/cmd_bench.c",
                                        "tools/cmd_layers.c", "tools/demo.c", "tools/progress.c"};
    static char buf[1 << 18];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        FILE *f = fopen(files[i], "r");
        cr_assert_not_null(f, "%s (tests run from the repository's root)", files[i]);
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        cr_assert_null(strstr(buf, "strcmp(arg, \"-"), "%s matches an option by hand", files[i]);
        cr_assert_null(strstr(buf, "strcmp(argv[i], \"-"), "%s matches an option by hand",
                       files[i]);
    }
}

/* ---- the man page's EXAMPLES ---- */

/* Whether spelling is one of cmd's options; *takes: it has a value. */
static bool is_option(const char *cmd, const char *spelling, bool *takes)
{
    row rows[MAX_ROWS];
    int n = rows_of(cmd, rows);
    for (int i = 0; i < n; i++)
        for (int s = 0; s < rows[i].n_spell; s++)
            if (!strcmp(rows[i].spell[s], spelling)) {
                *takes = rows[i].arg[0] != '\0';
                return true;
            }
    return false;
}

/* One example command line (roff escapes removed, continuations joined):
 * shell words up to a pipe; no unquoted shell metacharacter inside a word. */
static void check_example(const char *line)
{
    char words[32][256];
    int nw = 0;
    const char *p = line;
    while (*p && *p != '|' && nw < 32) {
        while (*p == ' ') p++;
        if (!*p || *p == '|') break;
        size_t k = 0;
        char q = 0;
        for (; *p && (q || (*p != ' ' && *p != '|')); p++) {
            if (!q && (*p == '\'' || *p == '"')) q = *p;
            else if (q && *p == q) q = 0;
            else {
                cr_assert(q || !strchr("<>;&()$`", *p),
                          "EXAMPLES: unquoted '%c' in a word of: %s", *p, line);
                if (k < sizeof words[0] - 1) words[nw][k++] = *p;
            }
        }
        cr_assert(!q, "EXAMPLES: unterminated quote in: %s", line);
        words[nw++][k] = '\0';
    }
    cr_assert(nw >= 2 && !strcmp(words[0], "tgraph"), "%s", line);
    const char *cmd = words[1];
    for (int i = 2; i < nw; i++) {
        char *w = words[i];
        if (w[0] != '-' || !w[1]) continue;   /* a positional or "-" (stdout) */
        char *eq = strchr(w, '=');
        if (eq && w[1] == '-') *eq = '\0';
        bool takes = false;
        cr_assert(is_option(cmd, w, &takes), "EXAMPLES: tgraph %s has no option %s: %s", cmd, w,
                  line);
        if (takes && !eq) i++;   /* its value */
    }
}

Test(cli_options, man_page_examples_use_real_options)
{
    const char *man = read_man();
    const char *ex = strstr(man, "\n.SH EXAMPLES\n");
    cr_assert_not_null(ex);
    const char *end = strstr(ex + 1, "\n.SH ");
    cr_assert_not_null(end);
    static char line[4096];
    size_t k = 0;
    int n_examples = 0;
    bool in_nf = false;
    for (const char *p = ex + 1; p < end;) {
        const char *nl = strchr(p, '\n');
        size_t len = (size_t)(nl - p);
        if (len >= 3 && !strncmp(p, ".nf", 3)) in_nf = true;
        else if (len >= 3 && !strncmp(p, ".fi", 3)) in_nf = false;
        else if (in_nf) {
            for (size_t i = 0; i < len && k < sizeof line - 1; i++) {
                if (p[i] == '\\' && i + 1 < len) {   /* \- -> -, \\ -> \ */
                    i++;
                    if (p[i] == 'e') {
                        line[k++] = '\\';
                        continue;
                    }
                }
                line[k++] = p[i];
            }
            line[k] = '\0';
            if (k && line[k - 1] == '\\') {   /* continued */
                line[--k] = ' ';
                k++;
            } else {
                if (!strncmp(line, "tgraph ", 7)) check_example(line), n_examples++;
                k = 0;
            }
        }
        p = nl + 1;
    }
    cr_assert_geq(n_examples, 10, "only %d examples found", n_examples);
}
