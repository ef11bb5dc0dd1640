/*
** schemas_vtab.c - the kafka_schemas table-valued function: the Schema
** Registry's schemas, replayed from its `_schemas` topic (decode/
** registry.h), one row per (subject, version):
**
**   SELECT id, subject, version, schema_type, deleted
**     FROM kafka_schemas('/var/lib/kafka/data');
**
** The path is a `_schemas` partition, log directories holding one (a
** partition of another topic stands for its log directory), or a file of
** the REST API's `GET /schemas` answer (decode/source.h).  Rows come by
** id, then subject and version.  A record the registry could not read is
** SQLITE_CORRUPT naming the partition and offset.  Eponymous only,
** DIRECTONLY like kafka_log.
*/
#include <string.h>

#include "glue.h"
#include "listing.h"
#include "registry.h"
#include "source.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

enum {
  KS_ID, KS_SUBJECT, KS_VERSION, KS_SCHEMA_TYPE, KS_SCHEMA, KS_REFERENCES, KS_DELETED,
  KS_OFFSET, KS_MD5, KS_METADATA, KS_RULE_SET, KS_GUID, KS_PATH
};

typedef struct ks_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} ks_vtab;

typedef struct ks_cursor {
  sqlite3_vtab_cursor base;
  kl_registry *reg;
  size_t n, i;
  char *path;
} ks_cursor;

static int ks_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(id INTEGER, subject TEXT, version INTEGER, schema_type TEXT, schema TEXT,"
      " \"references\" TEXT, deleted INTEGER, offset INTEGER, md5 TEXT, metadata TEXT,"
      " rule_set TEXT, guid TEXT, path HIDDEN)", sizeof(ks_vtab), out);
  if (rc == SQLITE_OK) ((ks_vtab *)*out)->conn = aux;
  return rc;
}

static int ks_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static const kl_term ks_dir = KL_DIR_TERM(KS_PATH);

static int ks_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  int rc = kl_best_index_dir(info, &ks_dir);
  if (rc != SQLITE_OK) return rc;
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == KS_ID && !info->aOrderBy[0].desc) {
    info->orderByConsumed = 1;
  }
  return SQLITE_OK;
}

static int ks_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  ks_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void ks_end(ks_cursor *c) {
  kl_registry_free(c->reg);
  c->reg = NULL;
  c->n = c->i = 0;
  sqlite3_free(c->path);
  c->path = NULL;
}

static int ks_close(sqlite3_vtab_cursor *cur) {
  ks_end((ks_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int ks_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  ks_cursor *c = (ks_cursor *)cur;
  ks_vtab *vt = (ks_vtab *)cur->pVtab;
  ks_end(c);
  const char *path;
  int rc0 = kl_dir_arg(&ks_dir, idx_str, argc, argv, cur->pVtab, "kafka_schemas", &path);
  if (rc0) return rc0;
  if (!path) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_schemas: a path is required: kafka_schemas("
                                          "'<_schemas partition, log dir or GET /schemas file>')");
    return SQLITE_ERROR;
  }
  if (!(c->path = sqlite3_mprintf("%s", path))) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  kl_source src;
  kl_rc rc = kl_source_probe(kl_sqlite_env(), path, &src, &err);
  if (rc == KL_OK) rc = kl_source_load(kl_sqlite_env(), &src, &vt->conn->stats, &c->reg, &err);
  kl_source_free(kl_sqlite_env(), &src);
  if (rc) {
    ks_end(c);
    return kl_vtab_error(cur->pVtab, "kafka_schemas", rc, &err);
  }
  c->n = kl_registry_count(c->reg);
  return SQLITE_OK;
}

static int ks_next(sqlite3_vtab_cursor *cur) {
  ((ks_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int ks_eof(sqlite3_vtab_cursor *cur) {
  ks_cursor *c = (ks_cursor *)cur;
  return c->i >= c->n;
}

static void text_or_null(sqlite3_context *ctx, const char *s) {
  if (s) sqlite3_result_text(ctx, s, -1, SQLITE_TRANSIENT);
  else sqlite3_result_null(ctx);
}

static int ks_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ks_cursor *c = (ks_cursor *)cur;
  const kl_reg_schema *s = kl_registry_at(c->reg, c->i);
  switch (col) {
    case KS_ID: sqlite3_result_int(ctx, s->id); break;
    case KS_SUBJECT: text_or_null(ctx, s->subject); break;
    case KS_VERSION: sqlite3_result_int(ctx, s->version); break;
    case KS_SCHEMA_TYPE: text_or_null(ctx, s->type); break;
    case KS_SCHEMA: sqlite3_result_text(ctx, s->schema, (int)s->schema_len, SQLITE_TRANSIENT);
      break;
    case KS_REFERENCES: text_or_null(ctx, s->references); break;
    case KS_DELETED: sqlite3_result_int(ctx, s->deleted); break;
    case KS_OFFSET:
      if (s->offset >= 0) sqlite3_result_int64(ctx, s->offset);
      else sqlite3_result_null(ctx);
      break;
    case KS_MD5: text_or_null(ctx, s->md5); break;
    case KS_METADATA: text_or_null(ctx, s->metadata); break;
    case KS_RULE_SET: text_or_null(ctx, s->rule_set); break;
    case KS_GUID:
      if (s->has_guid) {
        static const char hex[] = "0123456789abcdef";
        char g[37], *w = g;
        for (int i = 0; i < 16; i++) {
          if (i == 4 || i == 6 || i == 8 || i == 10) *w++ = '-';
          *w++ = hex[s->guid[i] >> 4];
          *w++ = hex[s->guid[i] & 15];
        }
        sqlite3_result_text(ctx, g, (int)(w - g), SQLITE_TRANSIENT);
      } else {
        sqlite3_result_null(ctx);
      }
      break;
    case KS_PATH: sqlite3_result_text(ctx, c->path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int ks_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((ks_cursor *)cur)->i;
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

int kl_schemas_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_schemas", &ks_module, conn);
}
