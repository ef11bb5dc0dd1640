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
** Both come from one walk of every batch from the log start (the first
** record of each control batch is read, data batches are not decoded); the
** newest producer snapshot Kafka's loader keeps and can read
** (<offset>.snapshot at a segment's base, or the last one beyond every
** base; one that does not read gives way to the one before) is the state
** there, as Kafka's broker restores it: it knows the transactions begun
** before the log start.
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

/* The aborted transactions and the last stable offset of log, from its
** markers, reading through rd.  KL_CORRUPT names a damaged batch or a
** control record Kafka rejects (with rd in skip mode such a batch is passed
** over: a marker it may have been closes nothing, so the transaction stays
** open and holds the last stable offset); KL_IO a file that cannot be read.
** Free with kl_txns_free. */
kl_rc kl_txns_load(kl_log *log, kl_reader *rd, kl_txns *out, kl_err *err);
void kl_txns_free(const kl_env *env, kl_txns *t);

/* Is b a data batch of an aborted transaction, which a read_committed
** consumer skips?  A transactional batch of producer P lies in P's aborted
** transaction when one starts at or before its last offset and its ABORT
** marker comes after the batch. */
int kl_txns_aborted(const kl_txns *t, const kl_batch *b);

/* The producers' transaction states as the broker's ProducerStateManager
** keeps them, learnt from batches given in offset order. */
typedef struct kl_txn_state {
  struct kl_txn_producer *p; /* open-addressing table by producer id */
  size_t n, cap;            /* used slots, slots (a power of 2) */
} kl_txn_state;

/* What a marker of an open transaction ended: the .txnindex entry
** recover() writes for an ABORT.  Its first offset is any value in
** (lo, hi]: recovery writes hi, the transaction's first batch, but no batch
** of the producer lies in between, so each makes a read_committed reader
** skip the same batches (and the log cleaner keeps the original entry
** after removing those first batches). */
typedef struct kl_txn_end {
  int64_t pid;              /* producer id */
  int64_t last;             /* the marker's offset */
  int64_t lo, hi;           /* bounds of the first offset (see above) */
  int optional;             /* no open transaction was seen: it began before
                            ** the walk, its data was cleaned away, or there
                            ** was none: it covers no batch of the walk, and
                            ** an entry may or may not exist */
} kl_txn_end;

/*
** Batch b of a producer (magic 2, producer id >= 0), the next in offset
** order, into st (ProducerAppendInfo.append): a data batch sets its
** producer's epoch (a new epoch forgets the sequence), last sequence, last
** offset and timestamp, and a transactional one opens its transaction; a
** COMMIT or ABORT marker closes it and sets the epoch, the coordinator
** epoch and the timestamp.  ctl_type and ctl_epoch are a control batch's
** first record's type and coordinator epoch (kl_control_parse; type -1:
** none or rejected, which changes nothing).  OUT: *aborted is 1 and *end
** filled when b is an ABORT marker.  KL_NOMEM only.
*/
kl_rc kl_txn_step(const kl_env *env, kl_txn_state *st, const kl_batch *b, int ctl_type,
                  int32_t ctl_epoch, kl_txn_end *end, int *aborted);
/* Open the transaction of pid at first unless it is open from earlier
** (a producer snapshot's state).  KL_NOMEM only. */
kl_rc kl_txn_open(const kl_env *env, kl_txn_state *st, int64_t pid, int64_t first);

/* A producer's state as the broker keeps it (ProducerStateEntry), and as a
** producer snapshot stores it. */
typedef struct kl_producer {
  int64_t pid;              /* producer id */
  int16_t epoch;            /* producer epoch */
  int32_t last_seq;         /* last sequence of its last batch, -1 */
  int64_t last_offset;      /* last offset of its last data batch, -1 */
  int32_t offset_delta;     /* that batch's last offset delta */
  int64_t last_ts;          /* timestamp of its last batch or marker, -1 */
  int32_t coordinator_epoch;/* of its last marker, -1 */
  int64_t txn_first;        /* first offset of its open transaction, -1 */
} kl_producer;

/* Replace pid's state by *p (a snapshot's entry).  KL_NOMEM only. */
kl_rc kl_txn_restore(const kl_env *env, kl_txn_state *st, const kl_producer *p);

/* Every producer of st, by producer id, into *out (kl_malloc'd through
** env, the caller frees; NULL when there is none).  KL_NOMEM only. */
kl_rc kl_txn_producers(const kl_env *env, const kl_txn_state *st, kl_producer **out, size_t *n);

/* Where the producers' state of log comes from: the newest valid snapshot
** (its offset, -1 when none was used) and the offset the walk ended at. */
typedef struct kl_txn_origin {
  int64_t snapshot;         /* offset of the snapshot loaded, or -1 */
  int64_t end;              /* log end offset */
  int64_t max_ts;           /* greatest batch timestamp seen, -1 */
} kl_txn_origin;

/* kl_txns_load's walk, keeping what it learnt: the producers' state at the
** end of log in *st (the caller frees it with kl_txn_state_free) and where
** it came from in *origin.  With start, the log start offset the broker
** loads the log with (>= 0), the state is the broker's
** (ProducerStateManager.truncateAndReload, UnifiedLog.rebuildProducerState):
** snapshots at or below start are not used, and with none left the state
** starts empty at the batch holding start, so producers whose batches all
** lie below it are not known; out then holds what that walk found.  With
** start -1 it is kl_txns_load's (any snapshot serves, the walk learns from
** the first batch).  Errors as kl_txns_load's. */
kl_rc kl_txns_load_state(kl_log *log, kl_reader *rd, int64_t start, kl_txns *out,
                         kl_txn_state *st, kl_txn_origin *origin, kl_err *err);
/* The earliest open transaction: its first offset (INT64_MAX: none) and
** producer (-1). */
int64_t kl_txn_first_open(const kl_txn_state *st, int64_t *pid);
/* Forget every producer (after damage, what lies in it is not known). */
void kl_txn_state_reset(kl_txn_state *st);
void kl_txn_state_free(const kl_env *env, kl_txn_state *st);

#define KL_TXN_ENTRY_SIZE 34

/* Decode the .txnindex entry at p (KL_TXN_ENTRY_SIZE bytes) of the segment
** based at base into *out.  Returns 0 when Kafka rejects it: a version
** other than 0 (read from the first byte, as Kafka reads it), or a last
** offset below the segment's base (TransactionIndex.sanityCheck). */
int kl_txn_entry(const uint8_t *p, int64_t base, kl_txn_abort *out);

#endif
