/*
** test_scan.c - Kafka's scan rules as kl_scan applies them (scan.h): a clean
** walk; every kind of damage in a segment that is not the last, with the
** exact position reported and the exact position the walk resumes at; how
** the last segment's data may end without damage; a resume point never
** beyond a sync point; the batch before a seek's slot checked against it;
** a stop at a batch past the wanted offsets without reading it; the salvage
** map and a walk that follows it; index slots of zeros that the log
** confirms as real entries; and how much a seek reads.
**
** Logs are written by kwriter (Kafka's append and index rules), then
** damaged in place; where batches are is read from the clean files.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "kwriter.h"
#include "log.h"
#include "scan.h"

/* ---- logs ---- */

/* n batches of per records each (timestamps 1000 + 10 * offset), segments
** of about segment_bytes, an index entry every interval bytes. */
static char *write_log(int n, int per, int64_t segment_bytes, int64_t interval) {
  return kw_make_log("scan", n, per, segment_bytes, interval, 30, 1000, 10);
}

static char *path_of(const char *dir, int64_t base, const char *suffix) {
  static char buf[4][4200];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 4200, "%s/%020lld%s", dir, (long long)base, suffix);
  return p;
}

static int64_t g_size; /* the size of the last file positions() read */

/* Positions of the batches of a clean .log (then -1); g_size its size. */
static int64_t *positions(const char *path, int *n) {
  size_t len;
  uint8_t *p = t_read_file(path, &len);
  assert_non_null(p);
  g_size = (int64_t)len;
  int64_t *pos = malloc(sizeof *pos * (len / 26 + 2));
  *n = 0;
  for (size_t at = 0; at + 17 < len; at += 12 + kl_get_u32(p + at + 8)) pos[(*n)++] = (int64_t)at;
  pos[*n] = -1;
  free(p);
  return pos;
}

/* The first offset index entry's position past pos, or -1. */
static int64_t sync_after(const char *index_path, int64_t pos) {
  size_t n;
  uint8_t *p = t_read_file(index_path, &n);
  int64_t r = -1;
  for (size_t i = 0; p && i + 8 <= n; i += 8) {
    if (kl_get_u32(p + i + 4) > pos) {
      r = kl_get_u32(p + i + 4);
      break;
    }
  }
  free(p);
  return r;
}

static kl_log *open_log(const char *dir) {
  kl_log *log = NULL;
  kl_err err = {0};
  if (kl_log_open(NULL, dir, &log, &err) != KL_OK) fail_msg("open %s: %s", dir, err.msg);
  return log;
}

/* ---- walks ---- */

/* What a walk met: "B<pos>" a batch, "D<kind>@<pos>><resume>" damage,
** "E<end>@<pos>" its end. */
static char *walk_text(kl_reader *rd, kl_segment *s, int64_t start, int64_t verify_from) {
  static char out[1 << 16];
  size_t k = 0;
  out[0] = 0;
  kl_scan sc;
  kl_err err = {0};
  assert_int_equal(kl_scan_start(&sc, rd, s, start, INT64_MAX, verify_from, &err), KL_OK);
  for (;;) {
    kl_batch b;
    kl_err_clear(&err);
    kl_rc rc = kl_scan_next(&sc, &b, &err);
    if (rc == KL_OK) {
      k += (size_t)snprintf(out + k, sizeof out - k, "B%lld ", (long long)b.position);
    } else if (rc == KL_CORRUPT) {
      /* The message names the file and the position. */
      char want[64];
      snprintf(want, sizeof want, "%s: position %lld:", s->name, (long long)sc.dmg.pos);
      if (!strstr(err.msg, want)) fail_msg("message \"%s\" lacks \"%s\"", err.msg, want);
      k += (size_t)snprintf(out + k, sizeof out - k, "D%s@%lld>%lld ",
                            kl_damage_name(sc.dmg.kind), (long long)sc.dmg.pos,
                            (long long)sc.dmg.resume);
    } else {
      assert_int_equal(rc, KL_DONE);
      k += (size_t)snprintf(out + k, sizeof out - k, "E%d@%lld", sc.end, (long long)sc.end_pos);
      break;
    }
  }
  kl_scan_end(&sc);
  return out;
}

