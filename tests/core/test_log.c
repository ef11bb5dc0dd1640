/*
** test_log.c - a partition directory: opening (missing, empty, foreign
** files), the segment map (LogSegmentsTest), Kafka's lookups by offset
** (LocalLog.read / translateOffset, gaps) and by timestamp
** (fetchOffsetByTimestamp, LogSegmentTest.testFindOffsetByTimestamp,
** MAX_TIMESTAMP), on logs written the way LogSegment.append writes them
** (kwriter), with missing, garbage and misleading index files, offsets
** above 2^32 and non-monotonic timestamps, all checked against a brute-force
** scan of the .log files.
*/
#include "testutil.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "batch.h"
#include "builder.h"
#include "codec.h"
#include "dating.h"
#include "faultos.h"
#include "kwriter.h"
#include "log.h"

/* ---- helpers ---- */

static kw_options opts(int64_t seg_bytes, int64_t interval, int64_t base, int codec) {
  kw_options o;
  o.segment_bytes = seg_bytes;
  o.index_interval = interval;
  o.base_offset = base;
  o.codec = codec;
  return o;
}

/* Append one batch of n records with the given timestamps. */
static void append(kw_writer *w, const int64_t *ts, int n) {
  kl_rec_in r[64];
  char vals[64][32];
  assert_true(n <= 64);
  for (int i = 0; i < n; i++) {
    snprintf(vals[i], sizeof vals[i], "value-%lld", (long long)(kw_next_offset(w) + i));
    memset(&r[i], 0, sizeof r[i]);
    r[i].timestamp = ts[i];
    r[i].key = "k";
    r[i].key_len = 1;
    r[i].value = vals[i];
    r[i].value_len = (int32_t)strlen(vals[i]);
  }
  assert_int_equal(kw_append(w, NULL, r, n), 0);
}

static void path_in(char *buf, size_t n, const char *dir, const char *name) {
  snprintf(buf, n, "%s/%s", dir, name);
}

static void touch(const char *dir, const char *name, const void *p, size_t n) {
  char path[4096];
  path_in(path, sizeof path, dir, name);
  assert_int_equal(t_write_file(path, p, n), 0);
}

/* The reader every lookup of the open test log goes through (one log is
** open at a time): its counters are what the tests read. */
static kl_reader g_rd;

static kl_log *open_log(const char *dir) {
  kl_log *log = NULL;
  kl_err err = {0};
  kl_rc rc = kl_log_open(NULL, dir, &log, &err);
  if (rc != KL_OK) fail_msg("open %s: %s %s", dir, kl_rc_name(rc), err.msg);
  kl_reader_init(&g_rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  return log;
}

static void close_log(kl_log *log) {
  kl_reader_free(&g_rd);
  kl_log_close(log);
}

/* Every record of a log, from a plain scan of its .log files. */
typedef struct rec {
  int64_t offset, ts, batch_base, batch_last, seg_base;
} rec;
typedef struct recs {
  rec *r;
  size_t n, cap;
} recs;

static void scan_all(kl_log *log, recs *out) {
  out->n = 0;
  kl_buf scratch = {0};
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    size_t n;
    uint8_t *file = t_read_file(s->log_path, &n);
    assert_non_null(file);
    size_t pos = 0;
    for (;;) {
      kl_batch b;
      kl_err err = {0};
      b.position = (int64_t)pos;
      if (kl_batch_parse(file + pos, n - pos, &b, &err) != KL_OK) break;
      kl_records it;
      kl_record r;
      assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
      while (kl_records_next(&it, &r, &err) == KL_OK) {
        if (out->n == out->cap) {
          out->cap = out->cap ? out->cap * 2 : 256;
          out->r = realloc(out->r, out->cap * sizeof *out->r);
          assert_non_null(out->r);
        }
        rec e = {r.offset, r.timestamp, b.base_offset, b.last_offset, s->base};
        out->r[out->n++] = e;
      }
      pos += (size_t)b.size;
    }
    free(file);
  }
  kl_buf_free(NULL, &scratch);
}

/* Brute force: the smallest offset whose timestamp is >= t, or -1. */
static int64_t ref_time(const recs *a, int64_t t, int64_t *ts) {
  int64_t best = -1;
  for (size_t i = 0; i < a->n; i++) {
    if (a->r[i].ts >= t && (best < 0 || a->r[i].offset < best)) {
      best = a->r[i].offset;
      *ts = a->r[i].ts;
    }
  }
  return best;
}

/* Check kl_log_lookup_offset at every offset from lo to hi (and beyond)
** against the scan: the batch found is the first whose last offset >=
** target. */
static void check_offsets(kl_log *log, const recs *a) {
  kl_err err = {0};
  int64_t leo;
  assert_int_equal(kl_log_end_offset(log, &g_rd, &leo, &err), KL_OK);
  int64_t start = kl_log_start_offset(log);
  assert_true(a->n > 0);
  assert_int_equal(leo, a->r[a->n - 1].offset + 1);
  for (int64_t t = start - 2; t <= leo + 2; t++) {
    kl_offset_lookup lk;
    assert_int_equal(kl_log_lookup_offset(log, &g_rd, t, &lk, &err), KL_OK);
    if (t < start || t > leo) {
      assert_int_equal(lk.status, KL_LOOKUP_OUT_OF_RANGE);
      continue;
    }
    if (t == leo) {
      assert_int_equal(lk.status, KL_LOOKUP_LOG_END);
      continue;
    }
    const rec *want = NULL;
    for (size_t i = 0; i < a->n && !want; i++) {
      if (a->r[i].batch_last >= t) want = &a->r[i];
    }
    assert_non_null(want);
    if (lk.status != KL_LOOKUP_OK && lk.status != KL_LOOKUP_GAP) {
      fail_msg("offset %lld: status %d", (long long)t, lk.status);
    }
    if (lk.batch.base_offset != want->batch_base) {
      fail_msg("offset %lld: batch %lld, want %lld", (long long)t, (long long)lk.batch.base_offset,
               (long long)want->batch_base);
    }
    assert_int_equal(lk.batch.last_offset, want->batch_last);
    assert_int_equal(lk.read_segment_base, want->seg_base);
    assert_int_equal(lk.segment_base, kl_log_floor(log, t)->base);
    assert_int_equal(lk.status, want->seg_base == lk.segment_base ? KL_LOOKUP_OK : KL_LOOKUP_GAP);
  }
}

/* Check kl_log_lookup_time for every t in [lo, hi] against brute force. */
static void check_times(kl_log *log, const recs *a, int64_t lo, int64_t hi) {
  kl_err err = {0};
  for (int64_t t = lo; t <= hi; t++) {
    kl_time_lookup tl;
    kl_rc rc = kl_log_lookup_time(log, &g_rd, t, &tl, &err);
    if (rc != KL_OK) fail_msg("time %lld: %s %s", (long long)t, kl_rc_name(rc), err.msg);
    int64_t wts = 0;
    int64_t want = ref_time(a, t, &wts);
    if (want < 0) {
      if (tl.status != KL_LOOKUP_NOT_FOUND) fail_msg("time %lld: found %lld, want none", (long long)t, (long long)tl.offset);
      continue;
    }
    if (tl.status != KL_LOOKUP_OK || tl.offset != want) {
      fail_msg("time %lld: status %d offset %lld (segment %lld, time index entry (%lld, %lld), "
               "scan from position %lld), want %lld", (long long)t, tl.status,
               (long long)tl.offset, (long long)tl.segment_base, (long long)tl.ti_timestamp,
               (long long)tl.ti_offset, (long long)tl.start_position, (long long)want);
    }
    assert_int_equal(tl.timestamp, wts);
  }
}

