/*
** glue.c - result codes, counters and bounds shared by the modules of vtab/.
*/
#include "glue.h"

#include <math.h>
#include <string.h>

SQLITE_EXTENSION_INIT3

int kl_sqlite_rc(kl_rc rc) {
  switch (rc) {
    case KL_OK: case KL_DONE: case KL_NOTFOUND: return SQLITE_OK;
    case KL_NOMEM: return SQLITE_NOMEM;
    case KL_IO: return SQLITE_IOERR;
    case KL_CORRUPT: return SQLITE_CORRUPT;
    case KL_RANGE: return SQLITE_RANGE;
    case KL_READONLY: return SQLITE_READONLY;
    case KL_BUSY: return SQLITE_BUSY;
    case KL_MISUSE: return SQLITE_MISUSE;
    case KL_UNSUPPORTED: return SQLITE_ERROR;
  }
  return SQLITE_ERROR;
}

char *kl_stats_json(const kl_stats *s) {
  return sqlite3_mprintf(
      "{\"segments_opened\":%llu,\"index_probes\":%llu,\"index_fallbacks\":%llu,"
      "\"batch_headers\":%llu,\"batches_decoded\":%llu,\"batches_skipped\":%llu,"
      "\"records_decoded\":%llu,\"bytes_decompressed\":%llu,\"crc_checks\":%llu,"
      "\"bytes_read\":%llu,\"reads\":%llu}",
      (unsigned long long)s->segments_opened, (unsigned long long)s->index_probes,
      (unsigned long long)s->index_fallbacks, (unsigned long long)s->batch_headers,
      (unsigned long long)s->batches_decoded, (unsigned long long)s->batches_skipped,
      (unsigned long long)s->records_decoded, (unsigned long long)s->bytes_decompressed,
      (unsigned long long)s->crc_checks, (unsigned long long)s->bytes_read,
      (unsigned long long)s->reads);
}

/*
** Fold a comparison "column op v" into inclusive integer bounds [*lo, *hi],
** with SQLite's semantics: numeric text compares as a number, NULL matches
** nothing, any other text or blob sorts after every number.
*/
void kl_fold_bound(enum kl_cmp_op op, sqlite3_value *v, int64_t *lo, int64_t *hi) {
  int t = sqlite3_value_numeric_type(v);
  if (t == SQLITE_NULL) {
    *lo = 1, *hi = 0; /* empty */
    return;
  }
  if (t == SQLITE_TEXT || t == SQLITE_BLOB) {
    if (op == KL_CMP_EQ || op == KL_CMP_GT || op == KL_CMP_GE) *lo = 1, *hi = 0;
    return; /* "< text" holds for every number */
  }
  double r = sqlite3_value_double(v);
  sqlite3_int64 i = sqlite3_value_int64(v);
  int exact = t == SQLITE_INTEGER;
  int64_t nlo = INT64_MIN, nhi = INT64_MAX;
  if (!exact) {
    if (isnan(r)) { *lo = 1, *hi = 0; return; }
    if (r >= 9.2233720368547758e18) {
      if (op == KL_CMP_EQ || op == KL_CMP_GT || op == KL_CMP_GE) { *lo = 1, *hi = 0; }
      return;
    }
    if (r < -9.2233720368547758e18) {
      if (op == KL_CMP_EQ || op == KL_CMP_LT || op == KL_CMP_LE) { *lo = 1, *hi = 0; }
      return;
    }
  }
  switch (op) {
    case KL_CMP_EQ:
      if (!exact && floor(r) != r) { *lo = 1, *hi = 0; return; }
      nlo = nhi = exact ? i : (sqlite3_int64)r;
      break;
    case KL_CMP_GT:
      if (exact) {
        if (i == INT64_MAX) { *lo = 1, *hi = 0; return; }
        nlo = i + 1;
      } else {
        nlo = (sqlite3_int64)floor(r) + 1;
      }
      break;
    case KL_CMP_GE: nlo = exact ? i : (sqlite3_int64)ceil(r); break;
    case KL_CMP_LT:
      if (exact) {
        if (i == INT64_MIN) { *lo = 1, *hi = 0; return; }
        nhi = i - 1;
      } else {
        nhi = (sqlite3_int64)ceil(r) - 1;
      }
      break;
    case KL_CMP_LE: nhi = exact ? i : (sqlite3_int64)floor(r); break;
  }
  if (nlo > *lo) *lo = nlo;
  if (nhi < *hi) *hi = nhi;
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
