/*
** avro_encode.c - see avro_encode.h.  The JSON is read with Debian's
** jansson (as the schemas are), whose tree lives while one value is
** encoded.
*/
#include "avro_encode.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro_node.h"
#include "shortest.h"

typedef struct av_enc {
  const kl_env *env;
  kl_buf *o;
  unsigned flags;
  kl_err *err;
  int depth;
  size_t steps;             /* nodes encoded, union trials included */
  int raw;                  /* the root is "bytes", written without its length */
  const char *pname[KL_AVRO_MAX_DEPTH + 2]; /* the path, for messages */
  int64_t pidx[KL_AVRO_MAX_DEPTH + 2];
} av_enc;

static kl_rc fail(av_enc *e, const char *fmt, ...) {
  char path[256], msg[300];
  kl_avro_path(e->pname, e->pidx, e->depth, path, sizeof path);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kl_err_set(e->err, KL_CORRUPT, "%s: %s", path, msg);
}

/* What a JSON value is, for messages: a short excerpt of it. */
static const char *shown(json_t *j, char *buf, size_t n) {
  char t[KL_SHORTEST_MAX];
  switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    case JSON_INTEGER: snprintf(buf, n, "%lld", (long long)json_integer_value(j)); return buf;
    case JSON_REAL:
      if (!isfinite(json_real_value(j))) return "a number";
      kl_shortest(json_real_value(j), 0, t);
      snprintf(buf, n, "%s", t);
      return buf;
    default: snprintf(buf, n, "\"%.60s%s\"", json_string_value(j),
                      json_string_length(j) > 60 ? "..." : "");
      return buf;
  }
}

static kl_rc not_a(av_enc *e, json_t *j, const char *what) {
  char b[80];
  return fail(e, "%s is not %s", shown(j, b, sizeof b), what);
}

static kl_rc put(av_enc *e, const void *p, size_t n) {
  return kl_buf_append(e->env, e->o, p, n);
}

static kl_rc put_long(av_enc *e, int64_t v) {
  uint8_t b[10];
  uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
  size_t k = 0;
  while (u >= 0x80) {
    b[k++] = (uint8_t)(u | 0x80);
    u >>= 7;
  }
  b[k++] = (uint8_t)u;
  return put(e, b, k);
}

static kl_rc put_le(av_enc *e, uint64_t u, size_t n) {
  uint8_t b[8];
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(u >> (8 * i));
  return put(e, b, n);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Hex text (dashes skipped when uuid) into at most cap bytes at out. */
static int from_hex(const char *t, size_t n, int uuid, uint8_t *out, size_t cap, size_t *len) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (uuid && t[i] == '-' && (i == 8 || i == 13 || i == 18 || i == 23)) continue;
    int hi = hexval((unsigned char)t[i]), lo = i + 1 < n ? hexval((unsigned char)t[i + 1]) : -1;
    if (hi < 0 || lo < 0 || k == cap) return 0;
    out[k++] = (uint8_t)(hi << 4 | lo);
    i++;
  }
  *len = k;
  return !uuid || (n == 36 && k == 16);
}

/* ---- decimals ---- */

#define DEC_DIGITS (KL_AVRO_MAX_DECIMAL * 241 / 100) /* decimal digits in that many bytes */

/* The decimal text t as its unscaled digits at scale: *neg and the digits
** (no sign, no point) into dig; 0 with a reason in *why.  A walker of the
** JSON number grammar (complexity above 25): sign, digits, point, exponent,
** each with its own refusal. */
static int unscaled(const char *t, int32_t scale, int *neg, char *dig, size_t *nd,
                    const char **why) {
  size_t k = 0;
  long frac = 0, ex = 0;
  int seen = 0, point = 0;
  *neg = *t == '-';
  if (*t == '-' || *t == '+') t++;
  for (; *t; t++) {
    if (*t == '.' && !point) {
      point = 1;
    } else if (*t >= '0' && *t <= '9') {
      seen = 1;
      if (k == 0 && *t == '0') { /* leading zeros are not digits */
        frac += point;
        continue;
      }
      if (k == DEC_DIGITS) return (*why = "has too many digits"), 0;
      dig[k++] = *t;
      frac += point;
    } else {
      break;
    }
  }
  if (*t == 'e' || *t == 'E') {
    char *end;
    ex = strtol(t + 1, &end, 10);
    if (end == t + 1 || *end || ex > 100000 || ex < -100000) return (*why = "is not a number"), 0;
    t = end;
  }
  if (*t || !seen) return (*why = "is not a decimal number"), 0;
  frac -= ex; /* decimals after the exponent moved the point */
  while (frac > scale && k > 0 && dig[k - 1] == '0') {
    k--;
    frac--;
  }
  if (k == 0) frac = 0;
  if (frac > scale) return (*why = "has more decimals than the scale"), 0;
  for (; frac < scale; frac++) {
    if (k == DEC_DIGITS) return (*why = "has too many digits"), 0;
    if (k > 0) dig[k++] = '0';
  }
  *nd = k;
  return 1;
}

