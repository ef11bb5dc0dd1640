/*
** append.c - see append.h.
*/
#include "append.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "broker.h"
#include "codec.h"
#include "commit.h"
#include "cursor.h"
#include "glue.h"
#include "log.h"

SQLITE_EXTENSION_INIT3

/* Columns of kafka_log's schema (log_vtab.c) that INSERT takes. */
enum { COL_OFFSET = 0, COL_TIMESTAMP = 1, COL_KEY = 3, COL_VALUE = 4, COL_HEADERS = 5 };
static const char *const col_names[] = {
    "offset", "timestamp", "timestamp_type", "key", "value", "headers",
    "partition_leader_epoch", "producer_id", "producer_epoch", "sequence",
    "is_transactional", "compression", "segment", "position", "topic", "partition",
    "dir", "on_corrupt", "max_skew_ms", "isolation", "key_type", "value_type"};
#define NCOLS ((int)(sizeof col_names / sizeof *col_names))


struct kl_append {
  sqlite3 *db;
  char *name, *dir;
  kl_append_opts opt;
  kl_writer *w;
  sqlite3_stmt *hdr;        /* the headers JSON, taken apart by SQLite */
  kl_buf hbytes;            /* an INSERT's header names and values */
  kl_header *h;
  int hcap;
  /* DELETE in this transaction: how many rows, the largest offset. */
  sqlite3_int64 del_n, del_max;
  /* SQLite's savepoints open in its transaction, 0 to nsp-1, known from
  ** xBegin on, before the writer's transaction starts at the first change
  ** (SQLite sets a statement's savepoint before its first row): del_n and
  ** del_max at each.  The writer's marks are numbered alike. */
  int nsp, capsp;
  struct del_mark { sqlite3_int64 n, max; } *sp;
};

void kl_append_opts_default(kl_append_opts *o) {
  kl_writer_opts_default(&o->w);
  o->mode = KL_MODE_READ;
}

kl_append *kl_append_new(sqlite3 *db, const char *name, const char *dir,
                         const kl_append_opts *o) {
  kl_append *a = sqlite3_malloc(sizeof *a);
  if (!a) return NULL;
  memset(a, 0, sizeof *a);
  a->db = db;
  a->opt = *o;
  a->del_max = -1;
  a->name = sqlite3_mprintf("%s", name);
  a->dir = sqlite3_mprintf("%s", dir);
  if (!a->dir || !a->name) {
    sqlite3_free(a->name);
    sqlite3_free(a->dir);
    sqlite3_free(a);
    return NULL;
  }
  return a;
}

void kl_append_free(kl_append *a) {
  if (!a) return;
  kl_writer_close(a->w, NULL);
  sqlite3_finalize(a->hdr);
  kl_buf_free(NULL, &a->hbytes);
  sqlite3_free(a->h);
  sqlite3_free(a->sp);
  sqlite3_free(a->dir);
  sqlite3_free(a->name);
  sqlite3_free(a);
}

static int fail(char **errmsg, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *m = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  sqlite3_free(*errmsg);
  *errmsg = m;
  return m ? rc : SQLITE_NOMEM;
}

static int fail_kl(char **errmsg, kl_rc rc, const kl_err *err) {
  return fail(errmsg, kl_sqlite_rc(rc), "kafka_log: %s", err->msg[0] ? err->msg : kl_rc_name(rc));
}

/* What dir holds: 1 a log (segments or a commit record), 2 partition
** directories (*hint says which, sqlite3_malloc'd), 0 neither, -1 when it
** cannot be opened (*errmsg says why, *rc its SQLite code). */
static int holds(const char *dir, char **hint, int *rc, char **errmsg) {
  kl_err err = {0};
  kl_log *log = NULL;
  *hint = NULL;
  kl_rc k = kl_log_open(NULL, dir, &log, &err);
  if (k != KL_OK) {
    *rc = fail_kl(errmsg, k, &err);
    return -1;
  }
  int what = kl_log_first(log) ? 1 : kl_log_hint(log) ? 2 : 0;
  if (what == 2) *hint = sqlite3_mprintf("%s", kl_log_hint(log));
  kl_log_close(log);
  char p[4200];
  struct stat sb;
  snprintf(p, sizeof p, "%s/%s", dir, KL_COMMIT_FILE);
  if (what == 0 && stat(p, &sb) == 0) what = 1;
  return what;
}

