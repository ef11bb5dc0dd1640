/*
** values.h - keys and values decoded to JSON in SQL: kafka_log's
** key_type/value_type 'confluent' and 'avro', their options, the
** per-connection cache of registries, kafka_decode(), and the encoding of
** an INSERT's JSON into such columns.
**
** Registries are kept per connection, keyed by their source (decode/
** source.h) and union form; each statement that decodes probes its
** source once (its signature: segments and offsets of `_schemas`, or the
** file's size and time) and replays it again only when it changed, so a
** schema is parsed once per connection until `_schemas` changes.  An
** INSERT probes the source of each value it encodes, so a schema
** registered a moment before is the one it uses.
*/
#ifndef KL_VALUES_H
#define KL_VALUES_H

#include "avro.h"
#include "batch.h"
#include "confluent.h"
#include "glue.h"

/* key_type / value_type words beyond 'blob' (0) and 'text' (1). */
enum { KL_TYPE_BLOB = 0, KL_TYPE_TEXT = 1, KL_TYPE_CONFLUENT = 2, KL_TYPE_AVRO = 3 };

/* A table's decoding options (sqlite3_malloc'd strings). */
typedef struct kl_decode_opts {
  char *schemas;            /* schemas=: the registry's source; NULL: the table's path */
  char *avro[2];            /* key_schema=, value_schema=: plain Avro schemas */
  char *subject[2];         /* key_subject=, value_subject=: what INSERT encodes with */
  char *message[2];         /* key_message=, value_message=: the Protobuf message it encodes */
  int errors_null;          /* decode_errors='null' */
  int wrap_unions;          /* unions='wrapped' */
  kl_avro_schema *plain[2]; /* avro[] parsed (at CREATE) */
} kl_decode_opts;

/* "name=value" (value dequoted) when name is one of these options: 1 with
** *rc SQLITE_OK or an error in *errmsg (sqlite3_malloc'd); 0 when name is
** not one of them. */
int kl_decode_option(kl_decode_opts *o, const char *name, size_t kn, const char *value, int *rc,
                     char **errmsg);

/* Check the options against the types chosen (an 'avro' column needs its
** schema) and parse the plain schemas.  SQLITE_ERROR with *errmsg. */
int kl_decode_opts_ready(kl_decode_opts *o, const int type[2], char **errmsg);
void kl_decode_opts_free(kl_decode_opts *o);

/* The options' names, for messages. */
#define KL_DECODE_OPTION_NAMES \
  "schemas, key_schema, value_schema, key_subject, value_subject, key_message, value_message, " \
  "decode_errors, unions"

/* The per-connection cache (kl_conn.values); NULL-safe. */
void kl_values_free(struct kl_values *v);

/* A statement's decoding of one table's columns. */
typedef struct kl_coldec {
  struct vdec *vd;          /* a reference to the connection's decoder */
  int probed;               /* dec is current for this statement */
  char *schemas;            /* the scan's schemas = ? (sqlite3_malloc'd), or
                            ** NULL: the table's option, else its path */
  kl_buf json;
} kl_coldec;

/* Forget the decoder (a new statement probes the source again). */
void kl_coldec_reset(kl_coldec *d);

/* The scan's source of schemas, from the hidden column schemas (v; NULL:
** none given, the table's own).  A value that is not a non-empty text is
** SQLITE_ERROR with *errmsg replaced (sqlite3_malloc'd); SQLITE_NOMEM. */
int kl_coldec_source(kl_coldec *d, sqlite3_value *v, char **errmsg);
void kl_coldec_free(kl_coldec *d);

/* Where a record is, for messages. */
typedef struct kl_where {
  const char *topic;        /* or the partition directory */
  int32_t partition;
  int64_t offset;
} kl_where;

/* Set ctx's result to the JSON of the key (is_key) or value of r decoded
** with type (KL_TYPE_CONFLUENT or KL_TYPE_AVRO), path being the table's
** path (the default source).  NULL bytes give NULL.  A value that does not
** decode is an error naming where, the schema id and what is wrong
** (SQLITE_CORRUPT_VTAB class), or NULL with decode_errors='null'.  Returns
** SQLITE_OK or the error code set on ctx. */
int kl_decode_column(sqlite3_context *ctx, kl_conn *conn, const kl_decode_opts *o, kl_coldec *d,
                     int type, int is_key, const kl_record *r, const char *path,
                     const kl_where *where);

/* The bytes an INSERT stores for its key (is_key) or value v in a column of
** type (KL_TYPE_CONFLUENT or KL_TYPE_AVRO) of the table at path (a
** partition directory): TEXT is JSON encoded, with the latest schema of
** the subject (the key_subject / value_subject option, else
** "<topic>-key" / "<topic>-value") in the table's registry framed as
** Confluent's serializers do (confluent.h; a Protobuf schema's message:
** the key_message / value_message option, else its first), or with the plain Avro schema
** of key_schema / value_schema.  Returns 1 with the bytes in *out, 0 when v
** is stored as it is (NULL; a BLOB, taken to be serialized already), or
** -1 with an SQLite error code in *rc and *errmsg (sqlite3_malloc'd)
** naming the table's path, the column and what is wrong. */
int kl_encode_column(kl_conn *conn, const kl_decode_opts *o, int type, int is_key,
                     sqlite3_value *v, const char *path, kl_buf *out, int *rc, char **errmsg);

/* kafka_decode(bytes, type, schema_source): its user data the kl_conn.
** type 'confluent' (schema_source a registry source), 'avro' (the schema
** JSON) or 'json'. */
void kl_fn_decode(sqlite3_context *ctx, int argc, sqlite3_value **argv);

#endif
