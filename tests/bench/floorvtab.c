/*
** floorvtab.c - the do-nothing virtual table (see floorvtab.h).  It takes
** one constraint, offset = ?, answered by a binary search of rows loaded
** in offset order (a join's point lookups, as kafka_log answers them from
** its index); every other query is a full scan in the order the rows were
** loaded: offset order, as a scan of a partition through kafka_log is, or
** partition after partition, as a scan of a log directory is.
*/
#include "floorvtab.h"

#include <stdlib.h>
#include <string.h>

int floor_rows_load(sqlite3 *db, floor_rows *r) {
  memset(r, 0, sizeof *r);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT count(*), sum(length(key)) + sum(length(value)) FROM t",
                         -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
    sqlite3_finalize(st);
    return -1;
  }
  long n = (long)sqlite3_column_int64(st, 0);
  int64_t bytes = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  r->rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *r->rows);
  r->arena = malloc((size_t)(bytes > 0 ? bytes : 1));
  if (!r->rows || !r->arena ||
      sqlite3_prepare_v2(db, "SELECT offset, timestamp, key, value FROM t ORDER BY offset", -1,
                         &st, NULL) != SQLITE_OK) {
    floor_rows_free(r);
    return -1;
  }
  while (r->n < n && sqlite3_step(st) == SQLITE_ROW) {
    floor_row *w = &r->rows[r->n++];
    w->topic = w->partition = -1;
    w->offset = sqlite3_column_int64(st, 0);
    w->timestamp = sqlite3_column_int64(st, 1);
    int64_t *pos[2] = {&w->key, &w->value};
    int *len[2] = {&w->key_len, &w->value_len};
    for (int c = 0; c < 2; c++) {
      const void *p = sqlite3_column_blob(st, 2 + c);
      int m = sqlite3_column_bytes(st, 2 + c);
      *len[c] = m;
      *pos[c] = -1;
      if (sqlite3_column_type(st, 2 + c) == SQLITE_NULL) continue;
      if (r->arena_len + m > bytes) {
        sqlite3_finalize(st);
        floor_rows_free(r);
        return -1;
      }
      *pos[c] = r->arena_len;
      if (m) memcpy(r->arena + r->arena_len, p, (size_t)m);
      r->arena_len += m;
    }
  }
  sqlite3_finalize(st);
  return 0;
}

/* The index of topic t (n bytes) in r->topics, added when it is not the
** last one added (rows come by topic: a topic seen before is the last);
** -1 when memory runs out. */
static int topic_index(floor_rows *r, const unsigned char *t, int n) {
  int k = r->ntopics - 1;
  if (k >= 0 && r->topic_len[k] == n && !memcmp(r->topics[k], t, (size_t)n)) return k;
  char **names = realloc(r->topics, (size_t)(r->ntopics + 1) * sizeof *names);
  if (names) r->topics = names;
  int *lens = realloc(r->topic_len, (size_t)(r->ntopics + 1) * sizeof *lens);
  if (lens) r->topic_len = lens;
  char *name = malloc((size_t)n + 1);
  if (!names || !lens || !name) {
    free(name);
    return -1;
  }
  if (n) memcpy(name, t, (size_t)n);
  name[n] = 0;
  r->topics[r->ntopics] = name;
  r->topic_len[r->ntopics] = n;
  return r->ntopics++;
}

int floor_rows_load_grouped(sqlite3 *db, floor_rows *r) {
  memset(r, 0, sizeof *r);
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL) != SQLITE_OK ||
      sqlite3_step(st) != SQLITE_ROW) {
    sqlite3_finalize(st);
    return -1;
  }
  long n = (long)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  r->rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *r->rows);
  if (!r->rows ||
      sqlite3_prepare_v2(db, "SELECT topic, partition, offset, timestamp FROM t"
                             " ORDER BY topic, partition, offset", -1, &st, NULL) != SQLITE_OK) {
    floor_rows_free(r);
    return -1;
  }
  r->grouped = 1;
  while (r->n < n && sqlite3_step(st) == SQLITE_ROW) {
    floor_row *w = &r->rows[r->n++];
    memset(w, 0, sizeof *w);
    w->key = w->value = -1;
    w->topic = w->partition = -1;
    if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
      const unsigned char *t = sqlite3_column_text(st, 0);
      w->topic = t ? topic_index(r, t, sqlite3_column_bytes(st, 0)) : -1;
      if (w->topic < 0) {
        sqlite3_finalize(st);
        floor_rows_free(r);
        return -1;
      }
    }
    if (sqlite3_column_type(st, 1) != SQLITE_NULL) w->partition = sqlite3_column_int(st, 1);
    w->offset = sqlite3_column_int64(st, 2);
    w->timestamp = sqlite3_column_int64(st, 3);
  }
  sqlite3_finalize(st);
  return 0;
}

