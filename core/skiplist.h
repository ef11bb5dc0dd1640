/*
** skiplist.h - an ordered map from segment base offset (int64) to a
** caller-owned pointer, with floor / ceiling / neighbour lookups in
** O(log n), as Kafka keeps its segments in a ConcurrentSkipListMap.
**
** Level choice uses a per-list xorshift state seeded at creation, so the
** structure is deterministic and there is no global state.  Nodes are
** allocated through the kl_env hook.  The list does not own the values.
*/
#ifndef KL_SKIPLIST_H
#define KL_SKIPLIST_H

#include "klog.h"

typedef struct kl_skiplist kl_skiplist;
typedef struct kl_sknode kl_sknode;   /* an entry; valid until removed */

/* Create an empty list.  Returns NULL when out of memory. */
kl_skiplist *kl_skiplist_new(const kl_env *env);
/* Free the list and its nodes (not the values). NULL is a no-op. */
void kl_skiplist_free(kl_skiplist *sl);

/* Insert key -> value.  KL_MISUSE if the key exists, KL_NOMEM. */
kl_rc kl_skiplist_insert(kl_skiplist *sl, int64_t key, void *value);
/* Remove key; KL_NOTFOUND if absent. */
kl_rc kl_skiplist_remove(kl_skiplist *sl, int64_t key);

size_t kl_skiplist_count(const kl_skiplist *sl);

/* Lookups return the node or NULL.
**   floor:   greatest key <= k        ceiling: smallest key >= k
**   lower:   greatest key <  k        higher:  smallest key >  k
**   first / last: smallest / greatest key */
kl_sknode *kl_skiplist_floor(const kl_skiplist *sl, int64_t k);
kl_sknode *kl_skiplist_ceiling(const kl_skiplist *sl, int64_t k);
kl_sknode *kl_skiplist_lower(const kl_skiplist *sl, int64_t k);
kl_sknode *kl_skiplist_higher(const kl_skiplist *sl, int64_t k);
kl_sknode *kl_skiplist_first(const kl_skiplist *sl);
kl_sknode *kl_skiplist_last(const kl_skiplist *sl);

/* Neighbours of a node in key order (O(1) next, O(1) prev: nodes keep a
** backward pointer at level 0); NULL past either end. */
kl_sknode *kl_sknode_next(const kl_sknode *n);
kl_sknode *kl_sknode_prev(const kl_sknode *n);
int64_t kl_sknode_key(const kl_sknode *n);
void *kl_sknode_value(const kl_sknode *n);

#endif
