/*
 * Proleptic Gregorian calendar arithmetic shared by the C extensions (binlog decoder,
 * snapshot reader): Arrow date32/timestamp values are days/microseconds since 1970-01-01.
 */
#ifndef SPARKCDC_CIVIL_H
#define SPARKCDC_CIVIL_H

#include <stdint.h>

static inline int is_leap_year(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Days in month m (1-12) of year y. */
static inline int days_in_month(int y, int m) {
    static const int DAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap_year(y) ? 29 : DAYS[m - 1];
}

/* Days from 1970-01-01 to a civil date (Howard Hinnant's days_from_civil). */
static inline int64_t days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

#endif
