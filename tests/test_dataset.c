/*
 * test_dataset.c - the CSV reader (good files and every error case with its
 * message), splits in rows and ratios, the ETT protocol borders, the
 * StandardScaler against numpy, windows and batches, shuffling, the
 * synthetic series; dates (the forms read, the frequency inferred, bad dates
 * named by line and value).
 */
#include <math.h>
#include <string.h>

#include "testutil.h"
#include "dataset.h"

#define FX TT_FIXTURES "/train/"

static tg_dataset *parse(const char *text)
{
    tg_dataset *d = NULL;
    tg_status st = tg_dataset_parse_csv(text, strlen(text), "t.csv", &d);
    cr_assert_eq(st, TG_OK, "%s", tg_last_error());
    return d;
}

static void parse_fails(const char *text, const char *needle)
{
    tg_dataset *d = (tg_dataset *)1;
    cr_assert_eq(tg_dataset_parse_csv(text, strlen(text), "t.csv", &d), TG_ERR_FORMAT, "%s",
                 text);
    cr_assert_null(d);
    tt_assert_last_error(needle);
}

Test(dataset, csv_ett_layout)
{
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(FX "tiny.csv", &d), TG_OK, "%s", tg_last_error());
    cr_assert_eq(d->rows, 40);
    cr_assert_eq(d->cols, 3);   /* the date column is skipped */
    cr_assert_str_eq(d->names[0], "HUFL");
    cr_assert_str_eq(d->names[2], "OT");
    cr_assert_eq(d->data[0], 5.0);
    cr_assert_eq(d->data[1 * 3 + 2], 29.75);
    cr_assert_eq(d->data[39 * 3 + 1], 5.9);
    cr_assert_str_eq(d->source, FX "tiny.csv");
    tg_dataset_free(d);
}

Test(dataset, csv_numeric_first_column_kept_crlf_quotes_blank_lines)
{
    tg_dataset *d = parse("\xEF\xBB\xBF\"a\", b ,\"c,d\"\r\n1,2,3\r\n\r\n 4 , -5e-1,\"6\"\r\n");
    cr_assert_eq(d->cols, 3);
    cr_assert_eq(d->rows, 2);
    cr_assert_str_eq(d->names[0], "a");
    cr_assert_str_eq(d->names[1], "b");
    cr_assert_str_eq(d->names[2], "c,d");
    cr_assert_eq(d->data[3], 4.0);
    cr_assert_eq(d->data[4], -0.5);
    cr_assert_eq(d->data[5], 6.0);
    tg_dataset_free(d);
}

Test(dataset, csv_ragged_row)
{
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(FX "ragged.csv", &d), TG_ERR_FORMAT);
    tt_assert_last_error(FX "ragged.csv:3: 3 cells, expected 4 as in the header (a ragged row)");
    parse_fails("a,b\n1,2\n3,4,5\n", "t.csv:3: 3 cells, expected 2");
}

Test(dataset, csv_non_numeric_cell)
{
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(FX "nonnumeric.csv", &d), TG_ERR_FORMAT);
    tt_assert_last_error(FX "nonnumeric.csv:4: column 3 ('HULL'): 'abc' is not a number");
    parse_fails("x,y\n1,2\n3,4x\n", "t.csv:3: column 2 ('y'): '4x' is not a number");
    /* a date in a later row where the first row was numeric */
    parse_fails("x,y\n1,2\n2016-07-01,4\n", "t.csv:3: column 1 ('x'): '2016-07-01' is not a number");
}

Test(dataset, csv_empty_file)
{
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(FX "empty.csv", &d), TG_ERR_FORMAT);
    tt_assert_last_error(FX "empty.csv: empty file (expected a header row and data rows)");
    parse_fails("\n\r\n  \n", "t.csv: empty file");
}

Test(dataset, csv_header_only)
{
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(FX "header_only.csv", &d), TG_ERR_FORMAT);
    tt_assert_last_error(FX "header_only.csv: no data rows after the header");
}

