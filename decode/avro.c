/*
** avro.c - see avro.h.
*/
#include "avro.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "avro_node.h"
#include "decimal.h"
#include "shortest.h"
#include "utf8.h"

_Static_assert(KL_AVRO_MAX_DECIMAL <= KL_DECIMAL_MAX_BYTES, "decimal.h bounds the decimals");

const char *const kl_avro_type_names[] = {
    "null", "boolean", "int", "long", "float", "double", "bytes", "string",
    "record", "enum", "array", "map", "union", "fixed"};


/* ---- parsing ---- */

static kl_rc compile_schema(kl_avro_schema *s);
static void code_free(const kl_env *env, av_code *c);

typedef struct av_parse {
  kl_avro_schema *s;
  kl_err *err;
  int depth;
} av_parse;

static kl_rc bad(av_parse *ps, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kl_err_set(ps->err, KL_CORRUPT, "schema: %s", msg);
}

static av_node *new_node(av_parse *ps, av_type t) {
  kl_avro_schema *s = ps->s;
  if (s->nnodes == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    av_node **v = kl_realloc(s->env, s->nodes, cap * sizeof *v);
    if (!v) return NULL;
    s->nodes = v;
    s->cap = cap;
  }
  av_node *nd = kl_malloc(s->env, sizeof *nd);
  if (!nd) return NULL;
  memset(nd, 0, sizeof *nd);
  nd->type = t;
  s->nodes[s->nnodes++] = nd;
  return nd;
}

static av_node *find_named(const kl_avro_schema *s, const char *full) {
  for (size_t i = 0; i < s->nnodes; i++) {
    const av_node *nd = s->nodes[i];
    if (nd->name && strcmp(nd->name, full) == 0) return s->nodes[i];
  }
  return NULL;
}

static int primitive(const char *t, av_type *out) {
  for (int i = AV_NULL; i <= AV_STRING; i++) {
    if (strcmp(t, kl_avro_type_names[i]) == 0) {
      *out = (av_type)i;
      return 1;
    }
  }
  return 0;
}

/* The full name of a named type: a dotted name is full, else it takes the
** namespace attribute, else the enclosing one (the spec's "Names"). */
static char *full_name(av_parse *ps, const char *name, const char *ns) {
  size_t nl = strlen(name), sl = ns && *ns && !strchr(name, '.') ? strlen(ns) : 0;
  char *f = kl_malloc(ps->s->env, nl + sl + 2);
  if (!f) return NULL;
  if (sl) {
    memcpy(f, ns, sl);
    f[sl] = '.';
    memcpy(f + sl + 1, name, nl + 1);
  } else {
    memcpy(f, name, nl + 1);
  }
  return f;
}

static kl_rc parse_node(av_parse *ps, json_t *j, const char *ns, av_node **out);

static kl_rc lookup_name(av_parse *ps, const char *name, const char *ns, av_node **out) {
  av_type t;
  if (primitive(name, &t)) {
    *out = new_node(ps, t);
    return *out ? KL_OK : KL_NOMEM;
  }
  char *f = full_name(ps, name, ns);
  if (!f) return KL_NOMEM;
  av_node *nd = find_named(ps->s, f);
  kl_free(ps->s->env, f);
  if (!nd) nd = find_named(ps->s, name);
  if (!nd) return bad(ps, "unknown type \"%.200s\"", name);
  *out = nd;
  return KL_OK;
}

static kl_rc alloc_kids(av_parse *ps, av_node *nd, size_t n, int with_names) {
  const kl_env *env = ps->s->env;
  nd->kids = kl_malloc(env, (n ? n : 1) * sizeof *nd->kids);
  if (!nd->kids) return KL_NOMEM;
  memset(nd->kids, 0, (n ? n : 1) * sizeof *nd->kids);
  if (with_names) {
    nd->names = kl_malloc(env, (n ? n : 1) * sizeof *nd->names);
    if (!nd->names) return KL_NOMEM;
    memset(nd->names, 0, (n ? n : 1) * sizeof *nd->names);
  }
  nd->n = n;
  return KL_OK;
}

/* Register a named type before its body is parsed, so that the body may
** refer to it (a recursive record). */
static kl_rc named(av_parse *ps, json_t *j, av_node *nd, const char **ns) {
  const char *name = json_string_value(json_object_get(j, "name"));
  if (!name || !*name) return bad(ps, "a %s without a name", kl_avro_type_names[nd->type]);
  const char *own = json_string_value(json_object_get(j, "namespace"));
  if (own) *ns = own;
  if (!(nd->name = full_name(ps, name, *ns))) return KL_NOMEM;
  for (size_t i = 0; i + 1 < ps->s->nnodes; i++) {
    if (ps->s->nodes[i]->name && strcmp(ps->s->nodes[i]->name, nd->name) == 0) {
      kl_free(ps->s->env, nd->name);
      nd->name = NULL;
      return bad(ps, "type \"%.200s\" defined twice", name);
    }
  }
  return KL_OK;
}

static char *ns_of(av_parse *ps, const av_node *nd) {
  const char *dot = strrchr(nd->name, '.');
  size_t n = dot ? (size_t)(dot - nd->name) : 0;
  char *s = kl_malloc(ps->s->env, n + 1);
  if (s) {
    memcpy(s, nd->name, n);
    s[n] = 0;
  }
  return s;
}

static kl_rc parse_record(av_parse *ps, json_t *j, av_node *nd, const char *ns) {
  kl_rc rc = named(ps, j, nd, &ns);
  if (rc) return rc;
  json_t *fields = json_object_get(j, "fields");
  if (!json_is_array(fields)) return bad(ps, "record \"%.200s\" has no fields array", nd->name);
  if ((rc = alloc_kids(ps, nd, json_array_size(fields), 1))) return rc;
  char *inner = ns_of(ps, nd);
  if (!inner) return KL_NOMEM;
  for (size_t i = 0; rc == KL_OK && i < nd->n; i++) {
    json_t *f = json_array_get(fields, i);
    const char *fname = json_string_value(json_object_get(f, "name"));
    if (!fname) {
      rc = bad(ps, "field %zu of record \"%.200s\" has no name", i, nd->name);
    } else if (!(nd->names[i] = kl_strdup(ps->s->env, fname))) {
      rc = KL_NOMEM;
    } else {
      json_t *ft = json_object_get(f, "type");
      rc = ft ? parse_node(ps, ft, inner, &nd->kids[i])
              : bad(ps, "field \"%.200s\" has no type", fname);
    }
  }
  kl_free(ps->s->env, inner);
  return rc;
}

static kl_rc parse_enum(av_parse *ps, json_t *j, av_node *nd, const char *ns) {
  kl_rc rc = named(ps, j, nd, &ns);
  if (rc) return rc;
  json_t *syms = json_object_get(j, "symbols");
  if (!json_is_array(syms)) return bad(ps, "enum \"%.200s\" has no symbols array", nd->name);
  if ((rc = alloc_kids(ps, nd, json_array_size(syms), 1))) return rc;
  for (size_t i = 0; i < nd->n; i++) {
    const char *sym = json_string_value(json_array_get(syms, i));
    if (!sym) return bad(ps, "symbol %zu of enum \"%.200s\" is not a string", i, nd->name);
    if (!(nd->names[i] = kl_strdup(ps->s->env, sym))) return KL_NOMEM;
  }
  return KL_OK;
}

static kl_rc parse_fixed(av_parse *ps, json_t *j, av_node *nd, const char *ns) {
  kl_rc rc = named(ps, j, nd, &ns);
  if (rc) return rc;
  json_t *size = json_object_get(j, "size");
  if (!json_is_integer(size) || json_integer_value(size) < 0 ||
      json_integer_value(size) > INT32_MAX) {
    return bad(ps, "fixed \"%.200s\" has no valid size", nd->name);
  }
  nd->size = json_integer_value(size);
  return KL_OK;
}

