/*
** kafkalog.c - the extension's entry point: sqlite3_kafkalog_init checks
** that the host SQLite is recent enough, then registers the kafka_log and
** kafka_log_check modules and the SQL functions
**   kafka_log_version()      version and compiled-in codecs
**   kafka_log_stats()        work counters of this connection's queries (JSON)
**   kafka_log_stats_reset()  set them back to zero
*/
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <lz4.h>
#include <zstd.h>

#include "glue.h"

SQLITE_EXTENSION_INIT1

#ifndef KL_VERSION
#define KL_VERSION "0.0.0"
#endif

/* sqlite3_vtab_in, sqlite3_vtab_rhs_value and LIMIT/OFFSET constraints in
** xBestIndex came with 3.38.0: on an older host those calls would go
** through entries of the API table that it does not have. */
#define KL_SQLITE_MIN 3038000
#define KL_SQLITE_MIN_TEXT "3.38.0"

static void fn_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  char buf[256];
  snprintf(buf, sizeof buf, "kafkalog %s (codecs: gzip zlib-%s snappy lz4-%s zstd-%s)", KL_VERSION,
           zlibVersion(), LZ4_versionString(), ZSTD_versionString());
  sqlite3_result_text(ctx, buf, -1, SQLITE_TRANSIENT);
}

static void fn_stats(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  char *j = kl_stats_json(&((kl_conn *)sqlite3_user_data(ctx))->stats);
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

/*
** Confluent's wire format, what its serializers put in keys and values: a
** zero magic byte, the schema id (4 bytes, big-endian), then the payload.
** kafka_schema_id(v) is the id, kafka_payload(v) the bytes after it; both
** are NULL for a value not in that form (shorter than 5 bytes, another
** first byte, NULL).
*/
static const unsigned char *wire(sqlite3_value *v, int *n) {
  int t = sqlite3_value_type(v);
  if (t != SQLITE_BLOB && t != SQLITE_TEXT) return NULL;
  const unsigned char *p = t == SQLITE_BLOB ? sqlite3_value_blob(v) : sqlite3_value_text(v);
  *n = sqlite3_value_bytes(v);
  return p && *n >= 5 && p[0] == 0 ? p : NULL;
}

static void fn_schema_id(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int n;
  const unsigned char *p = wire(argv[0], &n);
  if (!p) return;
  sqlite3_result_int(ctx, (int32_t)((uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 |
                                    (uint32_t)p[3] << 8 | (uint32_t)p[4]));
}

static void fn_payload(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  int n;
  const unsigned char *p = wire(argv[0], &n);
  if (p) sqlite3_result_blob(ctx, n > 5 ? p + 5 : (const void *)"", n - 5, SQLITE_TRANSIENT);
}

#ifdef _WIN32
__declspec(dllexport)
#else
__attribute__((visibility("default")))
#endif
int sqlite3_kafkalog_init(sqlite3 *db, char **errmsg, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  /* Only functions every SQLite 3 has are called before this check. */
  if (sqlite3_libversion_number() < KL_SQLITE_MIN) {
    if (errmsg) {
      *errmsg = sqlite3_mprintf("kafkalog needs SQLite %s or later; this is SQLite %s",
                                KL_SQLITE_MIN_TEXT, sqlite3_libversion());
    }
    return SQLITE_ERROR;
  }
  kl_conn *conn = sqlite3_malloc(sizeof *conn);
  if (!conn) return SQLITE_NOMEM;
  memset(conn, 0, sizeof *conn);
  int rc = kl_log_vtab_register(db, conn); /* owns conn from here on */
  const int flags = SQLITE_UTF8 | SQLITE_INNOCUOUS;
  if (rc == SQLITE_OK) rc = kl_check_vtab_register(db);
  if (rc == SQLITE_OK) rc = kl_batches_vtab_register(db, conn);
  if (rc == SQLITE_OK) rc = kl_segments_vtab_register(db, conn);
  if (rc == SQLITE_OK) rc = kl_offsets_vtab_register(db, conn);
  if (rc == SQLITE_OK) rc = kl_partitions_vtab_register(db, conn);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_log_version", 0, flags | SQLITE_DETERMINISTIC, NULL,
                                 fn_version, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_log_stats", 0, flags, conn, fn_stats, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_schema_id", 1, flags | SQLITE_DETERMINISTIC, NULL,
                                 fn_schema_id, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_payload", 1, flags | SQLITE_DETERMINISTIC, NULL,
                                 fn_payload, NULL, NULL);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function(db, "kafka_log_stats_reset", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                 conn, fn_stats_reset, NULL, NULL);
  }
  if (rc != SQLITE_OK && errmsg) *errmsg = sqlite3_mprintf("kafkalog: %s", sqlite3_errstr(rc));
  return rc;
}
