/*
** test_key_search.c - key = ? and key IN (...) handled by kafka_log (the
** key's bytes compared in the scan, a TEXT value as its UTF-8), the batch
** key filters a search learns (a repeated search passes over batches that
** cannot hold the key, and a log that changes is read again), WHERE
** partition = kafka_partition_for(...) reading one partition, DISTINCT and
** GROUP BY on topic and partition answered in the listing's order, and
** kafka_partitions' records.  Every answer is compared with SQLite's own
** over a native table of the same rows, or with SQLite's check of the same
** predicate (key || '', offset + 0).
*/
#include "sqltest.h"

#include <sys/stat.h>

#include "fixture.h"
#include "kwriter.h"
#include "partitioner.h"

enum { N_ORDERS = 4, N_RECORDS = 1200, PER_BATCH = 10, N_CUSTOMERS = 60 };

/* The key of record i of the orders topic: "c<n>" for most, a NULL key
** every 13th, an empty key every 17th, bytes that are not UTF-8 (with a
** NUL) every 19th.  *n its length, -1 for NULL. */
static const char *order_key(int i, char *buf, int32_t *n) {
  if (i % 13 == 0) return *n = -1, NULL;
  if (i % 17 == 0) return *n = 0, "";
  if (i % 19 == 0) {
    memcpy(buf, "\xff\x00z", 3);
    *n = 3;
    return buf;
  }
  *n = snprintf(buf, 16, "c%d", i * 7 % N_CUSTOMERS);
  return buf;
}

/* One partition directory <root>/<name>, empty. */
static kw_writer *new_part(const char *root, const char *name) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, name);
  assert_int_equal(mkdir(p, 0755), 0);
  kw_options o = {.segment_bytes = 8192, .index_interval = 1024, .base_offset = 0, .codec = 0};
  kw_writer *w = kw_open(p, &o);
  assert_non_null(w);
  return w;
}

/* Records of partition w from a batch of keys (key_len -1: NULL). */
static void append(kw_writer *w, int n, const char *const *keys, const int32_t *lens, int64_t ts) {
  kl_rec_in r[PER_BATCH];
  char vals[PER_BATCH][32];
  assert_true(n <= PER_BATCH);
  for (int i = 0; i < n; i++) {
    memset(&r[i], 0, sizeof r[i]);
    snprintf(vals[i], sizeof vals[i], "v%lld", (long long)(ts + i));
    r[i].timestamp = 1700000000000 + ts + i;
    r[i].key = keys[i];
    r[i].key_len = lens[i];
    r[i].value = vals[i];
    r[i].value_len = (int32_t)strlen(vals[i]);
  }
  assert_int_equal(kw_append(w, NULL, r, n), 0);
}

/* A log directory: orders-0..3 with N_RECORDS records sent by Kafka's
** default partitioner (records without a key to partition 0), batches of
** PER_BATCH; events-0 with keys c1..c5 and an aborted transaction;
** events-1 holding only a transaction marker, events-2 nothing. */
static char *make_logdir(void) {
  char *root = t_mkdtemp("keys");
  kw_writer *w[N_ORDERS];
  static char bufs[N_ORDERS][PER_BATCH][16];
  const char *keys[N_ORDERS][PER_BATCH];
  int32_t lens[N_ORDERS][PER_BATCH];
  int fill[N_ORDERS] = {0};
  for (int p = 0; p < N_ORDERS; p++) {
    char name[32];
    snprintf(name, sizeof name, "orders-%d", p);
    w[p] = new_part(root, name);
  }
  for (int i = 0; i < N_RECORDS; i++) {
    char buf[16];
    int32_t n;
    const char *k = order_key(i, buf, &n);
    int p = n < 0 ? 0 : kl_partition_for((const uint8_t *)k, (size_t)n, N_ORDERS);
    memcpy(bufs[p][fill[p]], k ? k : "", n > 0 ? (size_t)n : 0);
    keys[p][fill[p]] = n < 0 ? NULL : bufs[p][fill[p]];
    lens[p][fill[p]++] = n;
    if (fill[p] == PER_BATCH || i == N_RECORDS - 1) {
      append(w[p], fill[p], keys[p], lens[p], i * 10);
      fill[p] = 0;
    }
  }
  for (int p = 0; p < N_ORDERS; p++) {
    if (fill[p]) append(w[p], fill[p], keys[p], lens[p], 99999);
    assert_int_equal(kw_close(w[p]), 0);
  }
  kw_writer *e = new_part(root, "events-0");
  for (int b = 0; b < 5; b++) {
    const char *k[PER_BATCH];
    int32_t l[PER_BATCH];
    char kb[PER_BATCH][8];
    for (int i = 0; i < PER_BATCH; i++) {
      snprintf(kb[i], sizeof kb[i], "c%d", 1 + (b + i) % 5);
      k[i] = kb[i];
      l[i] = (int32_t)strlen(kb[i]);
    }
    append(e, PER_BATCH, k, l, b * 100);
  }
  assert_int_equal(kw_append_txn(e, 77, 3), 0);
  assert_int_equal(kw_append_marker(e, 77, 0), 0);
  assert_int_equal(kw_close(e), 0);
  e = new_part(root, "events-1");
  assert_int_equal(kw_append_marker(e, 78, 1), 0);
  assert_int_equal(kw_close(e), 0);
  assert_int_equal(kw_close(new_part(root, "events-2")), 0);
  return root;
}

