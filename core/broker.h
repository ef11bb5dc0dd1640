/*
** broker.h - what a broker leaves on disk: one or more log directories
** (Kafka's log.dirs, comma-separated) each holding <topic>-<partition>
** directories and the offset checkpoint files, or a single partition
** directory.
**
** A path names a log directory when it holds one of the files only Kafka's
** log directories hold (meta.properties, an offset checkpoint,
** .kafka_cleanshutdown, cleaner-offset-checkpoint), whatever else it holds;
** else a partition directory when it holds segment files (<20 digits>.log),
** else a log directory: a log directory's entries named
** "<topic>-<partition>" are the partitions.  Directories Kafka leaves while
** deleting or moving a partition ("-delete", "-future", "-stray" suffixes)
** are not partitions; the internal topics (__consumer_offsets,
** __transaction_state) are.  Listing costs one readdir per log directory and
** the reading of its checkpoint files; no partition is opened.
**
** Checkpoints (format.md 11.1) are read from each log directory, and for a
** partition directory given alone, from its log directory
** (kl_partition_logdir), whatever the spelling of the path:
**   log-start-offset-checkpoint        records below are deleted for every
**                                      consumer
**   replication-offset-checkpoint      the high watermark
**   recovery-point-offset-checkpoint   the recovery point
** A malformed checkpoint is KL_CORRUPT naming the file and the line, one
** that cannot be read KL_IO naming the file (on every path form: Kafka
** does not load such a log directory); an absent one lists nothing.
*/
#ifndef KL_BROKER_H
#define KL_BROKER_H

#include <stddef.h>
#include <stdint.h>

#include "klog.h"

/* One partition directory and what the checkpoints say of it. */
typedef struct kl_part {
  const char *topic;        /* NULL when the directory's name is not Kafka's */
  int32_t partition;        /* -1 when the name is not Kafka's */
  const char *dir;          /* path of the partition directory */
  int logdir;               /* index of its log directory in the path list */
  int64_t log_start;        /* log-start-offset-checkpoint, or -1 */
  int64_t high_watermark;   /* replication-offset-checkpoint, or -1 */
  int64_t recovery_point;   /* recovery-point-offset-checkpoint, or -1 */
} kl_part;

typedef struct kl_broker kl_broker;

/* List the partitions under path (a partition directory, a log directory,
** or log directories separated by commas).  A directory listed twice, by
** whatever path (L,L or L,./L or L,L/, a partition and its log
** directory), is read once, where it is first listed.  KL_CANTOPEN names a
** path that does not open or is not a directory; KL_CORRUPT a malformed checkpoint (file
** and line).  *out is owned by the caller (kl_broker_close). */
kl_rc kl_broker_open(const kl_env *env, const char *path, kl_broker **out, kl_err *err);
void kl_broker_close(kl_broker *b);

/* kl_broker_open with flags: KL_BROKER_NO_CHECKPOINTS reads no checkpoint
** file (every partition's log start, high watermark and recovery point
** are then -1: what its segments hold), for a reader of a log directory
** whose checkpoints are malformed or unreadable. */
enum { KL_BROKER_NO_CHECKPOINTS = 1 };
kl_rc kl_broker_open_flags(const kl_env *env, const char *path, unsigned flags, kl_broker **out,
                           kl_err *err);

/* kl_broker_open_flags keeping only the partitions of topic (tn bytes)
** numbered partition: what a query naming one partition needs of a log
** directory of thousands.  A path of one log directory holding Kafka's
** files is not read at all: the partition's directory is looked up under
** each name a listing takes for it (<topic>-<n>, and n with up to nine
** leading zeros: orders-01 is partition 1 too), which costs ten stats where
** listing 2,000 names costs ext4 about half a millisecond.  Any other path
** has its directories read, once and in one pass over their names (only
** names tell a partition directory from a log directory without Kafka's
** files).  Every checkpoint line is still checked, so the same partitions
** come out as from the whole listing, in its order, with its errors; but
** only the entries naming the partition are kept, and of the checkpoints
** only its entries.  A topic Kafka would not accept (kl_topic_valid) lists
** every partition, as kl_broker_open_flags does. */
kl_rc kl_broker_open_named(const kl_env *env, const char *path, unsigned flags, const char *topic,
                           size_t tn, int32_t partition, kl_broker **out, kl_err *err);

