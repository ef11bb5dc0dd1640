/*
** protobuf.h - Protobuf schemas (a .proto file's text, or a base64
** FileDescriptorProto, as the Schema Registry stores them) and Confluent's
** Protobuf payloads, decoded to JSON text people can query in SQL.
**
** A Confluent Protobuf payload (after the magic byte and schema id):
**   message-index array   zig-zag varint count, then that many zig-zag
**                         varint indexes; a single 0x00 (count 0) is [0].
**                         The first index picks one of the file's
**                         top-level messages, each next one a message
**                         nested in the previous (enums and the entries
**                         of map fields are not counted)
**   message               the Protobuf wire format of that message
**
** The wire format: a sequence of (tag varint = field number << 3 | wire
** type, value): 0 varint, 1 eight bytes, 2 varint length then that many
** bytes (strings, bytes, messages, packed repeated scalars), 3 / 4 start
** and end of a group (proto2), 5 four bytes; little-endian fixed widths.
**
** The JSON written (one rule each, the README's table):
**   a message as an object with every field of its type, under the name
**   written in the .proto, in the order written; a field absent on the wire
**   has its default (proto2's [default = ...] honoured; an absent message
**   is null); of a oneof only the member set, if any; repeated fields
**   (packed and unpacked alike) as arrays; maps as objects (the last entry
**   of a key wins); enums by name, the number when the enum has none for
**   it; int64, uint64 and the other integers as exact JSON integers; bool
**   as true / false; float and double as the shortest text that reads back
**   the same, NaN and the infinities as the strings "NaN", "Infinity",
**   "-Infinity"; bytes as lowercase hex; well-known types
**   (google.protobuf.Timestamp, ...) as the messages they are, but
**   confluent.type.Decimal as the exact number it stands for.  Wire
**   semantics kept: the last value of a singular field wins, repeated
**   occurrences of a singular message merge, unknown fields are skipped.
**
** Limits (hostile schemas and payloads): messages nested deeper than
** KL_PROTO_MAX_DEPTH, schema texts longer than KL_PROTO_MAX_SCHEMA or
** nested deeper than KL_PROTO_MAX_DEPTH, more than KL_PROTO_MAX_FILES
** files in one schema's imports, JSON longer than KL_PROTO_MAX_JSON for
** one value, and decimals of more than KL_PROTO_MAX_DECIMAL bytes or a
** scale beyond KL_PROTO_MAX_SCALE either way are refused.
**
** Schemas are parsed with Debian's libprotobuf / libprotoc (C++, behind
** this C interface), which allocate through C++'s operator new, not the
** kl_env hooks; decoding allocates only through the schema's kl_env.
*/
#ifndef KL_PROTOBUF_H
#define KL_PROTOBUF_H

#include "klog.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KL_PROTO_MAX_DEPTH 64
#define KL_PROTO_MAX_FILES 256
#define KL_PROTO_MAX_SCHEMA ((size_t)1 << 20)
#define KL_PROTO_MAX_DECIMAL 256
#define KL_PROTO_MAX_SCALE 1000
#ifndef KL_PROTO_MAX_JSON /* fuzzing builds lower it */
#define KL_PROTO_MAX_JSON ((size_t)64 << 20)
#endif

typedef struct kl_proto_schema kl_proto_schema;

/*
** Find the schema text of an import ("common/money.proto"): the registry's
** references, by import name.  OUT: *text and *n, borrowed until
** kl_proto_schema_parse returns.  KL_OK, KL_NOTFOUND when there is no such
** reference (the files of google/protobuf/, confluent/meta.proto and
** confluent/type/decimal.proto are then taken from the built-in copies),
** or any other code, which fails the parse.
*/
typedef kl_rc (*kl_proto_resolver)(void *ctx, const char *import_name, const char **text,
                                   size_t *n);

/*
** Parse a schema: text (n bytes, not NUL-terminated) is a .proto file or a
** base64 FileDescriptorProto; its imports come from resolve (which may be
** NULL: built-ins only), dependencies before dependents.  env (may be
** NULL) is copied into the schema and serves its decodes.  OUT: *out,
** freed with kl_proto_schema_free.  KL_CORRUPT with a message saying what
** is wrong ("schema:3:14: Expected \";\".", "import \"a.proto\": not among
** the references"), KL_NOMEM, or the resolver's error.
*/
kl_rc kl_proto_schema_parse(const kl_env *env, const char *text, size_t n,
                            kl_proto_resolver resolve, void *ctx, kl_proto_schema **out,
                            kl_err *err);

/*
** Decode payload (n bytes: the message-index array, then the message) and
** append its JSON to *json (grown through the schema's env).  KL_CORRUPT
** with a message naming the field path and what is wrong
** ("Order.items[2].price (field 3): wire type 2 (length-delimited) where
** double needs 1 (64-bit)"), the same for a message index that the file
** does not have, KL_NOMEM.  On error *json may hold a partial text past its
** former length.  A schema may be used by several threads at once.
*/
kl_rc kl_proto_decode(const kl_proto_schema *s, const uint8_t *payload, size_t n, kl_buf *json,
                      kl_err *err);

void kl_proto_schema_free(kl_proto_schema *s);

#ifdef __cplusplus
}

namespace google {
namespace protobuf {
class FileDescriptor;
}
}  // namespace google

/* For the encoder (protobuf_encode.h): the schema's file (its pool holds
** the imports) and the env its allocations go through (NULL: the C
** allocator's), both borrowed from s. */
const google::protobuf::FileDescriptor *kl_proto_schema_file(const kl_proto_schema *s);
const kl_env *kl_proto_schema_env(const kl_proto_schema *s);
#endif

#endif
