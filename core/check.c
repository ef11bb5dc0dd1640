/*
** check.c - read-only integrity check of a partition directory.
** What is checked and why: check.h; Kafka's rules: behaviour.md 7.
*/
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "file.h"
#include "index.h"
#include "log.h"
#include "os.h"
#include "scan.h"
#include "segment.h"
#include "txn.h"

const char *kl_severity_name(int sev) {
  return sev == KL_SEV_ERROR ? "error" : sev == KL_SEV_WARNING ? "warning" : "info";
}

/* One batch of the segment being checked, for index validation. */
typedef struct span {
  int64_t pos;              /* start position */
  int64_t end;              /* position after it */
  int64_t first;            /* first offset (see add_span) */
  int64_t last;             /* last offset */
  int64_t max_ts;           /* header max timestamp */
} span;

/* A .txnindex entry recover() would rebuild: an ABORT marker's
** (kl_txn_end says which first offsets it may hold). */
typedef kl_txn_end txn_expect;

/* Per-file counts of findings by kind, for the KL_CHECK_MAX_PER_KIND cap. */
#define MAX_KINDS 16
typedef struct kind_count {
  const char *kind;
  int64_t n;
  int sev;
  int64_t last_pos;
} kind_count;

typedef struct checker {
  const kl_env *env;
  kl_check_fn fn;
  void *ud;
  kl_rc rc;                 /* first non-OK callback result */
  int64_t segment;          /* current segment base */
  char file[64];            /* current file name */
  kind_count counts[MAX_KINDS];
  int ncounts;
  span *spans;
  size_t nspans, cap;
  kl_txn_state producers;   /* the producers' transactions so far */
  txn_expect *expect;       /* the current segment's ABORT markers */
  size_t nexpect, expect_cap;
  int txn_unknown;          /* the current segment's walk met damage: what
                            ** recover() rebuilds is not known */
} checker;

static void emit(checker *ck, const char *kind, int sev, int64_t pos, const char *msg) {
  if (ck->rc) return;
  kl_finding f = {ck->segment, ck->file, pos, kind, sev, msg};
  ck->rc = ck->fn(ck->ud, &f);
}

/* Report a finding about the current file (printf-style message, which
** gets the file name and position prepended). */
#if defined(__GNUC__)
__attribute__((format(printf, 5, 6)))
#endif
static void report(checker *ck, const char *kind, int sev, int64_t pos, const char *fmt, ...) {
  kind_count *kc = NULL;
  for (int i = 0; i < ck->ncounts; i++) {
    if (strcmp(ck->counts[i].kind, kind) == 0) kc = &ck->counts[i];
  }
  if (!kc && ck->ncounts < MAX_KINDS) {
    kc = &ck->counts[ck->ncounts++];
    kc->kind = kind;
    kc->n = 0;
  }
  if (kc) {
    kc->sev = sev;
    kc->last_pos = pos;
    if (++kc->n > KL_CHECK_MAX_PER_KIND) return;
  }
  char body[400], msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  if (pos >= 0) snprintf(msg, sizeof msg, "%s: position %lld: %s", ck->file, (long long)pos, body);
  else snprintf(msg, sizeof msg, "%s: %s", ck->file, body);
  emit(ck, kind, sev, pos, msg);
}

/* Start reporting about another file; close the previous one's counts. */
static void begin_file(checker *ck, const char *name) {
  for (int i = 0; i < ck->ncounts; i++) {
    kind_count *kc = &ck->counts[i];
    if (kc->n > KL_CHECK_MAX_PER_KIND) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s: %lld more findings of kind %s not listed", ck->file,
               (long long)(kc->n - KL_CHECK_MAX_PER_KIND), kc->kind);
      emit(ck, kc->kind, kc->sev, -1, msg);
    }
  }
  ck->ncounts = 0;
  snprintf(ck->file, sizeof ck->file, "%s", name ? name : "");
}

