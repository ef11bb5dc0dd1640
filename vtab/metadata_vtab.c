/*
** metadata_vtab.c - KRaft's metadata partition as tables (core/metalog.h,
** metarecord.h, metaimage.h).  The path is the __cluster_metadata-0
** directory, or a directory holding it (a log directory, or Kafka's
** metadata.log.dir).
**
**   kafka_metadata(path)            one row per metadata record: every
**                                   snapshot's (by end offset), then the
**                                   log's, each decoded to JSON
**   kafka_topics(path)              the image a replay gives: topics
**   kafka_partitions_metadata(path) and partitions
**
** The two image tables take hidden columns as_of_offset and as_of_time:
** "= value" asks for the image after the records at and below that offset,
** or stamped at or before that time (milliseconds); the column then holds
** the value asked, otherwise the offset (time) of the last record applied.
** kafka_topic_id(dir) reads a partition directory's partition.metadata:
** the topic id in Kafka's form, which joins with kafka_topics.topic_id.
** DIRECTONLY, like every table that reads files named in SQL.
*/
#include <stdio.h>
#include <string.h>

#include "cursor.h"
#include "file.h"
#include "glue.h"
#include "sqlenv.h"
#include "listing.h"
#include "log.h"
#include "metaimage.h"
#include "metalog.h"
#include "metarecord.h"

SQLITE_EXTENSION_INIT3

typedef struct km_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} km_vtab;

static int km_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static void put_hex(sqlite3_context *ctx, const uint8_t *p, int32_t n) {
  static const char hex[] = "0123456789abcdef";
  char *s = sqlite3_malloc64((sqlite3_uint64)n * 2 + 1);
  if (!s) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  for (int32_t i = 0; i < n; i++) s[2 * i] = hex[p[i] >> 4], s[2 * i + 1] = hex[p[i] & 15];
  sqlite3_result_text(ctx, s, 2 * n, sqlite3_free);
}

static int km_fail(sqlite3_vtab_cursor *cur, const char *module, kl_rc rc, const kl_err *err) {
  return kl_vtab_error(cur->pVtab, module, rc, err);
}

/* ---- kafka_metadata ---- */

enum { KM_OFFSET, KM_TIMESTAMP, KM_LEADER_EPOCH, KM_TYPE, KM_API_KEY, KM_VERSION, KM_RECORD, KM_RAW,
       KM_SNAPSHOT, KM_PATH };

/* Where the walk is: a snapshot's records, then the log's. */
enum { KM_IN_SNAPSHOTS, KM_IN_LOG, KM_AT_END };

typedef struct km_cursor {
  sqlite3_vtab_cursor base;
  int state;
  char *dir;                /* the metadata partition (kl_malloc'd) */
  char *path;               /* as given */
  kl_msnap *snaps;
  size_t nsnaps, si;
  kl_msnap_walk *sw;
  kl_log *log;
  kl_cursor *lc;
  kl_mentry e;              /* the current record */
  kl_mrec rec;
  kl_buf json;
  sqlite3_int64 rowid;
} km_cursor;

static int km_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                      char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(offset INTEGER, timestamp INTEGER, leader_epoch INTEGER, type TEXT,"
      " api_key INTEGER, version INTEGER, record TEXT, raw TEXT, snapshot INTEGER, path HIDDEN)",
      sizeof(km_vtab), out);
  if (rc == SQLITE_OK) ((km_vtab *)*out)->conn = aux;
  return rc;
}

static const kl_term km_dir = KL_DIR_TERM(KM_PATH);

static int km_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_dir(info, &km_dir);
}

static int km_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  km_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void km_end(km_cursor *c) {
  kl_msnap_close(c->sw);
  c->sw = NULL;
  kl_cursor_free(c->lc);
  c->lc = NULL;
  kl_log_close(c->log);
  c->log = NULL;
  kl_msnaps_free(kl_sqlite_env(), c->snaps, c->nsnaps);
  c->snaps = NULL;
  c->nsnaps = c->si = 0;
  kl_free(kl_sqlite_env(), c->dir);
  c->dir = NULL;
  sqlite3_free(c->path);
  c->path = NULL;
  c->state = KM_AT_END;
}

