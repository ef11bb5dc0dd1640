/*
** log_options.c - the options of a kafka_log table as CREATE gives them and
** its <name>_config shadow table keeps them (the values: options.h).
*/
#include "log_vtab.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "broker.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

/* An argument of CREATE VIRTUAL TABLE, unquoted. */
char *lv_dequote(const char *s) {
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

/* Which options were given is kept a bit each. */
_Static_assert(KL_OPT_COUNT <= 64, "kl_vtab.opt_given holds a bit an option");

/* Option id's value in the table (options.h). */
static void set_option(kl_vtab *vt, kl_opt_id id, int64_t v) {
  vt->opt[id] = v;
  vt->opt_given |= (uint64_t)1 << id;
  kl_append_opt_set(&vt->wopt, id, v);
  if (id == KL_OPT_ISOLATION) vt->wopt.read_committed = (int)v;
  if (id == KL_OPT_MODE) vt->wopt.mode = (int)v;
}

int64_t lv_get_option(const kl_vtab *vt, kl_opt_id id) {
  /* A log made by CREATE is written to from then on. */
  if (id == KL_OPT_MODE && vt->opt[id] == KL_MODE_CREATE) return KL_MODE_WRITE;
  return vt->opt[id];
}

void lv_get_options(const kl_vtab *vt, int64_t opt[KL_OPT_COUNT]) {
  memcpy(opt, vt->opt, KL_OPT_COUNT * sizeof *opt);
  opt[KL_OPT_MODE] = lv_get_option(vt, KL_OPT_MODE); /* the one with a rule of its own */
}

/* The defaults: the writer's for the options it keeps, else the table's. */
void lv_default_options(kl_vtab *vt) {
  kl_append_opts_default(&vt->wopt);
  for (int id = 0; id < KL_OPT_COUNT; id++) {
    if (!kl_append_opt_get(&vt->wopt, (kl_opt_id)id, &vt->opt[id])) {
      vt->opt[id] = kl_option_default((kl_opt_id)id);
    }
  }
}

/* Is arg "<name> = ...", an option where the path belongs? */
int lv_looks_like_option(const char *arg) {
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
int lv_parse_option(kl_vtab *vt, const char *arg, unsigned *given, char **errmsg) {
  const char *eq = strchr(arg, '=');
  size_t kn = eq ? (size_t)(eq - arg) : strlen(arg);
  while (kn > 0 && (arg[kn - 1] == ' ' || arg[kn - 1] == '\t')) kn--;
  const kl_option *o = eq ? kl_option_find(arg, kn) : NULL;
  if (!o && eq) {
    /* How 'confluent' and 'avro' columns decode (values.h). */
    const char *v = eq + 1;
    while (*v == ' ' || *v == '\t') v++;
    char *d = lv_dequote(v);
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
  char *d = lv_dequote(v);
  if (!d) return SQLITE_NOMEM;
  int64_t n = 0;
  int rc = kl_option_text(o, d, &n, errmsg);
  sqlite3_free(d);
  if (rc == SQLITE_OK) set_option(vt, id, n);
  return rc;
}

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
char *lv_absolute(const char *path) {
  char *out = NULL;
  kl_path_iter it;
  const char *s;
  size_t n;
  kl_path_iter_init(&it, kl_sqlite_env(), path);
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

/* Read the directory and options of a named table from its shadow table.
** *found = 0 when there is none (a table created before shadow tables). */
int lv_read_config(kl_vtab *vt, int *found, char **errmsg) {
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

/* CREATE VIRTUAL TABLE: the shadow table <name>_config, holding the
** directory and every option's value (so a later version's defaults do
** not change the table), then what the mode asks of the path. */
int lv_write_config(kl_vtab *vt, char **errmsg) {
  char *rows = sqlite3_mprintf("('dir', %Q)", vt->dir);
  for (int id = 0; rows && id < KL_OPT_COUNT; id++) {
    char *lit = kl_option_literal((kl_opt_id)id, lv_get_option(vt, (kl_opt_id)id));
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
  int rc = sql ? sqlite3_exec(vt->db, sql, NULL, NULL, errmsg) : SQLITE_NOMEM;
  sqlite3_free(sql);
  sqlite3_free(rows);
  /* What the mode asks of the path; a new log is made now. */
  if (rc == SQLITE_OK) rc = kl_append_prepare(vt->name, vt->dir, &vt->wopt, errmsg);
  return rc;
}
