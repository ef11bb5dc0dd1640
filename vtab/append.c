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
#include "headers.h"
#include "log.h"
#include "logconfig.h"
#include "os.h"
#include "scan.h"
#include "sqlenv.h"
#include "txn.h"

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
  kl_buf hbytes;            /* an INSERT's header names and values */
  kl_buf hs;                /* ... and its kl_header entries */
  /* DELETE in this transaction: how many rows, the largest offset, and
  ** the offset its WHERE said the prefix ends at (-1: not known). */
  sqlite3_int64 del_n, del_max, del_hi;
  /* The latest scan of this table: the largest offset its bounds admit
  ** (INT64_MAX: none), and whether it has read all it admits. */
  int64_t scan_hi;
  int scan_done;
  /* SQLite's savepoints open in its transaction, 0 to nsp-1, known from
  ** xBegin on, before the writer's transaction starts at the first change
  ** (SQLite sets a statement's savepoint before its first row): del_n and
  ** del_max at each.  The writer's marks are numbered alike. */
  int nsp, capsp;
  struct del_mark { sqlite3_int64 n, max, hi; } *sp;
};

void kl_append_opts_default(kl_append_opts *o) {
  kl_writer_opts_default(&o->w);
  o->mode = KL_MODE_READ;
  o->read_committed = 0;
  o->given = 0;
}

/* The options a log keeps, in the order its kafkalog.config lists them. */
static const kl_opt_id write_ids[] = {
    KL_OPT_SEGMENT_BYTES,  KL_OPT_INDEX_INTERVAL,     KL_OPT_BATCH_BYTES,    KL_OPT_MAX_MESSAGE_BYTES,
    KL_OPT_COMPRESSION,    KL_OPT_TIMESTAMP_TYPE,     KL_OPT_RETENTION_BYTES, KL_OPT_RETENTION_MS};
#define NWRITE_IDS ((int)(sizeof write_ids / sizeof *write_ids))

static int is_write_id(kl_opt_id id) {
  for (int i = 0; i < NWRITE_IDS; i++) {
    if (write_ids[i] == id) return 1;
  }
  return 0;
}

int kl_append_opt_set(kl_append_opts *o, kl_opt_id id, int64_t v) {
  kl_writer_opts *w = &o->w;
  switch (id) {
    case KL_OPT_SEGMENT_BYTES: w->segment_bytes = v; return 1;
    case KL_OPT_INDEX_INTERVAL: w->index_interval = v; return 1;
    case KL_OPT_BATCH_BYTES: w->batch_bytes = v; return 1;
    case KL_OPT_MAX_MESSAGE_BYTES: w->max_message_bytes = v; return 1;
    case KL_OPT_COMPRESSION: w->codec = (int)v; return 1;
    case KL_OPT_TIMESTAMP_TYPE: w->log_append_time = (int)v; return 1;
    case KL_OPT_RETENTION_BYTES: w->retention_bytes = v; return 1;
    case KL_OPT_RETENTION_MS: w->retention_ms = v; return 1;
    default: return 0;
  }
}

int kl_append_opt_get(const kl_append_opts *o, kl_opt_id id, int64_t *v) {
  const kl_writer_opts *w = &o->w;
  switch (id) {
    case KL_OPT_SEGMENT_BYTES: *v = w->segment_bytes; return 1;
    case KL_OPT_INDEX_INTERVAL: *v = w->index_interval; return 1;
    case KL_OPT_BATCH_BYTES: *v = w->batch_bytes; return 1;
    case KL_OPT_MAX_MESSAGE_BYTES: *v = w->max_message_bytes; return 1;
    case KL_OPT_COMPRESSION: *v = w->codec; return 1;
    case KL_OPT_TIMESTAMP_TYPE: *v = w->log_append_time; return 1;
    case KL_OPT_RETENTION_BYTES: *v = w->retention_bytes; return 1;
    case KL_OPT_RETENTION_MS: *v = w->retention_ms; return 1;
    default: return 0;
  }
}