/* The rows of the log directory in a native table n (keys as BLOBs, as
** kafka_log gives them). */
static void make_native(sqlite3 *db, const char *root) {
  st_run(db, "CREATE TABLE n(topic TEXT, partition INTEGER, offset INTEGER, timestamp INTEGER,"
             " key BLOB, value BLOB, PRIMARY KEY(topic, partition, offset))", NULL);
  st_run(db, "INSERT INTO n SELECT topic, partition, offset, timestamp, key, value"
             " FROM kafka_log(?1)", "t", root);
}

static void expect_plan(sqlite3 *db, const char *sql, const char *dir, const char *want, int has) {
  char *p = st_plan(db, sql, dir);
  if ((strstr(p, want) != NULL) != has) {
    fail_msg("%s:\n%s\n%s \"%s\"", sql, p, has ? "lacks" : "has", want);
  }
  free(p);
}

/* key = and key IN are terms where the key is its bytes; not for a
** decoded key_type, nor under another collation. */
static void test_key_terms_in_plan(void **state) {
  (void)state;
  char *root = make_logdir();
  sqlite3 *db = st_open();
  expect_plan(db, "SELECT * FROM kafka_log(?1) WHERE key = 'c1'", root, "key=?", 1);
  expect_plan(db, "SELECT * FROM kafka_log(?1) WHERE key IN ('c1', x'6332')", root,
              "key IN (...)", 1);
  expect_plan(db, "SELECT * FROM kafka_log(?1) WHERE key = 'c1' AND key_type = 'text'", root,
              "key=?", 1);
  expect_plan(db, "SELECT * FROM kafka_log(?1) WHERE key = 'c1' AND key_type = 'confluent'", root,
              "key=?", 0);
  expect_plan(db, "SELECT * FROM kafka_log(?1) WHERE key = 'c1' COLLATE NOCASE", root, "key=?",
              0);
  expect_plan(db, "SELECT * FROM kafka_log(?1) WHERE key || '' = 'c1'", root, "key=?", 0);
  /* A key_type not known when planning (a parameter) may be a decoded
  ** one: SQLite compares. */
  expect_plan(db, "SELECT * FROM kafka_log(?1) WHERE key = 'c1' AND key_type = ?2", root, "key=?",
              0);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* The same rows whatever the plan: key = v and key IN pushed down give
** what SQLite gives on a native table of BLOB keys for the BLOB of v's
** bytes, and for TEXT keys (key_type 'text') what SQLite gives checking
** key || '' = v itself. */
static void test_key_search_exact(void **state) {
  (void)state;
  char *root = make_logdir();
  sqlite3 *db = st_open();
  make_native(db, root);
  /* pushed value, its native (BLOB) counterpart */
  static const char *const values[][2] = {
      {"'c1'", "CAST('c1' AS BLOB)"},   {"x'6331'", "x'6331'"},
      {"'c59'", "CAST('c59' AS BLOB)"}, {"''", "x''"},
      {"x'ff007a'", "x'ff007a'"},       {"'nobody'", "x'00'"},
      {"NULL", "NULL"},                 {"42", "42"},
      {"'c' || 7", "CAST('c7' AS BLOB)"},
  };
  static const char *const shapes[] = {
      "SELECT topic, partition, offset, value FROM T WHERE key = %s ORDER BY 1, 2, 3",
      "SELECT count(*), sum(length(value)) FROM T WHERE key = %s",
      "SELECT offset FROM T WHERE key = %s AND topic = 'orders' AND partition = 1"
      " ORDER BY offset DESC",
      "SELECT offset FROM T WHERE key = %s AND topic = 'orders' AND partition = 2"
      " ORDER BY offset LIMIT 2 OFFSET 1",
      "SELECT topic, partition, offset FROM T WHERE key = %s AND offset BETWEEN 20 AND 200"
      " ORDER BY 1, 2, 3",
      "SELECT topic, partition, offset FROM T WHERE key = %s AND timestamp >= 1700000005000"
      " ORDER BY 1, 2, 3",
      "SELECT topic, partition, offset FROM T WHERE key IN (%s, x'6332', x'6333', NULL, 5)"
      " ORDER BY 1, 2, 3",
      "SELECT topic, partition, offset FROM T WHERE (key = %s OR key = x'6333') ORDER BY 1, 2, 3",
      /* SQLite checks an OR with another column itself: its rule (a TEXT
      ** is never equal to a BLOB) is the native table's for the same value. */
      "!SELECT topic, partition, offset FROM T WHERE (key = %s OR offset = 3) ORDER BY 1, 2, 3",
      "SELECT topic, partition, max(offset) FROM T WHERE key = %s GROUP BY 1, 2 ORDER BY 1, 2",
      "SELECT topic, partition, offset FROM T WHERE key = %s AND topic = 'orders' AND partition ="
      " kafka_partition_for(%s, 4) ORDER BY 1, 2, 3",
  };
  for (size_t v = 0; v < sizeof values / sizeof *values; v++) {
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
      int sqlite_compares = shapes[k][0] == '!';
      const char *shape = shapes[k] + sqlite_compares;
      char *ps = sqlite3_mprintf(shape, values[v][0], values[v][0]);
      char *ns = sqlite3_mprintf(shape, values[v][sqlite_compares ? 0 : 1], values[v][0]);
      char *pushed = st_with_from(ps, "kafka_log(?1)"), *native = st_with_from(ns, "n");
      char *a = st_answer(db, pushed, root), *b = st_answer(db, native, NULL);
      if (strcmp(a, b)) fail_msg("%s:\n%s\nbut a native table gives:\n%s", pushed, a, b);
      free(a);
      free(b);
      sqlite3_free(ps);
      sqlite3_free(ns);
      sqlite3_free(pushed);
      sqlite3_free(native);
    }
  }
  /* TEXT keys: the pushed form and SQLite's own comparison agree. */
#define TX "kafka_log(?1, 'error', NULL, NULL, 'text')"
  static const char *const text_shapes[][2] = {
      {"SELECT topic, partition, offset FROM " TX " WHERE key = 'c4' ORDER BY 1, 2, 3",
       "SELECT topic, partition, offset FROM " TX " WHERE key || '' = 'c4' ORDER BY 1, 2, 3"},
      {"SELECT topic, partition, offset FROM " TX " WHERE key = x'6334' ORDER BY 1, 2, 3",
       "SELECT topic, partition, offset FROM " TX " WHERE CAST(key AS BLOB) = x'6334'"
       " ORDER BY 1, 2, 3"},
      {"SELECT topic, partition, offset FROM " TX " WHERE key IN ('c4', 'c5') ORDER BY 1, 2, 3",
       "SELECT topic, partition, offset FROM " TX " WHERE key || '' IN ('c4', 'c5')"
       " ORDER BY 1, 2, 3"},
      {"SELECT a.partition, a.offset FROM " TX " b JOIN " TX " a ON a.key = b.key"
       " WHERE b.topic = 'events' AND b.offset = 0 AND a.topic = 'orders' ORDER BY 1, 2",
       "SELECT a.partition, a.offset FROM " TX " b JOIN " TX " a ON a.key || '' = b.key"
       " WHERE b.topic = 'events' AND b.offset = 0 AND a.topic = 'orders' ORDER BY 1, 2"},
  };
#undef TX
  for (size_t k = 0; k < sizeof text_shapes / sizeof *text_shapes; k++) {
    char *a = st_answer(db, text_shapes[k][0], root), *b = st_answer(db, text_shapes[k][1], root);
    if (strcmp(a, b)) fail_msg("%s:\n%s\nbut SQLite's check gives:\n%s", text_shapes[k][0], a, b);
    assert_true(strlen(a) > 0);
    free(a);
    free(b);
  }
  /* A TEXT value finds a BLOB key: the pushed form compares bytes, where
  ** SQLite's own check (BLOB against TEXT) finds nothing. */
  char *a = st_answer(db, "SELECT count(*) FROM kafka_log(?1) WHERE key = 'c42'", root);
  char *b = st_answer(db, "SELECT count(*) FROM n WHERE key = CAST('c42' AS BLOB)", NULL);
  assert_string_equal(a, b);
  assert_string_not_equal(a, "0\n");
  free(a);
  free(b);
  a = st_answer(db, "SELECT count(*) FROM kafka_log(?1) WHERE key || '' = 'c42'", root);
  b = st_answer(db, "SELECT count(*) FROM kafka_log(?1) WHERE key = 'c42'", root);
  assert_string_equal(a, b);
  free(a);
  free(b);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* A first search decodes every batch and learns a filter of each batch's
** keys; the same search again passes over the batches that cannot hold
** the key without reading them, and finds the same rows. */
static void test_repeated_search_skips_batches(void **state) {
  (void)state;
  char *root = make_logdir();
  sqlite3 *db = st_open();
  const char *q = "SELECT topic, partition, offset FROM kafka_log(?1) WHERE key = 'c42'"
                  " ORDER BY 1, 2, 3";
  int64_t batches = st_int(db, "SELECT count(*) FROM kafka_batches(?1)", "t", root);
  int64_t holders = st_int(db, "SELECT count(DISTINCT topic || partition || '@' || segment ||"
                               " position) FROM kafka_log(?1) WHERE key || '' = 'c42'", "t", root);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  char *first = st_answer(db, q, root);
  st_stats s1 = st_get_stats(db);
  st_print_stats("first search", &s1);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  char *again = st_answer(db, q, root);
  st_stats s2 = st_get_stats(db);
  st_print_stats("repeated search", &s2);
  assert_string_equal(first, again);
  assert_true(holders > 0 && holders * 4 < batches);
  /* Every data batch of the first search was decoded, none passed over on
  ** a filter (it had none). */
  assert_true(s1.batches_decoded >= batches - 2);
  /* The second decodes those holding c42 and the filters' few false
  ** positives, and reads no byte of the others. */
  assert_true(s2.batches_decoded >= holders);
  assert_true(s2.batches_decoded <= holders + batches / 10);
  assert_true(s2.batches_skipped >= batches - s2.batches_decoded - 2);
  assert_true(s2.bytes_read * 2 < s1.bytes_read);
  /* Another key, IN lists: the filters hold every key of their batches. */
  static const char *const others[] = {"key = 'c7'", "key IN ('c1', 'c2', x'ff007a')", "key = ''",
                                       "key = 'zz'"};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++) {
    char *pq = sqlite3_mprintf("SELECT topic, partition, offset FROM kafka_log(?1) WHERE %s"
                               " ORDER BY 1, 2, 3", others[i]);
    char *cq = sqlite3_mprintf("SELECT topic, partition, offset FROM kafka_log(?1) WHERE"
                               " CAST(key AS BLOB) IN (SELECT CAST(column1 AS BLOB) FROM (VALUES"
                               " %s)) ORDER BY 1, 2, 3",
                               i == 0 ? "('c7')" : i == 1 ? "('c1'), ('c2'), (x'ff007a')"
                                        : i == 2 ? "('')" : "('zz')");
    char *a = st_answer(db, pq, root), *b = st_answer(db, cq, root);
    if (strcmp(a, b)) fail_msg("%s:\n%s\nbut SQLite's check gives:\n%s", pq, a, b);
    free(a);
    free(b);
    sqlite3_free(pq);
    sqlite3_free(cq);
  }
  free(first);
  free(again);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* A log that changes is read again: rows appended with the key are found
** by the next search, whatever the filters learnt before. */
static void test_search_after_append(void **state) {
  (void)state;
  char *root = t_mkdtemp("keyappend");
  char *dir = sqlite3_mprintf("%s/t-0", root);
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log('%q', mode='create')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  st_exec(db, "WITH RECURSIVE i(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM i WHERE x < 199)"
              " INSERT INTO t(key, value) SELECT 'k' || (x % 20), 'v' || x FROM i");
  const char *q = "SELECT group_concat(offset) FROM t WHERE key = 'new'";
  char *a = st_answer(db, q, NULL);
  assert_string_equal(a, "NULL\n");
  free(a);
  a = st_answer(db, q, NULL);
  assert_string_equal(a, "NULL\n");
  free(a);
  st_exec(db, "INSERT INTO t(key, value) VALUES ('new', 'x'), ('k1', 'y'), ('new', 'z')");
  a = st_answer(db, q, NULL);
  assert_string_equal(a, "'200,202'\n");
  free(a);
  a = st_answer(db, "SELECT count(*) FROM t WHERE key = 'k1'", NULL);
  assert_string_equal(a, "11\n");
  free(a);
  st_close(db);
  sqlite3_free(dir);
  t_rmdir(root);
  free(root);
}

/* WHERE topic = 'orders' AND partition = kafka_partition_for(k, 4) AND
** key = k opens the one partition Kafka's partitioner sent k to. */
static void test_partition_for_reads_one(void **state) {
  (void)state;
  char *root = make_logdir();
  sqlite3 *db = st_open();
  int p = kl_partition_for((const uint8_t *)"c42", 3, N_ORDERS);
  int64_t in_p = st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE topic = 'orders'"
                            " AND partition = ?2", "ti", root, (int64_t)p);
  const char *q = "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders'"
                  " AND partition = kafka_partition_for('c42', 4) AND key = 'c42'";
  expect_plan(db, q, root, "topic=? partition=? key=?", 1);
  sqlite3 *fresh = st_open();
  int64_t n = st_int(fresh, q, "t", root);
  st_stats s = st_get_stats(fresh);
  st_print_stats("partition_for", &s);
  assert_int_equal(n, st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE key = 'c42'", "t",
                             root));
  assert_true(n > 0);
  assert_int_equal(s.batches_decoded, in_p);
  assert_true(s.segments_opened <= st_int(db, "SELECT count(*) FROM kafka_segments(?1)"
                                               " WHERE topic = 'orders' AND partition = ?2",
                                          "ti", root, (int64_t)p));
  st_close(fresh);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* SELECT DISTINCT topic, partition (and DISTINCT topic) is answered in the
