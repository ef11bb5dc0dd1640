/*
** test_vtab.c - the SQL interface of the kafka_log module: both ways of
** naming a log, the declared columns, the headers JSON, read-only-ness,
** error messages, kafka_log_version(), EXPLAIN QUERY PLAN, and what a torn
** or corrupted .log does to a query.
*/
#include "sqltest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kwriter.h"

/* CREATE VIRTUAL TABLE ... USING kafka_log('<dir>') for a fixture set. */
/* Fixtures are never written: their tables are made read-only. */
static void create_vtab(sqlite3 *db, const char *name, const char *dir) {
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE %s USING kafka_log(%Q, readonly=1)", name, dir);
  st_exec(db, sql);
  sqlite3_free(sql);
}

static void test_create_equals_table_valued(void **state) {
  const char *dir = t_fixture("d-jitter-nulls-headers");
  sqlite3 *db = st_open();
  create_vtab(db, "t", dir);
  int64_t n = st_int(db, "SELECT count(*) FROM t", NULL);
  assert_int_equal(n, 2000);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), n);
  assert_int_equal(st_int(db,
      "SELECT count(*) FROM (SELECT * FROM t EXCEPT SELECT * FROM kafka_log(?1))", "t", dir), 0);
  assert_int_equal(st_int(db,
      "SELECT count(*) FROM (SELECT * FROM kafka_log(?1) EXCEPT SELECT * FROM t)", "t", dir), 0);
  /* The rowid is the offset. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE rowid IS NOT offset", NULL), 0);
  assert_int_equal(st_int(db, "SELECT offset FROM t WHERE rowid = 1234", NULL), 1234);
  st_close(db);
}

static void test_columns(void **state) {
  static const char *const want[][2] = {
      {"offset", "INTEGER"}, {"timestamp", "INTEGER"}, {"timestamp_type", "TEXT"},
      {"key", "BLOB"}, {"value", "BLOB"}, {"headers", "TEXT"},
      {"partition_leader_epoch", "INTEGER"}, {"producer_id", "INTEGER"},
      {"producer_epoch", "INTEGER"}, {"sequence", "INTEGER"},
      {"is_transactional", "INTEGER"}, {"compression", "TEXT"},
      {"segment", "INTEGER"}, {"position", "INTEGER"}, {"topic", "TEXT"},
      {"partition", "INTEGER"}};
  const int nwant = (int)(sizeof want / sizeof want[0]);
  sqlite3 *db = st_open();
  create_vtab(db, "t", t_fixture("a-tiny"));

  /* PRAGMA table_info lists the visible columns with their declared types. */
  sqlite3_stmt *st = st_prep(db, "SELECT name, upper(type) FROM pragma_table_info('t') ORDER BY cid", NULL);
  int i = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *type = (const char *)sqlite3_column_text(st, 1);
    print_message("  column %d: %s %s\n", i, name, type);
    assert_true(i < nwant);
    assert_string_equal(name, want[i][0]);
    assert_string_equal(type, want[i][1]);
    i++;
  }
  sqlite3_finalize(st);
  assert_int_equal(i, nwant);

  /* The table-valued form declares the same columns. */
  st = st_prep(db, "SELECT * FROM kafka_log(?1)", "t", t_fixture("a-tiny"));
  assert_int_equal(sqlite3_column_count(st), nwant);
  for (i = 0; i < nwant; i++) {
    assert_string_equal(sqlite3_column_name(st, i), want[i][0]);
    assert_non_null(sqlite3_column_decltype(st, i));
    assert_true(!sqlite3_stricmp(sqlite3_column_decltype(st, i), want[i][1]));
  }
  sqlite3_finalize(st);

  /* Storage classes of a v2 record with key, value and no headers. */
  char *types = st_text(db,
      "SELECT typeof(offset)||typeof(timestamp)||typeof(timestamp_type)||typeof(key)"
      "||typeof(value)||typeof(headers)||typeof(partition_leader_epoch)||typeof(producer_id)"
      "||typeof(producer_epoch)||typeof(sequence)||typeof(is_transactional)"
      "||typeof(compression)||typeof(segment)||typeof(position) FROM t WHERE offset = 4", NULL);
  assert_string_equal(types, "integerintegertextblobblobtextintegerintegerintegerintegerinteger"
                             "textintegerinteger");
  free(types);
  char *row = st_text(db,
      "SELECT offset||','||timestamp||','||timestamp_type||','||hex(key)||','||headers||','"
      "||partition_leader_epoch||','||producer_id||','||producer_epoch||','||sequence||','"
      "||is_transactional||','||compression||','||segment||','||position FROM t WHERE offset = 4",
      NULL);
  print_message("  a-tiny offset 4: %s\n", row);
  assert_string_equal(row, "4,1700000000040,CreateTime,3030303030303034,[],0,-1,-1,-1,0,none,0,202");
  free(row);
  st_close(db);
}

