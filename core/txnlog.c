/*
** txnlog.c - __transaction_state records: decoding (layouts in txnlog.h)
** and the fold of each transactional id's latest record.
*/
#include "txnlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"

static const char *const state_names[] = {
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
    "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence",
};

const char *kl_txnlog_state_name(int state) {
  return state >= 0 && state < 8 ? state_names[state] : NULL;
}

kl_rc kl_txnlog_key_parse(const uint8_t *p, size_t n, kl_txnlog_key *out, kl_err *err) {
  kl_kmsg r;
  kl_kmsg_init(&r, p, n, "key", err);
  memset(out, 0, sizeof *out);
  out->id.n = -1;
  kl_rc rc = kl_kmsg_i16(&r, "version", &out->version);
  if (rc || out->version != 0) return rc;
  out->known = 1;
  return kl_kmsg_string(&r, "transactional id", 0, &out->id);
}

/* One TransactionPartitions entry, checked and passed over. */
static kl_rc skip_partition_entry(kl_kmsg *r, int flex) {
  int flags = flex ? KL_KMSG_COMPACT : 0;
  kl_kslice topic;
  int32_t n = 0, id;
  kl_rc rc = kl_kmsg_string(r, "partition topic", flags, &topic);
  if (rc == KL_OK) rc = kl_kmsg_array(r, "partition ids", flags, &n);
  for (int32_t i = 0; rc == KL_OK && i < n; i++) rc = kl_kmsg_i32(r, "partition id", &id);
  if (rc == KL_OK && flex) rc = kl_kmsg_skip_tags(r);
  return rc;
}

/* The value's tagged fields (v1): the three Kafka defines, others skipped. */
static kl_rc value_tags(kl_kmsg *r, kl_txnlog_value *v) {
  uint32_t n = 0, tag;
  kl_kmsg f;
  kl_rc rc = kl_kmsg_tags(r, &n);
  for (uint32_t i = 0; rc == KL_OK && i < n; i++) {
    if ((rc = kl_kmsg_tag(r, &tag, &f)) != KL_OK) break;
    switch (tag) {
      case 0:
        rc = kl_kmsg_i64(&f, "previous producer id", &v->prev_producer_id);
        if (rc == KL_OK) rc = kl_kmsg_end(&f, "previous producer id");
        break;
      case 1:
        rc = kl_kmsg_i64(&f, "next producer id", &v->next_producer_id);
        if (rc == KL_OK) rc = kl_kmsg_end(&f, "next producer id");
        break;
      case 2:
        rc = kl_kmsg_i16(&f, "client transaction version", &v->client_txn_version);
        if (rc == KL_OK) rc = kl_kmsg_end(&f, "client transaction version");
        break;
    }
  }
  return rc;
}

kl_rc kl_txnlog_value_parse(const uint8_t *p, size_t n, kl_txnlog_value *out, kl_err *err) {
  kl_kmsg r;
  kl_kmsg_init(&r, p, n, "value", err);
  memset(out, 0, sizeof *out);
  out->nparts = -1;
  out->prev_producer_id = out->next_producer_id = -1;
  kl_rc rc = kl_kmsg_i16(&r, "version", &out->version);
  if (rc) return rc;
  if (out->version < 0 || out->version > 1) {
    return kl_err_set(err, KL_CORRUPT,
                      "value: unknown transaction log version %d (0 and 1 are known)",
                      (int)out->version);
  }
  int flex = out->version == 1;
  int8_t state = 0;
  rc = kl_kmsg_i64(&r, "producer id", &out->producer_id);
  if (rc == KL_OK) rc = kl_kmsg_i16(&r, "producer epoch", &out->producer_epoch);
  if (rc == KL_OK) rc = kl_kmsg_i32(&r, "transaction timeout", &out->timeout_ms);
  if (rc == KL_OK) rc = kl_kmsg_i8(&r, "transaction status", &state);
  if (rc == KL_OK && !kl_txnlog_state_name(state)) {
    return kl_err_set(err, KL_CORRUPT, "value: unknown transaction status %d (0 to 7 are known)",
                      (int)state);
  }
  out->state = state;
  int flags = KL_KMSG_NULLABLE | (flex ? KL_KMSG_COMPACT : 0);
  if (rc == KL_OK) rc = kl_kmsg_array(&r, "transaction partitions", flags, &out->nparts);
  out->parts = r.p;
  for (int32_t i = 0; rc == KL_OK && i < out->nparts; i++) rc = skip_partition_entry(&r, flex);
  out->parts_len = (size_t)(r.p - out->parts);
  if (rc == KL_OK) rc = kl_kmsg_i64(&r, "last update timestamp", &out->last_update_ts);
  if (rc == KL_OK) rc = kl_kmsg_i64(&r, "start timestamp", &out->start_ts);
  if (rc == KL_OK && flex) rc = value_tags(&r, out);
  return rc;
}

