/*
** test_readahead.c - scans that decompress ahead on worker threads (the
** threads option, core/ahead.h) give what a scan on one thread gives: the
** same rows in the same order, the same error at the same row, the same
** counters (but reads, bytes_read, batches_ahead, batches_reclaimed and
** threads_started);
** the workers are the table's, started once and reused scan after scan;
** lookups, counts and short windows start no worker and hand nothing
** over; the memory the workers hold is bounded.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ahead.h"
#include "cursor.h"
#include "kwriter.h"
#include "sqltest.h"

/* Every column a query may ask of a record, in offset order. */
#define ALL_COLUMNS                                                                  \
  "offset, timestamp, timestamp_type, key, value, headers, partition_leader_epoch," \
  " producer_id, producer_epoch, sequence, is_transactional, compression, segment,"  \
  " position, topic, partition"

static const int codecs[] = {KL_CODEC_NONE, KL_CODEC_GZIP, KL_CODEC_SNAPPY, KL_CODEC_LZ4,
                             KL_CODEC_ZSTD};

/* A log of `batches` batches of `per` records, the codec rotating batch by
** batch, JSON-like values of about value_len bytes, every seventh key null
** and a header on every fifth record, in segments of about seg bytes. */
static char *codec_log(const char *tag, int batches, int per, int value_len, int64_t seg) {
  char *dir = t_mkdtemp(tag);
  assert_non_null(dir);
  kw_options o = {seg, 4096, 0, 0};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  kl_rec_in *r = calloc((size_t)per, sizeof *r);
  char *v = malloc((size_t)per * (size_t)(value_len + 64));
  char(*k)[16] = calloc((size_t)per, sizeof *k);
  kl_header h = {(const uint8_t *)"trace", 5, (const uint8_t *)"abc", 3};
  for (int b = 0; b < batches; b++) {
    for (int i = 0; i < per; i++) {
      int64_t off = kw_next_offset(w) + i;
      char *p = v + (size_t)i * (size_t)(value_len + 64);
      int n = snprintf(p, 64, "{\"order\":%lld,\"sku\":\"s%lld\",\"pad\":\"", (long long)off,
                       (long long)(off * 7919 % 1000));
      uint64_t g = (uint64_t)off * 0x9e3779b97f4a7c15u;
      while (n < value_len) p[n++] = (char)('a' + (g = g * 6364136223846793005u + 1) % 26);
      p[n++] = '"';
      p[n++] = '}';
      int kn = snprintf(k[i], sizeof k[i], "c%lld", (long long)(off % 97));
      kl_rec_in x = {1700000000000 + off * 3 - (off % 5), k[i], off % 7 ? kn : -1, p, n,
                     off % 5 ? NULL : &h, off % 5 ? 0 : 1};
      r[i] = x;
    }
    kl_batch_spec spec = {0};
    spec.leader_epoch = 3;
    spec.producer_id = -1;
    spec.producer_epoch = -1;
    spec.base_sequence = -1;
    spec.codec = codecs[b % 5];
    assert_int_equal(kw_append(w, &spec, r, per), 0);
  }
  assert_int_equal(kw_close(w), 0);
  free(r);
  free(v);
  free(k);
  return dir;
}

/* The rows of sql (?1 the path, ?2 threads) rendered, errors included. */
static char *render(sqlite3 *db, const char *sql, const char *dir, int threads) {
  st_buf b = {0};
  st_render(db, st_prep(db, sql, "ti", dir, (int64_t)threads), &b);
  return b.p;
}

static void assert_same_text(const char *what, const char *x, const char *y) {
  char lx[300], ly[300];
  long line = st_first_diff(x, y, lx, ly, sizeof lx);
  if (line) fail_msg("%s: line %ld differs:\n  threads=0: %s\n  threads=1: %s", what, line, lx, ly);
}

/* sql run with threads=0 and threads=1, each on its own connection, cold
** (the first scan walks the files) and warm (the batch facts are known and
** the read-ahead has work): four times the same text.  Returns it. */
static char *same_both_ways(const char *sql, const char *dir) {
  char *want = NULL;
  for (int t = 0; t < 2; t++) {
    sqlite3 *db = st_open();
    for (int run = 0; run < 2; run++) {
      char *got = render(db, sql, dir, t);
      if (!want) {
        want = got;
        continue;
      }
      assert_same_text(sql, want, got);
      free(got);
    }
    st_close(db);
  }
  return want;
}

