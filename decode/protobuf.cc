/*
** protobuf.cc - Protobuf schemas and payloads to JSON (decode/protobuf.h).
**
** Why C++ and what is written here: a .proto text is parsed by Debian's
** libprotoc (compiler::Parser) and its imports linked by libprotobuf's
** DescriptorPool, the reference implementation of both, which no C library
** on Debian offers (libupb's snapshot has no reflection, protobuf-c needs
** generated code).  The values are decoded here, by a walk of the wire
** bytes against the descriptors, not by DynamicMessage and its JSON
** printer: that printer writes int64 as strings, bytes as base64, leaves
** defaults out and cannot say which field of a payload is broken, and a
** walk writes the JSON straight into the caller's buffer without building a
** message first.  The walk keeps the wire format's semantics: the last
** value of a singular field wins, occurrences of a singular message merge
** (decoded as the concatenation of their bytes, which is how the format
** defines a merge), a oneof keeps its last member set, a map its last
** entry of each key.
**
** This file and its encoder (protobuf_encode.cc) are the C++ that uses
** libprotobuf; exceptions never cross the C interface (a std::bad_alloc
** from the parse is KL_NOMEM), and the decode path calls nothing that
** throws.
*/
#include <algorithm>
#include <charconv>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

extern "C" {
#include "decimal.h"
#include "protobuf.h"
#include "utf8.h"
}

static_assert(KL_PROTO_MAX_DECIMAL <= KL_DECIMAL_MAX_BYTES && KL_PROTO_MAX_SCALE <= KL_DECIMAL_MAX_SCALE,
              "decimal.h bounds the decimals");

namespace gp = google::protobuf;
using FD = gp::FieldDescriptor;

/* ---- the schema: descriptors, and per message a table for the walk ---- */

namespace {

struct pmsg;

struct pfield {
  const FD *fd;
  std::string key;      /* "name": */
  std::string def;      /* the JSON of its value when absent */
  int number;
  FD::Type type;
  bool repeated;
  bool map;
  bool packable;        /* a repeated scalar: packed bytes accepted */
  int oneof;            /* index among the message's real oneofs, or -1 */
  int wire;             /* the wire type of one value */
  pmsg *sub;            /* message, group or map entry type */
  const gp::EnumDescriptor *en;
};

struct pmsg {
  const gp::Descriptor *d;
  std::vector<pfield> f;       /* in the order written */
  std::vector<int> direct;     /* field number -> index + 1, small numbers */
  std::vector<std::pair<int, int>> sorted; /* (number, index), the others */
  int noneofs;
  bool decimal;                /* confluent.type.Decimal: written as a number */
};

}  // namespace

struct kl_proto_schema {
  kl_env env;
  bool has_env;
  gp::DescriptorPool pool;
  const gp::FileDescriptor *file;
  std::deque<pmsg> msgs;
  std::unordered_map<const gp::Descriptor *, pmsg *> by_desc;
};

/* Confluent's own imports, as the registry's serializers know them. */
static const char kMetaProto[] =
    "syntax = \"proto3\";\n"
    "package confluent;\n"
    "import \"google/protobuf/descriptor.proto\";\n"
    "option go_package = \"../confluent\";\n"
    "option java_package = \"io.confluent.protobuf\";\n"
    "message Meta {\n"
    "  string doc = 1;\n"
    "  map<string, string> params = 2;\n"
    "  repeated string tags = 3;\n"
    "}\n"
    "extend google.protobuf.FileOptions { Meta file_meta = 1088; }\n"
    "extend google.protobuf.MessageOptions { Meta message_meta = 1088; }\n"
    "extend google.protobuf.FieldOptions { Meta field_meta = 1088; }\n"
    "extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }\n"
    "extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }\n";
static const char kDecimalProto[] =
    "syntax = \"proto3\";\n"
    "package confluent.type;\n"
    "option go_package = \"../type\";\n"
    "option java_package = \"io.confluent.protobuf.type\";\n"
    "message Decimal {\n"
    "  bytes value = 1;\n"
    "  uint32 precision = 2;\n"
    "  int32 scale = 3;\n"
    "}\n";

/* ---- JSON text helpers shared by the schema's defaults and the walk ---- */

static const char kHex[] = "0123456789abcdef";

static void str_double(std::string &o, double v) {
  if (std::isnan(v)) { o += "\"NaN\""; return; }
  if (std::isinf(v)) { o += v > 0 ? "\"Infinity\"" : "\"-Infinity\""; return; }
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, (size_t)(r.ptr - b));
}
static void str_float(std::string &o, float v) {
  if (std::isnan(v)) { o += "\"NaN\""; return; }
  if (std::isinf(v)) { o += v > 0 ? "\"Infinity\"" : "\"-Infinity\""; return; }
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, (size_t)(r.ptr - b));
}
/* JSON's two-character escapes, or NULL (then \u00XX below 0x20). */
static const char *esc_short(unsigned char c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return nullptr;
  }
}

static void str_escaped(std::string &o, const std::string &s) {
  o += '"';
  for (unsigned char c : s) {
    const char *e = esc_short(c);
    if (e) {
      o += e;
    } else if (c < 0x20) {
      char b[8];
      snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += (char)c;
    }
  }
  o += '"';
}
static void str_hex(std::string &o, const std::string &s) {
  o += '"';
  for (unsigned char c : s) {
    o += kHex[c >> 4];
    o += kHex[c & 15];
  }
  o += '"';
}

/* ---- schema parsing ---- */

namespace {

struct text_errors : gp::io::ErrorCollector {
  std::string first;
  void AddError(int line, gp::io::ColumnNumber col, const std::string &m) override {
    if (first.empty()) first = std::to_string(line + 1) + ":" + std::to_string(col + 1) + ": " + m;
  }
};

struct pool_errors : gp::DescriptorPool::ErrorCollector {
  std::string first;
  void AddError(const std::string &file, const std::string &elem, const gp::Message *,
                ErrorLocation, const std::string &m) override {
    if (first.empty()) first = (elem.empty() ? file : elem) + ": " + m;
  }
};

struct loader {
  kl_proto_schema *s;
  kl_proto_resolver resolve;
  void *ctx;
  kl_err *err;
  std::unordered_set<std::string> busy;  /* files whose imports are loading */
  int files = 0;
};

}  // namespace

