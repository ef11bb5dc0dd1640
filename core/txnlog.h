/*
** txnlog.h - the records the transaction coordinator keeps in the internal
** topic __transaction_state (internals.md 1): decode a record's key and
** value, and fold the records of its partitions into each transactional
** id's current state, the latest record winning and a null value deleting.
**
** Key and value are an int16 version, then the message (kmsg.h types):
**
**   key v0 (TransactionLogKey)    | i16 0 | string TransactionalId |
**   value (TransactionLogValue)   | i16 version | then, v0 plain, v1 flexible:
**     i64 ProducerId | i16 ProducerEpoch | i32 TransactionTimeoutMs |
**     i8 TransactionStatus |
**     [] TransactionPartitions (nullable) { string Topic | [] i32 PartitionIds
**                                           | v1: tagged fields } |
**     i64 TransactionLastUpdateTimestampMs | i64 TransactionStartTimestampMs |
**     v1: tagged fields: 0 PreviousProducerId i64, 1 NextProducerId i64,
**         2 ClientTransactionVersion i16
**
** In v1 strings and arrays are compact (uvarint length + 1, 0 null).
** What Kafka's loader (TransactionLog.scala, TransactionStateManager) does,
** we do: a key of a version other than 0 is skipped (a record of a newer
** coordinator); a value version outside 0..1 and a status outside 0..7 are
** errors (Kafka's load fails on them); bytes after the last field are
** ignored.  Tagged fields of other tags are skipped.
*/
#ifndef KL_TXNLOG_H
#define KL_TXNLOG_H

#include "klog.h"
#include "kmsg.h"

/* A decoded key; id points into the bytes parsed. */
typedef struct kl_txnlog_key {
  int16_t version;          /* as stored */
  int known;                /* version 0: the rest was read */
  kl_kslice id;             /* the transactional id */
} kl_txnlog_key;

/* A decoded value; parts points into the bytes parsed. */
typedef struct kl_txnlog_value {
  int16_t version;          /* 0 or 1 */
  int64_t producer_id;
  int16_t producer_epoch;
  int32_t timeout_ms;
  int8_t state;             /* 0..7, kl_txnlog_state_name */
  int32_t nparts;           /* TransactionPartitions entries, -1 null */
  const uint8_t *parts;     /* their bytes (validated), parts_len long */
  size_t parts_len;
  int64_t last_update_ts;
  int64_t start_ts;
  int64_t prev_producer_id; /* v1 tag 0; -1 absent */
  int64_t next_producer_id; /* v1 tag 1; -1 absent */
  int16_t client_txn_version; /* v1 tag 2; 0 absent */
} kl_txnlog_value;

/* Kafka's name of a status (Empty, Ongoing, PrepareCommit, PrepareAbort,
** CompleteCommit, CompleteAbort, Dead, PrepareEpochFence), NULL outside
** 0..7. */
const char *kl_txnlog_state_name(int state);

/* Decode the n bytes of a key: KL_OK (known says whether it is one to
** read), or KL_CORRUPT with a message starting "key: ". */
kl_rc kl_txnlog_key_parse(const uint8_t *p, size_t n, kl_txnlog_key *out, kl_err *err);

/* Decode the n bytes of a value: KL_OK, or KL_CORRUPT with a message
** starting "value: " (an unknown version or status, a field past the end,
** a bad length or varint, a tagged field of a known tag of the wrong
** size). */
kl_rc kl_txnlog_value_parse(const uint8_t *p, size_t n, kl_txnlog_value *out, kl_err *err);

/* The partitions of v as JSON, [{"topic":"t","partition":0},...] in the
** order stored ("[]" for none or null), appended to out.  KL_NOMEM only. */
kl_rc kl_txnlog_partitions_json(const kl_env *env, const kl_txnlog_value *v, kl_buf *out);

/* 1 when (topic, partition) is among v's partitions. */
int kl_txnlog_has_partition(const kl_txnlog_value *v, const char *topic, size_t topic_len,
                            int32_t partition);

/*
** The fold: records added in offset order within each partition, in any
** order of partitions; a transactional id's state is its record of the
** greatest (partition, offset), a tombstone included (which removes it),
** so replicas of one partition give the most advanced one's state.
*/
typedef struct kl_txnlog kl_txnlog;

/* One transactional id's state; owned by the fold. */
typedef struct kl_txnlog_row {
  kl_kslice id;             /* the transactional id */
  kl_txnlog_value v;        /* parts points into the fold's copy */
  int32_t log_partition;    /* the __transaction_state partition */
  int64_t record_offset;    /* the offset of the winning record */
  int64_t record_ts;        /* its timestamp */
} kl_txnlog_row;

/* An empty fold allocating through env (NULL: the C library). */
kl_rc kl_txnlog_new(const kl_env *env, kl_txnlog **out);
void kl_txnlog_free(kl_txnlog *f);

/* Add a record: key and value bytes as stored (value NULL for a
** tombstone).  Keys of unknown versions are skipped.  KL_CORRUPT with a
** message starting "key: " or "value: " (the caller adds where), KL_NOMEM.
** After an error the fold is unchanged. */
kl_rc kl_txnlog_add(kl_txnlog *f, int32_t log_partition, int64_t record_offset,
                    int64_t record_ts, const uint8_t *key, int32_t key_len, const uint8_t *value,
                    int32_t value_len, kl_err *err);

/* The live states sorted by transactional id (memcmp order).  *rows is
** owned by the fold, valid until the next kl_txnlog_add or free. */
kl_rc kl_txnlog_rows(kl_txnlog *f, const kl_txnlog_row *const **rows, size_t *n);

#endif
