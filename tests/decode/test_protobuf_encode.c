/*
** test_protobuf_encode.c - JSON text to Confluent Protobuf payloads
** (decode/protobuf_encode.h).  Every vector of tests/fixtures/protobuf/
** vectors.txt (payloads serialised by protoc-generated classes) is decoded,
** the JSON encoded again, and then: its message-index array is the
** payload's (the byte 0x00 for [0]), the decoder reads the same JSON back,
** and python3-protobuf (tests/decode/protobuf_read.py, from protoc's
** descriptors) reads the two payloads as the same message and finds
** nothing it does not know in the new one.  Then the JSON forms the
** decoder does not write (strings of digits, enums by number, 5.0, null
** and reordered members, decimals as strings), defaults
** not written, the message chosen by name, each error with its message,
** members under their JSON names (names.proto; read the same way by
** python3-protobuf's JSON mapping), the nesting bound and allocation
** failure.
*/
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protobuf_encode.h"
#include "protofix.h"

/* The fixture file's schema, its imports read from the fixtures too. */
static kl_proto_schema *load(const kl_env *env, const char *file) {
  t_proto_files f = {{0}, 0};
  const char *text;
  size_t n;
  assert_int_equal(t_proto_file(&f, file, &text, &n), KL_OK);
  kl_proto_schema *s = NULL;
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_proto_schema_parse(env, text, n, t_proto_file, &f, &s, &err);
  t_proto_files_free(&f);
  if (rc) fail_msg("%s: %s", file, err.msg);
  return s;
}

/* The decoder's JSON of p, NUL-terminated (malloc'd), or NULL with err. */
static char *decode(const kl_proto_schema *s, const uint8_t *p, size_t n, kl_err *err) {
  kl_buf json = {0};
  kl_err_clear(err);
  kl_rc rc = kl_proto_decode(s, p, n, &json, err);
  if (rc) {
    kl_buf_free(NULL, &json);
    return NULL;
  }
  assert_int_equal(kl_buf_append(NULL, &json, "", 1), KL_OK);
  return (char *)json.p;
}

/* Encode json (a C string) into *out (emptied first). */
static kl_rc encode(const kl_proto_schema *s, const char *msg, const char *json, kl_buf *out,
                    kl_err *err) {
  out->len = 0;
  kl_err_clear(err);
  /* from an allocation of exactly its size: a read past it is caught */
  size_t n = strlen(json);
  char *copy = malloc(n ? n : 1);
  memcpy(copy, json, n);
  kl_rc rc = kl_proto_encode(s, msg, copy, n, out, err);
  free(copy);
  return rc;
}

/* The message-index array at p as "a,b,c"; OUT: *used, its bytes. */
static void index_path(const uint8_t *p, size_t n, char *out, size_t cap, size_t *used) {
  size_t i = 0, k = 0;
  assert_true(n > 0);
  unsigned count = p[i++] >> 1; /* every index of the fixtures is below 64 */
  if (count == 0) {
    snprintf(out, cap, "0");
  } else {
    out[0] = 0;
    for (unsigned j = 0; j < count; j++) {
      assert_true(i < n);
      k += (size_t)snprintf(out + k, cap - k, "%s%u", j ? "," : "", p[i++] >> 1);
    }
  }
  *used = i;
}

static const struct {
  const char *schema, *path, *name;
} kNames[] = {
    {"types", "0", "t.Scalars"},     {"types", "1", "t.Lists"},
    {"types", "1,0", "t.Lists.Item"}, {"types", "2", "t.Maps"},
    {"types", "3", "t.Choice"},      {"types", "4", "t.Outer"},
    {"types", "4,0", "t.Outer.Inner"}, {"types", "4,0,0", "t.Outer.Inner.Deep"},
    {"legacy", "0", "l.Legacy"},     {"order", "0", "shop.Order"},
    {"confluent", "0", "c.Priced"},
};

static const char *name_of(const char *schema, const char *path) {
  for (size_t i = 0; i < sizeof kNames / sizeof *kNames; i++) {
    size_t k = strlen(kNames[i].schema);
    if (!strncmp(schema, kNames[i].schema, k) && schema[k] == '.' && !strcmp(path, kNames[i].path))
      return kNames[i].name;
  }
  fail_msg("no message %s [%s] in the table", schema, path);
  return NULL;
}

