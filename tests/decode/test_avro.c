/*
** test_avro.c - the Avro decoder's limits and edge rules on hostile input
** written byte by byte: nesting depth, a recursive record that never ends,
** block counts that would allocate gigabytes, items that take no bytes,
** varints past 64 bits, int range, booleans, enum and union indexes,
** decimals (sign, scale, size), float text, invalid UTF-8, trailing bytes,
** named types across references, and schemas that do not parse.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "avro.h"
#include "avro_node.h"
#include "confluent.h"

static kl_rc run(const char *schema, const uint8_t *p, size_t n, unsigned flags, char *out,
                 size_t on, kl_err *err) {
  kl_avro_schema *s = NULL;
  kl_avro_text t = {schema, strlen(schema)};
  kl_err_clear(err);
  kl_rc rc = kl_avro_schema_parse(NULL, &t, 1, &s, err);
  if (rc) {
    snprintf(out, on, "%s", err->msg);
    return rc;
  }
  kl_buf b = {0}, w = {0};
  rc = kl_avro_decode(s, p, n, flags, &b, err);
  /* the compiled steps answer as the tree walk does, byte for byte */
  kl_err we;
  kl_err_clear(&we);
  kl_rc wrc = kl_avro_decode(s, p, n, flags | KL_AVRO_TREE, &w, &we);
  assert_int_equal(rc, wrc);
  if (rc) assert_string_equal(err->msg, we.msg);
  else assert_true(b.len == w.len && (b.len == 0 || memcmp(b.p, w.p, b.len) == 0));
  snprintf(out, on, "%.*s", rc ? (int)strlen(err->msg) : (int)b.len,
           rc ? err->msg : (const char *)b.p);
  kl_buf_free(NULL, &b);
  kl_buf_free(NULL, &w);
  kl_avro_schema_free(s);
  return rc;
}

#define OK(schema, bytes, want) do { \
    char o_[4096]; kl_err e_; \
    kl_rc r_ = run(schema, (const uint8_t *)bytes, sizeof bytes - 1, 0, o_, sizeof o_, &e_); \
    if (r_ != KL_OK || strcmp(o_, want) != 0) fail_msg("%s: got rc %d %s, want %s", schema, r_, o_, want); \
  } while (0)

#define BAD(schema, bytes, part) do { \
    char o_[4096]; kl_err e_; \
    kl_rc r_ = run(schema, (const uint8_t *)bytes, sizeof bytes - 1, 0, o_, sizeof o_, &e_); \
    if (r_ != KL_CORRUPT || !strstr(o_, part)) fail_msg("%s: got rc %d %s, want %s", schema, r_, o_, part); \
  } while (0)

static void test_scalars(void **state) {
  OK("\"long\"", "\x01", "-1");
  OK("\"long\"", "\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01", "9223372036854775807");
  OK("\"long\"", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "-9223372036854775808");
  BAD("\"long\"", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "varint longer than 64 bits");
  BAD("\"long\"", "\xff\xff", "varint runs past the end");
  /* the same with bytes after them (read without a bound per byte) */
  BAD("[\"long\",\"null\"]", "\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", "varint longer than 64 bits");
  BAD("[\"long\",\"null\"]", "\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x00",
      "varint longer than 10 bytes");
  OK("{\"type\":\"array\",\"items\":\"long\"}",
     "\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00", "[-9223372036854775808]");
  OK("{\"type\":\"array\",\"items\":\"long\"}",
     "\x08\x80\x89\x7a\x80\x89\x7a\x80\x89\x7a\x7f\x00", "[1000000,1000000,1000000,-64]");
  BAD("\"int\"", "\x80\x80\x80\x80\x20", "int out of range");
  OK("\"boolean\"", "\x01", "true");
  BAD("\"boolean\"", "\x02", "boolean byte 2");
  OK("\"float\"", "\xcd\xcc\xcc\x3d", "0.1");         /* 0.1f: shortest float text */
  OK("\"double\"", "\x9a\x99\x99\x99\x99\x99\xb9\x3f", "0.1");
  OK("\"double\"", "\x00\x00\x00\x00\x00\x00\xf8\x7f", "\"NaN\"");
  OK("\"double\"", "\x7b\x14\xae\x47\xe1\xfa\x5e\xc0", "-123.92");  /* the short path */
  OK("\"double\"", "\x00\x00\x00\x00\x00\x00\x00\x80", "-0");
  OK("\"double\"", "\x8d\xed\xb5\xa0\xf7\xc6\xb0\x3e", "1e-06");
  OK("\"double\"", "\x00\x00\x00\x00\x00\x00\x59\x40", "100");
  OK("\"double\"", "\x18\x2d\x44\x54\xfb\x21\x09\x40", "3.141592653589793");
  OK("\"double\"", "\x00\x00\x00\x00\x00\x00\xf0\xff", "\"-Infinity\"");
  OK("\"string\"", "\x06\x22\x5c\x01", "\"\\\"\\\\\\u0001\"");
  BAD("\"string\"", "\x04\xc3\x28", "string is not UTF-8");
  BAD("\"string\"", "\x01", "negative length");
  BAD("\"bytes\"", "\x7e", "runs past the end");
  OK("\"bytes\"", "\x04\x00\xff", "\"00ff\"");
  BAD("\"null\"", "\x00", "1 bytes after the value");
}

