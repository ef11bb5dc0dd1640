/*
** test_faults.c - a write that fails at any step leaves the log as its last
** good commit left it: the statement or COMMIT reports the failure with
** its class (SQLITE_IOERR), a fresh reader sees exactly the last good
** commit (no partial record, no lost committed one, the log directory's
** log-start-offset-checkpoint not ahead of the commit record), and once the
** fault clears the next writer recovers and appends.  A step after the
** commit point (retention's renames, the checkpoint) is no failed commit:
** the statement succeeds and the next writer finishes the work.
**
** Faults are injected: this program is linked with --wrap on pwrite,
** pwritev, fsync, fdatasync, rename, unlink and ftruncate
** (tests/CMakeLists.txt), every call the writer makes to change a file, so
** the module's calls come here (SQLite's own I/O is in its shared library
** and is not touched).  A sweep counts the calls of each kind an operation
** makes, then runs it again once for each call, failing that call alone.
*/
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint.h"
#include "commit.h"
#include "file.h"
#include "sqltest.h"
#include "writer.h"

/* ---- injected failures ---- */

enum { OP_WRITE, OP_FSYNC, OP_FDATASYNC, OP_RENAME, OP_UNLINK, OP_FTRUNCATE, OP_N };
static const char *const op_names[OP_N] = {"write", "fsync", "fdatasync", "rename", "unlink",
                                           "ftruncate"};

static int g_armed;            /* calls are counted (and may fail) */
static long g_calls[OP_N];     /* counted calls of each kind */
static int g_fail_op = -1;     /* the g_fail_at'th counted call of it fails */
static long g_fail_at;
static const char *g_only;     /* when set, only calls on paths ending so count */
static int g_failed;           /* the failure happened */
static int g_stays;            /* every later counted call of g_fail_op fails too */

/* The path fd was opened by, for the filter. */
static int fd_path(int fd, char *out, size_t n) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t k = readlink(link, out, n - 1);
  if (k < 0) return 0;
  out[k] = 0;
  return 1;
}

static int ends_with(const char *s, const char *tail) {
  size_t a = strlen(s), b = strlen(tail);
  return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Does this call (on path, or on fd when path is NULL) fail? */
static int hit(int op, const char *path, int fd) {
  if (!g_armed) return 0;
  if (g_only) {
    char p[4200];
    if (!path && fd_path(fd, p, sizeof p)) path = p;
    if (!path || !ends_with(path, g_only)) return 0;
  }
  long n = ++g_calls[op];
  if (op != g_fail_op || (g_stays ? n < g_fail_at : n != g_fail_at)) return 0;
  g_failed = 1;
  errno = EIO;
  return 1;
}

ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t pos);
ssize_t __real_pwritev(int fd, const struct iovec *iov, int cnt, off_t pos);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_rename(const char *from, const char *to);
int __real_unlink(const char *path);
int __real_ftruncate(int fd, off_t size);

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t pos);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t pos) {
  return hit(OP_WRITE, NULL, fd) ? -1 : __real_pwrite(fd, buf, n, pos);
}
ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int cnt, off_t pos);
ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int cnt, off_t pos) {
  return hit(OP_WRITE, NULL, fd) ? -1 : __real_pwritev(fd, iov, cnt, pos);
}
int __wrap_fsync(int fd);
int __wrap_fsync(int fd) { return hit(OP_FSYNC, NULL, fd) ? -1 : __real_fsync(fd); }
int __wrap_fdatasync(int fd);
int __wrap_fdatasync(int fd) {
  /* A failed fdatasync leaves what was written in the page cache, where
  ** every reader sees it: the write happened, its durability is unknown. */
  return hit(OP_FDATASYNC, NULL, fd) ? -1 : __real_fdatasync(fd);
}
int __wrap_rename(const char *from, const char *to);
int __wrap_rename(const char *from, const char *to) {
  return hit(OP_RENAME, from, -1) ? -1 : __real_rename(from, to);
}
int __wrap_unlink(const char *path);
int __wrap_unlink(const char *path) {
  return hit(OP_UNLINK, path, -1) ? -1 : __real_unlink(path);
}
int __wrap_ftruncate(int fd, off_t size);
int __wrap_ftruncate(int fd, off_t size) {
  return hit(OP_FTRUNCATE, NULL, fd) ? -1 : __real_ftruncate(fd, size);
}

