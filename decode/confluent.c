/*
** confluent.c - see confluent.h.
*/
#include "confluent.h"

#include <stdio.h>
#include <string.h>

#include "avro_encode.h"
#include "protobuf.h"
#include "protobuf_encode.h"
#include "utf8.h"

/* ---- framing ---- */

kl_rc kl_frame_read(const uint8_t *p, size_t n, const uint8_t *hdr, size_t hn, kl_frame *f,
                    kl_err *err) {
  memset(f, 0, sizeof *f);
  if (hdr) {
    f->payload = p;
    f->n = n;
    if (hn == 17 && hdr[0] == 1) {
      f->by_guid = 1;
      memcpy(f->guid, hdr + 1, 16);
    } else if (hn == 16) {
      f->by_guid = 1;
      memcpy(f->guid, hdr, 16);
    } else if (hn == 5 && hdr[0] == 0) {
      f->id = (int32_t)((uint32_t)hdr[1] << 24 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 8 |
                        hdr[4]);
    } else {
      return kl_err_set(err, KL_CORRUPT, "schema id header of %zu bytes is neither 0x01 + a "
                        "16-byte GUID nor 0x00 + a 4-byte id", hn);
    }
    return KL_OK;
  }
  if (n == 0) return kl_err_set(err, KL_CORRUPT, "empty value: no magic byte");
  if (p[0] == 0) {
    if (n < 5) return kl_err_set(err, KL_CORRUPT, "5 bytes needed for magic byte 0 and a "
                                 "schema id, %zu given", n);
    f->id = (int32_t)((uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4]);
    f->payload = p + 5;
    f->n = n - 5;
    return KL_OK;
  }
  if (p[0] == 1) {
    if (n < 17) return kl_err_set(err, KL_CORRUPT, "17 bytes needed for magic byte 1 and a "
                                  "GUID, %zu given", n);
    f->by_guid = 1;
    memcpy(f->guid, p + 1, 16);
    f->payload = p + 17;
    f->n = n - 17;
    return KL_OK;
  }
  return kl_err_set(err, KL_CORRUPT, "unknown magic byte 0x%02x", p[0]);
}

/* ---- JSON payloads ---- */

/* A JSON checker written here rather than with jansson: jansson refuses
** numbers beyond a double's range, which are valid JSON, and would build a
** tree per value only to throw it away. */
typedef struct js_check {
  const uint8_t *p, *end;
  int depth;
} js_check;

#define JS_MAX_DEPTH 1000 /* SQLite's JSON functions' own limit */

static void js_ws(js_check *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
    c->p++;
  }
}

static int js_lit(js_check *c, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return 0;
  c->p += n;
  return 1;
}

static int js_digits(js_check *c) {
  const uint8_t *at = c->p;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') c->p++;
  return c->p > at;
}

static int js_number(js_check *c) {
  if (c->p < c->end && *c->p == '-') c->p++;
  if (c->p < c->end && *c->p == '0') c->p++;
  else if (!js_digits(c)) return 0;
  if (c->p < c->end && *c->p == '.') {
    c->p++;
    if (!js_digits(c)) return 0;
  }
  if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
    c->p++;
    if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
    if (!js_digits(c)) return 0;
  }
  return 1;
}

static int js_string(js_check *c) {
  const uint8_t *at = ++c->p;
  while (c->p < c->end && *c->p != '"') {
    if (*c->p < 0x20) return 0;
    if (*c->p == '\\') {
      if (++c->p >= c->end) return 0;
      if (*c->p == 'u') {
        for (int i = 0; i < 4; i++) {
          if (++c->p >= c->end) return 0;
          uint8_t h = *c->p;
          if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) {
            return 0;
          }
        }
      } else if (!strchr("\"\\/bfnrt", *c->p)) {
        return 0;
      }
    }
    c->p++;
  }
  if (c->p >= c->end || !kl_utf8_valid(at, (size_t)(c->p - at))) return 0;
  c->p++;
  return 1;
}

static int js_value(js_check *c);

static int js_container(js_check *c, uint8_t close) {
  if (++c->depth > JS_MAX_DEPTH) return 0;
  c->p++;
  js_ws(c);
  if (c->p < c->end && *c->p == close) {
    c->p++;
    c->depth--;
    return 1;
  }
  for (;;) {
    if (close == '}') {
      js_ws(c);
      if (c->p >= c->end || *c->p != '"' || !js_string(c)) return 0;
      js_ws(c);
      if (c->p >= c->end || *c->p++ != ':') return 0;
    }
    if (!js_value(c)) return 0;
    js_ws(c);
    if (c->p >= c->end) return 0;
    if (*c->p == close) break;
    if (*c->p++ != ',') return 0;
  }
  c->p++;
  c->depth--;
  return 1;
}

