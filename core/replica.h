/*
** replica.h - two copies of one partition (a leader's and a follower's, or
** two brokers' after an unclean leader election): where they part, what
** each holds past that point, and what Kafka's truncation would do.
**
** Each copy's leader epoch chain is its leader-epoch-checkpoint as
** LeaderEpochFileCache loads it (an entry that is not monotonic with the
** ones before it removes them: assign's rule), or, when the file is
** absent, the chain its batches' leader epochs give.  The copies are
** compared by chain (the first entry where they disagree), then batch by
** batch from the later of their log starts, on base offset, last offset,
** CRC and leader epoch: the first batch that differs, or the end of the
** shorter copy, is where they part.
**
** Truncation (KIP-101, KIP-279, AbstractFetcherThread): the copy whose
** latest epoch is larger is the leader (the later leader wrote it; equal:
** the longer copy), the other follows.  The follower asks for the end of
** its latest epoch E; the leader answers endOffsetFor(E): its log end
** offset when E is its own latest, else the start of the next epoch it
** knows after the largest epoch <= E.  When the leader's epoch differs from
** E, the follower truncates to the end of that epoch in its own chain and
** asks again; when it is the same, it truncates to the smaller of the two
** ends (and never past its log end).  What the follower holds at and
** after that offset is lost.
*/
#ifndef KL_REPLICA_H
#define KL_REPLICA_H

#include "checkpoint.h"
#include "klog.h"

/* Kafka's cache of one copy: entries sorted by epoch and by start. */
typedef struct kl_epoch_chain {
  kl_epoch_entry *e;
  size_t n;
} kl_epoch_chain;

/* Add (epoch, start) as LeaderEpochFileCache.assign does: ignored when it
** is the latest epoch again at a later start; else the entries with an
** epoch or a start at or above it go first.  KL_NOMEM. */
kl_rc kl_epoch_chain_assign(const kl_env *env, kl_epoch_chain *c, int32_t epoch, int64_t start);
void kl_epoch_chain_free(const kl_env *env, kl_epoch_chain *c);

/* endOffsetFor(epoch, log_end): the epoch answered (-1 undefined) and its
** end offset (-1 undefined). */
void kl_epoch_chain_end(const kl_epoch_chain *c, int32_t epoch, int64_t log_end, int32_t *out_epoch,
                        int64_t *out_end);

/* One side of a comparison. */
typedef struct kl_replica_side {
  int64_t log_start, log_end;
  int32_t latest_epoch;     /* -1 without a chain */
  int from_checkpoint;      /* the chain is the file's (else the batches') */
  int64_t records_past;     /* data records at offsets >= first_diff */
  int64_t batches;          /* batches walked */
} kl_replica_side;

typedef struct kl_replica_diff {
  kl_replica_side a, b;
  int64_t epoch_diff;       /* start of the first chain entry they disagree
                            ** on, -1 when one chain extends the other */
  int64_t first_diff;       /* first offset held differently or by one
                            ** side only, -1 when they hold the same */
  int kept;                 /* 0: a is the leader, 1: b, -1: identical */
  int32_t common_epoch;     /* the epoch the follower's truncation settled
                            ** on, -1 undefined (it truncates to its high
                            ** watermark, unknown here) */
  int64_t truncate_to;      /* where the follower truncates, -1 undefined */
  int64_t records_lost;     /* data records the follower holds at and
                            ** past truncate_to */
} kl_replica_diff;

/* Compare the partition directories dir_a and dir_b.  KL_CANTOPEN naming
** a directory that is not a partition; KL_CORRUPT naming a file and
** position (a copy with damage is for kafka_log_check first); stats
** receives the work. */
kl_rc kl_replica_compare(const kl_env *env, const char *dir_a, const char *dir_b, kl_stats *stats,
                         kl_replica_diff *out, kl_err *err);

#endif
