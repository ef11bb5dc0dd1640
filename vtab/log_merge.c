/*
** log_merge.c - ORDER BY offset across the partitions of a path: each is
** read by its own lane, the rows are the k-way merge of the lanes.
*/
#include "log_vtab.h"

#include <string.h>

#include "broker.h"
#include "txn.h"

SQLITE_EXTENSION_INIT3

/* Make lane k (chosen partition sel[k]) the one read: part, ref, cur and
** pbnd are its own, opened on first use.  Lanes keep their core cursors,
** and with them the batch each decoded last, while the rows move from
** partition to partition.  At most the table's bound on open segments are
** open at once (each pins one): beyond it the least recently read is
** closed, and a row read from it again is looked up by offset. */
kl_rc lv_use_lane(kl_vcursor *c, size_t k, kl_err *err) {
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
    c->place = (size_t)lv_place((kl_vtab *)c->base.pVtab, c->bk, i); /* given when opened */
    c->ref = l->ref;
    c->cur = l->cur;
    c->pbnd = l->pbnd;
    c->i_in = l->i_in;
    c->lane = k;
    return KL_OK;
  }
  size_t max = lv_merge_max((kl_vtab *)c->base.pVtab);
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
  kl_rc rc = lv_open_partition(c, k, err);
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
    if (rc == KL_OK && lv_passed_over(c)) continue;
    if (rc == KL_DONE && c->in && c->i_in < c->n_in) {
      if ((rc = lv_start_range(c, err)) != KL_OK) return rc;
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
kl_rc lv_merge_next(kl_vcursor *c, kl_err *err) {
  kl_rc rc;
  if (!c->heap_built) {
    c->heap_built = 1;
    for (size_t k = 0; k < c->nsel; k++) {
      if ((rc = lv_use_lane(c, k, err)) != KL_OK) return rc;
      if (c->pbnd.off_lo > c->pbnd.off_hi) continue;
      c->i_in = 0;
      rc = lv_start_range(c, err);
      if (rc == KL_OK) rc = lane_step(c, err);
      if (rc == KL_OK) c->heap[c->nheap++] = k;
      else if (rc != KL_DONE) return rc;
    }
    for (size_t i = c->nheap / 2; i-- > 0;) heap_down(c, i);
  } else if (c->nheap > 0) {
    /* The row last produced is the top lane's: move that lane on. */
    if ((rc = lv_use_lane(c, c->heap[0], err)) != KL_OK) return rc;
    rc = lane_step(c, err);
    if (rc == KL_DONE) c->heap[0] = c->heap[--c->nheap];
    else if (rc != KL_OK) return rc;
    heap_down(c, 0);
  }
  if (c->nheap == 0) return KL_DONE;
  return lv_use_lane(c, c->heap[0], err);
}
