/*
** test_batch.c - record batches v2 and legacy messages v0/v1: the varint
** vectors of Kafka's ByteUtilsTest, the byte-exact example batches of
** format.md (3.7, 4, 5.1), encode/decode round trips for every codec,
** CRC coverage (DefaultRecordBatchTest), truncation and header sanity,
** record-count and record-structure corruption, random mutations (run under
** ASan by the suite), legacy compressed wrappers (Kafka-written fixtures and
** hand-built ones) and allocation failure at every allocation.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "batch.h"
#include "builder.h"
#include "codec.h"
#include "crc32c.h"

/* A heap copy of exactly n bytes, so that ASan sees any read past them. */
static uint8_t *dup_exact(const uint8_t *p, size_t n) {
  uint8_t *q = malloc(n ? n : 1);
  assert_non_null(q);
  if (n) memcpy(q, p, n);
  return q;
}

/* Recompute the CRC-32C of a v2 batch after editing it. */
static void fix_crc_v2(uint8_t *p, size_t size) {
  kl_put_u32(p + 17, kl_crc32c(0, p + 21, size - 21));
}

/* Recompute the CRC-32 of a legacy message after editing it. */
static void fix_crc_legacy(uint8_t *p, size_t size) {
  kl_put_u32(p + 12, (uint32_t)crc32(0L, p + 16, (uInt)(size - 16)));
}

/* Parse a complete entry, asserting success. */
static void parse_ok(const uint8_t *p, size_t n, kl_batch *b) {
  kl_err err = {0};
  b->position = 0;
  kl_rc rc = kl_batch_parse(p, n, b, &err);
  if (rc != KL_OK) fail_msg("parse: %s: %s", kl_rc_name(rc), err.msg);
}

static void assert_bytes(const uint8_t *p, int32_t len, const char *want) {
  assert_non_null(p);
  assert_int_equal(len, (int32_t)strlen(want));
  assert_memory_equal(p, want, strlen(want));
}

/* ---- the vectors of format.md ---- */

/* format.md 3.7: baseOffset 0, epoch 0, CreateTime, two records. */
static const uint8_t EX88[88] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x4c,
    0x00, 0x00, 0x00, 0x00, 0x02, 0x30, 0xbd, 0xd1, 0xdf, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x01, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, 0x00,
    0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x05, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00,
    0x02, 0x14, 0x00, 0x00, 0x00, 0x04, 0x6b, 0x30, 0x04, 0x76, 0x30, 0x00,
    0x1e, 0x00, 0x0a, 0x02, 0x01, 0x0a, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x02,
    0x02, 0x68, 0x02, 0x78};

/* format.md 4: COMMIT marker, producer 1000, coordinator epoch 5. */
static const uint8_t COMMIT78[78] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x42,
    0x00, 0x00, 0x00, 0x00, 0x02, 0xcc, 0x8b, 0x9e, 0xc8, 0x00, 0x30, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x0a, 0x00,
    0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x03, 0xe8, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00,
    0x01, 0x20, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x05, 0x00};

/* format.md 5.1: v1, offset 0, CreateTime 1700000000000, key "k", "v". */
static const uint8_t V1_36[36] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x18,
    0x39, 0x26, 0x8c, 0x33, 0x01, 0x00, 0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5,
    0x68, 0x00, 0x00, 0x00, 0x00, 0x01, 0x6b, 0x00, 0x00, 0x00, 0x01, 0x76};

/* format.md 5.1: v0, offset 0, key null, value "v". */
static const uint8_t V0_27[27] = {
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f,
    0xd2, 0x0c, 0xbf, 0xf5, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00,
    0x00, 0x01, 0x76};

#define TS0 INT64_C(1700000000000)

/* The inputs of EX88. */
static const kl_header EX_HDR[1] = {{(const uint8_t *)"h", 1, (const uint8_t *)"x", 1}};
static const kl_rec_in EX_RECS[2] = {
    {TS0, "k0", 2, "v0", 2, NULL, 0},
    {TS0 + 5, NULL, -1, "hello", 5, EX_HDR, 1},
};

static kl_batch_spec plain_spec(int64_t base, int codec) {
  kl_batch_spec s;
  memset(&s, 0, sizeof s);
  s.base_offset = base;
  s.leader_epoch = 0;
  s.codec = codec;
  s.producer_id = -1;
  s.producer_epoch = -1;
  s.base_sequence = -1;
  return s;
}

/* ---------------------------------------------------------------------- */

typedef struct vec32 {
  int32_t v;
  uint8_t n;
  uint8_t b[5];
} vec32;

