/*
** cursor.c - bounded forward and backward iteration over a log's records.
*/
#include "cursor.h"

#include <stdio.h>
#include <string.h>

#include "ahead.h"
#include "bcache.h"
#include "codec.h"
#include "invariant.h"
#include "os.h"

/* The cursor's state: what produces its next row.  Forward iteration is a
** machine of one function per state (next_forward runs them): CS_COUNT and
** CS_RECORDS produce the rows of the current batch, from its record count
** (not decoded) or decoded; CS_FACT, CS_WALK and CS_SEGMENT obtain the next
** batch, from the segment's batch facts (without reading it), from the
** walk of the segment, or by entering the next segment; CS_BATCH decides
** how the batch just obtained is produced (passed over, counted, decoded).
** Once a batch's rows end the state becomes kl_cursor.src, the source that
** whatever obtained the batch left for the next one: a walk reaching a
** batch already known hands over to the facts, facts that run out to the
** walk, the facts of the segment's last batch to the next segment.
** Backward iteration keeps its stretches instead (CS_BACKWARD). */
typedef enum cstate {
  CS_DONE,                  /* no more rows (until kl_cursor_start) */
  CS_COUNT,                 /* the current batch's rows from its count */
  CS_RECORDS,               /* the current batch's rows, decoded (it) */
  CS_BATCH,                 /* the batch just obtained, to be classified */
  CS_FACT,                  /* the next batch is the fact at fpos */
  CS_WALK,                  /* the next batch comes from the walk (sc) */
  CS_SEGMENT,               /* the segment ends: enter the next one */
  CS_BACKWARD               /* backward iteration (next_backward) */
} cstate;

/* Backward: the batches of one stretch of a segment, between two positions
** a walk may start from (index entries that hold, or position 0). */
typedef struct stretch {
  kl_batch *b;              /* batches the walk yielded, in file order
                            ** (their bytes are read again when used) */
  size_t n, cap;
  int64_t start;            /* where the walk started */
  int64_t slot;             /* its offset index slot, -1 for position 0 */
  int have_last;            /* last_offset is the walk's last batch's */
  int64_t last_offset;
  kl_rc rc;                 /* damage met collecting it (error mode): */
  kl_err err;               /* reported when the stretch's turn comes */
  int live;                 /* the stretch is collected */
} stretch;

enum { TS_INLINE = 128 }; /* timestamps kept without allocating */
/* Records of a plain batch decoded at a time (kl_records_decode), ahead
** of their rows: 64 of them take 4.5 KiB, and most batches of a scan are
** one or two chunks. */
enum { CHUNK = 64 };

struct kl_cursor {
  kl_log *log;
  kl_reader rd;             /* buffers, counters and mode */
  kl_bounds bnd;            /* as given */
  int64_t lo, hi;           /* effective offset bounds (time seek folded in) */
  cstate state;             /* what produces the next row */
  kl_segment *seg;          /* current segment (pinned) */
  kl_batch batch;           /* current batch */
  kl_record rec;            /* current record */

  /* Forward iteration only. */
  cstate src;               /* where the batch after the current one comes
                            ** from: CS_FACT, CS_WALK or CS_SEGMENT */
  kl_scan sc;               /* the walk of seg */
  int scanning;             /* sc is live (it may hold the current batch's
                            ** bytes: ended when the next batch is taken) */
  kl_records it;            /* records of the current batch (CS_RECORDS) */
  int plain;                /* each of them is a row as it decodes: the
                            ** batch lies within the bounds, no key is
                            ** sought, nothing is left to learn of it;
                            ** its rows then come from chunk */
  kl_record chunk[CHUNK];   /* plain: records decoded ahead of their rows */
  int32_t cn, cx;           /* chunk holds cn of them (0: the current row is
                            ** rec); the current row is chunk[cx] */
  kl_rc chunk_rc;           /* what ended the last chunk's decoding (KL_OK:
                            ** more records follow), */
  kl_err chunk_err;         /* and why, reported when the rows reach it */
  int32_t count_left;       /* rows of the current batch still to produce
                            ** from its header's record count (CS_COUNT) */
  int32_t count_at;         /* the current row's index in that batch */
  int lazy;                 /* the current row is not decoded yet (CS_COUNT) */
  int count_free;           /* every row counted is within the bounds (no
                            ** timestamps to check, or the batch lies
                            ** within them): kl_cursor_step counts them */
  size_t fhint;             /* where in the segment's facts fpos's fact
                            ** probably is (checked before use) */
  int64_t fpos;             /* CS_FACT: the next batch is the fact at this
                            ** position (segment.h) */
  int64_t yielded;          /* position of the batch before it in the
                            ** segment (walked or known), -1 */
  int64_t bmin;             /* smallest record timestamp of the current
                            ** batch so far */
  int64_t *tsb;             /* and its records' timestamps so far */
  uint32_t *reb;            /* and where they end (rends), from recs0: the
                            ** batch's first byte, or when it is compressed
                            ** its decompressed records' */
  int32_t tsn, tscap;
  int rends;                /* the ends are kept too: a point lookup's v2
                            ** batch (offset = ?), where the next lookup
                            ** reads one record with them; a scan keeps
                            ** none: lookups may never come to its batches */
  /* Their first TS_INLINE entries: most batches hold fewer records, and a
  ** point lookup then allocates nothing for them (an allocation through
  ** SQLite's allocator costs as much as the lookup's decoding). */
  int64_t ts_inline[TS_INLINE];
  uint32_t re_inline[TS_INLINE];
  const uint8_t *recs0;
  kl_buf one;               /* the one record a point lookup reads, */
  const kl_segment *one_seg;/* of this segment at this position (a */
  int64_t one_at;           /* lookup of it again reads nothing) */
  kl_ahead *ra;             /* the read-ahead lent (kl_cursor_set_ahead),
                            ** or NULL */
  int threads;              /* its workers wanted */
  int ra_if_idle;           /* only when a core is idle as the scan proves
                            ** long (kl_cursor_set_ahead), */
  int ra_idle;              /* which this scan found: -1 not looked yet */
  int ra_held;              /* the scan claimed it (once it proved long) */
  kl_bcache *pin_cache;     /* a point lookup's record lies in a batch */
  kl_bcache_entry *pin;     /* kept decompressed (bcache.h): borrowed
                            ** until the cursor moves, or NULL */
  int64_t ra_next;          /* the position the facts chain reaches after
                            ** the batches queued, or -1 */
  const kl_segment *run_seg;/* batches opened one after another: */
  int64_t run_end;          /* where the last one ends, */
  int run;                  /* how many, */
  int64_t run_bytes;        /* and the bytes of their records (decompressed:
                            ** the work), since kl_cursor_start */
  kl_fact *curfact;         /* the current batch's fact, or NULL, as of */
  uint64_t curfact_gen;     /* this generation of the segment's facts
                            ** (another cursor on the log may add some) */
  const kl_fact *cts;       /* counting a batch whose timestamps are known
                            ** (kl_fact.ts): rows are filtered on them
                            ** (&tsread, count_ts), or NULL */
  kl_fact tsread;
  int ts_bounded;           /* the bounds limit timestamps (kl_cursor_start) */
  int at_hi;                /* CS_RECORDS: the current record's offset is hi
                            ** and the batch's later records are known to
                            ** decode: the rows end after it */
  uint64_t rhash;           /* with keys: the current record's key hash */
  uint64_t *kfb;            /* with keys: the filter of the current batch's
                            ** keys so far, when its fact has none yet */
  size_t kfw, kfcap;        /* its words (0: not built), allocated words */
  int32_t kseen;            /* records of the batch it has taken */

  /* Backward iteration only: the records of the current batch are all
  ** decoded once, then each decoded again from where it starts when its
  ** turn comes, last first. */
  uint32_t *rpos;           /* where each record starts, relative to rbase:
                            ** 4 bytes a record, so a hostile batch of tiny
                            ** records costs at most 4/7 of its (capped)
                            ** decompressed size */
  const uint8_t *rbase;     /* start of the batch's record bytes */
  kl_records rproto;        /* the batch's iterator, to decode one record */
  size_t rn, rcap;
  size_t ridx;              /* records still to produce: rpos[0..ridx) */

  /* Backward iteration only. */
  stretch cur, ahead;       /* producing cur; ahead is the stretch before */
  size_t ci;                /* batches of cur still to produce: b[0..ci) */
  int first_checked;        /* cur.b[0] was checked against the batch before */
  int first_bad;            /* and it did not pass (first_err says why) */
  kl_err first_err;
};

kl_bounds kl_bounds_all(void) {
  kl_bounds b = {INT64_MIN, INT64_MAX, INT64_MIN, INT64_MAX, 0, -1, NULL};
  return b;
}

