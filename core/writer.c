/*
** writer.c - see writer.h.
**
** Every byte goes through a positioned write (os.h) at a position the
** writer tracks, never through a buffer: what is on disk after a write call is exactly
** what the state says, which is what rollback and recovery rely on.
*/
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "checkpoint.h"
#include "file.h"
#include "log.h"
#include "os.h"
#include "scan.h"
#include "segment.h"

/* Index slots of Kafka's default segment.index.bytes (10 MiB): an index
** that is full rolls the segment (behaviour.md 3.3 and 3.4). */
#define OIDX_SLOTS 1310720
#define TIDX_SLOTS 873813

#define LOCK_FILE "kafkalog.lock"

/* Which files of the active segment a commit must fsync: most commits add
** no index entry, and then the .log alone is synced. */
enum { DIRTY_LOG = 1, DIRTY_OIDX = 2, DIRTY_TIDX = 4, DIRTY_ALL = 7 };

/* Where a transaction or a savepoint began. */
typedef struct wmark {
  kl_commit st;             /* the files then (pending batch excluded) */
  kl_builder_mark bm;       /* the batch in memory then */
  uint8_t *saved;           /* its records' bytes, kept when that batch was
                            ** written since (bm.len of them) */
  int saved_ok;
  int64_t pending_start;    /* retention asked so far, or -1 */
} wmark;

struct kl_writer {
  const kl_env *env;
  char *dir;
  char parent[4096];        /* the log directory holding dir */
  char pname[256];          /* dir's name in it */
  kl_writer_opts opt;
  int dirfd, lockfd, brokerfd;
  int commitfd;             /* the commit record, once written */
  int in_txn;
  kl_commit com;            /* the commit record as last read or written */
  kl_commit before;         /* ... when the transaction began */
  int synced;               /* the transaction's commit record is out */
  uint64_t unsure_gen;      /* a commit record write of this generation
                            ** failed: its slot may hold it (0: none) */
  int64_t retire_start;     /* retention published, applied at the end of
                            ** the transaction (-1: none) */
  int committed_any;        /* this writer published something */
  kl_commit st;             /* the files now: active segment and log end */
  int logfd, oidxfd, tidxfd;
  int dirty;                /* DIRTY_* written since the last fsync */
  int dir_dirty;            /* files made or removed since then */
  kl_builder b;
  wmark *marks;             /* marks[0]: the transaction's begin */
  int nmarks, capmarks;
  int64_t pending_start;
  int retention_due;        /* retention options apply at the next commit */
  kl_writer_stats stats;
  char name[4200];          /* fname's */
  char max_name[96];        /* what bounds a batch, for messages */
};

