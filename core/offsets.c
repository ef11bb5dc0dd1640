/*
** offsets.c - __consumer_offsets records: decoding (layouts in offsets.h)
** and the fold of commits into a hash map keyed by (group, topic,
** partition).
*/
#include "offsets.h"

#include "fold.h"
#include "kmsg.h"

#include <stdlib.h>
#include <string.h>

/* A string field into a (bytes, length) pair of the decoded struct. */
static kl_rc get_string(kl_kmsg *r, const char *field, int flags, const uint8_t **s,
                        int32_t *len) {
  kl_kslice v;
  kl_rc rc = kl_kmsg_string(r, field, flags, &v);
  if (rc == KL_OK) {
    *s = v.p;
    *len = v.n;
  }
  return rc;
}

kl_rc kl_offsets_key_parse(const uint8_t *p, size_t n, kl_offsets_key *out, kl_err *err) {
  kl_kmsg r;
  kl_kmsg_init(&r, p, n, "key", err);
  memset(out, 0, sizeof *out);
  out->group_len = out->topic_len = -1;
  out->partition = -1;
  kl_rc rc = kl_kmsg_i16(&r, "type", &out->version);
  if (rc) return rc;
  switch (out->version) {
    case 0: case 1:
      out->type = KL_OFFSETS_COMMIT;
      rc = get_string(&r, "group", 0, &out->group, &out->group_len);
      if (rc == KL_OK) rc = get_string(&r, "topic", 0, &out->topic, &out->topic_len);
      if (rc == KL_OK) rc = kl_kmsg_i32(&r, "partition", &out->partition);
      return rc;
    case 2:
      out->type = KL_OFFSETS_GROUP;
      return get_string(&r, "group", 0, &out->group, &out->group_len);
  }
  /* Newer coordinators write types this reader does not know: their
  ** presence is no damage (Kafka's loader skips them too). */
  out->type = KL_OFFSETS_OTHER;
  return KL_OK;
}

kl_rc kl_offsets_value_parse(const uint8_t *p, size_t n, kl_offsets_value *out, kl_err *err) {
  kl_kmsg r;
  kl_kmsg_init(&r, p, n, "value", err);
  memset(out, 0, sizeof *out);
  out->leader_epoch = -1;
  out->expire_timestamp = -1;
  out->metadata_len = -1;
  kl_rc rc = kl_kmsg_i16(&r, "version", &out->version);
  if (rc) return rc;
  int16_t v = out->version;
  if (v < 0 || v > 4) {
    return kl_err_set(err, KL_CORRUPT, "value: unknown offset commit version %d (0 to 4 are known)",
                      (int)v);
  }
  rc = kl_kmsg_i64(&r, "offset", &out->offset);
  if (rc == KL_OK && v >= 3) rc = kl_kmsg_i32(&r, "leader epoch", &out->leader_epoch);
  if (rc == KL_OK) {
    int flags = KL_KMSG_NULLABLE | (v == 4 ? KL_KMSG_COMPACT : 0);
    rc = get_string(&r, "metadata", flags, &out->metadata, &out->metadata_len);
  }
  if (rc == KL_OK) rc = kl_kmsg_i64(&r, "commit timestamp", &out->commit_timestamp);
  if (rc == KL_OK && v == 1) rc = kl_kmsg_i64(&r, "expire timestamp", &out->expire_timestamp);
  /* OffsetCommitValue defines no tagged field: every one is skipped. */
  if (rc == KL_OK && v == 4) rc = kl_kmsg_skip_tags(&r);
  return rc;
}

/* ---- the fold ---- */

/* One (group, topic, partition): its latest record; group and topic bytes
** follow the struct in the same allocation, the metadata is kept in the
** head. */
typedef struct entry {
  kl_fold_head head;        /* first: the fold's */
  kl_offsets_row row;
} entry;

struct kl_offsets {
  kl_fold fold;
  const kl_offsets_row **sorted;  /* what kl_offsets_rows gave */
  size_t sorted_cap;
};

kl_rc kl_offsets_new(const kl_env *env, kl_offsets **out) {
  *out = kl_malloc(env, sizeof **out);
  if (!*out) return KL_NOMEM;
  memset(*out, 0, sizeof **out);
  kl_fold_init(&(*out)->fold, env);
  return KL_OK;
}

void kl_offsets_free(kl_offsets *o) {
  if (!o) return;
  const kl_env *env = o->fold.env;
  kl_fold_free(&o->fold);
  kl_free(env, o->sorted);
  kl_free(env, o);
}

/* Lengths are hashed too, so that ("ab","c") and ("a","bc") differ. */
static uint64_t key_hash(const kl_offsets_key *k) {
  uint64_t h = KL_FOLD_HASH0;
  h = kl_fold_hash(h, &k->group_len, sizeof k->group_len);
  h = kl_fold_hash(h, k->group, (size_t)k->group_len);
  h = kl_fold_hash(h, &k->topic_len, sizeof k->topic_len);
  h = kl_fold_hash(h, k->topic, (size_t)k->topic_len);
  return kl_fold_hash(h, &k->partition, sizeof k->partition);
}