Test(dataset, csv_empty_and_non_finite_cells)
{
    parse_fails("d,x,y\nmon,1,\n", "t.csv:2: column 3 ('y'): empty cell");
    parse_fails("d,x,y\nmon,1,nan\n", "t.csv:2: column 3 ('y'): 'nan' is not a finite number");
    parse_fails("x\n-inf\n", "t.csv:2: column 1 ('x'): '-inf' is not a finite number");
    parse_fails("x,y\n1,\"2\n", "t.csv:2: column 2 ('y'): unterminated quoted cell");
    parse_fails("d\nmon\n", "t.csv:2: no numeric columns");
}

Test(dataset, csv_missing_file)
{
    tg_dataset *d = NULL;
    cr_assert_eq(tg_dataset_load_csv(FX "no_such.csv", &d), TG_ERR_IO);
    tt_assert_last_error("no_such.csv: cannot open");
}

Test(dataset, split_parse)
{
    tg_split_spec s;
    char buf[64];
    cr_assert_eq(tg_split_parse("8640,2880,2880", &s), TG_OK);
    cr_assert(!s.ratios);
    cr_assert_eq(s.n[0], 8640);
    cr_assert_eq(s.n[2], 2880);
    tg_split_format(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "8640,2880,2880");
    cr_assert_eq(tg_split_parse("0.7,0.1,0.2", &s), TG_OK);
    cr_assert(s.ratios);
    cr_assert_float_eq(s.r[1], 0.1, 1e-15);
    tg_split_format(&s, buf, sizeof buf);
    cr_assert_str_eq(buf, "0.7,0.1,0.2");
    const char *bad[] = {"", "1,2", "1,2,3,4", "a,b,c", "-1,2,3", "1,,3", "0.5,0.6,1.5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(tg_split_parse(bad[i], &s), TG_ERR_INVALID, "'%s'", bad[i]);
        tt_assert_last_error("expected three row counts");
    }
    cr_assert_eq(tg_split_parse("0.7,0.2,0.2", &s), TG_ERR_INVALID);
    tt_assert_last_error("the ratios add up to 1.1, more than 1");
}

Test(dataset, split_ett_protocol)
{
    /* Informer / Crossformer Dataset_ETT_hour, seq_len 168, pred_len 24 */
    tg_split_spec s;
    tg_split_rows r;
    tg_split_parse("8640,2880,2880", &s);
    cr_assert_eq(tg_split_resolve(&s, 17420, 168, 24, &r), TG_OK, "%s", tg_last_error());
    cr_assert_eq(r.train_begin, 0);
    cr_assert_eq(r.train_end, 8640);
    cr_assert_eq(r.val_begin, 8640 - 168);
    cr_assert_eq(r.val_end, 11520);
    cr_assert_eq(r.test_begin, 11520 - 168);
    cr_assert_eq(r.test_end, 14400);
    /* len(dataset) = end - begin - seq_len - pred_len + 1 */
    cr_assert_eq(r.n_train, 8640 - 192 + 1);
    cr_assert_eq(r.n_val, 2880 + 168 - 192 + 1);
    cr_assert_eq(r.n_test, 2857);
}

Test(dataset, split_ratios_like_dataset_custom)
{
    tg_split_spec s;
    tg_split_rows r;
    tg_split_parse("0.7,0.1,0.2", &s);
    cr_assert_eq(tg_split_resolve(&s, 1001, 10, 5, &r), TG_OK, "%s", tg_last_error());
    /* num_train = int(1001*0.7) = 700, num_test = int(1001*0.2) = 200, vali = rest = 101 */
    cr_assert_eq(r.train_end, 700);
    cr_assert_eq(r.val_end, 801);
    cr_assert_eq(r.test_begin, 801 - 10);
    cr_assert_eq(r.test_end, 1001);
}

