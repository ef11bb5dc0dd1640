/*
** test_write.c - INSERT, transactions, savepoints, retention DELETE, one
** writer at a time, readers in other connections and processes, and a
** writer killed at random moments (crash safety).
*/
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "sqltest.h"

/* Kills of the crash test (KL_CRASH_KILLS overrides). */
#define CRASH_KILLS 200

/* gs(value): 0 to 1000, for INSERT ... SELECT (the library has no
** generate_series). */
static void add_gs(sqlite3 *db) {
  if (sqlite3_exec(db, "CREATE TEMP TABLE gs(value INTEGER PRIMARY KEY);"
                       " WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 1000)"
                       " INSERT INTO gs SELECT i FROM c", NULL, NULL, NULL) != SQLITE_OK) {
    fail_msg("gs: %s", sqlite3_errmsg(db));
  }
}

/* A writing table: a new log (mode='create') the first time, the same log
** (mode='write') after, unless opts say which. */
static void create(sqlite3 *db, const char *name, const char *dir, const char *opts) {
  struct stat sb;
  const char *mode = opts && (strstr(opts, "mode=") || strstr(opts, "readonly=")) ? NULL
                     : stat(dir, &sb) == 0 ? "mode='write'" : "mode='create'";
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE %s USING kafka_log(%Q%s%s%s%s)", name, dir,
                              mode ? ", " : "", mode ? mode : "", opts ? ", " : "",
                              opts ? opts : "");
  st_exec(db, sql);
  sqlite3_free(sql);
}

/* The source rows of the round trip: sizes, nulls, text and blobs, headers
** with null and binary values, timestamps out of order. */
static void make_source(sqlite3 *db, int n) {
  st_exec(db, "CREATE TABLE src(i INTEGER PRIMARY KEY, key, value, timestamp, headers)");
  st_run(db,
         "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i + 1 < ?1)"
         " INSERT INTO src SELECT i,"
         "  CASE i % 4 WHEN 0 THEN NULL WHEN 1 THEN 'key-' || i WHEN 2 THEN randomblob(i % 9)"
         "   ELSE x'' END,"
         "  CASE WHEN i % 17 = 0 THEN NULL WHEN i % 5 = 0 THEN randomblob(i % 300)"
         "   ELSE printf('{\"n\": %d, \"pad\": \"%.*c\"}', i, i % 200, 'x') END,"
         "  1700000000000 + i * 10 - (i % 7) * 25,"
         "  CASE i % 3 WHEN 0 THEN '[]' WHEN 1 THEN '[[\"trace\",\"t-' || i || '\"],[\"n\",null]]'"
         "   ELSE '[[\"bin\",{\"hex\":\"00ff' || printf('%02x', i % 256) || '\"}]]' END"
         " FROM c",
         "i", (int64_t)n);
}

static const char *const codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};

/* Everything written reads back identically, for every codec, through the
** table, the table-valued form, another connection and another plan. */
static void test_round_trip(void **state) {
  (void)state;
  for (int k = 0; k < 5; k++) {
    char *dir = t_new_partition("wr-rt");
    sqlite3 *db = st_open();
    make_source(db, 3000);
    char opts[200];
    snprintf(opts, sizeof opts, "compression='%s', segment_bytes=65536, batch_bytes=%d,"
             " index_interval_bytes=1024", codecs[k], k % 2 ? 4096 : 1048576);
    create(db, "t", dir, opts);
    /* One transaction of 2000, then one record per statement. */
    st_exec(db, "BEGIN; INSERT INTO t(key, value, timestamp, headers)"
                " SELECT key, value, timestamp, headers FROM src WHERE i < 2000 ORDER BY i; COMMIT");
    assert_int_equal(st_int(db, "SELECT last_insert_rowid()", NULL), 1999);
    sqlite3_stmt *ins = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO t(key, value, timestamp, headers)"
                                            " SELECT key, value, timestamp, headers FROM src"
                                            " WHERE i = ?1", -1, &ins, NULL), SQLITE_OK);
    for (int i = 2000; i < 3000; i++) {
      sqlite3_bind_int(ins, 1, i);
      assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
      sqlite3_reset(ins);
      assert_int_equal(sqlite3_last_insert_rowid(db), i);
    }
    sqlite3_finalize(ins);
    static const char *const reads[] = {
        "SELECT offset, timestamp, quote(key), quote(value), json(headers) FROM t ORDER BY offset",
        "SELECT offset, timestamp, quote(key), quote(value), json(headers) FROM t"
        " WHERE offset + 0 >= 0 ORDER BY offset + 0",
        "SELECT offset, timestamp, quote(key), quote(value), json(headers) FROM kafka_log(?1)"
        " ORDER BY offset DESC",
    };
    st_buf want = {0};
    st_render(db, st_prep(db, "SELECT i, timestamp, quote(CAST(key AS BLOB)), quote(CAST(value AS "
                              "BLOB)), json(headers) FROM src ORDER BY i", NULL), &want);
    for (size_t q = 0; q < 3; q++) {
      st_buf got = {0};
      st_render(db, st_prep(db, reads[q], q == 2 ? "t" : NULL, dir), &got);
      if (q == 2) { /* descending: compare as a set of lines */
        st_buf asc = {0};
        st_render(db, st_prep(db, "SELECT * FROM (SELECT offset, timestamp, quote(key),"
                                  " quote(value), json(headers) FROM kafka_log(?1)) ORDER BY 1",
                              "t", dir), &asc);
        st_buf_free(&got);
        got = asc;
      }
      char lx[300], ly[300];
      long line = st_first_diff(want.p, got.p, lx, ly, sizeof lx);
      if (line > 0) fail_msg("%s (%s): line %ld\n want %s\n got  %s", codecs[k], reads[q], line, lx, ly);
      st_buf_free(&got);
    }
    /* Another connection. */
    sqlite3 *other = st_open();
    assert_int_equal(st_int(other, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 3000);
    assert_int_equal(st_int(other, "SELECT count(DISTINCT compression) FROM kafka_log(?1)", "t",
                            dir), 1);
    char *c = st_text(other, "SELECT compression FROM kafka_log(?1) LIMIT 1", "t", dir);
    assert_string_equal(c, k == 0 ? "none" : codecs[k]);
    free(c);
    assert_true(st_int(other, "SELECT count(*) FROM kafka_segments(?1)", "t", dir) > 3);
    st_close(other);
    /* The integrity check finds nothing. */
    assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE severity <> 'info'",
                            "t", dir), 0);
    st_buf_free(&want);
    st_close(db);
    t_drop_partition(dir);
  }
}