/* Where the comment or quoted string that starts at t[i] ends (its last
** character, or n), or i when none starts there. */
static size_t skip_quoted(const char *t, size_t n, size_t i) {
  char c = t[i];
  if (c == '/' && i + 1 < n && t[i + 1] == '/') {
    while (i < n && t[i] != '\n') i++;
  } else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
    for (i += 2; i + 1 < n && !(t[i] == '*' && t[i + 1] == '/'); i++) {}
    i++;
  } else if (c == '"' || c == '\'') {
    for (i++; i < n && t[i] != c && t[i] != '\n'; i++)
      if (t[i] == '\\') i++;
  }
  return i;
}

/* Deepest nesting of brackets in a .proto text (strings and comments
** aside): libprotoc's parser recurses once per level and sets no limit. */
static size_t text_depth(const char *t, size_t n) {
  size_t d = 0, max = 0;
  for (size_t i = 0; i < n; i++) {
    size_t j = skip_quoted(t, n, i);
    char c = t[i];
    if (j != i) {
      i = j;
    } else if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (++d > max) max = d;
    } else if ((c == '}' || c == ')' || c == ']' || c == '>') && d > 0) {
      d--;
    }
  }
  return max;
}

/* Standard base64 (padding optional, whitespace skipped); false when any
** other character appears. */
static bool base64_decode(const char *t, size_t n, std::string &out) {
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < n; i++) {
    unsigned char c = (unsigned char)t[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+' || c == '-') v = 62;
    else if (c == '/' || c == '_') v = 63;
    else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    else if (c == '=') break;
    else return false;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += (char)((acc >> bits) & 0xff);
    }
  }
  for (; i < n; i++)
    if (t[i] != '=' && t[i] != '\n' && t[i] != '\r' && t[i] != ' ') return false;
  return !out.empty();
}

/* A schema text to a FileDescriptorProto named name: the .proto text, else
** a base64 FileDescriptorProto (the order the registry tries them in). */
static kl_rc to_file_proto(loader &L, const std::string &name, bool is_import, const char *text,
                           size_t n, gp::FileDescriptorProto &fdp) {
  if (n > KL_PROTO_MAX_SCHEMA)
    return kl_err_set(L.err, KL_CORRUPT, "%s: %zu bytes, more than a schema may have (%zu)",
                      name.c_str(), n, (size_t)KL_PROTO_MAX_SCHEMA);
  std::string bin;
  if (base64_decode(text, n, bin) && fdp.ParseFromString(bin)) {
    if (is_import || fdp.name().empty()) fdp.set_name(name);
    return KL_OK;
  }
  fdp.Clear();
  if (text_depth(text, n) > KL_PROTO_MAX_DEPTH)
    return kl_err_set(L.err, KL_CORRUPT, "%s: nested deeper than %d levels", name.c_str(),
                      KL_PROTO_MAX_DEPTH);
  gp::io::ArrayInputStream in(text, (int)n);
  text_errors te;
  gp::io::Tokenizer tok(&in, &te);
  gp::compiler::Parser parser;
  parser.RecordErrorsTo(&te);
  if (!parser.Parse(&tok, &fdp) || !te.first.empty())
    return kl_err_set(L.err, KL_CORRUPT, "%s:%s", name.c_str(),
                      te.first.empty() ? " does not parse" : te.first.c_str());
  fdp.set_name(name);
  return KL_OK;
}

static kl_rc load_file(loader &L, const std::string &name, const char *text, size_t n,
                       const gp::FileDescriptor **out, int depth);

/* Bring import name into the pool: the resolver's text, else a built-in. */
static kl_rc load_import(loader &L, const std::string &name, int depth) {
  if (L.s->pool.FindFileByName(name)) return KL_OK;
  if (L.busy.count(name))
    return kl_err_set(L.err, KL_CORRUPT, "import \"%s\": imports itself", name.c_str());
  const char *text = nullptr;
  size_t n = 0;
  kl_rc rc = L.resolve ? L.resolve(L.ctx, name.c_str(), &text, &n) : KL_NOTFOUND;
  if (rc == KL_OK) return load_file(L, name, text ? text : "", text ? n : 0, nullptr, depth);
  if (rc != KL_NOTFOUND) return kl_err_set(L.err, rc, "import \"%s\": not resolved", name.c_str());
  if (name == "confluent/meta.proto")
    return load_file(L, name, kMetaProto, sizeof kMetaProto - 1, nullptr, depth);
  if (name == "confluent/type/decimal.proto")
    return load_file(L, name, kDecimalProto, sizeof kDecimalProto - 1, nullptr, depth);
  const gp::FileDescriptor *g = gp::DescriptorPool::generated_pool()->FindFileByName(name);
  if (!g || name.compare(0, 16, "google/protobuf/") != 0)
    return kl_err_set(L.err, KL_CORRUPT, "import \"%s\": not among the references",
                      name.c_str());
  gp::FileDescriptorProto fdp;
  g->CopyTo(&fdp);
  for (const std::string &dep : fdp.dependency()) {
    rc = load_import(L, dep, depth + 1);
    if (rc) return rc;
  }
  pool_errors pe;
  if (!L.s->pool.BuildFileCollectingErrors(fdp, &pe))
    return kl_err_set(L.err, KL_CORRUPT, "%s: %s", name.c_str(), pe.first.c_str());
  return KL_OK;
}

static kl_rc load_file(loader &L, const std::string &name, const char *text, size_t n,
                       const gp::FileDescriptor **out, int depth) {
  if (depth > KL_PROTO_MAX_DEPTH || ++L.files > KL_PROTO_MAX_FILES)
    return kl_err_set(L.err, KL_CORRUPT, "%s: imports nest deeper or number more than %d",
                      name.c_str(), depth > KL_PROTO_MAX_DEPTH ? KL_PROTO_MAX_DEPTH
                                                               : KL_PROTO_MAX_FILES);
  gp::FileDescriptorProto fdp;
  kl_rc rc = to_file_proto(L, name, out == nullptr, text, n, fdp);
  if (rc) return rc;
  L.busy.insert(name);
  L.busy.insert(fdp.name());
  for (const std::string &dep : fdp.dependency()) {
    rc = load_import(L, dep, depth + 1);
    if (rc) return rc;
  }
  L.busy.erase(name);
  L.busy.erase(fdp.name());
  if (L.s->pool.FindFileByName(fdp.name()))
    return kl_err_set(L.err, KL_CORRUPT, "%s: defined twice", fdp.name().c_str());
  pool_errors pe;
  const gp::FileDescriptor *f = L.s->pool.BuildFileCollectingErrors(fdp, &pe);
  if (!f) return kl_err_set(L.err, KL_CORRUPT, "%s: %s", name.c_str(), pe.first.c_str());
  if (out) *out = f;
  return KL_OK;
}

