/*
** fuzz_avro.c - libFuzzer target for the Avro decoder: a fuzzed schema
** (parsed, or refused with a message) decodes a fuzzed payload held in an
** allocation of exactly its size (ASan sees any read past the end), in
** both union forms; what decodes must be JSON (decode/confluent.h's
** checker) and bounded by the payload's size.  The same payload is also
** given to the JSON Schema check, and taken as JSON text to encode with
** the schema (avro_encode.h); the JSON a payload decodes to is encoded
** again too.  Whatever the encoder writes must decode.  The compiled steps
** and the tree walk must give the same JSON, or the same refusal.
**
** Input: byte 0: bit 0 set: unions wrapped, bit 1: a "bytes" root raw;
** bytes 1-2: the schema's length, big-endian (clipped to what follows);
** then the schema text, then the payload.
*/
#include <stdlib.h>
#include <string.h>

#include "avro.h"
#include "avro_encode.h"
#include "avro_node.h"
#include "confluent.h"

/* Encode text (n bytes) with s: refused with a message, or bytes that
** decode. */
static void encode(const kl_avro_schema *s, const char *text, size_t n, unsigned flags) {
  kl_buf bin = {0}, back = {0};
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = kl_avro_encode(s, text, n, flags, &bin, &err);
  if (rc != KL_OK && (rc != KL_CORRUPT || !err.msg[0])) abort();
  if (rc == KL_OK) {
    kl_err_clear(&err);
    if (kl_avro_decode(s, bin.p ? bin.p : (const uint8_t *)"", bin.len, flags, &back, &err)) {
      abort(); /* the encoder wrote what its own schema does not read */
    }
  }
  kl_buf_free(NULL, &bin);
  kl_buf_free(NULL, &back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  unsigned flags = (data[0] & 1 ? KL_AVRO_WRAP_UNIONS : 0) | (data[0] & 2 ? KL_AVRO_RAW_BYTES : 0);
  size_t slen = (size_t)data[1] << 8 | data[2];
  if (slen > size - 3) slen = size - 3;
  size_t plen = size - 3 - slen;
  char *schema = malloc(slen ? slen : 1);
  uint8_t *payload = malloc(plen ? plen : 1);
  if (!schema || !payload) abort();
  memcpy(schema, data + 3, slen);
  memcpy(payload, data + 3 + slen, plen);

  kl_err err;
  kl_err_clear(&err);
  kl_avro_text t = {schema, slen};
  kl_avro_schema *s = NULL;
  kl_rc rc = kl_avro_schema_parse(NULL, &t, 1, &s, &err);
  if (rc != KL_OK && rc != KL_CORRUPT) abort();
  if (rc != KL_OK && !err.msg[0]) abort(); /* a refusal says why */
  if (rc == KL_OK) {
    kl_buf json = {0}, walk = {0};
    rc = kl_avro_decode(s, payload, plen, flags, &json, &err);
    if (rc != KL_OK && rc != KL_CORRUPT) abort();
    kl_err we;
    kl_err_clear(&we);
    if (kl_avro_decode(s, payload, plen, flags | KL_AVRO_TREE, &walk, &we) != rc ||
        (rc == KL_OK && (walk.len != json.len || (json.len && memcmp(walk.p, json.p, json.len)))) ||
        (rc != KL_OK && strcmp(we.msg, err.msg))) {
      abort(); /* the compiled steps and the tree walk disagree */
    }
    kl_buf_free(NULL, &walk);
    if (rc == KL_OK) {
      kl_buf again = {0};
      kl_err e2;
      kl_err_clear(&e2);
      if (kl_json_payload(NULL, json.p ? json.p : (const uint8_t *)"", json.len, &again, &e2)) {
        abort(); /* the decoder wrote text that is not JSON */
      }
      kl_buf_free(NULL, &again);
      encode(s, json.p ? (const char *)json.p : "", json.len, flags);
    }
    kl_buf_free(NULL, &json);
    encode(s, (const char *)payload, plen, flags);
    kl_avro_schema_free(s);
  }
  kl_buf j = {0};
  kl_err_clear(&err);
  rc = kl_json_payload(NULL, payload, plen, &j, &err);
  if (rc != KL_OK && rc != KL_CORRUPT) abort();
  kl_buf_free(NULL, &j);
  free(schema);
  free(payload);
  return 0;
}