kl_rc kl_cursor_new(kl_log *log, kl_stats *stats, int on_corrupt, kl_cursor **out) {
  const kl_env *env = kl_log_env(log);
  kl_cursor *c = kl_malloc(env, sizeof *c);
  *out = c;
  if (!c) return KL_NOMEM;
  memset(c, 0, sizeof *c);
  c->log = log;
  c->tsb = c->ts_inline;
  c->reb = c->re_inline;
  c->tscap = TS_INLINE;
  kl_reader_init(&c->rd, env, stats, on_corrupt);
  c->state = CS_DONE;
  c->ra_next = -1;
  return KL_OK;
}

/* The scan is done with the read-ahead: another may claim it. */
static void release_ahead(kl_cursor *c) {
  if (c->ra_held) kl_ahead_release(c->ra, c);
  c->ra_held = 0;
  c->ra_next = -1;
}

void kl_cursor_set_ahead(kl_cursor *c, kl_ahead *a, int threads, int if_idle) {
  if (a != c->ra) release_ahead(c);
  c->ra = threads > 0 ? a : NULL;
  c->threads = threads;
  c->ra_if_idle = if_idle;
  /* The same workers' leave dates a fresh log's segments on a second
  ** thread (log.c). */
  c->rd.helpers = threads > 0;
}

/* Nothing queued ahead any more: the scan leaves the segment (whose file
** may then be closed) or jumps. */
static void drop_ahead(kl_cursor *c) {
  if (c->ra_held) kl_ahead_reset(c->ra);
  c->ra_next = -1;
}

static void leave_segment(kl_cursor *c) {
  drop_ahead(c);
  if (c->scanning) kl_scan_end(&c->sc);
  c->scanning = 0;
  if (c->seg) kl_segment_unpin(c->seg);
  c->seg = NULL;
}

/* Make s the current segment.  Its files are opened when bytes of them
** are read (seg_file, or the walker): rows the batch facts answer read
** nothing, so a segment closed by the bound on open files stays closed. */
static void enter_segment(kl_cursor *c, kl_segment *s) {
  leave_segment(c);
  kl_segment_pin(s);
  c->seg = s;
}

/* The current segment's .log, opened. */
static kl_rc seg_file(kl_cursor *c, kl_err *err) {
  return kl_segment_open(c->seg, c->rd.stats, err);
}

/* Done with the kept batch the current record came from. */
static void unpin(kl_cursor *c) {
  if (c->pin) kl_bcache_release(c->pin_cache, c->pin);
  c->pin = NULL;
}

void kl_cursor_trim(kl_cursor *c) {
  assert(c->state == CS_DONE);
  unpin(c);
  kl_reader_drop(&c->rd);
}

void kl_cursor_free(kl_cursor *c) {
  if (!c) return;
  const kl_env *env = c->rd.env;
  leave_segment(c);
  release_ahead(c);
  unpin(c);
  kl_reader_free(&c->rd);
  kl_free(env, c->cur.b);
  kl_free(env, c->ahead.b);
  kl_free(env, c->rpos);
  if (c->tsb != c->ts_inline) kl_free(env, c->tsb);
  if (c->reb != c->re_inline) kl_free(env, c->reb);
  kl_free(env, c->kfb);
  kl_buf_free(env, &c->one);
  kl_free(env, c);
}

void kl_cursor_detach(kl_cursor *c) {
  leave_segment(c);
  unpin(c);
  release_ahead(c); /* the table's read-ahead: its workers wait parked */
  kl_reader_forget(&c->rd);
  kl_reader_trim(&c->rd);
  if (c->one.cap > KL_READER_KEEP) kl_buf_free(c->rd.env, &c->one);
  c->one_seg = NULL;
  c->run_seg = NULL;
  c->run = 0;
  c->curfact = NULL;
  c->cts = NULL;
  c->state = CS_DONE;
  c->log = NULL;
}

void kl_cursor_reuse(kl_cursor *c, kl_log *log, kl_stats *stats, int on_corrupt) {
  kl_cursor_detach(c);
  c->log = log;
  kl_reader_reset(&c->rd, stats, on_corrupt);
  c->ra_next = -1;
  c->lazy = 0;
}

const kl_stats *kl_cursor_stats(const kl_cursor *c) { return c->rd.stats; }
const kl_record *kl_cursor_record(const kl_cursor *c) {
  return c->state == CS_RECORDS && c->cn > 0 ? &c->chunk[c->cx] : &c->rec;
}
const kl_batch *kl_cursor_batch(const kl_cursor *c) { return &c->batch; }
const kl_segment *kl_cursor_segment(const kl_cursor *c) { return c->seg; }

/* Skip mode: forget a corruption error.  Returns whether the caller may
** go on (else rc stands). */
static int skip_damage(kl_cursor *c, kl_rc rc, kl_err *err) {
  if (rc != KL_CORRUPT || !c->rd.skip) return 0;
  kl_err_clear(err);
  return 1;
}

/* Where the caller's bound on disorder ends a scan for timestamps up to
** ts_hi: past the first batch whose maximum exceeds *reach (ts_hi +
** max_skew), no record is at or below ts_hi.  0 when it ends none: no
** bound, a reach past every timestamp, or max_skew INT64_MAX, which stands
** for every skew from 2^63 - 1 up (kafka_log_max_skew saturates there). */
static int skew_reach(const kl_bounds *b, int64_t *reach) {
  if (b->max_skew < 0 || b->max_skew == INT64_MAX || b->ts_hi >= INT64_MAX - 1 - b->max_skew) {
    return 0;
  }
  *reach = b->ts_hi + b->max_skew;
  return 1;
}

static int has_ts_lo(const kl_cursor *c) { return c->bnd.ts_lo != INT64_MIN; }

/* Does the scan read every segment it enters on to its end, whatever it
** finds?  A forward time window's does (timestamps need not grow: a record
** below its upper bound may follow any other), unless a bound on disorder
** or on offsets ends it sooner.  Then a small segment is best read whole
** at once (scan.h kl_scan_learn_small). */
static int reads_whole(const kl_cursor *c) {
  int64_t reach;
  return !c->bnd.desc && c->bnd.ts_hi != INT64_MAX && c->bnd.off_hi == INT64_MAX &&
         !skew_reach(&c->bnd, &reach);
}

/* Can the batch be passed over on its header alone?  (Its CRC held: the
** header fields are the writer's.) */
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

/* With keys, c->rhash is r's key hash. */
static int record_in(const kl_cursor *c, const kl_record *r) {
  return r->offset >= c->lo && r->offset <= c->hi && r->timestamp >= c->bnd.ts_lo &&
         r->timestamp <= c->bnd.ts_hi &&
         (!c->bnd.keys || kl_keyset_has(c->bnd.keys, r->key, r->key_len, c->rhash));
}

/* The key hash of the current record, for record_in. */
static void hash_key(kl_cursor *c) {
  if (c->bnd.keys && c->rec.key_len >= 0) c->rhash = kl_key_hash(c->rec.key, (size_t)c->rec.key_len);
}

/* Does the batch's key filter say it holds none of the keys sought? */
static int keys_outside(const kl_cursor *c, const kl_fact *f) {
  return c->bnd.keys && f && f->kf && !kl_keyfilter_may_hold(f->kf, f->kf_words, c->bnd.keys);
}

/* Can every record of the batch be a row without being decoded?  Only
** when its records all decoded once (a batch whose CRC holds may still
** hold records that do not decode, and a row count must not depend on
** whether the plan decodes them), and its offsets and timestamps lie
** within the bounds.  Skip mode decodes every batch it produces. */
static int batch_within(const kl_cursor *c, const kl_batch *b, const kl_fact *f) {
  if (c->rd.skip || !f || !f->decoded || !b->first_known) return 0;
  if (b->base_offset < c->lo || b->last_offset > c->hi) return 0;
  return b->max_timestamp <= c->bnd.ts_hi && f->min_ts >= c->bnd.ts_lo;
}

/* A batch whose records were all seen once holds no record below its
** smallest timestamp. */
static int fact_outside(const kl_cursor *c, const kl_fact *f) {
  return f && f->decoded && f->min_ts > c->bnd.ts_hi;
}