/* ---- the walk's tables ---- */

static int wire_of(FD::Type t) {
  switch (t) {
    case FD::TYPE_DOUBLE: case FD::TYPE_FIXED64: case FD::TYPE_SFIXED64: return 1;
    case FD::TYPE_FLOAT: case FD::TYPE_FIXED32: case FD::TYPE_SFIXED32: return 5;
    case FD::TYPE_STRING: case FD::TYPE_BYTES: case FD::TYPE_MESSAGE: return 2;
    case FD::TYPE_GROUP: return 3;
    default: return 0;
  }
}

static std::string default_json(const pfield &pf) {
  const FD *fd = pf.fd;
  std::string o;
  if (pf.map) return "{}";
  if (pf.repeated) return "[]";
  switch (fd->cpp_type()) {
    case FD::CPPTYPE_INT32: o = std::to_string(fd->default_value_int32()); break;
    case FD::CPPTYPE_INT64: o = std::to_string(fd->default_value_int64()); break;
    case FD::CPPTYPE_UINT32: o = std::to_string(fd->default_value_uint32()); break;
    case FD::CPPTYPE_UINT64: o = std::to_string(fd->default_value_uint64()); break;
    case FD::CPPTYPE_DOUBLE: str_double(o, fd->default_value_double()); break;
    case FD::CPPTYPE_FLOAT: str_float(o, fd->default_value_float()); break;
    case FD::CPPTYPE_BOOL: o = fd->default_value_bool() ? "true" : "false"; break;
    case FD::CPPTYPE_ENUM: {
      const gp::EnumValueDescriptor *v = fd->default_value_enum();
      if (v) str_escaped(o, v->name());
      else o = "0";
      break;
    }
    case FD::CPPTYPE_STRING:
      if (fd->type() == FD::TYPE_BYTES) str_hex(o, fd->default_value_string());
      else str_escaped(o, fd->default_value_string());
      break;
    case FD::CPPTYPE_MESSAGE: o = "null"; break;
  }
  return o;
}

/* The table of d and of every message its fields reach (a worklist, so a
** deep chain of types costs no stack).  KL_CORRUPT for a string default
** that is not UTF-8 (proto2 allows any bytes; JSON text cannot hold them,
** and a value on the wire that is not UTF-8 is refused too). */
static kl_rc compile(kl_proto_schema *s, const gp::Descriptor *root, kl_err *err) {
  std::vector<const gp::Descriptor *> todo{root};
  while (!todo.empty()) {
    const gp::Descriptor *d = todo.back();
    todo.pop_back();
    if (s->by_desc.count(d)) continue;
    s->msgs.emplace_back();
    pmsg &m = s->msgs.back();
    s->by_desc[d] = &m;
    m.d = d;
    m.noneofs = d->real_oneof_decl_count();
    const FD *dval = d->FindFieldByNumber(1), *ds = d->FindFieldByNumber(3);
    m.decimal = d->full_name() == "confluent.type.Decimal" && dval && ds && !dval->is_repeated() &&
                !ds->is_repeated() && dval->type() == FD::TYPE_BYTES && ds->type() == FD::TYPE_INT32;
    int maxnum = 0;
    for (int i = 0; i < d->field_count(); i++) {
      const FD *fd = d->field(i);
      pfield pf{};
      pf.fd = fd;
      pf.key = "\"" + fd->name() + "\":";
      pf.number = fd->number();
      pf.type = fd->type();
      pf.repeated = fd->is_repeated();
      pf.map = fd->is_map();
      pf.packable = fd->is_packable();
      const gp::OneofDescriptor *o = fd->real_containing_oneof();
      pf.oneof = o ? o->index() : -1;
      pf.wire = wire_of(pf.type);
      pf.en = fd->enum_type();
      if (fd->message_type()) todo.push_back(fd->message_type());
      if (fd->type() == FD::TYPE_STRING && fd->has_default_value()) {
        const std::string &dv = fd->default_value_string();
        if (!kl_utf8_valid((const uint8_t *)dv.data(), dv.size()))
          return kl_err_set(err, KL_CORRUPT, "%s: its default is not UTF-8",
                            fd->full_name().c_str());
      }
      pf.def = default_json(pf);
      maxnum = std::max(maxnum, pf.number);
      m.f.push_back(std::move(pf));
    }
    /* nested messages too: a message-index array may select any */
    for (int j = 0; j < d->nested_type_count(); j++) todo.push_back(d->nested_type(j));
    size_t lim = 64 + 4 * m.f.size();
    m.direct.assign(std::min<size_t>((size_t)maxnum + 1, lim), 0);
    for (size_t i = 0; i < m.f.size(); i++) {
      if ((size_t)m.f[i].number < m.direct.size()) m.direct[(size_t)m.f[i].number] = (int)i + 1;
      else m.sorted.emplace_back(m.f[i].number, (int)i);
    }
    std::sort(m.sorted.begin(), m.sorted.end());
  }
  for (pmsg &m : s->msgs)
    for (pfield &pf : m.f)
      if (pf.fd->message_type()) pf.sub = s->by_desc[pf.fd->message_type()];
  return KL_OK;
}

extern "C" kl_rc kl_proto_schema_parse(const kl_env *env, const char *text, size_t n,
                                       kl_proto_resolver resolve, void *ctx,
                                       kl_proto_schema **out, kl_err *err) {
  *out = nullptr;
  kl_proto_schema *s = nullptr;
  try {
    s = new kl_proto_schema();
    s->has_env = env != nullptr;
    if (env) s->env = *env;
    loader L{s, resolve, ctx, err, {}, 0};
    const gp::FileDescriptor *f = nullptr;
    kl_rc rc = load_file(L, "schema", text ? text : "", text ? n : 0, &f, 0);
    if (rc) {
      delete s;
      return rc;
    }
    s->file = f;
    for (int i = 0; i < f->message_type_count() && !rc; i++) rc = compile(s, f->message_type(i), err);
    if (rc) {
      delete s;
      return rc;
    }
    *out = s;
    return KL_OK;
  } catch (const std::bad_alloc &) {
    delete s;
    return kl_err_set(err, KL_NOMEM, "schema: out of memory");
  } catch (...) {
    delete s;
    return kl_err_set(err, KL_CORRUPT, "schema: the Protobuf library failed on it");
  }
}

