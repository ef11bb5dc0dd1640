/*
** registry.c - see registry.h.  The JSON of keys and values is read with
** Debian's jansson; integers too large for it are errors in a field that
** must be an int32 anyway.
*/
#include "registry.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct reg_event {  /* DELETE_SUBJECT (version) or CLEAR_SUBJECT (-1) */
  char *subject;
  int32_t upto;             /* versions up to it; INT32_MAX: all */
  int64_t offset;
} reg_event;

typedef struct reg_rec {    /* a SCHEMA record as added */
  kl_reg_schema s;
  int live;                 /* 0: a hard delete (null value) */
  size_t seq;               /* the order of adding */
} reg_rec;

struct kl_registry {
  const kl_env *env;
  reg_rec *recs;
  size_t nrecs, caprecs;
  reg_event *events;
  size_t nevents, capevents;
  kl_reg_schema **rows;     /* after finish: sorted by id, subject, version */
  size_t nrows;
  kl_reg_schema **by_subject; /* the same rows by subject, version */
  kl_reg_schema **by_guid;  /* the rows that have a GUID, by GUID, then as in rows */
  size_t nguids;
  size_t seq;
};

kl_rc kl_registry_new(const kl_env *env, kl_registry **out) {
  kl_registry *r = kl_malloc(env, sizeof *r);
  if (!r) return KL_NOMEM;
  memset(r, 0, sizeof *r);
  r->env = env;
  *out = r;
  return KL_OK;
}

static void schema_free(const kl_env *env, kl_reg_schema *s) {
  kl_free(env, s->subject);
  kl_free(env, s->type);
  kl_free(env, s->schema);
  kl_free(env, s->references);
  kl_free(env, s->metadata);
  kl_free(env, s->rule_set);
  kl_free(env, s->md5);
  for (size_t i = 0; i < s->nrefs; i++) {
    kl_free(env, s->refs[i].name);
    kl_free(env, s->refs[i].subject);
  }
  kl_free(env, s->refs);
}

void kl_registry_free(kl_registry *r) {
  if (!r) return;
  for (size_t i = 0; i < r->nrecs; i++) schema_free(r->env, &r->recs[i].s);
  for (size_t i = 0; i < r->nevents; i++) kl_free(r->env, r->events[i].subject);
  kl_free(r->env, r->recs);
  kl_free(r->env, r->events);
  kl_free(r->env, r->rows);
  kl_free(r->env, r->by_subject);
  kl_free(r->env, r->by_guid);
  kl_free(r->env, r);
}

static int grow(const kl_env *env, void **v, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return 1;
  size_t c = *cap ? 2 * *cap : 16;
  void *p = kl_realloc(env, *v, c * size);
  if (!p) return 0;
  *v = p;
  *cap = c;
  return 1;
}