static int js_value(js_check *c) {
  js_ws(c);
  if (c->p >= c->end) return 0;
  switch (*c->p) {
    case '{': return js_container(c, '}');
    case '[': return js_container(c, ']');
    case '"': return js_string(c);
    case 't': return js_lit(c, "true");
    case 'f': return js_lit(c, "false");
    case 'n': return js_lit(c, "null");
    default: return js_number(c);
  }
}

kl_rc kl_json_payload(const kl_env *env, const uint8_t *p, size_t n, kl_buf *json, kl_err *err) {
  js_check c = {p, p + n, 0};
  int ok = js_value(&c);
  js_ws(&c);
  if (!ok || c.p != c.end) {
    return kl_err_set(err, KL_CORRUPT, "payload is not JSON (at byte %zu)", (size_t)(c.p - p));
  }
  return kl_buf_append(env, json, p, n);
}

/* ---- the decoder ---- */

typedef enum sc_state { SC_NEW, SC_AVRO, SC_JSON, SC_PROTO, SC_FAILED } sc_state;

typedef struct sc_entry {   /* a row of the registry, once parsed */
  sc_state state;
  kl_avro_schema *avro;
  kl_proto_schema *proto;
  kl_rc rc;                 /* SC_FAILED: the error, kept so it is not parsed again */
  char *msg;
} sc_entry;

struct kl_decoder {
  const kl_env *env;
  kl_registry *reg;
  unsigned flags;
  kl_stats *stats;          /* or NULL */
  sc_entry *cache;          /* one per registry row */
  /* The last lookups, for runs of values of one schema (the common case):
  ** the row of last_id, and the entry of last_row. */
  int32_t last_id;
  const kl_reg_schema *by_last_id;
  const kl_reg_schema *last_row;
  sc_entry *last_entry;
};

kl_rc kl_decoder_new(const kl_env *env, kl_registry *reg, unsigned flags, kl_stats *stats,
                     kl_decoder **out) {
  *out = NULL;
  kl_decoder *d = kl_malloc(env, sizeof *d);
  size_t n = kl_registry_count(reg);
  sc_entry *cache = kl_malloc(env, (n ? n : 1) * sizeof *cache);
  if (!d || !cache) {
    kl_free(env, d);
    kl_free(env, cache);
    kl_registry_free(reg);
    return KL_NOMEM;
  }
  memset(cache, 0, (n ? n : 1) * sizeof *cache);
  d->env = env;
  d->reg = reg;
  d->flags = flags;
  d->stats = stats;
  d->cache = cache;
  d->last_id = 0;
  d->by_last_id = d->last_row = NULL;
  d->last_entry = NULL;
  *out = d;
  return KL_OK;
}

void kl_decoder_free(kl_decoder *d) {
  if (!d) return;
  size_t n = kl_registry_count(d->reg);
  for (size_t i = 0; i < n; i++) {
    kl_avro_schema_free(d->cache[i].avro);
    kl_proto_schema_free(d->cache[i].proto);
    kl_free(d->env, d->cache[i].msg);
  }
  kl_free(d->env, d->cache);
  kl_registry_free(d->reg);
  kl_free(d->env, d);
}

const kl_registry *kl_decoder_registry(const kl_decoder *d) { return d->reg; }

#define REF_MAX 256       /* schemas one schema may pull in through references */
#define REF_DEPTH 32

typedef struct ref_walk {
  const kl_registry *reg;
  const kl_reg_schema *seen[REF_MAX];
  kl_avro_text texts[REF_MAX];
  size_t n;
  kl_err *err;
} ref_walk;

/* The schemas s references, dependencies first, each once; then s. */
static kl_rc collect(ref_walk *w, const kl_reg_schema *s, int depth) {
  for (size_t i = 0; i < w->n; i++) {
    if (w->seen[i] == s) return KL_OK;
  }
  if (depth > REF_DEPTH) return kl_err_set(w->err, KL_CORRUPT, "references nested deeper than %d",
                                           REF_DEPTH);
  for (size_t i = 0; i < s->nrefs; i++) {
    const kl_reg_ref *ref = &s->refs[i];
    const kl_reg_schema *dep = ref->version == -1
                                   ? kl_registry_latest(w->reg, ref->subject)
                                   : kl_registry_by_subject(w->reg, ref->subject, ref->version);
    if (!dep) {
      return kl_err_set(w->err, KL_CORRUPT, "reference %.200s (subject %.200s version %d) is "
                        "not in the registry", ref->name, ref->subject, (int)ref->version);
    }
    kl_rc rc = collect(w, dep, depth + 1);
    if (rc) return rc;
  }
  if (w->n == REF_MAX) return kl_err_set(w->err, KL_CORRUPT, "more than %d references", REF_MAX);
  w->seen[w->n] = s;
  w->texts[w->n].text = s->schema;
  w->texts[w->n++].n = s->schema_len;
  return KL_OK;
}

