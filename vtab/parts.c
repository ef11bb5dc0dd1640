/*
** parts.c - see parts.h.
*/
#include "parts.h"

#include <stdlib.h>
#include <string.h>

#include "bounds.h"
#include "topic.h"

SQLITE_EXTENSION_INIT3

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
  const char *px = (const char *)sqlite3_value_text(x), *py = (const char *)sqlite3_value_text(y);
  size_t nx = px ? (size_t)sqlite3_value_bytes(x) : 0, ny = py ? (size_t)sqlite3_value_bytes(y) : 0;
  return kl_topic_cmp(px, nx, 0, py, ny, 0);
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

/* The values a partition = constraint lists (pv, np) or none. */
typedef struct part_values {
  sqlite3_value **v;
  int n;
} part_values;

/* By topic: each distinct topic value (tv, nt, sorted) binary-searches the
** listing, its partitions taken in order; into sel, *k of them. */
static int choose_by_topic(const kl_broker *b, const kl_part_filter *f, sqlite3_value **tv, int nt,
                           const part_values *pv, size_t *sel, size_t *k) {
  size_t n = kl_broker_count(b);
  int32_t from = f->lo < 0 ? 0 : f->lo > INT32_MAX ? INT32_MAX : (int32_t)f->lo;
  for (int t = 0; t < nt && f->lo <= INT32_MAX; t++) {
    if (sqlite3_value_type(tv[t]) != SQLITE_TEXT) break; /* sorted last */
    if (t > 0 && cmp_topic(&tv[t - 1], &tv[t]) == 0) continue;
    const char *name = (const char *)sqlite3_value_text(tv[t]);
    size_t len = (size_t)sqlite3_value_bytes(tv[t]);
    if (!name) return SQLITE_NOMEM;
    for (size_t i = kl_broker_seek(b, name, len, from); i < n; i++) {
      const kl_part *p = kl_broker_part(b, i);
      if (!p->topic || strlen(p->topic) != len || memcmp(p->topic, name, len) != 0) break;
      if (p->partition > f->hi) break;
      if (part_admitted(p, f, pv->v, pv->n)) sel[(*k)++] = i;
    }
  }
  return SQLITE_OK;
}

int kl_choose_parts(const kl_broker *b, const kl_part_filter *f, size_t **out, size_t *nout) {
  size_t n = kl_broker_count(b);
  sqlite3_value **tv = NULL;
  part_values pv = {NULL, 0};
  int nt = 0, rc = SQLITE_OK;
  *out = NULL;
  *nout = 0;
  if (f->topic) rc = in_values(f->topic, f->topic_in, &tv, &nt);
  if (rc == SQLITE_OK && f->part) rc = in_values(f->part, f->part_in, &pv.v, &pv.n);
  size_t *sel = rc == SQLITE_OK ? sqlite3_malloc64((sqlite3_uint64)n * sizeof *sel + 1) : NULL;
  if (!sel) rc = rc ? rc : SQLITE_NOMEM;
  size_t k = 0;
  if (rc == SQLITE_OK && f->topic) {
    /* Topics in listing order, so the chosen ones come out in it too. */
    if (nt > 1) qsort(tv, (size_t)nt, sizeof *tv, cmp_topic);
    rc = choose_by_topic(b, f, tv, nt, &pv, sel, &k);
  } else if (rc == SQLITE_OK) {
    int named = f->part || f->lo > INT64_MIN || f->hi < INT64_MAX;
    for (size_t i = 0; i < n; i++) {
      const kl_part *p = kl_broker_part(b, i);
      if (named && !p->topic) continue; /* NULL compares with nothing */
      if (part_admitted(p, f, pv.v, pv.n)) sel[k++] = i;
    }
  }
  free_values(tv, nt);
  free_values(pv.v, pv.n);
  if (rc != SQLITE_OK) {
    sqlite3_free(sel);
    return rc;
  }
  *out = sel;
  *nout = k;
  return SQLITE_OK;
}
