/*
** txn_state_vtab.c - the transaction coordinator's state kept in the
** internal topic __transaction_state, under a path (a partition directory,
** a log directory, or log directories separated by commas):
**
**   kafka_transactions(path)     each transactional id's current state:
**                                its latest record, a tombstone deleting it
**   kafka_transaction_log(path)  every record in log order (partition,
**                                offset): the history of state changes
**   kafka_coordinator_partition(id, n)  the partition of n that holds id
**
** Records are decoded by core/txnlog.h from each partition's log start
** offset (log-start-offset-checkpoint) on; of a partition found in several
** log directories, the replica with the highest high watermark is read.  A record Kafka's loader would
** refuse is SQLITE_CORRUPT naming the partition directory and offset.
** Eponymous only, DIRECTONLY like kafka_log.
*/
#include <string.h>

#include "broker.h"
#include "listing.h"
#include "cursor.h"
#include "log.h"
#include "replay.h"
#include "txnstate.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

#define KT_TOPIC "__transaction_state"

/* Columns of both tables: kafka_transaction_log adds key_version and
** value_version and keeps tombstones (state NULL). */
enum {
  KT_ID, KT_PRODUCER_ID, KT_EPOCH, KT_STATE, KT_TIMEOUT, KT_PARTITIONS, KT_START_TS,
  KT_UPDATE_TS, KT_PREV_PID, KT_NEXT_PID, KT_CLIENT_VERSION, KT_STATE_PARTITION, KT_OFFSET,
  KT_RECORD_TS, KT_VALUE_VERSION, KT_PATH
};

typedef struct kt_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
  int history;              /* kafka_transaction_log */
} kt_vtab;

/* A history row: a copy of one record's state (id and partitions follow
** the struct); v.version -1 for a tombstone. */
typedef struct kt_hist {
  kl_txnlog_row row;
} kt_hist;

typedef struct kt_cursor {
  sqlite3_vtab_cursor base;
  kl_txnlog *fold;          /* kafka_transactions: owns the rows */
  const kl_txnlog_row *const *rows;
  kt_hist **hist;           /* kafka_transaction_log: owned here */
  size_t nhist, hist_cap;
  size_t n, i;
  char *path;
} kt_cursor;

/* One __transaction_state partition's records folded into f, each also
** to visit (may be NULL) when its key is one Kafka knows. */
typedef struct txn_replay {
  const kl_part *p;
  kl_txnlog *f;
  kl_txnlog_visit visit;
  void *ctx;
} txn_replay;

static kl_rc fold_record(void *ud, const kl_record *r, kl_err *err) {
  txn_replay *t = ud;
  kl_rc rc = kl_txnlog_add(t->f, t->p->partition, r->offset, r->timestamp, r->key, r->key_len,
                           r->value, r->value_len, err);
  if (rc != KL_OK || !t->visit) return rc;
  kl_txnlog_key k;
  kl_txnlog_value v;
  /* Parsed again: kl_txnlog_add has checked them. */
  if (kl_txnlog_key_parse(r->key, (size_t)r->key_len, &k, NULL) != KL_OK || !k.known) return KL_OK;
  int live = r->value && r->value_len >= 0;
  if (live) kl_txnlog_value_parse(r->value, (size_t)r->value_len, &v, NULL);
  return t->visit(t->ctx, t->p->partition, r, &k, live ? &v : NULL, err);
}

static kl_rc read_partition(kl_conn *conn, const kl_part *p, kl_txnlog *f,
                            kl_txnlog_visit visit, void *ctx, kl_err *err) {
  txn_replay t = {p, f, visit, ctx};
  return kl_replay_partition(kl_sqlite_env(), p->dir, p->log_start, 0, &conn->stats, fold_record,
                             &t, err);
}

