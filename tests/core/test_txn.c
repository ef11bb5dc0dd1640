/*
** test_txn.c - what read_committed rests on: .txnindex entries as Kafka
** reads them, the rule that puts a batch in an aborted transaction, and
** the last stable offset from the log's markers and from a producer
** snapshot (the newest Kafka keeps that reads, else the one before); each
** producer's state as the broker rebuilds it (epoch, sequence, offsets,
** timestamps, coordinator epoch) from batches and from a snapshot's
** entries.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Kafka keeps several snapshots and loads the newest it keeps that reads;
** one that does not read gives way to the one before.  It keeps those at a
** segment's base offset and, of the others (strays), only the largest when
** it is at or above every base; none above the log end. */
static void test_several_snapshots(void **state) {
  (void)state;
  char *dir = t_mkdtemp("txnsnaps");
  kw_options o = {1, 4096, 0, KL_CODEC_NONE}; /* every batch rolls a segment */
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  assert_int_equal(kw_append_txn(w, 7, 3), 0);    /* 0-2 */
  assert_int_equal(kw_append_marker(w, 7, 1), 0); /* 3, COMMIT */
  assert_int_equal(kw_append_txn(w, 9, 2), 0);    /* 4-5, producer 9, left open */
  assert_int_equal(kw_append_txn(w, 7, 2), 0);    /* 6-7 */
  assert_int_equal(kw_append_marker(w, 7, 0), 0); /* 8, ABORT */
  assert_int_equal(kw_close(w), 0);
  kl_log *log;
  kl_err err = {0};
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  assert_int_equal(kl_log_segment_count(log), 5); /* bases 0, 3, 4, 6, 8 */
  assert_int_equal(kl_log_last(log)->base, 8);
  kl_log_close(log);
  assert_int_equal(lso_of(dir), 4);
  /* Two snapshots at segment bases: the newest, 6, says producer 9 is open
  ** since 2; the one at 3 says since 1. */
  put_snapshot(dir, 3, 9, 1, 0);
  put_snapshot(dir, 6, 9, 2, 0);
  assert_int_equal(lso_of(dir), 2);
  /* The newest does not read: the one before it is the state. */
  put_snapshot(dir, 6, 9, 2, 1);
  assert_int_equal(lso_of(dir), 1);
  /* Neither reads: the log from its start. */
  put_snapshot(dir, 3, 9, 1, 1);
  assert_int_equal(lso_of(dir), 4);
  put_snapshot(dir, 3, 9, 1, 0);
  /* A stray below the last base (5: no segment starts there) is deleted
  ** by Kafka's loader, however new. */
  put_snapshot(dir, 5, 9, 0, 0);
  assert_int_equal(lso_of(dir), 1);
  /* The largest stray at or above every base (9, the log end, as a clean
  ** shutdown writes it) is kept, and is the newest. */
  put_snapshot(dir, 9, 9, 0, 0);
  assert_int_equal(lso_of(dir), 0);
  put_snapshot(dir, 9, 9, 0, 1);
  assert_int_equal(lso_of(dir), 1);
  /* A stray beyond the log end is the largest one, which leaves 9 a
  ** stray to delete; and it is then deleted itself for being past the
  ** end. */
  put_snapshot(dir, 9, 9, 0, 0);
  put_snapshot(dir, 12, 9, 0, 0);
  assert_int_equal(lso_of(dir), 1);
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

/* A v2 batch of producer pid with the fields the producer state reads. */
static kl_batch pbatch(int64_t pid, int16_t epoch, int32_t seq, int64_t base, int32_t delta,
                       int64_t ts, int txn, int control) {
  kl_batch b = batch(pid, base, base + delta, txn, control);
  b.magic = 2;
  b.producer_epoch = epoch;
  b.base_sequence = seq;
  b.last_offset_delta = delta;
  b.max_timestamp = ts;
  return b;
}

static kl_producer state_of(const kl_txn_state *st, int64_t pid) {
  kl_producer *all;
  size_t n;
  assert_int_equal(kl_txn_producers(NULL, st, &all, &n), KL_OK);
  for (size_t i = 0; i < n; i++) {
    if (all[i].pid == pid) {
      kl_producer p = all[i];
      free(all);
      return p;
    }
  }
  fail_msg("producer %lld not found", (long long)pid);
  return (kl_producer){0};
}

static void step(kl_txn_state *st, kl_batch b, int ctl, int32_t ctl_epoch) {
  kl_txn_end end;
  int aborted;
  assert_int_equal(kl_txn_step(NULL, st, &b, ctl, ctl_epoch, &end, &aborted), KL_OK);
}

static void test_producer_state(void **state) {
  (void)state;
  kl_txn_state st = {0};
  /* A data batch: epoch, last sequence (base + delta), last offset, time. */
  step(&st, pbatch(5, 2, 10, 100, 3, 1000, 1, 0), -1, -1);
  kl_producer p = state_of(&st, 5);
  assert_int_equal(p.epoch, 2);
  assert_int_equal(p.last_seq, 13);
  assert_int_equal(p.last_offset, 103);
  assert_int_equal(p.offset_delta, 3);
  assert_int_equal(p.last_ts, 1000);
  assert_int_equal(p.coordinator_epoch, -1);
  assert_int_equal(p.txn_first, 100);
  /* A second batch of the transaction leaves its first offset. */
  step(&st, pbatch(5, 2, 14, 104, 0, 1100, 1, 0), -1, -1);
  assert_int_equal(state_of(&st, 5).txn_first, 100);
  /* A control batch that is no marker changes nothing. */
  step(&st, pbatch(5, 2, -1, 105, 0, 1200, 1, 1), 3, 9);
  assert_int_equal(state_of(&st, 5).last_ts, 1100);
  /* The COMMIT: closed, coordinator epoch and time of the marker; the
  ** sequence and offset of the last data batch stay. */
  step(&st, pbatch(5, 2, -1, 106, 0, 1300, 1, 1), KL_CONTROL_COMMIT, 9);
  p = state_of(&st, 5);
  assert_int_equal(p.txn_first, -1);
  assert_int_equal(p.coordinator_epoch, 9);
  assert_int_equal(p.last_ts, 1300);
  assert_int_equal(p.last_seq, 14);
  assert_int_equal(p.last_offset, 104);
  /* A new epoch forgets the sequence (a bumped producer starts again). */
  step(&st, pbatch(5, 3, -1, 107, 0, 1400, 1, 1), KL_CONTROL_ABORT, 10);
  p = state_of(&st, 5);
  assert_int_equal(p.epoch, 3);
  assert_int_equal(p.last_seq, -1);
  assert_int_equal(p.last_offset, -1);
  assert_int_equal(p.coordinator_epoch, 10);
  /* Sequences wrap past INT32_MAX to 0. */
  step(&st, pbatch(6, 0, INT32_MAX - 1, 200, 3, 2000, 0, 0), -1, -1);
  p = state_of(&st, 6);
  assert_int_equal(p.last_seq, 1);
  assert_int_equal(p.txn_first, -1);
  /* Restore replaces a producer's state; the list is by producer id. */
  kl_producer r = {4, 1, 7, 50, 0, 900, 2, 40};
  assert_int_equal(kl_txn_restore(NULL, &st, &r), KL_OK);
  kl_producer *all;
  size_t n;
  assert_int_equal(kl_txn_producers(NULL, &st, &all, &n), KL_OK);
  assert_int_equal(n, 3);
  assert_int_equal(all[0].pid, 4);
  assert_int_equal(all[0].txn_first, 40);
  assert_int_equal(all[1].pid, 5);
  assert_int_equal(all[2].pid, 6);
  free(all);
  int64_t pid;
  assert_int_equal(kl_txn_first_open(&st, &pid), 40);
  assert_int_equal(pid, 4);
  kl_txn_state_free(NULL, &st);
}

/* A snapshot's entries are the state at its offset, every field of them;
** the batches after it continue from there. */
static void test_producer_state_from_snapshot(void **state) {
  (void)state;
  char *dir = t_mkdtemp("txnsnap");
  kw_options o = {1 << 20, 4096, 0, KL_CODEC_NONE};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  assert_int_equal(kw_append_txn(w, 7, 3), 0);    /* 0-2 */
  assert_int_equal(kw_append_marker(w, 7, 1), 0); /* 3, COMMIT, coordinator epoch 7 */
  assert_int_equal(kw_append_txn(w, 9, 2), 0);    /* 4-5 */
  assert_int_equal(kw_close(w), 0);
  /* At offset 4: producer 3 (known to the snapshot only) open since 1. */
  uint8_t s[10 + 46];
  memset(s, 0, sizeof s);
  s[1] = 1;
  kl_put_u32(s + 6, 1);
  uint8_t *e = s + 10;
  kl_put_u64(e, 3);
  kl_put_u16(e + 8, 6);
  kl_put_u32(e + 10, 41);
  kl_put_u64(e + 14, 2);
  kl_put_u32(e + 22, 1);
  kl_put_u64(e + 26, 123456);
  kl_put_u32(e + 34, 8);
  kl_put_u64(e + 38, 1);
  kl_put_u32(s + 2, kl_crc32c(0, s + 6, sizeof s - 6));
  char path[4200];
  snprintf(path, sizeof path, "%s/%020d.snapshot", dir, 4);
  assert_int_equal(t_write_file(path, s, sizeof s), 0);

  kl_log *log;
  kl_err err = {0};
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_txns t;
  kl_txn_state st = {0};
  kl_txn_origin origin;
  assert_int_equal(kl_txns_load_state(log, &rd, kl_log_start_offset(log), &t, &st, &origin, &err), KL_OK);
  assert_int_equal(origin.snapshot, 4);
  assert_int_equal(origin.end, 6);
  assert_int_equal(t.lso, 1);
  kl_producer *all;
  size_t n;
  assert_int_equal(kl_txn_producers(NULL, &st, &all, &n), KL_OK);
  /* Producer 7 wrote before the snapshot, which does not know it: the
  ** broker's state is the snapshot's. */
  assert_int_equal(n, 2);
  assert_int_equal(all[0].pid, 3);
  assert_int_equal(all[0].epoch, 6);
  assert_int_equal(all[0].last_seq, 41);
  assert_int_equal(all[0].last_offset, 2);
  assert_int_equal(all[0].offset_delta, 1);
  assert_int_equal(all[0].last_ts, 123456);
  assert_int_equal(all[0].coordinator_epoch, 8);
  assert_int_equal(all[0].txn_first, 1);
  assert_int_equal(all[1].pid, 9);
  assert_int_equal(all[1].txn_first, 4);
  assert_int_equal(all[1].last_offset, 5);
  free(all);
  kl_txn_state_free(NULL, &st);
  kl_txns_free(NULL, &t);
  /* Without the snapshot, the markers: producer 7 committed (coordinator
  ** epoch 7 from its marker), 9 open. */
  assert_int_equal(unlink(path), 0);
  kl_txn_state st2 = {0};
  assert_int_equal(kl_txns_load_state(log, &rd, kl_log_start_offset(log), &t, &st2, &origin, &err), KL_OK);
  assert_int_equal(origin.snapshot, -1);
  kl_producer p7 = state_of(&st2, 7);
  assert_int_equal(p7.coordinator_epoch, 7);
  assert_int_equal(p7.txn_first, -1);
  assert_int_equal(p7.last_offset, 2);
  kl_txn_state_free(NULL, &st2);
  kl_txns_free(NULL, &t);
  kl_reader_free(&rd);
  kl_log_close(log);
  t_rmdir(dir);
  free(dir);
}

/* The producers Kafka's broker has after loading dir with log start start,
** by producer id into out (cap of them); OUT: the snapshot it loaded (-1:
** none). */
static size_t broker_producers(const char *dir, int64_t start, int64_t *snapshot,
                               kl_producer *out, size_t cap) {
  kl_log *log;
  kl_err err = {0};
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_txns t;
  kl_txn_state st = {0};
  kl_txn_origin origin;
  assert_int_equal(kl_txns_load_state(log, &rd, start, &t, &st, &origin, &err), KL_OK);
  *snapshot = origin.snapshot;
  kl_producer *all;
  size_t n;
  assert_int_equal(kl_txn_producers(NULL, &st, &all, &n), KL_OK);
  assert_true(n <= cap);
  if (n) memcpy(out, all, n * sizeof *all);
  free(all);
  kl_txn_state_free(NULL, &st);
  kl_txns_free(NULL, &t);
  kl_reader_free(&rd);
  kl_log_close(log);
  return n;
}

/* The ids (each below 100) of n producers as one number, two digits each:
** a short way to assert the whole set. */
static int64_t pids(const kl_producer *p, size_t n) {
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) v = v * 100 + p[i].pid;
  return v;
}

