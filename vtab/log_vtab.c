/*
** log_vtab.c - the kafka_log virtual table.
**
**   SELECT ... FROM kafka_log('<partition dir>') WHERE ...;       -- table-valued
**   SELECT ... FROM kafka_log('<partition dir>', 'skip');      -- salvage
**   CREATE VIRTUAL TABLE t USING kafka_log('<partition dir>');   -- named
**   CREATE VIRTUAL TABLE t USING kafka_log('<dir>', on_corrupt='skip');
**   CREATE VIRTUAL TABLE t USING kafka_log('<dir>', mode='write');  -- or 'create'
**   INSERT INTO t(key, value, timestamp, headers) VALUES (...);  -- append.h
**   DELETE FROM t WHERE offset < N;                               -- retention
**
** One row per data record (control batches are not rows).  The plan's
** terms are documented once, in plan.h; xBestIndex (plan.c) and xFilter
** (log_read.c) both follow that table.  The module's files: log_vtab.h.
**
** A named table's directory (made absolute) and options (options.h) are
** fixed when it is created and kept in its shadow table <name>_config, so that a saved
** database opens from any working directory and `WHERE dir = ...` cannot
** point it elsewhere: on a named table, dir and on_corrupt are ordinary
** columns that SQLite compares.
**
** Logs are cached per table: a query on the same directory reuses the open
** log (its open segments and what is known about them) as long as the
** directory's mtime (segments added or removed) and the size of the last
** segment (appends) are unchanged, and no read has failed since.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log_vtab.h"

#include "ahead.h"
#include "append.h"
#include "bcache.h"
#include "cursor.h"
#include "os.h"
#include "glue.h"
#include "broker.h"
#include "log.h"
#include "logcache.h"
#include "options.h"
#include "plan.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

static const char kl_schema[] =
    "CREATE TABLE x(offset INTEGER NOT NULL, timestamp INTEGER NOT NULL,"
    " timestamp_type TEXT NOT NULL, key BLOB, value BLOB, headers TEXT NOT NULL,"
    " partition_leader_epoch INTEGER NOT NULL, producer_id INTEGER NOT NULL,"
    " producer_epoch INTEGER NOT NULL, sequence INTEGER NOT NULL,"
    " is_transactional INTEGER NOT NULL, compression TEXT NOT NULL, segment INTEGER NOT NULL,"
    " position INTEGER NOT NULL, topic TEXT, partition INTEGER,"
    " dir HIDDEN, on_corrupt HIDDEN, max_skew_ms HIDDEN, isolation HIDDEN, key_type HIDDEN,"
    " value_type HIDDEN, schemas HIDDEN, threads HIDDEN,"
    " sort_bytes HIDDEN, cache_bytes HIDDEN, mmap HIDDEN)";

/* ---- shared logs ---- */

/* A read of dir failed or found a file changed: the next query opens it
** afresh instead of reusing what was learnt. */
void lv_forget_log(kl_vtab *vt, const char *dir) { kl_logcache_forget(vt->logs, dir); }

int lv_set_error(sqlite3_vtab *vt, int rc, const char *fmt, const char *msg) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf(fmt, msg);
  return rc;
}

/* A counted reference to the log of dir (logcache.h); with view, as the
** writing connection sees it inside its transaction (not cached). */
kl_rc lv_acquire_log(kl_vtab *vt, const char *dir, int alone, const kl_view *view,
                         kl_logref **out, kl_err *err) {
  return view ? kl_logcache_get_view(vt->logs, dir, view, out, err)
              : kl_logcache_get(vt->logs, dir, alone, out, err);
}

/* The one partition f names (topic = ? AND partition = ?, neither an IN
** list), as a listing may keep it alone: 1 with *n.  A value that selects
** nothing (not text, not an integer partition) names none: the whole
** listing then gives the empty answer as it does today. */
static int named_part(const kl_part_filter *f, kl_part_name *n) {
  if (!f->topic || f->topic_in || !f->part || f->part_in) return 0;
  if (sqlite3_value_type(f->topic) != SQLITE_TEXT) return 0;
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  kl_fold_bound(KL_CMP_EQ, f->part, &lo, &hi);
  if (lo != hi || lo < 0 || lo > INT32_MAX) return 0;
  n->topic = (const char *)sqlite3_value_text(f->topic);
  n->tn = (size_t)sqlite3_value_bytes(f->topic);
  n->partition = (int32_t)lo;
  return n->topic != NULL;
}

