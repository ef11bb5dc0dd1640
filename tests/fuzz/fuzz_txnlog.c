/*
** fuzz_txnlog.c - libFuzzer target for the __transaction_state decoder and
** fold: kl_txnlog_key_parse and kl_txnlog_value_parse over bytes held in
** allocations of exactly their size (ASan sees any read past the end),
** the partitions walked again as JSON and by lookup, then the record
** folded twice.  A parse that succeeds must give an id and partitions
** inside the bytes and a known status; the JSON of n partition ids has n
** objects; a fold of one record gives at most one row, none for a
** tombstone or an unknown key version.
**
** Input: fuzz_record.h's framing of a key and a value.
*/
#include <stdlib.h>
#include <string.h>

#include "fuzz_record.h"
#include "txnlog.h"

/* Objects in the JSON text: one '{' each (topics are escaped strings, in
** which a '{' may appear: count only those outside strings). */
static size_t objects(const kl_buf *b) {
  size_t n = 0;
  int in_str = 0;
  for (size_t i = 0; i < b->len; i++) {
    uint8_t c = b->p[i];
    if (in_str && c == '\\') i++;
    else if (c == '"') in_str = !in_str;
    else if (!in_str && c == '{') n++;
  }
  return n;
}

/* Partition ids in v, counted by the fold's own record of them. */
static size_t ids_of(const kl_txnlog_value *v) {
  kl_buf b = {0};
  if (kl_txnlog_partitions_json(NULL, v, &b) != KL_OK) abort();
  if (b.len < 2 || b.p[0] != '[' || b.p[b.len - 1] != ']') abort();
  size_t n = objects(&b);
  kl_buf_free(NULL, &b);
  return n;
}

void fz_record_target(int tomb, const uint8_t *k, size_t klen, const uint8_t *v, size_t vlen) {
  kl_err err;
  kl_err_clear(&err);
  kl_txnlog_key key;
  kl_rc krc = kl_txnlog_key_parse(k, klen, &key, &err);
  if (krc != KL_OK && krc != KL_CORRUPT) abort();
  if (krc == KL_OK && key.known &&
      (key.id.n < 0 || key.id.p < k || (size_t)(key.id.p - k) + (size_t)key.id.n > klen)) {
    abort();
  }
  kl_err_clear(&err);
  kl_txnlog_value val;
  kl_rc vrc = kl_txnlog_value_parse(v, vlen, &val, &err);
  if (vrc != KL_OK && vrc != KL_CORRUPT) abort();
  size_t nids = 0;
  if (vrc == KL_OK) {
    if (val.version < 0 || val.version > 1 || !kl_txnlog_state_name(val.state)) abort();
    if (val.parts < v || (size_t)(val.parts - v) + val.parts_len > vlen) abort();
    nids = ids_of(&val);
    if (nids > val.parts_len / 4) abort(); /* each id is 4 bytes */
    kl_txnlog_has_partition(&val, "orders", 6, 0);
  }

  kl_txnlog *f;
  if (kl_txnlog_new(NULL, &f) != KL_OK) abort();
  for (int i = 0; i < 2; i++) {
    kl_err_clear(&err);
    kl_rc rc = kl_txnlog_add(f, 0, i, i, k, (int32_t)klen, tomb ? NULL : v,
                             tomb ? -1 : (int32_t)vlen, &err);
    int want_ok = krc == KL_OK && (!key.known || tomb || vrc == KL_OK);
    if ((rc == KL_OK) != want_ok) abort();
  }
  const kl_txnlog_row *const *rows;
  size_t n;
  if (kl_txnlog_rows(f, &rows, &n) != KL_OK) abort();
  int want_row = krc == KL_OK && key.known && !tomb && vrc == KL_OK;
  if (n != (size_t)want_row) abort();
  if (n && (rows[0]->record_offset != 1 || rows[0]->v.producer_id != val.producer_id ||
            ids_of(&rows[0]->v) != nids)) {
    abort();
  }
  kl_txnlog_free(f);
}
