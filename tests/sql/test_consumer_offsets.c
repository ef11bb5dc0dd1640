/*
** test_consumer_offsets.c - kafka_consumer_offsets: a log directory written here
** holding __consumer_offsets-0, __consumer_offsets-1 (records whose keys
** and values are encoded by hand from Kafka's schemas: commits of every
** value version, later commits of the same key, a tombstone, group
** metadata and KIP-848 records) and an ordinary orders-0; the exact rows,
** their order, the log start offset, the path forms (replicas in two log
** directories among them), a lag query joining kafka_log, and corrupt
** records named by directory and offset.
*/
#include "sqltest.h"

#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "codec.h"
#include "kwriter.h"

/* ---- records encoded by hand (big-endian, as the schemas lay them out) ---- */

static t_bytes commit_key(int version, const char *group, const char *topic, int32_t part) {
  t_bytes t = {0};
  t_be16(&t, version);
  t_str(&t, group);
  t_str(&t, topic);
  t_be32(&t, part);
  return t;
}

static t_bytes group_key(const char *group) {
  t_bytes t = {0};
  t_be16(&t, 2);
  t_str(&t, group);
  return t;
}

/* Versions 0..3: metadata a string; expire only in 1; leader epoch from 3. */
static t_bytes value(int version, int64_t offset, int32_t epoch, const char *meta, int64_t ts,
                int64_t expire) {
  t_bytes t = {0};
  t_be16(&t, version);
  t_be64(&t, offset);
  if (version >= 3) t_be32(&t, epoch);
  if (version == 4) t_cstr(&t, meta);
  else t_str(&t, meta);
  t_be64(&t, ts);
  if (version == 1) t_be64(&t, expire);
  if (version == 4) { /* one tagged field: tag 7, 2 bytes */
    t_u8(&t, 1);
    t_u8(&t, 7);
    t_u8(&t, 2);
    t_u8(&t, 0xab);
    t_u8(&t, 0xcd);
  }
  return t;
}

static const t_bytes tombstone = {.null = 1};

typedef struct rec {
  t_bytes key, value;
} rec;

/* A partition directory under root holding recs, in batches of per_batch. */
static void write_partition(const char *root, const char *name, const rec *recs, int n,
                            int per_batch) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", root, name);
  assert_int_equal(mkdir(dir, 0755), 0);
  kw_options o = {1 << 20, 4096, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  for (int i = 0; i < n; i += per_batch) {
    kl_rec_in in[16];
    int k = n - i < per_batch ? n - i : per_batch;
    assert_true(k <= 16);
    for (int j = 0; j < k; j++) {
      const rec *r = &recs[i + j];
      in[j] = (kl_rec_in){.timestamp = 1700000000000LL + i + j,
                          .key = r->key.b, .key_len = (int32_t)r->key.n,
                          .value = r->value.null ? NULL : r->value.b,
                          .value_len = r->value.null ? -1 : (int32_t)r->value.n};
    }
    assert_int_equal(kw_append(w, NULL, in, k), 0);
  }
  assert_int_equal(kw_close(w), 0);
}

/* orders-0: n ordinary records (keys and values no decoder would accept). */
static void write_orders(const char *root, int n) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/orders-0", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  kw_options o = {1 << 20, 4096, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  for (int i = 0; i < n; i += 10) {
    kl_rec_in in[10];
    for (int j = 0; j < 10; j++) {
      in[j] = (kl_rec_in){.timestamp = 1700000000000LL + i + j, .key = "k", .key_len = 1,
                          .value = "an order", .value_len = 8};
    }
    assert_int_equal(kw_append(w, NULL, in, 10), 0);
  }
  assert_int_equal(kw_close(w), 0);
}

