/*
** glue.c - result codes, counters and bounds shared by the modules of vtab/.
*/
#include "glue.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SQLITE_EXTENSION_INIT3

int kl_sqlite_rc(kl_rc rc) {
  switch (rc) {
    case KL_OK: case KL_DONE: case KL_NOTFOUND: return SQLITE_OK;
    case KL_NOMEM: return SQLITE_NOMEM;
    case KL_IO: return SQLITE_IOERR;
    case KL_CORRUPT: return SQLITE_CORRUPT_VTAB;
    case KL_RANGE: return SQLITE_TOOBIG; /* a value from SQL past a limit of the format */
    case KL_READONLY: return SQLITE_READONLY;
    case KL_BUSY: return SQLITE_BUSY;
    case KL_NOSPACE: return SQLITE_FULL;
    case KL_CANTOPEN: return SQLITE_CANTOPEN;
    case KL_MISUSE: return SQLITE_MISUSE;
    case KL_UNSUPPORTED: return SQLITE_ERROR;
    case KL_FULL: return SQLITE_INTERNAL; /* a full batch is the writer's to finish */
  }
  return SQLITE_ERROR;
}

int kl_vtab_error(sqlite3_vtab *vt, const char *module, kl_rc rc, const kl_err *err) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s: %s", module, err && err->msg[0] ? err->msg : kl_rc_name(rc));
  return kl_sqlite_rc(rc);
}

char *kl_stats_json(const kl_stats *s) {
  return sqlite3_mprintf(
      "{\"segments_opened\":%llu,\"index_probes\":%llu,\"index_fallbacks\":%llu,"
      "\"batch_headers\":%llu,\"batches_decoded\":%llu,\"batches_skipped\":%llu,"
      "\"records_decoded\":%llu,\"bytes_decompressed\":%llu,\"crc_checks\":%llu,"
      "\"bytes_read\":%llu,\"reads\":%llu,\"values_decoded\":%llu,\"schemas_parsed\":%llu}",
      (unsigned long long)s->segments_opened, (unsigned long long)s->index_probes,
      (unsigned long long)s->index_fallbacks, (unsigned long long)s->batch_headers,
      (unsigned long long)s->batches_decoded, (unsigned long long)s->batches_skipped,
      (unsigned long long)s->records_decoded, (unsigned long long)s->bytes_decompressed,
      (unsigned long long)s->crc_checks, (unsigned long long)s->bytes_read,
      (unsigned long long)s->reads, (unsigned long long)s->values_decoded,
      (unsigned long long)s->schemas_parsed);
}

/* Where x (an integral double or an infinity) lies against the int64_t
** range: -1 below it, 1 above it, else 0 with *out = x exactly. */
static int i64_of(double x, int64_t *out) {
  if (x < -0x1p63) return -1;
  if (x >= 0x1p63) return 1;
  *out = (int64_t)x;
  return 0;
}

/*
** Fold a comparison "column op v" into inclusive integer bounds [*lo, *hi],
** with SQLite's semantics: numeric text compares as a number, NULL (and
** NaN) matches nothing, any other text or blob sorts after every number,
** and an integer compares with a REAL exactly.  A REAL is first rounded
** towards the integers the comparison admits (floor or ceil, exact in a
** double), which may lie outside int64_t: the +-1 of a strict comparison
** is then taken on an integer known to have room for it.
*/
void kl_fold_bound(enum kl_cmp_op op, sqlite3_value *v, int64_t *lo, int64_t *hi) {
  int t = sqlite3_value_numeric_type(v);
  int64_t nlo = INT64_MIN, nhi = INT64_MAX, fl = 0, cl = 0;
  int fw = 0, cw = 0; /* where floor(v) and ceil(v) lie (i64_of) */
  if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
    if (op == KL_CMP_EQ || op == KL_CMP_GT || op == KL_CMP_GE) goto empty;
    return; /* "< text" holds for every number */
  }
  if (t == SQLITE_INTEGER) {
    fl = cl = sqlite3_value_int64(v);
  } else if (t == SQLITE_FLOAT) {
    double r = sqlite3_value_double(v);
    if (isnan(r)) goto empty;
    fw = i64_of(floor(r), &fl);
    cw = i64_of(ceil(r), &cl);
    if (op == KL_CMP_EQ && floor(r) != r) goto empty;
  } else {
    goto empty; /* NULL */
  }
  switch (op) {
    case KL_CMP_EQ:
      if (fw) goto empty;
      nlo = nhi = fl;
      break;
    case KL_CMP_GE:
      if (cw > 0) goto empty;
      if (cw == 0) nlo = cl;
      break;
    case KL_CMP_GT:
      if (fw > 0 || (fw == 0 && fl == INT64_MAX)) goto empty;
      if (fw == 0) nlo = fl + 1;
      break;
    case KL_CMP_LE:
      if (fw < 0) goto empty;
      if (fw == 0) nhi = fl;
      break;
    case KL_CMP_LT:
      if (cw < 0 || (cw == 0 && cl == INT64_MIN)) goto empty;
      if (cw == 0) nhi = cl - 1;
      break;
  }
  if (nlo > *lo) *lo = nlo;
  if (nhi < *hi) *hi = nhi;
  return;
