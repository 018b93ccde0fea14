/*
 * test_train_text.c - `tgraph train --text` and `tgraph sample` on a tiny
 * GPT and a text written by the test: the run evaluates at step 0 and every
 * --eval-interval (printed lines, metrics.csv rows), stores the vocabulary
 * in its checkpoints, and a run stopped by --max-steps mid-interval and
 * resumed gives the bits of the straight run (every tensor of the
 * checkpoint, the metrics); a second run into the same directory is refused;
 * bad input exits 2 naming it (not UTF-8 with its byte offset, too little
 * text with the counts, options of the other kind of training, a changed
 * text on resume); sample is deterministic for a seed, differs for another,
 * writes only the vocabulary's characters after the prompt, and names
 * prompt characters the model does not know; SIGINT stops a run between
 * steps with one line naming the last checkpoint and the command that
 * resumes it, which works.
 */
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "st_bytes.h"
#include "testutil.h"
#include "checkpoint.h"

static void setup(void) { tt_deadline(60); }
TestSuite(train_text, .init = setup);

static char out[1 << 16], err[1 << 16];

/* A small text of `n` characters: verse-like lines over 20 letters. */
static const char *write_text(const char *name, int n)
{
    const char *p = tt_path(name);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    static const char words[][8] = {"the", "king", "and", "queen", "of", "rome", "shall",
                                    "speak", "no", "more"};
    int at = 0;
    for (int i = 0; at < n; i++) {
        const char *w = words[(i * 7 + i / 3) % 10];
        for (const char *c = w; *c && at < n; c++, at++) fputc(*c, f);
        if (at < n) fputc(i % 6 == 5 ? '\n' : ' ', f), at++;
    }
    fclose(f);
    return p;
}

#define TINY "--set", "n_layer=1", "n_head=2", "n_embd=16", "--set", \
             "block_size=8", "--set", "dropout=0", "--batch-size", "4", "--eval-iters", "2", \
             "--warmup", "2", "--lr", "1e-2", "--quiet"

Test(train_text, run_evaluates_and_checkpoints_the_vocabulary)
{
    const char *txt = write_text("in.txt", 600), *o = tt_path("run");
    int rc = tt_run_tool_out(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "8",
                                     "--eval-interval", "4", "--out-dir", o),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert_not_null(strstr(out, "step 0: train loss "), "%s", out);
    cr_assert_not_null(strstr(out, "step 4: train loss "), "%s", out);
    cr_assert_not_null(strstr(out, "step 8: train loss "), "%s", out);
    cr_assert_not_null(strstr(out, "vocabulary 20"), "%s", out);   /* 18 letters, space, newline */
    char path[256];
    snprintf(path, sizeof path, "%s/metrics.csv", o);
    char *csv = tt_slurp(path, NULL);
    cr_assert_eq(strncmp(csv, "step,train_loss,val_loss,lr\n0,", 30), 0, "%s", csv);
    cr_assert_not_null(strstr(csv, "\n4,"), "%s", csv);
    cr_assert_not_null(strstr(csv, "\n8,"), "%s", csv);
    /* the loss at step 0 is about ln(20) = 3.00 (a fresh model is near uniform) */
    double l0 = strtod(csv + 30, NULL);
    cr_assert(l0 > 2.5 && l0 < 3.6, "step 0 train loss %g", l0);
    free(csv);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", o);
    tg_st_file *f;
    cr_assert_eq(tg_st_load(path, &f), TG_OK, "%s", tg_last_error());
    const char *v = tg_st_meta_find(f, "text.vocab");
    cr_assert_not_null(v);
    cr_assert_eq(strncmp(v, "10 32 97 ", 9), 0, "%s", v);
    cr_assert_not_null(tg_st_find(f, "transformer.wte.weight"));
    tg_st_free(f);
    snprintf(path, sizeof path, "%s/best.safetensors", o);
    cr_assert_eq(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/loss.svg", o);
    char *svg = tt_slurp(path, NULL);
    cr_assert_not_null(strstr(svg, "data-series=\"train\""));
    cr_assert_not_null(strstr(svg, "data-series=\"val\""));
    free(svg);
    /* the same directory again: refused */
    tt_expect_cli_error(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "4", "--out-dir", o),
                        "already holds a run", "--resume");
}

