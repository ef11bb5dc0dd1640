/*
** segment.h - one segment: <20-digit base offset>.log with its .index and
** .timeindex, the descriptors it holds open, and what readers have learnt
** about it (its tail, its salvage map).  How a segment is read (Kafka's
** scan rules, seeks, damage) is scan.h's business; this file only keeps
** the files and the facts.
**
** Files are opened on first use and stay open while the segment is among
** the most recently used of its log: a log's segments share one bound on
** the descriptors they hold (kl_segset, from the process's RLIMIT_NOFILE),
** and the least recently used unpinned segment is closed when a file of
** another opens past it, so a scan over thousands of segments never runs
** out of descriptors.  What is counted is what is held: a segment's .log,
** and an index only while its file is open (a small one read whole keeps
** its entries and closes its file at once: index.h kl_index_keep), so
** segments that hold their .log alone are not closed for descriptors
** they do not hold.  A reader that keeps reading a segment
** across calls pins it (kl_segment_pin).  Reopening a segment checks that
** the .log is still the file first seen (same device, inode and size):
** what was learnt about it would otherwise be wrong, so a changed file is
** KL_IO, and the caller opens the directory afresh.
*/
#ifndef KL_SEGMENT_H
#define KL_SEGMENT_H

#include "batch.h"
#include "file.h"
#include "index.h"
#include "klog.h"

typedef struct kl_segment kl_segment;

/* The open segments of one log, most recently used first. */
typedef struct kl_segset {
  kl_segment *mru, *lru;    /* ends of the list of open segments */
  int open;                 /* how many are open */
  int max_open;             /* the bound on them (memory) */
  int fds;                  /* descriptors its segments hold: each open
                            ** .log, and each index whose file is open */
  int max_fds;              /* the bound on them */
  size_t facts;             /* batch facts kept by all its segments */
  size_t ts_bytes;          /* bytes of record timestamps they keep */
  size_t max_ts_bytes;      /* and the most they may keep
                            ** (KL_SEGSET_MAX_TS_BYTES unless changed) */
  size_t end_bytes;         /* bytes of record ends they keep */
  size_t max_end_bytes;     /* (KL_SEGSET_MAX_END_BYTES unless changed) */
  size_t key_bytes;         /* bytes of key filters they keep */
  uint64_t uids;            /* identities given to its segments so far */
  struct kl_bcache *bcache; /* decompressed batches its lookups keep
                            ** (bcache.h, the owner's), or NULL */
  int map;                  /* map each .log that cannot shrink when it
                            ** opens (file.h kl_file_map; kl_segset_map) */
} kl_segset;

/* The bound on open segments when the process's descriptor limit cannot be
** read (at three descriptors each). */
#define KL_SEGSET_MAX_OPEN 64
/* Open segments per set at most, whatever the limit says (each costs a
** few hundred bytes and up to three descriptors). */
#define KL_SEGSET_MAX_BOUND 32768
/* Batch facts a log keeps at most (160 bytes each with their position:
** 20 MiB).  With producer-sized batches (16 KiB) that covers 2 GiB of log;
** beyond it, queries read headers as they would without facts. */
#define KL_SEGSET_MAX_FACTS 131072
/* Record timestamps a set keeps at most: 1 to 8 bytes a record
** (kl_ts_form), so 2 to 16 M records.  They answer what SQLite's covering
** index on timestamp answers for a table: queries that read only offsets
** and timestamps decode nothing.  With the facts and key filters, a table's
** learning stays near 40 MiB, so that a query over a log directory of 10 M
** records peaks under 64 MiB. */
#define KL_SEGSET_MAX_TS_BYTES ((size_t)16 << 20)
/* Record ends a set keeps at most, 2 or 4 bytes a record (kl_fact.rend): 1
** to 2 M records of the batches point lookups landed in, in which a lookup
** then reads one record.  Only lookups learn them, and apart from the
** timestamps, so that a scan reading values does not spend on them the
** budget a time window needs. */
#define KL_SEGSET_MAX_END_BYTES ((size_t)4 << 20)
/* Key filters (keyset.h) a log keeps at most: a byte a record, so 8 M
** records' batches; beyond, key searches read the batches without one. */
#define KL_SEGSET_MAX_KEY_BYTES ((size_t)8 << 20)

