/*
** metalog.c - the snapshots of a metadata partition, and a walk over the
** batches of one (metalog.h).  A snapshot is not a segment (no indexes, a
** name of its own, no torn tail to tolerate), so it is walked here, batch
** by batch through batch.h, rather than through scan.h's segment rules.
*/
#include "metalog.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "batch.h"
#include "cursor.h"
#include "file.h"
#include "metarecord.h"
#include "segment.h"

int kl_msnap_name(const char *name, int64_t *end_offset, int32_t *epoch) {
  static const char suffix[] = ".checkpoint";
  if (strlen(name) != 20 + 1 + 10 + sizeof suffix - 1 || name[20] != '-' ||
      strcmp(name + 31, suffix) != 0) {
    return 0;
  }
  int64_t o = 0, e = 0;
  for (int i = 0; i < 31; i++) {
    if (i == 20) continue;
    if (name[i] < '0' || name[i] > '9') return 0;
    if (i < 20) {
      if (o > (INT64_MAX - 9) / 10) return 0;
      o = o * 10 + (name[i] - '0');
    } else {
      e = e * 10 + (name[i] - '0');
    }
  }
  if (e > INT32_MAX) return 0;
  *end_offset = o;
  *epoch = (int32_t)e;
  return 1;
}

void kl_msnaps_free(const kl_env *env, kl_msnap *s, size_t n) {
  for (size_t i = 0; i < n; i++) kl_free(env, s[i].path);
  kl_free(env, s);
}

static int cmp_snap(const void *a, const void *b) {
  const kl_msnap *x = a, *y = b;
  if (x->end_offset != y->end_offset) return x->end_offset < y->end_offset ? -1 : 1;
  return (x->epoch > y->epoch) - (x->epoch < y->epoch);
}

kl_rc kl_msnaps_list(const kl_env *env, const char *dir, kl_msnap **out, size_t *n, kl_err *err) {
  *out = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return kl_err_set(err, KL_CANTOPEN, "cannot list %s: %s", dir, strerror(errno));
  struct dirent *de;
  size_t cap = 0;
  kl_rc rc = KL_OK;
  while (rc == KL_OK && (de = readdir(d)) != NULL) {
    int64_t off;
    int32_t ep;
    if (!kl_msnap_name(de->d_name, &off, &ep)) continue;
    if (*n == cap) {
      cap = cap ? cap * 2 : 8;
      kl_msnap *s = kl_realloc(env, *out, cap * sizeof *s);
      if (!s) {
        rc = kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
        break;
      }
      *out = s;
    }
    size_t len = strlen(dir) + 1 + strlen(de->d_name) + 1;
    char *p = kl_malloc(env, len);
    if (!p) {
      rc = kl_err_set(err, KL_NOMEM, "out of memory listing %s", dir);
      break;
    }
    snprintf(p, len, "%s/%s", dir, de->d_name);
    (*out)[*n].end_offset = off;
    (*out)[*n].epoch = ep;
    (*out)[*n].path = p;
    (*n)++;
  }
  closedir(d);
  if (rc) {
    kl_msnaps_free(env, *out, *n);
    *out = NULL;
    *n = 0;
    return rc;
  }
  if (*n > 1) qsort(*out, *n, sizeof **out, cmp_snap);
  return KL_OK;
}

struct kl_msnap_walk {
  const kl_env *env;
  kl_stats *stats;
  kl_file f;
  char *path;
  int64_t pos;              /* the next batch */
  kl_buf bytes;             /* the current batch */
  kl_buf scratch;           /* its records, decompressed */
  kl_codec_ctx codec;
  kl_records it;
  int in_batch;
  int64_t last_ts;
};

kl_rc kl_msnap_open(const kl_env *env, const char *path, kl_stats *stats, kl_msnap_walk **out,
                    kl_err *err) {
  kl_msnap_walk *w = kl_malloc(env, sizeof *w);
  if (!w) return kl_err_set(err, KL_NOMEM, "out of memory");
  memset(w, 0, sizeof *w);
  w->env = env;
  w->stats = stats;
  w->last_ts = -1;
  w->f.fd = -1;
  w->path = kl_strdup(env, path);
  kl_rc rc = w->path ? kl_file_open(&w->f, env, w->path, err) : KL_NOMEM;
  if (rc == KL_NOTFOUND) rc = kl_err_set(err, KL_IO, "cannot open %s: it is gone", path);
  if (rc) {
    if (rc == KL_NOMEM) kl_err_set(err, rc, "out of memory");
    kl_msnap_close(w);
    return rc;
  }
  *out = w;
  return KL_OK;
}

