/*
** kafkalog.c - the extension's entry point: sqlite3_kafkalog_init checks
** that the host SQLite is recent enough, then registers the kafka_log
** module, the listing modules and the SQL functions (all of them, or on
** failure none), among them
**   kafka_log_version()      version and compiled-in codecs
**   kafka_log_debug()        how this module was built and what it runs on
**   kafka_time(ms), kafka_ms(text)  timestamps as ISO-8601 text (timefn.h)
**   kafka_log_stats()        work counters of this connection's queries (JSON)
**   kafka_log_stats_reset()  set them back to zero
**   kafka_log_recover(dir)   leave a partition directory as its last commit
**                            left it, for a Kafka broker (JSON of the work)
**   kafka_partition_for(key, n)  the partition Kafka's default partitioner
**                            sends key to among n
*/
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <lz4.h>
#include <zstd.h>
#include <xxhash.h>

#include "glue.h"
#include "logcache.h"
#include "partitioner.h"
#include "timefn.h"
#include "sqlenv.h"
#include "values.h"
#include "writer.h"
#include "txnstate.h"

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

#ifndef KL_BUILD_TYPE
#define KL_BUILD_TYPE "unknown"
#endif
#ifndef KL_SNAPPY_VERSION
#define KL_SNAPPY_VERSION "unknown"
#endif
#if defined(__clang__)
#define KL_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define KL_COMPILER "gcc " __VERSION__
#else
#define KL_COMPILER "unknown"
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KL_SANITIZERS "address,undefined"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KL_SANITIZERS "address,undefined"
#endif
#endif
#ifndef KL_SANITIZERS
#define KL_SANITIZERS "none"
#endif

/* What a bug report needs, one "key: value" a line: the build, the SQLite
** it was compiled against and the one it runs in (they differ when a
** host brings its own), each codec library compiled against and loaded
** (a shared library can be newer than its headers were), and the limits
** compiled in. */
static void fn_debug(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  unsigned xxh = XXH_versionNumber();
  char *s = sqlite3_mprintf(
      "version: %s\n"
      "build type: %s\n"
      "compiler: %s\n"
      "sanitizers: %s\n"
      "assertions: %s\n"
      "sqlite compiled against: %s\n"
      "sqlite running on: %s (%s)\n"
      "sqlite needed: %s or later\n"
      "codec gzip: zlib %s (compiled against %s)\n"
      "codec snappy: snappy %s (compiled against; it reports no version at run time)\n"
      "codec lz4: lz4 %s (compiled against %s)\n"
      "codec zstd: zstd %s (compiled against %s)\n"
      "checksums: crc32c (built in), xxhash %u.%u.%u for lz4 frames\n"
      "limit max batch bytes: %llu\n"
      "limit cached logs: %d\n"
      "limit cached segments: %d",
      KL_VERSION, KL_BUILD_TYPE, KL_COMPILER, KL_SANITIZERS,
#ifdef NDEBUG
      "off",
#else
      "on",
#endif
      SQLITE_VERSION, sqlite3_libversion(), sqlite3_sourceid(), KL_SQLITE_MIN_TEXT,
      zlibVersion(), ZLIB_VERSION, KL_SNAPPY_VERSION, LZ4_versionString(), LZ4_VERSION_STRING,
      ZSTD_versionString(), ZSTD_VERSION_STRING, xxh / 10000, xxh / 100 % 100, xxh % 100,
      (unsigned long long)KL_MAX_BATCH_BYTES, KL_LOGCACHE_MAX, KL_LOGCACHE_SEGMENTS);
  if (!s) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, s, -1, sqlite3_free);
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