/* Where a segment's data ends and what it holds, as a reader found it. */
typedef struct kl_tail {
  int known;
  int64_t next_offset;      /* last offset + 1, or base when empty */
  int64_t max_timestamp;    /* largest batch max timestamp, -1 if none */
  int64_t max_ts_offset;    /* last offset of the first batch reaching it */
  int64_t end;              /* position where the data ends */
} kl_tail;

/* A stretch of the .log that the canonical walk passes over: one damaged
** batch, or unreadable bytes up to where the walk resumes. */
typedef struct kl_hole {
  int64_t pos, end;         /* [pos, end) */
  int kind;                 /* KL_DMG_* (scan.h) */
} kl_hole;

/* The result of the canonical walk of a whole segment (scan.h): what
** on_corrupt='skip' reads, the same on every path. */
typedef struct kl_salvage {
  int known;
  kl_hole *holes;           /* sorted by position, not overlapping */
  size_t n, cap;
  kl_tail tail;             /* of the batches the walk keeps */
} kl_salvage;

/* How a fact keeps its records' timestamps (kl_fact_ts), the fewest bytes
** a record that hold them all exactly.  A producer's batch spans the
** milliseconds of its linger (one byte, below 256 ms; two below 65.5 s);
** a batch of a slow topic, or of a backfill that kept its events' times,
** spans minutes or hours with records at nearly even steps: the line from
** the smallest by the mean step, and each record's signed distance from it
** in two bytes.  The same budget then holds two to eight times the records
** it would at eight bytes. */
typedef enum kl_ts_form {
  KL_TSF_U8,                /* min_ts + a uint8_t */
  KL_TSF_U16,               /* min_ts + a uint16_t */
  KL_TSF_LINE,              /* min_ts + i * ts_step + an int16_t */
  KL_TSF_U32,               /* min_ts + a uint32_t */
  KL_TSF_RAW                /* the int64_t itself */
} kl_ts_form;

/* Bytes a record of each form takes. */
static inline size_t kl_ts_form_bytes(int form) {
  static const uint8_t bytes[] = {1, 2, 2, 4, 8};
  return bytes[form];
}

/* What a walk learnt about one batch it yielded (its CRC held and it
** passed every rule of scan.h at its place).  The files of a segment do
** not change while it is known (a change is an error, and the log is then
** opened afresh), so a fact stays true: a later query reads a batch known
** to lie outside its bounds, or counts a batch known to lie inside them,
** without reading it. */
typedef struct kl_fact {
  kl_batch b;               /* the header (b.bytes is NULL) */
  int64_t min_ts;           /* smallest record timestamp, when decoded */
  int32_t ts_step;          /* KL_TSF_LINE: the line's step a record */
  uint8_t decoded;          /* every record decoded: min_ts is known */
  uint8_t linked;           /* the walk goes on to the fact at the end of
                            ** this batch (b.position + b.size) */
  uint8_t ends;             /* the data ends after it (the file's end) */
  uint8_t ts_form;          /* how ts keeps them: KL_TSF_* */
  uint8_t rend_w;           /* bytes a kept end takes (kl_fact_rend): 2, 4 */
  void *ts;                 /* when decoded, v2 and its offsets have no
                            ** gap (record i is at base + i): each record's
                            ** timestamp (record_count of them), or NULL */
  void *rend;               /* and, once a point lookup has landed in the
                            ** batch (KL_SEGSET_MAX_END_BYTES), where each
                            ** record ends (record i starts where i - 1
                            ** ends): uncompressed, in the batch (record 0
                            ** after the header), and a point lookup reads
                            ** one record, not the batch; compressed, in its
                            ** decompressed records (record 0 at 0), and a
                            ** point lookup decompresses up to the record's
                            ** end; or NULL */
  uint64_t *kf;             /* when a key search read all its records: the
                            ** filter of their keys (keyset.h), or NULL */
  uint32_t kf_words;        /* its 64-bit words */
} kl_fact;