Test(dataset, split_too_few_rows_for_one_window)
{
    tg_split_spec s;
    tg_split_rows r;
    tg_split_parse("100,100,50", &s);
    cr_assert_eq(tg_split_resolve(&s, 250, 96, 24, &r), TG_ERR_INVALID);
    tt_assert_last_error("too few rows for one window: the train split has 100 rows; one window "
                         "needs seq_len + pred_len = 120 rows (seq_len 96, pred_len 24)");
    tg_split_parse("200,100,10", &s);
    cr_assert_eq(tg_split_resolve(&s, 400, 96, 24, &r), TG_ERR_INVALID);
    tt_assert_last_error("the test split has 10 rows");
    tg_split_parse("200,100,100", &s);
    cr_assert_eq(tg_split_resolve(&s, 399, 96, 24, &r), TG_ERR_INVALID);
    tt_assert_last_error("split 200,100,100 needs 400 rows, the data has 399");
    /* the whole tiny fixture is too short for seq_len 96 */
    tg_dataset *d = NULL;
    tg_dataset_load_csv(FX "tiny.csv", &d);
    tg_split_parse("0.7,0.1,0.2", &s);
    cr_assert_eq(tg_split_resolve(&s, d->rows, 96, 24, &r), TG_ERR_INVALID);
    tt_assert_last_error("too few rows for one window");
    tg_dataset_free(d);
}

Test(dataset, scaler_population_std_like_sklearn)
{
    tg_dataset *d = NULL;
    tg_dataset_load_csv(FX "tiny.csv", &d);
    tg_scaler *sc = tg_scaler_fit(d, 0, 24);
    cr_assert_not_null(sc);
    /* numpy: a[:24].mean(0), a[:24].std(0) (ddof 0) */
    const double mean[3] = {5.121166666666666, 3.15, 27.125};
    const double sd[3] = {0.6880673820362524, 0.6922186552431729, 1.7305466381079322};
    for (int c = 0; c < 3; c++) {
        cr_assert(fabs(sc->mean[c] - mean[c]) < 1e-13, "mean %d: %.17g", c, sc->mean[c]);
        cr_assert(fabs(sc->std[c] - sd[c]) < 1e-13, "std %d: %.17g", c, sc->std[c]);
    }
    float *z = malloc(sizeof(float) * 120);
    cr_assert_eq(tg_scaler_transform(sc, d, z), TG_OK);
    const float want[3] = {-0.96671736f, 2.672566f, -2.672566f};   /* row 30 */
    for (int c = 0; c < 3; c++) cr_assert(fabsf(z[30 * 3 + c] - want[c]) < 1e-6f);
    free(z);
    tg_scaler_free(sc);
    /* a constant column keeps scale 1 */
    tg_dataset *k = parse("x,y\n1,3\n2,3\n");
    sc = tg_scaler_fit(k, 0, 2);
    cr_assert_eq(sc->std[1], 1.0);
    cr_assert_eq(sc->std[0], 0.5);
    tg_scaler_free(sc);
    cr_assert_null(tg_scaler_fit(k, 1, 1));
    tt_assert_last_error("bad row range");
    cr_assert_null(tg_scaler_new(1, (double[]){0}, (double[]){0}));
    tt_assert_last_error("std must be finite and > 0");
    tg_dataset_free(k);
    tg_dataset_free(d);
}

Test(dataset, windows_and_partial_batch)
{
    /* z[r, c] = 10 r + c */
    float z[20 * 2];
    for (int r = 0; r < 20; r++)
        for (int c = 0; c < 2; c++) z[r * 2 + c] = (float)(10 * r + c);
    tg_windows w = tg_windows_make(z, 2, 5, 20, 4, 3);   /* rows 5..19: 15 - 7 + 1 windows */
    cr_assert_eq(w.count, 9);
    tg_tensor *x = tg_tensor_new(TG_F32, 3, (int64_t[]){3, 4, 2});
    tg_tensor *y = tg_tensor_new(TG_F64, 3, (int64_t[]){3, 3, 2});
    int64_t idx[2] = {8, 0};
    cr_assert_eq(tg_windows_fill(&w, idx, 2, x, y), TG_OK, "%s", tg_last_error());
    const float *xd = x->data;
    const double *yd = y->data;
    cr_assert_eq(xd[0], 130.0f);                 /* window 8 starts at row 13 */
    cr_assert_eq(xd[3 * 2 + 1], 161.0f);         /* its last input row 16, column 1 */
    cr_assert_eq(yd[0], 170.0);                  /* the target follows straight on */
    cr_assert_eq(yd[2 * 2 + 1], 191.0);          /* ... to the segment's last row */
    cr_assert_eq(xd[8], 50.0f);                  /* window 0 at row 5 */
    cr_assert_eq(xd[16], 50.0f);                 /* the short batch repeats its last window */
    cr_assert_eq(yd[12], 90.0);
    idx[1] = 9;
    cr_assert_eq(tg_windows_fill(&w, idx, 2, x, y), TG_ERR_INVALID);
    tt_assert_last_error("index 9 out of range [0, 9)");
    tg_tensor *bad = tg_tensor_new(TG_F32, 3, (int64_t[]){3, 5, 2});
    cr_assert_eq(tg_windows_fill(&w, idx, 1, bad, NULL), TG_ERR_SHAPE);
    tt_assert_last_error("x is float32 [3, 5, 2], expected a float [B >= 1, 4, 2]");
    cr_assert_eq(tg_windows_fill(&w, idx, 4, x, NULL), TG_ERR_SHAPE);
    cr_assert_eq(tg_windows_make(z, 2, 0, 6, 4, 3).count, 0);
    tg_tensor_free(bad);
    tg_tensor_free(x);
    tg_tensor_free(y);
}