static int key_is(const kl_fold_head *h, const void *key) {
  const kl_offsets_key *k = key;
  const kl_offsets_row *r = &((const entry *)h)->row;
  return r->partition == k->partition && r->group_len == k->group_len &&
         r->topic_len == k->topic_len && memcmp(r->group, k->group, (size_t)k->group_len) == 0 &&
         memcmp(r->topic, k->topic, (size_t)k->topic_len) == 0;
}

/* A new entry for k, its key copied; NULL when out of memory. */
static entry *new_entry(kl_offsets *o, const kl_offsets_key *k, uint64_t h) {
  size_t glen = (size_t)k->group_len, tlen = (size_t)k->topic_len;
  entry *e = kl_malloc(o->fold.env, sizeof *e + glen + tlen);
  if (!e) return NULL;
  memset(e, 0, sizeof *e);
  uint8_t *s = (uint8_t *)(e + 1);
  memcpy(s, k->group, glen);
  memcpy(s + glen, k->topic, tlen);
  e->row.group = s;
  e->row.group_len = k->group_len;
  e->row.topic = s + glen;
  e->row.topic_len = k->topic_len;
  e->row.partition = k->partition;
  e->head.hash = h;
  return e;
}

kl_rc kl_offsets_add(kl_offsets *o, int32_t offsets_partition, int64_t record_offset,
                     const uint8_t *key, int32_t key_len, const uint8_t *value, int32_t value_len,
                     kl_err *err) {
  if (!key || key_len < 0) {
    return kl_err_set(err, KL_CORRUPT, "key: null (the coordinator writes a key on every record)");
  }
  kl_offsets_key k;
  kl_rc rc = kl_offsets_key_parse(key, (size_t)key_len, &k, err);
  if (rc) return rc;
  if (k.type != KL_OFFSETS_COMMIT) return KL_OK;
  kl_offsets_value v;
  int live = value && value_len >= 0;
  if (live && (rc = kl_offsets_value_parse(value, (size_t)value_len, &v, err)) != KL_OK) return rc;
  if (!live) {
    memset(&v, 0, sizeof v);
    v.metadata_len = -1;
  }

  if ((rc = kl_fold_reserve(&o->fold)) != KL_OK) return kl_err_set(err, rc, "out of memory");
  uint64_t h = key_hash(&k);
  size_t i = kl_fold_find(&o->fold, h, key_is, &k);
  entry *e = (entry *)o->fold.slots[i];
  if (e && kl_fold_stale(e->row.offsets_partition, e->row.record_offset, offsets_partition,
                         record_offset)) {
    return KL_OK; /* an older record, or the same one in another replica */
  }
  if (!e && (e = new_entry(o, &k, h)) == NULL) return kl_err_set(err, KL_NOMEM, "out of memory");
  if (v.metadata_len > 0 && kl_fold_keep(&o->fold, &e->head, v.metadata,
                                         (size_t)v.metadata_len) != KL_OK) {
    if (!o->fold.slots[i]) kl_free(o->fold.env, e);
    return kl_err_set(err, KL_NOMEM, "out of memory");
  }
  /* A zero-length metadata still needs a non-NULL pointer: NULL is null. */
  if (v.metadata_len >= 0) v.metadata = v.metadata_len > 0 ? e->head.val : (const uint8_t *)"";
  e->row.v = v;
  e->row.offsets_partition = offsets_partition;
  e->row.record_offset = record_offset;
  e->head.live = live;
  if (!o->fold.slots[i]) kl_fold_insert(&o->fold, i, &e->head);
  return KL_OK;
}

static int cmp_bytes(const uint8_t *a, int32_t an, const uint8_t *b, int32_t bn) {
  int c = memcmp(a, b, (size_t)(an < bn ? an : bn));
  if (c) return c;
  return (an > bn) - (an < bn);
}

static int cmp_rows(const void *x, const void *y) {
  const kl_offsets_row *a = *(const kl_offsets_row *const *)x;
  const kl_offsets_row *b = *(const kl_offsets_row *const *)y;
  int c = cmp_bytes(a->group, a->group_len, b->group, b->group_len);
  if (!c) c = cmp_bytes(a->topic, a->topic_len, b->topic, b->topic_len);
  if (!c) c = (a->partition > b->partition) - (a->partition < b->partition);
  return c;
}

kl_rc kl_offsets_rows(kl_offsets *o, const kl_offsets_row *const **rows, size_t *n) {
  if (o->fold.count > o->sorted_cap) {
    const kl_offsets_row **s = kl_realloc(o->fold.env, o->sorted, o->fold.count * sizeof *s);
    if (!s) return KL_NOMEM;
    o->sorted = s;
    o->sorted_cap = o->fold.count;
  }
  size_t k = 0;
  for (size_t i = 0; i < o->fold.cap; i++) {
    const entry *e = (const entry *)o->fold.slots[i];
    if (e && e->head.live) o->sorted[k++] = &e->row;
  }
  if (k > 1) qsort(o->sorted, k, sizeof *o->sorted, cmp_rows);
  *rows = o->sorted;
  *n = k;
  return KL_OK;
}
