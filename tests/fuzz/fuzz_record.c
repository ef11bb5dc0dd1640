/*
** fuzz_record.c - the record targets' input framing (fuzz_record.h).
*/
#include "fuzz_record.h"

#include <stdlib.h>
#include <string.h>

int fz_record_split(const uint8_t *data, size_t size, fz_record *out) {
  if (size < 2) return 0;
  out->tomb = data[0] & 1;
  out->key_len = data[1];
  if (out->key_len > size - 2) out->key_len = size - 2;
  out->value_len = size - 2 - out->key_len;
  out->key = malloc(out->key_len ? out->key_len : 1);
  out->value = malloc(out->value_len ? out->value_len : 1);
  if (!out->key || !out->value) abort();
  memcpy(out->key, data + 2, out->key_len);
  memcpy(out->value, data + 2 + out->key_len, out->value_len);
  return 1;
}

void fz_record_free(fz_record *r) {
  free(r->key);
  free(r->value);
}