static void test_headers_json(void **state) {
  const char *dir = t_fixture("d-jitter-nulls-headers");
  sqlite3 *db = st_open();
  /* Offset 2: h0 = "hv-2-0", h1 = null (expected.json). */
  char *h = st_text(db, "SELECT headers FROM kafka_log(?1) WHERE offset = 2", "t", dir);
  print_message("  offset 2 headers: %s\n", h);
  assert_non_null(h);
  assert_int_equal(st_int(db, "SELECT json_valid(?1)", "t", h), 1);
  char *canon = st_text(db, "SELECT json(?1)", "t", h);
  assert_string_equal(canon, "[[\"h0\",\"hv-2-0\"],[\"h1\",null]]");
  free(canon);
  free(h);
  /* Offset 3: three headers, the middle one null. */
  canon = st_text(db, "SELECT json(headers) FROM kafka_log(?1) WHERE offset = 3", "t", dir);
  assert_string_equal(canon, "[[\"h0\",\"hv-3-0\"],[\"h1\",null],[\"h2\",\"hv-3-2\"]]");
  free(canon);
  /* Offset 76: null key, tombstone, no headers -> exactly '[]'. */
  char *r = st_text(db,
      "SELECT quote(key)||' '||quote(value)||' '||headers FROM kafka_log(?1) WHERE offset = 76",
      "t", dir);
  assert_string_equal(r, "NULL NULL []");
  free(r);
  /* Every headers value is a JSON array of 2-element arrays. */
  assert_int_equal(st_int(db,
      "SELECT count(*) FROM kafka_log(?1) k, json_each(k.headers) h"
      " WHERE json_type(h.value) <> 'array' OR json_array_length(h.value) <> 2"
      "    OR json_type(h.value,'$[0]') NOT IN ('text','object')", "t", dir), 0);
  assert_true(st_int(db,
      "SELECT count(*) FROM kafka_log(?1) k, json_each(k.headers) h"
      " WHERE json_type(h.value,'$[1]') = 'null'", "t", dir) > 0);
  st_close(db);
}

/* Constraint values at and past the edges of int64, REALs, text and NULL:
** kafka_log must answer exactly like a native table with the same rows
** (and, under UBSan, without arithmetic overflow in planning or seeking). */
static void test_edge_values(void **state) {
  static const char *const clauses[] = {
      "WHERE offset >= 0 AND offset <= 9223372036854775807",
      "WHERE offset >= -5 AND offset <= 9223372036854775807",
      "WHERE offset > 9223372036854775807",
      "WHERE offset >= 9223372036854775807",
      "WHERE offset < -9223372036854775808",
      "WHERE offset <= -9223372036854775808",
      "WHERE offset BETWEEN -9223372036854775808 AND 9223372036854775807",
      "WHERE offset BETWEEN 9223372036854775807 AND -9223372036854775808",
      "WHERE offset = 9223372036854775807 OR offset = -9223372036854775808",
      "WHERE timestamp > 9223372036854775807",
      "WHERE timestamp >= -9223372036854775808",
      "WHERE timestamp < -9223372036854775808",
      "WHERE timestamp BETWEEN -9223372036854775808 AND 9223372036854775807",
      "WHERE offset = 2.5", "WHERE offset < 2.5", "WHERE offset > 2.5",
      "WHERE offset <= 2.5", "WHERE offset >= 2.5", "WHERE offset BETWEEN 2.5 AND 6.5",
      "WHERE offset > 9.2233720368547758e18", "WHERE offset < -9.3e18",
      "WHERE offset < 9.3e18", "WHERE offset > -9.3e18",
      "WHERE timestamp >= 1700000000010.5", "WHERE timestamp < 1700000000010.5",
      "WHERE timestamp > 1e300", "WHERE timestamp < -1e300",
      "WHERE offset = '3'", "WHERE offset < '3'", "WHERE offset >= '3'",
      "WHERE offset IN ('3', 4.0, 5.5)", "WHERE offset = x'03'",
      "WHERE offset > NULL", "WHERE offset IN (NULL, 3)", "WHERE timestamp = NULL",
      "WHERE offset IN (9223372036854775807, -9223372036854775808, 0, 9)",
      "WHERE rowid = 4", "WHERE rowid > 9223372036854775807",
      "WHERE offset > 5 ORDER BY offset LIMIT -1",
      "WHERE offset > 5 ORDER BY offset LIMIT 0",
      "ORDER BY offset LIMIT 9223372036854775807 OFFSET 9223372036854775807",
      "ORDER BY offset LIMIT 2 OFFSET 9223372036854775807",
      "ORDER BY offset DESC LIMIT 3 OFFSET -2",
      "ORDER BY offset DESC LIMIT 9223372036854775807 OFFSET 9",
      "ORDER BY offset LIMIT 3 OFFSET 8",
      "WHERE offset BETWEEN 0 AND 9223372036854775807 ORDER BY offset DESC LIMIT 2",
      "WHERE offset >= -9223372036854775808 ORDER BY offset DESC LIMIT 2 OFFSET 1",
  };
  const char *dir = t_fixture("a-tiny");
  sqlite3 *db = st_open();
  st_exec(db, "CREATE TABLE n(offset INTEGER PRIMARY KEY, timestamp INTEGER)");
  st_run(db, "INSERT INTO n SELECT offset, timestamp FROM kafka_log(?1)", "t", dir);
  assert_int_equal(st_int(db, "SELECT count(*) FROM n", NULL), 10);
  int bad = 0;
  for (size_t i = 0; i < sizeof clauses / sizeof clauses[0]; i++) {
    int ordered = strstr(clauses[i], "ORDER BY") != NULL;
    char *qk = sqlite3_mprintf(ordered ? "SELECT offset FROM kafka_log(?1) %s"
                                       : "SELECT offset FROM kafka_log(?1) %s ORDER BY 1", clauses[i]);
    char *qn = sqlite3_mprintf(ordered ? "SELECT offset FROM n %s"
                                       : "SELECT offset FROM n %s ORDER BY 1", clauses[i]);
    st_buf a = {0}, b = {0};
    st_render(db, st_prep(db, qk, "t", dir), &a);
    st_render(db, st_prep(db, qn, NULL), &b);
    if (strcmp(a.p, b.p)) {
      bad++;
      print_message("  %s\n    kafka_log: %s\n    native:    %s\n", clauses[i], a.p, b.p);
    }
    st_buf_free(&a);
    st_buf_free(&b);
    sqlite3_free(qk);
    sqlite3_free(qn);
  }
  st_close(db);
  assert_int_equal(bad, 0);
}

