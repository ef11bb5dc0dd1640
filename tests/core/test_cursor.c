/*
** test_cursor.c - bounded iteration over a log, forward and backward,
** against a brute-force reference (every record of every non-control batch,
** decoded straight from the .log files) for thousands of random bounds on
** logs of many segments, mixed codecs, LogAppendTime and transactional
** batches with COMMIT markers; without index files; empty logs and bounds
** outside the log; allocation failure at every allocation; and the work
** counters that prove pushdown (a point lookup touches one segment, a
** descending scan decodes only the last batch before its first record).
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "builder.h"
#include "codec.h"
#include "cursor.h"
#include "kwriter.h"
#include "log.h"

/* FNV-1a of a key/value, -1 for NULL: records compare by content. */
static uint64_t hash_bytes(const uint8_t *p, int32_t n) {
  if (n < 0) return (uint64_t)-1;
  uint64_t h = 1469598103934665603ull;
  for (int32_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

typedef struct rec {
  int64_t offset, ts;
  uint64_t key, value;
} rec;
typedef struct recs {
  rec *r;
  size_t n, cap;
} recs;

static void push(recs *a, const kl_record *r) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 256;
    a->r = realloc(a->r, a->cap * sizeof *a->r);
    assert_non_null(a->r);
  }
  rec e = {r->offset, r->timestamp, hash_bytes(r->key, r->key_len),
           hash_bytes(r->value, r->value_len)};
  a->r[a->n++] = e;
}

/* The reference: every data record, in offset order, from the files. */
static void scan_all(const char *dir, recs *out) {
  kl_log *log = NULL;
  kl_err err = {0};
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  kl_buf scratch = {0};
  out->n = 0;
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    size_t n;
    uint8_t *file = t_read_file(s->log_path, &n);
    assert_non_null(file);
    size_t pos = 0;
    for (;;) {
      kl_batch b;
      b.position = (int64_t)pos;
      if (kl_batch_parse(file + pos, n - pos, &b, &err) != KL_OK) break;
      pos += (size_t)b.size;
      if (b.is_control) continue;
      kl_records it;
      kl_record r;
      assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
      while (kl_records_next(&it, &r, &err) == KL_OK) push(out, &r);
    }
    free(file);
  }
  kl_buf_free(NULL, &scratch);
  kl_log_close(log);
}

/* Run the cursor with bounds bd; the records it produced go to out. */
static kl_rc run_cursor(kl_log *log, const kl_bounds *bd, recs *out, kl_err *err) {
  kl_cursor *c = NULL;
  out->n = 0;
  kl_rc rc = kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c);
  if (rc != KL_OK) return rc;
  rc = kl_cursor_start(c, bd, err);
  while (rc == KL_OK) {
    rc = kl_cursor_next(c, err);
    if (rc == KL_OK) rc = kl_cursor_load(c, err);
    if (rc == KL_OK) {
      push(out, kl_cursor_record(c));
      assert_non_null(kl_cursor_batch(c));
      assert_non_null(kl_cursor_segment(c));
      assert_false(kl_cursor_batch(c)->is_control);
    }
  }
  kl_cursor_free(c);
  return rc == KL_DONE ? KL_OK : rc;
}

static int in_bounds(const rec *r, const kl_bounds *b) {
  return r->offset >= b->off_lo && r->offset <= b->off_hi && r->ts >= b->ts_lo &&
         r->ts <= b->ts_hi;
}

