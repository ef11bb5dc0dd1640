/*
** test_txn_state.c - Kafka's transaction state as tables, on the fixture
** tests/fixtures/txn-broker (make_transaction_state.py tells its story):
** kafka_transactions (the latest state per transactional id, tombstones
** deleting, an unknown key version skipped), kafka_transaction_log (every
** record in log order, queried by id and time), kafka_producers (state
** rebuilt from a snapshot and the batches after it; topic and partition
** constraints), kafka_hanging_transactions (each of Kafka's three
** conditions, a healthy open transaction and finished ones left out, the
** bound moved by now and max_timeout_ms), kafka_coordinator_partition
** (Java's String.hashCode over UTF-16 units, Utils.abs), and errors: a
** corrupt record named by directory and offset, a missing path.
*/
#include "sqltest.h"

#include <sys/stat.h>

#include "codec.h"
#include "kwriter.h"

#define FIX KL_FIXTURES "/txn-broker"
#define T0 1767225600000LL
#define MIN 60000LL

static char *rows(sqlite3 *db, const char *sql, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
  }
  st_vbind(st, fmt, ap);
  va_end(ap);
  st_buf b = {0};
  st_render(db, st, &b);
  return b.p ? b.p : calloc(1, 1);
}

static void expect(sqlite3 *db, const char *want, const char *sql, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
  }
  st_vbind(st, fmt, ap);
  va_end(ap);
  st_buf b = {0};
  st_render(db, st, &b);
  const char *got = b.p ? b.p : "";
  if (strcmp(got, want) != 0) fail_msg("%s\n--- got:\n%s--- want:\n%s", sql, got, want);
  st_buf_free(&b);
}

static void test_transactions(void **state) {
  sqlite3 *db = st_open();
  expect(db,
         "'inventory-sync'|5000|2|'CompleteCommit'|900000|'[]'|1767225900000|1767225960100|NULL|"
         "NULL|NULL|2|6|1767225960100|0\n"
         "'ledger-writer'|2000|1|'Ongoing'|60000|'[{\"topic\":\"ledger\",\"partition\":0}]'|"
         "1767228900000|1767228900000|NULL|NULL|2|2|8|1767228900000|1\n"
         "'orders-app'|3001|0|'CompleteAbort'|120000|'[]'|1767226200000|1767227100020|3000|NULL|"
         "2|1|4|1767227100020|1\n"
         "'payments-app'|1000|3|'CompleteCommit'|60000|'[]'|1767225660000|1767225660600|NULL|NULL|"
         "NULL|2|3|1767225660600|0\n"
         "'reports-job'|6000|0|'Dead'|60000|'[]'|NULL|1767227400000|NULL|NULL|NULL|1|5|"
         "1767227400000|0\n",
         "SELECT * FROM kafka_transactions(?1)", "t", FIX);
  /* Sorted by id: ORDER BY transactional_id needs no sort; the reverse
  ** order is SQLite's to make. */
  char *plan = rows(db, "EXPLAIN QUERY PLAN SELECT transactional_id FROM kafka_transactions(?1)"
                        " ORDER BY transactional_id", "t", FIX);
  assert_null(strstr(plan, "TEMP B-TREE"));
  free(plan);
  expect(db, "'reports-job'\n'payments-app'\n",
         "SELECT transactional_id FROM kafka_transactions(?1) ORDER BY transactional_id DESC"
         " LIMIT 2", "t", FIX);
  /* One partition directory: the ids it holds. */
  expect(db, "'orders-app'\n'reports-job'\n",
         "SELECT transactional_id FROM kafka_transactions(?1)", "t",
         FIX "/__transaction_state-1");
  /* Deleted by its tombstone; the key of version 1 is skipped. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_transactions(?1) WHERE"
                              " transactional_id IN ('old-batch-job', 'future-record')", "t", FIX),
                   0);
  /* Each id lies in the partition Kafka's coordinator computes. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_transactions(?1) WHERE state_partition"
                              " != kafka_coordinator_partition(transactional_id, 3)", "t", FIX),
                   0);
  /* The partitions JSON is SQLite JSON. */
  expect(db, "'ledger'|0\n",
         "SELECT j.value->>'topic', j.value->>'partition' FROM kafka_transactions(?1) t,"
         " json_each(t.partitions) j", "t", FIX);
  st_close(db);
}

