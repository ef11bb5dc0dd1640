/*
** txn.h - what a read_committed consumer needs of a partition
** (behaviour.md section 13): the aborted transactions its .txnindex files
** record, and the last stable offset.
**
** .txnindex, 34-byte entries, big-endian (format.md 9):
**
**   +---------+------------+-------------+------------+------------------+
**   | version | producerId | firstOffset | lastOffset | lastStableOffset |
**   |   i16   |    i64     |     i64     |    i64     |       i64        |
**   +---------+------------+-------------+------------+------------------+
**
** lastOffset is the ABORT marker's offset (in this segment); firstOffset
** may lie in an earlier segment.  Kafka reads the version as the first
** byte and rejects any but 0; a trailing partial entry is ignored.
**
** The last stable offset is the first offset of the earliest transaction
** still open: transactional batches of a producer after its last marker.
** It is found from the newest producer snapshot (<offset>.snapshot, the
** producers' open transactions at that offset, as Kafka's broker restores
** them) and a walk of the batch headers after it; without a usable
** snapshot the walk starts at the log start.  Nothing is decompressed.
*/
#ifndef KL_TXN_H
#define KL_TXN_H

#include "batch.h"
#include "log.h"

typedef struct kl_txn_abort {
  int64_t pid;              /* producer id */
  int64_t first, last;      /* first offset, ABORT marker offset */
} kl_txn_abort;

typedef struct kl_txns {
  kl_txn_abort *a;          /* every aborted transaction, by pid then first */
  size_t n;
  int64_t lso;              /* last stable offset: the earliest open
                            ** transaction's first offset, else the log end
                            ** offset */
  int64_t open_pid;         /* the producer of that transaction, or -1 */
} kl_txns;

/* Read every .txnindex of log and find the last stable offset, reading
** through rd.  KL_CORRUPT names a .txnindex entry Kafka would reject
** (version, offsets outside the segment) or a damaged batch of the walk;
** KL_IO a file that cannot be read.  Free with kl_txns_free. */
kl_rc kl_txns_load(kl_log *log, kl_reader *rd, kl_txns *out, kl_err *err);
void kl_txns_free(const kl_env *env, kl_txns *t);

/* Is b a data batch of an aborted transaction, which a read_committed
** consumer skips?  A transactional batch of producer P lies in P's aborted
** transaction when one starts at or before its last offset and its ABORT
** marker comes after the batch. */
int kl_txns_aborted(const kl_txns *t, const kl_batch *b);

#define KL_TXN_ENTRY_SIZE 34

/* Decode the .txnindex entry at p (KL_TXN_ENTRY_SIZE bytes) of the segment
** based at base into *out.  Returns 0 when Kafka rejects it: a version
** other than 0 (read from the first byte, as Kafka reads it), or a last
** offset below the segment's base (TransactionIndex.sanityCheck). */
int kl_txn_entry(const uint8_t *p, int64_t base, kl_txn_abort *out);

/* The entries of one .txnindex file (path) of the segment with base
** offset base, appended to *a (*n of them, *cap allocated).  An absent
** file has none. */
kl_rc kl_txnindex_read(const kl_env *env, const char *path, int64_t base, kl_txn_abort **a,
                       size_t *n, size_t *cap, kl_err *err);

#endif
