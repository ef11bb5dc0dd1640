/*
** scan.c - Kafka's scan rules over one segment (see scan.h).
** Rules: format.md 2.1-2.2, behaviour.md 4, 6 and 7.3.
*/
#include "scan.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "codec.h"
#include "dating.h"
#include "os.h"

void kl_reader_init(kl_reader *rd, const kl_env *env, kl_stats *stats, int on_corrupt) {
  memset(rd, 0, sizeof *rd);
  rd->env = env;
  rd->stats = stats ? stats : &rd->own;
  rd->skip = on_corrupt == KL_ON_CORRUPT_SKIP;
  /* Context is a header or a few: a lookup peeks at the batch its index
  ** entry names, and reads on if it walks further. */
  rd->ctx.first = 1024;
}

void kl_reader_free(kl_reader *rd) {
  kl_window_free(&rd->win, rd->env);
  kl_window_free(&rd->ctx, rd->env);
  kl_buf_free(rd->env, &rd->scratch);
  kl_codec_ctx_free(&rd->codec);
}

void kl_reader_drop(kl_reader *rd) {
  kl_reader_free(rd);
  memset(&rd->win, 0, sizeof rd->win);
  memset(&rd->ctx, 0, sizeof rd->ctx);
  rd->ctx.first = 1024;
  memset(&rd->scratch, 0, sizeof rd->scratch);
  memset(&rd->codec, 0, sizeof rd->codec);
  kl_reader_forget(rd);
  rd->held_len = 0;
  rd->held_part = 0;
}

void kl_reader_forget(kl_reader *rd) {
  rd->held_seg = NULL;
  kl_window *w[2] = {&rd->win, &rd->ctx};
  for (int i = 0; i < 2; i++) {
    w[i]->f = NULL;
    w[i]->len = 0;
    w[i]->next = 0;
    w[i]->min_read = 0;
  }
}

void kl_reader_trim(kl_reader *rd) {
  if (rd->win.buf.cap > KL_READER_KEEP) kl_window_free(&rd->win, rd->env);
  if (rd->ctx.buf.cap > KL_READER_KEEP) kl_window_free(&rd->ctx, rd->env);
  if (rd->scratch.cap > KL_READER_KEEP) kl_buf_free(rd->env, &rd->scratch);
  rd->held_seg = NULL;
}

void kl_reader_reset(kl_reader *rd, kl_stats *stats, int on_corrupt) {
  memset(&rd->own, 0, sizeof rd->own);
  rd->stats = stats ? stats : &rd->own;
  rd->skip = on_corrupt == KL_ON_CORRUPT_SKIP;
}

const char *kl_damage_name(int kind) {
  switch (kind) {
    case KL_DMG_CRC: return "crc_mismatch";
    case KL_DMG_RECORDS: return "bad_records";
    case KL_DMG_HEADER: return "bad_header";
    case KL_DMG_REGRESSION: return "offset_regression";
    case KL_DMG_BELOW_BASE: return "offset_below_base";
    case KL_DMG_OVERLAP: return "segment_overlap";
    case KL_DMG_MAGIC: return "bad_magic";
    case KL_DMG_LENGTH: return "bad_batch_length";
    case KL_DMG_TRUNCATED: return "truncated_batch";
    case KL_DMG_TRAILING: return "trailing_bytes";
    case KL_DMG_ZERO_TAIL: return "zero_filled_tail";
  }
  return "damage";
}

/* ---- one entry ---- */

/* What lies at a position, before any CRC is looked at. */
enum {
  E_BATCH,                  /* a header that parses, the entry fits */
  E_END,                    /* the end of the file */
  E_ZEROS,                  /* zeros from here to the end of the file */
  E_SHORT,                  /* fewer than 18 bytes left, not all zero */
  E_TOOLONG,                /* the entry extends past the end of the file */
  E_TRAILING,               /* zero offset and length, then data */
  E_LENGTH,                 /* length below 14 */
  E_MAGIC,                  /* unknown magic */
  E_HEADER                  /* a field is invalid, the length is sane */
};

/* Is the file zero from pos on?  Remembered: a preallocated segment's
** zeros are looked at once, not by every scan that reaches them. */
static kl_rc zero_from(kl_segment *s, int64_t pos, int *zero, kl_err *err) {
  if (s->zero_from >= 0 && pos >= s->zero_from) {
    *zero = 1;
    return KL_OK;
  }
  kl_rc rc = kl_file_zero_from(&s->log, pos, zero, err);
  if (rc == KL_OK && *zero) s->zero_from = pos;
  return rc;
}

/* Classify the entry at pos, read through window w; for E_BATCH and
** E_HEADER, *b holds what parsed (b->size is the entry's size) and
** b->bytes its first bytes. */
static kl_rc entry_in(kl_reader *rd, kl_window *w, kl_segment *s, int64_t pos, kl_batch *b,
                      int *st, char *msg, size_t msgn, kl_err *err) {
  int64_t avail = s->size - pos;
  memset(b, 0, sizeof *b);
  b->position = pos;
  msg[0] = 0;
  if (avail <= 0) {
    *st = E_END;
    return KL_OK;
  }
  int zero;
  kl_rc rc;
  if (avail < KL_ENTRY_MIN) { /* KL_ENTRY_SHORT: p is not read */
    if ((rc = zero_from(s, pos, &zero, err)) != KL_OK) return rc;
    *st = zero ? E_ZEROS : E_SHORT;
    return KL_OK;
  }
  const uint8_t *p;
  size_t n = avail < KL_V2_HEADER ? (size_t)avail : KL_V2_HEADER;
  if (w == &rd->win) w->min_read = (size_t)s->read_hint;
  const kl_window *peer = w == &rd->win ? &rd->ctx : &rd->win;
  if ((rc = kl_window_get(w, peer, &s->log, pos, n, &p, rd->stats, err)) != KL_OK) return rc;
  rd->stats->batch_headers++;
  int32_t len;
  int cls = kl_entry_class(p, avail, &len);
  if (cls == KL_ENTRY_LENGTH) {
    int head_zero = 1;
    for (int i = 0; i < KL_LOG_OVERHEAD; i++) head_zero &= p[i] == 0;
    if (head_zero) {
      if ((rc = zero_from(s, pos, &zero, err)) != KL_OK) return rc;
      if (zero) {
        *st = E_ZEROS;
        return KL_OK;
      }
      *st = E_TRAILING;
      snprintf(msg, msgn, "%lld bytes after the last batch are not a batch (zero offset and "
               "length, then non-zero bytes)", (long long)avail);
      return KL_OK;
    }
    *st = E_LENGTH;
    snprintf(msg, msgn, "entry length %d is below the minimum of 14", len);
    return KL_OK;
  }
  if (cls == KL_ENTRY_MAGIC) {
    *st = E_MAGIC;
    snprintf(msg, msgn, "unknown magic %d", (int8_t)p[16]);
    return KL_OK;
  }
  if (cls == KL_ENTRY_PAST_END) {
    *st = E_TOOLONG;
    b->base_offset = kl_get_i64(p);
    snprintf(msg, msgn, "entry of %lld bytes extends past the end of the file (%lld bytes left)",
             (long long)len + KL_LOG_OVERHEAD, (long long)avail);
    return KL_OK;
  }
  kl_err e = {0};
  rc = kl_batch_parse(p, (size_t)avail, b, &e);
  b->position = pos;
  if (rc == KL_CORRUPT) {
    *st = E_HEADER;
    snprintf(msg, msgn, "%s", e.msg);
    return KL_OK;
  }
  *st = E_BATCH;
  /* Later reads of this segment take a header and a batch of this size at
  ** once (up to the window's largest read). */
  s->read_hint = b->size + KL_V2_HEADER < (1 << 20) ? b->size + KL_V2_HEADER : (1 << 20);
  return rc;
}