static void test_history(void **state) {
  sqlite3 *db = st_open();
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_transaction_log(?1)", "t", FIX), 18 - 1);
  /* orders-app's changes in log order: the fence, the abort with the next
  ** producer id, the new producer id with its previous one. */
  expect(db,
         "0|'Ongoing'|3000|NULL|NULL|1\n"
         "2|'PrepareEpochFence'|3000|NULL|NULL|1\n"
         "3|'PrepareAbort'|3000|NULL|3001|1\n"
         "4|'CompleteAbort'|3001|3000|NULL|1\n",
         "SELECT record_offset, state, producer_id, previous_producer_id, next_producer_id,"
         " value_version FROM kafka_transaction_log(?1) WHERE transactional_id = 'orders-app'",
         "t", FIX);
  /* A tombstone is a row with the id and no state. */
  expect(db, "'Empty'|1\nNULL|NULL\n",
         "SELECT state, value_version FROM kafka_transaction_log(?1)"
         " WHERE transactional_id = 'old-batch-job' ORDER BY state_partition, record_offset",
         "t", FIX);
  /* Between two times: what changed in minutes 5 to 10. */
  expect(db, "'inventory-sync'|'Ongoing'\n'inventory-sync'|'PrepareCommit'\n"
             "'inventory-sync'|'CompleteCommit'\n'orders-app'|'Ongoing'\n",
         "SELECT transactional_id, state FROM kafka_transaction_log(?1)"
         " WHERE record_timestamp BETWEEN ?2 AND ?3 ORDER BY record_timestamp",
         "tii", FIX, T0 + 5 * MIN, T0 + 10 * MIN);
  /* Its order is (state_partition, record_offset). */
  char *plan = rows(db, "EXPLAIN QUERY PLAN SELECT * FROM kafka_transaction_log(?1)"
                        " ORDER BY state_partition, record_offset", "t", FIX);
  assert_null(strstr(plan, "TEMP B-TREE"));
  free(plan);
  /* The latest record of each id in the history is the current state. */
  assert_int_equal(st_int(db,
                          "SELECT count(*) FROM kafka_transactions(?1) t JOIN"
                          " (SELECT transactional_id, max(record_offset) o, state_partition p"
                          " FROM kafka_transaction_log(?1) GROUP BY transactional_id) h"
                          " ON h.transactional_id = t.transactional_id AND h.o = t.record_offset"
                          " AND h.p = t.state_partition", "t", FIX),
                   5);
  st_close(db);
}

