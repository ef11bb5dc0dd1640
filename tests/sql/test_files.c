/*
** test_files.c - files that are not what their names say, and files that
** change under a reader: a FIFO, a socket or a directory named like a file
** the module opens; a writer in another process rolling and trimming
** segments while queries run; commits that leave the commit record's mtime
** as it was.
*/
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "sqltest.h"

/* A case that blocks in open() or read() is killed by SIGALRM after this
** many seconds, and fails, instead of hanging the suite. */
#define HANG_S 30

static char *path_join(const char *a, const char *b) {
  char *p = malloc(strlen(a) + strlen(b) + 2);
  sprintf(p, "%s/%s", a, b);
  return p;
}

/* What a file is replaced by. */
enum { AS_FIFO, AS_DIR, AS_SOCKET };
static const char *const as_word[] = {"a FIFO", "a directory", "a socket"};

static void replace_file(const char *path, int as) {
  if (unlink(path) != 0 && errno != ENOENT) fail_msg("unlink %s: %s", path, strerror(errno));
  if (as == AS_FIFO) {
    assert_int_equal(mkfifo(path, 0644), 0);
  } else if (as == AS_DIR) {
    assert_int_equal(mkdir(path, 0755), 0);
  } else {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    assert_true(strlen(path) < sizeof a.sun_path);
    strcpy(a.sun_path, path);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    close(s); /* the socket file stays */
  }
}

/* Run sql (one text parameter) to its end in a new connection, expecting
** an error whose message names file and says what it is. */
static void expect_refused(const char *sql, const char *param, const char *file, int as) {
  sqlite3 *db = st_open();
  sqlite3_stmt *st = st_prep(db, sql, "t", param);
  alarm(HANG_S);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
  alarm(0);
  const char *m = sqlite3_errmsg(db);
  print_message("  %s as %s: rc %d: %s\n", file, as_word[as], rc, m);
  if (rc == SQLITE_DONE) fail_msg("%s as %s: no error from %s", file, as_word[as], sql);
  if (!strstr(m, file) || !strstr(m, as_word[as])) {
    fail_msg("%s as %s: the message does not say so: %s", file, as_word[as], m);
  }
  sqlite3_finalize(st);
  st_close(db);
}

/* A log directory holding orders-0 (g-transactions: transaction indexes
** and producer snapshots) and the broker fixture's checkpoints. */
static char *make_logdir(const char *tag) {
  char *root = t_mkdtemp(tag);
  char *part = path_join(root, "orders-0");
  assert_int_equal(mkdir(part, 0755), 0);
  assert_int_equal(t_copy_dir(t_fixture("g-transactions"), part), 0);
  const char *ck[] = {"log-start-offset-checkpoint", "replication-offset-checkpoint",
                      "recovery-point-offset-checkpoint"};
  for (int i = 0; i < 3; i++) {
    char *src = path_join(KL_FIXTURES "/broker", ck[i]);
    char *dst = path_join(root, ck[i]);
    size_t n;
    uint8_t *p = t_read_file(src, &n);
    assert_non_null(p);
    assert_int_equal(t_write_file(dst, p, n), 0);
    free(p);
    free(src);
    free(dst);
  }
  free(part);
  return root;
}

