/*
** logdir.c - key searches, distinct topics, per-partition counts and
** memory on a keyed log directory: kafka_log against a native SQLite table
** holding the same records.
**
**   logdir [--topics N] [--partitions N] [--records N] [--group-topics N]
**          [--group-partitions N] [--group-records N] [--customers N]
**          [--segment-bytes B] [--min-time S] [--data DIR] [--out DIR]
**          [--only keys|group] [--quick] [--keep]
**
** Data: two log directories written by kwriter, as a producer with Kafka's
** default partitioner writes them: each record's key is a customer id
** (cust-NNNNNN, drawn from --customers, 100,000), its partition
** murmur2(key) modulo the topic's partitions (kl_partition_for), so one
** customer's records sit in one partition of each topic; values are JSON
** order events of 60-80 bytes; producer batches of up to 100 records,
** uncompressed; timestamps spread evenly over one day per topic with +-2 s
** of jitter; --segment-bytes (8 MiB) segments, index interval 4096; the
** three offset checkpoints.
**   keys   --topics (4) x --partitions (25) = 100 partitions, --records
**          (10,000,000) in all;
**   group  --group-topics (10) x --group-partitions (10), --group-records
**          (3,000,000).
** Native twins, file databases:
**   CREATE TABLE t(topic TEXT, partition INTEGER, offset INTEGER,
**                  timestamp INTEGER, key BLOB, value BLOB,
**                  PRIMARY KEY(topic, partition, offset)) WITHOUT ROWID;
**   CREATE INDEX t_key ON t(key);
** (the index on key is what a plain import would add for key searches).
** Both sides are warmed by one full read.  The kafka_log side binds the
** directory as ?1; keys are bound as BLOBs (?2).
**
** Figures:
**   keys  1 key = ?2, a random customer per execution; against the same
**           search with the pushdown defeated (+key = ?2: the full scan
**           a search was before the module compared keys), goal >= 5x
**           faster, and against the native table's index;
**           kafka_log_stats() batches decoded of one search, first and
**           repeated
**         2 peak resident memory (VmHWM) of each statement below, run once
**           in a freshly exec'd child (open, register, prepare, run): full
**           scan, count(*), key search, +key search, DISTINCT topic, GROUP
**           BY topic, partition, a 1% time window, the last 10 by
**           timestamp; goal < 64 MiB each
**   group 3 SELECT DISTINCT topic and DISTINCT topic, partition: goal < 5 ms
**         4 topic, partition, count(*) GROUP BY topic, partition: against
**           the native table, and against kafka_log's own count(*) scan of
**           the directory (goal: within 1.5x of it, "near the scan floor"
**           read as that scan)
**         4b the same GROUP BY and count(*) on a do-nothing virtual table
**           (floorvtab.c: the native rows held in memory by topic and
**           partition, keys and values left out since neither statement
**           reads them, nothing decoded), against the native table; it
**           consumes the GROUP BY's ORDER BY topic, partition as kafka_log
**           does, so neither plan sorts (EXPLAIN QUERY PLAN, in 4c's note)
**         4c kafka_log's GROUP BY against the do-nothing table's (goal:
**           within 1.5x, "near the scan floor" read as the floor the
**           virtual table interface sets); the six statements of 4-4c
**           timed together
**         5 one customer's records by key, the same customer repeated:
**           against the native index, and batches decoded by the repeated
**           search (goal: at most 10% of the directory's batches, i.e. the
**           search skips batches that cannot hold the key)
** Answers are compared between the sides first (order-independent digest
** of the rows; a difference is WRONG).  Timed figures: median of 3 runs of
** at least --min-time seconds each, the sides alternating.  Ratio = native
** time / kafka_log time (>1: kafka_log faster) unless the columns say
** otherwise.  --quick: 200,000 and 60,000 records, 0.1 s runs.
** Output: a table on stdout and OUT/logdir.json.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "batch.h"
#include "codec.h"
#include "floorvtab.h"
#include "kwriter.h"
#include "partitioner.h"

#define BENCH_NAME "logdir"
#include "benchutil.h"

#define NELEM(a) (sizeof(a) / sizeof *(a))
#define TS0 INT64_C(1732924800000) /* 2024-11-30 00:00 UTC */
#define SPAN_MS INT64_C(86400000)  /* one day in every topic */
#define JITTER_MS 2000
#define PER_BATCH 100
#define VALUE_MAX 128
#define KEY_MAX 16

typedef struct opts {
  int topics, partitions;
  long records;
  int gtopics, gpartitions;
  long grecords;
  long customers;
  long segment_bytes;
  double min_time;
  const char *data, *out, *only;
  int keep;
} opts;

static volatile int64_t g_sink;

static int customer_key(char *b, long c) { return snprintf(b, KEY_MAX, "cust-%06ld", c); }

/* ---- writing a log directory and its native twin ---- */

typedef struct dataset {
  const char *name;
  int topics, partitions;
  char logdir[3200], db[3200];
  long *nrec;               /* records of each partition, topic-major */
  int64_t records, batches;
  long segments;
  int64_t log_bytes, db_bytes;
  double write_s;
} dataset;

typedef struct pbuf {        /* one partition's open batch */
  kw_writer *w;
  int n;
  int64_t ts[PER_BATCH];
  char key[PER_BATCH][KEY_MAX];
  int klen[PER_BATCH];
  char val[PER_BATCH][VALUE_MAX];
  int vlen[PER_BATCH];
} pbuf;

static void flush_batch(dataset *ds, pbuf *b) {
  if (!b->n) return;
  kl_rec_in in[PER_BATCH];
  for (int i = 0; i < b->n; i++) {
    in[i] = (kl_rec_in){b->ts[i], b->key[i], b->klen[i], b->val[i], b->vlen[i], NULL, 0};
  }
  kl_batch_spec spec = {.leader_epoch = 0, .codec = KL_CODEC_NONE, .producer_id = -1,
                        .producer_epoch = -1, .base_sequence = -1};
  if (kw_append(b->w, &spec, in, b->n)) die("kw_append in %s", ds->logdir);
  ds->batches++;
  b->n = 0;
}