static void test_producers(void **state) {
  sqlite3 *db = st_open();
  expect(db,
         "'ledger'|0|2000|1|1|1|1767228900000|NULL|0|NULL\n"
         "'orders'|0|3000|0|0|2|1767226200000|NULL|2|NULL\n"
         "'orders'|0|4000|0|4|7|1767229080000|NULL|NULL|NULL\n"
         "'orders'|1|4000|0|5|3|1767227400000|NULL|NULL|NULL\n"
         "'orders'|1|5000|2|1|1|1767225900000|NULL|0|NULL\n"
         "'orders'|1|6000|0|0|2|1767226800000|NULL|2|NULL\n"
         "'payments'|0|1000|3|1|1|1767225660500|5|NULL|NULL\n"
         "'payments'|0|4000|0|0|3|1767229140000|NULL|NULL|NULL\n",
         "SELECT * FROM kafka_producers(?1)", "t", FIX);
  /* One partition by constraint, or by its directory.  Its snapshot is at
  ** the log start (2), which Kafka's loader deletes: producer 7000, whose
  ** batches are gone, is known to that snapshot only. */
  expect(db, "3000\n4000\n",
         "SELECT producer_id FROM kafka_producers(?1) WHERE topic = 'orders' AND partition = 0",
         "t", FIX);
  expect(db, "3000\n4000\n", "SELECT producer_id FROM kafka_producers(?1)", "t",
         FIX "/orders-0");
  /* The same snapshot at 3, above the log start (the largest stray at or
  ** above every segment's base, as a clean shutdown leaves one): loaded,
  ** so producer 7000 is known; producer 3000, whose batch at 2 the
  ** snapshot (written before it) does not hold, is not: the log is read
  ** from the batch holding 3 on. */
  char *root = t_mkdtemp("producers");
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/orders-0", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(FIX "/orders-0", dir), 0);
  char snap[4300], moved[4300];
  snprintf(snap, sizeof snap, "%s/%020d.snapshot", dir, 2);
  snprintf(moved, sizeof moved, "%s/%020d.snapshot", dir, 3);
  assert_int_equal(rename(snap, moved), 0);
  expect(db, "4000|3\n7000|3\n",
         "SELECT producer_id, snapshot_offset FROM kafka_producers(?1)", "t", dir);
  t_flip(moved, 20, 0x01); /* its CRC fails: Kafka rebuilds from the log */
  expect(db, "3000|NULL\n4000|NULL\n",
         "SELECT producer_id, snapshot_offset FROM kafka_producers(?1)", "t", dir);
  t_rmdir(root);
  free(root);
  st_close(db);
}

/* The log start is the greatest of the first segment's base and the
** log-start-offset-checkpoint's: a producer whose batches all lie below
** it is not known to the broker, the batch holding it is read whole. */
static void test_producers_below_log_start(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  char *root = t_mkdtemp("producers_start");
  char dir[4200], ck[4200];
  snprintf(dir, sizeof dir, "%s/orders-0", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(FIX "/orders-0", dir), 0);
  snprintf(ck, sizeof ck, "%s/log-start-offset-checkpoint", root);
  const char *at2 = "0\n1\norders 0 2\n", *at3 = "0\n1\norders 0 3\n";
  assert_int_equal(t_write_file(ck, at2, strlen(at2)), 0);
  expect(db, "3000|2\n4000|7\n", "SELECT producer_id, last_offset FROM kafka_producers(?1)", "t",
         root);
  /* Producer 3000's only batch is at 2. */
  assert_int_equal(t_write_file(ck, at3, strlen(at3)), 0);
  expect(db, "4000|7\n", "SELECT producer_id, last_offset FROM kafka_producers(?1)", "t", root);
  t_rmdir(root);
  free(root);
  st_close(db);
}

static void test_hanging(void **state) {
  sqlite3 *db = st_open();
  expect(db,
         "'orders'|0|3000|0|NULL|2|1767226200000|2940000|NULL|'no transactional id'|2|6\n"
         "'orders'|1|5000|2|NULL|0|1767225900000|3240000|'inventory-sync'|"
         "'partition not in transaction'|0|4\n"
         "'orders'|1|6000|0|NULL|2|1767226800000|2340000|'reports-job'|"
         "'no coordinator state'|0|2\n",
         "SELECT * FROM kafka_hanging_transactions(?1)", "t", FIX);
  /* The default now: the latest batch under the path (payments-0, minute
  ** 59); the bound 15 minutes. */
  expect(db, "1767229140000|900000\n",
         "SELECT DISTINCT now, max_timeout_ms FROM kafka_hanging_transactions(?1)", "t", FIX);
  /* At minute 12 with a one-minute bound: producer 3000 (2 minutes) and
  ** 5000 (7) are candidates; 6000 has not begun. */
  expect(db, "3000|120000\n5000|420000\n",
         "SELECT producer_id, duration_ms FROM kafka_hanging_transactions(?1)"
         " WHERE now = ?2 AND max_timeout_ms = 60000", "ti", FIX, T0 + 12 * MIN);
  /* Long after: ledger-writer's transaction is old but its coordinator
  ** knows the partition (it will abort it itself): not hanging;
  ** payments-app's is finished. */
  expect(db, "3000\n5000\n6000\n",
         "SELECT producer_id FROM kafka_hanging_transactions(?1) WHERE now = ?2", "ti", FIX,
         T0 + 1000 * MIN);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_producers(?1) WHERE"
                              " current_txn_start_offset IS NOT NULL", "t", FIX),
                   4);
  /* Exactly at the bound is not past it: producer 3000, last seen 5 ms
  ** before now, counts with a bound of 4 ms and not with 5. */
  expect(db, "5000\n",
         "SELECT producer_id FROM kafka_hanging_transactions(?1) WHERE now = ?2"
         " AND max_timeout_ms = ?3", "tii", FIX, T0 + 10 * MIN + 5, (int64_t)5);
  expect(db, "3000\n5000\n",
         "SELECT producer_id FROM kafka_hanging_transactions(?1) WHERE now = ?2"
         " AND max_timeout_ms = ?3", "tii", FIX, T0 + 10 * MIN + 5, (int64_t)4);
  /* A NULL bound holds for no row. */
  expect(db, "", "SELECT * FROM kafka_hanging_transactions(?1) WHERE now = ?2", "tn", FIX);
  expect(db, "", "SELECT * FROM kafka_hanging_transactions(?1) WHERE max_timeout_ms = ?2", "tn",
         FIX);
  /* Without the coordinator's partitions, every old open transaction
  ** has no transactional id. */
  expect(db, "3000|'no transactional id'\n",
         "SELECT producer_id, reason FROM kafka_hanging_transactions(?1)", "t", FIX "/orders-0");
  st_close(db);
}

