/*
** test_txn_script.c - random transaction scripts run against a kafka_log
** table and a native table doing the same, as SQLite's savepoint.test
** runs them against its own tables: BEGIN, SAVEPOINT, RELEASE, ROLLBACK
** TO, ROLLBACK, COMMIT, INSERTs of several rows of which one may fail
** (headers that are not JSON: SQLITE_MISMATCH; the native table's CHECK
** refuses the same row), and retention, DELETE FROM t WHERE offset < N.
**
** After each statement: the same outcome (success or failure), the same
** transaction state, the same rows in the writing connection, and the same
** committed rows read by other connections (kafka_log('<dir>') and a second
** connection to the native database).  The native table numbers its rows
** as kafka_log does (offset INTEGER PRIMARY KEY, the next one after the
** largest), so the scripts keep the newest record: a DELETE stops below it.
**
** KL_TXN_SCRIPTS sets how many scripts (default 1000), KL_TXN_SEED the first
** seed; KL_TXN_FORK=1 runs each script in a child process, so that a crash
** counts as one differing script instead of ending the run.
*/
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sqltest.h"

#define SCRIPTS 1000
#define STATEMENTS 24

typedef struct rng {
  uint64_t s;
} rng;

static uint32_t rnd(rng *r, uint32_t n) {
  r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(r->s >> 33) % n;
}

typedef struct run {
  sqlite3 *k, *n;           /* the writing connections: kafka_log t, native n */
  sqlite3 *kr, *nr;         /* readers in other connections */
  char *root, *dir, *ndb;
  char names[16][8];        /* open savepoints, outermost first */
  int nsp;
  long counter;
  st_buf why;               /* the first difference */
} run;

static char *env_str(const char *name) {
  const char *v = getenv(name);
  return v && *v ? (char *)v : NULL;
}

/* Rows as "offset=value,..." in offset order. */
static char *rows(sqlite3 *db, const char *sql, const char *arg) {
  sqlite3_stmt *st = NULL;
  st_buf b = {0};
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    st_buf_printf(&b, "PREPARE ERROR: %s", sqlite3_errmsg(db));
    return b.p;
  }
  if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    st_buf_printf(&b, "%lld=%s,", (long long)sqlite3_column_int64(st, 0),
                  (const char *)sqlite3_column_text(st, 1));
  }
  if (rc != SQLITE_DONE) st_buf_printf(&b, "ERROR %d: %s", rc, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  if (!b.p) st_buf_printf(&b, "%s", "");
  return b.p;
}

static int same(run *r, const char *what, char *x, char *y) {
  int eq = strcmp(x, y) == 0;
  if (!eq && !r->why.p) st_buf_printf(&r->why, "%s:\n    kafka_log: %s\n    native:    %s", what, x, y);
  free(x);
  free(y);
  return eq;
}

static int exec_rc(sqlite3 *db, const char *sql) {
  return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static int setup(run *r, uint64_t seed) {
  memset(r, 0, sizeof *r);
  /* The scripts test transactions, not the disk: a memory file system
  ** when there is one (commits fsync), unless TMPDIR says where. */
  struct stat sb;
  if (!env_str("TMPDIR") && stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) &&
      access("/dev/shm", W_OK) == 0) {
    char buf[64] = "/dev/shm/kl-txs-XXXXXX";
    r->root = mkdtemp(buf) ? strdup(buf) : NULL;
  } else {
    r->root = t_mkdtemp("txs");
  }
  if (!r->root) return 0;
  r->dir = sqlite3_mprintf("%s/orders-0", r->root);
  r->ndb = sqlite3_mprintf("%s/native.db", r->root);
  r->k = st_open();
  r->kr = st_open();
  if (sqlite3_open(r->ndb, &r->n) || sqlite3_open(r->ndb, &r->nr)) return 0;
  /* Small batches and segments: savepoints inside a batch and across
  ** batches, rolls, segments removed by retention. */
  char *sql = sqlite3_mprintf(
      "CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='create', batch_bytes=%d,"
      " segment_bytes=%d, index_interval_bytes=64)",
      r->dir, seed % 2 ? 200 : 4096, seed % 3 ? 1024 : 65536);
  int rc = exec_rc(r->k, sql);
  sqlite3_free(sql);
  rc = rc ? rc : exec_rc(r->n, "PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY;"
                               " CREATE TABLE n(offset INTEGER PRIMARY KEY, value TEXT,"
                               " headers TEXT CHECK (headers IS NULL))");
  rc = rc ? rc : exec_rc(r->k, "INSERT INTO t(value) VALUES ('s0'), ('s1'), ('s2')");
  rc = rc ? rc : exec_rc(r->n, "INSERT INTO n(offset, value) VALUES (0, 's0'), (1, 's1'), (2, 's2')");
  return rc == SQLITE_OK;
}