void kl_writer_opts_default(kl_writer_opts *o) {
  o->segment_bytes = 1073741824;
  o->index_interval = 4096;
  o->batch_bytes = 16384;
  o->max_message_bytes = 1048588;
  o->codec = KL_CODEC_NONE;
  o->log_append_time = 0;
  o->retention_bytes = -1;
  o->retention_ms = -1;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void seg_path(const kl_writer *w, int64_t base, const char *suffix, char *out, size_t n) {
  snprintf(out, n, "%s/%020lld%s", w->dir, (long long)base, suffix);
}

/* The path of the active segment's file with this suffix, for messages
** (valid until the next call). */
static const char *fname(kl_writer *w, const char *suffix) {
  seg_path(w, w->st.seg_base, suffix, w->name, sizeof w->name);
  return w->name;
}

static kl_rc sync_fd(kl_writer *w, int fd, const char *what, kl_err *err) {
  if (fd < 0) return KL_OK;
  w->stats.fsyncs++;
  if (kl_os_sync(w->env, fd, 1) == 0) return KL_OK;
  return kl_err_set(err, kl_write_rc(errno), "%s: fsync failed: %s", what, strerror(errno));
}

static kl_rc truncate_fd(kl_writer *w, int fd, int64_t size, const char *what, kl_err *err) {
  if (kl_os_truncate(w->env, fd, size) == 0) return KL_OK;
  return kl_err_set(err, kl_write_rc(errno), "%s: cannot truncate to %lld bytes: %s", what, (long long)size,
                    strerror(errno));
}

/* ---- the active segment's files ---- */

static void close_segment(kl_writer *w) {
  if (w->logfd >= 0) kl_os_close(w->env, w->logfd);
  if (w->oidxfd >= 0) kl_os_close(w->env, w->oidxfd);
  if (w->tidxfd >= 0) kl_os_close(w->env, w->tidxfd);
  w->logfd = w->oidxfd = w->tidxfd = -1;
}

/* Open the files of segment st.seg_base: the .log must exist unless
** create (a new segment: all three are made empty); index files are made
** when missing (Kafka creates them lazily). */
static kl_rc open_segment(kl_writer *w, int create, kl_err *err) {
  char p[4200];
  close_segment(w);
  const char *sfx[3] = {".log", ".index", ".timeindex"};
  int *fds[3] = {&w->logfd, &w->oidxfd, &w->tidxfd};
  for (int i = 0; i < 3; i++) {
    seg_path(w, w->st.seg_base, sfx[i], p, sizeof p);
    int flags = O_RDWR | (create ? O_CREAT | O_TRUNC : i ? O_CREAT : 0);
    kl_err e = {0};
    kl_rc rc = kl_fd_open(w->env, p, flags, 0644, fds[i], &e);
    if (rc) {
      close_segment(w);
      if (rc == KL_NOTFOUND) {
        return kl_err_set(err, KL_CORRUPT, "%s/%s: position 24: the committed segment %s is "
                          "missing", w->dir, KL_COMMIT_FILE, p);
      }
      return kl_err_set(err, rc, "%s", e.msg);
    }
  }
  if (create) w->dir_dirty = 1;
  return KL_OK;
}

static void fresh_segment(kl_commit *st, int64_t base) {
  st->seg_base = base;
  st->seg_size = 0;
  st->oidx_n = st->tidx_n = 0;
  st->last_index_pos = 0;
  st->max_ts = -1;
  st->max_ts_off = base;
  st->last_tidx_ts = -1;
}

static kl_rc put_tidx(kl_writer *w, kl_err *err) {
  uint8_t e[12];
  kl_index_put_time(e, w->st.seg_base, w->st.max_ts, w->st.max_ts_off);
  kl_rc rc = kl_write_at(w->env, w->tidxfd, e, 12, w->st.tidx_n * 12, fname(w, ".timeindex"), err);
  if (rc) return rc;
  w->dirty |= DIRTY_TIDX;
  w->st.tidx_n++;
  w->st.last_tidx_ts = w->st.max_ts;
  return KL_OK;
}

/* One batch of the segment, at its position: the index entries Kafka's
** append (and its recovery) would write before it. */
static kl_rc index_batch(kl_writer *w, int64_t pos, int64_t last, int64_t max_ts, kl_err *err) {
  if (max_ts > w->st.max_ts) {
    w->st.max_ts = max_ts;
    w->st.max_ts_off = last;
  }
  if (pos - w->st.last_index_pos > w->opt.index_interval) {
    uint8_t e[8];
    kl_index_put_offset(e, w->st.seg_base, last, pos);
    kl_rc rc = kl_write_at(w->env, w->oidxfd, e, 8, w->st.oidx_n * 8, fname(w, ".index"), err);
    if (rc) return rc;
    w->dirty |= DIRTY_OIDX;
    w->st.oidx_n++;
    w->st.last_index_pos = pos;
    if (w->st.max_ts > w->st.last_tidx_ts && (rc = put_tidx(w, err)) != KL_OK) return rc;
  }
  return KL_OK;
}

/* A segment stops growing: its final time index entry (Kafka's
** onBecomeInactiveSegment, which bypasses the full check), then its files
** are made durable before the next one starts. */
static kl_rc finish_segment(kl_writer *w, kl_err *err) {
  kl_rc rc = KL_OK;
  if (w->st.max_ts > w->st.last_tidx_ts) rc = put_tidx(w, err);
  if (rc == KL_OK) rc = sync_fd(w, w->logfd, fname(w, ".log"), err);
  if (rc == KL_OK) rc = sync_fd(w, w->oidxfd, fname(w, ".index"), err);
  if (rc == KL_OK) rc = sync_fd(w, w->tidxfd, fname(w, ".timeindex"), err);
  if (rc == KL_OK) w->dirty = 0;
  return rc;
}

static kl_rc roll(kl_writer *w, int64_t base, kl_err *err) {
  kl_rc rc = finish_segment(w, err);
  if (rc) return rc;
  fresh_segment(&w->st, base);
  w->stats.rolls++;
  w->retention_due = 1;
  return open_segment(w, 1, err);
}

/* Append the batch of header h and payload p (size bytes in all, offsets
** up to last) as one chunk. */
static kl_rc append_batch(kl_writer *w, const uint8_t *h, const uint8_t *p, size_t size,
                          int64_t first, int64_t last, kl_err *err) {
  int64_t sz = (int64_t)size;
  if (sz > w->opt.segment_bytes) {
    return kl_err_set(err, KL_RANGE, "a batch of %lld bytes is larger than segment_bytes (%lld)",
                      (long long)sz, (long long)w->opt.segment_bytes);
  }
  kl_commit *st = &w->st;
  if (st->seg_size > 0 &&
      (st->seg_size > w->opt.segment_bytes - sz || last - st->seg_base > INT32_MAX ||
       st->oidx_n >= OIDX_SLOTS || st->tidx_n >= TIDX_SLOTS - 1)) {
    kl_rc rc = roll(w, first > st->next_offset ? first : st->next_offset, err);
    if (rc) return rc;
  }
  int64_t pos = st->seg_size;
  w->dirty |= DIRTY_LOG;
  /* Header and records in one call; what a short write left, piece by
  ** piece. */
  struct iovec iov[2] = {{(void *)h, KL_V2_HEADER}, {(void *)p, size - KL_V2_HEADER}};
  long k;
  do k = kl_os_writev(w->env, w->logfd, iov, 2, pos);
  while (k < 0 && errno == EINTR);
  kl_rc rc = KL_OK;
  if (k < 0) {
    rc = kl_err_set(err, kl_write_rc(errno), "%s: position %lld: write failed: %s",
                    fname(w, ".log"), (long long)pos, strerror(errno));
  } else if ((size_t)k < size) {
    size_t done = (size_t)k;
    if (done < KL_V2_HEADER) {
      rc = kl_write_at(w->env, w->logfd, h + done, KL_V2_HEADER - done, pos + (int64_t)done, fname(w, ".log"), err);
      done = KL_V2_HEADER;
    }
    if (rc == KL_OK) {
      rc = kl_write_at(w->env, w->logfd, p + (done - KL_V2_HEADER), size - done, pos + (int64_t)done,
                      fname(w, ".log"), err);
    }
  }
  if (rc == KL_OK) rc = index_batch(w, pos, last, kl_get_i64(h + 35), err);
  if (rc) return rc;
  st->seg_size = pos + sz;
  st->next_offset = last + 1;
  w->stats.batches++;
  w->stats.bytes += size;
  return KL_OK;
}

/* Write the batch being built, keeping first the records of every mark
** that lies inside it (a rollback to that mark puts them back). */
static kl_rc flush(kl_writer *w, kl_err *err) {
  int32_t n = kl_builder_count(&w->b);
  if (n == 0) return KL_OK;
  int64_t base = w->b.spec.base_offset;
  for (int i = 0; i < w->nmarks; i++) {
    wmark *m = &w->marks[i];
    if (m->saved_ok || m->bm.n == 0 || m->bm.base_offset != base) continue;
    m->saved = kl_malloc(w->env, m->bm.len ? m->bm.len : 1);
    if (!m->saved) return kl_err_set(err, KL_NOMEM, "out of memory keeping a savepoint");
    memcpy(m->saved, kl_builder_body(&w->b), m->bm.len);
    m->saved_ok = 1;
  }
  if (w->opt.log_append_time) w->b.spec.append_time = now_ms();
  uint8_t h[KL_V2_HEADER];
  const uint8_t *payload;
  size_t len;
  kl_rc rc = kl_builder_seal(&w->b, h, &payload, &len, err);
  if (rc == KL_OK) rc = append_batch(w, h, payload, KL_V2_HEADER + len, base, base + n - 1, err);
  if (rc == KL_OK) kl_builder_next(&w->b);
  return rc;
}

/* ---- segments in the directory ---- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The base offsets of the segments in the directory now, sorted (*out
** freed by the caller with kl_free). */
static kl_rc list_bases(kl_writer *w, int64_t **out, size_t *count, kl_err *err) {
  *out = NULL;
  *count = 0;
  void *d = kl_os_opendir(w->env, w->dir);
  if (!d) return kl_err_set(err, KL_IO, "cannot open %s: %s", w->dir, strerror(errno));
  int64_t *bases = NULL;
  size_t n = 0, cap = 0;
  const char *name;
  int isdir, more;
  kl_rc rc = KL_OK;
  while ((more = kl_os_readdir(w->env, d, &name, &isdir)) > 0) {
    int64_t b;
    if (!kl_segment_name(name, &b)) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      int64_t *nb = kl_realloc(w->env, bases, cap * sizeof *bases);
      if (!nb) {
        rc = kl_err_set(err, KL_NOMEM, "out of memory listing %s", w->dir);
        break;
      }
      bases = nb;
    }
    bases[n++] = b;
  }
  if (rc == KL_OK && more < 0) rc = kl_err_set(err, KL_IO, "cannot list %s: %s", w->dir, strerror(errno));
  kl_os_closedir(w->env, d);
  if (rc) {
    kl_free(w->env, bases);
    return rc;
  }
  if (n) qsort(bases, n, sizeof *bases, cmp_i64);
  *out = bases;
  *count = n;
  return KL_OK;
}

