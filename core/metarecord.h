/*
** metarecord.h - one record of KRaft's __cluster_metadata log (or of a
** snapshot of it), decoded by the field descriptors generated from Kafka's
** JSON message specs (core/metaschema.c, tools/gen_metaschema.py) into JSON
** named as the specs name the fields.
**
** A metadata record is in the record's value (the key is null), as
** AbstractApiMessageSerde frames it:
**
**   +-------------------+--------------+--------------+-------------------+
**   | uvarint frame (1) | uvarint api  | uvarint      | the message at    |
**   |                   | key          | version      | that version      |
**   +-------------------+--------------+--------------+-------------------+
**
** Every metadata message is flexible from version 0 (its strings, bytes
** and arrays compact: uvarint length + 1, 0 for null; each struct ends in
** tagged fields).  A message must end where its bytes end (Kafka refuses
** trailing bytes).  A frame version other than 1, an api key the specs do
** not know or a version outside the spec's valid versions is no error:
** Kafka newer than the specs writes them, and the record is shown raw.
**
** JSON: an object with the spec's field names, in the spec's order, then
** the tagged fields the record carries in the order it carries them (a
** tagged field it does not carry is absent: its spec default, or, in a
** PartitionChangeRecord, "unchanged").  int64 as JSON integers, uuids as
** Kafka prints them (base64url without padding, 22 characters), bytes as
** base64, strings that are not UTF-8 as {"hex":"..."}, a tag the spec
** does not name as "_tag<N>": "<hex>".
*/
#ifndef KL_METARECORD_H
#define KL_METARECORD_H

#include "klog.h"

/* Field types of the specs. */
enum {
  KL_MT_INT8 = 1, KL_MT_INT16, KL_MT_INT32, KL_MT_INT64, KL_MT_UINT16, KL_MT_UINT32,
  KL_MT_BOOL, KL_MT_FLOAT64, KL_MT_STRING, KL_MT_BYTES, KL_MT_UUID, KL_MT_STRUCT
};

/* "n+" as a version range's upper end; as a lower end, "never". */
#define KL_MV_OPEN 127

/* One field of a spec (generated). */
typedef struct kl_mfield {
  const char *name;
  uint8_t type;               /* KL_MT_*: the value's, or each element's */
  uint8_t array;              /* 1: an array of type */
  int8_t v_lo, v_hi;          /* versions having it */
  int8_t n_lo, n_hi;          /* versions where it may be null */
  int8_t t_lo, t_hi;          /* versions where it is a tagged field */
  int32_t tag;                /* its tag, -1 when never tagged */
  const struct kl_mfield *sub;  /* a struct's fields */
  uint16_t nsub;
} kl_mfield;

/* One record type of a spec (generated). */
typedef struct kl_mtype {
  int32_t api_key;
  const char *name;           /* as the spec names it: "TopicRecord" */
  int8_t v_lo, v_hi;          /* validVersions */
  int8_t flex_lo;             /* flexibleVersions' lower end */
  const kl_mfield *fields;
  uint16_t nfields;
} kl_mtype;

extern const kl_mtype kl_meta_types[];
extern const size_t kl_meta_type_count;

/* The spec of api key k, or NULL. */
const kl_mtype *kl_meta_type(int32_t api_key);

/* The index of the top-level field name of t, or -1. */
int kl_meta_field(const kl_mtype *t, const char *name);

/* What a decode found of one top-level field (for a replay: the fields
** a record changes), pointing into the bytes decoded. */
typedef struct kl_mtop {
  uint8_t present;            /* the record carries it */
  uint8_t null;               /* it is null */
  int64_t i;                  /* integers and bools */
  const uint8_t *p;           /* strings and bytes: their bytes (n of
                              ** them); uuids: 16 bytes; int32 arrays: the
                              ** first element (n of them, 4 bytes each) */
  int32_t n;
} kl_mtop;

#define KL_META_MAX_TOP 32    /* more top-level fields than any spec has */

/* A decoded record. */
typedef struct kl_mrec {
  uint32_t frame;             /* frame version */
  int32_t api_key;            /* -1 when the frame is unknown */
  int32_t version;
  const kl_mtype *type;       /* NULL: unknown, shown raw */
  kl_mtop top[KL_META_MAX_TOP]; /* by the type's field index */
} kl_mrec;

/* Decode the n bytes of a record's value at p.  KL_OK with *out filled and,
** for a known type and version, the JSON in json (replaced; len 0 for an
** unknown one); KL_CORRUPT with a message for bytes Kafka would not read
** (a field past the end, a bad length, trailing bytes, a null where the
** spec allows none); KL_NOMEM.  json is grown through env. */
kl_rc kl_meta_decode(const kl_env *env, const uint8_t *p, size_t n, kl_mrec *out, kl_buf *json,
                     kl_err *err);

/* Append the 22 characters of Kafka's Uuid.toString (base64url, no
** padding) of the 16 bytes at u, and a NUL, to s (23 bytes). */
void kl_uuid_str(const uint8_t u[16], char s[23]);

/* Parse Kafka's Uuid string form (22 characters) into u: 1, else 0. */
int kl_uuid_parse(const char *s, size_t n, uint8_t u[16]);

#endif
