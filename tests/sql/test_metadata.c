/*
** test_metadata.c - KRaft's metadata partition and replica state as SQL:
** kafka_metadata over tests/fixtures/kraft (a snapshot, then a log whose
** older records are gone) row by row; the image tables at the end, at
** offsets and at times, checked value by value and against a replay of
** tests/fixtures/kraft-full (the same history, all of it in the log) at
** every offset; topic ids joined with partition.metadata; leader epoch
** chains; kafka_replica_diff on tests/fixtures/replicas; and damage named
** by file and position or offset.
*/
#include "sqltest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KRAFT KL_FIXTURES "/kraft"
#define FULL KL_FIXTURES "/kraft-full"
#define REPLICAS KL_FIXTURES "/replicas"

static void expect_text(sqlite3 *db, const char *want, const char *sql, const char *fmt, ...) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare: %s\n  in: %s", sqlite3_errmsg(db), sql);
  va_list ap;
  va_start(ap, fmt);
  st_vbind(st, fmt, ap);
  va_end(ap);
  /* rows as lines "a|b|c", text unquoted, NULL as NULL */
  st_buf b = {0};
  int rc, ncol = sqlite3_column_count(st);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int c = 0; c < ncol; c++) {
      const char *t = (const char *)sqlite3_column_text(st, c);
      st_buf_printf(&b, "%s%s", c ? "|" : "", t ? t : "NULL");
    }
    st_buf_printf(&b, "\n");
  }
  if (rc != SQLITE_DONE) st_buf_printf(&b, "ERROR %d: %s\n", rc, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  if (strcmp(b.p ? b.p : "", want) != 0) fail_msg("got:\n%s\nwant:\n%s\n  in: %s", b.p, want, sql);
  st_buf_free(&b);
}

static void test_records(void **state) {
  sqlite3 *db = st_open();
  /* 8 records in the snapshot, 16 in the log; the LeaderChange control
  ** record at 14 and the snapshot's header and footer are not rows */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_metadata(?)", "t", KRAFT), 24);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_metadata(?) WHERE snapshot = 10", "t", KRAFT), 8);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_metadata(?) WHERE offset = 14", "t", KRAFT), 0);
  /* the log's path form: the directory holding __cluster_metadata-0, or it */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_metadata(?)", "t",
                          KRAFT "/__cluster_metadata-0"), 24);
  /* each common type, in each version the fixture holds */
  expect_text(db,
              "ConfigRecord|0|3\nFeatureLevelRecord|0|2\nPartitionChangeRecord|0,1,2|5\n"
              "PartitionRecord|0,1,2|4\nProducerIdsRecord|0|2\nRegisterBrokerRecord|1,2,3|3\n"
              "RemoveTopicRecord|0|1\nTopicRecord|0|2\n",
              "SELECT type, group_concat(DISTINCT version), count(*) FROM "
              "(SELECT * FROM kafka_metadata(?) ORDER BY version) WHERE type IS NOT NULL "
              "GROUP BY type ORDER BY type", "t", KRAFT);
  expect_text(db, "10|1700000010000|1|5|0|{\"PartitionId\":0,\"TopicId\":\"tJ6ZlKKQEIRjbGVfdG9waQ\",\"Isr\":[1]}|NULL|NULL\n",
              "SELECT offset, timestamp, leader_epoch, api_key, version, record, raw, snapshot "
              "FROM kafka_metadata(?) WHERE offset = 10 AND snapshot IS NULL", "t", KRAFT);
  /* api keys and versions the specs lack: rows with the bytes */
  expect_text(db, "21|NULL|99|0|NULL|016300010203\n22|NULL|2|7|NULL|01020700\n",
              "SELECT offset, type, api_key, version, record, raw FROM kafka_metadata(?) "
              "WHERE raw IS NOT NULL", "t", KRAFT);
  /* spec field names, nested structs, tagged fields, a tag the spec lacks */
  expect_text(db, "broker2|9092|rack-b|[\"ZGlyZWN0b3J5LTAwMDAwMQ\"]\n",
              "SELECT record->>'$.EndPoints[0].Host', record->>'$.EndPoints[0].Port', "
              "record->>'$.Rack', record->>'$.LogDirs' FROM kafka_metadata(?) "
              "WHERE type = 'RegisterBrokerRecord' AND version = 3", "t", KRAFT);
  expect_text(db, "ab|1|NULL\n",
              "SELECT record->>'$._tag9', record->>'$.IsMigratingZkBroker', record->>'$.LogDirs' "
              "FROM kafka_metadata(?) WHERE type = 'RegisterBrokerRecord' AND version = 2", "t", KRAFT);
  expect_text(db, "1|[]|[2]\n",
              "SELECT record->>'$.LeaderRecoveryState', record->>'$.EligibleLeaderReplicas', "
              "record->>'$.LastKnownElr' FROM kafka_metadata(?) "
              "WHERE type = 'PartitionChangeRecord' AND version = 2", "t", KRAFT);
  /* every record is valid JSON */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_metadata(?) WHERE json_valid(record)", "t",
                          KRAFT), 22);
  char *m = st_expect_rc(db, "SELECT * FROM kafka_metadata", SQLITE_ERROR);
  assert_non_null(strstr(m, "a path is required"));
  free(m);
  m = st_expect_rc(db, "SELECT * FROM kafka_metadata('" REPLICAS "')", SQLITE_CANTOPEN);
  assert_non_null(strstr(m, "neither a metadata partition"));
  free(m);
  st_close(db);
}