/* A writer that died leaves batches past the commit record, which Kafka's
** loader would serve: recovery as the next writer does it, nothing else
** written (writer.h kl_writer_recover). */
static void fn_recover(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *dir = (const char *)sqlite3_value_text(argv[0]);
  if (!dir) {
    sqlite3_result_error(ctx, "kafka_log_recover: the argument is a partition directory", -1);
    return;
  }
  kl_writer_stats done;
  kl_err err = {0};
  kl_rc rc = kl_writer_recover(kl_sqlite_env(), dir, &done, &err);
  if (rc) {
    char *m = sqlite3_mprintf("kafka_log_recover: %s", err.msg[0] ? err.msg : kl_rc_name(rc));
    sqlite3_result_error(ctx, m ? m : "kafka_log_recover: out of memory", -1);
    sqlite3_result_error_code(ctx, kl_sqlite_rc(rc));
    sqlite3_free(m);
    return;
  }
  char *j = sqlite3_mprintf("{\"bytes_cut\":%llu,\"indexes_rebuilt\":%llu,"
                            "\"log_start_repaired\":%llu}",
                            (unsigned long long)done.truncated,
                            (unsigned long long)done.recoveries,
                            (unsigned long long)done.log_start_repairs);
  if (!j) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, j, -1, sqlite3_free);
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

/* The key's bytes as a record stores them (a BLOB's, a TEXT's UTF-8, a
** number's text), so that WHERE partition = kafka_partition_for('c42', 12)
** names the partition a producer sent key c42 to. */
static void fn_partition_for(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3_int64 n = sqlite3_value_int64(argv[1]);
  if (sqlite3_value_numeric_type(argv[1]) != SQLITE_INTEGER || n < 1 || n > INT32_MAX) {
    sqlite3_result_error(ctx, "kafka_partition_for: the partition count must be an integer "
                         "from 1 to 2147483647", -1);
    return;
  }
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return; /* no key: no partition */
  const void *p = sqlite3_value_type(argv[0]) == SQLITE_BLOB ? sqlite3_value_blob(argv[0])
                                                             : sqlite3_value_text(argv[0]);
  int len = sqlite3_value_bytes(argv[0]);
  if (!p && len > 0) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_int(ctx, kl_partition_for(p, (size_t)len, (int32_t)n));
}

/*
** What the extension registers, in order.  Registration succeeds whole or
** takes back what it made: a function left behind would point at a module
** SQLite unloads when its init fails, or at a kl_conn freed with it.
*/
typedef struct kl_fn_def {
  const char *name;
  int nargs;
  int flags;
  int with_conn;            /* its user data is the kl_conn */
  void (*fn)(sqlite3_context *, int, sqlite3_value **);
} kl_fn_def;

#define KL_INNOCUOUS (SQLITE_UTF8 | SQLITE_INNOCUOUS)
static const kl_fn_def kl_fns[] = {
    {"kafka_log_max_skew", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, 1, kl_fn_max_skew},
    {"kafka_log_version", 0, KL_INNOCUOUS | SQLITE_DETERMINISTIC, 0, fn_version},
    {"kafka_log_debug", 0, KL_INNOCUOUS, 0, fn_debug},
    {"kafka_time", 1, KL_INNOCUOUS | SQLITE_DETERMINISTIC, 0, kl_fn_time},
    {"kafka_ms", 1, KL_INNOCUOUS | SQLITE_DETERMINISTIC, 0, kl_fn_ms},
    {"kafka_log_stats", 0, KL_INNOCUOUS, 1, fn_stats},
    {"kafka_schema_id", 1, KL_INNOCUOUS | SQLITE_DETERMINISTIC, 0, fn_schema_id},
    {"kafka_payload", 1, KL_INNOCUOUS | SQLITE_DETERMINISTIC, 0, fn_payload},
    {"kafka_partition_for", 2, KL_INNOCUOUS | SQLITE_DETERMINISTIC, 0, fn_partition_for},
    {"kafka_log_stats_reset", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, 1, fn_stats_reset},
    {"kafka_log_recover", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, fn_recover},
    {"kafka_coordinator_partition", 2, KL_INNOCUOUS | SQLITE_DETERMINISTIC, 0,
     kl_fn_coordinator_partition},
    {"kafka_topic_id", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, 0, kl_fn_topic_id},
    /* It reads the files its third argument names (type 'confluent'). */
    {"kafka_decode", 3, SQLITE_UTF8 | SQLITE_DIRECTONLY, 1, kl_fn_decode},
};
#define KL_NFNS (sizeof kl_fns / sizeof *kl_fns)