kl_rc lv_get_listing(kl_vtab *vt, const char *path, const kl_part_filter *f, kl_listref **out,
                     kl_err *err) {
  kl_part_name n;
  int named = vt->named_listings < KL_NAMED_LISTINGS && named_part(f, &n);
  kl_listref *was = vt->bk;
  /* The listing is checked once a statement, and the logs' changes read. */
  kl_logcache_poll(vt->logs);
  kl_rc rc = kl_listref_get(kl_sqlite_env(), &vt->bk, path, (int)vt->opt[KL_OPT_CHECKPOINTS],
                            named ? &n : NULL,
                            &vt->conn->stats, out, err);
  if (rc == KL_OK && *out != was && !kl_listref_whole(*out)) vt->named_listings++;
  return rc;
}

int lv_listing_serves(const kl_listref *k, const kl_part_filter *f) {
  kl_part_name n;
  return kl_listref_whole(k) || (named_part(f, &n) && kl_listref_serves(k, &n));
}

int64_t lv_place(kl_vtab *vt, kl_listref *k, size_t i) {
  if (kl_broker_single(k->b)) return 0; /* the rowid is the offset */
  uint32_t *slot = kl_listref_place(k, i);
  if (!slot) return -1;
  if (!*slot) {
    int64_t p = kl_places_get(vt->places, kl_broker_part(k->b, i)->dir);
    if (p < 0) return -1;
    *slot = (uint32_t)p + 1;
  }
  return (int64_t)*slot - 1;
}

/* ---- create / connect / disconnect ---- */

/* dir made absolute against the working directory (sqlite3_malloc'd). */

static void vtab_free(kl_vtab *vt) {
  if (!vt) return;
  kl_append_free(vt->app);
  kl_cursor_free(vt->spare); /* before the read-ahead it was lent */
  kl_ahead_free(vt->ra); /* no cursor is open: nothing is queued */
  kl_decode_opts_free(&vt->dec);
  kl_terms_memo_free(&vt->plans);
  /* A message SQLite did not take (xRollback's, whose result it ignores). */
  sqlite3_free(vt->base.zErrMsg);
  kl_logcache_free(vt->logs);
  kl_bcache_free(vt->set.bcache);
  kl_listref_release(vt->bk);
  kl_places_free(vt->places);
  sqlite3_free(vt->schema);
  sqlite3_free(vt->name);
  sqlite3_free(vt->dir);
  sqlite3_free(vt);
}

/* A named table's schema, name and absolute directory from argv. */
static int name_table(kl_vtab *vt, const char *const *argv, char **errmsg) {
  vt->schema = sqlite3_mprintf("%s", argv[1]);
  vt->name = sqlite3_mprintf("%s", argv[2]);
  char *d = lv_dequote(argv[3]);
  vt->dir = d ? lv_absolute(d) : NULL;
  sqlite3_free(d);
  if (vt->schema && vt->name && vt->dir) return SQLITE_OK;
  if (d && vt->schema && vt->name) {
    *errmsg = sqlite3_mprintf("kafka_log: cannot make %s absolute: %s", argv[3], strerror(errno));
  }
  return d ? SQLITE_ERROR : SQLITE_NOMEM;
}

