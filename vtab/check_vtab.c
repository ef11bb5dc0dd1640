/*
** check_vtab.c - the kafka_log_check table-valued function:
**
**   SELECT * FROM kafka_log_check('<partition dir | log dir[,log dir...]>');
**
** One row per finding of kl_check_dir (core/check.h lists every kind):
** segment, file, position, kind, severity, message, and the topic and
** partition of the directory.  No rows: every partition is sound.  The
** path takes kafka_log's forms (core/broker.h); partitions are checked one
** after another in listing order, each when the previous one's findings
** are read, and topic / partition constraints choose them before any is
** checked.  A directory that is neither form is checked alone, which finds
** no_segments.  Nothing on disk is changed.  Eponymous only (no CREATE
** VIRTUAL TABLE), and like kafka_log it reads files named in SQL, so it is
** DIRECTONLY.
*/
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "glue.h"
#include "listing.h"
#include "os.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

enum {
  CK_SEGMENT, CK_FILE, CK_POSITION, CK_KIND, CK_SEVERITY, CK_MESSAGE, CK_TOPIC, CK_PARTITION,
  CK_DIR
};

typedef struct ck_vtab {
  sqlite3_vtab base;
  kl_conn *conn;
} ck_vtab;

typedef struct ck_row {
  sqlite3_int64 segment, position;
  char *file, *kind, *message;  /* one sqlite3_malloc block: file\0kind\0message\0 */
  int severity;
} ck_row;

typedef struct ck_cursor {
  sqlite3_vtab_cursor base;
  kl_listing ls;            /* the partitions of the path */
  kl_part alone;            /* a directory that does not list, checked alone */
  const kl_part *part;      /* the one whose findings are rows, or NULL: eof */
  ck_row *rows;             /* its findings */
  sqlite3_int64 n, cap, i;
  sqlite3_int64 rowno;      /* findings before this one, of all partitions */
} ck_cursor;

static int ck_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = kl_listing_connect(db,
      "CREATE TABLE x(segment INTEGER, file TEXT, position INTEGER, kind TEXT, severity TEXT,"
      " message TEXT, topic TEXT, partition INTEGER, dir HIDDEN)", sizeof(ck_vtab), out);
  if (rc == SQLITE_OK) ((ck_vtab *)*out)->conn = aux;
  return rc;
}

static int ck_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

static const kl_term ck_terms[] = {KL_LISTING_TERMS(CK_DIR, CK_TOPIC, CK_PARTITION)};
#define NTERMS ((int)(sizeof ck_terms / sizeof *ck_terms))

static int ck_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  return kl_best_index_listing(info, ck_terms, NTERMS);
}

static void clear_rows(ck_cursor *c) {
  for (sqlite3_int64 i = 0; i < c->n; i++) sqlite3_free(c->rows[i].file);
  c->n = c->i = 0;
}

static void ck_end(ck_cursor *c) {
  clear_rows(c);
  sqlite3_free(c->rows);
  c->rows = NULL;
  c->cap = 0;
  c->part = NULL;
  kl_listing_end(&c->ls);
}

static int ck_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  ck_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static int ck_close(sqlite3_vtab_cursor *cur) {
  ck_end((ck_cursor *)cur);
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

/* Check partitions until one has findings (its rows), or none is left
** (eof).  Only the partition whose rows are read is held in memory. */
static int check_next(ck_cursor *c) {
  ck_vtab *vt = (ck_vtab *)c->base.pVtab;
  clear_rows(c);
  for (;;) {
    c->part = c->alone.dir ? NULL : kl_listing_next(&c->ls);
    if (!c->part) return SQLITE_OK;
    kl_err err;
    kl_err_clear(&err);
    kl_rc rc = kl_check_dir_stats(kl_sqlite_env(), c->part->dir, &vt->conn->stats, add_row, c, &err);
    if (rc != KL_OK) {
      clear_rows(c);
      c->part = NULL;
      sqlite3_free(vt->base.zErrMsg);
      vt->base.zErrMsg = sqlite3_mprintf("kafka_log_check: %s", err.msg[0] ? err.msg : kl_rc_name(rc));
      return kl_sqlite_rc(rc);
    }
    if (c->n > 0) return SQLITE_OK;
  }
}

static int ck_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  ck_cursor *c = (ck_cursor *)cur;
  ck_end(c);
  c->rowno = 0;
  memset(&c->alone, 0, sizeof c->alone);
  kl_listing_args a;
  int rc0 = kl_listing_args_read(ck_terms, NTERMS, idx_str, argc, argv, cur->pVtab, "kafka_log_check", &a);
  if (rc0) return rc0;
  const char *dir = a.dir;
  const kl_part_filter f = a.f;
  if (!dir) {
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_log_check: a path is required: "
                                          "kafka_log_check('<partition or log directory>')");
    return SQLITE_ERROR;
  }
  int rc = kl_listing_start(&c->ls, cur->pVtab, "kafka_log_check", dir, &f);
  struct stat st;
  if (rc == SQLITE_CANTOPEN && kl_os_stat(kl_sqlite_env(), dir, &st) == 0 && S_ISDIR(st.st_mode)) {
    /* A directory that is neither a partition nor a log directory: what
    ** is wrong with it is a finding (no_segments), as for a partition
    ** that lost its segments.  It has no topic or partition. */
    sqlite3_free(cur->pVtab->zErrMsg);
    cur->pVtab->zErrMsg = NULL;
    if (f.topic || f.part || f.lo > INT64_MIN || f.hi < INT64_MAX) return SQLITE_OK;
    c->alone.topic = NULL;
    c->alone.partition = -1;
    c->alone.dir = c->ls.path;
    c->part = &c->alone;
    kl_err err;
    kl_err_clear(&err);
    ck_vtab *vt = (ck_vtab *)cur->pVtab;
    kl_rc krc = kl_check_dir_stats(kl_sqlite_env(), dir, &vt->conn->stats, add_row, c, &err);
    if (krc != KL_OK) {
      clear_rows(c);
      c->part = NULL;
      cur->pVtab->zErrMsg = sqlite3_mprintf("kafka_log_check: %s", err.msg[0] ? err.msg : kl_rc_name(krc));
      return kl_sqlite_rc(krc);
    }
    if (c->n == 0) c->part = NULL;
    return SQLITE_OK;
  }
  if (rc != SQLITE_OK) return rc;
  return check_next(c);
}

static int ck_next(sqlite3_vtab_cursor *cur) {
  ck_cursor *c = (ck_cursor *)cur;
  c->rowno++;
  if (++c->i < c->n) return SQLITE_OK;
  return check_next(c);
}

static int ck_eof(sqlite3_vtab_cursor *cur) { return ((ck_cursor *)cur)->part == NULL; }

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
    case CK_TOPIC:
      if (c->part->topic) sqlite3_result_text(ctx, c->part->topic, -1, SQLITE_TRANSIENT);
      break;
    case CK_PARTITION:
      if (c->part->partition >= 0) sqlite3_result_int(ctx, c->part->partition);
      break;
    case CK_DIR: sqlite3_result_text(ctx, c->ls.path, -1, SQLITE_TRANSIENT); break;
  }
  return SQLITE_OK;
}

static int ck_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((ck_cursor *)cur)->rowno + 1;
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

int kl_check_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module(db, "kafka_log_check", &ck_module, conn);
}
