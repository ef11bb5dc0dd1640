/*
** writer.h - appending to a partition directory as a Kafka broker does
** (LogSegment.append, behaviour.md sections 2, 3, 7 and 12), in
** transactions.
**
** Records are gathered into a batch (builder.h) until it reaches
** batch_bytes or the transaction syncs (a record larger than batch_bytes
** has a batch of its own, up to max_message_bytes, beyond which it is
** refused); each batch is one append: written
** at the end of the active .log, then an offset index entry and a time
** index entry when more than index_interval bytes lie between the last
** entry's position and this batch's, and a roll to a new segment when the
** batch would take the segment past segment_bytes or its offsets past
** 2^31-1 from the base.  The byte counter Kafka keeps in memory is the
** distance from the last entry's position here, the rule Kafka's recovery
** rebuilds indexes by, so the indexes written equal the ones Kafka would
** rebuild from the same .log.
**
** A transaction: kl_writer_begin refuses a directory whose log directory's
** .lock a Kafka broker holds, then takes the directory's lock file
** (kafkalog.lock, there only while it is held: a second writer, in this
** process or another, gets KL_BUSY); appends go to the files at once (a transaction may be
** larger than memory) but readers stop at the commit record (commit.h);
** kl_writer_sync fsyncs the .log, then the indexes, then publishes a new
** commit record; kl_writer_rollback and kl_writer_rollback_to truncate the
** files back to where the transaction or the savepoint began.
**
** Recovery: kl_writer_begin (and kl_writer_recover) trusts the commit
** record's state only when the files have exactly the sizes it names;
** otherwise (a writer died) it
** removes segments begun after the committed one, truncates the committed
** .log to its committed size, walks it with the scan walker (scan.h: CRC,
** lengths, offsets) and rebuilds its indexes.  A directory with segments
** and no commit record (written by Kafka) is recovered as Kafka recovers
** its last segment: the walk stops at the first invalid batch, the rest
** is cut off.  Then a log-start-offset-checkpoint behind the commit
** record's log start (a writer stopped after its commit) is brought to it.
*/
#ifndef KL_WRITER_H
#define KL_WRITER_H

#include "builder.h"
#include "commit.h"
#include "klog.h"

typedef struct kl_writer kl_writer;

typedef struct kl_writer_opts {
  int64_t segment_bytes;    /* segment.bytes (1 GiB) */
  int64_t index_interval;   /* index.interval.bytes (4096) */
  int64_t batch_bytes;      /* a batch is full at this, uncompressed:
                            ** the producer's batch.size (16384) */
  int64_t max_message_bytes;/* largest batch, uncompressed (a record alone
                            ** may pass batch_bytes up to this):
                            ** message.max.bytes (1048588) */
  int codec;                /* KL_CODEC_* */
  int log_append_time;      /* message.timestamp.type=LogAppendTime */
  int64_t retention_bytes;  /* retention.bytes, -1: none */
  int64_t retention_ms;     /* retention.ms, -1: none */
} kl_writer_opts;

/* Kafka's defaults. */
void kl_writer_opts_default(kl_writer_opts *o);

/* Work done, for tests. */
typedef struct kl_writer_stats {
  uint64_t batches;         /* batches appended */
  uint64_t bytes;           /* .log bytes appended */
  uint64_t rolls;           /* segments started by a roll */
  uint64_t fsyncs;
  uint64_t recoveries;      /* begins that rebuilt a segment's indexes */
  uint64_t truncated;       /* .log bytes cut off (and of segments removed)
                            ** by recovery and rollback */
  uint64_t log_start_repairs; /* checkpoints brought to the commit's start */
} kl_writer_stats;

/* A writer of the directory dir (it must exist: kl_writer_create makes a
** log).  Takes no lock and reads no segment yet.  Failures name the path,
** coded as kl_write_rc says (file.h). */
kl_rc kl_writer_open(const kl_env *env, const char *dir, const kl_writer_opts *opt,
                     kl_writer **out, kl_err *err);

/* Make a new empty log at dir (segment 0 and its commit record), making
** the directory itself when it does not exist; its parent must exist, and
** dir must hold no log (the caller checks).  A directory named
** <topic>-<partition> whose topic Kafka refuses (kl_topic_valid) is
** KL_UNSUPPORTED, before anything is made.  On failure nothing made is
** left: no segment, no commit record, no directory. */
kl_rc kl_writer_create(const kl_env *env, const char *dir, const kl_writer_opts *opt,
                       kl_err *err);

