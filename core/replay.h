/*
** replay.h - reading an internal topic's partition the way its owner loads
** it: Kafka's coordinators (__consumer_offsets, __transaction_state) and the
** Schema Registry (_schemas) rebuild their state from every data record of
** a compacted partition, in offset order, from its log start.  Control
** batches (transaction markers) carry no record of theirs.
**
** The group coordinator alone reads as a read_committed consumer: offsets
** committed inside a transaction (TxnOffsetCommit) count only once it
** committed, so records of aborted transactions and of one still open (at
** and after the last stable offset) are left out (txn.h).
*/
#ifndef KL_REPLAY_H
#define KL_REPLAY_H

#include "cursor.h"
#include "klog.h"

/* One record of the replay; an error stops it.  err says what is wrong
** with the record (the replay adds where it lies). */
typedef kl_rc (*kl_replay_fn)(void *ud, const kl_record *r, kl_err *err);

/* Flags of kl_replay_partition. */
enum {
  KL_REPLAY_COMMITTED = 1   /* read_committed: no record of an aborted or
                            ** open transaction (txn.h) */
};

/* Hand every data record of the partition directory dir, from its
** readable start on (kl_log_readable_start, with checkpoint_start the log
** directory's checkpoint for it, or -1), to fn; with KL_REPLAY_COMMITTED
** in flags, only those a read_committed consumer reads.  Work is counted
** into stats (may be NULL).  Errors: the log's and its transaction
** index's, as "<dir>: ...", or fn's as "<dir>: record at offset <n>:
** <what fn said>". */
kl_rc kl_replay_partition(const kl_env *env, const char *dir, int64_t checkpoint_start,
                          unsigned flags, kl_stats *stats, kl_replay_fn fn, void *ud,
                          kl_err *err);

#endif
