/*
** index.c - .index / .timeindex read in pieces, and the two-zone search.
** Layout: format.md sections 7 and 8; search: behaviour.md section 5.
*/
#include "index.h"

#include <string.h>

static const uint8_t kl_zero_slot[12]; /* what a failed read leaves */

/* Mark ix failed with the error e. */
static void fail(kl_index *ix, const kl_err *e) {
  ix->failed = 1;
  if (!ix->ioerr) ix->ioerr = kl_malloc(ix->file.env, sizeof *ix->ioerr);
  if (ix->ioerr) *ix->ioerr = *e;
}

kl_rc kl_index_error(const kl_index *ix, kl_err *err) {
  if (!ix->ioerr) return kl_err_set(err, KL_NOMEM, "out of memory reading %s", ix->file.path);
  return kl_err_set(err, ix->ioerr->rc, "%s", ix->ioerr->msg);
}

const uint8_t *kl_index_slot(const kl_index *cix, int64_t i) {
  if (cix->map) return cix->map + i * cix->kind;
  /* The pieces read are a cache, not part of the index's value: filling
  ** one behind a const pointer changes no answer. */
  kl_index *ix = (kl_index *)cix;
  int64_t c = i / KL_INDEX_CHUNK;
  if (c < 0 || c >= ix->nchunks || ix->failed) return kl_zero_slot;
  if (!ix->chunks[c]) {
    int64_t from = c * KL_INDEX_CHUNK * ix->kind;
    int64_t n = ix->file_len - from < KL_INDEX_CHUNK * ix->kind ? ix->file_len - from
                                                                 : KL_INDEX_CHUNK * ix->kind;
    uint8_t *p = kl_malloc(ix->file.env, (size_t)n);
    kl_err e = {0};
    if (!p) {
      kl_err_set(&e, KL_NOMEM, "out of memory reading %s", ix->file.path);
      fail(ix, &e);
      return kl_zero_slot;
    }
    if (kl_file_read(&ix->file, from, p, (size_t)n, &e) != KL_OK) {
      kl_free(ix->file.env, p);
      fail(ix, &e);
      return kl_zero_slot;
    }
    ix->chunks[c] = p;
  }
  return ix->chunks[c] + (i % KL_INDEX_CHUNK) * ix->kind;
}

static int slot_is_zero(const kl_index *ix, int64_t i) {
  const uint8_t *s = kl_index_slot(ix, i);
  for (int k = 0; k < ix->kind; k++) {
    if (s[k]) return 0;
  }
  return 1;
}

/* Set n, zero_slots, stale and zero_first from the slots of the file. */
static void count(kl_index *ix, int64_t slots, int64_t log_size) {
  int64_t n = slots;
  ix->zero_first = 0;
  /* Preallocated slots are zero and form a suffix: the time index only
  ** grows and a real offset entry has a position above 0, so after slot 0
  ** a zero slot is never followed by a real one.  Slot 0 may be a real
  ** (base, 0) or (0, base) entry: the log decides (kl_index_keep_zero_first). */
  if (slots > 1 && slot_is_zero(ix, slots - 1)) {
    int64_t lo = 1, hi = slots - 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (slot_is_zero(ix, mid)) hi = mid;
      else lo = mid + 1;
    }
    n = lo;
  }
  if (n == 1 && slot_is_zero(ix, 0)) {
    n = 0;
    ix->zero_first = 1;
  }
  ix->zero_slots = slots - n;
  if (ix->kind == KL_INDEX_OFFSET && n > 0 && log_size >= 0 &&
      kl_index_position_at(ix, n - 1) >= log_size) {
    /* Stale entries after a truncation point past the end of the .log;
    ** positions increase, so the live ones are a prefix. */
    int64_t lo = 0, hi = n; /* first entry with position >= log_size */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (kl_index_position_at(ix, mid) >= log_size) hi = mid;
      else lo = mid + 1;
    }
    n = lo;
  }
  ix->n = n;
  ix->stale = slots - ix->zero_slots - n;
}

