/*
 * test_messages.c - text from files reaches the terminal escaped: checkpoint
 * metadata (data, model, columns, split, lradj, batch_size) holding an ESC
 * sequence or a CR is shown \xNN in every message
 * of eval, predict, sample and train --resume that names it (tg_str_escape,
 * the function tensor names use); valid UTF-8 is kept.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "testutil.h"
#include "st_bytes.h"

static void setup(void) { tt_deadline(60); }
TestSuite(messages, .init = setup);

static char out[1 << 16], err[1 << 16];

#define EVIL "\x1b[31mEVIL\x1b[0m"
#define EVIL_SHOWN "\\x1b[31mEVIL\\x1b[0m"

Test(messages, escape_keeps_utf8_and_escapes_controls_and_bad_bytes)
{
    char buf[128];
    cr_assert_str_eq(tg_str_escape("a" EVIL "\r\x7f", buf, sizeof buf),
                     "a" EVIL_SHOWN "\\x0d\\x7f");
    cr_assert_str_eq(tg_str_escape("Temp\xc3\xa9rature \xe2\x82\xac", buf, sizeof buf),
                     "Temp\xc3\xa9rature \xe2\x82\xac");
    /* not UTF-8: a lone continuation byte, a truncated sequence, an overlong form */
    cr_assert_str_eq(tg_str_escape("\x80x\xc3", buf, sizeof buf), "\\x80x\\xc3");
    cr_assert_str_eq(tg_str_escape("\xc0\xaf", buf, sizeof buf), "\\xc0\\xaf");
    /* C1 controls (U+009B is CSI on some terminals) and backslashes */
    cr_assert_str_eq(tg_str_escape("\xc2\x9b" "31m\\", buf, sizeof buf), "\\xc2\\x9b31m\\\\");
    /* cut with "...", never inside a UTF-8 sequence */
    char small[10];
    cr_assert_str_eq(tg_str_escape("abcd\xc3\xa9\xc3\xa9\xc3\xa9", small, sizeof small),
                     "abcd...");
    cr_assert_null(tg_str_escape(NULL, buf, sizeof buf));
}

/* ---- checkpoints with such metadata ---- */

/* An hourly CSV with columns a, b, OT. */
static const char *write_csv(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "date,a,b,OT\n");
    char date[32];
    for (int i = 0; i < 200; i++)
        fprintf(f, "%s,%.4f,%.4f,%.4f\n",
                tg_date_format(1467331200 + 3600 * (int64_t)i, TG_DATE_YMD_HMS, date, sizeof date),
                sin(i / 4.0), 3 + cos(i / 5.0), 10 + sin(i / 24.0));
    fclose(f);
    return path;
}