static int km_close(sqlite3_vtab_cursor *cur) {
  km_cursor *c = (km_cursor *)cur;
  km_end(c);
  kl_buf_free(kl_sqlite_env(), &c->json);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* The next record of the snapshots: KL_OK, or KL_DONE past the last. */
static kl_rc snap_next(km_cursor *c, kl_err *err) {
  km_vtab *vt = (km_vtab *)c->base.pVtab;
  for (;;) {
    if (!c->sw) {
      if (c->si == c->nsnaps) return KL_DONE;
      kl_rc rc = kl_msnap_open(kl_sqlite_env(), c->snaps[c->si].path, &vt->conn->stats, &c->sw, err);
      if (rc) return rc;
    }
    kl_rc rc = kl_msnap_next(c->sw, &c->e, err);
    if (rc != KL_DONE) return rc;
    kl_msnap_close(c->sw);
    c->sw = NULL;
    c->si++;
  }
}

static kl_rc log_next(km_cursor *c, kl_err *err) {
  kl_rc rc = kl_cursor_next(c->lc, err);
  if (rc == KL_OK) rc = kl_cursor_load(c->lc, err);
  if (rc) return rc;
  const kl_record *r = kl_cursor_record(c->lc);
  c->e.offset = r->offset;
  c->e.timestamp = r->timestamp;
  c->e.leader_epoch = kl_cursor_batch(c->lc)->leader_epoch;
  c->e.value = r->value;
  c->e.value_len = r->value_len;
  return KL_OK;
}

/* Move to the next record and decode it. */
static int km_step(km_cursor *c) {
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc;
  if (c->state == KM_IN_SNAPSHOTS) {
    rc = snap_next(c, &err);
    if (rc == KL_DONE) {
      km_vtab *vt = (km_vtab *)c->base.pVtab;
      kl_bounds all = kl_bounds_all();
      c->state = KM_IN_LOG;
      rc = kl_cursor_new(c->log, &vt->conn->stats, KL_ON_CORRUPT_ERROR, &c->lc);
      if (rc) rc = kl_err_set(&err, rc, "out of memory");
      if (rc == KL_OK) rc = kl_cursor_start(c->lc, &all, &err);
      if (rc == KL_OK) rc = log_next(c, &err);
    }
  } else {
    rc = log_next(c, &err);
  }
  if (rc == KL_DONE) {
    c->state = KM_AT_END;
    return SQLITE_OK;
  }
  if (rc == KL_OK && c->e.value) {
    kl_err e;
    kl_err_clear(&e);
    rc = kl_meta_decode(kl_sqlite_env(), c->e.value, (size_t)c->e.value_len, &c->rec, &c->json, &e);
    if (rc) {
      const char *where = c->state == KM_IN_SNAPSHOTS ? c->snaps[c->si].path : c->dir;
      kl_err_set(&err, rc, "%s: record at offset %lld: %s", where, (long long)c->e.offset, e.msg);
    }
  } else if (rc == KL_OK) {
    memset(&c->rec, 0, sizeof c->rec);
    c->rec.api_key = c->rec.version = -1;
  }
  if (rc) {
    km_end(c);
    return km_fail(&c->base, "kafka_metadata", rc, &err);
  }
  c->rowid++;
  return SQLITE_OK;
}

static int km_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  km_cursor *c = (km_cursor *)cur;
  km_end(c);
  c->rowid = 0;
  const char *path;
  int rc0 = kl_dir_arg(&km_dir, idx_str, argc, argv, cur->pVtab, "kafka_metadata", &path);
  if (rc0) return rc0;
  if (!path) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_metadata: a path is required: "
                                          "kafka_metadata('<__cluster_metadata-0 or its log dir>')");
    return SQLITE_ERROR;
  }
  if (!(c->path = sqlite3_mprintf("%s", path))) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_metalog_dir(kl_sqlite_env(), path, &c->dir, &err);
  if (rc == KL_OK) rc = kl_msnaps_list(kl_sqlite_env(), c->dir, &c->snaps, &c->nsnaps, &err);
  if (rc == KL_OK) rc = kl_log_open(kl_sqlite_env(), c->dir, &c->log, &err);
  if (rc) {
    km_end(c);
    return km_fail(cur, "kafka_metadata", rc, &err);
  }
  c->state = KM_IN_SNAPSHOTS;
  return km_step(c);
}

