/*
** kmsg.c - Kafka's message encoding primitives (layouts in kmsg.h).
*/
#include "kmsg.h"

#include <string.h>

void kl_kmsg_init(kl_kmsg *r, const uint8_t *p, size_t n, const char *what, kl_err *err) {
  r->start = r->p = p;
  r->end = p ? p + n : p;
  r->what = what;
  r->err = err;
}

static kl_rc short_read(kl_kmsg *r, const char *field, size_t need) {
  return kl_err_set(r->err, KL_CORRUPT, "%s: %s needs %zu bytes, %zu left", r->what, field, need,
                    kl_kmsg_left(r));
}

/* The next n bytes, or a short read. */
static kl_rc take(kl_kmsg *r, const char *field, size_t n, const uint8_t **s) {
  if (kl_kmsg_left(r) < n) return short_read(r, field, n);
  *s = r->p;
  r->p += n;
  return KL_OK;
}

kl_rc kl_kmsg_i8(kl_kmsg *r, const char *field, int8_t *v) {
  const uint8_t *s = NULL;
  kl_rc rc = take(r, field, 1, &s);
  if (rc == KL_OK) *v = (int8_t)s[0];
  return rc;
}

kl_rc kl_kmsg_i16(kl_kmsg *r, const char *field, int16_t *v) {
  const uint8_t *s = NULL;
  kl_rc rc = take(r, field, 2, &s);
  if (rc == KL_OK) *v = kl_get_i16(s);
  return rc;
}

kl_rc kl_kmsg_u16(kl_kmsg *r, const char *field, uint16_t *v) {
  const uint8_t *s = NULL;
  kl_rc rc = take(r, field, 2, &s);
  if (rc == KL_OK) *v = (uint16_t)kl_get_i16(s);
  return rc;
}

kl_rc kl_kmsg_i32(kl_kmsg *r, const char *field, int32_t *v) {
  const uint8_t *s = NULL;
  kl_rc rc = take(r, field, 4, &s);
  if (rc == KL_OK) *v = kl_get_i32(s);
  return rc;
}

kl_rc kl_kmsg_u32(kl_kmsg *r, const char *field, uint32_t *v) {
  const uint8_t *s = NULL;
  kl_rc rc = take(r, field, 4, &s);
  if (rc == KL_OK) *v = kl_get_u32(s);
  return rc;
}

kl_rc kl_kmsg_i64(kl_kmsg *r, const char *field, int64_t *v) {
  const uint8_t *s = NULL;
  kl_rc rc = take(r, field, 8, &s);
  if (rc == KL_OK) *v = kl_get_i64(s);
  return rc;
}

kl_rc kl_kmsg_f64(kl_kmsg *r, const char *field, double *v) {
  int64_t bits;
  kl_rc rc = kl_kmsg_i64(r, field, &bits);
  if (rc == KL_OK) memcpy(v, &bits, sizeof *v);
  return rc;
}

kl_rc kl_kmsg_bool(kl_kmsg *r, const char *field, int *v) {
  int8_t b;
  kl_rc rc = kl_kmsg_i8(r, field, &b);
  if (rc == KL_OK) *v = b != 0;
  return rc;
}

kl_rc kl_kmsg_uuid(kl_kmsg *r, const char *field, uint8_t v[16]) {
  const uint8_t *s = NULL;
  kl_rc rc = take(r, field, 16, &s);
  if (rc == KL_OK) memcpy(v, s, 16);
  return rc;
}

/* 7 bits a byte, low first, at most max bytes (5 or 10); a 10th byte
** may hold only the 64th bit. */
static kl_rc get_varbits(kl_kmsg *r, const char *field, int max, uint64_t *v) {
  uint64_t x = 0;
  for (int i = 0; i < max; i++) {
    if (kl_kmsg_left(r) < 1) return short_read(r, field, 1);
    uint8_t b = *r->p++;
    if (i == 9 && b > 1 && !(b & 0x80)) {
      return kl_err_set(r->err, KL_CORRUPT, "%s: %s varint is out of range", r->what, field);
    }
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = x;
      return KL_OK;
    }
  }
  return kl_err_set(r->err, KL_CORRUPT, "%s: %s varint is longer than %d bytes", r->what, field,
                    max);
}

kl_rc kl_kmsg_uvarint(kl_kmsg *r, const char *field, uint32_t *v) {
  uint64_t x = 0;
  kl_rc rc = get_varbits(r, field, 5, &x);
  if (rc) return rc;
  /* Kafka reads it into an int, where a larger one turns negative. */
  if (x > INT32_MAX) {
    return kl_err_set(r->err, KL_CORRUPT, "%s: %s varint %llu is out of range", r->what, field,
                      (unsigned long long)x);
  }
  *v = (uint32_t)x;
  return KL_OK;
}

kl_rc kl_kmsg_uvarlong(kl_kmsg *r, const char *field, uint64_t *v) {
  return get_varbits(r, field, 10, v);
}

