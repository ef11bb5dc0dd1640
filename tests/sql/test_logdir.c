/*
** test_logdir.c - kafka_log over what a broker leaves on disk: a log
** directory of topic partitions (written here, plus Kafka-written fixtures
** copied in as partitions), several log directories separated by commas,
** the topic and partition columns and their pushdown (counters show the
** other partitions are not opened), rows in an order consumed across
** partitions, distinct rowids, the checkpoint files (log start offset,
** high watermark; malformed ones named), and read_committed: against
** g-transactions' markers (the expected set is derived in SQL from
** expected.json, Kafka's own reading, not from .txnindex), also with its
** .txnindex files deleted, cut short or stale, and against
** written logs with an open transaction, an aborted one and a high
** watermark.  kafka_batches, kafka_segments and kafka_log_check over the
** same path forms: each partition's rows as for its directory alone, with
** its topic and partition, and their pushdown.
*/
#include "sqltest.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kwriter.h"

/* Append n plain records at the writer's next offset, timestamps ts0 +
** 10 * offset, in batches of per. */
static void put_records(kw_writer *w, int n, int per, int64_t ts0, const kl_batch_spec *spec) {
  kl_rec_in r[16];
  char vals[16][64];
  while (n > 0) {
    int k = n < per ? n : per;
    int64_t base = kw_next_offset(w);
    for (int i = 0; i < k; i++) {
      snprintf(vals[i], sizeof vals[i], "value-%lld", (long long)(base + i));
      memset(&r[i], 0, sizeof r[i]);
      r[i].timestamp = ts0 + 10 * (base + i);
      r[i].key = "k";
      r[i].key_len = 1;
      r[i].value = vals[i];
      r[i].value_len = (int32_t)strlen(vals[i]);
    }
    assert_int_equal(kw_append(w, spec, r, k), 0);
    n -= k;
  }
}

static kl_batch_spec txn_spec(int64_t pid, int control) {
  kl_batch_spec s;
  memset(&s, 0, sizeof s);
  s.leader_epoch = 0;
  s.producer_id = pid;
  s.producer_epoch = 0;
  s.base_sequence = control ? -1 : 0;
  s.transactional = 1;
  s.control = control;
  return s;
}

/* A COMMIT (type 1) or ABORT (type 0) marker of producer pid at ts. */
static void put_marker(kw_writer *w, int64_t pid, int type, int64_t ts) {
  uint8_t key[4] = {0, 0, 0, (uint8_t)type}, value[6] = {0, 0, 0, 0, 0, 5};
  kl_rec_in r;
  memset(&r, 0, sizeof r);
  r.timestamp = ts;
  r.key = key;
  r.key_len = 4;
  r.value = value;
  r.value_len = 6;
  kl_batch_spec s = txn_spec(pid, 1);
  assert_int_equal(kw_append(w, &s, &r, 1), 0);
}

static kw_writer *open_part(const char *root, const char *name, int64_t segment_bytes) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", root, name);
  assert_int_equal(mkdir(p, 0755), 0);
  kw_options o = {segment_bytes, 512, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(p, &o);
  assert_non_null(w);
  return w;
}

static void copy_fixture(const char *set, const char *root, const char *name) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", root, name);
  assert_int_equal(mkdir(p, 0755), 0);
  assert_int_equal(t_copy_dir(t_fixture(set), p), 0);
}

/* root: orders-0 (100), orders-1 (250), orders-10 (7), clicks-0 (30), a
** copy of b-multi-segment as events-0 and of a-tiny as
** __consumer_offsets-0; and what is not a partition. */
static char *make_root(void) {
  char *root = t_mkdtemp("logdir");
  kw_make_part(root, "orders-0", 100, 1000000, "value-");
  kw_make_part(root, "orders-1", 250, 2000000, "value-");
  kw_make_part(root, "orders-10", 7, 3000000, "value-");
  kw_make_part(root, "clicks-0", 30, 4000000, "value-");
  kw_make_part(root, "orders-2.0a1b2c3d4e5f60718293a4b5c6d7e8f9-delete", 40, 5000000, "value-");
  kw_make_part(root, "orders-3.0a1b2c3d4e5f60718293a4b5c6d7e8f9-future", 40, 5000000, "value-");
  copy_fixture("b-multi-segment", root, "events-0");
  copy_fixture("a-tiny", root, "__consumer_offsets-0");
  char p[4096];
  snprintf(p, sizeof p, "%s/lost+found", root);
  assert_int_equal(mkdir(p, 0755), 0);
  t_put_file(root, "meta.properties", "version=1\n");
  return root;
}

static int64_t count_of(sqlite3 *db, const char *sql, const char *a, const char *b) {
  return b ? st_int(db, sql, "tt", a, b) : st_int(db, sql, "t", a);
}

static void test_partitions_as_rows(void **state) {
  (void)state;
  char *root = make_root();
  sqlite3 *db = st_open();
  st_buf b = {0};
  st_render(db, st_prep(db, "SELECT topic, partition, count(*), min(offset), max(offset) FROM "
                            "kafka_log(?1) GROUP BY 1, 2 ORDER BY 1, 2", "t", root), &b);
  int64_t tiny = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", t_fixture("a-tiny"));
  int64_t multi = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", t_fixture("b-multi-segment"));
  char want[1024];
  snprintf(want, sizeof want,
           "'__consumer_offsets'|0|%lld|0|%lld\n'clicks'|0|30|0|29\n'events'|0|%lld|0|%lld\n"
           "'orders'|0|100|0|99\n'orders'|1|250|0|249\n'orders'|10|7|0|6\n",
           (long long)tiny, (long long)tiny - 1, (long long)multi, (long long)multi - 1);
  assert_string_equal(b.p, want);
  st_buf_free(&b);

  /* Each partition reads as it does alone, through either path. */
  static const struct { const char *topic; int p; const char *dir; } parts[] = {
      {"orders", 1, "orders-1"}, {"events", 0, "events-0"}, {"__consumer_offsets", 0, "__consumer_offsets-0"}};
  for (size_t i = 0; i < 3; i++) {
    char dir[4096], q[1024];
    snprintf(dir, sizeof dir, "%s/%s", root, parts[i].dir);
    snprintf(q, sizeof q,
             "SELECT count(*) FROM (SELECT offset, timestamp, key, value, headers, segment, position"
             " FROM kafka_log(?1) WHERE topic = '%s' AND partition = %d EXCEPT SELECT offset,"
             " timestamp, key, value, headers, segment, position FROM kafka_log(?2))",
             parts[i].topic, parts[i].p);
    assert_int_equal(count_of(db, q, root, dir), 0);
    snprintf(q, sizeof q, "SELECT count(*) FROM kafka_log(?1) WHERE topic = '%s' AND partition = %d",
             parts[i].topic, parts[i].p);
    assert_int_equal(count_of(db, q, root, NULL), count_of(db, "SELECT count(*) FROM kafka_log(?1)", dir, NULL));
    /* A partition directory alone names itself. */
    snprintf(q, sizeof q, "SELECT count(*) FROM kafka_log(?1) WHERE topic IS NOT '%s' OR partition IS NOT %d",
             parts[i].topic, parts[i].p);
    assert_int_equal(count_of(db, q, dir, NULL), 0);
  }
  /* A fixture's own directory is named orders-0. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 0",
                          "t", t_fixture("a-tiny")), tiny);

  /* Rowids stay distinct across partitions (SQLite's OR optimisation
  ** merges rowid sets), and an OR over two pushed-down terms finds the
  ** same rows as the plain scan. */
  assert_int_equal(st_int(db, "SELECT count(DISTINCT rowid) - count(*) FROM kafka_log(?1)", "t", root), 0);
  /* A rowid names one row, also through a parameter (planned as if for one
  ** partition, where the rowid is the offset): SQLite compares it. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE rowid = (SELECT rowid FROM"
                              " kafka_log(?1) WHERE topic = 'orders' AND partition = 1 AND offset = 200)",
                          "t", root), 1);
  char *r1 = st_text(db, "SELECT group_concat(rowid) FROM (SELECT rowid FROM kafka_log(?1) ORDER BY rowid DESC"
                         " LIMIT 20)", "t", root);
  char *r2 = st_text(db, "SELECT group_concat(rowid) FROM (SELECT rowid FROM kafka_log(?1) ORDER BY rowid + 0"
                         " DESC LIMIT 20)", "t", root);
  assert_string_equal(r1, r2);
  free(r1);
  free(r2);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset = 5 OR timestamp = 2000100",
                          "t", root),
                   st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset + 0 = 5 OR timestamp + 0 = 2000100",
                          "t", root));
  st_close(db);
  t_rmdir(root);
  free(root);
}

static void test_partition_pushdown(void **state) {
  (void)state;
  char *root = make_root();
  static const struct { const char *sql; const char *want; int64_t max_segments; } q[] = {
      /* One partition of the listing, by binary search: one segment. */
      {"SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1 AND offset = 200",
       "200|'value-200'\n", 1},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic = 'clicks'", "30\n", 2},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic IN ('clicks', 'nope') AND partition IN (0, 7)", "30\n", 2},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition >= 2", "7\n", 1},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition BETWEEN 1 AND 9", "250\n", 20},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic = 'nope'", "0\n", 0},
      {"SELECT count(*) FROM kafka_log(?1) WHERE partition = 10", "7\n", 1},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = '1'", "250\n", 20},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1.5", "0\n", 0},
      {"SELECT count(*) FROM kafka_log(?1) WHERE topic = NULL", "0\n", 0},
  };
  for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
    sqlite3 *db = st_open(); /* fresh: nothing cached */
    st_buf b = {0};
    st_render(db, st_prep(db, q[i].sql, "t", root), &b);
    st_stats s = st_get_stats(db);
    print_message("  %s\n", q[i].sql);
    st_print_stats("stats", &s);
    assert_string_equal(b.p, q[i].want);
    assert_true(s.segments_opened <= q[i].max_segments);
    st_buf_free(&b);
    /* The same answer when SQLite checks the constraints itself (but
    ** "+partition = '1'" drops the column's affinity: not the same query). */
    if (strstr(q[i].sql, "'1'")) {
      st_close(db);
      continue;
    }
    st_buf slowb = {0};
    for (const char *p = q[i].sql; *p; p++) {
      /* "+topic", "+partition": SQLite's own comparisons, not pushed down. */
      if ((!strncmp(p, " topic ", 7) || !strncmp(p, " partition ", 11)) && strncmp(p - 5, "WHERE", 5) &&
          strncmp(p - 3, "AND", 3)) {
        st_buf_printf(&slowb, "%c", *p);
      } else if (!strncmp(p, " topic ", 7) || !strncmp(p, " partition ", 11)) {
        st_buf_printf(&slowb, " +");
        continue;
      } else {
        st_buf_printf(&slowb, "%c", *p);
      }
    }
    char *slow = sqlite3_mprintf("%s", slowb.p);
    st_buf_free(&slowb);
    print_message("  %s\n", slow);
    st_buf c = {0};
    st_render(db, st_prep(db, slow, "t", root), &c);
    assert_string_equal(c.p, q[i].want);
    st_buf_free(&c);
    sqlite3_free(slow);
    st_close(db);
  }
  t_rmdir(root);
  free(root);
}

