/*
 * test_train_steps.c - issue 19's training items. The library trainer's
 * max_steps: the run ends there, a mid-epoch stop saves a checkpoint that
 * resumes to the bits of the uninterrupted run (from the file, and in the
 * same process), the progress callback's totals. `tgraph train`: the
 * defaults on a --data CSV and the configuration printed before training;
 * progress lines on a pipe (--progress-every 0: one per step; --quiet:
 * none); --max-steps (exactly N steps, resumed equals straight, bit for
 * bit); bad values of the new flags.
 */
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "checkpoint.h"
#include "trainer.h"

/* ---- the library: linear regression, 4 steps an epoch ---- */

#define N_TRAIN 64
#define FEAT    4
#define BATCH   16

typedef struct lin {
    float      xs[N_TRAIN][FEAT], ys[N_TRAIN];
    int64_t    order[N_TRAIN];
    tg_params *ps;
    tg_param  *w, *b;
    tg_graph  *g;
    tg_node   *x, *y, *loss;
    tg_optim  *opt;
    int64_t    steps_seen, total_steps, bad;   /* what progress saw */
} lin;

static void lin_init(lin *l)
{
    memset(l, 0, sizeof *l);
    tg_rng r;
    tg_rng_seed(&r, 99);
    for (int i = 0; i < N_TRAIN; i++) {
        l->ys[i] = 0.3f;
        for (int f = 0; f < FEAT; f++) {
            l->xs[i][f] = (float)tg_rng_normal(&r);
            l->ys[i] += (float)(f + 1) * l->xs[i][f];
        }
    }
    l->ps = tg_params_new(TG_F32);
    l->w = tg_params_add(l->ps, "w", 2, (int64_t[]){1, FEAT});
    l->b = tg_params_add(l->ps, "b", 1, (int64_t[]){1});
    tg_init_uniform(&l->w->value, -0.5, 0.5, &r);
    l->g = tg_graph_new(TG_F32);
    l->x = tg_input(l->g, "x", TG_F32, 2, (int64_t[]){BATCH, FEAT});
    l->y = tg_input(l->g, "y", TG_F32, 2, (int64_t[]){BATCH, 1});
    tg_node *h = tg_linear(l->g, l->x, tg_param_node(l->g, l->w), tg_param_node(l->g, l->b));
    h = tg_dropout(l->g, h, 0.2);   /* the graph's RNG matters to the bits */
    l->loss = tg_mse_loss(l->g, h, l->y, TG_REDUCTION_MEAN);
    cr_assert_null(tg_graph_error(l->g), "%s", tg_graph_error(l->g));
    l->opt = tg_optim_new(l->ps, &(tg_optim_config){.kind = TG_OPTIM_ADAM, .lr = 0.05});
    cr_assert_not_null(l->opt);
}

static void lin_free(lin *l)
{
    tg_optim_free(l->opt);
    tg_graph_free(l->g);
    tg_params_free(l->ps);
}

static tg_status fill(void *user, int64_t epoch, int64_t k, tg_rng *rng)
{
    lin *l = user;
    (void)epoch;
    if (k == 0) {
        for (int64_t i = 0; i < N_TRAIN; i++) l->order[i] = i;
        tg_shuffle_i64(l->order, N_TRAIN, rng);
    }
    float *x = tg_node_value(l->x)->data, *y = tg_node_value(l->y)->data;
    for (int64_t i = 0; i < BATCH; i++) {
        int64_t s = l->order[k * BATCH + i];
        memcpy(x + i * FEAT, l->xs[s], sizeof l->xs[s]);
        y[i] = l->ys[s];
    }
    return TG_OK;
}

static tg_status progress(void *user, const tg_trainer_progress *p)
{
    lin *l = user;
    if (p->event != TG_TRAINER_EVENT_STEP) return TG_OK;
    l->steps_seen++;
    l->total_steps = p->total_steps;
    if (p->call_steps != l->steps_seen || p->call_seconds < 0 || p->epoch_seconds < 0 ||
        p->epoch_seconds > p->call_seconds + 1e-9)
        l->bad++;
    return TG_OK;
}