/* Seconds a segment removed by retention stays as <name>.deleted: a reader
** that listed the directory before the removal still finds its bytes there
** (segment.h), as Kafka keeps them file.delete.delay.ms (60 s). */
#define DELETE_DELAY_S 60

/* Remove the files of every segment whose base is above `above` (a
** transaction's, never read), and, when below >= 0, rename to .deleted the
** files of every segment before the active one whose successor's base is
** <= below (retention). */
static kl_rc remove_segments(kl_writer *w, int64_t above, int64_t below, kl_err *err) {
  int64_t *bases;
  size_t n;
  kl_rc rc = list_bases(w, &bases, &n, err);
  if (rc) return rc;
  static const char *const sfx[] = {".index", ".timeindex", ".txnindex", ".log"};
  char p[4200];
  for (size_t i = 0; rc == KL_OK && i < n; i++) {
    int drop = bases[i] > above;
    int retire = !drop && below >= 0 && i + 1 < n && bases[i + 1] <= below &&
                 bases[i] < w->st.seg_base;
    if (!drop && !retire) continue;
    struct stat sb;
    seg_path(w, bases[i], ".log", p, sizeof p);
    if (drop && kl_os_stat(w->env, p, &sb) == 0) w->stats.truncated += (uint64_t)sb.st_size;
    for (size_t k = 0; k < sizeof sfx / sizeof *sfx; k++) {
      seg_path(w, bases[i], sfx[k], p, sizeof p);
      char to[4300];
      snprintf(to, sizeof to, "%s" KL_DELETED_SUFFIX, p);
      if ((drop ? kl_os_unlink(w->env, p) : kl_os_rename(w->env, p, to)) != 0 && errno != ENOENT) {
        rc = kl_err_set(err, KL_IO, "%s: cannot remove: %s", p, strerror(errno));
        break;
      }
    }
    w->dir_dirty = 1;
  }
  kl_free(w->env, bases);
  return rc;
}

/* Remove the .deleted files of segments retired more than DELETE_DELAY_S
** ago (a rename sets the ctime).  Errors are ignored: the files are below
** the log start, and Kafka deletes them when it loads the log. */
static void purge_deleted(kl_writer *w) {
  void *d = kl_os_opendir(w->env, w->dir);
  if (!d) return;
  time_t now = time(NULL);
  const char *name;
  int isdir;
  char p[4400];
  while (kl_os_readdir(w->env, d, &name, &isdir) > 0) {
    size_t n = strlen(name);
    int64_t b;
    if (n < 20 + KL_DELETED_LEN || strcmp(name + n - KL_DELETED_LEN, KL_DELETED_SUFFIX) != 0) {
      continue;
    }
    char stem[32];
    if (n - KL_DELETED_LEN > 30) continue;
    snprintf(stem, sizeof stem, "%.20s.log", name);
    if (!kl_segment_name(stem, &b)) continue;
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", w->dir, name);
    if (kl_os_stat(w->env, p, &sb) == 0 && now - sb.st_ctime > DELETE_DELAY_S) kl_os_unlink(w->env, p);
  }
  kl_os_closedir(w->env, d);
}

/* ---- recovery ---- */

/* Walk the active segment from position 0 with the scan walker and write
** its indexes afresh, as Kafka's LogSegment.recover() does.  committed:
** every byte up to the commit must be a sound batch (damage there is
** KL_CORRUPT and nothing is cut); else (a directory Kafka wrote) a torn or
** zero-filled tail is cut off, and damage before it is refused. */
static kl_rc rebuild(kl_writer *w, int committed, kl_err *err) {
  int64_t want_next = w->st.next_offset;
  kl_commit *st = &w->st;
  int64_t base = st->seg_base;
  fresh_segment(st, base);
  st->next_offset = base;
  kl_rc rc = truncate_fd(w, w->oidxfd, 0, fname(w, ".index"), err);
  if (rc == KL_OK) rc = truncate_fd(w, w->tidxfd, 0, fname(w, ".timeindex"), err);
  if (rc) return rc;
  kl_log *log = NULL;
  rc = kl_log_open(w->env, w->dir, &log, err);
  if (rc) return rc;
  kl_segment *s = kl_log_last(log);
  if (!s || s->base != base) {
    kl_log_close(log);
    return kl_err_set(err, KL_CORRUPT, "%s: segment %020lld.log is not the last one", w->dir,
                      (long long)base);
  }
  kl_reader rd;
  kl_reader_init(&rd, w->env, NULL, KL_ON_CORRUPT_ERROR);
  kl_scan sc;
  kl_batch b;
  int64_t end = 0;
  rc = kl_scan_start(&sc, &rd, s, 0, INT64_MAX, 0, err);
  while (rc == KL_OK && (rc = kl_scan_next(&sc, &b, err)) == KL_OK) {
    rc = index_batch(w, b.position, b.last_offset, b.max_timestamp, err);
    end = b.position + b.size;
    st->next_offset = b.last_offset + 1;
  }
  int torn = rc == KL_DONE && (sc.end == KL_END_TORN || sc.end == KL_END_ZEROS);
  if (rc == KL_DONE) rc = KL_OK;
  kl_scan_end(&sc);
  kl_reader_free(&rd);
  kl_log_close(log);
  if (rc) return rc;
  if (torn && committed) {
    return kl_err_set(err, KL_CORRUPT, "%020lld.log: position %lld: committed data ends in a "
                      "partial batch", (long long)base, (long long)end);
  }
  if (committed && st->next_offset != want_next) {
    return kl_err_set(err, KL_CORRUPT, "%s/%s: position 16: the commit record's next offset is "
                      "%lld, the committed data ends at %lld", w->dir, KL_COMMIT_FILE,
                      (long long)want_next, (long long)st->next_offset);
  }
  if (!committed) {
    struct stat sb;
    if (kl_os_fstat(w->env, w->logfd, &sb) == 0 && sb.st_size > end) w->stats.truncated += sb.st_size - end;
    if ((rc = truncate_fd(w, w->logfd, end, fname(w, ".log"), err)) != KL_OK) return rc;
  }
  st->seg_size = end;
  /* As recover() ends: the final time index entry. */
  if (st->max_ts > st->last_tidx_ts && (rc = put_tidx(w, err)) != KL_OK) return rc;
  w->stats.recoveries++;
  w->dirty = DIRTY_ALL;
  return KL_OK;
}

