/*
** builder.h - a checked builder of magic v2 record batches, the writer's
** side of batch.h (Kafka's MemoryRecordsBuilder): records are added one at
** a time, every limit is checked and named in the error, and finish writes
** one batch (header, records, compression, CRC-32C) as Kafka's broker
** stores it.  Values come from SQL, so from users: a record that does not
** fit is refused before anything is written, and the batch built so far is
** unchanged.
**
**   record (format.md 3.4)      varint length, i8 attributes (0),
**                               varlong timestampDelta, varint offsetDelta,
**                               varint keyLength (-1 null), key,
**                               varint valueLength (-1 null), value,
**                               varint headerCount, headers
**   header                      varint nameLength, name,
**                               varint valueLength (-1 null), value
**
** A key, value or header value is null exactly when its length is
** negative; a non-empty one needs its bytes (a NULL pointer with a length
** above 0 is KL_MISUSE).  Header names are never null.
*/
#ifndef KL_BUILDER_H
#define KL_BUILDER_H

#include "batch.h"
#include "codec.h"
#include "klog.h"

typedef struct kl_rec_in {
  int64_t timestamp;
  const void *key;          /* key_len < 0: a null key */
  int32_t key_len;
  const void *value;        /* value_len < 0: a null value */
  int32_t value_len;
  const kl_header *headers;
  int32_t header_count;
} kl_rec_in;

typedef struct kl_batch_spec {
  int64_t base_offset;
  int32_t leader_epoch;     /* -1 when unknown */
  int codec;                /* KL_CODEC_* */
  int log_append_time;      /* nonzero: LogAppendTime with append_time */
  int64_t append_time;
  int64_t producer_id;      /* -1 for none */
  int16_t producer_epoch;
  int32_t base_sequence;
  int transactional;
  int control;
} kl_batch_spec;

typedef struct kl_builder {
  const kl_env *env;
  kl_batch_spec spec;
  size_t fill_bytes;        /* a batch is full at this size */
  size_t max_bytes;         /* the largest batch, header included */
  const char *max_name;     /* what sets max_bytes, for messages, or NULL */
  kl_buf body;              /* the records, uncompressed */
  kl_buf packed;            /* scratch for compression */
  kl_codec_cctx cctx;       /* compression state kept across batches */
  int32_t n;
  int64_t base_ts, max_ts;
} kl_builder;

/* A builder for batches of spec (its base offset is the first record's
** offset) filled up to fill_bytes and of at most max_bytes (uncompressed
** records plus the header; 0: max_bytes, and no bound but INT32): a record
** larger than fill_bytes has a batch of its own.  Whatever max_bytes says,
** a batch's records never exceed KL_MAX_BATCH_BYTES, the most a reader
** decompresses (batch.h): what is written can be read.  Allocates nothing
** yet. */
void kl_builder_init(kl_builder *b, const kl_env *env, const kl_batch_spec *spec,
                     size_t fill_bytes, size_t max_bytes);
void kl_builder_free(kl_builder *b);

/* Start a new batch at base_offset (the records added so far are
** dropped). */
void kl_builder_reset(kl_builder *b, int64_t base_offset);

/* Add one record.  KL_MISUSE: a length with no bytes, a null header name,
** a negative length other than null's.  KL_RANGE: the timestamp's distance
** from the batch's first does not fit 64 bits, more records than an offset
** delta holds, or a record larger than a batch may be (max_bytes, INT32,
** KL_MAX_BATCH_BYTES; the message names max_name).  KL_FULL: the record
** would take the batch past fill_bytes (the caller finishes the batch and
** adds it to the next, where it may be alone).  On any error the batch is
** as it was. */
kl_rc kl_builder_add(kl_builder *b, const kl_rec_in *r, kl_err *err);

/* A place in the batch being built, to come back to (a savepoint). */
typedef struct kl_builder_mark {
  int64_t base_offset;      /* the batch it belongs to */
  int32_t n;                /* records before it */
  size_t len;               /* their bytes in the body */
  int64_t base_ts, max_ts;
} kl_builder_mark;

void kl_builder_get_mark(const kl_builder *b, kl_builder_mark *m);
/* Drop the records added after m, taken from the same batch (same base
** offset, no finish since). */
void kl_builder_rewind(kl_builder *b, const kl_builder_mark *m);
/* Start again the batch of m, finished since, with its first m->n records,
** whose bytes (m->len of them) the caller kept from kl_builder_body before
** the finish.  KL_NOMEM with a message. */
kl_rc kl_builder_refill(kl_builder *b, const kl_builder_mark *m, const uint8_t *body,
                        kl_err *err);
/* The records' bytes so far (uncompressed), valid until the next call. */
static inline const uint8_t *kl_builder_body(const kl_builder *b) { return b->body.p; }

/* Records in the batch so far. */
static inline int32_t kl_builder_count(const kl_builder *b) { return b->n; }

/* Append the batch to out: compressed as spec says, maxTimestamp as the
** broker stores it (LogAppendTime: append_time), CRC-32C.  KL_MISUSE
** without records.  The builder then starts an empty batch after the last
** offset. */
kl_rc kl_builder_finish(kl_builder *b, kl_buf *out, kl_err *err);

/* kl_builder_finish in two steps, for a writer that writes the header and
** the records with one gathering write: seal fills h (KL_V2_HEADER bytes)
** and points *payload at the records as stored (compressed or not; valid
** until the next call on the builder); next then starts the batch after
** it.  The same errors as finish. */
kl_rc kl_builder_seal(kl_builder *b, uint8_t *h, const uint8_t **payload, size_t *payload_len,
                      kl_err *err);
void kl_builder_next(kl_builder *b);

/* One batch of the n records recs (offset deltas 0..n-1), appended to out:
** a builder used once. */
kl_rc kl_batch_encode(const kl_env *env, const kl_batch_spec *spec,
                      const kl_rec_in *recs, int n, kl_buf *out, kl_err *err);

#endif
