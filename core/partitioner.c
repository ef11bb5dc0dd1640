/*
** partitioner.c - Kafka's default partitioner (partitioner.h).  Written by
** hand: Debian's libmurmurhash is MurmurHash3, and Kafka's hash is
** MurmurHash2 with Kafka's seed, a dozen lines.
*/
#include "partitioner.h"

int32_t kl_murmur2(const uint8_t *p, size_t n) {
  const uint32_t m = 0x5bd1e995u;
  uint32_t h = 0x9747b28cu ^ (uint32_t)n; /* Java: seed ^ length, an int */
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint32_t k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
                 (uint32_t)p[i + 3] << 24;
    k *= m;
    k ^= k >> 24;
    k *= m;
    h *= m;
    h ^= k;
  }
  switch (n - i) {
    case 3: h ^= (uint32_t)p[i + 2] << 16; /* fall through */
    case 2: h ^= (uint32_t)p[i + 1] << 8;  /* fall through */
    case 1:
      h ^= p[i];
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return (int32_t)h;
}

int32_t kl_partition_for(const uint8_t *p, size_t n, int32_t partitions) {
  return (int32_t)(((uint32_t)kl_murmur2(p, n) & 0x7fffffffu) % (uint32_t)partitions);
}