static const char *const fixture_parts[] = {
    "a-tiny/orders-0", "b-multi-segment/orders-0", "c-gzip/orders-0",
    "d-jitter-nulls-headers/orders-0", "e-live-preallocated/orders-0", "f-legacy-v0/orders-0",
    "f-legacy-v0-gzip/orders-0", "f-legacy-v1/orders-0", "f-legacy-v1-gzip/orders-0",
    "g-transactions/orders-0", "h-index-full-roll/orders-0", "i-log-append-time/orders-0",
    "j-mixed-codecs/orders-0", "broker", "txn-broker"};

/* Every fixture, every column, in both modes of damage and isolation. */
static void test_fixtures_same_rows(void **state) {
  (void)state;
  const char *queries[] = {
      "SELECT " ALL_COLUMNS " FROM kafka_log(?1) WHERE threads = ?2",
      "SELECT " ALL_COLUMNS " FROM kafka_log(?1, 'skip') WHERE threads = ?2",
      "SELECT " ALL_COLUMNS " FROM kafka_log(?1) WHERE isolation = 'read_committed'"
      " AND threads = ?2",
      "SELECT offset, value FROM kafka_log(?1) WHERE threads = ?2 AND offset >= 3"};
  for (size_t i = 0; i < sizeof fixture_parts / sizeof *fixture_parts; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", KL_FIXTURES, fixture_parts[i]);
    for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
      free(same_both_ways(queries[q], path));
    }
  }
}

/* A log of every codec, long enough for the workers to run ahead: whole
** scans, ranges, time windows and a descending scan (which reads on one
** thread) give the same rows. */
static void test_codecs_same_rows(void **state) {
  (void)state;
  char *dir = codec_log("ahead-rows", 400, 25, 400, 256 * 1024);
  const char *queries[] = {
      "SELECT " ALL_COLUMNS " FROM kafka_log(?1) WHERE threads = ?2",
      "SELECT offset, length(value), key FROM kafka_log(?1) WHERE threads = ?2"
      " AND offset BETWEEN 1234 AND 7777",
      "SELECT offset, value FROM kafka_log(?1) WHERE threads = ?2"
      " AND timestamp >= 1700000010000 AND timestamp < 1700000020000",
      "SELECT offset, value FROM kafka_log(?1) WHERE threads = ?2 ORDER BY offset DESC",
      "SELECT count(*), sum(length(value)), max(value), min(key) FROM kafka_log(?1)"
      " WHERE threads = ?2",
      "SELECT offset FROM kafka_log(?1) WHERE threads = ?2 AND instr(value, '\"sku\":\"s7\"') > 0"};
  for (size_t q = 0; q < sizeof queries / sizeof *queries; q++) {
    char *rows = same_both_ways(queries[q], dir);
    if (strlen(rows) < 10 || strstr(rows, "ERROR")) fail_msg("%s: %s", queries[q], rows);
    free(rows);
  }
  t_rmdir(dir);
  free(dir);
}

static int64_t stat_of(sqlite3 *db, const char *name) {
  char sql[160];
  snprintf(sql, sizeof sql, "SELECT json_extract(kafka_log_stats(), '$.%s')", name);
  return st_int(db, sql, NULL);
}

/* The work of one warm scan (the facts learnt by a scan before). */
typedef struct work {
  int64_t decoded, records, decompressed, ahead, crc, reclaimed;
} work;

/* Batches the scans handed to their read-ahead: read ahead (by a worker,
** or by the scan's thread while it waited), or taken back from a worker
** that was not running (core/ahead.h). */
static int64_t handed(sqlite3 *db) {
  return stat_of(db, "batches_ahead") + stat_of(db, "batches_reclaimed");
}

/* The scans handed over every batch they could, want, when none was taken
** back.  A batch taken back holds its slot until its worker is done (a
** busy machine's scheduler decides when), and batches that find no room
** meanwhile the scan opens alone: then fewer, but at least those. */
static void assert_handed(int64_t handed, int64_t reclaimed, int64_t want) {
  if (reclaimed == 0) assert_int_equal(handed, want);
  else assert_true(handed >= reclaimed && handed <= want);
}

