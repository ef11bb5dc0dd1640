/*
** cursor.h - iterate the data records of a log within bounds on offset and
** timestamp, forward or backward, doing only the work the bounds require.
**
** Forward: the start is the larger of the offset seek (segment floor ->
** offset index floor -> header scan) and the timestamp seek (Kafka's lookup
** by time); segments whose largest timestamp is below the lower time bound,
** and batches whose max timestamp is, are skipped without decoding records;
** the scan stops at the first batch past the upper offset bound.
** Backward: batches are collected per index interval (between two offset
** index entries, so a few KiB at a time) and produced last first; no scan
** from the start of the log.  The interval before is collected ahead, so
** that the first batch of an interval is checked against the batch before
** it, as a forward walk checks it.
** Every batch read is walked by kl_scan (scan.h): the rules of damage and
** salvage are the same in both directions.
** Control batches (transaction markers) are never produced; records of
** transactional batches are, as a read_uncommitted consumer sees them.
*/
#ifndef KL_CURSOR_H
#define KL_CURSOR_H

#include "ahead.h"
#include "batch.h"
#include "keyset.h"
#include "log.h"
#include "scan.h"

typedef struct kl_cursor kl_cursor;

typedef struct kl_bounds {
  int64_t off_lo, off_hi;   /* inclusive; INT64_MIN / INT64_MAX if open */
  int64_t ts_lo, ts_hi;     /* inclusive; INT64_MIN / INT64_MAX if open */
  int desc;                 /* nonzero: highest offset first */
  int64_t max_skew;         /* a bound on disorder the caller vouches for
                            ** (every record's timestamp is at least the
                            ** largest before it minus max_skew), or -1
                            ** (INT64_MAX, every skew from 2^63 - 1 up, bounds
                            ** nothing either): with it, ts_hi also ends the
                            ** scan, where the
                            ** running maximum reaches ts_hi + max_skew + 1
                            ** (records after it that break the bound are
                            ** not produced) */
  const struct kl_keyset *keys; /* NULL: any key; else only records whose
                            ** key's bytes are one of these (keyset.h; the
                            ** caller's, outliving the scan): each batch
                            ** produced is decoded, and a batch whose key
                            ** filter (learnt when a scan with keys read
                            ** all its records) holds none of them is
                            ** passed over unread */
} kl_bounds;

/* Bounds that admit everything, ascending. */
kl_bounds kl_bounds_all(void);

/*
** Create a cursor on log (which must outlive it), counting its work into
** stats (NULL: its own counters, kl_cursor_stats).  on_corrupt is
** KL_ON_CORRUPT_ERROR (the default: damage in what the cursor reads fails
** with KL_CORRUPT naming file and position; the one silent end is the tail
** of the last segment, scan.h) or KL_ON_CORRUPT_SKIP (salvage: the batches
** the canonical walk keeps, minus those whose records do not decode; the
** same rows whatever the bounds and the direction).  Not positioned: call
** kl_cursor_start.
*/
kl_rc kl_cursor_new(kl_log *log, kl_stats *stats, int on_corrupt, kl_cursor **out);
void kl_cursor_free(kl_cursor *c);

/* Free the buffers c reads with (its windows of the file, up to 1 MiB, and
** the batch it holds decompressed), once its rows have ended (KL_DONE): a
** cursor kept for later, one of many open at once, then costs little.  The
** next kl_cursor_start reads afresh. */
void kl_cursor_trim(kl_cursor *c);
/* Leave what the cursor reads (its segment, a kept batch it borrows) and
** its log, which may then be closed; it keeps its buffers (up to
** KL_READER_KEEP each, scan.h) and decoder state, and stops its read-ahead
** workers.  Then kl_cursor_reuse or kl_cursor_free. */
void kl_cursor_detach(kl_cursor *c);
/* Make c (detached or not) a cursor on log as kl_cursor_new would, with
** the buffers it has: a table's next query reads with the cursor of its
** last, allocating nothing (the threads wanted are kept). */
void kl_cursor_reuse(kl_cursor *c, kl_log *log, kl_stats *stats, int on_corrupt);

