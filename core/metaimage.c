/*
** metaimage.c - the replay of metadata records into an image (rules in
** metaimage.h): topics, partitions and topic configs in hash maps keyed by
** bytes (open addressing; a removed entry stays, dead, so a probe passes
** it), sorted only when asked for.
*/
#include "metaimage.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What every map entry starts with. */
typedef struct ent {
  uint64_t h;
  int live;
  uint8_t *key;             /* owned */
  size_t klen;
} ent;

typedef struct map {
  ent **s;
  size_t cap, count;
} map;

typedef struct topic {
  ent e;                    /* key: the 16-byte id */
  kl_mi_topic t;
} topic;

typedef struct part {
  ent e;                    /* key: topic id, then the partition (big-endian) */
  kl_mi_part p;
} part;

typedef struct config {
  ent e;                    /* key: config_key */
  kl_mi_config c;
} config;

struct kl_mimage {
  const kl_env *env;
  map topics, parts, configs;
  const kl_mi_topic **tsorted;
  const kl_mi_part **psorted;
  const kl_mi_config **csorted;
};

static uint64_t hash(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static size_t find(const map *m, uint64_t h, const uint8_t *k, size_t n) {
  size_t i = (size_t)h & (m->cap - 1);
  while (m->s[i] && !(m->s[i]->h == h && m->s[i]->klen == n && memcmp(m->s[i]->key, k, n) == 0)) {
    i = (i + 1) & (m->cap - 1);
  }
  return i;
}

static kl_rc reserve(const kl_env *env, map *m) {
  if ((m->count + 1) * 2 <= m->cap) return KL_OK;
  size_t cap = m->cap ? m->cap * 2 : 64;
  ent **s = kl_malloc(env, cap * sizeof *s);
  if (!s) return KL_NOMEM;
  memset(s, 0, cap * sizeof *s);
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->s[i]) continue;
    size_t j = (size_t)m->s[i]->h & (cap - 1);
    while (s[j]) j = (j + 1) & (cap - 1);
    s[j] = m->s[i];
  }
  kl_free(env, m->s);
  m->s = s;
  m->cap = cap;
  return KL_OK;
}

/* The entry of key k in m, made (zeroed, size bytes, not live) when absent;
** NULL when out of memory. */
static ent *get(const kl_env *env, map *m, const uint8_t *k, size_t n, size_t size) {
  if (reserve(env, m)) return NULL;
  uint64_t h = hash(k, n);
  size_t i = find(m, h, k, n);
  if (m->s[i]) return m->s[i];
  ent *e = kl_malloc(env, size);
  uint8_t *key = kl_malloc(env, n ? n : 1);
  if (!e || !key) {
    kl_free(env, e);
    kl_free(env, key);
    return NULL;
  }
  memset(e, 0, size);
  memcpy(key, k, n);
  e->h = h;
  e->key = key;
  e->klen = n;
  m->s[i] = e;
  m->count++;
  return e;
}

static ent *lookup(const map *m, const uint8_t *k, size_t n) {
  if (!m->cap) return NULL;
  ent *e = m->s[find(m, hash(k, n), k, n)];
  return e && e->live ? e : NULL;
}

kl_rc kl_mimage_new(const kl_env *env, kl_mimage **out) {
  *out = kl_malloc(env, sizeof **out);
  if (!*out) return KL_NOMEM;
  memset(*out, 0, sizeof **out);
  (*out)->env = env;
  return KL_OK;
}

static void ids_free(const kl_env *env, kl_ids *a) {
  kl_free(env, a->v);
  a->v = NULL;
  a->n = -1;
}

static void part_clear(const kl_env *env, kl_mi_part *p) {
  ids_free(env, &p->replicas);
  ids_free(env, &p->isr);
  ids_free(env, &p->removing);
  ids_free(env, &p->adding);
  ids_free(env, &p->elr);
  ids_free(env, &p->last_known_elr);
}

void kl_mimage_free(kl_mimage *m) {
  if (!m) return;
  const kl_env *env = m->env;
  for (size_t i = 0; i < m->topics.cap; i++) {
    topic *t = (topic *)m->topics.s[i];
    if (!t) continue;
    kl_free(env, t->t.name);
    kl_free(env, t->e.key);
    kl_free(env, t);
  }
  for (size_t i = 0; i < m->parts.cap; i++) {
    part *p = (part *)m->parts.s[i];
    if (!p) continue;
    part_clear(env, &p->p);
    kl_free(env, p->e.key);
    kl_free(env, p);
  }
  for (size_t i = 0; i < m->configs.cap; i++) {
    config *c = (config *)m->configs.s[i];
    if (!c) continue;
    kl_free(env, c->c.value);
    kl_free(env, c->e.key);
    kl_free(env, c);
  }
  kl_free(env, m->topics.s);
  kl_free(env, m->parts.s);
  kl_free(env, m->configs.s);
  kl_free(env, m->tsorted);
  kl_free(env, m->psorted);
  kl_free(env, m->csorted);
  kl_free(env, m);
}