/* Logical types on their underlying type; an invalid one is ignored. */
static void logical(json_t *j, av_node *nd) {
  const char *lt = json_string_value(json_object_get(j, "logicalType"));
  if (!lt) return;
  if (strcmp(lt, "decimal") == 0 && (nd->type == AV_BYTES || nd->type == AV_FIXED)) {
    json_t *p = json_object_get(j, "precision"), *sc = json_object_get(j, "scale");
    json_int_t prec = json_is_integer(p) ? json_integer_value(p) : 0;
    json_int_t scale = sc ? (json_is_integer(sc) ? json_integer_value(sc) : -1) : 0;
    if (prec > 0 && scale >= 0 && scale <= prec && scale <= KL_DECIMAL_MAX_SCALE) {
      nd->logical = AV_DECIMAL;
      nd->scale = (int32_t)scale;
      nd->precision = prec > INT32_MAX ? INT32_MAX : (int32_t)prec;
    }
  } else if (strcmp(lt, "uuid") == 0 && nd->type == AV_FIXED && nd->size == 16) {
    nd->logical = AV_UUID;
  }
}

static kl_rc parse_object(av_parse *ps, json_t *j, const char *ns, av_node **out) {
  const char *t = json_string_value(json_object_get(j, "type"));
  json_t *tj = json_object_get(j, "type");
  if (!t) {
    /* {"type": {...}} or {"type": [...]}: the inner schema */
    if (json_is_object(tj) || json_is_array(tj)) return parse_node(ps, tj, ns, out);
    return bad(ps, "an object without a type");
  }
  av_type pt;
  av_node *nd;
  kl_rc rc = KL_OK;
  if (primitive(t, &pt)) {
    if (!(nd = new_node(ps, pt))) return KL_NOMEM;
  } else if (strcmp(t, "record") == 0 || strcmp(t, "error") == 0) {
    if (!(nd = new_node(ps, AV_RECORD))) return KL_NOMEM;
    rc = parse_record(ps, j, nd, ns);
  } else if (strcmp(t, "enum") == 0) {
    if (!(nd = new_node(ps, AV_ENUM))) return KL_NOMEM;
    rc = parse_enum(ps, j, nd, ns);
  } else if (strcmp(t, "fixed") == 0) {
    if (!(nd = new_node(ps, AV_FIXED))) return KL_NOMEM;
    rc = parse_fixed(ps, j, nd, ns);
  } else if (strcmp(t, "array") == 0 || strcmp(t, "map") == 0) {
    if (!(nd = new_node(ps, t[0] == 'a' ? AV_ARRAY : AV_MAP))) return KL_NOMEM;
    json_t *inner = json_object_get(j, t[0] == 'a' ? "items" : "values");
    if (!inner) return bad(ps, "%s without %s", t, t[0] == 'a' ? "items" : "values");
    if ((rc = alloc_kids(ps, nd, 1, 0)) == KL_OK) rc = parse_node(ps, inner, ns, &nd->kids[0]);
  } else {
    return lookup_name(ps, t, ns, out); /* {"type": "SomeRecord"} */
  }
  if (rc == KL_OK) logical(j, nd);
  *out = nd;
  return rc;
}

static kl_rc parse_union(av_parse *ps, json_t *j, const char *ns, av_node **out) {
  av_node *nd = new_node(ps, AV_UNION);
  if (!nd) return KL_NOMEM;
  kl_rc rc = alloc_kids(ps, nd, json_array_size(j), 0);
  if (rc) return rc;
  if (nd->n == 0) return bad(ps, "an empty union");
  for (size_t i = 0; rc == KL_OK && i < nd->n; i++) {
    json_t *b = json_array_get(j, i);
    if (json_is_array(b)) return bad(ps, "a union inside a union");
    rc = parse_node(ps, b, ns, &nd->kids[i]);
  }
  *out = nd;
  return rc;
}

static kl_rc parse_node(av_parse *ps, json_t *j, const char *ns, av_node **out) {
  if (++ps->depth > KL_AVRO_MAX_DEPTH) return bad(ps, "nested deeper than %d", KL_AVRO_MAX_DEPTH);
  kl_rc rc;
  if (json_is_string(j)) rc = lookup_name(ps, json_string_value(j), ns, out);
  else if (json_is_object(j)) rc = parse_object(ps, j, ns, out);
  else if (json_is_array(j)) rc = parse_union(ps, j, ns, out);
  else rc = bad(ps, "a type is a string, an object or an array");
  ps->depth--;
  return rc;
}

/* The fewest bytes a datum takes; a recursive record counts 0 for the
** part that recurses (it must end in a union somewhere, or never ends). */
static size_t min_bytes(av_node *nd) {
  if (nd->sized) return nd->min_bytes;
  nd->sized = 1;
  size_t m = 0;
  switch (nd->type) {
    case AV_NULL: m = 0; break;
    case AV_FLOAT: m = 4; break;
    case AV_DOUBLE: m = 8; break;
    case AV_FIXED: m = (size_t)nd->size; break;
    case AV_RECORD:
      for (size_t i = 0; i < nd->n; i++) {
        size_t k = min_bytes(nd->kids[i]);
        m = m + k < m ? SIZE_MAX : m + k;
      }
      break;
    default: m = 1; /* a varint, a length, an index, a count */
  }
  nd->min_bytes = m;
  return m;
}

/* Names as the JSON written: quoted and escaped once, here, so that
** decoding copies them; a name that is not UTF-8 is refused. */
static kl_rc make_keys(kl_avro_schema *s, av_node *nd, kl_err *err) {
  if (!nd->names || (nd->type != AV_RECORD && nd->type != AV_ENUM)) return KL_OK;
  size_t n = nd->n ? nd->n : 1;
  if (!(nd->keys = kl_malloc(s->env, n * sizeof *nd->keys)) ||
      !(nd->key_len = kl_malloc(s->env, n * sizeof *nd->key_len))) {
    return KL_NOMEM;
  }
  memset(nd->keys, 0, n * sizeof *nd->keys);
  for (size_t i = 0; i < nd->n; i++) {
    const char *nm = nd->names[i];
    size_t len = strlen(nm);
    if (!kl_utf8_valid((const uint8_t *)nm, len)) {
      return kl_err_set(err, KL_CORRUPT, "schema: name %zu of %.200s is not UTF-8", i,
                        nd->name ? nd->name : "a record");
    }
    char *k = kl_malloc(s->env, 6 * len + 5 + KL_KEY_PAD);
    if (!k) return KL_NOMEM;
    memset(k, 0, 6 * len + 5 + KL_KEY_PAD); /* put_key reads KL_KEY_PAD bytes at least */
    size_t w = 0;
    if (nd->type == AV_RECORD && i > 0) k[w++] = ','; /* the separator comes with the name */
    k[w++] = '"';
    for (size_t j = 0; j < len; j++) {
      unsigned char ch = (unsigned char)nm[j];
      if (ch == '"' || ch == '\\') {
        k[w++] = '\\';
        k[w++] = (char)ch;
      } else if (ch < 0x20) {
        w += (size_t)sprintf(k + w, "\\u%04x", ch);
      } else {
        k[w++] = (char)ch;
      }
    }
    k[w++] = '"';
    if (nd->type == AV_RECORD) k[w++] = ':';
    k[w] = 0;
    nd->keys[i] = k;
    nd->key_len[i] = w;
  }
  return KL_OK;
}

kl_rc kl_avro_schema_parse(const kl_env *env, const kl_avro_text *texts, size_t n,
                           kl_avro_schema **out, kl_err *err) {
  *out = NULL;
  if (n == 0) return kl_err_set(err, KL_MISUSE, "schema: none given");
  kl_avro_schema *s = kl_malloc(env, sizeof *s);
  if (!s) return KL_NOMEM;
  memset(s, 0, sizeof *s);
  s->env = env;
  av_parse ps = {s, err, 0};
  kl_rc rc = KL_OK;
  for (size_t i = 0; rc == KL_OK && i < n; i++) {
    json_error_t je;
    json_t *j = json_loadb(texts[i].text, texts[i].n, JSON_DECODE_ANY, &je);
    if (!j) {
      rc = kl_err_set(err, KL_CORRUPT, "schema%s: not JSON: %s (at character %d)",
                      i + 1 < n ? " reference" : "", je.text, je.position);
      break;
    }
    av_node *root = NULL;
    rc = parse_node(&ps, j, NULL, &root);
    json_decref(j);
    s->root = root;
  }
  for (size_t i = 0; rc == KL_OK && i < s->nnodes; i++) {
    min_bytes(s->nodes[i]);
    rc = make_keys(s, s->nodes[i], err);
  }
  if (rc == KL_OK) rc = compile_schema(s);
  if (rc) {
    if (err && err->rc == KL_OK) kl_err_set(err, rc, "schema: %s", kl_rc_name(rc));
    kl_avro_schema_free(s);
    return rc;
  }
  *out = s;
  return KL_OK;
}

