/*
** log_write.c - writing to a named kafka_log table: xUpdate and the
** transaction methods, forwarded to its appender (append.h).
*/
#include "log_vtab.h"

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
  return kl_append_update(vt->app, argc, argv, rowid, &base->zErrMsg);
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