void kl_msnap_close(kl_msnap_walk *w) {
  if (!w) return;
  if (w->f.fd >= 0) kl_file_close(&w->f);
  kl_buf_free(w->env, &w->bytes);
  kl_buf_free(w->env, &w->scratch);
  kl_codec_ctx_free(&w->codec);
  kl_free(w->env, w->path);
  kl_free(w->env, w);
}

int64_t kl_msnap_last_ts(const kl_msnap_walk *w) { return w->last_ts; }

/* A control batch of the snapshot: the header's timestamp is kept. */
static kl_rc control(kl_msnap_walk *w, const kl_batch *b, kl_err *err) {
  kl_records it;
  kl_record r;
  kl_rc rc = kl_records_open(&it, w->env, &w->codec, b, &w->scratch, w->stats, err);
  while (rc == KL_OK && (rc = kl_records_next(&it, &r, err)) == KL_OK) {
    /* key: int16 version, int16 type (4: SnapshotHeader); value: int16
    ** version, int64 LastContainedLogTimestamp */
    if (r.key && r.key_len >= 4 && kl_get_i16(r.key + 2) == 4 && r.value && r.value_len >= 10) {
      w->last_ts = kl_get_i64(r.value + 2);
    }
  }
  return rc == KL_DONE ? KL_OK : rc;
}

/* Read and check the batch at w->pos: KL_OK (w->bytes holds it, *b its
** header), KL_DONE at the end of the file. */
static kl_rc read_batch(kl_msnap_walk *w, kl_batch *b, kl_err *err) {
  int64_t left = w->f.size - w->pos;
  if (left == 0) return KL_DONE;
  uint8_t head[12];
  if (left < 12) {
    return kl_err_set(err, KL_CORRUPT, "%s: position %lld: %lld bytes, too few for a batch",
                      w->path, (long long)w->pos, (long long)left);
  }
  kl_rc rc = kl_file_read(&w->f, w->pos, head, 12, err);
  if (rc) return rc;
  int32_t len = kl_get_i32(head + 8);
  if (len < 14 || (uint64_t)len + 12 > KL_MAX_BATCH_BYTES || (int64_t)len + 12 > left) {
    return kl_err_set(err, KL_CORRUPT, "%s: position %lld: batch length %d does not fit the %lld "
                      "bytes left", w->path, (long long)w->pos, (int)len, (long long)left);
  }
  size_t size = (size_t)len + 12;
  if ((rc = kl_buf_reserve(w->env, &w->bytes, size)) != KL_OK) {
    return kl_err_set(err, rc, "out of memory");
  }
  if ((rc = kl_file_read(&w->f, w->pos, w->bytes.p, size, err)) != KL_OK) return rc;
  w->bytes.len = size;
  if (w->stats) w->stats->bytes_read += size, w->stats->reads += 2, w->stats->batch_headers++;
  kl_err e;
  kl_err_clear(&e);
  rc = kl_batch_parse(w->bytes.p, size, b, &e);
  if (rc == KL_OK && b->magic != 2) {
    rc = kl_err_set(&e, KL_CORRUPT, "magic %d (a snapshot holds v2 batches)", (int)b->magic);
  }
  if (rc == KL_OK) {
    if (w->stats) w->stats->crc_checks++;
    rc = kl_batch_verify(b, &e);
  }
  if (rc == KL_DONE) rc = kl_err_set(&e, KL_CORRUPT, "a batch cut short");
  if (rc) {
    return kl_err_set(err, rc == KL_NOMEM ? KL_NOMEM : KL_CORRUPT, "%s: position %lld: %s",
                      w->path, (long long)w->pos, e.msg);
  }
  b->position = w->pos;
  w->pos += (int64_t)size;
  return KL_OK;
}

