/*
** partitions_vtab.c - the kafka_partitions table-valued function: one row
** per partition under a path (a partition directory, a log directory, or
** log directories separated by commas, as kafka_log takes them).
**
**   SELECT * FROM kafka_partitions('/var/lib/kafka/data');
**
** topic, partition, dir; log_start_offset (the larger of the
** log-start-offset-checkpoint entry and the first segment's base, as
** Kafka's LogLoader sets it); log_end_offset; high_watermark and
** recovery_point from their checkpoints (NULL when not listed);
** segments; bytes (of the .log files); first_timestamp (of the first data
** record at or after the log start) and last_timestamp (the largest record
** timestamp, found as ListOffsets MAX_TIMESTAMP finds it);
** last_stable_offset (where a read_committed consumer stops: the first
** offset of the earliest open transaction, else the log end offset, and
** never above the high watermark; core/txn.h), computed only when asked
** for; records (the rows kafka_log gives of the partition in its default
** isolation, from the batch headers: core/rowcount.h), also only when asked
** for.
**
** Listing reads the log directories only.  A partition is opened when a
** column needs it, so `WHERE topic = 'orders'` opens the orders partitions
** alone (SQLite reads topic first), and it is closed before the next row:
** a listing of thousands holds one partition's files at a time.
*/
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "broker.h"
#include "cursor.h"
#include "glue.h"
#include "listing.h"
#include "log.h"
#include "rowcount.h"
#include "os.h"
#include "sqlenv.h"
#include "txn.h"
#include "utf8.h"

SQLITE_EXTENSION_INIT3

enum {
  KP_TOPIC, KP_PARTITION, KP_DIR, KP_LOG_START, KP_LOG_END, KP_HW, KP_RECOVERY, KP_SEGMENTS,
  KP_BYTES, KP_FIRST_TS, KP_LAST_TS, KP_LSO, KP_RECORDS, KP_PATH
};

typedef struct kp_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} kp_vtab;

typedef struct kp_cursor {
  sqlite3_vtab_cursor base;
  kl_broker *b;
  size_t i;
  char *path;
  int loaded;               /* the row's partition was read */
  kl_log *log;              /* its log, kept for the row's other columns */
  int64_t log_start, log_end, segments, bytes, first_ts, last_ts;
  int has_first, has_last;
  int64_t lso;              /* -1 until asked for */
  int64_t records;          /* -1 until asked for */
} kp_cursor;

static int kp_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(topic TEXT, partition INTEGER, dir TEXT, log_start_offset INTEGER,"
      " log_end_offset INTEGER, high_watermark INTEGER, recovery_point INTEGER,"
      " segments INTEGER, bytes INTEGER, first_timestamp INTEGER, last_timestamp INTEGER,"
      " last_stable_offset INTEGER, records INTEGER, path HIDDEN)", sizeof(kp_vtab), out);
  if (rc == SQLITE_OK) ((kp_vtab *)*out)->conn = aux;
  return rc;
}

static int kp_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static const kl_term kp_dir = KL_DIR_TERM(KP_PATH);

static int kp_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_dir(info, &kp_dir);
}

static int kp_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  kp_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

/* Done with the row's partition: a listing of thousands holds one. */
static void kp_leave(kp_cursor *c) {
  kl_log_close(c->log);
  c->log = NULL;
  c->loaded = 0;
  c->lso = -1;
  c->records = -1;
}

static void kp_end(kp_cursor *c) {
  kp_leave(c);
  kl_broker_close(c->b);
  c->b = NULL;
  sqlite3_free(c->path);
  c->path = NULL;
}

static int kp_close(sqlite3_vtab_cursor *cur) {
  kp_end((kp_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int kp_error(kp_cursor *c, kl_rc rc, const kl_err *err) {
  return kl_vtab_error(c->base.pVtab, "kafka_partitions", rc, err);
}

static int kp_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kp_cursor *c = (kp_cursor *)cur;
  kp_end(c);
  c->i = 0;
  const char *path;
  int rc0 = kl_dir_arg(&kp_dir, idx_str, argc, argv, cur->pVtab, "kafka_partitions", &path);
  if (rc0) return rc0;
  if (!path) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_partitions: a path is required: "
                                          "kafka_partitions('<log directory>')");
    return SQLITE_ERROR;
  }
  kl_err err = {0};
  kl_rc rc = kl_broker_open(kl_sqlite_env(), path, &c->b, &err);
  if (rc) return kp_error(c, rc, &err);
  c->path = sqlite3_mprintf("%s", path);
  return c->path ? SQLITE_OK : SQLITE_NOMEM;
}

