/*
** test_truncate.c - files changing under running queries.
**
** A child process truncates the segments of a log (.log, .index and
** .timeindex; at page boundaries, one byte either side, and to zero),
** writes them back and replaces them by rename, over and over, while this
** process runs every kind of query over the log.  A mapped file truncated
** under a reader kills the reader with SIGBUS; here every read goes through
** pread, so each query must end with its rows, SQLITE_IOERR or
** SQLITE_CORRUPT (naming the file), and the process must live to count
** them.  Once the child is done and the files are whole again, every query
** gives the log's rows again.
*/
#include "sqltest.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kwriter.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

typedef struct file {
  char path[4200];
  uint8_t *bytes;
  size_t n;
} file;

/* The child: damage and restore files until the deadline. */
static void vandal(file *f, int nf, double until, uint64_t seed) {
  char tmp[4300];
  while (now() < until) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    file *x = &f[(seed >> 33) % (uint64_t)nf];
    size_t pages = x->n / 4096;
    size_t to;
    switch ((seed >> 20) % 4) {
      case 0: to = 0; break;
      case 1: to = ((seed >> 40) % (pages + 1)) * 4096; break;
      case 2: to = ((seed >> 40) % (pages + 1)) * 4096 + 1; break;
      default: to = ((seed >> 40) % (pages + 1)) * 4096; to = to ? to - 1 : 0; break;
    }
    if (to > x->n) to = x->n;
    if (truncate(x->path, (off_t)to) != 0) _exit(3);
    usleep((useconds_t)((seed >> 8) % 300));
    if ((seed >> 12) % 3 == 0) {
      /* Replaced: a new file renamed over the old one. */
      snprintf(tmp, sizeof tmp, "%s.new", x->path);
      if (t_write_file(tmp, x->bytes, x->n) || rename(tmp, x->path)) _exit(4);
    } else {
      /* Written back in place: the same inode grows again. */
      FILE *w = fopen(x->path, "r+b");
      if (!w || fwrite(x->bytes, 1, x->n, w) != x->n) _exit(5);
      fclose(w);
    }
    usleep((useconds_t)((seed >> 16) % 200));
  }
  _exit(0);
}

static const char *const queries[] = {
    "SELECT count(*), sum(length(value)) FROM kafka_log(?1)",
    "SELECT count(*) FROM kafka_log(?1, 'skip')",
    "SELECT offset FROM kafka_log(?1) ORDER BY offset DESC LIMIT 50",
    "SELECT offset, value FROM kafka_log(?1) WHERE offset IN (7, 1234, 5678, 9999, 14000)",
    "SELECT count(*) FROM kafka_log(?1) WHERE offset BETWEEN 3000 AND 9000",
    "SELECT count(*) FROM kafka_log(?1) WHERE timestamp >= 1700000050000",
    "SELECT offset FROM kafka_log(?1) WHERE timestamp >= 1700000120000 ORDER BY offset DESC LIMIT 5",
    "SELECT count(*) FROM kafka_log_check(?1)",
    "SELECT count(*) FROM t",
    "SELECT max(offset) FROM t WHERE offset > 12000",
};
enum { NQ = sizeof queries / sizeof queries[0] };