int kl_append_prepare(const char *name, const char *path, const kl_append_opts *o,
                      char **errmsg) {
  struct stat sb;
  if (o->mode == KL_MODE_READ) {
    kl_path_iter it;
    const char *s;
    size_t n;
    kl_path_iter_init(&it, path);
    while (kl_path_next(&it, &s, &n)) {
      char *one = sqlite3_mprintf("%.*s", (int)n, s);
      if (!one) return SQLITE_NOMEM;
      int e = stat(one, &sb) == 0 ? 0 : errno;
      int rc = e ? fail(errmsg, SQLITE_CANTOPEN, "kafka_log: cannot open %s: %s (mode='create' "
                        "makes a new log there)", one, strerror(e)) : SQLITE_OK;
      sqlite3_free(one);
      if (rc) return rc;
    }
    return SQLITE_OK;
  }
  const char *m = o->mode == KL_MODE_WRITE ? "write" : "create";
  if (strchr(path, ',')) {
    return fail(errmsg, SQLITE_ERROR, "kafka_log: %s names several directories: mode='%s' "
                "takes one partition directory", path, m);
  }
  char *hint = NULL;
  int rc = SQLITE_OK;
  int what = stat(path, &sb) == 0 || errno != ENOENT ? holds(path, &hint, &rc, errmsg) : 0;
  if (what < 0) {
  } else if (what == 2) {
    rc = fail(errmsg, SQLITE_ERROR, "kafka_log: %s is a log directory (%s): a table writes to "
              "one partition directory, such as CREATE VIRTUAL TABLE %s USING "
              "kafka_log('%s/<topic>-<n>', mode='%s')", path, hint, name, path, m);
  } else if (o->mode == KL_MODE_WRITE && what == 0) {
    rc = fail(errmsg, SQLITE_CANTOPEN, "kafka_log: %s holds no log to write to (no "
              "<offset>.log): mode='create' makes a new one", path);
  } else if (o->mode == KL_MODE_CREATE && what == 1) {
    rc = fail(errmsg, SQLITE_ERROR, "kafka_log: %s already holds a log: mode='write' appends to "
              "it, mode='read' (the default) only reads it", path);
  }
  sqlite3_free(hint);
  if (rc || o->mode == KL_MODE_WRITE) return rc;
  /* A new log, and nothing but it: no parent is made on the way. */
  char *parent = sqlite3_mprintf("%s", path);
  if (!parent) return SQLITE_NOMEM;
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) *slash = 0;
  else if (slash) slash[1] = 0;
  int e = !slash ? 0 : stat(parent, &sb) != 0 ? errno : !S_ISDIR(sb.st_mode) ? ENOTDIR : 0;
  if (e) {
    rc = fail(errmsg, SQLITE_CANTOPEN, "kafka_log: cannot create %s: its parent %s %s", path,
              parent, e == ENOENT ? "does not exist" : strerror(e));
  }
  sqlite3_free(parent);
  if (rc) return rc;
  kl_err err = {0};
  kl_rc k = kl_writer_create(NULL, path, &o->w, &err);
  return k ? fail_kl(errmsg, k, &err) : SQLITE_OK;
}

/* ---- transactions ---- */

/* Open the writer and its transaction at the first change of one. */
static int start(kl_append *a, char **errmsg) {
  if (a->w && kl_writer_in_txn(a->w)) return SQLITE_OK;
  kl_err err = {0};
  kl_rc rc;
  if (a->opt.mode == KL_MODE_READ) {
    return fail(errmsg, SQLITE_READONLY, "kafka_log: %s is read-only (mode='read', the default): "
                "to append to and trim %s, DROP TABLE %s (the files stay) and CREATE VIRTUAL TABLE "
                "%s USING kafka_log('%s', mode='write')", a->name, a->dir, a->name, a->name, a->dir);
  }
  if (strchr(a->dir, ',')) {
    return fail(errmsg, SQLITE_READONLY, "kafka_log: %s names several log directories: a table "
                "writes to one partition directory", a->dir);
  }
  if (!a->w) {
    /* A log directory is not a partition: refuse before making segments. */
    kl_log *log = NULL;
    if (kl_log_open(NULL, a->dir, &log, &err) == KL_OK) {
      const char *hint = kl_log_first(log) ? NULL : kl_log_hint(log);
      int bad = hint != NULL;
      if (bad) {
        fail(errmsg, SQLITE_READONLY, "kafka_log: %s is a log directory (%s): a table writes to "
             "one partition directory, such as CREATE VIRTUAL TABLE t USING kafka_log('%s/<topic>-<n>')",
             a->dir, hint, a->dir);
      }
      kl_log_close(log);
      if (bad) return SQLITE_READONLY;
    }
    kl_err_clear(&err);
    rc = kl_writer_open(NULL, a->dir, &a->opt.w, &a->w, &err);
    if (rc) return fail_kl(errmsg, rc, &err);
  }
  rc = kl_writer_begin(a->w, &err);
  if (rc) return fail_kl(errmsg, rc, &err);
  a->del_n = 0;
  a->del_max = -1;
  /* The savepoints SQLite set before this first change: nothing of the
  ** table's had changed at any of them. */
  if (a->nsp > 0 && (rc = kl_writer_savepoint(a->w, a->nsp - 1, &err)) != KL_OK) {
    kl_err e2 = {0};
    kl_writer_rollback(a->w, &e2);
    return fail_kl(errmsg, rc, &err);
  }
  return SQLITE_OK;
}

