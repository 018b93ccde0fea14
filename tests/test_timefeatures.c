/*
 * test_timefeatures.c - TSL's timeF features (engine/train/timefeatures.h)
 * against tests/fixtures/timefeatures/gen.py: ETTh1's hourly dates (the first
 * two days, the turn of the year, every 97th row, the last rows) and
 * calendar corners (leap days, ISO weeks 52, 53 and 1, the last second of a
 * year) at every frequency TSL maps, bit for bit; the frequency strings as
 * pandas reads them; bad frequencies, rows, buffers and a series without dates.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "timefeatures.h"

#define DIR TT_FIXTURES "/timefeatures/"

static tg_dataset *load(const char *file)
{
    tg_dataset *d = NULL;
    char path[256];
    snprintf(path, sizeof path, "%s%s", DIR, file);
    cr_assert_eq(tg_dataset_load_csv(path, &d), TG_OK, "%s", tg_last_error());
    cr_assert(d->time);
    return d;
}

/* the features of d's rows at freq, exactly those of fixture `want` */
static void expect_features(const tg_dataset *d, const char *freq, const char *want)
{
    tg_tensor *w = tt_load("timefeatures", want);
    tg_time_feature f[TG_TIME_FEATURES_MAX];
    int n = -1;
    cr_assert_eq(tg_time_features_for(freq, f, &n), TG_OK, "%s: %s", freq, tg_last_error());
    cr_assert(w->rank == 2 && w->shape[0] == d->rows && w->shape[1] == n, "%s: %d features",
              freq, n);
    float *got = calloc((size_t)(d->rows * n), sizeof *got);
    cr_assert_eq(tg_dataset_time_features(d, freq, 0, d->rows, got, (size_t)(d->rows * n)),
                 TG_OK, "%s", tg_last_error());
    const float *e = w->data;
    for (int64_t i = 0; i < d->rows * n; i++)
        cr_assert_eq(got[i], e[i], "%s: row %lld, %s: %.9g, expected %.9g", freq,
                     (long long)(i / n), tg_time_feature_name(f[i % n]), got[i], e[i]);
    free(got);
    tg_tensor_free(w);
}

Test(timefeatures, etth1_hourly_as_tsl)
{
    tg_dataset *d = load("etth1.csv");
    cr_assert_eq(d->rows, 329);
    expect_features(d, "h", "etth1_h.npy");
    /* the first date, 2016-07-01 00:00 (a Friday, day 183 of a leap year), by hand */
    float row[4];
    cr_assert_eq(tg_dataset_time_features(d, "h", 0, 1, row, 4), TG_OK, "%s", tg_last_error());
    cr_assert_eq(row[0], (float)(0 / 23.0 - 0.5));
    cr_assert_eq(row[1], (float)(4 / 6.0 - 0.5));
    cr_assert_eq(row[2], (float)(0 / 30.0 - 0.5));
    cr_assert_eq(row[3], (float)(182 / 365.0 - 0.5));
    tg_dataset_free(d);
}

Test(timefeatures, every_frequency_on_calendar_corners)
{
    tg_dataset *d = load("dates.csv");
    const char *freqs[][2] = {
        {"s", "dates_s.npy"}, {"S", "dates_s.npy"}, {"10s", "dates_s.npy"},
        {"t", "dates_t.npy"}, {"T", "dates_t.npy"}, {"min", "dates_t.npy"},
        {"15min", "dates_t.npy"}, {"h", "dates_h.npy"}, {"H", "dates_h.npy"},
        {"4h", "dates_h.npy"}, {"d", "dates_d.npy"}, {"D", "dates_d.npy"},
        {"b", "dates_b.npy"}, {"w", "dates_w.npy"}, {"W-SUN", "dates_w.npy"},
        {"m", "dates_m.npy"}, {"M", "dates_m.npy"}, {"q", "dates_q.npy"},
        {"Q-DEC", "dates_q.npy"},
    };
    for (size_t i = 0; i < sizeof freqs / sizeof *freqs; i++)
        expect_features(d, freqs[i][0], freqs[i][1]);
    tg_dataset_free(d);
}

Test(timefeatures, frequency_lists)
{
    tg_time_feature f[TG_TIME_FEATURES_MAX];
    int n = -1;
    cr_assert_eq(tg_time_features_for("h", f, &n), TG_OK);
    cr_assert(n == 4 && f[0] == TG_TF_HOUR_OF_DAY && f[1] == TG_TF_DAY_OF_WEEK &&
              f[2] == TG_TF_DAY_OF_MONTH && f[3] == TG_TF_DAY_OF_YEAR);
    cr_assert_eq(tg_time_features_for("s", f, &n), TG_OK);
    cr_assert(n == 6 && f[0] == TG_TF_SECOND_OF_MINUTE);
    cr_assert(!tg_time_features_for("w", f, &n) && n == 2 && f[1] == TG_TF_WEEK_OF_YEAR);
    const char *yearly[] = {"y", "Y", "a", "A", "A-DEC", "2y"};
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(tg_time_features_for(yearly[i], f, &n), TG_OK, "%s", yearly[i]);
        cr_assert_eq(n, 0, "%s: yearly data has no time features", yearly[i]);
    }
    cr_assert_str_eq(tg_time_feature_name(TG_TF_WEEK_OF_YEAR), "WeekOfYear");
    cr_assert_str_eq(tg_time_feature_name(TG_TF_COUNT), "?");
}

Test(timefeatures, bad_frequencies)
{
    tg_time_feature f[TG_TIME_FEATURES_MAX];
    int n;
    const char *bad[] = {"", "x", "5", "hh", "MS", "ms", "MIN", "W-XYZ", "Q-SUN", "-1h", "h "};
    for (int i = 0; i < 11; i++) {
        cr_assert_neq(tg_time_features_for(bad[i], f, &n), TG_OK, "'%s' accepted", bad[i]);
        char want[64];
        snprintf(want, sizeof want, "unsupported frequency '%s'", bad[i]);
        tt_assert_last_error(want);
    }
    tt_assert_last_error("H hourly, T/min minutely");
}

Test(timefeatures, bad_rows_buffers_and_no_dates)
{
    tg_dataset *d = load("dates.csv");
    float out[200];
    cr_assert_neq(tg_dataset_time_features(d, "h", 0, 21, out, 200), TG_OK);
    tt_assert_last_error("rows [0, 21) are outside the dataset's 20");
    cr_assert_neq(tg_dataset_time_features(d, "h", 3, 2, out, 200), TG_OK);
    tt_assert_last_error("rows [3, 2)");
    cr_assert_neq(tg_dataset_time_features(d, "h", 0, 20, out, 79), TG_OK);
    tt_assert_last_error("20 rows of 4 features need 80 floats, the buffer holds 79");
    cr_assert_eq(tg_dataset_time_features(d, "h", 5, 5, out, 0), TG_OK, "no rows: nothing to do");
    cr_assert_neq(tg_dataset_time_features(d, "fortnightly", 0, 1, out, 200), TG_OK);
    tt_assert_last_error("unsupported frequency 'fortnightly'");
    tg_dataset_free(d);
    cr_assert_eq(tg_dataset_synthetic(50, 2, 1, &d), TG_OK);
    cr_assert_neq(tg_dataset_time_features(d, "h", 0, 1, out, 200), TG_OK);
    tt_assert_last_error("has no date column");
    tg_dataset_free(d);
}