static void arm(int op, long at, const char *only) {
  memset(g_calls, 0, sizeof g_calls);
  g_fail_op = op;
  g_fail_at = at;
  g_only = only;
  g_failed = 0;
  g_stays = 0;
  g_armed = 1;
}

static void disarm(void) {
  g_armed = 0;
  g_fail_op = -1;
  g_only = NULL;
}

static int no_failures(void **state) {
  disarm();
  return 0;
}

/* ---- a log and what a reader sees of it ---- */

/* Its options: batches of a few records, segments of a few batches, an
** index entry every other batch, so that an operation rolls segments and
** writes index entries. */
#define OPTS "mode='%s', segment_bytes=1024, batch_bytes=128, index_interval_bytes=100"
#define N0 1000                /* records of the fixture */

/* <root>/events-0 under a new temporary root (malloc'd). */
/* A connection with table t over dir (mode 'write' or 'create'). */
static sqlite3 *open_table(const char *dir, const char *mode) {
  sqlite3 *db = st_open();
  char opts[256];
  snprintf(opts, sizeof opts, OPTS, mode);
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, %s)", dir, opts);
  st_exec(db, sql);
  sqlite3_free(sql);
  return db;
}

/* Append records with values 'v<offset>' from offset `from`, n of them. */
static int insert_sql(sqlite3 *db, int64_t from, int n) {
  char *sql = sqlite3_mprintf("WITH RECURSIVE c(i) AS (SELECT %lld UNION ALL SELECT i + 1 FROM c "
                              "WHERE i < %lld) INSERT INTO t(value) SELECT 'v' || i FROM c",
                              (long long)from, (long long)(from + n - 1));
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_free(sql);
  return rc;
}

/* A log of N0 records in four transactions. */
static char *make_log(const char *tag) {
  char *dir = t_new_partition(tag);
  sqlite3 *db = open_table(dir, "create");
  for (int i = 0; i < 4; i++) assert_int_equal(insert_sql(db, i * (N0 / 4), N0 / 4), SQLITE_OK);
  st_close(db);
  return dir;
}

/* What a fresh reader sees. */
typedef struct view {
  int64_t count, lo, hi, wrong;
} view;

static view read_view(const char *dir) {
  sqlite3 *db = st_open();
  sqlite3_stmt *st = st_prep(db, "SELECT count(*), min(offset), max(offset), "
                             "total(CAST(value AS TEXT) IS NOT 'v' || offset) FROM kafka_log(?1)", "t", dir);
  if (sqlite3_step(st) != SQLITE_ROW) fail_msg("a fresh reader of %s: %s", dir, sqlite3_errmsg(db));
  view v = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
            sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
  sqlite3_finalize(st);
  /* Point lookups, through the offset index. */
  for (int64_t o = v.lo; v.count && o <= v.hi; o += 37) {
    char want[32];
    snprintf(want, sizeof want, "v%lld", (long long)o);
    char *got = st_text(db, "SELECT value FROM kafka_log(?1) WHERE offset = ?2", "ti", dir, o);
    if (!got || strcmp(got, want)) fail_msg("%s: offset %lld reads %s", dir, (long long)o, got);
    free(got);
  }
  st_close(db);
  return v;
}

static int same_view(view a, view b) {
  return a.count == b.count && a.lo == b.lo && a.hi == b.hi && a.wrong == b.wrong;
}

/* The checkpoint's entry for events-0 (-1: none) and the commit record's
** log start. */
static int64_t checkpoint_of(const char *dir) {
  char p[4300];
  snprintf(p, sizeof p, "%.*s/log-start-offset-checkpoint", (int)(strrchr(dir, '/') - dir), dir);
  kl_ckpt c;
  kl_err err = {0};
  if (kl_checkpoint_read(NULL, p, &c, &err)) fail_msg("%s", err.msg);
  int64_t v = kl_checkpoint_get(&c, "events", 0);
  kl_checkpoint_free(NULL, &c);
  return v;
}

static int64_t committed_start(const char *dir) {
  kl_commit c;
  kl_err err = {0};
  if (kl_commit_read(NULL, dir, &c, &err)) fail_msg("%s", err.msg);
  return c.log_start;
}

