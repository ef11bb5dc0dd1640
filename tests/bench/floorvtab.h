/*
** floorvtab.h - a do-nothing virtual table, the floor of a scan: the rows
** of a native table t(offset, timestamp, key, value) copied into memory
** once and handed to SQLite column by column under kafka_log's columns
** (the others constant), with nothing to read, decode or check; offset = ?
** (a join's point lookups) finds its row by binary search.  What a scan or
** a lookup through kafka_log costs beyond it is the module's; what it
** costs itself is SQLite's virtual table interface.  Loaded by topic and
** partition instead, it is the floor of a log directory's GROUP BY topic,
** partition: its rows come in that order, and it says so to SQLite as
** kafka_log does, so that both plans group without sorting.
*/
#ifndef KL_FLOORVTAB_H
#define KL_FLOORVTAB_H

#include <stdint.h>

#include <sqlite3.h>

typedef struct floor_row {
  int64_t offset, timestamp;
  int64_t key, value;       /* positions in the arena, -1: NULL */
  int key_len, value_len;
  int topic;                /* index in topics, -1: NULL */
  int partition;            /* -1: NULL */
} floor_row;

typedef struct floor_rows {
  floor_row *rows;
  long n;
  unsigned char *arena;     /* the keys' and values' bytes */
  int64_t arena_len;
  char **topics;            /* the distinct topics, NUL-terminated */
  int *topic_len;
  int ntopics;
  int grouped;              /* rows ordered by topic, partition, offset */
} floor_rows;

/* Copy every row of t in db (ordered by offset) into r; 0, or -1 when the
** query fails or memory runs out (r is then empty).  Topic and partition
** are NULL (a partition directory).  Free with floor_rows_free. */
int floor_rows_load(sqlite3 *db, floor_rows *r);

/* Copy every row of t(topic, partition, offset, timestamp, ...) in db,
** ordered by topic, partition, offset, into r without its keys and values
** (NULL in the table): what a count(*) or a GROUP BY topic, partition of
** a log directory reads, in 48 bytes a row.  0, or -1 as floor_rows_load. */
int floor_rows_load_grouped(sqlite3 *db, floor_rows *r);

void floor_rows_free(floor_rows *r);

/* Register the eponymous table bench_floor (kafka_log's visible columns)
** on db, its rows r (borrowed: r must outlive db's use of the table).  It
** takes no constraint; rows loaded grouped consume an ORDER BY topic[,
** partition] ascending (how SQLite asks a GROUP BY topic, partition).
** SQLITE_OK or SQLite's error code. */
int floor_register(sqlite3 *db, const floor_rows *r);

#endif
