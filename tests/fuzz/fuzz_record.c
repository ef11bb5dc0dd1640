/*
** fuzz_record.c - the record targets' input framing (fuzz_record.h).
*/
#include "fuzz_record.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t klen = data[1];
  if (klen > size - 2) klen = size - 2;
  size_t vlen = size - 2 - klen;
  uint8_t *k = malloc(klen ? klen : 1), *v = malloc(vlen ? vlen : 1);
  if (!k || !v) abort();
  memcpy(k, data + 2, klen);
  memcpy(v, data + 2 + klen, vlen);
  fz_record_target(data[0] & 1, k, klen, v, vlen);
  free(k);
  free(v);
  return 0;
}