/* The expected text of the batches at positions in [from, to), as
** walk_text writes them. */
static void expect_batches(char *buf, size_t *k, const int64_t *pos, int64_t from, int64_t to) {
  for (int i = 0; pos[i] >= 0; i++) {
    if (pos[i] >= from && pos[i] < to) *k += (size_t)sprintf(buf + *k, "B%lld ", (long long)pos[i]);
  }
}

static void test_clean_walk(void **state) {
  char *dir = write_log(40, 5, 1 << 20, 512);
  kl_log *log = open_log(dir);
  kl_segment *s = kl_log_first(log);
  int n;
  int64_t *pos = positions(s->log_path, &n);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  char want[8192];
  size_t k = 0;
  expect_batches(want, &k, pos, 0, INT64_MAX);
  sprintf(want + k, "E%d@%lld", KL_END_CLEAN, (long long)g_size);
  assert_string_equal(walk_text(&rd, s, 0, 0), want);
  assert_int_equal(rd.stats->crc_checks, 40);
  assert_int_equal(rd.stats->segments_opened, 1);
  assert_true(rd.stats->reads < 10); /* reads grow while the walk goes on */
  kl_reader_free(&rd);
  kl_log_close(log);
  free(pos);
  t_rmdir(dir);
  free(dir);
}

enum dmg {
  M_CRC, M_HEADER, M_MAGIC, M_LENGTH, M_TRUNCATED, M_TRAILING, M_ZEROS, M_REGRESSION, M_COUNT
};

/* Damage batch k of segment 0 of a 3-segment log; the walk of segment 0
** reports it where it is and resumes where scan.h says. */
static void run_damage(enum dmg d) {
  char *dir = write_log(180, 5, 12000, 2048);
  kl_log *log = open_log(dir);
  assert_true(kl_log_segment_count(log) >= 3);
  kl_segment *s = kl_log_first(log);
  int n;
  int64_t *pos = positions(s->log_path, &n);
  int64_t end = g_size;
  assert_true(n > 20);
  /* The batch after the one the second index entry names: unreadable
  ** bytes there are passed over up to the third entry, several batches
  ** on. */
  int64_t second = sync_after(s->index_path, sync_after(s->index_path, 0));
  int k = 0;
  while (pos[k] != second) k++;
  k++;
  int64_t at = pos[k], size = pos[k + 1] - pos[k];
  int64_t sync = sync_after(s->index_path, at);
  assert_true(sync > pos[k + 2]); /* the test means an interval of batches */
  const char *kind = NULL;
  int64_t resume = 0;
  switch (d) {
    case M_CRC:
      t_poke32(s->log_path, at + size - 4, 0xdeadbeef);
      kind = "crc_mismatch", resume = at + size;
      break;
    case M_HEADER: {
      uint8_t attr = 7; /* codec id 7 */
      t_poke(s->log_path, at + 22, &attr, 1);
      kind = "bad_header", resume = at + size;
      break;
    }
    case M_MAGIC: {
      uint8_t m = 7;
      t_poke(s->log_path, at + 16, &m, 1);
      kind = "bad_magic", resume = sync;
      break;
    }
    case M_LENGTH:
      t_poke32(s->log_path, at + 8, 5);
      kind = "bad_batch_length", resume = sync;
      break;
    case M_TRUNCATED:
      t_poke32(s->log_path, at + 8, 0x7ffffff0);
      kind = "truncated_batch", resume = sync;
      break;
    case M_TRAILING: {
      uint8_t z[12] = {0};
      t_poke(s->log_path, at, z, 12);
      kind = "trailing_bytes", resume = sync;
      break;
    }
    case M_ZEROS: {
      uint8_t *z = calloc(1, (size_t)(end - at));
      t_poke(s->log_path, at, z, (size_t)(end - at));
      free(z);
      kind = "zero_filled_tail", resume = end;
      break;
    }
    case M_REGRESSION: {
      size_t len;
      uint8_t *p = t_read_file(s->log_path, &len);
      t_poke(s->log_path, at, p + pos[k - 1], 8); /* the previous batch's base */
      free(p);
      kind = "offset_regression", resume = at + size;
      break;
    }
    default: break;
  }
  kl_log_close(log);
  log = open_log(dir); /* the files changed: open afresh */
  s = kl_log_first(log);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  char want[1 << 14];
  size_t w = 0;
  expect_batches(want, &w, pos, 0, at);
  w += (size_t)sprintf(want + w, "D%s@%lld>%lld ", kind, (long long)at, (long long)resume);
  expect_batches(want, &w, pos, resume, INT64_MAX);
  sprintf(want + w, "E%d@%lld", KL_END_CLEAN, (long long)end);
  char *got = walk_text(&rd, s, 0, 0);
  if (strcmp(got, want)) fail_msg("damage %d:\n   got: %s\n  want: %s", d, got, want);
  kl_reader_free(&rd);
  kl_log_close(log);
  free(pos);
  t_rmdir(dir);
  free(dir);
}

