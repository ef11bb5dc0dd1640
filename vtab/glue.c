/*
** glue.c - result codes and counters shared by the modules of vtab/.
*/
#include "glue.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SQLITE_EXTENSION_INIT3

int kl_sqlite_rc(kl_rc rc) {
  switch (rc) {
    case KL_OK: case KL_DONE: case KL_NOTFOUND: return SQLITE_OK;
    case KL_NOMEM: return SQLITE_NOMEM;
    case KL_IO: return SQLITE_IOERR;
    case KL_CORRUPT: return SQLITE_CORRUPT_VTAB;
    case KL_RANGE: return SQLITE_TOOBIG; /* a value from SQL past a limit of the format */
    case KL_READONLY: return SQLITE_READONLY;
    case KL_BUSY: return SQLITE_BUSY;
    case KL_NOSPACE: return SQLITE_FULL;
    case KL_CANTOPEN: return SQLITE_CANTOPEN;
    case KL_MISUSE: return SQLITE_MISUSE;
    case KL_UNSUPPORTED: return SQLITE_ERROR;
    case KL_FULL: return SQLITE_INTERNAL; /* a full batch is the writer's to finish */
  }
  return SQLITE_ERROR;
}

int kl_vtab_error(sqlite3_vtab *vt, const char *module, kl_rc rc, const kl_err *err) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s: %s", module, err && err->msg[0] ? err->msg : kl_rc_name(rc));
  return kl_sqlite_rc(rc);
}

char *kl_stats_json(const kl_stats *s) {
  return sqlite3_mprintf(
      "{\"segments_opened\":%llu,\"index_probes\":%llu,\"index_fallbacks\":%llu,"
      "\"batch_headers\":%llu,\"batches_decoded\":%llu,\"batches_skipped\":%llu,"
      "\"records_decoded\":%llu,\"bytes_decompressed\":%llu,\"crc_checks\":%llu,"
      "\"bytes_read\":%llu,\"reads\":%llu,\"values_decoded\":%llu,\"schemas_parsed\":%llu,"
      "\"batches_ahead\":%llu,\"batches_reclaimed\":%llu,\"dirs_listed\":%llu,\"partitions_listed\":%llu,"
      "\"logs_opened\":%llu,\"sort_passes\":%llu,\"threads_started\":%llu,\"segments_dated\":%llu,"
      "\"segments_mapped\":%llu,\"bytes_mapped\":%llu,\"segments_helped\":%llu,"
      "\"segments_skipped\":%llu}",
      (unsigned long long)s->segments_opened, (unsigned long long)s->index_probes,
      (unsigned long long)s->index_fallbacks, (unsigned long long)s->batch_headers,
      (unsigned long long)s->batches_decoded, (unsigned long long)s->batches_skipped,
      (unsigned long long)s->records_decoded, (unsigned long long)s->bytes_decompressed,
      (unsigned long long)s->crc_checks, (unsigned long long)s->bytes_read,
      (unsigned long long)s->reads, (unsigned long long)s->values_decoded,
      (unsigned long long)s->schemas_parsed, (unsigned long long)s->batches_ahead,
      (unsigned long long)s->batches_reclaimed,
      (unsigned long long)s->dirs_listed, (unsigned long long)s->partitions_listed,
      (unsigned long long)s->logs_opened, (unsigned long long)s->sort_passes,
      (unsigned long long)s->threads_started, (unsigned long long)s->segments_dated,
      (unsigned long long)s->segments_mapped, (unsigned long long)s->bytes_mapped,
      (unsigned long long)s->segments_helped,
      (unsigned long long)s->segments_skipped);
}
