/*
** test_check.c - kl_check_dir through its C interface: findings on logs
** written by kwriter, the per-kind cap, a callback that stops the check,
** failing allocations, the .txnindex against the log's markers, control
** records Kafka rejects, and regressions found by the fuzzers in core code.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void test_clean_log(void **state) {
  char *dir = kw_make_log_single("check", 200, 4096);
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
  char *dir = kw_make_log_single("check", 60, 1 << 20);
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
  char *dir = kw_make_log_single("check", 50, 2048);
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
  assert_int_equal(kl_check_dir(NULL, "/nonexistent/kafkalog", collect, &fd, &err), KL_CANTOPEN);
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


/* A segment named near 2^63 whose last index entry's relative offset takes
** it past INT64_MAX: one finding at that entry, naming the file, no
** overflow. */
static void test_index_entry_past_2_63(void **state) {
  char *dir = t_mkdtemp("check-top");
  kw_options o = {1 << 20, 64, INT64_C(9223372036854775000), 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  for (int i = 0; i < 40; i++) {
    kl_rec_in r = {1700000000000 + i, "k", 1, "v", 1, NULL, 0};
    assert_int_equal(kw_append(w, NULL, &r, 1), 0);
  }
  assert_int_equal(kw_close(w), 0);
  char path[600];
  snprintf(path, sizeof path, "%s/09223372036854775000.index", dir);
  size_t n;
  free(t_read_file(path, &n));
  assert_true(n >= 16);
  t_poke32(path, (int64_t)n - 8, 1000); /* base + 1000 > INT64_MAX */
  found fd = {0};
  kl_err err = {0};
  assert_int_equal(kl_check_dir(NULL, dir, collect, &fd, &err), KL_OK);
  for (int i = 0; i < fd.n && i < 64; i++) print_message("  %s\n", fd.lines[i]);
  char want[160];
  snprintf(want, sizeof want, "9223372036854775000 09223372036854775000.index %lld "
           "index_entry_mismatch warning", (long long)n - 8);
  assert_int_equal(fd.n, 1);
  assert_string_equal(fd.lines[0], want);
  t_rmdir(dir);
  free(dir);
}

/* ---- transactions ---- */

enum { ABORT = 0, COMMIT = 1, P1 = 1000, P2 = 1001 };

/* Two producers' transactions, committed and aborted, interleaved with
** plain batches in segments of about 700 bytes, so that transactions begin
** segments before their markers; one ABORT marker closes no transaction
** (Kafka indexes none for it).  kwriter writes each ABORT's .txnindex entry
** as the broker does. */
static char *write_txn_log(void) {
  char *dir = t_mkdtemp("check-txn");
  kw_options o = {700, 256, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  kl_rec_in plain = {1700000000000, "k", 1, "plain", 5, NULL, 0};
  for (int round = 0; round < 8; round++) {
    assert_int_equal(kw_append_txn(w, P1, 2), 0);
    assert_int_equal(kw_append_txn(w, P2, 1), 0);
    assert_int_equal(kw_append(w, NULL, &plain, 1), 0);
    assert_int_equal(kw_append_txn(w, P1, 1), 0);
    assert_int_equal(kw_append(w, NULL, &plain, 1), 0);
    assert_int_equal(kw_append_txn(w, P2, 3), 0);
    assert_int_equal(kw_append_marker(w, P1, round % 2 ? COMMIT : ABORT), 0);
    assert_int_equal(kw_append(w, NULL, &plain, 1), 0);
    assert_int_equal(kw_append_marker(w, P2, round % 3 ? ABORT : COMMIT), 0);
  }
  assert_int_equal(kw_append_marker(w, P1, ABORT), 0); /* no open transaction */
  assert_int_equal(kw_append(w, NULL, &plain, 1), 0);
  assert_int_equal(kw_close(w), 0);
  return dir;
}

/* The .txnindex files of dir, with their entry counts, in base order. */
typedef struct txn_files {
  char path[16][600];
  int64_t base[16];
  int entries[16];
  int n;
} txn_files;

static int cmp_path(const void *a, const void *b) { return strcmp(a, b); }

static void list_txn(const char *dir, txn_files *t) {
  memset(t, 0, sizeof *t);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *dot = strchr(de->d_name, '.');
    if (!dot || strcmp(dot, ".txnindex") || t->n == 16) continue;
    snprintf(t->path[t->n++], sizeof t->path[0], "%s/%s", dir, de->d_name);
  }
  closedir(d);
  qsort(t->path, (size_t)t->n, sizeof t->path[0], cmp_path);
  for (int i = 0; i < t->n; i++) {
    const char *name = strrchr(t->path[i], '/') + 1;
    t->base[i] = strtoll(name, NULL, 10);
    size_t len;
    free(t_read_file(t->path[i], &len));
    t->entries[i] = (int)(len / 34);
  }
}

static found check(const char *dir) {
  found fd = {0};
  kl_err err = {0};
  assert_int_equal(kl_check_dir(NULL, dir, collect, &fd, &err), KL_OK);
  return fd;
}

static void print_found(const found *fd) {
  for (int i = 0; i < fd->n && i < 64; i++) print_message("  %s\n", fd->lines[i]);
}

/* A .txnindex with at least two entries (the first such). */
static int txn_file_with_entries(const txn_files *t) {
  for (int i = 0; i < t->n; i++) {
    if (t->entries[i] >= 2) return i;
  }
  fail_msg("no .txnindex with two entries");
  return -1;
}

/* The log as written checks clean; some aborted transaction began in an
** earlier segment than its marker's, and the index says so. */
static void test_txn_clean(void **state) {
  char *dir = write_txn_log();
  txn_files t;
  list_txn(dir, &t);
  assert_true(t.n >= 3);
  int spanning = 0, total = 0;
  for (int i = 0; i < t.n; i++) {
    size_t len;
    uint8_t *p = t_read_file(t.path[i], &len);
    for (size_t k = 0; k + 34 <= len; k += 34) {
      total++;
      if (kl_get_i64(p + k + 10) < t.base[i]) spanning++;
    }
    free(p);
  }
  assert_true(spanning >= 1);
  assert_true(total >= 8);
  found fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, 0);
  /* An empty .txnindex where there are no aborts is clean too (Kafka may
  ** leave one after recovery). */
  char path[600];
  snprintf(path, sizeof path, "%s/%020d.txnindex", dir, 0);
  if (access(path, F_OK) != 0) {
    assert_int_equal(t_write_file(path, "", 0), 0);
    fd = check(dir);
    print_found(&fd);
    assert_int_equal(fd.n, 0);
  }
  t_rmdir(dir);
  free(dir);
}