static void test_damage_kinds(void **state) {
  for (int d = 0; d < M_COUNT; d++) run_damage((enum dmg)d);
}

/* A batch below its segment's base, and batches reaching the next one. */
static void test_offsets_out_of_place(void **state) {
  char *dir = write_log(120, 5, 6000, 512);
  kl_log *log = open_log(dir);
  kl_segment *s0 = kl_log_first(log), *s1 = kl_log_next(log, s0);
  int n0, n1;
  int64_t *p0 = positions(s0->log_path, &n0);
  int64_t size0 = g_size;
  int64_t *p1 = positions(s1->log_path, &n1);
  int64_t size1 = g_size;
  int64_t base1 = s1->base;
  char path1[4200];
  snprintf(path1, sizeof path1, "%s", s1->log_path);
  kl_log_close(log);
  /* Segment 1's first batch claims an offset below the segment's base. */
  uint8_t b[8];
  kl_put_u64(b, (uint64_t)(base1 - 1));
  t_poke(path1, 0, b, 8);
  /* Segment 1 renamed to start 3 offsets earlier: segment 0's last batch
  ** (5 records) now reaches into it. */
  char moved[4200];
  snprintf(moved, sizeof moved, "%s", path_of(dir, base1 - 3, ".log"));
  assert_int_equal(rename(path1, moved), 0);
  unlink(path_of(dir, base1, ".index"));
  unlink(path_of(dir, base1, ".timeindex"));
  log = open_log(dir);
  s0 = kl_log_first(log);
  s1 = kl_log_next(log, s0);
  assert_int_equal(s1->base, base1 - 3);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  char want[1 << 14];
  size_t w = 0;
  int64_t last = p0[n0 - 1];
  expect_batches(want, &w, p0, 0, last);
  sprintf(want + w, "Dsegment_overlap@%lld>%lld E%d@%lld", (long long)last, (long long)size0,
          KL_END_CLEAN, (long long)size0);
  assert_string_equal(walk_text(&rd, s0, 0, 0), want);
  /* Segment 1, now based at base1 - 3: its first batch claims base1 - 1
  ** to base1 + 3, at or above the base and below the second batch's
  ** base1 + 5, so it reads whole. */
  w = 0;
  expect_batches(want, &w, p1, 0, INT64_MAX);
  sprintf(want + w, "E%d@%lld", KL_END_CLEAN, (long long)size1);
  assert_string_equal(walk_text(&rd, s1, 0, 0), want);
  kl_reader_free(&rd);
  kl_log_close(log);

  /* Below the base: the first batch of a segment claims base - 10. */
  snprintf(path1, sizeof path1, "%s", moved);
  kl_put_u64(b, (uint64_t)(base1 - 13));
  t_poke(path1, 0, b, 8);
  log = open_log(dir);
  s1 = kl_log_next(log, kl_log_first(log));
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  w = (size_t)sprintf(want, "Doffset_below_base@0>%lld ", (long long)p1[1]);
  expect_batches(want, &w, p1, p1[1], INT64_MAX);
  sprintf(want + w, "E%d@%lld", KL_END_CLEAN, (long long)size1);
  assert_string_equal(walk_text(&rd, s1, 0, 0), want);
  kl_reader_free(&rd);
  kl_log_close(log);
  free(p0);
  free(p1);
  t_rmdir(dir);
  free(dir);
}

