/*
** queries.c - everyday queries on a Kafka partition: kafka_log against a
** native SQLite table holding the same records.
**
**   queries [--records N] [--seg-records N] [--lookups N] [--segments-few N]
**           [--segments-many N] [--segment-bytes B] [--batch-bytes B]
**           [--min-time S] [--data DIR] [--out DIR] [--tag NAME]
**           [--only main|segments|large] [--quick] [--keep] [--plans]
**
** Data (kwriter: one v2 batch per append, indexes as Kafka's
** LogSegment.append writes them, index interval 4096):
**   main      --records (300,000) JSON order events, values 150-250 bytes
**             ({"order_id":..,"customer":..,"sku":..,"qty":..,"price":..,
**             "status":..,...}), key = customer id; timestamps spread evenly
**             over 7 days with +-3 s of producer jitter (not monotonic inside
**             or across batches); producer batches closed at 16 KiB of
**             records or 100 records; the codec rotates none, lz4, zstd batch
**             by batch; 4 MiB segments.
**   segments  the first --seg-records (200,000) of the same records, written
**             twice: as ~--segments-few (12) and as ~--segments-many (1,500)
**             segments (segment bytes found by writing and adjusting).
**   large     the same --seg-records records in batches of 500, all zstd, and
**             again uncompressed (same batches).
** Each log has its native twin in a file database:
**   CREATE TABLE t(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB, value BLOB);
**   CREATE INDEX t_ts ON t(timestamp);
** Both sides are warmed by one full read.  The kafka_log side is the SQL
** below with the table-valued form kafka_log('<dir>') (D); the native side is
** the same SQL on t (without the kafka_log-only max_skew_ms term).  Prepared
** statements through the C API; ?1 is drawn at random for every execution.
**
**   1  window       count(*), sum(length(value)) WHERE timestamp >= ?1 AND
**                   timestamp < ?1 + 3600000 (a random hour): first run on a
**                   fresh connection (open + prepare + run, both sides) and
**                   repeated on one connection
**   2  window+skew  the same AND max_skew_ms = 60000 (n/a while the column
**                   does not exist), fresh and repeated
**   3  count(*)   4  min(offset)   5  min(offset) WHERE timestamp >= ?1
**   6  max(timestamp)   7  count(*), sum(length(value))
**   3b, 7b the same on an uncompressed copy of the main log (kwriter, same
**      batches); 3c, 7c on a do-nothing virtual table (floorvtab.c: the
**      native rows held in memory, no decoding), the scan floor; the four
**      sides timed together and printed in ns per row
**   8  sum(timestamp % 1000)   9  timestamp/3600000 AS h, count(*) GROUP BY h
**   10 offset, timestamp, value WHERE timestamp < ?1 ORDER BY offset DESC LIMIT 10
**   11 sum(length(r.value)) FROM k JOIN kafka_log(D) r ON r.offset = k.x:
**      --lookups (50,000) random offsets per query from a temp table k
**      (k.id BETWEEN ?1 AND ?1 + lookups - 1), time per lookup; 11b-d on
**      logs written by INSERT; 11e with cache_bytes = 64 MiB (the main log's
**      compressed batches all kept decompressed), 11f with mmap = 'on' too,
**      11g the INSERT log with mmap = 'on' (the .log files are made
**      immutable for them, chattr +i, which needs CAP_LINUX_IMMUTABLE, and
**      writable again after; without it they are read, and the note says so);
**      11h the join on the do-nothing table (offset = ? by binary search of
**      the rows in memory), timed with 11-11d: the floor of a lookup through
**      SQLite's virtual table interface, in the floor and native columns
**   12 offset WHERE timestamp >= ?1 LIMIT 1 on the few- and the many-segment
**      logs (repeated; the ratio many/few), then the first such query on a
**      fresh connection; kafka_log_stats() of one seek on the many-segment log;
**   12b the join of figure 11 on the few- and the many-segment logs (the
**      ratio many/few)
**   13 on 500-record batches, zstd and none: full decode (count(*),
**      sum(length(value)), sum(length(key)), sum(timestamp)), random lookups
**      by offset and by timestamp (offset, timestamp, key, value)
**
** Before timing, each figure's answers are compared between the sides for a
** few parameters (a different answer is reported as WRONG, still timed).  A
** kafka_log statement that does not prepare or run is reported as n/a.  A
** figure is the median of 3 runs, each repeating the operation for at least
** --min-time seconds (CLOCK_MONOTONIC), the sides alternating within each
** run.  Ratio = native time / kafka_log time (>1: kafka_log faster).
** Output: a table on stdout, OUT/<tag>.json and OUT/<tag>.dat for queries.gp.
*/
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "batch.h"
#include "codec.h"
#include "floorvtab.h"
#include "kwriter.h"

#define BENCH_NAME "queries"
#include "benchutil.h"


typedef struct opts {
  long records;             /* main log */
  long seg_records;         /* segment and large-batch logs */
  long lookups;             /* offsets per join query (figure 11) */
  int segs_few, segs_many;  /* figure 12 targets */
  long segment_bytes;       /* main log */
  int batch_bytes;          /* producer batch size */
  double min_time;
  const char *data, *out, *tag, *only;
  int keep, plans;
} opts;

/* A parameter of a timed query, drawn in [lo, hi]. */
static int64_t rnd_in(int64_t lo, int64_t hi) { /* [lo, hi] */
  return hi > lo ? lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1)) : lo;
}