/*
** ByteUtilsTest.testVarintSerde / testVarlongSerde / testInvalidVarint /
** testInvalidVarlong: the zig-zag vectors encode to exactly these bytes and
** decode back; every strict prefix is "truncated" (0); over-long encodings
** (6-byte varint, 11-byte varlong) are rejected.
*/
static void test_varint_vectors(void **state) {
  static const vec32 v32[] = {
      {0, 1, {0x00}},
      {-1, 1, {0x01}},
      {1, 1, {0x02}},
      {63, 1, {0x7e}},
      {-64, 1, {0x7f}},
      {64, 2, {0x80, 0x01}},
      {-65, 2, {0x81, 0x01}},
      {8191, 2, {0xfe, 0x7f}},
      {-8192, 2, {0xff, 0x7f}},
      {8192, 3, {0x80, 0x80, 0x01}},
      {INT32_MAX, 5, {0xfe, 0xff, 0xff, 0xff, 0x0f}},
      {INT32_MIN, 5, {0xff, 0xff, 0xff, 0xff, 0x0f}},
  };
  for (size_t i = 0; i < sizeof v32 / sizeof v32[0]; i++) {
    uint8_t buf[16];
    memset(buf, 0xAA, sizeof buf);
    assert_int_equal(kl_varint_put32(buf, v32[i].v), v32[i].n);
    assert_memory_equal(buf, v32[i].b, v32[i].n);
    int32_t got = 0;
    assert_int_equal(kl_varint_get32(v32[i].b, v32[i].b + v32[i].n, &got), v32[i].n);
    assert_int_equal(got, v32[i].v);
    for (uint8_t k = 0; k < v32[i].n; k++) {
      assert_int_equal(kl_varint_get32(v32[i].b, v32[i].b + k, &got), 0);
    }
    /* The same value through the 64-bit codec decodes alike. */
    int64_t g64 = 0;
    assert_int_equal(kl_varint_get64(v32[i].b, v32[i].b + v32[i].n, &g64), v32[i].n);
    assert_int_equal(g64, v32[i].v);
  }

  static const struct {
    int64_t v;
    uint8_t n;
    uint8_t b[10];
  } v64[] = {
      {INT64_C(17179869184), 6, {0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
      {INT64_MAX, 10, {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {INT64_MIN, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
  };
  for (size_t i = 0; i < sizeof v64 / sizeof v64[0]; i++) {
    uint8_t buf[16];
    assert_int_equal(kl_varint_put64(buf, v64[i].v), v64[i].n);
    assert_memory_equal(buf, v64[i].b, v64[i].n);
    int64_t got = 0;
    assert_int_equal(kl_varint_get64(v64[i].b, v64[i].b + v64[i].n, &got), v64[i].n);
    assert_true(got == v64[i].v);
    assert_int_equal(kl_varint_get64(v64[i].b, v64[i].b + v64[i].n - 1, &got), 0);
  }

  /* Over-long encodings. */
  static const uint8_t bad32[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  int32_t g32;
  assert_int_equal(kl_varint_get32(bad32, bad32 + sizeof bad32, &g32), 0);
  static const uint8_t bad64[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0xff, 0xff, 0x01};
  int64_t g64;
  assert_int_equal(kl_varint_get64(bad64, bad64 + sizeof bad64, &g64), 0);
  /* A fifth varint byte with bits above bit 31 (Kafka drops them; we
  ** reject, format.md 3.5). */
  static const uint8_t high32[] = {0xfe, 0xff, 0xff, 0xff, 0x1f};
  assert_int_equal(kl_varint_get32(high32, high32 + sizeof high32, &g32), 0);

  /* Every int32 round-trips through both codecs (sampled). */
  uint64_t seed = 1;
  for (int i = 0; i < 100000; i++) {
    int32_t v = (int32_t)(uint32_t)t_rand(&seed);
    int64_t w = (int64_t)t_rand(&seed) >> (t_rand(&seed) % 64);
    uint8_t buf[16];
    size_t n = kl_varint_put32(buf, v);
    int32_t back;
    assert_int_equal(kl_varint_get32(buf, buf + n, &back), n);
    assert_int_equal(back, v);
    n = kl_varint_put64(buf, w);
    int64_t back64;
    assert_int_equal(kl_varint_get64(buf, buf + n, &back64), n);
    assert_true(back64 == w);
  }
}

/*
** format.md 3.7 / tests.md 66: the 88-byte example batch decodes to exactly
** the header fields and records it was built from; its CRC verifies.
*/
static void test_example_batch_decode(void **state) {
  kl_batch b;
  kl_err err = {0};
  parse_ok(EX88, sizeof EX88, &b);
  assert_int_equal(b.base_offset, 0);
  assert_int_equal(b.last_offset, 1);
  assert_int_equal(b.size, 88);
  assert_int_equal(b.magic, 2);
  assert_int_equal(b.codec, KL_CODEC_NONE);
  assert_int_equal(b.ts_type, KL_TS_CREATE);
  assert_false(b.is_transactional);
  assert_false(b.is_control);
  assert_true(b.first_known);
  assert_int_equal(b.attributes, 0);
  assert_int_equal(b.leader_epoch, 0);
  assert_int_equal(b.crc, 0x30BDD1DFu);
  assert_int_equal(b.last_offset_delta, 1);
  assert_true(b.base_timestamp == TS0);
  assert_true(b.max_timestamp == TS0 + 5);
  assert_int_equal(b.producer_id, -1);
  assert_int_equal(b.producer_epoch, -1);
  assert_int_equal(b.base_sequence, -1);
  assert_int_equal(b.record_count, 2);
  assert_ptr_equal(b.bytes, EX88);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);

  kl_records it;
  kl_record r;
  kl_buf scratch = {0};
  kl_stats st = {0};
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, &st, &err), KL_OK);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
  assert_int_equal(r.offset, 0);
  assert_true(r.timestamp == TS0);
  assert_bytes(r.key, r.key_len, "k0");
  assert_bytes(r.value, r.value_len, "v0");
  assert_int_equal(r.header_count, 0);
  assert_int_equal(r.headers_len, 0);
  assert_int_equal(r.sequence, -1);

  assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
  assert_int_equal(r.offset, 1);
  assert_true(r.timestamp == TS0 + 5);
  assert_null(r.key);
  assert_int_equal(r.key_len, -1);
  assert_bytes(r.value, r.value_len, "hello");
  assert_int_equal(r.header_count, 1);
  assert_int_equal(r.headers_len, 4);
  const uint8_t *hp = r.headers;
  kl_header h;
  assert_int_equal(kl_header_next(&hp, r.headers + r.headers_len, &h), KL_OK);
  assert_bytes(h.name, h.name_len, "h");
  assert_bytes(h.value, h.value_len, "x");
  assert_int_equal(kl_header_next(&hp, r.headers + r.headers_len, &h), KL_DONE);

  assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
  assert_int_equal(err.rc, KL_OK);
  assert_int_equal(st.batches_decoded, 1);
  assert_int_equal(st.bytes_decompressed, 0);
  assert_null(scratch.p); /* uncompressed: no copy */
  kl_buf_free(NULL, &scratch);
}

/*
** format.md 4 / tests.md 65: the 78-byte COMMIT marker batch: a
** transactional control batch of one record whose key is (0, COMMIT) and
** whose value carries coordinator epoch 5.
*/
static void test_commit_batch_decode(void **state) {
  kl_batch b;
  kl_err err = {0};
  parse_ok(COMMIT78, sizeof COMMIT78, &b);
  assert_int_equal(b.base_offset, 2);
  assert_int_equal(b.last_offset, 2);
  assert_int_equal(b.size, 78);
  assert_int_equal(b.attributes, 0x30);
  assert_true(b.is_transactional);
  assert_true(b.is_control);
  assert_int_equal(b.codec, KL_CODEC_NONE);
  assert_int_equal(b.ts_type, KL_TS_CREATE);
  assert_int_equal(b.crc, 0xCC8B9EC8u);
  assert_true(b.base_timestamp == TS0 + 10);
  assert_true(b.max_timestamp == TS0 + 10);
  assert_int_equal(b.producer_id, 1000);
  assert_int_equal(b.producer_epoch, 0);
  assert_int_equal(b.base_sequence, -1);
  assert_int_equal(b.record_count, 1);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);

  kl_records it;
  kl_record r;
  kl_buf scratch = {0};
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
  assert_int_equal(r.offset, 2);
  assert_true(r.timestamp == TS0 + 10);
  assert_int_equal(r.key_len, 4);
  assert_int_equal(r.value_len, 6);
  int type = -9;
  int32_t epoch = -9;
  assert_int_equal(kl_control_parse(&r, &type, &epoch, NULL), KL_OK);
  assert_int_equal(type, 1);
  assert_int_equal(epoch, 5);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
  kl_buf_free(NULL, &scratch);
}

/*
** Kafka's rules for control records (ControlRecordType.parseTypeId,
** EndTransactionMarker.deserializeValue; tests.md 73-75), one test each.
** ctl_record points r at a key (version, type, then `extra` bytes) and a
** marker value (version, coordinator epoch 15, then `vextra` bytes).
*/
typedef struct ctl_bytes {
  uint8_t key[16], val[16];
} ctl_bytes;

static kl_record ctl_record(ctl_bytes *cb, int version, int type, int extra, int vversion,
                            int vextra) {
  kl_record r;
  memset(&r, 0, sizeof r);
  memset(cb, 0xab, sizeof *cb);
  kl_put_u16(cb->key, (uint16_t)version);
  kl_put_u16(cb->key + 2, (uint16_t)type);
  kl_put_u16(cb->val, (uint16_t)vversion);
  kl_put_u32(cb->val + 2, 15);
  r.key = cb->key;
  r.key_len = 4 + extra;
  r.value = cb->val;
  r.value_len = 6 + vextra;
  return r;
}

static int ctl_parse(const kl_record *r, int *type, int32_t *epoch, char *msg, size_t n) {
  kl_err err = {0};
  *type = -9;
  *epoch = -9;
  kl_rc rc = kl_control_parse(r, type, epoch, &err);
  if (msg) snprintf(msg, n, "%s", err.msg);
  return rc;
}

/* A key version below 0: Kafka's InvalidRecordException. */
static void test_control_key_negative_version(void **state) {
  (void)state;
  ctl_bytes cb;
  int type;
  int32_t epoch;
  char msg[600];
  kl_record r = ctl_record(&cb, 0x8000, KL_CONTROL_COMMIT, 0, 0, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, msg, sizeof msg), KL_CORRUPT);
  assert_string_equal(msg, "control record key version -32768");
  r = ctl_record(&cb, 0xffff, KL_CONTROL_ABORT, 0, 0, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_CORRUPT);
}

/* A newer key version reads as version 0: the type from bytes 2-3. */
static void test_control_key_newer_version(void **state) {
  (void)state;
  ctl_bytes cb;
  int type;
  int32_t epoch;
  kl_record r = ctl_record(&cb, 5, KL_CONTROL_COMMIT, 0, 0, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
  assert_int_equal(type, KL_CONTROL_COMMIT);
  assert_int_equal(epoch, 15);
  r = ctl_record(&cb, 0x7fff, KL_CONTROL_ABORT, 0, 0, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
  assert_int_equal(type, KL_CONTROL_ABORT);
}

/* Bytes after the type are ignored: a COMMIT whose key is version 5
** followed by 4 more bytes is a COMMIT. */
static void test_control_key_trailing_bytes(void **state) {
  (void)state;
  ctl_bytes cb;
  int type;
  int32_t epoch;
  kl_record r = ctl_record(&cb, 5, KL_CONTROL_COMMIT, 4, 0, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
  assert_int_equal(type, KL_CONTROL_COMMIT);
  assert_int_equal(epoch, 15);
  r = ctl_record(&cb, 0, KL_CONTROL_ABORT, 12, 0, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
  assert_int_equal(type, KL_CONTROL_ABORT);
}

/* A key under 4 bytes (or null) has no type: corrupt. */
static void test_control_key_short(void **state) {
  (void)state;
  ctl_bytes cb;
  int type;
  int32_t epoch;
  char msg[600];
  for (int extra = -4; extra < 0; extra++) {
    kl_record r = ctl_record(&cb, 0, KL_CONTROL_COMMIT, extra, 0, 0);
    assert_int_equal(ctl_parse(&r, &type, &epoch, msg, sizeof msg), KL_CORRUPT);
  }
  assert_string_equal(msg, "control record key of 3 bytes (at least 4 needed)");
  kl_record r = ctl_record(&cb, 0, KL_CONTROL_COMMIT, 0, 0, 0);
  r.key = NULL;
  r.key_len = -1;
  assert_int_equal(ctl_parse(&r, &type, &epoch, msg, sizeof msg), KL_CORRUPT);
  assert_string_equal(msg, "control record with a null key");
}

/* An ABORT or COMMIT value: at least 6 bytes (version, coordinator
** epoch), a version >= 0; a newer version with more bytes reads as 0. */
static void test_control_value_version(void **state) {
  (void)state;
  ctl_bytes cb;
  int type;
  int32_t epoch;
  char msg[600];
  kl_record r = ctl_record(&cb, 0, KL_CONTROL_ABORT, 0, 0xffff, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, msg, sizeof msg), KL_CORRUPT);
  assert_string_equal(msg, "ABORT marker value version -1");
  r = ctl_record(&cb, 0, KL_CONTROL_COMMIT, 0, 0, -1);
  assert_int_equal(ctl_parse(&r, &type, &epoch, msg, sizeof msg), KL_CORRUPT);
  assert_string_equal(msg, "COMMIT marker value of 5 bytes (at least 6 needed)");
  r.value = NULL;
  r.value_len = -1;
  assert_int_equal(ctl_parse(&r, &type, &epoch, msg, sizeof msg), KL_CORRUPT);
  assert_string_equal(msg, "COMMIT marker with a null value");
  r = ctl_record(&cb, 0, KL_CONTROL_COMMIT, 0, 0, 0);
  assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
  assert_int_equal(epoch, 15);
  r = ctl_record(&cb, 3, KL_CONTROL_COMMIT, 2, 5, 4);
  assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
  assert_int_equal(type, KL_CONTROL_COMMIT);
  assert_int_equal(epoch, 15);
}

/* Any other type (KRaft's, or unknown) parses, needing no marker value:
** readers ignore it. */
static void test_control_unknown_type(void **state) {
  (void)state;
  ctl_bytes cb;
  int type;
  int32_t epoch;
  static const int types[] = {2, 6, 337, 0x7fff, 0xffff};
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    kl_record r = ctl_record(&cb, 0, types[i], 0, 0, -3);
    assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
    assert_int_equal(type, (int16_t)types[i]);
    assert_int_equal(epoch, -1);
    r.value = NULL;
    r.value_len = -1;
    assert_int_equal(ctl_parse(&r, &type, &epoch, NULL, 0), KL_OK);
  }
}

/*
** tests.md 66: kl_batch_encode reproduces the example bytes exactly,
** appending after whatever the buffer already holds, for both the data batch
** and the COMMIT marker.
*/
static void test_encode_examples(void **state) {
  kl_buf out = {0};
  kl_err err = {0};
  kl_batch_spec s = plain_spec(0, KL_CODEC_NONE);
  assert_int_equal(kl_batch_encode(NULL, &s, EX_RECS, 2, &out, &err), KL_OK);
  assert_int_equal(out.len, sizeof EX88);
  assert_memory_equal(out.p, EX88, sizeof EX88);

  static const uint8_t mkey[4] = {0, 0, 0, 1};
  static const uint8_t mval[6] = {0, 0, 0, 0, 0, 5};
  kl_rec_in m = {TS0 + 10, mkey, 4, mval, 6, NULL, 0};
  kl_batch_spec c = plain_spec(2, KL_CODEC_NONE);
  c.producer_id = 1000;
  c.producer_epoch = 0;
  c.transactional = 1;
  c.control = 1;
  assert_int_equal(kl_batch_encode(NULL, &c, &m, 1, &out, &err), KL_OK);
  assert_int_equal(out.len, sizeof EX88 + sizeof COMMIT78);
  assert_memory_equal(out.p, EX88, sizeof EX88);
  assert_memory_equal(out.p + sizeof EX88, COMMIT78, sizeof COMMIT78);

  /* No records is a misuse, and leaves the buffer alone. */
  assert_int_equal(kl_batch_encode(NULL, &s, EX_RECS, 0, &out, &err), KL_MISUSE);
  assert_int_equal(out.len, sizeof EX88 + sizeof COMMIT78);
  kl_buf_free(NULL, &out);
}

/*
** format.md 5.1 / tests.md 72: the v1 (36 bytes) and v0 (27 bytes) legacy
** vectors decode: one record each, v0 without a timestamp; their CRC-32
** verifies, and a flipped bit anywhere in the CRC range or the CRC fails.
*/
static void test_legacy_vectors(void **state) {
  kl_batch b;
  kl_err err = {0};
  kl_records it;
  kl_record r;
  kl_buf scratch = {0};

  parse_ok(V1_36, sizeof V1_36, &b);
  assert_int_equal(b.magic, 1);
  assert_int_equal(b.size, 36);
  assert_int_equal(b.base_offset, 0);
  assert_int_equal(b.last_offset, 0);
  assert_int_equal(b.crc, 0x39268C33u);
  assert_int_equal(b.codec, KL_CODEC_NONE);
  assert_int_equal(b.ts_type, KL_TS_CREATE);
  assert_true(b.max_timestamp == TS0);
  assert_int_equal(b.record_count, 1);
  assert_true(b.first_known);
  assert_int_equal(b.leader_epoch, -1);
  assert_int_equal(b.producer_id, -1);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
  assert_int_equal(r.offset, 0);
  assert_true(r.timestamp == TS0);
  assert_bytes(r.key, r.key_len, "k");
  assert_bytes(r.value, r.value_len, "v");
  assert_int_equal(r.header_count, 0);
  assert_int_equal(r.sequence, -1);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);

  parse_ok(V0_27, sizeof V0_27, &b);
  assert_int_equal(b.magic, 0);
  assert_int_equal(b.size, 27);
  assert_int_equal(b.crc, 0xD20CBFF5u);
  assert_int_equal(b.ts_type, KL_TS_NONE);
  assert_int_equal(b.max_timestamp, -1);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
  assert_int_equal(r.offset, 0);
  assert_int_equal(r.timestamp, -1);
  assert_null(r.key);
  assert_int_equal(r.key_len, -1);
  assert_bytes(r.value, r.value_len, "v");
  assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);

  const uint8_t *vecs[2] = {V1_36, V0_27};
  size_t lens[2] = {sizeof V1_36, sizeof V0_27};
  for (int v = 0; v < 2; v++) {
    uint8_t buf[64];
    for (size_t i = 12; i < lens[v]; i++) {
      memcpy(buf, vecs[v], lens[v]);
      buf[i] ^= 0x01;
      kl_err e = {0};
      b.position = 0;
      if (kl_batch_parse(buf, lens[v], &b, &e) != KL_OK) continue; /* magic byte */
      assert_int_equal(kl_batch_verify(&b, &e), KL_CORRUPT);
    }
  }
  kl_buf_free(NULL, &scratch);
}

/* One input record and what decoding it must give back. */
static void check_record(const kl_record *r, const kl_rec_in *in, int64_t off, int64_t ts,
                         int32_t seq) {
  assert_int_equal(r->offset, off);
  assert_true(r->timestamp == ts);
  assert_int_equal(r->sequence, seq);
  if (in->key) {
    assert_int_equal(r->key_len, in->key_len);
    assert_non_null(r->key);
    if (in->key_len) assert_memory_equal(r->key, in->key, (size_t)in->key_len);
  } else {
    assert_null(r->key);
    assert_int_equal(r->key_len, -1);
  }
  if (in->value) {
    assert_int_equal(r->value_len, in->value_len);
    assert_non_null(r->value);
    if (in->value_len) assert_memory_equal(r->value, in->value, (size_t)in->value_len);
  } else {
    assert_null(r->value);
    assert_int_equal(r->value_len, -1);
  }
  assert_int_equal(r->header_count, in->header_count);
  const uint8_t *p = r->headers, *end = r->headers + r->headers_len;
  for (int32_t i = 0; i < in->header_count; i++) {
    kl_header h;
    assert_int_equal(kl_header_next(&p, end, &h), KL_OK);
    assert_int_equal(h.name_len, in->headers[i].name_len);
    if (h.name_len) assert_memory_equal(h.name, in->headers[i].name, (size_t)h.name_len);
    if (in->headers[i].value) {
      assert_int_equal(h.value_len, in->headers[i].value_len);
      if (h.value_len) assert_memory_equal(h.value, in->headers[i].value, (size_t)h.value_len);
    } else {
      assert_null(h.value);
      assert_int_equal(h.value_len, -1);
    }
  }
  kl_header h;
  assert_int_equal(kl_header_next(&p, end, &h), KL_DONE);
}

/* The records of the round-trip tests: nulls, empty key and value, headers
** with null values and an empty name, negative timestamp deltas, a large
** positive delta and a value big enough for several compressed blocks. */
#define RT_N 40
static kl_header rt_hdrs[3] = {
    {(const uint8_t *)"a", 1, (const uint8_t *)"1", 1},
    {(const uint8_t *)"nullv", 5, NULL, -1},
    {(const uint8_t *)"", 0, (const uint8_t *)"", 0},
};
static uint8_t rt_big[70000];
static char rt_keys[RT_N][16];

static void make_rt_records(kl_rec_in *r) {
  uint64_t seed = 99;
  for (size_t i = 0; i < sizeof rt_big; i++) {
    rt_big[i] = (uint8_t)(i % 7 == 0 ? t_rand(&seed) : 'a' + (i / 13) % 26);
  }
  for (int i = 0; i < RT_N; i++) {
    snprintf(rt_keys[i], sizeof rt_keys[i], "key-%d", i);
    memset(&r[i], 0, sizeof r[i]);
    r[i].timestamp = TS0 + 100 + i;
    r[i].key = rt_keys[i];
    r[i].key_len = (int32_t)strlen(rt_keys[i]);
    r[i].value = rt_keys[i] + 1;
    r[i].value_len = (int32_t)strlen(rt_keys[i]) - 1;
  }
  r[1].timestamp = TS0 + 50;  /* negative delta */
  r[1].key = NULL;
  r[1].key_len = -1;
  r[2].timestamp = TS0 - 1000; /* more negative */
  r[2].key = "";
  r[2].key_len = 0;
  r[2].value = NULL;
  r[2].value_len = -1;
  r[2].headers = rt_hdrs;
  r[2].header_count = 3;
  r[3].value = "";
  r[3].value_len = 0;
  r[3].headers = &rt_hdrs[1];
  r[3].header_count = 1;
  r[4].timestamp = TS0 + (INT64_C(1) << 40);
  r[4].value = rt_big;
  r[4].value_len = (int32_t)sizeof rt_big;
  r[5].timestamp = -1; /* no timestamp at all */
}

/*
** buildDefaultRecordBatch / testSetLogAppendTime, for every codec,
** CreateTime and LogAppendTime, with and without producer fields: encode,
** parse, verify, iterate; every field comes back.  LogAppendTime makes every
** record report the append time (format.md 3.4).
*/
static void test_round_trip(void **state) {
  static kl_rec_in recs[RT_N];
  make_rt_records(recs);
  int64_t want_max = TS0 + (INT64_C(1) << 40);
  kl_buf out = {0}, scratch = {0};
  for (int codec = KL_CODEC_NONE; codec <= KL_CODEC_ZSTD; codec++) {
    for (int lat = 0; lat < 2; lat++) {
      for (int prod = 0; prod < 2; prod++) {
        kl_err err = {0};
        kl_batch_spec s = plain_spec(1234567, codec);
        s.leader_epoch = 7;
        s.log_append_time = lat;
        s.append_time = TS0 + 777;
        if (prod) {
          s.producer_id = 4242;
          s.producer_epoch = 3;
          s.base_sequence = 100;
          s.transactional = 1;
        }
        out.len = 0;
        assert_int_equal(kl_batch_encode(NULL, &s, recs, RT_N, &out, &err), KL_OK);
        uint8_t *p = dup_exact(out.p, out.len);
        kl_batch b;
        parse_ok(p, out.len, &b);
        assert_int_equal(b.size, (int32_t)out.len);
        assert_int_equal(b.base_offset, 1234567);
        assert_int_equal(b.last_offset, 1234567 + RT_N - 1);
        assert_int_equal(b.last_offset_delta, RT_N - 1);
        assert_int_equal(b.codec, codec);
        assert_int_equal(b.attributes & 7, codec);
        assert_int_equal(b.ts_type, lat ? KL_TS_APPEND : KL_TS_CREATE);
        assert_int_equal(b.leader_epoch, 7);
        assert_true(b.base_timestamp == TS0 + 100);
        assert_true(b.max_timestamp == (lat ? TS0 + 777 : want_max));
        assert_int_equal(b.producer_id, prod ? 4242 : -1);
        assert_int_equal(b.producer_epoch, prod ? 3 : -1);
        assert_int_equal(b.base_sequence, prod ? 100 : -1);
        assert_int_equal(b.is_transactional, prod);
        assert_false(b.is_control);
        assert_int_equal(b.record_count, RT_N);
        assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
        if (codec == KL_CODEC_NONE) {
          assert_true(out.len > sizeof rt_big);
        } else {
          assert_true(out.len < sizeof rt_big); /* really compressed */
        }

        kl_stats st = {0};
        kl_records it;
        kl_record r;
        assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, &st, &err), KL_OK);
        for (int i = 0; i < RT_N; i++) {
          kl_rc rc = kl_records_next(&it, &r, &err);
          if (rc != KL_OK) fail_msg("codec %d record %d: %s %s", codec, i, kl_rc_name(rc), err.msg);
          check_record(&r, &recs[i], 1234567 + i, lat ? TS0 + 777 : recs[i].timestamp,
                       prod ? 100 + i : -1);
        }
        assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
        assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
        assert_int_equal(st.batches_decoded, 1);
        if (codec == KL_CODEC_NONE) {
          assert_int_equal(st.bytes_decompressed, 0);
        } else {
          assert_int_equal(st.bytes_decompressed, scratch.len);
          assert_true(scratch.len > sizeof rt_big);
        }
        free(p);
      }
    }
  }
  kl_buf_free(NULL, &out);
  kl_buf_free(NULL, &scratch);
}