/* Segments whose largest timestamp is below the lower time bound hold
** nothing, nor do those whose records' timestamps, all known (a walk read
** every batch of the segment and decoded each), miss the bounds: a
** repeated window passes over them without a look at their batches.  A
** segment whose tail cannot be read for damage is read: the walk then
** meets the damage where it is. */
static kl_rc segment_wanted(kl_cursor *c, kl_segment *s, int *wanted, kl_err *err) {
  *wanted = 1;
  int64_t mn, mx, at;
  if ((has_ts_lo(c) || c->bnd.ts_hi != INT64_MAX) && !c->rd.skip &&
      kl_segment_facts_range(s, &mn, &mx)) {
    if (mn > c->bnd.ts_hi || mx < c->bnd.ts_lo) {
      *wanted = 0;
      c->rd.stats->segments_skipped++;
    }
    return KL_OK;
  }
  if (!has_ts_lo(c)) return KL_OK;
  kl_err e = {0};
  /* A wanted segment is read anyway: a small one is read whole now instead
  ** of dated by its time index (five calls), and the scan then reads
  ** nothing more.  What this cannot do (damage, a file that does not open)
  ** is left to the dating and the scan, as before. */
  int learnt;
  if (reads_whole(c) && kl_scan_learn_small(&c->rd, s, &learnt, &e) != KL_OK) kl_err_clear(&e);
  kl_rc rc = kl_scan_max_timestamp(&c->rd, s, &mx, &at, &e);
  if (rc == KL_CORRUPT) return KL_OK;
  if (rc) return kl_err_set(err, rc, "%s", e.msg);
  if (mx < c->bnd.ts_lo) *wanted = 0;
  return KL_OK;
}

/* The rows of a batch are its records up to the first that does not
** decode, if any: every path decodes a batch from its start, so all agree
** on them.  In the default mode a query that reads past that record fails;
** in skip mode the rest of the batch is passed over. */

/* Decode the records of batch b (its bytes are read again) into c->rpos,
** for producing them last first; none when the batch is passed over on its
** header alone. */
static kl_rc load_batch_records(kl_cursor *c, const kl_batch *b, kl_err *err) {
  c->rn = c->ridx = 0;
  c->batch = *b;
  /* A batch decoded once (forward, or here) tells its smallest timestamp:
  ** ORDER BY offset DESC with timestamp < ? passes over the newer ones. */
  kl_fact *f = c->rd.skip ? NULL : kl_segment_fact(c->seg, b->position);
  if ((c->batch.first_known && c->batch.base_offset > c->hi) || skip_batch(c, &c->batch) ||
      fact_outside(c, f)) {
    c->rd.stats->batches_skipped++;
    return KL_OK;
  }
  kl_rc rc;
  const uint8_t *p;
  if ((rc = seg_file(c, err)) != KL_OK) return rc;
  rc = kl_window_get(&c->rd.win, &c->rd.ctx, &c->seg->log, b->position, (size_t)b->size, &p,
                     c->rd.stats, err);
  if (rc) return rc;
  c->batch.bytes = p;
  kl_records it;
  rc = kl_reader_records(&c->rd, c->seg, &c->batch, &it, err);
  if (rc && skip_damage(c, rc, err)) return KL_OK;
  if (rc) return rc;
  c->rproto = it;
  c->rbase = it.p;
  kl_record r;
  int64_t min_ts = INT64_MAX;
  for (;;) {
    uint32_t at = (uint32_t)(it.p - c->rbase);
    if ((rc = kl_records_next(&it, &r, err)) != KL_OK) break;
    c->rd.stats->records_decoded++;
    if (r.timestamp < min_ts) min_ts = r.timestamp;
    if (c->rn == c->rcap) {
      size_t cap = c->rcap ? c->rcap * 2 : 64;
      uint32_t *q = kl_realloc(c->rd.env, c->rpos, cap * sizeof *q);
      if (!q) return kl_err_set(err, KL_NOMEM, "out of memory");
      c->rpos = q;
      c->rcap = cap;
    }
    c->rpos[c->rn++] = at;
  }
  if (rc != KL_DONE && !skip_damage(c, rc, err)) {
    c->rn = 0;
    return kl_scan_batch_error(c->seg, b->position, rc, err);
  }
  if (rc == KL_DONE && f) kl_segment_decoded(c->seg, f, min_ts);
  return KL_OK;
}

/* Decode record i of the loaded batch again (it decoded when loaded). */
static kl_rc record_at(kl_cursor *c, size_t i, kl_err *err) {
  kl_records one = c->rproto;
  one.p = c->rbase + c->rpos[i];
  one.remaining = 1;
  kl_rc rc = kl_records_next(&one, &c->rec, err);
  return rc ? kl_scan_batch_error(c->seg, c->batch.position, rc, err) : KL_OK;
}

/* ---- forward ---- */

/* The current batch's fact, if any (found again if the facts moved). */
static kl_fact *cur_fact(kl_cursor *c) {
  if (c->curfact && c->curfact_gen != c->seg->facts_gen) {
    c->curfact = kl_segment_fact(c->seg, c->batch.position);
    c->curfact_gen = c->seg->facts_gen;
  }
  return c->curfact && c->curfact->b.position == c->batch.position &&
                 c->curfact->b.size == c->batch.size
             ? c->curfact
             : NULL;
}

static void set_fact(kl_cursor *c, kl_fact *f) {
  c->curfact = f;
  c->curfact_gen = c->seg->facts_gen;
}

/* Walk s from pos (a boundary the walk from 0 passes), checking batches
** from verify_from on. */
static kl_rc walk_from(kl_cursor *c, kl_segment *s, int64_t pos, int64_t verify_from,
                       kl_err *err) {
  kl_rc rc = kl_scan_start(&c->sc, &c->rd, s, pos, INT64_MAX, verify_from, err);
  if (rc) return rc;
  c->sc.stop_offset = c->hi;
  c->scanning = 1;
  c->src = c->state = CS_WALK;
  return KL_OK;
}

/* The rows end: nothing more in the bounds. */
static void finish(kl_cursor *c) {
  leave_segment(c);
  release_ahead(c);
  c->state = CS_DONE;
  c->at_hi = 0;
}

/* Enter the first segment from s on that may hold rows (CS_DONE when none
** does), at its first batch reaching lo: the state is then its source. */
static kl_rc enter_forward(kl_cursor *c, kl_segment *s, kl_err *err) {
  for (; s; s = kl_log_next(c->log, s)) {
    if (s->base > c->hi) break;
    int wanted;
    kl_rc rc = segment_wanted(c, s, &wanted, err);
    if (rc) return rc;
    if (!wanted) continue;
    enter_segment(c, s);
    c->yielded = -1;
    if (!c->rd.skip && kl_segment_facts_cover(s)) {
      const kl_fact *f = kl_segment_fact_reaching(s, c->lo);
      if (!f) continue; /* nothing here reaches lo */
      c->fpos = f->b.position;
      c->fhint = (size_t)(f - s->facts);
      c->src = c->state = CS_FACT;
      return KL_OK;
    }
    /* The lower time bound was folded into lo by the log's seek by time
    ** (kl_cursor_start): the first segment starts at the first record
    ** reaching it, later ones hold later offsets. */
    kl_seek sk;
    if ((rc = kl_scan_seek_offset(&c->rd, s, c->lo, &sk, err)) != KL_OK) return rc;
    const kl_fact *f = c->rd.skip ? NULL : kl_segment_fact(s, sk.verify_from);
    if (f) {
      c->fpos = sk.verify_from;
      c->fhint = (size_t)(f - s->facts); /* not searched for again */
      c->src = c->state = CS_FACT;
      return KL_OK;
    }
    return walk_from(c, s, sk.start, sk.verify_from, err);
  }
  finish(c);
  return KL_OK;
}

/* The bytes of the current batch, when it came from a fact. */
static kl_rc batch_bytes(kl_cursor *c, kl_err *err) {
  if (c->batch.bytes) return KL_OK;
  const uint8_t *p;
  kl_rc rc = seg_file(c, err);
  if (rc) return rc;
  rc = kl_window_get(&c->rd.win, &c->rd.ctx, &c->seg->log, c->batch.position,
                     (size_t)c->batch.size, &p, c->rd.stats, err);
  if (rc == KL_OK) c->batch.bytes = p;
  return rc;
}

/* A key search decoding a batch from its first record builds the filter
** of its keys when its fact has none (quietly none when out of memory). */
static void start_keys(kl_cursor *c) {
  c->kfw = 0;
  c->kseen = 0;
  const kl_fact *f = cur_fact(c);
  if (!c->bnd.keys || c->rd.skip || !f || f->kf) return;
  size_t w = kl_keyfilter_words(c->batch.record_count);
  if (w > c->kfcap) {
    uint64_t *p = kl_realloc(c->rd.env, c->kfb, w * sizeof *p);
    if (!p) return;
    c->kfb = p;
    c->kfcap = w;
  }
  memset(c->kfb, 0, w * sizeof *c->kfb);
  c->kfw = w;
}

