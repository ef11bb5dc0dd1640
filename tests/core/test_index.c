/*
** test_index.c - the .index / .timeindex files: opening (missing, empty,
** bad length, preallocated zero tails, stale entries past the log), Kafka's
** OffsetIndexTest / TimeIndexTest lookups, the exact probe sequence of the
** two-zone search (behaviour.md 5.3), floor and ceiling against a linear
** reference and the classic binary search for every size around the warm
** boundary, and the O(log n) probe count.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

/* ---- building index bytes ---- */

/* Offset index bytes of n entries (rel[i], pos[i]) plus zeros zero slots. */
static uint8_t *offset_bytes(const int64_t *rel, const int64_t *pos, int64_t n, int64_t zeros,
                             size_t *len) {
  *len = (size_t)(n + zeros) * 8;
  uint8_t *p = calloc(1, *len ? *len : 1);
  assert_non_null(p);
  for (int64_t i = 0; i < n; i++) {
    kl_put_u32(p + i * 8, (uint32_t)rel[i]);
    kl_put_u32(p + i * 8 + 4, (uint32_t)pos[i]);
  }
  return p;
}

/* Time index bytes of n entries (ts[i], rel[i]) plus zeros zero slots. */
static uint8_t *time_bytes(const int64_t *ts, const int64_t *rel, int64_t n, int64_t zeros,
                           size_t *len) {
  *len = (size_t)(n + zeros) * 12;
  uint8_t *p = calloc(1, *len ? *len : 1);
  assert_non_null(p);
  for (int64_t i = 0; i < n; i++) {
    kl_put_u64(p + i * 12, (uint64_t)ts[i]);
    kl_put_u32(p + i * 12 + 8, (uint32_t)rel[i]);
  }
  return p;
}

/* A temp dir and a file path inside it. */
typedef struct tdir {
  char *dir;
  char path[4096];
} tdir;

static const char *tfile(tdir *d, const char *name, const void *p, size_t n) {
  snprintf(d->path, sizeof d->path, "%s/%s", d->dir, name);
  if (p) assert_int_equal(t_write_file(d->path, p, n), 0);
  return d->path;
}

/* An in-memory index over bytes (no file): what kl_index_open would give
** for a trimmed file, for the searches that need thousands of shapes. */
static kl_index mem_index(int kind, int64_t base, const uint8_t *p, size_t len) {
  kl_index ix;
  memset(&ix, 0, sizeof ix);
  ix.kind = kind;
  ix.base = base;
  ix.map = p;
  ix.map_len = len;
  ix.file_len = (int64_t)len;
  ix.n = (int64_t)(len / (size_t)kind);
  return ix;
}

/* Reference answers: linear scans over the keys. */
static int64_t ref_floor(const kl_index *ix, int64_t target) {
  int64_t r = -1;
  for (int64_t i = 0; i < ix->n; i++) {
    if (kl_index_key(ix, i) <= target) r = i;
  }
  return r;
}
static int64_t ref_ceiling(const kl_index *ix, int64_t target) {
  for (int64_t i = 0; i < ix->n; i++) {
    if (kl_index_key(ix, i) >= target) return i;
  }
  return -1;
}

/* The probe hook: records slots. */
typedef struct probes {
  int64_t slot[4096];
  int n;
} probes;
static void record_probe(void *ud, int64_t slot) {
  probes *pr = ud;
  if (pr->n < 4096) pr->slot[pr->n] = slot;
  pr->n++;
}

/* ---------------------------------------------------------------------- */