static work warm_scan(sqlite3 *db, const char *sql, const char *dir, int threads) {
  st_run(db, sql, "ti", dir, (int64_t)threads);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  st_run(db, sql, "ti", dir, (int64_t)threads);
  work w = {stat_of(db, "batches_decoded"), stat_of(db, "records_decoded"),
            stat_of(db, "bytes_decompressed"), handed(db),
            stat_of(db, "crc_checks"), stat_of(db, "batches_reclaimed")};
  return w;
}

/* The batches a warm scan of dir reading ahead leaves to the workers:
** every one after the scan proved long (KL_AHEAD_AFTER batches holding
** KL_AHEAD_AFTER_BYTES of records, decompressed: cursor.h) but each
** segment's first, opened before its file is queued from. */
static int64_t expected_ahead(const char *dir) {
  sqlite3 *db = st_open();
  sqlite3_stmt *st = st_prep(db, "SELECT segment FROM kafka_segments(?1) ORDER BY segment", "t",
                             dir);
  int64_t n = 0, bytes = 0, ahead = 0;
  kl_buf scratch = {0};
  while (sqlite3_step(st) == SQLITE_ROW) {
    char log[1200];
    snprintf(log, sizeof log, "%s/%020lld.log", dir, (long long)sqlite3_column_int64(st, 0));
    size_t len;
    uint8_t *f = t_read_file(log, &len);
    assert_non_null(f);
    for (size_t pos = 0; pos < len;) {
      kl_batch b = {0};
      kl_records it;
      kl_err e = {0};
      assert_int_equal(kl_batch_parse(f + pos, len - pos, &b, &e), KL_OK);
      assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &e), KL_OK);
      if (n >= KL_AHEAD_AFTER && bytes >= KL_AHEAD_AFTER_BYTES && pos > 0 &&
          b.size >= KL_AHEAD_MIN_BATCH) {
        ahead++;
      }
      n++;
      bytes += it.end - it.p;
      pos += (size_t)b.size;
    }
    free(f);
  }
  kl_buf_free(NULL, &scratch);
  sqlite3_finalize(st);
  st_close(db);
  return ahead;
}

/* A log of about 2 MiB in 5 segments: long enough for a scan to prove
** long. */
static char *long_log(const char *tag) { return codec_log(tag, 300, 20, 400, 512 * 1024); }

/* The counters say the same work was done, by whom: with threads the
** batches come from the workers, all but those before the scan proved
** long and the first of each segment; without, none does. */
static void test_counters(void **state) {
  (void)state;
  char *dir = long_log("ahead-counters");
  const char *sql = "SELECT sum(length(value)) FROM kafka_log(?1) WHERE threads = ?2";
  sqlite3 *db0 = st_open(), *db1 = st_open();
  work a = warm_scan(db0, sql, dir, 0), b = warm_scan(db1, sql, dir, 1);
  assert_int_equal(a.decoded, 300);
  assert_int_equal(b.decoded, a.decoded);
  assert_int_equal(b.records, a.records);
  assert_int_equal(b.decompressed, a.decompressed);
  assert_int_equal(b.crc, a.crc);
  assert_int_equal(a.ahead, 0);
  int64_t segs = st_int(db1, "SELECT count(*) FROM kafka_segments(?1)", "t", dir);
  assert_true(segs >= 3);
  int64_t want = expected_ahead(dir);
  assert_true(want > 100 && want < b.decoded - KL_AHEAD_AFTER - (segs - 1));
  assert_handed(b.ahead, b.reclaimed, want);
  st_close(db0);
  st_close(db1);
  t_rmdir(dir);
  free(dir);
}