/* Make the data durable (the .log first, then the indexes it changed, then
** the directory when files were made or removed), then publish c. */
static kl_rc publish(kl_writer *w, kl_commit *c, kl_err *err) {
  kl_rc rc = KL_OK;
  if (w->dirty & DIRTY_LOG) rc = sync_fd(w, w->logfd, fname(w, ".log"), err);
  if (rc == KL_OK && (w->dirty & DIRTY_OIDX)) rc = sync_fd(w, w->oidxfd, fname(w, ".index"), err);
  if (rc == KL_OK && (w->dirty & DIRTY_TIDX)) rc = sync_fd(w, w->tidxfd, fname(w, ".timeindex"), err);
  if (rc == KL_OK && w->dir_dirty) {
    w->stats.fsyncs++;
    if (kl_os_sync(w->env, w->dirfd, 0) != 0) {
      rc = kl_err_set(err, KL_IO, "%s: fsync of the directory failed: %s", w->dir, strerror(errno));
    }
  }
  if (rc) return rc;
  w->dirty = 0;
  w->dir_dirty = 0;
  rc = kl_commit_write(w->env, w->dir, w->dirfd, &w->commitfd, c, err);
  if (rc == KL_OK) {
    w->stats.fsyncs++;
    w->com = *c;
    w->unsure_gen = 0;
  } else {
    /* The slot may hold c (a write that reached the page cache and then
    ** failed to sync is read by everyone): what it names stays until the
    ** slot is written again (kl_writer_rollback). */
    w->unsure_gen = c->gen;
  }
  return rc;
}

/* A directory without a commit record: empty (a new log), or written by
** Kafka (its last segment is recovered as Kafka would). */
static kl_rc adopt(kl_writer *w, kl_err *err) {
  kl_log *log = NULL;
  kl_rc rc = kl_log_open(w->env, w->dir, &log, err);
  if (rc) return rc;
  kl_segment *last = kl_log_last(log);
  int64_t base = last ? last->base : 0;
  kl_log_close(log);
  memset(&w->st, 0, sizeof w->st);
  fresh_segment(&w->st, base);
  w->st.next_offset = base;
  w->st.log_start = -1;
  if ((rc = open_segment(w, last == NULL, err)) != KL_OK) return rc;
  if (last && (rc = rebuild(w, 0, err)) != KL_OK) return rc;
  kl_commit c = w->st;
  c.flags = 0;
  c.gen = 1;
  return publish(w, &c, err);
}

static int file_size_is(kl_writer *w, int fd, int64_t size) {
  struct stat sb;
  return kl_os_fstat(w->env, fd, &sb) == 0 && (int64_t)sb.st_size == size;
}

static kl_rc write_log_start(kl_writer *w, int64_t start, kl_err *err);

/* What a commit does once its record is out (retention's files and the
** checkpoint): nothing a reader of the module sees depends on it, so a
** failure here is no failed commit; the next writer finishes the work
** (repair_log_start). */
static void after_commit(kl_writer *w) {
  if (w->retire_start < 0) return;
  kl_err e = {0};
  purge_deleted(w);
  /* Files first: a checkpoint at the log start says they are gone. */
  if (remove_segments(w, INT64_MAX, w->retire_start, &e) == KL_OK) {
    write_log_start(w, w->retire_start, &e);
  }
  w->retire_start = -1;
}

/* Finish the work of a commit whose writer stopped (or failed) between
** its record and the log directory's log-start-offset-checkpoint: the
** checkpoint's entry behind the committed log start (a broker would serve
** the records retention removed) retires the segments below it and is
** brought to it. */
static kl_rc repair_log_start(kl_writer *w, kl_err *err) {
  int64_t start = w->com.log_start;
  int32_t part;
  size_t tlen = kl_partition_name(w->pname, &part);
  if (start <= 0 || tlen == 0) return KL_OK;
  char path[4400], topic[256];
  snprintf(path, sizeof path, "%s/%s", w->parent, kl_checkpoint_name(KL_CKPT_LOG_START));
  snprintf(topic, sizeof topic, "%.*s", (int)tlen, w->pname);
  kl_ckpt ck;
  kl_rc rc = kl_checkpoint_read(w->env, path, &ck, err);
  if (rc) return rc;
  int64_t have = kl_checkpoint_get(&ck, topic, part);
  kl_checkpoint_free(w->env, &ck);
  if (have >= start) return KL_OK;
  rc = remove_segments(w, INT64_MAX, start, err);
  if (rc == KL_OK) rc = write_log_start(w, start, err);
  if (rc == KL_OK) w->stats.log_start_repairs++;
  return rc;
}

static kl_rc load_state(kl_writer *w, kl_err *err);

/* Know the state of the files, and finish what a commit left undone. */
static kl_rc load(kl_writer *w, kl_err *err) {
  kl_rc rc = load_state(w, err);
  return rc ? rc : repair_log_start(w, err);
}

/* From the commit record when the files are as it says, else by
** recovering the committed segment. */
static kl_rc load_state(kl_writer *w, kl_err *err) {
  kl_commit c;
  kl_rc rc = kl_commit_read(w->env, w->dir, &c, err);
  if (rc == KL_NOTFOUND) return adopt(w, err);
  if (rc) return rc;
  w->com = c;
  w->st = c;
  if ((rc = open_segment(w, 0, err)) != KL_OK) return rc;
  char p[4200];
  struct stat sb;
  seg_path(w, c.next_offset, ".log", p, sizeof p);
  int extra = c.next_offset != c.seg_base && kl_os_stat(w->env, p, &sb) == 0;
  if (!extra && file_size_is(w, w->logfd, c.seg_size) && file_size_is(w, w->oidxfd, c.oidx_n * 8) &&
      file_size_is(w, w->tidxfd, c.tidx_n * 12)) {
    return KL_OK;
  }
  /* A writer stopped between its appends and its commit. */
  if (kl_os_fstat(w->env, w->logfd, &sb) != 0) {
    return kl_err_set(err, KL_IO, "%s: cannot stat: %s", fname(w, ".log"), strerror(errno));
  }
  if (sb.st_size < c.seg_size) {
    seg_path(w, c.seg_base, ".log", p, sizeof p);
    return kl_err_set(err, KL_CORRUPT, "%s: position %lld: the file ends there, but %lld bytes "
                      "were committed", p, (long long)sb.st_size, (long long)c.seg_size);
  }
  w->stats.truncated += (uint64_t)(sb.st_size - c.seg_size);
  if ((rc = remove_segments(w, c.seg_base, -1, err)) != KL_OK) return rc;
  if ((rc = truncate_fd(w, w->logfd, c.seg_size, fname(w, ".log"), err)) != KL_OK) return rc;
  if ((rc = rebuild(w, 1, err)) != KL_OK) return rc;
  kl_commit nc = w->st;
  nc.flags = 0;
  nc.gen = c.gen + 1;
  return publish(w, &nc, err);
}

/* ---- locks ---- */