kl_rc kl_kmsg_varint(kl_kmsg *r, const char *field, int32_t *v) {
  uint64_t x = 0;
  kl_rc rc = get_varbits(r, field, 5, &x);
  if (rc) return rc;
  if (x > UINT32_MAX) {
    return kl_err_set(r->err, KL_CORRUPT, "%s: %s varint %llu is out of range", r->what, field,
                      (unsigned long long)x);
  }
  uint32_t u = (uint32_t)x;
  *v = (int32_t)((u >> 1) ^ (~(u & 1) + 1));
  return KL_OK;
}

kl_rc kl_kmsg_varlong(kl_kmsg *r, const char *field, int64_t *v) {
  uint64_t u = 0;
  kl_rc rc = get_varbits(r, field, 10, &u);
  if (rc == KL_OK) *v = (int64_t)((u >> 1) ^ (~(u & 1) + 1));
  return rc;
}

kl_rc kl_kmsg_raw(kl_kmsg *r, const char *field, size_t n, const uint8_t **s) {
  return take(r, field, n, s);
}

kl_rc kl_kmsg_skip(kl_kmsg *r, const char *field, size_t n) {
  const uint8_t *s = NULL;
  return take(r, field, n, &s);
}

/* A length or count as stored: int16 / int32, or a uvarint less one in the
** compact form; -1 is null. */
static kl_rc get_length(kl_kmsg *r, const char *field, int flags, int wide, int64_t *n) {
  kl_rc rc;
  if (flags & KL_KMSG_COMPACT) {
    uint32_t u = 0;
    rc = kl_kmsg_uvarint(r, field, &u);
    *n = (int64_t)u - 1;
  } else if (wide) {
    int32_t v = 0;
    rc = kl_kmsg_i32(r, field, &v);
    *n = v;
  } else {
    int16_t v = 0;
    rc = kl_kmsg_i16(r, field, &v);
    *n = v;
  }
  if (rc) return rc;
  if (*n == -1 && !(flags & KL_KMSG_NULLABLE)) {
    return kl_err_set(r->err, KL_CORRUPT, "%s: %s has length -1", r->what, field);
  }
  if (*n < -1) {
    return kl_err_set(r->err, KL_CORRUPT, "%s: %s has length %lld", r->what, field,
                      (long long)*n);
  }
  return KL_OK;
}

static kl_rc get_slice(kl_kmsg *r, const char *field, int flags, int wide, kl_kslice *s) {
  int64_t n = 0;
  kl_rc rc = get_length(r, field, flags, wide, &n);
  if (rc) return rc;
  s->p = NULL;
  s->n = -1;
  if (n == -1) return KL_OK;
  if (!wide && n > 0x7fff) { /* what Kafka's readers allow a string */
    return kl_err_set(r->err, KL_CORRUPT, "%s: %s has invalid length %lld", r->what, field,
                      (long long)n);
  }
  rc = take(r, field, (size_t)n, &s->p);
  if (rc == KL_OK) s->n = (int32_t)n;
  return rc;
}

kl_rc kl_kmsg_string(kl_kmsg *r, const char *field, int flags, kl_kslice *s) {
  return get_slice(r, field, flags, 0, s);
}

kl_rc kl_kmsg_bytes(kl_kmsg *r, const char *field, int flags, kl_kslice *s) {
  return get_slice(r, field, flags, 1, s);
}

kl_rc kl_kmsg_array(kl_kmsg *r, const char *field, int flags, int32_t *count) {
  int64_t n = 0;
  kl_rc rc = get_length(r, field, flags, 1, &n);
  if (rc) return rc;
  if (n > (int64_t)kl_kmsg_left(r)) {
    return kl_err_set(r->err, KL_CORRUPT, "%s: %s counts %lld elements, %zu bytes left", r->what,
                      field, (long long)n, kl_kmsg_left(r));
  }
  *count = (int32_t)n;
  return KL_OK;
}

kl_rc kl_kmsg_tags(kl_kmsg *r, uint32_t *count) {
  return kl_kmsg_uvarint(r, "tagged field count", count);
}

kl_rc kl_kmsg_tag(kl_kmsg *r, uint32_t *tag, kl_kmsg *field) {
  uint32_t size = 0;
  const uint8_t *s = NULL;
  kl_rc rc = kl_kmsg_uvarint(r, "tag", tag);
  if (rc == KL_OK) rc = kl_kmsg_uvarint(r, "tagged field size", &size);
  if (rc == KL_OK) rc = take(r, "tagged field", size, &s);
  if (rc == KL_OK) kl_kmsg_init(field, s, size, r->what, r->err);
  return rc;
}

kl_rc kl_kmsg_skip_tags(kl_kmsg *r) {
  uint32_t n = 0, tag;
  kl_kmsg f;
  kl_rc rc = kl_kmsg_tags(r, &n);
  for (uint32_t i = 0; rc == KL_OK && i < n; i++) rc = kl_kmsg_tag(r, &tag, &f);
  return rc;
}

kl_rc kl_kmsg_end(kl_kmsg *r, const char *field) {
  if (kl_kmsg_left(r) == 0) return KL_OK;
  return kl_err_set(r->err, KL_CORRUPT, "%s: %zu bytes after %s", r->what, kl_kmsg_left(r), field);
}
