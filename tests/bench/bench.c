/*
** bench.c - kafka_log against a native SQLite table holding the same records.
**
**   bench [--records N] [--value-size B] [--batch-bytes B] [--segment-bytes B]
**         [--codec-records N] [--codecs none,gzip,...] [--no-codecs]
**         [--small-records N] [--data DIR] [--out DIR] [--tag NAME]
**         [--min-time S] [--quick] [--big] [--keep]
**         [--only point|ts_seek|range|scan|tail|open] [--side kafka_log|native]
**
** --only / --side time one figure of one side and stop (for perf and
** callgrind).
** One run writes a partition directory with the test writer (kwriter: one v2
** batch per append, indexes as Kafka's LogSegment.append writes them) and the
** same records into a native table
**   CREATE TABLE t(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB, value BLOB);
**   CREATE INDEX t_ts ON t(timestamp);
** in a file database, warms both page caches with one full read, then times
** each figure for both sides through the SQLite C API (prepared statements,
** no interpreter in the loop):
**
**   point      SELECT offset,timestamp,key,value ... WHERE offset = ?   (random)
**   ts_seek    100 records at or after a random timestamp
**              kafka_log: WHERE timestamp >= ? LIMIT 100   (offset order)
**              native:    WHERE timestamp >= ? ORDER BY timestamp LIMIT 100
**   range      WHERE offset BETWEEN ? AND ?+9999, every row read
**   scan       SELECT count(*), sum(length(value)) over everything
**   tail       ... ORDER BY offset DESC LIMIT 10
**   open       fresh connection (+ module registration), prepare
**              SELECT * ... WHERE offset = ?, time to the first row; warm
**              page cache and cold (every file evicted with
**              posix_fadvise(DONTNEED) first); also on a small log
**   rss        resident memory, each side in its own freshly exec'd child
**   codecs     full-scan rate of each codec relative to uncompressed
**
** A figure is the median of 3 runs, each repeating the operation for at
** least --min-time seconds (CLOCK_MONOTONIC).  Output: a table on stdout,
** OUT/<tag>.json and OUT/<tag>.dat / <tag>-codecs.dat for bench.gp.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "batch.h"
#include "builder.h"
#include "codec.h"
#include "kwriter.h"

#define BENCH_NAME "bench"
#include "benchutil.h"


/* ---- options ---- */

typedef struct opts {
  long records;             /* records in the main log and table */
  int value_size;           /* bytes per value */
  int batch_bytes;          /* target batch size (producer batch.size) */
  long segment_bytes;       /* segment.bytes of the writer */
  long codec_records;       /* records per codec log */
  const char *codecs;       /* comma-separated codec names, "" = none */
  long small_records;       /* the small log for the open-time comparison */
  const char *data;         /* where the data goes (a fresh subdirectory) */
  const char *out;          /* where the results go */
  const char *tag;          /* result file name stem */
  double min_time;          /* seconds per timed run */
  int keep;                 /* keep the data directory */
  const char *only;         /* profiling: time only this figure, or NULL */
  const char *side;         /* profiling: only this side ("kafka_log", "native") */
} opts;

/* ---- PRNG draws, process status ---- */

static int64_t rnd_below(int64_t n) { return n > 0 ? (int64_t)(rnd() % (uint64_t)n) : 0; }

/* A field of /proc/self/status in kB, or -1. */
static long proc_status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  size_t n = strlen(field);
  long v = -1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, field, n) == 0 && line[n] == ':') {
      v = strtol(line + n + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

/* ---- files ---- */

/* Drop a file (or every file of a directory) from the page cache. */
static void evict(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *de;
    char p[4096];
    while ((de = readdir(d))) {
      if (de->d_name[0] == '.') continue;
      snprintf(p, sizeof p, "%s/%s", path, de->d_name);
      evict(p);
    }
    closedir(d);
    return;
  }
  int fd = open(path, O_RDONLY);
  if (fd < 0) return;
  fdatasync(fd);
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
}


/* ---- the records ---- */

static const char *const g_words[] = {
    "order", "customer", "payment", "shipped", "pending", "invoice", "amount", "currency",
    "EUR",   "USD",      "item",    "quantity", "price", "discount", "region", "warehouse",
    "north", "south",    "east",    "west",    "status", "created", "updated", "priority",
    "low",   "high",     "normal",  "express", "return", "refund",  "account", "session"};

/* Value of record i: JSON-ish text with varying words and numbers, which
** compresses roughly as real event payloads do (2-4x). */
static void make_value(uint8_t *v, int n, int64_t i) {
  int k = snprintf((char *)v, (size_t)n, "{\"id\":%" PRId64 ",\"data\":\"", i);
  if (k >= n) k = n;
  while (k < n) {
    const char *w = g_words[rnd() % (sizeof g_words / sizeof *g_words)];
    char num[24];
    int m = snprintf(num, sizeof num, " %s=%u ", w, (unsigned)(rnd() % 100000));
    for (int j = 0; j < m && k < n; j++) v[k++] = (uint8_t)num[j];
  }
}

#define TS0 INT64_C(1700000000000)

/* Timestamp of record i: one per millisecond, with up to 50 ms of jitter
** (producers' clocks and batching), so not monotonic record to record. */
static int64_t make_ts(int64_t i) { return TS0 + i + (int64_t)(rnd() % 50); }

typedef struct dataset {
  char dir[4096];           /* partition directory */
  char db[4096];            /* native database file, or "" */
  long records;
  int64_t log_bytes, db_bytes;
  int segments;
  double write_s, load_s;   /* kwriter time, native load time */
} dataset;

static void sql_exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) die("%s: %s", sql, err ? err : "?");
}