static int is_type(const kl_reg_schema *s, const char *t) { return strcmp(s->type, t) == 0; }

/* The schema a reference names: its version, or the subject's latest (-1). */
static const kl_reg_schema *referenced(const kl_registry *reg, const kl_reg_ref *ref) {
  return ref->version == -1 ? kl_registry_latest(reg, ref->subject)
                            : kl_registry_by_subject(reg, ref->subject, ref->version);
}

/* A Protobuf import is a reference by its import name: of the schema, or
** (for imports of imports) of the schemas it references, REF_DEPTH deep. */
typedef struct proto_refs {
  const kl_registry *reg;
  const kl_reg_schema *s;
} proto_refs;

static const kl_reg_schema *find_import(const kl_registry *reg, const kl_reg_schema *s,
                                        const char *name, int depth) {
  for (size_t i = 0; i < s->nrefs; i++) {
    if (strcmp(s->refs[i].name, name) == 0) return referenced(reg, &s->refs[i]);
  }
  for (size_t i = 0; depth < REF_DEPTH && i < s->nrefs; i++) {
    const kl_reg_schema *dep = referenced(reg, &s->refs[i]);
    const kl_reg_schema *found = dep ? find_import(reg, dep, name, depth + 1) : NULL;
    if (found) return found;
  }
  return NULL;
}

static kl_rc resolve_import(void *ctx, const char *name, const char **text, size_t *n) {
  const proto_refs *r = ctx;
  const kl_reg_schema *dep = find_import(r->reg, r->s, name, 0);
  if (!dep) return KL_NOTFOUND;
  *text = dep->schema;
  *n = dep->schema_len;
  return KL_OK;
}

/* Parse s once; a failure is remembered and given again. */
static kl_rc prepare(kl_decoder *d, const kl_reg_schema *s, sc_entry **out, kl_err *err) {
  sc_entry *e = s == d->last_row ? d->last_entry : &d->cache[kl_registry_index(d->reg, s)];
  d->last_row = s;
  d->last_entry = e;
  *out = e;
  if (e->state == SC_FAILED) return kl_err_set(err, e->rc, "%s", e->msg);
  if (e->state != SC_NEW) return KL_OK;
  kl_rc rc = KL_OK;
  kl_err pe;
  kl_err_clear(&pe);
  if (d->stats) d->stats->schemas_parsed++;
  if (s->rule_set && strstr(s->rule_set, "\"ENCRYPT")) {
    rc = kl_err_set(&pe, KL_UNSUPPORTED, "fields are encrypted by the schema's data-contract "
                    "rules (ruleSet), which an offline reader cannot decrypt");
  } else if (is_type(s, "AVRO")) {
    ref_walk *w = kl_malloc(d->env, sizeof *w);
    if (!w) return KL_NOMEM;
    w->reg = d->reg;
    w->n = 0;
    w->err = &pe;
    rc = collect(w, s, 0);
    if (rc == KL_OK) rc = kl_avro_schema_parse(d->env, w->texts, w->n, &e->avro, &pe);
    kl_free(d->env, w);
    if (rc == KL_OK) e->state = SC_AVRO;
  } else if (is_type(s, "JSON")) {
    e->state = SC_JSON;
  } else if (is_type(s, "PROTOBUF")) {
    proto_refs r = {d->reg, s};
    rc = kl_proto_schema_parse(d->env, s->schema, s->schema_len, resolve_import, &r, &e->proto,
                               &pe);
    if (rc == KL_OK) e->state = SC_PROTO;
  } else {
    rc = kl_err_set(&pe, KL_UNSUPPORTED, "schema type %.40s is not known", s->type);
  }
  if (rc == KL_NOMEM) return kl_err_set(err, rc, "out of memory");
  if (rc) {
    e->state = SC_FAILED;
    e->rc = rc;
    e->msg = kl_strdup(d->env, pe.msg);
    return kl_err_set(err, rc, "%s", pe.msg);
  }
  return KL_OK;
}

