/*
** test_logdir_named.c - kafka_log over a log directory of many partitions
** for a query that names one (topic = ? AND partition = ?): the listing
** keeps that partition alone and one log is opened (the counters
** dirs_listed, partitions_listed and logs_opened say so), while the
** answers are those of the whole listing (the same queries with +topic and
** partition + 0, which SQLite checks itself), whatever the directory holds
** (a partition spelt with a leading zero, directories that are not
** partitions, checkpoints), with the same errors, and with rowids that
** mean one row for a whole statement however its listings were made.
*/
#include "sqltest.h"

#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kwriter.h"

#define TOPICS 30
#define PARTS 10

/* n records at offsets 0.., timestamps ts0 + 10 * offset, 5 a batch, the
** values naming the partition. */
static void write_part(const char *root, const char *name, int n, int64_t ts0) {
  char prefix[48];
  snprintf(prefix, sizeof prefix, "%.40s@", name);
  kw_make_part(root, name, n, ts0, prefix);
}

/* TOPICS x PARTS partitions topic-TT-P of 20 + P records, and what a
** listing must get right beside them: orders-1 and orders-01 (both
** partition 1 of orders to the listing), orders-2 being deleted, a
** directory that is not a partition, the checkpoints (a log start for
** orders 1 and topic-03 4). */
static char *make_root(void) {
  char *root = t_mkdtemp("named");
  for (int t = 0; t < TOPICS; t++) {
    for (int p = 0; p < PARTS; p++) {
      char name[64];
      snprintf(name, sizeof name, "topic-%02d-%d", t, p);
      write_part(root, name, 20 + p, 1000000 * (t + 1));
    }
  }
  write_part(root, "orders-1", 40, 5000000);
  write_part(root, "orders-01", 12, 6000000);
  write_part(root, "orders-2.0a1b2c3d4e5f60718293a4b5c6d7e8f9-delete", 9, 7000000);
  char p[4096];
  snprintf(p, sizeof p, "%s/lost+found", root);
  assert_int_equal(mkdir(p, 0755), 0);
  t_put_file(root, "meta.properties", "version=1\n");
  t_put_file(root, "log-start-offset-checkpoint", "0\n2\norders 1 15\ntopic-03 4 6\n");
  t_put_file(root, "replication-offset-checkpoint", "0\n1\norders 1 40\n");
  return root;
}

static int64_t stat_of(sqlite3 *db, const char *key) {
  char sql[128];
  snprintf(sql, sizeof sql, "SELECT json_extract(kafka_log_stats(), '$.%s')", key);
  return st_int(db, sql, NULL);
}

/* A lookup on a fresh connection opens one partition of 300, through a
** parameter and through literals (which the plan sees). */
static void test_one_partition_opened(void **state) {
  (void)state;
  char *root = make_root();
  sqlite3 *db = st_open();
  char *v = st_text(db, "SELECT CAST(value AS TEXT) FROM kafka_log(?1) WHERE topic = ?2 AND "
                        "partition = ?3 AND offset = ?4", "ttii", root, "topic-17", (int64_t)6,
                    (int64_t)21);
  assert_string_equal(v, "topic-17-6@21");
  free(v);
  print_message("  dirs_listed %lld, partitions_listed %lld, logs_opened %lld\n",
                (long long)stat_of(db, "dirs_listed"), (long long)stat_of(db, "partitions_listed"),
                (long long)stat_of(db, "logs_opened"));
  assert_int_equal(stat_of(db, "logs_opened"), 1);
  assert_int_equal(stat_of(db, "partitions_listed"), 1);
  /* The partition alone: the log directory, which holds Kafka's files, is
  ** not listed (its 302 names), the partition is looked up by name. */
  assert_int_equal(stat_of(db, "dirs_listed"), 1);
  st_close(db);

  db = st_open();
  char *q = sqlite3_mprintf("SELECT count(*) FROM kafka_log(%Q) WHERE topic = 'topic-29' AND "
                            "partition = 9 AND offset >= 10", root);
  assert_int_equal(st_int(db, q, NULL), 19);
  sqlite3_free(q);
  assert_int_equal(stat_of(db, "logs_opened"), 1);
  assert_int_equal(stat_of(db, "partitions_listed"), 1);
  st_close(db);

  /* A query naming no partition lists them all (offset 0 is deleted in
  ** topic-03-4, orders-1 and orders-01 by the log start checkpoint). */
  db = st_open();
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset = 0", "t", root),
                   TOPICS * PARTS - 1);
  assert_int_equal(stat_of(db, "partitions_listed"), TOPICS * PARTS + 2);
  assert_int_equal(stat_of(db, "logs_opened"), TOPICS * PARTS + 2);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* sql with its topic and partition constraints made SQLite's own: every