void kl_index_keep_zero_first(kl_index *ix) {
  if (!ix->zero_first) return;
  ix->zero_first = 0;
  ix->n = 1;
  ix->zero_slots--;
}

void kl_index_mem(kl_index *ix, int kind, const uint8_t *p, size_t len, int64_t base,
                  int64_t log_size) {
  memset(ix, 0, sizeof *ix);
  ix->kind = kind;
  ix->base = base;
  ix->file.fd = -1;
  ix->map = p;
  ix->map_len = len;
  ix->file_len = (int64_t)len;
  count(ix, (int64_t)(len / (size_t)kind), log_size);
}

int64_t kl_index_count(int kind, const uint8_t *p, size_t len, int64_t base, int64_t log_size,
                       int64_t *zero_slots) {
  kl_index ix;
  kl_index_mem(&ix, kind, p, len, base, log_size);
  if (zero_slots) *zero_slots = ix.zero_slots;
  return ix.n;
}

kl_rc kl_index_open(kl_index *ix, const kl_env *env, int kind, const char *path, int64_t base,
                    int64_t log_size, kl_err *err) {
  memset(ix, 0, sizeof *ix);
  ix->kind = kind;
  ix->base = base;
  ix->file_len = -1;
  kl_rc rc = kl_file_open(&ix->file, env, path, err);
  if (rc == KL_NOTFOUND) return KL_OK; /* created lazily by Kafka >= 2.3 */
  if (rc) return rc;
  ix->file_len = ix->file.size;
  if (ix->file_len % kind != 0) {
    ix->unusable = 1; /* Kafka would rebuild it; we scan the .log instead */
    return KL_OK;
  }
  int64_t slots = ix->file_len / kind;
  ix->nchunks = (slots + KL_INDEX_CHUNK - 1) / KL_INDEX_CHUNK;
  if (ix->nchunks > 0) {
    ix->chunks = kl_malloc(env, (size_t)ix->nchunks * sizeof *ix->chunks);
    if (!ix->chunks) {
      kl_index_close(ix, env);
      return kl_err_set(err, KL_NOMEM, "out of memory opening %s", path);
    }
    memset(ix->chunks, 0, (size_t)ix->nchunks * sizeof *ix->chunks);
  }
  count(ix, slots, log_size);
  if (ix->failed) {
    rc = kl_index_error(ix, err);
    kl_index_close(ix, env);
    return rc;
  }
  return KL_OK;
}

void kl_index_close(kl_index *ix, const kl_env *env) {
  for (int64_t c = 0; ix->chunks && c < ix->nchunks; c++) kl_free(env, ix->chunks[c]);
  kl_free(env, ix->chunks);
  ix->chunks = NULL;
  ix->nchunks = 0;
  kl_file_close(&ix->file);
  kl_free(env, ix->ioerr);
  ix->ioerr = NULL;
  ix->map = NULL;
  ix->map_len = 0;
  ix->n = 0;
}

int kl_index_keep(kl_index *ix) {
  if (ix->failed || ix->map || ix->nchunks > KL_INDEX_KEEP_CHUNKS) return 0;
  for (int64_t c = 0; c < ix->nchunks; c++) {
    if (!ix->chunks[c]) return 0;
  }
  kl_file_close(&ix->file);
  return 1;
}

int64_t kl_index_relative_at(const kl_index *ix, int64_t i) {
  const uint8_t *e = kl_index_slot(ix, i);
  return (int64_t)kl_get_u32(ix->kind == KL_INDEX_OFFSET ? e : e + 8);
}
int64_t kl_index_offset_at(const kl_index *ix, int64_t i) {
  return kl_add_sat(ix->base, kl_index_relative_at(ix, i));
}
int64_t kl_index_position_at(const kl_index *ix, int64_t i) {
  return (int64_t)kl_get_u32(kl_index_slot(ix, i) + 4);
}
int64_t kl_index_timestamp_at(const kl_index *ix, int64_t i) {
  return kl_index_entry_timestamp(kl_index_slot(ix, i));
}
int64_t kl_index_time_offset_at(const kl_index *ix, int64_t i) {
  return kl_add_sat(ix->base, kl_index_relative_at(ix, i));
}