/* Expect sql to fail (at prepare or step); return the message. */
static char *expect_error(sqlite3 *db, const char *sql, int *rc_out) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  char *msg = strdup(sqlite3_errmsg(db));
  sqlite3_finalize(st);
  if (rc == SQLITE_OK) fail_msg("expected an error from: %s", sql);
  print_message("  %s\n    -> rc %d: %s\n", sql, rc, msg);
  if (rc_out) *rc_out = rc;
  return msg;
}

static void test_read_only(void **state) {
  sqlite3 *db = st_open();
  create_vtab(db, "t", t_fixture("a-tiny"));
  int rc;
  char *m = expect_error(db, "INSERT INTO t(key, value) VALUES (x'00', x'01')", &rc);
  assert_int_equal(rc, SQLITE_READONLY);
  assert_non_null(strstr(m, "mode='read'"));
  free(m);
  free(expect_error(db, "UPDATE t SET value = x'00' WHERE offset = 1", NULL));
  free(expect_error(db, "DELETE FROM t WHERE offset = 1", NULL));
  free(expect_error(db, "DELETE FROM t", NULL));
  m = expect_error(db, "INSERT INTO kafka_log(key, value) VALUES (x'00', x'01')", &rc);
  assert_int_equal(rc, SQLITE_READONLY);
  free(m);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 10);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE value = x'00'", NULL), 0);
  st_close(db);
}

static void test_missing_dir(void **state) {
  static const char missing[] = "/nonexistent/kl-missing-dir/orders-0";
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("SELECT * FROM kafka_log(%Q)", missing);
  char *msg = expect_error(db, sql, NULL);
  assert_non_null(strstr(msg, missing));
  free(msg);
  sqlite3_free(sql);
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE m USING kafka_log(%Q, readonly=1); SELECT * FROM m",
                        missing);
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  print_message("  CREATE VIRTUAL TABLE on a missing dir -> rc %d: %s\n", rc, err ? err : "");
  assert_int_not_equal(rc, SQLITE_OK);
  assert_non_null(err);
  assert_non_null(strstr(err, missing));
  sqlite3_free(err);
  sqlite3_free(sql);
  /* NULL names no directory: an error or no rows, never a crash. */
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT * FROM kafka_log(NULL)", -1, &st, NULL) == SQLITE_OK) {
    rc = sqlite3_step(st);
    print_message("  kafka_log(NULL) -> rc %d: %s\n", rc, sqlite3_errmsg(db));
    assert_int_not_equal(rc, SQLITE_ROW);
  }
  sqlite3_finalize(st);
  st_close(db);
}

/* A named table's directory and options are fixed when it is created:
** `WHERE dir = ...` is a comparison with the one it has, not a way to read
** another directory. */
static void test_named_table_is_fixed(void **state) {
  char a[4096], b[4096]; /* t_fixture returns one static buffer */
  snprintf(a, sizeof a, "%s", t_fixture("a-tiny"));
  snprintf(b, sizeof b, "%s", t_fixture("b-multi-segment"));
  sqlite3 *db = st_open();
  create_vtab(db, "t", a);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 10);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE dir = ?1", "t", b), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE dir = ?1", "t", a), 10);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE dir IN (?1, 'x')", "t", b), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE on_corrupt = 'skip'", NULL), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM t WHERE on_corrupt = 'error'", NULL), 10);
  char *d = st_text(db, "SELECT DISTINCT dir FROM t", NULL);
  assert_string_equal(d, a);
  free(d);
  /* Options are kept too. */
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE s USING kafka_log(%Q, on_corrupt='skip', "
                              "readonly=1)", a);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT count(*) FROM s WHERE on_corrupt = 'skip'", NULL), 10);
  /* A named table needs its directory. */
  int rc;
  free(expect_error(db, "CREATE VIRTUAL TABLE n USING kafka_log", &rc));
  st_close(db);
}