static void put_hex(FILE *f, const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x", p[i]);
}

/* A file as a "proto" line of protobuf_read.py: its text as a JSON string. */
static void put_proto(FILE *f, const char *name) {
  char path[512];
  snprintf(path, sizeof path, T_PROTO_DIR "%s", name);
  size_t n;
  uint8_t *t = t_read_file(path, &n);
  assert_non_null(t);
  fprintf(f, "proto %s \"", name);
  for (size_t i = 0; i < n; i++) {
    if (t[i] == '"' || t[i] == '\\') fprintf(f, "\\%c", t[i]);
    else if (t[i] < 0x20) fprintf(f, "\\u%04x", t[i]);
    else fputc(t[i], f);
  }
  fprintf(f, "\"\n");
  free(t);
}

/* Output lines of protobuf_read.py over the file at in (malloc'd). */
static char *python_read(const char *in) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/../decode/protobuf_read.py' < '%s'",
           KL_FIXTURES, in);
  FILE *py = popen(cmd, "r");
  assert_non_null(py);
  size_t cap = 1 << 20, n = 0;
  char *out = malloc(cap);
  size_t k;
  while ((k = fread(out + n, 1, cap - 1 - n, py)) > 0) n += k;
  out[n] = 0;
  assert_int_equal(pclose(py), 0);
  return out;
}

static void test_vectors_round_trip(void **state) {
  (void)state;
  static t_proto_vectors v;
  t_proto_vectors_open(&v);
  char *dir = t_mkdtemp("pbenc");
  char in[600];
  snprintf(in, sizeof in, "%s/pairs.txt", dir);
  FILE *py = fopen(in, "w");
  assert_non_null(py);
  static const char *const protos[] = {"common.proto", "types.proto", "legacy.proto",
                                       "order.proto", "confluent.proto"};
  for (size_t i = 0; i < sizeof protos / sizeof *protos; i++) put_proto(py, protos[i]);
  const char *name = v.name, *schema = v.schema;
  const uint8_t *payload = v.payload;
  int cases = 0, pairs = 0;
  kl_buf out = {0};
  while (t_proto_vectors_next(&v)) {
    if (strncmp(v.line, "expect ", 7) != 0) continue;
    size_t n = v.n;
    kl_proto_schema *s = load(NULL, schema);
    kl_err err;
    char *json = decode(s, payload, n, &err);
    if (!json) fail_msg("%s: %s", name, err.msg);
    char path[64], epath[64];
    size_t used, eused;
    index_path(payload, n, path, sizeof path, &used);
    const char *msg = name_of(schema, path);
    kl_rc rc = encode(s, msg, json, &out, &err);
    if (rc) fail_msg("%s: encoding %s as %s: %s", name, json, msg, err.msg);
    index_path(out.p, out.len, epath, sizeof epath, &eused);
    if (strcmp(path, epath) != 0) fail_msg("%s: index [%s], want [%s]", name, epath, path);
    if (!strcmp(path, "0")) assert_int_equal(eused, 1); /* [0] is one byte */
    char *again = decode(s, out.p, out.len, &err);
    if (!again || strcmp(again, json) != 0)
      fail_msg("%s: read back\n  %s\n  want %s", name, again ? again : err.msg, json);
    if (strstr(schema, ".proto")) {
      fprintf(py, "pair %s ", msg);
      put_hex(py, payload, n);
      fputc(' ', py);
      put_hex(py, out.p, out.len);
      fputc('\n', py);
      pairs++;
    }
    free(again);
    free(json);
    kl_proto_schema_free(s);
    cases++;
  }
  fclose(py);
  kl_buf_free(NULL, &out);
  assert_true(cases >= 40);
  char *got = python_read(in);
  int same = 0;
  for (char *l = strtok(got, "\n"); l; l = strtok(NULL, "\n")) {
    if (strcmp(l, "same") != 0) fail_msg("python3-protobuf: %s", l);
    same++;
  }
  assert_int_equal(same, pairs);
  free(got);
  t_rmdir(dir);
  free(dir);
}