static void write_checkpoint(const dataset *ds, const char *name, int at_end) {
  char path[3400];
  snprintf(path, sizeof path, "%s/%s", ds->logdir, name);
  FILE *f = fopen(path, "w");
  if (!f) die("%s: %s", path, strerror(errno));
  fprintf(f, "0\n%d\n", ds->topics * ds->partitions);
  for (int t = 0; t < ds->topics; t++) {
    for (int p = 0; p < ds->partitions; p++) {
      fprintf(f, "orders-%02d %d %ld\n", t, p, at_end ? ds->nrec[t * ds->partitions + p] : 0L);
    }
  }
  if (fclose(f)) die("%s: %s", path, strerror(errno));
}

static const char *const g_status[] = {"created", "paid", "shipped", "delivered", "refunded"};

/* One topic's records, in production order, routed by key. */
static void write_topic(dataset *ds, int t, long n, long customers, long segment_bytes,
                        sqlite3_stmt *ins, pbuf *bufs) {
  char topic[32];
  snprintf(topic, sizeof topic, "orders-%02d", t);
  for (int p = 0; p < ds->partitions; p++) {
    char dir[3600];
    snprintf(dir, sizeof dir, "%s/%s-%d", ds->logdir, topic, p);
    if (mkdir(dir, 0755) != 0) die("mkdir %s: %s", dir, strerror(errno));
    kw_options wo = {.segment_bytes = segment_bytes, .index_interval = 4096, .base_offset = 0,
                     .codec = KL_CODEC_NONE};
    bufs[p].w = kw_open(dir, &wo);
    bufs[p].n = 0;
    if (!bufs[p].w) die("kw_open %s", dir);
  }
  sqlite3_bind_text(ins, 1, topic, -1, SQLITE_TRANSIENT);
  for (long i = 0; i < n; i++) {
    uint64_t s = mix(((uint64_t)t << 40) ^ (uint64_t)i);
    char key[KEY_MAX];
    int klen = customer_key(key, (long)(s % (uint64_t)customers));
    int p = kl_partition_for((const uint8_t *)key, (size_t)klen, ds->partitions);
    pbuf *b = &bufs[p];
    int m = b->n;
    s = mix(s);
    b->ts[m] = TS0 + i * SPAN_MS / n + (int64_t)(s % (2 * JITTER_MS + 1)) - JITTER_MS;
    memcpy(b->key[m], key, (size_t)klen);
    b->klen[m] = klen;
    s = mix(s);
    unsigned cents = (unsigned)(s % 90000) + 100;
    b->vlen[m] = snprintf(b->val[m], VALUE_MAX,
                          "{\"order\":%ld,\"customer\":\"%s\",\"amount\":%u.%02u,\"status\":"
                          "\"%s\"}",
                          i, key, cents / 100, cents % 100,
                          g_status[(s >> 20) % NELEM(g_status)]);
    long *off = &ds->nrec[t * ds->partitions + p];
    sqlite3_bind_int(ins, 2, p);
    sqlite3_bind_int64(ins, 3, *off);
    sqlite3_bind_int64(ins, 4, b->ts[m]);
    sqlite3_bind_blob(ins, 5, b->key[m], klen, SQLITE_STATIC);
    sqlite3_bind_blob(ins, 6, b->val[m], b->vlen[m], SQLITE_STATIC);
    if (sqlite3_step(ins) != SQLITE_DONE) die("insert: %s", sqlite3_errmsg(sqlite3_db_handle(ins)));
    sqlite3_reset(ins);
    (*off)++;
    if (++b->n == PER_BATCH) flush_batch(ds, b);
  }
  for (int p = 0; p < ds->partitions; p++) {
    flush_batch(ds, &bufs[p]);
    if (kw_close(bufs[p].w)) die("kw_close in %s", ds->logdir);
    char dir[3600];
    snprintf(dir, sizeof dir, "%s/%s-%d", ds->logdir, topic, p);
    int segs;
    ds->log_bytes += dir_bytes(dir, &segs);
    ds->segments += segs;
  }
  ds->records += n;
}

static void write_dataset(dataset *ds, const char *data, long records, long customers,
                          long segment_bytes) {
  snprintf(ds->logdir, sizeof ds->logdir, "%s/%s-logs", data, ds->name);
  snprintf(ds->db, sizeof ds->db, "%s/%s.db", data, ds->name);
  if (mkdir(ds->logdir, 0755) != 0) die("mkdir %s: %s", ds->logdir, strerror(errno));
  ds->nrec = calloc((size_t)(ds->topics * ds->partitions), sizeof *ds->nrec);
  pbuf *bufs = calloc((size_t)ds->partitions, sizeof *bufs);
  if (!ds->nrec || !bufs) die("out of memory");
  double t0 = now();
  sqlite3 *db;
  if (sqlite3_open(ds->db, &db) != SQLITE_OK) die("open %s", ds->db);
  exec_or_die(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-262144;"
                  "BEGIN; CREATE TABLE t(topic TEXT, partition INTEGER, offset INTEGER,"
                  " timestamp INTEGER, key BLOB, value BLOB,"
                  " PRIMARY KEY(topic, partition, offset)) WITHOUT ROWID;");
  sqlite3_stmt *ins;
  if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1,?2,?3,?4,?5,?6)", -1, &ins, NULL)) {
    die("prepare: %s", sqlite3_errmsg(db));
  }
  for (int t = 0; t < ds->topics; t++) {
    long n = records / ds->topics + (t < records % ds->topics);
    write_topic(ds, t, n, customers, segment_bytes, ins, bufs);
  }
  sqlite3_finalize(ins);
  exec_or_die(db, "CREATE INDEX t_key ON t(key); COMMIT;");
  sqlite3_close(db);
  write_checkpoint(ds, "log-start-offset-checkpoint", 0);
  write_checkpoint(ds, "replication-offset-checkpoint", 1);
  write_checkpoint(ds, "recovery-point-offset-checkpoint", 1);
  ds->write_s = now() - t0;
  struct stat st;
  ds->db_bytes = stat(ds->db, &st) == 0 ? st.st_size : 0;
  free(bufs);
}

/* ---- the sides of a measurement ---- */

enum { P_NONE, P_RANDOM_KEY, P_FIXED_KEY, P_WINDOW };