static kl_rc add_span(checker *ck, const kl_batch *b, int64_t seg_base) {
  if (ck->nspans == ck->cap) {
    size_t cap = ck->cap ? ck->cap * 2 : 256;
    span *p = kl_realloc(ck->env, ck->spans, cap * sizeof *p);
    if (!p) return KL_NOMEM;
    ck->spans = p;
    ck->cap = cap;
  }
  span *s = &ck->spans[ck->nspans++];
  s->pos = b->position;
  s->end = b->position + b->size;
  /* A legacy wrapper's first offset is unknown without decompressing: the
  ** previous batch's last + 1 bounds it from below. */
  s->first = b->first_known ? b->base_offset
                            : ck->nspans > 1 ? s[-1].last + 1 : seg_base;
  s->last = b->last_offset;
  s->max_ts = b->max_timestamp;
  return KL_OK;
}

/* Index of the span starting exactly at pos, or -1. */
static int64_t span_at(const checker *ck, int64_t pos) {
  size_t lo = 0, hi = ck->nspans;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ck->spans[mid].pos < pos) lo = mid + 1;
    else hi = mid;
  }
  return lo < ck->nspans && ck->spans[lo].pos == pos ? (int64_t)lo : -1;
}

/* Index of the last span starting before pos, or -1. */
static int64_t span_before(const checker *ck, int64_t pos) {
  size_t lo = 0, hi = ck->nspans;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ck->spans[mid].pos < pos) lo = mid + 1;
    else hi = mid;
  }
  return (int64_t)lo - 1;
}

/* Index of the span holding offset off (first <= off <= last), or -1. */
static int64_t span_holding(const checker *ck, int64_t off) {
  size_t lo = 0, hi = ck->nspans;  /* first span with last >= off */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ck->spans[mid].last < off) lo = mid + 1;
    else hi = mid;
  }
  if (lo < ck->nspans && ck->spans[lo].first <= off) return (int64_t)lo;
  return -1;
}

/* Batch b of a producer in offset order (kl_txn_step); an ABORT of an
** open transaction is a CompletedTxn that recover() indexes. */
static kl_rc track_producer(checker *ck, const kl_batch *b, int ctl_type, int32_t ctl_epoch) {
  kl_txn_end x;
  int aborted;
  kl_rc rc = kl_txn_step(ck->env, &ck->producers, b, ctl_type, ctl_epoch, &x, &aborted);
  if (rc || !aborted) return rc;
  if (ck->nexpect == ck->expect_cap) {
    size_t cap = ck->expect_cap ? ck->expect_cap * 2 : 16;
    txn_expect *p = kl_realloc(ck->env, ck->expect, cap * sizeof *p);
    if (!p) return KL_NOMEM;
    ck->expect = p;
    ck->expect_cap = cap;
  }
  ck->expect[ck->nexpect++] = x;
  return KL_OK;
}

/* Results of walking a segment's batches. */
typedef struct walk {
  int64_t end;              /* position where readable batches end */
  int64_t next_offset;      /* last offset + 1 of the last batch, or base */
  int64_t max_ts;           /* largest batch max timestamp, -1 if none */
} walk;