static void test_image(void **state) {
  sqlite3 *db = st_open();
  expect_text(db, "orders|tJ6ZlKKQEIRjbGVfdG9waQ|3|{\"retention.ms\":\"86400000\"}|NULL|26\n",
              "SELECT name, topic_id, partitions, configs, record_offset, as_of_offset "
              "FROM kafka_topics(?)", "t", KRAFT);
  expect_text(db,
              "orders|0|2|4|7|[1,2]|[2]|[]|NULL|0|15\n"
              "orders|1|1|2|3|[2,1]|[1]|[]|[]|1|20\n"
              "orders|2|2|2|2|[2,1]|[2,1]|[3]|NULL|0|26\n",
              "SELECT topic, partition, leader, leader_epoch, partition_epoch, replicas, isr, "
              "removing_replicas, eligible_leader_replicas, leader_recovery_state, record_offset "
              "FROM kafka_partitions_metadata(?)", "t", KRAFT);
  /* at offset 12: payments exists (no partition yet), cleanup.policy too */
  expect_text(db,
              "orders|2|{\"cleanup.policy\":\"compact\",\"retention.ms\":\"86400000\"}|12\n"
              "payments|0|{}|12\n",
              "SELECT name, partitions, configs, as_of_offset FROM kafka_topics(?) "
              "WHERE as_of_offset = 12", "t", KRAFT);
  /* at offset 9: the snapshot alone */
  expect_text(db, "orders|0|1|3|[1,2]|NULL\norders|1|2|1|[2]|NULL\n",
              "SELECT topic, partition, leader, leader_epoch, isr, record_offset "
              "FROM kafka_partitions_metadata(?) WHERE as_of_offset = 9", "t", KRAFT);
  /* at a time: records stamped at or before it */
  expect_text(db, "orders|0|2|4|1700000015000\norders|1|2|1|1700000015000\npayments|0|1|0|1700000015000\n",
              "SELECT topic, partition, leader, leader_epoch, as_of_time "
              "FROM kafka_partitions_metadata(?) WHERE as_of_time = 1700000015000", "t", KRAFT);
  /* an IN list: each image asked in turn */
  expect_text(db, "9|2\n12|2\n13|3\n",
              "SELECT as_of_offset, count(*) FROM kafka_partitions_metadata(?) "
              "WHERE as_of_offset IN (9, 12, 13) GROUP BY 1 ORDER BY 1", "t", KRAFT);
  /* before the log start and every snapshot: gone, said so */
  char *m = st_expect_rc(db, "SELECT * FROM kafka_topics('" KRAFT "') WHERE as_of_offset = 8",
                         SQLITE_ERROR);
  assert_non_null(strstr(m, "the log starts at offset 10 and its oldest snapshot ends at offset 10"));
  free(m);
  m = st_expect_rc(db, "SELECT * FROM kafka_topics('" KRAFT "') WHERE as_of_offset = 'x'",
                   SQLITE_MISMATCH);
  free(m);
  /* the same history replayed from offset 0 of a log: the same image */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_metadata(?) WHERE snapshot IS NULL", "t",
                          FULL), 26);
  assert_int_equal(st_int(db,
      "WITH RECURSIVE o(x) AS (SELECT 9 UNION ALL SELECT x + 1 FROM o WHERE x < 30), "
      "img(d, x, row) AS ("
      " SELECT 'k', o.x, topic||':'||partition||':'||leader||':'||leader_epoch||':'||partition_epoch"
      "  ||':'||replicas||':'||isr||':'||removing_replicas||':'||adding_replicas||':'"
      "  ||ifnull(eligible_leader_replicas,'-')||':'||ifnull(last_known_elr,'-')||':'"
      "  ||leader_recovery_state FROM o, kafka_partitions_metadata(?1) p WHERE p.as_of_offset = o.x"
      " UNION ALL"
      " SELECT 'f', o.x, topic||':'||partition||':'||leader||':'||leader_epoch||':'||partition_epoch"
      "  ||':'||replicas||':'||isr||':'||removing_replicas||':'||adding_replicas||':'"
      "  ||ifnull(eligible_leader_replicas,'-')||':'||ifnull(last_known_elr,'-')||':'"
      "  ||leader_recovery_state FROM o, kafka_partitions_metadata(?2) p WHERE p.as_of_offset = o.x) "
      "SELECT count(*) FROM (SELECT x, row FROM img GROUP BY x, row HAVING count(DISTINCT d) = 1)",
      "tt", KRAFT, FULL), 0);
  /* one topic at 9..11 and from 17 on, two at 12..16: whatever the plan */
  assert_int_equal(st_int(db,
      "WITH RECURSIVE o(x) AS (SELECT 9 UNION ALL SELECT x + 1 FROM o WHERE x < 30) "
      "SELECT count(*) FROM o, kafka_topics(?) t WHERE t.as_of_offset = o.x", "t", KRAFT), 27);
  st_close(db);
}