size_t kl_replica_pick(const kl_broker *b, size_t i, size_t *next) {
  const kl_part *first = kl_broker_part(b, i);
  size_t best = i, j = i + 1;
  for (; j < kl_broker_count(b); j++) {
    const kl_part *p = kl_broker_part(b, j);
    if (!first->topic || !p->topic || strcmp(p->topic, first->topic) != 0 ||
        p->partition != first->partition) {
      break;
    }
    if (p->high_watermark > kl_broker_part(b, best)->high_watermark) best = j;
  }
  *next = j;
  return best;
}

kl_rc kl_txnlog_read(kl_conn *conn, const char *path, kl_txnlog *f, kl_txnlog_visit visit,
                     void *ctx, size_t *found, kl_err *err) {
  kl_broker *b = NULL;
  *found = 0;
  kl_rc rc = kl_broker_open(kl_sqlite_env(), path, &b, err);
  size_t next;
  for (size_t i = rc ? 0 : kl_broker_seek(b, KT_TOPIC, strlen(KT_TOPIC), 0);
       rc == KL_OK && i < kl_broker_count(b); i = next) {
    const kl_part *p = kl_broker_part(b, kl_replica_pick(b, i, &next));
    if (!p->topic || strcmp(p->topic, KT_TOPIC) != 0) break;
    rc = read_partition(conn, p, f, visit, ctx, err);
    (*found)++;
  }
  kl_broker_close(b);
  return rc;
}

static int kt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int history = argv[0] && strcmp(argv[0], "kafka_transaction_log") == 0;
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(transactional_id TEXT, producer_id INTEGER, producer_epoch INTEGER,"
      " state TEXT, timeout_ms INTEGER, partitions TEXT, start_timestamp INTEGER,"
      " last_update_timestamp INTEGER, previous_producer_id INTEGER, next_producer_id INTEGER,"
      " client_transaction_version INTEGER, state_partition INTEGER, record_offset INTEGER,"
      " record_timestamp INTEGER, value_version INTEGER, path HIDDEN)", sizeof(kt_vtab), out);
  if (rc == SQLITE_OK) {
    ((kt_vtab *)*out)->conn = aux;
    ((kt_vtab *)*out)->history = history;
  }
  return rc;
}

static int kt_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* The path is required.  kafka_transactions comes sorted by
** transactional_id, kafka_transaction_log by (state_partition,
** record_offset): an ORDER BY of those, ascending, is consumed. */
static const kl_term kt_dir = KL_DIR_TERM(KT_PATH);

static int kt_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  int rc = kl_best_index_dir(info, &kt_dir);
  if (rc != SQLITE_OK) return rc;
  int history = ((kt_vtab *)vt)->history;
  static const int by_id[] = {KT_ID}, by_pos[] = {KT_STATE_PARTITION, KT_OFFSET};
  const int *order = history ? by_pos : by_id;
  int n = history ? 2 : 1;
  int ours = info->nOrderBy > 0 && info->nOrderBy <= n;
  for (int i = 0; ours && i < info->nOrderBy; i++) {
    ours = info->aOrderBy[i].iColumn == order[i] && !info->aOrderBy[i].desc;
  }
  if (ours) info->orderByConsumed = 1;
  return SQLITE_OK;
}

static int kt_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  kt_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void kt_end(kt_cursor *c) {
  kl_txnlog_free(c->fold);
  c->fold = NULL;
  c->rows = NULL;
  for (size_t i = 0; i < c->nhist; i++) sqlite3_free(c->hist[i]);
  sqlite3_free(c->hist);
  c->hist = NULL;
  c->nhist = c->hist_cap = 0;
  c->n = c->i = 0;
  sqlite3_free(c->path);
  c->path = NULL;
}

