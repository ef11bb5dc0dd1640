/*
** source.c - see source.h.
*/
#include "source.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "broker.h"
#include "cursor.h"
#include "file.h"
#include "log.h"
#include "scan.h"
#include "os.h"
#include "replay.h"

#define SCHEMAS_TOPIC "_schemas"

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static kl_rc add_parts(const kl_env *env, const kl_broker *b, kl_source *src) {
  for (size_t i = kl_broker_seek(b, SCHEMAS_TOPIC, strlen(SCHEMAS_TOPIC), 0);
       i < kl_broker_count(b) && src->nparts < KL_SOURCE_MAX_PARTS; i++) {
    const kl_part *p = kl_broker_part(b, i);
    if (!p->topic || strcmp(p->topic, SCHEMAS_TOPIC) != 0) break;
    if (!(src->parts[src->nparts] = kl_strdup(env, p->dir))) return KL_NOMEM;
    src->log_start[src->nparts++] = p->log_start;
  }
  return KL_OK;
}

static kl_rc part_sig(const kl_env *env, kl_source *src, size_t i, kl_err *err) {
  kl_log *log = NULL;
  kl_reader rd;
  kl_reader_init(&rd, env, NULL, KL_ON_CORRUPT_ERROR);
  int64_t leo = -1;
  kl_rc rc = kl_log_open_partition(env, src->parts[i], &log, err);
  if (rc == KL_OK) rc = kl_log_end_offset(log, &rd, &leo, err);
  if (rc == KL_OK) {
    src->sig = mix(src->sig, kl_log_segment_count(log));
    src->sig = mix(src->sig, (uint64_t)kl_log_start_offset(log));
    src->sig = mix(src->sig, (uint64_t)leo);
    src->sig = mix(src->sig, (uint64_t)src->log_start[i]);
  }
  kl_reader_free(&rd);
  kl_log_close(log);
  return rc;
}

kl_rc kl_source_probe(const kl_env *env, const char *path, kl_source *src, kl_err *err) {
  memset(src, 0, sizeof *src);
  struct stat st;
  if (kl_os_stat(env, path, &st) == 0 && S_ISREG(st.st_mode)) {
    src->is_file = 1;
    if (!(src->path = kl_strdup(env, path))) return KL_NOMEM;
    src->sig = mix(mix((uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec),
                   (uint64_t)st.st_mtim.tv_nsec);
    return KL_OK;
  }
  kl_broker *b = NULL;
  kl_rc rc = kl_broker_open(env, path, &b, err);
  if (rc == KL_OK) rc = add_parts(env, b, src);
  if (rc == KL_OK && src->nparts == 0 && kl_broker_single(b)) {
    /* A partition of another topic: the log directory holding it. */
    char logdir[PATH_MAX], name[256];
    kl_broker_close(b);
    b = NULL;
    rc = kl_partition_logdir(path, logdir, sizeof logdir, name, sizeof name, err);
    if (rc == KL_OK) rc = kl_broker_open(env, logdir, &b, err);
    if (rc == KL_OK) rc = add_parts(env, b, src);
  }
  kl_broker_close(b);
  if (rc == KL_OK && src->nparts == 0) {
    rc = kl_err_set(err, KL_CANTOPEN, "%s: no _schemas partition there (schemas= names a "
                    "_schemas partition, a log directory, or a GET /schemas JSON file)", path);
  }
  for (size_t i = 0; rc == KL_OK && i < src->nparts; i++) rc = part_sig(env, src, i, err);
  return rc;
}

void kl_source_free(const kl_env *env, kl_source *src) {
  kl_free(env, src->path);
  for (size_t i = 0; i < src->nparts; i++) kl_free(env, src->parts[i]);
  memset(src, 0, sizeof *src);
}

static kl_rc load_file(const kl_env *env, const char *path, kl_registry *reg, kl_err *err) {
  kl_file f;
  kl_rc rc = kl_file_open(&f, env, path, err);
  if (rc) return rc;
  char *text = NULL;
  if (f.size > (int64_t)KL_MAX_BATCH_BYTES) {
    rc = kl_err_set(err, KL_CORRUPT, "%s: %lld bytes is larger than a schema list may be", path,
                    (long long)f.size);
  } else if (!(text = kl_malloc(env, (size_t)f.size + 1))) {
    rc = KL_NOMEM;
  } else {
    rc = kl_file_read(&f, 0, text, (size_t)f.size, err);
  }
  if (rc == KL_OK) {
    kl_err e;
    kl_err_clear(&e);
    rc = kl_registry_add_rest(reg, text, (size_t)f.size, &e);
    if (rc) kl_err_set(err, rc, "%s: %s", path, e.msg);
  }
  kl_free(env, text);
  kl_file_close(&f);
  return rc;
}

/* A record of _schemas into the registry (replay.h). */
static kl_rc add_schema_record(void *ud, const kl_record *r, kl_err *err) {
  return kl_registry_add(ud, r->offset, r->key_len < 0 ? NULL : r->key,
                         r->key_len < 0 ? 0 : (size_t)r->key_len,
                         r->value_len < 0 ? NULL : r->value,
                         r->value_len < 0 ? 0 : (size_t)r->value_len, err);
}

kl_rc kl_source_load(const kl_env *env, const kl_source *src, kl_stats *stats,
                     kl_registry **out, kl_err *err) {
  *out = NULL;
  kl_registry *reg;
  kl_rc rc = kl_registry_new(env, &reg);
  if (rc) return rc;
  if (src->is_file) rc = load_file(env, src->path, reg, err);
  for (size_t i = 0; rc == KL_OK && i < src->nparts; i++) {
    rc = kl_replay_partition(env, src->parts[i], src->log_start[i], 0, stats, add_schema_record,
                             reg, err);
  }
  if (rc == KL_OK) rc = kl_registry_finish(reg);
  if (rc) {
    kl_registry_free(reg);
    return rc;
  }
  *out = reg;
  return KL_OK;
}
