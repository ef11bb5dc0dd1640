/*
** test_txnlog.c - __transaction_state records: keys and values of both
** value versions and every status, encoded here by hand from Kafka's
** published schemas (TransactionLogKey, TransactionLogValue), not with the
** decoder's code; v1's tagged fields (the three known, unknown ones
** skipped, a known one of the wrong size refused); unknown key versions
** skipped, unknown value versions and statuses refused; every truncation
** refused; partitions as JSON and looked up; the fold (latest record
** wins, tombstones, replicas) and allocation failure at every allocation.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "txnlog.h"

static void key(t_bytes *t, int version, const char *id) {
  t->n = 0;
  t_be16(t, version);
  t_str(t, id);
}

/* One partitions entry: a topic and up to 4 ids (-1 ends the list). */
typedef struct part {
  const char *topic;
  int ids[4];
} part;

/* A value; nparts -1 writes a null array.  Tags for v1 are appended by
** the caller after the fixed part when tags is set. */
static void value(t_bytes *t, int version, int64_t pid, int epoch, int32_t timeout, int status,
                  const part *parts, int nparts, int64_t update, int64_t start, int add_tags) {
  t->n = 0;
  t_be16(t, version);
  t_be64(t, pid);
  t_be16(t, epoch);
  t_be32(t, timeout);
  t_u8(t, (unsigned)status);
  if (version == 0) t_be32(t, nparts);
  else t_u8(t, nparts < 0 ? 0 : (unsigned)nparts + 1);
  for (int i = 0; i < nparts; i++) {
    int k = 0;
    while (k < 4 && parts[i].ids[k] >= 0) k++;
    if (version == 0) {
      t_str(t, parts[i].topic);
      t_be32(t, k);
    } else {
      t_cstr(t, parts[i].topic);
      t_u8(t, (unsigned)k + 1);
    }
    for (int j = 0; j < k; j++) t_be32(t, parts[i].ids[j]);
    if (version == 1) t_u8(t, 0);
  }
  t_be64(t, update);
  t_be64(t, start);
  if (version == 1 && !add_tags) t_u8(t, 0);
}

/* Parse from an allocation of exactly the bytes (ASan sees overreads);
** the copy is kept by the caller's t_bytes, so pointers are rebased. */
static kl_rc parse_value(const t_bytes *t, size_t n, kl_txnlog_value *v, kl_err *err) {
  uint8_t *p = malloc(n ? n : 1);
  memcpy(p, t->b, n);
  kl_err_clear(err);
  kl_rc rc = kl_txnlog_value_parse(p, n, v, err);
  if (v->parts) v->parts = t->b + (v->parts - p);
  free(p);
  return rc;
}

static kl_rc parse_key(const t_bytes *t, size_t n, kl_txnlog_key *k, kl_err *err) {
  uint8_t *p = malloc(n ? n : 1);
  memcpy(p, t->b, n);
  kl_err_clear(err);
  kl_rc rc = kl_txnlog_key_parse(p, n, k, err);
  if (k->id.p) k->id.p = t->b + (k->id.p - p);
  free(p);
  return rc;
}

static void assert_json(const kl_txnlog_value *v, const char *want) {
  kl_buf b = {0};
  assert_int_equal(kl_txnlog_partitions_json(NULL, v, &b), KL_OK);
  assert_int_equal(b.len, strlen(want));
  assert_memory_equal(b.p, want, b.len);
  kl_buf_free(NULL, &b);
}

static void assert_prefixes_corrupt(const t_bytes *t) {
  for (size_t n = 0; n < t->n; n++) {
    kl_txnlog_value v;
    kl_err err;
    kl_rc rc = parse_value(t, n, &v, &err);
    if (rc != KL_CORRUPT) fail_msg("prefix of %zu of %zu bytes: %s", n, t->n, kl_rc_name(rc));
    assert_true(strncmp(err.msg, "value: ", 7) == 0);
  }
}

