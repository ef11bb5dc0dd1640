/*
** fuzz_proto.c - the Protobuf targets' fixtures (fuzz_proto.h).
*/
#include "fuzz_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIR KL_FIXTURES "/protobuf/"

char *fz_proto_file(const char *name, size_t *n) {
  char path[512];
  snprintf(path, sizeof path, DIR "%s", name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0, k;
  char *b = malloc(cap);
  while (b && (k = fread(b + len, 1, cap - len, f)) > 0) {
    len += k;
    if (len == cap) b = realloc(b, cap *= 2);
  }
  if (!b) abort();
  fclose(f);
  *n = len;
  return b;
}

/* The import texts: the harness's cache, for the whole process. */
static const char *const import_names[] = {"common.proto", "types.proto", "order.proto",
                                           "legacy.proto"};
#define NIMPORTS (sizeof import_names / sizeof import_names[0])
static char *imports[NIMPORTS];
static size_t import_len[NIMPORTS];

kl_rc fz_proto_import(void *ctx, const char *name, const char **text, size_t *n) {
  (void)ctx;
  for (size_t i = 0; i < NIMPORTS; i++) {
    if (strcmp(name, import_names[i])) continue;
    if (!imports[i]) imports[i] = fz_proto_file(name, &import_len[i]);
    fz_must(imports[i] != NULL, name, NULL);
    *text = imports[i];
    *n = import_len[i];
    return KL_OK;
  }
  return KL_NOTFOUND;
}

kl_proto_schema *fz_proto_fixture(const char *name) {
  size_t n;
  char *text = fz_proto_file(name, &n);
  fz_must(text != NULL, name, NULL);
  kl_proto_schema *s = NULL;
  kl_err err = {0};
  fz_must(kl_proto_schema_parse(NULL, text, n, fz_proto_import, NULL, &s, &err) == KL_OK, name,
          &err);
  free(text);
  return s;
}

void fz_must(int ok, const char *what, const kl_err *err) {
  if (ok) return;
  fprintf(stderr, "%s: %s\n", what, err ? err->msg : "");
  abort();
}
