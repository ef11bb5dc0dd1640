/*
** cursor.c - bounded forward and backward iteration over a log's records.
*/
#include "cursor.h"

#include <stdio.h>
#include <string.h>

struct kl_cursor {
  kl_log *log;
  const kl_env *env;
  kl_stats *stats;
  kl_bounds bnd;            /* as given */
  int64_t lo, hi;           /* effective offset bounds (time seek folded in) */
  int done;
  kl_segment *seg;          /* current segment */
  kl_batch batch;           /* current batch */
  kl_records it;            /* its records (forward) */
  int in_batch;             /* forward: it is live */
  kl_record rec;            /* current record (forward) */
  kl_buf scratch;           /* decompressed payloads */
  int64_t pos;              /* forward: next batch position */

  /* Backward iteration only. */
  int64_t *wpos;            /* batch positions of the current window */
  size_t wn, wcap;
  int64_t win_slot;         /* offset index slot starting the window, -1: 0 */
  int64_t win_start;        /* window [win_start, win_end) */
  kl_record *recs;          /* records of the current batch */
  size_t rn, rcap;
  size_t ridx;              /* records still to produce: recs[0..ridx) */
  kl_record *cur;           /* current record (backward) */
};

kl_bounds kl_bounds_all(void) {
  kl_bounds b = {INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX, 0};
  return b;
}

kl_rc kl_cursor_new(kl_log *log, kl_cursor **out) {
  const kl_env *env = kl_log_env(log);
  kl_cursor *c = kl_malloc(env, sizeof *c);
  *out = c;
  if (!c) return KL_NOMEM;
  memset(c, 0, sizeof *c);
  c->log = log;
  c->env = env;
  c->stats = kl_log_stats(log);
  c->done = 1;
  return KL_OK;
}

void kl_cursor_free(kl_cursor *c) {
  if (!c) return;
  kl_buf_free(c->env, &c->scratch);
  kl_free(c->env, c->wpos);
  kl_free(c->env, c->recs);
  kl_free(c->env, c);
}

const kl_record *kl_cursor_record(const kl_cursor *c) { return c->bnd.desc ? c->cur : &c->rec; }
const kl_batch *kl_cursor_batch(const kl_cursor *c) { return &c->batch; }
const kl_segment *kl_cursor_segment(const kl_cursor *c) { return c->seg; }

/* Name the batch in a record-level error (the batch code knows no file). */
static kl_rc batch_error(kl_cursor *c, kl_rc rc, kl_err *err) {
  if (rc == KL_CORRUPT && err && err->rc == KL_CORRUPT && c->seg) {
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    kl_err_clear(err);
    kl_err_set(err, rc, "%s: position %lld: %s", c->seg->log_path, (long long)c->batch.position, m);
  }
  return rc;
}

static int has_ts_lo(const kl_cursor *c) { return c->bnd.ts_lo != INT64_MIN; }

/* Can the batch be passed over on its header alone? */
static int skip_batch(kl_cursor *c, const kl_batch *b) {
  if (b->is_control) return 1;
  if (b->last_offset < c->lo) return 1;
  if (b->max_timestamp < c->bnd.ts_lo) return 1;
  /* Every record of a LogAppendTime batch (or of a single legacy message)
  ** carries the max timestamp: it also bounds from below. */
  if ((b->ts_type == KL_TS_APPEND || (b->magic < 2 && b->first_known)) &&
      b->max_timestamp > c->bnd.ts_hi) {
    return 1;
  }
  return 0;
}

static int record_in(const kl_cursor *c, const kl_record *r) {
  return r->offset >= c->lo && r->offset <= c->hi && r->timestamp >= c->bnd.ts_lo &&
         r->timestamp <= c->bnd.ts_hi;
}

/* Segments entirely below the lower time bound hold nothing. */
static kl_rc segment_wanted(kl_cursor *c, kl_segment *s, int *wanted, kl_err *err) {
  *wanted = 1;
  if (!has_ts_lo(c)) return KL_OK;
  kl_rc rc = kl_segment_tail(s, c->stats, err);
  if (rc == KL_OK && s->max_timestamp < c->bnd.ts_lo) *wanted = 0;
  return rc;
}

/* ---- forward ---- */

