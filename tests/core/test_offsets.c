/*
** test_offsets.c - __consumer_offsets records: keys and values of every
** version encoded here by hand from Kafka's published schemas
** (OffsetCommitKey, OffsetCommitValue, GroupMetadataKey), not with the
** decoder's code; unknown key types skipped; every truncation and each
** kind of malformed field refused; the fold (last commit wins, tombstones,
** replicas, order) and allocation failure at every allocation.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "offsets.h"

static void commit_key(t_bytes *t, int version, const char *group, const char *topic, int32_t part) {
  t->n = 0;
  t_be16(t, version);
  t_str(t, group);
  t_str(t, topic);
  t_be32(t, part);
}

/* Parse bytes from an allocation of exactly their size, so that a read
** past the end is caught by AddressSanitizer; the fields that point into
** the copy are then pointed at the same bytes of t, which outlives it. */
static const uint8_t *rebase(const uint8_t *q, const uint8_t *copy, const t_bytes *t) {
  return q ? t->b + (q - copy) : NULL;
}
static kl_rc parse_key(const t_bytes *t, size_t n, kl_offsets_key *k, kl_err *err) {
  uint8_t *p = malloc(n ? n : 1);
  memcpy(p, t->b, n);
  kl_err_clear(err);
  kl_rc rc = kl_offsets_key_parse(p, n, k, err);
  k->group = rebase(k->group, p, t);
  k->topic = rebase(k->topic, p, t);
  free(p);
  return rc;
}
static kl_rc parse_value(const t_bytes *t, size_t n, kl_offsets_value *v, kl_err *err) {
  uint8_t *p = malloc(n ? n : 1);
  memcpy(p, t->b, n);
  kl_err_clear(err);
  kl_rc rc = kl_offsets_value_parse(p, n, v, err);
  v->metadata = rebase(v->metadata, p, t);
  free(p);
  return rc;
}

static void assert_bytes(const uint8_t *p, int32_t n, const char *want) {
  if (!want) {
    assert_null(p);
    assert_int_equal(n, -1);
    return;
  }
  assert_non_null(p);
  assert_int_equal(n, (int32_t)strlen(want));
  assert_memory_equal(p, want, strlen(want));
}

/* Every strict prefix of t is refused as corrupt, with a message. */
static void assert_prefixes_corrupt(const t_bytes *t, int is_key) {
  for (size_t n = 0; n < t->n; n++) {
    kl_err err;
    kl_offsets_key k;
    kl_offsets_value v;
    kl_rc rc = is_key ? parse_key(t, n, &k, &err) : parse_value(t, n, &v, &err);
    if (rc != KL_CORRUPT) fail_msg("prefix of %zu of %zu bytes: %s", n, t->n, kl_rc_name(rc));
    assert_true(strncmp(err.msg, is_key ? "key: " : "value: ", is_key ? 5 : 7) == 0);
  }
}

/* ---- keys ---- */

static void test_key_commit(void **state) {
  /* Version 1 spelled out byte by byte: "g1", "orders", partition 7. */
  static const uint8_t v1[] = {0x00, 0x01, 0x00, 0x02, 'g', '1', 0x00, 0x06, 'o', 'r', 'd',
                               'e',  'r',  's',  0x00, 0x00, 0x00, 0x07};
  t_bytes t = {.n = sizeof v1};
  memcpy(t.b, v1, sizeof v1);
  kl_offsets_key k;
  kl_err err;
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
  assert_int_equal(k.version, 1);
  assert_int_equal(k.type, KL_OFFSETS_COMMIT);
  assert_bytes(k.group, k.group_len, "g1");
  assert_bytes(k.topic, k.topic_len, "orders");
  assert_int_equal(k.partition, 7);
  assert_prefixes_corrupt(&t, 1);

  /* Version 0, an empty group (Kafka allows it), a large partition. */
  commit_key(&t, 0, "", "t", 0x7fffffff);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
  assert_int_equal(k.version, 0);
  assert_int_equal(k.type, KL_OFFSETS_COMMIT);
  assert_bytes(k.group, k.group_len, "");
  assert_bytes(k.topic, k.topic_len, "t");
  assert_int_equal(k.partition, 0x7fffffff);
  assert_prefixes_corrupt(&t, 1);

  /* Bytes after the partition are not read (Kafka's reader stops there). */
  commit_key(&t, 1, "g", "t", 3);
  t_u8(&t, 0xee);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
  assert_int_equal(k.partition, 3);
}

