/*
** index.c - memory-mapped .index / .timeindex and the two-zone search.
** Layout: format.md sections 7 and 8; search: behaviour.md section 5.
*/
#include "index.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int slot_is_zero(const uint8_t *p, int kind, int64_t i) {
  const uint8_t *s = p + i * kind;
  for (int k = 0; k < kind; k++) {
    if (s[k]) return 0;
  }
  return 1;
}

int64_t kl_index_count(int kind, const uint8_t *p, size_t len, int64_t base, int64_t log_size,
                       int64_t *zero_slots) {
  (void)base;
  int64_t slots = (int64_t)(len / (size_t)kind);
  int64_t n = slots;
  /* Preallocated slots are zero and form a suffix: Kafka never writes an
  ** entry for position 0 (so (0,0) is never a real offset entry) and the
  ** time index only grows, so a zero slot is never followed by a real one. */
  if (slots > 0 && slot_is_zero(p, kind, slots - 1)) {
    int64_t lo = 0, hi = slots - 1;
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (slot_is_zero(p, kind, mid)) hi = mid;
      else lo = mid + 1;
    }
    n = lo;
  }
  if (zero_slots) *zero_slots = slots - n;
  if (kind == KL_INDEX_OFFSET && n > 0 && log_size >= 0 &&
      (int64_t)kl_get_u32(p + (n - 1) * 8 + 4) >= log_size) {
    /* Stale entries after a truncation point past the end of the .log;
    ** positions increase, so the live ones are a prefix. */
    int64_t lo = 0, hi = n; /* first entry with position >= log_size */
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if ((int64_t)kl_get_u32(p + mid * 8 + 4) >= log_size) hi = mid;
      else lo = mid + 1;
    }
    n = lo;
  }
  return n;
}

kl_rc kl_index_open(kl_index *ix, int kind, const char *path, int64_t base, int64_t log_size,
                    kl_err *err) {
  memset(ix, 0, sizeof *ix);
  ix->kind = kind;
  ix->base = base;
  ix->file_len = -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return KL_OK; /* created lazily by Kafka >= 2.3 */
    return kl_err_set(err, KL_IO, "%s: cannot open: %s", path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return kl_err_set(err, KL_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  ix->file_len = st.st_size;
  if (st.st_size % kind != 0) {
    ix->unusable = 1; /* Kafka would rebuild it; we scan the .log instead */
  } else if (st.st_size > 0) {
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      int e = errno;
      close(fd);
      return kl_err_set(err, KL_IO, "%s: cannot map: %s", path, strerror(e));
    }
    /* Searches touch a few scattered entries: read-around of megabytes on
    ** every fault would make a cold first lookup cost as much as the file. */
    madvise(m, (size_t)st.st_size, MADV_RANDOM);
    ix->map = m;
    ix->map_len = (size_t)st.st_size;
    ix->n = kl_index_count(kind, ix->map, ix->map_len, base, log_size, &ix->zero_slots);
    ix->stale = (int64_t)(ix->map_len / (size_t)kind) - ix->zero_slots - ix->n;
  }
  close(fd);
  return KL_OK;
}

void kl_index_close(kl_index *ix) {
  if (ix->map) munmap((void *)ix->map, ix->map_len);
  ix->map = NULL;
  ix->map_len = 0;
  ix->n = 0;
}

int64_t kl_index_offset_at(const kl_index *ix, int64_t i) {
  return ix->base + (int64_t)kl_get_u32(ix->map + i * 8);
}
int64_t kl_index_position_at(const kl_index *ix, int64_t i) {
  return (int64_t)kl_get_u32(ix->map + i * 8 + 4);
}
int64_t kl_index_timestamp_at(const kl_index *ix, int64_t i) {
  return kl_get_i64(ix->map + i * 12);
}
int64_t kl_index_time_offset_at(const kl_index *ix, int64_t i) {
  return ix->base + (int64_t)kl_get_u32(ix->map + i * 12 + 8);
}

int64_t kl_index_key(const kl_index *ix, int64_t i) {
  return ix->kind == KL_INDEX_OFFSET ? kl_index_offset_at(ix, i) : kl_index_timestamp_at(ix, i);
}

static int64_t probe(const kl_index *ix, int64_t i, kl_stats *stats) {
  if (stats) stats->index_probes++;
  if (ix->probe) ix->probe(ix->probe_ud, i);
  return kl_index_key(ix, i);
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
