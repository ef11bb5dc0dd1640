/*
** log.c - a partition directory: segment map and Kafka's lookups.
*/
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "broker.h"
#include "commit.h"
#include "dating.h"
#include "os.h"
#include "skiplist.h"

struct kl_log {
  const kl_env *env;
  char *dir;                /* the directory as given */
  kl_skiplist *segs;        /* base offset -> kl_segment* */
  kl_segset open;           /* the segments holding files open, unless */
  kl_segset *set;           /* a set shared with other logs is used */
  char hint[256];           /* see kl_log_hint; "" when none */
  int64_t log_start;        /* the commit record's log start, or -1 */
  int has_commit;           /* read to a commit record (or a writer's view) */
  kl_commit commit;         /* that record */
  /* Seeks by time: the segments in order and the running maximum of their
  ** largest timestamps (error-mode tails), known for a prefix that grows
  ** only as far as a seek needs.  It never decreases, so the first
  ** segment reaching t is found by binary search. */
  kl_segment **arr;
  int64_t *runmax;
  size_t nseg, nknown;
};

void kl_log_close(kl_log *log) {
  if (!log) return;
  const kl_env *env = log->env;
  if (log->segs) {
    for (kl_sknode *n = kl_skiplist_first(log->segs); n; n = kl_sknode_next(n)) {
      kl_segment *s = kl_sknode_value(n);
      kl_segment_free(s);
      kl_free(env, s);
    }
    kl_skiplist_free(log->segs);
  }
  kl_free(env, log->arr);
  kl_free(env, log->runmax);
  kl_free(env, log->dir);
  kl_free(env, log);
}

/* Note a "<topic>-<n>" directory for the hint of a directory that is not
** a partition. */
static void note_partition_dir(kl_log *log, const char *dir, const char *name, int isdir,
                               int *seen) {
  int32_t part;
  if (*seen > 3 || !kl_partition_name(name, &part)) return;
  if (isdir < 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    isdir = kl_os_is_dir(log->env, path);
  }
  if (!isdir) return;
  size_t len = strlen(log->hint);
  if (*seen < 3) {
    snprintf(log->hint + len, sizeof log->hint - len, "%s%s",
             *seen ? ", " : "it holds partition directories such as ", name);
  } else if (*seen == 3) {
    snprintf(log->hint + len, sizeof log->hint - len, ", ...");
  }
  (*seen)++;
}

/* The segments of a directory, from one listing, into log->segs. */
static kl_rc list_segments(kl_log *log, kl_err *err) {
  const kl_env *env = log->env;
  const char *dir = log->dir;
  void *d = kl_os_opendir(env, dir);
  if (!d) {
    int e = errno;
    return kl_err_set(err, e == ENOMEM ? KL_NOMEM : KL_CANTOPEN,
                      "cannot open partition directory %s: %s", dir, strerror(e));
  }
  kl_rc rc = KL_OK;
  const char *name;
  int isdir, more;
  char path[4096];
  int partitions = 0, segments = 0;
  size_t dn = strlen(dir);
  log->hint[0] = 0;
  while (rc == KL_OK && (more = kl_os_readdir(env, d, &name, &isdir)) > 0) {
    int64_t base;
    if (!kl_segment_name(name, &base)) {
      /* The hint is for a directory without segments. */
      if (!segments) note_partition_dir(log, dir, name, isdir, &partitions);
      continue;
    }
    segments = 1;
    if (dn + 1 + strlen(name) >= sizeof path) {
      rc = kl_err_set(err, KL_IO, "%s: path too long", dir);
      break;
    }
    memcpy(path, dir, dn);
    path[dn] = '/';
    strcpy(path + dn + 1, name);
    kl_segment *s;
    if ((rc = kl_segment_new(env, log->set, base, path, &s)) != KL_OK) {
      /* nothing allocated */
    } else if ((rc = kl_skiplist_insert(log->segs, base, s)) != KL_OK) {
      kl_segment_free(s);
      kl_free(env, s);
    }
    if (rc == KL_NOMEM) kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  }
  if (rc == KL_OK && more < 0) {
    rc = kl_err_set(err, KL_IO, "cannot list partition directory %s: %s", dir, strerror(errno));
  }
  kl_os_closedir(env, d);
  if (rc) return rc;
  if (kl_skiplist_first(log->segs)) log->hint[0] = 0;
  return KL_OK;
}