/*
** Kafka >= 2.3 creates index files lazily: a missing file is an empty
** index (file_len -1), not an error; lookups find nothing.
*/
static void test_open_missing(void **state) {
  tdir d = {t_mkdtemp("ix-missing"), {0}};
  assert_non_null(d.dir);
  kl_index ix;
  kl_err err = {0};
  for (int kind = KL_INDEX_OFFSET; kind <= KL_INDEX_TIME; kind += 4) {
    assert_int_equal(kl_index_open(&ix, NULL, kind, tfile(&d, "00000000000000000000.index", NULL, 0), 0,
                                   1000, &err),
                     KL_OK);
    assert_int_equal(err.rc, KL_OK);
    assert_int_equal(ix.kind, kind);
    assert_int_equal(ix.file_len, -1);
    assert_int_equal(ix.n, 0);
    assert_null(ix.map);
    assert_false(ix.unusable);
    assert_int_equal(kl_index_floor(&ix, 5, NULL), -1);
    assert_int_equal(kl_index_ceiling(&ix, 5, NULL), -1);
    assert_int_equal(kl_index_floor_classic(&ix, 5, NULL), -1);
    kl_index_close(&ix, NULL);
  }
  /* A directory where the file should be cannot be opened as one, named. */
  kl_rc rc = kl_index_open(&ix, NULL, KL_INDEX_OFFSET, d.dir, 0, 1000, &err);
  if (rc != KL_OK) {
    assert_int_equal(rc, KL_CANTOPEN);
    assert_non_null(strstr(err.msg, d.dir));
  }
  kl_index_close(&ix, NULL);
  t_rmdir(d.dir);
  free(d.dir);
}

/*
** An empty file (a trimmed index of a segment without entries, or a v0
** segment's time index) has no entries and is usable; OffsetIndexTest
** "empty lookup" and TimeIndexTest "empty lookup" find nothing.
*/
static void test_open_empty(void **state) {
  tdir d = {t_mkdtemp("ix-empty"), {0}};
  kl_index ix;
  kl_err err = {0};
  assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_OFFSET, tfile(&d, "a.index", "", 0), 45, 100, &err),
                   KL_OK);
  assert_int_equal(ix.file_len, 0);
  assert_int_equal(ix.n, 0);
  assert_false(ix.unusable);
  assert_int_equal(kl_index_floor(&ix, 92, NULL), -1);
  kl_index_close(&ix, NULL);
  assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_TIME, tfile(&d, "a.timeindex", "", 0), 45, 100, &err),
                   KL_OK);
  assert_int_equal(ix.n, 0);
  assert_int_equal(kl_index_floor(&ix, 100, NULL), -1);
  kl_index_close(&ix, NULL);
  t_rmdir(d.dir);
  free(d.dir);
}

/*
** format.md 7.3 rule 3 / LogLoaderTest.testCorruptIndexRebuild: a length
** that is not a multiple of the entry size ("two spaces", 12 bytes of
** offset index, 16 bytes of time index) marks the index unusable with no
** entries; it is not an open error.
*/
static void test_open_bad_length(void **state) {
  tdir d = {t_mkdtemp("ix-badlen"), {0}};
  kl_index ix;
  kl_err err = {0};
  static const struct {
    int kind;
    size_t len;
  } cases[] = {{KL_INDEX_OFFSET, 2}, {KL_INDEX_OFFSET, 12}, {KL_INDEX_OFFSET, 81},
               {KL_INDEX_TIME, 2},   {KL_INDEX_TIME, 16},   {KL_INDEX_TIME, 8}};
  uint8_t junk[100];
  memset(junk, ' ', sizeof junk);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(kl_index_open(&ix, NULL, cases[i].kind, tfile(&d, "x", junk, cases[i].len), 0,
                                   100000, &err),
                     KL_OK);
    assert_true(ix.unusable);
    assert_int_equal(ix.n, 0);
    assert_int_equal(ix.file_len, (int64_t)cases[i].len);
    assert_int_equal(kl_index_floor(&ix, 1000, NULL), -1);
    kl_index_close(&ix, NULL);
  }
  /* The exact multiples are usable. */
  assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_OFFSET, tfile(&d, "x", junk, 16), 0, 1 << 30, &err),
                   KL_OK);
  assert_false(ix.unusable);
  assert_int_equal(ix.n, 2);
  kl_index_close(&ix, NULL);
  t_rmdir(d.dir);
  free(d.dir);
}