Test(dataset, shuffle_is_a_seeded_permutation)
{
    int64_t a[100], b[100];
    for (int i = 0; i < 100; i++) a[i] = b[i] = i;
    tg_rng r1, r2;
    tg_rng_seed(&r1, 7);
    tg_rng_seed(&r2, 7);
    tg_shuffle_i64(a, 100, &r1);
    tg_shuffle_i64(b, 100, &r2);
    cr_assert_arr_eq(a, b, sizeof a);
    int seen[100] = {0}, moved = 0;
    for (int i = 0; i < 100; i++) {
        seen[a[i]]++;
        moved += a[i] != i;
    }
    for (int i = 0; i < 100; i++) cr_assert_eq(seen[i], 1);
    cr_assert_gt(moved, 80);
    tg_shuffle_i64(b, 100, &r2);   /* the next epoch's order differs */
    cr_assert(memcmp(a, b, sizeof a) != 0);
}

Test(dataset, synthetic_is_deterministic_and_seasonal)
{
    tg_dataset *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(tg_dataset_synthetic(2000, 7, 0, &a), TG_OK);
    cr_assert_eq(tg_dataset_synthetic(2000, 7, 0, &b), TG_OK);
    cr_assert_eq(tg_dataset_synthetic(2000, 7, 1, &c), TG_OK);
    cr_assert_arr_eq(a->data, b->data, sizeof(double) * 2000 * 7);
    cr_assert(memcmp(a->data, c->data, sizeof(double) * 2000 * 7) != 0);
    cr_assert_str_eq(a->names[6], "OT");
    for (int64_t i = 0; i < 2000 * 7; i++) cr_assert(isfinite(a->data[i]));
    /* every channel has a strong daily cycle: lag-24 autocorrelation */
    for (int ch = 0; ch < 6; ch++) {
        double m = 0, v = 0, cov = 0;
        for (int t = 0; t < 2000; t++) m += a->data[t * 7 + ch] / 2000;
        for (int t = 0; t < 2000; t++) v += pow(a->data[t * 7 + ch] - m, 2);
        for (int t = 24; t < 2000; t++)
            cov += (a->data[t * 7 + ch] - m) * (a->data[(t - 24) * 7 + ch] - m);
        cr_assert_gt(cov / v, 0.5, "channel %d lag-24 autocorrelation %g", ch, cov / v);
    }
    /* a prefix does not depend on the length asked for */
    tg_dataset *short_ = NULL;
    tg_dataset_synthetic(500, 7, 0, &short_);
    cr_assert_arr_eq(short_->data, a->data, sizeof(double) * 500 * 7);
    tg_dataset_free(short_);
    cr_assert_eq(tg_dataset_synthetic(10, 0, 0, &short_), TG_ERR_INVALID);
    tg_dataset_free(a);
    tg_dataset_free(b);
    tg_dataset_free(c);
}

/* ---- dates ---- */