/* Write n records into dir (codec) and, if dbpath is given, into a native
** table there.  The PRNG is reseeded so every dataset holds the same
** records. */
static void make_dataset(dataset *ds, const char *dir, const char *dbpath, long n, int vsize,
                         int batch_bytes, long segment_bytes, int codec) {
  memset(ds, 0, sizeof *ds);
  snprintf(ds->dir, sizeof ds->dir, "%s", dir);
  if (dbpath) snprintf(ds->db, sizeof ds->db, "%s", dbpath);
  ds->records = n;
  if (mkdir(dir, 0755) != 0) die("mkdir %s: %s", dir, strerror(errno));
  int per_batch = batch_bytes / (vsize + 30);
  if (per_batch < 1) per_batch = 1;
  kw_options wo = {.segment_bytes = segment_bytes, .index_interval = 4096, .base_offset = 0,
                   .codec = codec};
  kw_writer *w = kw_open(dir, &wo);
  if (!w) die("kw_open %s", dir);
  sqlite3 *db = NULL;
  sqlite3_stmt *ins = NULL;
  if (dbpath) {
    unlink(dbpath);
    if (sqlite3_open(dbpath, &db) != SQLITE_OK) die("open %s", dbpath);
    sql_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                 "CREATE TABLE t(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB,"
                 " value BLOB);");
    if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1,?2,?3,?4)", -1, &ins, NULL)) die("prep");
  }
  kl_rec_in *recs = calloc((size_t)per_batch, sizeof *recs);
  uint8_t *vals = malloc((size_t)per_batch * (size_t)vsize);
  char(*keys)[24] = malloc((size_t)per_batch * sizeof *keys);
  if (!recs || !vals || !keys) die("out of memory");
  g_rng = 0x9e3779b97f4a7c15u;
  double tw = 0, tl = 0;
  for (long i = 0; i < n; i += per_batch) {
    int m = (int)(n - i < per_batch ? n - i : per_batch);
    for (int j = 0; j < m; j++) {
      int64_t off = i + j;
      recs[j].timestamp = make_ts(off);
      int kl = snprintf(keys[j], sizeof keys[j], "user-%06u", (unsigned)(rnd() % 1000000));
      recs[j].key = keys[j];
      recs[j].key_len = kl;
      make_value(vals + (size_t)j * (size_t)vsize, vsize, off);
      recs[j].value = vals + (size_t)j * (size_t)vsize;
      recs[j].value_len = vsize;
    }
    double t0 = now();
    if (kw_append(w, NULL, recs, m)) die("kw_append");
    double t1 = now();
    tw += t1 - t0;
    if (db) {
      if (i == 0) sql_exec(db, "BEGIN");
      for (int j = 0; j < m; j++) {
        sqlite3_bind_int64(ins, 1, i + j);
        sqlite3_bind_int64(ins, 2, recs[j].timestamp);
        sqlite3_bind_blob(ins, 3, recs[j].key, recs[j].key_len, SQLITE_STATIC);
        sqlite3_bind_blob(ins, 4, recs[j].value, recs[j].value_len, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE) die("insert: %s", sqlite3_errmsg(db));
        sqlite3_reset(ins);
      }
      tl += now() - t1;
    }
  }
  if (kw_close(w)) die("kw_close");
  if (db) {
    double t0 = now();
    sql_exec(db, "CREATE INDEX t_ts ON t(timestamp); COMMIT;");
    sqlite3_finalize(ins);
    sqlite3_close(db);
    tl += now() - t0;
    struct stat st;
    if (stat(dbpath, &st) == 0) ds->db_bytes = st.st_size;
  }
  free(recs);
  free(vals);
  free(keys);
  ds->write_s = tw;
  ds->load_s = tl;
  ds->log_bytes = dir_bytes(dir, &ds->segments);
}

/* ---- sides ---- */

/* A side of the comparison: its connection and the table expression. */
typedef struct side {
  const char *name;
  sqlite3 *db;
  const char *dir;          /* kafka_log: bound as ?9; native: NULL */
  long records;
  int64_t ts_max;
} side;

/* Prepare sql with "@T" replaced by the side's table expression. */
static sqlite3_stmt *prep(side *s, const char *sql) {
  char buf[1024];
  const char *tab = s->dir ? "kafka_log(?9)" : "t";
  const char *at = strstr(sql, "@T");
  snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - sql), sql, tab, at + 2);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, buf, -1, &st, NULL) != SQLITE_OK) {
    die("prepare (%s): %s\n  %s", s->name, sqlite3_errmsg(s->db), buf);
  }
  if (s->dir) sqlite3_bind_text(st, 9, s->dir, -1, SQLITE_STATIC);
  return st;
}