/* The JSON of one Avro string of n bytes, by the simplest rule. */
static void escaped(const uint8_t *p, size_t n, char *out) {
  size_t k = 0;
  out[k++] = '"';
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '"' || p[i] == '\\') {
      out[k++] = '\\';
      out[k++] = (char)p[i];
    } else if (p[i] < 0x20) {
      k += (size_t)sprintf(out + k, "\\u%04x", p[i]);
    } else {
      out[k++] = (char)p[i];
    }
  }
  out[k++] = '"';
  out[k] = 0;
}

/* Strings copied sixteen or eight bytes at a time: every byte that needs an escape,
** and bytes past ASCII, at every position of a word and after it. */
static void test_strings(void **state) {
  static const uint8_t specials[] = {'"', '\\', 0, 0x1f, 0x0a, 0x7f, 0x20};
  for (size_t len = 1; len <= 40; len++) {
    for (size_t at = 0; at < len; at++) {
      for (size_t k = 0; k < sizeof specials; k++) {
        uint8_t v[64], enc[80];
        for (size_t i = 0; i < len; i++) v[i] = (uint8_t)('a' + i % 26);
        v[at] = specials[k];
        if (at + 2 < len) { /* and a two-byte UTF-8 sequence after it */
          v[at + 1] = 0xc3;
          v[at + 2] = 0xa9;
        }
        enc[0] = (uint8_t)(2 * len);
        memcpy(enc + 1, v, len);
        char want[512], got[512];
        escaped(v, len, want);
        kl_err e;
        kl_rc rc = run("\"string\"", enc, len + 1, 0, got, sizeof got, &e);
        if (rc != KL_OK || strcmp(got, want) != 0) {
          fail_msg("len %zu, byte %02x at %zu: got %s, want %s", len, specials[k], at, got, want);
        }
        /* and with more of the value after it (its last bytes read as a word
        ** or a vector: 8 bytes after it, or 16) */
        for (size_t after = 8; after <= 16; after += 8) {
          char rec[300], rwant[600];
          snprintf(rec, sizeof rec, "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":"
                   "\"s\",\"type\":\"string\"},{\"name\":\"f\",\"type\":"
                   "{\"type\":\"fixed\",\"name\":\"F\",\"size\":%zu}}]}", after);
          memset(enc + len + 1, '"', after);
          snprintf(rwant, sizeof rwant, "{\"s\":%s,\"f\":\"%s\"}", want,
                   after == 8 ? "2222222222222222" : "22222222222222222222222222222222");
          rc = run(rec, enc, len + 1 + after, 0, got, sizeof got, &e);
          if (rc != KL_OK || strcmp(got, rwant) != 0) {
            fail_msg("in a record, len %zu, byte %02x at %zu: got %s", len, specials[k], at, got);
          }
        }
        if (at + 1 < len) { /* a byte that begins no UTF-8 sequence */
          v[at + 1] = 0xff;
          memcpy(enc + 1, v, len);
          rc = run("\"string\"", enc, len + 1, 0, got, sizeof got, &e);
          if (rc != KL_CORRUPT || !strstr(got, "string is not UTF-8")) {
            fail_msg("len %zu, 0xff at %zu: got %s", len, at + 1, got);
          }
        }
      }
    }
  }
}