/* Remove every file of dir whose name ends with suffix. */
static void remove_suffix(const char *dir, const char *suffix) {
  char cmdpath[4096];
  kl_log *log = open_log(dir);
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    size_t len = strlen(s->log_path);
    snprintf(cmdpath, sizeof cmdpath, "%.*s%s", (int)(len - 4), s->log_path, suffix);
    unlink(cmdpath);
  }
  close_log(log);
}

/* Overwrite every file with the suffix with random bytes (same length)
** from byte `from` on.  plausible: instead of raw bytes, entries whose
** positions / offsets lie inside the segment, so that only the check of the
** batch an entry points to can catch them. */
static void garble_suffix(const char *dir, const char *suffix, uint64_t *seed, int from,
                          int plausible) {
  char path[4096];
  kl_log *log = open_log(dir);
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    size_t len = strlen(s->log_path), n, logn;
    snprintf(path, sizeof path, "%.*s%s", (int)(len - 4), s->log_path, suffix);
    uint8_t *p = t_read_file(path, &n);
    if (!p) continue;
    uint8_t *lg = t_read_file(s->log_path, &logn);
    assert_non_null(lg);
    free(lg);
    if (!plausible) {
      for (size_t i = (size_t)from; i < n; i++) p[i] = (uint8_t)t_rand(seed);
    } else if (strcmp(suffix, ".index") == 0) {
      uint32_t rel = 0, pos = 0;
      for (size_t i = 0; i + 8 <= n; i += 8) {
        rel += 1 + (uint32_t)(t_rand(seed) % 5);
        pos += 1 + (uint32_t)(t_rand(seed) % (logn / (n / 8 + 1) + 1));
        kl_put_u32(p + i, rel);
        kl_put_u32(p + i + 4, pos < logn ? pos : (uint32_t)logn - 1);
      }
    } else {
      int64_t ts = 500;
      uint32_t rel = 0;
      for (size_t i = 0; i + 12 <= n; i += 12) {
        ts += 1 + (int64_t)(t_rand(seed) % 300);
        rel += (uint32_t)(t_rand(seed) % 8);
        kl_put_u64(p + i, (uint64_t)ts);
        kl_put_u32(p + i + 8, rel);
      }
    }
    assert_int_equal(t_write_file(path, p, n), 0);
    free(p);
  }
  close_log(log);
}

/* Make every file of dir with the suffix a minute older than its .log. */
static void age_suffix(const char *dir, const char *suffix) {
  char path[4096];
  kl_log *log = open_log(dir);
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    size_t len = strlen(s->log_path);
    snprintf(path, sizeof path, "%.*s%s", (int)(len - 4), s->log_path, suffix);
    struct stat st;
    assert_int_equal(stat(s->log_path, &st), 0);
    struct timespec tv[2] = {st.st_atim, st.st_mtim};
    tv[1].tv_sec -= 60;
    if (access(path, F_OK) == 0) assert_int_equal(utimensat(AT_FDCWD, path, tv, 0), 0);
  }
  close_log(log);
}

/* Entries dropped at open (zero tail aside) over all opened segments. */
static int64_t stale_entries(kl_log *log) {
  int64_t n = 0;
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    if (s->oidx_open) n += s->oidx.stale;
    if (s->tidx_open) n += s->tidx.stale;
  }
  return n;
}

/* A log of n_batches batches of per records; timestamps from tsfn. */
static int64_t ts_linear(int64_t off, uint64_t *seed) {
  (void)seed;
  return 1000 + 10 * off;
}
static int64_t ts_jitter(int64_t off, uint64_t *seed) {
  return 1000 + 10 * off + (int64_t)(t_rand(seed) % 200) - 100;
}

static void write_log(const char *dir, const kw_options *o, int n_batches, int per,
                      int64_t (*tsfn)(int64_t, uint64_t *), uint64_t seed) {
  kw_writer *w = kw_open(dir, o);
  assert_non_null(w);
  for (int b = 0; b < n_batches; b++) {
    int64_t ts[64];
    int n = per > 0 ? per : 1 + (int)(t_rand(&seed) % 7);
    for (int i = 0; i < n; i++) ts[i] = tsfn(kw_next_offset(w) + i, &seed);
    append(w, ts, n);
  }
  assert_int_equal(kw_close(w), 0);
}

/* ---------------------------------------------------------------------- */

/* A missing partition directory is KL_CANTOPEN and the message names it. */
static void test_open_missing_dir(void **state) {
  kl_log *log = (kl_log *)1;
  kl_err err = {0};
  const char *dir = "/nonexistent-kafkalog-dir/orders-0";
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_CANTOPEN);
  assert_null(log);
  assert_int_equal(err.rc, KL_CANTOPEN);
  assert_non_null(strstr(err.msg, dir));
}

/* An existing directory without segments is an empty log: no segments,
** log start and end 0, every lookup out of range / not found. */
static void test_open_empty_dir(void **state) {
  char *dir = t_mkdtemp("log-empty");
  kl_log *log = open_log(dir);
  kl_err err = {0};
  assert_int_equal(kl_log_segment_count(log), 0);
  assert_null(kl_log_first(log));
  assert_null(kl_log_last(log));
  assert_null(kl_log_floor(log, 0));
  assert_int_equal(kl_log_start_offset(log), 0);
  int64_t leo = -1;
  assert_int_equal(kl_log_end_offset(log, &g_rd, &leo, &err), KL_OK);
  assert_int_equal(leo, 0);
  kl_offset_lookup lk;
  assert_int_equal(kl_log_lookup_offset(log, &g_rd, 5, &lk, &err), KL_OK);
  assert_int_equal(lk.status, KL_LOOKUP_OUT_OF_RANGE);
  kl_time_lookup tl;
  assert_int_equal(kl_log_lookup_time(log, &g_rd, 100, &tl, &err), KL_OK);
  assert_int_equal(tl.status, KL_LOOKUP_NOT_FOUND);
  assert_int_equal(kl_log_lookup_time(log, &g_rd, KL_TS_MAX, &tl, &err), KL_OK);
  assert_int_equal(tl.status, KL_LOOKUP_NOT_FOUND);
  assert_int_equal(g_rd.stats->segments_opened, 0);
  close_log(log);
  t_rmdir(dir);
  free(dir);
}