/* Kafka's loader (ProducerStateManager.truncateAndReload) deletes the
** snapshots above the log end and those at or below the log start, loads
** the newest left, or with none starts empty at the log start: the
** batches below it (a producer whose last batch lies there) are not
** read, the batch holding it is. */
static void test_broker_load_from_log_start(void **state) {
  (void)state;
  char *dir = t_mkdtemp("txnstart");
  kw_options o = {1, 4096, 0, KL_CODEC_NONE}; /* every batch rolls a segment */
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  assert_int_equal(kw_append_txn(w, 5, 2), 0);    /* 0-1 */
  assert_int_equal(kw_append_marker(w, 5, 1), 0); /* 2, COMMIT */
  assert_int_equal(kw_append_txn(w, 7, 3), 0);    /* 3-5 */
  assert_int_equal(kw_append_marker(w, 7, 1), 0); /* 6, COMMIT */
  assert_int_equal(kw_append_txn(w, 9, 2), 0);    /* 7-8, left open */
  assert_int_equal(kw_close(w), 0);
  kl_producer p[8];
  int64_t snap;
  /* No snapshot, log start at the first base: every producer. */
  assert_int_equal(broker_producers(dir, 0, &snap, p, 8), 3);
  assert_int_equal(snap, -1);
  assert_int_equal(pids(p, 3), 50709);
  /* Producers whose last batch is below the log start: not known. */
  assert_int_equal(broker_producers(dir, 3, &snap, p, 8), 2);
  assert_int_equal(pids(p, 2), 709);
  assert_int_equal(p[0].txn_first, -1);
  /* The log start inside a batch: the batch holding it is read whole. */
  assert_int_equal(broker_producers(dir, 4, &snap, p, 8), 2);
  assert_int_equal(pids(p, 2), 709);
  assert_int_equal(p[0].last_offset, 5);
  /* A snapshot below the log start (2, a segment's base) is not used. */
  put_snapshot(dir, 2, 42, -1, 0);
  assert_int_equal(broker_producers(dir, 3, &snap, p, 8), 2);
  assert_int_equal(snap, -1);
  assert_int_equal(pids(p, 2), 709);
  /* A snapshot at the log start is not used either; one above it is. */
  put_snapshot(dir, 3, 42, -1, 0);
  assert_int_equal(broker_producers(dir, 3, &snap, p, 8), 2);
  assert_int_equal(snap, -1);
  assert_int_equal(pids(p, 2), 709);
  assert_int_equal(broker_producers(dir, 2, &snap, p, 8), 3);
  assert_int_equal(snap, 3);
  assert_int_equal(pids(p, 3), 70942);
  /* A snapshot above the log end (a stray at 12, the log ending at 9) is
  ** not used: the one at 3 is. */
  put_snapshot(dir, 12, 11, -1, 0);
  assert_int_equal(broker_producers(dir, 0, &snap, p, 8), 3);
  assert_int_equal(snap, 3);
  assert_int_equal(pids(p, 3), 70942);
  /* Only snapshots above the log end and at the log start: none. */
  assert_int_equal(broker_producers(dir, 3, &snap, p, 8), 2);
  assert_int_equal(snap, -1);
  /* A read_committed reader's walk keeps learning from every snapshot:
  ** one at the log start knowing a transaction open since 1 holds the
  ** last stable offset there. */
  put_snapshot(dir, 3, 42, 1, 0);
  assert_int_equal(lso_of(dir), 1);
  t_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entry),
      cmocka_unit_test(test_aborted),
      cmocka_unit_test(test_last_stable_offset),
      cmocka_unit_test(test_several_snapshots),
      cmocka_unit_test(test_aborted_from_markers),
      cmocka_unit_test(test_producer_state),
      cmocka_unit_test(test_producer_state_from_snapshot),
      cmocka_unit_test(test_broker_load_from_log_start),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
