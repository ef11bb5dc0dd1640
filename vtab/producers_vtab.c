/*
** producers_vtab.c - the producers' state of each partition as Kafka's
** broker rebuilds it (core/txn.h: the newest valid producer snapshot
** above the log start, else empty at the log start, then the batches
** after it), and the hanging transactions it shows:
**
**   kafka_producers(path)             one row per (partition, producer)
**   kafka_hanging_transactions(path)  open transactions the coordinator
**                                     no longer knows (find-hanging)
**
** kafka_producers reads the partitions a topic / partition constraint
** chooses, one at a time.  kafka_hanging_transactions reads every
** partition under the path and the __transaction_state partitions in it;
** a transaction is a candidate when it has been open longer than
** max_timeout_ms (default 15 minutes, Kafka's --max-transaction-timeout)
** at now (default: the latest batch timestamp under the path, so that a
** partition whose only writer hangs still ages), measured from its
** producer's last timestamp as TransactionsCommand measures it.  A
** candidate is hanging when (TransactionsCommand's three conditions, on
** the replayed coordinator state): no transactional id's current producer
** id is its producer id; its transactional id's state is Dead (the
** coordinator has no state for it); or the partition is not among that
** state's partitions.
*/
#include <stdio.h>
#include <string.h>

#include "broker.h"
#include "listing.h"
#include "log.h"
#include "txn.h"
#include "txnstate.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

/* ---- kafka_producers ---- */

enum {
  KR_TOPIC, KR_PARTITION, KR_PRODUCER_ID, KR_EPOCH, KR_LAST_SEQ, KR_LAST_OFFSET, KR_LAST_TS,
  KR_COORD_EPOCH, KR_TXN_START, KR_SNAPSHOT, KR_DIR
};

typedef struct kr_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} kr_vtab;

typedef struct kr_cursor {
  sqlite3_vtab_cursor base;
  kl_listing ls;
  kl_producer *p;           /* the current partition's producers */
  size_t n, i;
  int64_t snapshot;         /* the snapshot they were rebuilt from, -1 */
  sqlite3_int64 rowid;
} kr_cursor;

static int kr_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(topic TEXT, partition INTEGER, producer_id INTEGER, producer_epoch INTEGER,"
      " last_sequence INTEGER, last_offset INTEGER, last_timestamp INTEGER,"
      " coordinator_epoch INTEGER, current_txn_start_offset INTEGER, snapshot_offset INTEGER,"
      " dir HIDDEN)", sizeof(kr_vtab), out);
  if (rc == SQLITE_OK) ((kr_vtab *)*out)->conn = aux;
  return rc;
}

static int kr_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static const kl_term kr_terms[] = {KL_LISTING_TERMS(KR_DIR, KR_TOPIC, KR_PARTITION)};
#define KR_NTERMS ((int)(sizeof kr_terms / sizeof *kr_terms))

static int kr_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_listing(info, kr_terms, KR_NTERMS);
}

static int kr_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  kr_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void kr_end_part(kr_cursor *c) {
  kl_free(kl_sqlite_env(), c->p);
  c->p = NULL;
  c->n = c->i = 0;
}

