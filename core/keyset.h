/*
** keyset.h - the keys a query asks for (kafka_log's key = ? and key IN
** (...)), compared as bytes, and the small filter of key hashes a batch's
** fact keeps once a key search has read all its keys, which tells a later
** search that the batch cannot hold any key it asks for.
**
** A filter is a Bloom filter of the batch's non-NULL keys: 8 bits a
** record (rounded up to 64), 3 probes, so a batch that holds none of the
** keys sought is read again for about 3% of them.  It never answers "no"
** for a key the batch holds: a batch passed over on it holds no row.
*/
#ifndef KL_KEYSET_H
#define KL_KEYSET_H

#include <stddef.h>
#include <stdint.h>

#include "klog.h"

/* The hash keys are found and filtered by: XXH3 (64 bits) of the key's
** bytes, from libxxhash, which the LZ4 frames' checksums link already. */
uint64_t kl_key_hash(const void *p, size_t n);

typedef struct kl_keyset {
  const kl_env *env;
  struct kl_key {
    uint8_t *p;             /* the key's bytes (owned) */
    size_t n;
    uint64_t h;             /* kl_key_hash */
  } *k;                     /* distinct keys, in the order added */
  size_t n, cap;
  uint32_t *slot;           /* open addressing on h: index + 1, 0 empty */
  size_t nslot;             /* a power of two, at least 2n; 0 none yet */
} kl_keyset;

/* An empty set (which matches no record) allocating through env. */
void kl_keyset_init(kl_keyset *s, const kl_env *env);
/* Free everything; the set is empty again. */
void kl_keyset_free(kl_keyset *s);
/* Empty the set, keeping its memory for the next keys. */
void kl_keyset_clear(kl_keyset *s);

/* Add the n bytes at p (copied; a key already there is not added twice).
** KL_NOMEM. */
kl_rc kl_keyset_add(kl_keyset *s, const void *p, size_t n);

/* Is the key of n bytes at p, whose kl_key_hash is h, in the set?  A NULL
** key (n < 0) never is: key = v is never true of it. */
int kl_keyset_has(const kl_keyset *s, const void *p, int32_t n, uint64_t h);

/* 64-bit words of the filter of a batch of records records (at least 1). */
size_t kl_keyfilter_words(int32_t records);

/* Add the key hash h to filter f of words words. */
void kl_keyfilter_add(uint64_t *f, size_t words, uint64_t h);

/* May a batch whose filter is f hold one of the keys of s? */
int kl_keyfilter_may_hold(const uint64_t *f, size_t words, const kl_keyset *s);

#endif
