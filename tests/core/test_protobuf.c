/*
** test_protobuf.c - Protobuf schemas and Confluent Protobuf payloads to
** JSON.  The vectors (tests/fixtures/protobuf/vectors.txt) were serialised
** by protoc-generated Python classes and their expected JSON read back by
** python3-protobuf (make_vectors.py): every scalar type, defaults, proto2
** defaults and groups, enums known and unknown, repeated fields packed,
** unpacked and mixed, maps, oneofs, merges, nested and recursive messages,
** imports through the resolver, well-known types and Confluent's files,
** message indexes [0], [1], [1,0], [4,0,0], base64 FileDescriptorProtos,
** and bad payloads with the error each must give.  Numbers that are not
** integers are compared by value (integers by their text, which must be
** exact); the text of floats, the limits, bad schemas and allocation
** failure are checked here on bytes written by hand.
*/
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protobuf.h"
#include "protofix.h"

/* ---- a JSON comparison: same structure, same key order, same strings,
** integers by text, other numbers by value ---- */

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
  return p;
}

static unsigned hex4(const char *p) {
  char b[5] = {p[0], p[1], p[2], p[3], 0};
  return (unsigned)strtoul(b, NULL, 16);
}

/* Decode the JSON string at p (at its quote) into out; returns past it. */
static const char *jstr(const char *p, char *out, size_t cap, size_t *n) {
  size_t k = 0;
  assert_int_equal(*p, '"');
  for (p++; *p && *p != '"'; p++) {
    unsigned cp = (unsigned char)*p;
    if (*p == '\\') {
      p++;
      switch (*p) {
        case 'n': cp = '\n'; break;
        case 't': cp = '\t'; break;
        case 'r': cp = '\r'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'u':
          cp = hex4(p + 1);
          p += 4;
          if (cp >= 0xd800 && cp < 0xdc00 && p[1] == '\\' && p[2] == 'u') {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (hex4(p + 3) - 0xdc00);
            p += 6;
          }
          break;
        default: cp = (unsigned char)*p;
      }
      if (cp >= 0x80) { /* as UTF-8 */
        assert_true(k + 4 < cap);
        if (cp < 0x800) {
          out[k++] = (char)(0xc0 | (cp >> 6));
        } else if (cp < 0x10000) {
          out[k++] = (char)(0xe0 | (cp >> 12));
          out[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        } else {
          out[k++] = (char)(0xf0 | (cp >> 18));
          out[k++] = (char)(0x80 | ((cp >> 12) & 0x3f));
          out[k++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        }
        cp = 0x80 | (cp & 0x3f);
      }
    }
    assert_true(k + 1 < cap);
    out[k++] = (char)cp;
  }
  assert_int_equal(*p, '"');
  *n = k;
  return p + 1;
}

static int is_int(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(s[i] == '-' || (s[i] >= '0' && s[i] <= '9'))) return 0;
  return 1;
}

static int jeq(const char **a, const char **b);

/* Past the value at p. */
static const char *skip_value(const char *p) {
  const char *q = p;
  assert_true(jeq(&p, &q));
  return p;
}

typedef struct member {
  char key[256];
  size_t n;
  const char *v;
} member;

/* The members of the object at p (at its brace); returns past it. */
static const char *members(const char *p, member *m, int *count) {
  int k = 0;
  p = ws(p + 1);
  while (*p != '}') {
    assert_true(k < 256);
    p = ws(jstr(ws(p), m[k].key, sizeof m[k].key, &m[k].n));
    assert_int_equal(*p, ':');
    m[k].v = p + 1;
    p = ws(skip_value(p + 1));
    k++;
    if (*p == ',') p = ws(p + 1);
  }
  *count = k;
  return p + 1;
}

/* Objects: the same keys with equal values, in any order (a map's entries
** have none; the order of a message's fields is checked elsewhere). */
static int obj_eq(const char **a, const char **b) {
  member *ma = malloc(256 * sizeof *ma), *mb = malloc(256 * sizeof *mb);
  int na, nb, eq;
  *a = members(*a, ma, &na);
  *b = members(*b, mb, &nb);
  eq = na == nb;
  for (int i = 0; i < na && eq; i++) {
    int found = 0;
    for (int j = 0; j < nb && !found; j++) {
      if (ma[i].n != mb[j].n || memcmp(ma[i].key, mb[j].key, ma[i].n)) continue;
      const char *x = ma[i].v, *y = mb[j].v;
      found = 1;
      eq = jeq(&x, &y);
    }
    eq = eq && found;
  }
  free(ma);
  free(mb);
  return eq;
}

/* Compare the values at *a and *b, advancing both; 0 when they differ. */
static int jeq(const char **a, const char **b) {
  const char *p = ws(*a), *q = ws(*b);
  if (*p == '{') {
    if (*q != '{') return 0;
    *a = p;
    *b = q;
    return obj_eq(a, b);
  }
  if (*p == '[') {
    if (*q != '[') return 0;
    p = ws(p + 1);
    q = ws(q + 1);
    if (*p == ']' || *q == ']') {
      *a = p + 1;
      *b = q + 1;
      return *p == *q;
    }
    for (;;) {
      if (!jeq(&p, &q)) return 0;
      p = ws(p);
      q = ws(q);
      if (*p != *q) return 0;
      if (*p == ']') break;
      if (*p != ',') return 0;
      p++;
      q++;
    }
    *a = p + 1;
    *b = q + 1;
    return 1;
  }
  if (*p == '"') {
    static char s1[1 << 16], s2[1 << 16];
    size_t n1, n2;
    if (*q != '"') return 0;
    *a = jstr(p, s1, sizeof s1, &n1);
    *b = jstr(q, s2, sizeof s2, &n2);
    return n1 == n2 && !memcmp(s1, s2, n1);
  }
  size_t n1 = strcspn(p, ",]} \n"), n2 = strcspn(q, ",]} \n");
  *a = p + n1;
  *b = q + n2;
  if (*p == 't' || *p == 'f' || *p == 'n') return n1 == n2 && !memcmp(p, q, n1);
  if (is_int(p, n1) && is_int(q, n2)) return n1 == n2 && !memcmp(p, q, n1);
  return strtod(p, NULL) == strtod(q, NULL);
}

static int json_equal(const char *a, const char *b) {
  int eq = jeq(&a, &b);
  return eq && !*ws(a) && !*ws(b);
}

/* The fixture file's schema, its imports read from the fixtures too;
** NULL with *rc and err when it does not parse. */
static kl_proto_schema *load(const kl_env *env, const char *file, kl_err *err, kl_rc *rc) {
  t_proto_files f = {{0}, 0};
  const char *text;
  size_t n;
  assert_int_equal(t_proto_file(&f, file, &text, &n), KL_OK);
  kl_proto_schema *s = NULL;
  kl_err_clear(err);
  *rc = kl_proto_schema_parse(env, text, n, t_proto_file, &f, &s, err);
  t_proto_files_free(&f);
  return s;
}

/* Decode from an allocation of exactly the payload's size, so that a read
** past its end is caught by AddressSanitizer. */
static kl_rc decode(const kl_proto_schema *s, const uint8_t *p, size_t n, kl_buf *json,
                    kl_err *err) {
  uint8_t *copy = malloc(n ? n : 1);
  memcpy(copy, p, n);
  kl_err_clear(err);
  json->len = 0;
  kl_rc rc = kl_proto_decode(s, copy, n, json, err);
  free(copy);
  if (rc == KL_OK) {
    assert_int_equal(kl_buf_reserve(NULL, json, json->len + 1), KL_OK);
    json->p[json->len] = 0;
  }
  return rc;
}

static void test_vectors(void **state) {
  (void)state;
  static t_proto_vectors v;
  t_proto_vectors_open(&v);
  const char *line = v.line;
  int cases = 0;
  kl_buf json = {0};
  while (t_proto_vectors_next(&v)) {
    kl_err err;
    kl_rc rc;
    kl_proto_schema *s = load(NULL, v.schema, &err, &rc);
    if (rc != KL_OK) fail_msg("%s: schema %s: %s", v.name, v.schema, err.msg);
    rc = decode(s, v.payload, v.n, &json, &err);
    if (line[0] == 'e' && line[1] == 'x') {
      if (rc != KL_OK) fail_msg("%s: %s: %s", v.name, kl_rc_name(rc), err.msg);
      if (!json_equal((const char *)json.p, line + 7))
        fail_msg("%s:\n  got  %s\n  want %s", v.name, (const char *)json.p, line + 7);
    } else {
      char want_rc[32];
      int off = 0;
      assert_int_equal(sscanf(line + 6, "%31s %n", want_rc, &off), 1);
      if (strcmp(kl_rc_name(rc), want_rc) || !strstr(err.msg, line + 6 + off))
        fail_msg("%s: got %s \"%s\", want %s \"%s\"", v.name, kl_rc_name(rc), err.msg, want_rc,
                 line + 6 + off);
    }
    kl_proto_schema_free(s);
    cases++;
  }
  kl_buf_free(NULL, &json);
  assert_true(cases >= 50);
}

/* ---- hand-written payloads ---- */

static const char *one(const char *file, const uint8_t *p, size_t n, kl_rc want, kl_err *err) {
  static kl_buf json;
  kl_rc rc;
  kl_proto_schema *s = load(NULL, file, err, &rc);
  assert_int_equal(rc, KL_OK);
  rc = decode(s, p, n, &json, err);
  kl_proto_schema_free(s);
  if (rc != want) fail_msg("%s: want %s, got %s: %s", file, kl_rc_name(want), kl_rc_name(rc), err->msg);
  return rc == KL_OK ? (const char *)json.p : err->msg;
}

/* The exact text of floats and doubles: the shortest that reads back. */
static void test_float_text(void **state) {
  (void)state;
  kl_err err;
  /* [0] Scalars: d = 0.1, f = 0.1f */
  const uint8_t a[] = {0x00, 0x09, 0x9a, 0x99, 0x99, 0x99, 0x99, 0x99, 0xb9, 0x3f,
                       0x15, 0xcd, 0xcc, 0xcc, 0x3d};
  const char *j = one("types.proto", a, sizeof a, KL_OK, &err);
  assert_non_null(strstr(j, "{\"d\":0.1,\"f\":0.1,"));
  /* d = 100.0, f = 1e20f */
  const uint8_t b[] = {0x00, 0x09, 0, 0, 0, 0, 0, 0, 0x59, 0x40, 0x15, 0xec, 0x78, 0xad, 0x60};
  j = one("types.proto", b, sizeof b, KL_OK, &err);
  assert_non_null(strstr(j, "{\"d\":100,\"f\":1e+20,"));
  /* d = -0.0, f = NaN */
  const uint8_t c[] = {0x00, 0x09, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x15, 0, 0, 0xc0, 0x7f};
  j = one("types.proto", c, sizeof c, KL_OK, &err);
  assert_non_null(strstr(j, "{\"d\":-0,\"f\":\"NaN\","));
  /* the defaults and the escapes of a string: s = "\"\\\n\x01" */
  const uint8_t d[] = {0x00, 0x72, 0x04, '"', '\\', '\n', 0x01};
  j = one("types.proto", d, sizeof d, KL_OK, &err);
  assert_non_null(strstr(j, "\"s\":\"\\\"\\\\\\n\\u0001\""));
  assert_non_null(strstr(j, "\"i64\":0,"));
}

/* proto2's closed enums: a number the enum lacks is still written. */
static void test_proto2_unknown_enum(void **state) {
  (void)state;
  kl_err err;
  const uint8_t p[] = {0x00, 0x18, 0x09, 0x58, 0x01};
  const char *j = one("legacy.proto", p, sizeof p, KL_OK, &err);
  assert_non_null(strstr(j, "\"k\":9,"));
  assert_non_null(strstr(j, "\"id\":1,"));
  assert_non_null(strstr(j, "\"s\":\"hi \\\"there\\\"\\n\""));
  assert_non_null(strstr(j, "\"raw\":\"01ff\""));
  assert_non_null(strstr(j, "\"f\":\"Infinity\""));
  assert_non_null(strstr(j, "\"big\":18446744073709551615}"));
}

/* Outer.child nested depth times, innermost empty. */
static size_t nest(uint8_t *buf, size_t cap, int depth) {
  size_t n = 0;
  uint8_t tmp[4096];
  for (int i = 0; i < depth; i++) {
    assert_true(n + 4 < sizeof tmp);
    size_t h = 0;
    uint8_t hdr[4];
    hdr[h++] = 0x22; /* field 4, LEN */
    size_t v = n;
    do {
      hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
      v >>= 7;
    } while (v);
    memmove(tmp + h, tmp, n);
    memcpy(tmp, hdr, h);
    n += h;
  }
  assert_true(n + 2 <= cap);
  buf[0] = 0x02; /* [4] */
  buf[1] = 0x08;
  memcpy(buf + 2, tmp, n);
  return n + 2;
}

static void test_depth_limit(void **state) {
  (void)state;
  kl_err err;
  uint8_t p[4096];
  size_t n = nest(p, sizeof p, KL_PROTO_MAX_DEPTH - 1);
  const char *j = one("types.proto", p, n, KL_OK, &err);
  assert_non_null(strstr(j, "\"child\":null"));
  n = nest(p, sizeof p, KL_PROTO_MAX_DEPTH + 5);
  j = one("types.proto", p, n, KL_CORRUPT, &err);
  assert_non_null(strstr(j, "nested deeper than"));
  assert_non_null(strstr(j, "Outer.child.child."));
}

/* Empty messages expand to objects of defaults: the JSON of one value is
** bounded (this test's build lowers KL_PROTO_MAX_JSON). */
static void test_json_bound(void **state) {
  (void)state;
  kl_err err;
  size_t items = KL_PROTO_MAX_JSON / 8;
  uint8_t *p = malloc(1 + 2 * items + 2);
  size_t n = 0;
  p[n++] = 0x02; /* [1] Lists */
  p[n++] = 0x02;
  for (size_t i = 0; i < items; i++) {
    p[n++] = 0x32; /* items, LEN 0 */
    p[n++] = 0x00;
  }
  const char *j = one("types.proto", p, n, KL_CORRUPT, &err);
  assert_non_null(strstr(j, "JSON would exceed"));
  free(p);
}

static kl_rc texts_resolver(void *ctx, const char *name, const char **text, size_t *n) {
  const char *const *t = ctx;
  for (; *t; t += 2)
    if (!strcmp(t[0], name)) {
      *text = t[1];
      *n = strlen(t[1]);
      return KL_OK;
    }
  if (!strcmp(name, "fails.proto")) return KL_IO;
  return KL_NOTFOUND;
}

static void expect_bad_schema(const char *text, const char *const *refs, kl_rc want,
                              const char *msg) {
  kl_err err;
  kl_err_clear(&err);
  kl_proto_schema *s = (kl_proto_schema *)1;
  kl_rc rc = kl_proto_schema_parse(NULL, text, strlen(text), texts_resolver, (void *)refs, &s, &err);
  if (rc != want || !strstr(err.msg, msg))
    fail_msg("schema %.40s: got %s \"%s\", want %s \"%s\"", text, kl_rc_name(rc), err.msg,
             kl_rc_name(want), msg);
  assert_null(s);
}

static void test_bad_schemas(void **state) {
  (void)state;
  const char *none[] = {NULL};
  expect_bad_schema("syntax = \"proto3\";\nmessage A { int32 x = 1 }\n", none, KL_CORRUPT,
                    "schema:2:25: Expected \";\".");
  expect_bad_schema("syntax = \"proto3\";\nmessage A { Missing m = 1; }\n", none, KL_CORRUPT,
                    "\"Missing\" is not defined");
  expect_bad_schema("syntax = \"proto3\";\nimport \"nope.proto\";\n", none, KL_CORRUPT,
                    "import \"nope.proto\": not among the references");
  expect_bad_schema("syntax = \"proto3\";\nimport \"fails.proto\";\n", none, KL_IO,
                    "import \"fails.proto\": not resolved");
  const char *cycle[] = {"a.proto", "syntax = \"proto3\"; import \"b.proto\";",
                         "b.proto", "syntax = \"proto3\"; import \"a.proto\";", NULL};
  expect_bad_schema("syntax = \"proto3\";\nimport \"a.proto\";\n", cycle, KL_CORRUPT,
                    "import \"a.proto\": imports itself");
  expect_bad_schema("syntax = \"proto2\";\nmessage A { optional string s = 1 [default = \"\\377\"]; }\n",
                    none, KL_CORRUPT, "A.s: its default is not UTF-8");
  /* 200 nested messages: refused before the parser recurses */
  static char deep[4096];
  size_t k = 0;
  for (int i = 0; i < 200; i++) k += (size_t)snprintf(deep + k, sizeof deep - k, "message M%d {", i);
  expect_bad_schema(deep, none, KL_CORRUPT, "nested deeper than");
  char *big = malloc(KL_PROTO_MAX_SCHEMA + 2);
  memset(big, ' ', KL_PROTO_MAX_SCHEMA + 1);
  big[KL_PROTO_MAX_SCHEMA + 1] = 0;
  expect_bad_schema(big, none, KL_CORRUPT, "more than a schema may have");
  free(big);
}

/* An empty schema is a file without messages: every index is out of range. */
static void test_empty_schema(void **state) {
  (void)state;
  kl_err err;
  kl_err_clear(&err);
  kl_proto_schema *s = NULL;
  assert_int_equal(kl_proto_schema_parse(NULL, "syntax = \"proto3\";", 18, NULL, NULL, &s, &err),
                   KL_OK);
  kl_buf json = {0};
  const uint8_t p[] = {0x00};
  assert_int_equal(kl_proto_decode(s, p, 1, &json, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, "the schema has 0 messages"));
  kl_proto_schema_free(s);
  kl_buf_free(NULL, &json);
}

/* Every allocation of a decode failing in turn: KL_NOMEM, nothing leaked. */
static void test_alloc_failure(void **state) {
  (void)state;
  static t_proto_vectors v;
  t_proto_vectors_open(&v);
  while (t_proto_vectors_next(&v) && strcmp(v.name, "maps") != 0) {}
  t_proto_vectors_close(&v);
  const uint8_t *payload = v.payload;
  size_t n = v.n;
  assert_true(n > 0);
  for (long at = 1;; at++) {
    t_failalloc fa;
    memset(&fa, 0, sizeof fa);
    const kl_env *env = t_failenv(&fa, 0);
    kl_err err;
    kl_rc rc;
    kl_proto_schema *s = load(env, "types.proto", &err, &rc);
    assert_int_equal(rc, KL_OK);
    fa.fail_at = fa.calls + at;
    kl_buf json = {0};
    kl_err_clear(&err);
    rc = kl_proto_decode(s, payload, n, &json, &err);
    kl_buf_free(env, &json);
    kl_proto_schema_free(s);
    assert_int_equal(fa.live, 0);
    if (rc == KL_OK) break;
    assert_int_equal(rc, KL_NOMEM);
    assert_true(at < 1000);
  }
}

/* confluent.type.Decimal comes out as its exact text (the vectors compare
** fractions by value): negative, past 64 bits, a negative scale, zero. */
static void test_decimal_text(void **state) {
  (void)state;
  static const char *const c[][2] = {
      {"000a150a11e29cd60e3ca35b4054460a9efffffffff91805",
       "{\"price\":-100000000000000000000000000000000000.00007,\"label\":null,\"ttl\":null}"},
      {"000a050a01051803", "{\"price\":0.005,\"label\":null,\"ttl\":null}"},
      {"000a0e0a010c18fdffffffffffffffff01", "{\"price\":12000,\"label\":null,\"ttl\":null}"},
      {"000a021802", "{\"price\":0.00,\"label\":null,\"ttl\":null}"},
      {"000a040a02ff9c", "{\"price\":-100,\"label\":null,\"ttl\":null}"},
  };
  kl_err err;
  kl_rc rc;
  kl_proto_schema *s = load(NULL, "confluent.proto", &err, &rc);
  assert_int_equal(rc, KL_OK);
  kl_buf json = {0};
  uint8_t p[64];
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
    size_t n = t_unhex(c[i][0], p, sizeof p);
    assert_int_equal(decode(s, p, n, &json, &err), KL_OK);
    assert_string_equal((const char *)json.p, c[i][1]);
  }
  /* a scale past the bound */
  size_t n = t_unhex("000a0318e80f", p, sizeof p);
  assert_int_equal(decode(s, p, n, &json, &err), KL_CORRUPT);
  assert_non_null(strstr(err.msg, "decimal scale 2024"));
  kl_buf_free(NULL, &json);
  kl_proto_schema_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors),          cmocka_unit_test(test_float_text),
      cmocka_unit_test(test_proto2_unknown_enum), cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_json_bound),       cmocka_unit_test(test_bad_schemas),
      cmocka_unit_test(test_empty_schema),     cmocka_unit_test(test_alloc_failure),
      cmocka_unit_test(test_decimal_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
