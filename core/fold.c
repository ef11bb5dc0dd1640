/*
** fold.c - a compacted topic's latest record per key (fold.h).
*/
#include "fold.h"

#include <string.h>

void kl_fold_init(kl_fold *f, const kl_env *env) {
  memset(f, 0, sizeof *f);
  f->env = env;
}

void kl_fold_free(kl_fold *f) {
  for (size_t i = 0; i < f->cap; i++) {
    if (!f->slots[i]) continue;
    kl_free(f->env, f->slots[i]->val);
    kl_free(f->env, f->slots[i]);
  }
  kl_free(f->env, f->slots);
  f->slots = NULL;
  f->cap = f->count = 0;
}

uint64_t kl_fold_hash(uint64_t h, const void *p, size_t n) {
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

kl_rc kl_fold_reserve(kl_fold *f) {
  if ((f->count + 1) * 2 <= f->cap) return KL_OK;
  size_t cap = f->cap ? f->cap * 2 : 64;
  kl_fold_head **slots = kl_malloc(f->env, cap * sizeof *slots);
  if (!slots) return KL_NOMEM;
  memset(slots, 0, cap * sizeof *slots);
  for (size_t i = 0; i < f->cap; i++) {
    kl_fold_head *e = f->slots[i];
    if (!e) continue;
    size_t j = (size_t)e->hash & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = e;
  }
  kl_free(f->env, f->slots);
  f->slots = slots;
  f->cap = cap;
  return KL_OK;
}

size_t kl_fold_find(const kl_fold *f, uint64_t h, kl_fold_eq eq, const void *key) {
  size_t i = (size_t)h & (f->cap - 1);
  while (f->slots[i] && !(f->slots[i]->hash == h && eq(f->slots[i], key))) {
    i = (i + 1) & (f->cap - 1);
  }
  return i;
}

void kl_fold_insert(kl_fold *f, size_t i, kl_fold_head *e) {
  f->slots[i] = e;
  f->count++;
}

int kl_fold_stale(int32_t had_partition, int64_t had_offset, int32_t partition, int64_t offset) {
  return had_partition > partition || (had_partition == partition && had_offset >= offset);
}

kl_rc kl_fold_keep(const kl_fold *f, kl_fold_head *e, const void *p, size_t n) {
  if (n > e->val_cap) {
    uint8_t *m = kl_realloc(f->env, e->val, n);
    if (!m) return KL_NOMEM;
    e->val = m;
    e->val_cap = n;
  }
  if (n) memcpy(e->val, p, n);
  return KL_OK;
}