static void trainer_for(tg_trainer *t, lin *l, int64_t max_steps, const char *last)
{
    tg_trainer_init(t);
    t->graph = l->g;
    t->loss = l->loss;
    t->ps = l->ps;
    t->optim = l->opt;
    t->lr = 0.05;
    t->schedule = TG_LR_TYPE1;
    t->epochs = 5;
    t->steps_per_epoch = N_TRAIN / BATCH;
    t->batch = fill;
    t->progress = progress;
    t->user = l;
    t->max_steps = max_steps;
    t->last_path = last;
    tg_trainer_seed(t, 5);
}

static void assert_same_state(const lin *a, const tg_trainer *ta, const lin *b,
                              const tg_trainer *tb)
{
    cr_assert_arr_eq(a->w->value.data, b->w->value.data, FEAT * sizeof(float));
    cr_assert_arr_eq(a->b->value.data, b->b->value.data, sizeof(float));
    cr_assert_eq(ta->state.step, tb->state.step);
    cr_assert_eq(ta->state.epoch, tb->state.epoch);
    cr_assert_eq(ta->state.history_rows, tb->state.history_rows);
    for (int64_t i = 0; i < ta->state.history_rows * TG_CKPT_HISTORY_COLS; i++)
        if (i % TG_CKPT_HISTORY_COLS != 5)   /* not the seconds */
            cr_assert_eq(ta->state.history[i], tb->state.history[i], "history value %lld",
                         (long long)i);
}

TestSuite(trainer_steps);

