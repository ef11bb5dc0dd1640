/*
** test_salvage.c - one answer whatever the plan, on damaged directories.
**
** Random damages of every kind of the corruption matrix (bits under and
** outside the CRC, records made undecodable under a recomputed CRC, a base
** offset lowered, lengths past the end and below the minimum, an unknown
** magic byte, garbage bytes, a zero-filled or cut tail), each in a segment
** that is not the last of a Kafka-written fixture.  For each damaged copy:
**
**   on_corrupt='skip': the full scan in offset order is the reference; the
**   descending scan turned round, a scan the module does not order (offset
**   + 0), point lookups of every offset around the damage and of random
**   ones, IN lists, offset ranges in both directions and timestamp bounds
**   all give exactly the reference's rows (the union of the lookups is the
**   reference itself);
**
**   the default mode: every one of those queries either fails with
**   SQLITE_CORRUPT naming a file and a byte position, or gives exactly the
**   reference's rows (what it read was sound); the full scan fails;
**
**   kafka_log_check: every error row is a region that a default query
**   reading it (the offsets between the rows kept on either side) fails
**   on, naming that file.
**
** The seed is printed; KL_SEED and KL_DAMAGES override it and the number
** of damaged copies.
*/
#include "sqltest.h"

#include <unistd.h>

#include "batch.h"
#include "log.h"
#include "scan.h"

/* ---- PRNG (splitmix64) ---- */

static uint64_t g_rng;
static uint64_t rnd(void) { return t_rand(&g_rng); }
static int64_t below(int64_t n) { return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0; }

/* ---- rows ---- */

typedef struct row {
  int64_t offset, ts, segment, position;
  char *text;               /* "offset|timestamp|hex(value)" */
} row;

typedef struct rows {
  row *r;
  int n, cap;
} rows;

static void rows_free(rows *a) {
  for (int i = 0; i < a->n; i++) free(a->r[i].text);
  free(a->r);
  memset(a, 0, sizeof *a);
}