static void test_key_group_metadata(void **state) {
  t_bytes t = {0};
  t_be16(&t, 2);
  t_str(&t, "payments");
  kl_offsets_key k;
  kl_err err;
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
  assert_int_equal(k.type, KL_OFFSETS_GROUP);
  assert_int_equal(k.version, 2);
  assert_bytes(k.group, k.group_len, "payments");
  assert_prefixes_corrupt(&t, 1);
}

static void test_key_other_types(void **state) {
  /* KIP-848 consumer group records (3..8), share groups (9..15), future
  ** ones and negative types: skipped, whatever follows. */
  static const int types[] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 99, 0x7fff, -1,
                              -32768};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    t_bytes t = {0};
    t_be16(&t, types[i]);
    kl_offsets_key k;
    kl_err err;
    assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
    assert_int_equal(k.type, KL_OFFSETS_OTHER);
    assert_int_equal(k.version, types[i]);
    t_be16(&t, 0x7fff); /* a string length past the end: not read */
    assert_int_equal(parse_key(&t, t.n, &k, &err), KL_OK);
    assert_int_equal(k.type, KL_OFFSETS_OTHER);
  }
}

static void test_key_malformed(void **state) {
  kl_offsets_key k;
  kl_err err;
  t_bytes t = {0};
  /* A null group or topic names nothing. */
  commit_key(&t, 0, NULL, "t", 0);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: group has length -1");
  commit_key(&t, 1, "g", NULL, 0);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: topic has length -1");
  t.n = 0;
  t_be16(&t, 2);
  t_str(&t, NULL);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_CORRUPT);
  /* Other negative lengths. */
  t.n = 0;
  t_be16(&t, 0);
  t_be16(&t, -2);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: group has length -2");
  /* A length past the end. */
  t.n = 0;
  t_be16(&t, 1);
  t_be16(&t, 40);
  t_raw(&t, "short", 5);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: group needs 40 bytes, 5 left");
  /* One byte: no type. */
  t.n = 0;
  t_u8(&t, 0);
  assert_int_equal(parse_key(&t, t.n, &k, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "key: type needs 2 bytes, 1 left");
}

/* ---- values ---- */

static void test_value_v0_v1_v2(void **state) {
  kl_offsets_value v;
  kl_err err;
  for (int ver = 0; ver <= 2; ver++) {
    t_bytes t = {0};
    t_be16(&t, ver);
    t_be64(&t, 1234567890123LL);
    t_str(&t, "meta");
    t_be64(&t, 1700000000000LL);
    if (ver == 1) t_be64(&t, 1700086400000LL);
    assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
    assert_int_equal(v.version, ver);
    assert_int_equal(v.offset, 1234567890123LL);
    assert_int_equal(v.leader_epoch, -1);
    assert_bytes(v.metadata, v.metadata_len, "meta");
    assert_int_equal(v.commit_timestamp, 1700000000000LL);
    assert_int_equal(v.expire_timestamp, ver == 1 ? 1700086400000LL : -1);
    assert_prefixes_corrupt(&t, 0);
  }
  /* Null and empty metadata. */
  t_bytes t = {0};
  t_be16(&t, 0);
  t_be64(&t, 5);
  t_str(&t, NULL);
  t_be64(&t, 6);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_bytes(v.metadata, v.metadata_len, NULL);
  assert_int_equal(v.commit_timestamp, 6);
  t.n = 0;
  t_be16(&t, 2);
  t_be64(&t, 5);
  t_str(&t, "");
  t_be64(&t, 6);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_bytes(v.metadata, v.metadata_len, "");
}

