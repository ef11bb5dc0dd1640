/*
** scan.h - Kafka's scan rules over one segment, in one place: where an entry
** starts and ends, what counts as damage, where reading resumes after it,
** and the positions a scan may start from (seeks by offset and by time, a
** segment's tail).  The cursor, the lookups and the integrity check all walk
** a .log through kl_scan and nothing else, as Kafka's LogSegment.recover,
** FileRecords and DumpLogSegments share one FileLogInputStream.
**
** An entry at position p (format.md 2.1):
**
**     0        8       12          16     17                       12+len
**     +--------+--------+-----------+------+------------------------+
**     | offset | len    | epoch/crc | magic| ...                    |
**     +--------+--------+-----------+------+------------------------+
**
** The walk yields a batch only when its header parses, its CRC holds, its
** offsets lie above the previous batch's and at or above the segment base,
** and below the next segment's base.  Anything else is damage:
**
**   kind             where the walk goes on
**   crc_mismatch     resume point (below)    the length is not covered by
**   bad_header       resume point            the CRC: it may be the damage
**   bad_magic        resume point
**   bad_batch_length resume point
**   trailing_bytes   resume point            zero offset and length, then data
**   truncated_batch  resume point            an entry that does not fit
**   zero_filled_tail next segment            zeros to the end of the file
**   offset_regression  after the batch       (its CRC held: its length is right)
**   offset_below_base  after the batch
**   segment_overlap    after the batch
**   bad_records      after the batch         found by whoever decodes it
**
** The resume point after damage at p is the nearer of: p + length, when the
** length is sane and a header parses there; the first offset-index entry
** past p whose batch verifies (a "sync point"); else the next segment.  It
** never jumps over a sync point, so a walk from position 0 passes through
** every sync point, and a walk started at one (a seek) follows exactly the
** walk from 0 from there on.
**
** The end of a segment's data is not damage in two cases only, and only in
** the last segment: an entry cut short by the end of the file with no sync
** point after it (an append in progress, or a torn write, where Kafka's
** scan stops too), and zeros to the end of the file (log.preallocate).
** Everywhere else the same bytes are damage: a segment that is not the last
** was complete when the next one was rolled.
**
** on_corrupt='skip' (kl_reader.skip): the first time a reader in skip mode
** reads a segment, the whole segment is walked once from position 0 (the
** canonical walk) and every damage is recorded as a hole in the segment's
** salvage map, with the tail of what is kept.  Every path in skip mode then
** passes over the holes, so the rows are the same whatever the plan: a
** seek, a descending scan and a full scan keep the same batches.  The cost
** is one read of each segment a skip-mode query touches, as
** kafka_log_check or Kafka's recovery reads it; the map is kept with the
** segment.
*/
#ifndef KL_SCAN_H
#define KL_SCAN_H

#include "batch.h"
#include "file.h"
#include "klog.h"
#include "segment.h"

enum { KL_ON_CORRUPT_ERROR = 0, KL_ON_CORRUPT_SKIP = 1 };

/* What a reading operation carries: its counters, its buffers, its mode.
** Owned by the caller; one reader serves one scan at a time. */
typedef struct kl_reader {
  const kl_env *env;
  kl_stats *stats;          /* where work is counted (never NULL) */
  int skip;                 /* KL_ON_CORRUPT_SKIP: follow salvage maps */
  int helpers;              /* a seek by time may date segments with a
                            ** helper thread (log.c, dating.h): 1, or 0
                            ** (the default) */
  kl_window win;            /* bytes of the .log being read */
  kl_window ctx;            /* and of the context before a seek, apart so
                            ** that reading it does not drop the batches
                            ** the seek checked */
  kl_buf scratch;           /* decompressed payloads */
  kl_codec_ctx codec;       /* and the decoder state kept for them */
  const kl_segment *held_seg; /* the batch scratch holds, decompressed, */
  int64_t held_pos;         /* and its records as they were opened: */
  int32_t held_size;
  kl_records held;          /* lookups that fall in the batch the
                            ** previous one decompressed (a join probing
                            ** neighbouring offsets) do not decompress it
                            ** again */
  size_t held_len;          /* bytes of it scratch holds, */
  int held_part;            /* only its first held_len (kl_reader_prefix):
                            ** held is then not set */
  kl_stats own;             /* stats points here unless given */
} kl_reader;