/* The last segment's data may end without damage: an entry cut short with
** nothing readable after it, or zeros to the end.  With verified batches
** after it, the same entry is damage. */
static void test_last_segment_ends(void **state) {
  for (int v = 0; v < 4; v++) {
    char *dir = write_log(60, 5, 1 << 20, 512);
    char log_path[4200];
    snprintf(log_path, sizeof log_path, "%s", path_of(dir, 0, ".log"));
    int n;
    int64_t *pos = positions(log_path, &n);
    int64_t at = pos[n - 1], size;
    {
      size_t len;
      uint8_t *p = t_read_file(log_path, &len);
      size = (int64_t)len;
      free(p);
    }
    char want[1 << 14];
    size_t w = 0;
    if (v == 0) { /* torn last batch */
      assert_int_equal(truncate(log_path, at + 40), 0);
      expect_batches(want, &w, pos, 0, at);
      sprintf(want + w, "E%d@%lld", KL_END_TORN, (long long)at);
    } else if (v == 1) { /* an incomplete header */
      assert_int_equal(truncate(log_path, at + 10), 0);
      expect_batches(want, &w, pos, 0, at);
      sprintf(want + w, "E%d@%lld", KL_END_TORN, (long long)at);
    } else if (v == 2) { /* preallocated */
      assert_int_equal(truncate(log_path, size + 100000), 0);
      expect_batches(want, &w, pos, 0, INT64_MAX);
      sprintf(want + w, "E%d@%lld", KL_END_ZEROS, (long long)size);
    } else { /* a length past the end, with sound batches after it */
      int k = n / 2;
      int64_t sync = sync_after(path_of(dir, 0, ".index"), pos[k]);
      t_poke32(log_path, pos[k] + 8, 0x7ffffff0);
      expect_batches(want, &w, pos, 0, pos[k]);
      w += (size_t)sprintf(want + w, "Dtruncated_batch@%lld>%lld ", (long long)pos[k],
                           (long long)sync);
      expect_batches(want, &w, pos, sync, INT64_MAX);
      sprintf(want + w, "E%d@%lld", KL_END_CLEAN, (long long)size);
    }
    kl_log *log = open_log(dir);
    kl_reader rd;
    kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
    char *got = walk_text(&rd, kl_log_first(log), 0, 0);
    if (strcmp(got, want)) fail_msg("variant %d:\n   got: %s\n  want: %s", v, got, want);
    kl_reader_free(&rd);
    kl_log_close(log);
    free(pos);
    t_rmdir(dir);
    free(dir);
  }
}

/* A damaged length that points at a real batch boundary beyond the next
** index entry: the walk resumes at the index entry, not beyond it, so that
** a walk from 0 passes through every entry a seek may start at. */
static void test_resume_stops_at_sync(void **state) {
  char *dir = write_log(80, 5, 1 << 20, 512);
  char lp[4200], ip[4200];
  snprintf(lp, sizeof lp, "%s", path_of(dir, 0, ".log"));
  snprintf(ip, sizeof ip, "%s", path_of(dir, 0, ".index"));
  int n;
  int64_t *pos = positions(lp, &n);
  int k = 10;
  int64_t sync = sync_after(ip, pos[k]);
  int j = k;
  while (pos[j] >= 0 && pos[j] <= sync) j++;
  assert_true(pos[j] > sync && pos[j + 1] > 0);
  /* Batch k's length now reaches the boundary of batch j. */
  t_poke32(lp, pos[k] + 8, (uint32_t)(pos[j] - pos[k] - 12));
  kl_log *log = open_log(dir);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  char want[1 << 14];
  size_t w = 0;
  expect_batches(want, &w, pos, 0, pos[k]);
  w += (size_t)sprintf(want + w, "Dcrc_mismatch@%lld>%lld ", (long long)pos[k], (long long)sync);
  expect_batches(want, &w, pos, sync, INT64_MAX);
  sprintf(want + w, "E%d@%lld", KL_END_CLEAN, (long long)g_size);
  assert_string_equal(walk_text(&rd, kl_log_first(log), 0, 0), want);
  kl_reader_free(&rd);
  kl_log_close(log);
  free(pos);
  t_rmdir(dir);
  free(dir);
}