Test(dates, every_form_parses_and_formats_back)
{
    static const char *const forms[] = {"2016-07-01", "2016-07-01 13:05", "2016-07-01 13:05:09",
                                        "2016-07-01T13:05", "2016-07-01T13:05:09"};
    static const int64_t want[] = {1467331200, 1467378300, 1467378309, 1467378300, 1467378309};
    for (int i = 0; i < 5; i++) {
        int64_t t;
        tg_date_style st;
        cr_assert_eq(tg_date_parse(forms[i], &t, &st), TG_OK, "%s: %s", forms[i],
                     tg_last_error());
        cr_assert_eq(t, want[i], "%s", forms[i]);
        cr_assert_eq((int)st, i);
        char buf[32];
        cr_assert_str_eq(tg_date_format(t, st, buf, sizeof buf), forms[i]);
    }
    int64_t t;
    cr_assert_eq(tg_date_parse("2016-02-29 23:00:00", &t, NULL), TG_OK);   /* leap day */
    char buf[32];
    cr_assert_str_eq(tg_date_format(t + 3600, TG_DATE_YMD_HMS, buf, sizeof buf),
                     "2016-03-01 00:00:00");
    cr_assert_eq(tg_date_parse("1969-12-31", &t, NULL), TG_OK);
    cr_assert_eq(t, -86400);
    cr_assert_str_eq(tg_date_format(t + 60, TG_DATE_YMD, buf, sizeof buf), "1969-12-31 00:01:00");
    const char *bad[] = {"2015-02-29", "2016-13-01", "2016-07-01 24:00:00", "2016-07-01 10:60",
                         "2016-07-01 10", "2016-7-1", "2016-07-01x", "2016-07-01 10:00:00Z", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(tg_date_parse(bad[i], &t, NULL), TG_ERR_FORMAT, "%s", bad[i]);
        tt_assert_last_error("is not a date");
    }
    cr_assert_str_eq(tg_date_freq_name(3600, buf, sizeof buf), "1h");
    cr_assert_str_eq(tg_date_freq_name(900, buf, sizeof buf), "15min");
    cr_assert_str_eq(tg_date_freq_name(86400, buf, sizeof buf), "1d");
    cr_assert_str_eq(tg_date_freq_name(90, buf, sizeof buf), "90s");
}

Test(dates, csv_date_column_and_frequency)
{
    /* hourly with one 2-hour gap: the most common step wins */
    tg_dataset *d = parse("date,a,OT\n2016-07-01 00:00:00,1,2\n2016-07-01 01:00:00,3,4\n"
                          "2016-07-01 03:00:00,5,6\n2016-07-01 04:00:00,7,8\n");
    cr_assert_eq(d->cols, 2);
    cr_assert_str_eq(d->names[0], "a");
    cr_assert_str_eq(d->date_name, "date");
    cr_assert_not_null(d->time);
    cr_assert_eq(d->time[0], 1467331200);
    cr_assert_eq(d->time[3], 1467331200 + 4 * 3600);
    cr_assert_eq(d->freq, 3600);
    cr_assert_eq(d->date_style, TG_DATE_YMD_HMS);
    tg_dataset_free(d);
    /* ETTm1: 15 minutes, ISO form */
    d = parse("when,x\n2016-07-01T00:00,1\n2016-07-01T00:15,2\n2016-07-01T00:30,3\n");
    cr_assert_eq(d->freq, 900);
    cr_assert_eq(d->date_style, TG_DATE_ISO_HM);
    cr_assert_str_eq(d->date_name, "when");
    tg_dataset_free(d);
    /* daily, date only */
    d = parse("day,x\n2020-01-30,1\n2020-01-31,2\n2020-02-01,3\n");
    cr_assert_eq(d->freq, 86400);
    tg_dataset_free(d);
    /* no date column; a first column of names (not dates) is skipped, no times */
    d = parse("a,b\n1,2\n3,4\n");
    cr_assert_null(d->time);
    cr_assert_null(d->date_name);
    cr_assert_eq(d->freq, 0);
    tg_dataset_free(d);
    d = parse("id,b\nx1,2\nx2,4\n");
    cr_assert_null(d->time);
    cr_assert_eq(d->cols, 1);
    tg_dataset_free(d);
    /* each dated row's file line, blank lines counted */
    d = parse("date,x\n2020-01-30,1\n\n2020-01-31,2\n");
    cr_assert_eq(d->line[0], 2);
    cr_assert_eq(d->line[1], 4);
    tg_dataset_free(d);
}

