/*
** test_io_faults.c - every system call of a write transaction, and of the
** recovery of a directory a writer left mid-transaction, fails in turn
** (tests/util/faultos.h, the Nth call, N = 1, 2, ... until the run does
** not reach N): after each, a fresh reader finds every committed record
** and no record of a transaction that did not commit, the error names the
** file whose call failed, and the next writer (no fault) recovers and
** appends.  Once with a call that fails alone, once with a disk that fails
** every call from the Nth on.
*/
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "faultos.h"
#include "testlog.h"
#include "testutil.h"

#define BEFORE 30   /* records committed before the transaction under test */
#define ADDED 40    /* records the transaction adds (batches, a roll) */
#define MAX_CALLS 2000 /* a bound: a run making more calls is a regression */

/* The writes of the test's own transactions: no fault, no fsync (each
** costs milliseconds; no test here stops the machine). */
static const kl_env *quiet(void) {
  static t_faultos f;
  static int ready;
  if (!ready) {
    t_faultos_init(&f);
    f.fake_sync = 1;
    ready = 1;
  }
  return &f.env;
}

static void opts(kl_writer_opts *o) {
  kl_writer_opts_default(o);
  o->segment_bytes = 1024;
  o->index_interval = 100;
  o->batch_bytes = 300;
}

/* Records [from, from + n) in one transaction through env: KL_OK, or the
** first error (the transaction rolled back).  *synced: the sync succeeded. */
static kl_rc write_txn(const kl_env *env, const char *dir, int64_t from, int n, int *synced,
                       kl_err *err) {
  kl_writer_opts o;
  opts(&o);
  kl_writer *w = NULL;
  *synced = 0;
  kl_rc rc = kl_writer_open(env, dir, &o, &w, err);
  if (rc == KL_OK) rc = t_log_append(w, T_LOG_PADDED, from, n, err);
  if (rc == KL_OK) {
    *synced = 1;
    kl_writer_commit(w);
  }
  kl_err e2 = {0};
  kl_writer_close(w, &e2); /* rolls back what did not sync */
  return rc;
}

/* The records a fresh reader (no fault) finds in dir: each is record
** <offset> of the padded style (testlog.h), from 0 without a gap.  Their
** count. */
static int64_t read_all(const char *dir) { return t_log_check(NULL, dir, NULL, T_LOG_PADDED); }

/* What a transaction whose Nth call failed must leave: the records
** committed before it, plus its own when it synced (or when the call that
** failed came after its commit point); the error names the file; a writer
** without faults then recovers and appends. */
static void check_after(const char *dir, const t_faultos *f, kl_rc rc, int synced,
                        const kl_err *err, int64_t before, int64_t added, long n) {
  int64_t got = read_all(dir);
  if (synced) {
    if (got != before + added) fail_msg("call %ld (%s of %s) failed after the commit: %lld "
                                        "records, want %lld", n, t_faultos_kind(f->failed_kind),
                                        f->failed_path, (long long)got,
                                        (long long)(before + added));
  } else if (got != before && got != before + added) {
    fail_msg("call %ld (%s of %s) failed: %lld records visible, want %lld or %lld", n,
             t_faultos_kind(f->failed_kind), f->failed_path, (long long)got, (long long)before,
             (long long)(before + added));
  }
  if (rc != KL_OK && !t_faultos_names_failed(f, err->msg)) {
    fail_msg("call %ld (%s of %s) failed: the error does not name the file: %s", n,
             t_faultos_kind(f->failed_kind), f->failed_path, err->msg);
  }
  /* The next writer finishes or undoes what was left. */
  kl_err e = {0};
  int ok;
  if (write_txn(quiet(), dir, got, 3, &ok, &e) != KL_OK) {
    fail_msg("after call %ld (%s of %s) failed, the next writer fails: %s", n,
             t_faultos_kind(f->failed_kind), f->failed_path, e.msg);
  }
  assert_int_equal(read_all(dir), got + 3);
}

/* Fail call N = 1, 2, ... of run(dir) on a fresh copy of tmpl until the
** run makes fewer than N calls; check_after each.  Returns the number of
** calls of the run without a fault. */
typedef kl_rc (*run_fn)(const kl_env *env, const char *dir, int *synced, kl_err *err);