/*
** buildDefaultRecordBatchWithSequenceWrapAround: base sequence 2^31-2 with 3
** records gives sequences 2147483646, 2147483647, 0.
*/
static void test_sequence_wrap(void **state) {
  kl_rec_in r[3] = {{1, "a", 1, "x", 1, NULL, 0},
                    {2, "b", 1, "y", 1, NULL, 0},
                    {3, "c", 1, "z", 1, NULL, 0}};
  kl_batch_spec s = plain_spec(0, KL_CODEC_NONE);
  s.producer_id = 7;
  s.producer_epoch = 0;
  s.base_sequence = INT32_MAX - 1;
  kl_buf out = {0}, scratch = {0};
  kl_err err = {0};
  assert_int_equal(kl_batch_encode(NULL, &s, r, 3, &out, &err), KL_OK);
  kl_batch b;
  parse_ok(out.p, out.len, &b);
  kl_records it;
  kl_record rec;
  const int32_t want[3] = {2147483646, 2147483647, 0};
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(kl_records_next(&it, &rec, &err), KL_OK);
    assert_int_equal(rec.sequence, want[i]);
    assert_int_equal(rec.offset, i);
  }
  assert_int_equal(kl_records_next(&it, &rec, &err), KL_DONE);
  kl_buf_free(NULL, &out);
  kl_buf_free(NULL, &scratch);
}

