/*
** test_corruption.c - the corruption matrix through SQL (issue #4).
**
** For each fixture kind (plain, gzip, every codec, transactions, many
** segments, legacy gzip) and each kind of damage, a copy of the fixture is
** damaged and three outcomes are asserted exactly:
**   - a query over kafka_log fails with SQLITE_CORRUPT naming the file and
**     "position N" of the damaged batch, or returns exactly the rows Kafka
**     would serve (damage Kafka's scan treats as the end of the data);
**   - a table with on_corrupt='skip' returns exactly the fixture's rows
**     minus the damaged batch's (or minus the unreadable rest of the
**     segment);
**   - kafka_log_check returns exactly the expected findings.
** Batch positions come from the fixture's expected.json, read with SQLite's
** JSON functions.
*/
#include "sqltest.h"

#include <unistd.h>

#include "batch.h"
#include "crc32c.h"
#include "kwriter.h"

typedef struct fx {
  const char *set;
  sqlite3 *db;
  char *json;               /* expected.json */
  char *dir;                /* the damaged copy */
  char log0[512], idx0[512], tidx0[512]; /* files of segment 0 */
  char loglast[512];        /* .log of the last segment */
  int nseg;
} fx;

static int64_t jint(fx *f, const char *path) {
  return st_int(f->db, "SELECT json_extract(?1, ?2)", "tt", f->json, path);
}

static char *jtext(fx *f, const char *path) {
  return st_text(f->db, "SELECT json_extract(?1, ?2)", "tt", f->json, path);
}

static void fx_open(fx *f, const char *set) {
  memset(f, 0, sizeof *f);
  f->set = set;
  f->db = st_open();
  size_t n;
  f->json = (char *)t_read_file(t_fixture_expected(set), &n);
  assert_non_null(f->json);
  f->json = realloc(f->json, n + 1);
  f->json[n] = 0;
  f->dir = t_mkdtemp("corrupt");
  assert_int_equal(t_copy_dir(t_fixture(set), f->dir), 0);
  f->nseg = (int)st_int(f->db, "SELECT json_array_length(?1, '$.segments')", "t", f->json);
  char *l0 = jtext(f, "$.segments[0].log_file");
  char path[64];
  snprintf(path, sizeof path, "$.segments[%d].log_file", f->nseg - 1);
  char *ll = jtext(f, path);
  snprintf(f->log0, sizeof f->log0, "%s/%s", f->dir, l0);
  snprintf(f->idx0, sizeof f->idx0, "%s/%.20s.index", f->dir, l0);
  snprintf(f->tidx0, sizeof f->tidx0, "%s/%.20s.timeindex", f->dir, l0);
  snprintf(f->loglast, sizeof f->loglast, "%s/%s", f->dir, ll);
  free(l0);
  free(ll);
}

static void fx_close(fx *f) {
  t_rmdir(f->dir);
  free(f->dir);
  free(f->json);
  st_close(f->db);
}

/* Field of batch b of segment s in expected.json. */
static int64_t batch_field(fx *f, int s, int b, const char *field) {
  char path[128];
  snprintf(path, sizeof path, "$.segments[%d].batches[%d].%s", s, b, field);
  return jint(f, path);
}

/* The first data (non-control) batch of segment s at index >= from whose
** compression is codec (NULL: any); -1 if none. */
static int find_batch(fx *f, int s, int from, const char *codec) {
  char path[64];
  snprintf(path, sizeof path, "$.segments[%d].batches", s);
  int n = (int)st_int(f->db, "SELECT json_array_length(?1, ?2)", "tt", f->json, path);
  for (int b = from; b < n; b++) {
    if (batch_field(f, s, b, "is_control")) continue;
    if (!codec) return b;
    snprintf(path, sizeof path, "$.segments[%d].batches[%d].compression", s, b);
    char *c = jtext(f, path);
    int ok = strcmp(c, codec) == 0;
    free(c);
    if (ok) return b;
  }
  return -1;
}

/* ---- damage ---- */

static uint8_t *load(const char *path, size_t *n) {
  uint8_t *p = t_read_file(path, n);
  assert_non_null(p);
  return p;
}

static void store(const char *path, const uint8_t *p, size_t n) {
  assert_int_equal(t_write_file(path, p, n), 0);
}

static void truncate_to(const char *path, int64_t len) { assert_int_equal(truncate(path, len), 0); }

/* ---- outcomes ---- */

/* Rows "offset|hex(value)" of a query, or its error line. */
static char *rows(sqlite3 *db, const char *sql, const char *dir) {
  st_buf b = {0};
  st_render(db, dir ? st_prep(db, sql, "t", dir) : st_prep(db, sql, NULL), &b);
  return b.p;
}

