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
** One row per data record (control batches are not rows).  The plan bits
** are documented once, in plan.h; xBestIndex (plan.c) and xFilter (here)
** both follow that table.
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
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "append.h"
#include "codec.h"
#include "cursor.h"
#include "glue.h"
#include "broker.h"
#include "headers.h"
#include "log.h"
#include "logcache.h"
#include "options.h"
#include "plan.h"
#include "txn.h"
#include "utf8.h"
#include "values.h"

SQLITE_EXTENSION_INIT3

static const char kl_schema[] =
    "CREATE TABLE x(offset INTEGER NOT NULL, timestamp INTEGER NOT NULL,"
    " timestamp_type TEXT NOT NULL, key BLOB, value BLOB, headers TEXT NOT NULL,"
    " partition_leader_epoch INTEGER NOT NULL, producer_id INTEGER NOT NULL,"
    " producer_epoch INTEGER NOT NULL, sequence INTEGER NOT NULL,"
    " is_transactional INTEGER NOT NULL, compression TEXT NOT NULL, segment INTEGER NOT NULL,"
    " position INTEGER NOT NULL, topic TEXT, partition INTEGER,"
    " dir HIDDEN, on_corrupt HIDDEN, max_skew_ms HIDDEN, isolation HIDDEN, key_type HIDDEN,"
    " value_type HIDDEN)";

/* Rowids of a path with several partitions carry the partition's place in
** the listing above the offset, so that rows stay distinct (SQLite's OR
** optimisation merges rowid sets); one partition's rowid is its offset. */
#define KL_ROWID_SHIFT 44

#define KL_NO_LANE ((size_t)-1) /* kl_vcursor.lane: no lane is read */

typedef struct kl_vtab {
  sqlite3_vtab base;
  sqlite3 *db;
  kl_conn *conn;
  char *schema, *name;      /* named form: where the table and its shadow
                            ** table live (NULL for the table-valued form) */
  char *dir;                /* named form: the directory, absolute */
  int on_corrupt;           /* KL_ON_CORRUPT_*: on_corrupt='error'|'skip' */
  sqlite3_int64 max_skew;   /* max_skew_ms=N, or -1 */
  int read_committed;       /* isolation='read_committed' */
  int text[2];              /* key_type, value_type: KL_TYPE_* (values.h) */
  kl_decode_opts dec;       /* how 'confluent' and 'avro' columns decode */
  int no_checkpoints;       /* checkpoints='ignore' */
  kl_segset set;            /* the open segments of all its logs */
  kl_logcache *logs;        /* the logs kept between queries */
  kl_listref *bk;           /* the listing of the path last read */
  kl_append_opts wopt;      /* named form: how it writes (append.h) */
  kl_append *app;           /* its writer, once it writes */
} kl_vtab;

typedef struct kl_vcursor {
  sqlite3_vtab_cursor base;
  kl_listref *bk;           /* the partitions of the path (one ref), or NULL */
  size_t *sel;              /* the chosen ones (indexes into bk), in order */
  size_t nsel, isel;        /* how many; the next to read */
  const kl_part *part;      /* the one being read */
  int64_t rowid_base;       /* its place in the listing, for rowids */
  kl_logref *ref;           /* its log (one ref), or NULL */
  kl_cursor *cur;
  kl_bounds bnd;            /* the query's bounds */
  kl_bounds pbnd;           /* the same within the partition's readable
                            ** range (log start offset; read_committed: the
                            ** last stable offset and high watermark) */
  int read_committed;       /* records of aborted transactions are not rows */
  int text[2];              /* key, value: KL_TYPE_* (values.h) */
  kl_coldec coldec;         /* decoding of 'confluent' columns */
  sqlite3_int64 *in;        /* sorted distinct IN values, or NULL */
  int n_in, i_in;
  sqlite3_int64 limit;      /* rows still allowed, -1 = no limit */
  sqlite3_int64 skip;       /* rows to skip first (OFFSET) */
  int eof;
  kl_buf json;              /* headers column scratch */
  int on_corrupt;           /* KL_ON_CORRUPT_* of the current scan */
  sqlite3_int64 max_skew;   /* max_skew_ms of the current scan, or -1 */
  /* ORDER BY timestamp (plan bit KL_P_TS_ORDER). */
  int tsd;
  int tsd_desc;             /* largest first */
  int tsd_pairs;            /* rows come from the pairs (KL_P_PAIRS) */
  int have_first;           /* the first row came from the largest-timestamp
                            ** lookup: first_off is not produced again */
  int64_t first_off;
  int merge;                /* an order across several partitions (the
                            ** path was not known when the plan consumed
                            ** it): each partition is read by its own lane,
                            ** and rows come from the lanes' merge
                            ** (by_offset) or from the pairs */
  int by_offset;
  struct lane {
    kl_logref *ref;         /* its log and core cursor (NULL when closed) */
    kl_cursor *cur;
    kl_bounds pbnd;         /* its readable range, as open_partition set it */
    int i_in;               /* its next IN value */
    int64_t head;           /* the offset of its current row */
    uint64_t used;          /* when last read, for closing the oldest */
  } *lanes;                 /* one per chosen partition, NULL without merge */
  size_t lane;              /* the one in part, ref, cur, pbnd, or KL_NO_LANE */
  size_t nlive;             /* lanes open */
  uint64_t tick;
  size_t *heap;             /* by_offset: lanes with a current row, the
                            ** next row's on top */
  size_t nheap;
  int heap_built;
  struct ts_pair {
    int64_t key, ts, off;   /* key: ts, or off when by_offset */
    size_t k;               /* which partition: an index into sel */
  } *pairs;                 /* sorted, once needed */
  size_t n_pairs, i_pairs;
  int pairs_built;
  int on_pair;              /* the current row is pairs[i_pairs - 1] and
                            ** c->cur is not on it */
  int stale;                /* a read failed: the next xFilter opens the
                            ** log afresh */
} kl_vcursor;

/* ---- shared logs ---- */

/* A read of dir failed or found a file changed: the next query opens it
** afresh instead of reusing what was learnt. */
static void forget_log(kl_vtab *vt, const char *dir) { kl_logcache_forget(vt->logs, dir); }

static int set_error(sqlite3_vtab *vt, int rc, const char *fmt, const char *msg) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf(fmt, msg);
  return rc;
}

/* A counted reference to the log of dir (logcache.h); with view, as the
** writing connection sees it inside its transaction (not cached). */
static kl_rc acquire_log(kl_vtab *vt, const char *dir, int alone, const kl_commit *view,
                         kl_logref **out, kl_err *err) {
  return view ? kl_logcache_get_view(vt->logs, dir, view, out, err)
              : kl_logcache_get(vt->logs, dir, alone, out, err);
}

/* ---- create / connect / disconnect ---- */

/* How many segments a table keeps open at most: its share of the process's
** descriptors is half the soft limit (the host keeps the rest).  An open
** segment holds up to three (.log, .index, .timeindex), a cached log two
** (its directory and last .log, to notice changes), a listing its log
** directories and checkpoints.  KL_SEGSET_MAX_OPEN under the usual 1024. */
static int max_open_segments(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
    return KL_SEGSET_MAX_OPEN;
  }
  long long n = ((long long)rl.rlim_cur / 2 - 2 * KL_LOGCACHE_WATCHED - 8) / 3;
  if (n > KL_SEGSET_MAX_OPEN) n = KL_SEGSET_MAX_OPEN;
  return n < 2 ? 2 : (int)n;
}

/* An argument of CREATE VIRTUAL TABLE, unquoted. */
static char *dequote(const char *s) {
  size_t n = strlen(s);
  char q = s[0];
  if (n >= 2 && (q == '\'' || q == '"') && s[n - 1] == q) {
    char *d = sqlite3_malloc64(n);
    if (!d) return NULL;
    size_t j = 0;
    for (size_t i = 1; i < n - 1; i++) {
      d[j++] = s[i];
      if (s[i] == q && s[i + 1] == q) i++;
    }
    d[j] = 0;
    return d;
  }
  return sqlite3_mprintf("%s", s);
}