static kl_rc entry_at(kl_reader *rd, kl_segment *s, int64_t pos, kl_batch *b, int *st, char *msg,
                      size_t msgn, kl_err *err) {
  return entry_in(rd, &rd->win, s, pos, b, st, msg, msgn, err);
}

/* Read a whole batch into the window and check its CRC (once per batch
** and segment, while it is remembered).  *ok = 0 with msg on a mismatch. */
static kl_rc verify(kl_reader *rd, kl_segment *s, kl_batch *b, int *ok, char *msg, size_t msgn,
                    kl_err *err) {
  const uint8_t *p;
  kl_rc rc = kl_window_get(&rd->win, &rd->ctx, &s->log, b->position, (size_t)b->size, &p,
                           rd->stats, err);
  if (rc) return rc;
  b->bytes = p;
  *ok = 1;
  if (kl_segment_verified(s, b->position, b->size)) return KL_OK;
  kl_err e = {0};
  rd->stats->crc_checks++;
  if (kl_batch_verify(b, &e) != KL_OK) {
    *ok = 0;
    snprintf(msg, msgn, "%s", e.msg);
    return KL_OK;
  }
  kl_segment_set_verified(s, b->position, b->size);
  return KL_OK;
}

/* Does a batch that verifies start at pos? */
static kl_rc verifies_at(kl_reader *rd, kl_segment *s, int64_t pos, kl_batch *b, int *ok,
                         kl_err *err) {
  char msg[600];
  int st;
  *ok = 0;
  if (pos < 0) return KL_OK;
  kl_rc rc = entry_at(rd, s, pos, b, &st, msg, sizeof msg, err);
  if (rc || st != E_BATCH) return rc;
  return verify(rd, s, b, ok, msg, sizeof msg, err);
}

static kl_rc offset_index(kl_reader *rd, kl_segment *s, kl_index **out, kl_err *err) {
  kl_rc rc = kl_segment_index(s, KL_INDEX_OFFSET, out, err);
  if (rc) return rc;
  kl_index *ix = *out;
  if (ix->zero_first) {
    /* (base, 0): real when the first batch starts at the base offset. */
    kl_batch b;
    int ok;
    if ((rc = verifies_at(rd, s, 0, &b, &ok, err)) != KL_OK) return rc;
    if (ok && (!b.first_known || b.base_offset == s->base)) kl_index_keep_zero_first(ix);
    else ix->zero_first = 0; /* decided: a preallocated slot */
  }
  return KL_OK;
}

/* ---- resume points ---- */

static kl_rc index_error(kl_index *ix, kl_err *err) {
  return kl_index_error(ix, err);
}

/* The first offset index entry past pos whose batch verifies, or -1. */
static kl_rc next_sync(kl_reader *rd, kl_segment *s, int64_t pos, int64_t *sync, kl_err *err) {
  kl_index *ix;
  *sync = -1;
  kl_rc rc = offset_index(rd, s, &ix, err);
  if (rc) return rc;
  int64_t lo = 0, hi = ix->n; /* first slot with position > pos */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (kl_index_position_at(ix, mid) > pos) hi = mid;
    else lo = mid + 1;
  }
  for (int64_t j = lo; j < ix->n; j++) {
    int64_t p = kl_index_position_at(ix, j);
    if (kl_index_failed(ix)) return index_error(ix, err);
    if (p <= pos) continue;
    kl_batch b;
    int ok;
    if ((rc = verifies_at(rd, s, p, &b, &ok, err)) != KL_OK) return rc;
    if (ok) {
      *sync = p;
      return KL_OK;
    }
  }
  return kl_index_failed(ix) ? index_error(ix, err) : KL_OK;
}

/* Where the walk resumes after damage at pos: the nearer of cand (pos + a
** sane length, -1 if none) when an entry parses there, and the next sync
** point; the file size when there is neither.  A damaged batch followed by
** a sound length chain is thus passed over batch by batch, while a length
** that leads into garbage resumes at the sync point, never beyond it. */
static kl_rc resume_after(kl_reader *rd, kl_segment *s, int64_t pos, int64_t cand, int64_t *out,
                          kl_err *err) {
  int64_t sync;
  kl_rc rc = next_sync(rd, s, pos, &sync, err);
  if (rc) return rc;
  *out = sync < 0 ? s->size : sync;
  if (cand > pos && cand < *out) {
    kl_batch b;
    char msg[600];
    int st;
    if ((rc = entry_at(rd, s, cand, &b, &st, msg, sizeof msg, err)) != KL_OK) return rc;
    if (st == E_BATCH) *out = cand;
  }
  return KL_OK;
}

/* ---- the walk ---- */

static void scan_init(kl_scan *sc, kl_reader *rd, kl_segment *s, int64_t pos, int64_t stop,
                      int64_t verify_from) {
  memset(sc, 0, sizeof *sc);
  sc->rd = rd;
  sc->seg = s;
  sc->pos = pos;
  sc->stop = stop;
  sc->stop_offset = INT64_MAX;
  sc->verify_from = verify_from > pos ? verify_from : pos;
}

/* Open s and, in skip mode, know its salvage map. */
static kl_rc prepare(kl_reader *rd, kl_segment *s, kl_err *err) {
  kl_rc rc = kl_segment_open(s, rd->stats, err);
  if (rc == KL_OK && rd->skip) rc = kl_scan_salvage(rd, s, err);
  return rc;
}

kl_rc kl_scan_start(kl_scan *sc, kl_reader *rd, kl_segment *s, int64_t pos, int64_t stop,
                    int64_t verify_from, kl_err *err) {
  scan_init(sc, rd, s, pos, stop, verify_from);
  sc->seg = NULL;
  kl_rc rc = prepare(rd, s, err);
  if (rc) return rc;
  kl_segment_pin(s);
  sc->seg = s;
  sc->follow = rd->skip;
  return KL_OK;
}

