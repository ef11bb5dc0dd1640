/*
** broker.c - a broker-sized log directory: kafka_log over thousands of
** partitions against a native SQLite table holding the same records.
**
**   broker [--topics N] [--partitions N] [--records-min N] [--records-max N]
**          [--segment-bytes B] [--fresh N] [--min-time S] [--nofile N]
**          [--probe-every N] [--data DIR] [--out DIR] [--quick] [--keep]
**
** Data: one log directory of --topics (40) x --partitions (50) partition
** directories named topic-TT-P (a hyphen inside the topic, as in
** order-events-3), written by kwriter: each partition holds between
** --records-min (1,000) and --records-max (5,000) records (drawn per
** partition), batches of 50 uncompressed records, segments of
** --segment-bytes (48 KiB: 2 to 6 segments a partition), index interval
** 4096; null keys, values of 20-40 bytes; timestamps spread evenly over one
** day in every partition with +-2 s of jitter, so a time window crosses
** every partition.  The three offset checkpoints a broker writes are there
** too (log start 0; high watermark and recovery point at the log end).
** The native twin, a file database:
**   CREATE TABLE t(topic TEXT, partition INTEGER, offset INTEGER,
**                  timestamp INTEGER, value BLOB,
**                  PRIMARY KEY(topic, partition, offset)) WITHOUT ROWID;
**   CREATE INDEX t_ts ON t(timestamp);
** Both are warmed by one full read before anything is timed.
**
** Figures (kafka_log side: the table-valued form with the log directory
** bound as ?1; the native side: the same on t):
**   1 listing     SELECT count(*) FROM kafka_partitions(?1), and the same
**                 with the log end offsets, segments, bytes and last
**                 timestamps (which open partitions), when the function
**                 exists (else n/a); always, a stand-in that touches every
**                 partition: count(DISTINCT topic || '-' || partition) WHERE
**                 offset = 0.  First on a fresh connection and repeated.
**   2 lookup      value WHERE topic = ? AND partition = ? AND offset = ?,
**                 random partition and offset: on --fresh (50) fresh
**                 connections each (open, register, prepare, step, close;
**                 the median), and repeated on one connection (the median
**                 of single lookups timed one by one), over all partitions
**                 and within one partition.
**   3 full scan   count(*), sum(length(value)) over every partition: time
**                 and rows/s; in a separate run the peak of open descriptors
**                 (/proc/self/fd) and of memory mappings (/proc/self/maps
**                 lines), sampled from a progress handler every
**                 --probe-every (2,000) VM instructions and before and after
**                 (at the peak, the descriptors by kind: .log, .index,
**                 .timeindex, directories, other);
**                 then the same scan with RLIMIT_NOFILE lowered to --nofile
**                 (256), which must still finish with the same answer (the
**                 exit status is 1 when it does not).  The same counts for
**                 the window, the offset-0 listing and kafka_partitions.
**   4 window      count(*) WHERE timestamp >= ?2 AND timestamp < ?3, a window
**                 of 1% of the day at random (native: the index on
**                 timestamp), repeated and first on a fresh connection.
** Answers are compared between the sides before timing (a difference is
** WRONG).  Repeated figures: median of 3 runs of at least --min-time seconds
** each, the sides alternating.  Ratio = native time / kafka_log time (>1:
** kafka_log faster).  Goals, with a verdict: 2 the first lookup under
** 0.5 ms; 4 the window at most 3x (repeated) and 10x (first) the native
** time.  Output: a table on stdout and OUT/broker.json.
*/
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <sqlite3.h>

#include "batch.h"
#include "codec.h"
#include "kwriter.h"

#define BENCH_NAME "broker"
#include "benchutil.h"

#define NELEM(a) (sizeof(a) / sizeof *(a))
#define TS0 INT64_C(1732924800000) /* 2024-11-30 00:00 UTC */
#define SPAN_MS INT64_C(86400000)  /* one day in every partition */
#define JITTER_MS 2000
#define PER_BATCH 50
#define VALUE_MAX 64

typedef struct opts {
  int topics, partitions;
  long rmin, rmax;
  long segment_bytes;
  int fresh;
  double min_time;
  int nofile;
  int probe_every;
  const char *data, *out;
  int keep;
} opts;

static volatile int64_t g_sink; /* keeps answers alive */

/* Record contents from a generator of their own, seeded by what they
** belong to, so that the log and the table hold the same records. */

static long part_records(const opts *o, int gi) {
  return o->rmin + (long)(mix((uint64_t)gi * 7919 + 1) % (uint64_t)(o->rmax - o->rmin + 1));
}

static void topic_name(char *b, size_t n, int t) { snprintf(b, n, "topic-%02d", t); }

static int64_t rec_ts(int64_t off, long n, int gi) {
  uint64_t s = mix(((uint64_t)gi << 32) ^ (uint64_t)off);
  int64_t ts = TS0 + off * SPAN_MS / n + (int64_t)(s % (2 * JITTER_MS + 1)) - JITTER_MS;
  return ts < 0 ? 0 : ts;
}

static int rec_value(char *v, int64_t off, int gi) {
  uint64_t s = mix(((uint64_t)gi << 32) ^ (uint64_t)off ^ UINT64_C(0xabcdef));
  int len = 20 + (int)(s % 21);
  int n = snprintf(v, VALUE_MAX, "p%d-o%" PRId64 "-", gi, off);
  while (n < len) {
    s = mix(s);
    v[n++] = (char)('a' + s % 26);
  }
  return len;
}

/* ---- writing the log directory and the native table ---- */

typedef struct dataset {
  char logdir[3200], db[3200];
  long parts;
  int64_t records;
  long segments;
  int64_t log_bytes, db_bytes;
  double write_s;
  long *nrec;               /* records of each partition, by global index */
} dataset;

