/*
** test_time_functions.c - kafka_time(), kafka_ms() and kafka_log_debug() in
** SQL: record timestamps as text and back, WHERE clauses written with
** kafka_ms() answer what the numbers answer, Kafka's -1 is NULL, argument
** types and errors, the functions' flags (an index on an expression, a
** view under trusted_schema = OFF), and the debug report's keys.
*/
#include "sqltest.h"

#include <unistd.h>

#include "timestamp.h"

static void test_kafka_time_of_records(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  assert_int_equal(chdir(KL_FIXTURES), 0);
  char *t = st_text(db, "SELECT group_concat(kafka_time(timestamp), ' ') FROM "
                        "(SELECT timestamp FROM kafka_log('a-tiny/orders-0') WHERE offset IN (0, 9))",
                    NULL);
  assert_string_equal(t, "2023-11-14T22:13:20.000Z 2023-11-14T22:13:20.090Z");
  free(t);
  /* Every record's text reads back as its timestamp. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log('b-multi-segment/orders-0') "
                              "WHERE kafka_ms(kafka_time(timestamp)) IS NOT timestamp", NULL), 0);
  /* v0 messages have no timestamp: Kafka's -1, no text. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log('f-legacy-v0/orders-0') "
                              "WHERE timestamp = -1 AND kafka_time(timestamp) IS NULL", NULL), 300);
  st_close(db);
}

/* A window written as text is the window written as numbers, and is
** still pushed down (a handful of batches decoded, not the log). */
static void test_kafka_ms_in_where(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  assert_int_equal(chdir(KL_FIXTURES), 0);
  int64_t by_number = st_int(db, "SELECT count(*) FROM kafka_log('b-multi-segment/orders-0') "
                                 "WHERE timestamp >= 1700000010000 AND timestamp < 1700000020000", NULL);
  assert_int_equal(by_number, 1000);
  st_exec(db, "SELECT kafka_log_stats_reset()");
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log('b-multi-segment/orders-0') "
                              "WHERE timestamp >= kafka_ms('2023-11-14T22:13:30Z') "
                              "AND timestamp < kafka_ms('2023-11-14 23:13:40+01:00')", NULL),
                   by_number);
  st_stats s = st_get_stats(db);
  int64_t all = st_int(db, "SELECT count(*) FROM kafka_log('b-multi-segment/orders-0')", NULL);
  assert_true(s.records_decoded < all / 2);
  st_close(db);
}