/* Walk every entry from position 0 with the readers' walker (scan.h),
** reporting each damage it meets, the way a data end that is not damage
** came about, and record-level damage in the batches it yields.  A
** Kafka-rule walker (complexity above 25): one branch per finding kind. */
static kl_rc check_log(checker *ck, kl_reader *rd, kl_segment *s, walk *w) {
  w->next_offset = s->base;
  w->max_ts = -1;
  w->end = 0;
  ck->nspans = 0;
  kl_scan sc;
  kl_err e = {0};
  kl_rc rc = kl_scan_start(&sc, rd, s, 0, INT64_MAX, 0, &e);
  if (rc) return rc;
  while (!ck->rc) {
    kl_batch b;
    kl_err_clear(&e);
    rc = kl_scan_next(&sc, &b, &e);
    if (rc == KL_DONE) {
      if (sc.end == KL_END_TORN) {
        report(ck, "truncated_batch", KL_SEV_WARNING, sc.dmg.pos, "%s", sc.dmg.what);
      } else if (sc.end == KL_END_ZEROS) {
        report(ck, "zero_filled_tail", KL_SEV_INFO, sc.dmg.pos, "%s", sc.dmg.what);
      }
      break;
    }
    if (rc == KL_CORRUPT) {
      const kl_damage *d = &sc.dmg;
      ck->txn_unknown = 1;
      report(ck, kl_damage_name(d->kind), KL_SEV_ERROR, d->pos, "%s", d->what);
      /* A header that parsed still tells the index checks where a batch
      ** was; its offsets do not move the walk's (as in the walker). */
      if (d->b.size > 0) {
        if ((rc = add_span(ck, &d->b, s->base)) != KL_OK) break;
        if (d->b.max_timestamp > w->max_ts) w->max_ts = d->b.max_timestamp;
        w->next_offset = d->b.last_offset + 1;
      }
      continue;
    }
    if (rc) break;
    if (b.last_offset - s->base > INT32_MAX) {
      report(ck, "offset_overflow", KL_SEV_WARNING, b.position,
             "last offset %lld is more than 2^31-1 above the segment base", (long long)b.last_offset);
    }
    kl_records it;
    kl_record r;
    kl_err re = {0};
    rd->held_seg = NULL; /* the scratch is overwritten here */
    rc = kl_records_open(&it, rd->env, &rd->codec, &b, &rd->scratch, NULL, &re);
    /* Kafka reads a control batch's first record only (recover(), the
    ** consumer, the cleaner); one it rejects ends recover() there. */
    int ctl_type = -1, first = 1;
    int32_t epoch = -1;
    while (rc == KL_OK && (rc = kl_records_next(&it, &r, &re)) == KL_OK) {
      if (b.is_control && first) {
        kl_err ce = {0};
        if (kl_control_parse(&r, &ctl_type, &epoch, &ce) != KL_OK) {
          ctl_type = -1;
          ck->txn_unknown = 1;
          report(ck, "bad_control_record", KL_SEV_ERROR, b.position, "%s", ce.msg);
        }
      }
      first = 0;
    }
    if (rc == KL_NOMEM) break;
    if (rc != KL_DONE) {
      if (b.is_control) ck->txn_unknown = 1;
      report(ck, kl_damage_name(KL_DMG_RECORDS), KL_SEV_ERROR, b.position, "%s",
             re.msg[0] ? re.msg : kl_rc_name(rc));
    }
    if (b.magic == 2 && b.producer_id >= 0 &&
        (rc = track_producer(ck, &b, ctl_type, epoch)) != KL_OK) {
      break;
    }
    if ((rc = add_span(ck, &b, s->base)) != KL_OK) break;
    if (b.max_timestamp > w->max_ts) w->max_ts = b.max_timestamp;
    w->next_offset = b.last_offset + 1;
    rc = KL_OK;
  }
  kl_scan_end(&sc);
  if (ck->nspans) {
    /* Where readable batches end (the walk may have stopped on damage). */
    const span *l = &ck->spans[ck->nspans - 1];
    w->end = l->end;
  }
  if (rc == KL_DONE || rc == KL_OK) return KL_OK;
  if (rc == KL_IO) {
    ck->txn_unknown = 1;
    report(ck, "unreadable", KL_SEV_ERROR, -1, "%s", e.msg);
    return KL_OK;
  }
  return rc;
}