/* Record i's timestamp, of a fact that keeps them (f->ts). */
static inline int64_t kl_fact_ts(const kl_fact *f, int32_t i) {
  switch (f->ts_form) {
    case KL_TSF_U8: return f->min_ts + ((const uint8_t *)f->ts)[i];
    case KL_TSF_U16: return f->min_ts + ((const uint16_t *)f->ts)[i];
    case KL_TSF_LINE:
      return f->min_ts + (int64_t)i * f->ts_step + ((const int16_t *)f->ts)[i];
    case KL_TSF_U32: return f->min_ts + (int64_t)((const uint32_t *)f->ts)[i];
    default: return ((const int64_t *)f->ts)[i];
  }
}

/* Does the fact's batch hold rows: data records, not a control batch nor
** an empty one (a legacy compressed wrapper counts -1 records, and holds
** them)? */
static inline int kl_fact_rows(const kl_fact *f) {
  return !f->b.is_control && f->b.record_count != 0;
}

/* Where record i ends, of a fact that keeps it (f->rend). */
static inline uint32_t kl_fact_rend(const kl_fact *f, int32_t i) {
  if (f->rend_w == 2) return ((const uint16_t *)f->rend)[i];
  return ((const uint32_t *)f->rend)[i];
}

struct kl_segment {
  int64_t base;             /* base offset from the file name */
  uint64_t uid;             /* its identity in its set, never reused (what
                            ** is kept of its batches elsewhere is keyed by
                            ** it, bcache.h), 0 without a set */
  int64_t next_base;        /* the next segment's base, INT64_MAX if last */
  int is_last;              /* the active (last) segment of its log */
  int64_t limit;            /* bytes committed (commit.h), or -1: what
                            ** lies beyond is not part of the log */
  uint8_t *mem;             /* the last mem_len bytes below limit, held in
                            ** memory: a writer's batch not yet written
                            ** (commit.h kl_view), read past the file's */
  size_t mem_len;
  char *log_path;           /* full path of the .log (one block with the
                            ** two index paths below) */
  char *index_path, *timeindex_path;
  const char *name;         /* file name part of log_path */
  int paths_inline;         /* the paths follow the struct in its block
                            ** (kl_segment_new) */
  const kl_env *env;
  void *node;               /* the owning log's skip list node */

  /* Open files (while open). */
  kl_segset *set;
  kl_segment *newer, *older;/* neighbours in set's list */
  int pins;                 /* readers holding it open */
  int opened;               /* log is open */
  kl_file log;              /* .log */
  kl_index oidx, tidx;      /* indexes, opened on first use */
  int oidx_open, tidx_open;

