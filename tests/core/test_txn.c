/*
** test_txn.c - what read_committed rests on: .txnindex entries as Kafka
** reads them, the rule that puts a batch in an aborted transaction, and
** the last stable offset from the log's markers and from a producer
** snapshot (taken when valid, ignored when its CRC fails).
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "kwriter.h"
#include "txn.h"

static void put_entry(uint8_t *e, int version, int64_t pid, int64_t first, int64_t last) {
  memset(e, 0, KL_TXN_ENTRY_SIZE);
  e[0] = (uint8_t)version;
  kl_put_u64(e + 2, (uint64_t)pid);
  kl_put_u64(e + 10, (uint64_t)first);
  kl_put_u64(e + 18, (uint64_t)last);
  kl_put_u64(e + 26, (uint64_t)first);
}

static void test_entry(void **state) {
  (void)state;
  uint8_t e[KL_TXN_ENTRY_SIZE];
  kl_txn_abort t;
  put_entry(e, 0, 7, 5, 15);
  assert_true(kl_txn_entry(e, 10, &t));
  assert_int_equal(t.pid, 7);
  assert_int_equal(t.first, 5); /* may lie in an earlier segment */
  assert_int_equal(t.last, 15);
  put_entry(e, 1, 7, 5, 15);
  assert_false(kl_txn_entry(e, 10, &t)); /* Kafka reads version 0 only */
  put_entry(e, 0, 7, 5, 9);
  assert_false(kl_txn_entry(e, 10, &t)); /* the marker lies in this segment */
}

static kl_batch batch(int64_t pid, int64_t base, int64_t last, int txn, int control) {
  kl_batch b;
  memset(&b, 0, sizeof b);
  b.producer_id = pid;
  b.base_offset = base;
  b.last_offset = last;
  b.is_transactional = (int8_t)txn;
  b.is_control = (int8_t)control;
  return b;
}

static void test_aborted(void **state) {
  (void)state;
  /* By producer, then first offset, as kl_txns_load leaves them. */
  kl_txn_abort a[] = {{7, 5, 15}, {7, 30, 40}, {9, 10, 20}};
  kl_txns t = {a, 3, 100, -1};
  kl_batch b;
  b = batch(7, 5, 9, 1, 0);
  assert_true(kl_txns_aborted(&t, &b));
  b = batch(7, 12, 14, 1, 0);
  assert_true(kl_txns_aborted(&t, &b));
  b = batch(7, 3, 5, 1, 0); /* reaches the first offset */
  assert_true(kl_txns_aborted(&t, &b));
  b = batch(7, 16, 20, 1, 0); /* after the marker: the next transaction */
  assert_false(kl_txns_aborted(&t, &b));
  b = batch(7, 35, 36, 1, 0);
  assert_true(kl_txns_aborted(&t, &b));
  b = batch(7, 12, 14, 0, 0); /* not transactional */
  assert_false(kl_txns_aborted(&t, &b));
  b = batch(7, 15, 15, 1, 1); /* the marker itself is never a row anyway */
  assert_false(kl_txns_aborted(&t, &b));
  b = batch(8, 12, 14, 1, 0); /* another producer */
  assert_false(kl_txns_aborted(&t, &b));
  b = batch(9, 19, 19, 1, 0);
  assert_true(kl_txns_aborted(&t, &b));
  b = batch(6, 0, 100, 1, 0);
  assert_false(kl_txns_aborted(&t, &b));
}

/* A producer snapshot (format.md 10) with one producer whose transaction
** is open since first (-1: none). */
static void put_snapshot(const char *dir, int64_t at, int64_t pid, int64_t first, int bad_crc) {
  uint8_t s[10 + 46];
  memset(s, 0, sizeof s);
  s[1] = 1;                       /* version 1 */
  kl_put_u32(s + 6, 1);           /* one producer */
  uint8_t *e = s + 10;
  kl_put_u64(e, (uint64_t)pid);
  kl_put_u64(e + 38, (uint64_t)first);
  kl_put_u32(s + 2, kl_crc32c(0, s + 6, sizeof s - 6) ^ (bad_crc ? 1u : 0u));
  char path[4200];
  snprintf(path, sizeof path, "%s/%020lld.snapshot", dir, (long long)at);
  assert_int_equal(t_write_file(path, s, sizeof s), 0);
}

static int64_t lso_of(const char *dir) {
  kl_log *log;
  kl_err err = {0};
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_txns t;
  assert_int_equal(kl_txns_load(log, &rd, &t, &err), KL_OK);
  int64_t lso = t.lso;
  kl_txns_free(NULL, &t);
  kl_reader_free(&rd);
  kl_log_close(log);
  return lso;
}

