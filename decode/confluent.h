/*
** confluent.h - values in Confluent Schema Registry's wire format, decoded
** to JSON with the schema they name.
**
** How a value names its schema (the registry's serializers; checked in
** the order of its DualSchemaIdDeserializer):
**   a record header __value_schema_id (keys: __key_schema_id) holding
**     0x01 + a 16-byte GUID (or the 16 bytes alone, or 0x00 + int32 id):
**     the whole value is the payload
**   +------+----------------------+---------+
**   | 0x00 | int32 id, big-endian | payload |     magic byte 0
**   +------+----------------------+---------+
**   | 0x01 | GUID, 16 bytes       | payload |     magic byte 1
**   +------+----------------------+---------+
**   any other first byte: not Confluent's ("unknown magic byte")
**
** The payload by the schema's type (schemaType): AVRO, one binary datum
** (a schema that is the primitive "bytes": the bytes raw, no length);
** JSON, the JSON text itself, checked to be JSON and returned as written;
** PROTOBUF, the message-index array and then the message (decode/protobuf.h).
**
** A kl_decoder holds a registry and the schemas parsed from it, each parsed
** once on first use and kept until the decoder is freed: the owner makes a
** new decoder when the registry's topic changes.
*/
#ifndef KL_CONFLUENT_H
#define KL_CONFLUENT_H

#include "avro.h"
#include "registry.h"

/* How a value names its schema. */
typedef struct kl_frame {
  int by_guid;              /* 1: guid names it, else id */
  int32_t id;
  uint8_t guid[16];
  const uint8_t *payload;   /* into the value */
  size_t n;
} kl_frame;

/* Read the framing of the n bytes at p; hdr (hn bytes) is the
** __value_schema_id / __key_schema_id header's value, or NULL.  KL_CORRUPT
** with a message ("unknown magic byte 0x7b", "5 bytes needed, 3 given"). */
kl_rc kl_frame_read(const uint8_t *p, size_t n, const uint8_t *hdr, size_t hn, kl_frame *f,
                    kl_err *err);

typedef struct kl_decoder kl_decoder;

/* A decoder of the schemas of reg, which it owns from now on (also on
** failure).  flags: KL_AVRO_WRAP_UNIONS.  Each schema it parses counts in
** stats->schemas_parsed (stats may be NULL).  KL_NOMEM. */
kl_rc kl_decoder_new(const kl_env *env, kl_registry *reg, unsigned flags, kl_stats *stats,
                     kl_decoder **out);
void kl_decoder_free(kl_decoder *d);
const kl_registry *kl_decoder_registry(const kl_decoder *d);

/* Decode a Confluent-framed value (kl_frame_read), appending its JSON to
** *json.  *id is the schema id found (-1 when named by a GUID not found).
** KL_CORRUPT with a message naming the schema id and what is wrong
** ("schema id 7: $.amount: varint runs past the end", "schema id 9 is not
** in the registry"); KL_UNSUPPORTED for a schema type this build does not
** decode; KL_NOMEM. */
kl_rc kl_decoder_confluent(kl_decoder *d, const uint8_t *p, size_t n, const uint8_t *hdr,
                           size_t hn, kl_buf *json, int32_t *id, kl_err *err);

/* Decode payload with the schema s of the registry (no framing). */
kl_rc kl_decoder_payload(kl_decoder *d, const kl_reg_schema *s, const uint8_t *p, size_t n,
                         kl_buf *json, kl_err *err);

/* Encode the n bytes of JSON text at json with schema s of the registry
** as Confluent's serializers frame a value: magic byte 0, s's id (4 bytes,
** big-endian), the payload, appended to *out.  AVRO: the binary datum
** (avro_encode.h; a schema that is the primitive "bytes" takes the bytes
** raw, without their length); PROTOBUF: the message-index array and the
** message called message (NULL: the file's first), protobuf_encode.h;
** JSON: the text itself, checked to be JSON (not validated against the
** schema).  message names a Protobuf message only: given for another type
** it is KL_MISUSE.  KL_CORRUPT with a message naming the schema and what
** does not match ("schema id 7 (orders-value version 2): $.amount:
** missing, ..."), KL_NOTFOUND for a message the schema does not define,
** KL_UNSUPPORTED for unknown types, KL_NOMEM. */
kl_rc kl_decoder_encode(kl_decoder *d, const kl_reg_schema *s, const char *message,
                        const char *json, size_t n, kl_buf *out, kl_err *err);

/* Check that the n bytes at p are one JSON text (the JSON Schema rule) and
** append them to *json unchanged.  KL_CORRUPT with a message. */
kl_rc kl_json_payload(const kl_env *env, const uint8_t *p, size_t n, kl_buf *json, kl_err *err);

#endif