/*
** format.md 7.3 / 8.2: a live broker's preallocated index is padded with
** zero slots; the real count is the entries before them (zero_slots counts
** the padding).  Also an all-zero file (nothing written yet).  Kafka would
** count file length / entry size.
*/
static void test_open_preallocated(void **state) {
  tdir d = {t_mkdtemp("ix-prealloc"), {0}};
  kl_index ix;
  kl_err err = {0};
  int64_t rel[7], pos[7], ts[7];
  for (int i = 0; i < 7; i++) {
    rel[i] = 3 * (i + 1);
    pos[i] = 4100 * (i + 1);
    ts[i] = 1000 + 10 * i;
  }
  static const int64_t zeros[] = {0, 1, 2, 100, 1021};
  for (int z = 0; z < 5; z++) {
    for (int64_t n = 0; n <= 7; n++) {
      size_t len;
      uint8_t *p = offset_bytes(rel, pos, n, zeros[z], &len);
      assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_OFFSET, tfile(&d, "p.index", p, len), 500,
                                     1 << 20, &err),
                       KL_OK);
      assert_int_equal(ix.n, n);
      assert_int_equal(ix.zero_slots, zeros[z]);
      assert_int_equal(ix.stale, 0);
      assert_int_equal(ix.file_len, (int64_t)len);
      if (n > 0) {
        assert_int_equal(kl_index_offset_at(&ix, n - 1), 500 + rel[n - 1]);
        assert_int_equal(kl_index_position_at(&ix, n - 1), pos[n - 1]);
        /* A target past everything lands on the last real entry. */
        assert_int_equal(kl_index_floor(&ix, INT64_MAX, NULL), n - 1);
      }
      kl_index_close(&ix, NULL);
      free(p);

      p = time_bytes(ts, rel, n, zeros[z], &len);
      assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_TIME, tfile(&d, "p.timeindex", p, len), 500,
                                     1 << 20, &err),
                       KL_OK);
      assert_int_equal(ix.n, n);
      assert_int_equal(ix.zero_slots, zeros[z]);
      if (n > 0) {
        assert_int_equal(kl_index_timestamp_at(&ix, n - 1), ts[n - 1]);
        assert_int_equal(kl_index_time_offset_at(&ix, n - 1), 500 + rel[n - 1]);
        assert_int_equal(kl_index_floor(&ix, INT64_MAX, NULL), n - 1);
      }
      kl_index_close(&ix, NULL);
      free(p);
    }
  }
  t_rmdir(d.dir);
  free(d.dir);
}

/*
** format.md 7.3 rule 2 (truncateTo leaves stale entries): offset index
** entries whose position is at or past the .log size are dropped and
** counted as stale, also together with a zero tail; an unknown log size
** (-1) trims nothing.
*/
static void test_open_stale(void **state) {
  tdir d = {t_mkdtemp("ix-stale"), {0}};
  kl_index ix;
  kl_err err = {0};
  int64_t rel[10], pos[10];
  for (int i = 0; i < 10; i++) {
    rel[i] = i + 1;
    pos[i] = 100 * (i + 1);
  }
  static const struct {
    int64_t zeros, log_size, n;
  } cases[] = {
      {0, 550, 5},  {5, 550, 5},   {0, 500, 4}, {0, 501, 5}, {0, 1001, 10},
      {0, 1000, 9}, {0, 100, 0},   {0, 99, 0},  {3, 50, 0},  {2, 5000, 10},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t len;
    uint8_t *p = offset_bytes(rel, pos, 10, cases[c].zeros, &len);
    assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_OFFSET, tfile(&d, "s.index", p, len), 0,
                                   cases[c].log_size, &err),
                     KL_OK);
    if (ix.n != cases[c].n) {
      fail_msg("case %zu: n %lld, want %lld", c, (long long)ix.n, (long long)cases[c].n);
    }
    assert_int_equal(ix.zero_slots, cases[c].zeros);
    assert_int_equal(ix.stale, 10 - cases[c].n);
    kl_index_close(&ix, NULL);
    int64_t zs = -7;
    assert_int_equal(kl_index_count(KL_INDEX_OFFSET, p, len, 0, cases[c].log_size, &zs),
                     cases[c].n);
    assert_int_equal(zs, cases[c].zeros);
    assert_int_equal(kl_index_count(KL_INDEX_OFFSET, p, len, 0, -1, NULL), 10);
    free(p);
  }
  t_rmdir(d.dir);
  free(d.dir);
}

