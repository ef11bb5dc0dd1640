/*
** batch.c - record batches v2, legacy messages v0/v1, records, headers and
** the v2 encoder.  Byte layouts: ../shared/spec/format.md sections 2 to 5.
*/
#include "batch.h"

#include <string.h>
#include <zlib.h>

#include "codec.h"
#include "crc32c.h"

const char *kl_ts_type_name(int t) {
  switch (t) {
    case KL_TS_CREATE: return "CreateTime";
    case KL_TS_APPEND: return "LogAppendTime";
    default: return "NoTimestampType";
  }
}

/* ---- varints ---- */

/* Kafka rejects a fifth byte with the continuation bit; bits above 32 in
** the fifth byte it drops silently, we reject them (stricter, never wrong
** for data Kafka wrote, since Kafka never writes them). */
size_t kl_varint_get32(const uint8_t *p, const uint8_t *end, int32_t *v) {
  uint32_t u = 0;
  for (size_t i = 0; i < 5; i++) {
    if (p + i >= end) return 0;
    uint8_t c = p[i];
    if (i == 4 && (c & 0xf0)) return 0;
    u |= (uint32_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) {
      *v = (int32_t)((u >> 1) ^ (~(u & 1) + 1));
      return i + 1;
    }
  }
  return 0;
}

size_t kl_varint_get64(const uint8_t *p, const uint8_t *end, int64_t *v) {
  uint64_t u = 0;
  for (size_t i = 0; i < 10; i++) {
    if (p + i >= end) return 0;
    uint8_t c = p[i];
    if (i == 9 && (c & 0xfe)) return 0;
    u |= (uint64_t)(c & 0x7f) << (7 * i);
    if (!(c & 0x80)) {
      *v = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
      return i + 1;
    }
  }
  return 0;
}

/* The general varint readers, for the inline ones' rare cases: out of
** line, their value returned with the bytes consumed (n, 0 if invalid or
** truncated), so that no caller's variable has its address taken and the
** inline paths keep theirs in registers. */
typedef struct vslow {
  int64_t v;
  size_t n;
} vslow;

static __attribute__((noinline)) vslow vslow32(const uint8_t *p, const uint8_t *end) {
  int32_t v = 0;
  size_t n = kl_varint_get32(p, end, &v);
  return (vslow){v, n};
}

static __attribute__((noinline)) vslow vslow64(const uint8_t *p, const uint8_t *end) {
  int64_t v = 0;
  size_t n = kl_varint_get64(p, end, &v);
  return (vslow){v, n};
}

/* Most fields of a record fit in one or two varint bytes (lengths, counts,
** offset deltas; a timestamp delta in three): decoded inline, with one
** bound check for all of their bytes, they are a large part of a scan.
** Longer ones, and those the end cuts, take the general path. */
static inline size_t vget32(const uint8_t *p, const uint8_t *end, int32_t *v) {
  uint32_t u;
  size_t n;
  if (p < end && !(p[0] & 0x80)) {
    u = p[0];
    n = 1;
  } else if (end - p >= 2 && !(p[1] & 0x80)) {
    u = (p[0] & 0x7fu) | (uint32_t)p[1] << 7;
    n = 2;
  } else {
    vslow r = vslow32(p, end);
    *v = (int32_t)r.v;
    return r.n;
  }
  *v = (int32_t)((u >> 1) ^ (~(u & 1) + 1));
  return n;
}

static inline size_t vget64(const uint8_t *p, const uint8_t *end, int64_t *v) {
  uint64_t u;
  size_t n;
  if (end - p >= 3) { /* one bound check for up to three bytes */
    if (!(p[0] & 0x80)) {
      u = p[0];
      n = 1;
    } else if (!(p[1] & 0x80)) {
      u = (p[0] & 0x7fu) | (uint64_t)p[1] << 7;
      n = 2;
    } else if (!(p[2] & 0x80)) {
      u = (p[0] & 0x7fu) | (uint64_t)(p[1] & 0x7f) << 7 | (uint64_t)p[2] << 14;
      n = 3;
    } else {
      vslow r = vslow64(p, end);
      *v = r.v;
      return r.n;
    }
  } else if (p < end && !(p[0] & 0x80)) {
    u = p[0];
    n = 1;
  } else {
    vslow r = vslow64(p, end);
    *v = r.v;
    return r.n;
  }
  *v = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
  return n;
}