/* A seek walks the stretch before its slot for offsets only, so that the
** slot's batch is checked against the batch before it: a batch whose base
** offset (which no CRC covers) was lowered is found even when a lookup
** starts right at it. */
static void test_seek_context(void **state) {
  /* One record per batch, an index entry every batch or so. */
  char *dir = write_log(200, 1, 1 << 20, 40);
  char lp[4200], ip[4200];
  snprintf(lp, sizeof lp, "%s", path_of(dir, 0, ".log"));
  snprintf(ip, sizeof ip, "%s", path_of(dir, 0, ".index"));
  int n;
  int64_t *pos = positions(lp, &n);
  /* The batch of the 20th index entry gets its predecessor's offset. */
  size_t len;
  uint8_t *ix = t_read_file(ip, &len);
  assert_true(len >= 21 * 8);
  int64_t slot_pos = kl_get_u32(ix + 20 * 8 + 4), key = kl_get_u32(ix + 20 * 8);
  free(ix);
  int k = 0;
  while (pos[k] != slot_pos) k++;
  uint8_t b[8];
  kl_put_u64(b, (uint64_t)(key - 1));
  t_poke(lp, slot_pos, b, 8);
  kl_log *log = open_log(dir);
  kl_segment *s = kl_log_first(log);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_seek sk;
  kl_err err = {0};
  /* The lookup of the offset the entry names starts at the slot. */
  assert_int_equal(kl_scan_seek_offset(&rd, s, key, &sk, &err), KL_OK);
  assert_int_equal(sk.slot, 20);
  assert_int_equal(sk.verify_from, slot_pos);
  assert_true(sk.start < slot_pos);
  kl_scan sc;
  kl_batch bt;
  assert_int_equal(kl_scan_start(&sc, &rd, s, sk.start, INT64_MAX, sk.verify_from, &err), KL_OK);
  assert_int_equal(kl_scan_next(&sc, &bt, &err), KL_CORRUPT);
  assert_int_equal(sc.dmg.kind, KL_DMG_REGRESSION);
  assert_int_equal(sc.dmg.pos, slot_pos);
  kl_scan_end(&sc);
  /* In skip mode the salvage map decides, the same way. */
  kl_reader srd;
  kl_reader_init(&srd, NULL, NULL, KL_ON_CORRUPT_SKIP);
  assert_int_equal(kl_scan_seek_offset(&srd, s, key, &sk, &err), KL_OK);
  assert_int_equal(sk.slot, -1); /* the slot's batch is a hole: not a start */
  assert_int_equal(sk.start, 0);
  assert_non_null(kl_segment_hole_at(s, slot_pos));
  assert_int_equal(s->salvage.n, 1);
  kl_reader_free(&srd);
  kl_reader_free(&rd);
  kl_log_close(log);
  free(pos);
  t_rmdir(dir);
  free(dir);
}

