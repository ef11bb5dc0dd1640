/*
** builder.c - magic v2 record batches, built record by record with every
** limit checked.
*/
#include "builder.h"

#include <string.h>

#include "crc32c.h"

void kl_builder_init(kl_builder *b, const kl_env *env, const kl_batch_spec *spec,
                     size_t fill_bytes, size_t max_bytes) {
  memset(b, 0, sizeof *b);
  b->env = env;
  b->spec = *spec;
  /* The reader's bound on decompressed records is the writer's on every
  ** batch, compressed or not (a log's codec may change). */
  size_t readable = KL_V2_HEADER + KL_MAX_BATCH_BYTES;
  if (readable > INT32_MAX) readable = INT32_MAX;
  b->max_bytes = max_bytes && max_bytes < readable ? max_bytes : readable;
  b->fill_bytes = fill_bytes && fill_bytes < b->max_bytes ? fill_bytes : b->max_bytes;
}

void kl_builder_free(kl_builder *b) {
  kl_buf_free(b->env, &b->body);
  kl_buf_free(b->env, &b->packed);
  kl_codec_cctx_free(&b->cctx);
}

void kl_builder_reset(kl_builder *b, int64_t base_offset) {
  b->spec.base_offset = base_offset;
  b->body.len = 0;
  b->n = 0;
}

void kl_builder_get_mark(const kl_builder *b, kl_builder_mark *m) {
  m->base_offset = b->spec.base_offset;
  m->n = b->n;
  m->len = b->body.len;
  m->base_ts = b->base_ts;
  m->max_ts = b->max_ts;
}

void kl_builder_rewind(kl_builder *b, const kl_builder_mark *m) {
  b->n = m->n;
  b->body.len = m->len;
  b->base_ts = m->base_ts;
  b->max_ts = m->max_ts;
}

kl_rc kl_builder_refill(kl_builder *b, const kl_builder_mark *m, const uint8_t *body,
                        kl_err *err) {
  kl_builder_reset(b, m->base_offset);
  if (m->len && kl_buf_append(b->env, &b->body, body, m->len)) {
    return kl_err_set(err, KL_NOMEM, "out of memory restoring a batch");
  }
  kl_builder_rewind(b, m);
  return KL_OK;
}

/* Bytes of a length-prefixed field (key, value, header value): its varint
** and its bytes; what is wrong with it, or NULL. */
static const char *field(const void *p, int32_t len, size_t *bytes) {
  if (len < -1) return "a length below -1 (only -1 means null)";
  if (len > 0 && !p) return "a length without bytes";
  *bytes = kl_varint_size(len) + (len > 0 ? (size_t)len : 0);
  return NULL;
}

/* Bytes of r's body (attributes to headers, without its length varint),
** every field checked before anything is written; stops adding once past
** INT32_MAX, which the caller refuses. */
static kl_rc body_size(const kl_builder *b, const kl_rec_in *r, int64_t ts_delta, size_t *out,
                       kl_err *err) {
  size_t body = 1 + kl_varint_size(ts_delta) + kl_varint_size(b->n), k;
  const char *why = field(r->key, r->key_len, &k);
  if (why) return kl_err_set(err, KL_MISUSE, "record key: %s", why);
  body += k;
  if ((why = field(r->value, r->value_len, &k)) != NULL) {
    return kl_err_set(err, KL_MISUSE, "record value: %s", why);
  }
  body += k;
  if (r->header_count < 0 || (r->header_count > 0 && !r->headers)) {
    return kl_err_set(err, KL_MISUSE, "record headers: %d of them, %s", r->header_count,
                      r->header_count < 0 ? "a negative count" : "without an array");
  }
  body += kl_varint_size(r->header_count);
  for (int32_t i = 0; i < r->header_count; i++) {
    const kl_header *h = &r->headers[i];
    if (h->name_len < 0 || (h->name_len > 0 && !h->name)) {
      return kl_err_set(err, KL_MISUSE, "header %d: a name is never null", i);
    }
    if ((why = field(h->value, h->value_len, &k)) != NULL) {
      return kl_err_set(err, KL_MISUSE, "header %d value: %s", i, why);
    }
    body += kl_varint_size(h->name_len) + (size_t)h->name_len + k;
    if (body > INT32_MAX) break;
  }
  *out = body;
  return KL_OK;
}