/*
** OffsetIndexTest.lookupExtremeCases / testEntry / randomLookupTest (base 45,
** 30 entries): below the first key there is no floor (the segment lookup
** then uses (45, 0)); the last key finds the last slot; entries read back;
** random strictly increasing offsets and positions agree with a sorted-map
** floor for every offset around them.
*/
static void test_offset_index_kafka_cases(void **state) {
  tdir d = {t_mkdtemp("ix-kafka"), {0}};
  kl_index ix;
  kl_err err = {0};
  int64_t rel[30], pos[30];
  for (int i = 0; i < 30; i++) {
    rel[i] = 1 + i; /* offset 46 + i */
    pos[i] = i + 1;
  }
  size_t len;
  uint8_t *p = offset_bytes(rel, pos, 30, 0, &len);
  assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_OFFSET, tfile(&d, "k.index", p, len), 45, 1000, &err),
                   KL_OK);
  assert_int_equal(ix.n, 30);
  assert_int_equal(kl_index_floor(&ix, 45, NULL), -1);
  assert_int_equal(kl_index_floor(&ix, 75, NULL), 29);
  assert_int_equal(kl_index_offset_at(&ix, 29), 75);
  assert_int_equal(kl_index_floor(&ix, 1000000, NULL), 29);
  for (int i = 0; i < 30; i++) {
    assert_int_equal(kl_index_offset_at(&ix, i), 46 + i);
    assert_int_equal(kl_index_position_at(&ix, i), i + 1);
    assert_int_equal(kl_index_key(&ix, i), 46 + i);
  }
  kl_index_close(&ix, NULL);
  free(p);

  uint64_t seed = 45;
  for (int round = 0; round < 50; round++) {
    int64_t o = 0, q = 0;
    for (int i = 0; i < 30; i++) {
      o += 1 + (int64_t)(t_rand(&seed) % 20);
      q += 1 + (int64_t)(t_rand(&seed) % 5000);
      rel[i] = o;
      pos[i] = q;
    }
    p = offset_bytes(rel, pos, 30, 0, &len);
    assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_OFFSET, tfile(&d, "r.index", p, len), 45,
                                   q + 1, &err),
                     KL_OK);
    assert_int_equal(ix.n, 30);
    for (int64_t t = 0; t <= 45 + o + 2; t++) {
      int64_t want = -1;
      for (int i = 0; i < 30; i++) {
        if (45 + rel[i] <= t) want = i;
      }
      assert_int_equal(kl_index_floor(&ix, t, NULL), want);
    }
    kl_index_close(&ix, NULL);
    free(p);
  }
  t_rmdir(d.dir);
  free(d.dir);
}

/*
** TimeIndexTest.testLookUp / testEntry (base 45, entries (10i, 45+10i) for
** i = 1..29): 9 -> none (the segment lookup then uses (-1, 45)); 25 ->
** (20, 65); 30 -> (30, 75); slots 0..3 read back.
*/
static void test_time_index_kafka_cases(void **state) {
  tdir d = {t_mkdtemp("ix-time"), {0}};
  kl_index ix;
  kl_err err = {0};
  int64_t ts[29], rel[29];
  for (int i = 1; i <= 29; i++) {
    ts[i - 1] = 10 * i;
    rel[i - 1] = 10 * i;
  }
  size_t len;
  uint8_t *p = time_bytes(ts, rel, 29, 1, &len); /* 30 slots, last reserved */
  assert_int_equal(kl_index_open(&ix, NULL, KL_INDEX_TIME, tfile(&d, "t.timeindex", p, len), 45, 1000, &err),
                   KL_OK);
  assert_int_equal(ix.n, 29);
  assert_int_equal(ix.zero_slots, 1);
  assert_int_equal(kl_index_floor(&ix, 9, NULL), -1);
  int64_t s = kl_index_floor(&ix, 25, NULL);
  assert_int_equal(kl_index_timestamp_at(&ix, s), 20);
  assert_int_equal(kl_index_time_offset_at(&ix, s), 65);
  s = kl_index_floor(&ix, 30, NULL);
  assert_int_equal(kl_index_timestamp_at(&ix, s), 30);
  assert_int_equal(kl_index_time_offset_at(&ix, s), 75);
  static const int64_t slots[4][2] = {{10, 55}, {20, 65}, {30, 75}, {40, 85}};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(kl_index_timestamp_at(&ix, i), slots[i][0]);
    assert_int_equal(kl_index_time_offset_at(&ix, i), slots[i][1]);
    assert_int_equal(kl_index_key(&ix, i), slots[i][0]);
  }
  assert_int_equal(kl_index_ceiling(&ix, 25, NULL), 2);
  assert_int_equal(kl_index_ceiling(&ix, 291, NULL), -1);
  kl_index_close(&ix, NULL);
  free(p);
  t_rmdir(d.dir);
  free(d.dir);
}