/* Open the row's partition and read what its columns show: the segment
** list, the files' sizes, the tail of the last segment, the first record
** and the largest timestamp. */
static int kp_load(kp_cursor *c) {
  if (c->loaded) return SQLITE_OK;
  kp_vtab *vt = (kp_vtab *)c->base.pVtab;
  const kl_part *p = kl_broker_part(c->b, c->i);
  kl_err err = {0};
  kl_cursor *cur = NULL;
  kl_reader rd;
  kl_reader_init(&rd, kl_sqlite_env(), &vt->conn->stats, KL_ON_CORRUPT_ERROR);
  kl_rc rc = kl_log_open(kl_sqlite_env(), p->dir, &c->log, &err);
  kl_log *log = c->log;
  c->has_first = c->has_last = 0;
  c->log_start = c->log_end = c->segments = c->bytes = 0;
  if (rc == KL_OK && kl_log_first(log)) {
    c->segments = (int64_t)kl_log_segment_count(log);
    for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
      struct stat st;
      if (kl_os_stat(kl_sqlite_env(), s->log_path, &st) == 0) c->bytes += st.st_size;
    }
    c->log_start = kl_log_readable_start(log, p->log_start);
    rc = kl_log_end_offset(log, &rd, &c->log_end, &err);
    kl_time_lookup tl;
    if (rc == KL_OK) rc = kl_log_lookup_time(log, &rd, KL_TS_MAX, &tl, &err);
    if (rc == KL_OK && tl.status == KL_LOOKUP_OK) {
      c->has_last = 1;
      c->last_ts = tl.timestamp;
    }
    kl_bounds b = kl_bounds_all();
    b.off_lo = c->log_start;
    if (rc == KL_OK) rc = kl_cursor_new(log, &vt->conn->stats, KL_ON_CORRUPT_ERROR, &cur);
    if (rc == KL_OK) rc = kl_cursor_start(cur, &b, &err);
    if (rc == KL_OK) rc = kl_cursor_next(cur, &err);
    if (rc == KL_OK) rc = kl_cursor_load(cur, &err);
    if (rc == KL_OK) {
      c->has_first = 1;
      c->first_ts = kl_cursor_record(cur)->timestamp;
    }
    if (rc == KL_DONE) rc = KL_OK;
    /* No timestamp reaches 0: magic 0 records, whose timestamps read -1. */
    if (rc == KL_OK && c->has_first && !c->has_last) c->has_last = 1, c->last_ts = -1;
    /* Records deleted below the log start offset are not counted. */
    if (c->log_end < c->log_start) c->log_end = c->log_start;
  }
  kl_cursor_free(cur);
  kl_reader_free(&rd);
  if (rc) {
    kp_leave(c);
    return kp_error(c, rc, &err);
  }
  c->loaded = 1;
  return SQLITE_OK;
}

/* The last stable offset of the row's partition (kp_load has opened its
** log, whose tail it then knows). */
static int kp_load_lso(kp_cursor *c) {
  kp_vtab *vt = (kp_vtab *)c->base.pVtab;
  kl_err err = {0};
  kl_reader rd;
  kl_txns t;
  kl_reader_init(&rd, kl_sqlite_env(), &vt->conn->stats, KL_ON_CORRUPT_ERROR);
  kl_rc rc = kl_txns_load(c->log, &rd, &t, &err);
  if (rc == KL_OK) {
    /* Never above the high watermark (Kafka's LSO is capped by it). */
    const kl_part *p = kl_broker_part(c->b, c->i);
    c->lso = t.lso;
    if (p->high_watermark >= 0 && p->high_watermark < c->lso) c->lso = p->high_watermark;
    if (c->lso < c->log_start) c->lso = c->log_start;
    kl_txns_free(kl_sqlite_env(), &t);
  }
  kl_reader_free(&rd);
  return rc ? kp_error(c, rc, &err) : SQLITE_OK;
}