static void test_topic_id_join(void **state) {
  sqlite3 *db = st_open();
  expect_text(db, "orders|0|3\norders|1|3\norders|2|3\n",
              "SELECT p.topic, p.partition, t.partitions FROM kafka_partitions(?1) p "
              "JOIN kafka_topics(?2) t ON t.topic_id = kafka_topic_id(p.dir) AND t.name = p.topic",
              "tt", KL_FIXTURES "/broker", KRAFT);
  char *tmp = t_mkdtemp("topicid");
  char f[600];
  snprintf(f, sizeof f, "%s/partition.metadata", tmp);
  assert_int_equal(st_int(db, "SELECT kafka_topic_id(?) IS NULL", "t", tmp), 1);
  assert_int_equal(t_write_file(f, "version: 1\ntopic_id: tJ6ZlKKQEIRjbGVfdG9waQ\n", 44), 0);
  sqlite3_stmt *st = st_prep(db, "SELECT kafka_topic_id(?)", "t", tmp);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "partition.metadata: malformed"));
  sqlite3_finalize(st);
  t_rmdir(tmp);
  free(tmp);
  st_close(db);
}

static void test_leader_epochs(void **state) {
  sqlite3 *db = st_open();
  expect_text(db, "orders|0|1|0|3|3\norders|0|2|3|6|4\norders|0|3|6|8|5\norders|0|4|8|NULL|6\n",
              "SELECT topic, partition, epoch, start_offset, end_offset, line "
              "FROM kafka_leader_epochs(?)", "t", REPLICAS "/b");
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_leader_epochs(?) WHERE topic = 'orders'",
                          "t", KL_FIXTURES "/broker"), 3);
  char *tmp = t_mkdtemp("epochs");
  char dir[600], f[700];
  snprintf(dir, sizeof dir, "%s/orders-0", tmp);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(REPLICAS "/a/orders-0", dir), 0);
  snprintf(f, sizeof f, "%s/leader-epoch-checkpoint", dir);
  /* an entry going back: Kafka's cache drops what it contradicts */
  assert_int_equal(t_write_file(f, "0\n3\n1 0\n5 6\n3 4\n", 16), 0);
  expect_text(db, "1|0|4|3\n3|4|NULL|5\n", "SELECT epoch, start_offset, end_offset, line "
              "FROM kafka_leader_epochs(?)", "t", dir);
  assert_int_equal(t_write_file(f, "0\n2\n1 0 7\n", 10), 0);
  sqlite3_stmt *st = st_prep(db, "SELECT * FROM kafka_leader_epochs(?)", "t", dir);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db),
                         "leader-epoch-checkpoint:3: malformed entry (expected <leader epoch> <start offset>)"));
  sqlite3_finalize(st);
  t_rmdir(tmp);
  free(tmp);
  st_close(db);
}