static void test_order_and_dirs(void **state) {
  (void)state;
  char *root = make_root();
  char *root2 = t_mkdtemp("logdir2");
  kw_make_part(root2, "orders-4", 60, 6000000, "value-");
  copy_fixture("g-transactions", root2, "payments-0");
  sqlite3 *db = st_open();
  /* log.dirs: both log directories, comma-separated. */
  char *both = sqlite3_mprintf("%s,%s", root, root2);
  int64_t n1 = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", root);
  int64_t n2 = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", root2);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", both), n1 + n2);
  assert_int_equal(st_int(db, "SELECT count(DISTINCT partition) FROM kafka_log(?1) WHERE topic = 'orders'",
                          "t", both), 4);

  /* A path given as a parameter is taken for one partition when planning:
  ** the order is consumed, and the rows of several are merged (offset) or
  ** sorted (timestamp) here.  It equals SQLite's own sort. */
  static const char *const orders[][2] = {
      {"SELECT group_concat(offset) FROM (SELECT offset FROM kafka_log(?1) ORDER BY offset DESC LIMIT 40)",
       "SELECT group_concat(offset) FROM (SELECT offset FROM kafka_log(?1) ORDER BY offset + 0 DESC LIMIT 40)"},
      {"SELECT group_concat(offset) FROM (SELECT offset FROM kafka_log(?1) WHERE offset > 90 ORDER BY offset)",
       "SELECT group_concat(offset) FROM (SELECT offset FROM kafka_log(?1) WHERE offset > 90 ORDER BY offset + 0)"},
      {"SELECT group_concat(timestamp) FROM (SELECT timestamp FROM kafka_log(?1) ORDER BY timestamp DESC LIMIT 30)",
       "SELECT group_concat(timestamp) FROM (SELECT timestamp FROM kafka_log(?1) ORDER BY timestamp + 0 DESC LIMIT 30)"},
      {"SELECT group_concat(value, ',') FROM (SELECT value FROM kafka_log(?1) ORDER BY timestamp LIMIT 30)",
       "SELECT group_concat(value, ',') FROM (SELECT value FROM kafka_log(?1) ORDER BY timestamp + 0, topic, partition, offset LIMIT 30)"},
      {"SELECT max(timestamp) FROM kafka_log(?1)", "SELECT max(timestamp + 0) FROM kafka_log(?1)"},
  };
  for (size_t i = 0; i < sizeof orders / sizeof *orders; i++) {
    char *a = st_text(db, orders[i][0], "t", both), *e = st_text(db, orders[i][1], "t", both);
    if (strcmp(a, e)) fail_msg("%s\n  gave %.200s\n  expected %.200s", orders[i][0], a, e);
    free(a);
    free(e);
  }
  /* A literal path is known when planning: the module merges the offset
  ** order of a few partitions (as of one), SQLite sorts them by timestamp. */
  char *sql = sqlite3_mprintf("EXPLAIN QUERY PLAN SELECT * FROM kafka_log(%Q) ORDER BY offset", root);
  st_buf b = {0};
  st_render(db, st_prep(db, sql, NULL), &b);
  assert_null(strstr(b.p, "B-TREE FOR ORDER BY"));
  assert_non_null(strstr(b.p, "ORDER BY offset"));
  sqlite3_free(sql);
  st_buf_free(&b);
  sql = sqlite3_mprintf("EXPLAIN QUERY PLAN SELECT * FROM kafka_log(%Q) ORDER BY timestamp", root);
  st_render(db, st_prep(db, sql, NULL), &b);
  assert_non_null(strstr(b.p, "B-TREE FOR ORDER BY"));
  sqlite3_free(sql);
  st_buf_free(&b);
  sql = sqlite3_mprintf("EXPLAIN QUERY PLAN SELECT * FROM kafka_log(%Q) WHERE topic = 'orders' AND "
                        "partition = 1 ORDER BY offset", root);
  st_render(db, st_prep(db, sql, NULL), &b);
  assert_null(strstr(b.p, "B-TREE FOR ORDER BY"));
  assert_non_null(strstr(b.p, "topic=? partition=?"));
  sqlite3_free(sql);
  st_buf_free(&b);
  st_close(db);
  sqlite3_free(both);
  t_rmdir(root2);
  free(root2);
  t_rmdir(root);
  free(root);
}

static int64_t passes(sqlite3 *db) {
  return st_int(db, "SELECT json_extract(kafka_log_stats(), '$.sort_passes')", NULL);
}

/* ORDER BY timestamp over several partitions holds at most sort_bytes of
** (timestamp, offset) pairs, or what a LIMIT allows: beyond that it sorts in
** passes, each reading the log again for the pairs after the last one
** produced.  Whatever the bound, the rows and their order are SQLite's own
** sort's, ties (equal timestamps across partitions: a, b and c share their
** clock) ordered by partition, then offset. */
static void test_order_by_timestamp_in_passes(void **state) {
  (void)state;
  char *root = t_mkdtemp("passes");
  kw_make_part(root, "a-0", 37, 1000000, "value-");
  kw_make_part(root, "b-0", 23, 1000000, "value-");
  kw_make_part(root, "c-0", 11, 1000005, "value-");
  sqlite3 *db = st_open();
  static const char *const q[][2] = {
      {"SELECT group_concat(topic || '.' || offset || '@' || timestamp) FROM (SELECT "
       "topic, offset, timestamp FROM kafka_log(?1) WHERE sort_bytes = ?2 ORDER BY "
       "timestamp)",
       "SELECT group_concat(topic || '.' || offset || '@' || timestamp) FROM (SELECT * FROM "
       "kafka_log(?1) ORDER BY timestamp + 0, topic, offset)"},
      {"SELECT group_concat(topic || '.' || offset) FROM (SELECT topic, offset FROM kafka_log(?1) "
       "WHERE sort_bytes = ?2 ORDER BY timestamp DESC)",
       "SELECT group_concat(topic || '.' || offset) FROM (SELECT * FROM kafka_log(?1) ORDER BY "
       "timestamp + 0 DESC, topic, offset)"},
      {"SELECT group_concat(value, ',') FROM (SELECT value FROM kafka_log(?1) WHERE sort_bytes = ?2 "
       "ORDER BY timestamp DESC LIMIT 9 OFFSET 4)",
       "SELECT group_concat(value, ',') FROM (SELECT value FROM kafka_log(?1) ORDER BY timestamp + 0 "
       "DESC, topic, offset LIMIT 9 OFFSET 4)"},
      {"SELECT group_concat(topic || '.' || offset) FROM (SELECT topic, offset FROM kafka_log(?1) "
       "WHERE sort_bytes = ?2 AND timestamp BETWEEN 1000100 AND 1000200 ORDER BY timestamp LIMIT 8)",
       "SELECT group_concat(topic || '.' || offset) FROM (SELECT * FROM kafka_log(?1) WHERE "
       "timestamp + 0 BETWEEN 1000100 AND 1000200 ORDER BY timestamp + 0, topic, offset LIMIT 8)"},
  };
  /* 64 bytes hold 2 pairs; 200 hold 6. */
  static const int64_t bytes[] = {64, 200, 8 << 20};
  for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
    char *e = st_text(db, q[i][1], "t", root);
    for (size_t j = 0; j < sizeof bytes / sizeof *bytes; j++) {
      char *a = st_text(db, q[i][0], "ti", root, bytes[j]);
      if (strcmp(a, e)) {
        fail_msg("sort_bytes %lld: %s\n  gave %.300s\n  expected %.300s", (long long)bytes[j],
                 q[i][0], a, e);
      }
      free(a);
    }
    free(e);
  }
  /* 71 rows, 2 a pass: 36 passes.  A LIMIT of 9 after 4 needs one pass of
  ** at most 14 pairs, and 7 passes of 2 pairs cover the 13 rows. */
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  free(st_text(db, q[0][0], "ti", root, (int64_t)64));
  assert_int_equal(passes(db), 36);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  free(st_text(db, q[2][0], "ti", root, (int64_t)(8 << 20)));
  assert_int_equal(passes(db), 1);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  free(st_text(db, q[2][0], "ti", root, (int64_t)64));
  assert_int_equal(passes(db), 7);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* The work of sql on a fresh connection, its rows rendered into out. */
static st_stats work_of(const char *sql, const char *path, st_buf *out) {
  sqlite3 *db = st_open();
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  st_render(db, path ? st_prep(db, sql, "t", path) : st_prep(db, sql, NULL), out);
  st_stats s = st_get_stats(db);
  st_close(db);
  return s;
}