void kl_scan_end(kl_scan *sc) {
  if (sc->seg) kl_segment_unpin(sc->seg);
  sc->seg = NULL;
}

/* Bytes that end or break where they should not may be a file changed
** under the walk (truncated, rewritten): then that is what to report. */
static kl_rc file_changed(kl_segment *s, kl_err *err) {
  if (kl_file_same(&s->log)) return KL_OK;
  return kl_err_set(err, KL_IO, "%s: the file changed while being read (%lld bytes when opened)",
                    s->log_path, (long long)s->size);
}

/* Record damage at pos and where the walk resumes. */
static kl_rc damage(kl_scan *sc, int kind, int64_t pos, int64_t resume, const kl_batch *b,
                    const char *what, kl_err *err) {
  kl_segment *s = sc->seg;
  kl_rc rc = file_changed(s, err);
  if (rc) return rc;
  sc->dmg.kind = kind;
  sc->dmg.pos = pos;
  sc->dmg.resume = resume;
  if (b) {
    sc->dmg.b = *b;
    sc->dmg.b.bytes = NULL;
  } else {
    memset(&sc->dmg.b, 0, sizeof sc->dmg.b);
  }
  sc->pos = resume;
  char tail[96];
  if (resume >= s->size) snprintf(tail, sizeof tail, "; the rest of the segment cannot be read");
  else if (!b || b->size <= 0 || resume > pos + b->size)
    snprintf(tail, sizeof tail, "; reading resumes at position %lld", (long long)resume);
  else tail[0] = 0;
  snprintf(sc->dmg.what, sizeof sc->dmg.what, "%s%s", what, tail);
  return kl_err_set(err, KL_CORRUPT, "%s: position %lld: %s", s->log_path, (long long)pos,
                    sc->dmg.what);
}

/* The data of the last segment ends at pos, the way an append in progress
** or preallocation ends it: not damage, but worth telling (the check). */
static kl_rc data_end(kl_scan *sc, int end, int64_t pos, const char *what) {
  sc->end = end;
  sc->end_pos = pos;
  memset(&sc->dmg, 0, sizeof sc->dmg);
  sc->dmg.kind = end == KL_END_ZEROS ? KL_DMG_ZERO_TAIL : KL_DMG_TRUNCATED;
  sc->dmg.pos = pos;
  sc->dmg.resume = sc->seg->size;
  snprintf(sc->dmg.what, sizeof sc->dmg.what, "%s", what);
  return KL_DONE;
}

/* The longest context stretch read at once (a longer one is read header
** by header). */
#define KL_CONTEXT_READ_MAX ((int64_t)64 << 10)

/* Walk the context stretch [pos, verify_from): offsets only.  If it does
** not lead exactly to verify_from, the walk starts there without it. */
static kl_rc walk_context(kl_scan *sc, kl_err *err) {
  kl_segment *s = sc->seg;
  /* The stretch lies between two index entries (Kafka's index interval,
  ** 4 KiB by default, or one batch): read it whole with the header at its
  ** end (the entry a seek checks), or a log of small batches pays a read
  ** for each header, and again for a second seek to the same entry. */
  kl_window *w = &sc->rd->ctx;
  size_t was = w->min_read;
  int64_t span = sc->verify_from - sc->pos + KL_V2_HEADER;
  if (span > (int64_t)was && span <= KL_CONTEXT_READ_MAX) w->min_read = (size_t)span;
  kl_rc rc = KL_OK;
  while (sc->pos < sc->verify_from) {
    kl_batch b;
    char msg[600];
    int st;
    if ((rc = entry_in(sc->rd, w, s, sc->pos, &b, &st, msg, sizeof msg, err)) != KL_OK) break;
    if (st != E_BATCH || sc->pos + b.size > sc->verify_from) {
      sc->have_prev = 0;
      break;
    }
    sc->have_prev = 1;
    sc->prev_last = b.last_offset;
    sc->prev_pos = sc->pos;
    sc->prev_unverified = 1;
    sc->pos += b.size;
  }
  w->min_read = was;
  if (rc) return rc;
  sc->pos = sc->verify_from;
  return KL_OK;
}