/* The cursor's records equal the reference filtered by bd, in order. */
static void check_bounds(kl_log *log, const recs *all, const kl_bounds *bd) {
  static recs got;
  kl_err err = {0};
  kl_rc rc = run_cursor(log, bd, &got, &err);
  if (rc != KL_OK) fail_msg("cursor: %s %s", kl_rc_name(rc), err.msg);
  size_t k = 0;
  for (size_t j = 0; j < all->n; j++) {
    const rec *want = &all->r[bd->desc ? all->n - 1 - j : j];
    if (!in_bounds(want, bd)) continue;
    if (k >= got.n || got.r[k].offset != want->offset || got.r[k].ts != want->ts ||
        got.r[k].key != want->key || got.r[k].value != want->value) {
      fail_msg("bounds off [%lld, %lld] ts [%lld, %lld] %s: record %zu is %lld, want %lld",
               (long long)bd->off_lo, (long long)bd->off_hi, (long long)bd->ts_lo,
               (long long)bd->ts_hi, bd->desc ? "desc" : "asc", k,
               k < got.n ? (long long)got.r[k].offset : -1LL, (long long)want->offset);
    }
    k++;
  }
  if (k != got.n) {
    fail_msg("bounds off [%lld, %lld] ts [%lld, %lld] %s: %zu records, want %zu",
             (long long)bd->off_lo, (long long)bd->off_hi, (long long)bd->ts_lo,
             (long long)bd->ts_hi, bd->desc ? "desc" : "asc", got.n, k);
  }
}

/* Random bounds: each side open or a value in (or just outside) range. */
static kl_bounds random_bounds(uint64_t *seed, int64_t olo, int64_t ohi, int64_t tlo, int64_t thi) {
  kl_bounds b = kl_bounds_all();
  uint64_t x = t_rand(seed);
  int64_t ospan = ohi - olo + 11, tspan = thi - tlo + 41;
  if (x & 1) b.off_lo = olo - 5 + (int64_t)(t_rand(seed) % (uint64_t)ospan);
  if (x & 2) b.off_hi = olo - 5 + (int64_t)(t_rand(seed) % (uint64_t)ospan);
  if ((x & 12) == 4) b.off_hi = b.off_lo; /* point lookups */
  if (x & 16) b.ts_lo = tlo - 20 + (int64_t)(t_rand(seed) % (uint64_t)tspan);
  if (x & 32) b.ts_hi = tlo - 20 + (int64_t)(t_rand(seed) % (uint64_t)tspan);
  if ((x & 64) && b.ts_lo != INT64_MIN) b.ts_hi = b.ts_lo + (int64_t)(t_rand(seed) % 300);
  b.desc = (x >> 7) & 1;
  return b;
}

/* ---- logs ---- */

static int64_t g_commit_count;

enum { MOST = 400 }; /* records in a batch, at most */

/* A log of n batches: codecs rotate, every 7th batch is LogAppendTime,
** runs of transactional batches end with a COMMIT marker, timestamps
** jitter (non-monotonic), values vary in size. */
static void write_log_of(const char *dir, int n, int most, int64_t seg_bytes, int64_t interval,
                         int64_t base, uint64_t seed) {
  kw_options o;
  o.segment_bytes = seg_bytes;
  o.index_interval = interval;
  o.base_offset = base;
  o.codec = KL_CODEC_NONE;
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  static char vals[MOST][200];
  g_commit_count = 0;
  for (int b = 0; b < n; b++) {
    static kl_rec_in r[MOST];
    int cnt = 1 + (int)(t_rand(&seed) % (uint64_t)most);
    for (int i = 0; i < cnt; i++) {
      int64_t off = kw_next_offset(w) + i;
      int len = snprintf(vals[i], sizeof vals[i], "v%lld-", (long long)off);
      int pad = (int)(t_rand(&seed) % 150);
      memset(vals[i] + len, 'a' + (int)(off % 26), (size_t)pad);
      memset(&r[i], 0, sizeof r[i]);
      r[i].timestamp = 10000 + 10 * off + (int64_t)(t_rand(&seed) % 300) - 150;
      r[i].key = (t_rand(&seed) % 5) ? "key" : NULL;
      r[i].key_len = r[i].key ? 3 : -1;
      r[i].value = vals[i];
      r[i].value_len = len + pad;
    }
    kl_batch_spec s;
    memset(&s, 0, sizeof s);
    s.leader_epoch = 0;
    s.producer_id = -1;
    s.producer_epoch = -1;
    s.base_sequence = -1;
    s.codec = b % 5;
    if (b % 7 == 3) {
      s.log_append_time = 1;
      s.append_time = 10000 + 10 * kw_next_offset(w) + 5;
    }
    int txn = (b / 4) % 3 == 1;
    if (txn) {
      s.producer_id = 1000;
      s.producer_epoch = 0;
      s.base_sequence = b;
      s.transactional = 1;
    }
    assert_int_equal(kw_append(w, &s, r, cnt), 0);
    if (txn && b % 4 == 3) {
      static const uint8_t mkey[4] = {0, 0, 0, 1}, mval[6] = {0, 0, 0, 0, 0, 5};
      kl_rec_in m = {10000 + 10 * kw_next_offset(w), mkey, 4, mval, 6, NULL, 0};
      kl_batch_spec c = s;
      c.codec = KL_CODEC_NONE;
      c.log_append_time = 0;
      c.base_sequence = -1;
      c.control = 1;
      assert_int_equal(kw_append(w, &c, &m, 1), 0);
      g_commit_count++;
    }
  }
  assert_int_equal(kw_close(w), 0);
}

