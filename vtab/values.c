/*
** values.c - see values.h.
*/
#include "values.h"

#include <string.h>

#include "avro_encode.h"
#include "broker.h"
#include "source.h"
#include "sqlenv.h"

SQLITE_EXTENSION_INIT3

/* ---- options ---- */

int kl_decode_option(kl_decode_opts *o, const char *name, size_t kn, const char *value, int *rc,
                     char **errmsg) {
#define IS(s) (kn == strlen(s) && memcmp(name, s, kn) == 0)
  char **slot = IS("schemas") ? &o->schemas : IS("key_schema") ? &o->avro[0]
                : IS("value_schema") ? &o->avro[1] : IS("key_subject") ? &o->subject[0]
                : IS("value_subject") ? &o->subject[1] : IS("key_message") ? &o->message[0]
                : IS("value_message") ? &o->message[1] : NULL;
  *rc = SQLITE_OK;
  if (slot) {
    sqlite3_free(*slot);
    *slot = sqlite3_mprintf("%s", value);
    if (!*slot) *rc = SQLITE_NOMEM;
    return 1;
  }
  if (IS("decode_errors") || IS("unions")) {
    int errs = IS("decode_errors");
    const char *a = errs ? "error" : "bare", *b = errs ? "null" : "wrapped";
    if (strcmp(value, a) != 0 && strcmp(value, b) != 0) {
      *errmsg = sqlite3_mprintf("kafka_log: %.*s='%s' is not valid: %.*s takes '%s' or '%s'",
                                (int)kn, name, value, (int)kn, name, a, b);
      *rc = SQLITE_ERROR;
      return 1;
    }
    if (errs) o->errors_null = strcmp(value, b) == 0;
    else o->wrap_unions = strcmp(value, b) == 0;
    return 1;
  }
  return 0;
#undef IS
}

int kl_decode_opts_ready(kl_decode_opts *o, const int type[2], char **errmsg) {
  static const char *const col[2] = {"key", "value"};
  for (int i = 0; i < 2; i++) {
    if (type[i] == KL_TYPE_AVRO && !o->avro[i]) {
      *errmsg = sqlite3_mprintf("kafka_log: %s_type='avro' needs %s_schema='<Avro schema JSON>'",
                                col[i], col[i]);
      return SQLITE_ERROR;
    }
    if (o->avro[i] && !o->plain[i]) {
      kl_err err;
      kl_err_clear(&err);
      kl_avro_text t = {o->avro[i], strlen(o->avro[i])};
      kl_rc rc = kl_avro_schema_parse(kl_sqlite_env(), &t, 1, &o->plain[i], &err);
      if (rc) {
        *errmsg = sqlite3_mprintf("kafka_log: %s_schema: %s", col[i], err.msg);
        return kl_sqlite_rc(rc) == SQLITE_CORRUPT_VTAB ? SQLITE_ERROR : kl_sqlite_rc(rc);
      }
    }
  }
  return SQLITE_OK;
}

void kl_decode_opts_free(kl_decode_opts *o) {
  sqlite3_free(o->schemas);
  for (int i = 0; i < 2; i++) {
    sqlite3_free(o->avro[i]);
    sqlite3_free(o->subject[i]);
    sqlite3_free(o->message[i]);
    kl_avro_schema_free(o->plain[i]);
  }
  memset(o, 0, sizeof *o);
}

/* ---- the per-connection cache ---- */

#define KL_VALUES_MAX 8 /* sources kept per connection */

typedef struct vdec {       /* a decoder shared by the statements using it */
  kl_decoder *dec;
  int refs;                 /* the cache's one, and one per statement */
} vdec;

typedef struct ventry {
  char *path;
  int wrap;
  uint64_t sig;
  vdec *vd;
  uint64_t used;
} ventry;

struct kl_values {
  ventry e[KL_VALUES_MAX];
  uint64_t tick;
};

static void vdec_release(vdec *vd) {
  if (vd && --vd->refs == 0) {
    kl_decoder_free(vd->dec);
    sqlite3_free(vd);
  }
}

static void entry_clear(ventry *e) {
  sqlite3_free(e->path);
  vdec_release(e->vd);
  memset(e, 0, sizeof *e);
}

void kl_values_free(struct kl_values *v) {
  if (!v) return;
  for (int i = 0; i < KL_VALUES_MAX; i++) entry_clear(&v->e[i]);
  sqlite3_free(v);
}

