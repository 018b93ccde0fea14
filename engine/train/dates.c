/*
 * dates.c - the calendar arithmetic and date strings of a dataset's date
 * column (see dataset.h: tg_date_parse, tg_date_format, tg_date_freq_name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "internal.h"

/* ---- dates ---- */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yoe + era * 400 + (*m <= 2);
}

/* n digits at *p as a number, advancing *p; -1 if they are not all digits. */
static int64_t digits_at(const char **p, int n)
{
    int64_t v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (**p < '0' || **p > '9') return -1;
        v = v * 10 + (**p - '0');
    }
    return v;
}

tg_status tg_date_parse(const char *s, int64_t *t, tg_date_style *style)
{
    TG__NONNULL(s, TG_ERR_INVALID);
    TG__NONNULL(t, TG_ERR_INVALID);
    static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int64_t y = digits_at(&p, 4), mo = -1, d = -1, h = 0, mi = 0, sec = 0;
    tg_date_style st = TG_DATE_YMD;
    if (y >= 1 && *p == '-' && (p++, mo = digits_at(&p, 2)) >= 1 && *p == '-' &&
        (p++, d = digits_at(&p, 2)) >= 1 && (*p == ' ' || *p == 'T')) {
        bool iso = *p++ == 'T';
        h = digits_at(&p, 2);
        mi = *p == ':' ? (p++, digits_at(&p, 2)) : -1;
        st = iso ? TG_DATE_ISO_HM : TG_DATE_YMD_HM;
        if (*p == ':') {
            p++;
            sec = digits_at(&p, 2);
            st = iso ? TG_DATE_ISO_HMS : TG_DATE_YMD_HMS;
        }
    }
    bool leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    if (*p || y < 1 || mo < 1 || mo > 12 || d < 1 ||
        d > mdays[mo - 1] + (mo == 2 && leap) || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        sec < 0 || sec > 59)
        return tg_set_error(TG_ERR_FORMAT, "'%.40s' is not a date (expected YYYY-MM-DD, "
                            "YYYY-MM-DD HH:MM[:SS] or YYYY-MM-DDTHH:MM[:SS])", s);
    *t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    if (style) *style = st;
    return TG_OK;
}

const char *tg_date_format(int64_t t, tg_date_style style, char *buf, size_t len)
{
    TG__NONNULL(buf, NULL);
    if (!len) return buf;
    int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400), s = t - days * 86400, y, m, d;
    civil_from_days(days, &y, &m, &d);
    if (style == TG_DATE_YMD && s) style = TG_DATE_YMD_HMS;
    char sep = style == TG_DATE_ISO_HM || style == TG_DATE_ISO_HMS ? 'T' : ' ';
    if (style == TG_DATE_YMD)
        tg__fmt(buf, len, "%04lld-%02lld-%02lld", (long long)y, (long long)m, (long long)d);
    else if (style == TG_DATE_YMD_HM || style == TG_DATE_ISO_HM)
        tg__fmt(buf, len, "%04lld-%02lld-%02lld%c%02lld:%02lld", (long long)y, (long long)m,
                (long long)d, sep, (long long)(s / 3600), (long long)(s / 60 % 60));
    else
        tg__fmt(buf, len, "%04lld-%02lld-%02lld%c%02lld:%02lld:%02lld", (long long)y,
                (long long)m, (long long)d, sep, (long long)(s / 3600), (long long)(s / 60 % 60),
                (long long)(s % 60));
    return buf;
}

const char *tg_date_freq_name(int64_t seconds, char *buf, size_t len)
{
    TG__NONNULL(buf, NULL);
    if (seconds > 0 && seconds % 86400 == 0)
        tg__fmt(buf, len, "%lldd", (long long)(seconds / 86400));
    else if (seconds > 0 && seconds % 3600 == 0)
        tg__fmt(buf, len, "%lldh", (long long)(seconds / 3600));
    else if (seconds > 0 && seconds % 60 == 0)
        tg__fmt(buf, len, "%lldmin", (long long)(seconds / 60));
    else
        tg__fmt(buf, len, "%llds", (long long)seconds);
    return buf;
}
