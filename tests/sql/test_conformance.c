/*
** test_conformance.c - every fixture set, read through kafka_log(), must give
** exactly the records Kafka's own readers report in expected.json, and the
** core lookups must resolve offsets and timestamps as Kafka does.
**
** One cmocka test per fixture set; each does:
**   (a) rows: the expected rows are built in SQL from expected.json
**       (json_each over segments -> batches -> records, control batches
**       left out) into temp table e; the module's rows go into temp table a
**       in the order the module produces them.  Same count, no difference
**       either way (EXCEPT), and the natural order is ascending offset.
**   (b) lookups.offsets through kl_log_lookup_offset.
**   (c) lookups.timestamps through kl_log_lookup_time.
**   (d) the SQL form of a timestamp lookup,
**       SELECT min(offset) FROM kafka_log(?) WHERE timestamp >= t.
**
** Headers are compared in a canonical form on both sides: a JSON array of
** [hex(name bytes), hex(value bytes) | null].
*/
#include "sqltest.h"

#include <dirent.h>
#include <unistd.h>

#include "log.h"


/* Columns compared, in the same order in e and a. */
#define COLS "off, ts, tst, k, v, hdr, ple, pid, pep, seq, txn, comp, seg, pos"

/* ?1 = expected.json.  Records of non-control batches. */
static const char k_expected_sql[] =
    "CREATE TEMP TABLE e AS SELECT"
    " json_extract(r.value,'$[0]') AS off,"
    " json_extract(r.value,'$[1]') AS ts,"
    " json_extract(b.value,'$.timestamp_type') AS tst,"
    " json_extract(r.value,'$[2]') AS k,"
    " json_extract(r.value,'$[3]') AS v,"
    " (SELECT json_group_array(json_array(lower(hex(json_extract(h.value,'$[0]'))),"
    "                                     json_extract(h.value,'$[1]')))"
    "    FROM json_each(r.value,'$[4]') h) AS hdr,"
    " json_extract(b.value,'$.partition_leader_epoch') AS ple,"
    " json_extract(b.value,'$.producer_id') AS pid,"
    " json_extract(b.value,'$.producer_epoch') AS pep,"
    " CASE WHEN json_extract(b.value,'$.base_sequence') < 0 THEN -1"
    "      ELSE json_extract(b.value,'$.base_sequence')"
    "           + json_extract(r.value,'$[0]') - json_extract(b.value,'$.base_offset')"
    " END AS seq,"
    " json_extract(b.value,'$.is_transactional') AS txn,"  /* JSON true -> 1 */
    " json_extract(b.value,'$.compression') AS comp,"
    " json_extract(s.value,'$.base_offset') AS seg,"
    " json_extract(b.value,'$.position') AS pos"
    " FROM json_each(?1,'$.segments') s, json_each(s.value,'$.batches') b,"
    "      json_each(b.value,'$.records') r"
    " WHERE json_extract(b.value,'$.is_control') = 0";

/* One header element of the module's JSON in canonical form. */
#define CANON(path)                                                        \
  "CASE json_type(h.value,'" path "')"                                     \
  " WHEN 'null' THEN NULL"                                                 \
  " WHEN 'object' THEN lower(json_extract(h.value,'" path ".hex'))"        \
  " ELSE lower(hex(json_extract(h.value,'" path "'))) END"

/* ?1 = partition directory.  rn records the order rows came in. */
static const char k_actual_sql[] =
    "INSERT INTO a(" COLS ") SELECT offset, timestamp, timestamp_type,"
    " CASE WHEN key IS NULL THEN NULL ELSE lower(hex(key)) END,"
    " CASE WHEN value IS NULL THEN NULL ELSE lower(hex(value)) END,"
    " (SELECT json_group_array(json_array(" CANON("$[0]") ", " CANON("$[1]") "))"
    "    FROM json_each(headers) h),"
    " partition_leader_epoch, producer_id, producer_epoch, sequence,"
    " is_transactional, compression, segment, position"
    " FROM kafka_log(?1)";

