/*
** bcache.c - decompressed batches kept for point lookups (bcache.h).
*/
#include "bcache.h"

#include <string.h>

struct kl_bcache_entry {
  uint64_t uid;             /* the key: segment identity, */
  int64_t pos;              /* batch position */
  int32_t size;             /* and size */
  int pins;                 /* readers borrowing buf */
  int live;                 /* in the table and the list (else freed when
                            ** the last pin goes) */
  kl_buf buf;               /* the decompressed bytes, buf.len of them */
  kl_bcache_entry *hnext;   /* hash chain */
  kl_bcache_entry *newer, *older; /* LRU list */
};

struct kl_bcache {
  const kl_env *env;
  size_t max_bytes;
  size_t bytes;             /* buffers and entries, live or pinned */
  size_t n;                 /* live entries */
  kl_bcache_entry **slot;   /* hash chains, nslot of them (a power of two) */
  size_t nslot;
  kl_bcache_entry *mru, *lru;
};

static size_t cost(const kl_bcache_entry *e) { return sizeof *e + e->buf.cap; }

static size_t hash(uint64_t uid, int64_t pos, size_t nslot) {
  uint64_t h = (uid * 0x9e3779b97f4a7c15u) ^ ((uint64_t)pos * 0xc2b2ae3d27d4eb4fu);
  return (size_t)(h >> 29) & (nslot - 1);
}

kl_bcache *kl_bcache_new(const kl_env *env, size_t max_bytes) {
  kl_bcache *c = kl_malloc(env, sizeof *c);
  if (!c) return NULL;
  memset(c, 0, sizeof *c);
  c->env = env;
  c->max_bytes = max_bytes;
  c->nslot = 64;
  c->slot = kl_malloc(env, c->nslot * sizeof *c->slot);
  if (!c->slot) {
    kl_free(env, c);
    return NULL;
  }
  memset(c->slot, 0, c->nslot * sizeof *c->slot);
  return c;
}

static void entry_free(kl_bcache *c, kl_bcache_entry *e) {
  c->bytes -= cost(e);
  kl_buf_free(c->env, &e->buf);
  kl_free(c->env, e);
}

void kl_bcache_free(kl_bcache *c) {
  if (!c) return;
  while (c->lru) {
    kl_bcache_entry *e = c->lru;
    c->lru = e->newer;
    entry_free(c, e);
  }
  kl_free(c->env, c->slot);
  kl_free(c->env, c);
}

static kl_bcache_entry **find(kl_bcache *c, uint64_t uid, int64_t pos) {
  kl_bcache_entry **pp = &c->slot[hash(uid, pos, c->nslot)];
  while (*pp && ((*pp)->uid != uid || (*pp)->pos != pos)) pp = &(*pp)->hnext;
  return pp;
}

static void list_unlink(kl_bcache *c, kl_bcache_entry *e) {
  if (e->newer) e->newer->older = e->older;
  else c->mru = e->older;
  if (e->older) e->older->newer = e->newer;
  else c->lru = e->newer;
  e->newer = e->older = NULL;
}

static void list_front(kl_bcache *c, kl_bcache_entry *e) {
  e->newer = NULL;
  e->older = c->mru;
  if (c->mru) c->mru->newer = e;
  c->mru = e;
  if (!c->lru) c->lru = e;
}

static void list_back(kl_bcache *c, kl_bcache_entry *e) {
  e->older = NULL;
  e->newer = c->lru;
  if (c->lru) c->lru->older = e;
  c->lru = e;
  if (!c->mru) c->mru = e;
}

/* Take e out of the table and the list; freed now unless pinned. */
static void unlink_entry(kl_bcache *c, kl_bcache_entry *e) {
  kl_bcache_entry **pp = find(c, e->uid, e->pos);
  if (*pp == e) *pp = e->hnext;
  list_unlink(c, e);
  e->live = 0;
  c->n--;
  if (e->pins == 0) entry_free(c, e);
}