/* Every tensor of two checkpoints is the same (but the history's times). */
static void assert_same_checkpoint(const char *a, const char *b)
{
    tg_st_file *fa, *fb;
    cr_assert_eq(tg_st_load(a, &fa), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_load(b, &fb), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_count(fa), tg_st_count(fb));
    for (int i = 0; i < tg_st_count(fa); i++) {
        const char *name = tg_st_name(fa, i);
        if (!strcmp(name, "tgraph.history")) continue;
        const tg_tensor *x = tg_st_tensor(fa, i), *y = tg_st_find(fb, name);
        cr_assert_not_null(y, "%s", name);
        cr_assert_eq(x->numel, y->numel, "%s", name);
        cr_assert_eq(memcmp(x->data, y->data, (size_t)x->numel * tg_dtype_size(x->dtype)), 0,
                     "%s differs", name);
    }
    cr_assert_str_eq(tg_st_meta_find(fa, "text.evals"), tg_st_meta_find(fb, "text.evals"));
    cr_assert_str_eq(tg_st_meta_find(fa, "step"), tg_st_meta_find(fb, "step"));
    tg_st_free(fa);
    tg_st_free(fb);
}

Test(train_text, resume_from_max_steps_gives_the_straight_run)
{
    const char *txt = write_text("in.txt", 600);
    const char *a = tt_path("straight"), *b = tt_path("split");
    int rc = tt_run_tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "8",
                                 "--eval-interval", "3", "--out-dir", a), err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    /* the schedule must not depend on --max-steps: fix lr_decay_iters */
    rc = tt_run_tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "5",
                             "--lr-decay-iters", "8", "--eval-interval", "3", "--out-dir", b),
                     err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char ck[256], ca[256], mb[256], ma[256];
    snprintf(ck, sizeof ck, "%s/checkpoint.safetensors", b);
    rc = tt_run_tool_out(TT_ARGS("train", "--resume", ck, "--max-steps", "8", "--quiet"), out,
                         sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_not_null(strstr(out, "resumed from"), "%s", out);
    snprintf(ca, sizeof ca, "%s/checkpoint.safetensors", a);
    assert_same_checkpoint(ca, ck);
    snprintf(ma, sizeof ma, "%s/metrics.csv", a);
    snprintf(mb, sizeof mb, "%s/metrics.csv", b);
    char *x = tt_slurp(ma, NULL), *y = tt_slurp(mb, NULL);
    cr_assert_str_eq(x, y);
    free(x), free(y);
    /* the same run on other bytes: refused */
    FILE *f = fopen(txt, "ab");
    fputs("more", f);
    fclose(f);
    tt_expect_cli_error(TT_ARGS("train", "--resume", ck, "--max-steps", "9"),
                        "is not the text of the run", "fnv1a64");
    tt_expect_cli_error(TT_ARGS("train", "--resume", ck, "--lr", "1"),
                        "--lr cannot be changed when resuming", NULL);
}

Test(train_text, bad_text_and_options_are_named)
{
    const char *p = tt_path("bad.txt");
    FILE *f = fopen(p, "wb");
    fputs("hello w\xc3\x28rld", f);
    fclose(f);
    tt_expect_cli_error(TT_ARGS("train", "--text", p, "--out-dir", tt_path("r1")),
                        "not valid UTF-8 at byte offset 7", "bad.txt");
    const char *small = write_text("small.txt", 40);   /* 36 train, 4 validation */
    tt_expect_cli_error(TT_ARGS("train", "--text", small, "--set", "block_size=8", "--out-dir",
                                tt_path("r2")),
                        "validation split", "block_size 8 is too large");
    tt_expect_cli_error(TT_ARGS("train", "--text", small, "--set",
                                "block_size=9223372036854775807", "--out-dir", tt_path("r3")),
                        "block_size 9223372036854775807 is too large",
                        "has 36 characters, and one window needs block_size + 1, so block_size "
                        "can be at most 35");
    tt_expect_cli_error(TT_ARGS("train", "--text", small, "--epochs", "3"),
                        "--epochs does not apply to training on text", NULL);
    tt_expect_cli_error(TT_ARGS("train", "--min-lr", "1e-4"),
                        "--min-lr applies to training on text", NULL);
    tt_expect_cli_error(TT_ARGS("train", "--text", tt_path("missing/x.txt")), "missing/x.txt",
                        NULL);
}