/* Encode in, decode: want; with the payload's hex when whex is given. */
static void trip(const char *schema, const char *msg, const char *in, const char *want,
                  const char *whex) {
  kl_proto_schema *s = load(NULL, schema);
  kl_buf out = {0};
  kl_err err;
  kl_rc rc = encode(s, msg, in, &out, &err);
  if (rc) fail_msg("%s: %s", in, err.msg);
  char *got = decode(s, out.p, out.len, &err);
  if (!got || strcmp(got, want) != 0)
    fail_msg("%s\n  got  %s\n  want %s", in, got ? got : err.msg, want);
  if (whex) {
    char h[512] = "";
    for (size_t i = 0; i < out.len && 2 * i + 2 < sizeof h; i++)
      snprintf(h + 2 * i, 3, "%02x", out.p[i]);
    if (strcmp(h, whex) != 0) fail_msg("%s: bytes %s, want %s", in, h, whex);
  }
  free(got);
  kl_buf_free(NULL, &out);
  kl_proto_schema_free(s);
}

#define SCALARS_TAIL "\"s32\":0,\"s64\":0,\"fx32\":0,\"fx64\":0,\"sf32\":0,\"sf64\":0,\"b\":false,"

/* JSON the decoder does not write but people do: integers as strings of
** digits or as integral numbers, enums by number, null and reordered
** members, uppercase hex, map keys of every kind, decimals. */
static void test_other_forms(void **state) {
  (void)state;
  trip("types.proto", NULL,
        "{\"c\":2,\"by\":\"00FF\",\"i64\":\"-9007199254740993\",\"u64\":\"18446744073709551615\","
        "\"i32\":5.0,\"u32\":1e3,\"s\":\"\\u00e9\\ud83d\\ude00\",\"d\":null,\"f\":-0.5}",
        "{\"d\":0,\"f\":-0.5,\"i32\":5,\"i64\":-9007199254740993,\"u32\":1000,"
        "\"u64\":18446744073709551615," SCALARS_TAIL "\"s\":\"\xc3\xa9\xf0\x9f\x98\x80\","
        "\"by\":\"00ff\",\"c\":\"BLUE\"}",
        NULL);
  /* an open enum takes numbers it does not name; -0.0 is not the default;
  ** members are written in the order given */
  trip("types.proto", "t.Scalars", "{\"c\":7,\"d\":-0.0}",
        "{\"d\":-0,\"f\":0,\"i32\":0,\"i64\":0,\"u32\":0,\"u64\":0," SCALARS_TAIL
        "\"s\":\"\",\"by\":\"\",\"c\":7}", "00800107090000000000000080");
  /* defaults are not written: all of these are the empty message */
  trip("types.proto", NULL,
        "{\"d\":0,\"f\":0.0,\"i32\":0,\"i64\":\"0\",\"u64\":-0,\"b\":false,\"s\":\"\",\"by\":\"\","
        "\"c\":\"RED\"}",
        "{\"d\":0,\"f\":0,\"i32\":0,\"i64\":0,\"u32\":0,\"u64\":0," SCALARS_TAIL
        "\"s\":\"\",\"by\":\"\",\"c\":\"RED\"}", "00");
  /* a oneof member is written even when it is the default; its other
  ** members may be null; proto3 optional like a plain field */
  trip("types.proto", "Choice", "{\"text\":null,\"number\":\"0\",\"maybe\":0}",
        "{\"id\":\"\",\"number\":0,\"maybe\":0}", "02061800");
  trip("types.proto", "t.Choice", "{\"item\":{\"sku\":\"a\",\"qty\":-1}}",
        "{\"id\":\"\",\"item\":{\"sku\":\"a\",\"qty\":-1},\"maybe\":0}",
        "0206220e0a016110ffffffffffffffffff01");
  /* map keys of every kind, in the order given */
  trip("types.proto", "t.Maps",
       "{\"names\":{\"-5\":\"x\",\"7\":\"\"},\"flags\":{\"true\":\"GREEN\",\"false\":0},"
       "\"blobs\":{\"18446744073709551615\":\"AB\"},\"ratios\":{\"-1\":0.5},"
       "\"items\":{\"k\":{\"sku\":\"s\"}},\"counts\":{\"\":\"-1\"}}",
       "{\"counts\":{\"\":-1},\"names\":{\"-5\":\"x\",\"7\":\"\"},"
       "\"flags\":{\"true\":\"GREEN\",\"false\":\"RED\"},\"items\":{\"k\":{\"sku\":\"s\",\"qty\":0}"
       "},"
       "\"blobs\":{\"18446744073709551615\":\"ab\"},\"ratios\":{\"-1\":0.5}}",
       NULL);
  /* repeated: packed where proto3 packs, each element tagged otherwise */
  trip("types.proto", "t.Lists", "{\"packed_i\":[1,-1],\"unpacked_i\":[2,3],\"names\":[\"a\"]}",
        "{\"packed_i\":[1,-1],\"unpacked_i\":[2,3],\"ds\":[],\"names\":[\"a\"],\"colors\":[],"
        "\"items\":[],\"zs\":[],\"fx\":[],\"flags\":[],\"blobs\":[]}",
        "02020a0b01ffffffffffffffffff0110021003220161");
  /* nested messages, a well-known type as the message it is, recursion */
  trip(
      "types.proto", "t.Outer",
      "{\"child\":{\"inner\":{\"deep\":{\"leaf\":\"x\"},\"ns\":[]}},\"at\":{\"seconds\":1700000000,"
      "\"nanos\":5},\"level\":\"HIGH\",\"price\":{\"units\":\"-3\"}}",
      "{\"inner\":null,\"at\":{\"seconds\":1700000000,\"nanos\":5},"
      "\"price\":{\"currency\":\"\",\"units\":-3,\"nanos\":0},"
      "\"child\":{\"inner\":{\"deep\":{\"leaf\":\"x\"},\"n\":0,\"ns\":[]},\"at\":null,"
      "\"price\":null,\"child\":null,\"level\":\"LOW\"},\"level\":\"HIGH\"}",
      NULL);
  /* proto2: [default = ...] values are not written, a group between its
  ** tags, a required field written even at its default */
  trip("legacy.proto", NULL, "{\"id\":0,\"n\":42,\"k\":\"B\",\"g\":{\"x\":3}}",
        "{\"n\":42,\"s\":\"hi \\\"there\\\"\\n\",\"k\":\"B\",\"d\":2.5,\"raw\":\"01ff\",\"r\":[],"
        "\"p\":[],\"g\":{\"x\":3,\"y\":\"why\"},\"id\":0,\"flag\":true,\"f\":\"Infinity\","
        "\"k2\":\"A\",\"z\":-7,\"big\":18446744073709551615}",
        "00580043480344");
  /* decimals: as a number, or a string (every digit kept) */
  trip("confluent.proto", NULL, "{\"price\":\"12.340\"}",
        "{\"price\":12.340,\"label\":null,\"ttl\":null}", "000a080a02303410051803");
  trip("confluent.proto", NULL, "{\"price\":-0.005,\"label\":{\"value\":\"x\"}}",
        "{\"price\":-0.005,\"label\":{\"value\":\"x\"},\"ttl\":null}", NULL);
  trip("confluent.proto", NULL,
        "{\"price\":\"-123456789012345678901234567890.123456789\"}",
        "{\"price\":-123456789012345678901234567890.123456789,\"label\":null,\"ttl\":null}", NULL);
  trip("confluent.proto", NULL, "{\"price\":0}", "{\"price\":0,\"label\":null,\"ttl\":null}",
        "000a050a01001001");
  trip("confluent.proto", NULL, "{\"price\":1e3}",
        "{\"price\":1000,\"label\":null,\"ttl\":null}", NULL);
  /* a negative scale: the decoder writes it as zeros, more than the
  ** unscaled bytes could hold, and they encode again as that scale */
  char big[1024], want[1100];
  snprintf(big, sizeof big, "{\"price\":3186%0780d}", 0);
  snprintf(want, sizeof want, "{\"price\":3186%0780d,\"label\":null,\"ttl\":null}", 0);
  trip("confluent.proto", NULL, "{\"price\":0.3186E784}", want, NULL);
  trip("confluent.proto", NULL, big, want, NULL);
  /* scale -1000 written as 1009 digits: as few zeros dropped as fit */
  char most[1100];
  snprintf(most, sizeof most, "{\"price\":-1%01008d,\"label\":null,\"ttl\":null}", 0);
  trip("confluent.proto", NULL, "{\"price\":-100000000E01000}", most, NULL);
}