static void write_checkpoint(const char *logdir, const char *name, const opts *o,
                             const long *nrec, int at_end) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", logdir, name);
  FILE *f = fopen(path, "w");
  if (!f) die("%s: %s", path, strerror(errno));
  fprintf(f, "0\n%d\n", o->topics * o->partitions);
  for (int t = 0; t < o->topics; t++) {
    char topic[32];
    topic_name(topic, sizeof topic, t);
    for (int p = 0; p < o->partitions; p++) {
      fprintf(f, "%s %d %ld\n", topic, p, at_end ? nrec[t * o->partitions + p] : 0L);
    }
  }
  if (fclose(f)) die("%s: %s", path, strerror(errno));
}

static void write_data(dataset *ds, const opts *o, const char *data) {
  snprintf(ds->logdir, sizeof ds->logdir, "%s/logs", data);
  snprintf(ds->db, sizeof ds->db, "%s/native.db", data);
  if (mkdir(ds->logdir, 0755) != 0) die("mkdir %s: %s", ds->logdir, strerror(errno));
  ds->parts = (long)o->topics * o->partitions;
  ds->nrec = calloc((size_t)ds->parts, sizeof *ds->nrec);
  if (!ds->nrec) die("out of memory");
  sqlite3 *db;
  if (sqlite3_open(ds->db, &db) != SQLITE_OK) die("open %s", ds->db);
  exec_or_die(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
                  "CREATE TABLE t(topic TEXT, partition INTEGER, offset INTEGER, timestamp INTEGER,"
                  " value BLOB, PRIMARY KEY(topic, partition, offset)) WITHOUT ROWID;");
  sqlite3_stmt *ins;
  if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1,?2,?3,?4,?5)", -1, &ins, NULL)) {
    die("prepare: %s", sqlite3_errmsg(db));
  }
  static char vals[PER_BATCH][VALUE_MAX];
  kl_rec_in in[PER_BATCH];
  double t0 = now();
  for (int t = 0; t < o->topics; t++) {
    char topic[32];
    topic_name(topic, sizeof topic, t);
    for (int p = 0; p < o->partitions; p++) {
      int gi = t * o->partitions + p;
      long n = part_records(o, gi);
      ds->nrec[gi] = n;
      char dir[3600];
      snprintf(dir, sizeof dir, "%s/%s-%d", ds->logdir, topic, p);
      if (mkdir(dir, 0755) != 0) die("mkdir %s: %s", dir, strerror(errno));
      kw_options wo = {.segment_bytes = o->segment_bytes, .index_interval = 4096,
                       .base_offset = 0, .codec = KL_CODEC_NONE};
      kw_writer *w = kw_open(dir, &wo);
      if (!w) die("kw_open %s", dir);
      sqlite3_bind_text(ins, 1, topic, -1, SQLITE_STATIC);
      sqlite3_bind_int(ins, 2, p);
      for (long off = 0; off < n;) {
        int m = 0;
        for (; m < PER_BATCH && off + m < n; m++) {
          int64_t o2 = off + m;
          int len = rec_value(vals[m], o2, gi);
          in[m] = (kl_rec_in){rec_ts(o2, n, gi), NULL, -1, vals[m], len, NULL, 0};
          sqlite3_bind_int64(ins, 3, o2);
          sqlite3_bind_int64(ins, 4, in[m].timestamp);
          sqlite3_bind_blob(ins, 5, vals[m], len, SQLITE_STATIC);
          if (sqlite3_step(ins) != SQLITE_DONE) die("insert: %s", sqlite3_errmsg(db));
          sqlite3_reset(ins);
        }
        kl_batch_spec spec = {.leader_epoch = 0, .codec = KL_CODEC_NONE, .producer_id = -1,
                              .producer_epoch = -1, .base_sequence = -1};
        if (kw_append(w, &spec, in, m)) die("kw_append %s", dir);
        off += m;
      }
      if (kw_close(w)) die("kw_close %s", dir);
      int segs;
      ds->log_bytes += dir_bytes(dir, &segs);
      ds->segments += segs;
      ds->records += n;
    }
  }
  sqlite3_finalize(ins);
  exec_or_die(db, "CREATE INDEX t_ts ON t(timestamp); COMMIT;");
  sqlite3_close(db);
  write_checkpoint(ds->logdir, "log-start-offset-checkpoint", o, ds->nrec, 0);
  write_checkpoint(ds->logdir, "replication-offset-checkpoint", o, ds->nrec, 1);
  write_checkpoint(ds->logdir, "recovery-point-offset-checkpoint", o, ds->nrec, 1);
  ds->write_s = now() - t0;
  struct stat st;
  ds->db_bytes = stat(ds->db, &st) == 0 ? st.st_size : 0;
}

/* ---- descriptors and mappings ---- */

/* Open descriptors, not counting the one that lists them; -1 when that
** cannot be opened (the limit reached). */
static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] != '.') n++;
  }
  closedir(d);
  return n - 1;
}

/* What the open descriptors are, by the file's name: .log, .index,
** .timeindex, directories and the rest (k[0..4]). */
enum { FD_LOG, FD_INDEX, FD_TIMEINDEX, FD_DIR, FD_OTHER, FD_KINDS };

static void classify_fds(int k[FD_KINDS]) {
  memset(k, 0, FD_KINDS * sizeof *k);
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent *de;
  char link[300], target[4096];
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || atoi(de->d_name) == dirfd(d)) continue;
    snprintf(link, sizeof link, "/proc/self/fd/%s", de->d_name);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0) continue;
    target[n] = 0;
    size_t len = (size_t)n;
    struct stat st;
    if (len > 4 && !strcmp(target + len - 4, ".log")) k[FD_LOG]++;
    else if (len > 10 && !strcmp(target + len - 10, ".timeindex")) k[FD_TIMEINDEX]++;
    else if (len > 6 && !strcmp(target + len - 6, ".index")) k[FD_INDEX]++;
    else if (stat(target, &st) == 0 && S_ISDIR(st.st_mode)) k[FD_DIR]++;
    else k[FD_OTHER]++;
  }
  closedir(d);
}