/* The decoder of source path (current: probed now), one reference taken. */
static kl_rc values_get(kl_conn *conn, const char *path, int wrap, vdec **out, kl_err *err) {
  *out = NULL;
  if (!conn->values) {
    if (!(conn->values = sqlite3_malloc(sizeof *conn->values))) return KL_NOMEM;
    memset(conn->values, 0, sizeof *conn->values);
  }
  struct kl_values *v = conn->values;
  kl_source src;
  kl_rc rc = kl_source_probe(kl_sqlite_env(), path, &src, err);
  ventry *e = NULL, *oldest = &v->e[0];
  for (int i = 0; rc == KL_OK && i < KL_VALUES_MAX; i++) {
    ventry *x = &v->e[i];
    if (x->path && x->wrap == wrap && strcmp(x->path, path) == 0) e = x;
    if (x->used < oldest->used) oldest = x;
  }
  if (rc == KL_OK && e && e->sig != src.sig) {
    entry_clear(e); /* `_schemas` changed: replay it again */
    oldest = e;
    e = NULL;
  }
  if (rc == KL_OK && !e) {
    kl_registry *reg = NULL;
    vdec *vd = NULL;
    rc = kl_source_load(kl_sqlite_env(), &src, &conn->stats, &reg, err);
    if (rc == KL_OK && !(vd = sqlite3_malloc(sizeof *vd))) {
      kl_registry_free(reg);
      rc = KL_NOMEM;
    }
    if (rc == KL_OK) {
      vd->refs = 1;
      rc = kl_decoder_new(kl_sqlite_env(), reg, wrap ? KL_AVRO_WRAP_UNIONS : 0, &conn->stats, &vd->dec);
      if (rc) sqlite3_free(vd);
    }
    if (rc == KL_OK) {
      entry_clear(oldest);
      oldest->path = sqlite3_mprintf("%s", path);
      oldest->wrap = wrap;
      oldest->sig = src.sig;
      oldest->vd = vd;
      if (!oldest->path) {
        entry_clear(oldest);
        rc = KL_NOMEM;
      }
      e = oldest;
    }
  }
  kl_source_free(kl_sqlite_env(), &src);
  if (rc) return rc;
  e->used = ++v->tick;
  e->vd->refs++;
  *out = e->vd;
  return KL_OK;
}

/* ---- columns ---- */

void kl_coldec_reset(kl_coldec *d) {
  vdec_release(d->vd);
  d->vd = NULL;
  d->probed = 0;
}

int kl_coldec_source(kl_coldec *d, sqlite3_value *v, char **errmsg) {
  sqlite3_free(d->schemas);
  d->schemas = NULL;
  if (!v) return SQLITE_OK;
  const unsigned char *s = sqlite3_value_type(v) == SQLITE_TEXT ? sqlite3_value_text(v) : NULL;
  if (!s || !*s) {
    sqlite3_free(*errmsg);
    *errmsg = sqlite3_mprintf("kafka_log: schemas takes the text of a path (a _schemas partition, "
                              "a log directory or a GET /schemas file), not %s",
                              s ? "''" : sqlite3_value_type(v) == SQLITE_NULL ? "NULL"
                                                                              : "a number or a blob");
    return SQLITE_ERROR;
  }
  if (!(d->schemas = sqlite3_mprintf("%s", (const char *)s))) return SQLITE_NOMEM;
  return SQLITE_OK;
}

void kl_coldec_free(kl_coldec *d) {
  kl_coldec_reset(d);
  sqlite3_free(d->schemas);
  d->schemas = NULL;
  kl_buf_free(kl_sqlite_env(), &d->json);
}

/* The value of header name among r's headers, or NULL. */
static const uint8_t *find_header(const kl_record *r, const char *name, size_t *n) {
  if (!r->headers_len) return NULL; /* most records: no headers to walk */
  const uint8_t *p = r->headers, *end = r->headers + r->headers_len;
  kl_header h;
  size_t nl = strlen(name);
  while (r->headers && kl_header_next(&p, end, &h) == KL_OK) {
    if ((size_t)h.name_len == nl && memcmp(h.name, name, nl) == 0 && h.value_len >= 0) {
      *n = (size_t)h.value_len;
      return h.value;
    }
  }
  return NULL;
}

static int decode_error(sqlite3_context *ctx, const kl_decode_opts *o, kl_rc rc,
                        const kl_where *w, int is_key, const kl_err *err) {
  /* A value that does not decode may be NULL; a registry that cannot be
  ** read is every value's problem, and stays an error. */
  if (o->errors_null && rc != KL_NOMEM && rc != KL_IO && rc != KL_CANTOPEN) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  char *m = w->partition >= 0
                ? sqlite3_mprintf("kafka_log: topic %s partition %d offset %lld: %s: %s",
                                  w->topic, w->partition, (long long)w->offset,
                                  is_key ? "key" : "value", err->msg[0] ? err->msg
                                                                        : kl_rc_name(rc))
                : sqlite3_mprintf("kafka_log: %s offset %lld: %s: %s", w->topic,
                                  (long long)w->offset, is_key ? "key" : "value",
                                  err->msg[0] ? err->msg : kl_rc_name(rc));
  sqlite3_result_error(ctx, m ? m : "kafka_log: out of memory", -1);
  sqlite3_free(m);
  int code = rc == KL_UNSUPPORTED ? SQLITE_CORRUPT_VTAB : kl_sqlite_rc(rc);
  sqlite3_result_error_code(ctx, code);
  return code;
}

