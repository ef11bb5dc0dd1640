/*
** glue.h - what the SQLite modules of vtab/ share: the per-connection
** context (work counters), the one place where a core result code becomes a
** SQLite one, and the registration of each module.
*/
#ifndef KL_GLUE_H
#define KL_GLUE_H

#include "klog.h"
#include "sqlite3ext.h"

/* Per-connection state, owned by the kafka_log module (freed with the
** connection).  Every reader of a statement counts into stats directly,
** planning included, so a statement's work is what stats gained while it
** ran: a self-join counts each side once. */
typedef struct kl_conn {
  kl_stats stats;           /* work done since the last reset */
} kl_conn;

/* The SQLite result code for a core result code. */
int kl_sqlite_rc(kl_rc rc);

/* kafka_log_stats() as JSON text (sqlite3_malloc'd, NULL when out of
** memory). */
char *kl_stats_json(const kl_stats *s);

/* Register the kafka_log module on db; conn is handed over (freed by the
** module's destructor, also on failure).  log_vtab.c */
int kl_log_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_log_check table-valued function.  check_vtab.c */
int kl_check_vtab_register(sqlite3 *db);

/* Register the kafka_batches table-valued function, counting its work into
** conn (owned by the kafka_log module).  batches_vtab.c */
int kl_batches_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_segments table-valued function, counting its work into
** conn (owned by the kafka_log module).  segments_vtab.c */
int kl_segments_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_consumer_offsets table-valued function, counting its
** work into conn (owned by the kafka_log module).  offsets_vtab.c */
int kl_offsets_vtab_register(sqlite3 *db, kl_conn *conn);

/* Register the kafka_partitions table-valued function, counting its work
** into conn (owned by the kafka_log module).  partitions_vtab.c */
int kl_partitions_vtab_register(sqlite3 *db, kl_conn *conn);

/* For the listing tables (kafka_log_check, kafka_segments): declare schema,
** make a vtab of size bytes (zeroed, its first member a sqlite3_vtab) and
** mark it DIRECTONLY (they read files named in SQL). */
int kl_listing_connect(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out);

/* xBestIndex of a table whose only constraint is its directory (column
** dir_col): dir = ? becomes argv 1 (idxNum 1).  A plan where it is not yet
** usable is refused (SQLITE_CONSTRAINT), so that SQLite picks the one
** where it is; without it at all, idxNum 0 at a prohibitive cost, and
** xFilter says the directory is required. */
int kl_best_index_dir(sqlite3_index_info *info, int dir_col);

/* Comparison operators, in the order of the plan bits of plan.h. */
enum kl_cmp_op { KL_CMP_EQ, KL_CMP_GT, KL_CMP_GE, KL_CMP_LT, KL_CMP_LE };

/* Narrow the inclusive integer bounds [*lo, *hi] by "column op v", with
** SQLite's semantics: numeric text compares as a number, NULL matches
** nothing (the bounds become empty: *lo > *hi), any other text or blob
** sorts after every number; fractions round to the integers they admit. */
void kl_fold_bound(enum kl_cmp_op op, sqlite3_value *v, int64_t *lo, int64_t *hi);

#endif
