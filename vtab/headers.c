/*
** headers.c - see headers.h.
*/
#include "headers.h"

#include <stdio.h>
#include <string.h>

#include "sqlenv.h"
#include "utf8.h"

/* ---- to JSON ---- */

/* Append bytes as a JSON string when they are UTF-8, else {"hex":"..."},
** so that every header survives the trip through JSON unchanged. */
static kl_rc json_bytes(kl_buf *o, const uint8_t *p, int32_t n) {
  static const char hex[] = "0123456789abcdef";
  kl_rc rc;
  if (n < 0) return kl_buf_append(kl_sqlite_env(), o, "null", 4);
  if (!kl_utf8_valid(p, (size_t)n)) {
    if ((rc = kl_buf_reserve(kl_sqlite_env(), o, o->len + 12 + 2 * (size_t)n))) return rc;
    memcpy(o->p + o->len, "{\"hex\":\"", 8);
    o->len += 8;
    for (int32_t i = 0; i < n; i++) {
      o->p[o->len++] = (uint8_t)hex[p[i] >> 4];
      o->p[o->len++] = (uint8_t)hex[p[i] & 15];
    }
    return kl_buf_append(kl_sqlite_env(), o, "\"}", 2);
  }
  if ((rc = kl_buf_reserve(kl_sqlite_env(), o, o->len + 2 + 6 * (size_t)n))) return rc;
  o->p[o->len++] = '"';
  for (int32_t i = 0; i < n; i++) {
    uint8_t ch = p[i];
    if (ch == '"' || ch == '\\') {
      o->p[o->len++] = '\\';
      o->p[o->len++] = ch;
    } else if (ch < 0x20) {
      o->len += (size_t)sprintf((char *)o->p + o->len, "\\u%04x", ch);
    } else {
      o->p[o->len++] = ch;
    }
  }
  o->p[o->len++] = '"';
  return KL_OK;
}

kl_rc kl_headers_json(kl_buf *o, const kl_record *r) {
  o->len = 0;
  kl_rc rc = kl_buf_append(kl_sqlite_env(), o, "[", 1);
  const uint8_t *p = r->headers, *end = r->headers ? r->headers + r->headers_len : NULL;
  kl_header h;
  int first = 1;
  while (rc == KL_OK && r->headers && kl_header_next(&p, end, &h) == KL_OK) {
    if (!first) rc = kl_buf_append(kl_sqlite_env(), o, ",", 1);
    first = 0;
    if (rc == KL_OK) rc = kl_buf_append(kl_sqlite_env(), o, "[", 1);
    if (rc == KL_OK) rc = json_bytes(o, h.name, h.name_len);
    if (rc == KL_OK) rc = kl_buf_append(kl_sqlite_env(), o, ",", 1);
    if (rc == KL_OK) rc = json_bytes(o, h.value, h.value_len);
    if (rc == KL_OK) rc = kl_buf_append(kl_sqlite_env(), o, "]", 1);
  }
  if (rc == KL_OK) rc = kl_buf_append(kl_sqlite_env(), o, "]", 1);
  return rc;
}

/* ---- from JSON ---- */

#define SHAPE "headers must be a JSON array of [name, value] pairs, such as " \
              "'[[\"trace\",\"ab\"],[\"bin\",{\"hex\":\"00ff\"}],[\"none\",null]]'"

typedef struct jp {
  const char *p, *end, *start;
} jp;

