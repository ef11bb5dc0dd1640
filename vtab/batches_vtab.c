/*
** batches_vtab.c - the kafka_batches table-valued function: one row per
** entry of the .log files of each partition under a path (kafka_log's
** forms, core/broker.h), control batches included, what kafka-dump-log.sh
** prints for each batch, as a table, with the partition's topic and
** partition:
**
**   SELECT * FROM kafka_batches('<partition dir>') WHERE last_offset >= 5000 LIMIT 20;
**
** Partitions come in listing order, one open at a time; topic / partition
** constraints choose them before any is opened.  Every entry on disk is a
** row, also below the log start offset (it is the dump, not a consumer's
** view).
**
** Entries are walked by the readers' own walker (core/scan.h): a batch whose
** CRC does not hold is a row with crc_valid = 0 (its header still parsed, so
** the walk goes on after it, as kafka-dump-log goes on), any other damage
** fails the query with SQLITE_CORRUPT naming the file and position.
** `last_offset >= x` (or >) seeks as kafka_log's offset bounds do, and
** `base_offset <= y` (or <) ends the walk, in each partition; both are
** exact.  A legacy
** compressed wrapper is opened to learn its first offset; a control batch
** to read its marker.  Eponymous only, DIRECTONLY like kafka_log.
*/
#include <string.h>

#include "codec.h"
#include "glue.h"
#include "listing.h"
#include "log.h"
#include "scan.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

enum {
  KB_SEGMENT, KB_POSITION, KB_BASE_OFFSET, KB_LAST_OFFSET, KB_RECORD_COUNT, KB_SIZE, KB_MAGIC,
  KB_CRC, KB_CRC_VALID, KB_ATTRIBUTES, KB_LAST_OFFSET_DELTA, KB_BASE_TIMESTAMP, KB_MAX_TIMESTAMP,
  KB_COMPRESSION, KB_TIMESTAMP_TYPE, KB_PRODUCER_ID, KB_PRODUCER_EPOCH, KB_BASE_SEQUENCE,
  KB_LEADER_EPOCH, KB_IS_TRANSACTIONAL, KB_IS_CONTROL, KB_CONTROL_TYPE, KB_COORDINATOR_EPOCH,
  KB_TOPIC, KB_PARTITION, KB_DIR, KB_OFFSET
};

typedef struct kb_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} kb_vtab;

typedef struct kb_cursor {
  sqlite3_vtab_cursor base;
  kl_listing ls;            /* the partitions of the path */
  kl_log *log;              /* the one being read */
  kl_reader rd;
  int have_rd;
  kl_scan sc;
  int scanning;
  kl_segment *seg;
  int64_t lo, hi;           /* last_offset >= lo, base_offset <= hi */
  kl_batch b;               /* the current row */
  int64_t first;            /* its first offset (a wrapper's, learnt) */
  int crc_valid;
  int control_type;         /* -1: not a control batch */
  sqlite3_int64 rowno;      /* rows produced: the rowid */
  int32_t coordinator_epoch;
  int eof;
} kb_cursor;

static int kb_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(segment INTEGER, position INTEGER, base_offset INTEGER, last_offset INTEGER,"
      " record_count INTEGER, size INTEGER, magic INTEGER, crc INTEGER, crc_valid INTEGER,"
      " attributes INTEGER, last_offset_delta INTEGER, base_timestamp INTEGER,"
      " max_timestamp INTEGER, compression TEXT, timestamp_type TEXT, producer_id INTEGER,"
      " producer_epoch INTEGER, base_sequence INTEGER, partition_leader_epoch INTEGER,"
      " is_transactional INTEGER, is_control INTEGER, control_type TEXT,"
      " coordinator_epoch INTEGER, topic TEXT, partition INTEGER, dir HIDDEN, offset HIDDEN)",
      sizeof(kb_vtab), out);
  if (rc == SQLITE_OK) ((kb_vtab *)*out)->conn = aux;
  return rc;
}