static int km_next(sqlite3_vtab_cursor *cur) { return km_step((km_cursor *)cur); }

static int km_eof(sqlite3_vtab_cursor *cur) { return ((km_cursor *)cur)->state == KM_AT_END; }

static int km_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  km_cursor *c = (km_cursor *)cur;
  const kl_mrec *r = &c->rec;
  switch (col) {
    case KM_OFFSET: sqlite3_result_int64(ctx, c->e.offset); break;
    case KM_TIMESTAMP: sqlite3_result_int64(ctx, c->e.timestamp); break;
    case KM_LEADER_EPOCH: sqlite3_result_int(ctx, c->e.leader_epoch); break;
    case KM_TYPE:
      if (r->type) sqlite3_result_text(ctx, r->type->name, -1, SQLITE_STATIC);
      break;
    case KM_API_KEY:
      if (r->api_key >= 0) sqlite3_result_int(ctx, r->api_key);
      break;
    case KM_VERSION:
      if (r->version >= 0) sqlite3_result_int(ctx, r->version);
      break;
    case KM_RECORD:
      if (r->type) sqlite3_result_text(ctx, (const char *)c->json.p, (int)c->json.len, SQLITE_TRANSIENT);
      break;
    case KM_RAW:
      if (!r->type && c->e.value) put_hex(ctx, c->e.value, c->e.value_len);
      break;
    case KM_SNAPSHOT:
      if (c->state == KM_IN_SNAPSHOTS) sqlite3_result_int64(ctx, c->snaps[c->si].end_offset);
      break;
    case KM_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int km_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((km_cursor *)cur)->rowid;
  return SQLITE_OK;
}

static const sqlite3_module km_module = {
    .iVersion = 1,
    .xConnect = km_connect,
    .xBestIndex = km_best_index,
    .xDisconnect = km_disconnect,
    .xDestroy = km_disconnect,
    .xOpen = km_open,
    .xClose = km_close,
    .xFilter = km_filter,
    .xNext = km_next,
    .xEof = km_eof,
    .xColumn = km_column,
    .xRowid = km_rowid,
};

int kl_metadata_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_metadata", &km_module, conn);
}

/* ---- the image: kafka_topics, kafka_partitions_metadata ---- */

/* The plan of both: the path, then the point of the image asked for.  A
** table's terms are KI_TERMS of its hidden columns (path first). */
enum { KI_OWN_AS_OF_OFFSET = 1, KI_OWN_AS_OF_TIME };
#define KI_TERMS(path)                                                                          \
  {                                                                                             \
    KL_DIR_TERM(path),                                                                          \
    {"as_of_offset=?", (path) + 1, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_OWN, KI_OWN_AS_OF_OFFSET, 0, \
     0, 0, 0, 0, 0},                                                                            \
    {"as_of_time=?", (path) + 2, SQLITE_INDEX_CONSTRAINT_EQ, KL_ACT_OWN, KI_OWN_AS_OF_TIME, 0, 0, \
     0, 0, 0, 0},                                                                               \
  }
#define KI_NTERMS 3

typedef struct ki_cursor {
  sqlite3_vtab_cursor base;
  int parts;                /* kafka_partitions_metadata */
  const kl_term *terms;     /* the table's KI_TERMS */
  kl_mimage *img;
  const kl_mi_topic *const *topics;
  const kl_mi_part *const *pv;
  size_t n, i;
  char *path;
  kl_mreplay q;
  int have_offset, have_time;
  kl_buf tmp;
} ki_cursor;

