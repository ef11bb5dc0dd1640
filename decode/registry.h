/*
** registry.h - the Schema Registry's schemas, replayed from the records of
** its `_schemas` topic (or loaded from the REST API's `GET /schemas`).
**
** Every record of `_schemas` has a JSON key naming its keytype:
**   {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}
**        value: {"subject","version","id","schemaType" (absent: AVRO),
**                "references":[{name,subject,version}],"schema","deleted",
**                "md5","metadata","ruleSet","guid"...}
**        a null value: a hard delete of (S, V)
**   {"keytype":"DELETE_SUBJECT","subject":S}  value {"subject","version"}:
**        soft-deletes the versions of S up to version
**   {"keytype":"CLEAR_SUBJECT","subject":S}   value {"subject"}:
**        soft-deletes every version of S
**   CONFIG, MODE, NOOP, CONTEXT, ASSOC and any keytype not known yet:
**        nothing here (the registry's reader ignores what it does not know,
**        and so do we; unknown fields of known records too)
** The latest record of a key wins (replay order is offset order); a
** subject event acts on the versions whose record came before it.  A soft
** delete keeps the schema (it still decodes the data written with it),
** marked deleted; a hard delete removes it.  A key or value that is not
** JSON, or a SCHEMA value without an integer id or a string schema, is
** KL_CORRUPT: a registry would refuse to start on it.
*/
#ifndef KL_REGISTRY_H
#define KL_REGISTRY_H

#include "klog.h"

typedef struct kl_registry kl_registry;

/* A reference: the schema of subject's version (-1: its latest) that the
** schema uses under name (an Avro full name, a Protobuf import path). */
typedef struct kl_reg_ref {
  char *name, *subject;
  int32_t version;
} kl_reg_ref;

/* One schema version; strings are NUL-terminated and owned by the
** registry.  references, metadata and rule_set are JSON text or NULL. */
typedef struct kl_reg_schema {
  int32_t id;
  char *subject;
  int32_t version;
  char *type;               /* "AVRO", "PROTOBUF", "JSON" or as written */
  char *schema;
  size_t schema_len;
  char *references;         /* JSON array text; "[]" when none */
  kl_reg_ref *refs;         /* the same, parsed */
  size_t nrefs;
  char *metadata, *rule_set;
  char *md5;
  uint8_t guid[16];
  int has_guid;
  int deleted;              /* soft-deleted */
  int64_t offset;           /* the record that defined it; -1 from a file */
} kl_reg_schema;

kl_rc kl_registry_new(const kl_env *env, kl_registry **out);
void kl_registry_free(kl_registry *r);

/* Add the record at offset (in offset order): key and value bytes (value
** NULL for a null value).  KL_CORRUPT with a message starting "key: " or
** "value: " (the caller says where the record is), KL_NOMEM. */
kl_rc kl_registry_add(kl_registry *r, int64_t offset, const uint8_t *key, size_t klen,
                      const uint8_t *value, size_t vlen, kl_err *err);

/* Add every schema of a `GET /schemas` answer (a JSON array of SCHEMA
** values) as live versions with offset -1.  KL_CORRUPT with a message. */
kl_rc kl_registry_add_rest(kl_registry *r, const char *text, size_t n, kl_err *err);

/* Apply the replay; after it the lookups below work and adding is over.
** KL_NOMEM. */
kl_rc kl_registry_finish(kl_registry *r);

/* The schemas sorted by id, then subject and version; *rows owned by r. */
size_t kl_registry_count(const kl_registry *r);
const kl_reg_schema *kl_registry_at(const kl_registry *r, size_t i);

/* Lookups, each a binary search; NULL when absent.  An id or GUID names the
** same schema in every subject that registered it: the first row (by id,
** subject, version) serves. */
const kl_reg_schema *kl_registry_by_id(const kl_registry *r, int32_t id);
const kl_reg_schema *kl_registry_by_guid(const kl_registry *r, const uint8_t guid[16]);
const kl_reg_schema *kl_registry_by_subject(const kl_registry *r, const char *subject,
                                            int32_t version);
/* The index of s among the rows (for caches keyed by row). */
size_t kl_registry_index(const kl_registry *r, const kl_reg_schema *s);

/* The latest live version of subject, or NULL. */
const kl_reg_schema *kl_registry_latest(const kl_registry *r, const char *subject);

#endif
