/*
** logcache.h - what a kafka_log table keeps between queries of what is on
** disk: the listing of its path (the partitions and their checkpoints)
** and the open logs.
**
** The listing is reused while the log directories' and checkpoint files'
** modification times and sizes are unchanged (Kafka renames a new
** checkpoint over the old one and adds or removes partitions as
** directories: each changes the directory's mtime), checked with fstat on
** descriptors it keeps: one per log directory and per checkpoint file.
**
** A query over a log directory moves from partition to partition, a join
** comes back to the same few, and a repeated window query visits all of
** them again: what a log learnt (segment tails, small indexes, batch facts)
** is worth keeping.  Logs are found by directory through a hash table and
** evicted least recently used first, beyond KL_LOGCACHE_MAX logs or
** KL_LOGCACHE_SEGMENTS segments in all.
**
** A cached log is reused only while its files are unchanged: the
** directory's mtime (segments added or removed), the last segment's
** size (appends) and, for a log kafkalog writes, its commit record's
** generation (commits rewrite the record in place, and two of them can
** fall within one tick of the file system's clock, which leaves the mtime
** as it was: the generation always moves; reading the 256-byte record
** costs a pread where an fstat would do).  The first KL_LOGCACHE_WATCHED
** logs opened keep their directory, last .log and commit record open and
** check them with fstat and pread, so that a prepared statement run in a
** loop on one partition pays no path lookup; the others are checked with
** stat and by reading the commit record by its path.  On a local file
** system, a log found fresh while the cache holds more than
** KL_LOGCACHE_WATCHED logs is also watched for changes (inotify, os.h
** xWatch): once a statement kl_logcache_poll reads what the kernel queued,
** and a log with nothing queued since it was last found fresh is fresh
** without a system call (why that is as exact as the stats: logcache.c).  Their segments share the table's
** bound on open files (kl_segset), so the number of descriptors held stays
** bounded however many logs are cached.
**
** Everything is allocated through the kl_env given (inside SQLite, its
** allocator: the caches count in sqlite3_memory_used()), and every file is
** opened and checked through it.
*/
#ifndef KL_LOGCACHE_H
#define KL_LOGCACHE_H

#include <sys/types.h>
#include <time.h>

#include "broker.h"
#include "log.h"
#include "txn.h"

#define KL_LOGCACHE_MAX 4096
#define KL_LOGCACHE_SEGMENTS 32768
#define KL_LOGCACHE_WATCHED 16

/* An open log, shared by the cache and the cursors reading it. */
typedef struct kl_logref {
  const kl_env *env;        /* the cache's */
  kl_log *log;
  int refs;
  char *dir;
  int txns_loaded;          /* txns is known (read_committed) */
  kl_txns txns;
  /* The cache's business. */
  struct timespec dir_mtime;
  int dirfd, lastfd;        /* watched: descriptors for fstat, else -1 */
  int commitfd;             /* watched: the commit record (core/commit.h) */
  int64_t last_size;        /* the last segment's .log size when seen */
  int wd;                   /* its directory's watch in the cache's change
                            ** queue (logcache.c), or -1 */
  int changed;              /* an event of it read since it was last found
                            ** fresh */
  struct kl_logref *wnext;  /* chain of the cache's logs by watch */
  unsigned hash;
  struct kl_logref *hnext;  /* hash chain */
  struct kl_logref *newer, *older; /* LRU list */
  int cached;
} kl_logref;

/* The partitions under a path, shared by the table and its cursors. */
typedef struct kl_listref {
  const kl_env *env;        /* kl_listref_get's */
  kl_broker *b;
  int refs;
  char *path;
  int no_checkpoints;
  size_t nfd;
  int *fd;                  /* log directories and checkpoint files */
  struct timespec *mtime;
  off_t *size;
  uint32_t *place;          /* each partition's place among those its
                            ** table has read, + 1 (0: not yet asked),
                            ** for rowids (log_vtab.h) */
} kl_listref;

/* The one partition a query names, which a listing may keep alone. */
typedef struct kl_part_name {
  const char *topic;
  size_t tn;
  int32_t partition;
} kl_part_name;

/* A counted reference to the listing of path (kl_listref_release), the
** one in *cache when it is for path, fresh, and serves the query (whole,
** or keeping the partition it names), else made and put there (the cache
** holds one reference; a new one is made through env); no_checkpoints: the checkpoint files are not read
** (core/broker.h KL_BROKER_NO_CHECKPOINTS).  named: the one partition the
** query names, or NULL; a listing made for it keeps that partition alone
** (kl_broker_open_named: one pass over a log directory's names, no entry
** of another partition kept).  The directories read and the partitions
** kept are counted into stats (NULL: nowhere).  Errors as kl_broker_open's
** (KL_CANTOPEN naming the path, KL_CORRUPT naming a malformed
** checkpoint's file and line, and the table option that reads past it),
** in err. */
kl_rc kl_listref_get(const kl_env *env, kl_listref **cache, const char *path, int no_checkpoints,
                     const kl_part_name *named, kl_stats *stats, kl_listref **out, kl_err *err);

/* Is k a listing of every partition of its path (not a named one)?  Does
** it serve a query for named (NULL: every partition): whole, or keeping
** that partition? */
int kl_listref_whole(const kl_listref *k);
int kl_listref_serves(const kl_listref *k, const kl_part_name *named);
void kl_listref_release(kl_listref *k);

/* The slot of partition i (below kl_broker_count) in k's place array:
** its place + 1, 0 until the table gives it one (log_vtab.h).  The array
** is k's, allocated through k's env on first use (zeroed) and freed with
** k.  NULL when out of memory. */
uint32_t *kl_listref_place(kl_listref *k, size_t i);
/* Forget every place k holds (its table numbers partitions afresh). */
void kl_listref_forget_places(kl_listref *k);

typedef struct kl_logcache kl_logcache;

/* A cache whose logs are opened through env and keep their segments in
** set (owned by the caller, outliving the cache).  NULL when out of
** memory. */
kl_logcache *kl_logcache_new(const kl_env *env, kl_segset *set);
/* Count the logs the cache opens (and their directories read) into stats
** (NULL: nowhere); stats outlives the cache. */
void kl_logcache_count(kl_logcache *c, kl_stats *stats);
void kl_logcache_free(kl_logcache *c);

/* Read the changes the kernel reported since the last poll: what they say
** serves kl_logcache_get until the next poll, so call it at the start of
** each statement (a log changed since then is seen by the next one).  A
** cache never polled checks every log by stat. */
void kl_logcache_poll(kl_logcache *c);

/* A counted reference to the log of dir (kl_logref_release), from the
** cache when it is fresh, else opened and cached.  alone: dir is the whole
** path, and a directory without segments is then an error saying it is
** not a partition; inside a log directory it is an empty log.  Errors in
** err, as the core gives them (KL_CANTOPEN for a directory that does not
** open or is not a partition, KL_CORRUPT for a damaged commit record...). */
kl_rc kl_logcache_get(kl_logcache *c, const char *dir, int alone, kl_logref **out, kl_err *err);
void kl_logref_release(kl_logref *r);

/* The log of dir as a writing connection sees it inside its transaction
** (log.h kl_log_open_view): opened afresh and not cached (the view
** moves with every append); released like the others. */
kl_rc kl_logcache_get_view(kl_logcache *c, const char *dir, const kl_view *view,
                           kl_logref **out, kl_err *err);
/* A read of dir failed or found a file changed: drop it, so that the next
** query opens it afresh. */
void kl_logcache_forget(kl_logcache *c, const char *dir);

#endif