/* The fixture's rows without those of the batches of a segment at
** positions in [pos, end) (pos -1: none). */
static char *expected_rows_between(fx *f, int64_t seg, int64_t pos, int64_t end) {
  char *sql = sqlite3_mprintf(
      "SELECT offset, hex(value) FROM kafka_log(?1) WHERE NOT (segment = %lld AND position >= "
      "%lld AND position < %lld) ORDER BY offset", (long long)seg, (long long)pos, (long long)end);
  char *r = rows(f->db, sql, t_fixture(f->set));
  sqlite3_free(sql);
  return r;
}

/* The fixture's rows without those of the batch at (segment, position)
** (position -1: none), or without every batch of that segment from the
** position on (rest != 0). */
static char *expected_rows(fx *f, int64_t seg, int64_t pos, int rest) {
  return expected_rows_between(f, seg, pos, rest ? INT64_MAX : pos + 1);
}

/* The position of the first offset index entry past pos (where a walk
** resumes after unreadable bytes: scan.h), or -1. */
static int64_t sync_after(const char *index_path, int64_t pos) {
  size_t n;
  uint8_t *p = t_read_file(index_path, &n);
  int64_t r = -1;
  for (size_t i = 0; p && i + 8 <= n; i += 8) {
    int64_t q = kl_get_u32(p + i + 4);
    if (q > pos) {
      r = q;
      break;
    }
  }
  free(p);
  return r;
}

/* Lines of text in reverse order (a descending result, turned). */
static char *reversed_lines(const char *t) {
  size_t n = strlen(t);
  char *r = malloc(n + 1);
  size_t k = 0;
  const char *end = t + n;
  while (end > t) {
    const char *e = end;
    if (e > t && e[-1] == '\n') e--;
    const char *b = e;
    while (b > t && b[-1] != '\n') b--;
    memcpy(r + k, b, (size_t)(e - b));
    k += (size_t)(e - b);
    r[k++] = '\n';
    end = b;
  }
  r[k] = 0;
  return r;
}

static void assert_text(const char *what, const char *set, const char *got, const char *want) {
  char lx[256], ly[256];
  long line = st_first_diff(got, want, lx, ly, sizeof lx);
  if (line) fail_msg("%s [%s] line %ld:\n   got: %s\n  want: %s", what, set, line, lx, ly);
}

/* The query fails with SQLITE_CORRUPT naming file and position. */
static void assert_corrupt(fx *f, const char *sql, const char *file, int64_t pos) {
  sqlite3_stmt *st = st_prep(f->db, sql, "t", f->dir);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
  const char *msg = sqlite3_errmsg(f->db);
  char want[128];
  snprintf(want, sizeof want, "%s: position %lld:", file, (long long)pos);
  if (rc != SQLITE_CORRUPT || !strstr(msg, want)) {
    fail_msg("[%s] %s: rc %d, message \"%s\"; want SQLITE_CORRUPT with \"%s\"", f->set, sql, rc,
             msg, want);
  }
  sqlite3_finalize(st);
}

/* Rows of a full scan (plain) and of an on_corrupt='skip' table, in
** offset order, in descending order turned round, and through a plan that
** is not the module's (offset + 0). */
static void assert_rows(fx *f, int skip, const char *want) {
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE temp.d USING kafka_log(%Q%s)", f->dir,
                              skip ? ", on_corrupt='skip'" : "");
  st_exec(f->db, sql);
  sqlite3_free(sql);
  char *got = rows(f->db, "SELECT offset, hex(value) FROM temp.d ORDER BY offset", NULL);
  assert_text(skip ? "on_corrupt='skip' rows" : "rows", f->set, got, want);
  free(got);
  got = rows(f->db, "SELECT offset, hex(value) FROM temp.d ORDER BY offset DESC", NULL);
  char *turned = reversed_lines(got);
  assert_text("descending rows, turned", f->set, turned, want);
  free(turned);
  free(got);
  got = rows(f->db, "SELECT offset, hex(value) FROM temp.d WHERE offset + 0 >= 0 ORDER BY 1",
             NULL);
  assert_text("offset + 0 rows", f->set, got, want);
  free(got);
  st_exec(f->db, "DROP TABLE temp.d");
}

/* kafka_log_check rows as "kind|file|position|severity" lines. */
static void assert_check(fx *f, const char *want) {
  char *got = rows(f->db,
      "SELECT kind, file, ifnull(position, 'NULL'), severity FROM kafka_log_check(?1)", f->dir);
  char *plain = malloc(strlen(got) + 1);
  size_t j = 0; /* drop the quotes st_render puts around text */
  for (size_t i = 0; got[i]; i++) {
    if (got[i] != '\'') plain[j++] = got[i];
  }
  plain[j] = 0;
  assert_text("kafka_log_check", f->set, plain, want);
  free(plain);
  free(got);
}