kl_rc kl_msnap_next(kl_msnap_walk *w, kl_mentry *e, kl_err *err) {
  for (;;) {
    if (w->in_batch) {
      kl_record r;
      kl_err er;
      kl_err_clear(&er);
      kl_rc rc = kl_records_next(&w->it, &r, &er);
      if (rc == KL_OK) {
        if (w->stats) w->stats->records_decoded++;
        e->offset = r.offset;
        e->timestamp = r.timestamp;
        e->leader_epoch = w->it.b.leader_epoch;
        e->value = r.value;
        e->value_len = r.value_len;
        return KL_OK;
      }
      w->in_batch = 0;
      if (rc != KL_DONE) {
        return kl_err_set(err, rc, "%s: batch at position %lld: %s", w->path,
                          (long long)w->it.b.position, er.msg);
      }
    }
    kl_batch b;
    kl_rc rc = read_batch(w, &b, err);
    if (rc) return rc;
    kl_err er;
    kl_err_clear(&er);
    if (b.is_control) rc = control(w, &b, &er);
    else if ((rc = kl_records_open(&w->it, w->env, &w->codec, &b, &w->scratch, w->stats, &er)) == KL_OK) {
      w->it.b.position = b.position;
      w->in_batch = 1;
    }
    if (rc) {
      return kl_err_set(err, rc, "%s: batch at position %lld: %s", w->path, (long long)b.position,
                        er.msg);
    }
  }
}

/* Does dir hold a segment or a snapshot? */
static int holds_metadata(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  struct dirent *de;
  int found = 0;
  while (!found && (de = readdir(d)) != NULL) {
    int64_t o;
    int32_t e;
    found = kl_segment_name(de->d_name, &o) || kl_msnap_name(de->d_name, &o, &e);
  }
  closedir(d);
  return found;
}

kl_rc kl_metalog_dir(const kl_env *env, const char *path, char **out, kl_err *err) {
  struct stat st;
  *out = NULL;
  if (stat(path, &st) != 0) return kl_err_set(err, KL_CANTOPEN, "%s: %s", path, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return kl_err_set(err, KL_CANTOPEN, "%s: not a directory", path);
  size_t len = strlen(path) + sizeof "/__cluster_metadata-0";
  char *p = kl_malloc(env, len);
  if (!p) return kl_err_set(err, KL_NOMEM, "out of memory");
  if (holds_metadata(path)) {
    snprintf(p, len, "%s", path);
  } else {
    snprintf(p, len, "%s/__cluster_metadata-0", path);
    if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
      kl_free(env, p);
      return kl_err_set(err, KL_CANTOPEN, "%s: neither a metadata partition (no segment, no "
                        "snapshot) nor a directory holding __cluster_metadata-0", path);
    }
  }
  *out = p;
  return KL_OK;
}

/* ---- replay ---- */
static kl_rc apply(kl_mimage *img, const kl_env *env, kl_buf *json, const kl_mentry *e,
                   kl_err *err) {
  if (!e->value) return KL_OK; /* metadata records have a value; none, nothing */
  kl_mrec rec;
  kl_rc rc = kl_meta_decode(env, e->value, (size_t)e->value_len, &rec, json, err);
  return rc ? rc : kl_mimage_apply(img, e->offset, &rec, err);
}

/* Open the snapshot s and read its first record (so that its header is
** known): *w and *first, *have 0 when it holds none. */
static kl_rc snap_start(const kl_env *env, const kl_msnap *s, kl_stats *stats, kl_msnap_walk **w,
                        kl_mentry *first, int *have, kl_err *err) {
  kl_rc rc = kl_msnap_open(env, s->path, stats, w, err);
  if (rc) return rc;
  rc = kl_msnap_next(*w, first, err);
  *have = rc == KL_OK;
  if (rc == KL_DONE) rc = KL_OK;
  if (rc) {
    kl_msnap_close(*w);
    *w = NULL;
  }
  return rc;
}

/* Apply the snapshot's records (the first read already). */
static kl_rc snap_apply(kl_msnap_walk *w, kl_mentry *e, int have, kl_mimage *img, const kl_env *env,
                        kl_buf *json, const char *path, kl_err *err) {
  kl_rc rc = KL_OK;
  while (rc == KL_OK && have) {
    kl_err er;
    kl_err_clear(&er);
    kl_mentry in_snap = *e;
    in_snap.offset = -1; /* a snapshot's records have no offset in the log */
    if ((rc = apply(img, env, json, &in_snap, &er)) != KL_OK) {
      return kl_err_set(err, rc, "%s: record %lld: %s", path, (long long)e->offset, er.msg);
    }
    rc = kl_msnap_next(w, e, err);
    if (rc == KL_DONE) return KL_OK;
  }
  return rc;
}