/* A length-prefixed field at p; the bytes after it. */
static uint8_t *put_field(uint8_t *p, const void *ptr, int32_t len) {
  p += kl_varint_put32(p, len);
  if (len > 0) {
    memcpy(p, ptr, (size_t)len);
    p += len;
  }
  return p;
}

/* Write r as record number n of body bytes at p (room checked); the bytes
** after it. */
static uint8_t *put_record(uint8_t *p, const kl_rec_in *r, size_t body, int64_t ts_delta,
                           int32_t n) {
  p += kl_varint_put32(p, (int32_t)body);
  *p++ = 0; /* record attributes: unused */
  p += kl_varint_put64(p, ts_delta);
  p += kl_varint_put32(p, n);
  p = put_field(p, r->key, r->key_len);
  p = put_field(p, r->value, r->value_len);
  p += kl_varint_put32(p, r->header_count);
  for (int32_t i = 0; i < r->header_count; i++) {
    p = put_field(p, r->headers[i].name, r->headers[i].name_len);
    p = put_field(p, r->headers[i].value, r->headers[i].value_len);
  }
  return p;
}

kl_rc kl_builder_add(kl_builder *b, const kl_rec_in *r, kl_err *err) {
  if (b->n == INT32_MAX) {
    return kl_err_set(err, KL_RANGE, "a batch holds at most %d records", INT32_MAX);
  }
  int64_t base_ts = b->n ? b->base_ts : r->timestamp, ts_delta;
  if (__builtin_sub_overflow(r->timestamp, base_ts, &ts_delta)) {
    return kl_err_set(err, KL_RANGE, "timestamp %lld is too far from the batch's first, %lld",
                      (long long)r->timestamp, (long long)base_ts);
  }
  size_t body = 0;
  kl_rc rc = body_size(b, r, ts_delta, &body, err);
  if (rc) return rc;
  size_t whole = body + kl_varint_size(body > INT32_MAX ? INT32_MAX : (int64_t)body);
  if (body > INT32_MAX || whole + KL_V2_HEADER > b->max_bytes) {
    if (body > INT32_MAX) whole = body;
    return kl_err_set(err, KL_RANGE, "a record of %zu bytes is too big: a batch holds at most "
                      "%zu bytes (%s)", whole, b->max_bytes - KL_V2_HEADER,
                      b->max_name ? b->max_name : "the most a reader decompresses");
  }
  if (b->n > 0 && KL_V2_HEADER + b->body.len + whole > b->fill_bytes) {
    return kl_err_set(err, KL_FULL, "the batch is full (%zu bytes)", b->body.len);
  }
  rc = kl_buf_reserve(b->env, &b->body, b->body.len + whole);
  if (rc) return kl_err_set(err, rc, "out of memory building a batch");
  uint8_t *p = put_record(b->body.p + b->body.len, r, body, ts_delta, b->n);
  b->body.len = (size_t)(p - b->body.p);
  if (b->n == 0 || r->timestamp > b->max_ts) b->max_ts = r->timestamp;
  b->base_ts = base_ts;
  b->n++;
  return KL_OK;
}