static int count_segments(const char *dir) {
  char *cmd = malloc(strlen(dir) + 64);
  sprintf(cmd, "ls '%s' | grep -c '\\.log$'", dir);
  FILE *f = popen(cmd, "r");
  int n = -1;
  if (!f || fscanf(f, "%d", &n) != 1) n = -1;
  if (f) pclose(f);
  free(cmd);
  return n;
}

/* ---- the sweep ---- */

/* An operation: statements run in turn until one fails (then ROLLBACK);
** the view before and the view it commits. */
typedef struct op_case {
  const char *name;
  const char *sql[5];
  view before, after;
} op_case;

/* Run oc on a copy of the log at src, failing call `at` of kind op (0:
** none; stays: and every later one, through the ROLLBACK and the close of
** the writing connection), then check what a reader sees and that the
** next writer goes on. */
static void run_case(const op_case *oc, const char *src, int op, long at, int stays,
                     long *calls) {
  char *dir = t_new_partition("trial");
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(src, dir), 0);
  char parent[4300];
  snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(src, '/') - src), src);
  char ck[4400], ckto[4400];
  snprintf(ck, sizeof ck, "%s/log-start-offset-checkpoint", parent);
  snprintf(ckto, sizeof ckto, "%.*s/log-start-offset-checkpoint", (int)(strrchr(dir, '/') - dir),
           dir);
  size_t n;
  uint8_t *p = t_read_file(ck, &n);
  if (p) assert_int_equal(t_write_file(ckto, p, n), 0);
  free(p);

  sqlite3 *db = open_table(dir, "write");
  arm(op, at, NULL);
  g_stays = stays;
  int rc = SQLITE_OK;
  const char *failed = NULL;
  for (int i = 0; oc->sql[i] && rc == SQLITE_OK; i++) {
    rc = sqlite3_exec(db, oc->sql[i], NULL, NULL, NULL);
    if (rc) failed = oc->sql[i];
  }
  char msg[512];
  snprintf(msg, sizeof msg, "%s", rc ? sqlite3_errmsg(db) : "");
  if (calls) memcpy(calls, g_calls, sizeof g_calls);
  int fired = g_failed;
  if (!stays) disarm();
  if (rc) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL); /* none may be open */
  st_close(db);
  disarm();
  char what[600];
  snprintf(what, sizeof what, "%s, %s #%ld%s failing (%s): %s%s%s", oc->name,
           op >= 0 ? op_names[op] : "nothing", at, stays ? " and later" : "",
           fired ? "it did" : "not reached", failed ? failed : "committed", rc ? " -> " : "", msg);

  /* The statement's answer and what a fresh reader sees agree. */
  if (rc && (rc & 0xff) != SQLITE_IOERR) fail_msg("%s: not an I/O error (%d)", what, rc);
  if (rc && !fired) fail_msg("%s: failed with no fault", what);
  view v = read_view(dir);
  view want = rc ? oc->before : oc->after;
  if (!same_view(v, want)) {
    fail_msg("%s: a fresh reader sees %lld rows %lld..%lld (%lld wrong), the last good commit "
             "has %lld rows %lld..%lld", what, (long long)v.count, (long long)v.lo,
             (long long)v.hi, (long long)v.wrong, (long long)want.count, (long long)want.lo,
             (long long)want.hi);
  }
  int64_t cs = committed_start(dir), cp = checkpoint_of(dir);
  if (cp > cs && cp > 0) {
    fail_msg("%s: the checkpoint says %lld, the commit record %lld", what, (long long)cp,
             (long long)cs);
  }

  /* The next writer recovers and appends; retention's work is done. */
  db = open_table(dir, "write");
  if (insert_sql(db, want.hi + 1, 3) != SQLITE_OK) {
    fail_msg("%s: the next writer: %s", what, sqlite3_errmsg(db));
  }
  st_close(db);
  view w = read_view(dir);
  view grown = {want.count + 3, want.lo, want.hi + 3, 0};
  if (!same_view(w, grown)) {
    fail_msg("%s: after the next writer %lld rows %lld..%lld (%lld wrong)", what,
             (long long)w.count, (long long)w.lo, (long long)w.hi, (long long)w.wrong);
  }
  cs = committed_start(dir);
  cp = checkpoint_of(dir);
  if (cs > 0 && cp != cs) {
    fail_msg("%s: after the next writer the checkpoint says %lld, the commit record %lld", what,
             (long long)cp, (long long)cs);
  }
  t_drop_partition(dir);
}

