/*
** segment.c - a segment's files and what is known about them.
*/
#include "segment.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

int kl_segset_bound(long long soft) {
  if (soft < 0) return 3 * KL_SEGSET_MAX_OPEN;
  long long n = soft / 4;
  if (n < 3 * 8) n = 3 * 8;
  return n > 3LL * KL_SEGSET_MAX_BOUND ? 3 * KL_SEGSET_MAX_BOUND : (int)n;
}

int kl_segset_default_bound(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return kl_segset_bound(-1);
  if (rl.rlim_cur == RLIM_INFINITY) return 3 * KL_SEGSET_MAX_BOUND;
  return kl_segset_bound((long long)rl.rlim_cur);
}

void kl_segset_init(kl_segset *set, int max_open) {
  memset(set, 0, sizeof *set);
  set->max_open = max_open > 0 ? max_open : KL_SEGSET_MAX_BOUND;
  set->max_fds = max_open > 0 ? 3 * max_open : kl_segset_default_bound();
  set->max_ts_bytes = KL_SEGSET_MAX_TS_BYTES;
  set->max_end_bytes = KL_SEGSET_MAX_END_BYTES;
}

int kl_segset_room(const kl_segset *set) {
  int n = set->max_fds / 3;
  return n < set->max_open ? n : set->max_open;
}

/* The bytes of the block holding a segment's three paths. */
static size_t paths_size(size_t n) { return 3 * (n - 4 + 11); }

/* Lay the three paths out in b (paths_size bytes). */
static void set_paths(kl_segment *s, char *b, const char *log_path, size_t n) {
  /* "<p>.log", "<p>.index", "<p>.timeindex" in one block. */
  size_t stem = n - 4;
  s->log_path = b;
  memcpy(b, log_path, n + 1);
  s->index_path = b + stem + 11;
  memcpy(s->index_path, log_path, stem);
  memcpy(s->index_path + stem, ".index", sizeof ".index");
  s->timeindex_path = b + 2 * (stem + 11);
  memcpy(s->timeindex_path, log_path, stem);
  memcpy(s->timeindex_path + stem, ".timeindex", sizeof ".timeindex");
  const char *slash = strrchr(s->log_path, '/');
  s->name = slash ? slash + 1 : s->log_path;
}

static void init_fields(kl_segment *s, const kl_env *env, kl_segset *set, int64_t base) {
  memset(s, 0, sizeof *s);
  s->base = base;
  s->next_base = INT64_MAX;
  s->env = env;
  s->set = set;
  s->uid = set ? ++set->uids : 0;
  s->log.fd = -1;
  s->zero_from = -1;
  s->facts_cover = -1;
  s->limit = -1;
}

kl_rc kl_segment_init(kl_segment *s, const kl_env *env, kl_segset *set, int64_t base,
                      const char *log_path) {
  init_fields(s, env, set, base);
  size_t n = strlen(log_path);
  if (n < 4) return KL_MISUSE;
  char *b = kl_malloc(env, paths_size(n));
  if (!b) return KL_NOMEM;
  set_paths(s, b, log_path, n);
  return KL_OK;
}