static int kb_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* The path is required; topic and partition constraints are the
** listing's; last_offset >= / > and base_offset <= / < are handled exactly
** (one of each kind; SQLite checks any other). */
/* The listing's terms, then bounds on the batches' offsets: offset is
** last_offset under the name kafka_log's readers use, offset >= x lists the
** batches holding offsets from x on.  One lower and one upper bound are
** taken (KL_T_ONE), the first given. */
enum { G_LO = 10, G_HI };
static const kl_term kb_terms[] = {
    KL_LISTING_TERMS(KB_DIR, KB_TOPIC, KB_PARTITION),
    {"last_offset>?", KB_LAST_OFFSET, SQLITE_INDEX_CONSTRAINT_GT, KL_ACT_OWN, KL_CMP_GT, KL_T_ONE,
     G_LO, 0, 0, 0, 0},
    {"last_offset>=?", KB_LAST_OFFSET, SQLITE_INDEX_CONSTRAINT_GE, KL_ACT_OWN, KL_CMP_GE, KL_T_ONE,
     G_LO, 0, 0, 0, 0},
    {"offset>?", KB_OFFSET, SQLITE_INDEX_CONSTRAINT_GT, KL_ACT_OWN, KL_CMP_GT, KL_T_ONE, G_LO, 0, 0,
     0, 0},
    {"offset>=?", KB_OFFSET, SQLITE_INDEX_CONSTRAINT_GE, KL_ACT_OWN, KL_CMP_GE, KL_T_ONE, G_LO, 0,
     0, 0, 0},
    {"base_offset<?", KB_BASE_OFFSET, SQLITE_INDEX_CONSTRAINT_LT, KL_ACT_OWN, KL_CMP_LT, KL_T_ONE,
     G_HI, 0, 0, 0, 0},
    {"base_offset<=?", KB_BASE_OFFSET, SQLITE_INDEX_CONSTRAINT_LE, KL_ACT_OWN, KL_CMP_LE, KL_T_ONE,
     G_HI, 0, 0, 0, 0},
};
#define NTERMS ((int)(sizeof kb_terms / sizeof *kb_terms))

static int kb_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  int rc = kl_best_index_listing(info, kb_terms, NTERMS);
  /* A bound on offsets reads the batches of an index interval or two. */
  for (int i = 0; rc == SQLITE_OK && i < info->nConstraint; i++) {
    int col = info->aConstraint[i].iColumn;
    if (info->aConstraintUsage[i].argvIndex > 0 &&
        (col == KB_LAST_OFFSET || col == KB_OFFSET || col == KB_BASE_OFFSET)) {
      info->estimatedCost /= 100;
      break;
    }
  }
  return rc;
}

static int kb_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  kb_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->eof = 1;
  *out = &c->base;
  return SQLITE_OK;
}

/* Done with the partition being read: its files are closed. */
static void kb_end_part(kb_cursor *c) {
  if (c->scanning) kl_scan_end(&c->sc);
  c->scanning = 0;
  if (c->have_rd) kl_reader_free(&c->rd);
  c->have_rd = 0;
  kl_log_close(c->log);
  c->log = NULL;
  c->seg = NULL;
}

static void kb_end(kb_cursor *c) {
  kb_end_part(c);
  kl_listing_end(&c->ls);
}