void kl_avro_schema_free(kl_avro_schema *s) {
  if (!s) return;
  const kl_env *env = s->env;
  for (size_t i = 0; i < s->nnodes; i++) {
    av_node *nd = s->nodes[i];
    for (size_t k = 0; k < nd->n; k++) {
      if (nd->names) kl_free(env, nd->names[k]);
      if (nd->keys) kl_free(env, nd->keys[k]);
    }
    kl_free(env, nd->names);
    kl_free(env, nd->keys);
    kl_free(env, nd->key_len);
    kl_free(env, nd->kids);
    kl_free(env, nd->name);
    code_free(env, nd->code);
    kl_free(env, nd);
  }
  kl_free(env, s->nodes);
  kl_free(env, s);
}

int kl_avro_schema_is_bytes(const kl_avro_schema *s) {
  return s->root->type == AV_BYTES;
}

/* ---- decoding ---- */

typedef struct av_dec {
  const kl_env *env;
  const uint8_t *p, *end;
  kl_buf *o;
  unsigned flags;
  kl_err *err;
  int depth;
  size_t empty_items;       /* items that took no bytes, over the value */
  const char *pname[KL_AVRO_MAX_DEPTH + 2]; /* the path, for messages */
  int64_t pidx[KL_AVRO_MAX_DEPTH + 2];
} av_dec;

void kl_avro_path(const char *const *names, const int64_t *idx, int depth, char *out, size_t n) {
  size_t k = (size_t)snprintf(out, n, "$");
  for (int i = 1; i <= depth && k < n; i++) {
    if (names[i]) k += (size_t)snprintf(out + k, n - k, ".%s", names[i]);
    else if (idx[i] >= 0) k += (size_t)snprintf(out + k, n - k, "[%lld]", (long long)idx[i]);
  }
}

static kl_rc fail(av_dec *d, const char *fmt, ...) {
  char path[256], msg[256];
  kl_avro_path(d->pname, d->pidx, d->depth, path, sizeof path);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return kl_err_set(d->err, KL_CORRUPT, "%s: %s", path, msg);
}

static inline kl_rc put(av_dec *d, const void *s, size_t n) {
  kl_buf *o = d->o;
  if (o->cap - o->len < n && kl_buf_reserve(d->env, o, o->len + n)) return KL_NOMEM;
  memcpy(o->p + o->len, s, n);
  o->len += n;
  return KL_OK;
}

static inline kl_rc putc_(av_dec *d, char ch) { return put(d, &ch, 1); }

/* A name's JSON text (make_keys): one of up to KL_KEY_PAD bytes is copied
** as two words, the padding after it overwritten later. */
static inline kl_rc put_key(av_dec *d, const char *k, size_t n) {
  kl_buf *o = d->o;
  if (n > KL_KEY_PAD) return put(d, k, n);
  if (o->cap - o->len < KL_KEY_PAD && kl_buf_reserve(d->env, o, o->len + KL_KEY_PAD)) {
    return KL_NOMEM;
  }
  memcpy(o->p + o->len, k, 8);
  memcpy(o->p + o->len + 8, k + 8, 8);
  o->len += n;
  return KL_OK;
}

static kl_rc read_long_slow(av_dec *d, int64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (d->p >= d->end) return fail(d, "varint runs past the end");
    uint8_t b = *d->p++;
    if (shift == 63 && (b & 0x7e)) return fail(d, "varint longer than 64 bits");
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
      return KL_OK;
    }
  }
  return fail(d, "varint longer than 10 bytes");
}

/* Zig-zag varints; one byte (counts, lengths, small numbers) inline. */
static inline kl_rc read_long(av_dec *d, int64_t *out) {
  if (d->p < d->end && !(*d->p & 0x80)) {
    uint64_t v = *d->p++;
    *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
    return KL_OK;
  }
  return read_long_slow(d, out);
}

static kl_rc read_int(av_dec *d, int64_t *out) {
  const uint8_t *at = d->p;
  kl_rc rc = read_long(d, out);
  if (rc == KL_OK && (d->p - at > 5 || *out < INT32_MIN || *out > INT32_MAX)) {
    return fail(d, "int out of range");
  }
  return rc;
}

static kl_rc put_long(av_dec *d, int64_t v) {
  static const uint64_t pow10[] = {
      10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
      1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
      100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
      1000000000000000000ull, 10000000000000000000ull};
  kl_buf *o = d->o;
  if (o->cap - o->len < 21 && kl_buf_reserve(d->env, o, o->len + 21)) return KL_NOMEM;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  size_t nd = 1;
  while (nd < 20 && u >= pow10[nd - 1]) nd++;
  char *w = (char *)o->p + o->len;
  if (v < 0) *w++ = '-';
  for (size_t i = nd; i-- > 0; u /= 10) w[i] = (char)('0' + u % 10);
  o->len = (size_t)(w + nd - (char *)o->p);
  return KL_OK;
}

static kl_rc put_real(av_dec *d, double v, int is_float) {
  if (isnan(v)) return put(d, "\"NaN\"", 5);
  if (isinf(v)) return v > 0 ? put(d, "\"Infinity\"", 10) : put(d, "\"-Infinity\"", 11);
  char t[KL_SHORTEST_MAX];
  return put(d, t, kl_shortest(v, is_float, t));
}

static kl_rc put_hex(av_dec *d, const uint8_t *p, size_t n) {
  static const char hex[] = "0123456789abcdef";
  if (kl_buf_reserve(d->env, d->o, d->o->len + 2 * n + 2)) return KL_NOMEM;
  uint8_t *w = d->o->p + d->o->len;
  *w++ = '"';
  for (size_t i = 0; i < n; i++) {
    *w++ = (uint8_t)hex[p[i] >> 4];
    *w++ = (uint8_t)hex[p[i] & 15];
  }
  *w++ = '"';
  d->o->len = (size_t)(w - d->o->p);
  return KL_OK;
}

/* Bytes of a JSON string: 1 written as they are, 0 escaped (below 0x20,
** '"', '\\'), 2 past ASCII (written as they are once the string is known
** to be UTF-8). */
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const uint8_t str_byte[256] = {
    R16(0), R16(0), 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, R16(1), R16(1),
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, R16(1), R16(1),
    R16(2), R16(2), R16(2), R16(2), R16(2), R16(2), R16(2), R16(2)};
#undef R16

/* Eight bytes at once: nonzero when one of them is below 0x20, '"', '\\'
** or (high: 0x80 in each byte) past ASCII.  The tests of a word for a byte
** below n and for a zero byte are exact as a whole. */
static inline uint64_t special8(uint64_t x, uint64_t high) {
  const uint64_t ones = 0x0101010101010101ull, top = 0x8080808080808080ull;
  uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
  return ((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & top) | (x & high);
}

/* 1 when the n bytes at p are ASCII that a JSON string holds as it is:
** eight at a time, the last few read into a word of spaces. */
static inline int plain_ascii(const uint8_t *p, size_t n) {
  const uint64_t high = 0x8080808080808080ull;
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    uint64_t x;
    memcpy(&x, p + j, 8);
    if (special8(x, high)) return 0;
  }
  uint64_t x = 0x2020202020202020ull;
  memcpy(&x, p + j, n - j);
  return !special8(x, high);
}