/* The snapshot to start from: the newest fitting q, or none (*w NULL). */
static kl_rc choose(const kl_env *env, const kl_msnap *s, size_t n, kl_stats *stats,
                    const kl_mreplay *q, kl_msnap_walk **w, size_t *which, kl_mentry *first,
                    int *have, kl_err *err) {
  *w = NULL;
  for (size_t i = n; i-- > 0;) {
    if (q->as_of_offset != INT64_MAX && s[i].end_offset - 1 > q->as_of_offset) continue;
    kl_rc rc = snap_start(env, &s[i], stats, w, first, have, err);
    if (rc) return rc;
    if (q->as_of_time == INT64_MAX || kl_msnap_last_ts(*w) <= q->as_of_time) {
      *which = i;
      return KL_OK;
    }
    kl_msnap_close(*w);
    *w = NULL;
  }
  return KL_OK;
}

static kl_rc replay_log(kl_log *log, const kl_env *env, kl_stats *stats, int64_t from,
                        kl_mreplay *q, kl_mimage *img, kl_buf *json, kl_err *err) {
  kl_cursor *cur = NULL;
  kl_rc rc = kl_cursor_new(log, stats, KL_ON_CORRUPT_ERROR, &cur);
  if (rc) return kl_err_set(err, rc, "out of memory");
  kl_bounds b = kl_bounds_all();
  b.off_lo = from;
  b.off_hi = q->as_of_offset;
  rc = kl_cursor_start(cur, &b, err);
  while (rc == KL_OK && (rc = kl_cursor_next(cur, err)) == KL_OK) {
    if ((rc = kl_cursor_load(cur, err)) != KL_OK) break;
    const kl_record *r = kl_cursor_record(cur);
    if (r->timestamp > q->as_of_time) break;
    kl_mentry e = {r->offset, r->timestamp, kl_cursor_batch(cur)->leader_epoch, r->value,
                   r->value_len};
    kl_err er;
    kl_err_clear(&er);
    if ((rc = apply(img, env, json, &e, &er)) != KL_OK) {
      rc = kl_err_set(err, rc, "%s: record at offset %lld: %s", kl_log_dir(log),
                      (long long)r->offset, er.msg);
      break;
    }
    q->last_offset = r->offset;
    q->last_timestamp = r->timestamp;
  }
  kl_cursor_free(cur);
  return rc == KL_DONE ? KL_OK : rc;
}

kl_rc kl_metalog_replay(const kl_env *env, const char *dir, kl_stats *stats, kl_mreplay *q,
                        kl_mimage *img, kl_err *err) {
  q->snapshot = q->last_offset = q->last_timestamp = -1;
  kl_msnap *s = NULL;
  size_t n = 0, which = 0;
  kl_log *log = NULL;
  kl_msnap_walk *w = NULL;
  kl_buf json = {0};
  kl_mentry first;
  int have = 0;
  kl_rc rc = kl_msnaps_list(env, dir, &s, &n, err);
  if (rc == KL_OK) rc = kl_log_open(env, dir, &log, err);
  if (rc == KL_OK) rc = choose(env, s, n, stats, q, &w, &which, &first, &have, err);
  int64_t start = log && kl_log_segment_count(log) ? kl_log_start_offset(log) : 0;
  if (rc == KL_OK && w && s[which].end_offset < start) {
    rc = kl_err_set(err, KL_CORRUPT, "%s: snapshot %s ends at offset %lld, below the log start "
                    "%lld: the records between are gone", dir, s[which].path,
                    (long long)s[which].end_offset, (long long)start);
  } else if (rc == KL_OK && !w && start > 0 && n == 0) {
    rc = kl_err_set(err, KL_CORRUPT, "%s: the log starts at offset %lld and no snapshot holds "
                    "what lies below it", dir, (long long)start);
  } else if (rc == KL_OK && !w && start > 0) {
    rc = kl_err_set(err, KL_RANGE, "%s: the log starts at offset %lld and its oldest snapshot "
                    "ends at offset %lld: what the metadata said before that is gone", dir,
                    (long long)start, (long long)s[0].end_offset);
  }
  if (rc == KL_OK && w) {
    rc = snap_apply(w, &first, have, img, env, &json, s[which].path, err);
    q->snapshot = s[which].end_offset;
    q->last_offset = s[which].end_offset - 1;
    q->last_timestamp = kl_msnap_last_ts(w);
  }
  if (rc == KL_OK) rc = replay_log(log, env, stats, w ? s[which].end_offset : 0, q, img, &json, err);
  kl_msnap_close(w);
  kl_log_close(log);
  kl_msnaps_free(env, s, n);
  kl_buf_free(env, &json);
  return rc;
}