/* n batches of 1 to 6 records. */
static void write_mixed_log(const char *dir, int n, int64_t seg_bytes, int64_t interval,
                            int64_t base, uint64_t seed) {
  write_log_of(dir, n, 6, seg_bytes, interval, base, seed);
}

static kl_log *open_log(const char *dir, const kl_env *env) {
  kl_log *log = NULL;
  kl_err err = {0};
  kl_rc rc = kl_log_open(env, dir, &log, &err);
  if (rc != KL_OK) fail_msg("open %s: %s %s", dir, kl_rc_name(rc), err.msg);
  return log;
}

static void remove_indexes(const char *dir) {
  kl_log *log = open_log(dir, NULL);
  char path[4096];
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    size_t len = strlen(s->log_path);
    snprintf(path, sizeof path, "%.*s.index", (int)(len - 4), s->log_path);
    unlink(path);
    snprintf(path, sizeof path, "%.*s.timeindex", (int)(len - 4), s->log_path);
    unlink(path);
  }
  kl_log_close(log);
}

/* Thousands of random bounds on one directory. */
static void random_bounds_on(const char *dir, int iterations, uint64_t seed) {
  recs all = {0};
  scan_all(dir, &all);
  assert_true(all.n > 0);
  int64_t tlo = INT64_MAX, thi = INT64_MIN;
  for (size_t i = 0; i < all.n; i++) {
    if (all.r[i].ts < tlo) tlo = all.r[i].ts;
    if (all.r[i].ts > thi) thi = all.r[i].ts;
  }
  kl_log *log = open_log(dir, NULL);
  kl_bounds b = kl_bounds_all();
  check_bounds(log, &all, &b);
  b.desc = 1;
  check_bounds(log, &all, &b);
  for (int i = 0; i < iterations; i++) {
    b = random_bounds(&seed, all.r[0].offset, all.r[all.n - 1].offset, tlo, thi);
    check_bounds(log, &all, &b);
  }
  kl_log_close(log);
  free(all.r);
}

/* ---------------------------------------------------------------------- */

