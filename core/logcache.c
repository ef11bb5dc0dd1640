/*
** logcache.c - open logs kept between queries, by directory (logcache.h).
*/
#include "logcache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "commit.h"
#include "file.h"
#include "os.h"

#define KL_LOGCACHE_BUCKETS 8192 /* a power of two, twice KL_LOGCACHE_MAX */

struct kl_logcache {
  const kl_env *env;        /* every log's and reference's */
  kl_segset *set;
  kl_logref *buckets[KL_LOGCACHE_BUCKETS];
  kl_logref *mru, *lru;
  int n, watched;
  size_t segments;
  kl_stats *stats;          /* logs opened are counted here, or NULL */
  int q;                    /* the change queue (os.h xWatchOpen): -1 not
                            ** made yet, -2 none to be had */
  int polled;               /* the last kl_logcache_poll emptied it */
  kl_logref *wbuckets[KL_LOGCACHE_BUCKETS]; /* logs by watch number */
};

/*
** Change notification, and why it is as exact as the check by stat.
**
** fresh() compares what stat says of a log's directory (its mtime) and of
** its last .log (its size), and the commit record's generation.  On a
** local file system every one of those changes is made by a system call
** of this kernel, and the kernel queues an event for it on a watch of the
** directory before the call returns: an entry made, removed or renamed
** (what moves the mtime: a segment rolled, deleted, renamed .deleted, a
** file replaced by a rename), the mtime set by hand (IN_ATTRIB), and a
** write, truncation or allocation of a file in it (IN_MODIFY: the .log's
** size, the commit record rewritten in place).  So a log whose watch has
** no event since it was last found fresh, read from the queue at the start
** of this statement, would be found fresh by stat too, and is not
** stat'ed: a repeated query over a log directory of thousands of
** partitions pays one read of the queue, not two stats a partition.  Any
** event (one for a file that does not matter, too), an overflow of the
** queue, or a failed read sends the log back to the check by stat, which
** decides.  The watch is added before a stat finds the log fresh (fresh()),
** so every change after what the stats vouched for is queued.  What no stat
** would see either is not seen: bytes rewritten through a mapping, at the
** same size.  Not watched, and checked by stat as before: logs on file
** systems other processes change over a network or through FUSE
** (xWatch refuses them), a directory the queue already watches under
** another path, and every log when the queue cannot be had (the
** process's inotify limits).  A write through a hard link from another
** directory would go unreported; Kafka renames segments, never links them.
*/

static kl_logref **wslot(kl_logcache *c, int wd) {
  return &c->wbuckets[(unsigned)wd & (KL_LOGCACHE_BUCKETS - 1)];
}

static kl_logref *by_watch(kl_logcache *c, int wd) {
  kl_logref *r = *wslot(c, wd);
  while (r && r->wd != wd) r = r->wnext;
  return r;
}

/* A new watch of dir, when the queue can be had, or -1. */
static int new_watch(kl_logcache *c, const char *dir) {
  if (c->q == -1 && (c->q = kl_os_watch_open(c->env)) < 0) c->q = -2;
  if (c->q < 0) return -1;
  int wd = kl_os_watch(c->env, c->q, dir);
  if (wd >= 0 && by_watch(c, wd)) return -1; /* the directory under another path: by stat */
  return wd;
}

static void keep_watch(kl_logcache *c, kl_logref *r, int wd) {
  r->wd = wd;
  r->changed = 0;
  r->wnext = *wslot(c, wd);
  *wslot(c, wd) = r;
}

static void end_watch(kl_logcache *c, kl_logref *r) {
  if (r->wd < 0) return;
  kl_logref **pp = wslot(c, r->wd);
  while (*pp != r) pp = &(*pp)->wnext;
  *pp = r->wnext;
  if (c->q >= 0) kl_os_unwatch(c->env, c->q, r->wd);
  r->wd = -1;
}

static void all_changed(kl_logcache *c) {
  for (kl_logref *r = c->mru; r; r = r->older) r->changed = 1;
}

/* Reads of the queue one poll makes at most: a queue that a busy writer
** keeps filling counts as everything changed. */
#define KL_POLL_READS 16