/* A walk told to stop past an offset stops at the first batch above it
** on its header alone: damage there is not read. */
static void test_stop_offset(void **state) {
  char *dir = write_log(30, 5, 1 << 20, 512);
  char lp[4200];
  snprintf(lp, sizeof lp, "%s", path_of(dir, 0, ".log"));
  int n;
  int64_t *pos = positions(lp, &n);
  t_poke32(lp, pos[3] + 70, 0xdeadbeef); /* batch 3 (offsets 15..19): CRC */
  kl_log *log = open_log(dir);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_scan sc;
  kl_batch b;
  kl_err err = {0};
  assert_int_equal(kl_scan_start(&sc, &rd, kl_log_first(log), 0, INT64_MAX, 0, &err), KL_OK);
  sc.stop_offset = 14;
  for (int i = 0; i < 3; i++) assert_int_equal(kl_scan_next(&sc, &b, &err), KL_OK);
  assert_int_equal(kl_scan_next(&sc, &b, &err), KL_DONE);
  assert_int_equal(sc.end, KL_END_STOP);
  assert_int_equal(sc.end_pos, pos[3]);
  kl_scan_end(&sc);
  kl_scan_end(&sc); /* twice: harmless */
  kl_reader_free(&rd);
  kl_log_close(log);
  free(pos);
  t_rmdir(dir);
  free(dir);
}

/* The salvage map holds every damage; its tail is the kept batches'; a
** walk in skip mode passes over the holes. */
static void test_salvage_map(void **state) {
  char *dir = write_log(60, 5, 1 << 20, 512);
  char lp[4200];
  snprintf(lp, sizeof lp, "%s", path_of(dir, 0, ".log"));
  int n;
  int64_t *pos = positions(lp, &n);
  t_poke32(lp, pos[5] + 70, 0xdeadbeef);             /* CRC of batch 5 */
  uint8_t m = 9;
  t_poke(lp, pos[30] + 16, &m, 1);                      /* magic of batch 30 */
  t_poke32(lp, pos[n - 1] + 70, 0xdeadbeef);          /* CRC of the last batch */
  int64_t sync = sync_after(path_of(dir, 0, ".index"), pos[30]);
  kl_log *log = open_log(dir);
  kl_segment *s = kl_log_first(log);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_SKIP);
  kl_err err = {0};
  assert_int_equal(kl_scan_salvage(&rd, s, &err), KL_OK);
  assert_int_equal(s->salvage.n, 3);
  assert_int_equal(s->salvage.holes[0].pos, pos[5]);
  assert_int_equal(s->salvage.holes[0].end, pos[6]);
  assert_int_equal(s->salvage.holes[0].kind, KL_DMG_CRC);
  assert_int_equal(s->salvage.holes[1].pos, pos[30]);
  assert_int_equal(s->salvage.holes[1].end, sync);
  assert_int_equal(s->salvage.holes[1].kind, KL_DMG_MAGIC);
  assert_int_equal(s->salvage.holes[2].pos, pos[n - 1]);
  assert_int_equal(s->salvage.holes[2].end, s->size);
  /* The tail is that of the batches kept: the last one is not. */
  const kl_tail *t;
  assert_int_equal(kl_scan_tail(&rd, s, &t, &err), KL_OK);
  assert_int_equal(t->next_offset, (n - 1) * 5);
  assert_int_equal(t->end, pos[n - 1]);
  assert_int_equal(t->max_timestamp, 1000 + 10 * ((n - 1) * 5 - 1));
  /* Following the map: the kept batches only, no damage reported. */
  char want[1 << 14];
  size_t w = 0;
  expect_batches(want, &w, pos, 0, pos[5]);
  expect_batches(want, &w, pos, pos[6], pos[30]);
  expect_batches(want, &w, pos, sync, pos[n - 1]);
  sprintf(want + w, "E%d@%lld", KL_END_CLEAN, (long long)s->size);
  assert_string_equal(walk_text(&rd, s, 0, 0), want);
  kl_reader_free(&rd);
  kl_log_close(log);
  free(pos);
  t_rmdir(dir);
  free(dir);
}