static int count_maps(void) {
  FILE *f = fopen("/proc/self/maps", "r");
  if (!f) return -1;
  char buf[8192];
  size_t r;
  int n = 0;
  while ((r = fread(buf, 1, sizeof buf, f)) > 0) {
    for (size_t i = 0; i < r; i++) n += buf[i] == '\n';
  }
  fclose(f);
  return n;
}

typedef struct probe {
  int fd_before, maps_before;
  int fd_peak, maps_peak;
  int fd_after, maps_after;   /* the statement done, connection still open */
  int fd_closed, maps_closed; /* the connection closed */
  long samples, missed;       /* missed: no descriptor left to look */
  int kinds[FD_KINDS];        /* the descriptors at the peak, by kind */
} probe;

static int probe_cb(void *arg) {
  probe *p = arg;
  int f = count_fds(), m = count_maps();
  p->samples++;
  if (f < 0 || m < 0) p->missed++;
  if (f > p->fd_peak) {
    p->fd_peak = f;
    classify_fds(p->kinds);
  }
  if (m > p->maps_peak) p->maps_peak = m;
  return 0;
}

/* ---- statements ---- */

typedef struct answer {
  int64_t a, b;             /* the first two columns (a value: its length and hash) */
  int rows;
  int ok;
  char err[256];
} answer;

static uint64_t hash_bytes(const void *p, int n) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (int i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * UINT64_C(0x100000001b3);
  return h;
}

/* Bind the parameters (int64s; ?1 the log directory on the kafka_log
** side, so kafka's ints start at ?2), run, read the answer. */
static answer run_stmt(sqlite3 *db, sqlite3_stmt *st, const char *logdir, const int64_t *p,
                       int np, const char *topic) {
  answer a = {0};
  int base = 1;
  if (logdir) {
    sqlite3_bind_text(st, 1, logdir, -1, SQLITE_STATIC);
    base = 2;
  }
  int k = base;
  if (topic) sqlite3_bind_text(st, k++, topic, -1, SQLITE_STATIC);
  for (int i = 0; i < np; i++) sqlite3_bind_int64(st, k++, p[i]);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    a.rows++;
    for (int c = 0; c < sqlite3_column_count(st) && c < 2; c++) {
      int64_t v;
      if (sqlite3_column_type(st, c) == SQLITE_BLOB) {
        const void *b = sqlite3_column_blob(st, c);
        int n = sqlite3_column_bytes(st, c);
        v = (int64_t)(hash_bytes(b, n) >> 1) ^ n;
      } else {
        v = sqlite3_column_int64(st, c);
      }
      if (c == 0) a.a += v;
      else a.b += v;
    }
  }
  a.ok = rc == SQLITE_DONE;
  if (!a.ok) snprintf(a.err, sizeof a.err, "%s", sqlite3_errmsg(db));
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  g_sink += a.a + a.b;
  return a;
}

static int same(const answer *x, const answer *y) {
  return x->ok && y->ok && x->rows == y->rows && x->a == y->a && x->b == y->b;
}

static sqlite3_stmt *prep(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return NULL;
  return st;
}

static sqlite3_stmt *prep_or_die(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = prep(db, sql);
  if (!st) die("prepare %s: %s", sql, sqlite3_errmsg(db));
  return st;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_doubles);
  return n ? v[n / 2] : -1;
}

/* ---- figures ---- */

typedef struct figure {
  char id[32];
  char label[80];
  char sql_k[300], sql_n[300];
  const char *unit;
  double k, n;              /* seconds per unit, -1: n/a */
  double per;               /* rows per unit, for the rates (0: none) */
  int correct;              /* 1 same answers, 0 different, -1 not compared */
  int goal_kind;            /* G_* */
  double goal;
  char note[640];
} figure;

/* Goals: none; kafka_log's time below goal seconds; kafka_log at most goal
** times slower than the native table. */
enum { G_NONE, G_KAFKA_LT, G_SLOWER_LE };

#define MAX_FIG 16
static figure g_fig[MAX_FIG];
static int g_nfig;

static figure *add_fig(const char *id, const char *label, const char *sk, const char *sn,
                       const char *unit) {
  if (g_nfig == MAX_FIG) die("too many figures");
  figure *f = &g_fig[g_nfig++];
  memset(f, 0, sizeof *f);
  snprintf(f->id, sizeof f->id, "%s", id);
  snprintf(f->label, sizeof f->label, "%s", label);
  snprintf(f->sql_k, sizeof f->sql_k, "%s", sk ? sk : "");
  snprintf(f->sql_n, sizeof f->sql_n, "%s", sn ? sn : "");
  f->unit = unit;
  f->k = f->n = -1;
  f->correct = -1;
  return f;
}

static double ratio(const figure *f) { return f->k > 0 && f->n > 0 ? f->n / f->k : -1; }

static void set_goal(figure *f, int kind, double goal) {
  f->goal_kind = kind;
  f->goal = goal;
}

/* "ok", "MISS", "n/a", "WRONG" or "" (no goal). */
static const char *verdict(const figure *f) {
  if (f->goal_kind == G_NONE) return f->correct == 0 ? "WRONG" : "";
  if (f->k < 0) return "n/a";
  if (f->correct == 0) return "WRONG";
  if (f->goal_kind == G_KAFKA_LT) return f->k < f->goal ? "ok" : "MISS";
  return f->n > 0 && f->k / f->n <= f->goal ? "ok" : "MISS";
}

static void goal_text(const figure *f, char *b, size_t n) {
  if (f->goal_kind == G_KAFKA_LT) snprintf(b, n, "< %g ms", f->goal * 1e3);
  else if (f->goal_kind == G_SLOWER_LE) snprintf(b, n, "<= %gx", f->goal);
  else snprintf(b, n, "-");
}

static void fmt_time(char *b, size_t n, double s) {
  if (s < 0) snprintf(b, n, "n/a");
  else if (s < 1e-3) snprintf(b, n, "%.2f us", s * 1e6);
  else if (s < 1) snprintf(b, n, "%.2f ms", s * 1e3);
  else snprintf(b, n, "%.2f s", s);
}