/* Count the batch about to be opened into the run of batches opened one
** after another (the next segment's first continues the run). */
static void note_run(kl_cursor *c) {
  const kl_batch *b = &c->batch;
  int follows = c->run_seg == c->seg ? b->position == c->run_end : b->position == 0;
  c->run = follows ? c->run + 1 : 1;
  if (!follows) c->run_bytes = 0;
  c->run_seg = c->seg;
  c->run_end = b->position + b->size;
}

/* Queue the batches the facts say follow the current one, while the
** read-ahead has room: those the bounds let through and large enough to
** be worth a worker, up to the first past hi or the segment's end.  Only
** a scan that proved long claims the read-ahead; skip mode keeps to its
** salvage map and reads on its own; so does a writer's view (the file's
** tail in memory). */
static void fill_ahead(kl_cursor *c) {
  if (!c->ra || c->rd.skip || c->run < KL_AHEAD_AFTER || c->run_bytes < KL_AHEAD_AFTER_BYTES ||
      c->seg->log.fd < 0 || c->seg->log.mem) {
    return;
  }
  if (!c->ra_held) {
    /* Workers on a machine with no core to spare take the scan's own
    ** thread's time: looked at once a scan. */
    if (c->ra_if_idle) {
      if (c->ra_idle < 0) c->ra_idle = kl_os_core_idle(c->rd.env);
      if (!c->ra_idle) return;
    }
    if (!(c->ra_held = kl_ahead_claim(c->ra, c, c->threads, c->rd.stats))) return;
  }
  int64_t pos = c->ra_next;
  if (pos < 0 && !kl_ahead_queued(c->ra)) pos = c->batch.position + c->batch.size;
  while (pos >= 0 && kl_ahead_room(c->ra)) {
    const kl_fact *f = kl_segment_fact(c->seg, pos);
    if (!f || f->b.size <= 0) break; /* the walk would take over here */
    const kl_batch *b = &f->b;
    if (b->first_known && b->base_offset > c->hi) {
      pos = -1;
      break;
    }
    if (b->size >= KL_AHEAD_MIN_BATCH && !skip_batch(c, b) && !fact_outside(c, f) &&
        !kl_ahead_push(c->ra, c->seg, &c->seg->log, b)) {
      break;
    }
    pos = f->ends ? -1 : b->position + b->size;
  }
  c->ra_next = pos;
}

/* The current batch's records from the read-ahead, when it has them. */
static int take_ahead(kl_cursor *c) {
  if (!c->ra_held || !kl_ahead_queued(c->ra)) return 0;
  kl_records it;
  if (kl_ahead_take(c->ra, c->seg, &c->batch, &it, c->rd.stats) != KL_OK) {
    if (!kl_ahead_queued(c->ra)) c->ra_next = -1; /* dropped */
    return 0;
  }
  c->it = it;
  c->batch.bytes = it.b.bytes;
  return 1;
}

static kl_rc open_records(kl_cursor *c, kl_err *err) {
  c->bmin = INT64_MAX;
  /* The records' timestamps and ends are kept for learn_decoded, which
  ** has nothing to learn of a batch decoded before. */
  const kl_fact *f = cur_fact(c);
  c->tsn = f && f->decoded ? -1 : 0;
  c->rends = c->batch.magic == 2 && c->lo == c->hi;
  start_keys(c);
  note_run(c);
  kl_rc rc = KL_OK;
  if (!take_ahead(c)) {
    if ((rc = batch_bytes(c, err)) == KL_OK) {
      rc = kl_reader_records(&c->rd, c->seg, &c->batch, &c->it, err);
    }
  }
  c->recs0 = c->batch.codec == KL_CODEC_NONE ? c->batch.bytes : c->it.p;
  c->plain = !c->bnd.keys && batch_within(c, &c->batch, f);
  c->cn = c->cx = 0;
  c->chunk_rc = KL_OK;
  if (rc == KL_OK) {
    c->run_bytes += c->it.end - c->it.p;
    fill_ahead(c);
  }
  return rc;
}

/* Room for twice the timestamps and ends kept so far; 0 when out of memory
** (they are then not kept). */
static int grow_ts(kl_cursor *c) {
  int32_t cap = c->tscap * 2;
  int inl = c->tsb == c->ts_inline;
  int64_t *p = kl_realloc(c->rd.env, inl ? NULL : c->tsb, (size_t)cap * sizeof *p);
  if (!p) return 0;
  if (inl) memcpy(p, c->ts_inline, sizeof c->ts_inline);
  c->tsb = p;
  uint32_t *q = kl_realloc(c->rd.env, inl ? NULL : c->reb, (size_t)cap * sizeof *q);
  if (!q) {
    if (inl) { /* back to the inline arrays, which still hold everything */
      kl_free(c->rd.env, p);
      c->tsb = c->ts_inline;
    }
    return 0;
  }
  if (inl) memcpy(q, c->re_inline, sizeof c->re_inline);
  c->reb = q;
  c->tscap = cap;
  return 1;
}

/* A record of the current batch was decoded (in order, from its first). */
static void note_record(kl_cursor *c) {
  int64_t ts = c->rec.timestamp;
  c->rd.stats->records_decoded++;
  if (ts < c->bmin) c->bmin = ts;
  hash_key(c);
  if (c->kfw) {
    c->kseen++;
    if (c->rec.key_len >= 0) kl_keyfilter_add(c->kfb, c->kfw, c->rhash);
  }
  if (c->tsn < 0) return;
  if (c->tsn == c->tscap && !grow_ts(c)) {
    c->tsn = -1; /* not kept: only an optimisation */
    return;
  }
  if (c->rends) c->reb[c->tsn] = (uint32_t)(c->it.p - c->recs0);
  c->tsb[c->tsn++] = ts;
}

/* All the records of the current batch were decoded: remember its
** smallest timestamp. */
static void learn_decoded(kl_cursor *c) {
  if (c->rd.skip) return;
  kl_fact *f = cur_fact(c);
  if (f && c->kfw && c->kseen == f->b.record_count) kl_segment_learn_keys(c->seg, f, c->kfb, c->kfw);
  c->kfw = 0;
  if (f && !f->decoded) {
    kl_segment_decoded(c->seg, f, c->bmin);
    const kl_batch *b = &f->b;
    if (b->magic == 2 && c->tsn == b->record_count &&
        b->last_offset - b->base_offset + 1 == b->record_count) {
      kl_segment_learn_records(c->seg, f, c->tsb, c->rends ? c->reb : NULL, c->tsn);
    }
  }
}

/* The rows end inside the current batch (its record at or past hi was just
** decoded) before the batch's records all decoded once: decode the rest
** (the batch is in memory, decompressed whole) so that its fact learns
** every record's timestamp and end, as a scan's would.  A join's point
** lookups land in the same batches again and again: the next lookup in
** this one reads and decodes its record alone (kl_cursor_load), not the
** records before it.  Once per batch, and only while its timestamps are
** being kept; a record that does not decode leaves the fact as it was,
** for the query that reaches it to report. */
static void learn_rest(kl_cursor *c) {
  if (c->rd.skip || c->bnd.keys || c->tsn < 0 || c->batch.magic != 2) return;
  kl_fact *f = cur_fact(c);
  if (!f || f->decoded || c->tsn != c->it.b.record_count - c->it.remaining) return;
  kl_records rest = c->it;
  kl_record r;
  kl_err e = {0};
  int64_t bmin = c->bmin;
  int32_t n = c->tsn;
  kl_rc rc;
  while ((rc = kl_records_next(&rest, &r, &e)) == KL_OK) {
    c->rd.stats->records_decoded++;
    if (n == c->tscap && !grow_ts(c)) return; /* only an optimisation */
    if (r.timestamp < bmin) bmin = r.timestamp;
    c->reb[n] = (uint32_t)(rest.p - c->recs0);
    c->tsb[n++] = r.timestamp;
  }
  if (rc != KL_DONE) return; /* for the query that reaches it to report */
  c->tsn = n;
  c->bmin = bmin;
  learn_decoded(c);
  c->tsn = -1; /* learnt: the rows left of the batch note nothing */
}

/* A walk yielded the current batch: learn it, link it to the batch it
** follows, and go on from the facts when the next batch is known. */
static void learn_walked(kl_cursor *c) {
  if (c->rd.skip) return;
  kl_segment *s = c->seg;
  kl_fact *f = kl_segment_learn_walked(s, c->yielded, &c->batch);
  c->yielded = c->batch.position;
  set_fact(c, f);
  if (f && f->linked && kl_segment_fact(s, c->batch.position + c->batch.size)) {
    c->fpos = c->batch.position + c->batch.size;
    c->src = CS_FACT;
  }
}