/*
** The cursor equals the brute-force reference for 3000 random bounds
** (offset and timestamp, open or closed, point lookups, asc and desc) on a
** 12+ segment log with every codec, LogAppendTime batches, transactional
** batches and COMMIT markers (never produced), non-monotonic timestamps.
*/
/*
** Windows on timestamps once every batch has decoded, with no record
** timestamps kept (a set over its budget, as a log directory of millions
** of records is): rows are counted from the batch headers and from the
** edge batches' timestamps read from their bytes, no record decoded, and
** they are the reference's; loaded, each row is the reference's record.
*/
static void test_windows_without_kept_timestamps(void **state) {
  char *dir = t_mkdtemp("cur-times");
  write_mixed_log(dir, 300, 4000, 300, 0, 46);
  recs all = {0};
  scan_all(dir, &all);
  int64_t tlo = INT64_MAX, thi = INT64_MIN;
  for (size_t i = 0; i < all.n; i++) {
    if (all.r[i].ts < tlo) tlo = all.r[i].ts;
    if (all.r[i].ts > thi) thi = all.r[i].ts;
  }
  kl_segset set;
  kl_segset_init(&set, 0);
  set.max_ts_bytes = 0;
  kl_log *log = NULL;
  kl_err err = {0};
  assert_int_equal(kl_log_open_in(NULL, dir, &set, &log, &err), KL_OK);
  kl_bounds b = kl_bounds_all();
  check_bounds(log, &all, &b); /* every batch decodes once */
  assert_int_equal(set.ts_bytes, 0);
  uint64_t seed = 7;
  kl_stats st = {0};
  for (int i = 0; i < 400; i++) {
    b = kl_bounds_all();
    b.ts_lo = tlo + (int64_t)(t_rand(&seed) % (uint64_t)(thi - tlo + 1));
    b.ts_hi = b.ts_lo + (int64_t)(t_rand(&seed) % (uint64_t)((thi - tlo) / 20 + 1));
    size_t want = 0;
    for (size_t j = 0; j < all.n; j++) want += in_bounds(&all.r[j], &b);
    kl_cursor *c = NULL;
    assert_int_equal(kl_cursor_new(log, &st, KL_ON_CORRUPT_ERROR, &c), KL_OK);
    assert_int_equal(kl_cursor_start(c, &b, &err), KL_OK);
    size_t n = 0;
    kl_rc rc;
    while ((rc = kl_cursor_next(c, &err)) == KL_OK) n++;
    assert_int_equal(rc, KL_DONE);
    kl_cursor_free(c);
    if (n != want) fail_msg("window [%lld, %lld]: %zu rows, want %zu", (long long)b.ts_lo,
                            (long long)b.ts_hi, n, want);
    check_bounds(log, &all, &b);
  }
  assert_int_equal(st.records_decoded, 0);
  assert_true(st.bytes_read > 0); /* the edge batches were read */
  kl_log_close(log);
  free(all.r);
  t_rmdir(dir);
  free(dir);
}

static void test_random_bounds(void **state) {
  char *dir = t_mkdtemp("cur-random");
  write_mixed_log(dir, 300, 4000, 300, 0, 42);
  assert_true(g_commit_count > 5);
  kl_log *log = open_log(dir, NULL);
  assert_true(kl_log_segment_count(log) >= 12);
  kl_log_close(log);
  random_bounds_on(dir, 3000, 1);
  t_rmdir(dir);
  free(dir);
}

/* The same with a dense index (every batch) and offsets above 2^32. */
static void test_random_bounds_dense_index(void **state) {
  char *dir = t_mkdtemp("cur-dense");
  write_mixed_log(dir, 200, 2500, 0, INT64_C(6000000000), 43);
  random_bounds_on(dir, 1500, 2);
  t_rmdir(dir);
  free(dir);
}

/*
** Index files may be missing (Kafka >= 2.3 creates them lazily): forward
** and, above all, backward iteration still produce exactly the reference.
*/
static void test_no_index_files(void **state) {
  char *dir = t_mkdtemp("cur-noidx");
  write_mixed_log(dir, 200, 5000, 200, 0, 44);
  remove_indexes(dir);
  random_bounds_on(dir, 1500, 3);
  t_rmdir(dir);
  free(dir);
}