/* The segment's index of kind, with what is wrong with the file as a
** whole reported; *ix is NULL when there are no entries to look at. */
static kl_rc open_index(checker *ck, kl_reader *rd, kl_segment *s, int kind, kl_index **ix) {
  kl_err e = {0};
  kl_rc rc = kl_scan_index(rd, s, kind, ix, &e);
  if (rc == KL_NOMEM) return rc;
  if (rc) {
    report(ck, "unreadable", KL_SEV_ERROR, -1, "%s", e.msg);
    *ix = NULL;
  } else if ((*ix)->file_len < 0) {
    if (kind == KL_INDEX_OFFSET) {
      report(ck, "missing_index", KL_SEV_WARNING, -1, "the offset index is missing (Kafka's "
             "LogLoader rebuilds it by recovering the segment)");
    } else {
      report(ck, "missing_index", KL_SEV_INFO, -1, "the time index is missing (Kafka creates it "
             "empty)");
    }
    *ix = NULL;
  } else if ((*ix)->unusable) {
    report(ck, "index_bad_length", KL_SEV_WARNING, -1, "length %lld is not a multiple of %d",
           (long long)(*ix)->file_len, kind);
    *ix = NULL;
  }
  return KL_OK;
}

/* Entries of ix before its zero-filled slots (stale ones included), the
** slots reported. */
static int64_t entries_before_zeros(checker *ck, const kl_segment *s, const kl_index *ix) {
  int64_t n = ix->file_len / ix->kind - ix->zero_slots;
  if (ix->zero_slots > 0) {
    report(ck, "preallocated_index_slots", s->is_last ? KL_SEV_INFO : KL_SEV_WARNING,
           n * ix->kind, "%lld zero-filled slots after %lld entries%s",
           (long long)ix->zero_slots, (long long)n,
           s->is_last ? " (preallocated by the live segment)" : " (Kafka trims them on roll)");
  }
  return n;
}

/* A read of ix that failed while it was checked is a finding; running out
** of memory also stops the check. */
static kl_rc index_read_failure(checker *ck, const kl_index *ix) {
  if (!kl_index_failed(ix)) return KL_OK;
  kl_err e = {0};
  kl_rc rc = kl_index_error(ix, &e);
  report(ck, "unreadable", KL_SEV_ERROR, -1, "%s", e.msg);
  return rc == KL_NOMEM ? KL_NOMEM : KL_OK;
}