  /* What is known about the .log, kept while it is closed. */
  int seen;                 /* opened once: the identity below is set */
  int64_t size;             /* .log size when first opened */
  uint64_t dev, ino;
  kl_tail tail;             /* from the indexes and the last stretch */
  int dated;                /* a closed segment's largest timestamp, from
                            ** its time index alone (scan.h
                            ** kl_scan_max_timestamp): */
  int64_t dated_ts, dated_off;
  int tix_settled;          /* the time index was trimmed and checked
                            ** against the tail (scan.c) */
  kl_salvage salvage;       /* the canonical walk, when a reader asked */
  int64_t zero_from;        /* the file is zero from here on; -1 unknown */
  int32_t read_hint;        /* bytes a read should take: the size of the
                            ** batches met last, with the next header */
  int64_t *vpos;            /* positions + 1 of batches whose CRC held: */
  int32_t *vsize;           /* an open-addressing set, grown with use */
  size_t vcap, vn;
  kl_fact *facts;           /* batches walks yielded, by position */
  int64_t *fpos;            /* facts[i].b.position, packed: a lookup's
                            ** binary search touches a few cache lines of
                            ** these, not one 152-byte fact a step */
  size_t nfacts, capfacts;
  uint64_t facts_gen;       /* counts the times the facts array moved: a
                            ** pointer into it from before is stale */
  int facts_cover;          /* the facts chain from position 0 to the end
                            ** of the data: 1 yes, 0 no, -1 not known
                            ** (whoever changes a fact resets it) */
  int64_t *runmax;          /* with facts_cover: the running maximum of the
                            ** facts' max timestamps, for seeks by time, */
  uint64_t runmax_gen;      /* as of this facts_gen + 1 (0: none) */
  uint64_t decoded_n;       /* facts marked decoded (kl_segment_decoded) */
  int64_t range_min;        /* kl_segment_facts_range's answer, */
  int64_t range_max;
  uint64_t range_gen;       /* as of this facts_gen + 1 (0: none) */
  uint64_t range_dec;       /* and this decoded_n */
  int64_t *sufmin;          /* with the range: for each fact i, the smallest
                            ** timestamp of the data records from it to the
                            ** end (INT64_MAX: none), or NULL */
};

/* Initialise (no disk access).  log_path is copied. */
kl_rc kl_segment_init(kl_segment *s, const kl_env *env, kl_segset *set, int64_t base,
                      const char *log_path);
/* Close the files and free everything. */
void kl_segment_free(kl_segment *s);

/* kl_segment_init of a segment allocated with its paths in one block
** (a log of thousands of segments lists them with one allocation each):
** freed by kl_segment_free, then kl_free of the segment.  KL_NOMEM,
** KL_MISUSE. */
kl_rc kl_segment_new(const kl_env *env, kl_segset *set, int64_t base, const char *log_path,
                     kl_segment **out);

/* The segment's last n bytes below its limit are p's (copied), not the
** file's: what a writer's view holds in memory (commit.h kl_view).
** KL_NOMEM. */
kl_rc kl_segment_hold_tail(kl_segment *s, const uint8_t *p, size_t n);

/*
** Open the .log if it is not open (or, when it is gone, <name>.log.deleted:
** a segment retention removed after the directory was listed waits there
** a minute, and the reader goes on with the log as it listed it) (and make the segment the most recently
** used of its set, closing the least recently used unpinned ones while the
** set is beyond either bound).  When the process is out of descriptors
** (EMFILE, ENFILE), the least recently used unpinned segment of the set is
** closed and the open tried again, and the set's bounds lowered to what was
** open.  KL_IO names
** the file and says why; a .log that is no longer the
** file first seen is KL_IO too.  Counts stats->segments_opened.
*/
kl_rc kl_segment_open(kl_segment *s, kl_stats *stats, kl_err *err);

/* Close the files (what is known is kept, and so are indexes of at most
** KL_INDEX_KEEP_CHUNKS pieces read whole: reopening the segment then opens
** only its .log). */
void kl_segment_close(kl_segment *s);

/* Keep the segment open across calls (nested pins count). */
void kl_segment_pin(kl_segment *s);
void kl_segment_unpin(kl_segment *s);

/* The offset (KL_INDEX_OFFSET) or time (KL_INDEX_TIME) index, opened on
** first use; the segment must be open.  An index read whole at open
** (kl_index_keep) closes its file then; one that stays open counts in the
** set's descriptors, and out of descriptors the open is retried as
** kl_segment_open's.  *out is NULL on error. */
kl_rc kl_segment_index(kl_segment *s, int kind, kl_index **out, kl_err *err);