** listing's order from each partition's first row: at most one batch read
** a partition, none once its facts are known; partitions without a row
** (empty, or a transaction marker only) are not in it. */
static void test_distinct_from_listing(void **state) {
  (void)state;
  char *root = make_logdir();
  sqlite3 *db = st_open();
  make_native(db, root);
  static const char *const shapes[] = {
      "SELECT DISTINCT topic, partition FROM T",
      "SELECT DISTINCT partition, topic FROM T",
      "SELECT DISTINCT topic FROM T",
      "SELECT DISTINCT topic, partition FROM T ORDER BY topic, partition",
      "SELECT DISTINCT topic, partition FROM T WHERE topic = 'orders' AND partition > 1",
      "SELECT DISTINCT topic, partition FROM T WHERE offset > 150",
      "SELECT DISTINCT topic, partition FROM T WHERE key = x'6333'",
      "SELECT DISTINCT topic, partition FROM T WHERE length(value) > 6",
      "SELECT DISTINCT topic FROM T WHERE timestamp > 1700000011000",
      "SELECT topic, partition, count(*), min(offset), max(offset) FROM T GROUP BY topic, partition",
      "SELECT topic, count(*) FROM T GROUP BY topic",
      "SELECT topic, partition, offset FROM T ORDER BY topic, partition, offset LIMIT 5 OFFSET 100",
      "SELECT topic, partition FROM T ORDER BY topic, partition LIMIT 3 OFFSET 590",
      "SELECT topic, partition, count(*) FROM T WHERE topic = 'orders' GROUP BY 1, 2",
      "SELECT topic, partition FROM T GROUP BY partition, topic HAVING count(*) > 100",
  };
  for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
    char *pushed = st_with_from(shapes[k], "kafka_log(?1)"), *native = st_with_from(shapes[k], "n");
    char *a = st_answer(db, pushed, root), *b = st_answer(db, native, NULL);
    if (strcmp(a, b)) fail_msg("%s:\n%s\nbut a native table gives:\n%s", pushed, a, b);
    free(a);
    free(b);
    sqlite3_free(pushed);
    sqlite3_free(native);
  }
  const char *q = "SELECT DISTINCT topic, partition FROM kafka_log(?1)";
  expect_plan(db, q, root, "DISTINCT topic, partition", 1);
  /* (SQLite may still keep a b-tree of the rows for DISTINCT: one a
  ** partition.) */
  expect_plan(db, "SELECT DISTINCT topic FROM kafka_log(?1)", root, "DISTINCT topic", 1);
  expect_plan(db, "SELECT topic, partition, count(*) FROM kafka_log(?1) GROUP BY 1, 2", root,
              "TEMP B-TREE", 0);
  expect_plan(db, "SELECT DISTINCT topic, partition FROM kafka_log(?1) WHERE length(value) > 6",
              root, "DISTINCT topic", 0);
  sqlite3 *fresh = st_open();
  char *a = st_answer(fresh, q, root);
  assert_string_equal(a, "'events'|0\n'orders'|0\n'orders'|1\n'orders'|2\n'orders'|3\n");
  st_stats s = st_get_stats(fresh);
  st_print_stats("DISTINCT, fresh", &s);
  assert_true(s.batches_decoded <= 6);
  /* From each partition's start: its first segment's .log, no index. */
  assert_int_equal(s.index_probes, 0);
  free(a);
  /* Once the first batches are known, nothing is read. */
  free(st_answer(fresh, "SELECT count(*) FROM kafka_log(?1)", root));
  st_run(fresh, "SELECT kafka_log_stats_reset()", NULL);
  free(st_answer(fresh, q, root));
  s = st_get_stats(fresh);
  st_print_stats("DISTINCT, known", &s);
  assert_int_equal(s.batches_decoded, 0);
  assert_int_equal(s.bytes_read, 0);
  st_run(fresh, "SELECT kafka_log_stats_reset()", NULL);
  a = st_answer(fresh, "SELECT DISTINCT topic FROM kafka_log(?1)", root);
  assert_string_equal(a, "'events'\n'orders'\n");
  s = st_get_stats(fresh);
  assert_int_equal(s.batches_decoded, 0);
  free(a);
  st_close(fresh);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* kafka_partitions' records is the count of kafka_log's rows of each
