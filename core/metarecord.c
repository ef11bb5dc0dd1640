/*
** metarecord.c - KRaft metadata records: a walk of the generated field
** descriptors (metaschema.c) over the bytes, through the primitives of
** kmsg.h, writing JSON as it goes.
*/
#include "metarecord.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kmsg.h"
#include "utf8.h"

const kl_mtype *kl_meta_type(int32_t api_key) {
  for (size_t i = 0; i < kl_meta_type_count; i++) {
    if (kl_meta_types[i].api_key == api_key) return &kl_meta_types[i];
  }
  return NULL;
}

int kl_meta_field(const kl_mtype *t, const char *name) {
  for (int i = 0; i < t->nfields; i++) {
    if (strcmp(t->fields[i].name, name) == 0) return i;
  }
  return -1;
}

static int in(int v, int lo, int hi) { return lo != KL_MV_OPEN && v >= lo && v <= hi; }

/* ---- JSON ---- */

typedef struct jw {
  const kl_env *env;
  kl_buf *o;
  kl_rc rc;                 /* the first failure: later writes do nothing */
} jw;

static void put(jw *w, const char *s, size_t n) {
  if (w->rc == KL_OK) w->rc = kl_buf_append(w->env, w->o, s, n);
}

static void puts_(jw *w, const char *s) { put(w, s, strlen(s)); }

static void put_hex(jw *w, const uint8_t *p, size_t n) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < n && w->rc == KL_OK; i++) {
    char b[2] = {hex[p[i] >> 4], hex[p[i] & 15]};
    put(w, b, 2);
  }
}

static void put_base64(jw *w, const uint8_t *p, size_t n, int url) {
  const char *a = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                      : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n && w->rc == KL_OK; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                 (i + 2 < n ? p[i + 2] : 0);
    char b[4] = {a[v >> 18], a[(v >> 12) & 63], a[(v >> 6) & 63], a[v & 63]};
    size_t k = n - i >= 3 ? 4 : n - i + 1;
    put(w, b, k);
    if (!url && k < 4) put(w, "==", 4 - k);
  }
}

void kl_uuid_str(const uint8_t u[16], char s[23]) {
  kl_buf b = {0};
  uint8_t tmp[32];
  b.p = tmp;
  b.cap = sizeof tmp; /* fits: no allocation is made */
  jw w = {NULL, &b, KL_OK};
  put_base64(&w, u, 16, 1);
  memcpy(s, tmp, 22);
  s[22] = 0;
}