static void teardown(run *r) {
  sqlite3_close(r->k);
  sqlite3_close(r->kr);
  sqlite3_close(r->n);
  sqlite3_close(r->nr);
  if (r->root) t_rmdir(r->root);
  free(r->root);
  sqlite3_free(r->dir);
  sqlite3_free(r->ndb);
  st_buf_free(&r->why);
}

/* The next statement, with %s for the table's name. */
static void next_statement(run *r, rng *g, st_buf *s) {
  int in_txn = !sqlite3_get_autocommit(r->n);
  for (;;) {
    uint32_t k = rnd(g, 100);
    if (k < 8 && !in_txn) {
      st_buf_printf(s, "BEGIN");
    } else if (k < 18) {
      if (r->nsp == 16) continue;
      snprintf(r->names[r->nsp], sizeof r->names[0], "s%d", (int)rnd(g, 6));
      st_buf_printf(s, "SAVEPOINT %s", r->names[r->nsp]);
    } else if (k < 25 && r->nsp) {
      st_buf_printf(s, "RELEASE %s", r->names[rnd(g, (uint32_t)r->nsp)]);
    } else if (k < 34 && r->nsp) {
      st_buf_printf(s, "ROLLBACK TO %s", r->names[rnd(g, (uint32_t)r->nsp)]);
    } else if (k < 38 && in_txn) {
      st_buf_printf(s, "ROLLBACK");
    } else if (k < 43 && in_txn) {
      st_buf_printf(s, "COMMIT");
    } else if (k < 51) {
      /* Retention below the newest record, somewhere in what is there. */
      int64_t lo = st_int_or(r->n, 0, "SELECT min(offset) FROM n", NULL);
      int64_t hi = st_int_or(r->n, 0, "SELECT max(offset) FROM n", NULL);
      st_buf_printf(s, "DELETE FROM %%s WHERE offset < %lld",
                    (long long)(lo + rnd(g, (uint32_t)(hi - lo + 1))));
    } else {
      /* One to four rows; sometimes one of them fails. */
      int n = 1 + (int)rnd(g, 4);
      int bad = rnd(g, 3) == 0 ? (int)rnd(g, (uint32_t)n) : -1;
      st_buf_printf(s, "INSERT INTO %%s(value, headers) VALUES ");
      for (int i = 0; i < n; i++) {
        st_buf_printf(s, "%s('%s%ld', %s)", i ? ", " : "", i == bad ? "bad" : "v", r->counter++,
                      i == bad ? "'nope'" : "NULL");
      }
    }
    return;
  }
}

/* The savepoint stack after sql succeeded (names as SQLite finds them: the
** newest of a name). */
static void track(run *r, const char *sql) {
  char name[8];
  if (sqlite3_get_autocommit(r->n)) {
    r->nsp = 0;
  } else if (sscanf(sql, "SAVEPOINT %7s", name) == 1) {
    r->nsp++;
  } else if (sscanf(sql, "RELEASE %7s", name) == 1 || sscanf(sql, "ROLLBACK TO %7s", name) == 1) {
    int i = r->nsp - 1;
    while (i >= 0 && strcmp(r->names[i], name)) i--;
    if (i >= 0) r->nsp = strncmp(sql, "RELEASE", 7) == 0 ? i : i + 1;
  }
}

