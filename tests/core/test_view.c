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

#include "faultos.h"
#include "testlog.h"
#include "testutil.h"

/* The records the writer's view of dir shows, read through env: their
** count (testlog.h checks each). */
static int64_t read_view(const kl_env *env, kl_writer *w, const char *dir) {
  kl_view v = {0};
  kl_err err = {0};
  int has = kl_writer_view(w, &v, &err);
  assert_true(has >= 0);
  int64_t n = t_log_check(env, dir, has ? &v : NULL, T_LOG_PLAIN);
  kl_buf_free(NULL, &v.tail);
  return n;
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
    kl_writer *wa = t_log_writer(&f.env, a, 2048, 200, 400, codec); /* ten records a batch */
    kl_writer *wb = t_log_writer(&f.env, b, 2048, 200, 400, codec);
    kl_err err = {0};
    assert_int_equal(kl_writer_begin(wa, &err), KL_OK);
    assert_int_equal(kl_writer_begin(wb, &err), KL_OK);
    int in_memory = 0;
    for (int64_t i = 0; i < 120; i++) {
      int64_t off;
      kl_rec_in r = t_log_rec(T_LOG_PLAIN, i);
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
    t_same_files(a, b, "*.log *.index *.timeindex kafkalog.commit");
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
  kl_writer *w = t_log_writer(NULL, a, 2048, 200, 400, 0);
  kl_view v = {0};
  kl_err err = {0};
  assert_int_equal(kl_writer_view(w, &v, &err), 0);
  assert_int_equal(kl_writer_begin(w, &err), KL_OK);
  assert_int_equal(kl_writer_view(w, &v, &err), 0);
  int64_t off;
  kl_rec_in r = t_log_rec(T_LOG_PLAIN, 0);
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
