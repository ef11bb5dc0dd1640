/*
** txnstate.h - the tables of Kafka's transaction state: the
** __transaction_state replay (txn_state_vtab.c) and the producers'
** state of every partition (producers_vtab.c).
*/
#ifndef KL_TXNSTATE_H
#define KL_TXNSTATE_H

#include "broker.h"
#include "glue.h"
#include "txnlog.h"

/* Register one module each. */
int kl_txn_state_vtab_register(sqlite3 *db, kl_conn *conn);   /* kafka_transactions */
int kl_txn_log_vtab_register(sqlite3 *db, kl_conn *conn);     /* kafka_transaction_log */
int kl_producers_vtab_register(sqlite3 *db, kl_conn *conn);   /* kafka_producers */
int kl_hanging_vtab_register(sqlite3 *db, kl_conn *conn);     /* kafka_hanging_transactions */

/* kafka_coordinator_partition(id, n) (a scalar function). */
void kl_fn_coordinator_partition(sqlite3_context *ctx, int argc, sqlite3_value **argv);

/* Of the run of replicas of one partition starting at index i of b (the
** same topic and partition in several log directories), the one whose
** high watermark is highest, the first of equals: what a reader of
** several log directories takes as the partition.  *next is the index
** after the run. */
size_t kl_replica_pick(const kl_broker *b, size_t i, size_t *next);

/* Fold every record of the __transaction_state partitions under path
** into f (kl_txnlog_new'd by the caller); with history, also call
** history(ctx, ...) for each record in log order (partition, offset), its
** value NULL for a tombstone.  *found is the number of partitions read.
** Errors name the partition directory and the record's offset. */
typedef kl_rc (*kl_txnlog_visit)(void *ctx, int32_t partition, const kl_record *r,
                                 const kl_txnlog_key *k, const kl_txnlog_value *v, kl_err *err);
kl_rc kl_txnlog_read(kl_conn *conn, const char *path, kl_txnlog *f, kl_txnlog_visit visit,
                     void *ctx, size_t *found, kl_err *err);

#endif