static void test_value_v3(void **state) {
  /* Spelled out: offset 42, leader epoch 9, metadata "m", commit ts 1000. */
  static const uint8_t b[] = {0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 9, 0x00, 0x01, 'm',
                              0, 0, 0, 0, 0, 0, 0x03, 0xe8};
  t_bytes t = {.n = sizeof b};
  memcpy(t.b, b, sizeof b);
  kl_offsets_value v;
  kl_err err;
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_int_equal(v.version, 3);
  assert_int_equal(v.offset, 42);
  assert_int_equal(v.leader_epoch, 9);
  assert_bytes(v.metadata, v.metadata_len, "m");
  assert_int_equal(v.commit_timestamp, 1000);
  assert_int_equal(v.expire_timestamp, -1);
  assert_prefixes_corrupt(&t, 0);
  /* Trailing bytes are not read (Kafka's reader stops at the last field). */
  t_u8(&t, 0xff);
  t_u8(&t, 0xff);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_int_equal(v.commit_timestamp, 1000);
  /* A leader epoch of -1 is as stored. */
  memset(t.b + 10, 0xff, 4);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_int_equal(v.leader_epoch, -1);
}

static void test_value_v4(void **state) {
  kl_offsets_value v;
  kl_err err;
  /* No tagged fields. */
  t_bytes t = {0};
  t_be16(&t, 4);
  t_be64(&t, -1);
  t_be32(&t, 17);
  t_cstr(&t, "consumer-1");
  t_be64(&t, 1700000000123LL);
  t_u8(&t, 0); /* no tagged fields */
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_int_equal(v.version, 4);
  assert_int_equal(v.offset, -1);
  assert_int_equal(v.leader_epoch, 17);
  assert_bytes(v.metadata, v.metadata_len, "consumer-1");
  assert_int_equal(v.commit_timestamp, 1700000000123LL);
  assert_int_equal(v.expire_timestamp, -1);
  assert_prefixes_corrupt(&t, 0);

  /* Null metadata (compact length 0) and three tagged fields: tag 0 of 3
  ** bytes, tag 300 (two-byte varint) of 0 bytes, tag 1 of 130 bytes (a
  ** two-byte size). */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 77);
  t_be32(&t, -1);
  t_u8(&t, 0x00);
  t_be64(&t, 88);
  t_u8(&t, 3);
  t_u8(&t, 0);
  t_u8(&t, 3);
  t_raw(&t, "abc", 3);
  t_u8(&t, 0xac);
  t_u8(&t, 0x02);
  t_u8(&t, 0);
  t_u8(&t, 1);
  t_u8(&t, 0x82);
  t_u8(&t, 0x01);
  for (int i = 0; i < 130; i++) t_u8(&t, (unsigned)i);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_int_equal(v.offset, 77);
  assert_int_equal(v.leader_epoch, -1);
  assert_bytes(v.metadata, v.metadata_len, NULL);
  assert_int_equal(v.commit_timestamp, 88);
  assert_prefixes_corrupt(&t, 0);

  /* Empty metadata (compact length 1). */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 1);
  t_be32(&t, 0);
  t_u8(&t, 0x01);
  t_be64(&t, 2);
  t_u8(&t, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_bytes(v.metadata, v.metadata_len, "");

  /* Metadata of 200 bytes: a two-byte compact length (201 = 0xc9 0x01). */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 1);
  t_be32(&t, 0);
  t_u8(&t, 0xc9);
  t_u8(&t, 0x01);
  for (int i = 0; i < 200; i++) t_u8(&t, 'x');
  t_be64(&t, 2);
  t_u8(&t, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_OK);
  assert_int_equal(v.metadata_len, 200);
  assert_int_equal(v.metadata[199], 'x');
  assert_int_equal(v.commit_timestamp, 2);
}

static void test_value_unknown_version(void **state) {
  /* Kafka fails its load on a value version its schema does not know. */
  static const int versions[] = {5, 6, 0x7fff, -1, -32768};
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    t_bytes t = {0};
    t_be16(&t, versions[i]);
    t_be64(&t, 1);
    t_str(&t, "");
    t_be64(&t, 2);
    t_be64(&t, 3);
    t_u8(&t, 0);
    kl_offsets_value v;
    kl_err err;
    assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
    char want[100];
    snprintf(want, sizeof want, "value: unknown offset commit version %d (0 to 4 are known)",
             versions[i]);
    assert_string_equal(err.msg, want);
  }
}