/* The workers are the table's: the first long scan starts them, and every
** long scan after it hands its batches to the same ones, parked between
** scans; short windows, lookups and counts claim nothing, so they start no
** worker and hand nothing over, before or after; threads = 0 reads alone.
** (threads = 1 given: the default reads ahead only when a core is idle,
** which a machine running the tests side by side may not have.) */
static void test_workers_kept_per_table(void **state) {
  (void)state;
  char *dir = long_log("ahead-kept");
  int64_t want = expected_ahead(dir);
  const char *scan = "SELECT sum(length(value)) FROM kafka_log(?1) WHERE threads = 1";
  /* About 1,000 records, 50 batches, under KL_AHEAD_AFTER_BYTES. */
  const char *window = "SELECT count(*), sum(length(value)) FROM kafka_log(?1)"
                       " WHERE timestamp >= 1700000003000 AND timestamp < 1700000006000";
  sqlite3 *db = st_open();
  st_run(db, "SELECT count(value) FROM kafka_log(?1) WHERE threads = 0", "t", dir); /* the facts */
  assert_int_equal(stat_of(db, "threads_started"), 0);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  for (int i = 0; i < 20; i++) {
    assert_int_equal(st_int(db, window, "t", dir), 1000);
    assert_int_equal(st_int(db, "SELECT length(value) FROM kafka_log(?1) WHERE offset = ?2", "ti",
                            dir, (int64_t)(i * 271)), 402);
  }
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 6000);
  assert_int_equal(stat_of(db, "threads_started"), 0);
  assert_int_equal(stat_of(db, "batches_ahead"), 0);
  int64_t sum = st_int(db, scan, "t", dir);
  assert_int_equal(stat_of(db, "threads_started"), 1);
  assert_handed(handed(db), stat_of(db, "batches_reclaimed"), want);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(st_int(db, scan, "t", dir), sum);
    assert_int_equal(st_int(db, window, "t", dir), 1000);
  }
  assert_int_equal(stat_of(db, "threads_started"), 1);
  assert_handed(handed(db), stat_of(db, "batches_reclaimed"), 4 * want);
  assert_int_equal(st_int(db, "SELECT sum(length(value)) FROM kafka_log(?1) WHERE threads = 0",
                          "t", dir), sum);
  assert_handed(handed(db), stat_of(db, "batches_reclaimed"), 4 * want);
  /* Another connection's table has its own. */
  sqlite3 *other = st_open();
  st_run(other, scan, "t", dir);
  st_run(other, scan, "t", dir);
  assert_true(handed(other) >= (stat_of(other, "batches_reclaimed") ? 1 : want));
  assert_int_equal(stat_of(other, "threads_started"), 1);
  st_close(other);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* Two scans of one table stepped in turn: the first to prove long claims
** the workers, the other reads alone until they are free; both give the
** rows of one thread. */
static void test_two_scans_one_table(void **state) {
  (void)state;
  char *dir = long_log("ahead-two");
  int64_t want = expected_ahead(dir);
  const char *sql = "SELECT offset, value FROM kafka_log(?1) WHERE threads = ?2";
  sqlite3 *db = st_open();
  st_run(db, sql, "ti", dir, (int64_t)0); /* the facts */
  char *one = render(db, sql, dir, 0);
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  sqlite3_stmt *st[2] = {st_prep(db, sql, "ti", dir, (int64_t)1), st_prep(db, sql, "ti", dir,
                                                                          (int64_t)1)};
  st_buf out[2] = {{0}, {0}};
  int live = 2;
  int rc[2] = {SQLITE_ROW, SQLITE_ROW};
  while (live) {
    for (int k = 0; k < 2; k++) {
      if (rc[k] != SQLITE_ROW) continue;
      if ((rc[k] = sqlite3_step(st[k])) == SQLITE_ROW) {
        st_render_value(&out[k], st[k], 0);
        st_buf_printf(&out[k], "|");
        st_render_value(&out[k], st[k], 1);
        st_buf_printf(&out[k], "\n");
      } else {
        assert_int_equal(rc[k], SQLITE_DONE);
        live--;
      }
    }
  }
  for (int k = 0; k < 2; k++) {
    sqlite3_finalize(st[k]);
    assert_same_text("two scans", one, out[k].p);
    st_buf_free(&out[k]);
  }
  /* The first scan's batches, and at most a few of the second's once the
  ** first ended. */
  int64_t ahead = handed(db), back = stat_of(db, "batches_reclaimed");
  assert_true(ahead >= (back ? back : want) && ahead <= want + KL_AHEAD_SLOTS);
  assert_int_equal(stat_of(db, "threads_started"), 1);
  free(one);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* A lookup, a count and a short LIMIT open a batch or none: with the
** default threads, no worker is started, nothing is read ahead. */
static void test_lookups_read_nothing_ahead(void **state) {
  (void)state;
  char *dir = codec_log("ahead-lookups", 200, 20, 100, 1 << 20);
  sqlite3 *db = st_open();
  st_run(db, "SELECT count(value) FROM kafka_log(?1)", "t", dir); /* the facts */
  st_run(db, "SELECT kafka_log_stats_reset()", NULL);
  char *v = st_text(db, "SELECT value FROM kafka_log(?1) WHERE offset = 777", "t", dir);
  assert_true(v && strncmp(v, "{\"order\":777,", 13) == 0);
  free(v);
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1)", "t", dir), 4000);
  st_run(db, "SELECT value FROM kafka_log(?1) LIMIT 10", "t", dir);
  st_run(db, "SELECT value FROM kafka_log(?1) WHERE offset IN (5, 500, 3000)", "t", dir);
  assert_int_equal(stat_of(db, "batches_ahead"), 0);
  assert_int_equal(stat_of(db, "threads_started"), 0);
  st_close(db);
  t_rmdir(dir);
  free(dir);
}