static void unlock_all(kl_writer *w) {
  if (w->brokerfd >= 0) {
    kl_os_lock(w->env, w->brokerfd, KL_LOCK_OFD_UNLOCK);
    kl_os_close(w->env, w->brokerfd);
    w->brokerfd = -1;
  }
  if (w->lockfd >= 0) {
    /* Removed while still held: the file exists only while a writer is
    ** at work, and one who opened it meanwhile sees it gone (lock_own). */
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", w->dir, LOCK_FILE);
    kl_os_unlink(w->env, p);
    kl_os_lock(w->env, w->lockfd, KL_LOCK_OFD_UNLOCK);
    kl_os_close(w->env, w->lockfd);
    w->lockfd = -1;
  }
}

/* Take <dir>/kafkalog.lock, made for the time it is held.  A lock taken on
** a file its holder removed as it let go locks nothing: try again. */
static kl_rc lock_own(kl_writer *w, kl_err *err) {
  char p[4200];
  snprintf(p, sizeof p, "%s/%s", w->dir, LOCK_FILE);
  for (int tries = 0; tries < 100; tries++) {
    int fd;
    kl_rc rc = kl_fd_open(w->env, p, O_RDWR | O_CREAT, 0644, &fd, err);
    if (rc) return rc;
    if (kl_os_lock(w->env, fd, KL_LOCK_OFD_WRITE) != 0) {
      int e = errno;
      kl_os_close(w->env, fd);
      if (e == EAGAIN || e == EACCES) {
        return kl_err_set(err, KL_BUSY, "%s: another writer holds %s", w->dir, p);
      }
      return kl_err_set(err, KL_IO, "%s: cannot lock: %s", p, strerror(e));
    }
    struct stat a, b;
    if (kl_os_fstat(w->env, fd, &a) == 0 && kl_os_stat(w->env, p, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      w->lockfd = fd;
      return KL_OK;
    }
    kl_os_lock(w->env, fd, KL_LOCK_OFD_UNLOCK);
    kl_os_close(w->env, fd);
  }
  return kl_err_set(err, KL_BUSY, "%s: other writers keep taking %s", w->dir, p);
}

/* The broker's lock first: a write it refuses leaves no file behind. */
static kl_rc lock_all(kl_writer *w, kl_err *err) {
  /* A broker locks its log directory's .lock for as long as it runs
  ** (FileChannel.tryLock: an exclusive POSIX record lock on the whole
  ** file, which conflicts with our OFD locks).  Writers of the directory's
  ** partitions share it: each one's read lock keeps a broker from starting
  ** on files being written, and none keeps out another. */
  char p[4200];
  /* A broker that stopped cleanly removed its .lock; its meta.properties
  ** says that one may start here: make the lock it would take. */
  snprintf(p, sizeof p, "%s/meta.properties", w->parent);
  struct stat sb;
  int made = kl_os_stat(w->env, p, &sb) == 0 ? O_CREAT : 0;
  snprintf(p, sizeof p, "%s/.lock", w->parent);
  int fd = -1;
  if (kl_fd_open(w->env, p, O_RDONLY | made, 0644, &fd, NULL) != KL_OK) fd = -1; /* no broker's lock */
  if (fd >= 0 && kl_os_lock(w->env, fd, KL_LOCK_OFD_READ) != 0) {
    int e = errno;
    kl_os_close(w->env, fd);
    if (e == EAGAIN || e == EACCES) {
      return kl_err_set(err, KL_BUSY, "%s: a Kafka broker holds %s (writing is refused while it "
                        "runs on this log directory)", w->dir, p);
    }
    return kl_err_set(err, KL_IO, "%s: cannot lock: %s", p, strerror(e));
  }
  w->brokerfd = fd;
  kl_rc rc = lock_own(w, err);
  if (rc) {
    unlock_all(w);
    return rc;
  }
  if (fd >= 0) {
    /* Kafka trusts a log directory's files without recovery after a clean
    ** shutdown; once we append, recovery from its recovery point is what
    ** is safe (behaviour.md 12.5). */
    snprintf(p, sizeof p, "%s/.kafka_cleanshutdown", w->parent);
    if (kl_os_unlink(w->env, p) == 0) {
      int pd;
      if (kl_fd_open(w->env, w->parent, O_RDONLY | O_DIRECTORY, 0, &pd, NULL) == KL_OK) {
        kl_os_sync(w->env, pd, 0);
        kl_os_close(w->env, pd);
      }
    }
  }
  return KL_OK;
}

/* ---- the public calls ---- */

/* The latest leader epoch of dir's leader-epoch-checkpoint in *epoch, or
** -1: batches appended to a partition a broker led carry its epoch
** (behaviour.md 12.2), a log of its own none.  A file that cannot be read,
** or is malformed, is an error naming it (checkpoint.h). */
static kl_rc last_leader_epoch(const kl_env *env, const char *dir, int32_t *epoch,
                               kl_err *err) {
  char p[4200];
  snprintf(p, sizeof p, "%s/" KL_LEADER_EPOCH_FILE, dir);
  *epoch = -1;
  kl_epoch_ckpt es;
  kl_rc rc = kl_epoch_checkpoint_read(env, p, &es, err);
  for (size_t i = 0; rc == KL_OK && i < es.n; i++) {
    if (es.e[i].epoch > *epoch) *epoch = es.e[i].epoch;
  }
  if (rc == KL_OK) kl_epoch_checkpoint_free(env, &es);
  return rc;
}

kl_rc kl_writer_open(const kl_env *env, const char *dir, const kl_writer_opts *opt,
                     kl_writer **out, kl_err *err) {
  *out = NULL;
  kl_writer *w = kl_malloc(env, sizeof *w);
  if (!w) return kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  memset(w, 0, sizeof *w);
  w->env = env;
  w->opt = *opt;
  w->dirfd = w->lockfd = w->brokerfd = w->logfd = w->oidxfd = w->tidxfd = w->commitfd = -1;
  w->pending_start = -1;
  w->retire_start = -1;
  w->retention_due = 1; /* on open */
  w->dir = kl_strdup(env, dir);
  if (!w->dir) {
    kl_free(env, w);
    return kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  }
  size_t n = strlen(w->dir);
  while (n > 1 && w->dir[n - 1] == '/') w->dir[--n] = 0;
  kl_rc rc =
      kl_partition_logdir(w->dir, w->parent, sizeof w->parent, w->pname, sizeof w->pname, err);
  if (rc == KL_OK &&
      (rc = kl_fd_open(env, w->dir, O_RDONLY | O_DIRECTORY, 0, &w->dirfd, err)) == KL_NOTFOUND) {
    rc = kl_err_set(err, KL_CANTOPEN, "cannot open %s: %s", w->dir, strerror(ENOENT));
  }
  if (rc) {
    kl_writer_close(w, NULL);
    return rc;
  }
  kl_batch_spec spec;
  memset(&spec, 0, sizeof spec);
  if ((rc = last_leader_epoch(env, w->dir, &spec.leader_epoch, err)) != KL_OK) {
    kl_writer_close(w, NULL);
    return rc;
  }
  spec.codec = opt->codec;
  spec.log_append_time = opt->log_append_time;
  spec.producer_id = -1;
  spec.producer_epoch = -1;
  spec.base_sequence = -1;
  /* A batch must fit a segment (Kafka refuses a larger one), compressed:
  ** snappy's worst case is 32 + n + n / 6 bytes, the others' less. */
  int64_t fit = opt->codec == KL_CODEC_NONE ? opt->segment_bytes
                                            : (opt->segment_bytes - 128) / 7 * 6;
  int64_t max = opt->max_message_bytes > 0 ? opt->max_message_bytes : INT32_MAX;
  int64_t readable = (int64_t)(KL_V2_HEADER + KL_MAX_BATCH_BYTES);
  snprintf(w->max_name, sizeof w->max_name, "max_message_bytes=%lld", (long long)max);
  if (fit < max) {
    max = fit;
    snprintf(w->max_name, sizeof w->max_name, "what fits segment_bytes=%lld%s",
             (long long)opt->segment_bytes, opt->codec == KL_CODEC_NONE ? "" : " compressed");
  }
  if (readable < max) {
    max = readable;
    snprintf(w->max_name, sizeof w->max_name, "the most a reader decompresses, %lld bytes",
             (long long)KL_MAX_BATCH_BYTES);
  }
  if (max < 128) max = 128;
  kl_builder_init(&w->b, env, &spec, (size_t)(opt->batch_bytes > 0 ? opt->batch_bytes : max),
                  (size_t)max);
  w->b.max_name = w->max_name;
  *out = w;
  return KL_OK;
}

static void drop_marks(kl_writer *w, int from) {
  for (int i = from; i < w->nmarks; i++) {
    kl_free(w->env, w->marks[i].saved);
    w->marks[i].saved = NULL;
    w->marks[i].saved_ok = 0;
  }
  if (w->nmarks > from) w->nmarks = from;
}

static kl_rc set_mark(kl_writer *w, int i, kl_err *err) {
  if (i >= w->capmarks) {
    int cap = i + 8;
    wmark *m = kl_realloc(w->env, w->marks, (size_t)cap * sizeof *m);
    if (!m) return kl_err_set(err, KL_NOMEM, "out of memory setting a savepoint");
    w->marks = m;
    w->capmarks = cap;
  }
  drop_marks(w, i);
  for (int k = w->nmarks; k < i; k++) { /* SQLite numbers savepoints densely */
    /* a savepoint set before this table joined the transaction: its state
    ** then was the transaction's beginning */
    w->marks[k] = w->marks[0];
  }
  wmark *m = &w->marks[i];
  m->st = w->st;
  kl_builder_get_mark(&w->b, &m->bm);
  m->saved = NULL;
  m->saved_ok = 0;
  m->pending_start = w->pending_start;
  w->nmarks = i + 1;
  return KL_OK;
}

kl_rc kl_writer_begin(kl_writer *w, kl_err *err) {
  if (w->in_txn) return kl_err_set(err, KL_MISUSE, "%s: a transaction is already open", w->dir);
  kl_rc rc = lock_all(w, err);
  if (rc) return rc;
  w->unsure_gen = 0; /* the record is read afresh */
  w->retire_start = -1;
  rc = load(w, err);
  if (rc) {
    close_segment(w);
    unlock_all(w);
    return rc;
  }
  kl_builder_reset(&w->b, w->st.next_offset);
  w->before = w->com;
  w->synced = 0;
  w->pending_start = -1;
  w->in_txn = 1;
  w->nmarks = 0;
  return set_mark(w, 0, err);
}

kl_rc kl_writer_append(kl_writer *w, const kl_rec_in *r, int64_t *offset, kl_err *err) {
  if (!w->in_txn) return kl_err_set(err, KL_MISUSE, "%s: append outside a transaction", w->dir);
  kl_err e2; /* per record: not 512 bytes of zeros */
  kl_err_clear(&e2);
  kl_rc rc = kl_builder_add(&w->b, r, &e2);
  if (rc == KL_FULL) {
    if ((rc = flush(w, err)) != KL_OK) return rc;
    kl_err_clear(&e2);
    rc = kl_builder_add(&w->b, r, &e2);
  }
  if (rc) return kl_err_set(err, rc, "%s: %s", w->dir, e2.msg);
  *offset = w->b.spec.base_offset + kl_builder_count(&w->b) - 1;
  return KL_OK;
}

kl_rc kl_writer_savepoint(kl_writer *w, int n, kl_err *err) {
  if (!w->in_txn || n < 0) return KL_OK;
  return set_mark(w, n + 1, err);
}

void kl_writer_release(kl_writer *w, int n) {
  if (w->in_txn && n >= 0) drop_marks(w, n + 1);
}

/* Put the files and the batch in memory back as they were at mark m. */
static kl_rc restore(kl_writer *w, wmark *m, kl_err *err) {
  kl_rc rc = KL_OK;
  if (m->st.seg_base != w->st.seg_base) {
    close_segment(w);
    w->st = m->st;
    rc = remove_segments(w, m->st.seg_base, -1, err);
    if (rc == KL_OK) rc = open_segment(w, 0, err);
  }
  if (rc == KL_OK && w->logfd >= 0) {
    struct stat sb;
    if (kl_os_fstat(w->env, w->logfd, &sb) == 0 && sb.st_size > m->st.seg_size) {
      w->stats.truncated += (uint64_t)(sb.st_size - m->st.seg_size);
    }
    rc = truncate_fd(w, w->logfd, m->st.seg_size, fname(w, ".log"), err);
    if (rc == KL_OK) rc = truncate_fd(w, w->oidxfd, m->st.oidx_n * 8, fname(w, ".index"), err);
    if (rc == KL_OK) rc = truncate_fd(w, w->tidxfd, m->st.tidx_n * 12, fname(w, ".timeindex"), err);
  }
  if (rc) return rc;
  w->st = m->st;
  w->pending_start = m->pending_start;
  w->dirty = DIRTY_ALL;
  if (m->bm.n == 0) {
    kl_builder_reset(&w->b, w->st.next_offset);
  } else if (!m->saved_ok) {
    kl_builder_rewind(&w->b, &m->bm);
  } else {
    rc = kl_builder_refill(&w->b, &m->bm, m->saved, err);
  }
  return rc;
}

kl_rc kl_writer_rollback_to(kl_writer *w, int n, kl_err *err) {
  if (!w->in_txn || n < -1 || n + 1 >= w->nmarks) return KL_OK;
  drop_marks(w, n + 2);
  return restore(w, &w->marks[n + 1], err);
}

kl_rc kl_writer_delete_below(kl_writer *w, int64_t start, kl_err *err) {
  if (!w->in_txn) return kl_err_set(err, KL_MISUSE, "%s: retention outside a transaction", w->dir);
  if (start > w->pending_start) w->pending_start = start;
  return KL_OK;
}

/* A segment as retention weighs it. */
typedef struct ret_seg {
  int64_t base, size, max_ts;
} ret_seg;

/* Fill v's size and max_ts from the segment's files (v->base set). */
static void ret_seg_facts(kl_writer *w, ret_seg *v) {
  char p[4200];
  struct stat sb;
  seg_path(w, v->base, ".log", p, sizeof p);
  v->size = v->base == w->st.seg_base ? w->st.seg_size
                                      : kl_os_stat(w->env, p, &sb) == 0 ? (int64_t)sb.st_size : 0;
  int64_t mtime = kl_os_stat(w->env, p, &sb) == 0 ? (int64_t)sb.st_mtim.tv_sec * 1000 +
                                          sb.st_mtim.tv_nsec / 1000000 : 0;
  /* A segment that rolled ends its time index with its largest
  ** timestamp; without one Kafka dates it by the file's mtime. */
  v->max_ts = mtime;
  seg_path(w, v->base, ".timeindex", p, sizeof p);
  int fd;
  if (kl_fd_open(w->env, p, O_RDONLY, 0, &fd, NULL) != KL_OK) fd = -1;
  if (fd >= 0 && kl_os_fstat(w->env, fd, &sb) == 0 && sb.st_size >= 12) {
    uint8_t e[12];
    if (kl_os_read(w->env, fd, e, 12, sb.st_size / 12 * 12 - 12) == 12) {
      v->max_ts = kl_index_entry_timestamp(e);
    }
  }
  if (fd >= 0) kl_os_close(w->env, fd);
}

/* How many of the n segments v (oldest first, total bytes in all) the
** retention options delete; the last one, the active, is never deleted. */
static size_t retention_cut(const kl_writer *w, const ret_seg *v, size_t n, int64_t total) {
  size_t k = 0;
  if (w->opt.retention_bytes >= 0 && total >= w->opt.retention_bytes) {
    int64_t diff = total - w->opt.retention_bytes;
    while (k + 1 < n && diff - v[k].size >= 0) diff -= v[k++].size;
  }
  if (w->opt.retention_ms >= 0) {
    int64_t now = now_ms();
    while (k + 1 < n && now - v[k].max_ts > w->opt.retention_ms) k++;
  }
  return k;
}

/* The start retention_bytes and retention_ms give (behaviour.md 8), or -1:
** segments listed afresh, the active one never deleted. */
static kl_rc retention_start(kl_writer *w, int64_t *start, kl_err *err) {
  *start = -1;
  int64_t *bases;
  size_t nb;
  kl_rc rc = list_bases(w, &bases, &nb, err);
  if (rc) return rc;
  ret_seg *v = kl_malloc(w->env, (nb ? nb : 1) * sizeof *v);
  size_t n = 0;
  if (!v) rc = kl_err_set(err, KL_NOMEM, "out of memory listing %s", w->dir);
  for (size_t i = 0; rc == KL_OK && i < nb && bases[i] <= w->st.seg_base; i++) v[n++].base = bases[i];
  kl_free(w->env, bases);
  if (rc) return rc;
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    ret_seg_facts(w, &v[i]);
    total += v[i].size;
  }
  size_t k = retention_cut(w, v, n, total);
  if (k > 0) *start = v[k].base;
  kl_free(w->env, v);
  return KL_OK;
}