/* The damage is the first finding; the index entries that now point past
** the readable data follow, as warnings about index files. */
static void assert_check_first(fx *f, const char *want) {
  int64_t n = st_int(f->db, "SELECT count(*) FROM kafka_log_check(?1) WHERE rowid = 1 AND "
                     "kind || '|' || file || '|' || position || '|' || severity || char(10) = ?2",
                     "tt", f->dir, want);
  if (n != 1) {
    st_print_rows(f->db, "findings", "SELECT * FROM kafka_log_check(?1)", "t", f->dir);
    fail_msg("[%s] first finding is not %s", f->set, want);
  }
  assert_int_equal(st_int(f->db, "SELECT count(*) FROM kafka_log_check(?1) WHERE rowid > 1 AND "
                          "(severity <> 'warning' OR kind NOT LIKE '%index%')", "t", f->dir), 0);
}

static const char *base(const char *path) { return strrchr(path, '/') + 1; }

static char *line(const char *kind, const char *file, int64_t pos, const char *sev) {
  static char buf[8][256];
  static int k;
  char *b = buf[k++ % 8];
  if (pos < 0) snprintf(b, 256, "%s|%s|NULL|%s\n", kind, file, sev);
  else snprintf(b, 256, "%s|%s|%lld|%s\n", kind, file, (long long)pos, sev);
  return b;
}

/* ---- the matrix ---- */

/* The sets of the matrix: the sample (fixture.h) and the one-segment set,
** whose damage meets the last segment alone; their count. */
static int matrix_sets(const char **out, size_t max) {
  size_t n = t_fixture_names(T_FIX_SAMPLE, 0, out, max);
  n += t_fixture_names(T_FIX_ONE_SEGMENT, 0, out + n, max - n);
  assert_true(n < max);
  return (int)n;
}

enum damage {
  D_HEADER_BIT,       /* CRC-covered header field */
  D_PAYLOAD_BIT,      /* last byte of the record data (compressed or not) */
  D_VARINT_BIT,       /* record length varint, CRC recomputed (v2 uncompressed) */
  D_COMPRESSED_FIXED, /* gzip payload byte, CRC recomputed */
  D_BASE_OFFSET,      /* base offset lowered below the previous batch's */
  D_LEN_PAST_END,     /* length field points past the file */
  D_LEN_TINY,         /* length field below the minimum */
  D_MAGIC,            /* magic byte 7 */
  NDAMAGE
};

static int damaged_copies; /* matrix cells actually run */

static void run_batch_damage(const char *set, enum damage d) {
  fx f;
  fx_open(&f, set);
  const char *codec = d == D_VARINT_BIT ? "none" : d == D_COMPRESSED_FIXED ? "gzip" : NULL;
  int b = find_batch(&f, 0, 1, codec);
  int magic = b >= 0 ? (int)batch_field(&f, 0, b, "magic") : -1;
  if (b < 0 || ((d == D_VARINT_BIT || d == D_COMPRESSED_FIXED) && magic != 2)) {
    fx_close(&f);
    return; /* this fixture has no batch of that kind */
  }
  int64_t pos = batch_field(&f, 0, b, "position");
  int64_t size = batch_field(&f, 0, b, "size");
  int64_t seg = jint(&f, "$.segments[0].base_offset");
  const char *log = base(f.log0);
  int last_seg = f.nseg == 1;
  int64_t sync = sync_after(f.idx0, pos);
  /* An entry cut short is a torn append only at the end of the last
  ** segment with nothing readable after it. */
  int silent = d == D_LEN_PAST_END && last_seg && sync < 0;
  char *want_skip = NULL, *want_check = NULL;
  switch (d) {
    case D_HEADER_BIT:
      t_flip(f.log0, pos + (magic == 2 ? 45 : 17), 0x10); /* producer id / attributes */
      want_check = strdup(line("crc_mismatch", log, pos, "error"));
      break;
    case D_PAYLOAD_BIT:
      t_flip(f.log0, pos + size - 2, 0x04);
      want_check = strdup(line("crc_mismatch", log, pos, "error"));
      break;
    case D_VARINT_BIT:
      t_flip(f.log0, pos + KL_V2_HEADER, 0x02);
      t_fix_crc(f.log0, pos, size);
      want_check = strdup(line("bad_records", log, pos, "error"));
      break;
    case D_COMPRESSED_FIXED:
      t_flip(f.log0, pos + size - 6, 0x01); /* gzip trailer CRC-32 */
      t_fix_crc(f.log0, pos, size);
      want_check = strdup(line("bad_records", log, pos, "error"));
      break;
    case D_BASE_OFFSET: {
      /* Lower the base offset to the previous batch's base (not CRC-covered). */
      int64_t prev = batch_field(&f, 0, b - 1, "position");
      size_t n;
      uint8_t *p = load(f.log0, &n);
      memcpy(p + pos, p + prev, 8);
      store(f.log0, p, n);
      free(p);
      want_check = strdup(line("offset_regression", log, pos, "error"));
      break;
    }
    case D_LEN_PAST_END:
      t_poke32(f.log0, pos + 8, 0x7ffffff0);
      want_check = strdup(line("truncated_batch", log, pos, silent ? "warning" : "error"));
      break;
    case D_LEN_TINY:
      t_poke32(f.log0, pos + 8, 5);
      want_check = strdup(line("bad_batch_length", log, pos, "error"));
      break;
    case D_MAGIC:
      t_flip(f.log0, pos + 16, 0x05); /* 2 -> 7, 1 -> 4, 0 -> 5 */
      want_check = strdup(line("bad_magic", log, pos, "error"));
      break;
    default: break;
  }
  damaged_copies++;
  /* Unreadable bytes are passed over up to the next index entry past
  ** them (or to the end of the segment); a damaged batch whose length
  ** holds, just itself. */
  int rest = d == D_LEN_PAST_END || d == D_LEN_TINY || d == D_MAGIC;
  want_skip = rest ? expected_rows_between(&f, seg, pos, sync < 0 ? INT64_MAX : sync)
                   : expected_rows(&f, seg, pos, 0);
  if (silent) {
    /* Kafka's scan stops at an entry that does not fit: the rows before it
    ** are served, without an error, in both modes. */
    assert_rows(&f, 0, want_skip);
  } else {
    assert_corrupt(&f, "SELECT offset, value FROM kafka_log(?1)", log, pos);
    assert_corrupt(&f, "SELECT offset, value FROM kafka_log(?1) ORDER BY offset DESC", log, pos);
    assert_corrupt(&f, "SELECT offset, value FROM kafka_log(?1) WHERE offset + 0 >= 0", log, pos);
  }
  assert_rows(&f, 1, want_skip);
  if (!rest) {
    assert_check(&f, want_check);
  } else {
    assert_check_first(&f, want_check);
  }
  free(want_skip);
  free(want_check);
  fx_close(&f);
}