static void test_kafka_time_values(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  static const struct { const char *sql, *want; } cases[] = {
      {"SELECT kafka_time(0)", "1970-01-01T00:00:00.000Z"},
      {"SELECT kafka_time(1796112000000)", "2026-12-01T08:00:00.000Z"},
      {"SELECT kafka_time(-2)", "1969-12-31T23:59:59.998Z"},
      {"SELECT kafka_time(1796112000000.7)", "2026-12-01T08:00:00.000Z"},
      {"SELECT kafka_time(-1.5)", "1969-12-31T23:59:59.998Z"},
      {"SELECT kafka_time('1796112000000')", "2026-12-01T08:00:00.000Z"},
      {"SELECT kafka_time(9223372036854775807)", "+292278994-08-17T07:12:55.807Z"},
      {"SELECT kafka_ms('2026-12-01T08:00:00.000Z')", "1796112000000"},
      {"SELECT kafka_ms('2026-12-01')", "1796083200000"},
      {"SELECT kafka_ms('1969-12-31T23:59:59.998Z')", "-2"},
      {"SELECT kafka_ms(kafka_time(-9223372036854775808))", "-9223372036854775808"},
      {"SELECT typeof(kafka_ms('2026-12-01'))", "integer"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *t = st_text(db, cases[i].sql, NULL);
    if (!t || strcmp(t, cases[i].want)) fail_msg("%s: got %s, want %s", cases[i].sql, t, cases[i].want);
    free(t);
  }
  assert_int_equal(st_int(db, "SELECT kafka_time(NULL) IS NULL AND kafka_ms(NULL) IS NULL "
                              "AND kafka_time(-1) IS NULL AND kafka_time(-0.5) IS NULL", NULL), 1);
  st_close(db);
}

static void test_time_functions_errors(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  char *m = st_expect_rc(db, "SELECT kafka_ms('2026-13-01')", SQLITE_ERROR);
  assert_string_equal(m, "kafka_ms: '2026-13-01' is not a time: the month is not 01..12; "
                         "the forms are " KL_TIME_FORMS);
  free(m);
  m = st_expect_rc(db, "SELECT kafka_ms('yesterday')", SQLITE_ERROR);
  assert_non_null(strstr(m, "'yesterday' is not a time: the year is not four digits"));
  free(m);
  m = st_expect_rc(db, "SELECT kafka_ms('2026-12-01T08:00:00Z' || printf('%.100c', 'x'))",
                   SQLITE_ERROR);
  assert_non_null(strstr(m, "'2026-12-01T08:00:00Zxxx"));
  assert_non_null(strstr(m, "xxx...' is not a time: the text goes on after the offset"));
  assert_true(strlen(m) < 400);
  free(m);
  m = st_expect_rc(db, "SELECT kafka_ms(1796112000000)", SQLITE_ERROR);
  assert_string_equal(m, "kafka_ms: the argument is a time as text (" KL_TIME_FORMS
                         "), not a number or a BLOB");
  free(m);
  m = st_expect_rc(db, "SELECT kafka_ms(x'32303236')", SQLITE_ERROR);
  assert_non_null(strstr(m, "not a number or a BLOB"));
  free(m);
  m = st_expect_rc(db, "SELECT kafka_time('noon')", SQLITE_ERROR);
  assert_string_equal(m, "kafka_time: the argument is epoch milliseconds, an integer "
                         "(a record's timestamp), not text or a BLOB");
  free(m);
  m = st_expect_rc(db, "SELECT kafka_time(x'00')", SQLITE_ERROR);
  free(m);
  m = st_expect_rc(db, "SELECT kafka_time(1e300)", SQLITE_ERROR);
  assert_string_equal(m, "kafka_time: the milliseconds are outside 64 bits");
  free(m);
  m = st_expect_rc(db, "SELECT kafka_time(9223372036854775808.0)", SQLITE_ERROR);
  free(m);
  m = st_expect_rc(db, "SELECT kafka_time()", SQLITE_ERROR);
  free(m);
  st_close(db);
}

/* Deterministic: allowed in an index on an expression and a generated
** column.  Innocuous: a view using them runs with trusted_schema = OFF. */
static void test_time_functions_flags(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  st_exec(db, "CREATE TABLE ev(ts INTEGER, t TEXT AS (kafka_time(ts)));"
              "CREATE INDEX ev_t ON ev(kafka_ms(t));"
              "INSERT INTO ev(ts) VALUES (1796112000000), (-1), (0);"
              "CREATE VIEW ev_v AS SELECT kafka_time(ts) AS t, kafka_ms(kafka_time(ts)) AS ms, "
              "kafka_log_debug() IS NOT NULL AS d FROM ev;"
              "PRAGMA trusted_schema = OFF;");
  char *t = st_text(db, "SELECT group_concat(ifnull(t, 'NULL') || '=' || ifnull(ms, 'NULL'), ' ') "
                        "FROM (SELECT * FROM ev_v ORDER BY rowid)", NULL);
  assert_string_equal(t, "2026-12-01T08:00:00.000Z=1796112000000 NULL=NULL 1970-01-01T00:00:00.000Z=0");
  free(t);
  assert_int_equal(st_int(db, "SELECT ts FROM ev WHERE kafka_ms(t) = 1796112000000", NULL),
                   1796112000000);
  st_close(db);
}

static void test_kafka_log_debug(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  char *d = st_text(db, "SELECT kafka_log_debug()", NULL);
  print_message("%s\n", d);
  static const char *const keys[] = {
      "version: " KL_VERSION "\n", "build type: ", "compiler: ", "sanitizers: ", "assertions: ",
      "sqlite compiled against: ", "sqlite running on: ", "sqlite needed: 3.38.0 or later\n",
      "codec gzip: zlib ", "codec snappy: snappy ", "codec lz4: lz4 ", "codec zstd: zstd ",
      "checksums: ", "limit max batch bytes: ", "limit cached logs: ", "limit cached segments: ",
  };
  const char *at = d;
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    const char *k = strstr(at, keys[i]);
    if (!k) fail_msg("no '%s' in order in:\n%s", keys[i], d);
    assert_true(k == d || k[-1] == '\n'); /* a key starts its line */
    at = k;
  }
  char want[128];
  snprintf(want, sizeof want, "\nsqlite running on: %s (%s)\n", sqlite3_libversion(), sqlite3_sourceid());
  assert_non_null(strstr(d, want));
  snprintf(want, sizeof want, "\nlimit max batch bytes: %llu\n", (unsigned long long)KL_MAX_BATCH_BYTES);
  assert_non_null(strstr(d, want));
  assert_null(strstr(d, "unknown"));
  assert_int_not_equal(d[strlen(d) - 1], '\n');
  /* One "key: value" a line, nothing else. */
  for (char *line = d; line && *line;) {
    char *nl = strchr(line, '\n');
    char *colon = strstr(line, ": ");
    assert_true(colon && (!nl || colon < nl));
    line = nl ? nl + 1 : NULL;
  }
  free(d);
  st_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kafka_time_of_records),
      cmocka_unit_test(test_kafka_ms_in_where),
      cmocka_unit_test(test_kafka_time_values),
      cmocka_unit_test(test_time_functions_errors),
      cmocka_unit_test(test_time_functions_flags),
      cmocka_unit_test(test_kafka_log_debug),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