/* A Kafka-rule walker (cyclomatic complexity above 25 on purpose): each
** branch is one of the conditions on which Kafka's LogSegment.recover and
** FileRecords iteration stop, skip or fail, in Kafka's order; split, the
** order that decides which damage is reported would be spread out. */
kl_rc kl_scan_next(kl_scan *sc, kl_batch *b, kl_err *err) {
  kl_segment *s = sc->seg;
  kl_reader *rd = sc->rd;
  kl_rc rc;
  char msg[600];
  if (sc->pos < sc->verify_from && (rc = walk_context(sc, err)) != KL_OK) return rc;
  for (;;) {
    int64_t pos = sc->pos;
    if (pos >= sc->stop) { /* before passing a hole that starts there */
      sc->end = KL_END_STOP;
      sc->end_pos = pos;
      return KL_DONE;
    }
    if (sc->follow && s->salvage.n) {
      const kl_hole *h = kl_segment_hole_at(s, pos);
      if (h) {
        sc->pos = h->end;
        rd->stats->batches_skipped++;
        continue;
      }
    }
    int st;
    if ((rc = entry_at(rd, s, pos, b, &st, msg, sizeof msg, err)) != KL_OK) return rc;
    int64_t resume;
    switch (st) {
      case E_END:
        /* A segment that is not the last ends where it did when opened,
        ** or it changed (Kafka never rewrites one). */
        if (!s->is_last && (rc = file_changed(s, err)) != KL_OK) return rc;
        sc->end = KL_END_CLEAN;
        sc->end_pos = pos;
        return KL_DONE;
      case E_ZEROS:
        if (s->is_last) {
          snprintf(msg, sizeof msg, "%lld zero bytes after the last batch (preallocated segment)",
                   (long long)(s->size - pos));
          return data_end(sc, KL_END_ZEROS, pos, msg);
        }
        snprintf(msg, sizeof msg, "%lld zero bytes after the last batch of a segment that is not "
                 "the last (Kafka trims a segment when it rolls)", (long long)(s->size - pos));
        return damage(sc, KL_DMG_ZERO_TAIL, pos, s->size, NULL, msg, err);
      case E_SHORT:
        if (s->is_last) {
          snprintf(msg, sizeof msg, "incomplete entry header: %lld bytes at the end of the file "
                   "(an append in progress, or a torn write)", (long long)(s->size - pos));
          return data_end(sc, KL_END_TORN, pos, msg);
        }
        snprintf(msg, sizeof msg, "incomplete entry header: %lld bytes at the end of a segment "
                 "that is not the last", (long long)(s->size - pos));
        return damage(sc, KL_DMG_TRUNCATED, pos, s->size, NULL, msg, err);
      case E_TOOLONG: {
        /* A torn append, where Kafka's scan stops - unless verified
        ** batches follow: then the length itself is damaged. */
        int64_t sync;
        if ((rc = next_sync(rd, s, pos, &sync, err)) != KL_OK) return rc;
        if (s->is_last && sync < 0) {
          snprintf(msg + strlen(msg), sizeof msg - strlen(msg),
                   " (an append in progress, or a torn write)");
          return data_end(sc, KL_END_TORN, pos, msg);
        }
        return damage(sc, KL_DMG_TRUNCATED, pos, sync < 0 ? s->size : sync, NULL, msg, err);
      }
      case E_TRAILING:
      case E_LENGTH:
      case E_MAGIC:
        if ((rc = resume_after(rd, s, pos, -1, &resume, err)) != KL_OK) return rc;
        return damage(sc, st == E_TRAILING ? KL_DMG_TRAILING : st == E_LENGTH ? KL_DMG_LENGTH
                                                                              : KL_DMG_MAGIC,
                      pos, resume, NULL, msg, err);
      case E_HEADER: {
        kl_batch h = *b;
        if ((rc = resume_after(rd, s, pos, pos + h.size, &resume, err)) != KL_OK) return rc;
        int kind = h.magic == 2 && h.size < KL_V2_HEADER ? KL_DMG_LENGTH : KL_DMG_HEADER;
        return damage(sc, kind, pos, resume, &h, msg, err);
      }
      default: break;
    }
    if (pos + b->size > sc->stop ||
        (b->first_known && b->base_offset > sc->stop_offset && b->last_offset < s->next_base &&
         (b->magic < 2 || b->base_offset >= s->base))) {
      /* The caller's stop is not an entry boundary, or this batch is past
      ** its offsets (and where the segment's offsets are: a batch whose
      ** offsets are out of place is damage, which the walk must meet). */
      sc->end = KL_END_STOP;
      sc->end_pos = pos;
      return KL_DONE;
    }
    int ok;
    if ((rc = verify(rd, s, b, &ok, msg, sizeof msg, err)) != KL_OK) return rc;
    if (!ok) {
      kl_batch h = *b;
      if ((rc = resume_after(rd, s, pos, pos + h.size, &resume, err)) != KL_OK) return rc;
      return damage(sc, KL_DMG_CRC, pos, resume, &h, msg, err);
    }
    if (b->magic == 2 && b->base_offset < s->base) {
      snprintf(msg, sizeof msg, "batch offset %lld is below the segment base %lld",
               (long long)b->base_offset, (long long)s->base);
      return damage(sc, KL_DMG_BELOW_BASE, pos, pos + b->size, b, msg, err);
    }
    /* Offsets increase from batch to batch (a legacy wrapper's header only
    ** knows its last offset).  The base offset is not covered by the CRC. */
    int64_t first = b->first_known ? b->base_offset : b->last_offset;
    if (sc->have_prev && first <= sc->prev_last) {
      if (sc->prev_unverified) {
        /* The decision rests on a context batch: it must hold first. */
        kl_batch pb = *b, prev;
        int prev_ok;
        if ((rc = verifies_at(rd, s, sc->prev_pos, &prev, &prev_ok, err)) != KL_OK) return rc;
        sc->prev_unverified = 0;
        if (!prev_ok) {
          snprintf(msg, sizeof msg, "the batch before position %lld does not verify (CRC)",
                   (long long)pos);
          return damage(sc, KL_DMG_CRC, sc->prev_pos, pos, NULL, msg, err);
        }
        /* Read again: the check moved the window. */
        if ((rc = verify(rd, s, &pb, &ok, msg, sizeof msg, err)) != KL_OK) return rc;
        *b = pb;
      }
      snprintf(msg, sizeof msg, "batch offsets %lld..%lld do not follow the previous batch's "
               "last offset %lld", (long long)first, (long long)b->last_offset,
               (long long)sc->prev_last);
      return damage(sc, KL_DMG_REGRESSION, pos, pos + b->size, b, msg, err);
    }
    if (b->last_offset >= s->next_base) {
      snprintf(msg, sizeof msg, "batch offsets %lld..%lld reach the next segment, based at %lld",
               (long long)first, (long long)b->last_offset, (long long)s->next_base);
      return damage(sc, KL_DMG_OVERLAP, pos, pos + b->size, b, msg, err);
    }
    sc->have_prev = 1;
    sc->prev_last = b->last_offset;
    sc->prev_pos = pos;
    sc->prev_unverified = 0;
    sc->pos = pos + b->size;
    return KL_OK;
  }
}

kl_rc kl_scan_batch_error(const kl_segment *s, int64_t pos, kl_rc rc, kl_err *err) {
  if (rc == KL_CORRUPT && err && err->rc == KL_CORRUPT) {
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    kl_err_clear(err);
    kl_err_set(err, rc, "%s: position %lld: %s", s->log_path, (long long)pos, m);
  }
  return rc;
}

/* Does the reader's scratch hold batch b of s, decompressed? */
static int holds_batch(const kl_reader *rd, const kl_segment *s, const kl_batch *b) {
  return rd->held_seg == s && rd->held_pos == b->position && rd->held_size == b->size;
}

kl_rc kl_reader_prefix(kl_reader *rd, const kl_segment *s, const kl_batch *b, size_t need,
                       const uint8_t **p, kl_err *err) {
  if (holds_batch(rd, s, b) && rd->held_len >= need) {
    *p = rd->scratch.p;
    return KL_OK;
  }
  rd->held_seg = NULL;
  int whole;
  kl_rc rc = kl_codec_decompress_prefix(rd->env, &rd->codec, b->codec, 2, b->bytes + KL_V2_HEADER,
                                        (size_t)b->size - KL_V2_HEADER, &rd->scratch,
                                        KL_MAX_BATCH_BYTES, need, &whole, err);
  if (rc) return kl_scan_batch_error(s, b->position, rc, err);
  rd->stats->bytes_decompressed += rd->scratch.len;
  if (rd->scratch.len < need) {
    return kl_err_set(err, KL_CORRUPT, "%s: position %lld: the records decompress to %zu bytes, "
                      "not the %zu they did", s->log_path, (long long)b->position,
                      rd->scratch.len, need);
  }
  rd->held_seg = s;
  rd->held_pos = b->position;
  rd->held_size = b->size;
  rd->held_len = rd->scratch.len;
  rd->held_part = 1;
  *p = rd->scratch.p;
  return KL_OK;
}