/* The write options of the log at dir, from its kafkalog.config, into o
** (except those in skip, 1u << KL_OPT_*); a log without the file leaves
** o as it is.  Names the file does not know of are a later version's and
** are passed over; a value that is not valid is SQLITE_CORRUPT naming the
** file and the line. */
static int read_log_options(const char *dir, kl_append_opts *o, unsigned skip, char **errmsg);

/* o's write options as kafkalog.config lines (sqlite3_malloc'd). */
static char *log_options_text(const kl_append_opts *o) {
  char *s = sqlite3_mprintf("# the write options of this log, for whoever appends to it next\n");
  for (int i = 0; s && i < NWRITE_IDS; i++) {
    int64_t v = 0;
    kl_append_opt_get(o, write_ids[i], &v);
    char *lit = kl_option_literal(write_ids[i], v);
    size_t n = lit ? strlen(lit) : 0;
    int quoted = n >= 2 && lit[0] == '\'';
    char *t = lit ? sqlite3_mprintf("%s%s=%.*s\n", s, kl_option_name(kl_option_of(write_ids[i])),
                                    (int)(quoted ? n - 2 : n), quoted ? lit + 1 : lit)
                  : NULL;
    sqlite3_free(lit);
    sqlite3_free(s);
    s = t;
  }
  return s;
}

kl_append *kl_append_new(sqlite3 *db, const char *name, const char *dir,
                         const kl_append_opts *o) {
  kl_append *a = sqlite3_malloc(sizeof *a);
  if (!a) return NULL;
  memset(a, 0, sizeof *a);
  a->db = db;
  a->opt = *o;
  a->del_max = a->del_hi = -1;
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
  kl_buf_free(kl_sqlite_env(), &a->hbytes);
  kl_buf_free(kl_sqlite_env(), &a->hs);
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

static int read_log_options(const char *dir, kl_append_opts *o, unsigned skip, char **errmsg) {
  kl_err err = {0};
  kl_buf b = {0};
  kl_rc k = kl_logconfig_read(kl_sqlite_env(), dir, &b, &err);
  if (k == KL_NOTFOUND) return SQLITE_OK;
  if (k) {
    kl_buf_free(kl_sqlite_env(), &b);
    return fail_kl(errmsg, k, &err);
  }
  int rc = SQLITE_OK, line = 0;
  char *p = (char *)b.p;
  while (rc == SQLITE_OK && p && *p) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    line++;
    char *eq = strchr(p, '=');
    const kl_option *opt = eq && *p != '#' ? kl_option_find(p, (size_t)(eq - p)) : NULL;
    int64_t v = 0;
    if (opt && !(skip & (1u << kl_option_id(opt)))) {
      char *m = NULL;
      if (!is_write_id(kl_option_id(opt))) {
        /* not a write option: not the log's to keep */
      } else if (kl_option_text(opt, eq + 1, &v, &m) == SQLITE_OK) {
        kl_append_opt_set(o, kl_option_id(opt), v);
      } else {
        rc = fail(errmsg, m ? SQLITE_CORRUPT : SQLITE_NOMEM, "kafka_log: %s/%s: line %d: %s", dir,
                  KL_LOGCONFIG_FILE, line, m ? m + 11 : "");
      }
      sqlite3_free(m);
    } else if (!eq && *p && *p != '#') {
      rc = fail(errmsg, SQLITE_CORRUPT, "kafka_log: %s/%s: line %d is not name=value", dir,
                KL_LOGCONFIG_FILE, line);
    }
    p = nl ? nl + 1 : NULL;
  }
  kl_buf_free(kl_sqlite_env(), &b);
  return rc;
}

/* Keep o's write options as the log's. */
static int write_log_options(const char *dir, const kl_append_opts *o, char **errmsg) {
  char *text = log_options_text(o);
  if (!text) return SQLITE_NOMEM;
  kl_err err = {0};
  kl_rc k = kl_logconfig_write(kl_sqlite_env(), dir, text, strlen(text), &err);
  sqlite3_free(text);
  return k ? fail_kl(errmsg, k, &err) : SQLITE_OK;
}