Test(trainer_steps, max_steps_mid_epoch_resumes_to_the_uninterrupted_bits)
{
    lin s, a, b;
    tg_trainer ts, ta, tb;
    /* straight: 5 epochs of 4 steps */
    lin_init(&s);
    trainer_for(&ts, &s, 0, NULL);
    cr_assert_eq(tg_trainer_run(&ts), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ts.end, TG_TRAINER_DONE);
    cr_assert_eq(ts.state.step, 20);
    cr_assert_eq(s.total_steps, 20);

    /* 6 steps: epoch 1 and two steps of epoch 2, saved there */
    const char *ck = tt_path("last.safetensors");
    lin_init(&a);
    trainer_for(&ta, &a, 6, ck);
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ta.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(ta.state.step, 6);
    cr_assert_eq(ta.state.epoch, 1);
    cr_assert_eq(ta.state.history_rows, 1);
    cr_assert_eq(a.steps_seen, 6);
    cr_assert_eq(a.total_steps, 6);
    cr_assert_eq(a.bad, 0);

    /* from the file, into a fresh model: the rest of the run */
    tg_checkpoint c;
    tg_checkpoint_init(&c);
    cr_assert_eq(tg_checkpoint_read(ck, &c), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(tg_checkpoint_meta(&c, "trainer.epoch_step"), "2");
    lin_init(&b);
    trainer_for(&tb, &b, 0, NULL);
    cr_assert_eq(tg_trainer_resume(&tb, &c), TG_OK, "%s", tg_last_error());
    tg_checkpoint_clear(&c);
    cr_assert_eq(tb.resume_k, 2);
    cr_assert_eq(tg_trainer_run(&tb), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tb.end, TG_TRAINER_DONE);
    cr_assert_eq(b.steps_seen, 14);
    assert_same_state(&s, &ts, &b, &tb);

    /* in the same process: a larger max_steps goes on (11 = mid-epoch again) */
    ta.max_steps = 11;
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ta.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(ta.state.step, 11);
    ta.max_steps = 0;
    cr_assert_eq(tg_trainer_run(&ta), TG_OK, "%s", tg_last_error());
    cr_assert_eq(ta.end, TG_TRAINER_DONE);
    assert_same_state(&s, &ts, &a, &ta);

    tg_trainer_clear(&ts);
    tg_trainer_clear(&ta);
    tg_trainer_clear(&tb);
    lin_free(&s);
    lin_free(&a);
    lin_free(&b);
}

Test(trainer_steps, max_steps_at_an_epoch_end_and_bad_values)
{
    lin l;
    tg_trainer t;
    lin_init(&l);
    trainer_for(&t, &l, 8, NULL);
    cr_assert_eq(tg_trainer_run(&t), TG_OK, "%s", tg_last_error());
    cr_assert_eq(t.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(t.state.epoch, 2);
    cr_assert_eq(t.state.step, 8);
    cr_assert_eq(t.resume_k, 0);
    /* already there: nothing more */
    cr_assert_eq(tg_trainer_run(&t), TG_OK);
    cr_assert_eq(t.end, TG_TRAINER_MAX_STEPS);
    cr_assert_eq(t.state.step, 8);
    t.max_steps = -1;
    cr_assert_eq(tg_trainer_run(&t), TG_ERR_INVALID);
    cr_assert(strstr(tg_last_error(), "max_steps must be >= 0"), "%s", tg_last_error());
    t.max_steps = 0;
    t.resume_k = 4;
    cr_assert_eq(tg_trainer_run(&t), TG_ERR_INVALID);
    cr_assert(strstr(tg_last_error(), "resume_k"), "%s", tg_last_error());
    tg_trainer_clear(&t);
    lin_free(&l);
}

/* ---- the command ---- */

static char out_text[1 << 16], err_text[1 << 16];

static int tool(const char *const *args)
{
    return tt_run_tool_out(args, out_text, sizeof out_text, err_text, sizeof err_text);
}

static void setup(void) { tt_deadline(120); }

TestSuite(train_progress, .init = setup);

/* The final line is still the last one on stdout. */
static void assert_final_line(void)
{
    regex_t re;
    cr_assert_eq(regcomp(&re, "\ntest mse=[0-9]+\\.[0-9]{4} mae=[0-9]+\\.[0-9]{4} \\| repeat-last "
                              "mse=[0-9]+\\.[0-9]{4} \\| train-mean mse=[0-9]+\\.[0-9]{4}\n$",
                         REG_EXTENDED), 0);
    cr_assert_eq(regexec(&re, out_text, 0, NULL, 0), 0, "bad final line in:\n%s", out_text);
    regfree(&re);
}

/* A CSV of `rows` rows x 3 columns with a date column. */
static const char *write_csv(int rows)
{
    const char *path = tt_path("data.csv");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fprintf(f, "date,A,B,C\n");
    for (int r = 0; r < rows; r++)
        fprintf(f, "2020-01-%02d %02d:00:00,%.6f,%.6f,%.6f\n", 1 + r / 24, r % 24,
                sin(r * 0.26), cos(r * 0.13) * 2 + 5, 0.5 * sin(r * 0.7 + 1) + 0.01 * (r % 7));
    fclose(f);
    return path;
}

/* The config line starting at `line` ("\n  config: K=V K=V ...") holds kv. */
static bool config_has(const char *line, const char *kv)
{
    const char *eol = strchr(line + 1, '\n');
    size_t n = strlen(kv);
    for (const char *p = strstr(line, kv); p && p < eol; p = strstr(p + 1, kv))
        if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n')) return true;
    return false;
}

Test(train_progress, defaults_on_a_data_csv_and_the_config_printed_first)
{
    const char *csv = write_csv(400);
    cr_assert_eq(tool(TT_ARGS("train", "--data", csv, "--max-steps", "2", "--threads", "2",
                              "--quiet", "--out", tt_path("r"))), 0, "%s", err_text);
    const char *keys[] = {"seq_len=96", "pred_len=24", "seg_len=12", "d_model=64", "n_heads=4",
                          "e_layers=2", "factor=3", "d_ff=128", "dropout=0.2", "enc_in=3", "B=32",
                          NULL};
    const char *config = strstr(out_text, "\n  config:");
    cr_assert_not_null(config, "%s", out_text);
    for (int i = 0; keys[i]; i++)
        cr_assert(config_has(config, keys[i]), "%s not in the config line:\n%s", keys[i],
                  out_text);
    const char *needles[] = {"tgraph train: crossformer, ", " parameters, on ", "400 rows x 3 columns",
                             "split 0.7,0.1,0.2: train rows [0, 280)", "windows 161 / ",
                             "adam lr 0.001 (type1), batch 32", "10 epochs, patience 3, seed 0",
                             "2 threads, max steps 2", NULL};
    for (int i = 0; needles[i]; i++)
        cr_assert(strstr(out_text, needles[i]), "'%s' not in:\n%s", needles[i], out_text);
    /* said before training: ahead of the steps' report */
    cr_assert(strstr(out_text, "max steps: stopped after step 2") > config, "%s", out_text);
    cr_assert(strstr(out_text, "no epoch completed: testing the weights after step 2"), "%s",
              out_text);
    assert_final_line();

    /* --set and --lr still win, key by key */
    cr_assert_eq(tool(TT_ARGS("train", "--data", csv, "--set", "d_model=32", "--lr", "3e-3",
                              "--max-steps", "1", "--threads", "2", "--quiet", "--out",
                              tt_path("r2"))), 0, "%s", err_text);
    config = strstr(out_text, "\n  config:");
    cr_assert(config && config_has(config, "d_model=32") && config_has(config, "seq_len=96") &&
              config_has(config, "d_ff=128") && strstr(out_text, "adam lr 0.003"), "%s", out_text);

    /* the built-in data keeps its own small config */
    cr_assert_eq(tool(TT_ARGS("train", "--max-steps", "1", "--threads", "2", "--quiet", "--out",
                              tt_path("r3"))), 0, "%s", err_text);
    config = strstr(out_text, "\n  config:");
    cr_assert(config && config_has(config, "d_model=32") && config_has(config, "n_heads=2") &&
              config_has(config, "dropout=0.1") && strstr(out_text, "adam lr 0.005"), "%s",
              out_text);
}

#define LINEAR "--model", "linear_forecast", "--set", "seq_len=24", "--set", "pred_len=8", \
               "--batch-size", "256", "--threads", "2"

Test(train_progress, a_line_per_step_on_a_pipe_and_none_when_quiet)
{
    /* the built-in data, 2769 training windows: 10 steps an epoch */
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "2", "--progress-every", "0",
                              "--out", tt_path("a"))), 0, "%s", err_text);
    const char *p = err_text;
    for (int step = 1; step <= 20; step++) {
        int epoch, k, spe, run, total, n = 0;
        double loss;
        cr_assert_eq(sscanf(p, "progress: epoch %d/2 step %d/%d (run %d/%d)  loss %lf%n", &epoch,
                            &k, &spe, &run, &total, &loss, &n), 6, "line %d of:\n%s", step,
                     err_text);
        cr_assert(n > 0);
        cr_assert_eq(epoch, 1 + (step - 1) / 10);
        cr_assert_eq(k, 1 + (step - 1) % 10);
        cr_assert_eq(spe, 10);
        cr_assert_eq(run, step);
        cr_assert_eq(total, 20);
        cr_assert(loss > 0 && loss < 10, "loss %g", loss);
        cr_assert(strstr(p, " steps/s  ETA epoch "), "%s", p);
        p = strchr(p, '\n');
        cr_assert_not_null(p);
        p++;
    }
    cr_assert_str_eq(p, "", "more than one line a step:\n%s", err_text);
    assert_final_line();

    /* --quiet: nothing on stderr; the default (5 s) on this short run: nothing either */
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "2", "--progress-every", "0",
                              "--quiet", "--out", tt_path("b"))), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");
    assert_final_line();
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "1", "--out", tt_path("c"))), 0, "%s",
                 err_text);
    cr_assert_str_eq(err_text, "");
}