static void drop_segment(kl_log *log, kl_sknode *n) {
  kl_segment *s = kl_sknode_value(n);
  kl_skiplist_remove(log->segs, kl_sknode_key(n));
  kl_segment_free(s);
  kl_free(log->env, s);
}

/* A directory that kafkalog writes holds bytes of transactions not yet
** committed (or rolled back, or cut by a crash) beyond its commit record
** (commit.h): segments after the committed one are not there yet, and the
** committed one ends at the committed size.  0 when the committed segment
** is not among those listed. */
static int apply_commit(kl_log *log, const kl_commit *c) {
  kl_sknode *n;
  while ((n = kl_skiplist_last(log->segs)) != NULL && kl_sknode_key(n) > c->seg_base) {
    drop_segment(log, n);
  }
  n = kl_skiplist_last(log->segs);
  if (!n || kl_sknode_key(n) != c->seg_base) return 0;
  kl_segment *s = kl_sknode_value(n);
  s->limit = c->seg_size;
  log->log_start = c->log_start;
  log->has_commit = 1;
  log->commit = *c;
  return 1;
}

/* Listings of a directory a writer keeps rolling and trimming, before one
** agrees with the commit record read before it. */
#define KL_LIST_TRIES 16

/* The segments and the commit record as one committed state.  The record
** is read first: every segment it names was made before it was written,
** so a listing that follows holds it, unless a later commit rolled past
** it and retention removed it meanwhile (renamed to .deleted).  Then the
** record has moved on: read both again. */
static kl_rc load(kl_log *log, const kl_view *view, kl_err *err) {
  for (int tries = 1;; tries++) {
    kl_commit c;
    kl_err ce = {0};
    kl_rc crc = view ? KL_OK : kl_commit_read(log->env, log->dir, &c, &ce);
    if (crc == KL_OK && view) c = view->end;
    /* A path that is no directory says so first. */
    kl_rc rc = list_segments(log, err);
    if (rc) return rc;
    if (crc != KL_OK && crc != KL_NOTFOUND) return kl_err_set(err, crc, "%s", ce.msg);
    int committed = crc == KL_OK;
    if (!committed || apply_commit(log, &c)) break;
    kl_commit now;
    kl_err e = {0};
    int moved = !view && kl_commit_read(log->env, log->dir, &now, &e) == KL_OK && now.gen != c.gen;
    if (!moved || tries == KL_LIST_TRIES) {
      return kl_err_set(err, KL_CORRUPT, "%s/%s: position 24: the committed segment %020lld.log "
                        "is missing", log->dir, KL_COMMIT_FILE, (long long)c.seg_base);
    }
    kl_sknode *n;
    while ((n = kl_skiplist_last(log->segs)) != NULL) drop_segment(log, n);
  }
  for (kl_sknode *n = kl_skiplist_first(log->segs); n; n = kl_sknode_next(n)) {
    kl_segment *s = kl_sknode_value(n);
    kl_sknode *next = kl_sknode_next(n);
    s->node = n;
    s->is_last = next == NULL;
    s->next_base = next ? kl_sknode_key(next) : INT64_MAX;
  }
  return KL_OK;
}

kl_rc kl_log_open(const kl_env *env, const char *dir, kl_log **out, kl_err *err) {
  return kl_log_open_in(env, dir, NULL, out, err);
}

kl_rc kl_log_open_in(const kl_env *env, const char *dir, kl_segset *set, kl_log **out,
                     kl_err *err) {
  return kl_log_open_view(env, dir, set, NULL, out, err);
}

kl_rc kl_log_open_view(const kl_env *env, const char *dir, kl_segset *set, const kl_view *view,
                       kl_log **out, kl_err *err) {
  *out = NULL;
  kl_log *log = kl_malloc(env, sizeof *log);
  if (!log) return kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  memset(log, 0, sizeof *log);
  log->env = env;
  /* Its own bound from RLIMIT_NOFILE, unless a shared set (whose bound
  ** holds) is used: then no getrlimit for each of thousands of logs. */
  kl_segset_init(&log->open, set ? KL_SEGSET_MAX_OPEN : 0);
  log->set = set ? set : &log->open;
  log->dir = kl_strdup(env, dir);
  log->segs = kl_skiplist_new(env);
  if (!log->dir || !log->segs) {
    kl_log_close(log);
    return kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  }
  log->log_start = -1;
  kl_rc rc = load(log, view, err);
  kl_segment *last = rc == KL_OK && view && view->tail.len ? kl_log_last(log) : NULL;
  if (last && kl_segment_hold_tail(last, view->tail.p, view->tail.len) != KL_OK) {
    rc = kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  }
  if (rc) {
    kl_log_close(log);
    return rc;
  }
  *out = log;
  return KL_OK;
}

