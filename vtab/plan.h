/*
** plan.h - the one idxNum table of the kafka_log module.
**
** xBestIndex sets these bits and passes one argv value per set bit, in the
** order of the bits below (lowest first); xFilter reads argv in the same
** order.  Bits without an argv value are marked "(no argv)".
**
**   bit        argv  meaning
**   0x0000001  yes   dir = ?            the path: a partition directory, a log
**                                       directory, or log directories separated
**                                       by commas (table-valued form only)
**   0x0000002  yes   offset = ?         or offset IN (...) when KL_P_IN is set
**   0x0000004  yes   offset > ?
**   0x0000008  yes   offset >= ?
**   0x0000010  yes   offset < ?
**   0x0000020  yes   offset <= ?
**   0x0000040  yes   timestamp = ?
**   0x0000080  yes   timestamp > ?
**   0x0000100  yes   timestamp >= ?
**   0x0000200  yes   timestamp < ?
**   0x0000400  yes   timestamp <= ?
**   0x0000800  yes   LIMIT ?
**   0x0001000  yes   OFFSET ?
**   0x0002000  yes   on_corrupt = ?     'error' or 'skip' (table-valued form only)
**   0x0004000  yes   max_skew_ms = ?    a bound on disorder (table-valued form only)
**   0x0008000  yes   isolation = ?      'read_uncommitted' or 'read_committed'
**                                       (both forms: per query over the option)
**   0x0010000  yes   topic = ?          or topic IN (...) with KL_P_TOPIC_IN
**   0x0020000  yes   partition = ?      or partition IN (...) with KL_P_PART_IN
**   0x0040000  yes   partition > ?
**   0x0080000  yes   partition >= ?
**   0x0100000  yes   partition < ?
**   0x0200000  yes   partition <= ?
**   0x0400000  yes   key_type = ?       'blob' or 'text' (both forms)
**   0x0800000  yes   value_type = ?     the same for value
**   0x1000000  no    the consumed order is descending (ORDER BY offset DESC, or
**                    ORDER BY timestamp DESC with KL_P_TS_ORDER)
**   0x2000000  no    the offset = value is an IN list, read all at once
**   0x4000000  no    ORDER BY offset is consumed (one partition, or a path
**                    not known when planning: see below)
**   0x8000000  no    ORDER BY timestamp is consumed (one partition only).
**                    Descending: the first row is the first record carrying
**                    the log's largest timestamp (found from the segments'
**                    largest timestamps, as Kafka's ListOffsets
**                    MAX_TIMESTAMP), so max(timestamp) reads one batch.
**                    Ascending: the first record carrying the smallest,
**                    when the batch facts know every batch's smallest
**                    timestamp (segment.h).  Other rows come from the
**                    (timestamp, offset) pairs of the matching records,
**                    sorted in memory, each then read by offset; consumed
**                    only when LIMIT is given or only offset and timestamp
**                    are read
**  0x10000000  no    with KL_P_TS_ORDER: only offset and timestamp are read,
**                    so rows come from the sorted pairs without reading
**                    records again
**  0x20000000  no    the topic = value is an IN list
**  0x40000000  no    the partition = value is an IN list
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
** timestamp and the time index; timestamp upper bounds are applied while
** scanning (timestamps need not grow with offsets, so they cannot stop a
** scan, unless max_skew_ms bounds how far they go back).  All of them are
** exact, so SQLite is told to omit its own check, which in turn lets it
** hand over LIMIT and OFFSET.
*/
#ifndef KL_PLAN_H
#define KL_PLAN_H

#include <stddef.h>

#include "sqlite3ext.h"

enum {
  KL_P_DIR = 0x0000001,
  KL_P_OFF_EQ = 0x0000002,
  KL_P_OFF_GT = 0x0000004,
  KL_P_OFF_GE = 0x0000008,
  KL_P_OFF_LT = 0x0000010,
  KL_P_OFF_LE = 0x0000020,
  KL_P_TS_EQ = 0x0000040,
  KL_P_TS_GT = 0x0000080,
  KL_P_TS_GE = 0x0000100,
  KL_P_TS_LT = 0x0000200,
  KL_P_TS_LE = 0x0000400,
  KL_P_LIMIT = 0x0000800,
  KL_P_OFFSET = 0x0001000,
  KL_P_ON_CORRUPT = 0x0002000,
  KL_P_SKEW = 0x0004000,
  KL_P_ISOLATION = 0x0008000,
  KL_P_TOPIC_EQ = 0x0010000,
  KL_P_PART_EQ = 0x0020000,
  KL_P_PART_GT = 0x0040000,
  KL_P_PART_GE = 0x0080000,
  KL_P_PART_LT = 0x0100000,
  KL_P_PART_LE = 0x0200000,
  KL_P_KEY_TYPE = 0x0400000,
  KL_P_VALUE_TYPE = 0x0800000,
  KL_P_ARGV_BITS = 0x0ffffff, /* bits that carry an argv value */
  KL_P_ARGV_COUNT = 24,       /* how many: bits 0 to 23 */
  KL_P_DESC = 0x1000000,
  KL_P_IN = 0x2000000,
  KL_P_ORDERED = 0x4000000,
  KL_P_TS_ORDER = 0x8000000,
  KL_P_PAIRS = 0x10000000,
  KL_P_TOPIC_IN = 0x20000000,
  KL_P_PART_IN = 0x40000000
};

/* Largest log (in records, as estimated when planning, when the directory
** is known then) for which ORDER BY timestamp is consumed: beyond the
** first row it holds 16 bytes per matching record in memory, where
** SQLite's own sorter would spill to disk. */
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
  KL_COL_VALUE_TYPE /* hidden: sixth */
};

/* What xBestIndex knows about the data to estimate costs with; zeros when
** the directory is not known at planning time. */
typedef struct kl_plan_info {
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

/* Fill in idxNum, idxStr, argv indexes, omit flags, orderByConsumed, costs
** and estimated rows.  Returns SQLITE_CONSTRAINT when the directory is not
** available (so SQLite picks a plan where it is), else SQLITE_OK. */
int kl_plan_best(sqlite3_index_info *info, const kl_plan_info *pi);

/* Readable description of an idxNum, e.g. "offset IN (...) ORDER BY offset
** DESC LIMIT"; written into buf (NUL-terminated). */
void kl_plan_describe(int idx_num, char *buf, size_t n);

#endif
