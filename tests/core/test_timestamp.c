/*
** test_timestamp.c - epoch milliseconds to ISO-8601 UTC and back: known
** instants, leap years, years before 1970 and outside 0000..9999, every
** accepted form and offset, and text that is not a time.
*/
#include "testutil.h"

#include <string.h>

#include "timestamp.h"

static const char *fmt(int64_t ms, char *buf) {
  kl_time_format(ms, buf);
  return buf;
}

static int64_t parse_ok(const char *s) {
  int64_t ms = 0;
  const char *why = NULL;
  if (kl_time_parse(s, strlen(s), &ms, &why) != 0) fail_msg("'%s' refused: %s", s, why);
  return ms;
}

static const char *parse_bad(const char *s) {
  int64_t ms = 12345;
  const char *why = NULL;
  if (kl_time_parse(s, strlen(s), &ms, &why) == 0) fail_msg("'%s' accepted as %lld", s, (long long)ms);
  assert_non_null(why);
  assert_int_equal(ms, 12345); /* untouched on error */
  return why;
}

static void test_timestamp_known_instants(void **state) {
  (void)state;
  char b[KL_TIME_TEXT];
  assert_string_equal(fmt(0, b), "1970-01-01T00:00:00.000Z");
  assert_string_equal(fmt(1796112000000, b), "2026-12-01T08:00:00.000Z");
  assert_string_equal(fmt(1700000000001, b), "2023-11-14T22:13:20.001Z");
  assert_string_equal(fmt(-1, b), "1969-12-31T23:59:59.999Z");
  assert_string_equal(fmt(-14182940000, b), "1969-07-20T20:17:40.000Z");
  assert_string_equal(fmt(-62135596800000, b), "0001-01-01T00:00:00.000Z");
  assert_string_equal(fmt(253402300799999, b), "9999-12-31T23:59:59.999Z");
  assert_string_equal(fmt(253402300800000, b), "+10000-01-01T00:00:00.000Z");
  assert_string_equal(fmt(-62135596800001, b), "0000-12-31T23:59:59.999Z");
  assert_string_equal(fmt(-62167219200001, b), "-0001-12-31T23:59:59.999Z");
  /* java.time.Instant.ofEpochMilli(Long.MAX_VALUE / MIN_VALUE) */
  assert_string_equal(fmt(INT64_MAX, b), "+292278994-08-17T07:12:55.807Z");
  assert_string_equal(fmt(INT64_MIN, b), "-292275055-05-16T16:47:04.192Z");
  assert_true(strlen(b) < KL_TIME_TEXT);
}

static void test_timestamp_leap_years(void **state) {
  (void)state;
  char b[KL_TIME_TEXT];
  assert_string_equal(fmt(951782400000, b), "2000-02-29T00:00:00.000Z");   /* divisible by 400 */
  assert_string_equal(fmt(-11670998400000, b), "1600-02-29T00:00:00.000Z");
  assert_string_equal(fmt(-2203891200000 - 86400000, b), "1900-02-28T00:00:00.000Z"); /* by 100: none */
  assert_int_equal(parse_ok("2024-02-29"), parse_ok("2024-03-01") - 86400000);
  assert_int_equal(parse_ok("1900-03-01"), -2203891200000);
  assert_string_equal(parse_bad("1900-02-29"), "that month has no such day");
  assert_string_equal(parse_bad("2026-02-29"), "that month has no such day");
  assert_string_equal(parse_bad("2026-04-31"), "that month has no such day");
  parse_ok("2000-02-29T12:00Z");
}

/* Every day from 1601 to 2399 follows the one before it, and every text
** reads back as the instant it came from. */
static void test_timestamp_round_trips(void **state) {
  (void)state;
  char b[KL_TIME_TEXT], prev[KL_TIME_TEXT] = "";
  for (int64_t d = parse_ok("1601-01-01") / 86400000; d < parse_ok("2400-01-01") / 86400000; d++) {
    int64_t ms = d * 86400000 + (d * 7919 % 86400000 + 86400000) % 86400000;
    kl_time_format(ms, b);
    assert_int_equal(parse_ok(b), ms);
    assert_true(strcmp(prev, b) < 0);
    memcpy(prev, b, sizeof b);
  }
  static const int64_t edge[] = {INT64_MIN, INT64_MIN + 1, -62167219200001, -1, 0, 1,
                                 253402300800000, INT64_MAX - 1, INT64_MAX};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
    assert_int_equal(parse_ok(fmt(edge[i], b)), edge[i]);
  }
  uint64_t x = 88172645463325252u; /* xorshift: values all over the range */
  for (int i = 0; i < 100000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    assert_int_equal(parse_ok(fmt((int64_t)x, b)), (int64_t)x);
  }
}