/*
** DefaultRecordBatchTest.testInvalidCrc / testSetPartitionLeaderEpoch: a
** flipped bit anywhere in [17, size) (the CRC itself or the bytes it covers)
** makes kl_batch_verify report KL_CORRUPT; a changed leader epoch or base
** offset (not covered) keeps the batch valid.
*/
static void test_crc_coverage(void **state) {
  static kl_rec_in recs[RT_N];
  make_rt_records(recs);
  kl_buf enc = {0};
  kl_err err = {0};
  kl_batch_spec s = plain_spec(5, KL_CODEC_GZIP);
  assert_int_equal(kl_batch_encode(NULL, &s, recs, 8, &enc, &err), KL_OK);
  const uint8_t *srcs[3] = {EX88, COMMIT78, enc.p};
  size_t lens[3] = {sizeof EX88, sizeof COMMIT78, enc.len};
  for (int v = 0; v < 3; v++) {
    uint8_t *p = dup_exact(srcs[v], lens[v]);
    kl_batch b;
    for (size_t i = 17; i < lens[v]; i++) {
      static const uint8_t bits[2] = {0x01, 0x80};
      for (int k = 0; k < 2; k++) {
        memcpy(p, srcs[v], lens[v]);
        p[i] ^= bits[k];
        kl_err e = {0};
        b.position = 0;
        kl_rc rc = kl_batch_parse(p, lens[v], &b, &e);
        if (rc != KL_OK) {
          /* Only a flip that breaks a checked header field may stop the
          ** parse (sign of lastOffsetDelta / recordsCount, codec id). */
          assert_int_equal(rc, KL_CORRUPT);
          assert_true(bits[k] == 0x80 && (i == 23 || i == 57));
          continue;
        }
        if (kl_batch_verify(&b, &e) != KL_CORRUPT) {
          fail_msg("vector %d: flipping bit %02x of byte %zu went unnoticed", v, bits[k], i);
        }
        assert_int_equal(e.rc, KL_CORRUPT);
      }
    }
    /* Not covered: base offset (low bits) and the leader epoch. */
    for (size_t i = 1; i < 16; i++) {
      if (i >= 8 && i < 12) continue; /* the length */
      memcpy(p, srcs[v], lens[v]);
      p[i] ^= 0x01;
      parse_ok(p, lens[v], &b);
      assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
    }
    memcpy(p, srcs[v], lens[v]);
    kl_put_u32(p + 12, 500);
    parse_ok(p, lens[v], &b);
    assert_int_equal(b.leader_epoch, 500);
    assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
    free(p);
  }
  kl_buf_free(NULL, &enc);
}

/* Every strict prefix of an entry is "not here yet", never an error. */
static void check_prefixes(const uint8_t *src, size_t n) {
  for (size_t k = 0; k < n; k++) {
    uint8_t *p = dup_exact(src, k);
    kl_batch b;
    kl_err err = {0};
    b.position = 0;
    kl_rc rc = kl_batch_parse(p, k, &b, &err);
    if (rc != KL_DONE) fail_msg("prefix %zu of %zu: %s %s", k, n, kl_rc_name(rc), err.msg);
    free(p);
  }
  uint8_t *p = dup_exact(src, n);
  kl_batch b;
  parse_ok(p, n, &b);
  assert_int_equal(b.size, (int32_t)n);
  free(p);
}

/*
** FileLogInputStreamTest.testBatchIterationIncompleteBatch: a truncated
** entry (any prefix, down to nothing) makes kl_batch_parse answer KL_DONE,
** reading nothing past the bytes it was given.
*/
static void test_truncated_prefixes(void **state) {
  static kl_rec_in recs[RT_N];
  make_rt_records(recs);
  check_prefixes(EX88, sizeof EX88);
  check_prefixes(COMMIT78, sizeof COMMIT78);
  check_prefixes(V1_36, sizeof V1_36);
  check_prefixes(V0_27, sizeof V0_27);
  kl_buf enc = {0};
  kl_err err = {0};
  kl_batch_spec s = plain_spec(0, KL_CODEC_LZ4);
  assert_int_equal(kl_batch_encode(NULL, &s, recs, 4, &enc, &err), KL_OK);
  check_prefixes(enc.p, enc.len);
  kl_buf_free(NULL, &enc);
}