** "[x.]topic = " becomes "+[x.]topic = ", every "[x.]partition = "
** "[x.]partition + 0 = ". */
static char *unpushed(const char *sql) {
  st_buf b = {0};
  for (const char *p = sql; *p;) {
    int t = strncmp(p, "topic = ", 8) == 0, q = strncmp(p, "partition = ", 12) == 0;
    if ((t || q) && p > sql && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) t = q = 0;
    if (t || q) {
      /* The column's qualifier, already copied, goes after the "+". */
      size_t k = b.n;
      while (k > 0 && (isalnum((unsigned char)b.p[k - 1]) || b.p[k - 1] == '.')) k--;
      char qual[32];
      snprintf(qual, sizeof qual, "%.*s", (int)(b.n - k), b.p + k);
      b.n = k;
      b.p[k] = 0;
      st_buf_printf(&b, t ? "+%stopic = " : "%spartition + 0 = ", qual);
      p += t ? 8 : 12;
    } else {
      st_buf_printf(&b, "%c", *p++);
    }
  }
  char *a = sqlite3_mprintf("%s", b.p);
  st_buf_free(&b);
  return a;
}

/* Each query's rows, on a fresh connection (the named listing), equal the
** rows of the same query with the constraints SQLite's (the whole
** listing). */
static void test_same_answers(void **state) {
  (void)state;
  char *root = make_root();
  static const char *const qs[] = {
      /* orders-1 and orders-01 are both partition 1. */
      "SELECT topic, partition, offset, CAST(value AS TEXT) FROM kafka_log(?1) WHERE topic = "
      "'orders' AND partition = 1 ORDER BY 3, 4",
      /* The log start offset of the checkpoint holds. */
      "SELECT count(*), min(offset) FROM kafka_log(?1) WHERE topic = 'topic-03' AND partition = 4",
      "SELECT offset FROM kafka_log(?1) WHERE topic = 'topic-03' AND partition = 4 AND offset = 2",
      "SELECT offset, timestamp FROM kafka_log(?1) WHERE topic = 'topic-05' AND partition = 3 AND "
      "timestamp BETWEEN 6000050 AND 6000120 ORDER BY offset DESC",
      "SELECT offset FROM kafka_log(?1) WHERE topic = 'topic-05' AND partition = 3 ORDER BY offset "
      "DESC LIMIT 3",
      "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 1 AND "
      "isolation = 'read_committed'",
      /* Nothing by those names. */
      "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'topic-05' AND partition = 10",
      "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'orders' AND partition = 2",
      "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'lost+found' AND partition = 0",
      "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'topic-05' AND partition = -3",
      "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'topic-05' AND partition = 3.0",
      "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'topic 05' AND partition = 3",
  };
  for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
    sqlite3 *db = st_open();
    st_buf a = {0}, b = {0};
    st_render(db, st_prep(db, qs[i], "t", root), &a);
    char *u = unpushed(qs[i]);
    print_message("  %s\n  %s\n", qs[i], u);
    sqlite3 *db2 = st_open();
    st_render(db2, st_prep(db2, u, "t", root), &b);
    assert_string_equal(a.p, b.p);
    assert_true(stat_of(db, "logs_opened") <= 2);
    sqlite3_free(u);
    st_buf_free(&a);
    st_buf_free(&b);
    st_close(db);
    st_close(db2);
  }
  t_rmdir(root);
  free(root);
}

/* The error a whole listing gives, a named one gives. */
static void test_same_errors(void **state) {
  (void)state;
  char *root = make_root();
  /* A malformed line far from the topic asked for. */
  t_put_file(root, "replication-offset-checkpoint", "0\n2\norders 1 40\nzzz x 1\n");
  const char *named = "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'topic-01' AND partition = 1";
  const char *whole = "SELECT count(*) FROM kafka_log(?1) WHERE +topic = 'topic-01' AND partition + 0 = 1";
  char msg[2][512];
  for (int k = 0; k < 2; k++) {
    sqlite3 *db = st_open();
    sqlite3_stmt *st = st_prep(db, k ? whole : named, "t", root);
    assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
    snprintf(msg[k], sizeof msg[k], "%s", sqlite3_errmsg(db));
    print_message("  %s\n", msg[k]);
    sqlite3_finalize(st);
    st_close(db);
  }
  assert_string_equal(msg[0], msg[1]);
  assert_non_null(strstr(msg[0], "replication-offset-checkpoint:4: malformed entry"));
  /* A path that is not there. */
  char *gone = sqlite3_mprintf("%s/nope", root);
  for (int k = 0; k < 2; k++) {
    sqlite3 *db = st_open();
    sqlite3_stmt *st = st_prep(db, k ? whole : named, "t", gone);
    assert_int_equal(sqlite3_step(st), SQLITE_CANTOPEN);
    snprintf(msg[k], sizeof msg[k], "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    st_close(db);
  }
  assert_string_equal(msg[0], msg[1]);
  sqlite3_free(gone);
  /* A partition directory given alone: its own name, or nothing. */
  t_put_file(root, "replication-offset-checkpoint", "0\n0\n");
  char *one = sqlite3_mprintf("%s/topic-01-1", root);
  sqlite3 *db = st_open();
  assert_int_equal(st_int(db, named, "t", one), 21);
  st_close(db);
  db = st_open();
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'topic-01' AND "
                              "partition = 2", "t", one), 0);
  st_close(db);
  sqlite3_free(one);
  t_rmdir(root);
  free(root);
}