/* The walk reached the end of the data: the last batch it yielded ends
** the segment. */
static void learn_end(kl_cursor *c) {
  if (c->rd.skip || c->yielded < 0) return;
  kl_fact *f = kl_segment_fact(c->seg, c->yielded);
  if (f && f->b.position + f->b.size == c->sc.end_pos && !f->ends) {
    f->ends = 1;
    c->seg->facts_cover = -1;
  }
}

/* CS_COUNT: the next row of the batch from its record count, within the
** bounds when its timestamps are known (cts); *row = 0 when none is left. */
static void fw_count(kl_cursor *c, int *row) {
  assert(c->state == CS_COUNT);
  while (c->count_left > 0) {
    c->count_left--;
    c->count_at++;
    if (c->cts) {
      int64_t off = c->batch.base_offset + c->count_at;
      if (off > c->hi) { /* offsets only grow: the rows end */
        finish(c);
        c->lazy = 0;
        c->cts = NULL;
        return;
      }
      if (off < c->lo) continue;
      /* Without time bounds the timestamp is not looked at: a point lookup's
      ** would be a cache miss of its own, in a log's worth of them. */
      if (c->ts_bounded) {
        int64_t ts = kl_fact_ts(c->cts, c->count_at);
        if (ts < c->bnd.ts_lo || ts > c->bnd.ts_hi) continue;
      }
    }
    c->lazy = 1;
    *row = 1;
    return;
  }
  c->lazy = 0;
  c->cts = NULL;
  c->state = c->src;
}

/* CS_RECORDS of a plain batch (a full scan's: no check, nothing to
** note): the next row from the chunk, decoding the next chunk when it is
** used up.  The rows and errors are those of decoding record by record:
** what ended a chunk's decoding is reported when the rows reach it. */
static kl_rc fw_plain(kl_cursor *c, int *row, kl_err *err) {
  if (c->cx + 1 < c->cn) {
    c->cx++;
  } else {
    c->cn = c->cx = 0;
    if (c->chunk_rc == KL_OK) {
      kl_err_clear(&c->chunk_err);
      c->cn = kl_records_decode(&c->it, c->chunk, CHUNK, &c->chunk_rc, &c->chunk_err);
    }
    if (c->cn == 0) { /* the batch's rows end here */
      kl_rc rc = c->chunk_rc;
      c->state = c->src;
      if (rc == KL_DONE) {
        learn_decoded(c);
        return KL_OK;
      }
      *err = c->chunk_err;
      if (skip_damage(c, rc, err)) return KL_OK;
      return kl_scan_batch_error(c->seg, c->batch.position, rc, err);
    }
  }
  /* Counted as rows are produced, as when decoded one by one: the records
  ** of a chunk past where a query stops are not. */
  c->rd.stats->records_decoded++;
  *row = 1;
  return KL_OK;
}

/* CS_RECORDS: decode the next record of the batch; a row when it is in
** the bounds.  Past hi the rows end; at the batch's end, what it taught
** is kept and the next batch is taken. */
static inline kl_rc fw_records(kl_cursor *c, int *row, kl_err *err) {
  assert(c->state == CS_RECORDS);
  if (c->plain) return fw_plain(c, row, err);
  if (c->at_hi) { /* nothing to decode to know it */
    finish(c);
    return KL_OK;
  }
  kl_rc rc = kl_records_next(&c->it, &c->rec, err);
  if (rc == KL_OK) {
    note_record(c);
    if (c->rec.offset >= c->hi) {
      learn_rest(c);
      /* Records follow in the batch, and all of them decoded once with
      ** growing offsets: the next is past hi, as decoding it would show. */
      const kl_fact *f = cur_fact(c);
      c->at_hi = c->rec.offset == c->hi && c->it.remaining > 0 && f && f->decoded;
    }
    if (c->rec.offset > c->hi) finish(c);
    else *row = record_in(c, &c->rec);
    return KL_OK;
  }
  c->state = c->src;
  if (rc == KL_DONE) learn_decoded(c);
  else if (!skip_damage(c, rc, err)) return kl_scan_batch_error(c->seg, c->batch.position, rc, err);
  return KL_OK;
}

/* CS_FACT: the next batch of the segment from its facts, without reading
** it.  When it is not known the walk takes over, from the batch before,
** so that the first batch walked is checked against it as a walk from 0
** would check it. */
static kl_rc fw_fact(kl_cursor *c, kl_err *err) {
  assert(c->state == CS_FACT && c->seg);
  if (c->scanning) {
    kl_scan_end(&c->sc);
    c->scanning = 0;
  }
  kl_segment *s = c->seg;
  kl_fact *f = c->fhint < s->nfacts && s->facts[c->fhint].b.position == c->fpos
                   ? &s->facts[c->fhint]
                   : kl_segment_fact(s, c->fpos);
  set_fact(c, f);
  if (!f) return walk_from(c, s, c->yielded >= 0 ? c->yielded : c->fpos, c->fpos, err);
  size_t k = (size_t)(f - s->facts);
  if (c->bnd.ts_hi != INT64_MAX && !c->rd.skip && kl_segment_facts_rest_above(s, k, c->bnd.ts_hi)) {
    c->rd.stats->batches_skipped += s->nfacts - k;
    c->state = CS_SEGMENT;
    return KL_OK;
  }
  c->batch = f->b;
  c->yielded = c->fpos;
  c->fhint = k + 1;
  if (f->ends) c->src = CS_SEGMENT;
  else c->fpos = f->b.position + f->b.size;
  c->state = CS_BATCH;
  return KL_OK;
}

/* CS_WALK: the next batch the walk reads.  Its end past hi ends the rows;
** the end of the segment's data enters the next segment. */
static kl_rc fw_walk(kl_cursor *c, kl_err *err) {
  assert(c->state == CS_WALK && c->scanning);
  kl_rc rc = kl_scan_next(&c->sc, &c->batch, err);
  if (rc == KL_DONE && c->sc.end == KL_END_STOP) {
    finish(c);
    return KL_OK;
  }
  if (rc == KL_DONE) {
    if (c->sc.end == KL_END_CLEAN) learn_end(c);
    return enter_forward(c, kl_log_next(c->log, c->seg), err);
  }
  if (rc && skip_damage(c, rc, err)) return KL_OK;
  if (rc) return rc;
  learn_walked(c);
  c->state = CS_BATCH;
  return KL_OK;
}

/* The timestamps of the current batch's records into c->tsb, read from its
** bytes (KL_OK), for a batch that decoded once but whose timestamps are not
** kept (over the budget, segment.h): a repeated window's edge batches, cut
** by its bounds, are counted from them without their records decoded. */
static kl_rc batch_times(kl_cursor *c, kl_err *err) {
  int32_t n = c->batch.record_count;
  while (c->tscap < n) {
    if (!grow_ts(c)) return kl_err_set(err, KL_NOMEM, "out of memory");
  }
  kl_rc rc = batch_bytes(c, err);
  kl_records it;
  if (rc == KL_OK) rc = kl_reader_records(&c->rd, c->seg, &c->batch, &it, err);
  if (rc == KL_OK) rc = kl_records_times(&it, n, c->tsb, err);
  if (rc == KL_CORRUPT) rc = kl_scan_batch_error(c->seg, c->batch.position, rc, err);
  c->tsn = -1; /* what the batch has to teach was learnt when it decoded */
  return rc;
}

/* The timestamps a batch is counted on (kl_fact_ts), held by the cursor:
** fact f's kept ones (their array stays put while the segment is pinned,
** but the facts themselves move when another cursor of the log learns
** one), or, f NULL, those batch_times read. */
static const kl_fact *count_ts(kl_cursor *c, const kl_fact *f) {
  c->tsread.ts = f ? f->ts : c->tsb;
  c->tsread.ts_form = f ? f->ts_form : KL_TSF_RAW;
  c->tsread.ts_step = f ? f->ts_step : 0;
  c->tsread.min_ts = f ? f->min_ts : 0;
  return &c->tsread;
}

/* Is the current batch (its fact f) one whose timestamps batch_times reads
** for counting it: v2, every record at base + i (kl_fact.ts), decoded
** once, its timestamps not kept, no key sought? */
static int times_wanted(const kl_cursor *c, const kl_fact *f) {
  const kl_batch *b = &c->batch;
  return f && f->decoded && !f->ts && !c->rd.skip && !c->bnd.keys && b->magic == 2 &&
         b->record_count > 0 && b->last_offset - b->base_offset + 1 == b->record_count;
}