static int b64url(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

int kl_uuid_parse(const char *s, size_t n, uint8_t u[16]) {
  if (n != 22) return 0;
  uint8_t out[18];
  size_t k = 0;
  for (size_t i = 0; i < 24; i += 4) {
    uint32_t v = 0;
    for (size_t j = 0; j < 4; j++) {
      int d = i + j < 22 ? b64url(s[i + j]) : 0;
      if (d < 0) return 0;
      v = v << 6 | (uint32_t)d;
    }
    out[k++] = (uint8_t)(v >> 16);
    out[k++] = (uint8_t)(v >> 8);
    out[k++] = (uint8_t)v;
  }
  if (b64url(s[21]) & 15) return 0; /* the last character carries 2 bits */
  memcpy(u, out, 16);
  return 1;
}

static void put_string(jw *w, const uint8_t *p, int32_t n) {
  if (!kl_utf8_valid(p, (size_t)n)) {
    puts_(w, "{\"hex\":\"");
    put_hex(w, p, (size_t)n);
    puts_(w, "\"}");
    return;
  }
  put(w, "\"", 1);
  int32_t from = 0;
  for (int32_t i = 0; i < n; i++) {
    uint8_t ch = p[i];
    if (ch != '"' && ch != '\\' && ch >= 0x20) continue;
    put(w, (const char *)p + from, (size_t)(i - from));
    char e[8];
    snprintf(e, sizeof e, ch == '"' || ch == '\\' ? "\\%c" : "\\u%04x", ch);
    puts_(w, e);
    from = i + 1;
  }
  put(w, (const char *)p + from, (size_t)(n - from));
  put(w, "\"", 1);
}

static void put_int(jw *w, int64_t v) {
  char b[24];
  snprintf(b, sizeof b, "%lld", (long long)v);
  puts_(w, b);
}

/* ---- the walk ---- */

typedef struct walk {
  kl_kmsg *r;
  jw *w;
  int version;
  int flex;
  kl_mrec *rec;             /* top-level fields land in rec->top */
} walk;

static kl_rc field_value(walk *k, kl_kmsg *r, const kl_mfield *f, kl_mtop *top);

static kl_rc scalar(walk *k, kl_kmsg *r, const kl_mfield *f, int nullable, kl_mtop *top) {
  kl_rc rc;
  int flags = (k->flex ? KL_KMSG_COMPACT : 0) | (nullable ? KL_KMSG_NULLABLE : 0);
  int64_t iv = 0;
  switch (f->type) {
    case KL_MT_INT8: { int8_t v; if ((rc = kl_kmsg_i8(r, f->name, &v))) return rc; iv = v; break; }
    case KL_MT_INT16: { int16_t v; if ((rc = kl_kmsg_i16(r, f->name, &v))) return rc; iv = v; break; }
    case KL_MT_INT32: { int32_t v; if ((rc = kl_kmsg_i32(r, f->name, &v))) return rc; iv = v; break; }
    case KL_MT_INT64: { if ((rc = kl_kmsg_i64(r, f->name, &iv))) return rc; break; }
    case KL_MT_UINT16: { uint16_t v; if ((rc = kl_kmsg_u16(r, f->name, &v))) return rc; iv = v; break; }
    case KL_MT_UINT32: { uint32_t v; if ((rc = kl_kmsg_u32(r, f->name, &v))) return rc; iv = v; break; }
    case KL_MT_BOOL: {
      int v;
      if ((rc = kl_kmsg_bool(r, f->name, &v))) return rc;
      puts_(k->w, v ? "true" : "false");
      if (top) top->i = v != 0;
      return KL_OK;
    }
    case KL_MT_FLOAT64: {
      double d;
      if ((rc = kl_kmsg_f64(r, f->name, &d))) return rc;
      char b[40];
      if (isfinite(d)) snprintf(b, sizeof b, "%.17g", d);
      else snprintf(b, sizeof b, "null"); /* JSON has no NaN or infinity */
      puts_(k->w, b);
      return KL_OK;
    }
    case KL_MT_UUID: {
      const uint8_t *u;
      if ((rc = kl_kmsg_raw(r, f->name, 16, &u))) return rc;
      put(k->w, "\"", 1);
      put_base64(k->w, u, 16, 1);
      put(k->w, "\"", 1);
      if (top) top->p = u, top->n = 16;
      return KL_OK;
    }
    case KL_MT_STRING: case KL_MT_BYTES: {
      kl_kslice s;
      rc = f->type == KL_MT_STRING ? kl_kmsg_string(r, f->name, flags, &s)
                                   : kl_kmsg_bytes(r, f->name, flags, &s);
      if (rc) return rc;
      if (top) top->p = s.p, top->n = s.n, top->null = !s.p;
      if (!s.p) puts_(k->w, "null");
      else if (f->type == KL_MT_STRING) put_string(k->w, s.p, s.n);
      else {
        put(k->w, "\"", 1);
        put_base64(k->w, s.p, (size_t)s.n, 0);
        put(k->w, "\"", 1);
      }
      return KL_OK;
    }
    default:
      return kl_err_set(r->err, KL_CORRUPT, "%s: %s has a type this reader lacks", r->what, f->name);
  }
  put_int(k->w, iv);
  if (top) top->i = iv;
  return KL_OK;
}

static kl_rc structure(walk *k, kl_kmsg *r, const kl_mfield *fields, int n, kl_mtop *top);

/* One value of field f (an element when f is an array). */
static kl_rc element(walk *k, kl_kmsg *r, const kl_mfield *f) {
  if (f->type == KL_MT_STRUCT) return structure(k, r, f->sub, f->nsub, NULL);
  return scalar(k, r, f, 0, NULL);
}

static kl_rc field_value(walk *k, kl_kmsg *r, const kl_mfield *f, kl_mtop *top) {
  int nullable = in(k->version, f->n_lo, f->n_hi);
  if (top) top->present = 1;
  if (!f->array) {
    if (f->type == KL_MT_STRUCT) return structure(k, r, f->sub, f->nsub, NULL);
    return scalar(k, r, f, nullable, top);
  }
  int32_t count;
  int flags = (k->flex ? KL_KMSG_COMPACT : 0) | (nullable ? KL_KMSG_NULLABLE : 0);
  kl_rc rc = kl_kmsg_array(r, f->name, flags, &count);
  if (rc) return rc;
  if (count < 0) {
    if (top) top->null = 1;
    puts_(k->w, "null");
    return KL_OK;
  }
  if (top && f->type == KL_MT_INT32) top->p = r->p, top->n = count;
  put(k->w, "[", 1);
  for (int32_t i = 0; rc == KL_OK && i < count; i++) {
    if (i) put(k->w, ",", 1);
    rc = element(k, r, f);
  }
  put(k->w, "]", 1);
  return rc;
}

static void member(walk *k, int *first, const char *name) {
  if (!*first) put(k->w, ",", 1);
  *first = 0;
  put(k->w, "\"", 1);
  puts_(k->w, name);
  put(k->w, "\":", 2);
}

/* A tagged field the spec names: its bytes hold exactly its value. */
static kl_rc tagged(walk *k, kl_kmsg *f, const kl_mfield *fd, kl_mtop *top) {
  kl_rc rc = field_value(k, f, fd, top);
  return rc ? rc : kl_kmsg_end(f, fd->name);
}

static kl_rc tags(walk *k, kl_kmsg *r, const kl_mfield *fields, int n, kl_mtop *top, int *first) {
  uint32_t count, tag;
  kl_rc rc = kl_kmsg_tags(r, &count);
  for (uint32_t i = 0; rc == KL_OK && i < count; i++) {
    kl_kmsg f;
    if ((rc = kl_kmsg_tag(r, &tag, &f))) break;
    int j = 0;
    while (j < n && !(fields[j].tag == (int32_t)tag && in(k->version, fields[j].v_lo, fields[j].v_hi) &&
                      in(k->version, fields[j].t_lo, fields[j].t_hi))) {
      j++;
    }
    if (j < n) {
      member(k, first, fields[j].name);
      rc = tagged(k, &f, &fields[j], top && j < KL_META_MAX_TOP ? &top[j] : NULL);
    } else {
      char name[24];
      snprintf(name, sizeof name, "_tag%u", (unsigned)tag);
      member(k, first, name);
      put(k->w, "\"", 1);
      put_hex(k->w, f.p, kl_kmsg_left(&f));
      put(k->w, "\"", 1);
    }
  }
  return rc;
}

static kl_rc structure(walk *k, kl_kmsg *r, const kl_mfield *fields, int n, kl_mtop *top) {
  kl_rc rc = KL_OK;
  int first = 1;
  put(k->w, "{", 1);
  for (int i = 0; rc == KL_OK && i < n; i++) {
    const kl_mfield *f = &fields[i];
    if (!in(k->version, f->v_lo, f->v_hi) || (k->flex && in(k->version, f->t_lo, f->t_hi))) continue;
    member(k, &first, f->name);
    rc = field_value(k, r, f, top && i < KL_META_MAX_TOP ? &top[i] : NULL);
  }
  if (rc == KL_OK && k->flex) rc = tags(k, r, fields, n, top, &first);
  put(k->w, "}", 1);
  return rc ? rc : k->w->rc;
}

kl_rc kl_meta_decode(const kl_env *env, const uint8_t *p, size_t n, kl_mrec *out, kl_buf *json,
                     kl_err *err) {
  memset(out, 0, sizeof *out);
  out->api_key = out->version = -1;
  json->len = 0;
  kl_kmsg r;
  kl_kmsg_init(&r, p, n, "value", err);
  uint32_t key, version;
  kl_rc rc = kl_kmsg_uvarint(&r, "frame version", &out->frame);
  if (rc || out->frame != 1) return rc; /* a frame this reader does not know */
  if ((rc = kl_kmsg_uvarint(&r, "api key", &key)) != KL_OK) return rc;
  if ((rc = kl_kmsg_uvarint(&r, "version", &version)) != KL_OK) return rc;
  /* Kafka reads both as shorts: larger ones are of no record it knows. */
  out->api_key = (int32_t)key;
  out->version = (int32_t)version;
  const kl_mtype *t = kl_meta_type(out->api_key);
  if (!t || key > INT16_MAX || (int)version < t->v_lo || (int)version > t->v_hi) return KL_OK;
  jw w = {env, json, KL_OK};
  walk k = {&r, &w, (int)version, (int)version >= t->flex_lo, out};
  rc = structure(&k, &r, t->fields, t->nfields, out->top);
  if (rc == KL_OK) rc = kl_kmsg_end(&r, t->name);
  if (rc == KL_NOMEM) return kl_err_set(err, KL_NOMEM, "out of memory");
  if (rc) return rc;
  out->type = t;
  return KL_OK;
}