static int kr_close(sqlite3_vtab_cursor *cur) {
  kr_cursor *c = (kr_cursor *)cur;
  kr_end_part(c);
  kl_listing_end(&c->ls);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* The producers of log as the broker rebuilds them when it loads the
** partition part (its log start: the greatest of the first segment's base,
** a commit record's and the log-start-offset-checkpoint's, as LogLoader
** takes it); OUT: their origin. */
static kl_rc load_producers(kl_conn *conn, kl_log *log, const kl_part *part, kl_producer **p,
                            size_t *n, kl_txn_origin *origin, kl_err *err) {
  kl_reader rd;
  kl_txns t;
  kl_txn_state st = {0};
  kl_reader_init(&rd, kl_sqlite_env(), &conn->stats, KL_ON_CORRUPT_ERROR);
  int64_t start = kl_log_readable_start(log, part->log_start);
  kl_rc rc = kl_txns_load_state(log, &rd, start, &t, &st, origin, err);
  if (rc == KL_OK) {
    kl_txns_free(kl_sqlite_env(), &t);
    if ((rc = kl_txn_producers(kl_sqlite_env(), &st, p, n)) != KL_OK) {
      kl_err_set(err, rc, "out of memory reading %s", kl_log_dir(log));
    }
  }
  kl_txn_state_free(kl_sqlite_env(), &st);
  kl_reader_free(&rd);
  return rc;
}

/* Move to the next partition with producers. */
static int kr_next_partition(kr_cursor *c) {
  kr_vtab *vt = (kr_vtab *)c->base.pVtab;
  kr_end_part(c);
  while (kl_listing_next(&c->ls)) {
    kl_err err;
    kl_err_clear(&err);
    kl_log *log = NULL;
    kl_txn_origin o;
    kl_rc rc = kl_listing_open_log(&c->ls, &log, &err);
    if (rc == KL_OK) rc = load_producers(vt->conn, log, c->ls.part, &c->p, &c->n, &o, &err);
    kl_log_close(log);
    if (rc) return kl_vtab_error(&vt->base, "kafka_producers", rc, &err);
    c->snapshot = o.snapshot;
    if (c->n) return SQLITE_OK;
    kr_end_part(c);
  }
  return SQLITE_OK;
}

static int kr_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kr_cursor *c = (kr_cursor *)cur;
  kr_end_part(c);
  kl_listing_end(&c->ls);
  c->rowid = 0;
  kl_listing_args a;
  int rc0 = kl_listing_args_read(kr_terms, KR_NTERMS, idx_str, argc, argv, cur->pVtab,
                                 "kafka_producers", &a);
  if (rc0) return rc0;
  const char *dir = a.dir;
  const kl_part_filter f = a.f;
  if (!dir) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_producers: a path is required: "
                                          "kafka_producers('<partition or log directory>')");
    return SQLITE_ERROR;
  }
  int rc = kl_listing_start(&c->ls, cur->pVtab, "kafka_producers", dir, &f);
  return rc == SQLITE_OK ? kr_next_partition(c) : rc;
}

static int kr_next(sqlite3_vtab_cursor *cur) {
  kr_cursor *c = (kr_cursor *)cur;
  c->rowid++;
  if (++c->i < c->n) return SQLITE_OK;
  return kr_next_partition(c);
}

static int kr_eof(sqlite3_vtab_cursor *cur) {
  kr_cursor *c = (kr_cursor *)cur;
  return c->i >= c->n;
}

/* -1 is Kafka's "none" in a producer's state. */
static void result_opt(sqlite3_context *ctx, int64_t v) {
  if (v < 0) sqlite3_result_null(ctx);
  else sqlite3_result_int64(ctx, v);
}

static int kr_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kr_cursor *c = (kr_cursor *)cur;
  const kl_part *part = c->ls.part;
  const kl_producer *p = &c->p[c->i];
  switch (col) {
    case KR_TOPIC:
      if (part->topic) sqlite3_result_text(ctx, part->topic, -1, SQLITE_TRANSIENT);
      break;
    case KR_PARTITION:
      if (part->partition >= 0) sqlite3_result_int(ctx, part->partition);
      break;
    case KR_PRODUCER_ID: sqlite3_result_int64(ctx, p->pid); break;
    case KR_EPOCH: sqlite3_result_int(ctx, p->epoch); break;
    case KR_LAST_SEQ: result_opt(ctx, p->last_seq); break;
    case KR_LAST_OFFSET: result_opt(ctx, p->last_offset); break;
    case KR_LAST_TS: result_opt(ctx, p->last_ts); break;
    case KR_COORD_EPOCH: result_opt(ctx, p->coordinator_epoch); break;
    case KR_TXN_START: result_opt(ctx, p->txn_first); break;
    case KR_SNAPSHOT: result_opt(ctx, c->snapshot); break;
    case KR_DIR: sqlite3_result_text(ctx, part->dir, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int kr_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((kr_cursor *)cur)->rowid;
  return SQLITE_OK;
}

static const sqlite3_module kr_module = {
    .iVersion = 1,
    .xConnect = kr_connect,
    .xBestIndex = kr_best_index,
    .xDisconnect = kr_disconnect,
    .xDestroy = kr_disconnect,
    .xOpen = kr_open,
    .xClose = kr_close,
    .xFilter = kr_filter,
    .xNext = kr_next,
    .xEof = kr_eof,
    .xColumn = kr_column,
    .xRowid = kr_rowid,
};

/* ---- kafka_hanging_transactions ---- */

enum {
  KH_TOPIC, KH_PARTITION, KH_PRODUCER_ID, KH_EPOCH, KH_COORD_EPOCH, KH_START_OFFSET, KH_LAST_TS,
  KH_DURATION, KH_TXN_ID, KH_REASON, KH_LSO, KH_LSO_LAG, KH_PATH, KH_NOW, KH_MAX_TIMEOUT
};

#define KH_DEFAULT_TIMEOUT_MS (15 * 60 * 1000)

/* One hanging transaction; topic and transactional id follow it. */
typedef struct kh_row {
  const char *topic;
  int32_t partition;
  kl_producer p;
  const char *txn_id;       /* NULL: no transactional id */
  const char *reason;
  int64_t lso, lso_lag;
} kh_row;

typedef struct kh_cursor {
  sqlite3_vtab_cursor base;
  kh_row **rows;
  size_t n, cap, i;
  char *path;
  int64_t now, max_timeout;
} kh_cursor;

static int kh_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(topic TEXT, partition INTEGER, producer_id INTEGER, producer_epoch INTEGER,"
      " coordinator_epoch INTEGER, start_offset INTEGER, last_timestamp INTEGER,"
      " duration_ms INTEGER, transactional_id TEXT, reason TEXT, last_stable_offset INTEGER,"
      " lso_lag INTEGER, path HIDDEN, now HIDDEN, max_timeout_ms HIDDEN)", sizeof(kr_vtab), out);
  if (rc == SQLITE_OK) ((kr_vtab *)*out)->conn = aux;
  return rc;
}

