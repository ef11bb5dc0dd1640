/*
** segments_vtab.c - the kafka_segments table-valued function: one row per
** segment of each partition under a path (kafka_log's forms, core/broker.h).
**
**   SELECT * FROM kafka_segments('<partition dir | log dir[,log dir...]>');
**
** segment (base offset), next_offset, the sizes of the .log, .index,
** .timeindex and .txnindex files (NULL when a file is absent), the entries
** of the two indexes and their zero-filled (preallocated) slots, the
** largest timestamp and the offset of the batch first reaching it, and
** whether it is the live (last) segment, and the topic and partition of
** its directory.  Partitions come in listing order, one open at a time;
** topic / partition constraints choose them before any is opened.  Each
** segment is read as a query
** reads it (core/scan.h: its indexes and the batches after their last
** entry), so damage there is SQLITE_CORRUPT naming the file and position.
** Eponymous only, DIRECTONLY like kafka_log.
*/
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "glue.h"
#include "listing.h"
#include "log.h"
#include "os.h"
#include "scan.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

enum {
  KS_SEGMENT, KS_NEXT_OFFSET, KS_LOG_BYTES, KS_INDEX_BYTES, KS_TIMEINDEX_BYTES, KS_TXNINDEX_BYTES,
  KS_INDEX_ENTRIES, KS_TIMEINDEX_ENTRIES, KS_INDEX_ZERO_SLOTS, KS_TIMEINDEX_ZERO_SLOTS,
  KS_MAX_TIMESTAMP, KS_MAX_TIMESTAMP_OFFSET, KS_IS_LIVE, KS_TOPIC, KS_PARTITION, KS_DIR
};

typedef struct ks_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} ks_vtab;

/* What a row shows of its segment, read when the cursor reaches it. */
typedef struct ks_row {
  int64_t file_bytes[4];    /* .log, .index, .timeindex, .txnindex; -1 absent */
  int64_t entries[2], zero_slots[2];
  kl_tail tail;
} ks_row;

typedef struct ks_cursor {
  sqlite3_vtab_cursor base;
  kl_listing ls;            /* the partitions of the path */
  kl_log *log;              /* the one being read */
  kl_reader rd;
  int have_rd;
  kl_segment *seg;
  ks_row row;
} ks_cursor;

static int ks_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(segment INTEGER, next_offset INTEGER, log_bytes INTEGER,"
      " index_bytes INTEGER, timeindex_bytes INTEGER, txnindex_bytes INTEGER,"
      " index_entries INTEGER, timeindex_entries INTEGER, index_zero_slots INTEGER,"
      " timeindex_zero_slots INTEGER, max_timestamp INTEGER, max_timestamp_offset INTEGER,"
      " is_live INTEGER, topic TEXT, partition INTEGER, dir HIDDEN)", sizeof(ks_vtab), out);
  if (rc == SQLITE_OK) ((ks_vtab *)*out)->conn = aux;
  return rc;
}

static int ks_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static const kl_term ks_terms[] = {KL_LISTING_TERMS(KS_DIR, KS_TOPIC, KS_PARTITION)};
#define NTERMS ((int)(sizeof ks_terms / sizeof *ks_terms))

static int ks_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_listing(info, ks_terms, NTERMS);
}

static int ks_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  ks_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

/* Done with the partition being read: its files are closed. */
static void ks_end_part(ks_cursor *c) {
  if (c->have_rd) kl_reader_free(&c->rd);
  c->have_rd = 0;
  kl_log_close(c->log);
  c->log = NULL;
  c->seg = NULL;
}

static void ks_end(ks_cursor *c) {
  ks_end_part(c);
  kl_listing_end(&c->ls);
}

