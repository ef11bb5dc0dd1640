/*
** plan.h - the plan of the kafka_log module: its terms (terms.h) and the
** flags of idxNum.
**
** The terms, in argv order, are the rows of kl_log_terms (plan.c): dir =,
** topic =, partition =, >, >=, <, <=, offset =, >, >=, <, <= (the rowid
** too, for one partition), the same for timestamp, producer_id =, the
** hidden-column options (on_corrupt, max_skew_ms, isolation, key_type,
** value_type: options.h), LIMIT and OFFSET.  dir, on_corrupt and
** max_skew_ms are terms of the table-valued form only: a named table's are
** fixed, and SQLite compares its columns.  idxStr lists the chosen ones,
** e.g. "dir=? offset>=? timestamp<? ORDER BY offset LIMIT ?", and is what
** EXPLAIN QUERY PLAN shows; "full scan" says that no term narrows what is
** read.  idxNum holds the KL_P_* flags below.
**
** Topic and partition constraints choose partitions before any is opened
** (the listing is sorted by topic and partition, see core/broker.h); rows
** come partition after partition, each in offset order.  An order is
** consumed when one partition can match (the path is a partition
** directory, or both topic = and partition = are given) or when the path
** is not known at planning time (a parameter).  If it then holds several,
** xFilter reads each with its own core cursor: ORDER BY offset merges
** their ordered streams while the table may keep them all open (its bound
** on open segments); beyond that, and for ORDER BY timestamp, their
** matching rows are sorted in memory (32 bytes a row) and read by offset.
**
** Offset bounds go through the segment skip list and the offset index;
** timestamp lower bounds (=, >, >=) through each segment's largest
** timestamp and the time index; key = and key IN (...) compare the
** record's key bytes with the value's (a BLOB's bytes, a TEXT's UTF-8; other
** values match nothing), in the scan, and a batch whose key filter holds
** none of the keys is passed over unread (core/keyset.h); they are terms
** only where the key is raw bytes (key_type blob or text) and the
** comparison is BINARY.  Timestamp upper bounds are applied while
** scanning (timestamps need not grow with offsets, so they cannot stop a
** scan, unless max_skew_ms bounds how far they go back); producer_id = is
** checked on each batch's header, so other producers' batches are not
** decoded.  All of them are exact, so SQLite is told to omit its own
** check, which in turn lets it hand over LIMIT and OFFSET.
*/
#ifndef KL_PLAN_H
#define KL_PLAN_H

#include <stddef.h>

#include "sqlite3ext.h"
#include "terms.h"

enum {
  KL_P_DESC = 0x1,          /* the consumed order is descending (ORDER BY
                            ** offset DESC, or ORDER BY timestamp DESC with
                            ** KL_P_TS_ORDER) */
  KL_P_ORDERED = 0x2,       /* ORDER BY offset is consumed (one partition, or
                            ** a path not known when planning: see above) */
  KL_P_TS_ORDER = 0x4,      /* ORDER BY timestamp is consumed (one partition
                            ** only).  Descending: the first row is the
                            ** first record carrying the log's largest
                            ** timestamp (found from the segments' largest
                            ** timestamps, as Kafka's ListOffsets
                            ** MAX_TIMESTAMP), so max(timestamp) reads one
                            ** batch.  Ascending: the first record carrying
                            ** the smallest, when the batch facts know every
                            ** batch's smallest timestamp (segment.h).  Other
                            ** rows come from the (timestamp, offset) pairs
                            ** of the matching records, sorted in memory,
                            ** each then read by offset; consumed only when
                            ** LIMIT is given or only offset and timestamp
                            ** are read */
  KL_P_PAIRS = 0x8,         /* with KL_P_TS_ORDER: only offset and timestamp
                            ** are read, so rows come from the sorted pairs
                            ** without reading records again */
  KL_P_LISTED = 0x10,       /* the listing's order is consumed: ORDER BY
                            ** topic[, partition] ascending, or a
                            ** GROUP BY or DISTINCT on topic (and
                            ** partition), which need a group's rows
                            ** adjacent only (sqlite3_vtab_distinct) */
  KL_P_DISTINCT = 0x20,     /* with KL_P_LISTED: DISTINCT needs one row of
                            ** each partition that has one, and the query
                            ** reads nothing but topic, partition and the
                            ** hidden columns, which hold one value across
                            ** a partition: its first row is produced, and
                            ** the partition left */
  KL_P_DISTINCT_TOPIC = 0x40/* the same, one row of each topic: a topic's
                            ** other partitions are not opened */
};