/* The two __consumer_offsets partitions under root: the first n0 records
** of partition 0, and partition 1 with, when more is set, one record
** after them (a tombstone of analytics/orders/1). */
static void write_offsets(const char *root, int n0, int more) {
  t_bytes gv = {0}; /* a group metadata value: its bytes are never read */
  t_be16(&gv, 3);
  t_str(&gv, "consumer");
  rec p0[] = {
      {group_key("billing"), gv},
      {commit_key(1, "billing", "orders", 0), value(1, 10, -1, "", 1000, 2000)},
      {commit_key(1, "billing", "orders", 0), value(3, 15, 4, "m1", 1100, -1)},
      {commit_key(0, "billing", "orders", 1), value(2, 7, -1, "x", 1200, -1)},
      {commit_key(1, "billing", "orders", 0), value(4, 20, 5, "m2", 1300, -1)},
      {commit_key(1, "billing", "payments", 0), value(0, 3, -1, "p", 1400, -1)},
      {commit_key(1, "billing", "payments", 0), tombstone},
      {{{0x00, 0x04, 0x00, 0x02, 'c', 'g'}, 6, 0}, {{0x00, 0x00, 0xff}, 3, 0}}, /* KIP-848, type 4 */
      {group_key("gone"), tombstone},
  };
  rec p1[] = {
      {commit_key(1, "analytics", "clicks", 0), value(3, 1, -1, "c", 1900, -1)},
      {commit_key(1, "analytics", "orders", 0), value(3, 100, -1, "", 2000, -1)},
      {commit_key(1, "analytics", "orders", 0), value(4, 120, 2, NULL, 2100, -1)},
      {commit_key(1, "analytics", "orders", 1), value(1, 50, -1, "a", 2200, 9999)},
      {commit_key(1, "analytics", "orders", 1), tombstone},
  };
  assert_true(n0 <= (int)(sizeof p0 / sizeof p0[0]));
  write_partition(root, "__consumer_offsets-0", p0, n0, 3);
  write_partition(root, "__consumer_offsets-1", p1, more ? 5 : 4, 1);
}

/* The log directory of most tests below (caller removes it). */
static char *make_logdir(void) {
  char *root = t_mkdtemp("offsets");
  write_offsets(root, 9, 0);
  write_orders(root, 200);
  return root;
}

static const char *const all_rows =
    "'analytics'|'clicks'|0|1|NULL|'c'|1900|NULL|1|0\n"
    "'analytics'|'orders'|0|120|2|NULL|2100|NULL|1|2\n"
    "'analytics'|'orders'|1|50|NULL|'a'|2200|9999|1|3\n"
    "'billing'|'orders'|0|20|5|'m2'|1300|NULL|0|4\n"
    "'billing'|'orders'|1|7|NULL|'x'|1200|NULL|0|3\n";

static void assert_rows(sqlite3 *db, const char *want, const char *sql, const char *arg) {
  st_buf b = {0};
  st_render(db, st_prep(db, sql, "t", arg), &b);
  char lx[512], ly[512];
  long line = st_first_diff(b.p, want, lx, ly, sizeof lx);
  if (line) fail_msg("line %ld:\n  got  %s\n  want %s\nall:\n%s", line, lx, ly, b.p);
  st_buf_free(&b);
}

static void test_rows(void **state) {
  char *root = make_logdir();
  sqlite3 *db = st_open();
  assert_rows(db, all_rows, "SELECT * FROM kafka_consumer_offsets(?1)", root);
  /* The declared columns, path hidden. */
  assert_rows(db,
              "'group_id'|'TEXT'|0\n'topic'|'TEXT'|0\n'partition'|'INTEGER'|0\n"
              "'committed_offset'|'INTEGER'|0\n'leader_epoch'|'INTEGER'|0\n"
              "'metadata'|'TEXT'|0\n'commit_timestamp'|'INTEGER'|0\n"
              "'expire_timestamp'|'INTEGER'|0\n'offsets_partition'|'INTEGER'|0\n"
              "'record_offset'|'INTEGER'|0\n'path'|''|1\n",
              "SELECT name, type, hidden FROM pragma_table_xinfo('kafka_consumer_offsets')"
              " WHERE ?1 IS NOT NULL", root);
  assert_rows(db, "'text'|'integer'|'null'|'text'\n",
              "SELECT typeof(group_id), typeof(committed_offset), typeof(metadata), typeof(path)"
              " FROM kafka_consumer_offsets(?1) WHERE topic = 'orders' AND partition = 0"
              " AND group_id = 'analytics'", root);
  /* The order is consumed; other orders SQLite sorts. */
  sqlite3_stmt *st = st_prep(db,
      "EXPLAIN QUERY PLAN SELECT * FROM kafka_consumer_offsets(?1)"
      " ORDER BY group_id, topic, partition", "t", root);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *d = (const char *)sqlite3_column_text(st, 3);
    print_message("  plan: %s\n", d);
    assert_null(strstr(d, "TEMP B-TREE"));
  }
  sqlite3_finalize(st);
  assert_rows(db, "'billing'|'orders'|1\n'billing'|'orders'|0\n",
              "SELECT group_id, topic, partition FROM kafka_consumer_offsets(?1)"
              " WHERE group_id = 'billing' ORDER BY partition DESC", root);
  /* One partition directory given alone; an ordinary one holds none. */
  char path[4200];
  snprintf(path, sizeof path, "%s/__consumer_offsets-0", root);
  assert_rows(db,
              "'billing'|'orders'|0|20|5|'m2'|1300|NULL|0|4\n"
              "'billing'|'orders'|1|7|NULL|'x'|1200|NULL|0|3\n",
              "SELECT * FROM kafka_consumer_offsets(?1)", path);
  snprintf(path, sizeof path, "%s/orders-0", root);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_consumer_offsets(?1)", "t", path), 0);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* Consumer lag: the log end offset of each committed partition minus the
