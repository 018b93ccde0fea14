/*
 * timefeatures.c - TSL's timeF features of a dataset's dates (see
 * timefeatures.h): the frequency's feature list, each feature's formula, and
 * the [rows, features] array.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "timefeatures.h"

/* ---- the frequency: pandas' to_offset, as far as TSL's table reaches ---- */

static const tg_time_feature F_YEAR[1] = {TG_TF_COUNT};   /* none (a C array needs one) */
static const tg_time_feature F_MONTH[] = {TG_TF_MONTH_OF_YEAR};
static const tg_time_feature F_WEEK[] = {TG_TF_DAY_OF_MONTH, TG_TF_WEEK_OF_YEAR};
static const tg_time_feature F_DAY[] = {TG_TF_DAY_OF_WEEK, TG_TF_DAY_OF_MONTH, TG_TF_DAY_OF_YEAR};
static const tg_time_feature F_HOUR[] = {TG_TF_HOUR_OF_DAY, TG_TF_DAY_OF_WEEK, TG_TF_DAY_OF_MONTH,
                                         TG_TF_DAY_OF_YEAR};
static const tg_time_feature F_MINUTE[] = {TG_TF_MINUTE_OF_HOUR, TG_TF_HOUR_OF_DAY,
                                           TG_TF_DAY_OF_WEEK, TG_TF_DAY_OF_MONTH,
                                           TG_TF_DAY_OF_YEAR};
static const tg_time_feature F_SECOND[] = {TG_TF_SECOND_OF_MINUTE, TG_TF_MINUTE_OF_HOUR,
                                           TG_TF_HOUR_OF_DAY, TG_TF_DAY_OF_WEEK,
                                           TG_TF_DAY_OF_MONTH, TG_TF_DAY_OF_YEAR};

/* Is s an anchor suffix "-XXX" of `names` (3 letters each, upper case)? */
static bool anchor_ok(const char *s, const char *names)
{
    if (s[0] != '-' || strlen(s) != 4) return false;
    for (const char *p = names; *p; p += 3)
        if (!strncmp(s + 1, p, 3)) return true;
    return false;
}

/* The unit name (after the multiple) to its feature list; false if unknown. */
static bool unit_features(const char *unit, const tg_time_feature **f, int *n)
{
    static const char days[] = "MONTUEWEDTHUFRISATSUN";
    static const char months[] = "JANFEBMARAPRMAYJUNJULAUGSEPOCTNOVDEC";
    char u[16];
    size_t len = strlen(unit);
    if (!len || len >= sizeof u) return false;
    if (!strcmp(unit, "min") || !strcmp(unit, "Min")) {   /* pandas' aliases of T */
        *f = F_MINUTE, *n = 5;
        return true;
    }
    for (size_t i = 0; i <= len; i++) u[i] = (char)toupper((unsigned char)unit[i]);
    const char *rest = u + 1;
    switch (u[0]) {
    case 'S': *f = F_SECOND, *n = 6; return !*rest;
    case 'T': *f = F_MINUTE, *n = 5; return !*rest;
    case 'H': *f = F_HOUR, *n = 4; return !*rest;
    case 'D': case 'B': *f = F_DAY, *n = 3; return !*rest;
    case 'W': *f = F_WEEK, *n = 2; return !*rest || anchor_ok(rest, days);
    case 'M': *f = F_MONTH, *n = 1; return !*rest;
    case 'Q': *f = F_MONTH, *n = 1; return !*rest || anchor_ok(rest, months);
    case 'A': case 'Y': *f = F_YEAR, *n = 0; return !*rest || anchor_ok(rest, months);
    default: return false;
    }
}

tg_status tg_time_features_for(const char *freq, tg_time_feature *out, int *n)
{
    TG__NONNULL(freq, TG_ERR_INVALID);
    TG__NONNULL(out, TG_ERR_INVALID);
    TG__NONNULL(n, TG_ERR_INVALID);
    const char *unit = freq;
    while (*unit >= '0' && *unit <= '9') unit++;            /* the multiple: 15min, 4h */
    const tg_time_feature *f = NULL;
    int count = 0;
    if (!unit_features(unit, &f, &count))
        return tg_set_error(TG_ERR_INVALID, "time features: unsupported frequency '%.40s' "
                            "(supported, as Time-Series-Library: Y/A yearly, Q quarterly, M "
                            "monthly, W weekly, D daily, B business days, H hourly, T/min "
                            "minutely, S secondly, each with an optional multiple: 15min)",
                            freq);
    for (int i = 0; i < count; i++) out[i] = f[i];
    *n = count;
    return TG_OK;
}