kl_rc kl_segment_new(const kl_env *env, kl_segset *set, int64_t base, const char *log_path,
                     kl_segment **out) {
  *out = NULL;
  size_t n = strlen(log_path);
  if (n < 4) return KL_MISUSE;
  kl_segment *s = kl_malloc(env, sizeof *s + paths_size(n));
  if (!s) return KL_NOMEM;
  init_fields(s, env, set, base);
  s->paths_inline = 1;
  set_paths(s, (char *)(s + 1), log_path, n);
  *out = s;
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

/* One descriptor more (1) or less (-1) held by s's files. */
static void count_fd(kl_segment *s, int d) {
  if (s->set) s->set->fds += d;
}

/* Close ix's file, keeping its entries when they are all in memory (keep),
** else the whole index (*open = 0). */
static void close_index(kl_segment *s, kl_index *ix, int *open, int keep) {
  int had = ix->file.fd >= 0;
  if (keep && kl_index_keep(ix)) {
    if (had) count_fd(s, -1);
    return;
  }
  kl_index_close(ix, s->env);
  *open = 0;
  if (had) count_fd(s, -1);
}

/* Close the files; small indexes read whole stay in memory unless all
** goes (free). */
static void close_files(kl_segment *s, int all) {
  if (s->oidx_open) close_index(s, &s->oidx, &s->oidx_open, !all);
  if (s->tidx_open) close_index(s, &s->tidx, &s->tidx_open, !all);
  if (s->opened) {
    kl_file_close(&s->log);
    count_fd(s, -1);
    unlink_open(s);
    s->opened = 0;
  }
}

void kl_segment_close(kl_segment *s) { close_files(s, 0); }

void kl_segset_map(kl_segset *set, int map) {
  if (set->map == map) return;
  set->map = map;
  for (kl_segment *o = set->lru; o;) {
    kl_segment *newer = o->newer;
    if (o->pins == 0) kl_segment_close(o);
    o = newer;
  }
}

kl_rc kl_segment_hold_tail(kl_segment *s, const uint8_t *p, size_t n) {
  uint8_t *m = kl_malloc(s->env, n ? n : 1);
  if (!m) return KL_NOMEM;
  memcpy(m, p, n);
  kl_free(s->env, s->mem);
  s->mem = m;
  s->mem_len = n;
  return KL_OK;
}

void kl_segment_free(kl_segment *s) {
  close_files(s, 1);
  kl_free(s->env, s->mem);
  kl_free(s->env, s->salvage.holes);
  kl_free(s->env, s->vpos);
  kl_free(s->env, s->vsize);
  for (size_t i = 0; i < s->nfacts; i++) {
    kl_fact *f = &s->facts[i];
    if (f->kf) {
      if (s->set) s->set->key_bytes -= (size_t)f->kf_words * sizeof *f->kf;
      kl_free(s->env, f->kf);
    }
    if (!f->ts) continue;
    if (s->set) s->set->ts_bytes -= (size_t)f->b.record_count * kl_ts_form_bytes(f->ts_form);
    if (s->set && f->rend) s->set->end_bytes -= (size_t)f->b.record_count * f->rend_w;
    kl_free(s->env, f->ts);
    kl_free(s->env, f->rend);
  }
  if (s->set) s->set->facts -= s->nfacts;
  kl_free(s->env, s->facts);
  kl_free(s->env, s->fpos);
  kl_free(s->env, s->runmax);
  kl_free(s->env, s->sufmin);
  if (!s->paths_inline) kl_free(s->env, s->log_path);
  memset(s, 0, sizeof *s);
  s->log.fd = -1;
}

void kl_segment_pin(kl_segment *s) { s->pins++; }
void kl_segment_unpin(kl_segment *s) {
  if (s->pins > 0) s->pins--;
}

/* The least recently used open segment of s's set that no reader holds,
** or NULL. */
static kl_segment *lru_unpinned(kl_segment *s) {
  for (kl_segment *o = s->set->lru; o; o = o->newer) {
    if (o != s && o->pins == 0) return o;
  }
  return NULL;
}

/* After an open failed with rc (errno e): out of descriptors, close the
** least recently used segment of the set that no reader holds and lower
** the bounds to what is open with the file being opened (the limit may be
** lower than it was, or the host holds more than its share): 1, try again.
** Else 0. */
static int give_back(kl_segment *s, kl_rc rc, int e, kl_err *err) {
  kl_segment *o = rc == KL_CANTOPEN && (e == EMFILE || e == ENFILE) ? lru_unpinned(s) : NULL;
  if (!o) return 0;
  kl_err_clear(err);
  kl_segment_close(o);
  kl_segset *set = s->set;
  if (set->max_open > set->open + 1) set->max_open = set->open + 1;
  if (set->max_fds > set->fds + 1) set->max_fds = set->fds + 1;
  return 1;
}

/* Open the .log, giving back descriptors while the process is out of them. */
static kl_rc open_log(kl_segment *s, kl_err *err) {
  for (;;) {
    kl_rc rc = kl_file_open(&s->log, s->env, s->log_path, err);
    if (!give_back(s, rc, errno, err)) return rc;
  }
}

/* Stay within the bounds: close the least recently used segments that no
** reader holds, other than s (the one just used). */
static void trim(kl_segment *s) {
  kl_segset *set = s->set;
  for (kl_segment *o = set->lru; o && (set->open > set->max_open || set->fds > set->max_fds);) {
    kl_segment *newer = o->newer;
    if (o != s && o->pins == 0) kl_segment_close(o);
    o = newer;
  }
}

kl_rc kl_segment_open(kl_segment *s, kl_stats *stats, kl_err *err) {
  if (s->opened) {
    if (s->set->mru != s) {
      unlink_open(s);
      link_mru(s);
    }
    return KL_OK;
  }
  kl_rc rc = open_log(s, err);
  if (rc == KL_NOTFOUND) {
    /* Removed by retention since the directory was listed: its bytes stay
    ** a while as <name>.deleted (Kafka's delayed deletion), and a reader
    ** goes on with the log as it listed it. */
    char *del = kl_malloc(s->env, strlen(s->log_path) + KL_DELETED_LEN + 1);
    if (del) {
      strcpy(del, s->log_path);
      strcat(del, KL_DELETED_SUFFIX);
      rc = kl_file_open(&s->log, s->env, del, err);
      kl_free(s->env, del);
      s->log.path = s->log_path;
    }
  }
  if (rc == KL_NOTFOUND) {
    return kl_err_set(err, KL_IO, "%s: cannot open: No such file or directory (deleted since the "
                      "directory was listed?)", s->log_path);
  }
  if (rc) return rc;
  if (s->limit >= 0) {
    int64_t disk = s->limit - (int64_t)s->mem_len;
    if (s->log.size < disk) {
      int64_t size = s->log.size;
      kl_file_close(&s->log);
      return kl_err_set(err, KL_CORRUPT, "%s: position %lld: the file ends there, but %lld bytes "
                        "were committed", s->log_path, (long long)size, (long long)disk);
    }
    s->log.size = s->limit;
    s->log.capped = 1;
    if (s->mem) kl_file_hold_tail(&s->log, disk, s->mem);
  }
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
  count_fd(s, 1);
  if (stats) stats->segments_opened++;
  /* Mapped only when the file cannot shrink: a read through the mapping
  ** then never faults (file.h).  A writer's view (its tail in mem) is
  ** read. */
  if (s->set->map && !s->mem && kl_file_map(&s->log) && stats) stats->segments_mapped++;
  trim(s);
  return KL_OK;
}

kl_rc kl_segment_index(kl_segment *s, int kind, kl_index **out, kl_err *err) {
  int *open = kind == KL_INDEX_OFFSET ? &s->oidx_open : &s->tidx_open;
  kl_index *ix = kind == KL_INDEX_OFFSET ? &s->oidx : &s->tidx;
  *out = NULL;
  if (!*open) {
    const char *path = kind == KL_INDEX_OFFSET ? s->index_path : s->timeindex_path;
    kl_rc rc;
    while ((rc = kl_index_open(ix, s->env, kind, path, s->base, s->size, err)) != KL_OK) {
      if (!s->set || !give_back(s, rc, errno, err)) return rc;
    }
    *open = 1;
    /* Counting its entries read a small index whole: its file is of no
    ** more use. */
    if (ix->file.fd >= 0 && !kl_index_keep(ix)) {
      count_fd(s, 1);
      if (s->set) trim(s);
    }
  }
  *out = ix;
  return KL_OK;
}

/* The verified set holds at most this many batches of one segment; when
** full it starts again (1 MiB at most). */
#define KL_VERIFIED_MAX 65536

static size_t vslot(int64_t pos, size_t cap) {
  uint64_t h = (uint64_t)pos * 0x9e3779b97f4a7c15u;
  return (size_t)(h >> 32) & (cap - 1);
}

int kl_segment_verified(const kl_segment *s, int64_t pos, int32_t size) {
  if (s->vcap == 0) return 0;
  for (size_t i = vslot(pos, s->vcap);; i = (i + 1) & (s->vcap - 1)) {
    if (s->vpos[i] == 0) return 0;
    if (s->vpos[i] == pos + 1) return s->vsize[i] == size;
  }
}

void kl_segment_set_verified(kl_segment *s, int64_t pos, int32_t size) {
  if (s->vn + 1 > s->vcap / 2) {
    size_t cap = s->vcap ? s->vcap * 2 : 64;
    if (cap > KL_VERIFIED_MAX) {
      /* Full: forget and start again at the same size. */
      memset(s->vpos, 0, s->vcap * sizeof *s->vpos);
      s->vn = 0;
    } else {
      int64_t *np = kl_malloc(s->env, cap * sizeof *np);
      int32_t *ns = kl_malloc(s->env, cap * sizeof *ns);
      if (!np || !ns) {
        kl_free(s->env, np);
        kl_free(s->env, ns);
        return; /* only an optimisation */
      }
      memset(np, 0, cap * sizeof *np);
      for (size_t i = 0; i < s->vcap; i++) {
        if (!s->vpos[i]) continue;
        size_t j = vslot(s->vpos[i] - 1, cap);
        while (np[j]) j = (j + 1) & (cap - 1);
        np[j] = s->vpos[i];
        ns[j] = s->vsize[i];
      }
      kl_free(s->env, s->vpos);
      kl_free(s->env, s->vsize);
      s->vpos = np;
      s->vsize = ns;
      s->vcap = cap;
    }
  }
  size_t i = vslot(pos, s->vcap);
  while (s->vpos[i] && s->vpos[i] != pos + 1) i = (i + 1) & (s->vcap - 1);
  if (!s->vpos[i]) s->vn++;
  s->vpos[i] = pos + 1;
  s->vsize[i] = size;
}

/* Branch-free: a point lookup's position is random, so the branches of
** the usual search would be mispredicted half the time (profiled: most of
** the search's time); the halving here compiles to a conditional move. */
size_t kl_segment_fact_from(const kl_segment *s, int64_t pos) {
  size_t n = s->nfacts;
  if (n == 0) return 0;
  const int64_t *base = s->fpos;
  while (n > 1) {
    size_t half = n / 2;
    base += (size_t)(base[half - 1] < pos) * half;
    n -= half;
  }
  return (size_t)(base - s->fpos) + (size_t)(*base < pos);
}

kl_fact *kl_segment_fact(const kl_segment *s, int64_t pos) {
  size_t i = kl_segment_fact_from(s, pos);
  return i < s->nfacts && s->fpos[i] == pos ? &s->facts[i] : NULL;
}

kl_fact *kl_segment_learn(kl_segment *s, const kl_batch *b) {
  size_t i = kl_segment_fact_from(s, b->position);
  if (i < s->nfacts && s->facts[i].b.position == b->position) return &s->facts[i];
  if (s->set->facts >= KL_SEGSET_MAX_FACTS) return NULL;
  if (s->nfacts == s->capfacts) {
    size_t cap = s->capfacts ? s->capfacts * 2 : 16;
    int64_t *fp = kl_realloc(s->env, s->fpos, cap * sizeof *fp);
    if (!fp) return NULL;
    s->fpos = fp; /* the larger array holds the same: nothing to undo */
    kl_fact *f = kl_realloc(s->env, s->facts, cap * sizeof *f);
    if (!f) return NULL;
    s->facts = f;
    s->capfacts = cap;
  }
  /* Walks mostly go forward: the new fact is usually the last. */
  memmove(&s->facts[i + 1], &s->facts[i], (s->nfacts - i) * sizeof *s->facts);
  memmove(&s->fpos[i + 1], &s->fpos[i], (s->nfacts - i) * sizeof *s->fpos);
  s->fpos[i] = b->position;
  s->facts_cover = -1;
  s->facts_gen++;
  kl_fact *f = &s->facts[i];
  memset(f, 0, sizeof *f);
  f->b = *b;
  f->b.bytes = NULL;
  f->min_ts = INT64_MAX;
  s->nfacts++;
  s->set->facts++;
  return f;
}

kl_fact *kl_segment_learn_walked(kl_segment *s, int64_t prev, const kl_batch *b) {
  if (prev >= 0) {
    kl_fact *p = kl_segment_fact(s, prev);
    if (p && p->b.position + p->b.size == b->position && !p->linked) {
      p->linked = 1;
      s->facts_cover = -1;
    }
  }
  kl_fact *f = kl_segment_learn(s, b);
  if (f && !f->linked && kl_segment_fact(s, b->position + b->size)) {
    f->linked = 1;
    s->facts_cover = -1;
  }
  return f;
}

int kl_segment_facts_follow(const kl_segment *s, int64_t pos, int64_t offset, int64_t t,
                            const kl_fact **out) {
  size_t i = kl_segment_fact_from(s, pos);
  for (;;) {
    if (i >= s->nfacts || s->facts[i].b.position != pos) return 0;
    const kl_fact *f = &s->facts[i];
    if (f->b.last_offset >= offset && f->b.max_timestamp >= t) {
      *out = f;
      return 1;
    }
    if (f->ends) return -1;
    if (!f->linked) return 0;
    pos = f->b.position + f->b.size;
    i++;
  }
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

/* Does the line from min by step hold each of ts[0..n) within an int16_t
** (KL_TSF_LINE)?  Every ts[i] - min and step are below 2^32 here, so no
** product overflows. */
static int on_line(const int64_t *ts, int32_t n, int64_t min, int64_t step) {
  for (int32_t i = 0; i < n; i++) {
    int64_t d = (ts[i] - min) - (int64_t)i * step;
    if (d < INT16_MIN || d > INT16_MAX) return 0;
  }
  return 1;
}

/* The form (kl_ts_form) that keeps ts[0..n), whose smallest is min when
** decoded, in the fewest bytes; *step is KL_TSF_LINE's. */
static uint8_t ts_form(const int64_t *ts, int32_t n, int64_t min, int decoded, int32_t *step) {
  *step = 0;
  if (!decoded) return KL_TSF_RAW;
  uint64_t spread = 0;
  for (int32_t i = 0; i < n; i++) {
    if (ts[i] < min) return KL_TSF_RAW;
    uint64_t d = (uint64_t)ts[i] - (uint64_t)min;
    if (d > spread) spread = d;
  }
  if (spread <= UINT8_MAX) return KL_TSF_U8;
  if (spread <= UINT16_MAX) return KL_TSF_U16;
  if (spread > UINT32_MAX) return KL_TSF_RAW;
  /* The mean step from the first record to the last, rounded: a line
  ** that rises from the smallest, as a log's timestamps do (falling ones
  ** take four bytes). */
  int64_t rise = ts[n - 1] - ts[0];
  int64_t m = n > 1 && rise > 0 ? (rise + (n - 1) / 2) / (n - 1) : 0;
  if (m > 0 && m <= INT32_MAX && on_line(ts, n, min, m)) {
    *step = (int32_t)m;
    return KL_TSF_LINE;
  }
  return KL_TSF_U32;
}

void kl_segment_learn_ends(kl_segment *s, kl_fact *f, const uint32_t *rend, int32_t n) {
  if (!f->ts || f->rend || n <= 0 || n != f->b.record_count) return;
  uint8_t w = rend[n - 1] <= UINT16_MAX ? 2 : 4; /* ends grow */
  size_t bytes = (size_t)n * w;
  void *r;
  if (s->set->end_bytes + bytes > s->set->max_end_bytes || !(r = kl_malloc(s->env, bytes))) return;
  for (int32_t i = 0; i < n; i++) {
    if (w == 2) ((uint16_t *)r)[i] = (uint16_t)rend[i];
    else ((uint32_t *)r)[i] = rend[i];
  }
  f->rend = r;
  f->rend_w = w;
  s->set->end_bytes += bytes;
}

void kl_segment_learn_records(kl_segment *s, kl_fact *f, const int64_t *ts, const uint32_t *rend,
                              int32_t n) {
  if (f->ts || n <= 0 || n != f->b.record_count) return;
  int32_t step;
  uint8_t form = ts_form(ts, n, f->min_ts, f->decoded, &step);
  size_t bytes = (size_t)n * kl_ts_form_bytes(form);
  void *t;
  if (s->set->ts_bytes + bytes > s->set->max_ts_bytes || !(t = kl_malloc(s->env, bytes))) return;
  for (int32_t i = 0; i < n; i++) {
    uint64_t d = (uint64_t)ts[i] - (uint64_t)f->min_ts; /* below 2^32 but for KL_TSF_RAW */
    switch (form) {
      case KL_TSF_U8: ((uint8_t *)t)[i] = (uint8_t)d; break;
      case KL_TSF_U16: ((uint16_t *)t)[i] = (uint16_t)d; break;
      case KL_TSF_LINE: ((int16_t *)t)[i] = (int16_t)((int64_t)d - (int64_t)i * step); break;
      case KL_TSF_U32: ((uint32_t *)t)[i] = (uint32_t)d; break;
      default: ((int64_t *)t)[i] = ts[i];
    }
  }
  f->ts = t;
  f->ts_form = form;
  f->ts_step = step;
  s->set->ts_bytes += bytes;
  if (rend) kl_segment_learn_ends(s, f, rend, n);
}

void kl_segment_learn_keys(kl_segment *s, kl_fact *f, const uint64_t *kf, size_t words) {
  size_t bytes = words * sizeof *kf;
  if (f->kf || words == 0 || words > UINT32_MAX || s->set->key_bytes + bytes > KL_SEGSET_MAX_KEY_BYTES) {
    return;
  }
  if (!(f->kf = kl_malloc(s->env, bytes))) return;
  memcpy(f->kf, kf, bytes);
  f->kf_words = (uint32_t)words;
  s->set->key_bytes += bytes;
}

int kl_segment_facts_cover(kl_segment *s) {
  if (s->facts_cover >= 0) return s->facts_cover;
  s->facts_cover = 0;
  if (s->nfacts == 0 || s->facts[0].b.position != 0) return 0;
  for (size_t i = 0; i < s->nfacts; i++) {
    const kl_fact *f = &s->facts[i];
    if (f->ends) return s->facts_cover = 1;
    if (!f->linked || i + 1 == s->nfacts ||
        s->facts[i + 1].b.position != f->b.position + f->b.size) {
      return 0;
    }
  }
  return 0;
}

const kl_fact *kl_segment_fact_reaching(const kl_segment *s, int64_t offset) {
  size_t lo = 0, hi = s->nfacts;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->facts[mid].b.last_offset < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->nfacts ? &s->facts[lo] : NULL;
}

/* With facts covering s: the index of the first fact whose running maximum
** of max timestamps reaches t (nfacts when none does), or -1 when the facts
** do not cover s or out of memory.  Its batch holds the first record that
** reaches t: every record before it is below t. */
static int64_t fact_reaching_time(kl_segment *s, int64_t t) {
  if (!kl_segment_facts_cover(s)) return -1;
  if (s->runmax_gen != s->facts_gen + 1) {
    int64_t *m = kl_realloc(s->env, s->runmax, s->nfacts * sizeof *m);
    if (!m) return -1;
    s->runmax = m;
    for (size_t i = 0; i < s->nfacts; i++) {
      int64_t x = s->facts[i].b.max_timestamp;
      m[i] = i > 0 && m[i - 1] > x ? m[i - 1] : x;
    }
    s->runmax_gen = s->facts_gen + 1;
  }
  size_t lo = 0, hi = s->nfacts;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->runmax[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return (int64_t)lo;
}

int kl_segment_facts_seek_batch(kl_segment *s, int64_t t, int64_t *offset) {
  int64_t i = fact_reaching_time(s, t);
  if (i < 0) return -1;
  if ((size_t)i == s->nfacts) return 0;
  const kl_batch *b = &s->facts[i].b;
  if (!b->first_known) return -1; /* a legacy wrapper's first offset */
  *offset = b->base_offset;
  return 1;
}

void kl_segment_decoded(kl_segment *s, kl_fact *f, int64_t min_ts) {
  if (f->decoded) return;
  f->min_ts = min_ts;
  f->decoded = 1;
  s->decoded_n++;
}

int kl_segment_facts_range(kl_segment *s, int64_t *mn, int64_t *mx) {
  if (s->range_gen == s->facts_gen + 1 && s->range_dec == s->decoded_n) {
    *mn = s->range_min;
    *mx = s->range_max;
    return 1;
  }
  /* Only a known answer is kept: once the facts cover the segment no fact
  ** is added (nor a link or an end lost), so nothing but a fact decoded
  ** or added changes it. */
  if (!kl_segment_facts_cover(s)) return 0;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (size_t i = 0; i < s->nfacts; i++) {
    const kl_fact *f = &s->facts[i];
    if (!kl_fact_rows(f)) continue;
    if (!f->decoded) return 0;
    if (f->b.max_timestamp > hi) hi = f->b.max_timestamp;
  }
  /* The smallest from each fact on, from the end back (none kept when out
  ** of memory: kl_segment_facts_rest_above then does not know). */
  int64_t *m = s->nfacts ? kl_realloc(s->env, s->sufmin, s->nfacts * sizeof *m) : NULL;
  if (!m) kl_free(s->env, s->sufmin);
  s->sufmin = m;
  for (size_t i = s->nfacts; i-- > 0;) {
    const kl_fact *f = &s->facts[i];
    if (kl_fact_rows(f) && f->min_ts < lo) lo = f->min_ts;
    if (m) m[i] = lo;
  }
  s->range_min = *mn = lo;
  s->range_max = *mx = hi;
  s->range_gen = s->facts_gen + 1;
  s->range_dec = s->decoded_n;
  return 1;
}

int kl_segment_facts_rest_above(kl_segment *s, size_t i, int64_t t) {
  int64_t mn, mx;
  return kl_segment_facts_range(s, &mn, &mx) && s->sufmin && i < s->nfacts && s->sufmin[i] > t;
}

int kl_segment_facts_seek_time(kl_segment *s, int64_t t, int64_t *offset, int64_t *ts) {
  /* The first batch whose max reaches t holds the first record that does:
  ** every record before it is below t. */
  int64_t lo = fact_reaching_time(s, t);
  if (lo < 0) return -1;
  if ((size_t)lo == s->nfacts) return 0;
  const kl_fact *f = &s->facts[lo];
  if (!f->ts) return -1;
  for (int32_t i = 0; i < f->b.record_count; i++) {
    if (kl_fact_ts(f, i) >= t) {
      *offset = f->b.base_offset + i;
      *ts = kl_fact_ts(f, i);
      return 1;
    }
  }
  return -1; /* its header's max is not among its records: read it */
}

int kl_offset_file_name(const char *name, const char *suffix, int64_t *offset) {
  /* Every name of a directory of thousands of segments passes here: the
  ** suffix first (two names of three are a segment's indexes), one
  ** overflow check, for the 20th digit. */
  size_t n = strlen(suffix);
  if (strlen(name) != 20 + n || memcmp(name + 20, suffix, n) != 0) return 0;
  uint64_t v = 0;
  for (int i = 0; i < 19; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
    v = v * 10 + (uint64_t)(name[i] - '0');
  }
  if (name[19] < '0' || name[19] > '9') return 0;
  unsigned d = (unsigned)(name[19] - '0');
  if (v > ((uint64_t)INT64_MAX - d) / 10) return 0;
  *offset = (int64_t)(v * 10 + d);
  return 1;
}

int kl_segment_name(const char *name, int64_t *base) {
  return kl_offset_file_name(name, ".log", base);
}