typedef struct side {
  const char *name;
  sqlite3 *db;
  sqlite3_stmt *st;
  const char *logdir;       /* kafka_log side: bound as ?1 */
  int param;                /* P_* */
  long customers;
  long fixed;               /* the customer of P_FIXED_KEY */
  char err[256];
} side;

typedef struct answer {
  uint64_t sum, x;          /* order-independent digest of the rows */
  long rows;
  int ok;
} answer;

static uint64_t hash_bytes(uint64_t h, const void *p, int n) {
  for (int i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * UINT64_C(0x100000001b3);
  return h;
}

/* Bind: ?1 the directory (kafka_log), then the parameter drawn by draw. */
static void bind_params(side *s, uint64_t draw) {
  int k = 1;
  if (s->logdir) sqlite3_bind_text(s->st, k++, s->logdir, -1, SQLITE_STATIC);
  if (s->param == P_RANDOM_KEY || s->param == P_FIXED_KEY) {
    char key[KEY_MAX];
    long c = s->param == P_FIXED_KEY ? s->fixed : (long)(draw % (uint64_t)s->customers);
    int n = customer_key(key, c);
    sqlite3_bind_blob(s->st, k, key, n, SQLITE_TRANSIENT);
  } else if (s->param == P_WINDOW) {
    int64_t len = SPAN_MS / 100;
    int64_t lo = TS0 + (int64_t)(draw % (uint64_t)(SPAN_MS - len));
    sqlite3_bind_int64(s->st, k, lo);
    sqlite3_bind_int64(s->st, k + 1, lo + len);
  }
}

static answer run_draw(side *s, uint64_t draw) {
  answer a = {0, 0, 0, 0};
  bind_params(s, draw);
  int rc;
  while ((rc = sqlite3_step(s->st)) == SQLITE_ROW) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (int c = 0; c < sqlite3_column_count(s->st); c++) {
      if (sqlite3_column_type(s->st, c) == SQLITE_INTEGER) {
        int64_t v = sqlite3_column_int64(s->st, c);
        h = hash_bytes(h, &v, sizeof v);
      } else {
        h = hash_bytes(h, sqlite3_column_blob(s->st, c), sqlite3_column_bytes(s->st, c));
      }
    }
    a.sum += h;
    a.x ^= h;
    a.rows++;
  }
  a.ok = rc == SQLITE_DONE;
  if (!a.ok) snprintf(s->err, sizeof s->err, "%s", sqlite3_errmsg(s->db));
  sqlite3_reset(s->st);
  g_sink += (int64_t)a.sum;
  return a;
}

static void side_init(side *s, const char *name, sqlite3 *db, const char *sql,
                      const char *logdir, int param, long customers) {
  memset(s, 0, sizeof *s);
  s->name = name;
  s->db = db;
  s->logdir = logdir;
  s->param = param;
  s->customers = customers;
  s->fixed = customers / 3;
  if (sqlite3_prepare_v2(db, sql, -1, &s->st, NULL) != SQLITE_OK) {
    snprintf(s->err, sizeof s->err, "%s", sqlite3_errmsg(db));
    s->st = NULL;
  }
}

#define MAX_SIDES 8

/* Seconds per execution of each side that prepared (others -1): median of
** 3 runs of at least min_time, the sides alternating. */
static void measure(side *s[], int n, double min_time, double out[]) {
  double v[MAX_SIDES][3];
  if (n > MAX_SIDES) die("%d sides in one measurement, at most %d", n, MAX_SIDES);
  for (int i = 0; i < n; i++) {
    if (s[i]->st) run_draw(s[i], rnd());
  }
  for (int r = 0; r < 3; r++) {
    for (int i = 0; i < n; i++) {
      v[i][r] = -1;
      if (!s[i]->st) continue;
      long k = 0;
      double t0 = now(), t;
      do {
        run_draw(s[i], rnd());
        k++;
      } while ((t = now()) - t0 < min_time);
      v[i][r] = (t - t0) / (double)k;
    }
  }
  for (int i = 0; i < n; i++) {
    qsort(v[i], 3, sizeof v[i][0], cmp_doubles);
    out[i] = s[i]->st ? v[i][1] : -1;
  }
}

/* 1 when every side's answers agree with the last side's for reps draws, 0
** when not (note says how); a side that fails is not measured. */
static int compare(side *s[], int n, int reps, char *note, size_t nn) {
  int res = 1;
  for (int r = 0; r < reps; r++) {
    uint64_t draw = rnd();
    answer ref = run_draw(s[n - 1], draw);
    if (!ref.ok) die("%s: %s", s[n - 1]->name, s[n - 1]->err);
    for (int i = 0; i < n - 1; i++) {
      if (!s[i]->st) continue;
      answer a = run_draw(s[i], draw);
      if (!a.ok) {
        snprintf(note, nn, "%s: %s", s[i]->name, s[i]->err);
        sqlite3_finalize(s[i]->st);
        s[i]->st = NULL;
        res = -1;
      } else if (a.rows != ref.rows || a.sum != ref.sum || a.x != ref.x) {
        snprintf(note, nn, "%s: %ld rows, %s: %ld rows, digests %s", s[i]->name, a.rows,
                 s[n - 1]->name, ref.rows, a.sum == ref.sum ? "equal" : "differ");
        res = 0;
      }
    }
  }
  return res;
}

static void sides_done(side *s[], int n) {
  for (int i = 0; i < n; i++) {
    sqlite3_finalize(s[i]->st);
    s[i]->st = NULL;
  }
}