/* The README's form binds the path: ORDER BY offset is then planned for one
** partition, and over a log directory the module merges the partitions'
** streams.  It reads what SQLite's sort of the literal form reads (each
** batch decoded once, not once per row), and gives the same rows in the
** same order, whatever the plan. */
static void test_parameter_path_order_by_offset(void **state) {
  (void)state;
  char broker[4096];
  snprintf(broker, sizeof broker, "%s/broker", KL_FIXTURES);
  /* A partition for each way batches come written (several codecs, gzip,
  ** transactions, legacy wrappers...): "<set>-0". */
  char *mixed = t_mkdtemp("codecs");
  const char *sets[16];
  size_t nsets = t_fixture_names(T_FIX_SAMPLE, 0, sets, 16);
  assert_true(nsets >= 4 && nsets < 16);
  for (size_t k = 0; k < nsets; k++) {
    char name[128];
    snprintf(name, sizeof name, "%s-0", sets[k]);
    copy_fixture(sets[k], mixed, name);
  }
  const char *paths[] = {broker, mixed};
  /* {parameter form, literal form with the ties' order spelt out} */
  static const char *const q[][2] = {
      {"SELECT offset, topic, partition, value FROM kafka_log(?1) ORDER BY offset",
       "SELECT offset, topic, partition, value FROM kafka_log(%Q) ORDER BY offset, topic, partition"},
      {"SELECT offset, topic, partition, value FROM kafka_log(?1) ORDER BY offset DESC",
       "SELECT offset, topic, partition, value FROM kafka_log(%Q) ORDER BY offset DESC, topic, partition"},
      {"SELECT offset, topic, partition FROM kafka_log(?1) ORDER BY offset LIMIT 50 OFFSET 7",
       "SELECT offset, topic, partition FROM kafka_log(%Q) ORDER BY offset, topic, partition LIMIT 50 OFFSET 7"},
      {"SELECT offset, topic, partition, key FROM kafka_log(?1) WHERE offset IN (3, 5, 400, 1499, 12000)"
       " ORDER BY offset DESC",
       "SELECT offset, topic, partition, key FROM kafka_log(%Q) WHERE offset IN (3, 5, 400, 1499, 12000)"
       " ORDER BY offset DESC, topic, partition"},
      {"SELECT offset, topic, partition, value FROM kafka_log(?1) WHERE offset BETWEEN 100 AND 300"
       " AND timestamp > 0 ORDER BY offset",
       "SELECT offset, topic, partition, value FROM kafka_log(%Q) WHERE offset BETWEEN 100 AND 300"
       " AND timestamp > 0 ORDER BY offset, topic, partition"},
      {"SELECT offset, topic, partition, value FROM kafka_log(?1, 'error', NULL, 'read_committed')"
       " ORDER BY offset",
       "SELECT offset, topic, partition, value FROM kafka_log(%Q, 'error', NULL, 'read_committed')"
       " ORDER BY offset, topic, partition"},
      {"SELECT offset, topic, partition, value FROM kafka_log(?1) ORDER BY offset + 0, topic, partition",
       "SELECT offset, topic, partition, value FROM kafka_log(%Q) ORDER BY offset, topic, partition"},
  };
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
    for (size_t j = 0; j < sizeof q / sizeof *q; j++) {
      char *lit = sqlite3_mprintf(q[j][1], paths[i]);
      st_buf a = {0}, e = {0};
      work_of(q[j][0], paths[i], &a);
      work_of(lit, NULL, &e);
      assert_true(e.n > 0);
      if (!a.p || strcmp(a.p, e.p)) {
        fail_msg("%s over %s\n  gave %.300s\n  expected %.300s", q[j][0], paths[i],
                 a.p ? a.p : "", e.p);
      }
      st_buf_free(&a);
      st_buf_free(&e);
      sqlite3_free(lit);
    }
    char *lit = sqlite3_mprintf("SELECT offset, value FROM kafka_log(%Q) ORDER BY offset", paths[i]);
    st_buf a = {0}, e = {0};
    st_stats sp = work_of("SELECT offset, value FROM kafka_log(?1) ORDER BY offset", paths[i], &a);
    st_stats sl = work_of(lit, NULL, &e);
    print_message("  %s\n", paths[i]);
    st_print_stats("parameter", &sp);
    st_print_stats("literal", &sl);
    assert_true(sl.batches_decoded > 0);
    assert_true(sp.batches_decoded <= sl.batches_decoded);
    assert_true(sp.bytes_decompressed <= sl.bytes_decompressed);
    assert_true(sp.bytes_read <= sl.bytes_read);
    if (i == 1) assert_true(sl.bytes_decompressed > 0);
    st_buf_free(&a);
    st_buf_free(&e);
    sqlite3_free(lit);
  }
  /* The plan: the order is the module's (no sorter), with a parameter. */
  sqlite3 *db = st_open();
  st_buf b = {0};
  st_render(db, st_prep(db, "EXPLAIN QUERY PLAN SELECT * FROM kafka_log(?1) ORDER BY offset", "t",
                        mixed), &b);
  assert_null(strstr(b.p, "B-TREE FOR ORDER BY"));
  assert_non_null(strstr(b.p, "ORDER BY offset"));
  st_buf_free(&b);
  st_close(db);
  t_rmdir(mixed);
  free(mixed);
}

/* More partitions than a table may keep open (a low descriptor limit):
** ORDER BY offset over a parameter path then reads each row by offset,
** closing the partitions read least recently, with the same rows. */
static void test_parameter_path_order_many_partitions(void **state) {
  (void)state;
  char *root = t_mkdtemp("many");
  for (int i = 0; i < 24; i++) {
    char name[32];
    snprintf(name, sizeof name, "t-%d", i);
    kw_make_part(root, name, 20 + 3 * i, 1000000 + 7 * i, "value-");
  }
  struct rlimit was, low;
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
  low = was;
  low.rlim_cur = 160; /* a table's share: 13 open segments */
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
  static const char *const q[][2] = {
      {"SELECT offset, topic, partition, value FROM kafka_log(?1) ORDER BY offset",
       "SELECT offset, topic, partition, value FROM kafka_log(%Q) ORDER BY offset, topic, partition"},
      {"SELECT offset, topic, partition FROM kafka_log(?1) WHERE offset >= 10 ORDER BY offset DESC",
       "SELECT offset, topic, partition FROM kafka_log(%Q) WHERE offset >= 10 ORDER BY offset DESC, topic,"
       " partition"},
      {"SELECT timestamp, topic, partition, value FROM kafka_log(?1) ORDER BY timestamp LIMIT 300",
       "SELECT timestamp, topic, partition, value FROM kafka_log(%Q) ORDER BY timestamp, topic, partition"
       " LIMIT 300"},
  };
  for (size_t j = 0; j < sizeof q / sizeof *q; j++) {
    char *lit = sqlite3_mprintf(q[j][1], root);
    st_buf a = {0}, e = {0};
    work_of(q[j][0], root, &a);
    work_of(lit, NULL, &e);
    assert_true(e.n > 0);
    if (!a.p || strcmp(a.p, e.p)) {
      fail_msg("%s\n  gave %.300s\n  expected %.300s", q[j][0], a.p ? a.p : "", e.p);
    }
    st_buf_free(&a);
    st_buf_free(&e);
    sqlite3_free(lit);
  }
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
  t_rmdir(root);
  free(root);
}

static void test_checkpoints(void **state) {
  (void)state;
  char *root = make_root();
  char one[4096];
  snprintf(one, sizeof one, "%s/orders-1", root);
  t_put_file(root, "log-start-offset-checkpoint", "0\n2\norders 1 40\nclicks 0 0\n");
  sqlite3 *db = st_open();
  /* Records below the log start offset are deleted for every consumer,
  ** through the log directory and through the partition alone. */
  const char *paths[] = {root, one};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1",
                            "t", paths[i]), 210);
    assert_int_equal(st_int(db, "SELECT min(offset) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1",
                            "t", paths[i]), 40);
    assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1"
                                " AND offset = 10", "t", paths[i]), 0);
    assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1"
                                " AND offset + 0 < 40", "t", paths[i]), 0);
  }
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 0",
                          "t", root), 100);
  /* A checkpoint rewritten (Kafka renames a new one over it) is seen by
  ** the next query on the same connection. */
  t_put_file(root, "log-start-offset-checkpoint.tmp", "0\n1\norders 1 100\n");
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s/log-start-offset-checkpoint.tmp", root);
  snprintf(b, sizeof b, "%s/log-start-offset-checkpoint", root);
  assert_int_equal(rename(a, b), 0);
  assert_int_equal(st_int(db, "SELECT min(offset) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1",
                          "t", root), 100);
  /* Malformed: an error naming the file and the line, never a guess. */
  t_put_file(root, "log-start-offset-checkpoint", "0\n2\norders 1 40\n");
  char *q = sqlite3_mprintf("SELECT count(*) FROM kafka_log(%Q)", root);
  sqlite3_stmt *st;
  assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  print_message("  %s\n", sqlite3_errmsg(db));
  assert_non_null(strstr(sqlite3_errmsg(db), "log-start-offset-checkpoint:4: expected 2 entries"));
  sqlite3_finalize(st);
  sqlite3_free(q);
  t_put_file(root, "log-start-offset-checkpoint", "0\n1\norders one 40\n");
  q = sqlite3_mprintf("SELECT count(*) FROM kafka_log(%Q)", one);
  assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "log-start-offset-checkpoint:3: malformed entry"));
  sqlite3_finalize(st);
  sqlite3_free(q);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* tests/fixtures/broker's orders-1 by every spelling of its path: the
