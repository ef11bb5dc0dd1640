/*
** protobuf_encode.cc - JSON text to Confluent Protobuf payloads
** (decode/protobuf_encode.h).
**
** Why written here: libprotobuf's JSON parser (JsonStringToMessage) reads
** the proto3 JSON mapping, not the JSON the decoder writes (it wants bytes
** as base64 and Timestamp as RFC 3339 text), and would build a
** DynamicMessage per value only to serialise it.  Of that mapping, the
** names are kept: a member is a field's name as written in the .proto or
** its JSON name (lowerCamelCase).
** Jansson refuses integers beyond int64 (a uint64 above 2^63) and numbers
** beyond a double, which are valid JSON and valid values.  So a small
** reader walks the JSON text against the descriptors (the decoder's, in
** libprotobuf's pool) and writes the wire bytes as it goes, which lets an
** error name the member where it is found.  A length-delimited value is
** written after room for its longest length varint, then moved down to
** the length's real size.
**
** Allocation: the output and the scratch buffers through the schema's
** kl_env; libprotobuf's lookups take std::string keys (operator new), and
** a std::bad_alloc is KL_NOMEM.  Nothing else here throws.
*/
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

extern "C" {
#include "protobuf_encode.h"
#include "utf8.h"
}

namespace gp = google::protobuf;
using FD = gp::FieldDescriptor;

namespace {

struct frame {
  const char *name;  /* a field's name, or a map key as written; NULL: none */
  size_t n;
  long idx;          /* an array element's index, or -1 */
};

struct enc {
  const kl_env *env;
  kl_buf *o;
  kl_err *err;
  const char *base, *p, *end;  /* the JSON text, and where the reader is */
  kl_buf str;                  /* the string read last, unescaped */
  kl_buf seen;                 /* per open message, a byte per field: SEEN_* bits */
  std::string key;             /* a name to look up */
  int mdepth;                  /* messages open */
  int depth;                   /* frames in path */
  frame path[2 * KL_PROTO_MAX_DEPTH + 4];
};

/* What a message's member has said of its field so far (a byte per field). */
enum {
  SEEN_NULL = 1,       /* given as null: not set */
  SEEN_VALUE = 2,      /* given a value */
  SEEN_JSON_NAME = 4   /* named by its JSON name, not the .proto's */
};

/* A JSON value as read: 's' a string (unescaped, in enc.str), 'n' a number
** (its text), 't', 'f', 'z' (null); '{' and '[' are not read. */
struct tok {
  char kind;
  const char *t;
  size_t n;
};

}  // namespace