/* A relative directory is stored absolute: the database opens from any
** working directory.  The shadow table that keeps it follows the table
** through ALTER TABLE RENAME and DROP TABLE, and a defensive connection
** cannot write it. */
static void test_named_table_relative_dir(void **state) {
  char *tmp = t_mkdtemp("vtab-rel");
  char dbpath[4200], cwd[4096];
  snprintf(dbpath, sizeof dbpath, "%s/saved.db", tmp);
  assert_non_null(getcwd(cwd, sizeof cwd));
  assert_int_equal(chdir(KL_FIXTURES), 0);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
  assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
  st_exec(db, "CREATE VIRTUAL TABLE r USING kafka_log('./a-tiny/orders-0', on_corrupt = 'skip', "
              "readonly = 1)");
  assert_int_equal(st_int(db, "SELECT count(*) FROM r", NULL), 10);
  st_close(db);
  assert_int_equal(chdir("/"), 0);
  assert_int_equal(sqlite3_open(dbpath, &db), SQLITE_OK);
  assert_int_equal(sqlite3_kafkalog_init(db, NULL, NULL), SQLITE_OK);
  assert_int_equal(st_int(db, "SELECT count(*) FROM r", NULL), 10);
  char *d = st_text(db, "SELECT DISTINCT dir || ' ' || on_corrupt FROM r", NULL);
  char want[4200];
  snprintf(want, sizeof want, "%s skip", t_fixture("a-tiny"));
  assert_string_equal(d, want);
  free(d);
  d = st_text(db, "SELECT v FROM r_config WHERE k = 'dir'", NULL);
  assert_string_equal(d, t_fixture("a-tiny"));
  free(d);
  /* Defensive connections cannot change where a table reads. */
  int on = 1;
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on);
  int rc;
  free(expect_error(db, "UPDATE r_config SET v = '/etc' WHERE k = 'dir'", &rc));
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 0, &on);
  st_exec(db, "ALTER TABLE r RENAME TO r2");
  assert_int_equal(st_int(db, "SELECT count(*) FROM r2", NULL), 10);
  assert_int_equal(st_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'r_config'", NULL), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'r2_config'", NULL), 1);
  st_exec(db, "DROP TABLE r2");
  assert_int_equal(st_int(db, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'r%'", NULL), 0);
  st_close(db);
  assert_int_equal(chdir(cwd), 0);
  t_rmdir(tmp);
  free(tmp);
}

/* What is not a partition directory, and why a directory does not open,
** in the error message. */
static void test_not_a_partition(void **state) {
  char *tmp = t_mkdtemp("vtab-np");
  char path[4200];
  sqlite3 *db = st_open();
  int rc;
  char *msg;
  /* Empty: Kafka keeps a segment in every partition directory. */
  char *sql = sqlite3_mprintf("SELECT * FROM kafka_log(%Q)", tmp);
  msg = expect_error(db, sql, &rc);
  assert_int_equal(rc, SQLITE_CANTOPEN);
  assert_non_null(strstr(msg, "is not a Kafka partition directory"));
  free(msg);
  /* A log directory (topic partitions inside) is read as one: these
  ** partitions are empty, so no rows and no error. */
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/orders-%d", tmp, i);
    assert_int_equal(mkdir(path, 0755), 0);
  }
  snprintf(path, sizeof path, "%s/not-a-partition", tmp);
  assert_int_equal(mkdir(path, 0755), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", tmp), 0);
  /* One of them alone is a partition directory without a segment. */
  snprintf(path, sizeof path, "%s/orders-3", tmp);
  sqlite3_free(sql);
  sql = sqlite3_mprintf("SELECT * FROM kafka_log(%Q)", path);
  msg = expect_error(db, sql, &rc);
  assert_non_null(strstr(msg, "is not a Kafka partition directory"));
  free(msg);
  sqlite3_free(sql);
  /* The OS says why a path does not open. */
  snprintf(path, sizeof path, "%s/missing", tmp);
  sql = sqlite3_mprintf("SELECT * FROM kafka_log(%Q)", path);
  msg = expect_error(db, sql, &rc);
  assert_int_equal(rc, SQLITE_CANTOPEN);
  assert_non_null(strstr(msg, "No such file or directory"));
  free(msg);
  sqlite3_free(sql);
  snprintf(path, sizeof path, "%s/file", tmp);
  assert_int_equal(t_write_file(path, "x", 1), 0);
  sql = sqlite3_mprintf("SELECT * FROM kafka_log(%Q)", path);
  msg = expect_error(db, sql, &rc);
  assert_non_null(strstr(msg, "Not a directory"));
  free(msg);
  sqlite3_free(sql);
  if (geteuid() != 0) { /* root reads whatever it likes */
    snprintf(path, sizeof path, "%s/orders-0", tmp);
    assert_int_equal(chmod(path, 0), 0);
    sql = sqlite3_mprintf("SELECT * FROM kafka_log(%Q)", path);
    msg = expect_error(db, sql, &rc);
    assert_non_null(strstr(msg, "Permission denied"));
    free(msg);
    sqlite3_free(sql);
    assert_int_equal(chmod(path, 0755), 0);
  }
  st_close(db);
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/orders-%d", tmp, i);
    rmdir(path);
  }
  snprintf(path, sizeof path, "%s/not-a-partition", tmp);
  rmdir(path);
  t_rmdir(tmp);
  free(tmp);
}

static void test_version(void **state) {
  sqlite3 *db = st_open();
  char *v = st_text(db, "SELECT kafka_log_version()", NULL);
  print_message("  %s\n", v);
  assert_non_null(v);
  assert_true(!strncmp(v, "kafkalog " KL_VERSION " (codecs:", strlen("kafkalog " KL_VERSION " (codecs:")));
  const char *codecs = strstr(v, "(codecs:");
  for (const char *c = "gzip\0snappy\0lz4\0zstd\0"; *c; c += strlen(c) + 1)
    assert_non_null(strstr(codecs, c));
  assert_int_equal(v[strlen(v) - 1], ')');
  free(v);
  st_close(db);
}

/* EXPLAIN QUERY PLAN output, one detail per line. */
static char *plan(sqlite3 *db, const char *query, const char *dir) {
  char *p = st_plan(db, query, dir);
  print_message("  %s\n    %s", query, p);
  return p;
}

