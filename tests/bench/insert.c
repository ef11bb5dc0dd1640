/*
** insert.c - writing: INSERT into a kafka_log table against INSERT into a
** native SQLite table, the same records, in the same run.
**
**   insert [--records N] [--commits N] [--runs N] [--data DIR] [--out DIR] [--quick]
**          [--only FIGURE --side SIDE]   (one figure of one side, for perf)
**
** Records: --records (1,000,000) records of a 100-byte value (text, a
** counter and filler), a 10-byte key ("user-NNNNN") and a millisecond
** timestamp.  Each figure is the median of --runs (3) runs, the sides
** alternating, each run into a fresh directory / database file under
** --data ($TMPDIR or /var/tmp, a real disk: commits fsync).
**
** Native side: a file database with SQLite's defaults (rollback journal,
** synchronous=FULL), CREATE TABLE t(offset INTEGER PRIMARY KEY, timestamp
** INTEGER, key BLOB, value BLOB), with and without CREATE INDEX t_ts ON
** t(timestamp) (the index a time window needs: kafka_log answers windows
** from its time index, which the append writes).  kafka_log side: CREATE
** VIRTUAL TABLE t USING kafka_log('<dir>', ...) with Kafka's defaults
** (1 GiB segments, index entry every 4096 bytes, 1 MiB batches), codec
** none, lz4 and zstd.
**
** Figures:
**   1 one transaction: BEGIN; a prepared INSERT(key, value, timestamp) with
**     bound values, stepped N times; COMMIT.  Records/s, and the ratio
**     native time / kafka_log time.
**   2 BEGIN; INSERT INTO t(...) SELECT ... FROM staging; COMMIT: the same
**     records from a table of an attached in-memory database.
**   3 --commits (200) autocommit INSERTs of one record: the time of one
**     durable commit.
** After each kafka_log run, the records are read back and counted.
** Output: a table on stdout and OUT/insert.json.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#define BENCH_NAME "insert"
#include "benchutil.h"

static int64_t g_records = 1000000;
static int g_commits = 200, g_runs = 3;
static char g_data[3800];
static int64_t g_bytes[5];  /* bytes on disk after figure 1 */

static void exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) die("%s: %s", sql, err);
}

/* A connection ready to insert into t: kind 0 native, 1 native with the
** timestamp index, 2.. kafka_log with codec kind - 2 (none, lz4, zstd). */
static const char *const kinds[] = {"native", "native + ts index", "kafka_log none",
                                    "kafka_log lz4", "kafka_log zstd"};
static sqlite3 *open_side(int kind, int run, char *path, size_t n) {
  sqlite3 *db;
  snprintf(path, n, "%s/k%d-r%d", g_data, kind, run);
  rm_rf(path);
  if (kind < 2) {
    if (sqlite3_open(path, &db) != SQLITE_OK) die("open %s", path);
    exec(db, "CREATE TABLE t(offset INTEGER PRIMARY KEY, timestamp INTEGER, key BLOB, value BLOB)");
    if (kind == 1) exec(db, "CREATE INDEX t_ts ON t(timestamp)");
    return db;
  }
  db = open_kafka();
  if (mkdir(path, 0755) != 0) die("mkdir %s", path); /* the new log's parent */
  static const char *const codec[] = {"none", "lz4", "zstd"};
  char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE t USING kafka_log('%q/events-0', mode='create',"
                              " compression='%s')", path, codec[kind - 2]);
  exec(db, sql);
  sqlite3_free(sql);
  return db;
}

/* Record i: digits written by hand, so that making the record costs
** little next to inserting it (on both sides alike). */
static void record(int64_t i, char *key, char *value) {
  memcpy(key, "user-", 5);
  uint64_t u = rnd() % 100000;
  for (int d = 9; d >= 5; d--, u /= 10) key[d] = (char)('0' + u % 10);
  memcpy(value, "{\"n\":", 5);
  char digits[24];
  int nd = 0;
  uint64_t v = (uint64_t)i;
  do digits[nd++] = (char)('0' + v % 10); while ((v /= 10) != 0);
  for (int d = 0; d < nd; d++) value[5 + d] = digits[nd - 1 - d];
  memcpy(value + 5 + nd, ",\"pad\":\"", 8);
  memset(value + 13 + nd, 'a' + (int)(i % 26), (size_t)(98 - 13 - nd));
  value[98] = '"';
  value[99] = '}';
}