static void ws(jp *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

static int hexv(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int hex4(const char *p, const char *end, unsigned *u) {
  if (end - p < 4) return 0;
  *u = 0;
  for (int i = 0; i < 4; i++) {
    int v = hexv((unsigned char)p[i]);
    if (v < 0) return 0;
    *u = *u << 4 | (unsigned)v;
  }
  return 1;
}

/* A JSON string at j->p (at its quote): its bytes appended to out when out
** is not NULL (escapes decoded, \u0000 a NUL byte, a surrogate pair one
** code point).  0 when it is not a valid string. */
static int jstring(jp *j, kl_buf *out, kl_rc *rc) {
  if (j->p >= j->end || *j->p != '"') return 0;
  j->p++;
  while (j->p < j->end && *j->p != '"') {
    unsigned char c = (unsigned char)*j->p;
    uint8_t enc[4];
    size_t k = 1;
    if (c < 0x20) return 0;
    if (c != '\\') {
      enc[0] = c;
      j->p++;
    } else {
      if (j->end - j->p < 2) return 0;
      char e = j->p[1];
      j->p += 2;
      unsigned u;
      switch (e) {
        case '"': enc[0] = '"'; break;
        case '\\': enc[0] = '\\'; break;
        case '/': enc[0] = '/'; break;
        case 'b': enc[0] = '\b'; break;
        case 'f': enc[0] = '\f'; break;
        case 'n': enc[0] = '\n'; break;
        case 'r': enc[0] = '\r'; break;
        case 't': enc[0] = '\t'; break;
        case 'u':
          if (!hex4(j->p, j->end, &u)) return 0;
          j->p += 4;
          if (u >= 0xd800 && u < 0xdc00 && j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') {
            unsigned lo;
            if (hex4(j->p + 2, j->end, &lo) && lo >= 0xdc00 && lo < 0xe000) {
              u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
              j->p += 6;
            }
          }
          if (u < 0x80) {
            enc[0] = (uint8_t)u;
          } else if (u < 0x800) {
            enc[0] = (uint8_t)(0xc0 | u >> 6), enc[1] = (uint8_t)(0x80 | (u & 0x3f)), k = 2;
          } else if (u < 0x10000) { /* a lone surrogate too, as SQLite keeps it */
            enc[0] = (uint8_t)(0xe0 | u >> 12), enc[1] = (uint8_t)(0x80 | ((u >> 6) & 0x3f));
            enc[2] = (uint8_t)(0x80 | (u & 0x3f)), k = 3;
          } else {
            enc[0] = (uint8_t)(0xf0 | u >> 18), enc[1] = (uint8_t)(0x80 | ((u >> 12) & 0x3f));
            enc[2] = (uint8_t)(0x80 | ((u >> 6) & 0x3f)), enc[3] = (uint8_t)(0x80 | (u & 0x3f));
            k = 4;
          }
          break;
        default: return 0;
      }
    }
    if (out && *rc == KL_OK) *rc = kl_buf_append(kl_sqlite_env(), out, enc, k);
  }
  if (j->p >= j->end) return 0;
  j->p++;
  return 1;
}

static int jvalue(jp *j, int depth);

/* An array or object at j->p (at its bracket), passed over; 0 when it is
** not one.  Apart from jvalue so that each of JSON's forms reads alone. */
static int jcontainer(jp *j, int depth) {
  char c = *j->p, close = c == '[' ? ']' : '}';
  kl_rc rc = KL_OK;
  j->p++;
  ws(j);
  if (j->p < j->end && *j->p == close) {
    j->p++;
    return 1;
  }
  for (;;) {
    if (c == '{') {
      ws(j);
      if (!jstring(j, NULL, &rc)) return 0;
      ws(j);
      if (j->p >= j->end || *j->p != ':') return 0;
      j->p++;
    }
    if (!jvalue(j, depth + 1)) return 0;
    ws(j);
    if (j->p >= j->end) return 0;
    if (*j->p == close) {
      j->p++;
      return 1;
    }
    if (*j->p != ',') return 0;
    j->p++;
  }
}

/* true, false or null at j->p, passed over; 0 when none is there. */
static int jword(jp *j) {
  static const char *const words[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(words[i]);
    if ((size_t)(j->end - j->p) >= n && memcmp(j->p, words[i], n) == 0) {
      j->p += n;
      return 1;
    }
  }
  return 0;
}

/* One or more digits at j->p, passed over; 0 when none is there (JSON
** wants one after '.' and after an exponent's sign). */
static int jdigits(jp *j) {
  if (j->p >= j->end || *j->p < '0' || *j->p > '9') return 0;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  return 1;
}

/* A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int jnumber(jp *j) {
  if (j->p < j->end && *j->p == '-') j->p++;
  if (j->p >= j->end || *j->p < '0' || *j->p > '9') return 0;
  if (*j->p == '0') j->p++;
  else jdigits(j);
  if (j->p < j->end && *j->p == '.') {
    j->p++;
    if (!jdigits(j)) return 0;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (!jdigits(j)) return 0;
  }
  return 1;
}

/* Any JSON value at j->p, passed over; 0 when it is not one. */
static int jvalue(jp *j, int depth) {
  ws(j);
  if (j->p >= j->end || depth > 200) return 0;
  char c = *j->p;
  kl_rc rc = KL_OK;
  if (c == '"') return jstring(j, NULL, &rc);
  if (c == '[' || c == '{') return jcontainer(j, depth);
  return jword(j) || jnumber(j);
}

/* What the JSON value at j->p is, for messages. */
static const char *kind(const jp *j) {
  switch (j->p < j->end ? *j->p : 0) {
    case '"': return "a string";
    case '[': return "an array";
    case '{': return "an object";
    case 't': case 'f': return "a boolean";
    case 'n': return "null";
    default: return "a number";
  }
}

/* One side of a pair (valid JSON, checked before): a string, null (values
** only) or {"hex":"..."}, its bytes appended to bytes; *len -1 for null. */
static kl_rc part(jp *j, int idx, int is_name, kl_buf *bytes, int32_t *len, kl_err *err) {
  ws(j);
  size_t at = bytes->len;
  kl_rc rc = KL_OK;
  const char *what = is_name ? "name" : "value";
  if (*j->p == '"') {
    jstring(j, bytes, &rc);
    if (rc) return kl_err_set(err, rc, "out of memory reading headers");
  } else if (*j->p == 'n' && !is_name) {
    j->p += 4;
    *len = -1;
    return KL_OK;
  } else if (*j->p == '{') {
    /* exactly {"hex":"<even number of hex digits>"} */
    jp k = *j;
    k.p++;
    ws(&k);
    const char *key = k.p;
    kl_buf scratch = {0};
    int ok = jstring(&k, NULL, &rc) && k.p - key == 5 && memcmp(key, "\"hex\"", 5) == 0;
    if (ok) {
      ws(&k);
      k.p++; /* ':' */
      ws(&k);
      ok = *k.p == '"' && jstring(&k, &scratch, &rc) && rc == KL_OK && scratch.len % 2 == 0;
      for (size_t i = 0; ok && i < scratch.len; i++) ok = hexv(scratch.p[i]) >= 0;
      ws(&k);
      ok = ok && *k.p == '}';
    }
    if (ok) {
      rc = kl_buf_reserve(kl_sqlite_env(), bytes, at + scratch.len / 2);
      for (size_t i = 0; rc == KL_OK && i < scratch.len; i += 2) {
        bytes->p[bytes->len++] = (uint8_t)(hexv(scratch.p[i]) << 4 | hexv(scratch.p[i + 1]));
      }
      j->p = k.p + 1;
    }
    kl_buf_free(kl_sqlite_env(), &scratch);
    if (rc) return kl_err_set(err, rc, "out of memory reading headers");
    if (!ok) {
      return kl_err_set(err, KL_CORRUPT, "headers[%d]: the %s object must be "
                        "{\"hex\":\"<even number of hex digits>\"}", idx, what);
    }
  } else {
    return kl_err_set(err, KL_CORRUPT, "headers[%d]: the %s is %s: it must be a string, %s"
                      "{\"hex\":\"<even number of hex digits>\"}", idx, what, kind(j),
                      is_name ? "or " : "null or ");
  }
  if (bytes->len - at > INT32_MAX) {
    return kl_err_set(err, KL_CORRUPT, "headers[%d]: the %s is longer than Kafka's INT32", idx, what);
  }
  *len = (int32_t)(bytes->len - at);
  return KL_OK;
}

kl_rc kl_headers_parse(const char *json, size_t n, kl_buf *bytes, kl_buf *hdrs, int32_t *count,
                       kl_err *err) {
  jp j = {json, json + n, json};
  *count = 0;
  bytes->len = hdrs->len = 0;
  if (!jvalue(&j, 0) || (ws(&j), j.p != j.end)) {
    return kl_err_set(err, KL_CORRUPT, "headers are not valid JSON (at byte %zu): %s",
                      (size_t)(j.p - json), SHAPE);
  }
  j.p = json;
  ws(&j);
  if (*j.p != '[') return kl_err_set(err, KL_CORRUPT, "headers are %s: %s", kind(&j), SHAPE);
  j.p++;
  ws(&j);
  int32_t k = 0;
  while (*j.p != ']') {
    if (k == INT32_MAX) return kl_err_set(err, KL_CORRUPT, "more headers than Kafka's INT32");
    if (*j.p != '[') {
      return kl_err_set(err, KL_CORRUPT, "headers[%d] is %s, not a [name, value] pair: %s", k,
                        kind(&j), SHAPE);
    }
    jp pair = j;
    int elems = 0;
    pair.p++;
    ws(&pair);
    while (*pair.p != ']') {
      jvalue(&pair, 0);
      elems++;
      ws(&pair);
      if (*pair.p == ',') pair.p++;
    }
    if (elems != 2) {
      return kl_err_set(err, KL_CORRUPT, "headers[%d] has %d element%s, not a [name, value] pair: "
                        "%s", k, elems, elems == 1 ? "" : "s", SHAPE);
    }
    kl_header h;
    size_t name_at = bytes->len;
    j.p++;
    kl_rc rc = part(&j, k, 1, bytes, &h.name_len, err);
    if (rc) return rc;
    size_t value_at = bytes->len;
    ws(&j);
    j.p++; /* ',' */
    if ((rc = part(&j, k, 0, bytes, &h.value_len, err)) != KL_OK) return rc;
    ws(&j);
    j.p++; /* ']' */
    /* Offsets for now: bytes may still move. */
    h.name = (const uint8_t *)(uintptr_t)name_at;
    h.value = (const uint8_t *)(uintptr_t)value_at;
    if (kl_buf_append(kl_sqlite_env(), hdrs, &h, sizeof h)) {
      return kl_err_set(err, KL_NOMEM, "out of memory reading headers");
    }
    k++;
    ws(&j);
    if (*j.p == ',') j.p++;
    ws(&j);
  }
  kl_header *hs = (kl_header *)(void *)hdrs->p;
  for (int32_t i = 0; i < k; i++) {
    hs[i].name = bytes->p ? bytes->p + (uintptr_t)hs[i].name : (const uint8_t *)"";
    hs[i].value = hs[i].value_len < 0 ? NULL
                  : bytes->p          ? bytes->p + (uintptr_t)hs[i].value
                                      : (const uint8_t *)"";
  }
  *count = k;
  return KL_OK;
}
