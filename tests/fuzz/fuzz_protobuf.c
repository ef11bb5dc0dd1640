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

#include "fuzz_proto.h"
#include "protobuf.h"
#include "utf8.h"

static const char *const fixed[] = {"types.proto", "legacy.proto", "order.proto",
                                    "confluent.proto", "types.b64", "order.b64"};
#define NFIXED (sizeof fixed / sizeof fixed[0])

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
  } else {
    fz_must(err.msg[0] && err.rc == rc, "an error without a message", &err);
  }
  kl_buf_free(NULL, &json);
  free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  if (!(data[0] & 1)) {
    size_t k = data[1] % NFIXED;
    if (!schemas[k]) schemas[k] = fz_proto_fixture(fixed[k]);
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
  kl_rc rc = kl_proto_schema_parse(NULL, text, tn, fz_proto_import, NULL, &s, &err);
  free(text);
  if (rc == KL_OK) {
    fz_must(s != NULL, "a schema parsed to nothing", NULL);
    if (nul) decode(s, nul + 1, size - tn - 2);
    kl_proto_schema_free(s);
  } else {
    fz_must(!s && err.msg[0], "a schema refused without a message, or kept", &err);
  }
  return 0;
}