/* A string as JSON text: most are plain ASCII, copied whole.  Otherwise
** runs of bytes that need no escape are copied, eight at a time while they
** last; the UTF-8 rule is checked from the first byte past ASCII on. */
static kl_rc put_string(av_dec *d, const uint8_t *p, size_t n) {
  static const char hex[] = "0123456789abcdef";
  if (kl_buf_reserve(d->env, d->o, d->o->len + 6 * n + 2)) return KL_NOMEM;
  uint8_t *w = d->o->p + d->o->len;
  if (plain_ascii(p, n)) {
    w[0] = '"';
    memcpy(w + 1, p, n);
    w[n + 1] = '"';
    d->o->len += n + 2;
    return KL_OK;
  }
  uint8_t ok = 1;                                /* 3 once the rest is UTF-8 */
  uint64_t high = 0x8080808080808080ull;        /* 0 likewise */
  *w++ = '"';
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 8 <= n) {
      uint64_t x;
      memcpy(&x, p + j, 8);
      if (special8(x, high)) break;
      memcpy(w + (j - i), &x, 8);
      j += 8;
    }
    while (j < n && (str_byte[p[j]] & ok)) {
      w[j - i] = p[j];
      j++;
    }
    w += j - i;
    if (j == n) break;
    uint8_t ch = p[j];
    if (ch >= 0x80) {
      if (!kl_utf8_valid(p + j, n - j)) return fail(d, "string is not UTF-8");
      ok = 3;
      high = 0;
      i = j;
      continue;
    }
    if (ch == '"' || ch == '\\') {
      *w++ = '\\';
      *w++ = ch;
    } else {
      memcpy(w, "\\u00", 4);
      w[4] = (uint8_t)hex[ch >> 4];
      w[5] = (uint8_t)hex[ch & 15];
      w += 6;
    }
    i = j + 1;
  }
  *w++ = '"';
  d->o->len = (size_t)(w - d->o->p);
  return KL_OK;
}

static kl_rc put_uuid(av_dec *d, const uint8_t *p) {
  static const char hex[] = "0123456789abcdef";
  char t[38], *w = t;
  *w++ = '"';
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) *w++ = '-';
    *w++ = hex[p[i] >> 4];
    *w++ = hex[p[i] & 15];
  }
  *w++ = '"';
  return put(d, t, (size_t)(w - t));
}

/* A two's-complement big-endian unscaled value as a decimal number with
** scale digits after the point (decimal.h). */
static kl_rc put_decimal(av_dec *d, const uint8_t *p, size_t n, int32_t scale) {
  if (n > KL_AVRO_MAX_DECIMAL) return fail(d, "decimal of %zu bytes (at most %d)", n,
                                           KL_AVRO_MAX_DECIMAL);
  if (kl_buf_reserve(d->env, d->o, d->o->len + KL_DECIMAL_TEXT_MAX(n, scale))) return KL_NOMEM;
  d->o->len += kl_decimal_text(p, n, scale, (char *)d->o->p + d->o->len);
  return KL_OK;
}

static kl_rc take(av_dec *d, size_t n, const uint8_t **out) {
  *out = d->p;
  if ((size_t)(d->end - d->p) < n) return fail(d, "%zu bytes run past the end", n);
  *out = d->p;
  d->p += n;
  return KL_OK;
}

static kl_rc take_len(av_dec *d, const uint8_t **out, size_t *n) {
  int64_t len = 0;
  kl_rc rc = read_long(d, &len);
  if (rc) return rc;
  if (len < 0) return fail(d, "negative length %lld", (long long)len);
  *n = (size_t)len;
  if ((uint64_t)len > (uint64_t)(d->end - d->p)) return fail(d, "length %lld runs past the end",
                                                           (long long)len);
  return take(d, *n, out);
}

static kl_rc datum(av_dec *d, const av_node *nd);
static kl_rc scalar(av_dec *d, const av_node *nd);

static inline int is_scalar(const av_node *nd) {
  return nd->type < AV_RECORD || nd->type == AV_ENUM || nd->type == AV_FIXED;
}

static kl_rc bytes_like(av_dec *d, const av_node *nd, const uint8_t *p, size_t n) {
  if (nd->logical == AV_DECIMAL) return put_decimal(d, p, n, nd->scale);
  if (nd->logical == AV_UUID) return put_uuid(d, p);
  return put_hex(d, p, n);
}

static kl_rc record(av_dec *d, const av_node *nd) {
  kl_rc rc = putc_(d, '{');
  for (size_t i = 0; rc == KL_OK && i < nd->n; i++) {
    d->pname[d->depth] = nd->names[i];
    if ((rc = put_key(d, nd->keys[i], nd->key_len[i]))) break;
    rc = datum(d, nd->kids[i]);
  }
  d->pname[d->depth] = NULL;
  return rc ? rc : putc_(d, '}');
}

/* Arrays and maps: blocks until a count of 0. */
static kl_rc blocks(av_dec *d, const av_node *nd) {
  int is_map = nd->type == AV_MAP;
  const av_node *item = nd->kids[0];
  size_t per = item->min_bytes + (is_map ? 1 : 0);
  kl_rc rc = putc_(d, is_map ? '{' : '[');
  int64_t idx = 0;
  for (;;) {
    int64_t count = 0;
    if (rc || (rc = read_long(d, &count))) return rc;
    if (count == 0) break;
    if (count < 0) {
      int64_t size = 0;
      if (count == INT64_MIN) return fail(d, "block count out of range");
      count = -count;
      if ((rc = read_long(d, &size))) return rc;
      if (size < 0) return fail(d, "negative block size");
    }
    if (per > 0 && (uint64_t)count > (uint64_t)(d->end - d->p) / per) {
      return fail(d, "block of %lld items runs past the end", (long long)count);
    }
    if (per == 0 && (uint64_t)count > KL_AVRO_MAX_EMPTY_ITEMS - d->empty_items) {
      return fail(d, "more than %d items that take no bytes", KL_AVRO_MAX_EMPTY_ITEMS);
    }
    if (per == 0) d->empty_items += (size_t)count;
    for (int64_t i = 0; i < count; i++, idx++) {
      if (idx && (rc = putc_(d, ','))) return rc;
      d->pidx[d->depth] = idx;
      if (is_map) {
        const uint8_t *k = NULL;
        size_t kn = 0;
        if ((rc = take_len(d, &k, &kn)) || (rc = put_string(d, k, kn)) || (rc = putc_(d, ':'))) {
          return rc;
        }
        d->pname[d->depth] = NULL;
      }
      if ((rc = datum(d, item))) return rc;
    }
  }
  d->pidx[d->depth] = -1;
  return putc_(d, is_map ? '}' : ']');
}

static const char *branch_name(const av_node *nd) {
  return nd->name ? nd->name : kl_avro_type_names[nd->type];
}

static kl_rc branch(av_dec *d, const av_node *nd) {
  int64_t b;
  kl_rc rc = read_long(d, &b);
  if (rc) return rc;
  if (b < 0 || (uint64_t)b >= nd->n) {
    return fail(d, "union branch %lld of %zu", (long long)b, nd->n);
  }
  const av_node *k = nd->kids[b];
  if (!(d->flags & KL_AVRO_WRAP_UNIONS) || k->type == AV_NULL) return datum(d, k);
  const char *name = branch_name(k);
  if ((rc = putc_(d, '{')) || (rc = put_string(d, (const uint8_t *)name, strlen(name))) ||
      (rc = putc_(d, ':')) || (rc = datum(d, k))) {
    return rc;
  }
  return putc_(d, '}');
}