/* Record contents: a generator of their own, seeded by the offset, so that
** every log and table holds the same records whatever its batching. */
static uint64_t rec_rnd(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* ---- the records: order events ---- */

#define TS0 INT64_C(1732924800000) /* 2024-11-30 00:00 UTC */
#define SPAN_MS INT64_C(604800000) /* 7 days */
#define JITTER_MS 3000
#define HOUR_MS INT64_C(3600000)
#define VALUE_MAX 320

typedef struct gen {
  int64_t step_ms;          /* SPAN_MS / main records */
} gen;

typedef struct rec {
  int64_t ts;
  char key[16];
  int key_len;
  char value[VALUE_MAX];
  int value_len;
} rec;

static const char *const g_status[] = {"created", "paid", "packed", "shipped", "delivered",
                                       "cancelled", "refunded"};
static const char *const g_channel[] = {"web", "ios", "android", "store", "partner"};
static const char *const g_currency[] = {"EUR", "USD", "GBP", "CHF"};
static const char *const g_words[] = {
    "leave", "at",      "door",    "gift",  "wrap",    "please", "call",    "before",
    "fragile", "express", "weekend", "no",    "plastic", "back",   "office",  "reception",
    "ring",  "twice",   "side",    "gate",  "invoice", "to",     "company", "address"};
#define NELEM(a) (sizeof(a) / sizeof *(a))

/* Timestamps step evenly over 7 days with +-3 s of jitter: several producers
** whose clocks and linger differ, so they are not monotonic. */
static void make_record(const gen *g, int64_t off, rec *r) {
  uint64_t s = (uint64_t)off * UINT64_C(0x2545f4914f6cdd1d) + 12345;
  r->ts = TS0 + off * g->step_ms + (int64_t)(rec_rnd(&s) % (2 * JITTER_MS + 1)) - JITTER_MS;
  if (r->ts < 0) r->ts = 0;
  unsigned cust = (unsigned)(rec_rnd(&s) % 20000);
  r->key_len = snprintf(r->key, sizeof r->key, "cust-%06u", cust);
  time_t secs = (time_t)(r->ts / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char when[64];
  snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(r->ts % 1000));
  unsigned sku = (unsigned)(rec_rnd(&s) % 90000) + 10000;
  unsigned qty = (unsigned)(rec_rnd(&s) % 5) + 1;
  unsigned cents = (unsigned)(rec_rnd(&s) % 50000) + 99;
  int n = snprintf(r->value, VALUE_MAX,
                   "{\"order_id\":%" PRId64 ",\"customer\":\"%s\",\"sku\":\"SKU-%u\",\"qty\":%u,"
                   "\"price\":%u.%02u,\"currency\":\"%s\",\"status\":\"%s\",\"channel\":\"%s\","
                   "\"created_at\":\"%s\",\"note\":\"",
                   INT64_C(70000000) + off, r->key, sku, qty, cents / 100, cents % 100,
                   g_currency[rec_rnd(&s) % NELEM(g_currency)],
                   g_status[rec_rnd(&s) % NELEM(g_status)],
                   g_channel[rec_rnd(&s) % NELEM(g_channel)], when);
  /* A free-text note brings the value to 150-250 bytes. */
  int target = 150 + (int)(rec_rnd(&s) % 101);
  int first = 1;
  while (n < target - 2) {
    const char *w = g_words[rec_rnd(&s) % NELEM(g_words)];
    int m = snprintf(r->value + n, (size_t)(VALUE_MAX - n), "%s%s", first ? "" : " ", w);
    if (n + m > target - 2) break;
    n += m;
    first = 0;
  }
  n += snprintf(r->value + n, (size_t)(VALUE_MAX - n), "\"}");
  r->value_len = n;
}

/* ---- writing the logs and tables ---- */

typedef struct dset {
  char dir[4200];
  long records;
  int segments;
  long batches;
  int64_t bytes;
  long segment_bytes;
  double write_s;
} dset;

/* Write records [0, n) into the new directory dir: a batch closes at
** batch_bytes of records or per_batch records; batch k uses codecs[k %
** ncodecs]. */
static void write_log(dset *ds, const gen *g, const char *dir, long n, int batch_bytes,
                      int per_batch, long segment_bytes, const int *codecs, int ncodecs) {
  memset(ds, 0, sizeof *ds);
  snprintf(ds->dir, sizeof ds->dir, "%s", dir);
  ds->records = n;
  ds->segment_bytes = segment_bytes;
  rm_rf(dir);
  if (mkdir(dir, 0755) != 0) die("mkdir %s: %s", dir, strerror(errno));
  kw_options wo = {.segment_bytes = segment_bytes, .index_interval = 4096, .base_offset = 0,
                   .codec = KL_CODEC_NONE};
  kw_writer *w = kw_open(dir, &wo);
  if (!w) die("kw_open %s", dir);
  rec *rs = calloc((size_t)per_batch, sizeof *rs);
  kl_rec_in *in = calloc((size_t)per_batch, sizeof *in);
  if (!rs || !in) die("out of memory");
  double t0 = now();
  long off = 0;
  while (off < n) {
    int m = 0, bytes = 0;
    while (off + m < n && m < per_batch && bytes < batch_bytes) {
      make_record(g, off + m, &rs[m]);
      in[m] = (kl_rec_in){rs[m].ts, rs[m].key, rs[m].key_len, rs[m].value, rs[m].value_len,
                          NULL, 0};
      bytes += rs[m].key_len + rs[m].value_len + 20;
      m++;
    }
    kl_batch_spec spec = {.leader_epoch = 0,
                          .codec = codecs[ds->batches % ncodecs],
                          .producer_id = -1,
                          .producer_epoch = -1,
                          .base_sequence = -1};
    if (kw_append(w, &spec, in, m)) die("kw_append %s", dir);
    ds->batches++;
    off += m;
  }
  if (kw_close(w)) die("kw_close %s", dir);
  ds->write_s = now() - t0;
  free(rs);
  free(in);
  ds->bytes = dir_bytes(dir, &ds->segments);
}

/* The same records, rewritten until the segment count is within 10% of
** target (segments roll before a batch that would not fit, so the count
** is not simply bytes / segment_bytes). */
static void write_log_segments(dset *ds, const gen *g, const char *dir, long n, int batch_bytes,
                               int per_batch, int64_t est_bytes, int target, const int *codecs,
                               int ncodecs) {
  long seg = (long)(est_bytes / target);
  for (int attempt = 0; attempt < 6; attempt++) {
    if (seg < 2 * batch_bytes / 3) seg = 2 * batch_bytes / 3;
    write_log(ds, g, dir, n, batch_bytes, per_batch, seg, codecs, ncodecs);
    if (abs(ds->segments - target) * 10 <= target) return;
    seg = (long)((double)seg * ds->segments / target);
  }
}

/* Records [0, n) into a new native table. */
static double load_native(const gen *g, const char *path, long n, int64_t *bytes) {
  unlink(path);
  sqlite3 *db;
  sqlite3_stmt *ins;
  double t0 = now();
  if (sqlite3_open(path, &db) != SQLITE_OK) die("open %s", path);
  exec_or_die(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
               "CREATE TABLE t(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB,"
               " value BLOB);");
  if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1,?2,?3,?4)", -1, &ins, NULL)) die("prep");
  rec r;
  for (long i = 0; i < n; i++) {
    make_record(g, i, &r);
    sqlite3_bind_int64(ins, 1, i);
    sqlite3_bind_int64(ins, 2, r.ts);
    sqlite3_bind_blob(ins, 3, r.key, r.key_len, SQLITE_STATIC);
    sqlite3_bind_blob(ins, 4, r.value, r.value_len, SQLITE_STATIC);
    if (sqlite3_step(ins) != SQLITE_DONE) die("insert: %s", sqlite3_errmsg(db));
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  exec_or_die(db, "CREATE INDEX t_ts ON t(timestamp); COMMIT;");
  sqlite3_close(db);
  struct stat st;
  *bytes = stat(path, &st) == 0 ? st.st_size : 0;
  return now() - t0;
}

/* The native table's records written again through INSERT ... SELECT into a
** new log at dir, by a named table with the write options wopt (""
** for the defaults): the log the project writes itself. */
static double write_by_insert(const char *native_db, const char *dir, const char *wopt,
                              dset *ds) {
  char *cmd = sqlite3_mprintf("rm -rf '%s'", dir);
  if (!cmd || system(cmd) != 0) die("rm %s", dir);
  sqlite3_free(cmd);
  double t0 = now();
  sqlite3 *db = open_kafka();
  char *sql = sqlite3_mprintf("ATTACH %Q AS src; CREATE VIRTUAL TABLE ins USING kafka_log(%Q, "
                              "mode='create'%s%s); INSERT INTO ins(timestamp, key, value) SELECT "
                              "timestamp, key, value FROM src.t ORDER BY offset;",
                              native_db, dir, *wopt ? ", " : "", wopt);
  exec_or_die(db, sql);
  sqlite3_free(sql);
  sqlite3_stmt *st = NULL;
  char *q = sqlite3_mprintf("SELECT count(*), sum(size), count(DISTINCT segment) FROM "
                            "kafka_batches(%Q)", dir);
  if (!q || sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW) {
    die("batches of %s: %s", dir, sqlite3_errmsg(db));
  }
  sqlite3_free(q);
  ds->batches = (long)sqlite3_column_int64(st, 0);
  ds->bytes = sqlite3_column_int64(st, 1);
  ds->segments = sqlite3_column_int(st, 2);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return now() - t0;
}

/* ---- statements ---- */

/* sql with @T replaced by tab and @K by kx (kafka_log-only terms, NULL: none). */
static void expand(char *out, size_t n, const char *sql, const char *tab, const char *kx) {
  size_t k = 0;
  for (const char *p = sql; *p && k + 1 < n;) {
    const char *rep = NULL;
    if (p[0] == '@' && p[1] == 'T') rep = tab;
    else if (p[0] == '@' && p[1] == 'K') rep = kx ? kx : "";
    if (rep) {
      size_t m = strlen(rep);
      if (k + m >= n) die("statement too long");
      memcpy(out + k, rep, m);
      k += m;
      p += 2;
    } else {
      out[k++] = *p++;
    }
  }
  out[k] = 0;
}

/* A side of a measurement: a log through kafka_log or a native table. */
typedef struct side {
  const char *name;
  int kafka;                /* kafka_log side */
  const char *path;         /* partition directory or database file */
  sqlite3 *db;              /* its connection (repeated mode) */
  char sql[1024];           /* the statement, expanded */
  sqlite3_stmt *st;         /* prepared (repeated mode) */
  int fresh;                /* every execution opens a connection */
  int64_t lo, hi;           /* ?1 drawn from [lo, hi]; lo > hi: no parameter */
  double per;               /* units (lookups, rows) per execution */
  int ok;                   /* prepared and ran: measure it */
  char err[256];
} side;

/* Prepare s->sql on s->db (or a scratch connection); 0 when it prepares. */
static int side_prepare(side *s, sqlite3 *db, sqlite3_stmt **st) {
  if (sqlite3_prepare_v2(db, s->sql, -1, st, NULL) != SQLITE_OK) {
    snprintf(s->err, sizeof s->err, "%s", sqlite3_errmsg(db));
    *st = NULL;
    return -1;
  }
  return 0;
}

/* Set up side s for the statement template tmpl (kx: kafka_log-only terms).
** Fresh sides connect on every execution; others keep s->db. */
static void side_init(side *s, const char *name, int kafka, const char *path, sqlite3 *db,
                      const char *tmpl, const char *kx, int fresh, int64_t lo, int64_t hi,
                      double per) {
  memset(s, 0, sizeof *s);
  s->name = name;
  s->kafka = kafka;
  s->path = path;
  s->db = db;
  s->fresh = fresh;
  s->lo = lo;
  s->hi = hi;
  s->per = per;
  char tab[4400];
  if (kafka) {
    /* kafka_log('<dir>'), quotes doubled */
    size_t k = 0;
    k += (size_t)snprintf(tab, sizeof tab, "kafka_log('");
    for (const char *p = path; *p && k + 4 < sizeof tab; p++) {
      if (*p == '\'') tab[k++] = '\'';
      tab[k++] = *p;
    }
    snprintf(tab + k, sizeof tab - k, "')");
  } else {
    snprintf(tab, sizeof tab, "t");
  }
  expand(s->sql, sizeof s->sql, tmpl, tab, kafka ? kx : "");
  sqlite3 *pdb = fresh ? (kafka ? open_kafka() : open_native(path)) : db;
  sqlite3_stmt *st;
  s->ok = side_prepare(s, pdb, &st) == 0;
  if (fresh) {
    sqlite3_finalize(st);
    sqlite3_close(pdb);
  } else {
    s->st = st;
  }
}

static void side_done(side *s) {
  sqlite3_finalize(s->st);
  s->st = NULL;
}

static volatile int64_t g_sink;

/* FNV-1a digest of a statement's rows. */
typedef struct digest {
  uint64_t h;
  long rows;
  char first[160];          /* first row, for messages */
} digest;

static void digest_row(digest *d, sqlite3_stmt *st) {
  int nc = sqlite3_column_count(st);
  char *f = d->first;
  size_t fl = 0;
  for (int i = 0; i < nc; i++) {
    int t = sqlite3_column_type(st, i);
    d->h = (d->h ^ (uint64_t)t) * UINT64_C(0x100000001b3);
    if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) {
      int64_t v = sqlite3_column_int64(st, i);
      for (int b = 0; b < 8; b++) d->h = (d->h ^ (uint8_t)(v >> (8 * b))) * UINT64_C(0x100000001b3);
      if (!d->rows && fl < sizeof d->first - 24) {
        fl += (size_t)snprintf(f + fl, sizeof d->first - fl, "%s%" PRId64, i ? "|" : "", v);
      }
    } else if (t != SQLITE_NULL) {
      const uint8_t *p = sqlite3_column_blob(st, i);
      int n = sqlite3_column_bytes(st, i);
      for (int b = 0; b < n; b++) d->h = (d->h ^ p[b]) * UINT64_C(0x100000001b3);
      if (!d->rows && fl < sizeof d->first - 24) {
        fl += (size_t)snprintf(f + fl, sizeof d->first - fl, "%s<%d bytes>", i ? "|" : "", n);
      }
    }
  }
  d->rows++;
}