static void test_query_plan(void **state) {
  const char *dir = t_fixture("a-tiny");
  sqlite3 *db = st_open();
  char *p = plan(db, "SELECT * FROM kafka_log(?1) WHERE offset = 5", dir);
  assert_non_null(strstr(p, "offset"));
  free(p);
  p = plan(db, "SELECT * FROM kafka_log(?1) WHERE offset BETWEEN 1 AND 9 ORDER BY offset DESC", dir);
  assert_non_null(strstr(p, "offset"));
  /* The module delivers descending order itself: no sorter. */
  assert_null(strstr(p, "B-TREE FOR ORDER BY"));
  free(p);
  p = plan(db, "SELECT * FROM kafka_log(?1) WHERE timestamp >= 1", dir);
  assert_non_null(strstr(p, "timestamp"));
  free(p);
  /* Ascending order is native too. */
  p = plan(db, "SELECT * FROM kafka_log(?1) ORDER BY offset", dir);
  assert_null(strstr(p, "B-TREE FOR ORDER BY"));
  free(p);
  /* And the answers match the plans. */
  assert_int_equal(st_int(db, "SELECT group_concat(offset) = '9,8,7,6,5,4,3,2,1' FROM"
                              " (SELECT offset FROM kafka_log(?1) WHERE offset BETWEEN 1 AND 9"
                              "  ORDER BY offset DESC)", "t", dir), 1);
  st_close(db);
}

/*
** max_skew_ms: a bound on disorder the user vouches for.  With the data's
** real disorder (kafka_log_max_skew) or more, answers are exact and the
** same as without it; with less, the upper time bound ends the scan where
** the running maximum passes it, and the records after that point that
** break the bound are not rows.  d-jitter-nulls-headers has timestamps
** jittered by up to a second.
*/
static void test_max_skew(void **state) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", t_fixture("d-jitter-nulls-headers"));
  sqlite3 *db = st_open();
  int64_t skew = st_int(db, "SELECT kafka_log_max_skew(?1)", "t", dir);
  assert_true(skew > 0);
  /* It is the largest drop below the running maximum, computed in SQL. */
  assert_int_equal(st_int(db, "SELECT max(m - timestamp) FROM (SELECT timestamp, max(timestamp)"
                              " OVER (ORDER BY offset) AS m FROM kafka_log(?1))", "t", dir), skew);
  int64_t t0 = st_int(db, "SELECT min(timestamp) FROM kafka_log(?1)", "t", dir);
  int64_t t1 = st_int(db, "SELECT max(timestamp) FROM kafka_log(?1)", "t", dir);
  int violated = 0;
  for (int64_t hi = t0; hi <= t1 + 1; hi += (t1 - t0) / 37 + 1) {
    char *q = sqlite3_mprintf("SELECT count(*), total(offset) FROM kafka_log(?1) WHERE timestamp >= %lld"
                              " AND timestamp < %lld", (long long)(hi - 3000), (long long)hi);
    char *exact = st_text(db, q, "t", dir);
    char *pq = sqlite3_mprintf("%s AND timestamp + 0 < %lld", q, (long long)hi);
    char *plain = st_text(db, pq, "t", dir);
    sqlite3_free(pq);
    assert_string_equal(exact, plain);
    for (int64_t k = skew; k <= skew + 1; k++) {
      char *b = sqlite3_mprintf("%s AND max_skew_ms = %lld", q, (long long)k);
      char *got = st_text(db, b, "t", dir);
      assert_string_equal(got, exact);
      free(got);
      sqlite3_free(b);
    }
    /* The table option says the same. */
    char *b = sqlite3_mprintf("%s AND max_skew_ms = 0", q);
    char *less = st_text(db, b, "t", dir);
    if (strcmp(less, exact) != 0) violated++;
    free(less);
    sqlite3_free(b);
    free(exact);
    free(plain);
    sqlite3_free(q);
  }
  /* A bound the data break loses rows: the case the option warns of. */
  assert_true(violated > 0);
  /* The named form keeps the option; the hidden column shows it. */
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE s USING kafka_log(%Q, max_skew_ms=%lld)", dir,
                              (long long)skew);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT DISTINCT max_skew_ms FROM s", NULL), skew);
  assert_int_equal(st_int(db, "SELECT count(*) FROM s WHERE timestamp < ?1", "i", t0 + 5000),
                   st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE timestamp < ?2", "ti", dir,
                          t0 + 5000));
  assert_int_equal(st_int(db, "SELECT v FROM s_config WHERE k = 'max_skew_ms'", NULL), skew);
  int rc;
  free(expect_error(db, "CREATE VIRTUAL TABLE x USING kafka_log('/tmp', max_skew_ms=-1)", &rc));
  free(expect_error(db, "CREATE VIRTUAL TABLE x USING kafka_log('/tmp', max_skew_ms=1.5)", &rc));
  free(expect_error(db, "SELECT * FROM kafka_log('/tmp', 'error', 'soon')", &rc));
  st_close(db);
}

/* Kafka's default partitioner in SQL: a key's bytes whatever its type (a
** TEXT's UTF-8, a number's text), no partition for no key, and a count that
** is not a positive integer refused. */
static void test_partition_for(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  assert_int_equal(st_int(db, "SELECT kafka_partition_for('foobar', 50)", NULL), 16);
  assert_int_equal(st_int(db, "SELECT kafka_partition_for(x'666f6f626172', 50)", NULL), 16);
  assert_int_equal(st_int(db, "SELECT kafka_partition_for(21, 1000) = kafka_partition_for('21', 1000)"
                              " AND kafka_partition_for(NULL, 3) IS NULL", NULL), 1);
  static const char *const bad[] = {"0", "-1", "2.5", "'x'", "NULL", "2147483648"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *q = sqlite3_mprintf("SELECT kafka_partition_for('k', %s)", bad[i]);
    char *m = st_expect_rc(db, q, SQLITE_ERROR);
    assert_non_null(strstr(m, "partition count"));
    free(m);
    sqlite3_free(q);
  }
  st_close(db);
}