/*
** Bounds outside the log, empty ranges and inverted ranges produce
** nothing; an empty directory and a log of one empty segment produce
** nothing either way.
*/
static void test_empty_and_outside(void **state) {
  char *dir = t_mkdtemp("cur-outside");
  write_mixed_log(dir, 40, 3000, 200, 100, 45);
  recs all = {0};
  scan_all(dir, &all);
  int64_t first = all.r[0].offset, last = all.r[all.n - 1].offset;
  kl_log *log = open_log(dir, NULL);
  static const int64_t B[][4] = {
      {0, 99, INT64_MIN, INT64_MAX},       /* below the log */
      {INT64_MIN, 50, INT64_MIN, INT64_MAX},
      {1000000, INT64_MAX, INT64_MIN, INT64_MAX}, /* above */
      {INT64_MIN, INT64_MAX, INT64_MAX - 1, INT64_MAX}, /* after every timestamp */
      {INT64_MIN, INT64_MAX, INT64_MIN, 0},        /* before every timestamp */
      {120, 110, INT64_MIN, INT64_MAX},            /* inverted */
      {INT64_MIN, INT64_MAX, 20000, 10000},        /* inverted */
  };
  for (size_t i = 0; i < sizeof B / sizeof B[0]; i++) {
    for (int desc = 0; desc < 2; desc++) {
      kl_bounds b = {B[i][0], B[i][1], B[i][2], B[i][3], desc, -1, NULL};
      recs got = {0};
      kl_err err = {0};
      assert_int_equal(run_cursor(log, &b, &got, &err), KL_OK);
      if (got.n) fail_msg("bounds %zu %s: %zu records", i, desc ? "desc" : "asc", got.n);
      free(got.r);
      check_bounds(log, &all, &b);
    }
  }
  /* The extreme ends: exactly the first and the last record. */
  for (int desc = 0; desc < 2; desc++) {
    kl_bounds b = {first, first, INT64_MIN, INT64_MAX, desc, -1, NULL};
    check_bounds(log, &all, &b);
    b.off_lo = b.off_hi = last;
    check_bounds(log, &all, &b);
  }
  kl_log_close(log);
  free(all.r);
  t_rmdir(dir);
  free(dir);

  dir = t_mkdtemp("cur-empty");
  for (int round = 0; round < 2; round++) {
    if (round == 1) {
      char path[4096];
      snprintf(path, sizeof path, "%s/00000000000000000000.log", dir);
      assert_int_equal(t_write_file(path, "", 0), 0);
    }
    log = open_log(dir, NULL);
    for (int desc = 0; desc < 2; desc++) {
      kl_bounds b = kl_bounds_all();
      b.desc = desc;
      recs got = {0};
      kl_err err = {0};
      assert_int_equal(run_cursor(log, &b, &got, &err), KL_OK);
      assert_int_equal(got.n, 0);
      b.ts_lo = 5;
      assert_int_equal(run_cursor(log, &b, &got, &err), KL_OK);
      assert_int_equal(got.n, 0);
      free(got.r);
    }
    kl_log_close(log);
  }
  t_rmdir(dir);
  free(dir);
}

/* A run through the API with a failing allocator: open, cursor, iterate
** (asc with a time bound, then desc), close.  Returns the first error. */
static kl_rc nomem_scenario(const char *dir, const kl_env *env, size_t *produced) {
  kl_log *log = NULL;
  kl_err err = {0};
  *produced = 0;
  kl_rc rc = kl_log_open(env, dir, &log, &err);
  if (rc != KL_OK) {
    assert_null(log);
    return rc;
  }
  kl_cursor *c = NULL;
  rc = kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c);
  for (int desc = 0; desc < 2 && rc == KL_OK; desc++) {
    kl_bounds b = kl_bounds_all();
    b.desc = desc;
    if (!desc) b.ts_lo = 10500;
    kl_err e = {0};
    rc = kl_cursor_start(c, &b, &e);
    while (rc == KL_OK) {
      rc = kl_cursor_next(c, &e);
      if (rc == KL_OK) (*produced)++;
    }
    if (rc == KL_DONE) rc = KL_OK;
    if (rc != KL_OK && e.rc != KL_OK) assert_int_equal(e.rc, rc);
  }
  kl_cursor_free(c);
  kl_log_close(log);
  return rc;
}

/*
** Allocation failure at every allocation (t_failenv given to kl_log_open):
** the failure surfaces as KL_NOMEM (never another code, never a crash) and
** nothing leaks.  What only an optimisation allocates (batch facts, the set
** of verified batches) may fail quietly: then the rows are all there.
*/
static void test_nomem(void **state) {
  char *dir = t_mkdtemp("cur-nomem");
  write_mixed_log(dir, 60, 3000, 200, 0, 46);
  t_failalloc fa;
  size_t want_n;
  assert_int_equal(nomem_scenario(dir, t_failenv(&fa, 0), &want_n), KL_OK);
  long total = fa.calls;
  assert_true(total > 10);
  assert_true(want_n > 100);
  assert_int_equal(fa.live, 0);
  for (long k = 1; k <= total; k++) {
    size_t n;
    kl_rc rc = nomem_scenario(dir, t_failenv(&fa, k), &n);
    if (fa.live != 0) fail_msg("failing allocation %ld: %ld blocks leaked", k, fa.live);
    if (rc == KL_OK && n == want_n) continue; /* an optimisation went without */
    if (rc != KL_NOMEM) fail_msg("failing allocation %ld of %ld gave %s", k, total, kl_rc_name(rc));
  }
  t_rmdir(dir);
  free(dir);
}