/* ---- the records ---- */

static const kl_mtop *fld(const kl_mrec *r, const char *name) {
  int i = kl_meta_field(r->type, name);
  return i >= 0 && i < KL_META_MAX_TOP && r->top[i].present ? &r->top[i] : NULL;
}

static char *dup_bytes(const kl_env *env, const uint8_t *p, int32_t n) {
  char *s = kl_malloc(env, (size_t)n + 1);
  if (!s) return NULL;
  if (n) memcpy(s, p, (size_t)n);
  s[n] = 0;
  return s;
}

/* Set *a from an int32 array field (absent: left as it is). */
static kl_rc set_ids(const kl_env *env, kl_ids *a, const kl_mtop *f) {
  if (!f) return KL_OK;
  int32_t *v = NULL;
  if (!f->null && f->n > 0) {
    if (!(v = kl_malloc(env, (size_t)f->n * sizeof *v))) return KL_NOMEM;
    for (int32_t i = 0; i < f->n; i++) v[i] = kl_get_i32(f->p + 4 * (size_t)i);
  }
  kl_free(env, a->v);
  a->v = v;
  a->n = f->null ? -1 : f->n;
  return KL_OK;
}

static void part_key(uint8_t k[20], const uint8_t *id, int32_t partition) {
  memcpy(k, id, 16);
  kl_put_u32(k + 16, (uint32_t)partition);
}

static kl_rc apply_topic(kl_mimage *m, int64_t offset, const kl_mrec *r, kl_err *err) {
  const kl_mtop *name = fld(r, "Name"), *id = fld(r, "TopicId");
  if (!name || !id || name->null) return kl_err_set(err, KL_CORRUPT, "TopicRecord without a name or id");
  topic *t = (topic *)get(m->env, &m->topics, id->p, 16, sizeof *t);
  char *s = t ? dup_bytes(m->env, name->p, name->n) : NULL;
  if (!s) return kl_err_set(err, KL_NOMEM, "out of memory");
  kl_free(m->env, t->t.name);
  t->t.name = s;
  memcpy(t->t.id, id->p, 16);
  t->t.offset = offset;
  t->e.live = 1;
  return KL_OK;
}

static kl_rc apply_ids(const kl_env *env, kl_mi_part *p, const kl_mrec *r) {
  kl_rc rc = set_ids(env, &p->replicas, fld(r, "Replicas"));
  if (rc == KL_OK) rc = set_ids(env, &p->isr, fld(r, "Isr"));
  if (rc == KL_OK) rc = set_ids(env, &p->removing, fld(r, "RemovingReplicas"));
  if (rc == KL_OK) rc = set_ids(env, &p->adding, fld(r, "AddingReplicas"));
  if (rc == KL_OK) rc = set_ids(env, &p->elr, fld(r, "EligibleLeaderReplicas"));
  if (rc == KL_OK) rc = set_ids(env, &p->last_known_elr, fld(r, "LastKnownElr"));
  return rc;
}

/* An epoch one on, as the controller's int arithmetic gives it: past
** 2^31 - 1 it wraps (a log that gets there is hostile, not wrong to read). */
static int32_t epoch_next(int32_t e) { return (int32_t)((uint32_t)e + 1u); }