/* Every call of every kind the operation makes, failed in turn: that call
** alone, and that call and every later one of its kind (a disk that stays
** broken). */
static void sweep(const op_case *oc, const char *src) {
  long calls[OP_N];
  run_case(oc, src, -1, 0, 0, calls);
  long trials = 0;
  for (int op = 0; op < OP_N; op++) {
    print_message("  %s: %ld %s calls\n", oc->name, calls[op], op_names[op]);
    for (long at = 1; at <= calls[op]; at++, trials += 2) {
      run_case(oc, src, op, at, 0, NULL);
      run_case(oc, src, op, at, 1, NULL);
    }
  }
  assert_true(calls[OP_WRITE] > 0 && calls[OP_FDATASYNC] > 0);
  print_message("  %s: %ld trials\n", oc->name, trials);
}

static void test_each_step_of_a_commit_can_fail(void **state) {
  char *src = make_log("commit");
  op_case oc = {"BEGIN; INSERT 200; COMMIT",
                {"BEGIN", "WITH RECURSIVE c(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM c "
                 "WHERE i < 1199) INSERT INTO t(value) SELECT 'v' || i FROM c", "COMMIT", NULL},
                {N0, 0, N0 - 1, 0}, {N0 + 200, 0, N0 + 199, 0}};
  sweep(&oc, src);
  op_case one = {"INSERT 1", {"INSERT INTO t(value) VALUES ('v1000')", NULL},
                 {N0, 0, N0 - 1, 0}, {N0 + 1, 0, N0, 0}};
  sweep(&one, src);
  t_drop_partition(src);
}

static void test_each_step_of_a_retention_can_fail(void **state) {
  char *src = make_log("retention");
  op_case oc = {"BEGIN; DELETE < 500; INSERT 50; COMMIT",
                {"BEGIN", "DELETE FROM t WHERE offset < 500",
                 "WITH RECURSIVE c(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM c "
                 "WHERE i < 1049) INSERT INTO t(value) SELECT 'v' || i FROM c", "COMMIT"},
                {N0, 0, N0 - 1, 0}, {550, 500, 1049, 0}};
  sweep(&oc, src);
  op_case alone = {"DELETE < 700", {"DELETE FROM t WHERE offset < 700", NULL},
                   {N0, 0, N0 - 1, 0}, {300, 700, N0 - 1, 0}};
  sweep(&alone, src);
  t_drop_partition(src);
}

/* A writer that dies in a transaction, leaving the batches of n records
** that reached the files past the commit (in segments of their own, and
** in the committed one); its last batch, in memory, dies with it. */
static void die_writing(const char *dir, int n) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    kl_writer_opts o;
    kl_writer_opts_default(&o);
    o.segment_bytes = 1024;
    o.batch_bytes = 128;
    o.index_interval = 100;
    kl_writer *w = NULL;
    kl_err err = {0};
    if (kl_writer_open(NULL, dir, &o, &w, &err) || kl_writer_begin(w, &err)) _exit(2);
    for (int i = 0; i < n; i++) {
      char v[32];
      int len = snprintf(v, sizeof v, "dead-%d", i);
      kl_rec_in r = {.timestamp = 1700000000000 + i, .key_len = -1, .value = v, .value_len = len};
      int64_t off;
      if (kl_writer_append(w, &r, &off, &err)) _exit(3);
    }
    _exit(0); /* no commit, no rollback */
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_each_step_of_recovery_can_fail(void **state) {
  char *src = make_log("recovery");
  die_writing(src, 100);
  op_case oc = {"recovery, INSERT 1", {"INSERT INTO t(value) VALUES ('v1000')", NULL},
                {N0, 0, N0 - 1, 0}, {N0 + 1, 0, N0, 0}};
  sweep(&oc, src);
  t_drop_partition(src);
}

/* ---- the cases, one by one ---- */