/* Parse a header-edited copy of src (avail bytes) and expect rc. */
static void expect_parse(const uint8_t *src, size_t n, size_t avail, size_t at, const uint8_t *patch,
                         size_t plen, kl_rc want) {
  uint8_t *p = calloc(1, avail);
  assert_non_null(p);
  memcpy(p, src, n < avail ? n : avail);
  memcpy(p + at, patch, plen);
  kl_batch b;
  kl_err err = {0};
  b.position = 0;
  kl_rc rc = kl_batch_parse(p, avail, &b, &err);
  if (rc != want) fail_msg("patch at %zu: got %s want %s (%s)", at, kl_rc_name(rc), kl_rc_name(want), err.msg);
  if (want == KL_CORRUPT) assert_true(err.rc == KL_CORRUPT && err.msg[0]);
  free(p);
}

/*
** Header sanity (format.md 2.1, 3.1; DefaultRecordBatchTest.
** testInvalidRecordSize): size < 14 is corrupt whatever follows; magic
** outside 0..2 is corrupt; a v2 batch length < 49 is corrupt while exactly
** 49 (an empty compacted batch) is fine; invalid codec ids, negative offsets,
** counts and deltas are corrupt; a v1 message below its 22-byte overhead is
** corrupt.
*/
static void test_header_sanity(void **state) {
  uint8_t v[4];
  static const int32_t small[] = {13, 0, -1, INT32_MIN, 1};
  for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
    kl_put_u32(v, (uint32_t)small[i]);
    expect_parse(EX88, sizeof EX88, sizeof EX88, 8, v, 4, KL_CORRUPT);
    expect_parse(V0_27, sizeof V0_27, sizeof V0_27, 8, v, 4, KL_CORRUPT);
  }
  static const uint8_t magics[] = {3, 4, 0x7f, 0x80, 0xff};
  for (size_t i = 0; i < sizeof magics; i++) {
    expect_parse(EX88, sizeof EX88, sizeof EX88, 16, &magics[i], 1, KL_CORRUPT);
  }
  kl_put_u32(v, 48);
  expect_parse(EX88, sizeof EX88, sizeof EX88, 8, v, 4, KL_CORRUPT);
  kl_put_u32(v, 10); /* testInvalidRecordSize */
  expect_parse(EX88, sizeof EX88, sizeof EX88, 8, v, 4, KL_CORRUPT);
  static const uint8_t codecs[] = {5, 6, 7};
  for (size_t i = 0; i < sizeof codecs; i++) {
    expect_parse(EX88, sizeof EX88, sizeof EX88, 22, &codecs[i], 1, KL_CORRUPT);
  }
  static const uint8_t neg[1] = {0x80};
  expect_parse(EX88, sizeof EX88, sizeof EX88, 0, neg, 1, KL_CORRUPT);  /* offset */
  expect_parse(EX88, sizeof EX88, sizeof EX88, 23, neg, 1, KL_CORRUPT); /* delta */
  expect_parse(EX88, sizeof EX88, sizeof EX88, 57, neg, 1, KL_CORRUPT); /* count */
  /* Legacy: zstd is not a v0/v1 codec; v1 needs 22 bytes. */
  static const uint8_t zstd_attr = 4;
  expect_parse(V1_36, sizeof V1_36, sizeof V1_36, 17, &zstd_attr, 1, KL_CORRUPT);
  expect_parse(V0_27, sizeof V0_27, sizeof V0_27, 17, &zstd_attr, 1, KL_CORRUPT);
  kl_put_u32(v, 21);
  expect_parse(V1_36, sizeof V1_36, sizeof V1_36, 8, v, 4, KL_CORRUPT);

  /* An empty (compacted) batch of exactly 61 bytes: valid, no records, and
  ** the offset range it keeps is that of the original batch. */
  uint8_t e[61];
  memcpy(e, EX88, 61);
  kl_put_u32(e + 8, 49);
  kl_put_u64(e + 27, (uint64_t)-1);
  kl_put_u32(e + 57, 0);
  fix_crc_v2(e, 61);
  uint8_t *p = dup_exact(e, 61);
  kl_batch b;
  kl_err err = {0};
  parse_ok(p, 61, &b);
  assert_int_equal(b.record_count, 0);
  assert_int_equal(b.last_offset, 1);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
  kl_records it;
  kl_record r;
  kl_buf scratch = {0};
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
  /* Empty but claiming gzip: no decompression is attempted (3.3). */
  p[22] = KL_CODEC_GZIP;
  fix_crc_v2(p, 61);
  parse_ok(p, 61, &b);
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
  free(p);

  /* The smallest legal entry: a v0 message of 14 bytes, null key/value. */
  uint8_t m[26] = {0};
  kl_put_u64(m, 9);
  kl_put_u32(m + 8, 14);
  kl_put_u32(m + 18, 0xffffffffu);
  kl_put_u32(m + 22, 0xffffffffu);
  fix_crc_legacy(m, 26);
  p = dup_exact(m, 26);
  parse_ok(p, 26, &b);
  assert_int_equal(b.base_offset, 9);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
  assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
  assert_int_equal(r.offset, 9);
  assert_null(r.key);
  assert_null(r.value);
  assert_int_equal(r.value_len, -1);
  assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
  free(p);
  kl_buf_free(NULL, &scratch);
}

/* Two bytes fields alike (both NULL, or the same bytes). */
static void same_bytes(const uint8_t *a, int32_t na, const uint8_t *b, int32_t nb) {
  assert_int_equal(na, nb);
  if (na > 0) assert_memory_equal(a, b, (size_t)na);
}

/* kl_records_decode in chunks of `chunk` gives what kl_records_next gives
** record by record: the same records, then the same end (KL_DONE or the
** error, with its message) where the records stop. */
static void decode_matches_next(const kl_batch *b, int32_t chunk) {
  kl_buf s1 = {0}, s2 = {0};
  kl_err e1 = {0}, e2 = {0};
  kl_records a, c;
  kl_rc r1 = kl_records_open(&a, NULL, NULL, b, &s1, NULL, &e1);
  assert_int_equal(kl_records_open(&c, NULL, NULL, b, &s2, NULL, &e2), r1);
  kl_record want, got[8];
  int32_t n = 0, i = 0;
  kl_rc end = KL_OK;
  assert_true(chunk > 0 && chunk <= 8);
  for (int k = 0; r1 == KL_OK && k < 100000; k++) {
    r1 = kl_records_next(&a, &want, &e1);
    if (i == n && end == KL_OK) {
      n = kl_records_decode(&c, got, chunk, &end, &e2);
      i = 0;
    }
    if (r1 != KL_OK) {
      assert_int_equal(i, n);
      assert_int_equal(end, r1);
      assert_string_equal(e1.msg, e2.msg);
      break;
    }
    assert_true(i < n);
    const kl_record *g = &got[i++];
    assert_int_equal(g->offset, want.offset);
    assert_int_equal(g->timestamp, want.timestamp);
    assert_int_equal(g->sequence, want.sequence);
    assert_int_equal(g->header_count, want.header_count);
    same_bytes(g->key, g->key_len, want.key, want.key_len);
    same_bytes(g->value, g->value_len, want.value, want.value_len);
    same_bytes(g->headers, (int32_t)g->headers_len, want.headers, (int32_t)want.headers_len);
  }
  kl_buf_free(NULL, &s1);
  kl_buf_free(NULL, &s2);
}

/* Iterate every record of a batch (CRC fixed first) and return the rc that
** ended the iteration; *n gets the records produced. */
static kl_rc drain(uint8_t *p, size_t size, int *n) {
  kl_batch b;
  kl_err err = {0};
  kl_buf scratch = {0};
  kl_records it;
  kl_record r;
  *n = 0;
  parse_ok(p, size, &b);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
  kl_rc rc = kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err);
  while (rc == KL_OK && *n < 1000) {
    rc = kl_records_next(&it, &r, &err);
    if (rc == KL_OK) (*n)++;
  }
  if (rc == KL_CORRUPT) assert_int_equal(err.rc, KL_CORRUPT);
  kl_buf_free(NULL, &scratch);
  return rc;
}

/*
** DefaultRecordBatchTest.testInvalidRecordCountTooManyNonCompressedV2 /
** ...TooLittle... / compressed variants: a batch claiming 5 (or 2) records
** while holding 3 fails when its records are iterated, after the records it
** does hold, for every codec.
*/
static void test_record_count_mismatch(void **state) {
  kl_rec_in r[3] = {{10, "a", 1, "x", 1, NULL, 0},
                    {11, "b", 1, "y", 1, NULL, 0},
                    {12, "c", 1, "z", 1, NULL, 0}};
  for (int codec = KL_CODEC_NONE; codec <= KL_CODEC_ZSTD; codec++) {
    kl_buf out = {0};
    kl_err err = {0};
    kl_batch_spec s = plain_spec(0, codec);
    assert_int_equal(kl_batch_encode(NULL, &s, r, 3, &out, &err), KL_OK);
    int n;
    uint8_t *p = dup_exact(out.p, out.len);
    assert_int_equal(drain(p, out.len, &n), KL_DONE);
    assert_int_equal(n, 3);

    kl_put_u32(p + 57, 5);
    fix_crc_v2(p, out.len);
    assert_int_equal(drain(p, out.len, &n), KL_CORRUPT);
    assert_int_equal(n, 3);

    kl_put_u32(p + 57, 2);
    fix_crc_v2(p, out.len);
    assert_int_equal(drain(p, out.len, &n), KL_CORRUPT);
    assert_int_equal(n, 2);
    free(p);
    kl_buf_free(NULL, &out);
  }
}