/* The detail of EXPLAIN QUERY PLAN's one line for sql, bound to a and b
** (b may be NULL). */
static void expect_plan(sqlite3 *db, const char *want, const char *sql, const char *a,
                        const char *b) {
  sqlite3_stmt *st = st_prep(db, sql, b ? "tt" : "t", a, b);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_string_equal((const char *)sqlite3_column_text(st, 3), want);
  assert_int_equal(sqlite3_step(st), SQLITE_DONE);
  sqlite3_finalize(st);
}

/* The plan names what it reads in argv order, as EXPLAIN QUERY PLAN
** shows it; idxNum carries no argv. */
static void test_image_plans(void **state) {
  sqlite3 *db = st_open();
  expect_plan(db, "SCAN kafka_topics VIRTUAL TABLE INDEX 0:dir=? as_of_offset=?",
              "EXPLAIN QUERY PLAN SELECT * FROM kafka_topics(?) WHERE as_of_offset = 12", KRAFT,
              NULL);
  expect_plan(db, "SCAN kafka_partitions_metadata VIRTUAL TABLE INDEX 0:dir=? as_of_offset=? "
              "as_of_time=?",
              "EXPLAIN QUERY PLAN SELECT * FROM kafka_partitions_metadata(?) "
              "WHERE as_of_time = 1700000015000 AND as_of_offset = 13", KRAFT, NULL);
  expect_plan(db, "SCAN kafka_replica_diff VIRTUAL TABLE INDEX 0:dir_a=? dir_b=?",
              "EXPLAIN QUERY PLAN SELECT * FROM kafka_replica_diff(?, ?)", REPLICAS "/a",
              REPLICAS "/b");
  st_close(db);
}