/* What dir holds: 1 a log (segments or a commit record), 2 partition
** directories (*hint says which, sqlite3_malloc'd), 0 neither, -1 when it
** cannot be opened (*errmsg says why, *rc its SQLite code). */
static int holds(const char *dir, char **hint, int *rc, char **errmsg) {
  kl_err err = {0};
  kl_log *log = NULL;
  *hint = NULL;
  kl_rc k = kl_log_open(kl_sqlite_env(), dir, &log, &err);
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
  if (what == 0 && kl_os_stat(kl_sqlite_env(), p, &sb) == 0) what = 1;
  return what;
}

/* mode='read': each directory of path must exist, so that a typo fails
** at CREATE and not at the first query. */
static int prepare_read(const char *path, char **errmsg) {
  struct stat sb;
  kl_path_iter it;
  const char *s;
  size_t n;
  kl_path_iter_init(&it, kl_sqlite_env(), path);
  while (kl_path_next(&it, &s, &n)) {
    char *one = sqlite3_mprintf("%.*s", (int)n, s);
    if (!one) return SQLITE_NOMEM;
    int e = kl_os_stat(kl_sqlite_env(), one, &sb) == 0 ? 0 : errno;
    int rc = e ? fail(errmsg, SQLITE_CANTOPEN, "kafka_log: cannot open %s: %s (mode='create' "
                      "makes a new log there)", one, strerror(e)) : SQLITE_OK;
    sqlite3_free(one);
    if (rc) return rc;
  }
  return SQLITE_OK;
}

/* mode='write' or 'create' (m): path must be one partition directory
** holding a log (write) or none yet (create). */
static int check_target(const char *name, const char *path, const kl_append_opts *o,
                        const char *m, char **errmsg) {
  struct stat sb;
  if (strchr(path, ',')) {
    return fail(errmsg, SQLITE_ERROR, "kafka_log: %s names several directories: mode='%s' "
                "takes one partition directory", path, m);
  }
  char *hint = NULL;
  int rc = SQLITE_OK;
  int what = kl_os_stat(kl_sqlite_env(), path, &sb) == 0 || errno != ENOENT ? holds(path, &hint, &rc, errmsg) : 0;
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
  return rc;
}

/* mode='write': options given replace the log's; the others stay the
** log's. */
static int merge_log_options(const char *path, const kl_append_opts *o, char **errmsg) {
  unsigned mine = 0;
  for (int i = 0; i < NWRITE_IDS; i++) mine |= o->given & (1u << write_ids[i]);
  if (!mine) return SQLITE_OK;
  kl_append_opts merged = *o;
  int rc = read_log_options(path, &merged, mine, errmsg);
  return rc ? rc : write_log_options(path, &merged, errmsg);
}

/* mode='create': a new log, and nothing but it: no parent is made on the
** way. */
static int create_log(const char *path, const kl_append_opts *o, char **errmsg) {
  struct stat sb;
  int rc = SQLITE_OK;
  char *parent = sqlite3_mprintf("%s", path);
  if (!parent) return SQLITE_NOMEM;
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) *slash = 0;
  else if (slash) slash[1] = 0;
  int e = !slash ? 0 : kl_os_stat(kl_sqlite_env(), parent, &sb) != 0 ? errno : !S_ISDIR(sb.st_mode) ? ENOTDIR : 0;
  if (e) {
    rc = fail(errmsg, SQLITE_CANTOPEN, "kafka_log: cannot create %s: its parent %s %s", path,
              parent, e == ENOENT ? "does not exist" : strerror(e));
  }
  sqlite3_free(parent);
  if (rc) return rc;
  kl_err err = {0};
  kl_rc k = kl_writer_create(kl_sqlite_env(), path, &o->w, &err);
  return k ? fail_kl(errmsg, k, &err) : write_log_options(path, o, errmsg);
}