** log start offset of the log directory's checkpoint (100) applies to
** each, in kafka_log as in kafka_partitions. */
static void test_partition_path_forms(void **state) {
  (void)state;
  char cwd[4096], abs[4200];
  assert_non_null(getcwd(cwd, sizeof cwd));
  snprintf(abs, sizeof abs, "%s/broker/orders-1", KL_FIXTURES);
  assert_int_equal(chdir(KL_FIXTURES), 0);
  assert_int_equal(chdir("broker"), 0);
  const char *forms[] = {"orders-1", "./orders-1", "orders-1/", "orders-1/.", "../broker/orders-1",
                         "../broker/./orders-1", abs}; /* a/b/../x: tests/core/test_broker.c */
  sqlite3 *db = st_open();
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    int64_t n = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", forms[i]);
    int64_t lo = st_int(db, "SELECT min(offset) FROM kafka_log(?1)", "t", forms[i]);
    int64_t ls = st_int(db, "SELECT log_start_offset FROM kafka_partitions(?1)", "t", forms[i]);
    if (n != 19900 || lo != 100 || ls != 100) {
      fail_msg("%s: %lld rows from %lld, log start %lld", forms[i], (long long)n, (long long)lo,
               (long long)ls);
    }
  }
  st_close(db);
  assert_int_equal(chdir(cwd), 0);
}

/* A query that fails with SQLite's code rc, its message holding what. */
static void expect_error(sqlite3 *db, const char *sql, const char *path, int rc, const char *what) {
  sqlite3_stmt *st = st_prep(db, sql, "t", path);
  int got = sqlite3_step(st);
  if (got != rc || !strstr(sqlite3_errmsg(db), what)) {
    fail_msg("%s on %s: %d %s (expected %d and %s)", sql, path, got, sqlite3_errmsg(db), rc, what);
  }
  sqlite3_finalize(st);
}

/* A log-start-offset-checkpoint that cannot be read (here a directory in
** its place: the tests run as root, to whom permissions deny nothing) is
** an error naming it on every path form, and nothing wrong is kept: once
** readable, the next query on the same connection applies it. */
static void test_unreadable_checkpoint(void **state) {
  (void)state;
  char *root = make_root();
  char one[4200], ck[4200], cwd[4096];
  snprintf(one, sizeof one, "%s/orders-1", root);
  snprintf(ck, sizeof ck, "%s/log-start-offset-checkpoint", root);
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(root), 0);
  assert_int_equal(mkdir(ck, 0755), 0);
  sqlite3 *db = st_open();
  const char *paths[] = {root, one, "orders-1", "./orders-1"};
  for (int i = 0; i < 4; i++) {
    expect_error(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1",
                 paths[i], SQLITE_CANTOPEN, "log-start-offset-checkpoint");
    expect_error(db, "SELECT log_start_offset FROM kafka_partitions(?1) WHERE topic = 'orders'"
                     " AND partition = 1", paths[i], SQLITE_CANTOPEN, "log-start-offset-checkpoint");
  }
  assert_int_equal(rmdir(ck), 0);
  t_put_file(root, "log-start-offset-checkpoint", "0\n1\norders 1 40\n");
  for (int i = 0; i < 4; i++) {
    assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1",
                            "t", paths[i]), 210);
    assert_int_equal(st_int(db, "SELECT log_start_offset FROM kafka_partitions(?1) WHERE topic = 'orders'"
                                " AND partition = 1", "t", paths[i]), 40);
  }
  st_close(db);
  assert_int_equal(chdir(cwd), 0);
  t_rmdir(root);
  free(root);
}

/* The logs a connection has opened so far. */
static int64_t logs_opened(sqlite3 *db) {
  return st_int(db, "SELECT json_extract(kafka_log_stats(), '$.logs_opened')", NULL);
}

/* A query repeated on one connection sees every change made to a partition
** between its statements (appends to the last segment, segments rolled),
** and one made nowhere reopens no log. */
static void test_changes_between_statements(void **state) {
  (void)state;
  char *root = make_root();
  kw_writer *w = open_part(root, "late-0", 2048);
  put_records(w, 10, 5, 9000000, NULL);
  assert_int_equal(kw_flush(w), 0);
  sqlite3 *db = st_open();
  const char *sql = "SELECT count(*) FROM kafka_log(?1) WHERE timestamp >= 0";
  int64_t n = count_of(db, sql, root, NULL);
  int64_t opened = logs_opened(db);
  assert_int_equal(count_of(db, sql, root, NULL), n);
  assert_int_equal(logs_opened(db), opened);
  put_records(w, 5, 5, 9000000, NULL); /* into the last segment */
  assert_int_equal(kw_flush(w), 0);
  assert_int_equal(count_of(db, sql, root, NULL), n + 5);
  assert_int_equal(logs_opened(db), opened + 1);
  put_records(w, 200, 5, 9000000, NULL); /* rolls at 2 KiB */
  assert_int_equal(kw_flush(w), 0);
  assert_int_equal(count_of(db, sql, root, NULL), n + 205);
  assert_int_equal(logs_opened(db), opened + 2);
  assert_int_equal(count_of(db, sql, root, NULL), n + 205);
  assert_int_equal(logs_opened(db), opened + 2);
  assert_int_equal(kw_close(w), 0);
  sqlite3_close(db);
  t_rmdir(root);
  free(root);
}

/* A log directory listed twice, by any spelling, counts each record once. */
static void test_logdir_listed_twice(void **state) {
  (void)state;
  char *root = make_root();
  sqlite3 *db = st_open();
  int64_t once = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", root);
  assert_true(once > 0);
  static const char *const forms[] = {"%s,%s", "%s,%s/", "%s/,%s/.", "%s,%s/orders-1"};
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    char *p = sqlite3_mprintf(forms[i], root, root);
    int64_t n = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", p);
    int64_t d = st_int(db, "SELECT count(DISTINCT rowid) FROM kafka_log(?1)", "t", p);
    int64_t k = st_int(db, "SELECT count(*) FROM kafka_partitions(?1)", "t", p);
    if (n != once || d != once || k != 6) {
      fail_msg("%s: %lld rows, %lld partitions", p, (long long)n, (long long)k);
    }
    sqlite3_free(p);
  }
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* A malformed checkpoint stops every query over its log directory, as
** Kafka's broker refuses to load it, even for a partition it does not
** list; the error names the file and the option that reads past it, and a
** table with checkpoints='ignore' reads every record the segments hold. */
static void test_malformed_checkpoint_ignore(void **state) {
  (void)state;
  char *root = make_root();
  t_put_file(root, "log-start-offset-checkpoint", "0\n2\norders 1 40\n");
  char ck[4200];
  snprintf(ck, sizeof ck, "%s/log-start-offset-checkpoint:4: expected 2 entries", root);
  sqlite3 *db = st_open();
  expect_error(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'clicks'", root, SQLITE_CORRUPT,
               ck);
  expect_error(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'clicks'", root, SQLITE_CORRUPT,
               "checkpoints='ignore'");
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, checkpoints='ignore', "
                              "readonly=1)", root);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE topic = 'clicks'", NULL), 30);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE topic = 'orders' AND partition = 1",
                          NULL), 250);
  char *v = st_text(db, "SELECT v FROM t_config WHERE k = 'checkpoints'", NULL);
  assert_string_equal(v, "ignore");
  free(v);
  /* Nor does an unreadable one stop it. */
  char f[4200];
  snprintf(f, sizeof f, "%s/log-start-offset-checkpoint", root);
  assert_int_equal(unlink(f), 0);
  assert_int_equal(mkdir(f, 0755), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE topic = 'orders' AND partition = 1",
                          NULL), 250);
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE u USING kafka_log(%Q, checkpoints='skip')", root);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_ERROR);
  assert_non_null(strstr(sqlite3_errmsg(db), "checkpoints="));
  sqlite3_free(sql);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* A directory name that is not UTF-8 gives a topic that is: U+FFFD for
** each stray byte, found by topic = what it shows (the listing is sorted
** as it shows: raw, 0xff sorts after the emoji's 0xf0, shown, before). */
static void test_topic_not_utf8(void **state) {
  (void)state;
  char *root = t_mkdtemp("utf8");
  kw_make_part(root, "\xff" "a-0", 3, 1000, "value-");
  kw_make_part(root, "\xf0\x9f\x98\x80-0", 4, 1000, "value-");
  kw_make_part(root, "b\xc3\x28-1", 5, 1000, "value-");
  sqlite3 *db = st_open();
  static const struct { const char *topic; int64_t part, n; } want[] = {
      {"b\xef\xbf\xbd(", 1, 5}, {"\xef\xbf\xbd" "a", 0, 3}, {"\xf0\x9f\x98\x80", 0, 4}};
  char *all = st_text(db, "SELECT group_concat(topic, '|') FROM"
                          " (SELECT DISTINCT topic FROM kafka_log(?1))", "t", root);
  char expect[64];
  snprintf(expect, sizeof expect, "%s|%s|%s", want[0].topic, want[1].topic, want[2].topic);
  assert_string_equal(all, expect);
  free(all);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = ?2", "tt", root,
                            want[i].topic), want[i].n);
    assert_int_equal(st_int(db, "SELECT partition FROM kafka_partitions(?1) WHERE topic = ?2", "tt",
                            root, want[i].topic), want[i].part);
  }
  /* Its path keeps its bytes, as a BLOB that kafka_log takes back. */
  assert_int_equal(st_int(db, "SELECT sum(typeof(dir) = 'blob') FROM kafka_partitions(?1)", "t", root), 2);
  assert_int_equal(st_int(db, "SELECT sum((SELECT count(*) FROM kafka_log(p.dir)))"
                              " FROM kafka_partitions(?1) p", "t", root), 12);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* The data records a read_committed consumer of g-transactions sees,
