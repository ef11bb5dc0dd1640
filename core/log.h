/*
** log.h - a partition directory: its segments in a skip list keyed by base
** offset, and Kafka's lookups by offset and by timestamp.
**
** Opening lists the directory (only "<20 digits>.log" files count; .deleted,
** .cleaned, .swap, snapshots, checkpoints and foreign files are ignored) and
** touches no segment: each segment is opened on first use, so opening a log
** of any size costs one readdir.  A directory kafkalog writes has its
** commit record read before the listing, so that a writer rolling and
** trimming segments meanwhile is seen at one committed state (log.c).  At most
** kl_segset_bound(RLIMIT_NOFILE) segments are open at once (segment.h).
**
** Lookups read through a kl_reader (scan.h): its mode (on_corrupt) decides
** what damage does, and its counters receive the work.
*/
#ifndef KL_LOG_H
#define KL_LOG_H

#include "batch.h"
#include "commit.h"
#include "klog.h"
#include "scan.h"
#include "segment.h"

typedef struct kl_log kl_log;

/* Open the partition directory dir.  KL_CANTOPEN names the path and gives
** the OS reason when it is missing, not a directory or unreadable.  A directory
** without segments opens as an empty log (kl_log_segment_count is 0;
** kl_log_hint says what it holds instead).  *out is owned by the caller
** (kl_log_close). */
kl_rc kl_log_open(const kl_env *env, const char *dir, kl_log **out, kl_err *err);
void kl_log_close(kl_log *log);

/* kl_log_open with its segments in set, shared with other logs (NULL: its
** own): the bound on open segments and the budgets of batch facts then
** hold for all of them together, so that reading thousands of partitions
** holds no more files open than reading one.  set outlives the log. */
kl_rc kl_log_open_in(const kl_env *env, const char *dir, kl_segset *set, kl_log **out,
                     kl_err *err);

/* kl_log_open_in with the end a writer's own transaction has reached
** (writer.h kl_writer_view) in place of the commit record's: what the
** writing connection reads of its own uncommitted records, its batch in
** memory included (copied: view may go after the call).  view NULL: the
** commit record's. */
kl_rc kl_log_open_view(const kl_env *env, const char *dir, kl_segset *set, const kl_view *view,
                       kl_log **out, kl_err *err);

/* kl_log_open for readers: a directory without segments is not a
** partition (Kafka always keeps one segment), KL_CANTOPEN saying so, with
** kl_log_hint's words when it holds partition directories; *out is then
** NULL. */
kl_rc kl_log_open_partition(const kl_env *env, const char *dir, kl_log **out, kl_err *err);

const char *kl_log_dir(const kl_log *log);
const kl_env *kl_log_env(const kl_log *log);
/* For a directory without segments that holds "<topic>-<n>" directories:
** "it holds partition directories such as orders-0, orders-1, orders-2";
** else NULL. */
const char *kl_log_hint(const kl_log *log);

/* The commit record (or the writer's view) the log was opened at, whose
** generation says whether a later commit has been made (logcache.h); NULL
** for a directory kafkalog has not written. */
const kl_commit *kl_log_commit(const kl_log *log);

/* Segments in base-offset order; NULL past either end. */
size_t kl_log_segment_count(const kl_log *log);
kl_segment *kl_log_first(const kl_log *log);
kl_segment *kl_log_last(const kl_log *log);
kl_segment *kl_log_next(const kl_log *log, const kl_segment *s);
kl_segment *kl_log_prev(const kl_log *log, const kl_segment *s);
/* Segment with the greatest base offset <= offset, or NULL. */
kl_segment *kl_log_floor(const kl_log *log, int64_t offset);

/* Log start offset (the greater of the first segment's base and the
** commit record's log start) and log end offset (next offset to be
** written).  Both 0 for an empty log. */
int64_t kl_log_start_offset(const kl_log *log);

/* The effective log start offset, the first offset any consumer may read:
** the greatest of the first segment's base, the commit record's log start
** (a kafkalog writer's retention) and checkpoint_start, the log directory's
** log-start-offset-checkpoint for this partition (-1 when it names none).
** Kafka moves the checkpoint after the retention that the commit record
** publishes, so a stop between the two leaves the commit record ahead: every
** reader takes the larger.  Records below it are deleted for everyone. */
int64_t kl_log_readable_start(const kl_log *log, int64_t checkpoint_start);
kl_rc kl_log_end_offset(kl_log *log, kl_reader *rd, int64_t *leo, kl_err *err);