/* A table queried on other partitions again and again lists the whole
** path after KL_NAMED_LISTINGS named ones, and reads nothing more of it
** after. */
static void test_named_then_whole(void **state) {
  (void)state;
  char *root = make_root();
  sqlite3 *db = st_open();
  const char *q = "SELECT count(*) FROM kafka_log(?1) WHERE topic = ?2 AND partition = ?3";
  int64_t listed = 0;
  for (int i = 0; i < 8; i++) {
    char topic[16];
    snprintf(topic, sizeof topic, "topic-%02d", i);
    assert_int_equal(st_int(db, q, "tti", root, topic, (int64_t)i), 20 + i);
    int64_t now = stat_of(db, "partitions_listed");
    print_message("  lookup %d: partitions_listed %lld\n", i, (long long)now);
    if (i < 4) assert_int_equal(now, i + 1);
    else if (i == 4) assert_int_equal(now, 4 + TOPICS * PARTS + 2);
    else assert_int_equal(now, listed);
    listed = now;
  }
  /* The same partition again after a named listing serves from it. */
  st_close(db);
  db = st_open();
  for (int i = 0; i < 3; i++) {
    assert_int_equal(st_int(db, q, "tti", root, "topic-09", (int64_t)9), 29);
  }
  assert_int_equal(stat_of(db, "partitions_listed"), 1);
  st_close(db);
  t_rmdir(root);
  free(root);
}

/* Rowids mean one row for the whole statement: an OR whose terms SQLite
** may plan apart (one naming a partition, one not), a join probing
** partition after partition, and the rowid of a row found through a named
** listing and through the whole one. */
static void test_rowids_stable(void **state) {
  (void)state;
  char *root = make_root();
  static const char *const qs[] = {
      "SELECT count(*), count(DISTINCT rowid) FROM kafka_log(?1) WHERE (topic = 'topic-04' AND "
      "partition = 2 AND offset < 8) OR offset = 3",
      "SELECT count(*), count(DISTINCT rowid) FROM kafka_log(?1) WHERE (topic = 'topic-04' AND "
      "partition = 2) OR (topic = 'topic-07' AND partition = 1) OR (topic = 'orders' AND "
      "partition = 1 AND offset > 30)",
      "SELECT count(*), count(DISTINCT k.rowid), sum(k.offset) FROM (SELECT value AS t FROM "
      "json_each('[\"topic-00\",\"topic-11\",\"topic-22\",\"topic-29\",\"orders\",\"topic-03\","
      "\"topic-11\"]')) v, json_each('[0,1,2,3,4,5,6,7,8,9]') p JOIN kafka_log(?1) k ON k.topic = v.t AND "
      "k.partition = p.value AND k.offset = p.value + 3",
  };
  for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
    sqlite3 *db = st_open();
    st_buf a = {0}, b = {0};
    st_render(db, st_prep(db, qs[i], "t", root), &a);
    char *u = unpushed(qs[i]);
    sqlite3 *db2 = st_open();
    st_render(db2, st_prep(db2, u, "t", root), &b);
    print_message("  %s-> %s", qs[i], a.p);
    assert_string_equal(a.p, b.p);
    sqlite3_free(u);
    st_buf_free(&a);
    st_buf_free(&b);
    st_close(db);
    st_close(db2);
  }
  sqlite3 *db = st_open();
  int64_t r1 = st_int(db, "SELECT rowid FROM kafka_log(?1) WHERE topic = 'topic-12' AND "
                          "partition = 5 AND offset = 7", "t", root);
  for (int i = 0; i < 6; i++) { /* past the named listings: the whole one */
    assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE topic = 'topic-13' AND "
                                "partition = ?2", "ti", root, (int64_t)i), 20 + i);
  }
  int64_t r2 = st_int(db, "SELECT rowid FROM kafka_log(?1) WHERE +topic = 'topic-12' AND "
                          "partition + 0 = 5 AND offset = 7", "t", root);
  assert_int_equal(r1, r2);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE rowid = ?2", "ti", root, r1),
                   1);
  st_close(db);
  t_rmdir(root);
  free(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_partition_opened),
      cmocka_unit_test(test_same_answers),
      cmocka_unit_test(test_same_errors),
      cmocka_unit_test(test_named_then_whole),
      cmocka_unit_test(test_rowids_stable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