/* Walks the validated partition bytes of v: the next (topic, ids) entry. */
typedef struct part_iter {
  kl_kmsg r;
  int flex;
  int32_t left;             /* entries not yet read */
} part_iter;

static void part_iter_init(part_iter *it, const kl_txnlog_value *v) {
  kl_kmsg_init(&it->r, v->parts, v->parts_len, "value", NULL);
  it->flex = v->version == 1;
  it->left = v->nparts < 0 ? 0 : v->nparts;
}

/* The next entry's topic and id count; the ids follow in it->r. */
static int part_iter_next(part_iter *it, kl_kslice *topic, int32_t *nids) {
  if (it->left-- <= 0) return 0;
  int flags = it->flex ? KL_KMSG_COMPACT : 0;
  return kl_kmsg_string(&it->r, "", flags, topic) == KL_OK &&
         kl_kmsg_array(&it->r, "", flags, nids) == KL_OK;
}

static void part_iter_end_entry(part_iter *it) {
  if (it->flex) kl_kmsg_skip_tags(&it->r);
}

/* JSON string body of n bytes: quotes, backslashes and control bytes
** escaped; other bytes as they are (the caller's text rule applies). */
static kl_rc json_str(const kl_env *env, kl_buf *out, const uint8_t *s, int32_t n) {
  kl_rc rc = kl_buf_append(env, out, "\"", 1);
  for (int32_t i = 0; rc == KL_OK && i < n; i++) {
    char esc[8];
    if (s[i] == '"' || s[i] == '\\') {
      esc[0] = '\\';
      esc[1] = (char)s[i];
      rc = kl_buf_append(env, out, esc, 2);
    } else if (s[i] < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", s[i]);
      rc = kl_buf_append(env, out, esc, 6);
    } else {
      rc = kl_buf_append(env, out, &s[i], 1);
    }
  }
  if (rc == KL_OK) rc = kl_buf_append(env, out, "\"", 1);
  return rc;
}

kl_rc kl_txnlog_partitions_json(const kl_env *env, const kl_txnlog_value *v, kl_buf *out) {
  part_iter it;
  part_iter_init(&it, v);
  kl_kslice topic;
  int32_t nids, id;
  int first = 1;
  kl_rc rc = kl_buf_append(env, out, "[", 1);
  while (rc == KL_OK && part_iter_next(&it, &topic, &nids)) {
    for (int32_t i = 0; rc == KL_OK && i < nids; i++) {
      char num[40];
      kl_kmsg_i32(&it.r, "", &id);
      if (!first) rc = kl_buf_append(env, out, ",", 1);
      first = 0;
      if (rc == KL_OK) rc = kl_buf_append(env, out, "{\"topic\":", 9);
      if (rc == KL_OK) rc = json_str(env, out, topic.p, topic.n);
      int k = snprintf(num, sizeof num, ",\"partition\":%d}", (int)id);
      if (rc == KL_OK) rc = kl_buf_append(env, out, num, (size_t)k);
    }
    part_iter_end_entry(&it);
  }
  if (rc == KL_OK) rc = kl_buf_append(env, out, "]", 1);
  return rc;
}

int kl_txnlog_has_partition(const kl_txnlog_value *v, const char *topic, size_t topic_len,
                            int32_t partition) {
  part_iter it;
  part_iter_init(&it, v);
  kl_kslice t;
  int32_t nids, id;
  while (part_iter_next(&it, &t, &nids)) {
    int same = (size_t)t.n == topic_len && memcmp(t.p, topic, topic_len) == 0;
    for (int32_t i = 0; i < nids; i++) {
      kl_kmsg_i32(&it.r, "", &id);
      if (same && id == partition) return 1;
    }
    part_iter_end_entry(&it);
  }
  return 0;
}

/* ---- the fold ---- */

/* One transactional id: its latest record; the id follows the struct in
** the same allocation, the value's partitions are kept in the head. */
typedef struct entry {
  kl_fold_head head;        /* first: the fold's */
  kl_txnlog_row row;
} entry;

struct kl_txnlog {
  kl_fold fold;
  const kl_txnlog_row **sorted;
  size_t sorted_cap;
};

kl_rc kl_txnlog_new(const kl_env *env, kl_txnlog **out) {
  *out = kl_malloc(env, sizeof **out);
  if (!*out) return KL_NOMEM;
  memset(*out, 0, sizeof **out);
  kl_fold_init(&(*out)->fold, env);
  return KL_OK;
}

