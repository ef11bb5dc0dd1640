/*
** avro_encode.h - JSON text to Avro's binary encoding of one datum: the
** inverse of kl_avro_decode, so that what a query reads can be written
** back, and tests and demos can make values without a JVM.
**
** The JSON is read as the decoder writes it (avro.h): records as objects
** (a member missing for a field whose type is a union with null is null;
** a member that is no field is an error), maps as objects, arrays; enums
** by symbol; bytes and fixed as hex strings; a union as the bare value of
** a branch, the first branch in the schema's order that takes the value
** (KL_AVRO_WRAP_UNIONS: {"<branch type name>": value}, null bare); int and
** long as JSON integers in range; float and double as numbers or the
** strings "NaN", "Infinity", "-Infinity"; decimal as a number or a string
** of digits with at most its scale's decimals and its precision's digits
** (a string keeps every digit: a JSON number passes through a double,
** exact to 15 digits); uuid as its
** text form; date, time and timestamps as their numbers.
**
** Limits: nesting as the decoder's (KL_AVRO_MAX_DEPTH); trying a union's
** branches in turn is bounded by KL_AVRO_MAX_ENCODE_STEPS per value, so a
** schema of unions within unions cannot make it exponential.
*/
#ifndef KL_AVRO_ENCODE_H
#define KL_AVRO_ENCODE_H

#include "avro.h"

#define KL_AVRO_MAX_ENCODE_STEPS 1000000

/* Encode the n bytes of JSON text at json as one datum of schema s,
** appending its bytes to *out (grown through the schema's env).  flags:
** KL_AVRO_WRAP_UNIONS, KL_AVRO_RAW_BYTES (a "bytes" root without its
** length, as Confluent's serializer writes it).  KL_CORRUPT with a message naming the field path
** and what is wrong ("$.items[1].qty: \"two\" is not an int"; "not JSON:
** ..."), KL_NOMEM.  On error *out may hold a partial encoding past its
** former length. */
kl_rc kl_avro_encode(const kl_avro_schema *s, const char *json, size_t n, unsigned flags,
                     kl_buf *out, kl_err *err);

#endif