/*
** xCreate and xConnect (one function: SQLite makes a module eponymous, the
** table-valued form, only when they are the same).  argv: module, schema,
** table, then the directory and the options of a named table (none for the
** table-valued form).  A named table's shadow table holds what it was
** created with; when there is none, this is CREATE VIRTUAL TABLE (which
** runs in a write transaction) and it is made.
*/
static int kl_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **errmsg) {
  int rc = sqlite3_declare_vtab(db, kl_schema);
  if (rc) return rc;
  if (argc < 4 && sqlite3_stricmp(argv[2], argv[0]) != 0) {
    *errmsg = sqlite3_mprintf("kafka_log: a named table needs its partition directory: "
                              "CREATE VIRTUAL TABLE %s USING kafka_log('<dir>')", argv[2]);
    return SQLITE_ERROR;
  }
  if (argc >= 4 && lv_looks_like_option(argv[3])) {
    *errmsg = sqlite3_mprintf("kafka_log: the path is the first argument, not %s: CREATE VIRTUAL "
                              "TABLE %s USING kafka_log('<dir>', <option>=<value>, ...)", argv[3],
                              argv[2]);
    return SQLITE_ERROR;
  }
  kl_vtab *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, sizeof *vt);
  vt->db = db;
  vt->conn = aux;
  lv_default_options(vt);
  vt->cpus = kl_os_cpus(); /* the CPUs it may run on: threads stay below them */
  kl_segset_init(&vt->set, 0); /* a share of RLIMIT_NOFILE (segment.h) */
  vt->logs = kl_logcache_new(kl_sqlite_env(), &vt->set);
  vt->set.bcache = kl_bcache_new(kl_sqlite_env(), KL_BCACHE_BYTES);
  vt->places = kl_places_new();
  if (!vt->logs || !vt->places || !vt->set.bcache) {
    vtab_free(vt);
    return SQLITE_NOMEM;
  }
  kl_logcache_count(vt->logs, &vt->conn->stats);
  if (argc >= 4 && (rc = name_table(vt, argv, errmsg)) != SQLITE_OK) {
    vtab_free(vt);
    return rc;
  }
  unsigned given = 0;
  for (int i = 4; i < argc; i++) {
    if ((rc = lv_parse_option(vt, argv[i], &given, errmsg)) != SQLITE_OK) {
      vtab_free(vt);
      return rc;
    }
  }
  vt->wopt.given = given;
  int types[2] = {(int)vt->opt[KL_OPT_KEY_TYPE], (int)vt->opt[KL_OPT_VALUE_TYPE]};
  if ((rc = kl_decode_opts_ready(&vt->dec, types, errmsg)) != SQLITE_OK) {
    vtab_free(vt);
    return rc;
  }
  if (argc >= 4) {
    int found;
    rc = lv_read_config(vt, &found, errmsg);
    if (rc == SQLITE_OK && !found && sqlite3_txn_state(db, argv[1]) == SQLITE_TXN_WRITE) {
      rc = lv_write_config(vt, errmsg);
    }
    if (rc) {
      vtab_free(vt);
      return rc;
    }
  }
  /* Reading files named in SQL must not be reachable from a view or a
  ** trigger of an untrusted schema. */
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *out = &vt->base;
  return SQLITE_OK;
}

static int kl_disconnect(sqlite3_vtab *base) {
  vtab_free((kl_vtab *)base);
  return SQLITE_OK;
}

static int kl_destroy(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  int rc = SQLITE_OK;
  if (vt->name) {
    char *sql = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\".\"%w_config\"", vt->schema, vt->name);
    rc = sql ? sqlite3_exec(vt->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
  }
  if (rc == SQLITE_OK) vtab_free(vt);
  return rc;
}

static int kl_rename(sqlite3_vtab *base, const char *to) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->name) return SQLITE_OK;
  char *sql = sqlite3_mprintf("ALTER TABLE \"%w\".\"%w_config\" RENAME TO \"%w_config\"",
                              vt->schema, vt->name, to);
  int rc = sql ? sqlite3_exec(vt->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc == SQLITE_OK) {
    char *n = sqlite3_mprintf("%s", to);
    if (!n) return SQLITE_NOMEM;
    sqlite3_free(vt->name);
    vt->name = n;
  }
  return rc;
}

static int kl_shadow_name(const char *suffix) { return strcmp(suffix, "config") == 0; }

/* ---- planning ---- */

