/*
** check_vtab.c - the kafka_log_check table-valued function:
**
**   SELECT * FROM kafka_log_check('<partition dir>');
**
** One row per finding of kl_check_dir (core/check.h lists every kind):
** segment, file, position, kind, severity, message.  No rows: the partition
** is sound.  Nothing on disk is changed.  Eponymous only (no CREATE
** VIRTUAL TABLE), and like kafka_log it reads files named in SQL, so it is
** DIRECTONLY.
*/
#include <string.h>

#include "check.h"
#include "glue.h"

SQLITE_EXTENSION_INIT3

enum { CK_SEGMENT, CK_FILE, CK_POSITION, CK_KIND, CK_SEVERITY, CK_MESSAGE, CK_DIR };

typedef struct ck_row {
  sqlite3_int64 segment, position;
  char *file, *kind, *message;  /* one sqlite3_malloc block: file\0kind\0message\0 */
  int severity;
} ck_row;

typedef struct ck_cursor {
  sqlite3_vtab_cursor base;
  ck_row *rows;
  sqlite3_int64 n, cap, i;
  char *dir;
} ck_cursor;

static int ck_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  return kl_listing_connect(db,
      "CREATE TABLE x(segment INTEGER, file TEXT, position INTEGER, kind TEXT, severity TEXT,"
      " message TEXT, dir HIDDEN)", sizeof(sqlite3_vtab), out);
}

static int ck_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static int ck_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_dir(info, CK_DIR);
}

static void clear_rows(ck_cursor *c) {
  for (sqlite3_int64 i = 0; i < c->n; i++) sqlite3_free(c->rows[i].file);
  sqlite3_free(c->rows);
  c->rows = NULL;
  c->n = c->cap = c->i = 0;
  sqlite3_free(c->dir);
  c->dir = NULL;
}

static int ck_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  ck_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static int ck_close(sqlite3_vtab_cursor *cur) {
  clear_rows((ck_cursor *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static kl_rc add_row(void *ud, const kl_finding *f) {
  ck_cursor *c = ud;
  if (c->n == c->cap) {
    sqlite3_int64 cap = c->cap ? c->cap * 2 : 16;
    ck_row *p = sqlite3_realloc64(c->rows, (sqlite3_uint64)cap * sizeof *p);
    if (!p) return KL_NOMEM;
    c->rows = p;
    c->cap = cap;
  }
  size_t lf = strlen(f->file) + 1, lk = strlen(f->kind) + 1, lm = strlen(f->message) + 1;
  char *s = sqlite3_malloc64(lf + lk + lm);
  if (!s) return KL_NOMEM;
  ck_row *r = &c->rows[c->n++];
  r->file = memcpy(s, f->file, lf);
  r->kind = memcpy(s + lf, f->kind, lk);
  r->message = memcpy(s + lf + lk, f->message, lm);
  r->segment = f->segment;
  r->position = f->position;
  r->severity = f->severity;
  return KL_OK;
}

static int ck_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  ck_cursor *c = (ck_cursor *)cur;
  clear_rows(c);
  const char *dir = idx == 1 && argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
  if (!dir) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg =
        sqlite3_mprintf("kafka_log_check: a partition directory is required: kafka_log_check('<dir>')");
    return SQLITE_ERROR;
  }
  c->dir = sqlite3_mprintf("%s", dir);
  if (!c->dir) return SQLITE_NOMEM;
  kl_err err = {0};
  kl_rc rc = kl_check_dir(NULL, dir, add_row, c, &err);
  if (rc != KL_OK) {
    clear_rows(c);
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_log_check: %s", err.msg[0] ? err.msg : kl_rc_name(rc));
    return kl_sqlite_rc(rc);
  }
  return SQLITE_OK;
}

static int ck_next(sqlite3_vtab_cursor *cur) {
  ((ck_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int ck_eof(sqlite3_vtab_cursor *cur) {
  ck_cursor *c = (ck_cursor *)cur;
  return c->i >= c->n;
}

static int ck_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ck_cursor *c = (ck_cursor *)cur;
  const ck_row *r = &c->rows[c->i];
  switch (col) {
    case CK_SEGMENT:
      if (r->segment < 0) sqlite3_result_null(ctx);
      else sqlite3_result_int64(ctx, r->segment);
      break;
    case CK_FILE: sqlite3_result_text(ctx, r->file, -1, SQLITE_TRANSIENT); break;
    case CK_POSITION:
      if (r->position < 0) sqlite3_result_null(ctx);
      else sqlite3_result_int64(ctx, r->position);
      break;
    case CK_KIND: sqlite3_result_text(ctx, r->kind, -1, SQLITE_TRANSIENT); break;
    case CK_SEVERITY: sqlite3_result_text(ctx, kl_severity_name(r->severity), -1, SQLITE_STATIC); break;
    case CK_MESSAGE: sqlite3_result_text(ctx, r->message, -1, SQLITE_TRANSIENT); break;
    case CK_DIR: sqlite3_result_text(ctx, c->dir, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int ck_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((ck_cursor *)cur)->i + 1;
  return SQLITE_OK;
}

static const sqlite3_module ck_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous only */
    .xConnect = ck_connect,
    .xBestIndex = ck_best_index,
    .xDisconnect = ck_disconnect,
    .xDestroy = ck_disconnect,
    .xOpen = ck_open,
    .xClose = ck_close,
    .xFilter = ck_filter,
    .xNext = ck_next,
    .xEof = ck_eof,
    .xColumn = ck_column,
    .xRowid = ck_rowid,
};

int kl_check_vtab_register(sqlite3 *db) {
  return sqlite3_create_module(db, "kafka_log_check", &ck_module, NULL);
}
