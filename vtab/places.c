/*
** places.c - see places.h.  An open-addressing hash table of directory
** names, grown by doubling at half full.
*/
#include "places.h"

#include <string.h>

#include "sqlite3ext.h"

SQLITE_EXTENSION_INIT3

struct kl_places {
  struct slot {
    char *dir;              /* NULL: empty */
    unsigned hash;
    uint32_t place;
  } *slots;
  size_t cap, n;            /* cap a power of two, or 0 */
};

static unsigned hash_dir(const char *s) {
  unsigned h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

kl_places *kl_places_new(void) {
  kl_places *p = sqlite3_malloc(sizeof *p);
  if (p) memset(p, 0, sizeof *p);
  return p;
}

void kl_places_clear(kl_places *p) {
  for (size_t i = 0; i < p->cap; i++) sqlite3_free(p->slots[i].dir);
  sqlite3_free(p->slots);
  p->slots = NULL;
  p->cap = p->n = 0;
}

void kl_places_free(kl_places *p) {
  if (!p) return;
  kl_places_clear(p);
  sqlite3_free(p);
}

size_t kl_places_count(const kl_places *p) { return p->n; }

/* Double the table (cap 0: make the first). */
static int grow(kl_places *p) {
  size_t cap = p->cap ? p->cap * 2 : 64;
  struct slot *s = sqlite3_malloc64((sqlite3_uint64)cap * sizeof *s);
  if (!s) return 0;
  memset(s, 0, cap * sizeof *s);
  for (size_t i = 0; i < p->cap; i++) {
    if (!p->slots[i].dir) continue;
    size_t j = p->slots[i].hash & (cap - 1);
    while (s[j].dir) j = (j + 1) & (cap - 1);
    s[j] = p->slots[i];
  }
  sqlite3_free(p->slots);
  p->slots = s;
  p->cap = cap;
  return 1;
}

int64_t kl_places_get(kl_places *p, const char *dir) {
  unsigned h = hash_dir(dir);
  if (p->cap) {
    for (size_t j = h & (p->cap - 1); p->slots[j].dir; j = (j + 1) & (p->cap - 1)) {
      if (p->slots[j].hash == h && strcmp(p->slots[j].dir, dir) == 0) return p->slots[j].place;
    }
  }
  if (p->n >= KL_PLACES_MAX) return -1;
  if ((p->n + 1) * 2 > p->cap && !grow(p)) return -1;
  char *d = sqlite3_mprintf("%s", dir);
  if (!d) return -1;
  size_t j = h & (p->cap - 1);
  while (p->slots[j].dir) j = (j + 1) & (p->cap - 1);
  p->slots[j].dir = d;
  p->slots[j].hash = h;
  p->slots[j].place = (uint32_t)p->n;
  return (int64_t)p->n++;
}