static void test_logical(void **state) {
  const char *dec = "{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":9,\"scale\":3}";
  OK(dec, "\x02\xff", "-0.001");
  OK(dec, "\x04\x30\x39", "12.345");
  OK(dec, "\x00", "0.000");
  OK(dec, "\x02\x80", "-0.128");
  OK("{\"type\":\"fixed\",\"name\":\"D\",\"size\":2,\"logicalType\":\"decimal\",\"precision\":4}",
     "\x80\x00", "-32768");
  /* a scale past the precision makes the logical type invalid: bytes */
  OK("{\"type\":\"bytes\",\"logicalType\":\"decimal\",\"precision\":2,\"scale\":3}", "\x02\x01",
     "\"01\"");
  OK("{\"type\":\"fixed\",\"name\":\"U\",\"size\":16,\"logicalType\":\"uuid\"}",
     "\x3b\x24\x11\x01\xe2\xbb\x42\x55\x8c\xaf\x41\x36\xc5\x66\xa9\x62",
     "\"3b241101-e2bb-4255-8caf-4136c566a962\"");
  OK("{\"type\":\"long\",\"logicalType\":\"timestamp-micros\"}", "\x02", "1");
  char big[2 + KL_AVRO_MAX_DECIMAL + 1];
  big[0] = (char)0x82; /* length 257: 0x82 0x04 */
  big[1] = 0x04;
  memset(big + 2, 1, KL_AVRO_MAX_DECIMAL + 1);
  char o[256];
  kl_err e;
  assert_int_equal(run(dec, (const uint8_t *)big, sizeof big, 0, o, sizeof o, &e), KL_CORRUPT);
  assert_non_null(strstr(o, "decimal of 257 bytes"));
}

static void test_complex(void **state) {
  const char *u = "[\"null\",\"string\",{\"type\":\"record\",\"name\":\"R\",\"namespace\":\"n\","
                  "\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}]";
  OK(u, "\x00", "null");
  OK(u, "\x02\x02x", "\"x\"");
  OK(u, "\x04\x02", "{\"a\":1}");
  BAD(u, "\x06", "union branch 3 of 3");
  char o[256];
  kl_err e;
  assert_int_equal(run(u, (const uint8_t *)"\x04\x02", 2, KL_AVRO_WRAP_UNIONS, o, sizeof o, &e),
                   KL_OK);
  assert_string_equal(o, "{\"n.R\":{\"a\":1}}");
  assert_int_equal(run(u, (const uint8_t *)"\x00", 1, KL_AVRO_WRAP_UNIONS, o, sizeof o, &e), KL_OK);
  assert_string_equal(o, "null");
  OK("{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}", "\x02", "\"B\"");
  BAD("{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\",\"B\"]}", "\x04", "enum index 2 of 2");
  /* arrays and maps: several blocks, a negative count with its size */
  OK("{\"type\":\"array\",\"items\":\"int\"}", "\x04\x02\x04\x01\x02\x06\x00", "[1,2,3]");
  OK("{\"type\":\"map\",\"values\":\"long\"}", "\x02\x02k\x02\x00", "{\"k\":1}");
  /* the path of a failing datum */
  BAD("{\"type\":\"record\",\"name\":\"O\",\"fields\":[{\"name\":\"xs\",\"type\":{\"type\":"
      "\"array\",\"items\":\"string\"}}]}", "\x04\x02x\x04y", "$.xs[1]: length 2 runs past the end");
}