/* One statement's batches decoded (kafka_log_stats()), -1 when unknown. */
static double batches_decoded(side *s, uint64_t draw) {
  exec_or_die(s->db, "SELECT kafka_log_stats_reset()");
  run_draw(s, draw);
  sqlite3_stmt *st;
  double v = -1;
  if (sqlite3_prepare_v2(s->db, "SELECT json_extract(kafka_log_stats(), '$.batches_decoded')",
                         -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
      sqlite3_column_type(st, 0) != SQLITE_NULL) {
    v = sqlite3_column_double(st, 0);
  }
  sqlite3_finalize(st);
  return v;
}

/* ---- figures ---- */

enum { G_NONE, G_RATIO_GE, G_RATIO_LE, G_KAFKA_LT, G_VALUE_LE };

typedef struct figure {
  char id[40];
  char label[96];
  const char *sql;
  const char *k_name, *n_name; /* the two columns when not kafka_log | native */
  double k, n;              /* seconds per execution (-1: n/a); G_VALUE_LE: k is a value */
  const char *unit;         /* NULL: seconds */
  int goal_kind;
  double goal;
  int correct;
  char note[400];
} figure;

#define MAX_FIG 32
static figure g_fig[MAX_FIG];
static int g_nfig;

static figure *add_fig(const char *id, const char *label, const char *sql, int goal_kind,
                       double goal) {
  if (g_nfig == MAX_FIG) die("too many figures");
  figure *f = &g_fig[g_nfig++];
  memset(f, 0, sizeof *f);
  snprintf(f->id, sizeof f->id, "%s", id);
  snprintf(f->label, sizeof f->label, "%s", label);
  f->sql = sql;
  f->k = f->n = -1;
  f->goal_kind = goal_kind;
  f->goal = goal;
  f->correct = -1;
  return f;
}

static double fig_ratio(const figure *f) { return f->k > 0 && f->n > 0 ? f->n / f->k : -1; }

static const char *verdict(const figure *f) {
  if (f->k < 0) return "n/a";
  if (f->correct == 0) return "WRONG";
  double r = fig_ratio(f);
  switch (f->goal_kind) {
  case G_RATIO_GE: return r >= f->goal ? "ok" : "MISS";
  case G_RATIO_LE: return r > 0 && 1 / r <= f->goal ? "ok" : "MISS";
  case G_KAFKA_LT: return f->k < f->goal ? "ok" : "MISS";
  case G_VALUE_LE: return f->k <= f->goal ? "ok" : "MISS";
  default: return "";
  }
}

static void goal_text(const figure *f, char *b, size_t n) {
  switch (f->goal_kind) {
  case G_RATIO_GE: snprintf(b, n, ">= %g", f->goal); break;
  case G_RATIO_LE: snprintf(b, n, "<= %g", f->goal); break;
  case G_KAFKA_LT: snprintf(b, n, "< %g ms", f->goal * 1e3); break;
  case G_VALUE_LE: snprintf(b, n, "<= %g", f->goal); break;
  default: snprintf(b, n, "-"); break;
  }
}

static void fmt_val(char *b, size_t n, const figure *f, double s) {
  if (s < 0) snprintf(b, n, "n/a");
  else if (f->unit) snprintf(b, n, "%.0f %s", s, f->unit);
  else if (s < 1e-3) snprintf(b, n, "%.2f us", s * 1e6);
  else if (s < 1) snprintf(b, n, "%.2f ms", s * 1e3);
  else snprintf(b, n, "%.2f s", s);
}

/* ---- peak memory of one statement, in a fresh child ---- */

static long proc_status_kb(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  size_t n = strlen(field);
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, field, n) && line[n] == ':') {
      v = atol(line + n + 1);
      break;
    }
  }
  fclose(f);
  return v;
}

/* The child: open, register, prepare, run once with the parameter kind
** param, and print VmHWM before and after (kB) and the rows. */
static int rss_child(const char *logdir, const char *sql, int param, long customers) {
  sqlite3 *db = open_kafka();
  long before = proc_status_kb("VmHWM");
  side s;
  side_init(&s, "kafka_log", db, sql, logdir, param, customers);
  if (!s.st) die("%s: %s", sql, s.err);
  answer a = run_draw(&s, UINT64_C(0x5eed));
  if (!a.ok) die("%s: %s", sql, s.err);
  sqlite3_finalize(s.st);
  printf("%ld %ld %ld\n", before, proc_status_kb("VmHWM"), a.rows);
  sqlite3_close(db);
  return 0;
}