/* Read every column of the current row (forces materialisation). */
static int64_t touch_row(sqlite3_stmt *st) {
  int64_t acc = 0;
  int nc = sqlite3_column_count(st);
  for (int i = 0; i < nc; i++) {
    if (sqlite3_column_type(st, i) == SQLITE_BLOB) {
      const uint8_t *p = sqlite3_column_blob(st, i);
      int n = sqlite3_column_bytes(st, i);
      acc += n + (n ? p[n - 1] : 0);
    } else {
      acc += sqlite3_column_int64(st, i);
    }
  }
  return acc;
}

static volatile int64_t g_sink;

/* ---- timed operations: each returns the rows it produced ---- */

typedef struct work {
  side *s;
  sqlite3_stmt *st;
  long arg;
} work;

static long op_point(work *w) {
  sqlite3_stmt *st = w->st;
  sqlite3_bind_int64(st, 1, rnd_below(w->s->records));
  long rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    g_sink += touch_row(st);
    rows++;
  }
  sqlite3_reset(st);
  if (rows != 1) die("point lookup (%s): %ld rows", w->s->name, rows);
  return rows;
}

static long op_ts_seek(work *w) {
  sqlite3_stmt *st = w->st;
  sqlite3_bind_int64(st, 1, TS0 + rnd_below(w->s->records - 1000));
  long rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    g_sink += touch_row(st);
    rows++;
  }
  sqlite3_reset(st);
  if (rows != 100) die("timestamp seek (%s): %ld rows", w->s->name, rows);
  return rows;
}

static long op_range(work *w) {
  sqlite3_stmt *st = w->st;
  int64_t lo = rnd_below(w->s->records - w->arg + 1);
  sqlite3_bind_int64(st, 1, lo);
  sqlite3_bind_int64(st, 2, lo + w->arg - 1);
  long rows = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    g_sink += touch_row(st);
    rows++;
  }
  sqlite3_reset(st);
  if (rows != w->arg) die("range (%s): %ld rows", w->s->name, rows);
  return rows;
}

static long op_scan(work *w) {
  sqlite3_stmt *st = w->st;
  if (sqlite3_step(st) != SQLITE_ROW) die("scan (%s): %s", w->s->name, sqlite3_errmsg(w->s->db));
  long n = (long)sqlite3_column_int64(st, 0);
  g_sink += sqlite3_column_int64(st, 1);
  sqlite3_reset(st);
  if (n != w->s->records) die("scan (%s): %ld rows, expected %ld", w->s->name, n, w->s->records);
  return n;
}

static long op_tail(work *w) {
  sqlite3_stmt *st = w->st;
  long rows = 0;
  int64_t expect = w->s->records - 1;
  while (sqlite3_step(st) == SQLITE_ROW) {
    if (sqlite3_column_int64(st, 0) != expect--) die("tail (%s): wrong order", w->s->name);
    g_sink += touch_row(st);
    rows++;
  }
  sqlite3_reset(st);
  if (rows != 10) die("tail (%s): %ld rows", w->s->name, rows);
  return rows;
}

typedef long (*op_fn)(work *w);

typedef struct rate {
  double ops_s;             /* operations per second (median of 3) */
  double rows_s;            /* rows per second (same run) */
} rate;

/* The same figure for both sides, alternating side by side within each of
** the 3 runs, so that a change in machine load hits both sides alike.
** w[i].st == NULL: that side is not measured. */
static void measure_pair(op_fn f, work w[2], double min_time, rate out[2]) {
  double ops[2][3], rows[2][3];
  for (int i = 0; i < 2; i++) {
    if (w[i].st) f(&w[i]); /* warm-up */
  }
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < 2; i++) {
      ops[i][r] = rows[i][r] = 0;
      if (!w[i].st) continue;
      long nops = 0, nrows = 0;
      double t0 = now(), t;
      do {
        nrows += f(&w[i]);
        nops++;
      } while ((t = now()) - t0 < min_time);
      ops[i][r] = (double)nops / (t - t0);
      rows[i][r] = (double)nrows / (t - t0);
    }
  }
  for (int i = 0; i < 2; i++) {
    double o[3] = {ops[i][0], ops[i][1], ops[i][2]};
    qsort(o, 3, sizeof *o, cmp_doubles);
    out[i].ops_s = o[1];
    out[i].rows_s = 0;
    for (int r = 0; r < 3; r++) {
      if (ops[i][r] == o[1]) out[i].rows_s = rows[i][r];
    }
  }
}

/* ---- open to first answer ---- */

/* Seconds from opening a connection to the first row of
** SELECT * ... WHERE offset = ?. */
static double first_answer(const char *dir, const char *dbpath, int64_t off) {
  double t0 = now();
  sqlite3 *db;
  sqlite3_stmt *st;
  if (dir) {
    db = open_kafka();
    if (sqlite3_prepare_v2(db, "SELECT * FROM kafka_log(?1) WHERE offset = ?2", -1, &st, NULL)) {
      die("prepare: %s", sqlite3_errmsg(db));
    }
    sqlite3_bind_text(st, 1, dir, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, off);
  } else {
    db = open_native(dbpath);
    if (sqlite3_prepare_v2(db, "SELECT * FROM t WHERE offset = ?1", -1, &st, NULL)) {
      die("prepare: %s", sqlite3_errmsg(db));
    }
    sqlite3_bind_int64(st, 1, off);
  }
  if (sqlite3_step(st) != SQLITE_ROW) die("first answer: no row (%s)", sqlite3_errmsg(db));
  g_sink += touch_row(st);
  double t = now() - t0;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return t;
}