static int kb_close(sqlite3_vtab_cursor *cur) {
  kb_end((kb_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int kb_error(kb_cursor *c, kl_rc rc, const kl_err *err) {
  sqlite3_vtab *vt = c->base.pVtab;
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("kafka_batches: %s", err->msg[0] ? err->msg : kl_rc_name(rc));
  c->eof = 1;
  return kl_sqlite_rc(rc);
}

/* Start walking segment s: from the offset seek of lo, or its start. */
static kl_rc walk_segment(kb_cursor *c, kl_segment *s, kl_err *err) {
  kl_seek sk;
  kl_rc rc = kl_scan_seek_offset(&c->rd, s, c->lo, &sk, err);
  if (rc == KL_OK) rc = kl_scan_start(&c->sc, &c->rd, s, sk.start, INT64_MAX, sk.verify_from, err);
  if (rc) return rc;
  c->sc.stop_offset = c->hi;
  c->scanning = 1;
  c->seg = s;
  return KL_OK;
}

/* What a row needs beyond the header: a wrapper's first offset, a control
** batch's marker.  The batch's bytes are those kl_scan_next returned. */
static kl_rc inspect(kb_cursor *c, kl_err *err) {
  c->first = c->b.base_offset;
  c->control_type = -1;
  c->coordinator_epoch = -1;
  if (!c->crc_valid || (c->b.first_known && !c->b.is_control)) return KL_OK;
  kl_records it;
  kl_rc rc = kl_scan_records(&c->sc, &c->b, &it, err);
  if (rc) return rc;
  c->first = it.b.base_offset;
  if (!c->b.is_control) return KL_OK;
  kl_record r;
  rc = kl_records_next(&it, &r, err);
  if (rc == KL_OK) rc = kl_control_parse(&r, &c->control_type, &c->coordinator_epoch, err);
  /* Without records: the log cleaner kept the batch of a transaction it
  ** removed (Kafka's ProducerAppendInfo passes over it): no marker. */
  if (rc == KL_DONE) rc = KL_OK;
  return rc ? kl_scan_batch_error(c->seg, c->b.position, rc, err) : KL_OK;
}

/* Open the next chosen partition and start walking it at the seek of lo
** (nothing to walk when it has no segment); KL_DONE when none is left. */
static kl_rc next_partition(kb_cursor *c, kl_err *err) {
  kb_vtab *vt = (kb_vtab *)c->base.pVtab;
  kb_end_part(c);
  while (kl_listing_next(&c->ls)) {
    kl_rc rc = kl_listing_open_log(&c->ls, &c->log, err);
    if (rc) return rc;
    kl_reader_init(&c->rd, kl_sqlite_env(), &vt->conn->stats, KL_ON_CORRUPT_ERROR);
    c->have_rd = 1;
    kl_segment *s = c->lo == INT64_MIN ? kl_log_first(c->log) : kl_log_floor(c->log, c->lo);
    if (!s) s = kl_log_first(c->log);
    if (s) return walk_segment(c, s, err);
    kb_end_part(c); /* an empty partition of a log directory: no rows */
  }
  return KL_DONE;
}

/* The next row, or eof. */
static int kb_step(kb_cursor *c) {
  kl_err err;
  kl_err_clear(&err);
  for (;;) {
    if (!c->scanning) {
      kl_rc rc = next_partition(c, &err);
      if (rc == KL_DONE) {
        c->eof = 1;
        return SQLITE_OK;
      }
      if (rc) return kb_error(c, rc, &err);
      continue;
    }
    kl_rc rc = kl_scan_next(&c->sc, &c->b, &err);
    c->crc_valid = 1;
    if (rc == KL_CORRUPT && c->sc.dmg.kind == KL_DMG_CRC && c->sc.dmg.b.size > 0) {
      /* Listed, as kafka-dump-log lists it (isValid: false). */
      c->b = c->sc.dmg.b;
      c->crc_valid = 0;
      kl_err_clear(&err);
      rc = KL_OK;
    }
    if (rc == KL_DONE) {
      int stopped = c->sc.end == KL_END_STOP;
      kl_scan_end(&c->sc);
      c->scanning = 0;
      kl_segment *next = stopped ? NULL : kl_log_next(c->log, c->seg);
      if (next && next->base <= c->hi && (rc = walk_segment(c, next, &err)) != KL_OK) {
        return kb_error(c, rc, &err);
      }
      continue;
    }
    if (rc) return kb_error(c, rc, &err);
    if (c->b.last_offset < c->lo) continue; /* before the seek's target */
    if ((rc = inspect(c, &err)) != KL_OK) return kb_error(c, rc, &err);
    if (c->first > c->hi) {
      kl_scan_end(&c->sc);
      c->scanning = 0;
      continue;
    }
    c->rowno++;
    return SQLITE_OK;
  }
}

static int kb_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kb_cursor *c = (kb_cursor *)cur;
  kb_end(c);
  c->eof = 1;
  c->rowno = 0;
  c->lo = INT64_MIN;
  c->hi = INT64_MAX;
  kl_listing_args a;
  int rc0 = kl_listing_args_read(kb_terms, NTERMS, idx_str, argc, argv, cur->pVtab,
                                 "kafka_batches", &a);
  if (rc0) return rc0;
  const char *dir = a.dir;
  const kl_part_filter f = a.f;
  /* last_offset >= x and base_offset <= y, as kafka_log folds its bounds;
  ** NULL: no rows. */
  for (int i = 0; i < a.nown; i++) {
    enum kl_cmp_op op = (enum kl_cmp_op)a.own[i]->arg;
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    kl_fold_bound(op, a.own_v[i], &lo, &hi);
    if (lo > hi) return SQLITE_OK;
    if (op == KL_CMP_GT || op == KL_CMP_GE) c->lo = lo;
    else c->hi = hi;
  }
  if (!dir) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_batches: a path is required: "
                                          "kafka_batches('<partition or log directory>')");
    return SQLITE_ERROR;
  }
  int rc = kl_listing_start(&c->ls, cur->pVtab, "kafka_batches", dir, &f);
  if (rc != SQLITE_OK) return rc;
  if (c->lo > c->hi) return SQLITE_OK;
  c->eof = 0;
  return kb_step(c);
}

static int kb_next(sqlite3_vtab_cursor *cur) { return kb_step((kb_cursor *)cur); }
static int kb_eof(sqlite3_vtab_cursor *cur) { return ((kb_cursor *)cur)->eof; }

