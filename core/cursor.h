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
** from the start of the log.
** Control batches (transaction markers) are never produced; records of
** transactional batches are, as a read_uncommitted consumer sees them.
*/
#ifndef KL_CURSOR_H
#define KL_CURSOR_H

#include "batch.h"
#include "log.h"

typedef struct kl_cursor kl_cursor;

typedef struct kl_bounds {
  int64_t off_lo, off_hi;   /* inclusive; INT64_MIN / INT64_MAX if open */
  int64_t ts_lo, ts_hi;     /* inclusive; INT64_MIN / INT64_MAX if open */
  int desc;                 /* nonzero: highest offset first */
} kl_bounds;

/* Bounds that admit everything, ascending. */
kl_bounds kl_bounds_all(void);

/* Create a cursor on log (which must outlive it).  Not positioned: call
** kl_cursor_start. */
kl_rc kl_cursor_new(kl_log *log, kl_cursor **out);
void kl_cursor_free(kl_cursor *c);

/*
** What a cursor does with a damaged batch.  KL_ON_CORRUPT_ERROR (the
** default): the scan fails with KL_CORRUPT naming file and position.
** KL_ON_CORRUPT_SKIP (salvage): a batch whose CRC does not match, whose
** records do not decode (checked before any of its records is produced),
** whose header has an invalid field but a sane length, or whose offsets do
** not follow the previous batch's (forward scans) is skipped whole; a
** header that gives no usable length (below the minimum, unknown magic)
** ends the segment for that scan, which continues with the next segment.
** Offsets going backwards are detected by forward scans only.
*/
enum { KL_ON_CORRUPT_ERROR = 0, KL_ON_CORRUPT_SKIP = 1 };
void kl_cursor_on_corrupt(kl_cursor *c, int mode);
/* Damaged batches (or segment remainders) skipped so far (skip mode). */
uint64_t kl_cursor_corrupt_skipped(const kl_cursor *c);

/* Position before the first record within bounds (may be called again to
** restart with other bounds).  Then kl_cursor_next moves to each record. */
kl_rc kl_cursor_start(kl_cursor *c, const kl_bounds *b, kl_err *err);

/* KL_OK: a record is current.  KL_DONE: no more.  Else an error. */
kl_rc kl_cursor_next(kl_cursor *c, kl_err *err);

/* The current record and its batch and segment; borrowed until the next
** kl_cursor_next / kl_cursor_start. */
const kl_record *kl_cursor_record(const kl_cursor *c);
const kl_batch *kl_cursor_batch(const kl_cursor *c);
const kl_segment *kl_cursor_segment(const kl_cursor *c);

#endif