/* Half the entries cut off: each lost one is a missing entry, where it
** belongs in the file. */
static void test_txn_truncated(void **state) {
  char *dir = write_txn_log();
  txn_files t;
  list_txn(dir, &t);
  int i = txn_file_with_entries(&t);
  int n = t.entries[i], keep = n / 2;
  size_t len;
  uint8_t *p = t_read_file(t.path[i], &len);
  assert_int_equal(t_write_file(t.path[i], p, (size_t)keep * 34), 0);
  free(p);
  found fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, n - keep);
  char want[160];
  snprintf(want, sizeof want, "%lld %020lld.txnindex %d txnindex_missing_entry warning",
           (long long)t.base[i], (long long)t.base[i], keep * 34);
  for (int k = 0; k < fd.n; k++) assert_string_equal(fd.lines[k], want);
  t_rmdir(dir);
  free(dir);
}

/* The file absent where the segment has aborts: every entry is missing. */
static void test_txn_absent(void **state) {
  char *dir = write_txn_log();
  txn_files t;
  list_txn(dir, &t);
  int i = txn_file_with_entries(&t);
  assert_int_equal(unlink(t.path[i]), 0);
  found fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, t.entries[i]);
  char want[160];
  snprintf(want, sizeof want, "%lld %020lld.txnindex -1 txnindex_missing_entry warning",
           (long long)t.base[i], (long long)t.base[i]);
  for (int k = 0; k < fd.n; k++) assert_string_equal(fd.lines[k], want);
  t_rmdir(dir);
  free(dir);
}

/* An entry with no marker behind it (an offset after the last marker of
** the file's), a wrong first offset, a wrong producer. */
static void test_txn_wrong_entries(void **state) {
  char *dir = write_txn_log();
  txn_files t;
  list_txn(dir, &t);
  int i = txn_file_with_entries(&t);
  int n = t.entries[i];
  size_t len;
  uint8_t *orig = t_read_file(t.path[i], &len);
  uint8_t *p = malloc(len + 34);
  char want[160];

  /* extra: the last entry again, one offset later (a plain batch's) */
  memcpy(p, orig, len);
  memcpy(p + len, orig + len - 34, 34);
  int64_t last = kl_get_i64(p + len + 18);
  kl_put_u64(p + len + 18, (uint64_t)(last + 1));
  assert_int_equal(t_write_file(t.path[i], p, len + 34), 0);
  found fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, 1);
  snprintf(want, sizeof want, "%lld %020lld.txnindex %d txnindex_extra_entry warning",
           (long long)t.base[i], (long long)t.base[i], n * 34);
  assert_string_equal(fd.lines[0], want);

  /* first offset one past the transaction's first batch */
  memcpy(p, orig, len);
  kl_put_u64(p + 10, (uint64_t)(kl_get_i64(p + 10) + 1));
  assert_int_equal(t_write_file(t.path[i], p, len), 0);
  fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, 1);
  snprintf(want, sizeof want, "%lld %020lld.txnindex 0 txnindex_entry_mismatch warning",
           (long long)t.base[i], (long long)t.base[i]);
  assert_string_equal(fd.lines[0], want);

  /* first offset at or before the producer's previous marker: the entry
  ** would hide records of an earlier transaction */
  memcpy(p, orig, len);
  kl_put_u64(p + 10, 0);
  assert_int_equal(t_write_file(t.path[i], p, len), 0);
  fd = check(dir);
  print_found(&fd);
  if (t.base[i] > 0) {
    assert_int_equal(fd.n, 1);
    assert_string_equal(fd.lines[0], want);
  }

  /* the other producer */
  memcpy(p, orig, len);
  kl_put_u64(p + 2, (uint64_t)(kl_get_i64(p + 2) == P1 ? P2 : P1));
  assert_int_equal(t_write_file(t.path[i], p, len), 0);
  fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, 1);
  assert_string_equal(fd.lines[0], want);

  /* back as written: clean */
  assert_int_equal(t_write_file(t.path[i], orig, len), 0);
  fd = check(dir);
  assert_int_equal(fd.n, 0);
  free(p);
  free(orig);
  t_rmdir(dir);
  free(dir);
}

