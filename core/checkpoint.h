/*
** checkpoint.h - Kafka's offset checkpoint files (format.md 11.1): the
** log directory's recovery-point-offset-checkpoint,
** log-start-offset-checkpoint, replication-offset-checkpoint and
** cleaner-offset-checkpoint.
**
**   0                  <- version, must be 0
**   2                  <- number of entries
**   mytopic 0 368769   <- "<topic> <partition> <offset>", split on runs of
**   other-topic 3 12      whitespace, exactly three fields
**
** Read as Kafka's CheckpointFile reads them: an empty file has no entries,
** anything else that does not follow the framing is malformed.  Kafka's
** broker then refuses to load the log directory; a reader that guessed
** would show records Kafka has deleted, so here it is an error naming the
** file and the line.
*/
#ifndef KL_CHECKPOINT_H
#define KL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "klog.h"

/* The offset checkpoints of a log directory that readers use, by file
** name (cleaner-offset-checkpoint is the log cleaner's own). */
enum { KL_CKPT_LOG_START, KL_CKPT_HIGH_WATERMARK, KL_CKPT_RECOVERY_POINT, KL_CKPT_COUNT };
const char *kl_checkpoint_name(int which);

typedef struct kl_ckpt_entry {
  char *topic;
  int32_t partition;
  int64_t offset;
  size_t line;              /* where it was read */
} kl_ckpt_entry;

/* The entries of one file, sorted by topic then partition (the last of
** duplicates wins, as Kafka's map keeps it). */
typedef struct kl_ckpt {
  kl_ckpt_entry *e;
  size_t n;
} kl_ckpt;

/* Read the checkpoint file at path into *out (empty when the file does not
** exist).  KL_CORRUPT "<path>:<line>: ..." when it is malformed, KL_IO when
** it cannot be read.  Free with kl_checkpoint_free. */
kl_rc kl_checkpoint_read(const kl_env *env, const char *path, kl_ckpt *out, kl_err *err);
void kl_checkpoint_free(const kl_env *env, kl_ckpt *c);

/* kl_checkpoint_read keeping the entries of topic (tn bytes) alone, NULL:
** every entry.  Every line is checked all the same, so a malformed file is
** the same error whichever partitions a reader asks for. */
kl_rc kl_checkpoint_read_topic(const kl_env *env, const char *path, const char *topic, size_t tn,
                               kl_ckpt *out, kl_err *err);
/* The same keeping, of topic, the entries of partition alone (-1: every
** partition of it). */
kl_rc kl_checkpoint_read_part(const kl_env *env, const char *path, const char *topic, size_t tn,
                              int64_t partition, kl_ckpt *out, kl_err *err);

/* A partition's leader-epoch-checkpoint (LeaderEpochCheckpointFile): the
** same framing, each entry "<leader epoch> <start offset>" (the first
** offset written in that epoch), in the file's order. */
typedef struct kl_epoch_entry {
  int32_t epoch;
  int64_t start_offset;
  size_t line;              /* where it was read */
} kl_epoch_entry;

typedef struct kl_epoch_ckpt {
  kl_epoch_entry *e;
  size_t n;
} kl_epoch_ckpt;

#define KL_LEADER_EPOCH_FILE "leader-epoch-checkpoint"

/* Read the leader-epoch-checkpoint at path into *out (empty when the file
** does not exist).  Errors as kl_checkpoint_read's.  Free with
** kl_epoch_checkpoint_free. */
kl_rc kl_epoch_checkpoint_read(const kl_env *env, const char *path, kl_epoch_ckpt *out,
                               kl_err *err);
void kl_epoch_checkpoint_free(const kl_env *env, kl_epoch_ckpt *c);

/* The offset recorded for (topic, partition), or -1. */
int64_t kl_checkpoint_get(const kl_ckpt *c, const char *topic, int32_t partition);

/* The same for keys asked in increasing (topic, partition) order, from *pos
** (0 at first), which moves past the smaller entries: a sorted listing of
** n partitions is matched in one pass, not n searches. */
int64_t kl_checkpoint_next(const kl_ckpt *c, size_t *pos, const char *topic, int32_t partition);

/* Set the offset of (topic, partition) in the log directory logdir's
** checkpoint file `which` (KL_CKPT_*), keeping the other entries: written
** to a temporary file of this process's own, fsynced, renamed over, the
** directory fsynced, as Kafka replaces its checkpoints.  Updates of one
** log directory are serialised (an exclusive flock on it, waited for, from
** the read to the rename), so writers of several partitions lose none of
** each other's entries and a reader sees one whole file or the other.
** KL_MISUSE when topic cannot be read back as an entry (empty, or with
** whitespace); KL_CORRUPT when the file is malformed (it is left as it
** is), KL_IO naming the file. */
kl_rc kl_checkpoint_put(const kl_env *env, const char *logdir, int which, const char *topic,
                        int32_t partition, int64_t offset, kl_err *err);

#endif