/* Twelve zero bytes can be a real time index entry, (0, base), and eight
** a real offset index entry, (base, 0): the log decides. */
static void test_zero_first_entries(void **state) {
  char *dir = t_mkdtemp("scan-zero");
  /* One record per segment, the first at timestamp 0. */
  kw_options o = {10, 4096, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  for (int i = 0; i < 3; i++) {
    kl_rec_in r = {i == 0 ? 0 : 1000 + i, "k", 1, "v", 1, NULL, 0};
    assert_int_equal(kw_append(w, NULL, &r, 1), 0);
  }
  assert_int_equal(kw_close(w), 0);
  /* Segment 0: its time index is the one entry (0, 0) written on roll. */
  size_t len;
  uint8_t *p = t_read_file(path_of(dir, 0, ".timeindex"), &len);
  assert_int_equal(len, 12);
  for (size_t i = 0; i < len; i++) assert_int_equal(p[i], 0);
  free(p);
  /* Give segment 0 an offset index of the entry (base, 0). */
  uint8_t z[8] = {0};
  assert_int_equal(t_write_file(path_of(dir, 0, ".index"), z, 8), 0);
  /* And the last segment a preallocated time index: zeros, no entry (its
  ** record's timestamp is 1002). */
  uint8_t *zz = calloc(1, 1200);
  assert_int_equal(t_write_file(path_of(dir, 2, ".timeindex"), zz, 1200), 0);
  free(zz);
  kl_log *log = open_log(dir);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_err err = {0};
  kl_segment *s0 = kl_log_first(log), *s2 = kl_log_last(log);
  kl_index *ix;
  assert_int_equal(kl_scan_index(&rd, s0, KL_INDEX_TIME, &ix, &err), KL_OK);
  assert_int_equal(ix->n, 1);
  assert_int_equal(ix->zero_slots, 0);
  assert_int_equal(kl_scan_index(&rd, s0, KL_INDEX_OFFSET, &ix, &err), KL_OK);
  assert_int_equal(ix->n, 1);
  assert_int_equal(ix->zero_slots, 0);
  assert_int_equal(kl_scan_index(&rd, s2, KL_INDEX_TIME, &ix, &err), KL_OK);
  assert_int_equal(ix->n, 0);
  assert_int_equal(ix->zero_slots, 100);
  /* The segment's largest timestamp is 0, from the entry. */
  const kl_tail *t;
  assert_int_equal(kl_scan_tail(&rd, s0, &t, &err), KL_OK);
  assert_int_equal(t->max_timestamp, 0);
  kl_reader_free(&rd);
  kl_log_close(log);
  t_rmdir(dir);
  free(dir);
}

/* What a point lookup reads: the header of the batch its index entry
** names (the entry vouches for it when the target lies past it) and the
** target's batch, one CRC. */
static void test_seek_reads_little(void **state) {
  char *dir = write_log(400, 20, 1 << 30, 4096);
  kl_log *log = open_log(dir);
  kl_segment *s = kl_log_first(log);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_err err = {0};
  kl_batch b;
  int64_t target = 20 * 300 + 7;
  assert_int_equal(kl_scan_find_offset(&rd, s, target, &b, &err), KL_OK);
  assert_true(b.base_offset <= target && b.last_offset >= target);
  print_message("  lookup: %llu bytes in %llu reads, %llu CRCs, %llu headers\n",
                (unsigned long long)rd.stats->bytes_read, (unsigned long long)rd.stats->reads,
                (unsigned long long)rd.stats->crc_checks,
                (unsigned long long)rd.stats->batch_headers);
  assert_true(rd.stats->crc_checks <= 12);  /* at most an index interval of batches */
  assert_true(rd.stats->bytes_read <= 5 * 4096 + 2048); /* index pieces aside */
  kl_reader_free(&rd);
  kl_log_close(log);
  t_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clean_walk),
      cmocka_unit_test(test_damage_kinds),
      cmocka_unit_test(test_offsets_out_of_place),
      cmocka_unit_test(test_last_segment_ends),
      cmocka_unit_test(test_resume_stops_at_sync),
      cmocka_unit_test(test_seek_context),
      cmocka_unit_test(test_stop_offset),
      cmocka_unit_test(test_salvage_map),
      cmocka_unit_test(test_zero_first_entries),
      cmocka_unit_test(test_seek_reads_little),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
