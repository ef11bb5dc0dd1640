/*
** segment.c - a segment's files and what is known about them.
*/
#include "segment.h"

#include <stdio.h>
#include <string.h>

void kl_segset_init(kl_segset *set, int max_open) {
  memset(set, 0, sizeof *set);
  set->max_open = max_open > 0 ? max_open : KL_SEGSET_MAX_OPEN;
}

kl_rc kl_segment_init(kl_segment *s, const kl_env *env, kl_segset *set, int64_t base,
                      const char *log_path) {
  memset(s, 0, sizeof *s);
  s->base = base;
  s->next_base = INT64_MAX;
  s->env = env;
  s->set = set;
  s->log.fd = -1;
  s->zero_from = -1;
  size_t n = strlen(log_path);
  if (n < 4) return KL_MISUSE;
  /* "<p>.log", "<p>.index", "<p>.timeindex" in one block. */
  size_t stem = n - 4;
  char *b = kl_malloc(env, 3 * (stem + 11));
  if (!b) return KL_NOMEM;
  s->log_path = b;
  memcpy(b, log_path, n + 1);
  s->index_path = b + stem + 11;
  snprintf(s->index_path, stem + 11, "%.*s.index", (int)stem, log_path);
  s->timeindex_path = b + 2 * (stem + 11);
  snprintf(s->timeindex_path, stem + 11, "%.*s.timeindex", (int)stem, log_path);
  const char *slash = strrchr(s->log_path, '/');
  s->name = slash ? slash + 1 : s->log_path;
  return KL_OK;
}

static void unlink_open(kl_segment *s) {
  kl_segset *set = s->set;
  if (s->newer) s->newer->older = s->older;
  else set->mru = s->older;
  if (s->older) s->older->newer = s->newer;
  else set->lru = s->newer;
  s->newer = s->older = NULL;
  set->open--;
}

static void link_mru(kl_segment *s) {
  kl_segset *set = s->set;
  s->newer = NULL;
  s->older = set->mru;
  if (set->mru) set->mru->newer = s;
  set->mru = s;
  if (!set->lru) set->lru = s;
  set->open++;
}

void kl_segment_close(kl_segment *s) {
  if (s->oidx_open) kl_index_close(&s->oidx, s->env);
  if (s->tidx_open) kl_index_close(&s->tidx, s->env);
  s->oidx_open = s->tidx_open = 0;
  if (s->opened) {
    kl_file_close(&s->log);
    unlink_open(s);
    s->opened = 0;
  }
}

void kl_segment_free(kl_segment *s) {
  kl_segment_close(s);
  kl_free(s->env, s->salvage.holes);
  kl_free(s->env, s->log_path);
  memset(s, 0, sizeof *s);
  s->log.fd = -1;
}

void kl_segment_pin(kl_segment *s) { s->pins++; }
void kl_segment_unpin(kl_segment *s) {
  if (s->pins > 0) s->pins--;
}

kl_rc kl_segment_open(kl_segment *s, kl_stats *stats, kl_err *err) {
  if (s->opened) {
    if (s->set->mru != s) {
      unlink_open(s);
      link_mru(s);
    }
    return KL_OK;
  }
  kl_rc rc = kl_file_open(&s->log, s->env, s->log_path, err);
  if (rc == KL_NOTFOUND) {
    return kl_err_set(err, KL_IO, "%s: cannot open: No such file or directory (deleted since the "
                      "directory was listed?)", s->log_path);
  }
  if (rc) return rc;
  if (s->seen && (s->log.dev != s->dev || s->log.ino != s->ino || s->log.size != s->size)) {
    int64_t was = s->size, now = s->log.size;
    kl_file_close(&s->log);
    return kl_err_set(err, KL_IO, "%s: the file changed while the log was open (%lld bytes, now "
                      "%lld, or replaced)", s->log_path, (long long)was, (long long)now);
  }
  if (s->log.size > INT32_MAX) { /* positions are int32 in Kafka's indexes and fetches */
    int64_t size = s->log.size;
    kl_file_close(&s->log);
    return kl_err_set(err, KL_CORRUPT, "%s: size %lld exceeds the 2 GiB segment limit",
                      s->log_path, (long long)size);
  }
  s->seen = 1;
  s->size = s->log.size;
  s->dev = s->log.dev;
  s->ino = s->log.ino;
  s->opened = 1;
  link_mru(s);
  if (stats) stats->segments_opened++;
  /* Stay within the bound: close the least recently used that no reader
  ** holds (this one is the most recent). */
  for (kl_segment *o = s->set->lru; o && s->set->open > s->set->max_open;) {
    kl_segment *newer = o->newer;
    if (o != s && o->pins == 0) kl_segment_close(o);
    o = newer;
  }
  return KL_OK;
}

kl_rc kl_segment_index(kl_segment *s, int kind, kl_index **out, kl_err *err) {
  int *open = kind == KL_INDEX_OFFSET ? &s->oidx_open : &s->tidx_open;
  kl_index *ix = kind == KL_INDEX_OFFSET ? &s->oidx : &s->tidx;
  *out = NULL;
  if (!*open) {
    const char *path = kind == KL_INDEX_OFFSET ? s->index_path : s->timeindex_path;
    kl_rc rc = kl_index_open(ix, s->env, kind, path, s->base, s->size, err);
    if (rc) return rc;
    *open = 1;
  }
  *out = ix;
  return KL_OK;
}

int kl_segment_verified(const kl_segment *s, int64_t pos, int32_t size) {
  for (int i = 0; i < KL_VERIFIED_CACHE; i++) {
    if (s->verified[i][0] == pos + 1 && s->verified[i][1] == size) return 1;
  }
  return 0;
}

void kl_segment_set_verified(kl_segment *s, int64_t pos, int32_t size) {
  s->verified[s->verified_next][0] = pos + 1;
  s->verified[s->verified_next][1] = size;
  s->verified_next = (s->verified_next + 1) % KL_VERIFIED_CACHE;
}

kl_rc kl_segment_add_hole(kl_segment *s, int64_t pos, int64_t end, int kind) {
  kl_salvage *m = &s->salvage;
  if (m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 8;
    kl_hole *h = kl_realloc(s->env, m->holes, cap * sizeof *h);
    if (!h) return KL_NOMEM;
    m->holes = h;
    m->cap = cap;
  }
  m->holes[m->n].pos = pos;
  m->holes[m->n].end = end;
  m->holes[m->n].kind = kind;
  m->n++;
  return KL_OK;
}

const kl_hole *kl_segment_hole_at(const kl_segment *s, int64_t pos) {
  size_t lo = 0, hi = s->salvage.n; /* first hole ending after pos */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->salvage.holes[mid].end <= pos) lo = mid + 1;
    else hi = mid;
  }
  if (lo < s->salvage.n && s->salvage.holes[lo].pos <= pos) return &s->salvage.holes[lo];
  return NULL;
}
