/*
** timestamp.c - epoch milliseconds to and from ISO-8601 UTC text.  The
** day arithmetic is the era-based one (400-year cycles of 146097 days),
** exact for every day an int64_t of milliseconds reaches.
*/
#include "timestamp.h"

#include <stdio.h>

#define MS_PER_DAY INT64_C(86400000)

static int leap(int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

static int month_days(int64_t y, int m) {
  static const unsigned char d[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && leap(y) ? 29 : d[m - 1];
}

/* Days from 1970-01-01 to y-m-d; |y| below 10^9 keeps every product small. */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;                                 /* 0..399 */
  int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0..365 */
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;         /* 0..146096 */
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

size_t kl_time_format(int64_t ms, char out[KL_TIME_TEXT]) {
  /* Floor division without forming days * MS_PER_DAY, which for INT64_MIN
  ** would lie below the range. */
  int64_t rem = ms % MS_PER_DAY;
  int64_t days = ms / MS_PER_DAY - (rem < 0);
  if (rem < 0) rem += MS_PER_DAY;
  int64_t y;
  int m, d;
  civil_from_days(days, &y, &m, &d);
  char year[24];
  if (y >= 0 && y <= 9999) snprintf(year, sizeof year, "%04lld", (long long)y);
  else snprintf(year, sizeof year, "%c%04lld", y < 0 ? '-' : '+', (long long)(y < 0 ? -y : y));
  int n = snprintf(out, KL_TIME_TEXT, "%s-%02d-%02dT%02d:%02d:%02d.%03dZ", year, m, d,
                   (int)(rem / 3600000), (int)(rem / 60000 % 60), (int)(rem / 1000 % 60),
                   (int)(rem % 1000));
  return n < 0 ? 0 : (size_t)n;
}

/* A parse in progress: the text and how far it has been read. */
typedef struct tp {
  const char *s;
  size_t n, i;
} tp;

static int at(const tp *p, char c) { return p->i < p->n && p->s[p->i] == c; }
static int digit(const tp *p, size_t k) {
  return p->i + k < p->n && p->s[p->i + k] >= '0' && p->s[p->i + k] <= '9';
}

/* Exactly k digits, into *v; 0 when they are not there. */
static int digits(tp *p, size_t k, int64_t *v) {
  int64_t x = 0;
  for (size_t j = 0; j < k; j++) {
    if (!digit(p, j)) return 0;
    x = x * 10 + (p->s[p->i + j] - '0');
  }
  p->i += k;
  *v = x;
  return 1;
}

/* A field of two digits in lo..hi, after the separator sep (0: none). */
static int field(tp *p, char sep, int64_t lo, int64_t hi, int64_t *v, const char *missing,
                 const char *range, const char **why) {
  if (sep && !at(p, sep)) return *why = missing, -1;
  if (sep) p->i++;
  if (!digits(p, 2, v)) return *why = missing, -1;
  if (*v < lo || *v > hi) return *why = range, -1;
  return 0;
}

/* The year: four digits, or ISO-8601's expanded form (a sign and four to
** nine digits) for years outside 0000..9999. */
static int year(tp *p, int64_t *y, const char **why) {
  int sign = 0;
  if (at(p, '+') || at(p, '-')) sign = p->s[p->i++] == '-' ? -1 : 1;
  size_t k = 0;
  while (k < 10 && digit(p, k)) k++;
  if (k < 4 || (!sign && k != 4) || k > 9) {
    return *why = "the year is not four digits (or a sign and up to nine)", -1;
  }
  digits(p, k, y);
  if (sign < 0) *y = -*y;
  return 0;
}

/* The time of day after the date's separator, in milliseconds. */
static int time_of_day(tp *p, int64_t *ms, const char **why) {
  int64_t h = 0, mi = 0, sec = 0, frac = 0;
  if (field(p, 0, 0, 23, &h, "the hour is not two digits", "the hour is not 00..23", why) ||
      field(p, ':', 0, 59, &mi, "the minutes (:MM) are missing", "the minutes are not 00..59",
            why)) {
    return -1;
  }
  int has_sec = at(p, ':');
  if (has_sec && field(p, ':', 0, 59, &sec, "the seconds are not two digits",
                          "the seconds are not 00..59 (no leap seconds)", why)) {
    return -1;
  }
  /* A fraction belongs to the seconds: HH:MM.f is not a form. */
  if (has_sec && (at(p, '.') || at(p, ','))) {
    p->i++;
    size_t k = 0;
    while (digit(p, k)) k++;
    if (k == 0 || k > 9) return *why = "the fraction of a second is not 1..9 digits", -1;
    int64_t f = 0;
    digits(p, k, &f);
    for (; k < 3; k++) f *= 10;
    for (; k > 3; k--) f /= 10;
    frac = f;
  }
  *ms = ((h * 60 + mi) * 60 + sec) * 1000 + frac;
  return 0;
}

/* Z, or +HH:MM / -HH:MM (also +HHMM), as milliseconds east of UTC. */
static int offset(tp *p, int64_t *east, const char **why) {
  *east = 0;
  if (p->i == p->n) return 0;
  if (at(p, 'Z') || at(p, 'z')) return p->i++, 0;
  if (!at(p, '+') && !at(p, '-')) return *why = "the text goes on after the time", -1;
  int64_t sign = p->s[p->i++] == '-' ? -1 : 1, h = 0, m = 0;
  if (field(p, 0, 0, 23, &h, "the offset is not +HH:MM or -HH:MM", "the offset's hours are not 00..23",
            why)) {
    return -1;
  }
  if (field(p, at(p, ':') ? ':' : 0, 0, 59, &m, "the offset is not +HH:MM or -HH:MM",
            "the offset's minutes are not 00..59", why)) {
    return -1;
  }
  *east = sign * (h * 60 + m) * 60000;
  return 0;
}

/* days * MS_PER_DAY + x into *out, 0 when it fits.  The product alone may
** leave the range where the sum does not (the last day's start below
** INT64_MIN): then a day is moved into x, toward zero. */
static int day_ms(int64_t days, int64_t x, int64_t *out) {
  int64_t t;
  for (int k = 0; k < 3; k++) {
    if (!__builtin_mul_overflow(days, MS_PER_DAY, &t)) return __builtin_add_overflow(t, x, out) ? -1 : 0;
    if (days > 0) days--, x += MS_PER_DAY;
    else days++, x -= MS_PER_DAY;
  }
  return -1;
}

int kl_time_parse(const char *s, size_t n, int64_t *ms, const char **why) {
  tp p = {s, n, 0};
  int64_t y = 0, mo = 0, d = 0, tod = 0, east = 0;
  if (year(&p, &y, why) ||
      field(&p, '-', 1, 12, &mo, "the month (-MM) is missing", "the month is not 01..12", why) ||
      field(&p, '-', 1, 31, &d, "the day (-DD) is missing", "the day is not 01..31", why)) {
    return -1;
  }
  if (d > month_days(y, (int)mo)) return *why = "that month has no such day", -1;
  if (p.i < p.n) {
    if (!at(&p, 'T') && !at(&p, 't') && !at(&p, ' ')) {
      return *why = "the date is not followed by T or a space and a time", -1;
    }
    p.i++;
    if (time_of_day(&p, &tod, why) || offset(&p, &east, why)) return -1;
    if (p.i < p.n) return *why = "the text goes on after the offset", -1;
  }
  int64_t t;
  if (day_ms(days_from_civil(y, (int)mo, (int)d), tod - east, &t)) {
    return *why = "the instant is outside what 64-bit milliseconds hold", -1;
  }
  *ms = t;
  return 0;
}