/* The timestamp defaults to now; timestamp_type='log_append_time' reports
** the append time; keys and values of every SQL type. */
static void test_values(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-val");
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  struct timeval tv;
  gettimeofday(&tv, NULL);
  int64_t before = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
  st_exec(db, "INSERT INTO t(key, value) VALUES ('user-1', '{\"click\": 3}')");
  st_exec(db, "INSERT INTO t(value) VALUES (42), (2.5), (x'')");
  gettimeofday(&tv, NULL);
  int64_t after = (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
  int64_t ts = st_int(db, "SELECT timestamp FROM t WHERE offset = 0", NULL);
  assert_true(ts >= before && ts <= after);
  char *r = st_text(db, "SELECT group_concat(quote(key) || ':' || quote(value), ' ') FROM t", NULL);
  assert_string_equal(r, "X'757365722D31':X'7B22636C69636B223A20337D' NULL:X'3432' NULL:X'322E35' "
                         "NULL:X''");
  free(r);
  assert_string_equal(r = st_text(db, "SELECT headers FROM t WHERE offset = 0", NULL), "[]");
  free(r);
  /* log_append_time */
  char *dir2 = t_new_partition("wr-lat");
  create(db, "l", dir2, "timestamp_type='log_append_time'");
  st_exec(db, "INSERT INTO l(value, timestamp) VALUES ('a', 5), ('b', 6)");
  assert_true(st_int(db, "SELECT min(timestamp) FROM l", NULL) >= before);
  r = st_text(db, "SELECT group_concat(timestamp_type) FROM l", NULL);
  assert_string_equal(r, "LogAppendTime,LogAppendTime");
  free(r);
  st_close(db);
  t_drop_partition(dir);
  t_drop_partition(dir2);
}

/* Every limit and wrong column is a clear error, and nothing of the
** statement is written. */
static void test_errors(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-err");
  sqlite3 *db = st_open();
  create(db, "t", dir, "batch_bytes=1024, max_message_bytes=4096");
  st_exec(db, "INSERT INTO t(value) VALUES ('one')");
  struct { const char *sql; int rc; const char *words; } cases[] = {
      {"UPDATE t SET value = 'x' WHERE offset = 0", SQLITE_CONSTRAINT, "UPDATE is not supported"},
      {"INSERT INTO t(offset, value) VALUES (7, 'x')", SQLITE_CONSTRAINT, "offsets are assigned"},
      {"INSERT INTO t(rowid, value) VALUES (7, 'x')", SQLITE_CONSTRAINT, "rowid"},
      {"INSERT INTO t(topic, value) VALUES ('x', 'x')", SQLITE_CONSTRAINT, "not topic"},
      {"INSERT INTO t(value, timestamp) VALUES ('x', 'soon')", SQLITE_MISMATCH, "timestamp must"},
      {"INSERT INTO t(value, timestamp) VALUES ('x', 1.5)", SQLITE_MISMATCH, "timestamp must"},
      {"INSERT INTO t(value, headers) VALUES ('x', '{')", SQLITE_MISMATCH, "JSON array"},
      {"INSERT INTO t(value, headers) VALUES ('x', '[1]')", SQLITE_MISMATCH, "headers[0]"},
      {"INSERT INTO t(value, headers) VALUES ('x', '[[null,\"v\"]]')", SQLITE_MISMATCH, "name"},
      {"INSERT INTO t(value, headers) VALUES ('x', '[[\"a\",{\"hex\":\"0g\"}]]')", SQLITE_MISMATCH,
       "hex"},
      {"INSERT INTO t(value, headers) VALUES ('x', x'00')", SQLITE_MISMATCH, "JSON text"},
      {"INSERT INTO t(value) VALUES (randomblob(5000))", SQLITE_TOOBIG, "max_message_bytes=4096"},
      {"INSERT INTO t(value, timestamp) VALUES ('a', 0), ('b', -9223372036854775808)",
       SQLITE_CONSTRAINT, "negative"},
      {"INSERT INTO t(value) SELECT 'ok' UNION ALL SELECT randomblob(5000)", SQLITE_TOOBIG,
       "max_message_bytes"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *m = st_expect_rc(db, cases[i].sql, cases[i].rc);
    if (!strstr(m, cases[i].words)) fail_msg("%s: message lacks '%s'", m, cases[i].words);
    free(m);
    assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 1);
  }
  free(st_expect_rc(db, "CREATE VIRTUAL TABLE x USING kafka_log('/tmp/kl-x', compression='brotli')",
                 SQLITE_ERROR));
  free(st_expect_rc(db, "CREATE VIRTUAL TABLE x USING kafka_log('/tmp/kl-x', segment_bytes=10)",
                 SQLITE_ERROR));
  free(st_expect_rc(db, "CREATE VIRTUAL TABLE x USING kafka_log('/tmp/kl-x', fsync='never')",
                 SQLITE_ERROR));
  st_close(db);
  t_drop_partition(dir);
}

/* ROLLBACK leaves nothing; savepoints roll back to their mark; a failing
** statement inside a transaction takes only its own rows away. */
static void test_transactions(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-tx");
  sqlite3 *db = st_open();
  add_gs(db);
  create(db, "t", dir, "segment_bytes=4096, batch_bytes=512, index_interval_bytes=100");
  st_exec(db, "INSERT INTO t(value) VALUES ('v0')");
  st_exec(db, "BEGIN; INSERT INTO t(value) SELECT printf('r%d', value) FROM gs WHERE value BETWEEN 1 AND 500;"
              " ROLLBACK");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 1);
  st_exec(db, "BEGIN; INSERT INTO t(value) VALUES ('v1'); SAVEPOINT a;"
              " INSERT INTO t(value) SELECT 'gone' FROM gs WHERE value BETWEEN 1 AND 300;"
              " SAVEPOINT b; INSERT INTO t(value) VALUES ('gone too'); ROLLBACK TO a;"
              " INSERT INTO t(value) VALUES ('v2'); RELEASE a; COMMIT");
  char *r = st_text(db, "SELECT group_concat(offset || '=' || CAST(value AS TEXT), ',') FROM t", NULL);
  assert_string_equal(r, "0=v0,1=v1,2=v2");
  free(r);
  /* The second statement fails on its 200th row (bad headers). */
  sqlite3_exec(db, "BEGIN; INSERT INTO t(value) VALUES ('v3')", NULL, NULL, NULL);
  char *m = st_expect_rc(db, "INSERT INTO t(value, headers) SELECT 'no', CASE WHEN value = 200 THEN"
                          " 'bad' ELSE '[]' END FROM gs WHERE value BETWEEN 1 AND 300", SQLITE_MISMATCH);
  free(m);
  st_exec(db, "INSERT INTO t(value) VALUES ('v4'); COMMIT");
  r = st_text(db, "SELECT group_concat(offset || '=' || CAST(value AS TEXT), ',') FROM t", NULL);
  assert_string_equal(r, "0=v0,1=v1,2=v2,3=v3,4=v4");
  free(r);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE severity <> 'info'",
                          "t", dir), 0);
  /* Inside its transaction the writing table reads its own records (other
  ** connections do not); INSERT ... SELECT from itself reads what was
  ** there when it began. */
  sqlite3 *other = st_open();
  st_exec(db, "BEGIN; INSERT INTO t(value) VALUES ('v5'), ('v6')");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 7);
  assert_int_equal(st_int(db, "SELECT max(offset) FROM t WHERE offset + 0 >= 0", NULL), 6);
  assert_int_equal(st_int(other, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 5);
  st_exec(db, "SAVEPOINT s; INSERT INTO t(value) SELECT value FROM t");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 14);
  st_exec(db, "ROLLBACK TO s");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 7);
  st_exec(db, "INSERT INTO t(value) VALUES ('v7'); COMMIT");
  r = st_text(db, "SELECT group_concat(offset || '=' || CAST(value AS TEXT), ',') FROM t", NULL);
  assert_string_equal(r, "0=v0,1=v1,2=v2,3=v3,4=v4,5=v5,6=v6,7=v7");
  free(r);
  assert_int_equal(st_int(other, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 8);
  st_exec(db, "BEGIN; INSERT INTO t(value) VALUES ('v8'); ROLLBACK");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 8);
  st_close(other);
  st_close(db);
  t_drop_partition(dir);
}