/* Step st (an INSERT of ?1 key, ?2 value, ?3 timestamp) for records
** from .. from + n - 1. */
static void insert_records(sqlite3 *db, sqlite3_stmt *st, int64_t from, int64_t n) {
  char key[16], value[128];
  for (int64_t i = from; i < from + n; i++) {
    record(i, key, value);
    sqlite3_bind_blob(st, 1, key, 10, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, value, 100, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, 1732924800000 + i);
    if (sqlite3_step(st) != SQLITE_DONE) die("insert: %s", sqlite3_errmsg(db));
    sqlite3_reset(st);
  }
}

/* Every record is there (count and bytes), then the side is removed. */
static void read_back(sqlite3 *db, int kind, const char *path) {
  sqlite3_stmt *c;
  sqlite3_prepare_v2(db, "SELECT count(*), sum(length(value)) FROM t", -1, &c, NULL);
  if (sqlite3_step(c) != SQLITE_ROW || sqlite3_column_int64(c, 0) != g_records ||
      sqlite3_column_int64(c, 1) != g_records * 100) {
    die("%s: read back %lld records, %lld bytes", kinds[kind],
        (long long)sqlite3_column_int64(c, 0), (long long)sqlite3_column_int64(c, 1));
  }
  sqlite3_finalize(c);
  sqlite3_close(db);
  rm_rf(path);
}

/* Figure 1: seconds for one transaction of g_records bound INSERTs. */
static double bound_insert(int kind, int run) {
  char path[3900];
  sqlite3 *db = open_side(kind, run, path, sizeof path);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "INSERT INTO t(key, value, timestamp) VALUES (?1, ?2, ?3)", -1, &st,
                         NULL) != SQLITE_OK) {
    die("prepare: %s", sqlite3_errmsg(db));
  }
  double t0 = now();
  exec(db, "BEGIN");
  insert_records(db, st, 0, g_records);
  exec(db, "COMMIT");
  double t = now() - t0;
  sqlite3_finalize(st);
  if (run == 0) {
    char d[4000];
    if (snprintf(d, sizeof d, "%s/events-0", path) >= (int)sizeof d) die("path too long");
    struct stat sb;
    g_bytes[kind] = kind < 2 ? (stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0) : dir_bytes(d, NULL);
  }
  if (kind < 2) { /* read back through a second, read-only connection */
    sqlite3_close(db);
    db = open_native(path);
  }
  read_back(db, kind, path);
  return t;
}

/* Figure 2: INSERT ... SELECT from a staging table (the same records,
** in an attached in-memory database, filled before the clock starts). */
static double select_insert(int kind, int run) {
  char path[3900];
  sqlite3 *db = open_side(kind, run, path, sizeof path);
  exec(db, "ATTACH ':memory:' AS s;"
           " CREATE TABLE s.staging(key BLOB, value BLOB, timestamp INTEGER)");
  sqlite3_stmt *st;
  sqlite3_prepare_v2(db, "INSERT INTO s.staging VALUES (?1, ?2, ?3)", -1, &st, NULL);
  exec(db, "BEGIN");
  insert_records(db, st, 0, g_records);
  exec(db, "COMMIT");
  sqlite3_finalize(st);
  double t0 = now();
  exec(db, "BEGIN; INSERT INTO t(key, value, timestamp) SELECT key, value, timestamp"
           " FROM s.staging; COMMIT");
  double t = now() - t0;
  read_back(db, kind, path);
  return t;
}

