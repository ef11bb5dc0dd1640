/*
** sqltest.h - helpers shared by the SQL-level tests (tests/sql/test_*.c):
** open a connection with the kafka_log module registered, run statements
** with bound parameters, fetch one value, render a whole result set as text
** (for exact comparisons), read the work counters of kafka_log_stats().
**
** Header-only (static inline) because tests/CMakeLists.txt builds each
** tests/sql/test_X.c as its own program.  Every helper fails the current
** cmocka test, with SQLite's message, on an unexpected error.
**
** Parameter lists are described by a format string, one letter a parameter:
**   t  const char *  text (NULL binds NULL)
**   i  int64_t       integer
**   n  (no argument) NULL
*/
#ifndef KL_SQLTEST_H
#define KL_SQLTEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "testutil.h"

/* The module's entry point (vtab/kafkalog.c), compiled with SQLITE_CORE. */
int sqlite3_kafkalog_init(sqlite3 *db, char **errmsg,
                          const sqlite3_api_routines *api);

/* Value returned by st_int_or() for SQL NULL when the caller asks so. */
#define ST_NULL INT64_MIN

/* ---- a growable string ---- */

typedef struct st_buf {
  char *p;      /* NUL-terminated text, or NULL while empty */
  size_t n;     /* bytes used, excluding the NUL */
  size_t cap;   /* bytes allocated */
} st_buf;

static inline void st_buf_vprintf(st_buf *b, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int k = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  assert_true(k >= 0);
  if (b->n + (size_t)k + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + (size_t)k + 1) cap *= 2;
    b->p = realloc(b->p, cap);
    assert_non_null(b->p);
    b->cap = cap;
  }
  vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
  b->n += (size_t)k;
}

static inline void st_buf_printf(st_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  st_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

static inline void st_buf_free(st_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

/* ---- connections and statements ---- */

/* A fresh in-memory connection with the module registered. */
static inline sqlite3 *st_open(void) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
  char *err = NULL;
  int rc = sqlite3_kafkalog_init(db, &err, NULL);
  if (rc != SQLITE_OK) fail_msg("sqlite3_kafkalog_init: rc %d: %s", rc, err ? err : "");
  sqlite3_free(err);
  return db;
}

static inline void st_close(sqlite3 *db) {
  assert_int_equal(sqlite3_close(db), SQLITE_OK);  /* no statement leaked */
}

static inline void st_exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
    fail_msg("%s\n  in: %s", err ? err : "?", sql);
}

/* Run sql expecting it to fail with rc want; returns the message
** (malloc'd). */
static inline char *st_expect_rc(sqlite3 *db, const char *sql, int want) {
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  print_message("  %s\n    -> rc %d: %s\n", sql, rc, err ? err : "");
  if (rc != want) fail_msg("expected rc %d, got %d (%s) from %s", want, rc, err ? err : "", sql);
  char *m = strdup(err ? err : "");
  sqlite3_free(err);
  return m;
}

/* sql fails with want (st_expect_rc) saying what (a part of its message);
** else the current test fails, showing the message. */
static inline void st_expect_error(sqlite3 *db, const char *sql, int want, const char *what) {
  char *m = st_expect_rc(db, sql, want);
  if (!strstr(m, what)) fail_msg("%s\n  said: %s\n  not: %s", sql, m, what);
  free(m);
}

static inline void st_vbind(sqlite3_stmt *st, const char *fmt, va_list ap) {
  for (int i = 0; fmt && fmt[i]; i++) {
    int rc;
    switch (fmt[i]) {
      case 't': rc = sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT); break;
      case 'i': rc = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t)); break;
      case 'n': rc = sqlite3_bind_null(st, i + 1); break;
      default: fail_msg("bad parameter format '%c'", fmt[i]); return;
    }
    assert_int_equal(rc, SQLITE_OK);
  }
}

/* Prepare sql and bind the parameters (see the format letters above). */
static inline sqlite3_stmt *st_prep(sqlite3 *db, const char *sql, const char *fmt, ...) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare: %s\n  in: %s", sqlite3_errmsg(db), sql);
  va_list ap;
  va_start(ap, fmt);
  st_vbind(st, fmt, ap);
  va_end(ap);
  return st;
}

/* Step a statement that returns no rows (or whose rows are ignored). */
static inline void st_run(sqlite3 *db, const char *sql, const char *fmt, ...) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare: %s\n  in: %s", sqlite3_errmsg(db), sql);
  va_list ap;
  va_start(ap, fmt);
  st_vbind(st, fmt, ap);
  va_end(ap);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
  if (rc != SQLITE_DONE) fail_msg("step: %s\n  in: %s", sqlite3_errmsg(db), sql);
  sqlite3_finalize(st);
}

