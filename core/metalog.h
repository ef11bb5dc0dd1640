/*
** metalog.h - KRaft's metadata partition, __cluster_metadata-0: its
** snapshots and its log, as one sequence of metadata records.
**
** A snapshot is an ordinary file of record batches named by the snapshot's
** id, "<20-digit end offset>-<10-digit epoch>.checkpoint": it holds the
** image of every record below the end offset.  It begins with a
** SnapshotHeader control record (version int16, LastContainedLogTimestamp
** int64) and ends with a SnapshotFooter.  Snapshots being written
** (.checkpoint.part) and deleted ones (.checkpoint.deleted) are not read.
** The log holds the records from its start offset (the first segment's
** base) on; older ones are only in snapshots.
**
** Control records (the snapshot header and footer, KRaft's LeaderChange,
** voters and kraft.version records) are not produced: they are the Raft
** layer's, not metadata; the header's timestamp is kept with the snapshot.
*/
#ifndef KL_METALOG_H
#define KL_METALOG_H

#include "klog.h"
#include "log.h"

/* One snapshot of a metadata log directory. */
typedef struct kl_msnap {
  int64_t end_offset;       /* the id: records below it are in it */
  int32_t epoch;
  char *path;
} kl_msnap;

/* The snapshots of dir (the partition directory), by end offset.
** KL_CANTOPEN when dir cannot be listed.  Free with kl_msnaps_free. */
kl_rc kl_msnaps_list(const kl_env *env, const char *dir, kl_msnap **out, size_t *n, kl_err *err);
void kl_msnaps_free(const kl_env *env, kl_msnap *s, size_t n);

/* Is name a snapshot's ("<20 digits>-<10 digits>.checkpoint")? Its id. */
int kl_msnap_name(const char *name, int64_t *end_offset, int32_t *epoch);

/* One record of a snapshot or of the log; borrowed until the next call. */
typedef struct kl_mentry {
  int64_t offset;           /* in the log; in a snapshot, as its batches
                            ** number its records */
  int64_t timestamp;
  int32_t leader_epoch;     /* of its batch */
  const uint8_t *value;     /* NULL for a null value */
  int32_t value_len;
} kl_mentry;

/* A walk over the records of one snapshot file. */
typedef struct kl_msnap_walk kl_msnap_walk;

/* Open the snapshot at path.  The header's LastContainedLogTimestamp is
** *last_ts once the header is read (-1 when the snapshot has none).
** KL_IO / KL_NOTFOUND when it cannot be opened.  stats receives the work. */
kl_rc kl_msnap_open(const kl_env *env, const char *path, kl_stats *stats, kl_msnap_walk **out,
                    kl_err *err);
void kl_msnap_close(kl_msnap_walk *w);
/* The next data record: KL_OK, KL_DONE at the end, KL_CORRUPT naming the
** file and position of a batch that does not parse, verify or decode (a
** snapshot is written whole and renamed into place: nothing in it may be
** torn). */
kl_rc kl_msnap_next(kl_msnap_walk *w, kl_mentry *e, kl_err *err);
/* The header's LastContainedLogTimestamp, -1 until read or when absent. */
int64_t kl_msnap_last_ts(const kl_msnap_walk *w);

/* The metadata partition directory a path names: path itself when it
** holds segments or snapshots, else path/__cluster_metadata-0 when that
** exists (a log directory, or Kafka's metadata.log.dir).  *out is
** kl_malloc'd.  KL_CANTOPEN naming the path otherwise. */
kl_rc kl_metalog_dir(const kl_env *env, const char *path, char **out, kl_err *err);



#include "metaimage.h"

/* What a replay is asked for, and what it did. */
typedef struct kl_mreplay {
  int64_t as_of_offset;     /* apply the records at and below it (INT64_MAX: all) */
  int64_t as_of_time;       /* and those stamped at or before it, stopping at
                            ** the first one stamped later (INT64_MAX: all) */
  int64_t snapshot;         /* OUT: the end offset of the snapshot it began
                            ** from, -1 when none */
  int64_t last_offset;      /* OUT: the last record applied, -1 when none */
  int64_t last_timestamp;   /* OUT: its timestamp (a snapshot's: its
                            ** LastContainedLogTimestamp) */
} kl_mreplay;

/* Replay the metadata partition dir into img as Kafka's loader does: the
** newest snapshot at or below the point asked (a snapshot ending at E holds
** the records below E; for a time, its LastContainedLogTimestamp must not
** be later), then the log's records from its end offset on.  Without such
** a snapshot the log is replayed from offset 0, which must be there:
** KL_RANGE names dir when the point asked lies before the log start and
** before every snapshot (nothing on disk says what the metadata was
** then), KL_CORRUPT when the log starts past 0 with no snapshot at all,
** or when a record does not decode or apply (naming the file or offset).
** The records a snapshot held are applied with offset -1 (they have none
** in the log).  stats receives the work. */
kl_rc kl_metalog_replay(const kl_env *env, const char *dir, kl_stats *stats, kl_mreplay *q,
                        kl_mimage *img, kl_err *err);
#endif