static void test_value_malformed(void **state) {
  kl_offsets_value v;
  kl_err err;
  t_bytes t = {0};
  /* A metadata length past the end. */
  t_be16(&t, 1);
  t_be64(&t, 1);
  t_be16(&t, 100);
  t_raw(&t, "0123456789", 10);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: metadata needs 100 bytes, 10 left");
  /* A metadata length below -1. */
  t.n = 0;
  t_be16(&t, 3);
  t_be64(&t, 1);
  t_be32(&t, 0);
  t_be16(&t, -7);
  t_be64(&t, 1);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: metadata has length -7");
  /* A compact metadata past Kafka's string limit (32768 + 1: 0x81 0x80 0x02). */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 1);
  t_be32(&t, 0);
  t_u8(&t, 0x81);
  t_u8(&t, 0x80);
  t_u8(&t, 0x02);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: metadata has invalid length 32768");
  /* A varint of six bytes. */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 1);
  t_be32(&t, 0);
  for (int i = 0; i < 5; i++) t_u8(&t, 0x80);
  t_u8(&t, 0x00);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: metadata varint is longer than 5 bytes");
  /* A five-byte varint past INT32_MAX. */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 1);
  t_be32(&t, 0);
  t_cstr(&t, "m");
  t_be64(&t, 2);
  for (int i = 0; i < 4; i++) t_u8(&t, 0xff);
  t_u8(&t, 0x0f);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: tagged field count varint 4294967295 is out of range");
  /* A tagged field whose size runs past the end. */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 1);
  t_be32(&t, 0);
  t_cstr(&t, "m");
  t_be64(&t, 2);
  t_u8(&t, 1);
  t_u8(&t, 0);
  t_u8(&t, 9);
  t_raw(&t, "abcd", 4);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: tagged field needs 9 bytes, 4 left");
  /* More tagged fields counted than present. */
  t.n = 0;
  t_be16(&t, 4);
  t_be64(&t, 1);
  t_be32(&t, 0);
  t_cstr(&t, "m");
  t_be64(&t, 2);
  t_u8(&t, 2);
  t_u8(&t, 0);
  t_u8(&t, 0);
  assert_int_equal(parse_value(&t, t.n, &v, &err), KL_CORRUPT);
  assert_string_equal(err.msg, "value: tag needs 1 bytes, 0 left");
}

/* ---- the fold ---- */

typedef struct rec {
  t_bytes key, value;
  int tombstone;
} rec;

static void add_ok(kl_offsets *o, int32_t part, int64_t off, const t_bytes *key, const t_bytes *value) {
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_offsets_add(o, part, off, key->b, (int32_t)key->n, value ? value->b : NULL,
                            value ? (int32_t)value->n : -1, &err);
  if (rc != KL_OK) fail_msg("add %d/%lld: %s %s", part, (long long)off, kl_rc_name(rc), err.msg);
}

static void value_v3(t_bytes *t, int64_t offset, int32_t epoch, const char *meta, int64_t ts) {
  t->n = 0;
  t_be16(t, 3);
  t_be64(t, offset);
  t_be32(t, epoch);
  t_str(t, meta);
  t_be64(t, ts);
}

/* The fold's rows as text, one line each. */
static char *render(kl_offsets *o) {
  const kl_offsets_row *const *rows;
  size_t n;
  assert_int_equal(kl_offsets_rows(o, &rows, &n), KL_OK);
  size_t cap = 64 + n * 256, len = 0;
  char *s = malloc(cap);
  s[0] = 0;
  for (size_t i = 0; i < n; i++) {
    const kl_offsets_row *r = rows[i];
    char meta[64];
    if (r->v.metadata) snprintf(meta, sizeof meta, "'%.*s'", (int)r->v.metadata_len, r->v.metadata);
    else snprintf(meta, sizeof meta, "NULL");
    len += (size_t)snprintf(s + len, cap - len, "%.*s|%.*s|%d|%lld|%d|%s|%lld|%lld|%d|%lld\n",
                            (int)r->group_len, r->group, (int)r->topic_len, r->topic,
                            r->partition, (long long)r->v.offset, r->v.leader_epoch, meta,
                            (long long)r->v.commit_timestamp, (long long)r->v.expire_timestamp,
                            r->offsets_partition, (long long)r->record_offset);
  }
  return s;
}