/* Largest log (in records, as estimated when planning, when the directory
** is known then) for which ORDER BY timestamp without a LIMIT is consumed:
** beyond sort_bytes of (timestamp, offset) pairs it sorts in passes, each
** reading the log again, where SQLite's own sorter would spill to disk. */
#define KL_TS_ORDER_MAX_RECORDS 4000000.0

/* Columns of the kafka_log table, in declaration order. */
enum {
  KL_COL_OFFSET = 0,
  KL_COL_TIMESTAMP,
  KL_COL_TIMESTAMP_TYPE,
  KL_COL_KEY,
  KL_COL_VALUE,
  KL_COL_HEADERS,
  KL_COL_LEADER_EPOCH,
  KL_COL_PRODUCER_ID,
  KL_COL_PRODUCER_EPOCH,
  KL_COL_SEQUENCE,
  KL_COL_IS_TRANSACTIONAL,
  KL_COL_COMPRESSION,
  KL_COL_SEGMENT,
  KL_COL_POSITION,
  KL_COL_TOPIC,     /* from the partition directory's name */
  KL_COL_PARTITION,
  KL_COL_DIR,       /* hidden: the table-valued function's first argument */
  KL_COL_ON_CORRUPT,/* hidden: its optional second argument */
  KL_COL_MAX_SKEW,  /* hidden: its optional third argument, max_skew_ms */
  KL_COL_ISOLATION, /* hidden: its optional fourth argument */
  KL_COL_KEY_TYPE,  /* hidden: fifth, 'blob' (default) or 'text' */
  KL_COL_VALUE_TYPE,/* hidden: sixth */
  KL_COL_SCHEMAS,   /* hidden: where 'confluent' columns find their schemas */
  KL_COL_THREADS,   /* hidden: read-ahead worker threads of the scan */
  KL_COL_SORT_BYTES,/* hidden: memory for ORDER BY timestamp */
  KL_COL_CACHE_BYTES,/* hidden: the table's decompressed batches for lookups */
  KL_COL_MMAP,      /* hidden: map .log files that cannot shrink */
  KL_COL_LAST = KL_COL_MMAP
};

/* kl_term.arg of kafka_log's KL_ACT_OWN terms. */
enum { KL_LOG_OWN_SCHEMAS = 1 };

/* What xBestIndex knows about the data to estimate costs with; zeros when
** the directory is not known at planning time. */
typedef struct kl_plan_info {
  int raw_key;              /* the key is the record's bytes (key_type blob
                            ** or text, known when planning): key = and key
                            ** IN are terms */
  int need_dir;             /* table-valued form: dir must be constrained
                            ** (a named table's dir and options are fixed) */
  double records;           /* estimated records in the log */
  double bytes;             /* bytes of the log */
  double segments;          /* segment count */
  int single;               /* the path is known to be one partition */
  double partitions;        /* partitions listed, 0 when the path is not
                            ** known */
  double max_merge;         /* partitions whose ordered streams xFilter
                            ** merges (one open cursor each) */
} kl_plan_info;

/* The terms of kafka_log, in argv order (terms.h), and their count. */
extern const kl_term kl_log_terms[];
extern const int kl_log_nterms;

/* The words of kafka_log's idxStr that are not terms (the order, "full
** scan"), for kl_terms_decode. */
extern const char *const kl_log_phrases[];

/* Fill in idxNum, idxStr, argv indexes, omit flags, orderByConsumed, costs
** and estimated rows.  Returns SQLITE_CONSTRAINT when the directory is not
** available (so SQLite picks a plan where it is), else SQLITE_OK. */
int kl_plan_best(sqlite3_index_info *info, const kl_plan_info *pi);

#endif