static void test_truncated_under_queries(void **state) {
  char *dir = t_mkdtemp("trunc");
  assert_non_null(dir);
  kw_options o = {96 * 1024, 4096, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  for (int i = 0; i < 16000; i++) {
    char v[64];
    int len = snprintf(v, sizeof v, "value-%d-abcdefghijklmnopqrstuvwxyz", i);
    kl_rec_in r = {1700000000000 + 10 * (int64_t)i, "key", 3, v, len, NULL, 0};
    assert_int_equal(kw_append(w, NULL, &r, 1), 0);
  }
  assert_int_equal(kw_close(w), 0);

  /* Every file of the log, and its bytes to write back. */
  file f[64];
  int nf = 0;
  sqlite3 *db = st_open();
  sqlite3_stmt *ls = st_prep(db, "SELECT DISTINCT segment FROM kafka_log(?1)", "t", dir);
  while (sqlite3_step(ls) == SQLITE_ROW && nf + 3 <= 64) {
    static const char *const suffix[] = {".log", ".index", ".timeindex"};
    for (int k = 0; k < 3; k++) {
      snprintf(f[nf].path, sizeof f[nf].path, "%s/%020lld%s", dir,
               (long long)sqlite3_column_int64(ls, 0), suffix[k]);
      f[nf].bytes = t_read_file(f[nf].path, &f[nf].n);
      assert_non_null(f[nf].bytes);
      nf++;
    }
  }
  sqlite3_finalize(ls);
  assert_true(nf >= 12);
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q)", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  /* The answers on the whole files. */
  char *want[NQ];
  for (int q = 0; q < NQ; q++) {
    st_buf b = {0};
    st_render(db, st_prep(db, queries[q], strstr(queries[q], "?1") ? "t" : NULL, dir), &b);
    assert_null(strstr(b.p, "ERROR"));
    want[q] = b.p;
  }

  /* At least secs of queries, and however long a loaded machine needs for
  ** 100 queries of which some met changed files (no assertion on speed);
  ** the vandal runs until it is stopped, within a cap. */
  double secs = getenv("KL_TRUNCATE_SECONDS") ? atof(getenv("KL_TRUNCATE_SECONDS")) : 4.0;
  double cap = now() + secs + 300;
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) vandal(f, nf, cap, (uint64_t)getpid());

  long ok = 0, ioerr = 0, corrupt = 0, runs = 0;
  double until = now() + secs;
  while (now() < cap && (now() < until || runs < 100 || ioerr + corrupt == 0)) {
    for (int q = 0; q < NQ; q++) {
      sqlite3_stmt *st = st_prep(db, queries[q], strstr(queries[q], "?1") ? "t" : NULL, dir);
      int rc;
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
      const char *msg = sqlite3_errmsg(db);
      if (rc == SQLITE_DONE) ok++;
      else if (rc == SQLITE_IOERR && strstr(msg, dir)) ioerr++;
      else if (rc == SQLITE_CORRUPT && strstr(msg, dir)) corrupt++;
      else fail_msg("%s: rc %d: %s", queries[q], rc, msg);
      sqlite3_finalize(st);
      runs++;
    }
  }
  int status;
  kill(child, SIGTERM);
  assert_int_equal(waitpid(child, &status, 0), child);
  if (WIFSIGNALED(status)) assert_int_equal(WTERMSIG(status), SIGTERM);
  else assert_int_equal(WEXITSTATUS(status), 0);
  print_message("  %ld queries while files changed: %ld answered, %ld SQLITE_IOERR, %ld "
                "SQLITE_CORRUPT; the process lived\n", runs, ok, ioerr, corrupt);
  assert_true(runs >= 100);
  assert_true(ioerr + corrupt > 0); /* the files did change under queries */

  /* Whole again: a query may still find that the files changed since the
  ** log was opened (once: the next opens it afresh); then the answers are
  ** those of before. */
  for (int i = 0; i < nf; i++) assert_int_equal(t_write_file(f[i].path, f[i].bytes, f[i].n), 0);
  for (int q = 0; q < NQ; q++) {
    sqlite3_stmt *st = st_prep(db, queries[q], strstr(queries[q], "?1") ? "t" : NULL, dir);
    while (sqlite3_step(st) == SQLITE_ROW) {}
    sqlite3_finalize(st);
  }
  for (int q = 0; q < NQ; q++) {
    st_buf b = {0};
    st_render(db, st_prep(db, queries[q], strstr(queries[q], "?1") ? "t" : NULL, dir), &b);
    if (strcmp(b.p, want[q])) fail_msg("%s after the files were restored:\n%s\nwant\n%s", queries[q], b.p, want[q]);
    st_buf_free(&b);
    free(want[q]);
  }
  for (int i = 0; i < nf; i++) free(f[i].bytes);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_truncated_under_queries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