static long every_call(const char *tmpl, run_fn run, int persist, int64_t before,
                       int64_t added) {
  char *work = t_mkdtemp("iof_work");
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/events-0", work);
  long n;
  for (n = 1; n <= MAX_CALLS; n++) {
    t_rmdir(dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(t_copy_dir(tmpl, dir), 0);
    t_faultos *f = malloc(sizeof *f);
    assert_non_null(f);
    t_faultos_init(f);
    f->fail_at = n;
    f->persist = persist;
    f->fake_sync = 1;
    int synced;
    kl_err err = {0};
    kl_rc rc = run(&f->env, dir, &synced, &err);
    int failed = f->failed != 0;
    if (failed) {
      check_after(dir, f, rc, synced, &err, before, added, n);
    } else {
      /* The run made fewer than n calls: it succeeded untouched. */
      if (rc != KL_OK) fail_msg("no call failed, yet: %s", err.msg);
      assert_int_equal(read_all(dir), before + added);
    }
    t_faultos_free(f);
    free(f);
    if (!failed) break;
  }
  if (n > MAX_CALLS) fail_msg("more than %d calls", MAX_CALLS);
  t_rmdir(work);
  free(work);
  return n - 1;
}

/* Segments of dir whose base is at least from. */
static int segments_from(const char *dir, int64_t from) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    long long base;
    char sfx[8];
    if (sscanf(de->d_name, "%20lld.%7s", &base, sfx) == 2 && strcmp(sfx, "log") == 0 &&
        base >= from) {
      n++;
    }
  }
  closedir(d);
  return n;
}

/* A log of BEFORE committed records, in a fresh directory. */
static char *committed_log(void) {
  char *d = t_mkdtemp("iof_tmpl");
  int synced;
  kl_err err = {0};
  for (int64_t at = 0; at < BEFORE; at += 10) {
    if (write_txn(quiet(), d, at, 10, &synced, &err) != KL_OK) fail_msg("%s", err.msg);
  }
  assert_int_equal(read_all(d), BEFORE);
  return d;
}

static kl_rc add_records(const kl_env *env, const char *dir, int *synced, kl_err *err) {
  return write_txn(env, dir, BEFORE, ADDED, synced, err);
}

/* The transaction of ADDED records after BEFORE committed ones: batches,
** index entries, a roll, the sync, the commit record, the clean close. */
static void test_write_transaction(void **state) {
  (void)state;
  char *tmpl = committed_log();
  for (int persist = 0; persist <= 1; persist++) {
    long calls = every_call(tmpl, add_records, persist, BEFORE, ADDED);
    printf("write transaction: %ld calls, each failed in turn (%s)\n", calls,
           persist ? "and every later one" : "alone");
    assert_true(calls > 50); /* writes, syncs, opens, a listing, locks */
  }
  t_rmdir(tmpl);
  free(tmpl);
}

/* A directory a writer left mid-transaction: BEFORE committed records,
** then batches of an uncommitted transaction in the files (a segment of
** its own among them), and the lock file.  The next writer recovers it
** (cuts the uncommitted bytes, removes the segment, rebuilds the
** indexes) and adds ADDED records. */
static void test_recovery(void **state) {
  (void)state;
  char *tmpl = committed_log();
  char *crash = t_mkdtemp("iof_crash");
  kl_writer_opts o;
  opts(&o);
  kl_writer *w = NULL;
  kl_err err = {0};
  assert_int_equal(kl_writer_open(NULL, tmpl, &o, &w, &err), KL_OK);
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  for (int i = 0; i < 25; i++) {
    int64_t off;
    kl_rec_in r = t_log_rec(T_LOG_PADDED, 1000 + i); /* never committed: a reader must not see them */
    assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
  }
  /* The files as the crash left them. */
  assert_int_equal(t_copy_dir(tmpl, crash), 0);
  assert_int_equal(kl_writer_rollback(w, &err), KL_OK);
  kl_writer_close(w, NULL);
  assert_true(segments_from(crash, BEFORE) > 0); /* the transaction had rolled */
  assert_int_equal(read_all(crash), BEFORE);
  for (int persist = 0; persist <= 1; persist++) {
    long calls = every_call(crash, add_records, persist, BEFORE, ADDED);
    printf("recovery and transaction: %ld calls, each failed in turn (%s)\n", calls,
           persist ? "and every later one" : "alone");
    assert_true(calls > 50);
  }
  t_rmdir(crash);
  free(crash);
  t_rmdir(tmpl);
  free(tmpl);
}

/* The layer counts and filters: only the kinds and paths asked. */
static void test_layer_filters(void **state) {
  (void)state;
  char *tmpl = committed_log();
  t_faultos f;
  t_faultos_init(&f);
  f.kinds = T_OS_SYNC;
  f.path_has = "kafkalog.commit";
  f.fail_at = 1;
  f.fail_errno = ENOSPC;
  int synced;
  kl_err err = {0};
  assert_int_equal(write_txn(&f.env, tmpl, BEFORE, 5, &synced, &err), KL_NOSPACE);
  assert_int_equal(f.failed, 1);
  assert_int_equal(f.failed_kind, T_OS_SYNC);
  assert_non_null(strstr(f.failed_path, "kafkalog.commit"));
  assert_non_null(strstr(err.msg, "kafkalog.commit"));
  assert_true(t_faultos_count(&f, T_OS_WRITE) > 0);
  assert_true(t_faultos_count(&f, T_OS_SYNC) > f.calls); /* the .log's were not counted */
  t_faultos_free(&f);
  assert_int_equal(read_all(tmpl), BEFORE);
  t_rmdir(tmpl);
  free(tmpl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_layer_filters),
    cmocka_unit_test(test_write_transaction),
    cmocka_unit_test(test_recovery),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