/* Run one script; 1 when kafka_log and the native table agree throughout. */
static int script(uint64_t seed, int verbose) {
  run r;
  rng g = {seed * 0x9E3779B97F4A7C15ULL + 1};
  int ok = setup(&r, seed);
  if (!ok) st_buf_printf(&r.why, "setup failed");
  st_buf log = {0};
  for (int i = 0; ok && i < STATEMENTS; i++) {
    st_buf s = {0};
    next_statement(&r, &g, &s);
    char *ks = sqlite3_mprintf(s.p, "t"), *ns = sqlite3_mprintf(s.p, "n");
    st_buf_printf(&log, "    %s;\n", ks);
    int krc = exec_rc(r.k, ks), nrc = exec_rc(r.n, ns);
    if ((krc == SQLITE_OK) != (nrc == SQLITE_OK)) {
      st_buf_printf(&r.why, "outcome: kafka_log rc %d (%s), native rc %d (%s)", krc,
                    sqlite3_errmsg(r.k), nrc, sqlite3_errmsg(r.n));
      ok = 0;
    } else if (sqlite3_get_autocommit(r.k) != sqlite3_get_autocommit(r.n)) {
      st_buf_printf(&r.why, "transaction state: kafka_log %s, native %s",
                    sqlite3_get_autocommit(r.k) ? "none" : "open",
                    sqlite3_get_autocommit(r.n) ? "none" : "open");
      ok = 0;
    }
    if (ok && nrc == SQLITE_OK) track(&r, ns);
    ok = ok && same(&r, "rows seen by the writer",
                    rows(r.k, "SELECT offset, CAST(value AS TEXT) FROM t ORDER BY offset", NULL),
                    rows(r.n, "SELECT offset, value FROM n ORDER BY offset", NULL));
    ok = ok && same(&r, "rows seen by another connection",
                    rows(r.kr, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1) ORDER BY offset",
                         r.dir),
                    rows(r.nr, "SELECT offset, value FROM n ORDER BY offset", NULL));
    sqlite3_free(ks);
    sqlite3_free(ns);
    st_buf_free(&s);
  }
  if (ok) {
    /* The end, committed: what a new table over the directory reads. */
    exec_rc(r.k, "COMMIT");
    exec_rc(r.n, "COMMIT");
    sqlite3 *k2 = st_open();
    char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t2 USING kafka_log(%Q)", r.dir);
    exec_rc(k2, sql);
    sqlite3_free(sql);
    ok = same(&r, "rows after the end, from a new table",
              rows(k2, "SELECT offset, CAST(value AS TEXT) FROM t2 ORDER BY offset", NULL),
              rows(r.nr, "SELECT offset, value FROM n ORDER BY offset", NULL));
    sqlite3_close(k2);
  }
  if (!ok && verbose) print_message("script %llu differs: %s\n  after:\n%s", (unsigned long long)seed,
                                    r.why.p ? r.why.p : "?", log.p ? log.p : "");
  st_buf_free(&log);
  teardown(&r);
  return ok;
}

/* A script in a child process: 1 agrees, 0 differs, -1 crashed. */
static int script_forked(uint64_t seed, int verbose) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    /* A crash is the child's death, not cmocka's report. */
    int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) signal(sigs[i], SIG_DFL);
    _exit(script(seed, verbose) ? 0 : 1);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0;
  return -1;
}

static void test_txn_scripts_match_native_table(void **state) {
  (void)state;
  long count = env_str("KL_TXN_SCRIPTS") ? atol(getenv("KL_TXN_SCRIPTS")) : SCRIPTS;
  uint64_t first = env_str("KL_TXN_SEED") ? strtoull(getenv("KL_TXN_SEED"), NULL, 10) : 1;
  int forked = env_str("KL_TXN_FORK") && atoi(getenv("KL_TXN_FORK"));
  long differ = 0, crashed = 0;
  for (long i = 0; i < count; i++) {
    int verbose = differ + crashed < 3;
    int v = forked ? script_forked(first + (uint64_t)i, verbose) : script(first + (uint64_t)i, verbose);
    if (v < 0) crashed++;
    else if (v == 0) differ++;
  }
  print_message("%ld scripts: %ld differ, %ld crashed\n", count, differ, crashed);
  assert_int_equal(differ + crashed, 0);
}