Test(train_text, sample_names_a_vocabulary_that_disagrees_with_vocab_size)
{
    const char *txt = write_text("in.txt", 600), *o = tt_path("run");
    int rc = tt_run_tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "2",
                                 "--eval-interval", "2", "--out-dir", o), err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char ck[256];
    snprintf(ck, sizeof ck, "%s/best.safetensors", o);
    const char *bad = tt_path("bad.safetensors");
    /* 21 code points where the config (and wte) say vocab_size=20 */
    tt_st_resave_meta(ck, bad, "text.vocab", "10 32 97 98 99 100 101 102 103 104 105 106 107 108 "
                     "109 110 111 112 113 114 115");
    tt_expect_cli_error(TT_ARGS("sample", "--checkpoint", bad),
                        "the vocabulary in its metadata (text.vocab) has 21 entries",
                        "its config says vocab_size=20");
}

Test(train_text, sample_is_deterministic_for_a_seed)
{
    const char *txt = write_text("in.txt", 600), *o = tt_path("run");
    int rc = tt_run_tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "6",
                                 "--eval-interval", "3", "--out-dir", o), err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char ck[256];
    snprintf(ck, sizeof ck, "%s/best.safetensors", o);
    static char a[4096], b[4096], c[4096];
    rc = tt_run_tool_out(TT_ARGS("sample", "--checkpoint", ck, "--prompt", "the king",
                                 "--tokens", "40", "--seed", "5"), a, sizeof a, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_not_null(strstr(err, "tokens/s"), "%s", err);
    rc = tt_run_tool_out(TT_ARGS("sample", "--checkpoint", ck, "--prompt", "the king",
                                 "--tokens", "40", "--seed", "5"), b, sizeof b, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    rc = tt_run_tool_out(TT_ARGS("sample", "--checkpoint", ck, "--prompt", "the king",
                                 "--tokens", "40", "--seed", "6", "--temperature", "1.5"), c,
                         sizeof c, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(a, b);
    cr_assert_str_neq(a, c);
    /* the prompt, 40 characters of the text's alphabet, a newline */
    cr_assert_eq(strncmp(a, "the king", 8), 0, "%s", a);
    cr_assert_eq(strlen(a), 8 + 40 + 1, "%s", a);
    for (const char *s = a; *s; s++)
        cr_assert(strchr("abcdefghijklmnopqrstuvwxyz \n", *s), "'%c' in %s", *s, a);
    /* top-k 1 is the argmax: the same text for any seed */
    rc = tt_run_tool_out(TT_ARGS("sample", "--checkpoint", ck, "--tokens", "20", "--top-k", "1",
                                 "--seed", "1"), a, sizeof a, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    rc = tt_run_tool_out(TT_ARGS("sample", "--checkpoint", ck, "--tokens", "20", "--top-k", "1",
                                 "--seed", "2"), b, sizeof b, err, sizeof err);
    cr_assert_str_eq(a, b);
    tt_expect_cli_error(TT_ARGS("sample", "--checkpoint", ck, "--prompt", "KING x"),
                        "--prompt: characters not in the model's vocabulary",
                        "'K' (U+004B), 'I' (U+0049), 'N' (U+004E), 'G' (U+0047), 'x' (U+0078)");
    tt_expect_cli_error(TT_ARGS("sample", "--checkpoint", txt), "--checkpoint", NULL);
}

/* `tgraph ARGS` in the background, stderr into tt_path("run.err"). */
static pid_t start_tool(const char *const *args)
{
    char self[PATH_MAX], tool_path[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    cr_assert_gt(k, 0);
    self[k] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(tool_path, sizeof tool_path, "%.4000s/tgraph", self);
    const char *argv[48] = {tool_path};
    int n = 1;
    for (; args[n - 1] && n < 46; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    const char *e = tt_path("run.err");
    fflush(NULL);
    pid_t pid = fork();   /* fork-safe: the child only execs */
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644), fn = open("/dev/null", O_RDWR);
        if (fe < 0 || fn < 0) _exit(126);
        dup2(fn, 0), dup2(fn, 1), dup2(fe, 2);
        execv(tool_path, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

Test(train_text, sigint_names_the_checkpoint_and_the_resume_command)
{
    const char *txt = write_text("in.txt", 600), *o = tt_path("run");
    char csv[256], ck[256], want[1024], more[32];
    snprintf(csv, sizeof csv, "%s/metrics.csv", o);
    snprintf(ck, sizeof ck, "%s/checkpoint.safetensors", o);
    pid_t pid = start_tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "100000000",
                                   "--eval-interval", "2", "--threads", "1", "--out-dir", o));
    int status, waited = 0;
    while (access(csv, F_OK) != 0 && waited < 30000) {
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "train ended before the signal");
        nanosleep(&(struct timespec){0, 20000000L}, NULL);
        waited += 20;
    }
    cr_assert_eq(access(csv, F_OK), 0, "no evaluation in 30 s");
    cr_assert_eq(kill(pid, SIGINT), 0);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    char *e = tt_slurp(tt_path("run.err"), NULL);
    cr_assert_eq(WEXITSTATUS(status), 130, "exit %d: %s", WEXITSTATUS(status), e);
    size_t len = strlen(e);
    cr_assert(len > 0 && e[len - 1] == '\n' && !memchr(e, '\n', len - 1), "not one line: %s", e);
    cr_assert_eq(strncmp(e, "tgraph train: interrupted (SIGINT) at step ", 43), 0, "%s", e);
    snprintf(want, sizeof want, "; last complete checkpoint: %s; resume with: tgraph train "
             "--resume %s --max-steps 100000000 --threads 1\n", ck, ck);
    cr_assert_not_null(strstr(e, want), "%s", e);
    long long stopped = atoll(e + 43);
    free(e);
    /* the command works: two evaluations past the step the run stopped at */
    snprintf(more, sizeof more, "%lld", stopped + 4);
    int rc = tt_run_tool_out(TT_ARGS("train", "--resume", ck, "--max-steps", more, "--threads",
                                     "1", "--quiet"), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_not_null(strstr(out, "resumed from"), "%s", out);
    snprintf(want, sizeof want, "\n%lld,", stopped + 4 - (stopped + 4) % 2);
    char *m = tt_slurp(csv, NULL);
    cr_assert_not_null(strstr(m, want), "no row %s in %s", want + 1, m);
    free(m);
}

/* A checkpoint whose weights hold a NaN or an Inf (a diverged run) is
 * refused naming the tensor: its samples would be one character repeated. */
Test(train_text, sample_refuses_non_finite_weights)
{
    const char *txt = write_text("in.txt", 600), *o = tt_path("run");
    int rc = tt_run_tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "2",
                                 "--eval-interval", "2", "--out-dir", o), err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    const char *ck = tt_path("run/checkpoint.safetensors");
    tt_st_rewrite(ck, "transformer.h.0.mlp.c_fc.weight", NAN, NULL, NULL);
    tt_expect_cli_error(TT_ARGS("sample", "--checkpoint", ck, "--tokens", "5"),
                        "'transformer.h.0.mlp.c_fc.weight'", "nan");
    tt_st_rewrite(ck, "transformer.wte.weight", -INFINITY, NULL, NULL);
    tt_expect_cli_error(TT_ARGS("sample", "--checkpoint", ck, "--tokens", "5"),
                        "'transformer.wte.weight'", "-inf");
}

/* The counters a resumed run takes from the metadata: best_val no loss,
 * epoch or step beyond the run's own --max-steps (INT64_MAX among them):
 * each refused naming the key and the value. */
Test(train_text, resume_refuses_impossible_counters_by_name)
{
    const char *txt = write_text("in.txt", 600), *o = tt_path("run");
    int rc = tt_run_tool(TT_ARGS("train", "--text", txt, TINY, "--max-steps", "4",
                                 "--eval-interval", "2", "--out-dir", o), err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    const char *ck = tt_path("run/checkpoint.safetensors");
    cr_assert_eq(mkdir(tt_path("b"), 0777), 0);
    const char *bad = tt_path("b/checkpoint.safetensors");
    static const char *const cases[][3] = {
        {"best_val", "nan", "'best_val' is 'nan'"},
        {"best_val", "-inf", "'best_val' is '-inf'"},
        {"epoch", "9223372036854775807", "'epoch' is '9223372036854775807'"},
        {"epoch", "3", "'epoch' is '3', beyond the run's 2 epochs"},
        {"step", "9223372036854775807", "'step' is '9223372036854775807'"},
        {"step", "5", "'step' is '5', beyond the 4 steps"},
        {"step", "-1", "'step' is '-1'"},
        {"best_epoch", "9", "'best_epoch' is '9'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n;
        char *bytes = tt_slurp(ck, &n);
        tt_st_write_bytes(bad, bytes, n);
        free(bytes);
        tt_st_rewrite(bad, NULL, 0, cases[i][0], cases[i][1]);
        tt_expect_cli_error(TT_ARGS("train", "--resume", bad, "--max-steps", "8"), cases[i][2],
                            bad);
    }
    rc = tt_run_tool(TT_ARGS("train", "--resume", ck, "--max-steps", "6"), err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
}

/* Step 0's evaluation counts as the best so far (nanoGPT's best_val_loss):
 * a run that only gets worse reports step 0 as its best, and best.safetensors
 * holds that model (step 0, its val loss); a validation loss 1000 times that
 * of guessing uniformly stops the run (exit 1) naming it, and the files left
 * are step 0's, not the diverged model. */
Test(train_text, step_0_counts_as_best_and_an_absurd_loss_stops)
{
    const char *txt = write_text("in.txt", 600), *o = tt_path("run");
    int rc = tt_run_tool_out(TT_ARGS("train", "--text", txt, TINY, "--lr", "10", "--max-steps",
                                     "8", "--eval-interval", "4", "--out-dir", o),
                             out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    double v0 = 0;
    const char *s0 = strstr(out, "step 0: train loss ");
    cr_assert_not_null(s0, "%s", out);
    cr_assert_eq(sscanf(strstr(s0, "val loss ") + 9, "%lf", &v0), 1);
    char line[128];
    snprintf(line, sizeof line, "best val loss %.4f at step 0,", v0);
    cr_assert_not_null(strstr(out, line), "'%s' not in: %s", line, out);
    tg_checkpoint ck;
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_checkpoint_read(tt_path("run/best.safetensors"), &ck), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(ck.step, 0);
    cr_assert_float_eq(ck.best_val, v0, 1e-4);
    tg_checkpoint_clear(&ck);

    const char *o2 = tt_path("run2");
    rc = tt_run_tool_out(TT_ARGS("train", "--text", txt, TINY, "--lr", "100", "--max-steps", "8",
                                 "--eval-interval", "4", "--out-dir", o2),
                         out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, err);
    cr_assert_not_null(strstr(err, "stopped at step 4: the validation loss"), "%s", err);
    cr_assert_not_null(strstr(err, "is absurd"), "%s", err);
    cr_assert_null(strstr(out, "best val loss"), "%s", out);
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_checkpoint_read(tt_path("run2/best.safetensors"), &ck), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(ck.step, 0);
    tg_checkpoint_clear(&ck);
    tg_checkpoint_init(&ck);
    cr_assert_eq(tg_checkpoint_read(tt_path("run2/checkpoint.safetensors"), &ck), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(ck.step, 0);
    tg_checkpoint_clear(&ck);
}
