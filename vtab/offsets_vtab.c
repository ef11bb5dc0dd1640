/*
** offsets_vtab.c - the kafka_consumer_offsets table-valued function: the
** committed offsets kept in the __consumer_offsets partitions under a path
** (a partition directory, a log directory, or log directories separated by
** commas), one row per (group, topic, partition):
**
**   SELECT group_id, topic, partition, committed_offset
**     FROM kafka_consumer_offsets('/var/lib/kafka/data');
**
** Every record of every __consumer_offsets partition from its log start
** offset (log-start-offset-checkpoint) on is folded by core/offsets.h: the
** last commit wins, a tombstone removes it, records of other types (group
** metadata, KIP-848 groups) are skipped.  The rows come sorted by group,
** topic, partition (an ORDER BY of those is consumed).  A record Kafka
** would not read is SQLITE_CORRUPT naming the partition directory and the
** record's offset.  Eponymous only, DIRECTONLY like kafka_log.
*/
#include <string.h>

#include "broker.h"
#include "glue.h"
#include "listing.h"
#include "offsets.h"
#include "replay.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

#define KO_TOPIC "__consumer_offsets"

enum {
  KO_GROUP_ID, KO_TOPIC_COL, KO_PARTITION, KO_COMMITTED_OFFSET, KO_LEADER_EPOCH, KO_METADATA,
  KO_COMMIT_TIMESTAMP, KO_EXPIRE_TIMESTAMP, KO_OFFSETS_PARTITION, KO_RECORD_OFFSET, KO_PATH
};

typedef struct ko_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} ko_vtab;

typedef struct ko_cursor {
  sqlite3_vtab_cursor base;
  kl_offsets *fold;         /* owns the rows */
  const kl_offsets_row *const *rows;
  size_t n, i;              /* rows, and the current one */
  char *path;               /* as given (sqlite3_malloc'd) */
} ko_cursor;

static int ko_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(group_id TEXT, topic TEXT, partition INTEGER, committed_offset INTEGER,"
      " leader_epoch INTEGER, metadata TEXT, commit_timestamp INTEGER, expire_timestamp INTEGER,"
      " offsets_partition INTEGER, record_offset INTEGER, path HIDDEN)", sizeof(ko_vtab), out);
  if (rc == SQLITE_OK) ((ko_vtab *)*out)->conn = aux;
  return rc;
}

static int ko_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static const kl_term ko_dir = KL_DIR_TERM(KO_PATH);

/* The path is required; ORDER BY group_id, topic, partition (a prefix of
** it, ascending) is the order the rows come in. */
static int ko_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  int rc = kl_best_index_dir(info, &ko_dir);
  if (rc != SQLITE_OK) return rc;
  int ours = info->nOrderBy > 0 && info->nOrderBy <= 3;
  for (int i = 0; ours && i < info->nOrderBy; i++) {
    ours = info->aOrderBy[i].iColumn == i && !info->aOrderBy[i].desc;
  }
  if (ours) info->orderByConsumed = 1;
  return SQLITE_OK;
}

static int ko_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  ko_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void ko_end(ko_cursor *c) {
  kl_offsets_free(c->fold);
  c->fold = NULL;
  c->rows = NULL;
  c->n = c->i = 0;
  sqlite3_free(c->path);
  c->path = NULL;
}