/* Option id's value in the table (options.h). */
static void set_option(kl_vtab *vt, kl_opt_id id, int64_t v) {
  if (kl_append_opt_set(&vt->wopt, id, v)) return;
  switch (id) {
    case KL_OPT_ON_CORRUPT: vt->on_corrupt = (int)v; break;
    case KL_OPT_MAX_SKEW: vt->max_skew = v; break;
    case KL_OPT_ISOLATION: vt->read_committed = vt->wopt.read_committed = (int)v; break;
    case KL_OPT_KEY_TYPE: vt->text[0] = (int)v; break;
    case KL_OPT_VALUE_TYPE: vt->text[1] = (int)v; break;
    case KL_OPT_MODE: vt->wopt.mode = (int)v; break;
    case KL_OPT_CHECKPOINTS: vt->no_checkpoints = (int)v; break;
    default: break; /* a write option (above) */
  }
}

static int64_t get_option(const kl_vtab *vt, kl_opt_id id) {
  int64_t v;
  if (kl_append_opt_get(&vt->wopt, id, &v)) return v;
  switch (id) {
    case KL_OPT_ON_CORRUPT: return vt->on_corrupt;
    case KL_OPT_MAX_SKEW: return vt->max_skew;
    case KL_OPT_ISOLATION: return vt->read_committed;
    case KL_OPT_KEY_TYPE: return vt->text[0];
    case KL_OPT_VALUE_TYPE: return vt->text[1];
    /* A log made by CREATE is written to from then on. */
    case KL_OPT_MODE: return vt->wopt.mode == KL_MODE_CREATE ? KL_MODE_WRITE : vt->wopt.mode;
    case KL_OPT_CHECKPOINTS: return vt->no_checkpoints;
    default: break;
  }
  return 0;
}

/* Is arg "<name> = ...", an option where the path belongs? */
static int looks_like_option(const char *arg) {
  const char *p = arg;
  while (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
         (p > arg && *p >= '0' && *p <= '9')) {
    p++;
  }
  if (p == arg) return 0;
  while (*p == ' ' || *p == '\t') p++;
  return *p == '=';
}

/*
** A table option after the path, "name=value" (value optionally quoted),
** as options.h reads it; *given holds the options seen so far (one may be
** given once, by any of its names).
*/
static int parse_option(kl_vtab *vt, const char *arg, unsigned *given, char **errmsg) {
  const char *eq = strchr(arg, '=');
  size_t kn = eq ? (size_t)(eq - arg) : strlen(arg);
  while (kn > 0 && (arg[kn - 1] == ' ' || arg[kn - 1] == '\t')) kn--;
  const kl_option *o = eq ? kl_option_find(arg, kn) : NULL;
  if (!o && eq) {
    const char *v = eq + 1;
    while (*v == ' ' || *v == '\t') v++;
    char *d = dequote(v);
    if (!d) return SQLITE_NOMEM;
    int rc;
    int ours = kl_decode_option(&vt->dec, arg, kn, d, &rc, errmsg);
    sqlite3_free(d);
    if (ours) return rc;
  }
  if (!o) {
    if (eq && ((kn == 3 && strncmp(arg, "dir", 3) == 0) ||
               (kn == 4 && strncmp(arg, "path", 4) == 0))) {
      *errmsg = sqlite3_mprintf("kafka_log: %.*s is not an option: the path is the first "
                                "argument, kafka_log('<dir>', ...)", (int)kn, arg);
      return SQLITE_ERROR;
    }
    char *names = kl_option_names();
    *errmsg = sqlite3_mprintf("kafka_log: unknown option %s (the options are %s, %s)", arg,
                              names ? names : "", KL_DECODE_OPTION_NAMES);
    sqlite3_free(names);
    return SQLITE_ERROR;
  }
  kl_opt_id id = kl_option_id(o);
  if (*given & (1u << id)) {
    *errmsg = sqlite3_mprintf("kafka_log: option %s is given twice%s", kl_option_name(o),
                              id == KL_OPT_MODE ? " (mode and readonly are one option)" : "");
    return SQLITE_ERROR;
  }
  *given |= 1u << id;
  const char *v = eq + 1;
  while (*v == ' ' || *v == '\t') v++;
  char *d = dequote(v);
  if (!d) return SQLITE_NOMEM;
  int64_t n = 0;
  int rc = kl_option_text(o, d, &n, errmsg);
  sqlite3_free(d);
  if (rc == SQLITE_OK) set_option(vt, id, n);
  return rc;
}

/* dir made absolute against the working directory (sqlite3_malloc'd). */
/* One directory of n bytes made absolute against the working directory. */
static char *absolute_one(const char *dir, size_t n) {
  if (dir[0] == '/') return sqlite3_mprintf("%.*s", (int)n, dir);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return NULL;
  while (n >= 2 && dir[0] == '.' && dir[1] == '/') dir += 2, n -= 2;
  if (n == 0 || (n == 1 && dir[0] == '.')) return sqlite3_mprintf("%s", cwd);
  return sqlite3_mprintf("%s/%.*s", strcmp(cwd, "/") ? cwd : "", (int)n, dir);
}

/* The path made absolute (sqlite3_malloc'd): each of its directories, as
** core/broker.h splits them. */
static char *absolute(const char *path) {
  char *out = NULL;
  kl_path_iter it;
  const char *s;
  size_t n;
  kl_path_iter_init(&it, path);
  while (kl_path_next(&it, &s, &n)) {
    char *one = absolute_one(s, n);
    char *joined = one ? sqlite3_mprintf("%s%s%s", out ? out : "", out ? "," : "", one) : NULL;
    sqlite3_free(one);
    sqlite3_free(out);
    if (!joined) return NULL;
    out = joined;
  }
  return out ? out : absolute_one(".", 1);
}

static void vtab_free(kl_vtab *vt) {
  if (!vt) return;
  kl_append_free(vt->app);
  kl_decode_opts_free(&vt->dec);
  /* A message SQLite did not take (xRollback's, whose result it ignores). */
  sqlite3_free(vt->base.zErrMsg);
  kl_logcache_free(vt->logs);
  kl_listref_release(vt->bk);
  sqlite3_free(vt->schema);
  sqlite3_free(vt->name);
  sqlite3_free(vt->dir);
  sqlite3_free(vt);
}

