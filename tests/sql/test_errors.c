/*
** test_errors.c - every class of error reaches SQL with its own code: a
** damaged file is SQLITE_CORRUPT (extended SQLITE_CORRUPT_VTAB), a path
** that is not there SQLITE_CANTOPEN, a failed read SQLITE_IOERR, a full
** disk SQLITE_FULL, a refused write SQLITE_READONLY, a held lock
** SQLITE_BUSY, each with a message naming the file or the path.
**
** Read and write failures are injected: this program is linked with
** --wrap=pread,--wrap=pwrite,--wrap=pwritev (tests/CMakeLists.txt), so the
** module's calls come here, where a test can make them fail with an errno
** (SQLite's own I/O is in its shared library and is not touched).
*/
#include <errno.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "commit.h"
#include "file.h"
#include "sqltest.h"
#include "writer.h"

/* ---- injected failures ---- */

static int g_read_errno;   /* nonzero: every pread fails with it */
static int g_write_errno;  /* nonzero: every pwrite and pwritev fails with it */

ssize_t __real_pread(int fd, void *buf, size_t n, off_t pos);
ssize_t __real_pwrite(int fd, const void *buf, size_t n, off_t pos);
ssize_t __real_pwritev(int fd, const struct iovec *iov, int cnt, off_t pos);

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t pos);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t pos) {
  if (g_read_errno) {
    errno = g_read_errno;
    return -1;
  }
  return __real_pread(fd, buf, n, pos);
}

ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t pos);
ssize_t __wrap_pwrite(int fd, const void *buf, size_t n, off_t pos) {
  if (g_write_errno) {
    errno = g_write_errno;
    return -1;
  }
  return __real_pwrite(fd, buf, n, pos);
}

ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int cnt, off_t pos);
ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int cnt, off_t pos) {
  if (g_write_errno) {
    errno = g_write_errno;
    return -1;
  }
  return __real_pwritev(fd, iov, cnt, pos);
}

/* Each test starts with reads and writes working. */
static int no_failures(void **state) {
  g_read_errno = g_write_errno = 0;
  return 0;
}

/* ---- helpers ---- */

/* <root>/events-0 under a new temporary root (malloc'd); drop_dir removes
** the root. */
/* A log of n records written by the core's writer (with its commit
** record). */
static void write_log(const char *dir, int n) {
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  kl_writer *w = NULL;
  kl_err err = {0};
  if (kl_writer_create(NULL, dir, &o, &err) || kl_writer_open(NULL, dir, &o, &w, &err) ||
      kl_writer_begin(w, &err)) {
    fail_msg("writer: %s", err.msg);
  }
  for (int i = 0; i < n; i++) {
    char v[32];
    int len = snprintf(v, sizeof v, "value-%d", i);
    kl_rec_in r = {.timestamp = 1700000000000 + i, .key_len = -1, .value = v, .value_len = len};
    int64_t off;
    if (kl_writer_append(w, &r, &off, &err)) fail_msg("append: %s", err.msg);
  }
  if (kl_writer_sync(w, &err)) fail_msg("sync: %s", err.msg);
  kl_writer_commit(w);
  if (kl_writer_close(w, &err)) fail_msg("close: %s", err.msg);
}

/* Run sql (one statement, ?1 = p) to its end, expecting it to fail with
** the extended code want and a message holding each of words (NULL
** ended). */
static void expect_error(sqlite3 *db, const char *sql, const char *p, int want, ...) {
  sqlite3_stmt *st = st_prep(db, sql, p ? "t" : NULL, p);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
  int ext = sqlite3_extended_errcode(db);
  const char *msg = sqlite3_errmsg(db);
  print_message("  %s\n    -> %d (extended %d): %s\n", sql, rc, ext, msg);
  if (rc != (want & 0xff) || ext != want) {
    fail_msg("%s: rc %d, extended %d (%s); want %d, extended %d", sql, rc, ext, msg, want & 0xff,
             want);
  }
  va_list ap;
  va_start(ap, want);
  for (const char *w; (w = va_arg(ap, const char *)) != NULL;) {
    if (!strstr(msg, w)) fail_msg("%s: message \"%s\" lacks \"%s\"", sql, msg, w);
  }
  va_end(ap);
  sqlite3_finalize(st);
}