static char *dup_json(const kl_env *env, json_t *j) {
  if (!j || json_is_null(j)) return NULL;
  char *t = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  if (!t) return NULL;
  char *c = kl_strdup(env, t);
  free(t); /* jansson's, from the C library */
  return c;
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* A GUID in its text form (8-4-4-4-12 hex digits). */
static int parse_guid(const char *t, uint8_t g[16]) {
  int k = 0;
  for (const char *p = t; *p; p++) {
    if (*p == '-') continue;
    int hi = hexval(p[0]), lo = p[1] ? hexval(p[1]) : -1;
    if (hi < 0 || lo < 0 || k == 16) return 0;
    g[k++] = (uint8_t)(hi << 4 | lo);
    p++;
  }
  return k == 16;
}

static int int32_field(json_t *o, const char *name, int32_t *out) {
  json_t *v = json_object_get(o, name);
  if (!json_is_integer(v)) return 0;
  json_int_t i = json_integer_value(v);
  if (i < INT32_MIN || i > INT32_MAX) return 0;
  *out = (int32_t)i;
  return 1;
}

/* The references array refs (n > 0 entries) of a SCHEMA value into s. */
static kl_rc schema_refs(const kl_env *env, json_t *refs, kl_reg_schema *s, kl_err *err) {
  size_t n = json_array_size(refs);
  if (!(s->refs = kl_malloc(env, n * sizeof *s->refs))) return KL_NOMEM;
  for (size_t i = 0; i < n; i++) {
    json_t *ref = json_array_get(refs, i);
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *subject = json_string_value(json_object_get(ref, "subject"));
    kl_reg_ref *rf = &s->refs[s->nrefs];
    if (!name || !subject || !int32_field(ref, "version", &rf->version)) {
      return kl_err_set(err, KL_CORRUPT, "value: reference %zu lacks name, subject or "
                        "version", i);
    }
    rf->name = kl_strdup(env, name);
    rf->subject = kl_strdup(env, subject);
    s->nrefs++;
    if (!rf->name || !rf->subject) return KL_NOMEM;
  }
  return KL_OK;
}

/* The optional members of a SCHEMA value (metadata, ruleSet, md5, guid,
** deleted) into s: 0 when one given could not be copied. */
static int schema_extras(const kl_env *env, json_t *v, kl_reg_schema *s) {
  json_t *md = json_object_get(v, "metadata"), *rs = json_object_get(v, "ruleSet");
  s->metadata = dup_json(env, md);
  s->rule_set = dup_json(env, rs);
  const char *md5 = json_string_value(json_object_get(v, "md5"));
  if (md5) s->md5 = kl_strdup(env, md5);
  const char *guid = json_string_value(json_object_get(v, "guid"));
  s->has_guid = guid && parse_guid(guid, s->guid);
  s->deleted = json_is_true(json_object_get(v, "deleted"));
  return !((md && !json_is_null(md) && !s->metadata) || (rs && !json_is_null(rs) && !s->rule_set) ||
           (md5 && !s->md5));
}

/* A SCHEMA value into s (subject and version from the key when given). */
static kl_rc schema_value(kl_registry *r, json_t *v, kl_reg_schema *s, kl_err *err) {
  const kl_env *env = r->env;
  json_t *schema = json_object_get(v, "schema");
  if (!int32_field(v, "id", &s->id)) return kl_err_set(err, KL_CORRUPT, "value: no integer id");
  if (!json_is_string(schema)) return kl_err_set(err, KL_CORRUPT, "value: no schema string");
  const char *type = json_string_value(json_object_get(v, "schemaType"));
  s->type = kl_strdup(env, type ? type : "AVRO");
  s->schema_len = json_string_length(schema);
  s->schema = kl_malloc(env, s->schema_len + 1);
  if (s->schema) {
    memcpy(s->schema, json_string_value(schema), s->schema_len + 1);
  }
  json_t *refs = json_object_get(v, "references");
  s->references = json_is_array(refs) ? dup_json(env, refs) : kl_strdup(env, "[]");
  if (refs && !json_is_array(refs) && !json_is_null(refs)) {
    return kl_err_set(err, KL_CORRUPT, "value: references is not an array");
  }
  if (json_is_array(refs) && json_array_size(refs) > 0) {
    kl_rc rc = schema_refs(env, refs, s, err);
    if (rc) return rc;
  }
  int extras = schema_extras(env, v, s);
  if (!s->type || !s->schema || !s->references || !extras) return KL_NOMEM;
  return KL_OK;
}

static kl_rc add_schema(kl_registry *r, int64_t offset, const char *subject, int32_t version,
                        json_t *v, kl_err *err) {
  if (!grow(r->env, (void **)&r->recs, &r->caprecs, r->nrecs, sizeof *r->recs)) return KL_NOMEM;
  reg_rec *rec = &r->recs[r->nrecs];
  memset(rec, 0, sizeof *rec);
  rec->s.subject = kl_strdup(r->env, subject);
  rec->s.version = version;
  rec->s.offset = offset;
  rec->seq = r->seq++;
  kl_rc rc = rec->s.subject ? KL_OK : KL_NOMEM;
  if (rc == KL_OK && v) {
    rc = schema_value(r, v, &rec->s, err);
    rec->live = 1;
  }
  if (rc) {
    schema_free(r->env, &rec->s);
    return rc;
  }
  r->nrecs++;
  return KL_OK;
}

static kl_rc add_event(kl_registry *r, int64_t offset, const char *subject, int32_t upto) {
  if (!grow(r->env, (void **)&r->events, &r->capevents, r->nevents, sizeof *r->events)) {
    return KL_NOMEM;
  }
  reg_event *e = &r->events[r->nevents];
  if (!(e->subject = kl_strdup(r->env, subject))) return KL_NOMEM;
  e->upto = upto;
  e->offset = offset;
  r->nevents++;
  return KL_OK;
}

static kl_rc add_parsed(kl_registry *r, int64_t offset, json_t *k, json_t *v, kl_err *err) {
  const char *kt = json_string_value(json_object_get(k, "keytype"));
  if (!kt) return kl_err_set(err, KL_CORRUPT, "key: no keytype");
  const char *subject = json_string_value(json_object_get(k, "subject"));
  if (strcmp(kt, "SCHEMA") == 0) {
    int32_t version;
    if (!subject || !int32_field(k, "version", &version)) {
      return kl_err_set(err, KL_CORRUPT, "key: a SCHEMA key without subject and version");
    }
    if (v && !json_is_object(v)) return kl_err_set(err, KL_CORRUPT, "value: not an object");
    return add_schema(r, offset, subject, version, v, err);
  }
  if (!v || !subject) return KL_OK; /* null values of other keytypes are ignored */
  if (strcmp(kt, "DELETE_SUBJECT") == 0) {
    int32_t upto;
    if (!int32_field(v, "version", &upto)) {
      return kl_err_set(err, KL_CORRUPT, "value: a DELETE_SUBJECT value without a version");
    }
    return add_event(r, offset, subject, upto);
  }
  if (strcmp(kt, "CLEAR_SUBJECT") == 0) return add_event(r, offset, subject, INT32_MAX);
  return KL_OK; /* CONFIG, MODE, NOOP, CONTEXT, ASSOC, and keytypes to come */
}

static json_t *load(const uint8_t *p, size_t n, const char *what, kl_err *err) {
  json_error_t je;
  json_t *j = json_loadb((const char *)p, n, 0, &je);
  if (!j) kl_err_set(err, KL_CORRUPT, "%s: not a JSON object: %s", what, je.text);
  return j;
}

kl_rc kl_registry_add(kl_registry *r, int64_t offset, const uint8_t *key, size_t klen,
                      const uint8_t *value, size_t vlen, kl_err *err) {
  if (!key) return kl_err_set(err, KL_CORRUPT, "key: null");
  json_t *k = load(key, klen, "key", err);
  if (!k) return KL_CORRUPT;
  json_t *v = NULL;
  if (value && !(v = load(value, vlen, "value", err))) {
    json_decref(k);
    return KL_CORRUPT;
  }
  kl_rc rc = add_parsed(r, offset, k, v, err);
  json_decref(k);
  json_decref(v);
  return rc;
}

kl_rc kl_registry_add_rest(kl_registry *r, const char *text, size_t n, kl_err *err) {
  json_error_t je;
  json_t *a = json_loadb(text, n, 0, &je);
  if (!json_is_array(a)) {
    json_decref(a);
    return kl_err_set(err, KL_CORRUPT, "not a JSON array of schemas (GET /schemas)%s%s",
                      a ? "" : ": ", a ? "" : je.text);
  }
  kl_rc rc = KL_OK;
  for (size_t i = 0; rc == KL_OK && i < json_array_size(a); i++) {
    json_t *v = json_array_get(a, i);
    const char *subject = json_string_value(json_object_get(v, "subject"));
    int32_t version;
    if (!subject || !int32_field(v, "version", &version)) {
      rc = kl_err_set(err, KL_CORRUPT, "schema %zu: no subject and version", i);
    } else {
      rc = add_schema(r, -1, subject, version, v, err);
      if (rc) kl_err_set(err, rc, "schema %zu", i);
    }
  }
  json_decref(a);
  return rc;
}

static int cmp_key(const void *a, const void *b) {
  const reg_rec *x = a, *y = b;
  int c = strcmp(x->s.subject, y->s.subject);
  if (c) return c;
  if (x->s.version != y->s.version) return x->s.version < y->s.version ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_id(const void *a, const void *b) {
  const kl_reg_schema *x = *(kl_reg_schema *const *)a, *y = *(kl_reg_schema *const *)b;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  int c = strcmp(x->subject, y->subject);
  if (c) return c;
  return x->version < y->version ? -1 : x->version > y->version;
}

/* GUIDs, then the rows' order (a GUID registered in several subjects is
** found as the first of them in rows). */
static int cmp_guid(const void *a, const void *b) {
  const kl_reg_schema *x = *(kl_reg_schema *const *)a, *y = *(kl_reg_schema *const *)b;
  int c = memcmp(x->guid, y->guid, 16);
  return c ? c : cmp_id(a, b);
}

static int cmp_subject(const void *a, const void *b) {
  const kl_reg_schema *x = *(kl_reg_schema *const *)a, *y = *(kl_reg_schema *const *)b;
  int c = strcmp(x->subject, y->subject);
  if (c) return c;
  return x->version < y->version ? -1 : x->version > y->version;
}

kl_rc kl_registry_finish(kl_registry *r) {
  if (r->nrecs) qsort(r->recs, r->nrecs, sizeof *r->recs, cmp_key); /* recs is NULL when empty */
  r->rows = kl_malloc(r->env, (r->nrecs + 1) * sizeof *r->rows);
  r->by_subject = kl_malloc(r->env, (r->nrecs + 1) * sizeof *r->by_subject);
  r->by_guid = kl_malloc(r->env, (r->nrecs + 1) * sizeof *r->by_guid);
  if (!r->rows || !r->by_subject || !r->by_guid) return KL_NOMEM;
  r->nguids = 0;
  r->nrows = 0;
  for (size_t i = 0; i < r->nrecs; i++) {
    reg_rec *rec = &r->recs[i];
    if (i + 1 < r->nrecs && strcmp(rec->s.subject, r->recs[i + 1].s.subject) == 0 &&
        rec->s.version == r->recs[i + 1].s.version) {
      continue; /* a later record of the same key wins */
    }
    if (!rec->live) continue; /* a hard delete */
    for (size_t e = 0; e < r->nevents; e++) {
      const reg_event *ev = &r->events[e];
      if (ev->offset > rec->s.offset && ev->upto >= rec->s.version &&
          strcmp(ev->subject, rec->s.subject) == 0) {
        rec->s.deleted = 1;
      }
    }
    r->rows[r->nrows] = &rec->s;
    r->by_subject[r->nrows++] = &rec->s;
    if (rec->s.has_guid) r->by_guid[r->nguids++] = &rec->s;
  }
  qsort(r->rows, r->nrows, sizeof *r->rows, cmp_id);
  qsort(r->by_subject, r->nrows, sizeof *r->by_subject, cmp_subject);
  qsort(r->by_guid, r->nguids, sizeof *r->by_guid, cmp_guid);
  return KL_OK;
}

size_t kl_registry_count(const kl_registry *r) { return r->nrows; }

const kl_reg_schema *kl_registry_at(const kl_registry *r, size_t i) { return r->rows[i]; }

size_t kl_registry_index(const kl_registry *r, const kl_reg_schema *s) {
  size_t lo = 0, hi = r->nrows;
  while (lo < hi) { /* rows are sorted by (id, subject, version) */
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_id(&r->rows[mid], &s) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const kl_reg_schema *kl_registry_by_id(const kl_registry *r, int32_t id) {
  size_t lo = 0, hi = r->nrows;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->rows[mid]->id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < r->nrows && r->rows[lo]->id == id ? r->rows[lo] : NULL;
}

const kl_reg_schema *kl_registry_by_guid(const kl_registry *r, const uint8_t guid[16]) {
  size_t lo = 0, hi = r->nguids;
  while (lo < hi) { /* the first of equal GUIDs */
    size_t mid = lo + (hi - lo) / 2;
    if (memcmp(r->by_guid[mid]->guid, guid, 16) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < r->nguids && memcmp(r->by_guid[lo]->guid, guid, 16) == 0 ? r->by_guid[lo] : NULL;
}

const kl_reg_schema *kl_registry_by_subject(const kl_registry *r, const char *subject,
                                            int32_t version) {
  size_t lo = 0, hi = r->nrows;
  kl_reg_schema key = {0};
  key.subject = (char *)subject;
  key.version = version;
  const kl_reg_schema *kp = &key;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_subject(&r->by_subject[mid], &kp) < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo < r->nrows && cmp_subject(&r->by_subject[lo], &kp) == 0) return r->by_subject[lo];
  return NULL;
}

const kl_reg_schema *kl_registry_latest(const kl_registry *r, const char *subject) {
  const kl_reg_schema *best = NULL;
  for (size_t i = 0; i < r->nrows; i++) {
    const kl_reg_schema *s = r->by_subject[i];
    if (!s->deleted && strcmp(s->subject, subject) == 0) best = s;
  }
  return best;
}