static kl_rc enter_forward(kl_cursor *c, kl_segment *s, kl_err *err) {
  for (; s; s = kl_log_next(c->log, s)) {
    if (s->base > c->hi) break;
    int wanted;
    kl_rc rc = segment_wanted(c, s, &wanted, err);
    if (rc) return rc;
    if (!wanted) continue;
    int64_t pos, slot;
    rc = kl_segment_seek_offset(s, c->lo, &pos, &slot, c->stats, err);
    if (rc == KL_OK && has_ts_lo(c)) {
      /* Both seeks give a position before which nothing qualifies. */
      int64_t tpos;
      rc = kl_segment_seek_time(s, c->bnd.ts_lo, &tpos, &slot, c->stats, err);
      if (tpos > pos) pos = tpos;
    }
    if (rc) return rc;
    c->seg = s;
    c->pos = pos;
    return KL_OK;
  }
  c->done = 1;
  return KL_OK;
}

static kl_rc next_forward(kl_cursor *c, kl_err *err) {
  kl_rc rc;
  for (;;) {
    if (c->in_batch) {
      rc = kl_records_next(&c->it, &c->rec, err);
      if (rc == KL_OK) {
        c->stats->records_decoded++;
        if (c->rec.offset > c->hi) break;
        if (record_in(c, &c->rec)) return KL_OK;
        continue;
      }
      c->in_batch = 0;
      if (rc != KL_DONE) return batch_error(c, rc, err);
    }
    rc = kl_segment_batch_at(c->seg, c->pos, &c->batch, c->stats, err);
    if (rc == KL_DONE) {
      rc = enter_forward(c, kl_log_next(c->log, c->seg), err);
      if (rc) return rc;
      if (c->done) return KL_DONE;
      continue;
    }
    if (rc) return rc;
    c->pos += c->batch.size;
    if (c->batch.first_known && c->batch.base_offset > c->hi) break;
    if (skip_batch(c, &c->batch)) {
      c->stats->batches_skipped++;
      continue;
    }
    rc = kl_segment_verify(c->seg, &c->batch, c->stats, err);
    if (rc) return rc;
    rc = kl_records_open(&c->it, c->env, &c->batch, &c->scratch, c->stats, err);
    if (rc) return batch_error(c, rc, err);
    c->in_batch = 1;
  }
  c->done = 1;
  return KL_DONE;
}

/* ---- backward ---- */

/* Collect the positions of the batches in [start, end) of the current
** segment (end < 0: to the end of the data).  KL_CORRUPT from a window
** that does not end exactly at end means the index entry was wrong: the
** caller retries from position 0. */
static kl_rc collect_window(kl_cursor *c, int64_t start, int64_t end, int *misfit, kl_err *err) {
  kl_batch b;
  int64_t pos = start;
  c->wn = 0;
  *misfit = 0;
  while (end < 0 || pos < end) {
    kl_err e = {0};
    kl_rc rc = kl_segment_batch_at(c->seg, pos, &b, c->stats, &e);
    if (rc == KL_DONE) break;
    if (rc) {
      if (start > 0) {
        *misfit = 1;
        return KL_OK;
      }
      return kl_err_set(err, rc, "%s", e.msg);
    }
    if (end < 0 && b.first_known && b.base_offset > c->hi) break;
    if (c->wn == c->wcap) {
      size_t cap = c->wcap ? c->wcap * 2 : 64;
      int64_t *p = kl_realloc(c->env, c->wpos, cap * sizeof *p);
      if (!p) return kl_err_set(err, KL_NOMEM, "out of memory");
      c->wpos = p;
      c->wcap = cap;
    }
    c->wpos[c->wn++] = pos;
    pos += b.size;
  }
  if (end >= 0 && pos != end) *misfit = 1;
  c->win_start = start;
  return KL_OK;
}

/* Load the window that ends where the current one starts, moving to
** earlier segments as needed.  Sets c->done when nothing is left. */
static kl_rc prev_window(kl_cursor *c, int first, kl_err *err) {
  kl_rc rc;
  for (;;) {
    int64_t start, end;
    if (first) {
      /* The first window of a segment: from the index floor of hi to the
      ** end of its data. */
      int64_t slot;
      rc = kl_segment_seek_offset(c->seg, c->hi, &start, &slot, c->stats, err);
      if (rc) return rc;
      c->win_slot = slot;
      end = -1;
    } else if (c->win_start == 0) {
      /* Segment exhausted: go to the previous one. */
      kl_segment *s = kl_log_prev(c->log, c->seg);
      for (; s; s = kl_log_prev(c->log, s)) {
        int wanted;
        rc = segment_wanted(c, s, &wanted, err);
        if (rc) return rc;
        if (wanted) break;
      }
      if (!s) {
        c->done = 1;
        return KL_OK;
      }
      c->seg = s;
      first = 1;
      continue;
    } else {
      end = c->win_start;
      c->win_slot--;
      start = c->win_slot >= 0 ? kl_index_position_at(&c->seg->oidx, c->win_slot) : 0;
    }
    int misfit;
    rc = collect_window(c, start, end, &misfit, err);
    if (rc) return rc;
    if (misfit) {
      /* The index disagrees with the log: rescan this stretch from 0. */
      c->stats->index_fallbacks++;
      c->win_slot = -1;
      rc = collect_window(c, 0, end, &misfit, err);
      if (rc) return rc;
      if (misfit) {
        return kl_err_set(err, KL_CORRUPT, "%s: position %lld: batches do not line up",
                          c->seg->log_path, (long long)end);
      }
    }
    return KL_OK;
  }
}