/* stats may be NULL (the reader then counts into its own). */
void kl_reader_init(kl_reader *rd, const kl_env *env, kl_stats *stats, int on_corrupt);
void kl_reader_free(kl_reader *rd);

/* The reader no longer holds a decompressed batch (its scratch was given
** away, or what it read may belong to a log since closed); its windows
** hold no bytes.  Buffers and decoder state stay. */
void kl_reader_forget(kl_reader *rd);
/* Buffers larger than KL_READER_KEEP are freed (a reader kept between
** queries keeps what a lookup needs, not what a scan grew). */
#define KL_READER_KEEP ((size_t)256 << 10)
void kl_reader_trim(kl_reader *rd);
/* As kl_reader_init, keeping its buffers and decoder state (call
** kl_reader_forget first when the log changes). */
void kl_reader_reset(kl_reader *rd, kl_stats *stats, int on_corrupt);
/* Free what kl_reader_free frees, leaving rd usable: the next read
** allocates afresh, and the batch it held decompressed is forgotten. */
void kl_reader_drop(kl_reader *rd);

/* Damage kinds, in kafka_log_check's words (kl_damage_name). */
enum {
  KL_DMG_CRC = 1,           /* crc_mismatch */
  KL_DMG_RECORDS,           /* bad_records */
  KL_DMG_HEADER,            /* bad_header */
  KL_DMG_REGRESSION,        /* offset_regression */
  KL_DMG_BELOW_BASE,        /* offset_below_base */
  KL_DMG_OVERLAP,           /* segment_overlap */
  KL_DMG_MAGIC,             /* bad_magic */
  KL_DMG_LENGTH,            /* bad_batch_length */
  KL_DMG_TRUNCATED,         /* truncated_batch */
  KL_DMG_TRAILING,          /* trailing_bytes */
  KL_DMG_ZERO_TAIL          /* zero_filled_tail */
};
const char *kl_damage_name(int kind);

/* How a walk ended (kl_scan.end after KL_DONE). */
enum {
  KL_END_CLEAN = 0,         /* at the end of the file */
  KL_END_STOP,              /* at the caller's stop position */
  KL_END_TORN,              /* last segment: an entry cut short */
  KL_END_ZEROS              /* last segment: zeros to the end */
};

typedef struct kl_damage {
  int kind;                 /* KL_DMG_* */
  int64_t pos;              /* where */
  int64_t resume;           /* where the walk goes on; the file size when
                            ** nothing more of the segment can be read */
  kl_batch b;               /* the header, when it parsed (b.size > 0);
                            ** b.bytes is not valid */
  char what[700];           /* what is wrong, without file and position */
} kl_damage;

/* A walk over one segment.  Fields are read-only to callers. */
typedef struct kl_scan {
  kl_reader *rd;
  kl_segment *seg;          /* pinned while the walk is on it */
  int64_t pos;              /* next entry */
  int64_t stop;             /* the walk ends at this position */
  int64_t stop_offset;      /* and at a batch whose first offset is above
                            ** this (set by the caller; INT64_MAX): its
                            ** header tells that much without a CRC, since
                            ** the base offset is not covered by it */
  int64_t verify_from;      /* batches before it are context: parsed for
                            ** their offsets, CRC checked only if a
                            ** decision rests on them */
  int follow;               /* pass over the salvage map's holes */
  int have_prev;            /* prev_* describe the previous batch */
  int64_t prev_last;
  int64_t prev_pos;
  int prev_unverified;      /* the previous batch was context */
  int end;                  /* KL_END_* after KL_DONE */
  int64_t end_pos;          /* where the data ended */
  kl_damage dmg;            /* after KL_CORRUPT; after KL_DONE with
                            ** KL_END_TORN or KL_END_ZEROS, what ended it
                            ** (kind KL_DMG_TRUNCATED or KL_DMG_ZERO_TAIL) */
} kl_scan;

/*
** Start walking s at pos (an entry boundary the walk from 0 passes:
** position 0, a sync point, or a position a seek returned), ending at stop
** (INT64_MAX: the end of the data).  Batches before verify_from are context
** (see above).  In skip mode the segment's salvage map is built first if it
** is not known (kl_scan_salvage).  Opens and pins the segment.
*/
kl_rc kl_scan_start(kl_scan *sc, kl_reader *rd, kl_segment *s, int64_t pos, int64_t stop,
                    int64_t verify_from, kl_err *err);
