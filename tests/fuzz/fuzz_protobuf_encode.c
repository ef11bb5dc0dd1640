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

#include "protobuf_encode.h"

#define DIR KL_FIXTURES "/protobuf/"

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
static char *imports[2];
static size_t import_len[2];
static const char *const import_names[] = {"common.proto", "types.proto"};

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

static kl_proto_schema *schemas[NMESSAGES];

static void must(int ok, const char *what, const kl_err *err) {
  if (ok) return;
  fprintf(stderr, "%s: %s\n", what, err ? err->msg : "");
  abort();
}

/* The decoder's JSON of b, NUL-terminated (malloc'd). */
static char *decoded(const kl_proto_schema *s, const kl_buf *b) {
  kl_buf json = {0};
  kl_err err = {0};
  must(kl_proto_decode(s, b->p, b->len, &json, &err) == KL_OK, "what encodes does not decode",
       &err);
  must(kl_buf_append(NULL, &json, "", 1) == KL_OK, "out of memory", NULL);
  return (char *)json.p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t k = data[0] % NMESSAGES;
  if (!schemas[k]) {
    size_t n;
    char *text = read_all(kMessages[k].file, &n);
    kl_err err = {0};
    must(text && !kl_proto_schema_parse(NULL, text, n, resolve, NULL, &schemas[k], &err),
         kMessages[k].file, &err);
    free(text);
  }
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
    must(rc == KL_OK, "the decoder's JSON does not encode", &err);
    char *d2 = decoded(schemas[k], &again);
    if (strcmp(d1, d2) != 0) {
      fprintf(stderr, "round trip:\n  %s\n  %s\n", d1, d2);
      abort();
    }
    free(d1);
    free(d2);
  } else {
    must(err.msg[0] && err.rc == rc, "an error without a message", &err);
  }
  kl_buf_free(NULL, &out);
  kl_buf_free(NULL, &again);
  free(json);
  return 0;
}
