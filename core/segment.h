/*
** segment.h - one segment: <20-digit base offset>.log with its .index and
** .timeindex.  The .log is memory-mapped read-only when first used.
**
** A segment answers three questions the way a Kafka broker does:
**   where is the first batch that may hold offset >= T (offset index floor,
**   then a scan of batch headers),
**   where does the scan for timestamp >= T start (time index floor, then
**   the offset index), and
**   what are its next offset and largest timestamp (from the last index
**   entries plus a scan of the batch headers after them, so a live
**   segment whose time index lacks its final entry is still exact).
** Every index entry used is checked against the batch it points to; if it
** does not hold, the segment is scanned from position 0 instead and
** stats->index_fallbacks counts it.
*/
#ifndef KL_SEGMENT_H
#define KL_SEGMENT_H

#include "batch.h"
#include "index.h"
#include "klog.h"

typedef struct kl_segment {
  int64_t base;             /* base offset from the file name */
  char *log_path;           /* full path of the .log */
  const char *name;         /* file name part of log_path */
  int is_last;              /* the active (last) segment of its log */
  int opened;               /* .log mapped, indexes opened */
  int fd;                   /* .log descriptor, -1 when closed */
  const uint8_t *map;       /* the .log, size bytes, or NULL if empty */
  int64_t size;             /* .log size when mapped */
  kl_index oidx;            /* .index */
  kl_index tidx;            /* .timeindex */
  int tail_known;           /* the three fields below are computed */
  int64_t next_offset;      /* last offset + 1, or base when empty */
  int64_t max_timestamp;    /* largest batch max timestamp, -1 if none */
  int64_t max_ts_offset;    /* last offset of the first batch reaching it */
  int64_t end;              /* position where batches end (<= size) */
  void *node;               /* the owning log's skip list node */
  int64_t verified_pos;     /* 1 + position of the last batch whose CRC held */
  int32_t verified_size;    /* and its size */
} kl_segment;

/* Initialise (does not touch the disk).  path is copied. */
kl_rc kl_segment_init(kl_segment *s, const kl_env *env, int64_t base,
                      const char *log_path);
/* Unmap and free. */
void kl_segment_close(kl_segment *s, const kl_env *env);

/* Map the .log and open the indexes if not done yet.  KL_IO names the file.*/
kl_rc kl_segment_open(kl_segment *s, kl_stats *stats, kl_err *err);

/*
** Read the header of the entry at position pos into *b (b->position set).
** KL_DONE at the end of the data: fewer than 17 bytes left, an incomplete
** trailing entry, or a zero-filled (preallocated) tail.  KL_CORRUPT with
** "<file>: position N: ..." otherwise.
*/
kl_rc kl_segment_batch_at(kl_segment *s, int64_t pos, kl_batch *b,
                          kl_stats *stats, kl_err *err);

/* Verify a batch's CRC, naming the file and position on failure. */
kl_rc kl_segment_verify(kl_segment *s, const kl_batch *b, kl_stats *stats,
                        kl_err *err);

/*
** Position from which a forward scan finds every record with offset >=
** target: the offset index floor entry, checked.  *slot gets the index slot
** used (-1 for position 0).  Always succeeds unless I/O fails.
*/
kl_rc kl_segment_seek_offset(kl_segment *s, int64_t target, int64_t *pos,
                             int64_t *slot, kl_stats *stats, kl_err *err);

/*
** Kafka's translateOffset: the first batch whose last offset >= target,
** scanning from kl_segment_seek_offset.  KL_NOTFOUND if the segment has
** none.
*/
kl_rc kl_segment_find_offset(kl_segment *s, int64_t target, kl_batch *b,
                             kl_stats *stats, kl_err *err);

/*
** Position from which a forward scan finds every record with timestamp >=
** t: time index floor (T, O), then the offset index floor of O.  *ti_slot
** is the time index slot (-1 when none).
*/
kl_rc kl_segment_seek_time(kl_segment *s, int64_t t, int64_t *pos,
                           int64_t *ti_slot, kl_stats *stats, kl_err *err);

/* Compute next_offset, max_timestamp, max_ts_offset and end (once). */
kl_rc kl_segment_tail(kl_segment *s, kl_stats *stats, kl_err *err);

#endif
