/*
** segment.c - one <base>.log with its .index and .timeindex.
** Behaviour: behaviour.md sections 4 (read by offset) and 6 (by time).
*/
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

kl_rc kl_segment_init(kl_segment *s, const kl_env *env, int64_t base, const char *log_path) {
  memset(s, 0, sizeof *s);
  s->base = base;
  s->fd = -1;
  s->log_path = kl_strdup(env, log_path);
  if (!s->log_path) return KL_NOMEM;
  const char *slash = strrchr(s->log_path, '/');
  s->name = slash ? slash + 1 : s->log_path;
  return KL_OK;
}

void kl_segment_close(kl_segment *s, const kl_env *env) {
  if (s->map) munmap((void *)s->map, (size_t)s->size);
  if (s->fd >= 0) close(s->fd);
  kl_index_close(&s->oidx);
  kl_index_close(&s->tidx);
  kl_free(env, s->log_path);
  memset(s, 0, sizeof *s);
  s->fd = -1;
}

/* Path of a sibling file: the .log path with another suffix. */
static void sibling(const kl_segment *s, const char *suffix, char *buf, size_t n) {
  size_t len = strlen(s->log_path);
  snprintf(buf, n, "%.*s%s", (int)(len - 4), s->log_path, suffix);
}

kl_rc kl_segment_open(kl_segment *s, kl_stats *stats, kl_err *err) {
  if (s->opened) return KL_OK;
  int fd = open(s->log_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kl_err_set(err, KL_IO, "%s: cannot open: %s", s->log_path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return kl_err_set(err, KL_IO, "%s: cannot stat: %s", s->log_path, strerror(e));
  }
  if (st.st_size > INT32_MAX) {
    close(fd); /* positions are int32 in Kafka's indexes and fetches */
    return kl_err_set(err, KL_CORRUPT, "%s: size %lld exceeds the 2 GiB segment limit",
                      s->log_path, (long long)st.st_size);
  }
  if (st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      close(fd);
      return kl_err_set(err, KL_IO, "%s: cannot map: %s", s->log_path, strerror(e));
    }
    s->map = m;
  }
  close(fd);
  s->size = st.st_size;
  char path[4096];
  sibling(s, ".index", path, sizeof path);
  kl_rc rc = kl_index_open(&s->oidx, KL_INDEX_OFFSET, path, s->base, s->size, err);
  if (rc == KL_OK) {
    sibling(s, ".timeindex", path, sizeof path);
    rc = kl_index_open(&s->tidx, KL_INDEX_TIME, path, s->base, s->size, err);
  }
  if (rc) {
    kl_index_close(&s->oidx);
    if (s->map) munmap((void *)s->map, (size_t)s->size);
    s->map = NULL;
    return rc;
  }
  s->opened = 1;
  if (stats) stats->segments_opened++;
  return KL_OK;
}

/* A preallocated .log (log.preallocate=true) ends in zeros; Kafka's
** recovery truncates there, so it is the end of the data, not damage. */
static int zero_tail(const kl_segment *s, int64_t pos) {
  for (int64_t i = pos; i < s->size; i++) {
    if (s->map[i]) return 0;
  }
  return 1;
}

kl_rc kl_segment_batch_at(kl_segment *s, int64_t pos, kl_batch *b, kl_stats *stats,
                          kl_err *err) {
  if (pos >= s->size) return KL_DONE;
  kl_err e = {0};
  b->position = pos;
  if (stats) stats->batch_headers++;
  kl_rc rc = kl_batch_parse(s->map + pos, (size_t)(s->size - pos), b, &e);
  if (rc == KL_CORRUPT) {
    if (zero_tail(s, pos)) return KL_DONE;
    return kl_err_set(err, rc, "%s: position %lld: %s", s->log_path, (long long)pos, e.msg);
  }
  if (rc == KL_OK && b->base_offset < s->base && b->magic == 2) {
    return kl_err_set(err, KL_CORRUPT, "%s: position %lld: batch offset %lld below the segment base %lld",
                      s->log_path, (long long)pos, (long long)b->base_offset, (long long)s->base);
  }
  return rc;
}