/* A length, count or offset delta: vget32, with a shorter path for what
** most of them are, a non-negative value of one or two bytes (the low bit
** of the first byte is the zig-zag sign: one test for both). */
static inline size_t vlen32(const uint8_t *p, const uint8_t *end, int32_t *v) {
  if (p < end && !(p[0] & 0x81)) {
    *v = p[0] >> 1;
    return 1;
  }
  if (end - p >= 2 && (p[0] & 0x81) == 0x80 && !(p[1] & 0x80)) {
    *v = (int32_t)(((p[0] & 0x7fu) | (uint32_t)p[1] << 7) >> 1);
    return 2;
  }
  return vget32(p, end, v);
}

/* ---- headers of entries ---- */

static kl_rc parse_v2(const uint8_t *p, int32_t len, kl_batch *b, kl_err *err) {
  if (len + KL_LOG_OVERHEAD < KL_V2_HEADER) {
    return kl_err_set(err, KL_CORRUPT, "batch length %d is below the 49-byte v2 minimum", len);
  }
  b->leader_epoch = kl_get_i32(p + 12);
  b->crc = kl_get_u32(p + 17);
  b->attributes = kl_get_i16(p + 21);
  b->last_offset_delta = kl_get_i32(p + 23);
  b->base_timestamp = kl_get_i64(p + 27);
  b->max_timestamp = kl_get_i64(p + 35);
  b->producer_id = kl_get_i64(p + 43);
  b->producer_epoch = kl_get_i16(p + 51);
  b->base_sequence = kl_get_i32(p + 53);
  b->record_count = kl_get_i32(p + 57);
  /* Kafka uses only the low byte of the attributes. */
  int attr = b->attributes & 0xff;
  b->codec = (int8_t)(attr & 7);
  b->ts_type = (attr & 0x08) ? KL_TS_APPEND : KL_TS_CREATE;
  b->is_transactional = (attr & 0x10) != 0;
  b->is_control = (attr & 0x20) != 0;
  b->first_known = 1;
  if (b->codec > KL_CODEC_ZSTD) {
    return kl_err_set(err, KL_CORRUPT, "invalid compression codec id %d", b->codec);
  }
  if (b->record_count < 0) {
    return kl_err_set(err, KL_CORRUPT, "negative record count %d", b->record_count);
  }
  if (b->last_offset_delta < 0) {
    return kl_err_set(err, KL_CORRUPT, "negative last offset delta %d", b->last_offset_delta);
  }
  if (b->base_offset > INT64_MAX - 1 - b->last_offset_delta) { /* next offset must fit */
    return kl_err_set(err, KL_CORRUPT, "last offset overflows");
  }
  b->last_offset = b->base_offset + b->last_offset_delta;
  return KL_OK;
}

static kl_rc parse_legacy(const uint8_t *p, int32_t len, kl_batch *b, kl_err *err) {
  int v1 = b->magic == 1;
  int32_t overhead = v1 ? 22 : 14;
  if (len < overhead) {
    return kl_err_set(err, KL_CORRUPT, "message size %d is below the v%d minimum of %d",
                      len, b->magic, overhead);
  }
  int attr = p[17];
  b->attributes = (int16_t)(int8_t)p[17];
  b->crc = kl_get_u32(p + 12);
  b->codec = (int8_t)(attr & 7);
  b->leader_epoch = -1;
  b->producer_id = -1;
  b->producer_epoch = -1;
  b->base_sequence = -1;
  b->last_offset_delta = 0;
  if (b->codec > KL_CODEC_LZ4) {
    return kl_err_set(err, KL_CORRUPT, "invalid codec id %d for message format v%d",
                      b->codec, b->magic);
  }
  if (v1) {
    b->ts_type = (attr & 0x08) ? KL_TS_APPEND : KL_TS_CREATE;
    b->base_timestamp = b->max_timestamp = kl_get_i64(p + 18);
  } else {
    b->ts_type = KL_TS_NONE;
    b->base_timestamp = b->max_timestamp = -1;
  }
  b->last_offset = b->base_offset;
  b->record_count = b->codec ? -1 : 1;
  b->first_known = b->codec == KL_CODEC_NONE;
  return KL_OK;
}