kl_rc kl_log_open_partition(const kl_env *env, const char *dir, kl_log **out, kl_err *err) {
  kl_rc rc = kl_log_open(env, dir, out, err);
  if (rc || kl_log_first(*out)) return rc;
  const char *hint = kl_log_hint(*out);
  kl_err_set(err, KL_CANTOPEN, "%s is not a Kafka partition directory: it has no <20-digit "
             "offset>.log file%s%s", dir, hint ? "; " : "", hint ? hint : "");
  kl_log_close(*out);
  *out = NULL;
  return KL_CANTOPEN;
}

const char *kl_log_dir(const kl_log *log) { return log->dir; }
const kl_env *kl_log_env(const kl_log *log) { return log->env; }
const char *kl_log_hint(const kl_log *log) { return log->hint[0] ? log->hint : NULL; }
const kl_commit *kl_log_commit(const kl_log *log) { return log->has_commit ? &log->commit : NULL; }
size_t kl_log_segment_count(const kl_log *log) { return kl_skiplist_count(log->segs); }

static kl_segment *seg_of(kl_sknode *n) { return n ? kl_sknode_value(n) : NULL; }

kl_segment *kl_log_first(const kl_log *log) { return seg_of(kl_skiplist_first(log->segs)); }
kl_segment *kl_log_last(const kl_log *log) { return seg_of(kl_skiplist_last(log->segs)); }
kl_segment *kl_log_next(const kl_log *log, const kl_segment *s) {
  (void)log;
  return seg_of(kl_sknode_next(s->node));
}
kl_segment *kl_log_prev(const kl_log *log, const kl_segment *s) {
  (void)log;
  return seg_of(kl_sknode_prev(s->node));
}
kl_segment *kl_log_floor(const kl_log *log, int64_t offset) {
  return seg_of(kl_skiplist_floor(log->segs, offset));
}

int64_t kl_log_start_offset(const kl_log *log) {
  kl_segment *s = kl_log_first(log);
  int64_t start = s ? s->base : 0;
  return log->log_start > start ? log->log_start : start;
}

int64_t kl_log_readable_start(const kl_log *log, int64_t checkpoint_start) {
  int64_t start = kl_log_start_offset(log);
  return checkpoint_start > start ? checkpoint_start : start;
}

kl_rc kl_log_end_offset(kl_log *log, kl_reader *rd, int64_t *leo, kl_err *err) {
  *leo = 0;
  /* An empty last segment (just rolled) ends where it starts, which is
  ** what its tail computes too. */
  kl_segment *s = kl_log_last(log);
  if (!s) return KL_OK;
  const kl_tail *t;
  kl_rc rc = kl_scan_tail(rd, s, &t, err);
  if (rc == KL_OK) *leo = t->next_offset;
  return rc;
}