/* Read the directory and options of a named table from its shadow table.
** *found = 0 when there is none (a table created before shadow tables). */
static int read_config(kl_vtab *vt, int *found, char **errmsg) {
  *found = 0;
  char *sql = sqlite3_mprintf("SELECT k, v FROM \"%w\".\"%w_config\"", vt->schema, vt->name);
  if (!sql) return SQLITE_NOMEM;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(vt->db, sql, -1, &st, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK) return SQLITE_OK; /* no shadow table */
  int bad = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *k = (const char *)sqlite3_column_text(st, 0);
    const char *v = (const char *)sqlite3_column_text(st, 1);
    if (!k || !v) continue; /* NULL: the default (max_skew_ms: none) */
    if (strcmp(k, "dir") == 0) {
      sqlite3_free(vt->dir);
      vt->dir = sqlite3_mprintf("%s", v);
      if (!vt->dir) rc = SQLITE_NOMEM;
      *found = 1;
      if (rc == SQLITE_NOMEM) break;
      continue;
    }
    /* Values CREATE checked: one that is not valid now was damaged. */
    const kl_option *o = kl_option_find(k, strlen(k));
    int64_t n = 0;
    char *m = NULL;
    if (!o) continue; /* kept by a later version */
    if (kl_option_text(o, v, &n, &m) == SQLITE_OK) {
      set_option(vt, kl_option_id(o), n);
    } else {
      *errmsg = m ? sqlite3_mprintf("kafka_log: %s_config: %s", vt->name, m + 11) : NULL;
      sqlite3_free(m);
      bad = 1;
      break;
    }
  }
  if (bad) {
    sqlite3_finalize(st);
    return *errmsg ? SQLITE_CORRUPT : SQLITE_NOMEM;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    *errmsg = sqlite3_mprintf("kafka_log: cannot read %s_config: %s", vt->name,
                              sqlite3_errmsg(vt->db));
    return rc == SQLITE_NOMEM ? rc : SQLITE_ERROR;
  }
  return SQLITE_OK;
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
  if (argc >= 4 && looks_like_option(argv[3])) {
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
  vt->max_skew = -1;
  kl_append_opts_default(&vt->wopt);
  kl_segset_init(&vt->set, max_open_segments());
  vt->logs = kl_logcache_new(&vt->set);
  if (!vt->logs) {
    sqlite3_free(vt);
    return SQLITE_NOMEM;
  }
  if (argc >= 4) {
    vt->schema = sqlite3_mprintf("%s", argv[1]);
    vt->name = sqlite3_mprintf("%s", argv[2]);
    char *d = dequote(argv[3]);
    vt->dir = d ? absolute(d) : NULL;
    sqlite3_free(d);
    if (!vt->schema || !vt->name || !vt->dir) {
      if (d && vt->schema && vt->name) {
        *errmsg = sqlite3_mprintf("kafka_log: cannot make %s absolute: %s", argv[3],
                                  strerror(errno));
      }
      vtab_free(vt);
      return d ? SQLITE_ERROR : SQLITE_NOMEM;
    }
  }
  unsigned given = 0;
  for (int i = 4; i < argc; i++) {
    if ((rc = parse_option(vt, argv[i], &given, errmsg)) != SQLITE_OK) {
      vtab_free(vt);
      return rc;
    }
  }
  vt->wopt.given = given;
  if ((rc = kl_decode_opts_ready(&vt->dec, vt->text, errmsg)) != SQLITE_OK) {
    vtab_free(vt);
    return rc;
  }
  if (argc >= 4) {
    int found;
    rc = read_config(vt, &found, errmsg);
    if (rc == SQLITE_OK && !found && sqlite3_txn_state(db, argv[1]) == SQLITE_TXN_WRITE) {
      char *rows = sqlite3_mprintf("('dir', %Q)", vt->dir);
      for (int id = 0; rows && id < KL_OPT_COUNT; id++) {
        char *lit = kl_option_literal((kl_opt_id)id, get_option(vt, (kl_opt_id)id));
        char *more = lit ? sqlite3_mprintf("%s, ('%s', %s)", rows,
                                           kl_option_name(kl_option_of((kl_opt_id)id)), lit)
                         : NULL;
        sqlite3_free(lit);
        sqlite3_free(rows);
        rows = more;
      }
      char *sql = rows ? sqlite3_mprintf(
          "CREATE TABLE \"%w\".\"%w_config\"(k TEXT PRIMARY KEY, v) WITHOUT ROWID;"
          "INSERT INTO \"%w\".\"%w_config\" VALUES %s;",
          vt->schema, vt->name, vt->schema, vt->name, rows) : NULL;
      rc = sql ? sqlite3_exec(db, sql, NULL, NULL, errmsg) : SQLITE_NOMEM;
      sqlite3_free(sql);
      sqlite3_free(rows);
      /* What the mode asks of the path; a new log is made now. */
      if (rc == SQLITE_OK) rc = kl_append_prepare(vt->name, vt->dir, &vt->wopt, errmsg);
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

static int kl_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  kl_vtab *vt = (kl_vtab *)base;
  kl_plan_info pi = {0};
  pi.need_dir = vt->dir == NULL;
  const char *dir = vt->dir;
  for (int i = 0; !dir && i < info->nConstraint; i++) {
    sqlite3_value *v = NULL;
    if (info->aConstraint[i].usable && info->aConstraint[i].iColumn == KL_COL_DIR &&
        info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ &&
        sqlite3_vtab_rhs_value(info, i, &v) == SQLITE_OK && v) {
      dir = (const char *)sqlite3_value_text(v);
    }
  }
  if (dir) {
    /* Estimates from what the directory listing tells, without reading a
    ** segment: planning a point lookup must not cost one. */
    kl_listref *k;
    kl_logref *r;
    kl_err err; /* a bad path is reported by xFilter */
    kl_err_clear(&err);
    if (kl_listref_get(&vt->bk, dir, vt->no_checkpoints, &k, &err) == KL_OK) {
      pi.partitions = (double)kl_broker_count(k->b);
      pi.max_merge = (double)vt->set.max_open;
      pi.single = kl_broker_single(k->b);
      if (pi.single && acquire_log(vt, kl_broker_part(k->b, 0)->dir, 1, NULL, &r, &err) == KL_OK) {
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

/* ---- cursors ---- */

static int kl_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  kl_vcursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->eof = 1;
  c->lane = KL_NO_LANE;
  *out = &c->base;
  return SQLITE_OK;
}

/* Close every lane (their logs and core cursors, which part, ref and cur
** may be borrowing). */
static void free_lanes(kl_vcursor *c) {
  if (!c->lanes) return;
  if (c->lane != KL_NO_LANE) c->cur = NULL, c->ref = NULL;
  for (size_t k = 0; k < c->nsel; k++) {
    kl_cursor_free(c->lanes[k].cur);
    kl_logref_release(c->lanes[k].ref);
  }
  sqlite3_free(c->lanes);
  c->lanes = NULL;
  c->lane = KL_NO_LANE;
  c->nlive = 0;
  sqlite3_free(c->heap);
  c->heap = NULL;
  c->nheap = 0;
  c->heap_built = 0;
}

/* Forget the plan's state; the log and the core cursor stay for the next
** xFilter of the same statement (a join probes once per outer row). */
static void reset_scan(kl_vcursor *c) {
  free_lanes(c);
  sqlite3_free(c->in);
  c->in = NULL;
  c->n_in = c->i_in = 0;
  sqlite3_free(c->pairs);
  c->pairs = NULL;
  c->n_pairs = c->i_pairs = 0;
  c->tsd = c->tsd_desc = c->tsd_pairs = c->have_first = c->pairs_built = c->on_pair = 0;
  c->merge = c->by_offset = 0;
}

/* Leave the partition being read (its log and core cursor, unless a lane
** owns them). */
static void end_partition(kl_vcursor *c) {
  if (c->lane != KL_NO_LANE) {
    c->cur = NULL;
    c->ref = NULL;
    c->lane = KL_NO_LANE;
    return;
  }
  kl_cursor_free(c->cur);
  c->cur = NULL;
  kl_logref_release(c->ref);
  c->ref = NULL;
}

static void end_scan(kl_vcursor *c) {
  reset_scan(c);
  end_partition(c);
  sqlite3_free(c->sel);
  c->sel = NULL;
  c->nsel = c->isel = 0;
  c->part = NULL;
  kl_listref_release(c->bk);
  c->bk = NULL;
}

static int kl_close(sqlite3_vtab_cursor *cur) {
  kl_vcursor *c = (kl_vcursor *)cur;
  end_scan(c);
  kl_buf_free(NULL, &c->json);
  kl_coldec_free(&c->coldec);
  sqlite3_free(c);
  return SQLITE_OK;
}


static int cmp_i64(const void *a, const void *b) {
  sqlite3_int64 x = *(const sqlite3_int64 *)a, y = *(const sqlite3_int64 *)b;
  return x < y ? -1 : x > y;
}

static int report(kl_vcursor *c, kl_rc rc, const kl_err *err) {
  /* What was learnt about the files may be what went wrong (they changed
  ** under the query): the next query opens the directory afresh. */
  if ((rc == KL_IO || rc == KL_NOMEM || rc == KL_CORRUPT || rc == KL_CANTOPEN) && c->ref) {
    forget_log((kl_vtab *)c->base.pVtab, c->ref->dir);
    c->stale = 1;
  }
  return set_error(c->base.pVtab, kl_sqlite_rc(rc), "kafka_log: %s",
                   err->msg[0] ? err->msg : kl_rc_name(rc));
}

/* Start the core cursor on the next IN value (or the only range). */
static kl_rc start_range(kl_vcursor *c, kl_err *err) {
  kl_bounds b = c->pbnd;
  if (c->in) {
    int k = c->bnd.desc ? c->n_in - 1 - c->i_in : c->i_in;
    sqlite3_int64 v = c->in[k];
    if (v > b.off_lo) b.off_lo = v;
    if (v < b.off_hi) b.off_hi = v;
    if (v != b.off_lo || v != b.off_hi) b.off_lo = 1, b.off_hi = 0;
    c->i_in++;
  }
  return kl_cursor_start(c->cur, &b, err);
}

/* ---- ORDER BY timestamp DESC ---- */

/* Position the core cursor on the record at offset off (a point lookup):
** KL_DONE when there is none. */
static kl_rc point(kl_vcursor *c, int64_t off, kl_err *err) {
  kl_bounds b = kl_bounds_all();
  b.off_lo = b.off_hi = off;
  kl_rc rc = kl_cursor_start(c->cur, &b, err);
  if (rc == KL_OK) rc = kl_cursor_next(c->cur, err);
  if (rc == KL_OK) rc = kl_cursor_load(c->cur, err);
  return rc;
}

/* The same for a record known to be there. */
static kl_rc seek_offset(kl_vcursor *c, int64_t off, kl_err *err) {
  kl_rc rc = point(c, off, err);
  if (rc == KL_DONE) {
    rc = kl_err_set(err, KL_CORRUPT, "%s: the record at offset %lld is no longer there (the "
                    "partition changed during the query)", c->ref->dir, (long long)off);
  }
  return rc;
}

/* The first row: the first record carrying the log's largest timestamp,
** found as Kafka's ListOffsets MAX_TIMESTAMP finds it (each segment's
** largest timestamp, then its time index), or for ascending order the
** first carrying the smallest, when the batch facts know it.  *found = 0
** when that record is not a row (a control record) or the search does not
** apply: the rows then all come from the pairs. */
static kl_rc tsd_first(kl_vcursor *c, int *found, kl_err *err) {
  *found = 0;
  const kl_bounds *b0 = &c->pbnd;
  if (c->merge || c->on_corrupt != KL_ON_CORRUPT_ERROR || c->read_committed ||
      b0->off_lo != INT64_MIN || b0->off_hi != INT64_MAX || b0->ts_lo != INT64_MIN ||
      b0->ts_hi != INT64_MAX) {
    return KL_OK;
  }
  kl_time_lookup tl;
  kl_rc rc;
  if (!c->tsd_desc) {
    int known, any;
    kl_log_smallest_time(c->ref->log, &known, &any, &tl.offset, &tl.timestamp);
    if (!known || !any) return KL_OK;
  } else {
    kl_reader rd;
    kl_reader_init(&rd, NULL, &((kl_vtab *)c->base.pVtab)->conn->stats, KL_ON_CORRUPT_ERROR);
    rc = kl_log_lookup_time(c->ref->log, &rd, KL_TS_MAX, &tl, err);
    kl_reader_free(&rd);
    if (rc || tl.status != KL_LOOKUP_OK) return rc;
  }
  rc = point(c, tl.offset, err);
  if (rc == KL_DONE) return KL_OK;
  if (rc) return rc;
  *found = kl_cursor_record(c->cur)->timestamp == tl.timestamp;
  c->have_first = *found;
  c->first_off = tl.offset;
  return KL_OK;
}

/* Ties: the partition listed first, then the lowest offset (as
** MAX_TIMESTAMP finds the first). */
static int cmp_pair_tie(const struct ts_pair *x, const struct ts_pair *y) {
  if (x->k != y->k) return x->k < y->k ? -1 : 1;
  return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_pair_desc(const void *a, const void *b) {
  const struct ts_pair *x = a, *y = b;
  if (x->key != y->key) return x->key > y->key ? -1 : 1;
  return cmp_pair_tie(x, y);
}

static int cmp_pair_asc(const void *a, const void *b) {
  const struct ts_pair *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return cmp_pair_tie(x, y);
}

static kl_rc open_partition(kl_vcursor *c, size_t k, kl_err *err);
static kl_rc use_lane(kl_vcursor *c, size_t k, kl_err *err);
static kl_rc merge_next(kl_vcursor *c, kl_err *err);

/* Every matching record's (timestamp, offset) of the partition being read,
** or with merge of every chosen partition, in the consumed order. */
static kl_rc build_pairs(kl_vcursor *c, kl_err *err) {
  size_t cap = 0;
  c->pairs_built = 1;
  size_t k0 = c->merge ? 0 : c->isel - 1, k1 = c->merge ? c->nsel : c->isel;
  kl_rc rc = KL_DONE;
  for (size_t k = k0; k < k1 && rc == KL_DONE; k++) {
    rc = c->merge ? use_lane(c, k, err) : KL_OK;
    if (rc == KL_OK && c->pbnd.off_lo > c->pbnd.off_hi) {
      rc = KL_DONE;
      continue;
    }
    /* Each offset of an IN list is its own range (start_range). */
    c->i_in = 0;
    do {
      if (rc == KL_OK) rc = start_range(c, err);
      while (rc == KL_OK && (rc = kl_cursor_next(c->cur, err)) == KL_OK) {
        int64_t off, ts;
        if (c->read_committed && kl_txns_aborted(&c->ref->txns, kl_cursor_batch(c->cur))) continue;
        if (!kl_cursor_peek(c->cur, &off, &ts)) {
          if ((rc = kl_cursor_load(c->cur, err)) != KL_OK) break;
          off = kl_cursor_record(c->cur)->offset;
          ts = kl_cursor_record(c->cur)->timestamp;
        }
        if (c->n_pairs == cap) {
          cap = cap ? cap * 2 : 1024;
          struct ts_pair *p = sqlite3_realloc64(c->pairs, (sqlite3_uint64)cap * sizeof *p);
          if (!p) return kl_err_set(err, KL_NOMEM, "out of memory sorting rows");
          c->pairs = p;
        }
        struct ts_pair *p = &c->pairs[c->n_pairs++];
        p->key = c->by_offset ? off : ts;
        p->ts = ts;
        p->off = off;
        p->k = k;
      }
      if (rc == KL_DONE && c->in && c->i_in < c->n_in) rc = KL_OK;
    } while (rc == KL_OK);
  }
  if (rc != KL_DONE) return rc;
  if (c->merge) c->isel = c->nsel; /* every partition was read */
  if (c->n_pairs > 1) {
    qsort(c->pairs, c->n_pairs, sizeof *c->pairs, c->tsd_desc ? cmp_pair_desc : cmp_pair_asc);
  }
  return KL_OK;
}

static kl_rc tsd_next(kl_vcursor *c, kl_err *err) {
  kl_rc rc;
  c->on_pair = 0;
  if (!c->pairs_built && !c->have_first) {
    int found;
    if ((rc = tsd_first(c, &found, err)) != KL_OK) return rc;
    if (found) return KL_OK;
  }
  if (!c->pairs_built && (rc = build_pairs(c, err)) != KL_OK) return rc;
  while (c->i_pairs < c->n_pairs) {
    const struct ts_pair *p = &c->pairs[c->i_pairs++];
    if (c->have_first && p->off == c->first_off) continue;
    if (c->merge && (rc = use_lane(c, p->k, err)) != KL_OK) return rc;
    if (c->tsd_pairs) {
      c->on_pair = 1;
      return KL_OK;
    }
    return seek_offset(c, p->off, err);
  }
  return KL_DONE;
}

/* The next row of the plan, before LIMIT and OFFSET. */
static kl_rc advance(kl_vcursor *c, kl_err *err) {
  if (c->heap) return merge_next(c, err);
  if (c->tsd) return tsd_next(c, err);
  kl_rc rc;
  while ((rc = kl_cursor_next(c->cur, err)) == KL_OK && c->read_committed &&
         kl_txns_aborted(&c->ref->txns, kl_cursor_batch(c->cur))) {
    /* A record of an aborted transaction: a read_committed consumer
    ** never sees it. */
  }
  return rc;
}

/* What a read_committed consumer of the partition may read: below the last
** stable offset and the high watermark, from the markers (txn.h). */
static kl_rc committed_bounds(kl_vcursor *c, kl_err *err) {
  kl_logref *r = c->ref;
  if (!r->txns_loaded) {
    kl_reader rd;
    kl_reader_init(&rd, NULL, &((kl_vtab *)c->base.pVtab)->conn->stats, c->on_corrupt);
    kl_rc rc = kl_txns_load(r->log, &rd, &r->txns, err);
    kl_reader_free(&rd);
    if (rc) return rc;
    r->txns_loaded = 1;
  }
  int64_t cap = r->txns.lso;
  if (c->part->high_watermark >= 0 && c->part->high_watermark < cap) cap = c->part->high_watermark;
  if (cap - 1 < c->pbnd.off_hi) c->pbnd.off_hi = cap - 1;
  return KL_OK;
}

/* Make the chosen partition sel[k] the one read: its log and core cursor
** (kept when it is the same as before: a join probes the same partition
** once per outer row), and its readable range in c->pbnd (empty when
** nothing of it can match). */
static kl_rc open_partition(kl_vcursor *c, size_t k, kl_err *err) {
  kl_vtab *vt = (kl_vtab *)c->base.pVtab;
  size_t i = c->sel[k];
  const kl_part *p = kl_broker_part(c->bk->b, i);
  c->part = p;
  c->rowid_base = kl_broker_single(c->bk->b) ? 0 : (int64_t)i << KL_ROWID_SHIFT;
  /* The writing connection reads its own open transaction (append.h). */
  kl_commit view;
  int has_view = 0;
  kl_rc rc = vt->app ? kl_append_view(vt->app, &view, &has_view, err) : KL_OK;
  if (rc) return rc;
  if (!c->cur || c->stale || has_view || strcmp(c->ref->dir, p->dir) != 0) {
    end_partition(c);
    c->stale = 0;
    rc = acquire_log(vt, p->dir, kl_broker_single(c->bk->b), has_view ? &view : NULL, &c->ref,
                     err);
    if (rc) return rc;
    if (kl_cursor_new(c->ref->log, &vt->conn->stats, c->on_corrupt, &c->cur) != KL_OK) {
      return kl_err_set(err, KL_NOMEM, "out of memory opening %s", p->dir);
    }
  }
  c->pbnd = c->bnd;
  /* Records below the log start offset are deleted for every consumer. */
  if (p->log_start >= 0 && p->log_start > c->pbnd.off_lo) c->pbnd.off_lo = p->log_start;
  /* And below what this table's own open transaction deleted. */
  int64_t del = vt->app ? kl_append_deleted_below(vt->app) : -1;
  if (del >= 0 && del > c->pbnd.off_lo) c->pbnd.off_lo = del;
  /* And below the one a writer keeps (retention, core/commit.h). */
  int64_t ls = kl_log_start_offset(c->ref->log);
  const kl_segment *first = kl_log_first(c->ref->log);
  if (first && ls > first->base && ls > c->pbnd.off_lo) c->pbnd.off_lo = ls;
  return c->read_committed ? committed_bounds(c, err) : KL_OK;
}

/* ---- an order across partitions ---- */

/* Make lane k (chosen partition sel[k]) the one read: part, ref, cur and
** pbnd are its own, opened on first use.  Lanes keep their core cursors,
** and with them the batch each decoded last, while the rows move from
** partition to partition.  At most the table's bound on open segments are
** open at once (each pins one): beyond it the least recently read is
** closed, and a row read from it again is looked up by offset. */
static kl_rc use_lane(kl_vcursor *c, size_t k, kl_err *err) {
  if (c->lane == k) return KL_OK;
  if (c->lane != KL_NO_LANE) {
    struct lane *o = &c->lanes[c->lane];
    o->pbnd = c->pbnd;
    o->i_in = c->i_in;
  }
  c->cur = NULL;
  c->ref = NULL;
  c->lane = KL_NO_LANE;
  struct lane *l = &c->lanes[k];
  l->used = ++c->tick;
  if (l->cur) {
    size_t i = c->sel[k];
    c->part = kl_broker_part(c->bk->b, i);
    c->rowid_base = kl_broker_single(c->bk->b) ? 0 : (int64_t)i << KL_ROWID_SHIFT;
    c->ref = l->ref;
    c->cur = l->cur;
    c->pbnd = l->pbnd;
    c->i_in = l->i_in;
    c->lane = k;
    return KL_OK;
  }
  size_t max = (size_t)((kl_vtab *)c->base.pVtab)->set.max_open;
  while (c->nlive >= (max < 2 ? 2 : max)) {
    struct lane *old = NULL;
    for (size_t j = 0; j < c->nsel; j++) {
      if (c->lanes[j].cur && (!old || c->lanes[j].used < old->used)) old = &c->lanes[j];
    }
    kl_cursor_free(old->cur);
    kl_logref_release(old->ref);
    old->cur = NULL;
    old->ref = NULL;
    c->nlive--;
  }
  kl_rc rc = open_partition(c, k, err);
  /* What it opened is the lane's, even on failure (free_lanes frees it). */
  l->ref = c->ref;
  l->cur = c->cur;
  l->pbnd = c->pbnd;
  l->i_in = c->i_in = 0;
  if (l->ref || l->cur) c->nlive++;
  c->lane = k;
  if (rc == KL_OK && !l->cur) rc = kl_err_set(err, KL_NOMEM, "out of memory opening a partition");
  return rc;
}

/* Move the current lane to its next row (what advance does for one
** partition), its offset in head: KL_DONE when it has none left. */
static kl_rc lane_step(kl_vcursor *c, kl_err *err) {
  kl_rc rc;
  for (;;) {
    rc = kl_cursor_next(c->cur, err);
    if (rc == KL_OK && c->read_committed &&
        kl_txns_aborted(&c->ref->txns, kl_cursor_batch(c->cur))) {
      continue;
    }
    if (rc == KL_DONE && c->in && c->i_in < c->n_in) {
      if ((rc = start_range(c, err)) != KL_OK) return rc;
      continue;
    }
    break;
  }
  if (rc != KL_OK) return rc;
  int64_t off, ts;
  if (!kl_cursor_peek(c->cur, &off, &ts)) {
    if ((rc = kl_cursor_load(c->cur, err)) != KL_OK) return rc;
    off = kl_cursor_record(c->cur)->offset;
  }
  c->lanes[c->lane].head = off;
  return KL_OK;
}

/* Does lane a's row come before lane b's?  Ties: the partition listed
** first. */
static int lane_before(const kl_vcursor *c, size_t a, size_t b) {
  int64_t x = c->lanes[a].head, y = c->lanes[b].head;
  if (x != y) return c->bnd.desc ? x > y : x < y;
  return a < b;
}

static void heap_down(kl_vcursor *c, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < c->nheap && lane_before(c, c->heap[l], c->heap[m])) m = l;
    if (l + 1 < c->nheap && lane_before(c, c->heap[l + 1], c->heap[m])) m = l + 1;
    if (m == i) return;
    size_t t = c->heap[i];
    c->heap[i] = c->heap[m];
    c->heap[m] = t;
    i = m;
  }
}

/* ORDER BY offset over several partitions: each is read in its order by
** its lane, and the next row is the first of the lanes' current rows (a
** k-way merge), so nothing is sorted and no record is read twice. */
static kl_rc merge_next(kl_vcursor *c, kl_err *err) {
  kl_rc rc;
  if (!c->heap_built) {
    c->heap_built = 1;
    for (size_t k = 0; k < c->nsel; k++) {
      if ((rc = use_lane(c, k, err)) != KL_OK) return rc;
      if (c->pbnd.off_lo > c->pbnd.off_hi) continue;
      c->i_in = 0;
      rc = start_range(c, err);
      if (rc == KL_OK) rc = lane_step(c, err);
      if (rc == KL_OK) c->heap[c->nheap++] = k;
      else if (rc != KL_DONE) return rc;
    }
    for (size_t i = c->nheap / 2; i-- > 0;) heap_down(c, i);
  } else if (c->nheap > 0) {
    /* The row last produced is the top lane's: move that lane on. */
    if ((rc = use_lane(c, c->heap[0], err)) != KL_OK) return rc;
    rc = lane_step(c, err);
    if (rc == KL_DONE) c->heap[0] = c->heap[--c->nheap];
    else if (rc != KL_OK) return rc;
    heap_down(c, 0);
  }
  if (c->nheap == 0) return KL_DONE;
  return use_lane(c, c->heap[0], err);
}

/* Open the next chosen partition and start reading it: KL_DONE when none
** is left. */
static kl_rc next_partition(kl_vcursor *c, kl_err *err) {
  while (c->isel < c->nsel) {
    kl_rc rc = open_partition(c, c->isel++, err);
    if (rc) return rc;
    if (c->pbnd.off_lo > c->pbnd.off_hi) continue;
    c->i_in = 0;
    if (c->tsd) return KL_OK;
    return start_range(c, err);
  }
  return KL_DONE;
}

/* Move to the next row that the plan admits. */
static int step(kl_vcursor *c) {
  kl_err err; /* per row: set up without clearing its 512 bytes */
  kl_err_clear(&err);
  for (;;) {
    if (c->limit == 0) break;
    kl_rc rc = advance(c, &err);
    if (rc == KL_OK) {
      if (c->skip > 0) {
        c->skip--;
        continue;
      }
      if (c->limit > 0) c->limit--;
      return SQLITE_OK;
    }
    if (rc != KL_DONE) {
      c->eof = 1;
      return report(c, rc, &err);
    }
    if (!c->merge && c->in && c->i_in < c->n_in) {
      rc = start_range(c, &err);
    } else {
      rc = next_partition(c, &err);
      if (rc == KL_DONE) break;
    }
    if (rc != KL_OK) {
      c->eof = 1;
      return report(c, rc, &err);
    }
  }
  c->eof = 1;
  return SQLITE_OK;
}

static int kl_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  kl_vcursor *c = (kl_vcursor *)cur;
  kl_vtab *vt = (kl_vtab *)cur->pVtab;
  reset_scan(c);
  sqlite3_free(c->sel);
  c->sel = NULL;
  c->nsel = c->isel = 0;
  c->eof = 1;
  c->limit = -1;
  c->skip = 0;
  c->bnd = kl_bounds_all();
  c->bnd.desc = (idx & KL_P_DESC) != 0 && !(idx & KL_P_TS_ORDER);
  const char *dir = vt->dir;
  int a = 0;
  sqlite3_value *in_list = NULL;
  kl_part_filter pf; /* topic and partition constraints */
  kl_part_filter_init(&pf);
  int on_corrupt = vt->on_corrupt;
  int read_committed = vt->read_committed;
  int text[2] = {vt->text[0], vt->text[1]};
  sqlite3_int64 max_skew = vt->max_skew;
  for (int b = 0; b < KL_P_ARGV_COUNT; b++) {
    if (!(idx & (1 << b))) continue;
    if (a >= argc) return SQLITE_ERROR;
    sqlite3_value *v = argv[a++];
    int bit = 1 << b;
    if (bit == KL_P_DIR) {
      dir = (const char *)sqlite3_value_text(v);
    } else if (bit == KL_P_OFF_EQ && (idx & KL_P_IN)) {
      in_list = v;
    } else if (bit >= KL_P_OFF_EQ && bit <= KL_P_OFF_LE) {
      kl_fold_bound((enum kl_cmp_op)(b - 1), v, &c->bnd.off_lo, &c->bnd.off_hi);
    } else if (bit >= KL_P_TS_EQ && bit <= KL_P_TS_LE) {
      kl_fold_bound((enum kl_cmp_op)(b - 6), v, &c->bnd.ts_lo, &c->bnd.ts_hi);
    } else if (bit == KL_P_LIMIT) {
      c->limit = sqlite3_value_int64(v);
      if (c->limit < 0) c->limit = -1;
    } else if (bit == KL_P_OFFSET) {
      c->skip = sqlite3_value_int64(v);
      if (c->skip < 0) c->skip = 0;
    } else if (bit == KL_P_ON_CORRUPT || bit == KL_P_SKEW || bit == KL_P_ISOLATION ||
               bit == KL_P_KEY_TYPE || bit == KL_P_VALUE_TYPE) {
      /* A hidden-column option, read as CREATE reads it (options.h). */
      kl_opt_id id = bit == KL_P_ON_CORRUPT ? KL_OPT_ON_CORRUPT
                     : bit == KL_P_SKEW     ? KL_OPT_MAX_SKEW
                     : bit == KL_P_ISOLATION ? KL_OPT_ISOLATION
                     : bit == KL_P_KEY_TYPE ? KL_OPT_KEY_TYPE
                                            : KL_OPT_VALUE_TYPE;
      int64_t n = get_option(vt, id);
      char *m = NULL;
      int rc = kl_option_value(kl_option_of(id), v, &n, &m);
      if (rc) {
        sqlite3_free(cur->pVtab->zErrMsg);
        cur->pVtab->zErrMsg = m;
        return rc;
      }
      if (id == KL_OPT_ON_CORRUPT) on_corrupt = (int)n;
      else if (id == KL_OPT_MAX_SKEW) max_skew = n;
      else if (id == KL_OPT_ISOLATION) read_committed = (int)n;
      else text[id == KL_OPT_VALUE_TYPE] = (int)n;
    } else if (bit == KL_P_TOPIC_EQ) {
      pf.topic = v;
      pf.topic_in = (idx & KL_P_TOPIC_IN) != 0;
    } else if (bit == KL_P_PART_EQ) {
      pf.part = v;
      pf.part_in = (idx & KL_P_PART_IN) != 0;
    } else if (bit >= KL_P_PART_GT && bit <= KL_P_PART_LE) {
      kl_fold_bound((enum kl_cmp_op)(b - 17), v, &pf.lo, &pf.hi);
    }
  }
  c->bnd.max_skew = max_skew;
  c->max_skew = max_skew;
  c->text[0] = text[0];
  c->text[1] = text[1];
  kl_coldec_reset(&c->coldec); /* each statement probes the schemas again */
  for (int i = 0; i < 2; i++) {
    if (text[i] == KL_TYPE_AVRO && !vt->dec.plain[i]) {
      return set_error(cur->pVtab, SQLITE_ERROR, "kafka_log: %s",
                       i ? "value_type='avro' needs a value_schema option (a named table's)"
                         : "key_type='avro' needs a key_schema option (a named table's)");
    }
  }
  (void)idx_str;
  if (!dir) {
    return set_error(cur->pVtab, SQLITE_ERROR, "%s",
                     "kafka_log: a path is required: kafka_log('<partition or log directory>')");
  }
  /* The files are checked for changes once per statement: the same cursor
  ** filtered again (once per row of an outer loop) keeps its listing, its
  ** log, its buffers and the batch it decompressed last. */
  int rc;
  if (!c->bk || c->stale || c->on_corrupt != on_corrupt ||
      c->read_committed != read_committed || strcmp(c->bk->path, dir) != 0) {
    end_scan(c);
    kl_err err;
    kl_err_clear(&err);
    kl_rc krc = kl_listref_get(&vt->bk, dir, vt->no_checkpoints, &c->bk, &err);
    if (krc) return kl_vtab_error(cur->pVtab, "kafka_log", krc, &err);
    c->on_corrupt = on_corrupt;
    c->read_committed = read_committed;
  }
  /* Partitions are chosen by name before any is opened. */
  if ((rc = kl_choose_parts(c->bk->b, &pf, &c->sel, &c->nsel)) != SQLITE_OK) return rc;
  if (in_list) {
    /* All IN values at once, sorted, so rows come out in offset order. */
    sqlite3_value *v;
    int n = 0, cap = 0;
    for (rc = sqlite3_vtab_in_first(in_list, &v); rc == SQLITE_OK && v;
         rc = sqlite3_vtab_in_next(in_list, &v)) {
      int64_t lo = INT64_MIN, hi = INT64_MAX;
      kl_fold_bound(KL_CMP_EQ, v, &lo, &hi);
      if (lo != hi) continue; /* NULL, text, or a fraction: matches nothing */
      if (n == cap) {
        cap = cap ? cap * 2 : 16;
        sqlite3_int64 *p = sqlite3_realloc64(c->in, (sqlite3_uint64)cap * sizeof *p);
        if (!p) return SQLITE_NOMEM;
        c->in = p;
      }
      c->in[n++] = lo;
    }
    if (rc != SQLITE_OK && rc != SQLITE_DONE) return rc;
    if (n == 0) return SQLITE_OK;
    qsort(c->in, (size_t)n, sizeof *c->in, cmp_i64);
    int m = 0;
    for (int i = 0; i < n; i++) {
      if (m == 0 || c->in[m - 1] != c->in[i]) c->in[m++] = c->in[i];
    }
    c->n_in = m;
  }
  c->eof = 0;
  if (idx & KL_P_TS_ORDER) {
    c->tsd = 1;
    c->tsd_desc = (idx & KL_P_DESC) != 0;
    c->tsd_pairs = (idx & KL_P_PAIRS) != 0;
  }
  if ((idx & (KL_P_ORDERED | KL_P_TS_ORDER)) && c->nsel > 1) {
    /* The plan consumed an order over several partitions (a log directory
    ** of few partitions, or a parameter path taken for one partition):
    ** their ordered streams are merged here. */
    end_partition(c);
    c->merge = 1;
    c->by_offset = (idx & KL_P_ORDERED) != 0;
    c->lanes = sqlite3_malloc64((sqlite3_uint64)c->nsel * sizeof *c->lanes);
    if (!c->lanes) return SQLITE_NOMEM;
    memset(c->lanes, 0, c->nsel * sizeof *c->lanes);
    c->isel = c->nsel; /* the lanes read them all */
    if (c->by_offset && c->nsel <= (size_t)vt->set.max_open) {
      /* Every lane stays open: the rows are the merge of the lanes. */
      c->heap = sqlite3_malloc64((sqlite3_uint64)c->nsel * sizeof *c->heap);
      if (!c->heap) return SQLITE_NOMEM;
    } else {
      /* Timestamp order, or more partitions than may be open at once:
      ** every row comes from the sorted pairs, read by offset in its
      ** lane. */
      c->tsd = 1;
      c->tsd_desc = (idx & KL_P_DESC) != 0;
      c->bnd.desc = 0;
    }
    c->eof = 0;
    return step(c);
  }
  kl_err err = {0};
  kl_rc krc = next_partition(c, &err);
  if (krc == KL_DONE) {
    c->eof = 1;
    return SQLITE_OK;
  }
  if (krc) {
    c->eof = 1;
    return report(c, krc, &err);
  }
  return step(c);
}

static int kl_next(sqlite3_vtab_cursor *cur) { return step((kl_vcursor *)cur); }

static int kl_eof(sqlite3_vtab_cursor *cur) { return ((kl_vcursor *)cur)->eof; }

/* Bytes as a BLOB, or with key_type/value_type 'text' as TEXT when they
** are UTF-8 (else still a BLOB: no byte is lost to a conversion). */
static void result_bytes(sqlite3_context *ctx, const uint8_t *p, int32_t n, int text) {
  if (n < 0) sqlite3_result_null(ctx);
  else if (text == KL_TYPE_TEXT && kl_utf8_valid(p, (size_t)n)) {
    sqlite3_result_text(ctx, n ? (const char *)p : "", n, SQLITE_TRANSIENT);
  } else {
    sqlite3_result_blob(ctx, n ? (const void *)p : "", n, SQLITE_TRANSIENT);
  }
}

/* Decode the current row if it was produced from its batch's record count
** (cursor.h): the columns below that come from the record need it. */
static int load_row(kl_vcursor *c) {
  if (!c->on_pair && !kl_cursor_lazy(c->cur)) return SQLITE_OK;
  kl_err err; /* per column: set up without clearing its 512 bytes */
  kl_err_clear(&err);
  kl_rc rc;
  if (c->on_pair) { /* a column the plan did not expect: read the record */
    c->on_pair = 0;
    rc = seek_offset(c, c->pairs[c->i_pairs - 1].off, &err);
    return rc == KL_OK ? SQLITE_OK : report(c, rc, &err);
  }
  rc = kl_cursor_load(c->cur, &err);
  return rc == KL_OK ? SQLITE_OK : report(c, rc, &err);
}

static int kl_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  kl_vcursor *c = (kl_vcursor *)cur;
  const kl_record *r = kl_cursor_record(c->cur);
  const kl_batch *b = kl_cursor_batch(c->cur);
  if (c->on_pair && (col == KL_COL_OFFSET || col == KL_COL_TIMESTAMP)) {
    const struct ts_pair *p = &c->pairs[c->i_pairs - 1];
    sqlite3_result_int64(ctx, col == KL_COL_OFFSET ? p->off : p->ts);
    return SQLITE_OK;
  }
  int64_t po, pt;
  if ((col == KL_COL_OFFSET || col == KL_COL_TIMESTAMP) && !c->on_pair &&
      kl_cursor_peek(c->cur, &po, &pt)) { /* known without decoding */
    sqlite3_result_int64(ctx, col == KL_COL_OFFSET ? po : pt);
    return SQLITE_OK;
  }
  if (c->on_pair || col == KL_COL_OFFSET || col == KL_COL_TIMESTAMP || col == KL_COL_KEY ||
      col == KL_COL_VALUE || col == KL_COL_HEADERS || col == KL_COL_SEQUENCE) {
    int rc = load_row(c);
    if (rc) return rc;
  }
  switch (col) {
    case KL_COL_OFFSET: sqlite3_result_int64(ctx, r->offset); break;
    case KL_COL_TIMESTAMP: sqlite3_result_int64(ctx, r->timestamp); break;
    case KL_COL_TIMESTAMP_TYPE:
      sqlite3_result_text(ctx, kl_ts_type_name(b->ts_type), -1, SQLITE_STATIC);
      break;
    case KL_COL_KEY: case KL_COL_VALUE: {
      int k = col == KL_COL_KEY;
      if (c->text[!k] < KL_TYPE_CONFLUENT) {
        result_bytes(ctx, k ? r->key : r->value, k ? r->key_len : r->value_len, c->text[!k]);
        break;
      }
      kl_vtab *vt = (kl_vtab *)cur->pVtab;
      kl_where w = {c->part->topic ? c->part->topic : c->part->dir,
                    c->part->topic ? c->part->partition : -1, r->offset};
      return kl_decode_column(ctx, vt->conn, &vt->dec, &c->coldec, c->text[!k], k, r,
                              c->bk->path, &w);
    }
    case KL_COL_HEADERS:
      if (kl_headers_json(&c->json, r) != KL_OK) return SQLITE_NOMEM;
      sqlite3_result_text(ctx, (const char *)c->json.p, (int)c->json.len, SQLITE_TRANSIENT);
      break;
    case KL_COL_LEADER_EPOCH: sqlite3_result_int(ctx, b->leader_epoch); break;
    case KL_COL_PRODUCER_ID: sqlite3_result_int64(ctx, b->producer_id); break;
    case KL_COL_PRODUCER_EPOCH: sqlite3_result_int(ctx, b->producer_epoch); break;
    case KL_COL_SEQUENCE: sqlite3_result_int(ctx, r->sequence); break;
    case KL_COL_IS_TRANSACTIONAL: sqlite3_result_int(ctx, b->is_transactional); break;
    case KL_COL_COMPRESSION:
      sqlite3_result_text(ctx, kl_codec_name(b->codec), -1, SQLITE_STATIC);
      break;
    case KL_COL_SEGMENT: sqlite3_result_int64(ctx, kl_cursor_segment(c->cur)->base); break;
    case KL_COL_POSITION: sqlite3_result_int64(ctx, b->position); break;
    case KL_COL_TOPIC:
      if (c->part->topic) sqlite3_result_text(ctx, c->part->topic, -1, SQLITE_TRANSIENT);
      break;
    case KL_COL_PARTITION:
      if (c->part->partition >= 0) sqlite3_result_int(ctx, c->part->partition);
      break;
    case KL_COL_DIR: sqlite3_result_text(ctx, c->bk->path, -1, SQLITE_TRANSIENT); break;
    case KL_COL_KEY_TYPE: case KL_COL_VALUE_TYPE:
      sqlite3_result_text(ctx, kl_option_word(kl_option_of(KL_OPT_KEY_TYPE),
                                              c->text[col == KL_COL_VALUE_TYPE]),
                          -1, SQLITE_STATIC);
      break;
    case KL_COL_ISOLATION:
      sqlite3_result_text(ctx, c->read_committed ? "read_committed" : "read_uncommitted", -1,
                          SQLITE_STATIC);
      break;
    case KL_COL_ON_CORRUPT:
      sqlite3_result_text(ctx, c->on_corrupt == KL_ON_CORRUPT_SKIP ? "skip" : "error", -1, SQLITE_STATIC);
      break;
    case KL_COL_MAX_SKEW:
      if (c->max_skew < 0) sqlite3_result_null(ctx);
      else sqlite3_result_int64(ctx, c->max_skew);
      break;
  }
  return SQLITE_OK;
}

static int kl_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  kl_vcursor *c = (kl_vcursor *)cur;
  int64_t off, ts;
  if (c->on_pair) {
    off = c->pairs[c->i_pairs - 1].off;
  } else if (!kl_cursor_peek(c->cur, &off, &ts)) {
    int rc = load_row(c);
    if (rc) return rc;
    off = kl_cursor_record(c->cur)->offset;
  }
  /* Offsets beyond 2^44 in a path of several partitions would reach the
  ** next partition's rowids: they keep the offset alone. */
  *rowid = c->rowid_base && off >= 0 && off < ((int64_t)1 << KL_ROWID_SHIFT) ? c->rowid_base + off
                                                                              : off;
  return SQLITE_OK;
}

/* ---- writing (append.h) ---- */

static int kl_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->name) {
    return set_error(base, SQLITE_READONLY, "kafka_log: %s", "the table-valued form is read-only: "
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
static int kl_begin(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->name) return SQLITE_OK;
  if (!vt->app && !(vt->app = kl_append_new(vt->db, vt->name, vt->dir, &vt->wopt))) {
    return SQLITE_NOMEM;
  }
  return kl_append_begin(vt->app);
}
static int kl_sync(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_sync(vt->app, &base->zErrMsg) : SQLITE_OK;
}
/* After a transaction the files have changed: what the table learnt of
** them is not reused (the directory's mtime would say so too, but not
** within its clock's resolution). */
static int kl_commit_tx(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->app) return SQLITE_OK;
  forget_log(vt, vt->dir);
  return kl_append_commit(vt->app);
}
static int kl_rollback(sqlite3_vtab *base) {
  kl_vtab *vt = (kl_vtab *)base;
  if (!vt->app) return SQLITE_OK;
  forget_log(vt, vt->dir);
  return kl_append_rollback(vt->app, &base->zErrMsg);
}
static int kl_savepoint(sqlite3_vtab *base, int n) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_savepoint(vt->app, n, &base->zErrMsg) : SQLITE_OK;
}
static int kl_release(sqlite3_vtab *base, int n) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_release(vt->app, n) : SQLITE_OK;
}
static int kl_rollback_to(sqlite3_vtab *base, int n) {
  kl_vtab *vt = (kl_vtab *)base;
  return vt->app ? kl_append_rollback_to(vt->app, n, &base->zErrMsg) : SQLITE_OK;
}