static void test_batch_damage(void **state) {
  const char *sets[16];
  int nsets = matrix_sets(sets, 16);
  for (int s = 0; s < nsets; s++) {
    for (int d = 0; d < NDAMAGE; d++) run_batch_damage(sets[s], (enum damage)d);
  }
  print_message("  %d damaged copies (of %d fixture x damage cells)\n", damaged_copies,
                nsets * NDAMAGE);
  assert_true(damaged_copies >= 45);
}

/* Damage at the end of the last segment, and to the indexes of segment 0:
** queries return every row Kafka would serve, without an error. */
static void test_tail_and_index_damage(void **state) {
  const char *sets[16];
  int nsets = matrix_sets(sets, 16);
  for (int s = 0; s < nsets; s++) {
    for (int d = 0; d < 9; d++) {
      fx f;
      fx_open(&f, sets[s]);
      int ls = f.nseg - 1;
      char path[128];
      snprintf(path, sizeof path, "$.segments[%d].batches", ls);
      int nb = (int)st_int(f.db, "SELECT json_array_length(?1, ?2)", "tt", f.json, path);
      int64_t lpos = batch_field(&f, ls, nb - 1, "position");
      int64_t lseg = jint(&f, (snprintf(path, sizeof path, "$.segments[%d].base_offset", ls), path));
      int64_t lsize = jint(&f, (snprintf(path, sizeof path, "$.segments[%d].log_size", ls), path));
      int64_t nidx = jint(&f, "$.segments[0].offset_index.file_size");
      int64_t ntidx = jint(&f, "$.segments[0].time_index.file_size");
      const char *ll = base(f.loglast);
      char *want = NULL;
      const char *check = NULL;
      int skip_case = 0;
      switch (d) {
        case 0: /* truncated mid-header */
          truncate_to(f.loglast, lpos + 12); /* offset and length, no magic */
          want = expected_rows(&f, lseg, lpos, 0);
          check = line("truncated_batch", ll, lpos, "warning");
          break;
        case 1: /* truncated mid-batch */
          truncate_to(f.loglast, lpos + 40);
          want = expected_rows(&f, lseg, lpos, 0);
          check = line("truncated_batch", ll, lpos, "warning");
          break;
        case 2: { /* zero-filled (preallocated) tail */
          size_t n;
          uint8_t *p = load(f.loglast, &n);
          p = realloc(p, n + 4096);
          memset(p + n, 0, 4096);
          store(f.loglast, p, n + 4096);
          free(p);
          want = expected_rows(&f, -1, -1, 0);
          check = line("zero_filled_tail", ll, lsize, "info");
          break;
        }
        case 3: { /* an index entry past the log end */
          size_t n;
          uint8_t *p = load(f.idx0, &n);
          p = realloc(p, n + 8);
          int64_t rel = n >= 8 ? kl_get_u32(p + n - 8) + 1 : 1;
          kl_put_u32(p + n, (uint32_t)rel);
          kl_put_u32(p + n + 4, (uint32_t)jint(&f, "$.segments[0].log_size") + 100);
          store(f.idx0, p, n + 8);
          free(p);
          want = expected_rows(&f, -1, -1, 0);
          check = line("index_points_past_log", base(f.idx0), nidx, "warning");
          break;
        }
        case 4: { /* a non-monotonic index: entries 0 and 1 swapped */
          if (nidx < 16) skip_case = 1;
          else {
            size_t n;
            uint8_t *p = load(f.idx0, &n), t[8];
            memcpy(t, p, 8);
            memcpy(p, p + 8, 8);
            memcpy(p + 8, t, 8);
            store(f.idx0, p, n);
            free(p);
            want = expected_rows(&f, -1, -1, 0);
            check = line("index_not_monotonic", base(f.idx0), 8, "warning");
          }
          break;
        }
        case 5: { /* a time index timestamp going backwards */
          if (ntidx < 24) skip_case = 1;
          else {
            size_t n;
            uint8_t *p = load(f.tidx0, &n);
            kl_put_u64(p + 12, (uint64_t)(kl_get_i64(p) - 1));
            store(f.tidx0, p, n);
            free(p);
            want = expected_rows(&f, -1, -1, 0);
            check = line("timeindex_not_monotonic", base(f.tidx0), 12, "warning");
          }
          break;
        }
        case 6: /* a missing index */
          assert_int_equal(unlink(f.idx0), 0);
          want = expected_rows(&f, -1, -1, 0);
          check = line("missing_index", base(f.idx0), -1, "warning");
          break;
        case 7: { /* an orphan index */
          char p[600];
          snprintf(p, sizeof p, "%s/00000000000099999999.index", f.dir);
          store(p, (const uint8_t *)"", 0);
          want = expected_rows(&f, -1, -1, 0);
          check = line("orphan_index", "00000000000099999999.index", -1, "warning");
          break;
        }
        case 8: { /* an index longer than its log: the log lost its end */
          if (f.nseg > 1 || nidx < 8) skip_case = 1;
          else {
            size_t n;
            uint8_t *p = load(f.idx0, &n);
            int64_t ipos = kl_get_u32(p + n - 4);
            free(p);
            /* Cut the log exactly where the last index entry points. */
            int b = 0;
            while (batch_field(&f, 0, b, "position") != ipos) b++;
            truncate_to(f.log0, ipos);
            want = expected_rows(&f, 0, ipos, 1);
            (void)b;
            check = NULL; /* several findings: asserted by kind below */
          }
          break;
        }
      }
      if (!skip_case) {
        damaged_copies++;
        assert_rows(&f, 0, want);
        assert_rows(&f, 1, want);
        if (check && d <= 1) assert_check_first(&f, check);
        else if (check) assert_check(&f, check);
        else {
          assert_int_equal(st_int(f.db, "SELECT count(*) FROM kafka_log_check(?1) WHERE "
                                  "kind = 'index_points_past_log' AND position = ?2", "ti",
                                  f.dir, nidx - 8), 1);
          assert_int_equal(st_int(f.db, "SELECT count(*) FROM kafka_log_check(?1) WHERE "
                                  "severity = 'error'", "t", f.dir), 0);
        }
        /* Timestamp-bounded queries agree with the undamaged fixture. */
        char *a = rows(f.db, "SELECT offset FROM kafka_log(?1) WHERE timestamp >= 1700000000500 "
                             "ORDER BY offset LIMIT 50", f.dir);
        char *sql = sqlite3_mprintf("SELECT offset FROM (%s) WHERE timestamp >= 1700000000500 "
                                    "ORDER BY offset LIMIT 50",
                                    "SELECT offset, timestamp FROM kafka_log(?1)");
        char *w = rows(f.db, sql, f.dir);
        assert_text("timestamp rows", f.set, a, w);
        sqlite3_free(sql);
        free(a);
        free(w);
      }
      free(want);
      fx_close(&f);
    }
  }
}