kl_rc kl_log_lookup_offset(kl_log *log, kl_reader *rd, int64_t offset, kl_offset_lookup *out,
                           kl_err *err) {
  memset(out, 0, sizeof *out);
  int64_t leo;
  kl_rc rc = kl_log_end_offset(log, rd, &leo, err);
  if (rc) return rc;
  kl_segment *s = kl_log_floor(log, offset);
  if (!s || offset < kl_log_start_offset(log) || offset > leo) {
    out->status = KL_LOOKUP_OUT_OF_RANGE;
    return KL_OK;
  }
  kl_seek sk;
  rc = kl_scan_seek_offset(rd, s, offset, &sk, err);
  if (rc) return rc;
  out->segment_base = s->base;
  out->index_offset = sk.index_offset;
  out->index_position = sk.index_position;
  if (offset == leo) {
    out->status = KL_LOOKUP_LOG_END;
    return KL_OK;
  }
  /* A gap at the end of a segment: the answer is in a later one. */
  for (; s; s = kl_log_next(log, s)) {
    rc = kl_scan_find_offset(rd, s, offset, &out->batch, err);
    if (rc == KL_OK && !out->batch.first_known) {
      /* A legacy compressed wrapper knows its first offset only inside. */
      kl_scan sc;
      kl_records it;
      rc = kl_scan_start(&sc, rd, s, out->batch.position, INT64_MAX, out->batch.position, err);
      kl_batch b;
      if (rc == KL_OK) rc = kl_scan_next(&sc, &b, err);
      if (rc == KL_OK) rc = kl_scan_records(&sc, &b, &it, err);
      kl_scan_end(&sc);
      if (rc) return rc;
      out->batch.base_offset = it.b.base_offset;
      out->batch.first_known = 1;
    }
    out->batch.bytes = NULL;
    if (rc == KL_OK) {
      out->read_segment_base = s->base;
      out->status = s->base == out->segment_base ? KL_LOOKUP_OK : KL_LOOKUP_GAP;
      return KL_OK;
    }
    if (rc != KL_NOTFOUND) return rc;
  }
  out->status = KL_LOOKUP_LOG_END;
  return KL_OK;
}

/* In batches from the seek on, the first record with timestamp >= t (or
** == t when exact_ts), control records included, as Kafka's
** LogSegment.findOffsetByTimestamp counts them.  KL_NOTFOUND when the
** segment has none. */
static kl_rc first_record_at_or_after(kl_reader *rd, kl_segment *s, const kl_seek *sk, int64_t t,
                                      int exact_ts, kl_time_lookup *out, kl_err *err) {
  kl_scan sc;
  kl_batch b;
  kl_rc rc = kl_scan_start(&sc, rd, s, sk->start, INT64_MAX, sk->verify_from, err);
  if (rc) return rc;
  int64_t prev = -1;
  while ((rc = kl_scan_next(&sc, &b, err)) == KL_OK || (rc == KL_CORRUPT && rd->skip)) {
    if (rc == KL_CORRUPT) { /* the file changed since the salvage walk */
      kl_err_clear(err);
      continue;
    }
    if (!rd->skip) kl_segment_learn_walked(s, prev, &b); /* a seek again reads nothing */
    prev = b.position;
    if (exact_ts ? b.max_timestamp != t : b.max_timestamp < t) {
      rd->stats->batches_skipped++;
      continue;
    }
    /* A batch whose records' timestamps are known (segment.h) is not
    ** decoded again. */
    const kl_fact *f = rd->skip ? NULL : kl_segment_fact(s, b.position);
    if (f && f->ts && f->b.size == b.size) {
      int32_t i = 0;
      while (i < f->b.record_count &&
             (exact_ts ? kl_fact_ts(f, i) != t : kl_fact_ts(f, i) < t)) {
        i++;
      }
      if (i < f->b.record_count) {
        out->status = KL_LOOKUP_OK;
        out->offset = f->b.base_offset + i;
        out->timestamp = kl_fact_ts(f, i);
        kl_scan_end(&sc);
        return KL_OK;
      }
      continue;
    }
    kl_records it;
    kl_record r;
    kl_err e = {0};
    rc = kl_scan_records(&sc, &b, &it, &e);
    int opened = rc == KL_OK;
    while (rc == KL_OK && (rc = kl_records_next(&it, &r, &e)) == KL_OK) {
      rd->stats->records_decoded++;
      if (r.timestamp >= t) {
        /* A record that decodes is a row, whatever follows it in its
        ** batch (cursor.c: the rows of a batch). */
        out->status = KL_LOOKUP_OK;
        out->offset = r.offset;
        out->timestamp = r.timestamp;
        kl_scan_end(&sc);
        return KL_OK;
      }
    }
    if (rc == KL_DONE) continue;
    if (rc == KL_CORRUPT && rd->skip) continue; /* the rest of the batch is passed over */
    if (opened) kl_scan_batch_error(s, b.position, rc, &e);
    kl_scan_end(&sc);
    return kl_err_set(err, rc, "%s", e.msg);
  }
  kl_scan_end(&sc);
  return rc == KL_DONE ? KL_NOTFOUND : rc;
}