** partition: the Kafka-written fixtures (legacy messages, transactions,
** compressed batches, a log start inside a batch), this test's log
** directory (a partition of a marker alone, an empty one), and a log whose
** retention cut a batch. */
static void test_partitions_records(void **state) {
  (void)state;
  char *root = make_logdir();
  sqlite3 *db = st_open();
  const char *paths[64] = {root, KL_FIXTURES "/broker", KL_FIXTURES "/txn-broker"};
  size_t np = 3;
  for (const t_fixture_set *f = t_fixture_sets; f->name && np < 63; f++) {
    paths[np++] = t_fixture(f->name);
  }
  const char *got_q = "SELECT dir, records FROM kafka_partitions(?1) ORDER BY dir";
  const char *want_q = "SELECT dir, (SELECT count(*) FROM kafka_log(p.dir)) FROM"
                       " kafka_partitions(?1) p ORDER BY dir";
  for (size_t i = 0; i < np; i++) {
    char *a = st_answer(db, got_q, paths[i]), *b = st_answer(db, want_q, paths[i]);
    if (strcmp(a, b)) fail_msg("%s:\n%s\nbut kafka_log counts:\n%s", paths[i], a, b);
    free(a);
    free(b);
  }
  char *a = st_answer(db, "SELECT topic, partition, records FROM kafka_partitions(?1)"
                       " WHERE topic = 'events'", root);
  assert_string_equal(a, "'events'|0|53\n'events'|1|0\n'events'|2|0\n");
  free(a);
  /* Retention inside a batch: the records before the log start are gone. */
  char *dir = sqlite3_mprintf("%s/cut-0", root);
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log('%q', mode='create')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  st_exec(db, "WITH RECURSIVE i(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM i WHERE x < 199)"
              " INSERT INTO t(key, value) SELECT 'k', 'v' || x FROM i");
  st_exec(db, "DELETE FROM t WHERE offset < 105");
  assert_int_equal(st_int(db, "SELECT records FROM kafka_partitions(?1)", "t", dir), 95);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 95);
  sqlite3_free(dir);
  st_close(db);
  t_rmdir(root);
  free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_terms_in_plan),
      cmocka_unit_test(test_key_search_exact),
      cmocka_unit_test(test_repeated_search_skips_batches),
      cmocka_unit_test(test_search_after_append),
      cmocka_unit_test(test_partition_for_reads_one),
      cmocka_unit_test(test_distinct_from_listing),
      cmocka_unit_test(test_partitions_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
