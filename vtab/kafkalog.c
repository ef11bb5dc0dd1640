/*
** kafkalog.c - the extension's entry point: sqlite3_kafkalog_init registers
** the kafka_log module and the SQL functions
**   kafka_log_version()      version and compiled-in codecs
**   kafka_log_stats()        work counters of this connection's queries (JSON)
**   kafka_log_stats_reset()  set them back to zero
** and maps core result codes to SQLite's, in one place.
*/
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <lz4.h>
#include <zstd.h>

#include "kafkalog.h"

SQLITE_EXTENSION_INIT1

#ifndef KL_VERSION
#define KL_VERSION "0.0.0"
#endif

int kl_sqlite_rc(kl_rc rc) {
  switch (rc) {
    case KL_OK: case KL_DONE: case KL_NOTFOUND: return SQLITE_OK;
    case KL_NOMEM: return SQLITE_NOMEM;
    case KL_IO: return SQLITE_IOERR;
    case KL_CORRUPT: return SQLITE_CORRUPT;
    case KL_RANGE: return SQLITE_RANGE;
    case KL_READONLY: return SQLITE_READONLY;
    case KL_BUSY: return SQLITE_BUSY;
    case KL_MISUSE: return SQLITE_MISUSE;
    case KL_UNSUPPORTED: return SQLITE_ERROR;
  }
  return SQLITE_ERROR;
}

void kl_stats_add_delta(kl_stats *t, const kl_stats *now, const kl_stats *then) {
  t->segments_opened += now->segments_opened - then->segments_opened;
  t->index_probes += now->index_probes - then->index_probes;
  t->index_fallbacks += now->index_fallbacks - then->index_fallbacks;
  t->batch_headers += now->batch_headers - then->batch_headers;
  t->batches_decoded += now->batches_decoded - then->batches_decoded;
  t->batches_skipped += now->batches_skipped - then->batches_skipped;
  t->records_decoded += now->records_decoded - then->records_decoded;
  t->bytes_decompressed += now->bytes_decompressed - then->bytes_decompressed;
  t->crc_checks += now->crc_checks - then->crc_checks;
}

static void fn_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  char buf[256];
  snprintf(buf, sizeof buf, "kafkalog %s (codecs: gzip zlib-%s snappy lz4-%s zstd-%s)", KL_VERSION,
           zlibVersion(), LZ4_versionString(), ZSTD_versionString());
  sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

static void fn_stats(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const kl_stats *s = &((kl_conn *)sqlite3_user_data(ctx))->stats;
  char *j = sqlite3_mprintf(
      "{\"segments_opened\":%llu,\"index_probes\":%llu,\"index_fallbacks\":%llu,"
      "\"batch_headers\":%llu,\"batches_decoded\":%llu,\"batches_skipped\":%llu,"
      "\"records_decoded\":%llu,\"bytes_decompressed\":%llu,\"crc_checks\":%llu}",
      (unsigned long long)s->segments_opened, (unsigned long long)s->index_probes,
      (unsigned long long)s->index_fallbacks, (unsigned long long)s->batch_headers,
      (unsigned long long)s->batches_decoded, (unsigned long long)s->batches_skipped,
      (unsigned long long)s->records_decoded, (unsigned long long)s->bytes_decompressed,
      (unsigned long long)s->crc_checks);
  if (!j) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, j, -1, sqlite3_free);
}

static void fn_stats_reset(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memset(&((kl_conn *)sqlite3_user_data(ctx))->stats, 0, sizeof(kl_stats));
  sqlite3_result_null(ctx);
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_kafkalog_init(sqlite3 *db, char **errmsg, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  kl_conn *conn = sqlite3_malloc(sizeof *conn);
  if (!conn) return SQLITE_NOMEM;
  memset(conn, 0, sizeof *conn);
  int rc = kl_log_vtab_register(db, conn); /* owns conn from here on */
  const int flags = SQLITE_UTF8 | SQLITE_INNOCUOUS;
  if (rc == SQLITE_OK) rc = kl_check_vtab_register(db);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_log_version", 0, flags | SQLITE_DETERMINISTIC, NULL,
                                 fn_version, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_log_stats", 0, flags, conn, fn_stats, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_log_stats_reset", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                 conn, fn_stats_reset, NULL, NULL);
  }
  if (rc != SQLITE_OK && errmsg) *errmsg = sqlite3_mprintf("kafkalog: %s", sqlite3_errstr(rc));
  return rc;
}
