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

/* The pairs of one pass, in a buffer of at most cap: while it fills, pairs
** are appended; once full it is a heap whose top is the pair that would
** come last, replaced by any that comes before it.  A LIMIT sets cap to
** the rows it allows, so ORDER BY timestamp DESC LIMIT 10 over millions of
** records holds 11 pairs; without one, sort_bytes does, and the pairs a
** pass leaves out come from the next, which reads the log again for those
** after the last one produced.  The order is total (timestamp or offset,
** then partition, then offset), so passes neither repeat nor lose a row. */
typedef struct pass {
  size_t cap;                /* most pairs kept */
  int (*cmp)(const void *, const void *);
  int heap;                  /* full: pairs[0..n) is a heap */
} pass;

static void sift_down(struct ts_pair *h, size_t n, size_t i, const pass *ps) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && ps->cmp(&h[l], &h[m]) > 0) m = l;
    if (l + 1 < n && ps->cmp(&h[l + 1], &h[m]) > 0) m = l + 1;
    if (m == i) return;
    struct ts_pair t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

/* Offer pair q to the pass. */
static kl_rc keep_pair(kl_vcursor *c, pass *ps, const struct ts_pair *q, kl_err *err) {
  if (c->have_floor && ps->cmp(q, &c->floor) <= 0) return KL_OK; /* produced already */
  if (c->n_pairs == ps->cap) {
    c->pairs_more = 1;
    if (!ps->heap) {
      for (size_t i = c->n_pairs / 2; i-- > 0;) sift_down(c->pairs, c->n_pairs, i, ps);
      ps->heap = 1;
    }
    if (ps->cmp(q, &c->pairs[0]) < 0) {
      c->pairs[0] = *q;
      sift_down(c->pairs, c->n_pairs, 0, ps);
    }
    return KL_OK;
  }
  if (c->n_pairs == c->pairs_alloc) {
    size_t n = c->pairs_alloc ? c->pairs_alloc * 2 : 1024;
    if (n > ps->cap) n = ps->cap;
    struct ts_pair *p = sqlite3_realloc64(c->pairs, (sqlite3_uint64)n * sizeof *p);
    if (!p) return kl_err_set(err, KL_NOMEM, "out of memory sorting rows");
    c->pairs = p;
    c->pairs_alloc = n;
  }
  c->pairs[c->n_pairs++] = *q;
  return KL_OK;
}

/* Offer the current row's pair (partition k). */
static kl_rc add_pair(kl_vcursor *c, size_t k, pass *ps, kl_err *err) {
  int64_t off, ts;
  if (!kl_cursor_peek(c->cur, &off, &ts)) {
    kl_rc rc = kl_cursor_load(c->cur, err);
    if (rc != KL_OK) return rc;
    off = kl_cursor_record(c->cur)->offset;
    ts = kl_cursor_record(c->cur)->timestamp;
  }
  struct ts_pair q = {c->by_offset ? off : ts, ts, off, k};
  return keep_pair(c, ps, &q, err);
}

/* The pairs of the rows of partition k (the one being read): KL_DONE when
** they are all offered. */
static kl_rc partition_pairs(kl_vcursor *c, size_t k, pass *ps, kl_err *err) {
  kl_rc rc = c->merge ? lv_use_lane(c, k, err) : KL_OK;
  if (rc == KL_OK && c->pbnd.off_lo > c->pbnd.off_hi) return KL_DONE;
  /* Each offset of an IN list is its own range (start_range). */
  c->i_in = 0;
  do {
    if (rc == KL_OK) rc = lv_start_range(c, err);
    while (rc == KL_OK && (rc = kl_cursor_next(c->cur, err)) == KL_OK) {
      if (!lv_passed_over(c)) rc = add_pair(c, k, ps, err);
    }
    if (rc == KL_DONE && c->in && c->i_in < c->n_in) rc = KL_OK;
  } while (rc == KL_OK);
  /* With merge, every partition's cursor stays open (up to 64 of them):
  ** without its buffers, ORDER BY timestamp DESC LIMIT 10 over 100
  ** partitions peaked at 48,816 KiB instead of 111,708.  A lone cursor
  ** keeps them: the rows are read again with it. */
  if (rc == KL_DONE && c->merge) kl_cursor_trim(c->cur);
  return rc;
}

/* The most pairs a pass keeps: what the LIMIT and OFFSET still allow (and
** the first row, produced already but offered again), or sort_bytes'. */
static size_t pass_cap(const kl_vcursor *c) {
  uint64_t cap = (uint64_t)c->opt[KL_OPT_SORT_BYTES] / sizeof(struct ts_pair);
  if (c->limit >= 0) {
    uint64_t want = (uint64_t)c->limit + (uint64_t)c->skip + 1;
    if (want < cap) cap = want;
  }
  if (cap < 2) cap = 2;
  return cap > SIZE_MAX / sizeof(struct ts_pair) ? SIZE_MAX / sizeof(struct ts_pair) : (size_t)cap;
}

/* One pass: the first pairs, in the consumed order, of every matching
** record of the partition being read, or with merge of every chosen
** partition, after c->floor when there is one. */
static kl_rc build_pairs(kl_vcursor *c, kl_err *err) {
  pass ps = {pass_cap(c), c->tsd_desc ? cmp_pair_desc : cmp_pair_asc, 0};
  c->pairs_built = 1;
  c->pairs_more = 0;
  c->n_pairs = c->i_pairs = 0;
  size_t k0 = c->merge ? 0 : c->isel - 1, k1 = c->merge ? c->nsel : c->isel;
  kl_rc rc = KL_DONE;
  for (size_t k = k0; k < k1 && rc == KL_DONE; k++) rc = partition_pairs(c, k, &ps, err);
  if (rc != KL_DONE) return rc;
  if (c->merge) c->isel = c->nsel; /* every partition was read */
  if (c->n_pairs > 1) qsort(c->pairs, c->n_pairs, sizeof *c->pairs, ps.cmp);
  ((kl_vtab *)c->base.pVtab)->conn->stats.sort_passes++;
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
  for (;;) {
    if (c->i_pairs == c->n_pairs) {
      if (!c->pairs_more) return KL_DONE;
      c->floor = c->pairs[c->n_pairs - 1];
      c->have_floor = 1;
      if ((rc = build_pairs(c, err)) != KL_OK) return rc;
      if (c->n_pairs == 0) return KL_DONE;
    }
    const struct ts_pair *p = &c->pairs[c->i_pairs++];
    if (c->have_first && p->off == c->first_off) continue;
    if (c->merge && (rc = lv_use_lane(c, p->k, err)) != KL_OK) return rc;
    if (c->tsd_pairs) {
      c->on_pair = 1;
      return KL_OK;
    }
    return lv_seek_offset(c, p->off, err);
  }
}