static int ks_close(sqlite3_vtab_cursor *cur) {
  ks_end((ks_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int ks_error(ks_cursor *c, kl_rc rc, const kl_err *err) {
  sqlite3_vtab *vt = c->base.pVtab;
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("kafka_segments: %s", err->msg[0] ? err->msg : kl_rc_name(rc));
  c->seg = NULL;
  return kl_sqlite_rc(rc);
}

/* Read what the row of the current segment shows. */
static int ks_load(ks_cursor *c) {
  if (!c->seg) return SQLITE_OK;
  kl_segment *s = c->seg;
  ks_row *r = &c->row;
  kl_err err;
  kl_err_clear(&err);
  const kl_tail *t;
  kl_rc rc = kl_scan_tail(&c->rd, s, &t, &err);
  if (rc) return ks_error(c, rc, &err);
  r->tail = *t;
  r->file_bytes[0] = s->size;
  for (int k = 0; k < 2; k++) {
    kl_index *ix;
    rc = k == 0 ? kl_scan_index(&c->rd, s, KL_INDEX_OFFSET, &ix, &err)
                : kl_scan_time_index(&c->rd, s, &ix, &err);
    if (rc) return ks_error(c, rc, &err);
    r->file_bytes[1 + k] = ix->file_len;
    r->entries[k] = ix->n;
    r->zero_slots[k] = ix->zero_slots;
  }
  /* The .txnindex beside the .log (read_committed's business; its size here). */
  char path[4200];
  struct stat st;
  snprintf(path, sizeof path, "%.*s.txnindex", (int)(strlen(s->log_path) - 4), s->log_path);
  r->file_bytes[3] = kl_os_stat(kl_sqlite_env(), path, &st) == 0 ? (int64_t)st.st_size : -1;
  return SQLITE_OK;
}

/* Move to the first segment of the next partition that has one (c->seg
** NULL when none is left). */
static int next_partition(ks_cursor *c) {
  ks_vtab *vt = (ks_vtab *)c->base.pVtab;
  ks_end_part(c);
  while (kl_listing_next(&c->ls)) {
    kl_err err;
    kl_err_clear(&err);
    kl_rc rc = kl_listing_open_log(&c->ls, &c->log, &err);
    if (rc) return ks_error(c, rc, &err);
    kl_reader_init(&c->rd, kl_sqlite_env(), &vt->conn->stats, KL_ON_CORRUPT_ERROR);
    c->have_rd = 1;
    c->seg = kl_log_first(c->log);
    if (c->seg) return ks_load(c);
    ks_end_part(c); /* an empty partition of a log directory: no rows */
  }
  return SQLITE_OK;
}

static int ks_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  ks_cursor *c = (ks_cursor *)cur;
  ks_end(c);
  kl_listing_args a;
  int rc0 = kl_listing_args_read(ks_terms, NTERMS, idx_str, argc, argv, cur->pVtab, "kafka_segments", &a);
  if (rc0) return rc0;
  const char *dir = a.dir;
  const kl_part_filter f = a.f;
  if (!dir) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_segments: a path is required: "
                                          "kafka_segments('<partition or log directory>')");
    return SQLITE_ERROR;
  }
  int rc = kl_listing_start(&c->ls, cur->pVtab, "kafka_segments", dir, &f);
  return rc == SQLITE_OK ? next_partition(c) : rc;
}

static int ks_next(sqlite3_vtab_cursor *cur) {
  ks_cursor *c = (ks_cursor *)cur;
  /* Done with it: a listing of thousands of segments keeps none open. */
  kl_segment_close(c->seg);
  c->seg = kl_log_next(c->log, c->seg);
  return c->seg ? ks_load(c) : next_partition(c);
}

static int ks_eof(sqlite3_vtab_cursor *cur) { return ((ks_cursor *)cur)->seg == NULL; }

static void result_size(sqlite3_context *ctx, int64_t n) {
  if (n < 0) sqlite3_result_null(ctx);
  else sqlite3_result_int64(ctx, n);
}

static int ks_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ks_cursor *c = (ks_cursor *)cur;
  const ks_row *r = &c->row;
  switch (col) {
    case KS_SEGMENT: sqlite3_result_int64(ctx, c->seg->base); break;
    case KS_NEXT_OFFSET: sqlite3_result_int64(ctx, r->tail.next_offset); break;
    case KS_LOG_BYTES: case KS_INDEX_BYTES: case KS_TIMEINDEX_BYTES: case KS_TXNINDEX_BYTES:
      result_size(ctx, r->file_bytes[col - KS_LOG_BYTES]);
      break;
    case KS_INDEX_ENTRIES: case KS_TIMEINDEX_ENTRIES:
      sqlite3_result_int64(ctx, r->entries[col - KS_INDEX_ENTRIES]);
      break;
    case KS_INDEX_ZERO_SLOTS: case KS_TIMEINDEX_ZERO_SLOTS:
      sqlite3_result_int64(ctx, r->zero_slots[col - KS_INDEX_ZERO_SLOTS]);
      break;
    case KS_MAX_TIMESTAMP: /* none in an empty segment */
      if (r->tail.next_offset > c->seg->base) sqlite3_result_int64(ctx, r->tail.max_timestamp);
      else sqlite3_result_null(ctx);
      break;
    case KS_MAX_TIMESTAMP_OFFSET: /* -1 without timestamps (v0), as Kafka reports it */
      if (r->tail.next_offset <= c->seg->base) sqlite3_result_null(ctx);
      else sqlite3_result_int64(ctx, r->tail.max_timestamp < 0 ? -1 : r->tail.max_ts_offset);
      break;
    case KS_IS_LIVE: sqlite3_result_int(ctx, c->seg->is_last); break;
    case KS_TOPIC:
      if (c->ls.part->topic) sqlite3_result_text(ctx, c->ls.part->topic, -1, SQLITE_TRANSIENT);
      break;
    case KS_PARTITION:
      if (c->ls.part->partition >= 0) sqlite3_result_int(ctx, c->ls.part->partition);
      break;
    case KS_DIR: sqlite3_result_text(ctx, c->ls.path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int ks_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  ks_cursor *c = (ks_cursor *)cur;
  *rowid = kl_listing_rowid(&c->ls, c->seg->base);
  return SQLITE_OK;
}

static const sqlite3_module ks_module = {
    .iVersion = 1,
    .xCreate = NULL, /* eponymous only */
    .xConnect = ks_connect,
    .xBestIndex = ks_best_index,
    .xDisconnect = ks_disconnect,
    .xDestroy = ks_disconnect,
    .xOpen = ks_open,
    .xClose = ks_close,
    .xFilter = ks_filter,
    .xNext = ks_next,
    .xEof = ks_eof,
    .xColumn = ks_column,
    .xRowid = ks_rowid,
};

int kl_segments_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_segments", &ks_module, conn);
}
