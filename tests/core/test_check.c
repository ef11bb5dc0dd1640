/*
** test_check.c - kl_check_dir through its C interface: findings on logs
** written by kwriter, the per-kind cap, a callback that stops the check,
** failing allocations, and regressions found by the fuzzers in core code.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "check.h"
#include "index.h"
#include "kwriter.h"

typedef struct found {
  char lines[64][160];
  int n;
  int stop_after;           /* return KL_BUSY after this many (0: never) */
} found;

static kl_rc collect(void *ud, const kl_finding *f) {
  found *fd = ud;
  if (fd->n < 64) {
    snprintf(fd->lines[fd->n], sizeof fd->lines[0], "%lld %s %lld %s %s", (long long)f->segment,
             f->file, (long long)f->position, f->kind, kl_severity_name(f->severity));
  }
  fd->n++;
  assert_non_null(strstr(f->message, f->file)); /* messages name their file */
  if (fd->stop_after && fd->n >= fd->stop_after) return KL_BUSY;
  return KL_OK;
}

/* A log of n single-record batches written like Kafka. */
static char *write_log(int n, int64_t segment_bytes) {
  return kw_make_log("check", n, 1, segment_bytes, 256, 0, 1700000000000, 1);
}

static void test_clean_log(void **state) {
  char *dir = write_log(200, 4096);
  found fd = {0};
  kl_err err = {0};
  assert_int_equal(kl_check_dir(NULL, dir, collect, &fd, &err), KL_OK);
  for (int i = 0; i < fd.n && i < 64; i++) print_message("  %s\n", fd.lines[i]);
  assert_int_equal(fd.n, 0);
  t_rmdir(dir);
  free(dir);
}

/* Every batch's CRC broken: KL_CHECK_MAX_PER_KIND findings, then one that
** counts the rest. */
static void test_cap_per_kind(void **state) {
  char *dir = write_log(60, 1 << 20);
  char path[600];
  snprintf(path, sizeof path, "%s/00000000000000000000.log", dir);
  size_t n;
  uint8_t *p = t_read_file(path, &n);
  int batches = 0;
  for (size_t pos = 0; pos + 61 <= n; pos += 12 + kl_get_u32(p + pos + 8), batches++) {
    p[pos + 50] ^= 1; /* producer id: CRC-covered */
  }
  assert_int_equal(t_write_file(path, p, n), 0);
  free(p);
  found fd = {0};
  kl_err err = {0};
  assert_int_equal(kl_check_dir(NULL, dir, collect, &fd, &err), KL_OK);
  if (fd.n != KL_CHECK_MAX_PER_KIND + 1) {
    for (int i = 0; i < fd.n && i < 64; i++) print_message("  %s\n", fd.lines[i]);
  }
  assert_int_equal(fd.n, KL_CHECK_MAX_PER_KIND + 1);
  assert_non_null(strstr(fd.lines[0], "00000000000000000000.log 0 crc_mismatch error"));
  assert_non_null(strstr(fd.lines[KL_CHECK_MAX_PER_KIND], "-1 crc_mismatch error"));
  /* A callback result other than KL_OK stops the check and is returned. */
  found stop = {.stop_after = 3};
  kl_err_clear(&err);
  assert_int_equal(kl_check_dir(NULL, dir, collect, &stop, &err), KL_BUSY);
  assert_int_equal(stop.n, 3);
  (void)batches;
  t_rmdir(dir);
  free(dir);
}

/* Allocation failures end the check with KL_NOMEM and leak nothing. */
static void test_nomem(void **state) {
  char *dir = write_log(50, 2048);
  int done = 0;
  for (long k = 1; k < 400 && !done; k++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, k);
    found fd = {0};
    kl_err err = {0};
    kl_rc rc = kl_check_dir(env, dir, collect, &fd, &err);
    assert_true(rc == KL_OK || rc == KL_NOMEM);
    assert_int_equal(fa.live, 0);
    if (rc == KL_OK) {
      assert_int_equal(fd.n, 0);
      done = 1;
    }
  }
  assert_true(done);
  t_rmdir(dir);
  free(dir);
}