static kl_rc scalar(av_dec *d, const av_node *nd) {
  const uint8_t *p = NULL;
  size_t n = 0;
  int64_t v = 0;
  kl_rc rc;
  switch (nd->type) {
    case AV_NULL: return put(d, "null", 4);
    case AV_BOOLEAN:
      if ((rc = take(d, 1, &p))) return rc;
      if (*p > 1) return fail(d, "boolean byte %u", *p);
      return *p ? put(d, "true", 4) : put(d, "false", 5);
    case AV_INT: return (rc = read_int(d, &v)) ? rc : put_long(d, v);
    case AV_LONG: return (rc = read_long(d, &v)) ? rc : put_long(d, v);
    case AV_FLOAT: {
      if ((rc = take(d, 4, &p))) return rc;
      uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24;
      float f;
      memcpy(&f, &u, 4);
      return put_real(d, f, 1);
    }
    case AV_DOUBLE: {
      if ((rc = take(d, 8, &p))) return rc;
      uint64_t u = 0;
      for (int i = 7; i >= 0; i--) u = u << 8 | p[i];
      double f;
      memcpy(&f, &u, 8);
      return put_real(d, f, 0);
    }
    case AV_BYTES: return (rc = take_len(d, &p, &n)) ? rc : bytes_like(d, nd, p, n);
    case AV_STRING: return (rc = take_len(d, &p, &n)) ? rc : put_string(d, p, n);
    case AV_FIXED:
      return (rc = take(d, (size_t)nd->size, &p)) ? rc : bytes_like(d, nd, p, (size_t)nd->size);
    case AV_ENUM:
      if ((rc = read_int(d, &v))) return rc;
      if (v < 0 || (uint64_t)v >= nd->n) return fail(d, "enum index %lld of %zu", (long long)v,
                                                     nd->n);
      return put_key(d, nd->keys[v], nd->key_len[v]);
    default: return fail(d, "no such type");
  }
}

static kl_rc datum(av_dec *d, const av_node *nd) {
  if (is_scalar(nd)) return scalar(d, nd);
  if (d->depth >= KL_AVRO_MAX_DEPTH) return fail(d, "nested deeper than %d", KL_AVRO_MAX_DEPTH);
  d->depth++;
  d->pname[d->depth] = NULL;
  d->pidx[d->depth] = -1;
  kl_rc rc = nd->type == AV_RECORD ? record(d, nd)
             : nd->type == AV_UNION ? branch(d, nd)
                                    : blocks(d, nd);
  if (rc == KL_OK) d->depth--;
  return rc;
}

/* ---- compiled decoding ----
**
** Each node a datum can start at is compiled once, with its schema, into a
** list of steps run by one loop (run): a step writes a constant text (the
** field names with their quotes, commas and colons, the brackets of
** records), then decodes one value.  The fields of a nested record are laid
** in line, so a record costs no call and its constant texts merge: the
** items of the bench's order, {"sku":..,"qty":..}, are two steps.  Arrays,
** maps, unions and the records not laid in line run their own lists.  The
** output's room for the constant texts and the fixed-size values of a list
** is made once at its start, and again after each value of variable size.
**
** The tree walk above stays the reference: a value the steps refuse, for
** whatever reason, is decoded again by the walk, which finds the error and
** says where.  The steps therefore never accept what the walk refuses and
** write what it writes (the fuzz target decodes every value both ways);
** they need not say why they refuse.  Bounds of their own: a list lays at
** most AV_INLINE fields of nested records in line, AV_LEVELS records deep
** (further records run their own lists), so that compiling stays linear in
** the schema's size whatever its nesting; nodes further than
** KL_AVRO_MAX_DEPTH from the root through arrays, maps and unions are not
** compiled, and the walk decodes the values that reach them.
*/

#define AV_INLINE 64
#define AV_LEVELS 8

typedef enum av_op {
  OP_END, OP_SLOW, OP_NULL, OP_BOOLEAN, OP_INT, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_ENUM,
  OP_BYTES, OP_STRING, OP_FIXED, OP_ARRAY, OP_MAP, OP_UNION, OP_RECORD
} av_op;

typedef struct av_step {
  uint8_t op;               /* av_op */
  uint8_t level;            /* records laid in line open around the step */
  uint32_t lit_n;           /* the constant text written first */
  union {
    size_t off;             /* while compiling: its offset in the list's text */
    const char *p;          /* then: KL_KEY_PAD bytes readable past it */
  } lit;
  size_t rest;              /* room the steps after this one take at most */
  const av_node *nd;        /* what the value is */
} av_step;

struct av_code {
  av_step *steps;
  size_t n, cap;
  kl_buf text;              /* the constant texts, KL_KEY_PAD zeros after */
  size_t room;              /* room the whole list takes at most, bar variable values */
  int levels;               /* records laid in line, nested (0: the node is no record) */
  size_t laid;              /* fields laid, those of the records in line too */
  int done;                 /* 0 while being compiled (a recursive type) */
  int flat;                 /* its values are scalars and strings only: no list of
                            ** its own is entered (run enters it without a call) */
};

/* The room a step's value takes at most when its size is fixed; 0 for the
** values that make their own room. */
static size_t fixed_room(const av_step *st) {
  switch ((av_op)st->op) {
    case OP_NULL: return 4;
    case OP_BOOLEAN: return 5;
    case OP_INT: case OP_LONG: return 21;
    case OP_FLOAT: case OP_DOUBLE: return KL_SHORTEST_MAX;
    case OP_ENUM: {
      size_t m = 0;
      for (size_t i = 0; i < st->nd->n; i++) m = st->nd->key_len[i] > m ? st->nd->key_len[i] : m;
      return m;
    }
    default: return 0;
  }
}

typedef struct av_comp {
  const kl_env *env;
  kl_buf pend;              /* constant text for the next step */
} av_comp;

static kl_rc emit(av_comp *cp, av_code *c, av_op op, int level, const av_node *nd) {
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 8;
    av_step *v = kl_realloc(cp->env, c->steps, cap * sizeof *v);
    if (!v) return KL_NOMEM;
    c->steps = v;
    c->cap = cap;
  }
  if (cp->pend.len > UINT32_MAX) return KL_NOMEM;
  av_step *st = &c->steps[c->n++];
  memset(st, 0, sizeof *st);
  st->op = (uint8_t)op;
  st->level = (uint8_t)level;
  st->nd = nd;
  st->lit.off = c->text.len;
  st->lit_n = (uint32_t)cp->pend.len;
  kl_rc rc = cp->pend.len ? kl_buf_append(cp->env, &c->text, cp->pend.p, cp->pend.len) : KL_OK;
  cp->pend.len = 0;
  return rc;
}

static kl_rc compile(av_comp *cp, av_node *nd, int depth);

static const av_op scalar_op[] = {
    [AV_NULL] = OP_NULL,     [AV_BOOLEAN] = OP_BOOLEAN, [AV_INT] = OP_INT,
    [AV_LONG] = OP_LONG,     [AV_FLOAT] = OP_FLOAT,     [AV_DOUBLE] = OP_DOUBLE,
    [AV_BYTES] = OP_BYTES,   [AV_STRING] = OP_STRING,   [AV_ENUM] = OP_ENUM,
    [AV_FIXED] = OP_FIXED};

/* The steps of a datum of nd into c, its records open level deep. */
static kl_rc lay(av_comp *cp, av_code *c, av_node *nd, int level, int depth) {
  kl_rc rc = KL_OK;
  if (is_scalar(nd)) return emit(cp, c, scalar_op[nd->type], level, nd);
  if (nd->type != AV_RECORD) {
    /* the lists of the items, the values, the branches */
    for (size_t i = 0; rc == KL_OK && i < (nd->type == AV_UNION ? nd->n : 1); i++) {
      rc = compile(cp, nd->kids[i], depth + 1);
      if (rc == KL_OK && !nd->kids[i]->code) return emit(cp, c, OP_SLOW, level, nd);
    }
    av_op op = nd->type == AV_UNION ? OP_UNION : nd->type == AV_MAP ? OP_MAP : OP_ARRAY;
    return rc ? rc : emit(cp, c, op, level, nd);
  }
  if (level + 1 > c->levels) c->levels = level + 1;
  if ((rc = kl_buf_append(cp->env, &cp->pend, "{", 1))) return rc;
  for (size_t i = 0; rc == KL_OK && i < nd->n; i++) {
    av_node *k = nd->kids[i];
    if ((rc = kl_buf_append(cp->env, &cp->pend, nd->keys[i], nd->key_len[i]))) break;
    c->laid++;
    if (k->type != AV_RECORD) {
      rc = lay(cp, c, k, level + 1, depth);
      continue;
    }
    /* in line when it is small and not being compiled (no recursion) */
    if ((rc = compile(cp, k, depth + 1))) break;
    if (k->code && k->code->done && level + 2 <= AV_LEVELS &&
        c->laid + k->code->laid <= AV_INLINE) {
      rc = lay(cp, c, k, level + 1, depth);
    } else {
      rc = emit(cp, c, k->code ? OP_RECORD : OP_SLOW, level + 1, k);
    }
  }
  return rc ? rc : kl_buf_append(cp->env, &cp->pend, "}", 1);
}