/* The checkpoint's step and epoch; history rows. */
static void ckpt_steps(const char *path, int64_t *step, int64_t *epoch, int64_t *rows)
{
    tg_checkpoint c;
    tg_checkpoint_init(&c);
    cr_assert_eq(tg_checkpoint_read(path, &c), TG_OK, "%s", tg_last_error());
    *step = c.step;
    *epoch = c.epoch;
    *rows = c.history_rows;
    tg_checkpoint_clear(&c);
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    cr_assert_not_null(buf);
    *n = fread(buf, 1, (size_t)len, f);
    buf[*n] = '\0';
    fclose(f);
    return buf;
}

/* Two checkpoints hold the same tensors (weights, optimizer state, RNGs,
 * history but its seconds) bit for bit. */
static void assert_same_tensors(const char *pa, const char *pb)
{
    tg_checkpoint x, y;
    tg_checkpoint_init(&x);
    tg_checkpoint_init(&y);
    cr_assert_eq(tg_checkpoint_read(pa, &x), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_checkpoint_read(pb, &y), TG_OK, "%s", tg_last_error());
    cr_assert_eq(x.step, y.step);
    cr_assert_eq(x.epoch, y.epoch);
    cr_assert_eq(x.best_epoch, y.best_epoch);
    cr_assert_eq(x.best_val, y.best_val);
    cr_assert_eq(x.history_rows, y.history_rows);
    for (int64_t i = 0; i < x.history_rows * TG_CKPT_HISTORY_COLS; i++)
        if (i % TG_CKPT_HISTORY_COLS != 5)
            cr_assert_eq(x.history[i], y.history[i], "history value %lld", (long long)i);
    cr_assert_eq(tg_st_count(x.file), tg_st_count(y.file));
    for (int i = 0; i < tg_st_count(x.file); i++) {
        const char *name = tg_st_name(x.file, i);
        const tg_tensor *t = tg_st_tensor(x.file, i), *u = tg_st_find(y.file, name);
        cr_assert_not_null(u, "%s", name);
        if (!strcmp(name, "tgraph.history")) continue;
        cr_assert_eq(t->numel, u->numel);
        cr_assert_arr_eq(t->data, u->data, (size_t)t->numel * tg_dtype_size(t->dtype), "%s", name);
    }
    tg_checkpoint_clear(&x);
    tg_checkpoint_clear(&y);
}

