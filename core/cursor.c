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
  kl_record rec;            /* current record */
  kl_buf scratch;           /* decompressed payloads */
  int64_t pos;              /* forward: next batch position */
  int skip_corrupt;         /* KL_ON_CORRUPT_SKIP */
  uint64_t corrupt_skipped; /* damaged batches skipped */
  int have_prev;            /* forward: prev_last is set (same segment) */
  int64_t prev_last;        /* forward: last offset of the previous batch */

  /* Backward iteration only. */
  int64_t *wpos;            /* batch positions of the current window */
  size_t wn, wcap;
  int64_t win_slot;         /* offset index slot starting the window, -1: 0 */
  int64_t win_start;        /* window [win_start, win_end) */
  uint32_t *rpos;           /* where each record of the current batch
                            ** starts, relative to rbase: 4 bytes a record,
                            ** so a hostile batch of tiny records costs at
                            ** most 4/7 of its (capped) decompressed size */
  const uint8_t *rbase;     /* start of the batch's record bytes */
  kl_records rproto;        /* the batch's iterator, to decode one record */
  size_t rn, rcap;
  size_t ridx;              /* records still to produce: rpos[0..ridx) */
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
  kl_free(c->env, c->rpos);
  kl_free(c->env, c);
}

void kl_cursor_on_corrupt(kl_cursor *c, int mode) { c->skip_corrupt = mode == KL_ON_CORRUPT_SKIP; }
uint64_t kl_cursor_corrupt_skipped(const kl_cursor *c) { return c->corrupt_skipped; }

/* Skip mode: forget a corruption error and count the skip.  Returns
** whether the caller may go on (else rc stands). */
static int skip_damage(kl_cursor *c, kl_rc rc, kl_err *err) {
  if (rc != KL_CORRUPT || !c->skip_corrupt) return 0;
  kl_err_clear(err);
  c->corrupt_skipped++;
  return 1;
}