static void test_hostile(void **state) {
  /* a block count that would allocate gigabytes: refused, nothing grows */
  BAD("{\"type\":\"array\",\"items\":\"long\"}", "\xfe\xff\xff\xff\x0f\x02",
      "block of 2147483647 items runs past the end");
  /* items that take no bytes: bounded per value */
  BAD("{\"type\":\"array\",\"items\":\"null\"}", "\xfe\xff\xff\xff\x0f\x00",
      "more than 65536 items that take no bytes");
  /* a record that contains itself with no way out never ends: the depth
  ** bound stops it */
  BAD("{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"next\",\"type\":\"L\"}]}", "",
      "nested deeper than 128");
  /* a recursive list that does end decodes */
  OK("{\"type\":\"record\",\"name\":\"N\",\"fields\":[{\"name\":\"v\",\"type\":\"int\"},"
     "{\"name\":\"next\",\"type\":[\"null\",\"N\"]}]}", "\x02\x02\x04\x00",
     "{\"v\":1,\"next\":{\"v\":2,\"next\":null}}");
  /* deep nesting of arrays in the schema */
  char deep[8192] = "";
  for (int i = 0; i < 200; i++) strcat(deep, "{\"type\":\"array\",\"items\":");
  strcat(deep, "\"int\"");
  for (int i = 0; i < 200; i++) strcat(deep, "}");
  BAD(deep, "", "nested deeper than 128");
  /* records of 40 fields of records of 40 fields ..., 7 levels, of a record
  ** of nothing: 40^7 fields in all, compiled in time linear in the text */
  char wide[32768] = "{\"type\":\"record\",\"name\":\"T\",\"fields\":[{\"name\":\"z\","
                     "\"type\":{\"type\":\"record\",\"name\":\"E0\",\"fields\":[]}}";
  for (int lv = 1; lv <= 7; lv++) {
    sprintf(wide + strlen(wide), ",{\"name\":\"l%d\",\"type\":{\"type\":\"record\",\"name\":"
            "\"E%d\",\"fields\":[", lv, lv);
    for (int i = 0; i < 40; i++) {
      sprintf(wide + strlen(wide), "%s{\"name\":\"f%d\",\"type\":\"E%d\"}", i ? "," : "", i, lv - 1);
    }
    strcat(wide, "]}}");
  }
  strcat(wide, "]}");
  kl_avro_text t = {wide, strlen(wide)};
  kl_avro_schema *s = NULL;
  kl_err e;
  kl_err_clear(&e);
  assert_int_equal(kl_avro_schema_parse(NULL, &t, 1, &s, &e), KL_OK);
  kl_avro_schema_free(s);
}

static void test_schemas(void **state) {
  BAD("{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"Nope\"}]}",
      "", "unknown type \"Nope\"");
  BAD("{\"type\":\"fixed\",\"name\":\"F\"}", "", "no valid size");
  BAD("[]", "", "an empty union");
  BAD("[[\"int\"]]", "", "a union inside a union");
  BAD("{nope", "", "not JSON");
  BAD("[{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"A\"]},"
      "{\"type\":\"enum\",\"name\":\"E\",\"symbols\":[\"B\"]}]", "", "defined twice");
  /* a named type from a referenced schema, by full name and in namespace */
  kl_avro_text t[2] = {{"{\"type\":\"record\",\"name\":\"I\",\"namespace\":\"x.y\",\"fields\":"
                        "[{\"name\":\"q\",\"type\":\"int\"}]}", 0},
                       {"{\"type\":\"record\",\"name\":\"P\",\"namespace\":\"x.y\",\"fields\":"
                        "[{\"name\":\"a\",\"type\":\"I\"},{\"name\":\"b\",\"type\":\"x.y.I\"}]}", 0}};
  t[0].n = strlen(t[0].text);
  t[1].n = strlen(t[1].text);
  kl_avro_schema *s = NULL;
  kl_err e;
  kl_err_clear(&e);
  assert_int_equal(kl_avro_schema_parse(NULL, t, 2, &s, &e), KL_OK);
  kl_buf b = {0};
  assert_int_equal(kl_avro_decode(s, (const uint8_t *)"\x02\x04", 2, 0, &b, &e), KL_OK);
  assert_int_equal(b.len, strlen("{\"a\":{\"q\":1},\"b\":{\"q\":2}}"));
  assert_memory_equal(b.p, "{\"a\":{\"q\":1},\"b\":{\"q\":2}}", b.len);
  kl_buf_free(NULL, &b);
  kl_avro_schema_free(s);
}