/* The log directory's log-start-offset-checkpoint, where Kafka keeps the
** log start offset of each partition (a directory not named
** <topic>-<partition> can have no entry). */
static kl_rc write_log_start(kl_writer *w, int64_t start, kl_err *err) {
  int32_t part;
  size_t tlen = kl_partition_name(w->pname, &part);
  if (tlen == 0 || !kl_topic_valid(w->pname, tlen)) return KL_OK; /* no topic of Kafka's */
  char topic[256];
  snprintf(topic, sizeof topic, "%.*s", (int)tlen, w->pname);
  return kl_checkpoint_put(w->env, w->parent, KL_CKPT_LOG_START, topic, part, start, err);
}

kl_rc kl_writer_sync(kl_writer *w, kl_err *err) {
  if (!w->in_txn) return KL_OK;
  kl_rc rc = flush(w, err);
  if (rc) return rc;
  if (w->retention_due && (w->opt.retention_bytes >= 0 || w->opt.retention_ms >= 0)) {
    int64_t s;
    if ((rc = retention_start(w, &s, err)) != KL_OK) return rc;
    if (s > w->pending_start) w->pending_start = s;
  }
  int64_t start = w->pending_start;
  if (start > w->st.next_offset) start = w->st.next_offset;
  int64_t old_start = w->com.log_start;
  int retain = start > old_start && start > 0;
  /* Retention of everything: the log keeps an empty active segment. */
  if (retain && start == w->st.next_offset && w->st.seg_size > 0 &&
      (rc = roll(w, w->st.next_offset, err)) != KL_OK) {
    return rc;
  }
  if (!w->dirty && !w->dir_dirty && !retain && !w->unsure_gen) {
    return KL_OK; /* nothing was written */
  }
  kl_commit c = w->st;
  c.flags = 0;
  c.gen = w->com.gen + 1;
  c.log_start = retain ? start : old_start;
  if ((rc = publish(w, &c, err)) != KL_OK) return rc;
  w->st.log_start = c.log_start;
  w->dirty = 0;
  w->synced = 1;
  w->committed_any = 1;
  w->retention_due = 0;
  /* Segments below the published start are invisible already; removing
  ** them (and the checkpoint) waits for the end of the transaction, which
  ** the database may still roll back. */
  if (retain) w->retire_start = start;
  return KL_OK;
}