const kl_record *kl_cursor_record(const kl_cursor *c) { return &c->rec; }
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
    if (rc && skip_damage(c, rc, err)) rc = KL_OK, wanted = 1; /* no time pruning */
    if (rc) return rc;
    if (!wanted) continue;
    int64_t pos, slot;
    rc = kl_segment_seek_offset(s, c->lo, &pos, &slot, c->stats, err);
    if (rc == KL_OK && has_ts_lo(c)) {
      /* Both seeks give a position before which nothing qualifies. */
      int64_t tpos = 0;
      rc = kl_segment_seek_time(s, c->bnd.ts_lo, &tpos, &slot, c->stats, err);
      if (rc && skip_damage(c, rc, err)) rc = KL_OK, tpos = 0;
      if (tpos > pos) pos = tpos;
    }
    if (rc) return rc;
    c->seg = s;
    c->pos = pos;
    c->have_prev = 0;
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
    c->batch.size = 0;
    rc = kl_segment_batch_at(c->seg, c->pos, &c->batch, c->stats, err);
    if (rc && skip_damage(c, rc, err)) {
      /* A sane length lets the scan resynchronise; else the segment ends. */
      if (c->batch.size > 0) {
        c->pos += c->batch.size;
        continue;
      }
      rc = KL_DONE;
    }
    if (rc == KL_DONE) {
      rc = enter_forward(c, kl_log_next(c->log, c->seg), err);
      if (rc) return rc;
      if (c->done) return KL_DONE;
      continue;
    }
    if (rc) return rc;
    c->pos += c->batch.size;
    /* Offsets increase from batch to batch (a legacy wrapper's header only
    ** knows its last offset).  The base offset is not covered by the CRC. */
    int64_t first = c->batch.first_known ? c->batch.base_offset : c->batch.last_offset;
    int64_t prev_last = c->prev_last;
    int had_prev = c->have_prev;
    int regress = had_prev && first <= prev_last;
    c->have_prev = 1;
    c->prev_last = c->batch.last_offset;
    if (regress) {
      rc = kl_err_set(err, KL_CORRUPT,
                      "%s: position %lld: batch offsets %lld..%lld do not follow the previous "
                      "batch's last offset %lld", c->seg->log_path, (long long)c->batch.position,
                      (long long)first, (long long)c->batch.last_offset, (long long)prev_last);
      if (skip_damage(c, rc, err)) continue;
      return rc;
    }
    if (c->batch.first_known && c->batch.base_offset > c->hi) break;
    if (skip_batch(c, &c->batch)) {
      c->stats->batches_skipped++;
      continue;
    }
    /* A damaged batch's header does not move prev_last (its last offset
    ** delta may be the damage). */
    rc = kl_segment_verify(c->seg, &c->batch, c->stats, err);
    if (rc && skip_damage(c, rc, err)) {
      c->prev_last = prev_last;
      c->have_prev = had_prev;
      continue;
    }
    if (rc) return rc;
    rc = kl_records_open(&c->it, c->env, &c->batch, &c->scratch, c->stats, err);
    if (rc && skip_damage(c, rc, err)) continue;
    if (rc) return batch_error(c, rc, err);
    if (c->skip_corrupt) {
      /* Salvage produces a batch whole or not at all: decode it once first. */
      kl_records probe = c->it;
      kl_record r;
      kl_err e = {0};
      while ((rc = kl_records_next(&probe, &r, &e)) == KL_OK) {}
      if (rc != KL_DONE) {
        c->corrupt_skipped++;
        continue;
      }
    }
    if (c->batch.base_offset < c->lo) kl_records_skip(&c->it, c->lo);
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
    b.size = 0;
    kl_rc rc = kl_segment_batch_at(c->seg, pos, &b, c->stats, &e);
    if (rc == KL_DONE) break;
    if (rc == KL_CORRUPT && c->skip_corrupt) {
      /* Salvage: resynchronise on a sane length, else the data ends here. */
      if (b.size <= 0) {
        end = pos;
        break;
      }
      pos += b.size;
      continue;
    }
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
      /* Segment exhausted: go to the previous one, unless this one starts
      ** at or below the lower bound (nothing earlier can qualify). */
      if (c->seg->base <= c->lo) {
        c->done = 1;
        return KL_OK;
      }
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
  if (rc && skip_damage(c, rc, err)) return KL_OK;
  if (rc) return rc;
  kl_records it;
  rc = kl_records_open(&it, c->env, &c->batch, &c->scratch, c->stats, err);
  if (rc && skip_damage(c, rc, err)) return KL_OK;
  if (rc) return batch_error(c, rc, err);
  c->rn = 0;
  c->rproto = it;
  c->rbase = it.p;
  kl_record r;
  for (;;) {
    uint32_t at = (uint32_t)(it.p - c->rbase);
    if ((rc = kl_records_next(&it, &r, err)) != KL_OK) break;
    c->stats->records_decoded++;
    if (c->rn == c->rcap) {
      size_t cap = c->rcap ? c->rcap * 2 : 64;
      uint32_t *p = kl_realloc(c->env, c->rpos, cap * sizeof *p);
      if (!p) return kl_err_set(err, KL_NOMEM, "out of memory");
      c->rpos = p;
      c->rcap = cap;
    }
    c->rpos[c->rn++] = at;
  }
  if (rc != KL_DONE) {
    c->rn = 0;
    if (skip_damage(c, rc, err)) return KL_OK;
    return batch_error(c, rc, err);
  }
  c->ridx = c->rn;
  *used = 1;
  return KL_OK;
}

static kl_rc next_backward(kl_cursor *c, kl_err *err) {
  kl_rc rc;
  for (;;) {
    while (c->ridx > 0) {
      /* Decode the record again from where it starts: it decoded cleanly
      ** when the batch was loaded, so this cannot fail. */
      kl_records one = c->rproto;
      one.p = c->rbase + c->rpos[--c->ridx];
      one.remaining = 1;
      kl_record *r = &c->rec;
      if ((rc = kl_records_next(&one, r, err)) != KL_OK) return batch_error(c, rc, err);
      if (r->offset < c->lo) goto done; /* everything earlier is lower */
      if (record_in(c, r)) {
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
    if (rc == KL_CORRUPT) {
      /* The seek is only a shortcut (records are filtered by timestamp
      ** anyway): without it the scan meets the damage itself, and reports
      ** it with its file and position, or skips it. */
      kl_err_clear(err);
      tl.status = KL_LOOKUP_OK;
      tl.offset = c->lo;
    } else if (rc) {
      return rc;
    }
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
