/*
 * timefeatures.h - Time-Series-Library's `timeF` time features
 * (utils/timefeatures.py, from gluonts): the calendar position of each row's
 * date, every feature scaled to [-0.5, 0.5] as the Python computes it (in
 * double, as pandas does, then rounded to float as TSL's .float()):
 *
 *     SecondOfMinute  second / 59.0 - 0.5        MinuteOfHour  minute / 59.0 - 0.5
 *     HourOfDay       hour / 23.0 - 0.5          DayOfWeek     dayofweek / 6.0 - 0.5 (Monday 0)
 *     DayOfMonth      (day - 1) / 30.0 - 0.5     DayOfYear     (dayofyear - 1) / 365.0 - 0.5
 *     MonthOfYear     (month - 1) / 11.0 - 0.5   WeekOfYear    (ISO week - 1) / 52.0 - 0.5
 *
 * and which of them a frequency gets (time_features_from_frequency_str, the
 * frequency read as pandas' to_offset reads it: an optional multiple, then
 * the unit, case-insensitive but for "min"):
 *
 *     Y, A  yearly         none          M  monthly    MonthOfYear
 *     Q     quarterly      MonthOfYear   W  weekly     DayOfMonth, WeekOfYear
 *     D, B  daily, business days: DayOfWeek, DayOfMonth, DayOfYear
 *     H     hourly         HourOfDay, DayOfWeek, DayOfMonth, DayOfYear  (ETTh1: 4 columns)
 *     T, min  minutely     MinuteOfHour, then the hourly four            (ETTm1: 5)
 *     S     secondly       SecondOfMinute, then the minutely five
 *
 * Dates are seconds since 1970-01-01 00:00:00 read as UTC, as the CSV
 * loader gives them (dataset.h: d->time).
 */
#ifndef TG_TIMEFEATURES_H
#define TG_TIMEFEATURES_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tg_time_feature {
    TG_TF_SECOND_OF_MINUTE,
    TG_TF_MINUTE_OF_HOUR,
    TG_TF_HOUR_OF_DAY,
    TG_TF_DAY_OF_WEEK,
    TG_TF_DAY_OF_MONTH,
    TG_TF_DAY_OF_YEAR,
    TG_TF_MONTH_OF_YEAR,
    TG_TF_WEEK_OF_YEAR,
    TG_TF_COUNT
} tg_time_feature;

/* The most features a frequency gets (secondly: 6). */
#define TG_TIME_FEATURES_MAX 6

/* The features of frequency `freq` ("h", "15min", "t", "d", "W", ...) in
 * TSL's order into out[0..TG_TIME_FEATURES_MAX), their count in *n (0 for
 * yearly). TG_ERR_INVALID naming freq and the supported units otherwise. */
tg_status tg_time_features_for(const char *freq, tg_time_feature *out, int *n);
/* TSL's class name of f ("HourOfDay"); "?" out of range. */
const char *tg_time_feature_name(tg_time_feature f);
/* f's value at t (seconds since 1970 UTC), in double as the Python computes it. */
double tg_time_feature_value(tg_time_feature f, int64_t t);

/* Rows [begin, end) of dataset d as TSL's time_features(dates, freq).T: out
 * [end - begin, n_features] row-major, float; out_len (elements) must hold
 * them (tg_time_features_for gives n_features). TG_ERR_INVALID when d has no
 * date column (naming its source), for rows out of range, a bad freq or a
 * short buffer. */
tg_status tg_dataset_time_features(const tg_dataset *d, const char *freq, int64_t begin,
                                   int64_t end, float *out, size_t out_len);

#ifdef __cplusplus
}
#endif
#endif