/* Decimal digits as a two's-complement big-endian integer in the fewest
** bytes (size 0) or exactly size bytes; 0 when it does not fit. */
static int twos(int neg, const char *dig, size_t nd, size_t size, uint8_t *out, size_t *len) {
  uint8_t b[KL_AVRO_MAX_DECIMAL + 1];
  size_t n = sizeof b;
  memset(b, 0, n);
  for (size_t i = 0; i < nd; i++) { /* b = b * 10 + digit */
    unsigned carry = (unsigned)(dig[i] - '0');
    for (size_t j = n; j-- > 0;) {
      unsigned v = b[j] * 10u + carry;
      b[j] = (uint8_t)v;
      carry = v >> 8;
    }
    if (carry) return 0;
  }
  if (neg) { /* invert and add one */
    for (size_t j = 0; j < n; j++) b[j] = (uint8_t)~b[j];
    for (size_t j = n; j-- > 0;) {
      if (++b[j] != 0) break;
    }
  }
  size_t s = 0; /* drop bytes that only repeat the sign */
  while (s + 1 < n && ((b[s] == 0 && !(b[s + 1] & 0x80)) || (b[s] == 0xff && (b[s + 1] & 0x80)))) {
    s++;
  }
  size_t k = n - s;
  if (size == 0) size = k;
  if (k > size || size > KL_AVRO_MAX_DECIMAL) return 0;
  memset(out, (b[s] & 0x80) ? 0xff : 0, size - k); /* sign-extended */
  memcpy(out + size - k, b + s, k);
  *len = size;
  return 1;
}

static kl_rc decimal(av_enc *e, const av_node *nd, json_t *j) {
  char text[KL_SHORTEST_MAX + 8];
  const char *t = text;
  if (json_is_string(j)) t = json_string_value(j);
  else if (json_is_integer(j)) snprintf(text, sizeof text, "%lld", (long long)json_integer_value(j));
  else if (json_is_real(j) && isfinite(json_real_value(j))) kl_shortest(json_real_value(j), 0, text);
  else return not_a(e, j, "a decimal number");
  char dig[DEC_DIGITS];
  size_t ndig = 0, len = 0;
  int neg;
  const char *why = NULL;
  char b[80];
  if (!unscaled(t, nd->scale, &neg, dig, &ndig, &why)) {
    return fail(e, "%s %s (scale %d)", shown(j, b, sizeof b), why, (int)nd->scale);
  }
  if (ndig > (size_t)nd->precision) {
    return fail(e, "%s has more digits than the precision %d (scale %d)", shown(j, b, sizeof b),
                (int)nd->precision, (int)nd->scale);
  }
  uint8_t bytes[KL_AVRO_MAX_DECIMAL];
  size_t size = nd->type == AV_FIXED ? (size_t)nd->size : 0;
  if (!twos(neg, dig, ndig, size, bytes, &len)) {
    return size ? fail(e, "%s does not fit in a fixed of %zu bytes", shown(j, b, sizeof b), size)
                : fail(e, "%s takes more than %d bytes", shown(j, b, sizeof b), KL_AVRO_MAX_DECIMAL);
  }
  kl_rc rc = size || e->raw ? KL_OK : put_long(e, (int64_t)len);
  return rc ? rc : put(e, bytes, len);
}

/* ---- the walk ---- */

static kl_rc datum(av_enc *e, const av_node *nd, json_t *j);

static kl_rc bytes_like(av_enc *e, const av_node *nd, json_t *j) {
  if (nd->logical == AV_DECIMAL) return decimal(e, nd, j);
  if (!json_is_string(j)) return not_a(e, j, nd->logical == AV_UUID ? "a uuid" : "hex text");
  const char *t = json_string_value(j);
  size_t n = json_string_length(j), len = 0;
  if (nd->type == AV_BYTES) {
    kl_rc rc = KL_OK;
    uint8_t *tmp = kl_malloc(e->env, n / 2 + 1);
    if (!tmp) return KL_NOMEM;
    int ok = n % 2 == 0 && from_hex(t, n, 0, tmp, n / 2 + 1, &len);
    if (ok && (e->raw || (rc = put_long(e, (int64_t)len)) == KL_OK)) rc = put(e, tmp, len);
    kl_free(e->env, tmp);
    return ok ? rc : not_a(e, j, "hex text");
  }
  uint8_t f[16];
  if (nd->logical == AV_UUID) {
    return from_hex(t, n, 1, f, 16, &len) ? put(e, f, 16) : not_a(e, j, "a uuid");
  }
  if ((size_t)nd->size * 2 != n) {
    return fail(e, "a fixed of %lld bytes takes %lld hex digits, not %zu", (long long)nd->size,
                (long long)nd->size * 2, n);
  }
  kl_rc rc = kl_buf_reserve(e->env, e->o, e->o->len + (size_t)nd->size);
  if (rc) return rc;
  if (!from_hex(t, n, 0, e->o->p + e->o->len, (size_t)nd->size, &len)) return not_a(e, j, "hex text");
  e->o->len += len;
  return KL_OK;
}