static void test_fold(void **state) {
  kl_offsets *o;
  assert_int_equal(kl_offsets_new(NULL, &o), KL_OK);
  t_bytes k1, k2, k3, k4, v, gk;
  commit_key(&k1, 1, "g", "orders", 0);
  commit_key(&k2, 1, "g", "orders", 1);
  commit_key(&k3, 0, "ab", "t", 0);   /* "ab" after "a", before "g" */
  commit_key(&k4, 1, "a", "t", 2);
  gk.n = 0;
  t_be16(&gk, 2);
  t_str(&gk, "g");

  value_v3(&v, 10, 1, "first", 100);
  add_ok(o, 0, 0, &k1, &v);
  value_v3(&v, 20, 1, "second", 200);
  add_ok(o, 0, 1, &k1, &v);          /* last wins */
  add_ok(o, 0, 2, &gk, &v);          /* group metadata: value not even read */
  add_ok(o, 0, 3, &gk, NULL);        /* its tombstone: skipped */
  value_v3(&v, 5, 2, NULL, 300);
  add_ok(o, 0, 4, &k2, &v);
  add_ok(o, 0, 5, &k2, NULL);        /* tombstone: gone */
  value_v3(&v, 7, 2, "k3", 400);
  add_ok(o, 1, 0, &k3, &v);
  add_ok(o, 1, 1, &k4, NULL);        /* tombstone of nothing */
  value_v3(&v, 8, 3, "k4", 500);
  add_ok(o, 1, 2, &k4, &v);          /* back after its tombstone */
  value_v3(&v, 99, 9, "older", 50);
  add_ok(o, 0, 0, &k1, &v);          /* a replica behind: the same or older records */
  t_bytes other = {0};
  t_be16(&other, 9);
  add_ok(o, 0, 6, &other, &v);       /* a share group record */

  char *s = render(o);
  assert_string_equal(s,
                      "a|t|2|8|3|'k4'|500|-1|1|2\n"
                      "ab|t|0|7|2|'k3'|400|-1|1|0\n"
                      "g|orders|0|20|1|'second'|200|-1|0|1\n");
  free(s);

  /* k2 back, in v1 with an expire timestamp. */
  v.n = 0;
  t_be16(&v, 1);
  t_be64(&v, 55);
  t_str(&v, "");
  t_be64(&v, 600);
  t_be64(&v, 700);
  add_ok(o, 0, 10, &k2, &v);
  /* A key found in a higher partition wins over a lower one. */
  value_v3(&v, 66, 4, "p2", 800);
  add_ok(o, 2, 0, &k1, &v);
  value_v3(&v, 67, 4, "p0", 900);
  add_ok(o, 0, 20, &k1, &v);
  s = render(o);
  assert_string_equal(s,
                      "a|t|2|8|3|'k4'|500|-1|1|2\n"
                      "ab|t|0|7|2|'k3'|400|-1|1|0\n"
                      "g|orders|0|66|4|'p2'|800|-1|2|0\n"
                      "g|orders|1|55|-1|''|600|700|0|10\n");
  free(s);

  /* A bad record is refused and changes nothing. */
  kl_err err;
  kl_err_clear(&err);
  v.n = 0;
  t_be16(&v, 5);
  assert_int_equal(kl_offsets_add(o, 0, 30, k1.b, (int32_t)k1.n, v.b, (int32_t)v.n, &err),
                   KL_CORRUPT);
  assert_string_equal(err.msg, "value: unknown offset commit version 5 (0 to 4 are known)");
  kl_err_clear(&err);
  assert_int_equal(kl_offsets_add(o, 0, 31, NULL, -1, v.b, (int32_t)v.n, &err), KL_CORRUPT);
  assert_true(strncmp(err.msg, "key: null", 9) == 0);
  kl_err_clear(&err);
  assert_int_equal(kl_offsets_add(o, 0, 32, k1.b, 3, NULL, -1, &err), KL_CORRUPT);
  s = render(o);
  assert_string_equal(s,
                      "a|t|2|8|3|'k4'|500|-1|1|2\n"
                      "ab|t|0|7|2|'k3'|400|-1|1|0\n"
                      "g|orders|0|66|4|'p2'|800|-1|2|0\n"
                      "g|orders|1|55|-1|''|600|700|0|10\n");
  free(s);
  kl_offsets_free(o);
}