/* JSON that does not fit the schema: the member path and what is wrong. */
static void test_errors(void **state) {
  (void)state;
  static const struct {
    const char *schema, *msg, *json;
    kl_rc rc;
    const char *want;
  } cases[] = {
      {"types.proto", NULL, "{\"nope\":1}", KL_CORRUPT, "$: \"nope\" is not a field of t.Scalars"},
      {"types.proto", "t.Outer", "{\"inner\":{\"deep\":{\"leaf\":\"x\",\"x\":1}}}", KL_CORRUPT,
       "$.inner.deep: \"x\" is not a field of t.Outer.Inner.Deep"},
      {"types.proto", NULL, "{\"s\":5}", KL_CORRUPT, "$.s: 5 is not a string"},
      {"types.proto", NULL, "{\"i32\":\"x\"}", KL_CORRUPT, "$.i32: \"x\" is not an int32"},
      {"types.proto", NULL, "{\"u64\":true}", KL_CORRUPT, "$.u64: true is not a uint64"},
      {"types.proto", NULL, "{\"b\":\"true\"}", KL_CORRUPT, "$.b: \"true\" is not a bool"},
      {"types.proto", NULL, "{\"d\":\"x\"}", KL_CORRUPT, "$.d: \"x\" is not a double"},
      {"types.proto", NULL, "{\"i32\":2147483648}", KL_CORRUPT,
       "$.i32: 2147483648 is out of range for int32"},
      {"types.proto", NULL, "{\"i32\":-2147483649}", KL_CORRUPT,
       "$.i32: -2147483649 is out of range for int32"},
      {"types.proto", NULL, "{\"u32\":-1}", KL_CORRUPT, "$.u32: -1 is out of range for uint32"},
      {"types.proto", NULL, "{\"u64\":18446744073709551616}", KL_CORRUPT,
       "$.u64: 18446744073709551616 is out of range for uint64"},
      {"types.proto", NULL, "{\"i64\":\"9223372036854775808\"}", KL_CORRUPT,
       "$.i64: \"9223372036854775808\" is out of range for int64"},
      {"types.proto", NULL, "{\"sf32\":1e10}", KL_CORRUPT,
       "$.sf32: 1e10 is out of range for sfixed32"},
      {"types.proto", NULL, "{\"i64\":1.5}", KL_CORRUPT, "$.i64: 1.5 is not an integer: int64"},
      {"types.proto", NULL, "{\"f\":1e39}", KL_CORRUPT, "$.f: 1e39 is out of range for float"},
      {"types.proto", NULL, "{\"d\":1e400}", KL_CORRUPT, "$.d: 1e400 is out of range for double"},
      {"types.proto", NULL, "{\"by\":\"0g\"}", KL_CORRUPT, "$.by: \"0g\" is not hex text"},
      {"types.proto", NULL, "{\"by\":\"abc\"}", KL_CORRUPT, "$.by: \"abc\" is not hex text"},
      {"types.proto", NULL, "{\"by\":12}", KL_CORRUPT, "$.by: 12 is not hex text"},
      {"types.proto", NULL, "{\"c\":\"PURPLE\"}", KL_CORRUPT,
       "$.c: \"PURPLE\" is not a value of enum t.Color"},
      {"types.proto", NULL, "{\"c\":2147483648}", KL_CORRUPT,
       "$.c: 2147483648 is out of range for enum"},
      {"legacy.proto", NULL, "{\"id\":1,\"k\":7}", KL_CORRUPT,
       "$.k: 7 is not a value of enum l.Kind (a proto2 enum takes only its own numbers)"},
      {"legacy.proto", NULL, "{\"n\":1}", KL_CORRUPT,
       "$: the required field id of l.Legacy is missing"},
      {"legacy.proto", NULL, "{\"id\":null}", KL_CORRUPT,
       "$: the required field id of l.Legacy is missing"},
      {"types.proto", "t.Choice", "{\"text\":\"a\",\"number\":1}", KL_CORRUPT,
       "$.number: text and number are members of oneof pick: only one may be set"},
      {"types.proto", NULL, "{\"s\":\"a\",\"s\":\"b\"}", KL_CORRUPT, "$.s: given twice"},
      {"types.proto", "t.Lists", "{\"names\":\"a\"}", KL_CORRUPT,
       "$.names: \"a\" is not an array (the field is repeated)"},
      {"types.proto", "t.Lists", "{\"packed_i\":[1,\"x\"]}", KL_CORRUPT,
       "$.packed_i[1]: \"x\" is not an int32"},
      {"types.proto", "t.Lists", "{\"items\":[{\"sku\":\"a\"},{\"sku\":1}]}", KL_CORRUPT,
       "$.items[1].sku: 1 is not a string"},
      {"types.proto", "t.Lists", "{\"items\":[null]}", KL_CORRUPT,
       "$.items[0]: null is not an object (message t.Lists.Item)"},
      {"types.proto", "t.Maps", "{\"names\":{\"x\":\"a\"}}", KL_CORRUPT,
       "$.names.x: \"x\" is not an int32"},
      {"types.proto", "t.Maps", "{\"flags\":{\"yes\":1}}", KL_CORRUPT,
       "$.flags.yes: \"yes\" is not a bool"},
      {"types.proto", "t.Maps", "{\"counts\":{\"a\":\"b\"}}", KL_CORRUPT,
       "$.counts.a: \"b\" is not an int64"},
      {"types.proto", "t.Maps", "{\"counts\":{\"a\":null}}", KL_CORRUPT,
       "$.counts.a: null is not an int64"},
      {"types.proto", "t.Maps", "{\"counts\":[]}", KL_CORRUPT,
       "$.counts: an array is not an object (a map)"},
      {"types.proto", "t.Outer", "{\"inner\":5}", KL_CORRUPT,
       "$.inner: 5 is not an object (message t.Outer.Inner)"},
      {"types.proto", NULL, "[1]", KL_CORRUPT, "$: an array is not an object (message t.Scalars)"},
      {"confluent.proto", NULL, "{\"price\":\"abc\"}", KL_CORRUPT,
       "$.price: \"abc\" is not a decimal number"},
      {"confluent.proto", NULL, "{\"price\":{\"value\":\"04d2\",\"scale\":2}}", KL_CORRUPT,
       "$.price: an object is not a decimal number"},
      {"confluent.proto", NULL, "{\"price\":\"1e-1001\"}", KL_CORRUPT,
       "$.price: \"1e-1001\" has a scale beyond 1000 either way"},
      {"confluent.proto", NULL, "{\"price\":1e1001}", KL_CORRUPT,
       "$.price: 1e1001 has a scale beyond 1000 either way"},
      {"confluent.proto", NULL, "{\"price\":1e-2000}", KL_CORRUPT,
       "$.price: 1e-2000 has a scale beyond 1000 either way"},
      {"types.proto", NULL, "{\"s\":", KL_CORRUPT, "not JSON: a value expected at character 5"},
      {"types.proto", NULL, "{\"s\":\"a\"} x", KL_CORRUPT,
       "not JSON: text after the value at character 10"},
      {"types.proto", NULL, "{\"s\":\"a\" \"i32\":1}", KL_CORRUPT,
       "not JSON: ',' or '}' expected at character 9"},
      {"types.proto", NULL, "{\"s\":\"\\ud800\"}", KL_CORRUPT,
       "not JSON: a string that is not UTF-8"},
      {"types.proto", NULL, "{\"s\":\"\xff\"}", KL_CORRUPT, "not JSON: a string that is not UTF-8"},
      {"types.proto", NULL, "{\"s\":\"a\\q\"}", KL_CORRUPT, "not JSON: a bad escape in a string"},
      {"types.proto", NULL, "{\"i32\":01}", KL_CORRUPT,
       "not JSON: ',' or '}' expected at character 8"},
      {"types.proto", NULL, "", KL_CORRUPT, "not JSON: a value expected at character 0"},
      {"types.proto", "t.Nope", "{}", KL_NOTFOUND,
       "message t.Nope is not in the schema (its messages: t.Scalars, t.Lists, t.Maps, t.Choice, "
       "t.Outer)"},
      {"types.proto", "common.Money", "{}", KL_NOTFOUND,
       "message common.Money is not in the schema"},
      {"types.proto", "t.Maps.CountsEntry", "{}", KL_NOTFOUND, "message t.Maps.CountsEntry is not"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kl_proto_schema *s = load(NULL, cases[i].schema);
    kl_buf out = {0};
    kl_err err;
    kl_rc rc = encode(s, cases[i].msg, cases[i].json, &out, &err);
    if (rc != cases[i].rc || !strstr(err.msg, cases[i].want))
      fail_msg("%s: got %s \"%s\", want %s \"%s\"", cases[i].json, kl_rc_name(rc), err.msg,
               kl_rc_name(cases[i].rc), cases[i].want);
    kl_buf_free(NULL, &out);
    kl_proto_schema_free(s);
  }
}

/* Members under their JSON names (json_name: lowerCamelCase, or what the
** .proto sets) as well as under the .proto's, read back under the
** .proto's; python3-protobuf's own JSON mapping (json_format) reads each
** text to the message the bytes hold, and refuses what the encoder
** refuses as no field.  A field named twice, under either name, is an
** error naming the member; the .proto's names come first. */
static void test_json_names(void **state) {
  (void)state;
  static const struct {
    const char *json, *want;
  } ok[] = {
      {"{\"orderId\":\"a\",\"lineItems\":[{\"skuId\":\"s\",\"unitCount\":3},{\"sku_id\":\"t\"}],"
       "\"tagCounts\":{\"a_b\":1},\"cardNo\":\"c\",\"reference\":\"7\",\"x2\":\"y\","
       "\"already\":\"z\"}",
       "{\"order_id\":\"a\",\"line_items\":[{\"sku_id\":\"s\",\"unit_count\":3},"
       "{\"sku_id\":\"t\",\"unit_count\":0}],\"tag_counts\":{\"a_b\":1},\"card_no\":\"c\","
       "\"ref_no\":7,\"x_2\":\"y\",\"already\":\"z\"}"},
      {"{\"order_id\":\"b\",\"lineItems\":[],\"ibanCode\":\"i\",\"ref_no\":-1,\"x_2\":\"\"}",
       "{\"order_id\":\"b\",\"line_items\":[],\"tag_counts\":{},\"iban_code\":\"i\","
       "\"ref_no\":-1,\"x_2\":\"\",\"already\":\"\"}"},
  };
  char *dir = t_mkdtemp("pbnames");
  char in[600];
  snprintf(in, sizeof in, "%s/json.txt", dir);
  FILE *py = fopen(in, "w");
  assert_non_null(py);
  put_proto(py, "names.proto");
  kl_proto_schema *s = load(NULL, "names.proto");
  kl_buf out = {0};
  kl_err err;
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    if (encode(s, NULL, ok[i].json, &out, &err)) fail_msg("%s: %s", ok[i].json, err.msg);
    char *got = decode(s, out.p, out.len, &err);
    if (!got || strcmp(got, ok[i].want) != 0)
      fail_msg("%s\n  got  %s\n  want %s", ok[i].json, got ? got : err.msg, ok[i].want);
    free(got);
    fprintf(py, "json n.Names ");
    put_hex(py, out.p, out.len);
    fprintf(py, " %s\n", ok[i].json);
  }
  fprintf(py, "json n.Names 00 {\"refNo\":1}\n"); /* a JSON name that json_name replaces */
  fclose(py);

  static const struct {
    const char *json, *want; /* the whole message */
  } bad[] = {
      {"{\"order_id\":\"a\",\"orderId\":\"b\"}",
       "$.orderId: given twice, as order_id and as orderId"},
      {"{\"orderId\":\"a\",\"order_id\":\"b\"}",
       "$.order_id: given twice, as orderId and as order_id"},
      {"{\"orderId\":\"a\",\"orderId\":\"b\"}", "$.orderId: given twice"},
      {"{\"lineItems\":[{\"skuId\":\"a\",\"sku_id\":\"b\"}]}",
       "$.lineItems[0].sku_id: given twice, as skuId and as sku_id"},
      {"{\"ref_no\":1,\"reference\":2}", "$.reference: given twice, as ref_no and as reference"},
      {"{\"x2\":null,\"x_2\":\"a\"}", "$.x_2: given twice, as x2 and as x_2"},
      {"{\"refNo\":1}", "$: \"refNo\" is not a field of n.Names"},
      {"{\"OrderId\":\"a\"}", "$: \"OrderId\" is not a field of n.Names"},
      {"{\"cardNo\":\"a\",\"iban_code\":\"b\"}",
       "$.iban_code: card_no and iban_code are members of oneof pay_by: only one may be set"},
      {"{\"lineItems\":[{\"unitCount\":\"x\"}]}",
       "$.lineItems[0].unitCount: \"x\" is not an int32"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kl_rc rc = encode(s, NULL, bad[i].json, &out, &err);
    if (rc != KL_CORRUPT || strcmp(err.msg, bad[i].want) != 0)
      fail_msg("%s: got %s \"%s\", want \"%s\"", bad[i].json, kl_rc_name(rc), err.msg, bad[i].want);
  }
  kl_proto_schema_free(s);

  char *got = python_read(in);
  char *l = strtok(got, "\n");
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++, l = strtok(NULL, "\n"))
    if (!l || strcmp(l, "same") != 0) fail_msg("python3-protobuf, %s: %s", ok[i].json, l);
  if (!l || strncmp(l, "refused ", 8) != 0) fail_msg("python3-protobuf took refNo: %s", l);
  free(got);
  t_rmdir(dir);
  free(dir);

  /* proto2 lets one field's name be another's JSON name: the name wins */
  const char *p2 = "syntax = \"proto2\"; package q;"
                   " message P { optional int32 foo_bar = 1; optional int32 fooBar = 2; }";
  s = NULL;
  kl_err_clear(&err);
  if (kl_proto_schema_parse(NULL, p2, strlen(p2), NULL, NULL, &s, &err)) fail_msg("%s", err.msg);
  static const char *const p2_cases[][2] = {
      {"{\"fooBar\":5}", "{\"foo_bar\":0,\"fooBar\":5}"},
      {"{\"fooBar\":2,\"foo_bar\":1}", "{\"foo_bar\":1,\"fooBar\":2}"},
  };
  for (size_t i = 0; i < 2; i++) {
    if (encode(s, NULL, p2_cases[i][0], &out, &err)) fail_msg("%s: %s", p2_cases[i][0], err.msg);
    char *back = decode(s, out.p, out.len, &err);
    if (!back || strcmp(back, p2_cases[i][1]) != 0)
      fail_msg("%s: got %s, want %s", p2_cases[i][0], back ? back : err.msg, p2_cases[i][1]);
    free(back);
  }
  kl_proto_schema_free(s);
  kl_buf_free(NULL, &out);
}