int kl_entry_class(const uint8_t *p, int64_t avail, int32_t *len) {
  *len = 0;
  if (avail < KL_ENTRY_MIN) return KL_ENTRY_SHORT; /* Kafka: p >= end - 17 */
  *len = kl_get_i32(p + 8);
  if (*len < KL_LEGACY_MIN_SIZE) return KL_ENTRY_LENGTH;
  if ((int8_t)p[16] < 0 || p[16] > 2) return KL_ENTRY_MAGIC;
  if ((int64_t)*len + KL_LOG_OVERHEAD > avail) return KL_ENTRY_PAST_END;
  return KL_ENTRY_FITS;
}

kl_rc kl_batch_parse(const uint8_t *p, size_t avail, kl_batch *b, kl_err *err) {
  int64_t pos = b->position;
  memset(b, 0, sizeof *b);
  b->position = pos;
  int32_t len;
  int cls = kl_entry_class(p, (int64_t)(avail > INT64_MAX ? INT64_MAX : avail), &len);
  if (cls == KL_ENTRY_SHORT) return KL_DONE;
  b->base_offset = kl_get_i64(p);
  b->magic = (int8_t)p[16];
  if (cls == KL_ENTRY_LENGTH) {
    return kl_err_set(err, KL_CORRUPT, "entry size %d is below the minimum of 14", len);
  }
  if (cls == KL_ENTRY_MAGIC) return kl_err_set(err, KL_CORRUPT, "unknown magic %d", b->magic);
  if (cls == KL_ENTRY_PAST_END) return KL_DONE;
  b->size = len + KL_LOG_OVERHEAD;
  b->bytes = p;
  if (b->base_offset < 0) {
    return kl_err_set(err, KL_CORRUPT, "negative offset %lld", (long long)b->base_offset);
  }
  if (b->base_offset == INT64_MAX) { /* no next offset: found by fuzz_sql */
    return kl_err_set(err, KL_CORRUPT, "offset %lld leaves no next offset", (long long)b->base_offset);
  }
  return b->magic == 2 ? parse_v2(p, len, b, err) : parse_legacy(p, len, b, err);
}

kl_rc kl_batch_verify(const kl_batch *b, kl_err *err) {
  uint32_t got;
  if (b->magic == 2) {
    got = kl_crc32c(0, b->bytes + 21, (size_t)b->size - 21);
  } else {
    got = (uint32_t)crc32(0L, b->bytes + 16, (uInt)(b->size - 16));
  }
  if (got != b->crc) {
    return kl_err_set(err, KL_CORRUPT, "CRC mismatch (stored %08x, computed %08x)",
                      b->crc, got);
  }
  return KL_OK;
}

/* ---- records ---- */

/* The fields of a legacy message body starting at its magic byte. */
typedef struct legacy_msg {
  int8_t magic;
  int attr;
  int64_t timestamp;
  const uint8_t *key;
  int32_t key_len;
  const uint8_t *value;
  int32_t value_len;
} legacy_msg;

/* Parse the message whose bytes [16, 12 + size) of an entry are at m, n
** bytes long (n = size - 4: magic to end). */
static kl_rc parse_legacy_body(const uint8_t *m, size_t n, legacy_msg *out, kl_err *err) {
  const uint8_t *end = m + n;
  if (n < 2) return kl_err_set(err, KL_CORRUPT, "legacy message too short");
  out->magic = (int8_t)m[0];
  out->attr = m[1];
  const uint8_t *q = m + 2;
  if (out->magic == 1) {
    if (end - q < 8) return kl_err_set(err, KL_CORRUPT, "legacy message too short");
    out->timestamp = kl_get_i64(q);
    q += 8;
  } else if (out->magic == 0) {
    out->timestamp = -1;
  } else {
    return kl_err_set(err, KL_CORRUPT, "legacy message with magic %d", out->magic);
  }
  for (int f = 0; f < 2; f++) {
    if (end - q < 4) return kl_err_set(err, KL_CORRUPT, "legacy message truncated");
    int32_t l = kl_get_i32(q);
    q += 4;
    if (l >= 0 && end - q < l) return kl_err_set(err, KL_CORRUPT, "legacy %s length %d past the message", f ? "value" : "key", l);
    if (f == 0) {
      out->key = l >= 0 ? q : NULL;
      out->key_len = l < 0 ? -1 : l;
    } else {
      out->value = l >= 0 ? q : NULL;
      out->value_len = l < 0 ? -1 : l;
    }
    if (l > 0) q += l;
  }
  if (q != end) return kl_err_set(err, KL_CORRUPT, "legacy message has %d trailing bytes", (int)(end - q));
  return KL_OK;
}