/* One writer at a time; readers of other connections see committed
** transactions only, whole. */
static void test_writers_and_readers(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-conc");
  sqlite3 *a = st_open(), *b = st_open();
  add_gs(a);
  create(a, "t", dir, "batch_bytes=300, segment_bytes=8192, index_interval_bytes=100");
  create(b, "t", dir, NULL);
  st_exec(a, "BEGIN; INSERT INTO t(value) SELECT 'x' FROM gs WHERE value BETWEEN 1 AND 1000");
  /* the batches are in the files already, past the commit: not rows, not damage */
  assert_int_equal(st_int(b, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 0);
  assert_int_equal(st_int(b, "SELECT count(*) FROM kafka_log_check(?1)", "t", dir), 0);
  char *m = st_expect_rc(b, "INSERT INTO t(value) VALUES ('y')", SQLITE_BUSY);
  assert_non_null(strstr(m, "another writer"));
  free(m);
  st_exec(a, "COMMIT");
  assert_int_equal(st_int(b, "SELECT count(*) FROM t", NULL), 1000);
  st_exec(b, "INSERT INTO t(value) VALUES ('y')");
  assert_int_equal(st_int(a, "SELECT count(*) FROM t", NULL), 1001);
  assert_int_equal(st_int(a, "SELECT max(offset) FROM t", NULL), 1000);
  st_close(a);
  st_close(b);

  /* A reader process during appends: counts only ever whole transactions
  ** of 37, growing. */
  int pfd[2];
  assert_int_equal(pipe(pfd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    sqlite3 *r = NULL;
    sqlite3_open(":memory:", &r);
    sqlite3_kafkalog_init(r, NULL, NULL);
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(r, "SELECT count(*), coalesce(sum(length(value)), 0) FROM kafka_log(?1)", -1, &st, NULL);
    sqlite3_bind_text(st, 1, dir, -1, SQLITE_STATIC);
    int64_t last = 0, reads = 0;
    int bad = 0;
    for (int i = 0; i < 3000 && !bad; i++) {
      if (sqlite3_step(st) != SQLITE_ROW) bad = 1;
      else {
        int64_t n = sqlite3_column_int64(st, 0);
        if ((n - 1001) % 37 != 0 || n < last || sqlite3_column_int64(st, 1) != 1001 + (n - 1001) * 3) bad = 2;
        last = n;
        reads++;
      }
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(r);
    char out[64];
    int len = snprintf(out, sizeof out, "%d %lld", bad, (long long)reads);
    if (write(pfd[1], out, (size_t)len) != len) _exit(3);
    _exit(0);
  }
  close(pfd[1]);
  sqlite3 *w = st_open();
  add_gs(w);
  create(w, "t", dir, "batch_bytes=400, segment_bytes=8192");
  for (int t = 0; t < 150; t++) {
    st_exec(w, "INSERT INTO t(value) SELECT 'abc' FROM gs WHERE value BETWEEN 1 AND 37");
  }
  st_close(w);
  char buf[64] = {0};
  assert_true(read(pfd[0], buf, sizeof buf - 1) > 0);
  close(pfd[0]);
  waitpid(pid, NULL, 0);
  print_message("  reader process: %s (error, reads)\n", buf);
  assert_int_equal(atoi(buf), 0);
  t_drop_partition(dir);
}

/* Retention: DELETE ... WHERE offset < N removes whole segments below N,
** records the log start; other DELETEs are refused. */
static void test_retention(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-ret");
  sqlite3 *db = st_open();
  add_gs(db);
  create(db, "t", dir, "segment_bytes=4096");
  st_exec(db, "INSERT INTO t(value, timestamp) SELECT printf('value-%05d', value), 1700000000000 + value"
              " FROM gs WHERE value BETWEEN 0 AND 999");
  int64_t segs = st_int(db, "SELECT count(*) FROM kafka_segments(?1)", "t", dir);
  char *m = st_expect_rc(db, "DELETE FROM t WHERE CAST(value AS TEXT) LIKE '%5'", SQLITE_CONSTRAINT);
  assert_non_null(strstr(m, "WHERE offset < N"));
  free(m);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 1000);
  st_exec(db, "DELETE FROM t WHERE offset < 500");
  assert_int_equal(sqlite3_changes(db), 500);
  static const char *const q[] = {
      "SELECT count(*) FROM t", "SELECT min(offset) FROM t", "SELECT count(*) FROM t WHERE offset + 0 < 600",
      "SELECT min(timestamp) FROM t", "SELECT count(*) FROM t WHERE offset < 600",
      "SELECT offset FROM t ORDER BY timestamp LIMIT 1", "SELECT count(*) FROM kafka_log(?1)",
      "SELECT log_start_offset FROM kafka_partitions(?1)"};
  int64_t want[] = {500, 500, 100, 1700000000500, 100, 500, 500, 500};
  for (int i = 0; i < 8; i++) {
    int64_t got = st_int(db, q[i], strstr(q[i], "?1") ? "t" : NULL, dir);
    if (got != want[i]) fail_msg("%s: %lld, want %lld", q[i], (long long)got, (long long)want[i]);
  }
  assert_true(st_int(db, "SELECT count(*) FROM kafka_segments(?1)", "t", dir) < segs);
  char path[4200];
  snprintf(path, sizeof path, "%.*s/log-start-offset-checkpoint", (int)(strrchr(dir, '/') - dir), dir);
  size_t n;
  char *ck = (char *)t_read_file(path, &n);
  assert_non_null(ck);
  assert_string_equal(ck, "0\n1\nevents 0 500\n");
  free(ck);
  /* A rolled-back retention changes nothing. */
  st_exec(db, "BEGIN; DELETE FROM t WHERE offset < 800; ROLLBACK");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 500);
  /* Everything: the log keeps its end. */
  st_exec(db, "DELETE FROM t");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 0);
  st_exec(db, "INSERT INTO t(value) VALUES ('after')");
  assert_int_equal(st_int(db, "SELECT offset FROM t", NULL), 1000);
  st_close(db);
  t_drop_partition(dir);

  /* retention_bytes: the oldest segments go while the log stays at least
  ** that large; retention_ms: segments whose records are older go. */
  dir = t_new_partition("wr-retb");
  db = st_open();
  add_gs(db);
  create(db, "t", dir, "segment_bytes=4096, retention_bytes=10000");
  for (int i = 0; i < 10; i++) {
    st_exec(db, "INSERT INTO t(value, timestamp) SELECT printf('value-%05d', value), 1700000000000"
                " + value FROM gs WHERE value BETWEEN 0 AND 99");
  }
  int64_t bytes = st_int(db, "SELECT sum(log_bytes) FROM kafka_segments(?1)", "t", dir);
  int64_t first = st_int(db, "SELECT min(segment) FROM kafka_segments(?1)", "t", dir);
  int64_t lastseg = st_int(db, "SELECT max(segment) FROM kafka_segments(?1)", "t", dir);
  print_message("  retention_bytes=10000: %lld bytes from segment %lld\n", (long long)bytes,
                (long long)first);
  /* at the last roll the log was at least 10000 and less than a segment more;
  ** appends since (less than a segment) came on top */
  assert_true(bytes >= 10000 && bytes < 10000 + 2 * 4096);
  assert_true(first > 0);
  assert_int_equal(st_int(db, "SELECT min(offset) FROM t", NULL), first);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 1000 - first);
  st_close(db);
  t_drop_partition(dir);
  dir = t_new_partition("wr-retm");
  db = st_open();
  add_gs(db);
  create(db, "t", dir, "segment_bytes=4096, retention_ms=86400000");
  st_exec(db, "INSERT INTO t(value, timestamp) SELECT printf('old-%05d', value), 1700000000000"
              " FROM gs WHERE value BETWEEN 0 AND 499");
  st_exec(db, "INSERT INTO t(value) SELECT printf('new-%05d', value) FROM gs WHERE value BETWEEN 0 AND 499");
  /* every segment of old records is gone but the one now active */
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE CAST(value AS TEXT) LIKE 'old-%'", NULL),
                   0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE CAST(value AS TEXT) LIKE 'new-%'", NULL),
                   st_int(db, "SELECT count(*) FROM t WHERE offset >= 500", NULL));
  assert_true(st_int(db, "SELECT count(*) FROM t", NULL) > 0);
  (void)lastseg;
  st_close(db);
  t_drop_partition(dir);
}

/* Retention is by offset whatever the table shows: on a read_committed
** table over Kafka's transactions, DELETE ... WHERE offset < N removes
** every record below N (aborted ones and markers too, where the last rows
** below N are ones the table does not show: 594 is a marker and 595-599
** are aborted here), and a DELETE that is not a prefix of its rows is
** still refused. */
static void test_retention_read_committed(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-retrc");
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", t_fixture("g-transactions"), dir);
  assert_int_equal(system(cmd), 0);
  sqlite3 *db = st_open();
  create(db, "t", dir, "isolation='read_committed'");
  int64_t shown = st_int(db, "SELECT count(*) FROM t WHERE offset < 600", NULL);
  int64_t all = st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset < 600", "t", dir);
  int64_t last = st_int(db, "SELECT max(offset) FROM t WHERE offset < 600", NULL);
  int64_t above = st_int(db, "SELECT count(*) FROM t WHERE offset >= 600", NULL);
  print_message("  below 600: %lld rows shown of %lld records, the last at %lld\n",
                (long long)shown, (long long)all, (long long)last);
  assert_true(shown > 0 && shown < all); /* the case: fewer rows than records */
  char *m = st_expect_rc(db, "DELETE FROM t WHERE offset < 600 AND offset % 2 = 0", SQLITE_CONSTRAINT);
  assert_non_null(strstr(m, "WHERE offset < N"));
  free(m);
  st_exec(db, "DELETE FROM t WHERE offset < 600");
  assert_int_equal(sqlite3_changes(db), shown);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE offset < 600", NULL), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), above);
  assert_true(last < 599);
  assert_int_equal(st_int(db, "SELECT log_start_offset FROM kafka_partitions(?1)", "t", dir), 600);
  assert_int_equal(st_int(db, "SELECT min(offset) FROM kafka_log(?1)", "t", dir), 600);
  /* Everything: the start goes to the end of what is committed. */
  st_exec(db, "DELETE FROM t WHERE offset < 1000000");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 0);
  assert_int_equal(st_int(db, "SELECT log_start_offset FROM kafka_partitions(?1)", "t", dir), 1275);
  st_close(db);
  t_drop_partition(dir);
}