/*
** Batches of up to 400 records: the timestamps a decoded batch leaves with
** its fact outgrow the cursor's inline room, and later cursors on the same
** log filter on them; the answers stay the reference's, also when every
** allocation fails in turn.
*/
static void test_large_batches(void **state) {
  char *dir = t_mkdtemp("cur-large");
  write_log_of(dir, 30, MOST, 1 << 20, 4096, 0, 48);
  random_bounds_on(dir, 400, 5);
  t_failalloc fa;
  size_t want_n;
  assert_int_equal(nomem_scenario(dir, t_failenv(&fa, 0), &want_n), KL_OK);
  long total = fa.calls;
  for (long k = 1; k <= total; k++) {
    size_t n;
    kl_rc rc = nomem_scenario(dir, t_failenv(&fa, k), &n);
    if (fa.live != 0) fail_msg("failing allocation %ld: %ld blocks leaked", k, fa.live);
    if (rc == KL_OK && n == want_n) continue;
    if (rc != KL_NOMEM) fail_msg("failing allocation %ld of %ld gave %s", k, total, kl_rc_name(rc));
  }
  t_rmdir(dir);
  free(dir);
}

/*
** Pushdown, measured: in a 100-segment log an offset point lookup opens
** exactly one segment and decodes at most 2 batches; a descending scan
** without bounds has decoded only the last batch when its first record
** (the last of the log) is produced.
*/
static void test_work_counters(void **state) {
  char *dir = t_mkdtemp("cur-work");
  write_mixed_log(dir, 400, 600, 100, 0, 47);
  recs all = {0};
  scan_all(dir, &all);
  kl_log *log = open_log(dir, NULL);
  assert_true(kl_log_segment_count(log) >= 100);
  kl_log_close(log);

  /* Descending, unbounded: the first record costs one batch. */
  {
    log = open_log(dir, NULL);
    kl_cursor *c;
    kl_err err = {0};
    assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c), KL_OK);
    kl_bounds b = kl_bounds_all();
    b.desc = 1;
    assert_int_equal(kl_cursor_start(c, &b, &err), KL_OK);
    assert_int_equal(kl_cursor_next(c, &err), KL_OK);
    assert_int_equal(kl_cursor_load(c, &err), KL_OK);
    assert_int_equal(kl_cursor_record(c)->offset, all.r[all.n - 1].offset);
    assert_int_equal(kl_cursor_stats(c)->batches_decoded, 1);
    const kl_stats *st = kl_cursor_stats(c);
    assert_int_equal(st->segments_opened, 1);
    kl_cursor_free(c);
    kl_log_close(log);
  }
  uint64_t seed = 9;
  int bad[2] = {0, 0};
  for (int i = 0; i < 200; i++) {
    const rec *want = &all.r[t_rand(&seed) % all.n];
    if (i == 0) want = &all.r[0];
    if (i == 1) want = &all.r[all.n - 1];
    log = open_log(dir, NULL);
    kl_cursor *c;
    kl_err err = {0};
    assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c), KL_OK);
    kl_bounds b = kl_bounds_all();
    b.off_lo = b.off_hi = want->offset;
    b.desc = i & 1;
    assert_int_equal(kl_cursor_start(c, &b, &err), KL_OK);
    assert_int_equal(kl_cursor_next(c, &err), KL_OK);
    assert_int_equal(kl_cursor_load(c, &err), KL_OK);
    assert_int_equal(kl_cursor_record(c)->offset, want->offset);
    assert_int_equal(kl_cursor_next(c, &err), KL_DONE);
    const kl_stats *st = kl_cursor_stats(c);
    if (st->segments_opened != 1 || st->batches_decoded > 2) {
      if (!bad[b.desc]++) {
        print_error("offset %lld %s: %llu segments opened, %llu batches decoded\n",
                    (long long)want->offset, b.desc ? "desc" : "asc",
                    (unsigned long long)st->segments_opened,
                    (unsigned long long)st->batches_decoded);
      }
    }
    kl_cursor_free(c);
    kl_log_close(log);
  }
  if (bad[0] || bad[1]) fail_msg("point lookups doing too much work: %d asc, %d desc of 100 each", bad[0], bad[1]);

  free(all.r);
  t_rmdir(dir);
  free(dir);
}