/* Decompress a legacy wrapper and learn the absolute offset of its first
** inner message.  Inner entries are validated here once, so that
** kl_records_next can walk them without rechecking bounds. */
static kl_rc open_legacy_wrapper(kl_records *it, const kl_env *env, kl_codec_ctx *ctx,
                                 kl_buf *scratch, kl_stats *stats, kl_err *err) {
  legacy_msg w;
  kl_rc rc = parse_legacy_body(it->b.bytes + 16, (size_t)it->b.size - 16, &w, err);
  if (rc) return rc;
  if (!w.value) return kl_err_set(err, KL_CORRUPT, "compressed wrapper message has a null value");
  rc = kl_codec_decompress(env, ctx, it->b.codec, it->b.magic, w.value, (size_t)w.value_len,
                           scratch, KL_MAX_BATCH_BYTES, err);
  if (rc) return rc;
  if (stats) stats->bytes_decompressed += scratch->len;
  /* An empty result may leave the buffer unallocated (NULL + 0 is not C). */
  const uint8_t *p = scratch->p, *end = p ? p + scratch->len : p;
  int32_t count = 0;
  int64_t first = 0, last = 0;
  while (p < end) {
    if (end - p < KL_ENTRY_PREFIX + 1) return kl_err_set(err, KL_CORRUPT, "truncated inner message");
    int32_t len = kl_get_i32(p + 8);
    if (len < KL_LEGACY_MIN_SIZE || end - p - KL_LOG_OVERHEAD < len) {
      return kl_err_set(err, KL_CORRUPT, "inner message size %d invalid", len);
    }
    legacy_msg m;
    rc = parse_legacy_body(p + 16, (size_t)len - 4, &m, err);
    if (rc) return rc;
    if (m.attr & 7) return kl_err_set(err, KL_CORRUPT, "nested compression in a wrapper message");
    int64_t off = kl_get_i64(p);
    if (count == 0) first = off;
    else if (off <= last) return kl_err_set(err, KL_CORRUPT, "inner offsets not increasing");
    last = off;
    count++;
    p += KL_LOG_OVERHEAD + len;
  }
  if (count == 0) return kl_err_set(err, KL_CORRUPT, "compressed wrapper message holds no messages");
  int64_t wrapper = it->b.last_offset;
  if (it->b.magic == 1) {
    /* v1: inner offsets are relative; a wrapper offset of 0 is a quirk of
    ** some old clients and means "base 0". */
    if (wrapper == 0) {
      it->legacy_base = 0;
    } else {
      if (wrapper < last) return kl_err_set(err, KL_CORRUPT, "wrapper offset %lld below inner relative offset %lld", (long long)wrapper, (long long)last);
      it->legacy_base = (int64_t)((uint64_t)wrapper - (uint64_t)last);
    }
  } else {
    it->legacy_base = 0; /* v0: inner offsets are absolute */
  }
  it->b.base_offset = (int64_t)((uint64_t)it->legacy_base + (uint64_t)first);
  it->b.first_known = 1;
  it->b.record_count = count;
  it->p = scratch->p;
  it->end = end;
  it->remaining = count;
  it->legacy_inner = 1;
  return KL_OK;
}