void floor_rows_free(floor_rows *r) {
  free(r->rows);
  free(r->arena);
  for (int i = 0; i < r->ntopics; i++) free(r->topics[i]);
  free(r->topics);
  free(r->topic_len);
  memset(r, 0, sizeof *r);
}

/* Columns of the declared table (fl_connect). */
enum { FL_COL_TOPIC = 14, FL_COL_PARTITION = 15 };

typedef struct floor_vtab {
  sqlite3_vtab base;
  const floor_rows *r;
} floor_vtab;

typedef struct floor_cursor {
  sqlite3_vtab_cursor base;
  long i, end;              /* the rows [i, end) are left */
} floor_cursor;

enum { FL_SCAN, FL_OFFSET_EQ }; /* idxNum */

static int fl_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **err) {
  int rc = sqlite3_declare_vtab(
      db, "CREATE TABLE x(offset INTEGER NOT NULL, timestamp INTEGER NOT NULL,"
          " timestamp_type TEXT NOT NULL, key BLOB, value BLOB, headers TEXT NOT NULL,"
          " partition_leader_epoch INTEGER NOT NULL, producer_id INTEGER NOT NULL,"
          " producer_epoch INTEGER NOT NULL, sequence INTEGER NOT NULL,"
          " is_transactional INTEGER NOT NULL, compression TEXT NOT NULL,"
          " segment INTEGER NOT NULL, position INTEGER NOT NULL, topic TEXT, partition INTEGER)");
  if (rc != SQLITE_OK) return rc;
  floor_vtab *v = sqlite3_malloc(sizeof *v);
  if (!v) return SQLITE_NOMEM;
  memset(v, 0, sizeof *v);
  v->r = aux;
  *out = &v->base;
  return SQLITE_OK;
}

static int fl_disconnect(sqlite3_vtab *v) {
  sqlite3_free(v);
  return SQLITE_OK;
}

/* offset = ? when SQLite offers it usable (a join's inner loop), priced as
** one row; else the full scan. */
static int fl_best_index(sqlite3_vtab *v, sqlite3_index_info *info) {
  const floor_rows *r = ((floor_vtab *)v)->r;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[i];
    if (!r->grouped && k->usable && k->iColumn == 0 && k->op == SQLITE_INDEX_CONSTRAINT_EQ) {
      info->aConstraintUsage[i].argvIndex = 1;
      info->aConstraintUsage[i].omit = 1;
      info->idxNum = FL_OFFSET_EQ;
      info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
      info->estimatedCost = 1;
      info->estimatedRows = 1;
      return SQLITE_OK;
    }
  }
  info->idxNum = FL_SCAN;
  info->estimatedCost = (double)r->n;
  info->estimatedRows = r->n;
  /* A GROUP BY topic, partition asks for ORDER BY topic, partition; taking
  ** it spares SQLite a sort, as kafka_log's listing order does. */
  int by_partition = r->grouped && info->nOrderBy >= 1 && info->nOrderBy <= 2;
  for (int i = 0; by_partition && i < info->nOrderBy; i++) {
    if (info->aOrderBy[i].iColumn != FL_COL_TOPIC + i || info->aOrderBy[i].desc) by_partition = 0;
  }
  if (by_partition) info->orderByConsumed = 1;
  return SQLITE_OK;
}