kl_rc kl_reader_records(kl_reader *rd, const kl_segment *s, const kl_batch *b, kl_records *it,
                        kl_err *err) {
  if (b->codec != KL_CODEC_NONE && holds_batch(rd, s, b) && !rd->held_part) {
    *it = rd->held;
    rd->stats->batches_decoded++;
    return KL_OK;
  }
  rd->held_seg = NULL;
  kl_rc rc = kl_records_open(it, rd->env, &rd->codec, b, &rd->scratch, rd->stats, err);
  if (rc) return kl_scan_batch_error(s, b->position, rc, err);
  if (b->codec != KL_CODEC_NONE) {
    rd->held = *it;
    rd->held_seg = s;
    rd->held_pos = b->position;
    rd->held_size = b->size;
    rd->held_len = rd->scratch.len;
    rd->held_part = 0;
  }
  return KL_OK;
}

kl_rc kl_scan_records(kl_scan *sc, const kl_batch *b, kl_records *it, kl_err *err) {
  return kl_reader_records(sc->rd, sc->seg, b, it, err);
}

/* ---- the salvage map ---- */

/* Count batch b, the next the walk keeps, into tail t. */
static void tail_add(kl_tail *t, const kl_batch *b) {
  if (b->max_timestamp > t->max_timestamp) {
    t->max_timestamp = b->max_timestamp;
    t->max_ts_offset = b->last_offset;
  }
  t->next_offset = b->last_offset + 1;
  t->end = b->position + b->size;
}

kl_rc kl_scan_salvage(kl_reader *rd, kl_segment *s, kl_err *err) {
  if (s->salvage.known) return KL_OK;
  kl_rc rc = kl_segment_open(s, rd->stats, err);
  if (rc) return rc;
  kl_scan sc;
  scan_init(&sc, rd, s, 0, INT64_MAX, 0);
  kl_tail t = {1, s->base, -1, s->base, 0};
  s->salvage.n = 0;
  for (;;) {
    kl_batch b;
    kl_err e = {0};
    rc = kl_scan_next(&sc, &b, &e);
    if (rc == KL_OK) {
      tail_add(&t, &b);
    } else if (rc == KL_CORRUPT) {
      if ((rc = kl_segment_add_hole(s, sc.dmg.pos, sc.dmg.resume, sc.dmg.kind)) != KL_OK) {
        return kl_err_set(err, rc, "out of memory reading %s", s->log_path);
      }
    } else if (rc == KL_DONE) {
      break;
    } else {
      s->salvage.n = 0;
      return kl_err_set(err, rc, "%s", e.msg);
    }
  }
  s->salvage.tail = t;
  s->salvage.known = 1;
  return KL_OK;
}

/* ---- where walks start ---- */

/*
** Does legacy compressed wrapper b (its bytes readable, its CRC checked)
** start at or below target?  Its header knows only its last offset, and
** the index entry naming it cannot stand for its first: an entry of a
** segment renamed below its base (or of an index copied from elsewhere) is
** off by the difference, and agrees with the header all the same.  The
** first offset is in its records, opened into the reader's scratch, where
** the walk finds them again.  Records that do not decode make it not
** start there: the walk from earlier meets that damage itself.
*/
static kl_rc wrapper_starts_by(kl_reader *rd, kl_segment *s, const kl_batch *b, int64_t target,
                               int *holds, kl_err *err) {
  kl_records it;
  kl_err e = {0};
  kl_rc rc = kl_reader_records(rd, s, b, &it, &e);
  if (rc == KL_CORRUPT) return KL_OK;
  if (rc) return kl_err_set(err, rc, "%s", e.msg);
  *holds = it.b.base_offset <= target;
  return KL_OK;
}

/*
** Is the offset index entry in slot usable for a walk towards target?  The
** batch it points to must be intact and must not start after target: then,
** offsets being increasing in a log, nothing at or above target lies before
** it.  For a legacy compressed wrapper the header tells that much when its
** last offset is at or below target; otherwise the first offset is read
** from its records (wrapper_starts_by).  In skip mode the batch must also
** be one the canonical walk keeps.
**
** "Intact" is the CRC, unless the entry witnesses the header: since Kafka
** 2.0 an entry's key is the last offset of the batch it points to, written
** from the batch as it was appended, so a header whose offsets agree with
** it exactly is the batch the entry was made for (*size is then set; a
** walk that needs its records still checks the CRC).  An entry that
** points anywhere else, or at damage, does not hold: the walk starts
** earlier and meets what is there itself.
*/
static kl_rc entry_holds(kl_reader *rd, kl_segment *s, kl_index *ix, int64_t slot, int64_t target,
                         int *holds, int32_t *witnessed_size, kl_err *err) {
  int64_t key = kl_index_offset_at(ix, slot);
  int64_t pos = kl_index_position_at(ix, slot);
  *holds = 0;
  if (witnessed_size) *witnessed_size = 0;
  if (pos <= 0 || key > target) return KL_OK;
  if (slot > 0 && (kl_index_offset_at(ix, slot - 1) >= key ||
                   kl_index_position_at(ix, slot - 1) >= pos)) {
    return KL_OK;
  }
  if (rd->skip && kl_segment_hole_at(s, pos)) return KL_OK;
  kl_batch b;
  char msg[600];
  int st;
  kl_rc rc;
  /* A batch walked once is known by its fact: its header is not read again
  ** (a backward scan asks this of every index entry it passes). */
  const kl_fact *f = rd->skip ? NULL : kl_segment_fact(s, pos);
  if (f) {
    b = f->b;
  } else if ((rc = entry_in(rd, &rd->ctx, s, pos, &b, &st, msg, sizeof msg, err)) != KL_OK ||
             st != E_BATCH) {
    return rc;
  }
  if (b.first_known && b.base_offset <= key && b.last_offset == key) {
    if (witnessed_size) *witnessed_size = b.size;
    *holds = 1;
    return KL_OK;
  }
  int ok;
  if (!f && ((rc = verify(rd, s, &b, &ok, msg, sizeof msg, err)) != KL_OK || !ok)) return rc;
  *holds = (b.first_known ? b.base_offset : b.last_offset) <= target;
  if (*holds || b.first_known) return KL_OK;
  if (f && ((rc = verify(rd, s, &b, &ok, msg, sizeof msg, err)) != KL_OK || !ok)) return rc;
  return wrapper_starts_by(rd, s, &b, target, holds, err);
}

static void seek_none(kl_segment *s, kl_seek *out) {
  out->slot = -1;
  out->index_offset = s->base;
  out->index_position = 0;
  out->start = 0;
  out->verify_from = 0;
  out->ti_slot = -1;
}