/* 5000 offset entries with keys 10, 20, ..., 50000 (base 0). */
static uint8_t *probe_fixture(size_t *len) {
  static int64_t rel[5000], pos[5000];
  for (int i = 0; i < 5000; i++) {
    rel[i] = 10 * (i + 1);
    pos[i] = 4096 * (i + 1);
  }
  return offset_bytes(rel, pos, 5000, 0, len);
}

static void run_probes(kl_index *ix, int64_t target, probes *pr, int64_t *slot, int ceiling) {
  kl_stats st = {0};
  pr->n = 0;
  ix->probe = record_probe;
  ix->probe_ud = pr;
  *slot = ceiling ? kl_index_ceiling(ix, target, &st) : kl_index_floor(ix, target, &st);
  assert_int_equal(st.index_probes, (uint64_t)pr->n);
}

static void expect_probes(const probes *pr, const int64_t *want, int n) {
  if (pr->n != n) {
    char buf[512];
    int k = 0;
    for (int i = 0; i < pr->n && i < 40 && k < 480; i++) {
      k += snprintf(buf + k, sizeof buf - (size_t)k, "%lld ", (long long)pr->slot[i]);
    }
    fail_msg("%d probes (%s), want %d", pr->n, buf, n);
  }
  for (int i = 0; i < n; i++) assert_int_equal(pr->slot[i], want[i]);
}

/*
** behaviour.md 5.3 probe examples (tests.md 27): with 5000 entries keyed
** 10..50000, firstHot = 3975.  40000 probes 3975, 4487, 4231, 4103, 4039,
** 4007, 3991, 3999 -> slot 3999; 60000 climbs the warm zone to 4999; 5
** probes 3975, 0 -> none; 39760 (= key(firstHot)) takes the cold branch
** 3975, 0, 1988, 2982, ... 3974, 3975 -> slot 3975.
*/
static void test_two_zone_probe_sequence(void **state) {
  size_t len;
  uint8_t *p = probe_fixture(&len);
  kl_index ix = mem_index(KL_INDEX_OFFSET, 0, p, len);
  static probes pr;
  int64_t slot;

  static const int64_t w40000[] = {3975, 4487, 4231, 4103, 4039, 4007, 3991, 3999};
  run_probes(&ix, 40000, &pr, &slot, 0);
  assert_int_equal(slot, 3999);
  expect_probes(&pr, w40000, 8);

  run_probes(&ix, 60000, &pr, &slot, 0);
  assert_int_equal(slot, 4999);
  assert_int_equal(pr.slot[0], 3975);
  assert_int_equal(pr.slot[1], 4487);
  assert_int_equal(pr.slot[2], 4743);
  assert_int_equal(pr.slot[pr.n - 2], 4998);
  assert_int_equal(pr.slot[pr.n - 1], 4999);
  for (int i = 0; i < pr.n; i++) assert_true(pr.slot[i] >= 3975); /* warm only */

  static const int64_t w5[] = {3975, 0};
  run_probes(&ix, 5, &pr, &slot, 0);
  assert_int_equal(slot, -1);
  expect_probes(&pr, w5, 2);

  run_probes(&ix, 39760, &pr, &slot, 0);
  assert_int_equal(slot, 3975);
  assert_true(pr.n >= 6);
  assert_int_equal(pr.slot[0], 3975);
  assert_int_equal(pr.slot[1], 0);
  assert_int_equal(pr.slot[2], 1988);
  assert_int_equal(pr.slot[3], 2982);
  assert_int_equal(pr.slot[pr.n - 2], 3974);
  assert_int_equal(pr.slot[pr.n - 1], 3975);

  /* Kafka before 2.1: the classic search starts at slot 0, then the
  ** middle of the whole file. */
  kl_stats st = {0};
  pr.n = 0;
  assert_int_equal(kl_index_floor_classic(&ix, 40000, &st), 3999);
  assert_int_equal(pr.slot[0], 0);
  assert_int_equal(pr.slot[1], 2500);
  assert_int_equal(st.index_probes, (uint64_t)pr.n);

  /* Ceiling probes the same zones: 40001 -> slot 4000, 5 -> slot 0. */
  run_probes(&ix, 40001, &pr, &slot, 1);
  assert_int_equal(slot, 4000);
  assert_int_equal(pr.slot[0], 3975);
  run_probes(&ix, 5, &pr, &slot, 1);
  assert_int_equal(slot, 0);
  run_probes(&ix, 50001, &pr, &slot, 1);
  assert_int_equal(slot, -1);
  free(p);
}