static int ki_best_index(sqlite3_index_info *info, const kl_term *t) {
  for (int i = 0; i < info->nConstraint; i++) {
    int col = info->aConstraint[i].iColumn;
    /* A plan where "as_of_... = x" is not yet usable would compare x with
    ** the column of the latest image, not ask for the image at x: refused,
    ** so that SQLite picks the plan that asks. */
    if ((col == t[1].col || col == t[2].col) && info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ &&
        !info->aConstraint[i].usable) {
      return SQLITE_CONSTRAINT;
    }
  }
  return kl_best_index_listing(info, t, KI_NTERMS);
}

static int ki_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out, int parts, const kl_term *terms) {
  ki_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->parts = parts;
  c->terms = terms;
  *out = &c->base;
  return SQLITE_OK;
}

static void ki_end(ki_cursor *c) {
  kl_mimage_free(c->img);
  c->img = NULL;
  c->n = c->i = 0;
  sqlite3_free(c->path);
  c->path = NULL;
}

static int ki_close(sqlite3_vtab_cursor *cur) {
  ki_cursor *c = (ki_cursor *)cur;
  ki_end(c);
  kl_buf_free(kl_sqlite_env(), &c->tmp);
  sqlite3_free(c);
  return SQLITE_OK;
}

static const char *ki_name(const ki_cursor *c) {
  return c->parts ? "kafka_partitions_metadata" : "kafka_topics";
}

static int ki_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  ki_cursor *c = (ki_cursor *)cur;
  km_vtab *vt = (km_vtab *)cur->pVtab;
  ki_end(c);
  kl_listing_args a;
  int rc0 = kl_listing_args_read(c->terms, KI_NTERMS, idx_str, argc, argv, cur->pVtab, ki_name(c), &a);
  if (rc0) return rc0;
  const char *path = a.dir;
  if (!path) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("%s: a path is required: %s('<__cluster_metadata-0 or "
                                          "its log dir>')", ki_name(c), ki_name(c));
    return SQLITE_ERROR;
  }
  if (!(c->path = sqlite3_mprintf("%s", path))) return SQLITE_NOMEM;
  c->q.as_of_offset = c->q.as_of_time = INT64_MAX;
  c->have_offset = c->have_time = 0;
  for (int k = 0; k < a.nown; k++) {
    sqlite3_value *v = a.own_v[k];
    int offset = a.own[k]->arg == KI_OWN_AS_OF_OFFSET;
    if (sqlite3_value_numeric_type(v) != SQLITE_INTEGER) {
      sqlite3_free(cur->pVtab->zErrMsg);
      cur->pVtab->zErrMsg = sqlite3_mprintf("%s: %s must be an integer", ki_name(c),
                                            offset ? "as_of_offset" : "as_of_time (milliseconds)");
      return SQLITE_MISMATCH;
    }
    if (offset) c->q.as_of_offset = sqlite3_value_int64(v), c->have_offset = 1;
    else c->q.as_of_time = sqlite3_value_int64(v), c->have_time = 1;
  }
  kl_err err;
  kl_err_clear(&err);
  char *dir = NULL;
  kl_rc rc = kl_metalog_dir(kl_sqlite_env(), path, &dir, &err);
  if (rc == KL_OK) rc = kl_mimage_new(kl_sqlite_env(), &c->img);
  if (rc == KL_OK) rc = kl_metalog_replay(kl_sqlite_env(), dir, &vt->conn->stats, &c->q, c->img, &err);
  if (rc == KL_OK) {
    rc = c->parts ? kl_mimage_parts(c->img, &c->pv, &c->n) : kl_mimage_topics(c->img, &c->topics, &c->n);
  }
  kl_free(kl_sqlite_env(), dir);
  if (rc) {
    ki_end(c);
    int src = km_fail(cur, ki_name(c), rc, &err);
    return rc == KL_RANGE ? SQLITE_ERROR : src; /* a point before what is kept: no damage */
  }
  return SQLITE_OK;
}