kl_rc kl_records_open(kl_records *it, const kl_env *env, kl_codec_ctx *ctx, const kl_batch *b,
                      kl_buf *scratch,
                      kl_stats *stats, kl_err *err) {
  memset(it, 0, sizeof *it);
  it->b = *b;
  it->last_delta = -1;
  if (stats) stats->batches_decoded++;
  if (b->magic < 2) {
    if (b->codec != KL_CODEC_NONE) return open_legacy_wrapper(it, env, ctx, scratch, stats, err);
    it->p = b->bytes; /* the entry itself is the one record */
    it->end = b->bytes + b->size;
    it->remaining = 1;
    return KL_OK;
  }
  const uint8_t *rec = b->bytes + KL_V2_HEADER;
  size_t n = (size_t)b->size - KL_V2_HEADER;
  it->remaining = b->record_count;
  if (b->record_count == 0) {
    it->p = it->end = rec; /* an empty (compacted) batch: nothing to decode */
    return KL_OK;
  }
  if (b->codec != KL_CODEC_NONE) {
    kl_rc rc = kl_codec_decompress(env, ctx, b->codec, 2, rec, n, scratch, KL_MAX_BATCH_BYTES, err);
    if (rc) return rc;
    if (stats) stats->bytes_decompressed += scratch->len;
    if (scratch->len == 0) { /* found by fuzz_batch (scratch->p may be NULL) */
      return kl_err_set(err, KL_CORRUPT, "compressed records decompress to nothing, not %d records",
                        b->record_count);
    }
    rec = scratch->p;
    n = scratch->len;
  }
  it->p = rec;
  it->end = rec + n;
  return KL_OK;
}

static kl_rc next_legacy(kl_records *it, kl_record *r, kl_err *err) {
  const uint8_t *p = it->p;
  int32_t len = kl_get_i32(p + 8);
  legacy_msg m;
  kl_rc rc = parse_legacy_body(p + 16, (size_t)len - 4, &m, err);
  if (rc) return rc;
  r->offset = it->legacy_inner ? (int64_t)((uint64_t)it->legacy_base + (uint64_t)kl_get_i64(p))
                                : kl_get_i64(p);
  /* LogAppendTime on the wrapper overrides every inner timestamp. */
  r->timestamp = (it->legacy_inner && it->b.ts_type == KL_TS_APPEND) ? it->b.max_timestamp
                                                                    : m.timestamp;
  if (it->legacy_inner && r->timestamp > it->b.max_timestamp) { /* as for v2 records */
    return kl_err_set(err, KL_CORRUPT, "inner message timestamp %lld above the wrapper's %lld",
                      (long long)r->timestamp, (long long)it->b.max_timestamp);
  }
  r->key = m.key;
  r->key_len = m.key_len;
  r->value = m.value;
  r->value_len = m.value_len;
  r->headers = NULL;
  r->headers_len = 0;
  r->header_count = 0;
  r->sequence = -1;
  it->p = p + KL_LOG_OVERHEAD + len;
  it->remaining--;
  return KL_OK;
}

kl_rc kl_records_skip(kl_records *it, int32_t n, kl_err *err) {
  kl_record r;
  for (; n > 0; n--) {
    if (it->remaining == 0) return kl_err_set(err, KL_CORRUPT, "fewer records than counted");
    kl_rc rc = kl_records_next(it, &r, err);
    if (rc) return rc;
  }
  return KL_OK;
}

kl_rc kl_records_times(kl_records *it, int32_t n, int64_t *ts, kl_err *err) {
  if (it->b.magic < 2) return kl_err_set(err, KL_MISUSE, "legacy batch");
  const uint8_t *p = it->p, *end = it->end;
  int append = it->b.ts_type == KL_TS_APPEND;
  for (int32_t i = 0; i < n; i++) {
    int32_t len;
    int64_t d64;
    size_t k;
    if (it->remaining == 0 || !(k = vget32(p, end, &len)) || len < 1 || end - p - (ptrdiff_t)k < len) {
      return kl_err_set(err, KL_CORRUPT, "record %d: bad length", it->b.record_count - it->remaining);
    }
    const uint8_t *rend = p + k + len;
    if (!vget64(p + k + 1, rend, &d64)) {
      return kl_err_set(err, KL_CORRUPT, "record %d: bad timestamp", it->b.record_count - it->remaining);
    }
    /* As kl_records_next computes it, wrapping as Java's longs do. */
    ts[i] = append ? it->b.max_timestamp : (int64_t)((uint64_t)it->b.base_timestamp + (uint64_t)d64);
    p = rend;
    it->remaining--;
  }
  it->p = p;
  return KL_OK;
}