** derived from Kafka's reading of the log (expected.json): a transactional
** batch is delivered when its producer's next marker is a COMMIT.  ?1 =
** expected.json */
static const char k_committed_sql[] =
    "WITH b AS (SELECT json_extract(b.value,'$.base_offset') AS base,"
    "   json_extract(b.value,'$.last_offset') AS last,"
    "   json_extract(b.value,'$.producer_id') AS pid,"
    "   json_extract(b.value,'$.is_transactional') AS txn,"
    "   json_extract(b.value,'$.is_control') AS ctl,"
    "   json_extract(b.value,'$.records[0][5].type') AS marker,"
    "   b.value AS v"
    "   FROM json_each(?1,'$.segments') s, json_each(s.value,'$.batches') b)"
    " SELECT json_extract(r.value,'$[0]') FROM b, json_each(b.v,'$.records') r"
    " WHERE b.ctl = 0 AND (b.txn = 0 OR (SELECT m.marker FROM b m WHERE m.ctl = 1 AND m.pid = b.pid"
    "   AND m.base > b.last ORDER BY m.base LIMIT 1) = 'COMMIT')";

static void test_read_committed_fixture(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  const char *dir = t_fixture("g-transactions");
  uint8_t *json;
  size_t n;
  json = t_read_file(t_fixture_expected("g-transactions"), &n);
  assert_non_null(json);
  st_exec(db, "CREATE TEMP TABLE e(off INTEGER PRIMARY KEY)");
  char *ins = sqlite3_mprintf("INSERT INTO e %s", k_committed_sql);
  st_run(db, ins, "t", (const char *)json);
  sqlite3_free(ins);
  int64_t want = st_int(db, "SELECT count(*) FROM e", NULL);
  int64_t all = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir);
  print_message("  g-transactions: %lld data records, %lld committed\n", (long long)all, (long long)want);
  assert_true(want > 0 && want < all);
  static const char *const forms[] = {
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'read_committed'",
      "SELECT offset FROM kafka_log(?1, 'error', NULL, 'read_committed')",
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'READ_COMMITTED' AND offset >= 0",
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'read_committed' AND timestamp > 0",
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'read_committed' ORDER BY offset DESC",
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'read_committed' ORDER BY timestamp",
  };
  for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
    char *q = sqlite3_mprintf("SELECT (SELECT count(*) FROM (SELECT * FROM (%s) EXCEPT SELECT off FROM e)),"
                              " (SELECT count(*) FROM (SELECT off FROM e EXCEPT SELECT * FROM (%s))),"
                              " (SELECT count(*) FROM (%s))",
                              forms[i], forms[i], forms[i]);
    sqlite3_stmt *s = st_prep(db, q, "t", dir);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    if (sqlite3_column_int64(s, 0) || sqlite3_column_int64(s, 1) || sqlite3_column_int64(s, 2) != want) {
      fail_msg("%s: %lld extra, %lld missing, %lld rows (want %lld)", forms[i],
               (long long)sqlite3_column_int64(s, 0), (long long)sqlite3_column_int64(s, 1),
               (long long)sqlite3_column_int64(s, 2), (long long)want);
    }
    sqlite3_finalize(s);
    sqlite3_free(q);
  }
/* The table option, and a query overriding it. */
  char *c = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, isolation='read_committed')", dir);
  st_exec(db, c);
  sqlite3_free(c);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), want);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE isolation = 'read_uncommitted'", NULL), all);
  sqlite3_stmt *st = st_prep(db, "SELECT count(*) FROM t WHERE isolation = 'serializable'", NULL);
  assert_int_equal(sqlite3_step(st), SQLITE_ERROR);
  assert_non_null(strstr(sqlite3_errmsg(db), "isolation takes 'read_uncommitted' or 'read_committed'"));
  sqlite3_finalize(st);
  st_close(db);
  free(json);
}

/* What is done to each .txnindex of a copy of g-transactions. */
enum { TXNINDEX_DELETE, TXNINDEX_CUT, TXNINDEX_STALE };

static void spoil_txnindex(const char *dir, int how) {
  static const char *const bases[] = {"00000000000000000000", "00000000000000000182",
                                      "00000000000000000364", "00000000000000000545",
                                      "00000000000000000728", "00000000000000000907",
                                      "00000000000000001089"};
  for (size_t i = 0; i < sizeof bases / sizeof *bases; i++) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s.txnindex", dir, bases[i]);
    size_t n;
    uint8_t *p = t_read_file(path, &n);
    assert_non_null(p);
    assert_true(n >= 34);
    if (how == TXNINDEX_DELETE) {
      assert_int_equal(unlink(path), 0);
    } else if (how == TXNINDEX_CUT) {
      /* One entry and half of the next: the rest never written. */
      assert_int_equal(t_write_file(path, p, n >= 68 ? 51 : 17), 0);
    } else {
      /* Entries of another log: the other producer's transactions (hiding
      ** committed records, missing the aborted ones), and one whose ABORT
      ** marker is no marker at all. */
      for (size_t k = 0; k + 34 <= n; k += 34) {
        uint64_t pid = (uint64_t)kl_get_i64(p + k + 2);
        kl_put_u64(p + k + 2, pid == 1000 ? 1001 : 1000);
      }
      uint8_t *q = malloc(n + 34);
      assert_non_null(q);
      memcpy(q, p, n);
      memcpy(q + n, p, 34);
      kl_put_u64(q + n + 10, (uint64_t)kl_get_i64(p + 18) + 1);
      kl_put_u64(q + n + 18, (uint64_t)kl_get_i64(p + 18) + 2);
      assert_int_equal(t_write_file(path, q, n + 34), 0);
      free(q);
    }
    free(p);
  }
}

/* read_committed over a copy of g-transactions whose .txnindex files were
** spoiled (how): exactly the records the markers commit, in every form. */
static void read_committed_spoiled(int how) {
  sqlite3 *db = st_open();
  char *dir = t_mkdtemp("rc-txnindex");
  assert_int_equal(t_copy_dir(t_fixture("g-transactions"), dir), 0);
  spoil_txnindex(dir, how);
  /* The first read_committed query reads each of the 75 markers; the next
  ** one finds them known. */
  static const char point[] =
      "SELECT count(*) FROM kafka_log(?1) WHERE isolation = 'read_committed' AND offset = 700";
  st_exec(db, "SELECT kafka_log_stats_reset()");
  assert_int_equal(st_int(db, point, "t", dir), 1);
  st_stats first = st_get_stats(db);
  st_exec(db, "SELECT kafka_log_stats_reset()");
  assert_int_equal(st_int(db, point, "t", dir), 1);
  st_stats again = st_get_stats(db);
  assert_true(first.batches_decoded >= 75);
  assert_true(again.batches_decoded <= 2 && again.batch_headers < 20);
  size_t n;
  uint8_t *json = t_read_file(t_fixture_expected("g-transactions"), &n);
  assert_non_null(json);
  st_exec(db, "CREATE TEMP TABLE e(off INTEGER PRIMARY KEY)");
  char *ins = sqlite3_mprintf("INSERT INTO e %s", k_committed_sql);
  st_run(db, ins, "t", (const char *)json);
  sqlite3_free(ins);
  int64_t want = st_int(db, "SELECT count(*) FROM e", NULL);
  assert_true(want > 0 && want < st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir));
  static const char *const forms[] = {
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'read_committed'",
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'read_committed' ORDER BY offset DESC",
      "SELECT offset FROM kafka_log(?1) WHERE isolation = 'read_committed' AND offset BETWEEN 300 AND 900",
  };
  for (int round = 0; round < 2; round++) { /* the first query, and one from the cache */
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
      char *q = sqlite3_mprintf("SELECT (SELECT count(*) FROM (SELECT * FROM (%s) EXCEPT SELECT off FROM e)),"
                                " (SELECT count(*) FROM (SELECT off FROM e WHERE %d OR off BETWEEN 300 AND 900"
                                "  EXCEPT SELECT * FROM (%s)))",
                                forms[i], i != 2, forms[i]);
      sqlite3_stmt *s = st_prep(db, q, "t", dir);
      assert_int_equal(sqlite3_step(s), SQLITE_ROW);
      if (sqlite3_column_int64(s, 0) || sqlite3_column_int64(s, 1)) {
        fail_msg("%s: %lld extra, %lld missing", forms[i], (long long)sqlite3_column_int64(s, 0),
                 (long long)sqlite3_column_int64(s, 1));
      }
      sqlite3_finalize(s);
      sqlite3_free(q);
    }
  }
  free(json);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* A copy made without the .txnindex files (or a broker that crashed before
** writing them): the markers still say what was aborted. */
static void test_read_committed_without_txnindex(void **state) {
  (void)state;
  read_committed_spoiled(TXNINDEX_DELETE);
}

static void test_read_committed_txnindex_cut_short(void **state) {
  (void)state;
  read_committed_spoiled(TXNINDEX_CUT);
}

/* Entries that name the wrong producer, and one for no marker. */
static void test_read_committed_stale_txnindex(void **state) {
  (void)state;
  read_committed_spoiled(TXNINDEX_STALE);
}