static int ki_next(sqlite3_vtab_cursor *cur) {
  ((ki_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int ki_eof(sqlite3_vtab_cursor *cur) {
  ki_cursor *c = (ki_cursor *)cur;
  return c->i >= c->n;
}

static int ki_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((ki_cursor *)cur)->i;
  return SQLITE_OK;
}

static void result_uuid(sqlite3_context *ctx, const uint8_t id[16]) {
  char s[23];
  kl_uuid_str(id, s);
  sqlite3_result_text(ctx, s, 22, SQLITE_TRANSIENT);
}

/* A record's offset in the log; NULL for a snapshot's. */
static void result_offset(sqlite3_context *ctx, int64_t offset) {
  if (offset >= 0) sqlite3_result_int64(ctx, offset);
}

/* The hidden columns' values: what was asked, else what was reached. */
static void result_as_of(sqlite3_context *ctx, const ki_cursor *c, int time) {
  if (time) sqlite3_result_int64(ctx, c->have_time ? c->q.as_of_time : c->q.last_timestamp);
  else sqlite3_result_int64(ctx, c->have_offset ? c->q.as_of_offset : c->q.last_offset);
}

/* kafka_topics */
enum { KT_NAME, KT_TOPIC_ID, KT_PARTITIONS, KT_CONFIGS, KT_RECORD_OFFSET, KT_PATH, KT_AS_OF_OFFSET,
       KT_AS_OF_TIME };

static int kt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                      char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(name TEXT, topic_id TEXT, partitions INTEGER, configs TEXT,"
      " record_offset INTEGER, path HIDDEN, as_of_offset HIDDEN, as_of_time HIDDEN)",
      sizeof(km_vtab), out);
  if (rc == SQLITE_OK) ((km_vtab *)*out)->conn = aux;
  return rc;
}

static const kl_term kt_terms[KI_NTERMS] = KI_TERMS(KT_PATH);

static int kt_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return ki_best_index(info, kt_terms);
}

static int kt_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  return ki_open(vt, out, 0, kt_terms);
}

/* A JSON string of a NUL-terminated text (names and values Kafka keeps
** as Java strings: the UTF-8 the record carried). */
static kl_rc json_str(kl_buf *o, const char *s) {
  kl_rc rc = kl_buf_append(kl_sqlite_env(), o, "\"", 1);
  for (; rc == KL_OK && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    char e[8];
    if (ch == '"' || ch == '\\') snprintf(e, sizeof e, "\\%c", ch);
    else if (ch < 0x20) snprintf(e, sizeof e, "\\u%04x", ch);
    else e[0] = (char)ch, e[1] = 0;
    rc = kl_buf_append(kl_sqlite_env(), o, e, strlen(e));
  }
  return rc ? rc : kl_buf_append(kl_sqlite_env(), o, "\"", 1);
}

static int kt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ki_cursor *c = (ki_cursor *)cur;
  const kl_mi_topic *t = c->topics[c->i];
  switch (col) {
    case KT_NAME: sqlite3_result_text(ctx, t->name, -1, SQLITE_TRANSIENT); break;
    case KT_TOPIC_ID: result_uuid(ctx, t->id); break;
    case KT_PARTITIONS: sqlite3_result_int(ctx, t->partitions); break;
    case KT_CONFIGS: {
      c->tmp.len = 0;
      kl_rc rc = kl_buf_append(kl_sqlite_env(), &c->tmp, "{", 1);
      for (size_t i = 0; rc == KL_OK && i < t->nconfigs; i++) {
        if (i) rc = kl_buf_append(kl_sqlite_env(), &c->tmp, ",", 1);
        if (rc == KL_OK) rc = json_str(&c->tmp, t->configs[i]->name);
        if (rc == KL_OK) rc = kl_buf_append(kl_sqlite_env(), &c->tmp, ":", 1);
        if (rc == KL_OK) rc = json_str(&c->tmp, t->configs[i]->value);
      }
      if (rc == KL_OK) rc = kl_buf_append(kl_sqlite_env(), &c->tmp, "}", 1);
      if (rc) sqlite3_result_error_nomem(ctx);
      else sqlite3_result_text(ctx, (const char *)c->tmp.p, (int)c->tmp.len, SQLITE_TRANSIENT);
      break;
    }
    case KT_RECORD_OFFSET: result_offset(ctx, t->offset); break;
    case KT_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
    case KT_AS_OF_OFFSET: result_as_of(ctx, c, 0); break;
    case KT_AS_OF_TIME: result_as_of(ctx, c, 1); break;
  }
  return SQLITE_OK;
}