static void test_last_stable_offset(void **state) {
  (void)state;
  char *dir = t_mkdtemp("txn");
  kw_options o = {1 << 20, 4096, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  assert_int_equal(kw_append_txn(w, 7, 3), 0);    /* 0-2, producer 7 */
  assert_int_equal(kw_append_marker(w, 7, 1), 0); /* 3, COMMIT */
  assert_int_equal(kw_append_txn(w, 9, 2), 0);    /* 4-5, producer 9, left open */
  assert_int_equal(kw_append_txn(w, 7, 2), 0);    /* 6-7 */
  assert_int_equal(kw_append_marker(w, 7, 0), 0); /* 8, ABORT */
  assert_int_equal(kw_close(w), 0);
  /* From the markers: producer 9's transaction, open since 4. */
  assert_int_equal(lso_of(dir), 4);
  /* A snapshot at 6 that knows producer 9 open since 1 is trusted, as
  ** Kafka's broker restores it; a snapshot whose CRC fails is not. */
  put_snapshot(dir, 6, 9, 1, 0);
  assert_int_equal(lso_of(dir), 1);
  put_snapshot(dir, 6, 9, 1, 1);
  assert_int_equal(lso_of(dir), 4);
  /* A snapshot with no open transaction, at 6: producer 9's batches came
  ** before it, so nothing is open after all (the broker's state at 6 is
  ** the snapshot's). */
  put_snapshot(dir, 6, 9, -1, 0);
  assert_int_equal(lso_of(dir), 9);
  t_rmdir(dir);
  free(dir);
}

/* Two producers' transactions, one of them aborted across a segment roll,
** written without any .txnindex: the aborted transactions come from the
** markers, exactly those recovery would index, whatever the allocator
** refuses on the way (no leak, KL_NOMEM or the whole answer). */
static void test_aborted_from_markers(void **state) {
  (void)state;
  char *dir = t_mkdtemp("txn-markers");
  kw_options o = {600, 4096, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  assert_int_equal(kw_append_txn(w, 7, 3), 0);    /* 0-2 */
  assert_int_equal(kw_append_txn(w, 9, 2), 0);    /* 3-4 */
  assert_int_equal(kw_append_marker(w, 7, 0), 0); /* 5, ABORT of 0-2 */
  assert_int_equal(kw_append_txn(w, 7, 2), 0);    /* 6-7 */
  assert_int_equal(kw_append_marker(w, 7, 1), 0); /* 8, COMMIT */
  assert_int_equal(kw_append_txn(w, 9, 2), 0);    /* 9-10 */
  assert_int_equal(kw_append_marker(w, 9, 0), 0); /* 11, ABORT of 3-10 */
  assert_int_equal(kw_append_marker(w, 7, 0), 0); /* 12, ABORT of nothing open */
  assert_int_equal(kw_append_txn(w, 7, 1), 0);    /* 13, left open */
  assert_int_equal(kw_close(w), 0);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -f %s/*.txnindex", dir);
  assert_int_equal(system(cmd), 0);
  int done = 0;
  for (long k = 1; k < 500 && !done; k++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, k);
    kl_log *log;
    kl_err err = {0};
    kl_rc rc = kl_log_open(env, dir, &log, &err);
    kl_txns t;
    if (rc == KL_OK) {
      assert_true(kl_log_segment_count(log) > 1);
      kl_reader rd;
      kl_reader_init(&rd, env, NULL, KL_ON_CORRUPT_ERROR);
      rc = kl_txns_load(log, &rd, &t, &err);
      kl_reader_free(&rd);
      if (rc == KL_OK) {
        assert_int_equal(t.n, 2);
        assert_int_equal(t.a[0].pid, 7);
        assert_int_equal(t.a[0].first, 0);
        assert_int_equal(t.a[0].last, 5);
        assert_int_equal(t.a[1].pid, 9);
        assert_int_equal(t.a[1].first, 3);
        assert_int_equal(t.a[1].last, 11);
        assert_int_equal(t.lso, 13);
        assert_int_equal(t.open_pid, 7);
        kl_txns_free(env, &t);
        done = 1;
      }
      kl_log_close(log);
    }
    assert_true(rc == KL_OK || rc == KL_NOMEM);
    assert_int_equal(fa.live, 0);
  }
  assert_true(done);
  t_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entry),
      cmocka_unit_test(test_aborted),
      cmocka_unit_test(test_last_stable_offset),
      cmocka_unit_test(test_aborted_from_markers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