void kl_txnlog_free(kl_txnlog *f) {
  if (!f) return;
  const kl_env *env = f->fold.env;
  kl_fold_free(&f->fold);
  kl_free(env, f->sorted);
  kl_free(env, f);
}

static int id_is(const kl_fold_head *h, const void *key) {
  const kl_kslice *id = key, *had = &((const entry *)h)->row.id;
  return had->n == id->n && memcmp(had->p, id->p, (size_t)id->n) == 0;
}

/* The entry of key k at slot i, made when absent; NULL when out of memory. */
static entry *entry_at(kl_txnlog *f, size_t i, uint64_t h, const kl_txnlog_key *k) {
  if (f->fold.slots[i]) return (entry *)f->fold.slots[i];
  entry *e = kl_malloc(f->fold.env, sizeof *e + (size_t)k->id.n + 1);
  if (!e) return NULL;
  memset(e, 0, sizeof *e);
  uint8_t *s = (uint8_t *)(e + 1);
  memcpy(s, k->id.p, (size_t)k->id.n);
  e->row.id.p = s;
  e->row.id.n = k->id.n;
  e->head.hash = h;
  return e;
}

kl_rc kl_txnlog_add(kl_txnlog *f, int32_t log_partition, int64_t record_offset,
                    int64_t record_ts, const uint8_t *key, int32_t key_len, const uint8_t *value,
                    int32_t value_len, kl_err *err) {
  if (!key || key_len < 0) {
    return kl_err_set(err, KL_CORRUPT, "key: null (the coordinator writes a key on every record)");
  }
  kl_txnlog_key k;
  kl_rc rc = kl_txnlog_key_parse(key, (size_t)key_len, &k, err);
  if (rc || !k.known) return rc;
  kl_txnlog_value v;
  int live = value && value_len >= 0;
  memset(&v, 0, sizeof v);
  if (live && (rc = kl_txnlog_value_parse(value, (size_t)value_len, &v, err)) != KL_OK) return rc;

  if (kl_fold_reserve(&f->fold) != KL_OK) return kl_err_set(err, KL_NOMEM, "out of memory");
  uint64_t h = kl_fold_hash(KL_FOLD_HASH0, k.id.p, (size_t)k.id.n);
  size_t i = kl_fold_find(&f->fold, h, id_is, &k.id);
  entry *e = (entry *)f->fold.slots[i];
  if (e && kl_fold_stale(e->row.log_partition, e->row.record_offset, log_partition,
                         record_offset)) {
    return KL_OK; /* an older record, or the same one in another replica */
  }
  if ((e = entry_at(f, i, h, &k)) == NULL) return kl_err_set(err, KL_NOMEM, "out of memory");
  if (live && kl_fold_keep(&f->fold, &e->head, v.parts, v.parts_len) != KL_OK) {
    if (!f->fold.slots[i]) kl_free(f->fold.env, e);
    return kl_err_set(err, KL_NOMEM, "out of memory");
  }
  if (live) v.parts = v.parts_len ? e->head.val : NULL;
  e->row.v = v;
  e->row.log_partition = log_partition;
  e->row.record_offset = record_offset;
  e->row.record_ts = record_ts;
  e->head.live = live;
  if (!f->fold.slots[i]) kl_fold_insert(&f->fold, i, &e->head);
  return KL_OK;
}

static int cmp_rows(const void *x, const void *y) {
  const kl_txnlog_row *a = *(const kl_txnlog_row *const *)x;
  const kl_txnlog_row *b = *(const kl_txnlog_row *const *)y;
  int c = memcmp(a->id.p, b->id.p, (size_t)(a->id.n < b->id.n ? a->id.n : b->id.n));
  return c ? c : (a->id.n > b->id.n) - (a->id.n < b->id.n);
}

kl_rc kl_txnlog_rows(kl_txnlog *f, const kl_txnlog_row *const **rows, size_t *n) {
  if (f->fold.count > f->sorted_cap) {
    const kl_txnlog_row **s = kl_realloc(f->fold.env, f->sorted, f->fold.count * sizeof *s);
    if (!s) return KL_NOMEM;
    f->sorted = s;
    f->sorted_cap = f->fold.count;
  }
  size_t k = 0;
  for (size_t i = 0; i < f->fold.cap; i++) {
    const entry *e = (const entry *)f->fold.slots[i];
    if (e && e->head.live) f->sorted[k++] = &e->row;
  }
  if (k > 1) qsort(f->sorted, k, sizeof *f->sorted, cmp_rows);
  *rows = f->sorted;
  *n = k;
  return KL_OK;
}