/* CS_BATCH: how the rows of the batch just obtained are produced: none
** (passed over on its header or its facts), from its count, or decoded. */
static kl_rc fw_batch(kl_cursor *c, kl_err *err) {
  assert(c->state == CS_BATCH);
  if (c->batch.first_known && c->batch.base_offset > c->hi) {
    finish(c);
    return KL_OK;
  }
  int64_t reach;
  if (skew_reach(&c->bnd, &reach) && c->batch.max_timestamp > reach && c->batch.last_offset < c->hi) {
    /* The running maximum passes the bound here: with the caller's
    ** bound on disorder, no later record is below ts_hi. */
    c->hi = c->batch.last_offset;
  }
  if (c->rd.skip) c->curfact = NULL;
  const kl_fact *f = cur_fact(c);
  if (skip_batch(c, &c->batch) || fact_outside(c, f) || keys_outside(c, f)) {
    c->rd.stats->batches_skipped++;
    c->state = c->src;
    return KL_OK;
  }
  int known_ts = f && f->ts && !c->rd.skip;
  int within = batch_within(c, &c->batch, f);
  int read_ts = !known_ts && !within && times_wanted(c, f);
  if (read_ts) {
    kl_rc rc = batch_times(c, err);
    if (rc) return rc;
  }
  if (!c->bnd.keys && (known_ts || read_ts || within)) {
    /* Its rows need not be decoded until a field of one is asked for
    ** (kl_cursor_load): count(*) reads nothing when the batch is known,
    ** and with its timestamps known, neither do offsets and timestamps,
    ** nor bounds that cut through it. */
    c->count_left = c->batch.record_count;
    c->count_at = -1;
    c->cts = known_ts ? count_ts(c, f) : read_ts ? count_ts(c, NULL) : NULL;
    c->count_free = !c->cts || within;
    if (c->cts && c->lo > c->batch.base_offset) {
      /* Record i is at base + i (kl_fact.ts): straight to lo. */
      int32_t past = (int32_t)(c->lo - c->batch.base_offset);
      c->count_at = past - 1;
      c->count_left -= past;
    }
    c->state = CS_COUNT;
    return KL_OK;
  }
  kl_rc rc = open_records(c, err);
  if (rc && skip_damage(c, rc, err)) {
    c->state = c->src;
    return KL_OK;
  }
  if (rc) return rc;
  c->state = CS_RECORDS;
  return KL_OK;
}

/* Run the states until one produces a row (KL_OK) or the rows end. */
static kl_rc next_forward(kl_cursor *c, kl_err *err) {
  kl_rc rc = KL_OK;
  int row = 0;
  while (rc == KL_OK && !row) {
    switch (c->state) {
      case CS_COUNT: fw_count(c, &row); break;
      case CS_RECORDS: rc = fw_records(c, &row, err); break;
      case CS_BATCH: rc = fw_batch(c, err); break;
      case CS_FACT: rc = fw_fact(c, err); break;
      case CS_WALK: rc = fw_walk(c, err); break;
      case CS_SEGMENT: rc = enter_forward(c, kl_log_next(c->log, c->seg), err); break;
      case CS_DONE: return KL_DONE;
      case CS_BACKWARD: assert(0); return KL_MISUSE;
    }
  }
  return rc;
}

/* ---- backward ---- */

static kl_rc stretch_add(kl_cursor *c, stretch *st, const kl_batch *b) {
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 32;
    kl_batch *p = kl_realloc(c->rd.env, st->b, cap * sizeof *p);
    if (!p) return KL_NOMEM;
    st->b = p;
    st->cap = cap;
  }
  st->b[st->n] = *b;
  st->b[st->n].bytes = NULL;
  st->n++;
  return KL_OK;
}

/* collect's work done from the segment's facts, when they chain over all
** of it (every batch walked and checked once, in order): no byte is read.
** *done = 0 when they do not serve (skip mode, no chain, start or stop not
** where a batch starts): the walk then reads, and meets what is wrong. */
static kl_rc collect_facts(kl_cursor *c, stretch *st, int64_t stop, int *done) {
  kl_segment *s = c->seg;
  *done = 0;
  if (c->rd.skip || !kl_segment_facts_cover(s)) return KL_OK;
  size_t i = kl_segment_fact_from(s, st->start);
  if (i >= s->nfacts || s->facts[i].b.position != st->start) return KL_OK;
  int64_t end = st->start;
  for (; i < s->nfacts && end < stop; i++) {
    const kl_batch *b = &s->facts[i].b;
    if (stop == INT64_MAX && b->first_known && b->base_offset > c->hi) break;
    if (b->position + b->size > stop) break;
    kl_rc rc = stretch_add(c, st, b);
    if (rc) return rc;
    end = b->position + b->size;
    if (s->facts[i].ends) break;
  }
  if (stop != INT64_MAX && end != stop) {
    st->n = 0;
    return KL_OK;
  }
  st->have_last = st->n > 0;
  if (st->n) st->last_offset = st->b[st->n - 1].last_offset;
  *done = 1;
  return KL_OK;
}

/* Collect the batches of the current segment from start up to stop
** (INT64_MAX: the end of its data, or the first batch past hi).  Damage
** is kept in st (error mode) for when the stretch is produced. */
static kl_rc collect(kl_cursor *c, stretch *st, int64_t start, int64_t slot, int64_t stop,
                     kl_err *err) {
  kl_scan sc;
  kl_batch b;
  st->n = 0;
  st->start = start;
  st->slot = slot;
  st->have_last = 0;
  st->rc = KL_OK;
  kl_err_clear(&st->err);
  st->live = 1;
  int done;
  kl_rc rc = collect_facts(c, st, stop, &done);
  if (rc) return kl_err_set(err, rc, "out of memory");
  if (done) return KL_OK;
  rc = kl_scan_start(&sc, &c->rd, c->seg, start, stop, start, err);
  if (rc) return rc;
  if (stop == INT64_MAX) sc.stop_offset = c->hi;
  for (;;) {
    rc = kl_scan_next(&sc, &b, &st->err);
    if (rc == KL_OK) {
      if ((rc = stretch_add(c, st, &b)) != KL_OK) {
        kl_scan_end(&sc);
        return kl_err_set(err, rc, "out of memory");
      }
      continue;
    }
    if (rc == KL_DONE) {
      if (stop != INT64_MAX && sc.end == KL_END_STOP && sc.end_pos != stop) {
        kl_scan_end(&sc);
        return kl_err_set(err, KL_CORRUPT, "%s: position %lld: the batches from position %lld "
                          "do not end where the next offset index entry points (%lld)",
                          c->seg->log_path, (long long)sc.end_pos, (long long)start,
                          (long long)stop);
      }
      break;
    }
    if (rc == KL_CORRUPT && c->rd.skip) { /* the file changed since the salvage walk */
      kl_err_clear(&st->err);
      continue;
    }
    if (rc == KL_CORRUPT) {
      st->rc = rc;
      break;
    }
    kl_scan_end(&sc);
    return kl_err_set(err, rc, "%s", st->err.msg);
  }
  st->have_last = sc.have_prev;
  st->last_offset = sc.prev_last;
  kl_scan_end(&sc);
  return KL_OK;
}

/* Check, before cur's first batch is produced, that it follows the batch
** before it (the previous stretch's last), as a forward walk checks it: a
** walk from the previous index entry reads offsets up to it, then it, with
** the walker's rules.  In skip mode the salvage map has decided already.
** A query that stops inside cur (ORDER BY offset DESC LIMIT 10) never
** reads further back than this. */
static kl_rc check_first(kl_cursor *c, kl_err *err) {
  c->first_checked = 1;
  c->first_bad = 0;
  if (c->rd.skip || c->cur.start == 0 || c->cur.n == 0) return KL_OK;
  /* A chain of facts over the segment was checked in order when walked. */
  if (kl_segment_facts_cover(c->seg)) return KL_OK;
  int64_t slot, pos;
  kl_rc rc = kl_scan_checkpoint(&c->rd, c->seg, c->cur.slot, &slot, &pos, err);
  if (rc) return rc;
  const kl_batch *f = &c->cur.b[0];
  kl_scan sc;
  kl_batch b;
  rc = kl_scan_start(&sc, &c->rd, c->seg, pos, f->position + f->size, c->cur.start, err);
  if (rc) return rc;
  kl_err_clear(&c->first_err);
  rc = kl_scan_next(&sc, &b, &c->first_err);
  kl_scan_end(&sc);
  if (rc == KL_CORRUPT) {
    c->first_bad = 1;
    return KL_OK;
  }
  return rc == KL_OK || rc == KL_DONE ? KL_OK : kl_err_set(err, rc, "%s", c->first_err.msg);
}

