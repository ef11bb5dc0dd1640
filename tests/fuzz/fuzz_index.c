/*
** fuzz_index.c - libFuzzer target for the index loader and the floor
** search: kl_index_count over raw .index / .timeindex bytes, then
** kl_index_floor / kl_index_ceiling / kl_index_floor_classic for targets
** taken from the input, checked against a linear scan where the entries
** are sorted (the searches promise nothing for unsorted garbage, only
** memory safety and an answer inside [-1, n)).
**
** Input: byte 0: kind (even: offset index, odd: time index); bytes 1..8:
** log size (big-endian, masked to 31 bits); bytes 9..16: search target;
** the rest: the index file.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index.h"

static int sorted_keys(const kl_index *ix) {
  for (int64_t i = 1; i < ix->n; i++) {
    if (kl_index_key(ix, i - 1) >= kl_index_key(ix, i)) return 0;
  }
  return 1;
}

static void check(const kl_index *ix, int sorted, int64_t target) {
  int64_t f = kl_index_floor(ix, target, NULL);
  int64_t c = kl_index_ceiling(ix, target, NULL);
  int64_t fc = kl_index_floor_classic(ix, target, NULL);
  if (f < -1 || f >= ix->n || c < -1 || c >= ix->n || fc < -1 || fc >= ix->n) abort();
  if (!sorted) return;
  /* Sorted: the floor is the last key <= target, the ceiling the first
  ** key >= target; check them against their neighbours. */
  if (fc != f) abort();
  if (f >= 0 && kl_index_key(ix, f) > target) abort();
  if (f + 1 < ix->n && kl_index_key(ix, f + 1) <= target) abort();
  if (c >= 0 && kl_index_key(ix, c) < target) abort();
  if (c > 0 && kl_index_key(ix, c - 1) >= target) abort();
  if (c < 0 && ix->n > 0 && kl_index_key(ix, ix->n - 1) >= target) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 17) return 0;
  int kind = (data[0] & 1) ? KL_INDEX_TIME : KL_INDEX_OFFSET;
  int64_t log_size = kl_get_i64(data + 1) & 0x7fffffff;
  int64_t target = kl_get_i64(data + 9);
  size_t n = size - 17;
  size_t len = n - n % (size_t)kind;
  uint8_t *p = malloc(len ? len : 1); /* exact size: ASan sees overreads */
  if (!p) return 0;
  memcpy(p, data + 17, len);
  kl_index ix;
  memset(&ix, 0, sizeof ix);
  ix.kind = kind;
  ix.base = (int64_t)(data[0] >> 1) * 1000;
  ix.file_len = (int64_t)len;
  ix.map = len ? p : NULL;
  ix.map_len = len;
  ix.n = len ? kl_index_count(kind, p, len, ix.base, log_size, &ix.zero_slots) : 0;
  if (ix.n < 0 || ix.n > (int64_t)(len / (size_t)kind)) abort();
  int sorted = sorted_keys(&ix);
  check(&ix, sorted, target);
  /* Targets on and around some keys hit the exact-match branches. */
  for (int64_t i = 0; i < ix.n; i += 1 + ix.n / 8) {
    int64_t k = kl_index_key(&ix, i);
    check(&ix, sorted, k);
    if (k > INT64_MIN) check(&ix, sorted, k - 1);
    if (k < INT64_MAX) check(&ix, sorted, k + 1);
  }
  free(p);
  return 0;
}