/* Unpin the segment; the walk is over (safe to call twice). */
void kl_scan_end(kl_scan *sc);

/*
** The next entry.  KL_OK: *b is a batch that passed every rule above; its
** bytes (b->bytes, b->size of them) are readable until the next call on the
** reader.  KL_DONE: the data ended (sc->end says how).  KL_CORRUPT: damage,
** described in sc->dmg and in err as "<file>: position N: <what>"; calling
** kl_scan_next again goes on from the resume point (skip mode never sees
** damage outside the holes it passes over, unless the file changed).
** KL_IO, KL_NOMEM: reading failed.
*/
kl_rc kl_scan_next(kl_scan *sc, kl_batch *b, kl_err *err);

/* Open the records of batch b just returned by kl_scan_next (decompressing
** into the reader's scratch); record-level damage is KL_CORRUPT naming the
** file and the batch position. */
kl_rc kl_scan_records(kl_scan *sc, const kl_batch *b, kl_records *it, kl_err *err);

/* Open the records of batch b of segment s (its bytes readable, its CRC
** checked): kl_records_open into the reader's scratch, or the records the
** scratch still holds when b is the batch last decompressed there.
** Record-level damage is KL_CORRUPT naming the file and position. */
kl_rc kl_reader_records(kl_reader *rd, const kl_segment *s, const kl_batch *b, kl_records *it,
                        kl_err *err);

/* The first `need` bytes of the decompressed records of compressed v2
** batch b of segment s (its bytes readable, and its records all decoded
** once: what follows is not looked at), in the reader's scratch: *p points
** to them.  The batch scratch holds is not decompressed again when it has
** them; otherwise decompression stops once it has them, where the codec
** allows (codec.h).  Counts bytes_decompressed.  KL_CORRUPT naming the
** file and position when the batch decodes to fewer. */
kl_rc kl_reader_prefix(kl_reader *rd, const kl_segment *s, const kl_batch *b, size_t need,
                       const uint8_t **p, kl_err *err);

/* Name the batch at pos of s in a record-level error from batch.c (which
** knows no file). */
kl_rc kl_scan_batch_error(const kl_segment *s, int64_t pos, kl_rc rc, kl_err *err);

/* Walk s once from position 0 and record its salvage map (segment.h).
** Damage is not an error here; KL_IO and KL_NOMEM are. */
kl_rc kl_scan_salvage(kl_reader *rd, kl_segment *s, kl_err *err);

/* Where a lookup starts in a segment. */
typedef struct kl_seek {
  int64_t slot;             /* offset index slot used (Kafka's floor), -1 */
  int64_t index_offset;     /* its offset, or the segment base */
  int64_t index_position;   /* its position, or 0 */
  int64_t start;            /* where the walk starts (a slot earlier, to
                            ** see the batch before the slot's) */
  int64_t verify_from;      /* where the lookup's own batches begin */
  int64_t ti_slot;          /* time index slot used (time seeks), -1 */
} kl_seek;

/* Where a forward walk finds every record with offset >= target: the
** offset index floor entry, checked against the batch it names. */
kl_rc kl_scan_seek_offset(kl_reader *rd, kl_segment *s, int64_t target, kl_seek *out,
                          kl_err *err);

/* Does time index entry i of s name a batch that reaches exactly its
** timestamp (and follow the entry before it)?  Damage met checking it only
** makes it not hold. */
kl_rc kl_scan_time_entry_holds(kl_reader *rd, kl_segment *s, kl_index *tix, int64_t i, int *holds,
                               kl_err *err);

/* Where a forward walk finds every record with timestamp >= t: the time
** index floor (T, O), checked, then the offset seek of O. */
kl_rc kl_scan_seek_time(kl_reader *rd, kl_segment *s, int64_t t, kl_seek *out, kl_err *err);

/* The offset index slots at which a walk may start, below slot `below`
** (exclusive; INT64_MAX: all): the largest one whose entry holds, or -1
** (start at position 0).  *pos gets its position.  For descending scans. */
kl_rc kl_scan_checkpoint(kl_reader *rd, kl_segment *s, int64_t below, int64_t *slot, int64_t *pos,
                         kl_err *err);