/* The stretch before cur, once cur is done (none when cur starts the
** segment). */
static kl_rc collect_ahead(kl_cursor *c, kl_err *err) {
  c->ahead.live = 0;
  if (c->cur.start == 0) return KL_OK;
  int64_t slot, pos;
  kl_rc rc = kl_scan_checkpoint(&c->rd, c->seg, c->cur.slot, &slot, &pos, err);
  if (rc == KL_OK) rc = collect(c, &c->ahead, pos, slot, c->cur.start, err);
  return rc;
}

/* Start producing segment s backward from its stretch holding hi: from
** the index entry of hi's floor (or position 0) to the end of the data. */
static kl_rc enter_backward(kl_cursor *c, kl_segment *s, kl_err *err) {
  kl_seek sk;
  enter_segment(c, s);
  kl_rc rc = kl_scan_seek_offset(&c->rd, s, c->hi, &sk, err);
  if (rc == KL_OK) rc = collect(c, &c->cur, sk.index_position, sk.slot, INT64_MAX, err);
  if (rc) return rc;
  if (c->cur.rc) return kl_err_set(err, c->cur.rc, "%s", c->cur.err.msg);
  c->ci = c->cur.n;
  c->first_checked = 0;
  return KL_OK;
}

/* The previous segment worth reading, or done. */
static kl_rc prev_segment(kl_cursor *c, kl_err *err) {
  /* Nothing earlier can qualify once a segment starts at or below lo. */
  kl_segment *s = c->seg->base <= c->lo ? NULL : kl_log_prev(c->log, c->seg);
  for (; s; s = kl_log_prev(c->log, s)) {
    int wanted;
    kl_rc rc = segment_wanted(c, s, &wanted, err);
    if (rc) return rc;
    if (wanted) return enter_backward(c, s, err);
  }
  leave_segment(c);
  c->state = CS_DONE;
  return KL_OK;
}

static kl_rc next_backward(kl_cursor *c, kl_err *err) {
  kl_rc rc;
  for (;;) {
    while (c->ridx > 0) {
      if ((rc = record_at(c, --c->ridx, err)) != KL_OK) return rc;
      if (c->rec.offset < c->lo) goto done; /* everything earlier is lower */
      hash_key(c);
      if (record_in(c, &c->rec)) return KL_OK;
    }
    if (c->ci > 0) {
      if (c->ci == 1 && !c->first_checked && (rc = check_first(c, err)) != KL_OK) return rc;
      const kl_batch *b = &c->cur.b[--c->ci];
      if (c->ci == 0 && c->first_bad) {
        kl_err_set(err, KL_CORRUPT, "%s", c->first_err.msg);
        if (skip_damage(c, KL_CORRUPT, err)) continue;
        return KL_CORRUPT;
      }
      if (b->last_offset < c->lo) goto done;
      if ((rc = load_batch_records(c, b, err)) != KL_OK) return rc;
      c->ridx = c->rn;
      continue;
    }
    if ((rc = collect_ahead(c, err)) != KL_OK) return rc;
    if (c->ahead.live) {
      if (c->ahead.rc) {
        kl_err_set(err, c->ahead.rc, "%s", c->ahead.err.msg);
        return c->ahead.rc;
      }
      stretch t = c->cur;
      c->cur = c->ahead;
      c->ahead = t;
      c->ahead.live = 0;
      c->first_checked = 0;
      c->ci = c->cur.n;
      continue;
    }
    if ((rc = prev_segment(c, err)) != KL_OK) return rc;
    if (c->state == CS_DONE) return KL_DONE;
  }
done:
  leave_segment(c);
  c->state = CS_DONE;
  return KL_DONE;
}

/* ---- common ---- */

kl_rc kl_cursor_start(kl_cursor *c, const kl_bounds *b, kl_err *err) {
  assert(c && b && c->log);
  leave_segment(c);
  release_ahead(c); /* a scan claims it again once it proves long */
  c->ra_idle = -1;
  unpin(c);
  c->bnd = *b;
  c->lo = b->off_lo;
  c->hi = b->off_hi;
  c->ts_bounded = b->ts_lo != INT64_MIN || b->ts_hi != INT64_MAX;
  c->at_hi = 0;
  /* Forward: enter_forward sets the state of the first segment's source. */
  c->state = b->desc ? CS_BACKWARD : CS_SEGMENT;
  c->lazy = 0;
  c->cts = NULL;
  c->curfact = NULL;
  c->run = 0;
  c->run_bytes = 0;
  c->fpos = c->yielded = -1;
  c->ci = c->rn = c->ridx = 0;
  c->cur.live = c->ahead.live = 0;
  c->first_checked = c->first_bad = 0;
  if (has_ts_lo(c)) {
    kl_time_lookup tl;
    kl_err e = {0};
    /* A floor is enough: records are filtered by timestamp anyway, and
    ** it needs no record read when the facts know the batch. */
    kl_rc rc = kl_log_find_time_floor(c->log, &c->rd, b->ts_lo, reads_whole(c), &tl, &e);
    if (rc == KL_CORRUPT) {
      /* The seek is only a shortcut (records are filtered by timestamp
      ** anyway): without it the scan meets the damage itself, and reports
      ** it with its file and position, or skips it. */
      tl.status = KL_LOOKUP_OK;
      tl.offset = c->lo;
    } else if (rc) {
      return kl_err_set(err, rc, "%s", e.msg);
    }
    if (tl.status != KL_LOOKUP_OK) {
      c->state = CS_DONE;
      return KL_OK;
    }
    if (tl.offset > c->lo) c->lo = tl.offset;
  }
  int64_t reach;
  if (skew_reach(b, &reach)) {
    int64_t at;
    int found;
    kl_err e = {0};
    kl_rc rc = kl_log_time_reached(c->log, &c->rd, reach + 1, &at, &found, &e);
    if (rc == KL_OK && found && at < c->hi) c->hi = at;
    /* Damage met on the way: the scan meets it too, or skips it. */
    if (rc && rc != KL_CORRUPT) return kl_err_set(err, rc, "%s", e.msg);
  }
  if (c->lo > c->hi || b->ts_lo > b->ts_hi || !kl_log_first(c->log)) {
    c->state = CS_DONE;
    return KL_OK;
  }
  kl_rc rc;
  if (!b->desc) {
    kl_segment *s = kl_log_floor(c->log, c->lo);
    rc = enter_forward(c, s ? s : kl_log_first(c->log), err);
  } else {
    kl_segment *s = kl_log_floor(c->log, c->hi);
    if (!s) {
      c->state = CS_DONE;
      return KL_OK;
    }
    int wanted;
    rc = segment_wanted(c, s, &wanted, err);
    if (rc == KL_OK && wanted) {
      rc = enter_backward(c, s, err);
    } else if (rc == KL_OK) {
      enter_segment(c, s);
      rc = prev_segment(c, err);
    }
  }
  if (rc) c->state = CS_DONE;
  return rc;
}

int kl_cursor_lazy(const kl_cursor *c) { return c->lazy; }

int kl_cursor_peek(const kl_cursor *c, int64_t *offset, int64_t *timestamp) {
  assert(!c->lazy || c->state == CS_COUNT);
  if (!c->lazy || !c->cts) return 0;
  *offset = c->batch.base_offset + c->count_at;
  *timestamp = kl_fact_ts(c->cts, c->count_at);
  return 1;
}

/* The bytes of record i of the current batch, uncompressed, whose end
** fact f knows: from the window when it holds them (the batch was just
** read), else one read of the record alone. */
static kl_rc record_bytes(kl_cursor *c, const kl_fact *f, int32_t i, const uint8_t **p,
                          kl_err *err) {
  int64_t from = i == 0 ? KL_V2_HEADER : kl_fact_rend(f, i - 1), to = kl_fact_rend(f, i);
  int64_t at = c->batch.position + from;
  size_t n = (size_t)(to - from);
  const kl_window *w = &c->rd.win;
  if (w->f == &c->seg->log && c->seg->opened && at >= w->start &&
      at + (int64_t)n <= w->start + (int64_t)w->len) {
    *p = w->buf.p + (at - w->start);
    return KL_OK;
  }
  *p = c->one.p;
  if (c->one_seg == c->seg && c->one_at == at && c->one.len == n) return KL_OK;
  c->one_seg = NULL;
  kl_rc rc = kl_buf_reserve(c->rd.env, &c->one, n);
  if (rc) return kl_err_set(err, rc, "out of memory");
  if ((rc = seg_file(c, err)) != KL_OK) return rc;
  if ((rc = kl_file_read(&c->seg->log, at, c->one.p, n, err)) != KL_OK) return rc;
  if (c->seg->log.map) {
    c->rd.stats->bytes_mapped += n;
  } else {
    c->rd.stats->reads++;
    c->rd.stats->bytes_read += n;
  }
  c->one.len = n;
  c->one_seg = c->seg;
  c->one_at = at;
  *p = c->one.p;
  return KL_OK;
}