/* The path, and the two bounds of what counts as hanging. */
enum { KH_OWN_NOW = 1, KH_OWN_MAX_TIMEOUT };
static const kl_term kh_terms[] = {
    KL_DIR_TERM(KH_PATH),
    {"now=?", KH_NOW, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_OWN, KH_OWN_NOW, 0, 0, 0, 0, 0, 0},
    {"max_timeout_ms=?", KH_MAX_TIMEOUT, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_OWN, KH_OWN_MAX_TIMEOUT,
     0, 0, 0, 0, 0, 0},
};
#define KH_NTERMS ((int)(sizeof kh_terms / sizeof *kh_terms))

static int kh_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_listing(info, kh_terms, KH_NTERMS);
}

static int kh_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  kh_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void kh_end(kh_cursor *c) {
  for (size_t i = 0; i < c->n; i++) sqlite3_free(c->rows[i]);
  sqlite3_free(c->rows);
  c->rows = NULL;
  c->n = c->cap = c->i = 0;
  sqlite3_free(c->path);
  c->path = NULL;
}

static int kh_close(sqlite3_vtab_cursor *cur) {
  kh_end((kh_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* An open transaction of one partition, before the verdict. */
typedef struct cand {
  const kl_part *part;
  kl_producer p;
  int64_t lso, end;
} cand;

typedef struct cands {
  cand *c;
  size_t n, cap;
  int64_t max_ts;
} cands;

static kl_rc add_cand(cands *s, const kl_part *part, const kl_producer *p, int64_t lso,
                      int64_t end) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 16;
    cand *q = sqlite3_realloc64(s->c, cap * sizeof *q);
    if (!q) return KL_NOMEM;
    s->c = q;
    s->cap = cap;
  }
  s->c[s->n++] = (cand){part, *p, lso, end};
  return KL_OK;
}

/* The open transactions of partition part. */
static kl_rc partition_cands(kl_conn *conn, const kl_part *part, cands *s, kl_err *err) {
  kl_log *log = NULL;
  kl_producer *p = NULL;
  size_t n = 0;
  kl_txn_origin o;
  kl_rc rc = kl_log_open(kl_sqlite_env(), part->dir, &log, err);
  if (rc == KL_OK) rc = load_producers(conn, log, part, &p, &n, &o, err);
  kl_log_close(log);
  if (rc) return rc;
  if (o.max_ts > s->max_ts) s->max_ts = o.max_ts;
  /* What a read_committed consumer may read up to: the high watermark
  ** caps the log end, the earliest open transaction caps both. */
  int64_t end = o.end;
  if (part->high_watermark >= 0 && part->high_watermark < end) end = part->high_watermark;
  int64_t lso = end;
  for (size_t i = 0; i < n; i++) {
    if (p[i].txn_first >= 0 && p[i].txn_first < lso) lso = p[i].txn_first;
  }
  for (size_t i = 0; rc == KL_OK && i < n; i++) {
    if (p[i].txn_first < 0) continue;
    if (add_cand(s, part, &p[i], lso, end) != KL_OK) {
      rc = kl_err_set(err, KL_NOMEM, "out of memory");
    }
  }
  kl_free(kl_sqlite_env(), p);
  return rc;
}

/* The coordinator's state of producer pid: NULL when no transactional
** id's current producer id is pid. */
static const kl_txnlog_row *state_of(const kl_txnlog_row *const *rows, size_t n, int64_t pid) {
  for (size_t i = 0; i < n; i++) {
    if (rows[i]->v.producer_id == pid) return rows[i];
  }
  return NULL;
}

/* Kafka's three conditions: why candidate x hangs, NULL when it does
** not. */
static const char *verdict(const cand *x, const kl_txnlog_row *st) {
  if (!st) return "no transactional id";
  if (st->v.state == 6) return "no coordinator state"; /* Dead */
  const char *t = x->part->topic;
  if (!kl_txnlog_has_partition(&st->v, t, strlen(t), x->part->partition)) {
    return "partition not in transaction";
  }
  return NULL;
}

static kl_rc add_row(kh_cursor *c, const cand *x, const kl_txnlog_row *st, const char *why) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 16;
    kh_row **q = sqlite3_realloc64(c->rows, cap * sizeof *q);
    if (!q) return KL_NOMEM;
    c->rows = q;
    c->cap = cap;
  }
  size_t tl = strlen(x->part->topic), il = st ? (size_t)st->id.n : 0;
  kh_row *r = sqlite3_malloc64(sizeof *r + tl + il + 2);
  if (!r) return KL_NOMEM;
  char *s = (char *)(r + 1);
  memcpy(s, x->part->topic, tl + 1);
  r->topic = s;
  r->txn_id = NULL;
  if (st) {
    memcpy(s + tl + 1, st->id.p, il);
    s[tl + 1 + il] = 0;
    r->txn_id = s + tl + 1;
  }
  r->partition = x->part->partition;
  r->p = x->p;
  r->reason = why;
  r->lso = x->lso;
  r->lso_lag = x->end - x->p.txn_first;
  c->rows[c->n++] = r;
  return KL_OK;
}