/* ---- the classes ---- */

/* A commit record that is not one: the partition is damaged, not
** unreadable. */
static void test_damaged_commit_record_is_corrupt(void **state) {
  char *dir = t_new_partition("commit");
  write_log(dir, 10);
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", dir, KL_COMMIT_FILE);
  sqlite3 *db = st_open();
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 10);

  /* Cut short, then the right size with neither slot valid. */
  assert_int_equal(truncate(path, 10), 0);
  expect_error(db, "SELECT count(*) FROM kafka_log(?1)", dir, SQLITE_CORRUPT_VTAB, "kafka_log: ",
               KL_COMMIT_FILE, NULL);
  uint8_t junk[2 * KL_COMMIT_SLOT];
  memset(junk, 0x5a, sizeof junk);
  assert_int_equal(t_write_file(path, junk, sizeof junk), 0);
  expect_error(db, "SELECT count(*) FROM kafka_log(?1)", dir, SQLITE_CORRUPT_VTAB, KL_COMMIT_FILE,
               NULL);
  /* Through a listing too: the parent's partitions. */
  char parent[4300];
  snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
  expect_error(db, "SELECT count(*) FROM kafka_log(?1)", parent, SQLITE_CORRUPT_VTAB,
               KL_COMMIT_FILE, NULL);
  st_close(db);
  t_drop_partition(dir);
}

/* A batch whose CRC does not match. */
static void test_damaged_batch_is_corrupt(void **state) {
  char *dir = t_new_partition("batch");
  write_log(dir, 10);
  char path[4300];
  snprintf(path, sizeof path, "%s/%020d.log", dir, 0);
  size_t n;
  uint8_t *p = t_read_file(path, &n);
  assert_non_null(p);
  assert_true(n > 70);
  p[n - 3] ^= 0xff; /* a byte of the last record */
  assert_int_equal(t_write_file(path, p, n), 0);
  free(p);
  sqlite3 *db = st_open();
  expect_error(db, "SELECT count(*) FROM kafka_log(?1)", dir, SQLITE_CORRUPT_VTAB,
               "00000000000000000000.log: position 0", NULL);
  st_close(db);
  t_drop_partition(dir);
}

/* A path that is not there, or not a directory of Kafka's. */
static void test_missing_directory_is_cantopen(void **state) {
  char *dir = t_new_partition("missing");
  sqlite3 *db = st_open();
  const char *tables[] = {"kafka_log", "kafka_segments", "kafka_batches", "kafka_partitions"};
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s(?1)", tables[i]);
    expect_error(db, sql, dir, SQLITE_CANTOPEN, tables[i], dir, NULL);
  }
  expect_error(db, "SELECT kafka_log_max_skew(?1)", dir, SQLITE_CANTOPEN, dir, NULL);
  /* A directory that holds nothing of Kafka's. */
  char empty[4300];
  snprintf(empty, sizeof empty, "%.*s", (int)(strrchr(dir, '/') - dir), dir);
  expect_error(db, "SELECT count(*) FROM kafka_log(?1)", empty, SQLITE_CANTOPEN, empty,
               "is not a Kafka partition directory", NULL);
  st_close(db);
  t_drop_partition(dir);
}

/* A read that fails is an I/O error, naming the file. */
static void test_failed_read_is_ioerr(void **state) {
  char *dir = t_new_partition("read");
  write_log(dir, 10);
  sqlite3 *db = st_open();
  g_read_errno = EIO;
  expect_error(db, "SELECT count(*) FROM kafka_log(?1)", dir, SQLITE_IOERR, "kafka_log: ", dir,
               "position 0: read failed: Input/output error", NULL);
  expect_error(db, "SELECT kafka_log_max_skew(?1)", dir, SQLITE_IOERR, "read failed", NULL);
  g_read_errno = 0;
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 10);
  st_close(db);
  t_drop_partition(dir);
}