kl_rc kl_log_lookup_time(kl_log *log, kl_reader *rd, int64_t t, kl_time_lookup *out,
                         kl_err *err) {
  memset(out, 0, sizeof *out);
  out->status = KL_LOOKUP_NOT_FOUND;
  out->ti_timestamp = -1;
  kl_rc rc;
  if (t == KL_TS_EARLIEST || t == KL_TS_LATEST) {
    out->status = KL_LOOKUP_OK;
    out->timestamp = -1;
    if (t == KL_TS_EARLIEST) {
      out->offset = kl_log_start_offset(log);
      return KL_OK;
    }
    return kl_log_end_offset(log, rd, &out->offset, err);
  }
  if (t == KL_TS_MAX) {
    /* The first segment holding the largest timestamp, then (Kafka 3.8+)
    ** the first record carrying it, found from the indexed offset. */
    kl_segment *best = NULL;
    int64_t best_ts = -1, best_off = 0;
    for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
      const kl_tail *tl;
      if ((rc = kl_scan_tail(rd, s, &tl, err)) != KL_OK) return rc;
      if (!best || tl->max_timestamp > best_ts) {
        best = s;
        best_ts = tl->max_timestamp;
        best_off = tl->max_ts_offset;
      }
    }
    if (!best || best_ts < 0) return KL_OK;
    kl_seek sk;
    rc = kl_scan_seek_offset(rd, best, best_off, &sk, err);
    if (rc) return rc;
    out->segment_base = best->base;
    rc = first_record_at_or_after(rd, best, &sk, best_ts, 1, out, err);
    return rc == KL_NOTFOUND ? KL_OK : rc;
  }
  return kl_log_seek_time(log, rd, t, out, err);
}

/* Are s's files named by the log's directory and their own name (so that
** dating may name them under a descriptor of the directory)? */
static int in_dir(const kl_log *log, const kl_segment *s) {
  size_t n = strlen(log->dir);
  return (size_t)(s->name - s->log_path) == n + 1 && memcmp(s->log_path, log->dir, n) == 0;
}

/* Segments worth opening their directory for, to date them by name under
** it (two calls more; each saves the kernel a walk of the whole path). */
#define DATE_IN_DIR_MIN 16

/* A helper thread reading the facts that date the segments from
** log->nknown on (dating.h), for those kl_scan_max_timestamp would date
** from their files.  KL_OK with *pass NULL when it does not start: the
** seek dates them on its own. */
static kl_rc begin_pass(kl_log *log, kl_reader *rd, int dirfd, const char ***paths,
                        kl_date_pass **pass) {
  size_t n = log->nseg - log->nknown, want = 0;
  int named = 1; /* every segment dated can be named under dirfd */
  *pass = NULL;
  *paths = kl_malloc(log->env, 2 * n * sizeof **paths);
  if (!*paths) return KL_OK;
  for (size_t i = 0; i < n; i++) {
    const kl_segment *s = log->arr[log->nknown + i];
    int d = kl_scan_datable(rd, s);
    named &= !d || in_dir(log, s);
    (*paths)[2 * i] = d ? s->log_path : NULL;
    (*paths)[2 * i + 1] = d ? s->timeindex_path : NULL;
    want += d;
  }
  if (want <= KL_DATE_PASS_MIN ||
      kl_date_begin(log->env, named ? dirfd : -1, strlen(log->dir) + 1, *paths, n, 1, pass) !=
          KL_OK) {
    kl_free(log->env, *paths);
    *paths = NULL;
  }
  return KL_OK;
}