/* Every kind of file a reader opens, replaced by a FIFO (and some by a
** directory or a socket): the query fails at once with an error naming
** the file; nothing waits for a writer to come to the FIFO. */
static void test_not_a_regular_file(void **state) {
  (void)state;
  /* A timestamp in segment 545, from the intact copy. */
  char *root = make_logdir("nrf");
  char *part = path_join(root, "orders-0");
  sqlite3 *db = st_open();
  int64_t ts = st_int(db, "SELECT timestamp FROM kafka_log(?1) WHERE offset = 600", "t", part);
  int64_t all = st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", root);
  st_close(db);
  free(part);
  t_rmdir(root);
  free(root);
  assert_true(all > 0);
  char window[200];
  snprintf(window, sizeof window, "SELECT min(offset) FROM kafka_log(?1) WHERE timestamp >= %lld",
           (long long)ts);
  static const char *const count = "SELECT count(*) FROM kafka_log(?1)";
  static const char *const committed =
      "SELECT count(*) FROM kafka_log(?1) WHERE isolation = 'read_committed'";
  struct {
    const char *file;   /* in orders-0, or the log directory's with ../ */
    const char *sql;
    int logdir;         /* the query names the log directory */
    int as;
  } cases[] = {
      {"00000000000000000182.log", count, 0, AS_FIFO},
      {"00000000000000000182.log", count, 0, AS_DIR},
      {"00000000000000000364.index", "SELECT count(*) FROM kafka_log(?1) WHERE offset = 400", 0,
       AS_FIFO},
      {"00000000000000000364.index", "SELECT count(*) FROM kafka_log(?1) WHERE offset = 400", 0,
       AS_SOCKET},
      {"00000000000000000545.timeindex", window, 0, AS_FIFO},
      {"00000000000000001275.snapshot", committed, 0, AS_FIFO},
      {"../log-start-offset-checkpoint", count, 1, AS_FIFO},
      {"../log-start-offset-checkpoint", count, 1, AS_DIR},
      {"../replication-offset-checkpoint", committed, 1, AS_FIFO},
      {"../recovery-point-offset-checkpoint", count, 1, AS_FIFO},
      {"../recovery-point-offset-checkpoint", count, 1, AS_SOCKET},
  };
  /* read_committed follows the markers, not the .txnindex: the integrity
  ** check, which compares the two, reports the FIFO as a finding. */
  root = make_logdir("nrf");
  part = path_join(root, "orders-0");
  char *txn = path_join(part, "00000000000000000000.txnindex");
  replace_file(txn, AS_FIFO);
  db = st_open();
  alarm(HANG_S);
  int64_t found = st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE kind = 'unreadable'"
                         " AND instr(message, '00000000000000000000.txnindex: cannot open: it is "
                         "a FIFO') > 0", "t", part);
  alarm(0);
  assert_int_equal(found, 1);
  st_close(db);
  free(txn);
  free(part);
  t_rmdir(root);
  free(root);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    root = make_logdir("nrf");
    part = path_join(root, "orders-0");
    char *file = path_join(part, cases[i].file);
    replace_file(file, cases[i].as);
    const char *name = strrchr(cases[i].file, '/') ? strrchr(cases[i].file, '/') + 1
                                                   : cases[i].file;
    expect_refused(cases[i].sql, cases[i].logdir ? root : part, name, cases[i].as);
    free(file);
    free(part);
    t_rmdir(root);
    free(root);
  }
}

/* A new log at dir, written through table t. */
static void create(sqlite3 *db, const char *dir, const char *opts) {
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='create'%s%s)", dir,
                              opts ? ", " : "", opts ? opts : "");
  st_exec(db, sql);
  sqlite3_free(sql);
}

/* The files only a log kafkalog writes has: its commit record (every
** reader opens it) and, for the writer, the leader-epoch-checkpoint. */
static void test_not_a_regular_file_written(void **state) {
  (void)state;
  char *root = t_mkdtemp("nrfw");
  char *dir = path_join(root, "events-0");
  sqlite3 *db = st_open();
  create(db, dir, NULL);
  st_exec(db, "INSERT INTO t(value) VALUES ('a'), ('b')");
  st_close(db);
  char *commit = path_join(dir, KL_COMMIT_FILE);
  replace_file(commit, AS_FIFO);
  expect_refused("SELECT count(*) FROM kafka_log(?1)", dir, KL_COMMIT_FILE, AS_FIFO);
  free(commit);
  free(dir);
  t_rmdir(root);
  free(root);

  root = t_mkdtemp("nrfw");
  dir = path_join(root, "events-0");
  db = st_open();
  create(db, dir, NULL);
  char *epochs = path_join(dir, "leader-epoch-checkpoint");
  replace_file(epochs, AS_FIFO);
  char *err = NULL;
  alarm(HANG_S);
  int rc = sqlite3_exec(db, "INSERT INTO t(value) VALUES ('a')", NULL, NULL, &err);
  alarm(0);
  print_message("  leader-epoch-checkpoint as a FIFO: rc %d: %s\n", rc, err ? err : "");
  assert_int_not_equal(rc, SQLITE_OK);
  assert_non_null(strstr(err, "leader-epoch-checkpoint"));
  assert_non_null(strstr(err, "a FIFO"));
  sqlite3_free(err);
  st_close(db);
  free(epochs);
  free(dir);
  t_rmdir(root);
  free(root);
}

/* ---- a writer rolling and trimming segments under readers ---- */

#define ROLL_TXNS 1500   /* transactions the writer commits */
#define ROLL_TXN_RECORDS 5