kl_rc kl_segment_verify(kl_segment *s, const kl_batch *b, kl_stats *stats, kl_err *err) {
  /* A lookup checks the batch an index entry points to, then reads it:
  ** remember the last batch verified so its CRC is computed once. */
  if (s->verified_pos == b->position + 1 && s->verified_size == b->size) return KL_OK;
  kl_err e = {0};
  if (stats) stats->crc_checks++;
  if (kl_batch_verify(b, &e)) {
    return kl_err_set(err, KL_CORRUPT, "%s: position %lld: %s", s->log_path,
                      (long long)b->position, e.msg);
  }
  s->verified_pos = b->position + 1;
  s->verified_size = b->size;
  return KL_OK;
}

/*
** Is the offset index entry in slot usable for a scan towards target?  The
** batch it points to must be intact and must not start after target: then,
** offsets being increasing in a log, nothing at or above target lies before
** it.  For a legacy compressed wrapper the first offset is unknown without
** decompressing, so the entry must agree with both index generations
** instead (key = first offset before Kafka 2.0, last offset since).
*/
static int entry_holds(kl_segment *s, int64_t slot, int64_t target, kl_stats *stats) {
  int64_t key = kl_index_offset_at(&s->oidx, slot);
  int64_t pos = kl_index_position_at(&s->oidx, slot);
  kl_batch b;
  kl_err e = {0};
  if (pos <= 0 || key > target) return 0;
  if (slot > 0 && (kl_index_offset_at(&s->oidx, slot - 1) >= key ||
                   kl_index_position_at(&s->oidx, slot - 1) >= pos)) {
    return 0;
  }
  if (kl_segment_batch_at(s, pos, &b, stats, &e) != KL_OK) return 0;
  if (kl_segment_verify(s, &b, stats, &e) != KL_OK) return 0;
  if (b.first_known) return b.base_offset <= target;
  return b.last_offset >= key &&
         (slot == 0 || b.last_offset > kl_index_offset_at(&s->oidx, slot - 1));
}

kl_rc kl_segment_seek_offset(kl_segment *s, int64_t target, int64_t *pos, int64_t *slot,
                             kl_stats *stats, kl_err *err) {
  kl_rc rc = kl_segment_open(s, stats, err);
  if (rc) return rc;
  *pos = 0;
  *slot = -1;
  if (s->oidx.unusable) {
    if (stats) stats->index_fallbacks++;
    return KL_OK;
  }
  int64_t i = kl_index_floor(&s->oidx, target, stats);
  if (i < 0) return KL_OK;
  if (!entry_holds(s, i, target, stats)) {
    if (stats) stats->index_fallbacks++;
    return KL_OK;
  }
  *pos = kl_index_position_at(&s->oidx, i);
  *slot = i;
  return KL_OK;
}

kl_rc kl_segment_find_offset(kl_segment *s, int64_t target, kl_batch *b, kl_stats *stats,
                             kl_err *err) {
  int64_t pos, slot;
  kl_rc rc = kl_segment_seek_offset(s, target, &pos, &slot, stats, err);
  while (rc == KL_OK) {
    rc = kl_segment_batch_at(s, pos, b, stats, err);
    if (rc == KL_DONE) return KL_NOTFOUND;
    if (rc == KL_OK && b->last_offset >= target) return KL_OK;
    pos += b->size;
  }
  return rc;
}

/*
** Does time index slot i describe the log?  Its entry (T, O) says the
** running maximum timestamp first reached T in the batch holding O, so that
** batch's max timestamp must be T (true for every Kafka version: O is the
** batch's last offset since 3.8, the exact record before), and entries must
** grow.  A garbage entry that passed the count at open fails here, and the
** segment is then read without its time index.
*/
static int time_entry_holds(kl_segment *s, int64_t i, kl_stats *stats) {
  int64_t t = kl_index_timestamp_at(&s->tidx, i);
  int64_t o = kl_index_time_offset_at(&s->tidx, i);
  if (i > 0 && (kl_index_timestamp_at(&s->tidx, i - 1) >= t ||
                kl_index_time_offset_at(&s->tidx, i - 1) > o)) {
    return 0;
  }
  kl_batch b;
  kl_err e = {0};
  if (kl_segment_find_offset(s, o, &b, stats, &e) != KL_OK) return 0;
  if (b.first_known && b.base_offset > o) return 0;
  return b.max_timestamp == t;
}

