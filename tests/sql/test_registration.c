/*
** test_registration.c - sqlite3_kafkalog_init succeeds whole or leaves
** nothing behind: SQLite's allocator is replaced (SQLITE_CONFIG_MALLOC,
** before SQLite starts, so this is a program of its own) by one that
** fails its Nth allocation, and the init runs for N = 1, 2, ... until it
** succeeds.  After each failure no function or module of the extension
** answers, the connection closes cleanly (ASan: no use after free, no
** leak) and a second init on it works.
*/
#include "sqltest.h"

static sqlite3_mem_methods g_sys;   /* SQLite's own allocator */
static long g_calls, g_fail_at;    /* g_fail_at 0: never fail */

static int fails_now(void) { return g_fail_at > 0 && ++g_calls == g_fail_at; }

static void *fail_malloc(int n) { return fails_now() ? NULL : g_sys.xMalloc(n); }
static void *fail_realloc(void *p, int n) { return fails_now() ? NULL : g_sys.xRealloc(p, n); }

static const char *const g_functions[] = {
    "SELECT kafka_time(0)", "SELECT kafka_ms('2026-12-01')", "SELECT kafka_log_debug()",
    "SELECT kafka_log_max_skew('/nonexistent')", "SELECT kafka_log_version()",
    "SELECT kafka_log_stats()", "SELECT kafka_schema_id(x'00000000')",
    "SELECT kafka_payload(x'00000000')", "SELECT kafka_log_stats_reset()",
    "SELECT kafka_log_recover('/nonexistent')", "SELECT kafka_partition_for('k', 3)",
};
static const char *const g_modules[] = {
    "kafka_log", "kafka_log_check", "kafka_batches", "kafka_segments", "kafka_consumer_offsets",
    "kafka_partitions",
};

/* Does sql prepare (its function or table exists)? */
static int prepares(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  sqlite3_finalize(st);
  return rc == SQLITE_OK;
}

/* How many of the extension's functions and modules db has. */
static int registered(sqlite3 *db) {
  int n = 0;
  for (size_t i = 0; i < sizeof g_functions / sizeof *g_functions; i++) {
    n += prepares(db, g_functions[i]);
  }
  for (size_t i = 0; i < sizeof g_modules / sizeof *g_modules; i++) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT * FROM %s('/nonexistent')", g_modules[i]);
    n += prepares(db, sql);
  }
  return n;
}

static void test_registration_out_of_memory_leaves_nothing(void **state) {
  long n;
  int all = (int)(sizeof g_functions / sizeof *g_functions + sizeof g_modules / sizeof *g_modules);
  for (n = 1; n < 10000; n++) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    char *err = NULL;
    g_calls = 0;
    g_fail_at = n;
    int rc = sqlite3_kafkalog_init(db, &err, NULL);
    g_fail_at = 0;
    sqlite3_free(err);
    if (rc == SQLITE_OK) {
      assert_int_equal(registered(db), all);
      st_close(db);
      break;
    }
    assert_int_equal(rc, SQLITE_NOMEM);
    int left = registered(db);
    if (left) fail_msg("allocation %ld failed: %d functions or modules left behind", n, left);
    /* The connection is usable, and the extension loads on it after all. */
    assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
    assert_int_equal(registered(db), all);
    assert_int_equal(st_int(db, "SELECT kafka_log_stats_reset() IS NULL", NULL), 1);
    st_close(db);
  }
  print_message("  the init's allocation 1 to %ld failed in turn; allocation %ld succeeding, it "
                "registered everything\n", n - 1, n);
  assert_true(n > 10); /* the allocator was reached: one per registration at least */
}

/* Loading twice replaces the first load's functions and modules; a second
** load failing takes back the first one's too (they held its kl_conn). */
static void test_failed_second_load_leaves_nothing(void **state) {
  int all = (int)(sizeof g_functions / sizeof *g_functions + sizeof g_modules / sizeof *g_modules);
  for (long n = 1; n < 10000; n++) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
    g_calls = 0;
    g_fail_at = n;
    int rc = sqlite3_kafkalog_init(db, NULL, NULL);
    g_fail_at = 0;
    if (rc == SQLITE_OK) {
      st_close(db);
      return;
    }
    /* Either the second load failed before it replaced anything (the
    ** first is whole, its kl_conn alive: using it is safe under ASan), or
    ** nothing is left. */
    int left = registered(db);
    if (left != 0 && left != all) {
      fail_msg("allocation %ld failed: %d functions or modules left behind", n, left);
    }
    if (left == all) {
      assert_int_equal(st_int(db, "SELECT kafka_log_stats_reset() IS NULL", NULL), 1);
      assert_int_equal(st_int(db, "SELECT kafka_log_stats() IS NOT NULL", NULL), 1);
      assert_int_equal(st_int(db, "SELECT count(*) > 0 FROM kafka_log(?1)", "t",
                              KL_FIXTURES "/broker"), 1);
    }
    st_close(db);
  }
  fail_msg("the second load never succeeded");
}

int main(void) {
  assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &g_sys), SQLITE_OK);
  sqlite3_mem_methods m = g_sys;
  m.xMalloc = fail_malloc;
  m.xRealloc = fail_realloc;
  /* Every allocation through the allocator: none from a lookaside buffer. */
  if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK ||
      sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0) != SQLITE_OK) {
    fprintf(stderr, "cannot replace SQLite's allocator\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registration_out_of_memory_leaves_nothing),
      cmocka_unit_test(test_failed_second_load_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