/* Confluent's wire format: a zero byte, a 4-byte big-endian schema id,
** the payload.  Anything else is NULL, never a guess. */
static void test_confluent_wire(void **state) {
  sqlite3 *db = st_open();
  char *r = st_text(db, "SELECT kafka_schema_id(x'000000002a7b7d') || '|' ||"
                        " hex(kafka_payload(x'000000002a7b7d')) || '|' ||"
                        " kafka_schema_id(x'00ffffffff') || '|' ||"
                        " quote(kafka_payload(x'0000000001')) || '|' ||"
                        " kafka_schema_id(x'0080000000')", NULL);
  assert_string_equal(r, "42|7B7D|-1|X''|-2147483648");
  free(r);
  static const char *const none[] = {"x'01000000002a'", "x'00000000'", "x''", "NULL", "42",
                                     "'abc'", "1.5"};
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    char *q = sqlite3_mprintf("SELECT kafka_schema_id(%s) IS NULL AND kafka_payload(%s) IS NULL",
                              none[i], none[i]);
    if (st_int(db, q, NULL) != 1) fail_msg("%s is not in Confluent's wire format", none[i]);
    sqlite3_free(q);
  }
  /* On rows: the fixtures' values are plain text, so no schema id. */
  assert_int_equal(st_int(db, "SELECT count(kafka_schema_id(value)) FROM kafka_log(?1)", "t",
                          t_fixture("b-multi-segment")), 0);
  st_close(db);
}

/* A private copy of a-tiny whose .log is then damaged; returns the dir. */
static char *damaged_copy(const char *tag, char **log_path) {
  char *dir = t_mkdtemp(tag);
  assert_non_null(dir);
  assert_int_equal(t_copy_dir(t_fixture("a-tiny"), dir), 0);
  *log_path = sqlite3_mprintf("%s/00000000000000000000.log", dir);
  return dir;
}

/*
** kafka_batches: every entry, control batches with their marker; a batch
** whose CRC does not hold is listed with crc_valid = 0 and the walk goes on
** (as kafka-dump-log goes on), any other damage is SQLITE_CORRUPT naming
** the file and position; offset bounds are exact under every plan and read
** one segment.
*/
static void test_batches(void **state) {
  char b[4096];
  snprintf(b, sizeof b, "%s", t_fixture("b-multi-segment"));
  sqlite3 *db = st_open();
  static const char *const bounds[][2] = {
      {"last_offset >= 12345", "last_offset + 0 >= 12345"},
      {"last_offset > 12360 AND base_offset < 12500", "last_offset + 0 > 12360 AND base_offset + 0 < 12500"},
      {"base_offset <= 30", "base_offset + 0 <= 30"},
      {"last_offset >= 2500.5 AND base_offset <= 2600", "last_offset + 0 >= 2500.5 AND base_offset + 0 <= 2600"},
      {"last_offset >= NULL", "last_offset + 0 >= NULL"},
      {"base_offset < 'x'", "base_offset + 0 < 'x'"},
  };
  for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
    char *q1 = sqlite3_mprintf("SELECT count(*) || ',' || coalesce(sum(position), 0) FROM"
                               " kafka_batches(?1) WHERE %s", bounds[i][0]);
    char *q2 = sqlite3_mprintf("SELECT count(*) || ',' || coalesce(sum(position), 0) FROM"
                               " kafka_batches(?1) WHERE %s", bounds[i][1]);
    char *x = st_text(db, q1, "t", b), *y = st_text(db, q2, "t", b);
    if (strcmp(x, y)) fail_msg("%s: %s, but %s", bounds[i][0], x, y);
    free(x);
    free(y);
    sqlite3_free(q1);
    sqlite3_free(q2);
  }
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  assert_int_equal(st_int(db, "SELECT base_offset FROM kafka_batches(?1) WHERE last_offset >= 12345"
                              " LIMIT 1", "t", b), 12332);
  st_stats k = st_get_stats(db);
  assert_true(k.segments_opened <= 1);
  assert_true(k.batch_headers <= 64);
  /* Transaction markers: the control batches of g-transactions. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE is_control AND"
                              " (control_type NOT IN ('COMMIT', 'ABORT') OR coordinator_epoch IS NULL)",
                          "t", t_fixture("g-transactions")), 0);
  assert_true(st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE control_type = 'ABORT'", "t",
                     t_fixture("g-transactions")) > 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_batches(?1) WHERE NOT is_control AND"
                              " control_type IS NOT NULL", "t", t_fixture("g-transactions")), 0);

  /* A CRC mismatch is a row; the batches after it are listed too. */
  char *logp;
  char *dir = damaged_copy("batches-crc", &logp);
  size_t n;
  uint8_t *bytes = t_read_file(logp, &n);
  assert_non_null(bytes);
  bytes[202 + 150] ^= 0x01; /* inside a record of the 2nd batch */
  assert_int_equal(t_write_file(logp, bytes, n), 0);
  char *r = st_text(db, "SELECT group_concat(position || ':' || crc_valid, ' ') FROM"
                        " kafka_batches(?1)", "t", dir);
  assert_string_equal(r, "0:1 202:0 404:1 606:1");
  free(r);
  /* Bytes that are not an entry at all fail, naming file and position. */
  bytes[202 + 150] ^= 0x01;
  bytes[404 + 16] = 7; /* magic 7 */
  assert_int_equal(t_write_file(logp, bytes, n), 0);
  free(bytes);
  sqlite3_stmt *st = st_prep(db, "SELECT position FROM kafka_batches(?1)", "t", dir);
  int rc, rows = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) rows++;
  assert_int_equal(rc & 0xff, SQLITE_CORRUPT);
  assert_int_equal(rows, 2);
  assert_non_null(strstr(sqlite3_errmsg(db), "00000000000000000000.log"));
  assert_non_null(strstr(sqlite3_errmsg(db), "404"));
  sqlite3_finalize(st);
  int erc;
  free(expect_error(db, "SELECT * FROM kafka_batches('/nonexistent-dir')", &erc));
  assert_int_equal(erc & 0xff, SQLITE_CANTOPEN);
  free(expect_error(db, "SELECT * FROM kafka_segments('/nonexistent-dir')", &erc));
  assert_int_equal(erc & 0xff, SQLITE_CANTOPEN);
  st_close(db);
  t_rmdir(dir);
  free(dir);
  sqlite3_free(logp);
}