/* Median seconds over runs; cold: evict the files before each. */
static double first_answer_median(const char *dir, const char *dbpath, int64_t off, int cold,
                                  double min_time) {
  double v[201];
  int n = 0;
  double t0 = now();
  int max = cold ? 7 : 201;
  first_answer(dir, dbpath, off); /* warm-up */
  while (n < max && (n < 5 || now() - t0 < min_time)) {
    if (cold) evict(dir ? dir : dbpath);
    v[n] = first_answer(dir, dbpath, off + n);
    n++;
  }
  qsort(v, (size_t)n, sizeof *v, cmp_doubles);
  return v[n / 2];
}

/* ---- resident memory, in a fresh child per side ---- */

typedef struct rss {
  long base_rss, base_anon;            /* after open (kB) */
  long point_rss, point_anon, point_file; /* after 10000 point lookups */
  long scan_rss, scan_anon, scan_file; /* after a full scan as well */
  long hwm;                            /* VmHWM */
} rss;

static int rss_child(const char *sidename, const char *path, long records) {
  side s = {.name = sidename, .records = records};
  if (!strcmp(sidename, "kafka_log")) {
    s.db = open_kafka();
    s.dir = path;
  } else {
    s.db = open_native(path);
  }
  long base_rss = proc_status_kb("VmRSS"), base_anon = proc_status_kb("RssAnon");
  work w = {&s, prep(&s, "SELECT offset,timestamp,key,value FROM @T WHERE offset = ?1"), 0};
  for (int i = 0; i < 10000; i++) op_point(&w);
  sqlite3_finalize(w.st);
  long p_rss = proc_status_kb("VmRSS"), p_anon = proc_status_kb("RssAnon"),
       p_file = proc_status_kb("RssFile");
  w.st = prep(&s, "SELECT count(*), sum(length(value)) FROM @T");
  op_scan(&w);
  sqlite3_finalize(w.st);
  printf("%ld %ld %ld %ld %ld %ld %ld %ld %ld\n", base_rss, base_anon, p_rss, p_anon, p_file,
         proc_status_kb("VmRSS"), proc_status_kb("RssAnon"), proc_status_kb("RssFile"),
         proc_status_kb("VmHWM"));
  sqlite3_close(s.db);
  return 0;
}