/* The start moves on to the N of WHERE offset < N only over records the
** table does not show: past a marker (594 in g-transactions) on a table
** reading everything, but never past a row it shows that the WHERE kept
** (599, kept by offset <> 599), and not to the bound of an earlier scan. */
static void test_retention_ends_where_the_where_says(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-retwhere");
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", t_fixture("g-transactions"), dir);
  assert_int_equal(system(cmd), 0);
  sqlite3 *db = st_open();
  create(db, "t", dir, "");
  const char *start = "SELECT log_start_offset FROM kafka_partitions(?1)";
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset = 594", "t", dir), 0);
  st_exec(db, "DELETE FROM t WHERE offset < 595");
  assert_int_equal(st_int(db, start, "t", dir), 595);
  st_exec(db, "DELETE FROM t WHERE offset < 600 AND offset <> 599");
  assert_int_equal(st_int(db, start, "t", dir), 599);
  assert_int_equal(st_int(db, "SELECT min(offset) FROM t", NULL), 599);
  st_exec(db, "BEGIN");
  assert_true(st_int(db, "SELECT count(*) FROM t WHERE offset < 900", NULL) > 0);
  st_exec(db, "DELETE FROM t WHERE offset = 599");
  st_exec(db, "COMMIT");
  assert_int_equal(st_int(db, start, "t", dir), 600);
  st_close(db);
  t_drop_partition(dir);
}

/* A writer killed between writing a checkpoint's temporary file and
** renaming it leaves the file behind: the next replacement removes those of
** processes that no longer run, and leaves one of a running process. */
static void test_dead_writers_checkpoint_tmp_removed(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-tmpsweep");
  char root[4200], dead[4400], live[4400];
  snprintf(root, sizeof root, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  assert_true(pid > 0);
  waitpid(pid, NULL, 0);
  snprintf(dead, sizeof dead, "%s/log-start-offset-checkpoint.%ld-0.tmp", root, (long)pid);
  snprintf(live, sizeof live, "%s/log-start-offset-checkpoint.%ld-3.tmp", root, (long)getppid());
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  st_exec(db, "INSERT INTO t(value) VALUES ('a'), ('b'), ('c')");
  for (int k = 0; k < 2; k++) {
    FILE *f = fopen(k ? live : dead, "w");
    assert_non_null(f);
    fputs("0\n1\nevents 0 1\n", f);
    fclose(f);
  }
  st_exec(db, "DELETE FROM t WHERE offset < 2");
  struct stat sb;
  assert_int_equal(stat(dead, &sb), -1);
  assert_int_equal(stat(live, &sb), 0);
  unlink(live);
  st_close(db);
  t_drop_partition(dir);
}

/* A VFS over the default one whose files refuse every write while
** ff_fail is set: SQLite's own commit then fails after the tables'
** xSync, as on a full or failing disk under the database file. */
typedef struct ff_file {
  sqlite3_file base;
  sqlite3_file *real; /* the default VFS's file, just after this struct */
} ff_file;
static int ff_fail;
static sqlite3_vfs ff_vfs;

static sqlite3_file *ff_real(sqlite3_file *f) { return ((ff_file *)f)->real; }
static int ff_close(sqlite3_file *f) { return ff_real(f)->pMethods->xClose(ff_real(f)); }
static int ff_read(sqlite3_file *f, void *p, int n, sqlite3_int64 o) {
  return ff_real(f)->pMethods->xRead(ff_real(f), p, n, o);
}
static int ff_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 o) {
  return ff_fail ? SQLITE_IOERR_WRITE : ff_real(f)->pMethods->xWrite(ff_real(f), p, n, o);
}
static int ff_truncate(sqlite3_file *f, sqlite3_int64 n) {
  return ff_real(f)->pMethods->xTruncate(ff_real(f), n);
}
static int ff_sync(sqlite3_file *f, int fl) { return ff_real(f)->pMethods->xSync(ff_real(f), fl); }
static int ff_size(sqlite3_file *f, sqlite3_int64 *n) {
  return ff_real(f)->pMethods->xFileSize(ff_real(f), n);
}
static int ff_lock(sqlite3_file *f, int l) { return ff_real(f)->pMethods->xLock(ff_real(f), l); }
static int ff_unlock(sqlite3_file *f, int l) { return ff_real(f)->pMethods->xUnlock(ff_real(f), l); }
static int ff_reserved(sqlite3_file *f, int *r) {
  return ff_real(f)->pMethods->xCheckReservedLock(ff_real(f), r);
}
static int ff_control(sqlite3_file *f, int op, void *a) {
  return ff_real(f)->pMethods->xFileControl(ff_real(f), op, a);
}
static int ff_sector(sqlite3_file *f) { return ff_real(f)->pMethods->xSectorSize(ff_real(f)); }
static int ff_device(sqlite3_file *f) {
  return ff_real(f)->pMethods->xDeviceCharacteristics(ff_real(f));
}
static const sqlite3_io_methods ff_methods = {
    .iVersion = 1, .xClose = ff_close, .xRead = ff_read, .xWrite = ff_write,
    .xTruncate = ff_truncate, .xSync = ff_sync, .xFileSize = ff_size, .xLock = ff_lock,
    .xUnlock = ff_unlock, .xCheckReservedLock = ff_reserved, .xFileControl = ff_control,
    .xSectorSize = ff_sector, .xDeviceCharacteristics = ff_device};

static int ff_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out) {
  sqlite3_vfs *real = vfs->pAppData;
  ff_file *x = (ff_file *)f;
  x->real = (sqlite3_file *)(x + 1);
  int rc = real->xOpen(real, name, x->real, flags, out);
  x->base.pMethods = rc == SQLITE_OK ? &ff_methods : NULL;
  return rc;
}

static void ff_register(void) {
  if (ff_vfs.zName) return;
  sqlite3_vfs *real = sqlite3_vfs_find(NULL);
  ff_vfs = *real;
  ff_vfs.iVersion = 1;
  ff_vfs.szOsFile = (int)sizeof(ff_file) + real->szOsFile;
  ff_vfs.zName = "kl-failwrite";
  ff_vfs.pAppData = real;
  ff_vfs.xOpen = ff_open;
  assert_int_equal(sqlite3_vfs_register(&ff_vfs, 0), SQLITE_OK);
}

/* SQLite's commit fails after the table's xSync made its records durable
** and published them (the database file cannot be written): xRollback
** takes them back, so no reader ever sees them and the next transaction
** continues from the old end. */
static void test_failed_database_commit_after_sync_publishes_nothing(void **state) {
  (void)state;
  ff_register();
  char *dir = t_new_partition("wr-dbfail");
  char path[4200];
  snprintf(path, sizeof path, "%s.db", dir);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                   "kl-failwrite"), SQLITE_OK);
  assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
  create(db, "t", dir, NULL);
  st_exec(db, "CREATE TABLE plain(x); INSERT INTO t(value) VALUES ('before')");
  st_exec(db, "BEGIN; INSERT INTO t(value) VALUES ('lost-1'), ('lost-2'); INSERT INTO plain VALUES (1)");
  ff_fail = 1;
  int rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  ff_fail = 0;
  assert_int_equal(rc & 0xff, SQLITE_IOERR);
  if (!sqlite3_get_autocommit(db)) st_exec(db, "ROLLBACK");
  sqlite3 *other = st_open();
  const char *values = "SELECT group_concat(CAST(value AS TEXT), ',') FROM kafka_log(?1)";
  st_buf b = {0};
  assert_int_equal(st_render(other, st_prep(other, values, "t", dir), &b), 1);
  assert_string_equal(b.p, "'before'\n");
  st_buf_free(&b);
  assert_int_equal(st_int(db, "SELECT count(*) FROM plain", NULL), 0);
  st_exec(db, "INSERT INTO t(value) VALUES ('after')");
  assert_int_equal(sqlite3_last_insert_rowid(db), 1);
  assert_int_equal(st_render(other, st_prep(other, values, "t", dir), &b), 1);
  assert_string_equal(b.p, "'before,after'\n");
  st_buf_free(&b);
  st_close(other);
  st_close(db);
  unlink(path);
  t_drop_partition(dir);
}