extern "C" void kl_proto_schema_free(kl_proto_schema *s) { delete s; }

const gp::FileDescriptor *kl_proto_schema_file(const kl_proto_schema *s) { return s->file; }
const kl_env *kl_proto_schema_env(const kl_proto_schema *s) { return s->has_env ? &s->env : nullptr; }

/* ---- the walk ---- */

namespace {

/* One field value found on the wire: its field, wire type, and where. */
struct occ {
  uint32_t fi;       /* index in pmsg::f */
  uint32_t wt;
  const uint8_t *p;  /* LEN and groups: the bytes; fixed: the value's bytes */
  uint64_t v;        /* varint value, or the length of p */
};

struct frame {
  const pmsg *m;
  const pfield *f;  /* the field being written, or NULL */
  long idx;         /* its element index, or -1 */
};

struct walk {
  const kl_env *env;
  kl_buf *out;
  kl_err *err;
  size_t start;         /* out->len when the value began */
  occ *o;               /* every level's occurrences, a stack */
  size_t no, co;
  uint32_t *ix;         /* every level's ordering scratch, a stack */
  size_t nix, cix;
  const uint8_t *base, *end;  /* the payload, for byte positions */
  frame path[KL_PROTO_MAX_DEPTH + 2];
  int depth;
};

}  // namespace

static const char *wire_name(unsigned wt) {
  static const char *const n[] = {"varint", "64-bit", "length-delimited", "start-group",
                                  "end-group", "32-bit", "6", "7"};
  return n[wt & 7];
}