static void test_key(void **state) {
  t_bytes t;
  kl_txnlog_key k;
  kl_err err;
  key(&t, 0, "payments-app");
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
  assert_true(k.known);
  assert_int_equal(k.id.n, 12);
  assert_memory_equal(k.id.p, "payments-app", 12);
  /* A newer coordinator's key version: skipped, as Kafka's loader does. */
  key(&t, 1, "x");
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
  assert_false(k.known);
  /* Truncated, a null id. */
  key(&t, 0, "abc");
  assert_int_equal(parse_key(&t, 4, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: transactional id needs 3 bytes, 0 left");
  assert_int_equal(parse_key(&t, 1, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: version needs 2 bytes, 1 left");
  t.n = 0;
  t_be16(&t, 0);
  t_be16(&t, -1);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: transactional id has length -1");
}

static void test_value_v0_every_status(void **state) {
  static const char *names[] = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort",
                                "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"};
  const part parts[] = {{"orders", {0, 2, -1}}, {"pay\"ments", {7, -1}}};
  for (int s = 0; s < 8; s++) {
    t_bytes t;
    value(&t, 0, 1000 + s, 3, 60000, s, parts, 2, 1700000000123, 1700000000000, 0);
    kl_txnlog_value v;
    kl_err err;
    assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
    assert_int_equal(v.version, 0);
    assert_int_equal(v.producer_id, 1000 + s);
    assert_int_equal(v.producer_epoch, 3);
    assert_int_equal(v.timeout_ms, 60000);
    assert_int_equal(v.state, s);
    assert_string_equal(kl_txnlog_state_name(v.state), names[s]);
    assert_int_equal(v.nparts, 2);
    assert_true(v.last_update_ts == 1700000000123);
    assert_true(v.start_ts == 1700000000000);
    assert_int_equal(v.prev_producer_id, -1);
    assert_int_equal(v.next_producer_id, -1);
    assert_int_equal(v.client_txn_version, 0);
    assert_json(&v, "[{\"topic\":\"orders\",\"partition\":0},"
                    "{\"topic\":\"orders\",\"partition\":2},"
                    "{\"topic\":\"pay\\\"ments\",\"partition\":7}]");
    assert_true(kl_txnlog_has_partition(&v, "orders", 6, 2));
    assert_true(kl_txnlog_has_partition(&v, "pay\"ments", 9, 7));
    assert_false(kl_txnlog_has_partition(&v, "orders", 6, 7));
    assert_false(kl_txnlog_has_partition(&v, "order", 5, 0));
    assert_prefixes_corrupt(&t);
  }
  assert_null(kl_txnlog_state_name(8));
  assert_null(kl_txnlog_state_name(-1));
}

static void test_value_v1_every_status(void **state) {
  const part parts[] = {{"ledger", {0, -1}}};
  for (int s = 0; s < 8; s++) {
    t_bytes t;
    value(&t, 1, 2000, 1, 30000, s, parts, 1, 20, 10, 0);
    kl_txnlog_value v;
    kl_err err;
    assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
    assert_int_equal(v.version, 1);
    assert_int_equal(v.state, s);
    assert_int_equal(v.nparts, 1);
    assert_json(&v, "[{\"topic\":\"ledger\",\"partition\":0}]");
    assert_true(v.last_update_ts == 20 && v.start_ts == 10);
    assert_prefixes_corrupt(&t);
  }
}

static void test_value_null_and_empty_partitions(void **state) {
  t_bytes t;
  kl_txnlog_value v;
  kl_err err;
  for (int version = 0; version <= 1; version++) {
    value(&t, version, 1, 0, 1, 0, NULL, -1, 5, -1, 0);
    assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
    assert_int_equal(v.nparts, -1);
    assert_json(&v, "[]");
    assert_false(kl_txnlog_has_partition(&v, "a", 1, 0));
    value(&t, version, 1, 0, 1, 0, NULL, 0, 5, -1, 0);
    assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
    assert_int_equal(v.nparts, 0);
    assert_json(&v, "[]");
  }
  /* A topic with no ids, a control byte in a topic name. */
  const part odd[] = {{"none", {-1}}, {"t\x01", {3, -1}}};
  value(&t, 1, 1, 0, 1, 1, odd, 2, 5, 1, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_json(&v, "[{\"topic\":\"t\\u0001\",\"partition\":3}]");
}

static void test_value_v1_tags(void **state) {
  t_bytes t;
  kl_txnlog_value v;
  kl_err err;
  value(&t, 1, 3001, 0, 1, 5, NULL, 0, 2, 1, 1);
  t_u8(&t, 4);                /* four tagged fields */
  t_u8(&t, 0); t_u8(&t, 8); t_be64(&t, 3000);      /* PreviousProducerId */
  t_u8(&t, 1); t_u8(&t, 8); t_be64(&t, 3002);      /* NextProducerId */
  t_u8(&t, 2); t_u8(&t, 2); t_be16(&t, 2);         /* ClientTransactionVersion */
  t_u8(&t, 9); t_u8(&t, 3); t_u8(&t, 1); t_u8(&t, 2); t_u8(&t, 3); /* unknown: skipped */
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_int_equal(v.prev_producer_id, 3000);
  assert_int_equal(v.next_producer_id, 3002);
  assert_int_equal(v.client_txn_version, 2);
  assert_prefixes_corrupt(&t);
  /* A known tag of the wrong size. */
  value(&t, 1, 3001, 0, 1, 5, NULL, 0, 2, 1, 1);
  t_u8(&t, 1);
  t_u8(&t, 0); t_u8(&t, 9); t_be64(&t, 3000); t_u8(&t, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: 1 bytes after previous producer id");
  value(&t, 1, 3001, 0, 1, 5, NULL, 0, 2, 1, 1);
  t_u8(&t, 1);
  t_u8(&t, 2); t_u8(&t, 1); t_u8(&t, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: client transaction version needs 2 bytes, 1 left");
  /* Bytes after the last field are ignored, as Kafka's reader ignores them. */
  value(&t, 0, 1, 0, 1, 0, NULL, 0, 2, 1, 0);
  t_u8(&t, 0xee);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
}

static void test_value_refused(void **state) {
  t_bytes t;
  kl_txnlog_value v;
  kl_err err;
  static const int versions[] = {2, 7, -1};
  for (int i = 0; i < 3; i++) {
    value(&t, 0, 1, 0, 1, 0, NULL, 0, 2, 1, 0);
    t.b[0] = (uint8_t)((unsigned)versions[i] >> 8);
    t.b[1] = (uint8_t)versions[i];
    assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
    char want[100];
    snprintf(want, sizeof want, "value: unknown transaction log version %d (0 and 1 are known)",
             versions[i]);
    assert_string_equal(err.msg, want);
  }
  value(&t, 0, 1, 0, 1, 8, NULL, 0, 2, 1, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: unknown transaction status 8 (0 to 7 are known)");
  value(&t, 1, 1, 0, 1, -1, NULL, 0, 2, 1, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: unknown transaction status -1 (0 to 7 are known)");
  /* A partition count past the bytes left; a partition id count too. */
  value(&t, 0, 1, 0, 1, 1, NULL, 0, 2, 1, 0);
  t.b[2 + 8 + 2 + 4 + 1 + 3] = 200;
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: transaction partitions counts 200 elements, 16 bytes left");
  const part one[] = {{"a", {1, -1}}};
  value(&t, 0, 1, 0, 1, 1, one, 1, 2, 1, 0);
  t.b[2 + 8 + 2 + 4 + 1 + 4 + 3 + 3] = 100;
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: partition ids counts 100 elements, 20 bytes left");
}

/* ---- the fold ---- */

static void add(kl_txnlog *f, int32_t lp, int64_t off, const char *id, const t_bytes *v) {
  t_bytes k;
  key(&k, 0, id);
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_txnlog_add(f, lp, off, off * 10, k.b, (int32_t)k.n, v ? v->b : NULL,
                           v ? (int32_t)v->n : -1, &err);
  if (rc) fail_msg("%s", err.msg);
}

static void test_fold(void **state) {
  kl_txnlog *f;
  assert_int_equal(kl_txnlog_new(NULL, &f), KL_OK);
  t_bytes v;
  const part p0[] = {{"orders", {0, -1}}};
  value(&v, 0, 10, 0, 1, 1, p0, 1, 2, 1, 0);
  add(f, 0, 0, "b", &v);
  value(&v, 1, 10, 0, 1, 4, NULL, 0, 3, 1, 0);
  add(f, 0, 1, "b", &v);            /* latest wins */
  value(&v, 0, 20, 0, 1, 1, p0, 1, 2, 1, 0);
  add(f, 0, 2, "a", &v);
  add(f, 0, 3, "gone", &v);
  add(f, 0, 4, "gone", NULL);       /* a tombstone deletes */
  value(&v, 0, 99, 0, 1, 0, NULL, 0, 2, 1, 0);
  add(f, 0, 1, "a", &v);            /* older than what is known: ignored */
  t_bytes k;
  key(&k, 3, "future");
  kl_err err;
  kl_err_clear(&err);
  assert_int_equal(kl_txnlog_add(f, 0, 5, 0, k.b, (int32_t)k.n, v.b, 2, &err), KL_OK);
  /* A null key, a bad value: refused, the fold unchanged. */
  assert_int_equal(kl_txnlog_add(f, 0, 6, 0, NULL, -1, v.b, (int32_t)v.n, &err), KL_CORRUPT);
  kl_err_clear(&err);
  key(&k, 0, "a");
  assert_int_equal(kl_txnlog_add(f, 0, 7, 0, k.b, (int32_t)k.n, v.b, 5, &err), KL_CORRUPT);
  const kl_txnlog_row *const *rows;
  size_t n;
  assert_int_equal(kl_txnlog_rows(f, &rows, &n), KL_OK);
  assert_int_equal(n, 2);
  assert_int_equal(rows[0]->id.n, 1);
  assert_memory_equal(rows[0]->id.p, "a", 1);
  assert_int_equal(rows[0]->v.producer_id, 20);
  assert_int_equal(rows[0]->record_offset, 2);
  assert_int_equal(rows[0]->record_ts, 20);
  assert_json(&rows[0]->v, "[{\"topic\":\"orders\",\"partition\":0}]");
  assert_memory_equal(rows[1]->id.p, "b", 1);
  assert_int_equal(rows[1]->v.state, 4);
  assert_int_equal(rows[1]->v.version, 1);
  /* A deleted id comes back with its next record. */
  value(&v, 0, 30, 0, 1, 0, NULL, 0, 2, 1, 0);
  add(f, 0, 8, "gone", &v);
  assert_int_equal(kl_txnlog_rows(f, &rows, &n), KL_OK);
  assert_int_equal(n, 3);
  assert_memory_equal(rows[1]->id.p, "b", 1);
  assert_memory_equal(rows[2]->id.p, "gone", 4);
  kl_txnlog_free(f);
}

static void test_fold_nomem(void **state) {
  for (long fail = 1;; fail++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, fail);
    kl_txnlog *f = NULL;
    if (kl_txnlog_new(env, &f) == KL_NOMEM) {
      assert_int_equal(fa.live, 0);
      continue;
    }
    int failed = 0;
    for (int i = 0; i < 100; i++) {
      char id[16];
      snprintf(id, sizeof id, "id%d", i % 40);
      t_bytes k, v;
      key(&k, 0, id);
      part ps[3] = {{"a", {1, -1}}, {"b", {2, 3, -1}}, {"c", {4, -1}}};
      value(&v, i % 2, i, 0, 1, 1, ps, i % 4, 2, 1, 0);
      kl_err err;
      kl_err_clear(&err);
      kl_rc rc = kl_txnlog_add(f, 0, i, 0, k.b, (int32_t)k.n, v.b, (int32_t)v.n, &err);
      if (rc == KL_NOMEM) {
        failed = 1;
        continue;
      }
      assert_int_equal(rc, KL_OK);
    }
    const kl_txnlog_row *const *rows;
    size_t n;
    kl_rc rc = kl_txnlog_rows(f, &rows, &n);
    if (rc == KL_NOMEM) failed = 1;
    else if (!failed) assert_int_equal(n, 40);
    kl_txnlog_free(f);
    assert_int_equal(fa.live, 0);
    if (!failed) break;
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key),
      cmocka_unit_test(test_value_v0_every_status),
      cmocka_unit_test(test_value_v1_every_status),
      cmocka_unit_test(test_value_null_and_empty_partitions),
      cmocka_unit_test(test_value_v1_tags),
      cmocka_unit_test(test_value_refused),
      cmocka_unit_test(test_fold),
      cmocka_unit_test(test_fold_nomem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