/* Kafka's OffsetIndex sanity rules, entry by entry; a Kafka-rule walker
** (complexity above 25): one branch per finding kind. */
static kl_rc check_offset_index(checker *ck, kl_reader *rd, kl_segment *s, const walk *w) {
  kl_index *ix;
  kl_rc rc = open_index(ck, rd, s, KL_INDEX_OFFSET, &ix);
  if (rc || !ix) return rc;
  int64_t n = entries_before_zeros(ck, s, ix);
  int64_t prev_off = -1, prev_pos = -1;
  for (int64_t i = 0; i < n && !ck->rc && !kl_index_failed(ix); i++) {
    int64_t rel = kl_index_relative_at(ix, i);
    int64_t off = kl_index_offset_at(ix, i);
    int64_t p = kl_index_position_at(ix, i);
    if (i > 0 && (off <= prev_off || p <= prev_pos)) {
      report(ck, "index_not_monotonic", KL_SEV_WARNING, i * 8,
             "entry %lld (offset %lld, position %lld) does not follow entry %lld (offset %lld, "
             "position %lld)", (long long)i, (long long)off, (long long)p, (long long)(i - 1),
             (long long)prev_off, (long long)prev_pos);
      prev_off = off > prev_off ? off : prev_off;
      prev_pos = p > prev_pos ? p : prev_pos;
      continue;
    }
    prev_off = off;
    prev_pos = p;
    if (rel > INT32_MAX) {
      report(ck, "index_entry_mismatch", KL_SEV_WARNING, i * 8,
             "entry %lld: relative offset %lld does not fit 31 bits", (long long)i, (long long)rel);
      continue;
    }
    if (off == INT64_MAX) { /* no record has it: the next offset must fit */
      report(ck, "index_entry_mismatch", KL_SEV_WARNING, i * 8,
             "entry %lld: relative offset %lld takes base %lld past the largest offset",
             (long long)i, (long long)rel, (long long)s->base);
      continue;
    }
    /* Past a written log's commit (segment.h limit): an open transaction's
    ** entries, not damage; the next writer removes them if it never
    ** commits. */
    if (s->limit >= 0 && p >= s->limit) break;
    if (p >= w->end && !(p == 0 && w->end == 0)) {
      report(ck, "index_points_past_log", KL_SEV_WARNING, i * 8,
             "entry %lld (offset %lld) points to position %lld, past the end of the batches at "
             "%lld", (long long)i, (long long)off, (long long)p, (long long)w->end);
      continue;
    }
    int64_t k = span_at(ck, p);
    if (k < 0) {
      report(ck, "index_entry_mismatch", KL_SEV_WARNING, i * 8,
             "entry %lld (offset %lld): no batch starts at position %lld", (long long)i,
             (long long)off, (long long)p);
      continue;
    }
    /* The entry covers the batches from p up to the next entry (one append
    ** may hold several batches or legacy messages): its offset lies in
    ** them, whether it is the first offset (before Kafka 2.0) or the last. */
    int64_t np = w->end;
    if (i + 1 < n) {
      int64_t q = kl_index_position_at(ix, i + 1);
      if (q > p && q < np) np = q;
    }
    int64_t j = span_before(ck, np);
    if (off < ck->spans[k].first || (j >= 0 && off > ck->spans[j].last)) {
      report(ck, "index_entry_mismatch", KL_SEV_WARNING, i * 8,
             "entry %lld: offset %lld lies outside the batches it covers (offsets %lld..%lld "
             "from position %lld)", (long long)i, (long long)off, (long long)ck->spans[k].first,
             (long long)(j >= 0 ? ck->spans[j].last : -1), (long long)p);
    }
  }
  return index_read_failure(ck, ix);
}

static kl_rc check_time_index(checker *ck, kl_reader *rd, kl_segment *s, const walk *w) {
  kl_index *ix;
  kl_rc rc = open_index(ck, rd, s, KL_INDEX_TIME, &ix);
  if (rc || !ix) return rc;
  int64_t n = entries_before_zeros(ck, s, ix);
  int64_t prev_ts = 0, prev_off = 0, last_ts = -1;
  for (int64_t i = 0; i < n && !ck->rc && !kl_index_failed(ix); i++) {
    int64_t ts = kl_index_timestamp_at(ix, i);
    int64_t rel = kl_index_relative_at(ix, i);
    int64_t off = kl_index_time_offset_at(ix, i);
    if (i > 0 && (ts <= prev_ts || off < prev_off)) {
      report(ck, "timeindex_not_monotonic", KL_SEV_WARNING, i * 12,
             "entry %lld (timestamp %lld, offset %lld) does not follow entry %lld (timestamp "
             "%lld, offset %lld)", (long long)i, (long long)ts, (long long)off, (long long)(i - 1),
             (long long)prev_ts, (long long)prev_off);
      continue;
    }
    if (s->limit >= 0 && rel <= INT32_MAX && off >= w->next_offset) break; /* as above */
    prev_ts = ts;
    prev_off = off;
    last_ts = ts;
    if (rel > INT32_MAX || off >= w->next_offset) {
      report(ck, "timeindex_points_past_log", KL_SEV_WARNING, i * 12,
             "entry %lld (timestamp %lld) names offset %lld, past the segment's next offset %lld",
             (long long)i, (long long)ts, (long long)off, (long long)w->next_offset);
      continue;
    }
    int64_t k = span_holding(ck, off);
    if (k < 0) {
      report(ck, "timeindex_entry_mismatch", KL_SEV_WARNING, i * 12,
             "entry %lld (timestamp %lld): no batch holds offset %lld", (long long)i,
             (long long)ts, (long long)off);
    } else if (ck->spans[k].max_ts != ts) {
      report(ck, "timeindex_entry_mismatch", KL_SEV_WARNING, i * 12,
             "entry %lld: timestamp %lld differs from the max timestamp %lld of the batch at "
             "position %lld holding offset %lld", (long long)i, (long long)ts,
             (long long)ck->spans[k].max_ts, (long long)ck->spans[k].pos, (long long)off);
    }
  }
  if (kl_index_failed(ix)) return index_read_failure(ck, ix);
  if (w->max_ts >= 0 && last_ts < w->max_ts && !ck->rc) {
    report(ck, "timeindex_missing_final_entry", s->is_last ? KL_SEV_INFO : KL_SEV_WARNING,
           n * 12, "the last entry's timestamp %lld is below the segment's max timestamp %lld%s",
           (long long)last_ts, (long long)w->max_ts,
           s->is_last ? " (a live segment gets it on roll or close)"
                      : " (Kafka appends it when the segment rolls)");
  }
  return KL_OK;
}