/* A writer committing transactions in a loop, killed with SIGKILL at
** random moments: after each kill every transaction it reported committed
** is there whole, no other record is, and the indexes agree with the log. */
static void test_crash(void **state) {
  (void)state;
  int kills = CRASH_KILLS;
  if (getenv("KL_CRASH_KILLS")) kills = atoi(getenv("KL_CRASH_KILLS"));
  char *dir = t_new_partition("wr-crash");
  srand(12345);
  int64_t reported = -1, survived = 0, torn = 0;
  sqlite3 *first = st_open();
  create(first, "t", dir, NULL); /* the log exists before the first kill */
  st_close(first);
  for (int k = 0; k < kills; k++) {
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(pfd[0]);
      sqlite3 *db = NULL;
      sqlite3_open(":memory:", &db);
      sqlite3_kafkalog_init(db, NULL, NULL);
      add_gs(db);
      char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='write',"
                                  " segment_bytes=16384, batch_bytes=2048, index_interval_bytes=512%s)",
                                  dir,
                                  k % 3 == 1 ? ", compression='lz4'" : "");
      if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) _exit(2);
      sqlite3_free(sql);
      /* The next transaction's number follows the log's last record. */
      sqlite3_stmt *st = NULL;
      sqlite3_prepare_v2(db, "SELECT coalesce(max(CAST(key AS INTEGER)), -1) FROM t", -1, &st, NULL);
      if (sqlite3_step(st) != SQLITE_ROW) _exit(2);
      int64_t txn = sqlite3_column_int64(st, 0) + 1;
      sqlite3_finalize(st);
      for (;; txn++) {
        int n = 1 + (int)(txn * 7919 % 97);
        char *ins = sqlite3_mprintf("BEGIN; INSERT INTO t(key, value) SELECT '%lld',"
                                    " printf('%lld-%%d-%d-', value) || hex(randomblob(value %% 40))"
                                    " FROM gs WHERE value BETWEEN 1 AND %d; COMMIT", (long long)txn,
                                    (long long)txn, n, n);
        int rc = sqlite3_exec(db, ins, NULL, NULL, NULL);
        sqlite3_free(ins);
        if (rc != SQLITE_OK) _exit(3);
        char line[32];
        int len = snprintf(line, sizeof line, "%lld\n", (long long)txn);
        if (write(pfd[1], line, (size_t)len) != len) _exit(4);
      }
    }
    close(pfd[1]);
    /* Every other kill waits for the writer's first commit, so that kills
    ** land inside transactions however slowly a loaded machine starts it;
    ** the others may land in its start and recovery too. */
    char buf[65536];
    ssize_t got, total = 0;
    while (k % 2 == 0 && !memchr(buf, '\n', (size_t)total) &&
           (got = read(pfd[0], buf + total, sizeof buf - 1 - (size_t)total)) > 0) {
      total += got;
    }
    usleep((useconds_t)(rand() % 30000));
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) fail_msg("writer exited with %d before the kill", WEXITSTATUS(status));
    while ((got = read(pfd[0], buf + total, sizeof buf - 1 - (size_t)total)) > 0) total += got;
    close(pfd[0]);
    buf[total] = 0;
    for (char *p = buf; *p;) {
      char *nl = strchr(p, '\n');
      if (!nl) break;
      reported = atoll(p);
      p = nl + 1;
    }
    /* Did the kill leave bytes past the commit (a transaction cut)? */
    kl_commit cr;
    kl_err ce = {0};
    if (kl_commit_read(NULL, dir, &cr, &ce) == KL_OK) {
      char lp[4200];
      struct stat sb;
      snprintf(lp, sizeof lp, "%s/%020lld.log", dir, (long long)cr.seg_base);
      if (stat(lp, &sb) == 0 && sb.st_size > cr.seg_size) torn++;
      else {
        snprintf(lp, sizeof lp, "%s/%020lld.log", dir, (long long)cr.next_offset);
        if (cr.next_offset != cr.seg_base && stat(lp, &sb) == 0) torn++;
      }
    }
    /* A reader: whole transactions, in order, through the last reported. */
    sqlite3 *db = st_open();
    sqlite3_stmt *st = st_prep(db, "SELECT offset, CAST(key AS INTEGER), CAST(value AS TEXT)"
                                   " FROM kafka_log(?1) ORDER BY offset", "t", dir);
    int64_t expect_off = 0, txn = -1, seen = 0, of = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t off = sqlite3_column_int64(st, 0), t = sqlite3_column_int64(st, 1);
      const char *v = (const char *)sqlite3_column_text(st, 2);
      if (off != expect_off++) fail_msg("kill %d: offset %lld, want %lld", k, (long long)off, (long long)expect_off - 1);
      long long vt;
      int i, n;
      if (sscanf(v, "%lld-%d-%d-", &vt, &i, &n) != 3 || vt != t) fail_msg("kill %d: bad value %s", k, v);
      if (t != txn) {
        if (txn >= 0 && seen != of) fail_msg("kill %d: transaction %lld has %lld of %lld records", k, (long long)txn, (long long)seen, (long long)of);
        if (t != txn + 1) fail_msg("kill %d: transaction %lld after %lld", k, (long long)t, (long long)txn);
        txn = t;
        seen = 0;
        of = n;
      }
      if (i != ++seen) fail_msg("kill %d: record %d of transaction %lld out of order", k, i, (long long)t);
    }
    if (rc != SQLITE_DONE) fail_msg("kill %d: read failed: %s", k, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (txn >= 0 && seen != of) fail_msg("kill %d: last transaction %lld has %lld of %lld", k, (long long)txn, (long long)seen, (long long)of);
    if (txn < reported) fail_msg("kill %d: transaction %lld was committed, the log ends at %lld", k, (long long)reported, (long long)txn);
    /* Recovery (a writer's begin), then the indexes agree with the log. */
    if (k % 10 == 9 || k == kills - 1) {
      create(db, "w", dir, NULL);
      st_exec(db, "BEGIN; INSERT INTO w(key, value) VALUES (NULL, NULL); ROLLBACK");
      st_buf f = {0};
      if (st_render(db, st_prep(db, "SELECT file, position, kind FROM kafka_log_check(?1)"
                                    " WHERE severity <> 'info'", "t", dir), &f) != 0) {
        fail_msg("kill %d: findings:\n%s", k, f.p);
      }
      st_buf_free(&f);
    }
    st_close(db);
    survived++;
  }
  print_message("  %lld kills survived, %lld of them cut a transaction's batches, %lld "
                "transactions committed\n", (long long)survived, (long long)torn,
                (long long)reported + 1);
  if (survived >= 50) assert_true(torn * 5 >= survived); /* kills land inside transactions */
  t_drop_partition(dir);
}

/* The records of a partition Kafka wrote (b-multi-segment: 789 batches in
** 9 segments of 64 KiB, index interval 4096), inserted again one
** transaction per Kafka batch with the same options: the .log files are
** Kafka's byte for byte but for the partition leader epoch (0 there, -1
** here: a log of its own; not covered by the CRC), and the .index and
** .timeindex files are Kafka's byte for byte. */
static void test_kafka_bytes(void **state) {
  (void)state;
  char src[4096];
  snprintf(src, sizeof src, "%s", t_fixture("b-multi-segment"));
  char *dir = t_new_partition("wr-kafka");
  sqlite3 *db = st_open();
  create(db, "t", dir, "segment_bytes=65536, index_interval_bytes=4096");
  sqlite3_stmt *b = st_prep(db, "SELECT base_offset, last_offset FROM kafka_batches(?1)"
                                " ORDER BY base_offset", "t", src);
  sqlite3_stmt *ins = st_prep(db, "INSERT INTO t(key, value, timestamp, headers) SELECT key, value,"
                                  " timestamp, headers FROM kafka_log(?1) WHERE offset BETWEEN ?2"
                                  " AND ?3 ORDER BY offset", "t", src);
  int batches = 0;
  while (sqlite3_step(b) == SQLITE_ROW) {
    sqlite3_bind_int64(ins, 2, sqlite3_column_int64(b, 0));
    sqlite3_bind_int64(ins, 3, sqlite3_column_int64(b, 1));
    if (sqlite3_step(ins) != SQLITE_DONE) fail_msg("insert: %s", sqlite3_errmsg(db));
    sqlite3_reset(ins);
    batches++;
  }
  sqlite3_finalize(b);
  sqlite3_finalize(ins);
  assert_int_equal(batches, 789);
  st_close(db); /* a clean stop: the final time index entry, as Kafka's close */
  sqlite3 *r = st_open();
  sqlite3_stmt *seg = st_prep(r, "SELECT segment FROM kafka_segments(?1) ORDER BY segment", "t", src);
  int segs = 0;
  while (sqlite3_step(seg) == SQLITE_ROW) {
    int64_t base = sqlite3_column_int64(seg, 0);
    const char *sfx[3] = {".log", ".index", ".timeindex"};
    for (int k = 0; k < 3; k++) {
      char pa[4200], pb[4200];
      snprintf(pa, sizeof pa, "%s/%020lld%s", src, (long long)base, sfx[k]);
      snprintf(pb, sizeof pb, "%s/%020lld%s", dir, (long long)base, sfx[k]);
      size_t na, nb;
      uint8_t *a = t_read_file(pa, &na), *w = t_read_file(pb, &nb);
      if (!a || !w) fail_msg("%s or %s missing", pa, pb);
      if (na != nb) fail_msg("%s: %zu bytes, Kafka's has %zu", pb, nb, na);
      if (k == 0) { /* each batch's leader epoch: Kafka's 0, ours -1 */
        for (size_t pos = 0; pos + 61 <= na; pos += 12 + kl_get_u32(a + pos + 8)) {
          assert_int_equal(kl_get_i32(a + pos + 12), 0);
          assert_int_equal(kl_get_i32(w + pos + 12), -1);
          memset(a + pos + 12, 0, 4);
          memset(w + pos + 12, 0, 4);
        }
      }
      for (size_t i = 0; i < na; i++) {
        if (a[i] != w[i]) fail_msg("%s: byte %zu is %02x, Kafka's %02x", pb, i, w[i], a[i]);
      }
      free(a);
      free(w);
    }
    segs++;
  }
  sqlite3_finalize(seg);
  assert_int_equal(segs, 9);
  st_close(r);
  t_drop_partition(dir);
}

