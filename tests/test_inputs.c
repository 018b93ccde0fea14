/*
 * test_inputs.c - issue 17's inputs: every reader has a limit and a stream
 * that cannot be valid is refused at once (.npy, safetensors and CSV from
 * /dev/zero, FIFOs that say too much or stall after a NUL), the
 * TG_MAX_INPUT_BYTES override, the scaler's constant-column rule, CR-only
 * CSV files, decimal-only CSV numbers, 1-based column names, long values.
 *
 * Each test works in its own fresh directory (tt_tmpdir), removed when it ends.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "dataset.h"
#include "value.h"

/* ---- helpers ---- */

typedef struct {
    char dir[64];
    char files[8][160];
    int  n;
} tmpdir;

static void tmp_init(tmpdir *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->dir, sizeof t->dir, "%s", tt_tmpdir());
}

/* A path in the directory, removed by tmp_done. */
static const char *tmp_file(tmpdir *t, const char *name)
{
    cr_assert(t->n < 8);
    char path[sizeof t->files[0]];
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    memcpy(t->files[t->n], path, sizeof path);
    return t->files[t->n++];
}

static void tmp_done(tmpdir *t)
{
    for (int i = 0; i < t->n; i++) remove(t->files[i]);
    rmdir(t->dir);
}

static void write_bytes(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(b, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static long maxrss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static tg_tensor *ramp(int64_t n)
{
    tg_tensor *t = tg_tensor_new(TG_F32, 1, (int64_t[]){n});
    cr_assert_not_null(t);
    for (int64_t i = 0; i < n; i++) ((float *)t->data)[i] = (float)i * 0.5f;
    return t;
}

static void *read_all(const char *path, size_t *len)
{
    void *b;
    cr_assert_eq(tg_read_file(path, 0, &b, len), TG_OK, "%s", tg_last_error());
    return b;
}

/* A writer thread for a FIFO: writes bytes, then (hold) waits until the
 * test says the reader has returned before it closes its end, so a reader
 * that waits for the end of the stream would wait forever. */
typedef struct {
    const char     *fifo;
    const void     *bytes;
    size_t          len;
    bool            hold;
    pthread_mutex_t mu;
    pthread_cond_t  cv;
    bool            reader_done;
} fifo_writer;

static void *writer_main(void *arg)
{
    fifo_writer *w = arg;
    FILE *f = fopen(w->fifo, "wb");   /* blocks until the reader opens its end */
    if (!f) return NULL;
    setvbuf(f, NULL, _IONBF, 0);
    fwrite(w->bytes, 1, w->len, f);
    if (w->hold) {
        pthread_mutex_lock(&w->mu);
        while (!w->reader_done) pthread_cond_wait(&w->cv, &w->mu);
        pthread_mutex_unlock(&w->mu);
    }
    fclose(f);   /* a reader that stopped early makes this an EPIPE: ignored */
    return NULL;
}

typedef tg_status (*load_fn)(const char *path, void *out);

/* Feed bytes through a FIFO in t's directory to load(fifo, out). */
static tg_status through_fifo(tmpdir *t, const void *bytes, size_t len, bool hold, load_fn load,
                              void *out)
{
    const char *fifo = tmp_file(t, "fifo");
    remove(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo %s", fifo);
    fifo_writer w = {fifo, bytes, len, hold, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                     false};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, writer_main, &w), 0);
    tg_status st = load(fifo, out);
    pthread_mutex_lock(&w.mu);
    w.reader_done = true;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(th, NULL);
    remove(fifo);
    return st;
}

static tg_status load_npy(const char *p, void *out) { return tg_npy_load(p, out); }
static tg_status load_st(const char *p, void *out) { return tg_st_load(p, out); }
static tg_status load_csv(const char *p, void *out) { return tg_dataset_load_csv(p, out); }

/* ---- streams that cannot be valid fail at once ---- */

Test(inputs, dev_zero_fails_fast_with_no_big_allocation)
{
    tt_deadline(30);
    if (access("/dev/zero", R_OK) != 0) cr_skip_test("no /dev/zero");
    long before = maxrss_kb();
    tg_tensor *t = (tg_tensor *)1;
    cr_assert_eq(tg_npy_load("/dev/zero", &t), TG_ERR_FORMAT, "%s", tg_last_error());
    cr_assert_null(t);
    tt_assert_last_error("/dev/zero: not a .npy file");
    tt_assert_last_error("magic");

    tg_st_file *sf = (tg_st_file *)1;
    cr_assert_eq(tg_st_load("/dev/zero", &sf), TG_ERR_FORMAT, "%s", tg_last_error());
    cr_assert_null(sf);
    tt_assert_last_error("/dev/zero: header size is 0");

    tg_dataset *d = (tg_dataset *)1;
    cr_assert_eq(tg_dataset_load_csv("/dev/zero", &d), TG_ERR_FORMAT, "%s", tg_last_error());
    cr_assert_null(d);
    tt_assert_last_error("/dev/zero:1: binary data (a NUL byte at byte 1)");

    if (access("/dev/urandom", R_OK) == 0) {   /* 8 random bytes: a header size over 100 MB */
        cr_assert_eq(tg_st_load("/dev/urandom", &sf), TG_ERR_LIMIT, "%s", tg_last_error());
        tt_assert_last_error("HeaderTooLarge");
    }
    long grew = maxrss_kb() - before;
    cr_assert_lt(grew, 64 * 1024, "reading /dev/zero grew the process by %ld KB", grew);
}

Test(inputs, cli_op_in_dev_zero_fails_fast)
{
    tt_deadline(30);
    if (access("/dev/zero", R_OK) != 0) cr_skip_test("no /dev/zero");
    tt_expect_cli_error(TT_ARGS("op", "relu", "--in", "/dev/zero"), "/dev/zero",
                        "not a .npy file");
}

Test(inputs, npy_and_safetensors_through_a_fifo_load)
{
    tt_deadline(30);
    tmpdir td;
    tmp_init(&td);
    const char *path = tmp_file(&td, "a.npy");
    tg_tensor *t = ramp(1000), *u = NULL;
    cr_assert_eq(tg_npy_save(path, t), TG_OK, "%s", tg_last_error());
    size_t len;
    void *b = read_all(path, &len);
    cr_assert_eq(through_fifo(&td, b, len, false, load_npy, &u), TG_OK, "%s", tg_last_error());
    cr_assert_eq(u->numel, 1000);
    cr_assert_eq(memcmp(u->data, t->data, 4000), 0);
    tg_tensor_free(u);
    tg_free(b);

    const char *sp = tmp_file(&td, "a.safetensors");
    const char *names[2] = {"a", "b"};
    tg_tensor *t2 = ramp(7);
    const tg_tensor *ts[2] = {t, t2};
    cr_assert_eq(tg_st_save(sp, 2, names, ts, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
    b = read_all(sp, &len);
    tg_st_file *sf = NULL;
    cr_assert_eq(through_fifo(&td, b, len, false, load_st, &sf), TG_OK, "%s", tg_last_error());
    cr_assert_eq(tg_st_count(sf), 2);
    cr_assert_eq(memcmp(tg_st_find(sf, "a")->data, t->data, 4000), 0);
    cr_assert_eq(memcmp(tg_st_find(sf, "b")->data, t2->data, 28), 0);
    tg_st_free(sf);
    tg_free(b);
    tg_tensor_free(t);
    tg_tensor_free(t2);
    tmp_done(&td);
}

Test(inputs, a_fifo_longer_or_shorter_than_announced_is_an_error)
{
    tt_deadline(30);
    tmpdir td;
    tmp_init(&td);
    const char *path = tmp_file(&td, "a.npy");
    tg_tensor *t = ramp(16), *u = (tg_tensor *)1;
    cr_assert_eq(tg_npy_save(path, t), TG_OK, "%s", tg_last_error());
    size_t len;
    unsigned char *b = read_all(path, &len);
    unsigned char *more = malloc(len + 100);
    memcpy(more, b, len);
    memset(more + len, 0x41, 100);
    /* longer: the header announces 64 data bytes, the stream has 164 */
    cr_assert_eq(through_fifo(&td, more, len + 100, false, load_npy, &u), TG_ERR_FORMAT);
    cr_assert_null(u);
    tt_assert_last_error("the stream goes on after the 64 data bytes the header announces");
    /* ... and the same with a writer that never stops on its own */
    u = (tg_tensor *)1;
    cr_assert_eq(through_fifo(&td, more, len + 100, true, load_npy, &u), TG_ERR_FORMAT);
    cr_assert_null(u);
    /* shorter */
    u = (tg_tensor *)1;
    cr_assert_eq(through_fifo(&td, b, len - 5, false, load_npy, &u), TG_ERR_FORMAT);
    cr_assert_null(u);
    tt_assert_last_error("EOF: reading array data, expected 64 bytes got 59");
    /* the same for safetensors */
    const char *sp = tmp_file(&td, "a.safetensors");
    const char *names[1] = {"w"};
    const tg_tensor *ts[1] = {t};
    cr_assert_eq(tg_st_save(sp, 1, names, ts, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
    free(more);
    tg_free(b);
    b = read_all(sp, &len);
    more = malloc(len + 100);
    memcpy(more, b, len);
    memset(more + len, 0, 100);
    tg_st_file *sf = (tg_st_file *)1;
    cr_assert_eq(through_fifo(&td, more, len + 100, true, load_st, &sf), TG_ERR_FORMAT);
    cr_assert_null(sf);
    tt_assert_last_error("trailing bytes after the last tensor");
    sf = (tg_st_file *)1;
    cr_assert_neq(through_fifo(&td, b, len - 3, false, load_st, &sf), TG_OK);
    cr_assert_null(sf);
    tt_assert_last_error("the stream ended");
    free(more);
    tg_free(b);
    tg_tensor_free(t);
    tmp_done(&td);
}

Test(inputs, csv_fifo_with_a_nul_returns_before_the_writer_finishes)
{
    tt_deadline(20);
    tmpdir td;
    tmp_init(&td);
    static const char text[] = "date,a,b\r\n2016-07-01,1,2\r\n2016-07-02,3,\0 4\n";
    tg_dataset *d = (tg_dataset *)1;
    /* the writer keeps its end open until the reader has returned */
    cr_assert_eq(through_fifo(&td, text, sizeof text - 1, true, load_csv, &d), TG_ERR_FORMAT);
    cr_assert_null(d);
    tt_assert_last_error(":3: binary data (a NUL byte at byte 40) in a CSV file");
    tmp_done(&td);
}

/* ---- the limit and its override ---- */

Test(inputs, the_limit_refuses_a_valid_file_and_says_how_to_raise_it)
{
    tt_deadline(30);
    tmpdir td;
    tmp_init(&td);
    const char *np = tmp_file(&td, "a.npy"), *sp = tmp_file(&td, "a.safetensors"),
               *cp = tmp_file(&td, "a.csv");
    tg_tensor *t = ramp(1000);
    cr_assert_eq(tg_npy_save(np, t), TG_OK, "%s", tg_last_error());
    const char *names[1] = {"w"};
    const tg_tensor *ts[1] = {t};
    cr_assert_eq(tg_st_save(sp, 1, names, ts, 0, NULL, NULL), TG_OK, "%s", tg_last_error());
    FILE *f = fopen(cp, "w");
    cr_assert_not_null(f);
    fprintf(f, "x,y\n");
    for (int i = 0; i < 200; i++) fprintf(f, "%d,%d.25\n", i, i * 3);
    fclose(f);

    cr_assert_eq(setenv("TG_MAX_INPUT_BYTES", "1K", 1), 0);
    tg_tensor *u = (tg_tensor *)1;
    cr_assert_eq(tg_npy_load(np, &u), TG_ERR_LIMIT, "%s", tg_last_error());
    cr_assert_null(u);
    tt_assert_last_error(np);
    tt_assert_last_error("more than the input limit of 1024 bytes (set TG_MAX_INPUT_BYTES");
    tg_st_file *sf = (tg_st_file *)1;
    cr_assert_eq(tg_st_load(sp, &sf), TG_ERR_LIMIT, "%s", tg_last_error());
    cr_assert_null(sf);
    tt_assert_last_error("the input limit of 1024 bytes (set TG_MAX_INPUT_BYTES");
    tg_dataset *d = (tg_dataset *)1;
    cr_assert_eq(tg_dataset_load_csv(cp, &d), TG_ERR_LIMIT, "%s", tg_last_error());
    cr_assert_null(d);
    tt_assert_last_error("the input limit of 1024 bytes (set TG_MAX_INPUT_BYTES");
    void *b;
    size_t len;
    cr_assert_eq(tg_read_file(cp, 0, &b, &len), TG_ERR_LIMIT);
    tt_assert_last_error("TG_MAX_INPUT_BYTES");

    /* raised: all load */
    cr_assert_eq(setenv("TG_MAX_INPUT_BYTES", "1048576", 1), 0);
    cr_assert_eq(tg_npy_load(np, &u), TG_OK, "%s", tg_last_error());
    tg_tensor_free(u);
    cr_assert_eq(tg_st_load(sp, &sf), TG_OK, "%s", tg_last_error());
    tg_st_free(sf);
    cr_assert_eq(tg_dataset_load_csv(cp, &d), TG_OK, "%s", tg_last_error());
    cr_assert_eq(d->rows, 200);
    tg_dataset_free(d);

    /* a malformed value is an error naming the variable, not a silent default */
    cr_assert_eq(setenv("TG_MAX_INPUT_BYTES", "lots", 1), 0);
    cr_assert_eq(tg_npy_load(np, &u), TG_ERR_INVALID);
    tt_assert_last_error("TG_MAX_INPUT_BYTES='lots': expected a byte count");
    cr_assert_eq(setenv("TG_MAX_INPUT_BYTES", "0", 1), 0);
    cr_assert_eq(tg_dataset_load_csv(cp, &d), TG_ERR_INVALID);
    unsetenv("TG_MAX_INPUT_BYTES");
    tg_tensor_free(t);
    tmp_done(&td);
}

/* ---- the scaler ---- */

Test(inputs, a_constant_non_round_column_gets_scale_1)
{
    /* 0.1 in every row: the computed mean is not exactly 0.1, so a plain
     * two-pass std is ~1e-17 and the scaled values ~1e16 */
    char *text = malloc(64 * 1000 + 16);
    size_t k = (size_t)sprintf(text, "c,x,y\n");
    for (int i = 0; i < 1000; i++)
        k += (size_t)sprintf(text + k, "0.1,%d,%.17g\n", i % 7, 1e6 + (i % 2));
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_parse_csv(text, k, "t.csv", &d), TG_OK, "%s", tg_last_error());
    free(text);
    tg_scaler *sc = tg_scaler_fit(d, 0, 1000);
    cr_assert_not_null(sc, "%s", tg_last_error());
    cr_assert_eq(sc->std[0], 1.0, "std %.17g", sc->std[0]);
    cr_assert_eq(sc->constant[0], 1);
    cr_assert_eq(sc->constant[1], 0);
    /* a large level with a small real swing is not constant */
    cr_assert_eq(sc->constant[2], 0);
    cr_assert(fabs(sc->std[2] - 0.5) < 1e-9, "std %.17g", sc->std[2]);
    float *z = malloc(sizeof(float) * 3000);
    cr_assert_eq(tg_scaler_transform(sc, d, z), TG_OK);
    for (int i = 0; i < 3000; i++) cr_assert(isfinite(z[i]) && fabsf(z[i]) < 10, "z[%d] %g", i, z[i]);
    for (int i = 0; i < 1000; i++) cr_assert(fabsf(z[i * 3]) < 1e-6f);
    char name[128];
    cr_assert_str_eq(tg_dataset_column_name(d, 0, name, sizeof name), "t.csv: column 1 ('c')");
    free(z);
    tg_scaler_free(sc);
    tg_dataset_free(d);
}

/* ---- CSV syntax ---- */

Test(inputs, csv_cr_only_line_endings_load)
{
    tmpdir td;
    tmp_init(&td);
    const char *p = tmp_file(&td, "mac.csv");
    static const char text[] = "date,a,b\r2016-07-01,1,2\r2016-07-02,3,4.5\r\r";
    write_bytes(p, text, sizeof text - 1);
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(p, &d), TG_OK, "%s", tg_last_error());
    cr_assert_eq(d->rows, 2);
    cr_assert_eq(d->cols, 2);
    cr_assert_eq(d->data[3], 4.5);
    tg_dataset_free(d);
    /* lines are still counted right in messages */
    static const char bad[] = "a,b\r1,2\r3,x\r";
    d = (tg_dataset *)1;
    cr_assert_eq(tg_dataset_parse_csv(bad, sizeof bad - 1, "m.csv", &d), TG_ERR_FORMAT);
    tt_assert_last_error("m.csv:3: column 2 ('b'): 'x' is not a number");
    tmp_done(&td);
}

Test(inputs, csv_hex_and_trailing_text_rejected_with_line_and_column)
{
    tmpdir td;
    tmp_init(&td);
    const char *p = tmp_file(&td, "hex.csv");
    static const char text[] = "date,a,b\n2016-07-01,1,2\n2016-07-02,3,0x10\n";
    write_bytes(p, text, sizeof text - 1);
    tg_dataset *d = (tg_dataset *)1;
    cr_assert_eq(tg_dataset_load_csv(p, &d), TG_ERR_FORMAT);
    cr_assert_null(d);
    tt_assert_last_error(p);
    tt_assert_last_error(":3: column 3 ('b'): '0x10' is not a number: hexadecimal");
    static const char *const bad[] = {"1e5x", "0X1p3", "1.5.2", "1 2", ".", "1e", "--1", "0x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char csv[64];
        snprintf(csv, sizeof csv, "i,x\n1,%s\n", bad[i]);
        d = (tg_dataset *)1;
        cr_assert_eq(tg_dataset_parse_csv(csv, strlen(csv), "t.csv", &d), TG_ERR_FORMAT, "%s",
                     csv);
        cr_assert_null(d);
        tt_assert_last_error("t.csv:2: column 2 ('x'): '");
        tt_assert_last_error("is not a number");
    }
    /* nan/inf are numbers (as pandas reads them) but not finite ones */
    d = (tg_dataset *)1;
    cr_assert_eq(tg_dataset_parse_csv("x\nInfinity\n", 11, "t.csv", &d), TG_ERR_FORMAT);
    tt_assert_last_error("'Infinity' is not a finite number");
    /* what stays accepted */
    static const char good[] = "x,y,z\n+1.,.5,-2E+3\n";
    cr_assert_eq(tg_dataset_parse_csv(good, sizeof good - 1, "t.csv", &d), TG_OK, "%s",
                 tg_last_error());
    cr_assert_eq(d->data[0], 1.0);
    cr_assert_eq(d->data[1], 0.5);
    cr_assert_eq(d->data[2], -2000.0);
    tg_dataset_free(d);
    tmp_done(&td);
}

Test(inputs, messages_name_1_based_columns_with_header_and_file)
{
    static const char text[] = "date,a,b\n2016-07-01,1,2\n2016-07-02,3,\"4\n";
    tg_dataset *d = (tg_dataset *)1;
    cr_assert_eq(tg_dataset_parse_csv(text, sizeof text - 1, "t.csv", &d), TG_ERR_FORMAT);
    tt_assert_last_error("t.csv:3: column 3 ('b'): unterminated quoted cell");
    static const char ok[] = "date,a,b\n2016-07-01,1,2\n2016-07-02,3,4\n";
    cr_assert_eq(tg_dataset_parse_csv(ok, sizeof ok - 1, "t.csv", &d), TG_OK);
    char name[128];
    /* dataset column 0 is CSV column 2: the date column counts */
    cr_assert_str_eq(tg_dataset_column_name(d, 0, name, sizeof name), "t.csv: column 2 ('a')");
    cr_assert_str_eq(tg_dataset_column_name(d, 1, name, sizeof name), "t.csv: column 3 ('b')");
    cr_assert_null(tg_scaler_fit(d, 1, 1));
    tt_assert_last_error("scaler: t.csv: bad row range [1, 1)");
    cr_assert_null(tg_scaler_new(2, (double[]){0, 0}, (double[]){1, 0}));
    tt_assert_last_error("scaler: column 2 of 2 has mean 0 and std 0");
    tg_scaler *sc = tg_scaler_new(3, (double[]){0, 0, 0}, (double[]){1, 1, 1});
    float z[6];
    cr_assert_eq(tg_scaler_transform(sc, d, z), TG_ERR_SHAPE);
    tt_assert_last_error("scaler: fitted on 3 columns, t.csv has 2");
    tg_scaler_free(sc);
    tg_dataset_free(d);
}

/* ---- the KEY=VALUE language ---- */

Test(inputs, a_600_character_list_value_round_trips)
{
    char item[1024];
    size_t k = (size_t)snprintf(item, sizeof item, "dims=[");
    for (int i = 0; i < 120; i++) k += (size_t)snprintf(item + k, sizeof item - k, "%s%d",
                                                         i ? ", " : "", 1000 + i);
    snprintf(item + k, sizeof item - k, "]");
    cr_assert_gt(strlen(item), 600);
    tg_config *c = tg_config_new();
    cr_assert_eq(tg_config_set(c, item), TG_OK, "%s", tg_last_error());
    const tg_value *v = tg_config_get(c, "dims");
    cr_assert_eq(v->n, 120);
    /* the text of the value: its full length is reported, and a buffer of
     * that size holds text that reads back as the same list */
    char small[512];
    size_t need = tg_value_format(v, small, sizeof small);
    cr_assert_gt(need, 511);
    cr_assert_eq(strlen(small), 511);
    char *text = tg_value_text(v);
    cr_assert_not_null(text);
    cr_assert_eq(strlen(text), need);
    cr_assert_str_eq(text, item + 5);
    tg_value back;
    cr_assert_eq(tg_value_parse(text, &back), TG_OK, "%s", tg_last_error());
    cr_assert_eq(back.n, 120);
    cr_assert_eq(back.items[119].i, 1119);
    tg_value_free(&back);
    tg_value_text_free(text);
    /* a value moved to another config without text */
    tg_config *c2 = tg_config_new();
    tg_value copy;
    cr_assert_eq(tg_value_copy(&copy, v), TG_OK);
    cr_assert_eq(tg_config_put(c2, "dims", &copy), TG_OK);
    const tg_value *v2 = tg_config_get(c2, "dims");
    cr_assert_eq(v2->n, 120);
    cr_assert_eq(v2->items[7].i, 1007);
    tg_value nested;
    cr_assert_eq(tg_value_parse("[['a b', [1.5]], \"x\"]", &nested), TG_OK);
    cr_assert_eq(tg_value_copy(&copy, &nested), TG_OK);
    char t1[64], t2[64];
    tg_value_format(&nested, t1, sizeof t1);
    tg_value_format(&copy, t2, sizeof t2);
    cr_assert_str_eq(t1, t2);
    cr_assert_neq(copy.items[0].items[0].s, nested.items[0].items[0].s);
    tg_value_free(&copy);
    tg_value_free(&nested);
    tg_config_free(c2);
    tg_config_free(c);
}