/*
** DefaultRecord.readFrom validation (format.md 3.4): a varint that does not
** end inside the record, a length field pointing past the batch, a record
** length that disagrees with the fields it holds, a negative header count or
** header key length, or more headers than bytes: KL_CORRUPT, never DONE.
*/
static void test_malformed_records(void **state) {
  static const struct {
    size_t at;
    uint8_t n;
    uint8_t bytes[10];
    int good; /* records decoded before the error */
  } cases[] = {
      {0x3d, 1, {0xff}, 0},                                               /* record length */
      {0x3d, 1, {0x7f}, 0},                                               /* length past end */
      {0x3f, 9, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0}, /* ts delta */
      {0x40, 1, {0x81}, 0},                                               /* offset delta */
      {0x41, 1, {0x81}, 0},                                               /* key length */
      {0x44, 1, {0x0a}, 0},                                               /* value length 5 */
      {0x3d, 1, {0x16}, 0},                                               /* length 11 != 10 */
      {0x3d, 1, {0x12}, 0},                                               /* length 9 != 10 */
      {0x53, 1, {0x01}, 1},                                               /* header count -1 */
      {0x53, 1, {0x04}, 1},                                               /* header count 2 */
      {0x53, 1, {0x7e}, 1},                                               /* count 63 > bytes */
      {0x54, 1, {0x01}, 1},                                               /* header key -1 */
      {0x54, 1, {0x08}, 1},                                               /* header key 4 */
      {0x56, 1, {0x06}, 1},                                               /* header value 3 */
      {0x56, 1, {0x80}, 1},                                               /* header value varint */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t *p = dup_exact(EX88, sizeof EX88);
    memcpy(p + cases[i].at, cases[i].bytes, cases[i].n);
    fix_crc_v2(p, sizeof EX88);
    int n;
    kl_rc rc = drain(p, sizeof EX88, &n);
    if (rc != KL_CORRUPT || n != cases[i].good) {
      fail_msg("case %zu: %s after %d records", i, kl_rc_name(rc), n);
    }
    /* Passing over the records frames and checks them alike. */
    kl_batch b;
    kl_err err = {0};
    kl_buf scratch = {0};
    kl_records it;
    parse_ok(p, sizeof EX88, &b);
    assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
    if (cases[i].good) assert_int_equal(kl_records_skip(&it, cases[i].good, &err), KL_OK);
    if (kl_records_skip(&it, 1, &err) != KL_CORRUPT) fail_msg("case %zu: skipped", i);
    /* And decoding them a chunk at a time stops where they do. */
    decode_matches_next(&b, 1);
    decode_matches_next(&b, 4);
    kl_buf_free(NULL, &scratch);
    free(p);
  }
}

/* The classification of an entry's first bytes, in Kafka's order. */
static void test_entry_class(void **state) {
  (void)state;
  uint8_t p[32] = {0};
  int32_t len;
  assert_int_equal(kl_entry_class(p, KL_ENTRY_MIN - 1, &len), KL_ENTRY_SHORT);
  kl_put_u32(p + 8, 13);
  p[16] = 9; /* the size is checked before the magic */
  assert_int_equal(kl_entry_class(p, sizeof p, &len), KL_ENTRY_LENGTH);
  assert_int_equal(len, 13);
  kl_put_u32(p + 8, 1000);
  assert_int_equal(kl_entry_class(p, sizeof p, &len), KL_ENTRY_MAGIC); /* before the fit */
  p[16] = 0xff;
  assert_int_equal(kl_entry_class(p, sizeof p, &len), KL_ENTRY_MAGIC);
  p[16] = 2;
  assert_int_equal(kl_entry_class(p, sizeof p, &len), KL_ENTRY_PAST_END);
  kl_put_u32(p + 8, 20);
  assert_int_equal(kl_entry_class(p, sizeof p, &len), KL_ENTRY_FITS);
  assert_int_equal(kl_entry_class(p, 31, &len), KL_ENTRY_PAST_END);
}

/* ---- legacy wrappers built by hand ---- */

/* Append one legacy message to out (CRC computed). */
static void put_legacy(kl_buf *out, int64_t offset, int magic, int attr, int64_t ts,
                       const void *key, int32_t klen, const void *val, int32_t vlen) {
  size_t start = out->len;
  size_t size = 12 + 4 + 2 + (magic ? 8 : 0) + 4 + (klen > 0 ? (size_t)klen : 0) + 4 +
                (vlen > 0 ? (size_t)vlen : 0);
  assert_int_equal(kl_buf_reserve(NULL, out, start + size), KL_OK);
  uint8_t *p = out->p + start;
  kl_put_u64(p, (uint64_t)offset);
  kl_put_u32(p + 8, (uint32_t)(size - 12));
  p[16] = (uint8_t)magic;
  p[17] = (uint8_t)attr;
  uint8_t *q = p + 18;
  if (magic) {
    kl_put_u64(q, (uint64_t)ts);
    q += 8;
  }
  kl_put_u32(q, (uint32_t)klen);
  q += 4;
  if (klen > 0) {
    memcpy(q, key, (size_t)klen);
    q += klen;
  }
  kl_put_u32(q, (uint32_t)vlen);
  q += 4;
  if (vlen > 0) memcpy(q, val, (size_t)vlen);
  fix_crc_legacy(p, size);
  out->len = start + size;
}

/* A wrapper at wrapper_off holding n inner messages with stored offsets
** first_inner, first_inner+1, ... (timestamps 10, 20, ...). */
static void make_wrapper(kl_buf *out, int magic, int codec, int attr_extra, int64_t wrapper_off,
                         int64_t wrapper_ts, int64_t first_inner, int n, int inner_attr) {
  kl_buf inner = {0}, packed = {0};
  kl_err err = {0};
  for (int i = 0; i < n; i++) {
    char k[16], v[16];
    snprintf(k, sizeof k, "k%d", i);
    snprintf(v, sizeof v, "v%d", i);
    put_legacy(&inner, first_inner + i, magic, inner_attr, 10 * (i + 1), k, 2, v, 2);
  }
  assert_int_equal(kl_codec_compress(NULL, codec, magic, inner.p, inner.len, &packed, &err), KL_OK);
  put_legacy(out, wrapper_off, magic, codec | attr_extra, wrapper_ts, NULL, -1, packed.p,
             (int32_t)packed.len);
  kl_buf_free(NULL, &inner);
  kl_buf_free(NULL, &packed);
}

/* Open the wrapper's records; on success check offsets/timestamps. */
static kl_rc read_wrapper(const kl_buf *w, int64_t first_off, int n, int64_t fixed_ts) {
  uint8_t *p = dup_exact(w->p, w->len);
  kl_batch b;
  kl_err err = {0};
  kl_buf scratch = {0};
  kl_records it;
  kl_record r;
  parse_ok(p, w->len, &b);
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
  assert_false(b.first_known);
  assert_int_equal(b.record_count, -1);
  kl_rc rc = kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err);
  if (rc == KL_OK) {
    assert_true(it.b.first_known);
    assert_int_equal(it.b.base_offset, first_off);
    assert_int_equal(it.b.record_count, n);
    assert_int_equal(it.b.last_offset, b.last_offset);
    for (int i = 0; i < n; i++) {
      assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
      assert_int_equal(r.offset, first_off + i);
      int64_t ts = b.magic == 0 ? -1 : fixed_ts >= 0 ? fixed_ts : 10 * (i + 1);
      assert_int_equal(r.timestamp, ts);
      char k[16];
      snprintf(k, sizeof k, "k%d", i);
      assert_bytes(r.key, r.key_len, k);
    }
    rc = kl_records_next(&it, &r, &err);
    assert_int_equal(rc, KL_DONE);
    rc = KL_OK;
  } else {
    assert_int_equal(err.rc, rc);
  }
  kl_buf_free(NULL, &scratch);
  free(p);
  return rc;
}

/*
** AbstractLegacyRecordBatchTest: v1 inner offsets are relative (wrapper 500
** with 3 inner -> 498, 499, 500); wrapper offset 0 means base 0 for v0 and
** v1; wrapper offset 1 with last relative 2 is corrupt; a LogAppendTime
** wrapper stamps every inner message; for every legacy codec and magic.
** SimpleLegacyRecordTest: null wrapper value, empty inner set, nested
** compression are corrupt.
*/
static void test_legacy_wrappers(void **state) {
  kl_buf w = {0};
  for (int codec = KL_CODEC_GZIP; codec <= KL_CODEC_LZ4; codec++) {
    w.len = 0;
    make_wrapper(&w, 1, codec, 0, 500, 30, 0, 3, 0);
    assert_int_equal(read_wrapper(&w, 498, 3, -1), KL_OK);
    w.len = 0;
    make_wrapper(&w, 1, codec, 0, 0, 30, 0, 3, 0);
    assert_int_equal(read_wrapper(&w, 0, 3, -1), KL_OK);
    w.len = 0;
    make_wrapper(&w, 1, codec, 0, 1, 30, 0, 3, 0);
    assert_int_equal(read_wrapper(&w, 0, 3, -1), KL_CORRUPT);
    w.len = 0;
    make_wrapper(&w, 1, codec, 0x08, 2, 999, 0, 3, 0);
    assert_int_equal(read_wrapper(&w, 0, 3, 999), KL_OK);
    /* v0: inner offsets absolute. */
    w.len = 0;
    make_wrapper(&w, 0, codec, 0, 72, -1, 70, 3, 0);
    assert_int_equal(read_wrapper(&w, 70, 3, -1), KL_OK);
    w.len = 0;
    make_wrapper(&w, 0, codec, 0, 0, -1, 0, 3, 0);
    assert_int_equal(read_wrapper(&w, 0, 3, -1), KL_OK);
    /* Nested compression. */
    w.len = 0;
    make_wrapper(&w, 1, codec, 0, 2, 30, 0, 3, KL_CODEC_GZIP);
    assert_int_equal(read_wrapper(&w, 0, 3, -1), KL_CORRUPT);
    /* An empty inner set. */
    w.len = 0;
    make_wrapper(&w, 1, codec, 0, 2, 30, 0, 0, 0);
    assert_int_equal(read_wrapper(&w, 0, 0, -1), KL_CORRUPT);
  }
  /* A compressed wrapper with a null value. */
  w.len = 0;
  put_legacy(&w, 3, 1, KL_CODEC_GZIP, 5, NULL, -1, NULL, -1);
  assert_int_equal(read_wrapper(&w, 0, 0, -1), KL_CORRUPT);
  kl_buf_free(NULL, &w);
}