/* Figure 3: seconds per autocommit INSERT of one record. */
static double autocommit(int kind, int run) {
  char path[3900];
  sqlite3 *db = open_side(kind, run, path, sizeof path);
  sqlite3_stmt *st;
  sqlite3_prepare_v2(db, "INSERT INTO t(key, value, timestamp) VALUES (?1, ?2, ?3)", -1, &st, NULL);
  double t0 = now();
  insert_records(db, st, 0, g_commits); /* each step its own transaction */
  double t = (now() - t0) / g_commits;
  sqlite3_finalize(st);
  sqlite3_close(db);
  rm_rf(path);
  return t;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  const char *out = ".", *given = NULL;
  int only = 0, side = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--records") && i + 1 < argc) g_records = atoll(argv[++i]);
    else if (!strcmp(argv[i], "--commits") && i + 1 < argc) g_commits = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) g_runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--data") && i + 1 < argc) given = argv[++i];
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
    else if (!strcmp(argv[i], "--quick")) g_records = 50000, g_commits = 20, g_runs = 1;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--side") && i + 1 < argc) side = atoi(argv[++i]);
    else die("usage: insert [--records N] [--commits N] [--runs N] [--data DIR] [--out DIR] [--quick]");
  }
  if (g_runs < 1 || g_runs > 15) die("--runs: 1 to 15");
  make_dirs(g_data, sizeof g_data, given, "insert", out);
  if (only >= 1 && only <= 3 && side >= 0 && side < 5) {
    double (*f[3])(int, int) = {bound_insert, select_insert, autocommit};
    printf("%s, figure %d: %.3f s\n", kinds[side], only, f[only - 1](side, 0));
    rm_rf(g_data);
    return 0;
  }
  char cpu[256];
  cpu_model(cpu, sizeof cpu);
  printf("insert: %lld records of 100-byte values, %d autocommits, median of %d runs, %s\n",
         (long long)g_records, g_commits, g_runs, cpu);
  double (*figs[3])(int, int) = {bound_insert, select_insert, autocommit};
  const char *names[3] = {"one transaction, bound INSERT", "INSERT ... SELECT FROM staging",
                          "autocommit INSERT (per commit)"};
  double med[3][5];
  for (int f = 0; f < 3; f++) {
    double t[5][15];
    for (int r = 0; r < g_runs; r++) {
      for (int k = 0; k < 5; k++) {
        int kind = r % 2 ? 4 - k : k; /* alternate the order */
        t[kind][r] = figs[f](kind, r);
      }
    }
    for (int k = 0; k < 5; k++) {
      qsort(t[k], (size_t)g_runs, sizeof(double), cmp_d);
      med[f][k] = t[k][g_runs / 2];
    }
  }
  char jpath[4300];
  snprintf(jpath, sizeof jpath, "%s/insert.json", out);
  FILE *j = fopen(jpath, "w");
  if (!j) die("cannot write %s", jpath);
  fprintf(j, "{\"records\": %lld, \"commits\": %d, \"runs\": %d, \"cpu\": \"%s\", \"figures\": [",
          (long long)g_records, g_commits, g_runs, cpu);
  for (int f = 0; f < 3; f++) {
    printf("\n%d %s\n", f + 1, names[f]);
    printf("  %-20s %12s %14s %26s\n", "side", f == 2 ? "ms/commit" : "seconds",
           f == 2 ? "commits/s" : "records/s", "ratio vs native (no index)");
    fprintf(j, "%s{\"figure\": \"%s\", \"sides\": [", f ? ", " : "", names[f]);
    for (int k = 0; k < 5; k++) {
      double rate = f == 2 ? 1 / med[f][k] : (double)g_records / med[f][k];
      double ratio = med[f][0] / med[f][k], ratio_i = med[f][1] / med[f][k];
      if (f == 2) printf("  %-20s %12.3f %14.0f", kinds[k], med[f][k] * 1e3, rate);
      else printf("  %-20s %12.3f %14.0f", kinds[k], med[f][k], rate);
      if (k >= 2) printf("   %6.2fx (vs indexed %5.2fx)", ratio, ratio_i);
      printf("\n");
      fprintf(j, "%s{\"side\": \"%s\", \"seconds\": %.6f, \"rate\": %.1f, \"ratio_native\": %.3f,"
              " \"ratio_native_indexed\": %.3f}", k ? ", " : "", kinds[k], med[f][k], rate, ratio,
              ratio_i);
    }
    fprintf(j, "]}");
  }
  printf("\nbytes on disk after figure 1:");
  for (int k = 0; k < 5; k++) printf(" %s %.1f MB%s", kinds[k], g_bytes[k] / 1e6, k < 4 ? "," : "\n");
  fprintf(j, "]}\n");
  fclose(j);
  rm_rf(g_data);
  return 0;
}