kl_rc kl_append_view(kl_append *a, kl_commit *view, int *has_view, kl_err *err) {
  *has_view = 0;
  if (!a->w) return KL_OK;
  int v = kl_writer_view(a->w, view, err);
  if (v < 0) return err->rc ? err->rc : KL_IO;
  *has_view = v;
  return KL_OK;
}

/* The log start offset readers use: the larger of the log's own (its
** first segment, its commit record) and its log directory's checkpoint. */
static kl_rc reader_start(kl_append *a, kl_log *log, int64_t *start, kl_err *err) {
  *start = kl_log_start_offset(log);
  kl_broker *b = NULL; /* the listing reads the checkpoint as every reader does */
  kl_rc rc = kl_broker_open(NULL, a->dir, &b, err);
  if (rc == KL_OK && kl_broker_count(b) == 1) {
    int64_t s = kl_broker_part(b, 0)->log_start;
    if (s > *start) *start = s;
  }
  kl_broker_close(b);
  return rc;
}

/* The rows a DELETE removed must be every row from the log start to the
** largest: count the rows there (without decoding them). */
static int check_prefix(kl_append *a, int64_t *new_start, char **errmsg) {
  kl_err err = {0};
  kl_log *log = NULL;
  kl_cursor *cur = NULL;
  int64_t start = 0, rows = 0;
  kl_commit view;
  int v = kl_writer_view(a->w, &view, &err);
  kl_rc rc = v < 0 ? (err.rc ? err.rc : KL_IO)
                   : kl_log_open_view(NULL, a->dir, NULL, v ? &view : NULL, &log, &err);
  if (rc == KL_OK) rc = reader_start(a, log, &start, &err);
  if (rc == KL_OK) rc = kl_cursor_new(log, NULL, KL_ON_CORRUPT_ERROR, &cur);
  kl_bounds b = kl_bounds_all();
  b.off_lo = start;
  b.off_hi = a->del_max;
  if (rc == KL_OK) rc = kl_cursor_start(cur, &b, &err);
  while (rc == KL_OK && (rc = kl_cursor_next(cur, &err)) == KL_OK) rows++;
  kl_cursor_free(cur);
  kl_log_close(log);
  if (rc != KL_DONE) return fail_kl(errmsg, rc, &err);
  if (rows != a->del_n) {
    /* A WHERE on anything but the offset (timestamps go back and forth)
    ** is a prefix only by chance: say how to ask for one. */
    return fail(errmsg, SQLITE_CONSTRAINT, "kafka_log: DELETE removes a prefix of the log only: "
                "this one selected %lld of the %lld rows from offset %lld to %lld; say where the "
                "prefix ends by offset, DELETE FROM %s WHERE offset < N (for the records before "
                "the first at or after time T: DELETE FROM %s WHERE offset < (SELECT min(offset) "
                "FROM %s WHERE timestamp >= T))", (long long)a->del_n, (long long)rows,
                (long long)start, (long long)a->del_max, a->name, a->name, a->name);
  }
  *new_start = a->del_max + 1;
  return SQLITE_OK;
}