/* Run st with ?1 = p (when the side has a parameter) into dg; 0 on success. */
static int run_digest(side *s, sqlite3 *db, sqlite3_stmt *st, int64_t p, digest *dg) {
  memset(dg, 0, sizeof *dg);
  dg->h = UINT64_C(0xcbf29ce484222325);
  if (s->lo <= s->hi) sqlite3_bind_int64(st, 1, p);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) digest_row(dg, st);
  if (rc != SQLITE_DONE) {
    snprintf(s->err, sizeof s->err, "%s", sqlite3_errmsg(db));
    sqlite3_reset(st);
    return -1;
  }
  sqlite3_reset(st);
  return 0;
}

/* One execution with ?1 = p (when the side has a parameter); returns the
** units it did. */
static double run_at(side *s, int64_t p) {
  sqlite3 *db = s->db;
  sqlite3_stmt *st = s->st;
  if (s->fresh) {
    db = s->kafka ? open_kafka() : open_native(s->path);
    if (sqlite3_prepare_v2(db, s->sql, -1, &st, NULL)) die("%s: %s", s->name, sqlite3_errmsg(db));
  }
  if (s->lo <= s->hi) sqlite3_bind_int64(st, 1, p);
  int rc;
  int64_t acc = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int nc = sqlite3_column_count(st);
    for (int i = 0; i < nc; i++) {
      if (sqlite3_column_type(st, i) == SQLITE_BLOB) acc += sqlite3_column_bytes(st, i);
      else acc += sqlite3_column_int64(st, i);
    }
  }
  if (rc != SQLITE_DONE) die("%s: %s\n  %s", s->name, sqlite3_errmsg(db), s->sql);
  g_sink += acc;
  if (s->fresh) {
    sqlite3_finalize(st);
    sqlite3_close(db);
  } else {
    sqlite3_reset(st);
  }
  return s->per;
}

/* The timed operation: ?1 drawn at random. */
static double run_once(side *s) { return run_at(s, rnd_in(s->lo, s->hi)); }

/* Bytes decompressed and batches decoded per lookup by one run of s. */
static void lookup_work(side *s, double *bytes, double *batches) {
  exec_or_die(s->db, "SELECT kafka_log_stats_reset()");
  run_once(s);
  sqlite3_stmt *st;
  *bytes = *batches = -1;
  if (sqlite3_prepare_v2(s->db, "SELECT json_extract(kafka_log_stats(), '$.bytes_decompressed'),"
                         " json_extract(kafka_log_stats(), '$.batches_decoded')", -1, &st,
                         NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    *bytes = sqlite3_column_double(st, 0) / s->per;
    *batches = sqlite3_column_double(st, 1) / s->per;
  }
  sqlite3_finalize(st);
}

#define MAX_SIDES 6

/* Seconds per unit of each side that is ok (others: -1): median of 3 runs
** of at least min_time, the sides alternating within each run. */
static void measure(side *s[], int n, double min_time, double out[]) {
  double v[MAX_SIDES][3];
  for (int i = 0; i < n; i++) {
    if (s[i]->ok) run_once(s[i]); /* warm-up */
  }
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < n; i++) {
      v[i][r] = -1;
      if (!s[i]->ok) continue;
      double units = 0, t0 = now(), t;
      do units += run_once(s[i]);
      while ((t = now()) - t0 < min_time);
      v[i][r] = (t - t0) / units;
    }
  }
  for (int i = 0; i < n; i++) {
    qsort(v[i], 3, sizeof v[i][0], cmp_doubles);
    out[i] = s[i]->ok ? v[i][1] : -1;
  }
}

/* EXPLAIN QUERY PLAN of a side's statement, details joined by " | ". */
static void plan_of(side *s, char *out, size_t n) {
  out[0] = 0;
  if (!s->ok) return;
  sqlite3 *db = s->fresh ? (s->kafka ? open_kafka() : open_native(s->path)) : s->db;
  char q[1100];
  snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", s->sql);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
    size_t k = 0;
    while (sqlite3_step(st) == SQLITE_ROW && k + 4 < n) {
      k += (size_t)snprintf(out + k, n - k, "%s%s", k ? " | " : "",
                            (const char *)sqlite3_column_text(st, 3));
    }
  }
  sqlite3_finalize(st);
  if (s->fresh) sqlite3_close(db);
}

/* ---- figures ---- */

enum { G_NONE, G_RATIO_GE, G_RATIO_LE, G_KAFKA_LT };

typedef struct figure {
  char id[32];
  char label[96];
  char sql[600];            /* the kafka_log statement, D for the directory */
  const char *unit;         /* what one time is for: query, lookup, row, seek */
  double k, n;              /* seconds per unit, -1: n/a */
  const char *k_name, *n_name; /* what the two columns hold when not the usual */
  int goal_kind;
  double goal;
  int correct;              /* 1 same answers, 0 different, -1 not compared */
  int chart;
  char note[600];
  char plan_k[600], plan_n[600];
} figure;

#define MAX_FIG 40
static figure g_fig[MAX_FIG];
static int g_nfig;

static double fig_ratio(const figure *f) { return f->k > 0 && f->n > 0 ? f->n / f->k : -1; }

static figure *add_fig(const char *id, const char *label, const char *tmpl, const char *kx,
                       const char *unit, double k, double n, int goal_kind, double goal) {
  if (g_nfig == MAX_FIG) die("too many figures");
  figure *f = &g_fig[g_nfig++];
  memset(f, 0, sizeof *f);
  snprintf(f->id, sizeof f->id, "%s", id);
  snprintf(f->label, sizeof f->label, "%s", label);
  if (tmpl) expand(f->sql, sizeof f->sql, tmpl, "kafka_log(D)", kx ? kx : "");
  f->unit = unit;
  f->k = k;
  f->n = n;
  f->goal_kind = goal_kind;
  f->goal = goal;
  f->correct = -1;
  f->chart = goal_kind != G_RATIO_LE && goal_kind != G_KAFKA_LT;
  return f;
}

/* "ok", "MISS", "n/a", "WRONG" or "" (no goal). */
static const char *verdict(const figure *f) {
  if (f->k < 0) return "n/a";
  if (f->correct == 0) return "WRONG";
  double r = fig_ratio(f);
  switch (f->goal_kind) {
  case G_RATIO_GE: return r >= f->goal ? "ok" : "MISS";
  case G_RATIO_LE: return r >= 0 && f->k / f->n <= f->goal ? "ok" : "MISS";
  case G_KAFKA_LT: return f->k < f->goal ? "ok" : "MISS";
  default: return "";
  }
}

static void goal_text(const figure *f, char *b, size_t n) {
  switch (f->goal_kind) {
  case G_RATIO_GE: snprintf(b, n, ">= %g", f->goal); break;
  case G_RATIO_LE: snprintf(b, n, "<= %g", f->goal); break;
  case G_KAFKA_LT: snprintf(b, n, "< %g ms", f->goal * 1e3); break;
  default: snprintf(b, n, "-"); break;
  }
}

static void fmt_time(char *b, size_t n, double s) {
  if (s < 0) snprintf(b, n, "n/a");
  else if (s < 1e-6) snprintf(b, n, "%.1f ns", s * 1e9);
  else if (s < 1e-3) snprintf(b, n, "%.2f us", s * 1e6);
  else if (s < 1) snprintf(b, n, "%.2f ms", s * 1e3);
  else snprintf(b, n, "%.2f s", s);
}

static void fmt_rate(char *b, size_t n, double s) {
  double r = s > 0 ? 1 / s : 0;
  if (s <= 0) snprintf(b, n, "n/a");
  else if (r >= 1e6) snprintf(b, n, "%.2fM", r / 1e6);
  else if (r >= 1e3) snprintf(b, n, "%.1fk", r / 1e3);
  else snprintf(b, n, "%.1f", r);
}

/* Compare the sides' answers for reps random parameters (cmp: the native
** statement to compare with when it is not the timed one).  Returns 1 when
** they agree, 0 when not (note says how), -1 when the kafka_log side fails
** (then it is not measured). */
static int compare(side *k, side *nat, const char *cmp_tmpl, int reps, char *note, size_t nn) {
  if (!k->ok) return -1;
  sqlite3 *kdb = k->fresh ? open_kafka() : k->db;
  sqlite3 *ndb = nat->fresh ? open_native(nat->path) : nat->db;
  sqlite3_stmt *ks = NULL, *ns = NULL;
  char nsql[1024];
  if (cmp_tmpl) expand(nsql, sizeof nsql, cmp_tmpl, "t", "");
  else snprintf(nsql, sizeof nsql, "%s", nat->sql);
  int res = 1;
  if (side_prepare(k, kdb, &ks)) res = -1;
  else if (sqlite3_prepare_v2(ndb, nsql, -1, &ns, NULL)) die("prepare %s: %s", nsql,
                                                              sqlite3_errmsg(ndb));
  for (int r = 0; r < reps && res == 1; r++) {
    int64_t p = rnd_in(k->lo, k->hi);
    if (r == 1 && k->lo <= k->hi) p = k->lo;
    if (r == 2 && k->lo <= k->hi) p = k->hi;
    digest a, b;
    if (run_digest(k, kdb, ks, p, &a)) {
      res = -1;
      break;
    }
    if (run_digest(nat, ndb, ns, p, &b)) die("native: %s", nat->err);
    if (a.h != b.h || a.rows != b.rows) {
      snprintf(note, nn, "different answers for ?1=%" PRId64 ": kafka_log %ld rows [%s], native "
               "%ld rows [%s]", p, a.rows, a.first, b.rows, b.first);
      res = 0;
    }
  }
  if (res == -1) {
    snprintf(note, nn, "kafka_log: %s", k->err);
    k->ok = 0;
  }
  sqlite3_finalize(ks);
  sqlite3_finalize(ns);
  if (k->fresh) sqlite3_close(kdb);
  if (nat->fresh) sqlite3_close(ndb);
  return res;
}