static const char *control_name(int type) {
  switch (type) {
    case 0: return "ABORT";
    case 1: return "COMMIT";
    case 2: return "LEADER_CHANGE";
    case 3: return "SNAPSHOT_HEADER";
    case 4: return "SNAPSHOT_FOOTER";
    case 5: return "KRAFT_VERSION";
    case 6: return "KRAFT_VOTERS";
  }
  return "UNKNOWN";
}

static int kb_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kb_cursor *c = (kb_cursor *)cur;
  const kl_batch *b = &c->b;
  int v2 = b->magic == 2;
  switch (col) {
    case KB_SEGMENT: sqlite3_result_int64(ctx, c->seg->base); break;
    case KB_POSITION: sqlite3_result_int64(ctx, b->position); break;
    case KB_BASE_OFFSET: sqlite3_result_int64(ctx, c->first); break;
    case KB_LAST_OFFSET: case KB_OFFSET: sqlite3_result_int64(ctx, b->last_offset); break;
    case KB_RECORD_COUNT: /* legacy entries have no count field: NULL, as Kafka's countOrNull */
      if (v2) sqlite3_result_int(ctx, b->record_count);
      else sqlite3_result_null(ctx);
      break;
    case KB_SIZE: sqlite3_result_int(ctx, b->size); break;
    case KB_MAGIC: sqlite3_result_int(ctx, b->magic); break;
    case KB_CRC: sqlite3_result_int64(ctx, b->crc); break;
    case KB_CRC_VALID: sqlite3_result_int(ctx, c->crc_valid); break;
    case KB_ATTRIBUTES: sqlite3_result_int(ctx, b->attributes); break;
    case KB_LAST_OFFSET_DELTA:
      if (v2) sqlite3_result_int(ctx, b->last_offset_delta);
      else sqlite3_result_null(ctx);
      break;
    case KB_BASE_TIMESTAMP:
      if (v2) sqlite3_result_int64(ctx, b->base_timestamp);
      else sqlite3_result_null(ctx);
      break;
    case KB_MAX_TIMESTAMP: sqlite3_result_int64(ctx, b->max_timestamp); break;
    case KB_COMPRESSION: sqlite3_result_text(ctx, kl_codec_name(b->codec), -1, SQLITE_STATIC); break;
    case KB_TIMESTAMP_TYPE:
      sqlite3_result_text(ctx, kl_ts_type_name(b->ts_type), -1, SQLITE_STATIC);
      break;
    case KB_PRODUCER_ID: sqlite3_result_int64(ctx, b->producer_id); break;
    case KB_PRODUCER_EPOCH: sqlite3_result_int(ctx, b->producer_epoch); break;
    case KB_BASE_SEQUENCE: sqlite3_result_int(ctx, b->base_sequence); break;
    case KB_LEADER_EPOCH: sqlite3_result_int(ctx, b->leader_epoch); break;
    case KB_IS_TRANSACTIONAL: sqlite3_result_int(ctx, b->is_transactional); break;
    case KB_IS_CONTROL: sqlite3_result_int(ctx, b->is_control); break;
    case KB_CONTROL_TYPE:
      if (c->control_type >= 0) sqlite3_result_text(ctx, control_name(c->control_type), -1, SQLITE_STATIC);
      else sqlite3_result_null(ctx);
      break;
    case KB_COORDINATOR_EPOCH:
      if (c->control_type == 0 || c->control_type == 1) sqlite3_result_int(ctx, c->coordinator_epoch);
      else sqlite3_result_null(ctx);
      break;
    case KB_TOPIC:
      if (c->ls.part->topic) sqlite3_result_text(ctx, c->ls.part->topic, -1, SQLITE_TRANSIENT);
      break;
    case KB_PARTITION:
      if (c->ls.part->partition >= 0) sqlite3_result_int(ctx, c->ls.part->partition);
      break;
    case KB_DIR: sqlite3_result_text(ctx, c->ls.path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int kb_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((kb_cursor *)cur)->rowno;
  return SQLITE_OK;
}

static const sqlite3_module kb_module = {
    .iVersion = 1,
    .xCreate = NULL, /* eponymous only */
    .xConnect = kb_connect,
    .xBestIndex = kb_best_index,
    .xDisconnect = kb_disconnect,
    .xDestroy = kb_disconnect,
    .xOpen = kb_open,
    .xClose = kb_close,
    .xFilter = kb_filter,
    .xNext = kb_next,
    .xEof = kb_eof,
    .xColumn = kb_column,
    .xRowid = kb_rowid,
};

int kl_batches_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_batches", &kb_module, conn);
}
