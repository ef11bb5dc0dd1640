/*
** kafkalog.h - what the files of vtab/ share: the per-connection context,
** the one place where kl_rc becomes a SQLite result code, and the module
** registration.
*/
#ifndef KL_KAFKALOG_H
#define KL_KAFKALOG_H

#include "klog.h"
#include "sqlite3ext.h"

/* Per-connection state, owned by the module (freed with the connection). */
typedef struct kl_conn {
  kl_stats stats;           /* work done by queries since the last reset */
} kl_conn;

/* The SQLite result code for a core result code. */
int kl_sqlite_rc(kl_rc rc);

/* Register the kafka_log module on db; conn is handed over (freed by the
** module's destructor, also on failure). */
int kl_log_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_log_check table-valued function (check_vtab.c). */
int kl_check_vtab_register(sqlite3 *db);

/* Add the difference of two counter snapshots to total. */
void kl_stats_add_delta(kl_stats *total, const kl_stats *now, const kl_stats *then);

#endif