static void end_txn(kl_writer *w) {
  drop_marks(w, 0);
  close_segment(w);
  unlock_all(w);
  w->in_txn = 0;
  w->synced = 0;
  w->pending_start = -1;
  w->retire_start = -1;
}

void kl_writer_commit(kl_writer *w) {
  if (!w->in_txn) return;
  if (w->synced) after_commit(w);
  end_txn(w);
}

kl_rc kl_writer_rollback(kl_writer *w, kl_err *err) {
  if (!w->in_txn) return KL_OK;
  kl_rc rc = KL_OK;
  /* The commit record goes back before the data it names goes: a reader
  ** (or a crash) between the two sees the old end over longer files, never
  ** a new end over files cut short. */
  if (w->synced || w->unsure_gen) {
    /* Published, then the database's commit failed: the old end again in
    ** a new generation (so that no one takes it for unchanged).  A write that
    ** failed: its slot is written again with the old end (the other slot
    ** holds the last good commit, and stays untouched). */
    kl_commit c = w->before;
    c.gen = w->synced ? w->com.gen + 1 : w->unsure_gen;
    rc = publish(w, &c, err);
  }
  /* When the old end could not be put back, the files stay as the record
  ** that may be read names them; the next writer recovers either. */
  if (rc == KL_OK && w->nmarks) rc = restore(w, &w->marks[0], err);
  kl_builder_reset(&w->b, w->st.next_offset);
  end_txn(w);
  return rc;
}