/* The sizes around the warm boundaries (1024 offset, 682 time entries). */
static const int64_t SIZES[] = {0,   1,   2,   3,   4,    7,    100,  681,  682,  683,  684,
                                685, 1023, 1024, 1025, 1026, 1027, 2047, 2048, 2049, 3000};

/* Check floor, classic floor and ceiling against the linear reference at
** every key, either side of it, and beyond both ends. */
static void check_searches(const kl_index *ix, uint64_t *seed) {
  int64_t n = ix->n;
  int64_t targets[16];
  for (int64_t i = -1; i <= n; i++) {
    /* Large sizes: every slot near the ends and the warm boundary, and a
    ** random tenth elsewhere (the reference is a linear scan). */
    int64_t fh = n - 1 - KL_WARM_BYTES / ix->kind;
    if (n > 400 && i > 50 && i < n - 50 && (i < fh - 50 || i > fh + 50) &&
        t_rand(seed) % 10 != 0) {
      continue;
    }
    int k = 0;
    if (i < 0) {
      targets[k++] = INT64_MIN;
      targets[k++] = n ? kl_index_key(ix, 0) - 1 : 0;
    } else if (i == n) {
      targets[k++] = INT64_MAX;
      targets[k++] = n ? kl_index_key(ix, n - 1) + 1 : 1;
    } else {
      int64_t key = kl_index_key(ix, i);
      targets[k++] = key - 1;
      targets[k++] = key;
      targets[k++] = key + 1;
      targets[k++] = key + (int64_t)(t_rand(seed) % 8) - 4;
    }
    for (int j = 0; j < k; j++) {
      int64_t t = targets[j];
      int64_t want = ref_floor(ix, t);
      int64_t got = kl_index_floor(ix, t, NULL);
      if (got != want) {
        fail_msg("n=%lld kind=%d floor(%lld) = %lld, want %lld", (long long)n, ix->kind,
                 (long long)t, (long long)got, (long long)want);
      }
      assert_int_equal(kl_index_floor_classic(ix, t, NULL), want);
      want = ref_ceiling(ix, t);
      got = kl_index_ceiling(ix, t, NULL);
      if (got != want) {
        fail_msg("n=%lld kind=%d ceiling(%lld) = %lld, want %lld", (long long)n, ix->kind,
                 (long long)t, (long long)got, (long long)want);
      }
    }
  }
}