static void test_timestamp_forms_and_offsets(void **state) {
  (void)state;
  int64_t eight = 1796112000000; /* 2026-12-01T08:00:00Z */
  assert_int_equal(parse_ok("2026-12-01"), 1796083200000);
  assert_int_equal(parse_ok("2026-12-01T08:00"), eight);
  assert_int_equal(parse_ok("2026-12-01 08:00"), eight);
  assert_int_equal(parse_ok("2026-12-01t08:00z"), eight);
  assert_int_equal(parse_ok("2026-12-01T08:00:00"), eight);
  assert_int_equal(parse_ok("2026-12-01T08:00:00Z"), eight);
  assert_int_equal(parse_ok("2026-12-01T08:00:00.000Z"), eight);
  assert_int_equal(parse_ok("2026-12-01T08:00:00.5Z"), eight + 500);
  assert_int_equal(parse_ok("2026-12-01T08:00:00,25"), eight + 250);
  assert_int_equal(parse_ok("2026-12-01T08:00:00.123987654Z"), eight + 123);
  assert_int_equal(parse_ok("2026-12-01T09:00:00+01:00"), eight);
  assert_int_equal(parse_ok("2026-12-01T13:30+05:30"), eight);
  assert_int_equal(parse_ok("2026-12-01T13:30:00.000+0530"), eight);
  assert_int_equal(parse_ok("2026-12-01T03:00-05:00"), eight);
  assert_int_equal(parse_ok("2026-12-01T08:00-00:00"), eight);
  assert_int_equal(parse_ok("2026-12-02T07:00+23:00"), eight);
  /* Before 1970 a cut fraction still goes to the earlier instant. */
  assert_int_equal(parse_ok("1969-12-31T23:59:59.9995Z"), -1);
  assert_int_equal(parse_ok("+10000-01-01"), 253402300800000);
  assert_int_equal(parse_ok("-0001-12-31T23:59:59.999Z"), -62167219200001);
  assert_int_equal(parse_ok("0000-01-01"), -62167219200000);
}

static void test_timestamp_bad_text(void **state) {
  (void)state;
  assert_string_equal(parse_bad(""), "the year is not four digits (or a sign and up to nine)");
  assert_string_equal(parse_bad("1700000000000"), "the year is not four digits (or a sign and up to nine)");
  assert_string_equal(parse_bad("26-12-01"), "the year is not four digits (or a sign and up to nine)");
  assert_string_equal(parse_bad("+1234567890-01-01"), "the year is not four digits (or a sign and up to nine)");
  assert_string_equal(parse_bad("2026"), "the month (-MM) is missing");
  assert_string_equal(parse_bad("2026-1-01"), "the month (-MM) is missing");
  assert_string_equal(parse_bad("2026-13-01"), "the month is not 01..12");
  assert_string_equal(parse_bad("2026-00-01"), "the month is not 01..12");
  assert_string_equal(parse_bad("2026-12"), "the day (-DD) is missing");
  assert_string_equal(parse_bad("2026-12-00"), "the day is not 01..31");
  assert_string_equal(parse_bad("2026-12-32"), "the day is not 01..31");
  assert_string_equal(parse_bad("2026-12-01X08:00"), "the date is not followed by T or a space and a time");
  assert_string_equal(parse_bad("2026-12-01Z"), "the date is not followed by T or a space and a time");
  assert_string_equal(parse_bad("2026-12-01T"), "the hour is not two digits");
  assert_string_equal(parse_bad("2026-12-01T8:00"), "the hour is not two digits");
  assert_string_equal(parse_bad("2026-12-01T08"), "the minutes (:MM) are missing");
  assert_string_equal(parse_bad("2026-12-01T24:00"), "the hour is not 00..23");
  assert_string_equal(parse_bad("2026-12-01T08:60"), "the minutes are not 00..59");
  assert_string_equal(parse_bad("2026-12-01T08:00:60"), "the seconds are not 00..59 (no leap seconds)");
  assert_string_equal(parse_bad("2026-12-01T08:00:1"), "the seconds are not two digits");
  assert_string_equal(parse_bad("2026-12-01T08:00.5"), "the text goes on after the time");
  assert_string_equal(parse_bad("2026-12-01T08:00:00."), "the fraction of a second is not 1..9 digits");
  assert_string_equal(parse_bad("2026-12-01T08:00:00.1234567891"),
                      "the fraction of a second is not 1..9 digits");
  assert_string_equal(parse_bad("2026-12-01T08:00:00Zjunk"), "the text goes on after the offset");
  assert_string_equal(parse_bad("2026-12-01T08:00:00 "), "the text goes on after the time");
  assert_string_equal(parse_bad("2026-12-01T08:00+1"), "the offset is not +HH:MM or -HH:MM");
  assert_string_equal(parse_bad("2026-12-01T08:00+24:00"), "the offset's hours are not 00..23");
  assert_string_equal(parse_bad("2026-12-01T08:00+01:60"), "the offset's minutes are not 00..59");
  assert_string_equal(parse_bad("+292278994-08-17T07:12:55.808Z"),
                      "the instant is outside what 64-bit milliseconds hold");
  assert_string_equal(parse_bad("-292275055-05-16T16:47:04.191Z"),
                      "the instant is outside what 64-bit milliseconds hold");
  assert_string_equal(parse_bad("+999999999-01-01"), "the instant is outside what 64-bit milliseconds hold");
  assert_string_equal(parse_bad("-999999999-01-01"), "the instant is outside what 64-bit milliseconds hold");
  /* The last days: their start is outside, an instant in them is not. */
  assert_int_equal(parse_ok("-292275055-05-16T16:47:04.192Z"), INT64_MIN);
  assert_int_equal(parse_ok("-292275055-05-16T17:47:04.192+01:00"), INT64_MIN);
  assert_int_equal(parse_ok("+292278994-08-18T06:12:55.807+23:00"), INT64_MAX);
  /* The length is the text's: a NUL inside it, or bytes past n, are not read as more. */
  int64_t ms;
  const char *why;
  assert_int_equal(kl_time_parse("2026-12-01\0T08:00", 17, &ms, &why), -1);
  assert_int_equal(kl_time_parse("2026-12-01T08:00Z", 10, &ms, &why), 0);
  assert_int_equal(ms, 1796083200000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_timestamp_known_instants),
      cmocka_unit_test(test_timestamp_leap_years),
      cmocka_unit_test(test_timestamp_round_trips),
      cmocka_unit_test(test_timestamp_forms_and_offsets),
      cmocka_unit_test(test_timestamp_bad_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