/* The first batch with last offset >= target (Kafka's translateOffset),
** from the offset seek.  KL_NOTFOUND when the segment has none.  The
** batches walked are learnt (segment.h kl_segment_learn_walked); when the
** facts already know the way (kl_segment_facts_follow) nothing is read and
** b->bytes is NULL. */
kl_rc kl_scan_find_offset(kl_reader *rd, kl_segment *s, int64_t target, kl_batch *b,
                          kl_err *err);

/* The segment's next offset, largest timestamp and end of data: in skip
** mode from the salvage map, else from the last index entries and the
** batches after them.  *out points into the segment. */
kl_rc kl_scan_tail(kl_reader *rd, kl_segment *s, const kl_tail **out, kl_err *err);

/*
** The segment's largest timestamp (the largest batch max timestamp, -1
** when it has none), as kl_scan_tail's, but for a closed segment from
** Kafka's word in its files when they give it, without opening its .log:
** the last .timeindex entry of a segment that rolled is its largest
** timestamp (LogSegment.onBecomeInactiveSegment appends it, and recovery
** too; Kafka's own lookups date segments by it).  That word is taken only
** when it can stand: the segment is not the last (nor cut by a commit
** record), its .timeindex exists, is whole entries, ends in a real entry
** (not a preallocated zero slot), in order with the one before, whose
** offset lies within the segment's offsets (not a stale entry of a
** truncation), and was written no earlier than the .log was last modified
** (an index older than its log does not cover it); a .log seen before
** must still be that file.  Otherwise, and in skip mode, kl_scan_tail.
** Costs five system calls (the .log's stat; the .timeindex's open, fstat,
** one read of its last two entries, close), counted in segments_dated;
** *off is the offset the entry names (the tail's max_ts_offset).
*/
kl_rc kl_scan_max_timestamp(kl_reader *rd, kl_segment *s, int64_t *ts, int64_t *off,
                            kl_err *err);

/* For a scan that reads the segments it enters to their end (a time
** window's): a segment of at most KL_SCAN_WHOLE_MAX bytes whose facts do not
** cover it is walked whole in one read, learning its batches and its tail.
** *learnt = 1 when its facts then cover it (segment.h
** kl_segment_facts_cover): its floor for a time is found in memory, without
** opening either index (eight calls), and its largest timestamp is known
** without dating it by its time index (five); the scan that follows reads
** nothing more.  On the broker bench's log directory (2,000 partitions of
** three 48 KiB segments) a first 1% window made 55,811 system calls instead
** of 97,912 (102,532 before a reader's windows shared their bytes) and took
** 204 ms instead of 243 (medians of five, four rounds, the builds in turn).
** *learnt = 0 for a larger segment, in skip mode, or when the walk meets
** damage before the end (not an error here: the scan reports it where it
** reads).  Errors: opening the segment, reading it. */
#define KL_SCAN_WHOLE_MAX ((int64_t)64 << 10)
kl_rc kl_scan_learn_small(kl_reader *rd, kl_segment *s, int *learnt, kl_err *err);

/* Would kl_scan_max_timestamp read s's files to date it (it is closed, not
** dated yet, its tail unknown, and rd is not in skip mode)? */
int kl_scan_datable(const kl_reader *rd, const kl_segment *s);

/* kl_scan_max_timestamp with the facts of s's files read already (dating.h:
** on a helper thread, by kl_date_pass), NULL: read them now.  The same
** judgement, counters and answer either way. */
struct kl_date_facts;
kl_rc kl_scan_max_timestamp_from(kl_reader *rd, kl_segment *s, const struct kl_date_facts *f,
                                 int64_t *ts, int64_t *off, kl_err *err);

/* The offset (KL_INDEX_OFFSET) or time (KL_INDEX_TIME) index, opened, with
** a zero first slot decided by the log: a real (base, 0) or (0, base) entry,
** or a preallocated slot (what kafka_log_check reports on). */
kl_rc kl_scan_index(kl_reader *rd, kl_segment *s, int kind, kl_index **out, kl_err *err);
/* The time index as seeks use it: its stale entries trimmed by the tail and
** its last entry checked (no entries when that cannot be done). */
kl_rc kl_scan_time_index(kl_reader *rd, kl_segment *s, kl_index **out, kl_err *err);

#endif
