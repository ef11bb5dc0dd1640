/*
** source.h - where a registry comes from: a `_schemas` partition
** directory, the `_schemas-*` partitions of log directories (a partition
** of another topic given alone stands for the log directory holding it),
** or a file holding the REST API's `GET /schemas` answer.
**
** A probe finds the source and a signature of its state (for each
** `_schemas` partition its segment count, log start and end offsets; for a
** file its size and modification time) without reading records; the
** owner of a cached registry compares signatures to know when to load it
** again.
*/
#ifndef KL_SOURCE_H
#define KL_SOURCE_H

#include "registry.h"

#define KL_SOURCE_MAX_PARTS 16

typedef struct kl_source {
  int is_file;
  char *path;               /* the file, or NULL */
  char *parts[KL_SOURCE_MAX_PARTS]; /* the `_schemas` partition directories */
  int64_t log_start[KL_SOURCE_MAX_PARTS];
  size_t nparts;
  uint64_t sig;
} kl_source;

/* Find the source named by path.  KL_CANTOPEN with a message when path is
** not there or holds no `_schemas` partition, KL_CORRUPT for a malformed
** checkpoint, KL_NOMEM.  Free with kl_source_free (also after a failure). */
kl_rc kl_source_probe(const kl_env *env, const char *path, kl_source *src, kl_err *err);
void kl_source_free(const kl_env *env, kl_source *src);

/* Replay the source into a new registry (kl_registry_finish done), counting
** work into stats.  Errors name the partition and offset of the record, or
** the file. */
kl_rc kl_source_load(const kl_env *env, const kl_source *src, kl_stats *stats,
                     kl_registry **out, kl_err *err);

#endif
