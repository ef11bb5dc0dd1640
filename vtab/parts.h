/*
** parts.h - which partitions of a listing a query's topic and partition
** constraints select.
*/
#ifndef KL_PARTS_H
#define KL_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "broker.h"
#include "sqlite3ext.h"

/* What a query's topic and partition constraints admit, as xFilter
** receives them.  Every table reading a listing (core/broker.h) chooses
** its partitions through kl_choose_parts, so that all of them agree on
** which partitions a constraint selects. */
typedef struct kl_part_filter {
  sqlite3_value *topic;     /* topic = value, the IN list when topic_in, or
                            ** NULL: any topic */
  int topic_in;
  sqlite3_value *part;      /* partition = value, the IN list when part_in,
                            ** or NULL: any partition */
  int part_in;
  int64_t lo, hi;           /* partition >, >=, <, <= folded (kl_fold_bound):
                            ** inclusive bounds */
} kl_part_filter;

/* A filter admitting every partition, named or not. */
void kl_part_filter_init(kl_part_filter *f);

/* The partitions of b that f admits, as indexes into the listing, in
** listing order (topic, partition).  Only names are looked at, no
** partition is opened: each topic value binary-searches the sorted listing
** (kl_broker_seek), so a lookup among thousands of partitions reads few
** entries.  A directory whose name is not Kafka's has no topic or
** partition and matches no constraint on them.  Values compare as SQLite
** compares them with the columns: a topic value that is not text, and a
** partition value that is not an integer, match nothing.  OUT: *sel
** (sqlite3_malloc'd, the caller frees it; may be non-NULL with *nsel 0). */
int kl_choose_parts(const kl_broker *b, const kl_part_filter *f, size_t **sel, size_t *nsel);

#endif