static void fmt_rate(char *b, size_t n, double s, double per) {
  double r = s > 0 ? per / s : 0;
  if (s <= 0 || per <= 0) b[0] = 0;
  else if (r >= 1e6) snprintf(b, n, "%.2fM", r / 1e6);
  else if (r >= 1e3) snprintf(b, n, "%.1fk", r / 1e3);
  else snprintf(b, n, "%.1f", r);
}

/* ---- the two sides ---- */

typedef struct bench {
  const opts *o;
  dataset *ds;
  sqlite3 *kdb, *ndb;       /* the warm connections */
} bench;

/* A random record: its partition (topic, partition) and offset. */
typedef struct pick {
  char topic[32];
  int partition;
  int64_t offset;
} pick;

static pick pick_rec(const bench *b, int only_gi) {
  pick k;
  int gi = only_gi >= 0 ? only_gi : (int)(rnd() % (uint64_t)b->ds->parts);
  topic_name(k.topic, sizeof k.topic, gi / b->o->partitions);
  k.partition = gi % b->o->partitions;
  k.offset = (int64_t)(rnd() % (uint64_t)b->ds->nrec[gi]);
  return k;
}

/* A one-day window of 1% at random. */
static void pick_window(int64_t w[2]) {
  int64_t len = SPAN_MS / 100;
  w[0] = TS0 + (int64_t)(rnd() % (uint64_t)(SPAN_MS - len));
  w[1] = w[0] + len;
}

static const char *const SQL_LOOKUP_K =
    "SELECT value FROM kafka_log(?1) WHERE topic = ?2 AND partition = ?3 AND offset = ?4";
static const char *const SQL_LOOKUP_N =
    "SELECT value FROM t WHERE topic = ?1 AND partition = ?2 AND offset = ?3";
static const char *const SQL_SCAN_K = "SELECT count(*), sum(length(value)) FROM kafka_log(?1)";
static const char *const SQL_SCAN_N = "SELECT count(*), sum(length(value)) FROM t";
static const char *const SQL_WIN_K =
    "SELECT count(*) FROM kafka_log(?1) WHERE timestamp >= ?2 AND timestamp < ?3";
static const char *const SQL_WIN_N =
    "SELECT count(*) FROM t WHERE timestamp >= ?1 AND timestamp < ?2";
static const char *const SQL_LIST_P = "SELECT count(*) FROM kafka_partitions(?1)";
static const char *const SQL_LIST_PA =
    "SELECT count(*), sum(log_end_offset), sum(segments), sum(bytes), max(last_timestamp) "
    "FROM kafka_partitions(?1)";
static const char *const SQL_LIST_L =
    "SELECT count(DISTINCT topic || '-' || partition) FROM kafka_log(?1) WHERE offset = 0";

/* One execution on either side.  kind: 'l' lookup, 's' scan, 'w' window,
** 'p'/'q' listing.  fresh: open, prepare, run, close (a kafka_log
** connection registers the module as it opens). */
typedef struct side {
  int kafka;
  int fresh;
  sqlite3 *db;
  sqlite3_stmt *st;
  const char *sql;
} side;

static answer side_run(bench *b, side *s, char kind, const pick *k, const int64_t *w) {
  sqlite3 *db = s->db;
  sqlite3_stmt *st = s->st;
  answer a = {0};
  if (s->fresh) {
    db = s->kafka ? open_kafka() : open_native(b->ds->db);
    st = prep(db, s->sql);
    if (!st) {
      snprintf(a.err, sizeof a.err, "%s", sqlite3_errmsg(db));
      sqlite3_close(db);
      return a;
    }
  }
  const char *ld = s->kafka ? b->ds->logdir : NULL;
  switch (kind) {
  case 'l': {
    int64_t p[2] = {k->partition, k->offset};
    a = run_stmt(db, st, ld, p, 2, k->topic);
    break;
  }
  case 'w': a = run_stmt(db, st, ld, w, 2, NULL); break;
  default: a = run_stmt(db, st, ld, NULL, 0, NULL); break;
  }
  if (s->fresh) {
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  return a;
}

/* Seconds per execution of each side: median of 3 runs of at least
** min_time, the sides alternating (n sides, those with db == NULL and not
** fresh skipped). */
static void measure(bench *b, side *s, int n, char kind, int only_gi, double out[]) {
  double v[4][3];
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < n; i++) {
      v[i][r] = -1;
      if (!s[i].fresh && !s[i].st) continue;
      long reps = 0;
      double t0 = now(), t;
      do {
        pick k = pick_rec(b, only_gi);
        int64_t w[2];
        pick_window(w);
        answer a = side_run(b, &s[i], kind, &k, w);
        if (!a.ok) die("%s: %s", s[i].sql, a.err);
        reps++;
      } while ((t = now()) - t0 < b->o->min_time);
      v[i][r] = (t - t0) / (double)reps;
    }
  }
  for (int i = 0; i < n; i++) out[i] = v[i][0] < 0 ? -1 : median(v[i], 3);
}

/* Single executions timed one by one, the sides alternating: the median
** of each over reps executions (fresh connections, or repeated lookups). */
static void measure_each(bench *b, side *s, int n, char kind, int only_gi, long reps,
                         double out[]) {
  double *v[4];
  for (int i = 0; i < n; i++) {
    v[i] = malloc((size_t)reps * sizeof *v[i]);
    if (!v[i]) die("out of memory");
  }
  for (long r = 0; r < reps; r++) {
    pick k = pick_rec(b, only_gi);
    int64_t w[2];
    pick_window(w);
    for (int i = 0; i < n; i++) {
      double t0 = now();
      answer a = side_run(b, &s[i], kind, &k, w);
      v[i][r] = now() - t0;
      if (!a.ok) die("%s: %s", s[i].sql, a.err);
    }
  }
  for (int i = 0; i < n; i++) {
    out[i] = median(v[i], (int)reps);
    free(v[i]);
  }
}