** commit. */
static void test_lag(void **state) {
  char *root = make_logdir();
  sqlite3 *db = st_open();
  assert_rows(db, "'analytics'|80\n'billing'|180\n",
              "SELECT o.group_id, (SELECT max(offset) + 1 FROM kafka_log(o.path || '/' || o.topic"
              " || '-' || o.partition)) - o.committed_offset"
              " FROM kafka_consumer_offsets(?1) o WHERE o.topic = 'orders' AND o.partition = 0",
              root);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* Log directories of two brokers holding replicas of both partitions, one
** behind on partition 0, the other ahead on partition 1: the most advanced
** record of each key wins, whichever directory holds it. */
static void test_replicas(void **state) {
  char *a = make_logdir();
  char *b = t_mkdtemp("offsets-replica");
  write_offsets(b, 3, 1);
  char path[8400];
  snprintf(path, sizeof path, "%s,%s", b, a);
  sqlite3 *db = st_open();
  static const char *const want =
      "'analytics'|'clicks'|0|1|NULL|'c'|1900|NULL|1|0\n"
      "'analytics'|'orders'|0|120|2|NULL|2100|NULL|1|2\n"
      "'billing'|'orders'|0|20|5|'m2'|1300|NULL|0|4\n"
      "'billing'|'orders'|1|7|NULL|'x'|1200|NULL|0|3\n";
  assert_rows(db, want, "SELECT * FROM kafka_consumer_offsets(?1)", path);
  snprintf(path, sizeof path, "%s,%s", a, b);
  assert_rows(db, want, "SELECT * FROM kafka_consumer_offsets(?1)", path);
  st_close(db);
  t_rmdir(a);
  t_rmdir(b);
  free(a);
  free(b);
}

/* Records below the log start offset are deleted: not folded. */
static void test_log_start(void **state) {
  char *root = make_logdir();
  char path[4200];
  snprintf(path, sizeof path, "%s/log-start-offset-checkpoint", root);
  const char *ck = "0\n1\n__consumer_offsets 1 2\n";
  assert_int_equal(t_write_file(path, ck, strlen(ck)), 0);
  sqlite3 *db = st_open();
  assert_rows(db,
              "'analytics'|'orders'|0|120|2|NULL|2100|NULL|1|2\n"
              "'analytics'|'orders'|1|50|NULL|'a'|2200|9999|1|3\n"
              "'billing'|'orders'|0|20|5|'m2'|1300|NULL|0|4\n"
              "'billing'|'orders'|1|7|NULL|'x'|1200|NULL|0|3\n",
              "SELECT * FROM kafka_consumer_offsets(?1)", root);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* A kafkalog writer's retention moves the log start in the partition's
** commit record first and in the log directory's checkpoint after; a stop
** between the two (the checkpoint removed here) leaves the commit record
** ahead, and the records below its start are deleted all the same: the
** commit of billing/orders/1 at offset 3 is gone, as kafka_log and
** kafka_partitions agree. */
static void test_log_start_commit_record(void **state) {
  char *root = make_logdir();
  char dir[4200], ck[4200];
  snprintf(dir, sizeof dir, "%s/__consumer_offsets-0", root);
  snprintf(ck, sizeof ck, "%s/log-start-offset-checkpoint", root);
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE w USING kafka_log(%Q, mode='write')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  st_exec(db, "DELETE FROM w WHERE offset < 4");
  st_exec(db, "DROP TABLE w");
  assert_int_equal(unlink(ck), 0);
  assert_int_equal(st_int(db, "SELECT min(offset) FROM kafka_log(?1)", "t", dir), 4);
  assert_int_equal(st_int(db, "SELECT log_start_offset FROM kafka_partitions(?1)"
                              " WHERE topic = '__consumer_offsets' AND partition = 0", "t", root), 4);
  assert_rows(db,
              "'analytics'|'clicks'|0|1|NULL|'c'|1900|NULL|1|0\n"
              "'analytics'|'orders'|0|120|2|NULL|2100|NULL|1|2\n"
              "'analytics'|'orders'|1|50|NULL|'a'|2200|9999|1|3\n"
              "'billing'|'orders'|0|20|5|'m2'|1300|NULL|0|4\n",
              "SELECT * FROM kafka_consumer_offsets(?1)", root);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* Offsets committed inside transactions (TxnOffsetCommit): those of a
** committed transaction count, those of an aborted one or of one still
** open do not, as the group coordinator applies them only at COMMIT. */
static void test_transactional(void **state) {
  char *root = t_mkdtemp("offsets-txn");
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/__consumer_offsets-0", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  kw_options o = {1 << 20, 4096, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  for (int i = 0; i < 4; i++) {
    t_bytes k = commit_key(1, "g", "t", i), v = value(3, 10 * (i + 1), 0, "", 1000 + i, 0);
    kl_rec_in in = {.timestamp = 1700000000000LL + i, .key = k.b, .key_len = (int32_t)k.n,
                    .value = v.b, .value_len = (int32_t)v.n};
    kl_batch_spec spec = {.leader_epoch = 0, .producer_id = 4 + i, .producer_epoch = 0,
                          .base_sequence = 0, .transactional = i > 0};
    assert_int_equal(kw_append(w, i > 0 ? &spec : NULL, &in, 1), 0);
    if (i == 1) assert_int_equal(kw_append_marker(w, 5, 1), 0); /* COMMIT */
    if (i == 2) assert_int_equal(kw_append_marker(w, 6, 0), 0); /* ABORT */
  }
  assert_int_equal(kw_close(w), 0); /* producer 7's transaction is still open */
  sqlite3 *db = st_open();
  assert_rows(db, "'g'|'t'|0|10\n'g'|'t'|1|20\n",
              "SELECT group_id, topic, partition, committed_offset FROM kafka_consumer_offsets(?1)", root);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 4);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* A record Kafka would not read fails the query, naming the partition
** directory and the record's offset. */
static void test_corrupt(void **state) {
  static const struct {
    rec bad;
    const char *why;
  } cases[] = {
      {{{{0x00, 0x01, 0x00, 0x01, 'g', 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x01}, 12, 0},
        {{0x00, 0x09, 0, 0, 0, 0, 0, 0, 0, 1, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 2}, 20, 0}},
       "value: unknown offset commit version 9 (0 to 4 are known)"},
      {{{{0x00, 0x01, 0x00, 0x01, 'g', 0x00, 0x01, 't', 0x00, 0x00, 0x00, 0x01}, 12, 0},
        {{0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x00, 0x40, 'm'}, 17, 0}},
       "value: metadata needs 64 bytes, 1 left"},
      {{{{0x00, 0x00, 0x00, 0x05, 'g'}, 5, 0}, {{0}, 0, 1}}, "key: group needs 5 bytes, 1 left"},
      {{{{0x00}, 1, 0}, {{0}, 0, 1}}, "key: type needs 2 bytes, 1 left"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *root = t_mkdtemp("offsets-bad");
    rec recs[3] = {
        {commit_key(1, "g", "t", 0), value(3, 1, 0, "", 1, -1)},
        {commit_key(1, "g", "t", 0), value(3, 2, 0, "", 2, -1)},
        cases[i].bad,
    };
    write_partition(root, "__consumer_offsets-3", recs, 3, 2);
    sqlite3 *db = st_open();
    st_buf b = {0};
    st_render(db, st_prep(db, "SELECT * FROM kafka_consumer_offsets(?1)", "t", root), &b);
    char want[1024];
    snprintf(want, sizeof want,
             "ERROR %d: kafka_consumer_offsets: %s/__consumer_offsets-3: record at offset 2: %s\n",
             SQLITE_CORRUPT, root, cases[i].why);
    assert_string_equal(b.p, want);
    st_buf_free(&b);
    st_close(db);
    t_rmdir(root);
    free(root);
  }
}

static void test_errors(void **state) {
  sqlite3 *db = st_open();
  sqlite3_stmt *st = st_prep(db, "SELECT * FROM kafka_consumer_offsets(?1)", "t",
                             "/nonexistent/kafka-data");
  assert_int_equal(sqlite3_step(st), SQLITE_CANTOPEN);
  print_message("  %s\n", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  st = st_prep(db, "SELECT * FROM kafka_consumer_offsets", NULL);
  assert_int_equal(sqlite3_step(st), SQLITE_ERROR);
  assert_non_null(strstr(sqlite3_errmsg(db), "a path is required"));
  sqlite3_finalize(st);
  st_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rows),
      cmocka_unit_test(test_lag),
      cmocka_unit_test(test_replicas),
      cmocka_unit_test(test_log_start),
      cmocka_unit_test(test_log_start_commit_record),
      cmocka_unit_test(test_transactional),
      cmocka_unit_test(test_corrupt),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