static const sqlite3_module kt_module = {
    .iVersion = 1,
    .xConnect = kt_connect,
    .xBestIndex = kt_best_index,
    .xDisconnect = km_disconnect,
    .xDestroy = km_disconnect,
    .xOpen = kt_open,
    .xClose = ki_close,
    .xFilter = ki_filter,
    .xNext = ki_next,
    .xEof = ki_eof,
    .xColumn = kt_column,
    .xRowid = ki_rowid,
};

int kl_topics_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_topics", &kt_module, conn);
}

/* kafka_partitions_metadata */
enum { KPM_TOPIC, KPM_TOPIC_ID, KPM_PARTITION, KPM_LEADER, KPM_LEADER_EPOCH, KPM_PARTITION_EPOCH,
       KPM_REPLICAS, KPM_ISR, KPM_REMOVING, KPM_ADDING, KPM_ELR, KPM_LAST_KNOWN_ELR,
       KPM_RECOVERY, KPM_RECORD_OFFSET, KPM_PATH, KPM_AS_OF_OFFSET, KPM_AS_OF_TIME };

static int kpm_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                       sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(topic TEXT, topic_id TEXT, partition INTEGER, leader INTEGER,"
      " leader_epoch INTEGER, partition_epoch INTEGER, replicas TEXT, isr TEXT,"
      " removing_replicas TEXT, adding_replicas TEXT, eligible_leader_replicas TEXT,"
      " last_known_elr TEXT, leader_recovery_state INTEGER, record_offset INTEGER,"
      " path HIDDEN, as_of_offset HIDDEN, as_of_time HIDDEN)", sizeof(km_vtab), out);
  if (rc == SQLITE_OK) ((km_vtab *)*out)->conn = aux;
  return rc;
}

static const kl_term kpm_terms[KI_NTERMS] = KI_TERMS(KPM_PATH);

static int kpm_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return ki_best_index(info, kpm_terms);
}

static int kpm_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  return ki_open(vt, out, 1, kpm_terms);
}

/* A list of broker ids as a JSON array; NULL for a null list. */
static void result_ids(sqlite3_context *ctx, kl_buf *b, const kl_ids *a) {
  if (a->n < 0) return;
  b->len = 0;
  kl_rc rc = kl_buf_append(kl_sqlite_env(), b, "[", 1);
  for (int32_t i = 0; rc == KL_OK && i < a->n; i++) {
    char num[16];
    snprintf(num, sizeof num, "%s%d", i ? "," : "", (int)a->v[i]);
    rc = kl_buf_append(kl_sqlite_env(), b, num, strlen(num));
  }
  if (rc == KL_OK) rc = kl_buf_append(kl_sqlite_env(), b, "]", 1);
  if (rc) sqlite3_result_error_nomem(ctx);
  else sqlite3_result_text(ctx, (const char *)b->p, (int)b->len, SQLITE_TRANSIENT);
}