typedef struct ctx {
  const char *set;
  long failures;
} ctx;

static void expect_eq(ctx *c, const char *what, int64_t key, const char *field,
                      int64_t expected, int64_t actual) {
  if (expected == actual) return;
  if (c->failures++ < 25)
    print_message("  %s: %s %" PRId64 ": %s expected %" PRId64 ", got %" PRId64 "\n",
                  c->set, what, key, field, expected, actual);
}

/* (a) rows. */
static void check_rows(sqlite3 *db, ctx *c, const char *json, const char *dir) {
  st_run(db, k_expected_sql, "t", json);
  st_exec(db, "CREATE TEMP TABLE a(rn INTEGER PRIMARY KEY, " COLS ")");
  st_run(db, k_actual_sql, "t", dir);

  int64_t ne = st_int(db, "SELECT count(*) FROM e", NULL);
  int64_t na = st_int(db, "SELECT count(*) FROM a", NULL);
  int64_t nrec = st_int(db,
      "SELECT json_extract(?1,'$.log.record_count')"
      " - (SELECT count(*) FROM json_each(?1,'$.segments') s,"
      "      json_each(s.value,'$.batches') b, json_each(b.value,'$.records') r"
      "    WHERE json_extract(b.value,'$.is_control'))", "t", json);
  assert_true(ne > 0);
  assert_int_equal(ne, nrec);  /* the expected side itself is complete */

  static const char diff_sql[] =
      "SELECT count(*), min(off) FROM ("
      " SELECT * FROM (SELECT " COLS " FROM e EXCEPT SELECT " COLS " FROM a)"
      " UNION ALL"
      " SELECT * FROM (SELECT " COLS " FROM a EXCEPT SELECT " COLS " FROM e))";
  sqlite3_stmt *st = st_prep(db, diff_sql, NULL);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t ndiff = sqlite3_column_int64(st, 0);
  int64_t first = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  if (ndiff) {
    print_message("  %s: %" PRId64 " differing rows (expected %" PRId64 " rows, got %" PRId64
                  "); first at offset %" PRId64 "\n  columns: %s\n",
                  c->set, ndiff, ne, na, first, COLS);
    st_print_rows(db, "expected", "SELECT " COLS " FROM e WHERE off = ?1", "i", first);
    st_print_rows(db, "actual", "SELECT " COLS " FROM a WHERE off = ?1", "i", first);
    c->failures++;
  }
  if (ne != na) {
    print_message("  %s: expected %" PRId64 " rows, got %" PRId64 "\n", c->set, ne, na);
    c->failures++;
  }
  /* Without ORDER BY the module produces rows in ascending offset order. */
  int64_t unordered = st_int(db,
      "SELECT count(*) FROM a x JOIN a y ON y.rn = x.rn + 1 WHERE y.off <= x.off", NULL);
  if (unordered) {
    print_message("  %s: %" PRId64 " rows out of ascending offset order\n", c->set, unordered);
    st_print_rows(db, "first", "SELECT x.off, y.off FROM a x JOIN a y ON y.rn = x.rn + 1"
                  " WHERE y.off <= x.off LIMIT 3", NULL);
    c->failures++;
  }
}

static int map_offset_status(const char *s) {
  if (!strcmp(s, "ok")) return KL_LOOKUP_OK;
  if (!strcmp(s, "log_end")) return KL_LOOKUP_LOG_END;
  if (!strcmp(s, "out_of_range")) return KL_LOOKUP_OUT_OF_RANGE;
  if (!strcmp(s, "offset_in_gap_next_batch_returned")) return KL_LOOKUP_GAP;
  fail_msg("unknown offset lookup status '%s'", s);
  return -1;
}