/* A copy of the fixture as a second log directory: each partition is
** read once (the replica with the highest high watermark). */
static void test_two_log_dirs(void **state) {
  static const char *parts[] = {"__transaction_state-0", "__transaction_state-1",
                                "__transaction_state-2", "ledger-0", "orders-0", "orders-1",
                                "payments-0"};
  static const char *files[] = {"log-start-offset-checkpoint", "recovery-point-offset-checkpoint",
                                "replication-offset-checkpoint"};
  char *root = t_mkdtemp("txn-replica");
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char src[4200], dst[4200];
    snprintf(src, sizeof src, "%s/%s", FIX, files[i]);
    snprintf(dst, sizeof dst, "%s/%s", root, files[i]);
    size_t n;
    uint8_t *p = t_read_file(src, &n);
    assert_non_null(p);
    assert_int_equal(t_write_file(dst, p, n), 0);
    free(p);
  }
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    char src[4200], dst[4200];
    snprintf(src, sizeof src, "%s/%s", FIX, parts[i]);
    snprintf(dst, sizeof dst, "%s/%s", root, parts[i]);
    assert_int_equal(mkdir(dst, 0755), 0);
    assert_int_equal(t_copy_dir(src, dst), 0);
  }
  char both[9000];
  snprintf(both, sizeof both, "%s,%s", FIX, root);
  sqlite3 *db = st_open();
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_transaction_log(?1)", "t", both), 17);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_transactions(?1)", "t", both), 5);
  expect(db, "3000\n5000\n6000\n",
         "SELECT producer_id FROM kafka_hanging_transactions(?1)", "t", both);
  st_close(db);
  t_rmdir(root);
  free(root);
}

static void test_coordinator_partition(void **state) {
  sqlite3 *db = st_open();
  /* "abc".hashCode() = 96354; "polygenelubricants".hashCode() =
  ** Integer.MIN_VALUE, which Utils.abs makes 0; a negative hash; a
  ** character outside the BMP is two UTF-16 units (0xD83D 0xDE00:
  ** 31 * 55357 + 56832 = 1772899). */
  expect(db, "4|0|41|49|1|0\n",
         "SELECT kafka_coordinator_partition('abc', 50),"
         " kafka_coordinator_partition('polygenelubricants', 50),"
         " kafka_coordinator_partition('payments-app', 50),"
         " kafka_coordinator_partition(char(128512), 50),"
         " kafka_coordinator_partition('orders-app', 3),"
         " kafka_coordinator_partition('', 7)", NULL);
  expect(db, "96354|NULL|NULL\n",
         "SELECT kafka_coordinator_partition('abc', 2147483647),"
         " kafka_coordinator_partition(NULL, 3), kafka_coordinator_partition('a', NULL)", NULL);
  static const char *bad[] = {"SELECT kafka_coordinator_partition('a', 0)",
                              "SELECT kafka_coordinator_partition('a', -3)",
                              "SELECT kafka_coordinator_partition('a', 2.5)",
                              "SELECT kafka_coordinator_partition('a', 4294967296)"};
  for (size_t i = 0; i < 4; i++) {
    char *msg = st_expect_rc(db, bad[i], SQLITE_ERROR);
    assert_non_null(strstr(msg, "the partition count must be an integer"));
    free(msg);
  }
  st_close(db);
}

