/*
** fold.h - the state the owner of a compacted internal topic rebuilds from
** it (__consumer_offsets, __transaction_state): per key, the latest record
** wins and a tombstone removes the key, as Kafka's coordinators load their
** partitions and as the log cleaner keeps them.  A key's records may come
** from several partitions or replicas of them (a path can name many log
** directories): of two, the one of the higher partition wins, then the one
** of the higher offset, and the same record read again from a replica
** changes nothing.
**
** The table is open addressing with linear probing, at a load of at most
** one half.  Its entries are the caller's: each starts with a kl_fold_head
** and is allocated by the caller through the fold's kl_env; the fold frees
** them (and the bytes kept in their heads) with itself.
*/
#ifndef KL_FOLD_H
#define KL_FOLD_H

#include "klog.h"

/* The first member of every entry. */
typedef struct kl_fold_head {
  uint64_t hash;            /* of the entry's key (kl_fold_hash) */
  int live;                 /* 0 after a tombstone */
  uint8_t *val;             /* the value bytes kept (kl_fold_keep) */
  size_t val_cap;
} kl_fold_head;

typedef struct kl_fold {
  const kl_env *env;
  kl_fold_head **slots;     /* NULL: empty */
  size_t cap;               /* a power of two, or 0 */
  size_t count;             /* entries */
} kl_fold;

/* Does entry e (whose hash is that of its key) hold key? */
typedef int (*kl_fold_eq)(const kl_fold_head *e, const void *key);

void kl_fold_init(kl_fold *f, const kl_env *env);
/* Free every entry, its kept bytes and the table. */
void kl_fold_free(kl_fold *f);

/* FNV-1a over n bytes at p, from h (start with KL_FOLD_HASH0). */
#define KL_FOLD_HASH0 0xcbf29ce484222325ull
uint64_t kl_fold_hash(uint64_t h, const void *p, size_t n);

/* Room for one more entry (call before kl_fold_find when an entry may be
** inserted).  KL_NOMEM only. */
kl_rc kl_fold_reserve(kl_fold *f);
/* The slot of key (hash h): its entry's, or the empty one where it goes. */
size_t kl_fold_find(const kl_fold *f, uint64_t h, kl_fold_eq eq, const void *key);
/* Put the new entry e into the empty slot i that kl_fold_find gave. */
void kl_fold_insert(kl_fold *f, size_t i, kl_fold_head *e);

/* Does a record at (partition, offset) leave the one held, read at
** (had_partition, had_offset), as it is: an older record, or the same one
** in another replica? */
int kl_fold_stale(int32_t had_partition, int64_t had_offset, int32_t partition, int64_t offset);

/* Keep a copy of the n bytes at p in e->val (grown as needed).  KL_NOMEM
** only (e and its bytes as they were). */
kl_rc kl_fold_keep(const kl_fold *f, kl_fold_head *e, const void *p, size_t n);

#endif