void kl_logcache_poll(kl_logcache *c) {
  c->polled = 0;
  if (c->q < 0) return;
  int wds[KL_WATCH_EVENTS];
  for (int i = 0; i < KL_POLL_READS; i++) {
    long n = kl_os_watch_read(c->env, c->q, wds);
    if (n == 0) {
      c->polled = 1;
      return;
    }
    if (n < 0) break;
    for (long k = 0; k < n; k++) {
      kl_logref *r = wds[k] >= 0 ? by_watch(c, wds[k]) : NULL;
      if (wds[k] < 0) all_changed(c);
      else if (r) r->changed = 1;
    }
  }
  /* Not emptied: what is left unread is not known. */
  all_changed(c);
  c->polled = 1;
}

static unsigned hash_dir(const char *s) {
  unsigned h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static void unwatch(kl_logcache *c, kl_logref *r) {
  if (r->dirfd >= 0) {
    kl_os_close(r->env, r->dirfd);
    c->watched--;
  }
  if (r->lastfd >= 0) kl_os_close(r->env, r->lastfd);
  if (r->commitfd >= 0) kl_os_close(r->env, r->commitfd);
  r->dirfd = r->lastfd = r->commitfd = -1;
}

void kl_logref_release(kl_logref *r) {
  if (r && --r->refs == 0) {
    if (r->dirfd >= 0) kl_os_close(r->env, r->dirfd);
    if (r->lastfd >= 0) kl_os_close(r->env, r->lastfd);
    if (r->commitfd >= 0) kl_os_close(r->env, r->commitfd);
    kl_txns_free(r->env, &r->txns);
    kl_log_close(r->log);
    kl_free(r->env, r->dir);
    kl_free(r->env, r);
  }
}

void kl_logcache_count(kl_logcache *c, kl_stats *stats) { c->stats = stats; }

kl_logcache *kl_logcache_new(const kl_env *env, kl_segset *set) {
  kl_logcache *c = kl_malloc(env, sizeof *c);
  if (c) {
    memset(c, 0, sizeof *c);
    c->env = env;
    c->set = set;
    c->q = -1;
  }
  return c;
}

/* Take r out of the cache (its reference dropped). */
static void drop(kl_logcache *c, kl_logref *r) {
  kl_logref **pp = &c->buckets[r->hash & (KL_LOGCACHE_BUCKETS - 1)];
  while (*pp != r) pp = &(*pp)->hnext;
  *pp = r->hnext;
  if (r->newer) r->newer->older = r->older;
  else c->mru = r->older;
  if (r->older) r->older->newer = r->newer;
  else c->lru = r->newer;
  c->n--;
  c->segments -= kl_log_segment_count(r->log);
  end_watch(c, r);
  unwatch(c, r);
  r->cached = 0;
  kl_logref_release(r);
}

void kl_logcache_free(kl_logcache *c) {
  if (!c) return;
  /* Closing the queue ends every watch at once. */
  if (c->q >= 0) kl_os_close(c->env, c->q);
  c->q = -2;
  while (c->lru) drop(c, c->lru);
  kl_free(c->env, c);
}

void kl_logcache_forget(kl_logcache *c, const char *dir) {
  unsigned h = hash_dir(dir);
  for (kl_logref *r = c->buckets[h & (KL_LOGCACHE_BUCKETS - 1)]; r; r = r->hnext) {
    if (r->hash == h && strcmp(r->dir, dir) == 0) {
      drop(c, r);
      return;
    }
  }
}

/* Is the cached log still what is on disk? */
static int fresh_by_stat(const kl_logref *r) {
  struct stat st;
  if ((r->dirfd >= 0 ? kl_os_fstat(r->env, r->dirfd, &st) : kl_os_stat(r->env, r->dir, &st)) != 0 ||
      r->dir_mtime.tv_sec != st.st_mtim.tv_sec || r->dir_mtime.tv_nsec != st.st_mtim.tv_nsec) {
    return 0;
  }
  /* Every commit moves the generation; two commits within one tick of the
  ** clock leave the file's mtime as it was. */
  const kl_commit *was = kl_log_commit(r->log);
  if (was || r->commitfd >= 0) {
    kl_commit now;
    if (!was || (r->commitfd >= 0 ? kl_commit_read_fd(r->env, r->commitfd, r->dir, &now, NULL)
                                  : kl_commit_read(r->env, r->dir, &now, NULL)) != KL_OK ||
        now.gen != was->gen) {
      return 0;
    }
  }
  kl_segment *last = kl_log_last(r->log);
  if (!last) return 1;
  if (r->dirfd >= 0 && r->lastfd < 0) return 0; /* watched, but its .log did not open */
  if ((r->lastfd >= 0 ? kl_os_fstat(r->env, r->lastfd, &st) : kl_os_stat(r->env, last->log_path, &st)) != 0) return 0;
  return st.st_size == r->last_size;
}

/* The same, from the queue when it answers (see above), else by stat.  A
** log found fresh by stat is watched from then on, once the cache holds
** more logs than keep descriptors to check (each of those others costs a
** path lookup a statement): the watch is added before the stats, which
** then vouch for what it starts from.  Not sooner, and not for fewer
** logs: closing a queue that watched anything waits for the kernel to
** retire its watches (milliseconds), which a connection that reads a
** partition or two and goes would pay for nothing. */
static int fresh(kl_logcache *c, kl_logref *r) {
  if (c->polled && r->wd >= 0 && !r->changed) return 1;
  int wd = r->wd < 0 && c->n > KL_LOGCACHE_WATCHED ? new_watch(c, r->dir) : -1;
  if (!fresh_by_stat(r)) {
    if (wd >= 0) kl_os_unwatch(c->env, c->q, wd);
    return 0;
  }
  if (wd >= 0) keep_watch(c, r, wd);
  r->changed = 0; /* every event read so far is accounted for */
  return 1;
}

static void to_front(kl_logcache *c, kl_logref *r) {
  if (c->mru == r) return;
  r->newer->older = r->older;
  if (r->older) r->older->newer = r->newer;
  else c->lru = r->newer;
  r->newer = NULL;
  r->older = c->mru;
  c->mru->newer = r;
  c->mru = r;
}

/* A new reference to dir's log, not cached, watching nothing: opened with
** view when not NULL (kl_log_open_view); alone: a directory without
** segments is an error that says why. */
static kl_rc new_ref(kl_logcache *c, const char *dir, const kl_view *view, int alone,
                     kl_logref **out, kl_err *err) {
  *out = NULL;
  kl_logref *r = kl_malloc(c->env, sizeof *r);
  if (!r) return kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  memset(r, 0, sizeof *r);
  r->env = c->env;
  r->dirfd = r->lastfd = r->commitfd = -1;
  r->wd = -1;
  r->refs = 1;
  r->dir = kl_strdup(c->env, dir);
  kl_rc rc = r->dir ? kl_log_open_view(c->env, dir, c->set, view, &r->log, err)
                    : kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  if (r->dir && c->stats) {
    c->stats->logs_opened++;
    c->stats->dirs_listed++;
  }
  if (rc == KL_OK && alone && !kl_log_first(r->log)) {
    kl_log_close(r->log);
    r->log = NULL;
    rc = kl_log_open_partition(c->env, dir, &r->log, err); /* says why, with its hint */
  }
  if (rc) {
    kl_logref_release(r);
    return rc;
  }
  *out = r;
  return KL_OK;
}

kl_rc kl_logcache_get_view(kl_logcache *c, const char *dir, const kl_view *view,
                           kl_logref **out, kl_err *err) {
  return new_ref(c, dir, view, 0, out, err);
}

/* dir's cached log when it is still fresh (one more reference), else
** NULL; a stale one is dropped so that it is opened afresh. */
static kl_logref *lookup(kl_logcache *c, const char *dir, unsigned h, int alone) {
  for (kl_logref *r = c->buckets[h & (KL_LOGCACHE_BUCKETS - 1)]; r; r = r->hnext) {
    if (r->hash != h || strcmp(r->dir, dir) != 0) continue;
    if (!fresh(c, r) || (alone && !kl_log_first(r->log))) {
      drop(c, r);
      return NULL;
    }
    to_front(c, r);
    r->refs++;
    return r;
  }
  return NULL;
}

/* dir's mtime in *st, and with watch an open descriptor of it in *dirfd
** (else -1): taken before the log is read, so that a change while it is
** read makes it stale. */
static kl_rc open_dir(const kl_env *env, const char *dir, int watch, int *dirfd, struct stat *st,
                      kl_err *err) {
  *dirfd = -1;
  if (watch ? kl_fd_open_stat(env, dir, O_RDONLY | O_DIRECTORY, 0, dirfd, st, NULL) != KL_OK
            : kl_os_stat(env, dir, st) != 0) {
    int e = errno;
    if (*dirfd >= 0) kl_os_close(env, *dirfd);
    *dirfd = -1;
    return kl_err_set(err, e == ENOMEM ? KL_NOMEM : KL_CANTOPEN,
                      "cannot open partition directory %s: %s", dir, strerror(e));
  }
  return KL_OK;
}

/* What fresh() compares: the commit record's descriptor (when watched)
** and the last segment's .log and its size, after the log was read. */
static void watch_files(kl_logref *r, const char *dir) {
  struct stat st;
  /* After the log read its commit record: a commit in between makes the
  ** log stale at once, never the other way round. */
  if (r->dirfd >= 0 && kl_commit_open(r->env, dir, &r->commitfd, NULL) != KL_OK) r->commitfd = -1;
  kl_segment *last = kl_log_last(r->log);
  if (!last) return;
  if (r->dirfd >= 0 &&
      kl_fd_open_stat(r->env, last->log_path, O_RDONLY, 0, &r->lastfd, &st, NULL) != KL_OK) {
    r->lastfd = -1;
  }
  if (r->lastfd >= 0 || kl_os_stat(r->env, last->log_path, &st) == 0) {
    r->last_size = st.st_size;
  } else {
    r->last_size = -1; /* not fresh next time: opened afresh */
  }
}

/* Cache r under hash h (one more reference), making room from the least
** recent. */
static void cache_insert(kl_logcache *c, kl_logref *r, unsigned h) {
  size_t nseg = kl_log_segment_count(r->log);
  while (c->lru && (c->n >= KL_LOGCACHE_MAX || c->segments + nseg > KL_LOGCACHE_SEGMENTS)) {
    drop(c, c->lru);
  }
  r->hash = h;
  r->hnext = c->buckets[h & (KL_LOGCACHE_BUCKETS - 1)];
  c->buckets[h & (KL_LOGCACHE_BUCKETS - 1)] = r;
  r->older = c->mru;
  if (c->mru) c->mru->newer = r;
  c->mru = r;
  if (!c->lru) c->lru = r;
  c->n++;
  c->segments += nseg;
  r->cached = 1;
  r->refs++;
}

kl_rc kl_logcache_get(kl_logcache *c, const char *dir, int alone, kl_logref **out, kl_err *err) {
  unsigned h = hash_dir(dir);
  if ((*out = lookup(c, dir, h, alone)) != NULL) return KL_OK;
  struct stat st;
  int dirfd = -1;
  kl_rc rc = open_dir(c->env, dir, c->watched < KL_LOGCACHE_WATCHED, &dirfd, &st, err);
  kl_logref *r = NULL;
  if (rc == KL_OK) rc = new_ref(c, dir, NULL, alone, &r, err);
  if (rc) {
    if (dirfd >= 0) kl_os_close(c->env, dirfd);
    return rc;
  }
  r->dirfd = dirfd;
  r->dir_mtime = st.st_mtim;
  watch_files(r, dir);
  if (dirfd >= 0) c->watched++;
  cache_insert(c, r, h);
  *out = r;
  return KL_OK;
}

/* ---- the listing ---- */

void kl_listref_release(kl_listref *k) {
  if (k && --k->refs == 0) {
    for (size_t i = 0; i < k->nfd; i++) {
      if (k->fd[i] >= 0) kl_os_close(k->env, k->fd[i]);
    }
    kl_free(k->env, k->fd);
    kl_free(k->env, k->mtime);
    kl_free(k->env, k->size);
    kl_free(k->env, k->place);
    kl_broker_close(k->b);
    kl_free(k->env, k->path);
    kl_free(k->env, k);
  }
}

uint32_t *kl_listref_place(kl_listref *k, size_t i) {
  if (!k->place) {
    size_t n = kl_broker_count(k->b);
    if (!(k->place = kl_malloc(k->env, n * sizeof *k->place + 1))) return NULL;
    memset(k->place, 0, n * sizeof *k->place);
  }
  return &k->place[i];
}

void kl_listref_forget_places(kl_listref *k) {
  kl_free(k->env, k->place);
  k->place = NULL;
}

/* Are the log directories unchanged since they were listed?  Kafka
** replaces a checkpoint by renaming a new file over it, and adds or
** removes partitions as directories: each changes the directory's mtime.
** A checkpoint edited in place changes its own. */
static int listref_fresh(const kl_listref *k) {
  struct stat st;
  for (size_t i = 0; i < k->nfd; i++) {
    if (kl_os_fstat(k->env, k->fd[i], &st) != 0 || st.st_mtim.tv_sec != k->mtime[i].tv_sec ||
        st.st_mtim.tv_nsec != k->mtime[i].tv_nsec || st.st_size != k->size[i]) {
      return 0;
    }
  }
  return 1;
}

/* Watch path for changes (when it can be opened: an unreadable parent of a
** partition has nothing to notice). */
static void listref_watch(kl_listref *k, const char *path, int flags) {
  struct stat st;
  int fd;
  if (kl_fd_open_stat(k->env, path, O_RDONLY | flags, 0, &fd, &st, NULL) != KL_OK) return;
  k->fd[k->nfd] = fd;
  k->mtime[k->nfd] = st.st_mtim;
  k->size[k->nfd] = st.st_size;
  k->nfd++;
}

int kl_listref_whole(const kl_listref *k) {
  const char *t;
  size_t tn;
  int32_t p;
  return !kl_broker_named(k->b, &t, &tn, &p);
}

int kl_listref_serves(const kl_listref *k, const kl_part_name *named) {
  const char *t;
  size_t tn;
  int32_t p;
  if (!kl_broker_named(k->b, &t, &tn, &p)) return 1;
  return named && named->tn == tn && named->partition == p && memcmp(named->topic, t, tn) == 0;
}

kl_rc kl_listref_get(const kl_env *env, kl_listref **cache, const char *path, int no_checkpoints,
                     const kl_part_name *named, kl_stats *stats, kl_listref **out, kl_err *err) {
  *out = NULL;
  if (*cache && strcmp((*cache)->path, path) == 0 && (*cache)->no_checkpoints == no_checkpoints &&
      kl_listref_serves(*cache, named) && listref_fresh(*cache)) {
    (*cache)->refs++;
    *out = *cache;
    return KL_OK;
  }
  kl_listref *k = kl_malloc(env, sizeof *k);
  if (!k) return kl_err_set(err, KL_NOMEM, "out of memory listing %s", path);
  memset(k, 0, sizeof *k);
  k->env = env;
  k->refs = 1;
  k->path = kl_strdup(env, path);
  k->no_checkpoints = no_checkpoints;
  unsigned flags = no_checkpoints ? KL_BROKER_NO_CHECKPOINTS : 0;
  kl_rc rc = !k->path ? kl_err_set(err, KL_NOMEM, "out of memory listing %s", path)
             : named  ? kl_broker_open_named(env, path, flags, named->topic, named->tn,
                                             named->partition, &k->b, err)
                      : kl_broker_open_flags(env, path, flags, &k->b, err);
  if (rc == KL_OK && stats) {
    stats->dirs_listed += kl_broker_dirs_listed(k->b);
    stats->partitions_listed += kl_broker_count(k->b);
  }
  if (rc) {
    kl_listref_release(k);
    /* The listing parses only checkpoints: Kafka's broker does not load
    ** their log directory, a forensic reader may. */
    if (rc == KL_CORRUPT) {
      size_t n = strlen(err->msg);
      snprintf(err->msg + n, sizeof err->msg - n, " (Kafka does not load a log directory with a "
               "malformed checkpoint; a table created with checkpoints='ignore' reads its "
               "partitions without them)");
    }
    return rc;
  }
  size_t n = kl_broker_logdir_count(k->b);
  k->fd = kl_malloc(env, (1 + KL_CKPT_COUNT) * n * sizeof *k->fd + 1);
  k->mtime = kl_malloc(env, (1 + KL_CKPT_COUNT) * n * sizeof *k->mtime + 1);
  k->size = kl_malloc(env, (1 + KL_CKPT_COUNT) * n * sizeof *k->size + 1);
  if (!k->fd || !k->mtime || !k->size) {
    kl_listref_release(k);
    return kl_err_set(err, KL_NOMEM, "out of memory listing %s", path);
  }
  for (size_t i = 0; i < n; i++) {
    char p[PATH_MAX + 64];
    listref_watch(k, kl_broker_logdir(k->b, i), O_DIRECTORY);
    for (int j = 0; j < KL_CKPT_COUNT; j++) {
      snprintf(p, sizeof p, "%s/%s", kl_broker_logdir(k->b, i), kl_checkpoint_name(j));
      listref_watch(k, p, 0);
    }
  }
  k->refs = 2; /* the cache's and the caller's */
  kl_listref_release(*cache);
  *cache = k;
  *out = k;
  return KL_OK;
}
