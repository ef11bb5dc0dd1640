/*
** test_builder.c - the checked batch builder: what it refuses, with a
** message, leaving the batch as it was (timestamps whose distance does not
** fit 64 bits, lengths without bytes, null header names, records over the
** batch bound, a full batch); consecutive batches from one builder that
** the reader decodes back; and every allocation, zstd's included, going
** through the allocator hook.
*/
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "batch.h"
#include "builder.h"

static kl_batch_spec spec(int codec) {
  kl_batch_spec s;
  memset(&s, 0, sizeof s);
  s.leader_epoch = 0;
  s.codec = codec;
  s.producer_id = -1;
  s.producer_epoch = -1;
  s.base_sequence = -1;
  return s;
}

static kl_rec_in rec(int64_t ts, const char *key, const char *value) {
  kl_rec_in r;
  memset(&r, 0, sizeof r);
  r.timestamp = ts;
  r.key = key;
  r.key_len = key ? (int32_t)strlen(key) : -1;
  r.value = value;
  r.value_len = value ? (int32_t)strlen(value) : -1;
  return r;
}

/* Decode the batches in buf: their records' offsets, timestamps, keys and
** values as text "off:ts:key:value," (NULL as ~). */
static void decode(const kl_buf *buf, char *out, size_t cap) {
  size_t pos = 0, len = 0;
  out[0] = 0;
  kl_buf scratch = {0};
  while (pos < buf->len) {
    kl_batch b;
    kl_err err = {0};
    assert_int_equal(kl_batch_parse(buf->p + pos, buf->len - pos, &b, &err), KL_OK);
    assert_int_equal(kl_batch_verify(&b, &err), KL_OK);
    kl_records it;
    assert_int_equal(kl_records_open(&it, NULL, NULL, &b, &scratch, NULL, &err), KL_OK);
    kl_record r;
    while (kl_records_next(&it, &r, &err) == KL_OK) {
      len += (size_t)snprintf(out + len, cap - len, "%lld:%lld:%.*s:%.*s,", (long long)r.offset,
                              (long long)r.timestamp, r.key_len < 0 ? 1 : r.key_len,
                              r.key_len < 0 ? "~" : (const char *)r.key, r.value_len < 0 ? 1 : r.value_len,
                              r.value_len < 0 ? "~" : (const char *)r.value);
    }
    pos += (size_t)b.size;
  }
  kl_buf_free(NULL, &scratch);
}

static void test_refusals(void **state) {
  (void)state;
  kl_batch_spec s = spec(KL_CODEC_NONE);
  kl_builder b;
  kl_builder_init(&b, NULL, &s, 0, 0);
  kl_err err = {0};
  kl_rec_in r = rec(INT64_MAX, "k", "v");
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_OK);
  /* INT64_MIN - INT64_MAX overflows: refused, not wrapped. */
  r = rec(INT64_MIN, "k", "v");
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_RANGE);
  assert_non_null(strstr(err.msg, "is too far from the batch's first"));
  /* A length with no bytes, a length below -1, a null header name. */
  r = rec(5, NULL, "v");
  r.key_len = 3;
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_MISUSE);
  assert_string_equal(err.msg, "record key: a length without bytes");
  r = rec(5, "k", "v");
  r.value_len = -2;
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_MISUSE);
  assert_string_equal(err.msg, "record value: a length below -1 (only -1 means null)");
  kl_header h = {NULL, -1, (const uint8_t *)"x", 1};
  r = rec(5, "k", "v");
  r.headers = &h;
  r.header_count = 1;
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_MISUSE);
  assert_string_equal(err.msg, "header 0: a name is never null");
  r.header_count = -1;
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_MISUSE);
  /* None of those changed the batch: one record, still. */
  assert_int_equal(kl_builder_count(&b), 1);
  kl_buf out = {0};
  assert_int_equal(kl_builder_finish(&b, &out, &err), KL_OK);
  char text[256];
  decode(&out, text, sizeof text);
  assert_string_equal(text, "0:9223372036854775807:k:v,");
  /* An empty batch is not one. */
  assert_int_equal(kl_builder_finish(&b, &out, &err), KL_MISUSE);
  kl_buf_free(NULL, &out);
  kl_builder_free(&b);
}

static void test_bounds_and_batches(void **state) {
  (void)state;
  kl_batch_spec s = spec(KL_CODEC_NONE);
  s.base_offset = 100;
  kl_builder b;
  kl_builder_init(&b, NULL, &s, 128, 128);
  kl_err err = {0};
  char big[200];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  kl_rec_in r = rec(1000, "k", big);
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_RANGE); /* alone over the bound */
  assert_non_null(strstr(err.msg, "is too big: a batch holds at most 67 bytes"));
  kl_buf out = {0};
  int batches = 0, added = 0;
  for (int i = 0; i < 12; i++) {
    char v[16];
    snprintf(v, sizeof v, "v%02d", i);
    r = rec(1000 + i, i % 3 == 0 ? NULL : "key", v);
    kl_rc rc = kl_builder_add(&b, &r, &err);
    if (rc == KL_FULL) { /* finish, then the record starts the next batch */
      assert_int_equal(kl_builder_finish(&b, &out, &err), KL_OK);
      batches++;
      rc = kl_builder_add(&b, &r, &err);
    }
    assert_int_equal(rc, KL_OK);
    added++;
  }
  assert_int_equal(kl_builder_finish(&b, &out, &err), KL_OK);
  batches++;
  assert_true(batches >= 3);
  assert_int_equal(added, 12);
  char text[1024];
  decode(&out, text, sizeof text);
  assert_string_equal(text, "100:1000:~:v00,101:1001:key:v01,102:1002:key:v02,103:1003:~:v03,"
                            "104:1004:key:v04,105:1005:key:v05,106:1006:~:v06,107:1007:key:v07,"
                            "108:1008:key:v08,109:1009:~:v09,110:1010:key:v10,111:1011:key:v11,");
  /* Every batch within the bound. */
  for (size_t pos = 0; pos < out.len;) {
    kl_batch bt;
    assert_int_equal(kl_batch_parse(out.p + pos, out.len - pos, &bt, &err), KL_OK);
    assert_true(bt.size <= 128);
    pos += (size_t)bt.size;
  }
  kl_buf_free(NULL, &out);
  kl_builder_free(&b);
}