/* a-tiny's batches: [0..2] at 0, [3..5] at 202, [6..8] at 404, [9] at 606;
** each 202 bytes but the last (108), 714 bytes in all. */
static void test_truncated_log(void **state) {
  char *logp;
  char *dir = damaged_copy("trunc", &logp);
  assert_int_equal(truncate(logp, 202 + 101), 0);  /* torn 2nd batch */
  sqlite3 *db = st_open();
  st_buf b = {0};
  st_render(db, st_prep(db, "SELECT offset FROM kafka_log(?1)", "t", dir), &b);
  assert_string_equal(b.p, "0\n1\n2\n");  /* complete batches only, no error */
  st_buf_free(&b);
  assert_int_equal(st_int(db, "SELECT max(offset) FROM kafka_log(?1) WHERE offset >= 1", "t", dir), 2);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset = 5", "t", dir), 0);
  assert_int_equal(st_int(db, "SELECT offset FROM kafka_log(?1) ORDER BY offset DESC LIMIT 1", "t", dir), 2);
  /* The time index still names offset 9, which is gone now. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE timestamp >= 1700000000090",
                          "t", dir), 0);
  st_close(db);
  t_rmdir(dir);
  free(dir);
  sqlite3_free(logp);
}

static void test_corrupt_log(void **state) {
  char *logp;
  char *dir = damaged_copy("crc", &logp);
  size_t n;
  uint8_t *bytes = t_read_file(logp, &n);
  assert_non_null(bytes);
  assert_int_equal(n, 714);
  bytes[202 + 150] ^= 0x01;  /* inside a record of the 2nd batch: CRC mismatch */
  assert_int_equal(t_write_file(logp, bytes, n), 0);
  free(bytes);

  sqlite3 *db = st_open();
  sqlite3_stmt *st = st_prep(db, "SELECT offset FROM kafka_log(?1)", "t", dir);
  int rc, rows = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) rows++;
  const char *msg = sqlite3_errmsg(db);
  print_message("  after %d rows: rc %d: %s\n", rows, rc, msg);
  assert_int_equal(rc & 0xff, SQLITE_CORRUPT);
  assert_non_null(strstr(msg, "00000000000000000000.log"));
  assert_non_null(strstr(msg, "202"));
  assert_true(rows <= 3);  /* nothing of the damaged batch or after it */
  sqlite3_finalize(st);

  /* Pointed queries into the damaged batch fail the same way ... */
  st = st_prep(db, "SELECT * FROM kafka_log(?1) WHERE offset = 4", "t", dir);
  rc = sqlite3_step(st);
  assert_int_equal(rc & 0xff, SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "202"));
  sqlite3_finalize(st);
  /* ... and so do those past it: a-tiny is too small for index entries,
  ** so the lookup of 7 reads from position 0 through the damaged batch
  ** (as a Kafka consumer would get it in its fetch and reject it) ... */
  st = st_prep(db, "SELECT * FROM kafka_log(?1) WHERE offset = 7", "t", dir);
  assert_int_equal(sqlite3_step(st) & 0xff, SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "202"));
  sqlite3_finalize(st);
  /* ... while those before it stay readable: the batch after offset 1
  ** starts past it, which its header tells without a CRC. */
  assert_int_equal(st_int(db, "SELECT offset FROM kafka_log(?1) WHERE offset = 1", "t", dir), 1);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset <= 2", "t", dir), 3);
  st_close(db);
  t_rmdir(dir);
  free(dir);
  sqlite3_free(logp);
}