static void test_replica_diff(void **state) {
  sqlite3 *db = st_open();
  const char *want = "orders|0|diverged|8|NULL|12|14|3|4|4|6|b|3|8|4\n";
  const char *cols = "SELECT topic, partition, status, first_diff_offset, epoch_diff_offset, "
                     "a_log_end_offset, b_log_end_offset, a_leader_epoch, b_leader_epoch, "
                     "a_records_past, b_records_past, kept, common_epoch, truncate_to, records_lost "
                     "FROM kafka_replica_diff(?, ?)";
  expect_text(db, want, cols, "tt", REPLICAS "/a/orders-0", REPLICAS "/b/orders-0");
  expect_text(db, want, cols, "tt", REPLICAS "/a", REPLICAS "/b");
  expect_text(db, "orders|0|identical|NULL|NULL|12|12|3|3|0|0|NULL|3|12|0\n", cols, "tt",
              REPLICAS "/a", REPLICAS "/a");
  /* the records a would lose, read with kafka_log */
  assert_int_equal(st_int(db,
      "SELECT count(*) FROM kafka_replica_diff(?1, ?2) d, kafka_log l "
      "WHERE l.dir = d.a_dir AND l.offset >= d.truncate_to", "tt",
      REPLICAS "/a", REPLICAS "/b"), 4);
  /* log directories that share no partition */
  char *tmp = t_mkdtemp("nodiff");
  char dir[600];
  snprintf(dir, sizeof dir, "%s/clicks-0", tmp);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(REPLICAS "/a/orders-0", dir), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_replica_diff(?, ?)", "tt", REPLICAS "/a",
                          tmp), 0);
  t_rmdir(tmp);
  free(tmp);
  char *m = st_expect_rc(db, "SELECT * FROM kafka_replica_diff", SQLITE_ERROR);
  assert_non_null(strstr(m, "two paths are required"));
  free(m);
  st_close(db);
}

static void test_damage_named(void **state) {
  sqlite3 *db = st_open();
  char *tmp = t_mkdtemp("kraftdmg");
  char dir[600], snap[700], log[700];
  snprintf(dir, sizeof dir, "%s/__cluster_metadata-0", tmp);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(KRAFT "/__cluster_metadata-0", dir), 0);
  snprintf(snap, sizeof snap, "%s/00000000000000000010-0000000001.checkpoint", dir);
  snprintf(log, sizeof log, "%s/00000000000000000010.log", dir);
  /* a snapshot byte flipped: its CRC */
  t_flip(snap, 120, 0x01);
  sqlite3_stmt *st = st_prep(db, "SELECT count(*) FROM kafka_topics(?)", "t", tmp);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "00000000000000000010-0000000001.checkpoint: position"));
  sqlite3_finalize(st);
  t_flip(snap, 120, 0x01);
  /* the first log record (a PartitionChangeRecord: 1, 5, 0, ...) made a
  ** TopicRecord, its batch's CRC fixed: bytes Kafka would not read, named
  ** by offset */
  size_t n;
  uint8_t *b = t_read_file(log, &n);
  int64_t size = 12 + (int64_t)kl_get_u32(b + 8);
  size_t at = 0;
  for (size_t i = 61; i + 2 < (size_t)size; i++) {
    if (b[i] == 1 && b[i + 1] == 5 && b[i + 2] == 0) {
      at = i;
      break;
    }
  }
  free(b);
  assert_true(at > 0);
  uint8_t two = 2;
  t_poke(log, (int64_t)at + 1, &two, 1);
  t_fix_crc(log, 0, size);
  st = st_prep(db, "SELECT count(*) FROM kafka_partitions_metadata(?)", "t", tmp);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "__cluster_metadata-0: record at offset 10: value: "));
  sqlite3_finalize(st);
  st = st_prep(db, "SELECT count(*) FROM kafka_metadata(?)", "t", tmp);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "record at offset 10: value: "));
  sqlite3_finalize(st);
  /* the records below the log start, only in the snapshot, which is gone */
  assert_int_equal(unlink(snap), 0);
  st = st_prep(db, "SELECT count(*) FROM kafka_topics(?)", "t", tmp);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "the log starts at offset 10 and no snapshot holds"));
  sqlite3_finalize(st);
  st_close(db);
  t_rmdir(tmp);
  free(tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_records),
      cmocka_unit_test(test_image),
      cmocka_unit_test(test_topic_id_join),
      cmocka_unit_test(test_leader_epochs),
      cmocka_unit_test(test_image_plans),
      cmocka_unit_test(test_replica_diff),
      cmocka_unit_test(test_damage_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