static void test_read_committed_written(void **state) {
  (void)state;
  char *root = t_mkdtemp("rc");
  /* offsets 0-4 plain, 5-9 pid 7 (open at first), 10-14 plain. */
  kw_writer *w = open_part(root, "pay-0", 1 << 20);
  put_records(w, 5, 5, 1000, NULL);
  kl_batch_spec t7 = txn_spec(7, 0);
  put_records(w, 5, 5, 1000, &t7);
  put_records(w, 5, 5, 1000, NULL);
  sqlite3 *db = st_open();
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/pay-0", root);
  const char *rc_sql = "SELECT group_concat(offset) FROM kafka_log(?1) WHERE isolation = 'read_committed'";
  /* An open transaction: rows stop at its first offset, the last stable
  ** offset. */
  assert_int_equal(kw_close(w), 0);
  char *s = st_text(db, rc_sql, "t", dir);
  assert_string_equal(s, "0,1,2,3,4");
  free(s);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 15);
  /* Committed (marker at 15, timestamp above every record): all data rows.
  ** Kafka's lookup by time would answer 15, the marker; rows are data
  ** records, so there is none at or after its time. */
  char seg[4200];
  t_rmdir(dir);
  w = open_part(root, "pay-0", 1 << 20);
  put_records(w, 5, 5, 1000, NULL);
  put_records(w, 5, 5, 1000, &t7);
  put_records(w, 5, 5, 1000, NULL);
  put_marker(w, 7, 1, 99999);
  assert_int_equal(kw_close(w), 0);
  s = st_text(db, "SELECT count(*) || ',' || max(offset) FROM kafka_log(?1) WHERE isolation = 'read_committed'",
              "t", dir);
  assert_string_equal(s, "15,14");
  free(s);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE timestamp >= 99999", "t", dir), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE control_type = 'COMMIT' AND "
                              "max_timestamp >= 99999", "t", dir), 1);
  /* Aborted, as the .txnindex records it (Kafka writes the entry with the
  ** marker): 5-9 are not rows; the high watermark then caps at 12. */
  t_rmdir(dir);
  w = open_part(root, "pay-0", 1 << 20);
  put_records(w, 5, 5, 1000, NULL);
  put_records(w, 5, 5, 1000, &t7);
  put_records(w, 5, 5, 1000, NULL);
  put_marker(w, 7, 0, 99999);
  put_records(w, 3, 5, 1000, NULL);
  assert_int_equal(kw_close(w), 0);
  uint8_t e[34] = {0};
  kl_put_u64(e + 2, 7);
  kl_put_u64(e + 10, 5);
  kl_put_u64(e + 18, 15);
  kl_put_u64(e + 26, 5);
  snprintf(seg, sizeof seg, "%s/00000000000000000000.txnindex", dir);
  assert_int_equal(t_write_file(seg, e, sizeof e), 0);
  s = st_text(db, rc_sql, "t", dir);
  assert_string_equal(s, "0,1,2,3,4,10,11,12,13,14,16,17,18");
  free(s);
  t_put_file(root, "replication-offset-checkpoint", "0\n1\npay 0 13\n");
  s = st_text(db, rc_sql, "t", dir);
  assert_string_equal(s, "0,1,2,3,4,10,11,12");
  free(s);
  /* read_uncommitted ignores both. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 18);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* kafka_partitions over a log directory holding every Kafka-written
** fixture as a partition ("<set>-0"), against Kafka's reading of each
** (expected.json): log start and end offsets, segments, bytes of the .log
** files, the first data record's timestamp and the largest timestamp. */
static void test_partitions_table(void **state) {
  (void)state;
  const char *sets[32];
  size_t nsets = t_fixture_names(0, 0, sets, 32);
  assert_true(nsets < 32);
  char *root = t_mkdtemp("parts");
  char name[256];
  for (int i = 0; sets[i]; i++) {
    snprintf(name, sizeof name, "%s-0", sets[i]);
    copy_fixture(sets[i], root, name);
  }
  t_put_file(root, "replication-offset-checkpoint", "0\n1\na-tiny 0 7\n");
  t_put_file(root, "recovery-point-offset-checkpoint", "0\n1\nc-gzip 0 3\n");
  t_put_file(root, "log-start-offset-checkpoint", "0\n1\nb-multi-segment 0 12345\n");
  sqlite3 *db = st_open();
  for (int i = 0; sets[i]; i++) {
    uint8_t *json;
    size_t n;
    json = t_read_file(t_fixture_expected(sets[i]), &n);
    assert_non_null(json);
    const char *e_sql =
        "SELECT json_extract(?1,'$.log.log_start_offset') || ' ' || json_extract(?1,'$.log.log_end_offset')"
        " || ' ' || json_extract(?1,'$.log.segment_count') || ' ' ||"
        " (SELECT sum(json_extract(f.value,'$.size')) FROM json_each(?1,'$.files') f"
        "   WHERE json_extract(f.value,'$.name') LIKE '%.log') || ' ' ||"
        " coalesce((SELECT json_extract(r.value,'$[1]') FROM json_each(?1,'$.segments') s,"
        "   json_each(s.value,'$.batches') b, json_each(b.value,'$.records') r"
        "   WHERE json_extract(b.value,'$.is_control') = 0 ORDER BY json_extract(r.value,'$[0]') LIMIT 1), 'NULL')"
        " || ' ' || coalesce((SELECT max(json_extract(b.value,'$.max_timestamp')) FROM json_each(?1,'$.segments') s,"
        "   json_each(s.value,'$.batches') b), 'NULL')";
    char *want = st_text(db, e_sql, "t", (const char *)json);
    char *got = st_text(db, "SELECT log_start_offset || ' ' || log_end_offset || ' ' || segments || ' ' ||"
                            " bytes || ' ' || coalesce(first_timestamp, 'NULL') || ' ' ||"
                            " coalesce(last_timestamp, 'NULL') FROM kafka_partitions(?1) WHERE topic = ?2",
                        "tt", root, sets[i]);
    if (strcmp(sets[i], "b-multi-segment") == 0) { /* its log start offset: the checkpoint's */
      char *fixed = st_text(db, "SELECT '12345' || substr(?1, instr(?1, ' '))", "t", want);
      free(want);
      want = fixed;
      char *first = st_text(db, "SELECT timestamp FROM kafka_log(?1) WHERE offset = 12345", "t",
                            t_fixture(sets[i]));
      /* and so does its first record */
      char *fixed2 = st_text(db, "SELECT (SELECT group_concat(x, ' ') FROM (SELECT CASE WHEN key = 4 THEN ?2"
                                 " ELSE value END AS x FROM json_each('[\"' || replace(?1, ' ', '\",\"') || '\"]')))",
                             "tt", want, first);
      free(want);
      want = fixed2;
      free(first);
    }
    print_message("  %-24s kafka: %s\n  %-24s here:  %s\n", sets[i], want, "", got);
    assert_string_equal(got, want);
    free(want);
    free(got);
    free(json);
  }
  assert_int_equal(st_int(db, "SELECT high_watermark FROM kafka_partitions(?1) WHERE topic = 'a-tiny'", "t", root), 7);
  assert_int_equal(st_int(db, "SELECT recovery_point FROM kafka_partitions(?1) WHERE topic = 'c-gzip'", "t", root), 3);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_partitions(?1) WHERE high_watermark IS NULL", "t", root),
                   (int64_t)nsets - 1); /* a-tiny's is in the checkpoint */
  assert_int_equal(st_int(db, "SELECT last_stable_offset FROM kafka_partitions(?1) WHERE topic = 'g-transactions'",
                          "t", root), 1275);
  /* Listing only: a filter on topic opens that partition alone. */
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  assert_int_equal(st_int(db, "SELECT log_end_offset FROM kafka_partitions(?1) WHERE topic = 'a-tiny'", "t", root),
                   10);
  st_stats s = st_get_stats(db);
  assert_true(s.segments_opened <= 1);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* key_type / value_type 'text': UTF-8 keys and values compare and print as