static int ko_close(sqlite3_vtab_cursor *cur) {
  ko_end((ko_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int ko_error(ko_cursor *c, kl_rc rc, const kl_err *err) {
  sqlite3_vtab *vt = c->base.pVtab;
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("kafka_consumer_offsets: %s", err->msg[0] ? err->msg : kl_rc_name(rc));
  ko_end(c);
  return kl_sqlite_rc(rc);
}

/* What the replay of one partition folds into. */
typedef struct ko_replay {
  kl_offsets *fold;
  int32_t partition;        /* the __consumer_offsets partition */
} ko_replay;

static kl_rc fold_record(void *ud, const kl_record *r, kl_err *err) {
  const ko_replay *k = ud;
  return kl_offsets_add(k->fold, k->partition, r->offset, r->key, r->key_len, r->value,
                        r->value_len, err);
}

/* Fold every record of partition p from its log start offset on, as the
** group coordinator loads them, read_committed (core/replay.h).  Kafka
** applies a committed transaction's offsets at its COMMIT marker; here
** they take effect at their own offset, which differs only when a plain
** commit of the same key lies between the two. */
static kl_rc read_partition(ko_cursor *c, const kl_part *p, kl_err *err) {
  ko_vtab *vt = (ko_vtab *)c->base.pVtab;
  ko_replay k = {c->fold, p->partition};
  return kl_replay_partition(kl_sqlite_env(), p->dir, p->log_start, KL_REPLAY_COMMITTED,
                             &vt->conn->stats, fold_record, &k, err);
}

static int ko_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  ko_cursor *c = (ko_cursor *)cur;
  ko_end(c);
  const char *path;
  int rc0 = kl_dir_arg(&ko_dir, idx_str, argc, argv, cur->pVtab, "kafka_consumer_offsets", &path);
  if (rc0) return rc0;
  if (!path) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_consumer_offsets: a path is required: "
                                          "kafka_consumer_offsets('<log dir>')");
    return SQLITE_ERROR;
  }
  c->path = sqlite3_mprintf("%s", path);
  if (!c->path) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  kl_broker *b = NULL;
  kl_rc rc = kl_broker_open(kl_sqlite_env(), path, &b, &err);
  if (rc) return ko_error(c, rc, &err);
  rc = kl_offsets_new(kl_sqlite_env(), &c->fold);
  for (size_t i = kl_broker_seek(b, KO_TOPIC, strlen(KO_TOPIC), 0);
       rc == KL_OK && i < kl_broker_count(b); i++) {
    const kl_part *p = kl_broker_part(b, i);
    if (!p->topic || strcmp(p->topic, KO_TOPIC) != 0) break;
    rc = read_partition(c, p, &err);
  }
  kl_broker_close(b);
  if (rc == KL_OK) rc = kl_offsets_rows(c->fold, &c->rows, &c->n);
  if (rc) return ko_error(c, rc, &err);
  return SQLITE_OK;
}

static int ko_next(sqlite3_vtab_cursor *cur) {
  ((ko_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int ko_eof(sqlite3_vtab_cursor *cur) {
  ko_cursor *c = (ko_cursor *)cur;
  return c->i >= c->n;
}

static int ko_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ko_cursor *c = (ko_cursor *)cur;
  const kl_offsets_row *r = c->rows[c->i];
  const kl_offsets_value *v = &r->v;
  switch (col) {
    case KO_GROUP_ID:
      sqlite3_result_text(ctx, (const char *)r->group, r->group_len, SQLITE_TRANSIENT);
      break;
    case KO_TOPIC_COL:
      sqlite3_result_text(ctx, (const char *)r->topic, r->topic_len, SQLITE_TRANSIENT);
      break;
    case KO_PARTITION: sqlite3_result_int(ctx, r->partition); break;
    case KO_COMMITTED_OFFSET: sqlite3_result_int64(ctx, v->offset); break;
    case KO_LEADER_EPOCH: /* -1 is Kafka's "unknown" */
      if (v->version >= 3 && v->leader_epoch != -1) sqlite3_result_int(ctx, v->leader_epoch);
      else sqlite3_result_null(ctx);
      break;
    case KO_METADATA:
      if (v->metadata) {
        sqlite3_result_text(ctx, (const char *)v->metadata, v->metadata_len, SQLITE_TRANSIENT);
      } else {
        sqlite3_result_null(ctx);
      }
      break;
    case KO_COMMIT_TIMESTAMP: sqlite3_result_int64(ctx, v->commit_timestamp); break;
    case KO_EXPIRE_TIMESTAMP: /* a field of version 1 only */
      if (v->version == 1) sqlite3_result_int64(ctx, v->expire_timestamp);
      else sqlite3_result_null(ctx);
      break;
    case KO_OFFSETS_PARTITION: sqlite3_result_int(ctx, r->offsets_partition); break;
    case KO_RECORD_OFFSET: sqlite3_result_int64(ctx, r->record_offset); break;
    case KO_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int ko_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((ko_cursor *)cur)->i;
  return SQLITE_OK;
}

static const sqlite3_module ko_module = {
    .iVersion = 1,
    .xCreate = NULL, /* eponymous only */
    .xConnect = ko_connect,
    .xBestIndex = ko_best_index,
    .xDisconnect = ko_disconnect,
    .xDestroy = ko_disconnect,
    .xOpen = ko_open,
    .xClose = ko_close,
    .xFilter = ko_filter,
    .xNext = ko_next,
    .xEof = ko_eof,
    .xColumn = ko_column,
    .xRowid = ko_rowid,
};

int kl_offsets_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_consumer_offsets", &ko_module, conn);
}