/* The listing modules, registered after kafka_log (whose destructor owns
** the kl_conn) and before the functions. */
static const struct {
  const char *name;
  int (*reg)(sqlite3 *, kl_conn *);
} kl_mods[] = {
    {"kafka_log_check", kl_check_vtab_register},
    {"kafka_batches", kl_batches_vtab_register},
    {"kafka_segments", kl_segments_vtab_register},
    {"kafka_consumer_offsets", kl_offsets_vtab_register},
    {"kafka_partitions", kl_partitions_vtab_register},
    {"kafka_transactions", kl_txn_state_vtab_register},
    {"kafka_transaction_log", kl_txn_log_vtab_register},
    {"kafka_producers", kl_producers_vtab_register},
    {"kafka_hanging_transactions", kl_hanging_vtab_register},
    {"kafka_metadata", kl_metadata_vtab_register},
    {"kafka_topics", kl_topics_vtab_register},
    {"kafka_partitions_metadata", kl_partitions_metadata_vtab_register},
    {"kafka_leader_epochs", kl_leader_epochs_vtab_register},
    {"kafka_replica_diff", kl_replica_diff_vtab_register},
    {"kafka_schemas", kl_schemas_vtab_register},
};
#define KL_NMODS (sizeof kl_mods / sizeof *kl_mods)

/* Take back every function and listing module of the extension (also one
** a previous load left, which may hold the kl_conn that replacing
** kafka_log freed), then kafka_log, whose destructor frees the kl_conn.
** SQLite refuses to drop an existing function while a statement runs
** (SQLITE_BUSY, as under SELECT load_extension(...)): then kafka_log
** stays, so that what is left never sees its kl_conn freed.  Dropping a
** function that does not exist may fail for want of memory, harmlessly. */
static void unregister(sqlite3 *db) {
  int all = 1;
  for (size_t i = KL_NFNS; i-- > 0;) {
    if (sqlite3_create_function(db, kl_fns[i].name, kl_fns[i].nargs, SQLITE_UTF8, NULL, NULL, NULL,
                                NULL) == SQLITE_BUSY) {
      all = 0;
    }
  }
  for (size_t i = KL_NMODS; i-- > 0;) sqlite3_create_module(db, kl_mods[i].name, NULL, NULL);
  if (all) sqlite3_create_module(db, "kafka_log", NULL, NULL);
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
  int rc = kl_log_vtab_register(db, conn); /* owns conn from here on, also on failure */
  if (rc != SQLITE_OK) {
    if (errmsg) *errmsg = sqlite3_mprintf("kafkalog: %s", sqlite3_errstr(rc));
    return rc;
  }
  size_t nmods = 0, nfns = 0;
  while (rc == SQLITE_OK && nmods < KL_NMODS) {
    if ((rc = kl_mods[nmods].reg(db, conn)) == SQLITE_OK) nmods++;
  }
  while (rc == SQLITE_OK && nfns < KL_NFNS) {
    const kl_fn_def *f = &kl_fns[nfns];
    rc = sqlite3_create_function(db, f->name, f->nargs, f->flags, f->with_conn ? conn : NULL, f->fn,
                                 NULL, NULL);
    if (rc == SQLITE_OK) nfns++;
  }
  if (rc == SQLITE_OK) return SQLITE_OK;
  unregister(db);
  if (errmsg) *errmsg = sqlite3_mprintf("kafkalog: %s", sqlite3_errstr(rc));
  return rc;
}