empty:
  *lo = 1, *hi = 0;
}

int kl_listing_connect(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc) return rc;
  sqlite3_vtab *vt = sqlite3_malloc64(size);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, size);
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *out = vt;
  return SQLITE_OK;
}

/* ---- choosing partitions ---- */

void kl_part_filter_init(kl_part_filter *f) {
  memset(f, 0, sizeof *f);
  f->lo = INT64_MIN;
  f->hi = INT64_MAX;
}

static void free_values(sqlite3_value **v, int n) {
  for (int i = 0; i < n; i++) sqlite3_value_free(v[i]);
  sqlite3_free(v);
}

/* The values of an IN list, or the one value v: copies (an IN list's
** values last only until the next is fetched), sqlite3_malloc'd, freed
** with free_values; NULL, which matches nothing, is left out. */
static int in_values(sqlite3_value *v, int is_in, sqlite3_value ***out, int *n) {
  *out = NULL;
  *n = 0;
  int cap = 0, rc = SQLITE_OK;
  sqlite3_value *x = v;
  if (is_in) rc = sqlite3_vtab_in_first(v, &x);
  while (rc == SQLITE_OK && x) {
    if (sqlite3_value_type(x) != SQLITE_NULL) {
      if (*n == cap) {
        cap = cap ? cap * 2 : 8;
        sqlite3_value **p = sqlite3_realloc64(*out, (sqlite3_uint64)cap * sizeof *p);
        if (!p) return SQLITE_NOMEM;
        *out = p;
      }
      if (!((*out)[*n] = sqlite3_value_dup(x))) return SQLITE_NOMEM;
      (*n)++;
    }
    if (!is_in) break;
    rc = sqlite3_vtab_in_next(v, &x);
  }
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Topic values in the listing's order (bytes, then length), non-text
** ones last. */
static int cmp_topic(const void *a, const void *b) {
  sqlite3_value *x = *(sqlite3_value *const *)a, *y = *(sqlite3_value *const *)b;
  int tx = sqlite3_value_type(x) == SQLITE_TEXT, ty = sqlite3_value_type(y) == SQLITE_TEXT;
  if (tx != ty) return tx ? -1 : 1;
  if (!tx) return 0;
  const unsigned char *px = sqlite3_value_text(x), *py = sqlite3_value_text(y);
  int nx = sqlite3_value_bytes(x), ny = sqlite3_value_bytes(y);
  int c = px && py ? memcmp(px, py, (size_t)(nx < ny ? nx : ny)) : 0;
  return c ? c : (nx > ny) - (nx < ny);
}

/* Does p's partition satisfy the partition = values (pv of np, when
** any) and the bounds? */
static int part_admitted(const kl_part *p, const kl_part_filter *f, sqlite3_value **pv, int np) {
  if (p->partition < f->lo || p->partition > f->hi) return 0;
  if (!f->part) return 1;
  for (int k = 0; k < np; k++) {
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    kl_fold_bound(KL_CMP_EQ, pv[k], &lo, &hi); /* not an integer: empty */
    if (lo == hi && lo == p->partition) return 1;
  }
  return 0;
}

int kl_choose_parts(const kl_broker *b, const kl_part_filter *f, size_t **out, size_t *nout) {
  size_t n = kl_broker_count(b);
  sqlite3_value **tv = NULL, **pv = NULL;
  int nt = 0, np = 0, rc = SQLITE_OK;
  *out = NULL;
  *nout = 0;
  if (f->topic) rc = in_values(f->topic, f->topic_in, &tv, &nt);
  if (rc == SQLITE_OK && f->part) rc = in_values(f->part, f->part_in, &pv, &np);
  size_t *sel = rc == SQLITE_OK ? sqlite3_malloc64((sqlite3_uint64)n * sizeof *sel + 1) : NULL;
  if (!sel) rc = rc ? rc : SQLITE_NOMEM;
  size_t k = 0;
  if (rc == SQLITE_OK && f->topic) {
    /* Topics in listing order, so the chosen ones come out in it too. */
    if (nt > 1) qsort(tv, (size_t)nt, sizeof *tv, cmp_topic);
    int32_t from = f->lo < 0 ? 0 : f->lo > INT32_MAX ? INT32_MAX : (int32_t)f->lo;
    for (int t = 0; t < nt && f->lo <= INT32_MAX; t++) {
      if (sqlite3_value_type(tv[t]) != SQLITE_TEXT) break; /* sorted last */
      if (t > 0 && cmp_topic(&tv[t - 1], &tv[t]) == 0) continue;
      const char *name = (const char *)sqlite3_value_text(tv[t]);
      size_t len = (size_t)sqlite3_value_bytes(tv[t]);
      if (!name) {
        rc = SQLITE_NOMEM;
        break;
      }
      for (size_t i = kl_broker_seek(b, name, len, from); i < n; i++) {
        const kl_part *p = kl_broker_part(b, i);
        if (!p->topic || strlen(p->topic) != len || memcmp(p->topic, name, len) != 0) break;
        if (p->partition > f->hi) break;
        if (part_admitted(p, f, pv, np)) sel[k++] = i;
      }
    }
  } else if (rc == SQLITE_OK) {
    int named = f->part || f->lo > INT64_MIN || f->hi < INT64_MAX;
    for (size_t i = 0; i < n; i++) {
      const kl_part *p = kl_broker_part(b, i);
      if (named && !p->topic) continue; /* NULL compares with nothing */
      if (part_admitted(p, f, pv, np)) sel[k++] = i;
    }
  }
  free_values(tv, nt);
  free_values(pv, np);
  if (rc != SQLITE_OK) {
    sqlite3_free(sel);
    return rc;
  }
  *out = sel;
  *nout = k;
  return SQLITE_OK;
}

/* ---- the plan of a listing table ---- */

/* The KL_L_* bit of a constraint on a listing table, 0 when SQLite
** checks it. */
static int listing_bit(const struct sqlite3_index_constraint *c, int dir_col, int topic_col,
                       int part_col) {
  if (c->iColumn == dir_col) return c->op == SQLITE_INDEX_CONSTRAINT_EQ ? KL_L_DIR : 0;
  if (c->iColumn == topic_col) return c->op == SQLITE_INDEX_CONSTRAINT_EQ ? KL_L_TOPIC_EQ : 0;
  if (c->iColumn != part_col) return 0;
  switch (c->op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: return KL_L_PART_EQ;
    case SQLITE_INDEX_CONSTRAINT_GT: return KL_L_PART_GT;
    case SQLITE_INDEX_CONSTRAINT_GE: return KL_L_PART_GE;
    case SQLITE_INDEX_CONSTRAINT_LT: return KL_L_PART_LT;
    case SQLITE_INDEX_CONSTRAINT_LE: return KL_L_PART_LE;
  }
  return 0;
}

int kl_best_index_listing(sqlite3_index_info *info, int dir_col, int topic_col, int part_col,
                          int *nargv) {
  int used[KL_L_ARGV_COUNT];
  for (int b = 0; b < KL_L_ARGV_COUNT; b++) used[b] = -1;
  *nargv = 0;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (c->iColumn == dir_col && !c->usable) return SQLITE_CONSTRAINT;
    int bit = c->usable ? listing_bit(c, dir_col, topic_col, part_col) : 0;
    if (!bit) continue;
    int b = __builtin_ctz((unsigned)bit);
    if (used[b] < 0) used[b] = i;
  }
  int idx = 0;
  if (used[1] >= 0 && sqlite3_vtab_in(info, used[1], -1)) idx |= KL_L_TOPIC_IN;
  if (used[2] >= 0 && sqlite3_vtab_in(info, used[2], -1)) idx |= KL_L_PART_IN;
  if (used[0] < 0) idx = 0, memset(used, -1, sizeof used); /* xFilter says it is required */
  for (int b = 0; b < KL_L_ARGV_COUNT; b++) {
    if (used[b] < 0) continue;
    idx |= 1 << b;
    info->aConstraintUsage[used[b]].argvIndex = ++*nargv;
    info->aConstraintUsage[used[b]].omit = 1;
  }
  if (idx & KL_L_TOPIC_IN) sqlite3_vtab_in(info, used[1], 1);
  if (idx & KL_L_PART_IN) sqlite3_vtab_in(info, used[2], 1);
  /* The path is not listed to plan: a partition's worth of work, less for
  ** each constraint that narrows the partitions read. */
  double cost = 1e5;
  if (idx & KL_L_TOPIC_EQ) cost /= (idx & KL_L_TOPIC_IN) ? 4 : 10;
  if (idx & KL_L_PART_EQ) cost /= (idx & KL_L_PART_IN) ? 4 : 10;
  else if (idx & (KL_L_PART_GT | KL_L_PART_GE | KL_L_PART_LT | KL_L_PART_LE)) cost /= 2;
  info->idxNum = idx;
  info->estimatedCost = (idx & KL_L_DIR) ? cost : 1e12;
  info->estimatedRows = (sqlite3_int64)cost;
  static const char *const names[] = {"dir=?", "topic=?", "partition=?", "partition>?",
                                      "partition>=?", "partition<?", "partition<=?"};
  char buf[160];
  size_t len = 0;
  buf[0] = 0;
  for (int b = 0; b < KL_L_ARGV_COUNT; b++) {
    if (!(idx & (1 << b))) continue;
    const char *s = names[b];
    if (b == 1 && (idx & KL_L_TOPIC_IN)) s = "topic IN (...)";
    if (b == 2 && (idx & KL_L_PART_IN)) s = "partition IN (...)";
    int k = snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "", s);
    if (k > 0 && (size_t)k < sizeof buf - len) len += (size_t)k;
  }
  info->idxStr = sqlite3_mprintf("%s", len ? buf : "no path");
  info->needToFreeIdxStr = 1;
  return info->idxStr ? SQLITE_OK : SQLITE_NOMEM;
}

