/*
** test_kmsg.c - Kafka's message primitives: every type read from bytes
** laid out here by hand as Kafka's ByteUtils and generated readers lay
** them out; each boundary of the varints (largest value of each length,
** one byte too many, past the type's range); strings, bytes and arrays in
** both forms with null, empty and over-limit lengths; tagged fields
** visited and skipped; every truncation refused with the field named;
** reads from an allocation of exactly the input's size (ASan sees any
** read past the end).
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kmsg.h"

/* The bytes of a literal in a heap block of exactly their size. */
typedef struct heap {
  uint8_t *p;
  size_t n;
} heap;

static heap copy(const void *b, size_t n) {
  heap h = {malloc(n ? n : 1), n};
  assert_non_null(h.p);
  memcpy(h.p, b, n);
  return h;
}
#define COPY(...) copy((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

static void reader(kl_kmsg *r, heap h, kl_err *err) {
  kl_err_clear(err);
  kl_kmsg_init(r, h.p, h.n, "value", err);
}

static void test_fixed(void **state) {
  heap h = COPY(0x80, 0xff, 0xfe, 0x80, 0x00, 0x00, 0x01, 0x12, 0x34, 0x56, 0x78,
                0x80, 0, 0, 0, 0, 0, 0, 0,   /* i64 min */
                0x3f, 0xf8, 0, 0, 0, 0, 0, 0, /* 1.5 */
                0x02, 0x00);
  kl_kmsg r;
  kl_err err;
  reader(&r, h, &err);
  int8_t i8;
  int16_t i16;
  uint16_t u16;
  uint32_t u32;
  int64_t i64;
  double f;
  int b;
  assert_int_equal(kl_kmsg_i8(&r, "a", &i8), KL_OK);
  assert_int_equal(i8, -128);
  assert_int_equal(kl_kmsg_i16(&r, "b", &i16), KL_OK);
  assert_int_equal(i16, -2);
  assert_int_equal(kl_kmsg_u16(&r, "c", &u16), KL_OK);
  assert_int_equal(u16, 0x8000);
  assert_int_equal(kl_kmsg_pos(&r), 5);
  assert_int_equal(kl_kmsg_u32(&r, "d", &u32), KL_OK);
  assert_int_equal(u32, 0x00011234);
  assert_int_equal(kl_kmsg_skip(&r, "e", 2), KL_OK);
  assert_int_equal(kl_kmsg_i64(&r, "f", &i64), KL_OK);
  assert_true(i64 == INT64_MIN);
  assert_int_equal(kl_kmsg_f64(&r, "g", &f), KL_OK);
  assert_true(f == 1.5);
  assert_int_equal(kl_kmsg_bool(&r, "h", &b), KL_OK);
  assert_int_equal(b, 1);
  assert_int_equal(kl_kmsg_bool(&r, "h", &b), KL_OK);
  assert_int_equal(b, 0);
  assert_int_equal(kl_kmsg_left(&r), 0);
  assert_int_equal(kl_kmsg_end(&r, "h"), KL_OK);
  assert_int_equal(kl_kmsg_i8(&r, "x", &i8), KL_CORRUPT);
  assert_string_equal(err.msg, "value: x needs 1 bytes, 0 left");
  free(h.p);
}

static void test_fixed_truncated(void **state) {
  /* Each width refused one byte short, the reader left where it was. */
  static const size_t widths[] = {2, 4, 8, 16};
  for (size_t w = 0; w < 4; w++) {
    uint8_t buf[16] = {0};
    heap h = copy(buf, widths[w] - 1);
    kl_kmsg r;
    kl_err err;
    reader(&r, h, &err);
    int16_t a;
    int32_t b;
    int64_t c;
    uint8_t u[16];
    kl_rc rc = w == 0 ? kl_kmsg_i16(&r, "field", &a)
             : w == 1 ? kl_kmsg_i32(&r, "field", &b)
             : w == 2 ? kl_kmsg_i64(&r, "field", &c)
                      : kl_kmsg_uuid(&r, "field", u);
    assert_int_equal(rc, KL_CORRUPT);
    char want[80];
    snprintf(want, sizeof want, "value: field needs %zu bytes, %zu left", widths[w], widths[w] - 1);
    assert_string_equal(err.msg, want);
    free(h.p);
  }
}