/* First column of the first row as an integer; null_value if it is NULL
** (pass ST_NULL to tell NULL apart).  Fails if there is no row. */
static inline int64_t st_int_or(sqlite3 *db, int64_t null_value, const char *sql,
                                const char *fmt, ...) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare: %s\n  in: %s", sqlite3_errmsg(db), sql);
  va_list ap;
  va_start(ap, fmt);
  st_vbind(st, fmt, ap);
  va_end(ap);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) fail_msg("step: rc %d: %s\n  in: %s", rc, sqlite3_errmsg(db), sql);
  int64_t v = sqlite3_column_type(st, 0) == SQLITE_NULL ? null_value
                                                        : sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

#define st_int(db, ...) st_int_or((db), ST_NULL, __VA_ARGS__)

/* First column of the first row as malloc'd text (NULL for SQL NULL). */
static inline char *st_text(sqlite3 *db, const char *sql, const char *fmt, ...) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    fail_msg("prepare: %s\n  in: %s", sqlite3_errmsg(db), sql);
  va_list ap;
  va_start(ap, fmt);
  st_vbind(st, fmt, ap);
  va_end(ap);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) fail_msg("step: rc %d: %s\n  in: %s", rc, sqlite3_errmsg(db), sql);
  const unsigned char *t = sqlite3_column_text(st, 0);
  char *s = t ? strdup((const char *)t) : NULL;
  sqlite3_finalize(st);
  return s;
}

/* Append one value as text: NULL, integers, reals (%.17g), text as is,
** blobs as X'hex'. */
static inline void st_render_value(st_buf *b, sqlite3_stmt *st, int col) {
  switch (sqlite3_column_type(st, col)) {
    case SQLITE_NULL: st_buf_printf(b, "NULL"); break;
    case SQLITE_INTEGER: st_buf_printf(b, "%lld", (long long)sqlite3_column_int64(st, col)); break;
    case SQLITE_FLOAT: st_buf_printf(b, "%.17g", sqlite3_column_double(st, col)); break;
    case SQLITE_TEXT: st_buf_printf(b, "'%s'", (const char *)sqlite3_column_text(st, col)); break;
    default: {
      const unsigned char *p = sqlite3_column_blob(st, col);
      int n = sqlite3_column_bytes(st, col);
      st_buf_printf(b, "X'");
      for (int i = 0; i < n; i++) st_buf_printf(b, "%02x", p[i]);
      st_buf_printf(b, "'");
    }
  }
}

/* Step st to the end, rendering every row as one line ("a|b|c\n") into b;
** an error ends the text with "ERROR <rc>: <message>\n" instead of failing,
** so that callers can compare error behaviour too.  Returns the row count.
** st is finalized. */
static inline long st_render(sqlite3 *db, sqlite3_stmt *st, st_buf *b) {
  long rows = 0;
  int rc;
  int ncol = sqlite3_column_count(st);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int c = 0; c < ncol; c++) {
      if (c) st_buf_printf(b, "|");
      st_render_value(b, st, c);
    }
    st_buf_printf(b, "\n");
    rows++;
  }
  if (rc != SQLITE_DONE) st_buf_printf(b, "ERROR %d: %s\n", rc, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  if (!b->p) st_buf_printf(b, "%s", "");
  return rows;
}

/* The rows of sql as st_render gives them, ?1 bound to dir unless it is
** NULL (malloc'd). */
static inline char *st_answer(sqlite3 *db, const char *sql, const char *dir) {
  st_buf b = {0};
  st_render(db, dir ? st_prep(db, sql, "t", dir) : st_prep(db, sql, NULL), &b);
  return b.p;
}

/* EXPLAIN QUERY PLAN of sql, its details one a line, ?1 bound to dir
** unless it is NULL (malloc'd). */
static inline char *st_plan(sqlite3 *db, const char *sql, const char *dir) {
  char *q = sqlite3_mprintf("EXPLAIN QUERY PLAN %s", sql);
  sqlite3_stmt *st = dir ? st_prep(db, q, "t", dir) : st_prep(db, q, NULL);
  st_buf b = {0};
  st_buf_printf(&b, "%s", "");
  while (sqlite3_step(st) == SQLITE_ROW) {
    st_buf_printf(&b, "%s\n", (const char *)sqlite3_column_text(st, 3));
  }
  sqlite3_finalize(st);
  sqlite3_free(q);
  return b.p;
}