/* Every fixture checks clean, but the live copy's active segment, whose
** state is reported as information. */
static void test_fixtures_check_clean(void **state) {
  const char *all[16];
  size_t nall = t_fixture_names(0, T_FIX_LIVE, all, 16);
  assert_true(nall == 12 && nall < 16);
  sqlite3 *db = st_open();
  for (size_t i = 0; i < nall; i++) {
    int64_t n = st_int(db, "SELECT count(*) FROM kafka_log_check(?1)", "t", t_fixture(all[i]));
    if (n) {
      st_print_rows(db, all[i], "SELECT * FROM kafka_log_check(?1)", "t", t_fixture(all[i]));
      fail_msg("%s: %lld findings", all[i], (long long)n);
    }
  }
  st_buf b = {0};
  st_render(db, st_prep(db, "SELECT segment, file, position, kind, severity FROM "
                        "kafka_log_check(?1)", "t", t_fixture("e-live-preallocated")), &b);
  assert_text("e-live-preallocated", "e", b.p,
              "1740|'00000000000000001740.index'|192|'preallocated_index_slots'|'info'\n"
              "1740|'00000000000000001740.timeindex'|288|'preallocated_index_slots'|'info'\n"
              "1740|'00000000000000001740.timeindex'|288|'timeindex_missing_final_entry'|'info'\n");
  st_buf_free(&b);
  st_close(db);
}