/* A full disk, when a table makes its log and when it appends. */
static void test_full_disk_is_full(void **state) {
  char *dir = t_new_partition("full");
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='create')", dir);
  g_write_errno = ENOSPC;
  expect_error(db, sql, NULL, SQLITE_FULL, "kafka_log: ", "write failed", NULL);
  g_write_errno = 0;
  st_exec(db, sql);
  sqlite3_free(sql);
  st_exec(db, "INSERT INTO t(value) VALUES ('a')");
  g_write_errno = ENOSPC;
  expect_error(db, "INSERT INTO t(value) VALUES ('b')", NULL, SQLITE_FULL, dir,
               "No space left on device", NULL);
  g_write_errno = EIO; /* another write failure stays an I/O error */
  expect_error(db, "INSERT INTO t(value) VALUES ('c')", NULL, SQLITE_IOERR, dir, "write failed",
               NULL);
  g_write_errno = 0;
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 1);
  st_close(db);
  t_drop_partition(dir);
}

/* Writing where writing is refused. */
static void test_refused_write_is_readonly(void **state) {
  char *dir = t_new_partition("ro");
  write_log(dir, 1);
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("INSERT INTO kafka_log(dir, value) VALUES (%Q, 'x')", dir);
  expect_error(db, sql, NULL, SQLITE_READONLY, "read-only", NULL);
  sqlite3_free(sql);
  st_close(db);
  t_drop_partition(dir);
}

/* Another writer holds the partition. */
static void test_held_lock_is_busy(void **state) {
  char *dir = t_new_partition("busy");
  write_log(dir, 1);
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  kl_writer *w = NULL;
  kl_err err = {0};
  if (kl_writer_open(NULL, dir, &o, &w, &err) || kl_writer_begin(w, &err)) {
    fail_msg("writer: %s", err.msg);
  }
  sqlite3 *db = st_open();
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, mode='write')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  expect_error(db, "INSERT INTO t(value) VALUES ('x')", NULL, SQLITE_BUSY, "another writer holds",
               NULL);
  assert_int_equal(kl_writer_rollback(w, &err), KL_OK);
  kl_writer_close(w, NULL);
  st_exec(db, "INSERT INTO t(value) VALUES ('x')");
  assert_int_equal(st_int(db, "SELECT count(*) FROM t", NULL), 2);
  st_close(db);
  t_drop_partition(dir);
}

/* Every core code has one SQLite code (and a name). */
static void test_each_core_code_has_its_class(void **state) {
  assert_string_equal(kl_rc_name(KL_NOSPACE), "KL_NOSPACE");
  assert_string_equal(kl_rc_name(KL_CANTOPEN), "KL_CANTOPEN");
  assert_string_equal(kl_rc_name(KL_FULL), "KL_FULL");
  assert_int_equal(kl_write_rc(ENOSPC), KL_NOSPACE);
  assert_int_equal(kl_write_rc(EIO), KL_IO);
  assert_int_equal(kl_write_rc(EROFS), KL_READONLY);
  assert_int_equal(kl_write_rc(ENOTDIR), KL_CANTOPEN);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_damaged_commit_record_is_corrupt, no_failures),
      cmocka_unit_test_setup(test_damaged_batch_is_corrupt, no_failures),
      cmocka_unit_test_setup(test_missing_directory_is_cantopen, no_failures),
      cmocka_unit_test_setup(test_failed_read_is_ioerr, no_failures),
      cmocka_unit_test_setup(test_full_disk_is_full, no_failures),
      cmocka_unit_test_setup(test_refused_write_is_readonly, no_failures),
      cmocka_unit_test_setup(test_held_lock_is_busy, no_failures),
      cmocka_unit_test_setup(test_each_core_code_has_its_class, no_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
