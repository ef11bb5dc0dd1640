/*
** log_tsorder.c - ORDER BY timestamp (plan.h KL_P_TS_ORDER): the first row
** by Kafka's ListOffsets lookup, the others from sorted (timestamp,
** offset) pairs.
*/
#include "log_vtab.h"

#include <stdlib.h>

#include "txn.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

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
kl_rc lv_seek_offset(kl_vcursor *c, int64_t off, kl_err *err) {
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
      c->pid_lo != INT64_MIN || c->pid_hi != INT64_MAX || b0->keys ||
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
    kl_reader_init(&rd, kl_sqlite_env(), &((kl_vtab *)c->base.pVtab)->conn->stats, KL_ON_CORRUPT_ERROR);
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

/* Append the current row's pair (partition k) to c->pairs, of *cap. */
static kl_rc add_pair(kl_vcursor *c, size_t k, size_t *cap, kl_err *err) {
  int64_t off, ts;
  if (!kl_cursor_peek(c->cur, &off, &ts)) {
    kl_rc rc = kl_cursor_load(c->cur, err);
    if (rc != KL_OK) return rc;
    off = kl_cursor_record(c->cur)->offset;
    ts = kl_cursor_record(c->cur)->timestamp;
  }
  if (c->n_pairs == *cap) {
    *cap = *cap ? *cap * 2 : 1024;
    struct ts_pair *p = sqlite3_realloc64(c->pairs, (sqlite3_uint64)*cap * sizeof *p);
    if (!p) return kl_err_set(err, KL_NOMEM, "out of memory sorting rows");
    c->pairs = p;
  }
  struct ts_pair *p = &c->pairs[c->n_pairs++];
  p->key = c->by_offset ? off : ts;
  p->ts = ts;
  p->off = off;
  p->k = k;
  return KL_OK;
}

/* The pairs of the rows of partition k (the one being read): KL_DONE when
** they are all in. */
static kl_rc partition_pairs(kl_vcursor *c, size_t k, size_t *cap, kl_err *err) {
  kl_rc rc = c->merge ? lv_use_lane(c, k, err) : KL_OK;
  if (rc == KL_OK && c->pbnd.off_lo > c->pbnd.off_hi) return KL_DONE;
  /* Each offset of an IN list is its own range (start_range). */
  c->i_in = 0;
  do {
    if (rc == KL_OK) rc = lv_start_range(c, err);
    while (rc == KL_OK && (rc = kl_cursor_next(c->cur, err)) == KL_OK) {
      if (!lv_passed_over(c)) rc = add_pair(c, k, cap, err);
    }
    if (rc == KL_DONE && c->in && c->i_in < c->n_in) rc = KL_OK;
  } while (rc == KL_OK);
  return rc;
}

/* Every matching record's (timestamp, offset) of the partition being read,
** or with merge of every chosen partition, in the consumed order. */
static kl_rc build_pairs(kl_vcursor *c, kl_err *err) {
  size_t cap = 0;
  c->pairs_built = 1;
  size_t k0 = c->merge ? 0 : c->isel - 1, k1 = c->merge ? c->nsel : c->isel;
  kl_rc rc = KL_DONE;
  for (size_t k = k0; k < k1 && rc == KL_DONE; k++) rc = partition_pairs(c, k, &cap, err);
  if (rc != KL_DONE) return rc;
  if (c->merge) c->isel = c->nsel; /* every partition was read */
  if (c->n_pairs > 1) {
    qsort(c->pairs, c->n_pairs, sizeof *c->pairs, c->tsd_desc ? cmp_pair_desc : cmp_pair_asc);
  }
  return KL_OK;
}

kl_rc lv_tsd_next(kl_vcursor *c, kl_err *err) {
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
    if (c->merge && (rc = lv_use_lane(c, p->k, err)) != KL_OK) return rc;
    if (c->tsd_pairs) {
      c->on_pair = 1;
      return KL_OK;
    }
    return lv_seek_offset(c, p->off, err);
  }
  return KL_DONE;
}