static int fl_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out) {
  floor_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static int fl_close(sqlite3_vtab_cursor *c) {
  sqlite3_free(c);
  return SQLITE_OK;
}

/* The row whose offset is v's (an integer, or a real equal to one), by
** binary search of the rows in offset order; none when no row has it. */
static void seek_offset(floor_cursor *fc, const floor_rows *r, sqlite3_value *v) {
  fc->i = fc->end = 0;
  int64_t off;
  int t = sqlite3_value_numeric_type(v);
  if (t == SQLITE_INTEGER) {
    off = sqlite3_value_int64(v);
  } else if (t == SQLITE_FLOAT) {
    double d = sqlite3_value_double(v);
    if (!(d >= -9.2e18 && d <= 9.2e18) || (double)(int64_t)d != d) return;
    off = (int64_t)d;
  } else {
    return;
  }
  long lo = 0, hi = r->n; /* the first row with offset >= off */
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (r->rows[mid].offset < off) lo = mid + 1;
    else hi = mid;
  }
  if (lo < r->n && r->rows[lo].offset == off) {
    fc->i = lo;
    fc->end = lo + 1;
  }
}

static int fl_filter(sqlite3_vtab_cursor *c, int idx, const char *idx_str, int argc,
                     sqlite3_value **argv) {
  floor_cursor *fc = (floor_cursor *)c;
  const floor_rows *r = ((floor_vtab *)c->pVtab)->r;
  if (idx == FL_OFFSET_EQ && argc == 1) {
    seek_offset(fc, r, argv[0]);
  } else {
    fc->i = 0;
    fc->end = r->n;
  }
  return SQLITE_OK;
}

static int fl_next(sqlite3_vtab_cursor *c) {
  ((floor_cursor *)c)->i++;
  return SQLITE_OK;
}

static int fl_eof(sqlite3_vtab_cursor *c) {
  const floor_cursor *fc = (const floor_cursor *)c;
  return fc->i >= fc->end;
}

static int fl_column(sqlite3_vtab_cursor *c, sqlite3_context *ctx, int col) {
  const floor_rows *r = ((floor_vtab *)c->pVtab)->r;
  const floor_row *w = &r->rows[((floor_cursor *)c)->i];
  switch (col) {
  case 0: sqlite3_result_int64(ctx, w->offset); break;
  case 1: sqlite3_result_int64(ctx, w->timestamp); break;
  case 3:
  case 4: {
    int64_t pos = col == 3 ? w->key : w->value;
    int len = col == 3 ? w->key_len : w->value_len;
    if (pos >= 0) sqlite3_result_blob(ctx, r->arena + pos, len, SQLITE_STATIC);
    break;
  }
  case 2: sqlite3_result_text(ctx, "CreateTime", -1, SQLITE_STATIC); break;
  case 5: sqlite3_result_text(ctx, "[]", -1, SQLITE_STATIC); break;
  case 11: sqlite3_result_text(ctx, "none", -1, SQLITE_STATIC); break;
  case FL_COL_TOPIC:
    if (w->topic >= 0) {
      sqlite3_result_text(ctx, r->topics[w->topic], r->topic_len[w->topic], SQLITE_STATIC);
    }
    break;
  case FL_COL_PARTITION:
    if (w->partition >= 0) sqlite3_result_int(ctx, w->partition);
    break;
  default: sqlite3_result_int64(ctx, col == 7 || col == 8 || col == 9 ? -1 : 0); break;
  }
  return SQLITE_OK;
}

static int fl_rowid(sqlite3_vtab_cursor *c, sqlite3_int64 *rowid) {
  const floor_rows *r = ((floor_vtab *)c->pVtab)->r;
  long i = ((floor_cursor *)c)->i;
  /* Offsets repeat across partitions: a grouped row's rowid is its place. */
  *rowid = r->grouped ? i : r->rows[i].offset;
  return SQLITE_OK;
}

/* Eponymous-only (no xCreate): used as bench_floor, never created. */
static const sqlite3_module g_floor_module = {
    .iVersion = 0,
    .xConnect = fl_connect,
    .xBestIndex = fl_best_index,
    .xDisconnect = fl_disconnect,
    .xOpen = fl_open,
    .xClose = fl_close,
    .xFilter = fl_filter,
    .xNext = fl_next,
    .xEof = fl_eof,
    .xColumn = fl_column,
    .xRowid = fl_rowid,
};

int floor_register(sqlite3 *db, const floor_rows *r) {
  return sqlite3_create_module_v2(db, "bench_floor", &g_floor_module, (void *)r, NULL);
}