void kl_index_put_offset(uint8_t e[KL_INDEX_OFFSET], int64_t base, int64_t offset,
                         int64_t position) {
  kl_put_u32(e, (uint32_t)(offset - base));
  kl_put_u32(e + 4, (uint32_t)position);
}
void kl_index_put_time(uint8_t e[KL_INDEX_TIME], int64_t base, int64_t timestamp,
                       int64_t offset) {
  kl_put_u64(e, (uint64_t)timestamp);
  kl_put_u32(e + 8, (uint32_t)(offset - base));
}
int64_t kl_index_entry_timestamp(const uint8_t e[KL_INDEX_TIME]) { return kl_get_i64(e); }

int64_t kl_index_key(const kl_index *ix, int64_t i) {
  return ix->kind == KL_INDEX_OFFSET ? kl_index_offset_at(ix, i) : kl_index_timestamp_at(ix, i);
}

/* kl_index_key without the calls when slot i's piece is in memory: a
** search probes a dozen slots, and a join's point lookups search once
** each. */
static inline int64_t key_at(const kl_index *ix, int64_t i) {
  const uint8_t *e;
  int64_t c = i / KL_INDEX_CHUNK;
  if (ix->map) e = ix->map + i * ix->kind;
  else if (c >= 0 && c < ix->nchunks && !ix->failed && ix->chunks[c]) {
    e = ix->chunks[c] + (i % KL_INDEX_CHUNK) * ix->kind;
  } else {
    return kl_index_key(ix, i);
  }
  return ix->kind == KL_INDEX_OFFSET ? kl_add_sat(ix->base, (int64_t)kl_get_u32(e))
                                     : kl_get_i64(e);
}

static int64_t probe(const kl_index *ix, int64_t i, kl_stats *stats) {
  if (stats) stats->index_probes++;
  if (ix->probe) ix->probe(ix->probe_ud, i);
  return key_at(ix, i);
}

enum { LLB, SUB };

/* Binary search of [lo, hi] (upper middle, as Kafka), returning the floor
** (LLB) or ceiling (SUB) slot of target. */
static int64_t bsearch_range(const kl_index *ix, int64_t target, int64_t lo, int64_t hi, int kind,
                             kl_stats *stats) {
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    int64_t k = probe(ix, mid, stats);
    if (k > target) hi = mid - 1;
    else if (k < target) lo = mid;
    else return mid;
  }
  /* key(lo) < target here, except when the cold zone is the single slot 0
  ** and its key equals target. */
  if (kind == LLB) return lo;
  if (kl_index_key(ix, lo) >= target) return lo;
  return lo == ix->n - 1 ? -1 : lo + 1;
}

static int64_t two_zone(const kl_index *ix, int64_t target, int kind, kl_stats *stats) {
  int64_t n = ix->n;
  if (n == 0) return -1;
  int64_t warm = KL_WARM_BYTES / ix->kind;
  int64_t first_hot = n - 1 - warm > 0 ? n - 1 - warm : 0;
  if (probe(ix, first_hot, stats) < target) {
    return bsearch_range(ix, target, first_hot, n - 1, kind, stats);
  }
  if (probe(ix, 0, stats) > target) return kind == LLB ? -1 : 0;
  return bsearch_range(ix, target, 0, first_hot, kind, stats);
}

int64_t kl_index_floor(const kl_index *ix, int64_t target, kl_stats *stats) {
  return two_zone(ix, target, LLB, stats);
}

int64_t kl_index_ceiling(const kl_index *ix, int64_t target, kl_stats *stats) {
  return two_zone(ix, target, SUB, stats);
}

int64_t kl_index_floor_classic(const kl_index *ix, int64_t target, kl_stats *stats) {
  if (ix->n == 0) return -1;
  if (probe(ix, 0, stats) > target) return -1;
  return bsearch_range(ix, target, 0, ix->n - 1, LLB, stats);
}
