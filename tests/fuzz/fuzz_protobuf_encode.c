/*
** fuzz_protobuf_encode.c - libFuzzer target for the Protobuf encoder:
** fuzzed JSON text encoded as a message of the fixtures' schemas, from an
** allocation of exactly its size (ASan sees any read past the end).  What
** encodes must decode, and the decoder's JSON must encode again to bytes
** that decode to the same JSON (the round trip INSERT promises); a
** failure must say why.
**
** Input: byte 0 picks a message of the fixed schemas, the rest is the JSON.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_proto.h"
#include "protobuf_encode.h"

static const struct {
  const char *file, *message;
} kMessages[] = {
    {"types.proto", "t.Scalars"},   {"types.proto", "t.Lists"},
    {"types.proto", "t.Lists.Item"}, {"types.proto", "t.Maps"},
    {"types.proto", "t.Choice"},    {"types.proto", "t.Outer"},
    {"types.proto", "t.Outer.Inner.Deep"}, {"legacy.proto", "l.Legacy"},
    {"order.proto", "shop.Order"},  {"confluent.proto", "c.Priced"},
};
#define NMESSAGES (sizeof kMessages / sizeof kMessages[0])

static kl_proto_schema *schemas[NMESSAGES];

/* The decoder's JSON of b, NUL-terminated (malloc'd). */
static char *decoded(const kl_proto_schema *s, const kl_buf *b) {
  kl_buf json = {0};
  kl_err err = {0};
  fz_must(kl_proto_decode(s, b->p, b->len, &json, &err) == KL_OK,
          "what encodes does not decode", &err);
  fz_must(kl_buf_append(NULL, &json, "", 1) == KL_OK, "out of memory", NULL);
  return (char *)json.p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t k = data[0] % NMESSAGES;
  if (!schemas[k]) schemas[k] = fz_proto_fixture(kMessages[k].file);
  char *json = malloc(size);
  if (!json) abort();
  memcpy(json, data + 1, size - 1);
  kl_buf out = {0}, again = {0};
  kl_err err = {0};
  kl_rc rc = kl_proto_encode(schemas[k], kMessages[k].message, json, size - 1, &out, &err);
  if (rc == KL_OK) {
    char *d1 = decoded(schemas[k], &out);
    kl_err_clear(&err);
    rc = kl_proto_encode(schemas[k], kMessages[k].message, d1, strlen(d1), &again, &err);
    fz_must(rc == KL_OK, "the decoder's JSON does not encode", &err);
    char *d2 = decoded(schemas[k], &again);
    if (strcmp(d1, d2) != 0) {
      fprintf(stderr, "round trip:\n  %s\n  %s\n", d1, d2);
      abort();
    }
    free(d1);
    free(d2);
  } else {
    fz_must(err.msg[0] && err.rc == rc, "an error without a message", &err);
  }
  kl_buf_free(NULL, &out);
  kl_buf_free(NULL, &again);
  free(json);
  return 0;
}
