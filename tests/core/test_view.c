/*
** test_view.c - a writer's own reads inside its transaction (writer.h
** kl_writer_view, log.h kl_log_open_view): they see every record appended
** so far, the batch still in memory included, and they write nothing: no
** system call that changes a file (counted by tests/util/faultos.h), and
** the files the transaction leaves are byte for byte those of the same
** transaction without the reads.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cursor.h"
#include "faultos.h"
#include "log.h"
#include "testutil.h"
#include "writer.h"

static char val[64][64];

static kl_rec_in rec(int64_t i) {
  int k = (int)(i % 64);
  int len = snprintf(val[k], sizeof val[k], "value-%lld", (long long)i);
  kl_rec_in r = {1700000000000 + i, "key", 3, val[k], len, NULL, 0};
  return r;
}

static kl_writer *open_w(const kl_env *env, const char *dir, int codec) {
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  o.segment_bytes = 2048;
  o.index_interval = 200;
  o.batch_bytes = 400; /* a batch holds about ten records */
  o.codec = codec;
  kl_writer *w = NULL;
  kl_err err = {0};
  mkdir(dir, 0755);
  assert_int_equal(kl_writer_open(env, dir, &o, &w, &err), KL_OK);
  return w;
}

/* The records the writer's view of dir shows (each is rec(offset), from
** 0 without a gap), read through env: their count. */
static int64_t read_view(const kl_env *env, kl_writer *w, const char *dir) {
  kl_view v = {0};
  kl_err err = {0};
  int has = kl_writer_view(w, &v, &err);
  assert_true(has >= 0);
  kl_log *log = NULL;
  if (kl_log_open_view(env, dir, NULL, has ? &v : NULL, &log, &err) != KL_OK) {
    fail_msg("%s", err.msg);
  }
  kl_buf_free(NULL, &v.tail);
  kl_cursor *c = NULL;
  assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c), KL_OK);
  kl_bounds all = kl_bounds_all();
  assert_int_equal(kl_cursor_start(c, &all, &err), KL_OK);
  int64_t n = 0;
  kl_rc rc;
  while ((rc = kl_cursor_next(c, &err)) == KL_OK) {
    assert_int_equal(kl_cursor_load(c, &err), KL_OK);
    const kl_record *r = kl_cursor_record(c);
    kl_rec_in want = rec(n);
    assert_int_equal(r->offset, n);
    assert_int_equal(r->value_len, want.value_len);
    assert_memory_equal(r->value, want.value, (size_t)want.value_len);
    n++;
  }
  if (rc != KL_DONE) fail_msg("%s", err.msg);
  kl_cursor_free(c);
  kl_log_close(log);
  return n;
}

/* The same files, byte for byte. */
static void same_files(const char *a, const char *b) {
  char cmd[9000];
  snprintf(cmd, sizeof cmd,
           "cd %s && for f in *.log *.index *.timeindex kafkalog.commit; do cmp -s \"$f\" "
           "\"%s/$f\" || { echo \"differs: $f\"; exit 1; }; done", a, b);
  assert_int_equal(system(cmd), 0);
}

/* After each append, a read of the view: every record so far, and not one
** call that writes, syncs, truncates, renames, unlinks or makes a
** directory; the files are those of the transaction without the reads. */
static void test_view_reads_without_writing(void **state) {
  (void)state;
  for (int codec = 0; codec <= 4; codec += 4) {
    char *a = t_mkdtemp("view_a"), *b = t_mkdtemp("view_b");
    t_faultos f;
    t_faultos_init(&f);
    f.fake_sync = 1;
    kl_writer *wa = open_w(&f.env, a, codec), *wb = open_w(&f.env, b, codec);
    kl_err err = {0};
    assert_int_equal(kl_writer_begin(wa, &err), KL_OK);
    assert_int_equal(kl_writer_begin(wb, &err), KL_OK);
    int in_memory = 0;
    for (int64_t i = 0; i < 120; i++) {
      int64_t off;
      kl_rec_in r = rec(i);
      assert_int_equal(kl_writer_append(wa, &r, &off, &err), KL_OK);
      assert_int_equal(kl_writer_append(wb, &r, &off, &err), KL_OK);
      long changes = t_faultos_count(&f, T_OS_CHANGES);
      assert_int_equal(read_view(&f.env, wa, a), i + 1);
      assert_int_equal(t_faultos_count(&f, T_OS_CHANGES), changes);
      kl_view v = {0};
      assert_int_equal(kl_writer_view(wa, &v, &err), 1);
      in_memory += v.tail.len > 0;
      kl_buf_free(NULL, &v.tail);
    }
    assert_true(in_memory > 100); /* most reads met a batch not yet written */
    assert_int_equal(kl_writer_sync(wa, &err), KL_OK);
    kl_writer_commit(wa);
    assert_int_equal(kl_writer_sync(wb, &err), KL_OK);
    kl_writer_commit(wb);
    assert_int_equal(kl_writer_close(wa, &err), KL_OK);
    assert_int_equal(kl_writer_close(wb, &err), KL_OK);
    same_files(a, b);
    t_faultos_free(&f);
    t_rmdir(a);
    t_rmdir(b);
    free(a);
    free(b);
  }
}

/* Outside a transaction, or before its first append, there is no view. */
static void test_no_view_without_appends(void **state) {
  (void)state;
  char *a = t_mkdtemp("view_none");
  kl_writer *w = open_w(NULL, a, 0);
  kl_view v = {0};
  kl_err err = {0};
  assert_int_equal(kl_writer_view(w, &v, &err), 0);
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  assert_int_equal(kl_writer_view(w, &v, &err), 0);
  int64_t off;
  kl_rec_in r = rec(0);
  assert_int_equal(kl_writer_append(w, &r, &off, &err), KL_OK);
  assert_int_equal(kl_writer_view(w, &v, &err), 1);
  assert_true(v.tail.len > 0);
  assert_int_equal(v.end.next_offset, 1);
  kl_buf_free(NULL, &v.tail);
  assert_int_equal(kl_writer_close(w, &err), KL_OK); /* rolled back */
  t_rmdir(a);
  free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_view_reads_without_writing),
    cmocka_unit_test(test_no_view_without_appends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