/* The work of one lookup of an offset on cursor c (its reader keeps what
** it read: the window, the decompressed batch), its record checked. */
static kl_stats lookup_work(kl_cursor *c, int64_t off) {
  kl_stats before = *kl_cursor_stats(c), d;
  kl_err err = {0};
  kl_bounds b = kl_bounds_all();
  b.off_lo = b.off_hi = off;
  assert_int_equal(kl_cursor_start(c, &b, &err), KL_OK);
  assert_int_equal(kl_cursor_next(c, &err), KL_OK);
  if (kl_cursor_load(c, &err) != KL_OK) fail_msg("offset %lld: %s", (long long)off, err.msg);
  const kl_record *r = kl_cursor_record(c);
  assert_int_equal(r->offset, off);
  char want[32];
  int n = snprintf(want, sizeof want, "v%lld-", (long long)off);
  assert_true(r->value_len > n && memcmp(r->value, want, (size_t)n) == 0);
  assert_int_equal(kl_cursor_next(c, &err), KL_DONE);
  const kl_stats *now = kl_cursor_stats(c);
  memset(&d, 0, sizeof d);
  d.reads = now->reads - before.reads;
  d.bytes_read = now->bytes_read - before.bytes_read;
  d.records_decoded = now->records_decoded - before.records_decoded;
  d.bytes_decompressed = now->bytes_decompressed - before.bytes_decompressed;
  d.crc_checks = now->crc_checks - before.crc_checks;
  d.index_probes = now->index_probes - before.index_probes;
  return d;
}