/* Every allocation goes through the hook, zstd's contexts included: some
** failing allocation is zstd's own, and nothing leaks at any of them. */
static void test_nomem_zstd(void **state) {
  (void)state;
  int zstd_failed = 0, ok = 0;
  for (long at = 1; at < 400 && !ok; at++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, at);
    kl_batch_spec s = spec(KL_CODEC_ZSTD);
    kl_builder b;
    kl_builder_init(&b, env, &s, 0, 0);
    kl_err err = {0};
    kl_buf out = {0};
    kl_rc rc = KL_OK;
    for (int i = 0; i < 50 && rc == KL_OK; i++) {
      kl_rec_in r = rec(1000 + i, "key", "a value that compresses, a value that compresses");
      rc = kl_builder_add(&b, &r, &err);
    }
    if (rc == KL_OK) rc = kl_builder_finish(&b, &out, &err);
    if (rc == KL_OK) {
      ok = 1;
      char text[8192];
      decode(&out, text, sizeof text);
      assert_non_null(strstr(text, "49:1049:key:a value"));
    } else {
      assert_int_equal(rc, KL_NOMEM);
      if (strstr(err.msg, "zstd")) zstd_failed = 1;
    }
    kl_buf_free(env, &out);
    kl_builder_free(&b);
    assert_int_equal(fa.live, 0);
  }
  assert_true(ok);
  assert_true(zstd_failed);
}

/* A record larger than the fill size has a batch of its own, up to the
** largest batch; the records around it go in batches of their own too. */
static void test_record_over_batch_bytes_has_a_batch_of_its_own(void **state) {
  (void)state;
  kl_batch_spec s = spec(KL_CODEC_NONE);
  kl_builder b;
  kl_builder_init(&b, NULL, &s, 128, 1024);
  kl_err err = {0};
  char big[600];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  kl_rec_in small = rec(1, "k", "v"), large = rec(2, "k", big);
  assert_int_equal(kl_builder_add(&b, &small, &err), KL_OK);
  assert_int_equal(kl_builder_add(&b, &large, &err), KL_FULL); /* not with another */
  kl_buf out = {0};
  assert_int_equal(kl_builder_finish(&b, &out, &err), KL_OK);
  assert_int_equal(kl_builder_add(&b, &large, &err), KL_OK); /* alone it fits */
  assert_int_equal(kl_builder_add(&b, &small, &err), KL_FULL);
  assert_int_equal(kl_builder_count(&b), 1);
  assert_int_equal(kl_builder_finish(&b, &out, &err), KL_OK);
  /* Past the largest batch, even alone: refused, naming the bound. */
  char huge[1100];
  memset(huge, 'y', sizeof huge - 1);
  huge[sizeof huge - 1] = 0;
  kl_rec_in r = rec(3, "k", huge);
  b.max_name = "max_message_bytes=1024";
  memset(&err, 0, sizeof err);
  assert_int_equal(kl_builder_add(&b, &r, &err), KL_RANGE);
  assert_non_null(strstr(err.msg, "(max_message_bytes=1024)"));
  assert_int_equal(kl_builder_count(&b), 0);
  kl_buf_free(NULL, &out);
  kl_builder_free(&b);
}

/* Whatever bound the caller gives, a record a reader would refuse to
** decompress (KL_MAX_BATCH_BYTES) is refused when it is added. */
static void test_record_past_reader_limit_refused(void **state) {
  (void)state;
  static const int codecs[] = {KL_CODEC_NONE, KL_CODEC_ZSTD};
  for (size_t c = 0; c < 2; c++) {
    kl_batch_spec s = spec(codecs[c]);
    kl_builder b;
    kl_builder_init(&b, NULL, &s, 0, (size_t)INT32_MAX);
    kl_err err = {0};
    /* The length is refused before a byte of the value is read. */
    kl_rec_in r = rec(1, NULL, "v");
    r.value_len = (int32_t)KL_MAX_BATCH_BYTES;
    assert_int_equal(kl_builder_add(&b, &r, &err), KL_RANGE);
    assert_non_null(strstr(err.msg, "too big"));
    assert_int_equal(kl_builder_count(&b), 0);
    kl_builder_free(&b);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_bounds_and_batches),
      cmocka_unit_test(test_record_over_batch_bytes_has_a_batch_of_its_own),
      cmocka_unit_test(test_record_past_reader_limit_refused),
      cmocka_unit_test(test_nomem_zstd),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