int kl_append_sync(kl_append *a, char **errmsg) {
  if (!a->w || !kl_writer_in_txn(a->w)) return SQLITE_OK;
  kl_err err = {0};
  if (a->del_n > 0) {
    int64_t s = 0;
    int rc = check_prefix(a, &s, errmsg);
    if (rc) return rc;
    kl_rc k = kl_writer_delete_below(a->w, s, &err);
    if (k) return fail_kl(errmsg, k, &err);
  }
  kl_rc rc = kl_writer_sync(a->w, &err);
  return rc ? fail_kl(errmsg, rc, &err) : SQLITE_OK;
}

/* A transaction of SQLite's ends (or begins): no savepoint, no DELETE. */
static void forget_txn(kl_append *a) {
  a->nsp = 0;
  a->del_n = 0;
  a->del_max = -1;
}

int kl_append_begin(kl_append *a) {
  forget_txn(a);
  return SQLITE_OK;
}

int kl_append_commit(kl_append *a) {
  if (a->w) kl_writer_commit(a->w);
  forget_txn(a);
  return SQLITE_OK;
}

int kl_append_rollback(kl_append *a, char **errmsg) {
  forget_txn(a);
  if (!a->w) return SQLITE_OK;
  kl_err err = {0};
  kl_rc rc = kl_writer_rollback(a->w, &err);
  return rc ? fail_kl(errmsg, rc, &err) : SQLITE_OK;
}

int kl_append_savepoint(kl_append *a, int n, char **errmsg) {
  if (n < 0) return SQLITE_OK;
  if (n >= a->capsp) {
    int cap = n + 8;
    struct del_mark *p = sqlite3_realloc64(a->sp, (sqlite3_uint64)cap * sizeof *p);
    if (!p) return SQLITE_NOMEM;
    a->sp = p;
    a->capsp = cap;
  }
  /* Savepoints are numbered densely; one skipped was set when this table
  ** joined the transaction, with nothing changed since. */
  for (int i = a->nsp < n ? a->nsp : n; i <= n; i++) {
    a->sp[i] = (struct del_mark){a->del_n, a->del_max};
  }
  a->nsp = n + 1;
  if (!a->w || !kl_writer_in_txn(a->w)) return SQLITE_OK;
  kl_err err = {0};
  kl_rc rc = kl_writer_savepoint(a->w, n, &err);
  return rc ? fail_kl(errmsg, rc, &err) : SQLITE_OK;
}

int kl_append_release(kl_append *a, int n) {
  if (n < 0) return SQLITE_OK;
  if (n < a->nsp) a->nsp = n;
  if (a->w) kl_writer_release(a->w, n);
  return SQLITE_OK;
}

/* n is -1 for the transaction's own savepoint (SAVEPOINT outside a
** transaction begins one): back to the beginning, still open. */
int kl_append_rollback_to(kl_append *a, int n, char **errmsg) {
  if (n < -1 || n >= a->nsp) return SQLITE_OK;
  if (n < 0) {
    a->del_n = 0;
    a->del_max = -1;
  } else {
    a->del_n = a->sp[n].n;
    a->del_max = a->sp[n].max;
  }
  a->nsp = n + 1;
  if (!a->w || !kl_writer_in_txn(a->w)) return SQLITE_OK;
  kl_err err = {0};
  kl_rc rc = kl_writer_rollback_to(a->w, n, &err);
  return rc ? fail_kl(errmsg, rc, &err) : SQLITE_OK;
}

int64_t kl_append_deleted_below(const kl_append *a) {
  return a->del_n > 0 ? a->del_max + 1 : -1;
}

/* ---- INSERT ---- */

/* A key or value: its bytes (NULL: null, length -1); a number is its
** text. */
static int bytes_of(sqlite3_value *v, const void **p, int32_t *n) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) {
    *p = NULL;
    *n = -1;
    return SQLITE_OK;
  }
  sqlite3_int64 len;
  if (t == SQLITE_BLOB) {
    *p = sqlite3_value_blob(v);
    len = sqlite3_value_bytes(v);
  } else {
    *p = sqlite3_value_text(v);
    len = sqlite3_value_bytes(v);
  }
  if (!*p && len > 0) return SQLITE_NOMEM;
  if (!*p) *p = "";
  *n = (int32_t)len;
  return SQLITE_OK;
}