static void train_run(const char *data, const char *dir)
{
    int rc = tt_run_tool(TT_ARGS("train", "--data", data, "--model", "linear_forecast", "--set",
                                 "seq_len=16", "--set", "pred_len=4", "--split", "120,40,40",
                                 "--epochs", "1", "--batch-size", "16", "--out", dir),
                         err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
}

/* args exit 2; nothing on stdout or stderr holds an ESC byte, and stderr
 * shows the escaped text. */
static void expect_escaped(const char *const *args, const char *needle)
{
    int rc = tt_run_tool_out(args, out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, err);
    cr_assert_null(strchr(err, '\x1b'), "a raw ESC on stderr: %s", err);
    cr_assert_null(strchr(out, '\x1b'), "a raw ESC on stdout: %s", out);
    cr_assert_not_null(strstr(err, needle), "'%s' not in: %s", needle, err);
}

Test(messages, forecaster_checkpoint_metadata_is_shown_escaped)
{
    const char *data = write_csv(tt_path("d.csv")), *dir = tt_path("run");
    train_run(data, dir);
    char best[512], ck[512], bad[512], rdir[512];
    snprintf(best, sizeof best, "%s/best.safetensors", dir);
    snprintf(ck, sizeof ck, "%s/checkpoint.safetensors", dir);
    snprintf(bad, sizeof bad, "%s", tt_path("bad.safetensors"));
    /* eval: the run's data, a path that does not exist */
    char evil_data[512];
    snprintf(evil_data, sizeof evil_data, "%s" EVIL, data);
    tt_st_resave_meta(best, bad, "data", evil_data);
    expect_escaped(TT_ARGS("eval", "--checkpoint", bad), "d.csv" EVIL_SHOWN);
    /* eval, predict: a model name */
    tt_st_resave_meta(best, bad, "model", "linear_forecast" EVIL);
    expect_escaped(TT_ARGS("eval", "--checkpoint", bad), "linear_forecast" EVIL_SHOWN);
    expect_escaped(TT_ARGS("predict", "--checkpoint", bad, "--data", data),
                   "linear_forecast" EVIL_SHOWN);
    /* predict: the columns (and a CR; a file's JSON header is UTF-8 by then) */
    tt_st_resave_meta(best, bad, "columns", "a\nb" EVIL "\r\nOT");
    expect_escaped(TT_ARGS("predict", "--checkpoint", bad, "--data", data),
                   "trained on a,b" EVIL_SHOWN "\\x0d,OT");
    /* an integer that is not one */
    tt_st_resave_meta(best, bad, "batch_size", "1" EVIL);
    expect_escaped(TT_ARGS("eval", "--checkpoint", bad),
                   "metadata 'batch_size' is '1" EVIL_SHOWN "'");
    /* train --resume: split and lradj */
    snprintf(rdir, sizeof rdir, "%s", tt_path("r"));
    mkdir(rdir, 0700);
    char rck[600];
    snprintf(rck, sizeof rck, "%s/checkpoint.safetensors", rdir);
    tt_st_resave_meta(ck, rck, "split", "120,40" EVIL);
    expect_escaped(TT_ARGS("train", "--resume", rck, "--epochs", "2"),
                   "split '120,40" EVIL_SHOWN "'");
    tt_st_resave_meta(ck, rck, "lradj", "type1" EVIL);
    expect_escaped(TT_ARGS("train", "--resume", rck, "--epochs", "2"),
                   "'type1" EVIL_SHOWN "'");
}

Test(messages, a_report_line_naming_a_data_file_is_escaped)
{
    /* a data file whose name holds an ESC sequence: legal, but shown escaped */
    const char *data = write_csv(tt_path("d" EVIL ".csv")), *dir = tt_path("run");
    train_run(data, dir);
    int rc = tt_run_tool_out(TT_ARGS("train", "--resume", tt_path("run/checkpoint.safetensors"),
                                     "--epochs", "2"), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_null(strchr(out, '\x1b'), "a raw ESC on stdout: %s", out);
    cr_assert_not_null(strstr(out, "d" EVIL_SHOWN ".csv: 200 rows"), "%s", out);
    char best[512];
    snprintf(best, sizeof best, "%s/best.safetensors", dir);
    rc = tt_run_tool_out(TT_ARGS("eval", "--checkpoint", best), out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_null(strchr(out, '\x1b'), "a raw ESC on stdout: %s", out);
    cr_assert_not_null(strstr(out, "d" EVIL_SHOWN ".csv"), "%s", out);
}

Test(messages, sample_names_a_model_escaped)
{
    const char *p = tt_path("in.txt");
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 60; i++) fputs("the king and queen ", f);
    fclose(f);
    const char *dir = tt_path("run");
    int rc = tt_run_tool(TT_ARGS("train", "--text", p, "--set", "n_layer=1", "n_head=2",
                                 "n_embd=16", "--set", "block_size=8", "--batch-size", "4",
                                 "--eval-iters", "1", "--max-steps", "2", "--eval-interval", "2",
                                 "--quiet", "--out-dir", dir),
                         err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char best[512];
    snprintf(best, sizeof best, "%s/best.safetensors", dir);
    const char *bad = tt_path("bad.safetensors");
    tt_st_resave_meta(best, bad, "model", "gpt" EVIL);
    expect_escaped(TT_ARGS("sample", "--checkpoint", bad), "gpt" EVIL_SHOWN);
}