/* Kafka's own sanity checks pass on a segment whose time index is the one
** entry (0, base) (its first record at the base offset with CreateTime 0,
** the entry written on roll) and whose offset index is the one entry
** (base, 0): twelve and eight zero bytes that are real entries, which the
** log confirms.  The check agrees: nothing to report.  The same zeros where
** the log does not confirm them are preallocated slots. */
static void test_zero_entries_are_real(void **state) {
  char *dir = t_mkdtemp("check-zero");
  kw_options o = {10, 4096, 0, 0}; /* a segment per batch */
  kw_writer *w = kw_open(dir, &o);
  for (int i = 0; i < 3; i++) {
    kl_rec_in r = {i == 0 ? 0 : 1000 + i, "k", 1, "v", 1, NULL, 0};
    assert_int_equal(kw_append(w, NULL, &r, 1), 0);
  }
  assert_int_equal(kw_close(w), 0);
  char path[4200];
  uint8_t z[8] = {0};
  snprintf(path, sizeof path, "%s/%020d.index", dir, 0);
  assert_int_equal(t_write_file(path, z, 8), 0);
  found fd = {0};
  kl_err err = {0};
  assert_int_equal(kl_check_dir(NULL, dir, collect, &fd, &err), KL_OK);
  for (int i = 0; i < fd.n; i++) print_message("  %s\n", fd.lines[i]);
  assert_int_equal(fd.n, 0);
  /* Segment 1 (record timestamp 1001): the same zeros are no entries. */
  snprintf(path, sizeof path, "%s/%020d.timeindex", dir, 1);
  uint8_t zz[24] = {0};
  assert_int_equal(t_write_file(path, zz, 24), 0);
  memset(&fd, 0, sizeof fd);
  assert_int_equal(kl_check_dir(NULL, dir, collect, &fd, &err), KL_OK);
  assert_true(fd.n >= 1);
  assert_non_null(strstr(fd.lines[0], "1 00000000000000000001.timeindex 0 preallocated_index_slots warning"));
  t_rmdir(dir);
  free(dir);
}

static void test_missing_dir(void **state) {
  found fd = {0};
  kl_err err = {0};
  assert_int_equal(kl_check_dir(NULL, "/nonexistent/kafkalog", collect, &fd, &err), KL_IO);
  assert_non_null(strstr(err.msg, "/nonexistent/kafkalog"));
}

/* fuzz_index: kl_index_ceiling of a key equal to slot 0 answered slot 1. */
static void test_ceiling_equal_first(void **state) {
  uint8_t p[24];
  for (int i = 0; i < 3; i++) {
    kl_put_u32(p + i * 8, (uint32_t)(10 * (i + 1)));
    kl_put_u32(p + i * 8 + 4, (uint32_t)(100 * (i + 1)));
  }
  kl_index ix;
  memset(&ix, 0, sizeof ix);
  ix.kind = KL_INDEX_OFFSET;
  ix.map = p;
  ix.map_len = sizeof p;
  ix.n = kl_index_count(KL_INDEX_OFFSET, p, sizeof p, 0, 1000, &ix.zero_slots);
  assert_int_equal(ix.n, 3);
  assert_int_equal(kl_index_ceiling(&ix, 10, NULL), 0);
  assert_int_equal(kl_index_ceiling(&ix, 5, NULL), 0);
  assert_int_equal(kl_index_ceiling(&ix, 11, NULL), 1);
  assert_int_equal(kl_index_ceiling(&ix, 30, NULL), 2);
  assert_int_equal(kl_index_ceiling(&ix, 31, NULL), -1);
  ix.n = 1;
  assert_int_equal(kl_index_ceiling(&ix, 10, NULL), 0);
}

/* fuzz_sql: a batch whose last offset is INT64_MAX overflowed "last + 1"
** in the segment's tail scan.  Such a batch is now corrupt. */
static void test_last_offset_max(void **state) {
  kl_rec_in r = {1700000000000, "k", 1, "v", 1, NULL, 0};
  kl_batch_spec spec = {0};
  spec.producer_id = -1;
  spec.leader_epoch = -1;
  spec.base_sequence = -1;
  for (int k = 0; k < 2; k++) {
    kl_buf out = {0};
    kl_err err = {0};
    spec.base_offset = INT64_MAX - k;
    assert_int_equal(kl_batch_encode(NULL, &spec, &r, 1, &out, &err), KL_OK);
    kl_batch b;
    b.position = 0;
    assert_int_equal(kl_batch_parse(out.p, out.len, &b, &err), k == 0 ? KL_CORRUPT : KL_OK);
    kl_buf_free(NULL, &out);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clean_log),
      cmocka_unit_test(test_cap_per_kind),
      cmocka_unit_test(test_nomem),
      cmocka_unit_test(test_missing_dir),
      cmocka_unit_test(test_zero_entries_are_real),
      cmocka_unit_test(test_ceiling_equal_first),
      cmocka_unit_test(test_last_offset_max),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
