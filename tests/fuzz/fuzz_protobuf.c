/*
** fuzz_protobuf.c - libFuzzer target for the Protobuf decoder: fuzzed
** payloads decoded with a fixed set of schemas (the test fixtures' .proto
** files and their base64 forms), and fuzzed schema texts parsed and then
** used on a fuzzed payload.  Bytes are held in allocations of exactly their
** size (ASan sees any read past the end).  A decode that succeeds must give
** UTF-8 text that starts with '{' and ends with '}'; a failure must say why.
**
** Input: byte 0 even: byte 1 picks a fixed schema, the rest is the payload.
** Byte 0 odd: the schema text up to the first NUL byte, then the payload;
** its imports are the fixtures' files, by name.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protobuf.h"
#include "utf8.h"

#define DIR KL_FIXTURES "/protobuf/"

static const char *const fixed[] = {"types.proto", "legacy.proto", "order.proto",
                                    "confluent.proto", "types.b64", "order.b64"};
#define NFIXED (sizeof fixed / sizeof fixed[0])

static char *read_all(const char *name, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, DIR "%s", name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = malloc(1 << 16);
  if (!b) abort();
  *n = fread(b, 1, 1 << 16, f);
  fclose(f);
  return b;
}

/* Import texts are kept until the process ends (the harness's cache). */
static char *imports[8];
static size_t import_len[8];
static const char *const import_names[] = {"common.proto", "types.proto", "order.proto",
                                           "legacy.proto"};

static kl_rc resolve(void *ctx, const char *name, const char **text, size_t *n) {
  (void)ctx;
  for (size_t i = 0; i < sizeof import_names / sizeof import_names[0]; i++) {
    if (strcmp(name, import_names[i])) continue;
    if (!imports[i]) imports[i] = read_all(name, &import_len[i]);
    if (!imports[i]) abort();
    *text = imports[i];
    *n = import_len[i];
    return KL_OK;
  }
  return KL_NOTFOUND;
}

static kl_proto_schema *schemas[NFIXED];

static void decode(const kl_proto_schema *s, const uint8_t *data, size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  if (!p) abort();
  memcpy(p, data, n);
  kl_buf json = {0};
  kl_err err = {0};
  kl_rc rc = kl_proto_decode(s, p, n, &json, &err);
  if (rc == KL_OK) {
    if (json.len < 2 || json.p[0] != '{' || json.p[json.len - 1] != '}' ||
        !kl_utf8_valid(json.p, json.len)) {
      fprintf(stderr, "decoded to what is not a JSON object of UTF-8: %.*s\n", (int)json.len,
              (const char *)json.p);
      abort();
    }
  } else if (!err.msg[0] || err.rc != rc) {
    fprintf(stderr, "%s without a message\n", kl_rc_name(rc));
    abort();
  }
  kl_buf_free(NULL, &json);
  free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  if (!(data[0] & 1)) {
    size_t k = data[1] % NFIXED;
    if (!schemas[k]) {
      size_t n;
      char *text = read_all(fixed[k], &n);
      kl_err err = {0};
      if (!text || kl_proto_schema_parse(NULL, text, n, resolve, NULL, &schemas[k], &err)) abort();
      free(text);
    }
    decode(schemas[k], data + 2, size - 2);
    return 0;
  }
  const uint8_t *nul = memchr(data + 1, 0, size - 1);
  size_t tn = nul ? (size_t)(nul - (data + 1)) : size - 1;
  char *text = malloc(tn ? tn : 1);
  if (!text) abort();
  memcpy(text, data + 1, tn);
  kl_proto_schema *s = NULL;
  kl_err err = {0};
  kl_rc rc = kl_proto_schema_parse(NULL, text, tn, resolve, NULL, &s, &err);
  free(text);
  if (rc == KL_OK) {
    if (!s) abort();
    if (nul) decode(s, nul + 1, size - tn - 2);
    kl_proto_schema_free(s);
  } else if (s || !err.msg[0]) {
    abort();
  }
  return 0;
}