/* The first segment whose largest timestamp reaches t, or NULL (*s is
** then the first segment to look at: the search goes on from it). */
static kl_rc first_reaching(kl_log *log, kl_reader *rd, int64_t t, kl_segment **s,
                            kl_err *err) {
  *s = kl_log_first(log);
  if (rd->skip || !*s) return KL_OK; /* skip mode dates segments by their salvage */
  if (!log->arr) {
    size_t n = kl_log_segment_count(log);
    log->arr = kl_malloc(log->env, n * sizeof *log->arr);
    log->runmax = kl_malloc(log->env, n * sizeof *log->runmax);
    if (!log->arr || !log->runmax) {
      kl_free(log->env, log->arr);
      kl_free(log->env, log->runmax);
      log->arr = NULL;
      log->runmax = NULL;
      return kl_err_set(err, KL_NOMEM, "out of memory");
    }
    size_t i = 0;
    for (kl_segment *g = *s; g; g = kl_log_next(log, g)) log->arr[i++] = g;
    log->nseg = n;
    log->nknown = 0;
  }
  kl_date_pass *pass = NULL;
  const char **paths = NULL;
  size_t from = log->nknown;
  kl_rc rc = KL_OK;
  int dirfd = -1;
  int dates = log->nknown < log->nseg && (log->nknown == 0 || log->runmax[log->nknown - 1] < t);
  if (dates && log->nseg - from >= DATE_IN_DIR_MIN) {
    dirfd = kl_os_open(log->env, log->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  }
  if (dates && rd->helpers && log->nseg - from > KL_DATE_PASS_MIN) {
    rc = begin_pass(log, rd, dirfd, &paths, &pass);
  }
  while (rc == KL_OK && log->nknown < log->nseg &&
         (log->nknown == 0 || log->runmax[log->nknown - 1] < t)) {
    int64_t m, at;
    kl_segment *g = log->arr[log->nknown];
    const kl_date_facts *f = pass ? kl_date_get(pass, log->nknown - from) : NULL;
    kl_date_facts mine;
    if (!pass && dirfd >= 0 && kl_scan_datable(rd, g) && in_dir(log, g)) {
      kl_date_fetch(log->env, dirfd, strlen(log->dir) + 1, g->log_path, g->timeindex_path,
                    &mine);
      f = &mine;
    }
    rc = kl_scan_max_timestamp_from(rd, g, f, &m, &at, err);
    if (rc) break;
    if (log->nknown > 0 && log->runmax[log->nknown - 1] > m) m = log->runmax[log->nknown - 1];
    log->runmax[log->nknown++] = m;
  }
  if (pass) rd->stats->segments_helped += kl_date_helped(pass);
  kl_date_end(pass);
  kl_free(log->env, paths);
  if (dirfd >= 0) kl_os_close(log->env, dirfd);
  if (rc) return rc;
  size_t lo = 0, hi = log->nknown;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (log->runmax[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  *s = lo < log->nseg ? log->arr[lo] : NULL;
  return KL_OK;
}

/* What seek_time may answer from the batch facts: nothing (the index
** steps are asked for), the first record reaching t, or a floor of it. */
enum { FIND_INDEX = 0, FIND_EXACT, FIND_FLOOR };

/* kl_log_seek_time, kl_log_find_time or kl_log_find_time_floor, by use_facts
** (whole: kl_log_find_time_floor's). */
static kl_rc seek_time(kl_log *log, kl_reader *rd, int64_t t, int use_facts, int whole,
                       kl_time_lookup *out, kl_err *err) {
  memset(out, 0, sizeof *out);
  out->status = KL_LOOKUP_NOT_FOUND;
  out->ti_timestamp = -1;
  kl_segment *from;
  kl_rc rc = first_reaching(log, rd, t, &from, err);
  if (rc) return rc;
  for (kl_segment *s = from; s; s = kl_log_next(log, s)) {
    int64_t mx, at;
    if ((rc = kl_scan_max_timestamp(rd, s, &mx, &at, err)) != KL_OK) return rc;
    if (mx < t) continue;
    int known = !use_facts || rd->skip ? -1
                : use_facts == FIND_FLOOR  ? kl_segment_facts_seek_batch(s, t, &out->offset)
                                           : kl_segment_facts_seek_time(s, t, &out->offset,
                                                                        &out->timestamp);
    if (known < 0 && whole && use_facts == FIND_FLOOR && !rd->skip) {
      /* The scan reads the segment from the floor to its end: a small one is
      ** read whole now rather than sought by its indexes (scan.h
      ** kl_scan_learn_small), and the floor comes from its facts. */
      int learnt;
      if ((rc = kl_scan_learn_small(rd, s, &learnt, err)) != KL_OK) return rc;
      if (learnt) known = kl_segment_facts_seek_batch(s, t, &out->offset);
    }
    if (known == 1 && use_facts == FIND_FLOOR) out->timestamp = -1;
    if (known == 0) continue;
    if (known == 1) {
      out->status = KL_LOOKUP_OK;
      out->segment_base = s->base;
      out->ti_offset = s->base;
      return KL_OK;
    }
    kl_seek sk;
    rc = kl_scan_seek_time(rd, s, t, &sk, err);
    if (rc) return rc;
    out->segment_base = s->base;
    if (sk.ti_slot >= 0) {
      kl_index *tix;
      if ((rc = kl_scan_time_index(rd, s, &tix, err)) != KL_OK) return rc;
      out->ti_timestamp = kl_index_timestamp_at(tix, sk.ti_slot);
      out->ti_offset = kl_index_time_offset_at(tix, sk.ti_slot);
    } else {
      out->ti_timestamp = -1;
      out->ti_offset = s->base;
    }
    out->start_position = sk.index_position;
    const kl_fact *f;
    known = use_facts != FIND_FLOOR || rd->skip
                ? 0
                : kl_segment_facts_follow(s, sk.verify_from, INT64_MIN, t, &f);
    if (known < 0) continue;
    if (known > 0 && f->b.first_known) {
      /* A floor: every batch before the first reaching t, from the index's
      ** entry on, is below t, and so is all before the entry's batch. */
      out->status = KL_LOOKUP_OK;
      out->offset = f->b.base_offset;
      out->timestamp = -1;
      return KL_OK;
    }
    rc = first_record_at_or_after(rd, s, &sk, t, 0, out, err);
    if (rc != KL_NOTFOUND) return rc;
  }
  return KL_OK;
}

kl_rc kl_log_seek_time(kl_log *log, kl_reader *rd, int64_t t, kl_time_lookup *out, kl_err *err) {
  return seek_time(log, rd, t, FIND_INDEX, 0, out, err);
}

kl_rc kl_log_find_time(kl_log *log, kl_reader *rd, int64_t t, kl_time_lookup *out, kl_err *err) {
  return seek_time(log, rd, t, FIND_EXACT, 0, out, err);
}

kl_rc kl_log_find_time_floor(kl_log *log, kl_reader *rd, int64_t t, int whole, kl_time_lookup *out,
                             kl_err *err) {
  return seek_time(log, rd, t, FIND_FLOOR, whole, out, err);
}

kl_rc kl_log_time_reached(kl_log *log, kl_reader *rd, int64_t t, int64_t *offset, int *found,
                          kl_err *err) {
  *found = 0;
  kl_segment *s;
  kl_rc rc = first_reaching(log, rd, t, &s, err);
  for (; rc == KL_OK && s; s = kl_log_next(log, s)) {
    int64_t mx, mx_off;
    if ((rc = kl_scan_max_timestamp(rd, s, &mx, &mx_off, err)) != KL_OK) break;
    if (mx < t) continue;
    kl_index *tix;
    if ((rc = kl_scan_time_index(rd, s, &tix, err)) != KL_OK) break;
    if (!rd->skip && s->tail.known && s->tail.max_timestamp < t) continue; /* misdated */
    int64_t i = kl_index_ceiling(tix, t, rd->stats);
    int holds = 0;
    if (i >= 0 && (rc = kl_scan_time_entry_holds(rd, s, tix, i, &holds, err)) != KL_OK) break;
    /* An entry that does not hold is not trusted: the segment's largest
    ** timestamp is reached later, at its tail's offset. */
    *offset = holds ? kl_index_time_offset_at(tix, i)
                    : !rd->skip && s->tail.known ? s->tail.max_ts_offset : mx_off;
    *found = 1;
    break;
  }
  return rc;
}

void kl_log_smallest_time(kl_log *log, int *known, int *found, int64_t *offset, int64_t *ts) {
  *known = *found = 0;
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    if (!kl_segment_facts_cover(s)) return;
    for (size_t i = 0; i < s->nfacts; i++) {
      const kl_fact *f = &s->facts[i];
      if (!kl_fact_rows(f)) continue;
      if (!f->ts) return;
      if (*found && f->min_ts >= *ts) continue; /* ties: the first keeps it */
      for (int32_t k = 0; k < f->b.record_count; k++) {
        if (kl_fact_ts(f, k) == f->min_ts) {
          *found = 1;
          *offset = f->b.base_offset + k;
          *ts = f->min_ts;
          break;
        }
      }
    }
  }
  *known = 1;
}