/* Positions of the control batches of a .log. */
static int control_positions(const char *path, int64_t *pos, int max) {
  size_t n;
  uint8_t *p = t_read_file(path, &n);
  assert_non_null(p);
  int k = 0;
  size_t at = 0;
  kl_batch b;
  kl_err err = {0};
  while (at < n && kl_batch_parse(p + at, n - at, &b, &err) == KL_OK) {
    if (b.is_control && k < max) pos[k++] = (int64_t)at;
    at += (size_t)b.size;
  }
  free(p);
  return k;
}

/* Control records Kafka rejects, each an error at its batch: value version
** -1, a 5-byte value, a null value, a 3-byte key.  A newer version with
** extra bytes and an unknown type are accepted, as Kafka accepts them. */
static void test_bad_control_records(void **state) {
  uint8_t key[4] = {0, 0, 0, ABORT}, key3[3] = {0, 0, 0};
  uint8_t neg[6] = {0xff, 0xff, 0, 0, 0, 1}, five[5] = {0, 0, 0, 0, 1};
  uint8_t newer_key[6] = {0, 3, 0, COMMIT, 9, 9}, newer_val[8] = {0, 2, 0, 0, 0, 1, 7, 7};
  uint8_t unknown[4] = {0, 0, 0x01, 0x51};
  kw_options o = {1 << 20, 4096, 0, 0};
  char *dir = t_mkdtemp("check-ctl");
  kw_writer *w = kw_open(dir, &o);
  assert_int_equal(kw_append_txn(w, P1, 1), 0);
  assert_int_equal(kw_append_control(w, P1, newer_key, 6, newer_val, 8), 0);
  assert_int_equal(kw_append_control(w, P1, unknown, 4, NULL, -1), 0);
  assert_int_equal(kw_append_txn(w, P1, 1), 0);
  assert_int_equal(kw_append_marker(w, P1, ABORT), 0);
  assert_int_equal(kw_close(w), 0);
  found fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, 0);
  t_rmdir(dir);
  free(dir);

  dir = t_mkdtemp("check-ctl");
  w = kw_open(dir, &o);
  assert_int_equal(kw_append_txn(w, P1, 1), 0);
  assert_int_equal(kw_append_control(w, P1, key, 4, neg, 6), 0);
  assert_int_equal(kw_append_txn(w, P1, 1), 0);
  assert_int_equal(kw_append_control(w, P1, key, 4, five, 5), 0);
  assert_int_equal(kw_append_txn(w, P1, 1), 0);
  assert_int_equal(kw_append_control(w, P1, key, 4, NULL, -1), 0);
  assert_int_equal(kw_append_txn(w, P1, 1), 0);
  assert_int_equal(kw_append_control(w, P1, key3, 3, neg + 2, 4), 0);
  assert_int_equal(kw_close(w), 0);
  char path[600];
  snprintf(path, sizeof path, "%s/%020d.log", dir, 0);
  int64_t pos[8];
  assert_int_equal(control_positions(path, pos, 8), 4);
  fd = check(dir);
  print_found(&fd);
  assert_int_equal(fd.n, 4);
  for (int k = 0; k < 4; k++) {
    char want[160];
    snprintf(want, sizeof want, "0 %020d.log %lld bad_control_record error", 0, (long long)pos[k]);
    assert_string_equal(fd.lines[k], want);
  }
  t_rmdir(dir);
  free(dir);
}

/* Allocation failures in the producer tables end the check with KL_NOMEM
** and leak nothing. */
static void test_txn_nomem(void **state) {
  char *dir = write_txn_log();
  int done = 0;
  for (long k = 1; k < 2000 && !done; k++) {
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clean_log),
      cmocka_unit_test(test_cap_per_kind),
      cmocka_unit_test(test_nomem),
      cmocka_unit_test(test_missing_dir),
      cmocka_unit_test(test_zero_entries_are_real),
      cmocka_unit_test(test_ceiling_equal_first),
      cmocka_unit_test(test_last_offset_max),
      cmocka_unit_test(test_index_entry_past_2_63),
      cmocka_unit_test(test_txn_clean),
      cmocka_unit_test(test_txn_truncated),
      cmocka_unit_test(test_txn_absent),
      cmocka_unit_test(test_txn_wrong_entries),
      cmocka_unit_test(test_bad_control_records),
      cmocka_unit_test(test_txn_nomem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