static void code_free(const kl_env *env, av_code *c) {
  if (!c) return;
  kl_free(env, c->steps);
  kl_buf_free(env, &c->text);
  kl_free(env, c);
}

/* The texts' places, and the room after each step. */
static kl_rc finish(av_comp *cp, av_code *c) {
  static const char pad[KL_KEY_PAD];
  kl_rc rc = kl_buf_append(cp->env, &c->text, pad, sizeof pad);
  if (rc) return rc;
  size_t rest = KL_KEY_PAD;
  for (size_t i = c->n; i-- > 0;) {
    av_step *st = &c->steps[i];
    st->lit.p = (const char *)c->text.p + st->lit.off;
    st->rest = rest;
    rest += st->lit_n + fixed_room(st);
  }
  c->room = rest;
  c->flat = 1;
  for (size_t i = 0; i < c->n; i++) {
    av_op op = (av_op)c->steps[i].op;
    if (op == OP_SLOW || op == OP_BYTES || op == OP_FIXED || op >= OP_ARRAY) c->flat = 0;
  }
  c->done = 1;
  return KL_OK;
}

/* nd->code, unless nd is compiled or being compiled, or lies too deep (it
** is then left NULL: the walk decodes it). */
static kl_rc compile(av_comp *cp, av_node *nd, int depth) {
  if (nd->code || depth > KL_AVRO_MAX_DEPTH) return KL_OK;
  av_code *c = kl_malloc(cp->env, sizeof *c);
  if (!c) return KL_NOMEM;
  memset(c, 0, sizeof *c);
  nd->code = c;
  kl_buf saved = cp->pend; /* a list compiled while another's text waits */
  memset(&cp->pend, 0, sizeof cp->pend);
  kl_rc rc = lay(cp, c, nd, 0, depth);
  if (rc == KL_OK) rc = emit(cp, c, OP_END, 0, nd);
  if (rc == KL_OK) rc = finish(cp, c);
  kl_buf_free(cp->env, &cp->pend);
  cp->pend = saved;
  return rc;
}

static kl_rc compile_schema(kl_avro_schema *s) {
  av_comp cp;
  cp.env = s->env;
  memset(&cp.pend, 0, sizeof cp.pend);
  return compile(&cp, s->root, 0);
}

typedef struct av_varint {
  const uint8_t *p;         /* past it, NULL when refused */
  uint64_t v;               /* its bits, before the zig-zag */
} av_varint;

/* A varint near the end of the bytes, returned whole (in registers), so
** that the caller's value need not live in memory for the call. */
static av_varint vlong_slow(const uint8_t *p, const uint8_t *end) {
  av_varint r = {NULL, 0};
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) return r;
    uint8_t b = *p++;
    if (shift == 63 && (b & 0x7e)) return r;
    r.v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      r.p = p;
      return r;
    }
  }
  return r;
}

/* Varints without a message (the walk gives it); a value of one or two
** bytes without a loop.  NULL when the walk would refuse it. */
static inline const uint8_t *vlong(const uint8_t *p, const uint8_t *end, int64_t *out) {
  uint64_t v;
  if (p < end && p[0] < 0x80) {
    v = p[0];
    p += 1;
  } else if (end - p >= 2 && p[1] < 0x80) {
    v = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
    p += 2;
  } else if (end - p >= 10) { /* no bound to check byte by byte */
    v = 0;
    for (int i = 0;; i++) {
      uint8_t b = p[i];
      if (i == 9 && (b & 0xfe)) return NULL; /* past 64 bits, or past 10 bytes */
      v |= (uint64_t)(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) {
        p += i + 1;
        break;
      }
    }
  } else {
    av_varint r = vlong_slow(p, end);
    if (!r.p) return NULL;
    p = r.p;
    v = r.v;
  }
  *out = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
  return p;
}

static inline const uint8_t *vint(const uint8_t *p, const uint8_t *end, int64_t *out) {
  const uint8_t *q = vlong(p, end, out);
  if (!q || q - p > 5 || *out < INT32_MIN || *out > INT32_MAX) return NULL;
  return q;
}

/* put_long's digits, the room made. */
static inline uint8_t *write_long(uint8_t *w, int64_t v) {
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  if (v < 0) *w++ = '-';
  if (u < 10) {
    *w = (uint8_t)('0' + u);
    return w + 1;
  }
  static const char pairs[201] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  char t[40]; /* the digits end at t + 20; 20 bytes are copied from their start */
  size_t k = 20;
  for (; u >= 100; u /= 100) {
    k -= 2;
    memcpy(t + k, pairs + 2 * (u % 100), 2);
  }
  if (u >= 10) {
    k -= 2;
    memcpy(t + k, pairs + 2 * u, 2);
  } else {
    t[--k] = (char)('0' + u);
  }
  /* a constant size, no call (the room is 21 bytes); the bytes past the
  ** digits lie past the text, or are written over by what follows */
  memcpy(w, t + k, 20);
  return w + (20 - k);
}

static inline uint8_t *write_real(uint8_t *w, double v, int is_float) {
  if (isnan(v)) return (uint8_t *)memcpy(w, "\"NaN\"", 5) + 5;
  if (isinf(v)) {
    return v > 0 ? (uint8_t *)memcpy(w, "\"Infinity\"", 10) + 10
                 : (uint8_t *)memcpy(w, "\"-Infinity\"", 11) + 11;
  }
  return w + kl_shortest(v, is_float, (char *)w);
}

static kl_rc run(av_dec *d, const av_code *c, int depth);

/* A string's or bytes' length, checked against what is left. */
static inline const uint8_t *vlen(const uint8_t *p, const uint8_t *end, size_t *n) {
  int64_t len = 0;
  p = vlong(p, end, &len);
  if (!p || len < 0 || (uint64_t)len > (uint64_t)(end - p)) return NULL;
  *n = (size_t)len;
  return p;
}

#ifdef __SSE2__
/* The bytes of x a JSON string cannot hold as they are, one bit each:
** below 0x20 or past ASCII (signed, both are below 0x20), '"', '\\'. */
static inline unsigned special16(__m128i x) {
  __m128i m = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)),
                           _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                        _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))));
  return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* Copy the n bytes at p to w when they are ASCII a JSON string holds as