/* Offsets are contiguous from the log start (retention removes whole
** segments from the front, the writer appends whole transactions at the
** end): n rows from lo to hi with n == hi - lo + 1. */
static int contiguous(sqlite3_stmt *st, int whole, char *why, size_t cap) {
  int64_t n = sqlite3_column_int64(st, 0), lo = sqlite3_column_int64(st, 1),
          hi = sqlite3_column_int64(st, 2);
  if (n == 0) return 1;
  if (n != hi - lo + 1 || (whole && (hi + 1) % ROLL_TXN_RECORDS != 0)) {
    snprintf(why, cap, "%lld rows from %lld to %lld", (long long)n, (long long)lo, (long long)hi);
    return 0;
  }
  return 1;
}

/* A writer process commits small transactions into tiny segments with
** retention on (every few commits roll a segment, and old ones are
** renamed .deleted), while this process queries the partition and its log
** directory, by count, offset, timestamp window: every query sees one
** committed state, without error. */
static void test_read_while_a_writer_rolls(void **state) {
  (void)state;
  char *root = t_mkdtemp("rolls");
  char *dir = path_join(root, "events-0");
  char *commit = path_join(dir, KL_COMMIT_FILE);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    sqlite3 *w = NULL;
    sqlite3_open(":memory:", &w);
    sqlite3_kafkalog_init(w, NULL, NULL);
    char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='create', segment_bytes=700,"
                                " retention_bytes=3000)", dir);
    int bad = sqlite3_exec(w, sql, NULL, NULL, NULL) != SQLITE_OK;
    sqlite3_free(sql);
    sqlite3_stmt *st = NULL;
    bad = bad || sqlite3_prepare_v2(w, "INSERT INTO t(value, timestamp) SELECT 'v-' || (?1 + i),"
                                       " 1700000000000 + ?1 + i FROM (SELECT 0 AS i UNION ALL"
                                       " SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL"
                                       " SELECT 4)", -1, &st, NULL) != SQLITE_OK;
    for (int t = 0; t < ROLL_TXNS && !bad; t++) {
      sqlite3_bind_int64(st, 1, (int64_t)t * ROLL_TXN_RECORDS);
      if (sqlite3_step(st) != SQLITE_DONE) bad = 1;
      sqlite3_reset(st);
    }
    if (bad) fprintf(stderr, "writer: %s\n", sqlite3_errmsg(w));
    sqlite3_finalize(st);
    sqlite3_close(w);
    _exit(bad);
  }
  /* The log exists once its first commit is there. */
  struct stat sb;
  for (int i = 0; i < 2000 && stat(commit, &sb) != 0; i++) usleep(5000);
  assert_int_equal(stat(commit, &sb), 0);

  sqlite3 *db = st_open();
  static const char *const q[] = {
      "SELECT count(*), min(offset), max(offset) FROM kafka_log(?1)",
      "SELECT count(*), min(offset), max(offset) FROM kafka_log(?1) WHERE timestamp >= ?2 AND"
      " timestamp < ?2 + 40",
      "SELECT count(*), min(offset), max(offset) FROM kafka_log(?1) WHERE offset BETWEEN ?3 AND"
      " ?3 + 20",
      "SELECT count(*), min(offset), max(offset) FROM kafka_log(?1) WHERE offset >= ?3 AND"
      " timestamp - 1700000000000 = offset",
  };
  sqlite3_stmt *st[5];
  for (int i = 0; i < 4; i++) assert_int_equal(sqlite3_prepare_v2(db, q[i], -1, &st[i], NULL), 0);
  assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*), min(offset), max(offset) FROM "
                                          "kafka_log(?1)", -1, &st[4], NULL), 0);
  long queries = 0, errors = 0, wrong = 0;
  int64_t hi = 0;
  char first[600] = "";
  int status = -1;
  for (long it = 0; it < 100000; it++) {
    if (it % 16 == 0 && waitpid(pid, &status, WNOHANG) == pid) break;
    int k = (int)(it % 5);
    sqlite3_stmt *s = st[k];
    sqlite3_bind_text(s, 1, k == 4 ? root : dir, -1, SQLITE_STATIC);
    if (k == 1) sqlite3_bind_int64(s, 2, 1700000000000 + (hi > 30 ? hi - 30 : 0));
    if (k == 2 || k == 3) sqlite3_bind_int64(s, 3, hi > 10 ? hi - 10 : 0);
    int rc = sqlite3_step(s);
    queries++;
    if (rc != SQLITE_ROW) {
      if (!errors++) snprintf(first, sizeof first, "%s: %s", q[k % 4], sqlite3_errmsg(db));
    } else {
      char why[200];
      if (!contiguous(s, k == 0 || k == 4, why, sizeof why)) {
        if (!wrong++ && !errors) snprintf(first, sizeof first, "%s: %s", q[k % 4], why);
      }
      if (k == 0 && sqlite3_column_int64(s, 0)) hi = sqlite3_column_int64(s, 2);
      if (k == 3 && sqlite3_column_int64(s, 0) == 0 && hi > 10) wrong++;
    }
    sqlite3_reset(s);
  }
  if (status == -1) waitpid(pid, &status, 0);
  for (int i = 0; i < 5; i++) sqlite3_finalize(st[i]);
  int64_t end = st_int(db, "SELECT max(offset) FROM kafka_log(?1)", "t", dir);
  int64_t segs = st_int(db, "SELECT count(*) FROM kafka_segments(?1)", "t", dir);
  st_close(db);
  print_message("  %ld queries while the writer rolled: %ld errors, %ld wrong; end %lld, %lld "
                "segments left%s%s\n", queries, errors, wrong, (long long)end, (long long)segs,
                first[0] ? "; first: " : "", first);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(end, (int64_t)ROLL_TXNS * ROLL_TXN_RECORDS - 1);
  assert_true(queries > 100);
  assert_int_equal(errors, 0);
  assert_int_equal(wrong, 0);
  free(commit);
  free(dir);
  t_rmdir(root);
  free(root);
}