/* One figure: kafka_log statement (kx: its extra terms) against the native
** one, compared, planned and timed. */
typedef struct qspec {
  const char *id, *label, *tmpl, *kx, *cmp; /* cmp: native statement for checking, or NULL */
  const char *unit;
  int fresh;
  int64_t lo, hi;
  double per;
  int goal_kind;
  double goal;
} qspec;

typedef struct ctx {
  const opts *o;
  const char *kdir, *ndb;
  sqlite3 *kdb, *ndbh;
} ctx;

static figure *run_pair(ctx *c, const qspec *q) {
  side k, n;
  side_init(&k, "kafka_log", 1, c->kdir, c->kdb, q->tmpl, q->kx, q->fresh, q->lo, q->hi, q->per);
  side_init(&n, "native", 0, c->ndb, c->ndbh, q->tmpl, NULL, q->fresh, q->lo, q->hi, q->per);
  if (!n.ok) die("native statement does not prepare: %s\n  %s", n.err, n.sql);
  figure *f = add_fig(q->id, q->label, q->tmpl, q->kx, q->unit, -1, -1, q->goal_kind, q->goal);
  if (!k.ok) snprintf(f->note, sizeof f->note, "kafka_log: %s", k.err);
  f->correct = compare(&k, &n, q->cmp, 3, f->note, sizeof f->note);
  plan_of(&k, f->plan_k, sizeof f->plan_k);
  plan_of(&n, f->plan_n, sizeof f->plan_n);
  side *s[2] = {&k, &n};
  double t[2];
  measure(s, 2, c->o->min_time, t);
  f->k = t[0];
  f->n = t[1];
  side_done(&k);
  side_done(&n);
  printf("  measured %-14s %s\n", q->id, f->k < 0 ? "(kafka_log n/a)" : "");
  fflush(stdout);
  return f;
}

/* Warm the page cache: one full read of each side. */
static void warm(sqlite3 *kdb, const char *kdir, sqlite3 *ndb) {
  side k, n;
  const char *q = "SELECT count(*), sum(length(key)), sum(length(value)), sum(timestamp) FROM @T";
  side_init(&k, "kafka_log", 1, kdir, kdb, q, NULL, 0, 1, 0, 1);
  if (!k.ok) die("warm-up: %s", k.err);
  run_once(&k);
  side_done(&k);
  if (ndb) {
    side_init(&n, "native", 0, NULL, ndb, q, NULL, 0, 1, 0, 1);
    run_once(&n);
    side_done(&n);
  }
}

static char *stats_json(sqlite3 *db) {
  sqlite3_stmt *st;
  char *s = NULL;
  if (sqlite3_prepare_v2(db, "SELECT kafka_log_stats()", -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    s = strdup((const char *)sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  return s ? s : strdup("null");
}

static void usage(void) {
  fprintf(stderr,
          "usage: queries [--records N] [--seg-records N] [--lookups N] [--segments-few N]\n"
          "               [--segments-many N] [--segment-bytes B] [--batch-bytes B]\n"
          "               [--min-time S] [--data DIR] [--out DIR] [--tag NAME]\n"
          "               [--only main|segments|large] [--quick] [--keep] [--plans]\n");
  exit(2);
}

/* Two kafka_log sides (fa's and fb's) against one native side: answers
** compared, plans noted, the three timed together; t gets the times. */
static void measure_two(side *a, side *b, side *n, figure *fa, figure *fb, const char *cmp,
                        int reps, double min_time, double t[3]) {
  fa->correct = compare(a, n, cmp, reps, fa->note, sizeof fa->note);
  fb->correct = compare(b, n, cmp, reps, fb->note, sizeof fb->note);
  plan_of(a, fa->plan_k, sizeof fa->plan_k);
  plan_of(b, fb->plan_k, sizeof fb->plan_k);
  plan_of(n, fa->plan_n, sizeof fa->plan_n);
  snprintf(fb->plan_n, sizeof fb->plan_n, "%s", fa->plan_n);
  side *s[3] = {a, b, n};
  measure(s, 3, min_time, t);
  fa->k = t[0];
  fb->k = t[1];
  fa->n = fb->n = t[2];
}

/* A temp table k(id, x) of nk random offsets in [0, records) on db, for
** the joins: JOIN_SETS sets of lookups, ?1 picks one. */
#define JOIN_SETS 8
static void make_offsets(sqlite3 *db, long nk, long records) {
  exec_or_die(db, "CREATE TEMP TABLE k(id INTEGER PRIMARY KEY, x INTEGER); BEGIN");
  sqlite3_stmt *ins;
  if (sqlite3_prepare_v2(db, "INSERT INTO k VALUES(?1, ?2)", -1, &ins, NULL)) {
    die("temp table: %s", sqlite3_errmsg(db));
  }
  uint64_t s = 77;
  for (long i = 0; i < nk; i++) {
    sqlite3_bind_int64(ins, 1, i);
    sqlite3_bind_int64(ins, 2, (int64_t)(rec_rnd(&s) % (uint64_t)records));
    if (sqlite3_step(ins) != SQLITE_DONE) die("temp table: %s", sqlite3_errmsg(db));
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  exec_or_die(db, "COMMIT");
}

/* A join figure's verdict, plans and note: the kafka_log side k against
** the native side n, with what each lookup decompressed and decoded. */
static void judge_join(side *k, side *n, figure *f) {
  f->correct = compare(k, n, NULL, 3, f->note, sizeof f->note);
  plan_of(k, f->plan_k, sizeof f->plan_k);
  plan_of(n, f->plan_n, sizeof f->plan_n);
  double by, ba;
  lookup_work(k, &by, &ba);
  size_t nl = strlen(f->note);
  snprintf(f->note + nl, sizeof f->note - nl, "%s%.0f bytes decompressed, %.2f batches decoded "
           "per lookup", nl ? "; " : "", by, ba);
}

/* The join of lookups lookups from k into the table @T. */
static void join_sql(char *b, size_t n, long lookups) {
  snprintf(b, n,
           "SELECT sum(length(r.value)) FROM k JOIN @T r ON r.offset = k.x@K WHERE k.id "
           "BETWEEN ?1 AND ?1 + %ld",
           lookups - 1);
}

/* Set (on) or clear the immutable flag of every .log of dir, as chattr +i
** does: what mmap='on' asks before it maps a file.  The count of files
** changed; fewer than there are when this process may not (it needs
** CAP_LINUX_IMMUTABLE). */
static int immutable_logs(const char *dir, int on) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 4, ".log") != 0) continue;
    char p[4600];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    int fd = open(p, O_RDONLY);
    if (fd < 0) continue;
    int flags = 0;
    if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
      flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
      if (ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0) n++;
    }
    close(fd);
  }
  closedir(d);
  return n;
}

/* The scan floor: per row, kafka_log on the main log (codecs rotating) and
** on an uncompressed copy, the do-nothing table and the native table. */
enum { FL_MAIN, FL_NONE, FL_FLOOR, FL_NATIVE, FL_SIDES };
static const char *const g_floor_side[FL_SIDES] = {"kafka_log (none/lz4/zstd)",
                                                   "kafka_log (none)", "do-nothing vtab",
                                                   "native"};
static const char *const g_floor_sql[2] = {"SELECT count(*) FROM @T",
                                           "SELECT count(*), sum(length(value)) FROM @T"};
static double g_floor_ns[2][FL_SIDES]; /* seconds per row, -1: n/a */

/* side s on the do-nothing table, registered on db (?1 drawn from [lo, hi]
** as side_init's). */
static void side_init_floor(side *s, sqlite3 *db, const char *tmpl, int64_t lo, int64_t hi,
                            double per) {
  side_init(s, "do-nothing vtab", 0, NULL, db, tmpl, NULL, 0, lo, hi, per);
  sqlite3_finalize(s->st);
  s->st = NULL;
  expand(s->sql, sizeof s->sql, tmpl, "bench_floor", "");
  sqlite3_stmt *st;
  s->ok = side_prepare(s, db, &st) == 0;
  s->st = st;
}