/* A record's key or value at p, below end: a varint length (-1: null),
** then that many bytes.  The bytes consumed, 0 when malformed. */
static inline size_t bytes_field(const uint8_t *p, const uint8_t *end, const uint8_t **out,
                                 int32_t *len) {
  int32_t l;
  size_t k = vlen32(p, end, &l);
  if (!k || (l >= 0 && end - p - (ptrdiff_t)k < l)) return 0;
  *out = l >= 0 ? p + k : NULL;
  *len = l < 0 ? -1 : l;
  return k + (l > 0 ? (size_t)l : 0);
}

/* The v2 record framer, a Kafka-rule walker (cyclomatic complexity above
** 25 on purpose): one check per field of DefaultRecord, in the order of
** its bytes, each a way a record is malformed.  The record at *pp (below
** end) of batch b, whose previous record's offset delta is *last; idx is
** its index, for the message.  *pp and *last move only when it decodes.
** Inline: kl_records_next runs it once a call, kl_records_decode in a loop
** whose state stays in registers. */
static inline __attribute__((always_inline)) kl_rc v2_record(const kl_batch *b, const uint8_t **pp, const uint8_t *end,
                              int32_t *last, int32_t idx, kl_record *r, kl_err *err) {
  const uint8_t *p = *pp;
  int32_t len, d32;
  int64_t d64;
  size_t k;
  if (!(k = vlen32(p, end, &len)) || len < 0 || end - p - (ptrdiff_t)k < len) {
    return kl_err_set(err, KL_CORRUPT, "record %d: bad length", idx);
  }
  p += k;
  const uint8_t *rend = p + len;
  if (rend - p < 1) goto bad;
  p++; /* record attributes: unused */
  if (!(k = vget64(p, rend, &d64))) goto bad;
  p += k;
  /* Wrapping arithmetic, as Kafka's Java longs: a crafted file (its CRC
  ** recomputed) must not reach undefined behaviour. */
  r->timestamp = b->ts_type == KL_TS_APPEND ? b->max_timestamp
                                            : (int64_t)((uint64_t)b->base_timestamp + (uint64_t)d64);
  /* The header's max timestamp bounds every record's: lookups by time and
  ** the dating of segments rest on it, so a record above it (a crafted
  ** batch) would be found by a scan and missed by a seek. */
  if (r->timestamp > b->max_timestamp) goto bad;
  if (!(k = vlen32(p, rend, &d32))) goto bad;
  /* Offsets must grow and stay inside the batch, or offset pushdown (which
  ** trusts the header's last offset) and a full scan would disagree, and
  ** rows would come out of order. */
  if (d32 <= *last || d32 > b->last_offset_delta) goto bad;
  *last = d32;
  p += k;
  r->offset = (int64_t)((uint64_t)b->base_offset + (uint64_t)(int64_t)d32);
  r->sequence = -1;
  if (b->base_sequence >= 0) {
    /* Sequences wrap within [0, 2^31 - 1]. */
    r->sequence = (int32_t)(((int64_t)b->base_sequence + d32) & 0x7fffffff);
  }
  if (!(k = bytes_field(p, rend, &r->key, &r->key_len))) goto bad;
  p += k;
  if (!(k = bytes_field(p, rend, &r->value, &r->value_len))) goto bad;
  p += k;
  int32_t hc;
  if (!(k = vlen32(p, rend, &hc)) || hc < 0) goto bad;
  p += k;
  if (hc > rend - p) goto bad;
  r->headers = p;
  r->header_count = hc;
  for (int32_t i = 0; i < hc; i++) {
    int32_t l;
    for (int f = 0; f < 2; f++) {
      if (!(k = vlen32(p, rend, &l))) goto bad;
      p += k;
      if (f == 0 && l < 0) goto bad;
      if (l >= 0) {
        if (rend - p < l) goto bad;
        p += l;
      }
    }
  }
  r->headers_len = (size_t)(p - r->headers);
  if (p != rend) goto bad;
  *pp = rend;
  return KL_OK;
bad:
  return kl_err_set(err, KL_CORRUPT, "record %d is malformed", idx);
}