/* The JSON as ctx's result, a copy.  Handed over NUL-terminated, with the
** length left to SQLite (-1): so the copy is flagged as terminated, and
** json_extract's sqlite3_value_text does not copy it again to add the NUL
** (SQLite 3.40 adds one to a text given with its length, in a buffer grown
** for it: measured, a tenth of a json_extract query's instructions).  JSON
** text holds no NUL byte (control characters are escaped in strings, and
** are not JSON elsewhere), so the length is json->len. */
static int result_json(sqlite3_context *ctx, kl_buf *json) {
  if (kl_buf_reserve(kl_sqlite_env(), json, json->len + 1)) {
    sqlite3_result_error_nomem(ctx);
    return SQLITE_NOMEM;
  }
  json->p[json->len] = 0;
  sqlite3_result_text(ctx, (const char *)json->p, -1, SQLITE_TRANSIENT);
  return SQLITE_OK;
}

int kl_decode_column(sqlite3_context *ctx, kl_conn *conn, const kl_decode_opts *o, kl_coldec *d,
                     int type, int is_key, const kl_record *r, const char *path,
                     const kl_where *where) {
  const uint8_t *p = is_key ? r->key : r->value;
  int32_t n = is_key ? r->key_len : r->value_len;
  if (n < 0) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  kl_err err;
  kl_err_clear(&err);
  kl_rc rc = KL_OK;
  d->json.len = 0;
  if (type == KL_TYPE_AVRO) {
    rc = kl_avro_decode(o->plain[is_key ? 0 : 1], p, (size_t)n,
                        o->wrap_unions ? KL_AVRO_WRAP_UNIONS : 0, &d->json, &err);
  } else {
    if (!d->probed) {
      vdec *vd = NULL;
      const char *src = d->schemas ? d->schemas : o->schemas ? o->schemas : path;
      rc = values_get(conn, src, o->wrap_unions, &vd, &err);
      if (rc) return decode_error(ctx, o, rc, where, is_key, &err);
      d->vd = vd;
      d->probed = 1;
    }
    size_t hn = 0;
    const uint8_t *hdr = find_header(r, is_key ? "__key_schema_id" : "__value_schema_id", &hn);
    int32_t id;
    rc = kl_decoder_confluent(d->vd->dec, p, (size_t)n, hdr, hn, &d->json, &id, &err);
  }
  conn->stats.values_decoded++;
  if (rc) return decode_error(ctx, o, rc, where, is_key, &err);
  return result_json(ctx, &d->json);
}

/* ---- INSERT ---- */

/* The subject INSERT encodes with: the option, else the topic of path's
** last component and "-key" / "-value"; NULL when path names no partition
** (sqlite3_malloc'd). */
static char *subject_of(const kl_decode_opts *o, int is_key, const char *path) {
  if (o->subject[is_key ? 0 : 1]) return sqlite3_mprintf("%s", o->subject[is_key ? 0 : 1]);
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  int32_t part;
  size_t tn = kl_partition_name(base, &part);
  return tn ? sqlite3_mprintf("%.*s-%s", (int)tn, base, is_key ? "key" : "value") : NULL;
}

/* The Confluent case of kl_encode_column: KL_* with the message in err. */
static kl_rc encode_confluent(kl_conn *conn, const kl_decode_opts *o, int is_key, const char *json,
                              size_t n, const char *path, kl_buf *out, kl_err *err) {
  const char *src = o->schemas ? o->schemas : path;
  char *subject = subject_of(o, is_key, path);
  if (!subject) {
    return kl_err_set(err, KL_MISUSE, "%s is not a partition directory (<topic>-<partition>): "
                      "name the subject with the %s_subject option", path,
                      is_key ? "key" : "value");
  }
  vdec *vd = NULL;
  kl_rc rc = values_get(conn, src, o->wrap_unions, &vd, err);
  if (rc == KL_OK) {
    const kl_reg_schema *s = kl_registry_latest(kl_decoder_registry(vd->dec), subject);
    rc = s ? kl_decoder_encode(vd->dec, s, o->message[is_key ? 0 : 1], json, n, out, err)
           : kl_err_set(err, KL_NOTFOUND, "subject %s has no live schema in the registry of %s",
                        subject, src);
  }
  vdec_release(vd);
  sqlite3_free(subject);
  return rc;
}