/* Many keys: the table grows, the order is bytewise (0xc3 after 'z'). */
static void test_fold_many(void **state) {
  kl_offsets *o;
  assert_int_equal(kl_offsets_new(NULL, &o), KL_OK);
  t_bytes k, v;
  for (int i = 0; i < 3000; i++) {
    char g[32];
    snprintf(g, sizeof g, "%s%04d", i % 2 ? "\xc3\xa9t\xc3\xa9" : "zz", (i * 7919) % 3000);
    commit_key(&k, 1, g, "t", i % 3);
    value_v3(&v, i, 0, "", i);
    add_ok(o, 0, i, &k, &v);
    if (i % 5 == 0) add_ok(o, 0, i, &k, NULL); /* same offset: not newer, ignored */
    if (i % 10 == 1) add_ok(o, 0, i + 100000, &k, NULL);
  }
  const kl_offsets_row *const *rows;
  size_t n;
  assert_int_equal(kl_offsets_rows(o, &rows, &n), KL_OK);
  assert_int_equal(n, 3000 - 300);
  for (size_t i = 1; i < n; i++) {
    const kl_offsets_row *a = rows[i - 1], *b = rows[i];
    int32_t m = a->group_len < b->group_len ? a->group_len : b->group_len;
    int c = memcmp(a->group, b->group, (size_t)m);
    if (!c) c = a->group_len - b->group_len;
    if (!c) c = a->partition - b->partition;
    assert_true(c < 0);
  }
  assert_int_equal(rows[0]->group[0], 'z');
  assert_int_equal(rows[n - 1]->group[0], 0xc3);
  kl_offsets_free(o);
}

/* Every allocation fails in turn: KL_NOMEM, nothing leaked, and the fold
** afterwards as if the failed record had never come. */
static void test_fold_nomem(void **state) {
  for (long fail = 1;; fail++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, fail);
    kl_offsets *o = NULL;
    if (kl_offsets_new(env, &o) == KL_NOMEM) {
      assert_int_equal(fa.live, 0);
      continue;
    }
    t_bytes k, v;
    int failed = 0;
    for (int i = 0; i < 100; i++) {
      char g[16];
      snprintf(g, sizeof g, "g%d", i % 40);
      commit_key(&k, 1, g, "t", 0);
      char meta[64];
      memset(meta, 'm', sizeof meta);
      meta[i % 60] = 0; /* growing metadata: reallocations */
      value_v3(&v, i, 0, meta, i);
      kl_err err;
      kl_err_clear(&err);
      kl_rc rc = kl_offsets_add(o, 0, i, k.b, (int32_t)k.n, v.b, (int32_t)v.n, &err);
      if (rc == KL_NOMEM) {
        failed = 1;
        continue;
      }
      assert_int_equal(rc, KL_OK);
    }
    const kl_offsets_row *const *rows;
    size_t n;
    kl_rc rc = kl_offsets_rows(o, &rows, &n);
    if (rc == KL_NOMEM) failed = 1;
    else assert_int_equal(n, 40);
    kl_offsets_free(o);
    assert_int_equal(fa.live, 0);
    if (!failed) break;
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key_commit),
      cmocka_unit_test(test_key_group_metadata),
      cmocka_unit_test(test_key_other_types),
      cmocka_unit_test(test_key_malformed),
      cmocka_unit_test(test_value_v0_v1_v2),
      cmocka_unit_test(test_value_v3),
      cmocka_unit_test(test_value_v4),
      cmocka_unit_test(test_value_unknown_version),
      cmocka_unit_test(test_value_malformed),
      cmocka_unit_test(test_fold),
      cmocka_unit_test(test_fold_many),
      cmocka_unit_test(test_fold_nomem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