/* Scan batch headers from pos to the end of the data. */
static kl_rc scan_headers(kl_segment *s, int64_t pos, int64_t *next, int64_t *max_ts,
                          int64_t *max_off, int64_t *end, kl_stats *stats, kl_err *err) {
  kl_batch b;
  kl_rc rc;
  while ((rc = kl_segment_batch_at(s, pos, &b, stats, err)) == KL_OK) {
    if (b.max_timestamp > *max_ts) {
      *max_ts = b.max_timestamp;
      *max_off = b.last_offset;
    }
    *next = b.last_offset + 1;
    pos += b.size;
  }
  *end = pos;
  return rc == KL_DONE ? KL_OK : rc;
}

kl_rc kl_segment_tail(kl_segment *s, kl_stats *stats, kl_err *err) {
  if (s->tail_known) return KL_OK;
  kl_rc rc = kl_segment_open(s, stats, err);
  if (rc) return rc;
  /* The next offset: scan batch headers from the last offset index entry. */
  int64_t pos = 0;
  if (s->oidx.n > 0) {
    int64_t last = s->oidx.n - 1;
    if (entry_holds(s, last, kl_index_offset_at(&s->oidx, last), stats)) {
      pos = kl_index_position_at(&s->oidx, last);
    } else if (stats) {
      stats->index_fallbacks++;
    }
  }
  int64_t next = s->base, max_ts = -1, max_off = s->base;
  rc = scan_headers(s, pos, &next, &max_ts, &max_off, &s->end, stats, err);
  if (rc) return rc;
  /* Time index entries at or past the next offset are stale (a truncation
  ** left them); offsets in the time index never decrease. */
  int64_t lo = 0, hi = s->tidx.n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (kl_index_time_offset_at(&s->tidx, mid) >= next) hi = mid;
    else lo = mid + 1;
  }
  s->tidx.stale += s->tidx.n - lo;
  s->tidx.n = lo;
  if (s->tidx.n > 0 && !time_entry_holds(s, s->tidx.n - 1, stats)) {
    s->tidx.n = 0;
    s->tidx.unusable = 1;
    if (stats) stats->index_fallbacks++;
  }
  /* The largest timestamp: the time index entry written with the last
  ** offset index entry covers everything before that chunk, the scan the
  ** rest (a live segment lacks the final entry written on roll).  Without
  ** a time index nothing is covered: scan the whole segment. */
  if (s->tidx.n > 0) {
    int64_t t = kl_index_timestamp_at(&s->tidx, s->tidx.n - 1);
    if (t >= max_ts) { /* on a tie the indexed (earlier) offset reached it first */
      max_ts = t;
      max_off = kl_index_time_offset_at(&s->tidx, s->tidx.n - 1);
    }
  } else if (pos > 0) {
    int64_t n2 = s->base, end2;
    max_ts = -1;
    max_off = s->base;
    rc = scan_headers(s, 0, &n2, &max_ts, &max_off, &end2, stats, err);
    if (rc) return rc;
  }
  s->next_offset = next;
  s->max_timestamp = max_ts;
  s->max_ts_offset = max_off;
  s->tail_known = 1;
  return KL_OK;
}

kl_rc kl_segment_seek_time(kl_segment *s, int64_t t, int64_t *pos, int64_t *ti_slot,
                           kl_stats *stats, kl_err *err) {
  kl_rc rc = kl_segment_tail(s, stats, err);
  if (rc) return rc;
  int64_t i = kl_index_floor(&s->tidx, t, stats);
  if (i >= 0 && !time_entry_holds(s, i, stats)) {
    if (stats) stats->index_fallbacks++;
    *ti_slot = -1;
    *pos = 0;
    return KL_OK;
  }
  int64_t o = i < 0 ? s->base : kl_index_time_offset_at(&s->tidx, i);
  *ti_slot = i;
  int64_t slot;
  return kl_segment_seek_offset(s, o, pos, &slot, stats, err);
}