/* (b) lookups.offsets. */
static void check_offset_lookups(sqlite3 *db, ctx *c, const char *json, kl_log *log,
                                 int recovered_view) {
  sqlite3_stmt *st = st_prep(db,
      "SELECT json_extract(o.value,'$.offset'), json_extract(o.value,'$.status'),"
      " json_extract(o.value,'$.segment_base_offset'),"
      " json_extract(o.value,'$.index_lookup[0]'), json_extract(o.value,'$.index_lookup[1]'),"
      " json_extract(o.value,'$.read_segment_base_offset'),"
      " json_extract(o.value,'$.batch_position'), json_extract(o.value,'$.batch_size'),"
      " json_extract(o.value,'$.batch_base_offset'), json_extract(o.value,'$.batch_last_offset')"
      " FROM json_each(?1,'$.lookups.offsets') o", "t", json);
  long n = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    int64_t off = sqlite3_column_int64(st, 0);
    int status = map_offset_status((const char *)sqlite3_column_text(st, 1));
    kl_offset_lookup r;
    kl_err err = {0};
    memset(&r, 0xa5, sizeof r);
    kl_reader rd;
    kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
    kl_rc rc = kl_log_lookup_offset(log, &rd, off, &r, &err);
    kl_reader_free(&rd);
    n++;
    if (rc != KL_OK) {
      if (c->failures++ < 25)
        print_message("  %s: offset %" PRId64 ": %s: %s\n", c->set, off, kl_rc_name(rc), err.msg);
      continue;
    }
    expect_eq(c, "offset", off, "status", status, r.status);
    if (status != KL_LOOKUP_OK && status != KL_LOOKUP_GAP) continue;
    if (r.status != status) continue;
    expect_eq(c, "offset", off, "segment_base", sqlite3_column_int64(st, 2), r.segment_base);
    if (!recovered_view) {
      expect_eq(c, "offset", off, "index_lookup offset", sqlite3_column_int64(st, 3), r.index_offset);
      expect_eq(c, "offset", off, "index_lookup position", sqlite3_column_int64(st, 4), r.index_position);
    }
    expect_eq(c, "offset", off, "read_segment_base", sqlite3_column_int64(st, 5), r.read_segment_base);
    expect_eq(c, "offset", off, "batch.position", sqlite3_column_int64(st, 6), r.batch.position);
    expect_eq(c, "offset", off, "batch.size", sqlite3_column_int64(st, 7), r.batch.size);
    expect_eq(c, "offset", off, r.batch.first_known ? "batch.base_offset"
                                  : "batch.base_offset (first_known=0: not decoded)",
              sqlite3_column_int64(st, 8), r.batch.base_offset);
    expect_eq(c, "offset", off, "batch.last_offset", sqlite3_column_int64(st, 9), r.batch.last_offset);
  }
  sqlite3_finalize(st);
  assert_true(n > 0);
}