kl_rc kl_scan_seek_offset(kl_reader *rd, kl_segment *s, int64_t target, kl_seek *out,
                          kl_err *err) {
  seek_none(s, out);
  kl_index *ix;
  kl_rc rc = prepare(rd, s, err);
  /* At or below the base the walk starts at position 0 whatever the index
  ** says: a query from a log's start (its first row, offset = 0 in every
  ** partition) opens no index. */
  if (rc || target <= s->base) return rc;
  if ((rc = offset_index(rd, s, &ix, err)) != KL_OK) return rc;
  if (ix->unusable) {
    rd->stats->index_fallbacks++;
    return KL_OK;
  }
  int64_t i = kl_index_floor(ix, target, rd->stats);
  if (kl_index_failed(ix)) return index_error(ix, err);
  if (i < 0) return KL_OK;
  if (i == 0 && kl_index_position_at(ix, 0) == 0) return KL_OK; /* (base, 0): from 0 anyway */
  int holds;
  int32_t wsize;
  if ((rc = entry_holds(rd, s, ix, i, target, &holds, &wsize, err)) != KL_OK) return rc;
  if (!holds) {
    rd->stats->index_fallbacks++;
    return KL_OK;
  }
  out->slot = i;
  out->index_offset = kl_index_offset_at(ix, i);
  out->index_position = out->start = out->verify_from = kl_index_position_at(ix, i);
  if (wsize > 0 && out->index_offset < target) {
    /* The entry's batch ends below target (the entry says so): it is the
    ** context of the walk, whose own batches start after it. */
    out->verify_from += wsize;
  } else if (!rd->skip) {
    /* One entry earlier (or from the segment's start), so that the walk
    ** knows the batch before the slot's and can tell whether the slot's
    ** batch follows it (the salvage map decides that in skip mode).  Only
    ** offsets are read there, and a walk that does not lead to the slot's
    ** position drops them (walk_context); entry_holds found the entry
    ** before in order with the slot's. */
    out->start = i > 0 ? kl_index_position_at(ix, i - 1) : 0;
  }
  return kl_index_failed(ix) ? index_error(ix, err) : KL_OK;
}

kl_rc kl_scan_checkpoint(kl_reader *rd, kl_segment *s, int64_t below, int64_t *slot, int64_t *pos,
                         kl_err *err) {
  kl_index *ix;
  *slot = -1;
  *pos = 0;
  kl_rc rc = prepare(rd, s, err);
  if (rc == KL_OK) rc = offset_index(rd, s, &ix, err);
  if (rc) return rc;
  for (int64_t j = (below < ix->n ? below : ix->n) - 1; j >= 0; j--) {
    int holds;
    if ((rc = entry_holds(rd, s, ix, j, kl_index_offset_at(ix, j), &holds, NULL, err)) != KL_OK) {
      return rc;
    }
    if (kl_index_failed(ix)) return index_error(ix, err);
    if (holds) {
      *slot = j;
      *pos = kl_index_position_at(ix, j);
      return KL_OK;
    }
    rd->stats->index_fallbacks++;
  }
  return KL_OK;
}

kl_rc kl_scan_find_offset(kl_reader *rd, kl_segment *s, int64_t target, kl_batch *b,
                          kl_err *err) {
  kl_seek sk;
  kl_rc rc = kl_scan_seek_offset(rd, s, target, &sk, err);
  if (rc) return rc;
  const kl_fact *f;
  int known = rd->skip ? 0 : kl_segment_facts_follow(s, sk.verify_from, target, INT64_MIN, &f);
  if (known) {
    if (known < 0) return KL_NOTFOUND;
    *b = f->b;
    return KL_OK;
  }
  kl_scan sc;
  if ((rc = kl_scan_start(&sc, rd, s, sk.start, INT64_MAX, sk.verify_from, err)) != KL_OK) return rc;
  int64_t prev = -1;
  while ((rc = kl_scan_next(&sc, b, err)) == KL_OK) {
    if (!rd->skip) kl_segment_learn_walked(s, prev, b); /* the next seek reads nothing */
    prev = b->position;
    if (b->last_offset >= target) break;
  }
  kl_scan_end(&sc);
  return rc == KL_DONE ? KL_NOTFOUND : rc;
}

/*
** Does time index slot i describe the log?  Its entry (T, O) says the
** running maximum timestamp first reached T in the batch holding O, so that
** batch's max timestamp must be T (true for every Kafka version: O is the
** batch's last offset since 3.8, the exact record before), and entries must
** grow.  A garbage entry that passed the count at open fails here, and the
** segment is then read without its time index.  Damage met while checking
** only makes the entry not hold: the walk that needs those bytes reports it.
*/
kl_rc kl_scan_time_entry_holds(kl_reader *rd, kl_segment *s, kl_index *tix, int64_t i, int *holds,
                               kl_err *err) {
  int64_t t = kl_index_timestamp_at(tix, i);
  int64_t o = kl_index_time_offset_at(tix, i);
  *holds = 0;
  if (i > 0 && (kl_index_timestamp_at(tix, i - 1) >= t ||
                kl_index_time_offset_at(tix, i - 1) > o)) {
    return KL_OK;
  }
  kl_batch b;
  kl_err e = {0};
  kl_rc rc = kl_scan_find_offset(rd, s, o, &b, &e);
  if (rc == KL_IO || rc == KL_NOMEM) return kl_err_set(err, rc, "%s", e.msg);
  if (rc != KL_OK) return KL_OK;
  if (b.first_known && b.base_offset > o) return KL_OK;
  *holds = b.max_timestamp == t;
  return KL_OK;
}

/* The batch a time index entry names, when a walk passes it. */
typedef struct named_batch {
  int64_t offset;           /* the entry's offset */
  int found;                /* the first batch with last offset >= offset */
  int64_t base;
  int first_known;
  int64_t max_ts;
} named_batch;

/* Walk from start to the end of the data, gathering what a tail is, and
** noting the batch that holds nb->offset if the walk passes it.  With
** learn, the batches are learnt as a cursor's walk learns them (segment.h
** kl_segment_learn_walked), the last one as ending the data when the walk
** ends cleanly: a walk from 0 leaves facts that cover the segment
** (kl_scan_learn_small). */
static kl_rc walk_tail(kl_reader *rd, kl_segment *s, int64_t start, kl_tail *t, named_batch *nb,
                       int learn, kl_err *err) {
  kl_scan sc;
  kl_batch b;
  kl_rc rc = kl_scan_start(&sc, rd, s, start, INT64_MAX, start, err);
  if (rc) return rc;
  t->end = start;
  int first = 1;
  kl_fact *f = NULL;
  int64_t prev = -1;
  while ((rc = kl_scan_next(&sc, &b, err)) == KL_OK) {
    tail_add(t, &b);
    if (learn) {
      f = kl_segment_learn_walked(s, prev, &b);
      prev = b.position;
    }
    /* The first batch with last offset >= the entry's (what a lookup of
    ** it finds); the walk's first batch is surely that one only if it
    ** starts the segment or its first offset is not above the entry's. */
    if (nb && !nb->found && b.last_offset >= nb->offset) {
      nb->found = start == 0 || !first || (b.first_known && b.base_offset <= nb->offset) ? 1 : -1;
      nb->base = b.base_offset;
      nb->first_known = b.first_known;
      nb->max_ts = b.max_timestamp;
    }
    first = 0;
  }
  if (rc == KL_DONE && sc.end == KL_END_CLEAN && f && f->b.position == prev &&
      f->b.position + f->b.size == sc.end_pos && !f->ends) {
    f->ends = 1;
    s->facts_cover = -1;
  }
  kl_scan_end(&sc);
  return rc == KL_DONE ? KL_OK : rc;
}