static void test_uuid_raw(void **state) {
  heap h = COPY(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xaa, 0xbb);
  kl_kmsg r;
  kl_err err;
  reader(&r, h, &err);
  uint8_t u[16];
  const uint8_t *s;
  assert_int_equal(kl_kmsg_uuid(&r, "id", u), KL_OK);
  assert_int_equal(u[0], 1);
  assert_int_equal(u[15], 16);
  assert_int_equal(kl_kmsg_raw(&r, "tail", 2, &s), KL_OK);
  assert_ptr_equal(s, h.p + 16);
  assert_int_equal(kl_kmsg_raw(&r, "more", 1, &s), KL_CORRUPT);
  assert_string_equal(err.msg, "value: more needs 1 bytes, 0 left");
  free(h.p);
}

/* One varint case: bytes, the kind, and the value or the error. */
typedef struct vcase {
  uint8_t b[12];
  size_t n;
  char kind;                /* u uvarint, U uvarlong, z varint, Z varlong */
  uint64_t want;            /* as unsigned bits */
  const char *err;          /* NULL when it reads */
} vcase;

static void test_varints(void **state) {
  static const vcase cases[] = {
      {{0x00}, 1, 'u', 0, NULL},
      {{0x7f}, 1, 'u', 127, NULL},
      {{0x80, 0x01}, 2, 'u', 128, NULL},
      {{0xff, 0xff, 0xff, 0xff, 0x07}, 5, 'u', 0x7fffffff, NULL},
      {{0x80, 0x80, 0x80, 0x80, 0x08}, 5, 'u', 0, "value: f varint 2147483648 is out of range"},
      {{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 6, 'u', 0, "value: f varint is longer than 5 bytes"},
      {{0x80, 0x80}, 2, 'u', 0, "value: f needs 1 bytes, 0 left"},
      {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10, 'U', UINT64_MAX, NULL},
      {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 10, 'U', 0,
       "value: f varint is out of range"},
      {{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 11, 'U', 0,
       "value: f varint is longer than 10 bytes"},
      {{0x01}, 1, 'z', (uint64_t)-1, NULL},
      {{0x02}, 1, 'z', 1, NULL},
      {{0xfe, 0xff, 0xff, 0xff, 0x0f}, 5, 'z', 0x7fffffff, NULL},
      {{0xff, 0xff, 0xff, 0xff, 0x0f}, 5, 'z', (uint64_t)(int64_t)INT32_MIN, NULL},
      {{0xff, 0xff, 0xff, 0xff, 0x1f}, 5, 'z', 0, "value: f varint 8589934591 is out of range"},
      {{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10, 'Z', (uint64_t)INT64_MIN,
       NULL},
      {{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10, 'Z', (uint64_t)INT64_MAX,
       NULL},
      {{0x03}, 1, 'Z', (uint64_t)-2, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const vcase *c = &cases[i];
    heap h = copy(c->b, c->n);
    kl_kmsg r;
    kl_err err;
    reader(&r, h, &err);
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    int32_t i32 = 0;
    int64_t i64 = 0;
    kl_rc rc;
    uint64_t got;
    switch (c->kind) {
      case 'u': rc = kl_kmsg_uvarint(&r, "f", &u32); got = u32; break;
      case 'U': rc = kl_kmsg_uvarlong(&r, "f", &u64); got = u64; break;
      case 'z': rc = kl_kmsg_varint(&r, "f", &i32); got = (uint64_t)(int64_t)i32; break;
      default: rc = kl_kmsg_varlong(&r, "f", &i64); got = (uint64_t)i64; break;
    }
    if (c->err) {
      if (rc != KL_CORRUPT) fail_msg("case %zu: %s", i, kl_rc_name(rc));
      assert_string_equal(err.msg, c->err);
    } else {
      if (rc != KL_OK) fail_msg("case %zu: %s", i, err.msg);
      if (got != c->want) fail_msg("case %zu: %llx", i, (unsigned long long)got);
      assert_int_equal(kl_kmsg_left(&r), 0);
    }
    free(h.p);
  }
}

static void test_strings(void **state) {
  heap h = COPY(0x00, 0x03, 'a', 'b', 'c',   /* string "abc" */
                0x00, 0x00,                  /* string "" */
                0xff, 0xff,                  /* null */
                0x04, 'x', 'y', 'z',         /* compact "xyz" */
                0x01,                        /* compact "" */
                0x00,                        /* compact null */
                0x00, 0x00, 0x00, 0x02, 0, 1, /* bytes {0, 1} */
                0xff, 0xff, 0xff, 0xff,      /* bytes null */
                0x02, 0xee);                 /* compact bytes {0xee} */
  kl_kmsg r;
  kl_err err;
  reader(&r, h, &err);
  kl_kslice s;
  assert_int_equal(kl_kmsg_string(&r, "s", 0, &s), KL_OK);
  assert_int_equal(s.n, 3);
  assert_memory_equal(s.p, "abc", 3);
  assert_int_equal(kl_kmsg_string(&r, "s", 0, &s), KL_OK);
  assert_int_equal(s.n, 0);
  assert_non_null(s.p);
  assert_int_equal(kl_kmsg_string(&r, "s", KL_KMSG_NULLABLE, &s), KL_OK);
  assert_int_equal(s.n, -1);
  assert_null(s.p);
  assert_int_equal(kl_kmsg_string(&r, "s", KL_KMSG_COMPACT, &s), KL_OK);
  assert_int_equal(s.n, 3);
  assert_memory_equal(s.p, "xyz", 3);
  assert_int_equal(kl_kmsg_string(&r, "s", KL_KMSG_COMPACT, &s), KL_OK);
  assert_int_equal(s.n, 0);
  assert_int_equal(kl_kmsg_string(&r, "s", KL_KMSG_COMPACT | KL_KMSG_NULLABLE, &s), KL_OK);
  assert_int_equal(s.n, -1);
  assert_int_equal(kl_kmsg_bytes(&r, "b", 0, &s), KL_OK);
  assert_int_equal(s.n, 2);
  assert_int_equal(s.p[1], 1);
  assert_int_equal(kl_kmsg_bytes(&r, "b", KL_KMSG_NULLABLE, &s), KL_OK);
  assert_int_equal(s.n, -1);
  assert_int_equal(kl_kmsg_bytes(&r, "b", KL_KMSG_COMPACT, &s), KL_OK);
  assert_int_equal(s.n, 1);
  assert_int_equal(s.p[0], 0xee);
  assert_int_equal(kl_kmsg_end(&r, "b"), KL_OK);
  free(h.p);
}

/* A length field's bytes and the error it gives. */
typedef struct lcase {
  uint8_t b[8];
  size_t n;
  int flags;
  int bytes;                /* bytes rather than string */
  const char *err;
} lcase;

static void test_lengths_refused(void **state) {
  static const lcase cases[] = {
      {{0xff, 0xff}, 2, 0, 0, "value: name has length -1"},
      {{0x00}, 1, KL_KMSG_COMPACT, 0, "value: name has length -1"},
      {{0xff, 0xfe}, 2, KL_KMSG_NULLABLE, 0, "value: name has length -2"},
      {{0xff, 0xff, 0xff, 0xfe}, 4, KL_KMSG_NULLABLE, 1, "value: name has length -2"},
      {{0x00, 0x05, 'a'}, 3, 0, 0, "value: name needs 5 bytes, 1 left"},
      {{0x7f, 0xff, 0x00, 0x00}, 4, 0, 1, "value: name needs 2147418112 bytes, 0 left"},
      {{0x81, 0x80, 0x02}, 3, KL_KMSG_COMPACT, 0, "value: name has invalid length 32768"},
      {{0x81, 0x80, 0x02}, 3, KL_KMSG_COMPACT, 1, "value: name needs 32768 bytes, 0 left"},
      {{0x80, 0x80, 0x80, 0x80, 0x08}, 5, KL_KMSG_COMPACT, 1,
       "value: name varint 2147483648 is out of range"},
      {{0x00}, 1, 0, 0, "value: name needs 2 bytes, 1 left"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const lcase *c = &cases[i];
    heap h = copy(c->b, c->n);
    kl_kmsg r;
    kl_err err;
    reader(&r, h, &err);
    kl_kslice s;
    kl_rc rc = c->bytes ? kl_kmsg_bytes(&r, "name", c->flags, &s)
                        : kl_kmsg_string(&r, "name", c->flags, &s);
    if (rc != KL_CORRUPT) fail_msg("case %zu: %s", i, kl_rc_name(rc));
    assert_string_equal(err.msg, c->err);
    free(h.p);
  }
}

static void test_string_limit(void **state) {
  /* 32767 bytes is Kafka's longest string. */
  size_t n = 2 + 0x7fff;
  uint8_t *b = calloc(1, n);
  b[0] = 0x7f;
  b[1] = 0xff;
  heap h = copy(b, n);
  free(b);
  kl_kmsg r;
  kl_err err;
  reader(&r, h, &err);
  kl_kslice s;
  assert_int_equal(kl_kmsg_string(&r, "s", 0, &s), KL_OK);
  assert_int_equal(s.n, 0x7fff);
  free(h.p);
}

static void test_arrays(void **state) {
  heap h = COPY(0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb, /* 2 */
                0xff, 0xff, 0xff, 0xff,             /* null */
                0x00,                               /* compact null */
                0x01,                               /* compact empty */
                0x02, 0xcc);                        /* compact 1 */
  kl_kmsg r;
  kl_err err;
  reader(&r, h, &err);
  int32_t n;
  assert_int_equal(kl_kmsg_array(&r, "a", 0, &n), KL_OK);
  assert_int_equal(n, 2);
  assert_int_equal(kl_kmsg_skip(&r, "a", 2), KL_OK);
  assert_int_equal(kl_kmsg_array(&r, "a", KL_KMSG_NULLABLE, &n), KL_OK);
  assert_int_equal(n, -1);
  assert_int_equal(kl_kmsg_array(&r, "a", KL_KMSG_COMPACT | KL_KMSG_NULLABLE, &n), KL_OK);
  assert_int_equal(n, -1);
  assert_int_equal(kl_kmsg_array(&r, "a", KL_KMSG_COMPACT, &n), KL_OK);
  assert_int_equal(n, 0);
  assert_int_equal(kl_kmsg_array(&r, "a", KL_KMSG_COMPACT, &n), KL_OK);
  assert_int_equal(n, 1);
  free(h.p);

  /* A null where none is allowed; more elements than bytes; below -1. */
  static const lcase bad[] = {
      {{0xff, 0xff, 0xff, 0xff}, 4, 0, 0, "value: parts has length -1"},
      {{0x00}, 1, KL_KMSG_COMPACT, 0, "value: parts has length -1"},
      {{0x00, 0x00, 0x00, 0x03, 1, 2}, 6, 0, 0, "value: parts counts 3 elements, 2 bytes left"},
      {{0xff, 0xff, 0xff, 0xff, 0x07}, 5, KL_KMSG_COMPACT, 0,
       "value: parts counts 2147483646 elements, 0 bytes left"},
      {{0x80, 0x00, 0x00, 0x00}, 4, KL_KMSG_NULLABLE, 0, "value: parts has length -2147483648"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    heap b = copy(bad[i].b, bad[i].n);
    reader(&r, b, &err);
    assert_int_equal(kl_kmsg_array(&r, "parts", bad[i].flags, &n), KL_CORRUPT);
    assert_string_equal(err.msg, bad[i].err);
    free(b.p);
  }
}

static void test_tags(void **state) {
  /* Two tagged fields: tag 0 an int32, tag 7 a compact string; then a
  ** byte after the struct. */
  heap h = COPY(0x02, 0x00, 0x04, 0x00, 0x00, 0x01, 0x00, 0x07, 0x03, 0x03, 'h', 'i', 0x55);
  kl_kmsg r, f;
  kl_err err;
  reader(&r, h, &err);
  uint32_t n, tag;
  int32_t v;
  kl_kslice s;
  assert_int_equal(kl_kmsg_tags(&r, &n), KL_OK);
  assert_int_equal(n, 2);
  assert_int_equal(kl_kmsg_tag(&r, &tag, &f), KL_OK);
  assert_int_equal(tag, 0);
  assert_int_equal(kl_kmsg_left(&f), 4);
  assert_int_equal(kl_kmsg_i32(&f, "t0", &v), KL_OK);
  assert_int_equal(v, 256);
  assert_int_equal(kl_kmsg_end(&f, "t0"), KL_OK);
  assert_int_equal(kl_kmsg_tag(&r, &tag, &f), KL_OK);
  assert_int_equal(tag, 7);
  assert_int_equal(kl_kmsg_string(&f, "t7", KL_KMSG_COMPACT, &s), KL_OK);
  assert_memory_equal(s.p, "hi", 2);
  assert_int_equal(kl_kmsg_end(&f, "t7"), KL_OK);
  assert_int_equal(kl_kmsg_left(&r), 1);
  reader(&r, h, &err);
  assert_int_equal(kl_kmsg_skip_tags(&r), KL_OK);
  assert_int_equal(kl_kmsg_pos(&r), 12);
  assert_int_equal(kl_kmsg_end(&r, "tagged fields"), KL_CORRUPT);
  assert_string_equal(err.msg, "value: 1 bytes after tagged fields");
  free(h.p);

  /* A field's reader stops at its size: an int32 in 2 bytes. */
  heap t = COPY(0x01, 0x03, 0x02, 0x00, 0x01);
  reader(&r, t, &err);
  assert_int_equal(kl_kmsg_tags(&r, &n), KL_OK);
  assert_int_equal(kl_kmsg_tag(&r, &tag, &f), KL_OK);
  assert_int_equal(kl_kmsg_i32(&f, "t3", &v), KL_CORRUPT);
  assert_string_equal(err.msg, "value: t3 needs 4 bytes, 2 left");
  free(t.p);
}

static void test_tags_truncated(void **state) {
  /* Every strict prefix of a struct's tagged fields is refused, naming the
  ** part that is missing. */
  static const uint8_t b[] = {0x02, 0x00, 0x01, 0xaa, 0x81, 0x01, 0x02, 0xbb, 0xcc};
  static const char *want[] = {
      "value: tagged field count needs 1 bytes, 0 left",
      "value: tag needs 1 bytes, 0 left",
      "value: tagged field size needs 1 bytes, 0 left",
      "value: tagged field needs 1 bytes, 0 left",
      "value: tag needs 1 bytes, 0 left",
      "value: tag needs 1 bytes, 0 left",
      "value: tagged field size needs 1 bytes, 0 left",
      "value: tagged field needs 2 bytes, 0 left",
      "value: tagged field needs 2 bytes, 1 left",
  };
  for (size_t n = 0; n < sizeof b; n++) {
    heap h = copy(b, n);
    kl_kmsg r;
    kl_err err;
    reader(&r, h, &err);
    assert_int_equal(kl_kmsg_skip_tags(&r), KL_CORRUPT);
    assert_string_equal(err.msg, want[n]);
    free(h.p);
  }
  heap h = copy(b, sizeof b);
  kl_kmsg r;
  kl_err err;
  reader(&r, h, &err);
  assert_int_equal(kl_kmsg_skip_tags(&r), KL_OK);
  assert_int_equal(kl_kmsg_left(&r), 0);
  free(h.p);
}

static void test_first_error_kept(void **state) {
  /* The deepest message survives: a second failing read does not
  ** overwrite it; a NULL err is allowed. */
  heap h = COPY(0x00);
  kl_kmsg r;
  kl_err err;
  reader(&r, h, &err);
  int32_t v;
  assert_int_equal(kl_kmsg_i32(&r, "first", &v), KL_CORRUPT);
  assert_int_equal(kl_kmsg_i32(&r, "second", &v), KL_CORRUPT);
  assert_string_equal(err.msg, "value: first needs 4 bytes, 1 left");
  kl_kmsg_init(&r, h.p, h.n, "key", NULL);
  assert_int_equal(kl_kmsg_i32(&r, "x", &v), KL_CORRUPT);
  kl_kmsg_init(&r, NULL, 0, "key", &err);
  assert_int_equal(kl_kmsg_left(&r), 0);
  free(h.p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fixed),
      cmocka_unit_test(test_fixed_truncated),
      cmocka_unit_test(test_uuid_raw),
      cmocka_unit_test(test_varints),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_lengths_refused),
      cmocka_unit_test(test_string_limit),
      cmocka_unit_test(test_arrays),
      cmocka_unit_test(test_tags),
      cmocka_unit_test(test_tags_truncated),
      cmocka_unit_test(test_first_error_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