int kl_append_idx_str(sqlite3_index_info *info, const char *what) {
  char *s = sqlite3_mprintf("%s %s", info->idxStr ? info->idxStr : "", what);
  if (!s) return SQLITE_NOMEM;
  if (info->needToFreeIdxStr) sqlite3_free(info->idxStr);
  info->idxStr = s;
  info->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

int kl_listing_args(int idx, int argc, sqlite3_value **argv, const char **dir, kl_part_filter *f) {
  int a = 0;
  *dir = NULL;
  kl_part_filter_init(f);
  for (int b = 0; b < KL_L_ARGV_COUNT; b++) {
    int bit = 1 << b;
    if (!(idx & bit)) continue;
    if (a >= argc) return -1;
    sqlite3_value *v = argv[a++];
    if (bit == KL_L_DIR) {
      *dir = (const char *)sqlite3_value_text(v);
    } else if (bit == KL_L_TOPIC_EQ) {
      f->topic = v;
      f->topic_in = (idx & KL_L_TOPIC_IN) != 0;
    } else if (bit == KL_L_PART_EQ) {
      f->part = v;
      f->part_in = (idx & KL_L_PART_IN) != 0;
    } else {
      kl_fold_bound((enum kl_cmp_op)(b - 2), v, &f->lo, &f->hi);
    }
  }
  return a;
}

/* ---- the walk of a listing table ---- */

int kl_listing_start(kl_listing *l, sqlite3_vtab *vt, const char *module, const char *path,
                     const kl_part_filter *f) {
  memset(l, 0, sizeof *l);
  l->path = sqlite3_mprintf("%s", path);
  if (!l->path) return SQLITE_NOMEM;
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_broker_open(NULL, path, &l->b, &err);
  if (rc) return kl_vtab_error(vt, module, rc, &err);
  return kl_choose_parts(l->b, f, &l->sel, &l->nsel);
}

const kl_part *kl_listing_next(kl_listing *l) {
  l->part = NULL;
  if (l->next < l->nsel) {
    l->index = l->sel[l->next++];
    l->part = kl_broker_part(l->b, l->index);
  }
  return l->part;
}

kl_rc kl_listing_open_log(const kl_listing *l, kl_log **out, kl_err *err) {
  if (kl_broker_single(l->b)) return kl_log_open_partition(NULL, l->part->dir, out, err);
  return kl_log_open(NULL, l->part->dir, out, err);
}

sqlite3_int64 kl_listing_rowid(const kl_listing *l, int64_t v) {
  if (kl_broker_single(l->b)) return v;
  return (sqlite3_int64)(((uint64_t)l->index << 44) + (uint64_t)v);
}

void kl_listing_end(kl_listing *l) {
  kl_broker_close(l->b);
  sqlite3_free(l->path);
  sqlite3_free(l->sel);
  memset(l, 0, sizeof *l);
}
int kl_best_index_dir(sqlite3_index_info *info, int dir_col) {
  for (int i = 0; i < info->nConstraint; i++) {
    if (info->aConstraint[i].iColumn != dir_col) continue;
    if (!info->aConstraint[i].usable) return SQLITE_CONSTRAINT;
    if (info->aConstraint[i].op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    info->aConstraintUsage[i].argvIndex = 1;
    info->aConstraintUsage[i].omit = 1;
    info->idxNum = 1;
    info->estimatedCost = 1000;
    return SQLITE_OK;
  }
  info->idxNum = 0; /* no directory: xFilter says it is required */
  info->estimatedCost = 1e12;
  return SQLITE_OK;
}