static kl_rc real(av_enc *e, const av_node *nd, json_t *j) {
  double v;
  const char *s = json_string_value(j);
  if (json_is_number(j)) v = json_number_value(j);
  else if (s && strcmp(s, "NaN") == 0) v = NAN;
  else if (s && strcmp(s, "Infinity") == 0) v = INFINITY;
  else if (s && strcmp(s, "-Infinity") == 0) v = -INFINITY;
  else return not_a(e, j, nd->type == AV_FLOAT ? "a float" : "a double");
  if (nd->type == AV_DOUBLE) {
    uint64_t u;
    memcpy(&u, &v, 8);
    return put_le(e, u, 8);
  }
  if (isfinite(v) && fabs(v) > FLT_MAX) return not_a(e, j, "in a float's range");
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  return put_le(e, u, 4);
}

static kl_rc scalar(av_enc *e, const av_node *nd, json_t *j) {
  switch (nd->type) {
    case AV_NULL: return json_is_null(j) ? KL_OK : not_a(e, j, "null");
    case AV_BOOLEAN:
      return json_is_boolean(j) ? put(e, json_is_true(j) ? "\1" : "\0", 1)
                                : not_a(e, j, "a boolean");
    case AV_INT:
      if (!json_is_integer(j) || json_integer_value(j) < INT32_MIN ||
          json_integer_value(j) > INT32_MAX) {
        return not_a(e, j, "an int");
      }
      return put_long(e, json_integer_value(j));
    case AV_LONG: return json_is_integer(j) ? put_long(e, json_integer_value(j))
                                            : not_a(e, j, "a long");
    case AV_FLOAT: case AV_DOUBLE: return real(e, nd, j);
    case AV_STRING: {
      if (!json_is_string(j)) return not_a(e, j, "a string");
      size_t n = json_string_length(j);
      kl_rc rc = put_long(e, (int64_t)n);
      return rc ? rc : put(e, json_string_value(j), n);
    }
    case AV_ENUM: {
      const char *s = json_string_value(j);
      for (size_t i = 0; s && i < nd->n; i++) {
        if (strcmp(nd->names[i], s) == 0) return put_long(e, (int64_t)i);
      }
      char b[80];
      return fail(e, "%s is not a symbol of enum %s", shown(j, b, sizeof b), nd->name);
    }
    default: return bytes_like(e, nd, j); /* bytes, fixed */
  }
}

/* A field's member is missing: null when the field may be null. */
static int null_branch(const av_node *nd) {
  for (size_t i = 0; nd->type == AV_UNION && i < nd->n; i++) {
    if (nd->kids[i]->type == AV_NULL) return (int)i;
  }
  return -1;
}

static kl_rc record(av_enc *e, const av_node *nd, json_t *j) {
  if (!json_is_object(j)) return not_a(e, j, "an object (a record)");
  size_t found = 0;
  kl_rc rc = KL_OK;
  for (size_t i = 0; rc == KL_OK && i < nd->n; i++) {
    json_t *m = json_object_get(j, nd->names[i]);
    e->pname[e->depth] = nd->names[i];
    if (m) {
      found++;
      rc = datum(e, nd->kids[i], m);
    } else if (null_branch(nd->kids[i]) >= 0) {
      rc = put_long(e, null_branch(nd->kids[i]));
    } else {
      rc = fail(e, "missing, and the field of record %s is not nullable", nd->name);
    }
  }
  if (rc || found == json_object_size(j)) return rc;
  const char *k;
  json_t *v;
  e->pname[e->depth] = NULL;
  json_object_foreach(j, k, v) {
    size_t i = 0;
    while (i < nd->n && strcmp(nd->names[i], k) != 0) i++;
    if (i == nd->n) return fail(e, "\"%.100s\" is not a field of record %s", k, nd->name);
  }
  return KL_OK;
}

