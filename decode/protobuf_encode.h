/*
** protobuf_encode.h - JSON text to a Confluent Protobuf payload: the
** message-index array, then the message in Protobuf's wire format.  The
** inverse of kl_proto_decode (protobuf.h), so that what a query reads can
** be written back, and tests and demos can make values without a JVM.
**
** The JSON is read as the decoder writes it: a message as an object whose
** members are its fields under the names written in the .proto, or under
** their JSON names as protobuf's JSON mapping also takes them (json_name:
** lowerCamelCase, "unitPrice" for unit_price, unless the .proto sets one),
** in any order (a member left out, or null, is a field not set; a field
** named twice, under either name, is an error); repeated fields
** as arrays; maps as objects (keys as strings: "7", "true"); integers of
** every width as JSON integers in their type's range, or strings of one
** ("9007199254740993"), a number with a fraction or an exponent when it is
** an exact integer (5.0, 1e3); float and double as numbers or the strings
** "NaN", "Infinity", "-Infinity"; bool as true / false; bytes as hex text
** (either case); enums by name or by number (a proto2 enum: only its own
** numbers); of a oneof at most one member; well-known types as the
** messages they are; confluent.type.Decimal as the decoder writes it, an
** exact number (or a string of one) whose decimals give its scale
** ("12.340": unscaled 12340, scale 3, precision 5, as Java's BigDecimal
** reads it).
**
** The bytes: fields in the order the JSON gives them (any order is valid
** on the wire); a singular field whose value is its default (0, "", false,
** the first enum value, proto2's [default = ...]) is not written, since a
** reader cannot tell it from a field not set, unless it is a oneof member
** or proto2's required; repeated scalars packed where the schema packs
** them; a map entry with its key and its value; a proto2 group between its
** start and end tags.  The message-index array is Confluent's: the single
** byte 0x00 for the file's first message, else a zig-zag count and indexes.
**
** Limits: messages nested deeper than KL_PROTO_MAX_DEPTH and decimals
** beyond the decoder's bounds are refused.
*/
#ifndef KL_PROTOBUF_ENCODE_H
#define KL_PROTOBUF_ENCODE_H

#include "protobuf.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
** Encode the n bytes of JSON text at json as the message called message
** (its full name, "shop.Click.Ref", or its name within the file's package;
** NULL: the file's first message, as Confluent's serializer picks it), and
** append the message-index array and the message's bytes to *out (grown
** through the schema's env).  KL_CORRUPT with a message naming the member
** path, under the names the JSON gives, and what is wrong
** ("$.items[1].qty: \"two\" is not an int32",
** "$.kind: \"SELL\" is not a value of enum shop.Kind", "not JSON: ... at
** character 12"); KL_NOTFOUND when the schema's file defines no such
** message; KL_NOMEM.  On error *out may hold a partial encoding past its
** former length.
*/
kl_rc kl_proto_encode(const kl_proto_schema *s, const char *message, const char *json, size_t n,
                      kl_buf *out, kl_err *err);

#ifdef __cplusplus
}
#endif

#endif