/* Has the batch at pos with this size had its CRC verified?  (Once per
** batch while the segment is known: a point lookup in a join checks the
** batch an index entry names, then reads it, thousands of times.) */
int kl_segment_verified(const kl_segment *s, int64_t pos, int32_t size);
void kl_segment_set_verified(kl_segment *s, int64_t pos, int32_t size);

/* The fact about the batch at pos, or NULL.  Pointers into the facts stay
** valid until the next kl_segment_learn. */
kl_fact *kl_segment_fact(const kl_segment *s, int64_t pos);
/* The first fact at or after pos (its index), nfacts when none. */
size_t kl_segment_fact_from(const kl_segment *s, int64_t pos);
/* Record that a walk yielded b (b->bytes need not stay valid); returns the
** fact, old or new, or NULL when out of memory or over the log's budget
** (facts are an optimisation: callers go on without). */
kl_fact *kl_segment_learn(kl_segment *s, const kl_batch *b);
/* A walk yielded b right after the batch at prev (-1: none, or a batch
** it did not yield: context): learn b as kl_segment_learn does, link the
** fact at prev to it when that batch ends where b starts, and link b to a
** fact already known where b ends.  Returns b's fact, or NULL as
** kl_segment_learn does. */
kl_fact *kl_segment_learn_walked(kl_segment *s, int64_t prev, const kl_batch *b);

/* Follow the chain of linked facts from the batch at pos (one a walk from
** a seek would yield first) to the first whose last offset is >= offset
** and whose max timestamp is >= t (INT64_MIN: no bound): 1 with *out that
** fact; -1 when the chain ends with the data before any does; 0 when the
** facts cannot tell (a batch on the way is not known, or not linked to the
** next).  A walk from pos would yield the same batches: no byte is read.
** A seek the index has placed, repeated or near one made before, then
** costs no read (a repeated time window's seeks over 2,000 partitions
** made four reads each). */
int kl_segment_facts_follow(const kl_segment *s, int64_t pos, int64_t offset, int64_t t,
                            const kl_fact **out);

/* Does a chain of linked facts run from position 0 to the end of the
** data?  Then the facts are the segment's batches, and a seek needs no
** index (cached until a fact changes). */
int kl_segment_facts_cover(kl_segment *s);

/* With facts covering the segment: the first batch whose last offset is
** >= offset (offsets grow with positions), or NULL. */
const kl_fact *kl_segment_fact_reaching(const kl_segment *s, int64_t offset);

/* Where a scan that filters records by timestamp itself may start for
** timestamps >= t, from the facts alone when they cover the segment: the
** first batch whose running maximum of max timestamps reaches t (every
** record before it is below t; no record is read).  1 with *offset its
** first offset; 0 when no batch reaches t; -1 when the facts cannot tell
** (they do not cover the segment, the batch's first offset is not known,
** or out of memory). */
int kl_segment_facts_seek_batch(kl_segment *s, int64_t t, int64_t *offset);

/* A seek by time from the facts alone, when they cover the segment: the
** first record whose timestamp is >= t (control records count, as in
** Kafka's lookup).  1 with *offset and *ts; 0 when no record reaches t;
** -1 when the facts cannot tell (a batch on the way without its records'
** timestamps), or out of memory: then read the segment. */
int kl_segment_facts_seek_time(kl_segment *s, int64_t t, int64_t *offset, int64_t *ts);

/* Every record of fact f's batch decoded, the smallest timestamp among them
** min_ts: f->decoded and f->min_ts are set (once). */
void kl_segment_decoded(kl_segment *s, kl_fact *f, int64_t min_ts);

/* The smallest and largest timestamp of the segment's data records, exactly,
** when its facts cover it and every data batch among them decoded once: 1
** (*mn > *mx when it holds no data record), else 0.  Control batches are
** not rows and count for neither; the largest is the batches' header
** maximum, by which a batch is passed over too.  A window that misses
** [*mn, *mx] has no row in the segment, which is then passed over
** unopened.  Kept until a fact is added or decoded. */
int kl_segment_facts_range(kl_segment *s, int64_t *mn, int64_t *mx);

