/*
** crc32c.h - CRC-32C (Castagnoli), the checksum of v2 record batches.
**
** Written here because no Debian library exports CRC-32C (zlib has only
** the IEEE polynomial).  Uses the SSE4.2 crc32 instruction when the CPU has
** it (checked once per call through a cached cpuid probe that involves no
** mutable global state: the probe is a pure function of the CPU) and a
** slicing-by-8 table fallback otherwise.  Check value: "123456789" ->
** 0xE3069283.
*/
#ifndef KL_CRC32C_H
#define KL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes at p, continuing from crc (start with 0). */
uint32_t kl_crc32c(uint32_t crc, const void *p, size_t n);

/* The portable implementation alone, so tests can compare both paths. */
uint32_t kl_crc32c_portable(uint32_t crc, const void *p, size_t n);

/* Nonzero when kl_crc32c uses the CPU instruction. */
int kl_crc32c_hw(void);

#endif