static void test_framing(void **state) {
  kl_frame f;
  kl_err e;
  kl_err_clear(&e);
  assert_int_equal(kl_frame_read((const uint8_t *)"\x00\x00\x00\x01\x00\x07", 6, NULL, 0, &f, &e),
                   KL_OK);
  assert_int_equal(f.id, 256);
  assert_int_equal(f.n, 1);
  assert_int_equal(kl_frame_read((const uint8_t *)"\x00\x00", 2, NULL, 0, &f, &e), KL_CORRUPT);
  assert_non_null(strstr(e.msg, "5 bytes needed"));
  kl_err_clear(&e);
  assert_int_equal(kl_frame_read((const uint8_t *)"\x02", 1, NULL, 0, &f, &e), KL_CORRUPT);
  assert_non_null(strstr(e.msg, "unknown magic byte 0x02"));
  kl_err_clear(&e);
  assert_int_equal(kl_frame_read((const uint8_t *)"\x01xxx", 4, NULL, 0, &f, &e), KL_CORRUPT);
  kl_err_clear(&e);
  /* the header wins: the value is all payload */
  assert_int_equal(kl_frame_read((const uint8_t *)"\x00\x01", 2,
                                 (const uint8_t *)"\x00\x00\x00\x00\x09", 5, &f, &e), KL_OK);
  assert_int_equal(f.id, 9);
  assert_int_equal(f.n, 2);
  assert_int_equal(kl_frame_read((const uint8_t *)"", 0, (const uint8_t *)"\x01", 1, &f, &e),
                   KL_CORRUPT);
  kl_buf b = {0};
  kl_err_clear(&e);
  assert_int_equal(kl_json_payload(NULL, (const uint8_t *)" {\"a\":[1,-0.5e+3,\"\\u00e9\"]} ", 28,
                                   &b, &e), KL_OK);
  assert_int_equal(kl_json_payload(NULL, (const uint8_t *)"{\"a\":01}", 8, &b, &e), KL_CORRUPT);
  kl_err_clear(&e);
  assert_int_equal(kl_json_payload(NULL, (const uint8_t *)"[1,]", 4, &b, &e), KL_CORRUPT);
  kl_buf_free(NULL, &b);
}

/* Every truncation of a valid value, and every byte of it replaced by a few
** others: the compiled steps agree with the tree walk (run() compares them)
** on what decodes and on each refusal's message. */
static void mutations(const char *schema, const uint8_t *v, size_t n, const char *want) {
  char o[8192];
  kl_err e;
  assert_int_equal(run(schema, v, n, 0, o, sizeof o, &e), KL_OK);
  assert_string_equal(o, want);
  assert_int_equal(run(schema, v, n, KL_AVRO_WRAP_UNIONS, o, sizeof o, &e), KL_OK);
  static const uint8_t others[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, 0x22, 0x5c, 0xc3};
  uint8_t m[512];
  for (size_t cut = 0; cut < n; cut++) run(schema, v, cut, 0, o, sizeof o, &e);
  for (size_t at = 0; at < n; at++) {
    for (size_t k = 0; k < sizeof others; k++) {
      memcpy(m, v, n);
      m[at] = others[k];
      run(schema, m, n, 0, o, sizeof o, &e);
      run(schema, m, n, KL_AVRO_WRAP_UNIONS, o, sizeof o, &e);
    }
  }
}