static int kt_close(sqlite3_vtab_cursor *cur) {
  kt_end((kt_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* A history row for one record: its id and partitions copied. */
static kl_rc add_history(void *ctx, int32_t partition, const kl_record *r,
                         const kl_txnlog_key *k, const kl_txnlog_value *v, kl_err *err) {
  kt_cursor *c = ctx;
  if (c->nhist == c->hist_cap) {
    size_t cap = c->hist_cap ? c->hist_cap * 2 : 64;
    kt_hist **h = sqlite3_realloc64(c->hist, cap * sizeof *h);
    if (!h) return kl_err_set(err, KL_NOMEM, "out of memory");
    c->hist = h;
    c->hist_cap = cap;
  }
  size_t plen = v ? v->parts_len : 0;
  kt_hist *h = sqlite3_malloc64(sizeof *h + (size_t)k->id.n + plen + 1);
  if (!h) return kl_err_set(err, KL_NOMEM, "out of memory");
  memset(h, 0, sizeof *h);
  uint8_t *s = (uint8_t *)(h + 1);
  memcpy(s, k->id.p, (size_t)k->id.n);
  h->row.id.p = s;
  h->row.id.n = k->id.n;
  if (v) {
    h->row.v = *v;
    if (plen) memcpy(s + k->id.n, v->parts, plen);
    h->row.v.parts = s + k->id.n;
  } else {
    h->row.v.version = -1;
  }
  h->row.log_partition = partition;
  h->row.record_offset = r->offset;
  h->row.record_ts = r->timestamp;
  c->hist[c->nhist++] = h;
  return KL_OK;
}

static int kt_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kt_cursor *c = (kt_cursor *)cur;
  kt_vtab *vt = (kt_vtab *)cur->pVtab;
  const char *module = vt->history ? "kafka_transaction_log" : "kafka_transactions";
  kt_end(c);
  const char *path;
  int rc0 = kl_dir_arg(&kt_dir, idx_str, argc, argv, cur->pVtab, module, &path);
  if (rc0) return rc0;
  if (!path) {
    sqlite3_free(vt->base.zErrMsg);
    vt->base.zErrMsg = sqlite3_mprintf("%s: a path is required: %s('<log dir>')", module, module);
    return SQLITE_ERROR;
  }
  if (!(c->path = sqlite3_mprintf("%s", path))) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  size_t found;
  kl_rc rc = kl_txnlog_new(kl_sqlite_env(), &c->fold);
  if (rc == KL_OK) {
    rc = kl_txnlog_read(vt->conn, path, c->fold, vt->history ? add_history : NULL, c, &found,
                        &err);
  }
  if (rc == KL_OK && !vt->history) rc = kl_txnlog_rows(c->fold, &c->rows, &c->n);
  if (vt->history) c->n = c->nhist;
  if (rc) {
    kt_end(c);
    return kl_vtab_error(&vt->base, module, rc, &err);
  }
  return SQLITE_OK;
}

static int kt_next(sqlite3_vtab_cursor *cur) {
  ((kt_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int kt_eof(sqlite3_vtab_cursor *cur) {
  kt_cursor *c = (kt_cursor *)cur;
  return c->i >= c->n;
}

/* -1 is Kafka's "none" for producer ids and timestamps of an Empty state. */
static void result_id(sqlite3_context *ctx, int64_t v) {
  if (v == -1) sqlite3_result_null(ctx);
  else sqlite3_result_int64(ctx, v);
}

static int kt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kt_cursor *c = (kt_cursor *)cur;
  const kl_txnlog_row *r = c->hist ? &c->hist[c->i]->row : c->rows[c->i];
  const kl_txnlog_value *v = &r->v;
  int live = v->version >= 0;
  if (!live && col != KT_ID && col < KT_STATE_PARTITION) {
    sqlite3_result_null(ctx); /* a tombstone: the id is deleted */
    return SQLITE_OK;
  }
  switch (col) {
    case KT_ID:
      sqlite3_result_text(ctx, (const char *)r->id.p, r->id.n, SQLITE_TRANSIENT);
      break;
    case KT_PRODUCER_ID: sqlite3_result_int64(ctx, v->producer_id); break;
    case KT_EPOCH: sqlite3_result_int(ctx, v->producer_epoch); break;
    case KT_STATE:
      sqlite3_result_text(ctx, kl_txnlog_state_name(v->state), -1, SQLITE_STATIC);
      break;
    case KT_TIMEOUT: sqlite3_result_int(ctx, v->timeout_ms); break;
    case KT_PARTITIONS: {
      kl_buf b = {0};
      if (kl_txnlog_partitions_json(kl_sqlite_env(), v, &b) != KL_OK) {
        kl_buf_free(kl_sqlite_env(), &b);
        return SQLITE_NOMEM;
      }
      sqlite3_result_text(ctx, (const char *)b.p, (int)b.len, SQLITE_TRANSIENT);
      kl_buf_free(kl_sqlite_env(), &b);
      break;
    }
    case KT_START_TS: result_id(ctx, v->start_ts); break;
    case KT_UPDATE_TS: sqlite3_result_int64(ctx, v->last_update_ts); break;
    case KT_PREV_PID: result_id(ctx, v->prev_producer_id); break;
    case KT_NEXT_PID: result_id(ctx, v->next_producer_id); break;
    case KT_CLIENT_VERSION:
      if (v->version >= 1) sqlite3_result_int(ctx, v->client_txn_version);
      else sqlite3_result_null(ctx);
      break;
    case KT_STATE_PARTITION: sqlite3_result_int(ctx, r->log_partition); break;
    case KT_OFFSET: sqlite3_result_int64(ctx, r->record_offset); break;
    case KT_RECORD_TS: result_id(ctx, r->record_ts); break;
    case KT_VALUE_VERSION:
      if (live) sqlite3_result_int(ctx, v->version);
      else sqlite3_result_null(ctx);
      break;
    case KT_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int kt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((kt_cursor *)cur)->i;
  return SQLITE_OK;
}

static const sqlite3_module kt_module = {
    .iVersion = 1,
    .xCreate = NULL, /* eponymous only */
    .xConnect = kt_connect,
    .xBestIndex = kt_best_index,
    .xDisconnect = kt_disconnect,
    .xDestroy = kt_disconnect,
    .xOpen = kt_open,
    .xClose = kt_close,
    .xFilter = kt_filter,
    .xNext = kt_next,
    .xEof = kt_eof,
    .xColumn = kt_column,
    .xRowid = kt_rowid,
};

/*
** kafka_coordinator_partition(id, n): Utils.abs(id.hashCode()) % n, the
** partition of __transaction_state (or __consumer_offsets) of n partitions
** that the coordinator of a transactional (or group) id writes.
** String.hashCode is h = 31*h + c over UTF-16 code units in 32-bit two's
** complement; Utils.abs maps Integer.MIN_VALUE to 0.  SQLite's UTF-16
** conversion gives the code units (a character past U+FFFF is two).
*/
void kl_fn_coordinator_partition(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    return;
  }
  sqlite3_int64 n = sqlite3_value_int64(argv[1]);
  if (sqlite3_value_numeric_type(argv[1]) != SQLITE_INTEGER || n <= 0 || n > INT32_MAX) {
    sqlite3_result_error(ctx, "kafka_coordinator_partition: the partition count must be an "
                              "integer from 1 to 2147483647", -1);
    return;
  }
  const uint16_t *u = sqlite3_value_text16(argv[0]);
  int bytes = sqlite3_value_bytes16(argv[0]);
  if (!u) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  uint32_t h = 0;
  for (int i = 0; i < bytes / 2; i++) h = 31 * h + u[i];
  int32_t s = (int32_t)h;
  int32_t a = s == INT32_MIN ? 0 : (s < 0 ? -s : s);
  sqlite3_result_int64(ctx, a % n);
}

int kl_txn_state_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_transactions", &kt_module, conn);
}

int kl_txn_log_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_transaction_log", &kt_module, conn);
}