/* The records of the row's partition from its log start offset (kp_load
** has opened its log). */
static int kp_load_records(kp_cursor *c) {
  kp_vtab *vt = (kp_vtab *)c->base.pVtab;
  kl_err err = {0};
  kl_reader rd;
  kl_reader_init(&rd, kl_sqlite_env(), &vt->conn->stats, KL_ON_CORRUPT_ERROR);
  kl_rc rc = kl_log_first(c->log) ? kl_log_count_records(c->log, &rd, c->log_start, &c->records, &err)
                                  : KL_OK;
  if (!kl_log_first(c->log)) c->records = 0;
  kl_reader_free(&rd);
  return rc ? kp_error(c, rc, &err) : SQLITE_OK;
}

static int kp_next(sqlite3_vtab_cursor *cur) {
  kp_cursor *c = (kp_cursor *)cur;
  c->i++;
  kp_leave(c);
  return SQLITE_OK;
}

static int kp_eof(sqlite3_vtab_cursor *cur) {
  kp_cursor *c = (kp_cursor *)cur;
  return !c->b || c->i >= kl_broker_count(c->b);
}

static void result_known(sqlite3_context *ctx, int64_t v) {
  if (v < 0) sqlite3_result_null(ctx);
  else sqlite3_result_int64(ctx, v);
}

static int kp_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kp_cursor *c = (kp_cursor *)cur;
  const kl_part *p = kl_broker_part(c->b, c->i);
  switch (col) {
    case KP_TOPIC:
      if (p->topic) sqlite3_result_text(ctx, p->topic, -1, SQLITE_TRANSIENT);
      return SQLITE_OK;
    case KP_PARTITION:
      if (p->partition >= 0) sqlite3_result_int(ctx, p->partition);
      return SQLITE_OK;
    case KP_DIR: /* a path that is not UTF-8 keeps its bytes, as a BLOB kafka_log takes */
      if (kl_utf8_valid((const uint8_t *)p->dir, strlen(p->dir))) {
        sqlite3_result_text(ctx, p->dir, -1, SQLITE_TRANSIENT);
      } else {
        sqlite3_result_blob(ctx, p->dir, (int)strlen(p->dir), SQLITE_TRANSIENT);
      }
      return SQLITE_OK;
    case KP_HW: result_known(ctx, p->high_watermark); return SQLITE_OK;
    case KP_RECOVERY: result_known(ctx, p->recovery_point); return SQLITE_OK;
    case KP_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); return SQLITE_OK;
  }
  int rc = kp_load(c);
  if (rc) return rc;
  switch (col) {
    case KP_LOG_START: sqlite3_result_int64(ctx, c->log_start); break;
    case KP_LOG_END: sqlite3_result_int64(ctx, c->log_end); break;
    case KP_SEGMENTS: sqlite3_result_int64(ctx, c->segments); break;
    case KP_BYTES: sqlite3_result_int64(ctx, c->bytes); break;
    case KP_FIRST_TS: if (c->has_first) sqlite3_result_int64(ctx, c->first_ts); break;
    case KP_LAST_TS: if (c->has_last) sqlite3_result_int64(ctx, c->last_ts); break;
    case KP_LSO:
      if (c->lso < 0 && (rc = kp_load_lso(c)) != SQLITE_OK) return rc;
      sqlite3_result_int64(ctx, c->lso);
      break;
    case KP_RECORDS:
      if (c->records < 0 && (rc = kp_load_records(c)) != SQLITE_OK) return rc;
      sqlite3_result_int64(ctx, c->records);
      break;
  }
  return SQLITE_OK;
}

static int kp_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((kp_cursor *)cur)->i;
  return SQLITE_OK;
}

static const sqlite3_module kp_module = {
    .iVersion = 1,
    .xCreate = NULL, /* eponymous only */
    .xConnect = kp_connect,
    .xBestIndex = kp_best_index,
    .xDisconnect = kp_disconnect,
    .xDestroy = kp_disconnect,
    .xOpen = kp_open,
    .xClose = kp_close,
    .xFilter = kp_filter,
    .xNext = kp_next,
    .xEof = kp_eof,
    .xColumn = kp_column,
    .xRowid = kp_rowid,
};

int kl_partitions_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_partitions", &kp_module, conn);
}