/* Appending to a partition Kafka wrote: offsets go on from its end, the
** batches carry the leader epoch of its leader-epoch-checkpoint, nothing
** of Kafka's is changed but the indexes of its last segment (rebuilt as
** Kafka's recovery rebuilds them: the same bytes here). */
static void test_append_to_kafka(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-adopt");
  char src[4200];
  snprintf(src, sizeof src, "%s", t_fixture("d-jitter-nulls-headers"));
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", src, dir);
  assert_int_equal(system(cmd), 0);
  char lp[4200];
  snprintf(lp, sizeof lp, "%s/00000000000000001736.log", dir);
  size_t n0;
  uint8_t *before = t_read_file(lp, &n0);
  sqlite3 *db = st_open();
  create(db, "t", dir, "segment_bytes=32768, index_interval_bytes=1024");
  st_exec(db, "INSERT INTO t(key, value) VALUES ('k', 'appended'), (NULL, NULL)");
  assert_int_equal(sqlite3_last_insert_rowid(db), 2001);
  st_buf got = {0};
  st_render(db, st_prep(db, "SELECT base_offset, record_count, partition_leader_epoch, producer_id"
                            " FROM kafka_batches(?1) WHERE base_offset >= 1994", "t", dir), &got);
  assert_string_equal(got.p, "1994|6|0|1000\n2000|2|0|-1\n");
  st_buf_free(&got);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 2002);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE severity <> 'info'",
                          "t", dir), 0);
  st_close(db);
  size_t n1;
  uint8_t *after = t_read_file(lp, &n1);
  assert_true(n1 > n0);
  assert_memory_equal(before, after, n0); /* Kafka's bytes untouched */
  free(before);
  free(after);
  t_drop_partition(dir);
}

/* A named table in a database file keeps its write options: reopened,
** it rolls, compresses and refuses as it was created to. */
static void test_options_kept(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-keep");
  char dbp[4200];
  snprintf(dbp, sizeof dbp, "%.*s/saved.db", (int)(strrchr(dir, '/') - dir), dir);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(dbp, &db), SQLITE_OK);
  assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
  create(db, "t", dir, "segment_bytes=2048, compression='lz4', retention_bytes=1000000");
  create(db, "r", dir, "readonly=1");
  st_close(db);
  assert_int_equal(sqlite3_open(dbp, &db), SQLITE_OK);
  assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
  add_gs(db);
  for (int i = 0; i < 20; i++) {
    st_exec(db, "INSERT INTO t(value) SELECT printf('value-%d', value) FROM gs WHERE value < 50");
  }
  assert_true(st_int(db, "SELECT count(*) FROM kafka_segments(?1)", "t", dir) > 1);
  char *c = st_text(db, "SELECT group_concat(DISTINCT compression) FROM t", NULL);
  assert_string_equal(c, "lz4");
  free(c);
  char *v = st_text(db, "SELECT group_concat(k || '=' || v, ' ') FROM t_config WHERE k IN"
                        " ('segment_bytes', 'compression', 'retention_bytes', 'readonly')", NULL);
  print_message("  t_config: %s\n", v);
  assert_non_null(strstr(v, "segment_bytes=2048"));
  assert_non_null(strstr(v, "retention_bytes=1000000"));
  free(v);
  free(st_expect_rc(db, "INSERT INTO r(value) VALUES ('x')", SQLITE_READONLY));
  assert_int_equal(st_int(db, "SELECT count(*) FROM r", NULL), 1000);
  st_close(db);
  t_drop_partition(dir);
}

/* Every file of dir with its size, sorted: what a refused write must leave
** as it was (malloc'd). */
static char *dir_state(const char *dir) {
  struct dirent **ents = NULL;
  int n = scandir(dir, &ents, NULL, alphasort);
  size_t cap = 64, len = 0;
  char *out = malloc(cap);
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, ents[i]->d_name);
    long long size = stat(p, &sb) == 0 && S_ISREG(sb.st_mode) ? (long long)sb.st_size : -1;
    char line[400];
    int k = snprintf(line, sizeof line, "%s:%lld ", ents[i]->d_name, size);
    if (len + (size_t)k + 1 > cap) out = realloc(out, cap = (cap + (size_t)k) * 2);
    memcpy(out + len, line, (size_t)k + 1);
    len += (size_t)k;
    free(ents[i]);
  }
  free(ents);
  return out;
}

/* A log of 300 records in several segments under root/events-0, with the
** log directory's checkpoint a broker keeps. */
static void make_broker_copy(const char *root, const char *dir) {
  sqlite3 *db = st_open();
  add_gs(db);
  create(db, "w", dir, "segment_bytes=4096, batch_bytes=512");
  st_exec(db, "INSERT INTO w(value) SELECT printf('v%d', value) FROM gs WHERE value < 300");
  st_close(db);
  char p[4300];
  snprintf(p, sizeof p, "%s/log-start-offset-checkpoint", root);
  assert_int_equal(t_write_file(p, "0\n1\nevents 0 0\n", 15), 0);
}

/* A table over a copy of a broker's data only reads unless told to write:
** a stray DELETE or INSERT is refused with SQLITE_READONLY saying how to
** allow it, and no file of the partition or its log directory changes. */
static void test_named_table_reads_by_default(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-ro");
  char root[4200];
  snprintf(root, sizeof root, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
  make_broker_copy(root, dir);
  char *before = dir_state(dir), *root_before = dir_state(root);
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q)", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 300);
  char *m = st_expect_rc(db, "DELETE FROM t WHERE offset < 200", SQLITE_READONLY);
  assert_non_null(strstr(m, "mode='write'"));
  free(m);
  m = st_expect_rc(db, "INSERT INTO t(value) VALUES ('x')", SQLITE_READONLY);
  assert_non_null(strstr(m, "mode='write'"));
  free(m);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 300);
  char *v = st_text(db, "SELECT v FROM t_config WHERE k = 'mode'", NULL);
  assert_string_equal(v, "read");
  free(v);
  st_close(db); /* closing a table that never wrote writes nothing either */
  char *after = dir_state(dir), *root_after = dir_state(root);
  assert_string_equal(before, after);
  assert_string_equal(root_before, root_after);
  free(before);
  free(after);
  free(root_before);
  free(root_after);
  t_drop_partition(dir);
}