/* (c) lookups.timestamps and (d) their SQL form. */
static void check_time_lookups(sqlite3 *db, ctx *c, const char *json, kl_log *log,
                               const char *dir, int clean_view) {
  sqlite3_stmt *st = st_prep(db,
      "SELECT json_extract(o.value,'$.timestamp'), json_extract(o.value,'$.status'),"
      " json_extract(o.value,'$.segment_base_offset'),"
      " json_extract(o.value,'$.time_index_lookup[0]'),"
      " json_extract(o.value,'$.time_index_lookup[1]'),"
      " json_extract(o.value,'$.start_position'),"
      " json_extract(o.value,'$.result_offset'), json_extract(o.value,'$.result_timestamp')"
      " FROM json_each(?1,'$.lookups.timestamps') o", "t", json);
  long n = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    int64_t t = sqlite3_column_int64(st, 0);
    const char *status = (const char *)sqlite3_column_text(st, 1);
    int64_t res_off = sqlite3_column_int64(st, 6);
    n++;

    /* (c) the core lookup. */
    kl_time_lookup r;
    kl_err err = {0};
    memset(&r, 0xa5, sizeof r);
    kl_reader rd;
    kl_reader_init(&rd, NULL, NULL, KL_ON_CORRUPT_ERROR);
    kl_rc rc = kl_log_lookup_time(log, &rd, t, &r, &err);
    kl_reader_free(&rd);
    if (rc != KL_OK) {
      if (c->failures++ < 25)
        print_message("  %s: timestamp %" PRId64 ": %s: %s\n", c->set, t, kl_rc_name(rc), err.msg);
    } else if (!strcmp(status, "ok")) {
      expect_eq(c, "timestamp", t, "status", KL_LOOKUP_OK, r.status);
      if (r.status == KL_LOOKUP_OK) {
        expect_eq(c, "timestamp", t, "offset", res_off, r.offset);
        expect_eq(c, "timestamp", t, "result timestamp", sqlite3_column_int64(st, 7), r.timestamp);
        if (t >= 0) expect_eq(c, "timestamp", t, "segment_base", sqlite3_column_int64(st, 2), r.segment_base);
        if (t >= 0 && clean_view) {
          expect_eq(c, "timestamp", t, "time index entry ts", sqlite3_column_int64(st, 3), r.ti_timestamp);
          expect_eq(c, "timestamp", t, "time index entry offset", sqlite3_column_int64(st, 4), r.ti_offset);
          expect_eq(c, "timestamp", t, "start_position", sqlite3_column_int64(st, 5), r.start_position);
        }
      }
    } else if (!strcmp(status, "not_found")) {
      expect_eq(c, "timestamp", t, "status (not_found)", KL_LOOKUP_NOT_FOUND, r.status);
    } else if (!strcmp(status, "unsupported_for_message_format")) {
      /* Here we deliberately differ from Kafka.  For magic-0 data Kafka
      ** refuses (and would date timestamp-less segments by file mtime); we
      ** answer exactly: every record has timestamp -1, so no record has a
      ** timestamp >= t for any t >= 0.  MAX_TIMESTAMP (-3) over records
      ** without timestamps has no meaningful answer: not checked. */
      if (t >= 0) expect_eq(c, "timestamp", t, "status (v0: none >= t)", KL_LOOKUP_NOT_FOUND, r.status);
    } else {
      fail_msg("%s: unknown timestamp lookup status '%s'", c->set, status);
    }

    /* (d) the SQL form: the smallest data offset with timestamp >= t. */
    if (t < 0) continue;
    int64_t got = st_int(db, "SELECT min(offset) FROM kafka_log(?1) WHERE timestamp >= ?2",
                         "ti", dir, t);
    int64_t want = st_int(db, "SELECT min(off) FROM e WHERE ts >= ?1", "i", t);
    expect_eq(c, "SQL timestamp >=", t, "min(offset) (ST_NULL = none)", want, got);
    /* The same question in the form the module can push down whole
    ** (timestamp bound, ORDER BY offset consumed, LIMIT handed over). */
    int64_t first = st_int(db, "SELECT (SELECT offset FROM kafka_log(?1)"
                               " WHERE timestamp >= ?2 ORDER BY offset LIMIT 1)", "ti", dir, t);
    expect_eq(c, "SQL timestamp >= ... ORDER BY offset LIMIT 1", t, "offset", want, first);
    /* Kafka's answer is the smallest offset with timestamp >= t, control
    ** records included; when it is a data record it must be ours too. */
    if (!strcmp(status, "ok") &&
        st_int(db, "SELECT count(*) FROM e WHERE off = ?1", "i", res_off))
      expect_eq(c, "SQL timestamp >= (Kafka's answer)", t, "min(offset)", res_off, got);
  }
  sqlite3_finalize(st);
  assert_true(n > 0);
}

/* Run sql, a statement over e (expected.json's rows) and k (the module's)
** ending in the two counts and the two differences (as check_batches
** builds it), with ?1 the directory and ?2 the JSON; a difference is a
** failure of the set, reported with what (e.g. "kafka_batches"). */
static void compare_sets(sqlite3 *db, ctx *c, const char *sql, const char *what, const char *dir,
                         const char *json) {
  sqlite3_stmt *st = st_prep(db, sql, "tt", dir, json);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  int64_t ne = sqlite3_column_int64(st, 0), nk = sqlite3_column_int64(st, 1);
  int64_t only_e = sqlite3_column_int64(st, 2), only_k = sqlite3_column_int64(st, 3);
  sqlite3_finalize(st);
  assert_true(ne > 0);
  if (ne != nk || only_e || only_k) {
    print_error("%s: %s: %lld rows in expected.json, %lld listed; %lld only in expected.json, "
                "%lld only listed\n", c->set, what, (long long)ne, (long long)nk,
                (long long)only_e, (long long)only_k);
    c->failures++;
  }
}