static int hex_val(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* One side of a header as the headers column writes it: a string, null
** (values only) or {"hex":"..."}; appended to a->hbytes, *len -1 for
** null. */
static int header_part(kl_append *a, int col, int idx, int is_name, int32_t *len,
                       char **errmsg) {
  const char *type = (const char *)sqlite3_column_text(a->hdr, col);
  const char *what = is_name ? "name" : "value";
  if (type && strcmp(type, "null") == 0 && !is_name) {
    *len = -1;
    return SQLITE_OK;
  }
  if (type && strcmp(type, "text") == 0) {
    const unsigned char *t = sqlite3_column_text(a->hdr, col + 1);
    int n = sqlite3_column_bytes(a->hdr, col + 1);
    if (kl_buf_append(NULL, &a->hbytes, t ? (const void *)t : "", (size_t)n)) return SQLITE_NOMEM;
    *len = n;
    return SQLITE_OK;
  }
  const char *hex = (const char *)sqlite3_column_text(a->hdr, col + 2);
  if (type && strcmp(type, "object") == 0 && hex && sqlite3_column_type(a->hdr, col + 2) == SQLITE_TEXT) {
    size_t n = strlen(hex);
    if (n % 2 == 0) {
      size_t at = a->hbytes.len;
      if (kl_buf_reserve(NULL, &a->hbytes, at + n / 2)) return SQLITE_NOMEM;
      size_t i;
      for (i = 0; i < n; i += 2) {
        int hi = hex_val(hex[i]), lo = hex_val(hex[i + 1]);
        if (hi < 0 || lo < 0) break;
        a->hbytes.p[at + i / 2] = (uint8_t)(hi << 4 | lo);
      }
      if (i == n) {
        a->hbytes.len = at + n / 2;
        *len = (int32_t)(n / 2);
        return SQLITE_OK;
      }
    }
  }
  return fail(errmsg, SQLITE_MISMATCH, "kafka_log: headers[%d]: the %s must be a string, %s"
              "{\"hex\":\"<even number of hex digits>\"}", idx, what, is_name ? "or " : "null or ");
}

/* The headers JSON [[name, value], ...] into a->h (*n of them). */
static int parse_headers(kl_append *a, sqlite3_value *v, int *n, char **errmsg) {
  *n = 0;
  a->hbytes.len = 0;
  if (sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    return fail(errmsg, SQLITE_MISMATCH, "kafka_log: headers must be JSON text such as "
                "'[[\"trace\",\"ab\"]]' (or NULL)");
  }
  if (!a->hdr) {
    int rc = sqlite3_prepare_v2(
        a->db,
        "SELECT json_valid(?1) AND json_type(?1) = 'array' AS ok, NULL, NULL, NULL, NULL, NULL,"
        " NULL, NULL, NULL UNION ALL "
        "SELECT NULL, json_type(value), json_array_length(value),"
        " json_type(value, '$[0]'), json_extract(value, '$[0]'), json_extract(value, '$[0].hex'),"
        " json_type(value, '$[1]'), json_extract(value, '$[1]'), json_extract(value, '$[1].hex')"
        " FROM json_each(?1)"
        " WHERE json_valid(?1) AND json_type(?1) = 'array'",
        -1, &a->hdr, NULL);
    if (rc) return fail(errmsg, rc, "kafka_log: headers: %s", sqlite3_errmsg(a->db));
  }
  sqlite3_bind_value(a->hdr, 1, v);
  int rc = sqlite3_step(a->hdr);
  if (rc != SQLITE_ROW || !sqlite3_column_int(a->hdr, 0)) {
    sqlite3_reset(a->hdr);
    return fail(errmsg, SQLITE_MISMATCH, "kafka_log: headers must be a JSON array of [name, "
                "value] pairs, such as '[[\"trace\",\"ab\"]]'");
  }
  struct { size_t name_at, value_at; int32_t name_len, value_len; } *tmp = NULL;
  int cap = 0, k = 0;
  int err = SQLITE_OK;
  while (err == SQLITE_OK && (rc = sqlite3_step(a->hdr)) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(a->hdr, 1);
    if (!t || strcmp(t, "array") || sqlite3_column_int(a->hdr, 2) != 2) {
      err = fail(errmsg, SQLITE_MISMATCH, "kafka_log: headers[%d] must be a [name, value] pair", k);
      break;
    }
    if (k == cap) {
      cap = cap ? cap * 2 : 8;
      void *p = sqlite3_realloc64(tmp, (sqlite3_uint64)cap * sizeof *tmp);
      if (!p) {
        err = SQLITE_NOMEM;
        break;
      }
      tmp = p;
    }
    tmp[k].name_at = a->hbytes.len;
    err = header_part(a, 3, k, 1, &tmp[k].name_len, errmsg);
    if (err) break;
    tmp[k].value_at = a->hbytes.len;
    err = header_part(a, 6, k, 0, &tmp[k].value_len, errmsg);
    k++;
  }
  sqlite3_reset(a->hdr);
  if (err == SQLITE_OK && rc != SQLITE_DONE) err = fail(errmsg, rc, "kafka_log: headers: %s",
                                                          sqlite3_errmsg(a->db));
  if (err == SQLITE_OK && k > a->hcap) {
    kl_header *h = sqlite3_realloc64(a->h, (sqlite3_uint64)k * sizeof *h);
    if (!h) err = SQLITE_NOMEM;
    else {
      a->h = h;
      a->hcap = k;
    }
  }
  for (int i = 0; err == SQLITE_OK && i < k; i++) {
    a->h[i].name = a->hbytes.p + tmp[i].name_at;
    a->h[i].name_len = tmp[i].name_len;
    a->h[i].value = tmp[i].value_len >= 0 ? a->hbytes.p + tmp[i].value_at : NULL;
    a->h[i].value_len = tmp[i].value_len;
  }
  sqlite3_free(tmp);
  if (err == SQLITE_OK) *n = k;
  return err;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int insert(kl_append *a, int argc, sqlite3_value **argv, sqlite3_int64 *rowid,
                  char **errmsg) {
  if (sqlite3_value_type(argv[1]) != SQLITE_NULL) {
    return fail(errmsg, SQLITE_CONSTRAINT, "kafka_log: the rowid of a new record is its offset, "
                "assigned from the log end: leave it out");
  }
  for (int i = 0; i < argc - 2 && i < NCOLS; i++) {
    if (i == COL_TIMESTAMP || i == COL_KEY || i == COL_VALUE || i == COL_HEADERS) continue;
    if (sqlite3_value_type(argv[2 + i]) == SQLITE_NULL) continue;
    if (i == COL_OFFSET) {
      return fail(errmsg, SQLITE_CONSTRAINT, "kafka_log: offsets are assigned from the log end: "
                  "INSERT takes key, value, timestamp and headers only");
    }
    return fail(errmsg, SQLITE_CONSTRAINT, "kafka_log: INSERT takes key, value, timestamp and "
                "headers only, not %s", col_names[i]);
  }
  kl_rec_in r;
  memset(&r, 0, sizeof r);
  sqlite3_value *ts = argv[2 + COL_TIMESTAMP];
  if (sqlite3_value_type(ts) == SQLITE_NULL) {
    r.timestamp = now_ms();
  } else if (sqlite3_value_numeric_type(ts) == SQLITE_INTEGER) {
    r.timestamp = sqlite3_value_int64(ts);
  } else {
    return fail(errmsg, SQLITE_MISMATCH, "kafka_log: timestamp must be an integer of milliseconds "
                "since the epoch (or NULL for now), not '%s'", sqlite3_value_text(ts));
  }
  int rc = bytes_of(argv[2 + COL_KEY], &r.key, &r.key_len);
  if (rc == SQLITE_OK) rc = bytes_of(argv[2 + COL_VALUE], &r.value, &r.value_len);
  int nh = 0;
  if (rc == SQLITE_OK) rc = parse_headers(a, argv[2 + COL_HEADERS], &nh, errmsg);
  if (rc) return rc;
  r.headers = nh ? a->h : NULL;
  r.header_count = nh;
  kl_err err; /* per record: not 512 bytes of zeros */
  kl_err_clear(&err);
  int64_t off;
  kl_rc k = kl_writer_append(a->w, &r, &off, &err);
  if (k) return fail_kl(errmsg, k, &err);
  *rowid = off;
  return SQLITE_OK;
}

int kl_append_update(kl_append *a, int argc, sqlite3_value **argv, sqlite3_int64 *rowid,
                     char **errmsg) {
  if (argc > 1 && sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    return fail(errmsg, SQLITE_CONSTRAINT, "kafka_log: UPDATE is not supported: a log is "
                "immutable (INSERT appends, DELETE ... WHERE offset < N removes a prefix)");
  }
  int rc = start(a, errmsg);
  if (rc) return rc;
  if (argc == 1) {
    sqlite3_int64 r = sqlite3_value_int64(argv[0]);
    a->del_n++;
    if (r > a->del_max) a->del_max = r;
    return SQLITE_OK;
  }
  return insert(a, argc, argv, rowid, errmsg);
}