/* A record Kafka's loader refuses fails the query, naming the partition
** directory and the record's offset. */
static void test_corrupt(void **state) {
  static const struct {
    uint8_t value[40];
    int32_t n;
    const char *why;
  } cases[] = {
      {{0x00, 0x02}, 2, "value: unknown transaction log version 2 (0 and 1 are known)"},
      {{0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 9}, 17,
       "value: unknown transaction status 9 (0 to 7 are known)"},
      {{0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, 12,
       "value: transaction timeout needs 4 bytes, 0 left"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *root = t_mkdtemp("txnstate-bad");
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/__transaction_state-4", root);
    assert_int_equal(mkdir(dir, 0755), 0);
    kw_options o = {1 << 20, 4096, 0, KL_CODEC_NONE};
    kw_writer *w = kw_open(dir, &o);
    assert_non_null(w);
    static const uint8_t key[] = {0, 0, 0, 1, 't'};
    kl_rec_in in[2] = {
        {.timestamp = 1, .key = key, .key_len = 5, .value = NULL, .value_len = -1},
        {.timestamp = 2, .key = key, .key_len = 5, .value = cases[i].value,
         .value_len = cases[i].n},
    };
    assert_int_equal(kw_append(w, NULL, in, 2), 0);
    assert_int_equal(kw_close(w), 0);
    sqlite3 *db = st_open();
    static const char *tables[] = {"kafka_transactions", "kafka_transaction_log",
                                   "kafka_hanging_transactions"};
    for (int t = 0; t < 3; t++) {
      char sql[200], want[4600];
      snprintf(sql, sizeof sql, "SELECT * FROM %s(?1)", tables[t]);
      st_buf b = {0};
      st_render(db, st_prep(db, sql, "t", root), &b);
      snprintf(want, sizeof want, "ERROR %d: %s: %s: record at offset 1: %s\n", SQLITE_CORRUPT,
               tables[t], dir, cases[i].why);
      assert_string_equal(b.p, want);
      st_buf_free(&b);
    }
    st_close(db);
    t_rmdir(root);
    free(root);
  }
}

static void test_errors(void **state) {
  sqlite3 *db = st_open();
  static const char *tables[] = {"kafka_transactions", "kafka_transaction_log",
                                 "kafka_producers", "kafka_hanging_transactions"};
  for (int t = 0; t < 4; t++) {
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT * FROM %s", tables[t]);
    char *msg = st_expect_rc(db, sql, SQLITE_ERROR);
    assert_non_null(strstr(msg, "a path is required"));
    free(msg);
    snprintf(sql, sizeof sql, "SELECT * FROM %s('/nonexistent/kafka-data')", tables[t]);
    free(st_expect_rc(db, sql, SQLITE_CANTOPEN));
  }
  /* A log directory without __transaction_state: no states. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_transactions(?1)", "t",
                          KL_FIXTURES "/broker"), 0);
  st_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_transactions),
      cmocka_unit_test(test_history),
      cmocka_unit_test(test_producers),
      cmocka_unit_test(test_producers_below_log_start),
      cmocka_unit_test(test_hanging),
      cmocka_unit_test(test_two_log_dirs),
      cmocka_unit_test(test_coordinator_partition),
      cmocka_unit_test(test_corrupt),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