/* kafka_batches lists exactly the batches Kafka's reader listed, control
** batches included, with every header field: both differences are empty
** (legacy entries have no record count or base timestamp: NULL, as in
** expected.json). */
static void check_batches(sqlite3 *db, ctx *c, const char *json, const char *dir) {
  static const char cols[] =
      "segment, base_offset, last_offset, position, size, magic, crc, crc_valid, attributes,"
      " record_count, last_offset_delta, base_timestamp, compression, timestamp_type,"
      " max_timestamp, producer_id, producer_epoch, base_sequence, partition_leader_epoch,"
      " is_transactional, is_control";
  char *sql = sqlite3_mprintf(
      "WITH e AS (SELECT json_extract(s.value, '$.base_offset') AS segment,"
      "  json_extract(b.value, '$.base_offset') AS base_offset,"
      "  json_extract(b.value, '$.last_offset') AS last_offset,"
      "  json_extract(b.value, '$.position') AS position, json_extract(b.value, '$.size') AS size,"
      "  json_extract(b.value, '$.magic') AS magic, json_extract(b.value, '$.crc') AS crc,"
      "  json_extract(b.value, '$.crc_valid') AS crc_valid,"
      "  json_extract(b.value, '$.attributes') AS attributes,"
      "  json_extract(b.value, '$.record_count') AS record_count,"
      "  json_extract(b.value, '$.last_offset_delta') AS last_offset_delta,"
      "  json_extract(b.value, '$.base_timestamp') AS base_timestamp,"
      "  json_extract(b.value, '$.compression') AS compression,"
      "  json_extract(b.value, '$.timestamp_type') AS timestamp_type,"
      "  json_extract(b.value, '$.max_timestamp') AS max_timestamp,"
      "  json_extract(b.value, '$.producer_id') AS producer_id,"
      "  json_extract(b.value, '$.producer_epoch') AS producer_epoch,"
      "  json_extract(b.value, '$.base_sequence') AS base_sequence,"
      "  json_extract(b.value, '$.partition_leader_epoch') AS partition_leader_epoch,"
      "  json_extract(b.value, '$.is_transactional') AS is_transactional,"
      "  json_extract(b.value, '$.is_control') AS is_control"
      "  FROM json_each(?2, '$.segments') s, json_each(s.value, '$.batches') b),"
      " k AS (SELECT %s FROM kafka_batches(?1))"
      " SELECT (SELECT count(*) FROM e), (SELECT count(*) FROM k),"
      "  (SELECT count(*) FROM (SELECT * FROM e EXCEPT SELECT * FROM k)),"
      "  (SELECT count(*) FROM (SELECT * FROM k EXCEPT SELECT * FROM e))", cols);
  compare_sets(db, c, sql, "kafka_batches", dir, json);
  sqlite3_free(sql);
}