static kl_rc apply_partition(kl_mimage *m, int64_t offset, const kl_mrec *r, int change,
                             kl_err *err) {
  const kl_mtop *id = fld(r, "TopicId"), *pid = fld(r, "PartitionId");
  if (!id || !pid) return kl_err_set(err, KL_CORRUPT, "%s without a topic id or partition", r->type->name);
  if (!lookup(&m->topics, id->p, 16)) {
    char s[23];
    kl_uuid_str(id->p, s);
    return kl_err_set(err, KL_CORRUPT, "%s of partition %d of topic id %s, which no TopicRecord "
                      "created", r->type->name, (int)pid->i, s);
  }
  uint8_t k[20];
  part_key(k, id->p, (int32_t)pid->i);
  part *p = (part *)(change ? lookup(&m->parts, k, 20) : get(m->env, &m->parts, k, 20, sizeof *p));
  if (!p && change) {
    return kl_err_set(err, KL_CORRUPT, "PartitionChangeRecord of partition %d, which no "
                      "PartitionRecord created", (int)pid->i);
  }
  if (!p) return kl_err_set(err, KL_NOMEM, "out of memory");
  kl_mi_part *q = &p->p;
  if (!change) {
    /* Set whole: what the record does not carry takes the spec's default. */
    part_clear(m->env, q);
    memcpy(q->topic_id, id->p, 16);
    q->partition = (int32_t)pid->i;
    const kl_mtop *f;
    q->leader = (f = fld(r, "Leader")) ? (int32_t)f->i : -1;
    q->leader_epoch = (f = fld(r, "LeaderEpoch")) ? (int32_t)f->i : -1;
    q->partition_epoch = (f = fld(r, "PartitionEpoch")) ? (int32_t)f->i : -1;
    q->leader_recovery_state = (f = fld(r, "LeaderRecoveryState")) ? (int8_t)f->i : 0;
  } else {
    const kl_mtop *f = fld(r, "Leader");
    if (f && f->i != -2) { /* -2: NO_LEADER_CHANGE */
      q->leader = (int32_t)f->i;
      q->leader_epoch = epoch_next(q->leader_epoch);
    }
    if ((f = fld(r, "LeaderRecoveryState")) && f->i != -1) q->leader_recovery_state = (int8_t)f->i;
    q->partition_epoch = epoch_next(q->partition_epoch);
  }
  if (apply_ids(m->env, q, r)) return kl_err_set(err, KL_NOMEM, "out of memory");
  q->offset = offset;
  p->e.live = 1;
  return KL_OK;
}

/* The key of a topic config: topic name, NUL, config name, NUL (n bytes):
** the two names are C strings in it.  A name holding a NUL byte (Kafka
** accepts none in a topic name) is shown up to it. */
static uint8_t *config_key(const kl_env *env, const kl_mtop *res, const kl_mtop *name, size_t *n) {
  *n = (size_t)res->n + 1 + (size_t)name->n + 1;
  uint8_t *k = kl_malloc(env, *n);
  if (!k) return NULL;
  memcpy(k, res->p, (size_t)res->n);
  k[res->n] = 0;
  memcpy(k + res->n + 1, name->p, (size_t)name->n);
  k[*n - 1] = 0;
  return k;
}

static kl_rc apply_config(kl_mimage *m, const kl_mrec *r, kl_err *err) {
  const kl_mtop *type = fld(r, "ResourceType"), *res = fld(r, "ResourceName"),
                *name = fld(r, "Name"), *value = fld(r, "Value");
  if (!type || type->i != 2) return KL_OK; /* 2: TOPIC; broker configs are not a topic's */
  if (!res || !name || res->null || name->null || !value) {
    return kl_err_set(err, KL_CORRUPT, "ConfigRecord without a resource or config name");
  }
  size_t n;
  uint8_t *k = config_key(m->env, res, name, &n);
  config *c = k ? (config *)get(m->env, &m->configs, k, n, sizeof *c) : NULL;
  kl_free(m->env, k);
  if (!c) return kl_err_set(err, KL_NOMEM, "out of memory");
  char *v = value->null ? NULL : dup_bytes(m->env, value->p, value->n);
  if (!value->null && !v) return kl_err_set(err, KL_NOMEM, "out of memory");
  kl_free(m->env, c->c.value);
  c->c.value = v;
  c->c.name = (char *)c->e.key + strlen((const char *)c->e.key) + 1;
  c->e.live = v != NULL;
  return KL_OK;
}

static kl_rc apply_remove(kl_mimage *m, const kl_mrec *r, kl_err *err) {
  const kl_mtop *id = fld(r, "TopicId");
  topic *t = id ? (topic *)lookup(&m->topics, id->p, 16) : NULL;
  if (!t) {
    char s[23] = "?";
    if (id) kl_uuid_str(id->p, s);
    return kl_err_set(err, KL_CORRUPT, "RemoveTopicRecord of topic id %s, which is not there", s);
  }
  t->e.live = 0;
  for (size_t i = 0; i < m->parts.cap; i++) {
    part *p = (part *)m->parts.s[i];
    if (p && memcmp(p->p.topic_id, id->p, 16) == 0) p->e.live = 0;
  }
  size_t len = strlen(t->t.name);
  for (size_t i = 0; i < m->configs.cap; i++) {
    config *c = (config *)m->configs.s[i];
    if (c && c->e.klen > len && c->e.key[len] == 0 && memcmp(c->e.key, t->t.name, len) == 0) {
      c->e.live = 0;
    }
  }
  return KL_OK;
}