/* Read a whole fixture segment and walk its wrappers: offsets run 0, 1, ...
** from *next on; returns the number of entries. */
static int walk_fixture_log(const char *path, int magic, int64_t *next, int check_first) {
  size_t n;
  uint8_t *file = t_read_file(path, &n);
  assert_non_null(file);
  kl_buf scratch = {0};
  int64_t pos = 0;
  int entries = 0;
  for (;;) {
    kl_batch b;
    kl_err err = {0};
    b.position = pos;
    kl_rc rc = kl_batch_parse(file + pos, n - (size_t)pos, &b, &err);
    if (rc == KL_DONE) break;
    assert_int_equal(rc, KL_OK);
    assert_int_equal(b.magic, magic);
    assert_int_equal(b.codec, KL_CODEC_GZIP);
    assert_false(b.first_known);
    assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
    if (check_first && entries < 2) {
      /* expected.json: (position, size) of the first two wrappers */
      static const int64_t want[2][2][2] = {{{0, 287}, {287, 293}}, {{0, 330}, {330, 328}}};
      assert_int_equal(pos, want[magic][entries][0]);
      assert_int_equal(b.size, want[magic][entries][1]);
    }
    kl_records it;
    kl_record r;
    assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
    assert_int_equal(it.b.base_offset, *next);
    int count = 0;
    while ((rc = kl_records_next(&it, &r, &err)) == KL_OK) {
      char k[24], v[32];
      snprintf(k, sizeof k, "%08lld", (long long)*next);
      snprintf(v, sizeof v, "val-%lld-", (long long)*next);
      assert_int_equal(r.offset, *next);
      assert_true(r.timestamp == (magic ? TS0 + 10 * *next : -1));
      assert_bytes(r.key, r.key_len, k);
      assert_true(r.value_len > (int32_t)strlen(v));
      assert_memory_equal(r.value, v, strlen(v));
      (*next)++;
      count++;
    }
    assert_int_equal(rc, KL_DONE);
    assert_int_equal(count, it.b.record_count);
    assert_int_equal(*next - 1, b.last_offset); /* wrapper offset = last inner */
    pos += b.size;
    entries++;
  }
  assert_int_equal(pos, (int64_t)n);
  kl_buf_free(NULL, &scratch);
  free(file);
  return entries;
}

/*
** Kafka-written legacy gzip wrappers (fixtures f-legacy-v1-gzip,
** f-legacy-v0-gzip): inner relative (v1) / absolute (v0) offsets become the
** absolute offsets of expected.json, 0..299 / 0..199 with their keys,
** values and (v1) timestamps 1700000000000 + 10 * offset.
*/
static void test_legacy_gzip_fixtures(void **state) {
  static const char *v1[] = {"00000000000000000000.log", "00000000000000000120.log",
                             "00000000000000000240.log"};
  static const char *v0[] = {"00000000000000000000.log", "00000000000000000140.log"};
  char path[4096];
  int64_t next = 0;
  int entries = 0;
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", t_fixture("f-legacy-v1-gzip"), v1[i]);
    entries += walk_fixture_log(path, 1, &next, i == 0);
  }
  assert_int_equal(next, 300);
  assert_int_equal(entries, 30);
  next = 0;
  entries = 0;
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", t_fixture("f-legacy-v0-gzip"), v0[i]);
    entries += walk_fixture_log(path, 0, &next, i == 0);
  }
  assert_int_equal(next, 200);
  assert_int_equal(entries, 20);
}

/* Decode whatever parses; never trust, never crash. */
static int poke(uint8_t *p, size_t n, int fix) {
  kl_batch b;
  kl_err err = {0};
  b.position = 0;
  if (kl_batch_parse(p, n, &b, &err) != KL_OK) return 0;
  if (fix) {
    if (b.magic == 2) fix_crc_v2(p, (size_t)b.size);
    else fix_crc_legacy(p, (size_t)b.size);
    if (kl_batch_parse(p, n, &b, &err) != KL_OK) return 0;
  }
  if (kl_batch_verify(&b, &err) != KL_OK) return 0;
  kl_buf scratch = {0};
  kl_records it;
  kl_record r;
  kl_rc rc = kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err);
  for (int i = 0; rc == KL_OK && i < 100000; i++) {
    rc = kl_records_next(&it, &r, &err);
    if (rc != KL_OK) break;
    const uint8_t *hp = r.headers;
    kl_header h;
    int k = 0;
    while (kl_header_next(&hp, r.headers + r.headers_len, &h) == KL_OK) {
      if (h.name_len) assert_non_null(h.name);
      k++;
    }
    assert_int_equal(k, r.header_count);
    int type;
    int32_t ce;
    (void)kl_control_parse(&r, &type, &ce, NULL);
  }
  kl_buf_free(NULL, &scratch);
  decode_matches_next(&b, 1 + (int32_t)((size_t)b.size % 5));
  return 1;
}

/*
** Random byte mutations of valid entries (20000, fixed seed; half of them
** with the CRC recomputed so that the record decoders see hostile bytes):
** every call returns, no out-of-bounds read (ASan), no leak.
*/
static void test_random_mutations(void **state) {
  static kl_rec_in recs[RT_N];
  make_rt_records(recs);
  recs[4].value_len = 300; /* keep the big value small here */
  kl_buf corpus[12];
  memset(corpus, 0, sizeof corpus);
  int nc = 0;
  kl_err err = {0};
  assert_int_equal(kl_buf_append(NULL, &corpus[nc++], EX88, sizeof EX88), KL_OK);
  assert_int_equal(kl_buf_append(NULL, &corpus[nc++], COMMIT78, sizeof COMMIT78), KL_OK);
  assert_int_equal(kl_buf_append(NULL, &corpus[nc++], V1_36, sizeof V1_36), KL_OK);
  assert_int_equal(kl_buf_append(NULL, &corpus[nc++], V0_27, sizeof V0_27), KL_OK);
  for (int codec = KL_CODEC_NONE; codec <= KL_CODEC_ZSTD; codec++) {
    kl_batch_spec s = plain_spec(77, codec);
    s.producer_id = 1;
    s.producer_epoch = 0;
    s.base_sequence = 5;
    assert_int_equal(kl_batch_encode(NULL, &s, recs, 8, &corpus[nc++], &err), KL_OK);
  }
  make_wrapper(&corpus[nc++], 1, KL_CODEC_LZ4, 0, 2, 30, 0, 3, 0);
  make_wrapper(&corpus[nc++], 0, KL_CODEC_SNAPPY, 0, 2, 30, 0, 3, 0);
  make_wrapper(&corpus[nc++], 1, KL_CODEC_GZIP, 0, 2, 30, 0, 3, 0);

  uint64_t seed = 20240611;
  int decoded = 0;
  for (int iter = 0; iter < 20000; iter++) {
    const kl_buf *src = &corpus[t_rand(&seed) % (uint64_t)nc];
    size_t n = src->len;
    uint64_t shape = t_rand(&seed) % 8;
    if (shape == 0) n = (size_t)(t_rand(&seed) % (src->len + 1));      /* truncate */
    else if (shape == 1) n = src->len + (size_t)(t_rand(&seed) % 16); /* extend */
    uint8_t *p = calloc(1, n ? n : 1);
    assert_non_null(p);
    memcpy(p, src->p, n < src->len ? n : src->len);
    int muts = 1 + (int)(t_rand(&seed) % 6);
    for (int m = 0; m < muts && n > 0; m++) {
      uint64_t x = t_rand(&seed);
      size_t at = (size_t)(x % n);
      /* Aim at the header half the time, the payload otherwise. */
      if ((x >> 32) & 1) at = (size_t)((x >> 33) % (n < 61 ? n : 61));
      p[at] = (x >> 40) & 1 ? (uint8_t)(x >> 48) : (uint8_t)(p[at] ^ (1u << ((x >> 48) % 8)));
    }
    decoded += poke(p, n, (int)(t_rand(&seed) & 1));
    free(p);
  }
  /* The mutations must reach the record decoders, not just the header. */
  if (decoded < 5000) fail_msg("only %d of 20000 mutations reached the records", decoded);
  for (int i = 0; i < nc; i++) kl_buf_free(NULL, &corpus[i]);
}