/* sql with every word "T" replaced by from (sqlite3_malloc'd). */
static inline char *st_with_from(const char *sql, const char *from) {
  st_buf b = {0};
  st_buf_printf(&b, "%s", "");
  for (const char *p = sql; *p; p++) {
    int word = *p == 'T' && (p == sql || p[-1] == ' ') && (p[1] == ' ' || !p[1]);
    if (word) st_buf_printf(&b, "%s", from);
    else st_buf_printf(&b, "%c", *p);
  }
  char *r = sqlite3_mprintf("%s", b.p);
  st_buf_free(&b);
  return r;
}

/* Print every row of a query (diagnostics). */
static inline void st_print_rows(sqlite3 *db, const char *title, const char *sql,
                                 const char *fmt, ...) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    print_message("  (cannot print %s: %s)\n", title, sqlite3_errmsg(db));
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  st_vbind(st, fmt, ap);
  va_end(ap);
  st_buf b = {0};
  st_render(db, st, &b);
  print_message("  %s:\n%s", title, b.p);
  st_buf_free(&b);
}

/* Line number (1-based) of the first difference between two texts and the
** two lines there, for a readable failure message.  Returns 0 if equal. */
static inline long st_first_diff(const char *x, const char *y, char *lx, char *ly, size_t cap) {
  long line = 1;
  const char *bx = x, *by = y;
  while (*x && *x == *y) {
    if (*x == '\n') { line++; bx = x + 1; by = y + 1; }
    x++; y++;
  }
  if (!*x && !*y) return 0;
  size_t nx = strcspn(bx, "\n"), ny = strcspn(by, "\n");
  snprintf(lx, cap, "%.*s", (int)(nx < cap - 1 ? nx : cap - 1), bx);
  snprintf(ly, cap, "%.*s", (int)(ny < cap - 1 ? ny : cap - 1), by);
  if (!*bx) snprintf(lx, cap, "<end of result>");
  if (!*by) snprintf(ly, cap, "<end of result>");
  return line;
}

/* ---- kafka_log_stats() ---- */

typedef struct st_stats {
  int64_t segments_opened, index_probes, index_fallbacks, batch_headers,
      batches_decoded, batches_skipped, records_decoded, bytes_decompressed,
      crc_checks, bytes_read;
} st_stats;

static inline st_stats st_get_stats(sqlite3 *db) {
  st_stats s;
  sqlite3_stmt *st = st_prep(db,
      "SELECT json_extract(j,'$.segments_opened'), json_extract(j,'$.index_probes'),"
      " json_extract(j,'$.index_fallbacks'), json_extract(j,'$.batch_headers'),"
      " json_extract(j,'$.batches_decoded'), json_extract(j,'$.batches_skipped'),"
      " json_extract(j,'$.records_decoded'), json_extract(j,'$.bytes_decompressed'),"
      " json_extract(j,'$.crc_checks'), json_extract(j,'$.bytes_read')"
      " FROM (SELECT kafka_log_stats() AS j)", NULL);
  if (sqlite3_step(st) != SQLITE_ROW) fail_msg("kafka_log_stats(): %s", sqlite3_errmsg(db));
  for (int i = 0; i < 10; i++)
    if (sqlite3_column_type(st, i) != SQLITE_INTEGER)
      fail_msg("kafka_log_stats(): key #%d missing or not an integer: %s", i,
               (const char *)sqlite3_column_text(st, i));
  int64_t *f[10] = {&s.segments_opened, &s.index_probes, &s.index_fallbacks,
                    &s.batch_headers, &s.batches_decoded, &s.batches_skipped,
                    &s.records_decoded, &s.bytes_decompressed, &s.crc_checks, &s.bytes_read};
  for (int i = 0; i < 10; i++) *f[i] = sqlite3_column_int64(st, i);
  sqlite3_finalize(st);
  return s;
}

static inline void st_print_stats(const char *title, const st_stats *s) {
  print_message("  %s: segments_opened=%" PRId64 " index_probes=%" PRId64
                " index_fallbacks=%" PRId64 " batch_headers=%" PRId64
                " batches_decoded=%" PRId64 " batches_skipped=%" PRId64
                " records_decoded=%" PRId64 " bytes_decompressed=%" PRId64
                " crc_checks=%" PRId64 " bytes_read=%" PRId64 "\n",
                title, s->segments_opened, s->index_probes, s->index_fallbacks,
                s->batch_headers, s->batches_decoded, s->batches_skipped,
                s->records_decoded, s->bytes_decompressed, s->crc_checks, s->bytes_read);
}

#endif