/* SAVEPOINT outside a transaction begins one; ROLLBACK TO it (SQLite's
** savepoint index -1) undoes everything and keeps it open. */
static void test_rollback_to_transaction_savepoint(void **state) {
  (void)state;
  run r;
  assert_true(setup(&r, 1));
  st_exec(r.k, "SAVEPOINT a; INSERT INTO t(value) VALUES ('x'); ROLLBACK TO a");
  assert_false(sqlite3_get_autocommit(r.k));
  st_exec(r.k, "INSERT INTO t(value) VALUES ('y'); RELEASE a");
  char *x = rows(r.kr, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1)", r.dir);
  assert_string_equal(x, "0=s0,1=s1,2=s2,3=y,");
  free(x);
  /* With an earlier savepoint of the connection, and a DELETE. */
  st_exec(r.k, "SAVEPOINT a; SAVEPOINT b; DELETE FROM t WHERE offset < 2;"
               " INSERT INTO t(value) VALUES ('z'); ROLLBACK TO a; COMMIT");
  x = rows(r.kr, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1)", r.dir);
  assert_string_equal(x, "0=s0,1=s1,2=s2,3=y,");
  free(x);
  teardown(&r);
}

/* A statement that fails part-way leaves none of its rows, also when it is
** the transaction's first change (the statement's savepoint was set
** before the writer's transaction began); a savepoint set before the
** first change undoes it. */
static void test_failed_statement_before_first_change(void **state) {
  (void)state;
  run r;
  assert_true(setup(&r, 1));
  assert_int_not_equal(exec_rc(r.k, "BEGIN; INSERT INTO t(value, headers) VALUES ('bad-1', NULL),"
                                    " ('bad-2', NULL), ('bad-3', 'nope')"), SQLITE_OK);
  st_exec(r.k, "INSERT INTO t(value) VALUES ('good'); COMMIT");
  char *x = rows(r.kr, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1)", r.dir);
  assert_string_equal(x, "0=s0,1=s1,2=s2,3=good,");
  free(x);
  st_exec(r.k, "BEGIN; SAVEPOINT a; INSERT INTO t(value) VALUES ('gone'); ROLLBACK TO a; COMMIT");
  x = rows(r.kr, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1)", r.dir);
  assert_string_equal(x, "0=s0,1=s1,2=s2,3=good,");
  free(x);
  teardown(&r);
}

/* The writing table reads its own DELETE at once: a second DELETE in the
** same transaction does not select the same rows again (they were counted
** twice, and the commit refused a prefix as not one). */
static void test_two_deletes_in_one_transaction(void **state) {
  (void)state;
  run r;
  assert_true(setup(&r, 1));
  st_exec(r.k, "BEGIN; DELETE FROM t WHERE offset < 1");
  char *x = rows(r.k, "SELECT offset, CAST(value AS TEXT) FROM t", NULL);
  assert_string_equal(x, "1=s1,2=s2,");
  free(x);
  x = rows(r.kr, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1)", r.dir);
  assert_string_equal(x, "0=s0,1=s1,2=s2,");
  free(x);
  st_exec(r.k, "DELETE FROM t WHERE offset < 2; COMMIT");
  x = rows(r.kr, "SELECT offset, CAST(value AS TEXT) FROM kafka_log(?1)", r.dir);
  assert_string_equal(x, "2=s2,");
  free(x);
  teardown(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rollback_to_transaction_savepoint),
      cmocka_unit_test(test_failed_statement_before_first_change),
      cmocka_unit_test(test_two_deletes_in_one_transaction),
      cmocka_unit_test(test_txn_scripts_match_native_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
