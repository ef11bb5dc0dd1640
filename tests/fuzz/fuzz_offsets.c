/*
** fuzz_offsets.c - libFuzzer target for the __consumer_offsets decoder and
** fold: kl_offsets_key_parse and kl_offsets_value_parse over bytes held in
** allocations of exactly their size (ASan sees any read past the end), then
** the same record folded twice.  A parse that succeeds must give fields
** inside the bytes; a fold of one commit gives at most one row, none for a
** tombstone or another type.
**
** Input: fuzz_record.h's framing of a key and a value.
*/
#include <stdlib.h>
#include <string.h>

#include "fuzz_record.h"
#include "offsets.h"

static int inside(const uint8_t *f, int32_t n, const uint8_t *p, size_t len) {
  if (!f) return n == -1;
  return n >= 0 && f >= p && (size_t)(f - p) + (size_t)n <= len;
}

void fz_record_target(int tomb, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen) {
  kl_err err;
  kl_err_clear(&err);
  kl_offsets_key key;
  kl_rc krc = kl_offsets_key_parse(k, klen, &key, &err);
  if (krc != KL_OK && krc != KL_CORRUPT) abort();
  if (krc == KL_OK && key.type != KL_OFFSETS_OTHER && !inside(key.group, key.group_len, k, klen)) {
    abort();
  }
  if (krc == KL_OK && key.type == KL_OFFSETS_COMMIT && !inside(key.topic, key.topic_len, k, klen)) {
    abort();
  }
  kl_err_clear(&err);
  kl_offsets_value val;
  kl_rc vrc = kl_offsets_value_parse(v, vlen, &val, &err);
  if (vrc != KL_OK && vrc != KL_CORRUPT) abort();
  if (vrc == KL_OK && (val.version < 0 || val.version > 4 ||
                       !inside(val.metadata, val.metadata_len, v, vlen))) {
    abort();
  }

  kl_offsets *o;
  if (kl_offsets_new(NULL, &o) != KL_OK) abort();
  for (int i = 0; i < 2; i++) {
    kl_err_clear(&err);
    kl_rc rc = kl_offsets_add(o, 0, i, k, (int32_t)klen, tomb ? NULL : v, tomb ? -1 : (int32_t)vlen,
                              &err);
    int want_ok = krc == KL_OK && (key.type != KL_OFFSETS_COMMIT || tomb || vrc == KL_OK);
    if ((rc == KL_OK) != want_ok) abort();
  }
  const kl_offsets_row *const *rows;
  size_t n;
  if (kl_offsets_rows(o, &rows, &n) != KL_OK) abort();
  int want_row = krc == KL_OK && key.type == KL_OFFSETS_COMMIT && !tomb && vrc == KL_OK;
  if (n != (size_t)want_row) abort();
  if (n && (rows[0]->record_offset != 1 || rows[0]->v.offset != val.offset ||
            rows[0]->v.metadata_len != val.metadata_len)) {
    abort();
  }
  kl_offsets_free(o);
}