/* g-transactions, written by Kafka, checks clean (test_fixtures_check_clean):
** its .txnindex entries are exactly those the check derives from the
** markers, including aborted transactions that began a segment earlier
** (segment 728's first entry begins at 713).  Damaged copies show that the
** comparison is made: half an index cut off, an index removed, a first
** offset moved, an entry added. */
static void test_txnindex_findings(void **state) {
  sqlite3 *db = st_open();
  char *dir = t_mkdtemp("txnindex");
  assert_int_equal(t_copy_dir(t_fixture("g-transactions"), dir), 0);
  const char *q = "SELECT group_concat(segment || ' ' || ifnull(position, 'NULL') || ' ' || kind || "
                  "' ' || severity, char(10)) FROM kafka_log_check(?1)";
  char p182[600], p545[600], p728[600];
  snprintf(p182, sizeof p182, "%s/00000000000000000182.txnindex", dir);
  snprintf(p545, sizeof p545, "%s/00000000000000000545.txnindex", dir);
  snprintf(p728, sizeof p728, "%s/00000000000000000728.txnindex", dir);
  size_t n545, n728;
  uint8_t *t545 = load(p545, &n545), *t728 = load(p728, &n728);
  assert_int_equal(n728, 102);
  assert_int_equal(kl_get_i64(t728 + 10), 713); /* begins in segment 545 */

  truncate_to(p182, 68); /* 4 entries, 2 kept */
  assert_int_equal(unlink(p545), 0);
  uint8_t moved[102];
  memcpy(moved, t728, 102);
  kl_put_u64(moved + 10, 714);
  store(p728, moved, 102);
  char *k = st_text(db, q, "t", dir);
  assert_text("kafka_log_check", "g-transactions", k,
              "182 68 txnindex_missing_entry warning\n"
              "182 68 txnindex_missing_entry warning\n"
              "545 NULL txnindex_missing_entry warning\n"
              "545 NULL txnindex_missing_entry warning\n"
              "545 NULL txnindex_missing_entry warning\n"
              "728 0 txnindex_entry_mismatch warning");
  free(k);

  /* An entry for the offset after the last entry's marker (no marker). */
  store(p545, t545, n545);
  uint8_t extra[136];
  memcpy(extra, t728, 102);
  memcpy(extra + 102, t728 + 68, 34);
  kl_put_u64(extra + 102 + 18, (uint64_t)(kl_get_i64(t728 + 68 + 18) + 1));
  store(p728, extra, 136);
  k = st_text(db, q, "t", dir);
  assert_text("kafka_log_check", "g-transactions", k,
              "182 68 txnindex_missing_entry warning\n"
              "182 68 txnindex_missing_entry warning\n"
              "728 102 txnindex_extra_entry warning");
  free(k);
  free(t545);
  free(t728);
  t_rmdir(dir);
  free(dir);
  st_close(db);
}

/* A marker Kafka rejects (value version -1, its CRC intact): the one parser
** (kl_control_parse) makes kafka_batches fail naming the rule and
** kafka_log_check report it; kafka_log, which returns no control records,
** reads past it. */
static void test_bad_marker_readers(void **state) {
  sqlite3 *db = st_open();
  char *dir = t_mkdtemp("badmarker");
  kw_options o = {1 << 20, 4096, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  uint8_t key[4] = {0, 0, 0, 0}, val[6] = {0xff, 0xff, 0, 0, 0, 1};
  assert_int_equal(kw_append_txn(w, 1000, 2), 0);
  assert_int_equal(kw_append_control(w, 1000, key, 4, val, 6), 0);
  assert_int_equal(kw_close(w), 0);
  sqlite3_stmt *st = st_prep(db, "SELECT count(*) FROM kafka_batches(?1)", "t", dir);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "position 93: ABORT marker value version -1"));
  sqlite3_finalize(st);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 2);
  char *k = st_text(db, "SELECT kind || ' ' || position || ' ' || severity || ' ' || message "
                    "FROM kafka_log_check(?1)", "t", dir);
  assert_string_equal(k, "bad_control_record 93 error 00000000000000000000.log: position 93: "
                         "ABORT marker value version -1");
  free(k);
  t_rmdir(dir);
  free(dir);
  st_close(db);
}

