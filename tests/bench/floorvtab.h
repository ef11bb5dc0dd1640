/*
** floorvtab.h - a do-nothing virtual table, the floor of a scan: the rows
** of a native table t(offset, timestamp, key, value) copied into memory
** once and handed to SQLite column by column under kafka_log's columns
** (the others constant), with nothing to read, decode or check; offset = ?
** (a join's point lookups) finds its row by binary search.  What a scan or
** a lookup through kafka_log costs beyond it is the module's; what it
** costs itself is SQLite's virtual table interface.
*/
#ifndef KL_FLOORVTAB_H
#define KL_FLOORVTAB_H

#include <stdint.h>

#include <sqlite3.h>

typedef struct floor_row {
  int64_t offset, timestamp;
  int64_t key, value;       /* positions in the arena, -1: NULL */
  int key_len, value_len;
} floor_row;

typedef struct floor_rows {
  floor_row *rows;
  long n;
  unsigned char *arena;     /* the keys' and values' bytes */
  int64_t arena_len;
} floor_rows;

/* Copy every row of t in db (ordered by offset) into r; 0, or -1 when the
** query fails or memory runs out (r is then empty).  Free with
** floor_rows_free. */
int floor_rows_load(sqlite3 *db, floor_rows *r);

void floor_rows_free(floor_rows *r);

/* Register the eponymous table bench_floor (kafka_log's visible columns)
** on db, its rows r (borrowed: r must outlive db's use of the table).
** SQLITE_OK or SQLite's error code. */
int floor_register(sqlite3 *db, const floor_rows *r);

#endif