/* The decompressed bytes of the current batch's records up to the end of
** record i, which fact f knows (the batch is read whole, in one read or
** none when the window holds it; decompression stops at the record). */
static kl_rc packed_bytes(kl_cursor *c, const kl_fact *f, int32_t i, const uint8_t **p,
                          kl_err *err) {
  kl_bcache *bc = c->seg->set && !c->rd.skip ? c->seg->set->bcache : NULL;
  size_t need = kl_fact_rend(f, i), from = i == 0 ? 0 : kl_fact_rend(f, i - 1), have = 0;
  const uint8_t *q;
  unpin(c);
  if (bc) {
    q = kl_bcache_get(bc, c->seg->uid, c->batch.position, c->batch.size, need, &have, &c->pin);
    if (q) {
      c->pin_cache = bc;
      *p = q + from;
      return KL_OK;
    }
    /* Kept up to an earlier record: a batch looked up again is
    ** decompressed whole this time. */
    if (have) need = kl_fact_rend(f, f->b.record_count - 1);
  }
  /* The records' decompressed size is known (the last one's end): room
  ** for all of it at once, so that a zstd frame of unknown size (a Kafka
  ** producer's) decodes in one pass, not again into a buffer doubled. */
  size_t total = kl_fact_rend(f, f->b.record_count - 1);
  if (c->rd.scratch.cap < total) {
    c->rd.held_seg = NULL; /* what it held moves */
    if (kl_buf_reserve(c->rd.env, &c->rd.scratch, total) != KL_OK) {
      return kl_err_set(err, KL_NOMEM, "out of memory");
    }
  }
  kl_rc rc = batch_bytes(c, err);
  if (rc == KL_OK) rc = kl_reader_prefix(&c->rd, c->seg, &c->batch, need, &q, err);
  if (rc) return rc;
  if (bc && q == c->rd.scratch.p) {
    /* The cache takes the decompressed bytes (the reader no longer holds
    ** them) and gives back an evicted batch's memory for the next. */
    int cheap = c->batch.codec == KL_CODEC_LZ4 || c->batch.codec == KL_CODEC_SNAPPY;
    const uint8_t *k = kl_bcache_adopt(bc, c->seg->uid, c->batch.position, c->batch.size,
                                       &c->rd.scratch, cheap, &c->pin);
    if (k) {
      kl_reader_forget(&c->rd);
      c->pin_cache = bc;
      q = k;
    }
  }
  *p = q + from;
  return KL_OK;
}

/* A point lookup in a batch whose record ends are known: read (and
** decompress) no more than that one record needs, and decode it (its
** batch's CRC held when it was learnt). */
static kl_rc load_one(kl_cursor *c, const kl_fact *f, kl_err *err) {
  int32_t i = c->count_at;
  uint32_t from =
      i == 0 ? (c->batch.codec == KL_CODEC_NONE ? KL_V2_HEADER : 0) : kl_fact_rend(f, i - 1);
  const uint8_t *p = NULL;
  kl_rc rc = c->batch.codec == KL_CODEC_NONE ? record_bytes(c, f, i, &p, err)
                                             : packed_bytes(c, f, i, &p, err);
  if (rc) return rc;
  int64_t to = kl_fact_rend(f, i);
  kl_records one;
  memset(&one, 0, sizeof one);
  one.b = c->batch;
  one.p = p;
  one.end = p + (to - from);
  one.remaining = 1;
  one.last_delta = i - 1; /* record i is at base + i */
  c->rd.stats->batches_decoded++;
  rc = kl_records_next(&one, &c->rec, err);
  if (rc == KL_OK) c->rd.stats->records_decoded++;
  return rc ? kl_scan_batch_error(c->seg, c->batch.position, rc, err) : KL_OK;
}

/* A point lookup landed in the current batch, whose timestamps a scan kept
** but not where its records end: read it (decompressed, when it is), and
** keep where each record ends, framing them by their lengths.  The lookup
** then takes its record from those bytes as every later one in the batch
** does (load_one: the window holds them, or the reader the decompressed
** records, which the table's kept batches adopt).  Quietly nothing when
** the batch does not read or frame: the lookup decodes it as before, and
** reports what is wrong. */
static void learn_ends(kl_cursor *c, kl_fact *f) {
  kl_err e = {0};
  kl_records it;
  uint64_t decoded = c->rd.stats->batches_decoded; /* the lookup counts it (load_one) */
  kl_rc rc = batch_bytes(c, &e);
  if (rc == KL_OK) rc = kl_reader_records(&c->rd, c->seg, &c->batch, &it, &e);
  c->rd.stats->batches_decoded = decoded;
  if (rc) return;
  const uint8_t *recs0 = c->batch.codec == KL_CODEC_NONE ? c->batch.bytes : it.p;
  int32_t n = 0;
  while (it.remaining > 0) {
    if ((n == c->tscap && !grow_ts(c)) || kl_records_skip(&it, 1, &e) != KL_OK) return;
    c->reb[n++] = (uint32_t)(it.p - recs0);
  }
  kl_segment_learn_ends(c->seg, f, c->reb, n);
}

kl_rc kl_cursor_load(kl_cursor *c, kl_err *err) {
  assert(!c->lazy || (c->state == CS_COUNT && c->seg));
  if (!c->lazy) return KL_OK;
  /* Lazy rows come only from batches whose records all decoded before
  ** (batch_within, or their timestamps kept): a point lookup reads its one
  ** record when its end is known, else the records before the row are
  ** passed over by length and the rest of the batch is produced by
  ** decoding, as any other batch. */
  kl_fact *f = cur_fact(c);
  kl_rc rc;
  if (c->lo == c->hi && f && f->ts && !f->rend && !c->rd.skip) learn_ends(c, f); /* ts: v2 */
  if (c->lo == c->hi && f && f->rend) {
    rc = load_one(c, f, err); /* counting goes on: the next row is past hi */
  } else {
    rc = open_records(c, err);
    int32_t i = 0;
    if (rc == KL_OK && f && f->decoded && c->count_at > 0) {
      rc = kl_records_skip(&c->it, c->count_at, err);
      c->tsn = -1; /* what it knows of the batch was learnt already */
      c->kfw = 0;
      i = c->count_at;
    }
    for (; rc == KL_OK && i <= c->count_at; i++) { /* up to the row itself */
      if ((rc = kl_records_next(&c->it, &c->rec, err)) == KL_OK) note_record(c);
    }
    if (rc) rc = kl_scan_batch_error(c->seg, c->batch.position, rc, err);
    c->cts = NULL;
    c->state = CS_RECORDS;
  }
  c->lazy = 0;
  if (rc) {
    finish(c);
    c->cts = NULL;
  }
  return rc;
}

int kl_cursor_step(kl_cursor *c) {
  if (c->state == CS_RECORDS) { /* a plain batch's next decoded record */
    if (c->cx + 1 >= c->cn) return 0;
    c->cx++;
    c->rd.stats->records_decoded++;
    return 1;
  }
  if (c->state == CS_COUNT && c->count_free && c->count_left > 0) {
    /* The next of a batch's rows counted, not decoded (fw_count's, whose
    ** checks of the timestamps kept would all pass). */
    c->count_left--;
    c->count_at++;
    c->lazy = 1;
    return 1;
  }
  return 0;
}

kl_rc kl_cursor_next(kl_cursor *c, kl_err *err) {
  /* Between calls a forward cursor waits in a state of its machine, a
  ** backward one in CS_BACKWARD. */
  assert(c->state == CS_DONE || (c->state == CS_BACKWARD) == (c->bnd.desc != 0));
  assert(c->state == CS_DONE || c->state == CS_BACKWARD || c->seg);
  /* The hot states first, outside the state loop: count(*) spends most
  ** of its time in CS_COUNT, a scan of values in CS_RECORDS, and the
  ** loop's dispatch cost count(*) a third more a row. */
  int row = 0;
  if (c->state == CS_COUNT) {
    fw_count(c, &row);
    if (row) return KL_OK;
  } else if (c->state == CS_RECORDS) {
    kl_rc rc = fw_records(c, &row, err);
    if (rc == KL_OK && row) return KL_OK;
    if (rc != KL_OK) {
      finish(c);
      return rc;
    }
  }
  c->lazy = 0;
  if (c->state == CS_DONE) return KL_DONE;
  kl_rc rc = c->bnd.desc ? next_backward(c, err) : next_forward(c, err);
  if (rc != KL_OK && rc != KL_DONE) finish(c);
  return rc;
}