/* Every partition's candidates, the coordinator state, then the verdicts. */
static kl_rc find_hanging(kh_cursor *c, kl_conn *conn, int have_now, kl_err *err) {
  kl_broker *b = NULL;
  kl_txnlog *fold = NULL;
  cands s = {NULL, 0, 0, -1};
  size_t found;
  const kl_txnlog_row *const *rows = NULL;
  size_t nrows = 0;
  kl_rc rc = kl_txnlog_new(kl_sqlite_env(), &fold);
  if (rc == KL_OK) rc = kl_txnlog_read(conn, c->path, fold, NULL, NULL, &found, err);
  if (rc == KL_OK) rc = kl_txnlog_rows(fold, &rows, &nrows);
  if (rc == KL_OK) rc = kl_broker_open(kl_sqlite_env(), c->path, &b, err);
  size_t next;
  for (size_t i = 0; rc == KL_OK && i < kl_broker_count(b); i = next) {
    const kl_part *p = kl_broker_part(b, kl_replica_pick(b, i, &next));
    if (p->topic && p->partition >= 0) rc = partition_cands(conn, p, &s, err);
  }
  if (!have_now) c->now = s.max_ts;
  for (size_t i = 0; rc == KL_OK && i < s.n; i++) {
    const cand *x = &s.c[i];
    if (x->p.last_ts < 0 || kl_sub_sat(c->now, x->p.last_ts) <= c->max_timeout) continue;
    const kl_txnlog_row *st = state_of(rows, nrows, x->p.pid);
    const char *why = verdict(x, st);
    if (why && add_row(c, x, st, why) != KL_OK) rc = KL_NOMEM;
  }
  if (rc == KL_NOMEM) kl_err_set(err, rc, "out of memory");
  sqlite3_free(s.c);
  kl_broker_close(b);
  kl_txnlog_free(fold);
  return rc;
}