int kl_encode_column(kl_conn *conn, const kl_decode_opts *o, int type, int is_key,
                     sqlite3_value *v, const char *path, kl_buf *out, int *rc, char **errmsg) {
  *rc = SQLITE_OK;
  if (sqlite3_value_type(v) == SQLITE_NULL || sqlite3_value_type(v) == SQLITE_BLOB) return 0;
  const char *json = (const char *)sqlite3_value_text(v);
  size_t n = (size_t)sqlite3_value_bytes(v);
  if (!json) return (*rc = SQLITE_NOMEM), -1;
  kl_err err;
  kl_err_clear(&err);
  out->len = 0;
  kl_rc k = type == KL_TYPE_AVRO
                ? kl_avro_encode(o->plain[is_key ? 0 : 1], json, n, o->wrap_unions
                                 ? KL_AVRO_WRAP_UNIONS : 0, out, &err)
                : encode_confluent(conn, o, is_key, json, n, path, out, &err);
  if (k == KL_OK) return 1;
  *rc = k == KL_NOMEM ? SQLITE_NOMEM : k == KL_IO || k == KL_CANTOPEN ? kl_sqlite_rc(k)
                                                                     : SQLITE_MISMATCH;
  sqlite3_free(*errmsg);
  *errmsg = sqlite3_mprintf("kafka_log: INSERT into %s: %s: %s", path, is_key ? "key" : "value",
                            err.msg[0] ? err.msg : kl_rc_name(k));
  return -1;
}

/* ---- kafka_decode() ---- */

static void fn_error(sqlite3_context *ctx, kl_rc rc, const kl_err *err) {
  char *m = sqlite3_mprintf("kafka_decode: %s", err->msg[0] ? err->msg : kl_rc_name(rc));
  sqlite3_result_error(ctx, m ? m : "kafka_decode: out of memory", -1);
  sqlite3_free(m);
  sqlite3_result_error_code(ctx, rc == KL_UNSUPPORTED ? SQLITE_CORRUPT_VTAB : kl_sqlite_rc(rc));
}

static void free_schema(void *p) { kl_avro_schema_free(p); }

void kl_fn_decode(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  kl_conn *conn = sqlite3_user_data(ctx);
  const uint8_t *p = sqlite3_value_blob(argv[0]);
  size_t n = (size_t)sqlite3_value_bytes(argv[0]);
  const char *type = (const char *)sqlite3_value_text(argv[1]);
  const char *src = argc > 2 ? (const char *)sqlite3_value_text(argv[2]) : NULL;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  if (!p) p = (const uint8_t *)"";
  kl_err err;
  kl_err_clear(&err);
  kl_buf json = {0};
  kl_rc rc;
  if (type && strcmp(type, "json") == 0) {
    rc = kl_json_payload(kl_sqlite_env(), p, n, &json, &err);
  } else if (type && strcmp(type, "avro") == 0 && src) {
    kl_avro_schema *s = sqlite3_get_auxdata(ctx, 2);
    rc = KL_OK;
    if (!s) {
      kl_avro_text t = {src, (size_t)sqlite3_value_bytes(argv[2])};
      rc = kl_avro_schema_parse(kl_sqlite_env(), &t, 1, &s, &err);
      if (rc == KL_OK) {
        sqlite3_set_auxdata(ctx, 2, s, free_schema);
        if (!(s = sqlite3_get_auxdata(ctx, 2))) rc = KL_NOMEM;
      }
    }
    if (rc == KL_OK) rc = kl_avro_decode(s, p, n, 0, &json, &err);
  } else if (type && strcmp(type, "confluent") == 0 && src) {
    vdec *vd = NULL;
    rc = values_get(conn, src, 0, &vd, &err);
    int32_t id;
    if (rc == KL_OK) rc = kl_decoder_confluent(vd->dec, p, n, NULL, 0, &json, &id, &err);
    vdec_release(vd);
  } else {
    sqlite3_result_error(ctx, "kafka_decode(bytes, type, schema_source): type is 'confluent' "
                         "(schema_source: a _schemas partition, a log directory or a GET "
                         "/schemas file), 'avro' (schema_source: the schema) or 'json'", -1);
    return;
  }
  if (rc == KL_OK) {
    conn->stats.values_decoded++;
    result_json(ctx, &json);
  } else {
    fn_error(ctx, rc, &err);
  }
  kl_buf_free(kl_sqlite_env(), &json);
}