** TEXT, other bytes stay BLOBs (nothing is lost to a conversion). */
static void test_text_columns(void **state) {
  (void)state;
  char *root = t_mkdtemp("text");
  kw_writer *w = open_part(root, "t-0", 1 << 20);
  kl_rec_in r[3];
  memset(r, 0, sizeof r);
  static const uint8_t bad[2] = {0xc3, 0x28}; /* not UTF-8 */
  r[0].key = "c10", r[0].key_len = 3, r[0].value = "{\"a\":1}", r[0].value_len = 7;
  r[1].key = bad, r[1].key_len = 2, r[1].value = bad, r[1].value_len = 2;
  r[2].key = NULL, r[2].key_len = -1, r[2].value = "", r[2].value_len = 0;
  assert_int_equal(kw_append(w, NULL, r, 3), 0);
  assert_int_equal(kw_close(w), 0);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/t-0", root);
  sqlite3 *db = st_open();
  /* key = compares bytes in the module: TEXT 'c10' finds the BLOB key;
  ** SQLite's own comparison of a BLOB with a TEXT (+key) never does. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE key = 'c10'", "t", dir), 1);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE +key = 'c10'", "t", dir), 0);
  assert_int_equal(st_int(db, "SELECT offset FROM kafka_log(?1) WHERE key = 'c10' AND key_type = 'text'", "t", dir), 0);
  char *s = st_text(db, "SELECT group_concat(typeof(key) || ':' || typeof(value), ' ') FROM kafka_log(?1, 'error',"
                        " NULL, NULL, 'text', 'text')", "t", dir);
  assert_string_equal(s, "text:text blob:blob null:text");
  free(s);
  s = st_text(db, "SELECT json_extract(value, '$.a') FROM kafka_log(?1) WHERE value_type = 'TEXT' AND offset = 0",
              "t", dir);
  assert_string_equal(s, "1");
  free(s);
  char *c = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, key_type='text')", dir);
  st_exec(db, c);
  sqlite3_free(c);
  s = st_text(db, "SELECT group_concat(typeof(key) || ':' || typeof(value), ' ') FROM t", NULL);
  assert_string_equal(s, "text:blob blob:blob null:blob");
  free(s);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE key_type = 'blob' AND typeof(key) = 'text'", NULL), 0);
  sqlite3_stmt *st = st_prep(db, "SELECT * FROM t WHERE key_type = 'json'", NULL);
  assert_int_equal(sqlite3_step(st), SQLITE_ERROR);
  sqlite3_finalize(st);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* ---- kafka_batches, kafka_segments, kafka_log_check over a listing ---- */

/* The three listing tables and their visible columns but topic and
** partition. */
static const struct {
  const char *table, *cols;
} k_listing_tables[] = {
    {"kafka_batches",
     "segment, position, base_offset, last_offset, record_count, size, magic, crc, crc_valid,"
     " attributes, last_offset_delta, base_timestamp, max_timestamp, compression, timestamp_type,"
     " producer_id, producer_epoch, base_sequence, partition_leader_epoch, is_transactional,"
     " is_control, control_type, coordinator_epoch"},
    {"kafka_segments",
     "segment, next_offset, log_bytes, index_bytes, timeindex_bytes, txnindex_bytes,"
     " index_entries, timeindex_entries, index_zero_slots, timeindex_zero_slots, max_timestamp,"
     " max_timestamp_offset, is_live"},
    {"kafka_log_check", "segment, file, position, kind, severity, message"},
};

/* The partitions of make_listing_root, in listing order. */
static const struct {
  const char *topic;
  int p;
  const char *dir;
} k_listing_parts[] = {
    {"clicks", 0, "clicks-0"}, {"empty", 0, "empty-0"},     {"orders", 0, "orders-0"},
    {"orders", 1, "orders-1"}, {"payments", 0, "payments-0"},
};

/* root: orders-0 (100 records), orders-1 (250, its first .timeindex
** removed: a finding), clicks-0 (30), a copy of g-transactions (Kafka's
** own writing, with control batches) as payments-0, and empty-0 without
** segments. */
static char *make_listing_root(void) {
  char *root = t_mkdtemp("listing");
  kw_make_part(root, "orders-0", 100, 1000000, "value-");
  kw_make_part(root, "orders-1", 250, 2000000, "value-");
  kw_make_part(root, "clicks-0", 30, 4000000, "value-");
  copy_fixture("g-transactions", root, "payments-0");
  char p[4096];
  snprintf(p, sizeof p, "%s/empty-0", root);
  assert_int_equal(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/orders-1/00000000000000000000.timeindex", root);
  assert_int_equal(unlink(p), 0);
  return root;
}

/* "topic-partition" of the rows of sql, each run of equal ones once, in
** the order the rows come (caller frees). */
static char *partition_runs(sqlite3 *db, const char *sql, const char *path) {
  sqlite3_stmt *st = st_prep(db, sql, "t", path);
  st_buf b = {0};
  char last[256] = "";
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char cur[256];
    snprintf(cur, sizeof cur, "%s-%d", (const char *)sqlite3_column_text(st, 0),
             sqlite3_column_int(st, 1));
    if (strcmp(cur, last) != 0) st_buf_printf(&b, "%s%s", b.p ? "," : "", cur);
    snprintf(last, sizeof last, "%s", cur);
  }
  assert_int_equal(rc, SQLITE_DONE);
  sqlite3_finalize(st);
  char *r = strdup(b.p ? b.p : "");
  st_buf_free(&b);
  return r;
}

/* Each table over a log directory gives, for each partition, exactly the
** rows it gives for that partition directory alone, with the partition's
** topic and partition; rows come partition after partition in listing
** order; kafka_batches' offset bounds hold in every partition. */
static void test_listing_tables(void **state) {
  (void)state;
  char *root = make_listing_root();
  sqlite3 *db = st_open();
  for (size_t t = 0; t < sizeof k_listing_tables / sizeof *k_listing_tables; t++) {
    const char *tab = k_listing_tables[t].table, *cols = k_listing_tables[t].cols;
    int64_t total = 0;
    for (size_t i = 0; i < sizeof k_listing_parts / sizeof *k_listing_parts; i++) {
      char dir[4096];
      snprintf(dir, sizeof dir, "%s/%s", root, k_listing_parts[i].dir);
      const char *topic = k_listing_parts[i].topic;
      int part = k_listing_parts[i].p;
      int empty = strcmp(topic, "empty") == 0;
      /* Alone, a directory without segments is not a partition (Kafka
      ** keeps one in each): an error but for kafka_log_check. */
      if (empty && strcmp(tab, "kafka_log_check") != 0) continue;
      for (int bounded = 0; bounded < 2; bounded++) {
        if (bounded && strcmp(tab, "kafka_batches") != 0) break;
        const char *where = bounded ? " AND last_offset >= 40 AND base_offset < 60" : "";
        char *both[2];
        for (int way = 0; way < 2; way++) {
          both[way] = sqlite3_mprintf(
              "SELECT count(*) FROM (SELECT %s FROM %s(?1) WHERE topic = %Q AND partition = %d%s"
              " EXCEPT SELECT %s FROM %s(?2) WHERE 1%s)",
              cols, tab, topic, part, where, cols, tab, where);
          if (way) { /* the other way round: ?1 alone, ?2 the log directory */
            sqlite3_free(both[way]);
            both[way] = sqlite3_mprintf(
                "SELECT count(*) FROM (SELECT %s FROM %s(?2) WHERE 1%s EXCEPT SELECT %s FROM"
                " %s(?1) WHERE topic = %Q AND partition = %d%s)",
                cols, tab, where, cols, tab, topic, part, where);
          }
          print_message("  %s %s%s\n", tab, k_listing_parts[i].dir, where);
          assert_int_equal(count_of(db, both[way], root, dir), 0);
          sqlite3_free(both[way]);
        }
        char *n1 = sqlite3_mprintf("SELECT count(*) FROM %s(?1) WHERE topic = %Q AND partition = %d%s",
                                   tab, topic, part, where);
        char *n2 = sqlite3_mprintf("SELECT count(*) FROM %s(?1) WHERE 1%s", tab, where);
        int64_t in_root = count_of(db, n1, root, NULL);
        assert_int_equal(in_root, count_of(db, n2, dir, NULL));
        if (!bounded) total += in_root;
        if (!bounded && strcmp(tab, "kafka_log_check") != 0) assert_true(in_root > 0);
        sqlite3_free(n1);
        sqlite3_free(n2);
        /* A partition directory alone names itself. */
        char *q = sqlite3_mprintf("SELECT count(*) FROM %s(?1) WHERE topic IS NOT %Q OR partition IS NOT %d",
                                  tab, topic, part);
        assert_int_equal(count_of(db, q, dir, NULL), 0);
        sqlite3_free(q);
      }
    }
    char *q = sqlite3_mprintf("SELECT count(*) FROM %s(?1)", tab);
    int64_t all = count_of(db, q, root, NULL);
    sqlite3_free(q);
    q = sqlite3_mprintf("SELECT topic, partition FROM %s(?1)", tab);
    char *runs = partition_runs(db, q, root);
    sqlite3_free(q);
    print_message("  %s: %s\n", tab, runs);
    if (strcmp(tab, "kafka_log_check") == 0) {
      /* orders-1 lacks a .timeindex; empty-0 has no segments (kafka_log
      ** reads it as an empty log); the rest are sound. */
      assert_int_equal(all, total);
      assert_string_equal(runs, "empty-0,orders-1");
      assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE topic = 'empty' AND"
                                  " partition = 0 AND kind = 'no_segments'", "t", root), 1);
      assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE topic = 'orders' AND"
                                  " partition = 1 AND kind = 'missing_index'", "t", root), 1);
      assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'empty'", "t", root), 0);
    } else {
      assert_int_equal(all, total);
      assert_string_equal(runs, "clicks-0,orders-0,orders-1,payments-0");
    }
    free(runs);
  }
  /* Comma-separated log directories: both listings, partition after
  ** partition. */
  char *root2 = t_mkdtemp("listing2");
  kw_make_part(root2, "orders-4", 60, 6000000, "value-");
  char *dirs = sqlite3_mprintf("%s,%s", root, root2);
  char *runs = partition_runs(db, "SELECT topic, partition FROM kafka_segments(?1)", dirs);
  assert_string_equal(runs, "clicks-0,orders-0,orders-1,orders-4,payments-0");
  free(runs);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE topic = 'orders' AND partition > 1",
                          "t", dirs), 12);
  sqlite3_free(dirs);
  t_rmdir(root2);
  free(root2);
  /* kafka_batches is the dump of what is on disk: batches below the log
  ** start offset are rows too (kafka_log does not read them). */
  t_put_file(root, "log-start-offset-checkpoint", "0\n1\norders 1 40\n");
  assert_int_equal(st_int(db, "SELECT min(base_offset) FROM kafka_batches(?1) WHERE topic = 'orders' AND"
                              " partition = 1", "t", root), 0);
  assert_int_equal(st_int(db, "SELECT min(offset) FROM kafka_log(?1) WHERE topic = 'orders' AND"
                              " partition = 1", "t", root), 40);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* Topic and partition constraints choose partitions before any is opened:
** on a fresh connection, a query for one partition of the log directory
** opens exactly the segments it opens for that partition alone; SQLite
** checking the same constraints itself (+topic, +partition) gives the same
** rows. */
static void test_listing_pushdown(void **state) {
  (void)state;
  char *root = make_listing_root();
  char one[4096];
  snprintf(one, sizeof one, "%s/orders-1", root);
  static const char *const conds[][2] = {
      {"topic = 'orders' AND partition = 1", "+topic = 'orders' AND +partition = 1"},
      {"topic IN ('orders', 'nope') AND partition >= 1 AND partition < 5",
       "+topic IN ('orders', 'nope') AND +partition >= 1 AND +partition < 5"},
      {"topic = 'orders' AND partition IN (1, 7)", "+topic = 'orders' AND +partition IN (1, 7)"},
  };
  for (size_t t = 0; t < sizeof k_listing_tables / sizeof *k_listing_tables; t++) {
    const char *tab = k_listing_tables[t].table, *cols = k_listing_tables[t].cols;
    char *alone_sql = sqlite3_mprintf("SELECT %s FROM %s(?1)", cols, tab);
    sqlite3 *db = st_open();
    st_buf alone = {0};
    st_render(db, st_prep(db, alone_sql, "t", one), &alone);
    st_stats s_alone = st_get_stats(db);
    st_close(db);
    assert_true(s_alone.segments_opened > 0);
    for (size_t c = 0; c < sizeof conds / sizeof *conds; c++) {
      st_buf got[2] = {{0}, {0}};
      st_stats s[2];
      for (int k = 0; k < 2; k++) {
        char *sql = sqlite3_mprintf("SELECT %s FROM %s(?1) WHERE %s", cols, tab, conds[c][k]);
        db = st_open(); /* fresh: nothing cached, counters at zero */
        st_render(db, st_prep(db, sql, "t", root), &got[k]);
        s[k] = st_get_stats(db);
        print_message("  %s\n", sql);
        st_print_stats("stats", &s[k]);
        if (k == 0) {
          char *eqp = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
          st_buf pb = {0};
          st_render(db, st_prep(db, eqp, "t", root), &pb);
          assert_non_null(strstr(pb.p, c == 1 ? "topic IN (...)" : "topic=?"));
          st_buf_free(&pb);
          sqlite3_free(eqp);
        }
        st_close(db);
        sqlite3_free(sql);
      }
      assert_string_equal(got[0].p ? got[0].p : "", alone.p ? alone.p : "");
      assert_string_equal(got[1].p ? got[1].p : "", alone.p ? alone.p : "");
      assert_int_equal(s[0].segments_opened, s_alone.segments_opened);
      assert_true(s[1].segments_opened > s[0].segments_opened);
      st_buf_free(&got[0]);
      st_buf_free(&got[1]);
    }
    st_buf_free(&alone);
    sqlite3_free(alone_sql);
  }
  t_rmdir(root);
  free(root);
}

