/*
** batch.h - log entries: record batches (magic 2) and legacy messages
** (magic 0 and 1), their records and headers, and the v2 encoder.
**
** Every entry of a .log starts with the same 17-byte prefix (offset, size,
** 4 bytes, magic); kl_batch_parse reads the header of whatever entry sits at
** a position without touching its records, so that scans can skip batches on
** header fields alone (offsets, max timestamp, control flag).  Records are
** decoded only by a kl_records iterator, after kl_batch_verify checked the
** CRC.  A legacy uncompressed message is a "batch" of one record; a legacy
** compressed wrapper is a batch whose records are the inner messages.
**
** All pointers in kl_batch / kl_record borrow from the caller's bytes (the
** mapped .log) or the iterator's scratch buffer, and stay valid until that
** memory is released or the iterator moves to another batch.
*/
#ifndef KL_BATCH_H
#define KL_BATCH_H

#include "codec.h"
#include "klog.h"

#define KL_LOG_OVERHEAD 12        /* offset + size */
#define KL_ENTRY_PREFIX 17        /* offset, size, epoch/crc, magic */
#define KL_ENTRY_MIN 18           /* fewer bytes left end Kafka's scan */
#define KL_V2_HEADER 61           /* RECORD_BATCH_OVERHEAD */
#define KL_LEGACY_MIN_SIZE 14     /* smallest legal legacy messageSize */

/* What the first bytes of a log entry say before its body is read, in the
** order Kafka's reader checks them (its scan stops at fewer than 18 bytes
** left; the size must reach a legacy message's minimum; the magic is
** checked before whether the entry fits, so that foreign bytes are
** corruption and only a plausible entry is a crash tail).  p holds at
** least KL_ENTRY_PREFIX + 1 bytes when avail does; *len is the size
** field.  The walker (scan.c) and kl_batch_parse both classify with it. */
enum {
  KL_ENTRY_FITS,            /* a whole entry of a known magic */
  KL_ENTRY_SHORT,           /* fewer than KL_ENTRY_MIN bytes left */
  KL_ENTRY_LENGTH,          /* size below KL_LEGACY_MIN_SIZE */
  KL_ENTRY_MAGIC,           /* magic not 0, 1 or 2 */
  KL_ENTRY_PAST_END         /* the entry extends past avail */
};
int kl_entry_class(const uint8_t *p, int64_t avail, int32_t *len);

/* Timestamp types, as the SQL column reports them. */
enum { KL_TS_NONE = 0, KL_TS_CREATE = 1, KL_TS_APPEND = 2 };
/* "NoTimestampType", "CreateTime", "LogAppendTime" (Kafka's names). */
const char *kl_ts_type_name(int ts_type);

typedef struct kl_batch {
  int64_t position;         /* byte position in its file (set by caller) */
  int64_t base_offset;      /* v2 header; legacy: message offset (a
                            ** compressed wrapper's first offset is only
                            ** known once decoded: see first_known) */
  int64_t last_offset;      /* last offset the entry covers */
  int32_t size;             /* whole entry: KL_LOG_OVERHEAD + length field */
  int8_t magic;             /* 0, 1 or 2 */
  int8_t codec;             /* KL_CODEC_* */
  int8_t ts_type;           /* KL_TS_* */
  int8_t is_transactional;
  int8_t is_control;
  int8_t first_known;       /* base_offset is the true first offset */
  int16_t attributes;       /* raw: int16 for v2, int8 for legacy */
  int32_t leader_epoch;     /* v2 only; -1 for legacy */
  uint32_t crc;             /* as stored */
  int32_t last_offset_delta;/* v2 only */
  int64_t base_timestamp;   /* v2 only; legacy: the message timestamp */
  int64_t max_timestamp;    /* v2 header; v1 message timestamp; v0: -1 */
  int64_t producer_id;      /* v2; -1 for legacy */
  int16_t producer_epoch;
  int32_t base_sequence;
  int32_t record_count;     /* v2; legacy: 1, or -1 for a wrapper */
  const uint8_t *bytes;     /* the whole entry (size bytes) */
} kl_batch;

/*
** Parse the header of the entry at p, of which avail bytes are readable.
** KL_OK: *b is filled (b->position is left as it was).
** KL_DONE: no complete entry fits (fewer than 17 bytes left, or the entry
**   extends past avail): Kafka's scan stops here silently.
** KL_CORRUPT: the header breaks the format (size < 14, magic > 2, v2 batch
**   shorter than 61 bytes, negative record count or offset delta, invalid
**   codec ...); err says what, without a file name (callers add it).
** No CRC is checked and no record is read.
*/
kl_rc kl_batch_parse(const uint8_t *p, size_t avail, kl_batch *b, kl_err *err);

/* Verify the stored CRC (CRC-32C for v2, CRC-32 for legacy): KL_OK or
** KL_CORRUPT. */
kl_rc kl_batch_verify(const kl_batch *b, kl_err *err);

/* One record.  key_len / value_len < 0 mean NULL. */
typedef struct kl_record {
  int64_t offset;
  int64_t timestamp;        /* -1 when the format has none */
  const uint8_t *key;
  int32_t key_len;
  const uint8_t *value;
  int32_t value_len;
  const uint8_t *headers;   /* raw header bytes, for kl_header_next */
  size_t headers_len;
  int32_t header_count;
  int32_t sequence;         /* -1 when none */
} kl_record;