Test(dates, a_date_column_in_another_form_is_an_error_not_dropped)
{
    parse_fails("date,a\n07/01/2016 00:00,1\n07/01/2016 01:00,2\n",
                "t.csv:2: column 1 ('date'): '07/01/2016 00:00' is not a date");
    parse_fails("when,a\n2016/07/01,1\n2016/07/02,2\n",
                "t.csv:2: column 1 ('when'): '2016/07/01' is not a date");
    parse_fails("day,a\n1.7.2016,1\n2.7.2016,2\n",
                "t.csv:2: column 1 ('day'): '1.7.2016' is not a date");
    parse_fails("Timestamp,a\nmonday,1\ntuesday,2\n",
                "t.csv:2: column 1 ('Timestamp'): 'monday' is not a date");
    /* names and ids are still skipped */
    tg_dataset *d = parse("name,b\nx1,2\nx2,4\n");
    cr_assert_null(d->time);
    cr_assert_eq(d->cols, 1);
    tg_dataset_free(d);
}

Test(dates, bad_dates_are_named_by_line_and_value)
{
    parse_fails("date,a\n2016-07-01 00:00:00,1\n2016-07-01 25:00:00,2\n",
                "t.csv:3: column 1 ('date'): '2016-07-01 25:00:00' is not a date");
    parse_fails("date,a\n2016-07-01 00:00:00,1\n2016-07-01 01:00:00,2\nsoon,3\n",
                "t.csv:4: column 1 ('date'): 'soon' is not a date");
    parse_fails("date,a\n2016-07-01 00:00:00,1\n2016-07-01 01:00,2\n",
                "t.csv:3: column 1 ('date'): '2016-07-01 01:00' is not written like the first "
                "row's date (2016-07-01 00:00:00)");
    /* out of order: read (predict refuses such rows), the frequency from forward steps */
    tg_dataset *d = parse("date,a\n2016-07-01 01:00:00,1\n2016-07-01 00:00:00,2\n"
                          "2016-07-01 00:30:00,3\n");
    cr_assert_eq(d->time[1], 1467331200);
    cr_assert_eq(d->freq, 1800);
    tg_dataset_free(d);
}

Test(dates, keep_column_for_univariate_data)
{
    tg_dataset *d = parse("date,a,b,OT\n2016-07-01,1,2,3\n2016-07-02,4,5,6\n");
    cr_assert_eq(tg_dataset_find_column(d, "OT"), 2);
    cr_assert_eq(tg_dataset_find_column(d, "zz"), -1);
    cr_assert_eq(tg_dataset_keep_column(d, 2), TG_OK);
    cr_assert_eq(d->cols, 1);
    cr_assert_str_eq(d->names[0], "OT");
    cr_assert_eq(d->data[0], 3.0);
    cr_assert_eq(d->data[1], 6.0);
    char buf[96];
    cr_assert_str_eq(tg_dataset_column_name(d, 0, buf, sizeof buf), "t.csv: column 4 ('OT')");
    cr_assert_eq(tg_dataset_keep_column(d, 1), TG_ERR_INVALID);
    tg_dataset_free(d);
}

/* A first cell shorter than "yyyy-" is probed for a date without reading past
 * its end (found by fuzz_csv under ASan; make asan runs this too). */
Test(dataset, short_first_cells_are_probed_within_their_bytes)
{
    tg_dataset *d = parse("id,x\nab,1\ncd,2\n");
    cr_assert_eq(d->cols, 1);
    tg_dataset_free(d);
    tg_dataset *e = (tg_dataset *)1;
    tg_status st = tg_dataset_parse_csv(",\n,", 3, "t.csv", &e);
    cr_assert_neq(st, TG_OK);
    cr_assert_null(e);
}