/* The records are all produced: KL_DONE, unless bytes are left over. */
static kl_rc records_end(const uint8_t *p, const uint8_t *end, kl_err *err) {
  if (p != end) {
    return kl_err_set(err, KL_CORRUPT, "%d bytes left after the last record", (int)(end - p));
  }
  return KL_DONE;
}

kl_rc kl_records_next(kl_records *it, kl_record *r, kl_err *err) {
  if (it->remaining == 0) return records_end(it->p, it->end, err);
  if (it->b.magic < 2) return next_legacy(it, r, err);
  kl_rc rc = v2_record(&it->b, &it->p, it->end, &it->last_delta,
                       it->b.record_count - it->remaining, r, err);
  if (rc == KL_OK) it->remaining--;
  return rc;
}

int32_t kl_records_decode(kl_records *it, kl_record *out, int32_t max, kl_rc *rc, kl_err *err) {
  int32_t n = 0;
  *rc = KL_OK;
  if (it->b.magic < 2) {
    while (n < max && (*rc = kl_records_next(it, &out[n], err)) == KL_OK) n++;
    return n;
  }
  /* The header's fields in a copy of its own, which the records written
  ** cannot alias: the loop reads them from registers. */
  const kl_batch b = it->b;
  const uint8_t *p = it->p, *end = it->end;
  int32_t last = it->last_delta, left = it->remaining;
  for (; n < max; n++) {
    if (left == 0) {
      *rc = records_end(p, end, err);
      break;
    }
    if ((*rc = v2_record(&b, &p, end, &last, b.record_count - left, &out[n], err)) != KL_OK) break;
    left--;
  }
  it->p = p;
  it->last_delta = last;
  it->remaining = left;
  return n;
}

kl_rc kl_header_next(const uint8_t **pp, const uint8_t *end, kl_header *h) {
  const uint8_t *p = *pp;
  if (p >= end) return KL_DONE;
  size_t k = vget32(p, end, &h->name_len);
  if (!k || h->name_len < 0 || end - p - (ptrdiff_t)k < h->name_len) return KL_CORRUPT;
  p += k;
  h->name = p;
  p += h->name_len;
  k = vget32(p, end, &h->value_len);
  if (!k) return KL_CORRUPT;
  p += k;
  if (h->value_len < 0) {
    h->value = NULL;
    h->value_len = -1;
  } else {
    if (end - p < h->value_len) return KL_CORRUPT;
    h->value = p;
    p += h->value_len;
  }
  *pp = p;
  return KL_OK;
}

kl_rc kl_control_parse(const kl_record *r, int *type, int32_t *coordinator_epoch,
                       kl_err *err) {
  /* As Kafka's ControlRecordType.parseTypeId and
  ** EndTransactionMarker.deserializeValue: a newer version reads as version
  ** 0 (extra bytes ignored), a negative one is corrupt, and a marker's
  ** value must hold the version and the coordinator epoch. */
  *coordinator_epoch = -1;
  if (r->key_len < 4) {
    if (r->key_len < 0) return kl_err_set(err, KL_CORRUPT, "control record with a null key");
    return kl_err_set(err, KL_CORRUPT, "control record key of %d bytes (at least 4 needed)",
                      r->key_len);
  }
  if (kl_get_i16(r->key) < 0) {
    return kl_err_set(err, KL_CORRUPT, "control record key version %d", kl_get_i16(r->key));
  }
  *type = kl_get_i16(r->key + 2);
  if (*type != 0 && *type != 1) return KL_OK; /* KRaft records, or unknown: ignored */
  const char *name = *type == 0 ? "ABORT" : "COMMIT";
  if (r->value_len < 0) return kl_err_set(err, KL_CORRUPT, "%s marker with a null value", name);
  if (r->value_len < 6) {
    return kl_err_set(err, KL_CORRUPT, "%s marker value of %d bytes (at least 6 needed)", name,
                      r->value_len);
  }
  if (kl_get_i16(r->value) < 0) {
    return kl_err_set(err, KL_CORRUPT, "%s marker value version %d", name, kl_get_i16(r->value));
  }
  *coordinator_epoch = kl_get_i32(r->value + 2);
  return KL_OK;
}