/* Is every data record of the batches from fact i to the end of the data
** above t, as kl_segment_facts_range knows it?  1 yes, 0 no or not known.
** A window's scan that has passed its last record in a segment leaves the
** segment there, not batch by batch: a log's timestamps rise, and a 1%
** window over 2,000 partitions passed over 12 batches in each. */
int kl_segment_facts_rest_above(kl_segment *s, size_t i, int64_t t);

/* Keep a copy of the n timestamps of fact f's records (n is its record
** count) and, unless rend is NULL, where they end, each within the log's
** budget; quietly nothing (or the timestamps alone) when over it or out of
** memory. */
void kl_segment_learn_records(kl_segment *s, kl_fact *f, const int64_t *ts, const uint32_t *rend,
                              int32_t n);
/* Add where fact f's n records end (rend: n of them, as above) to the
** timestamps it keeps without, within the log's budget of ends; quietly
** nothing when it keeps none, has them, is over the budget or out of
** memory. */
void kl_segment_learn_ends(kl_segment *s, kl_fact *f, const uint32_t *rend, int32_t n);

/* Keep a copy of the filter of fact f's keys (words words, keyset.h),
** within the log's budget; quietly nothing when over it or out of memory. */
void kl_segment_learn_keys(kl_segment *s, kl_fact *f, const uint64_t *kf, size_t words);

/* Add a hole to the salvage map being built (positions increase). */
kl_rc kl_segment_add_hole(kl_segment *s, int64_t pos, int64_t end, int kind);

/* The hole containing pos, or NULL (binary search). */
const kl_hole *kl_segment_hole_at(const kl_segment *s, int64_t pos);

/* What retention renames a removed segment's files to, <name>.deleted,
** before deleting them a while later (Kafka's file.delete.delay.ms): a
** reader that listed the directory before goes on reading them. */
#define KL_DELETED_SUFFIX ".deleted"
#define KL_DELETED_LEN (sizeof KL_DELETED_SUFFIX - 1)

/* "<20 digits>.log" and nothing else (not .log.deleted, .log.swap, ...):
** *base is the segment's base offset. */
int kl_segment_name(const char *name, int64_t *base);

/* The same for any file named by an offset: "<20 digits><suffix>" (".log",
** ".snapshot", ...), *offset the number. */
int kl_offset_file_name(const char *name, const char *suffix, int64_t *offset);

/* An empty set with the given bound on open segments, and three
** descriptors for each (<= 0: KL_SEGSET_MAX_BOUND segments, and
** kl_segset_bound descriptors for this process's RLIMIT_NOFILE). */
void kl_segset_init(kl_segset *set, int max_open);

/* How many segments may be open at once whatever they hold: the bound on
** segments, or on descriptors at three a segment when that is lower (a
** merge that holds one segment of each partition open at once stays within
** it). */
int kl_segset_room(const kl_segset *set);

/* Map the .log files of set's segments from now on, when each cannot
** shrink (map 1), or read them all with pread (0).  A change closes the
** open segments no reader holds, so that each opens again the new way;
** those held change when they next open. */
void kl_segset_map(kl_segset *set, int map);

/* The bound on the descriptors one set's segments hold for a soft
** descriptor limit of soft (< 0: unknown, three for each of
** KL_SEGSET_MAX_OPEN segments): a quarter of it, at least three for each of
** 8 segments (.log, .index, .timeindex) and at most three for each of
** KL_SEGSET_MAX_BOUND.  The rest is the process's: SQLite's files, other
** tables, the host's own.  (A process that runs out anyway still reads:
** kl_segment_open and kl_segment_index close the least recently used
** segment and try again.) */
int kl_segset_bound(long long soft);
/* kl_segset_bound of the soft RLIMIT_NOFILE now. */
int kl_segset_default_bound(void);

#endif
