/*
** avro.h - Avro schemas (the JSON form) and the binary encoding of one
** datum, decoded to JSON text people can query in SQL.
**
** A datum in Avro's binary encoding (the spec, "Binary Encoding"):
**   null             nothing
**   boolean          one byte, 0 or 1
**   int, long        zig-zag varint (at most 5 / 10 bytes)
**   float, double    4 / 8 bytes, IEEE 754 little-endian
**   bytes, string    long length, then the bytes
**   fixed            size bytes
**   enum             int index of the symbol
**   union            long index of the branch, then its datum
**   array, map       blocks: long count, then count items (map: string
**                    key, then value); a negative count is followed by a
**                    long byte size of the block; a count of 0 ends
**   record           the fields in order
**
** The JSON written (one rule each, the README's table):
**   records as objects, maps as objects, arrays as arrays; enums by
**   symbol; bytes and fixed as lowercase hex strings; a union as the bare
**   value of its branch (KL_AVRO_WRAP_UNIONS: Avro's JSON encoding,
**   {"<branch type name>": value}, null bare); int and long as exact JSON
**   integers; float and double as the shortest text that reads back the
**   same (decode/shortest.h), NaN and the infinities as the strings "NaN", "Infinity",
**   "-Infinity"; logical types: decimal (on bytes or fixed) as an exact
**   JSON number with its scale's digits, uuid on fixed(16) as its text
**   form (on string it is the string), date, time-millis, time-micros,
**   timestamp-* and local-timestamp-* as their numbers.  A logical type the
**   spec calls invalid (decimal whose scale exceeds its precision, uuid on
**   another size) is ignored, as the spec says readers do.
**
** Limits (hostile schemas and payloads): nesting of values deeper than
** KL_AVRO_MAX_DEPTH is refused (which also stops a recursive record that
** can never end); an array or map block must fit in the bytes left (each
** item takes at least its smallest encoding), and items that encode in no
** bytes are refused past KL_AVRO_MAX_EMPTY_ITEMS per value; a decimal's
** unscaled value is at most KL_AVRO_MAX_DECIMAL bytes.  The JSON written is
** thus bounded by a constant times the payload's size.
**
** Decoding runs steps compiled once per schema, at parse (avro.c, "compiled
** decoding"); the walk over the schema's tree is the reference they answer
** to, and decodes again whatever they refuse, so that the error and its
** path are the walk's.
**
** Why written here rather than with Debian's libavro (avro-c 1.11): its
** schema parser keeps no logical types (decimals and uuids would come out
** as bytes), offers no way to see named types defined by another schema
** (the registry's references), and its avro_value_to_json wraps unions,
** writes bytes as U+0000..U+00FF text and fails on strings that are not
** UTF-8; decoding into its generic values and then printing them would be
** two passes and an allocation per value.  The schema's JSON is read with
** Debian's jansson (the library avro-c itself uses); the tree jansson
** builds lives only while a schema is parsed (jansson's allocator is
** process-wide, which a library must not set).
*/
#ifndef KL_AVRO_H
#define KL_AVRO_H

#include "klog.h"

#define KL_AVRO_MAX_DEPTH 128
#define KL_AVRO_MAX_EMPTY_ITEMS 65536
#define KL_AVRO_MAX_DECIMAL 256

typedef struct kl_avro_schema kl_avro_schema;

/* One schema text; a schema that references named types of others is
** parsed after them (kl_avro_schema_parse). */
typedef struct kl_avro_text {
  const char *text;
  size_t n;
} kl_avro_text;

/* Parse texts[n - 1], the schema, after texts[0 .. n - 2], the schemas it
** references (the registry's references, dependencies first), whose named
** types it may use.  OUT: *out, freed with kl_avro_schema_free.  KL_CORRUPT
** with a message saying what is wrong ("schema: unknown type \"x\""),
** KL_NOMEM. */
kl_rc kl_avro_schema_parse(const kl_env *env, const kl_avro_text *texts, size_t n,
                           kl_avro_schema **out, kl_err *err);
void kl_avro_schema_free(kl_avro_schema *s);

/* 1 when the schema is the primitive "bytes" (a Confluent serializer then
** writes the bytes raw, without their length). */
int kl_avro_schema_is_bytes(const kl_avro_schema *s);

enum {
  KL_AVRO_WRAP_UNIONS = 1,  /* Avro's JSON form of unions */
  KL_AVRO_RAW_BYTES = 2     /* a "bytes" root is the whole payload, no length */
};

/* Decode the n bytes at p, one datum of schema s, appending its JSON to
** *json (grown through the schema's env).  Every byte must be used.
** KL_CORRUPT with a message naming the field path and what is wrong
** ("$.items[2].qty: varint runs past the end"), KL_NOMEM.  On error *json
** may hold a partial text past its former length. */
kl_rc kl_avro_decode(const kl_avro_schema *s, const uint8_t *p, size_t n, unsigned flags,
                     kl_buf *json, kl_err *err);

#endif