static int kh_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kh_cursor *c = (kh_cursor *)cur;
  kr_vtab *vt = (kr_vtab *)cur->pVtab;
  kh_end(c);
  kl_listing_args a;
  int rc0 = kl_listing_args_read(kh_terms, KH_NTERMS, idx_str, argc, argv, cur->pVtab,
                                 "kafka_hanging_transactions", &a);
  if (rc0) return rc0;
  const char *path = a.dir;
  if (!path) {
    sqlite3_free(vt->base.zErrMsg);
    vt->base.zErrMsg = sqlite3_mprintf("kafka_hanging_transactions: a path is required: "
                                       "kafka_hanging_transactions('<log dir>')");
    return SQLITE_ERROR;
  }
  c->now = -1;
  c->max_timeout = KH_DEFAULT_TIMEOUT_MS;
  /* now = NULL or max_timeout_ms = NULL holds for no row. */
  int given_now = 0;
  for (int k = 0; k < a.nown; k++) {
    sqlite3_value *v = a.own_v[k];
    if (sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
    if (a.own[k]->arg == KH_OWN_NOW) given_now = 1;
    *(a.own[k]->arg == KH_OWN_NOW ? &c->now : &c->max_timeout) = sqlite3_value_int64(v);
  }
  if (!(c->path = sqlite3_mprintf("%s", path))) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = find_hanging(c, vt->conn, given_now, &err);
  if (rc) {
    kh_end(c);
    return kl_vtab_error(&vt->base, "kafka_hanging_transactions", rc, &err);
  }
  return SQLITE_OK;
}

static int kh_next(sqlite3_vtab_cursor *cur) {
  ((kh_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int kh_eof(sqlite3_vtab_cursor *cur) {
  kh_cursor *c = (kh_cursor *)cur;
  return c->i >= c->n;
}

static int kh_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kh_cursor *c = (kh_cursor *)cur;
  const kh_row *r = c->rows[c->i];
  switch (col) {
    case KH_TOPIC: sqlite3_result_text(ctx, r->topic, -1, SQLITE_TRANSIENT); break;
    case KH_PARTITION: sqlite3_result_int(ctx, r->partition); break;
    case KH_PRODUCER_ID: sqlite3_result_int64(ctx, r->p.pid); break;
    case KH_EPOCH: sqlite3_result_int(ctx, r->p.epoch); break;
    case KH_COORD_EPOCH: result_opt(ctx, r->p.coordinator_epoch); break;
    case KH_START_OFFSET: sqlite3_result_int64(ctx, r->p.txn_first); break;
    case KH_LAST_TS: sqlite3_result_int64(ctx, r->p.last_ts); break;
    case KH_DURATION: sqlite3_result_int64(ctx, kl_sub_sat(c->now, r->p.last_ts)); break;
    case KH_TXN_ID:
      if (r->txn_id) sqlite3_result_text(ctx, r->txn_id, -1, SQLITE_TRANSIENT);
      break;
    case KH_REASON: sqlite3_result_text(ctx, r->reason, -1, SQLITE_STATIC); break;
    case KH_LSO: sqlite3_result_int64(ctx, r->lso); break;
    case KH_LSO_LAG: sqlite3_result_int64(ctx, r->lso_lag); break;
    case KH_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
    case KH_NOW: sqlite3_result_int64(ctx, c->now); break;
    case KH_MAX_TIMEOUT: sqlite3_result_int64(ctx, c->max_timeout); break;
  }
  return SQLITE_OK;
}

static int kh_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((kh_cursor *)cur)->i;
  return SQLITE_OK;
}

static const sqlite3_module kh_module = {
    .iVersion = 1,
    .xConnect = kh_connect,
    .xBestIndex = kh_best_index,
    .xDisconnect = kr_disconnect,
    .xDestroy = kr_disconnect,
    .xOpen = kh_open,
    .xClose = kh_close,
    .xFilter = kh_filter,
    .xNext = kh_next,
    .xEof = kh_eof,
    .xColumn = kh_column,
    .xRowid = kh_rowid,
};

int kl_producers_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_producers", &kr_module, conn);
}

int kl_hanging_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_hanging_transactions", &kh_module, conn);
}