/*
** A skew past INT64_MAX: timestamps 9223372036854775807 then -5 lie 2^63 + 4
** apart.  kafka_log_max_skew saturates at 9223372036854775807, and
** max_skew_ms takes that as no bound, so the answer it gives back is exact.
*/
static void test_max_skew_past_int64(void **state) {
  (void)state;
  char *dir = t_mkdtemp("skew-top");
  assert_non_null(dir);
  kw_options o = {1 << 20, 4096, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  static const int64_t stamps[] = {INT64_MAX, -5, 0};
  for (int i = 0; i < 3; i++) {
    kl_rec_in r = {stamps[i], "k", 1, "v", 1, NULL, 0};
    assert_int_equal(kw_append(w, NULL, &r, 1), 0);
  }
  assert_int_equal(kw_close(w), 0);
  sqlite3 *db = st_open();
  assert_int_equal(st_int(db, "SELECT kafka_log_max_skew(?1)", "t", dir), INT64_MAX);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE timestamp <= -5"
                              " AND max_skew_ms = 9223372036854775807", "t", dir), 1);
  assert_int_equal(st_int(db, "SELECT offset FROM kafka_log(?1) WHERE timestamp < 0"
                              " AND max_skew_ms = 9223372036854775807 ORDER BY offset DESC", "t", dir), 1);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* kafka_log with no path says a path is required (not SQLite's "no query
** solution"). */
static void test_no_path_says_path_required(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  static const char *const sqls[] = {"SELECT * FROM kafka_log()", "SELECT * FROM kafka_log",
                                     "SELECT count(*) FROM kafka_log WHERE offset = 3"};
  for (size_t i = 0; i < sizeof sqls / sizeof *sqls; i++) {
    char *m = expect_error(db, sqls[i], NULL);
    assert_non_null(strstr(m, "a path is required"));
    free(m);
  }
  /* A path from another table still plans (the join gives it). */
  char *sql = sqlite3_mprintf("SELECT count(*) FROM (SELECT %Q AS p) s, kafka_log k"
                              " WHERE k.dir = s.p", t_fixture("a-tiny"));
  assert_int_equal(st_int(db, sql, NULL), 10);
  sqlite3_free(sql);
  st_close(db);
}

/* An option's bad value gets one message, wherever the option is given:
** naming the option, the value and what it takes (not "unknown option"). */
static void test_invalid_option_value_same_message(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  const char *dir = t_fixture("a-tiny");
  const char *want = "max_skew_ms='abc' is not valid: max_skew_ms takes an integer of "
                     "milliseconds, 0 or more";
  char *sqls[3];
  sqls[0] = sqlite3_mprintf("CREATE VIRTUAL TABLE x USING kafka_log(%Q, max_skew_ms=abc)", dir);
  sqls[1] = sqlite3_mprintf("SELECT * FROM kafka_log(%Q, 'error', 'abc')", dir);
  sqls[2] = sqlite3_mprintf("SELECT * FROM kafka_log(%Q) WHERE max_skew_ms = 'abc'", dir);
  for (int i = 0; i < 3; i++) {
    char *m = expect_error(db, sqls[i], NULL);
    if (!strstr(m, want)) fail_msg("%s: not '%s'", m, want);
    free(m);
    sqlite3_free(sqls[i]);
  }
  /* Word options likewise, in CREATE and as a constraint. */
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE x USING kafka_log(%Q, isolation='dirty')", dir);
  char *m = expect_error(db, sql, NULL);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "isolation='dirty' is not valid: isolation takes 'read_uncommitted'"));
  free(m);
  sql = sqlite3_mprintf("SELECT * FROM kafka_log(%Q) WHERE isolation = 'dirty'", dir);
  m = expect_error(db, sql, NULL);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "isolation='dirty' is not valid: isolation takes 'read_uncommitted'"));
  free(m);
  st_close(db);
}

/* A quoted number is a number, as SQLite's INTEGER affinity reads it, in
** every place an option is given. */
static void test_quoted_number_option(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  const char *dir = t_fixture("a-tiny");
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE q USING kafka_log(%Q, max_skew_ms='60000')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT DISTINCT max_skew_ms FROM q", NULL), 60000);
  assert_int_equal(st_int(db, "SELECT DISTINCT max_skew_ms FROM kafka_log(?1, 'error', '60000')",
                          "t", dir), 60000);
  assert_int_equal(st_int(db, "SELECT DISTINCT max_skew_ms FROM kafka_log(?1)"
                              " WHERE max_skew_ms = ' 6e4 '", "t", dir), 60000);
  assert_int_equal(st_int(db, "SELECT DISTINCT max_skew_ms FROM kafka_log(?1)"
                              " WHERE max_skew_ms = 60000.0", "t", dir), 60000);
  free(expect_error(db, "SELECT * FROM kafka_log('/tmp') WHERE max_skew_ms = 1.5", NULL));
  st_close(db);
}

/* An option given twice is an error naming it, not the last one winning. */
static void test_repeated_option_is_error(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE x USING kafka_log(%Q, max_skew_ms=5,"
                              " max_skew_ms=7)", t_fixture("a-tiny"));
  char *m = expect_error(db, sql, NULL);
  sqlite3_free(sql);
  assert_non_null(strstr(m, "option max_skew_ms is given twice"));
  free(m);
  st_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_equals_table_valued),
      cmocka_unit_test(test_columns),
      cmocka_unit_test(test_headers_json),
      cmocka_unit_test(test_edge_values),
      cmocka_unit_test(test_read_only),
      cmocka_unit_test(test_missing_dir),
      cmocka_unit_test(test_named_table_is_fixed),
      cmocka_unit_test(test_named_table_relative_dir),
      cmocka_unit_test(test_not_a_partition),
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_query_plan),
      cmocka_unit_test(test_max_skew),
      cmocka_unit_test(test_max_skew_past_int64),
      cmocka_unit_test(test_no_path_says_path_required),
      cmocka_unit_test(test_invalid_option_value_same_message),
      cmocka_unit_test(test_quoted_number_option),
      cmocka_unit_test(test_repeated_option_is_error),
      cmocka_unit_test(test_confluent_wire),
      cmocka_unit_test(test_partition_for),
      cmocka_unit_test(test_batches),
      cmocka_unit_test(test_truncated_log),
      cmocka_unit_test(test_corrupt_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