/* The position and size of the batch holding offset off. */
static void batch_of(sqlite3 *db, const char *part, int64_t off, int64_t *pos, int64_t *size,
                     char *log, size_t logn) {
  sqlite3_stmt *st = st_prep(db,
                             "SELECT position, size, segment FROM kafka_batches(?1)"
                             " WHERE base_offset <= ?2 AND last_offset >= ?2",
                             "ti", part, off);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  *pos = sqlite3_column_int64(st, 0);
  *size = sqlite3_column_int64(st, 1);
  snprintf(log, logn, "%s/%020lld.log", part, (long long)sqlite3_column_int64(st, 2));
  sqlite3_finalize(st);
}

/* A compressed batch whose CRC holds but whose stream is broken, where
** the workers run ahead: the same rows before it, then the same error,
** naming the file and the batch's position, with threads as without; the
** workers met it first and left it to the scan. */
static void test_bad_batch_same_error(void **state) {
  (void)state;
  char *dir = codec_log("ahead-damage", 120, 20, 3000, 64 << 20); /* one segment */
  sqlite3 *db = st_open();
  int64_t pos, size;
  char log[1200];
  batch_of(db, dir, 20 * 84, &pos, &size, log, sizeof log); /* batch 84: zstd */
  assert_int_equal(st_int(db, "SELECT count(*) FROM kafka_log(?1) WHERE offset = 1680 AND"
                              " compression = 'zstd'", "t", dir), 1);
  st_close(db);
  /* The zstd frame's magic, the CRC made right again. */
  t_flip(log, pos + KL_V2_HEADER, 0x5a);
  t_fix_crc(log, pos, size);
  const char *sql = "SELECT offset, value FROM kafka_log(?1) WHERE threads = ?2";
  char *want = NULL;
  for (int t = 0; t < 2; t++) {
    sqlite3 *d = st_open();
    /* The batches before it, read: their facts, and the bad batch's (its
    ** header and CRC hold), are known, so the workers reach it. */
    st_run(d, "SELECT offset, value FROM kafka_log(?1) WHERE offset < 1680", "t", dir);
    st_run(d, "SELECT kafka_log_stats_reset()", NULL);
    char *got = render(d, sql, dir, t);
    if (t) assert_true(handed(d) > 50);
    else assert_int_equal(stat_of(d, "batches_ahead"), 0);
    st_close(d);
    if (!want) {
      want = got;
      continue;
    }
    assert_same_text("bad batch", want, got);
    free(got);
  }
  /* 1680 rows, then the error, naming the file and the position. */
  long rows = 0;
  for (const char *p = want; (p = strchr(p, '\n')) != NULL; p++) rows++;
  assert_int_equal(rows, 1680 + 1);
  char where[1300];
  snprintf(where, sizeof where, "%020lld.log: position %lld: ", 0LL, (long long)pos);
  if (!strstr(want, where)) fail_msg("no \"%s\" in the error: %s", where, strstr(want, "ERROR"));
  free(want);
  t_rmdir(dir);
  free(dir);
}