/* kafka_segments: each segment's next offset, file sizes, index entries and
** preallocated slots, and largest timestamp are what Kafka's reader found. */
static void check_segments(sqlite3 *db, ctx *c, const char *json, const char *dir) {
#define KS_ENTRIES(ix) \
  "CASE json_type(s.value, '$." ix ".entries') WHEN 'array' THEN" \
  " json_array_length(s.value, '$." ix ".entries') ELSE json_extract(s.value, '$." ix ".entries') END"
  static const char sql[] =
      "WITH e AS (SELECT json_extract(s.value, '$.base_offset'), json_extract(s.value, '$.next_offset'),"
      "  json_extract(s.value, '$.log_size'),"
      "  nullif(json_extract(s.value, '$.offset_index.file_size'), -1),"
      "  nullif(json_extract(s.value, '$.time_index.file_size'), -1),"
      "  nullif(json_extract(s.value, '$.txn_index.file_size'), -1),"
      "  " KS_ENTRIES("offset_index") ", " KS_ENTRIES("time_index") ","
      "  json_extract(s.value, '$.offset_index.trailing_zero_slots'),"
      "  json_extract(s.value, '$.time_index.trailing_zero_slots'),"
      "  json_extract(s.value, '$.max_timestamp_from_batches[0]'),"
      "  json_extract(s.value, '$.max_timestamp_from_batches[1]')"
      "  FROM json_each(?2, '$.segments') s),"
      " k AS (SELECT segment, next_offset, log_bytes, index_bytes, timeindex_bytes, txnindex_bytes,"
      "  index_entries, timeindex_entries, index_zero_slots, timeindex_zero_slots, max_timestamp,"
      "  max_timestamp_offset FROM kafka_segments(?1))"
      " SELECT (SELECT count(*) FROM e), (SELECT count(*) FROM k),"
      "  (SELECT count(*) FROM (SELECT * FROM e EXCEPT SELECT * FROM k)),"
      "  (SELECT count(*) FROM (SELECT * FROM k EXCEPT SELECT * FROM e))";
#undef KS_ENTRIES
  compare_sets(db, c, sql, "kafka_segments", dir, json);
}

static void run_set(const char *set) {
  ctx c = {set, 0};
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", t_fixture(c.set));
  size_t n;
  char *json = (char *)t_read_file(t_fixture_expected(c.set), &n);
  assert_non_null(json);

  sqlite3 *db = st_open();
  char *view = st_text(db, "SELECT json_extract(?1,'$.lookups.view')", "t", json);
  assert_non_null(view);
  int recovered = !strncmp(view, "after_unclean_recovery", 22);
  int clean = !strncmp(view, "after_clean_start", 17);
  assert_true(recovered || clean);

  check_rows(db, &c, json, dir);
  check_batches(db, &c, json, dir);
  check_segments(db, &c, json, dir);

  kl_log *log = NULL;
  kl_err err = {0};
  kl_rc rc = kl_log_open(NULL, dir, &log, &err);
  if (rc != KL_OK) fail_msg("kl_log_open(%s): %s: %s", dir, kl_rc_name(rc), err.msg);
  check_offset_lookups(db, &c, json, log, recovered);
  check_time_lookups(db, &c, json, log, dir, clean);
  kl_log_close(log);

  free(view);
  free(json);
  st_close(db);
  if (c.failures) fail_msg("%s: %ld mismatches", c.set, c.failures);
}

/* Every fixture directory must be in the fixture table (tests/util/fixture.c),
** and every set there has its test below: a new set is never skipped. */
static void test_all_sets_listed(void **state) {
  DIR *d = opendir(KL_FIXTURES);
  assert_non_null(d);
  struct dirent *e;
  int seen = 0;
  while ((e = readdir(d)) != NULL) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s/expected.json", KL_FIXTURES, e->d_name);
    if (e->d_name[0] == '.' || access(p, R_OK) != 0) continue;
    int listed = 0;
    for (int i = 0; t_fixture_sets[i].name; i++) listed |= !strcmp(t_fixture_sets[i].name, e->d_name);
    if (!listed) fail_msg("fixture set %s is not in t_fixture_sets", e->d_name);
    seen++;
  }
  closedir(d);
  assert_int_equal(seen, t_fixture_names(0, 0, NULL, 0));
}

/* One test per set, named after it. */
static void test_set(void **state) { run_set(*state); }

int main(void) {
  struct CMUnitTest tests[1 + 32] = {cmocka_unit_test(test_all_sets_listed)};
  size_t n = 1 + t_fixture_tests(0, 0, test_set, tests + 1, 32);
  return _cmocka_run_group_tests("test_conformance", tests, n, NULL, NULL);
}