/*
** tests.md 26: the two-zone floor equals the classic binary search and a
** linear scan for every target; the ceiling equals a linear scan; for both
** index kinds, sizes 0..3000 including both warm boundaries, random gaps,
** negative timestamps.
*/
static void test_search_equivalence(void **state) {
  uint64_t seed = 2024;
  static int64_t a[3000], b[3000];
  for (size_t si = 0; si < sizeof SIZES / sizeof SIZES[0] + 8; si++) {
    int64_t n = si < sizeof SIZES / sizeof SIZES[0] ? SIZES[si] : (int64_t)(t_rand(&seed) % 3001);
    for (int kind = KL_INDEX_OFFSET; kind <= KL_INDEX_TIME; kind += 4) {
      int64_t k = kind == KL_INDEX_TIME ? -50 : 0, q = 0;
      uint64_t gap = 1 + t_rand(&seed) % 100;
      for (int64_t i = 0; i < n; i++) {
        k += 1 + (int64_t)(t_rand(&seed) % gap);
        q += 1 + (int64_t)(t_rand(&seed) % 4096);
        a[i] = k;
        b[i] = q;
      }
      size_t len;
      uint8_t *p = kind == KL_INDEX_OFFSET ? offset_bytes(a, b, n, 0, &len)
                                           : time_bytes(a, b, n, 0, &len);
      kl_index ix = mem_index(kind, kind == KL_INDEX_OFFSET ? 1000 : 7, p, len);
      check_searches(&ix, &seed);
      free(p);
    }
  }
}

/* ceil(log2(x)) for x >= 1. */
static int clog2(int64_t x) {
  int r = 0;
  while (((int64_t)1 << r) < x) r++;
  return r;
}

/*
** Work bound: every search reads O(log n) slots (stats->index_probes):
** at most 2 + ceil(log2(n)) + 1 for a 2^20-entry index, and a tail lookup
** stays within the warm zone, at most 2 + ceil(log2(1025)) probes.
*/
static void test_probe_counts(void **state) {
  int64_t n = (int64_t)1 << 20;
  int64_t *rel = malloc((size_t)n * sizeof *rel), *pos = malloc((size_t)n * sizeof *pos);
  assert_non_null(rel);
  assert_non_null(pos);
  for (int64_t i = 0; i < n; i++) {
    rel[i] = 2 * i + 1;
    pos[i] = i + 1;
  }
  size_t len;
  uint8_t *p = offset_bytes(rel, pos, n, 0, &len);
  kl_index ix = mem_index(KL_INDEX_OFFSET, 0, p, len);
  uint64_t seed = 5;
  int bound = 2 + clog2(n) + 1;
  uint64_t most = 0;
  for (int i = 0; i < 20000; i++) {
    int64_t t = (int64_t)(t_rand(&seed) % (uint64_t)(2 * n + 10)) - 5;
    kl_stats st = {0};
    int64_t got = kl_index_floor(&ix, t, &st);
    int64_t want = t < 1 ? -1 : t >= 2 * n - 1 ? n - 1 : (t - 1) / 2;
    assert_int_equal(got, want);
    if (st.index_probes > most) most = st.index_probes;
    assert_true(st.index_probes <= (uint64_t)bound);
    kl_stats st2 = {0};
    assert_int_equal(kl_index_floor_classic(&ix, t, &st2), want);
    assert_true(st2.index_probes <= (uint64_t)bound);
  }
  assert_true(most >= (uint64_t)clog2(n) - 2); /* and it really searched */
  for (int i = 0; i < 2000; i++) {
    int64_t t = 2 * (n - 1 - (int64_t)(t_rand(&seed) % 1000)) + 1;
    kl_stats st = {0};
    assert_int_equal(kl_index_floor(&ix, t, &st), (t - 1) / 2);
    assert_true(st.index_probes <= (uint64_t)(2 + clog2(1025)));
  }
  free(p);
  free(rel);
  free(pos);
}