static kl_rc fail(enc &e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* An error at the member being read: "$.items[1].qty: ...". */
static kl_rc fail(enc &e, const char *fmt, ...) {
  char path[320], m[400];
  size_t k = (size_t)snprintf(path, sizeof path, "$");
  for (int i = 0; i < e.depth && k < 300; i++) {
    const frame &f = e.path[i];
    if (f.name)
      k += (size_t)snprintf(path + k, sizeof path - k, ".%.*s", (int)std::min<size_t>(f.n, 100),
                            f.name);
    if (f.idx >= 0 && k < 300) k += (size_t)snprintf(path + k, sizeof path - k, "[%ld]", f.idx);
  }
  if (k >= 300) snprintf(path + 296, sizeof path - 296, "...");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  return kl_err_set(e.err, KL_CORRUPT, "%s: %s", path, m);
}

static kl_rc syntax(enc &e, const char *what) {
  return kl_err_set(e.err, KL_CORRUPT, "not JSON: %s at character %zu", what,
                    (size_t)(e.p - e.base));
}

/* ---- writing ---- */

static kl_rc put(enc &e, const void *p, size_t n) {
  return kl_buf_append(e.env, e.o, p, n) ? kl_err_set(e.err, KL_NOMEM, "out of memory") : KL_OK;
}

static size_t varint_to(uint8_t *b, uint64_t v) {
  size_t k = 0;
  while (v >= 0x80) {
    b[k++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  b[k++] = (uint8_t)v;
  return k;
}

static kl_rc put_varint(enc &e, uint64_t v) {
  uint8_t b[10];
  return put(e, b, varint_to(b, v));
}

static kl_rc put_tag(enc &e, int number, int wt) {
  return put_varint(e, (uint64_t)(uint32_t)number << 3 | (uint64_t)wt);
}

static int wire_of(FD::Type t) {
  switch (t) {
    case FD::TYPE_DOUBLE: case FD::TYPE_FIXED64: case FD::TYPE_SFIXED64: return 1;
    case FD::TYPE_FLOAT: case FD::TYPE_FIXED32: case FD::TYPE_SFIXED32: return 5;
    case FD::TYPE_STRING: case FD::TYPE_BYTES: case FD::TYPE_MESSAGE: return 2;
    case FD::TYPE_GROUP: return 3;
    default: return 0;
  }
}

#define LEN_ROOM 5 /* a length below 2^35: the values SQLite holds are below 2^31 */

/* Room for a length; OUT: *at, where it goes (see patch_len). */
static kl_rc reserve_len(enc &e, size_t *at) {
  *at = e.o->len;
  static const uint8_t room[LEN_ROOM] = {0};
  return put(e, room, LEN_ROOM);
}

/* The bytes written since reserve_len(at) get their length, moved down. */
static void patch_len(enc &e, size_t at) {
  size_t n = e.o->len - at - LEN_ROOM;
  uint8_t b[10];
  size_t k = varint_to(b, n);
  memcpy(e.o->p + at, b, k);
  memmove(e.o->p + at + k, e.o->p + at + LEN_ROOM, n);
  e.o->len -= LEN_ROOM - k;
}

/* ---- reading JSON ---- */

static int peek(enc &e) {
  while (e.p < e.end && (*e.p == ' ' || *e.p == '\t' || *e.p == '\n' || *e.p == '\r')) e.p++;
  return e.p < e.end ? (unsigned char)*e.p : -1;
}

static bool lit(enc &e, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(e.end - e.p) < n || memcmp(e.p, w, n) != 0) return false;
  e.p += n;
  return true;
}

static bool digit(const char *p, const char *end) { return p < end && *p >= '0' && *p <= '9'; }

/* The length of the JSON number at s, or 0 when none starts there. */
static size_t num_len(const char *s, const char *end) {
  const char *q = s;
  if (q < end && *q == '-') q++;
  if (!digit(q, end)) return 0;
  if (*q == '0') q++;
  else while (digit(q, end)) q++;
  if (q < end && *q == '.') {
    if (!digit(++q, end)) return 0;
    while (digit(q, end)) q++;
  }
  if (q < end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < end && (*q == '+' || *q == '-')) q++;
    if (!digit(q, end)) return 0;
    while (digit(q, end)) q++;
  }
  return (size_t)(q - s);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static kl_rc put_cp(enc &e, kl_buf *b, uint32_t cp) {
  uint8_t u[4];
  size_t k;
  if (cp < 0x80) {
    u[0] = (uint8_t)cp, k = 1;
  } else if (cp < 0x800) {
    u[0] = (uint8_t)(0xc0 | cp >> 6), u[1] = (uint8_t)(0x80 | (cp & 0x3f)), k = 2;
  } else if (cp < 0x10000) {
    u[0] = (uint8_t)(0xe0 | cp >> 12), u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
    u[2] = (uint8_t)(0x80 | (cp & 0x3f)), k = 3;
  } else {
    u[0] = (uint8_t)(0xf0 | cp >> 18), u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
    u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (uint8_t)(0x80 | (cp & 0x3f)), k = 4;
  }
  return kl_buf_append(e.env, b, u, k) ? kl_err_set(e.err, KL_NOMEM, "out of memory") : KL_OK;
}

static bool hex4(enc &e, uint32_t *cp) {
  if (e.end - e.p < 4) return false;
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval((unsigned char)e.p[i]);
    if (h < 0) return false;
    v = v << 4 | (uint32_t)h;
  }
  e.p += 4;
  *cp = v;
  return true;
}

/* One escape after its backslash, unescaped into b. */
static kl_rc escape(enc &e, kl_buf *b) {
  if (e.p >= e.end) return syntax(e, "a string does not end");
  char x = *e.p++;
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  const char *w = strchr(from, x);
  if (x && w) return put_cp(e, b, (uint32_t)(unsigned char)to[w - from]);
  uint32_t cp, lo;
  if (x != 'u' || !hex4(e, &cp)) return syntax(e, "a bad escape in a string");
  if (cp >= 0xd800 && cp < 0xdc00 && e.end - e.p >= 6 && e.p[0] == '\\' && e.p[1] == 'u') {
    const char *back = e.p;
    e.p += 2;
    if (hex4(e, &lo) && lo >= 0xdc00 && lo < 0xe000)
      return put_cp(e, b, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
    e.p = back;
  }
  return put_cp(e, b, cp); /* a lone surrogate: refused as not UTF-8 below */
}

/* The string at e.p (at its quote), unescaped into b. */
static kl_rc read_string(enc &e, kl_buf *b) {
  b->len = 0;
  e.p++;
  kl_rc rc = KL_OK;
  while (rc == KL_OK) {
    if (e.p >= e.end) return syntax(e, "a string does not end");
    unsigned char c = (unsigned char)*e.p;
    if (c == '"') break;
    if (c < 0x20) return syntax(e, "a control character in a string");
    if (c == '\\') {
      e.p++;
      rc = escape(e, b);
      continue;
    }
    const char *q = e.p;
    while (q < e.end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
    if (kl_buf_append(e.env, b, e.p, (size_t)(q - e.p)))
      return kl_err_set(e.err, KL_NOMEM, "out of memory");
    e.p = q;
  }
  if (rc) return rc;
  e.p++;
  if (b->len && !kl_utf8_valid(b->p, b->len))
    return syntax(e, "a string that is not UTF-8, ending");
  return KL_OK;
}

/* A scalar value at e.p into t; '{' and '[' are left unread. */
static kl_rc read_tok(enc &e, tok *t) {
  int c = peek(e);
  t->t = e.p;
  t->n = 0;
  if (c == '"') {
    kl_rc rc = read_string(e, &e.str);
    t->kind = 's';
    t->t = e.str.len ? (const char *)e.str.p : "";
    t->n = e.str.len;
    return rc;
  }
  if (c == '{' || c == '[') return (t->kind = (char)c), KL_OK;
  if ((t->n = num_len(e.p, e.end)) > 0) {
    t->kind = 'n';
    e.p += t->n;
    return KL_OK;
  }
  t->kind = lit(e, "true") ? 't' : lit(e, "false") ? 'f' : lit(e, "null") ? 'z' : 0;
  return t->kind ? KL_OK : syntax(e, "a value expected");
}

/* What a value is, for messages. */
static const char *shown(const tok &t, char *b, size_t n) {
  switch (t.kind) {
    case '{': return "an object";
    case '[': return "an array";
    case 't': return "true";
    case 'f': return "false";
    case 'z': return "null";
    case 'n':
      snprintf(b, n, "%.*s%s", (int)std::min<size_t>(t.n, 60), t.t, t.n > 60 ? "..." : "");
      return b;
    default:
      snprintf(b, n, "\"%.*s%s\"", (int)std::min<size_t>(t.n, 60), t.t, t.n > 60 ? "..." : "");
      return b;
  }
}

static kl_rc expect(enc &e, char c, const char *what) {
  if (peek(e) != c) return syntax(e, what);
  e.p++;
  return KL_OK;
}

/* ---- scalars ---- */

/* The exponent of a JSON number whose text goes on at t ("e-5..."; 0 when
** t is its end), capped far beyond any bound that refuses it. */
static long exponent(const char *t, const char *end) {
  if (t >= end) return 0;
  bool neg = t[1] == '-';
  long ex = 0;
  for (t += t[1] == '-' || t[1] == '+' ? 2 : 1; digit(t, end); t++)
    if (ex < 100000) ex = ex * 10 + (*t - '0');
  return neg ? -ex : ex;
}

/* The integer the number text t (n bytes, JSON's grammar) stands for, as a
** sign and a magnitude; NULL, or why it is none. */
static const char *integer(const char *t, size_t n, bool *neg, uint64_t *mag) {
  const char *end = t + n, *ip, *ie, *fp, *fe;
  *neg = *t == '-';
  if (*neg) t++;
  for (ip = t; digit(t, end); t++) {}
  ie = fp = fe = t;
  if (t < end && *t == '.') {
    for (fp = ++t; digit(t, end); t++) {}
    fe = t;
  }
  long ex = exponent(t, end);
  long point = (long)(ie - ip) + ex, k = 0; /* digits before the point */
  uint64_t m = 0;
  for (const char *d = ip; d < fe; d++) {
    if (d == ie) d = fp;
    if (d >= fe) break;
    unsigned v = (unsigned)(*d - '0');
    if (k++ >= point) {
      if (v) return "is not an integer:";
    } else if (m > (UINT64_MAX - v) / 10) {
      return "is out of range for";
    } else {
      m = m * 10 + v;
    }
  }
  for (; k < point && m; k++) {
    if (m > UINT64_MAX / 10) return "is out of range for";
    m *= 10;
  }
  *mag = m;
  return nullptr;
}

static const char *article(const char *type) { return *type == 'i' || *type == 's' ? "an" : "a"; }

/* An integer field's value (and an enum's number) from t: as the varint or
** fixed bytes its type writes into b (*bn), and as an int64 / uint64. */
static kl_rc int_value(enc &e, const FD *fd, const tok &t, uint8_t *b, size_t *bn, int64_t *sv) {
  char sh[80];
  const char *type = fd->type_name();
  bool is_text = t.kind == 's' && t.n > 0 && num_len(t.t, t.t + t.n) == t.n;
  if (t.kind != 'n' && !is_text)
    return fail(e, "%s is not %s %s", shown(t, sh, sizeof sh), article(type), type);
  bool neg;
  uint64_t mag;
  const char *why = integer(t.t, t.n, &neg, &mag);
  if (why) return fail(e, "%s %s %s", shown(t, sh, sizeof sh), why, type);
  FD::Type ty = fd->type();
  bool is32 = fd->cpp_type() == FD::CPPTYPE_INT32 || fd->cpp_type() == FD::CPPTYPE_UINT32 ||
              ty == FD::TYPE_ENUM;
  bool is_signed = fd->cpp_type() == FD::CPPTYPE_INT32 || fd->cpp_type() == FD::CPPTYPE_INT64 ||
                   ty == FD::TYPE_ENUM;
  uint64_t lim = is_signed ? (is32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX)
                           : (is32 ? UINT32_MAX : UINT64_MAX);
  if ((neg && mag && !is_signed) || mag > lim + (neg && is_signed ? 1 : 0))
    return fail(e, "%s is out of range for %s", shown(t, sh, sizeof sh), type);
  int64_t s = neg ? (int64_t)(0 - mag) : (int64_t)mag;
  *sv = s;
  uint64_t u = (uint64_t)s;
  switch (ty) {
    case FD::TYPE_SINT32: u = (uint32_t)(((uint32_t)s << 1) ^ (uint32_t)((int32_t)s >> 31)); break;
    case FD::TYPE_SINT64: u = ((uint64_t)s << 1) ^ (uint64_t)(s >> 63); break;
    case FD::TYPE_FIXED32: case FD::TYPE_SFIXED32: case FD::TYPE_FIXED64: case FD::TYPE_SFIXED64: {
      size_t k = wire_of(ty) == 5 ? 4 : 8;
      for (size_t i = 0; i < k; i++) b[i] = (uint8_t)(u >> (8 * i));
      *bn = k;
      return KL_OK;
    }
    default: break; /* int32 and enums negative: ten bytes, sign-extended */
  }
  *bn = varint_to(b, u);
  return KL_OK;
}

static kl_rc real_value(enc &e, const FD *fd, const tok &t, uint8_t *b, size_t *bn,
                        uint64_t *bits) {
  char sh[80];
  double v;
  bool is_text = t.kind == 's' && t.n > 0 && num_len(t.t, t.t + t.n) == t.n;
  if (t.kind == 'n' || is_text) {
    std::string s(t.t, t.n);
    v = strtod(s.c_str(), nullptr);
    if (std::isinf(v))
      return fail(e, "%s is out of range for %s", shown(t, sh, sizeof sh), fd->type_name());
  } else if (t.kind == 's' && t.n == 3 && !memcmp(t.t, "NaN", 3)) {
    v = NAN;
  } else if (t.kind == 's' && t.n == 8 && !memcmp(t.t, "Infinity", 8)) {
    v = INFINITY;
  } else if (t.kind == 's' && t.n == 9 && !memcmp(t.t, "-Infinity", 9)) {
    v = -INFINITY;
  } else {
    return fail(e, "%s is not a %s", shown(t, sh, sizeof sh), fd->type_name());
  }
  if (fd->type() == FD::TYPE_DOUBLE) {
    memcpy(bits, &v, 8);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(*bits >> (8 * i));
    *bn = 8;
    return KL_OK;
  }
  /* doubles that round to the largest float are floats; past it, none */
  if (std::isfinite(v) && std::fabs(v) >= 0x1.ffffffp127)
    return fail(e, "%s is out of range for float", shown(t, sh, sizeof sh));
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  *bits = u;
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(u >> (8 * i));
  *bn = 4;
  return KL_OK;
}

static kl_rc enum_value(enc &e, const FD *fd, const tok &t, uint8_t *b, size_t *bn, int64_t *num) {
  const gp::EnumDescriptor *en = fd->enum_type();
  char sh[80];
  if (t.kind == 's' && !(t.n && num_len(t.t, t.t + t.n) == t.n)) {
    e.key.assign(t.t, t.n);
    const gp::EnumValueDescriptor *v = en->FindValueByName(e.key);
    if (!v)
      return fail(e, "%s is not a value of enum %s", shown(t, sh, sizeof sh),
                  en->full_name().c_str());
    *num = v->number();
    *bn = varint_to(b, (uint64_t)(int64_t)v->number());
    return KL_OK;
  }
  if (t.kind != 'n' && t.kind != 's')
    return fail(e, "%s is not a value of enum %s", shown(t, sh, sizeof sh),
                en->full_name().c_str());
  kl_rc rc = int_value(e, fd, t, b, bn, num);
  /* a proto2 enum is closed: a reader keeps a number it does not name
  ** among the unknown fields */
  if (!rc && en->file()->syntax() == gp::FileDescriptor::SYNTAX_PROTO2 &&
      !en->FindValueByNumber((int)*num))
    return fail(e, "%s is not a value of enum %s (a proto2 enum takes only its own numbers)",
                shown(t, sh, sizeof sh), en->full_name().c_str());
  return rc;
}

/* The hex text t as bytes, appended to the output after their length. */
static kl_rc hex_value(enc &e, const tok &t) {
  char sh[80];
  bool ok = t.kind == 's' && t.n % 2 == 0;
  for (size_t i = 0; ok && i < t.n; i++) ok = hexval((unsigned char)t.t[i]) >= 0;
  if (!ok)
    return fail(e, "%s is not hex text (bytes are written as hex digits)", shown(t, sh, sizeof sh));
  kl_rc rc = put_varint(e, t.n / 2);
  if (rc == KL_OK && kl_buf_reserve(e.env, e.o, e.o->len + t.n / 2))
    rc = kl_err_set(e.err, KL_NOMEM, "out of memory");
  for (size_t i = 0; rc == KL_OK && i < t.n; i += 2)
    e.o->p[e.o->len++] =
        (uint8_t)(hexval((unsigned char)t.t[i]) << 4 | hexval((unsigned char)t.t[i + 1]));
  return rc;
}

/* The value of scalar field fd from t, appended (no tag).  key: t is a map
** key, where a bool is the text "true" or "false".  OUT: *isdef, whether it
** is the field's default. */
static kl_rc scalar_put(enc &e, const FD *fd, const tok &t, bool key, bool *isdef) {
  uint8_t b[10];
  size_t bn = 0;
  int64_t sv = 0;
  uint64_t bits = 0;
  char sh[80];
  kl_rc rc;
  switch (fd->cpp_type()) {
    case FD::CPPTYPE_INT32:
    case FD::CPPTYPE_INT64:
    case FD::CPPTYPE_UINT32:
    case FD::CPPTYPE_UINT64:
      rc = int_value(e, fd, t, b, &bn, &sv);
      *isdef = fd->cpp_type() == FD::CPPTYPE_INT32   ? sv == fd->default_value_int32()
               : fd->cpp_type() == FD::CPPTYPE_INT64 ? sv == fd->default_value_int64()
               : fd->cpp_type() == FD::CPPTYPE_UINT32 ? (uint64_t)sv == fd->default_value_uint32()
                                                       : (uint64_t)sv == fd->default_value_uint64();
      break;
    case FD::CPPTYPE_ENUM:
      rc = enum_value(e, fd, t, b, &bn, &sv);
      *isdef = sv == fd->default_value_enum()->number();
      break;
    case FD::CPPTYPE_DOUBLE: case FD::CPPTYPE_FLOAT: {
      rc = real_value(e, fd, t, b, &bn, &bits);
      double dd = fd->cpp_type() == FD::CPPTYPE_DOUBLE ? fd->default_value_double() : 0;
      float df = fd->cpp_type() == FD::CPPTYPE_FLOAT ? fd->default_value_float() : 0;
      uint64_t db = 0;
      if (fd->cpp_type() == FD::CPPTYPE_DOUBLE) memcpy(&db, &dd, 8);
      else memcpy(&db, &df, 4);
      *isdef = bits == db; /* by bits: -0.0 is written, NaN compares */
      break;
    }
    case FD::CPPTYPE_BOOL: {
      bool tv = t.kind == 't' || (key && t.kind == 's' && t.n == 4 && !memcmp(t.t, "true", 4));
      bool fv = t.kind == 'f' || (key && t.kind == 's' && t.n == 5 && !memcmp(t.t, "false", 5));
      if (!tv && !fv) return fail(e, "%s is not a bool", shown(t, sh, sizeof sh));
      b[0] = tv;
      bn = 1;
      *isdef = tv == fd->default_value_bool();
      rc = KL_OK;
      break;
    }
    default: { /* string, bytes */
      size_t at = e.o->len;
      if (fd->type() == FD::TYPE_BYTES) {
        rc = hex_value(e, t);
      } else if (t.kind != 's') {
        return fail(e, "%s is not a string", shown(t, sh, sizeof sh));
      } else {
        rc = put_varint(e, t.n);
        if (rc == KL_OK) rc = put(e, t.t, t.n);
      }
      if (rc) return rc;
      const std::string &d = fd->default_value_string();
      uint8_t vb[10];
      size_t vk = varint_to(vb, d.size()); /* the length's bytes, if it is the default's */
      *isdef = e.o->len - at == vk + d.size() && !memcmp(e.o->p + at + vk, d.data(), d.size());
      return KL_OK;
    }
  }
  return rc ? rc : put(e, b, bn);
}

/* ---- decimals ---- */

/* confluent.type.Decimal, which the decoder writes as a number (its test). */
static bool is_decimal(const gp::Descriptor *d) {
  const FD *v = d->FindFieldByNumber(1), *s = d->FindFieldByNumber(3);
  return d->full_name() == "confluent.type.Decimal" && v && s && !v->is_repeated() &&
         !s->is_repeated() && v->type() == FD::TYPE_BYTES && s->type() == FD::TYPE_INT32;
}

#define DEC_DIGITS (KL_PROTO_MAX_DECIMAL * 241 / 100) /* decimal digits in that many bytes */

/* A decimal's number text t (n bytes, JSON's grammar) as Java's
** BigDecimal reads it: *neg, its digits without leading zeros into dig
** (*k of them) and *scale; NULL, or why not.  Trailing zeros that would
** not fit become a negative scale instead, the same value, as few as
** need to: the decoder writes a negative scale as zeros ("3186E780" as
** 3186 and 780 zeros), and what it writes must encode again. */
static const char *decimal_digits(const char *t, size_t n, bool *neg, char *dig, size_t *k,
                                  long *scale) {
  const char *end = t + n;
  *neg = *t == '-';
  if (*neg) t++;
  long frac = 0, zeros = 0; /* zeros: held back until a digit follows */
  bool point = false;
  *k = 0;
  for (; t < end && (digit(t, end) || (*t == '.' && !point)); t++) {
    if (*t == '.') {
      point = true;
      continue;
    }
    frac += point;
    if (*k == 0 && *t == '0') continue; /* leading zeros are no digits */
    if (*t == '0' && zeros < LONG_MAX / 2) {
      zeros++;
      continue;
    }
    if (*k + (size_t)zeros >= DEC_DIGITS) return "has too many digits";
    memset(dig + *k, '0', (size_t)zeros);
    *k += (size_t)zeros;
    zeros = 0;
    dig[(*k)++] = *t;
  }
  long keep = std::min(zeros, (long)(DEC_DIGITS - *k)); /* the fewest dropped */
  memset(dig + *k, '0', (size_t)keep);
  *k += (size_t)keep;
  *scale = frac - (zeros - keep) - exponent(t, end);
  if (*scale > KL_PROTO_MAX_SCALE || *scale < -KL_PROTO_MAX_SCALE)
    return "has a scale beyond 1000 either way";
  return nullptr;
}

/* The k decimal digits at dig (negated when neg) in the fewest
** two's-complement big-endian bytes, one at least, into out (*len); NULL,
** or why not. */
static const char *twos(bool neg, const char *dig, size_t k, uint8_t *out, size_t *len) {
  uint8_t m[KL_PROTO_MAX_DECIMAL + 1];
  size_t mn = sizeof m;
  memset(m, 0, mn);
  for (size_t i = 0; i < k; i++) { /* m = m * 10 + digit */
    unsigned carry = (unsigned)(dig[i] - '0');
    for (size_t j = mn; j-- > 0;) {
      unsigned v = m[j] * 10u + carry;
      m[j] = (uint8_t)v;
      carry = v >> 8;
    }
    if (carry) return "takes more than 256 bytes";
  }
  if (neg) { /* invert and add one */
    for (size_t j = 0; j < mn; j++) m[j] = (uint8_t)~m[j];
    for (size_t j = mn; j-- > 0;)
      if (++m[j] != 0) break;
  }
  size_t s = 0; /* drop the bytes that only repeat the sign */
  while (s + 1 < mn && ((m[s] == 0 && !(m[s + 1] & 0x80)) || (m[s] == 0xff && (m[s + 1] & 0x80))))
    s++;
  if (mn - s > KL_PROTO_MAX_DECIMAL) return "takes more than 256 bytes";
  *len = mn - s;
  memcpy(out, m + s, *len);
  return nullptr;
}

/* A Decimal field given as a number: its value, precision and scale. */
static kl_rc decimal(enc &e, const FD *fd) {
  tok t;
  char sh[80];
  kl_rc rc = read_tok(e, &t);
  if (rc) return rc;
  bool is_text = t.kind == 's' && t.n > 0 && num_len(t.t, t.t + t.n) == t.n;
  if (t.kind != 'n' && !is_text)
    return fail(e, "%s is not a decimal number", shown(t, sh, sizeof sh));
  uint8_t v[KL_PROTO_MAX_DECIMAL];
  char dig[DEC_DIGITS];
  size_t vn = 0, k;
  bool neg;
  long scale;
  const char *why = decimal_digits(t.t, t.n, &neg, dig, &k, &scale);
  if (!why) why = twos(neg, dig, k, v, &vn);
  if (why) return fail(e, "%s %s", shown(t, sh, sizeof sh), why);
  int prec = k ? (int)k : 1; /* BigDecimal's precision: zero has one digit */
  const FD *pf = fd->message_type()->FindFieldByNumber(2);
  size_t at;
  rc = put_tag(e, fd->number(), 2);
  if (!rc) rc = reserve_len(e, &at);
  if (!rc) rc = put_tag(e, 1, 2);
  if (!rc) rc = put_varint(e, vn);
  if (!rc) rc = put(e, v, vn);
  if (!rc && pf && pf->type() == FD::TYPE_UINT32 && !pf->is_repeated()) {
    rc = put_tag(e, 2, 0);
    if (!rc) rc = put_varint(e, (uint64_t)prec);
  }
  if (!rc && scale) {
    rc = put_tag(e, 3, 0);
    if (!rc) rc = put_varint(e, (uint64_t)(int64_t)scale);
  }
  if (!rc) patch_len(e, at);
  return rc;
}

/* ---- messages ---- */

static kl_rc message(enc &e, const gp::Descriptor *d);

static kl_rc push(enc &e, const char *name, size_t n) {
  if (e.depth >= (int)(sizeof e.path / sizeof e.path[0]))
    return fail(e, "nested deeper than %d messages", KL_PROTO_MAX_DEPTH);
  e.path[e.depth++] = frame{name, n, -1};
  return KL_OK;
}

/* One value of field fd (not a map, not an array), with its tag.  skip: a
** default value is not written. */
static kl_rc single(enc &e, const FD *fd, bool skip) {
  if (fd->cpp_type() == FD::CPPTYPE_MESSAGE) {
    const gp::Descriptor *m = fd->message_type();
    if (is_decimal(m)) return decimal(e, fd);
    size_t at = 0;
    bool group = fd->type() == FD::TYPE_GROUP;
    kl_rc rc = put_tag(e, fd->number(), group ? 3 : 2);
    if (!rc && !group) rc = reserve_len(e, &at);
    if (!rc) rc = message(e, m);
    if (rc) return rc;
    if (group) return put_tag(e, fd->number(), 4);
    patch_len(e, at);
    return KL_OK;
  }
  size_t mark = e.o->len;
  tok t;
  bool isdef;
  kl_rc rc = read_tok(e, &t);
  if (!rc) rc = put_tag(e, fd->number(), wire_of(fd->type()));
  if (!rc) rc = scalar_put(e, fd, t, false, &isdef);
  if (!rc && skip && isdef) e.o->len = mark;
  return rc;
}

static kl_rc array(enc &e, const FD *fd) {
  char sh[80];
  tok t{0, nullptr, 0};
  if (peek(e) != '[') {
    kl_rc rc = read_tok(e, &t);
    return rc ? rc : fail(e, "%s is not an array (the field is repeated)", shown(t, sh, sizeof sh));
  }
  e.p++;
  bool packed = fd->is_packed();
  size_t mark = e.o->len, at = 0;
  kl_rc rc = packed ? put_tag(e, fd->number(), 2) : KL_OK;
  if (!rc && packed) rc = reserve_len(e, &at);
  long i = 0;
  frame &f = e.path[e.depth - 1];
  if (!rc && peek(e) == ']') {
    e.p++;
  } else {
    while (rc == KL_OK) {
      f.idx = i++;
      bool isdef;
      if (packed) {
        rc = read_tok(e, &t);
        if (!rc) rc = scalar_put(e, fd, t, false, &isdef);
      } else {
        rc = single(e, fd, false);
      }
      if (!rc && peek(e) == ']') {
        e.p++;
        break;
      }
      if (!rc) rc = expect(e, ',', "',' or ']' expected");
    }
  }
  f.idx = -1;
  if (rc) return rc;
  if (packed && i == 0) e.o->len = mark;
  else if (packed) patch_len(e, at);
  return KL_OK;
}

/* A map as an object: an entry per member, its key and its value. */
static kl_rc map(enc &e, const FD *fd) {
  char sh[80];
  tok t{0, nullptr, 0};
  if (peek(e) != '{') {
    kl_rc rc = read_tok(e, &t);
    return rc ? rc : fail(e, "%s is not an object (a map)", shown(t, sh, sizeof sh));
  }
  e.p++;
  const FD *kf = fd->message_type()->map_key(), *vf = fd->message_type()->map_value();
  if (peek(e) == '}') {
    e.p++;
    return KL_OK;
  }
  kl_rc rc = KL_OK;
  while (rc == KL_OK) {
    if (peek(e) != '"') return syntax(e, "a member name expected");
    const char *k0 = e.p + 1;
    size_t at;
    bool isdef;
    rc = read_string(e, &e.str);
    if (!rc) rc = push(e, k0, (size_t)(e.p - 1 - k0));
    if (rc) return rc;
    t = tok{'s', e.str.len ? (const char *)e.str.p : "", e.str.len};
    rc = put_tag(e, fd->number(), 2);
    if (!rc) rc = reserve_len(e, &at);
    if (!rc) rc = put_tag(e, 1, wire_of(kf->type()));
    if (!rc) rc = scalar_put(e, kf, t, true, &isdef);
    if (!rc) rc = expect(e, ':', "':' expected");
    if (!rc) rc = single(e, vf, false);
    if (rc) return rc;
    patch_len(e, at);
    e.depth--;
    if (peek(e) == '}') {
      e.p++;
      break;
    }
    rc = expect(e, ',', "',' or '}' expected");
  }
  return rc;
}

/* Member fd of the message whose seen bytes start at so. */
static kl_rc member(enc &e, const FD *fd, size_t so) {
  if (peek(e) == 'n' && lit(e, "null")) {
    e.seen.p[so + (size_t)fd->index()] |= SEEN_NULL;
    return KL_OK;
  }
  const gp::OneofDescriptor *oo = fd->real_containing_oneof();
  for (int j = 0; oo && j < oo->field_count(); j++) {
    const FD *other = oo->field(j);
    if (other != fd && (e.seen.p[so + (size_t)other->index()] & SEEN_VALUE))
      return fail(e, "%s and %s are members of oneof %s: only one may be set",
                  other->name().c_str(), fd->name().c_str(), oo->name().c_str());
  }
  e.seen.p[so + (size_t)fd->index()] |= SEEN_VALUE;
  if (fd->is_map()) return map(e, fd);
  if (fd->is_repeated()) return array(e, fd);
  return single(e, fd, !oo && !fd->is_required());
}

/* The field of d that the member name means: the field of that name as
** written in the .proto, else the field whose JSON name it is (json_name:
** lowerCamelCase, "unitPrice" for unit_price, unless the .proto sets
** [json_name = ...]), as protobuf's JSON mapping reads either; NULL when
** none.  OUT: *by_json, whether it was the JSON name.  The .proto's names
** come first since the decoder writes them; the JSON names are searched
** only when that fails, field by field (a message has few). */
static const FD *field_named(const gp::Descriptor *d, const std::string &name, bool *by_json) {
  *by_json = false;
  const FD *fd = d->FindFieldByName(name);
  for (int i = 0; !fd && i < d->field_count(); i++) {
    if (d->field(i)->json_name() == name) {
      fd = d->field(i);
      *by_json = true;
    }
  }
  return fd;
}

/* The members of the object at e.p, fields of d.  A walker of JSON's
** object grammar with protobuf's rules on each member (unknown, given
** twice under either of its names, a oneof's second member, proto2's
** required). */
static kl_rc message(enc &e, const gp::Descriptor *d) {
  char sh[80];
  if (peek(e) != '{') {
    tok t;
    kl_rc rc = read_tok(e, &t);
    return rc ? rc
              : fail(e, "%s is not an object (message %s)", shown(t, sh, sizeof sh),
                     d->full_name().c_str());
  }
  if (e.mdepth >= KL_PROTO_MAX_DEPTH)
    return fail(e, "messages nested deeper than %d", KL_PROTO_MAX_DEPTH);
  e.p++;
  size_t nf = (size_t)d->field_count(), so = e.seen.len;
  if (kl_buf_reserve(e.env, &e.seen, so + nf + 1))
    return kl_err_set(e.err, KL_NOMEM, "out of memory");
  memset(e.seen.p + so, 0, nf);
  e.seen.len += nf;
  e.mdepth++;
  kl_rc rc = KL_OK;
  if (peek(e) == '}') {
    e.p++;
  } else {
    while (rc == KL_OK) {
      if (peek(e) != '"') return syntax(e, "a member name expected");
      rc = read_string(e, &e.str);
      if (rc) return rc;
      e.key.assign(e.str.len ? (const char *)e.str.p : "", e.str.len);
      bool by_json;
      const FD *fd = field_named(d, e.key, &by_json);
      if (!fd)
        return fail(e, "\"%.100s\" is not a field of %s", e.key.c_str(), d->full_name().c_str());
      const std::string &as = by_json ? fd->json_name() : fd->name(); /* the spelling given */
      size_t at = so + (size_t)fd->index();
      rc = push(e, as.data(), as.size());
      if (!rc && e.seen.p[at]) {
        bool was_json = e.seen.p[at] & SEEN_JSON_NAME;
        if (was_json == by_json)
          rc = fail(e, "given twice");
        else
          rc = fail(e, "given twice, as %s and as %s",
                    (was_json ? fd->json_name() : fd->name()).c_str(), as.c_str());
      }
      if (!rc && by_json) e.seen.p[at] = SEEN_JSON_NAME;
      if (!rc) rc = expect(e, ':', "':' expected");
      if (!rc) rc = member(e, fd, so);
      if (rc) return rc;
      e.depth--;
      if (peek(e) == '}') {
        e.p++;
        break;
      }
      rc = expect(e, ',', "',' or '}' expected");
    }
  }
  for (size_t i = 0; rc == KL_OK && i < nf; i++)
    if (d->field((int)i)->is_required() && !(e.seen.p[so + i] & SEEN_VALUE))
      rc = fail(e, "the required field %s of %s is missing", d->field((int)i)->name().c_str(),
                d->full_name().c_str());
  e.seen.len = so;
  e.mdepth--;
  return rc;
}

/* ---- the message chosen, and its index ---- */

static kl_rc pick(const gp::FileDescriptor *f, const char *name, const gp::Descriptor **out,
                  kl_err *err) {
  const gp::Descriptor *d = nullptr;
  if (!name) {
    if (f->message_type_count() == 0)
      return kl_err_set(err, KL_NOTFOUND, "the schema defines no message");
    *out = f->message_type(0);
    return KL_OK;
  }
  d = f->pool()->FindMessageTypeByName(name);
  if ((!d || d->file() != f) && !f->package().empty())
    d = f->pool()->FindMessageTypeByName(f->package() + "." + name);
  if (d && d->file() == f && !d->options().map_entry()) {
    *out = d;
    return KL_OK;
  }
  std::string names;
  for (int i = 0; i < f->message_type_count() && i < 10; i++)
    names += (i ? ", " : "") + f->message_type(i)->full_name();
  if (f->message_type_count() > 10) names += ", ...";
  return kl_err_set(err, KL_NOTFOUND, "message %.200s is not in the schema (its messages: %s)",
                    name, names.empty() ? "none" : names.c_str());
}

/* Confluent's message-index array of d: its index among the file's
** messages, then among each enclosing message's nested ones (map entries
** not counted); [0] as the single byte 0. */
static kl_rc put_indexes(enc &e, const gp::Descriptor *d) {
  std::vector<int> path;
  for (; d; d = d->containing_type()) {
    const gp::Descriptor *up = d->containing_type();
    int idx = 0;
    int n = up ? up->nested_type_count() : d->file()->message_type_count();
    for (int j = 0; j < n; j++) {
      const gp::Descriptor *c = up ? up->nested_type(j) : d->file()->message_type(j);
      if (c == d) break;
      if (!c->options().map_entry()) idx++;
    }
    path.insert(path.begin(), idx);
  }
  if (path.size() == 1 && path[0] == 0) return put(e, "", 1);
  kl_rc rc = put_varint(e, (uint64_t)path.size() << 1);
  for (size_t i = 0; rc == KL_OK && i < path.size(); i++)
    rc = put_varint(e, (uint64_t)path[i] << 1);
  return rc;
}

extern "C" kl_rc kl_proto_encode(const kl_proto_schema *s, const char *message_name,
                                 const char *json, size_t n, kl_buf *out, kl_err *err) {
  enc *e = nullptr;
  kl_rc rc;
  try {
    const gp::FileDescriptor *f = kl_proto_schema_file(s);
    const gp::Descriptor *d = nullptr;
    rc = pick(f, message_name, &d, err);
    if (rc) return rc;
    e = new enc();
    e->env = kl_proto_schema_env(s);
    e->o = out;
    e->err = err;
    e->base = e->p = json ? json : "";
    e->end = e->base + (json ? n : 0);
    rc = put_indexes(*e, d);
    if (rc == KL_OK) rc = message(*e, d);
    if (rc == KL_OK && peek(*e) >= 0) rc = syntax(*e, "text after the value");
  } catch (const std::bad_alloc &) {
    rc = kl_err_set(err, KL_NOMEM, "out of memory");
  }
  if (e) {
    kl_buf_free(e->env, &e->str);
    kl_buf_free(e->env, &e->seen);
    delete e;
  }
  return rc;
}