/* The time index, opened, with a zero first slot decided by the log. */
static kl_rc time_index(kl_reader *rd, kl_segment *s, kl_index **out, kl_err *err) {
  kl_rc rc = kl_segment_index(s, KL_INDEX_TIME, out, err);
  if (rc) return rc;
  kl_index *tix = *out;
  if (tix->zero_first) {
    /* (0, base): real when the batch holding the base offset reached
    ** timestamp 0 first. */
    kl_index_keep_zero_first(tix);
    int holds;
    if ((rc = kl_scan_time_entry_holds(rd, s, tix, 0, &holds, err)) != KL_OK) return rc;
    if (!holds) { /* decided: a preallocated slot */
      tix->n = 0;
      tix->zero_slots++;
    }
  }
  return KL_OK;
}

kl_rc kl_scan_index(kl_reader *rd, kl_segment *s, int kind, kl_index **out, kl_err *err) {
  kl_rc rc = prepare(rd, s, err);
  if (rc) return rc;
  return kind == KL_INDEX_OFFSET ? offset_index(rd, s, out, err) : time_index(rd, s, out, err);
}

/* Make the time index what seeks may use, once the tail is known: entries
** at or past the next offset are stale (a truncation left them; offsets in
** the time index never decrease), and the last entry must name a batch
** reaching its timestamp (nb: what a walk learnt of that batch, if it
** passed it), else the index is not used. */
static kl_rc settle_time_index(kl_reader *rd, kl_segment *s, kl_index *tix, const named_batch *nb,
                               kl_err *err) {
  int64_t n_before = tix->n;
  int64_t lo = 0, hi = tix->n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (kl_index_time_offset_at(tix, mid) >= s->tail.next_offset) hi = mid;
    else lo = mid + 1;
  }
  tix->stale += tix->n - lo;
  tix->n = lo;
  s->tix_settled = 1;
  if (tix->n > 0) {
    int holds;
    kl_rc rc;
    if (nb && tix->n == n_before && nb->found == 1) {
      int64_t i = tix->n - 1;
      holds = nb->max_ts == kl_index_timestamp_at(tix, i) &&
              !(nb->first_known && nb->base > nb->offset) &&
              (i == 0 || (kl_index_timestamp_at(tix, i - 1) < kl_index_timestamp_at(tix, i) &&
                          kl_index_time_offset_at(tix, i - 1) <= nb->offset));
    } else if ((rc = kl_scan_time_entry_holds(rd, s, tix, tix->n - 1, &holds, err)) != KL_OK) {
      s->tix_settled = 0;
      return rc;
    }
    if (!holds) {
      tix->n = 0;
      tix->unusable = 1;
      rd->stats->index_fallbacks++;
    }
  }
  return kl_index_failed(tix) ? index_error(tix, err) : KL_OK;
}

/* Read s whole in one read and walk it from 0 (learning its batches with
** learn, walk_tail), its tail known after, unless it was already. */
static kl_rc walk_whole(kl_reader *rd, kl_segment *s, int learn, kl_err *err) {
  kl_tail t = {0, s->base, -1, s->base, 0};
  const uint8_t *p;
  kl_rc rc;
  if (s->size > 0 && (rc = kl_window_get(&rd->win, &rd->ctx, &s->log, 0, (size_t)s->size, &p,
                                         rd->stats, err)) != KL_OK) {
    return rc; /* the walk below is served from this one read */
  }
  if ((rc = walk_tail(rd, s, 0, &t, NULL, learn, err)) != KL_OK) return rc;
  if (!s->tail.known) {
    t.known = 1;
    s->tail = t;
  }
  return KL_OK;
}

/* A segment this small (eight index intervals at Kafka's default) is
** walked whole to learn its tail: one read of its .log costs less than
** opening its two indexes, which matters when a log of thousands of small
** segments is dated by its first timestamp query. */
#define KL_TAIL_WALK_MAX 32768

kl_rc kl_scan_tail(kl_reader *rd, kl_segment *s, const kl_tail **out, kl_err *err) {
  if (!rd->skip && s->tail.known) { /* known: no need to open the files */
    *out = &s->tail;
    return KL_OK;
  }
  kl_rc rc = prepare(rd, s, err);
  if (rc) return rc;
  if (rd->skip) {
    *out = &s->salvage.tail;
    return KL_OK;
  }
  *out = &s->tail;
  if (s->tail.known) return KL_OK;
  if (s->size <= KL_TAIL_WALK_MAX) return walk_whole(rd, s, 0, err);
  /* The next offset: walk from the last offset index entry. */
  kl_seek sk;
  kl_index *ix;
  if ((rc = offset_index(rd, s, &ix, err)) != KL_OK) return rc;
  if (ix->n > 0) {
    rc = kl_scan_seek_offset(rd, s, kl_index_offset_at(ix, ix->n - 1), &sk, err);
    if (rc) return rc;
    if (sk.slot != ix->n - 1) { /* the last entry does not hold */
      sk.start = sk.verify_from = 0;
    }
  } else {
    seek_none(s, &sk);
  }
  /* The last time index entry is checked against the batch it names,
  ** which the walk usually passes. */
  kl_index *tix;
  if ((rc = time_index(rd, s, &tix, err)) != KL_OK) return rc;
  named_batch nb = {INT64_MAX, 0, 0, 0, 0};
  if (tix->n > 0) nb.offset = kl_index_time_offset_at(tix, tix->n - 1);
  kl_tail t = {0, s->base, -1, s->base, 0};
  rc = walk_tail(rd, s, sk.verify_from, &t, tix->n > 0 ? &nb : NULL, 0, err);
  if (rc) return rc;
  s->tail = t; /* not known yet: next_offset settles the time index */
  if ((rc = settle_time_index(rd, s, tix, &nb, err)) != KL_OK) return rc;
  /* The largest timestamp: the time index entry written with the last
  ** offset index entry covers everything before that chunk, the walk the
  ** rest (a live segment lacks the final entry written on roll).  Without
  ** a time index nothing is covered: walk the whole segment. */
  if (tix->n > 0) {
    int64_t ts = kl_index_timestamp_at(tix, tix->n - 1);
    if (ts >= t.max_timestamp) { /* on a tie the indexed (earlier) offset reached it first */
      t.max_timestamp = ts;
      t.max_ts_offset = kl_index_time_offset_at(tix, tix->n - 1);
    }
  } else if (sk.verify_from > 0) {
    kl_tail all = {0, s->base, -1, s->base, 0};
    if ((rc = walk_tail(rd, s, 0, &all, NULL, 0, err)) != KL_OK) return rc;
    t.max_timestamp = all.max_timestamp;
    t.max_ts_offset = all.max_ts_offset;
  }
  t.known = 1;
  s->tail = t;
  return KL_OK;
}