/* Run sql (?1 = dir, then integers); rows into out; SQLite's result code. */
static int run(sqlite3 *db, const char *sql, const char *dir, const int64_t *args, int nargs,
               rows *out, char *errmsg, size_t errn) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare: %s\n  in: %s", sqlite3_errmsg(db), sql);
  sqlite3_bind_text(st, 1, dir, -1, SQLITE_TRANSIENT);
  for (int i = 0; i < nargs; i++) sqlite3_bind_int64(st, 2 + i, args[i]);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (out->n == out->cap) {
      out->cap = out->cap ? out->cap * 2 : 256;
      out->r = realloc(out->r, sizeof *out->r * (size_t)out->cap);
      assert_non_null(out->r);
    }
    row *r = &out->r[out->n++];
    r->offset = sqlite3_column_int64(st, 0);
    r->ts = sqlite3_column_int64(st, 1);
    r->segment = sqlite3_column_int64(st, 3);
    r->position = sqlite3_column_int64(st, 4);
    const char *v = (const char *)sqlite3_column_text(st, 2);
    if (!v) v = "";
    size_t n = strlen(v) + 48;
    r->text = malloc(n);
    snprintf(r->text, n, "%lld|%lld|%s", (long long)r->offset, (long long)r->ts, v);
  }
  snprintf(errmsg, errn, "%s", rc == SQLITE_DONE ? "" : sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* ---- what each query is, and what it must give ---- */

enum { Q_SCAN, Q_DESC, Q_PLUS0, Q_POINT, Q_IN, Q_RANGE, Q_RANGE_DESC, Q_TS, Q_TS_DESC };

static const char *const cols = "offset, timestamp, hex(value), segment, position";

/* The rows of the reference a query selects, in its order. */
static void expected(const rows *ref, int q, const int64_t *a, rows *out) {
  out->n = 0;
  for (int i = 0; i < ref->n; i++) {
    const row *r = &ref->r[q == Q_DESC || q == Q_RANGE_DESC || q == Q_TS_DESC ? ref->n - 1 - i : i];
    int in = 1;
    switch (q) {
      case Q_POINT: in = r->offset == a[0]; break;
      case Q_IN: in = r->offset == a[0] || r->offset == a[1] || r->offset == a[2]; break;
      case Q_RANGE: case Q_RANGE_DESC: in = r->offset >= a[0] && r->offset <= a[1]; break;
      case Q_TS: case Q_TS_DESC: in = r->ts >= a[0] && r->ts < a[1]; break;
      default: break;
    }
    if (!in) continue;
    if (out->n == out->cap) {
      out->cap = out->cap ? out->cap * 2 : 256;
      out->r = realloc(out->r, sizeof *out->r * (size_t)out->cap);
    }
    out->r[out->n] = *r;
    out->r[out->n++].text = strdup(r->text);
  }
}

static char *query_sql(int q, int skip) {
  const char *from = skip ? "kafka_log(?1, 'skip')" : "kafka_log(?1)";
  switch (q) {
    case Q_SCAN: return sqlite3_mprintf("SELECT %s FROM %s ORDER BY offset", cols, from);
    case Q_DESC: return sqlite3_mprintf("SELECT %s FROM %s ORDER BY offset DESC", cols, from);
    case Q_PLUS0:
      return sqlite3_mprintf("SELECT %s FROM %s WHERE offset + 0 >= -1 ORDER BY offset + 0", cols,
                             from);
    case Q_POINT: return sqlite3_mprintf("SELECT %s FROM %s WHERE offset = ?2", cols, from);
    case Q_IN:
      return sqlite3_mprintf("SELECT %s FROM %s WHERE offset IN (?2, ?3, ?4) ORDER BY offset", cols,
                             from);
    case Q_RANGE:
      return sqlite3_mprintf("SELECT %s FROM %s WHERE offset BETWEEN ?2 AND ?3 ORDER BY offset", cols,
                             from);
    case Q_RANGE_DESC:
      return sqlite3_mprintf(
          "SELECT %s FROM %s WHERE offset BETWEEN ?2 AND ?3 ORDER BY offset DESC", cols, from);
    case Q_TS:
      return sqlite3_mprintf(
          "SELECT %s FROM %s WHERE timestamp >= ?2 AND timestamp < ?3 ORDER BY offset", cols, from);
    case Q_TS_DESC:
      return sqlite3_mprintf(
          "SELECT %s FROM %s WHERE timestamp >= ?2 AND timestamp < ?3 ORDER BY offset DESC", cols,
          from);
  }
  return NULL;
}

typedef struct tally {
  long damages, queries, errors, answers, check_rows;
} tally;

static int same(const rows *a, const rows *b, int *at) {
  for (int i = 0; i < a->n && i < b->n; i++) {
    if (strcmp(a->r[i].text, b->r[i].text)) {
      *at = i;
      return 0;
    }
  }
  *at = a->n < b->n ? a->n : b->n;
  return a->n == b->n;
}

/* One query in both modes against the reference. */
static void check_query(sqlite3 *db, const char *dir, const rows *ref, int q, const int64_t *a,
                        int nargs, const char *what, tally *t) {
  rows want = {0};
  expected(ref, q, a, &want);
  for (int skip = 1; skip >= 0; skip--) {
    char *sql = query_sql(q, skip);
    rows got = {0};
    char msg[600];
    int rc = run(db, sql, dir, a, nargs, &got, msg, sizeof msg);
    t->queries++;
    int at = 0;
    if (rc == SQLITE_OK && same(&got, &want, &at)) {
      t->answers++;
    } else if (!skip && rc == SQLITE_CORRUPT && strstr(msg, ".log: position ")) {
      t->errors++; /* the query read damage and said where */
    } else {
      fail_msg("%s: %s\n  (%lld, %lld, %lld)\n  rc %d %s\n  row %d: got %s, want %s", what, sql,
               (long long)a[0], (long long)a[1], (long long)a[2], rc, msg, at,
               at < got.n ? got.r[at].text : "<end>", at < want.n ? want.r[at].text : "<end>");
    }
    sqlite3_free(sql);
    rows_free(&got);
  }
  rows_free(&want);
}

/* ---- damage ---- */



enum {
  K_CRC_BIT, K_HEADER_BIT, K_RECORDS, K_BASE_LOWER, K_LEN_PAST_END, K_LEN_TINY, K_MAGIC,
  K_GARBAGE, K_ZERO_TAIL, K_CUT, NKINDS
};
static const char *const kind_names[] = {"crc bit", "header bit", "records under a fixed CRC",
                                         "base offset lowered", "length past the end",
                                         "length below the minimum", "magic", "garbage",
                                         "zero-filled tail", "cut short"};

/* Damage one batch of a segment that is not the last; describes it.
** Returns 1 when the damage must be found (every kind but a bit flipped
** under a recomputed CRC, which may leave records that still decode), 2
** when it may not be (that kind), 0 when a full scan need not read it (the
** records of a control batch: markers are not rows). */
static int damage(sqlite3 *db, const char *json, const char *dir, int nseg, char *what,
                  size_t whatn) {
  int s = (int)below(nseg - 1);
  char path[160];
  snprintf(path, sizeof path, "$.segments[%d].batches", s);
  int nb = (int)st_int(db, "SELECT json_array_length(?1, ?2)", "tt", json, path);
  int b = (int)below(nb);
  char q[200];
  snprintf(q, sizeof q, "$.segments[%d].batches[%d]", s, b);
  int64_t pos = st_int(db, "SELECT json_extract(?1, ?2 || '.position')", "tt", json, q);
  int64_t size = st_int(db, "SELECT json_extract(?1, ?2 || '.size')", "tt", json, q);
  int magic = (int)st_int(db, "SELECT json_extract(?1, ?2 || '.magic')", "tt", json, q);
  int control = (int)st_int(db, "SELECT json_extract(?1, ?2 || '.is_control')", "tt", json, q);
  snprintf(path, sizeof path, "$.segments[%d].log_file", s);
  char *file = st_text(db, "SELECT json_extract(?1, ?2)", "tt", json, path);
  char log[4200];
  snprintf(log, sizeof log, "%s/%s", dir, file);
  int64_t prev = b > 0 ? st_int(db, "SELECT json_extract(?1, ?2)", "tt", json,
                                (snprintf(q, sizeof q, "$.segments[%d].batches[%d].position", s,
                                          b - 1), q))
                       : -1;
  int kind = (int)below(NKINDS);
  if ((kind == K_RECORDS && magic != 2) || (kind == K_BASE_LOWER && prev < 0)) kind = K_CRC_BIT;
  switch (kind) {
    case K_CRC_BIT: t_flip(log, pos + 21 + below(size - 21), (uint8_t)(1 << below(8))); break;
    case K_HEADER_BIT: t_flip(log, pos + 17 + below(magic == 2 ? 44 : 9), (uint8_t)(1 << below(8))); break;
    case K_RECORDS:
      t_flip(log, pos + KL_V2_HEADER + below(size - KL_V2_HEADER), (uint8_t)(1 << below(8)));
      t_fix_crc(log, pos, size);
      break;
    case K_BASE_LOWER: {
      size_t n;
      uint8_t *p = t_read_file(log, &n);
      t_poke(log, pos, p + prev, 8);
      free(p);
      break;
    }
    case K_LEN_PAST_END: t_poke32(log, pos + 8, 0x7ffffff0); break;
    case K_LEN_TINY: t_poke32(log, pos + 8, (uint32_t)below(14)); break;
    case K_MAGIC: t_flip(log, pos + 16, (uint8_t)(4 + below(4) * 8)); break;
    case K_GARBAGE: { /* every byte changed */
      int64_t n = 1 + below(300);
      if (n > size) n = size;
      int64_t at = pos + below(size - n + 1);
      for (int64_t i = 0; i < n; i++) t_flip(log, at + i, (uint8_t)(1 + below(255)));
      break;
    }
    case K_ZERO_TAIL: {
      size_t n;
      uint8_t *p = t_read_file(log, &n);
      memset(p + pos, 0, n - (size_t)pos);
      assert_int_equal(t_write_file(log, p, n), 0);
      free(p);
      break;
    }
    case K_CUT: assert_int_equal(truncate(log, pos + 1 + below(size - 1)), 0); break;
  }
  snprintf(what, whatn, "%s in %s at position %lld (segment %d of %d, batch %d%s)",
           kind_names[kind], file, (long long)pos, s, nseg, b, control ? ", a marker" : "");
  free(file);
  return kind != K_RECORDS ? 1 : control ? 0 : 2;
}

/* ---- one damaged copy ---- */

/* The plans of a damaged copy in dir against each other (see the top). */
static void compare_plans(sqlite3 *db, const char *json, const char *set, const char *dir,
                          const char *what, int must_fail, tally *t) {
  /* The reference: the salvage of a full scan. */
  rows ref = {0};
  char msg[600];
  char *sql = query_sql(Q_SCAN, 1);
  if (run(db, sql, dir, NULL, 0, &ref, msg, sizeof msg) != SQLITE_OK) {
    fail_msg("%s: %s: skip scan failed: %s", set, what, msg);
  }
  sqlite3_free(sql);
  for (int i = 1; i < ref.n; i++) {
    if (ref.r[i].offset <= ref.r[i - 1].offset) fail_msg("%s: %s: offsets out of order", set, what);
  }
  char ctx[700];
  snprintf(ctx, sizeof ctx, "[%s] %s (copy in %s)", set, what, dir);
  int64_t lo = ref.n ? ref.r[0].offset : 0, hi = ref.n ? ref.r[ref.n - 1].offset : 0;
  int64_t tlo = INT64_MAX, thi = INT64_MIN;
  for (int i = 0; i < ref.n; i++) {
    if (ref.r[i].ts < tlo) tlo = ref.r[i].ts;
    if (ref.r[i].ts > thi) thi = ref.r[i].ts;
  }
  int64_t none[3] = {0, 0, 0};
  check_query(db, dir, &ref, Q_DESC, none, 0, ctx, t);
  check_query(db, dir, &ref, Q_PLUS0, none, 0, ctx, t);
  /* Default mode: the full scan meets the damage (it is in a segment that
  ** is not the last, where nothing ends the data silently). */
  if (must_fail) {
    sql = query_sql(Q_SCAN, 0);
    rows got = {0};
    int rc = run(db, sql, dir, NULL, 0, &got, msg, sizeof msg);
    if (rc != SQLITE_CORRUPT || !strstr(msg, ".log: position ")) {
      fail_msg("%s: the default full scan gave rc %d (%s), %d rows", ctx, rc, msg, got.n);
    }
    sqlite3_free(sql);
    rows_free(&got);
  }
  /* Lookups of every offset around the damage: the batches the hole took
  ** leave a gap in the reference. */
  int64_t gap_lo = lo, gap_hi = lo;
  for (int i = 1; i < ref.n; i++) {
    if (ref.r[i].offset - ref.r[i - 1].offset > gap_hi - gap_lo) {
      gap_lo = ref.r[i - 1].offset;
      gap_hi = ref.r[i].offset;
    }
  }
  for (int64_t x = gap_lo - 2; x <= gap_hi + 2 && x <= gap_lo + 60; x++) {
    int64_t a[3] = {x, 0, 0};
    check_query(db, dir, &ref, Q_POINT, a, 1, ctx, t);
  }
  for (int k = 0; k < 12; k++) {
    int64_t a[3] = {lo - 2 + below(hi - lo + 5), 0, 0};
    check_query(db, dir, &ref, Q_POINT, a, 1, ctx, t);
    int64_t in[3] = {lo + below(hi - lo + 1), gap_lo + below(gap_hi - gap_lo + 1),
                     lo + below(hi - lo + 1)};
    check_query(db, dir, &ref, Q_IN, in, 3, ctx, t);
    int64_t x = below(2) ? gap_lo - below(200) : lo + below(hi - lo + 1);
    int64_t r[3] = {x, x + below(below(2) ? 50 : 3000), 0};
    check_query(db, dir, &ref, below(2) ? Q_RANGE : Q_RANGE_DESC, r, 2, ctx, t);
    int64_t ts = tlo + below(thi - tlo + 2);
    int64_t tr[3] = {ts, ts + below(below(2) ? 100 : 100000), 0};
    check_query(db, dir, &ref, below(2) ? Q_TS : Q_TS_DESC, tr, 2, ctx, t);
  }

  /* Every error of kafka_log_check is a region a default query reading
  ** it fails on: the offsets between the batches kept on either side. */
  sqlite3_stmt *st = st_prep(db, "SELECT segment, position, kind, file FROM kafka_log_check(?1) "
                                 "WHERE severity = 'error' AND position IS NOT NULL", "t", dir);
  while (sqlite3_step(st) == SQLITE_ROW) {
    int64_t seg = sqlite3_column_int64(st, 0), pos = sqlite3_column_int64(st, 1);
    const char *kind = (const char *)sqlite3_column_text(st, 2);
    const char *file = (const char *)sqlite3_column_text(st, 3);
    int64_t before = INT64_MIN, after = INT64_MAX;
    for (int i = 0; i < ref.n; i++) {
      const row *r = &ref.r[i];
      /* A batch whose records stop decoding keeps those before: rows. */
      if (r->segment < seg || (r->segment == seg && r->position <= pos)) before = r->offset;
      else if (after == INT64_MAX && (r->segment > seg || r->position > pos)) after = r->offset;
    }
    int64_t a = before == INT64_MIN ? 0 : before + 1;
    int64_t b = after == INT64_MAX ? INT64_MAX : after - 1;
    /* A marker (control batch) is no row: no query reads its records. */
    int64_t marker = st_int(db, "SELECT count(*) FROM json_each(?1, '$.segments') s, "
                            "json_each(s.value, '$.batches') b WHERE json_extract(s.value, "
                            "'$.base_offset') = ?2 AND json_extract(b.value, '$.position') = ?3 "
                            "AND json_extract(b.value, '$.is_control')", "tii", json, seg, pos);
    if (a > b || marker) continue;
    t->check_rows++;
    /* The ranges start at the row kept before the damage, so that they
    ** read from there on (the offsets a segment's overlapping batches
    ** claim are the next segment's, where a lookup of them goes). */
    static const char *const region[] = {
        "SELECT count(*) FROM kafka_log(?1) WHERE offset BETWEEN ?2 AND ?3",
        "SELECT offset FROM kafka_log(?1) WHERE offset BETWEEN ?2 AND ?3 ORDER BY offset DESC"};
    for (int qi = 0; qi < 2; qi++) {
      rows got = {0};
      int64_t args[2] = {before == INT64_MIN ? 0 : before, b};
      int rc = run(db, region[qi], dir, args, 2, &got, msg, sizeof msg);
      if (rc != SQLITE_CORRUPT || !strstr(msg, file)) {
        fail_msg("%s: check error %s at %s:%lld, but %s (%lld, %lld) gave rc %d: %s", ctx, kind,
                 file, (long long)pos, region[qi], (long long)a, (long long)b, rc, msg);
      }
      rows_free(&got);
    }
    /* Point lookups in the region: none finds a row, and those of the
    ** damaged batch's offsets fail (a marker's offset is no row). */
    int failed = 0;
    for (int64_t x = a; x <= b && x <= a + 40; x++) {
      rows got = {0};
      int rc = run(db, "SELECT offset FROM kafka_log(?1) WHERE offset = ?2", dir, &x, 1, &got, msg,
                   sizeof msg);
      if (rc == SQLITE_CORRUPT && strstr(msg, file)) failed++;
      else if (rc != SQLITE_OK || got.n) fail_msg("%s: lookup of %lld: rc %d, %d rows: %s", ctx,
                                                  (long long)x, rc, got.n, msg);
      rows_free(&got);
    }
    if (!failed && strcmp(kind, "segment_overlap")) {
      fail_msg("%s: no lookup in [%lld, %lld] met the damage", ctx, (long long)a, (long long)b);
    }
  }
  sqlite3_finalize(st);
  rows_free(&ref);
}

static char *fixture_json(const char *set) {
  size_t n;
  char *json = (char *)t_read_file(t_fixture_expected(set), &n);
  assert_non_null(json);
  json = realloc(json, n + 1);
  json[n] = 0;
  return json;
}

static void run_damaged(const char *set, tally *t) {
  sqlite3 *db = st_open();
  char *json = fixture_json(set);
  int nseg = (int)st_int(db, "SELECT json_array_length(?1, '$.segments')", "t", json);
  assert_true(nseg >= 2);
  char *dir = t_mkdtemp("salvage");
  assert_int_equal(t_copy_dir(t_fixture(set), dir), 0);
  char what[512];
  int found = damage(db, json, dir, nseg, what, sizeof what);
  int64_t check_errors = st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE severity = "
                                "'error'", "t", dir);
  if (found == 1 && check_errors == 0) fail_msg("[%s] %s: kafka_log_check found nothing", set, what);
  t->damages++;
  compare_plans(db, json, set, dir, what, found && check_errors > 0, t);
  free(json);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* Rename segment base of the copy in dir (its .log and indexes) to base
** to, as a hand that renames files would. */
static void rename_segment(const char *dir, int64_t base, int64_t to) {
  static const char *const sfx[] = {".log", ".index", ".timeindex", ".txnindex"};
  for (int f = 0; f < 4; f++) {
    char a[4200], b[4200];
    snprintf(a, sizeof a, "%s/%020lld%s", dir, (long long)base, sfx[f]);
    snprintf(b, sizeof b, "%s/%020lld%s", dir, (long long)to, sfx[f]);
    rename(a, b);
  }
}

/* Overlapping segments: a segment whose base is lowered (renamed) below the
** last offsets of the one before.  Those batches of the earlier segment
** that reach into the next are damage (segment_overlap); the next segment's
** batches stand, as Kafka's floor lookup reads them.  Every set of more
** than one segment whose files Kafka closed, three renames each. */
static void test_overlapping_segments(void **state) {
  const char *osets[16];
  size_t nosets = t_fixture_names(0, T_FIX_LIVE | T_FIX_ONE_SEGMENT, osets, 16);
  tally t = {0};
  g_rng = 7;
  for (size_t i = 0; i < nosets; i++) {
    for (int v = 0; v < 3; v++) {
      sqlite3 *db = st_open();
      char *json = fixture_json(osets[i]);
      int nseg = (int)st_int(db, "SELECT json_array_length(?1, '$.segments')", "t", json);
      int k = 1 + (int)below(nseg - 1);
      char q[64];
      snprintf(q, sizeof q, "$.segments[%d].base_offset", k);
      int64_t base = st_int(db, "SELECT json_extract(?1, ?2)", "tt", json, q);
      snprintf(q, sizeof q, "$.segments[%d].base_offset", k - 1);
      int64_t prev = st_int(db, "SELECT json_extract(?1, ?2)", "tt", json, q);
      int64_t to = base - 1 - below(v == 2 ? base - prev - 1 : 40);
      if (to <= prev) to = prev + 1;
      char *dir = t_mkdtemp("overlap");
      assert_int_equal(t_copy_dir(t_fixture(osets[i]), dir), 0);
      rename_segment(dir, base, to);
      char what[200];
      snprintf(what, sizeof what, "segment %lld renamed to %lld (the one before starts at %lld)",
               (long long)base, (long long)to, (long long)prev);
      assert_true(st_int(db, "SELECT count(*) FROM kafka_log_check(?1) WHERE kind = "
                         "'segment_overlap'", "t", dir) > 0);
      t.damages++;
      compare_plans(db, json, osets[i], dir, what, 1, &t);
      free(json);
      st_close(db);
      t_rmdir(dir);
      free(dir);
    }
  }
  print_message("  %ld overlaps, %ld queries: %ld answered exactly, %ld failed naming the "
                "damage; %ld check errors each made a reading query fail\n",
                t.damages, t.queries, t.answers, t.errors, t.check_rows);
}

/* A legacy compressed segment renamed below its base: its index entries,
** relative to the name, are off by the difference, and the header of the
** wrapper an entry names knows only its last offset, which the entry does
** not contradict.  f-legacy-v1-gzip's last segment renamed from 240 to 209
** has the entry (238, position 648), naming the wrapper of 260..269: a
** lookup of 240 that started there would miss the two wrappers before it.
** Every lookup gives what a scan the module does not order (offset + 0)
** gives, in skip mode; the renamed segment's own offsets are found in both
** modes (the walk to them meets no damage). */
static void test_renamed_legacy_segment_lookups(void **state) {
  (void)state;
  sqlite3 *db = st_open();
  char *dir = t_mkdtemp("renamed");
  assert_int_equal(t_copy_dir(t_fixture("f-legacy-v1-gzip"), dir), 0);
  rename_segment(dir, 240, 209);
  for (int64_t x = 190; x <= 300; x++) {
    int64_t want = st_int(db, "SELECT count(*) FROM kafka_log(?1, 'skip') WHERE offset + 0 = ?2",
                          "ti", dir, x);
    int64_t got = st_int(db, "SELECT count(*) FROM kafka_log(?1, 'skip') WHERE offset = ?2", "ti",
                         dir, x);
    if (got != want) fail_msg("skip mode, offset = %lld: %lld rows, not %lld", (long long)x,
                              (long long)got, (long long)want);
    if (x >= 240 && x < 300) {
      assert_int_equal(want, 1);
      assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset = ?2", "ti",
                              dir, x), 1);
    }
  }
  /* The fetch resolution of 240 (kl_log_lookup_offset) is the wrapper
  ** holding it, not the one the entry names. */
  kl_log *log;
  kl_err err = {0};
  assert_int_equal(kl_log_open(NULL, dir, &log, &err), KL_OK);
  kl_reader rd;
  kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
  kl_offset_lookup lk;
  assert_int_equal(kl_log_lookup_offset(log, &rd, 240, &lk, &err), KL_OK);
  assert_int_equal(lk.status, KL_LOOKUP_OK);
  assert_int_equal(lk.segment_base, 209);
  assert_int_equal(lk.batch.position, 0);
  assert_int_equal(lk.batch.base_offset, 240);
  kl_reader_free(&rd);
  kl_log_close(log);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

static void test_damaged_directories(void **state) {
  const char *env_seed = getenv("KL_SEED");
  const char *env_n = getenv("KL_DAMAGES");
  uint64_t seed = env_seed ? strtoull(env_seed, NULL, 0) : UINT64_C(20261130);
  long n = env_n ? atol(env_n) : 120;
  g_rng = seed;
  print_message("  seed %llu (KL_SEED), %ld damaged copies (KL_DAMAGES)\n",
                (unsigned long long)seed, n);
  tally t = {0};
  /* Every set of more than one segment whose files Kafka closed. */
  const char *sets[16];
  size_t nsets = t_fixture_names(0, T_FIX_LIVE | T_FIX_ONE_SEGMENT, sets, 16);
  for (long i = 0; i < n; i++) run_damaged(sets[(size_t)i % nsets], &t);
  print_message("  %ld damages, %ld queries: %ld answered exactly, %ld failed naming the "
                "damage; %ld check errors each made a reading query fail\n",
                t.damages, t.queries, t.answers, t.errors, t.check_rows);
  assert_int_equal(t.damages, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_damaged_directories),
      cmocka_unit_test(test_overlapping_segments),
      cmocka_unit_test(test_renamed_legacy_segment_lookups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