** they are (else 0, w's bytes undefined): sixteen at a time (SSE2) or
** eight, and the last few as a whole vector or word too when the payload
** goes on past them (end), the bytes past the string masked off (in
** memory order, as the string's).  Writes up to 15 bytes past w + n. */
static inline __attribute__((always_inline)) int copy_plain(uint8_t *w, const uint8_t *p, size_t n, const uint8_t *end) {
  size_t j = 0;
#ifdef __SSE2__
  if ((size_t)(end - p) >= ((n + 15) & ~(size_t)15)) {
    for (; j + 16 <= n; j += 16) {
      __m128i x = _mm_loadu_si128((const __m128i *)(p + j));
      if (special16(x)) return 0;
      _mm_storeu_si128((__m128i *)(w + j), x);
    }
    if (j == n) return 1;
    __m128i x = _mm_loadu_si128((const __m128i *)(p + j));
    if (special16(x) & ((1u << (n - j)) - 1)) return 0;
    _mm_storeu_si128((__m128i *)(w + j), x);
    return 1;
  }
#endif
  static const uint8_t keep[16] = {255, 255, 255, 255, 255, 255, 255, 255};
  const uint64_t high = 0x8080808080808080ull, spaces = 0x2020202020202020ull;
  uint64_t x, m;
  for (; j + 8 <= n; j += 8) {
    memcpy(&x, p + j, 8);
    if (special8(x, high)) return 0;
    memcpy(w + j, &x, 8);
  }
  if (j == n) return 1;
  if ((size_t)(end - (p + j)) < 8) {
    /* the value's last bytes: words that overlap rather than a call */
    if (n >= 8) {
      memcpy(&x, p + n - 8, 8);
      if (special8(x, high)) return 0;
      memcpy(w + n - 8, &x, 8);
    } else if (n >= 4) {
      uint32_t a, b;
      memcpy(&a, p, 4);
      memcpy(&b, p + n - 4, 4);
      if (special8((uint64_t)a | (uint64_t)b << 32, high)) return 0;
      memcpy(w, &a, 4);
      memcpy(w + n - 4, &b, 4);
    } else {
      x = spaces << 24 | (uint64_t)p[0] | (uint64_t)p[n / 2] << 8 | (uint64_t)p[n - 1] << 16;
      if (special8(x, high)) return 0;
      w[0] = p[0];
      w[n / 2] = p[n / 2];
      w[n - 1] = p[n - 1];
    }
    return 1;
  }
  memcpy(&x, p + j, 8);
  memcpy(&m, keep + 8 - (n - j), 8);
  x = (x & m) | (spaces & ~m);
  if (special8(x, high)) return 0;
  memcpy(w + j, &x, 8);
  return 1;
}

/* A string (a map's key), with the room of what follows. */
static kl_rc run_string(av_dec *d, size_t rest) {
  size_t n = 0;
  const uint8_t *p = vlen(d->p, d->end, &n);
  if (!p) return KL_CORRUPT;
  d->p = p + n;
  kl_buf *o = d->o;
  if (o->cap - o->len < 6 * n + 2 + rest && kl_buf_reserve(d->env, o, o->len + 6 * n + 2 + rest)) {
    return KL_NOMEM;
  }
  uint8_t *w = o->p + o->len;
  if (!copy_plain(w + 1, p, n, d->end)) return put_string(d, p, n);
  w[0] = '"';
  w[n + 1] = '"';
  o->len += n + 2;
  return KL_OK;
}

/* The count of the next block at *pp of an array or map nd, by the walk's
** rules, *pp moved past its header: 0 at the end, -1 refused. */
static inline __attribute__((always_inline)) int64_t block_count(av_dec *d, const av_node *nd, const uint8_t **pp) {
  int64_t count = 0, size = 0;
  const uint8_t *p = vlong(*pp, d->end, &count);
  if (!p) return -1;
  if (count < 0) {
    if (count == INT64_MIN) return -1;
    count = -count;
    if (!(p = vlong(p, d->end, &size)) || size < 0) return -1;
  }
  *pp = p;
  if (count == 0) return 0;
  size_t per = nd->kids[0]->min_bytes + (nd->type == AV_MAP ? 1 : 0);
  if (per > 0 && (uint64_t)count > (uint64_t)(d->end - p) / per) return -1;
  if (per == 0 && (uint64_t)count > KL_AVRO_MAX_EMPTY_ITEMS - d->empty_items) return -1;
  if (per == 0) d->empty_items += (size_t)count;
  return count;
}

/* Arrays and maps (blocks), by the walk's rules. */
static kl_rc run_blocks(av_dec *d, const av_node *nd, int depth) {
  if (depth >= KL_AVRO_MAX_DEPTH) return KL_CORRUPT;
  int is_map = nd->type == AV_MAP;
  const av_code *item = nd->kids[0]->code;
  kl_rc rc = putc_(d, is_map ? '{' : '[');
  for (int64_t idx = 0; rc == KL_OK;) {
    int64_t count = block_count(d, nd, &d->p);
    if (count < 0) return KL_CORRUPT;
    if (count == 0) break;
    for (int64_t i = 0; rc == KL_OK && i < count; i++, idx++) {
      if (idx && (rc = putc_(d, ','))) break;
      if (is_map && ((rc = run_string(d, KL_KEY_PAD)) || (rc = putc_(d, ':')))) break;
      rc = run(d, item, depth + 1);
    }
  }
  return rc ? rc : putc_(d, is_map ? '}' : ']');
}

static kl_rc run_union(av_dec *d, const av_node *nd, int depth) {
  int64_t b = 0;
  if (depth >= KL_AVRO_MAX_DEPTH || !(d->p = vlong(d->p, d->end, &b)) || b < 0 ||
      (uint64_t)b >= nd->n) {
    return KL_CORRUPT;
  }
  const av_node *k = nd->kids[b];
  if (k->type == AV_NULL) return put(d, "null", 4);
  if (!(d->flags & KL_AVRO_WRAP_UNIONS)) return run(d, k->code, depth + 1);
  const char *name = branch_name(k);
  kl_rc rc;
  if ((rc = putc_(d, '{')) || (rc = put_string(d, (const uint8_t *)name, strlen(name))) ||
      (rc = putc_(d, ':')) || (rc = run(d, k->code, depth + 1))) {
    return rc;
  }
  return putc_(d, '}');
}

/* The steps whose values have no fixed size, at d->p and d->o's end. */
static kl_rc run_variable(av_dec *d, const av_step *st, int depth) {
  const av_node *nd = st->nd;
  size_t n = 0;
  const uint8_t *p;
  switch ((av_op)st->op) {
    case OP_BYTES:
      if (!(p = vlen(d->p, d->end, &n))) return KL_CORRUPT;
      d->p = p + n;
      return bytes_like(d, nd, p, n);
    case OP_FIXED:
      if ((size_t)(d->end - d->p) < (size_t)nd->size) return KL_CORRUPT;
      p = d->p;
      d->p += nd->size;
      return bytes_like(d, nd, p, (size_t)nd->size);
    case OP_ARRAY: case OP_MAP: return run_blocks(d, nd, depth + st->level);
    case OP_UNION: return run_union(d, nd, depth + st->level);
    case OP_RECORD: return run(d, nd->code, depth + st->level);
    default: return KL_CORRUPT; /* OP_SLOW */
  }
}

/* A float or double at *pp, its text at w; NULL when the bytes run out. */
static inline uint8_t *step_real(const uint8_t **pp, const uint8_t *end, uint8_t *w, int is_float) {
  const uint8_t *p = *pp;
  size_t k = is_float ? 4 : 8;
  if ((size_t)(end - p) < k) return NULL;
  uint64_t u = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (is_float) {
    uint32_t u4;
    memcpy(&u4, p, 4);
    u = u4;
  } else {
    memcpy(&u, p, 8);
  }
#else
  for (size_t i = k; i-- > 0;) u = u << 8 | p[i];
#endif
  *pp = p + k;
  if (!is_float) {
    double f;
    memcpy(&f, &u, 8);
    return write_real(w, f, 0);
  }
  uint32_t u32 = (uint32_t)u;
  float f;
  memcpy(&f, &u32, 4);
  return write_real(w, f, 1);
}

/* A string at *pp, written at *ww with rest bytes of room after it; both
** moved past it. */
static inline __attribute__((always_inline)) kl_rc step_string(av_dec *d, size_t rest, const uint8_t **pp, uint8_t **ww) {
  size_t n = 0;
  const uint8_t *q = vlen(*pp, d->end, &n);
  if (!q) return KL_CORRUPT;
  kl_buf *o = d->o;
  size_t need = 6 * n + 2 + rest, at = (size_t)(*ww - o->p);
  if (o->cap - at < need && kl_buf_reserve(d->env, o, at + need)) return KL_NOMEM;
  uint8_t *w = o->p + at;
  *pp = q + n;
  if (copy_plain(w + 1, q, n, d->end)) {
    w[0] = '"';
    w[n + 1] = '"';
    *ww = w + n + 2;
    return KL_OK;
  }
  o->len = at;
  kl_rc rc = put_string(d, q, n); /* escapes, or past ASCII: the room is made */
  *ww = o->p + o->len;
  return rc;
}

/* Room for n more bytes at w (which may move). */
#define ROOM(n)                                                                   \
  do {                                                                            \
    size_t at_ = (size_t)(w - o->p);                                              \
    if (o->cap - at_ < (n) && kl_buf_reserve(d->env, o, at_ + (n))) return KL_NOMEM; \
    w = o->p + at_;                                                               \
  } while (0)

/* One list of steps, for a datum met depth deep (the walk's d->depth).
** The items of an array or a map, and the branch of a union, whose lists
** are flat (av_code.flat) run in this loop rather than by a call: the
** steps go on in their list (sub) and come back after the step that
** entered it (in) at its OP_END.  A flat list enters none, so one is open
** at a time.  The checks are run_blocks' and run_union's, in their order. */
static kl_rc run(av_dec *d, const av_code *c, int depth) {
  if (c->levels && depth + c->levels - 1 >= KL_AVRO_MAX_DEPTH) return KL_CORRUPT;
  kl_buf *o = d->o;
  if (o->cap - o->len < c->room && kl_buf_reserve(d->env, o, o->len + c->room)) return KL_NOMEM;
  const uint8_t *p = d->p, *end = d->end;
  uint8_t *w = o->p + o->len;
  /* each op's code (GNU C's labels as values: one indirect jump a step) */
  static const void *const go[] = {
      [OP_END] = &&op_end,         [OP_SLOW] = &&op_variable, [OP_NULL] = &&op_null,
      [OP_BOOLEAN] = &&op_boolean, [OP_INT] = &&op_int,       [OP_LONG] = &&op_long,
      [OP_FLOAT] = &&op_float,     [OP_DOUBLE] = &&op_double, [OP_ENUM] = &&op_enum,
      [OP_BYTES] = &&op_variable,  [OP_STRING] = &&op_string, [OP_FIXED] = &&op_variable,
      [OP_ARRAY] = &&op_blocks,    [OP_MAP] = &&op_blocks,    [OP_UNION] = &&op_union,
      [OP_RECORD] = &&op_variable};
  _Static_assert(sizeof go / sizeof go[0] == OP_RECORD + 1, "an entry for every op");
  const av_step *in = NULL;  /* the array, map or union step whose flat list runs */
  const av_code *sub = NULL; /* that list */
  int64_t left = 0;          /* items left in the current block (array, map) */
  for (const av_step *next = c->steps;;) {
    const av_step *st = next++;
    size_t lit_n = st->lit_n; /* read once: the copy may alias it */
    if (__builtin_expect(lit_n <= KL_KEY_PAD, 1)) {
      memcpy(w, st->lit.p, KL_KEY_PAD);
    } else {
      memcpy(w, st->lit.p, lit_n);
    }
    w += lit_n;
    int64_t v;
    goto *go[st->op];
  op_end:
    if (!in) {
      d->p = p;
      o->len = (size_t)(w - o->p);
      return KL_OK;
    }
    if (in->op == OP_UNION) {
      ROOM(in->rest);
      next = in + 1;
      in = NULL;
      continue;
    }
    if (--left == 0 && (left = block_count(d, in->nd, &p)) <= 0) {
      if (left < 0) return KL_CORRUPT;
      ROOM(1 + in->rest);
      *w++ = in->op == OP_MAP ? '}' : ']';
      next = in + 1;
      in = NULL;
      continue;
    }
    ROOM(1);
    *w++ = ',';
    goto item;
  op_null:
    w = (uint8_t *)memcpy(w, "null", 4) + 4;
    continue;
  op_boolean:
    if (p == end || *p > 1) return KL_CORRUPT;
    w = *p++ ? (uint8_t *)memcpy(w, "true", 4) + 4 : (uint8_t *)memcpy(w, "false", 5) + 5;
    continue;
  op_int:
    if (!(p = vint(p, end, &v))) return KL_CORRUPT;
    w = write_long(w, v);
    continue;
  op_long:
    if (!(p = vlong(p, end, &v))) return KL_CORRUPT;
    w = write_long(w, v);
    continue;
  op_float:
    if (!(w = step_real(&p, end, w, 1))) return KL_CORRUPT;
    continue;
  op_double:
    if (!(w = step_real(&p, end, w, 0))) return KL_CORRUPT;
    continue;
  op_string: {
    kl_rc rc = step_string(d, st->rest, &p, &w);
    if (rc) return rc;
    continue;
  }
  op_enum:
    if (!(p = vint(p, end, &v)) || v < 0 || (uint64_t)v >= st->nd->n) return KL_CORRUPT;
    if (st->nd->key_len[v] <= KL_KEY_PAD) memcpy(w, st->nd->keys[v], KL_KEY_PAD);
    else memcpy(w, st->nd->keys[v], st->nd->key_len[v]);
    w += st->nd->key_len[v];
    continue;
  op_blocks: {
    const av_code *ic = st->nd->kids[0]->code;
    if (!ic->flat) goto op_variable;
    int dd = depth + st->level; /* run_blocks' depth; its items' is dd + 1 */
    if (dd >= KL_AVRO_MAX_DEPTH) return KL_CORRUPT;
    *w++ = st->op == OP_MAP ? '{' : '[';
    if ((left = block_count(d, st->nd, &p)) <= 0) {
      if (left < 0) return KL_CORRUPT;
      ROOM(1 + st->rest);
      *w++ = st->op == OP_MAP ? '}' : ']';
      continue;
    }
    if (ic->levels && dd + ic->levels >= KL_AVRO_MAX_DEPTH) return KL_CORRUPT;
    in = st;
    sub = ic;
    goto item;
  }
  op_union: {
    if (d->flags & KL_AVRO_WRAP_UNIONS) goto op_variable;
    const uint8_t *at = p;
    int dd = depth + st->level; /* run_union's depth; its branch's is dd + 1 */
    if (dd >= KL_AVRO_MAX_DEPTH || !(p = vlong(p, end, &v)) || v < 0 ||
        (uint64_t)v >= st->nd->n) {
      return KL_CORRUPT;
    }
    const av_node *k = st->nd->kids[v];
    if (k->type == AV_NULL) {
      ROOM(4 + st->rest);
      w = (uint8_t *)memcpy(w, "null", 4) + 4;
      continue;
    }
    if (!k->code->flat) {
      p = at;
      goto op_variable;
    }
    if (k->code->levels && dd + k->code->levels >= KL_AVRO_MAX_DEPTH) return KL_CORRUPT;
    in = st;
    sub = k->code;
    ROOM(sub->room);
    next = sub->steps;
    continue;
  }
  op_variable: {
    d->p = p;
    o->len = (size_t)(w - o->p);
    kl_rc rc = run_variable(d, st, depth);
    if (rc) return rc;
    if (o->cap - o->len < st->rest && kl_buf_reserve(d->env, o, o->len + st->rest)) {
      return KL_NOMEM;
    }
    p = d->p;
    w = o->p + o->len;
    continue;
  }
  item: /* the next item of in's block: a map's key first */
    if (in->op == OP_MAP) {
      kl_rc krc = step_string(d, KL_KEY_PAD, &p, &w);
      if (krc) return krc;
      *w++ = ':';
    }
    ROOM(sub->room);
    next = sub->steps;
  }
}

#undef ROOM

kl_rc kl_avro_decode(const kl_avro_schema *s, const uint8_t *p, size_t n, unsigned flags,
                     kl_buf *json, kl_err *err) {
  av_dec d;
  d.env = s->env;
  d.p = p;
  d.end = p + n;
  d.o = json;
  d.flags = flags;
  d.err = err;
  d.depth = 0;
  d.empty_items = 0;
  if ((flags & KL_AVRO_RAW_BYTES) && s->root->type == AV_BYTES) {
    return bytes_like(&d, s->root, p, n);
  }
  if (!(flags & KL_AVRO_TREE) && s->root->code) {
    size_t at = json->len;
    d.err = NULL; /* a refusal is the walk's to explain */
    kl_rc rc = run(&d, s->root->code, 0);
    if (rc == KL_OK && d.p == d.end) return KL_OK;
    if (rc == KL_NOMEM) return kl_err_set(err, rc, "out of memory");
    json->len = at;
    d.p = p;
    d.err = err;
    d.depth = 0;
    d.empty_items = 0;
  }
  kl_rc rc = datum(&d, s->root);
  if (rc == KL_OK && d.p != d.end) {
    rc = kl_err_set(err, KL_CORRUPT, "$: %zu bytes after the value", (size_t)(d.end - d.p));
  }
  if (rc == KL_NOMEM) kl_err_set(err, rc, "out of memory");
  return rc;
}