/* Batches of 2 MiB of records: the workers hold a bounded number of them
** (the budget, core/ahead.h), not every slot's worth. */
static void test_memory_bounded(void **state) {
  (void)state;
  char *dir = t_mkdtemp("ahead-memory");
  assert_non_null(dir);
  kw_options o = {64 << 20, 4096, 0, KL_CODEC_ZSTD};
  kw_writer *w = kw_open(dir, &o);
  assert_non_null(w);
  enum { PER = 64, VLEN = 32 << 10 };
  static char v[VLEN];
  memset(v, 'q', sizeof v);
  kl_rec_in r[PER];
  for (int i = 0; i < PER; i++) {
    kl_rec_in x = {1700000000000 + i, NULL, -1, v, VLEN, NULL, 0};
    r[i] = x;
  }
  kl_batch_spec spec = {0};
  spec.leader_epoch = 0;
  spec.producer_id = -1;
  spec.producer_epoch = -1;
  spec.base_sequence = -1;
  spec.codec = KL_CODEC_ZSTD;
  for (int b = 0; b < 40; b++) assert_int_equal(kw_append(w, &spec, r, PER), 0);
  assert_int_equal(kw_close(w), 0);
  sqlite3_int64 peak[2];
  for (int t = 0; t < 2; t++) {
    sqlite3 *db = st_open();
    const char *sql = "SELECT sum(length(value)) FROM kafka_log(?1) WHERE threads = ?2";
    st_run(db, sql, "ti", dir, (int64_t)t); /* the facts */
    sqlite3_int64 base = sqlite3_memory_used();
    sqlite3_memory_highwater(1);
    assert_int_equal(st_int(db, sql, "ti", dir, (int64_t)t), 40LL * PER * VLEN);
    peak[t] = sqlite3_memory_highwater(0) - base;
    if (t) assert_true(handed(db) > 0);
    st_close(db);
  }
  print_message("  peak memory of a scan: %lld KiB one thread, %lld KiB with a worker\n",
                (long long)peak[0] / 1024, (long long)peak[1] / 1024);
  /* At most the budget of batches done and not taken, the one taken and
  ** the one being decompressed, and the slots' retained buffers: well
  ** below all eight slots full (16 MiB). */
  assert_true(peak[1] - peak[0] < ((sqlite3_int64)KL_AHEAD_BUDGET * 2 + (6 << 20)));
  t_rmdir(dir);
  free(dir);
}

/* threads takes 0 to 16; CREATE keeps it; the hidden column says it. */
static void test_threads_option(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/c-gzip/orders-0", KL_FIXTURES);
  sqlite3 *db = st_open();
  /* One by default: kept per table, it costs short scans nothing. */
  assert_int_equal(st_int(db, "SELECT threads FROM kafka_log(?1) LIMIT 1", "t", path), 1);
  assert_int_equal(st_int(db, "SELECT threads FROM kafka_log(?1) WHERE threads = 2 LIMIT 1", "t",
                          path), 2);
  sqlite3_stmt *st = st_prep(db, "SELECT count(*) FROM kafka_log(?1) WHERE threads = 17", "t",
                             path);
  assert_int_equal(sqlite3_step(st), SQLITE_ERROR);
  assert_string_equal(sqlite3_errmsg(db),
                      "kafka_log: threads=17 is not valid: threads takes an integer from 0 to 16");
  sqlite3_finalize(st);
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log(%Q, threads=0)", path);
  st_exec(db, sql);
  sqlite3_free(sql);
  assert_int_equal(st_int(db, "SELECT v FROM t_config WHERE k = 'threads'", NULL), 0);
  assert_int_equal(st_int(db, "SELECT threads FROM t LIMIT 1", NULL), 0);
  char *m = st_expect_rc(db, "CREATE VIRTUAL TABLE u USING kafka_log('/x', threads=-1)",
                         SQLITE_ERROR);
  assert_string_equal(m, "kafka_log: threads='-1' is not valid: threads takes an integer from 0 "
                         "to 16");
  free(m);
  st_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixtures_same_rows),
      cmocka_unit_test(test_codecs_same_rows),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_workers_kept_per_table),
      cmocka_unit_test(test_two_scans_one_table),
      cmocka_unit_test(test_lookups_read_nothing_ahead),
      cmocka_unit_test(test_bad_batch_same_error),
      cmocka_unit_test(test_memory_bounded),
      cmocka_unit_test(test_threads_option),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