/* Peak resident memory (kB) of sql in a freshly exec'd child; *base gets
** the child's before the statement. */
static long measure_rss(const char *logdir, const char *sql, int param, long customers,
                        long *base) {
  int fd[2];
  if (pipe(fd)) die("pipe");
  pid_t pid = fork();
  if (pid < 0) die("fork");
  if (pid == 0) {
    dup2(fd[1], 1);
    close(fd[0]);
    close(fd[1]);
    char pk[16], nc[32];
    snprintf(pk, sizeof pk, "%d", param);
    snprintf(nc, sizeof nc, "%ld", customers);
    execl("/proc/self/exe", "logdir", "--rss-child", logdir, sql, pk, nc, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char buf[256] = {0};
  ssize_t k, got = 0;
  while ((k = read(fd[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += k;
  close(fd[0]);
  int status;
  long before = -1, peak = -1, rows = -1;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      sscanf(buf, "%ld %ld %ld", &before, &peak, &rows) != 3) {
    return -1;
  }
  *base = before;
  return peak;
}

/* ---- the figures of each directory ---- */

static const char *const SQL_KEY_K =
    "SELECT offset, timestamp, value FROM kafka_log(?1) WHERE key = ?2";
static const char *const SQL_KEY_SCAN_K =
    "SELECT offset, timestamp, value FROM kafka_log(?1) WHERE +key = ?2";
static const char *const SQL_KEY_N = "SELECT offset, timestamp, value FROM t WHERE key = ?1";

static void key_figures(const opts *o, const dataset *ds) {
  sqlite3 *kdb = open_kafka(), *ndb = open_native(ds->db);
  side k, ks, n;
  side_init(&k, "kafka_log key = ?", kdb, SQL_KEY_K, ds->logdir, P_RANDOM_KEY, o->customers);
  side_init(&ks, "kafka_log +key = ?", kdb, SQL_KEY_SCAN_K, ds->logdir, P_RANDOM_KEY,
            o->customers);
  side_init(&n, "native", ndb, SQL_KEY_N, NULL, P_RANDOM_KEY, o->customers);
  if (!n.st) die("native: %s", n.err);
  char label[96];
  snprintf(label, sizeof label, "1 key = ?, %" PRId64 " records, %d partitions [key | +key]",
           ds->records, ds->topics * ds->partitions);
  figure *f1 = add_fig("key_search", label, SQL_KEY_K, G_RATIO_GE, 5);
  f1->k_name = "key = ?";
  f1->n_name = "+key = ? (full scan)";
  figure *f2 = add_fig("key_search_native", "1 key = ?, against the native index on key",
                       SQL_KEY_K, G_NONE, 0);
  side *all[3] = {&k, &ks, &n};
  f1->correct = f2->correct = compare(all, 3, 3, f1->note, sizeof f1->note);
  uint64_t draw = rnd();
  double b1 = k.st ? batches_decoded(&k, draw) : -1;
  double b2 = k.st ? batches_decoded(&k, draw) : -1;
  snprintf(f2->note, sizeof f2->note, "batches decoded by one search: %.0f first, %.0f the same "
           "search again, of %" PRId64 " in the directory", b1, b2, ds->batches);
  double t[3];
  measure(all, 3, o->min_time, t);
  f1->k = t[0];
  f1->n = t[1];
  f2->k = t[0];
  f2->n = t[2];
  sides_done(all, 3);
  sqlite3_close(kdb);
  sqlite3_close(ndb);
  printf("  measured key searches\n");
  fflush(stdout);
}

static const struct {
  const char *id, *sql;
  int param;
} g_rss_sql[] = {
    {"scan", "SELECT count(*), sum(length(value)) FROM kafka_log(?1)", P_NONE},
    {"count", "SELECT count(*) FROM kafka_log(?1)", P_NONE},
    {"key", "SELECT offset, timestamp, value FROM kafka_log(?1) WHERE key = ?2", P_RANDOM_KEY},
    {"key_scan", "SELECT offset, timestamp, value FROM kafka_log(?1) WHERE +key = ?2",
     P_RANDOM_KEY},
    {"distinct_topic", "SELECT DISTINCT topic FROM kafka_log(?1)", P_NONE},
    {"group_counts",
     "SELECT topic, partition, count(*) FROM kafka_log(?1) GROUP BY topic, partition", P_NONE},
    {"window", "SELECT count(*) FROM kafka_log(?1) WHERE timestamp >= ?2 AND timestamp < ?3",
     P_WINDOW},
    {"last_by_time",
     "SELECT topic, partition, offset, value FROM kafka_log(?1) ORDER BY timestamp DESC LIMIT 10",
     P_NONE},
};

static void rss_figures(const opts *o, const dataset *ds) {
  for (size_t i = 0; i < NELEM(g_rss_sql); i++) {
    char id[40], label[96];
    snprintf(id, sizeof id, "rss_%s", g_rss_sql[i].id);
    snprintf(label, sizeof label, "2 peak RSS, %s", g_rss_sql[i].id);
    figure *f = add_fig(id, label, g_rss_sql[i].sql, G_VALUE_LE, 65536);
    f->unit = "KiB";
    long base = -1;
    double t0 = now();
    long peak = measure_rss(ds->logdir, g_rss_sql[i].sql, g_rss_sql[i].param, o->customers,
                            &base);
    f->k = (double)peak;
    if (peak < 0) snprintf(f->note, sizeof f->note, "the statement failed in its child");
    else snprintf(f->note, sizeof f->note, "%ld KiB before the statement (open, register); "
                  "run in %.2f s", base, now() - t0);
  }
  printf("  measured peak memory\n");
  fflush(stdout);
}

/* Two kafka_log statements and their native twins, timed together: f1
** (a against native), f2 (b against native). */
static void pair_figures(const opts *o, const dataset *ds, sqlite3 *kdb, sqlite3 *ndb,
                         figure *fa, const char *ka, const char *na, figure *fb,
                         const char *kb, const char *nb, int param) {
  side a, an, b, bn;
  side_init(&a, "kafka_log", kdb, ka, ds->logdir, param, o->customers);
  side_init(&an, "native", ndb, na, NULL, param, o->customers);
  side_init(&b, "kafka_log", kdb, kb, ds->logdir, param, o->customers);
  side_init(&bn, "native", ndb, nb, NULL, param, o->customers);
  if (!an.st || !bn.st) die("native: %s%s", an.err, bn.err);
  side *ca[2] = {&a, &an}, *cb[2] = {&b, &bn};
  fa->correct = compare(ca, 2, 2, fa->note, sizeof fa->note);
  fb->correct = compare(cb, 2, 2, fb->note, sizeof fb->note);
  side *all[4] = {&a, &an, &b, &bn};
  double t[4];
  measure(all, 4, o->min_time, t);
  fa->k = t[0];
  fa->n = t[1];
  fb->k = t[2];
  fb->n = t[3];
  sides_done(all, 4);
}

/* 1 when sql's plan on db sorts (a temp b-tree, for GROUP BY, ORDER BY or
** DISTINCT), 0 when not, -1 when EXPLAIN QUERY PLAN fails. */
static int plan_sorts(sqlite3 *db, const char *sql) {
  char q[512];
  snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK) return -1;
  int sorts = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *d = (const char *)sqlite3_column_text(st, 3);
    if (d && strstr(d, "TEMP B-TREE")) sorts = 1;
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? sorts : -1;
}

static const char *plan_text(int sorts) {
  return sorts < 0 ? "plan unknown" : sorts ? "a temp b-tree" : "no temp b-tree";
}

/* Figure 4: the GROUP BY counts and the count(*) of the directory on
** kafka_log, the native table and the do-nothing table (the native rows
** by topic and partition, keys and values left out: neither statement
** reads them), the six sides timed together. */
static void group_counts(const opts *o, const dataset *ds, sqlite3 *kdb, sqlite3 *ndb) {
  static const char *const gk =
      "SELECT topic, partition, count(*) FROM kafka_log(?1) GROUP BY topic, partition";
  static const char *const gn = "SELECT topic, partition, count(*) FROM t GROUP BY topic, partition";
  static const char *const gf =
      "SELECT topic, partition, count(*) FROM bench_floor GROUP BY topic, partition";
  static const char *const ck = "SELECT count(*) FROM kafka_log(?1)";
  static const char *const cn = "SELECT count(*) FROM t";
  static const char *const cf = "SELECT count(*) FROM bench_floor";
  figure *g1 = add_fig("group_counts", "4 count(*) GROUP BY topic, partition", gk, G_NONE, 0);
  figure *g2 = add_fig("count", "4 count(*) of the directory", ck, G_NONE, 0);
  figure *g3 = add_fig("group_over_count", "4 GROUP BY counts / count(*) [group | count(*)]", gk,
                       G_RATIO_LE, 1.5);
  figure *f1 = add_fig("floor_group_counts", "4b GROUP BY counts, do-nothing vtab [floor]", gf,
                       G_NONE, 0);
  figure *f2 = add_fig("floor_count", "4b count(*) of the directory, do-nothing vtab [floor]", cf,
                       G_NONE, 0);
  figure *f3 = add_fig("group_over_floor_group",
                       "4c GROUP BY counts / the do-nothing table's GROUP BY [kafka_log | floor]",
                       gk, G_RATIO_LE, 1.5);
  g3->k_name = "group";
  g3->n_name = "count(*)";
  f1->k_name = f2->k_name = "floor";
  f1->n_name = f2->n_name = "native";
  f3->k_name = "kafka_log";
  f3->n_name = "floor";

  double t0 = now();
  floor_rows fr;
  int have_floor = floor_rows_load_grouped(ndb, &fr) == 0;
  if (have_floor && floor_register(kdb, &fr) != SQLITE_OK) {
    floor_rows_free(&fr);
    have_floor = 0;
  }
  double load_s = now() - t0;
  side kg, ng, fg, kc, nc, fc;
  side_init(&kg, "kafka_log", kdb, gk, ds->logdir, P_NONE, o->customers);
  side_init(&ng, "native", ndb, gn, NULL, P_NONE, o->customers);
  side_init(&kc, "kafka_log", kdb, ck, ds->logdir, P_NONE, o->customers);
  side_init(&nc, "native", ndb, cn, NULL, P_NONE, o->customers);
  if (!ng.st || !nc.st) die("native: %s%s", ng.err, nc.err);
  if (have_floor) {
    side_init(&fg, "floor", kdb, gf, NULL, P_NONE, o->customers);
    side_init(&fc, "floor", kdb, cf, NULL, P_NONE, o->customers);
  } else { /* not measured: n/a */
    memset(&fg, 0, sizeof fg);
    memset(&fc, 0, sizeof fc);
    fg.name = fc.name = "floor";
    snprintf(f1->note, sizeof f1->note, "the native rows could not be loaded");
  }
  side *a1[2] = {&kg, &ng}, *a2[2] = {&kc, &nc}, *b1[2] = {&fg, &ng}, *b2[2] = {&fc, &nc};
  g1->correct = compare(a1, 2, 2, g1->note, sizeof g1->note);
  g2->correct = compare(a2, 2, 2, g2->note, sizeof g2->note);
  if (have_floor) {
    f1->correct = compare(b1, 2, 2, f1->note, sizeof f1->note);
    f2->correct = compare(b2, 2, 2, f2->note, sizeof f2->note);
  }
  int sorts_k = plan_sorts(kdb, gk), sorts_f = have_floor ? plan_sorts(kdb, gf) : -1;

  side *all[6] = {&kg, &ng, &kc, &nc, &fg, &fc};
  double t[6];
  measure(all, 6, o->min_time, t);
  g1->k = t[0];
  g1->n = t[1];
  g2->k = t[2];
  g2->n = t[3];
  f1->k = t[4];
  f1->n = t[1];
  f2->k = t[5];
  f2->n = t[3];
  g3->k = t[0];
  g3->n = t[2];
  g3->correct = g1->correct && g2->correct;
  f3->k = t[0];
  f3->n = t[4];
  f3->correct = g1->correct && f1->correct;
  double per = (double)ds->records;
  if (have_floor && t[4] > 0 && t[5] > 0 && t[2] > 0) {
    snprintf(f1->note + strlen(f1->note), sizeof f1->note - strlen(f1->note),
             "%s%.1f ns a row, %.2fx its own count(*) (%.1f ns a row); kafka_log's count(*) "
             "%.1f ns a row; the table's %.0f MiB of rows loaded in %.1f s",
             f1->note[0] ? "; " : "", t[4] / per * 1e9, t[4] / t[5], t[5] / per * 1e9,
             t[2] / per * 1e9, (double)fr.n * sizeof *fr.rows / 1048576, load_s);
  }
  if (t[0] > 0 && t[4] > 0) {
    snprintf(f3->note, sizeof f3->note, "kafka_log's GROUP BY %+.1f ns a row from the floor's; "
             "plans: kafka_log %s, the floor %s", (t[0] - t[4]) / per * 1e9, plan_text(sorts_k),
             plan_text(sorts_f));
  }
  sides_done(all, 6);
  if (have_floor) {
    sqlite3_create_module_v2(kdb, "bench_floor", NULL, NULL, NULL);
    floor_rows_free(&fr);
  }
  printf("  measured GROUP BY\n");
  fflush(stdout);
}

static void group_figures(const opts *o, const dataset *ds) {
  sqlite3 *kdb = open_kafka(), *ndb = open_native(ds->db);
  char label[96];
  snprintf(label, sizeof label, "3 DISTINCT topic, %" PRId64 " records", ds->records);
  figure *d1 = add_fig("distinct_topic", label, "SELECT DISTINCT topic FROM kafka_log(?1)",
                       G_KAFKA_LT, 0.005);
  figure *d2 = add_fig("distinct_topic_partition", "3 DISTINCT topic, partition",
                       "SELECT DISTINCT topic, partition FROM kafka_log(?1)", G_KAFKA_LT, 0.005);
  pair_figures(o, ds, kdb, ndb, d1, d1->sql, "SELECT DISTINCT topic FROM t", d2, d2->sql,
               "SELECT DISTINCT topic, partition FROM t", P_NONE);
  printf("  measured DISTINCT\n");
  fflush(stdout);

  group_counts(o, ds, kdb, ndb);

  side k, n;
  side_init(&k, "kafka_log", kdb, SQL_KEY_K, ds->logdir, P_FIXED_KEY, o->customers);
  side_init(&n, "native", ndb, SQL_KEY_N, NULL, P_FIXED_KEY, o->customers);
  if (!n.st) die("native: %s", n.err);
  char key[KEY_MAX];
  customer_key(key, k.fixed);
  figure *c1 = add_fig("customer_repeated", "5 one customer by key, repeated", SQL_KEY_K, G_NONE,
                       0);
  side *two[2] = {&k, &n};
  c1->correct = compare(two, 2, 2, c1->note, sizeof c1->note);
  double t[2];
  measure(two, 2, o->min_time, t);
  c1->k = t[0];
  c1->n = t[1];
  sides_done(two, 2);
  /* What a first search on a fresh connection decodes, then the repeat. */
  sqlite3 *fdb = open_kafka();
  side f;
  side_init(&f, "kafka_log", fdb, SQL_KEY_K, ds->logdir, P_FIXED_KEY, o->customers);
  double b1 = f.st ? batches_decoded(&f, 0) : -1;
  double b2 = f.st ? batches_decoded(&f, 0) : -1;
  sqlite3_finalize(f.st);
  sqlite3_close(fdb);
  figure *c2 = add_fig("customer_repeated_batches", "5 batches decoded by the repeated search",
                       SQL_KEY_K, G_VALUE_LE, 0.1 * (double)ds->batches);
  c2->unit = "batches";
  c2->k = b2;
  c2->correct = c1->correct;
  snprintf(c2->note, sizeof c2->note, "key %s: %.0f batches decoded by the first search on a "
           "fresh connection, %.0f by the same search again, of %" PRId64 " in the directory",
           key, b1, b2, ds->batches);
  sqlite3_close(kdb);
  sqlite3_close(ndb);
  printf("  measured one customer's records\n");
  fflush(stdout);
}

/* Warm both page caches: one full read of each side. */
static void warm(const dataset *ds) {
  sqlite3 *kdb = open_kafka(), *ndb = open_native(ds->db);
  side k, n;
  const char *q = "SELECT count(*), sum(length(key)), sum(length(value)) FROM ";
  char sk[200], sn[200];
  snprintf(sk, sizeof sk, "%skafka_log(?1)", q);
  snprintf(sn, sizeof sn, "%st", q);
  side_init(&k, "kafka_log", kdb, sk, ds->logdir, P_NONE, 1);
  side_init(&n, "native", ndb, sn, NULL, P_NONE, 1);
  if (!k.st) die("warm-up: %s", k.err);
  answer a = run_draw(&k, 0), b = run_draw(&n, 0);
  if (!a.ok || a.sum != b.sum) die("warm-up of %s: %s", ds->logdir, a.ok ? "answers differ" : k.err);
  sqlite3_finalize(k.st);
  sqlite3_finalize(n.st);
  sqlite3_close(kdb);
  sqlite3_close(ndb);
}

/* ---- output ---- */

static void print_table(void) {
  printf("\n%-72s %12s %12s %8s %9s %s\n", "figure", "kafka_log", "native", "ratio", "goal", "");
  for (int i = 0; i < g_nfig; i++) {
    figure *f = &g_fig[i];
    char a[32], b[32], r[32], gl[32], lbl[160];
    fmt_val(a, sizeof a, f, f->k);
    fmt_val(b, sizeof b, f, f->n);
    double q = fig_ratio(f);
    if (f->goal_kind == G_RATIO_LE && q > 0) q = 1 / q;
    if (q < 0) snprintf(r, sizeof r, "-");
    else snprintf(r, sizeof r, "%.3f", q);
    goal_text(f, gl, sizeof gl);
    snprintf(lbl, sizeof lbl, "%s", f->label);
    printf("%-72s %12s %12s %8s %9s %s\n", lbl, a, f->unit && f->n < 0 ? "" : b, r, gl,
           verdict(f));
  }
  printf("\nratio = native time / kafka_log time (>1: kafka_log faster); where the label names "
         "two columns [a | b], time b / time a, and for the <= goals time a / time b\n");
  for (int i = 0; i < g_nfig; i++) {
    if (g_fig[i].k_name) {
      printf("columns, %s: %s | %s\n", g_fig[i].id, g_fig[i].k_name, g_fig[i].n_name);
    }
  }
  for (int i = 0; i < g_nfig; i++) {
    if (g_fig[i].note[0]) printf("note, %s: %s\n", g_fig[i].id, g_fig[i].note);
  }
  printf("\nstatements (kafka_log side, ?1 the log directory):\n");
  for (int i = 0; i < g_nfig; i++) {
    if (i && !strcmp(g_fig[i].sql, g_fig[i - 1].sql)) continue;
    printf("  %-26s %s\n", g_fig[i].id, g_fig[i].sql);
  }
}

static void write_json(const opts *o, const dataset *ds[2], const char *cpu, double load0,
                       double load1) {
  char path[4400];
  snprintf(path, sizeof path, "%s/logdir.json", o->out);
  FILE *j = fopen(path, "w");
  if (!j) die("%s: %s", path, strerror(errno));
  fprintf(j, "{\n  \"machine\": {\"cpu\": ");
  json_string(j, cpu);
  fprintf(j, ", \"cpus\": %ld, \"sqlite\": \"%s\", \"loadavg_start\": %.2f, "
          "\"loadavg_end\": %.2f},\n  \"config\": {\"customers\": %ld, \"segment_bytes\": %ld, "
          "\"batch_records\": %d, \"min_time_s\": %g, \"logs\": {",
          sysconf(_SC_NPROCESSORS_ONLN), sqlite3_libversion(), load0, load1, o->customers,
          o->segment_bytes, PER_BATCH, o->min_time);
  int first = 1;
  for (int i = 0; i < 2; i++) {
    if (!ds[i]->records) continue;
    fprintf(j, "%s\n    \"%s\": {\"topics\": %d, \"partitions_per_topic\": %d, \"records\": %"
            PRId64 ", \"batches\": %" PRId64 ", \"segments\": %ld, \"log_bytes\": %" PRId64
            ", \"native_db_bytes\": %" PRId64 ", \"write_s\": %.1f}",
            first ? "" : ",", ds[i]->name, ds[i]->topics, ds[i]->partitions, ds[i]->records,
            ds[i]->batches, ds[i]->segments, ds[i]->log_bytes, ds[i]->db_bytes,
            ds[i]->write_s);
    first = 0;
  }
  fprintf(j, "}},\n  \"figures\": [");
  for (int i = 0; i < g_nfig; i++) {
    figure *f = &g_fig[i];
    char gl[32];
    goal_text(f, gl, sizeof gl);
    fprintf(j, "%s\n    {\"id\": \"%s\", \"what\": ", i ? "," : "", f->id);
    json_string(j, f->label);
    fprintf(j, ", \"sql\": ");
    json_string(j, f->sql);
    fprintf(j, ", \"unit\": \"%s\", \"kafka_log\": ", f->unit ? f->unit : "s");
    json_number(j, f->k);
    fprintf(j, ", \"native\": ");
    json_number(j, f->n);
    if (f->k_name) fprintf(j, ", \"columns\": [\"%s\", \"%s\"]", f->k_name, f->n_name);
    double q = fig_ratio(f);
    if (f->goal_kind == G_RATIO_LE && q > 0) q = 1 / q;
    fprintf(j, ", \"ratio\": ");
    json_number(j, q);
    fprintf(j, ", \"goal\": ");
    if (f->goal_kind == G_NONE) fprintf(j, "null");
    else json_string(j, gl);
    fprintf(j, ", \"verdict\": \"%s\", \"same_answers\": %s, \"note\": ", verdict(f),
            f->correct < 0 ? "null" : f->correct ? "true" : "false");
    json_string(j, f->note);
    fprintf(j, "}");
  }
  fprintf(j, "\n  ]\n}\n");
  fclose(j);
}

static void usage(void) {
  fprintf(stderr,
          "usage: logdir [--topics N] [--partitions N] [--records N] [--group-topics N]\n"
          "              [--group-partitions N] [--group-records N] [--customers N]\n"
          "              [--segment-bytes B] [--min-time S] [--data DIR] [--out DIR]\n"
          "              [--only keys|group] [--quick] [--keep]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc == 6 && !strcmp(argv[1], "--rss-child")) {
    return rss_child(argv[2], argv[3], atoi(argv[4]), atol(argv[5]));
  }
  opts o = {.topics = 4, .partitions = 25, .records = 10000000, .gtopics = 10,
            .gpartitions = 10, .grecords = 3000000, .customers = 100000,
            .segment_bytes = 8L << 20, .min_time = 1.0, .out = "out"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && ++i)
    if (ARG("--topics")) o.topics = atoi(v);
    else if (ARG("--partitions")) o.partitions = atoi(v);
    else if (ARG("--records")) o.records = atol(v);
    else if (ARG("--group-topics")) o.gtopics = atoi(v);
    else if (ARG("--group-partitions")) o.gpartitions = atoi(v);
    else if (ARG("--group-records")) o.grecords = atol(v);
    else if (ARG("--customers")) o.customers = atol(v);
    else if (ARG("--segment-bytes")) o.segment_bytes = atol(v);
    else if (ARG("--min-time")) o.min_time = atof(v);
    else if (ARG("--data")) o.data = v;
    else if (ARG("--out")) o.out = v;
    else if (ARG("--only")) o.only = v;
    else if (!strcmp(a, "--keep")) o.keep = 1;
    else if (!strcmp(a, "--quick")) {
      o.records = 200000;
      o.grecords = 60000;
      o.customers = 5000;
      o.segment_bytes = 1L << 20;
      o.min_time = 0.1;
    } else {
      usage();
    }
#undef ARG
  }
  if (o.topics < 1 || o.partitions < 1 || o.gtopics < 1 || o.gpartitions < 1 ||
      o.records < o.topics || o.grecords < o.gtopics || o.customers < 10 ||
      o.segment_bytes < 65536) {
    die("need --topics, --partitions >= 1, --records >= --topics, --customers >= 10, "
        "--segment-bytes >= 65536");
  }
#define WANT(g) (!o.only || !strcmp(o.only, g))
  char data[3000];
  make_dirs(data, sizeof data, o.data, "logdir", o.out);
  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  double load0[3] = {0, 0, 0}, load1[3] = {0, 0, 0};
  getloadavg(load0, 3);
  printf("kafkalog logdir: keyed log directories of %ld and %ld records, %ld customers\n"
         "machine: %s, %ld CPUs; SQLite %s\ndata in %s\n\n",
         o.records, o.grecords, o.customers, cpu, sysconf(_SC_NPROCESSORS_ONLN),
         sqlite3_libversion(), data);
  fflush(stdout);

  dataset keys = {.name = "keys", .topics = o.topics, .partitions = o.partitions};
  dataset group = {.name = "group", .topics = o.gtopics, .partitions = o.gpartitions};
  struct {
    const char *want;
    dataset *ds;
    long records;
  } sets[] = {{"keys", &keys, o.records}, {"group", &group, o.grecords}};
  for (size_t i = 0; i < NELEM(sets); i++) {
    if (!WANT(sets[i].want)) continue;
    dataset *ds = sets[i].ds;
    write_dataset(ds, data, sets[i].records, o.customers, o.segment_bytes);
    printf("%s: %d x %d partitions, %" PRId64 " records, %" PRId64 " batches, %ld segments, "
           "%.1f MiB; native db %.1f MiB (both written in %.1f s)\n",
           ds->name, ds->topics, ds->partitions, ds->records, ds->batches, ds->segments,
           (double)ds->log_bytes / 1048576, (double)ds->db_bytes / 1048576, ds->write_s);
    fflush(stdout);
    double t0 = now();
    warm(ds);
    if (ds == &keys) {
      key_figures(&o, ds);
      rss_figures(&o, ds);
    } else {
      group_figures(&o, ds);
    }
    printf("  %s figures in %.1f s\n", ds->name, now() - t0);
    fflush(stdout);
  }
  getloadavg(load1, 3);
  print_table();
  printf("\nload average (1 min) at start %.2f, at end %.2f\n", load0[0], load1[0]);
  const dataset *both[2] = {&keys, &group};
  write_json(&o, both, cpu, load0[0], load1[0]);
  free(keys.nrec);
  free(group.nrec);
  if (!o.keep) rm_rf(data);
  else printf("data kept in %s\n", data);
  return 0;
}