/* An ABORT marker without its entry: read_committed readers would return
** the aborted records.  pos: where the entry belongs (-1: no file). */
static void report_missing(checker *ck, const txn_expect *x, int64_t pos) {
  report(ck, "txnindex_missing_entry", KL_SEV_WARNING, pos,
         "%sno entry for the aborted transaction of producer %lld (offsets %lld..%lld, ABORT "
         "marker at %lld): read_committed readers would return its records",
         pos < 0 ? "the file is absent: " : "", (long long)x->pid, (long long)x->hi,
         (long long)x->last, (long long)x->last);
}

/*
** The .txnindex against the entries recover() would rebuild from the log
** (ck->expect, in marker order, as the file's entries must be).  Entries are
** paired by their last offset, the marker's.  The last stable offset field
** is not compared: Kafka stores the first offset of the earliest other
** transaction open when the marker was appended, and which were open then
** is not a property of the log alone: a follower appending a fetched chunk
** has already registered transactions begun later in that chunk, and
** transactions begun before the first segment are known only to the
** producer snapshot.  Readers do not use it to decide what was aborted.
** A Kafka-rule walker (complexity above 25): one branch per finding kind.
*/
static void check_txn_index(checker *ck, kl_segment *s, const char *path) {
  int compare = !ck->txn_unknown;
  size_t j = 0;
  kl_file f;
  kl_err e = {0};
  kl_rc rc = kl_file_open(&f, s->env, path, &e);
  if (rc == KL_NOTFOUND) {
    /* Absent: normal without aborted transactions (Kafka creates the file
    ** for the first one). */
    for (; compare && j < ck->nexpect && !ck->rc; j++) {
      if (!ck->expect[j].optional) report_missing(ck, &ck->expect[j], -1);
    }
    return;
  }
  if (rc) {
    report(ck, "unreadable", KL_SEV_ERROR, -1, "%s", e.msg);
    return;
  }
  uint8_t entry[KL_TXN_ENTRY_SIZE];
  int64_t i = 0, prev_last = INT64_MIN;
  for (; (i + 1) * KL_TXN_ENTRY_SIZE <= f.size && !ck->rc; i++) {
    if (kl_file_read(&f, i * KL_TXN_ENTRY_SIZE, entry, sizeof entry, &e) != KL_OK) {
      report(ck, "unreadable", KL_SEV_ERROR, i * KL_TXN_ENTRY_SIZE, "%s", e.msg);
      compare = 0;
      break;
    }
    kl_txn_abort t;
    int kafka_ok = kl_txn_entry(entry, s->base, &t);
    int64_t pid = t.pid, first = t.first, last = t.last;
    /* Beyond what Kafka rejects: what its writer never writes. */
    if (!kafka_ok || first > last || last <= prev_last) {
      report(ck, "txnindex_bad_entry", KL_SEV_WARNING, i * KL_TXN_ENTRY_SIZE,
             "entry %lld (version %d, first offset %lld, last offset %lld) is invalid for a "
             "segment based at %lld", (long long)i, entry[0], (long long)first, (long long)last,
             (long long)s->base);
      prev_last = last;
      continue;
    }
    prev_last = last;
    if (!compare) continue;
    for (; j < ck->nexpect && ck->expect[j].last < last && !ck->rc; j++) {
      if (!ck->expect[j].optional) report_missing(ck, &ck->expect[j], i * KL_TXN_ENTRY_SIZE);
    }
    const txn_expect *x = j < ck->nexpect && ck->expect[j].last == last ? &ck->expect[j++] : NULL;
    if (!x) {
      report(ck, "txnindex_extra_entry", KL_SEV_WARNING, i * KL_TXN_ENTRY_SIZE,
             "entry %lld (producer %lld, offsets %lld..%lld): no ABORT marker of an open "
             "transaction at offset %lld; read_committed readers would drop that producer's "
             "transactional records from offset %lld", (long long)i, (long long)pid,
             (long long)first, (long long)last, (long long)last, (long long)first);
    } else if (pid != x->pid) {
      report(ck, "txnindex_entry_mismatch", KL_SEV_WARNING, i * KL_TXN_ENTRY_SIZE,
             "entry %lld names producer %lld, but the ABORT marker at offset %lld is producer "
             "%lld's", (long long)i, (long long)pid, (long long)last, (long long)x->pid);
    } else if (first <= x->lo || first > x->hi) {
      report(ck, "txnindex_entry_mismatch", KL_SEV_WARNING, i * KL_TXN_ENTRY_SIZE,
             "entry %lld (producer %lld): first offset %lld, but the aborted transaction %s %lld",
             (long long)i, (long long)pid, (long long)first,
             x->optional ? "lies after the producer's batch at" : "begins at",
             (long long)(x->optional ? x->lo : x->hi));
    }
  }
  for (; compare && j < ck->nexpect && !ck->rc; j++) {
    if (!ck->expect[j].optional) report_missing(ck, &ck->expect[j], i * KL_TXN_ENTRY_SIZE);
  }
  if (f.size % KL_TXN_ENTRY_SIZE != 0 && !ck->rc) {
    report(ck, "txnindex_bad_length", KL_SEV_WARNING, (f.size / KL_TXN_ENTRY_SIZE) * KL_TXN_ENTRY_SIZE,
           "%lld bytes of a partial entry at the end", (long long)(f.size % KL_TXN_ENTRY_SIZE));
  }
  kl_file_close(&f);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

static kl_rc check_segment(checker *ck, kl_reader *rd, kl_segment *s, walk *w) {
  ck->segment = s->base;
  ck->txn_unknown = 0;
  ck->nexpect = 0;
  begin_file(ck, s->name);
  kl_err e = {0};
  kl_rc rc = kl_segment_open(s, rd->stats, &e);
  if (rc == KL_NOMEM) return rc;
  if (rc) {
    report(ck, "unreadable", KL_SEV_ERROR, -1, "%s", e.msg);
    w->end = 0;
    w->next_offset = s->base;
    w->max_ts = -1;
    kl_txn_state_reset(&ck->producers);
    return KL_OK;
  }
  kl_segment_pin(s);
  rc = check_log(ck, rd, s, w);
  if (rc == KL_OK) {
    begin_file(ck, base_name(s->index_path));
    rc = check_offset_index(ck, rd, s, w);
  }
  if (rc == KL_OK) {
    begin_file(ck, base_name(s->timeindex_path));
    rc = check_time_index(ck, rd, s, w);
  }
  if (rc == KL_OK) {
    char path[4096];
    snprintf(path, sizeof path, "%.*s.txnindex", (int)(strlen(s->log_path) - 4), s->log_path);
    begin_file(ck, base_name(path));
    check_txn_index(ck, s, path);
    begin_file(ck, NULL);
  }
  if (ck->txn_unknown) kl_txn_state_reset(&ck->producers);
  kl_segment_unpin(s);
  /* Done with it: a check of thousands of segments keeps none open. */
  kl_segment_close(s);
  return rc;
}

/* "<20 digits>.<suffix>" for an index suffix: the base offset, else -1. */
static int64_t index_file_base(const char *name) {
  const char *dot = strchr(name, '.');
  if (!dot || dot - name != 20) return -1;
  if (strcmp(dot, ".index") && strcmp(dot, ".timeindex") && strcmp(dot, ".txnindex")) return -1;
  int64_t v = 0;
  for (int i = 0; i < 20; i++) {
    if (name[i] < '0' || name[i] > '9') return -1;
    if (v > (INT64_MAX - (name[i] - '0')) / 10) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

/* Index files whose .log does not exist (LogLoader deletes them). */
static void check_orphans(checker *ck, const char *dir, kl_log *log) {
  void *d = kl_os_opendir(ck->env, dir);
  if (!d) return;
  const char *name;
  int isdir;
  while (!ck->rc && kl_os_readdir(ck->env, d, &name, &isdir) > 0) {
    int64_t base = index_file_base(name);
    if (base < 0) continue;
    kl_segment *s = kl_log_floor(log, base);
    if (s && s->base == base) continue;
    /* A segment an open transaction of a written log started. */
    kl_segment *last = kl_log_last(log);
    if (last && last->limit >= 0 && base > last->base) continue;
    ck->segment = base;
    begin_file(ck, name);
    report(ck, "orphan_index", KL_SEV_WARNING, -1,
           "index file without a %020lld.log (Kafka deletes it on load)", (long long)base);
  }
  kl_os_closedir(ck->env, d);
  begin_file(ck, NULL);
}

kl_rc kl_check_dir(const kl_env *env, const char *dir, kl_check_fn fn, void *ud, kl_err *err) {
  return kl_check_dir_stats(env, dir, NULL, fn, ud, err);
}

kl_rc kl_check_dir_stats(const kl_env *env, const char *dir, kl_stats *stats, kl_check_fn fn,
                         void *ud, kl_err *err) {
  kl_log *log = NULL;
  kl_rc rc = kl_log_open(env, dir, &log, err);
  if (rc) return rc;
  checker ck;
  memset(&ck, 0, sizeof ck);
  ck.env = env;
  ck.fn = fn;
  ck.ud = ud;
  ck.segment = -1;
  if (!kl_log_first(log)) {
    char msg[512];
    const char *hint = kl_log_hint(log);
    snprintf(msg, sizeof msg, "no <20-digit base offset>.log file: not a Kafka partition "
             "directory%s%s", hint ? "; " : ", or an empty one", hint ? hint : "");
    begin_file(&ck, "");
    emit(&ck, "no_segments", KL_SEV_WARNING, -1, msg);
  }
  kl_reader rd;
  kl_reader_init(&rd, env, stats, KL_ON_CORRUPT_ERROR);
  for (kl_segment *s = kl_log_first(log); s && rc == KL_OK && !ck.rc; s = kl_log_next(log, s)) {
    walk w = {0};
    rc = check_segment(&ck, &rd, s, &w);
  }
  if (rc == KL_OK && !ck.rc) check_orphans(&ck, dir, log);
  kl_reader_free(&rd);
  kl_free(env, ck.spans);
  kl_txn_state_free(env, &ck.producers);
  kl_free(env, ck.expect);
  kl_log_close(log);
  if (rc == KL_NOMEM) return kl_err_set(err, rc, "out of memory checking %s", dir);
  if (rc == KL_OK && ck.rc) rc = kl_err_set(err, ck.rc, "check of %s stopped", dir);
  return rc;
}