/*
** format.md 1.2 / LogLoaderTest.testOpenDeletesObsoleteFiles: only
** "<20 digits>.log" is a segment; .deleted, .swap, .cleaned, snapshots,
** checkpoints, orphan indexes, 19- or 21-digit names, non-digits and
** base offsets beyond INT64_MAX are ignored.  Opening opens no segment.
*/
static void test_open_foreign_files(void **state) {
  char *dir = t_mkdtemp("log-foreign");
  kw_options o = opts(1 << 20, 4096, 0, KL_CODEC_NONE);
  write_log(dir, &o, 3, 2, ts_linear, 1);
  static const char *foreign[] = {
      "00000000000000000000.log.deleted", "00000000000000000050.log.swap",
      "00000000000000000060.log.cleaned", "00000000000000000070.snapshot",
      "00000000000000000080.index",       "00000000000000000080.timeindex",
      "leader-epoch-checkpoint",          "partition.metadata",
      "0000000000000000001.log",          "000000000000000000001.log",
      "abc.log",                          "0000000000000000000a.log",
      "99999999999999999999.log",         "00000000000000000090.log.tmp",
      ".log",                             "00000000000000000100.LOG",
  };
  for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) touch(dir, foreign[i], "junk", 4);
  kl_log *log = open_log(dir);
  assert_int_equal(kl_log_segment_count(log), 1);
  assert_int_equal(kl_log_first(log)->base, 0);
  assert_true(kl_log_first(log)->is_last);
  assert_int_equal(g_rd.stats->segments_opened, 0);
  kl_err err = {0};
  int64_t leo;
  assert_int_equal(kl_log_end_offset(log, &g_rd, &leo, &err), KL_OK);
  assert_int_equal(leo, 6);
  close_log(log);
  t_rmdir(dir);
  free(dir);
}

/*
** LogSegmentsTest.testClosestMatchOperations / testSegmentAccess: segments
** at 1, 3, 5, 7: floor(2) = 1, floor(3) = 3, nothing below 1, the next of
** floor(4) is 5, prev of 3 is 1; ordering and the active (last) flag.
*/
static void test_segment_map(void **state) {
  char *dir = t_mkdtemp("log-map");
  static const char *names[] = {"00000000000000000007.log", "00000000000000000001.log",
                                "00000000000000000005.log", "00000000000000000003.log"};
  for (int i = 0; i < 4; i++) touch(dir, names[i], "", 0);
  kl_log *log = open_log(dir);
  assert_int_equal(kl_log_segment_count(log), 4);
  assert_null(kl_log_floor(log, 0));
  assert_int_equal(kl_log_floor(log, 1)->base, 1);
  assert_int_equal(kl_log_floor(log, 2)->base, 1);
  assert_int_equal(kl_log_floor(log, 3)->base, 3);
  assert_int_equal(kl_log_floor(log, INT64_MAX)->base, 7);
  assert_int_equal(kl_log_next(log, kl_log_floor(log, 4))->base, 5);
  assert_int_equal(kl_log_next(log, kl_log_floor(log, 5))->base, 7);
  assert_int_equal(kl_log_prev(log, kl_log_floor(log, 3))->base, 1);
  assert_null(kl_log_prev(log, kl_log_first(log)));
  assert_null(kl_log_next(log, kl_log_last(log)));
  int64_t want = 1;
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s), want += 2) {
    assert_int_equal(s->base, want);
    assert_int_equal(s->is_last, want == 7);
  }
  assert_int_equal(kl_log_start_offset(log), 1);
  /* All four are empty: the log ends where the last begins. */
  kl_err err = {0};
  int64_t leo;
  assert_int_equal(kl_log_end_offset(log, &g_rd, &leo, &err), KL_OK);
  assert_int_equal(leo, 7);
  close_log(log);
  t_rmdir(dir);
  free(dir);
}

/*
** LogSegmentTest.testFindOffsetByTimestamp (behaviour.md 6.2): single-record
** batches at offsets 40..49 with timestamps 400..490: 420 -> 42, 421 -> 43,
** 430 -> 43, 431 -> 44, 401 -> 41, 399 -> 40, 491 -> not found; EARLIEST
** -> 40, LATEST -> 50, MAX_TIMESTAMP -> (490, 49); for index intervals from
** "every batch" to "never", and every codec.
*/
static void test_find_offset_by_timestamp(void **state) {
  static const int64_t intervals[] = {0, 1, 150, 1 << 30};
  for (int codec = KL_CODEC_NONE; codec <= KL_CODEC_ZSTD; codec++) {
    for (int iv = 0; iv < 4; iv++) {
      char *dir = t_mkdtemp("log-kafka-ts");
      kw_options o = opts(1 << 20, intervals[iv], 40, codec);
      kw_writer *w = kw_open(dir, &o);
      for (int i = 0; i < 10; i++) {
        int64_t ts = 400 + 10 * i;
        append(w, &ts, 1);
      }
      assert_int_equal(kw_close(w), 0);
      kl_log *log = open_log(dir);
      kl_err err = {0};
      static const int64_t cases[][2] = {{420, 42}, {421, 43}, {430, 43}, {431, 44}, {401, 41},
                                         {399, 40}, {400, 40}, {490, 49}, {0, 40},   {491, -1}};
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kl_time_lookup tl;
        assert_int_equal(kl_log_lookup_time(log, &g_rd, cases[c][0], &tl, &err), KL_OK);
        if (cases[c][1] < 0) {
          assert_int_equal(tl.status, KL_LOOKUP_NOT_FOUND);
        } else {
          assert_int_equal(tl.status, KL_LOOKUP_OK);
          if (tl.offset != cases[c][1]) {
            fail_msg("codec %d interval %lld: t=%lld -> %lld, want %lld", codec,
                     (long long)intervals[iv], (long long)cases[c][0], (long long)tl.offset,
                     (long long)cases[c][1]);
          }
          assert_int_equal(tl.timestamp, 400 + 10 * (cases[c][1] - 40));
          assert_int_equal(tl.segment_base, 40);
        }
      }
      kl_time_lookup tl;
      assert_int_equal(kl_log_lookup_time(log, &g_rd, KL_TS_EARLIEST, &tl, &err), KL_OK);
      assert_int_equal(tl.offset, 40);
      assert_int_equal(kl_log_lookup_time(log, &g_rd, KL_TS_LATEST, &tl, &err), KL_OK);
      assert_int_equal(tl.offset, 50);
      assert_int_equal(kl_log_lookup_time(log, &g_rd, KL_TS_MAX, &tl, &err), KL_OK);
      assert_int_equal(tl.status, KL_LOOKUP_OK);
      assert_int_equal(tl.offset, 49);
      assert_int_equal(tl.timestamp, 490);
      close_log(log);
      t_rmdir(dir);
      free(dir);
    }
  }
}