kl_rc kl_writer_recover(const kl_env *env, const char *dir, kl_writer_stats *done, kl_err *err) {
  if (done) memset(done, 0, sizeof *done);
  kl_writer_opts o;
  kl_writer_opts_default(&o);
  kl_writer *w = NULL;
  kl_commit c;
  kl_rc rc = kl_writer_open(env, dir, &o, &w, err);
  if (rc == KL_OK && (rc = kl_commit_read(env, w->dir, &c, err)) == KL_NOTFOUND) {
    kl_writer_close(w, NULL);
    return KL_OK; /* Kafka's own: it recovers it */
  }
  if (rc == KL_OK && (rc = kl_writer_begin(w, err)) == KL_OK) kl_writer_commit(w);
  if (w && done) *done = w->stats;
  kl_writer_close(w, NULL);
  return rc;
}

kl_rc kl_writer_close(kl_writer *w, kl_err *err) {
  if (!w) return KL_OK;
  kl_rc rc = KL_OK;
  if (w->in_txn) rc = kl_writer_rollback(w, err);
  /* A clean stop, when nobody else is writing: the final time index entry
  ** of the active segment, as Kafka writes it on close. */
  if (rc == KL_OK && w->committed_any && w->dirfd >= 0) {
    kl_err e2 = {0};
    if (lock_all(w, &e2) == KL_OK) {
      kl_rc r2 = load(w, &e2);
      if (r2 == KL_OK && w->st.max_ts > w->st.last_tidx_ts) r2 = put_tidx(w, &e2);
      if (r2 == KL_OK) purge_deleted(w);
      if (r2 == KL_OK) {
        kl_commit c = w->st;
        c.flags = KL_COMMIT_CLEAN;
        c.gen = w->com.gen + 1;
        r2 = publish(w, &c, &e2);
      }
      close_segment(w);
      unlock_all(w);
    }
  }
  close_segment(w);
  drop_marks(w, 0);
  kl_free(w->env, w->marks);
  unlock_all(w);
  if (w->commitfd >= 0) kl_os_close(w->env, w->commitfd);
  if (w->dirfd >= 0) kl_os_close(w->env, w->dirfd);
  kl_builder_free(&w->b);
  kl_free(w->env, w->dir);
  kl_free(w->env, w);
  return rc;
}

int kl_writer_view(kl_writer *w, kl_view *view, kl_err *err) {
  if (!w->in_txn) return 0;
  int32_t n = kl_builder_count(&w->b);
  if (n == 0 && w->st.next_offset == w->com.next_offset && w->st.seg_base == w->com.seg_base &&
      w->st.seg_size == w->com.seg_size) {
    return 0; /* nothing of its own yet */
  }
  view->end = w->st;
  view->end.log_start = w->com.log_start;
  view->tail.len = 0;
  if (n == 0) return 1;
  /* The batch as flush would write it now (sealing leaves the builder as
  ** it was), placed after the active segment's bytes. */
  if (w->opt.log_append_time) w->b.spec.append_time = now_ms();
  uint8_t h[KL_V2_HEADER];
  const uint8_t *payload;
  size_t len;
  if (kl_builder_seal(&w->b, h, &payload, &len, err) != KL_OK) return -1;
  if (kl_buf_append(w->env, &view->tail, h, sizeof h) != KL_OK ||
      kl_buf_append(w->env, &view->tail, payload, len) != KL_OK) {
    kl_err_set(err, KL_NOMEM, "out of memory reading %s", w->dir);
    return -1;
  }
  view->end.seg_size += (int64_t)view->tail.len;
  view->end.next_offset = w->b.spec.base_offset + n;
  return 1;
}

int kl_writer_in_txn(const kl_writer *w) { return w->in_txn; }

int64_t kl_writer_next_offset(const kl_writer *w) {
  return w->in_txn ? w->b.spec.base_offset + kl_builder_count(&w->b) : w->com.next_offset;
}

int64_t kl_writer_log_start(const kl_writer *w) {
  return w->pending_start > w->com.log_start ? w->pending_start : w->com.log_start;
}

const kl_writer_stats *kl_writer_stats_of(const kl_writer *w) { return &w->stats; }

kl_rc kl_writer_create(const kl_env *env, const char *dir, const kl_writer_opts *opt,
                       kl_err *err) {
  /* A partition of a topic Kafka would refuse could never be served, and
  ** its name may not fit a checkpoint line. */
  char logdir[4096], name[256];
  int32_t part;
  kl_rc rc = kl_partition_logdir(dir, logdir, sizeof logdir, name, sizeof name, err);
  if (rc) return rc;
  size_t tlen = kl_partition_name(name, &part);
  if (tlen && !kl_topic_valid(name, tlen)) {
    return kl_err_set(err, KL_UNSUPPORTED, "cannot create %s: \"%.*s\" is not a topic name Kafka "
                      "accepts (1 to 249 of a-z A-Z 0-9 . _ -, not \".\" or \"..\")", dir,
                      (int)tlen, name);
  }
  int made = kl_os_mkdir(env, dir, 0755) == 0;
  if (!made && errno != EEXIST) {
    return kl_err_set(err, errno == EACCES || errno == EROFS ? KL_READONLY : KL_IO,
                      "cannot create %s: %s", dir, strerror(errno));
  }
  kl_writer *w = NULL;
  rc = kl_writer_open(env, dir, opt, &w, err);
  if (rc == KL_OK && (rc = kl_writer_begin(w, err)) == KL_OK) rc = kl_writer_rollback(w, err);
  if (rc == KL_OK || !w) {
    kl_writer_close(w, NULL);
  } else {
    /* Nothing of a log that could not be made stays: its first segment,
    ** its commit record, the directory when it was made here. */
    static const char *const sfx[] = {".log", ".index", ".timeindex"};
    char p[4200];
    for (int i = 0; i < 3; i++) {
      seg_path(w, 0, sfx[i], p, sizeof p);
      kl_os_unlink(env, p);
    }
    snprintf(p, sizeof p, "%s/%s", w->dir, KL_COMMIT_FILE);
    kl_os_unlink(env, p);
    kl_writer_close(w, NULL);
  }
  if (rc != KL_OK && made) kl_os_rmdir(env, dir);
  return rc;
}