/* Compare the sides' answers for a few random parameters. */
static int compare(bench *b, char kind, int reps, char *note, size_t nn) {
  side k = {1, 0, b->kdb, NULL, NULL}, s = {0, 0, b->ndb, NULL, NULL};
  const char *sk = kind == 'l' ? SQL_LOOKUP_K : kind == 's' ? SQL_SCAN_K : SQL_WIN_K;
  const char *sn = kind == 'l' ? SQL_LOOKUP_N : kind == 's' ? SQL_SCAN_N : SQL_WIN_N;
  k.st = prep_or_die(b->kdb, sk);
  s.st = prep_or_die(b->ndb, sn);
  int res = 1;
  for (int r = 0; r < reps && res; r++) {
    pick p = pick_rec(b, -1);
    int64_t w[2];
    pick_window(w);
    answer x = side_run(b, &k, kind, &p, w), y = side_run(b, &s, kind, &p, w);
    if (!same(&x, &y)) {
      snprintf(note, nn, "different answers: kafka_log %d rows %" PRId64 " %" PRId64 " %.200s, "
               "native %d rows %" PRId64 " %" PRId64, x.rows, x.a, x.b, x.err, y.rows, y.a, y.b);
      res = 0;
    }
  }
  sqlite3_finalize(k.st);
  sqlite3_finalize(s.st);
  return res;
}

/* One statement on a fresh connection with the progress handler sampling
** (w: the window's bounds, or NULL); the answer in *a.  Run with no other
** kafka_log connection open, so that what is counted is this one's. */
static void probed_run(bench *b, const char *sql, const int64_t *w, probe *p, answer *a) {
  memset(p, 0, sizeof *p);
  sqlite3 *db = open_kafka();
  sqlite3_stmt *st = prep_or_die(db, sql);
  p->fd_before = p->fd_peak = count_fds();
  classify_fds(p->kinds);
  p->maps_before = p->maps_peak = count_maps();
  sqlite3_progress_handler(db, b->o->probe_every, probe_cb, p);
  *a = run_stmt(db, st, b->ds->logdir, w, w ? 2 : 0, NULL);
  sqlite3_progress_handler(db, 0, NULL, NULL);
  p->fd_after = count_fds();
  p->maps_after = count_maps();
  if (p->fd_after > p->fd_peak) {
    p->fd_peak = p->fd_after;
    classify_fds(p->kinds);
  }
  if (p->maps_after > p->maps_peak) p->maps_peak = p->maps_after;
  sqlite3_finalize(st);
  sqlite3_close(db);
  p->fd_closed = count_fds();
  p->maps_closed = count_maps();
}

static void print_probe(const char *what, const probe *p) {
  printf("  %-44s fds %4d before, %4d peak, %4d after, %4d closed; maps %4d / %4d / %4d / %4d; "
         "%ld samples%s\n",
         what, p->fd_before, p->fd_peak, p->fd_after, p->fd_closed, p->maps_before,
         p->maps_peak, p->maps_after, p->maps_closed, p->samples,
         p->missed ? " (some missed: no descriptor left)" : "");
  printf("  %-44s at the peak: %d .log, %d .index, %d .timeindex, %d directories, %d other\n",
         "", p->kinds[FD_LOG], p->kinds[FD_INDEX], p->kinds[FD_TIMEINDEX], p->kinds[FD_DIR],
         p->kinds[FD_OTHER]);
}

static void json_probe(FILE *j, const char *name, const probe *p, int last) {
  fprintf(j,
          "    \"%s\": {\"fds_before\": %d, \"fds_peak\": %d, \"fds_after\": %d, "
          "\"fds_closed\": %d, \"maps_before\": %d, \"maps_peak\": %d, \"maps_after\": %d, "
          "\"maps_closed\": %d, \"samples\": %ld, \"missed\": %ld, \"peak_fds_by_kind\": "
          "{\"log\": %d, \"index\": %d, \"timeindex\": %d, \"dir\": %d, \"other\": %d}}%s\n",
          name, p->fd_before, p->fd_peak, p->fd_after, p->fd_closed, p->maps_before,
          p->maps_peak, p->maps_after, p->maps_closed, p->samples, p->missed,
          p->kinds[FD_LOG], p->kinds[FD_INDEX], p->kinds[FD_TIMEINDEX], p->kinds[FD_DIR],
          p->kinds[FD_OTHER], last ? "" : ",");
}

static void usage(void) {
  fprintf(stderr,
          "usage: broker [--topics N] [--partitions N] [--records-min N] [--records-max N]\n"
          "              [--segment-bytes B] [--fresh N] [--min-time S] [--nofile N]\n"
          "              [--probe-every N] [--data DIR] [--out DIR] [--quick] [--keep]\n");
  exit(2);
}