/* A path that does not list is an error, as in kafka_log: a missing
** directory (SQLITE_CANTOPEN), a malformed checkpoint (SQLITE_CORRUPT
** naming the file and line). */
static void test_listing_errors(void **state) {
  (void)state;
  char *root = make_listing_root();
  char one[4096];
  snprintf(one, sizeof one, "%s/orders-1", root);
  sqlite3 *db = st_open();
  char missing[4200];
  snprintf(missing, sizeof missing, "%s/nope", root);
  t_put_file(root, "replication-offset-checkpoint", "0\n2\norders 1 40\n");
  const char *tabs[] = {"kafka_log", "kafka_batches", "kafka_segments", "kafka_log_check"};
  for (size_t t = 0; t < 4; t++) {
    char *sql = sqlite3_mprintf("SELECT count(*) FROM %s(?1)", tabs[t]);
    sqlite3_stmt *st = st_prep(db, sql, "t", missing);
    assert_int_equal(sqlite3_step(st), SQLITE_CANTOPEN);
    assert_non_null(strstr(sqlite3_errmsg(db), missing));
    sqlite3_finalize(st);
    const char *paths[] = {root, one};
    for (int i = 0; i < 2; i++) {
      st = st_prep(db, sql, "t", paths[i]);
      assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
      print_message("  %s: %s\n", tabs[t], sqlite3_errmsg(db));
      assert_non_null(strstr(sqlite3_errmsg(db), "replication-offset-checkpoint:4: expected 2 entries"));
      sqlite3_finalize(st);
    }
    sqlite3_free(sql);
  }
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* kafka_batches' hidden offset column: the last offset, so offset >= x
** lists the batches holding offsets from x on, pushed down as last_offset
** >= x is, and the same when SQLite compares. */
static void test_batches_offset(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  const char *dir = t_fixture("b-multi-segment");
  int64_t n = st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE last_offset >= 5000", "t", dir);
  assert_true(n > 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE offset >= 5000", "t", dir), n);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE offset + 0 >= 5000", "t", dir), n);
  assert_int_equal(st_int(db, "SELECT min(base_offset) <= 5000 AND max(last_offset) >= 5000 FROM (SELECT * FROM"
                              " kafka_batches(?1) WHERE offset >= 5000 LIMIT 1)", "t", dir), 1);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  st_buf b = {0};
  st_render(db, st_prep(db, "SELECT base_offset FROM kafka_batches(?1) WHERE offset >= 5000 LIMIT 20", "t", dir), &b);
  st_stats s = st_get_stats(db);
  assert_true(s.segments_opened <= 2); /* a seek, not a walk from the start */
  st_buf_free(&b);
  st_close(db);
}

/* tests/fixtures/broker, the log directory the README's examples use:
** its answers, so that the examples stay true. */
static void test_repository_broker(void **state) {
  (void)state;
  char root[4096];
  snprintf(root, sizeof root, "%s/broker", KL_FIXTURES);
  sqlite3 *db = st_open();
  st_buf b = {0};
  st_render(db, st_prep(db, "SELECT topic, partition, log_start_offset, log_end_offset, high_watermark,"
                            " recovery_point, segments FROM kafka_partitions(?1)", "t", root), &b);
  assert_string_equal(b.p, "'__consumer_offsets'|0|0|8|NULL|NULL|1\n'clicks'|0|0|2000|NULL|NULL|4\n"
                           "'orders'|0|0|10|10|10|1\n'orders'|1|100|20000|20000|NULL|9\n"
                           "'orders'|2|0|6000|NULL|NULL|11\n'payments'|0|0|1275|1200|1275|8\n");
  st_buf_free(&b);
  st_render(db, st_prep(db, "SELECT o.group_id, o.topic, o.partition, o.committed_offset,"
                            " p.log_end_offset - o.committed_offset FROM kafka_consumer_offsets(?1) o"
                            " JOIN kafka_partitions(?1) p USING (topic, partition)", "t", root), &b);
  assert_string_equal(b.p, "'analytics'|'clicks'|0|1500|500\n'analytics'|'payments'|0|1000|275\n"
                           "'billing'|'orders'|0|8|2\n'billing'|'orders'|1|15000|5000\n");
  st_buf_free(&b);
  /* read_committed stops at the checkpoint's high watermark (1200). */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'payments' AND"
                              " isolation = 'read_committed'", "t", root), 766);
  assert_int_equal(st_int(db, "SELECT max(offset) FROM kafka_log(?1) WHERE topic = 'payments' AND"
                              " isolation = 'read_committed'", "t", root), 1199);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1",
                          "t", root), 19900);
  assert_int_equal(st_int(db, "SELECT last_stable_offset FROM kafka_partitions(?1) WHERE topic = 'payments'",
                          "t", root), 1200); /* capped by the high watermark */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1)", "t", root), 0); /* sound */
  st_close(db);
}

/* An empty control batch, as the log cleaner leaves of a transaction it
** removed: no marker (Kafka's producer state and consumer pass over it),
** not damage. */
static void test_empty_control_batch(void **state) {
  (void)state;
  char *root = t_mkdtemp("emptyctl");
  kw_writer *w = open_part(root, "e-0", 1 << 20);
  put_records(w, 5, 5, 1000, NULL);
  assert_int_equal(kw_close(w), 0);
  char log[4200];
  snprintf(log, sizeof log, "%s/e-0/00000000000000000000.log", root);
  size_t n;
  uint8_t *old = t_read_file(log, &n);
  assert_non_null(old);
  uint8_t b[61] = {0};
  kl_put_u64(b, 5);                 /* base offset */
  kl_put_u32(b + 8, 61 - 12);       /* batch length */
  b[16] = 2;                        /* magic */
  kl_put_u16(b + 21, 0x30);         /* transactional, control */
  kl_put_u64(b + 27, 99999);        /* base timestamp */
  kl_put_u64(b + 35, 99999);        /* max timestamp */
  kl_put_u64(b + 43, 8);            /* producer id */
  kl_put_u32(b + 53, 0xffffffffu);  /* base sequence -1; record count 0 */
  uint8_t *all = malloc(n + sizeof b);
  assert_non_null(all);
  memcpy(all, old, n);
  memcpy(all + n, b, sizeof b);
  assert_int_equal(t_write_file(log, all, n + sizeof b), 0);
  t_fix_crc(log, (int64_t)n, sizeof b);
  free(all);
  free(old);
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/e-0", root);
  sqlite3 *db = st_open();
  char *s = st_text(db, "SELECT group_concat(base_offset || ':' || is_control || ':' || ifnull(control_type, 'none'))"
                        " FROM kafka_batches(?1)", "t", dir);
  assert_string_equal(s, "0:0:none,5:1:none");
  free(s);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 5);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE isolation = 'read_committed'", "t", dir), 5);
  assert_int_equal(st_int(db, "SELECT last_stable_offset FROM kafka_partitions(?1)", "t", dir), 6);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE severity = 'error'", "t", dir), 0);
  st_close(db);
  t_rmdir(root);
  free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_partitions_as_rows),
      cmocka_unit_test(test_partition_pushdown),
      cmocka_unit_test(test_order_and_dirs),
      cmocka_unit_test(test_order_by_timestamp_in_passes),
      cmocka_unit_test(test_parameter_path_order_by_offset),
      cmocka_unit_test(test_parameter_path_order_many_partitions),
      cmocka_unit_test(test_checkpoints),
      cmocka_unit_test(test_partition_path_forms),
      cmocka_unit_test(test_unreadable_checkpoint),
      cmocka_unit_test(test_logdir_listed_twice),
      cmocka_unit_test(test_changes_between_statements),
      cmocka_unit_test(test_malformed_checkpoint_ignore),
      cmocka_unit_test(test_topic_not_utf8),
      cmocka_unit_test(test_read_committed_fixture),
      cmocka_unit_test(test_read_committed_without_txnindex),
      cmocka_unit_test(test_read_committed_txnindex_cut_short),
      cmocka_unit_test(test_read_committed_stale_txnindex),
      cmocka_unit_test(test_read_committed_written),
      cmocka_unit_test(test_partitions_table),
      cmocka_unit_test(test_text_columns),
      cmocka_unit_test(test_listing_tables),
      cmocka_unit_test(test_listing_pushdown),
      cmocka_unit_test(test_listing_errors),
      cmocka_unit_test(test_batches_offset),
      cmocka_unit_test(test_repository_broker),
      cmocka_unit_test(test_empty_control_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
