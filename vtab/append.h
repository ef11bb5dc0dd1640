/*
** append.h - writing through a named kafka_log table: its write options,
** INSERT and retention DELETE, and SQLite's transaction calls, over one
** core/writer.h writer per table.
**
**   CREATE VIRTUAL TABLE t USING kafka_log('data/events-0', mode='create',
**       segment_bytes=1048576, index_interval_bytes=4096, compression='zstd',
**       batch_bytes=16384, max_message_bytes=1048588, timestamp_type='create_time',
**       retention_bytes=-1, retention_ms=-1);
**   INSERT INTO t(key, value, timestamp, headers) VALUES (...);
**   DELETE FROM t WHERE offset < N;
**
** The write options (all but mode) are the log's, kept in its
** kafkalog.config: a table writes with the options the file holds when it
** opens its writer (its own, from CREATE, when there is none); mode='create'
** writes the file, and mode='write' with write options given replaces
** those in it, for what any table writes next.
**
** INSERT takes key and value (BLOB or TEXT, stored as their bytes; NULL is
** a null key or value; a number is stored as its text), timestamp (an
** integer of milliseconds; NULL or absent: now) and headers (NULL, or the
** JSON the headers column returns); every other column must be NULL.  The
** record's offset is the new rowid (last_insert_rowid()).
**
** DELETE removes a prefix of the log: SQLite hands the module the rowids
** its WHERE selects, and at the commit they must be every row from the
** log start up to the largest of them; the log start then moves past it.
** Anything else fails the commit with a message saying what is supported.
*/
#ifndef KL_APPEND_H
#define KL_APPEND_H

#include "options.h"
#include "sqlite3ext.h"
#include "writer.h"

typedef struct kl_append_opts {
  kl_writer_opts w;
  int mode;                 /* KL_MODE_* (options.h) */
  int read_committed;       /* the table's isolation: the rows its DELETE
                            ** selects from (a prefix of those) */
  unsigned given;           /* the options CREATE gave (1u << KL_OPT_*) */
} kl_append_opts;

/* Kafka's defaults, mode='read'. */
void kl_append_opts_default(kl_append_opts *o);

/* The write options, those a log keeps (core/logconfig.h): set id's value
** in o, or get it into *v; 0 when id is not one of them. */
int kl_append_opt_set(kl_append_opts *o, kl_opt_id id, int64_t v);
int kl_append_opt_get(const kl_append_opts *o, kl_opt_id id, int64_t *v);

/* CREATE VIRTUAL TABLE of table name over path, what its mode asks of the
** path before the table exists: read, that each of its directories
** exists; write, that it is one directory holding a log; create, that it
** is one directory, holding no log, whose parent exists, and then the new
** log is made (segment 0 and its commit record, nothing left behind if
** that fails) with its kafkalog.config; write with write options given,
** that they replace the log's in its kafkalog.config.  An SQLite error code with *errmsg naming the path and the
** mode that fits it. */
int kl_append_prepare(const char *name, const char *path, const kl_append_opts *o, char **errmsg);

typedef struct kl_append kl_append;

/* Table name's writer state for directory dir (nothing is opened yet). */
kl_append *kl_append_new(sqlite3 *db, const char *name, const char *dir, const kl_append_opts *o);
/* A clean stop of the writer (commit record flagged clean); frees. */
void kl_append_free(kl_append *a);

/* xUpdate: INSERT or DELETE (UPDATE is refused; both are refused with
** SQLITE_READONLY in mode='read', before a file is touched).  Errors set
** *errmsg. */
int kl_append_update(kl_append *a, int argc, sqlite3_value **argv, sqlite3_int64 *rowid,
                     char **errmsg);

/* A key or value an INSERT stores as these bytes instead of its argument's
** (the table's encoding of it, values.h); p NULL: the argument's. */
typedef struct kl_append_bytes {
  const void *p;
  int32_t n;
} kl_append_bytes;

/* kl_append_update with kv[0] (key) and kv[1] (value) given (kv may be
** NULL: both the arguments'). */
int kl_append_update_as(kl_append *a, int argc, sqlite3_value **argv, const kl_append_bytes *kv,
                        sqlite3_int64 *rowid, char **errmsg);

/* The end this table's own open transaction has reached, its batch in
** memory included without writing it (core/writer.h kl_writer_view), for
** its readers: *has_view 1 with *view, 0 when there is none (read up to
** the commit record).  view->tail starts empty; the caller frees it
** (kl_buf_free with kl_sqlite_env()).  KL_NOMEM in err when the batch
** cannot be encoded. */
kl_rc kl_append_view(kl_append *a, kl_view *view, int *has_view, kl_err *err);

/* The offset below which this table's open transaction has deleted every
** row (its DELETE so far), for its own readers: its DELETE takes effect
** for them at once, for everyone else at the commit.  -1: none. */
int64_t kl_append_deleted_below(const kl_append *a);

/* The scans of this table, for retention: a DELETE's WHERE offset < N
** says where the prefix ends, even when the records just below N are
** ones the table does not show.  kl_append_scan_begin at each scan's
** start, with the largest offset its bounds admit (INT64_MAX: no bound;
** -1 for a scan that is not a range of offsets), kl_append_scan_end when
** it has read all it admits. */
void kl_append_scan_begin(kl_append *a, int64_t off_hi);
void kl_append_scan_end(kl_append *a);

/* xBegin, xSync, xCommit, xRollback, xSavepoint, xRelease, xRollbackTo.
** The lock is taken at the first change, but SQLite's savepoints count
** from xBegin: a statement's or a savepoint's undo takes away what the
** table changed after it, wherever the writer's transaction began.
** xRollbackTo's n is -1 for the savepoint that began the transaction. */
int kl_append_begin(kl_append *a);
int kl_append_sync(kl_append *a, char **errmsg);
int kl_append_commit(kl_append *a);
int kl_append_rollback(kl_append *a, char **errmsg);
int kl_append_savepoint(kl_append *a, int n, char **errmsg);
int kl_append_release(kl_append *a, int n);
int kl_append_rollback_to(kl_append *a, int n, char **errmsg);

#endif