int kl_append_prepare(const char *name, const char *path, const kl_append_opts *o,
                      char **errmsg) {
  if (o->mode == KL_MODE_READ) return prepare_read(path, errmsg);
  const char *m = o->mode == KL_MODE_WRITE ? "write" : "create";
  int rc = check_target(name, path, o, m, errmsg);
  if (rc) return rc;
  return o->mode == KL_MODE_WRITE ? merge_log_options(path, o, errmsg) : create_log(path, o, errmsg);
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
    if (kl_log_open(kl_sqlite_env(), a->dir, &log, &err) == KL_OK) {
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
    /* The log's options, when it keeps them, are what it is written with. */
    int src = read_log_options(a->dir, &a->opt, 0, errmsg);
    if (src) return src;
    rc = kl_writer_open(kl_sqlite_env(), a->dir, &a->opt.w, &a->w, &err);
    if (rc) return fail_kl(errmsg, rc, &err);
  }
  rc = kl_writer_begin(a->w, &err);
  if (rc) return fail_kl(errmsg, rc, &err);
  a->del_n = 0;
  a->del_max = a->del_hi = -1;
  /* The savepoints SQLite set before this first change: nothing of the
  ** table's had changed at any of them. */
  if (a->nsp > 0 && (rc = kl_writer_savepoint(a->w, a->nsp - 1, &err)) != KL_OK) {
    kl_err e2 = {0};
    kl_writer_rollback(a->w, &e2);
    return fail_kl(errmsg, rc, &err);
  }
  return SQLITE_OK;
}

kl_rc kl_append_view(kl_append *a, kl_view *view, int *has_view, kl_err *err) {
  *has_view = 0;
  if (!a->w) return KL_OK;
  int v = kl_writer_view(a->w, view, err);
  if (v < 0) return err->rc ? err->rc : KL_IO;
  *has_view = v;
  return KL_OK;
}

/* The log start offset readers use: the larger of the log's own (its
** first segment, its commit record) and its log directory's checkpoint;
** and the high watermark a read_committed reader stops at (or -1). */
static kl_rc reader_start(kl_append *a, kl_log *log, int64_t *start, int64_t *hw, kl_err *err) {
  *start = kl_log_readable_start(log, -1);
  *hw = -1;
  kl_broker *b = NULL; /* the listing reads the checkpoint as every reader does */
  kl_rc rc = kl_broker_open(kl_sqlite_env(), a->dir, &b, err);
  if (rc == KL_OK && kl_broker_count(b) == 1) {
    *start = kl_log_readable_start(log, kl_broker_part(b, 0)->log_start);
    *hw = kl_broker_part(b, 0)->high_watermark;
  }
  kl_broker_close(b);
  return rc;
}

/* What a DELETE's check reads: the log as this transaction sees it, its
** start, and the offset below which a read_committed table shows what is
** committed (the last stable offset, the high watermark). */
typedef struct del_view {
  kl_view view;             /* the writer's, its batch in memory included */
  kl_log *log;
  kl_txns txns;
  int64_t start, cap;
} del_view;

static kl_rc del_view_open(kl_append *a, del_view *d, kl_err *err) {
  memset(d, 0, sizeof *d);
  int v = kl_writer_view(a->w, &d->view, err);
  if (v < 0) return err->rc ? err->rc : KL_IO;
  int64_t hw = -1;
  kl_rc rc = kl_log_open_view(kl_sqlite_env(), a->dir, NULL, v ? &d->view : NULL, &d->log, err);
  if (rc == KL_OK) rc = reader_start(a, d->log, &d->start, &hw, err);
  kl_reader rd;
  kl_reader_init(&rd, kl_sqlite_env(), NULL, KL_ON_CORRUPT_ERROR);
  if (rc == KL_OK && a->opt.read_committed) rc = kl_txns_load(d->log, &rd, &d->txns, err);
  d->cap = a->opt.read_committed ? d->txns.lso : INT64_MAX;
  if (rc == KL_OK && !a->opt.read_committed) rc = kl_log_end_offset(d->log, &rd, &d->cap, err);
  kl_reader_free(&rd);
  if (hw >= 0 && hw < d->cap) d->cap = hw;
  return rc;
}

static void del_view_close(del_view *d) {
  kl_txns_free(kl_sqlite_env(), &d->txns);
  kl_log_close(d->log);
  kl_buf_free(kl_sqlite_env(), &d->view.tail);
}