/* The commit record's fdatasync fails: its slot may hold the new commit
** (the page cache does), so it is written back before the data goes. */
static void test_failed_sync_of_commit_record_keeps_last_commit(void **state) {
  char *dir = make_log("commitsync");
  sqlite3 *db = open_table(dir, "write");
  arm(OP_FDATASYNC, 1, KL_COMMIT_FILE);
  int rc = sqlite3_exec(db, "INSERT INTO t(value) VALUES ('v1000')", NULL, NULL, NULL);
  assert_true(g_failed);
  disarm();
  assert_int_equal(rc, SQLITE_IOERR);
  view v = read_view(dir);
  assert_int_equal(v.count, N0);
  assert_int_equal(v.hi, N0 - 1);
  assert_int_equal(insert_sql(db, N0, 1), SQLITE_OK);
  st_close(db);
  v = read_view(dir);
  assert_int_equal(v.count, N0 + 1);
  t_drop_partition(dir);
}

/* Renaming a retired segment to .deleted fails after the commit: the
** DELETE has happened (the commit record says so), and is not reported as
** failed; the next writer finishes the retirement and the checkpoint. */
static void test_failed_retirement_after_commit_is_no_failed_commit(void **state) {
  char *dir = make_log("retire");
  sqlite3 *db = open_table(dir, "write");
  char first[4300];
  snprintf(first, sizeof first, "%s/%020d.log", dir, 0);
  arm(OP_RENAME, 1, ".index");
  g_stays = 1; /* also when the table closes, which would finish the work */
  int rc = sqlite3_exec(db, "BEGIN; DELETE FROM t WHERE offset < 500; INSERT INTO t(value) "
                        "VALUES ('v1000'); COMMIT", NULL, NULL, NULL);
  assert_true(g_failed);
  if (rc) fail_msg("COMMIT: %s", sqlite3_errmsg(db));
  st_close(db);
  disarm();
  view v = read_view(dir);
  assert_int_equal(v.count, 501);
  assert_int_equal(v.lo, 500);
  assert_int_equal(v.wrong, 0);
  assert_int_equal(committed_start(dir), 500);
  assert_true(checkpoint_of(dir) < 500);
  assert_int_equal(access(first, F_OK), 0); /* not retired yet */
  db = open_table(dir, "write");
  assert_int_equal(insert_sql(db, 1001, 1), SQLITE_OK);
  st_close(db);
  assert_int_equal(checkpoint_of(dir), 500);
  assert_int_equal(access(first, F_OK), -1);
  v = read_view(dir);
  assert_int_equal(v.count, 502);
  t_drop_partition(dir);
}

/* A writer stopped between its commit record and the checkpoint (here:
** the checkpoint put back as it was): the next writer, or
** kafka_log_recover, brings the checkpoint to the committed log start. */
static void test_stale_checkpoint_is_repaired_by_recovery(void **state) {
  char *dir = make_log("stale");
  char ck[4400];
  snprintf(ck, sizeof ck, "%.*s/log-start-offset-checkpoint", (int)(strrchr(dir, '/') - dir), dir);
  sqlite3 *db = open_table(dir, "write");
  st_exec(db, "DELETE FROM t WHERE offset < 300");
  st_close(db);
  assert_int_equal(checkpoint_of(dir), 300);
  const char stale[] = "0\n1\nevents 0 0\n";
  assert_int_equal(t_write_file(ck, stale, sizeof stale - 1), 0);

  db = st_open();
  char *j = st_text(db, "SELECT kafka_log_recover(?1)", "t", dir);
  assert_non_null(strstr(j, "\"log_start_repaired\":1"));
  free(j);
  assert_int_equal(checkpoint_of(dir), 300);
  st_close(db);

  /* The next writer repairs it too. */
  assert_int_equal(t_write_file(ck, stale, sizeof stale - 1), 0);
  db = open_table(dir, "write");
  assert_int_equal(insert_sql(db, N0, 1), SQLITE_OK);
  st_close(db);
  assert_int_equal(checkpoint_of(dir), 300);
  t_drop_partition(dir);
}