#define XF "--model", "crossformer", "--set", "seq_len=24", "--set", "pred_len=8", "--set", \
           "seg_len=4", "--set", "d_model=8", "--set", "n_heads=2", "--set", "d_ff=16",       \
           "--set", "dropout=0.3", "--split", "300,100,100", "--batch-size", "64", "--epochs", \
           "3", "--threads", "2", "--quiet"

Test(train_progress, max_steps_stops_there_and_resumes_bit_for_bit)
{
    /* 300 training rows, seq_len + pred_len 32: 269 windows, 4 steps an epoch */
    char ck[PATH_MAX], straight[512];
    snprintf(ck, sizeof ck, "%s", tt_path("a/checkpoint.safetensors"));
    cr_assert_eq(tool(TT_ARGS("train", XF, "--max-steps", "6", "--out", tt_path("a"))), 0, "%s",
                 err_text);
    cr_assert(strstr(out_text, "max steps: stopped after step 6 (epoch 2/3, 2 of 4 steps)"), "%s",
              out_text);
    cr_assert(strstr(out_text, "best epoch 1 "), "%s", out_text);
    assert_final_line();
    int64_t step, epoch, rows;
    ckpt_steps(ck, &step, &epoch, &rows);
    cr_assert_eq(step, 6);
    cr_assert_eq(epoch, 1);
    cr_assert_eq(rows, 1);
    size_t n;
    char *csv = read_all(tt_path("a/metrics.csv"), &n);
    cr_assert(strstr(csv, "\n1,4,") && !strstr(csv, "\n2,"), "%s", csv);
    free(csv);

    /* resumed with a larger --max-steps (mid-epoch again), then to the end */
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--max-steps", "10", "--quiet")), 0, "%s",
                 err_text);
    cr_assert(strstr(out_text, "in mid-epoch") && strstr(out_text, "stopped after step 10"), "%s",
              out_text);
    ckpt_steps(ck, &step, &epoch, &rows);
    cr_assert_eq(step, 10);
    cr_assert_eq(epoch, 2);
    cr_assert_eq(tool(TT_ARGS("train", "--resume", ck, "--quiet")), 0, "%s", err_text);
    assert_final_line();
    snprintf(straight, sizeof straight, "%s", strstr(out_text, "\ntest mse="));

    /* the straight run */
    cr_assert_eq(tool(TT_ARGS("train", XF, "--out", tt_path("b"))), 0, "%s", err_text);
    cr_assert_str_eq(strstr(out_text, "\ntest mse="), straight);
    char ckb[PATH_MAX], best_a[PATH_MAX];
    snprintf(ckb, sizeof ckb, "%s", tt_path("b/checkpoint.safetensors"));
    assert_same_tensors(ck, ckb);
    snprintf(best_a, sizeof best_a, "%s", tt_path("a/best.safetensors"));
    assert_same_tensors(best_a, tt_path("b/best.safetensors"));
    ckpt_steps(ckb, &step, &epoch, &rows);
    cr_assert_eq(step, 12);
    cr_assert_eq(rows, 3);

    /* at an epoch's end: exactly N steps, N in metrics.csv */
    cr_assert_eq(tool(TT_ARGS("train", XF, "--max-steps", "8", "--out", tt_path("c"))), 0, "%s",
                 err_text);
    csv = read_all(tt_path("c/metrics.csv"), &n);
    cr_assert(strstr(csv, "\n2,8,") && !strstr(csv, "\n3,"), "%s", csv);
    free(csv);
}