/* The path of the field being decoded: Order.items[2].price (field 3). */
static kl_rc fail(walk &w, const uint8_t *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static kl_rc fail(walk &w, const uint8_t *at, const char *fmt, ...) {
  std::string p = w.path[0].m->d->name();
  const pfield *last = nullptr;
  for (int i = 0; i <= w.depth; i++) {
    const frame &f = w.path[i];
    if (!f.f) continue;
    p += "." + f.f->fd->name();
    if (f.idx >= 0) p += "[" + std::to_string(f.idx) + "]";
    last = f.f;
  }
  if (last) p += " (field " + std::to_string(last->number) + ")";
  if (at >= w.base && at <= w.end) p += " at byte " + std::to_string(at - w.base);
  char m[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  return kl_err_set(w.err, KL_CORRUPT, "%s: %s", p.c_str(), m);
}

static inline kl_rc room(walk &w, size_t n) {
  kl_buf *b = w.out;
  if (b->len + n - w.start > KL_PROTO_MAX_JSON)
    return kl_err_set(w.err, KL_CORRUPT, "the value's JSON would exceed %zu bytes",
                      (size_t)KL_PROTO_MAX_JSON);
  if (b->len + n <= b->cap) return KL_OK;
  if (kl_buf_reserve(w.env, b, b->len + n))
    return kl_err_set(w.err, KL_NOMEM, "out of memory writing JSON");
  return KL_OK;
}
static inline kl_rc put(walk &w, const char *s, size_t n) {
  kl_rc rc = room(w, n);
  if (rc) return rc;
  memcpy(w.out->p + w.out->len, s, n);
  w.out->len += n;
  return KL_OK;
}
static inline kl_rc putc1(walk &w, char c) { return put(w, &c, 1); }
static inline kl_rc puts_(walk &w, const std::string &s) { return put(w, s.data(), s.size()); }

static kl_rc put_u64(walk &w, uint64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  return put(w, b, (size_t)(r.ptr - b));
}
static kl_rc put_i64(walk &w, int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  return put(w, b, (size_t)(r.ptr - b));
}
static kl_rc put_double(walk &w, double v) {
  if (std::isnan(v)) return put(w, "\"NaN\"", 5);
  if (std::isinf(v)) return v > 0 ? put(w, "\"Infinity\"", 10) : put(w, "\"-Infinity\"", 11);
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  return put(w, b, (size_t)(r.ptr - b));
}
static kl_rc put_float(walk &w, float v) {
  if (std::isnan(v)) return put(w, "\"NaN\"", 5);
  if (std::isinf(v)) return v > 0 ? put(w, "\"Infinity\"", 10) : put(w, "\"-Infinity\"", 11);
  char b[32];
  auto r = std::to_chars(b, b + sizeof b, v);
  return put(w, b, (size_t)(r.ptr - b));
}
static kl_rc put_string(walk &w, const uint8_t *p, size_t n) {
  if (!kl_utf8_valid(p, n)) return fail(w, p, "string is not valid UTF-8");
  kl_rc rc = room(w, n + 2);
  if (rc) return rc;
  w.out->p[w.out->len++] = '"';
  for (size_t i = 0; i < n; i++) {
    uint8_t c = p[i];
    if (c >= 0x20 && c != '"' && c != '\\') {
      size_t j = i;
      while (j < n && p[j] >= 0x20 && p[j] != '"' && p[j] != '\\') j++;
      rc = put(w, (const char *)p + i, j - i);
      if (rc) return rc;
      i = j - 1;
      continue;
    }
    const char *sh = esc_short(c);
    char e[8];
    int k = sh ? snprintf(e, sizeof e, "%s", sh) : snprintf(e, sizeof e, "\\u%04x", c);
    rc = put(w, e, (size_t)k);
    if (rc) return rc;
  }
  return putc1(w, '"');
}
static kl_rc put_hex(walk &w, const uint8_t *p, size_t n) {
  kl_rc rc = room(w, 2 * n + 2);
  if (rc) return rc;
  uint8_t *o = w.out->p + w.out->len;
  *o++ = '"';
  for (size_t i = 0; i < n; i++) {
    *o++ = (uint8_t)kHex[p[i] >> 4];
    *o++ = (uint8_t)kHex[p[i] & 15];
  }
  *o++ = '"';
  w.out->len += 2 * n + 2;
  return KL_OK;
}

/* A varint at *pp (at most ten bytes; bits past 64 dropped, as protobuf's
** parsers do).  false when it runs past end or past ten bytes. */
static inline bool varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
  const uint8_t *p = *pp;
  uint64_t r = 0;
  for (int s = 0; s < 70; s += 7) {
    if (p >= end) return false;
    uint8_t b = *p++;
    r |= (uint64_t)(b & 0x7f) << (s < 64 ? s : 63);
    if (!(b & 0x80)) {
      *v = r;
      *pp = p;
      return true;
    }
  }
  return false;
}

static inline uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t le64(const uint8_t *p) { return le32(p) | ((uint64_t)le32(p + 4) << 32); }

template <class T>
static kl_rc grow(walk &w, T *&a, size_t &cap, size_t need) {
  if (need <= cap) return KL_OK;
  size_t c = cap ? cap : 64;
  while (c < need) c *= 2;
  T *p = (T *)kl_realloc(w.env, a, c * sizeof(T));
  if (!p) return kl_err_set(w.err, KL_NOMEM, "out of memory decoding");
  a = p;
  cap = c;
  return KL_OK;
}

/* The bytes of a group that starts at p (after its start tag, number num):
** OUT: *len up to its end tag, *next past it. */
static kl_rc skip_group(walk &w, const uint8_t *p, const uint8_t *end, uint64_t num, int depth,
                        size_t *len, const uint8_t **next) {
  const uint8_t *s = p;
  if (depth > KL_PROTO_MAX_DEPTH) return fail(w, p, "groups nested deeper than %d", KL_PROTO_MAX_DEPTH);
  while (p < end) {
    const uint8_t *t = p;
    uint64_t tag, v;
    if (!varint(&p, end, &tag)) return fail(w, t, "tag runs past the end of the group");
    unsigned wt = (unsigned)(tag & 7);
    if (wt == 4) {
      if ((tag >> 3) != num) return fail(w, t, "group %llu ends with the end tag of %llu",
                                         (unsigned long long)num, (unsigned long long)(tag >> 3));
      *len = (size_t)(t - s);
      *next = p;
      return KL_OK;
    }
    if (wt == 0 && !varint(&p, end, &v)) return fail(w, p, "varint runs past the end");
    if (wt == 1 || wt == 5) {
      size_t k = wt == 1 ? 8 : 4;
      if ((size_t)(end - p) < k) return fail(w, p, "fixed value runs past the end");
      p += k;
    }
    if (wt == 2) {
      if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
        return fail(w, p, "length runs past the end");
      p += v;
    }
    if (wt == 3) {
      size_t l;
      kl_rc rc = skip_group(w, p, end, tag >> 3, depth + 1, &l, &p);
      if (rc) return rc;
    }
    if (wt > 5) return fail(w, t, "wire type %u does not exist", wt);
  }
  return fail(w, p, "group %llu has no end tag", (unsigned long long)num);
}

static inline int find_field(const pmsg *m, uint64_t num) {
  if (num < m->direct.size()) return m->direct[(size_t)num] - 1;
  auto it = std::lower_bound(m->sorted.begin(), m->sorted.end(), std::make_pair((int)num, -1));
  if (num > INT32_MAX || it == m->sorted.end() || (uint64_t)it->first != num) return -1;
  return it->second;
}

/* Push the occurrences of m's known fields in the n bytes at p; unknown
** fields are skipped, a known field with the wrong wire type refused. */
static kl_rc scan(walk &w, const pmsg *m, const uint8_t *p, size_t n) {
  const uint8_t *end = p + n;
  while (p < end) {
    const uint8_t *t = p;
    uint64_t tag, v = 0;
    if (!varint(&p, end, &tag)) return fail(w, t, "tag runs past the end of %s", m->d->name().c_str());
    uint64_t num = tag >> 3;
    unsigned wt = (unsigned)(tag & 7);
    if (num == 0 || num > 536870911) return fail(w, t, "field number %llu in a tag", (unsigned long long)num);
    const uint8_t *vp = p;
    int fi = find_field(m, num);
    /* errors name the field from here on, when the schema has it */
    int known = fi >= 0;
    if (known) w.path[++w.depth] = frame{m, &m->f[(size_t)fi], -1};
    switch (wt) {
      case 0:
        if (!varint(&p, end, &v)) return fail(w, t, "varint of field %llu runs past the end", (unsigned long long)num);
        break;
      case 1:
      case 5: {
        size_t k = wt == 1 ? 8 : 4;
        if ((size_t)(end - p) < k)
          return fail(w, t, "%s value of field %llu runs past the end", wire_name(wt), (unsigned long long)num);
        v = k;
        p += k;
        break;
      }
      case 2:
        if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
          return fail(w, t, "length of field %llu runs past the end (%zu bytes left)",
                      (unsigned long long)num, (size_t)(end - p));
        vp = p;
        p += v;
        break;
      case 3: {
        size_t len;
        kl_rc rc = skip_group(w, p, end, num, w.depth + 1, &len, &p);
        if (rc) return rc;
        v = len;
        break;
      }
      case 4: return fail(w, t, "end-group tag of field %llu without its start", (unsigned long long)num);
      default: return fail(w, t, "wire type %u (field %llu) does not exist", wt, (unsigned long long)num);
    }
    if (!known) continue;
    const pfield &f = m->f[(size_t)fi];
    if ((int)wt != f.wire && !(wt == 2 && f.packable))
      return fail(w, t, "wire type %u (%s) where %s needs %d (%s)", wt, wire_name(wt),
                  f.fd->type_name(), f.wire, wire_name((unsigned)f.wire));
    w.depth--;
    kl_rc rc = grow(w, w.o, w.co, w.no + 1);
    if (rc) return rc;
    w.o[w.no++] = occ{(uint32_t)fi, wt, vp, v};
  }
  return KL_OK;
}

static kl_rc message(walk &w, const pmsg *m, const uint8_t *p, size_t n);

/* One scalar value of f from an occurrence (not packed). */
static kl_rc scalar(walk &w, const pfield &f, const occ &o) {
  uint64_t v = o.v;
  switch (f.type) {
    case FD::TYPE_INT64: return put_i64(w, (int64_t)v);
    case FD::TYPE_UINT64: return put_u64(w, v);
    case FD::TYPE_INT32: return put_i64(w, (int32_t)(uint32_t)v);
    case FD::TYPE_UINT32: return put_u64(w, (uint32_t)v);
    case FD::TYPE_SINT32: {
      uint32_t u = (uint32_t)v;
      return put_i64(w, (int32_t)((u >> 1) ^ (0u - (u & 1))));
    }
    case FD::TYPE_SINT64: return put_i64(w, (int64_t)((v >> 1) ^ (0 - (v & 1))));
    case FD::TYPE_BOOL: return v ? put(w, "true", 4) : put(w, "false", 5);
    case FD::TYPE_ENUM: {
      const gp::EnumValueDescriptor *e = f.en->FindValueByNumber((int32_t)(uint32_t)v);
      if (!e) return put_i64(w, (int32_t)(uint32_t)v);
      kl_rc rc = putc1(w, '"');
      if (!rc) rc = puts_(w, e->name());
      return rc ? rc : putc1(w, '"');
    }
    case FD::TYPE_FIXED64: return put_u64(w, le64(o.p));
    case FD::TYPE_SFIXED64: return put_i64(w, (int64_t)le64(o.p));
    case FD::TYPE_DOUBLE: {
      uint64_t b = le64(o.p);
      double d;
      memcpy(&d, &b, 8);
      return put_double(w, d);
    }
    case FD::TYPE_FIXED32: return put_u64(w, le32(o.p));
    case FD::TYPE_SFIXED32: return put_i64(w, (int32_t)le32(o.p));
    case FD::TYPE_FLOAT: {
      uint32_t b = le32(o.p);
      float d;
      memcpy(&d, &b, 4);
      return put_float(w, d);
    }
    case FD::TYPE_STRING: return put_string(w, o.p, (size_t)o.v);
    case FD::TYPE_BYTES: return put_hex(w, o.p, (size_t)o.v);
    case FD::TYPE_MESSAGE:
    case FD::TYPE_GROUP: return message(w, f.sub, o.p, (size_t)o.v);
  }
  return KL_OK;
}

/* The elements of a packed run of f, appended as array items. */
static kl_rc packed(walk &w, const pfield &f, const occ &o, long *idx) {
  const uint8_t *p = o.p, *end = o.p + o.v;
  while (p < end) {
    occ e{o.fi, (uint32_t)f.wire, p, 0};
    w.path[w.depth].idx = *idx;
    if (f.wire == 0) {
      if (!varint(&p, end, &e.v)) return fail(w, p, "packed varint runs past the end");
    } else {
      size_t k = f.wire == 1 ? 8 : 4;
      if ((size_t)(end - p) < k) return fail(w, p, "packed run is not a multiple of %zu bytes", k);
      p += k;
    }
    kl_rc rc = *idx ? putc1(w, ',') : KL_OK;
    if (!rc) rc = scalar(w, f, e);
    if (rc) return rc;
    ++*idx;
  }
  return KL_OK;
}

/* A singular message from its occurrences ix[a..b): one is decoded in
** place, several as the concatenation of their bytes (their merge). */
static kl_rc merged(walk &w, const pfield &f, size_t a, size_t b) {
  if (b - a == 1) {
    const occ o = w.o[w.ix[a]];
    return message(w, f.sub, o.p, (size_t)o.v);
  }
  size_t total = 0;
  for (size_t i = a; i < b; i++) total += (size_t)w.o[w.ix[i]].v;
  uint8_t *cat = (uint8_t *)kl_malloc(w.env, total ? total : 1);
  if (!cat) return kl_err_set(w.err, KL_NOMEM, "out of memory decoding");
  size_t k = 0;
  for (size_t i = a; i < b; i++) {
    const occ &o = w.o[w.ix[i]];
    if (o.v) memcpy(cat + k, o.p, (size_t)o.v);
    k += (size_t)o.v;
  }
  kl_rc rc = message(w, f.sub, cat, total);
  kl_free(w.env, cat);
  return rc;
}

/* A map: each entry's key rendered as a JSON string into keys, the last
** entry of each key kept, written in the order of the kept entries. */
static kl_rc map_field(walk &w, const pfield &f, size_t a, size_t b);

static kl_rc map_key(walk &w, const pfield &kf, const occ *o) {
  if (!o) {
    if (kf.type == FD::TYPE_STRING) return puts_(w, kf.def);
    kl_rc rc = putc1(w, '"');
    if (!rc) rc = puts_(w, kf.def);
    return rc ? rc : putc1(w, '"');
  }
  if (kf.type == FD::TYPE_STRING) return scalar(w, kf, *o);
  kl_rc rc = putc1(w, '"');
  if (!rc) rc = scalar(w, kf, *o);
  return rc ? rc : putc1(w, '"');
}

/* Scan one entry's bytes; OUT: the last key occurrence and the value's
** occurrences, as indexes into w.o from base (the caller pops them). */
static kl_rc entry_scan(walk &w, const pmsg *em, const occ &e, const occ **key, size_t *vfirst,
                        size_t *vlast, size_t *nval) {
  size_t base = w.no;
  kl_rc rc = scan(w, em, e.p, (size_t)e.v);
  if (rc) return rc;
  *key = nullptr;
  *nval = 0;
  *vfirst = *vlast = 0;
  for (size_t i = base; i < w.no; i++) {
    if (em->f[w.o[i].fi].number == 1) *key = &w.o[i];
    else {
      if (!*nval) *vfirst = i;
      *vlast = i;
      ++*nval;
    }
  }
  return KL_OK;
}

static kl_rc map_value(walk &w, const pmsg *em, size_t vfirst, size_t vlast, size_t nval) {
  const pfield *vf = nullptr;
  for (const pfield &x : em->f)
    if (x.number == 2) vf = &x;
  if (!vf) return put(w, "null", 4);
  if (!nval) return puts_(w, vf->def);
  if (!vf->sub || nval == 1) return scalar(w, *vf, w.o[vlast]);
  /* several occurrences of a message value: merge them */
  size_t ib = w.nix;
  kl_rc rc = grow(w, w.ix, w.cix, w.nix + nval);
  if (rc) return rc;
  for (size_t i = vfirst; i <= vlast; i++)
    if (em->f[w.o[i].fi].number == 2) w.ix[w.nix++] = (uint32_t)i;
  rc = merged(w, *vf, ib, w.nix);
  w.nix = ib;
  return rc;
}

/* A walker of the wire format of map entries (complexity above 25): each
** branch is one of protobuf's rules for an entry (key or value missing,
** repeated, of a wire type its field does not take, the last one winning). */
static kl_rc map_field(walk &w, const pfield &f, size_t a, size_t b) {
  const pmsg *em = f.sub;
  const pfield *kf = nullptr;
  for (const pfield &x : em->f)
    if (x.number == 1) kf = &x;
  if (!kf) return put(w, "{}", 2);
  size_t ne = b - a;
  /* keys: the JSON text of each entry's key, rendered into a buffer of
  ** their own (kpos: offset, length, kept) */
  kl_buf keys = {nullptr, 0, 0};
  uint32_t *kpos = (uint32_t *)kl_malloc(w.env, (ne ? ne : 1) * 3 * sizeof(uint32_t));
  if (!kpos) return kl_err_set(w.err, KL_NOMEM, "out of memory decoding");
  kl_rc rc = KL_OK;
  kl_buf *saved = w.out;
  size_t saved_start = w.start;
  w.out = &keys;
  w.start = 0;
  for (size_t i = 0; i < ne && !rc; i++) {
    size_t base = w.no;
    const occ *key;
    size_t vf, vl, nv;
    w.path[w.depth].idx = (long)i;
    rc = entry_scan(w, em, w.o[w.ix[a + i]], &key, &vf, &vl, &nv);
    size_t k0 = keys.len;
    if (!rc) rc = map_key(w, *kf, key);
    kpos[3 * i] = (uint32_t)k0;
    kpos[3 * i + 1] = (uint32_t)(keys.len - k0);
    kpos[3 * i + 2] = 1;
    w.no = base;
  }
  w.out = saved;
  w.start = saved_start;
  if (!rc && ne > 1) {
    /* the last entry of each key wins: sort (key, position), keep the last */
    uint32_t *ord = (uint32_t *)kl_malloc(w.env, ne * sizeof(uint32_t));
    if (!ord) rc = kl_err_set(w.err, KL_NOMEM, "out of memory decoding");
    if (!rc) {
      for (size_t i = 0; i < ne; i++) ord[i] = (uint32_t)i;
      const uint8_t *kb = keys.p;
      auto cmp = [&](uint32_t x, uint32_t y) {
        size_t lx = kpos[3 * x + 1], ly = kpos[3 * y + 1];
        int c = memcmp(kb + kpos[3 * x], kb + kpos[3 * y], std::min(lx, ly));
        if (c) return c < 0;
        if (lx != ly) return lx < ly;
        return x < y;
      };
      std::sort(ord, ord + ne, cmp);
      for (size_t i = 0; i + 1 < ne; i++) {
        uint32_t x = ord[i], y = ord[i + 1];
        if (kpos[3 * x + 1] == kpos[3 * y + 1] &&
            !memcmp(kb + kpos[3 * x], kb + kpos[3 * y], kpos[3 * x + 1]))
          kpos[3 * x + 2] = 0;
      }
      kl_free(w.env, ord);
    }
  }
  if (!rc) rc = putc1(w, '{');
  bool first = true;
  for (size_t i = 0; i < ne && !rc; i++) {
    if (!kpos[3 * i + 2]) continue;
    size_t base = w.no;
    const occ *key;
    size_t vf, vl, nv;
    w.path[w.depth].idx = (long)i;
    rc = entry_scan(w, em, w.o[w.ix[a + i]], &key, &vf, &vl, &nv);
    if (!rc && !first) rc = putc1(w, ',');
    if (!rc) rc = put(w, (const char *)keys.p + kpos[3 * i], kpos[3 * i + 1]);
    if (!rc) rc = putc1(w, ':');
    if (!rc) rc = map_value(w, em, vf, vl, nv);
    w.no = base;
    first = false;
  }
  if (!rc) rc = putc1(w, '}');
  kl_free(w.env, kpos);
  kl_buf_free(w.env, &keys);
  return rc;
}

/* The value of field f from its occurrences ix[a..b) (wire order). */
static kl_rc field_value(walk &w, const pfield &f, size_t a, size_t b) {
  if (f.map) return map_field(w, f, a, b);
  if (f.repeated) {
    kl_rc rc = putc1(w, '[');
    long idx = 0;
    for (size_t i = a; i < b && !rc; i++) {
      const occ o = w.o[w.ix[i]];
      if (o.wt == 2 && f.packable) {
        rc = packed(w, f, o, &idx);
        continue;
      }
      w.path[w.depth].idx = idx;
      if (idx) rc = putc1(w, ',');
      if (!rc) rc = scalar(w, f, o);
      idx++;
    }
    return rc ? rc : putc1(w, ']');
  }
  if (a == b) return puts_(w, f.def);
  if (f.sub) return merged(w, f, a, b);
  const occ o = w.o[w.ix[b - 1]];
  return scalar(w, f, o);
}

/* confluent.type.Decimal (value: the unscaled number in two's-complement
** big-endian bytes; scale) as the exact JSON number it stands for, as
** Confluent's converters read it (precision only describes it), in
** decimal.h's text. */
static kl_rc decimal(walk &w, const pmsg *m, const uint8_t *p, size_t n) {
  size_t base = w.no;
  kl_rc rc = scan(w, m, p, n);
  if (rc) return rc;
  const uint8_t *v = nullptr;
  size_t vn = 0;
  int32_t scale = 0;
  for (size_t i = base; i < w.no; i++) { /* the last of each wins */
    const occ &o = w.o[i];
    if (m->f[o.fi].number == 1) v = o.p, vn = (size_t)o.v;
    else if (m->f[o.fi].number == 3) scale = (int32_t)(uint32_t)o.v;
  }
  w.no = base;
  if (vn > KL_PROTO_MAX_DECIMAL)
    return fail(w, p, "decimal of %zu bytes (at most %d)", vn, KL_PROTO_MAX_DECIMAL);
  if (scale > KL_PROTO_MAX_SCALE || scale < -KL_PROTO_MAX_SCALE)
    return fail(w, p, "decimal scale %d (at most %d either way)", (int)scale, KL_PROTO_MAX_SCALE);
  char t[KL_DECIMAL_TEXT_MAX(KL_PROTO_MAX_DECIMAL, KL_PROTO_MAX_SCALE)];
  return put(w, t, kl_decimal_text(v, vn, scale, t));
}

/* A walker of a message's wire format (complexity above 25): each branch
** is one of protobuf's rules (unknown fields kept out, a non-repeated
** field's last occurrence winning, packed and unpacked repeated fields,
** message fields merged, oneof members). */
static kl_rc message(walk &w, const pmsg *m, const uint8_t *p, size_t n) {
  if (w.depth >= KL_PROTO_MAX_DEPTH)
    return fail(w, p, "messages nested deeper than %d", KL_PROTO_MAX_DEPTH);
  if (m->decimal) return decimal(w, m, p, n);
  size_t base = w.no, ibase = w.nix;
  kl_rc rc = scan(w, m, p, n);
  if (rc) return rc;
  size_t no = w.no - base, nf = m->f.size();
  /* counting sort of the occurrences by field, wire order kept:
  ** ix[ibase .. +nf+1) the run starts, then the ordered occurrences, then
  ** per oneof the winning field and the position after which it counts */
  size_t need = nf + 1 + no + 2 * (size_t)m->noneofs;
  rc = grow(w, w.ix, w.cix, w.nix + need);
  if (rc) return rc;
  w.nix += need;
  uint32_t *start = w.ix + ibase, *ord = start + nf + 1, *win = ord + no;
  memset(start, 0, (nf + 1) * sizeof(uint32_t));
  for (size_t i = 0; i < no; i++) start[w.o[base + i].fi + 1]++;
  for (size_t i = 0; i < nf; i++) start[i + 1] += start[i];
  for (int k = 0; k < m->noneofs; k++) {
    win[2 * k] = UINT32_MAX;
    win[2 * k + 1] = 0;
  }
  /* place each at its run's cursor (the starts advance), then shift the
  ** starts back */
  for (size_t i = 0; i < no; i++) {
    uint32_t fi = w.o[base + i].fi;
    ord[start[fi]++] = (uint32_t)(base + i);
  }
  for (size_t i = nf; i > 0; i--) start[i] = start[i - 1];
  start[0] = 0;
  /* oneofs: the last member on the wire wins; its earlier occurrences
  ** count only after the last occurrence of another member */
  if (m->noneofs) {
    for (size_t i = no; i-- > 0;) {
      const pfield &f = m->f[w.o[base + i].fi];
      if (f.oneof < 0) continue;
      uint32_t *wk = win + 2 * f.oneof;
      if (*wk == UINT32_MAX) *wk = w.o[base + i].fi;
      else if (*wk != w.o[base + i].fi && !wk[1]) wk[1] = (uint32_t)(base + i + 1);
    }
  }
  rc = putc1(w, '{');
  bool first = true;
  w.depth++;
  for (size_t i = 0; i < nf && !rc; i++) {
    const pfield &f = m->f[i];
    /* the arrays may move as deeper levels grow them: index, never keep */
    size_t a = ibase + nf + 1 + w.ix[ibase + i], b = ibase + nf + 1 + w.ix[ibase + i + 1];
    if (f.oneof >= 0) {
      size_t wk = ibase + nf + 1 + no + 2 * (size_t)f.oneof;
      if (w.ix[wk] != i) continue;
      while (a < b && w.ix[a] < w.ix[wk + 1]) a++;
    }
    w.path[w.depth] = frame{m, &f, -1};
    if (!first) rc = putc1(w, ',');
    first = false;
    if (!rc) rc = puts_(w, f.key);
    if (!rc) rc = field_value(w, f, a, b);
  }
  w.depth--;
  if (!rc) rc = putc1(w, '}');
  w.no = base;
  w.nix = ibase;
  return rc;
}

/* The message the message-index array at *pp selects. */
static kl_rc select_message(const kl_proto_schema *s, const uint8_t **pp, const uint8_t *end,
                            const pmsg **out, kl_err *err) {
  const uint8_t *p = *pp;
  uint64_t u;
  if (!varint(&p, end, &u) || u > UINT32_MAX)
    return kl_err_set(err, KL_CORRUPT, "message-index array: count runs past the end or is too long");
  int32_t count = (int32_t)(((uint32_t)u >> 1) ^ (0u - ((uint32_t)u & 1)));
  if (count < 0 || count > KL_PROTO_MAX_DEPTH)
    return kl_err_set(err, KL_CORRUPT, "message-index array: count %d", (int)count);
  const gp::Descriptor *d = nullptr;
  int32_t path[KL_PROTO_MAX_DEPTH + 1];
  for (int32_t i = 0; i < (count ? count : 1); i++) {
    int32_t idx = 0;
    if (count) {
      if (!varint(&p, end, &u) || u > UINT32_MAX)
        return kl_err_set(err, KL_CORRUPT, "message-index array: index %d runs past the end", (int)i);
      idx = (int32_t)(((uint32_t)u >> 1) ^ (0u - ((uint32_t)u & 1)));
    }
    path[i] = idx;
    /* the candidates: top-level messages, then nested ones that are not
    ** the entries of map fields */
    int have = 0;
    const gp::Descriptor *pick = nullptr;
    int total = d ? d->nested_type_count() : s->file->message_type_count();
    for (int j = 0; j < total; j++) {
      const gp::Descriptor *c = d ? d->nested_type(j) : s->file->message_type(j);
      if (c->options().map_entry()) continue;
      if (have++ == idx) pick = c;
    }
    if (idx < 0 || !pick) {
      std::string ps;
      for (int32_t k = 0; k <= i; k++) ps += (k ? "," : "") + std::to_string(path[k]);
      return kl_err_set(err, KL_CORRUPT,
                        "message index [%s]: %s has %d message%s, no message %d", ps.c_str(),
                        d ? d->full_name().c_str() : "the schema", have, have == 1 ? "" : "s",
                        (int)idx);
    }
    d = pick;
  }
  auto it = s->by_desc.find(d);
  if (it == s->by_desc.end()) return kl_err_set(err, KL_CORRUPT, "%s: no table", d->full_name().c_str());
  *out = it->second;
  *pp = p;
  return KL_OK;
}

extern "C" kl_rc kl_proto_decode(const kl_proto_schema *s, const uint8_t *payload, size_t n,
                                 kl_buf *json, kl_err *err) {
  const uint8_t *p = payload, *end = payload + n;
  const pmsg *m = nullptr;
  kl_rc rc = select_message(s, &p, end, &m, err);
  if (rc) return rc;
  walk w{};
  w.env = s->has_env ? &s->env : nullptr;
  w.out = json;
  w.err = err;
  w.start = json->len;
  w.base = payload;
  w.end = end;
  w.path[0] = frame{m, nullptr, -1};
  w.depth = 0;
  rc = message(w, m, p, (size_t)(end - p));
  kl_free(w.env, w.o);
  kl_free(w.env, w.ix);
  return rc;
}