static rss measure_rss(const char *sidename, const char *path, long records) {
  int fd[2];
  rss r = {0};
  if (pipe(fd)) die("pipe");
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    char nrec[32];
    snprintf(nrec, sizeof nrec, "%ld", records);
    execl("/proc/self/exe", "bench", "--rss-child", sidename, path, nrec, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char buf[512] = {0};
  ssize_t k, got = 0;
  while ((k = read(fd[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += k;
  close(fd[0]);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      sscanf(buf, "%ld %ld %ld %ld %ld %ld %ld %ld %ld", &r.base_rss, &r.base_anon, &r.point_rss,
             &r.point_anon, &r.point_file, &r.scan_rss, &r.scan_anon, &r.scan_file,
             &r.hwm) != 9) {
    die("rss child for %s failed", sidename);
  }
  return r;
}

/* ---- results ---- */

typedef struct figure {
  const char *id;
  const char *what;
  const char *unit;
  double kafka, native;     /* raw values */
  int higher_better;
  const char *goal;         /* the goal, or NULL */
} figure;

#define MAX_FIG 32
static figure g_fig[MAX_FIG];
static int g_nfig;

static void add_fig(const char *id, const char *what, const char *unit, double k, double n,
                    int higher_better, const char *goal) {
  if (g_nfig == MAX_FIG) die("too many figures");
  g_fig[g_nfig++] = (figure){id, what, unit, k, n, higher_better, goal};
}

/* How much better kafka_log is (>1 better, <1 worse). */
static double advantage(const figure *f) {
  if (f->kafka <= 0 || f->native <= 0) return 0;
  return f->higher_better ? f->kafka / f->native : f->native / f->kafka;
}

static void fmt_num(char *b, size_t n, double v) {
  if (v >= 1e6) snprintf(b, n, "%.2fM", v / 1e6);
  else if (v >= 1e4) snprintf(b, n, "%.1fk", v / 1e3);
  else if (v >= 100) snprintf(b, n, "%.0f", v);
  else snprintf(b, n, "%.3g", v);
}

static const char *codec_ids[] = {"none", "gzip", "snappy", "lz4", "zstd"};

static int codec_id(const char *name) {
  for (int i = 0; i < 5; i++) {
    if (!strcmp(codec_ids[i], name)) return i;
  }
  die("unknown codec %s", name);
  return -1;
}

typedef struct codec_result {
  const char *name;
  double rows_s;
  int64_t bytes;
} codec_result;

static void usage(void) {
  fprintf(stderr,
          "usage: bench [--records N] [--value-size B] [--batch-bytes B] [--segment-bytes B]\n"
          "             [--codec-records N] [--codecs none,gzip,snappy,lz4,zstd] [--no-codecs]\n"
          "             [--small-records N] [--data DIR] [--out DIR] [--tag NAME]\n"
          "             [--min-time S] [--quick] [--big] [--keep]\n"
          "             [--only point|ts_seek|range|scan|tail|open] [--side kafka_log|native]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--rss-child")) {
    return rss_child(argv[2], argv[3], atol(argv[4]));
  }
  opts o = {.records = 1000000,
            .value_size = 100,
            .batch_bytes = 16384,
            .segment_bytes = 32L << 20,
            .codec_records = -1,
            .codecs = "none,gzip,snappy,lz4,zstd",
            .small_records = 10000,
            .data = NULL,
            .out = "out",
            .tag = "bench",
            .min_time = 1.0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && ++i)
    if (ARG("--records")) o.records = atol(v);
    else if (ARG("--value-size")) o.value_size = atoi(v);
    else if (ARG("--batch-bytes")) o.batch_bytes = atoi(v);
    else if (ARG("--segment-bytes")) o.segment_bytes = atol(v);
    else if (ARG("--codec-records")) o.codec_records = atol(v);
    else if (ARG("--codecs") || ARG("--codec")) o.codecs = v;
    else if (ARG("--small-records")) o.small_records = atol(v);
    else if (ARG("--data")) o.data = v;
    else if (ARG("--out")) o.out = v;
    else if (ARG("--tag")) o.tag = v;
    else if (ARG("--min-time")) o.min_time = atof(v);
    else if (ARG("--only")) o.only = v;
    else if (ARG("--side")) o.side = v;
    else if (!strcmp(a, "--no-codecs")) o.codecs = "";
    else if (!strcmp(a, "--keep")) o.keep = 1;
    else if (!strcmp(a, "--quick")) {
      o.records = 20000;
      o.min_time = 0.1;
      o.small_records = 1000;
      o.segment_bytes = 1L << 20;
    } else if (!strcmp(a, "--big")) {
      o.records = 1000000;
      o.value_size = 1024;
      o.segment_bytes = 128L << 20;
      o.tag = "bench-big";
      o.codecs = "";
    } else {
      usage();
    }
#undef ARG
  }
  if (o.records < 20000 || o.value_size < 16) die("need --records >= 20000, --value-size >= 16");
  if (o.codec_records < 0) o.codec_records = o.records < 200000 ? o.records : 200000;

  char data[4096];
  make_dirs(data, sizeof data, o.data, "bench", o.out);

  struct utsname un;
  uname(&un);
  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  double load0[3] = {0, 0, 0}, load1[3] = {0, 0, 0};
  getloadavg(load0, 3);
  long mem_mb = (long)(sysconf(_SC_PHYS_PAGES) / 1024 * sysconf(_SC_PAGESIZE) / 1024);
  printf("kafkalog bench: %ld records x %d-byte values, batches of ~%d bytes, segments of %ld "
         "bytes\nmachine: %s, %ld CPUs, %ld MiB RAM, %s %s; SQLite %s\ndata in %s\n\n",
         o.records, o.value_size, o.batch_bytes, o.segment_bytes, cpu, ncpu, mem_mb, un.sysname,
         un.release, sqlite3_libversion(), data);
  fflush(stdout);

  /* The main log and table, and the small one for the open-time figure. */
  char dir[4200], dbp[4200], sdir[4200], sdbp[4200];
  snprintf(dir, sizeof dir, "%s/main-0", data);
  snprintf(dbp, sizeof dbp, "%s/main.db", data);
  snprintf(sdir, sizeof sdir, "%s/small-0", data);
  snprintf(sdbp, sizeof sdbp, "%s/small.db", data);
  dataset ds, small;
  make_dataset(&ds, dir, dbp, o.records, o.value_size, o.batch_bytes, o.segment_bytes,
               KL_CODEC_NONE);
  make_dataset(&small, sdir, sdbp, o.small_records, o.value_size, o.batch_bytes, o.segment_bytes,
               KL_CODEC_NONE);
  sync();
  printf("log: %.1f MiB in %d segments (written in %.1f s); native db: %.1f MiB (loaded in "
         "%.1f s)\n\n",
         (double)ds.log_bytes / 1048576, ds.segments, ds.write_s, (double)ds.db_bytes / 1048576,
         ds.load_s);
  fflush(stdout);

  side ks = {.name = "kafka_log", .db = open_kafka(), .dir = dir, .records = o.records};
  side ns = {.name = "native", .db = open_native(dbp), .dir = NULL, .records = o.records};
  side *sides[2] = {&ks, &ns};

  /* Both sides must hold the same data: compare a few rows and the totals. */
  for (int k = 0; k < 200; k++) {
    int64_t off = k == 0 ? 0 : k == 1 ? o.records - 1 : rnd_below(o.records);
    sqlite3_stmt *a = prep(&ks, "SELECT offset,timestamp,key,value FROM @T WHERE offset = ?1");
    sqlite3_stmt *b = prep(&ns, "SELECT offset,timestamp,key,value FROM @T WHERE offset = ?1");
    sqlite3_bind_int64(a, 1, off);
    sqlite3_bind_int64(b, 1, off);
    if (sqlite3_step(a) != SQLITE_ROW || sqlite3_step(b) != SQLITE_ROW) die("check: no row");
    for (int c = 0; c < 4; c++) {
      int na = sqlite3_column_bytes(a, c), nb = sqlite3_column_bytes(b, c);
      const void *pa = sqlite3_column_blob(a, c), *pb = sqlite3_column_blob(b, c);
      if (na != nb || memcmp(pa, pb, (size_t)na)) die("check: offset %" PRId64 " differs", off);
    }
    sqlite3_finalize(a);
    sqlite3_finalize(b);
  }

  /* Warm both caches by one full read. */
  rate r_scan[2], r_point[2], r_seek[2], r_range[2], r_tail[2];
  for (int i = 0; i < 2; i++) {
    work w = {sides[i], prep(sides[i], "SELECT count(*), sum(length(value)) FROM @T"), 0};
    op_scan(&w);
    sqlite3_finalize(w.st);
  }
  memset(r_scan, 0, sizeof r_scan);
  memset(r_point, 0, sizeof r_point);
  memset(r_seek, 0, sizeof r_seek);
  memset(r_range, 0, sizeof r_range);
  memset(r_tail, 0, sizeof r_tail);
#define WANT(fig) (!o.only || !strcmp(o.only, fig))
  struct {
    const char *fig;
    const char *sql[2];     /* kafka_log, native */
    op_fn f;
    long arg;
    rate *res;
  } figs[] = {
      {"point",
       {"SELECT offset,timestamp,key,value FROM @T WHERE offset = ?1",
        "SELECT offset,timestamp,key,value FROM @T WHERE offset = ?1"},
       op_point, 0, r_point},
      {"ts_seek",
       {"SELECT offset,timestamp,key,value FROM @T WHERE timestamp >= ?1 LIMIT 100",
        "SELECT offset,timestamp,key,value FROM @T WHERE timestamp >= ?1 "
        "ORDER BY timestamp LIMIT 100"},
       op_ts_seek, 0, r_seek},
      {"range",
       {"SELECT offset,timestamp,key,value FROM @T WHERE offset BETWEEN ?1 AND ?2",
        "SELECT offset,timestamp,key,value FROM @T WHERE offset BETWEEN ?1 AND ?2"},
       op_range, 10000, r_range},
      {"scan",
       {"SELECT count(*), sum(length(value)) FROM @T",
        "SELECT count(*), sum(length(value)) FROM @T"},
       op_scan, 0, r_scan},
      {"tail",
       {"SELECT offset,timestamp,key,value FROM @T ORDER BY offset DESC LIMIT 10",
        "SELECT offset,timestamp,key,value FROM @T ORDER BY offset DESC LIMIT 10"},
       op_tail, 0, r_tail},
  };
  for (size_t k = 0; k < sizeof figs / sizeof *figs; k++) {
    if (!WANT(figs[k].fig)) continue;
    work w[2];
    for (int i = 0; i < 2; i++) {
      w[i] = (work){sides[i], NULL, figs[k].arg};
      if (!o.side || !strcmp(o.side, sides[i]->name)) w[i].st = prep(sides[i], figs[k].sql[i]);
    }
    measure_pair(figs[k].f, w, o.min_time, figs[k].res);
    for (int i = 0; i < 2; i++) sqlite3_finalize(w[i].st);
    printf("  measured %s\n", figs[k].fig);
    fflush(stdout);
  }
  char *stats = NULL;
  {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ks.db, "SELECT kafka_log_stats()", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      stats = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(ks.db);
  sqlite3_close(ns.db);

  int64_t mid = o.records / 2, smid = o.small_records / 2;
  double open_warm[2] = {0, 0}, open_small[2] = {0, 0}, open_cold[2] = {0, 0},
         open_cold_small[2] = {0, 0};
  if (WANT("open")) {
    for (int i = 0; i < 2; i++) {
      if (o.side && strcmp(o.side, sides[i]->name)) continue;
      const char *kd = i ? NULL : dir, *nd = i ? dbp : NULL;
      const char *skd = i ? NULL : sdir, *snd = i ? sdbp : NULL;
      open_warm[i] = first_answer_median(kd, nd, mid, 0, o.min_time);
      open_small[i] = first_answer_median(skd, snd, smid, 0, o.min_time);
      open_cold[i] = first_answer_median(kd, nd, mid, 1, o.min_time);
      open_cold_small[i] = first_answer_median(skd, snd, smid, 1, o.min_time);
    }
  }
  printf("  measured open to first answer\n");
  fflush(stdout);
  if (o.only || o.side) {
    /* Profiling run: print the timed figures and stop. */
    for (int i = 0; i < 2; i++) {
      printf("%-9s point %.0f/s  ts_seek %.0f/s  range %.0f rows/s  scan %.0f rows/s  tail "
             "%.0f/s\n", sides[i]->name, r_point[i].ops_s, r_seek[i].ops_s, r_range[i].rows_s,
             r_scan[i].rows_s, r_tail[i].ops_s);
    }
    printf("open to first answer, ms: warm %.3f / %.3f, cold %.3f / %.3f; small log: warm %.3f "
           "/ %.3f, cold %.3f / %.3f (kafka_log / native)\n",
           open_warm[0] * 1e3, open_warm[1] * 1e3, open_cold[0] * 1e3, open_cold[1] * 1e3,
           open_small[0] * 1e3, open_small[1] * 1e3, open_cold_small[0] * 1e3,
           open_cold_small[1] * 1e3);
    printf("kafka_log work counters: %s\n", stats ? stats : "?");
    free(stats);
    if (!o.keep) rm_rf(data);
    return 0;
  }
  /* The cold runs evicted the data: read it back before the memory figures. */
  {
    side a = {.name = "kafka_log", .db = open_kafka(), .dir = dir, .records = o.records};
    side b = {.name = "native", .db = open_native(dbp), .records = o.records};
    side *ab[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
      work w = {ab[i], prep(ab[i], "SELECT count(*), sum(length(value)) FROM @T"), 0};
      op_scan(&w);
      sqlite3_finalize(w.st);
      sqlite3_close(ab[i]->db);
    }
  }
  rss m_k = measure_rss("kafka_log", dir, o.records);
  rss m_n = measure_rss("native", dbp, o.records);

  /* Codecs: full scans of logs that differ only in their codec. */
  codec_result cres[5];
  int ncodec = 0;
  if (o.codecs[0]) {
    char list[256];
    snprintf(list, sizeof list, "none,%s", o.codecs);
    int seen[5] = {0};
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
      int c = codec_id(tok);
      if (seen[c]++) continue;
      char cdir[4200];
      snprintf(cdir, sizeof cdir, "%s/codec-%s-0", data, tok);
      dataset cd;
      make_dataset(&cd, cdir, NULL, o.codec_records, o.value_size, o.batch_bytes,
                   o.segment_bytes, c);
      side s = {.name = tok, .db = open_kafka(), .dir = cdir, .records = o.codec_records};
      work w = {&s, prep(&s, "SELECT count(*), sum(length(value)) FROM @T"), 0};
      op_scan(&w);
      work wp[2] = {w, {&s, NULL, 0}};
      rate rp[2];
      measure_pair(op_scan, wp, o.min_time, rp);
      rate rr = rp[0];
      sqlite3_finalize(w.st);
      sqlite3_close(s.db);
      cres[ncodec++] = (codec_result){codec_ids[c], rr.rows_s, cd.log_bytes};
      if (!o.keep) rm_rf(cdir);
    }
    printf("  measured codecs\n\n");
  }

  getloadavg(load1, 3);

  /* ---- the table ---- */
  add_fig("point", "point lookup by offset (random)", "lookups/s", r_point[0].ops_s,
          r_point[1].ops_s, 1, ">= 1");
  add_fig("ts_seek", "seek by timestamp + read 100", "seeks/s", r_seek[0].ops_s, r_seek[1].ops_s,
          1, ">= 1");
  add_fig("range", "range of 10,000 offsets", "rows/s", r_range[0].rows_s, r_range[1].rows_s, 1,
          NULL);
  add_fig("scan", "full scan count(*), sum(length(value))", "rows/s", r_scan[0].rows_s,
          r_scan[1].rows_s, 1, ">= 1");
  add_fig("tail", "tail ORDER BY offset DESC LIMIT 10", "queries/s", r_tail[0].ops_s,
          r_tail[1].ops_s, 1, NULL);
  add_fig("open_warm", "open to first answer (warm)", "ms", open_warm[0] * 1e3,
          open_warm[1] * 1e3, 0, NULL);
  add_fig("open_cold", "open to first answer (cold cache)", "ms", open_cold[0] * 1e3,
          open_cold[1] * 1e3, 0, NULL);
  add_fig("open_warm_small", "  same, small log (warm)", "ms", open_small[0] * 1e3,
          open_small[1] * 1e3, 0, NULL);
  add_fig("open_cold_small", "  same, small log (cold cache)", "ms", open_cold_small[0] * 1e3,
          open_cold_small[1] * 1e3, 0, NULL);
  add_fig("rss_point", "RSS after 10k point lookups", "KiB", (double)m_k.point_rss,
          (double)m_n.point_rss, 0, NULL);
  add_fig("anon_point", "  of which anonymous (heap)", "KiB", (double)m_k.point_anon,
          (double)m_n.point_anon, 0, NULL);
  add_fig("rss_scan", "RSS after a full scan too", "KiB", (double)m_k.scan_rss,
          (double)m_n.scan_rss, 0, NULL);
  add_fig("anon_scan", "  of which anonymous (heap)", "KiB", (double)m_k.scan_anon,
          (double)m_n.scan_anon, 0, NULL);
  add_fig("file_scan", "  of which file-backed (page cache)", "KiB", (double)m_k.scan_file,
          (double)m_n.scan_file, 0, NULL);
  add_fig("hwm", "peak RSS (VmHWM)", "KiB", (double)m_k.hwm, (double)m_n.hwm, 0, NULL);
  add_fig("disk", "bytes on disk", "MiB", (double)ds.log_bytes / 1048576,
          (double)ds.db_bytes / 1048576, 0, NULL);

  char a[32], b[32];
  printf("%-42s %-10s %12s %12s %8s  %s\n", "figure", "unit", "kafka_log", "native",
         "k/n", "advantage");
  for (int i = 0; i < g_nfig; i++) {
    figure *fg = &g_fig[i];
    fmt_num(a, sizeof a, fg->kafka);
    fmt_num(b, sizeof b, fg->native);
    printf("%-42s %-10s %12s %12s %8.3f  %6.2fx %s\n", fg->what, fg->unit, a, b,
           fg->native > 0 ? fg->kafka / fg->native : 0, advantage(fg),
           fg->higher_better ? "(higher is better)" : "(lower is better)");
  }
  printf("%-42s %-10s %12s %12.0f\n", "ingest (INSERT)", "rows/s", "n/a",
         (double)o.records / ds.load_s);
  if (ncodec) {
    printf("\nfull scan by codec (%ld records each, kafka_log):\n", o.codec_records);
    for (int i = 0; i < ncodec; i++) {
      fmt_num(a, sizeof a, cres[i].rows_s);
      printf("  %-8s %10s rows/s  %5.2f x uncompressed   %7.1f MiB on disk\n", cres[i].name, a,
             cres[i].rows_s / cres[0].rows_s, (double)cres[i].bytes / 1048576);
    }
  }
  printf("\nkafka_log work counters of the timed queries: %s\n", stats ? stats : "?");
  printf("load average (1 min) at start %.2f, at end %.2f on %ld CPUs (other load skews "
         "absolute figures; both sides alternate within each run)\n",
         load0[0], load1[0], ncpu);

  /* ---- JSON ---- */
  char path[4400];
  snprintf(path, sizeof path, "%s/%s.json", o.out, o.tag);
  FILE *j = fopen(path, "w");
  if (!j) die("%s: %s", path, strerror(errno));
  fprintf(j,
          "{\n  \"machine\": {\"cpu\": \"%s\", \"cpus\": %ld, \"ram_mib\": %ld, \"kernel\": \"%s "
          "%s\", \"sqlite\": \"%s\", \"loadavg_start\": %.2f, \"loadavg_end\": %.2f},\n",
          cpu, ncpu, mem_mb, un.sysname, un.release, sqlite3_libversion(), load0[0], load1[0]);
  fprintf(j,
          "  \"config\": {\"records\": %ld, \"value_size\": %d, \"batch_bytes\": %d, "
          "\"segment_bytes\": %ld, \"index_interval\": 4096, \"segments\": %d, \"log_bytes\": "
          "%" PRId64 ", \"db_bytes\": %" PRId64 ", \"small_records\": %ld, \"codec_records\": "
          "%ld, \"min_time_s\": %g, \"runs\": 3, \"statistic\": \"median\"},\n",
          o.records, o.value_size, o.batch_bytes, o.segment_bytes, ds.segments, ds.log_bytes,
          ds.db_bytes, o.small_records, o.codec_records, o.min_time);
  fprintf(j, "  \"figures\": {\n");
  for (int i = 0; i < g_nfig; i++) {
    figure *fg = &g_fig[i];
    fprintf(j,
            "    \"%s\": {\"what\": \"%s\", \"unit\": \"%s\", \"kafka_log\": %.6g, \"native\": "
            "%.6g, \"ratio\": %.4f, \"advantage\": %.4f, \"higher_is_better\": %s}%s\n",
            fg->id, fg->what[0] == ' ' ? fg->what + 2 : fg->what, fg->unit, fg->kafka,
            fg->native, fg->native > 0 ? fg->kafka / fg->native : 0, advantage(fg),
            fg->higher_better ? "true" : "false", ",");
  }
  fprintf(j,
          "    \"ingest\": {\"what\": \"INSERT rate\", \"unit\": \"rows/s\", \"kafka_log\": "
          "null, \"native\": %.6g, \"note\": \"kafka_log INSERT not implemented yet\"}\n  },\n",
          (double)o.records / ds.load_s);
  fprintf(j, "  \"codecs\": [");
  for (int i = 0; i < ncodec; i++) {
    fprintf(j, "%s\n    {\"codec\": \"%s\", \"rows_s\": %.6g, \"relative\": %.4f, \"bytes\": "
               "%" PRId64 "}",
            i ? "," : "", cres[i].name, cres[i].rows_s, cres[i].rows_s / cres[0].rows_s,
            cres[i].bytes);
  }
  fprintf(j, "%s],\n  \"kafka_log_stats\": %s\n}\n", ncodec ? "\n  " : "", stats ? stats : "null");
  fclose(j);

  /* gnuplot data: speed advantage per figure, and the codecs. */
  snprintf(path, sizeof path, "%s/%s.dat", o.out, o.tag);
  FILE *d = fopen(path, "w");
  if (!d) die("%s", path);
  fprintf(d, "# label advantage(kafka_log over native; >1 = kafka_log better)\n");
  const char *plot_ids[] = {"point", "ts_seek", "range", "scan", "tail", "open_warm",
                            "open_cold"};
  const char *plot_lbl[] = {"point lookup", "ts seek+100", "range 10k", "full scan", "tail 10",
                            "open (warm)", "open (cold)"};
  for (size_t p = 0; p < sizeof plot_ids / sizeof *plot_ids; p++) {
    for (int i = 0; i < g_nfig; i++) {
      if (!strcmp(g_fig[i].id, plot_ids[p])) {
        fprintf(d, "\"%s\" %.4f\n", plot_lbl[p], advantage(&g_fig[i]));
      }
    }
  }
  fclose(d);
  if (ncodec) {
    snprintf(path, sizeof path, "%s/%s-codecs.dat", o.out, o.tag);
    d = fopen(path, "w");
    if (!d) die("%s", path);
    fprintf(d, "# codec relative_scan_rate rows_per_s\n");
    for (int i = 0; i < ncodec; i++) {
      fprintf(d, "%s %.4f %.0f\n", cres[i].name, cres[i].rows_s / cres[0].rows_s,
              cres[i].rows_s);
    }
    fclose(d);
  }
  free(stats);
  if (!o.keep) rm_rf(data);
  else printf("data kept in %s\n", data);
  return 0;
}