/* A writer died with batches past its commit record: kafka_log_recover
** cuts them off (and the segment it began), so that the directory read
** without its commit record (as Kafka reads it) holds the committed
** records alone. */
static void test_recover_cuts_what_a_dead_writer_left(void **state) {
  char *dir = make_log("dead");
  int segs = count_segments(dir);
  die_writing(dir, 300);
  assert_true(count_segments(dir) > segs);
  sqlite3 *db = st_open();

  /* Not while another writer holds the directory. */
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  kl_writer *w = NULL;
  kl_err err = {0};
  if (kl_writer_open(NULL, dir, &o, &w, &err) || kl_writer_begin(w, &err)) fail_msg("%s", err.msg);
  sqlite3_stmt *st = st_prep(db, "SELECT kafka_log_recover(?1)", "t", dir);
  assert_int_equal(sqlite3_step(st), SQLITE_BUSY);
  sqlite3_finalize(st);
  assert_int_equal(kl_writer_rollback(w, &err), KL_OK); /* recovered by its begin */
  kl_writer_close(w, NULL);
  die_writing(dir, 300);

  char *j = st_text(db, "SELECT kafka_log_recover(?1)", "t", dir);
  print_message("  %s\n", j);
  long long cut = 0;
  const char *at = strstr(j, "\"bytes_cut\":");
  assert_non_null(at);
  sscanf(at + 12, "%lld", &cut);
  assert_true(cut > 300 * 10);
  assert_non_null(strstr(j, "\"indexes_rebuilt\":1"));
  free(j);
  assert_int_equal(count_segments(dir), segs);
  /* Nothing to do the second time. */
  j = st_text(db, "SELECT kafka_log_recover(?1)", "t", dir);
  assert_string_equal(j, "{\"bytes_cut\":0,\"indexes_rebuilt\":0,\"log_start_repaired\":0}");
  free(j);
  st_close(db);

  char c[4300], away[4300];
  snprintf(c, sizeof c, "%s/%s", dir, KL_COMMIT_FILE);
  snprintf(away, sizeof away, "%s.away", dir);
  assert_int_equal(mkdir(away, 0755), 0);
  strcat(away, "/" KL_COMMIT_FILE);
  assert_int_equal(rename(c, away), 0);
  view v = read_view(dir);
  assert_int_equal(v.count, N0);
  assert_int_equal(v.hi, N0 - 1);
  assert_int_equal(v.wrong, 0);
  assert_int_equal(rename(away, c), 0);
  *strrchr(away, '/') = 0;
  rmdir(away);
  t_drop_partition(dir);
}

/* A directory kafkalog never wrote is Kafka's to recover: left alone. */
static void test_recover_leaves_kafka_directory_alone(void **state) {
  char *dir = t_new_partition("kafka");
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(t_copy_dir(t_fixture("a-tiny"), dir), 0);
  sqlite3 *db = st_open();
  char *j = st_text(db, "SELECT kafka_log_recover(?1)", "t", dir);
  assert_string_equal(j, "{\"bytes_cut\":0,\"indexes_rebuilt\":0,\"log_start_repaired\":0}");
  free(j);
  char c[4300];
  snprintf(c, sizeof c, "%s/%s", dir, KL_COMMIT_FILE);
  assert_int_equal(access(c, F_OK), -1);
  sqlite3_stmt *st = st_prep(db, "SELECT kafka_log_recover(?1)", "t", "/nonexistent/x-0");
  assert_int_equal(sqlite3_step(st), SQLITE_CANTOPEN);
  sqlite3_finalize(st);
  st_close(db);
  t_drop_partition(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_failed_sync_of_commit_record_keeps_last_commit, no_failures),
      cmocka_unit_test_setup(test_failed_retirement_after_commit_is_no_failed_commit, no_failures),
      cmocka_unit_test_setup(test_stale_checkpoint_is_repaired_by_recovery, no_failures),
      cmocka_unit_test_setup(test_recover_cuts_what_a_dead_writer_left, no_failures),
      cmocka_unit_test_setup(test_recover_leaves_kafka_directory_alone, no_failures),
      cmocka_unit_test_setup(test_each_step_of_a_commit_can_fail, no_failures),
      cmocka_unit_test_setup(test_each_step_of_a_retention_can_fail, no_failures),
      cmocka_unit_test_setup(test_each_step_of_recovery_can_fail, no_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