/*
** Decompress ahead with read-ahead a (ahead.h) and `threads` workers (0,
** the default: none, a is not used).  a is the caller's, kept across scans
** (a table's: its workers start once and wait parked between scans) and
** must outlive the cursor's use of it.  Only a forward scan that opens
** batch after batch the batch facts know (segment.h) uses it: once it has
** opened, since kl_cursor_start, KL_AHEAD_AFTER batches in a row holding
** KL_AHEAD_AFTER_BYTES of records (decompressed), it claims a (kl_ahead_claim: of cursors lent the
** same read-ahead, one scan at a time reads ahead, the others alone) and
** queues the batches the facts say come next, within the bounds; it
** releases a when the scan ends, starts again or the cursor is freed.
** Lookups, counts and short windows never claim it, so they start no
** thread and hand nothing over.  The rows, their order and the errors are
** the same with threads as without; the counters too, but for reads and
** bytes_read (a worker reads each batch by itself), batches_ahead and
** threads_started.
*/
enum { KL_AHEAD_AFTER = 3 };
/* A short window reads less: handing its batches over would cost it more
** than it gains. */
#define KL_AHEAD_AFTER_BYTES ((int64_t)1 << 20)
/* With if_idle, a scan claims the read-ahead only when a core is idle as it
** proves long (os.h kl_os_core_idle): on a machine whose cores are all
** busy, workers take the time of the scan's own thread, and the scan with
** them was measured half again slower than alone. */
void kl_cursor_set_ahead(kl_cursor *c, kl_ahead *a, int threads, int if_idle);

/* The counters the cursor's work went to. */
const kl_stats *kl_cursor_stats(const kl_cursor *c);

/* Position before the first record within bounds (may be called again to
** restart with other bounds).  Then kl_cursor_next moves to each record. */
kl_rc kl_cursor_start(kl_cursor *c, const kl_bounds *b, kl_err *err);

/* KL_OK: a record is current.  KL_DONE: no more.  Else an error. */
kl_rc kl_cursor_next(kl_cursor *c, kl_err *err);
/* kl_cursor_next when the next row is at hand, in the current batch,
** needing no work and no check (counted rows, records decoded ahead): 1,
** the row moved to; else 0, nothing done, and kl_cursor_next moves.  The
** per-row path of a full scan, kept small. */
int kl_cursor_step(kl_cursor *c);

/* A row is produced without decoding its batch when the batch lies wholly
** within the bounds on its header alone (offsets, max timestamp, record
** count, CRC): counting rows reads headers only.  Before reading a field
** of the current record, call kl_cursor_load, which decodes the batch up
** to it (KL_OK, or the record-level error a decoding walk would give).
** The batch and segment are always there. */
kl_rc kl_cursor_load(kl_cursor *c, kl_err *err);
/* A point lookup in a compressed batch whose record ends are known takes
** the batch's bytes from its log's set's kept batches (segment.h
** kl_segset.bcache, bcache.h) when they are there, and leaves them there
** when it decompresses them: the record then borrows them (pinned until
** the cursor moves on, starts again or is detached).  Skip mode keeps
** nothing. */
/* Does the current row need kl_cursor_load before its fields are read? */
int kl_cursor_lazy(const kl_cursor *c);
/* The current row's offset and timestamp without decoding it, when the
** batch facts know them (segment.h): 1, else 0 (then load). */
int kl_cursor_peek(const kl_cursor *c, int64_t *offset, int64_t *timestamp);

/* The current record (after kl_cursor_load) and its batch and segment;
** borrowed until the next kl_cursor_next / kl_cursor_start. */
const kl_record *kl_cursor_record(const kl_cursor *c);
const kl_batch *kl_cursor_batch(const kl_cursor *c);
const kl_segment *kl_cursor_segment(const kl_cursor *c);

#endif