/* 1 with the topic (*tn bytes, valid until kl_broker_close) and partition
** a listing keeps (kl_broker_open_named), 0 for a whole listing. */
int kl_broker_named(const kl_broker *b, const char **topic, size_t *tn, int32_t *partition);

/* How many directories the listing read (kl_stats.dirs_listed). */
size_t kl_broker_dirs_listed(const kl_broker *b);

/* The partitions, sorted by topic, then partition, then log directory
** (unnamed ones last, by path).  Valid until kl_broker_close. */
size_t kl_broker_count(const kl_broker *b);
const kl_part *kl_broker_part(const kl_broker *b, size_t i);

/* The directories whose listing and checkpoint files the partitions came
** from: each log directory, and a partition directory's parent.  A change
** of their modification time means the listing may be stale. */
size_t kl_broker_logdir_count(const kl_broker *b);
const char *kl_broker_logdir(const kl_broker *b, size_t i);

/* 1 when the path was one partition directory (not a log directory). */
int kl_broker_single(const kl_broker *b);

/* The index of the first partition of topic (name of n bytes) at or after
** partition p in the sort order, or kl_broker_count when there is none:
** topic and partition constraints choose partitions by binary search. */
size_t kl_broker_seek(const kl_broker *b, const char *topic, size_t n, int32_t p);

/* The directories a path names, as kl_broker_open reads them: log.dirs
** separated by commas, blanks around each trimmed and empty ones skipped,
** unless the whole path names an existing directory (its name then holds a
** comma). */
typedef struct kl_path_iter {
  const char *p;            /* what is left, NULL at the end */
  int whole;
} kl_path_iter;
void kl_path_iter_init(kl_path_iter *it, const kl_env *env, const char *path);
/* The next directory: *s and its length *n (not NUL-terminated); 0 when
** there is none left. */
int kl_path_next(kl_path_iter *it, const char **s, size_t *n);

/* The log directory holding the partition directory dir, and the
** partition's name in it, as that log directory's listing names them (and
** as Kafka's File.getParent does): the path without its last component,
** which the kernel resolves (a/b/../x is in what a/b/.. is; a symlinked
** partition is in the directory of the link), and the last component.
** Trailing slashes and "." components name the same directory; a path
** ending in ".." (or "." alone) names no entry and is resolved first
** (realpath).  KL_IO when the result does not fit (logdir of ln bytes,
** name of nn) or the path cannot be resolved. */
kl_rc kl_partition_logdir(const char *dir, char *logdir, size_t ln, char *name, size_t nn,
                          kl_err *err);

/* Parse a directory name as Kafka does: "<topic>-<partition>", the topic
** non-empty, the partition decimal digits; names ending in -delete,
** -future or -stray are not partitions.  Returns the topic's length, 0 when
** the name is not a partition's. */
size_t kl_partition_name(const char *name, int32_t *partition);

/* Is t[0..n) a topic name Kafka accepts (Topic.validate): 1 to 249 of
** [a-zA-Z0-9._-], and neither "." nor "..".  Kafka refuses to create any
** other, so no broker holds one. */
int kl_topic_valid(const char *t, size_t n);

/* The rowid of value v (an offset, a base offset) of the listing's i-th
** partition.  A listing of several partitions carries the partition's
** place above v's 44 bits (17.6 trillion offsets), so that rows of
** different partitions stay distinct (SQLite's OR optimisation merges
** rowid sets); one partition's rowid is v, and so is a v outside
** [0, 2^44), which would reach the next partition's rowids. */
#define KL_ROWID_SHIFT 44
int64_t kl_broker_rowid(const kl_broker *b, size_t i, int64_t v);

/* The same with the place given: for a listing of one partition directory
** (single), v; else place above v's 44 bits (place < 2^19). */
int64_t kl_rowid_at(int single, size_t place, int64_t v);

#endif
