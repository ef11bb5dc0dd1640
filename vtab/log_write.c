/*
** log_write.c - writing to a named kafka_log table: xUpdate and the
** transaction methods, forwarded to its appender (append.h).
*/
#include "log_vtab.h"
#include "plan.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

int lv_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->name) {
    return lv_set_error(base, SQLITE_READONLY, "kafka_log: %s", "the table-valued form is read-only: "
                     "CREATE VIRTUAL TABLE t USING kafka_log('<dir>', mode='write') to write");
  }
  if (!vt->app && !(vt->app = kl_append_new(vt->db, vt->name, vt->dir, &vt->wopt))) {
    return SQLITE_NOMEM;
  }
  int types[2] = {(int)vt->opt[KL_OPT_KEY_TYPE], (int)vt->opt[KL_OPT_VALUE_TYPE]};
  if (argc == 1 || sqlite3_value_type(argv[0]) != SQLITE_NULL || vt->wopt.mode == KL_MODE_READ ||
      (types[0] < KL_TYPE_CONFLUENT && types[1] < KL_TYPE_CONFLUENT)) {
    return kl_append_update(vt->app, argc, argv, rowid, &base->zErrMsg);
  }
  /* An INSERT into 'confluent' or 'avro' columns: JSON text is encoded. */
  kl_buf enc[2] = {{0}, {0}};
  kl_append_bytes kv[2] = {{NULL, 0}, {NULL, 0}};
  int rc = SQLITE_OK;
  for (int k = 0; k < 2 && rc == SQLITE_OK; k++) {
    int col = k ? KL_COL_VALUE : KL_COL_KEY;
    if (types[k] < KL_TYPE_CONFLUENT || 2 + col >= argc) continue;
    int got = kl_encode_column(vt->conn, &vt->dec, types[k], !k, argv[2 + col], vt->dir, &enc[k],
                               &rc, &base->zErrMsg);
    if (got == 1) {
      kv[k].p = enc[k].len ? (const void *)enc[k].p : "";
      kv[k].n = (int32_t)enc[k].len;
    }
  }
  if (rc == SQLITE_OK) rc = kl_append_update_as(vt->app, argc, argv, kv, rowid, &base->zErrMsg);
  kl_buf_free(kl_sqlite_env(), &enc[0]);
  kl_buf_free(kl_sqlite_env(), &enc[1]);
  return rc;
}

/* SQLite calls xSync and xCommit only on tables that have an xBegin.  The
** lock waits for the first change (append.c): a table that cannot write
** refuses in xUpdate with the reason, and a statement that changes nothing
** takes no lock.  The savepoints are counted from here on. */
int lv_begin(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->name) return SQLITE_OK;
  if (!vt->app && !(vt->app = kl_append_new(vt->db, vt->name, vt->dir, &vt->wopt))) {
    return SQLITE_NOMEM;
  }
  return kl_append_begin(vt->app);
}

int lv_sync(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_sync(vt->app, &base->zErrMsg) : SQLITE_OK;
}

/* After a transaction the files have changed: what the table learnt of
** them is not reused (the directory's mtime would say so too, but not
** within its clock's resolution). */
int lv_commit(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->app) return SQLITE_OK;
  lv_forget_log(vt, vt->dir);
  return kl_append_commit(vt->app);
}

int lv_rollback(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->app) return SQLITE_OK;
  lv_forget_log(vt, vt->dir);
  return kl_append_rollback(vt->app, &base->zErrMsg);
}

int lv_savepoint(sqlite3_vtab *base, int n) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_savepoint(vt->app, n, &base->zErrMsg) : SQLITE_OK;
}

int lv_release(sqlite3_vtab *base, int n) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_release(vt->app, n) : SQLITE_OK;
}

int lv_rollback_to(sqlite3_vtab *base, int n) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_rollback_to(vt->app, n, &base->zErrMsg) : SQLITE_OK;
}