/* Figures 3b, 3c, 7b, 7c: the main log's records written again without
** compression (kwriter, same batches) and loaded into the do-nothing table;
** the four sides timed together.  0 when the rows cannot be loaded. */
static int floor_figures(const opts *o, const gen *g, const char *data, const char *main_dir,
                         const char *main_db, sqlite3 *kdb, sqlite3 *ndb, const int *none,
                         dset *none_ds) {
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/orders-none-0", data);
  write_log(none_ds, g, dir, o->records, o->batch_bytes, 100, o->segment_bytes, none, 1);
  printf("uncompressed copy of the main log: %.1f MiB, %ld batches\n",
         (double)none_ds->bytes / 1048576, none_ds->batches);
  warm(kdb, dir, NULL);
  floor_rows fr;
  if (floor_rows_load(ndb, &fr) || floor_register(kdb, &fr) != SQLITE_OK) return 0;
  double per = (double)o->records;
  static const char *const ids[2][2] = {{"count_none", "floor_count"},
                                        {"scan_none", "floor_scan"}};
  static const char *const labels[2][2] = {
      {"3b count(*), uncompressed log", "3c count(*), do-nothing vtab"},
      {"7b full scan count, sum(length(value)), none", "7c the same, do-nothing vtab"}};
  for (int q = 0; q < 2; q++) {
    side sd[FL_SIDES];
    side_init(&sd[FL_MAIN], "kafka_log", 1, main_dir, kdb, g_floor_sql[q], NULL, 0, 1, 0, per);
    side_init(&sd[FL_NONE], "kafka_log none", 1, dir, kdb, g_floor_sql[q], NULL, 0, 1, 0, per);
    side_init_floor(&sd[FL_FLOOR], kdb, g_floor_sql[q], 1, 0, per);
    side_init(&sd[FL_NATIVE], "native", 0, main_db, ndb, g_floor_sql[q], NULL, 0, 1, 0, per);
    figure *fu = add_fig(ids[q][0], labels[q][0], g_floor_sql[q], NULL, "row", -1, -1,
                         q ? G_RATIO_GE : G_NONE, 1.3);
    figure *ff = add_fig(ids[q][1], labels[q][1], g_floor_sql[q], NULL, "row", -1, -1, G_NONE,
                         0);
    expand(ff->sql, sizeof ff->sql, g_floor_sql[q], "bench_floor", "");
    ff->k_name = "floor";
    ff->n_name = "native";
    ff->chart = 0;
    fu->correct = compare(&sd[FL_NONE], &sd[FL_NATIVE], NULL, 1, fu->note, sizeof fu->note);
    ff->correct = compare(&sd[FL_FLOOR], &sd[FL_NATIVE], NULL, 1, ff->note, sizeof ff->note);
    if (ff->correct < 0) die("the do-nothing table: %s", ff->note);
    side *all[FL_SIDES] = {&sd[0], &sd[1], &sd[2], &sd[3]};
    double t[FL_SIDES];
    measure(all, FL_SIDES, o->min_time, t);
    for (int i = 0; i < FL_SIDES; i++) {
      g_floor_ns[q][i] = t[i];
      side_done(&sd[i]);
    }
    fu->k = t[FL_NONE];
    fu->n = ff->n = t[FL_NATIVE];
    ff->k = t[FL_FLOOR];
    printf("  measured the scan floor: %s\n", g_floor_sql[q]);
    fflush(stdout);
  }
  /* The module goes with the rows: a statement cannot reach them after. */
  sqlite3_create_module_v2(kdb, "bench_floor", NULL, NULL, NULL);
  floor_rows_free(&fr);
  if (!o->keep) rm_rf(dir);
  return 1;
}

/* The floor table: ns per row of each side, and kafka_log's distance to
** the do-nothing table. */
static void print_floor(void) {
  if (g_floor_ns[0][FL_FLOOR] == 0) return;
  printf("\nscan floor, ns per row (median of 3 runs, the sides alternating):\n");
  printf("  %-38s", "statement");
  for (int i = 0; i < FL_SIDES; i++) printf(" %26s", g_floor_side[i]);
  printf("\n");
  for (int q = 0; q < 2; q++) {
    printf("  %-38s", g_floor_sql[q] + strlen("SELECT "));
    for (int i = 0; i < FL_SIDES; i++) {
      if (g_floor_ns[q][i] < 0) printf(" %26s", "n/a");
      else printf(" %26.1f", g_floor_ns[q][i] * 1e9);
    }
    printf("\n  %-38s %26.1f %26.1f   (kafka_log - do-nothing)\n", "",
           (g_floor_ns[q][FL_MAIN] - g_floor_ns[q][FL_FLOOR]) * 1e9,
           (g_floor_ns[q][FL_NONE] - g_floor_ns[q][FL_FLOOR]) * 1e9);
  }
}

static void json_floor(FILE *j) {
  fprintf(j, "  \"scan_floor_ns_per_row\": ");
  if (g_floor_ns[0][FL_FLOOR] == 0) {
    fprintf(j, "null,\n");
    return;
  }
  fprintf(j, "{");
  for (int q = 0; q < 2; q++) {
    fprintf(j, "%s\n    ", q ? "," : "");
    json_string(j, g_floor_sql[q]);
    fprintf(j, ": {");
    for (int i = 0; i < FL_SIDES; i++) {
      fprintf(j, "%s", i ? ", " : "");
      json_string(j, g_floor_side[i]);
      fprintf(j, ": ");
      json_number(j, g_floor_ns[q][i] > 0 ? g_floor_ns[q][i] * 1e9 : -1);
    }
    fprintf(j, "}");
  }
  fprintf(j, "},\n");
}

int main(int argc, char **argv) {
  opts o = {.records = 300000,
            .seg_records = 200000,
            .lookups = 50000,
            .segs_few = 12,
            .segs_many = 1500,
            .segment_bytes = 4194304,
            .batch_bytes = 16384,
            .min_time = 1.0,
            .out = "out",
            .tag = "queries"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && ++i)
    if (ARG("--records")) o.records = atol(v);
    else if (ARG("--seg-records")) o.seg_records = atol(v);
    else if (ARG("--lookups")) o.lookups = atol(v);
    else if (ARG("--segments-few")) o.segs_few = atoi(v);
    else if (ARG("--segments-many")) o.segs_many = atoi(v);
    else if (ARG("--segment-bytes")) o.segment_bytes = atol(v);
    else if (ARG("--batch-bytes")) o.batch_bytes = atoi(v);
    else if (ARG("--min-time")) o.min_time = atof(v);
    else if (ARG("--data")) o.data = v;
    else if (ARG("--out")) o.out = v;
    else if (ARG("--tag")) o.tag = v;
    else if (ARG("--only")) o.only = v;
    else if (!strcmp(a, "--keep")) o.keep = 1;
    else if (!strcmp(a, "--plans")) o.plans = 1;
    else if (!strcmp(a, "--quick")) {
      o.records = 20000;
      o.seg_records = 20000;
      o.lookups = 5000;
      o.segs_many = 150;
      o.segment_bytes = 1L << 20;
      o.min_time = 0.1;
    } else {
      usage();
    }
#undef ARG
  }
  if (o.records < 10000 || o.seg_records < 10000 || o.lookups < 100 || o.segs_few < 1 ||
      o.segs_many < o.segs_few || o.batch_bytes < 1024) {
    die("need --records, --seg-records >= 10000, --lookups >= 100, --segments-many >= "
        "--segments-few >= 1, --batch-bytes >= 1024");
  }