/* Markers in a newer format, as Kafka reads them: a COMMIT whose key is
** version 5 followed by 4 more bytes, an ABORT whose value is version 2
** with 2 more bytes.  kafka_batches names them, kafka_log_check finds
** nothing, and read_committed keeps the committed transaction only. */
static void test_newer_marker_versions(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  char *dir = t_mkdtemp("newmarker");
  kw_options o = {1 << 20, 4096, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  uint8_t commit[8] = {0, 5, 0, 1, 9, 9, 9, 9}, abort_key[4] = {0, 0, 0, 0};
  uint8_t val[6] = {0, 0, 0, 0, 0, 7}, newer_val[8] = {0, 2, 0, 0, 0, 7, 1, 1};
  assert_int_equal(kw_append_txn(w, 1000, 2), 0);                          /* 0-1 */
  assert_int_equal(kw_append_control(w, 1000, commit, 8, val, 6), 0);      /* 2 */
  assert_int_equal(kw_append_txn(w, 1000, 3), 0);                          /* 3-5 */
  assert_int_equal(kw_append_control(w, 1000, abort_key, 4, newer_val, 8), 0); /* 6 */
  assert_int_equal(kw_close(w), 0);
  char *k = st_text(db, "SELECT group_concat(base_offset || ':' || control_type) FROM"
                    " kafka_batches(?1) WHERE is_control", "t", dir);
  assert_string_equal(k, "2:COMMIT,6:ABORT");
  free(k);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1)", "t", dir), 0);
  k = st_text(db, "SELECT group_concat(offset) FROM kafka_log(?1) WHERE isolation = 'read_committed'",
              "t", dir);
  assert_string_equal(k, "0,1");
  free(k);
  t_rmdir(dir);
  free(dir);
  st_close(db);
}

/* A .log that is not a log, and a directory of unrelated files. */
static void test_foreign_files(void **state) {
  sqlite3 *db = st_open();
  char *dir = t_mkdtemp("foreign");
  char p[600];
  snprintf(p, sizeof p, "%s/00000000000000000000.log", dir);
  const char *text = "This is not a Kafka log. It is a text file that happens to have the name "
                     "of a segment, and it goes on for a while to be longer than a header.\n";
  store(p, (const uint8_t *)text, strlen(text));
  sqlite3_stmt *st = st_prep(db, "SELECT * FROM kafka_log(?1)", "t", dir);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  assert_non_null(strstr(sqlite3_errmsg(db), "00000000000000000000.log: position 0: unknown magic"));
  sqlite3_finalize(st);
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE s USING kafka_log(%Q, on_corrupt='skip')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT count(*) FROM s", NULL), 0);
  assert_int_equal(st_int(db, "SELECT count(*) FROM s ORDER BY offset DESC", NULL), 0);
  char *k = st_text(db, "SELECT kind || ' ' || position || ' ' || severity FROM kafka_log_check(?1)", "t", dir);
  assert_string_equal(k, "bad_magic 0 error");
  free(k);
  t_rmdir(dir);
  free(dir);

  dir = t_mkdtemp("unrelated");
  snprintf(p, sizeof p, "%s/notes.txt", dir);
  store(p, (const uint8_t *)"hello\n", 6);
  snprintf(p, sizeof p, "%s/data.bin", dir);
  store(p, (const uint8_t *)"\x00\x01\x02", 3);
  /* Not a partition: an error that says so (Kafka keeps a segment in every
  ** partition directory, even an empty one). */
  st = st_prep(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir);
  assert_int_equal(sqlite3_step(st), SQLITE_CANTOPEN);
  assert_non_null(strstr(sqlite3_errmsg(db), "is not a Kafka partition directory"));
  sqlite3_finalize(st);
  k = st_text(db, "SELECT kind || ' ' || severity FROM kafka_log_check(?1)", "t", dir);
  assert_string_equal(k, "no_segments warning");
  free(k);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1)", "t", dir), 1);
  t_rmdir(dir);
  free(dir);
  st_close(db);
}