const uint8_t *kl_bcache_get(kl_bcache *c, uint64_t uid, int64_t pos, int32_t size, size_t need,
                             size_t *len, kl_bcache_entry **e) {
  kl_bcache_entry *x = *find(c, uid, pos);
  *len = 0;
  *e = NULL;
  if (!x || x->size != size) return NULL;
  *len = x->buf.len;
  if (x->buf.len < need) return NULL;
  if (c->mru != x) {
    list_unlink(c, x);
    list_front(c, x);
  }
  x->pins++;
  *e = x;
  return x->buf.p;
}

void kl_bcache_release(kl_bcache *c, kl_bcache_entry *e) {
  if (!e) return;
  if (--e->pins == 0 && !e->live) entry_free(c, e);
}

/* Twice the hash chains when there are more entries than chains (quietly
** not when out of memory: chains grow longer). */
static void grow(kl_bcache *c) {
  size_t n = c->nslot * 2;
  kl_bcache_entry **s = kl_malloc(c->env, n * sizeof *s);
  if (!s) return;
  memset(s, 0, n * sizeof *s);
  for (size_t i = 0; i < c->nslot; i++) {
    for (kl_bcache_entry *e = c->slot[i], *next; e; e = next) {
      next = e->hnext;
      size_t h = hash(e->uid, e->pos, n);
      e->hnext = s[h];
      s[h] = e;
    }
  }
  kl_free(c->env, c->slot);
  c->slot = s;
  c->nslot = n;
}

/* Evict least recently used entries that no reader holds until `room`
** more bytes fit; the memory of the first evicted goes to *spare (when it
** is empty), the rest is freed. */
static void make_room(kl_bcache *c, size_t room, kl_buf *spare) {
  kl_bcache_entry *e = c->lru;
  while (e && c->bytes + room > c->max_bytes) {
    kl_bcache_entry *newer = e->newer;
    if (e->pins == 0) {
      if (!spare->p) {
        *spare = e->buf;
        c->bytes -= e->buf.cap;
        memset(&e->buf, 0, sizeof e->buf);
      }
      unlink_entry(c, e);
    }
    e = newer;
  }
}

const uint8_t *kl_bcache_adopt(kl_bcache *c, uint64_t uid, int64_t pos, int32_t size, kl_buf *buf,
                               int cheap, kl_bcache_entry **e) {
  *e = NULL;
  size_t need = sizeof **e + buf->cap;
  if (!buf->p || need > c->max_bytes / 4) return NULL; /* a few entries at least */
  kl_bcache_entry *x = kl_malloc(c->env, sizeof *x);
  if (!x) return NULL;
  kl_bcache_entry *was = *find(c, uid, pos);
  if (was) unlink_entry(c, was); /* the shorter prefix, or a batch since replaced */
  kl_buf spare = {0};
  make_room(c, need, &spare);
  memset(x, 0, sizeof *x);
  x->uid = uid;
  x->pos = pos;
  x->size = size;
  x->buf = *buf;
  x->live = 1;
  x->pins = 1;
  c->bytes += cost(x);
  if (c->n >= c->nslot) grow(c);
  kl_bcache_entry **pp = &c->slot[hash(uid, pos, c->nslot)];
  x->hnext = *pp;
  *pp = x;
  if (cheap) list_back(c, x);
  else list_front(c, x);
  c->n++;
  spare.len = 0;
  *buf = spare;
  *e = x;
  return x->buf.p;
}

void kl_bcache_set_bound(kl_bcache *c, size_t max_bytes) {
  c->max_bytes = max_bytes;
  if (c->bytes <= max_bytes) return;
  kl_buf spare = {0};
  make_room(c, 0, &spare); /* spare: memory no longer counted */
  kl_buf_free(c->env, &spare);
}

size_t kl_bcache_bound(const kl_bcache *c) { return c->max_bytes; }

size_t kl_bcache_bytes(const kl_bcache *c) { return c->bytes; }
size_t kl_bcache_count(const kl_bcache *c) { return c->n; }
