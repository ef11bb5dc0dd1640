/*
** keyset.c - see keyset.h.  The Bloom filter is a few lines written here:
** Debian's Bloom filter libraries are for large sets with their own
** allocation, these are per-batch filters of a few words in a fact.  The
** hash is libxxhash's.
*/
#include "keyset.h"

#include <string.h>

#include <xxhash.h>

uint64_t kl_key_hash(const void *p, size_t n) { return (uint64_t)XXH3_64bits(p, n); }

void kl_keyset_init(kl_keyset *s, const kl_env *env) {
  memset(s, 0, sizeof *s);
  s->env = env;
}

void kl_keyset_clear(kl_keyset *s) {
  for (size_t i = 0; i < s->n; i++) kl_free(s->env, s->k[i].p);
  s->n = 0;
  if (s->slot) memset(s->slot, 0, s->nslot * sizeof *s->slot);
}

void kl_keyset_free(kl_keyset *s) {
  kl_keyset_clear(s);
  kl_free(s->env, s->k);
  kl_free(s->env, s->slot);
  kl_keyset_init(s, s->env);
}

/* The slot of key (p, n, h): the one holding it, or the empty one where it
** would go. */
static size_t find_slot(const kl_keyset *s, const void *p, size_t n, uint64_t h) {
  size_t mask = s->nslot - 1, i = (size_t)h & mask;
  for (;; i = (i + 1) & mask) {
    uint32_t e = s->slot[i];
    if (e == 0) return i;
    const struct kl_key *k = &s->k[e - 1];
    if (k->h == h && k->n == n && (n == 0 || memcmp(k->p, p, n) == 0)) return i;
  }
}

/* Room for one more key, with the slots at most half full. */
static kl_rc grow(kl_keyset *s) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 4;
    struct kl_key *k = kl_realloc(s->env, s->k, cap * sizeof *k);
    if (!k) return KL_NOMEM;
    s->k = k;
    s->cap = cap;
  }
  if (2 * (s->n + 1) <= s->nslot) return KL_OK;
  size_t nslot = s->nslot ? s->nslot * 2 : 8;
  uint32_t *slot = kl_malloc(s->env, nslot * sizeof *slot);
  if (!slot) return KL_NOMEM;
  memset(slot, 0, nslot * sizeof *slot);
  kl_free(s->env, s->slot);
  s->slot = slot;
  s->nslot = nslot;
  for (size_t i = 0; i < s->n; i++) {
    s->slot[find_slot(s, s->k[i].p, s->k[i].n, s->k[i].h)] = (uint32_t)(i + 1);
  }
  return KL_OK;
}

kl_rc kl_keyset_add(kl_keyset *s, const void *p, size_t n) {
  uint64_t h = kl_key_hash(p, n);
  if (s->nslot && s->slot[find_slot(s, p, n, h)]) return KL_OK;
  if (s->n >= UINT32_MAX - 1 || grow(s) != KL_OK) return KL_NOMEM;
  uint8_t *copy = kl_malloc(s->env, n ? n : 1);
  if (!copy) return KL_NOMEM;
  if (n) memcpy(copy, p, n);
  s->k[s->n] = (struct kl_key){copy, n, h};
  s->slot[find_slot(s, p, n, h)] = (uint32_t)(s->n + 1);
  s->n++;
  return KL_OK;
}

int kl_keyset_has(const kl_keyset *s, const void *p, int32_t n, uint64_t h) {
  if (n < 0 || s->n == 0) return 0;
  return s->slot[find_slot(s, p, (size_t)n, h)] != 0;
}

size_t kl_keyfilter_words(int32_t records) {
  size_t n = records > 0 ? (size_t)records : 1;
  return (n * 8 + 63) / 64;
}

/* The three bits of h: 21-bit pieces of it (XXH3's bits are all mixed),
** each taken modulo the filter's bits. */
#define PROBES 3
static void bits_of(uint64_t h, size_t words, size_t *bit) {
  size_t m = words * 64;
  for (int i = 0; i < PROBES; i++) bit[i] = (size_t)((h >> (21 * i)) & 0x1fffff) % m;
}

void kl_keyfilter_add(uint64_t *f, size_t words, uint64_t h) {
  size_t bit[PROBES];
  bits_of(h, words, bit);
  for (int i = 0; i < PROBES; i++) f[bit[i] / 64] |= 1ull << (bit[i] % 64);
}

int kl_keyfilter_may_hold(const uint64_t *f, size_t words, const kl_keyset *s) {
  /* More keys than a quarter of its bits: one of them nearly always
  ** passes, and probing them all would cost more than reading the batch. */
  if (s->n > words * 16) return 1;
  for (size_t k = 0; k < s->n; k++) {
    size_t bit[PROBES];
    bits_of(s->k[k].h, words, bit);
    int all = 1;
    for (int i = 0; i < PROBES && all; i++) all = (f[bit[i] / 64] >> (bit[i] % 64)) & 1;
    if (all) return 1;
  }
  return 0;
}