Test(train_progress, bad_values_name_the_flag)
{
    const char *flags[][2] = {{"--max-steps", "0"},    {"--max-steps", "-1"},
                              {"--max-steps", "abc"},  {"--progress-every", "-1"},
                              {"--progress-every", "x"}};
    for (int i = 0; i < 5; i++)
        tt_expect_cli_error(TT_ARGS("train", flags[i][0], flags[i][1], "--out", tt_path("x")),
                            flags[i][0], flags[i][1]);
}

/* gradcheck and bench: a line per element / call with --progress-every 0,
 * none with --quiet (and none by default on a check this short). */
Test(train_progress, gradcheck_and_bench_progress_lines)
{
    cr_assert_eq(tool(TT_ARGS("gradcheck", "topk", "k=3", "--shape", "4,7", "--progress-every",
                              "0")), 0, "%s", err_text);
    const char *p = err_text;
    for (int e = 1; e <= 28; e++) {
        char want[128];
        snprintf(want, sizeof want, "progress: gradcheck topk: tensor 1/1 input.input, element "
                 "%d of 28, ", e);
        cr_assert_eq(strncmp(p, want, strlen(want)), 0, "want '%s' at:\n%s", want, p);
        p = strchr(p, '\n');
        cr_assert_not_null(p);
        p++;
    }
    cr_assert_str_eq(p, "");
    cr_assert(strstr(out_text, "topk: 1 tensors, all pass"), "%s", out_text);
    cr_assert_eq(tool(TT_ARGS("gradcheck", "topk", "k=3", "--shape", "4,7", "--progress-every",
                              "0", "--quiet")), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");
    cr_assert_eq(tool(TT_ARGS("gradcheck", "topk", "k=3", "--shape", "4,7")), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");

    cr_assert_eq(tool(TT_ARGS("bench", "tsa", "--min-time", "0", "--warmup", "1", "--threads", "1",
                              "--progress-every", "0")), 0, "%s", err_text);
    cr_assert(strstr(err_text, "progress: bench tsa: training step, call 1 (warm-up), ") &&
              strstr(err_text, "progress: bench tsa: training step, call 2 (timed), ") &&
              strstr(err_text, "progress: bench tsa: inference, call 1 (warm-up), "), "%s",
              err_text);
    cr_assert(strstr(out_text, "\"train_step_ms\":"), "%s", out_text);
    cr_assert_eq(tool(TT_ARGS("bench", "tsa", "--min-time", "0", "--warmup", "1", "--threads", "1",
                              "--progress-every", "0", "-q")), 0, "%s", err_text);
    cr_assert_str_eq(err_text, "");
    tt_expect_cli_error(TT_ARGS("gradcheck", "tsa", "--progress-every", "-1"),
                        "--progress-every", "-1");
    tt_expect_cli_error(TT_ARGS("bench", "tsa", "--progress-every", "x"), "--progress-every", "x");
}

/* --out-dir is the spelling of a directory output (issue 19); --out stays an
 * alias: both write the run's files into the directory given. */
Test(train_progress, out_dir_and_its_alias_out)
{
    const char *dirs[2] = {tt_path("by-out-dir"), tt_path("by-out")};
    const char *flags[2] = {"--out-dir", "--out"};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--epochs", "1", "--quiet", flags[i],
                                  dirs[i])), 0, "%s: %s", flags[i], err_text);
        char path[256];
        snprintf(path, sizeof path, "%s/metrics.csv", dirs[i]);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "%s wrote no %s", flags[i], path);
        fclose(f);
        snprintf(path, sizeof path, "%s/best.safetensors", dirs[i]);
        f = fopen(path, "r");
        cr_assert_not_null(f, "%s wrote no %s", flags[i], path);
        fclose(f);
    }
    cr_assert_eq(tool(TT_ARGS("train", LINEAR, "--out-dir")), 2);
    cr_assert(strstr(err_text, "--out-dir"), "%s", err_text);
}
