/*
** log.c - a partition directory: segment map and Kafka's lookups.
*/
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "skiplist.h"

struct kl_log {
  const kl_env *env;
  char *dir;                /* the directory as given */
  kl_skiplist *segs;        /* base offset -> kl_segment* */
  kl_stats stats;           /* everything done through this log */
  kl_buf scratch;           /* decompression for lookups by time */
};

/* "<20 digits>.log" and nothing else (not .log.deleted, .log.swap, ...). */
static int segment_name(const char *name, int64_t *base) {
  if (strlen(name) != 24 || strcmp(name + 20, ".log") != 0) return 0;
  int64_t v = 0;
  for (int i = 0; i < 20; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
    int d = name[i] - '0';
    if (v > (INT64_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  *base = v;
  return 1;
}

void kl_log_close(kl_log *log) {
  if (!log) return;
  const kl_env *env = log->env;
  if (log->segs) {
    for (kl_sknode *n = kl_skiplist_first(log->segs); n; n = kl_sknode_next(n)) {
      kl_segment *s = kl_sknode_value(n);
      kl_segment_close(s, env);
      kl_free(env, s);
    }
    kl_skiplist_free(log->segs);
  }
  kl_buf_free(env, &log->scratch);
  kl_free(env, log->dir);
  kl_free(env, log);
}

kl_rc kl_log_open(const kl_env *env, const char *dir, kl_log **out, kl_err *err) {
  *out = NULL;
  kl_log *log = kl_malloc(env, sizeof *log);
  if (!log) return kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  memset(log, 0, sizeof *log);
  log->env = env;
  log->dir = kl_strdup(env, dir);
  log->segs = kl_skiplist_new(env);
  if (!log->dir || !log->segs) {
    kl_log_close(log);
    return kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  }
  DIR *d = opendir(dir);
  if (!d) {
    int e = errno;
    kl_log_close(log);
    return kl_err_set(err, KL_IO, "cannot open partition directory %s: %s", dir, strerror(e));
  }
  kl_rc rc = KL_OK;
  struct dirent *de;
  char path[4096];
  while (rc == KL_OK && (de = readdir(d)) != NULL) {
    int64_t base;
    if (!segment_name(de->d_name, &base)) continue;
    if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) {
      rc = kl_err_set(err, KL_IO, "%s: path too long", dir);
      break;
    }
    kl_segment *s = kl_malloc(env, sizeof *s);
    if (!s) {
      rc = KL_NOMEM;
    } else if ((rc = kl_segment_init(s, env, base, path)) != KL_OK) {
      kl_free(env, s);
    } else if ((rc = kl_skiplist_insert(log->segs, base, s)) != KL_OK) {
      kl_segment_close(s, env);
      kl_free(env, s);
    }
    if (rc == KL_NOMEM) kl_err_set(err, KL_NOMEM, "out of memory opening %s", dir);
  }
  closedir(d);
  if (rc) {
    kl_log_close(log);
    return rc;
  }
  for (kl_sknode *n = kl_skiplist_first(log->segs); n; n = kl_sknode_next(n)) {
    kl_segment *s = kl_sknode_value(n);
    s->node = n;
    s->is_last = kl_sknode_next(n) == NULL;
  }
  *out = log;
  return KL_OK;
}

const char *kl_log_dir(const kl_log *log) { return log->dir; }
const kl_env *kl_log_env(const kl_log *log) { return log->env; }
kl_stats *kl_log_stats(kl_log *log) { return &log->stats; }
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
  return s ? s->base : 0;
}

kl_rc kl_log_end_offset(kl_log *log, int64_t *leo, kl_err *err) {
  *leo = 0;
  /* An empty last segment (just rolled) ends where it starts, which is
  ** what its tail computes too. */
  kl_segment *s = kl_log_last(log);
  if (!s) return KL_OK;
  kl_rc rc = kl_segment_tail(s, &log->stats, err);
  if (rc == KL_OK) *leo = s->next_offset;
  return rc;
}

kl_rc kl_log_lookup_offset(kl_log *log, int64_t offset, kl_offset_lookup *out, kl_err *err) {
  memset(out, 0, sizeof *out);
  int64_t leo;
  kl_rc rc = kl_log_end_offset(log, &leo, err);
  if (rc) return rc;
  kl_segment *s = kl_log_floor(log, offset);
  if (!s || offset < kl_log_start_offset(log) || offset > leo) {
    out->status = KL_LOOKUP_OUT_OF_RANGE;
    return KL_OK;
  }
  int64_t pos, slot;
  rc = kl_segment_seek_offset(s, offset, &pos, &slot, &log->stats, err);
  if (rc) return rc;
  out->segment_base = s->base;
  out->index_offset = slot < 0 ? s->base : kl_index_offset_at(&s->oidx, slot);
  out->index_position = pos;
  if (offset == leo) {
    out->status = KL_LOOKUP_LOG_END;
    return KL_OK;
  }
  /* A gap at the end of a segment: the answer is in a later one. */
  for (; s; s = kl_log_next(log, s)) {
    rc = kl_segment_find_offset(s, offset, &out->batch, &log->stats, err);
    if (rc == KL_OK && !out->batch.first_known) {
      /* A legacy compressed wrapper knows its first offset only inside. */
      kl_records it;
      rc = kl_segment_verify(s, &out->batch, &log->stats, err);
      if (rc == KL_OK) {
        rc = kl_records_open(&it, log->env, &out->batch, &log->scratch, &log->stats, err);
      }
      if (rc) return rc;
      out->batch.base_offset = it.b.base_offset;
      out->batch.first_known = 1;
    }
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

/* In batches from pos on, the first record with timestamp >= t (control
** records count, as in Kafka's LogSegment.findOffsetByTimestamp). */
static kl_rc first_record_at_or_after(kl_log *log, kl_segment *s, int64_t pos, int64_t t,
                                      int exact_ts, kl_time_lookup *out, kl_err *err) {
  kl_batch b;
  kl_rc rc;
  while ((rc = kl_segment_batch_at(s, pos, &b, &log->stats, err)) == KL_OK) {
    pos += b.size;
    if (exact_ts ? b.max_timestamp != t : b.max_timestamp < t) {
      log->stats.batches_skipped++;
      continue;
    }
    if ((rc = kl_segment_verify(s, &b, &log->stats, err)) != KL_OK) return rc;
    kl_records it;
    kl_record r;
    rc = kl_records_open(&it, log->env, &b, &log->scratch, &log->stats, err);
    while (rc == KL_OK && (rc = kl_records_next(&it, &r, err)) == KL_OK) {
      log->stats.records_decoded++;
      if (r.timestamp >= t) {
        out->status = KL_LOOKUP_OK;
        out->offset = r.offset;
        out->timestamp = r.timestamp;
        return KL_OK;
      }
    }
    if (rc != KL_DONE) {
      return rc == KL_CORRUPT ? kl_err_set(err, rc, "%s: position %lld: batch records are corrupt",
                                           s->log_path, (long long)b.position)
                              : rc;
    }
  }
  if (rc == KL_DONE) out->status = KL_LOOKUP_NOT_FOUND;
  return rc == KL_DONE ? KL_OK : rc;
}

kl_rc kl_log_lookup_time(kl_log *log, int64_t t, kl_time_lookup *out, kl_err *err) {
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
    return kl_log_end_offset(log, &out->offset, err);
  }
  if (t == KL_TS_MAX) {
    /* The first segment holding the largest timestamp, then (Kafka 3.8+)
    ** the first record carrying it, found from the indexed offset. */
    kl_segment *best = NULL;
    for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
      if ((rc = kl_segment_tail(s, &log->stats, err)) != KL_OK) return rc;
      if (!best || s->max_timestamp > best->max_timestamp) best = s;
    }
    if (!best || best->max_timestamp < 0) return KL_OK;
    int64_t pos, slot;
    rc = kl_segment_seek_offset(best, best->max_ts_offset, &pos, &slot, &log->stats, err);
    if (rc) return rc;
    out->segment_base = best->base;
    return first_record_at_or_after(log, best, pos, best->max_timestamp, 1, out, err);
  }
  return kl_log_seek_time(log, t, out, err);
}

kl_rc kl_log_seek_time(kl_log *log, int64_t t, kl_time_lookup *out, kl_err *err) {
  memset(out, 0, sizeof *out);
  out->status = KL_LOOKUP_NOT_FOUND;
  out->ti_timestamp = -1;
  kl_rc rc;
  for (kl_segment *s = kl_log_first(log); s; s = kl_log_next(log, s)) {
    if ((rc = kl_segment_tail(s, &log->stats, err)) != KL_OK) return rc;
    if (s->max_timestamp < t) continue;
    int64_t pos, slot;
    rc = kl_segment_seek_time(s, t, &pos, &slot, &log->stats, err);
    if (rc) return rc;
    out->segment_base = s->base;
    if (slot >= 0) {
      out->ti_timestamp = kl_index_timestamp_at(&s->tidx, slot);
      out->ti_offset = kl_index_time_offset_at(&s->tidx, slot);
    } else {
      out->ti_offset = s->base;
    }
    out->start_position = pos;
    return first_record_at_or_after(log, s, pos, t, 0, out, err);
  }
  return KL_OK;
}