/* One record header.  value_len < 0 means a NULL value. */
typedef struct kl_header {
  const uint8_t *name;
  int32_t name_len;
  const uint8_t *value;
  int32_t value_len;
} kl_header;

/*
** Iterator over the records of one batch.  Owned by the caller (usually on
** the stack or inside a cursor); `scratch` is a caller-owned buffer that
** receives decompressed data and is reused from batch to batch.
*/
typedef struct kl_records {
  kl_batch b;               /* copy of the batch header */
  const uint8_t *p;         /* next record */
  const uint8_t *end;       /* end of the record bytes */
  int32_t remaining;        /* records still to produce */
  int32_t last_delta;       /* offset delta of the last record, -1 */
  int64_t legacy_base;      /* legacy wrapper: absolute = base + stored */
  int legacy_inner;         /* records are inner legacy messages */
} kl_records;

/*
** Start iterating the records of b (whose CRC the caller has verified).
** Compressed payloads are decompressed into scratch, with the decoder
** state kept in ctx (codec.h; may be NULL) (at most
** KL_MAX_BATCH_BYTES).  For a legacy wrapper this also learns its first
** offset (b->base_offset is then exact in it->b).  Errors: KL_CORRUPT
** (bad compressed stream, bad inner messages, v1 wrapper offset smaller
** than the inner relative offsets), KL_NOMEM, KL_UNSUPPORTED.
*/
kl_rc kl_records_open(kl_records *it, const kl_env *env, kl_codec_ctx *ctx, const kl_batch *b,
                      kl_buf *scratch, kl_stats *stats, kl_err *err);

/* Next record: KL_OK (*r filled), KL_DONE, or KL_CORRUPT when the bytes
** do not hold exactly record_count well-formed records with offsets that
** grow inside the batch's range. */
kl_rc kl_records_next(kl_records *it, kl_record *r, kl_err *err);

/* Decode up to max records into out[0..n) and return n: what n calls of
** kl_records_next would give, and in *rc what the call after them would
** return (KL_OK when max were decoded: more may follow; else KL_DONE or
** the error, err saying why), in one loop: a scan decodes a batch's
** records a chunk at a time and produces its rows from the chunk.  The
** records borrow as kl_records_next's do. */
int32_t kl_records_decode(kl_records *it, kl_record *out, int32_t max, kl_rc *rc, kl_err *err);

/* The timestamps of the next n records of a v2 batch into ts, for a batch
** whose records all decoded once (kl_records_next accepted every one, and
** its bytes are those it read): each record's length and timestamp are
** read, the rest is passed over by its length.  KL_OK; KL_CORRUPT when
** the bytes frame fewer records after all; KL_MISUSE for a legacy batch. */
kl_rc kl_records_times(kl_records *it, int32_t n, int64_t *ts, kl_err *err);

/* Pass over the next n records, for a lookup of one record in a batch
** decoded before: each is framed and checked as kl_records_next does (one
** framer, one validation; only nothing is returned).  KL_OK, or
** KL_CORRUPT when the bytes say otherwise after all. */
kl_rc kl_records_skip(kl_records *it, int32_t n, kl_err *err);

/* Next header from *p (advanced) below end: KL_OK, KL_DONE at end.  The
** bytes were validated when the record was decoded. */
kl_rc kl_header_next(const uint8_t **p, const uint8_t *end, kl_header *h);

/* Control record key/value: type (0 ABORT, 1 COMMIT, ...) and, for those
** two, the coordinator epoch (-1 for other types, which readers ignore).
** KL_CORRUPT, as Kafka rejects them: a key under 4 bytes or with a negative
** version; an ABORT or COMMIT whose value is null, under 6 bytes or has a
** negative version.  Newer versions read as version 0.  err (may be NULL)
** says which rule the record breaks, without a file or position.  Every
** reader of control records goes through here. */
enum { KL_CONTROL_ABORT = 0, KL_CONTROL_COMMIT = 1 };
kl_rc kl_control_parse(const kl_record *r, int *type, int32_t *coordinator_epoch, kl_err *err);

/* Zig-zag varints (format.md 3.5).  Return bytes consumed, 0 if invalid or
** truncated. */
size_t kl_varint_get32(const uint8_t *p, const uint8_t *end, int32_t *v);
size_t kl_varint_get64(const uint8_t *p, const uint8_t *end, int64_t *v);
/* Encode into p (5 / 10 bytes room); return bytes written.  Inline: a
** record is a handful of them, and a writer appends record by record. */
static inline size_t kl_uvarint_put(uint8_t *p, uint64_t u) {
  size_t i = 0;
  while (u >= 0x80) {
    p[i++] = (uint8_t)(u | 0x80);
    u >>= 7;
  }
  p[i++] = (uint8_t)u;
  return i;
}
static inline size_t kl_varint_put32(uint8_t *p, int32_t v) {
  return kl_uvarint_put(p, (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31)));
}
static inline size_t kl_varint_put64(uint8_t *p, int64_t v) {
  return kl_uvarint_put(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}
/* Bytes kl_varint_put64 (or put32: a 32-bit value's zig-zag is the same
** number) would write. */
static inline size_t kl_varint_size(int64_t v) {
  uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  return z < 0x80 ? 1 : (size_t)(70 - __builtin_clzll(z)) / 7;
}

/* Writing batches: builder.h. */

#endif