/* Leave the log as a clean stop leaves it (the active segment's final time
** index entry, a commit record flagged clean) when no transaction is open
** and the lock is free; then free.  A writer in a transaction is rolled
** back first. */
kl_rc kl_writer_close(kl_writer *w, kl_err *err);

/* Start a transaction: lock, recover if needed.  KL_BUSY: another writer
** or a broker holds the directory (the message says which).  KL_CORRUPT:
** committed data is damaged (nothing is cut off then). */
kl_rc kl_writer_begin(kl_writer *w, kl_err *err);

/* Append one record; *offset receives its offset.  The record may stay in
** memory until the batch is full or the transaction syncs.  KL_RANGE (a
** record too big: the message names the limit, max_message_bytes,
** segment_bytes or what a reader decompresses) and KL_MISUSE (builder.h)
** leave the transaction as it was. */
kl_rc kl_writer_append(kl_writer *w, const kl_rec_in *r, int64_t *offset, kl_err *err);

/* Savepoint n (0-based; those >= n are replaced), release (those >= n are
** dropped), roll back to n (n stays; -1: to the transaction's beginning,
** which stays open). */
kl_rc kl_writer_savepoint(kl_writer *w, int n, kl_err *err);
void kl_writer_release(kl_writer *w, int n);
kl_rc kl_writer_rollback_to(kl_writer *w, int n, kl_err *err);

/* Retention: at the commit, the log start offset becomes start (at most
** the log end offset), and every segment wholly below it is removed
** (renamed <name>.deleted, deleted a minute later: see segment.h).
** retention_bytes and retention_ms choose a start too, by Kafka's rules
** (behaviour.md 8: the oldest segments, never the active one, while the
** log is over retention_bytes by at least their size, then while their
** largest timestamp is more than retention_ms old), at the first commit of
** the writer and at every commit that rolled a segment. */
kl_rc kl_writer_delete_below(kl_writer *w, int64_t start, kl_err *err);

/* Make the transaction durable and visible: write the last batch, fsync
** the .log then the indexes (and the directory when files were made),
** publish the commit record: the commit point, after which nothing can
** fail.  On error the transaction is still open (roll it back), and
** nothing a reader sees has changed. */
kl_rc kl_writer_sync(kl_writer *w, kl_err *err);

/* End a synced transaction: apply its retention (the segments below the
** new log start renamed .deleted, then the log directory's
** log-start-offset-checkpoint), release the lock.  What fails here is
** done by the next kl_writer_begin. */
void kl_writer_commit(kl_writer *w);

/* End the transaction without its records: put back the commit record if
** it was synced (or its write failed: the slot may hold it), then
** truncate back to where the transaction began, release the lock.  When
** the record cannot be put back the files stay as it names them. */
kl_rc kl_writer_rollback(kl_writer *w, kl_err *err);

/* Leave dir as its last commit left it, for a Kafka broker (which knows no
** commit record and would serve whatever lies past it): take the lock,
** recover as kl_writer_begin does (cut off what was written past the
** commit, rebuild the indexes, bring the checkpoint to the committed log
** start), write nothing else.  *done (may be NULL) says what was done.  A
** directory without a commit record is left alone.  KL_BUSY as
** kl_writer_begin. */
kl_rc kl_writer_recover(const kl_env *env, const char *dir, kl_writer_stats *done, kl_err *err);

/* What the writing connection reads: inside a transaction that has
** appended, 1 and *view is the end reached so far with the batch still in
** memory encoded in view->tail (nothing is written: the batch goes on
** filling, and is written as it would have been without the read), for
** kl_log_open_view; 0 (no view: the commit record's is the end)
** otherwise.  -1 when the batch cannot be encoded (out of memory: err says
** why).  view->tail is reused from call to call (start it empty). */
int kl_writer_view(kl_writer *w, kl_view *view, kl_err *err);

int kl_writer_in_txn(const kl_writer *w);
/* The next offset to be assigned (inside a transaction), else the last
** committed end seen. */
int64_t kl_writer_next_offset(const kl_writer *w);
/* The log start offset (after the transaction's retention, if any). */
int64_t kl_writer_log_start(const kl_writer *w);
const kl_writer_stats *kl_writer_stats_of(const kl_writer *w);

#endif