/* Is the key raw bytes (key_type 'blob' or 'text') in the plan SQLite
** considers: the table's key_type, unless the first usable key_type =
** constraint (the one the plan takes) says otherwise, which must then be
** known now.  Decoded keys ('confluent', 'avro') are SQLite's to compare. */
static int key_is_raw(const kl_vtab *vt, sqlite3_index_info *info) {
  int64_t t = vt->opt[KL_OPT_KEY_TYPE];
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (!c->usable || c->iColumn != KL_COL_KEY_TYPE || c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    sqlite3_value *v = NULL;
    char *m = NULL;
    if (sqlite3_vtab_rhs_value(info, i, &v) != SQLITE_OK || !v ||
        kl_option_value(kl_option_of(KL_OPT_KEY_TYPE), v, &t, &m) != SQLITE_OK) {
      sqlite3_free(m);
      return 0;
    }
    break;
  }
  return t == KL_TYPE_BLOB || t == KL_TYPE_TEXT;
}

/* The value of a usable column = constraint known while planning (a
** literal), or NULL. */
static sqlite3_value *plan_value(sqlite3_index_info *info, int col) {
  for (int i = 0; i < info->nConstraint; i++) {
    sqlite3_value *v = NULL;
    if (info->aConstraint[i].usable && info->aConstraint[i].iColumn == col &&
        info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ &&
        sqlite3_vtab_rhs_value(info, i, &v) == SQLITE_OK && v) {
      return v;
    }
  }
  return NULL;
}

static int kl_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  kl_vtab *vt = (kl_vtab *)base;
  kl_plan_info pi = {0};
  pi.need_dir = vt->dir == NULL;
  pi.raw_key = key_is_raw(vt, info);
  const char *dir = vt->dir;
  sqlite3_value *dv = dir ? NULL : plan_value(info, KL_COL_DIR);
  if (dv) dir = (const char *)sqlite3_value_text(dv);
  /* A literal topic and partition: the plan reads that partition alone,
  ** and the listing it estimates from need hold nothing else. */
  kl_part_filter f;
  kl_part_filter_init(&f);
  f.topic = plan_value(info, KL_COL_TOPIC);
  f.part = f.topic ? plan_value(info, KL_COL_PARTITION) : NULL;
  if (!f.part) f.topic = NULL;
  if (dir) {
    /* Estimates from what the directory listing tells, without reading a
    ** segment: planning a point lookup must not cost one. */
    kl_listref *k;
    kl_logref *r;
    kl_err err; /* a bad path is reported by xFilter */
    kl_err_clear(&err);
    if (lv_get_listing(vt, dir, &f, &k, &err) == KL_OK) {
      pi.partitions = (double)kl_broker_count(k->b);
      pi.max_merge = (double)lv_merge_max(vt);
      pi.single = kl_broker_single(k->b);
      if (pi.single && lv_acquire_log(vt, kl_broker_part(k->b, 0)->dir, 1, NULL, &r, &err) == KL_OK) {
        kl_segment *first = kl_log_first(r->log), *last = kl_log_last(r->log);
        double n = (double)kl_log_segment_count(r->log);
        if (last && last->tail.known) {
          pi.records = (double)(last->tail.next_offset - first->base);
        } else if (n > 1) {
          /* The last segment holds about as much as an average one. */
          pi.records = (double)(last->base - first->base) * n / (n - 1);
        }
        pi.segments = n;
        kl_logref_release(r);
      }
      kl_listref_release(k);
    }
  }
  return kl_plan_best(info, &pi);
}

static const sqlite3_module kl_module = {
    .iVersion = 3,
    .xCreate = kl_connect,
    .xConnect = kl_connect,
    .xBestIndex = kl_best_index,
    .xDisconnect = kl_disconnect,
    .xDestroy = kl_destroy,
    .xOpen = lv_open,
    .xClose = lv_close,
    .xFilter = lv_filter,
    .xNext = lv_next,
    .xEof = lv_eof,
    .xColumn = lv_column,
    .xRowid = lv_rowid,
    .xUpdate = lv_update,
    .xBegin = lv_begin,
    .xSync = lv_sync,
    .xCommit = lv_commit,
    .xRollback = lv_rollback,
    .xRename = kl_rename,
    .xSavepoint = lv_savepoint,
    .xRelease = lv_release,
    .xRollbackTo = lv_rollback_to,
    .xShadowName = kl_shadow_name,
};

static void conn_free(void *p) {
  if (p) kl_values_free(((kl_conn *)p)->values);
  sqlite3_free(p);
}

int kl_log_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module_v2(db, "kafka_log", &kl_module, conn, conn_free);
}
