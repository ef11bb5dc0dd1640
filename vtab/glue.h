/*
** glue.h - what the SQLite modules of vtab/ share: the per-connection
** context (work counters), the one place where a core result code becomes a
** SQLite one, and the registration of each module.  Bound folding is in
** bounds.h, the choice of partitions in parts.h, the plan and walk of the
** listing tables in listing.h.
*/
#ifndef KL_GLUE_H
#define KL_GLUE_H

#include "broker.h"
#include "klog.h"
#include "log.h"
#include "sqlite3ext.h"

/* Every module folds bounds and chooses partitions. */
#include "bounds.h"
#include "parts.h"

/* Per-connection state, owned by the kafka_log module (freed with the
** connection).  Every reader of a statement counts into stats directly,
** planning included, so a statement's work is what stats gained while it
** ran: a self-join counts each side once. */
typedef struct kl_conn {
  kl_stats stats;           /* work done since the last reset */
  struct kl_values *values; /* the registries of decoded columns (values.h) */
} kl_conn;

/* The SQLite result code for a core result code: the one mapping, so that
** an error keeps its class however far it travels (a damaged file is
** SQLITE_CORRUPT_VTAB, a full disk SQLITE_FULL, a path that is not there
** SQLITE_CANTOPEN). */
int kl_sqlite_rc(kl_rc rc);

/* Report a core error as a table's: vt's message "<module>: <err's>"
** (the code's name when err has none), and kl_sqlite_rc(rc). */
int kl_vtab_error(sqlite3_vtab *vt, const char *module, kl_rc rc, const kl_err *err);

/* kafka_log_stats() as JSON text (sqlite3_malloc'd, NULL when out of
** memory). */
char *kl_stats_json(const kl_stats *s);

/* Register the kafka_log module on db; conn is handed over (freed by the
** module's destructor, also on failure: SQLite calls it then).  The
** extension registers it last (kafkalog.c), so that everything else that
** counts into conn is registered while conn is still its own.
** log_vtab.c */
int kl_log_vtab_register(sqlite3 *db, kl_conn *conn);

/* kafka_log_max_skew('<dir>'), its user data the kl_conn.  log_maxskew.c */
void kl_fn_max_skew(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* Register the kafka_log_check table-valued function, counting its work
** into conn (owned by the kafka_log module).  check_vtab.c */
int kl_check_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_batches table-valued function, counting its work into
** conn (owned by the kafka_log module).  batches_vtab.c */
int kl_batches_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_segments table-valued function, counting its work into
** conn (owned by the kafka_log module).  segments_vtab.c */
int kl_segments_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_consumer_offsets table-valued function, counting its
** work into conn (owned by the kafka_log module).  offsets_vtab.c */
int kl_offsets_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_schemas table-valued function, counting its work
** into conn (owned by the kafka_log module).  schemas_vtab.c */
int kl_schemas_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_partitions table-valued function, counting its work
** into conn (owned by the kafka_log module).  partitions_vtab.c */
int kl_partitions_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register kafka_metadata, kafka_topics, kafka_partitions_metadata (the
** KRaft metadata partition, its image), counting their work into conn.
** metadata_vtab.c */
int kl_metadata_vtab_register(sqlite3 *db, kl_conn *conn);
int kl_topics_vtab_register(sqlite3 *db, kl_conn *conn);
int kl_partitions_metadata_vtab_register(sqlite3 *db, kl_conn *conn);

/* kafka_topic_id('<partition dir>'): its partition.metadata's topic id.
** metadata_vtab.c */
void kl_fn_topic_id(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* Register kafka_leader_epochs and kafka_replica_diff, counting their work
** into conn.  replica_vtab.c */
int kl_leader_epochs_vtab_register(sqlite3 *db, kl_conn *conn);
int kl_replica_diff_vtab_register(sqlite3 *db, kl_conn *conn);

#endif