kl_rc kl_scan_learn_small(kl_reader *rd, kl_segment *s, int *learnt, kl_err *err) {
  *learnt = 0;
  if (rd->skip) return KL_OK;
  kl_rc rc = prepare(rd, s, err);
  if (rc || s->size > KL_SCAN_WHOLE_MAX) return rc;
  if (kl_segment_facts_cover(s)) {
    *learnt = 1;
    return KL_OK;
  }
  kl_err e = {0};
  /* Damage is left to the paths that met it before: a seek by the
  ** indexes may land past it, and the scan reports it where it reads. */
  if ((rc = walk_whole(rd, s, 1, &e)) == KL_CORRUPT) return KL_OK;
  if (rc) return kl_err_set(err, rc, "%s", e.msg);
  *learnt = kl_segment_facts_cover(s);
  return KL_OK;
}

int kl_scan_datable(const kl_reader *rd, const kl_segment *s) {
  return !rd->skip && !s->tail.known && !s->dated && !s->is_last && s->limit < 0 && !s->mem;
}

/* Date a closed segment from its time index's last entry (see
** kl_scan_max_timestamp for when it stands), from the facts its files gave
** (dating.h): 1 with s->dated set, 0 when the .log must be read.  Nothing
** here is an error: the reading path reports what is wrong. */
static int date_from_facts(kl_segment *s, const kl_date_facts *f, kl_stats *stats) {
  if (f->read) stats->reads++;
  stats->bytes_read += f->n;
  if (f->state != KL_DATE_READ || !f->log_reg || f->log_size <= 0 || f->n == 0) return 0;
  if (s->seen && (f->log_dev != s->dev || f->log_ino != s->ino || f->log_size != s->size)) {
    return 0;
  }
  kl_index ix;
  kl_index_mem(&ix, KL_INDEX_TIME, f->e, f->n, s->base, -1);
  if (ix.zero_slots || ix.zero_first || ix.n != (int64_t)(f->n / KL_INDEX_TIME)) return 0;
  int64_t i = ix.n - 1;
  int64_t t = kl_index_timestamp_at(&ix, i), o = kl_index_time_offset_at(&ix, i);
  if (o < s->base || o >= s->next_base) return 0;
  if (i > 0 && (kl_index_timestamp_at(&ix, i - 1) >= t || kl_index_time_offset_at(&ix, i - 1) > o)) {
    return 0;
  }
  s->dated = 1;
  s->dated_ts = t;
  s->dated_off = o;
  stats->segments_dated++;
  return 1;
}

kl_rc kl_scan_max_timestamp_from(kl_reader *rd, kl_segment *s, const kl_date_facts *f,
                                 int64_t *ts, int64_t *off, kl_err *err) {
  if (kl_scan_datable(rd, s)) {
    kl_date_facts mine;
    if (!f) {
      kl_date_fetch(s->env, -1, 0, s->log_path, s->timeindex_path, &mine);
      f = &mine;
    }
    date_from_facts(s, f, rd->stats);
  }
  if (!rd->skip && !s->tail.known && s->dated) {
    *ts = s->dated_ts;
    *off = s->dated_off;
    return KL_OK;
  }
  const kl_tail *t;
  kl_rc rc = kl_scan_tail(rd, s, &t, err);
  if (rc) return rc;
  *ts = t->max_timestamp;
  *off = t->max_ts_offset;
  return KL_OK;
}

kl_rc kl_scan_max_timestamp(kl_reader *rd, kl_segment *s, int64_t *ts, int64_t *off,
                            kl_err *err) {
  return kl_scan_max_timestamp_from(rd, s, NULL, ts, off, err);
}

kl_rc kl_scan_time_index(kl_reader *rd, kl_segment *s, kl_index **out, kl_err *err) {
  /* The error-mode tail trims and checks the time index; it is computed in
  ** either mode.  Damage in the last stretch leaves the segment without a
  ** usable time index: seeks then start at position 0, and the walk meets
  ** the damage (or passes over it, in skip mode). */
  *out = NULL;
  kl_rc rc = prepare(rd, s, err);
  if (rc) return rc;
  if (!s->tail.known) {
    const kl_tail *t;
    kl_err e = {0};
    int skip = rd->skip;
    rd->skip = 0;
    rc = kl_scan_tail(rd, s, &t, &e);
    rd->skip = skip;
    if (rc == KL_CORRUPT) {
      if ((rc = time_index(rd, s, out, err)) != KL_OK) return rc;
      (*out)->n = 0;
      return KL_OK;
    }
    if (rc) return kl_err_set(err, rc, "%s", e.msg);
  }
  if (!s->tix_settled) { /* the tail came from a walk of the whole segment */
    kl_index *tix;
    kl_err e = {0};
    if ((rc = time_index(rd, s, &tix, err)) != KL_OK) return rc;
    rc = settle_time_index(rd, s, tix, NULL, &e);
    if (rc == KL_CORRUPT) {
      tix->n = 0;
    } else if (rc) {
      return kl_err_set(err, rc, "%s", e.msg);
    }
  }
  return kl_segment_index(s, KL_INDEX_TIME, out, err);
}

kl_rc kl_scan_seek_time(kl_reader *rd, kl_segment *s, int64_t t, kl_seek *out, kl_err *err) {
  seek_none(s, out);
  kl_index *tix;
  kl_rc rc = kl_scan_time_index(rd, s, &tix, err);
  if (rc) return rc;
  int64_t i = kl_index_floor(tix, t, rd->stats);
  if (kl_index_failed(tix)) return index_error(tix, err);
  if (i >= 0) {
    int holds;
    if ((rc = kl_scan_time_entry_holds(rd, s, tix, i, &holds, err)) != KL_OK) return rc;
    if (!holds) {
      rd->stats->index_fallbacks++;
      return KL_OK;
    }
  }
  int64_t o = i < 0 ? s->base : kl_index_time_offset_at(tix, i);
  rc = kl_scan_seek_offset(rd, s, o, out, err);
  out->ti_slot = i;
  return rc;
}
