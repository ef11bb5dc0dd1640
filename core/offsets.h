/*
** offsets.h - the records the group coordinator keeps in the internal topic
** __consumer_offsets (behaviour.md 14): decode a record's key and value,
** and fold the records of its partitions into the committed offsets, the
** last commit of each (group, topic, partition) winning.
**
** A key starts with an i16 that names the record type (Kafka calls it the
** key's version):
**
**   key, types 0 and 1: an offset commit (not flexible)
**   +---------+----------------------+----------------------+-----------+
**   | i16 0|1 | i16 len | group bytes | i16 len | topic bytes | i32 part  |
**   +---------+----------------------+----------------------+-----------+
**   key, type 2: classic group metadata
**   +---------+----------------------+
**   | i16 2   | i16 len | group bytes |
**   +---------+----------------------+
**   key, any other type (3..15: consumer, share and streams group records
**   of KIP-848 and later; unknown future ones): not read further.
**
**   offset commit value: i16 version, then by version
**   0  | i64 offset | string metadata | i64 commit ts |
**   1  | i64 offset | string metadata | i64 commit ts | i64 expire ts |
**   2  | i64 offset | string metadata | i64 commit ts |
**   3  | i64 offset | i32 leader epoch | string metadata | i64 commit ts |
**   4  | i64 offset | i32 leader epoch | compact string metadata | i64 commit ts
**      | uvarint n | n x (uvarint tag | uvarint size | size bytes) |
**
**   string          i16 length, then the bytes; -1 is null
**   compact string  uvarint length + 1, then the bytes; 0 is null
**   uvarint         7 bits a byte, low first, high bit = more; at most 5
**
** What Kafka's reader (CoordinatorRecordSerde and the generated message
** readers) does, we do: a key type it does not know is skipped; a value
** version outside 0..4 is an error (UnknownRecordVersionException fails
** the coordinator's load); a string longer than 32767 bytes, a length past
** the end, a varint of more than 5 bytes are errors; bytes after the last
** field are ignored.  Two choices of ours: the group and topic of a key
** cannot be null (a key without them names nothing), while a null metadata
** is shown as null (Kafka's reader refuses it as a non-nullable field; a
** reader of what is on disk loses nothing by showing it).  The value of a
** group metadata record is not read: only commits are wanted.
*/
#ifndef KL_OFFSETS_H
#define KL_OFFSETS_H

#include "klog.h"

/* The record types a key can name, as far as committed offsets care. */
typedef enum kl_offsets_type {
  KL_OFFSETS_COMMIT,        /* key types 0 and 1 */
  KL_OFFSETS_GROUP,         /* key type 2: group metadata, skipped */
  KL_OFFSETS_OTHER          /* any other key type, skipped */
} kl_offsets_type;

/* A decoded key; the byte fields point into the bytes parsed. */
typedef struct kl_offsets_key {
  int16_t version;          /* the record type as stored */
  kl_offsets_type type;
  const uint8_t *group;     /* COMMIT and GROUP only */
  int32_t group_len;
  const uint8_t *topic;     /* COMMIT only */
  int32_t topic_len;
  int32_t partition;        /* COMMIT only */
} kl_offsets_key;

/* A decoded offset commit value; metadata points into the bytes parsed. */
typedef struct kl_offsets_value {
  int16_t version;          /* 0..4 */
  int64_t offset;           /* the committed offset */
  int32_t leader_epoch;     /* -1 when the version has none (0..2) */
  const uint8_t *metadata;  /* NULL with metadata_len -1 when null */
  int32_t metadata_len;
  int64_t commit_timestamp;
  int64_t expire_timestamp; /* -1 unless version 1 */
} kl_offsets_value;

/* Decode the n bytes of a key.  KL_OK with *out filled (the type says
** whether it is a commit); KL_CORRUPT with a message for bytes Kafka would
** not read (fewer than 2, a field past the end, a null group or topic). */
kl_rc kl_offsets_key_parse(const uint8_t *p, size_t n, kl_offsets_key *out, kl_err *err);

/* Decode the n bytes of an offset commit's value.  KL_OK, or KL_CORRUPT
** with a message (a version outside 0..4, a field past the end, a bad
** length or varint). */
kl_rc kl_offsets_value_parse(const uint8_t *p, size_t n, kl_offsets_value *out, kl_err *err);

/*
** The fold: records are added in any order of partitions, each partition's
** in offset order; the state of a (group, topic, partition) is its record
** of the greatest (offsets partition, record offset), a tombstone (null
** value) included, which removes the commit.  The same partition read
** from several log directories (replicas) thus gives the most advanced
** replica's state; should one key be found in two partitions of the
** topic (Kafka puts a group in exactly one), the higher partition's wins.
*/
typedef struct kl_offsets kl_offsets;

/* One committed offset; strings are owned by the fold and not
** NUL-terminated (their lengths say where they end). */
typedef struct kl_offsets_row {
  const uint8_t *group;
  int32_t group_len;
  const uint8_t *topic;
  int32_t topic_len;
  int32_t partition;
  kl_offsets_value v;       /* metadata points into the fold's copy */
  int32_t offsets_partition;  /* the __consumer_offsets partition */
  int64_t record_offset;    /* the offset of the winning record */
} kl_offsets_row;

/* An empty fold, allocating through env (NULL: the C library). */
kl_rc kl_offsets_new(const kl_env *env, kl_offsets **out);
void kl_offsets_free(kl_offsets *o);

/* Add the record at record_offset of partition offsets_partition: key and
** value bytes as stored (value NULL for a tombstone; key NULL for a null
** key, which is corrupt).  Records of other types are skipped.  KL_CORRUPT
** with a message starting "key: " or "value: " (the caller adds where the
** record is), KL_NOMEM.  After an error the fold is unchanged. */
kl_rc kl_offsets_add(kl_offsets *o, int32_t offsets_partition, int64_t record_offset,
                     const uint8_t *key, int32_t key_len, const uint8_t *value, int32_t value_len,
                     kl_err *err);

/* The live commits sorted by group, topic (bytes compared as memcmp, a
** prefix first: SQLite's BINARY order), then partition.  *rows is owned by
** the fold and valid until the next kl_offsets_add or kl_offsets_free. */
kl_rc kl_offsets_rows(kl_offsets *o, const kl_offsets_row *const **rows, size_t *n);

#endif