/*
** A base near 2^63 (a segment named 09223372036854774807) and relative
** offsets that take it past INT64_MAX: the offsets saturate there, in
** order, and the searches agree with a linear scan.
*/
static void test_relative_offset_past_2_63(void **state) {
  (void)state;
  int64_t base = INT64_MAX - 1000;
  int64_t rel[] = {10, 50, 999, 1000, 2000, 0xffffffffLL};
  int64_t pos[] = {100, 200, 300, 400, 500, 600};
  size_t len;
  uint8_t *p = offset_bytes(rel, pos, 6, 0, &len);
  kl_index ix = mem_index(KL_INDEX_OFFSET, base, p, len);
  assert_int_equal(kl_index_offset_at(&ix, 1), base + 50);
  assert_int_equal(kl_index_offset_at(&ix, 2), INT64_MAX - 1);
  assert_int_equal(kl_index_offset_at(&ix, 3), INT64_MAX);
  assert_int_equal(kl_index_offset_at(&ix, 4), INT64_MAX);
  assert_int_equal(kl_index_offset_at(&ix, 5), INT64_MAX);
  int64_t targets[] = {base, base + 10, base + 51, INT64_MAX - 1, INT64_MIN, 0};
  for (size_t k = 0; k < sizeof targets / sizeof targets[0]; k++) {
    assert_int_equal(kl_index_floor(&ix, targets[k], NULL), ref_floor(&ix, targets[k]));
    assert_int_equal(kl_index_ceiling(&ix, targets[k], NULL), ref_ceiling(&ix, targets[k]));
  }
  assert_int_equal(kl_index_floor(&ix, INT64_MAX - 1, NULL), 2);
  /* The saturated keys tie: any of them is the floor of INT64_MAX. */
  assert_int_equal(kl_index_key(&ix, kl_index_floor(&ix, INT64_MAX, NULL)), INT64_MAX);
  assert_int_equal(kl_index_ceiling(&ix, INT64_MAX - 1, NULL), 2);
  free(p);
  int64_t ts[] = {1, 2, 3, 4, 5, 6};
  p = time_bytes(ts, rel, 6, 0, &len);
  ix = mem_index(KL_INDEX_TIME, base, p, len);
  assert_int_equal(kl_index_time_offset_at(&ix, 2), INT64_MAX - 1);
  assert_int_equal(kl_index_time_offset_at(&ix, 5), INT64_MAX);
  free(p);
}

/* The writer's encoding and the reader's accessors agree, on Kafka's
** big-endian layout (bytes checked against format.md's tables). */
static void test_entry_round_trip(void **state) {
  (void)state;
  uint8_t o[2 * KL_INDEX_OFFSET], t[2 * KL_INDEX_TIME];
  kl_index_put_offset(o, 1000, 1000, 0);
  kl_index_put_offset(o + 8, 1000, 1000 + 0x01020304, 0x0a0b0c0d);
  static const uint8_t want_o[] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 0x0a, 0x0b, 0x0c, 0x0d};
  assert_memory_equal(o, want_o, sizeof want_o);
  kl_index_put_time(t, 1000, 1700000000000LL, 1000);
  kl_index_put_time(t + 12, 1000, 0x0102030405060708LL, 1007);
  static const uint8_t want_t[] = {0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0, 0, 0, 0,
                                   1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 7};
  assert_memory_equal(t, want_t, sizeof want_t);
  assert_int_equal(kl_index_entry_timestamp(t + 12), 0x0102030405060708LL);
  kl_index ix;
  kl_index_mem(&ix, KL_INDEX_OFFSET, o, sizeof o, 1000, (int64_t)1 << 40);
  assert_int_equal(ix.n, 2);
  assert_int_equal(kl_index_offset_at(&ix, 1), 1000 + 0x01020304);
  assert_int_equal(kl_index_relative_at(&ix, 1), 0x01020304);
  assert_int_equal(kl_index_position_at(&ix, 1), 0x0a0b0c0d);
  kl_index_mem(&ix, KL_INDEX_TIME, t, sizeof t, 1000, (int64_t)1 << 40);
  assert_int_equal(ix.n, 2);
  assert_int_equal(kl_index_timestamp_at(&ix, 0), 1700000000000LL);
  assert_int_equal(kl_index_time_offset_at(&ix, 1), 1007);
  assert_int_equal(kl_index_relative_at(&ix, 1), 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entry_round_trip),
      cmocka_unit_test(test_relative_offset_past_2_63),
      cmocka_unit_test(test_open_missing),
      cmocka_unit_test(test_open_empty),
      cmocka_unit_test(test_open_bad_length),
      cmocka_unit_test(test_open_preallocated),
      cmocka_unit_test(test_open_stale),
      cmocka_unit_test(test_offset_index_kafka_cases),
      cmocka_unit_test(test_time_index_kafka_cases),
      cmocka_unit_test(test_two_zone_probe_sequence),
      cmocka_unit_test(test_search_equivalence),
      cmocka_unit_test(test_probe_counts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
