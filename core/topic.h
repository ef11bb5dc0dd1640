/*
** topic.h - the order of (topic, partition) keys that every sorted list of
** partitions keeps: a log directory's listing (broker.c), a checkpoint's
** entries (checkpoint.c), the topics a query asks for (vtab/glue.c).  They
** are merged and binary-searched against each other, so they must sort
** alike: one comparison for all.
*/
#ifndef KL_TOPIC_H
#define KL_TOPIC_H

#include <stddef.h>
#include <stdint.h>

/* Topic a[0..an) then partition ap against b[0..bn), bp: the topics' bytes
** as unsigned, a topic that is a prefix of the other first (strcmp's order
** for names without NUL), then the partitions.  <0, 0 or >0. */
int kl_topic_cmp(const char *a, size_t an, int32_t ap, const char *b, size_t bn, int32_t bp);

#endif
