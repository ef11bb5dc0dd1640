/*
** test_sqlite_env.c - the module inside SQLite: the core's memory is
** SQLite's (sqlite3_memory_used counts the logs a query opens and the
** caches keep), and a read of the writing table inside its transaction
** sees its own records without writing any (the .log keeps its size, the
** batches are those a transaction without the read writes).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kwriter.h"
#include "sqltest.h"
#include "testutil.h"

/* A log of 3000 batches in segments of about 800 bytes: thousands of
** segments, each with what the cache keeps of it. */
static void test_memory_is_sqlites(void **state) {
  (void)state;
  char *dir = kw_make_log("env-mem", 3000, 4, 800, 4096, 20, INT64_C(1700000000000), 1000);
  sqlite3 *db = st_open();
  sqlite3_int64 before = sqlite3_memory_used();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q)", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int_or(db, -1, "SELECT count(*) FROM t", NULL), 12000);
  sqlite3_int64 cached = sqlite3_memory_used();
  printf("sqlite3_memory_used: %lld bytes before, %lld with the log open and cached\n",
         (long long)before, (long long)cached);
  /* The segments' entries, names, facts: far more than SQLite's own. */
  if (cached - before < 1000 * 100) {
    fail_msg("sqlite3_memory_used grew by %lld bytes only", (long long)(cached - before));
  }
  st_exec(db, "DROP TABLE t");
  st_close(db);
  /* Everything the core took went back through SQLite's allocator. */
  assert_true(sqlite3_memory_used() < before + 4096);
  t_rmdir(dir);
  free(dir);
}

static int64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* The same inserts, with and without reads of the table between them. */
static void write_with_reads(const char *dir, int reads) {
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='create')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  char log[4200];
  snprintf(log, sizeof log, "%s/00000000000000000000.log", dir);
  st_exec(db, "BEGIN");
  for (int i = 0; i < 50; i++) {
    st_run(db, "INSERT INTO t(key, value, timestamp) VALUES ('k', printf('v%d', ?1), "
           "1700000000000 + ?1)", "i", (int64_t)i);
    if (!reads) continue;
    int64_t size = file_size(log);
    assert_int_equal(st_int_or(db, -1, "SELECT count(*) FROM t", NULL), i + 1);
    char *v = st_text(db, "SELECT value FROM t WHERE offset = ?1", "i", (int64_t)i);
    char want[32];
    snprintf(want, sizeof want, "v%d", i);
    assert_string_equal(v, want);
    free(v);
    assert_int_equal(file_size(log), size); /* the read wrote nothing */
  }
  /* Its own records, read by the statement that writes more. */
  st_exec(db, "INSERT INTO t(key, value, timestamp) SELECT key, value || '-again', timestamp FROM t");
  assert_int_equal(st_int_or(db, -1, "SELECT count(*) FROM t", NULL), 100);
  st_exec(db, "COMMIT");
  st_close(db);
}

static void test_read_in_transaction_writes_nothing(void **state) {
  (void)state;
  char *a = t_new_partition("env-read"), *b = t_new_partition("env-noread");
  write_with_reads(a, 1);
  write_with_reads(b, 0);
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cd %s && for f in *.log *.index *.timeindex; do cmp -s \"$f\" "
           "\"%s/$f\" || { echo \"differs: $f\"; exit 1; }; done", a, b);
  assert_int_equal(system(cmd), 0); /* the same batches */
  t_drop_partition(a);
  t_drop_partition(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_memory_is_sqlites),
    cmocka_unit_test(test_read_in_transaction_writes_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