/*
** LocalLog.read / translateOffset on multi-segment logs with 1..7-record
** batches: every offset finds the first batch whose last offset >= it, in
** its floor segment; LEO is "log end"; outside [start, LEO] is out of
** range.  Also every timestamp against brute force (non-monotonic).
*/
static void test_lookups_multi_segment(void **state) {
  for (int codec = KL_CODEC_NONE; codec <= KL_CODEC_ZSTD; codec += 2) {
    char *dir = t_mkdtemp("log-multi");
    kw_options o = opts(1500, 200, 0, codec);
    write_log(dir, &o, 120, 0, ts_jitter, 7 + (uint64_t)codec);
    kl_log *log = open_log(dir);
    assert_true(kl_log_segment_count(log) > 5);
    recs a = {0};
    scan_all(log, &a);
    check_offsets(log, &a);
    check_times(log, &a, 800, 1000 + 10 * (int64_t)a.n + 120);
    assert_int_equal(g_rd.stats->index_fallbacks, 0);
    assert_true(g_rd.stats->index_probes > 0); /* the indexes were used */
    close_log(log);
    free(a.r);
    t_rmdir(dir);
    free(dir);
  }
}

/*
** Kafka >= 2.3 creates index files lazily (format.md 1.2): with every
** .index and .timeindex deleted the lookups are still exact, and since a
** missing index simply means "scan from position 0" no fallback is counted.
*/
static void test_lookups_without_index(void **state) {
  char *dir = t_mkdtemp("log-noidx");
  kw_options o = opts(2000, 100, 0, KL_CODEC_GZIP);
  write_log(dir, &o, 150, 0, ts_jitter, 11);
  remove_suffix(dir, ".index");
  remove_suffix(dir, ".timeindex");
  kl_log *log = open_log(dir);
  recs a = {0};
  scan_all(log, &a);
  check_offsets(log, &a);
  check_times(log, &a, 800, 1000 + 10 * (int64_t)a.n + 120);
  kl_time_lookup tl;
  kl_err err = {0};
  assert_int_equal(kl_log_lookup_time(log, &g_rd, KL_TS_MAX, &tl, &err), KL_OK);
  int64_t maxts = INT64_MIN, maxoff = -1;
  for (size_t i = 0; i < a.n; i++) {
    if (a.r[i].ts > maxts) {
      maxts = a.r[i].ts;
      maxoff = a.r[i].offset;
    }
  }
  assert_int_equal(tl.timestamp, maxts);
  assert_int_equal(tl.offset, maxoff);
  assert_int_equal(g_rd.stats->index_fallbacks, 0);
  assert_int_equal(g_rd.stats->index_probes, 0);
  close_log(log);
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/*
** LogSegmentTest.testRecoveryFixesCorruptIndex / ...CorruptTimeIndex
** (without the recovery): garbage over the offset index, then over both
** indexes, must not change any answer.  Raw random bytes are mostly caught
** at open (positions past the log: stale); "plausible" garbage (sorted
** entries inside the segment) only where an entry is used
** (index_fallbacks > 0).
*/
static void test_lookups_garbage_index(void **state) {
  for (int round = 0; round < 4; round++) {
    int plausible = round >= 2, both = round & 1;
    char *dir = t_mkdtemp("log-garbage");
    kw_options o = opts(3000, 60, 0, KL_CODEC_NONE);
    write_log(dir, &o, 200, 0, ts_jitter, 13);
    kl_log *log = open_log(dir);
    recs a = {0};
    scan_all(log, &a);
    close_log(log);
    uint64_t seed = 77;
    garble_suffix(dir, ".index", &seed, 5, plausible);
    if (both) {
      garble_suffix(dir, ".timeindex", &seed, 5, plausible);
      /* A closed segment's time index no older than its .log is Kafka's
      ** word for its largest timestamp (kl_scan_max_timestamp), garbage
      ** or not; one its .log outlived is checked wherever it is used. */
      age_suffix(dir, ".timeindex");
    }
    log = open_log(dir);
    check_offsets(log, &a);
    check_times(log, &a, 800, 1000 + 10 * (int64_t)a.n + 120);
    if (plausible) {
      if (g_rd.stats->index_fallbacks == 0) fail_msg("round %d: garbage went unnoticed", round);
    } else {
      assert_true(g_rd.stats->index_fallbacks + (uint64_t)stale_entries(log) > 0);
    }
    close_log(log);
    free(a.r);
    t_rmdir(dir);
    free(dir);
  }
}

/*
** An index entry whose position points into the middle of a batch (or one
** keyed too high for the batch it points at) is caught, and answers stay
** exact: the scan restarts from position 0.
*/
static void test_lookups_misleading_index(void **state) {
  char *dir = t_mkdtemp("log-midbatch");
  kw_options o = opts(1 << 20, 100, 0, KL_CODEC_NONE);
  write_log(dir, &o, 60, 3, ts_linear, 3);
  kl_log *log = open_log(dir);
  recs a = {0};
  scan_all(log, &a);
  close_log(log);
  char path[4096];
  path_in(path, sizeof path, dir, "00000000000000000000.index");
  size_t n;
  uint8_t *ix = t_read_file(path, &n);
  assert_non_null(ix);
  assert_true(n >= 24);
  for (int variant = 0; variant < 3; variant++) {
    uint8_t *p = malloc(n);
    memcpy(p, ix, n);
    size_t slot = n / 8 / 2;
    if (variant == 0) kl_put_u32(p + slot * 8 + 4, kl_get_u32(p + slot * 8 + 4) + 7);
    if (variant == 1) kl_put_u32(p + slot * 8, kl_get_u32(p + slot * 8) + 2); /* key too high */
    if (variant == 2) {
      /* Every entry shifted into the middle of its batch. */
      for (size_t i = 0; i < n / 8; i++) kl_put_u32(p + i * 8 + 4, kl_get_u32(p + i * 8 + 4) + 20);
    }
    assert_int_equal(t_write_file(path, p, n), 0);
    log = open_log(dir);
    check_offsets(log, &a);
    check_times(log, &a, 990, 1000 + 10 * (int64_t)a.n + 20);
    if (variant != 1) assert_true(g_rd.stats->index_fallbacks > 0);
    close_log(log);
    free(p);
  }
  free(ix);
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/* Write a .log of hand-placed v2 batches (no index files). */
static void write_segment(const char *dir, int64_t base, const int64_t *offs, const int64_t *ts,
                          const int *counts, int nb) {
  kl_buf out = {0};
  kl_err err = {0};
  for (int b = 0; b < nb; b++) {
    kl_rec_in r[16];
    assert_true(counts[b] <= 16);
    for (int i = 0; i < counts[b]; i++) {
      memset(&r[i], 0, sizeof r[i]);
      r[i].timestamp = ts[b] + i;
      r[i].value = "v";
      r[i].value_len = 1;
    }
    kl_batch_spec s;
    memset(&s, 0, sizeof s);
    s.base_offset = offs[b];
    s.producer_id = -1;
    s.producer_epoch = -1;
    s.base_sequence = -1;
    assert_int_equal(kl_batch_encode(NULL, &s, r, counts[b], &out, &err), KL_OK);
  }
  char name[64];
  snprintf(name, sizeof name, "%020lld.log", (long long)base);
  touch(dir, name, out.p, out.len);
  kl_buf_free(NULL, &out);
}

/*
** LogSegmentTest.testReadFromGap and UnifiedLogTest.testReadAtLogGap: an
** offset inside a gap resolves to the next batch, in the same segment
** (status OK) or, when the gap is at the end of a segment, in a later
** segment (status GAP); LogSegmentTest.testReadBeforeFirstOffset: an offset
** between a segment base and its first batch finds that batch.
*/
static void test_gaps(void **state) {
  char *dir = t_mkdtemp("log-gap");
  static const int64_t o1[] = {45, 50, 60}, t1[] = {100, 200, 300};
  static const int c1[] = {1, 2, 2};
  write_segment(dir, 40, o1, t1, c1, 3);
  static const int64_t o2[] = {80, 82}, t2[] = {400, 500};
  static const int c2[] = {2, 3};
  write_segment(dir, 70, o2, t2, c2, 2);
  kl_log *log = open_log(dir);
  kl_err err = {0};
  static const struct {
    int64_t target, batch, seg, read_seg;
    int status;
  } cases[] = {
      {39, 0, 0, 0, KL_LOOKUP_OUT_OF_RANGE},
      {40, 45, 40, 40, KL_LOOKUP_OK}, {44, 45, 40, 40, KL_LOOKUP_OK}, {45, 45, 40, 40, KL_LOOKUP_OK},
      {46, 50, 40, 40, KL_LOOKUP_OK}, {51, 50, 40, 40, KL_LOOKUP_OK}, {55, 60, 40, 40, KL_LOOKUP_OK},
      {61, 60, 40, 40, KL_LOOKUP_OK}, {62, 80, 40, 70, KL_LOOKUP_GAP}, {69, 80, 40, 70, KL_LOOKUP_GAP},
      {70, 80, 70, 70, KL_LOOKUP_OK}, {81, 80, 70, 70, KL_LOOKUP_OK}, {84, 82, 70, 70, KL_LOOKUP_OK},
      {85, 0, 70, 0, KL_LOOKUP_LOG_END}, {86, 0, 0, 0, KL_LOOKUP_OUT_OF_RANGE},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    kl_offset_lookup lk;
    assert_int_equal(kl_log_lookup_offset(log, &g_rd, cases[c].target, &lk, &err), KL_OK);
    if (lk.status != cases[c].status) {
      fail_msg("offset %lld: status %d want %d", (long long)cases[c].target, lk.status, cases[c].status);
    }
    if (cases[c].status == KL_LOOKUP_OK || cases[c].status == KL_LOOKUP_GAP) {
      assert_int_equal(lk.batch.base_offset, cases[c].batch);
      assert_int_equal(lk.segment_base, cases[c].seg);
      assert_int_equal(lk.read_segment_base, cases[c].read_seg);
    }
  }
  /* By time: 250 is first reached at offset 60 (ts 300). */
  kl_time_lookup tl;
  assert_int_equal(kl_log_lookup_time(log, &g_rd, 250, &tl, &err), KL_OK);
  assert_int_equal(tl.offset, 60);
  assert_int_equal(kl_log_lookup_time(log, &g_rd, 302, &tl, &err), KL_OK);
  assert_int_equal(tl.offset, 80);
  assert_int_equal(tl.segment_base, 70);
  close_log(log);
  t_rmdir(dir);
  free(dir);
}

/*
** Offsets above 2^32 (segment base 5000000000, relative offsets small):
** index keys are base + relative, every lookup is exact.
*/
static void test_offsets_above_2_32(void **state) {
  char *dir = t_mkdtemp("log-big");
  kw_options o = opts(1200, 100, INT64_C(5000000000), KL_CODEC_LZ4);
  write_log(dir, &o, 80, 0, ts_linear, 5);
  kl_log *log = open_log(dir);
  assert_int_equal(kl_log_start_offset(log), INT64_C(5000000000));
  recs a = {0};
  scan_all(log, &a);
  assert_int_equal(a.r[0].offset, INT64_C(5000000000));
  check_offsets(log, &a);
  check_times(log, &a, 1000 + 10 * INT64_C(5000000000) - 20,
              1000 + 10 * INT64_C(5000000000) + 10 * (int64_t)a.n + 20);
  assert_int_equal(g_rd.stats->index_fallbacks, 0);
  close_log(log);
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/* Segments named near 2^63: an index entry's base + relative offset may
** not fit, and must neither wrap nor mislead a lookup. */
#define NEAR_TOP INT64_C(9223372036854775000)
static int64_t ts_from_top(int64_t off, uint64_t *seed) {
  (void)seed;
  return 1000 + 10 * (off - NEAR_TOP);
}

static void test_segment_named_near_2_63(void **state) {
  char *dir = t_mkdtemp("log-top");
  kw_options o = opts(1200, 100, NEAR_TOP, KL_CODEC_NONE);
  write_log(dir, &o, 80, 0, ts_from_top, 5);
  kl_log *log = open_log(dir);
  recs a = {0};
  scan_all(log, &a);
  assert_int_equal(a.r[0].offset, NEAR_TOP);
  assert_true(kl_log_next(log, kl_log_first(log)) != NULL); /* several segments */
  check_offsets(log, &a);
  close_log(log);
  /* The first segment's last index entry made to name base + 2^31 - 1,
  ** past INT64_MAX: it never holds, and lookups stay exact. */
  char path[4096];
  path_in(path, sizeof path, dir, "09223372036854775000.index");
  size_t n = 0;
  free(t_read_file(path, &n));
  assert_true(n >= 16);
  t_poke32(path, (int64_t)n - 8, 0x7fffffffu);
  log = open_log(dir);
  check_offsets(log, &a);
  recs b = {0};
  scan_all(log, &b);
  assert_int_equal(b.n, a.n);
  close_log(log);
  free(a.r);
  free(b.r);
  t_rmdir(dir);
  free(dir);
  /* A segment named INT64_MAX holds nothing a batch can hold: an empty
  ** one is a log ending there. */
  dir = t_mkdtemp("log-max");
  path_in(path, sizeof path, dir, "09223372036854775807.log");
  assert_int_equal(t_write_file(path, "", 0), 0);
  log = open_log(dir);
  kl_err err = {0};
  int64_t leo;
  assert_int_equal(kl_log_end_offset(log, &g_rd, &leo, &err), KL_OK);
  assert_int_equal(leo, INT64_MAX);
  kl_offset_lookup lk;
  assert_int_equal(kl_log_lookup_offset(log, &g_rd, INT64_MAX, &lk, &err), KL_OK);
  assert_int_equal(lk.status, KL_LOOKUP_LOG_END);
  close_log(log);
  t_rmdir(dir);
  free(dir);
}

/*
** ListOffsets MAX_TIMESTAMP (behaviour.md 6.1, Kafka 3.8+): the first
** record carrying the largest timestamp; on a tie inside a segment and
** across segments the earlier offset wins.
*/
static void test_max_timestamp_tie(void **state) {
  char *dir = t_mkdtemp("log-maxts");
  kw_options o = opts(400, 0, 0, KL_CODEC_NONE);
  kw_writer *w = kw_open(dir, &o);
  /* batches: [100,900,200] [300] [900 tie] [50] ... */
  int64_t b1[3] = {100, 900, 200}, b2[1] = {300}, b3[2] = {50, 900}, b4[1] = {40};
  append(w, b1, 3);  /* offsets 0..2, 900 at 1 */
  append(w, b2, 1);  /* 3 */
  append(w, b3, 2);  /* 4..5, 900 again at 5 */
  for (int i = 0; i < 6; i++) append(w, b4, 1);
  append(w, b3, 2);
  assert_int_equal(kw_close(w), 0);
  kl_log *log = open_log(dir);
  assert_true(kl_log_segment_count(log) >= 2);
  kl_err err = {0};
  kl_time_lookup tl;
  assert_int_equal(kl_log_lookup_time(log, &g_rd, KL_TS_MAX, &tl, &err), KL_OK);
  assert_int_equal(tl.status, KL_LOOKUP_OK);
  assert_int_equal(tl.offset, 1);
  assert_int_equal(tl.timestamp, 900);
  assert_int_equal(tl.segment_base, 0);
  recs a = {0};
  scan_all(log, &a);
  check_times(log, &a, 0, 1000);
  close_log(log);
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/*
** behaviour.md 6.2: CreateTime need not increase with offsets; the answer
** is the smallest offset whose timestamp is >= t, for wildly shuffled
** timestamps (including -1 "no timestamp" records), many segments and a
** dense index.
*/
static void test_non_monotonic_timestamps(void **state) {
  char *dir = t_mkdtemp("log-nonmono");
  kw_options o = opts(900, 40, 10, KL_CODEC_SNAPPY);
  kw_writer *w = kw_open(dir, &o);
  uint64_t seed = 31337;
  for (int b = 0; b < 150; b++) {
    int64_t ts[8];
    int n = 1 + (int)(t_rand(&seed) % 4);
    for (int i = 0; i < n; i++) {
      uint64_t x = t_rand(&seed) % 20;
      ts[i] = x == 0 ? -1 : (int64_t)(t_rand(&seed) % 3000);
    }
    append(w, ts, n);
  }
  assert_int_equal(kw_close(w), 0);
  kl_log *log = open_log(dir);
  recs a = {0};
  scan_all(log, &a);
  check_times(log, &a, -3 + 3, 3001); /* 0..3001 */
  check_offsets(log, &a);
  close_log(log);
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/* One seek by time on the log of dir opened afresh, checked against the
** scan; the segments it opened. */
static uint64_t seek_fresh(const char *dir, const recs *a, int64_t t) {
  kl_log *log = open_log(dir);
  kl_time_lookup tl;
  kl_err err = {0};
  assert_int_equal(kl_log_lookup_time(log, &g_rd, t, &tl, &err), KL_OK);
  int64_t wts = 0, want = ref_time(a, t, &wts);
  assert_true(want >= 0);
  if (tl.status != KL_LOOKUP_OK || tl.offset != want) {
    fail_msg("time %lld: status %d offset %lld, want %lld", (long long)t, tl.status,
             (long long)tl.offset, (long long)want);
  }
  assert_int_equal(tl.timestamp, wts);
  uint64_t opened = g_rd.stats->segments_opened;
  close_log(log);
  return opened;
}

/* Set path's modification time to that of ref plus delta seconds. */
static void set_mtime(const char *path, const char *ref, long delta) {
  struct stat st;
  assert_int_equal(stat(ref, &st), 0);
  struct timespec tv[2] = {st.st_atim, st.st_mtim};
  tv[1].tv_sec += delta;
  assert_int_equal(utimensat(AT_FDCWD, path, tv, 0), 0);
}

/*
** A closed segment is dated by its time index's last entry (Kafka's
** final entry on roll) without opening its .log: a seek by time opens
** only the segment holding the answer.  The word is not taken, and the
** segment is read, when the index is missing, preallocated (a zero slot
** last), stale (its last entry past the segment's offsets) or older than
** its .log; each of these indexes understates the segment's largest
** timestamp, so taking it would skip the segment holding the answer.
*/
static void test_dating_from_time_index(void **state) {
  char *dir = t_mkdtemp("log-dating");
  kw_options o = opts(1500, 200, 0, KL_CODEC_NONE);
  write_log(dir, &o, 160, 0, ts_jitter, 23);
  kl_log *log = open_log(dir);
  assert_true(kl_log_segment_count(log) >= 6);
  recs a = {0};
  scan_all(log, &a);
  /* Segment k, its largest timestamp, and its files. */
  kl_segment *sk = kl_log_next(log, kl_log_next(log, kl_log_next(log, kl_log_first(log))));
  int64_t base = sk->base, next_base = sk->next_base, maxk = INT64_MIN, before = INT64_MIN;
  for (size_t i = 0; i < a.n; i++) {
    if (a.r[i].seg_base == base && a.r[i].ts > maxk) maxk = a.r[i].ts;
    if (a.r[i].seg_base < base && a.r[i].ts > before) before = a.r[i].ts;
  }
  char logp[4096], tixp[4096];
  snprintf(logp, sizeof logp, "%s", sk->log_path);
  snprintf(tixp, sizeof tixp, "%s", sk->timeindex_path);
  close_log(log);
  assert_true(maxk > before); /* the first record reaching maxk is in segment k */
  size_t n;
  uint8_t *tix = t_read_file(tixp, &n);
  assert_non_null(tix);
  assert_true(n >= 24 && n % 12 == 0);
  assert_int_equal(kl_get_i64(tix + n - 12), maxk); /* the final entry */
  int64_t prev = kl_get_i64(tix + n - 24);
  assert_true(prev + 1 < maxk);

  /* Taken: only segment k is opened. */
  assert_int_equal(seek_fresh(dir, &a, maxk), 1);
  assert_int_equal(seek_fresh(dir, &a, before + 1), 1);

  /* Preallocated: a zero slot after the entries (a live segment's index,
  ** not trimmed on roll: a crash), the final entry not written. */
  uint8_t *p = calloc(1, n + 24);
  memcpy(p, tix, n - 12);
  assert_int_equal(t_write_file(tixp, p, n), 0);
  seek_fresh(dir, &a, maxk);
  memcpy(p, tix, n);
  assert_int_equal(t_write_file(tixp, p, n + 24), 0);
  seek_fresh(dir, &a, maxk);
  /* Stale: the last entry names an offset past the segment's. */
  memcpy(p, tix, n);
  kl_put_u64(p + n - 12, (uint64_t)(prev + 1));
  kl_put_u32(p + n - 4, (uint32_t)(next_base - base + 2));
  assert_int_equal(t_write_file(tixp, p, n), 0);
  seek_fresh(dir, &a, maxk);
  /* Older than its .log: the final entry is missing, the .log was
  ** appended to after the index was written. */
  assert_int_equal(t_write_file(tixp, tix, n - 12), 0);
  set_mtime(tixp, logp, -10);
  seek_fresh(dir, &a, maxk);
  /* Missing. */
  assert_int_equal(unlink(tixp), 0);
  seek_fresh(dir, &a, maxk);
  /* Whole again, newer than the .log: taken again. */
  assert_int_equal(t_write_file(tixp, tix, n), 0);
  set_mtime(tixp, logp, 10);
  assert_int_equal(seek_fresh(dir, &a, maxk), 1);
  free(p);
  free(tix);
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/* The largest timestamp of the records a (INT64_MIN when none). */
static int64_t largest_ts(const recs *a) {
  int64_t m = INT64_MIN;
  for (size_t i = 0; i < a->n; i++) m = a->r[i].ts > m ? a->r[i].ts : m;
  return m;
}

/*
** What dating costs a seek by time on a fresh log: each closed segment
** before the answer's is dated by its time index's tail in five system
** calls (its .log's stat; the .timeindex's open, fstat, one read, close),
** its .log not opened; only the answer's segment is opened.  Timestamps
** jitter across segment boundaries (a segment's largest timestamp exceeds
** the next one's smallest), and every answer is the scan's.
*/
static void test_dating_system_calls(void **state) {
  char *dir = t_mkdtemp("log-dating-calls");
  kw_options o = opts(1500, 200, 0, KL_CODEC_NONE);
  write_log(dir, &o, 400, 0, ts_jitter, 31);
  kl_log *log = open_log(dir);
  recs a = {0};
  scan_all(log, &a);
  int64_t nseg = (int64_t)kl_log_segment_count(log);
  close_log(log);
  assert_true(nseg >= 20);
  int crossed = 0; /* boundaries where the running maximum exceeds what follows */
  for (size_t i = 1; i < a.n; i++) {
    crossed += a.r[i].seg_base != a.r[i - 1].seg_base && a.r[i].ts < a.r[i - 1].ts;
  }
  assert_true(crossed > 0);
  int64_t ts_max = largest_ts(&a);
  for (int k = 0; k < 4; k++) {
    /* In the first segment, a third and two thirds in, past every record. */
    int64_t t = k == 3 ? ts_max + 1 : a.r[a.n * (size_t)k / 3].ts;
    t_faultos f;
    t_faultos_init(&f);
    kl_log *lg = NULL;
    kl_err err = {0};
    assert_int_equal(kl_log_open(&f.env, dir, &lg, &err), KL_OK);
    kl_reader rd;
    kl_reader_init(&rd, &f.env, NULL, KL_ON_CORRUPT_ERROR);
    long before[T_OS_KINDS];
    memcpy(before, f.by_kind, sizeof before);
    kl_time_lookup tl;
    assert_int_equal(kl_log_lookup_time(lg, &rd, t, &tl, &err), KL_OK);
    int64_t wts = 0, want = ref_time(&a, t, &wts);
    if (want < 0) {
      assert_int_equal(tl.status, KL_LOOKUP_NOT_FOUND);
    } else {
      assert_int_equal(tl.status, KL_LOOKUP_OK);
      assert_int_equal(tl.offset, want);
      assert_int_equal(tl.timestamp, wts);
    }
    long d[T_OS_KINDS], total = 0;
    for (int i = 0; i < T_OS_KINDS; i++) total += d[i] = f.by_kind[i] - before[i];
    int64_t dated = (int64_t)rd.stats->segments_dated;
    print_message("  t %lld: %lld of %lld segments dated, %lld opened; calls: %ld (open %ld, "
                  "stat %ld, read %ld, close %ld)\n", (long long)t, (long long)dated,
                  (long long)nseg, (long long)rd.stats->segments_opened, total, d[0], d[6], d[2],
                  d[1]);
    /* The segments up to the answer's are dated, and only they (the last
    ** has no final entry: its tail is read); past every record, all but the
    ** last. */
    int64_t upto = 1;
    kl_segment *s = kl_log_first(lg);
    for (; s && s->base != tl.segment_base; s = kl_log_next(lg, s)) upto++;
    if (want < 0 || !s || s->is_last) upto = nseg - 1;
    assert_int_equal(dated, want < 0 ? nseg - 1 : upto);
    assert_true(rd.stats->segments_opened <= 2);
    /* Five calls per segment dated; the rest is the answer's segment (and
    ** the last one's tail): its .log, .index and .timeindex. */
    assert_true(d[0] <= dated + 4);         /* opens */
    assert_true(d[6] <= 2 * dated + 8);     /* the .log's stat, the index's fstat */
    assert_true(d[2] <= dated + 8);         /* reads */
    assert_true(d[1] <= dated + 4);         /* closes */
    assert_true(total <= 5 * dated + 24);
    kl_reader_free(&rd);
    kl_log_close(lg);
    t_faultos_free(&f);
  }
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/*
** Dating with a helper thread (core/dating.h): the facts a pass gives are
** those each segment's own reads give, whichever thread read them, and a
** seek that dates with a helper answers, dates and counts as one that
** dates alone.
*/
static void test_dating_with_a_helper(void **state) {
  char *dir = t_mkdtemp("log-dating-helper");
  kw_options o = opts(600, 200, 0, KL_CODEC_NONE);
  write_log(dir, &o, 1200, 0, ts_jitter, 31);
  kl_log *log = open_log(dir);
  recs a = {0};
  scan_all(log, &a);
  size_t n = kl_log_segment_count(log);
  assert_true(n > KL_DATE_PASS_MIN + 20);
  const char **paths = calloc(2 * n, sizeof *paths);
  size_t i = 0;
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s), i++) {
    if (i % 7 == 3) continue; /* not dated from its files: left unread */
    paths[2 * i] = s->log_path;
    paths[2 * i + 1] = s->timeindex_path;
  }
  /* Rounds 1 and 2 name the files under a descriptor of the directory. */
  int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  assert_true(dirfd >= 0);
  size_t off = strlen(dir) + 1;
  for (int round = 0; round < 3; round++) {
    kl_date_pass *p;
    int dfd = round ? dirfd : -1;
    assert_int_equal(kl_date_begin(NULL, dfd, round ? off : 0, paths, n, 0, &p), KL_OK);
    for (i = 0; i < n; i++) {
      const kl_date_facts *f = kl_date_get(p, i);
      if (!paths[2 * i]) {
        assert_int_equal(f->state, KL_DATE_UNREAD);
        continue;
      }
      kl_date_facts mine;
      kl_date_fetch(NULL, -1, 0, paths[2 * i], paths[2 * i + 1], &mine);
      assert_int_equal(f->state, KL_DATE_READ);
      assert_int_equal(f->state, mine.state);
      assert_int_equal(f->log_size, mine.log_size);
      assert_int_equal(f->log_ino, mine.log_ino);
      assert_int_equal(f->ti_size, mine.ti_size);
      assert_int_equal(f->read, mine.read);
      assert_int_equal(f->n, mine.n);
      assert_memory_equal(f->e, mine.e, mine.n);
    }
    assert_true(kl_date_helped(p) <= n);
    kl_date_end(p);
  }
  close(dirfd);
  /* Stopped early, a pass ends at once. */
  kl_date_pass *p;
  assert_int_equal(kl_date_begin(NULL, -1, 0, paths, n, 0, &p), KL_OK);
  assert_int_equal(kl_date_get(p, 0)->state, KL_DATE_READ);
  kl_date_end(p);
  free(paths);
  close_log(log);
  int64_t ts_max = largest_ts(&a);
  for (int k = 0; k < 5; k++) {
    int64_t t = k == 4 ? ts_max + 1 : a.r[a.n * (size_t)k / 4].ts + 1;
    kl_time_lookup tl[2];
    kl_stats st[2];
    for (int h = 0; h < 2; h++) {
      kl_log *lg = open_log(dir);
      kl_reader rd;
      kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
      rd.helpers = h;
      kl_err err = {0};
      assert_int_equal(kl_log_lookup_time(lg, &rd, t, &tl[h], &err), KL_OK);
      st[h] = *rd.stats;
      if (!h) assert_int_equal(st[h].segments_helped, 0);
      kl_reader_free(&rd);
      close_log(lg);
    }
    int64_t wts = 0, want = ref_time(&a, t, &wts);
    assert_int_equal(tl[1].status, want < 0 ? KL_LOOKUP_NOT_FOUND : KL_LOOKUP_OK);
    assert_int_equal(tl[1].status, tl[0].status);
    assert_int_equal(tl[1].offset, tl[0].offset);
    assert_int_equal(tl[1].timestamp, tl[0].timestamp);
    assert_int_equal(tl[1].segment_base, tl[0].segment_base);
    if (want >= 0) assert_int_equal(tl[1].offset, want);
    assert_int_equal(st[1].segments_dated, st[0].segments_dated);
    assert_int_equal(st[1].reads, st[0].reads);
    assert_int_equal(st[1].bytes_read, st[0].bytes_read);
    assert_true(st[1].segments_helped <= st[1].segments_dated);
  }
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/*
** A seek by time into a log of small batches reads the stretch between
** the two index entries before the target at once (scan.c walk_context),
** not a header at a time: a few reads a lookup however many batches the
** index interval holds, and the same answers as a plain walk.
*/
static void test_seek_reads_context_whole(void **state) {
  (void)state;
  char *dir = t_mkdtemp("log-context-read");
  kw_options o = opts(1 << 20, 32768, 0, KL_CODEC_NONE);
  write_log(dir, &o, 600, 64, ts_jitter, 5); /* ~2 KB batches, ~16 a stretch */
  recs a = {0};
  kl_log *log = open_log(dir);
  scan_all(log, &a);
  close_log(log);
  uint64_t seed = 11;
  for (int k = 0; k < 20; k++) {
    int64_t t = a.r[t_rand(&seed) % a.n].ts;
    kl_log *lg = open_log(dir);
    kl_time_lookup tl;
    kl_err err = {0};
    assert_int_equal(kl_log_lookup_time(lg, &g_rd, t, &tl, &err), KL_OK);
    int64_t wts = 0;
    assert_int_equal(tl.status, KL_LOOKUP_OK);
    assert_int_equal(tl.offset, ref_time(&a, t, &wts));
    /* 58 reads a lookup when each header was read on its own, 7 to 9 now */
    assert_true(g_rd.stats->reads <= 12);
    close_log(lg);
  }
  free(a.r);
  t_rmdir(dir);
  free(dir);
}

/* A table with calls of its own (here: counting) sees every call dating
** makes, by whole path, though the POSIX table's dating names files under
** a descriptor of their directory (os.h kl_os_open_at). */
typedef struct counting_os {
  kl_os os;
  atomic_int ti_opens, log_stats; /* a helper thread calls too */
} counting_os;

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}
static int c_open(const kl_os *os, const char *path, int flags, int mode) {
  counting_os *c = (counting_os *)os->ud;
  assert_true(path[0] == '/');
  if (ends_with(path, ".timeindex")) atomic_fetch_add(&c->ti_opens, 1);
  return kl_os_posix()->xOpen(kl_os_posix(), path, flags, mode);
}
static int c_stat(const kl_os *os, const char *path, struct stat *st) {
  counting_os *c = (counting_os *)os->ud;
  assert_true(path[0] == '/');
  if (ends_with(path, ".log")) atomic_fetch_add(&c->log_stats, 1);
  return kl_os_posix()->xStat(kl_os_posix(), path, st);
}

static void test_dating_through_the_os_table(void **state) {
  (void)state;
  char *dir = t_mkdtemp("log-dating-os");
  char *abs = realpath(dir, NULL);
  kw_options o = opts(600, 200, 0, KL_CODEC_NONE);
  write_log(abs, &o, 400, 0, ts_jitter, 7);
  recs a = {0};
  kl_log *log = open_log(abs);
  scan_all(log, &a);
  close_log(log);
  int64_t t = largest_ts(&a) + 1; /* dates every closed segment */
  for (int h = 0; h < 2; h++) {
    counting_os c = {.os = {.xOpen = c_open, .xStat = c_stat}};
    atomic_init(&c.ti_opens, 0);
    atomic_init(&c.log_stats, 0);
    c.os.ud = &c;
    kl_env env = {0};
    env.os = &c.os;
    kl_log *lg = NULL;
    kl_err err = {0};
    assert_int_equal(kl_log_open(&env, abs, &lg, &err), KL_OK);
    kl_reader rd;
    kl_reader_init(&rd, &env, NULL, KL_ON_CORRUPT_ERROR);
    rd.helpers = h;
    kl_time_lookup tl;
    assert_int_equal(kl_log_lookup_time(lg, &rd, t, &tl, &err), KL_OK);
    assert_int_equal(tl.status, KL_LOOKUP_NOT_FOUND);
    assert_true(rd.stats->segments_dated > 16);
    assert_true((uint64_t)atomic_load(&c.ti_opens) >= rd.stats->segments_dated);
    assert_true((uint64_t)atomic_load(&c.log_stats) >= rd.stats->segments_dated);
    kl_reader_free(&rd);
    kl_log_close(lg);
  }
  free(a.r);
  t_rmdir(abs);
  free(abs);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_open_missing_dir),
      cmocka_unit_test(test_open_empty_dir),
      cmocka_unit_test(test_open_foreign_files),
      cmocka_unit_test(test_segment_map),
      cmocka_unit_test(test_find_offset_by_timestamp),
      cmocka_unit_test(test_lookups_multi_segment),
      cmocka_unit_test(test_lookups_without_index),
      cmocka_unit_test(test_lookups_garbage_index),
      cmocka_unit_test(test_lookups_misleading_index),
      cmocka_unit_test(test_gaps),
      cmocka_unit_test(test_offsets_above_2_32),
      cmocka_unit_test(test_segment_named_near_2_63),
      cmocka_unit_test(test_max_timestamp_tie),
      cmocka_unit_test(test_non_monotonic_timestamps),
      cmocka_unit_test(test_dating_from_time_index),
      cmocka_unit_test(test_dating_system_calls),
      cmocka_unit_test(test_dating_with_a_helper),
      cmocka_unit_test(test_dating_through_the_os_table),
      cmocka_unit_test(test_seek_reads_context_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