/* Statuses of lookups, as expected.json names them. */
enum {
  KL_LOOKUP_OK = 0,
  KL_LOOKUP_LOG_END,        /* offset == log end offset */
  KL_LOOKUP_OUT_OF_RANGE,   /* below log start or above log end */
  KL_LOOKUP_GAP,            /* found in a later segment (offset in a gap) */
  KL_LOOKUP_NOT_FOUND       /* timestamp lookups: nothing at or after t */
};

/* Kafka's fetch resolution of an offset (LocalLog.read). */
typedef struct kl_offset_lookup {
  int status;
  int64_t segment_base;     /* floor segment */
  int64_t index_offset;     /* offset index floor entry, or segment base */
  int64_t index_position;   /* its position, or 0 */
  int64_t read_segment_base;/* segment the batch was found in */
  kl_batch batch;           /* the first batch with last offset >= target */
} kl_offset_lookup;

kl_rc kl_log_lookup_offset(kl_log *log, kl_reader *rd, int64_t offset, kl_offset_lookup *out,
                           kl_err *err);

/* Special timestamp targets of ListOffsets. */
#define KL_TS_LATEST (-1)
#define KL_TS_EARLIEST (-2)
#define KL_TS_MAX (-3)

/* Kafka's fetchOffsetByTimestamp: the smallest offset whose record
** timestamp is >= t (control records included, as Kafka counts them), with
** the index steps taken.  Segments are dated by their largest record
** timestamp (never by file mtime: exactness over Kafka's shortcut). */
typedef struct kl_time_lookup {
  int status;
  int64_t segment_base;
  int64_t ti_timestamp;     /* time index floor entry, or -1 */
  int64_t ti_offset;        /* its offset, or segment base */
  int64_t start_position;
  int64_t offset;           /* result */
  int64_t timestamp;        /* result record's timestamp */
} kl_time_lookup;

kl_rc kl_log_lookup_time(kl_log *log, kl_reader *rd, int64_t t, kl_time_lookup *out,
                         kl_err *err);

/* The same search for any t, with no special targets: negative values are
** timestamps too (v0 records carry -1).  Cursors seek with this.  A segment
** whose largest timestamp reaches t but that holds no such record (its
** dating can only err upwards, with damage) passes the search on. */
kl_rc kl_log_seek_time(kl_log *log, kl_reader *rd, int64_t t, kl_time_lookup *out,
                       kl_err *err);

/* The same answer (status, offset, timestamp, segment) for a reader that
** needs nothing else: a segment whose batch facts cover it (segment.h) is
** searched in memory, without its indexes, so the index fields of *out
** say nothing then. */
kl_rc kl_log_find_time(kl_log *log, kl_reader *rd, int64_t t, kl_time_lookup *out, kl_err *err);

/* kl_log_find_time for a scan that filters records by timestamp itself:
** out->offset is at or below the first record reaching t, and every record
** before it is below t.  Where the batch facts cover the segment, or know
** the batches from the time index entry's on (a seek made before near t),
** it is the first offset of the batch holding that record, found without
** reading one (out->timestamp is then -1); elsewhere the record itself, as
** kl_log_find_time finds it.  With whole (a scan that reads on to the end
** of the segment it lands in, whatever it finds: a time window's), a small
** segment the facts do not cover is walked whole rather than sought by its
** indexes (scan.h kl_scan_learn_small). */
kl_rc kl_log_find_time_floor(kl_log *log, kl_reader *rd, int64_t t, int whole, kl_time_lookup *out,
                             kl_err *err);

/* The first data record (control records are not rows) carrying the
** smallest timestamp, from the batch facts alone (segment.h), reading
** nothing: *known = 0 when they cannot tell (a segment they do not cover,
** a batch whose timestamps are not kept); else *found says whether there
** is a record, and *offset and *ts what it is. */
void kl_log_smallest_time(kl_log *log, int *known, int *found, int64_t *offset, int64_t *ts);

/* The offset at which the running maximum of record timestamps first
** reaches t, or a later one (from the time index and the segment tails;
** *found = 0 when nothing reaches t).  With a bound on disorder N (every
** record's timestamp is at least the largest before it minus N), no
** record after that offset has a timestamp below t - N: a scan for
** timestamps below t - N ends there. */
kl_rc kl_log_time_reached(kl_log *log, kl_reader *rd, int64_t t, int64_t *offset, int *found,
                          kl_err *err);

#endif