/* mode='create' makes a new log, and only where none is: an existing log,
** a missing parent, several paths or a log directory are errors that
** leave nothing.  The table is then a writing one, also after reopening
** the database; mode='write' needs a log to be there. */
static void test_mode_create_then_write(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-mode");
  char root[4200], dbp[4300], p[4300];
  snprintf(root, sizeof root, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
  snprintf(dbp, sizeof dbp, "%s/saved.db", root);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(dbp, &db), SQLITE_OK);
  assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
  /* mode='write' where there is no log: an error, no directory made. */
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='write')", dir);
  char *m = st_expect_rc(db, sql, SQLITE_CANTOPEN);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "mode='create'"));
  free(m);
  assert_int_equal(access(dir, F_OK), -1);
  /* A missing parent is not made. */
  snprintf(p, sizeof p, "%s/nope/events-0", root);
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='create')", p);
  m = st_expect_rc(db, sql, SQLITE_CANTOPEN);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "does not exist"));
  free(m);
  snprintf(p, sizeof p, "%s/nope", root);
  assert_int_equal(access(p, F_OK), -1);
  /* Several paths, and a log directory, are not one partition. */
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log('%q,%q', mode='create')", dir, dir);
  free(st_expect_rc(db, sql, SQLITE_ERROR));
  sqlite3_free(sql);
  assert_int_equal(access(dir, F_OK), -1);
  /* The new log. */
  create(db, "t", dir, "mode='create'");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 0);
  char *v = st_text(db, "SELECT v FROM t_config WHERE k = 'mode'", NULL);
  assert_string_equal(v, "write");
  free(v);
  st_exec(db, "INSERT INTO t(value) VALUES ('a'), ('b')");
  st_close(db); /* its writer's clean stop is written now */
  assert_int_equal(sqlite3_open(dbp, &db), SQLITE_OK);
  assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
  /* Not twice: a second create over it is refused and changes nothing. */
  char *before = dir_state(dir);
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE u USING kafka_log(%Q, mode='create')", dir);
  m = st_expect_rc(db, sql, SQLITE_ERROR);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "already holds a log"));
  free(m);
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE u USING kafka_log(%Q, mode='create')", root);
  m = st_expect_rc(db, sql, SQLITE_ERROR);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "log directory"));
  free(m);
  char *after = dir_state(dir);
  assert_string_equal(before, after);
  free(before);
  free(after);
  st_exec(db, "INSERT INTO t(value) VALUES ('c')");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 3);
  /* A second table on the same log writes too, with mode='write'. */
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE w USING kafka_log(%Q, mode='write')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  st_exec(db, "DELETE FROM w WHERE offset < 1");
  assert_int_equal(st_int(db, "SELECT min(offset) FROM t", NULL), 1);
  st_close(db);
  t_drop_partition(dir);
}

/* readonly is another name for mode: readonly=1 reads, readonly=0
** writes, and giving both is an option given twice. */
static void test_readonly_is_mode(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-syn");
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  create(db, "r", dir, "readonly=1");
  create(db, "w", dir, "readonly=0");
  free(st_expect_rc(db, "INSERT INTO r(value) VALUES ('x')", SQLITE_READONLY));
  st_exec(db, "INSERT INTO w(value) VALUES ('x')");
  assert_int_equal(st_int(db, "SELECT count(*) FROM r", NULL), 1);
  char *v = st_text(db, "SELECT group_concat(v) FROM (SELECT v FROM r_config WHERE k = 'mode'"
                        " UNION ALL SELECT v FROM w_config WHERE k = 'mode')", NULL);
  assert_string_equal(v, "read,write");
  free(v);
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE x USING kafka_log(%Q, mode='write', readonly=1)",
                              dir);
  char *m = st_expect_rc(db, sql, SQLITE_ERROR);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "given twice"));
  free(m);
  st_close(db);
  t_drop_partition(dir);
}

/* kafka_log(dir='...') puts an option where the path belongs: an error
** saying so, and no directory named after the option is made. */
static void test_path_given_as_option(void **state) {
  (void)state;
  char *root = t_mkdtemp("wr-diropt");
  char cwd[4096];
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(root), 0);
  sqlite3 *db = st_open();
  static const char *const sqls[] = {
      "CREATE VIRTUAL TABLE t USING kafka_log(dir='/x/orders-0')",
      "CREATE VIRTUAL TABLE t USING kafka_log(dir = '/x/orders-0', mode='create')",
      "CREATE VIRTUAL TABLE t USING kafka_log(mode='create')",
  };
  for (size_t i = 0; i < sizeof sqls / sizeof *sqls; i++) {
    char *m = st_expect_rc(db, sqls[i], SQLITE_ERROR);
    assert_non_null(strstr(m, "the path is the first argument"));
    free(m);
  }
  char *m = st_expect_rc(db, "CREATE VIRTUAL TABLE t USING kafka_log('.', dir='/x/orders-0')",
                      SQLITE_ERROR);
  assert_non_null(strstr(m, "the path is the first argument"));
  free(m);
  st_close(db);
  char *left = dir_state(".");
  assert_string_equal(left, ".:-1 ..:-1 ");
  free(left);
  assert_int_equal(chdir(cwd), 0);
  t_rmdir(root);
  free(root);
}

/* A write a running broker refuses (it holds its log directory's .lock)
** leaves no kafkalog.lock; a commit leaves none either. */
static void test_refused_write_leaves_no_lock(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-brk");
  char root[4200], lockp[4300], ours[4300];
  snprintf(root, sizeof root, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
  snprintf(lockp, sizeof lockp, "%s/.lock", root);
  snprintf(ours, sizeof ours, "%s/kafkalog.lock", dir);
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  st_exec(db, "INSERT INTO t(value) VALUES ('a')");
  assert_int_equal(access(ours, F_OK), -1);
  int pid = t_hold_lock(lockp);
  assert_true(pid > 0);
  char *before = dir_state(dir);
  char *m = st_expect_rc(db, "INSERT INTO t(value) VALUES ('b')", SQLITE_BUSY);
  assert_non_null(strstr(m, "Kafka broker"));
  free(m);
  char *after = dir_state(dir);
  assert_string_equal(before, after);
  free(before);
  free(after);
  t_release_lock(pid);
  st_exec(db, "INSERT INTO t(value) VALUES ('b')");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 2);
  assert_int_equal(access(ours, F_OK), -1);
  st_close(db);
  t_drop_partition(dir);
}

/* A DELETE by timestamp is exact: when the records it selects are a
** prefix it removes them, when timestamps go back it fails and the message
** gives the offset form. */
static void test_delete_by_timestamp_suggests_offset(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-delts");
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  st_exec(db, "INSERT INTO t(value, timestamp) VALUES ('a', 1), ('b', 2), ('c', 5), ('d', 3),"
              " ('e', 9)");
  char *m = st_expect_rc(db, "DELETE FROM t WHERE timestamp < 4", SQLITE_CONSTRAINT);
  assert_non_null(strstr(m, "DELETE FROM t WHERE offset < N"));
  assert_non_null(strstr(m, "DELETE FROM t WHERE offset < (SELECT min(offset) FROM t WHERE "
                            "timestamp >= T)"));
  free(m);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 5);
  st_exec(db, "DELETE FROM t WHERE timestamp < 3"); /* offsets 0 and 1: a prefix */
  assert_int_equal(st_int(db, "SELECT min(offset) FROM t", NULL), 2);
  st_exec(db, "DELETE FROM t WHERE offset < (SELECT min(offset) FROM t WHERE timestamp >= 4)");
  assert_int_equal(st_int(db, "SELECT min(offset) FROM t", NULL), 2);
  st_exec(db, "DELETE FROM t WHERE offset < (SELECT min(offset) FROM t WHERE timestamp >= 6)");
  assert_int_equal(st_int(db, "SELECT group_concat(offset) FROM t", NULL), 4);
  st_close(db);
  t_drop_partition(dir);
}

/* A record larger than batch_bytes has a batch of its own; one larger
** than max_message_bytes is refused, naming it, and so is a
** max_message_bytes past what a reader decompresses. */
static void test_record_over_max_message_bytes_refused(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-maxmsg");
  sqlite3 *db = st_open();
  create(db, "t", dir, "batch_bytes=512, max_message_bytes=4096");
  st_exec(db, "INSERT INTO t(value) VALUES ('a'), (randomblob(3000)), ('b'), ('c')");
  st_buf got = {0};
  st_render(db, st_prep(db, "SELECT base_offset, record_count FROM kafka_batches(?1)", "t", dir),
            &got);
  assert_string_equal(got.p, "0|1\n1|1\n2|2\n");
  st_buf_free(&got);
  char *m = st_expect_rc(db, "INSERT INTO t(value) VALUES (randomblob(4100))", SQLITE_TOOBIG);
  assert_non_null(strstr(m, "max_message_bytes=4096"));
  free(m);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 4);
  m = st_expect_rc(db, "CREATE VIRTUAL TABLE x USING kafka_log('/tmp/kl-x', max_message_bytes=268435518)",
                SQLITE_ERROR);
  assert_non_null(strstr(m, "from 128 to 268435517"));
  free(m);
  st_close(db);
  t_drop_partition(dir);
}