#define WANT(g) (!o.only || !strcmp(o.only, g))

  char data[4096];
  make_dirs(data, sizeof data, o.data, "queries", o.out);

  struct utsname un;
  uname(&un);
  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  double load0[3] = {0, 0, 0}, load1[3] = {0, 0, 0};
  getloadavg(load0, 3);
  char version[256] = "?";
  {
    sqlite3 *db = open_kafka();
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT kafka_log_version()", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      snprintf(version, sizeof version, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  printf("kafkalog queries: %ld order events (main), %ld for the segment and batch-size logs\n"
         "machine: %s, %ld CPUs, %s %s; SQLite %s; %s\ndata in %s\n\n",
         o.records, o.seg_records, cpu, ncpu, un.sysname, un.release, sqlite3_libversion(),
         version, data);
  fflush(stdout);

  gen g = {.step_ms = SPAN_MS / o.records};
  const int rotate[3] = {KL_CODEC_NONE, KL_CODEC_LZ4, KL_CODEC_ZSTD};
  const int zstd[1] = {KL_CODEC_ZSTD}, none[1] = {KL_CODEC_NONE};
  char path[4400];
  dset main_ds = {0}, none_ds = {0}, few = {0}, many = {0}, z500 = {0}, u500 = {0};
  int64_t main_db_bytes = 0, seg_db_bytes = 0;
  double main_load = 0, seg_load = 0;
  char main_dir[4200], main_db[4200], seg_db[4200];
  snprintf(main_dir, sizeof main_dir, "%s/orders-0", data);
  snprintf(main_db, sizeof main_db, "%s/orders.db", data);
  snprintf(seg_db, sizeof seg_db, "%s/orders-200k.db", data);
  /* Timestamps drawn for ?1 leave at least one record at or above them. */
  int64_t ts_lo = TS0, ts_hi = TS0 + (o.records - 1) * g.step_ms - JITTER_MS - 1;
  int64_t sts_hi = TS0 + (o.seg_records - 1) * g.step_ms - JITTER_MS - 1;

  /* ---- main log: figures 1-11 ---- */
  if (WANT("main")) {
    write_log(&main_ds, &g, main_dir, o.records, o.batch_bytes, 100, o.segment_bytes, rotate, 3);
    main_load = load_native(&g, main_db, o.records, &main_db_bytes);
    printf("main log: %.1f MiB, %d segments, %ld batches (%.1f records each; written in %.1f "
           "s); native db %.1f MiB (loaded in %.1f s)\n",
           (double)main_ds.bytes / 1048576, main_ds.segments, main_ds.batches,
           (double)o.records / (double)main_ds.batches, main_ds.write_s,
           (double)main_db_bytes / 1048576, main_load);
    fflush(stdout);
    sqlite3 *kdb = open_kafka(), *ndb = open_native(main_db);
    warm(kdb, main_dir, ndb);
    ctx c = {&o, main_dir, main_db, kdb, ndb};

    /* 1, 2: the window; fresh connections, then repeated: three sides. */
    const char *win = "SELECT count(*), sum(length(value)) FROM @T WHERE timestamp >= ?1 AND "
                      "timestamp < ?1 + 3600000@K";
    const char *skew = " AND max_skew_ms = 60000";
    int64_t hlo = ts_lo, hhi = ts_hi - HOUR_MS;
    for (int fresh = 1; fresh >= 0; fresh--) {
      side kw, ks, nw;
      side_init(&kw, "kafka_log", 1, main_dir, kdb, win, "", fresh, hlo, hhi, 1);
      side_init(&ks, "kafka_log skew", 1, main_dir, kdb, win, skew, fresh, hlo, hhi, 1);
      side_init(&nw, "native", 0, main_db, ndb, win, NULL, fresh, hlo, hhi, 1);
      figure *f1 = add_fig(fresh ? "window_first" : "window", fresh ? "1 window, first run "
                           "(fresh conn.)" : "1 window, repeated", win, "", "query", -1, -1,
                           fresh ? G_NONE : G_RATIO_GE, 0.3);
      figure *f2 = add_fig(fresh ? "window_skew_first" : "window_skew", fresh ? "2 window+skew, "
                           "first run (fresh conn.)" : "2 window+skew, repeated", win, skew,
                           "query", -1, -1, fresh ? G_RATIO_GE : G_NONE, 0.3);
      if (!ks.ok) snprintf(f2->note, sizeof f2->note, "kafka_log: %s", ks.err);
      double t[3];
      measure_two(&kw, &ks, &nw, f1, f2, NULL, 3, o.min_time, t);
      side_done(&kw);
      side_done(&ks);
      side_done(&nw);
      printf("  measured window (%s)\n", fresh ? "fresh connections" : "repeated");
      fflush(stdout);
    }

    qspec qs[] = {
        {"count", "3 count(*)", "SELECT count(*) FROM @T", NULL, NULL, "query", 0, 1, 0, 1,
         G_RATIO_GE, 1},
        {"min_offset", "4 min(offset)", "SELECT min(offset) FROM @T", NULL, NULL, "query", 0, 1,
         0, 1, G_RATIO_GE, 0.5},
        {"offset_for_time", "5 min(offset) WHERE timestamp >= ?",
         "SELECT min(offset) FROM @T WHERE timestamp >= ?1", NULL, NULL, "query", 0, ts_lo,
         ts_hi, 1, G_RATIO_GE, 1},
        {"max_timestamp", "6 max(timestamp)", "SELECT max(timestamp) FROM @T", NULL, NULL,
         "query", 0, 1, 0, 1, G_RATIO_GE, 0.3},
        {"scan", "7 full scan count, sum(length(value))",
         "SELECT count(*), sum(length(value)) FROM @T", NULL, NULL, "query", 0, 1, 0, 1,
         G_RATIO_GE, 0.8},
        {"ts_only", "8 sum(timestamp % 1000)", "SELECT sum(timestamp % 1000) FROM @T", NULL,
         NULL, "query", 0, 1, 0, 1, G_RATIO_GE, 0.5},
        {"per_hour", "9 per-hour counts, GROUP BY h",
         "SELECT timestamp/3600000 AS h, count(*) FROM @T GROUP BY h", NULL, NULL, "query", 0,
         1, 0, 1, G_RATIO_GE, 0.8},
        {"tail_before", "10 last 10 before a time",
         "SELECT offset, timestamp, value FROM @T WHERE timestamp < ?1 ORDER BY offset DESC "
         "LIMIT 10",
         NULL, NULL, "query", 0, ts_lo + HOUR_MS, ts_hi, 1, G_RATIO_GE, 0.5},
    };
    for (size_t i = 0; i < NELEM(qs); i++) run_pair(&c, &qs[i]);
    if (!floor_figures(&o, &g, data, main_dir, main_db, kdb, ndb, none, &none_ds)) {
      die("the do-nothing table: cannot load %s", main_db);
    }

    /* 11: point lookups in a join, from a temp table of 8 sets of offsets. */
    {
      long nk = JOIN_SETS * o.lookups;
      make_offsets(kdb, nk, o.records);
      make_offsets(ndb, nk, o.records);
      char tmpl[256];
      join_sql(tmpl, sizeof tmpl, o.lookups);
      /* The same records written by the project itself (INSERT ... SELECT
      ** from the native table, a named table's defaults; with lz4; with
      ** the former 1 MiB batches), beside kwriter's producer batches:
      ** with the defaults, lookups must be as fast. */
      static const char *const wopts[] = {"", "compression='lz4'", "batch_bytes=1048576"};
      static const char *const wname[] = {"insert", "insert_lz4", "insert_1m"};
      char idir[3][4200];
      for (int w = 0; w < 3; w++) {
        dset ids = {0};
        snprintf(idir[w], sizeof idir[w], "%s/orders-%s-0", data, wname[w]);
        double ts = write_by_insert(main_db, idir[w], wopts[w], &ids);
        printf("INSERT log (%s): %.1f MiB, %d segments, %ld batches (%.1f records each; "
               "written in %.1f s)\n", *wopts[w] ? wopts[w] : "defaults",
               (double)ids.bytes / 1048576, ids.segments, ids.batches,
               (double)o.records / (double)ids.batches, ts);
      }
      char label[4][96];
      snprintf(label[0], sizeof label[0], "11 join of %ld offsets, per lookup", o.lookups);
      snprintf(label[1], sizeof label[1], "11b the same, log written by INSERT (defaults)");
      snprintf(label[2], sizeof label[2], "11c the same, log written by INSERT (lz4)");
      snprintf(label[3], sizeof label[3], "11d the same, INSERT, batch_bytes=1048576 (former)");
      static const char *const ids[] = {"join_lookups", "join_lookups_insert",
                                        "join_lookups_insert_lz4", "join_lookups_insert_1m"};
      const char *dirs[4] = {main_dir, idir[0], idir[1], idir[2]};
      side ks[4], ns;
      figure *fs[4];
      for (int i = 0; i < 4; i++) {
        side_init(&ks[i], "kafka_log", 1, dirs[i], kdb, tmpl, "", 0, 0, nk - o.lookups,
                  (double)o.lookups);
        fs[i] = add_fig(ids[i], label[i], tmpl, "", "lookup", -1, -1, G_RATIO_GE, 1.5);
        if (!ks[i].ok) snprintf(fs[i]->note, sizeof fs[i]->note, "kafka_log: %s", ks[i].err);
      }
      side_init(&ns, "native", 0, main_db, ndb, tmpl, NULL, 0, 0, nk - o.lookups,
                (double)o.lookups);
      for (int i = 0; i < 4; i++) {
        judge_join(&ks[i], &ns, fs[i]);
      }
      /* 11h: the same join on the do-nothing table (the native rows in
      ** memory, offset = ? by binary search), the floor of a lookup through
      ** SQLite's virtual table interface, timed with the others. */
      floor_rows fr;
      if (floor_rows_load(ndb, &fr) || floor_register(kdb, &fr) != SQLITE_OK) {
        die("the do-nothing table: cannot load %s", main_db);
      }
      side fl;
      side_init_floor(&fl, kdb, tmpl, 0, nk - o.lookups, (double)o.lookups);
      figure *ff = add_fig("join_floor", "11h join, do-nothing vtab", tmpl,
                           NULL, "lookup", -1, -1, G_NONE, 0);
      expand(ff->sql, sizeof ff->sql, tmpl, "bench_floor", "");
      ff->k_name = "floor";
      ff->n_name = "native";
      ff->chart = 0;
      ff->correct = compare(&fl, &ns, NULL, 3, ff->note, sizeof ff->note);
      if (ff->correct < 0) die("the do-nothing table: %s", ff->note);
      plan_of(&fl, ff->plan_k, sizeof ff->plan_k);
      plan_of(&ns, ff->plan_n, sizeof ff->plan_n);
      side *all[6] = {&ks[0], &ks[1], &ks[2], &ks[3], &ns, &fl};
      double t[6];
      measure(all, 6, o.min_time, t);
      for (int i = 0; i < 4; i++) {
        fs[i]->k = t[i];
        fs[i]->n = t[4];
        side_done(&ks[i]);
        printf("  measured %-14s %s\n", ids[i], fs[i]->note);
      }
      ff->k = t[5];
      ff->n = t[4];
      side_done(&fl);
      printf("  measured %-14s\n", "join_floor");
      side_done(&ns);
      /* The module goes with the rows: a statement cannot reach them after. */
      sqlite3_create_module_v2(kdb, "bench_floor", NULL, NULL, NULL);
      floor_rows_free(&fr);
      fflush(stdout);

      /* 11e-g: the same joins with the table's kept batches holding the
      ** log's compressed batches (64 MiB), and with the .log files mapped
      ** (mmap='on' maps only files that cannot shrink: they are made
      ** immutable for it, and writable again after). */
      int made = immutable_logs(main_dir, 1) > 0;
      made = (immutable_logs(idir[0], 1) > 0) && made;
      static const char *const xids[] = {"join_lookups_cache", "join_lookups_cache_mmap",
                                         "join_lookups_insert_mmap"};
      static const char *const xlabel[] = {"11e join, cache_bytes=64 MiB, per lookup",
                                           "11f the same, and mmap='on'",
                                           "11g log written by INSERT, mmap='on'"};
      static const char *const xterm[] = {" AND r.cache_bytes = 67108864",
                                          " AND r.cache_bytes = 67108864 AND r.mmap = 'on'",
                                          " AND r.mmap = 'on'"};
      const char *xdirs[3] = {main_dir, main_dir, idir[0]};
      side xs[3];
      figure *xf[3];
      for (int i = 0; i < 3; i++) {
        side_init(&xs[i], "kafka_log", 1, xdirs[i], kdb, tmpl, xterm[i], 0, 0, nk - o.lookups,
                  (double)o.lookups);
        xf[i] = add_fig(xids[i], xlabel[i], tmpl, xterm[i], "lookup", -1, -1, G_RATIO_GE, 1.5);
        if (!xs[i].ok) snprintf(xf[i]->note, sizeof xf[i]->note, "kafka_log: %s", xs[i].err);
        if (i > 0 && !made) {
          snprintf(xf[i]->note, sizeof xf[i]->note, "not mapped: this process cannot make "
                   "files immutable");
        }
      }
      side_init(&ns, "native", 0, main_db, ndb, tmpl, NULL, 0, 0, nk - o.lookups,
                (double)o.lookups);
      for (int i = 0; i < 3; i++) {
        run_once(&xs[i]); /* fills the kept batches, maps the files */
        judge_join(&xs[i], &ns, xf[i]);
      }
      /* Measured one at a time: the sides on one log share the table's
      ** kept batches and its open segments. */
      for (int i = 0; i < 3; i++) {
        side *two[2] = {&xs[i], &ns};
        double t2[2];
        measure(two, 2, o.min_time, t2);
        xf[i]->k = t2[0];
        xf[i]->n = t2[1];
        side_done(&xs[i]);
        printf("  measured %-14s %s\n", xids[i], xf[i]->note);
      }
      side_done(&ns);
      immutable_logs(main_dir, 0);
      immutable_logs(idir[0], 0);
      fflush(stdout);
    }
    sqlite3_close(kdb);
    sqlite3_close(ndb);
  }

  /* The native table of the segment and batch-size logs. */
  int64_t est_bytes = main_ds.bytes;
  if (WANT("segments") || WANT("large")) {
    seg_load = load_native(&g, seg_db, o.seg_records, &seg_db_bytes);
    if (!est_bytes) {
      /* --only: estimate the log size from a scratch copy */
      dset tmpds;
      snprintf(path, sizeof path, "%s/estimate-0", data);
      write_log(&tmpds, &g, path, o.seg_records, o.batch_bytes, 100, 1L << 30, rotate, 3);
      est_bytes = tmpds.bytes;
      rm_rf(path);
    } else {
      est_bytes = (int64_t)((double)est_bytes * o.seg_records / o.records);
    }
  }

  /* ---- 12: few and many segments ---- */
  char *stats_first = NULL, *stats_again = NULL;
  int64_t stats_ts = 0;
  if (WANT("segments")) {
    char few_dir[4200], many_dir[4200];
    snprintf(few_dir, sizeof few_dir, "%s/few-0", data);
    snprintf(many_dir, sizeof many_dir, "%s/many-0", data);
    write_log_segments(&few, &g, few_dir, o.seg_records, o.batch_bytes, 100, est_bytes,
                       o.segs_few, rotate, 3);
    write_log_segments(&many, &g, many_dir, o.seg_records, o.batch_bytes, 100, est_bytes,
                       o.segs_many, rotate, 3);
    printf("native db of the segment and batch-size logs: %ld records, %.1f MiB (loaded in %.1f "
           "s)\n", o.seg_records, (double)seg_db_bytes / 1048576, seg_load);
    printf("segment logs: %ld records, %d segments of %ld bytes and %d of %ld bytes (%.1f "
           "MiB)\n",
           o.seg_records, few.segments, few.segment_bytes, many.segments, many.segment_bytes,
           (double)many.bytes / 1048576);
    fflush(stdout);
    sqlite3 *kfew = open_kafka(), *kmany = open_kafka(), *ndb = open_native(seg_db);
    warm(kfew, few_dir, ndb);
    warm(kmany, many_dir, NULL);
    const char *seek = "SELECT offset FROM @T WHERE timestamp >= ?1 LIMIT 1";
    const char *seek_cmp = "SELECT offset FROM @T WHERE timestamp >= ?1 ORDER BY offset LIMIT 1";
    char lf[96], lm[96];
    snprintf(lf, sizeof lf, "12 ts seek, %d segs", few.segments);
    snprintf(lm, sizeof lm, "12 ts seek, %d segs", many.segments);
    for (int fresh = 0; fresh <= 1; fresh++) {
      side a, b, n;
      side_init(&a, "kafka_log few", 1, few_dir, kfew, seek, NULL, fresh, ts_lo, sts_hi, 1);
      side_init(&b, "kafka_log many", 1, many_dir, kmany, seek, NULL, fresh, ts_lo, sts_hi, 1);
      side_init(&n, "native", 0, seg_db, ndb, seek, NULL, fresh, ts_lo, sts_hi, 1);
      char l1[120], l2[120];
      snprintf(l1, sizeof l1, "%s%s", lf, fresh ? ", first (fresh conn.)" : ", repeated");
      snprintf(l2, sizeof l2, "%s%s", lm, fresh ? ", first (fresh conn.)" : ", repeated");
      figure *fa = add_fig(fresh ? "seek_few_first" : "seek_few", l1, seek, NULL, "seek", -1, -1,
                           G_NONE, 0);
      figure *fb = add_fig(fresh ? "seek_many_first" : "seek_many", l2, seek, NULL, "seek", -1,
                           -1, fresh ? G_KAFKA_LT : G_NONE, 0.005);
      fb->chart = 1;
      double t[3];
      measure_two(&a, &b, &n, fa, fb, seek_cmp, 5, o.min_time, t);
      if (!fresh) {
        char l3[120];
        snprintf(l3, sizeof l3, "12 seek time, %d / %d segs", many.segments, few.segments);
        figure *fr = add_fig("seek_many_over_few", l3, seek, NULL, "seek", t[1], t[0],
                             G_RATIO_LE, 1.3);
        fr->k_name = "many";
        fr->n_name = "few";
        fr->correct = fa->correct && fb->correct;
        if (fa->correct < 0 || fb->correct < 0) fr->correct = -1;
      }
      side_done(&a);
      side_done(&b);
      side_done(&n);
      printf("  measured seeks (%s)\n", fresh ? "fresh connections" : "repeated");
      fflush(stdout);
    }
    /* 12b: the join's lookups on the few- and the many-segment logs. */
    {
      long nk = JOIN_SETS * o.lookups;
      sqlite3 *dbs[3] = {kfew, kmany, ndb};
      for (int d = 0; d < 3; d++) make_offsets(dbs[d], nk, o.seg_records);
      char tmpl[256];
      join_sql(tmpl, sizeof tmpl, o.lookups);
      side a, b, n;
      side_init(&a, "kafka_log few", 1, few_dir, kfew, tmpl, NULL, 0, 0, nk - o.lookups,
                (double)o.lookups);
      side_init(&b, "kafka_log many", 1, many_dir, kmany, tmpl, NULL, 0, 0, nk - o.lookups,
                (double)o.lookups);
      side_init(&n, "native", 0, seg_db, ndb, tmpl, NULL, 0, 0, nk - o.lookups,
                (double)o.lookups);
      char l1[120], l2[120], l3[120];
      snprintf(l1, sizeof l1, "12b join lookups, %d segs", few.segments);
      snprintf(l2, sizeof l2, "12b join lookups, %d segs", many.segments);
      snprintf(l3, sizeof l3, "12b lookup time, %d / %d segs", many.segments, few.segments);
      figure *fa = add_fig("join_few", l1, tmpl, NULL, "lookup", -1, -1, G_NONE, 0);
      figure *fb = add_fig("join_many", l2, tmpl, NULL, "lookup", -1, -1, G_NONE, 0);
      double t[3];
      measure_two(&a, &b, &n, fa, fb, NULL, 3, o.min_time, t);
      figure *fr = add_fig("join_many_over_few", l3, tmpl, NULL, "lookup", t[1], t[0],
                           G_RATIO_LE, 1.3);
      fr->k_name = "many";
      fr->n_name = "few";
      fr->correct = fa->correct && fb->correct;
      if (fa->correct < 0 || fb->correct < 0) fr->correct = -1;
      side_done(&a);
      side_done(&b);
      side_done(&n);
      printf("  measured join lookups on %d and %d segments\n", few.segments, many.segments);
      fflush(stdout);
    }
    /* The work of one seek on the many-segment log, to the middle of its
    ** time range: first on a fresh connection, then once more. */
    stats_ts = (ts_lo + sts_hi) / 2;
    {
      sqlite3 *db = open_kafka();
      side s;
      side_init(&s, "kafka_log many", 1, many_dir, db, seek, NULL, 0, ts_lo, sts_hi, 1);
      if (s.ok) {
        exec_or_die(db, "SELECT kafka_log_stats_reset()");
        run_at(&s, stats_ts);
        stats_first = stats_json(db);
        exec_or_die(db, "SELECT kafka_log_stats_reset()");
        run_at(&s, stats_ts);
        stats_again = stats_json(db);
      }
      side_done(&s);
      sqlite3_close(db);
    }
    sqlite3_close(kfew);
    sqlite3_close(kmany);
    sqlite3_close(ndb);
    if (!o.keep) {
      rm_rf(few_dir);
      rm_rf(many_dir);
    }
  }

  /* ---- 13: batches of 500 records, zstd and none ---- */
  if (WANT("large")) {
    char zdir[4200], udir[4200];
    snprintf(zdir, sizeof zdir, "%s/zstd500-0", data);
    snprintf(udir, sizeof udir, "%s/none500-0", data);
    write_log(&z500, &g, zdir, o.seg_records, 1 << 30, 500, o.segment_bytes, zstd, 1);
    write_log(&u500, &g, udir, o.seg_records, 1 << 30, 500, o.segment_bytes, none, 1);
    printf("500-record batches: zstd %.1f MiB in %d segments, none %.1f MiB in %d segments\n",
           (double)z500.bytes / 1048576, z500.segments, (double)u500.bytes / 1048576,
           u500.segments);
    fflush(stdout);
    sqlite3 *kz = open_kafka(), *ku = open_kafka(), *ndb = open_native(seg_db);
    warm(kz, zdir, ndb);
    warm(ku, udir, NULL);
    struct {
      const char *id, *what, *tmpl, *cmp, *unit;
      int64_t lo, hi;
      double per;
    } q13[] = {
        {"decode", "full decode, per row",
         "SELECT count(*), sum(length(value)), sum(length(key)), sum(timestamp) FROM @T", NULL,
         "row", 1, 0, (double)o.seg_records},
        {"offset_lookup", "offset lookup",
         "SELECT offset, timestamp, key, value FROM @T WHERE offset = ?1", NULL, "lookup", 0,
         o.seg_records - 1, 1},
        {"ts_lookup", "timestamp lookup",
         "SELECT offset, timestamp, key, value FROM @T WHERE timestamp >= ?1 LIMIT 1",
         "SELECT offset, timestamp, key, value FROM @T WHERE timestamp >= ?1 ORDER BY offset "
         "LIMIT 1",
         "lookup", ts_lo, sts_hi, 1},
    };
    for (size_t i = 0; i < NELEM(q13); i++) {
      side a, b, n;
      side_init(&a, "kafka_log zstd", 1, zdir, kz, q13[i].tmpl, NULL, 0, q13[i].lo, q13[i].hi,
                q13[i].per);
      side_init(&b, "kafka_log none", 1, udir, ku, q13[i].tmpl, NULL, 0, q13[i].lo, q13[i].hi,
                q13[i].per);
      side_init(&n, "native", 0, seg_db, ndb, q13[i].tmpl, NULL, 0, q13[i].lo, q13[i].hi,
                q13[i].per);
      char id[32], la[96], lb[96];
      snprintf(la, sizeof la, "13 zstd x500: %s", q13[i].what);
      snprintf(lb, sizeof lb, "13 none x500: %s", q13[i].what);
      snprintf(id, sizeof id, "zstd500_%s", q13[i].id);
      figure *fa = add_fig(id, la, q13[i].tmpl, NULL, q13[i].unit, -1, -1, G_NONE, 0);
      snprintf(id, sizeof id, "none500_%s", q13[i].id);
      figure *fb = add_fig(id, lb, q13[i].tmpl, NULL, q13[i].unit, -1, -1, G_NONE, 0);
      double t[3];
      measure_two(&a, &b, &n, fa, fb, q13[i].cmp, 3, o.min_time, t);
      side_done(&a);
      side_done(&b);
      side_done(&n);
      printf("  measured 500-record batches: %s\n", q13[i].what);
      fflush(stdout);
    }
    sqlite3_close(kz);
    sqlite3_close(ku);
    sqlite3_close(ndb);
  }
  getloadavg(load1, 3);

  /* ---- the table ---- */
  printf("\n%-46s %11s %11s %8s %7s %-6s %19s\n", "figure (time per query)", "kafka_log",
         "native", "ratio", "goal", "", "rate k / n (per s)");
  for (int i = 0; i < g_nfig; i++) {
    figure *fg = &g_fig[i];
    char a[32], b[32], ra[32], rb[32], gl[32], r[32];
    fmt_time(a, sizeof a, fg->k);
    fmt_time(b, sizeof b, fg->n);
    fmt_rate(ra, sizeof ra, fg->k);
    fmt_rate(rb, sizeof rb, fg->n);
    goal_text(fg, gl, sizeof gl);
    double ratio = fig_ratio(fg);
    if (fg->goal_kind == G_RATIO_LE) ratio = ratio > 0 ? 1 / ratio : -1;
    if (ratio < 0) snprintf(r, sizeof r, "n/a");
    else snprintf(r, sizeof r, "%.3f", ratio);
    char lbl[128];
    snprintf(lbl, sizeof lbl, "%s", fg->label);
    if (fg->k_name) snprintf(lbl, sizeof lbl, "%s [%s | %s]", fg->label, fg->k_name, fg->n_name);
    printf("%-46s %11s %11s %8s %7s %-6s %9s / %-9s\n", lbl, a, b, r, gl, verdict(fg),
           fg->k_name ? "" : ra, fg->k_name ? "" : rb);
  }
  printf("\nratio = native time / kafka_log time (>1: kafka_log faster); the seek-time row: "
         "many-segment time / few-segment time\n");
  for (int i = 0; i < g_nfig; i++) {
    if (g_fig[i].note[0]) printf("note, %s: %s\n", g_fig[i].id, g_fig[i].note);
  }
  print_floor();
  printf("\nstatements (kafka_log side; D = the partition directory as a string literal; the "
         "native side is the same on t without max_skew_ms):\n");
  for (int i = 0; i < g_nfig; i++) {
    if (i && !strcmp(g_fig[i].sql, g_fig[i - 1].sql)) continue;
    printf("  %-20s %s\n", g_fig[i].id, g_fig[i].sql);
  }
  if (stats_first) {
    printf("\nkafka_log_stats() of one seek on the %d-segment log (timestamp >= %" PRId64
           ", the middle of its time range):\n  first on a fresh connection: %s\n  the same "
           "seek again: %s\n",
           many.segments, stats_ts, stats_first, stats_again);
  }
  if (o.plans) {
    printf("\nquery plans:\n");
    for (int i = 0; i < g_nfig; i++) {
      printf("  %-20s kafka_log: %s\n  %-20s native:    %s\n", g_fig[i].id, g_fig[i].plan_k, "",
             g_fig[i].plan_n);
    }
  }
  printf("\nload average (1 min) at start %.2f, at end %.2f on %ld CPUs\n", load0[0], load1[0],
         ncpu);

  /* ---- JSON ---- */
  snprintf(path, sizeof path, "%s/%s.json", o.out, o.tag);
  FILE *j = fopen(path, "w");
  if (!j) die("%s: %s", path, strerror(errno));
  fprintf(j, "{\n  \"machine\": {\"cpu\": ");
  json_string(j, cpu);
  fprintf(j, ", \"cpus\": %ld, \"kernel\": \"%s %s\", \"sqlite\": \"%s\", \"kafkalog\": ", ncpu,
          un.sysname, un.release, sqlite3_libversion());
  json_string(j, version);
  fprintf(j, ", \"loadavg_start\": %.2f, \"loadavg_end\": %.2f},\n", load0[0], load1[0]);
  fprintf(j,
          "  \"config\": {\"records\": %ld, \"seg_records\": %ld, \"lookups\": %ld, "
          "\"batch_bytes\": %d, \"batch_records_max\": 100, \"codecs\": \"none,lz4,zstd rotating "
          "per batch\", \"index_interval\": 4096, \"min_time_s\": %g, \"runs\": 3, "
          "\"statistic\": \"median\",\n    \"logs\": {",
          o.records, o.seg_records, o.lookups, o.batch_bytes, o.min_time);
  struct {
    const char *name;
    dset *d;
  } logs[] = {{"main", &main_ds}, {"main_none", &none_ds}, {"few", &few}, {"many", &many}, {"zstd500", &z500},
              {"none500", &u500}};
  int first = 1;
  for (size_t i = 0; i < NELEM(logs); i++) {
    if (!logs[i].d->records) continue;
    fprintf(j,
            "%s\n      \"%s\": {\"records\": %ld, \"segments\": %d, \"segment_bytes\": %ld, "
            "\"batches\": %ld, \"bytes\": %" PRId64 "}",
            first ? "" : ",", logs[i].name, logs[i].d->records, logs[i].d->segments,
            logs[i].d->segment_bytes, logs[i].d->batches, logs[i].d->bytes);
    first = 0;
  }
  fprintf(j, "},\n    \"native_db_bytes\": {\"main\": %" PRId64 ", \"seg\": %" PRId64 "}},\n",
          main_db_bytes, seg_db_bytes);
  json_floor(j);
  fprintf(j, "  \"figures\": [");
  for (int i = 0; i < g_nfig; i++) {
    figure *fg = &g_fig[i];
    char gl[32];
    goal_text(fg, gl, sizeof gl);
    fprintf(j, "%s\n    {\"id\": \"%s\", \"what\": ", i ? "," : "", fg->id);
    json_string(j, fg->label);
    fprintf(j, ", \"sql\": ");
    json_string(j, fg->sql);
    fprintf(j, ", \"unit\": \"%s\", \"kafka_log_s\": ", fg->unit);
    json_number(j, fg->k);
    fprintf(j, ", \"native_s\": ");
    json_number(j, fg->n);
    if (fg->k_name) fprintf(j, ", \"columns\": [\"%s\", \"%s\"]", fg->k_name, fg->n_name);
    double ratio = fig_ratio(fg);
    if (fg->goal_kind == G_RATIO_LE && ratio > 0) ratio = 1 / ratio;
    fprintf(j, ", \"ratio\": ");
    json_number(j, ratio);
    fprintf(j, ", \"goal\": ");
    if (fg->goal_kind == G_NONE) fprintf(j, "null");
    else json_string(j, gl);
    fprintf(j, ", \"verdict\": \"%s\", \"same_answers\": %s, \"note\": ", verdict(fg),
            fg->correct < 0 ? "null" : fg->correct ? "true" : "false");
    json_string(j, fg->note);
    fprintf(j, ", \"plan_kafka_log\": ");
    json_string(j, fg->plan_k);
    fprintf(j, ", \"plan_native\": ");
    json_string(j, fg->plan_n);
    fprintf(j, "}");
  }
  fprintf(j,
          "\n  ],\n  \"seek_stats_many_segments\": {\"timestamp\": %" PRId64 ", \"first\": %s, "
          "\"again\": %s}\n}\n",
          stats_ts, stats_first ? stats_first : "null", stats_again ? stats_again : "null");
  fclose(j);

  /* ---- gnuplot data: one bar per ratio figure ---- */
  snprintf(path, sizeof path, "%s/%s.dat", o.out, o.tag);
  FILE *d = fopen(path, "w");
  if (!d) die("%s", path);
  fprintf(d, "# label ratio(native time / kafka_log time, NaN: n/a) goal(NaN: none) "
             "status(1 goal met, 0 missed, 2 no ratio goal, 3 n/a) text\n");
  for (int i = g_nfig - 1; i >= 0; i--) { /* bottom to top */
    figure *fg = &g_fig[i];
    if (!fg->chart) continue;
    double r = fig_ratio(fg);
    const char *v = verdict(fg);
    int status = r <= 0 ? 3 : fg->goal_kind != G_RATIO_GE ? 2 : !strcmp(v, "ok") ? 1 : 0;
    fprintf(d, "\"%s\" ", fg->label);
    if (r > 0) fprintf(d, "%.4f ", r);
    else fprintf(d, "NaN ");
    if (fg->goal_kind == G_RATIO_GE) fprintf(d, "%g ", fg->goal);
    else fprintf(d, "NaN ");
    if (r > 0) fprintf(d, "%d \"%.*fx%s\"\n", status, r < 0.01 ? 4 : r < 0.1 ? 3 : 2, r,
                       fg->correct == 0 ? " WRONG" : "");
    else fprintf(d, "%d \"n/a\"\n", status);
  }
  fclose(d);

  free(stats_first);
  free(stats_again);
  if (!o.keep) rm_rf(data);
  else printf("data kept in %s\n", data);
  return 0;
}