static int kpm_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ki_cursor *c = (ki_cursor *)cur;
  const kl_mi_part *p = c->pv[c->i];
  switch (col) {
    case KPM_TOPIC:
      if (p->topic) sqlite3_result_text(ctx, p->topic, -1, SQLITE_TRANSIENT);
      break;
    case KPM_TOPIC_ID: result_uuid(ctx, p->topic_id); break;
    case KPM_PARTITION: sqlite3_result_int(ctx, p->partition); break;
    case KPM_LEADER: sqlite3_result_int(ctx, p->leader); break;
    case KPM_LEADER_EPOCH: sqlite3_result_int(ctx, p->leader_epoch); break;
    case KPM_PARTITION_EPOCH: sqlite3_result_int(ctx, p->partition_epoch); break;
    case KPM_REPLICAS: result_ids(ctx, &c->tmp, &p->replicas); break;
    case KPM_ISR: result_ids(ctx, &c->tmp, &p->isr); break;
    case KPM_REMOVING: result_ids(ctx, &c->tmp, &p->removing); break;
    case KPM_ADDING: result_ids(ctx, &c->tmp, &p->adding); break;
    case KPM_ELR: result_ids(ctx, &c->tmp, &p->elr); break;
    case KPM_LAST_KNOWN_ELR: result_ids(ctx, &c->tmp, &p->last_known_elr); break;
    case KPM_RECOVERY: sqlite3_result_int(ctx, p->leader_recovery_state); break;
    case KPM_RECORD_OFFSET: result_offset(ctx, p->offset); break;
    case KPM_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
    case KPM_AS_OF_OFFSET: result_as_of(ctx, c, 0); break;
    case KPM_AS_OF_TIME: result_as_of(ctx, c, 1); break;
  }
  return SQLITE_OK;
}

static const sqlite3_module kpm_module = {
    .iVersion = 1,
    .xConnect = kpm_connect,
    .xBestIndex = kpm_best_index,
    .xDisconnect = km_disconnect,
    .xDestroy = km_disconnect,
    .xOpen = kpm_open,
    .xClose = ki_close,
    .xFilter = ki_filter,
    .xNext = ki_next,
    .xEof = ki_eof,
    .xColumn = kpm_column,
    .xRowid = ki_rowid,
};

int kl_partitions_metadata_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_partitions_metadata", &kpm_module, conn);
}

/* ---- kafka_topic_id(dir) ---- */

/* partition.metadata (PartitionMetadataFile): "version: 0", then
** "topic_id: <id>", each on its own line; anything else is an error, as
** Kafka's reader refuses it. */
void kl_fn_topic_id(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *dir = (const char *)sqlite3_value_text(argv[0]);
  if (!dir) return;
  char *path = sqlite3_mprintf("%s/partition.metadata", dir);
  if (!path) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  kl_err err;
  kl_err_clear(&err);
  kl_file f;
  char buf[256];
  kl_rc rc = kl_file_open(&f, NULL, path, &err);
  if (rc == KL_NOTFOUND) { /* Kafka writes it once the topic has an id */
    sqlite3_free(path);
    return;
  }
  size_t n = 0;
  if (rc == KL_OK) {
    n = f.size < (int64_t)sizeof buf - 1 ? (size_t)f.size : sizeof buf - 1;
    rc = kl_file_read(&f, 0, buf, n, &err);
    kl_file_close(&f);
  }
  buf[n] = 0;
  uint8_t id[16];
  const char *v = strstr(buf, "\ntopic_id: ");
  size_t vlen = v ? strcspn(v + 11, "\r\n") : 0;
  if (rc == KL_OK && (strncmp(buf, "version: 0\n", 11) != 0 || !v || v != buf + 10 ||
                      !kl_uuid_parse(v + 11, vlen, id))) {
    rc = kl_err_set(&err, KL_CORRUPT, "%s: malformed (expected \"version: 0\" then \"topic_id: "
                    "<22 characters of base64url>\")", path);
  }
  sqlite3_free(path);
  if (rc) {
    sqlite3_result_error(ctx, err.msg, -1);
    sqlite3_result_error_code(ctx, kl_sqlite_rc(rc));
    return;
  }
  result_uuid(ctx, id);
}