kl_rc kl_mimage_apply(kl_mimage *m, int64_t offset, const kl_mrec *rec, kl_err *err) {
  if (!rec->type) return KL_OK;
  switch (rec->api_key) {
    case 2: return apply_topic(m, offset, rec, err);
    case 3: return apply_partition(m, offset, rec, 0, err);
    case 4: return apply_config(m, rec, err);
    case 5: return apply_partition(m, offset, rec, 1, err);
    case 9: return apply_remove(m, rec, err);
  }
  return KL_OK;
}

/* ---- the sorted views ---- */

static int cmp_topic(const void *a, const void *b) {
  return strcmp((*(const kl_mi_topic *const *)a)->name, (*(const kl_mi_topic *const *)b)->name);
}

static int cmp_config(const void *a, const void *b) {
  const config *x = *(const config *const *)a, *y = *(const config *const *)b;
  size_t n = x->e.klen < y->e.klen ? x->e.klen : y->e.klen;
  int c = memcmp(x->e.key, y->e.key, n);
  return c ? c : (x->e.klen > y->e.klen) - (x->e.klen < y->e.klen);
}

static int cmp_part(const void *a, const void *b) {
  const kl_mi_part *x = *(const kl_mi_part *const *)a, *y = *(const kl_mi_part *const *)b;
  if (!x->topic != !y->topic) return x->topic ? -1 : 1;
  int c = x->topic ? strcmp(x->topic, y->topic) : memcmp(x->topic_id, y->topic_id, 16);
  if (c) return c;
  return (x->partition > y->partition) - (x->partition < y->partition);
}

/* Every live entry of mp into a fresh array *out (owned by m). */
static kl_rc collect(kl_mimage *m, const map *mp, size_t off, void ***out, size_t *n) {
  kl_free(m->env, *out);
  *out = kl_malloc(m->env, (mp->count ? mp->count : 1) * sizeof **out);
  if (!*out) return KL_NOMEM;
  *n = 0;
  for (size_t i = 0; i < mp->cap; i++) {
    if (mp->s[i] && mp->s[i]->live) (*out)[(*n)++] = (char *)mp->s[i] + off;
  }
  return KL_OK;
}

kl_rc kl_mimage_topics(kl_mimage *m, const kl_mi_topic *const **out, size_t *n) {
  size_t nc;
  void **cs = NULL;
  kl_rc rc = collect(m, &m->topics, offsetof(topic, t), (void ***)&m->tsorted, n);
  if (rc == KL_OK) rc = collect(m, &m->configs, 0, &cs, &nc);
  if (rc) {
    kl_free(m->env, cs);
    return rc;
  }
  qsort(m->tsorted, *n, sizeof *m->tsorted, cmp_topic);
  qsort(cs, nc, sizeof *cs, cmp_config);
  kl_free(m->env, m->csorted);
  m->csorted = kl_malloc(m->env, (nc ? nc : 1) * sizeof *m->csorted);
  if (!m->csorted) {
    kl_free(m->env, cs);
    return KL_NOMEM;
  }
  for (size_t i = 0; i < nc; i++) m->csorted[i] = &((config *)cs[i])->c;
  /* Topics and config keys ("<topic>\0<name>\0") sort alike, so each
  ** topic's configs are the next run of keys: one merge. */
  size_t j = 0;
  for (size_t i = 0; i < *n; i++) {
    kl_mi_topic *t = (kl_mi_topic *)m->tsorted[i];
    while (j < nc && strcmp((const char *)((config *)cs[j])->e.key, t->name) < 0) j++;
    t->configs = &m->csorted[j];
    t->nconfigs = 0;
    while (j < nc && strcmp((const char *)((config *)cs[j])->e.key, t->name) == 0) {
      j++;
      t->nconfigs++;
    }
    t->partitions = 0;
  }
  for (size_t i = 0; i < m->parts.cap; i++) {
    part *p = (part *)m->parts.s[i];
    topic *t = p && p->e.live ? (topic *)lookup(&m->topics, p->p.topic_id, 16) : NULL;
    if (t) t->t.partitions++;
  }
  kl_free(m->env, cs);
  *out = m->tsorted;
  return KL_OK;
}

kl_rc kl_mimage_parts(kl_mimage *m, const kl_mi_part *const **out, size_t *n) {
  kl_rc rc = collect(m, &m->parts, offsetof(part, p), (void ***)&m->psorted, n);
  if (rc) return rc;
  for (size_t i = 0; i < *n; i++) {
    kl_mi_part *p = (kl_mi_part *)m->psorted[i];
    topic *t = (topic *)lookup(&m->topics, p->topic_id, 16);
    p->topic = t ? t->t.name : NULL;
  }
  qsort(m->psorted, *n, sizeof *m->psorted, cmp_part);
  *out = m->psorted;
  return KL_OK;
}