/* Messages nest as deep as the decoder reads them, and no deeper. */
static void test_nesting_bound(void **state) {
  (void)state;
  kl_proto_schema *s = load(NULL, "types.proto");
  for (int depth = KL_PROTO_MAX_DEPTH - 2; depth <= KL_PROTO_MAX_DEPTH + 1; depth++) {
    char *j = malloc((size_t)depth * 12 + 8);
    size_t k = 0;
    for (int i = 0; i < depth; i++) k += (size_t)sprintf(j + k, i ? "\"child\":{" : "{");
    for (int i = 0; i < depth; i++) j[k++] = '}';
    j[k] = 0;
    kl_buf out = {0};
    kl_err err;
    kl_rc rc = encode(s, "t.Outer", j, &out, &err);
    if (depth <= KL_PROTO_MAX_DEPTH) {
      if (rc) fail_msg("depth %d: %s", depth, err.msg);
      char *back = decode(s, out.p, out.len, &err);
      if (!back) fail_msg("depth %d: %s", depth, err.msg);
      free(back);
    } else {
      assert_int_equal(rc, KL_CORRUPT);
      assert_non_null(strstr(err.msg, "messages nested deeper than 64"));
    }
    kl_buf_free(NULL, &out);
    free(j);
  }
  kl_proto_schema_free(s);
}

/* Each allocation failing in turn: KL_NOMEM, nothing leaked. */
static void test_allocation_failure(void **state) {
  (void)state;
  const char *json = "{\"items\":[{\"sku\":\"abc\",\"qty\":1}],\"names\":[\"x\",\"yz\"],"
                     "\"blobs\":[\"00ff\"],\"packed_i\":[1,2,3]}";
  for (long at = 1;; at++) {
    t_failalloc fa;
    const kl_env *env = t_failenv(&fa, 0);
    kl_proto_schema *s = load(env, "types.proto");
    fa.fail_at = fa.calls + at;
    kl_buf out = {0};
    kl_err err;
    kl_err_clear(&err);
    kl_rc rc = kl_proto_encode(s, "t.Lists", json, strlen(json), &out, &err);
    kl_buf_free(env, &out);
    kl_proto_schema_free(s);
    assert_int_equal(fa.live, 0);
    if (rc == KL_OK) break;
    assert_int_equal(rc, KL_NOMEM);
    assert_true(at < 1000);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors_round_trip),
      cmocka_unit_test(test_other_forms),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_json_names),
      cmocka_unit_test(test_nesting_bound),
      cmocka_unit_test(test_allocation_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