/* Count the records from lo to hi (without decoding them), all of them
** and those this table shows. */
static kl_rc count_rows(kl_append *a, del_view *d, int64_t lo, int64_t hi, int64_t *rows,
                        int64_t *shown, kl_err *err) {
  *rows = *shown = 0;
  kl_cursor *cur = NULL;
  kl_rc rc = kl_cursor_new(d->log, NULL, KL_ON_CORRUPT_ERROR, &cur);
  kl_bounds b = kl_bounds_all();
  b.off_lo = lo;
  b.off_hi = hi;
  if (rc == KL_OK) rc = kl_cursor_start(cur, &b, err);
  while (rc == KL_OK && (rc = kl_cursor_next(cur, err)) == KL_OK) {
    ++*rows;
    if (a->opt.read_committed && kl_txns_aborted(&d->txns, kl_cursor_batch(cur))) continue;
    int64_t off, ts;
    if (!kl_cursor_peek(cur, &off, &ts)) {
      if ((rc = kl_cursor_load(cur, err)) != KL_OK) break;
      off = kl_cursor_record(cur)->offset;
    }
    *shown += off < d->cap;
  }
  kl_cursor_free(cur);
  return rc == KL_DONE ? KL_OK : rc;
}

/* The rows a DELETE removed must be every row from the log start to the
** largest that its scan could see.  A count equal to all the records is
** the whole range whatever the scan's isolation; one equal to those shown
** is for a read_committed table, whose scans select from those only. */
static int check_prefix(kl_append *a, del_view *d, char **errmsg) {
  kl_err err = {0};
  int64_t rows = 0, shown = 0;
  kl_rc rc = count_rows(a, d, d->start, a->del_max, &rows, &shown, &err);
  if (rc) return fail_kl(errmsg, rc, &err);
  if (a->opt.read_committed && rows != a->del_n) rows = shown;
  if (rows == a->del_n) return SQLITE_OK;
  /* A WHERE on anything but the offset (timestamps go back and forth) is a
  ** prefix only by chance: say how to ask for one. */
  return fail(errmsg, SQLITE_CONSTRAINT, "kafka_log: DELETE removes a prefix of the log only: "
              "this one selected %lld of the %lld rows from offset %lld to %lld; say where the "
              "prefix ends by offset, DELETE FROM %s WHERE offset < N (for the records before "
              "the first at or after time T: DELETE FROM %s WHERE offset < (SELECT min(offset) "
              "FROM %s WHERE timestamp >= T))", (long long)a->del_n, (long long)rows,
              (long long)d->start, (long long)a->del_max, a->name, a->name, a->name);
}

/* Retention is by offset: the log start moves past the largest row
** removed and, when the WHERE said where the prefix ends (offset < N),
** on to N over records the table does not show (control records; aborted
** ones, reading committed), so that they go as Kafka's DeleteRecords(N)
** takes them.  Never past a record the table shows, nor past what it may
** yet show (the last stable offset, the high watermark, the log end). */
static int new_start(kl_append *a, int64_t *out, char **errmsg) {
  kl_err err = {0};
  del_view d;
  kl_rc k = del_view_open(a, &d, &err);
  int rc = k ? fail_kl(errmsg, k, &err) : check_prefix(a, &d, errmsg);
  *out = a->del_max + 1;
  int64_t hi = a->del_hi < d.cap ? a->del_hi : d.cap;
  if (rc == SQLITE_OK && hi > *out) {
    int64_t rows = 0, shown = 0;
    k = count_rows(a, &d, *out, hi - 1, &rows, &shown, &err);
    if (k) rc = fail_kl(errmsg, k, &err);
    else if ((a->opt.read_committed ? shown : rows) == 0) *out = hi;
  }
  del_view_close(&d);
  return rc;
}