/* Garbage appended after the last batch of the last segment (not a torn
** write: an invalid length or magic byte) stays an error by default; Kafka
** would truncate it when recovering from an unclean stop.  Salvage reads
** every batch. */
static void test_garbage_after_last_batch(void **state) {
  char *dir = t_mkdtemp("garbage");
  assert_int_equal(t_copy_dir(t_fixture("a-tiny"), dir), 0);
  char p[600];
  snprintf(p, sizeof p, "%s/00000000000000000000.log", dir);
  size_t n;
  uint8_t *bytes = t_read_file(p, &n);
  const char junk[] = "this is not a record batch, appended by something that is not Kafka\n";
  bytes = realloc(bytes, n + sizeof junk);
  memcpy(bytes + n, junk, sizeof junk);
  store(p, bytes, n + sizeof junk);
  free(bytes);
  sqlite3 *db = st_open();
  sqlite3_stmt *st = st_prep(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir);
  assert_int_equal(sqlite3_step(st), SQLITE_CORRUPT);
  char want[64];
  snprintf(want, sizeof want, "00000000000000000000.log: position %zu:", n);
  assert_non_null(strstr(sqlite3_errmsg(db), want));
  sqlite3_finalize(st);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1, 'skip')", "t", dir), 10);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE severity = 'error' "
                              "AND position = ?2", "ti", dir, (int64_t)n), 1);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* Options and errors of the SQL surface. */
static void test_options(void **state) {
  sqlite3 *db = st_open();
  const char *dir = t_fixture("a-tiny");
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE x USING kafka_log(%Q, on_corrupt = 'error')", dir);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT count(*) FROM x", NULL), 10);
  sql = sqlite3_mprintf("CREATE VIRTUAL TABLE y USING kafka_log(%Q, on_corrupt='maybe')", dir);
  char *err = NULL;
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, &err), SQLITE_ERROR);
  assert_non_null(strstr(err, "on_corrupt"));
  sqlite3_free(err);
  sqlite3_free(sql);
  /* kafka_log_check needs its directory, and a missing one is an error. */
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, "SELECT * FROM kafka_log_check", -1, &st, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  assert_int_not_equal(rc, SQLITE_ROW);
  assert_int_not_equal(rc, SQLITE_DONE);
  sqlite3_finalize(st);
  st = st_prep(db, "SELECT * FROM kafka_log_check('/nonexistent/dir')", NULL);
  assert_int_equal(sqlite3_step(st), SQLITE_CANTOPEN);
  sqlite3_finalize(st);
  /* Legacy records have no headers: the JSON is an empty array. */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE headers = '[]'", "t",
                          t_fixture("f-legacy-v1")), 400);
  st_close(db);
}

/* The table-valued form takes on_corrupt as its second argument. */
static void test_tvf_on_corrupt(void **state) {
  char *dir = t_mkdtemp("tvfskip");
  assert_non_null(dir);
  assert_int_equal(t_copy_dir(t_fixture("a-tiny"), dir), 0);
  char path[4200];
  snprintf(path, sizeof path, "%s/00000000000000000000.log", dir);
  size_t n;
  uint8_t *p = t_read_file(path, &n);
  assert_non_null(p);
  p[300] ^= 0x40; /* inside the records of the batch at 202 (offsets 3..5) */
  assert_int_equal(t_write_file(path, p, n), 0);
  free(p);
  sqlite3 *db = st_open();
  static const struct {
    const char *sql;
    int rc;
    const char *text;
  } cases[] = {
      {"SELECT group_concat(offset) FROM (SELECT offset FROM kafka_log(?1, 'skip') ORDER BY offset)",
       SQLITE_ROW, "0,1,2,6,7,8,9"},
      {"SELECT group_concat(offset) FROM (SELECT offset FROM kafka_log(?1, 'SKIP') ORDER BY offset DESC)",
       SQLITE_ROW, "9,8,7,6,2,1,0"},
      {"SELECT count(*) FROM kafka_log(?1, 'error')", SQLITE_CORRUPT, "position 202"},
      {"SELECT count(*) FROM kafka_log(?1)", SQLITE_CORRUPT, "position 202"},
      {"SELECT count(*) FROM kafka_log(?1, 'sometimes')", SQLITE_ERROR, "on_corrupt"},
      {"SELECT on_corrupt FROM kafka_log(?1, 'skip') LIMIT 1", SQLITE_ROW, "skip"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, cases[i].sql, -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, dir, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc != cases[i].rc) fail_msg("%s: rc %d, want %d (%s)", cases[i].sql, rc, cases[i].rc, sqlite3_errmsg(db));
    const char *got = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : sqlite3_errmsg(db);
    if (!got || (rc == SQLITE_ROW ? strcmp(got, cases[i].text) != 0 : !strstr(got, cases[i].text))) {
      fail_msg("%s: got %s, want %s", cases[i].sql, got ? got : "NULL", cases[i].text);
    }
    sqlite3_finalize(st);
  }
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixtures_check_clean),
      cmocka_unit_test(test_txnindex_findings),
      cmocka_unit_test(test_bad_marker_readers),
      cmocka_unit_test(test_newer_marker_versions),
      cmocka_unit_test(test_batch_damage),
      cmocka_unit_test(test_tail_and_index_damage),
      cmocka_unit_test(test_foreign_files),
      cmocka_unit_test(test_garbage_after_last_batch),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_tvf_on_corrupt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