/* ---- commits the commit record's mtime does not show ---- */

/* A reader that keeps the log between queries sees another connection's
** commits even when they leave every file's mtime and size as they were
** (commits within one tick of the file system's clock): here a retention
** commit, with the mtimes put back as they were. */
static void test_commits_within_one_mtime_tick(void **state) {
  (void)state;
  char *root = t_mkdtemp("tick");
  char *dir = path_join(root, "events-0");
  char *commit = path_join(dir, KL_COMMIT_FILE);
  sqlite3 *w = st_open(), *r = st_open();
  create(w, dir, "segment_bytes=1024, batch_bytes=300");
  for (int i = 0; i < 10; i++) {
    st_exec(w, "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 9)"
               " INSERT INTO t(value) SELECT printf('value-%05d-%.60c', i, 'x') FROM c");
  }
  int64_t segs = st_int(r, "SELECT count(*) FROM kafka_segments(?1)", "t", dir);
  assert_true(segs > 3);
  int64_t second = st_int(r, "SELECT segment FROM kafka_segments(?1) ORDER BY segment LIMIT 1 "
                             "OFFSET 1", "t", dir);
  int64_t third = st_int(r, "SELECT segment FROM kafka_segments(?1) ORDER BY segment LIMIT 1 "
                            "OFFSET 2", "t", dir);
  const char *sql = "SELECT count(*) FROM kafka_log(?1)";
  assert_int_equal(st_int(r, sql, "t", dir), 100);
  for (int step = 0; step < 2; step++) {
    /* One commit, then every mtime put back (the partition, its log
    ** directory, the commit record): as if within the tick of the last
    ** query. */
    const char *paths[] = {dir, root, commit};
    struct timespec was[3][2];
    for (int i = 0; i < 3; i++) {
      struct stat sb;
      assert_int_equal(stat(paths[i], &sb), 0);
      was[i][0] = sb.st_atim;
      was[i][1] = sb.st_mtim;
    }
    char del[100];
    int64_t cut = step == 0 ? second : third;
    snprintf(del, sizeof del, "DELETE FROM t WHERE offset < %lld", (long long)cut);
    st_exec(w, del);
    for (int i = 0; i < 3; i++) {
      assert_int_equal(utimensat(AT_FDCWD, paths[i], was[i], 0), 0);
    }
    int64_t got = st_int(r, sql, "t", dir);
    print_message("  after DELETE ... offset < %lld: %lld rows\n", (long long)cut, (long long)got);
    assert_int_equal(got, 100 - cut);
  }
  st_close(w);
  st_close(r);
  free(commit);
  free(dir);
  t_rmdir(root);
  free(root);
}

int main(int argc, char **argv) {
  if (argc > 1) cmocka_set_test_filter(argv[1]); /* one test by name */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_not_a_regular_file),
      cmocka_unit_test(test_not_a_regular_file_written),
      cmocka_unit_test(test_read_while_a_writer_rolls),
      cmocka_unit_test(test_commits_within_one_mtime_tick),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