static void test_steps_agree(void **state) {
  /* the order of the benchmark: every kind of step */
  static const char order[] =
      "{\"type\":\"record\",\"name\":\"Order\",\"fields\":[{\"name\":\"id\",\"type\":\"long\"},"
      "{\"name\":\"customer\",\"type\":\"string\"},{\"name\":\"amount\",\"type\":\"double\"},"
      "{\"name\":\"status\",\"type\":{\"type\":\"enum\",\"name\":\"S\",\"symbols\":[\"NEW\","
      "\"PAID\"]}},{\"name\":\"note\",\"type\":[\"null\",\"string\"]},{\"name\":\"items\","
      "\"type\":{\"type\":\"array\",\"items\":{\"type\":\"record\",\"name\":\"Item\",\"fields\":"
      "[{\"name\":\"sku\",\"type\":\"string\"},{\"name\":\"qty\",\"type\":\"int\"}]}}},"
      "{\"name\":\"tags\",\"type\":{\"type\":\"map\",\"values\":\"string\"}},"
      "{\"name\":\"gift\",\"type\":\"boolean\"},{\"name\":\"f\",\"type\":\"float\"}]}";
  static const uint8_t ov[] = {0xd8, 0x04, 0x06, 'c', '-', '1', 0, 0, 0, 0, 0, 0, 0x29, 0x40,
                               0x02, 0x02, 0x04, 'h', 'i', 0x04, 0x02, 's', 0x06, 0x02, 't',
                               0x02, 0x00, 0x02, 0x02, 'k', 0x02, 'v', 0x00, 0x01,
                               0, 0, 0xc0, 0x3f};
  mutations(order, ov, sizeof ov,
            "{\"id\":300,\"customer\":\"c-1\",\"amount\":12.5,\"status\":\"PAID\",\"note\":\"hi\","
            "\"items\":[{\"sku\":\"s\",\"qty\":3},{\"sku\":\"t\",\"qty\":1}],\"tags\":{\"k\":\"v\"},"
            "\"gift\":true,\"f\":1.5}");
  /* records nested past AV_LEVELS, and a record of more steps than are laid
  ** in line: called, not laid */
  char deep[4096] = "", want[4096] = "";
  uint8_t dv[128];
  size_t dn = 0;
  for (int i = 0; i < 11; i++) {
    sprintf(deep + strlen(deep), "{\"type\":\"record\",\"name\":\"R%d\",\"fields\":[{\"name\":"
            "\"a\",\"type\":\"int\"},{\"name\":\"r\",\"type\":", i);
    sprintf(want + strlen(want), "{\"a\":%d,\"r\":", i);
    dv[dn++] = (uint8_t)(2 * i);
  }
  strcat(deep, "[\"null\",{\"type\":\"fixed\",\"name\":\"U\",\"size\":16,\"logicalType\":\"uuid\"}]");
  strcat(want, "null");
  dv[dn++] = 0;
  for (int i = 0; i < 11; i++) {
    strcat(deep, "}]}");
    strcat(want, "}");
  }
  mutations(deep, dv, dn, want);
  char wide[8192] = "{\"type\":\"record\",\"name\":\"W\",\"fields\":[{\"name\":\"in\",\"type\":"
                    "{\"type\":\"record\",\"name\":\"V\",\"fields\":[";
  char wwant[4096] = "{\"in\":{";
  uint8_t wv[128];
  for (int i = 0; i < 70; i++) {
    sprintf(wide + strlen(wide), "%s{\"name\":\"f%d\",\"type\":\"int\"}", i ? "," : "", i);
    sprintf(wwant + strlen(wwant), "%s\"f%d\":%d", i ? "," : "", i, i % 3);
    wv[i] = (uint8_t)(2 * (i % 3));
  }
  strcat(wide, "]}},{\"name\":\"d\",\"type\":{\"type\":\"bytes\",\"logicalType\":\"decimal\","
               "\"precision\":9,\"scale\":2}},{\"name\":\"h\",\"type\":\"bytes\"}]}");
  strcat(wwant, "},\"d\":-0.01,\"h\":\"ab\"}");
  wv[70] = 0x02;
  wv[71] = 0xff;
  wv[72] = 0x02;
  wv[73] = 0xab;
  mutations(wide, wv, 74, wwant);
  /* a field name longer than a word of constant text, map of arrays */
  mutations("{\"type\":\"record\",\"name\":\"L\",\"fields\":[{\"name\":\"a_rather_long_field_name\","
            "\"type\":{\"type\":\"map\",\"values\":{\"type\":\"array\",\"items\":\"long\"}}}]}",
            (const uint8_t *)"\x02\x02k\x03\x04\x02\x7f\x00\x00", 9,
            "{\"a_rather_long_field_name\":{\"k\":[1,-64]}}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scalars),  cmocka_unit_test(test_strings),
      cmocka_unit_test(test_logical),
      cmocka_unit_test(test_complex),  cmocka_unit_test(test_hostile),
      cmocka_unit_test(test_schemas),  cmocka_unit_test(test_framing),
      cmocka_unit_test(test_steps_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
