/*
** benchutil.h - what the benchmark programs share: a fatal error that
** names the program, the monotonic clock every figure is timed with, the
** xorshift64* generator their parameters are drawn from (fixed seed: runs
** draw the same parameters) and the splitmix64 finaliser their data is
** made with, their connections and statements that must succeed, their
** data directory (made, then removed), the order medians are taken in, the
** JSON values of their reports and the CPU's name for them.  Header-only:
** each program is one file (static inline: a program uses some of it).
*/
#ifndef KL_BENCHUTIL_H
#define KL_BENCHUTIL_H

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#ifndef BENCH_NAME
#error "define BENCH_NAME (the program's name, for messages) before including benchutil.h"
#endif

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", BENCH_NAME);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) {
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * UINT64_C(2685821657736338717);
}

/* splitmix64's finaliser: record contents are drawn from it, seeded by
** what they belong to, so that the log and the native table hold the
** same records. */
static inline uint64_t mix(uint64_t z) {
  z += UINT64_C(0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* qsort order of doubles, ascending. */
static inline int cmp_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A JSON string of s, and a JSON number of v (null when negative or NaN:
** a figure not measured). */
static inline void json_string(FILE *j, const char *s) {
  fputc('"', j);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(j, "\\%c", *s);
    else if ((unsigned char)*s < 0x20) fprintf(j, "\\u%04x", *s);
    else fputc(*s, j);
  }
  fputc('"', j);
}

static inline void json_number(FILE *j, double v) {
  if (v < 0 || isnan(v)) fprintf(j, "null");
  else fprintf(j, "%.6g", v);
}

int sqlite3_kafkalog_init(sqlite3 *db, char **errmsg, const sqlite3_api_routines *api);

/* A connection with the module registered (linked in, not loaded). */
static sqlite3 *open_kafka(void) {
  sqlite3 *db;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) die("open :memory:");
  char *err = NULL;
  if (sqlite3_kafkalog_init(db, &err, NULL) != SQLITE_OK) die("kafkalog init: %s", err);
  return db;
}

/* Run sql on db, or stop naming it. */
static inline void exec_or_die(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) die("%s: %s", sql, err ? err : "?");
}

/* The native side's database, read-only. */
static sqlite3 *open_native(const char *path) {
  sqlite3 *db;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) die("open %s", path);
  return db;
}

/* A fresh directory <given or $TMPDIR or /var/tmp>/kafkalog-<stem>.XXXXXX
** for the data, and out made if missing. */
static void make_dirs(char *data, size_t n, const char *given, const char *stem, const char *out) {
  const char *tmp = given ? given : (getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp");
  snprintf(data, n, "%s/kafkalog-%s.XXXXXX", tmp, stem);
  if (!mkdtemp(data)) die("mkdtemp %s: %s", data, strerror(errno));
  mkdir(out, 0755);
}

/* Remove path and everything under it. */
static void rm_rf(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      struct dirent *de;
      char p[4400];
      while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        rm_rf(p);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Bytes of the regular files in dir; *segments (may be NULL) gets how many
** of them are <name>.log files. */
static int64_t dir_bytes(const char *dir, int *segments) {
  DIR *d = opendir(dir);
  int64_t total = 0;
  if (segments) *segments = 0;
  if (!d) return 0;
  struct dirent *de;
  char p[4400];
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
    struct stat st;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
      total += st.st_size;
      size_t n = strlen(de->d_name);
      if (segments && n > 4 && !strcmp(de->d_name + n - 4, ".log")) (*segments)++;
    }
  }
  closedir(d);
  return total;
}

/* The CPU's model name from /proc/cpuinfo, or "?". */
static void cpu_model(char *cpu, size_t n) {
  snprintf(cpu, n, "?");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10)) {
      char *c = strchr(line, ':');
      if (c) snprintf(cpu, n, "%s", c + 2);
      cpu[strcspn(cpu, "\n")] = 0;
      break;
    }
  }
  fclose(f);
}

#endif