int kl_append_sync(kl_append *a, char **errmsg) {
  if (!a->w || !kl_writer_in_txn(a->w)) return SQLITE_OK;
  kl_err err = {0};
  if (a->del_n > 0) {
    int64_t s = 0;
    int rc = new_start(a, &s, errmsg);
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
  a->del_max = a->del_hi = -1;
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
    a->sp[i] = (struct del_mark){a->del_n, a->del_max, a->del_hi};
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
    a->del_max = a->del_hi = -1;
  } else {
    a->del_n = a->sp[n].n;
    a->del_max = a->sp[n].max;
    a->del_hi = a->sp[n].hi;
  }
  a->nsp = n + 1;
  if (!a->w || !kl_writer_in_txn(a->w)) return SQLITE_OK;
  kl_err err = {0};
  kl_rc rc = kl_writer_rollback_to(a->w, n, &err);
  return rc ? fail_kl(errmsg, rc, &err) : SQLITE_OK;
}

void kl_append_scan_begin(kl_append *a, int64_t off_hi) {
  a->scan_hi = off_hi;
  a->scan_done = 0;
}

void kl_append_scan_end(kl_append *a) { a->scan_done = 1; }

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

/* The headers JSON (headers.h) into a->hs (*n of them). */
static int parse_headers(kl_append *a, sqlite3_value *v, int *n, char **errmsg) {
  *n = 0;
  if (sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    return fail(errmsg, SQLITE_MISMATCH, "kafka_log: headers must be JSON text such as "
                "'[[\"trace\",\"ab\"]]' (or NULL)");
  }
  const char *t = (const char *)sqlite3_value_text(v);
  if (!t) return SQLITE_NOMEM;
  kl_err err = {0};
  int32_t k = 0;
  kl_rc rc = kl_headers_parse(t, (size_t)sqlite3_value_bytes(v), &a->hbytes, &a->hs, &k, &err);
  if (rc == KL_NOMEM) return SQLITE_NOMEM;
  if (rc) return fail(errmsg, SQLITE_MISMATCH, "kafka_log: %s", err.msg);
  *n = k;
  return SQLITE_OK;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int insert(kl_append *a, int argc, sqlite3_value **argv, const kl_append_bytes *kv,
                  sqlite3_int64 *rowid, char **errmsg) {
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
    if (r.timestamp < 0) { /* Kafka's producer refuses it too (ProducerRecord) */
      return fail(errmsg, SQLITE_CONSTRAINT, "kafka_log: timestamp %lld is negative: a record's "
                  "timestamp is milliseconds since the epoch, 0 or more (or NULL for now)",
                  (long long)r.timestamp);
    }
  } else {
    return fail(errmsg, SQLITE_MISMATCH, "kafka_log: timestamp must be an integer of milliseconds "
                "since the epoch (or NULL for now), not '%s'", sqlite3_value_text(ts));
  }
  int rc = SQLITE_OK;
  if (kv && kv[0].p) {
    r.key = kv[0].p;
    r.key_len = kv[0].n;
  } else {
    rc = bytes_of(argv[2 + COL_KEY], &r.key, &r.key_len);
  }
  if (rc == SQLITE_OK && kv && kv[1].p) {
    r.value = kv[1].p;
    r.value_len = kv[1].n;
  } else if (rc == SQLITE_OK) {
    rc = bytes_of(argv[2 + COL_VALUE], &r.value, &r.value_len);
  }
  int nh = 0;
  if (rc == SQLITE_OK) rc = parse_headers(a, argv[2 + COL_HEADERS], &nh, errmsg);
  if (rc) return rc;
  r.headers = nh ? (const kl_header *)(void *)a->hs.p : NULL;
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
  return kl_append_update_as(a, argc, argv, NULL, rowid, errmsg);
}

int kl_append_update_as(kl_append *a, int argc, sqlite3_value **argv, const kl_append_bytes *kv,
                        sqlite3_int64 *rowid, char **errmsg) {
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
    /* SQLite reads a DELETE's scan to its end before it removes a row (a
    ** scan of one row aside): the last scan is this statement's. */
    if (a->scan_done && a->scan_hi != INT64_MAX && a->scan_hi >= r && a->scan_hi + 1 > a->del_hi) {
      a->del_hi = a->scan_hi + 1;
    }
    return SQLITE_OK;
  }
  return insert(a, argc, argv, kv, rowid, errmsg);
}
