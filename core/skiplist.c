/*
** skiplist.c - an ordered int64 -> pointer map (Pugh's skip list).
**
** Layout.  Every node carries the forward pointers of the levels it takes
** part in, as a flexible array, so a node is one allocation.  Level 0 is a
** doubly linked list (the prev pointer), which makes both neighbours O(1)
** and lets a log cursor walk its segments backwards.  The header has no key
** and no value, so it is not a node: it is the array of forward pointers
** sl->head[] inside the list object, and "the header" is written NULL
** wherever a search returns a predecessor.  Creating a list is therefore a
** single allocation.
**
** Searches walk "slots": a slot is the address of a forward pointer, either
** &sl->head[i] or &node->next[i].  Insertion and removal record the slot at
** each level where the search turned down (update[i]) and rewrite *update[i],
** so the header needs no special case.
**
** Levels.  A node has level L >= 1 with probability (3/4)(1/4)^(L-1),
** capped at KL_SK_MAXLEVEL.  p = 1/4 costs 1.33 pointers per node against 2
** for p = 1/2, for the same expected search time (Pugh, 1990).  32 levels,
** as in Redis, stay optimal up to 4^32 = 2^64 nodes, so the cap never bites;
** it only sizes the header and the update[] arrays on the stack.  The coin
** flips come from a per-list xorshift64 generator with a fixed seed, so the
** shape of a list depends only on the operations applied to it: a run, or a
** failure, can be reproduced exactly.
*/
#include "skiplist.h"

#include <assert.h>

#define KL_SK_MAXLEVEL 32
#define KL_SK_SEED 0x9E3779B97F4A7C15ull  /* any nonzero value: 2^64/phi */

struct kl_sknode {
  int64_t key;            /* the segment base offset */
  void *value;            /* caller-owned, never dereferenced here */
  kl_sknode *prev;        /* level-0 predecessor; NULL for the first node */
  kl_sknode *next[];      /* next[i]: successor at level i, NULL at the end;
                          ** as many entries as the node's level */
};

struct kl_skiplist {
  kl_env env;                        /* allocator (a copy: the caller's
                                     ** kl_env may be a temporary) */
  uint64_t rng;                      /* xorshift64 state, never zero */
  int level;                         /* levels in use, 1..KL_SK_MAXLEVEL */
  size_t count;                      /* number of nodes */
  kl_sknode *tail;                   /* greatest node, or NULL: O(1) last,
                                     ** which is the active segment */
  kl_sknode *head[KL_SK_MAXLEVEL];   /* the header's forward pointers */
};

/* Marsaglia's xorshift64 (13, 7, 17): full period 2^64-1 over nonzero
** states, so it never reaches zero from the nonzero seed. */
static uint64_t sk_xorshift(uint64_t x) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

/* Level for a new node from one random word: 1 plus the number of
** low-order 2-bit groups that are zero (each is zero with probability 1/4).
** 64 bits hold the 31 flips the deepest level needs. */
static int sk_level(uint64_t r) {
  int lvl = 1;
  while (lvl < KL_SK_MAXLEVEL && (r & 3) == 0) {
    lvl++;
    r >>= 2;
  }
  return lvl;
}

/*
** Greatest node with key < k, or with key <= k when inclusive is set;
** NULL when that is the header (no such node).
*/
static kl_sknode *sk_seek(const kl_skiplist *sl, int64_t k, int inclusive) {
  kl_sknode *x = NULL;
  kl_sknode *const *fwd = sl->head;   /* forward pointers of x */
  for (int i = sl->level - 1; i >= 0; i--) {
    kl_sknode *y;
    while ((y = fwd[i]) != NULL && (y->key < k || (inclusive && y->key == k))) {
      x = y;
      fwd = y->next;
    }
  }
  return x;
}

/* The node after x, where x == NULL stands for the header. */
static kl_sknode *sk_succ(const kl_skiplist *sl, const kl_sknode *x) {
  return x ? x->next[0] : sl->head[0];
}

/*
** Search for k as insertion and removal need it.  OUT: update[i] for every
** level in use is the slot that points at the first node with key >= k at
** level i.  Returns the greatest node with key < k (NULL: the header).
*/
static kl_sknode *sk_path(kl_skiplist *sl, int64_t k,
                          kl_sknode **update[KL_SK_MAXLEVEL]) {
  kl_sknode *x = NULL;
  kl_sknode **fwd = sl->head;
  for (int i = sl->level - 1; i >= 0; i--) {
    while (fwd[i] != NULL && fwd[i]->key < k) {
      x = fwd[i];
      fwd = x->next;
    }
    update[i] = &fwd[i];
  }
  return x;
}