/* Decode every record of the batch at pos into c->recs. */
static kl_rc load_batch_records(kl_cursor *c, int64_t pos, int *used, kl_err *err) {
  *used = 0;
  kl_rc rc = kl_segment_batch_at(c->seg, pos, &c->batch, c->stats, err);
  if (rc) return rc == KL_DONE ? KL_OK : rc;
  if ((c->batch.first_known && c->batch.base_offset > c->hi) || skip_batch(c, &c->batch)) {
    c->stats->batches_skipped++;
    return KL_OK;
  }
  rc = kl_segment_verify(c->seg, &c->batch, c->stats, err);
  if (rc) return rc;
  kl_records it;
  rc = kl_records_open(&it, c->env, &c->batch, &c->scratch, c->stats, err);
  if (rc) return batch_error(c, rc, err);
  c->rn = 0;
  kl_record r;
  while ((rc = kl_records_next(&it, &r, err)) == KL_OK) {
    c->stats->records_decoded++;
    if (c->rn == c->rcap) {
      size_t cap = c->rcap ? c->rcap * 2 : 64;
      kl_record *p = kl_realloc(c->env, c->recs, cap * sizeof *p);
      if (!p) return kl_err_set(err, KL_NOMEM, "out of memory");
      c->recs = p;
      c->rcap = cap;
    }
    c->recs[c->rn++] = r;
  }
  if (rc != KL_DONE) return batch_error(c, rc, err);
  c->ridx = c->rn;
  *used = 1;
  return KL_OK;
}

static kl_rc next_backward(kl_cursor *c, kl_err *err) {
  kl_rc rc;
  for (;;) {
    while (c->ridx > 0) {
      kl_record *r = &c->recs[--c->ridx];
      if (r->offset < c->lo) goto done; /* everything earlier is lower */
      if (record_in(c, r)) {
        c->cur = r;
        return KL_OK;
      }
    }
    if (c->wn == 0) {
      rc = prev_window(c, 0, err);
      if (rc) return rc;
      if (c->done) return KL_DONE;
      continue;
    }
    int64_t pos = c->wpos[--c->wn];
    int used;
    rc = load_batch_records(c, pos, &used, err);
    if (rc) return rc;
    if (!used && c->batch.last_offset < c->lo && c->batch.size > 0) goto done;
  }
done:
  c->done = 1;
  return KL_DONE;
}

/* ---- common ---- */

kl_rc kl_cursor_start(kl_cursor *c, const kl_bounds *b, kl_err *err) {
  c->bnd = *b;
  c->lo = b->off_lo;
  c->hi = b->off_hi;
  c->done = 0;
  c->in_batch = 0;
  c->wn = c->rn = c->ridx = 0;
  c->seg = NULL;
  if (has_ts_lo(c)) {
    kl_time_lookup tl;
    kl_rc rc = kl_log_seek_time(c->log, b->ts_lo, &tl, err);
    if (rc) return rc;
    if (tl.status != KL_LOOKUP_OK) {
      c->done = 1;
      return KL_OK;
    }
    if (tl.offset > c->lo) c->lo = tl.offset;
  }
  if (c->lo > c->hi || b->ts_lo > b->ts_hi || !kl_log_first(c->log)) {
    c->done = 1;
    return KL_OK;
  }
  if (!b->desc) {
    kl_segment *s = kl_log_floor(c->log, c->lo);
    return enter_forward(c, s ? s : kl_log_first(c->log), err);
  }
  kl_segment *s = kl_log_floor(c->log, c->hi);
  if (!s) {
    c->done = 1;
    return KL_OK;
  }
  int wanted;
  kl_rc rc = segment_wanted(c, s, &wanted, err);
  if (rc) return rc;
  c->seg = s;
  if (!wanted) {
    c->win_start = 0; /* makes prev_window move to earlier segments */
    return prev_window(c, 0, err);
  }
  return prev_window(c, 1, err);
}

kl_rc kl_cursor_next(kl_cursor *c, kl_err *err) {
  if (c->done) return KL_DONE;
  kl_rc rc = c->bnd.desc ? next_backward(c, err) : next_forward(c, err);
  if (rc != KL_OK && rc != KL_DONE) c->done = 1;
  return rc;
}