int main(int argc, char **argv) {
  opts o = {.topics = 40, .partitions = 50, .rmin = 1000, .rmax = 5000,
            .segment_bytes = 48 << 10, .fresh = 50, .min_time = 1.0, .nofile = 256,
            .probe_every = 2000, .out = "out"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && ++i)
    if (ARG("--topics")) o.topics = atoi(v);
    else if (ARG("--partitions")) o.partitions = atoi(v);
    else if (ARG("--records-min")) o.rmin = atol(v);
    else if (ARG("--records-max")) o.rmax = atol(v);
    else if (ARG("--segment-bytes")) o.segment_bytes = atol(v);
    else if (ARG("--fresh")) o.fresh = atoi(v);
    else if (ARG("--min-time")) o.min_time = atof(v);
    else if (ARG("--nofile")) o.nofile = atoi(v);
    else if (ARG("--probe-every")) o.probe_every = atoi(v);
    else if (ARG("--data")) o.data = v;
    else if (ARG("--out")) o.out = v;
    else if (!strcmp(a, "--keep")) o.keep = 1;
    else if (!strcmp(a, "--quick")) {
      o.topics = 4;
      o.partitions = 10;
      o.fresh = 10;
      o.min_time = 0.1;
    } else {
      usage();
    }
#undef ARG
  }
  if (o.topics < 1 || o.partitions < 1 || o.rmin < 1 || o.rmax < o.rmin || o.fresh < 1 ||
      o.segment_bytes < 4096 || o.nofile < 32 || o.probe_every < 1) {
    die("need --topics, --partitions, --records-min, --fresh >= 1, --records-max >= "
        "--records-min, --segment-bytes >= 4096, --nofile >= 32, --probe-every >= 1");
  }

  char data[3000];
  make_dirs(data, sizeof data, o.data, "broker", o.out);
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
    sqlite3_stmt *st = prep_or_die(db, "SELECT kafka_log_version()");
    if (sqlite3_step(st) == SQLITE_ROW) {
      snprintf(version, sizeof version, "%s", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  printf("kafkalog broker: %d topics x %d partitions, %ld-%ld records each\n"
         "machine: %s, %ld CPUs, %s %s; SQLite %s; %s\ndata in %s\n\n",
         o.topics, o.partitions, o.rmin, o.rmax, cpu, ncpu, un.sysname, un.release,
         sqlite3_libversion(), version, data);
  fflush(stdout);

  dataset ds = {0};
  write_data(&ds, &o, data);
  printf("log directory: %ld partitions, %ld segments, %" PRId64 " records, %.1f MiB; native db "
         "%.1f MiB (both written in %.1f s)\n",
         ds.parts, ds.segments, ds.records, (double)ds.log_bytes / 1048576,
         (double)ds.db_bytes / 1048576, ds.write_s);
  fflush(stdout);

  bench b = {&o, &ds, open_kafka(), open_native(ds.db)};
  /* Warm both page caches: one full read each. */
  {
    side k = {1, 0, b.kdb, prep_or_die(b.kdb, SQL_SCAN_K), SQL_SCAN_K};
    side n = {0, 0, b.ndb, prep_or_die(b.ndb, SQL_SCAN_N), SQL_SCAN_N};
    answer x = side_run(&b, &k, 's', NULL, NULL), y = side_run(&b, &n, 's', NULL, NULL);
    if (!x.ok) die("warm-up: %s", x.err);
    if (x.a != ds.records || y.a != ds.records) {
      die("warm-up: %" PRId64 " rows through kafka_log, %" PRId64 " native, %" PRId64 " written",
          x.a, y.a, ds.records);
    }
    sqlite3_finalize(k.st);
    sqlite3_finalize(n.st);
  }

  /* ---- 1: listing ---- */
  int have_partitions = 0;
  {
    sqlite3_stmt *st = prep(b.kdb, SQL_LIST_P);
    have_partitions = st != NULL;
    sqlite3_finalize(st);
    const struct {
      const char *id, *label, *sql;
      int on;
    } ls[] = {{"list_partitions", "1 kafka_partitions, count(*)", SQL_LIST_P, have_partitions},
              {"list_partitions_all", "1 kafka_partitions, ends, sizes, times", SQL_LIST_PA,
               have_partitions},
              {"list_offset0", "1 offset = 0 in every partition", SQL_LIST_L, 1}};
    for (size_t i = 0; i < NELEM(ls); i++) {
      for (int fresh = 1; fresh >= 0; fresh--) {
        char label[80];
        snprintf(label, sizeof label, "%s, %s", ls[i].label,
                 fresh ? "first (fresh)" : "repeated");
        char id[40];
        snprintf(id, sizeof id, "%s%s", ls[i].id, fresh ? "_first" : "");
        figure *f = add_fig(id, label, ls[i].sql, NULL, "query");
        if (!ls[i].on) {
          snprintf(f->note, sizeof f->note, "kafka_partitions does not exist in this build");
          continue;
        }
        side s = {1, fresh, b.kdb, fresh ? NULL : prep_or_die(b.kdb, ls[i].sql), ls[i].sql};
        answer a = side_run(&b, &s, 'p', NULL, NULL);
        if (!a.ok) die("%s: %s", ls[i].sql, a.err);
        /* The second column of the every-column listing is the records. */
        f->correct = a.a == ds.parts && (ls[i].sql != SQL_LIST_PA || a.b == ds.records);
        if (!f->correct) {
          snprintf(f->note, sizeof f->note, "%" PRId64 " partitions (%" PRId64 "), %ld made (%"
                   PRId64 " records)", a.a, a.b, ds.parts, ds.records);
        }
        double t;
        if (fresh) measure_each(&b, &s, 1, 'p', -1, 11, &t);
        else measure(&b, &s, 1, 'p', -1, &t);
        f->k = t;
        sqlite3_finalize(s.st);
      }
    }
    printf("  measured listing%s\n", have_partitions ? "" : " (no kafka_partitions yet)");
    fflush(stdout);
  }

  /* ---- 2: lookups ---- */
  {
    figure *f1 = add_fig("lookup_first", "2 lookup, first (fresh connection)", SQL_LOOKUP_K,
                         SQL_LOOKUP_N, "lookup");
    figure *f2 = add_fig("lookup", "2 lookup, repeated, random partition", SQL_LOOKUP_K,
                         SQL_LOOKUP_N, "lookup");
    figure *f3 = add_fig("lookup_one_part", "2 lookup, repeated, one partition", SQL_LOOKUP_K,
                         SQL_LOOKUP_N, "lookup");
    set_goal(f1, G_KAFKA_LT, 0.0005);
    int c = compare(&b, 'l', 20, f1->note, sizeof f1->note);
    f1->correct = f2->correct = f3->correct = c;
    side fr[2] = {{1, 1, NULL, NULL, SQL_LOOKUP_K}, {0, 1, NULL, NULL, SQL_LOOKUP_N}};
    double t[2];
    measure_each(&b, fr, 2, 'l', -1, o.fresh, t);
    f1->k = t[0];
    f1->n = t[1];
    side wm[2] = {{1, 0, b.kdb, prep_or_die(b.kdb, SQL_LOOKUP_K), SQL_LOOKUP_K},
                  {0, 0, b.ndb, prep_or_die(b.ndb, SQL_LOOKUP_N), SQL_LOOKUP_N}};
    /* Enough single lookups to fill about 3 x min_time on both sides. */
    long reps = (long)(3 * o.min_time / 20e-6);
    if (reps < 1000) reps = 1000;
    measure_each(&b, wm, 2, 'l', -1, reps, t);
    f2->k = t[0];
    f2->n = t[1];
    int gi = (int)(rnd() % (uint64_t)ds.parts);
    measure_each(&b, wm, 2, 'l', gi, reps, t);
    f3->k = t[0];
    f3->n = t[1];
    sqlite3_finalize(wm[0].st);
    sqlite3_finalize(wm[1].st);
    printf("  measured lookups\n");
    fflush(stdout);
  }

  /* ---- 3: full scan, descriptors and mappings ---- */
  probe pr_scan, pr_low, pr_win, pr_list, pr_part, pr_part_all;
  memset(&pr_part, 0, sizeof pr_part);
  memset(&pr_part_all, 0, sizeof pr_part_all);
  answer low = {0};
  int low_ok = 0;
  struct rlimit rl0;
  getrlimit(RLIMIT_NOFILE, &rl0);
  {
    figure *f = add_fig("scan", "3 full scan, count(*), sum(length(value))", SQL_SCAN_K,
                        SQL_SCAN_N, "query");
    f->per = (double)ds.records;
    f->correct = compare(&b, 's', 1, f->note, sizeof f->note);
    side s[2] = {{1, 0, b.kdb, prep_or_die(b.kdb, SQL_SCAN_K), SQL_SCAN_K},
                 {0, 0, b.ndb, prep_or_die(b.ndb, SQL_SCAN_N), SQL_SCAN_N}};
    double t[2];
    measure(&b, s, 2, 's', -1, t);
    f->k = t[0];
    f->n = t[1];
    sqlite3_finalize(s[0].st);
    sqlite3_finalize(s[1].st);

    printf("  measured full scan\n");
    fflush(stdout);
  }

  /* ---- 4: time window ---- */
  {
    figure *f1 = add_fig("window", "4 window of 1% of the day, repeated", SQL_WIN_K, SQL_WIN_N,
                         "query");
    figure *f2 = add_fig("window_first", "4 window of 1% of the day, first (fresh)",
                         SQL_WIN_K, SQL_WIN_N, "query");
    set_goal(f1, G_SLOWER_LE, 3);
    set_goal(f2, G_SLOWER_LE, 10);
    f1->correct = f2->correct = compare(&b, 'w', 3, f1->note, sizeof f1->note);
    side s[2] = {{1, 0, b.kdb, prep_or_die(b.kdb, SQL_WIN_K), SQL_WIN_K},
                 {0, 0, b.ndb, prep_or_die(b.ndb, SQL_WIN_N), SQL_WIN_N}};
    double t[2];
    measure(&b, s, 2, 'w', -1, t);
    f1->k = t[0];
    f1->n = t[1];
    sqlite3_finalize(s[0].st);
    sqlite3_finalize(s[1].st);
    side fr[2] = {{1, 1, NULL, NULL, SQL_WIN_K}, {0, 1, NULL, NULL, SQL_WIN_N}};
    measure_each(&b, fr, 2, 'w', -1, 11, t);
    f2->k = t[0];
    f2->n = t[1];
    printf("  measured window\n");
    fflush(stdout);
  }
  sqlite3_close(b.kdb);
  sqlite3_close(b.ndb);

  /* ---- 3: descriptors and mappings, each statement alone ---- */
  {
    answer a;
    probed_run(&b, SQL_SCAN_K, NULL, &pr_scan, &a);
    if (!a.ok || a.a != ds.records) die("probed scan: %" PRId64 " rows %s", a.a, a.err);
    /* The same scan with few descriptors allowed: the one bound on open
    ** segments must keep it under the limit. */
    struct rlimit rl = rl0;
    rl.rlim_cur = (rlim_t)o.nofile;
    if (rl0.rlim_cur != RLIM_INFINITY && rl.rlim_cur > rl0.rlim_cur) rl.rlim_cur = rl0.rlim_cur;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) die("setrlimit: %s", strerror(errno));
    probed_run(&b, SQL_SCAN_K, NULL, &pr_low, &low);
    if (setrlimit(RLIMIT_NOFILE, &rl0) != 0) die("setrlimit back: %s", strerror(errno));
    low_ok = low.ok && low.a == ds.records && low.b == a.b;
    int64_t w[2];
    pick_window(w);
    probed_run(&b, SQL_WIN_K, w, &pr_win, &a);
    if (!a.ok) die("probed window: %s", a.err);
    probed_run(&b, SQL_LIST_L, NULL, &pr_list, &a);
    if (!a.ok) die("probed listing: %s", a.err);
    if (have_partitions) {
      probed_run(&b, SQL_LIST_P, NULL, &pr_part, &a);
      if (!a.ok) die("probed kafka_partitions: %s", a.err);
      probed_run(&b, SQL_LIST_PA, NULL, &pr_part_all, &a);
      if (!a.ok) die("probed kafka_partitions: %s", a.err);
    }
    printf("  measured descriptors and mappings\n");
    fflush(stdout);
  }
  getloadavg(load1, 3);

  /* ---- the table ---- */
  printf("\n%-54s %11s %11s %8s %9s %-5s %21s\n", "figure (time per query or lookup)",
         "kafka_log", "native", "ratio", "goal", "", "rows/s k / n");
  for (int i = 0; i < g_nfig; i++) {
    figure *f = &g_fig[i];
    char a[32], n[32], r[32], ra[32], rb[32];
    fmt_time(a, sizeof a, f->k);
    fmt_time(n, sizeof n, f->n);
    fmt_rate(ra, sizeof ra, f->k, f->per);
    fmt_rate(rb, sizeof rb, f->n, f->per);
    double q = ratio(f);
    if (q < 0) snprintf(r, sizeof r, "-");
    else snprintf(r, sizeof r, "%.3f", q);
    char gl[32];
    goal_text(f, gl, sizeof gl);
    printf("%-54s %11s %11s %8s %9s %-5s %9s%s%-9s\n", f->label, a, n, r, gl, verdict(f), ra,
           f->per > 0 ? " / " : "   ", rb);
  }
  printf("\nratio = native time / kafka_log time (>1: kafka_log faster); lookups: the median of "
         "single executions; goal <= Nx: kafka_log at most N times the native time\n");
  for (int i = 0; i < g_nfig; i++) {
    if (g_fig[i].note[0]) printf("note, %s: %s\n", g_fig[i].id, g_fig[i].note);
  }
  printf("\nopen descriptors and memory mappings (before / peak / after the statement / "
         "connection closed), sampled every %d VM instructions:\n",
         o.probe_every);
  print_probe("full scan", &pr_scan);
  char what[80];
  snprintf(what, sizeof what, "full scan, RLIMIT_NOFILE %d", o.nofile);
  print_probe(what, &pr_low);
  printf("  %-44s %s%s%s\n", "", low_ok ? "completed, same answer" : "FAILED: ",
         low_ok ? "" : low.err, low_ok ? "" : "");
  print_probe("window of 1%", &pr_win);
  print_probe("distinct partitions WHERE offset = 0", &pr_list);
  if (have_partitions) {
    print_probe("kafka_partitions count(*)", &pr_part);
    print_probe("kafka_partitions, ends, sizes, times", &pr_part_all);
  }
  printf("\nstatements:\n");
  for (int i = 0; i < g_nfig; i++) {
    if (i && !strcmp(g_fig[i].sql_k, g_fig[i - 1].sql_k)) continue;
    printf("  %-18s %s\n", g_fig[i].id, g_fig[i].sql_k);
    if (g_fig[i].sql_n[0]) printf("  %-18s %s\n", "", g_fig[i].sql_n);
  }
  printf("\nload average (1 min) at start %.2f, at end %.2f on %ld CPUs\n", load0[0], load1[0],
         ncpu);

  /* ---- JSON ---- */
  char path[4400];
  snprintf(path, sizeof path, "%s/broker.json", o.out);
  FILE *j = fopen(path, "w");
  if (!j) die("%s: %s", path, strerror(errno));
  fprintf(j, "{\n  \"machine\": {\"cpu\": ");
  json_string(j, cpu);
  fprintf(j, ", \"cpus\": %ld, \"kernel\": \"%s %s\", \"sqlite\": \"%s\", \"kafkalog\": ", ncpu,
          un.sysname, un.release, sqlite3_libversion());
  json_string(j, version);
  fprintf(j, ", \"loadavg_start\": %.2f, \"loadavg_end\": %.2f},\n", load0[0], load1[0]);
  fprintf(j,
          "  \"config\": {\"topics\": %d, \"partitions_per_topic\": %d, \"partitions\": %ld, "
          "\"records_min\": %ld, \"records_max\": %ld, \"records\": %" PRId64 ", "
          "\"segments\": %ld, \"segment_bytes\": %ld, \"batch_records\": %d, "
          "\"log_bytes\": %" PRId64 ", \"native_db_bytes\": %" PRId64 ", \"write_s\": %.2f, "
          "\"fresh_connections\": %d, \"min_time_s\": %g, \"nofile\": %d, \"probe_every\": %d, "
          "\"kafka_partitions\": %s},\n",
          o.topics, o.partitions, ds.parts, o.rmin, o.rmax, ds.records, ds.segments,
          o.segment_bytes, PER_BATCH, ds.log_bytes, ds.db_bytes, ds.write_s, o.fresh,
          o.min_time, o.nofile, o.probe_every, have_partitions ? "true" : "false");
  fprintf(j, "  \"figures\": [");
  for (int i = 0; i < g_nfig; i++) {
    figure *f = &g_fig[i];
    fprintf(j, "%s\n    {\"id\": \"%s\", \"what\": ", i ? "," : "", f->id);
    json_string(j, f->label);
    fprintf(j, ", \"sql_kafka_log\": ");
    json_string(j, f->sql_k);
    fprintf(j, ", \"sql_native\": ");
    if (f->sql_n[0]) json_string(j, f->sql_n);
    else fprintf(j, "null");
    fprintf(j, ", \"unit\": \"%s\", \"kafka_log_s\": ", f->unit);
    json_number(j, f->k);
    fprintf(j, ", \"native_s\": ");
    json_number(j, f->n);
    fprintf(j, ", \"ratio\": ");
    json_number(j, ratio(f));
    if (f->per > 0) {
      fprintf(j, ", \"rows_per_s_kafka_log\": ");
      json_number(j, f->k > 0 ? f->per / f->k : -1);
      fprintf(j, ", \"rows_per_s_native\": ");
      json_number(j, f->n > 0 ? f->per / f->n : -1);
    }
    char gl[32];
    goal_text(f, gl, sizeof gl);
    fprintf(j, ", \"goal\": ");
    if (f->goal_kind == G_NONE) fprintf(j, "null");
    else json_string(j, gl);
    fprintf(j, ", \"verdict\": \"%s\"", verdict(f));
    fprintf(j, ", \"same_answers\": %s, \"note\": ",
            f->correct < 0 ? "null" : f->correct ? "true" : "false");
    json_string(j, f->note);
    fprintf(j, "}");
  }
  fprintf(j, "\n  ],\n  \"descriptors\": {\n");
  json_probe(j, "full_scan", &pr_scan, 0);
  json_probe(j, "full_scan_low_nofile", &pr_low, 0);
  json_probe(j, "window", &pr_win, 0);
  json_probe(j, "offset0_listing", &pr_list, 0);
  if (have_partitions) {
    json_probe(j, "kafka_partitions", &pr_part, 0);
    json_probe(j, "kafka_partitions_ends_sizes_times", &pr_part_all, 0);
  }
  fprintf(j, "    \"low_nofile_completed\": %s\n  }\n}\n", low_ok ? "true" : "false");
  fclose(j);

  free(ds.nrec);
  if (!o.keep) rm_rf(data);
  else printf("data kept in %s\n", data);
  return low_ok ? 0 : 1;
}
