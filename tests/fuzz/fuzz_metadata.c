/*
** fuzz_metadata.c - libFuzzer target for the KRaft metadata record decoder
** and the replay into an image: the input is a sequence of records, each a
** byte of length (clipped to what follows) then its value, copied into an
** allocation of exactly that size (ASan sees any read past the end).  Each
** is decoded (a known record must give one JSON object, an unknown one
** none) and applied to an image that holds a topic and a partition to
** begin with; the sorted views are then taken.  Errors are fine; crashes,
** leaks and reads out of bounds are not.
*/
#include <stdlib.h>
#include <string.h>

#include "metaimage.h"
#include "metarecord.h"

static void check_json(const kl_mrec *rec, const kl_buf *json) {
  if (!rec->type) {
    if (json->len != 0) abort();
    return;
  }
  if (json->len < 2 || json->p[0] != '{' || json->p[json->len - 1] != '}') abort();
  long depth = 0;
  int in_str = 0;
  for (size_t i = 0; i < json->len; i++) {
    uint8_t c = json->p[i];
    if (in_str) {
      if (c == '\\') i++;
      else if (c == '"') in_str = 0;
      else if (c < 0x20) abort(); /* control bytes are escaped */
      continue;
    }
    if (c == '"') in_str = 1;
    else if (c == '{' || c == '[') depth++;
    else if (c == '}' || c == ']') depth--;
    if (depth < 0) abort();
  }
  if (depth != 0 || in_str) abort();
}

static void feed(kl_mimage *m, const uint8_t *p, size_t n, int64_t offset, kl_buf *json) {
  uint8_t *v = malloc(n ? n : 1);
  if (!v) abort();
  memcpy(v, p, n);
  kl_mrec rec;
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_meta_decode(NULL, v, n, &rec, json, &err);
  if (rc != KL_OK && rc != KL_CORRUPT) abort();
  if (rc == KL_OK) {
    check_json(&rec, json);
    kl_err_clear(&err);
    rc = kl_mimage_apply(m, offset, &rec, &err);
    if (rc != KL_OK && rc != KL_CORRUPT) abort();
  }
  free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const uint8_t topic[] = {1, 2, 0, 2, 't', 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0};
  static const uint8_t part[] = {1, 3, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                 2, 0, 0, 0, 1, 2, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  kl_mimage *m;
  kl_buf json = {0};
  if (kl_mimage_new(NULL, &m) != KL_OK) abort();
  feed(m, topic, sizeof topic, 0, &json);
  feed(m, part, sizeof part, 1, &json);
  size_t pos = 0;
  for (int64_t off = 2; pos < size; off++) {
    size_t n = data[pos++];
    if (n > size - pos) n = size - pos;
    feed(m, data + pos, n, off, &json);
    pos += n;
  }
  const kl_mi_topic *const *tv;
  const kl_mi_part *const *pv;
  size_t nt, np;
  if (kl_mimage_topics(m, &tv, &nt) != KL_OK || kl_mimage_parts(m, &pv, &np) != KL_OK) abort();
  for (size_t i = 0; i < np; i++) {
    if (pv[i]->isr.n > 0 && !pv[i]->isr.v) abort();
  }
  kl_buf_free(NULL, &json);
  kl_mimage_free(m);
  return 0;
}