/*
** Allocation failure at every allocation of kl_batch_encode (every codec):
** KL_NOMEM with a message, and nothing leaks once the caller frees its
** buffer.  The buffer's earlier content survives a failed append.
*/
static void test_encode_nomem(void **state) {
  static kl_rec_in recs[RT_N];
  make_rt_records(recs);
  for (int codec = KL_CODEC_NONE; codec <= KL_CODEC_ZSTD; codec++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, 0);
    kl_buf out = {0};
    kl_err err = {0};
    kl_batch_spec s = plain_spec(0, codec);
    assert_int_equal(kl_buf_append(env, &out, "prefix", 6), KL_OK);
    long before = fa.calls;
    assert_int_equal(kl_batch_encode(env, &s, recs, RT_N, &out, &err), KL_OK);
    long total = fa.calls - before;
    assert_true(total >= 1);
    kl_buf_free(env, &out);
    assert_int_equal(fa.live, 0);
    for (long k = 1; k <= total; k++) {
      env = t_failenv(&fa, 0);
      memset(&out, 0, sizeof out);
      assert_int_equal(kl_buf_append(env, &out, "prefix", 6), KL_OK);
      fa.fail_at = fa.calls + k;
      kl_err e = {0};
      kl_rc rc = kl_batch_encode(env, &s, recs, RT_N, &out, &e);
      if (rc != KL_NOMEM) fail_msg("codec %d: failing allocation %ld gave %s", codec, k, kl_rc_name(rc));
      assert_int_equal(e.rc, KL_NOMEM);
      assert_int_equal(out.len, 6);
      assert_memory_equal(out.p, "prefix", 6);
      kl_buf_free(env, &out);
      assert_int_equal(fa.live, 0);
    }
  }
}

/*
** Allocation failure at every allocation of kl_records_open on compressed
** batches (v2 every codec, and a legacy gzip wrapper): KL_NOMEM, no leak,
** and the same scratch buffer works on the next attempt.
*/
static void test_records_open_nomem(void **state) {
  static kl_rec_in recs[RT_N];
  make_rt_records(recs);
  kl_buf batches[5] = {{0}};
  kl_err err = {0};
  for (int codec = KL_CODEC_GZIP; codec <= KL_CODEC_ZSTD; codec++) {
    kl_batch_spec s = plain_spec(0, codec);
    assert_int_equal(kl_batch_encode(NULL, &s, recs, RT_N, &batches[codec - 1], &err), KL_OK);
  }
  make_wrapper(&batches[4], 1, KL_CODEC_GZIP, 0, 2, 30, 0, 3, 0);
  for (int v = 0; v < 5; v++) {
    kl_batch b;
    parse_ok(batches[v].p, batches[v].len, &b);
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, 0);
    kl_buf scratch = {0};
    kl_records it;
    assert_int_equal(kl_records_open(&it, env, NULL, &b, &scratch, NULL, &err), KL_OK);
    long total = fa.calls;
    assert_true(total >= 1);
    kl_buf_free(env, &scratch);
    assert_int_equal(fa.live, 0);
    for (long k = 1; k <= total; k++) {
      env = t_failenv(&fa, k);
      kl_err e = {0};
      memset(&scratch, 0, sizeof scratch);
      kl_rc rc = kl_records_open(&it, env, NULL, &b, &scratch, NULL, &e);
      if (rc != KL_NOMEM) fail_msg("batch %d: failing allocation %ld gave %s (%s)", v, k, kl_rc_name(rc), e.msg);
      assert_int_equal(e.rc, KL_NOMEM);
      fa.fail_at = 0;
      kl_err e2 = {0};
      assert_int_equal(kl_records_open(&it, env, NULL, &b, &scratch, NULL, &e2), KL_OK);
      kl_record r;
      int n = 0;
      while (kl_records_next(&it, &r, &e2) == KL_OK) n++;
      assert_int_equal(n, v < 4 ? RT_N : 3);
      kl_buf_free(env, &scratch);
      assert_int_equal(fa.live, 0);
    }
  }
  for (int v = 0; v < 5; v++) kl_buf_free(NULL, &batches[v]);
}

/* Drain a hand-edited batch without the CRC in the way; returns the rc
** that ended iteration, and the last record produced in *last. */
static kl_rc drain_last(uint8_t *p, size_t n, kl_record *last, int *count) {
  kl_batch b;
  kl_err err = {0};
  kl_buf scratch = {0};
  kl_records it;
  *count = 0;
  b.position = 0;
  kl_rc rc = kl_batch_parse(p, n, &b, &err); /* may refuse the header already */
  if (rc != KL_OK) return rc;
  assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
  rc = kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err);
  while (rc == KL_OK) {
    kl_record r;
    rc = kl_records_next(&it, &r, &err);
    if (rc == KL_OK) {
      *last = r;
      (*count)++;
    }
  }
  kl_buf_free(NULL, &scratch);
  return rc;
}

/*
** Hostile but CRC-valid arithmetic (a CRC is no defence against a crafted
** file): baseTimestamp near INT64_MAX plus a positive timestampDelta, a
** baseOffset near INT64_MAX plus an offsetDelta beyond lastOffsetDelta, and
** a v1 wrapper whose inner relative offsets are negative.  Kafka's Java
** arithmetic wraps; C must not hit undefined behaviour (UBSan aborts): the
** answer must be KL_CORRUPT or the two's-complement value.
*/
static void test_hostile_arithmetic(void **state) {
  kl_record r;
  int n;
  /* Timestamp: record 1 of EX88 has delta +5. */
  uint8_t *p = dup_exact(EX88, sizeof EX88);
  kl_put_u64(p + 27, (uint64_t)(INT64_MAX - 2));
  fix_crc_v2(p, sizeof EX88);
  kl_rc rc = drain_last(p, sizeof EX88, &r, &n);
  if (rc == KL_DONE) {
    assert_int_equal(n, 2);
    assert_true(r.timestamp == (int64_t)((uint64_t)(INT64_MAX - 2) + 5u));
  } else {
    assert_int_equal(rc, KL_CORRUPT);
  }
  free(p);

  /* Offset: base INT64_MAX - 1, lastOffsetDelta 1, record 1 offsetDelta 63. */
  p = dup_exact(EX88, sizeof EX88);
  kl_put_u64(p, (uint64_t)(INT64_MAX - 1));
  p[0x4b] = 0x7e; /* offset delta 63 */
  fix_crc_v2(p, sizeof EX88);
  rc = drain_last(p, sizeof EX88, &r, &n);
  if (rc == KL_DONE) {
    assert_int_equal(n, 2);
    assert_true(r.offset == (int64_t)((uint64_t)(INT64_MAX - 1) + 63u));
  } else {
    assert_int_equal(rc, KL_CORRUPT);
  }
  free(p);

  /* v1 wrapper at INT64_MAX whose inner "relative" offsets are -3..-1. */
  kl_buf w = {0};
  make_wrapper(&w, 1, KL_CODEC_GZIP, 0, INT64_MAX, 30, -3, 3, 0);
  kl_batch b;
  kl_err err = {0};
  kl_buf scratch = {0};
  kl_records it;
  b.position = 0;
  rc = kl_batch_parse(w.p, w.len, &b, &err); /* may refuse offset INT64_MAX */
  if (rc == KL_OK) {
    assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
    rc = kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err);
  }
  if (rc == KL_OK) {
    /* Kafka: wrapper - lastRelative + relative, wrapping: MAX-2 .. MAX. */
    for (int i = 0; i < 3; i++) {
      assert_int_equal(kl_records_next(&it, &r, &err), KL_OK);
      assert_true(r.offset == INT64_MAX - 2 + i);
    }
    assert_int_equal(kl_records_next(&it, &r, &err), KL_DONE);
  } else {
    assert_int_equal(rc, KL_CORRUPT);
  }
  kl_buf_free(NULL, &scratch);
  kl_buf_free(NULL, &w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entry_class),
      cmocka_unit_test(test_varint_vectors),
      cmocka_unit_test(test_example_batch_decode),
      cmocka_unit_test(test_commit_batch_decode),
      cmocka_unit_test(test_control_key_negative_version),
      cmocka_unit_test(test_control_key_newer_version),
      cmocka_unit_test(test_control_key_trailing_bytes),
      cmocka_unit_test(test_control_key_short),
      cmocka_unit_test(test_control_value_version),
      cmocka_unit_test(test_control_unknown_type),
      cmocka_unit_test(test_encode_examples),
      cmocka_unit_test(test_legacy_vectors),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_sequence_wrap),
      cmocka_unit_test(test_crc_coverage),
      cmocka_unit_test(test_truncated_prefixes),
      cmocka_unit_test(test_header_sanity),
      cmocka_unit_test(test_record_count_mismatch),
      cmocka_unit_test(test_malformed_records),
      cmocka_unit_test(test_legacy_wrappers),
      cmocka_unit_test(test_legacy_gzip_fixtures),
      cmocka_unit_test(test_random_mutations),
      cmocka_unit_test(test_encode_nomem),
      cmocka_unit_test(test_records_open_nomem),
      cmocka_unit_test(test_hostile_arithmetic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