/* Create an empty list allocating through env (NULL: the C library).
** Returns NULL when out of memory. */
kl_skiplist *kl_skiplist_new(const kl_env *env) {
  kl_env e = {0};
  if (env) e = *env;
  kl_skiplist *sl = kl_malloc(&e, sizeof *sl);
  if (!sl) return NULL;
  sl->env = e;
  sl->rng = KL_SK_SEED;
  sl->level = 1;
  sl->count = 0;
  sl->tail = NULL;
  for (int i = 0; i < KL_SK_MAXLEVEL; i++) sl->head[i] = NULL;
  return sl;
}

/* Free the nodes and the list; the values belong to the caller. */
void kl_skiplist_free(kl_skiplist *sl) {
  if (!sl) return;
  kl_env env = sl->env;   /* not read out of the block being freed */
  kl_sknode *n = sl->head[0];
  while (n) {
    kl_sknode *next = n->next[0];
    kl_free(&env, n);
    n = next;
  }
  kl_free(&env, sl);
}

/*
** Insert key -> value.  KL_MISUSE if key is present (the old value stays),
** KL_NOMEM if the node cannot be allocated.  On any error the list is left
** exactly as it was, random state included, so a retry behaves like a
** first attempt.
*/
kl_rc kl_skiplist_insert(kl_skiplist *sl, int64_t key, void *value) {
  kl_sknode **update[KL_SK_MAXLEVEL];
  kl_sknode *prev = sk_path(sl, key, update);
  kl_sknode *at = sk_succ(sl, prev);
  if (at && at->key == key) return KL_MISUSE;

  uint64_t rng = sk_xorshift(sl->rng);
  int lvl = sk_level(rng);
  kl_sknode *n = kl_malloc(&sl->env,
                           sizeof *n + (size_t)lvl * sizeof n->next[0]);
  if (!n) return KL_NOMEM;
  sl->rng = rng;   /* committed only now: see the contract above */

  for (int i = sl->level; i < lvl; i++) update[i] = &sl->head[i];
  if (lvl > sl->level) sl->level = lvl;
  n->key = key;
  n->value = value;
  n->prev = prev;
  for (int i = 0; i < lvl; i++) {
    n->next[i] = *update[i];
    *update[i] = n;
  }
  if (n->next[0]) {
    n->next[0]->prev = n;
  } else {
    sl->tail = n;
  }
  sl->count++;
  return KL_OK;
}

/* Remove key and free its node (not the value); KL_NOTFOUND if absent. */
kl_rc kl_skiplist_remove(kl_skiplist *sl, int64_t key) {
  kl_sknode **update[KL_SK_MAXLEVEL];
  kl_sknode *n = sk_succ(sl, sk_path(sl, key, update));
  if (!n || n->key != key) return KL_NOTFOUND;

  /* n is linked at levels 0..L-1 exactly, through update[0..L-1]. */
  for (int i = 0; i < sl->level && *update[i] == n; i++) {
    *update[i] = n->next[i];
  }
  if (n->next[0]) {
    n->next[0]->prev = n->prev;
  } else {
    sl->tail = n->prev;
  }
  /* Drop emptied top levels so searches do not start above every node. */
  while (sl->level > 1 && sl->head[sl->level - 1] == NULL) sl->level--;
  sl->count--;
  kl_free(&sl->env, n);
  return KL_OK;
}

size_t kl_skiplist_count(const kl_skiplist *sl) { return sl->count; }

/* Greatest key <= k. */
kl_sknode *kl_skiplist_floor(const kl_skiplist *sl, int64_t k) {
  return sk_seek(sl, k, 1);
}

/* Smallest key >= k: the successor of the greatest key < k. */
kl_sknode *kl_skiplist_ceiling(const kl_skiplist *sl, int64_t k) {
  return sk_succ(sl, sk_seek(sl, k, 0));
}

/* Greatest key < k. */
kl_sknode *kl_skiplist_lower(const kl_skiplist *sl, int64_t k) {
  return sk_seek(sl, k, 0);
}

/* Smallest key > k: the successor of the greatest key <= k.  (Not
** ceiling(k+1), which would overflow at INT64_MAX.) */
kl_sknode *kl_skiplist_higher(const kl_skiplist *sl, int64_t k) {
  return sk_succ(sl, sk_seek(sl, k, 1));
}

kl_sknode *kl_skiplist_first(const kl_skiplist *sl) { return sl->head[0]; }

kl_sknode *kl_skiplist_last(const kl_skiplist *sl) { return sl->tail; }

/* Node accessors; n must not be NULL. */
kl_sknode *kl_sknode_next(const kl_sknode *n) {
  assert(n);
  return n->next[0];
}

kl_sknode *kl_sknode_prev(const kl_sknode *n) {
  assert(n);
  return n->prev;
}

int64_t kl_sknode_key(const kl_sknode *n) {
  assert(n);
  return n->key;
}

void *kl_sknode_value(const kl_sknode *n) {
  assert(n);
  return n->value;
}