kl_rc kl_builder_seal(kl_builder *b, uint8_t *h, const uint8_t **payload_out,
                      size_t *payload_len, kl_err *err) {
  if (b->n == 0) return kl_err_set(err, KL_MISUSE, "a batch needs at least one record");
  const kl_batch_spec *spec = &b->spec;
  const kl_buf *payload = &b->body;
  kl_rc rc = KL_OK;
  if (spec->codec != KL_CODEC_NONE) {
    rc = kl_codec_compress_ctx(b->env, &b->cctx, spec->codec, 2, b->body.p, b->body.len, &b->packed,
                               err);
    payload = &b->packed;
  }
  if (rc == KL_OK && KL_V2_HEADER - KL_LOG_OVERHEAD + payload->len > INT32_MAX) {
    rc = kl_err_set(err, KL_RANGE, "a batch of %zu bytes is larger than Kafka's INT32 length",
                    payload->len);
  }
  if (rc) return rc;
  int16_t attr = (int16_t)(spec->codec & 7);
  if (spec->log_append_time) attr |= 0x08;
  if (spec->transactional) attr |= 0x10;
  if (spec->control) attr |= 0x20;
  kl_put_u64(h, (uint64_t)spec->base_offset);
  kl_put_u32(h + 8, (uint32_t)(KL_V2_HEADER - KL_LOG_OVERHEAD + payload->len));
  kl_put_u32(h + 12, (uint32_t)spec->leader_epoch);
  h[16] = 2;
  kl_put_u16(h + 21, (uint16_t)attr);
  kl_put_u32(h + 23, (uint32_t)(b->n - 1));
  kl_put_u64(h + 27, (uint64_t)b->base_ts);
  /* LogAppendTime: the broker's time is every record's (LogValidator). */
  kl_put_u64(h + 35, (uint64_t)(spec->log_append_time ? spec->append_time : b->max_ts));
  kl_put_u64(h + 43, (uint64_t)spec->producer_id);
  kl_put_u16(h + 51, (uint16_t)spec->producer_epoch);
  kl_put_u32(h + 53, (uint32_t)spec->base_sequence);
  kl_put_u32(h + 57, (uint32_t)b->n);
  uint32_t crc = kl_crc32c(0, h + 21, KL_V2_HEADER - 21);
  kl_put_u32(h + 17, kl_crc32c(crc, payload->p, payload->len));
  *payload_out = payload->p;
  *payload_len = payload->len;
  return KL_OK;
}

void kl_builder_next(kl_builder *b) {
  /* The next batch starts after this one (a log at the end of the offset
  ** space has no next: it stays, and its writer refuses). */
  int64_t next;
  if (__builtin_add_overflow(b->spec.base_offset, (int64_t)b->n, &next)) next = INT64_MAX;
  kl_builder_reset(b, next);
}

kl_rc kl_builder_finish(kl_builder *b, kl_buf *out, kl_err *err) {
  uint8_t h[KL_V2_HEADER];
  const uint8_t *payload = NULL;
  size_t len = 0;
  kl_rc rc = kl_builder_seal(b, h, &payload, &len, err);
  if (rc) return rc;
  size_t start = out->len;
  if ((rc = kl_buf_reserve(b->env, out, start + KL_V2_HEADER + len)) != KL_OK) {
    return kl_err_set(err, rc, "out of memory building a batch");
  }
  memcpy(out->p + start, h, KL_V2_HEADER);
  if (len) memcpy(out->p + start + KL_V2_HEADER, payload, len);
  out->len = start + KL_V2_HEADER + len;
  kl_builder_next(b);
  return KL_OK;
}

kl_rc kl_batch_encode(const kl_env *env, const kl_batch_spec *spec, const kl_rec_in *recs, int n,
                      kl_buf *out, kl_err *err) {
  if (n <= 0) return kl_err_set(err, KL_MISUSE, "a batch needs at least one record");
  kl_builder b;
  kl_builder_init(&b, env, spec, 0, 0);
  kl_rc rc = KL_OK;
  for (int i = 0; i < n && rc == KL_OK; i++) rc = kl_builder_add(&b, &recs[i], err);
  if (rc == KL_OK) rc = kl_builder_finish(&b, out, err);
  kl_builder_free(&b);
  return rc;
}