const char *tg_time_feature_name(tg_time_feature f)
{
    static const char *const names[TG_TF_COUNT] = {
        "SecondOfMinute", "MinuteOfHour", "HourOfDay", "DayOfWeek", "DayOfMonth", "DayOfYear",
        "MonthOfYear", "WeekOfYear"};
    return (unsigned)f < TG_TF_COUNT ? names[f] : "?";
}

/* ---- the calendar ---- */

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

static bool leap_year(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

/* y-m-d of a day count since 1970-01-01 (Howard Hinnant's civil_from_days) */
static void civil(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097), doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2);
}

/* 1-based day of the year */
static int64_t day_of_year(int64_t y, int64_t m, int64_t d)
{
    static const int before[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    return before[m - 1] + d + (m > 2 && leap_year(y));
}

/* pandas' dayofweek: Monday 0 ... Sunday 6 (1970-01-01 was a Thursday) */
static int64_t day_of_week(int64_t days)
{
    int64_t w = (days + 3) % 7;
    return w < 0 ? w + 7 : w;
}

/* ISO 8601 weeks in year y: 53 when it starts on a Thursday, or on a
 * Wednesday in a leap year */
static int64_t iso_weeks(int64_t y)
{
    int64_t p = (y + floor_div(y, 4) - floor_div(y, 100) + floor_div(y, 400)) % 7;
    int64_t q = (y - 1 + floor_div(y - 1, 4) - floor_div(y - 1, 100) + floor_div(y - 1, 400)) % 7;
    return p == 4 || q == 3 ? 53 : 52;
}

/* pandas' isocalendar().week */
static int64_t iso_week(int64_t y, int64_t doy, int64_t dow)
{
    int64_t w = (doy - (dow + 1) + 10) / 7;
    if (w < 1) return iso_weeks(y - 1);
    if (w > iso_weeks(y)) return 1;
    return w;
}

double tg_time_feature_value(tg_time_feature f, int64_t t)
{
    int64_t days = floor_div(t, 86400), s = t - days * 86400, y, m, d;
    civil(days, &y, &m, &d);
    switch (f) {
    case TG_TF_SECOND_OF_MINUTE: return (double)(s % 60) / 59.0 - 0.5;
    case TG_TF_MINUTE_OF_HOUR: return (double)(s / 60 % 60) / 59.0 - 0.5;
    case TG_TF_HOUR_OF_DAY: return (double)(s / 3600) / 23.0 - 0.5;
    case TG_TF_DAY_OF_WEEK: return (double)day_of_week(days) / 6.0 - 0.5;
    case TG_TF_DAY_OF_MONTH: return (double)(d - 1) / 30.0 - 0.5;
    case TG_TF_DAY_OF_YEAR: return (double)(day_of_year(y, m, d) - 1) / 365.0 - 0.5;
    case TG_TF_MONTH_OF_YEAR: return (double)(m - 1) / 11.0 - 0.5;
    case TG_TF_WEEK_OF_YEAR:
        return (double)(iso_week(y, day_of_year(y, m, d), day_of_week(days)) - 1) / 52.0 - 0.5;
    case TG_TF_COUNT: break;
    }
    return 0.0;
}

/* ---- a dataset's rows ---- */

tg_status tg_dataset_time_features(const tg_dataset *d, const char *freq, int64_t begin,
                                   int64_t end, float *out, size_t out_len)
{
    TG__NONNULL(d, TG_ERR_INVALID);
    TG__NONNULL(freq, TG_ERR_INVALID);
    tg_time_feature f[TG_TIME_FEATURES_MAX];
    int n = 0;
    tg_status st = tg_time_features_for(freq, f, &n);
    if (st) return st;
    if (!d->time)
        return tg_set_error(TG_ERR_INVALID, "time features: %s has no date column",
                            d->source ? d->source : "the dataset");
    if (begin < 0 || end < begin || end > d->rows)
        return tg_set_error(TG_ERR_INVALID, "time features: rows [%lld, %lld) are outside the "
                            "dataset's %lld", (long long)begin, (long long)end,
                            (long long)d->rows);
    if (n && !out) return tg_set_error(TG_ERR_INVALID, "time features: out is NULL");
    if ((size_t)(end - begin) > out_len / (n ? (size_t)n : 1))
        return tg_set_error(TG_ERR_INVALID, "time features: %lld rows of %d features need %lld "
                            "floats, the buffer holds %zu", (long long)(end - begin), n,
                            (long long)((end - begin) * n), out_len);
    for (int64_t r = begin; r < end; r++)
        for (int k = 0; k < n; k++)
            out[(r - begin) * n + k] = (float)tg_time_feature_value(f[k], d->time[r]);
    return TG_OK;
}