static const sqlite3_module kl_module = {
    .iVersion = 3,
    .xCreate = kl_connect,
    .xConnect = kl_connect,
    .xBestIndex = kl_best_index,
    .xDisconnect = kl_disconnect,
    .xDestroy = kl_destroy,
    .xOpen = kl_open,
    .xClose = kl_close,
    .xFilter = kl_filter,
    .xNext = kl_next,
    .xEof = kl_eof,
    .xColumn = kl_column,
    .xRowid = kl_rowid,
    .xUpdate = kl_update,
    .xBegin = kl_begin,
    .xSync = kl_sync,
    .xCommit = kl_commit_tx,
    .xRollback = kl_rollback,
    .xRename = kl_rename,
    .xSavepoint = kl_savepoint,
    .xRelease = kl_release,
    .xRollbackTo = kl_rollback_to,
    .xShadowName = kl_shadow_name,
};

static void conn_free(void *p) {
  if (p) kl_values_free(((kl_conn *)p)->values);
  sqlite3_free(p);
}

/*
** kafka_log_max_skew('<dir>'): the smallest max_skew_ms the partition's
** records honour, that is the most any record's timestamp lies below the
** largest timestamp before it (0 when timestamps never go back, NULL for a
** log without records; 9223372036854775807 for any skew from there up).
** It reads every record once, so that a bound can be chosen from the data
** rather than guessed.
*/
void kl_fn_max_skew(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  kl_conn *conn = sqlite3_user_data(ctx);
  const char *dir = (const char *)sqlite3_value_text(argv[0]);
  if (!dir) return;
  kl_err err = {0};
  kl_log *log = NULL;
  kl_cursor *cur = NULL;
  kl_rc rc = kl_log_open_partition(NULL, dir, &log, &err);
  if (rc == KL_OK) rc = kl_cursor_new(log, &conn->stats, KL_ON_CORRUPT_ERROR, &cur);
  kl_bounds all = kl_bounds_all();
  if (rc == KL_OK) rc = kl_cursor_start(cur, &all, &err);
  int64_t top = INT64_MIN, skew = -1;
  while (rc == KL_OK && (rc = kl_cursor_next(cur, &err)) == KL_OK &&
         (rc = kl_cursor_load(cur, &err)) == KL_OK) {
    int64_t ts = kl_cursor_record(cur)->timestamp;
    if (ts > top) top = ts;
    /* top >= ts, but their difference may not fit: it saturates, and the
    ** cursor takes max_skew INT64_MAX as no bound (cursor.h). */
    int64_t d = kl_sub_sat(top, ts);
    if (d > skew) skew = d;
  }
  kl_cursor_free(cur);
  kl_log_close(log);
  if (rc != KL_DONE) {
    char *m = sqlite3_mprintf("kafka_log_max_skew: %s", err.msg[0] ? err.msg : kl_rc_name(rc));
    sqlite3_result_error(ctx, m ? m : "kafka_log_max_skew: out of memory", -1);
    sqlite3_result_error_code(ctx, kl_sqlite_rc(rc));
    sqlite3_free(m);
    return;
  }
  if (skew >= 0) sqlite3_result_int64(ctx, skew);
}

int kl_log_vtab_register(sqlite3 *db, kl_conn *conn) {
  return sqlite3_create_module_v2(db, "kafka_log", &kl_module, conn, conn_free);
}