kl_rc kl_decoder_payload(kl_decoder *d, const kl_reg_schema *s, const uint8_t *p, size_t n,
                         kl_buf *json, kl_err *err) {
  sc_entry *e;
  kl_err de;
  kl_err_clear(&de);
  kl_rc rc = prepare(d, s, &e, &de);
  if (rc == KL_OK) {
    if (e->state == SC_AVRO) {
      rc = kl_avro_decode(e->avro, p, n, d->flags | KL_AVRO_RAW_BYTES, json, &de);
    } else if (e->state == SC_PROTO) {
      rc = kl_proto_decode(e->proto, p, n, json, &de);
    } else {
      rc = kl_json_payload(d->env, p, n, json, &de);
    }
  }
  if (rc) kl_err_set(err, rc, "schema id %d (%s version %d): %s", s->id, s->subject, s->version,
                     de.msg);
  return rc;
}

kl_rc kl_decoder_confluent(kl_decoder *d, const uint8_t *p, size_t n, const uint8_t *hdr,
                           size_t hn, kl_buf *json, int32_t *id, kl_err *err) {
  /* Runs of values of one Avro schema, the common case: magic byte 0 and
  ** the id of the value before, its schema parsed, decode at once.  A
  ** value that does not decode takes the way below again, which words the
  ** error. */
  if (!hdr && n >= 5 && p[0] == 0 && d->by_last_id && d->by_last_id == d->last_row &&
      d->last_entry->state == SC_AVRO &&
      d->last_id == (int32_t)((uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 |
                              (uint32_t)p[3] << 8 | p[4])) {
    size_t at = json->len;
    kl_err de;
    de.rc = KL_OK;
    de.msg[0] = 0;
    if (kl_avro_decode(d->last_entry->avro, p + 5, n - 5, d->flags | KL_AVRO_RAW_BYTES, json,
                       &de) == KL_OK) {
      *id = d->by_last_id->id;
      return KL_OK;
    }
    json->len = at;
  }
  kl_frame f;
  *id = -1;
  kl_rc rc = kl_frame_read(p, n, hdr, hn, &f, err);
  if (rc) return rc;
  const kl_reg_schema *s;
  if (f.by_guid) {
    s = kl_registry_by_guid(d->reg, f.guid);
    if (!s) {
      static const char hex[] = "0123456789abcdef";
      char g[33];
      for (int i = 0; i < 16; i++) {
        g[2 * i] = hex[f.guid[i] >> 4];
        g[2 * i + 1] = hex[f.guid[i] & 15];
      }
      g[32] = 0;
      return kl_err_set(err, KL_CORRUPT, "schema GUID %s is not in the registry", g);
    }
  } else if (!(s = d->by_last_id && d->last_id == f.id ? d->by_last_id
                                                         : kl_registry_by_id(d->reg, f.id))) {
    *id = f.id;
    return kl_err_set(err, KL_CORRUPT, "schema id %d is not in the registry", f.id);
  } else {
    d->last_id = f.id;
    d->by_last_id = s;
  }
  *id = s->id;
  return kl_decoder_payload(d, s, f.payload, f.n, json, err);
}

kl_rc kl_decoder_encode(kl_decoder *d, const kl_reg_schema *s, const char *message,
                        const char *json, size_t n, kl_buf *out, kl_err *err) {
  sc_entry *e;
  kl_err de;
  kl_err_clear(&de);
  kl_rc rc = prepare(d, s, &e, &de);
  uint8_t magic[5] = {0, (uint8_t)((uint32_t)s->id >> 24), (uint8_t)((uint32_t)s->id >> 16),
                      (uint8_t)((uint32_t)s->id >> 8), (uint8_t)s->id};
  if (rc == KL_OK && message && e->state != SC_PROTO) {
    rc = kl_err_set(&de, KL_MISUSE, "a message (%.100s) is named, but the schema is %s, not "
                    "PROTOBUF", message, s->type);
  }
  if (rc == KL_OK) rc = kl_buf_append(d->env, out, magic, sizeof magic);
  if (rc == KL_OK && e->state == SC_AVRO) {
    rc = kl_avro_encode(e->avro, json, n, d->flags | KL_AVRO_RAW_BYTES, out, &de);
  } else if (rc == KL_OK && e->state == SC_PROTO) {
    rc = kl_proto_encode(e->proto, message, json, n, out, &de);
  } else if (rc == KL_OK && e->state == SC_JSON) {
    rc = kl_json_payload(d->env, (const uint8_t *)json, n, out, &de);
  } else if (rc == KL_OK) {
    rc = kl_err_set(&de, KL_UNSUPPORTED, "encoding %s values is not supported: insert their "
                    "serialized bytes as a BLOB", s->type);
  }
  if (rc) kl_err_set(err, rc, "schema id %d (%s version %d): %s", s->id, s->subject, s->version,
                     de.msg);
  return rc;
}