/*
** Once a batch's records decoded whole (its facts keep where each record
** ends), a point lookup in it reads the one record (uncompressed) or the
** batch in one read, decompressed only up to the record where the codec
** stops (lz4, gzip; zstd by its 128 KiB blocks; snappy whole), decodes
** that record alone, checks no CRC again and probes no index; the same
** record again, or another of the batch just decompressed, reads nothing.
*/
static void test_point_lookup_work(void **state) {
  static const int codecs[] = {KL_CODEC_NONE, KL_CODEC_GZIP, KL_CODEC_LZ4, KL_CODEC_ZSTD,
                               KL_CODEC_SNAPPY};
  for (size_t k = 0; k < sizeof codecs / sizeof *codecs; k++) {
    int codec = codecs[k];
    /* zstd: batches of 300 KiB, so that a frame holds several blocks. */
    int per = codec == KL_CODEC_ZSTD ? 300 : 40, len = codec == KL_CODEC_ZSTD ? 1000 : 200;
    char *dir = t_mkdtemp("cur-point");
    kw_options o = {1 << 26, 4096, 0, codec};
    kw_writer *w = kw_open(dir, &o);
    assert_non_null(w);
    static char vals[300][1000];
    kl_rec_in r[300];
    uint64_t seed = 5 + (uint64_t)codec;
    for (int b = 0; b < 6; b++) {
      for (int i = 0; i < per; i++) {
        int64_t off = kw_next_offset(w) + i;
        int n = snprintf(vals[i], sizeof vals[i], "v%lld-", (long long)off);
        for (int j = n; j < len; j++) vals[i][j] = (char)('a' + t_rand(&seed) % 4);
        memset(&r[i], 0, sizeof r[i]);
        r[i].timestamp = 1000 + off;
        r[i].key_len = -1;
        r[i].value = vals[i];
        r[i].value_len = len;
      }
      assert_int_equal(kw_append(w, NULL, r, per), 0);
    }
    assert_int_equal(kw_close(w), 0);
    kl_log *log = open_log(dir, NULL);
    kl_err err = {0};
    /* A scan decodes every batch: its facts learn the records' timestamps,
    ** not where they end; a point lookup landing in a batch learns that. */
    kl_cursor *scan;
    assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &scan), KL_OK);
    kl_bounds all = kl_bounds_all();
    assert_int_equal(kl_cursor_start(scan, &all, &err), KL_OK);
    while (kl_cursor_next(scan, &err) == KL_OK) assert_int_equal(kl_cursor_load(scan, &err), KL_OK);
    kl_cursor_free(scan);
    int64_t first = 3 * per; /* batch 3 */
    const kl_fact *f = &kl_log_first(log)->facts[3];
    assert_non_null(f->ts);
    assert_null(f->rend);
    assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &scan), KL_OK);
    kl_stats d = lookup_work(scan, first + 1);
    assert_non_null(f->rend);
    assert_true(d.bytes_read >= (uint64_t)f->b.size); /* the batch, whole */
    kl_cursor_free(scan);

    kl_cursor *c;
    assert_int_equal(kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &c), KL_OK);
    d = lookup_work(c, first);
    assert_ptr_equal(f, kl_segment_fact(kl_log_first(log), kl_cursor_batch(c)->position));
    uint32_t whole = kl_fact_rend(f, per - 1), rec0 = kl_fact_rend(f, 0);
    assert_int_equal(d.reads, 1);
    assert_int_equal(d.records_decoded, 1);
    assert_int_equal(d.crc_checks, 0);
    assert_int_equal(d.index_probes, 0);
    if (codec == KL_CODEC_NONE) {
      assert_int_equal(d.bytes_read, rec0 - KL_V2_HEADER); /* the record alone */
      assert_int_equal(d.bytes_decompressed, 0);
    } else {
      assert_true(d.bytes_read >= (uint64_t)f->b.size && d.bytes_read <= (uint64_t)f->b.size + 4096);
      if (codec == KL_CODEC_SNAPPY) assert_int_equal(d.bytes_decompressed, whole);
      else assert_int_equal(d.bytes_decompressed, rec0);
    }
    /* The same record again: nothing read, nothing decompressed. */
    d = lookup_work(c, first);
    assert_int_equal(d.reads, 0);
    assert_int_equal(d.bytes_decompressed, 0);
    assert_int_equal(d.records_decoded, 1);
    /* The batch's last record: the batch is still at hand. */
    d = lookup_work(c, first + per - 1);
    assert_int_equal(d.records_decoded, 1);
    if (codec == KL_CODEC_NONE) {
      assert_int_equal(d.reads, 1);
      assert_int_equal(d.bytes_read, whole - kl_fact_rend(f, per - 2));
    } else {
      assert_int_equal(d.reads, 0);
      if (codec == KL_CODEC_SNAPPY) assert_int_equal(d.bytes_decompressed, 0);
      else assert_int_equal(d.bytes_decompressed, whole);
    }
    /* And one before it: decompressed already. */
    d = lookup_work(c, first + per - 2);
    assert_int_equal(d.reads, codec == KL_CODEC_NONE ? 1 : 0);
    assert_int_equal(d.bytes_decompressed, 0);
    /* Another batch, where no lookup landed: one read of it whole, its
    ** records framed by length, the row decoded alone; then a lookup in it
    ** decodes one record (from the batch still at hand). */
    d = lookup_work(c, per + 7);
    assert_int_equal(d.reads, 1);
    assert_int_equal(d.records_decoded, 1);
    assert_non_null(kl_log_first(log)->facts[1].rend);
    d = lookup_work(c, per + 3);
    assert_int_equal(d.records_decoded, 1);
    assert_int_equal(d.reads, 0);
    kl_cursor_free(c);
    kl_log_close(log);
    t_rmdir(dir);
    free(dir);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_bounds),
      cmocka_unit_test(test_windows_without_kept_timestamps),
      cmocka_unit_test(test_random_bounds_dense_index),
      cmocka_unit_test(test_no_index_files),
      cmocka_unit_test(test_empty_and_outside),
      cmocka_unit_test(test_nomem),
      cmocka_unit_test(test_work_counters),
      cmocka_unit_test(test_large_batches),
      cmocka_unit_test(test_point_lookup_work),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
