/*
** partitioner.h - the partition a Kafka producer sends a keyed record to:
** its default partitioner (BuiltInPartitioner.partitionForKey) takes
** Utils.murmur2 of the key's bytes, made positive by clearing the sign
** bit (Utils.toPositive, not abs), modulo the partition count.  A record
** without a key has no such partition (producers spread those "sticky").
*/
#ifndef KL_PARTITIONER_H
#define KL_PARTITIONER_H

#include <stddef.h>
#include <stdint.h>

/* Kafka's murmur2 (MurmurHash2, seed 0x9747b28c, the tail bytes folded in
** as Utils.murmur2 does) of the n bytes at p, as Java's int would hold it. */
int32_t kl_murmur2(const uint8_t *p, size_t n);

/* The partition of a key of n bytes at p among partitions (> 0). */
int32_t kl_partition_for(const uint8_t *p, size_t n, int32_t partitions);

#endif