static kl_rc blocks(av_enc *e, const av_node *nd, json_t *j) {
  int is_map = nd->type == AV_MAP;
  if (is_map ? !json_is_object(j) : !json_is_array(j)) {
    return not_a(e, j, is_map ? "an object (a map)" : "an array");
  }
  size_t n = is_map ? json_object_size(j) : json_array_size(j);
  kl_rc rc = n ? put_long(e, (int64_t)n) : KL_OK;
  if (is_map) {
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
      size_t kn = strlen(k);
      e->pname[e->depth] = k;
      if (rc || (rc = put_long(e, (int64_t)kn)) || (rc = put(e, k, kn)) ||
          (rc = datum(e, nd->kids[0], v))) {
        return rc;
      }
    }
  } else {
    for (size_t i = 0; rc == KL_OK && i < n; i++) {
      e->pidx[e->depth] = (int64_t)i;
      rc = datum(e, nd->kids[0], json_array_get(j, i));
    }
  }
  e->pname[e->depth] = NULL;
  e->pidx[e->depth] = -1;
  return rc ? rc : put(e, "", 1); /* the count of 0 that ends the blocks */
}

static const char *branch_name(const av_node *nd) {
  return nd->name ? nd->name : kl_avro_type_names[nd->type];
}

/* Branch b of union nd, tried: on failure the output is as it was and the
** error is in *why. */
static kl_rc try_branch(av_enc *e, const av_node *nd, size_t b, json_t *j, kl_err *why) {
  size_t len = e->o->len;
  kl_err *outer = e->err;
  e->err = why;
  kl_rc rc = put_long(e, (int64_t)b);
  if (rc == KL_OK) rc = datum(e, nd->kids[b], j);
  e->err = outer;
  if (rc) e->o->len = len;
  return rc;
}

static kl_rc branch(av_enc *e, const av_node *nd, json_t *j) {
  if (json_is_null(j) && null_branch(nd) >= 0) return put_long(e, null_branch(nd));
  if (e->flags & KL_AVRO_WRAP_UNIONS) {
    const char *k = json_is_object(j) && json_object_size(j) == 1 ? json_object_iter_key(
                                                                        json_object_iter(j))
                                                                  : NULL;
    for (size_t b = 0; k && b < nd->n; b++) {
      if (strcmp(branch_name(nd->kids[b]), k) == 0) {
        kl_rc rc = put_long(e, (int64_t)b);
        return rc ? rc : datum(e, nd->kids[b], json_object_get(j, k));
      }
    }
    return not_a(e, j, "null or {\"<branch type name>\": value} of the union");
  }
  kl_err first, why;
  kl_err_clear(&first);
  size_t tried = 0;
  for (size_t b = 0; b < nd->n; b++) {
    if (nd->kids[b]->type == AV_NULL) continue;
    kl_err_clear(&why);
    kl_rc rc = try_branch(e, nd, b, j, &why);
    if (rc != KL_CORRUPT) return rc;
    if (e->steps > KL_AVRO_MAX_ENCODE_STEPS) return kl_err_set(e->err, rc, "%s", why.msg);
    if (tried++ == 0) first = why;
  }
  if (tried == 1) return kl_err_set(e->err, KL_CORRUPT, "%s", first.msg);
  char b[80];
  return fail(e, "%s is none of the union's branches", shown(j, b, sizeof b));
}

static kl_rc datum(av_enc *e, const av_node *nd, json_t *j) {
  if (++e->steps > KL_AVRO_MAX_ENCODE_STEPS) {
    return fail(e, "more than %d steps to encode (unions within unions)",
                KL_AVRO_MAX_ENCODE_STEPS);
  }
  if (nd->type < AV_RECORD || nd->type == AV_ENUM || nd->type == AV_FIXED) return scalar(e, nd, j);
  if (e->depth >= KL_AVRO_MAX_DEPTH) return fail(e, "nested deeper than %d", KL_AVRO_MAX_DEPTH);
  e->depth++;
  e->pname[e->depth] = NULL;
  e->pidx[e->depth] = -1;
  kl_rc rc = nd->type == AV_RECORD  ? record(e, nd, j)
             : nd->type == AV_UNION ? branch(e, nd, j)
                                    : blocks(e, nd, j);
  e->depth--;
  return rc;
}

kl_rc kl_avro_encode(const kl_avro_schema *s, const char *json, size_t n, unsigned flags,
                     kl_buf *out, kl_err *err) {
  json_error_t je;
  json_t *j = json_loadb(json, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
  if (!j) return kl_err_set(err, KL_CORRUPT, "not JSON: %s (at character %d)", je.text,
                            je.position);
  av_enc e;
  memset(&e, 0, sizeof e);
  e.env = s->env;
  e.o = out;
  e.flags = flags;
  e.err = err;
  e.raw = (flags & KL_AVRO_RAW_BYTES) && s->root->type == AV_BYTES;
  kl_rc rc = datum(&e, s->root, j);
  json_decref(j);
  if (rc == KL_NOMEM) kl_err_set(err, rc, "out of memory");
  return rc;
}