/* With the defaults, batches are a producer's (16 KiB), not 1 MiB: a
** point lookup decodes one small batch. */
static void test_default_batches_are_producer_sized(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-batch");
  sqlite3 *db = st_open();
  add_gs(db);
  create(db, "t", dir, NULL);
  st_exec(db, "INSERT INTO t(value) SELECT printf('%0100d', g.value + 1000 * h.value)"
              " FROM gs g, gs h WHERE h.value < 10");
  assert_int_equal(st_int(db, "SELECT max(size) <= 16384 FROM kafka_batches(?1)", "t", dir), 1);
  assert_true(st_int(db, "SELECT count(*) FROM kafka_batches(?1)", "t", dir) >= 60);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 10010);
  st_close(db);
  t_drop_partition(dir);
}

/* The write options are the log's: a table of another database appending
** without options writes as the log was created (zstd, its segment size);
** options given at CREATE replace them for what is written next. */
static void test_write_options_belong_to_the_log(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-logopt");
  sqlite3 *a = st_open(), *b = st_open(), *c = st_open();
  add_gs(b);
  add_gs(c);
  create(a, "t", dir, "mode='create', compression='zstd', segment_bytes=4096");
  st_close(a);
  create(b, "t", dir, "mode='write'");
  for (int i = 0; i < 10; i++) {
    st_exec(b, "INSERT INTO t(value) SELECT randomblob(40) FROM gs WHERE value < 100");
  }
  char *v = st_text(b, "SELECT group_concat(DISTINCT compression) FROM kafka_batches(?1)", "t", dir);
  assert_string_equal(v, "zstd");
  free(v);
  assert_true(st_int(b, "SELECT count(*) FROM kafka_segments(?1)", "t", dir) > 1);
  assert_int_equal(st_int(b, "SELECT max(log_bytes) <= 4096 FROM kafka_segments(?1)", "t", dir), 1);
  /* Given at CREATE: the log's from now on, for every table. */
  create(c, "u", dir, "mode='write', compression='lz4'");
  st_close(b);
  b = st_open();
  create(b, "t", dir, "mode='write'");
  st_exec(b, "INSERT INTO t(value) VALUES ('after')");
  v = st_text(b, "SELECT compression FROM t ORDER BY offset DESC LIMIT 1", NULL);
  assert_string_equal(v, "lz4");
  free(v);
  assert_int_equal(st_int(b, "SELECT max(log_bytes) <= 4096 FROM kafka_segments(?1)", "t", dir), 1);
  /* A damaged file is an error naming it and the line. */
  char p[4300];
  snprintf(p, sizeof p, "%s/kafkalog.config", dir);
  FILE *f = fopen(p, "w");
  fputs("# comment\nsegment_bytes=4096\ncompression=brotli\nsome_later_option=1\n", f);
  fclose(f);
  create(c, "w", dir, "mode='write'");
  char *m = st_expect_rc(c, "INSERT INTO w(value) VALUES ('x')", SQLITE_CORRUPT);
  assert_non_null(strstr(m, "kafkalog.config: line 3: compression='brotli'"));
  free(m);
  st_close(b);
  st_close(c);
  t_drop_partition(dir);
}

/* A header with a NUL byte reads as "a\u0000b" and that JSON, inserted,
** stores the three bytes: headers copied between tables stay whole. */
static void test_header_nul_bytes_survive_a_copy(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-hnul"), *dir2 = t_new_partition("wr-hnul2");
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  create(db, "u", dir2, NULL);
  st_exec(db, "INSERT INTO t(value, headers) VALUES ('v', '[[\"k\\u0000x\",\"a\\u0000b\"],"
              "[\"e\",\"\\ud83d\\ude00\\n\\\"\"],[\"bin\",{\"hex\":\"00ff\"}],[\"none\",null]]')");
  char *h = st_text(db, "SELECT headers FROM t", NULL);
  assert_string_equal(h, "[[\"k\\u0000x\",\"a\\u0000b\"],[\"e\",\"\xf0\x9f\x98\x80\\u000a\\\"\"],"
                         "[\"bin\",{\"hex\":\"00ff\"}],[\"none\",null]]");
  st_exec(db, "INSERT INTO u(value, headers) SELECT value, headers FROM t");
  char *h2 = st_text(db, "SELECT headers FROM u", NULL);
  assert_string_equal(h2, h);
  free(h);
  free(h2);
  st_close(db);
  t_drop_partition(dir);
  t_drop_partition(dir2);
}

/* JSON of another shape is refused saying which shape is expected;
** text that is not JSON says so. */
static void test_headers_of_another_shape_say_the_shape(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-hshape");
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  struct { const char *headers, *words; int shape; } cases[] = {
      {"[\"a\",\"b\"]", "headers[0] is a string, not a [name, value] pair", 1},
      {"{\"a\":\"b\"}", "headers are an object", 1},
      {"[[\"a\"]]", "headers[0] has 1 element", 1},
      {"[[\"a\",\"b\"]", "not valid JSON", 1},
      {"[[\"a\",1]]", "headers[0]: the value is a number: it must be a string, null or", 0},
      {"[[null,\"v\"]]", "headers[0]: the name is null", 0},
      {"[[\"a\",{\"hex\":\"0g\"}]]", "hex digits", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *sql = sqlite3_mprintf("INSERT INTO t(value, headers) VALUES ('x', %Q)", cases[i].headers);
    char *m = st_expect_rc(db, sql, SQLITE_MISMATCH);
    if (!strstr(m, cases[i].words)) fail_msg("%s: message lacks '%s'", m, cases[i].words);
    if (cases[i].shape && !strstr(m, "[name, value] pairs, such as")) {
      fail_msg("%s: message lacks the shape", m);
    }
    free(m);
    sqlite3_free(sql);
  }
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 0);
  st_close(db);
  t_drop_partition(dir);
}

/* A negative timestamp is refused, as Kafka's producer refuses it; NULL
** is now. */
static void test_negative_timestamp_refused(void **state) {
  (void)state;
  char *dir = t_new_partition("wr-negts");
  sqlite3 *db = st_open();
  create(db, "t", dir, NULL);
  char *m = st_expect_rc(db, "INSERT INTO t(value, timestamp) VALUES ('x', -1)", SQLITE_CONSTRAINT);
  assert_non_null(strstr(m, "timestamp -1 is negative"));
  free(m);
  st_exec(db, "INSERT INTO t(value, timestamp) VALUES ('zero', 0), ('now', NULL)");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE timestamp >= 0", NULL), 2);
  assert_int_equal(st_int(db, "SELECT timestamp > 1700000000000 FROM t WHERE offset = 1", NULL), 1);
  st_close(db);
  t_drop_partition(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_kafka_bytes),
      cmocka_unit_test(test_append_to_kafka),
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_transactions),
      cmocka_unit_test(test_writers_and_readers),
      cmocka_unit_test(test_retention),
      cmocka_unit_test(test_retention_read_committed),
      cmocka_unit_test(test_retention_ends_where_the_where_says),
      cmocka_unit_test(test_failed_database_commit_after_sync_publishes_nothing),
      cmocka_unit_test(test_dead_writers_checkpoint_tmp_removed),
      cmocka_unit_test(test_options_kept),
      cmocka_unit_test(test_record_over_max_message_bytes_refused),
      cmocka_unit_test(test_default_batches_are_producer_sized),
      cmocka_unit_test(test_write_options_belong_to_the_log),
      cmocka_unit_test(test_header_nul_bytes_survive_a_copy),
      cmocka_unit_test(test_headers_of_another_shape_say_the_shape),
      cmocka_unit_test(test_negative_timestamp_refused),
      cmocka_unit_test(test_named_table_reads_by_default),
      cmocka_unit_test(test_mode_create_then_write),
      cmocka_unit_test(test_readonly_is_mode),
      cmocka_unit_test(test_path_given_as_option),
      cmocka_unit_test(test_refused_write_leaves_no_lock),
      cmocka_unit_test(test_delete_by_timestamp_suggests_offset),
      cmocka_unit_test(test_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
